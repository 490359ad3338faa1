"""Encoding Python values as AMQP type-system bytes (core spec 1.2 to 1.6).

Every value gets the smallest encoding its type allows. Encoders append to a ``bytearray``;
a container encodes its body into a scratch buffer first and then writes the size prefix.
Composite types (performatives, sections, outcomes) register their own encoders through
:func:`register_encoder`, so this module knows nothing of them.
"""

from __future__ import annotations

import reprlib
import struct
import uuid
from collections.abc import Callable
from typing import Any

from ...errors import EncodeError
from .decoder import MAX_ZERO_WIDTH_ELEMENTS
from .types import (
    AMQPType,
    Array,
    Byte,
    Char,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Float,
    Int,
    Short,
    Symbol,
    Timestamp,
    UByte,
    UInt,
    ULong,
    UShort,
)

__all__ = ["encode", "encode_into", "register_encoder"]

Encoder = Callable[[Any, bytearray], None]

_BYTES = [bytes((i,)) for i in range(256)]
_pack_I = struct.Struct(">I").pack
_pack_Q = struct.Struct(">Q").pack
_pack_H = struct.Struct(">H").pack
_pack_i = struct.Struct(">i").pack
_pack_q = struct.Struct(">q").pack
_pack_h = struct.Struct(">h").pack
_pack_b = struct.Struct(">b").pack
_pack_f = struct.Struct(">f").pack
_pack_d = struct.Struct(">d").pack
_pack_BI = struct.Struct(">BI").pack
_pack_BII = struct.Struct(">BII").pack
_pack_BBB = struct.Struct(">BBB").pack

# Headers for short values, precomputed: one bytes object per length/value.
_STR8 = [bytes((0xA1, n)) for n in range(256)]
_SYM8 = [bytes((0xA3, n)) for n in range(256)]
_VBIN8 = [bytes((0xA0, n)) for n in range(256)]
_SMALLUINT = [b"\x43"] + [bytes((0x52, n)) for n in range(1, 256)]
_SMALLULONG = [b"\x44"] + [bytes((0x53, n)) for n in range(1, 256)]
_SMALLLONG = {n: bytes((0x55, n & 0xFF)) for n in range(-128, 128)}
_SMALLINT = {n: bytes((0x54, n & 0xFF)) for n in range(-128, 128)}
_UBYTE = [bytes((0x50, n)) for n in range(256)]

_TRUE = b"\x41"
_FALSE = b"\x42"
_NULL = b"\x40"


# Error messages show a bounded repr: a huge or very deep value must not make the error
# itself slow or raise RecursionError.
_short = reprlib.Repr()
_short.maxlevel = 3
_short.maxstring = _short.maxother = 80


def _fail(value: Any, why: str) -> EncodeError:
    shown = _short.repr(value)  # bounded in depth and length, so it cannot recurse far
    return EncodeError(f"cannot encode {type(value).__name__} {shown:.80}: {why}")


# -- scalar encoders: each appends the constructor and the value --------------------------


def _enc_null(v: Any, out: bytearray) -> None:
    out += _NULL


def _enc_bool(v: bool, out: bytearray) -> None:
    out += _TRUE if v else _FALSE


def _enc_long(v: int, out: bytearray) -> None:
    if -128 <= v <= 127:
        out += _SMALLLONG[v]
    elif -0x8000000000000000 <= v <= 0x7FFFFFFFFFFFFFFF:
        out.append(0x81)
        out += _pack_q(v)
    else:
        raise _fail(v, "an int is an AMQP long (64-bit signed); wrap larger values as ULong")


def _enc_ubyte(v: int, out: bytearray) -> None:
    out.append(0x50)
    out.append(v)


def _enc_ushort(v: int, out: bytearray) -> None:
    out.append(0x60)
    out += _pack_H(v)


def enc_uint(v: int, out: bytearray) -> None:
    if 0 <= v < 256:
        out += _SMALLUINT[v]
    else:
        out.append(0x70)
        out += _pack_I(v)


def enc_ulong(v: int, out: bytearray) -> None:
    if 0 <= v < 256:
        out += _SMALLULONG[v]
    else:
        out.append(0x80)
        out += _pack_Q(v)


