"""The mapping between an AMQP 0-10 message (the ``delivery-properties`` and
``message-properties`` of a ``message.transfer``'s header, and its body; 0-10 spec, class
``message``) and an AMQP 1.0 message (core spec 3.2), as Qpid's broker maps them for its
AMQP 1.0 support (qpidd's ``Translation``): the broker keeps every message in its 1.0 form,
so that one queue serves every protocol. A 0-10 transfer is mapped here on arrival
(:func:`to_amqp10`), a delivery to a 0-10 subscriber mapped back (:func:`from_amqp10`).

0-10 to 1.0 (what is lost is said; the table is in docs/amqp010.rst, "Mapping to 1.0"):

=================================  ==========================================================
0-10                               1.0
=================================  ==========================================================
delivery-mode (2 persistent)       header durable
priority                           header priority
ttl (ms)                           header ttl
expiration (seconds, absolute)     properties absolute-expiry-time (ms)
timestamp (seconds)                properties creation-time (ms)
exchange, routing-key              message annotations ``x-exchange``, ``x-routing-key``
                                   (read by 0-9-1 consumers)
redelivered, discard-unroutable,   lost (the broker sets redelivered itself on delivery;
immediate, resume-id, resume-ttl   the others steer the publish only)
message-id (uuid)                  properties message-id (uuid)
correlation-id (octets)            properties correlation-id (a string when UTF-8, else
                                   binary)
reply-to (exchange, routing-key)   properties reply-to: the routing key on the default
                                   exchange, ``exchange/routing-key`` otherwise
content-type, content-encoding     properties content-type, content-encoding
user-id, app-id (octets)           properties user-id; app-id the application property
                                   ``x-amqp-0-10.app-id``
application-headers                application-properties (simple values; a map or list
                                   goes to the message annotation ``x-amqp-0-10-headers``);
                                   ``qpid.subject`` becomes properties subject
content-length                     lost (it is the body's length)
body                               one data section
=================================  ==========================================================

1.0 to 0-10 is the reverse, and: a body of data sections is joined; an amqp-value that is
a string is its UTF-8 octets (content-type ``text/plain`` if none), octets as they are, a
map or a list the 0-10 ``map``/``list`` encoding with Qpid's content types ``amqp/map`` and
``amqp/list``, anything else (and amqp-sequence sections) the encoded 1.0 sections with
content-type ``application/x-amqp-1.0``; a message-id that is not a uuid goes to the
application header ``x-amqp-1.0-message-id`` (0-10's is a uuid); a subject to
``qpid.subject`` (qpid.messaging's subject); priority 4 (1.0's default) is left out, and
an empty routing key; ``to``, group-id and the other properties have no 0-10 field.
"""

from __future__ import annotations

import datetime
import functools
import uuid
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, cast

import attrs

from ...codec import amqp010 as c010
from ...codec import amqp10 as t10
from ...codec.amqp10 import encode
from ...codec.kept import Kept
from ...definitions import amqp010 as spec
from ...definitions.amqp10.message import Message, data_head
from ...definitions.amqp10.messaging import AmqpValue, Data, Header, Properties
from .._store import Native, StoredMessage, expiry

__all__ = [
    "APP_ID_PROPERTY",
    "COMPLEX_HEADERS",
    "EXCHANGE_ANNOTATION",
    "MESSAGE_ID_HEADER",
    "NATIVE",
    "ROUTING_KEY_ANNOTATION",
    "SUBJECT_HEADER",
    "Native010",
    "arrived",
    "from_amqp10",
    "to_amqp10",
    "transfer_of",
]

