"""Composite and restricted described types, declared once as data (core spec 1.3, 1.4).

Each composite is an attrs class whose fields carry their AMQP definition in metadata
(:func:`amqp`): the field's AMQP type, whether it is mandatory or multiple, what archetype it
requires. From that one declaration :func:`composite` generates, at import time:

* a validator run on construction (a wrong type raises ``TypeError``/``ValueError`` at once),
* an encoder: a described list, fields in order, defaults and nulls at the end trimmed,
* a decoder that reads the list in place, with the common encodings of each field's type
  inlined, checks mandatory fields and field types (``amqp:invalid-field`` and
  ``amqp:decode-error``), and fills the instance without going through ``__init__``.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from ...errors import DecodeError, EncodeError, InvalidFieldError
from . import decoder, encoder
from .types import (
    AMQPType,
    AMQPValue,
    Array,
    Described,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

__all__ = ["Restricted", "amqp", "composite", "restricted"]

T = TypeVar("T")

#: Primitive field types the generated code handles inline, and each one's array type.
_PRIMITIVE_KINDS = {
    "boolean": AMQPType.BOOLEAN,
    "ubyte": AMQPType.UBYTE,
    "ushort": AMQPType.USHORT,
    "uint": AMQPType.UINT,
    "ulong": AMQPType.ULONG,
    "string": AMQPType.STRING,
    "symbol": AMQPType.SYMBOL,
    "binary": AMQPType.BINARY,
    "timestamp": AMQPType.TIMESTAMP,
}
#: Other kinds: "fields" (map with symbol keys), "annotations" (symbol or ulong keys),
#: "map" (any map), "*" (any value, perhaps restricted by ``requires``), or a composite
#: class. (The restricted amqp-sequence section is the one "list".)
_OTHER_KINDS = {"fields", "annotations", "map", "*"}


@attrs.frozen
class FieldSpec:
    """The AMQP definition of one field of a composite type (core spec 1.4)."""

    kind: str | type
    mandatory: bool = False
    multiple: bool = False
    requires: str | None = None
    enum: type[enum.Enum] | None = None


def amqp(
    kind: str | type,
    *,
    mandatory: bool = False,
    multiple: bool = False,
    requires: str | None = None,
    enum: type[enum.Enum] | None = None,
) -> dict[str, FieldSpec]:
    """Field metadata: ``attrs.field(metadata=amqp("uint", mandatory=True))``."""
    if isinstance(kind, str) and kind not in _PRIMITIVE_KINDS and kind not in _OTHER_KINDS:
        raise ValueError(f"unknown field kind {kind!r}")
    return {"amqp": FieldSpec(kind, mandatory, multiple, requires, enum)}


def to_tuple(value: Iterable[AMQPValue] | str | bytes | None) -> tuple[AMQPValue, ...] | None:
    """Converter for ``multiple`` fields: one value or an iterable of values (a list, a tuple,
    an :class:`Array`), kept as a tuple.
    No values at all is held as ``None``: core spec 1.4 makes an empty array and null the
    same."""
    if value is None:
        return None
    if isinstance(value, str | bytes):
        return (value,)
    items = tuple(value.items) if isinstance(value, Array) else tuple(value)
    return items or None


def to_bytes(value: bytes | bytearray | memoryview | None) -> bytes | None:
    """Converter for binary fields: any bytes-like value is held as ``bytes``."""
    if value is None or type(value) is bytes:
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"expected bytes, got {type(value).__name__}")


# -- archetypes ("requires") ----------------------------------------------------------------
# A composite registers the archetypes it provides; a field that requires one accepts those
# classes, and also a Described value with an unknown descriptor (an extension type).

_PROVIDERS: dict[str, set[type]] = {}
_PRIMITIVE_REQUIRES: dict[str, tuple[type, ...]] = {
    "message-id": (ULong, uuid.UUID, bytes, str),
    "address": (str,),
    "txn-id": (bytes,),
    "error-condition": (str,),
    "distribution-mode": (str,),
    "txn-capability": (str,),
}


def _providers(archetype: str) -> set[type]:
    return _PROVIDERS.setdefault(archetype, {Described})


def _requires_ok(archetype: str, value: Any) -> bool:
    prim = _PRIMITIVE_REQUIRES.get(archetype)
    if prim is not None:
        return isinstance(value, prim) and not isinstance(value, bool)
    if archetype == "global-tx-id":
        return True
    return type(value) in _providers(archetype)


# -- validation on construction ---------------------------------------------------------------

_RANGES = {"ubyte": 0xFF, "ushort": 0xFFFF, "uint": 0xFFFFFFFF, "ulong": 0xFFFFFFFFFFFFFFFF}


def _is_bool(where: str, spec: FieldSpec, value: Any) -> bool:
    return isinstance(value, bool)


def _is_unsigned(where: str, spec: FieldSpec, value: Any) -> bool:
    """A ubyte, ushort, uint or ulong (``spec.kind``): an int in its range."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if ok and not 0 <= value <= _RANGES[spec.kind]:  # type: ignore[index]
        raise ValueError(f"{where}: {value} is out of range for {spec.kind}")
    return ok


