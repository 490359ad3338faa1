"""The AMQP 0-9-1 data types (0-9-1 spec, section 4.2.5 "AMQP data fields") and field tables
and arrays as RabbitMQ and the Python clients write them.

Method arguments and content properties use the domain types: ``octet``, ``short``,
``long``, ``longlong`` (unsigned, big-endian), ``bit`` (packed eight to an octet, low bit
first), ``shortstr`` (an octet length and at most 255 octets; a :class:`str` here, UTF-8),
``longstr`` (a 32-bit length and octets; :class:`bytes`), ``timestamp`` (64-bit seconds
since the epoch; :class:`Timestamp`) and ``table``. The method classes compile their own
encoders from these (:mod:`amqp_sansio.definitions.amqp091.methods`); this module does the tables.

Field tables and arrays follow RabbitMQ's reading of the grammar (its "AMQP 0-9-1 errata",
section 3 "Field types"), which is what RabbitMQ, pika, pamqp and py-amqp put on the wire,
rather than the spec's own type letters:

=====  ======================  =============================================
tag    wire                    Python (decoded; encoded from)
=====  ======================  =============================================
``t``  octet 0 or 1            :class:`bool`
``b``  signed 8-bit            :class:`int` (plain ``int`` encodes as the
``s``  signed 16-bit           smallest of ``b``, ``s``, ``I``, ``l``; a value
``I``  signed 32-bit           read from a wider tag than that comes back as
``l``  signed 64-bit           :class:`Int16`, :class:`Int32`, :class:`Int64`)
``B``  unsigned 8-bit          :class:`UInt8`
``u``  unsigned 16-bit         :class:`UInt16`
``i``  unsigned 32-bit         :class:`UInt32`
``f``  IEEE 754 single         :class:`Float32`
``d``  IEEE 754 double         :class:`float`
``D``  scale octet, signed     :class:`decimal.Decimal`
       32-bit value
``S``  longstr                 :class:`str` (UTF-8); :class:`bytes` when the
                               octets are not UTF-8 (``bytes`` encode as ``S``)
``x``  32-bit length, octets   :class:`bytearray`
``T``  unsigned 64-bit secs    :class:`Timestamp` (``datetime`` encodes too)
``F``  nested table            :class:`dict`
``A``  32-bit length, values   :class:`list`
``V``  nothing                 ``None``
=====  ======================  =============================================

Decoding a value and encoding it again gives the same octets (the typed wrappers keep the
tag), but for a table with a key twice, which keeps the last. Decoding is bounded and
strict as the 1.0 decoder is: lengths are checked against the bytes there are before
anything is sliced (nothing larger than the input is allocated), nesting is limited to
:data:`MAX_DEPTH` tables and arrays, and bad input raises
:class:`~amqp_sansio.codec.amqp091.errors.TruncatedError` (reply code 501) when the bytes end
inside a value or :class:`~amqp_sansio.codec.amqp091.errors.DecodeError` (502) for an illegal
one (an unknown tag, invalid UTF-8 in a key, a boolean other than 0 or 1).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeAlias

from .errors import DecodeError, EncodeError, TruncatedError

__all__ = [
    "MAX_DEPTH",
    "Bit",
    "Octet",
    "Short",
    "Long",
    "LongLong",
    "ShortStr",
    "LongStr",
    "FieldArray",
    "FieldTable",
    "FieldValue",
    "Float32",
    "Int16",
    "Int32",
    "Int64",
    "Timestamp",
    "UInt8",
    "UInt16",
    "UInt32",
    "decode_table",
    "encode_table",
]

#: How deep tables and arrays may nest (the outermost table is depth 1).
MAX_DEPTH = 64


class UInt8(int):
    """An integer sent as field type ``B`` (unsigned 8-bit)."""

    __slots__ = ()


class Int16(int):
    """An integer sent as field type ``s`` (signed 16-bit), whatever its size."""

    __slots__ = ()


class UInt16(int):
    """An integer sent as field type ``u`` (unsigned 16-bit)."""

    __slots__ = ()


class Int32(int):
    """An integer sent as field type ``I`` (signed 32-bit), whatever its size."""

    __slots__ = ()


class UInt32(int):
    """An integer sent as field type ``i`` (unsigned 32-bit)."""

    __slots__ = ()


class Int64(int):
    """An integer sent as field type ``l`` (signed 64-bit), whatever its size."""

    __slots__ = ()


class Float32(float):
    """A float sent as field type ``f`` (IEEE 754 single precision; plain floats are ``d``)."""

    __slots__ = ()


class Timestamp(int):
    """A ``timestamp`` (0-9-1 spec 4.2.5.4): whole seconds since the epoch, unsigned 64-bit.

    >>> import datetime
    >>> from amqp_sansio.codec.amqp091 import Timestamp
    >>> Timestamp.from_datetime(datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc))
    Timestamp(1704067200)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Timestamp({int(self)})"

    @classmethod
    def from_datetime(cls, value: datetime.datetime) -> Timestamp:
        """Whole seconds of ``value`` (a naive datetime is taken as UTC)."""
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return cls(int(value.timestamp()))

    def to_datetime(self) -> datetime.datetime:
        """This time as an aware UTC datetime (raises OverflowError/ValueError past year 9999)."""
        return datetime.datetime.fromtimestamp(int(self), datetime.timezone.utc)


