"""Azure Service Bus's scheduled messages: messages that arrive at their entity at a time
of the sender's choosing, not before (the Service Bus AMQP protocol guide, "Schedule
message" and "Cancel scheduled message"; the SDK's ``ServiceBusSender.schedule_messages``,
``cancel_scheduled_messages`` and ``ServiceBusMessage.scheduled_enqueue_time_utc``).

:class:`ScheduledMessages` owns them (the broker has one: ``Broker.scheduled``):

* **Two ways in.** The ``com.microsoft:schedule-message`` request to ``<entity>/$management``
  (:meth:`ScheduledMessages.schedule`, answered by :class:`.servicebus.EntityManagement`),
  and a transfer (or a message of a batch) whose message-annotation
  ``x-opt-scheduled-enqueue-time`` (:data:`ENQUEUE_TIME`, a timestamp) is later than now
  (:meth:`ScheduledMessages.offer`, which every 1.0 publish to a node goes through). A time
  now or past puts the message on its node at once.
* **Sequence numbers.** Each message scheduled gets one of the broker's sequence numbers,
  the one the request's answer gives and ``com.microsoft:cancel-scheduled-message`` takes.
  When it is due the message is put on its entity (made on first use, as a publish makes
  it) as a message arriving then: it gets a new sequence number in the entity's arrival
  order (a queue's order is its arrival order, which an older number would break), and its
  ``ttl`` counts from then.
* **Time.** Nothing here reads a clock: each message waits on a broker timer
  (:meth:`~amqp_sansio.broker._broker.BrokerCore.call_at`, the wall clock), fired when the
  driver calls ``Broker.expire`` at ``Broker.next_expiry``.
* **Memory.** Scheduled messages live in memory only (a durable store does not keep
  them: a restart loses them), at most ``BrokerConfig.max_scheduled_messages`` in all.
  Peek does not show them.

Everything here is I/O-free.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...codec.amqp10 import Array, Symbol, decode_from
from ...errors import DecodeError
from .._store import StoredMessage, parse_message

if TYPE_CHECKING:
    from .._nodes import Node
    from .._timers import Timer
    from .interface import Broker10

__all__ = [
    "ENQUEUE_TIME",
    "Scheduled",
    "ScheduledMessages",
    "enqueue_time",
    "sequence_numbers",
]

#: The message-annotation that holds a message until a time (a timestamp, ms since the
#: epoch): the SDK's ``scheduled_enqueue_time_utc``.
ENQUEUE_TIME = Symbol("x-opt-scheduled-enqueue-time")
_ENQUEUE_TIME_BYTES = ENQUEUE_TIME.encode()
#: The section codes read before the bare message (core spec 3.2).
_HEADER, _DELIVERY_ANNOTATIONS, _MESSAGE_ANNOTATIONS = 0x70, 0x71, 0x72


class Scheduled(Exception):
    """Why messages could not be scheduled: the management status ``code`` and the
    error ``condition`` to answer with."""

    def __init__(self, code: int, condition: str, why: str) -> None:
        super().__init__(why)
        self.code = code
        self.condition = condition
        self.why = why


class _Waiting:
    """A scheduled message: the entity's address, the message, and its timer."""

    __slots__ = ("address", "message", "timer")

    def __init__(self, address: str, message: StoredMessage, timer: Timer) -> None:
        self.address = address
        self.message = message
        self.timer = timer


def enqueue_time(data: bytes) -> float | None:
    """The ``x-opt-scheduled-enqueue-time`` of an encoded message (seconds since the
    epoch), or None: without that annotation, or with one that is not a timestamp. Only the
    sections before the bare message are read, and only when the annotation's name is in
    the bytes at all (the common case reads nothing). Raises
    :class:`~amqp_sansio.DecodeError` for such sections not well formed."""
    if len(data) < 3 or data[2] > _MESSAGE_ANNOTATIONS or _ENQUEUE_TIME_BYTES not in data:
        return None  # (no section before the bare message: nothing scanned)
    pos = 0
    while pos < len(data) - 2:
        if data[pos] != 0x00 or data[pos + 1] != 0x53:
            return None  # (a section's descriptor is a smallulong: else not one we read)
        code = data[pos + 2]
        if code > _MESSAGE_ANNOTATIONS:
            return None
        value, end = decode_from(data, pos)
        if code == _MESSAGE_ANNOTATIONS:
            annotations = getattr(value, "value", None)
            when = annotations.get(ENQUEUE_TIME) if isinstance(annotations, dict) else None
            if isinstance(when, int) and not isinstance(when, bool):
                return int(when) / 1000.0  # (a timestamp; a long taken as one too)
            return None
        pos = end
    return None


