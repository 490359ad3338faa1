"""Streams over AMQP 0-9-1, as RabbitMQ offers them: a queue declared with the argument
``x-queue-type`` ``stream`` is a :class:`~amqp_sansio.broker.Stream` (the append-only log
:mod:`.._streams` reads by offset for 1.0 consumers), so a stream written with one protocol is
read with the other.

RabbitMQ's rules (its "Streams" guide, "Usage" and "Consuming", checked against RabbitMQ
3.10; ``docs/amqp091.rst``, "Streams"):

* A stream is durable, and neither exclusive nor auto-delete: 406 PRECONDITION_FAILED
  ("invalid property 'non-durable'", "'exclusive-owner'", "'auto-delete'"). Its arguments
  are ``x-max-length-bytes`` (a non-negative integer), ``x-max-age`` (a string, a number and
  one of the units ``Y M D h m s``: ``7D``; without them, the broker's ``stream_max_bytes``
  and ``stream_max_age``), ``x-stream-max-segment-size-bytes``,
  ``x-initial-cluster-size``, ``x-queue-leader-locator`` (taken; the log is in memory, not in
  segments, and not replicated); RabbitMQ's queue arguments that do not apply to a stream
  (``x-max-length``, ``x-message-ttl``, ``x-expires``, ``x-overflow``, dead-lettering,
  ``x-max-priority``, ``x-single-active-consumer``, ``x-queue-mode``) are refused with 406.
  A redeclaration must be equivalent (406 ``inequivalent arg``).
* ``basic.consume`` needs a prefetch (``basic.qos`` per consumer, 406 "consumer prefetch
  count is not set") and manual acknowledgement (``no-ack``: 540 NOT_IMPLEMENTED); its
  argument ``x-stream-offset`` says where to start: ``first``, ``last``, ``next`` (the
  default), an offset (a negative one is ``first``; one past the end waits for it), a
  timestamp (seconds: the first message that arrived then or later) or an interval back from
  now (``10m``). Each delivery carries its offset in the header ``x-stream-offset`` (a
  long). An ack is credit, not removal (nothing leaves a stream but by retention);
  ``basic.nack`` and ``basic.reject`` are 540 NOT_IMPLEMENTED, and so are ``basic.get`` and
  ``queue.purge``.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from typing import Any

import attrs

from ...codec.amqp091 import FieldValue, Int64, Timestamp
from ...definitions.amqp091 import spec
from ...definitions.amqp091.spec import SOFT_ERRORS, ReplyCode
from .._nodes import Node
from .._store import StoredMessage
from .._streams import Stream
from .mapping import from_amqp10

__all__ = [
    "STREAM_TYPE",
    "StreamConsumer",
    "StreamRecord",
    "StreamRefused",
    "check_not_stream",
    "check_stream_settle",
    "consume_091",
    "parse_stream_arguments",
    "stream_start",
]

#: The value of ``x-queue-type`` that declares a stream.
STREAM_TYPE = "stream"
#: RabbitMQ's queue arguments a stream refuses (406).
_REFUSED_ARGUMENTS = (
    "x-max-length",
    "x-message-ttl",
    "x-expires",
    "x-overflow",
    "x-dead-letter-exchange",
    "x-dead-letter-routing-key",
    "x-dead-letter-strategy",
    "x-max-priority",
    "x-single-active-consumer",
    "x-queue-mode",
    "x-max-in-memory-length",
    "x-max-in-memory-bytes",
    "x-delivery-limit",
)
#: ``x-max-age`` and interval offsets: a number and a unit, RabbitMQ's (Y, M, D, h, m, s).
_INTERVAL = re.compile(r"^([0-9]+)([YMDhms])$")
_UNIT_SECONDS = {
    "Y": 365 * 86400.0,
    "M": 30 * 86400.0,
    "D": 86400.0,
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
}
#: A consumer's credit when its prefetch is the only bound.
_UNBOUNDED = 1 << 30


class StreamRefused(Exception):
    """A stream method refused: ``reply_code`` and ``reply_text`` (raised again by the
    virtual host as its :class:`~.declarations.Refused`)."""

    def __init__(self, reply_code: int, reply_text: str) -> None:
        super().__init__(f"{reply_code} {reply_text}")
        self.reply_code = reply_code
        self.reply_text = reply_text

    @property
    def hard(self) -> bool:
        """A hard error (540, 530) closes the connection; a soft one the channel."""
        return self.reply_code not in SOFT_ERRORS


def _text(value: Any) -> str | None:
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            return None
    return str(value) if isinstance(value, str) else None


def is_stream_declare(arguments: Mapping[str, FieldValue]) -> bool:
    """Whether a ``queue.declare``'s arguments ask for a stream."""
    return _text(arguments.get("x-queue-type")) == STREAM_TYPE


