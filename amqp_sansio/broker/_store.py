"""Messages as the broker holds them, and where it keeps them (broker draft 2.2).

A :class:`StoredMessage` keeps the bytes a publisher sent, untouched, with what the broker
reads from its header and properties (priority, expiry, delivery-count). The only section the
broker ever re-encodes is the header (core spec 3.2.1), to carry an incremented
delivery-count; the annotations and the bare message (3.2) go out as they came.

A :class:`Store` is told of every message a node takes and lets go of: the default,
:class:`MemoryStore`, keeps nothing beyond memory. The durable store of ``--store``
(SQLite, :mod:`amqp_sansio.adapters.broker_store`) does file I/O, so it lives with the
adapters and plugs in here; :meth:`Broker.restore <amqp_sansio.broker.Broker.restore>`
gives the broker back what it kept.

A store may keep the AMQP 0-9-1 topology too: :mod:`.amqp091.topology` says how.
"""

from __future__ import annotations

from typing import Any, cast

from ..codec.amqp10 import decode_from, encode
from ..definitions.amqp10.message import Message
from ..definitions.amqp10.messaging import Header, MessageAnnotations, Properties
from ..errors import DecodeError

__all__ = ["Native", "StoredMessage", "expiry", "parse_message"]

#: The descriptor codes of the sections that may come before properties (core spec 3.2).
_HEADER, _MESSAGE_ANNOTATIONS, _PROPERTIES = 0x70, 0x72, 0x73
#: Priorities 0 to 9 are distinct; 10 and above are the same as 9 (core spec 3.2.1, n = 10).
MAX_PRIORITY = 9


class Native:
    """A message as its publisher's protocol had it, beside its 1.0 form: consumers of the
    same protocol take ``form`` (that protocol's own object, opaque here) instead of mapping
    the 1.0 form back, as a broker of that protocol would pass the message through.
    ``protocol`` is the publisher's (a key of the broker's table of protocols), ``priority``
    the priority its publisher stated (None: none)."""

    __slots__ = ("form", "priority", "protocol")

    def __init__(self, protocol: str, priority: int | None, form: Any) -> None:
        self.protocol = protocol
        self.priority = priority
        self.form = form

    def __repr__(self) -> str:
        return f"<Native {self.protocol} priority={self.priority}>"


class StoredMessage:
    """One message at a node: ``data`` as the publisher sent it; ``seq`` its arrival order;
    ``priority`` (0-9), ``expires`` (wall-clock seconds, or None) and ``durable`` from its
    header and properties; ``delivery_count`` the failed delivery attempts so far."""

    __slots__ = (
        "_rest",
        "data",
        "delivery_count",
        "dropped",
        "durable",
        "excluded",
        "expires",
        "header",
        "held",
        "native",
        "priority",
        "redelivered",
        "selection",
        "seq",
        "size",
    )

    def __init__(
        self,
        data: bytes,
        *,
        seq: int,
        header: Header | None,
        rest: int,
        expires: float | None,
    ) -> None:
        self.data = data
        #: ``len(data)``, kept with it (read several times per message on the hot path).
        self.size = len(data)
        self.seq = seq
        self.header = header
        self._rest = rest
        self.expires = expires
        self.priority = 4 if header is None else min(header.priority, MAX_PRIORITY)
        self.durable = header is not None and header.durable
        self.delivery_count = 0 if header is None else header.delivery_count
        #: The bytes the broker counts it for while a queue holds it (see
        #: ``Broker.held_bytes``), 0 when it is not counted.
        self.held = 0
        #: Given back by a consumer at least once (a 1.0 ``released`` too, which does not
        #: count in the delivery-count, core spec 3.4.4): a 0-9-1 consumer gets it
        #: ``redelivered``, as RabbitMQ marks any message delivered before.
        self.redelivered = False
        #: Taken off its node for good (accepted, expired, dead-lettered, node deleted).
        self.dropped = False
        #: Consumers it was modified ``undeliverable-here`` on (core spec 3.4.5).
        self.excluded: set[Any] | None = None
        #: Its identifiers as selectors see them, and their verdicts, once a consumer with a
        #: selector looked (a :class:`~amqp_sansio.broker.MessageFields`).
        self.selection: Any = None
        #: A message published with another protocol than 1.0: its form in that protocol
        #: (:class:`Native`), so that a consumer of the same protocol gets it without
        #: mapping the 1.0 form back (forgotten when the annotations change).
        self.native: Native | None = None

    def __repr__(self) -> str:
        return f"<StoredMessage seq={self.seq} priority={self.priority} size={len(self.data)}>"

    def stated_priority(self) -> int:
        """Its priority as a 0-9-1 consumer sees it (0-9-1 spec ``basic`` property
        ``priority``; RabbitMQ's priority queues): the one its publisher gave, with either
        protocol (a 1.0 header's ``priority`` field, core spec 3.2.1, when it is there), 0
        when none did."""
        native = self.native
        if native is not None:
            return native.priority or 0
        header = self.header
        if header is None:
            return 0
        if header.priority != 4:  # (4: given, or the 1.0 default for a field left out)
            return header.priority
        fields = header_fields(self.data, 0)
        return 4 if len(fields) > 1 and fields[1] is not None else 0

    def copy(self, seq: int) -> StoredMessage:
        """The same message for another node (a topic's subscriber, the dead-letter queue)."""
        other = StoredMessage(
            self.data, seq=seq, header=self.header, rest=self._rest, expires=self.expires
        )
        other.delivery_count = self.delivery_count
        other.native = self.native
        return other

    def annotate(self, annotations: dict[Any, Any]) -> None:
        """Merge a ``modified`` outcome's message-annotations into the message's (core spec
        3.4.5): that section is re-encoded, the delivery-annotations and the bare message are
        passed through."""
        data = self.data
        pos = self._rest
        kept = b""
        merged: dict[Any, Any] = {}
        while pos < len(data):
            code = _section_code(data, pos)
            if code is None or code >= _PROPERTIES:
                break
            value, end = decode_from(data, pos)  # read when the message arrived: well formed
            if code == _MESSAGE_ANNOTATIONS:
                merged = dict(cast(MessageAnnotations, value).value or {})
            else:
                kept += data[pos:end]
            pos = end
        merged.update(annotations)
        section = Message(message_annotations=merged).encode()
        self.data = data[: self._rest] + kept + section + data[pos:]
        self.size = len(self.data)
        self.selection = None  # its size changed: selectors look again
        self.native = None  # (its annotations changed: every consumer maps them again)

    def encoded(self) -> bytes:
        """The bytes to send: as received, or with the header re-encoded when the
        delivery-count has moved since (core spec 3.2.1); the rest is passed through."""
        header = self.header
        count = 0 if header is None else header.delivery_count
        if self.delivery_count == count:
            return self.data
        if header is None:
            header = Header(delivery_count=self.delivery_count)
        else:
            header = Header(
                durable=header.durable,
                priority=header.priority,
                ttl=header.ttl,
                first_acquirer=False,
                delivery_count=self.delivery_count,
            )
        return encode(header) + self.data[self._rest :]