def _is_timestamp(where: str, spec: FieldSpec, value: Any) -> bool:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if ok and not -(1 << 63) <= value < (1 << 63):
        raise ValueError(f"{where}: {value} is out of range for a timestamp")
    return ok


def _is_str(where: str, spec: FieldSpec, value: Any) -> bool:
    return isinstance(value, str)


def _is_symbol(where: str, spec: FieldSpec, value: Any) -> bool:
    ok = isinstance(value, str)
    if ok and not value.isascii():
        raise ValueError(f"{where}: a symbol must be ASCII, got {value!r}")
    return ok


def _is_bytes(where: str, spec: FieldSpec, value: Any) -> bool:
    return isinstance(value, bytes)


def _is_dict(where: str, spec: FieldSpec, value: Any) -> bool:
    return isinstance(value, dict)


def _is_keyed_map(where: str, spec: FieldSpec, value: Any) -> bool:
    """Fields (symbol keys) or annotations (symbol or ulong keys)."""
    if not isinstance(value, dict):
        return False
    ints = spec.kind == "annotations"
    for key in value:
        if not (
            isinstance(key, str) or (ints and isinstance(key, int) and not isinstance(key, bool))
        ):
            raise TypeError(f"{where}: key {key!r} must be a symbol")
    return True


def _is_required(where: str, spec: FieldSpec, value: Any) -> bool:
    """A field of any type (``*``) that provides the archetype it requires, if any."""
    if spec.requires is None or _requires_ok(spec.requires, value):
        return True
    if spec.requires == "message-id" and type(value) is int:
        # A plain int message-id is sent as a ulong (core spec 3.2.11).
        if not 0 <= value <= _RANGES["ulong"]:
            raise ValueError(f"{where}: a message-id integer must be a ulong, got {value}")
        return True
    return False


#: How a value of each named kind is checked on construction: true if it is of the kind
#: (or raises, for a value of the kind that is out of range); a kind that is a class is
#: checked with isinstance.
_KIND_CHECKS: dict[str | type, Callable[[str, FieldSpec, Any], bool]] = {
    "boolean": _is_bool,
    **dict.fromkeys(_RANGES, _is_unsigned),
    "timestamp": _is_timestamp,
    "string": _is_str,
    "symbol": _is_symbol,
    "binary": _is_bytes,
    "fields": _is_keyed_map,
    "annotations": _is_keyed_map,
    "map": _is_dict,
    "*": _is_required,
}


def _check_one(cls_name: str, name: str, spec: FieldSpec, value: Any) -> None:
    kind = spec.kind
    where = f"{cls_name}.{name}"
    if spec.enum is not None:
        if isinstance(value, spec.enum):
            return
        try:
            spec.enum(value)
        except ValueError:
            raise ValueError(f"{where}: {value!r} is not one of {list(spec.enum)}") from None
        return
    check = _KIND_CHECKS.get(kind)
    ok = check(where, spec, value) if check is not None else isinstance(value, kind)  # type: ignore[arg-type]
    if not ok:
        want = spec.requires or (kind if isinstance(kind, str) else kind.__name__)
        raise TypeError(f"{where}: expected {want}, got {type(value).__name__} {value!r:.60}")


