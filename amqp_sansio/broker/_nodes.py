"""The broker's nodes (broker draft 2.1): queues, topics and dynamic nodes.

A node holds messages and the links attached to it. Consumers of a queue share it round
robin (distribution-mode ``move``, core spec 3.5.3) or browse it (``copy``: they see the
messages without taking them). A topic copies each message to every subscriber's own
buffer. A dynamic node (core spec 3.5.3 ``dynamic``) has a random name and a lifetime policy
(3.5.10-3.5.13) that deletes it.
"""

from __future__ import annotations

import abc
import bisect
from collections import deque
from typing import Any, Protocol, runtime_checkable

from ..codec.amqp10 import Symbol
from ..definitions.amqp10.messaging import (
    DeleteOnClose,
    DeleteOnNoLinks,
    DeleteOnNoLinksOrMessages,
    DeleteOnNoMessages,
    LifetimePolicy,
)
from ..definitions.amqp10.performatives import Error
from ._config import DROP_HEAD, BrokerConfig
from ._selector import MessageFields, Selector
from ._store import StoredMessage

__all__ = [
    "KeptBuffer",
    "MemoryStore",
    "Node",
    "NodeBroker",
    "Queue",
    "Store",
    "SubscriptionStore",
    "OWN_PREFIX",
    "Topic",
    "error",
    "no_node",
    "own_name",
]

#: What the addresses of the broker's own nodes begin with (1.0's ``$management`` and
#: ``$cbs``), or a part of them after a ``/`` (Azure's ``queue/$management``): a node by
#: such a name is never made on first use (``docs/cbs.rst``).
OWN_PREFIX = "$"


def own_name(address: str) -> bool:
    """Whether ``address`` is a name of the broker's own nodes' kind (:data:`OWN_PREFIX`
    first, or after a ``/``), never made on first use."""
    return address.startswith(OWN_PREFIX) or "/" + OWN_PREFIX in address


def error(condition: str, description: str) -> Error:
    """The error the broker answers with (core spec 2.8.14): its condition by the symbol's
    name (``amqp:not-found``, ...) and a description for people."""
    return Error(condition=Symbol(condition), description=description)


def no_node(address: str) -> str:
    """Why a link to ``address`` is refused with ``amqp:not-found``: there is no such node
    (and, for a name of :data:`OWN_PREFIX`, none will be made)."""
    shown = address if len(address) <= 256 else address[:256] + "..."
    if own_name(address):
        return (
            f"no node {shown!r}: an address beginning with {OWN_PREFIX!r} (or with a part "
            f"after a '/' that does) names one of the broker's own nodes, never one made "
            "on first use"
        )
    return f"no node {shown!r}"


# -- the store nodes write to (the broker's, or an adapter's) ----------------------------


class Store(Protocol):
    """Where the broker keeps the messages of its nodes. ``put`` is called when a node takes
    a message; ``remove`` when it lets it go for good (accepted, expired, dead-lettered, node
    deleted); ``update`` when a message a node holds changed (a ``modified`` outcome
    incremented its delivery-count or merged message-annotations, core spec 3.4.5).

    ``flush`` is called once at the end of each input the broker handles (and after a
    connection is lost, and after expiry), before it settles the publishers' transfers of
    the *durable* messages that input brought (broker draft 2.2.4: stored safely before
    settling) and before it accepts a commit (core spec 4.4.4), and before any of that
    input's answers go out: a store that writes a journal syncs it there, once for all of
    them (group commit), and does nothing when nothing changed. Non-durable messages are
    settled at once; a store need not keep them, nor the messages of nodes that are not
    :attr:`~amqp_sansio.broker.Node.persistent`."""

    def put(self, node: Node, message: StoredMessage) -> None: ...

    def remove(self, node: Node, message: StoredMessage) -> None: ...

    def update(self, node: Node, message: StoredMessage) -> None: ...

    def flush(self) -> None: ...


