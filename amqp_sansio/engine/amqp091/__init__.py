"""The AMQP 0-9-1 engine: the connection and channel state machines of both roles,
I/O-free (docs/amqp091.rst, "The engine").

* :mod:`~amqp_sansio.engine.amqp091.connection`: :class:`Connection`, the caller's side
  (bytes, time, events, channels, sending), made of
  :mod:`~amqp_sansio.engine.amqp091.core` (its state, output and ending),
  :mod:`~amqp_sansio.engine.amqp091.handshake` (channel 0: the negotiation of both roles,
  the close handshake) and :mod:`~amqp_sansio.engine.amqp091.dispatch` (the channels'
  methods and contents);
* :mod:`~amqp_sansio.engine.amqp091.states`: :class:`~amqp_sansio.engine.amqp091.Role`,
  :class:`~amqp_sansio.amqp091.Limits`, :class:`ConnectionState`;
* :mod:`~amqp_sansio.engine.amqp091.channel`: :class:`Channel`, :class:`ChannelState`;
* :mod:`~amqp_sansio.engine.amqp091.events`: what the engine reports;
* :mod:`~amqp_sansio.engine.amqp091.negotiation`: the properties each side announces,
  the logins as 0-9-1 carries them, the tune rule (the mechanisms are
  :mod:`amqp_sansio.security.mechanisms`', AMQPLAIN's too).
"""

from __future__ import annotations

from . import events, negotiation
from .channel import Channel, ChannelState
from .connection import Connection, ConnectionState, Limits, Role
from .events import (
    Blocked,
    ChannelClosed,
    ChannelOpened,
    Confirmed,
    ConnectionClosed,
    ConnectionOpened,
    ContentReceived,
    Event,
    FlowChanged,
    LoginRequested,
    MethodReceived,
    OpenRequested,
    Unblocked,
)

__all__ = [
    "events",
    "negotiation",
    "Channel",
    "ChannelState",
    "Connection",
    "ConnectionState",
    "Limits",
    "Role",
    "Blocked",
    "ChannelClosed",
    "ChannelOpened",
    "Confirmed",
    "ConnectionClosed",
    "ConnectionOpened",
    "ContentReceived",
    "Event",
    "FlowChanged",
    "LoginRequested",
    "MethodReceived",
    "OpenRequested",
    "Unblocked",
]
