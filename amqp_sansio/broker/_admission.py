"""Who gets in, and how fast: the connection limits the broker's connections of both
protocols apply before and at the client's open (see
:class:`~amqp_sansio.broker.BrokerConfig` and the "Limits" table of ``docs/broker.rst``).
The broker counts connections by source address and by user, and failed logins by source
address (``BrokerCore._room_for_connection``, ``room_for_user``, ``login_failed``);
:class:`Admission`, the base of every protocol's connection (0-9-1's and 0-10's through
:class:`~amqp_sansio.broker._engineconn.EngineConnection`), is the connection's side: the
handshake time-out and a failed login's held outcome (their part of the connections'
timers: :meth:`~Admission.admission_deadline`, :meth:`~Admission.admission_due`), the
per-user cap at the open, and the check of a 0-9-1 client's new secret
(:func:`secret_accepted`). No clock is read: the connection's latest ``now`` is used."""

from __future__ import annotations

from typing import Protocol

from ._interface import ConnectionBroker
from ._users import ANONYMOUS, Users


class Timed(Protocol):
    """What has a next deadline (an engine, or a layer around it)."""

    def next_deadline(self) -> float | None: ...


__all__ = ["Admission", "secret_accepted"]


class Admission:
    """The admission state of a broker connection, of either protocol: its handshake
    time-out, a failed login's held outcome, and the user it is counted for. The
    connection sets ``broker``, ``address`` and ``cut``, and says what its handshake
    time-out does (:meth:`_handshake_timed_out`)."""

    broker: ConnectionBroker
    address: str | None
    cut: bool
    refused: str | None
    #: The latest ``now`` an input or timer gave.
    _now: float
    #: When the handshake time-out cuts a connection not yet open (``now`` clock).
    _handshake_until: float | None
    #: A failed login's outcome is held back until then (``login_delay``).
    _held_until: float | None
    #: The user counted for ``max_connections_per_user`` (at most once).
    _counted_user: str | None
    #: Counted among the broker's connections (until it is gone).
    _counted: bool

    def __init__(self) -> None:
        self._now = 0.0
        self._handshake_until = None
        self._held_until = None
        self._counted_user = None
        self._counted = False

    def started(self, now: float) -> None:
        """The broker took the transport at ``now``."""
        self._now = now

    def admitted(self, handshake_until: float | None) -> None:
        """The broker counted this connection; its handshake time-out is due at
        ``handshake_until`` (None: none)."""
        self._counted = True
        self._handshake_until = handshake_until

    def release_user(self) -> str | None:
        """Forget the user this connection was counted for (once): that user, or None."""
        user, self._counted_user = self._counted_user, None
        return user

    @property
    def handshake_deadline(self) -> float | None:
        """When its handshake time-out is due, while it is not open yet."""
        return self._handshake_until

    def stop_handshake_timer(self) -> None:
        """No handshake time-out any more (it opened, or its transport goes anyway)."""
        self._handshake_until = None

    def admission_deadline(self, engine: Timed) -> float | None:
        """Its ``next_deadline``: its failed login's held outcome's release, else the
        earlier of its handshake time-out and ``engine``'s deadline (its
        ``next_deadline()``)."""
        if self._held_until is not None:
            return self._held_until
        deadline: float | None = engine.next_deadline()
        until = self._handshake_until
        if until is not None and not self.cut and (deadline is None or until < deadline):
            return until
        return deadline

    def admission_due(self, now: float) -> bool:
        """The first part of its ``handle_timer``: while a failed login's outcome is held,
        nothing but its release (once due); else the handshake time-out, if due
        (:meth:`_handshake_timed_out`). True if either took the turn (the engine's timers
        wait)."""
        held = self._held_until
        if held is not None:
            if now >= held:
                self._held_until = None
                self.broker.has_output(self)
            return True
        until = self._handshake_until
        if until is not None and now >= until and not self.cut:
            self._handshake_timed_out()
            return True
        return False

    def _handshake_timed_out(self) -> None:
        raise NotImplementedError

    def _gone(self) -> None:
        """The connection no longer counts against the connection limits."""
        if self._counted:
            self._counted = False
            self.broker.connection_gone(self)

    def admit_user(self, identity: str | None, mechanism: str | None) -> str | None:
        """At the client's open: why the authenticated user has no room for one more
        connection (``max_connections_per_user``), or None (then it is counted). Anonymous
        clients (SASL ANONYMOUS, or no login) are not counted per user. A refused
        connection keeps its handshake time-out, for a client that never answers the
        close."""
        if identity is None or mechanism in (None, "ANONYMOUS") or identity == ANONYMOUS:
            return None
        why = self.broker.room_for_user(identity)
        if why is not None:
            self.refused = why
            return why
        self._counted_user = identity
        return None

    def hold_failed_login(self) -> None:
        """A failed login: its outcome is held back for the delay the broker gives the
        client's source address (``login_delay``...), and the handshake time-out stops."""
        self._handshake_until = None
        now = self._now
        delay = self.broker.login_failed(self.address, now)
        if delay > 0:
            self._held_until = now + delay


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
