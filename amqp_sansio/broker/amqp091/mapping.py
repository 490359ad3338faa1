"""The mapping between an AMQP 0-9-1 message (``basic`` properties and a body) and an AMQP
1.0 message (core spec 3.2), as RabbitMQ maps them for its AMQP 1.0 support (its message
containers, ``mc_amqpl``: the same mapping its AMQP 1.0 plugin documents since 3.13). The
broker keeps every message in its 1.0 form, so that one queue serves both protocols: a
0-9-1 publish is mapped here on arrival, a delivery to a 0-9-1 consumer mapped back.

0-9-1 to 1.0:

===========================  ===============================================================
0-9-1                        1.0
===========================  ===============================================================
delivery-mode                header durable (true if and only if 2)
priority                     header priority
expiration (ms, a string)    header ttl (an integer: anything else is refused, 406)
message-id, correlation-id   properties message-id, correlation-id (``urn:uuid:...``: a uuid)
user-id                      properties user-id (UTF-8 octets)
reply-to                     properties reply-to
content-type, -encoding      properties content-type, content-encoding (symbols)
timestamp (seconds)          properties creation-time (milliseconds)
app-id                       properties group-id
type                         message annotation ``x-basic-type``
headers, names ``x-...``     message annotations of those names
other headers                application-properties (simple values); RabbitMQ drops a
                             table or array there (1.0 allows none): this broker keeps them
                             in the message annotation ``x-amqp-0-9-1-headers`` (a map)
exchange, routing key        message annotations ``x-exchange``, ``x-routing-key``
body                         one data section
===========================  ===============================================================

1.0 to 0-9-1 is the reverse, and: a body other than data sections (an amqp-value, amqp-
sequence sections) is passed as its encoded sections with type ``amqp-1.0``; data sections
are joined; a message-id or correlation-id that is a ulong becomes its decimal string, a
uuid ``urn:uuid:...``, binary or one longer than a shortstr goes to the header
``x-message-id`` / ``x-correlation-id``; a user-id that is not a UTF-8 shortstr is dropped;
``to``, ``subject``, absolute-expiry-time and the other properties have no 0-9-1 field.
Header fields the 1.0 message leaves out stay out (no delivery-mode, no priority), so a
0-9-1 message consumed with 0-9-1 keeps its properties as published.

Field values map by type: strings, booleans, integers of each width and sign, floats and
doubles, byte strings (``x`` and binary), void (null), arrays (lists) and tables (maps, with
symbol keys in annotations); a 0-9-1 timestamp (seconds) is a 1.0 timestamp (milliseconds);
a decimal, which 1.0 application-properties cannot hold as such, becomes its string.
"""

from __future__ import annotations

import contextlib
import datetime
import uuid
from decimal import Decimal
from typing import Any, cast

from ...codec import amqp091 as c091
from ...codec import amqp10 as t10
from ...codec.amqp10 import decode_from, encode
from ...codec.kept import Kept
from ...definitions.amqp091.spec import BasicProperties
from ...definitions.amqp10.message import Message, data_head
from ...definitions.amqp10.messaging import Data, Header, Properties
from ...errors import DecodeError
from .._store import Native, StoredMessage, header_fields

__all__ = [
    "AMQP10_TYPE",
    "COMPLEX_HEADERS",
    "CONTENT_ENCODING",
    "CONTENT_TYPE",
    "EXCHANGE_ANNOTATION",
    "NATIVE",
    "ROUTING_KEY_ANNOTATION",
    "TYPE_ANNOTATION",
    "basic_of",
    "from_amqp10",
    "parse_expiration",
    "published",
    "to_amqp10",
]

