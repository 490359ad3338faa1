"""The broker's protocol-free core: a registry of nodes shared by every connection (broker
draft 2.1), the messages they hold, the subscriptions kept past their links and the
connection limits. Its connections (:mod:`.amqp10`, :mod:`.amqp091`) reach it through
:mod:`._interface`; :mod:`._accept` builds them and adds them to it.

Time comes in twice, and never from a clock of our own: ``now`` is the clock of the engines'
deadlines (idle time-outs, heartbeats), any clock the driver likes (a monotonic one is
best); ``wall`` is seconds since the epoch, the clock of message expiry (a header's ttl
counts from arrival, properties' absolute-expiry-time is an epoch timestamp, broker draft
2.2.5). ``wall`` defaults to ``now``, which suits tests on one simulated clock.
"""

from __future__ import annotations

import heapq
import itertools
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from ..codec.amqp10 import Symbol, decode, encode
from ..definitions.amqp10.messaging import (
    DeleteOnClose,
    DeleteOnNoLinks,
    DeleteOnNoLinksOrMessages,
    DeleteOnNoMessages,
    Source,
    TerminusDurability,
    TerminusExpiryPolicy,
)
from ..errors import DecodeError
from ._config import BrokerConfig
from ._interface import DEFAULT_VHOST, HostedQueues, Peer
from ._nodes import MemoryStore, Node, Queue, Store, SubscriptionStore, Topic, error, own_name
from ._replies import DirectReplies
from ._selector import Selector, SelectorError, selector_filter
from ._store import StoredMessage, parse_message
from ._streams import Stream
from ._subscriptions import Subscription
from ._timers import Timer, Timers
from ._users import open_authenticator

__all__ = ["BrokerCore"]


_POLICIES = (DeleteOnClose, DeleteOnNoLinks, DeleteOnNoMessages, DeleteOnNoLinksOrMessages)
_LIFETIME = Symbol("lifetime-policy")
#: The most source addresses whose failed logins are remembered at once.
_FAILURES_MAX = 10_000
#: The expiry heap is compacted when it reaches this size, or twice its size after the last
#: compaction.
_COMPACT_MIN = 1024


