"""The broker's side of one client connection (broker draft 2; core spec part 2): the
engine's byte interface, and the connection's links, messages and transactions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import attrs

from ...codec.amqp10 import Symbol
from ...definitions.amqp10.messaging import (
    Accepted,
    Rejected,
    Source,
    Target,
    TerminusDurability,
    TerminusExpiryPolicy,
)
from ...definitions.amqp10.performatives import Error
from ...definitions.amqp10.transactions import TransactionalState
from ...engine.amqp10.connection import Connection
from ...engine.amqp10.link import Delivery, Link
from ...engine.amqp10.receiver import Receiver
from ...engine.amqp10.sender import Sender
from ...engine.amqp10.session import Session
from ...engine.amqp10.states import CONNECTION_OPEN_FIRST, ConnectionState, LinkState
from ...engine.amqp10.transactions import (
    CoordinatorLink,
    DeclareRequested,
    DischargeRequested,
    TransactionRecord,
    TransactionRolledBack,
)
from ...errors import DecodeError, LocalProtocolError
from ...events import (
    Authenticated,
    AuthenticationFailed,
    ConnectionEnded,
    ConnectionOpened,
    CreditChanged,
    DeliveryReceived,
    DeliveryUpdated,
    Event,
    LinkAttached,
    LinkDetached,
    PeerWithoutSASL,
    ProtocolError,
    SessionBegun,
    SessionEnded,
)
from ...security.layers import ByteLayer
from ...security.tls import TLSLayer
from .._admission import Admission
from .._nodes import Node, Queue, Topic, error, no_node
from .._record import ConnectionRecord
from .._replies import VOLATILE_QUEUE, reply_name
from .._selector import Selector, SelectorError, selector_filter
from .._store import StoredMessage, parse_message
from .._streams import STREAM_CAPABILITY, OffsetFilterError, Stream, offset_filter
from .._subscriptions import Subscription, keeps
from .endpoints import _Consumer, _Producer
from .interface import Broker10, OwnNode
from .outcomes import DEFAULT_OUTCOME, OUTCOMES, applied, apply_outcome
from .relay import relay_address, relay_route
from .replies import attach_volatile, sweep_links
from .servicebus import lock_tokens, own_node, put_batch, resolve, service_bus_link
from .subscriptions import KeptSubscriptions
from .transactions import discharge, roll_back, unroutable_in_txn

__all__ = ["DEFAULT_OUTCOME", "SUPPORTED_OUTCOMES", "BrokerConnection"]


_ATTACHED = LinkState.ATTACHED
_OPENED = ConnectionState.OPENED
_ACCEPTED = Accepted()
#: The outcomes the broker's sources support (core spec 3.5.3 ``outcomes``).
SUPPORTED_OUTCOMES = tuple(
    Symbol(f"amqp:{name}:list") for name in ("accepted", "rejected", "released", "modified")
)
_MOVE, _COPY = Symbol("move"), Symbol("copy")
#: What the broker answers for a terminus it keeps nothing of past the link: no durable
#: state, expiring at the detach (core spec 3.5.5, 3.5.6). A queue consumer's terminus is
#: the queue, which outlives the link by itself; its unsettled deliveries take their
#: default outcome at any detach (see docs/broker.rst).
_TRANSIENT: dict[str, Any] = {
    "durable": TerminusDurability.NONE,
    "expiry_policy": TerminusExpiryPolicy.LINK_DETACH,
    "timeout": 0,
}


class BrokerConnection(Admission):
    """The broker's side of one client connection: the engine's byte interface
    (``receive_data``, ``data_to_send``, ``next_deadline``, ``handle_timer``) and
    :meth:`connection_lost`, for when the transport goes. ``identity`` is who SASL
    authenticated, if anyone; ``address`` the client's source address, if the driver gave
    it. The connection limits of :class:`~amqp_sansio.broker.BrokerConfig` live here: the
    handshake time-out and a failed login's held outcome are among :meth:`next_deadline`;
    ``cut`` that the transport goes, ``refused`` why the connection was refused; ``record``
    the rest the driver's log says (:class:`~amqp_sansio.broker.ConnectionRecord`)."""

    broker: Broker10

    def __init__(
        self, broker: Broker10, engine: Any, stream: ByteLayer, *, address: str | None = None
    ) -> None:
        super().__init__()  # (its admission state: handshake time-out, held login, user)
        self.broker = broker
        #: The client's source address (the host), if the driver gave it.
        self.address = address
        #: When (``now`` clock) the broker accepted the transport (``Broker.accept``): a
        #: 0-9-1 connection in its place keeps counting its handshake time-out from it.
        self.accepted_at: float | None = None
        #: The transport goes once what is queued is written (handshake time-out, TLS failed).
        self.cut = False
        #: The latest at which the client's input made an event (heartbeats make none):
        #: see :meth:`idle_since`.
        self._active_at = 0.0
        #: The server engine (an :class:`amqp_sansio.Connection`).
        self.engine: Connection = engine
        self._stream = stream
        self.identity: str | None = None
        #: Why the connection was refused before AMQP began, for the driver's log (a client
        #: without SASL where the broker requires it, a failed authentication); never a
        #: credential.
        self.refused: str | None = None
        self.record = ConnectionRecord()  # what the driver's log says of it
        self.consumers: dict[Link, _Consumer] = {}
        self.producers: dict[Link, _Producer] = {}
        #: Bytes this connection's publishers put in since the resource alarm went on
        #: (``BrokerConfig.connection_credit_bytes`` bounds them).
        self._alarm_bytes = 0
        #: Outcomes applied during the current input, to catch conflicting ones (draft 2.3.5).
        self._decided: dict[Delivery, type] = {}
        # Messages posted in a live transaction, held until it is discharged (core spec
        # 4.4.1), with the node each is for (read by .transactions).
        self.held_in_txn: dict[Delivery, tuple[Node, StoredMessage]] = {}
        # Transactions that may not commit (a pre-settled relay message went nowhere), and
        # why (core spec 4.4.4.1; read by .transactions).
        self.doomed_txns: dict[TransactionRecord, str] = {}
        #: Its topic subscriptions: suspended, resumed, their detached links' deliveries.
        self.subscriptions = KeptSubscriptions(broker, engine)
        #: Publishers' transfers of durable messages, settled after the store's flush.
        self._unsynced: list[Delivery] = []
        self.lost = False

    def __repr__(self) -> str:
        links = len(self.consumers) + len(self.producers)
        return f"<BrokerConnection {self.engine.state.value} links={links}>"

    # -- the byte interface -------------------------------------------------------------------

    def receive_data(
        self, data: bytes | bytearray | memoryview, now: float, *, wall: float | None = None
    ) -> None:
        """Feed bytes from the client."""
        self.broker.advance(now, wall)
        self._now = now
        # the layers take any bytes-like value (the contract names bytes)
        self._handle(self._stream.receive_data(cast(bytes, data), now))

    def data_to_send(self) -> bytes:
        if self._held_until is not None:
            return b""  # a failed login's outcome, held back (see handle_timer)
        return self._stream.data_to_send()

    def next_deadline(self) -> float | None:
        """When (on the ``now`` clock) :meth:`handle_timer` is due, or None."""
        return self.admission_deadline(self._stream)

    def handle_timer(self, now: float, *, wall: float | None = None) -> None:
        """Act on what is due at ``now``: the engine's timers, the handshake time-out, the
        release of a failed login's held outcome."""
        self.broker.advance(now, wall)
        self._now = now
        if not self.admission_due(now):
            self._handle(self._stream.handle_timer(now))

    def _handshake_timed_out(self) -> None:
        """No open within the handshake time-out: once the AMQP headers are exchanged the
        connection is refused with an open and a close (``amqp:resource-limit-exceeded``,
        core spec 2.4.1, 2.4.7, 2.8.15); before that (no header, TLS or SASL unfinished)
        nothing can be said, and the transport is closed (``cut``)."""
        self._handshake_until = None
        timeout = self.broker.config.handshake_timeout
        self.refused = f"no open within the handshake time-out ({timeout} s)"
        if self.engine.state in CONNECTION_OPEN_FIRST:  # (its close sends its open first)
            self.engine.close(error("amqp:resource-limit-exceeded", self.refused))
        self.cut = True
        self.broker.has_output(self)

    @property
    def tls_wanting(self) -> TLSLayer | None:
        """On the amqps port: the TLS layer, once the plaintext's first octets are the
        header of another engine (its key is the layer's inner object's ``wants``; the
        driver then asks the broker for that connection in this one's place,
        :meth:`Broker.accept_header <amqp_sansio.broker.Broker.accept_header>`); else
        None."""
        stream = self._stream
        if isinstance(stream, TLSLayer) and getattr(stream.inner, "wants", None) is not None:
            return stream
        return None

    @property
    def ended(self) -> bool:
        """Nothing more will be exchanged: the transport can be closed once
        :meth:`data_to_send` is empty."""
        if self._held_until is not None:
            return False
        return self.lost or self.cut or self.engine.state is ConnectionState.END

    def idle_since(self) -> float | None:
        """When (``now`` clock) the client last sent more than empty frames, if the broker
        may evict this connection at a connection cap (``BrokerConfig.evict_idle_after``):
        open, anonymous (no user counted, see :meth:`.Admission.admit_user`), and without
        links; else None."""
        if (
            self._counted_user is not None
            or self.cut
            or self.engine.state is not _OPENED
            or any(session.links for session in self.engine.sessions)
        ):
            return None
        return self._active_at

    def evict(self, why: str) -> None:
        """Close an idle connection to make room for a new one (:meth:`idle_since`): with
        ``amqp:resource-limit-exceeded`` (core spec 2.8.15), the transport going after it;
        it no longer counts against the connection limits."""
        self.record.ending_because(why)
        self.engine.close(error("amqp:resource-limit-exceeded", why))
        self.cut = True
        self._gone()
        self.broker.has_output(self)

    def close(self, error: Error | None = None) -> None:
        """Close the connection from the broker's side (e.g. the broker is stopping)."""
        if self.engine.state in (ConnectionState.OPENED, ConnectionState.CLOSE_RCVD):
            self.record.ending_because("closed by the broker", error)
            self.engine.close(error)
        self.broker.has_output(self)

    def connection_lost(self, now: float, *, wall: float | None = None) -> None:
        """The transport is gone: every unsettled delivery gets its default outcome (broker
        draft 2.3.7), the links leave their nodes (dynamic ones may be deleted)."""
        self.broker.advance(now, wall)
        self._now = now
        self._held_until = None
        self._lost()
        self._gone()
        self.broker.store.flush()  # the default outcomes' new delivery-counts
        self.broker.dispatch()

    # -- events -------------------------------------------------------------------------------

    def _handle(self, events: list[Event]) -> None:
        broker = self.broker
        if events:
            self._active_at = self._now
        for event in events:
            kind = type(event)
            try:
                if kind is DeliveryReceived:
                    self._on_message(event)  # type: ignore[arg-type]
                elif kind is DeliveryUpdated:
                    self._on_update(event)  # type: ignore[arg-type]
                elif kind is CreditChanged:
                    self._on_credit(event)  # type: ignore[arg-type]
                else:
                    self._on_other(event)
            except LocalProtocolError:  # pragma: no cover - a command the engine's state refused
                self._sweep()
        self._decided.clear()
        # Whatever this input did to durable messages (stored, accepted, dead-lettered,
        # given back) is on disk before any answer to it goes out (group commit).
        broker.store.flush()
        if self._unsynced:
            unsynced, self._unsynced = self._unsynced, []
            for delivery in unsynced:
                link = delivery.link
                if link.state is _ATTACHED and self.engine.state is _OPENED:
                    link.settle(delivery, _ACCEPTED)
        broker.has_output(self)
        broker.dispatch()

    def _on_other(self, event: Event) -> None:
        handler = _OTHER_EVENTS.get(type(event))
        if handler is not None:
            handler(self, event)
        self.record.saw(self, event)

    def _on_opened(self, event: ConnectionOpened) -> None:
        why = self.admit_user(self.identity, self.engine.sasl_mechanism)
        if why is not None:
            self.engine.close(error("amqp:resource-limit-exceeded", why))
            return
        self._handshake_until = None
        self.engine.open()

    def _on_session_begun(self, event: SessionBegun) -> None:
        session = event.session
        # Our handle-max bounds the client's links on the session (core spec 2.7.2).
        session.handle_max = self.broker.config.handle_max
        session.begin()  # (the broker never begins a session itself)

    def _on_link_attached(self, event: LinkAttached) -> None:
        if event.link.state is LinkState.ATTACH_RCVD:
            self._on_attach(event.link)

    def _on_link_detached(self, event: LinkDetached) -> None:
        sweep_links(self, None, event.link)  # (a requester's link: its name goes)
        endpoint = self.consumers.get(event.link) or self.producers.get(event.link)
        if endpoint is not None:
            self._remove(endpoint, closed=event.closed)

    def _on_authenticated(self, event: Authenticated) -> None:
        self.identity = event.identity

    def _on_without_sasl(self, event: PeerWithoutSASL) -> None:
        self.refused = (
            "it sent the bare AMQP header (no SASL layer), and this broker requires SASL "
            "authentication (anonymous access is not allowed)"
        )

    def _on_authentication_failed(self, event: AuthenticationFailed) -> None:
        self.refused = f"authentication failed: {event.description}"
        self.hold_failed_login()

    def _on_rolled_back(self, event: TransactionRolledBack) -> None:
        assert isinstance(event.transaction, TransactionRecord)
        roll_back(self, event.transaction)

    # -- links --------------------------------------------------------------------------------

    def _on_attach(self, link: Link) -> None:
        broker = self.broker
        config = broker.config
        if isinstance(link, CoordinatorLink):
            link.attach()  # the broker is a transactional resource (core spec 4.2)
            return
        limit = config.max_links_per_connection
        if limit is not None and len(self.consumers) + len(self.producers) >= limit:
            link.refuse(error("amqp:resource-limit-exceeded", f"at most {limit} links"))
            return
        remote = link.remote
        assert remote is not None
        terminus = remote.source if isinstance(link, Sender) else remote.target
        expected = Source if isinstance(link, Sender) else Target
        if terminus is None and isinstance(link, Sender):
            # A receiver's attach without a source looks up the subscription of its name
            # (as Qpid JMS does to unsubscribe: it closes the link it gets): the answer
            # carries the kept subscription's source, and the link resumes it.
            terminus = self.subscriptions.source(link)
        if not isinstance(terminus, expected):
            link.refuse(
                error("amqp:invalid-field", f"the attach has no {expected.__name__.lower()}")
            )
            return
        terminus, service_bus = service_bus_link(link, terminus)  # (Azure's URL addresses)
        address = terminus.address
        own = self._own_node(terminus)
        limit = config.max_address_length
        if (
            limit is not None
            and isinstance(address, str)
            and len(address) > limit // 4  # (at most 4 bytes a character: encode only then)
            and len(address.encode("utf-8", "surrogatepass")) > limit
        ):
            link.refuse(error("amqp:invalid-field", f"an address longer than {limit} bytes"))
            return
        if not self._allowed(link, None if terminus.dynamic else address, own):
            return
        if self._special_link(link, terminus, own):
            return
        node: Node | None
        if terminus.dynamic:
            node = broker.dynamic_node(terminus.dynamic_node_properties)
        elif (
            isinstance(link, Receiver) and isinstance(terminus, Target) and terminus.address is None
        ):
            self._relay_producer(link, terminus)
            return
        elif not isinstance(terminus.address, str):
            link.refuse(error("amqp:invalid-field", "a source needs an address"))
            return
        else:
            stream = STREAM_CAPABILITY in (terminus.capabilities or ())
            node = resolve(broker, terminus.address, stream=stream, service_bus=service_bus)
            if node is None:
                link.refuse(error("amqp:not-found", no_node(terminus.address)))
                return
            if stream and not isinstance(node, Stream):
                link.refuse(error("amqp:precondition-failed", f"{node.address!r} is a {node.kind}"))
                return
            if isinstance(node, Queue) and broker.exclusive(node):
                link.refuse(
                    error(
                        "amqp:resource-locked",
                        f"queue {node.address!r} is exclusive to an AMQP 0-9-1 connection",
                    )
                )
                return
        if isinstance(link, Sender):
            assert isinstance(terminus, Source)
            self.add_consumer(link, node, terminus)
            lock_tokens(self.consumers.get(link), service_bus)
        else:
            assert isinstance(link, Receiver)
            link.max_message_size = config.max_message_size
            target = cast(Target, terminus)  # a receiver's terminus: checked above
            link.attach(target=attrs.evolve(target, address=node.address, **_TRANSIENT))
            producer = _Producer(self, link, node, service_bus=service_bus)
            self.producers[link] = producer
            self.give_credit(link)
            self._join(node, producer, terminus.dynamic)

    def _own_node(self, terminus: Source | Target) -> OwnNode | None:
        """The broker's own node (``$management``, ``$cbs``: :mod:`.requests`; an entity's
        ``<entity>/$management``: :mod:`.servicebus`) the terminus names, or None."""
        address = terminus.address
        if terminus.dynamic or not isinstance(address, str):
            return None
        return own_node(self.broker.request_nodes, address)

    def _allowed(self, link: Link, address: object, own: OwnNode | None) -> bool:
        """Whether the users file lets this client attach ``link`` to ``address`` (None:
        a dynamic node; any client may attach to ``$cbs``, where a token gives rights);
        if not, the link is refused (``amqp:unauthorized-access``)."""
        users = self.broker.config.users
        if users is None or not isinstance(address, str) or (own and own.open_to_all):
            return True
        send = isinstance(link, Receiver)
        if users.allows(self.identity, address, send=send):
            return True
        if self.broker.cbs.authorize(self, link, address, send=send):
            return True  # (a token put to $cbs allows it: see .cbs)
        verb = "send to" if send else "receive from"
        who = self.identity or "an unauthenticated client"
        link.refuse(error("amqp:unauthorized-access", f"{who} may not {verb} {address!r}"))
        return False

    def _special_link(self, link: Link, terminus: Source | Target, own: OwnNode | None) -> bool:
        """A link to the broker's ``own`` node (``$management``, ``$cbs``: its node takes
        it, :mod:`.requests`), or one of direct reply-to's (see :mod:`.._replies`): a
        requester's (a dynamic source with the capability ``rabbitmq:volatile-queue``), or
        a responder's sender to a name (``amqp:not-found`` once its requester is gone).
        False for any other link."""
        if own is not None:
            own.attach(self, link, terminus)
            return True
        if terminus.dynamic and VOLATILE_QUEUE in (terminus.capabilities or ()):
            if isinstance(link, Sender):
                attach_volatile(self, link, cast(Source, terminus))
            else:
                link.refuse(error("amqp:not-implemented", "a volatile queue is a source only"))
            return True
        address = terminus.address
        if terminus.dynamic or not isinstance(address, str) or reply_name(address) is None:
            return False
        if isinstance(link, Receiver) and self.broker.replies.present(address):
            self._relay_producer(link, cast(Target, terminus), reply=address)
        else:
            link.refuse(error("amqp:not-found", f"no node {address!r}"))
        return True

    def _relay_producer(self, link: Receiver, target: Target, *, reply: str | None = None) -> None:
        """A sender with a null target address: the anonymous relay (see :mod:`.relay`).
        Access is checked per message, against the address each one names. ``reply``: a
        sender to a direct reply-to name instead, whose messages all go there."""
        config = self.broker.config
        link.max_message_size = config.max_message_size
        link.attach(target=attrs.evolve(target, **_TRANSIENT))
        self.producers[link] = _Producer(self, link, None, reply=reply)
        self.give_credit(link)

    def add_consumer(self, link: Sender, node: Node, source: Source) -> None:
        if isinstance(node, Stream):
            self._stream_consumer(link, node, source)
            return
        config = self.broker.config
        selector: Selector | None = None
        applied: dict[Any, Any] | None = None
        try:
            found = selector_filter(source.filter)
            if found is not None:
                key, value, text = found
                selector = Selector(
                    text,
                    max_length=config.selector_max_length,
                    max_depth=config.selector_max_depth,
                )
                applied = {key: value}
        except SelectorError as exc:
            link.refuse(error("amqp:invalid-field", f"selector filter: {exc}"))
            self.broker.release(node)  # (made for this attach, perhaps)
            return
        copy = source.distribution_mode == _COPY and isinstance(node, Queue)
        default = source.default_outcome
        if not isinstance(default, OUTCOMES):
            default = DEFAULT_OUTCOME
        answered = attrs.evolve(
            source,
            address=node.address,
            distribution_mode=_COPY if copy else _MOVE,
            default_outcome=default,
            outcomes=SUPPORTED_OUTCOMES,
            # Only the filter applied, the selector: the client sees what is (3.5.3).
            filter=applied,
            **self._terminus(node, source),
        )
        subscription: Subscription | None = None
        if isinstance(node, Topic) and keeps(answered):
            kept = self.subscriptions.attach(link, node, source, answered)
            if isinstance(kept, Error):
                link.refuse(kept)
                self.broker.release(node)
                return
            subscription = kept
        link.attach(source=answered)
        consumer = _Consumer(self, link, node, copy=copy, default=default)
        consumer.subscription = subscription
        consumer.selector = selector
        if subscription is not None:
            subscription.selector = selector  # (its buffer selects while suspended too)
        self.consumers[link] = consumer
        self._join(node, consumer, source.dynamic)
        node.add_consumer(consumer)
        queue = node if isinstance(node, Queue) else node.buffer(consumer)  # type: ignore[attr-defined]
        consumer.queue = queue
        if subscription is not None:
            self.subscriptions.resume(subscription, consumer)
        self.broker.wake(queue)

    def _terminus(self, node: Node, source: Source) -> dict[str, Any]:
        """The durability and expiry of the source the broker answers: for a topic, what
        the client asked (3.5.3), but durability ``none`` when the broker's store keeps no
        subscriptions (nothing survives a restart then), and none at all for a terminus
        that expires at its detach; for other nodes, nothing kept (:data:`_TRANSIENT`)."""
        if not isinstance(node, Topic):
            return _TRANSIENT
        durable = source.durable
        if not self.broker.keeps_subscriptions or not keeps(source):
            durable = TerminusDurability.NONE
        return {
            "durable": durable,
            "expiry_policy": source.expiry_policy,
            "timeout": source.timeout,
        }

    def _stream_consumer(self, link: Sender, node: Stream, source: Source) -> None:
        """A consumer of a stream reads from the offset its filter asks for, and takes
        nothing (core spec 3.5.3 distribution-mode ``copy``); the answer echoes the filter
        applied, and its properties give the stream's bounds (see :mod:`.._streams`)."""
        try:
            applied, start = offset_filter(source)
        except OffsetFilterError as exc:
            link.refuse(error("amqp:invalid-field", str(exc)))
            return
        link.properties = node.bounds()
        link.attach(
            source=attrs.evolve(
                source,
                address=node.address,
                distribution_mode=_COPY,
                default_outcome=_ACCEPTED,
                outcomes=SUPPORTED_OUTCOMES,
                filter=None if applied is None else dict([applied]),
                capabilities=(STREAM_CAPABILITY,),
            )
        )
        consumer = _Consumer(self, link, node, copy=True, default=_ACCEPTED)
        consumer.cursor = node.position(start)
        consumer.queue = node
        self.consumers[link] = consumer
        self._join(node, consumer, source.dynamic)
        node.add_consumer(consumer)
        self.broker.wake(node)

    def _join(self, node: Node, endpoint: Any, dynamic: bool) -> None:
        node.link_added(endpoint)
        self.broker.linked(node)
        if dynamic:
            node.creator = endpoint

    def _detach(self, link: Link, error: Error) -> None:
        """Detach a link from the broker's side, if the engine still can."""
        if link.state is _ATTACHED and self.engine.state is _OPENED:
            link.detach(error=error)
            self.broker.has_output(self)

    def _remove(self, endpoint: Any, *, lifetime: bool = True, closed: bool = True) -> None:
        """A link is gone: its unsettled deliveries get their default outcome (broker draft
        2.3.7); the node may be deleted by its lifetime policy (core spec 3.5.10-3.5.13).
        A kept topic subscription whose link went without closing (``closed`` false: a
        detach that does not close, its session's end, the connection's loss) is suspended
        instead, its unsettled deliveries kept for a resume (see :mod:`.._subscriptions`);
        closed, it is deleted."""
        if isinstance(endpoint, _Consumer):
            if self.consumers.pop(endpoint.link, None) is None:
                return
            inflight = endpoint.inflight
            endpoint.inflight = {}
            subscription = endpoint.subscription
            if subscription is not None and not closed:
                endpoint.node.remove_consumer(endpoint)
                self.subscriptions.suspend(subscription, inflight)
            else:
                # Last sent first: each goes back to the head of its priority ahead of the
                # ones after it, one step each (in sending order, each would be placed
                # behind the ones before it by a scan: quadratic for many unsettled).
                for message, queue in reversed(inflight.values()):
                    apply_outcome(self.broker, endpoint, message, queue, endpoint.default)
                endpoint.node.remove_consumer(endpoint)
                if subscription is not None:
                    self.broker.delete_subscription(subscription)
        elif self.producers.pop(endpoint.link, None) is None or endpoint.node is None:
            return
        node = endpoint.node
        if node.link_removed(endpoint) and lifetime:
            self.broker.delete_node(node)
        elif lifetime:
            self.broker.release(node)  # made on first use: deleted once unused

    def _sweep(self, session: Session | None = None) -> None:
        """Forget the links the engine no longer has attached (after a protocol error, the
        end of ``session``)."""
        endpoints: list[Any] = [*self.consumers.values(), *self.producers.values()]
        for endpoint in endpoints:
            link = endpoint.link
            if link.state is not _ATTACHED or link.session is session or self.lost:
                self._remove(endpoint, closed=False)  # detached, not closed (2.6.6)
        sweep_links(self, session)
        if session is not None:
            self.subscriptions.ended(session)

    def _lost(self) -> None:
        if self.lost:
            return
        self.lost = True
        self._sweep()
        self.subscriptions.ended(None)
        if self._held_until is None:  # (else its transport stays until the outcome goes)
            self._gone()

    def replaced(self) -> None:
        """A 0-9-1 connection takes this one's transport (its first octets asked for
        0-9-1): this one is forgotten, unheard."""
        self.lost = True
        self._gone()

    def revoke(self, link: Link, why: Error) -> None:
        """The client may no longer use ``link`` (the token that allowed it expired): it
        is forgotten, as at a detach, and detached with ``why``."""
        endpoint = self.consumers.get(link) or self.producers.get(link)
        if endpoint is not None:
            self._remove(endpoint)
        self._detach(link, why)

    def node_deleted(self, endpoint: _Consumer | _Producer, why: Error) -> None:
        """The node of ``endpoint`` (a link of this connection) was deleted: the link is
        forgotten and detached with ``why`` (broker draft 2.3.3)."""
        self._remove(endpoint, lifetime=False)
        self._detach(endpoint.link, why)

    # -- messages -----------------------------------------------------------------------------

    def _on_message(self, event: DeliveryReceived) -> None:
        producer = self.producers.get(event.link)
        if producer is None:  # (a request to $management or $cbs: attached links' only)
            any(node.request(self, event) for node in self.broker.request_nodes.values())
            return
        self.record.messages_in += 1
        if put_batch(self, producer, event):
            return  # (a batch of Azure's SDKs: see .servicebus)
        link = producer.link
        delivery = event.delivery
        broker = self.broker
        try:
            message = parse_message(event.data, seq=broker.next_seq(), wall=broker.wall)
        except DecodeError as exc:
            producer.reject_malformed(delivery, exc)
            self.give_credit(link)
            return
        size = message.size
        if size > producer.largest:
            producer.grew(size)
        node = producer.node
        state: Any = _ACCEPTED
        if node is None:
            address = producer.reply or relay_address(message.data)
            routed = relay_route(broker, self.identity, address, message)
            if routed is None:  # a direct reply: accepted, delivered or not (.._replies)
                if not delivery.remote_settled:
                    link.settle(delivery, _ACCEPTED)
                self.give_credit(link)
                return
            if isinstance(routed, Error):
                node, state = None, Rejected(error=routed)
            else:
                node = routed
        if delivery.transaction is not None:
            self._post_in_txn(link, delivery, node, state, message)
        else:
            state = self._put(producer, delivery, node, state, message)
            if delivery.remote_settled:
                pass
            elif message.durable and state is _ACCEPTED:
                self._unsynced.append(delivery)  # settled once the store has it (2.2.4)
            else:
                producer.settle(delivery, state)  # (as the SDK reads it: .servicebus)
        self.give_credit(link, producer)

    def _put(
        self, producer: _Producer, delivery: Delivery, node: Node | None, state: Any, message: Any
    ) -> Any:
        """A message outside a transaction put on its ``node`` (None: unroutable, ``state``
        says why); its outcome: ``state``, or why the node or the alarm refused it."""
        broker = self.broker
        if node is None:
            if delivery.remote_settled:
                broker.unroutable += 1  # pre-settled: nobody to tell (see Broker.unroutable)
        elif message.expires is not None and message.expires <= broker.wall:
            broker.expired += 1  # expired on arrival: taken, and dropped (broker draft 2.2.5)
        else:
            why = self._over_alarm(message.size) if broker.alarm else None
            if why is None:
                why = broker.scheduled.offer(node, message)  # (held if scheduled: Azure's)
            if why is not None:
                state = Rejected(error=error("amqp:resource-limit-exceeded", why))
                if producer.node is None and delivery.remote_settled:
                    broker.unroutable += 1
            else:
                broker.touch(node)
        return state

    def give_credit(self, link: Receiver, producer: _Producer | None = None) -> None:
        """Top a publisher's credit up to its cap (``link_credit``, less within the byte
        budgets: :meth:`_Producer.credit_cap`) once half is used (the engine caps it at the
        room under ``max_unsettled_per_link``); none while the broker's resource alarm is
        on (``BrokerConfig.memory_high_watermark``)."""
        config = self.broker.config
        credit = config.link_credit
        if link.link_credit * 2 > credit:
            return  # (above half of the most it may have: above half of its cap)
        if producer is None:
            producer = self.producers.get(link)
        if producer is not None:
            credit = producer.credit_cap(config, len(self.producers))
        if link.link_credit * 2 <= credit and link.state is _ATTACHED and not self.broker.alarm:
            link.flow(credit)

    def _over_alarm(self, size: int) -> str | None:
        """While the resource alarm is on: why a message of ``size`` bytes is refused
        (this connection's publishers put in ``connection_credit_bytes`` since it went
        on), or None (counted)."""
        budget = self.broker.config.connection_credit_bytes
        taken = self._alarm_bytes + size
        if budget is not None and taken > budget:
            return (
                "the broker's resource alarm is on and this connection put in "
                f"{self._alarm_bytes} bytes since (connection_credit_bytes {budget})"
            )
        self._alarm_bytes = taken
        return None

    #: Always read: a 1.0 publisher is held back by its credit (see :meth:`alarm_changed`).
    reading = True

    def alarm_changed(self, alarm: bool) -> None:
        """The broker's resource alarm went on (publishers get no more credit: see
        :meth:`_credit`) or off (each publisher's credit is topped up again)."""
        if not alarm:
            self._alarm_bytes = 0
        if alarm or self.engine.state is not _OPENED:
            return
        for producer in list(self.producers.values()):
            self.give_credit(producer.link)
        self.broker.has_output(self)

    def _post_in_txn(
        self, link: Receiver, delivery: Delivery, node: Node | None, state: Any, message: Any
    ) -> None:
        """A message posted in a transaction: held, and provisionally accepted, until the
        discharge (core spec 4.4.1); one that cannot be routed gets ``state``."""
        if node is None:
            unroutable_in_txn(self, delivery, state)
        else:
            self.held_in_txn[delivery] = (node, message)
            link.update(delivery, _ACCEPTED)

    def _on_credit(self, event: CreditChanged) -> None:
        consumer = self.consumers.get(event.link)
        if consumer is not None and consumer.queue is not None:
            self.broker.wake(consumer.queue)

    def _on_update(self, event: DeliveryUpdated) -> None:
        consumer = self.consumers.get(event.link)
        if consumer is None:
            if self.subscriptions.holds(event.delivery):
                self.subscriptions.settle_parked(event)
            elif event.settled:
                producer = self.producers.get(event.link)
                if producer is not None:
                    self.give_credit(producer.link)  # room under max_unsettled_per_link again
            return
        if consumer.blocked and consumer.queue is not None:
            consumer.blocked = False  # below max_unsettled_per_link once this settles
            self.broker.wake(consumer.queue)
        delivery = event.delivery
        state = event.state
        if type(state) is TransactionalState:
            return  # retired in a transaction: its outcome applies on commit (4.4.2)
        terminal = isinstance(state, OUTCOMES)
        entry = consumer.inflight.get(delivery)
        if entry is None:
            decided = self._decided.get(delivery)
            if decided is not None and terminal and type(state) is not decided:
                # Conflicting outcomes for one transfer are an error (broker draft 2.3.5).
                self._remove(consumer)
                self._detach(
                    consumer.link,
                    error("amqp:illegal-state", "conflicting outcomes for one delivery"),
                )
            elif terminal and not delivery.settled:
                consumer.link.settle(delivery)  # a browser's delivery
            return
        if not terminal:
            if not event.settled:
                return  # a non-terminal state (received): the delivery goes on
            state = consumer.default  # settled without an outcome: the default (3.5.3)
        del consumer.inflight[delivery]
        self._decided[delivery] = type(state)
        message, queue = entry
        apply_outcome(self.broker, consumer, message, queue, state)
        if not delivery.settled:  # (its outcome echoed, as applied: 2.6.12, .servicebus)
            consumer.link.settle(delivery, applied(state))


#: What the broker does on each event other than a delivery's or a credit change, by the
#: event's type (the engine's events are of these very classes); the others need nothing.
_OTHER_EVENTS: dict[type, Callable[[BrokerConnection, Any], None]] = {
    ConnectionOpened: BrokerConnection._on_opened,
    SessionBegun: BrokerConnection._on_session_begun,
    LinkAttached: BrokerConnection._on_link_attached,
    LinkDetached: BrokerConnection._on_link_detached,
    SessionEnded: lambda conn, event: conn._sweep(event.session),
    ProtocolError: lambda conn, event: conn._sweep(),
    ConnectionEnded: lambda conn, event: conn._lost(),
    Authenticated: BrokerConnection._on_authenticated,
    PeerWithoutSASL: BrokerConnection._on_without_sasl,
    AuthenticationFailed: BrokerConnection._on_authentication_failed,
    DeclareRequested: lambda conn, event: event.request.declare(),
    DischargeRequested: lambda conn, event: discharge(conn, event.request),
    TransactionRolledBack: BrokerConnection._on_rolled_back,
}
