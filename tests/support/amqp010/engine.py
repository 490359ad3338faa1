"""Two AMQP 0-10 engines wired in memory through real bytes (tests/engine/amqp010): a
client and a server, pumped whole or in chunks of any size, on a clock the test moves; and
a frame factory for hand-made (hostile) input."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine
from amqp_sansio.framing.amqp010 import (
    PROTOCOL_HEADER,
    AssemblyParser,
    SegmentType,
    Track,
    encode_assembly,
)
from amqp_sansio.security.mechanisms import PasswordStore, ServerAuthenticator


class Passwords(PasswordStore):
    """A password store with one user, ``guest``/``guest``."""

    def check_password(self, username: str, password: str) -> bool:
        return (username, password) == ("guest", "guest")


def authenticator(**options: Any) -> ServerAuthenticator:
    """A server authenticator offering PLAIN (guest/guest, in clear) and ANONYMOUS."""
    options.setdefault("allow_anonymous", True)
    return ServerAuthenticator(Passwords(), allow_cleartext_secrets=True, **options)


def chunks(data: bytes, size: int | random.Random | None) -> Iterator[bytes]:
    """``data`` whole (``size`` None), in pieces of ``size``, or of random sizes."""
    if size is None:
        yield data
        return
    at = 0
    while at < len(data):
        step = size.randint(1, 64) if isinstance(size, random.Random) else size
        yield data[at : at + step]
        at += step


@attrs.define
class Pair:
    """A client and a server engine, the events each reported, and the clock."""

    client: engine.Connection
    server: engine.Connection
    now: float = 0.0
    chunk: int | random.Random | None = None
    accept: bool = True
    client_events: list[engine.Event] = attrs.field(factory=list)
    server_events: list[engine.Event] = attrs.field(factory=list)
    to_server: list[bytes] = attrs.field(factory=list)
    to_client: list[bytes] = attrs.field(factory=list)

    def pump(self) -> None:
        """Move bytes both ways until neither has anything to say; the server accepts the
        open when ``accept``."""
        for _ in range(10_000):
            data_c = self.client.data_to_send()
            data_s = self.server.data_to_send()
            if not data_c and not data_s:
                return
            got: list[engine.Event] = []
            if data_c:
                self.to_server.append(data_c)
                for piece in chunks(data_c, self.chunk):
                    got += self.server.receive_data(piece, self.now)
            if data_s:
                self.to_client.append(data_s)
                for piece in chunks(data_s, self.chunk):
                    self.client_events += self.client.receive_data(piece, self.now)
            self.server_events += got
            if self.accept and any(isinstance(e, engine.OpenRequested) for e in got):
                self.server.accept_open()
                self.server_events += self.server.handle_timer(self.now)
        raise AssertionError("the engines never went quiet")

    def take(self) -> tuple[list[engine.Event], list[engine.Event]]:
        """The events reported since the last take: (client's, server's)."""
        out = (self.client_events, self.server_events)
        self.client_events, self.server_events = [], []
        return out

    def advance(self, seconds: float) -> None:
        """Move the clock, fire both timers, and pump."""
        self.now += seconds
        self.client_events += self.client.handle_timer(self.now)
        self.server_events += self.server.handle_timer(self.now)
        self.pump()

    def attach(self, name: bytes = b"s", timeout: int = 0) -> int:
        """Attach session ``name`` from the client; gives its channel."""
        channel = self.client.attach(name, timeout=timeout)
        self.pump()
        return channel


def make_pair(
    *,
    chunk: int | random.Random | None = None,
    client: dict[str, Any] | None = None,
    server: dict[str, Any] | None = None,
    open_: bool = True,
) -> Pair:
    """A client and a server (PLAIN guest/guest), opened unless ``open_`` is false."""
    server_options = {"authenticator": authenticator(), **(server or {})}
    pair = Pair(
        engine.Connection(engine.Role.CLIENT, **(client or {})),
        engine.Connection(engine.Role.SERVER, **server_options),
        chunk=chunk,
    )
    pair.client.start(0.0)
    pair.server.start(0.0)
    if open_:
        pair.pump()
    return pair


def control(channel: int, value: spec.Control, max_frame_size: int = 4096) -> bytes:
    """The frames of one control."""
    return b"".join(
        encode_assembly(
            channel,
            Track.CONTROL,
            [(SegmentType.CONTROL, spec.encode_control(value))],
            max_frame_size,
        )
    )


def command(
    channel: int,
    value: spec.Command | bytes,
    *,
    sync: bool = False,
    header: Sequence[spec.Struct] | bytes = (),
    body: bytes = b"",
    max_frame_size: int = 4096,
) -> bytes:
    """The frames of one command (``value`` may be a hand-made command segment; ``header``
    hand-made octets)."""
    payload = value if isinstance(value, bytes) else spec.encode_command(value, sync=sync)
    segments = [(SegmentType.COMMAND, payload)]
    if header:
        raw = header if isinstance(header, bytes) else spec.encode_header(header)
        segments.append((SegmentType.HEADER, raw))
    if body:
        segments.append((SegmentType.BODY, body))
    return b"".join(encode_assembly(channel, Track.COMMAND, segments, max_frame_size))


def sent(conn: engine.Connection) -> list[spec.Control | spec.Command]:
    """What ``conn`` has to send, drained and decoded (after the protocol header, if any)."""
    data = conn.data_to_send()
    if data.startswith(b"AMQP"):
        data = data[8:]
    out: list[spec.Control | spec.Command] = []
    for assembly in AssemblyParser(max_frame_size=65535).feed(data):
        payload = assembly.segments[0].payload
        if assembly.track == Track.CONTROL:
            out.append(spec.decode_control(payload))
        else:
            out.append(spec.decode_command(payload)[0])
    return out


def close_sent(conn: engine.Connection) -> spec.ConnectionClose:
    """The ``connection.close`` ``conn`` has to send (drained)."""
    [close] = [c for c in sent(conn) if isinstance(c, spec.ConnectionClose)]
    return close


__all__ = [
    "close_sent",
    "sent",
    "PROTOCOL_HEADER",
    "Pair",
    "authenticator",
    "chunks",
    "command",
    "control",
    "make_pair",
]