@runtime_checkable
class SubscriptionStore(Protocol):
    """A :class:`Store` that also keeps topic subscriptions across a restart (core spec
    3.5.5 terminus durability ``configuration`` and ``unsettled-state``): the broker
    answers a subscriber's durability as asked only with such a store (else ``none``).
    ``keep_subscription`` records (or records again, changed) a subscription's identity:
    its number, the client's container-id, the link name, and its source (the encoded
    :class:`~amqp_sansio.Source` the client asked for, and the one the broker answered);
    ``forget_subscription`` deletes it. Both take effect at the next ``flush``. The
    messages of a subscription's buffer are ``put`` with the buffer as their node (its
    ``subscription`` says which), when it is
    :attr:`~amqp_sansio.broker.Node.persistent`."""

    def keep_subscription(
        self, ident: int, container_id: str, link_name: str, source: bytes, answered: bytes
    ) -> None: ...

    def forget_subscription(self, ident: int) -> None: ...


class MemoryStore:
    """The default store: messages live in the nodes' memory only; nothing survives the
    process."""

    def put(self, node: Node, message: StoredMessage) -> None:
        pass

    def remove(self, node: Node, message: StoredMessage) -> None:
        pass

    def update(self, node: Node, message: StoredMessage) -> None:
        pass

    def flush(self) -> None:
        pass


class KeptBuffer(Protocol):
    """A topic subscription kept past its link (:mod:`._subscriptions`), as its topic sees
    it: the buffer that holds its messages."""

    @property
    def buffer(self) -> Queue: ...


class NodeBroker(Protocol):
    """What a node needs of its broker (a :class:`~amqp_sansio.broker.Broker`): the
    configuration and store, the node registry, the wall clock, counters, sequence numbers
    for the copies a node makes, and an expiry watch on the messages a queue holds."""

    config: BrokerConfig
    store: Store
    nodes: dict[str, Node]
    wall: float
    expired: int
    overflowed: int

    def next_seq(self) -> int: ...

    def watch_expiry(self, message: StoredMessage, queue: Queue) -> None: ...

    def hold(self, message: StoredMessage) -> None: ...

    def let_go(self, message: StoredMessage) -> None: ...

    def watch_age(self, stream: Node, when: float) -> None: ...

    def dead_letter(self, message: StoredMessage) -> None: ...


class Consumer(Protocol):
    """What a node needs of a consumer (a link on which the broker sends)."""

    copy: bool
    cursor: int
    #: Its credit is held back: it holds as many unsettled deliveries as it may
    #: (``BrokerConfig.max_unsettled_per_link``); a drain then gives the credit back.
    blocked: bool
    #: Its selector (None: it takes every message).
    selector: Selector | None

    @property
    def credit(self) -> int: ...

    def deliver(self, message: StoredMessage, node: Node) -> None: ...

    def tell_available(self, count: int) -> None: ...

    def drained(self) -> None: ...


def selects(selector: Selector, message: StoredMessage, address: str) -> bool:
    """Whether ``selector`` is TRUE for ``message`` at the node at ``address``; the message
    is read once, and each selector's verdict kept with it."""
    fields = message.selection
    if fields is None:
        fields = message.selection = MessageFields(message.data, address=address)
    verdict = fields.verdicts.get(selector)
    if verdict is None:
        verdict = fields.verdicts[selector] = selector.matches(fields)
    return verdict  # type: ignore[no-any-return]