def _enc_byte(v: int, out: bytearray) -> None:
    out.append(0x51)
    out += _pack_b(v)


def _enc_short(v: int, out: bytearray) -> None:
    out.append(0x61)
    out += _pack_h(v)


def _enc_int(v: int, out: bytearray) -> None:
    if -128 <= v <= 127:
        out += _SMALLINT[v]
    else:
        out.append(0x71)
        out += _pack_i(v)


def _enc_float(v: float, out: bytearray) -> None:
    out.append(0x72)
    out += _pack_f(v)


def _enc_double(v: float, out: bytearray) -> None:
    out.append(0x82)
    out += _pack_d(v)


def _enc_dec32(v: Decimal32, out: bytearray) -> None:
    out.append(0x74)
    out += _pack_I(v.bits)


def _enc_dec64(v: Decimal64, out: bytearray) -> None:
    out.append(0x84)
    out += _pack_Q(v.bits)


def _enc_dec128(v: Decimal128, out: bytearray) -> None:
    out.append(0x94)
    out += v.to_bytes()


def _enc_char(v: str, out: bytearray) -> None:
    out.append(0x73)
    out += _pack_I(ord(v))


def enc_timestamp(v: int, out: bytearray) -> None:
    out.append(0x83)
    out += _pack_q(v)


def _enc_uuid(v: uuid.UUID, out: bytearray) -> None:
    out.append(0x98)
    out += v.bytes


def enc_binary(v: bytes, out: bytearray) -> None:
    n = len(v)
    if n < 256:
        out += _VBIN8[n]
    else:
        out += _pack_BI(0xB0, n)
    out += v


def _enc_binary_view(v: memoryview, out: bytearray) -> None:
    enc_binary(v.tobytes() if v.ndim != 1 or v.itemsize != 1 else v, out)  # type: ignore[arg-type]


def enc_string(v: str, out: bytearray) -> None:
    b = v.encode("utf-8")
    n = len(b)
    if n < 256:
        out += _STR8[n]
    else:
        out += _pack_BI(0xB1, n)
    out += b


def enc_symbol(v: str, out: bytearray) -> None:
    try:
        b = v.encode("ascii")
    except UnicodeEncodeError:
        raise _fail(v, "a symbol must be ASCII") from None
    n = len(b)
    if n < 256:
        out += _SYM8[n]
    else:
        out += _pack_BI(0xB3, n)
    out += b


def _sized(code8: int, code32: int, count: int, body: bytearray | bytes, out: bytearray) -> None:
    """Write a compound (list/map) header and body: the 8-bit form when size and count fit."""
    n = len(body)
    if n < 255 and count < 256:
        out += _pack_BBB(code8, n + 1, count)
    else:
        out += _pack_BII(code32, n + 4, count)
    out += body


def enc_list(v: list[Any] | tuple[Any, ...], out: bytearray) -> None:
    if not v:
        out.append(0x45)
        return
    body = bytearray()
    enc = _ENCODERS
    for item in v:
        f = enc.get(type(item))
        if f is None:
            f = _lookup(item)
        f(item, body)
    _sized(0xC0, 0xD0, len(v), body, out)


def enc_map(v: dict[Any, Any], out: bytearray) -> None:
    body = bytearray()
    enc = _ENCODERS
    for key, item in v.items():
        f = enc.get(type(key))
        if f is None:
            f = _lookup(key)
        f(key, body)
        f = enc.get(type(item))
        if f is None:
            f = _lookup(item)
        f(item, body)
    _sized(0xC1, 0xD1, 2 * len(v), body, out)


def enc_symbol_keyed_map(v: dict[Any, Any], out: bytearray) -> None:
    """A map whose ``str`` keys are sent as symbols (the ``fields`` and ``annotations`` types
    of core spec 2.8.14 and 3.2.10; plain ``int`` keys of annotations are sent as ulong)."""
    body = bytearray()
    enc = _ENCODERS
    for key, item in v.items():
        tk = type(key)
        if tk is str or tk is Symbol:
            enc_symbol(key, body)
        elif tk is int or tk is ULong:
            if key < 0:
                raise _fail(key, "an annotation key must be a symbol or a ulong")
            enc_ulong(key, body)
        else:
            raise _fail(key, "a key here must be a symbol (or a ulong, for annotations)")
        f = enc.get(type(item))
        if f is None:
            f = _lookup(item)
        f(item, body)
    _sized(0xC1, 0xD1, 2 * len(v), body, out)


