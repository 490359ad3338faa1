"""Who gets in, and how fast: the connection limits the broker's connections of both
protocols (``BrokerConnection``, ``BrokerConnection091``) apply before and at the client's
open (see :class:`~amqp_sansio.broker.BrokerConfig` and the
"Limits" table of ``docs/broker.rst``). The broker counts connections by source address and
by user, and failed logins by source address (``Broker._room_for_connection``,
``_room_for_user``, ``_login_failed``); these are the connection's side: the handshake
time-out and a failed login's held outcome (their part of the connections' timers:
:func:`admission_deadline`, :func:`admission_due`), the per-user cap at the open, and the
check of a 0-9-1 client's new secret. No clock is read: the connection's latest ``now`` is used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeAlias

from ..codec.types import Symbol
from ..definitions.performatives import Error
from ..engine.states import CONNECTION_OPEN_FIRST
from ._users import ANONYMOUS, Users

if TYPE_CHECKING:
    from .amqp091.connection import BrokerConnection091
    from .amqp10.connection import BrokerConnection

    #: A broker connection of either protocol.
    AnyConnection: TypeAlias = BrokerConnection | BrokerConnection091

__all__ = [
    "admission_deadline",
    "admission_due",
    "admit_user",
    "handshake_timed_out",
    "hold_failed_login",
    "secret_accepted",
]

_LIMIT = Symbol("amqp:resource-limit-exceeded")


def admission_deadline(conn: AnyConnection, engine: Any) -> float | None:
    """A connection's ``next_deadline``, of either protocol: its failed login's held
    outcome's release, else the earlier of its handshake time-out and ``engine``'s deadline
    (its ``next_deadline()``)."""
    if conn._held_until is not None:
        return conn._held_until
    deadline: float | None = engine.next_deadline()
    until = conn._handshake_until
    if until is not None and not conn.cut and (deadline is None or until < deadline):
        return until
    return deadline


def admission_due(conn: AnyConnection, now: float) -> bool:
    """The first part of a connection's ``handle_timer``, of either protocol: while a failed
    login's outcome is held, nothing but its release (once due); else the handshake
    time-out, if due (the connection's ``_handshake_timed_out``). True if either took the
    turn (the engine's timers wait)."""
    held = conn._held_until
    if held is not None:
        if now >= held:
            conn._held_until = None
            conn.broker._pending[conn] = None
        return True
    until = conn._handshake_until
    if until is not None and now >= until and not conn.cut:
        conn._handshake_timed_out()
        return True
    return False


def handshake_timed_out(conn: BrokerConnection) -> None:
    """No open within the handshake time-out: once the AMQP headers are exchanged the
    connection is refused with an open and a close (``amqp:resource-limit-exceeded``, core
    spec 2.4.1, 2.4.7, 2.8.15); before that (no header, TLS or SASL unfinished) nothing can
    be said, and the transport is closed (``cut``)."""
    conn._handshake_until = None
    timeout = conn.broker.config.handshake_timeout
    conn.refused = f"no open within the handshake time-out ({timeout} s)"
    engine = conn.engine
    if engine.state in CONNECTION_OPEN_FIRST:  # (its close sends its open first)
        engine.close(Error(condition=_LIMIT, description=conn.refused))
    conn.cut = True
    conn.broker._pending[conn] = None


def admit_user(conn: BrokerConnection) -> str | None:
    """At the client's open: why the authenticated user has no room for one more
    connection (``max_connections_per_user``), or None (then it is counted). Anonymous
    clients (SASL ANONYMOUS, or the bare AMQP header) are not counted per user. A refused
    connection keeps its handshake time-out, for a client that never answers the close."""
    identity = conn.identity
    if (
        identity is None
        or conn.engine.sasl_mechanism in (None, "ANONYMOUS")
        or identity == ANONYMOUS
    ):
        return None
    why = conn.broker._room_for_user(identity)
    if why is not None:
        conn.refused = why
        return why
    conn._counted_user = identity
    return None


def hold_failed_login(conn: AnyConnection) -> None:
    """A failed SASL exchange: its outcome is held back for the delay the broker gives the
    client's source address (``login_delay``...), and the handshake time-out stops."""
    conn._handshake_until = None
    now = conn._now
    delay = conn.broker._login_failed(conn.address, now)
    if delay > 0:
        conn._held_until = now + delay


def secret_accepted(users: Users | None, identity: str | None, secret: bytes) -> bool:
    """Whether a 0-9-1 client's ``connection.update-secret`` (RabbitMQ's extension) is
    taken: checked as its PLAIN or AMQPLAIN login was, ``secret`` as the logged-in user's
    password in ``users`` as they are now (an open broker, without users, takes any).
    (RabbitMQ asks only its auth backends whose credentials expire, such as OAuth 2; its
    internal users' backend takes any secret.)"""
    if users is None:
        return True
    try:
        password = secret.decode()
    except UnicodeDecodeError:
        return False
    return identity is not None and users.check_password(identity, password)
