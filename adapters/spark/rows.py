"""The Spark adapter's rows: an AMQP message as a row of the fixed schema, and back (its
options are :mod:`.options`). Nothing here needs Spark, so that it can be tested and typed on
its own; :mod:`amqp_sansio.adapters.spark` builds the data source on it.

The schema (``docs/spark.rst`` has the table): ``body`` is the message's payload as bytes
and ``body_type`` says what it was (core 3.2.5-3.2.8):

* ``data``: one or more data sections, their bytes joined;
* ``string``: an amqp-value holding a string, as UTF-8;
* ``binary``: an amqp-value holding binary;
* ``value``: an amqp-value holding anything else, as its AMQP encoding;
* ``sequence``: amqp-sequence sections, as the AMQP encoding of the list of their lists;
* ``none``: no body (``body`` is null).

Message ids and correlation ids (ulong, uuid, binary or string, 3.2.11) are strings: a
ulong in decimal, a uuid in its canonical form, binary in hex. Timestamps are UTC. Map
values (application properties, message annotations) are strings: strings as they are,
numbers as plain numbers whatever their AMQP type (``Int(5)`` is ``5``), UUIDs in their
canonical form, and the others ``repr``-ed. The writer takes the same columns back (only
``body`` is required).
"""

from __future__ import annotations

import datetime
import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, cast

import amqp_sansio as amqp

__all__ = [
    "BODY_TYPES",
    "FIELDS",
    "message_id_for",
    "message_to_row",
    "row_to_message",
]

#: The schema's columns, in order, with their Spark SQL types.
FIELDS: tuple[tuple[str, str], ...] = (
    ("body", "binary"),
    ("body_type", "string"),
    ("address", "string"),
    ("durable", "boolean"),
    ("priority", "int"),
    ("ttl", "long"),
    ("first_acquirer", "boolean"),
    ("delivery_count", "long"),
    ("message_id", "string"),
    ("user_id", "binary"),
    ("to", "string"),
    ("subject", "string"),
    ("reply_to", "string"),
    ("correlation_id", "string"),
    ("content_type", "string"),
    ("content_encoding", "string"),
    ("absolute_expiry_time", "timestamp"),
    ("creation_time", "timestamp"),
    ("group_id", "string"),
    ("group_sequence", "long"),
    ("reply_to_group_id", "string"),
    ("application_properties", "map<string,string>"),
    ("message_annotations", "map<string,string>"),
    ("offset", "long"),
    ("partition", "int"),
)
COLUMNS = tuple(name for name, _ in FIELDS)
BODY_TYPES = ("data", "string", "binary", "value", "sequence", "none")

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


# -- messages to rows ------------------------------------------------------------------------


