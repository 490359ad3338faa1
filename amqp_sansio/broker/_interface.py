"""The written interface between the broker's protocol-free core and its protocol folders
(:mod:`.amqp10`, :mod:`.amqp091`, :mod:`.amqp010`): what a connection may ask of the
broker (:class:`ConnectionBroker`) and what the broker asks of a connection (:class:`Peer`),
as :class:`~amqp_sansio.broker._nodes.NodeBroker` is what a node asks of its broker; and
what a connection of a protocol that has exchanges but not 0-9-1's own classes (0-10) may
ask of a virtual host (:class:`VirtualHostAccess`, which 0-9-1's virtual hosts meet).

The core imports no protocol folder; a protocol folder gets the broker only as a
:class:`ConnectionBroker` (or its own extension of it, naming what that protocol keeps on
the broker: 1.0's ``$management`` node, 0-9-1's virtual hosts), and the broker sees its
connections only as :class:`Peer`. Time is never read from a clock: ``now`` (the engines'
deadlines) and ``wall`` (message expiry) are given by the caller of every input."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from ._nodes import NodeBroker

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ..security.mechanisms import ServerAuthenticator
    from ._nodes import Node, Queue
    from ._replies import DirectReplies
    from ._store import StoredMessage
    from ._streams import Stream
    from ._subscriptions import Subscription

__all__ = ["DEFAULT_VHOST", "ConnectionBroker", "HostedQueues", "Peer", "VirtualHostAccess"]

#: The AMQP 0-9-1 virtual host whose queues are the broker's nodes (1.0 links see it).
DEFAULT_VHOST = "/"


class Peer(Protocol):
    """What the broker asks of a connection, of either protocol."""

    #: The client's source address (the host), or None: not counted per address.
    address: str | None

    def idle_since(self) -> float | None:
        """Since when (``now`` clock) it has been quiet, if it may be evicted at a cap."""

    def evict(self, why: str) -> None:
        """Close it to make room for a new connection."""

    def alarm_changed(self, alarm: bool) -> None:
        """The resource alarm went on or off."""

    def release_user(self) -> str | None:
        """Forget the user it was counted for (once): that user, or None."""


class HostedQueues(Protocol):
    """What the core asks of the queues a protocol keeps outside :attr:`Broker.nodes`
    (0-9-1's virtual hosts): their depth, a queue by name, and a node's deletion."""

    def depth(self) -> int:
        """The messages those queues hold (waiting or out with a consumer)."""

    def queue_of(self, vhost: str, name: str) -> Node | None:
        """The queue ``name`` of virtual host ``vhost`` (not ``/``), if there is one."""

    def node_deleted(self, node: Node, registered: bool) -> None:
        """``node`` was deleted (``registered``: it was among :attr:`Broker.nodes`)."""

    def exclusive(self, node: Node) -> bool:
        """Whether ``node`` is a queue some connection holds exclusively."""


class ConnectionBroker(NodeBroker, Protocol):
    """What a connection, of either protocol, may ask of the broker."""

    replies: DirectReplies
    subscriptions: dict[tuple[str, str], Subscription]
    alarm: bool
    answers_first: bool
    unroutable: int
    dead_lettered: int

    # -- the turn of an input -----------------------------------------------------------------

    def advance(self, now: float, wall: float | None) -> None: ...

    def has_output(self, conn: Any) -> None: ...

    def wake(self, queue: Queue | Stream) -> None: ...

    def touch(self, node: Node) -> None: ...

    def dispatch(self) -> None: ...

    def tell_alarm(self) -> None: ...

    # -- admission ----------------------------------------------------------------------------

    #: The SASL layer of a broker without users or ``sasl``: anonymous access (and any
    #: PLAIN login).
    open_sasl: ServerAuthenticator

    def room_for_user(self, identity: str) -> str | None: ...

    def login_failed(self, address: str | None, now: float) -> float: ...

    def connection_gone(self, conn: Any) -> None: ...

    # -- nodes --------------------------------------------------------------------------------

    def resolve(self, address: str, *, stream: bool = False) -> Node | None: ...

    def dynamic_node(self, properties: Any) -> Node: ...

    def declare(self, address: str, *, topic: bool = False, stream: bool = False) -> Node: ...

    def delete_node(self, node: Node) -> None: ...

    def release(self, node: Node) -> None: ...

    def linked(self, node: Node) -> None: ...

    def idle_until(self, node: Node, when: float) -> None: ...

    def forget_idle(self, node: Node) -> None: ...

    def exclusive(self, node: Node) -> bool: ...

    # -- kept subscriptions (1.0 topics, core spec 3.5.5) -------------------------------------

    @property
    def keeps_subscriptions(self) -> bool: ...

    def new_subscription_id(self) -> int: ...

    def room_for_subscription(self, container: str) -> str | None: ...

    def register_subscription(self, subscription: Subscription) -> None: ...

    def save_subscription(self, subscription: Subscription) -> None: ...

    def start_subscription_timer(self, subscription: Subscription) -> None: ...

    def delete_subscription(self, subscription: Subscription, *, release: bool = True) -> None: ...


class VirtualHostAccess(Protocol):
    """What a connection may ask of a virtual host (0-9-1's :mod:`.amqp091.vhosts` keeps
    them; an AMQP 0-10 connection uses the same objects through this): declare, delete,
    purge and query queues and exchanges, bind, unbind and read bindings, publish a
    message already in its 1.0 form through an exchange, and consume. Refusals raise
    :class:`~amqp_sansio.broker._refused.Refused` (its codes: :mod:`._refused`)."""

    name: str

    def queue(self, name: str) -> Queue | None:
        """The queue ``name``, if there is one."""

    def usable_queue(self, name: str, owner: object | None) -> Queue:
        """The queue ``name`` for ``owner``'s connection (404 none, 405 exclusive)."""

    def declare_exchange(
        self,
        name: str,
        type: str,
        *,
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: Mapping[str, Any] | None = None,
    ) -> object: ...

    def delete_exchange(self, name: str, *, if_unused: bool = False) -> None: ...

    def query_exchange(self, name: str) -> tuple[str, bool, Mapping[str, Any]] | None: ...

    def bindings_of(
        self, exchange: str
    ) -> Sequence[tuple[tuple[str, str], str, Mapping[str, Any]]]:
        """The bindings from ``exchange``: (destination kind and name, key, arguments)."""

    def bind(
        self,
        destination: tuple[Literal["queue", "exchange"], str],
        source: str,
        routing_key: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        owner: object | None = None,
    ) -> None: ...

    def unbind(
        self,
        destination: tuple[Literal["queue", "exchange"], str],
        source: str,
        routing_key: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        owner: object | None = None,
    ) -> None: ...

    def declare_queue(
        self,
        name: str,
        *,
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: Mapping[str, Any] | None = None,
        owner: object | None = None,
    ) -> tuple[Node, int, int]: ...

    def delete_queue(
        self,
        name: str,
        *,
        if_unused: bool = False,
        if_empty: bool = False,
        owner: object | None = None,
    ) -> int: ...

    def purge_queue(self, name: str, *, owner: object | None = None) -> int: ...

    def query_queue(
        self, name: str
    ) -> tuple[Queue, bool, bool, bool, Mapping[str, Any]] | None: ...

    def publish_message(
        self, exchange: str, routing_key: str, data: bytes, headers: Mapping[str, Any] | None = None
    ) -> Any:
        """Route ``data`` (an encoded 1.0 message); what it did (``routed``, ``refused``,
        ``durable``)."""

    def publish_stored(
        self,
        exchange: str,
        routing_key: str,
        template: StoredMessage,
        headers: Mapping[str, Any] | None = None,
    ) -> Any:
        """Route a message its protocol has read already (as ``parse_message`` reads one,
        with its :class:`~amqp_sansio.broker._store.Native` form); as :meth:`publish_message`."""

    def consumer_added(self, queue: Queue) -> None: ...

    def consumer_removed(self, queue: Queue) -> None: ...

    def owner_gone(self, owner: object) -> None:
        """``owner``'s connection ended: its exclusive queues go."""
