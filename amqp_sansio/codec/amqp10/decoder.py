"""Decoding AMQP type-system bytes into Python values (core spec 1.2 to 1.6).

The decoder is a table of 256 functions indexed by format code. Each takes the buffer, the
position just after the constructor byte and the nesting depth still allowed, and returns
``(value, next_position)``. Sizes and counts are checked against the bytes that are really
there before anything is allocated, so no input makes the decoder allocate more than a small
multiple of its own length; every failure is a :class:`~amqp_sansio.DecodeError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from ...errors import DecodeError
from .types import (
    AMQPType,
    AMQPValue,
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

__all__ = ["DEFAULT_MAX_DEPTH", "decode", "decode_from", "register_described"]

#: How deeply lists, maps, arrays and described values may nest unless the caller says.
DEFAULT_MAX_DEPTH = 64

Decoder = Callable[[bytes, int, int], tuple[Any, int]]

unpack_I = struct.Struct(">I").unpack_from
unpack_II = struct.Struct(">II").unpack_from
unpack_Q = struct.Struct(">Q").unpack_from
unpack_H = struct.Struct(">H").unpack_from
unpack_i = struct.Struct(">i").unpack_from
unpack_q = struct.Struct(">q").unpack_from
unpack_h = struct.Struct(">h").unpack_from
unpack_b = struct.Struct(">b").unpack_from
unpack_f = struct.Struct(">f").unpack_from
unpack_d = struct.Struct(">d").unpack_from
_new_int = int.__new__
_new_str = str.__new__
_new_float = float.__new__


def truncated(pos: int) -> DecodeError:
    return DecodeError(
        "input ends inside a value (truncated or a size larger than the data)", offset=pos
    )


def too_deep(pos: int) -> DecodeError:
    return DecodeError("values nested deeper than the limit", offset=pos)


# -- fixed-width values -----------------------------------------------------------------


def _null(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return None, pos


def _true(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return True, pos


def _false(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return False, pos


def _boolean(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    b = buf[pos]
    if b == 1:
        return True, pos + 1
    if b == 0:
        return False, pos + 1
    raise DecodeError(f"boolean octet must be 0x00 or 0x01, got {b:#04x}", offset=pos)


def _ubyte(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(UByte, buf[pos]), pos + 1


def _ushort(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(UShort, unpack_H(buf, pos)[0]), pos + 2


def _uint(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(UInt, unpack_I(buf, pos)[0]), pos + 4


def _smalluint(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(UInt, buf[pos]), pos + 1


def _uint0(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(UInt, 0), pos


def _ulong(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(ULong, unpack_Q(buf, pos)[0]), pos + 8


def _smallulong(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(ULong, buf[pos]), pos + 1


def _ulong0(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(ULong, 0), pos


def _byte(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(Byte, unpack_b(buf, pos)[0]), pos + 1


def _short(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(Short, unpack_h(buf, pos)[0]), pos + 2


def _int(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(Int, unpack_i(buf, pos)[0]), pos + 4


def _smallint(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(Int, unpack_b(buf, pos)[0]), pos + 1


def _long(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return unpack_q(buf, pos)[0], pos + 8


def _smalllong(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return unpack_b(buf, pos)[0], pos + 1


def _float(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_float(Float, unpack_f(buf, pos)[0]), pos + 4


def _double(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return unpack_d(buf, pos)[0], pos + 8


def _decimal32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return Decimal32(unpack_I(buf, pos)[0]), pos + 4


def _decimal64(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return Decimal64(unpack_Q(buf, pos)[0]), pos + 8


def _decimal128(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 16
    if end > len(buf):
        raise truncated(pos)
    return Decimal128(int.from_bytes(buf[pos:end], "big")), end


def _char(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    cp = unpack_I(buf, pos)[0]
    if cp > 0x10FFFF or 0xD800 <= cp <= 0xDFFF:
        raise DecodeError(f"char {cp:#x} is not a Unicode scalar value", offset=pos)
    return _new_str(Char, chr(cp)), pos + 4


def _timestamp(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _new_int(Timestamp, unpack_q(buf, pos)[0]), pos + 8


def _uuid(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 16
    if end > len(buf):
        raise truncated(pos)
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


# -- variable-width values ----------------------------------------------------------------


def _vbin8(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 1 + buf[pos]
    if end > len(buf):
        raise truncated(pos)
    return buf[pos + 1 : end], end


def _vbin32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 4 + unpack_I(buf, pos)[0]
    if end > len(buf):
        raise truncated(pos)
    return buf[pos + 4 : end], end


def _str8(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 1 + buf[pos]
    if end > len(buf):
        raise truncated(pos)
    return buf[pos + 1 : end].decode("utf-8"), end


def _str32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 4 + unpack_I(buf, pos)[0]
    if end > len(buf):
        raise truncated(pos)
    return buf[pos + 4 : end].decode("utf-8"), end


def _sym8(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 1 + buf[pos]
    if end > len(buf):
        raise truncated(pos)
    return _new_str(Symbol, buf[pos + 1 : end].decode("ascii")), end


def _sym32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    end = pos + 4 + unpack_I(buf, pos)[0]
    if end > len(buf):
        raise truncated(pos)
    return _new_str(Symbol, buf[pos + 4 : end].decode("ascii")), end


# -- compound values ----------------------------------------------------------------------


def _list0(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return [], pos


def _list_body(buf: bytes, pos: int, end: int, count: int, depth: int) -> tuple[Any, int]:
    if end > len(buf):
        raise truncated(pos)
    if count > end - pos:
        raise DecodeError("list count larger than its size allows", offset=pos)
    if depth <= 0:
        raise too_deep(pos)
    depth -= 1
    out: list[Any] = []
    append = out.append
    table = DECODERS
    for _ in range(count):
        v, pos = table[buf[pos]](buf, pos + 1, depth)
        append(v)
    if pos != end:
        raise DecodeError("list contents do not fill its declared size", offset=pos)
    return out, pos


def _list8(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _list_body(buf, pos + 2, pos + 1 + buf[pos], buf[pos + 1], depth)


def _list32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    size, count = unpack_II(buf, pos)
    if size < 4:
        raise DecodeError("list32 size smaller than its count field", offset=pos)
    return _list_body(buf, pos + 8, pos + 4 + size, count, depth)


def _map_body(buf: bytes, pos: int, end: int, count: int, depth: int) -> tuple[Any, int]:
    L = len(buf)
    if end > L or count > end - pos or count & 1 or depth <= 0:
        raise _map_header_error(L, pos, end, count, depth)
    depth -= 1
    out: dict[Any, Any] = {}
    table = DECODERS
    for _ in range(count >> 1):
        at = pos
        c = buf[pos]
        if c == 0xA1:  # str8 keys are by far the most common: read them inline
            e = pos + 2 + buf[pos + 1]
            if e > L:
                raise truncated(pos)
            k: Any = buf[pos + 2 : e].decode("utf-8")
            pos = e
        else:
            k, pos = table[c](buf, pos + 1, depth)
        c = buf[pos]
        if c == 0xA1:  # and values are mostly short strings, booleans and small longs
            e = pos + 2 + buf[pos + 1]
            if e > L:
                raise truncated(pos)
            v: Any = buf[pos + 2 : e].decode("utf-8")
            pos = e
        elif c == 0x41:
            v = True
            pos += 1
        elif c == 0x42:
            v = False
            pos += 1
        elif c == 0x55:
            v = unpack_b(buf, pos + 1)[0]
            pos += 2
        else:
            v, pos = table[c](buf, pos + 1, depth)
        try:
            out[k] = v
        except TypeError:
            out[_hashable_key(k, at)] = v
    if len(out) != count >> 1 or pos != end:
        if len(out) != count >> 1:
            raise DecodeError("a map key appears twice", offset=end)
        raise DecodeError("map contents do not fill its declared size", offset=pos)
    return out, pos


def _map_header_error(size: int, pos: int, end: int, count: int, depth: int) -> DecodeError:
    """What is wrong with a map whose elements start at ``pos`` in bytes of ``size``."""
    if end > size:
        return truncated(pos)
    if count > end - pos:
        return DecodeError("map count larger than its size allows", offset=pos)
    if count & 1:
        return DecodeError("map has an odd number of elements", offset=pos)
    return too_deep(pos)


def _hashable_key(k: Any, at: int) -> Any:
    """A list used as a map key becomes a tuple (it encodes back as the same list)."""
    if isinstance(k, list):
        return tuple(_hashable_key(x, at) for x in k)
    try:
        hash(k)
    except TypeError:
        raise DecodeError(
            f"a map key of type {type(k).__name__} cannot be held in a Python dict", offset=at
        ) from None
    return k


def _map8(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _map_body(buf, pos + 2, pos + 1 + buf[pos], buf[pos + 1], depth)


def _map32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    size, count = unpack_II(buf, pos)
    if size < 4:
        raise DecodeError("map32 size smaller than its count field", offset=pos)
    return _map_body(buf, pos + 8, pos + 4 + size, count, depth)


_ELEMENT_TYPES: dict[int, AMQPType] = {
    0x40: AMQPType.NULL,
    0x56: AMQPType.BOOLEAN,
    0x41: AMQPType.BOOLEAN,
    0x42: AMQPType.BOOLEAN,
    0x50: AMQPType.UBYTE,
    0x60: AMQPType.USHORT,
    0x70: AMQPType.UINT,
    0x52: AMQPType.UINT,
    0x43: AMQPType.UINT,
    0x80: AMQPType.ULONG,
    0x53: AMQPType.ULONG,
    0x44: AMQPType.ULONG,
    0x51: AMQPType.BYTE,
    0x61: AMQPType.SHORT,
    0x71: AMQPType.INT,
    0x54: AMQPType.INT,
    0x81: AMQPType.LONG,
    0x55: AMQPType.LONG,
    0x72: AMQPType.FLOAT,
    0x82: AMQPType.DOUBLE,
    0x74: AMQPType.DECIMAL32,
    0x84: AMQPType.DECIMAL64,
    0x94: AMQPType.DECIMAL128,
    0x73: AMQPType.CHAR,
    0x83: AMQPType.TIMESTAMP,
    0x98: AMQPType.UUID,
    0xA0: AMQPType.BINARY,
    0xB0: AMQPType.BINARY,
    0xA1: AMQPType.STRING,
    0xB1: AMQPType.STRING,
    0xA3: AMQPType.SYMBOL,
    0xB3: AMQPType.SYMBOL,
    0x45: AMQPType.LIST,
    0xC0: AMQPType.LIST,
    0xD0: AMQPType.LIST,
    0xC1: AMQPType.MAP,
    0xD1: AMQPType.MAP,
    0xE0: AMQPType.ARRAY,
    0xF0: AMQPType.ARRAY,
}


#: Element constructors that take no bytes per element (null, true, false, uint0, ulong0,
#: list0), and how many such elements one array may hold.
_ZERO_WIDTH = frozenset((0x40, 0x41, 0x42, 0x43, 0x44, 0x45))
MAX_ZERO_WIDTH_ELEMENTS = 2


def _array_body(buf: bytes, pos: int, end: int, count: int, depth: int) -> tuple[Any, int]:
    if end > len(buf):
        raise truncated(pos)
    if count > end - pos + MAX_ZERO_WIDTH_ELEMENTS:
        # Fail fast, before reading the descriptor. Past this, each element appended either
        # consumes at least a byte or is one of the few zero-width ones checked below.
        raise DecodeError("array count larger than its size allows", offset=pos)
    if depth <= 0:
        raise too_deep(pos)
    depth -= 1
    descriptor = None
    code = buf[pos]
    pos += 1
    if code == 0x00:
        descriptor, pos = DECODERS[buf[pos]](buf, pos + 1, depth)
        code = buf[pos]
        pos += 1
    element_type = _ELEMENT_TYPES.get(code)
    if element_type is None:
        raise DecodeError(f"invalid array element constructor {code:#04x}", offset=pos - 1)
    if count > MAX_ZERO_WIDTH_ELEMENTS and code in _ZERO_WIDTH:
        # These elements take no bytes at all, so no size can bound their number: without
        # a fixed limit a few bytes could claim billions of them.
        raise DecodeError(
            f"an array of zero-width elements ({code:#04x}) holds at most "
            f"{MAX_ZERO_WIDTH_ELEMENTS}, not {count}",
            offset=pos - 1,
        )
    f = DECODERS[code]
    items: list[Any] = []
    append = items.append
    for _ in range(count):
        v, pos = f(buf, pos, depth)
        append(v)
    if pos != end:
        raise DecodeError("array contents do not fill its declared size", offset=pos)
    return Array(element_type, items, descriptor), pos


def _array8(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    return _array_body(buf, pos + 2, pos + 1 + buf[pos], buf[pos + 1], depth)


def _array32(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    size, count = unpack_II(buf, pos)
    if size < 4:
        raise DecodeError("array32 size smaller than its count field", offset=pos)
    return _array_body(buf, pos + 8, pos + 4 + size, count, depth)


# -- described values ---------------------------------------------------------------------

#: Decoders for known descriptors, keyed by the numeric code (int) or the symbolic name (str).
#: Each is called at the constructor of the described value's value.
DESCRIBED: dict[int | str, Decoder] = {}


def register_described(code: int, name: str, decoder: Decoder) -> None:
    """Decode values described by ``code`` (ulong) or ``name`` (symbol) with ``decoder``."""
    DESCRIBED[code] = decoder
    DESCRIBED[name] = decoder


def _described(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if depth <= 0:
        raise too_deep(pos)
    depth -= 1
    c = buf[pos]
    if c == 0x53:
        descriptor: Any = buf[pos + 1]
        pos += 2
        handler = DESCRIBED.get(descriptor)
        if handler is not None:
            return handler(buf, pos, depth)
        descriptor = _new_int(ULong, descriptor)
    else:
        descriptor, pos = DECODERS[c](buf, pos + 1, depth)
        t = type(descriptor)
        if t is ULong or t is Symbol:
            handler = DESCRIBED.get(descriptor)
            if handler is not None:
                return handler(buf, pos, depth)
    value, pos = DECODERS[buf[pos]](buf, pos + 1, depth)
    return Described(descriptor, value), pos


def _invalid(code: int) -> Decoder:
    def fail(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
        raise DecodeError(f"unknown format code {code:#04x}", offset=pos - 1)

    return fail


DECODERS: list[Decoder] = [_invalid(i) for i in range(256)]
for _code, _f in {
    0x00: _described,
    0x40: _null,
    0x41: _true,
    0x42: _false,
    0x56: _boolean,
    0x50: _ubyte,
    0x60: _ushort,
    0x70: _uint,
    0x52: _smalluint,
    0x43: _uint0,
    0x80: _ulong,
    0x53: _smallulong,
    0x44: _ulong0,
    0x51: _byte,
    0x61: _short,
    0x71: _int,
    0x54: _smallint,
    0x81: _long,
    0x55: _smalllong,
    0x72: _float,
    0x82: _double,
    0x74: _decimal32,
    0x84: _decimal64,
    0x94: _decimal128,
    0x73: _char,
    0x83: _timestamp,
    0x98: _uuid,
    0xA0: _vbin8,
    0xB0: _vbin32,
    0xA1: _str8,
    0xB1: _str32,
    0xA3: _sym8,
    0xB3: _sym32,
    0x45: _list0,
    0xC0: _list8,
    0xD0: _list32,
    0xC1: _map8,
    0xD1: _map32,
    0xE0: _array8,
    0xF0: _array32,
}.items():
    DECODERS[_code] = _f

#: The exceptions that malformed input can raise inside the decoders; the entry points turn
#: every one of them into a DecodeError.
DECODE_FAILURES = (IndexError, struct.error, UnicodeDecodeError, RecursionError)


def as_decode_error(exc: BaseException, pos: int) -> DecodeError:
    if isinstance(exc, UnicodeDecodeError):
        return DecodeError(f"invalid text: {exc.reason}", offset=pos)
    if isinstance(exc, RecursionError):
        return too_deep(pos)
    return truncated(pos)


def _as_bytes(data: bytes | bytearray | memoryview) -> bytes:
    if type(data) is bytes:
        return data
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    raise TypeError(f"decode takes bytes-like data, not {type(data).__name__}")


def decode_from(
    data: bytes | bytearray | memoryview, offset: int = 0, *, max_depth: int = DEFAULT_MAX_DEPTH
) -> tuple[AMQPValue, int]:
    """Decode the one value that starts at ``offset``; return it with the offset after it.

    This is the incremental form: the frame parser uses it to read a performative and find
    where the payload starts.
    """
    buf = _as_bytes(data)
    if offset < 0:
        raise ValueError(f"offset must not be negative, got {offset}")
    if offset >= len(buf):
        raise truncated(offset)
    try:
        return DECODERS[buf[offset]](buf, offset + 1, max_depth)
    except DECODE_FAILURES as exc:
        raise as_decode_error(exc, offset) from None


def decode(
    data: bytes | bytearray | memoryview, *, max_depth: int = DEFAULT_MAX_DEPTH
) -> AMQPValue:
    """Decode exactly one AMQP value; trailing bytes are an error.

    Raises :class:`~amqp_sansio.DecodeError` (condition ``amqp:decode-error``) for anything
    that is not one whole, valid value.
    """
    buf = _as_bytes(data)
    value, end = decode_from(buf, 0, max_depth=max_depth)
    if end != len(buf):
        raise DecodeError(f"{len(buf) - end} trailing bytes after the value", offset=end)
    return value
