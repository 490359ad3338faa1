"""Frame tracing for debugging: each frame an engine sends or receives, decoded, one line
each (as Proton's ``PN_TRACE_FRM=1`` does).

Turn it on with the environment variable ``AMQP_SANSIO_TRACE=1`` (lines go to stderr, unless
the ``amqp_sansio.frames`` logger has handlers of its own), or by setting the
``amqp_sansio.frames`` logger to DEBUG. The adapters then put a :class:`FrameTrace` between
the engine and what carries its bytes (under TLS, inside it: the trace shows plaintext).

Credentials never show: SASL bodies that carry them (sasl-init's initial response, sasl
responses, challenges and outcome data) leave those fields out of their reprs.

AMQP 0-9-1 connections are traced the same way, by the same switch and logger, with
:mod:`amqp_sansio.client.amqp091.trace`'s reader of 0-9-1 frames in each direction.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Protocol

import amqp_sansio as amqp
import amqp_sansio.framing.amqp10
from amqp_sansio.security.stack import ByteLayer, Trace

__all__ = ["Direction", "FrameTrace", "LOGGER", "enabled", "log", "tracer", "wrap"]

LOGGER = logging.getLogger("amqp_sansio.frames")
#: The environment variable that turns the trace on (any value but empty or ``0``).
ENV = "AMQP_SANSIO_TRACE"


def enabled() -> bool:
    """Whether frames are to be traced: :data:`ENV` is set, or the logger is at DEBUG."""
    if os.environ.get(ENV, "") not in ("", "0"):
        if not LOGGER.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(message)s"))
            LOGGER.addHandler(handler)
        LOGGER.setLevel(logging.DEBUG)
        return True
    return LOGGER.isEnabledFor(logging.DEBUG)


def log(name: str, arrow: str, text: str) -> None:
    """One line of the trace: the connection's ``name``, the direction and ``text``."""
    LOGGER.debug("%s %s %s", name, arrow, text)


class Direction(Protocol):
    """What reads one direction of a stream for the trace (one per protocol)."""

    def feed(self, data: bytes) -> None: ...


class _Direction:
    """One direction of the stream: a protocol header, frames, and a header again where the
    next bytes are one (after SASL: a frame never starts with ``AMQP``, its size would be
    over a gigabyte)."""

    def __init__(self, name: str, arrow: str) -> None:
        self.name = name
        self.arrow = arrow
        self.parser = amqp.framing.amqp10.FrameParser(max_frame_size=0xFFFFFFFF)
        self.tail = bytearray()  # what the parser holds unparsed, to look ahead
        self.broken = False

    def feed(self, data: bytes) -> None:
        if not data or self.broken:
            return
        parser = self.parser
        parser.feed(bytes(data))
        self.tail += data
        try:
            while len(self.tail) >= 4:
                if self.tail[:4] == b"AMQP":
                    header = parser.next_protocol_header()
                    if header is None:
                        return
                    self._log(f"AMQP header {header.protocol_id.name}")
                else:
                    frame = parser.next_frame()
                    if frame is None:
                        return
                    self._frame(frame)
                del self.tail[: len(self.tail) - parser.buffered]
        except amqp.AMQPError as exc:  # not ours to judge: the engine reports it
            self.broken = True
            self._log(f"(trace stops: {exc})")

    def _frame(self, frame: amqp.framing.amqp10.Frame) -> None:
        if frame.body is None:
            self._log(f"[{frame.channel}] (empty frame)")
            return
        extra = f" (payload {len(frame.payload)} bytes)" if frame.payload else ""
        self._log(f"[{frame.channel}] {frame.body!r}{extra}")

    def _log(self, text: str) -> None:
        log(self.name, self.arrow, text)


class FrameTrace:
    """Wraps an engine (or anything with its byte interface) and logs the frames that pass
    both ways; it has the byte interface only (the engine's commands go to the engine).
    ``directions`` reads what comes in and what goes out (default: AMQP 1.0 frames)."""

    def __init__(
        self, inner: ByteLayer, name: str, directions: tuple[Direction, Direction] | None = None
    ) -> None:
        self.inner = inner
        if directions is None:
            directions = (_Direction(name, "<-"), _Direction(name, "->"))
        self._in, self._out = directions

    def receive_data(self, data: bytes, now: float) -> list[amqp.Event]:
        self._in.feed(data)
        return self.inner.receive_data(data, now)

    def data_to_send(self) -> bytes:
        data = self.inner.data_to_send()
        self._out.feed(data)
        return data

    def next_deadline(self) -> float | None:
        return self.inner.next_deadline()

    def handle_timer(self, now: float) -> list[amqp.Event]:
        return self.inner.handle_timer(now)

    def set_transport_security(self, **kwargs: object) -> None:
        """(For a TLS layer above: passed on, to an inner layer that takes it.)"""
        secure = getattr(self.inner, "set_transport_security", None)
        if secure is not None:
            secure(**kwargs)


def tracer(name: str) -> Trace | None:
    """What puts a :class:`FrameTrace` of AMQP 1.0 frames named ``name`` around a byte layer,
    for :func:`~amqp_sansio.security.stack.stack`'s ``trace``, if tracing is
    :func:`enabled`; else None (no cost)."""
    if not enabled():
        return None
    return lambda inner: FrameTrace(inner, name)


def wrap(engine: ByteLayer, name: str) -> ByteLayer:
    """``engine`` wrapped in a :class:`FrameTrace` if tracing is :func:`enabled`, else
    ``engine`` itself (no cost)."""
    trace = tracer(name)
    return engine if trace is None else trace(engine)
