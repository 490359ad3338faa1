"""The written interface between the broker's protocol-free core and its protocol folders
(:mod:`.amqp10`, :mod:`.amqp091`): what a connection may ask of the broker
(:class:`ConnectionBroker`) and what the broker asks of a connection (:class:`Peer`),
as :class:`~amqp_sansio.broker._nodes.NodeBroker` is what a node asks of its broker.

The core imports no protocol folder; a protocol folder gets the broker only as a
:class:`ConnectionBroker` (or its own extension of it, naming what that protocol keeps on
the broker: 1.0's ``$management`` node, 0-9-1's virtual hosts), and the broker sees its
connections only as :class:`Peer`. Time is never read from a clock: ``now`` (the engines'
deadlines) and ``wall`` (message expiry) are given by the caller of every input."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ._nodes import NodeBroker

if TYPE_CHECKING:
    from ._nodes import Node, Queue
    from ._replies import DirectReplies
    from ._streams import Stream
    from ._subscriptions import Subscription

__all__ = ["DEFAULT_VHOST", "ConnectionBroker", "HostedQueues", "Peer"]

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