#: The message annotations of the exchange and routing key a message was published with
#: (the ones the 0-9-1 side writes and reads: one form for every protocol).
EXCHANGE_ANNOTATION = t10.Symbol("x-exchange")
ROUTING_KEY_ANNOTATION = t10.Symbol("x-routing-key")
#: The message annotation of application headers whose values are maps or lists.
COMPLEX_HEADERS = t10.Symbol("x-amqp-0-10-headers")
#: The application property of 0-10's app-id.
APP_ID_PROPERTY = "x-amqp-0-10.app-id"
#: The application header qpid.messaging reads and writes a message's subject in.
SUBJECT_HEADER = "qpid.subject"
#: The application header of a 1.0 message-id that is not a uuid.
MESSAGE_ID_HEADER = "x-amqp-1.0-message-id"
#: Content types of bodies mapped from 1.0 values (Qpid's for maps and lists).
_MAP_TYPE, _LIST_TYPE, _TEXT_TYPE = "amqp/map", "amqp/list", "text/plain"
_AMQP10_TYPE = "application/x-amqp-1.0"
_PERSISTENT = int(spec.MessageDeliveryMode.PERSISTENT)
#: 1.0's largest ttl (a uint, ms) and timestamp (ms, a signed long): 0-10's (uint64) beyond
#: them are brought down to them.
_MAX_TTL, _MAX_TIME = 0xFFFFFFFF, 0x7FFFFFFFFFFFFFFF


#: The protocol of a stored message's native form (:class:`Native010`) published with 0-10.
NATIVE = "0-10"

#: The 1.0 form of a 0-10 message but for its body (:func:`_prefix`).
_Prefix = tuple[bytes, bytes, Header | None, float | None]


class Native010:
    """A message published with 0-10 as 0-10 subscribers get it, passed through as Qpid's
    broker passes it: its header segment as it came (``octets``), the delivery-properties
    in it (``delivery``) replaced by theirs with the broker's exchange, routing key and
    redelivered flag (0-10 spec, ``message.delivery-properties``: the broker sets those),
    every other struct (the message-properties) sent as its octets came (nothing of the
    mapping to 1.0 is lost); the body is the 1.0 form's data section, the message's last
    ``size`` octets. The segment is made at the first delivery and kept for the next ones
    that are not redeliveries."""

    __slots__ = ("_sent", "delivery", "exchange", "octets", "routing_key", "size")

    def __init__(
        self,
        octets: bytes,
        delivery: spec.DeliveryProperties | None,
        exchange: str,
        routing_key: str,
        size: int,
    ) -> None:
        self.octets = octets
        self.delivery = delivery
        self.exchange = exchange
        self.routing_key = routing_key
        self.size = size
        self._sent: bytes | None = None

    def header(self, redelivered: bool) -> bytes:
        """The encoded header segment of a transfer of it (0-10 spec 4.4)."""
        sent = self._sent
        if sent is not None and not redelivered:
            return sent
        octets = self.octets
        key = (octets, self.exchange, self.routing_key, redelivered)
        sent = _passed.made(key, len(octets), self._make)
        if not redelivered:
            self._sent = sent
        return sent

    def _make(self, key: tuple[bytes, str, str, bool]) -> bytes:
        octets, exchange, routing_key, redelivered = key
        given, routing = self.delivery, routing_key or None
        delivery = (
            spec.DeliveryProperties(redelivered=redelivered, exchange=exchange, routing_key=routing)
            if given is None
            else attrs.evolve(
                given, redelivered=redelivered, exchange=exchange, routing_key=routing
            )
        )
        rest = [part for code, part in spec.split_header(octets) if code != _DELIVERY_CODE]
        return b"".join((spec.encode_header((delivery,)), *rest))


#: The code of a delivery-properties struct in a header segment (0-10 spec 4.6).
_DELIVERY_CODE = spec.DeliveryProperties.CLASS_CODE << 8 | spec.DeliveryProperties.CODE
#: The header segments passed through to subscribers, by (the segment as published,
#: exchange, routing key, redelivered), and the 1.0 form but for the body
#: (:func:`_prefix`), by (header segment, exchange, key): made once per value and kept
#: (a publisher's messages mostly share their header), for segments of at most 512 octets
#: (:class:`~amqp_sansio.codec.kept.Kept`).
_passed: Kept[tuple[bytes, str, str, bool], bytes] = Kept()
_prefixes: Kept[tuple[bytes, str, str], _Prefix] = Kept()


