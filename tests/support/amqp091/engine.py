"""Two AMQP 0-9-1 engines wired in memory through real bytes (tests/amqp091/test_engine_*):
a client and a server, pumped whole or in chunks of any size, on a clock the test moves."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from amqp_sansio import amqp091
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev


def chunks(data: bytes, size: int | Callable[[], int] | None) -> Iterator[bytes]:
    """``data`` whole (``size`` None), in pieces of ``size``, or of sizes drawn from it."""
    if size is None:
        yield data
        return
    at = 0
    while at < len(data):
        step = size() if callable(size) else size
        yield data[at : at + max(step, 1)]
        at += max(step, 1)


@attrs.define
class Pair:
    """A client and a server engine, the events each reported, and the clock."""

    client: engine.Connection
    server: engine.Connection
    now: float = 0.0
    chunk: int | Callable[[], int] | None = None
    client_events: list[ev.Event] = attrs.field(factory=list)
    server_events: list[ev.Event] = attrs.field(factory=list)
    wire_to_server: list[bytes] = attrs.field(factory=list)
    wire_to_client: list[bytes] = attrs.field(factory=list)

    def pump(self, *, accept: bool = True) -> None:
        """Move bytes both ways until neither has anything to say; the server accepts
        logins and opens when ``accept``."""
        for _ in range(10_000):
            moved = False
            self.client_events += take(self.client)  # (what a test fed them directly)
            server_got = take(self.server)
            data = self.client.data_to_send()
            if data:
                moved = True
                self.wire_to_server.append(data)
                for piece in chunks(data, self.chunk):
                    server_got += self.server.receive_data(piece, self.now)
            data = self.server.data_to_send()
            if data:
                moved = True
                self.wire_to_client.append(data)
                for piece in chunks(data, self.chunk):
                    self.client_events += self.client.receive_data(piece, self.now)
            while server_got:
                answered = False
                for event in server_got:
                    self.server_events.append(event)
                    if accept and isinstance(event, ev.LoginRequested):
                        self.server.accept_login(event.username or "")
                        moved = answered = True
                    elif accept and isinstance(event, ev.OpenRequested):
                        self.server.accept_open()
                        moved = answered = True
                # (an accept's event, ConnectionOpened, comes back from the next call)
                server_got = self.server.handle_timer(self.now) if answered else []
            if not moved:
                return
        raise AssertionError("the engines never went quiet")

    def take(self) -> tuple[list[ev.Event], list[ev.Event]]:
        """The events reported since the last take: (client's, server's)."""
        out = (self.client_events, self.server_events)
        self.client_events, self.server_events = [], []
        return out


def make_pair(
    *,
    chunk: int | Callable[[], int] | None = None,
    client: dict[str, Any] | None = None,
    server: dict[str, Any] | None = None,
) -> Pair:
    """A client and a server, started at time 0, not pumped."""
    pair = Pair(
        engine.Connection(engine.Role.CLIENT, **(client or {})),
        engine.Connection(engine.Role.SERVER, **(server or {})),
        chunk=chunk,
    )
    pair.client.start(0.0)
    pair.server.start(0.0)
    return pair


def open_pair(**kwargs: Any) -> Pair:
    """A pair with the connection open, events taken."""
    pair = make_pair(**kwargs)
    pair.pump()
    client_events, server_events = pair.take()
    assert isinstance(client_events[-1], ev.ConnectionOpened), client_events
    assert isinstance(server_events[-1], ev.ConnectionOpened), server_events
    return pair


def open_channel(pair: Pair) -> int:
    """Open a channel from the client; gives its number (events taken)."""
    number = pair.client.open_channel()
    pair.pump()
    assert pair.take() == ([ev.ChannelOpened(channel=number)], [ev.ChannelOpened(channel=number)])
    return number


def frames(data: bytes, *, server: bool = False, frame_max: int = 0) -> list[Any]:
    """The frames in ``data`` (what an engine wrote), parsed by the codec layer."""
    parser = amqp091.framing.FrameParser(frame_max, protocol_header=server)
    parser.feed(data)
    return list(parser)


def methods(data: bytes, **kwargs: Any) -> list[Any]:
    """The methods in ``data``."""
    return [f.method for f in frames(data, **kwargs) if isinstance(f, amqp091.MethodFrame)]


# -- events as a test takes them -----------------------------------------------------------

_GIVEN: weakref.WeakKeyDictionary[engine.Connection, list[ev.Event]] = weakref.WeakKeyDictionary()


def give(conn: engine.Connection, events: list[ev.Event]) -> None:
    """Keep what ``conn.receive_data`` or ``conn.handle_timer`` gave, for :func:`take`."""
    _GIVEN.setdefault(conn, []).extend(events)


def take(conn: engine.Connection) -> list[ev.Event]:
    """The events ``conn`` gave since the last take, in order, without those a close of
    ours made moot since (``conn.discarded``), as the application handles them."""
    given = _GIVEN.pop(conn, [])
    return [event for event in given if not conn.discarded(event)]


def take_one(conn: engine.Connection) -> ev.Event | None:
    """The first event :func:`take` would give (the others stay), or None."""
    given = _GIVEN.get(conn, [])
    while given:
        event = given.pop(0)
        if not conn.discarded(event):
            return event
    return None
