"""The broker core's AMQP 0-10 front door: the targets ``broker-010`` and
``broker-010-opened``, and their seeds (the driver and the invariant they share with the
other protocols' broker targets are in ``fuzz/broker_core.py``).

* ``broker-010``: the data from scratch to the connection ``Broker.accept_header("0-10")``
  makes (the client's protocol header is part of the data: 0-10's, or another);
* ``broker-010-opened``: after a valid handshake (a 0-10 client engine's header,
  ``connection.start-ok`` with ANONYMOUS, the broker's default, then ``tune-ok`` and
  ``open``), the data.

Half the inputs are cut at frame boundaries, as a client that waits for each answer
(:func:`_frame_cuts`). The broker's output must parse as a 0-10 client would parse it: the
0-10 protocol header (alone, for a client's other header), then frames that make
assemblies (:class:`~amqp_sansio.framing.amqp010.AssemblyParser`) of controls and commands
(with their header segments) that decode, no partial frame, and nothing but
``connection.close-ok`` after its ``connection.close`` or ``close-ok`` (each close of the
client's is answered); an open connection that ends while the data comes has
``connection.close`` or its ``close-ok`` on the wire.

The seeds are a 0-10 client engine's writes to the broker core in whole conversations
(:func:`_record`): sessions attached, detached and resumed, declares, bindings, subscriptions
with credit, transfers with header and body, accepts, releases, a transaction, a refused
command, the close; some of them again with every assembly cut into small frames
(:func:`_reframe`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

import amqp_sansio as amqp
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine
from amqp_sansio.framing.amqp010 import (
    HEADER_SIZE,
    PROTOCOL_HEADER,
    AssemblyParser,
    SegmentType,
    Track,
    encode_assembly,
)

from ..broker_core import Driver, run_target
from ..common import InvariantViolation

__all__ = ["fuzz_broker_010", "fuzz_broker_010_opened", "seeds"]

_PROTOCOL = "0-10"


def _frame_cuts(data: bytes) -> list[int]:
    """Chunk sizes at 0-10 frame boundaries (a header first, if the data begins with one;
    a frame's size, header included, is in its octets 2-3): a client that waits for each
    answer."""
    sizes, at = [], 0
    if data[:4] == b"AMQP":
        sizes.append(min(8, len(data)))
        at = 8
    while at < len(data):
        size = int.from_bytes(data[at + 2 : at + 4], "big") if len(data) - at >= 4 else 1
        size = min(max(size, 1), len(data) - at)
        sizes.append(size)
        at += size
    return sizes


# -- the check --------------------------------------------------------------------------------


def _check_010(target: str, driver: Driver, client_header: bytes, opened: bool) -> None:
    """The broker's output as a 0-10 client reads it (see the module's docstring)."""
    out = bytes(driver.out)
    if not out:
        return
    if not out.startswith(PROTOCOL_HEADER):
        raise InvariantViolation(target, "output", f"began {out[:8]!r}, not the 0-10 header")
    if client_header != PROTOCOL_HEADER:
        if out != PROTOCOL_HEADER or not driver.conn.ended:
            raise InvariantViolation(target, "output", f"a header, then {out[8:40]!r}")
        return
    frames = out[len(PROTOCOL_HEADER) :]
    at = 0
    while len(frames) - at >= HEADER_SIZE:
        at += max(1, int.from_bytes(frames[at + 2 : at + 4], "big"))
    if at != len(frames):
        raise InvariantViolation(target, "output", f"a frame cut {at - len(frames)} short")
    try:
        close_seen = _read(target, frames)
    except amqp.errors.AMQPError as exc:
        raise InvariantViolation(target, "output", f"the broker's output: {exc!r}") from exc
    if opened and driver.conn.ended and not close_seen:
        raise InvariantViolation(target, "no-close", "the open connection ended, no close sent")


def _read(target: str, frames: bytes) -> bool:
    """Decode the broker's frames as a client does (raising the codec's errors); check
    that nothing but ``close-ok`` follows its ``connection.close`` or ``close-ok``. Gives
    whether one of those two went."""
    closing = False
    for assembly in AssemblyParser().feed(frames):
        segments = assembly.segments
        if assembly.track == Track.CONTROL:
            control = spec.decode_control(segments[0].payload)
            name, ok = control.NAME, isinstance(control, spec.ConnectionCloseOk)
        else:
            name, ok = spec.decode_command(segments[0].payload)[0].NAME, False
            for segment in segments[1:]:
                if segment.type == SegmentType.HEADER:
                    spec.decode_header(segment.payload)
        if closing and not ok:
            raise InvariantViolation(target, "after-close", f"{name} after close")
        closing = closing or ok or name == spec.ConnectionClose.NAME
    return closing


def _fuzz_010(target: str, data: bytes, prefix: Sequence[bytes]) -> str:
    header = (b"".join(prefix) + data)[: len(PROTOCOL_HEADER)]

    def check(driver: Driver, opened: bool, ended: bool) -> None:
        _check_010(target, driver, header, opened)

    return run_target(target, _PROTOCOL, data, prefix, _frame_cuts, check)


def fuzz_broker_010(data: bytes) -> str:
    return _fuzz_010("broker-010", data, ())


def fuzz_broker_010_opened(data: bytes) -> str:
    return _fuzz_010("broker-010-opened", data, _HANDSHAKE)


# -- recorded conversations -------------------------------------------------------------------

_Pump = Callable[[], list[Any]]


def _record(script: Callable[[engine.Connection, _Pump], None]) -> list[bytes]:
    """A 0-10 client engine's writes to the broker core (ANONYMOUS, the broker's default),
    each after the broker's answer to the last: its header, ``start-ok``, ``tune-ok`` and
    ``open``, then what ``script`` sends, then ``connection.close``. The client completes
    every command it gets."""
    driver = Driver(_PROTOCOL)
    client = engine.Connection(engine.Role.CLIENT, mechanism="ANONYMOUS")
    client.start(driver.now)
    writes: list[bytes] = []

    def pump() -> list[Any]:
        events: list[Any] = []
        for _ in range(50):
            data = client.data_to_send()
            if data:
                writes.append(data)
                driver.feed(data)
            back = bytes(driver.out)
            driver.out.clear()
            for event in client.receive_data(back, driver.now) if back else ():
                events.append(event)
                if isinstance(event, engine.CommandReceived) and _attached(client, event.session):
                    client.complete(event.session, event.command_id)
            if not data and not back:
                break
        return events

    pump()
    script(client, pump)
    pump()
    client.close()
    pump()
    return writes


def _attached(client: engine.Connection, session: bytes) -> bool:
    found = client.sessions.get(session)
    return found is not None and found.state is engine.SessionState.ATTACHED


def _transfers(events: list[Any]) -> tuple[tuple[int, int], ...]:
    """The ids of the ``message.transfer`` commands among ``events``, as a sequence set."""
    return tuple(
        (e.command_id, e.command_id)
        for e in events
        if isinstance(e, engine.CommandReceived) and isinstance(e.command, spec.MessageTransfer)
    )


def _header(key: str, **properties: Any) -> tuple[spec.Struct, ...]:
    return (spec.DeliveryProperties(routing_key=key), spec.MessageProperties(**properties))


def _work(c: engine.Connection, pump: _Pump) -> None:
    """Declare, bind, subscribe with credit, publish, accept, a transaction, detach."""
    c.attach(b"s")
    pump()
    c.send_command(b"s", spec.QueueDeclare(queue="q"), sync=True)
    c.send_command(b"s", spec.ExchangeBind(queue="q", exchange="amq.topic", binding_key="a.#"))
    c.send_command(b"s", spec.MessageSubscribe(queue="q", destination="d", accept_mode=0))
    c.send_command(b"s", spec.MessageFlow(destination="d", unit=0, value=10))
    c.send_command(b"s", spec.MessageFlow(destination="d", unit=1, value=0xFFFFFFFF))
    header = _header("q", content_type="text/plain", application_headers={"k": 1})
    c.send_command(b"s", spec.MessageTransfer(destination=""), header=header, body=b"hello")
    header = _header("a.b", message_id=uuid.UUID(int=7), correlation_id=b"c")
    c.send_command(b"s", spec.MessageTransfer(destination="amq.topic"), header=header, body=b"t")
    got = pump()
    c.send_command(b"s", spec.MessageAccept(transfers=_transfers(got)), sync=True)
    c.send_command(b"s", spec.TxSelect())
    c.send_command(b"s", spec.MessageTransfer(destination=""), header=_header("q"), body=b"x")
    c.send_command(b"s", spec.TxCommit(), sync=True)
    got = pump()
    c.send_command(b"s", spec.MessageRelease(transfers=_transfers(got), set_redelivered=True))
    c.send_command(b"s", spec.MessageCancel(destination="d"), sync=True)
    pump()
    c.detach(b"s", keep=False)


def _large(c: engine.Connection, pump: _Pump) -> None:
    """A larger message (cut into small frames by :func:`_reframe`), taken with a
    window-mode subscription and a flush, rejected."""
    c.attach(b"big")
    pump()
    c.send_command(b"big", spec.QueueDeclare(queue="big", auto_delete=True))
    body = bytes(range(256)) * 2
    c.send_command(b"big", spec.MessageTransfer(destination=""), header=_header("big"), body=body)
    c.send_command(b"big", spec.MessageSubscribe(queue="big", destination="b", accept_mode=0))
    c.send_command(b"big", spec.MessageSetFlowMode(destination="b", flow_mode=0))
    c.send_command(b"big", spec.MessageFlow(destination="b", unit=0, value=1))
    c.send_command(b"big", spec.MessageFlow(destination="b", unit=1, value=100000))
    c.send_command(b"big", spec.MessageFlush(destination="b"), sync=True)
    got = pump()
    c.send_command(b"big", spec.MessageReject(transfers=_transfers(got), code=0, text="no"))
    c.send_command(b"big", spec.ExecutionSync(), sync=True)
    pump()


def _resume(c: engine.Connection, pump: _Pump) -> None:
    """A session kept for its time-out: detached with a message unaccepted, resumed; a
    queue query, an exchange declared, a refused passive declare."""
    c.attach(b"kept", timeout=60)
    pump()
    c.send_command(b"kept", spec.QueueDeclare(queue="r"))
    c.send_command(b"kept", spec.ExchangeDeclare(exchange="x", type="fanout"))
    c.send_command(b"kept", spec.ExchangeBind(queue="r", exchange="x", binding_key=""))
    c.send_command(b"kept", spec.MessageTransfer(destination="x"), header=_header(""), body=b"r")
    c.send_command(b"kept", spec.MessageSubscribe(queue="r", destination="k", accept_mode=0))
    c.send_command(b"kept", spec.MessageFlow(destination="k", unit=0, value=0xFFFFFFFF))
    c.send_command(b"kept", spec.MessageFlow(destination="k", unit=1, value=0xFFFFFFFF))
    pump()
    c.detach(b"kept")
    pump()
    c.resume(b"kept")
    pump()
    c.send_command(b"kept", spec.QueueQuery(queue="r"), sync=True)
    c.send_command(b"kept", spec.QueueDeclare(queue="absent", passive=True), sync=True)
    pump()


def _reframe(writes: Sequence[bytes], max_frame_size: int) -> bytes:
    """The same writes with every assembly cut into frames of ``max_frame_size`` (the
    protocol header, if they begin with it, kept)."""
    stream = b"".join(writes)
    skip = len(PROTOCOL_HEADER) if stream.startswith(PROTOCOL_HEADER) else 0
    out = [stream[:skip]]
    for assembly in AssemblyParser().feed(stream[skip:]):
        segments = [(segment.type, segment.payload) for segment in assembly.segments]
        out += encode_assembly(assembly.channel, assembly.track, segments, max_frame_size)
    return b"".join(out)


#: The conversations, recorded once at import (before any test patches the broker).
_WORK, _LARGE, _RESUME, _BARE = (_record(s) for s in (_work, _large, _resume, lambda c, p: None))
#: The handshake ``broker-010-opened`` starts with: header, start-ok, tune-ok and open.
_HANDSHAKE = tuple(_BARE[:3])


def _seeds_010() -> list[bytes]:
    """From scratch: whole conversations (one cut into small frames), a handshake alone,
    refused headers."""
    return [
        b"".join(_WORK),
        _reframe(_LARGE, 64),
        b"".join(_RESUME),
        b"".join(_BARE),
        b"".join(_BARE[:2]),
        b"AMQP\x00\x00\x09\x01",
        b"AMQP\x01\x01\x00\x09",
        PROTOCOL_HEADER + b"\x0f",
    ]


def _seeds_010_opened() -> list[bytes]:
    """After the handshake: what the conversations send once open, whole and cut into
    small frames, a few pieces of them, a close alone."""
    after = len(_HANDSHAKE)
    seeds = [b"".join(w[after:]) for w in (_WORK, _LARGE, _RESUME)]
    seeds += [_reframe(w[after:], 40) for w in (_WORK, _LARGE)]
    seeds += [b"".join(_WORK[after : after + 4]), _BARE[-1]]
    return seeds


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``broker-010`` and ``broker-010-opened`` (deterministic)."""
    return {"broker-010": _seeds_010(), "broker-010-opened": _seeds_010_opened()}