def header_fields(data: bytes, pos: int) -> list[Any]:
    """The header's fields as sent (a shorter list leaves the rest out; None is null), so
    that a field the sender left out is told from its default."""
    start = pos + 3 if data[pos + 1] == 0x53 else pos + 10  # smallulong or ulong descriptor
    fields, _ = decode_from(data, start)
    return list(fields) if isinstance(fields, list) else []


def parse_message(data: bytes, *, seq: int, wall: float) -> StoredMessage:
    """Read what the broker needs from an encoded message: its header and the
    absolute-expiry-time of its properties (core spec 3.2.1, 3.2.4). The ttl counts from
    arrival (``wall``, seconds since the epoch; broker draft 2.2.5); the earlier of the two
    expiries holds. Raises :class:`~amqp_sansio.DecodeError` for sections that are not well
    formed (broker draft 2.2.1); the body is not read."""
    header: Header | None = None
    rest = 0
    expires: float | None = None
    pos = 0
    while pos < len(data):
        code = _section_code(data, pos)
        if code is None or code > _PROPERTIES:
            break
        value, end = decode_from(data, pos)  # the decoder checks each section's type
        if code == _HEADER and pos == 0:
            header, rest = cast(Header, value), end
        elif code == _PROPERTIES:
            absolute = cast(Properties, value).absolute_expiry_time
            if absolute is not None:
                expires = int(absolute) / 1000.0
            break
        pos = end
    ttl = None if header is None else header.ttl
    return StoredMessage(
        data, seq=seq, header=header, rest=rest, expires=expiry(wall, ttl, expires)
    )


def expiry(wall: float, ttl: int | None, absolute: float | None) -> float | None:
    """When a message that arrives at ``wall`` expires (seconds since the epoch), or None:
    its header's ``ttl`` (ms) counts from arrival (broker draft 2.2.5), its properties'
    ``absolute`` expiry (seconds) holds as it is, and the earlier of the two holds (core
    spec 3.2.1, 3.2.4)."""
    if ttl is None:
        return absolute
    by_ttl = wall + ttl / 1000.0
    return by_ttl if absolute is None else min(absolute, by_ttl)


def _section_code(data: bytes, pos: int) -> int | None:
    """The numeric descriptor of the section at ``pos`` (a smallulong or ulong descriptor),
    or None if it has another form (the caller stops reading there)."""
    if data[pos] != 0x00 or pos + 2 >= len(data):
        raise DecodeError(f"no described section at offset {pos}")
    kind = data[pos + 1]
    if kind == 0x53:
        return data[pos + 2]
    if kind == 0x80 and pos + 10 <= len(data):
        return int.from_bytes(data[pos + 2 : pos + 10], "big")
    return None