class BrokerCore:
    """The protocol-free core of a broker (broker draft 2.1): its nodes, messages, kept
    subscriptions and connection limits, which its connections reach through
    :class:`~amqp_sansio.broker._interface.ConnectionBroker`. It builds no connection and
    imports no protocol: :class:`~amqp_sansio.broker.Broker` (:mod:`._accept`) adds that.
    I/O-free: after each input a driver writes out the connections of :meth:`pending` (a
    publish on one connection makes output on others), and calls :meth:`expire` at
    :meth:`next_expiry` (wall clock)."""

    def __init__(self, config: BrokerConfig | None = None, *, store: Store | None = None) -> None:
        self.config = config or BrokerConfig()
        self.store: Store = store or MemoryStore()
        #: The SASL layer of a broker without users or ``sasl``: anonymous access (and any
        #: PLAIN login, as the 0-9-1 side takes any).
        self.open_sasl = open_authenticator(allow_cleartext=self.config.allow_insecure_auth)
        #: The nodes by address.
        self.nodes: dict[str, Node] = {}
        self.connections: set[Peer] = set()
        #: The latest wall-clock time a caller gave (seconds since the epoch).
        self.wall = 0.0
        #: Counters: messages dropped because they expired, and messages dead-lettered.
        self.expired = 0
        self.dead_lettered = 0
        #: Pre-settled messages on an anonymous-relay link that could not be routed (no
        #: ``to``, no such node, not allowed, or the node full): dropped, and counted here.
        self.unroutable = 0
        #: Bytes of the messages the queues hold (waiting or out with a consumer), and
        #: whether the resource alarm is on (``BrokerConfig.memory_high_watermark``).
        self.held_bytes = 0
        self.alarm = False
        self._alarm_news = False
        self._seq = itertools.count(1)
        self._expiry: list[tuple[float, int, StoredMessage, Queue]] = []
        self._ties = itertools.count()
        self._compact_at = _COMPACT_MIN
        self._pending: dict[Any, None] = {}
        #: Direct reply-to's requesters, by the name their replies go to (:mod:`._replies`).
        self.replies = DirectReplies()
        self._dirty: dict[Queue | Stream, None] = {}
        #: Set by an I/O adapter that writes what a 0-9-1 input answers (publisher
        #: confirms, ``-ok`` methods) before the deliveries it makes for consumers: such an
        #: input then leaves the consumers to :meth:`dispatch_more` (:attr:`dispatching`
        #: says so), which the adapter calls once those answers are written. False: every
        #: input dispatches before it returns.
        self.answers_first = False
        #: Topic subscriptions kept past their links, by (container-id, link name); see
        #: :mod:`._subscriptions`.
        self.subscriptions: dict[tuple[str, str], Subscription] = {}
        #: Messages a topic could not give a subscriber because its buffer was full
        #: (``BrokerConfig.max_subscription_depth``, or a queue limit).
        self.overflowed = 0
        self._per_container: dict[str, int] = {}
        self._subscription_ids = itertools.count(1)
        self._timers: list[tuple[float, int, Subscription]] = []
        #: General timers on the wall clock (:meth:`call_at`).
        self.timers = Timers()
        #: Connections by source address (all of them, handshaking ones included), open
        #: connections by authenticated user, and recent failed logins by source address:
        #: (failures in a row, when the last one was, on the ``now`` clock).
        self._by_address: dict[str, int] = {}
        self._by_user: dict[str, int] = {}
        self._failures: dict[str, tuple[int, float]] = {}
        #: Queues made on first use that have no link, by when they expire
        #: (``BrokerConfig.queue_expiry``): (when, tie, queue); stale once re-linked.
        self._idle: list[tuple[float, int, Node]] = []
        #: When each such queue expires.
        self._idle_at: dict[Node, float] = {}
        #: Streams by when their oldest message passes their age limit: (when, tie,
        #: stream), one live entry per stream (its ``watched``); see :meth:`watch_age`.
        self._aging: list[tuple[float, int, Stream]] = []
        #: The queues a protocol keeps outside :attr:`nodes` (0-9-1's virtual hosts, set by
        #: :class:`~amqp_sansio.broker.Broker`): none in the core.
        self.hosted: HostedQueues = _NO_HOSTED
        self._subscription_store: SubscriptionStore | None = (
            self.store if isinstance(self.store, SubscriptionStore) else None
        )
        for address in self.config.queues:
            self.nodes[address] = Queue(self, address)
        for address in self.config.streams:
            self.nodes[address] = Stream(self, address)
        for address in self.config.topics:
            self.nodes[address] = Topic(self, address)

    # -- the driver's interface ---------------------------------------------------------------

    # -- connection limits (see BrokerConfig and docs/broker.rst, "Limits") -------------------

    def _room_for_connection(self, address: str | None, now: float) -> str | None:
        """Why one more connection from ``address`` is refused at once, or None (an idle
        anonymous connection may have been evicted to make room: :meth:`_evict_idle`)."""
        config = self.config
        limit = config.max_connections
        if limit is not None and len(self.connections) >= limit and not self._evict_idle(now):
            return f"the broker takes at most {limit} connections"
        limit = config.max_connections_per_address
        if (
            limit is not None
            and address is not None
            and self._by_address.get(address, 0) >= limit
            and not self._evict_idle(now, address)
        ):
            return f"at most {limit} connections from one address"
        return None

    def _evict_idle(self, now: float, address: str | None = None) -> bool:
        """At a connection cap: close the least recently active of the connections (from
        ``address``, if given) that :meth:`~BrokerConnection.idle_since` says may go and that
        have been quiet for ``evict_idle_after`` seconds, so that a new one fits (it no
        longer counts from now). False if there is none."""
        after = self.config.evict_idle_after
        if after is None:
            return False
        oldest, since = None, now - after
        for conn in self.connections:
            if address is None or conn.address == address:
                active = conn.idle_since()
                if active is not None and active <= since:
                    oldest, since = conn, active
        if oldest is None:
            return False
        oldest.evict(
            f"evicted: idle for {now - since:.0f} s, anonymous, without links or consumers, "
            f"when a new connection came at the connection cap"
        )
        return True

    def room_for_user(self, identity: str) -> str | None:
        """Why one more open connection of ``identity`` is refused, or None (then it is
        counted, until :meth:`_connection_gone`)."""
        limit = self.config.max_connections_per_user
        count = self._by_user.get(identity, 0)
        if limit is not None and count >= limit:
            return f"at most {limit} connections per user"
        self._by_user[identity] = count + 1
        return None

    def connection_gone(self, conn: Peer) -> None:
        self.connections.discard(conn)
        address = conn.address
        if address is not None and address in self._by_address:
            left = self._by_address[address] - 1
            if left > 0:
                self._by_address[address] = left
            else:
                del self._by_address[address]
        user = conn.release_user()
        if user is not None:
            left = self._by_user[user] - 1
            if left > 0:
                self._by_user[user] = left
            else:
                del self._by_user[user]

    def login_failed(self, address: str | None, now: float) -> float:
        """A failed authentication from ``address`` at ``now``: the seconds its outcome is
        held back. Past ``login_delay_after`` failures from the address, each within
        ``login_failure_window`` seconds of the one before, ``login_delay`` doubling with
        each further failure, at most ``login_delay_max``. The record of an address is
        forgotten once its window has passed (and the table is pruned when it grows past
        :data:`_FAILURES_MAX` addresses)."""
        if address is None:
            return 0.0
        config = self.config
        failures = self._failures
        count, last = failures.pop(address, (0, now))
        if now - last > config.login_failure_window:
            count = 0
        count += 1
        if len(failures) >= _FAILURES_MAX:
            window = config.login_failure_window
            for key in [k for k, (_, t) in failures.items() if now - t > window]:
                del failures[key]
            while len(failures) >= _FAILURES_MAX:
                del failures[next(iter(failures))]  # the oldest (insertion order)
        failures[address] = (count, now)
        over = count - config.login_delay_after
        if over <= 0:
            return 0.0
        return float(min(config.login_delay * 2 ** min(over - 1, 62), config.login_delay_max))

    def pending(self) -> list[Any]:
        """The connections that may have bytes to send since the last call."""
        out = list(self._pending)
        self._pending.clear()
        return out

    def has_output(self, conn: object) -> None:
        """``conn`` has bytes to send: among :meth:`pending`'s next answer."""
        self._pending[conn] = None

    def call_at(self, when: float, call: Callable[[], object]) -> Timer:
        """Call ``call()`` at ``when`` (wall clock): from :meth:`expire`, which the
        driver calls at :meth:`next_expiry`; what it puts on nodes is dispatched as a
        publish is. The :class:`~._timers.Timer` returned cancels it."""
        return self.timers.call_at(when, call)

    def next_expiry(self) -> float | None:
        """When (wall clock) the next waiting message, or suspended subscription, expires,
        or a call of :meth:`call_at` is due; or None."""
        timers = self._timers
        while timers and timers[0][2].expires != timers[0][0]:
            heapq.heappop(timers)  # re-attached or deleted since
        self._idle_stale()
        idle = self._idle
        aging = self._aging
        while aging and aging[0][2].watched != aging[0][0]:
            heapq.heappop(aging)  # (superseded by an earlier time)
        times = [heap[0][0] for heap in (self._expiry, timers, idle, aging) if heap]
        call = self.timers.next()
        if call is not None:
            times.append(call)
        return min(times) if times else None

    def expire(self, wall: float) -> int:
        """Drop the messages whose time has come (broker draft 2.2.5); return how many.
        A message out with a consumer is left to its outcome: if it comes back, it is
        dropped then."""
        self.wall = max(self.wall, wall)
        dropped = 0
        heap = self._expiry
        while heap and heap[0][0] <= wall:
            _, _, message, queue = heapq.heappop(heap)
            if queue.available.get(message.seq) is message:
                queue.drop(message)
                queue.expired(message)
                dropped += 1
                if queue.emptied() or queue.unused():
                    self.delete_node(queue)
        idle = self._idle
        while self._idle_stale() and idle[0][0] <= wall:
            _, _, node = heapq.heappop(idle)
            del self._idle_at[node]
            self.delete_node(node)  # unused for its expiry: gone, messages too
        timers = self._timers
        while timers and timers[0][0] <= wall:
            when, _, subscription = heapq.heappop(timers)
            if subscription.expires == when:
                self.delete_subscription(subscription)  # its timeout ran out (3.5.6)
        self._age_streams(wall)
        self.timers.fire(wall)
        self.store.flush()
        self.tell_alarm()
        return dropped

    @property
    def depth(self) -> int:
        """The messages the broker's nodes hold (waiting or out with a consumer), and
        those of the queues of its other 0-9-1 virtual hosts."""
        return sum(node.depth for node in self.nodes.values()) + self.hosted.depth()

    def restore(
        self,
        records: Iterable[tuple[str, int, bytes, int, float | None]],
        wall: float,
        *,
        vhost: str = DEFAULT_VHOST,
    ) -> list[int]:
        """Give the broker back the messages a durable store kept, before it serves anyone
        (broker draft 2.2.4: durable messages survive a restart). ``records`` are
        ``(address, seq, data, delivery_count, expires)`` in ascending ``seq`` (arrival
        order): each goes to the back of its priority at the queue at ``address`` (made if
        there is none), so FIFO within a priority and priority order hold as before; its
        delivery-count is the one recorded (core spec 3.2.1) and ``expires`` (wall clock) the
        expiry computed when it first arrived (a ttl counts from arrival, 2.2.5). New
        messages are numbered after them.

        Returns the ``seq`` of the records not restored, for the store to forget: those
        expired at ``wall``, and those whose address now names a topic (topics keep no
        messages). Raises :class:`~amqp_sansio.DecodeError` for data that is not a message;
        the broker is then unusable.

        With ``vhost`` other than ``/``, the records are of that 0-9-1 virtual host's
        queues, made again first by :meth:`restore_topology`: those of a queue it has not
        (or of a virtual host it has not) are not restored either. Restored messages come
        to 0-9-1 consumers ``redelivered`` (they may have been delivered before)."""
        self.wall = wall
        top = 0
        dropped: list[int] = []
        for address, seq, data, delivery_count, expires in records:
            top = max(top, seq)
            node: Node | None
            if vhost != DEFAULT_VHOST:
                node = self.hosted.queue_of(vhost, address)
            else:
                node = self.nodes.get(address)
            if node is None and vhost == DEFAULT_VHOST and not self.config.is_topic(address):
                node = self.nodes[address] = Queue(self, address)
                # Made on first use before the restart: deleted once unused, as then.
                node.auto = self.config.auto_delete and address != self.config.dead_letter
                self._unlinked(node)
            if not isinstance(node, Queue) or (expires is not None and expires <= wall):
                dropped.append(seq)
                continue
            message = parse_message(data, seq=seq, wall=wall)
            message.delivery_count = delivery_count
            message.expires = expires
            node.restore(message)
        self._seq = itertools.count(max(top + 1, next(self._seq)))
        return dropped

    def restore_subscriptions(
        self,
        subscriptions: Iterable[tuple[int, str, str, bytes, bytes]],
        messages: Iterable[tuple[int, int, bytes, int, float | None]],
        wall: float,
    ) -> tuple[list[int], list[int]]:
        """Give the broker back the topic subscriptions a durable store kept (core spec
        3.5.5), before :meth:`restore`: ``subscriptions`` are ``(number, container-id,
        link name, source, answered source)`` (the sources encoded), ``messages`` the
        durable messages of their buffers, ``(number, seq, data, delivery_count,
        expires)`` in ascending ``seq``. Each comes back suspended, its expiry timer
        started at ``wall`` (its connection is gone) unless its policy is ``never``;
        its messages (those unsettled when the broker stopped included) wait in its buffer
        in arrival order.

        Returns the numbers of the subscriptions not restored (their address is no longer
        a topic, their source does not decode, or an earlier one has their name) and the
        ``seq`` of the messages not restored (expired, or of a subscription not restored),
        for the store to forget."""
        self.wall = wall
        kept: dict[int, Subscription] = {}
        lost: list[int] = []
        for ident, container, name, source_data, answered_data in subscriptions:
            try:
                source, answered = decode(source_data), decode(answered_data)
            except DecodeError:
                source = answered = None
            address = getattr(source, "address", None)
            node = self.nodes.get(address) if isinstance(address, str) else None
            if node is None and isinstance(address, str) and self.config.is_topic(address):
                node = self.declare(address, topic=True)
            if (
                not isinstance(source, Source)
                or not isinstance(answered, Source)
                or not isinstance(node, Topic)
                or (container, name) in self.subscriptions  # (a second record of one name)
            ):
                lost.append(ident)
                continue
            try:
                selector = self._selector(source)
            except SelectorError:
                lost.append(ident)
                continue
            subscription = Subscription(
                ident, (container, name), node, Queue(self, node.address), source, answered
            )
            subscription.selector = selector
            node.subscriptions[subscription] = subscription.buffer
            self.register_subscription(subscription)
            self._subscription_ids = itertools.count(max(ident + 1, next(self._subscription_ids)))
            kept[ident] = subscription
            if answered.expiry_policy is not TerminusExpiryPolicy.NEVER:
                self.start_subscription_timer(subscription)
        dropped: list[int] = []
        top = 0
        for ident, seq, data, delivery_count, expires in messages:
            top = max(top, seq)
            owner = kept.get(ident)
            if owner is None or owner.deleted or (expires is not None and expires <= wall):
                dropped.append(seq)
                continue
            message = parse_message(data, seq=seq, wall=wall)
            message.delivery_count = delivery_count
            message.expires = expires
            owner.buffer.restore(message)
        self._seq = itertools.count(max(top + 1, next(self._seq)))
        return lost, dropped

    # -- subscriptions (core spec 3.5.3, 3.5.5, 3.5.6; see ._subscriptions) -------------------

    def _selector(self, source: Source) -> Selector | None:
        """The selector of a kept subscription's source, if it has one (SelectorError if it
        no longer parses, e.g. under a lower limit)."""
        found = selector_filter(source.filter)
        if found is None:
            return None
        config = self.config
        return Selector(
            found[2], max_length=config.selector_max_length, max_depth=config.selector_max_depth
        )

    def register_subscription(self, subscription: Subscription) -> None:
        self.subscriptions[subscription.key] = subscription
        container = subscription.key[0]
        self._per_container[container] = self._per_container.get(container, 0) + 1

    def room_for_subscription(self, container: str) -> str | None:
        config = self.config
        limit = config.max_subscriptions
        if limit is not None and len(self.subscriptions) >= limit:
            return f"the broker keeps at most {limit} subscriptions"
        limit = config.max_subscriptions_per_container
        if limit is not None and self._per_container.get(container, 0) >= limit:
            return f"at most {limit} subscriptions per container"
        return None

    def save_subscription(self, subscription: Subscription) -> None:
        """Record the subscription's identity in a durable store, if it is to survive a
        restart (durability ``configuration`` or ``unsettled-state``, 3.5.5)."""
        store = self._subscription_store
        if store is None:
            return
        if subscription.durable is TerminusDurability.NONE:
            store.forget_subscription(subscription.ident)
            return
        container, name = subscription.key
        store.keep_subscription(
            subscription.ident,
            container,
            name,
            encode(subscription.source),
            encode(subscription.answered),
        )

    def start_subscription_timer(self, subscription: Subscription) -> None:
        """The subscription's expiry timer starts (3.5.6): it goes after ``timeout``
        seconds unless it is re-attached first; at once with a timeout of 0."""
        timeout = subscription.answered.timeout
        if timeout <= 0:
            self.delete_subscription(subscription)
            return
        subscription.expires = when = self.wall + timeout
        heapq.heappush(self._timers, (when, next(self._ties), subscription))

    def delete_subscription(self, subscription: Subscription, *, release: bool = True) -> None:
        """The subscription expired, was closed, or replaced: its buffer and its unsettled
        messages go. (Each is deleted once: from the registry when suspended, or through
        its consumer's closing removal when attached.)"""
        subscription.deleted = True
        subscription.expires = None
        del self.subscriptions[subscription.key]  # (a replacement is registered after)
        container = subscription.key[0]
        left = self._per_container[container] - 1
        if left:
            self._per_container[container] = left
        else:
            del self._per_container[container]
        buffer = subscription.buffer
        for message in subscription.unsettled.values():
            buffer.acquired -= 1
            message.dropped = True
            self.store.remove(buffer, message)
            self.let_go(message)
        subscription.unsettled = {}
        subscription.unpark()
        subscription.topic.drop_subscription(subscription)
        if subscription.conn is not None:
            subscription.conn.forget_subscription(subscription)
        if release:  # (not when it is replaced: its topic is about to be used again)
            self.release(subscription.topic)
        if self._subscription_store is not None:
            self._subscription_store.forget_subscription(subscription.ident)

    # -- nodes --------------------------------------------------------------------------------

    def declare(self, address: str, *, topic: bool = False, stream: bool = False) -> Node:
        """The node at ``address``, made (a queue, a topic, or a stream) if there is none."""
        node = self.nodes.get(address)
        if node is None:
            kind = Stream if stream else Topic if topic else Queue
            node = kind(self, address)
            self.nodes[address] = node
        return node

    def delete_node(self, node: Node) -> None:
        """Delete a node: its links are detached with ``amqp:resource-deleted`` (broker
        draft 2.3.3) and its messages dropped."""
        if node.deleted:
            return
        registered = self.nodes.get(node.address) is node
        if registered:
            del self.nodes[node.address]
        node.deleted = True
        for consumer in list(getattr(node, "consumers", ())):
            gone = getattr(consumer, "queue_deleted", None)
            if gone is not None:  # a 0-9-1 consumer: cancelled (its client told, if it asked)
                gone()
        self.hosted.node_deleted(node, registered)
        self._idle_at.pop(node, None)
        if isinstance(node, Topic):
            for subscription in list(self.subscriptions.values()):
                if subscription.topic is node and subscription.consumer is None:
                    self.delete_subscription(subscription)
        for endpoint in list(node.links):
            endpoint.conn.node_deleted(
                endpoint, error("amqp:resource-deleted", f"node {node.address!r} deleted")
            )
        node.clear()

    def release(self, node: Node) -> None:
        """A link left ``node``, or a message, or a kept subscription: delete it if it was
        made on first use and is now unused (``BrokerConfig.auto_delete``: no link, nothing
        held), or start its expiry (``queue_expiry``) if it has no link but holds messages."""
        if node.deleted or not node.auto:
            return
        if node.unused():
            self.delete_node(node)
        elif not node.links:
            self._unlinked(node)

    def _unlinked(self, node: Node) -> None:
        """An auto-deleted queue has no link but holds messages: with ``queue_expiry`` it is
        deleted, messages and all, if it stays so that long."""
        expiry = self.config.queue_expiry
        if expiry is None or not node.auto or node in self._idle_at:
            return
        when = self._idle_at[node] = self.wall + expiry
        heapq.heappush(self._idle, (when, next(self._ties), node))

    def _idle_stale(self) -> bool:
        """Drop the idle-expiry entries at the top that no longer count (the node linked
        again, or deleted), and move on those whose time was put off (an x-expires queue
        used again updates its time only); True while an entry is left."""
        idle, at = self._idle, self._idle_at
        while idle:
            when, _, node = idle[0]
            later = at.get(node)
            if later == when:
                return True
            heapq.heappop(idle)
            if later is not None:  # (its time moved: the entry moves with it)
                heapq.heappush(idle, (later, next(self._ties), node))
        return False

    def idle_until(self, node: Node, when: float) -> None:
        """``node`` is to be deleted at ``when`` (wall clock) unless used or linked before
        (a 0-9-1 queue's ``x-expires``); a later time puts off an earlier one."""
        pending = node in self._idle_at
        self._idle_at[node] = when
        if not pending:
            heapq.heappush(self._idle, (when, next(self._ties), node))

    def linked(self, node: Node) -> None:
        """A link attached to ``node``: its expiry (``queue_expiry``) stops."""
        self._idle_at.pop(node, None)

    def resolve(self, address: str, *, stream: bool = False) -> Node | None:
        """The node at ``address``; made on first use if there is none and
        ``BrokerConfig.auto_create`` says so, unless its name is of the broker's own
        nodes' kind (``$cbs``, ...: :func:`~._nodes.own_name`)."""
        node = self.nodes.get(address)
        config = self.config
        if node is None and config.auto_create and not own_name(address):
            stream = stream or config.is_stream(address)
            node = self.declare(address, topic=config.is_topic(address), stream=stream)
            # Made on first use (not a stream: its log keeps its own retention rules).
            node.auto = config.auto_delete and not stream and address != config.dead_letter
        return node

    def dynamic_node(self, properties: object) -> Node:
        """A dynamic node (core spec 3.5.3) with a name hard to guess (broker draft 2.1)."""
        policy: Any = DeleteOnClose()
        if isinstance(properties, dict):
            given = properties.get(_LIFETIME)
            if isinstance(given, _POLICIES):
                policy = given
        address = "tmp." + secrets.token_urlsafe(16)
        node = Queue(self, address, dynamic=True, policy=policy)
        self.nodes[address] = node
        return node

    def dead_letter(self, message: StoredMessage) -> None:
        """A rejected message goes to the dead-letter queue, if there is one (broker draft
        2.3.7 option 2); else it is dropped."""
        address = self.config.dead_letter
        if address is None:
            return
        config = self.config
        node = self.declare(
            address, topic=config.is_topic(address), stream=config.is_stream(address)
        )
        if node.offer(message.copy(self.next_seq())) is None:
            self.dead_lettered += 1
            self.touch(node)

    # -- internals ----------------------------------------------------------------------------

    def advance(self, now: float, wall: float | None) -> None:
        self.wall = now if wall is None else wall

    def next_seq(self) -> int:
        """A new message sequence number (for the broker's nodes: see ``NodeBroker``)."""
        return next(self._seq)

    def watch_expiry(self, message: StoredMessage, queue: Queue) -> None:
        """Drop ``message`` from ``queue`` when it expires, if it is still there (for the
        broker's nodes: see ``NodeBroker``)."""
        assert message.expires is not None
        heap = self._expiry
        if len(heap) >= self._compact_at:
            # Entries of messages gone before they expired: dropped when they pile up,
            # so that the heap stays proportional to the messages waiting.
            heap[:] = [e for e in heap if e[3].available.get(e[2].seq) is e[2]]
            heapq.heapify(heap)
            self._compact_at = max(_COMPACT_MIN, 2 * len(heap))
        heapq.heappush(heap, (message.expires, next(self._ties), message, queue))

    def watch_age(self, stream: Node, when: float) -> None:
        """Apply ``stream``'s retention at ``when`` (wall clock), its oldest message's time
        (for the broker's nodes: see ``NodeBroker``)."""
        assert isinstance(stream, Stream)
        heapq.heappush(self._aging, (when, next(self._ties), stream))

    def _age_streams(self, wall: float) -> None:
        """Age retention of the streams whose oldest message's time has come (it
        watches its next one)."""
        aging = self._aging
        while aging and aging[0][0] <= wall:
            when, _, stream = heapq.heappop(aging)
            if stream.watched == when:
                stream.watched = None
                if not stream.deleted:
                    stream.retain()

    # -- the resource alarm (BrokerConfig.memory_high_watermark) -----------------------------

    def hold(self, message: StoredMessage) -> None:
        """A queue took ``message``: its bytes count towards the resource alarm until
        :meth:`let_go` (for the broker's nodes: see ``NodeBroker``)."""
        if message.held:
            return
        message.held = size = message.size
        self.held_bytes += size
        high = self.config.memory_high_watermark
        if not self.alarm and high is not None and self.held_bytes > high:
            self.alarm = self._alarm_news = True

    def let_go(self, message: StoredMessage) -> None:
        """A queue let go of ``message`` for good (as :meth:`hold` counted it)."""
        size = message.held
        if not size:
            return
        message.held = 0
        self.held_bytes -= size
        if self.alarm:
            clear = self.config.memory_clear_mark
            if clear is None or self.held_bytes < clear:
                self.alarm = False
                self._alarm_news = True

    def tell_alarm(self) -> None:
        """The alarm went on or off since the connections were last told: tell them (0-9-1:
        ``connection.blocked``/``unblocked`` and reading; 1.0: publishers' credit)."""
        if not self._alarm_news:
            return
        self._alarm_news = False
        alarm = self.alarm
        for conn in list(self.connections):
            conn.alarm_changed(alarm)

    def exclusive(self, node: Node) -> bool:
        """Whether ``node`` is a queue some 0-9-1 connection holds exclusively."""
        return self.hosted.exclusive(node)

    def wake(self, queue: Queue | Stream) -> None:
        """``queue`` has messages to hand out, or a consumer of it has room for more:
        dispatched before the input that said so returns (see :meth:`dispatch`)."""
        self._dirty[queue] = None

    def forget_idle(self, node: Node) -> None:
        """``node`` is no longer an unused queue waiting for its expiry (``queue_expiry``)."""
        self._idle_at.pop(node, None)

    @property
    def keeps_subscriptions(self) -> bool:
        """Whether the store keeps topic subscriptions past a restart (a
        :class:`~amqp_sansio.broker.SubscriptionStore`)."""
        return self._subscription_store is not None

    def new_subscription_id(self) -> int:
        """A number for a new kept subscription, unique in this broker and its store."""
        return next(self._subscription_ids)

    def touch(self, node: Node) -> None:
        """Messages arrived at ``node``: dispatch them before the call returns."""
        if isinstance(node, Queue | Stream):
            self._dirty[node] = None
        else:
            for buffer in node.subscriptions.values():  # type: ignore[attr-defined]
                self._dirty[buffer] = None

    def dispatch(self) -> None:
        """Hand messages to consumers, at most ``config.dispatch_batch`` in this turn: a
        node cut short goes to the back of the line, and :attr:`dispatching` says that
        :meth:`dispatch_more` has work."""
        budget = self.config.dispatch_batch
        try:
            while self._dirty:
                queue = next(iter(self._dirty))
                del self._dirty[queue]
                if not queue.deleted and not queue.dispatch(budget):
                    self._dirty[queue] = None
                    return
        finally:
            self.tell_alarm()  # (what this input and its deliveries did to it)

    @property
    def dispatching(self) -> bool:
        """Messages wait for consumers that have credit for them (a turn ended at
        ``config.dispatch_batch``): call :meth:`dispatch_more` once this turn's output is
        written."""
        return bool(self._dirty)

    def dispatch_more(self) -> None:
        """Another turn of handing messages to consumers (``config.dispatch_batch`` at
        most); the connections with output are then in :meth:`pending`."""
        self.dispatch()


class _NoHostedQueues:
    """No queues outside the broker's nodes."""

    def depth(self) -> int:
        return 0

    def queue_of(self, vhost: str, name: str) -> Node | None:
        return None

    def node_deleted(self, node: Node, registered: bool) -> None:
        pass

    def exclusive(self, node: Node) -> bool:
        return False


_NO_HOSTED = _NoHostedQueues()
