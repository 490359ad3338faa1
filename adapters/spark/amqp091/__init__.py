"""``format("amqp")`` with option ``protocol`` ``0-9-1``: the receiver tasks of queue mode
(:mod:`.queue_reader`) and the writers (:mod:`.batch`) on the adapters' AMQP 0-9-1 client
(``connect(url, protocol="0-9-1")``), with the same staging and guarantees as 1.0.

A receiver task consumes each address (a queue) on one channel (``basic.consume``, a
prefetch of ``min(credit, its share, 5000)``): what it takes is what 1.0's receiver holds,
seen through :class:`Receiver091` and :class:`~amqp_sansio.adapters.spark.calls.Delivery`
(the names :mod:`.queue_reader` uses): a message staged is acked (1.0's accept); one taken
past the task's share or after its time goes back with ``basic.nack`` and ``requeue``
(1.0's release: RabbitMQ marks it redelivered); one the source cannot make a row of is
rejected without requeue (dead-lettered, if the queue says so). Each message is made a row
as RabbitMQ maps 0-9-1 to 1.0 (:mod:`amqp_sansio.broker`'s mapping): its properties, its
headers as application properties, its exchange and routing key as message annotations, a
redelivered message with ``delivery_count`` 1.

A part of a task is at most its prefetch: a 0-9-1 broker sends no more than the prefetch
unacked, and a part is acked only once staged.

The writers publish each row (mapped the other way) to the default exchange with the
address as routing key, ``mandatory``, on a channel in confirm mode: a task succeeds only
once every message was confirmed (a nack or a return fails it). A stream (a queue declared
with ``x-queue-type`` ``stream``) is written so too.

Mode ``stream`` (:mod:`.stream_reader` plans the offset ranges) reads RabbitMQ's streams
(and the reference broker's) as RabbitMQ documents for 0-9-1 clients: a consumer with a
prefetch, manual acks (an ack is credit: nothing leaves a stream), and the consumer
argument ``x-stream-offset``; each delivery carries its offset in the header
``x-stream-offset``. 0-9-1 has no way to ask a stream where it stands, so
:func:`stream_bounds` looks: a consumer from ``first`` gives the first offset held (its
first delivery's), one from ``last`` the end (one past the highest offset it is sent before
it has been quiet for ``pollInterval``, or for at most ten times that; any offset seen is
one the stream has, so the end is never past the stream's, only perhaps behind it).
:func:`read_range`
reads one range: from its start to its end, acking as it goes. RabbitMQ starts a consumer
at the chunk holding the offset asked for (earlier offsets are skipped) and its offsets may
skip some (a segment starts with a tracking record): a gap is data loss only when the
stream's first offset is past what was expected (asked again at each gap).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import attrs

import amqp_sansio as amqp
from amqp_sansio import amqp091
from amqp_sansio.broker import from_amqp10, to_amqp10
from amqp_sansio.client.ops import ClientError

from ..calls import Delivery
from ..options import ReadOptions, WriteOptions
from ..rows import message_to_row

__all__ = [
    "ERRORS",
    "Receiver091",
    "before_last_accept",
    "blocking_consumer",
    "connect091",
    "open_receivers",
    "publish_rows",
    "read_range",
    "read_rows",
    "receiver",
    "sizes",
    "stop_receivers",
    "stream_bounds",
    "stream_connection",
]

_log = logging.getLogger("amqp_sansio.spark")

#: The header of a stream's deliveries that carries each one's offset (RabbitMQ's).
OFFSET_HEADER = "x-stream-offset"
#: Seconds the driver waits for a stream's first delivery (none: the stream is empty), at
#: least: as long as queue mode waits for a first message (``FIRST_BATCH_WAIT``).
FIRST_LOOK_WAIT = 2.0
#: The prefetch of the driver's look for a stream's end.
LOOK_PREFETCH = 5000
#: What a lost connection or channel raises on the 0-9-1 client.
ERRORS: tuple[type[Exception], ...] = (OSError, ClientError)


class _Settlements:
    """0-9-1's part of a :class:`~amqp_sansio.adapters.spark.calls.Delivery`: its 1.0
    form as RabbitMQ maps it, each settlement the delivery's ack, nack or reject."""

    __slots__ = ()

    def message(self, delivery: Any) -> amqp.Message:
        """The message as RabbitMQ maps it to 1.0 (ValueError: it cannot be mapped, as an
        ``expiration`` that is not a number)."""
        d = delivery
        message = amqp.Message.decode(
            to_amqp10(d.properties, d.body, exchange=d.exchange, routing_key=d.routing_key)
        )
        if d.redelivered:
            header = message.header or amqp.Header()
            message = attrs.evolve(message, header=attrs.evolve(header, delivery_count=1))
        return message

    def accept(self, delivery: Any) -> None:
        """Staged: ``basic.ack``."""
        delivery.ack()

    def release(self, delivery: Any) -> None:
        """Not this task's: back to the queue (``basic.nack``, requeue)."""
        delivery.nack(requeue=True)

    def reject(self, delivery: Any, error: object) -> None:
        """Not a message the source can make a row of: ``basic.reject`` without requeue."""
        delivery.reject(requeue=False)

    def modify(self, delivery: Any) -> None:
        """Option ``undecodable`` ``modify``: back to the queue for another consumer."""
        delivery.nack(requeue=True)