def _enc_described(v: Described, out: bytearray) -> None:
    out.append(0x00)
    encode_into(v.descriptor, out)
    encode_into(v.value, out)


# -- arrays -------------------------------------------------------------------------------
# Each element type has one or two constructors; all elements share the widest one needed.
# Zero-width encodings (true/false, uint0, list0, ...) are never used for elements.


def _arr_fixed(code: int, pack: Callable[[Any], bytes]) -> Callable[[list[Any]], tuple[int, bytes]]:
    def encode_elements(items: list[Any]) -> tuple[int, bytes]:
        return code, b"".join([pack(x) for x in items])

    return encode_elements


def _arr_small_or_wide(
    small: int, wide: int, lo: int, hi: int, pack_wide: Callable[[Any], bytes]
) -> Callable[[list[Any]], tuple[int, bytes]]:
    def encode_elements(items: list[Any]) -> tuple[int, bytes]:
        if all(lo <= x <= hi for x in items):
            return small, bytes([x & 0xFF for x in items])
        return wide, b"".join([pack_wide(x) for x in items])

    return encode_elements


def _arr_variable(
    small: int, wide: int, to_bytes: Callable[[Any], bytes]
) -> Callable[[list[Any]], tuple[int, bytes]]:
    def encode_elements(items: list[Any]) -> tuple[int, bytes]:
        raw = [to_bytes(x) for x in items]
        if all(len(b) < 256 for b in raw):
            return small, b"".join([_BYTES[len(b)] + b for b in raw])
        return wide, b"".join([_pack_I(len(b)) + b for b in raw])

    return encode_elements


def _utf8(v: str) -> bytes:
    return v.encode("utf-8")


def _ascii(v: str) -> bytes:
    try:
        return v.encode("ascii")
    except UnicodeEncodeError:
        raise _fail(v, "a symbol must be ASCII") from None


def _compound_elements(
    small: int,
    wide: int,
    encode_one: Callable[[Any, bytearray], None],
    count_of: Callable[[Any], int],
) -> Callable[[list[Any]], tuple[int, bytes]]:
    """Lists and maps inside an array: each element is size + count + body, all one width."""

    def encode_elements(items: list[Any]) -> tuple[int, bytes]:
        bodies = []
        for x in items:
            count = count_of(x)  # checks the element's type before encoding it
            scratch = bytearray()
            encode_one(x, scratch)
            bodies.append((count, _strip_compound_header(scratch)))
        if all(len(b) < 255 and c < 256 for c, b in bodies):
            return small, b"".join([bytes((len(b) + 1, c)) + b for c, b in bodies])
        return wide, b"".join([_pack_I(len(b) + 4) + _pack_I(c) + b for c, b in bodies])

    return encode_elements


def _strip_compound_header(encoded: bytearray) -> bytes:
    code = encoded[0]
    if code == 0x45:
        return b""
    if code in (0xC0, 0xC1):
        return bytes(encoded[3:])
    return bytes(encoded[9:])


def _list_count(x: Any) -> int:
    if not isinstance(x, list | tuple):
        raise _fail(x, "an array of lists holds only lists")
    return len(x)


def _map_count(x: Any) -> int:
    if not isinstance(x, dict):
        raise _fail(x, "an array of maps holds only dicts")
    return 2 * len(x)


def _array_elements(items: list[Any]) -> tuple[int, bytes]:
    """An array of arrays: each element is size + count + constructor + elements."""
    bodies = []
    for x in items:
        if not isinstance(x, Array):
            raise _fail(x, "an array of arrays holds only Array values")
        bodies.append((len(x.items), _array_body(x)))
    if all(len(b) < 255 and c < 256 for c, b in bodies):
        return 0xE0, b"".join([bytes((len(b) + 1, c)) + b for c, b in bodies])
    return 0xF0, b"".join([_pack_I(len(b) + 4) + _pack_I(c) + b for c, b in bodies])


