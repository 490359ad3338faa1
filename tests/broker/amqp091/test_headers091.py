"""The earlier protocol headers of the 0-9-1 line, put by raw sockets to RabbitMQ and to
``amqp-sansio broker`` (no options) side by side: 0-9's header is served as 0-9-1, both
0-8 headers (the spec's and py-amqplib's ``AMQP 1 1 9 1``) as 0-8 with 0-8's method ids;
another header gets the 0-9-1 header back and the connection closes. Each test asserts the
same answer from both (amqp_sansio.framing.amqp091.amqp08, amqp_sansio.broker.pick_protocol)."""

from __future__ import annotations

import struct
import urllib.parse
import uuid
from collections.abc import Iterator

import pytest
from support.amqp091.raw import Frame, Session, frames, handshake_steps, method, publish, sstr
from support.broker_process import BrokerProcess
from support.rabbitmq import rabbitmq_url

from amqp_sansio.amqp091 import PROTOCOL_HEADER
from amqp_sansio.codec.amqp091 import decode_table

HEADER_09 = b"AMQP\x01\x01\x00\x09"
HEADER_08 = b"AMQP\x01\x01\x08\x00"
HEADER_AMQPLIB = b"AMQP\x01\x01\x09\x01"


@pytest.fixture(scope="module")
def ours() -> Iterator[tuple[str, int]]:
    with BrokerProcess() as process:
        yield "127.0.0.1", process.port


@pytest.fixture(params=["rabbitmq", "amqp-sansio"])
def server(request: pytest.FixtureRequest) -> tuple[str, int]:
    if request.param == "rabbitmq":
        parts = urllib.parse.urlsplit(rabbitmq_url())
        return parts.hostname or "127.0.0.1", parts.port or 5672
    found: tuple[str, int] = request.getfixturevalue("ours")
    return found


def _start(frame: Frame) -> tuple[int, int, dict[str, object], bytes, bytes]:
    """connection.start's version, server properties, mechanisms, locales."""
    assert frame.ids == (10, 10)
    args = frame.args
    size = struct.unpack_from(">I", args, 2)[0]
    props = decode_table(args[2 : 6 + size])
    at = 6 + size
    mech_size = struct.unpack_from(">I", args, at)[0]
    mechanisms = args[at + 4 : at + 4 + mech_size]
    at += 4 + mech_size
    locales = args[at + 4 :]
    return args[0], args[1], props, mechanisms, locales


@pytest.mark.parametrize(
    ("header", "version"),
    [(HEADER_09, (0, 9)), (HEADER_08, (8, 0)), (HEADER_AMQPLIB, (8, 0)), (PROTOCOL_HEADER, (0, 9))],
)
def test_connection_start_for_each_header(
    server: tuple[str, int], header: bytes, version: tuple[int, int]
) -> None:
    with Session(*server) as session:
        (start,) = session.exchange(header)
    major, minor, props, mechanisms, locales = _start(start)
    assert (major, minor) == version
    assert start.type == 1 and start.channel == 0
    assert b"PLAIN" in mechanisms.split() and locales == b"en_US"
    if version == (8, 0):
        assert props["capabilities"] == {}  # (0-8 has none of the extensions)
    else:
        capabilities = props["capabilities"]
        assert isinstance(capabilities, dict) and capabilities["publisher_confirms"] is True


@pytest.mark.parametrize(
    "header",
    [
        b"AMQP\x01\x01\x00\x0b",  # (0-10 is served: one after it)
        b"AMQP\x00\x00\x09\x00",  # 0-9-0
        b"AMQP\x00\x00\x08\x00",
        b"AMQP\x01\x01\x09\x00",
        b"AMQP\x01\x01\x08\x01",
    ],
)
def test_another_0x_header_gets_the_091_header_and_the_connection_closes(
    server: tuple[str, int], header: bytes
) -> None:
    with Session(*server) as session:
        session.send(header)
        assert session.read(until_closed=5).startswith(PROTOCOL_HEADER)
        assert session.closed


def _ids(found: list[Frame]) -> list[tuple[int, int, tuple[int, int] | None]]:
    return [(f.type, f.channel, f.ids) for f in found]