def _validate(cls: type, self: Any) -> None:
    for name, spec in cls._amqp_specs:  # type: ignore[attr-defined]
        value = getattr(self, name)
        if value is None:
            if spec.mandatory:
                raise TypeError(f"{cls.__name__}.{name} is mandatory")
            continue
        if spec.multiple:
            # to_tuple made it a non-empty tuple (an empty one is None, which a mandatory
            # field refuses above, as core spec 1.4 wants).
            for item in value:
                _check_one(cls.__name__, name, spec, item)
        else:
            _check_one(cls.__name__, name, spec, value)


class Composite:
    """Base of every composite type. ``DESCRIPTOR_CODE`` (ulong) and ``DESCRIPTOR_NAME``
    (symbol) are the descriptor the type is sent with (core spec 1.5)."""

    __slots__ = ()
    DESCRIPTOR_CODE: int
    DESCRIPTOR_NAME: str
    _amqp_specs: tuple[tuple[str, FieldSpec], ...]

    def __attrs_post_init__(self) -> None:
        _validate(type(self), self)


class Restricted:
    """Base of every restricted described type declared with :func:`restricted` (the message
    sections of core spec 3.2). ``DESCRIPTOR_CODE`` and ``DESCRIPTOR_NAME`` are set by the
    decorator (core spec 1.5)."""

    __slots__ = ()
    DESCRIPTOR_CODE: int
    DESCRIPTOR_NAME: str


# -- code generation --------------------------------------------------------------------------

_INLINE_DECODE = {
    # kind: list of (constructor, statement producing v and advancing pos)
    "boolean": [
        (0x41, "v = True; pos += 1"),
        (0x42, "v = False; pos += 1"),
        (0x56, "v = _boolean(buf, pos + 1, 0)[0]; pos += 2"),
    ],
    "ubyte": [(0x50, "v = buf[pos + 1]; pos += 2")],
    "ushort": [(0x60, "v = unpack_H(buf, pos + 1)[0]; pos += 3")],
    "uint": [
        (0x52, "v = buf[pos + 1]; pos += 2"),
        (0x43, "v = 0; pos += 1"),
        (0x70, "v = unpack_I(buf, pos + 1)[0]; pos += 5"),
    ],
    "ulong": [
        (0x53, "v = buf[pos + 1]; pos += 2"),
        (0x44, "v = 0; pos += 1"),
        (0x80, "v = unpack_Q(buf, pos + 1)[0]; pos += 9"),
    ],
    "timestamp": [(0x83, "v = new_int(Timestamp, unpack_q(buf, pos + 1)[0]); pos += 9")],
    "string": [
        (
            0xA1,
            "e = pos + 2 + buf[pos + 1]\n"
            "if e > L: raise truncated(pos)\n"
            "v = buf[pos + 2:e].decode('utf-8'); pos = e",
        ),
        (
            0xB1,
            "e = pos + 5 + unpack_I(buf, pos + 1)[0]\n"
            "if e > L: raise truncated(pos)\n"
            "v = buf[pos + 5:e].decode('utf-8'); pos = e",
        ),
    ],
    "symbol": [
        (
            0xA3,
            "e = pos + 2 + buf[pos + 1]\n"
            "if e > L: raise truncated(pos)\n"
            "v = new_str(Symbol, buf[pos + 2:e].decode('ascii')); pos = e",
        ),
        (
            0xB3,
            "e = pos + 5 + unpack_I(buf, pos + 1)[0]\n"
            "if e > L: raise truncated(pos)\n"
            "v = new_str(Symbol, buf[pos + 5:e].decode('ascii')); pos = e",
        ),
    ],
    "binary": [
        (
            0xA0,
            "e = pos + 2 + buf[pos + 1]\n"
            "if e > L: raise truncated(pos)\n"
            "v = buf[pos + 2:e]; pos = e",
        ),
        (
            0xB0,
            "e = pos + 5 + unpack_I(buf, pos + 1)[0]\n"
            "if e > L: raise truncated(pos)\n"
            "v = buf[pos + 5:e]; pos = e",
        ),
    ],
}

