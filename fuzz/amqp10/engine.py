"""The AMQP 1.0 engine's targets, ``server`` and ``server-opened``, and their seeds.

A server-role :class:`amqp_sansio.Connection` (max-frame-size 512, channel-max 7, idle
time-out 10 s) gets a valid AMQP header (``server-opened``: a header and a valid open) and
then the bytes, in chunks (:func:`server_chunks`), with the small application of
:class:`_ServerApp` answering its events and simulated time moving on (:func:`fuzz_server`).

The invariant: ``receive_data``, ``handle_timer`` and ``next_deadline`` return normally,
whatever the bytes; what the server sends parses as its peer would parse it, within the
peer's max-frame-size and nothing after a close; every ``ProtocolError`` event is answered
on the wire by a frame carrying its error; a command the engine refuses has queued nothing;
after an hour of silence and the transport's end the connection is in ``END``.

The seeds are what a client engine sends to this same server in four whole conversations,
recorded in memory (:class:`_Conversation`), whole and cut in half.
"""

from __future__ import annotations

import functools
import itertools
import re
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.framing.amqp10
from amqp_sansio import Message, Symbol
from amqp_sansio.definitions.amqp10 import messaging, performatives
from amqp_sansio.framing.amqp10 import FrameParser

from ..common import REMOTE_ERRORS, TICK, InvariantViolation, chunk_sizes

__all__ = ["SERVER_FRAME_MAX", "fuzz_server", "fuzz_server_opened", "seeds", "server_chunks"]

#: The server the ``server`` targets drive accepts frames of at most this size (the minimum
#: the spec allows, so that the limits are reached by short inputs).
SERVER_FRAME_MAX = 512


def _server_connection() -> amqp.Connection:
    return amqp.Connection(
        client=False,
        container_id="fuzz-server",
        max_frame_size=SERVER_FRAME_MAX,
        channel_max=7,
        idle_timeout=10.0,
    )