class Node(abc.ABC):
    """A named node of the broker. ``links`` are the links attached to it (consumers and
    producers); ``policy`` the lifetime policy of a dynamic node (None for others) and
    ``creator`` the link whose attach made it."""

    kind = "node"

    def __init__(
        self,
        broker: NodeBroker,
        address: str,
        *,
        dynamic: bool = False,
        policy: LifetimePolicy | None = None,
    ) -> None:
        self.broker = broker
        self.address = address
        self.dynamic = dynamic
        self.policy = policy
        self.creator: Any = None
        self.links: set[Any] = set()
        self.deleted = False
        #: Made on first use, and deleted once unused (``BrokerConfig.auto_delete``): see
        #: :meth:`unused`.
        self.auto = False
        self._had_links = False
        self._had_messages = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.address!r}>"

    @property
    def persistent(self) -> bool:
        """Whether a durable store keeps this node's durable messages: a queue the broker
        names at its address, a queue of another 0-9-1 virtual host that names it (its
        ``vhost``), and the buffer of a topic subscription whose durability is
        ``unsettled-state`` (core spec 3.5.5, see :mod:`._subscriptions`); not a queue 0-9-1
        declared transient (not durable, or exclusive). A dynamic node
        (whose lifetime ends with its links, core spec 3.5.10-3.5.13) and other topic
        subscribers' buffers do not outlive the process."""
        subscription = getattr(self, "subscription", None)
        if subscription is not None:
            return subscription.durable == 2 and not subscription.deleted  # unsettled-state
        if self.kind != "queue" or self.dynamic or getattr(self, "transient", False):
            return False
        vhost = getattr(self, "vhost", None)
        if vhost is not None:
            return vhost.queue(self.address) is self
        return self.broker.nodes.get(self.address) is self

    @property
    @abc.abstractmethod
    def depth(self) -> int:
        """Messages held (available or out with a consumer)."""

    @abc.abstractmethod
    def offer(self, message: StoredMessage) -> str | None:
        """Take a published message; return why not (a limit) or None."""

    @abc.abstractmethod
    def add_consumer(self, consumer: Any) -> None:
        """A consumer attached."""

    @abc.abstractmethod
    def remove_consumer(self, consumer: Any) -> None:
        """A consumer went."""

    def link_added(self, link: object) -> None:
        self.links.add(link)
        self._had_links = True

    def link_removed(self, link: object) -> bool:
        """Forget ``link``; return whether the node's lifetime policy now deletes it."""
        self.links.discard(link)
        policy = self.policy
        if policy is None:
            return False
        if link is self.creator and type(policy) is DeleteOnClose:
            return True
        no_links = self._had_links and not self.links
        if type(policy) is DeleteOnNoLinks:
            return no_links
        if type(policy) is DeleteOnNoLinksOrMessages:
            return no_links or self._no_messages()
        return False

    def _no_messages(self) -> bool:
        return self._had_messages and self.depth == 0

    def unused(self) -> bool:
        """Whether the node was made on first use and is now of no use: no link, nothing
        held (``BrokerConfig.auto_delete``). Only a node the broker names at its address."""
        return (
            self.auto
            and not self.deleted
            and not self.links
            and self.depth == 0
            and self.broker.nodes.get(self.address) is self
        )

    def emptied(self) -> bool:
        """A message left: whether the lifetime policy now deletes the node (3.5.12)."""
        return type(self.policy) in _ON_NO_MESSAGES and self._no_messages()

    def clear(self) -> None:
        """The node is deleted: drop what it holds."""
        self.deleted = True


_ON_NO_MESSAGES = (DeleteOnNoMessages, DeleteOnNoLinksOrMessages)


def _seq(message: StoredMessage) -> int:
    return message.seq