_INLINE_ENCODE = {
    "boolean": "body += TRUE if x else FALSE",
    "ubyte": "body.append(0x50); body.append(x)",
    "ushort": "body.append(0x60); body += pack_H(x)",
    "uint": "if 0 <= x < 256: body += SMALLUINT[x]\nelse: body.append(0x70); body += pack_I(x)",
    "ulong": "enc_ulong(x, body)",
    "timestamp": "enc_timestamp(x, body)",
    "string": "enc_string(x, body)",
    "symbol": "enc_symbol(x, body)",
    "binary": "enc_binary(x, body)",
    "fields": "enc_symbol_keyed_map(x, body)",
    "annotations": "enc_symbol_keyed_map(x, body)",
    "map": "enc_map(x, body)",
    "list": "enc_list(x, body)",
}


def _indent(code: str, n: int) -> str:
    pad = " " * n
    return "\n".join(pad + line for line in code.splitlines())


def _type_error(cls_name: str, field: str, want: str, got: Any, pos: int) -> DecodeError:
    return DecodeError(
        f"{cls_name}.{field} must be {want}, got {type(got).__name__} {got!r:.60}", offset=pos
    )


def _mandatory(cls_name: str, field: str, pos: int) -> InvalidFieldError:
    return InvalidFieldError(f"{cls_name}.{field} is mandatory but null", offset=pos)


def _check_decoded(cls_name: str, field: str, spec: FieldSpec, v: Any, pos: int) -> Any:
    """The slow path for a field decoded generically: check its type, normalise it."""
    if spec.multiple:
        items = v.items if type(v) is Array else (v,)
        if not items:
            # Core spec 1.4: an empty array is as absent as null, which a mandatory field
            # may not be.
            if spec.mandatory:
                raise _mandatory(cls_name, field, pos)
            return None
        return tuple(_check_decoded_one(cls_name, field, spec, x, pos) for x in items)
    return _check_decoded_one(cls_name, field, spec, v, pos)


_DECODED_TYPES: dict[str, type] = {
    "boolean": bool,
    "ubyte": UByte,
    "ushort": UShort,
    "uint": UInt,
    "ulong": ULong,
    "timestamp": Timestamp,
    "string": str,
    "symbol": Symbol,
    "binary": bytes,
}


def _check_decoded_map(cls_name: str, field: str, kind: str, v: Any, pos: int) -> Any:
    """A map, fields (symbol keys) or annotations (symbol or ulong keys), decoded."""
    if type(v) is not dict:
        raise _type_error(cls_name, field, kind, v, pos)
    if kind == "fields":
        for key in v:
            if type(key) is not Symbol:
                raise _type_error(cls_name, field, "a map with symbol keys", key, pos)
    elif kind == "annotations":
        for key in v:
            if type(key) is not Symbol and type(key) is not ULong:
                raise _type_error(cls_name, field, "a map with symbol or ulong keys", key, pos)
    return v


def _check_decoded_one(cls_name: str, field: str, spec: FieldSpec, v: Any, pos: int) -> Any:
    kind = spec.kind
    if isinstance(kind, str) and kind in _DECODED_TYPES:
        # Every encoding of these types is read inline by the generated decoder, so a value
        # that reaches this check in a primitive-typed field came with the wrong type.
        if type(v) is not _DECODED_TYPES[kind]:
            raise _type_error(cls_name, field, kind, v, pos)
        return v
    if kind in ("fields", "annotations", "map"):
        return _check_decoded_map(cls_name, field, kind, v, pos)
    if kind == "list":
        if type(v) is not list:
            raise _type_error(cls_name, field, "list", v, pos)
        return v
    if kind == "*":
        if spec.requires is not None and not _requires_ok(spec.requires, v):
            raise _type_error(cls_name, field, spec.requires, v, pos)
        return v
    assert isinstance(kind, type)
    if type(v) is not kind:
        raise _type_error(cls_name, field, kind.__name__, v, pos)
    return v


