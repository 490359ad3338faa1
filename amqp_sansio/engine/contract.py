"""The engine contract (docs/architecture.rst, "The engine contract"): what every protocol
engine of the library offers its caller, written once.

It holds what every protocol's engine shares and nothing protocol-specific: the base class
of every event (:class:`Event`, which each protocol's events subclass), the contract each
engine offers (:class:`ProtocolEngine`) and the end of the connection an engine plays
(:class:`Role`, for the engines that take one: 0-9-1's and 0-10's). Each protocol's
engine imports it; it imports none of them.
"""

from __future__ import annotations

import enum
from typing import Protocol

__all__ = ["Event", "ProtocolEngine", "Role"]


class Role(enum.Enum):
    """Which end of the connection an engine is."""

    CLIENT = "client"
    SERVER = "server"


class Event:
    """Base class of every event, of every protocol's engine."""

    __slots__ = ()


class ProtocolEngine(Protocol):
    """The engine contract: what every protocol engine of the library offers its caller
    (the AMQP 1.0 :class:`~amqp_sansio.Connection`, the AMQP 0-9-1
    :class:`~amqp_sansio.engine.amqp091.Connection`, and the next protocol's), h2's and
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