@pytest.mark.parametrize("header", [HEADER_08, HEADER_AMQPLIB])
def test_a_08_client_declares_publishes_gets_and_consumes(
    server: tuple[str, int], header: bytes
) -> None:
    """py-amqplib's 0-8 conversation, written by hand: the same frames come back."""
    queue = f"headers-08-{uuid.uuid4().hex[:8]}"
    with Session(*server) as s:
        steps = handshake_steps(header)
        start, tune, open_ok, channel_open_ok = (s.exchange(step) for step in steps)
        assert [f.ids for f in start + tune + open_ok] == [(10, 10), (10, 30), (10, 41)]
        assert channel_open_ok == [Frame(1, 1, b"\x00\x14\x00\x0b")]  # 0-8: no arguments
        # access.request (gone from 0-9-1): ticket 1
        assert s.exchange(method(1, 30, 10, sstr("/data") + b"\x1f")) == [
            Frame(1, 1, b"\x00\x1e\x00\x0b\x00\x01")
        ]
        (declare_ok,) = s.exchange(method(1, 50, 10, b"\x00\x01" + sstr(queue) + b"\x00" * 5))
        assert declare_ok.ids == (50, 11) and declare_ok.args == sstr(queue) + b"\x00" * 8
        assert s.exchange(publish(1, queue, b"hello")) == []
        get_ok, _, body = s.exchange(method(1, 60, 70, b"\x00\x01" + sstr(queue) + b"\x00"))
        assert get_ok.ids == (60, 71) and body.payload == b"hello"
        assert s.exchange(method(1, 60, 100, b"\x01")) == []  # 0-8's recover: no answer
        # 0-8's basic.consume, without an arguments table
        consume = b"\x00\x01" + sstr(queue) + sstr("ctag") + b"\x00"
        consume_ok, deliver, _, body = s.exchange(method(1, 60, 20, consume))
        assert consume_ok == Frame(1, 1, b"\x00\x3c\x00\x15" + sstr("ctag"))
        assert deliver.ids == (60, 60) and body.payload == b"hello"
        assert deliver.args[len(sstr("ctag")) + 8] == 1  # redelivered (recovered)
        (delete_ok,) = s.exchange(method(1, 50, 40, b"\x00\x01" + sstr(queue) + b"\x00"))
        assert delete_ok.ids == (50, 41)
        # 0-8's connection.close (10/60): close-ok (10/61), then nothing
        close = method(0, 10, 60, b"\x00\xc8" + sstr("bye") + b"\x00" * 4)
        assert _ids(s.exchange(close)) == [(1, 0, (10, 61))]
        assert s.read() == b""


@pytest.mark.parametrize("header", [HEADER_08, HEADER_AMQPLIB])
def test_a_08_consume_with_an_arguments_table_is_a_frame_error(
    server: tuple[str, int], header: bytes
) -> None:
    with Session(*server) as s:
        for step in handshake_steps(header):
            s.exchange(step)
        consume = b"\x00\x01" + sstr("q") + sstr("c") + b"\x00" + b"\x00" * 4
        (close,) = s.exchange(method(1, 60, 20, consume))
        assert close.ids == (10, 60)  # 0-8's connection.close
        assert struct.unpack_from(">H", close.args)[0] == 501  # FRAME_ERROR


def test_a_09_client_speaks_091(server: tuple[str, int]) -> None:
    with Session(*server) as s:
        steps = handshake_steps(HEADER_09)
        found = [s.exchange(step) for step in steps]
        assert [f.ids for step in found for f in step] == [(10, 10), (10, 30), (10, 41), (20, 11)]
        (open_ok,) = found[3]
        assert open_ok.args == b"\x00\x00\x00\x00"  # 0-9-1's, a long string
        close = method(0, 10, 50, b"\x00\xc8" + sstr("bye") + b"\x00" * 4)
        assert _ids(s.exchange(close)) == [(1, 0, (10, 51))]


def test_frames_reads_a_header_then_frames() -> None:
    assert frames(PROTOCOL_HEADER + b"\x08\x00\x00\x00\x00\x00\x00\xce") == [
        Frame(-1, 0, PROTOCOL_HEADER),
        Frame(8, 0, b""),
    ]
