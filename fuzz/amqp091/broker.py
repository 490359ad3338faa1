"""The broker core's 0-9-1 front door: the targets ``broker-091`` and ``broker-091-opened``,
and their seeds (the driver and the invariant they share with the 1.0 targets are in
``fuzz/broker_core.py``).

* ``broker-091``: the data from scratch to ``Broker.accept_091`` (the client's protocol
  header is part of it: 0-9-1's, 0-9's or 0-8's, or another);
* ``broker-091-opened``: after a valid handshake (0-9-1 header, PLAIN login as guest,
  tune-ok, ``/`` opened, channel 1 open), the data.

Half the inputs are cut at frame boundaries, as a client that waits for each answer
(:func:`_frame_cuts`). The broker's output must parse as its client would parse it (a
protocol header alone, for a refused one; else frames, with 0-8's method ids for a 0-8
client), with nothing but ``connection.close-ok`` after its ``connection.close``; an open
connection that ends has ``connection.close`` or its ``close-ok`` on the wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import amqp_sansio as amqp
from amqp_sansio.amqp091 import PROTOCOL_HEADER
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.framing.amqp091 import (
    HEADER_09,
    HEADERS_08,
    FrameParser,
    MethodFrame,
    encode_body_frame,
    encode_header_frame,
    encode_method_frame,
)
from amqp_sansio.framing.amqp091.amqp08 import decode_method_08

from ..broker_core import Driver, run_target
from ..common import InvariantViolation

__all__ = ["fuzz_broker_091", "fuzz_broker_091_opened", "seeds"]


def _frame_cuts(data: bytes) -> list[int]:
    """Chunk sizes at 0-9-1 frame boundaries (a header first, if the data begins with one):
    a client that waits for each answer."""
    sizes, at = [], 0
    if data[:4] == b"AMQP":
        sizes.append(min(8, len(data)))
        at = 8
    while at < len(data):
        size = 8 + int.from_bytes(data[at + 3 : at + 7], "big") if len(data) - at >= 7 else 1
        size = min(size, len(data) - at)
        sizes.append(size)
        at += size
    return sizes


def _method(channel: int, method: spec.Method) -> bytes:
    return encode_method_frame(channel, method)


def _publish(channel: int, key: str, body: bytes, **props: Any) -> bytes:
    return (
        _method(channel, spec.BasicPublish(exchange="", routing_key=key))
        + encode_header_frame(channel, len(body), spec.BasicProperties(**props))
        + encode_body_frame(channel, body)
    )


def _handshake_091(header: bytes = PROTOCOL_HEADER) -> list[bytes]:
    """A client's writes, each after the broker's answer: header, start-ok (guest, PLAIN),
    tune-ok and open, channel.open 1."""
    return [
        header,
        _method(
            0,
            spec.ConnectionStartOk(
                client_properties={"capabilities": {"consumer_cancel_notify": True}},
                mechanism="PLAIN",
                response=b"\x00guest\x00guest",
                locale="en_US",
            ),
        ),
        _method(0, spec.ConnectionTuneOk(channel_max=2047, frame_max=131072, heartbeat=60))
        + _method(0, spec.ConnectionOpen(virtual_host="/")),
        _method(1, spec.ChannelOpen()),
    ]


def _check_091(target: str, driver: Driver, opened: bool, ended: bool) -> None:
    out = bytes(driver.out)
    if out[:4] == b"AMQP":
        if out != PROTOCOL_HEADER or not driver.conn.ended:
            raise InvariantViolation(target, "output", f"a header, then {out[8:40]!r}")
        return
    parser = FrameParser(0)
    if driver.conn.engine.protocol_version == "0-8":
        parser.decode_method = decode_method_08
    parser.feed(out)
    closed = close_seen = False
    try:
        for frame in parser:
            if not isinstance(frame, MethodFrame):
                if closed:
                    raise InvariantViolation(target, "after-close", f"{frame!r:.100}")
                continue
            method = frame.method
            if closed and not isinstance(method, spec.ConnectionCloseOk):
                raise InvariantViolation(target, "after-close", f"{method.NAME} after the close")
            if isinstance(method, spec.ConnectionClose):
                closed = close_seen = True
            elif isinstance(method, spec.ConnectionCloseOk):
                close_seen = True
    except amqp.errors.AMQPError as exc:
        raise InvariantViolation(target, "output", f"the broker's output: {exc!r}") from exc
    if parser.buffered:
        raise InvariantViolation(target, "output", f"{parser.buffered} octets of a frame left")
    if opened and ended and not close_seen:
        raise InvariantViolation(target, "no-close", "the open connection ended, no close sent")


def _fuzz_091(target: str, data: bytes, prefix: Sequence[bytes]) -> str:
    def check(driver: Driver, opened: bool, ended: bool) -> None:
        _check_091(target, driver, opened, ended)

    return run_target(target, "0-9-1", data, prefix, _frame_cuts, check)


def fuzz_broker_091(data: bytes) -> str:
    return _fuzz_091("broker-091", data, ())


def fuzz_broker_091_opened(data: bytes) -> str:
    return _fuzz_091("broker-091-opened", data, _handshake_091())


def _seeds_091() -> list[bytes]:
    """From scratch: whole handshakes (each header), refused headers, broken streams."""
    seeds = []
    for header in (PROTOCOL_HEADER, HEADER_09, *HEADERS_08):
        steps = _handshake_091(header)
        seeds.append(b"".join(steps) + b"\x00")  # (even last octet: cut at frames)
        seeds.append(b"".join(steps[:2]))
    seeds += [b"AMQP\x01\x01\x00\x0a", b"AMQP\x00\x00\x09\x00", b"AMQP", PROTOCOL_HEADER + b"\xce"]
    return seeds


def _seeds_091_opened() -> list[bytes]:
    """After the handshake: what a client does on channel 1, and hostile pipelines."""
    q = spec.QueueDeclare(queue="work")
    declare = _method(1, q)
    header_only = encode_header_frame(1, 0, spec.BasicProperties())
    return [
        declare + _publish(1, "work", b"hello", content_type="text/plain"),
        declare
        + _publish(1, "work", b"a" * 300)
        + _method(1, spec.BasicGet(queue="work"))
        + _method(1, spec.BasicAck(delivery_tag=1)),
        declare
        + _method(1, spec.BasicQos(prefetch_count=2))
        + _method(1, spec.BasicConsume(queue="work", consumer_tag="c"))
        + _publish(1, "work", b"x")
        + _method(1, spec.BasicAck(delivery_tag=1, multiple=True)),
        _method(1, spec.ExchangeDeclare(exchange="x", type="topic"))
        + declare
        + _method(1, spec.QueueBind(queue="work", exchange="x", routing_key="a.#"))
        + _publish(1, "a.b", b"routed"),
        _method(1, spec.ConfirmSelect()) + declare + _publish(1, "work", b"c"),
        _method(1, spec.TxSelect()) + _publish(1, "work", b"t") + _method(1, spec.TxCommit()),
        declare + header_only,  # 505 after a method the broker answers
        declare + _method(3, spec.QueueDeclare(queue="z")),  # 504
        _method(1, spec.QueueDelete(queue="work"))
        + _method(1, spec.ChannelClose(reply_code=200, reply_text="", class_id=0, method_id=0)),
        _method(0, spec.ConnectionClose(reply_code=200, reply_text="bye", class_id=0, method_id=0)),
    ]


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``broker-091`` and ``broker-091-opened`` (deterministic)."""
    return {"broker-091": _seeds_091(), "broker-091-opened": _seeds_091_opened()}
