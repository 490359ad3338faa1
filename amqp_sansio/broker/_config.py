"""The broker's configuration: one frozen value, given to :class:`~amqp_sansio.broker.Broker`."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import attrs

if TYPE_CHECKING:
    from ..security.mechanisms import ServerAuthenticator
    from ._users import Users

__all__ = [
    "DEFAULT_EVICT_IDLE_AFTER",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_ADDRESS_LENGTH",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "DEFAULT_MAX_QUEUE_BYTES",
    "DEFAULT_MAX_QUEUE_DEPTH",
    "DEFAULT_MAX_UNSETTLED_PER_LINK",
    "DEFAULT_MEMORY_HIGH_WATERMARK",
    "DEFAULT_QUEUE_EXPIRY",
    "DEFAULT_STREAM_MAX_AGE",
    "DEFAULT_STREAM_MAX_BYTES",
    "DEFAULT_LINK_CREDIT_BYTES",
    "DEFAULT_CONNECTION_CREDIT_BYTES",
    "MEMORY_LOW_WATERMARK",
    "DROP_HEAD",
    "QUEUE_OVERFLOW_POLICIES",
    "REJECT_PUBLISH",
    "BrokerConfig",
]

#: The largest message the broker takes by default: 16 MiB, RabbitMQ 4's default too
#: (``max_message_size``).
DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024
#: Messages one queue holds by default (``max_queue_depth``).
DEFAULT_MAX_QUEUE_DEPTH = 1_000_000
#: Bytes (encoded messages) one queue holds by default (``max_queue_bytes``).
DEFAULT_MAX_QUEUE_BYTES = 256 * 1024 * 1024
#: The longest source or target address by default, in bytes of UTF-8
#: (``max_address_length``).
DEFAULT_MAX_ADDRESS_LENGTH = 1024
#: Unsettled deliveries the broker holds on one link by default (``max_unsettled_per_link``).
DEFAULT_MAX_UNSETTLED_PER_LINK = 100_000
#: Bytes of messages held across all queues above which the broker raises its resource
#: alarm by default (``memory_high_watermark``): 1 GiB, four queues at their default
#: ``max_queue_bytes``. The command (``amqp-sansio broker``) reads the machine's memory and
#: takes a fifth of it instead (docs/defaults.rst says why).
DEFAULT_MEMORY_HIGH_WATERMARK = 1024 * 1024 * 1024
#: Seconds a queue made on first use is kept with no link before it is deleted, messages
#: and all, by default (``queue_expiry``): one hour (docs/broker.rst says why).
DEFAULT_QUEUE_EXPIRY = 3600.0
#: Seconds of silence after which the broker closes a connection by default
#: (``idle_timeout``): 1.0 announces half of it in its open, 0-9-1 proposes half of it as
#: the heartbeat in its ``connection.tune`` (60 s, RabbitMQ's default).
DEFAULT_IDLE_TIMEOUT = 120.0
#: Seconds an anonymous connection without links or consumers must have been quiet before
#: a new connection at a connection cap may evict it, by default (``evict_idle_after``).
DEFAULT_EVICT_IDLE_AFTER = 10.0
#: Bytes (encoded messages) one stream keeps by default (``stream_max_bytes``): past them
#: its oldest messages are dropped. Streams live in memory and count towards the alarm.
DEFAULT_STREAM_MAX_BYTES = 64 * 1024 * 1024
#: Seconds one stream keeps a message by default (``stream_max_age``): one day.
DEFAULT_STREAM_MAX_AGE = 86400.0
#: Bytes one 1.0 publisher's link may have outstanding in credit by default
#: (``link_credit_bytes``): its credit times the largest message it has sent (4 KiB
#: before its first) stays within it, one credit at least.
DEFAULT_LINK_CREDIT_BYTES = 4 * 1024 * 1024
#: Bytes the 1.0 publishers of one connection may have outstanding in credit by default
#: (``connection_credit_bytes``), shared among its publishers' links; while the resource
#: alarm is on, the bytes one connection may still put in (its credit granted before).
DEFAULT_CONNECTION_CREDIT_BYTES = 16 * 1024 * 1024
#: The alarm clears below this fraction of ``memory_high_watermark`` when
#: ``memory_low_watermark`` is not given.
MEMORY_LOW_WATERMARK = 0.9
#: ``queue_overflow``: a message past a queue's limits is rejected (the default).
REJECT_PUBLISH = "reject-publish"
#: ``queue_overflow``: the oldest messages make room (dead-lettered, or dropped).
DROP_HEAD = "drop-head"
QUEUE_OVERFLOW_POLICIES = (REJECT_PUBLISH, DROP_HEAD)


def _between(low: int, high: int) -> Callable[[object, attrs.Attribute[int], int], None]:
    """An attrs validator: ``low <= value <= high`` (ValueError)."""

    def check(config: object, attribute: attrs.Attribute[int], value: int) -> None:
        if not low <= value <= high:
            raise ValueError(f"{attribute.name} must be from {low} to {high}, not {value}")

    return check


@attrs.frozen(kw_only=True)
class BrokerConfig:
    """What a :class:`~amqp_sansio.broker.Broker` does, and how much it takes.

    Nodes (broker draft 2.1): an address names a queue, created on first attach when
    ``auto_create`` is true (else the attach is refused with ``amqp:not-found``), unless it
    is one of ``queues`` (always there) or a topic: one of ``topics``, or starting with
    ``topic_prefix``, or a stream (an append-only log read by offset, see
    :mod:`~amqp_sansio.broker` and ``docs/broker.rst``): one of ``streams``, or starting with
    ``stream_prefix``, or created by an attach that desires the stream capability.
    ``stream_max_length`` (messages, default None), ``stream_max_bytes`` (default 64 MiB)
    and ``stream_max_age`` (seconds, default a day) bound each stream: past them its oldest
    messages are dropped (retention, applied as messages arrive and, for age, when the
    oldest message's time comes; the newest is always kept). A stream declared over AMQP
    0-9-1 with ``x-max-length-bytes`` or ``x-max-age`` sets its own. A stream's bytes count
    towards the resource alarm, as a queue's do. ``dead_letter``
    names the queue rejected messages go to (none: they are dropped).

    Messages and queues (``docs/broker.rst`` "Limits" lists each default and its answer on
    the wire; each is None for no limit):

    * ``max_message_size`` (bytes, default 16 MiB): announced in the broker's attach of
      every publisher's link (core spec 2.7.3 ``max-message-size``); a delivery that grows
      past it detaches its link with ``amqp:link:message-size-exceeded`` (2.8.17), checked
      as each transfer arrives, so no more than the limit and a frame is held.
    * ``max_queue_depth`` (messages, default 1,000,000) and ``max_queue_bytes`` (bytes of
      encoded messages, default 256 MiB) per queue, and what happens past them,
      ``queue_overflow``: ``"reject-publish"`` (the default: the new message is
      ``rejected`` with ``amqp:resource-limit-exceeded``) or ``"drop-head"`` (the oldest
      waiting messages go to ``dead_letter``, or are dropped if there is none, to make room;
      a message that could never fit is rejected).
    * ``auto_delete`` (default on): a queue made on first use (not one of ``queues``, not a
      dynamic node, topic or stream) is deleted once it has no link and holds no message,
      like RabbitMQ's auto-delete queues; ``queue_expiry`` (seconds, default one hour;
      None: never): such a queue with no link for that long is deleted with its messages
      (RabbitMQ's ``x-expires``: a queue made by a mere attach or send would otherwise keep
      its messages, and its memory, for ever). Queues declared (0-9-1 ``queue.declare``,
      the management node, ``queues``) expire only if they ask (``x-expires``). A topic
      made on first use goes when it has no link and keeps no subscription.
    * ``max_address_length`` (bytes of UTF-8, default 1024): an attach whose source or
      target address is longer is refused with ``amqp:invalid-field`` (the address itself
      is refused, as an over-long selector is: trying again later gets the same answer).
    * ``max_unsettled_per_link`` (default 100,000): the unsettled deliveries the broker
      holds on one link. To a consumer it sends no more until some are settled; a
      publisher's credit is capped at the room left (the engine's ``max_unsettled``), and one
      that sends beyond it is detached with ``amqp:resource-limit-exceeded``.

    The resource alarm (RabbitMQ's memory alarm, on the bytes of messages the broker holds,
    waiting or out with a consumer, across all queues, topic subscriptions' buffers
    included: an I/O-free core cannot read the machine's memory): above
    ``memory_high_watermark`` bytes (default 1 GiB; None: no alarm) the broker stops taking
    messages from publishers until it is below ``memory_low_watermark`` (default None: 90%
    of the high mark). A 0-9-1 client that announced the ``connection.blocked`` capability
    gets ``connection.blocked`` (then ``connection.unblocked``), and a 0-9-1 connection that
    publishes during the alarm is read no further (its
    :attr:`~amqp_sansio.broker.BrokerConnection091.reading` is False; its heartbeat
    monitor waits); 1.0 publishers get no more credit. Consumers go on: they are how the
    alarm clears (for a stream: its retention).

    What a 1.0 publisher may still send once the alarm is on is the credit it was granted
    before, which the broker grants in bytes (core spec 2.6.7: the receiver sets the
    credit): a link's credit times the largest message it has sent (4 KiB before its
    first) stays within ``link_credit_bytes`` (default 4 MiB) and within its
    share of ``connection_credit_bytes`` (default 16 MiB, divided among the connection's
    publishers), one credit at least; a message larger than any before lowers the credit
    at once. While the alarm is on, a connection's publishers put in at most
    ``connection_credit_bytes`` in all (what was in flight): a message beyond is
    ``rejected`` with ``amqp:resource-limit-exceeded``. So the bytes held stay below
    ``memory_high_watermark`` + ``max_message_size`` + ``connection_credit_bytes`` for each
    publishing 1.0 connection. None: no such bound.

    ``max_links_per_connection``: further attaches are refused with
    ``amqp:resource-limit-exceeded``. ``link_credit`` is the credit the broker keeps open
    on a publisher's link.

    ``dispatch_batch`` is how many messages the broker hands to consumers in one turn (None:
    all their credit allows): the rest waits for :meth:`Broker.dispatch_more`, which the
    server calls once it has written the turn's output. So a consumer that grants a large
    credit gets its first messages while the broker encodes the next, and no consumer holds
    the broker's loop (other connections' frames, heartbeats) for the time of its whole
    grant (core spec 2.6.7 sets no pace for using credit).

    Selectors (a consumer's ``apache.org:selector-filter:string`` filter, see
    ``docs/broker.rst``): one longer than ``selector_max_length`` characters, or nested
    (parentheses, ``NOT``, signs) deeper than ``selector_max_depth`` levels (at most 100),
    refuses the attach with ``amqp:invalid-field``.

    The server engine of each connection: ``container_id``, ``idle_timeout`` (seconds of
    silence after which the broker closes the connection, default 120; None: none): a 1.0
    connection announces half of it as its idle-time-out (core spec 2.4.5: the client sends
    empty frames in between) and closes with ``amqp:resource-limit-exceeded``; a 0-9-1
    connection proposes half of it (rounded up, whole seconds) as the heartbeat in its
    ``connection.tune`` (60 s by default, as RabbitMQ), and the client's ``tune-ok`` has the
    last word (0: no heartbeat, as the 0-9-1 spec and RabbitMQ take it);
    ``max_frame_size``; ``sasl`` is a :class:`~amqp_sansio.sasl.ServerAuthenticator`, or
    None (the default): the ``users``' one if given, else anonymous access (SASL
    ANONYMOUS, or no SASL layer at all: both the SASL and the bare AMQP protocol header are
    answered, core spec 2.2, 5.1; see ``docs/defaults.rst``); False: no SASL layer (the bare
    header only). ``allow_insecure_auth`` lets PLAIN run without TLS (loopback).

    Topic subscriptions that outlive their links (core spec 3.5.6; see
    :mod:`amqp_sansio.broker` and ``docs/broker.rst``): at most ``max_subscriptions`` kept
    in all and ``max_subscriptions_per_container`` for one client container-id (counting
    attached and suspended ones; an attach beyond is refused with
    ``amqp:resource-limit-exceeded``); a subscription's buffer holds at most
    ``max_subscription_depth`` messages (past it the topic's messages are dropped for that
    subscriber alone; ``max_queue_depth`` and ``max_queue_bytes`` apply too). None: no
    limit.

    Azure Service Bus's scheduled messages (``docs/azure.rst``, "Scheduled messages"): at
    most ``max_scheduled_messages`` wait in all (in memory); one more is refused (a
    ``schedule-message`` request: 403, ``amqp:resource-limit-exceeded``; a transfer:
    ``rejected`` with that condition). None: no limit.

    Connections (see the "Limits" table of ``docs/broker.rst``): a client that has not
    sent its open within ``handshake_timeout`` seconds of its TCP connection (TLS, SASL and
    the protocol headers included) is cut: with an open and a close
    (``amqp:resource-limit-exceeded``) once the AMQP headers are exchanged, by closing the
    transport before that (nothing can be said earlier). ``max_connections`` in all and
    ``max_connections_per_address`` from one source address (handshaking ones included)
    are counted when the transport is accepted: one more is closed at once, before any
    byte, unless an idle anonymous connection makes room: with ``evict_idle_after``
    (seconds, default 10; None: never), the least recently active open connection from
    that address (any address at ``max_connections``) that is anonymous (no user counted
    for it: SASL ANONYMOUS, the bare header, any 0-9-1 login on a broker without users),
    holds no link (1.0) and no consumer or unacknowledged delivery (0-9-1), and has sent
    nothing but heartbeats for that long is closed (``amqp:resource-limit-exceeded``;
    0-9-1: 320 CONNECTION_FORCED) and the new one taken. ``max_connections_per_user``
    counts the open connections of each authenticated user (not anonymous ones): one more is
    answered with an open and a close
    (``amqp:resource-limit-exceeded``, core spec 2.4.1, 2.8.15). ``channel_max`` and
    ``handle_max`` are announced in the open and each begin (core spec 2.7.1, 2.7.2): a
    session on a higher channel closes the connection with
    ``amqp:connection:framing-error``, a link on a higher handle ends its session with
    ``amqp:resource-limit-exceeded`` (the engine's rule). ``open_max_frame_size`` bounds the
    frames before the client's open (core spec 2.4.1: 512 until the open; SASL frames have
    the engine's own bound). Failed logins are slowed per source address: past
    ``login_delay_after`` failures within ``login_failure_window`` seconds, the outcome
    of each further failure waits ``login_delay`` seconds, doubling each time, at most
    ``login_delay_max``. None: no limit.

    ``virtual_hosts``: the AMQP 0-9-1 virtual hosts (0-9-1 spec 3.1.2), ``/`` by default
    and always (its queues are the broker's nodes, which 1.0 connections see; the others
    keep theirs to themselves). A 0-9-1 ``connection.open`` of another is refused with 530
    NOT_ALLOWED.

    ``users`` (a :class:`~amqp_sansio.broker.Users`): who may connect (its SASL store, used
    unless ``sasl`` is given) and what each may do: an attach to an address the
    authenticated user may not send to or receive from is refused with
    ``amqp:unauthorized-access``. A client without SASL gets the rules of its ``anonymous``
    entry, and is refused (its SASL header answers it) where there is none. None: no access
    rules.
    """

    auto_create: bool = True
    virtual_hosts: frozenset[str] = attrs.field(default=frozenset({"/"}), converter=frozenset)
    queues: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    topics: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    topic_prefix: str | None = "topic/"
    streams: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    stream_prefix: str | None = "stream/"
    stream_max_length: int | None = None
    stream_max_bytes: int | None = DEFAULT_STREAM_MAX_BYTES
    stream_max_age: float | None = DEFAULT_STREAM_MAX_AGE
    dead_letter: str | None = None
    # -- messages and queues (docs/broker.rst "Limits") --
    max_message_size: int | None = DEFAULT_MAX_MESSAGE_SIZE
    max_queue_depth: int | None = DEFAULT_MAX_QUEUE_DEPTH
    max_queue_bytes: int | None = DEFAULT_MAX_QUEUE_BYTES
    queue_overflow: str = attrs.field(
        default=REJECT_PUBLISH, validator=attrs.validators.in_(QUEUE_OVERFLOW_POLICIES)
    )
    auto_delete: bool = True
    queue_expiry: float | None = DEFAULT_QUEUE_EXPIRY
    max_address_length: int | None = DEFAULT_MAX_ADDRESS_LENGTH
    max_unsettled_per_link: int | None = DEFAULT_MAX_UNSETTLED_PER_LINK
    memory_high_watermark: int | None = DEFAULT_MEMORY_HIGH_WATERMARK
    memory_low_watermark: int | None = None
    # -- end of messages and queues --
    max_links_per_connection: int | None = 1000
    max_subscriptions: int | None = 10_000
    max_subscriptions_per_container: int | None = 1000
    max_subscription_depth: int | None = 100_000
    max_scheduled_messages: int | None = 10_000
    link_credit: int = 1000
    link_credit_bytes: int | None = DEFAULT_LINK_CREDIT_BYTES
    connection_credit_bytes: int | None = DEFAULT_CONNECTION_CREDIT_BYTES
    dispatch_batch: int | None = 1000
    selector_max_length: int = 4096
    selector_max_depth: int = 32
    container_id: str = "amqp-sansio-broker"
    idle_timeout: float | None = DEFAULT_IDLE_TIMEOUT
    max_frame_size: int = 65536
    sasl: ServerAuthenticator | Literal[False] | None = None
    allow_insecure_auth: bool = False
    users: Users | None = None
    # -- connections: handshake time-out, connection caps, channel-max and handle-max,
    # frames before the open, failed logins (docs/broker.rst, "Limits")
    handshake_timeout: float | None = 10.0
    max_connections: int | None = 1000
    max_connections_per_address: int | None = 500
    evict_idle_after: float | None = DEFAULT_EVICT_IDLE_AFTER
    max_connections_per_user: int | None = 500
    channel_max: int = attrs.field(default=255, validator=_between(0, 0xFFFF))
    handle_max: int = attrs.field(default=1023, validator=_between(0, 0xFFFFFFFF))
    open_max_frame_size: int = attrs.field(default=512, validator=_between(512, 0xFFFFFFFF))
    login_delay_after: int = 3
    login_delay: float = 1.0
    login_delay_max: float = 16.0
    login_failure_window: float = 300.0

    def __attrs_post_init__(self) -> None:
        for name in ("stream_max_bytes", "link_credit_bytes", "connection_credit_bytes"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None), not {value}")
        if self.stream_max_age is not None and not self.stream_max_age > 0:
            raise ValueError(f"stream_max_age must be more than 0, not {self.stream_max_age}")
        high, low = self.memory_high_watermark, self.memory_low_watermark
        if high is not None and high < 0:
            raise ValueError(f"memory_high_watermark must not be negative, not {high}")
        if low is not None and (high is None or not 0 <= low <= high):
            raise ValueError(
                f"memory_low_watermark must be from 0 to memory_high_watermark, not {low}"
            )

    @property
    def memory_clear_mark(self) -> int | None:
        """The bytes held below which the resource alarm clears (None: no alarm)."""
        high = self.memory_high_watermark
        if high is None:
            return None
        low = self.memory_low_watermark
        return int(high * MEMORY_LOW_WATERMARK) if low is None else low

    def is_topic(self, address: str) -> bool:
        """Whether ``address`` names a topic (copy to every subscriber) rather than a queue."""
        if address in self.topics:
            return True
        return self.topic_prefix is not None and address.startswith(self.topic_prefix)

    def is_stream(self, address: str) -> bool:
        """Whether ``address`` names a stream (read by offset) by this configuration."""
        prefix = self.stream_prefix
        return address in self.streams or (prefix is not None and address.startswith(prefix))
