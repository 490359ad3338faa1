"""What an outcome does to a message a 1.0 consumer had (core spec 3.4): accepted or
rejected it leaves its queue, released or modified it goes back (its delivery-count and
annotations changed as ``modified`` says), unless it expired meanwhile. Used by the
connection, its endpoints and transactions alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...definitions.amqp10.messaging import Accepted, Modified, Rejected, Released
from .servicebus import dead_lettered

if TYPE_CHECKING:
    from .._interface import ConnectionBroker
    from .._nodes import Queue
    from .._store import StoredMessage

__all__ = ["DEFAULT_OUTCOME", "OUTCOMES", "applied", "apply_outcome", "taken"]

_REJECTED = Rejected()
#: The terminal outcomes (core spec 3.4).
OUTCOMES = (Accepted, Rejected, Released, Modified)
#: What happens to a delivery left unsettled on a lost link, unless the consumer's source
#: says otherwise: the message is made available again and counted as a failed attempt, so
#: that its next consumer sees a delivery-count above zero, the sign of a possible duplicate
#: (broker draft 2.3.7 option 1; core spec 3.2.1, 3.4.5).
DEFAULT_OUTCOME = Modified(delivery_failed=True)


def apply_outcome(
    broker: ConnectionBroker, consumer: Any, message: StoredMessage, queue: Queue, outcome: Any
) -> None:
    """What an outcome does to the message (core spec 3.4)."""
    kind = type(outcome)
    if kind is Accepted or kind is Rejected:
        if kind is Rejected:  # (with the SDK's reason, if it gives one: .servicebus)
            queue.dead_letter(dead_lettered(message, outcome, broker.wall), "rejected")
        taken(broker, queue, message)
        return
    changed = False
    if kind is Modified:
        if outcome.delivery_failed:
            message.delivery_count += 1
            changed = True
        if outcome.undeliverable_here and consumer is not None:
            message.excluded = (message.excluded or set()) | {consumer}
        if outcome.message_annotations:
            message.annotate(outcome.message_annotations)
            changed = True
    if message.expires is not None and message.expires <= broker.wall:
        queue.acquired -= 1
        message.dropped = True
        broker.store.remove(queue, message)
        broker.let_go(message)
        queue.expired(message)
        if queue.emptied():
            broker.delete_node(queue)
        elif not queue.links:
            broker.release(queue)
        return
    if changed:
        broker.store.update(queue, message)
    queue.requeue(message)
    broker.wake(queue)


def applied(outcome: Any) -> Any:
    """The outcome the broker settles a consumer's delivery with, once it has applied the
    consumer's ``outcome`` (core spec 2.6.12: the sender settles with the state it took):
    the same kind, without what the consumer added (a ``rejected``'s error, a
    ``modified``'s message-annotations: the consumer's own, and perhaps too large for
    its frames); Azure's SDKs check that it matches what they sent."""
    kind = type(outcome)
    if kind is Rejected:
        return _REJECTED
    if kind is Modified and outcome.message_annotations:
        return Modified(
            delivery_failed=outcome.delivery_failed,
            undeliverable_here=outcome.undeliverable_here,
        )
    return outcome


def taken(broker: ConnectionBroker, queue: Queue, message: StoredMessage) -> None:
    """``message`` left ``queue`` for good (accepted, rejected): the queue may go."""
    if queue.settled(message):
        broker.delete_node(queue)
    elif not queue.links:
        broker.release(queue)