class _ServerApp:
    """A simple application on a server-role connection: it accepts the open, every
    session and every link (but those named ``refuse...``), grants credit, sends a message
    whenever it gets credit, settles what it receives with each outcome in turn, and settles
    what the peer settles. Deterministic: the same events give the same commands.

    Every command first hands the engine's pending output to ``emit``; a command the engine
    refuses (:class:`~amqp_sansio.LocalProtocolError`) must have queued nothing.
    """

    _SIZES = (0, 100, 700, 1500)

    def __init__(self, conn: amqp.Connection, emit: Callable[[bytes], None]) -> None:
        self.conn = conn
        self.emit = emit
        self.count = 0

    def command(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.emit(self.conn.data_to_send())
        try:
            return fn(*args, **kwargs)
        except amqp.LocalProtocolError as exc:
            leaked = self.conn.data_to_send()
            if leaked:
                raise InvariantViolation(
                    "server",
                    "refused-sent",
                    f"{fn.__name__} was refused ({exc}) but queued {leaked[:64]!r}",
                ) from exc
            return None

    def respond(self, events: Sequence[amqp.Event]) -> None:
        for e in events:
            self.count += 1
            handler = _APP_HANDLERS.get(type(e))
            if handler is not None:
                handler(self, e, self.count)

    def _on_opened(self, e: amqp.events.ConnectionOpened, n: int) -> None:
        self.command(self.conn.open)

    def _on_session_begun(self, e: amqp.events.SessionBegun, n: int) -> None:
        if e.session.state is amqp.SessionState.BEGIN_RCVD:
            self.command(e.session.begin)

    def _on_link_attached(self, e: amqp.events.LinkAttached, n: int) -> None:
        link = e.link
        if link.state is not amqp.LinkState.ATTACH_RCVD:
            return
        if link.name.startswith("refuse"):
            self.command(link.refuse)
            return
        if isinstance(link, amqp.Receiver):
            link.streaming = n % 2 == 1
        self.command(link.attach)
        if isinstance(link, amqp.Receiver):
            self.command(link.flow, 4)

    def _on_credit(self, e: amqp.events.CreditChanged, n: int) -> None:
        if not isinstance(e.link, amqp.Sender):
            return
        if e.drain:
            self.command(e.link.drained)
        elif e.credit > 0:
            data = bytes(range(256)) * 6
            self.command(e.link.send, data[: self._SIZES[n % 4]])

    def _on_delivery(self, e: amqp.events.DeliveryReceived, n: int) -> None:
        if not e.complete:
            return
        a = amqp
        link = e.link
        d = e.delivery
        choice = n % 6
        if choice == 0:
            self.command(link.update, d, messaging.Received(section_number=0, section_offset=1))
        outcome = (
            a.Accepted(),
            a.Rejected(error=a.Error(condition=Symbol("amqp:not-allowed"))),
            a.Released(),
            a.Modified(delivery_failed=True),
            None,
            a.Accepted(),
        )[choice]
        if choice != 4:
            self.command(link.settle, d, outcome)
        if isinstance(link, a.Receiver) and link.link_credit < 2:
            self.command(link.add_credit, 4)

    def _on_update(self, e: amqp.events.DeliveryUpdated, n: int) -> None:
        if isinstance(e.link, amqp.Sender) and not e.delivery.settled:
            self.command(e.link.settle, e.delivery)


#: What :class:`_ServerApp` does on each event, by its type (``n``: the events so far).
_APP_HANDLERS: dict[type, Callable[[_ServerApp, Any, int], None]] = {
    amqp.events.ConnectionOpened: _ServerApp._on_opened,
    amqp.events.SessionBegun: _ServerApp._on_session_begun,
    amqp.events.LinkAttached: _ServerApp._on_link_attached,
    amqp.events.CreditChanged: _ServerApp._on_credit,
    amqp.events.DeliveryReceived: _ServerApp._on_delivery,
    amqp.events.DeliveryUpdated: _ServerApp._on_update,
}


class _OutputCheck:
    """Parses what the server sends, as its peer would: a protocol header, then frames that
    decode and fit the peer's max-frame-size, and nothing after a close."""

    def __init__(self) -> None:
        self.parser = FrameParser(max_frame_size=0xFFFFFFFF)
        self.header = False
        self.fed = 0
        self.peer_max = amqp.framing.amqp10.MIN_MAX_FRAME_SIZE
        self.closed = False

    def feed(self, data: bytes) -> list[amqp.framing.amqp10.Frame]:
        if type(data) is not bytes:
            raise InvariantViolation(
                "server", "output", f"data_to_send() returned {type(data).__name__}"
            )
        parser = self.parser
        parser.feed(data)
        self.fed += len(data)
        frames = []
        while True:
            start = self.fed - parser.buffered
            try:
                if not self.header:
                    header = parser.next_protocol_header()
                    if header is None:
                        break
                    if header.to_bytes() != amqp.framing.amqp10.AMQP_HEADER:
                        raise InvariantViolation(
                            "server", "output", f"the server sent header {header.to_bytes()!r}"
                        )
                    self.header = True
                    continue
                frame = parser.next_frame()
            except REMOTE_ERRORS as exc:
                raise InvariantViolation(
                    "server", "output", f"the server's own output does not parse: {exc!r}"
                ) from exc
            if frame is None:
                break
            size = self.fed - parser.buffered - start
            if self.closed:
                raise InvariantViolation(
                    "server", "after-close", f"the server sent {frame.body!r:.100} after its close"
                )
            if size > self.peer_max:
                raise InvariantViolation(
                    "server",
                    "frame-size",
                    f"a {size}-byte frame, over the peer's max-frame-size {self.peer_max}: "
                    f"{frame.body!r:.100}",
                )
            if isinstance(frame.body, performatives.Close):
                self.closed = True
            frames.append(frame)
        return frames


def _check_errors(
    conn: amqp.Connection,
    events: Sequence[amqp.Event],
    frames: Sequence[amqp.framing.amqp10.Frame],
    closed_before: bool,
) -> None:
    """Each ProtocolError was answered with a detach, end or close carrying its error (or
    the close had already gone); one of connection scope ended the connection."""
    for e in events:
        if not isinstance(e, amqp.Event):
            raise InvariantViolation("server", "events", f"receive_data returned {e!r}")
        if not isinstance(e, amqp.events.ProtocolError):
            continue
        if not str(e.error.condition).startswith("amqp:"):
            raise InvariantViolation("server", "condition", f"{e!r} has no AMQP condition")
        answered = any(
            isinstance(
                f.body,
                performatives.Detach | performatives.End | performatives.Close,
            )
            and f.body.error == e.error
            for f in frames
        )
        if not answered and not closed_before:
            raise InvariantViolation(
                "server", "unanswered", f"{e!r} was reported but no frame carries the error"
            )
        if e.scope == "connection" and conn.state is not amqp.ConnectionState.END:
            raise InvariantViolation(
                "server", "not-ended", f"{e!r} left the connection in {conn.state.value}"
            )


def server_chunks(stream: bytes, data: bytes) -> list[int]:
    """Chunk sizes for the server's input, derived from the data. Half the inputs are cut
    anywhere (several frames may arrive in one call); the other half never put two frames
    in one chunk, as a peer waiting for each answer would send them, so that a client's
    recorded conversation stays valid however its frames are cut."""
    sizes = chunk_sizes(data)
    if zlib.crc32(data) & 0x100:
        return sizes
    spans = [8]  # the header; then each frame by its size field, while it is sane
    at = 8
    while at < len(stream):
        size = int.from_bytes(stream[at : at + 4], "big")
        if len(stream) - at < 8 or not 8 <= size <= len(stream) - at:
            size = len(stream) - at
        spans.append(size)
        at += size
    out = []
    for span, top in zip(spans, itertools.cycle(sizes)):
        while span > 0:
            out.append(min(span, top))
            span -= top
    return out


def fuzz_server(data: bytes, *, opened: bool = False, chunks: Sequence[int] | None = None) -> str:
    """Target ``server``: the bytes, after an AMQP header (and, if ``opened``, a valid open),
    go to a server-role :class:`~amqp_sansio.Connection` in chunks, with the simple
    application of :class:`_ServerApp` answering its events and the clock moving on.

    ``receive_data``, ``handle_timer`` and the application's commands must return normally
    (or, for a command, raise LocalProtocolError having queued nothing); ``data_to_send``
    returns bytes that parse as a header and frames within the peer's max-frame-size, with
    nothing after a close; every ProtocolError is answered by a frame carrying its error.
    After an hour of silence the server has closed; the transport's end ends it.
    """
    conn = _server_connection()
    check = _OutputCheck()
    app = _ServerApp(conn, check.feed)
    stream = (_server_prefix() if opened else amqp.framing.amqp10.AMQP_HEADER) + data
    kinds: dict[str, None] = {}
    errors: dict[str, None] = {}
    now = 0.0
    fed = 0
    sizes = iter(server_chunks(stream, data) if chunks is None else chunks)
    while fed < len(stream):
        step = max(1, next(sizes, len(stream)))
        closed_before = check.closed
        check.feed(conn.data_to_send())
        events = conn.receive_data(stream[fed : fed + step], now)
        fed += step
        if type(events) is not list:
            raise InvariantViolation("server", "events", f"receive_data returned {events!r}")
        for e in events:
            if isinstance(e, amqp.events.ConnectionOpened):  # the frames we send may now be larger
                check.peer_max = max(check.peer_max, e.remote.max_frame_size)
        _check_errors(conn, events, check.feed(conn.data_to_send()), closed_before)
        for e in events:
            kinds[type(e).__name__] = None
            if isinstance(e, amqp.events.ProtocolError):
                text = re.sub(r"\d+|'[^']*'", "#", e.error.description or "")
                errors[f"{e.error.condition}:{text[:50]}"] = None
        app.respond(events)
        now += TICK
        deadline = conn.next_deadline()
        if deadline is not None and deadline <= now:
            check.feed(conn.data_to_send())
            events = conn.handle_timer(now)
            kinds.update(dict.fromkeys(type(e).__name__ for e in events))
            app.respond(events)
    # An hour of silence: the idle time-out closes the connection; then the transport ends.
    check.feed(conn.data_to_send())
    for e in conn.handle_timer(now + 3600) + conn.receive_data(b"", now + 3600):
        kinds[type(e).__name__] = None
    check.feed(conn.data_to_send())
    if conn.state is not amqp.ConnectionState.END:
        raise InvariantViolation(
            "server", "not-ended", f"the transport ended but the connection is {conn.state.value}"
        )
    verdict = "err" if errors else "ok"
    return f"{verdict}:{'/'.join(errors)[:80]}|{','.join(kinds)[:160]}"


def fuzz_server_opened(data: bytes) -> str:
    """Target ``server-opened``: as ``server``, after a header and a valid open."""
    return fuzz_server(data, opened=True)


# -- seeds: what a client engine says to this server --------------------------------------------


class _Conversation:
    """A client engine and the target's server, wired in memory: records every byte the
    client sends, for seeds that reach deep states."""

    def __init__(self) -> None:
        self.client = amqp.Connection(
            client=True, container_id="fuzz-client", max_frame_size=1024, idle_timeout=20.0
        )
        self.server = _server_connection()
        self.pending = bytearray()
        self.app = _ServerApp(self.server, self.pending.extend)
        self.now = 0.0
        self.sent = bytearray()
        self.deliveries: list[amqp.events.DeliveryReceived] = []

    def pump(self) -> None:
        for _ in range(1000):
            to_server = self.client.data_to_send()
            self.pending += self.server.data_to_send()
            to_client = bytes(self.pending)
            self.pending.clear()
            if not to_server and not to_client:
                return
            if to_server:
                self.sent += to_server
                self.app.respond(self.server.receive_data(to_server, self.now))
            if to_client:
                for e in self.client.receive_data(to_client, self.now):
                    if isinstance(e, amqp.events.DeliveryReceived) and e.complete:
                        self.deliveries.append(e)
        raise AssertionError("the conversation never went quiet")

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.client.handle_timer(self.now)
        self.app.respond(self.server.handle_timer(self.now))
        self.pump()


def _scenario_full(c: _Conversation) -> None:
    a = amqp
    c.client.open(now=c.now)
    c.pump()
    s = c.client.begin(incoming_window=8)
    c.pump()
    snd = s.attach_sender("to-server", target="queue")
    rcv = s.attach_receiver("from-server", source="queue")
    c.pump()
    rcv.flow(3)
    c.pump()
    snd.send(Message(body=b"hello").encode())
    snd.send(bytes(range(256)) * 5)  # split at the server's 512
    c.pump()  # the server grants more credit as it settles
    d = snd.send(b"first part, ", more=True)
    snd.send(b"last part", delivery=d)
    d = snd.send(b"to be aborted", more=True)
    snd.abort(d)
    c.pump()
    snd.send(Message(body="pre-settled").encode(), settled=True)
    c.pump()
    for got in c.deliveries:
        got.link.settle(got.delivery, a.Accepted())
    rcv.drain_credit()
    c.pump()
    for _ in range(3):
        c.advance(3.0)  # heartbeats each way
    snd.detach()
    rcv.detach(closed=False)
    c.pump()
    s.end()
    c.pump()
    c.client.close()
    c.pump()


def _scenario_pipelined(c: _Conversation) -> None:
    a = amqp
    c.client.open(now=c.now)
    s1 = c.client.begin()
    snd = s1.attach_sender(
        "settled",
        target="q",
        snd_settle_mode=a.SenderSettleMode.SETTLED,
        initial_delivery_count=2**32 - 1,
    )
    rcv = s1.attach_receiver(
        "second", source="q", rcv_settle_mode=a.ReceiverSettleMode.SECOND, max_message_size=4096
    )
    c.pump()
    s2 = c.client.begin(incoming_window=2)
    c.pump()
    snd2 = s2.attach_sender("other", target="r")
    c.pump()
    rcv.flow(2)
    snd.send(b"one")
    snd.send(b"two" * 100)
    snd2.send(b"three")
    snd.set_available(5)
    c.pump()
    for got in c.deliveries:
        got.link.update(got.delivery, messaging.Received(section_number=0, section_offset=0))
        got.link.settle(got.delivery, a.Modified(undeliverable_here=True))
    c.pump()
    s2.end(a.Error(condition=Symbol("amqp:internal-error"), description="done"))
    c.pump()
    c.client.close(a.Error(condition=Symbol("amqp:connection:forced"), description="bye"))
    c.pump()


def _scenario_short(c: _Conversation) -> None:
    c.client.open(now=c.now)
    s = c.client.begin()
    c.pump()
    s.end()
    c.client.close()
    c.pump()


def _scenario_link_refused(c: _Conversation) -> None:
    c.client.open(now=c.now)
    s = c.client.begin()
    links = [s.attach_sender(name, target=name) for name in ("a", "refuse-me", "b")]
    c.pump()
    for link in links:
        if link.state is amqp.LinkState.ATTACHED and link.link_credit:
            link.send(b"m")
    c.pump()
    c.client.close()
    c.pump()


_SCENARIOS = (_scenario_full, _scenario_pipelined, _scenario_short, _scenario_link_refused)


@functools.lru_cache(maxsize=1)
def _client_streams() -> tuple[bytes, ...]:
    """What a client engine sends in each scenario, header included."""
    streams = []
    for scenario in _SCENARIOS:
        conversation = _Conversation()
        scenario(conversation)
        streams.append(bytes(conversation.sent))
    return tuple(streams)


def _server_prefix() -> bytes:
    """The header and the client's open, as the scenarios send them."""
    stream = _client_streams()[0]
    size = int.from_bytes(stream[8:12], "big")
    return stream[: 8 + size]


def _server_seeds(opened: bool) -> list[bytes]:
    prefix = _server_prefix() if opened else amqp.framing.amqp10.AMQP_HEADER
    seeds = []
    for stream in _client_streams():
        assert stream.startswith(prefix), "every scenario opens the same way"
        rest = stream[len(prefix) :]
        seeds.append(rest)
        seeds.append(rest[: len(rest) // 2])  # cut mid-conversation
    if opened:
        seeds.append(b"")
    else:
        seeds.append(_server_prefix()[8:])  # an open, then silence
    return seeds


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``server`` and ``server-opened`` (deterministic; the conversations are
    recorded once)."""
    return {"server": _server_seeds(opened=False), "server-opened": _server_seeds(opened=True)}
