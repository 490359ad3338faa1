"""What the broker does with each AMQP 0-10 command a client sends (0-10 spec, classes
``exchange``, ``queue``, ``message``, ``tx``; ``execution`` is the engine's): one table,
:data:`COMMANDS`, from the command's class to its handler. A handler acts on the virtual
host (:class:`~amqp_sansio.broker._interface.VirtualHostAccess`, the objects 0-9-1 declares)
and gives the command's result struct, if it has one; a refusal raises
:class:`~amqp_sansio.broker._refused.Refused`, which the connection answers with
``execution.exception`` (the session then ends), its code an ``execution.error-code``
(:func:`error_code` maps the virtual host's). Commands of the classes ``dtx``, ``file``
and ``stream``, ``message.resume`` and acquire-mode not-acquired are refused with 540
``not-implemented``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...definitions import amqp010 as spec
from ...engine.amqp010 import CommandReceived, ErrorCode
from ...errors import EncodeError
from .._refused import Refused
from .._streams import Stream
from .mapping import arrived, headers_of
from .sessions import UNLIMITED, Connection010, Session010, Subscription

__all__ = ["COMMANDS", "CommandRefused", "error_code"]

#: The virtual host's refusal codes (0-9-1's reply codes) as ``execution.error-code``s
#: where they differ: 403 ACCESS_REFUSED (a reserved name, the default exchange) is 530
#: ``not-allowed``, 503 COMMAND_INVALID (an exchange type there is not) 404 ``not-found``
#: (Qpid's), 311 CONTENT_TOO_LARGE 506 ``resource-limit-exceeded``. The others (404, 405,
#: 406, 530, 540) mean the same in both.
_CODES = {
    403: ErrorCode.NOT_ALLOWED,
    503: ErrorCode.NOT_FOUND,
    311: ErrorCode.RESOURCE_LIMIT_EXCEEDED,
}
_KNOWN = frozenset(int(code) for code in ErrorCode)


class CommandRefused(Refused):
    """A refusal of the 0-10 side itself: its code is an ``execution.error-code`` already."""


Handler = Callable[[Connection010, Session010, CommandReceived], spec.Struct | None]


def error_code(refused: Refused) -> int:
    """The ``execution.error-code`` of a refusal (the virtual host's code mapped)."""
    reply_code = refused.reply_code
    if isinstance(refused, CommandRefused):
        return reply_code
    code = _CODES.get(reply_code, reply_code)
    return int(code) if int(code) in _KNOWN else int(ErrorCode.INTERNAL_ERROR)


def _name(value: str | None, what: str) -> str:
    """A queue name a command must give (0-10 spec: "If the queue name in this command is
    empty, the server MUST raise an exception"): 531 ``illegal-argument``."""
    if not value:
        raise CommandRefused(ErrorCode.ILLEGAL_ARGUMENT, f"{what}: no queue name")
    return value


def _check_access(conn: Connection010, address: str, *, send: bool) -> None:
    """The broker's access rules (``BrokerConfig.users``), as for 1.0 addresses and 0-9-1:
    a transfer is a send to its exchange (to the queue of its routing key through the
    default exchange), a subscribe a receive from its queue; 403 ``unauthorized-access``
    otherwise."""
    users = conn.broker.config.users
    if users is None or users.allows(conn.identity, address, send=send):
        return
    verb = "send to" if send else "receive from"
    raise CommandRefused(
        ErrorCode.UNAUTHORIZED_ACCESS, f"user {conn.identity!r} may not {verb} {address!r}"
    )


# -- exchange ---------------------------------------------------------------------------------


def _exchange_declare(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.ExchangeDeclare = e.command  # type: ignore[assignment]
    name = m.exchange or ""
    vhost = conn.vhost_or_default
    arguments = dict(m.arguments or {})
    if m.alternate_exchange:
        arguments["alternate-exchange"] = m.alternate_exchange
    existing = vhost.query_exchange(name)
    if not m.passive and existing is not None and m.type and existing[0] != m.type:
        # exchange.declare rule "type": an exchange declared again keeps its type
        raise Refused(
            ErrorCode.NOT_ALLOWED, f"exchange {name!r} is of type {existing[0]}, not {m.type}"
        )
    if not m.passive and not m.type:
        raise CommandRefused(ErrorCode.COMMAND_INVALID, f"exchange.declare of {name!r}: no type")
    if existing is not None and not m.passive:
        return  # (declared again: 0-10 does not check the other fields)
    vhost.declare_exchange(
        name,
        m.type or "",
        passive=m.passive,
        durable=m.durable,
        auto_delete=m.auto_delete,
        arguments=arguments,
    )


def _exchange_delete(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.ExchangeDelete = e.command  # type: ignore[assignment]
    name = m.exchange or ""
    vhost = conn.vhost_or_default
    if name and vhost.query_exchange(name) is None:
        raise CommandRefused(ErrorCode.NOT_FOUND, f"no exchange {name!r}")
    vhost.delete_exchange(name, if_unused=m.if_unused)


def _exchange_query(
    conn: Connection010, ssn: Session010, e: CommandReceived
) -> spec.ExchangeQueryResult:
    m: spec.ExchangeQuery = e.command  # type: ignore[assignment]
    found = conn.vhost_or_default.query_exchange(m.name or "")
    if found is None:
        return spec.ExchangeQueryResult(not_found=True)
    kind, durable, arguments = found
    return spec.ExchangeQueryResult(type=kind, durable=durable, arguments=dict(arguments) or None)


def _exchange_bind(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.ExchangeBind = e.command  # type: ignore[assignment]
    queue = _name(m.queue, "exchange.bind")
    conn.vhost_or_default.bind(
        ("queue", queue), m.exchange or "", m.binding_key or "", m.arguments, owner=conn
    )


def _exchange_unbind(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.ExchangeUnbind = e.command  # type: ignore[assignment]
    queue = _name(m.queue, "exchange.unbind")
    vhost = conn.vhost_or_default
    key = m.binding_key or ""
    exchange = m.exchange or ""
    bound = [b for b in vhost.bindings_of(exchange) if b[0] == ("queue", queue) and b[1] == key]
    if not bound:
        vhost.unbind(("queue", queue), exchange, key, owner=conn)  # (404 for a missing end)
        raise CommandRefused(
            ErrorCode.NOT_FOUND, f"no binding of {queue!r} to {exchange!r} by {key!r}"
        )
    for _, _, arguments in bound:
        vhost.unbind(("queue", queue), exchange, key, arguments, owner=conn)


def _exchange_bound(
    conn: Connection010, ssn: Session010, e: CommandReceived
) -> spec.ExchangeBoundResult:
    m: spec.ExchangeBound = e.command  # type: ignore[assignment]
    vhost = conn.vhost_or_default
    exchange = m.exchange or ""
    queue = m.queue or None
    exchange_missing = vhost.query_exchange(exchange) is None
    queue_missing = queue is not None and vhost.queue(queue) is None
    bindings = vhost.bindings_of(exchange)
    to_queue = bindings if queue is None else [b for b in bindings if b[0] == ("queue", queue)]
    key = m.binding_key
    with_key = to_queue if key is None else [b for b in to_queue if b[1] == key]
    arguments = m.arguments
    with_args = with_key if arguments is None else [b for b in with_key if b[2] == dict(arguments)]
    return spec.ExchangeBoundResult(
        exchange_not_found=exchange_missing,
        queue_not_found=queue_missing,
        queue_not_matched=queue is not None and not exchange_missing and not to_queue,
        key_not_matched=key is not None and not exchange_missing and not with_key,
        args_not_matched=arguments is not None and not exchange_missing and not with_args,
    )


# -- queue ------------------------------------------------------------------------------------


def _queue_declare(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.QueueDeclare = e.command  # type: ignore[assignment]
    name = _name(m.queue, "queue.declare")
    vhost = conn.vhost_or_default
    arguments = dict(m.arguments or {})
    if m.alternate_exchange:
        arguments["x-dead-letter-exchange"] = m.alternate_exchange
    found = vhost.query_queue(name)
    if not m.passive and found is not None and not found[0].auto:
        vhost.usable_queue(name, conn)  # (405 for another's exclusive queue)
        return  # (declared again: 0-10 does not check the other fields)
    # (a queue made on first use by 1.0 is adopted, as 0-9-1's first declare adopts it)
    vhost.declare_queue(
        name,
        passive=m.passive,
        durable=m.durable,
        exclusive=m.exclusive,
        auto_delete=m.auto_delete,
        arguments=arguments,
        owner=conn,
    )


def _queue_delete(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.QueueDelete = e.command  # type: ignore[assignment]
    name = _name(m.queue, "queue.delete")
    vhost = conn.vhost_or_default
    vhost.usable_queue(name, conn)  # (404: the queue MUST exist)
    vhost.delete_queue(name, if_unused=m.if_unused, if_empty=m.if_empty, owner=conn)


def _queue_purge(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.QueuePurge = e.command  # type: ignore[assignment]
    conn.vhost_or_default.purge_queue(_name(m.queue, "queue.purge"), owner=conn)


def _queue_query(conn: Connection010, ssn: Session010, e: CommandReceived) -> spec.QueueQueryResult:
    m: spec.QueueQuery = e.command  # type: ignore[assignment]
    found = conn.vhost_or_default.query_queue(m.queue or "")
    if found is None:
        return spec.QueueQueryResult()  # (no queue: an empty result, as Qpid answers)
    queue, durable, exclusive, auto_delete, arguments = found
    alternate = arguments.get("x-dead-letter-exchange")  # (queue.declare's alternate-exchange)
    return spec.QueueQueryResult(
        queue=queue.address,
        alternate_exchange=alternate if isinstance(alternate, str) else None,
        durable=durable,
        exclusive=exclusive,
        auto_delete=auto_delete,
        arguments=dict(arguments) or None,
        message_count=len(queue.available),
        subscriber_count=len(queue.consumers),
    )


# -- message ----------------------------------------------------------------------------------


def _transfer(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageTransfer = e.command  # type: ignore[assignment]
    if m.acquire_mode == spec.MessageAcquireMode.NOT_ACQUIRED:
        raise CommandRefused(ErrorCode.NOT_IMPLEMENTED, "a transfer to the broker is not acquired")
    limit = conn.broker.config.max_message_size
    if limit and len(e.body) > limit:
        raise Refused(
            ErrorCode.RESOURCE_LIMIT_EXCEEDED,
            f"a message of {len(e.body)} octets: this broker takes at most {limit}",
        )
    delivery: Any = next((s for s in e.header if isinstance(s, spec.DeliveryProperties)), None)
    exchange = m.destination or ""
    key = (delivery.routing_key if delivery is not None else None) or ""
    _check_access(conn, exchange or key, send=True)
    try:
        message = arrived(
            e.header,
            e.body,
            exchange=exchange,
            routing_key=key,
            wall=conn.broker.wall,
            octets=e.header_octets,
        )
    except (ValueError, EncodeError) as exc:
        raise CommandRefused(
            ErrorCode.ILLEGAL_ARGUMENT, f"not a message 1.0 holds: {exc}"
        ) from None
    if m.accept_mode == spec.MessageAcceptMode.EXPLICIT:
        ssn.to_accept.append(e.command_id)
    conn.record.messages_in += 1
    if ssn.tx:
        if exchange and conn.vhost_or_default.query_exchange(exchange) is None:
            raise CommandRefused(
                ErrorCode.NOT_FOUND, f"no exchange {exchange!r}"
            )  # (now, not later)
        ssn.tx_publishes.append((exchange, key, message, headers_of(e.header)))
        return
    conn.publish(exchange, key, message, headers_of(e.header))


def _accept(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageAccept = e.command  # type: ignore[assignment]
    ssn.unbrowse(m.transfers)
    ids = ssn.transfers(m.transfers)
    if ssn.tx:
        ssn.tx_accepts += ids
    else:
        ssn.accept(ids)


def _reject(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageReject = e.command  # type: ignore[assignment]
    ssn.unbrowse(m.transfers)
    ssn.reject(ssn.transfers(m.transfers))


def _release(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageRelease = e.command  # type: ignore[assignment]
    ssn.unbrowse(m.transfers)
    ssn.release(ssn.transfers(m.transfers), redelivered=m.set_redelivered)


def _acquire(conn: Connection010, ssn: Session010, e: CommandReceived) -> spec.Acquired:
    """``message.acquire`` (0-10 spec, ``message.acquired``): the browsed transfers of the
    set still in their queues are acquired now, and those delivered pre-acquired are
    acquired already."""
    m: spec.MessageAcquire = e.command  # type: ignore[assignment]
    held = set(ssn.transfers(m.transfers)) | set(ssn.acquire(m.transfers))
    return spec.Acquired(transfers=tuple((i, i) for i in sorted(held)))


def _subscription(ssn: Session010, destination: str | None) -> Subscription:
    sub = ssn.subscriptions.get(destination or "")
    if sub is None:
        raise CommandRefused(ErrorCode.NOT_FOUND, f"no subscription {destination!r}")
    return sub


def _subscribe(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageSubscribe = e.command  # type: ignore[assignment]
    if m.resume_id:
        raise CommandRefused(ErrorCode.NOT_IMPLEMENTED, "resuming a subscription (resume-id)")
    name = _name(m.queue, "message.subscribe")
    destination = m.destination or ""
    if destination in ssn.subscriptions:
        raise CommandRefused(ErrorCode.NOT_ALLOWED, f"the destination {destination!r} is in use")
    vhost = conn.vhost_or_default
    queue = vhost.queue(name)
    if queue is None and isinstance(conn.broker.nodes.get(name), Stream):
        raise CommandRefused(
            ErrorCode.NOT_IMPLEMENTED, f"{name!r} is a stream: 0-10 cannot read it"
        )
    queue = vhost.usable_queue(name, conn)
    _check_access(conn, name, send=False)
    if queue.auto:  # made on first use by 1.0: adopted, not to go when it empties
        vhost.declare_queue(name, owner=conn)
    consumers = queue.consumers
    if consumers and (m.exclusive or any(getattr(c, "exclusive", False) for c in consumers)):
        raise CommandRefused(
            ErrorCode.RESOURCE_LOCKED, f"queue {name!r} has an exclusive subscriber"
        )
    sub = Subscription(
        ssn,
        destination,
        queue,
        explicit=m.accept_mode != spec.MessageAcceptMode.NONE,
        browse=m.acquire_mode == spec.MessageAcquireMode.NOT_ACQUIRED,
    )
    sub.exclusive = m.exclusive  # type: ignore[attr-defined]
    ssn.subscriptions[destination] = sub
    queue.add_consumer(sub)
    vhost.consumer_added(queue)


def _cancel(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageCancel = e.command  # type: ignore[assignment]
    ssn.cancel(_subscription(ssn, m.destination))


def _set_flow_mode(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageSetFlowMode = e.command  # type: ignore[assignment]
    sub = _subscription(ssn, m.destination)
    sub.window = m.flow_mode == spec.MessageFlowMode.WINDOW
    sub.stop(octets=True)  # (the new mode starts from no credit)


def _flow(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    m: spec.MessageFlow = e.command  # type: ignore[assignment]
    sub = _subscription(ssn, m.destination)
    # (no value: an infinite amount, 0-10 spec, message.flow field value)
    sub.add_credit(m.unit or 0, UNLIMITED if m.value is None else m.value)
    conn.broker.wake(sub.queue)


def _flush(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    sub = _subscription(ssn, e.command.destination)  # type: ignore[attr-defined]
    sub.flushing = True  # (the queue's dispatch, before this input returns, drains it)
    conn.broker.wake(sub.queue)
    conn.flushing = True


def _stop(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    _subscription(ssn, e.command.destination).stop()  # type: ignore[attr-defined]


# -- tx ---------------------------------------------------------------------------------------


def _tx_select(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    ssn.tx = True


def _in_tx(ssn: Session010, what: str) -> None:
    if not ssn.tx:
        raise CommandRefused(ErrorCode.ILLEGAL_STATE, f"{what} without tx.select on the session")


def _tx_commit(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    _in_tx(ssn, "tx.commit")
    publishes, ssn.tx_publishes = ssn.tx_publishes, []
    accepts, ssn.tx_accepts = ssn.tx_accepts, []
    for exchange, key, message, headers in publishes:
        conn.publish(exchange, key, message, headers)
    ssn.accept(accepts)


def _tx_rollback(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    _in_tx(ssn, "tx.rollback")
    ssn.tx_publishes = []
    ssn.tx_accepts = []  # (those transfers wait for an accept again)


def _not_implemented(conn: Connection010, ssn: Session010, e: CommandReceived) -> None:
    raise CommandRefused(ErrorCode.NOT_IMPLEMENTED, f"{e.command.NAME} is not implemented")


COMMANDS: dict[type[spec.Command], Handler] = {
    spec.ExchangeDeclare: _exchange_declare,
    spec.ExchangeDelete: _exchange_delete,
    spec.ExchangeQuery: _exchange_query,
    spec.ExchangeBind: _exchange_bind,
    spec.ExchangeUnbind: _exchange_unbind,
    spec.ExchangeBound: _exchange_bound,
    spec.QueueDeclare: _queue_declare,
    spec.QueueDelete: _queue_delete,
    spec.QueuePurge: _queue_purge,
    spec.QueueQuery: _queue_query,
    spec.MessageTransfer: _transfer,
    spec.MessageAccept: _accept,
    spec.MessageReject: _reject,
    spec.MessageRelease: _release,
    spec.MessageAcquire: _acquire,
    spec.MessageSubscribe: _subscribe,
    spec.MessageCancel: _cancel,
    spec.MessageSetFlowMode: _set_flow_mode,
    spec.MessageFlow: _flow,
    spec.MessageFlush: _flush,
    spec.MessageStop: _stop,
    spec.TxSelect: _tx_select,
    spec.TxCommit: _tx_commit,
    spec.TxRollback: _tx_rollback,
}
#: Every other command (dtx, file, stream, message.resume): 540 ``not-implemented``.
NOT_IMPLEMENTED: Handler = _not_implemented