def _checked(
    pack: Callable[[Any], bytes], check: Callable[[Any], bool], why: str
) -> Callable[[Any], bytes]:
    def f(x: Any) -> bytes:
        if not check(x):
            raise _fail(x, why)
        return pack(x)

    return f


def _decimal_bytes(cls: type[Decimal32 | Decimal64 | Decimal128]) -> Callable[[Any], bytes]:
    return _checked(lambda x: x.to_bytes(), lambda x: type(x) is cls, f"expected {cls.__name__}")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


_ARRAY_ELEMENTS: dict[AMQPType, Callable[[list[Any]], tuple[int, bytes]]] = {
    AMQPType.BOOLEAN: _arr_fixed(
        0x56,
        _checked(
            lambda x: b"\x01" if x else b"\x00", lambda x: isinstance(x, bool), "expected a bool"
        ),
    ),
    AMQPType.UBYTE: _arr_fixed(0x50, _checked(lambda x: bytes((x,)), _is_int, "expected int")),
    AMQPType.USHORT: _arr_fixed(0x60, _checked(_pack_H, _is_int, "expected int")),
    AMQPType.UINT: _arr_small_or_wide(
        0x52, 0x70, 0, 255, _checked(_pack_I, _is_int, "expected int")
    ),
    AMQPType.ULONG: _arr_small_or_wide(
        0x53, 0x80, 0, 255, _checked(_pack_Q, _is_int, "expected int")
    ),
    AMQPType.BYTE: _arr_fixed(0x51, _checked(_pack_b, _is_int, "expected int")),
    AMQPType.SHORT: _arr_fixed(0x61, _checked(_pack_h, _is_int, "expected int")),
    AMQPType.INT: _arr_small_or_wide(
        0x54, 0x71, -128, 127, _checked(_pack_i, _is_int, "expected int")
    ),
    AMQPType.LONG: _arr_small_or_wide(
        0x55, 0x81, -128, 127, _checked(_pack_q, _is_int, "expected int")
    ),
    AMQPType.FLOAT: _arr_fixed(0x72, _pack_f),
    AMQPType.DOUBLE: _arr_fixed(0x82, _pack_d),
    # A decimal of another width would write the wrong number of bytes: check the type.
    AMQPType.DECIMAL32: _arr_fixed(0x74, _decimal_bytes(Decimal32)),
    AMQPType.DECIMAL64: _arr_fixed(0x84, _decimal_bytes(Decimal64)),
    AMQPType.DECIMAL128: _arr_fixed(0x94, _decimal_bytes(Decimal128)),
    AMQPType.CHAR: _arr_fixed(
        0x73, _checked(lambda x: _pack_I(ord(x)), lambda x: isinstance(x, str), "expected str")
    ),
    AMQPType.TIMESTAMP: _arr_fixed(0x83, _checked(_pack_q, _is_int, "expected int")),
    AMQPType.UUID: _arr_fixed(0x98, lambda x: x.bytes),
    AMQPType.BINARY: _arr_variable(0xA0, 0xB0, bytes),
    AMQPType.STRING: _arr_variable(0xA1, 0xB1, _utf8),
    AMQPType.SYMBOL: _arr_variable(0xA3, 0xB3, _ascii),
    AMQPType.LIST: _compound_elements(0xC0, 0xD0, lambda x, o: enc_list(x, o), _list_count),
    AMQPType.MAP: _compound_elements(0xC1, 0xD1, lambda x, o: enc_map(x, o), _map_count),
    AMQPType.ARRAY: _array_elements,
}


