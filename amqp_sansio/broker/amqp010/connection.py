"""The broker's side of one AMQP 0-10 client connection: the 0-10 engine in its server role
(:mod:`amqp_sansio.engine.amqp010`) driven by the broker, with the byte interface 0-9-1's
connection shares (:mod:`.._engineconn`: so the server serves every protocol alike) and the
same :class:`~amqp_sansio.broker._interface.Peer` contract: the connection limits and the
handshake time-out (:mod:`.._admission`), logins through the broker's one registry of
mechanisms (its users, or anonymous access), the per-user cap at the open, the resource
alarm and eviction.

Its exchanges and queues are those of the broker's virtual hosts (``/`` for a client that
names none: 0-10's ``connection.open`` ``virtual-host`` is empty by default), reached
through :class:`~amqp_sansio.broker._interface.VirtualHostAccess`; its messages are mapped
to their 1.0 form on arrival (:mod:`.mapping`), so that every protocol reads every queue.
The commands are :mod:`.commands`'; the sessions' subscriptions and deliveries
:mod:`.sessions`'. A refused command is answered with ``execution.exception`` (the engine
then detaches the session, not kept); a detached session is kept for its time-out by the
engine, and its subscriptions with it (they deliver again once it is resumed on this
connection).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ... import __version__
from ...definitions import amqp010 as spec
from ...engine.amqp010 import (
    CloseCode,
    CommandReceived,
    CommandsCompleted,
    ConnectionClosed,
    ConnectionState,
    ErrorCode,
    OpenRequested,
    SessionAttached,
    SessionDetached,
    SessionExpired,
    SessionResumed,
    SessionState,
)
from ...engine.amqp010 import Connection as Engine010
from ...engine.amqp010 import Limits as Limits010
from ...engine.amqp010 import Role as Role010
from .._engineconn import EngineConnection
from .._interface import DEFAULT_VHOST, VirtualHostAccess
from .._refused import Refused
from .._store import StoredMessage
from .commands import COMMANDS, NOT_IMPLEMENTED, CommandRefused, error_code
from .sessions import Broker010, Session010

__all__ = ["Broker010", "BrokerConnection010", "new_connection"]


class BrokerConnection010(EngineConnection):
    """The broker's side of one 0-10 client connection (see the module's docstring), with
    :class:`~amqp_sansio.broker.BrokerConnection`'s byte interface
    (:class:`~amqp_sansio.broker._engineconn.EngineConnection`'s)."""

    broker: Broker010
    engine: Engine010
    protocol = "0-10"

    def __init__(self, broker: Broker010, engine: Engine010, *, address: str | None = None) -> None:
        super().__init__(broker, engine, address=address)
        self.vhost: VirtualHostAccess | None = None
        self.sessions: dict[bytes, Session010] = {}
        #: A message.flush came in this input: dispatch before its completion goes.
        self.flushing = False

    def __repr__(self) -> str:
        return f"<BrokerConnection010 sessions={len(self.sessions)}>"

    @property
    def vhost_or_default(self) -> VirtualHostAccess:
        return self.vhost or self.broker.vhosts[DEFAULT_VHOST]

    def alarm_changed(self, alarm: bool) -> None:
        """The resource alarm went off: reading again (0-10 has no ``blocked`` to say)."""
        if not alarm and self._stopped:
            self._stopped = False
            self.broker.has_output(self)

    # -- what differs from the other protocols' connections -----------------------------------

    def _busy(self) -> bool:
        """A subscription, or a transfer not yet accepted, keeps it from eviction."""
        return any(s.subscriptions or s.unsettled for s in self.sessions.values())

    def _close_engine(self, why: str) -> None:
        """320 ``connection-forced`` (0-10 spec, ``connection.close-code``)."""
        self.engine.close(CloseCode.CONNECTION_FORCED, why)

    def _transport_gone(self, now: float) -> None:
        """The engine hears the stream's end (its sessions with a time-out are kept, for a
        new connection to resume)."""
        if not self.engine.closed and not self.lost:
            self._handle(self.engine.receive_data(b"", now))

    # -- what the commands ask of the connection ------------------------------------------

    def publish(self, exchange: str, key: str, message: StoredMessage, headers: object) -> None:
        """A client's message, read (:func:`.mapping.arrived`), through ``exchange`` (404 if
        there is none: :class:`Refused`); during the resource alarm the connection stops
        being read. A queue at its limits that refuses its copy (``reject-publish``) refuses
        the transfer with 506 ``resource-limit-exceeded`` (as qpidd's queue policy
        ``reject``); the queues that took theirs keep them."""
        assert headers is None or isinstance(headers, Mapping)
        published = self.vhost_or_default.publish_stored(exchange, key, message, headers)
        if self.broker.alarm:
            self._stopped = True
        if published.refused:
            queue, why = published.refused[0]
            raise CommandRefused(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, f"queue {queue.address!r}: {why}"
            )

    # -- events -------------------------------------------------------------------------------

    def _handle(self, events: list[Any]) -> None:
        broker = self.broker
        for event in events:
            self._active_at = self._now
            handler = _EVENTS.get(type(event))
            if handler is not None:
                handler(self, event)
        for session in self.sessions.values():
            if session.to_accept and self._attached(session.name):
                # the client's transfers with accept-mode explicit (0-10 spec, message.accept)
                ids, session.to_accept = session.to_accept, []
                self.engine.send_command(
                    session.name,
                    spec.MessageAccept(transfers=tuple((i, i) for i in ids)),
                )
        broker.store.flush()  # what this input did is on disk before its completions go
        broker.has_output(self)
        if self.flushing or not broker.answers_first:
            self.flushing = False
            broker.dispatch()
        else:
            broker.tell_alarm()
        for session in self.sessions.values():
            for sub in session.subscriptions.values():
                if sub.flushing:  # (its queue had nothing for it)
                    sub.drained()

    def _on_open(self, event: OpenRequested) -> None:
        if self.engine.state is not ConnectionState.OPEN_PENDING:
            return  # (a close in the same input overtook it: it is not answered)
        name = event.virtual_host or DEFAULT_VHOST
        vhost = self.broker.vhosts.get(name)
        if vhost is None:
            self.refused = f"no virtual host {name!r}"
            self.record.ending_because(self.refused)
            self.engine.close(CloseCode.INVALID_PATH, f"no virtual host {name!r}")
            return
        self.identity = event.identity
        mechanism = self.engine.login_mechanism
        why = self.admit_user(event.identity, mechanism)
        if why is not None:
            self.record.ending_because(why)
            self.engine.close(CloseCode.CONNECTION_FORCED, why)
            return
        self.vhost = vhost
        self._handshake_until = None
        self.engine.accept_open()
        self.record.opened = True

    def _on_closed(self, event: ConnectionClosed) -> None:
        if event.by_peer and event.reply_code == CloseCode.NORMAL:
            self.record.ending_because("closed by the client")
        else:
            self.record.ending_because(f"closed: {event.reply_code} {event.reply_text}")
        self._lost()

    def _on_attached(self, event: SessionAttached) -> None:
        self.sessions[event.session] = Session010(self, event.session)

    def _on_resumed(self, event: SessionResumed) -> None:
        name = event.session
        # on this connection, or kept past its own (this one takes it over), or (the
        # engine kept what the broker let go) new
        session = (
            self.sessions.get(name)
            or self.broker.kept_010.pop((self.engine.identity, name), None)
            or Session010(self, name)
        )
        session.conn = self
        session.attached = True
        self.sessions[name] = session
        for sub in session.subscriptions.values():
            self.broker.wake(sub.queue)

    def _on_detached(self, event: SessionDetached) -> None:
        session = self.sessions.get(event.session)
        if session is None:
            return
        if event.expires is None:  # not kept: it is gone
            del self.sessions[event.session]
            session.close()
        else:
            session.attached = False

    def _on_expired(self, event: SessionExpired) -> None:
        name = event.session
        session = self.sessions.pop(name, None)
        if session is not None:
            session.close()
        kept = self.broker.kept_010
        store = self.broker.sessions_010
        for key in [k for k in kept if k[1] == name and k not in store]:
            kept.pop(key).close()

    def _on_completed(self, event: CommandsCompleted) -> None:
        session = self.sessions.get(event.session)
        if session is not None:
            session.completed(event.command_ids)

    def _on_command(self, event: CommandReceived) -> None:
        name = event.session
        session = self.sessions.get(name)
        if session is None or not session.attached or not self._attached(name, event.command_id):
            return  # (the session went, or an exception of ours ends it: dropped)
        handler = COMMANDS.get(type(event.command), NOT_IMPLEMENTED)
        try:
            result = handler(self, session, event)
        except Refused as refused:
            session.attached = False  # (the engine detaches it: nothing more is sent)
            self.engine.send_exception(
                name,
                error_code(refused),
                command_id=event.command_id,
                description=refused.reply_text,
            )
            return
        if result is not None:
            self.engine.send_result(name, event.command_id, result)
        self.engine.complete(name, event.command_id)

    def _attached(self, name: bytes, command_id: int | None = None) -> bool:
        """Whether the engine's session ``name`` is attached (not detaching, not gone), on
        a connection not closing (after its ``connection.close`` only ``close-ok`` goes),
        and awaits the completion of ``command_id``, if given (it is not another session
        of that name, attached since in the same input)."""
        if self.engine.state is not ConnectionState.OPEN:
            return False
        try:
            found = self.engine.session(name)
        except KeyError:  # (detached by the client in the same input)
            return False
        if found.state is not SessionState.ATTACHED:
            return False
        return command_id is None or found.incoming_id(command_id) is not None

    # -- the end ------------------------------------------------------------------------------

    def _release_all(self) -> None:
        """Its sessions go, but a detached one the engines' store keeps, which another
        connection may resume."""
        store = self.broker.sessions_010
        for name, session in self.sessions.items():
            key = (self.engine.identity, name)
            if not session.attached and key in store:  # kept: another may resume it
                session.park()
                self.broker.kept_010[key] = session
            else:
                session.close()
        self.sessions.clear()


_EVENTS: dict[type, Any] = {
    OpenRequested: BrokerConnection010._on_open,
    ConnectionClosed: BrokerConnection010._on_closed,
    SessionAttached: BrokerConnection010._on_attached,
    SessionResumed: BrokerConnection010._on_resumed,
    SessionDetached: BrokerConnection010._on_detached,
    SessionExpired: BrokerConnection010._on_expired,
    CommandsCompleted: BrokerConnection010._on_completed,
    CommandReceived: BrokerConnection010._on_command,
}


def new_connection(broker: Broker010, *, address: str | None = None) -> BrokerConnection010:
    """The connection of a client that sent the 0-10 protocol header (0-10 spec 4.2), from
    ``address``: the 0-10 engine's server role (:mod:`amqp_sansio.engine.amqp010`, not
    started: the broker starts it once it counts the connection), its logins through the
    broker's ``sasl``, else its users' mechanisms, else anonymous access; the client's
    heartbeat within half the idle time-out; the engines' store of detached sessions."""
    config = broker.config
    idle = config.idle_timeout
    if config.sasl is not None:
        authenticator = config.sasl or broker.open_sasl
    elif config.users is not None:
        authenticator = config.users.authenticator(allow_cleartext=config.allow_insecure_auth)
    else:
        authenticator = broker.open_sasl
    engine = Engine010(
        Role010.SERVER,
        authenticator=authenticator,
        properties={"version": __version__, "cluster_name": config.container_id},
        # the client's heartbeat within half the idle time-out (0-10 spec, tune)
        heartbeat_range=None if not idle else (1, max(1, min(math.ceil(idle / 2), 0xFFFF))),
        limits=Limits010(handshake_timeout=config.handshake_timeout or 0),
        sessions=broker.sessions_010,
    )
    return BrokerConnection010(broker, engine, address=address)