def interval_seconds(value: str) -> float | None:
    """``7D``, ``12h``...: seconds; None for anything else."""
    match = _INTERVAL.match(value)
    if match is None:
        return None
    return int(match.group(1)) * _UNIT_SECONDS[match.group(2)]


def parse_stream_arguments(
    name: str, vhost: str, arguments: Mapping[str, FieldValue]
) -> tuple[int | None, float | None]:
    """A stream's limits from its declaration's arguments: (``x-max-length-bytes``,
    ``x-max-age`` in seconds), each None when not given; 406 for arguments a stream refuses
    or values of the wrong kind (RabbitMQ's texts)."""
    where = f"for queue '{name}' in vhost '{vhost}'"
    for key in _REFUSED_ARGUMENTS:
        if key in arguments:
            raise StreamRefused(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg '{key}' {where} of queue type rabbit_stream_queue",
            )
    max_bytes = None
    if "x-max-length-bytes" in arguments:
        value = arguments["x-max-length-bytes"]
        if isinstance(value, bool) or not isinstance(value, int):
            raise StreamRefused(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg 'x-max-length-bytes' {where}: expected integer",
            )
        if value < 0:
            raise StreamRefused(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg 'x-max-length-bytes' {where}: {{value_negative,{value}}}",
            )
        max_bytes = int(value)
    max_age = None
    if "x-max-age" in arguments:
        text = _text(arguments["x-max-age"])
        max_age = None if text is None else interval_seconds(text)
        if max_age is None:
            raise StreamRefused(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg 'x-max-age' {where}: a number and a unit (Y, M, D, h, m, s), "
                "such as '7D'",
            )
    return max_bytes, max_age


def check_stream_flags(
    name: str, vhost: str, *, durable: bool, exclusive: bool, auto_delete: bool
) -> None:
    """A stream is durable, not exclusive, not auto-delete (406, RabbitMQ's texts)."""
    for bad, prop in ((not durable, "non-durable"), (exclusive, "exclusive-owner")):
        if bad:
            raise StreamRefused(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid property '{prop}' for queue '{name}' in vhost '{vhost}'",
            )
    if auto_delete:
        raise StreamRefused(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid property 'auto-delete' for queue '{name}' in vhost '{vhost}'",
        )


@attrs.define
class StreamRecord:
    """A stream as 0-9-1 declared it: its arguments (a redeclaration must repeat them)."""

    stream: Stream
    arguments: dict[str, FieldValue]

    def inequivalent(self, vhost: str, arguments: Mapping[str, FieldValue]) -> str | None:
        """Why a redeclaration with ``arguments`` is not equivalent (406), or None."""
        for key in sorted(set(self.arguments) | set(arguments)):
            mine, theirs = self.arguments.get(key), arguments.get(key)
            if _same(mine, theirs):
                continue
            return (
                f"inequivalent arg '{key}' for queue '{self.stream.address}' in vhost "
                f"'{vhost}': received {_shown(theirs)} but current is {_shown(mine)}"
            )
        return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str | bytes | bytearray) or isinstance(b, str | bytes | bytearray):
        return _text(a) == _text(b)
    return bool(a == b)


