"""A message as the Spark source and sink see it (AMQP 1.0's form, :class:`amqp_sansio.Message`,
which :mod:`..rows` makes rows of) and as AMQP 0-10 carries it: the header structs of a
``message.transfer`` and its body (0-10 spec, class ``message``: ``delivery-properties``,
``message-properties``, ``application-headers``). The 0-10 reader and writer of
:mod:`amqp_sansio.adapters.spark.amqp010` map each message so, both ways, so that a row
written over 0-10 reads back the same over 0-10.

====================================  ===========================================================
1.0                                   0-10
====================================  ===========================================================
header durable                        delivery-mode (2 persistent, 1 not)
header priority, ttl (ms)             priority, ttl (ms)
header delivery-count                 redelivered (read: 1 when set; written: not sent)
message-id (uuid)                     message-id
message-id (string, ulong, binary)    application header ``x-amqp-1.0-message-id``
correlation-id (string, binary)       correlation-id (a string as UTF-8; read back as a string
                                      when it is UTF-8)
correlation-id (uuid, ulong)          application header ``x-correlation-id``
user-id                               user-id
reply-to                              reply-to (its routing key; an exchange as ``exchange/key``)
content-type, content-encoding        content-type, content-encoding
creation-time, absolute-expiry-time   timestamp, expiration (seconds: the milliseconds are lost)
group-id                              app-id (UTF-8)
to, group-sequence, reply-to-group-id application headers ``x-amqp-to``,
                                      ``x-amqp-group-sequence``, ``x-amqp-reply-to-group-id``
subject                               application header ``qpid.subject`` (Qpid's)
application-properties                application-headers
message annotations ``x-...``         application headers of those names (read: every other
                                      header ``x-...`` is a message annotation); others are lost
data sections                         the body, joined
an amqp-value, amqp-sequence          the body: the encoded 1.0 body sections, with the
sections, no body                     application header ``x-amqp-1.0-body`` true (read: or
                                      content-type ``application/x-amqp-1.0``, as the
                                      broker sends a 1.0 client's such message)
exchange, routing key (read)          message annotations ``x-exchange``, ``x-routing-key``
====================================  ===========================================================

Header ``first-acquirer`` has no 0-10 field and is lost.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import amqp_sansio as amqp
from amqp_sansio.amqp010 import definitions as spec

__all__ = ["BODY_SECTIONS", "SECTIONS_TYPE", "from_010", "to_010"]

#: The application header of a body that is the 1.0 body sections, encoded.
BODY_SECTIONS = "x-amqp-1.0-body"
#: The content-type of such a body, as the broker sends it.
SECTIONS_TYPE = "application/x-amqp-1.0"
#: The header names are those of the broker's mapping (:mod:`amqp_sansio.broker`'s 0-10
#: side, as Qpid's broker maps 0-10 and 1.0) where it has one.
MESSAGE_ID, CORRELATION_ID = "x-amqp-1.0-message-id", "x-correlation-id"
TO, SUBJECT = "x-amqp-to", "qpid.subject"
GROUP_SEQUENCE, REPLY_TO_GROUP_ID = "x-amqp-group-sequence", "x-amqp-reply-to-group-id"
#: The application headers this mapping uses for 1.0's fields: never annotations.
_RESERVED = frozenset(
    {BODY_SECTIONS, MESSAGE_ID, CORRELATION_ID, TO, SUBJECT, GROUP_SEQUENCE, REPLY_TO_GROUP_ID}
)
_EXCHANGE, _ROUTING_KEY = amqp.Symbol("x-exchange"), amqp.Symbol("x-routing-key")
#: 0-10 spec, ``message.delivery-mode``.
_PERSISTENT, _NON_PERSISTENT = 2, 1


# -- 1.0 to 0-10 -------------------------------------------------------------------------------


def _body_to_010(body: Any, headers: dict[str, Any]) -> bytes:
    if isinstance(body, amqp.Data):
        return bytes(body.value)
    if isinstance(body, tuple | list) and body and all(isinstance(s, amqp.Data) for s in body):
        return b"".join(bytes(s.value) for s in body)
    headers[BODY_SECTIONS] = True
    return b"" if body is None else amqp.Message(body=body).encode()


def _seconds(ms: int | None) -> int | None:
    return None if ms is None else int(ms) // 1000


def _properties_to_010(p: amqp.Properties, headers: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    if isinstance(p.message_id, uuid.UUID):
        fields["message_id"] = p.message_id
    elif p.message_id is not None:
        headers[MESSAGE_ID] = p.message_id
    if isinstance(p.correlation_id, str | bytes):
        correlation = p.correlation_id
        fields["correlation_id"] = (
            correlation.encode() if isinstance(correlation, str) else correlation
        )
    elif p.correlation_id is not None:
        headers[CORRELATION_ID] = p.correlation_id
    if p.reply_to is not None:
        exchange, _, key = str(p.reply_to).rpartition("/")
        fields["reply_to"] = spec.ReplyTo(exchange=exchange or None, routing_key=key)
    for name in ("user_id", "content_type", "content_encoding"):
        value = getattr(p, name)
        if value is not None:
            fields[name] = bytes(value) if name == "user_id" else str(value)
    if p.group_id is not None:
        fields["app_id"] = str(p.group_id).encode()
    for header, value in (
        (TO, p.to),
        (SUBJECT, p.subject),
        (GROUP_SEQUENCE, p.group_sequence),
        (REPLY_TO_GROUP_ID, p.reply_to_group_id),
    ):
        if value is not None:
            headers[header] = value
    return fields


def to_010(
    message: amqp.Message, *, routing_key: str, exchange: str = ""
) -> tuple[tuple[spec.Struct, ...], bytes]:
    """The header structs and body of a ``message.transfer`` of ``message`` to
    ``exchange`` with ``routing_key`` (the module's table)."""
    headers: dict[str, Any] = {str(k): v for k, v in (message.application_properties or {}).items()}
    for key, value in (message.message_annotations or {}).items():
        if str(key).startswith("x-"):
            headers[str(key)] = value
    body = _body_to_010(message.body, headers)
    delivery: dict[str, Any] = {"routing_key": routing_key, "exchange": exchange or None}
    h = message.header
    if h is not None:
        delivery["delivery_mode"] = _PERSISTENT if h.durable else _NON_PERSISTENT
        delivery["priority"] = h.priority
        delivery["ttl"] = h.ttl
    fields: dict[str, Any] = {}
    p = message.properties
    if p is not None:
        fields = _properties_to_010(p, headers)
        delivery["timestamp"] = _seconds(p.creation_time)
        delivery["expiration"] = _seconds(p.absolute_expiry_time)
    if headers:
        fields["application_headers"] = headers
    structs: list[spec.Struct] = [spec.DeliveryProperties(**delivery)]
    if fields:
        structs.append(spec.MessageProperties(**fields))
    return tuple(structs), body


# -- 0-10 to 1.0 -------------------------------------------------------------------------------


def _find(header: Sequence[spec.Struct], kind: type[spec.Struct]) -> Any:
    return next((s for s in header if isinstance(s, kind)), None)


def _ms(seconds: int | None) -> int | None:
    return None if seconds is None else int(seconds) * 1000


def _text(value: Any) -> Any:
    """A correlation-id or app-id as a string when it is UTF-8 (as it was written)."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value
    return value


def _properties_from_010(
    d: spec.DeliveryProperties | None, m: spec.MessageProperties | None, headers: dict[str, Any]
) -> amqp.Properties | None:
    fields: dict[str, Any] = {
        "message_id": headers.pop(MESSAGE_ID, None),
        "correlation_id": headers.pop(CORRELATION_ID, None),
        "to": headers.pop(TO, None),
        "subject": headers.pop(SUBJECT, None),
        "group_sequence": headers.pop(GROUP_SEQUENCE, None),
        "reply_to_group_id": headers.pop(REPLY_TO_GROUP_ID, None),
    }
    if m is not None:
        if m.message_id is not None:
            fields["message_id"] = m.message_id
        if m.correlation_id is not None:
            fields["correlation_id"] = _text(m.correlation_id)
        if m.reply_to is not None:
            key = m.reply_to.routing_key or ""
            fields["reply_to"] = f"{m.reply_to.exchange}/{key}" if m.reply_to.exchange else key
        fields["user_id"] = m.user_id
        fields["content_type"] = None if m.content_type is None else amqp.Symbol(m.content_type)
        encoding = m.content_encoding
        fields["content_encoding"] = None if encoding is None else amqp.Symbol(encoding)
        fields["group_id"] = None if m.app_id is None else _text(m.app_id)
    if d is not None:
        fields["creation_time"] = _ms(d.timestamp)
        fields["absolute_expiry_time"] = _ms(d.expiration)
    if all(v is None for v in fields.values()):
        return None
    return amqp.Properties(**fields)


def _header_from_010(d: spec.DeliveryProperties | None) -> amqp.Header | None:
    if d is None or (d.delivery_mode is None and d.priority is None and d.ttl is None):
        return None if d is None or not d.redelivered else amqp.Header(delivery_count=1)
    return amqp.Header(
        durable=d.delivery_mode == _PERSISTENT,
        priority=4 if d.priority is None else d.priority,
        ttl=d.ttl,
        delivery_count=1 if d.redelivered else 0,
    )


def from_010(header: Sequence[spec.Struct], body: bytes) -> amqp.Message:
    """The 1.0 form of a received 0-10 message (the module's table); ValueError or
    :class:`~amqp_sansio.DecodeError` when its body says it is 1.0 sections and is not."""
    d: spec.DeliveryProperties | None = _find(header, spec.DeliveryProperties)
    m: spec.MessageProperties | None = _find(header, spec.MessageProperties)
    headers = dict((m.application_headers if m is not None else None) or {})
    sections = headers.pop(BODY_SECTIONS, False) or (
        m is not None and m.content_type == SECTIONS_TYPE
    )
    message_body: Any = amqp.Data(body)
    if sections:
        message_body = amqp.Message.decode(body).body if body else None
    properties = _properties_from_010(d, m, headers)
    annotations: dict[Any, Any] = {}
    if d is not None:
        if d.exchange is not None:
            annotations[_EXCHANGE] = d.exchange
        if d.routing_key is not None:
            annotations[_ROUTING_KEY] = d.routing_key
    for key in [k for k in headers if k.startswith("x-") and k not in _RESERVED]:
        annotations[amqp.Symbol(key)] = headers.pop(key)
    return amqp.Message(
        header=_header_from_010(d),
        properties=properties,
        application_properties=headers or None,
        message_annotations=annotations or None,
        body=message_body,
    )
