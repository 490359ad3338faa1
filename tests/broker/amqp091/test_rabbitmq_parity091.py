"""The same pika programs (BlockingConnection, its defaults) against RabbitMQ 3.10 and our
broker (``amqp-sansio broker``, no options), asserting the same outcome: priorities
(``x-max-priority``), ``basic.qos`` with a ``prefetch-size``, the standard ``amq.*``
exchanges declared again, a message over the largest size, the ``server-properties`` of
``connection.start``, and a ``connection.tune-ok`` out of range (raw bytes). Each was seen
to differ on the wire (issue 27); docs/amqp091.rst says what still does."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pika
import pika.exceptions
import pytest
from support.broker_process import WAIT, BrokerProcess
from support.rabbitmq import rabbitmq_url

import amqp_sansio
import amqp_sansio.framing.amqp091
from amqp_sansio.framing.amqp091 import encode_method_frame

#: The largest message each broker takes by default: ours (docs/defaults.rst), RabbitMQ
#: 3.10's ``max_message_size``.
DEFAULT_MAX = {"ours": 16 * 1024 * 1024, "rabbitmq": 128 * 1024 * 1024}


@pytest.fixture(scope="module")
def ours() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


@pytest.fixture(params=["ours", "rabbitmq"])
def peer(request: pytest.FixtureRequest) -> tuple[str, str, int]:
    """(which, host, port) of a broker: ours with no options, or the RabbitMQ of the run."""
    if request.param == "ours":
        process: BrokerProcess = request.getfixturevalue("ours")
        return "ours", "127.0.0.1", process.port
    parts = urlsplit(rabbitmq_url())
    return "rabbitmq", parts.hostname or "127.0.0.1", parts.port or 5672


def _connect(peer: tuple[str, str, int]) -> pika.BlockingConnection:
    _, host, port = peer
    credentials = pika.PlainCredentials("guest", "guest")
    return pika.BlockingConnection(pika.ConnectionParameters(host, port, credentials=credentials))


def _name(what: str) -> str:
    return f"parity.{what}.{uuid.uuid4().hex[:10]}"


def _get_all(ch: Any, queue: str) -> list[tuple[bytes, int | None]]:
    got = []
    while True:
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            return got
        got.append((body, props.priority))


def _publish_and_wait(ch: Any, queue: str, priorities: list[int | None]) -> None:
    for priority in priorities:
        body = b"p%s" % str(priority).encode()
        ch.basic_publish("", queue, body, pika.BasicProperties(priority=priority))
    deadline = time.monotonic() + WAIT  # (RabbitMQ's queue takes them a moment later)
    while ch.queue_declare(queue, passive=True).method.message_count < len(priorities):
        assert time.monotonic() < deadline, "the messages never all arrived"
        time.sleep(0.05)


# -- 1. priorities -----------------------------------------------------------------------------


def test_x_max_priority_sets_the_levels(peer: tuple[str, str, int]) -> None:
    with _connect(peer) as conn:
        ch = conn.channel()
        queue = _name("priority")
        ch.queue_declare(queue, arguments={"x-max-priority": 5})
        try:
            _publish_and_wait(ch, queue, [None, 10, 5, 3, 0, 255, None, 4])
            got = [body for body, _ in _get_all(ch, queue)]
        finally:
            ch.queue_delete(queue)
    # 10, 5 and 255 count as 5, arrival order among them; none counts as 0
    assert got == [b"p10", b"p5", b"p255", b"p4", b"p3", b"pNone", b"p0", b"pNone"]


def test_a_queue_without_x_max_priority_is_fifo(peer: tuple[str, str, int]) -> None:
    with _connect(peer) as conn:
        ch = conn.channel()
        queue = _name("fifo")
        ch.queue_declare(queue)
        try:
            _publish_and_wait(ch, queue, [None, 9, 0, 5, 255])
            got = _get_all(ch, queue)
        finally:
            ch.queue_delete(queue)
    assert got == [(b"pNone", None), (b"p9", 9), (b"p0", 0), (b"p5", 5), (b"p255", 255)]


@pytest.mark.parametrize("levels", [256, 1000])
def test_x_max_priority_over_255_is_406(peer: tuple[str, str, int], levels: int) -> None:
    with _connect(peer) as conn:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            conn.channel().queue_declare(_name("over"), arguments={"x-max-priority": levels})
        assert info.value.reply_code == 406
        assert "x-max-priority" in info.value.reply_text


# -- 2. basic.qos with a prefetch-size ---------------------------------------------------------


def test_basic_qos_with_a_prefetch_size_closes_the_connection_540(
    peer: tuple[str, str, int],
) -> None:
    with _connect(peer) as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=10)  # (a size of 0 is taken)
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
            ch.basic_qos(prefetch_size=4096)
        assert info.value.reply_code == 540
        assert info.value.reply_text == "NOT_IMPLEMENTED - prefetch_size!=0 (4096)"
        assert conn.is_closed


# -- 3. the standard exchanges declared again ---------------------------------------------------

STANDARD = [
    ("amq.direct", "direct"),
    ("amq.fanout", "fanout"),
    ("amq.topic", "topic"),
    ("amq.headers", "headers"),
    ("amq.match", "headers"),
]


def test_a_standard_exchange_declared_again_as_it_is_is_declare_ok(
    peer: tuple[str, str, int],
) -> None:
    with _connect(peer) as conn:
        ch = conn.channel()
        for name, kind in STANDARD:
            frame = ch.exchange_declare(name, kind, durable=True)
            assert isinstance(frame.method, pika.spec.Exchange.DeclareOk), name
        for kind, durable in (("topic", True), ("direct", False)):
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                conn.channel().exchange_declare("amq.direct", kind, durable=durable)
            assert info.value.reply_code == 406
            assert "inequivalent arg" in info.value.reply_text
        for name in (_name("amq.new").replace("parity.", "amq.", 1), "amq.default"):
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                conn.channel().exchange_declare(name, "direct", durable=True)
            assert info.value.reply_code == 403
            assert info.value.reply_text == (
                f"ACCESS_REFUSED - exchange name '{name}' contains reserved prefix 'amq.*'"
            )
        # the connection stays open, the exchange as it was
        ch = conn.channel()
        queue = ch.queue_declare("", exclusive=True).method.queue
        ch.queue_bind(queue, "amq.direct", "k")
        ch.basic_publish("amq.direct", "k", b"routed")
        deadline = time.monotonic() + WAIT
        while (got := ch.basic_get(queue, auto_ack=True))[0] is None:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert got[2] == b"routed"


# -- 4. a message over the largest size --------------------------------------------------------


def _oversized(conn: pika.BlockingConnection, size: int, limit: int) -> None:
    """A body of ``size`` octets, over ``limit``: RabbitMQ's 406 on the channel (its
    rabbit_channel check_msg_size), the connection stays open."""
    ch = conn.channel()
    queue = ch.queue_declare("", exclusive=True).method.queue
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
        ch.basic_publish("", queue, b"x" * size)
        ch.queue_declare(queue, passive=True)
    assert info.value.reply_code == 406
    assert info.value.reply_text == (
        f"PRECONDITION_FAILED - message size {size} is larger than configured max size {limit}"
    )
    ch = conn.channel()
    assert ch.queue_declare(queue, passive=True).method.message_count == 0
    ch.basic_publish("", queue, b"small")
    deadline = time.monotonic() + WAIT
    while ch.queue_declare(queue, passive=True).method.message_count < 1:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_a_message_over_the_default_largest_size_closes_its_channel_406(
    peer: tuple[str, str, int],
) -> None:
    limit = DEFAULT_MAX[peer[0]]
    with _connect(peer) as conn:
        _oversized(conn, limit + 1, limit)


def test_a_message_over_a_configured_largest_size_closes_its_channel_406() -> None:
    with (
        BrokerProcess("--max-message-size", "1KiB") as process,
        _connect(("ours", "127.0.0.1", process.port)) as conn,
    ):
        ch = conn.channel()
        ch.queue_declare("fits")
        ch.basic_publish("", "fits", b"x" * 1024)
        _oversized(conn, 1025, 1024)
        assert conn.channel().basic_get("fits", auto_ack=True)[2] == b"x" * 1024


# -- 5. server-properties ----------------------------------------------------------------------


def test_server_properties_carry_rabbitmqs_keys(peer: tuple[str, str, int]) -> None:
    with _connect(peer) as conn:
        props = conn._impl.server_properties  # (pika keeps connection.start's there)
    for key in ("product", "version", "platform", "copyright", "information"):
        assert isinstance(props.get(key), str | bytes) and props[key], key
    assert props["capabilities"]["publisher_confirms"] is True
    if peer[0] == "ours":
        assert props["product"] == "amqp-sansio"
        assert props["version"] == amqp_sansio.__version__
    else:
        assert props["product"] == "RabbitMQ" and props["version"].startswith("3.")


# -- 6. connection.tune-ok out of range (raw bytes) ---------------------------------------------


def _method_of(
    sock: socket.socket, parser: amqp_sansio.framing.amqp091.FrameParser, kind: type
) -> None:
    """Read until the server's method of ``kind`` comes."""
    while True:
        for frame in parser:
            if isinstance(getattr(frame, "method", None), kind):
                return
        data = sock.recv(65536)
        assert data, f"closed before {kind.__name__}"
        parser.feed(data)