FieldValue: TypeAlias = (
    bool
    | int
    | float
    | Decimal
    | str
    | bytes
    | bytearray
    | datetime.datetime
    | list["FieldValue"]
    | dict[str, "FieldValue"]
    | None
)
FieldTable: TypeAlias = dict[str, FieldValue]
FieldArray: TypeAlias = list[FieldValue]

# The domain types of method arguments and properties, as the method classes annotate their
# fields: the annotation names the wire type (:mod:`amqp_sansio.definitions.amqp091.methods` reads
# it).
#: ``bit``: one bit, packed with the bits next to it.
Bit = bool
#: ``octet``: unsigned 8-bit.
Octet = int
#: ``short``: unsigned 16-bit.
Short = int
#: ``long``: unsigned 32-bit.
Long = int
#: ``longlong``: unsigned 64-bit.
LongLong = int
#: ``shortstr``: at most 255 octets of UTF-8.
ShortStr = str
#: ``longstr``: octets, 32-bit length.
LongStr = bytes

_b = struct.Struct(">b")
_B = struct.Struct(">B")
_s = struct.Struct(">h")
_u = struct.Struct(">H")
_I = struct.Struct(">i")
_i = struct.Struct(">I")
_l = struct.Struct(">q")
_Q = struct.Struct(">Q")
_f = struct.Struct(">f")
_d = struct.Struct(">d")
_D = struct.Struct(">Bi")

_pack_L = _i.pack
_unpack_L = _i.unpack_from
_unpack_I = _I.unpack_from

# -- encoding -------------------------------------------------------------------------------


def encode_table(table: FieldTable) -> bytes:
    """A field table's octets: its 32-bit length, then each key (shortstr) and value.

    >>> from amqp_sansio.amqp091 import encode_table
    >>> encode_table({"a": 1, "b": "x"})
    b'\\x00\\x00\\x00\\x0c\\x01ab\\x01\\x01bS\\x00\\x00\\x00\\x01x'
    """
    parts: list[bytes] = []
    try:
        _encode_table(parts, table, 1)
    except (struct.error, OverflowError, UnicodeEncodeError) as exc:
        raise EncodeError(f"cannot encode field table: {exc}") from exc
    return b"".join(parts)


def _encode_table(parts: list[bytes], table: FieldTable, depth: int) -> None:
    if type(table) is not dict and not isinstance(table, dict):
        raise EncodeError(f"a field table must be a dict, not {type(table).__name__}")
    if depth > MAX_DEPTH:
        raise EncodeError(f"field tables and arrays nest deeper than {MAX_DEPTH}")
    at = len(parts)
    parts.append(b"")
    for key, value in table.items():
        if type(key) is not str:
            raise EncodeError(f"a field table key must be a str, not {type(key).__name__}")
        name = key.encode()
        if len(name) > 255:
            raise EncodeError(f"field table key longer than 255 octets: {key[:40]!r}...")
        parts.append(_B.pack(len(name)) + name)
        _encode_value(parts, value, depth)
    parts[at] = _pack_L(sum(len(p) for p in parts[at + 1 :]))


