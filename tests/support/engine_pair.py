"""Two engines wired in memory, for the engine tests.

``Pair.pump()`` moves bytes both ways until neither side has anything to send, cutting the
stream into chunks of random sizes (or fixed ones), and collects each side's events. The
clock is simulated: ``pair.now`` only moves when a test moves it. ``layers`` stacks byte
layers around each engine (called with the engine and its role): the bytes then cross
between the outermost layers, and the engines' commands still go to the engines.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import amqp_sansio as a
import amqp_sansio.framing.amqp10
from amqp_sansio.framing import amqp10 as framing


class Pair:
    def __init__(
        self,
        *,
        seed: int | None = 0,
        chunk: int | None = None,
        client: dict[str, Any] | None = None,
        server: dict[str, Any] | None = None,
        layers: Callable[[a.Connection, str], Any] | None = None,
    ) -> None:
        self.client = a.Connection(client=True, container_id="client", **(client or {}))
        self.server = a.Connection(client=False, container_id="server", **(server or {}))
        #: What the bytes go in and out of: the engines, or the layers around them.
        self.client_end: Any = self.client
        self.server_end: Any = self.server
        if layers is not None:
            self.client_end = layers(self.client, "client")
            self.server_end = layers(self.server, "server")
        self.rnd = random.Random(seed)
        self.chunk = chunk
        self.now = 0.0
        self.client_events: list[a.Event] = []
        self.server_events: list[a.Event] = []
        self.wire: list[tuple[str, bytes]] = []  # what crossed, for tests that inspect it

    def _chunks(self, data: bytes) -> Iterator[bytes]:
        i = 0
        while i < len(data):
            n = self.chunk or self.rnd.randint(1, max(1, min(len(data), 4096)))
            yield data[i : i + n]
            i += n

    def pump(self, limit: int = 10_000) -> tuple[list[a.Event], list[a.Event]]:
        """Move bytes until quiet; return (client events, server events) of this pump."""
        got_c: list[a.Event] = []
        got_s: list[a.Event] = []
        for _ in range(limit):
            out_c = self.client_end.data_to_send()
            out_s = self.server_end.data_to_send()
            if not out_c and not out_s:
                break
            if out_c:
                self.wire.append(("c>s", out_c))
                for piece in self._chunks(out_c):
                    got_s += self.server_end.receive_data(piece, self.now)
            if out_s:
                self.wire.append(("s>c", out_s))
                for piece in self._chunks(out_s):
                    got_c += self.client_end.receive_data(piece, self.now)
        else:
            raise AssertionError("the engines never went quiet")
        self.client_events += got_c
        self.server_events += got_s
        return got_c, got_s

    def advance(self, seconds: float) -> tuple[list[a.Event], list[a.Event]]:
        """Move the clock, fire both timers, and pump."""
        self.now += seconds
        self.client_events += self.client_end.handle_timer(self.now)
        self.server_events += self.server_end.handle_timer(self.now)
        return self.pump()

    # -- common set-ups ----------------------------------------------------------------------

    def open(self) -> None:
        self.client.open(now=self.now)
        self.pump()
        self.server.open()
        self.pump()

    def session(self) -> tuple[a.Session, a.Session]:
        cs = self.client.begin()
        _, evs = self.pump()
        (begun,) = [e for e in evs if isinstance(e, a.events.SessionBegun)]
        begun.session.begin()
        self.pump()
        return cs, begun.session

    def link(
        self, cs: a.Session, *, client_sends: bool = True, name: str = "link", **kwargs: Any
    ) -> tuple[a.Link, a.Link]:
        if client_sends:
            ours: a.Link = cs.attach_sender(name, target="q", **kwargs)
        else:
            ours = cs.attach_receiver(name, source="q", **kwargs)
        _, evs = self.pump()
        (attached,) = [e for e in evs if isinstance(e, a.events.LinkAttached)]
        attached.link.attach()
        self.pump()
        return ours, attached.link


def ready(**options: Any) -> tuple[Pair, a.Session, a.Session]:
    """A :class:`Pair` (``options`` are its own) with both connections open and one session
    begun: the pair, the client's session and the server's."""
    p = Pair(**options)
    p.open()
    cs, ss = p.session()
    return p, cs, ss


def inject(
    conn: a.Connection, body: object, channel: int = 0, payload: bytes = b""
) -> list[a.Event]:
    """Hand ``conn`` one frame made by hand (``body`` on ``channel``, then ``payload``), as
    if its peer had sent it, at time 0: the events it gives."""
    return conn.receive_data(
        a.framing.amqp10.encode_frame(body, channel=channel, payload=payload), 0
    )


def of(events: list[a.Event], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


#: The message :func:`large_on_the_wire` sends: 256 KiB.
LARGE = bytes(range(256)) * 1024


def large_on_the_wire(sender: a.Sender, client: a.Connection) -> tuple[bytes, list[int]]:
    """Send :data:`LARGE` on ``sender`` (five 64 KiB frames) and take what ``client``
    queues: the bytes, and the offsets at which each frame ends (after a leading 0)."""
    sender.send(LARGE)
    wire = client.data_to_send()
    frames = a.framing.amqp10.FrameParser(max_frame_size=65536)
    frames.feed(wire)
    ends = [0]
    while frames.next_frame() is not None:
        ends.append(len(wire) - frames.buffered)
    return wire, ends


def frames_in(data: bytes) -> list[Any]:
    """The frame bodies in ``data``, in order (protocol headers skipped where they come)."""
    bodies: list[Any] = []
    i = 0
    while i < len(data):
        if data[i : i + 4] == b"AMQP":
            i += 8
            continue
        size = int.from_bytes(data[i : i + 4], "big")
        parser = framing.FrameParser(max_frame_size=1 << 20)
        parser.feed(data[i : i + size])
        frame = parser.next_frame()
        assert frame is not None
        bodies.append(frame.body)
        i += size
    return bodies
