"""Typed AMQP values on the command line, and messages as JSON.

In: ``send``'s ``--property NAME=VALUE``, ``--app-property KEY=VALUE`` and ``--annotation
KEY=VALUE`` (:func:`typed`, :func:`property_value`, :func:`key_value`). A value is a string
unless it starts with one of the :data:`PREFIXES` (``int:5``, ``bool:true``,
``timestamp:2026-11-26T10:00:00Z``); ``str:`` makes a string of anything (``str:int:5`` is
the text ``int:5``). The types are those of the AMQP type system (core spec 1.6) as
:mod:`amqp_sansio.codec.amqp10` maps them to Python. Every bad value raises
:class:`argparse.ArgumentTypeError` with one line saying why (argparse's exit status 2).

Out: ``receive --json``'s one object per message (:func:`message_json`): every section
(core spec 3.2), each AMQP value as JSON holds it (:func:`to_json`).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import datetime as dt
import math
import uuid
from collections.abc import Callable
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10

#: The AMQP type wrappers (the public API's ``amqp_sansio.codec.amqp10``).
t = amqp.codec.amqp10

__all__ = [
    "PREFIXES",
    "PROPERTIES",
    "binary",
    "key_value",
    "message_json",
    "property_value",
    "timestamp",
    "to_json",
    "typed",
]


def _bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("true", "yes", "1"):
        return True
    if lowered in ("false", "no", "0"):
        return False
    raise ValueError("a bool is true or false")


def _integer(kind: Callable[[int], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = int(text.replace("_", ""))
        except ValueError:
            raise ValueError("not a whole number") from None
        return kind(value)  # (the wrappers check their range: ValueError)

    return parse


def _long(value: int) -> int:
    if not -(2**63) <= value < 2**63:
        raise ValueError("a long is -2**63 to 2**63-1")
    return value


def _number(kind: Callable[[float], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return kind(float(text))
        except ValueError as exc:
            raise ValueError(str(exc) if "range" in str(exc) else "not a number") from None

    return parse


def timestamp(text: str) -> t.Timestamp:
    """A timestamp (core spec 1.6.17): milliseconds since the Unix epoch (``1764151200000``),
    an ISO 8601 date and time (``2026-11-26T10:00:00Z``, ``2026-11-26T10:00:00.250+01:00``;
    without a zone: UTC), or ``now``."""
    if text == "now":
        return t.Timestamp.from_datetime(dt.datetime.now(dt.timezone.utc))
    try:
        return t.Timestamp(int(text))
    except ValueError:
        pass
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(
            "a timestamp is milliseconds since 1970, an ISO 8601 time (2026-11-26T10:00:00Z) or now"
        ) from None
    return t.Timestamp.from_datetime(when)


def binary(text: str) -> bytes:
    """Bytes written in base64 (``AAEC/w==``), as ``receive --json`` prints them."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("binary is written in base64 (AAEC/w==)") from None


def _uuid(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        raise ValueError("not a UUID (0f8f7b8e-5c58-4a4a-9b7e-2d0c1d2e3f40)") from None


def _null(text: str) -> None:
    if text:
        raise ValueError("null takes no value (null:)")


#: The prefixes of a typed value: prefix -> (what it makes, the AMQP type, core spec 1.6).
PREFIXES: dict[str, Callable[[str], Any]] = {
    "str": str,
    "symbol": t.Symbol,
    "bool": _bool,
    "byte": _integer(t.Byte),
    "short": _integer(t.Short),
    "int": _integer(t.Int),
    "long": _integer(_long),
    "ubyte": _integer(t.UByte),
    "ushort": _integer(t.UShort),
    "uint": _integer(t.UInt),
    "ulong": _integer(t.ULong),
    "float": _number(t.Float),
    "double": _number(float),
    "char": t.Char,
    "timestamp": timestamp,
    "uuid": _uuid,
    "binary": binary,
    "null": _null,
}


def _split(text: str) -> tuple[str | None, str]:
    prefix, colon, rest = text.partition(":")
    if colon and prefix in PREFIXES:
        return prefix, rest
    return None, text


def _error(what: str, text: str, why: str) -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"{what}{text}: {why}")


