"""The WebSocket layer's target (the AMQP WebSocket binding,
:mod:`amqp_sansio.security.websocket`), ``websocket-server``, and its seeds.

``websocket-server``: a server-role :class:`~amqp_sansio.security.websocket.WebSocketLayer`
(small limits: a 2 KiB upgrade, 4 KiB messages) around a server-role 1.0
:class:`amqp_sansio.Connection` (which opens when the peer's open comes) gets the bytes in
chunks, with the clock moving between them; then the transport ends.

The invariant: nothing raises (the layer reports a peer's fault, it never raises one); at
most one ``WebSocketFailed``; once failed or closed the layer reports nothing more and
sends nothing more; what it sends after its ``101`` parses as RFC 6455 server frames
(unmasked binary messages, pongs, one close) for a wsproto client; after the transport's
end the layer is closed or failed.

The seeds are a client's side of the binding: its upgrade (a fixed key) and masked binary
frames (a zero mask, so they replay) carrying a 1.0 client engine's header, open, begin,
attach and transfer, some split across messages, plus a ping and a close.
"""

from __future__ import annotations

import wsproto
import wsproto.events as ws

import amqp_sansio as amqp
from amqp_sansio.security.websocket import (
    WebSocketFailed,
    WebSocketLayer,
    WebSocketOptions,
    WebSocketState,
)

from .common import TICK, InvariantViolation, chunk_sizes

__all__ = ["fuzz_websocket_server", "seeds"]

_OPTIONS = WebSocketOptions(max_handshake_size=2048, max_message_size=4096, handshake_timeout=5)
_ENDED = (WebSocketState.CLOSED, WebSocketState.FAILED)
OPEN = wsproto.connection.ConnectionState.OPEN

UPGRADE = (
    b"GET / HTTP/1.1\r\nHost: fuzz.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: ZnV6ei1rZXktMTIzNDU2Nw==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: amqp\r\n\r\n"
)


def frame(payload: bytes, *, opcode: int = 2, fin: bool = True) -> bytes:
    """A client's frame (RFC 6455 5.2) with a zero masking key (so the payload is as is)."""
    head = bytes([(0x80 if fin else 0) | opcode])
    size = len(payload)
    if size < 126:
        head += bytes([0x80 | size])
    elif size < 1 << 16:
        head += bytes([0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + size.to_bytes(8, "big")
    return head + b"\x00\x00\x00\x00" + payload


class _OutputCheck:
    """Reads what the layer sends as its peer (a wsproto client) would."""

    def __init__(self) -> None:
        self.head = b""
        self.frames: wsproto.connection.Connection | None = None

    def feed(self, data: bytes, layer: WebSocketLayer) -> None:
        if self.frames is None:
            if layer.state is WebSocketState.HANDSHAKE or not data:
                if data:
                    raise InvariantViolation("websocket-server", "early", f"sent {data[:40]!r}")
                return
            if not data.startswith(b"HTTP/1.1 "):
                raise InvariantViolation("websocket-server", "answer", f"sent {data[:40]!r}")
            end = data.find(b"\r\n\r\n")
            self.head, data = data[: end + 4], data[end + 4 :]
            if not self.head.startswith(b"HTTP/1.1 101 "):
                if data:
                    raise InvariantViolation("websocket-server", "after-refusal", repr(data[:40]))
                return
            self.frames = wsproto.connection.Connection(wsproto.ConnectionType.CLIENT)
        if data:
            self.frames.receive_data(data)
            for event in self.frames.events():
                # (wsproto reports frames it cannot parse as a close, its state still open)
                if isinstance(event, ws.CloseConnection) and self.frames.state is OPEN:
                    raise InvariantViolation(
                        "websocket-server", "frames", f"bad frames sent: {event.reason}"
                    )
                if isinstance(event, ws.TextMessage):
                    raise InvariantViolation("websocket-server", "frames", "a text message")


def fuzz_websocket_server(data: bytes) -> str:
    """Target ``websocket-server`` (see the module's docstring)."""
    engine = amqp.Connection(client=False, container_id="fuzz-ws")
    layer = WebSocketLayer(engine, client=False, options=_OPTIONS)
    check = _OutputCheck()
    kinds: dict[str, None] = {}
    failures = 0
    now = 0.0
    i = 0
    sizes = chunk_sizes(data)
    for size in sizes:
        if i >= len(data):
            break
        chunk, i = data[i : i + size], i + size
        was_ended = layer.state in _ENDED
        events = layer.receive_data(chunk, now)
        if was_ended and events:
            raise InvariantViolation("websocket-server", "after-end", f"reported {events!r}")
        for event in events:
            kinds[type(event).__name__] = None
            failures += isinstance(event, WebSocketFailed)
            opening = engine.state is amqp.ConnectionState.OPEN_RCVD
            if isinstance(event, amqp.events.ConnectionOpened) and opening:
                engine.open()
        out = layer.data_to_send()
        if was_ended and out:
            raise InvariantViolation("websocket-server", "after-end", f"sent {out[:40]!r}")
        check.feed(out, layer)
        now += TICK
    events = layer.handle_timer(now + 10) + layer.receive_data(b"", now + 10)
    kinds.update(dict.fromkeys(type(event).__name__ for event in events))
    failures += sum(isinstance(event, WebSocketFailed) for event in events)
    check.feed(layer.data_to_send(), layer)
    if failures > 1:
        raise InvariantViolation("websocket-server", "failures", f"{failures} failures reported")
    if layer.state not in _ENDED:
        raise InvariantViolation("websocket-server", "not-ended", layer.state.value)
    verdict = "err" if "WebSocketFailed" in kinds else "ok"
    return f"{verdict}|{','.join(kinds)[:160]}"


def _client_conversation() -> bytes:
    """A 1.0 client engine's bytes: header, open, begin, attach, a transfer."""
    client = amqp.Connection(client=True, container_id="fuzz-client")
    client.open()
    session = client.begin()
    sender = session.attach_sender("s", target="q")
    out = client.data_to_send()
    del sender
    return out


def seeds() -> dict[str, list[bytes]]:
    """Deterministic inputs for ``websocket-server``."""
    amqp_bytes = _client_conversation()
    whole = UPGRADE + frame(amqp_bytes)
    split = (
        UPGRADE
        + frame(amqp_bytes[:3], fin=False)
        + frame(amqp_bytes[3:40], opcode=0, fin=False)
        + frame(b"ping", opcode=9)
        + frame(amqp_bytes[40:], opcode=0)
    )
    closing = UPGRADE + frame(amqp_bytes[:8]) + frame(b"\x03\xe8bye", opcode=8)
    return {"websocket-server": [whole, split, closing, UPGRADE + frame(amqp_bytes[:8])]}
