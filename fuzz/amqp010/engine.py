"""The AMQP 0-10 engine's target, ``amqp010-engine``, and its seeds.

A server-role :class:`amqp_sansio.engine.amqp010.Connection` (ANONYMOUS and PLAIN offered,
max-frame-size 4096, 8 channels, small session limits) gets the bytes after the 0-10
protocol header (unless they begin with ``AMQP``), whole and in chunks, with a small
application answering its events: it accepts the open, completes every command, answers a
``queue.query`` with its result and refuses a ``queue.delete`` with an exception.
Simulated time moves on; at the end an hour of silence passes and the stream ends.

The invariant: nothing raises; the output is our protocol header then 0-10 frames that
parse back (:class:`~amqp_sansio.framing.amqp010.AssemblyParser`) into controls and
commands that decode; nothing is written once the connection ended; ConnectionClosed comes
exactly once, last.

The seeds are a client engine's side of whole conversations with our server engine, and a
few broken streams.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine
from amqp_sansio.framing.amqp010 import PROTOCOL_HEADER, AssemblyParser, Track
from amqp_sansio.security.mechanisms import ServerAuthenticator

from ..common import TICK, InvariantViolation, chunk_sizes

__all__ = ["fuzz_amqp010_engine", "seeds"]

TARGET = "amqp010-engine"

#: What the target's server takes: small, so that short inputs reach every limit.
LIMITS = engine.Limits(
    max_frame_size=4096,
    max_channels=8,
    max_assembly_size=65536,
    max_outstanding_bytes=65536,
    max_incomplete_commands=64,
    max_session_timeout=60,
    max_detached_sessions=4,
)


class _Guest:
    def check_password(self, username: str, password: str) -> bool:
        return (username, password) == ("guest", "guest")


def _server() -> engine.Connection:
    authenticator = ServerAuthenticator(
        _Guest(), allow_anonymous=True, allow_cleartext_secrets=True
    )
    return engine.Connection(
        engine.Role.SERVER, authenticator=authenticator, limits=LIMITS, heartbeat_range=(1, 30)
    )


def _respond(conn: engine.Connection, event: Any) -> None:
    """The application: open, complete, answer; a call the engine refuses must raise
    LocalProtocolError before it queued anything (checked by the caller's output check)."""
    if isinstance(event, engine.OpenRequested):
        if conn.state is engine.ConnectionState.OPEN_PENDING:  # (not closed meanwhile)
            conn.accept_open(["here:5672"])
    elif isinstance(event, engine.CommandReceived) and conn.state is engine.ConnectionState.OPEN:
        session = event.session
        if session not in conn.sessions or conn.session(session).state is not (
            engine.SessionState.ATTACHED
        ):
            return
        if isinstance(event.command, spec.QueueDelete):
            conn.send_exception(session, 404, command_id=event.command_id, description="no")
            return
        if isinstance(event.command, spec.QueueQuery):
            result = spec.QueueQueryResult(queue=event.command.queue)
            conn.send_result(session, event.command_id, result)
        conn.complete(session, event.command_id)


def _check_output(data: bytes, state: dict[str, Any]) -> None:
    if not data:
        return
    if state.get("ended"):
        raise InvariantViolation(TARGET, "after-end", f"wrote {data[:40]!r} when ended")
    if not state.get("header"):
        if not data.startswith(PROTOCOL_HEADER):
            raise InvariantViolation(TARGET, "output", f"began {data[:8]!r}, not the header")
        state["header"] = True
        data = data[len(PROTOCOL_HEADER) :]
    parser: AssemblyParser = state["parser"]
    try:
        for assembly in parser.feed(data):
            payload = assembly.segments[0].payload
            if assembly.track == Track.CONTROL:
                spec.decode_control(payload)
            else:
                spec.decode_command(payload)
    except Exception as exc:
        raise InvariantViolation(TARGET, "output", f"unreadable output: {exc!r}") from exc


def fuzz_amqp010_engine(data: bytes, *, chunks: Sequence[int] | None = None) -> str:
    """Target ``amqp010-engine`` (see the module's docstring)."""
    conn = _server()
    stream = data if data[:4] == b"AMQP" else PROTOCOL_HEADER + data
    state: dict[str, Any] = {"parser": AssemblyParser(max_frame_size=65535)}
    kinds: dict[str, None] = {}
    events: list[Any] = []

    def take(got: list[Any]) -> None:
        for event in got:
            events.append(event)
            kinds[type(event).__name__] = None
            _respond(conn, event)
        _check_output(conn.data_to_send(), state)
        if conn.closed:
            state["ended"] = True

    now = 0.0
    fed = 0
    sizes = iter(chunk_sizes(stream) if chunks is None else chunks)
    while fed < len(stream):
        step = max(1, next(sizes, len(stream)))
        take(conn.receive_data(stream[fed : fed + step], now))
        fed += step
        now += TICK
        deadline = conn.next_deadline()
        if deadline is not None and deadline <= now:
            take(conn.handle_timer(now))
    take(conn.handle_timer(now + 3600.0))
    take(conn.receive_data(b"", now + 3600.0))
    closed = [e for e in events if isinstance(e, engine.ConnectionClosed)]
    if len(closed) != 1 or events[-1] is not closed[0] or not conn.closed:
        raise InvariantViolation(
            TARGET, "ending", f"closed events {closed!r:.200}, last {events[-1:]!r:.200}"
        )
    code = closed[0].reply_code
    outcome = "ok" if code in (200, 320) else f"closed-{code}"
    return f"{outcome}|{','.join(kinds)}"


def _conversation(script: Any, **client: Any) -> bytes:
    """A client engine's bytes in a whole conversation with our server engine."""
    c = engine.Connection(engine.Role.CLIENT, **client)
    s = _server()
    c.start(0.0)
    s.start(0.0)
    wire: list[bytes] = []

    def pump() -> None:
        for _ in range(50):
            data = c.data_to_send()
            wire.append(data)
            for event in s.receive_data(data, 0.0) if data else []:
                _respond(s, event)
            reply = s.data_to_send()
            if not data and not reply:
                return
            for event in c.receive_data(reply, 0.0) if reply else []:
                if isinstance(event, engine.CommandReceived):
                    c.complete(event.session, event.command_id)

    pump()
    if not c.closed:
        script(c, pump)
        pump()
        c.close()
        pump()
    return b"".join(wire)


def _work(c: engine.Connection, pump: Any) -> None:
    c.attach(b"one", timeout=30)
    c.attach(b"two")
    pump()
    header = (spec.DeliveryProperties(routing_key="q"), spec.MessageProperties(content_type="t"))
    c.send_command(b"one", spec.QueueDeclare(queue="q", durable=True), sync=True)
    c.send_command(b"one", spec.MessageTransfer(destination=""), header=header, body=b"x" * 5000)
    c.send_command(b"one", spec.QueueQuery(queue="q"), sync=True)
    c.send_command(b"two", spec.ExecutionSync(), sync=True)
    c.send_command(b"two", spec.MessageSubscribe(queue="q", destination="t"))
    pump()
    c.send_command(b"two", spec.QueueDelete(queue="q"))
    c.detach(b"one")


def _amqp010_engine_seeds() -> list[bytes]:
    seeds = [
        _conversation(_work),
        _conversation(lambda c, pump: None, mechanism="ANONYMOUS", heartbeat=5),
        _conversation(lambda c, pump: None, username="guest", password="wrong"),
        b"AMQP\x00\x00\x09\x01",
        b"AMQP\x01\x01\x00\x0a\x0f\x00\x00\x0c\x00\x00\x00\x00\x00\x00\x00\x00",
    ]
    base = seeds[0]
    seeds += [base[:60], base[: len(base) // 2]]
    return seeds


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``amqp010-engine`` (deterministic)."""
    return {TARGET: _amqp010_engine_seeds()}
