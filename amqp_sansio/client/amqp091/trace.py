"""Frame tracing for AMQP 0-9-1 connections: each frame sent or received, decoded, one line
each, under the switch and logger of AMQP 1.0's trace (:mod:`amqp_sansio.client.trace`:
``AMQP_SANSIO_TRACE=1``, or the ``amqp_sansio.frames`` logger at DEBUG). Under TLS the
trace sits inside it and shows plaintext.

Credentials never show: the fields that carry them (``connection.start-ok``'s
``response``, which holds PLAIN's and AMQPLAIN's password; ``connection.secure``'s
``challenge`` and ``secure-ok``'s ``response``; ``connection.update-secret``'s
``new_secret``) are written ``<redacted>``. A content body shows its size only.
"""

from __future__ import annotations

from amqp_sansio.client import trace
from amqp_sansio.client.engines import Stream
from amqp_sansio.errors import AMQPError
from amqp_sansio.security.stack import Trace

from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method
from ...framing.amqp091 import (
    ContentBodyFrame,
    ContentHeaderFrame,
    FrameParser,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
)

__all__ = ["SECRETS", "describe", "tracer"]

#: The methods whose fields carry credentials, and those fields (never traced).
SECRETS: dict[type[Method], tuple[str, ...]] = {
    spec.ConnectionStartOk: ("response",),
    spec.ConnectionSecure: ("challenge",),
    spec.ConnectionSecureOk: ("response",),
    spec.ConnectionUpdateSecret: ("new_secret",),
}


def describe(method: Method) -> str:
    """``method``'s repr with the fields in :data:`SECRETS` written ``<redacted>``."""
    secret = SECRETS.get(type(method))
    if secret is None:
        return repr(method)
    shown = ", ".join(
        f"{name}={'<redacted>' if name in secret else repr(getattr(method, name))}"
        for name, _ in method.FIELDS
    )
    return f"{type(method).__name__}({shown})"


class _Direction:
    """One direction of a 0-9-1 stream: a protocol header first from a client (or from a
    server refusing our version), then frames."""

    def __init__(self, name: str, arrow: str, *, header: bool) -> None:
        self.name = name
        self.arrow = arrow
        self.parser = FrameParser(0, protocol_header=header)
        self.broken = False

    def feed(self, data: bytes) -> None:
        if not data or self.broken:
            return
        self.parser.feed(bytes(data))
        try:
            for frame in self.parser:
                trace.log(self.name, self.arrow, _line(frame))
        except AMQPError as exc:  # not ours to judge: the engine reports it
            self.broken = True
            trace.log(self.name, self.arrow, f"(trace stops: {exc})")


def _line(frame: object) -> str:
    if isinstance(frame, MethodFrame):
        return f"[{frame.channel}] {describe(frame.method)}"
    if isinstance(frame, ContentHeaderFrame):
        return f"[{frame.channel}] content header: {frame.body_size} bytes, {frame.properties!r}"
    if isinstance(frame, ContentBodyFrame):
        return f"[{frame.channel}] content body: {len(frame.payload)} bytes"
    if isinstance(frame, HeartbeatFrame):
        return "[0] heartbeat"
    assert isinstance(frame, ProtocolHeader)
    return f"AMQP header 0-{frame.major}-{frame.minor}-{frame.revision}"


def tracer(name: str) -> Trace | None:
    """What puts a :class:`~amqp_sansio.client.trace.FrameTrace` reading 0-9-1, named
    ``name``, around a client's engine (for :func:`~amqp_sansio.security.stack.stack`'s
    ``trace``) if tracing is :func:`~amqp_sansio.client.trace.enabled`; else None (no
    cost)."""
    if not trace.enabled():
        return None

    def wrap(inner: Stream) -> Stream:
        directions = (_Direction(name, "<-", header=False), _Direction(name, "->", header=True))
        return trace.FrameTrace(inner, name, directions)

    return wrap