def _id_string(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    return str(int(value)) if isinstance(value, int) else str(value)


def _timestamp(ms: int | None) -> datetime.datetime | None:
    if ms is None:
        return None
    return _EPOCH + datetime.timedelta(milliseconds=int(ms))


def _text(value: Any) -> str:
    """A map value as the schema's string: numbers as plain numbers whatever their AMQP
    type (a decoded ``int`` is ``Int(5)``, shown ``5``), UUIDs canonical, the rest
    ``repr``-ed."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(float(value))
    if isinstance(value, uuid.UUID):
        return str(value)
    return repr(value)


def _map(value: Mapping[Any, Any] | None) -> dict[str, str] | None:
    if value is None:
        return None
    return {str(k): _text(v) for k, v in value.items()}


def _body(body: Any) -> tuple[bytes | None, str]:
    if body is None:
        return None, "none"
    if isinstance(body, amqp.Data):
        return bytes(body.value), "data"
    if isinstance(body, amqp.AmqpValue):
        value = body.value
        if isinstance(value, str):
            return value.encode(), "string"
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value), "binary"
        return amqp.encode(value), "value"
    if isinstance(body, amqp.AmqpSequence):
        return amqp.encode([list(body.value)]), "sequence"
    sections = tuple(body)
    if all(isinstance(s, amqp.Data) for s in sections):
        return b"".join(bytes(s.value) for s in sections), "data"
    return amqp.encode([list(s.value) for s in sections]), "sequence"


def message_to_row(message: amqp.Message, address: str | None) -> tuple[Any, ...]:
    """The row of a received message, in the order of :data:`FIELDS`."""
    body, body_type = _body(message.body)
    h = message.header
    p = message.properties
    return (
        body,
        body_type,
        address,
        None if h is None else h.durable,
        None if h is None else h.priority,
        None if h is None else h.ttl,
        None if h is None else h.first_acquirer,
        None if h is None else h.delivery_count,
        None if p is None else _id_string(p.message_id),
        None if p is None else p.user_id,
        None if p is None else p.to,
        None if p is None else p.subject,
        None if p is None else p.reply_to,
        None if p is None else _id_string(p.correlation_id),
        None if p is None else p.content_type,
        None if p is None else p.content_encoding,
        None if p is None else _timestamp(p.absolute_expiry_time),
        None if p is None else _timestamp(p.creation_time),
        None if p is None else p.group_id,
        None if p is None else p.group_sequence,
        None if p is None else p.reply_to_group_id,
        _map(message.application_properties),
        _map(message.message_annotations),
        None,
        None,
    )


# -- rows to messages ------------------------------------------------------------------------


def _ms(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return int((value - _EPOCH) / datetime.timedelta(milliseconds=1))
    return int(value)


def _items(value: Any) -> Iterable[tuple[Any, Any]]:
    if value is None:
        return ()
    if isinstance(value, Mapping):
        return value.items()
    return value  # type: ignore[no-any-return]  # Spark's map as (key, value) pairs


def _row_body(body: Any, body_type: str | None) -> Any:
    kind = body_type or "data"
    if kind not in BODY_TYPES:
        raise ValueError(f"body_type {kind!r} is not one of {', '.join(BODY_TYPES)}")
    if kind == "none":
        return None
    if body is None:
        raise ValueError(f"a row with body_type {kind!r} has no body")
    data = bytes(body) if not isinstance(body, str) else body.encode()
    if kind == "data":
        return amqp.Data(data)
    if kind == "string":
        return amqp.AmqpValue(data.decode())
    if kind == "binary":
        return amqp.AmqpValue(data)
    if kind == "value":
        return amqp.AmqpValue(amqp.decode(data))
    sections = amqp.decode(data)
    if not isinstance(sections, list) or not all(isinstance(s, list) for s in sections):
        raise ValueError("a sequence body is the AMQP encoding of a list of lists")
    if not sections:
        raise ValueError("a sequence body has at least one amqp-sequence section")
    return [amqp.AmqpSequence(cast(list[Any], s)) for s in sections]  # lists: checked above


def row_to_message(row: Mapping[str, Any], *, message_id: str | None = None) -> amqp.Message:
    """The message a row stands for (the writer's columns are the reader's; only ``body``
    is required). ``message_id`` is used when the row has none."""
    get = row.get
    header = None
    priority: Any = get("priority")
    ttl: Any = get("ttl")
    if any(v is not None for v in (get("durable"), get("first_acquirer"), priority, ttl)):
        header = amqp.Header(
            durable=bool(get("durable") or False),
            priority=4 if priority is None else int(priority),
            ttl=None if ttl is None else int(ttl),
            first_acquirer=bool(get("first_acquirer") or False),
        )
    fields: dict[str, Any] = {
        "message_id": get("message_id") or message_id,
        "user_id": get("user_id"),
        "to": get("to"),
        "subject": get("subject"),
        "reply_to": get("reply_to"),
        "correlation_id": get("correlation_id"),
        "content_type": get("content_type"),
        "content_encoding": get("content_encoding"),
        "absolute_expiry_time": _ms(get("absolute_expiry_time")),
        "creation_time": _ms(get("creation_time")),
        "group_id": get("group_id"),
        "group_sequence": get("group_sequence"),
        "reply_to_group_id": get("reply_to_group_id"),
    }
    properties = amqp.Properties(**fields) if any(v is not None for v in fields.values()) else None
    app = {str(k): v for k, v in _items(get("application_properties"))} or None
    annotations = {amqp.Symbol(str(k)): v for k, v in _items(get("message_annotations"))}
    return amqp.Message(
        header=header,
        properties=properties,
        application_properties=app,
        message_annotations=annotations or None,
        body=_row_body(get("body"), get("body_type")),
    )


def message_id_for(query: str, batch: int | str, partition: int, row: int) -> str:
    """A message-id that is the same every time a task sends the same row again (a retried
    task, a replayed batch), so that a de-duplicating receiver keeps one copy."""
    key = f"{query}/{batch}/{partition}/{row}".encode()
    return "amqp-sansio:" + hashlib.blake2b(key, digest_size=12).hexdigest() + f":{row}"
