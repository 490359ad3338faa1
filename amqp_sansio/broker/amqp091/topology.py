"""The AMQP 0-9-1 topology a store may keep across a restart (0-9-1 spec
``exchange.declare`` and ``queue.declare``, field ``durable``): virtual hosts, durable
exchanges, durable queue declarations with their arguments, and the bindings between
durable ends, as the records :class:`VhostRecord`, :class:`ExchangeRecord`,
:class:`QueueDeclaration` and :class:`BindingRecord`. A :class:`TopologyStore` is a
:class:`~amqp_sansio.broker.Store` that keeps them; :meth:`Broker.restore_topology
<amqp_sansio.broker.Broker.restore_topology>` makes them again on start.
"""

from __future__ import annotations

from typing import Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from ...codec.amqp091 import FieldValue

__all__ = [
    "BindingRecord",
    "ExchangeRecord",
    "QueueDeclaration",
    "TopologyRecord",
    "TopologyStore",
    "VhostRecord",
]


@attrs.frozen
class VhostRecord:
    """A virtual host the broker has (0-9-1 spec 3.1.2): kept, it is there again after a
    restart, as RabbitMQ keeps its virtual hosts, whether or not the configuration still
    names it."""

    name: str


@attrs.frozen
class ExchangeRecord:
    """A durable exchange a client declared (0-9-1 spec ``exchange.declare``): its virtual
    host, name, type, flags and arguments. The standard exchanges are never recorded (every
    virtual host has them)."""

    vhost: str
    name: str
    type: str
    auto_delete: bool = False
    internal: bool = False
    arguments: dict[str, FieldValue] = attrs.field(factory=dict, eq=False)


@attrs.frozen
class QueueDeclaration:
    """A durable queue a client declared (0-9-1 spec ``queue.declare``): its virtual host,
    name, ``auto_delete`` flag and arguments (``x-message-ttl``, ``x-max-length``,
    ``x-dead-letter-exchange``, ...). Exclusive queues are never recorded: they go with
    their connection."""

    vhost: str
    name: str
    auto_delete: bool = False
    arguments: dict[str, FieldValue] = attrs.field(factory=dict, eq=False)


@attrs.frozen
class BindingRecord:
    """A binding between durable ends (0-9-1 spec ``queue.bind``; RabbitMQ's
    ``exchange.bind``): ``kind`` says whether the destination is a queue or an exchange.
    Two records with the same fields and arguments are the same binding (the arguments as
    the 0-9-1 codec encodes them)."""

    vhost: str
    source: str
    kind: Literal["queue", "exchange"]
    destination: str
    routing_key: str
    arguments: dict[str, FieldValue] = attrs.field(factory=dict)


#: What a :class:`TopologyStore` keeps.
TopologyRecord: TypeAlias = VhostRecord | ExchangeRecord | QueueDeclaration | BindingRecord


@runtime_checkable
class TopologyStore(Protocol):
    """A :class:`Store` that also keeps the 0-9-1 topology across a restart (0-9-1 spec
    ``exchange.declare``/``queue.declare`` field ``durable``): ``keep_topology`` records
    (or records again, changed) a :data:`TopologyRecord`, ``forget_topology`` deletes the
    record of the same key (a vhost's name; an exchange's or queue's vhost and name; every
    field of a binding). Both take effect at the next ``flush``, which the broker calls
    before it answers the method that made the change (``declare-ok``, ``bind-ok``, ...).
    The messages of a queue of a virtual host other than ``/`` are ``put`` with that queue
    as their node (its ``vhost`` says which)."""

    def keep_topology(self, record: TopologyRecord) -> None: ...

    def forget_topology(self, record: TopologyRecord) -> None: ...