def _after_tune_ok(
    peer: tuple[str, str, int], channel_max: int, frame_max: int, *, wait: float = WAIT
) -> bytes:
    """Log in as guest, answer the server's tune with this tune-ok and open ``/``: what the
    server sends after the tune-ok until it closes the socket, or ``wait`` seconds."""
    _, host, port = peer
    with socket.create_connection((host, port), timeout=wait) as sock:
        sock.sendall(b"AMQP\x00\x00\x09\x01")
        parser = amqp_sansio.framing.amqp091.FrameParser(0)
        _method_of(sock, parser, amqp_sansio.definitions.amqp091.spec.ConnectionStart)
        start_ok = amqp_sansio.definitions.amqp091.spec.ConnectionStartOk(
            client_properties={}, mechanism="PLAIN", response=b"\x00guest\x00guest"
        )
        sock.sendall(encode_method_frame(0, start_ok))
        _method_of(sock, parser, amqp_sansio.definitions.amqp091.spec.ConnectionTune)
        tune_ok = amqp_sansio.definitions.amqp091.spec.ConnectionTuneOk(
            channel_max=channel_max, frame_max=frame_max
        )
        sock.sendall(encode_method_frame(0, tune_ok))
        sock.sendall(
            encode_method_frame(
                0, amqp_sansio.definitions.amqp091.spec.ConnectionOpen(virtual_host="/")
            )
        )
        after = b""
        try:
            while data := sock.recv(65536):
                after += data
        except ConnectionResetError:  # (RabbitMQ resets it)
            pass
        except TimeoutError:
            return after + b"<still open>"
        return after


@pytest.mark.parametrize(
    ("channel_max", "frame_max"),
    [(2048, 131072), (0, 131072), (10, 131073), (10, 0), (10, 4095)],
    ids=["channel-max-over", "channel-max-0", "frame-max-over", "frame-max-0", "frame-max-under"],
)
def test_a_tune_ok_out_of_range_closes_the_socket_without_a_close(
    peer: tuple[str, str, int], channel_max: int, frame_max: int
) -> None:
    """0-9-1 spec connection.tune-ok, rules "upper-limit" (both fields) and "minimum": no
    connection.close, the socket closed (RabbitMQ after 3 s, ours at once)."""
    assert _after_tune_ok(peer, channel_max, frame_max) == b""


def test_a_tune_ok_in_range_opens(peer: tuple[str, str, int]) -> None:
    after = _after_tune_ok(peer, 2047, 4096, wait=1.0)
    assert after.endswith(b"<still open>")
    parser = amqp_sansio.framing.amqp091.FrameParser(0)
    parser.feed(after[: -len(b"<still open>")])
    assert [type(frame.method) for frame in parser] == [
        amqp_sansio.definitions.amqp091.spec.ConnectionOpenOk
    ]
