"""The engine contract (docs/architecture.rst, "The engine contract"): what every protocol
engine of the library offers its caller, written once.

It is its own small module in the events layer, beside :mod:`amqp_sansio.events` (whose
:class:`~amqp_sansio.events.Event` it names), because that is the lowest layer both engine
layers (the 1.0 ``engine`` and ``amqp091``) may import, and it holds nothing
protocol-specific; ``events`` itself lists only events.
"""

from __future__ import annotations

from typing import Protocol

from .events import Event

__all__ = ["ProtocolEngine"]


class ProtocolEngine(Protocol):
    """The engine contract: what every protocol engine of the library offers its caller
    (the AMQP 1.0 :class:`~amqp_sansio.Connection`, the AMQP 0-9-1
    :class:`~amqp_sansio.amqp091.engine.Connection`, and the next protocol's), h2's and
    aioquic's convention. Bytes and time go in, events come back from the two calls that
    take them, bytes to write are drained; the application's own calls raise or queue
    frames, and an event one of them causes comes back from the next ``receive_data`` or
    ``handle_timer`` (docs/architecture.rst, "The engine contract")."""

    def receive_data(self, data: bytes, now: float, /) -> list[Event]:
        """Take bytes from the peer (``b""``: the stream ended) at ``now``; give what
        happened. A peer's fault is answered on the wire and reported, never raised."""
        ...

    def handle_timer(self, now: float, /) -> list[Event]:
        """Do what is due at ``now`` (heartbeats, time-outs); give what happened."""
        ...

    def data_to_send(self) -> bytes:
        """What to write to the peer, drained."""
        ...

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must be called next; None for never."""
        ...
