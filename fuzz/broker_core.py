"""Fuzz targets for the I/O-free broker itself (``amqp_sansio.broker``), both protocols: a
:class:`~amqp_sansio.broker.Broker` with its defaults accepts one connection and is fed the
data in chunks, driven as the server drives it (output drained after each input, the timer
fired when due, the dispatch turns run, an hour of silence, then the transport's end).

* ``broker-091``: the data from scratch to ``Broker.accept_091`` (the client's protocol
  header is part of it: 0-9-1's, 0-9's or 0-8's, or another);
* ``broker-091-opened``: after a valid handshake (0-9-1 header, PLAIN login as guest,
  tune-ok, ``/`` opened, channel 1 open), the data;
* ``broker-10``: the data from scratch to ``Broker.accept`` (AMQP 1.0: SASL or AMQP header
  first);
* ``broker-10-opened``: after a 1.0 client's header, open, begin and attaches.

The invariant: every call returns (any exception is a failure, stage ``crash``); the
broker's 0-9-1 output parses as its client would parse it (a protocol header alone, for a
refused one; else frames, with 0-8's method ids for a 0-8 client), with nothing but
``connection.close-ok`` after its ``connection.close`` (stages ``output``, ``after-close``);
a connection that was open and ends while the data comes has a close on the wire
(``connection.close`` or its ``close-ok`` for 0-9-1, the ``close`` performative for 1.0:
stage ``no-close``); after the silence and the transport's end the connection has ended
(``not-ended``). Registered in :data:`fuzz.harness.TARGETS` (``BROKER_TARGETS``); the
bounded pass in tests/project/test_fuzz_pass.py runs them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import amqp_sansio as amqp
from amqp_sansio.amqp091 import PROTOCOL_HEADER, spec
from amqp_sansio.amqp091.amqp08 import decode_method_08
from amqp_sansio.amqp091.framing import (
    HEADER_09,
    HEADERS_08,
    FrameParser,
    MethodFrame,
    encode_body_frame,
    encode_header_frame,
    encode_method_frame,
)
from amqp_sansio.broker import Broker, BrokerConfig

__all__ = ["BROKER_TARGETS", "TARGETS", "InvariantViolation", "seed_corpus"]

#: Simulated time a chunk takes, and the silence at the end (the idle and handshake
#: time-outs pass).
TICK = 0.005
SILENCE = 3600.0
#: The 1.0 close performative's descriptor (core spec 2.7.9: 0x00 0x53 0x18).
_CLOSE_10 = b"\x00\x53\x18"


class InvariantViolation(AssertionError):
    """The broker broke the invariant (``stage`` says which part)."""

    def __init__(self, target: str, stage: str, message: str) -> None:
        super().__init__(f"{target}: {stage}: {message}")
        self.stage = stage


# -- chunks -----------------------------------------------------------------------------------


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


def _chunks(data: bytes, *, frames: bool) -> list[bytes]:
    """The data in chunks derived from it (reproducible): at frame boundaries for half
    the inputs (``frames``, 0-9-1), else cut anywhere."""
    if not data:
        return []
    if frames and data[-1] % 2 == 0:
        sizes = _frame_cuts(data)
    elif data[0] % 3 == 0:
        sizes = [len(data)]
    else:
        sizes = [1 + (b % 61) for b in data]
    out, at = [], 0
    for size in sizes:
        if at >= len(data):
            break
        out.append(data[at : at + size])
        at += size
    if at < len(data):
        out.append(data[at:])
    return out


# -- the driver -------------------------------------------------------------------------------


class _Driver:
    """One broker, one connection, driven as adapters/broker/server.py drives them."""

    def __init__(self, protocol: str) -> None:
        self.broker = Broker(BrokerConfig())
        self.now = 100.0
        self.wall = 1_700_000_000.0
        self.protocol = protocol
        accept = self.broker.accept_091 if protocol == "0-9-1" else self.broker.accept
        self.conn: Any = accept(self.now, wall=self.wall, address="10.0.0.1")
        self.out = bytearray()

    def flush(self) -> None:
        broker = self.broker
        for _ in range(100):
            for conn in broker.pending():
                data = conn.data_to_send()
                if type(data) is not bytes:
                    raise InvariantViolation(self.protocol, "output", "data_to_send() not bytes")
                self.out += data
            if not broker.dispatching:
                return
            broker.dispatch_more()

    def feed(self, chunk: bytes) -> None:
        self.conn.receive_data(chunk, self.now, wall=self.wall)
        self.flush()
        self.now += TICK
        self.wall += TICK
        self.timers(self.now)

    def timers(self, until: float) -> None:
        conn = self.conn
        for _ in range(20):
            deadline = conn.next_deadline()
            if conn.ended or deadline is None or deadline > until:
                return
            self.now = max(self.now, deadline)
            conn.handle_timer(self.now, wall=self.wall)
            self.flush()

    def finish(self) -> None:
        """An hour of silence, then the transport ends."""
        self.timers(self.now + SILENCE)
        self.now += SILENCE
        self.broker.expire(self.wall + SILENCE)
        self.conn.connection_lost(self.now, wall=self.wall)
        self.flush()


# -- 0-9-1 ------------------------------------------------------------------------------------


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


def _check_091(target: str, driver: _Driver, opened: bool, ended: bool) -> None:
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
    driver = _Driver("0-9-1")
    for step in prefix:
        driver.feed(step)
    conn = driver.conn
    for chunk in _chunks(data, frames=True):
        if conn.ended:
            break
        driver.feed(chunk)
    opened, ended = conn.record.opened, conn.ended
    _check_091(target, driver, opened, ended)
    driver.finish()
    if not conn.ended:
        raise InvariantViolation(target, "not-ended", "the transport ended, the connection not")
    return _label(conn, opened, ended)


def _label(conn: Any, opened: bool, ended: bool) -> str:
    """The outcome: how far the connection got, and why it ended (digits and quoted names
    dropped), so that inputs reaching a new reason join the fuzzer's pool."""
    why = conn.record.ending or conn.refused or ""
    why = re.sub(r"'[^']*'|\d+", "#", why)[:60]
    return f"ok:{'opened' if opened else 'handshake'}:{'ended' if ended else 'open'}:{why}"


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