def typed(text: str, what: str = "") -> Any:
    """The AMQP value ``text`` writes: a string, or a value of a :data:`PREFIXES` type."""
    prefix, rest = _split(text)
    if prefix is None:
        return text
    try:
        return PREFIXES[prefix](rest)
    except (ValueError, TypeError) as exc:
        raise _error(what, text, str(exc) or f"not a {prefix}") from None


def key_value(text: str, what: str = "KEY=VALUE") -> tuple[str, str]:
    """``KEY=VALUE`` split at its first ``=`` (the key not empty)."""
    key, equals, value = text.partition("=")
    if not equals or not key:
        raise argparse.ArgumentTypeError(f"not {what}: {text!r}")
    return key, value


def app_property(text: str) -> tuple[str, Any]:
    """``--app-property KEY=VALUE``: a string key, a typed value (core spec 3.2.5: the
    values are simple types, no maps, lists or arrays)."""
    key, value = key_value(text)
    return key, typed(value, f"{key}=")


def annotation(text: str) -> tuple[t.Symbol, Any]:
    """``--annotation KEY=VALUE``: a symbol key (ASCII), a typed value (core spec 3.2.3)."""
    key, value = key_value(text)
    if not key.isascii():
        raise argparse.ArgumentTypeError(f"an annotation's key is a symbol (ASCII): {key!r}")
    return t.Symbol(key), typed(value, f"{key}=")


def _message_id(text: str) -> Any:
    prefix, _ = _split(text)
    if prefix not in (None, "str", "ulong", "uuid", "binary"):
        raise ValueError("a message id is a string, ulong:, uuid: or binary: (core spec 3.2.11)")
    return typed(text)


def _string(text: str) -> str:
    prefix, rest = _split(text)
    if prefix not in (None, "str"):
        raise ValueError("a string (no type prefix but str:)")
    return rest


def _symbol(text: str) -> t.Symbol:
    value = _string(text)
    if not value.isascii():
        raise ValueError("a symbol is ASCII")
    return t.Symbol(value)


def _user_id(text: str) -> bytes:
    prefix, rest = _split(text)
    if prefix == "binary":
        return binary(rest)
    return _string(text).encode()