def _shown(value: Any) -> str:
    if value is None:
        return "none"
    text = _text(value)
    return repr(text) if text is not None else repr(value)


def stream_start(value: Any, stream: Stream, wall: float) -> int:
    """The offset a consumer with ``x-stream-offset`` ``value`` (None: not given) reads
    first (the module's docstring); 406 for a value that is none of its forms."""
    if value is None:
        return stream.position("next")
    if isinstance(value, Timestamp):
        return max(stream.offset_at(float(value)), stream.first)
    if isinstance(value, bool):
        raise StreamRefused(ReplyCode.PRECONDITION_FAILED, "invalid x-stream-offset: a boolean")
    if isinstance(value, int):
        return stream.position("first" if value < 0 else int(value))
    text = _text(value)
    if text in ("first", "last", "next"):
        return stream.position(text)
    seconds = None if text is None else interval_seconds(text)
    if seconds is None:
        raise StreamRefused(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid x-stream-offset {value!r}: first, last, next, an offset, a timestamp "
            "or an interval (such as '10m')",
        )
    return stream.offset_at(wall - seconds)


class StreamConsumer:
    """A ``basic.consume`` of a stream on one channel of a 0-9-1 connection: a consumer of
    the :class:`Stream` as a node sees one (the protocol of ``._nodes.Consumer``: a cursor,
    credit), and of its channel as the connection's other consumers (``tag``, ``queue``,
    ``unacked``). Its credit is the channel's prefetch less what it holds unacked."""

    copy = False
    blocked = False
    selector = None
    subscription = None
    no_ack = False

    def __init__(
        self, channel: Any, tag: str, stream: Stream, start: int, *, exclusive: bool
    ) -> None:
        self.channel = channel
        self.tag = tag
        self.queue = stream
        self.cursor = start
        self.exclusive = exclusive
        self.prefetch: int = channel.prefetch
        self.unacked = 0

    def __repr__(self) -> str:
        return f"<0-9-1 stream consumer {self.tag!r} of {self.queue.address!r}>"

    @property
    def credit(self) -> int:
        channel = self.channel
        if not channel.flow or channel.conn.ending or not channel.conn._open(channel.number):
            return 0
        room = self.prefetch - self.unacked
        if channel.global_prefetch:
            room = min(room, channel.global_prefetch - len(channel.unacked))
        return room

    def deliver(self, message: StoredMessage, node: Node) -> None:
        """``basic.deliver`` of the message at offset ``cursor - 1`` (the stream moved the
        cursor past it), its offset in the header ``x-stream-offset``."""
        channel = self.channel
        conn = channel.conn
        tag = channel.next_tag
        channel.next_tag += 1
        props, body, exchange, routing_key = from_amqp10(message.encoded())
        headers = dict(props.headers or {})
        headers["x-stream-offset"] = Int64(self.cursor - 1)
        props = attrs.evolve(props, headers=headers)
        method = spec.BasicDeliver(
            consumer_tag=self.tag,
            delivery_tag=tag,
            redelivered=False,
            exchange=exchange or "",
            routing_key=self.queue.address if routing_key is None else routing_key,
        )
        conn._send_content(channel.number, method, props, body)
        conn.record.messages_out += 1
        conn.broker.has_output(conn)
        self.unacked += 1
        channel.unacked[tag] = (message, self.queue, self)

    def tell_available(self, count: int) -> None:
        pass

    def drained(self) -> None:
        pass

    def queue_deleted(self) -> None:
        """Its stream was deleted: as a queue's consumer (``basic.cancel`` to a client
        that announced ``consumer_cancel_notify``)."""
        self.channel.cancelled_by_broker(self)


def check_queue_consume(name: str, vhost: str, arguments: Mapping[str, FieldValue]) -> None:
    """A consumer of a queue that is not a stream may not give ``x-stream-offset`` (406,
    RabbitMQ's text)."""
    if "x-stream-offset" in arguments:
        raise StreamRefused(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid arg 'x-stream-offset' for queue '{name}' in vhost '{vhost}' of queue "
            "type rabbit_classic_queue",
        )


