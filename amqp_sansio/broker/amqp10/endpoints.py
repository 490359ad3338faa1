"""The broker's link ends: a consumer (a link on which the broker sends from a node) and a
producer (a link on which it receives, to a node or, on the anonymous relay, to each message's
``to``)."""

from __future__ import annotations

import logging
import secrets
from typing import TYPE_CHECKING, Any

from ...codec.amqp10 import Symbol
from ...definitions.amqp10.messaging import Rejected
from ...definitions.amqp10.performatives import Error
from ...engine.amqp10.link import Delivery
from ...engine.amqp10.receiver import Receiver
from ...engine.amqp10.sender import Sender
from ...engine.amqp10.states import ConnectionState, LinkState
from ...errors import DecodeError
from .._nodes import Node, Queue, error
from .._selector import Selector
from .._store import StoredMessage
from .._streams import Stream
from .._subscriptions import Subscription
from .outcomes import taken
from .servicebus import sdk_outcome, sequenced
from .transactions import unroutable_in_txn

if TYPE_CHECKING:
    from .._config import BrokerConfig
    from .interface import Connection10


_ATTACHED = LinkState.ATTACHED
_OPENED = ConnectionState.OPENED


_UINT_MAX = 0xFFFFFFFF
#: The message size a publisher's first credit assumes (bytes): its first grant is the
#: same as before the byte budgets (``link_credit``, 1,000, within 4 MiB), and a larger
#: message lowers it at once; what was sent on it meanwhile is bounded while the resource
#: alarm is on by ``BrokerConfig.connection_credit_bytes``.
ASSUMED_SIZE = 4096

#: The broker's log (the command prints it): what a client is not told otherwise.
log = logging.getLogger("amqp_sansio.broker")

#: The link error of a message larger than the receiver's max-message-size (core spec 2.8.15).
MESSAGE_SIZE_EXCEEDED = Symbol("amqp:link:message-size-exceeded")


class _Consumer:
    """A link on which the broker sends (the client receives) from a node."""

    __slots__ = (
        "blocked",
        "conn",
        "copy",
        "cursor",
        "default",
        "inflight",
        "link",
        "lock_tokens",
        "node",
        "queue",
        "selector",
        "subscription",
    )

    def __init__(
        self, conn: Connection10, link: Sender, node: Node, *, copy: bool, default: Any
    ) -> None:
        self.conn = conn
        self.link = link
        self.node = node
        self.queue: Queue | Stream | None = None
        self.copy = copy
        self.cursor = 0
        self.default = default
        #: Its selector (a source's selector filter), None if it has none.
        self.selector: Selector | None = None
        #: The unsettled deliveries sent and what they carry.
        self.inflight: dict[Delivery, tuple[StoredMessage, Queue]] = {}
        #: The kept topic subscription this link consumes, if it is one (._subscriptions).
        self.subscription: Subscription | None = None
        #: It has credit, but as many unsettled deliveries as the link may hold
        #: (``BrokerConfig.max_unsettled_per_link``): a settlement dispatches again.
        self.blocked = False
        #: A Service Bus link's (see .servicebus): each delivery's tag is a lock token, 16
        #: random bytes (a GUID, as Azure's SDKs read it), not the link's short counter,
        #: and each message carries its sequence number (``x-opt-sequence-number``).
        self.lock_tokens = False

    @property
    def credit(self) -> int:
        link = self.link
        if link.state is not _ATTACHED or self.conn.engine.state is not _OPENED:
            return 0
        cap = link.max_unsettled
        if cap is not None and len(link.unsettled) >= cap:
            self.blocked = True
            return 0
        return link.link_credit

    def deliver(self, message: StoredMessage, queue: Queue) -> None:
        link = self.link
        data = sequenced(message) if self.lock_tokens else message.encoded()
        limit = link.remote_max_message_size
        if limit and len(data) > limit:
            # Too large for this consumer (core spec 2.7.3): never for it.
            if not self.copy:
                message.excluded = (message.excluded or set()) | {self}
                queue.requeue(message)
            self._too_large(len(data), limit)
            return
        delivery = link.send(data, tag=secrets.token_bytes(16) if self.lock_tokens else None)
        self.conn.record.messages_out += 1
        self.conn.broker.has_output(self.conn)
        if self.copy:
            return
        if delivery.settled:  # at-most-once (snd-settle-mode settled)
            taken(self.conn.broker, queue, message)
        else:
            self.inflight[delivery] = (message, queue)

    def _too_large(self, size: int, limit: int) -> None:
        """A message is larger than the receiver's max-message-size: the attempt to deliver
        it is a link error (core spec 2.7.3), so the link is detached with
        ``amqp:link:message-size-exceeded`` (2.8.15) and the receiver learns it, instead of
        waiting for a message it never gets; the message stays on its node for others. Its
        credit is gone with the detach, so the dispatch passes it by until its end is
        removed (the peer's answer)."""
        link = self.link
        if link.state is not _ATTACHED or self.conn.engine.state is not _OPENED:
            return
        description = f"a message of {size} bytes exceeds the link's max-message-size {limit}"
        link.detach(error=Error(condition=MESSAGE_SIZE_EXCEEDED, description=description))
        self.conn.broker.has_output(self.conn)
        log.warning(
            "detached the link %r from %r of %s: %s (%s)",
            link.name,
            self.node.address,
            self.conn.address or "a client",
            description,
            MESSAGE_SIZE_EXCEEDED,
        )

    def tell_available(self, count: int) -> None:
        """Keep ``count`` (the node's messages not yet taken) as the link's ``available``
        for the next flow the broker sends on it, an echo's answer or a drain's (core spec
        2.6.7): a consumer that asks learns whether the node is empty or only slow."""
        link = self.link
        if link.available != count and link.state is _ATTACHED:
            link.set_available(min(count, _UINT_MAX), send=False)

    def drained(self) -> None:
        if self.link.drain:
            self.link.drained()
            self.conn.broker.has_output(self.conn)


