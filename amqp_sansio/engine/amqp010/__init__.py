"""The AMQP 0-10 engine: the connection and session state machines of both roles,
I/O-free (docs/amqp010.rst, "The engine").

* :mod:`~amqp_sansio.engine.amqp010.connection`: :class:`Connection`, the caller's side
  (bytes, time, events, sessions, commands), made of
  :mod:`~amqp_sansio.engine.amqp010.core` (its state, output and ending),
  :mod:`~amqp_sansio.engine.amqp010.handshake` (the connection controls of both roles)
  and :mod:`~amqp_sansio.engine.amqp010.sessions` (the session controls and commands);
* :mod:`~amqp_sansio.engine.amqp010.session`: :class:`Session` (a session's execution
  state both ways) and :class:`SessionStore` (detached sessions kept to be resumed);
* :mod:`~amqp_sansio.engine.amqp010.sequence`: command ids and their sets;
* :mod:`~amqp_sansio.engine.amqp010.states`: :class:`Role`, :class:`Limits`,
  :class:`ConnectionState`, :class:`SessionState` and the transition table;
* :mod:`~amqp_sansio.engine.amqp010.events`: what the engine reports.
"""

from __future__ import annotations

from . import events
from .connection import Connection
from .core import CloseCode, DetachCode
from .events import (
    CommandReceived,
    CommandsCompleted,
    ConnectionClosed,
    ConnectionOpened,
    Event,
    ExecutionExceptionReceived,
    OpenRequested,
    Redirected,
    ResultReceived,
    SessionAttached,
    SessionDetached,
    SessionExpired,
    SessionResumed,
)
from .sequence import SequenceSet
from .session import Session, SessionStore
from .sessions import ErrorCode
from .states import ConnectionState, Limits, Role, SessionState

__all__ = [
    "events",
    "CloseCode",
    "CommandReceived",
    "CommandsCompleted",
    "Connection",
    "ConnectionClosed",
    "ConnectionOpened",
    "ConnectionState",
    "DetachCode",
    "ErrorCode",
    "Event",
    "ExecutionExceptionReceived",
    "Limits",
    "OpenRequested",
    "Redirected",
    "ResultReceived",
    "Role",
    "SequenceSet",
    "Session",
    "SessionAttached",
    "SessionDetached",
    "SessionExpired",
    "SessionResumed",
    "SessionState",
    "SessionStore",
]