class Queue(Node):
    """A queue: FIFO within each priority, higher priorities first (broker draft 2.2.2,
    2.2.3). A message released goes back to the head of its priority. Expired messages are
    dropped, never sent (broker draft 2.2.5).

    Its priorities (``max_priority``) are AMQP 1.0's unless a 0-9-1 ``queue.declare``
    made or adopted it: None, 1.0's (core spec 3.2.1, ten distinct levels, 0 to 9; a
    header without a priority is 4, above 9 is 9); 0, none (strictly FIFO, a 0-9-1 queue
    without ``x-max-priority``); N (1 to 255), RabbitMQ's ``x-max-priority`` N: the priority
    a 0-9-1 consumer sees on the message, 0 when it has none, N when above. A FIFO queue
    keeps its messages at one level."""

    kind = "queue"

    def __init__(
        self,
        broker: NodeBroker,
        address: str,
        *,
        dynamic: bool = False,
        policy: LifetimePolicy | None = None,
    ) -> None:
        super().__init__(broker, address, dynamic=dynamic, policy=policy)
        self._levels: dict[int, deque[StoredMessage]] = {}
        self._order: list[int] = []  # the priorities present, highest first (negated)
        #: How it orders by priority (see the class): None, 0 or 1 to 255.
        self.max_priority: int | None = None
        #: The messages available (not out with a consumer), by arrival: what browsers see.
        self.available: dict[int, StoredMessage] = {}
        self.bytes = 0
        #: Messages out with consumers, not yet settled.
        self.acquired = 0
        self.consumers: list[Consumer] = []
        self.browsers: list[Consumer] = []
        self._turn = 0
        #: The topic subscription this queue is the buffer of, if it is one that outlives
        #: its link (see :mod:`._subscriptions`).
        self.subscription: Any = None
        #: The 0-9-1 virtual host whose own queue this is, for one other than ``/``
        #: (whose queues are the broker's nodes): None for the broker's nodes.
        self.vhost: Any = None
        #: Messages put back at the front of a priority (given back, or restored) so far.
        self._returns = 0
        #: Per consumer with a selector: (``_returns`` then, and per priority the last seq
        #: up to which every message there was found not for it); see :meth:`_select`.
        self._passed: dict[Consumer, tuple[int, dict[int, int]]] = {}
        #: Limits of this queue alone (a 0-9-1 declare's ``x-max-length``,
        #: ``x-max-length-bytes``, ``x-overflow``, ``x-message-ttl``, see
        #: :mod:`.amqp091.vhosts`), within the broker's: None each where it sets none.
        self.max_depth: int | None = None
        self.max_bytes: int | None = None
        self.overflow: str | None = None
        #: Declared by 0-9-1 as not durable (or exclusive): the store keeps none of its
        #: messages (RabbitMQ's rule: a transient queue's messages do not survive a restart).
        self.transient = False
        #: Milliseconds a message may wait here (``x-message-ttl``).
        self.message_ttl: int | None = None
        #: Where this queue's dead messages go (a 0-9-1 declare's
        #: ``x-dead-letter-exchange``): called with the message and the reason
        #: (``rejected``, ``expired``, ``maxlen``); None: the broker's ``dead_letter``
        #: queue, and expired messages are dropped.
        self.dead_letter_to: Any = None

    @property
    def depth(self) -> int:
        return len(self.available) + self.acquired

    def offer(self, message: StoredMessage) -> str | None:
        broker = self.broker
        config = broker.config
        wall = broker.wall
        if self.message_ttl is not None:
            by_ttl = wall + self.message_ttl / 1000.0
            if message.expires is None or by_ttl < message.expires:
                message.expires = by_ttl
        if (
            self.max_depth is None
            and self.max_bytes is None
            and config.max_queue_depth is None
            and config.max_queue_bytes is None
        ):
            why = None  # (no limit: what _full would say, without asking)
        else:
            why = self._full(message, config)
        if why is not None and (self.overflow or config.queue_overflow) == DROP_HEAD:
            limit = _least(config.max_queue_bytes, self.max_bytes)
            if limit is None or message.size <= limit:  # (one that could never fit: refused)
                while why is not None and self._drop_head():
                    why = self._full(message, config)
        if why is not None:
            return why
        expires = message.expires
        now_or_never = expires is not None and expires == wall  # a ttl of 0
        if now_or_never:
            message.expires = None
        broker.store.put(self, message)
        broker.hold(message)
        self._put(message, front=False)
        self._had_messages = True
        if now_or_never:
            self._now_or_never(message, wall)
        return None

    def _now_or_never(self, message: StoredMessage, wall: float) -> None:
        """A message with a ttl of 0 (a 0-9-1 ``expiration`` or ``x-message-ttl`` of 0; a 1.0
        publisher's is dropped on arrival, broker draft 2.2.5) goes to a consumer that can
        take it now, after the messages before it, else it expires at once (RabbitMQ's
        rule); one given back later expires then."""
        self.dispatch()
        message.expires = wall
        if self.available.get(message.seq) is message:
            self.drop(message)
            self.expired(message)

    def _full(self, message: StoredMessage, config: BrokerConfig) -> str | None:
        """Why the queue cannot take ``message`` (``max_queue_depth``, ``max_queue_bytes``
        counting what waits: out with a consumer, a message counts for the depth only)."""
        # (_least and depth written out: this runs for every message a queue takes)
        limit, mine = config.max_queue_depth, self.max_depth
        if mine is not None and (limit is None or mine < limit):
            limit = mine
        if limit is not None and len(self.available) + self.acquired >= limit:
            return f"queue {self.address!r} holds its maximum of {limit} messages"
        limit, mine = config.max_queue_bytes, self.max_bytes
        if mine is not None and (limit is None or mine < limit):
            limit = mine
        if limit is not None and self.bytes + message.size > limit:
            return f"queue {self.address!r} would exceed its maximum of {limit} bytes"
        return None

    def _drop_head(self) -> bool:
        """Make room (``queue_overflow`` drop-head): the oldest waiting message goes to
        the dead-letter queue (not from the dead-letter queue itself), or is dropped;
        counted in ``Broker.overflowed``. False when nothing waits (every message is out
        with a consumer)."""
        oldest: StoredMessage | None = None
        available = self.available
        for level in self._levels.values():
            while level and (level[0].dropped or available.get(level[0].seq) is not level[0]):
                level.popleft()  # taken or expired while it waited
            if level and (oldest is None or level[0].seq < oldest.seq):
                oldest = level[0]
        if oldest is None:
            return False
        broker = self.broker
        if self.address != broker.config.dead_letter or self.subscription is not None:
            self.dead_letter(oldest, "maxlen")
        self.drop(oldest)
        broker.overflowed += 1
        return True

    def dead_letter(self, message: StoredMessage, reason: str) -> None:
        """A message of this queue is dead (``rejected``, ``maxlen``): to the queue's
        dead-letter exchange if it has one, else the broker's ``dead_letter`` queue."""
        if self.dead_letter_to is not None:
            self.dead_letter_to(message, reason)
        else:
            self.broker.dead_letter(message)

    def expired(self, message: StoredMessage) -> None:
        """A message of this queue expired: to the queue's dead-letter exchange if it has
        one (RabbitMQ's rule); else it is just dropped. Counted in ``Broker.expired``."""
        self.broker.expired += 1
        if self.dead_letter_to is not None:
            self.dead_letter_to(message, "expired")

    def restore(self, message: StoredMessage) -> None:
        """Take back a message a durable store kept (at the back of its priority: the
        store gives them in arrival order). It may have been delivered before the restart:
        a 0-9-1 consumer gets it ``redelivered`` (0-9-1 spec ``basic.deliver``: "may have
        been previously delivered")."""
        message.redelivered = True
        self.broker.hold(message)
        self._put(message, front=False)
        self._had_messages = True

    def order_by(self, max_priority: int | None) -> None:
        """Order by these priorities from now on (see the class): what waits is filed
        again, by arrival within each priority (a 1.0 queue a 0-9-1 declare adopts)."""
        if max_priority == self.max_priority:
            return
        self.max_priority = max_priority
        available = self.available
        waiting = sorted(
            (m for level in self._levels.values() for m in level if available.get(m.seq) is m),
            key=_seq,
        )
        self._levels.clear()
        self._order.clear()
        self._returns += 1  # (what selectors passed over is filed elsewhere now)
        for message in waiting:
            priority = self._priority(message)
            level = self._levels.get(priority)
            if level is None:
                level = self._levels[priority] = deque()
                bisect.insort(self._order, -priority)
            level.append(message)

    def _priority(self, message: StoredMessage) -> int:
        """The level ``message`` waits at (see the class)."""
        levels = self.max_priority
        if levels is None:
            return message.priority
        return min(message.stated_priority(), levels) if levels else 0

    def _put(self, message: StoredMessage, *, front: bool) -> None:
        # (_priority's common case, without the call)
        priority = message.priority if self.max_priority is None else self._priority(message)
        level = self._levels.get(priority)
        if level is None:
            level = self._levels[priority] = deque()
            bisect.insort(self._order, -priority)
        if front:
            self._returns += 1
            # Back at the head, in arrival order among those that came back (2.2.2).
            if not level or level[0].seq > message.seq:
                level.appendleft(message)
            else:
                index = 0
                for waiting in level:
                    if waiting.seq > message.seq:
                        break
                    index += 1
                level.insert(index, message)
        else:
            level.append(message)
        self.available[message.seq] = message
        self.bytes += message.size
        if message.expires is not None:
            self.broker.watch_expiry(message, self)

    def requeue(self, message: StoredMessage) -> None:
        """A consumer gave the message back (released or modified, core spec 3.4.4, 3.4.5):
        it goes to the head of its priority."""
        self.acquired -= 1
        message.redelivered = True
        if self.deleted:
            message.dropped = True
            self.broker.store.remove(self, message)
            self.broker.let_go(message)
        else:
            self._put(message, front=True)

    def settled(self, message: StoredMessage) -> bool:
        """A consumer took the message for good (accepted, or dead-lettered); return whether
        the lifetime policy now deletes the node."""
        self.acquired -= 1
        message.dropped = True
        self.broker.store.remove(self, message)
        self.broker.let_go(message)
        return self.emptied()

    def acquire(self, message: StoredMessage) -> bool:
        """Take ``message`` off the queue for a consumer that was shown it without taking
        it (a 0-10 browser's ``message.acquire``), if it is still available; whether it
        was. Settled or given back as a delivered message is."""
        if self.available.get(message.seq) is not message:
            return False
        del self.available[message.seq]
        self.bytes -= message.size
        self.acquired += 1
        return True

    def drop(self, message: StoredMessage) -> None:
        """Take an available message off the queue for good (expired)."""
        del self.available[message.seq]
        self.bytes -= message.size
        message.dropped = True
        self.broker.store.remove(self, message)
        self.broker.let_go(message)

    def _take(self, consumer: Consumer, wall: float) -> StoredMessage | None:
        skipped: list[StoredMessage] = []
        found: StoredMessage | None = None
        for negated in self._order:
            level = self._levels[-negated]
            while level:
                message = level.popleft()
                if message.dropped or self.available.get(message.seq) is not message:
                    continue  # expired or taken while it waited
                if message.expires is not None and message.expires <= wall:
                    self.drop(message)
                    self.expired(message)
                    continue
                if message.excluded is not None and consumer in message.excluded:
                    skipped.append(message)
                    continue
                found = message
                break
            if skipped:
                level.extendleft(reversed(skipped))
                skipped.clear()
            if found is not None:
                break
        if found is None:
            return None
        del self.available[found.seq]
        self.bytes -= found.size
        self.acquired += 1
        return found

    def _select(self, consumer: Consumer, selector: Selector, wall: float) -> StoredMessage | None:
        """:meth:`_take` for a consumer with a selector: the first available message, by
        priority then arrival, that it selects; those it passes over stay where they are,
        in order, for other consumers.

        Each priority's messages are in arrival (``seq``) order, and a message's verdict
        does not change while it waits; so the consumer remembers, per priority, the last
        seq up to which it found nothing for it, and starts after it next time (found by
        bisection): only new messages are looked at, and a queue holding many messages it
        does not select costs a dispatch little. A message put back at the front (given
        back by a consumer, possibly annotated) makes it look at everything again."""
        address = self.address
        available = self.available
        memo = self._passed.get(consumer)
        if memo is None or memo[0] != self._returns:
            memo = self._passed[consumer] = (self._returns, {})
        passed = memo[1]
        for negated in self._order:
            priority = -negated
            level = self._levels[priority]
            mark = passed.get(priority)
            index = 0 if mark is None else bisect.bisect_right(level, mark, key=_seq)
            while index < len(level):
                message = level[index]
                if message.dropped or available.get(message.seq) is not message:
                    del level[index]  # expired or taken while it waited
                    continue
                if message.expires is not None and message.expires <= wall:
                    del level[index]
                    self.drop(message)
                    self.expired(message)
                    continue
                excluded = message.excluded
                if (excluded is None or consumer not in excluded) and selects(
                    selector, message, address
                ):
                    del level[index]
                    if index:
                        passed[priority] = level[index - 1].seq
                    del available[message.seq]
                    self.bytes -= message.size
                    self.acquired += 1
                    return message
                index += 1
            if level:
                passed[priority] = level[-1].seq
        return None

    def add_consumer(self, consumer: Consumer) -> None:
        (self.browsers if consumer.copy else self.consumers).append(consumer)

    def remove_consumer(self, consumer: Consumer) -> None:
        (self.browsers if consumer.copy else self.consumers).remove(consumer)
        self._passed.pop(consumer, None)

    def dispatch(self, budget: int | None = None) -> bool:
        """Hand the available messages to the consumers with credit, in turn (and the
        browsers theirs); at most ``budget`` to the consumers (None: no bound). Returns
        False when it stopped at the budget (call again: the consumers' drains are answered
        only once it is done), True when it is done."""
        wall = self.broker.wall
        consumers = self.consumers
        sent = 0
        while self.available and consumers:
            moved = False
            for _ in range(len(consumers)):
                if not self.available:
                    break
                index = self._turn % len(consumers)
                consumer = consumers[index]
                self._turn = index + 1
                if consumer.credit <= 0:
                    continue
                selector = consumer.selector
                if selector is None:
                    message = self._take(consumer, wall)
                else:
                    message = self._select(consumer, selector, wall)
                if message is None:
                    continue
                consumer.deliver(message, self)
                moved = True
                sent += 1
                if budget is not None and sent >= budget:
                    return False
            if not moved:
                break
        for browser in self.browsers:
            self._browse(browser, wall)
        for consumer in consumers:
            consumer.tell_available(len(self.available))
            if consumer.credit > 0 or consumer.blocked:
                consumer.drained()
        return True

    def _browse(self, browser: Consumer, wall: float) -> None:
        """Send a browser (``copy``) the available messages it has not seen, by arrival."""
        if browser.credit > 0:
            selector = browser.selector
            for seq, message in list(self.available.items()):
                if seq <= browser.cursor:
                    continue
                if message.expires is not None and message.expires <= wall:
                    self.drop(message)
                    self.expired(message)
                    continue
                browser.cursor = seq
                if selector is not None and not selects(selector, message, self.address):
                    continue  # not for this browser (its cursor moves past it)
                browser.deliver(message, self)
                if browser.credit <= 0:
                    break
        if browser.credit > 0 or browser.blocked:
            browser.drained()

    def clear(self) -> None:
        super().clear()
        for message in list(self.available.values()):
            self.drop(message)
        self._levels.clear()
        self._order.clear()


