"""Which protocol a client speaks, by the 8 octets it sends first (as RabbitMQ, which
serves both on one port, tells them apart): AMQP 1.0's headers (``AMQP`` then protocol id
0, 2 or 3 and version 1.0.0; core spec 2.2, 5.1, 5.2.1), AMQP 0-9-1's ``AMQP\\x00\\x00\\x09\\x01``
(0-9-1 spec 4.2.2) and the earlier headers of its line RabbitMQ serves too: 0-9's
(``AMQP\\x01\\x01\\x00\\x09``, served as 0-9-1) and 0-8's (``AMQP\\x01\\x01\\x08\\x00``, and
py-amqplib's ``AMQP\\x01\\x01\\x09\\x01``; served as 0-8), all to the 0-9-1 engine
(:data:`~amqp_sansio.amqp091.framing.SERVED_HEADERS`). Another 0-x header (0-10, another
0-9-1 revision: ``AMQP\\x01\\x01...``, ``AMQP\\x00\\x00...``) gets the 0-9-1 header back,
the server's preferred version of that line, and the connection closes (0-9-1 spec 4.2.2,
rule "protocol-negotiation"), as RabbitMQ answers it; anything else goes to the 1.0
engine, which answers it by 1.0's rule (its own header, then it closes). On the amqps
port the same octets, read after the TLS handshake, decide (:class:`ProtocolSniffer`).

This is the top of the broker: :class:`Broker` is the protocol-free core
(:class:`~amqp_sansio.broker._broker.BrokerCore`) with what each protocol keeps on it
(1.0's ``$management`` node, 0-9-1's virtual hosts) and the connections the first octets
ask for, each given the broker as :class:`~amqp_sansio.broker._interface.ConnectionBroker`.
No other module of the broker imports this one; it alone imports both protocol folders."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from .. import __version__
from ..amqp091.engine import Connection as Engine091
from ..amqp091.engine import Limits, Role
from ..amqp091.engine.layer import EngineBytes
from ..amqp091.framing import SERVED_HEADERS
from ..engine.connection import Connection
from ..security.mechanisms import ServerAuthenticator
from ..security.tls import TLSLayer, TLSOrPlain
from ._broker import BrokerCore
from ._config import BrokerConfig
from ._interface import DEFAULT_VHOST
from ._nodes import Store
from ._store import TopologyRecord
from .amqp091.connection import BrokerConnection091
from .amqp091.vhosts import VirtualHost, VirtualHosts, restore_topology
from .amqp10.connection import BrokerConnection
from .amqp10.management import Management
from .amqp10.relay import ANONYMOUS_RELAY

if TYPE_CHECKING:
    import ssl

__all__ = ["Broker", "ProtocolSniffer", "pick_protocol"]

#: The octets a 1.0 header starts with after ``AMQP`` (its protocol id).
_AMQP10_IDS = (0, 2, 3)


def pick_protocol(header: bytes) -> Literal["1.0", "0-9-1", "0-9-1-older"]:
    """The engine for a client whose first octets are ``header`` (at least 8, or all it
    sent before it went): ``"0-9-1"`` (0-8's and 0-9's headers too), ``"0-9-1-older"``
    (answer 0-9-1's :data:`~amqp_sansio.amqp091.PROTOCOL_HEADER` and close) or ``"1.0"``
    (everything else, TLS records of the amqps port included)."""
    if bytes(header[:8]) in SERVED_HEADERS:
        return "0-9-1"
    if header[:4] == b"AMQP" and len(header) >= 8:
        if header[4] == 1 and header[5] == 1:  # 0-10 and others: class 1, instance 1
            return "0-9-1-older"
        if header[4] == 0 and header[5] == 0:  # another 0-x revision (1.0's is 0 1 0 0)
            return "0-9-1-older"
    return "1.0"


class ProtocolSniffer:
    """The inner object of an amqps connection's TLS layer (TLS from the first octet): the
    first 8 octets of plaintext pick the engine, as :func:`pick_protocol` picks it on the
    plain port. Until they are in, nothing is passed on; then a 1.0 (or unknown) header
    goes to ``engine`` (the 1.0 engine, told of the transport's security as the TLS layer
    told this object), and a 0-9-1 header is held, :attr:`wants_091` set, for the broker
    to put a 0-9-1 engine in its place (:meth:`switch`)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        #: Where plaintext goes once picked (None: not yet).
        self.inner: Any = None
        #: The client sent the 0-9-1 header (held in :attr:`head`).
        self.wants_091 = False
        self.head = b""
        self._security: dict[str, Any] | None = None

    def set_transport_security(self, **security: Any) -> None:
        self._security = security
        if self.inner is self.engine:
            self.engine.set_transport_security(**security)

    def receive_data(self, data: bytes, now: float) -> list[Any]:
        if self.inner is not None:
            return list(self.inner.receive_data(data, now) or ())
        if self.wants_091:
            self.head += data  # (until the switch)
            return []
        self.head += data
        if data and len(self.head) < 8:
            return []
        if data and pick_protocol(self.head) == "0-9-1":
            self.wants_091 = True
            return []
        self.inner = self.engine
        if self._security is not None:
            self.engine.set_transport_security(**self._security)
        head, self.head = self.head, b""
        events: list[Any] = []
        if head:
            events += self.engine.receive_data(head, now)
        if not data:
            events += self.engine.receive_data(b"", now)
        return events

    def switch(self, inner: Any) -> bytes:
        """Plaintext goes to ``inner`` from now on; returns what was held for it."""
        self.inner = inner
        head, self.head = self.head, b""
        return head

    def data_to_send(self) -> bytes:
        return b"" if self.inner is None else bytes(self.inner.data_to_send())

    def next_deadline(self) -> float | None:
        deadline: float | None = (self.inner or self.engine).next_deadline()
        return deadline

    def handle_timer(self, now: float) -> list[Any]:
        return list((self.inner or self.engine).handle_timer(now) or ())


class Broker(BrokerCore):
    """The nodes and the connections of one broker (broker draft 2.1), of both protocols.
    I/O-free: a driver accepts a transport with :meth:`accept` (and, once its first octets
    are 0-9-1's, :meth:`accept_091`) and moves bytes through the connection it gets; after
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

    def accept(
        self,
        now: float,
        *,
        wall: float | None = None,
        ssl_context: ssl.SSLContext | None = None,
        tls_header: bool = False,
        sasl: ServerAuthenticator | Literal[False] | None = None,
        address: str | None = None,
    ) -> BrokerConnection:
        """A new connection from a client: its server engine (with ``sasl``, a
        :class:`~amqp_sansio.sasl.ServerAuthenticator`, or the config's, see
        :class:`BrokerConfig`; and a TLS layer from the first byte with ``ssl_context``,
        amqps, core spec 5.2.1). With ``tls_header`` too, the connection is a plain port's
        that offers TLS: the client's TLS protocol header starts TLS (core spec 5.2), its
        SASL or AMQP header goes on without (:class:`~amqp_sansio.security.tls.TLSOrPlain`).
        ``address`` is the client's source address (the host, without the port), for the
        per-address limits; None: not counted per address.

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
                sasl = self._anonymous
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
        stream: Any = engine
        if ssl_context is not None and tls_header:
            stream = TLSOrPlain(engine, ssl_context)
        elif ssl_context is not None:  # amqps: the plaintext's header picks the engine
            stream = TLSLayer(ProtocolSniffer(engine), ssl_context, client=False, negotiate=False)
        conn = BrokerConnection(self, engine, stream, address=address)
        conn.accepted_at = now
        timeout = config.handshake_timeout
        conn.started(now)
        conn.admitted(None if timeout is None else now + timeout)
        self.connections.add(conn)
        if address is not None:
            self._by_address[address] = self._by_address.get(address, 0) + 1
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
        :func:`~amqp_sansio.broker.pick_protocol`): the 0-9-1 engine's server role, with
        the same limits as :meth:`accept` (a connection beyond them comes back
        :attr:`~BrokerConnection091.ended`, nothing said) and the same byte interface. The
        driver feeds it the header too. ``replacing``: the 1.0 connection :meth:`accept`
        gave for the same transport before its header was read (it is forgotten, unheard);
        the handshake time-out counts from its accept, not from the header, whatever
        protocol the header picked (``BrokerConfig.handshake_timeout``)."""
        self.advance(now, wall)
        tls = None
        since = now
        if replacing is not None:
            if replacing.accepted_at is not None:
                since = min(now, replacing.accepted_at)
            tls = replacing.tls_wanting_091
            replacing.replaced()
        why = self._room_for_connection(address, now)
        config = self.config
        idle = config.idle_timeout
        engine = Engine091(
            Role.SERVER,
            server_properties={"cluster_name": config.container_id, "version": __version__},
            # half the idle time-out (the client is cut after two silent heartbeats)
            heartbeat=0 if not idle else min(math.ceil(idle / 2), 0xFFFF),
            # the broker's largest message, and its handshake time-out, for 0-9-1 too
            limits=Limits(
                max_body=config.max_message_size or 0,
                handshake_timeout=config.handshake_timeout or 0,
            ),
        )
        conn = BrokerConnection091(self, engine, address=address)
        conn.started(now)
        if why is not None:
            conn.refused = why
            conn.lost = True
            return conn
        engine.start(since)
        if tls is not None:
            # amqps: the TLS layer goes on, the 0-9-1 engine under it; the header it held
            # is the engine's first input.
            conn.under_tls(tls, replacing.record.tls if replacing is not None else None)
            sniffer = tls.inner
            assert isinstance(sniffer, ProtocolSniffer)
            head = sniffer.switch(EngineBytes(engine, ticks=False))  # (conn ticks it itself)
            engine.receive_data(head, now)
            self.has_output(conn)  # (its connection.start, to be encrypted)
        timeout = self.config.handshake_timeout
        conn.admitted(None if timeout is None else since + timeout)
        self.connections.add(conn)
        if address is not None:
            self._by_address[address] = self._by_address.get(address, 0) + 1
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