def _simple(value: Any) -> Any:
    """A 0-10 map value as a 1.0 value (a :class:`~amqp_sansio.codec.amqp010.Typed` is its
    value: its exact width is lost)."""
    if isinstance(value, c010.Typed):
        value = value.value
    if isinstance(value, c010.Array):
        return [_simple(v) for v in value.items]
    if isinstance(value, list | tuple):
        return [_simple(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _simple(v) for k, v in value.items()}
    if isinstance(value, Decimal | c010.Struct32):
        return str(value)
    return value


def _plain(value: Any) -> Any:
    """A 1.0 value as a 0-10 map value (its 1.0 width is lost: an int is an int64)."""
    if value is None or isinstance(value, bool | uuid.UUID):
        return value
    if isinstance(value, t10.Timestamp):
        return datetime.datetime.fromtimestamp(int(value) / 1000, datetime.timezone.utc)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


def to_amqp10(
    header: tuple[spec.Struct, ...], body: bytes, *, exchange: str, routing_key: str
) -> bytes:
    """A 0-10 message (its transfer's ``header`` structs and ``body``), published to
    ``exchange`` with ``routing_key``, as an encoded 1.0 message (see the module). Raises
    :class:`ValueError` (:class:`~amqp_sansio.EncodeError` among them) for what 1.0 cannot
    hold: a content-type or -encoding that is not ASCII (a symbol), a header value past
    1.0's long."""
    delivery, props = _structs(header)
    start, middle, _, _ = _mapped(delivery, props, exchange, routing_key)
    return b"".join((start, middle, data_head(len(body)), body))


def arrived(
    header: tuple[spec.Struct, ...],
    body: bytes,
    *,
    exchange: str,
    routing_key: str,
    wall: float,
    octets: bytes | None = None,
) -> StoredMessage:
    """A 0-10 message arrived at ``wall`` (seconds since the epoch), as the broker stores
    it: its 1.0 form (:func:`to_amqp10`, read as
    :func:`~amqp_sansio.broker.parse_message` would read it) with its native 0-10 form
    (:class:`Native010`), which 0-10 subscribers get. ``octets`` is the header segment
    ``header`` was decoded from (``CommandReceived.header_octets``; None: encoded here).
    Raises as :func:`to_amqp10`."""
    if octets is None:
        octets = spec.encode_header(header) if header else b""
    start, middle, head, absolute = _prefix(header, octets, exchange, routing_key)
    message = StoredMessage(
        b"".join((start, middle, data_head(len(body)), body)),
        seq=0,
        header=head,
        rest=len(start),
        expires=expiry(wall, None if head is None else head.ttl, absolute),
    )
    delivery, _ = _structs(header)
    priority = None if delivery is None else delivery.priority
    form = Native010(octets, delivery, exchange, routing_key, len(body))
    message.native = Native(NATIVE, priority, form)
    return message


def _prefix(
    header: tuple[spec.Struct, ...], octets: bytes, exchange: str, routing_key: str
) -> _Prefix:
    """The 1.0 form of a 0-10 message but for its body: its header section encoded (empty:
    none), the sections after it encoded, the header, and the absolute expiry in seconds
    (None: none); made once per header segment (``octets``, what ``header`` was decoded
    from), exchange and routing key (see :data:`_prefixes`)."""

    def make(_: object) -> _Prefix:
        delivery, props = _structs(header)
        return _mapped(delivery, props, exchange, routing_key)

    return _prefixes.made((octets, exchange, routing_key), len(octets), make)


def _structs(
    header: tuple[spec.Struct, ...],
) -> tuple[spec.DeliveryProperties | None, spec.MessageProperties | None]:
    """The delivery and message properties of a transfer's header (None: not there)."""
    delivery = props = None
    for struct in header:  # (the first of each kind)
        if delivery is None and isinstance(struct, spec.DeliveryProperties):
            delivery = struct
        elif props is None and isinstance(struct, spec.MessageProperties):
            props = struct
    return delivery, props


def _mapped(
    delivery: spec.DeliveryProperties | None,
    props: spec.MessageProperties | None,
    exchange: str,
    routing_key: str,
) -> _Prefix:
    """:func:`_prefix` of a header's delivery and message properties (see the module)."""
    head = None
    creation = expiry_ms = None
    if delivery is not None:
        durable = delivery.delivery_mode == _PERSISTENT
        priority = 4 if delivery.priority is None else delivery.priority
        ttl = None if delivery.ttl is None else min(delivery.ttl, _MAX_TTL)
        if durable or delivery.priority is not None or ttl is not None:
            head = Header(durable=durable, priority=priority, ttl=ttl)
        if delivery.timestamp is not None:
            creation = min(delivery.timestamp * 1000, _MAX_TIME)
        if delivery.expiration is not None:
            expiry_ms = min(delivery.expiration * 1000, _MAX_TIME)
    application: dict[str, Any] = {}
    complex_: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    if props is not None:
        message_id: Any = props.message_id
        for key, value in (props.application_headers or {}).items():
            value = _simple(value)
            if key == SUBJECT_HEADER and isinstance(value, str):
                fields["subject"] = value
            elif key == MESSAGE_ID_HEADER and message_id is None and isinstance(value, str):
                message_id = value  # (a 1.0 id that is not a uuid, back in its place)
            elif isinstance(value, list | dict):
                complex_[key] = value
            else:
                application[key] = value
        if props.app_id is not None:
            application[APP_ID_PROPERTY] = bytes(props.app_id).decode("utf-8", "replace")
        correlation: Any = props.correlation_id
        if correlation is not None:
            try:
                correlation = bytes(correlation).decode()
            except UnicodeDecodeError:
                correlation = bytes(correlation)
        reply_to = None
        if props.reply_to is not None:
            key = props.reply_to.routing_key or ""
            where = props.reply_to.exchange or ""
            reply_to = f"{where}/{key}" if where else key
        fields.update(
            message_id=message_id,
            correlation_id=correlation,
            reply_to=reply_to,
            content_type=props.content_type,
            content_encoding=props.content_encoding,
            user_id=props.user_id,
        )
    if complex_:
        annotations = _annotations(exchange, routing_key, complex_)
    else:
        annotations = _plain_annotations(exchange, routing_key)
    rest = Message(
        properties=Properties(creation_time=creation, absolute_expiry_time=expiry_ms, **fields),
        application_properties=application or None,
    )
    return (
        b"" if head is None else encode(head),
        annotations + rest.encode(),
        head,
        None if expiry_ms is None else expiry_ms / 1000.0,
    )


def _annotations(exchange: str, routing_key: str, headers: dict[str, Any] | None) -> bytes:
    """The encoded message-annotations section of a 0-10 message: its exchange and routing
    key, and its application ``headers`` whose values are maps or lists."""
    annotations: dict[Any, Any] = {
        EXCHANGE_ANNOTATION: exchange,
        ROUTING_KEY_ANNOTATION: routing_key,
    }
    if headers:
        annotations[COMPLEX_HEADERS] = headers
    return Message(message_annotations=annotations).encode()


@functools.lru_cache(maxsize=256)
def _plain_annotations(exchange: str, routing_key: str) -> bytes:
    """:func:`_annotations` with no headers, encoded once per value (a publisher mostly
    sends to a few)."""
    return _annotations(exchange, routing_key, None)


def _body(message: Message) -> tuple[bytes, str | None]:
    """The 0-10 body of a 1.0 message's body, and the content-type it implies (None: the
    message's own)."""
    body = message.body
    if body is None:
        return b"", None
    if isinstance(body, Data):
        return bytes(body.value), None
    if isinstance(body, tuple) and all(isinstance(s, Data) for s in body):
        return b"".join(bytes(cast(Data, s).value) for s in body), None
    if isinstance(body, AmqpValue):
        value = body.value
        if isinstance(value, str):
            return value.encode(), _TEXT_TYPE
        if isinstance(value, bytes):
            return value, None
        if isinstance(value, dict):
            return c010.encode("map", _plain(value)), _MAP_TYPE
        if isinstance(value, list):
            return c010.encode("list", _plain(value)), _LIST_TYPE
    encoded = Message(body=body).encode()
    return encoded, _AMQP10_TYPE


def from_amqp10(
    data: bytes, *, redelivered: bool, routing_key: str | None = None
) -> tuple[tuple[spec.Struct, ...], bytes]:
    """An encoded 1.0 message as the header structs and body of a 0-10 ``message.transfer``
    to a subscriber (``redelivered``: given out before; ``routing_key``: the queue's name,
    when the message carries none)."""
    message = Message.decode(data)
    head = message.header
    props = message.properties or Properties()
    annotations = message.message_annotations or {}
    exchange = annotations.get(EXCHANGE_ANNOTATION)
    key = annotations.get(ROUTING_KEY_ANNOTATION)
    if not isinstance(key, str):
        key = routing_key
    key = key or None  # (none sent: none given)
    delivery = spec.DeliveryProperties(
        redelivered=redelivered,
        # (4, 1.0's default, is left out: a header made for a delivery-count has it)
        priority=None if head is None or head.priority == 4 else min(head.priority, 9),
        delivery_mode=_PERSISTENT if head is not None and head.durable else None,
        ttl=None if head is None else head.ttl,
        timestamp=None if props.creation_time is None else int(props.creation_time) // 1000,
        expiration=(
            None if props.absolute_expiry_time is None else int(props.absolute_expiry_time) // 1000
        ),
        exchange=str(exchange) if isinstance(exchange, str) else None,
        routing_key=key,
    )
    headers: dict[str, Any] = {}
    for name, value in (message.application_properties or {}).items():
        if name == APP_ID_PROPERTY:
            continue
        headers[str(name)] = _plain(value)
    extra = annotations.get(COMPLEX_HEADERS)
    if isinstance(extra, dict):
        headers.update({str(k): _plain(v) for k, v in extra.items()})
    if props.subject is not None:
        headers[SUBJECT_HEADER] = str(props.subject)
    message_id = props.message_id
    if message_id is not None and not isinstance(message_id, uuid.UUID):
        headers[MESSAGE_ID_HEADER] = _plain(message_id)
        message_id = None
    correlation = props.correlation_id
    if isinstance(correlation, str):
        correlation = correlation.encode()
    elif isinstance(correlation, uuid.UUID):
        correlation = correlation.bytes
    elif isinstance(correlation, int):
        correlation = str(int(correlation)).encode()
    reply_to = None
    if props.reply_to is not None:
        where, _, rest = str(props.reply_to).rpartition("/")
        reply_to = spec.ReplyTo(exchange=where or None, routing_key=rest)
    app_id = (message.application_properties or {}).get(APP_ID_PROPERTY)
    body, implied = _body(message)
    content_type = props.content_type if props.content_type is not None else implied
    if implied is not None and implied != _TEXT_TYPE:
        content_type = implied
    fields: dict[str, Any] = {
        "content_length": len(body),
        "message_id": message_id,
        "correlation_id": correlation,
        "reply_to": reply_to,
        "content_type": None if content_type is None else str(content_type),
        "content_encoding": (
            None if props.content_encoding is None else str(props.content_encoding)
        ),
        "user_id": props.user_id,
        "app_id": app_id.encode() if isinstance(app_id, str) else None,
        "application_headers": headers or None,
    }
    return (delivery, spec.MessageProperties(**fields)), body


def transfer_of(
    message: StoredMessage, *, redelivered: bool, routing_key: str | None = None
) -> tuple[tuple[spec.Struct, ...] | bytes, bytes]:
    """A stored message as a 0-10 subscriber gets it, the header (its structs, or the
    encoded segment) and the body of a ``message.transfer``: passed through, for a message
    published with 0-10 (:class:`Native010`, its annotations unchanged since), else mapped
    from its 1.0 form (:func:`from_amqp10`, whose arguments these are)."""
    native = message.native
    if native is not None and native.protocol == NATIVE:
        form: Native010 = native.form
        data = message.data
        return form.header(redelivered), data[len(data) - form.size :] if form.size else b""
    return from_amqp10(message.encoded(), redelivered=redelivered, routing_key=routing_key)


def headers_of(header: tuple[spec.Struct, ...]) -> Mapping[str, Any] | None:
    """The application headers of a transfer's header (what a headers exchange matches)."""
    _, props = _structs(header)
    if props is None or props.application_headers is None:
        return None
    return {k: _simple(v) for k, v in props.application_headers.items()}