#: The settlements of every 0-9-1 delivery (they hold nothing of their own).
_SETTLEMENTS = _Settlements()


class _Held:
    """The deliveries a consumer holds, as 1.0's receiver queue is read: its length and
    its deliveries by index."""

    def __init__(self, deliveries: deque[Any]) -> None:
        self._deliveries = deliveries

    def __len__(self) -> int:
        return len(self._deliveries)

    def __getitem__(self, index: int) -> Delivery:
        return Delivery(self._deliveries[index], _SETTLEMENTS)


class _Core091:
    """What :mod:`.queue_reader` asks of a receiver's core, for a 0-9-1 consumer."""

    def __init__(self, channel: Any, consumer: Any, queue: str) -> None:
        self.channel, self.consumer, self.name = channel, consumer, queue
        self.queue = _Held(consumer.core.deliveries)
        self._cancel: asyncio.Task[None] | None = None

    def take_many(self, count: int) -> list[Delivery]:
        deliveries = self.consumer.core.deliveries
        return [
            Delivery(deliveries.popleft(), _SETTLEMENTS) for _ in range(min(count, len(deliveries)))
        ]

    def ask_available(self) -> asyncio.Task[int]:
        """Whether the queue has messages ready (a passive ``queue.declare``: its message
        count), as 1.0's flow with echo asks."""

        async def ask() -> int:
            reply = await self.channel.queue_declare(self.name, passive=True)
            count: int = reply.message_count
            return count

        return asyncio.ensure_future(ask())

    def revoke(self) -> int:
        """Stop the deliveries (``basic.cancel``); 1: some may still be under way."""
        if self._cancel is None:
            self._cancel = asyncio.ensure_future(self.consumer.cancel())
        return 1

    async def cancelled(self) -> None:
        if self._cancel is not None:
            await self._cancel


class Receiver091:
    """A consumer of one queue, as :mod:`.queue_reader` reads a 1.0 receiver: ``core``
    and ``credit`` (the prefetch; set to 0, the consumer is cancelled: nothing more
    comes)."""

    def __init__(self, channel: Any, consumer: Any, queue: str, prefetch: int) -> None:
        self.core = _Core091(channel, consumer, queue)
        self._credit = prefetch

    @property
    def credit(self) -> int:
        return self._credit

    @credit.setter
    def credit(self, value: int) -> None:
        if value <= 0 < self._credit:
            self.core.revoke()
        self._credit = max(0, value)


async def open_receivers(
    options: ReadOptions, window: int, keep: Callable[[Any], None]
) -> list[tuple[str, Receiver091]]:
    """A consumer of each address under a prefetch of ``window``, on one connection, which
    ``keep`` is given once the consumers are open."""
    from ... import aio

    conn = await aio.connect(
        options.vhost_url(), protocol="0-9-1", **options.vhost_connect_options()
    )
    channel = await conn.channel()
    await channel.basic_qos(window)
    receivers = []
    for address in options.addresses:
        consumer = await channel.basic_consume(address)
        receivers.append((address, Receiver091(channel, consumer, address, window)))
    keep(conn)
    return receivers


def sizes(window: int, part: int) -> tuple[int, int]:
    """A part is at most the prefetch (a 0-9-1 broker sends no more than the prefetch
    unacked, and a part is acked only once staged): both are the smaller."""
    size = max(1, min(window, part))
    return size, size


async def _cancel_consumers(receivers: list[tuple[str, Any]]) -> None:
    """Cancel every consumer and wait for the broker's answers."""
    for _address, receiver in receivers:
        receiver.core.revoke()
    for _address, receiver in receivers:
        await receiver.core.cancelled()


