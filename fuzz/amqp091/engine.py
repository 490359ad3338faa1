"""The AMQP 0-9-1 engine's target, ``amqp091-engine``, and its seeds.

A server-role :class:`amqp_sansio.engine.amqp091.Connection` (frame-max 4096, channel-max 7,
heartbeat 10 s, bodies up to 64 KiB; PLAIN, AMQPLAIN and EXTERNAL offered) gets the bytes
after the 0-9-1 protocol header (unless they begin with ``AMQP``), in chunks, with a small
broker answering its events (:func:`_amqp091_respond`) and simulated time moving on.

The invariant: nothing raises; a command the engine refuses (``LocalProtocolError``)
queued nothing; the output parses as 0-9-1 frames (or is our protocol header, for a wrong
one), with nothing but ``connection.close-ok`` after the server's ``connection.close`` and
nothing once it ended; ``connection.close`` carries a hard reply code (or the broker's 200,
403, 530), ``channel.close`` a soft one (or 200); ``ConnectionClosed`` comes exactly once,
last.

The seeds are a client engine's side of whole conversations with our server engine, and a
few broken streams.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.engine.amqp091
import amqp_sansio.framing.amqp091
from amqp_sansio import amqp091

from ..common import TICK, InvariantViolation, chunk_sizes

__all__ = ["fuzz_amqp091_engine", "seeds"]


#: The 0-9-1 server the ``amqp091-engine`` target drives: frame-max the spec's minimum, a few
#: channels, a heartbeat, a small body limit, so that short inputs reach every limit.
AMQP091_LIMITS = {"frame_max": 4096, "channel_max": 7, "heartbeat": 10}
AMQP091_MAX_BODY = 65536


def _amqp091_method_answer(
    conn: amqp.engine.amqp091.Connection, number: int, method: amqp091.Method
) -> list[Callable[[], Any]]:
    answer: amqp091.Method | None = None
    if isinstance(method, amqp.definitions.amqp091.spec.QueueDeclare):
        answer = amqp.definitions.amqp091.spec.QueueDeclareOk(
            queue=method.queue or "q", message_count=0, consumer_count=0
        )
    elif isinstance(method, amqp.definitions.amqp091.spec.BasicGet):
        answer = amqp.definitions.amqp091.spec.BasicGetEmpty()
    elif isinstance(method, amqp.definitions.amqp091.spec.ConfirmSelect):
        answer = amqp.definitions.amqp091.spec.ConfirmSelectOk()
    elif isinstance(method, amqp.definitions.amqp091.spec.BasicQos):
        return [lambda: conn.block("fuzz")]
    if answer is None:
        return []
    reply = answer
    return [lambda: conn.send_method(number, reply)]


def _amqp091_content_answer(
    conn: amqp.engine.amqp091.Connection, event: Any
) -> list[Callable[[], Any]]:
    number = event.channel
    commands: list[Callable[[], Any]] = []
    if number in conn.channels and conn.channel(number).confirm_mode:
        tag = conn.channel(number).next_publish_seq - 1
        commands.append(
            lambda: conn.send_method(
                number, amqp.definitions.amqp091.spec.BasicAck(delivery_tag=tag)
            )
        )
    if len(event.body) % 3 == 0:
        deliver = amqp.definitions.amqp091.spec.BasicDeliver(
            consumer_tag="c", delivery_tag=1, exchange="", routing_key="q"
        )
        commands.append(lambda: conn.send_content(number, deliver, event.properties, event.body))
    return commands


def _amqp091_respond(
    conn: amqp.engine.amqp091.Connection, event: Any, out: Callable[[], None]
) -> None:
    """A small broker on a 0-9-1 server engine: logs in ``guest`` (refuses anyone else,
    challenges ``secure``), opens ``/`` (refuses other virtual hosts), answers queue.declare,
    basic.get and confirm.select, blocks on basic.qos, acks publishes on a confirm channel,
    delivers back every third body. A command the engine refuses must be a
    LocalProtocolError that queued nothing."""
    ev = amqp.engine.amqp091.events
    commands: list[Callable[[], Any]] = []
    if isinstance(event, ev.LoginRequested):
        if event.username == "secure":
            commands.append(lambda: conn.challenge(b"more"))
        elif event.username in ("guest", None):
            commands.append(lambda: conn.accept_login("guest"))
        else:
            commands.append(lambda: conn.refuse_login("no"))
    elif isinstance(event, ev.OpenRequested):
        if event.virtual_host == "/":
            commands.append(conn.accept_open)
        else:
            commands.append(lambda: conn.refuse_open(530, "no"))
    elif isinstance(event, ev.MethodReceived):
        commands = _amqp091_method_answer(conn, event.channel, event.method)
    elif isinstance(event, ev.ContentReceived):
        commands = _amqp091_content_answer(conn, event)
    for command in commands:
        out()
        try:
            command()
        except amqp.LocalProtocolError as exc:
            if conn.data_to_send():
                raise InvariantViolation(
                    "amqp091-engine", "refused-command", f"{exc!r} queued output"
                ) from exc


def _amqp091_check_output(data: bytes, state: dict[str, Any]) -> None:
    """What the server writes: frames within frame-max that parse as a client reads them;
    after its connection.close, nothing but close-ok; connection.close codes are hard errors
    (or 200/403/530, the application's), channel.close codes soft (or the application's)."""
    if not data:
        return
    parser: amqp.framing.amqp091.FrameParser = state["parser"]
    if state.get("after_end"):
        raise InvariantViolation("amqp091-engine", "after-end", f"wrote {data[:40]!r} when ended")
    parser.feed(data)
    try:
        frames = list(parser)
    except Exception as exc:
        if data == amqp091.PROTOCOL_HEADER:  # our header: the client's was wrong
            return
        raise InvariantViolation("amqp091-engine", "output", f"unreadable output: {exc!r}") from exc
    for frame in frames:
        if state.get("closing") and not (
            isinstance(frame, amqp091.MethodFrame)
            and isinstance(frame.method, amqp.definitions.amqp091.spec.ConnectionCloseOk)
        ):
            raise InvariantViolation("amqp091-engine", "after-close", f"{frame!r:.200} after close")
        if isinstance(frame, amqp091.MethodFrame):
            method = frame.method
            if isinstance(method, amqp.definitions.amqp091.spec.ConnectionClose):
                state["closing"] = True
                if method.reply_code not in amqp091.HARD_ERRORS | {200, 403, 530}:
                    raise InvariantViolation(
                        "amqp091-engine", "reply-code", f"connection.close {method.reply_code}"
                    )
            elif isinstance(
                method, amqp.definitions.amqp091.spec.ChannelClose
            ) and method.reply_code not in amqp091.SOFT_ERRORS | {200}:
                raise InvariantViolation(
                    "amqp091-engine", "reply-code", f"channel.close {method.reply_code}"
                )


def fuzz_amqp091_engine(data: bytes, *, chunks: Sequence[int] | None = None) -> str:
    """Target ``amqp091-engine``: a server-role :class:`amqp_sansio.engine.amqp091.Connection`
    (frame-max 4096, channel-max 7, heartbeat 10 s, bodies up to 64 KiB) gets the bytes (after
    the 0-9-1 protocol header unless they begin with ``AMQP``) in chunks, with the small
    broker of :func:`_amqp091_respond` answering its events and simulated time moving 5 ms a
    chunk; at the end an hour of silence passes and the stream ends.

    Nothing raises; a refused command queues nothing; the output parses as frames within
    frame-max, with nothing but close-ok after the server's connection.close and nothing
    at all once it has ended; reply codes are hard on connection.close and soft on
    channel.close; ConnectionClosed comes once, last, and the connection is closed then."""
    conn = amqp.engine.amqp091.Connection(
        amqp.engine.amqp091.Role.SERVER,
        mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"),
        limits=amqp091.Limits(max_body=AMQP091_MAX_BODY),
        **AMQP091_LIMITS,  # type: ignore[arg-type]
    )
    stream = data if data[:4] == b"AMQP" else amqp091.PROTOCOL_HEADER + data
    state: dict[str, Any] = {"parser": amqp.framing.amqp091.FrameParser(0)}
    kinds: dict[str, None] = {}
    events: list[Any] = []

    def out() -> None:
        _amqp091_check_output(conn.data_to_send(), state)

    def take(got: list[Any]) -> None:
        for event in got:
            if conn.discarded(event):  # (a close of the responder's made it moot)
                continue
            events.append(event)
            kinds[type(event).__name__] = None
            out()
            _amqp091_respond(conn, event, out)
        out()
        if conn.closed:
            state["after_end"] = True

    now = 0.0
    fed = 0
    sizes = iter(chunk_sizes(stream) if chunks is None else chunks)
    while fed < len(stream):
        step = max(1, next(sizes, len(stream)))
        got = conn.receive_data(stream[fed : fed + step], now)
        fed += step
        take(got)
        now += TICK
        deadline = conn.next_deadline()
        if deadline is not None and deadline <= now:
            take(conn.handle_timer(now))
    take(conn.handle_timer(now + 3600.0))
    take(conn.receive_data(b"", now + 3600.0))
    closed = [e for e in events if isinstance(e, amqp.engine.amqp091.events.ConnectionClosed)]
    if len(closed) != 1 or events[-1] is not closed[0] or not conn.closed:
        raise InvariantViolation(
            "amqp091-engine", "ending", f"closed events {closed!r:.200}, last {events[-1:]!r:.200}"
        )
    code = closed[0].reply_code
    outcome = "ok" if code in (200, 320) else f"closed-{code}"  # 320: silence, stream end
    return f"{outcome}|{','.join(kinds)}"


def _amqp091_engine_seeds() -> list[bytes]:
    """A client engine's side of whole conversations with our server engine: PLAIN and
    AMQPLAIN logins, a refused one, channels, declares, gets, publishes (with confirms,
    large and empty), a flow, a close; and a few broken streams."""
    from amqp_sansio.engine.amqp091 import Connection, Role
    from amqp_sansio.engine.amqp091 import events as ev

    def conversation(script: Callable[[Any, Callable[[], None]], None], **client: Any) -> bytes:
        c = Connection(Role.CLIENT, **client)
        s = Connection(Role.SERVER, mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"), **AMQP091_LIMITS)  # type: ignore[arg-type]
        c.start(0.0)
        wire: list[bytes] = []

        def pump() -> None:
            for _ in range(50):
                data = c.data_to_send()
                wire.append(data)
                for e in s.receive_data(data, 0.0) if data else []:
                    if isinstance(e, ev.LoginRequested):
                        if e.username == "guest":
                            s.accept_login("guest")
                        else:
                            s.refuse_login("no")
                    elif isinstance(e, ev.OpenRequested):
                        s.accept_open()
                    elif isinstance(e, ev.MethodReceived) and isinstance(
                        e.method, amqp.definitions.amqp091.spec.ConfirmSelect
                    ):
                        s.send_method(e.channel, amqp.definitions.amqp091.spec.ConfirmSelectOk())
                reply = s.data_to_send()
                if not data and not reply:
                    return
                if reply:
                    c.receive_data(reply, 0.0)

        pump()
        if not c.closed:
            script(c, pump)
            pump()
            c.close()
            pump()
        return b"".join(wire)

    def work(c: Any, pump: Callable[[], None]) -> None:
        n = c.open_channel()
        m = c.open_channel()
        pump()
        c.send_method(
            n, amqp.definitions.amqp091.spec.QueueDeclare(queue="q", arguments={"x-max-length": 5})
        )
        c.send_method(n, amqp.definitions.amqp091.spec.BasicQos(prefetch_count=3))
        c.send_method(m, amqp.definitions.amqp091.spec.ConfirmSelect())
        c.send_method(n, amqp.definitions.amqp091.spec.BasicGet(queue="q"))
        c.publish(n, "", "q", b"abc", amqp091.BasicProperties(delivery_mode=2, headers={"h": 1}))
        c.publish(n, "", "q", bytes(range(256)) * 40)
        c.publish(n, "", "q", b"")
        c.send_method(n, amqp.definitions.amqp091.spec.ChannelFlow(active=False))
        c.close_channel(n)

    def confirms(c: Any, pump: Callable[[], None]) -> None:
        m = c.open_channel()
        pump()
        c.send_method(m, amqp.definitions.amqp091.spec.ConfirmSelect())
        pump()
        c.publish(m, "amq.topic", "a.b", b"xyz")

    seeds = [
        conversation(work),
        conversation(confirms, mechanism="AMQPLAIN"),
        conversation(lambda c, pump: None, username="someone", password="else"),
        conversation(lambda c, pump: None, virtual_host="/other"),
        b"AMQP\x00\x00\x09\x00",
        b"AMQP\x00\x01\x00\x00",
    ]
    base = seeds[0]
    seeds += [base[:40], base[: len(base) // 2], base + amqp091.encode_body_frame(1, b"stray")]
    return seeds


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``amqp091-engine`` (deterministic)."""
    return {"amqp091-engine": _amqp091_engine_seeds()}