class _Producer:
    """A link on which the broker receives (the client publishes) into a node; ``node`` is
    None on an anonymous-relay link (each message names its node, see :mod:`.relay`)."""

    __slots__ = ("_cap", "_cap_for", "conn", "largest", "link", "node", "reply", "service_bus")

    def __init__(
        self,
        conn: Connection10,
        link: Receiver,
        node: Node | None,
        *,
        reply: str | None = None,
        service_bus: bool = False,
    ) -> None:
        self.conn = conn
        self.link = link
        self.node = node
        #: A link attached to a direct reply-to name: where its messages go (.._replies).
        self.reply = reply
        #: A Service Bus link (attached by a URL: see .servicebus): its outcomes go as the
        #: SDK reads them.
        self.service_bus = service_bus
        #: The largest message (encoded bytes) this link has carried; 0 before the first.
        self.largest = 0
        #: :meth:`credit_cap`'s last answer, and the (largest, publishers) it was for.
        self._cap = 0
        self._cap_for = (-1, 0)

    def credit_cap(self, config: BrokerConfig, publishers: int) -> int:
        """The credit the broker keeps open on this link (core spec 2.6.7: the receiver
        sets it): ``link_credit``, less where that many of the largest message it has
        carried (:data:`ASSUMED_SIZE` before its first) would pass ``link_credit_bytes``
        or this link's share of ``connection_credit_bytes`` (divided among the
        connection's ``publishers``); one at least."""
        if self._cap_for == (self.largest, publishers):
            return self._cap
        self._cap_for = (self.largest, publishers)
        self._cap = cap = self._credit_cap(config, publishers)
        return cap

    def grew(self, size: int) -> None:
        """This link carried a larger message than before (``size`` bytes): its credit is
        lowered at once where its cap is now lower (core spec 2.6.7: the receiver may lower
        the credit; transfers sent before the sender sees it still arrive, within the limit
        granted)."""
        self.largest = size
        link = self.link
        cap = self.credit_cap(self.conn.broker.config, len(self.conn.producers))
        if link.link_credit > cap and link.state is _ATTACHED:
            link.flow(cap)

    def reject_malformed(self, delivery: Delivery, exc: DecodeError) -> None:
        """A message whose sections the broker reads (header, annotations, properties) do
        not decode, or break their types (annotation keys that are not symbols or ulongs,
        messaging spec 3.2.3): that one message is rejected with ``amqp:decode-error``.
        Broker draft 2.2.1 asks for a session error; the rejection says the same to the
        sender, and its other deliveries, links and sessions go on (a framing error still
        closes the connection)."""
        rejected = Rejected(error=error("amqp:decode-error", f"malformed message: {exc}"))
        if delivery.transaction is not None:
            unroutable_in_txn(self.conn, delivery, rejected)
        elif not delivery.remote_settled:
            self.settle(delivery, rejected)

    def settle(self, delivery: Delivery, state: Any) -> None:
        """Settle a transfer on this link with its outcome ``state``; on a Service Bus
        link, as its SDK reads it (:func:`.servicebus.sdk_outcome`)."""
        self.link.settle(delivery, sdk_outcome(state) if self.service_bus else state)

    def _credit_cap(self, config: BrokerConfig, publishers: int) -> int:
        credit = config.link_credit
        size = self.largest or ASSUMED_SIZE
        budget = config.link_credit_bytes
        shared = config.connection_credit_bytes
        if shared is not None:
            share = shared // max(1, publishers)
            budget = share if budget is None else min(budget, share)
        if not size or budget is None:
            return credit
        return max(1, min(credit, budget // size))