def not_supported(what: str, name: str, vhost: str) -> StreamRefused:
    """540 NOT_IMPLEMENTED for a method a stream does not take (RabbitMQ's text)."""
    return StreamRefused(
        ReplyCode.NOT_IMPLEMENTED,
        f"{what} not supported by stream queues queue '{name}' in vhost '{vhost}'",
    )


def consume_stream(
    channel: Any,
    stream: Stream,
    vhost: str,
    *,
    tag: str,
    no_ack: bool,
    exclusive: bool,
    arguments: Mapping[str, FieldValue],
    wall: float,
) -> StreamConsumer:
    """A ``basic.consume`` of ``stream`` (checked as RabbitMQ checks it: the module's
    docstring): the consumer, at the offset ``x-stream-offset`` asks for; the caller
    answers ``basic.consume-ok`` and adds it."""
    name = stream.address
    if no_ack:
        raise not_supported("automatic acknowledgement", name, vhost)
    if not channel.prefetch:
        raise StreamRefused(
            ReplyCode.PRECONDITION_FAILED,
            f"consumer prefetch count is not set for 'queue '{name}' in vhost '{vhost}''",
        )
    if any(getattr(c, "exclusive", False) for c in stream.consumers):
        raise StreamRefused(
            ReplyCode.ACCESS_REFUSED, f"queue '{name}' in vhost '{vhost}' in exclusive use"
        )
    if exclusive and stream.consumers:
        raise StreamRefused(
            ReplyCode.ACCESS_REFUSED,
            f"cannot obtain exclusive access to queue '{name}' in vhost '{vhost}': it has "
            "consumers",
        )
    stream.retain()
    start = stream_start(arguments.get("x-stream-offset"), stream, wall)
    return StreamConsumer(channel, tag, stream, start, exclusive=exclusive)


def check_not_stream(stream: Stream | None, what: str, vhost: str) -> None:
    """``what`` (``basic.get``) is 540 NOT_IMPLEMENTED on a stream."""
    if stream is not None:
        raise not_supported(what, stream.address, vhost)


def check_stream_settle(channel: Any, tags: list[int], vhost: str) -> None:
    """``basic.nack``/``basic.reject`` of a stream's delivery: 540 NOT_IMPLEMENTED."""
    for tag in tags:
        node = channel.unacked[tag][1]
        if isinstance(node, Stream):
            raise not_supported("basic.nack and basic.reject", node.address, vhost)


def consume_091(conn: Any, channel: Any, m: spec.BasicConsume, name: str) -> bool:
    """``basic.consume`` of the queue ``name`` on ``conn``'s ``channel``: True when it is
    a stream (the consumer added and answered); False for the caller to go on (a queue
    that is there refuses ``x-stream-offset``, 406)."""
    vh = conn._vh
    vhost = vh.name
    stream = vh.stream(name)
    if stream is None:
        if vh.queue(name) is not None:  # (none: the caller's 404)
            check_queue_consume(name, vhost, m.arguments)
        return False
    conn._check_access(stream.address, send=False)
    tag = m.consumer_tag or "amq.ctag-" + secrets.token_urlsafe(16)
    if tag in channel.consumers:
        raise StreamRefused(ReplyCode.NOT_ALLOWED, f"attempt to reuse consumer tag '{tag}'")
    consumer = consume_stream(
        channel,
        stream,
        vhost,
        tag=tag,
        no_ack=m.no_ack,
        exclusive=m.exclusive,
        arguments=m.arguments,
        wall=conn.broker.wall,
    )
    conn._ok(channel, m.no_wait, spec.BasicConsumeOk(consumer_tag=tag))
    channel.consumers[tag] = consumer
    stream.add_consumer(consumer)
    conn.broker.wake(stream)
    return True