def _array_body(v: Array) -> bytes:
    """count-less body of an array: [descriptor] constructor elements."""
    items = list(v.items)
    prefix = b""
    if v.descriptor is not None:
        scratch = bytearray(b"\x00")
        encode_into(v.descriptor, scratch)
        prefix = bytes(scratch)
    if v.type is AMQPType.NULL:
        if any(x is not None for x in items):
            raise _fail(v, "an array of null holds only None")
        if len(items) > MAX_ZERO_WIDTH_ELEMENTS:
            # Null elements take no bytes, so the decoder bounds their number (see
            # MAX_ZERO_WIDTH_ELEMENTS); never write an array it would refuse.
            raise _fail(v, f"an array of null holds at most {MAX_ZERO_WIDTH_ELEMENTS} items")
        body = prefix + b"\x40"
        return body
    try:
        code, elements = _ARRAY_ELEMENTS[v.type](items)
    except (struct.error, TypeError, AttributeError, OverflowError, ValueError) as exc:
        if isinstance(exc, EncodeError):
            raise
        raise _fail(v, f"an element does not fit the array type {v.type.value}: {exc}") from None
    return prefix + _BYTES[code] + elements


def _enc_array(v: Array, out: bytearray) -> None:
    body = _array_body(v)
    count = len(v.items)
    n = len(body)
    if n < 255 and count < 256:
        out += _pack_BBB(0xE0, n + 1, count)
    else:
        out += _pack_BII(0xF0, n + 4, count)
    out += body


_ENCODERS: dict[type, Encoder] = {
    type(None): _enc_null,
    bool: _enc_bool,
    int: _enc_long,
    float: _enc_double,
    str: enc_string,
    bytes: enc_binary,
    bytearray: enc_binary,
    memoryview: _enc_binary_view,
    uuid.UUID: _enc_uuid,
    list: enc_list,
    tuple: enc_list,
    dict: enc_map,
    UByte: _enc_ubyte,
    UShort: _enc_ushort,
    UInt: enc_uint,
    ULong: enc_ulong,
    Byte: _enc_byte,
    Short: _enc_short,
    Int: _enc_int,
    Float: _enc_float,
    Decimal32: _enc_dec32,
    Decimal64: _enc_dec64,
    Decimal128: _enc_dec128,
    Char: _enc_char,
    Timestamp: enc_timestamp,
    Symbol: enc_symbol,
    Described: _enc_described,
    Array: _enc_array,
}


def _lookup(value: Any) -> Encoder:
    # A subclass (an IntEnum, a str subclass, ...) encodes as its nearest known base.
    for klass in type(value).__mro__[1:]:
        f = _ENCODERS.get(klass)
        if f is not None:
            return f
    raise _fail(value, "no AMQP type for this Python type (see the codec docs for wrappers)")


def register_encoder(cls: type, encoder: Encoder) -> None:
    """Teach the encoder a new Python class (used by the composite types)."""
    _ENCODERS[cls] = encoder


def encode_into(value: object, out: bytearray) -> None:
    """Append the AMQP encoding of ``value`` (an :data:`AMQPValue`) to ``out``."""
    f = _ENCODERS.get(type(value))
    if f is None:
        f = _lookup(value)
    f(value, out)


def encode(value: object) -> bytes:
    """Encode one value with the smallest encoding its AMQP type allows (core spec 1.6).

    ``value`` is an :data:`~amqp_sansio.codec.amqp10.AMQPValue`; it is typed ``object`` because the
    containers are checked as they are written (a ``list[int]`` is as good as a
    ``list[AMQPValue]``), and anything else raises.

    Raises :class:`~amqp_sansio.EncodeError` for a value with no AMQP type, out of its type's
    range, or nested so deeply (or self-referencing) that it cannot be written.
    """
    out = bytearray()
    guarded_encode_into(value, out)
    return bytes(out)


def guarded_encode_into(value: object, out: bytearray) -> None:
    """:func:`encode_into`, with every failure turned into an EncodeError."""
    guarded(encode_into, value, out)


def guarded(encoder: Encoder, value: object, out: bytearray) -> None:
    """Run ``encoder(value, out)``, turning every low-level failure into an EncodeError."""
    try:
        encoder(value, out)
    except EncodeError:
        raise
    except UnicodeEncodeError as exc:
        raise _fail(value, f"text that is not valid Unicode ({exc.reason})") from None
    except (struct.error, OverflowError, ValueError) as exc:
        raise _fail(value, f"out of range for its AMQP type ({exc})") from None
    except (TypeError, AttributeError) as exc:
        raise _fail(value, f"a part of it has the wrong type ({exc})") from None
    except RecursionError:
        raise _fail(value, "nested too deeply, or contains itself") from None
