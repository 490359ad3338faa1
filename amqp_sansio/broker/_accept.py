"""The top of the broker: :class:`Broker` is the protocol-free core
(:class:`~amqp_sansio.broker._broker.BrokerCore`) with what each protocol keeps on it
(1.0's ``$management`` node, 0-9-1's virtual hosts) and the connections a client's first
octets ask for (:mod:`._protocols` reads them: :func:`~._protocols.pick_protocol`, and
:class:`~._protocols.ProtocolSniffer` after TLS on the amqps port), each given the broker
as :class:`~amqp_sansio.broker._interface.ConnectionBroker`. The connection of a 0-x
header is its protocol folder's (the factory :data:`CONNECTIONS` names for its engine's
key); this module counts it against the broker's limits (:meth:`Broker.accept_header`), as
it does 1.0's (:meth:`Broker.accept`). No other module of the broker imports this one; it
alone imports the protocol folders."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

import attrs

from ..engine.amqp010 import SessionStore
from ..engine.amqp10.connection import Connection
from ..security.mechanisms import ServerAuthenticator
from ..security.stack import stack
from ..security.websocket import WebSocketOptions
from ._broker import BrokerCore
from ._config import BrokerConfig
from ._interface import DEFAULT_VHOST
from ._nodes import Store
from ._protocols import ProtocolSniffer
from .amqp010 import connection as amqp010
from .amqp010.connection import BrokerConnection010
from .amqp010.sessions import Session010
from .amqp091 import connection as amqp091
from .amqp091.connection import BrokerConnection091
from .amqp091.topology import TopologyRecord
from .amqp091.vhosts import VirtualHost, VirtualHosts, restore_topology
from .amqp10.cbs import CBS_ADDRESS, Cbs
from .amqp10.connection import BrokerConnection
from .amqp10.management import MANAGEMENT_ADDRESS, Management
from .amqp10.relay import ANONYMOUS_RELAY
from .amqp10.scheduled import ScheduledMessages
from .amqp10.servicebus import ENTITY_MANAGEMENT, EntityManagement

if TYPE_CHECKING:
    import ssl

__all__ = ["Broker", "CONNECTIONS"]

#: The connection of each engine key of :data:`~._protocols.PROTOCOLS`: its protocol
#: folder's factory, called with the broker and the keyword ``address``; it gives the
#: connection with its engine not yet started (:meth:`Broker.accept_header` counts it
#: against the limits, then starts it).
CONNECTIONS: dict[str, Callable[..., BrokerConnection091 | BrokerConnection010]] = {
    "0-9-1": amqp091.new_connection,
    "0-10": amqp010.new_connection,
}


class Broker(BrokerCore):
    """The nodes and the connections of one broker (broker draft 2.1), of every protocol.
    I/O-free: a driver accepts a transport with :meth:`accept` (and, once its first octets
    are another engine's, :meth:`accept_header`: the factory of :attr:`acceptors` for
    that engine's key) and moves bytes through the connection it gets; after
    each call it writes out the connections of :meth:`pending` (a publish on one
    connection makes output on others), and calls :meth:`expire` at :meth:`next_expiry`
    (wall clock)."""

    def __init__(self, config: BrokerConfig | None = None, *, store: Store | None = None) -> None:
        super().__init__(config, store=store)
        #: The AMQP 0-9-1 virtual hosts by name (``/`` always: 1.0 connections see it; see
        #: :mod:`.amqp091.vhosts`).
        self.vhosts = VirtualHosts(
            (name, VirtualHost(self, name))
            for name in sorted({DEFAULT_VHOST, *self.config.virtual_hosts})
        )
        self.hosted = self.vhosts
        #: The management node, ``$management`` (see :mod:`.amqp10.management`).
        self.management = Management(self)
        #: The claims-based security node, ``$cbs`` (see :mod:`.amqp10.cbs`): the tokens
        #: 1.0 connections put, and the rights they give.
        self.cbs = Cbs(self)
        #: The broker's own request/response nodes, by address (:mod:`.amqp10.requests`).
        #: Every entity's ``<entity>/$management``, as Azure Service Bus has them (see
        #: :mod:`.amqp10.servicebus`).
        #: Azure Service Bus's scheduled messages, waiting for their time
        #: (:mod:`.amqp10.scheduled`).
        self.scheduled = ScheduledMessages(self)
        self.entity_management = EntityManagement(self)
        self.request_nodes = {
            MANAGEMENT_ADDRESS: self.management,
            CBS_ADDRESS: self.cbs,
            ENTITY_MANAGEMENT: self.entity_management,
        }
        #: AMQP 0-10's detached sessions, kept for their time-out for any connection to
        #: resume (the engines' store, 0-10 spec class ``session``), and the broker's state
        #: of those whose connection has gone (:mod:`.amqp010.sessions`).
        self.sessions_010 = SessionStore()
        self.kept_010: dict[tuple[str | None, bytes], Session010] = {}
        #: The connection each engine key of :data:`~._protocols.PROTOCOLS` is served by
        #: (:meth:`accept_header` for that key: a factory taking ``now`` and the keywords
        #: ``wall``, ``address`` and ``replacing``); 1.0's is :meth:`accept`.
        self.acceptors: dict[str, Callable[..., Any]] = {
            key: functools.partial(self.accept_header, key) for key in CONNECTIONS
        }

    def next_expiry(self) -> float | None:
        """When (wall clock) the next waiting message, suspended subscription, or token
        put to ``$cbs`` expires; or None."""
        times = [t for t in (super().next_expiry(), self.cbs.next_expiry()) if t is not None]
        return min(times) if times else None

    def expire(self, wall: float) -> int:
        """As :meth:`BrokerCore.expire`, and the tokens put to ``$cbs`` expired by
        ``wall`` go (the links they allowed are detached: :meth:`.amqp10.cbs.Cbs.expire`)."""
        dropped = super().expire(wall)
        self.cbs.expire(wall)
        return dropped

    def accept(
        self,
        now: float,
        *,
        wall: float | None = None,
        ssl_context: ssl.SSLContext | None = None,
        tls_header: bool = False,
        sasl: ServerAuthenticator | Literal[False] | None = None,
        address: str | None = None,
        websocket_paths: Iterable[str] | None = None,
    ) -> BrokerConnection:
        """A new connection from a client: its server engine (with ``sasl``, a
        :class:`~amqp_sansio.sasl.ServerAuthenticator`, or the config's, see
        :class:`BrokerConfig`; and a TLS layer from the first byte with ``ssl_context``,
        amqps, core spec 5.2.1). With ``tls_header`` too, the connection is a plain port's
        that offers TLS: the client's TLS protocol header starts TLS (core spec 5.2), its
        SASL or AMQP header goes on without (:class:`~amqp_sansio.security.tls.TLSOrPlain`).
        ``address`` is the client's source address (the host, without the port), for the
        per-address limits; None: not counted per address. With ``websocket_paths`` the
        connection comes as the AMQP WebSocket binding served at those paths
        (:doc:`websockets`; AMQP 1.0 only: no other engine is picked), inside TLS if there
        is TLS; its upgrade must be done within the config's ``handshake_timeout`` too.

        A connection beyond ``max_connections`` or ``max_connections_per_address`` comes
        back already :attr:`~BrokerConnection.ended`, with :attr:`~BrokerConnection.refused`
        saying why: the driver closes its transport at once (nothing was said)."""
        self.advance(now, wall)
        config = self.config
        why = self._room_for_connection(address, now)
        if why is not None:
            engine = _refused_engine()
            refused = BrokerConnection(self, engine, engine, address=address)
            refused.refused = why
            refused.lost = True
            return refused
        if sasl is None:
            sasl = config.sasl
        if sasl is None:
            if config.users is not None:
                sasl = config.users.authenticator(allow_cleartext=config.allow_insecure_auth)
            else:  # anonymous access: SASL ANONYMOUS, or no SASL layer (core spec 5.1)
                sasl = self.open_sasl
        engine = Connection(
            client=False,
            container_id=config.container_id,
            idle_timeout=config.idle_timeout,
            sasl=sasl or None,
            allow_plain_without_tls=config.allow_insecure_auth,
            max_frame_size=config.max_frame_size,
            open_max_frame_size=min(config.open_max_frame_size, config.max_frame_size),
            channel_max=config.channel_max,
            offered_capabilities=(ANONYMOUS_RELAY,),
            max_unsettled=config.max_unsettled_per_link,
        )
        # amqps: the plaintext's header picks the engine (1.0's, or 0-9-1's in its place)
        amqps = ssl_context is not None and not tls_header and websocket_paths is None
        inner = ProtocolSniffer(engine) if amqps else engine
        websocket = None
        if websocket_paths is not None:
            websocket = WebSocketOptions(accept_paths=tuple(websocket_paths))
            if config.handshake_timeout:  # (the broker's time-out bounds the upgrade too)
                websocket = attrs.evolve(websocket, handshake_timeout=config.handshake_timeout)
        stream = stack(
            inner, role="server", tls=ssl_context, tls_header=tls_header, websocket=websocket
        )
        conn = BrokerConnection(self, engine, stream, address=address)
        conn.accepted_at = now
        timeout = config.handshake_timeout
        conn.started(now)
        conn.admitted(None if timeout is None else now + timeout)
        self.connections.add(conn)
        if address is not None:
            self._by_address[address] = self._by_address.get(address, 0) + 1
        return conn

    def accept_header(
        self,
        key: str,
        now: float,
        *,
        wall: float | None = None,
        address: str | None = None,
        replacing: BrokerConnection | None = None,
    ) -> BrokerConnection091 | BrokerConnection010:
        """The connection of the engine ``key`` (:func:`~amqp_sansio.broker.pick_protocol`
        of the client's header, or the ``wants`` of an amqps connection's
        :attr:`~BrokerConnection.tls_wanting`) in the place of ``replacing``, the 1.0
        connection :meth:`accept` gave for the transport (it is forgotten, unheard). The
        connection is its protocol folder's (:data:`CONNECTIONS`), with the
        limits of :meth:`accept` (a connection beyond them comes back
        :attr:`~BrokerConnection091.ended`, nothing said) and the same byte interface; the
        handshake time-out counts from the accept of ``replacing``, not from the header,
        whatever protocol the header picked (``BrokerConfig.handshake_timeout``). The
        driver feeds it the header too."""
        self.advance(now, wall)
        tls, since = self._replace(replacing, now)
        why = self._room_for_connection(address, now)
        conn = CONNECTIONS[key](self, address=address)
        conn.started(now)
        if why is not None:
            conn.refused = why
            conn.lost = True
            return conn
        conn.engine.start(since)
        self._admit(conn, tls, replacing, since, now)
        return conn

    def _replace(self, replacing: BrokerConnection | None, now: float) -> tuple[Any, float]:
        """The TLS layer ``replacing`` hands on (amqps), and since when the handshake
        time-out counts (its accept): ``replacing`` is forgotten, unheard."""
        if replacing is None:
            return None, now
        since = now if replacing.accepted_at is None else min(now, replacing.accepted_at)
        tls = replacing.tls_wanting
        replacing.replaced()
        return tls, since

    def _admit(self, conn: Any, tls: Any, replacing: Any, since: float, now: float) -> None:
        """Count ``conn`` among the connections, its handshake time-out from ``since``; on
        the amqps port (``tls``) the TLS layer goes on, its engine under it, the header it
        held the engine's first input."""
        if tls is not None:
            conn.under_tls(tls, replacing.record.tls)
            sniffer = tls.inner
            assert isinstance(sniffer, ProtocolSniffer)
            sniffer.switch(conn.engine, now)
            self.has_output(conn)  # (its first answer, to be encrypted)
        timeout = self.config.handshake_timeout
        conn.admitted(None if timeout is None else since + timeout)
        self.connections.add(conn)
        address = conn.address
        if address is not None:
            self._by_address[address] = self._by_address.get(address, 0) + 1

    def accept_010(
        self,
        now: float,
        *,
        wall: float | None = None,
        address: str | None = None,
        replacing: BrokerConnection | None = None,
    ) -> BrokerConnection010:
        """A new AMQP 0-10 connection (its client sent the 0-10 protocol header, 0-10 spec
        4.2): :meth:`accept_header` for ``"0-10"``."""
        conn = self.accept_header("0-10", now, wall=wall, address=address, replacing=replacing)
        assert isinstance(conn, BrokerConnection010)
        return conn

    def accept_091(
        self,
        now: float,
        *,
        wall: float | None = None,
        address: str | None = None,
        replacing: BrokerConnection | None = None,
    ) -> BrokerConnection091:
        """A new AMQP 0-9-1 connection (its client sent the 0-9-1 protocol header, see
        :func:`~amqp_sansio.broker.pick_protocol`): :meth:`accept_header` for ``"0-9-1"``."""
        conn = self.accept_header("0-9-1", now, wall=wall, address=address, replacing=replacing)
        assert isinstance(conn, BrokerConnection091)
        return conn

    def restore_topology(
        self, records: Iterable[TopologyRecord], wall: float
    ) -> list[TopologyRecord]:
        """Make again the AMQP 0-9-1 virtual hosts, durable exchanges, durable queues and
        bindings a :class:`~amqp_sansio.broker.TopologyStore` kept, before :meth:`restore`
        (0-9-1 spec ``exchange.declare``/``queue.declare`` field ``durable``); returns the
        records it could not make again, for the store to forget: of a virtual host it
        has not, refused as a client's declaration would be now, or a binding whose ends
        are gone. Virtual hosts come first (one the configuration no longer names is
        there again, as RabbitMQ keeps its virtual hosts), then exchanges, queues (an
        ``x-expires`` timer starts again at ``wall``) and bindings."""
        self.wall = wall
        return restore_topology(self, records)


def _refused_engine() -> Connection:
    """The engine of a connection refused before any byte: ended, it says nothing."""
    engine = Connection(client=False)
    engine.close()  # (in state START: it ends, nothing is sent)
    return engine
