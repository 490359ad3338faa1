"""Stream nodes: append-only logs read by offset (like RabbitMQ's streams or a Kafka
partition), the nodes Spark's ``mode=stream`` reads with exactly-once processing.

A :class:`Stream` gives each message it takes the next offset, 0, 1, 2, ... Reading does not
remove anything: every consumer has its own position, chosen when it attaches through a
filter on its source (core spec 3.5.3 ``filter``, a filter-set of 3.5.8) and moving on as it
is sent messages. Each message goes out with its offset in the message-annotations
(``x-stream-offset``, a long; core spec 3.2.3), and a consumer's outcomes are taken and
ignored: nothing leaves a stream but by retention, which drops the oldest messages past a
maximum length, size or age (:class:`~amqp_sansio.broker.BrokerConfig` ``stream_max_length``,
``stream_max_bytes``, 64 MiB by default, and ``stream_max_age``, a day by default; a stream
declared over AMQP 0-9-1 may set its own size and age limits, RabbitMQ's
``x-max-length-bytes`` and ``x-max-age``, see :mod:`.amqp091.streams`). Age retention runs on
the broker's timer (:meth:`~amqp_sansio.broker.Broker.next_expiry`) as well as when messages
arrive. The bytes a stream holds count towards the broker's resource alarm
(``BrokerConfig.memory_high_watermark``) as a queue's do, and a publisher to a stream is
held back by it the same way. A consumer
that asks for an offset retention has dropped starts at the first one still there: the gap
between the offset it asked for and the first one it gets is how it detects the loss.

The broker's answer to a consumer's attach tells it where the stream stands, without
consuming: its ``properties`` (core spec 2.7.3 ``attach``) carry ``amqp-sansio:first-offset``
(the first offset still held) and ``amqp-sansio:next-offset`` (the offset the next message
will get; the stream's end), and its source echoes the offset filter it applied (3.5.3: the
filters actually in place).

Streams are held in memory only, whatever the broker's store: a durable message published
to a stream is settled once the store has flushed, like any other, but a restarted broker
starts its streams empty.
"""

from __future__ import annotations

import bisect
from typing import Any

from ..codec.amqp10 import Described, Symbol, Timestamp
from ..definitions.amqp10.messaging import LifetimePolicy, Source
from ._nodes import Consumer, Node, NodeBroker
from ._store import StoredMessage

__all__ = [
    "FIRST_OFFSET",
    "NEXT_OFFSET",
    "OFFSET_ANNOTATION",
    "OFFSET_FILTER",
    "RABBITMQ_OFFSET_FILTER",
    "STREAM_CAPABILITY",
    "OffsetFilterError",
    "Stream",
    "offset_filter",
]

#: The filter (a key of the source's filter-set, core spec 3.5.8) by which a consumer says
#: where to start: its value is an offset (a ulong or a non-negative long) or one of the
#: symbols (or strings) ``first``, ``last`` and ``next``, plain or as the value of a described
#: type with this symbol as descriptor.
OFFSET_FILTER = Symbol("amqp-sansio:stream-offset")
#: The same filter under RabbitMQ's name, for clients written for RabbitMQ streams.
RABBITMQ_OFFSET_FILTER = Symbol("rabbitmq:stream-offset-spec")
#: The message-annotation carrying each message's offset (a long).
OFFSET_ANNOTATION = Symbol("x-stream-offset")
#: The capability (on a source or a target, core spec 3.5.3, 3.5.4) of a stream node: an
#: attach that desires it makes the node a stream when it creates it, and is refused with
#: ``amqp:precondition-failed`` by a node of another kind; the broker's answer lists it for
#: every stream.
STREAM_CAPABILITY = Symbol("amqp-sansio:stream")
#: The attach answer's properties that give a consumer the stream's bounds.
FIRST_OFFSET = Symbol("amqp-sansio:first-offset")
NEXT_OFFSET = Symbol("amqp-sansio:next-offset")

_NAMED = ("first", "last", "next")
_LONG_MAX = 2**63 - 1


class OffsetFilterError(ValueError):
    """An offset filter whose value is neither an offset nor first/last/next."""


def offset_filter(source: Source) -> tuple[Any, Any]:
    """The offset filter of ``source``: (its key and value as given, the start it asks for:
    an offset ``int`` or ``"first"``/``"last"``/``"next"``), or (None, ``"next"``) when it
    has none (a new consumer reads what comes next). Raises :class:`OffsetFilterError` for
    a value that is not one."""
    filters = source.filter
    if not isinstance(filters, dict):
        return None, "next"
    for key in (OFFSET_FILTER, RABBITMQ_OFFSET_FILTER):
        if key in filters:
            given = filters[key]
            return (key, given), _start(given)
    return None, "next"


def _start(given: Any) -> Any:
    value = given
    if isinstance(value, Described):
        if value.descriptor not in (OFFSET_FILTER, RABBITMQ_OFFSET_FILTER):
            raise OffsetFilterError(f"an offset filter described by {value.descriptor!r}")
        value = value.value
    if isinstance(value, str) and str(value) in _NAMED:
        return str(value)
    # (A timestamp is an int in Python but no offset: RabbitMQ's "from this time" form,
    # which this broker does not keep the times for.)
    if (
        not isinstance(value, (bool, Timestamp))
        and isinstance(value, int)
        and 0 <= value <= _LONG_MAX
    ):
        return int(value)
    raise OffsetFilterError(
        f"an offset filter is an offset (0 to 2**63-1) or first, last or next; not {value!r}"
    )


