"""The byte interface a broker connection of the 0-x line (AMQP 0-9-1, AMQP 0-10) offers its
driver, written once over its engine: :class:`EngineConnection`, an
:class:`~amqp_sansio.broker._admission.Admission` that feeds the client's bytes to the
engine (or to the TLS layer over it, :meth:`~EngineConnection.under_tls`), gives its
output, its deadline and its timers, says when it has ended, may be evicted or closed by
the broker, and forgets what the client had when the transport goes (its virtual hosts'
exclusive queues, its count among the connection limits). Its messages go back to their
queues or leave them for good as both protocols have it (:meth:`~EngineConnection.taken`,
:meth:`~EngineConnection.give_back`).

What differs between the protocols is each subclass's, through a small written interface:
:meth:`~EngineConnection._handle` (what the engine's events do),
:meth:`~EngineConnection._busy` (what keeps it from eviction),
:meth:`~EngineConnection._close_engine` (the engine's close with the protocol's
``connection-forced`` code), :meth:`~EngineConnection._transport_gone` (what the engine
makes of the stream's end) and :meth:`~EngineConnection._release_all` (its channels or
sessions going). The AMQP 1.0 connection (:mod:`.amqp10.connection`) keeps its own byte
interface: its engine has SASL and the open in its own states, and its stream is built
before the engine is known (amqps picks the engine after TLS)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..engine.contract import ProtocolEngine
from ..security.layers import ByteLayer, LayerFailed
from ._admission import Admission
from ._interface import ConnectionBroker, VirtualHostAccess
from ._nodes import Queue
from ._record import ConnectionRecord
from ._store import StoredMessage

__all__ = ["EngineConnection", "HostingBroker", "ServerEngine"]


class ServerEngine(ProtocolEngine, Protocol):
    """What :class:`EngineConnection` asks of its engine (0-9-1's and 0-10's server role):
    the engine contract, which is declared once (:class:`~amqp_sansio.engine.contract.
    ProtocolEngine`), with its start and whether it has closed."""

    @property
    def closed(self) -> bool: ...

    def start(self, now: float) -> None: ...


class HostingBroker(ConnectionBroker, Protocol):
    """What :class:`EngineConnection` asks of the broker: :class:`ConnectionBroker`, and its
    virtual hosts (which hold the exclusive queues of a connection that goes)."""

    @property
    def vhosts(self) -> Mapping[str, VirtualHostAccess]: ...


class EngineConnection(Admission):
    """The broker's side of one client connection over ``engine`` (see the module's
    docstring): :class:`~amqp_sansio.broker.BrokerConnection`'s byte interface
    (``receive_data``, ``data_to_send``, ``next_deadline``, ``handle_timer``,
    ``connection_lost``, ``close``, ``ended``, ``refused``, ``record``) and the
    :class:`~amqp_sansio.broker._interface.Peer` contract."""

    broker: HostingBroker
    engine: ServerEngine

    def __init__(
        self, broker: HostingBroker, engine: ServerEngine, *, address: str | None = None
    ) -> None:
        self.broker = broker
        self.engine = engine
        #: The client's source address (the host), if the driver gave it.
        self.address = address
        #: Who logged in (None: anonymous access).
        self.identity: str | None = None
        self.record = ConnectionRecord()
        self.refused: str | None = None
        #: The transport goes once what is queued is written (handshake time-out, TLS failed).
        self.cut = False
        self.lost = False
        self.ending = False
        super().__init__()
        #: The latest ``now`` at which the client's input made an event (heartbeats make
        #: none): see :meth:`idle_since`.
        self._active_at = 0.0
        #: A publish came during the resource alarm: read no further until it clears.
        self._stopped = False
        #: Where the client's bytes go and ours come from: the engine, or on the amqps
        #: port the TLS layer over it (:meth:`under_tls`).
        self._stream: Any = engine

    def under_tls(self, tls: ByteLayer, record: str | None) -> None:
        """amqps: ``tls`` (and its handshake's ``record``) carries this one's bytes."""
        self._stream = tls
        self.record.tls = record

    @property
    def is_open(self) -> bool:
        return self.record.opened and not self.engine.closed and not self.ending

    @property
    def reading(self) -> bool:
        """Whether the driver should read from the client: False from a publish during the
        broker's resource alarm until it clears (``BrokerConfig.memory_high_watermark``), as
        RabbitMQ stops reading from a publishing connection then. Bytes already read may
        still be given to :meth:`receive_data`."""
        return not self._stopped

    def _read_again(self) -> None:
        """Reading again (the alarm cleared, or the broker closes it)."""
        self._stopped = False

    # -- the byte interface --------------------------------------------------------------------

    def receive_data(
        self, data: bytes | bytearray | memoryview, now: float, *, wall: float | None = None
    ) -> None:
        self.broker.advance(now, wall)
        self._now = now
        events = self._stream.receive_data(data, now)  # (the engine's, and TLS's)
        failed = next((e for e in events if isinstance(e, LayerFailed)), None) if events else None
        if failed is not None:  # (TLS's, the WebSocket layer's)
            self.record.ending_because(f"{failed.layer} failed")
            self.cut = True
        self._handle(events)

    def data_to_send(self) -> bytes:
        if self._held_until is not None:
            return b""  # a failed login's outcome, held back (see handle_timer)
        return bytes(self._stream.data_to_send())

    def next_deadline(self) -> float | None:
        return self.admission_deadline(self.engine)

    def handle_timer(self, now: float, *, wall: float | None = None) -> None:
        self.broker.advance(now, wall)
        self._now = now
        if not self.admission_due(now):
            self._handle(self.engine.handle_timer(now))

    def _handshake_timed_out(self) -> None:
        """No open within the handshake time-out: the transport is closed (``cut``), with
        nothing said."""
        self._handshake_until = None
        timeout = self.broker.config.handshake_timeout
        self.refused = f"no open within the handshake time-out ({timeout} s)"
        self.record.ending_because(self.refused)
        self.cut = True
        self.broker.has_output(self)

    @property
    def ended(self) -> bool:
        if self._held_until is not None:
            return False
        return self.lost or self.cut or self.engine.closed

    def idle_since(self) -> float | None:
        """As :meth:`BrokerConnection.idle_since`: an anonymous open connection (a broker
        without users) that is not :meth:`_busy` may be evicted."""
        free = (
            not self._busy() and self.is_open and not self.cut and self.broker.config.users is None
        )
        return self._active_at if free else None

    def evict(self, why: str) -> None:
        """As :meth:`BrokerConnection.evict`, closed as :meth:`close` closes it."""
        self.record.ending_because(why)
        self.close(why=why)
        self.cut = True
        self._gone()

    def close(self, error: object = None, *, why: str = "broker stopping") -> None:
        """Close from the broker's side (it is stopping, or ``why``): the protocol's
        ``connection-forced`` (:meth:`_close_engine`)."""
        self._read_again()  # (for the client's close-ok)
        if not self.engine.closed:
            self.record.ending_because("closed by the broker")
            self._close_engine(why)
        self.broker.has_output(self)

    def connection_lost(self, now: float, *, wall: float | None = None) -> None:
        """The transport is gone: the engine hears of it (:meth:`_transport_gone`), then
        the connection ends."""
        self.broker.advance(now, wall)
        self._now = now
        self._held_until = None
        self._transport_gone(now)
        self._lost()
        self.broker.store.flush()
        self.broker.dispatch()

    # -- messages ------------------------------------------------------------------------------

    def taken(self, queue: Queue, message: StoredMessage) -> None:
        """A message was taken for good (acknowledged, or sent without acknowledgement)."""
        broker = self.broker
        if queue.settled(message):
            broker.delete_node(queue)
        elif not queue.links:
            broker.release(queue)

    def give_back(self, queue: Queue, message: StoredMessage, *, redelivered: bool = True) -> None:
        """A message given back (a release, a requeue, a channel or session gone): to the
        head of its queue; ``redelivered`` counts the attempt in its delivery-count (core
        spec 3.2.1). One that expired meanwhile is dropped instead."""
        broker = self.broker
        if redelivered:
            message.delivery_count += 1
        if message.expires is not None and message.expires <= broker.wall:
            queue.settled(message)  # (it leaves the queue, as a message taken for good,
            queue.expired(message)  # and is counted expired, or dead-lettered)
            return
        broker.store.update(queue, message)
        queue.requeue(message)
        broker.wake(queue)

    # -- the end -------------------------------------------------------------------------------

    def _lost(self) -> None:
        """The connection ends (once): its channels or sessions go
        (:meth:`_release_all`), then what its virtual hosts kept for it, and it no longer
        counts against the connection limits (unless a failed login's outcome is held)."""
        if self.lost:
            return
        self.lost = True
        self.ending = True
        self._release_all()
        for vhost in self.broker.vhosts.values():
            vhost.owner_gone(self)
        if self._held_until is None:
            self._gone()

    # -- what each protocol's connection provides ----------------------------------------------

    def _handle(self, events: list[Any]) -> None:
        """Act on what the engine (and the TLS layer) reported for one input."""
        raise NotImplementedError

    def _busy(self) -> bool:
        """Whether it holds what keeps it from eviction (consumers, unsettled messages)."""
        raise NotImplementedError

    def _close_engine(self, why: str) -> None:
        """Have the engine close with the protocol's ``connection-forced``, saying ``why``."""
        raise NotImplementedError

    def _transport_gone(self, now: float) -> None:
        """The transport went at ``now``: what the engine makes of the stream's end."""

    def _release_all(self) -> None:
        """The connection ends: its channels or sessions go (their consumers and unsettled
        messages with them)."""
        raise NotImplementedError
