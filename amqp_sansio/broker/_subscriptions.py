"""Topic subscriptions that outlive their links: terminus durability and expiry (core spec
3.5.3 ``durable``, ``expiry-policy``, ``timeout``; 3.5.5; 3.5.6), detaching without closing
(2.6.6) and resuming (2.6.13).

A consumer of a topic has a buffer of its own (a private :class:`~._nodes.Queue`). When its
source's expiry policy asks for the terminus to outlive a detach (any policy but
``link-detach``, or ``link-detach`` with a timeout), the broker keeps that buffer as a
:class:`Subscription`, named by the client's container-id and the link name (2.6.1: the
pair identifies the link). A detach that does not close the link (``closed=false``), the
end of its session or the loss of its connection suspends the subscription: the buffer goes
on taking the topic's messages, and the deliveries it had unsettled stay acquired. The
expiry timer starts as the policy says (3.5.6: at the detach, when the most recently
associated session ends, when the connection closes, or never) and counts ``timeout``
seconds on the broker's wall clock (:meth:`Broker.expire <amqp_sansio.broker.Broker.expire>`);
a re-attach before then resumes the subscription and stops it. A closing detach
(``closed=true``) deletes it.

A re-attach with the same container-id and link name resumes it when it names the same
address and the same filter-set; one that changes either replaces it (the old buffer is
dropped, as a JMS durable subscriber that changes its topic or selector unsubscribes and
subscribes anew). On resuming, each delivery unsettled at the detach is settled as the
client's attach says (2.6.13): an outcome in its unsettled map applies; anything else
(no entry, a non-terminal state, no map) makes the message available again at the head of
the buffer, counted as a failed delivery (delivery-count + 1, first-acquirer false: the
sign of a possible duplicate, 3.2.1), so that it goes out first, before the messages
published while the subscription was suspended, in their order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ..definitions.amqp10.messaging import Source, TerminusDurability, TerminusExpiryPolicy
from ._store import StoredMessage

if TYPE_CHECKING:
    from ._nodes import Queue, Topic

__all__ = ["Holder", "Subscription", "keeps"]

_LINK_DETACH = TerminusExpiryPolicy.LINK_DETACH
_SESSION_END = TerminusExpiryPolicy.SESSION_END


class Holder(Protocol):
    """The connection a subscription was last attached on, as the subscription (and the
    broker, deleting it) sees it."""

    def forget_subscription(self, subscription: Subscription) -> None:
        """``subscription``, suspended there, was resumed elsewhere or deleted."""

    def forget_parked(self, delivery: Any) -> None:
        """A delivery of a suspended subscription's link was resumed or dropped."""


def keeps(source: Source) -> bool:
    """Whether a consumer with this (answered) source keeps its subscription past a detach
    that does not close the link (3.5.6)."""
    return source.expiry_policy is not _LINK_DETACH or source.timeout > 0


class Subscription:
    """A topic subscription kept by the broker: ``key`` is ``(container-id, link name)``,
    ``source`` the source as the client asked for it (address, filter-set) and
    ``answered`` as the broker answered it (durability, expiry policy, timeout it
    honours); ``buffer`` the messages kept for it; ``consumer`` its link while attached.
    ``unsettled`` are the messages it had unsettled at its detach, by delivery-tag, in
    delivery order. ``expires`` is when (wall clock) it expires, once its timer runs."""

    def __init__(
        self,
        ident: int,
        key: tuple[str, str],
        topic: Topic,
        buffer: Queue,
        source: Source,
        answered: Source,
    ) -> None:
        self.ident = ident
        self.key = key
        self.topic = topic
        self.buffer = buffer
        self.source = source
        self.answered = answered
        self.consumer: Any = None
        self.unsettled: dict[bytes, StoredMessage] = {}
        #: The engine deliveries behind ``unsettled``, with the connection that holds them:
        #: a disposition on the detached link may still settle one (2.6.4).
        self.parked: dict[Any, Holder] = {}
        self.expires: float | None = None
        #: What the suspended subscription waits for before its timer starts: the
        #: connection it was last attached on, and for ``session-end`` its session.
        self.conn: Holder | None = None
        #: (The session its link was on, only ever compared by identity.)
        self.session: object | None = None
        self.deleted = False
        #: What selects the messages its buffer takes (None: all); the consumer's, kept
        #: while the subscription is suspended.
        self.selector: Any = None
        buffer.subscription = self

    def __repr__(self) -> str:
        state = "attached" if self.consumer is not None else "suspended"
        return f"<Subscription {self.key!r} {self.topic.address!r} {state}>"

    @property
    def policy(self) -> TerminusExpiryPolicy:
        return self.answered.expiry_policy

    @property
    def durable(self) -> TerminusDurability:
        """What of it a durable store keeps (3.5.5): nothing, its existence and
        configuration, or also its durable messages (those waiting and those unsettled)."""
        return self.answered.durable

    def same(self, source: Source) -> bool:
        """Whether a re-attach with ``source`` resumes this subscription (the same address
        and filter-set) rather than replacing it."""
        return source.address == self.source.address and source.filter == self.source.filter

    def unpark(self) -> None:
        """Forget the detached link's deliveries (resumed, or deleted)."""
        for delivery, conn in self.parked.items():
            conn.forget_parked(delivery)
        self.parked = {}

    def waits_for(self, session: object | None) -> bool:
        """Whether the end of ``session`` (None: of the connection) starts the timer of
        this subscription, suspended on that connection with a ``session-end`` or
        ``connection-close`` policy (3.5.6)."""
        if session is None:
            return True  # the connection ended: its sessions too
        return self.policy is _SESSION_END and self.session is session