class ScheduledMessages:
    """The broker's scheduled messages, by sequence number (see the module's docs)."""

    def __init__(self, broker: Broker10) -> None:
        self.broker = broker
        self._waiting: dict[int, _Waiting] = {}
        #: Messages whose time came but whose entity refused them (full): dropped.
        self.dropped = 0

    def __len__(self) -> int:
        """The messages waiting."""
        return len(self._waiting)

    def sequence_numbers(self, address: str) -> list[int]:
        """The sequence numbers of the messages waiting for ``address``, in order."""
        return sorted(seq for seq, w in self._waiting.items() if w.address == address)

    def offer(self, node: Node, message: StoredMessage) -> str | None:
        """A message published to ``node``: held until its ``x-opt-scheduled-enqueue-time``
        if that is later than now, else put on the node. Why it is refused (the node's
        limit, or ``max_scheduled_messages``), or None."""
        data = message.data
        # (enqueue_time's first test, without the call: most messages have no section
        # before the bare message, and are put at once)
        when = None if len(data) < 3 or data[2] > _MESSAGE_ANNOTATIONS else enqueue_time(data)
        if when is None or when <= self.broker.wall:
            return node.offer(message)
        why = self._room(1)
        if why is not None:
            return why
        self._hold(node.address, message, when)
        return None

    def schedule(self, address: str, messages: Iterable[bytes]) -> list[int]:
        """Schedule encoded ``messages`` for the entity at ``address``, each at its
        ``x-opt-scheduled-enqueue-time`` (a time now or past: put at once); their sequence
        numbers, in order. Raises :class:`Scheduled`, none scheduled: (400,
        ``com.microsoft:argument-error``) for a malformed message or one without that
        time, (403, ``amqp:resource-limit-exceeded``) beyond ``max_scheduled_messages``;
        (403, the same) when the entity refuses a message due at once (its limits: those
        before it stay scheduled or put, as a batch's do)."""
        broker = self.broker
        parsed: list[tuple[bytes, float]] = []
        for index, data in enumerate(messages):
            try:
                when = enqueue_time(data)
                parse_message(data, seq=0, wall=broker.wall)  # (well formed: checked now)
            except DecodeError as exc:
                raise Scheduled(400, _ARGUMENT_ERROR, f"message {index}: {exc}") from None
            if when is None:
                missing = f"message {index} has no x-opt-scheduled-enqueue-time (a timestamp)"
                raise Scheduled(400, _ARGUMENT_ERROR, missing)
            parsed.append((data, when))
        later = sum(1 for _, when in parsed if when > broker.wall)
        why = self._room(later)
        if why is not None:
            raise Scheduled(403, _LIMIT, why)
        numbers = []
        for data, when in parsed:
            message = parse_message(data, seq=broker.next_seq(), wall=broker.wall)
            if when > broker.wall:
                self._hold(address, message, when)
            else:
                refused = self._put(address, message)
                if refused is not None:
                    raise Scheduled(403, _LIMIT, refused)
            numbers.append(message.seq)
        return numbers

    def cancel(self, address: str, numbers: Iterable[int]) -> None:
        """Cancel the messages waiting for ``address`` with these sequence numbers. All or
        none: raises :class:`Scheduled` (404, ``com.microsoft:message-not-found``, as
        Service Bus answers) naming those not waiting there (put already, cancelled, or
        never scheduled), and cancels none."""
        wanted = list(dict.fromkeys(numbers))
        waiting = self._waiting
        missing = [n for n in wanted if n not in waiting or waiting[n].address != address]
        if missing:
            shown = ", ".join(str(n) for n in missing[:16])
            why = f"Messages not found. Missing sequence numbers: {shown}"
            raise Scheduled(404, _NOT_FOUND, why)
        for number in wanted:
            waiting.pop(number).timer.cancel()

    def _room(self, count: int) -> str | None:
        limit = self.broker.config.max_scheduled_messages
        if count and limit is not None and len(self._waiting) + count > limit:
            return f"max_scheduled_messages ({limit}) reached: no room for {count} more"
        return None

    def _hold(self, address: str, message: StoredMessage, when: float) -> None:
        seq = message.seq
        timer = self.broker.call_at(when, lambda: self._due(seq))
        self._waiting[seq] = _Waiting(address, message, timer)

    def _due(self, seq: int) -> None:
        """A message's time came: put on its entity as a message arriving now."""
        waiting = self._waiting.pop(seq)
        broker = self.broker
        message = parse_message(waiting.message.data, seq=broker.next_seq(), wall=broker.wall)
        if self._put(waiting.address, message) is not None:
            self.dropped += 1

    def _put(self, address: str, message: StoredMessage) -> str | None:
        broker = self.broker
        config = broker.config
        node = broker.nodes.get(address)
        if node is None:
            topic, stream = config.is_topic(address), config.is_stream(address)
            node = broker.declare(address, topic=topic, stream=stream)
        why = node.offer(message)
        if why is None:
            broker.touch(node)
        return why


_ARGUMENT_ERROR = "com.microsoft:argument-error"
_NOT_FOUND = "com.microsoft:message-not-found"
_LIMIT = "amqp:resource-limit-exceeded"


def sequence_numbers(value: Any) -> list[int] | None:
    """The sequence numbers of a ``cancel-scheduled-message`` request's
    ``sequence-numbers`` (an array of longs; a list too), or None if it is not one."""
    if isinstance(value, Array):
        value = value.items
    if not isinstance(value, list | tuple):
        return None
    items = list(value)
    if not items or not all(isinstance(n, int) and not isinstance(n, bool) for n in items):
        return None
    return [int(n) for n in items]