#: The protocol of a stored message's native form (:class:`~amqp_sansio.broker._store.Native`)
#: published with 0-9-1: its ``basic`` properties, exchange, routing key and body length
#: as published, which a 0-9-1 consumer gets as they are (:func:`basic_of`).
NATIVE = "0-9-1"
#: The ``type`` of a 0-9-1 message whose body is a 1.0 body other than data sections.
AMQP10_TYPE = "amqp-1.0"
#: The message annotations that carry what a 0-9-1 publish had beside its properties.
EXCHANGE_ANNOTATION = t10.Symbol("x-exchange")
ROUTING_KEY_ANNOTATION = t10.Symbol("x-routing-key")
#: The message annotation of the 0-9-1 ``type``.
TYPE_ANNOTATION = t10.Symbol("x-basic-type")
#: The message annotation of headers whose names do not start with ``x-`` and whose values
#: are tables or arrays (1.0 application-properties hold simple values only).
COMPLEX_HEADERS = t10.Symbol("x-amqp-0-9-1-headers")
#: The message annotations of a content-type or content-encoding that is not ASCII (a 1.0
#: symbol cannot hold it).
CONTENT_TYPE = t10.Symbol("x-basic-content-type")
CONTENT_ENCODING = t10.Symbol("x-basic-content-encoding")
_MESSAGE_ID, _CORRELATION_ID = "x-message-id", "x-correlation-id"
#: Annotations the broker sets that are not 0-9-1 headers.
_NOT_HEADERS = frozenset(
    {EXCHANGE_ANNOTATION, ROUTING_KEY_ANNOTATION, TYPE_ANNOTATION, CONTENT_TYPE, CONTENT_ENCODING}
)
_URN = "urn:uuid:"
_HEADER, _MESSAGE_ANNOTATIONS, _PROPERTIES, _APP_PROPERTIES = 0x70, 0x72, 0x73, 0x74
_BODY = (0x75, 0x76, 0x77)
_HEADER_DESCRIPTOR = b"\x00\x53\x70"
_MAX_LONG = 0x7FFFFFFFFFFFFFFF


def parse_expiration(expiration: str) -> int:
    """A 0-9-1 ``expiration`` in milliseconds: RabbitMQ takes a non-negative integer in
    decimal (ValueError otherwise: the publish is refused with 406 PRECONDITION_FAILED)."""
    if not expiration.isascii() or not expiration.isdigit():
        raise ValueError(f"invalid expiration {expiration!r}: not a non-negative integer")
    value = int(expiration)
    if value > 0xFFFFFFFF:
        raise ValueError(f"invalid expiration {expiration!r}: larger than 2^32-1")
    return value


# -- values ------------------------------------------------------------------------------------


def _int_to_10(value: int) -> Any:
    """A plain int as the 0-9-1 codec sends it: the smallest signed tag that holds it."""
    if -0x80 <= value < 0x80:
        return t10.Byte(value)
    if -0x8000 <= value < 0x8000:
        return t10.Short(value)
    if -0x80000000 <= value < 0x80000000:
        return t10.Int(value)
    return value


#: Field values to 1.0 values, by exact type.
_TO_10: dict[type, Any] = {
    int: _int_to_10,
    c091.Int16: t10.Short,
    c091.Int32: t10.Int,
    c091.Int64: int,
    c091.UInt8: t10.UByte,
    c091.UInt16: t10.UShort,
    c091.UInt32: t10.UInt,
    c091.Float32: t10.Float,
    c091.Timestamp: lambda v: t10.Timestamp(int(v) * 1000),
    datetime.datetime: lambda v: t10.Timestamp(c091.Timestamp.from_datetime(v) * 1000),
    bytes: bytes,
    bytearray: bytes,
    Decimal: str,
}
_AS_IS = (type(None), bool, str, float)


def _value_to_10(value: Any, *, keys: Any = str) -> Any:
    kind = type(value)
    if kind in _AS_IS:
        return value
    convert = _TO_10.get(kind)
    if convert is not None:
        return convert(value)
    if isinstance(value, list | tuple):
        return [_value_to_10(v, keys=keys) for v in value]
    if isinstance(value, dict):
        return {keys(k): _value_to_10(v, keys=keys) for k, v in value.items()}
    if isinstance(value, datetime.datetime):  # a subclass of one
        return _TO_10[datetime.datetime](value)
    base: Any
    for base in (bool, int, str, float, bytes):  # subclasses (an IntEnum, a str subclass)
        if isinstance(value, base):
            return _value_to_10(base(value))
    return str(value)


def _key(name: str) -> Any:
    """A table's key in 1.0: a symbol as RabbitMQ writes it, a string if it is not ASCII (a
    symbol cannot hold it)."""
    return t10.Symbol(name) if name.isascii() else name


def _simple(value: Any) -> bool:
    return not isinstance(value, list | tuple | dict)


class _Unmappable(Exception):
    """A 1.0 value no field type holds (a ulong past 2^63-1, a described value)."""


def _long_to_091(value: int) -> Any:
    if value > _MAX_LONG or value < -_MAX_LONG - 1:
        raise _Unmappable
    return c091.Int64(value)


