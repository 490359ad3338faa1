"""The broker's transactions (core spec part 4; broker draft 3), on one client connection:
a discharge commits what was posted and retired in the transaction all at once, or rolls it
back; the functions take the 1.0 connection (:class:`~.interface.Connection10`) whose
transaction it is."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...definitions.amqp10.messaging import Accepted, Rejected, Released
from ...engine.amqp10.link import Delivery
from ...engine.amqp10.states import ConnectionState, LinkState
from ...engine.amqp10.transactions import DischargeRequest, TransactionRecord
from .._nodes import Node, Queue, error
from .outcomes import apply_outcome

if TYPE_CHECKING:
    from .interface import Connection10

__all__ = ["discharge", "roll_back", "unroutable_in_txn"]

_ATTACHED = LinkState.ATTACHED
_OPENED = ConnectionState.OPENED
_ACCEPTED = Accepted()


def discharge(conn: Connection10, request: DischargeRequest) -> None:
    """Commit: the posted messages reach their nodes and the retired outcomes apply,
    all at once; or roll back: none of it happens, and acquisitions are undone."""
    record = request.transaction
    if request.fail:
        conn.doomed_txns.pop(record, None)
        request.accept()
        roll_back(conn, record)
        return
    why = conn.doomed_txns.pop(record, None)
    if why is not None:
        why = f"a pre-settled message of the transaction went nowhere: {why}"
    else:
        why = _room_for(conn, record)
    if why is not None:
        request.reject(error("amqp:transaction:rollback", why))
        roll_back(conn, record)
        return
    broker = conn.broker
    posted = []
    for delivery in record.posted:
        held = conn.held_in_txn.pop(delivery, None)
        if held is None:
            continue
        node, message = held
        if node.deleted and node.auto:  # deleted once unused since: made again
            node = broker.resolve(node.address) or node
        if not node.deleted and node.offer(message) is None:
            broker.touch(node)
        posted.append(delivery)
    retired = []
    for delivery, outcome in record.retired:
        consumer = conn.consumers.get(delivery.link)
        entry = None if consumer is None else consumer.inflight.pop(delivery, None)
        if entry is None:
            continue
        assert consumer is not None
        apply_outcome(conn.broker, consumer, entry[0], entry[1], outcome)
        retired.append(delivery)
    broker.store.flush()  # the commit is durable before it is accepted
    request.accept()
    for delivery in posted:
        if not delivery.settled and not delivery.remote_settled:
            delivery.link.settle(delivery, _ACCEPTED)  # final now (4.4.4.1)
    for delivery in retired:
        if not delivery.settled and delivery.link.state is _ATTACHED:
            delivery.link.settle(delivery)
    broker.has_output(conn)


def unroutable_in_txn(conn: Connection10, delivery: Delivery, state: Rejected) -> None:
    """An anonymous-relay message posted in a transaction that goes nowhere (core spec
    4.4.4.1). Unsettled, the broker settles it at once with its outcome, ``rejected``,
    in the transaction's transactional-state: the transaction goes on without it (a
    commit posts the rest). Pre-settled, nobody can be told, so the transaction may
    not commit: its discharge is rejected (``amqp:transaction:rollback``)."""
    if delivery.remote_settled:
        conn.broker.unroutable += 1
        record = delivery.transaction
        assert isinstance(record, TransactionRecord)  # the broker's side of a transaction
        error = state.error
        conn.doomed_txns[record] = "" if error is None else str(error.description)
        return
    delivery.link.settle(delivery, state)


def _room_for(conn: Connection10, record: TransactionRecord) -> str | None:
    """Whether the queues can take every message posted in ``record`` (the commit is
    all or nothing)."""
    wanted: dict[Node, list[int]] = {}
    for delivery in record.posted:
        held = conn.held_in_txn.get(delivery)
        if held is not None:
            need = wanted.setdefault(held[0], [0, 0])
            need[0] += 1
            need[1] += held[1].size
    config = conn.broker.config
    for node, (count, size) in wanted.items():
        if not isinstance(node, Queue):
            continue
        if config.max_queue_depth is not None and node.depth + count > config.max_queue_depth:
            return f"queue {node.address!r} cannot take {count} more messages"
        if config.max_queue_bytes is not None and node.bytes + size > config.max_queue_bytes:
            return f"queue {node.address!r} cannot take {size} more bytes"
    return None


def roll_back(conn: Connection10, record: TransactionRecord) -> None:
    """The transaction's work is void: posted messages are dropped, retirements are
    undone (a delivery the consumer already settled takes its default outcome,
    4.4.4.2), and what was acquired in it goes back to its queue."""
    conn.doomed_txns.pop(record, None)
    for delivery in record.posted:
        if conn.held_in_txn.pop(delivery, None) is not None and not delivery.remote_settled:
            link = delivery.link
            if link.state is _ATTACHED and conn.engine.state is _OPENED:
                link.settle(delivery, Released())
    for delivery, _ in record.retired:
        consumer = conn.consumers.get(delivery.link)
        if consumer is not None and delivery.settled and delivery in consumer.inflight:
            message, queue = consumer.inflight.pop(delivery)
            apply_outcome(conn.broker, consumer, message, queue, consumer.default)
    for delivery in record.acquired:
        consumer = conn.consumers.get(delivery.link)
        if consumer is not None and delivery in consumer.inflight:
            message, queue = consumer.inflight.pop(delivery)
            apply_outcome(conn.broker, consumer, message, queue, Released())
            if not delivery.settled and delivery.link.state is _ATTACHED:
                delivery.link.settle(delivery, Released())
    conn.broker.has_output(conn)
