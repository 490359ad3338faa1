"""Virtual hosts of the broker's AMQP 0-9-1 side (0-9-1 spec 3.1.2 "Virtual hosts"): each
has its exchanges (:mod:`.exchanges`), its queues and the bindings between them, and
answers the ``exchange`` and ``queue`` classes' methods as RabbitMQ does.

A 0-9-1 queue *is* a broker :class:`~amqp_sansio.broker.Queue` node: in the default virtual
host ``/`` it is the node of the same name in :attr:`Broker.nodes
<amqp_sansio.broker.Broker.nodes>`, which 1.0 links attach to by address (1.0 connections
see ``/``), so the two protocols share it; a queue made by a 1.0 attach is there for 0-9-1
too (its first 0-9-1 declare adopts it as declared). Other virtual hosts keep their queues to
themselves.

RabbitMQ's common queue arguments apply to the node (see :func:`parse_queue_arguments`):
``x-message-ttl``, ``x-expires``, ``x-max-length``, ``x-max-length-bytes``, ``x-overflow``
(``drop-head``, ``reject-publish``), ``x-dead-letter-exchange`` and
``x-dead-letter-routing-key``; ``x-max-priority`` (1 to 255: that many priorities, as
RabbitMQ's priority queues; without it a 0-9-1 queue is strictly FIFO, see
:class:`~amqp_sansio.broker.Queue`) and ``x-queue-type`` of ``classic`` or ``quorum``
(no other). Exclusive queues belong to the connection that declared them and go with it;
auto-delete queues go when their last 0-9-1 consumer is cancelled; auto-delete exchanges
when their last binding goes.

With a :class:`~amqp_sansio.broker.TopologyStore` (the durable store, ``--store``) the
topology outlives the process as RabbitMQ's does (0-9-1 spec ``exchange.declare`` and
``queue.declare``, field ``durable``): each virtual host, each durable exchange, each
durable queue that is not exclusive (with its flags and arguments), and each binding whose
source and destination are both durable are recorded when made and forgotten when they go
(deleted, auto-deleted, expired, unbound; deleting an exchange or a queue forgets its
bindings too); :func:`restore_topology` makes them again on start. Transient ones are
never written. The persistent messages (delivery-mode 2) of a recorded queue are kept in
the same store, in every virtual host.

The methods raise :class:`Refused` with the reply code a peer gets: 403 ACCESS_REFUSED,
404 NOT_FOUND, 405 RESOURCE_LOCKED, 406 PRECONDITION_FAILED (soft errors: the channel
closes), 503 COMMAND_INVALID, 530 NOT_ALLOWED and 540 NOT_IMPLEMENTED (hard: the
connection closes).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import attrs

from ...codec import amqp10 as t10
from ...codec.amqp091 import FieldValue
from ...definitions.amqp091.spec import BasicProperties, ReplyCode
from .._interface import DEFAULT_VHOST, ConnectionBroker
from .._nodes import Node, Queue
from .._replies import REPLY_PREFIX
from .._store import StoredMessage, parse_message
from .._streams import Stream
from .declarations import QueueRecord, Refused, _refused, parse_queue_arguments, text_argument
from .exchanges import EXCHANGE_TYPES, Binding, Destination, Exchange, check_binding_arguments
from .mapping import EXCHANGE_ANNOTATION, ROUTING_KEY_ANNOTATION, _sections, from_amqp10, published
from .streams import (
    StreamRecord,
    StreamRefused,
    check_stream_flags,
    is_stream_declare,
    not_supported,
    parse_stream_arguments,
)
from .topology import (
    BindingRecord,
    ExchangeRecord,
    QueueDeclaration,
    TopologyRecord,
    TopologyStore,
    VhostRecord,
)

__all__ = [
    "DEFAULT_VHOST",
    "Broker091",
    "Published",
    "VirtualHost",
    "VirtualHosts",
    "restore_topology",
]
#: The exchanges every virtual host has (RabbitMQ's): name, type.
STANDARD_EXCHANGES = (
    ("", "direct"),
    ("amq.direct", "direct"),
    ("amq.fanout", "fanout"),
    ("amq.topic", "topic"),
    ("amq.headers", "headers"),
    ("amq.match", "headers"),
)
#: The prefix of server-named queues (RabbitMQ's).
SERVER_NAMED_PREFIX = "amq.gen-"
#: Names a client may not declare (0-9-1 spec ``exchange.declare`` and ``queue.declare``
#: rule "reserved names"): 403 ACCESS_REFUSED.
RESERVED_PREFIX = "amq."
_X_DEATH = t10.Symbol("x-death")
_FIRST_DEATH = (
    t10.Symbol("x-first-death-reason"),
    t10.Symbol("x-first-death-queue"),
    t10.Symbol("x-first-death-exchange"),
)


@attrs.define
class Published:
    """What a publish did: ``routed`` the queues the exchange found, ``refused`` those
    that refused their copy (at their limits, ``reject-publish``) and why, ``durable``
    whether the message is (delivery-mode 2: a publisher's confirm waits for the store)."""

    routed: int = 0
    refused: list[tuple[Queue | Stream, str]] = attrs.field(factory=list)
    durable: bool = False


class Broker091(ConnectionBroker, Protocol):
    """What the 0-9-1 side asks of the broker: :class:`ConnectionBroker`, and the virtual
    hosts it keeps there (``/`` always, whose queues are the broker's nodes)."""

    vhosts: VirtualHosts


# -- the virtual host --------------------------------------------------------------------------


class VirtualHost:
    """One virtual host: its exchanges, queues and bindings."""

    def __init__(self, broker: Broker091, name: str) -> None:
        self.broker = broker
        self.name = name
        self.exchanges: dict[str, Exchange] = {
            ex_name: Exchange(ex_name, kind, durable=True) for ex_name, kind in STANDARD_EXCHANGES
        }
        #: The queues of a virtual host other than ``/`` (``/``'s are the broker's nodes).
        self._queues: dict[str, Queue] = {}
        #: The 0-9-1 declarations, by queue name.
        self.records: dict[str, QueueRecord] = {}
        #: The bindings to each destination (to remove them when it is deleted).
        self._bound_to: dict[Destination, dict[Binding, None]] = {}
        #: The store that keeps the topology, if the broker's does (see the module).
        store = broker.store
        self._topology: TopologyStore | None = store if isinstance(store, TopologyStore) else None
        #: The bindings recorded in it (between durable ends).
        self._kept: dict[Binding, None] = {}
        if self._topology is not None:
            self._topology.keep_topology(VhostRecord(name))
        #: Streams (``x-queue-type`` ``stream``, :mod:`.streams`): the 0-9-1
        #: declarations by name, and the streams of a virtual host other than ``/``.
        self.stream_records: dict[str, StreamRecord] = {}
        self._streams: dict[str, Stream] = {}

    def __repr__(self) -> str:
        return f"<VirtualHost {self.name!r}>"

    @property
    def default(self) -> bool:
        return self.name == DEFAULT_VHOST

    # -- lookups -------------------------------------------------------------------------------

    def queue(self, name: str) -> Queue | None:
        """The queue of that name, if there is one (in ``/``: a broker node that is a
        queue, made by 0-9-1 or by 1.0)."""
        node = self.broker.nodes.get(name) if self.default else self._queues.get(name)
        if isinstance(node, Queue) and not node.deleted:
            return node
        return None

    def queues(self) -> list[Queue]:
        nodes = self.broker.nodes.values() if self.default else self._queues.values()
        return [n for n in nodes if isinstance(n, Queue) and not n.deleted]

    def exchange(self, name: str) -> Exchange:
        """The exchange of that name, or 404 NOT_FOUND."""
        exchange = self.exchanges.get(name)
        if exchange is None:
            raise Refused(ReplyCode.NOT_FOUND, f"no exchange '{name}' in vhost '{self.name}'")
        return exchange

    def _usable_queue(self, name: str, owner: object | None) -> Queue:
        """The queue of that name for ``owner``'s connection: 404 if there is none, 405 if
        it is exclusive to another connection."""
        queue = self.queue(name)
        if queue is None:
            raise Refused(ReplyCode.NOT_FOUND, f"no queue '{name}' in vhost '{self.name}'")
        record = self.records.get(name)
        if record is not None and record.exclusive and record.owner is not owner:
            raise Refused(
                ReplyCode.RESOURCE_LOCKED,
                f"cannot obtain exclusive access to locked queue '{name}' in vhost "
                f"'{self.name}'. It could be originally declared on another connection or "
                "the exclusive property value does not match that of the original declaration.",
            )
        return queue

    def exclusive(self, queue: Queue) -> bool:
        """Whether ``queue`` is a 0-9-1 exclusive queue (a 1.0 link may not attach to it:
        ``amqp:resource-locked``)."""
        record = self.records.get(queue.address)
        return record is not None and record.queue is queue and record.exclusive

    def usable_queue(self, name: str, owner: object | None) -> Queue:
        """As for consuming, getting or binding: 404, 405 as :meth:`_usable_queue`."""
        return self._usable_queue(name, owner)

    # -- exchanges (exchange.declare, exchange.delete, exchange.bind, exchange.unbind) ----------

    def declare_exchange(
        self,
        name: str,
        type: str,
        *,
        passive: bool = False,
        durable: bool = False,
        auto_delete: bool = False,
        internal: bool = False,
        arguments: Mapping[str, FieldValue] | None = None,
    ) -> Exchange:
        """``exchange.declare`` (0-9-1 spec 1.6.2.1)."""
        if name == "":
            raise Refused(
                ReplyCode.ACCESS_REFUSED, "operation not permitted on the default exchange"
            )
        existing = self.exchanges.get(name)
        if passive:
            if existing is None:
                raise Refused(ReplyCode.NOT_FOUND, f"no exchange '{name}' in vhost '{self.name}'")
            return existing
        if existing is None and name.startswith(RESERVED_PREFIX):
            # (a standard exchange declared again, as it is, is declare-ok: RabbitMQ's
            # rule; a new name with the prefix is refused: rule "reserved names")
            raise Refused(
                ReplyCode.ACCESS_REFUSED,
                f"exchange name '{name}' contains reserved prefix '{RESERVED_PREFIX}*'",
            )
        if type not in EXCHANGE_TYPES:
            raise Refused(ReplyCode.COMMAND_INVALID, f"invalid exchange type '{type}'")
        if existing is not None:
            why = existing.equivalent(type, durable, auto_delete, internal, arguments)
            if why is not None:
                raise Refused(ReplyCode.PRECONDITION_FAILED, why)
            return existing
        exchange = Exchange(
            name,
            type,
            durable=durable,
            auto_delete=auto_delete,
            internal=internal,
            arguments=arguments,
        )
        self.exchanges[name] = exchange
        if durable and self._topology is not None:
            self._topology.keep_topology(
                ExchangeRecord(
                    self.name,
                    name,
                    type,
                    auto_delete=auto_delete,
                    internal=internal,
                    arguments=exchange.arguments,
                )
            )
        return exchange

    def delete_exchange(self, name: str, *, if_unused: bool = False) -> None:
        """``exchange.delete`` (1.6.2.3): deleting one that is not there is no error (as
        in RabbitMQ); its bindings, as source and as destination, go with it."""
        if name == "" or name.startswith(RESERVED_PREFIX):
            raise Refused(ReplyCode.ACCESS_REFUSED, f"operation not permitted on exchange '{name}'")
        exchange = self.exchanges.get(name)
        if exchange is None:
            return
        if if_unused and exchange.bindings:
            raise Refused(ReplyCode.PRECONDITION_FAILED, f"exchange '{name}' in use")
        self._drop_exchange(exchange)

    def _drop_exchange(self, exchange: Exchange) -> None:
        del self.exchanges[exchange.name]
        for binding in exchange.bindings:
            exchange.unbind(binding)
            self._forget(binding)
        self._unbind_destination(("exchange", exchange.name))
        if exchange.durable and self._topology is not None:
            self._topology.forget_topology(ExchangeRecord(self.name, exchange.name, exchange.type))

    def _forget(self, binding: Binding) -> None:
        bound = self._bound_to.get(binding.destination)
        if bound is not None:
            bound.pop(binding, None)
            if not bound:
                del self._bound_to[binding.destination]
        self._unkeep(binding)

    def _unkeep(self, binding: Binding) -> None:
        """``binding`` went: its record goes, if it had one."""
        if binding in self._kept:
            del self._kept[binding]
            topology = self._topology
            assert topology is not None  # (only a store that keeps them has them)
            topology.forget_topology(self._binding_record(binding))

    def _binding_record(self, binding: Binding) -> BindingRecord:
        kind, name = binding.destination
        return BindingRecord(
            self.name, binding.source, kind, name, binding.routing_key, dict(binding.arguments)
        )

    def _durable(self, destination: Destination) -> bool:
        """Whether ``destination`` is recorded in the store: a durable exchange, or a
        durable queue that is not exclusive (of this virtual host's 0-9-1 declarations)."""
        kind, name = destination
        if kind == "exchange":
            exchange = self.exchanges.get(name)
            return exchange is not None and exchange.durable
        record = self.records.get(name)
        return record is not None and record.durable and not record.exclusive

    def _unbind_destination(self, destination: Destination) -> None:
        for binding in list(self._bound_to.pop(destination, {})):
            self._unkeep(binding)
            source = self.exchanges.get(binding.source)
            if source is not None:
                source.unbind(binding)
                self._auto_delete_exchange(source)

    def _auto_delete_exchange(self, exchange: Exchange) -> None:
        if (
            exchange.auto_delete
            and exchange.had_bindings
            and not exchange.bindings
            and self.exchanges.get(exchange.name) is exchange
        ):
            self._drop_exchange(exchange)

    def bind(
        self,
        destination: Destination,
        source: str,
        routing_key: str,
        arguments: Mapping[str, FieldValue] | None = None,
        *,
        owner: object | None = None,
    ) -> None:
        """``queue.bind`` (1.7.2.3) or ``exchange.bind`` (RabbitMQ's extension). Binding to
        or from the default exchange is refused (403); a binding made twice is one."""
        exchange, destination = self._binding_ends(destination, source, owner)
        arguments = dict(arguments or {})
        why = check_binding_arguments(exchange.type, arguments)
        if why is not None:
            raise Refused(ReplyCode.PRECONDITION_FAILED, why)
        binding = Binding(source, destination, routing_key, arguments)
        if exchange.bind(binding):
            self._bound_to.setdefault(destination, {})[binding] = None
            if self._topology is not None and exchange.durable and self._durable(destination):
                self._kept[binding] = None
                self._topology.keep_topology(self._binding_record(binding))

    def unbind(
        self,
        destination: Destination,
        source: str,
        routing_key: str,
        arguments: Mapping[str, FieldValue] | None = None,
        *,
        owner: object | None = None,
    ) -> None:
        """``queue.unbind`` (1.7.2.5) or ``exchange.unbind``: a binding that is not there
        is no error (RabbitMQ's); a missing source or destination is 404."""
        exchange, destination = self._binding_ends(destination, source, owner)
        binding = Binding(source, destination, routing_key, dict(arguments or {}))
        if exchange.unbind(binding):
            self._forget(binding)
            self._auto_delete_exchange(exchange)

    def _binding_ends(
        self, destination: Destination, source: str, owner: object | None
    ) -> tuple[Exchange, Destination]:
        kind, name = destination
        if source == "" or (kind == "exchange" and name == ""):
            raise Refused(
                ReplyCode.ACCESS_REFUSED, "operation not permitted on the default exchange"
            )
        if kind == "queue":
            if self.stream(name) is None:
                self._usable_queue(name, owner)
        else:
            self.exchange(name)
        return self.exchange(source), destination

    # -- queues (queue.declare, queue.purge, queue.delete) --------------------------------------

    def declare_queue(
        self,
        name: str,
        *,
        passive: bool = False,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        arguments: Mapping[str, FieldValue] | None = None,
        owner: object | None = None,
    ) -> tuple[Queue | Stream, int, int]:
        """``queue.declare`` (1.7.2.1): the queue (or stream), its ready messages and its
        consumers."""
        arguments = dict(arguments or {})
        declared = self._declare_stream(name, passive, durable, exclusive, auto_delete, arguments)
        if declared is not None:
            return declared
        if passive:
            queue = self._usable_queue(name, owner)
            self._used(queue)
            return queue, len(queue.available), len(queue.consumers)
        if name == "":
            name = SERVER_NAMED_PREFIX + secrets.token_urlsafe(16)
        node = self.broker.nodes.get(name) if self.default else self._queues.get(name)
        if node is not None and not isinstance(node, Queue):
            raise Refused(
                ReplyCode.PRECONDITION_FAILED,
                f"'{name}' is a {node.kind} of the broker's 1.0 side, not a queue",
            )
        if (
            node is None
            and name.startswith(RESERVED_PREFIX)
            and not name.startswith(SERVER_NAMED_PREFIX)
        ):
            raise Refused(
                ReplyCode.ACCESS_REFUSED,
                f"queue name '{name}' contains reserved prefix '{RESERVED_PREFIX}*'",
            )
        parsed = parse_queue_arguments(arguments)
        record = self.records.get(name)
        if node is not None and record is not None:
            self._usable_queue(name, owner)
            why = record.equivalent(durable, exclusive, auto_delete, arguments)
            if why is not None:
                raise Refused(ReplyCode.PRECONDITION_FAILED, why)
            self._used(node)
            return node, len(node.available), len(node.consumers)
        if node is None:
            node = Queue(self.broker, name)
            if self.default:
                self.broker.nodes[name] = node
            else:
                self._queues[name] = node
                node.vhost = self
        node.auto = False  # (a queue made by a 1.0 attach, adopted: 0-9-1 rules from now)
        self.broker.forget_idle(node)
        record = QueueRecord(
            node,
            durable=durable,
            exclusive=exclusive,
            auto_delete=auto_delete,
            arguments=arguments,
            parsed=parsed,
            owner=owner if exclusive else None,
        )
        self.records[name] = record
        node.transient = not durable or exclusive
        node.max_depth = parsed.max_length
        node.max_bytes = parsed.max_length_bytes
        # RabbitMQ's default past x-max-length(-bytes) is drop-head
        limited = parsed.max_length is not None or parsed.max_length_bytes is not None
        node.overflow = parsed.overflow or ("drop-head" if limited else None)
        node.message_ttl = parsed.message_ttl
        node.order_by(parsed.max_priority or 0)  # (0-9-1's: FIFO without x-max-priority)
        if parsed.dead_letter_exchange is not None:
            node.dead_letter_to = _DeadLetter(self, record)
        if not node.transient and self._topology is not None:
            self._topology.keep_topology(
                QueueDeclaration(self.name, name, auto_delete=auto_delete, arguments=arguments)
            )
        self._used(node)
        return node, len(node.available), len(node.consumers)

    def purge_queue(self, name: str, *, owner: object | None = None) -> int:
        """``queue.purge`` (1.7.2.7): the ready messages go (not those out with consumers);
        returns how many. A stream: 540 NOT_IMPLEMENTED (RabbitMQ's)."""
        if self.stream(name) is not None:
            raise _refused(not_supported("queue.purge", name, self.name))
        queue = self._usable_queue(name, owner)
        count = len(queue.available)
        for message in list(queue.available.values()):
            queue.drop(message)
        self.broker.store.flush()
        return count

    def delete_queue(
        self,
        name: str,
        *,
        if_unused: bool = False,
        if_empty: bool = False,
        owner: object | None = None,
    ) -> int:
        """``queue.delete`` (1.7.2.9): returns the messages it held. Deleting a queue that
        is not there is no error (RabbitMQ's); ``if_unused`` refuses one with consumers,
        ``if_empty`` one with messages (406)."""
        stream = self.stream(name)
        if stream is not None:
            return self._delete_stream(stream, if_unused=if_unused, if_empty=if_empty)
        if self.queue(name) is None:
            return 0
        queue = self._usable_queue(name, owner)
        if if_unused and queue.consumers:
            raise Refused(ReplyCode.PRECONDITION_FAILED, f"queue '{name}' in use")
        if if_empty and queue.depth:
            raise Refused(ReplyCode.PRECONDITION_FAILED, f"queue '{name}' not empty")
        count = len(queue.available)
        self.broker.delete_node(queue)
        self.broker.store.flush()
        return count

    def node_deleted(self, node: Node, registered: bool) -> None:
        """The broker deleted a node (by 0-9-1, by 1.0's rules, by ``x-expires``;
        ``registered``: it was the broker's node of its name, a node of ``/``): its record
        and the bindings to it go."""
        name = node.address
        if isinstance(node, Stream):
            self._stream_deleted(node, registered)
            return
        if not isinstance(node, Queue):
            return
        if self.default:
            if not registered:
                return
        elif self._queues.get(name) is node:
            del self._queues[name]
        else:
            return
        record = self.records.get(name)
        self._unbind_destination(("queue", name))
        if record is not None and record.queue is node:
            del self.records[name]
            if not node.transient and self._topology is not None:
                self._topology.forget_topology(QueueDeclaration(self.name, name))

    def owner_gone(self, owner: object) -> None:
        """A connection closed: its exclusive queues are deleted."""
        for record in [r for r in self.records.values() if r.owner is owner]:
            self.broker.delete_node(record.queue)

    def consumer_added(self, queue: Queue) -> None:
        record = self.records.get(queue.address)
        if record is not None and record.queue is queue:
            record.had_consumers = True
        self.broker.forget_idle(queue)

    def consumer_removed(self, queue: Queue) -> None:
        """A 0-9-1 consumer of ``queue`` went: an auto-delete queue with no consumer left
        is deleted; a queue with ``x-expires`` and no consumer starts its timer."""
        if queue.deleted or queue.consumers:
            return
        record = self.records.get(queue.address)
        if record is None or record.queue is not queue:
            return
        if record.auto_delete and record.had_consumers:
            self.broker.delete_node(queue)
        else:
            self._used(queue)

    def _used(self, queue: Queue) -> None:
        """The queue was used (declared, read with ``basic.get``, left by its last
        consumer): its ``x-expires`` timer starts again (RabbitMQ's rule)."""
        record = self.records.get(queue.address)
        if record is None or record.parsed.expires is None or queue.consumers:
            return
        self.broker.idle_until(queue, self.broker.wall + record.parsed.expires / 1000.0)

    def got(self, queue: Queue) -> None:
        """``basic.get`` read the queue (it counts as use for ``x-expires``)."""
        self._used(queue)

    # -- streams (x-queue-type stream: .streams) -------------------------------------------

    def stream(self, name: str) -> Stream | None:
        """The stream of that name, if there is one (in ``/``: a broker node that is a
        stream, made by 0-9-1 or by 1.0)."""
        node = self.broker.nodes.get(name) if self.default else self._streams.get(name)
        if isinstance(node, Stream) and not node.deleted:
            return node
        return None

    def _declare_stream(
        self,
        name: str,
        passive: bool,
        durable: bool,
        exclusive: bool,
        auto_delete: bool,
        arguments: dict[str, FieldValue],
    ) -> tuple[Stream, int, int] | None:
        """``queue.declare`` of a stream (:mod:`.streams`), or None when the declare is
        not about one (no ``x-queue-type`` ``stream``, and no stream of that name)."""
        existing = self.stream(name)
        record = self.stream_records.get(name)  # (gone with its stream: _stream_deleted)
        wants = is_stream_declare(arguments)
        if passive:
            if existing is None:
                return None
            existing.retain()
            return existing, existing.depth, len(existing.consumers)
        if not wants:
            if existing is None:
                return None
            given = arguments.get("x-queue-type")
            received = "none" if given is None else repr(text_argument("x-queue-type", given))
            raise Refused(
                ReplyCode.PRECONDITION_FAILED,
                f"inequivalent arg 'x-queue-type' for queue '{name}' in vhost '{self.name}': "
                f"received {received} but current is 'stream'",
            )
        if name == "":
            name = SERVER_NAMED_PREFIX + secrets.token_urlsafe(16)
        try:
            check_stream_flags(
                name, self.name, durable=durable, exclusive=exclusive, auto_delete=auto_delete
            )
            max_bytes, max_age = parse_stream_arguments(name, self.name, arguments)
            if record is not None:
                why = record.inequivalent(self.name, arguments)
                if why is not None:
                    raise StreamRefused(ReplyCode.PRECONDITION_FAILED, why)
        except StreamRefused as refused:
            raise _refused(refused) from None
        if existing is None:
            other = self.broker.nodes.get(name) if self.default else self._queues.get(name)
            if other is not None and not other.deleted:
                current = "classic" if isinstance(other, Queue) else other.kind
                raise Refused(
                    ReplyCode.PRECONDITION_FAILED,
                    f"inequivalent arg 'x-queue-type' for queue '{name}' in vhost "
                    f"'{self.name}': received 'stream' but current is '{current}'",
                )
            if name.startswith(RESERVED_PREFIX) and not name.startswith(SERVER_NAMED_PREFIX):
                raise Refused(
                    ReplyCode.ACCESS_REFUSED,
                    f"queue name '{name}' contains reserved prefix '{RESERVED_PREFIX}*'",
                )
            existing = Stream(self.broker, name)
            if self.default:
                self.broker.nodes[name] = existing
            else:
                self._streams[name] = existing
        existing.auto = False  # (a stream made by a 1.0 attach, adopted)
        existing.max_bytes, existing.max_age = max_bytes, max_age
        self.stream_records[name] = StreamRecord(existing, arguments)
        existing.retain()
        return existing, existing.depth, len(existing.consumers)

    def _delete_stream(self, stream: Stream, *, if_unused: bool, if_empty: bool) -> int:
        """``queue.delete`` of a stream: returns the messages it held."""
        name = stream.address
        if if_unused and stream.consumers:
            raise Refused(ReplyCode.PRECONDITION_FAILED, f"queue '{name}' in use")
        if if_empty and stream.depth:
            raise Refused(ReplyCode.PRECONDITION_FAILED, f"queue '{name}' not empty")
        count = stream.depth
        self.broker.delete_node(stream)
        return count

    def _stream_deleted(self, stream: Stream, registered: bool) -> None:
        """A stream of this virtual host was deleted: its record and bindings go."""
        name = stream.address
        if self.default:
            if not registered:
                return
        elif self._streams.get(name) is stream:
            del self._streams[name]
        else:
            return
        self.stream_records.pop(name, None)
        self._unbind_destination(("queue", name))

    # -- routing -------------------------------------------------------------------------------

    def route(
        self,
        exchange: str,
        routing_key: str,
        headers: Mapping[str, FieldValue] | None,
        *,
        publishing: bool = True,
    ) -> list[Queue | Stream]:
        """The queues (and streams) a message published to ``exchange`` with ``routing_key`` and
        ``headers`` goes to, each once: the default exchange's queue of that name, or the
        destinations of the exchange's matching bindings, following exchange-to-exchange
        bindings (each exchange visited once) and alternate exchanges (RabbitMQ's
        ``alternate-exchange`` argument: where an exchange routes nothing). 404 if the
        exchange is not there; 403 to publish to an internal one."""
        if exchange == "":
            node = (
                self.broker.nodes.get(routing_key)
                if self.name == DEFAULT_VHOST
                else self._queues.get(routing_key)
            )  # (as queue() finds it)
            if type(node) is Queue and not node.deleted:
                return [node]
            queue = self.queue(routing_key) or self.stream(routing_key)
            return [] if queue is None else [queue]
        first = self.exchange(exchange)
        if publishing and first.internal:
            raise Refused(
                ReplyCode.ACCESS_REFUSED, f"cannot publish to internal exchange '{exchange}'"
            )
        queues: dict[Queue | Stream, None] = {}
        seen: set[str] = set()
        todo = [first]
        while todo:
            current = todo.pop(0)
            if current.name in seen:
                continue
            seen.add(current.name)
            routed = False
            for binding in current.match(routing_key, headers):
                kind, name = binding.destination
                if kind == "queue":
                    queue = self.queue(name) or self.stream(name)
                    if queue is not None:
                        queues[queue] = None
                        routed = True
                else:
                    target = self.exchanges.get(name)
                    if target is not None:
                        todo.append(target)
                        routed = True
            alternate = current.arguments.get("alternate-exchange")
            if not routed and isinstance(alternate, str | bytes):
                name = alternate.decode() if isinstance(alternate, bytes) else alternate
                target = self.exchanges.get(name)
                if target is not None:
                    todo.append(target)
        return list(queues)

    # -- publishing -----------------------------------------------------------------------------

    def publish(
        self,
        exchange: str,
        routing_key: str,
        properties: BasicProperties | None,
        body: bytes,
    ) -> Published:
        """``basic.publish`` (1.8.3.7) without the protocol around it: the message, mapped
        to its 1.0 form (:mod:`.mapping`), goes to each queue :meth:`route` finds. An
        ``expiration`` that is not an integer is refused (406); a queue at its limits with
        ``reject-publish`` refuses its copy (``Published.refused``). The caller dispatches
        (the broker's consumers get the messages once its input is handled). To the default
        exchange with a direct reply-to name as key, it goes to its requester at once, or
        nowhere (:mod:`.._replies`)."""
        if properties is None:
            properties = BasicProperties()
        queues = self.route(exchange, routing_key, properties.headers)
        wall = self.broker.wall
        try:
            template = published(properties, body, exchange, routing_key, wall)
        except ValueError as exc:
            raise Refused(ReplyCode.PRECONDITION_FAILED, str(exc)) from None
        return self._offer(template, queues, exchange, routing_key)

    def publish_message(
        self,
        exchange: str,
        routing_key: str,
        data: bytes,
        headers: Mapping[str, FieldValue] | None = None,
    ) -> Published:
        """A message in its 1.0 form (``data``: another protocol's publish, mapped) to
        ``exchange`` with ``routing_key`` and ``headers`` (for a headers exchange), as
        :meth:`publish` publishes a 0-9-1 one (:class:`~amqp_sansio.DecodeError`: bad
        sections)."""
        template = parse_message(data, seq=0, wall=self.broker.wall)
        return self.publish_stored(exchange, routing_key, template, headers)

    def publish_stored(
        self,
        exchange: str,
        routing_key: str,
        template: StoredMessage,
        headers: Mapping[str, FieldValue] | None = None,
    ) -> Published:
        """:meth:`publish_message` of a message its protocol has read already (``template``,
        as :func:`~amqp_sansio.broker.parse_message` reads one, with its native form)."""
        queues = self.route(exchange, routing_key, headers)
        return self._offer(template, queues, exchange, routing_key)

    def _offer(
        self,
        template: StoredMessage,
        queues: list[Queue | Stream],
        exchange: str,
        routing_key: str,
    ) -> Published:
        """``template`` to each of ``queues`` (a copy each, the last the template itself)."""
        broker = self.broker
        published = Published(len(queues), [], template.durable)
        if not queues and exchange == "" and routing_key.startswith(REPLY_PREFIX):
            published.routed = int(broker.replies.deliver(routing_key, template))  # (.._replies)
        refused = published.refused
        last = queues[-1] if queues else None
        for queue in queues:
            if queue is not last:
                message = template.copy(broker.next_seq())
            else:  # (the last queue takes the template itself: the copies are made)
                message = template
                message.seq = broker.next_seq()
            why = queue.offer(message)  # (an expiration of 0 expires there)
            if why is None:
                broker.wake(queue)  # (Broker._touch of a queue: dispatched soon)
            else:
                refused.append((queue, why))
        return published

    # -- what a query reads (another protocol's exchange.query, queue.query, bound) ----------

    def query_exchange(self, name: str) -> tuple[str, bool, dict[str, FieldValue]] | None:
        """The exchange ``name``'s type, durability and arguments, or None: there is none."""
        exchange = self.exchanges.get(name)
        if exchange is None:
            return None
        return exchange.type, exchange.durable, dict(exchange.arguments)

    def query_queue(
        self, name: str
    ) -> tuple[Queue, bool, bool, bool, dict[str, FieldValue]] | None:
        """The queue ``name`` (not a stream) with its durability, exclusivity, auto-delete
        and arguments as declared (a queue made by 1.0 or by configuration: none set), or
        None: there is none."""
        queue = self.queue(name)
        if queue is None:
            return None
        record = self.records.get(name)
        if record is None or record.queue is not queue:
            return queue, False, False, False, {}
        return queue, record.durable, record.exclusive, record.auto_delete, dict(record.arguments)

    def bindings_of(self, exchange: str) -> list[tuple[Destination, str, dict[str, FieldValue]]]:
        """The bindings from ``exchange`` (none without it): destination, key, arguments."""
        found = self.exchanges.get(exchange)
        if found is None:
            return []
        return [(b.destination, b.routing_key, dict(b.arguments)) for b in found.bindings]

    # -- dead-lettering ------------------------------------------------------------------------

    def dead_letter(self, record: QueueRecord, message: StoredMessage, reason: str) -> None:
        """A message of a queue with ``x-dead-letter-exchange`` is dead (``rejected``,
        ``expired``, ``maxlen``): republished to that exchange, with the queue's
        ``x-dead-letter-routing-key`` or its own routing key, its ``x-death`` history
        (RabbitMQ's: one entry per queue and reason, with a count) in message annotations
        and its expiry gone. A missing exchange drops it (RabbitMQ's rule), and so does a
        cycle back to a queue it was dead-lettered from for a reason other than
        ``rejected``."""
        parsed = record.parsed
        assert parsed.dead_letter_exchange is not None
        broker = self.broker
        _, annotations, _, _, _ = _sections(message.data)
        original_key = annotations.get(ROUTING_KEY_ANNOTATION)
        if not isinstance(original_key, str):
            original_key = record.queue.address
        original_exchange = annotations.get(EXCHANGE_ANNOTATION)
        if not isinstance(original_exchange, str):
            original_exchange = ""
        routing_key = parsed.dead_letter_routing_key or original_key
        deaths = _deaths(annotations.get(_X_DEATH))
        queue_name = record.queue.address
        entry = next(
            (d for d in deaths if d.get("queue") == queue_name and d.get("reason") == reason),
            None,
        )
        if entry is None:
            entry = {
                "count": 0,
                "reason": reason,
                "queue": queue_name,
                "time": t10.Timestamp(int(broker.wall * 1000)),
                "exchange": original_exchange,
                "routing-keys": [original_key],
            }
            deaths.insert(0, entry)
        else:
            deaths.remove(entry)
            deaths.insert(0, entry)
        entry["count"] = int(entry["count"]) + 1
        try:
            targets = self.route(
                parsed.dead_letter_exchange,
                routing_key,
                from_amqp10(message.data)[0].headers,
                publishing=False,
            )
        except Refused:
            return  # no such exchange: dropped
        if all(d.get("reason") != "rejected" for d in deaths):
            # a cycle with no rejection in it: not back to a queue it died in
            died_in = {d.get("queue") for d in deaths}
            targets = [q for q in targets if q.address not in died_in]
        update: dict[Any, Any] = {
            _X_DEATH: [{t10.Symbol(k): v for k, v in d.items()} for d in deaths],
            ROUTING_KEY_ANNOTATION: routing_key,
            EXCHANGE_ANNOTATION: parsed.dead_letter_exchange,
        }
        for key, value in zip(_FIRST_DEATH, (reason, queue_name, original_exchange), strict=True):
            if key not in annotations:
                update[key] = value
        for target in targets:
            copy = message.copy(broker.next_seq())
            copy.expires = None
            copy.annotate(update)
            if target.offer(copy) is None:
                broker.dead_lettered += 1
                broker.touch(target)


class VirtualHosts(dict[str, VirtualHost]):
    """The broker's virtual hosts by name, as the core sees them (the queues it keeps
    outside the broker's nodes: :class:`~amqp_sansio.broker._interface.HostedQueues`)."""

    def depth(self) -> int:
        return sum(
            queue.depth for vhost in self.values() if not vhost.default for queue in vhost.queues()
        )

    def queue_of(self, vhost: str, name: str) -> Node | None:
        host = self.get(vhost)
        return None if host is None else host.queue(name)

    def node_deleted(self, node: Node, registered: bool) -> None:
        for vhost in self.values():
            vhost.node_deleted(node, registered)

    def exclusive(self, node: Node) -> bool:
        return isinstance(node, Queue) and self[DEFAULT_VHOST].exclusive(node)


def restore_topology(broker: Broker091, records: Iterable[TopologyRecord]) -> list[TopologyRecord]:
    """Make again the 0-9-1 topology a :class:`~amqp_sansio.broker.TopologyStore` kept
    (before the broker serves anyone, and before its messages are restored): virtual hosts
    first (one the configuration no longer names is there again, as RabbitMQ keeps its
    virtual hosts), then exchanges, queues (with their arguments: an ``x-expires`` timer
    starts again) and bindings, each as its declaration made it. Returns the records it
    could not make again, for the store to forget: of a virtual host it has not, refused
    as a client's declaration would be now (a name that is a topic's, an argument no longer
    valid), or a binding whose ends are gone."""
    rank = {VhostRecord: 0, ExchangeRecord: 1, QueueDeclaration: 2, BindingRecord: 3}
    lost: list[TopologyRecord] = []
    for record in sorted(records, key=lambda r: rank[type(r)]):
        if isinstance(record, VhostRecord):
            if record.name not in broker.vhosts:
                broker.vhosts[record.name] = VirtualHost(broker, record.name)
            continue
        vhost = broker.vhosts.get(record.vhost)
        try:
            if vhost is None:
                raise Refused(ReplyCode.NOT_FOUND, f"no vhost '{record.vhost}'")
            if isinstance(record, ExchangeRecord):
                vhost.declare_exchange(
                    record.name,
                    record.type,
                    durable=True,
                    auto_delete=record.auto_delete,
                    internal=record.internal,
                    arguments=record.arguments,
                )
            elif isinstance(record, QueueDeclaration):
                vhost.declare_queue(
                    record.name,
                    durable=True,
                    auto_delete=record.auto_delete,
                    arguments=record.arguments,
                )
            else:
                destination: Destination = (record.kind, record.destination)
                if not vhost._durable(destination):
                    raise Refused(ReplyCode.NOT_FOUND, "no durable destination")
                vhost.bind(destination, record.source, record.routing_key, record.arguments)
        except Refused:
            lost.append(record)
    return lost


def _deaths(value: Any) -> list[dict[str, Any]]:
    """The ``x-death`` entries of a message's annotations, as plain dicts."""
    if not isinstance(value, list | tuple | t10.Array):
        return []
    out = []
    for item in value:
        if isinstance(item, dict):
            out.append({str(k): v for k, v in item.items()})
    return out


@attrs.frozen
class _DeadLetter:
    """A queue's ``dead_letter_to``: its virtual host's :meth:`VirtualHost.dead_letter`."""

    vhost: VirtualHost
    record: QueueRecord

    def __call__(self, message: StoredMessage, reason: str) -> None:
        self.vhost.dead_letter(self.record, message, reason)