async def before_last_accept(receivers: list[tuple[str, Any]]) -> None:
    """An ack lets a 0-9-1 broker send one more: the consumers go first."""
    await _cancel_consumers(receivers)


async def stop_receivers(receivers: list[tuple[str, Any]]) -> bool:
    """Cancel the consumers; once the broker's cancel-ok came, nothing more comes."""
    await _cancel_consumers(receivers)
    return False


class _BlockingConsumer:
    """A blocking consumer whose deliveries come as
    :class:`~amqp_sansio.adapters.spark.calls.Delivery`."""

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer

    def receive(self, *, timeout: float | None = None) -> Delivery | None:
        delivery = self.consumer.receive(timeout=timeout)
        return None if delivery is None else Delivery(delivery, _SETTLEMENTS)


@contextlib.contextmanager
def receiver(options: ReadOptions, address: str, prefetch: int) -> Iterator[_BlockingConsumer]:
    """A consumer of the queue ``address`` under ``prefetch``, on a blocking connection
    of its own (closed after the block: what it holds unacked goes back to the queue)."""
    from ... import sockets

    with sockets.connect(
        options.vhost_url(), protocol="0-9-1", **options.vhost_connect_options()
    ) as conn:
        channel = conn.channel()
        channel.basic_qos(prefetch)
        yield _BlockingConsumer(channel.basic_consume(address))


#: The name :func:`receiver` had.
blocking_consumer = receiver


def publish_rows(
    options: WriteOptions,
    messages: Iterator[amqp.Message],
    timeout: float,
    *,
    done: Callable[[int], None] | None = None,
) -> int:
    """Publish each message to the queue ``options.address`` (the default exchange),
    ``mandatory``, in confirm mode, at most ``options.window`` unconfirmed; return the
    count once every one was confirmed (a nack or a return raises RuntimeError). ``done``
    is told the count confirmed every thousand and at the end."""
    from ... import sockets

    address = options.address
    sent = confirmed = 0
    with sockets.connect(
        options.vhost_url(), protocol="0-9-1", **options.vhost_connect_options()
    ) as conn:
        channel = conn.channel()
        channel.confirm_select()
        outstanding: deque[Any] = deque()

        def confirm_some(keep: int) -> None:
            nonlocal confirmed
            while len(outstanding) > keep:
                confirmation = outstanding.popleft().confirmation(timeout=timeout)
                if confirmation.returned is not None:
                    raise RuntimeError(
                        f"the broker routed a message for {address!r} to no queue: "
                        f"{confirmation.returned.reply_code} {confirmation.returned.reply_text}"
                    )
                if not confirmation.ack:
                    raise RuntimeError(f"the broker refused a message for {address!r} (nack)")
                confirmed += 1
                if done is not None and confirmed % 1000 == 0:
                    done(confirmed)

        for message in messages:
            properties, body, _exchange, _key = from_amqp10(message.encode())
            outstanding.append(
                channel.basic_publish(
                    "", address, body, properties=properties, mandatory=True, wait=False
                )
            )
            sent += 1
            confirm_some(options.window)
        confirm_some(0)
    if done is not None:
        done(confirmed)
    return sent


# -- mode stream -------------------------------------------------------------------------------


def _offset_of(delivery: Any, address: str) -> int:
    offset = (delivery.properties.headers or {}).get(OFFSET_HEADER)
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise RuntimeError(
            f"{address!r} is not a stream: its deliveries carry no {OFFSET_HEADER!r} header "
            "(mode 'stream' reads queues declared with x-queue-type 'stream'; use mode "
            "'queue' for a queue)"
        )
    return int(offset)


def _consume(channel: Any, address: str, start: Any) -> Any:
    """A consumer of the stream ``address`` from ``start`` (``x-stream-offset``); a queue
    that is not a stream refuses the argument (RabbitMQ's 406): RuntimeError."""
    try:
        return channel.basic_consume(address, arguments={OFFSET_HEADER: start})
    except ClientError as exc:  # (the channel closed: a ChannelClosedError)
        text = str(getattr(exc, "reply_text", ""))
        if getattr(exc, "reply_code", None) == 406 and OFFSET_HEADER in text:
            raise RuntimeError(
                f"{address!r} is not a stream: {text} (mode 'stream' reads queues "
                "declared with x-queue-type 'stream'; use mode 'queue' for a queue)"
            ) from None
        raise