def _least(a: int | None, b: int | None) -> int | None:
    """The lower of two limits (None: no limit)."""
    if a is None:
        return b
    return a if b is None else min(a, b)


class Topic(Node):
    """A topic: each message is copied to the buffer of every subscriber (a private
    :class:`Queue` per consumer, or per kept subscription, attached or not: see
    :mod:`._subscriptions`); with no subscriber it is accepted and dropped. A buffer at
    ``BrokerConfig.max_subscription_depth`` messages takes no more: the topic's message
    is dropped for that subscriber alone, and counted (``Broker.overflowed``)."""

    kind = "topic"

    def __init__(
        self,
        broker: NodeBroker,
        address: str,
        *,
        dynamic: bool = False,
        policy: LifetimePolicy | None = None,
    ) -> None:
        super().__init__(broker, address, dynamic=dynamic, policy=policy)
        #: The buffers, by consumer (or by kept subscription).
        self.subscriptions: dict[Any, Queue] = {}

    @property
    def depth(self) -> int:
        return sum(q.depth for q in self.subscriptions.values())

    def unused(self) -> bool:
        # A topic holds nothing of its own: unused with no link and no subscription kept.
        return not self.subscriptions and super().unused()

    def offer(self, message: StoredMessage) -> str | None:
        broker = self.broker
        limit = broker.config.max_subscription_depth
        for subscriber, buffer in self.subscriptions.items():
            selector = subscriber.selector
            if selector is not None and not selects(selector, message, self.address):
                continue  # a subscriber's buffer takes only what its selector selects
            if limit is not None and buffer.depth >= limit:
                broker.overflowed += 1
                continue
            copy = message.copy(broker.next_seq())
            copy.selection = message.selection  # the same bytes at the same address
            if buffer.offer(copy) is not None:
                broker.overflowed += 1
        self._had_messages = True
        return None

    def add_consumer(self, consumer: Consumer) -> None:
        subscription = getattr(consumer, "subscription", None)
        if subscription is not None:
            buffer = subscription.buffer
            self.subscriptions[subscription] = buffer
        else:
            buffer = Queue(self.broker, self.address)
            self.subscriptions[consumer] = buffer
        buffer.add_consumer(consumer)

    def buffer(self, consumer: Consumer) -> Queue | None:
        subscription = getattr(consumer, "subscription", None)
        return self.subscriptions.get(consumer if subscription is None else subscription)

    def remove_consumer(self, consumer: Consumer) -> None:
        subscription = getattr(consumer, "subscription", None)
        if subscription is None:
            self.subscriptions.pop(consumer).clear()
        else:
            subscription.buffer.remove_consumer(consumer)  # kept, or dropped by the broker

    def drop_subscription(self, subscription: KeptBuffer) -> None:
        """A kept subscription is deleted: its buffer and what it holds go."""
        self.subscriptions.pop(subscription, None)
        subscription.buffer.clear()