def _enum_converter(
    cls_name: str, field: str, enum_cls: type[enum.Enum]
) -> Callable[[Any, int], Any]:
    members = {m.value: m for m in enum_cls}

    def to_enum(v: Any, pos: int) -> Any:
        m = members.get(v)
        if m is None:
            raise InvalidFieldError(
                f"{cls_name}.{field}: {v!r} is not a valid {enum_cls.__name__}", offset=pos
            )
        return m

    return to_enum


def _gen_decoder(
    cls: type, specs: tuple[tuple[str, FieldSpec], ...], defaults: list[Any]
) -> decoder.Decoder:
    name = cls.__name__
    n = len(specs)
    ns: dict[str, Any] = {
        "cls": cls,
        "new": object.__new__,
        "DecodeError": DecodeError,
        "truncated": decoder.truncated,
        "too_deep": decoder.too_deep,
        "unpack_I": decoder.unpack_I,
        "unpack_II": decoder.unpack_II,
        "unpack_H": decoder.unpack_H,
        "unpack_Q": decoder.unpack_Q,
        "unpack_q": decoder.unpack_q,
        "new_int": int.__new__,
        "new_str": str.__new__,
        "Timestamp": Timestamp,
        "Symbol": Symbol,
        "D": decoder.DECODERS,
        "_boolean": decoder.DECODERS[0x56],
        "check": _check_decoded,
        "mandatory": _mandatory,
    }
    lines = [
        "def decode_composite(buf, pos, depth):",
        "    c = buf[pos]",
        "    if c == 0xC0:",
        "        count = buf[pos + 2]; end = pos + 2 + buf[pos + 1]; pos += 3",
        "    elif c == 0x45:",
        "        count = 0; pos += 1; end = pos",
        "    elif c == 0xD0:",
        "        size, count = unpack_II(buf, pos + 1)",
        "        if size < 4: raise DecodeError('list32 size smaller than its count', offset=pos)",
        "        end = pos + 5 + size; pos += 9",
        "    else:",
        f"        raise DecodeError('{name} must be encoded as a list, got format code '"
        "                          + hex(c), offset=pos)",
        "    L = len(buf)",
        "    if end > L: raise truncated(pos)",
        f"    if count > {n}:",
        f"        raise DecodeError('{name} has ' + str(count) + ' fields, at most {n} are"
        " defined', offset=pos)",
        "    if depth <= 0: raise too_deep(pos)",
        "    depth -= 1",
        "    o = new(cls)",
    ]
    for i, (fname, spec) in enumerate(specs):
        ns[f"set{i}"] = getattr(cls, fname).__set__
        ns[f"spec{i}"] = spec
        ns[f"default{i}"] = defaults[i]
        kind = spec.kind
        null = (
            f"raise mandatory('{name}', '{fname}', pos)"
            if spec.mandatory
            else f"v = default{i}; pos += 1"
        )
        body = ["c = buf[pos]", "if c == 0x40:", "    " + null]
        inline = _INLINE_DECODE.get(kind) if isinstance(kind, str) and not spec.multiple else None
        if kind == "*" and spec.requires in ("address", "message-id"):
            inline = _INLINE_DECODE["string"]  # by far their most common encoding
        if spec.enum is not None:
            ns[f"to_enum{i}"] = _enum_converter(name, fname, spec.enum)
        for code, stmt in inline or ():
            body.append(f"elif c == {code:#04x}:")
            body.append(_indent(stmt, 4))
            if spec.enum is not None:
                body.append(f"    v = to_enum{i}(v, pos)")
        body.append("else:")
        body.append("    v, pos = D[c](buf, pos + 1, depth)")
        body.append(f"    v = check('{name}', '{fname}', spec{i}, v, pos)")
        lines.append(f"    if count > {i}:")
        lines.append(_indent("\n".join(body), 8))
        lines.append("    else:")
        if spec.mandatory:
            lines.append(f"        raise mandatory('{name}', '{fname}', pos)")
        else:
            lines.append(f"        v = default{i}")
        lines.append(f"    set{i}(o, v)")
    lines += [
        "    if pos != end:",
        f"        raise DecodeError('{name} fields do not fill the list size', offset=pos)",
        "    return o, pos",
    ]
    src = "\n".join(lines)
    exec(compile(src, f"<decoder {name}>", "exec"), ns)
    return ns["decode_composite"]  # type: ignore[no-any-return]


