"""What an AMQP 0-9-1 application waits for and gets: the errors, with the reply codes the
peer sent (0-9-1 spec, ``connection.close`` and ``channel.close``), a
publish's :class:`Confirmation`, a :class:`Returned` message, and the options of the
methods the channels send (written once, for every adapter)."""

from __future__ import annotations

from typing import TypedDict

import attrs

from amqp_sansio.client import ops as shared
from amqp_sansio.codec.amqp091 import FieldTable
from amqp_sansio.definitions.amqp091.spec import BasicProperties, ReplyCode

__all__ = [
    "AuthenticationError",
    "ChannelClosedError",
    "Confirmation",
    "ConnectionClosedError",
    "BindOptions",
    "ConsumeOptions",
    "DeclareOptions",
    "ExchangeDeleteOptions",
    "ExchangeOptions",
    "GetOptions",
    "PublishOptions",
    "QosOptions",
    "QueueDeleteOptions",
    "QueueOptions",
    "RecoverOptions",
    "Returned",
    "Timeout",
    "TransactionError",
    "describe_reply",
]


def describe_reply(reply_code: int, reply_text: str) -> str:
    """``"404 NOT_FOUND - no queue 'q' in vhost '/'"``: a reply code with its name (0-9-1
    spec, the ``constant`` elements) and the peer's text."""
    try:
        name = ReplyCode(reply_code).name
    except ValueError:
        name = "UNKNOWN"
    if reply_text.startswith(f"{name} - "):  # (RabbitMQ's texts name the code already)
        reply_text = reply_text[len(name) + 3 :]
    return f"{reply_code} {name}" + (f" - {reply_text}" if reply_text else "")


class ConnectionClosedError(shared.ConnectionClosedError):
    """The connection is closed or lost (a subclass of the adapters'
    :class:`~amqp_sansio.client.ops.ConnectionClosedError`, which catches it). ``reply_code``
    and ``reply_text`` are the ``connection.close`` that ended it (the peer's, or the one
    the engine sent because of the peer: a frame error is 501), None and ``""`` when the
    transport went without one; ``class_id`` and ``method_id`` name the method that caused
    it (0 for none)."""

    def __init__(
        self,
        description: str,
        error: object = None,
        *,
        retryable: bool = False,
        event: object = None,
        reply_code: int | None = None,
        reply_text: str = "",
        class_id: int = 0,
        method_id: int = 0,
    ) -> None:
        if reply_code is not None:
            description = f"{description}: {describe_reply(reply_code, reply_text)}"
        super().__init__(description, None, retryable=retryable)
        self.event = event  # type: ignore[assignment]
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.class_id = class_id
        self.method_id = method_id


class AuthenticationError(ConnectionClosedError, shared.AuthenticationError):
    """The server refused the login (403 ``ACCESS_REFUSED``) or the virtual host (530
    ``NOT_ALLOWED``); the connection has ended and is not made again."""


class ChannelClosedError(shared.ClientError):
    """The channel was closed by the peer, with ``reply_code`` (a soft error: 404
    ``NOT_FOUND``, 406 ``PRECONDITION_FAILED``, 403 ``ACCESS_REFUSED``, 405
    ``RESOURCE_LOCKED``, ...) and ``reply_text``; ``class_id`` and ``method_id`` name the
    method that caused it. The connection and its other channels stay usable: open a new
    channel. Raised by the call that waited on the channel, and by every later call on it."""

    def __init__(
        self, reply_code: int, reply_text: str, class_id: int = 0, method_id: int = 0
    ) -> None:
        super().__init__(f"the channel was closed: {describe_reply(reply_code, reply_text)}")
        self.reply_code = reply_code
        self.reply_text = reply_text
        self.class_id = class_id
        self.method_id = method_id


class TransactionError(shared.TransactionError):
    """The connection was lost with work in a transaction (``tx``): that work is gone (the
    server rolled it back); the channel is transactional again on the new connection."""