def _encode_array(parts: list[bytes], array: FieldArray, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise EncodeError(f"field tables and arrays nest deeper than {MAX_DEPTH}")
    at = len(parts)
    parts.append(b"")
    for value in array:
        _encode_value(parts, value, depth)
    parts[at] = _pack_L(sum(len(p) for p in parts[at + 1 :]))


def _encode_int(value: int) -> bytes:
    if -0x80 <= value < 0x80:
        return b"b" + _b.pack(value)
    if -0x8000 <= value < 0x8000:
        return b"s" + _s.pack(value)
    if -0x80000000 <= value < 0x80000000:
        return b"I" + _I.pack(value)
    return b"l" + _l.pack(value)


def _encode_decimal(value: Decimal) -> bytes:
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise EncodeError(f"a field table decimal must be finite, not {value}")
    number = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if exponent > 0:
        number *= 10**exponent
        exponent = 0
    if -exponent > 255 or not -0x80000000 <= number < 0x80000000:
        raise EncodeError(f"decimal {value} does not fit a scale octet and a signed 32-bit value")
    return b"D" + _D.pack(-exponent, number)


def _encode_str(value: str) -> bytes:
    data = value.encode()
    return b"S" + _pack_L(len(data)) + data


def _encode_bytes(value: bytes) -> bytes:
    return b"S" + _pack_L(len(value)) + value


def _encode_bytearray(value: bytearray) -> bytes:
    return b"x" + _pack_L(len(value)) + bytes(value)


def _encode_timestamp(value: int) -> bytes:
    return b"T" + _Q.pack(value)


#: Scalars by exact type: each gives its tagged octets.
_SCALARS: dict[type, Callable[[Any], bytes]] = {
    bool: lambda v: b"t\x01" if v else b"t\x00",
    int: _encode_int,
    str: _encode_str,
    bytes: _encode_bytes,
    float: lambda v: b"d" + _d.pack(v),
    type(None): lambda v: b"V",
    Decimal: _encode_decimal,
    bytearray: _encode_bytearray,
    Timestamp: _encode_timestamp,
    UInt8: lambda v: b"B" + _B.pack(v),
    Int16: lambda v: b"s" + _s.pack(v),
    UInt16: lambda v: b"u" + _u.pack(v),
    Int32: lambda v: b"I" + _I.pack(v),
    UInt32: lambda v: b"i" + _i.pack(v),
    Int64: lambda v: b"l" + _l.pack(v),
    Float32: lambda v: b"f" + _f.pack(v),
    datetime.datetime: lambda v: _encode_timestamp(Timestamp.from_datetime(v)),
}


def _encode_value(parts: list[bytes], value: FieldValue, depth: int) -> None:
    encoder = _SCALARS.get(type(value))
    if encoder is not None:
        parts.append(encoder(value))
    elif isinstance(value, dict):
        parts.append(b"F")
        _encode_table(parts, value, depth + 1)
    elif isinstance(value, list | tuple):
        parts.append(b"A")
        _encode_array(parts, list(value), depth + 1)
    else:
        for kind in _SCALARS:  # a subclass of a supported type (an IntEnum, a str subclass)
            if isinstance(value, kind) and kind is not type(None):
                parts.append(_SCALARS[kind](value))
                return
        raise EncodeError(f"{type(value).__name__} cannot go in a field table")


# -- decoding -------------------------------------------------------------------------------


def decode_table(data: bytes) -> FieldTable:
    """The field table ``data`` holds, whole (trailing octets are an error).

    >>> from amqp_sansio.amqp091 import decode_table
    >>> decode_table(b'\\x00\\x00\\x00\\x0c\\x01ab\\x01\\x01bS\\x00\\x00\\x00\\x01x')
    {'a': 1, 'b': 'x'}
    """
    data = bytes(data)
    try:
        table, offset = read_table(data, 0)
    except (struct.error, IndexError) as exc:
        raise TruncatedError("field table ends early", offset=len(data)) from exc
    if offset != len(data):
        raise DecodeError(f"{len(data) - offset} octets after the field table", offset=offset)
    return table


def read_table(buf: bytes, offset: int, depth: int = 1) -> tuple[FieldTable, int]:
    """The field table at ``offset`` in ``buf`` and the offset after it.

    ``buf`` is :class:`bytes` (slices of it are the strings). Raises :class:`DecodeError`,
    :class:`TruncatedError`, or ``struct.error`` /
    ``IndexError`` when ``buf`` ends inside the length (callers that decode a whole frame
    turn those into :class:`TruncatedError` in one place).
    """
    if depth > MAX_DEPTH:
        raise DecodeError(f"field tables and arrays nest deeper than {MAX_DEPTH}", offset=offset)
    (size,) = _unpack_L(buf, offset)
    offset += 4
    end = offset + size
    if end > len(buf):
        raise TruncatedError(
            f"field table of {size} octets, {len(buf) - offset} left", offset=offset
        )
    table: FieldTable = {}
    value: FieldValue
    while offset < end:
        n = buf[offset]
        offset += 1
        key_end = offset + n
        if key_end >= end:
            raise TruncatedError("field table ends inside a key", offset=offset)
        try:
            key = buf[offset:key_end].decode()
        except UnicodeDecodeError as exc:
            raise DecodeError("field table key is not UTF-8", offset=offset) from exc
        tag = buf[key_end]
        offset = key_end + 1
        # The usual tags inline (headers and arguments are mostly these); the rest by table.
        if tag == 83:  # S
            (size,) = _unpack_L(buf, offset)
            offset += 4
            data = buf[offset : offset + size]
            offset += size
            try:
                value = data.decode()
            except UnicodeDecodeError:
                value = data
        elif tag == 73:  # I
            (number,) = _unpack_I(buf, offset)
            value = Int32(number) if -0x8000 <= number < 0x8000 else number
            offset += 4
        elif tag == 116:  # t
            octet = buf[offset]
            if octet > 1:
                raise DecodeError(f"boolean field of value {octet}, not 0 or 1", offset=offset)
            value = octet == 1
            offset += 1
        else:
            reader = _READERS.get(tag)
            if reader is None:
                raise DecodeError(f"unknown field type {bytes([tag])!r}", offset=key_end)
            value, offset = reader(buf, offset, depth)
        if offset > end:
            raise TruncatedError("a field value runs past its table", offset=key_end)
        table[key] = value
    return table, offset


def _read_array(buf: bytes, offset: int, depth: int) -> tuple[FieldArray, int]:
    if depth > MAX_DEPTH:
        raise DecodeError(f"field tables and arrays nest deeper than {MAX_DEPTH}", offset=offset)
    (size,) = _unpack_L(buf, offset)
    offset += 4
    end = offset + size
    if end > len(buf):
        raise TruncatedError(
            f"field array of {size} octets, {len(buf) - offset} left", offset=offset
        )
    array: FieldArray = []
    while offset < end:
        value, offset = _read_value(buf, offset, end, depth)
        array.append(value)
    return array, offset


def _read_value(buf: bytes, offset: int, end: int, depth: int) -> tuple[FieldValue, int]:
    """The tagged value at ``offset``, which must end by ``end`` (its container's end)."""
    tag = buf[offset]
    offset += 1
    reader = _READERS.get(tag)
    if reader is None:
        raise DecodeError(f"unknown field type {bytes([tag])!r}", offset=offset - 1)
    value, after = reader(buf, offset, depth)
    if after > end:
        raise TruncatedError("a field value runs past its table or array", offset=offset)
    return value, after


def _read_longstr(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    (size,) = _unpack_L(buf, offset)
    offset += 4
    end = offset + size
    if end > len(buf):
        raise TruncatedError(
            f"long string of {size} octets, {len(buf) - offset} left", offset=offset
        )
    data = buf[offset:end]
    try:
        return data.decode(), end
    except UnicodeDecodeError:
        return bytes(data), end


def _read_bytearray(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    (size,) = _unpack_L(buf, offset)
    offset += 4
    end = offset + size
    if end > len(buf):
        raise TruncatedError(
            f"byte array of {size} octets, {len(buf) - offset} left", offset=offset
        )
    return bytearray(buf[offset:end]), end


def _read_bool(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    octet = buf[offset]
    if octet > 1:
        raise DecodeError(f"boolean field of value {octet}, not 0 or 1", offset=offset)
    return octet == 1, offset + 1


def _read_int8(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    return _b.unpack_from(buf, offset)[0], offset + 1


def _read_int16(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    (v,) = _s.unpack_from(buf, offset)
    return (Int16(v) if -0x80 <= v < 0x80 else v), offset + 2


def _read_int32(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    (v,) = _I.unpack_from(buf, offset)
    return (Int32(v) if -0x8000 <= v < 0x8000 else v), offset + 4


def _read_int64(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    (v,) = _l.unpack_from(buf, offset)
    return (Int64(v) if -0x80000000 <= v < 0x80000000 else v), offset + 8


def _fixed(kind: type, codec: struct.Struct):  # type: ignore[no-untyped-def]
    size = codec.size
    unpack = codec.unpack_from

    def read(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
        return kind(unpack(buf, offset)[0]), offset + size

    return read


def _read_double(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    return _d.unpack_from(buf, offset)[0], offset + 8


def _read_decimal(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    scale, value = _D.unpack_from(buf, offset)
    return Decimal(value).scaleb(-scale), offset + 5


def _read_void(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    return None, offset


def _read_nested_table(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    return read_table(buf, offset, depth + 1)


def _read_nested_array(buf: bytes, offset: int, depth: int) -> tuple[FieldValue, int]:
    return _read_array(buf, offset, depth + 1)


_READERS = {
    ord("S"): _read_longstr,
    ord("I"): _read_int32,
    ord("t"): _read_bool,
    ord("l"): _read_int64,
    ord("b"): _read_int8,
    ord("s"): _read_int16,
    ord("F"): _read_nested_table,
    ord("A"): _read_nested_array,
    ord("d"): _read_double,
    ord("T"): _fixed(Timestamp, _Q),
    ord("V"): _read_void,
    ord("D"): _read_decimal,
    ord("x"): _read_bytearray,
    ord("B"): _fixed(UInt8, _B),
    ord("u"): _fixed(UInt16, _u),
    ord("i"): _fixed(UInt32, _i),
    ord("f"): _fixed(Float32, _f),
}