def _gen_encoder(
    cls: type, specs: tuple[tuple[str, FieldSpec], ...], defaults: list[Any], code: int
) -> encoder.Encoder:
    name = cls.__name__
    ns: dict[str, Any] = {
        "TRUE": b"\x41",
        "FALSE": b"\x42",
        "SMALLUINT": encoder._SMALLUINT,
        "pack_H": encoder._pack_H,
        "pack_I": encoder._pack_I,
        "enc_ulong": encoder.enc_ulong,
        "enc_timestamp": encoder.enc_timestamp,
        "enc_string": encoder.enc_string,
        "enc_symbol": encoder.enc_symbol,
        "enc_binary": encoder.enc_binary,
        "enc_map": encoder.enc_map,
        "enc_list": encoder.enc_list,
        "enc_symbol_keyed_map": encoder.enc_symbol_keyed_map,
        "encode_into": encoder.encode_into,
        "encode_multiple": _encode_multiple,
        "encode_message_id": _encode_message_id,
        "EncodeError": EncodeError,
        "pack_BBB": encoder._pack_BBB,
        "pack_BII": encoder._pack_BII,
        "HEAD": bytes((0x00, 0x53, code)) if code < 256 else b"\x00\x80" + code.to_bytes(8, "big"),
    }
    lines = ["def encode_composite(v, out):", "    body = bytearray()", "    keep = 0; n = 0"]
    for i, (fname, spec) in enumerate(specs):
        ns[f"default{i}"] = defaults[i]
        ns[f"spec{i}"] = spec
        lines.append(f"    x = v.{fname}")
        if defaults[i] is not None:
            lines.append(f"    if x == default{i}: x = None")
        lines.append("    if x is None:")
        if spec.mandatory:
            lines.append(f"        raise EncodeError('{name}.{fname} is mandatory')")
        else:
            lines.append("        body.append(0x40)")
        lines.append("    else:")
        kind = spec.kind
        if spec.multiple:
            stmt = f"encode_multiple(x, spec{i}, body)"
        elif spec.enum is not None and kind in ("symbol", "string"):
            stmt = _INLINE_ENCODE[kind].replace("(x,", "(x.value if isinstance(x, ENUM) else x,")
            ns["ENUM"] = enum.Enum
        elif spec.requires == "message-id":
            stmt = "encode_message_id(x, body)"
        elif isinstance(kind, str) and kind in _INLINE_ENCODE:
            stmt = _INLINE_ENCODE[kind]
        else:
            stmt = "encode_into(x, body)"
        lines.append(_indent(stmt, 8))
        lines.append(f"        n = {i + 1}; keep = len(body)")
    lines += [
        "    del body[keep:]",
        "    out += HEAD",
        "    if n == 0:",
        "        out.append(0x45)",
        "    elif keep < 255:",
        "        out += pack_BBB(0xC0, keep + 1, n); out += body",
        "    else:",
        "        out += pack_BII(0xD0, keep + 4, n); out += body",
    ]
    src = "\n".join(lines)
    exec(compile(src, f"<encoder {name}>", "exec"), ns)
    return ns["encode_composite"]  # type: ignore[no-any-return]


def _encode_multiple(x: tuple[Any, ...], spec: FieldSpec, out: bytearray) -> None:
    kind = spec.kind
    assert isinstance(kind, str), "multiple fields are declared with a primitive kind"
    items = [i.value if isinstance(i, enum.Enum) else i for i in x]
    encoder.encode_into(Array(_PRIMITIVE_KINDS[kind], items), out)


def _encode_message_id(x: Any, out: bytearray) -> None:
    """message-id fields (core spec 3.2.11-3.2.14): an int is a ulong, never a long."""
    if type(x) is int:
        encoder.enc_ulong(x, out)  # a negative one fails in struct, as an EncodeError
    else:
        encoder.encode_into(x, out)