@attrs.frozen
class Returned:
    """A message the server gave back (``basic.return``): published ``mandatory`` and
    routed to no queue (312 ``NO_ROUTE``)."""

    reply_code: int
    reply_text: str
    exchange: str
    routing_key: str
    properties: BasicProperties
    body: bytes


@attrs.frozen(kw_only=True)
class Confirmation:
    """A publish's confirm (channel in confirm mode, RabbitMQ's publisher confirms):
    ``ack`` True when the server took responsibility for the message (``basic.ack``),
    False when it could not (``basic.nack``). ``returned`` is the message given back
    before the ack when it was ``mandatory`` and unroutable (the ack still comes: the
    server is done with it)."""

    ack: bool
    returned: Returned | None = None


class Timeout(TypedDict, total=False):
    """Every call's ``timeout``: the bound of its wait in seconds (None, or absent: the
    connection's)."""

    timeout: float | None


class DeclareOptions(Timeout, total=False):
    """What ``exchange.declare`` and ``queue.declare`` share (0-9-1 spec, classes
    ``exchange`` and ``queue``): ``passive`` (only check that it exists), ``durable``,
    ``auto_delete``, ``arguments``."""

    passive: bool
    durable: bool
    auto_delete: bool
    arguments: FieldTable


class ExchangeOptions(DeclareOptions, total=False):
    """``exchange.declare``'s options: :class:`DeclareOptions`' and ``internal`` (only
    other exchanges publish to it); ``arguments`` such as ``alternate-exchange``."""

    internal: bool


class ExchangeDeleteOptions(Timeout, total=False):
    """``exchange.delete``'s options: ``if_unused`` (only if it has no bindings)."""

    if_unused: bool


class QueueOptions(DeclareOptions, total=False):
    """``queue.declare``'s options: :class:`DeclareOptions`' and ``exclusive``;
    ``arguments`` such as RabbitMQ's ``x-message-ttl``, ``x-max-length``,
    ``x-dead-letter-exchange``, ``x-queue-type``."""

    exclusive: bool


class QueueDeleteOptions(Timeout, total=False):
    """``queue.delete``'s options: ``if_unused`` (only if it has no consumers),
    ``if_empty``."""

    if_unused: bool
    if_empty: bool


class BindOptions(Timeout, total=False):
    """The options of ``queue.bind``, ``queue.unbind``, ``exchange.bind`` and
    ``exchange.unbind``: ``routing_key`` (the binding key, ``""`` by default),
    ``arguments`` (a headers exchange's ``x-match`` and headers)."""

    routing_key: str
    arguments: FieldTable


class QosOptions(Timeout, total=False):
    """``basic.qos``'s options besides ``prefetch_count``: ``prefetch_size`` (octets, 0:
    no limit; RabbitMQ supports only 0) and ``global_`` (RabbitMQ: the limit is shared
    by the channel's consumers instead of each consumer's own)."""

    prefetch_size: int
    global_: bool


class ConsumeOptions(Timeout, total=False):
    """``basic.consume``'s options (0-9-1 spec, class ``basic``): ``no_ack`` (the server
    counts each message delivered as acknowledged), ``exclusive``, ``consumer_tag`` (the
    server makes one when empty), ``arguments`` (``x-priority``, ...)."""

    no_ack: bool
    exclusive: bool
    consumer_tag: str
    arguments: FieldTable


class GetOptions(Timeout, total=False):
    """``basic.get``'s options: ``no_ack``."""

    no_ack: bool


class RecoverOptions(Timeout, total=False):
    """``basic.recover``'s options: ``requeue`` (RabbitMQ supports only True, its
    default here)."""

    requeue: bool


class PublishOptions(Timeout, total=False):
    """``basic.publish``'s options: ``properties`` (a
    :class:`~amqp_sansio.amqp091.BasicProperties`), ``mandatory`` (give the message back,
    as a :class:`Returned`, if no queue takes it), ``wait`` (in confirm mode, wait for the
    confirm: True by default; False returns a tracker once the message is out)."""

    properties: BasicProperties | None
    mandatory: bool
    wait: bool