class Stream(Node):
    """An append-only node read by offset (the module's docstring). ``first`` is the offset
    of the oldest message held, :attr:`end` the offset the next message gets."""

    kind = "stream"

    def __init__(
        self,
        broker: NodeBroker,
        address: str,
        *,
        dynamic: bool = False,
        policy: LifetimePolicy | None = None,
    ) -> None:
        super().__init__(broker, address, dynamic=dynamic, policy=policy)
        # The messages from offset ``first`` on are ``_log[_head:]``: retention moves
        # ``_head``, and the list is compacted when half of it is dropped messages.
        self._log: list[StoredMessage] = []
        self._head = 0
        self.first = 0
        self.bytes = 0
        self.consumers: list[Consumer] = []
        #: The broker's wall-clock time each message held arrived (``_times[i]`` for
        #: ``_log[i]``): for age retention and for reading from a time.
        self._times: list[float] = []
        #: This stream's own limits (None: the broker's ``stream_max_bytes``; no age
        #: limit): RabbitMQ's ``x-max-length-bytes`` and ``x-max-age`` (seconds).
        self.max_bytes: int | None = None
        self.max_age: float | None = None
        #: The time at which the broker's timer calls :meth:`retain` (None: not watched).
        self.watched: float | None = None

    @property
    def end(self) -> int:
        """The offset the next message will get (one past the last)."""
        return self.first + len(self._log) - self._head

    @property
    def depth(self) -> int:
        return len(self._log) - self._head

    def offer(self, message: StoredMessage) -> str | None:
        """Append ``message`` at offset :attr:`end`, annotated with it, then apply
        retention. A stream takes everything (its limits drop the oldest instead)."""
        message.annotate({OFFSET_ANNOTATION: self.end})
        self._log.append(message)
        self._times.append(self.broker.wall)
        self.bytes += message.size
        self.broker.hold(message)
        self._had_messages = True
        self._retain()
        return None

    @property
    def age_limit(self) -> float | None:
        """The seconds this stream keeps a message (its own ``x-max-age``, else the
        broker's ``stream_max_age``; None: no age limit)."""
        return self.broker.config.stream_max_age if self.max_age is None else self.max_age

    def _retain(self) -> None:
        broker = self.broker
        config = broker.config
        length = config.stream_max_length
        size = config.stream_max_bytes if self.max_bytes is None else self.max_bytes
        age = self.age_limit
        oldest = None if age is None else broker.wall - age
        while self.depth > 1 and (
            (length is not None and self.depth > length)
            or (size is not None and self.bytes > size)
            or (oldest is not None and self._times[self._head] < oldest)
        ):
            dropped = self._log[self._head]
            dropped.dropped = True
            self.bytes -= dropped.size
            broker.let_go(dropped)
            self._head += 1
            self.first += 1
        if self._head > 1024 and self._head * 2 > len(self._log):
            del self._log[: self._head]
            del self._times[: self._head]
            self._head = 0
        if age is not None and self.depth > 1 and not self.deleted:
            when = self._times[self._head] + age  # (the oldest message's time comes)
            if self.watched is None or when < self.watched:
                self.watched = when
                broker.watch_age(self, when)

    def retain(self) -> None:
        """Apply retention now: when a consumer comes, when the stream is declared, and on
        the broker's timer for age retention (as messages arrive too)."""
        self._retain()

    def offset_at(self, wall: float) -> int:
        """The offset of the first message held that arrived at ``wall`` (broker wall-clock
        seconds) or later; the end when there is none (RabbitMQ's ``x-stream-offset`` as a
        timestamp)."""
        index = bisect.bisect_left(self._times, wall, lo=self._head)
        return self.first + index - self._head

    def position(self, start: int | str) -> int:
        """The offset a consumer asking for ``start`` (from :func:`offset_filter`) reads
        first: an offset dropped by retention gives the first one held; ``last`` is the
        newest message (the end when there is none), ``next`` the end."""
        if start == "first":
            return self.first
        if start == "next":
            return self.end
        if start == "last":
            return max(self.first, self.end - 1)
        return max(int(start), self.first)

    def bounds(self) -> dict[Symbol, int]:
        """The attach answer's properties: the first offset held and the end."""
        return {FIRST_OFFSET: self.first, NEXT_OFFSET: self.end}

    def add_consumer(self, consumer: Any) -> None:
        self.consumers.append(consumer)

    def remove_consumer(self, consumer: Any) -> None:
        self.consumers.remove(consumer)

    def dispatch(self, budget: int | None = None) -> bool:
        """Send each consumer with credit the messages from its position on; a consumer
        whose position retention dropped goes on from the first message held. At most
        ``budget`` messages in all (None: no bound): False when it stopped there (call
        again; a consumer's drain is answered only once it is done), True when done."""
        sent = 0
        for consumer in self.consumers:
            while consumer.credit > 0 and consumer.cursor < self.end:
                if budget is not None and sent >= budget:
                    return False
                offset = max(consumer.cursor, self.first)
                consumer.cursor = offset + 1
                consumer.deliver(self._log[self._head + offset - self.first], self)
                sent += 1
            consumer.tell_available(max(0, self.end - max(consumer.cursor, self.first)))
            if consumer.credit > 0 or consumer.blocked:
                consumer.drained()
        return True

    def clear(self) -> None:
        super().clear()
        for message in self._log[self._head :]:
            message.dropped = True
            self.broker.let_go(message)
        self.first = self.end
        self.watched = None
        self._log.clear()
        self._times.clear()
        self._head = 0
        self.bytes = 0