def _receive(consumer: Any, timeout: float) -> Any:
    """The consumer's next delivery, or None after ``timeout`` s; RuntimeError when the
    broker ended the consumer."""
    try:
        delivery = consumer.receive(timeout=timeout)
    except TimeoutError:
        return None
    if delivery is None:
        raise RuntimeError("the broker cancelled the consumer of a stream")
    return delivery


def _look(conn: Any, address: str, spec: Any, prefetch: int, wait: float, quiet: float) -> int:
    """The highest offset a consumer from ``spec`` is sent, on a channel of its own, until
    none comes for ``quiet`` s (the first: ``wait`` s) or ``10 * quiet`` s (at least 1 s)
    have passed since the first (a stream written to without a pause is never quiet; a
    chunk RabbitMQ sends comes at once); -1 when none comes at all."""
    channel = conn.channel()
    try:
        channel.basic_qos(prefetch)
        consumer = _consume(channel, address, spec)
        highest, timeout, until = -1, wait, None
        while (delivery := _receive(consumer, timeout)) is not None:
            highest = max(highest, _offset_of(delivery, address))
            delivery.ack()
            now = time.monotonic()
            until = now + max(1.0, 10 * quiet) if until is None else until
            if now >= until:
                break
            timeout = quiet
        return highest
    finally:
        channel.close()


def first_offset(conn: Any, address: str, wait: float) -> int | None:
    """The first offset the stream ``address`` holds (None: it holds nothing)."""
    channel = conn.channel()
    try:
        channel.basic_qos(1)
        consumer = _consume(channel, address, "first")
        delivery = _receive(consumer, wait)
        return None if delivery is None else _offset_of(delivery, address)
    finally:
        channel.close()


def stream_bounds(conn: Any, options: ReadOptions, address: str) -> tuple[int, int]:
    """(first offset held, end) of the stream ``address`` (the module's docstring), on the
    0-9-1 connection ``conn``; (0, 0) for a stream that holds nothing."""
    wait = max(options.poll_interval, FIRST_LOOK_WAIT)
    first = first_offset(conn, address, wait)
    if first is None:
        return 0, 0
    last = _look(conn, address, "last", LOOK_PREFETCH, wait, options.poll_interval)
    return first, max(first, last + 1)


def stream_connection(options: ReadOptions) -> Any:
    """A blocking 0-9-1 connection with these options (the driver's, for the bounds, and
    each task's)."""
    from ... import sockets

    return sockets.connect(options.vhost_url(), protocol="0-9-1", **options.vhost_connect_options())


#: The name :func:`stream_connection` had.
connect091 = stream_connection


def read_range(
    options: ReadOptions, address: str, start: int, end: int, lost: Callable[[int, int], None]
) -> Iterator[tuple[int, amqp.Message | None]]:
    """(offset, message) of each message of the stream ``address`` in ``[start, end)`` (on
    an executor; None for one that cannot be mapped to 1.0): a consumer from ``start`` with
    a prefetch of ``min(credit, end - start)``, acking each delivery. ``lost(first, end)``
    is called for offsets retention dropped before they were read."""
    with stream_connection(options) as conn:
        channel = conn.channel()
        channel.basic_qos(max(1, min(options.credit, end - start)))
        consumer = _consume(channel, address, amqp091.codec.Int64(start))
        expected = start
        while expected < end:
            delivery = _receive(consumer, options.timeout)
            if delivery is None:
                raise RuntimeError(
                    f"no message at offset {expected} of stream {address!r} within "
                    f"{options.timeout} s (option 'timeout')"
                )
            offset = _offset_of(delivery, address)
            delivery.ack()
            if offset < expected:
                continue  # (RabbitMQ starts at the chunk that holds ``start``)
            if offset > expected:
                first = first_offset(conn, address, options.timeout)
                if first is not None and first > expected:
                    lost(expected, min(first, offset, end))
            if offset >= end:
                break
            try:
                message: amqp.Message | None = _SETTLEMENTS.message(delivery)
            except ValueError:
                message = None
            yield offset, message
            expected = offset + 1


def read_rows(
    options: ReadOptions, address: str, start: int, end: int, lost: Callable[[int, int], None]
) -> Iterator[tuple[Any, ...]]:
    """The rows of :func:`read_range`'s messages (on an executor), each with its offset; one
    that cannot be mapped to 1.0 is skipped, with a warning."""
    for offset, message in read_range(options, address, start, end, lost):
        if message is None:
            _log.warning(
                "an undecodable message in stream %r at offset %d: skipped", address, offset
            )
            continue
        row = message_to_row(message, address)
        yield (*row[:-2], offset, 0)
