"""What the engine reports to the application: one frozen class per happening.

The events are named for what the application sees, not for the frame that caused it.
Events that concern a session, link or delivery carry the engine's handle object for it
(:class:`~amqp_sansio.Session`, :class:`~amqp_sansio.Link`, :class:`~amqp_sansio.Delivery`),
through which the application answers.

(This module is the face of the 1.0 engine's events: :mod:`amqp_sansio.engine.amqp10.events`
defines most of them, :mod:`~amqp_sansio.engine.amqp10.link` and
:mod:`~amqp_sansio.engine.amqp10.session` the ones a link or a session reports itself.)
"""

from .engine.amqp10.events import (
    Authenticated,
    AuthenticationFailed,
    ConnectionClosed,
    ConnectionEnded,
    ConnectionOpened,
    CreditChanged,
    DeliveryAborted,
    DeliveryReceived,
    DrainCompleted,
    Event,
    IdleTimedOut,
    PeerWithoutSASL,
    ProtocolError,
    UnsupportedProtocol,
)
from .engine.amqp10.link import DeliveryUpdated, LinkAttached, LinkDetached
from .engine.amqp10.session import SessionBegun, SessionEnded

__all__ = [
    "Authenticated",
    "AuthenticationFailed",
    "ConnectionClosed",
    "ConnectionEnded",
    "ConnectionOpened",
    "CreditChanged",
    "DeliveryAborted",
    "DeliveryReceived",
    "DeliveryUpdated",
    "DrainCompleted",
    "Event",
    "IdleTimedOut",
    "LinkAttached",
    "LinkDetached",
    "PeerWithoutSASL",
    "ProtocolError",
    "SessionBegun",
    "SessionEnded",
    "UnsupportedProtocol",
]
