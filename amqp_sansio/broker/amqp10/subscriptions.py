"""The topic subscriptions one 1.0 connection keeps (see :mod:`.._subscriptions`): which
subscription a consumer's attach resumes, replaces or makes; its suspension when the link
goes without closing (core spec 2.6.6), with the deliveries it had unsettled parked until a
disposition settles them (2.6.4) or a resume does (2.6.13); and the expiry timers that wait
for the end of a session or of the connection (3.5.6).

:class:`KeptSubscriptions` owns that state for its connection, and is the
:class:`~.._subscriptions.Holder` its subscriptions and their parked deliveries name."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ...definitions.amqp10.messaging import Source, TerminusExpiryPolicy
from ...errors import LocalProtocolError
from .._nodes import Queue, Topic, error
from .._subscriptions import Subscription
from .outcomes import DEFAULT_OUTCOME, OUTCOMES, apply_outcome

if TYPE_CHECKING:
    from ...definitions.amqp10.performatives import Error
    from ...engine.amqp10.connection import Connection
    from ...engine.amqp10.link import Delivery
    from ...engine.amqp10.sender import Sender
    from ...engine.amqp10.session import Session
    from ...events import DeliveryUpdated
    from .._store import StoredMessage
    from .interface import Broker10

__all__ = ["KeptSubscriptions"]


class KeptSubscriptions:
    """The subscriptions of one connection (``engine``, the server engine: its peer's
    container-id names them) on ``broker``: those suspended here whose timer waits for a
    session's or the connection's end, and the deliveries of their detached links still
    unsettled."""

    def __init__(self, broker: Broker10, engine: Connection) -> None:
        self._broker = broker
        self._engine = engine
        #: Deliveries of suspended subscriptions' detached links, still unsettled: a
        #: disposition may yet settle them (core spec 2.6.4).
        self._parked: dict[Delivery, tuple[Subscription, StoredMessage]] = {}
        #: Subscriptions suspended here whose expiry timer waits for the end of their
        #: session or of the connection (3.5.6).
        self._kept: set[Subscription] = set()

    def _key(self, link: Sender) -> tuple[str, str]:
        remote = self._engine.remote
        return ("" if remote is None else str(remote.container_id), link.name)

    def source(self, link: Sender) -> Source | None:
        """The source of the suspended subscription this client keeps under the link's
        name, if there is one."""
        subscription = self._broker.subscriptions.get(self._key(link))
        if subscription is None or subscription.consumer is not None:
            return None
        return subscription.source

    def attach(
        self, link: Sender, topic: Topic, source: Source, answered: Source
    ) -> Subscription | Error:
        """The subscription a topic consumer's attach resumes (same container-id, link
        name, address and filter-set), replaces (a changed address or filter), or makes;
        or why not (``amqp:resource-locked``: attached on another link;
        ``amqp:resource-limit-exceeded``: too many kept)."""
        broker = self._broker
        key = self._key(link)
        container = key[0]
        subscription = broker.subscriptions.get(key)
        if subscription is not None:
            if subscription.consumer is not None:
                return error(
                    "amqp:resource-locked",
                    f"the subscription {link.name!r} of {container!r} is attached on another link",
                )
            if subscription.topic is topic and subscription.same(source):
                subscription.answered = answered
                broker.save_subscription(subscription)
                return subscription
            # Replaced (a new address or filter): its topic is about to be used again.
            broker.delete_subscription(subscription, release=False)
        why = broker.room_for_subscription(container)
        if why is not None:
            return error("amqp:resource-limit-exceeded", why)
        subscription = Subscription(
            broker.new_subscription_id(),
            key,
            topic,
            Queue(broker, topic.address),
            source,
            answered,
        )
        broker.register_subscription(subscription)
        broker.save_subscription(subscription)
        return subscription

    def resume(self, subscription: Subscription, consumer: Any) -> None:
        """A consumer attached to a kept subscription: its timer stops (3.5.6), and each
        delivery unsettled at its detach is settled as the client's attach says (2.6.13):
        an outcome in the attach's unsettled map (or a disposition that reached the
        detached link since) applies; otherwise the message is available again at the head
        of the buffer, counted as a failed delivery (delivery-count + 1), and goes out
        first. Deliveries of the suspended link that the engine carried over to this one
        (a re-attach on the same session) are settled with the same outcome."""
        if subscription.conn is not None:
            subscription.conn.forget_subscription(subscription)
        subscription.unpark()
        subscription.consumer = consumer
        subscription.conn = self
        link = consumer.link
        subscription.session = link.session
        subscription.expires = None
        remote = link.remote
        theirs = (remote.unsettled if remote is not None else None) or {}
        carried = dict(link.unsettled)
        buffer = subscription.buffer
        unsettled, subscription.unsettled = subscription.unsettled, {}
        for tag, message in unsettled.items():
            delivery = carried.pop(tag, None)
            state = theirs.get(tag)
            if state is None and delivery is not None:
                state = delivery.remote_state
            outcome = state if isinstance(state, OUTCOMES) else DEFAULT_OUTCOME
            apply_outcome(self._broker, consumer, message, buffer, outcome)
            if delivery is not None and not delivery.settled:
                link.settle(delivery, None if outcome is state else outcome)

    def suspend(
        self, subscription: Subscription, inflight: dict[Delivery, tuple[StoredMessage, Any]]
    ) -> None:
        """The subscription's link went without closing: the subscription waits, its
        ``inflight`` deliveries (unsettled, with their message) parked, and its expiry
        timer starts as its policy says (3.5.6)."""
        for delivery, (message, _) in inflight.items():
            subscription.unsettled[delivery.tag] = message
            subscription.parked[delivery] = self
            self._parked[delivery] = (subscription, message)
        subscription.consumer = None
        policy = subscription.policy
        if policy is TerminusExpiryPolicy.LINK_DETACH:
            self._broker.start_subscription_timer(subscription)
        elif policy is not TerminusExpiryPolicy.NEVER:
            self._kept.add(subscription)  # until its session or this connection ends

    def ended(self, session: Session | None) -> None:
        """``session`` (None: the connection) ended: the timers of the subscriptions
        suspended here that waited for it start (3.5.6)."""
        for subscription in list(self._kept):
            if subscription.waits_for(session):
                self._kept.discard(subscription)
                self._broker.start_subscription_timer(subscription)

    def holds(self, delivery: Delivery) -> bool:
        """Whether ``delivery`` is one of a suspended subscription's detached link."""
        return delivery in self._parked

    def settle_parked(self, event: DeliveryUpdated) -> None:
        """The client settled a delivery of a suspended subscription's detached link (a
        detached link's deliveries live on, core spec 2.6.4): its outcome applies now, as
        it would in the unsettled map of a re-attach (2.6.13)."""
        delivery = event.delivery
        state = event.state
        terminal = isinstance(state, OUTCOMES)
        if not terminal and not event.settled:
            return
        # (Parked while, and only while, the subscription holds it unsettled: a resume or
        # a deletion unparks its deliveries.)
        subscription, message = self._parked.pop(delivery)
        del subscription.parked[delivery]
        del subscription.unsettled[delivery.tag]
        apply_outcome(
            self._broker, None, message, subscription.buffer, state if terminal else DEFAULT_OUTCOME
        )
        if not delivery.settled:
            with contextlib.suppress(LocalProtocolError):  # (its session may be ending)
                delivery.link.settle(delivery)

    def forget_subscription(self, subscription: Subscription) -> None:
        """``subscription``, suspended here, was resumed elsewhere or deleted."""
        self._kept.discard(subscription)

    def forget_parked(self, delivery: Any) -> None:
        """A delivery of a suspended subscription's link was resumed or dropped."""
        self._parked.pop(delivery, None)
