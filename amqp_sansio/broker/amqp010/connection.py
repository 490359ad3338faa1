"""The broker's side of one AMQP 0-10 client connection: the 0-10 engine in its server role
(:mod:`amqp_sansio.engine.amqp010`) driven by the broker, with the byte interface of the
other protocols' broker connections (so the server serves them alike) and the same
:class:`~amqp_sansio.broker._interface.Peer` contract: the connection limits and the
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

from collections.abc import Mapping
from typing import Any

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
from ...security.layers import ByteLayer
from ...security.tls import TLSFailed
from .._admission import Admission
from .._interface import DEFAULT_VHOST, VirtualHostAccess
from .._nodes import Queue
from .._record import ConnectionRecord
from .._refused import Refused
from .._store import StoredMessage
from .commands import COMMANDS, NOT_IMPLEMENTED, CommandRefused, error_code
from .sessions import Broker010, Session010

__all__ = ["Broker010", "BrokerConnection010"]


class BrokerConnection010(Admission):
    """The broker's side of one 0-10 client connection (see the module's docstring), with
    :class:`~amqp_sansio.broker.BrokerConnection`'s byte interface: ``receive_data``,
    ``data_to_send``, ``next_deadline``, ``handle_timer``, ``connection_lost``, ``close``,
    ``ended``, ``refused``, ``record``."""

    broker: Broker010
    protocol = "0-10"

    def __init__(self, broker: Broker010, engine: Engine010, *, address: str | None = None) -> None:
        self.broker = broker
        self.engine = engine
        self.address = address
        self.identity: str | None = None
        self.vhost: VirtualHostAccess | None = None
        self.sessions: dict[bytes, Session010] = {}
        self.record = ConnectionRecord()
        self.refused: str | None = None
        self.cut = False
        self.lost = False
        self.ending = False
        #: A message.flush came in this input: dispatch before its completion goes.
        self.flushing = False
        super().__init__()
        self._active_at = 0.0
        #: A transfer came during the resource alarm: read no further until it clears.
        self._stopped = False
        self._stream: Any = engine

    def __repr__(self) -> str:
        return f"<BrokerConnection010 sessions={len(self.sessions)}>"

    def under_tls(self, tls: ByteLayer, record: str | None) -> None:
        """amqps: ``tls`` (and its handshake's ``record``) carries this one's bytes."""
        self._stream = tls
        self.record.tls = record

    @property
    def is_open(self) -> bool:
        return self.record.opened and not self.engine.closed and not self.ending

    @property
    def vhost_or_default(self) -> VirtualHostAccess:
        return self.vhost or self.broker.vhosts[DEFAULT_VHOST]

    @property
    def reading(self) -> bool:
        """Whether the driver should read from the client: False from a transfer during the
        broker's resource alarm until it clears (``BrokerConfig.memory_high_watermark``)."""
        return not self._stopped

    def alarm_changed(self, alarm: bool) -> None:
        """The resource alarm went off: reading again (0-10 has no ``blocked`` to say)."""
        if not alarm and self._stopped:
            self._stopped = False
            self.broker.has_output(self)

    # -- the byte interface -------------------------------------------------------------------

    def receive_data(
        self, data: bytes | bytearray | memoryview, now: float, *, wall: float | None = None
    ) -> None:
        self.broker.advance(now, wall)
        self._now = now
        events = self._stream.receive_data(bytes(data), now)
        if any(isinstance(e, TLSFailed) for e in events):
            self.record.ending_because("TLS failed")
            self.cut = True
        self._handle(events)

    def data_to_send(self) -> bytes:
        return bytes(self._stream.data_to_send())

    def next_deadline(self) -> float | None:
        return self.admission_deadline(self.engine)

    def handle_timer(self, now: float, *, wall: float | None = None) -> None:
        self.broker.advance(now, wall)
        self._now = now
        if not self.admission_due(now):
            self._handle(self.engine.handle_timer(now))

    def _handshake_timed_out(self) -> None:
        """No open within the handshake time-out: the transport is closed (``cut``)."""
        self._handshake_until = None
        timeout = self.broker.config.handshake_timeout
        self.refused = f"no open within the handshake time-out ({timeout} s)"
        self.record.ending_because(self.refused)
        self.cut = True
        self.broker.has_output(self)

    @property
    def ended(self) -> bool:
        return self.lost or self.cut or self.engine.closed

    def idle_since(self) -> float | None:
        """As :meth:`BrokerConnection.idle_since`: an anonymous open connection (a broker
        without users) with no subscription and nothing unaccepted may be evicted."""
        busy = any(s.subscriptions or s.unsettled for s in self.sessions.values())
        free = not busy and self.is_open and not self.cut and self.broker.config.users is None
        return self._active_at if free else None

    def evict(self, why: str) -> None:
        """As :meth:`BrokerConnection.evict`, with 320 ``connection-forced``."""
        self.record.ending_because(why)
        self.close(why=why)
        self.cut = True
        self._gone()

    def close(self, error: object = None, *, why: str = "broker stopping") -> None:
        """Close from the broker's side (it is stopping, or ``why``): 320
        ``connection-forced`` (0-10 spec, ``connection.close-code``)."""
        self._stopped = False
        if not self.engine.closed:
            self.record.ending_because("closed by the broker")
            self.engine.close(CloseCode.CONNECTION_FORCED, why)
        self.broker.has_output(self)

    def connection_lost(self, now: float, *, wall: float | None = None) -> None:
        """The transport is gone: the engine hears the stream's end (its sessions with a
        time-out are kept, for a new connection to resume), then the connection ends."""
        self.broker.advance(now, wall)
        self._now = now
        if not self.engine.closed and not self.lost:
            self._handle(self.engine.receive_data(b"", now))
        self._lost()
        self.broker.store.flush()
        self.broker.dispatch()

    # -- what the commands ask of the connection ------------------------------------------

    def publish(self, exchange: str, key: str, data: bytes, headers: object) -> None:
        """A client's message, in its 1.0 form, through ``exchange`` (404 if there is none:
        :class:`Refused`); during the resource alarm the connection stops being read. A
        queue at its limits that refuses its copy (``reject-publish``) refuses the transfer
        with 506 ``resource-limit-exceeded`` (as qpidd's queue policy ``reject``); the
        queues that took theirs keep them."""
        assert headers is None or isinstance(headers, Mapping)
        published = self.vhost_or_default.publish_message(exchange, key, data, headers)
        if self.broker.alarm:
            self._stopped = True
        if published.refused:
            queue, why = published.refused[0]
            raise CommandRefused(
                ErrorCode.RESOURCE_LIMIT_EXCEEDED, f"queue {queue.address!r}: {why}"
            )

    def taken(self, queue: Queue, message: StoredMessage) -> None:
        """A message was taken for good (accepted, or sent with accept-mode none)."""
        broker = self.broker
        if queue.settled(message):
            broker.delete_node(queue)
        elif not queue.links:
            broker.release(queue)

    def give_back(self, queue: Queue, message: StoredMessage, *, redelivered: bool) -> None:
        """A message released (``message.release``, a session gone): to the head of its
        queue; ``redelivered`` counts the attempt in its delivery-count (core spec 3.2.1)."""
        broker = self.broker
        if redelivered:
            message.delivery_count += 1
        if message.expires is not None and message.expires <= broker.wall:
            queue.acquired -= 1
            message.dropped = True
            broker.store.remove(queue, message)
            broker.let_go(message)
            queue.expired(message)
            return
        broker.store.update(queue, message)
        queue.requeue(message)
        broker.wake(queue)

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

    def _lost(self) -> None:
        if self.lost:
            return
        self.lost = True
        self.ending = True
        store = self.broker.sessions_010
        for name, session in self.sessions.items():
            key = (self.engine.identity, name)
            if not session.attached and key in store:  # kept: another may resume it
                session.park()
                self.broker.kept_010[key] = session
            else:
                session.close()
        self.sessions.clear()
        for vhost in self.broker.vhosts.values():
            vhost.owner_gone(self)
        self._gone()


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