# -- 1.0 --------------------------------------------------------------------------------------


def _fuzz_10(target: str, data: bytes, prefix: Sequence[bytes]) -> str:
    driver = _Driver("1.0")
    for step in prefix:
        driver.feed(step)
    conn = driver.conn
    before = len(driver.out)
    for chunk in _chunks(data, frames=False):
        if conn.ended:
            break
        driver.feed(chunk)
    opened, ended = conn.record.opened, conn.ended
    if opened and ended and _CLOSE_10 not in driver.out[before:]:
        raise InvariantViolation(target, "no-close", "the open connection ended, no close sent")
    driver.finish()
    if not conn.ended:
        raise InvariantViolation(target, "not-ended", "the transport ended, the connection not")
    return _label(conn, opened, ended)


def _client_10() -> list[bytes]:
    """A 1.0 client engine's writes to the broker core: header and open, a begin, a sender
    and a receiver on queue ``q``, a message, its delivery settled."""
    broker = Broker(BrokerConfig())
    conn = broker.accept(100.0, wall=1e9)
    client = amqp.Connection(client=True, container_id="fuzz")
    client.open(now=100.0)
    writes: list[bytes] = []

    def pump() -> None:
        for _ in range(50):
            data = client.data_to_send()
            if data:
                writes.append(data)
                conn.receive_data(data, 100.0, wall=1e9)
            back = b"".join(c.data_to_send() for c in broker.pending())
            if back:
                client.receive_data(back, 100.0)
            if not data and not back:
                return

    pump()
    session = client.begin()
    pump()
    sender = session.attach_sender("s", target=amqp.Target(address="q"))
    receiver = session.attach_receiver("r", source=amqp.Source(address="q"))
    pump()
    receiver.flow(5)
    sender.send(amqp.Message(body=b"hello").encode())
    pump()
    client.close()
    pump()
    return writes


def fuzz_broker_10(data: bytes) -> str:
    return _fuzz_10("broker-10", data, ())


def fuzz_broker_10_opened(data: bytes) -> str:
    return _fuzz_10("broker-10-opened", data, _client_10()[:1])


def _seeds_10() -> list[bytes]:
    writes = _client_10()
    return [b"".join(writes), writes[0], b"".join(writes[:3]), b"AMQP\x03\x01\x00\x00"]


def _seeds_10_opened() -> list[bytes]:
    writes = _client_10()
    return [b"".join(writes[1:]), b"".join(writes[1:-1]), writes[-1]]


# -- registration -----------------------------------------------------------------------------

TARGETS: dict[str, Callable[[bytes], str]] = {
    "broker-091": fuzz_broker_091,
    "broker-091-opened": fuzz_broker_091_opened,
    "broker-10": fuzz_broker_10,
    "broker-10-opened": fuzz_broker_10_opened,
}
BROKER_TARGETS = tuple(TARGETS)


def seed_corpus() -> dict[str, list[bytes]]:
    """The seeds of each target (deterministic)."""
    return {
        "broker-091": _seeds_091(),
        "broker-091-opened": _seeds_091_opened(),
        "broker-10": _seeds_10(),
        "broker-10-opened": _seeds_10_opened(),
    }
