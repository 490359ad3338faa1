"""Each call of the AMQP 0-9-1 high-level API, written once for the three adapters as a
recipe (the steps of :mod:`amqp_sansio.client.recipes`, which the adapters' runners carry
out for both protocols): what to send, what to wait for, what a time-out leaves behind.

A synchronous method that times out (or is cancelled) after it was sent stays in its
channel's queue: its reply, when it comes, is taken for it, so the replies of the calls
that follow still match (the channel answers in order). A publish that times out waiting
for the channel to be free to publish (open, connected, not blocked by the server) has
sent nothing; one that times out waiting for its confirm stays tracked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from amqp_sansio.client.ops import Op
from amqp_sansio.client.recipes import DRAIN, Recipe, Wait, open_core
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.definitions.amqp091.methods import Method

from .channels import ChannelCore, ConsumerCore, Delivery
from .core import ConnectOptions, Core, client_core
from .ops import (
    Confirmation,
    ConsumeOptions,
    ExchangeOptions,
    GetOptions,
    PublishOptions,
    QueueDeleteOptions,
    QueueOptions,
)

__all__ = [
    "call",
    "cancel",
    "close_channel",
    "confirmation",
    "connect",
    "exchange_declare",
    "consume",
    "fields",
    "get",
    "method",
    "open_channel",
    "publish",
    "queue_declare",
    "queue_delete",
    "queue_purge",
    "receive",
    "transaction",
    "update_secret",
]

T = TypeVar("T")
C = TypeVar("C")


def open_channel(core: Core) -> Recipe[ChannelCore]:
    """Open a channel once the connection is not waiting for a transport; wait for
    ``channel.open-ok``."""
    yield Wait(core.connected_ready)
    channel = core.channel()
    yield Wait(channel.open_ready)
    return channel


def update_secret(core: Core, new_secret: str, reason: str) -> Recipe[None]:
    """``connection.update-secret`` and wait for its ``-ok`` (:meth:`Core.update_secret
    <amqp_sansio.client.amqp091.Core.update_secret>`)."""
    op = core.update_secret(new_secret, reason)
    yield Wait(op.done)
    op.result()


def call(channel: ChannelCore, method: Method) -> Recipe[object]:
    """Send the synchronous ``method`` and wait for its reply (a channel the server closes
    meanwhile raises :class:`~.ops.ChannelClosedError`)."""
    op = channel.call(method)
    yield Wait(op.done)
    return op.result()


def fields(options: Mapping[str, object]) -> dict[str, Any]:
    """A call's options without its ``timeout``: the method's fields."""
    return {name: value for name, value in options.items() if name != "timeout"}


def method(
    channel: ChannelCore, kind: type[Method], options: Mapping[str, object], **given: object
) -> Recipe[None]:
    """Send the synchronous method ``kind`` made of ``given`` and ``options`` (the call's
    keyword arguments: fields of the method, under the spec's names, see :mod:`.ops`), and
    wait for its reply."""
    yield from call(channel, kind(**given, **fields(options)))


def exchange_declare(
    channel: ChannelCore, exchange: str, type: str, options: ExchangeOptions
) -> Recipe[None]:
    """``exchange.declare``. RabbitMQ's ``auto-delete`` and ``internal`` bits are the
    fields the 0-9-1 XML reserves (``reserved_2`` and ``reserved_3`` in
    :class:`~amqp_sansio.definitions.amqp091.spec.ExchangeDeclare`): the call takes them by
    RabbitMQ's names, as pika does."""
    given = fields(options)
    given["reserved_2"] = given.pop("auto_delete", False)
    given["reserved_3"] = given.pop("internal", False)
    yield from call(channel, spec.ExchangeDeclare(exchange=exchange, type=type, **given))


def queue_declare(
    channel: ChannelCore, queue: str, options: QueueOptions
) -> Recipe[spec.QueueDeclareOk]:
    """``queue.declare``: the reply has the queue's name (the server's, for ``""``), its
    message and consumer counts."""
    reply = yield from call(channel, spec.QueueDeclare(queue=queue, **fields(options)))
    return cast(spec.QueueDeclareOk, reply)


def queue_purge(channel: ChannelCore, queue: str) -> Recipe[int]:
    """``queue.purge``: how many messages were purged."""
    reply = yield from call(channel, spec.QueuePurge(queue=queue))
    return cast(spec.QueuePurgeOk, reply).message_count


def queue_delete(channel: ChannelCore, queue: str, options: QueueDeleteOptions) -> Recipe[int]:
    """``queue.delete``: how many messages were deleted with the queue."""
    reply = yield from call(channel, spec.QueueDelete(queue=queue, **fields(options)))
    return cast(spec.QueueDeleteOk, reply).message_count


def consume(channel: ChannelCore, queue: str, options: ConsumeOptions) -> Recipe[ConsumerCore]:
    """``basic.consume``: the consumer, once the server has answered."""
    consumer = channel.consume(queue, fields(options))
    yield Wait(consumer.started.done)
    consumer.started.result()
    return consumer


def receive(consumer: ConsumerCore) -> Recipe[Delivery | None]:
    """The consumer's next delivery; None once it is over (cancelled) and none is left. A
    receive cancelled has taken nothing."""
    yield Wait(consumer.take_ready)
    return consumer.take()


def cancel(consumer: ConsumerCore) -> Recipe[None]:
    """``basic.cancel``: deliveries received before the answer can still be taken."""
    if consumer.ended.done():
        return
    op = consumer.channel.cancel(consumer)
    yield Wait(op.done)
    op.result()


def get(channel: ChannelCore, queue: str, options: GetOptions) -> Recipe[Delivery | None]:
    """``basic.get``: a delivery, or None (``basic.get-empty``)."""
    op = channel.get(queue, bool(options.get("no_ack", False)))
    yield Wait(op.done)
    reply = op.result()
    return reply if isinstance(reply, Delivery) else None


def publish(
    channel: ChannelCore,
    exchange: str,
    routing_key: str,
    body: bytes,
    options: PublishOptions,
    tracker: Callable[[Op[Confirmation]], T],
) -> Recipe[Confirmation | T | None]:
    """``basic.publish``: wait until the channel may publish (a time-out until then sends
    nothing), publish, wait while the transport is full. In confirm mode, then wait for the
    confirm (a time-out leaves it tracked), or with ``wait=False`` return
    ``tracker(op)`` at once; else return None."""
    yield Wait(channel.publish_ready)
    properties, mandatory = options.get("properties"), options.get("mandatory", False)
    op = channel.publish(exchange, routing_key, body, properties, mandatory)
    yield DRAIN
    if op is None:
        return None
    if not options.get("wait", True):
        return tracker(op)
    yield Wait(op.done)
    return op.result()


def confirmation(op: Op[Confirmation]) -> Recipe[Confirmation]:
    """A tracker's confirm (a wait even when it has come: a cancel point)."""
    yield Wait(op.done)
    return op.result()


def transaction(channel: ChannelCore, method: spec.TxCommit | spec.TxRollback) -> Recipe[None]:
    """``tx.commit`` or ``tx.rollback``: :class:`~.ops.TransactionError` if a lost
    connection took the transaction's work."""
    yield Wait(channel.tx_commit_ready)
    yield from call(channel, method)


def close_channel(channel: ChannelCore) -> Recipe[None]:
    """``channel.close`` and wait for ``close-ok``."""
    channel.close()
    yield Wait(channel.close_ready)


# -- connecting --------------------------------------------------------------------------------


def connect(
    url: str,
    options: ConnectOptions,
    *,
    timeout: float | None,
    reconnect: Reconnect | bool | None = None,
    on_reconnect: Callable[[C], None] | None = None,
) -> Recipe[C]:
    """Every adapter's ``connect(url, protocol="0-9-1")``: a core for ``url``
    (:func:`~.core.client_core`), a transport, the open
    (:func:`~amqp_sansio.client.recipes.open_core`). ``timeout`` bounds the connecting and
    the open."""
    return open_core(client_core(url, options, reconnect=reconnect), timeout, on_reconnect)