def _typed_as(prefix: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        given, rest = _split(text)
        if given not in (None, prefix):
            raise ValueError(f"a {prefix} (no type prefix but {prefix}:)")
        return PREFIXES[prefix](rest)

    return parse


#: The properties section's fields (core spec 3.2.4) by their spec names: the attribute of
#: :class:`amqp_sansio.Properties`, and the parse of a value as the spec types it.
PROPERTIES: dict[str, tuple[str, Callable[[str], Any]]] = {
    "message-id": ("message_id", _message_id),
    "user-id": ("user_id", _user_id),
    "to": ("to", _string),
    "subject": ("subject", _string),
    "reply-to": ("reply_to", _string),
    "correlation-id": ("correlation_id", _message_id),
    "content-type": ("content_type", _symbol),
    "content-encoding": ("content_encoding", _symbol),
    "absolute-expiry-time": ("absolute_expiry_time", _typed_as("timestamp")),
    "creation-time": ("creation_time", _typed_as("timestamp")),
    "group-id": ("group_id", _string),
    "group-sequence": ("group_sequence", _typed_as("uint")),
    "reply-to-group-id": ("reply_to_group_id", _string),
}


def property_value(text: str) -> tuple[str, Any]:
    """``--property NAME=VALUE``: the :class:`~amqp_sansio.Properties` attribute and its
    value, typed as the spec types the field (core spec 3.2.4). ``NAME`` is the spec's
    (``message-id``; ``message_id`` too)."""
    name, value = key_value(text, "NAME=VALUE")
    spec_name = name.lower().replace("_", "-")
    if spec_name not in PROPERTIES:
        raise argparse.ArgumentTypeError(
            f"no property {name!r} (core spec 3.2.4: {', '.join(PROPERTIES)})"
        )
    attribute, parse = PROPERTIES[spec_name]
    try:
        return attribute, parse(value)
    except (ValueError, TypeError) as exc:
        raise _error(f"{name}=", value, str(exc)) from None


# -- out: JSON ------------------------------------------------------------------------------


def _iso(value: t.Timestamp) -> str | int:
    try:
        when = value.to_datetime()
    except (OverflowError, ValueError):  # outside years 1-9999: the milliseconds
        return int(value)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def to_json(value: Any) -> Any:
    """An AMQP value as JSON holds it: null, booleans, strings (and symbols and chars) and
    numbers as they are (a float that JSON cannot hold, NaN or an infinity, as the string
    ``"NaN"``, ``"Infinity"``, ``"-Infinity"``); a timestamp as ISO 8601 UTC with
    milliseconds (``2026-11-26T10:00:00.000Z``); a UUID as its text; binary as base64;
    a decimal as its text; lists and arrays as arrays; maps as objects (keys as strings,
    mapped the same way); a described value as ``{"descriptor": ..., "value": ...}``."""
    if value is None or isinstance(value, (bool, str)):
        return str(value) if isinstance(value, str) else value
    if isinstance(value, t.Timestamp):
        return _iso(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return float(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {_key(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, t.Array):
        return [to_json(v) for v in value]
    if isinstance(value, t.Described):
        return {"descriptor": to_json(value.descriptor), "value": to_json(value.value)}
    if isinstance(value, (t.Decimal32, t.Decimal64, t.Decimal128)):
        return str(value.to_decimal())
    return repr(value)


def _key(key: Any) -> str:
    value = to_json(key)
    return value if isinstance(value, str) else str(value).lower() if value is not None else "null"


def _body(message: amqp.Message) -> tuple[str | None, str | None, Any]:
    """(section kind, encoding, JSON value) of the body."""
    body = message.body
    if body is None:
        return None, None, None
    sections = body if isinstance(body, tuple) else (body,)
    if all(isinstance(s, amqp.Data) for s in sections):
        data = b"".join(s.value for s in sections if isinstance(s, amqp.Data))
        return "data", *_bytes(data)
    if all(isinstance(s, amqp.AmqpSequence) for s in sections):
        items = [v for s in sections if isinstance(s, amqp.AmqpSequence) for v in s.value]
        return "amqp-sequence", "json", to_json(items)
    if isinstance(body, amqp.AmqpValue):
        value = body.value
        if isinstance(value, str):
            return "amqp-value", "text", str(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return "amqp-value", "base64", to_json(value)
        return "amqp-value", "json", to_json(value)
    return "unknown", "json", to_json(body)  # pragma: no cover - the decoder makes none


def _bytes(data: bytes) -> tuple[str, str]:
    try:
        return "text", data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64", base64.b64encode(data).decode("ascii")


#: The JSON names of the properties fields: the spec's (core spec 3.2.4).
_PROPERTY_NAMES = {attribute: name for name, (attribute, _) in PROPERTIES.items()}


def message_json(message: amqp.Message) -> dict[str, Any]:
    """One message as a JSON object: every section under its spec name (core spec 3.2),
    ``null`` when absent; the header's fields all, the properties' only those set; the
    body with ``body-section`` (``data``, ``amqp-value``, ``amqp-sequence``) and
    ``body-encoding``: ``text`` (UTF-8 bytes or a string, as the text), ``base64``
    (other bytes) or ``json`` (any other value, mapped by :func:`to_json`)."""
    header = message.header
    properties = message.properties
    section, encoding, body = _body(message)
    return {
        "header": None
        if header is None
        else {
            "durable": header.durable,
            "priority": header.priority,
            "ttl": header.ttl,
            "first-acquirer": header.first_acquirer,
            "delivery-count": header.delivery_count,
        },
        "delivery-annotations": to_json(message.delivery_annotations),
        "message-annotations": to_json(message.message_annotations),
        "properties": None
        if properties is None
        else {
            name: to_json(getattr(properties, attribute))
            for attribute, name in _PROPERTY_NAMES.items()
            if getattr(properties, attribute) is not None
        },
        "application-properties": to_json(message.application_properties),
        "body-section": section,
        "body-encoding": encoding,
        "body": body,
        "footer": to_json(message.footer),
    }