def unchecked(cls: type[T]) -> Callable[..., T]:
    """A constructor for ``cls`` that skips validation and converters: for the engine's own
    frames, whose field values it has already checked. Takes the fields as keywords; the
    ones left out get their defaults."""
    fields = attrs.fields(cls)  # type: ignore[arg-type]
    ns: dict[str, Any] = {"cls": cls, "new": object.__new__}
    params = []
    body = ["    o = new(cls)"]
    for i, f in enumerate(fields):
        ns[f"d{i}"] = None if f.default is attrs.NOTHING else f.default
        ns[f"set{i}"] = getattr(cls, f.name).__set__
        params.append(f"{f.alias}=d{i}")
        body.append(f"    set{i}(o, {f.alias})")
    src = f"def make(*, {', '.join(params)}):\n" + "\n".join(body) + "\n    return o\n"
    exec(compile(src, f"<unchecked {cls.__name__}>", "exec"), ns)
    return ns["make"]  # type: ignore[no-any-return]


def composite(
    code: int, name: str, *, provides: Iterable[str] = ()
) -> Callable[[type[T]], type[T]]:
    """Class decorator: make an attrs class a composite AMQP type with descriptor ``code``
    (``(domain << 32) | id``) and symbolic descriptor ``name`` (core spec 1.4, 1.5)."""

    def wrap(cls: type[T]) -> type[T]:
        fields = attrs.fields(cls)  # type: ignore[arg-type]
        specs = tuple((f.name, f.metadata["amqp"]) for f in fields)
        defaults = [None if f.default is attrs.NOTHING else f.default for f in fields]
        cls.DESCRIPTOR_CODE = code  # type: ignore[attr-defined]
        cls.DESCRIPTOR_NAME = name  # type: ignore[attr-defined]
        cls._amqp_specs = specs  # type: ignore[attr-defined]
        for archetype in provides:
            _providers(archetype).add(cls)
        encoder.register_encoder(cls, _gen_encoder(cls, specs, defaults, code))
        decoder.register_described(code, name, _gen_decoder(cls, specs, defaults))
        return cls

    return wrap


_RESTRICTED_ENCODERS: dict[str, encoder.Encoder] = {
    "binary": encoder.enc_binary,
    "list": encoder.enc_list,
    "map": encoder.enc_map,
    "annotations": encoder.enc_symbol_keyed_map,
    "*": encoder.encode_into,
}


def restricted(
    code: int, name: str, kind: str, *, provides: Iterable[str] = ()
) -> Callable[[type[T]], type[T]]:
    """Class decorator for a described restricted type with one ``value`` field (the message
    sections of core spec 3.2: data, amqp-sequence, amqp-value, the annotation maps)."""

    def wrap(cls: type[T]) -> type[T]:
        head = bytes((0x00, 0x53, code))
        cls.DESCRIPTOR_CODE = code  # type: ignore[attr-defined]
        cls.DESCRIPTOR_NAME = name  # type: ignore[attr-defined]
        for archetype in provides:
            _providers(archetype).add(cls)
        value_encoder = _RESTRICTED_ENCODERS[kind]
        spec = FieldSpec(kind)
        setter = cls.value.__set__  # type: ignore[attr-defined]
        new = object.__new__
        table = decoder.DECODERS

        def encode_restricted(v: Any, out: bytearray) -> None:
            out += head
            if v.value is None and kind in ("map", "annotations"):
                out.append(0x40)  # a null map, as decode_restricted keeps it
            else:
                value_encoder(v.value, out)

        def decode_restricted(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
            value, pos = table[buf[pos]](buf, pos + 1, depth)
            # A null annotation or property map is read as "no entries" by some peers;
            # we keep it as None rather than refuse it. Other kinds must have their type.
            if kind != "*" and not (value is None and kind in ("map", "annotations")):
                value = _check_decoded_one(cls.__name__, "value", spec, value, pos)
            o = new(cls)
            setter(o, value)
            return o, pos

        encoder.register_encoder(cls, encode_restricted)
        decoder.register_described(code, name, decode_restricted)
        return cls

    return wrap