#: 1.0 values to field values, by exact type.
_TO_091: dict[type, Any] = {
    t10.Symbol: str,
    t10.Char: str,
    t10.Byte: int,
    t10.Short: c091.Int16,
    t10.Int: c091.Int32,
    t10.UByte: c091.UInt8,
    t10.UShort: c091.UInt16,
    t10.UInt: c091.UInt32,
    t10.ULong: _long_to_091,
    int: _long_to_091,
    t10.Float: c091.Float32,
    t10.Timestamp: lambda v: c091.Timestamp(max(0, int(v) // 1000)),
    bytes: bytearray,
    bytearray: bytearray,
    memoryview: bytearray,
    uuid.UUID: lambda v: _URN + str(v),
    t10.Array: lambda v: [_value_to_091(x) for x in v],
    list: lambda v: [_value_to_091(x) for x in v],
    tuple: lambda v: [_value_to_091(x) for x in v],
    dict: lambda v: _table_to_091(v.items()),
}


def _value_to_091(value: Any) -> Any:
    kind = type(value)
    if kind in _AS_IS:
        return value
    convert = _TO_091.get(kind)
    if convert is None:
        raise _Unmappable
    return convert(value)


def _table_to_091(items: Any, into: dict[str, Any] | None = None) -> dict[str, Any]:
    """Map entries to a field table: keys that are not shortstrs, and values no field type
    holds, are left out."""
    out: dict[str, Any] = {} if into is None else into
    for key, value in items:
        if isinstance(key, str) and len(key.encode("utf-8", "surrogatepass")) <= 255:
            with contextlib.suppress(_Unmappable):
                out[str(key)] = _value_to_091(value)
    return out


# -- 0-9-1 to 1.0 ------------------------------------------------------------------------------


def _message_id(value: str | None) -> Any:
    if value is not None and value.startswith(_URN):
        try:
            return uuid.UUID(value[len(_URN) :])
        except ValueError:
            pass
    return value


def to_amqp10(
    properties: BasicProperties | None,
    body: bytes,
    *,
    exchange: str | None = None,
    routing_key: str | None = None,
) -> bytes:
    """The encoded 1.0 message of a 0-9-1 publish (see the module's table); ``exchange``
    and ``routing_key`` go in message annotations when given. Raises ValueError for an
    ``expiration`` that is not an integer (RabbitMQ refuses such a publish)."""
    return encode_091(properties, body, exchange=exchange, routing_key=routing_key)[0]


#: The encodings of the sections before the body :func:`encode_091` keeps (by exchange,
#: routing key and properties without headers; at most 256, :class:`~amqp_sansio.codec.kept.Kept`).
_prefixes: Kept[tuple[Any, ...], tuple[bytes, Header | None, int, int | None]] = Kept()


def published(
    properties: BasicProperties, body: bytes, exchange: str, routing_key: str, wall: float
) -> StoredMessage:
    """A 0-9-1 message published at ``wall`` (seconds since the epoch) as the broker stores
    it: its 1.0 form (:func:`encode_091`, read as :func:`~amqp_sansio.broker.parse_message`
    would read it, the ttl from arrival) with its native 0-9-1 form (:data:`NATIVE`), which
    0-9-1 consumers get (:func:`basic_of`). Raises as :func:`encode_091`."""
    data, header, rest, ttl = encode_091(
        properties, body, exchange=exchange, routing_key=routing_key
    )
    expires = None if ttl is None else wall + ttl / 1000.0
    message = StoredMessage(data, seq=0, header=header, rest=rest, expires=expires)
    form = (properties, exchange, routing_key, len(body))
    message.native = Native(NATIVE, properties.priority, form)
    return message


def encode_091(
    properties: BasicProperties | None,
    body: bytes,
    *,
    exchange: str | None = None,
    routing_key: str | None = None,
) -> tuple[bytes, Header | None, int, int | None]:
    """:func:`to_amqp10`, with what the broker reads of the message (as
    :func:`~amqp_sansio.broker.parse_message` would read it back): the header as decoded
    (None without one), where the sections after it start, and the ttl (ms).

    The sections before the body depend on the properties, the exchange and the routing key
    only: for properties without headers (whose values need not be hashable) they are
    encoded once and kept (a publisher sends many messages alike), the body's data section
    (core spec 3.2.6) put after them."""
    p = properties or BasicProperties()
    if p.headers is not None:
        return _encode_091(p, body, exchange, routing_key)
    key = (
        exchange,
        routing_key,
        p.content_type,
        p.content_encoding,
        p.delivery_mode,
        p.priority,
        p.correlation_id,
        p.reply_to,
        p.expiration,
        p.message_id,
        p.timestamp,
        p.type,
        p.user_id,
        p.app_id,
    )
    known = _prefixes.get(key)
    if known is not None:
        prefix, decoded, rest, ttl = known
        return b"".join((prefix, data_head(len(body)), body)), decoded, rest, ttl
    data, decoded, rest, ttl = _encode_091(p, body, exchange, routing_key)
    # (one data section, of the body, ends what _encode_091 makes: what is before it is the
    # same for every body with these properties)
    section = len(data_head(len(body))) + len(body)
    _prefixes.keep(key, 0, (data[: len(data) - section], decoded, rest, ttl))
    return data, decoded, rest, ttl


def _encode_091(
    p: BasicProperties, body: bytes, exchange: str | None, routing_key: str | None
) -> tuple[bytes, Header | None, int, int | None]:
    """:func:`encode_091`, every section encoded."""
    ttl = None if p.expiration is None else parse_expiration(p.expiration)
    # The header by hand: a field the publisher left out stays out (null), one it gave
    # is sent even when it equals the 1.0 default (durable false, priority 4).
    fields: list[Any] = [
        None if p.delivery_mode is None else p.delivery_mode == 2,
        None if p.priority is None else t10.UByte(p.priority),
        None if ttl is None else t10.UInt(ttl),
    ]
    while fields and fields[-1] is None:
        fields.pop()
    header = _HEADER_DESCRIPTOR + encode(fields) if fields else b""
    decoded = (
        Header(
            durable=p.delivery_mode == 2,
            priority=4 if p.priority is None else p.priority,
            ttl=ttl,
        )
        if fields
        else None
    )
    annotations: dict[Any, Any] = {}
    if exchange is not None:
        annotations[EXCHANGE_ANNOTATION] = exchange
    if routing_key is not None:
        annotations[ROUTING_KEY_ANNOTATION] = routing_key
    if p.type is not None:
        annotations[TYPE_ANNOTATION] = p.type
    application: dict[str, Any] = {}
    complex_headers: dict[Any, Any] = {}
    for name, value in (p.headers or {}).items():
        if name.startswith("x-") and name.isascii():
            annotations[t10.Symbol(name)] = _value_to_10(value, keys=_key)
        elif _simple(value) and not name.startswith("x-"):
            application[name] = _value_to_10(value)
        else:
            complex_headers[_key(name)] = _value_to_10(value, keys=_key)
    if complex_headers:
        annotations[COMPLEX_HEADERS] = complex_headers
    props: Properties | None = None
    timestamp = p.timestamp
    if isinstance(timestamp, datetime.datetime):
        timestamp = c091.Timestamp.from_datetime(timestamp)
    values = {
        "message_id": _message_id(p.message_id),
        "user_id": None if p.user_id is None else p.user_id.encode(),
        "reply_to": p.reply_to,
        "correlation_id": _message_id(p.correlation_id),
        "content_type": _symbol(p.content_type, CONTENT_TYPE, annotations),
        "content_encoding": _symbol(p.content_encoding, CONTENT_ENCODING, annotations),
        "creation_time": None if timestamp is None else t10.Timestamp(int(timestamp) * 1000),
        "group_id": p.app_id,
    }
    if any(v is not None for v in values.values()):
        props = Properties(**values)
    message = Message(
        message_annotations=annotations or None,
        properties=props,
        application_properties=application or None,
        body=Data(bytes(body)),
    )
    return header + message.encode(), decoded, len(header), ttl


def _symbol(value: str | None, annotation: t10.Symbol, annotations: dict[Any, Any]) -> Any:
    """A content-type or -encoding as the 1.0 symbol, or (not ASCII: no symbol holds it)
    in the message annotation ``annotation``."""
    if value is None or value.isascii():
        return None if value is None else t10.Symbol(value)
    annotations[annotation] = value
    return None


# -- 1.0 to 0-9-1 ------------------------------------------------------------------------------


def _sections(data: bytes) -> tuple[list[Any], dict[Any, Any], Any, dict[Any, Any], int]:
    """The header's fields as sent, message annotations, properties, application-properties,
    and where the body starts."""
    header: list[Any] = []
    annotations: dict[Any, Any] = {}
    props: Any = None
    application: dict[Any, Any] = {}
    pos = 0
    while pos < len(data):
        if data[pos] != 0 or pos + 2 >= len(data):
            raise DecodeError(f"no described section at offset {pos}")
        small = data[pos + 1] == 0x53
        code = data[pos + 2] if small else int.from_bytes(data[pos + 2 : pos + 10], "big")
        if code in _BODY:
            return header, annotations, props, application, pos
        value, end = decode_from(data, pos)
        if code == _HEADER:
            header = header_fields(data, pos)
        elif code == _MESSAGE_ANNOTATIONS:
            annotations = dict(getattr(value, "value", None) or {})
        elif code == _PROPERTIES:
            props = value
        elif code == _APP_PROPERTIES:
            application = dict(getattr(value, "value", None) or {})
        pos = end
    return header, annotations, props, application, pos


def _body(data: bytes, start: int) -> tuple[bytes, str | None]:
    """The 0-9-1 body of a 1.0 message's body sections, and its type if it is not data."""
    if start >= len(data):
        return b"", None
    sections = Message.decode(data[start:]).body
    if isinstance(sections, Data):
        return sections.value, None
    if isinstance(sections, tuple) and all(isinstance(s, Data) for s in sections):
        return b"".join(cast(Data, s).value for s in sections), None
    return bytes(data[start:]), AMQP10_TYPE


def from_amqp10(data: bytes) -> tuple[BasicProperties, bytes, str | None, str | None]:
    """A stored 1.0 message as 0-9-1 sees it: its ``basic`` properties, its body, and the
    exchange and routing key of its annotations (None where it has none: a message
    published with 1.0). Raises :class:`~amqp_sansio.DecodeError` if ``data`` is not a
    message."""
    header, annotations, props, application, body_start = _sections(data)
    body, type_ = _body(data, body_start)
    headers = _table_to_091(application.items())
    notes: dict[Any, str] = {}
    for key, value in annotations.items():
        if key in _NOT_HEADERS:
            if isinstance(value, str):
                notes[key] = str(value)
        elif key == COMPLEX_HEADERS and isinstance(value, dict):
            _table_to_091(value.items(), headers)
        elif isinstance(key, str) and key.startswith("x-"):
            _table_to_091([(key, value)], headers)
    fields: dict[str, Any] = {
        "type": type_ or notes.get(TYPE_ANNOTATION),
        "content_type": notes.get(CONTENT_TYPE),
        "content_encoding": notes.get(CONTENT_ENCODING),
    }
    if len(header) > 0 and header[0] is not None:
        fields["delivery_mode"] = 2 if header[0] else 1
    if len(header) > 1 and header[1] is not None:
        fields["priority"] = int(header[1])
    if len(header) > 2 and header[2] is not None:
        fields["expiration"] = str(int(header[2]))
    if isinstance(props, Properties):
        _properties_to_091(props, fields, headers)
    fields["type"] = _shortstr(fields["type"])
    properties = BasicProperties(headers=headers or None, **fields)
    return properties, body, notes.get(EXCHANGE_ANNOTATION), notes.get(ROUTING_KEY_ANNOTATION)


def _properties_to_091(props: Properties, fields: dict[str, Any], headers: dict[str, Any]) -> None:
    fields["message_id"] = _id_to_091(props.message_id, _MESSAGE_ID, headers)
    fields["correlation_id"] = _id_to_091(props.correlation_id, _CORRELATION_ID, headers)
    user_id = props.user_id
    if user_id is not None and len(user_id) <= 255:
        with contextlib.suppress(UnicodeDecodeError):
            fields["user_id"] = bytes(user_id).decode("utf-8")
    fields["reply_to"] = _shortstr(props.reply_to)
    fields["app_id"] = _shortstr(props.group_id)
    if props.content_type is not None:
        fields["content_type"] = _shortstr(props.content_type)
    if props.content_encoding is not None:
        fields["content_encoding"] = _shortstr(props.content_encoding)
    if props.creation_time is not None:
        fields["timestamp"] = c091.Timestamp(max(0, int(props.creation_time) // 1000))


def _shortstr(value: Any) -> str | None:
    if isinstance(value, str) and len(value.encode("utf-8", "surrogatepass")) <= 255:
        return str(value)
    return None


def _id_to_091(value: Any, header: str, headers: dict[str, Any]) -> str | None:
    """A message-id or correlation-id as a shortstr, or in ``header`` if it cannot be one."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        return _URN + str(value)
    if isinstance(value, bytes | bytearray):
        headers[header] = bytearray(value)
        return None
    if isinstance(value, str):
        if len(value.encode()) <= 255:
            return str(value)
        headers[header] = str(value)
        return None
    return str(int(value))  # a ulong


def basic_of(message: StoredMessage) -> tuple[BasicProperties, bytes, str | None, str | None]:
    """A stored message as a 0-9-1 consumer gets it: as published, for a message published
    with 0-9-1 (its annotations unchanged since), else mapped from its 1.0 form."""
    native = message.native
    if native is not None and native.protocol == NATIVE:
        properties, exchange, routing_key, size = native.form
        data = message.data
        return properties, data[len(data) - size :] if size else b"", exchange, routing_key
    return from_amqp10(message.encoded())
