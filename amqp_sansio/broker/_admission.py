"""Who gets in, and how fast: the connection limits a :class:`BrokerConnection` applies
before and at the client's open (see :class:`~amqp_sansio.broker.BrokerConfig` and the
"Limits" table of ``docs/broker.rst``). The broker counts connections by source address and
by user, and failed logins by source address (``Broker._room_for_connection``,
``_room_for_user``, ``_login_failed``); these are the connection's side: the handshake
time-out, the per-user cap at the open, a failed login's held outcome, and the check of a
0-9-1 client's new secret. No clock is read: the connection's latest ``now`` is used."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ..codec.types import Symbol
from ..definitions.performatives import Error
from ..engine.states import CONNECTION_OPEN_FIRST
from ._users import ANONYMOUS, Users

if TYPE_CHECKING:
    from ._broker import Broker
    from ._connection import BrokerConnection

__all__ = [
    "Admission",
    "admit_user",
    "handshake_timed_out",
    "hold_failed_login",
    "secret_accepted",
]

_LIMIT = Symbol("amqp:resource-limit-exceeded")


class Admission:
    """What the broker's connections of both protocols (``BrokerConnection``,
    ``BrokerConnection091``) share of their timers: the handshake time-out (until the
    client's open) and a failed login's outcome held back (:func:`hold_failed_login`),
    before the engine's own deadlines. A connection calls :meth:`_admission_deadline` in
    ``next_deadline`` and :meth:`_admission_due` first in ``handle_timer``, and says what a
    handshake time-out does to it (:meth:`_handshake_timed_out`)."""

    broker: Broker
    cut: bool
    #: The client's source address (the host), if the driver gave it.
    address: str | None
    #: The latest ``now`` the connection was given.
    _now: float
    #: When (``now`` clock) the handshake time-out cuts the connection, until the client's
    #: open arrives (``BrokerConfig.handshake_timeout``); None: no time-out.
    _handshake_until: float | None
    #: A failed login's outcome held back until then (``now`` clock; see
    #: ``BrokerConfig.login_delay``); None: nothing held.
    _held_until: float | None

    def _admission_deadline(self, engine: Any) -> float | None:
        """``next_deadline``: the held outcome's release, else the earlier of the
        handshake time-out and ``engine``'s deadline (its ``next_deadline()``)."""
        if self._held_until is not None:
            return self._held_until
        deadline: float | None = engine.next_deadline()
        until = self._handshake_until
        if until is not None and not self.cut and (deadline is None or until < deadline):
            return until
        return deadline

    def _admission_due(self, now: float) -> bool:
        """``handle_timer``'s first part: while an outcome is held, nothing but its release
        (once due); else the handshake time-out, if due. True if either took the turn (the
        engine's timers wait)."""
        held = self._held_until
        if held is not None:
            if now >= held:
                self._held_until = None
                self.broker._pending[cast(Any, self)] = None  # (one of the two connections)
            return True
        until = self._handshake_until
        if until is not None and now >= until and not self.cut:
            self._handshake_timed_out()
            return True
        return False

    def _handshake_timed_out(self) -> None:
        """No open within the handshake time-out (the protocol's refusal)."""
        raise NotImplementedError  # pragma: no cover - each connection has its own


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


def hold_failed_login(conn: Admission) -> None:
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
