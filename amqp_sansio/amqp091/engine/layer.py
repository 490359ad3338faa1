"""An AMQP 0-9-1 engine's byte interface as the layers above it drive it: the TLS layer
(:class:`amqp_sansio.security.tls.ByteLayer`, which wraps it when a connection starts with
TLS) and the client core. The engine queues its own events, which its owner takes after
each call, so the byte interface reports none."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...events import Event

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["EngineBytes"]


class EngineBytes:
    """``receive_data``, ``data_to_send``, ``next_deadline`` and ``handle_timer`` of
    ``engine``, each returning no events. ``ticks``: whether ``handle_timer`` ticks the
    engine (the client core's; the broker's connection ticks its engine itself, so its
    layer passes ``ticks=False``)."""

    __slots__ = ("engine", "ticks")

    def __init__(self, engine: Connection, *, ticks: bool = True) -> None:
        self.engine = engine
        self.ticks = ticks

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        self.engine.receive_data(data, now)
        return []

    def data_to_send(self) -> bytes:
        return self.engine.data_to_send()

    def next_deadline(self) -> float | None:
        return self.engine.next_deadline()

    def handle_timer(self, now: float) -> list[Event]:
        if self.ticks:
            self.engine.tick(now)
        return []
