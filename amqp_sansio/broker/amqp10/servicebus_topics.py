"""Service Bus topics and their subscriptions, as the SDKs use them (``azure-servicebus``'s
``get_topic_sender`` and ``get_subscription_receiver``), for a broker with no configuration
of its entities: what :mod:`.servicebus` does for a queue, done for each subscription.

Service Bus is not a standard: what is here is what its SDKs send (the Service Bus AMQP
protocol guide; the SDK's ``_common/receiver_mixins.py``, which names a subscription
``<topic>/Subscriptions/<subscription>``), on top of the core spec. ``docs/azure.rst``
("Topics and subscriptions") says what is served.

* **Names.** A subscription's path is ``<topic>/subscriptions/<name>`` (:func:`canonical`:
  the ``Subscriptions`` segment in any case, as Service Bus takes it, is spelled
  ``subscriptions``; so are its ``$management`` and ``$deadletterqueue`` below it).
* **A subscription is a queue.** A Service Bus link attached to a subscription's path
  (:func:`subscription`) makes, on first use, the topic (an :class:`EntityTopic`, a
  :class:`~amqp_sansio.broker.Topic`, at ``<topic>``) and the subscription: a
  :class:`~amqp_sansio.broker.Queue` at the subscription's path, registered with its topic
  (:class:`EntitySubscription`), which copies each message sent to the topic into every
  subscription's queue (core spec 3.4: each copy a message of its own). The queue is the
  broker's node at that path, so what a queue serves a subscription serves the same way:
  receive-and-delete and peek-lock; complete, abandon, dead-letter to
  ``<topic>/subscriptions/<name>/$deadletterqueue``; ``peek-message`` and ``renew-lock``
  on ``<topic>/subscriptions/<name>/$management``. It is not deleted when its receivers
  detach (as Service Bus keeps a subscription until it is deleted): what is sent to the
  topic while no receiver is attached waits there.
* **A name is a topic once it has a subscription.** A sender to ``<topic>`` finds the
  topic node; a name that has no subscription is a queue, as any other. A subscription of
  a name that is a queue in use (a link attached, or messages held) is refused
  (``amqp:not-found``, the link's attach answered with no terminus); an unused queue made
  on first use gives way to the topic. So is a new subscription beyond
  ``BrokerConfig.max_subscriptions`` (counted with the kept topic subscriptions of
  :mod:`.._subscriptions`).
* **Tokens.** A put-token's audience is mapped by the same :func:`canonical`, so a token
  for the topic (``sb://host/<topic>``) covers its subscriptions, and a key scoped to the
  topic's entity signs tokens for them (:mod:`.cbs`).

Everything here is I/O-free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._nodes import Queue, Topic
from .._store import StoredMessage

if TYPE_CHECKING:
    from .interface import Broker10

__all__ = [
    "SUBSCRIPTIONS",
    "EntitySubscription",
    "EntityTopic",
    "canonical",
    "subscription",
    "subscription_of",
]

#: The path segment between a topic's name and its subscription's.
SUBSCRIPTIONS = "subscriptions"


def canonical(path: str) -> str:
    """``path`` with the segment after its first (``<topic>/Subscriptions/...``) spelled
    :data:`SUBSCRIPTIONS` when it is that word in any case; any other path as it is."""
    topic, slash, rest = path.partition("/")
    segment, slash2, tail = rest.partition("/")
    if slash2 and segment != SUBSCRIPTIONS and segment.lower() == SUBSCRIPTIONS:
        return f"{topic}{slash}{SUBSCRIPTIONS}/{tail}"
    return path


def subscription_of(address: str) -> tuple[str, str] | None:
    """The topic and the subscription name of a subscription's path
    (``orders/subscriptions/audit`` -> ``("orders", "audit")``), or None for any other
    address (a name with a ``$``, another segment, or an empty one, is not)."""
    parts = canonical(address).split("/")
    if len(parts) != 3 or parts[1] != SUBSCRIPTIONS:
        return None
    topic, _, name = parts
    if not topic or not name or "$" in topic or "$" in name:
        return None
    return topic, name


class EntitySubscription:
    """A subscription as its :class:`~amqp_sansio.broker.Topic` sees it (a
    :class:`~._nodes.KeptBuffer`): ``buffer``, the queue at the subscription's path; no
    selector (it takes every message)."""

    selector = None

    def __init__(self, buffer: Queue) -> None:
        self.buffer = buffer

    def __repr__(self) -> str:
        return f"<EntitySubscription {self.buffer.address!r}>"


class EntityTopic(Topic):
    """A topic made for its subscriptions: a subscription's queue deleted (by a management
    client) is dropped from it before the next message is copied."""

    def offer(self, message: StoredMessage) -> str | None:
        gone = [key for key, queue in self.subscriptions.items() if queue.deleted]
        for key in gone:
            del self.subscriptions[key]
        return super().offer(message)


def subscription(broker: Broker10, address: str) -> Queue | None:
    """The queue of the subscription at ``address`` (a path :func:`subscription_of`
    takes), made with its topic on first use; None if its topic's name is a queue in use
    (see the module's docstring)."""
    parsed = subscription_of(address)
    assert parsed is not None, "subscription() takes a subscription's path"
    name = parsed[0]
    topic = broker.nodes.get(name)
    if not broker.config.auto_create and broker.nodes.get(address) is None:
        return None  # (made on first use only where the broker makes nodes so)
    if isinstance(topic, Queue) and topic.unused():
        broker.delete_node(topic)  # (made by a mere attach, and left empty)
        topic = None
    if topic is None:
        topic = broker.nodes[name] = EntityTopic(broker, name)
    if not isinstance(topic, Topic):
        return None
    queue = broker.nodes.get(address)
    if queue is None:
        if not _room(broker):
            return None
        queue = broker.declare(address)
    if not isinstance(queue, Queue):
        return None
    queue.auto = False  # (kept with no link and no message, as Service Bus keeps it)
    if all(buffer is not queue for buffer in topic.subscriptions.values()):
        topic.subscriptions[EntitySubscription(queue)] = queue
    return queue


def _room(broker: Broker10) -> bool:
    """Whether another subscription may be made: those of the broker's topics made here
    (counted from the topics themselves, so there is no second record to keep) and its kept
    ones (:mod:`.._subscriptions`) count together against ``max_subscriptions`` (each is
    kept with no link, so without a bound a client could make them without end)."""
    limit = broker.config.max_subscriptions
    if limit is None:
        return True
    made = sum(
        1
        for node in broker.nodes.values()
        if isinstance(node, EntityTopic)
        for queue in node.subscriptions.values()
        if not queue.deleted
    )
    return made + len(broker.subscriptions) < limit
