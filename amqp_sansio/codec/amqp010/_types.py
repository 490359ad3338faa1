"""The AMQP 0-10 primitive and compound types (0-10 spec 3 "Types"; the XML's ``<type>`` list).

Every type has a reader ``(buf, offset, depth) -> (value, offset)`` and a writer
``(out, value, depth) -> None`` that appends to a :class:`bytearray`. Readers check each size
against the bytes left before slicing, so nothing larger than the input is allocated; ``depth``
counts the nesting levels still allowed (maps, lists, arrays), so hostile nesting ends in
:class:`~amqp_sansio.codec.amqp010.errors.DecodeError`, never a ``RecursionError``.
Writers may raise ``struct.error``, ``TypeError``, ``AttributeError``, ``OverflowError`` or
``UnicodeEncodeError`` on a bad value: the public functions turn those into
:class:`~amqp_sansio.codec.amqp010.errors.EncodeError`.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeAlias

import attrs

from .errors import DecodeError, EncodeError, TruncatedError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "Array",
    "Reader",
    "Struct32",
    "TypeCode",
    "Typed",
    "TYPES",
    "Writer",
    "code_of",
    "read_typed",
    "write_typed",
]

#: How many maps, lists and arrays may nest inside each other (the outermost counts as 1).
DEFAULT_MAX_DEPTH = 32

Reader: TypeAlias = Callable[[bytes, int, int], tuple[Any, int]]
Writer: TypeAlias = Callable[[bytearray, Any, int], None]


class TypeCode(enum.IntEnum):
    """The one-octet type codes (0-10 spec 3; the XML's ``<type code=...>``): they tag the
    values of maps, lists and arrays."""

    BIN8 = 0x00
    INT8 = 0x01
    UINT8 = 0x02
    CHAR = 0x04
    BOOLEAN = 0x08
    BIN16 = 0x10
    INT16 = 0x11
    UINT16 = 0x12
    BIN32 = 0x20
    INT32 = 0x21
    UINT32 = 0x22
    FLOAT = 0x23
    CHAR_UTF32 = 0x27
    BIN64 = 0x30
    INT64 = 0x31
    UINT64 = 0x32
    DOUBLE = 0x33
    DATETIME = 0x38
    BIN128 = 0x40
    UUID = 0x48
    BIN256 = 0x50
    BIN512 = 0x60
    BIN1024 = 0x70
    VBIN8 = 0x80
    STR8_LATIN = 0x84
    STR8 = 0x85
    STR8_UTF16 = 0x86
    VBIN16 = 0x90
    STR16_LATIN = 0x94
    STR16 = 0x95
    STR16_UTF16 = 0x96
    VBIN32 = 0xA0
    MAP = 0xA8
    LIST = 0xA9
    ARRAY = 0xAA
    STRUCT32 = 0xAB
    BIN40 = 0xC0
    DEC32 = 0xC8
    BIN72 = 0xD0
    DEC64 = 0xD8
    VOID = 0xF0
    BIT = 0xF1


@attrs.frozen
class Typed:
    """A value with an explicit type code, for a map, list or array entry whose code is not
    the default for its Python type (``Typed(TypeCode.UINT16, 5)``, ``Typed(TypeCode.STR8,
    "a")``). Decoding gives these for such entries, so decoding and encoding again gives the
    same octets."""

    code: TypeCode = attrs.field(converter=TypeCode)
    value: Any


@attrs.frozen
class Array:
    """An ``array`` (0-10 spec 3.2): values of one type, ``code``. A plain list or tuple in a
    map encodes as a ``list``; an ``array`` field accepts both."""

    code: TypeCode = attrs.field(converter=TypeCode)
    items: tuple[Any, ...] = attrs.field(converter=tuple)


@attrs.frozen
class Struct32:
    """A ``struct32`` value left undecoded (0-10 spec 3.2): its struct ``code`` (class code
    times 256 plus the struct's) and ``data``, the packing flags and fields after the code.
    :func:`amqp_sansio.definitions.amqp010.decode_struct32` reads these."""

    code: int
    data: bytes


_b = struct.Struct(">b")
_B = struct.Struct(">B")
_h = struct.Struct(">h")
_H = struct.Struct(">H")
_i = struct.Struct(">i")
_I = struct.Struct(">I")
_q = struct.Struct(">q")
_Q = struct.Struct(">Q")
_f = struct.Struct(">f")
_d = struct.Struct(">d")
_QQ = struct.Struct(">QQ")
_Bi = struct.Struct(">Bi")
_Bq = struct.Struct(">Bq")
_BI = struct.Struct(">BI")
_IH = struct.Struct(">IH")
_II = struct.Struct(">II")


def _short(offset: int) -> TruncatedError:
    return TruncatedError("the bytes end inside a value", offset=offset)


def _read_uint8(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if offset >= len(buf):
        raise _short(offset)
    return buf[offset], offset + 1


def _number(codec: struct.Struct) -> tuple[Reader, Writer]:
    size = codec.size
    unpack = codec.unpack_from
    pack = codec.pack

    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        end = offset + size
        if end > len(buf):
            raise _short(offset)
        return unpack(buf, offset)[0], end

    def write(out: bytearray, value: Any, depth: int) -> None:
        out += pack(value)

    return read, write


def _fixed(size: int) -> tuple[Reader, Writer]:
    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        end = offset + size
        if end > len(buf):
            raise _short(offset)
        return buf[offset:end], end

    def write(out: bytearray, value: Any, depth: int) -> None:
        if type(value) is not bytes or len(value) != size:
            raise EncodeError(f"a bin{size * 8} is {size} octets of bytes, not {value!r}")
        out += value

    return read, write


def _vbin(codec: struct.Struct) -> tuple[Reader, Writer]:
    width = codec.size
    unpack = codec.unpack_from
    pack = codec.pack

    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        start = offset + width
        if start > len(buf):
            raise _short(offset)
        end = start + unpack(buf, offset)[0]
        if end > len(buf):
            raise _short(offset)
        return buf[start:end], end

    def write(out: bytearray, value: Any, depth: int) -> None:
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise EncodeError(f"a vbin{width * 8} is bytes, not {type(value).__name__}")
        out += pack(len(value))
        out += value

    return read, write


def _str(vbin: tuple[Reader, Writer], encoding: str) -> tuple[Reader, Writer]:
    width = 1 if vbin[0] is _read_vbin8 else 2
    unpack = (_B if width == 1 else _H).unpack_from

    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        start = offset + width
        if start > len(buf):
            raise _short(offset)
        end = start + unpack(buf, offset)[0]
        if end > len(buf):
            raise _short(offset)
        try:
            return buf[start:end].decode(encoding), end
        except UnicodeDecodeError:
            raise DecodeError(f"a string that is not {encoding}", offset=offset) from None

    pack = (_B if width == 1 else _H).pack

    def write(out: bytearray, value: Any, depth: int) -> None:
        if type(value) is not str:
            raise EncodeError(f"a string type holds str, not {type(value).__name__}")
        octets = value.encode(encoding)
        out += pack(len(octets))
        out += octets

    return read, write


def _read_boolean(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if offset >= len(buf):
        raise _short(offset)
    octet = buf[offset]
    if octet > 1:
        raise DecodeError(f"a boolean of {octet}, not 0 or 1", offset=offset)
    return octet == 1, offset + 1


def _write_boolean(out: bytearray, value: Any, depth: int) -> None:
    out.append(1 if value else 0)


def _read_char(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if offset >= len(buf):
        raise _short(offset)
    return buf[offset : offset + 1].decode("iso-8859-15"), offset + 1


def _write_char(out: bytearray, value: Any, depth: int) -> None:
    octets = value.encode("iso-8859-15")
    if len(octets) != 1:
        raise EncodeError(f"a char is one ISO-8859-15 character, not {value!r}")
    out += octets


def _read_utf32(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if offset + 4 > len(buf):
        raise _short(offset)
    try:
        return buf[offset : offset + 4].decode("utf-32-be"), offset + 4
    except UnicodeDecodeError:
        raise DecodeError("a char-utf32 that is not a code point", offset=offset) from None


def _write_utf32(out: bytearray, value: Any, depth: int) -> None:
    if type(value) is not str or len(value) != 1:
        raise EncodeError(f"a char-utf32 is one character, not {value!r}")
    out += value.encode("utf-32-be")


_new_uuid = object.__new__
_set_uuid = object.__setattr__
_UNKNOWN = uuid.SafeUUID.unknown


def _read_uuid(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if offset + 16 > len(buf):
        raise _short(offset)
    # What uuid.UUID(bytes=...) builds (its two slots), without its argument checks: a
    # third of the time of a message's UUID (bench codec --protocol 0-10).
    value = _new_uuid(uuid.UUID)
    _set_uuid(value, "int", int.from_bytes(buf[offset : offset + 16], "big"))
    _set_uuid(value, "is_safe", _UNKNOWN)
    return value, offset + 16


def _write_uuid(out: bytearray, value: Any, depth: int) -> None:
    out += value.bytes


def _decimal(codec: struct.Struct) -> tuple[Reader, Writer]:
    size = codec.size
    unpack = codec.unpack_from
    pack = codec.pack

    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        if offset + size > len(buf):
            raise _short(offset)
        exponent, value = unpack(buf, offset)
        return Decimal(value).scaleb(-exponent), offset + size

    def write(out: bytearray, value: Any, depth: int) -> None:
        sign, digits, exponent = value.as_tuple()
        if not isinstance(exponent, int):
            raise EncodeError(f"a decimal holds a finite number, not {value}")
        unscaled = int("".join(map(str, digits)))
        if exponent > 0:
            unscaled *= 10**exponent
            exponent = 0
        out += pack(-exponent, -unscaled if sign else unscaled)

    return read, write


def _read_void(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    return None, offset


def _write_void(out: bytearray, value: Any, depth: int) -> None:
    if value is not None:
        raise EncodeError(f"a void holds None, not {value!r}")


def _read_bit(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    return True, offset


def _write_bit(out: bytearray, value: Any, depth: int) -> None:
    if value is not True:
        raise EncodeError(f"a bit entry holds True, not {value!r}")


def _ranges(codec: struct.Struct, name: str) -> tuple[Reader, Writer]:
    pair = codec.size
    unpack = codec.iter_unpack
    pack = codec.pack

    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        if offset + 2 > len(buf):
            raise _short(offset)
        size = _H.unpack_from(buf, offset)[0]
        end = offset + 2 + size
        if end > len(buf):
            raise _short(offset)
        if size % pair:
            raise DecodeError(f"a {name} of {size} octets, not whole ranges", offset=offset)
        return tuple(unpack(buf[offset + 2 : end])), end

    def write(out: bytearray, value: Any, depth: int) -> None:
        out += _H.pack(len(value) * pair)
        for lower, upper in value:
            out += pack(lower, upper)

    return read, write


_read_vbin32, _write_vbin32 = _vbin(_I)


def _sized(buf: bytes, offset: int, least: int, name: str) -> int:
    """The end of the 32-bit-sized value at ``offset`` (0-10 spec 3.2), checked."""
    if offset + 4 > len(buf):
        raise _short(offset)
    size: int = _I.unpack_from(buf, offset)[0]
    end = offset + 4 + size
    if end > len(buf):
        raise _short(offset)
    if size < least:
        raise DecodeError(f"a {name} of {size} octets", offset=offset)
    return end


def _read_sized(buf: bytes, offset: int, least: int, name: str) -> tuple[bytes, int]:
    end = _sized(buf, offset, least, name)
    return buf[offset + 4 : end], end


def _nested(depth: int, offset: int) -> int:
    if depth < 1:
        raise DecodeError("maps, lists and arrays nested deeper than the limit", offset=offset)
    return depth - 1


def _read_entry(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if offset >= len(buf):
        raise _short(offset)
    code = buf[offset]
    reader = _READERS.get(code)
    if reader is None:
        raise DecodeError(f"unknown type code 0x{code:02x}", offset=offset)
    value, offset = reader(buf, offset + 1, depth)
    if code in _DEFAULT_CODES:
        return value, offset
    return Typed(TypeCode(code), value), offset


def _read_map(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    if depth < 1:
        raise DecodeError("maps, lists and arrays nested deeper than the limit", offset=offset)
    inner = depth - 1
    if offset + 8 > len(buf):
        raise _short(offset)
    size, count = _II.unpack_from(buf, offset)
    end = offset + 4 + size
    if end > len(buf):
        raise _short(offset)
    result: dict[str, Any] = {}
    at = offset + 8
    readers = _READERS
    defaults = _DEFAULT_CODES
    try:
        for _ in range(count):
            key_end = at + 1 + buf[at]
            key = buf[at + 1 : key_end].decode("utf-8")
            code = buf[key_end]
            reader = readers[code]
            value, at = reader(buf, key_end + 1, inner)
            result[key] = value if code in defaults else Typed(TypeCode(code), value)
    except IndexError:
        raise _short(at) from None
    except KeyError:
        raise DecodeError(f"unknown type code in the map at {offset}", offset=at) from None
    except UnicodeDecodeError:
        raise DecodeError("a map key that is not UTF-8", offset=at) from None
    if at != end:
        raise DecodeError("a map whose entries do not fill its size", offset=offset)
    return result, end


def _read_list(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    inner = _nested(depth, offset)
    body, end = _read_sized(buf, offset, 4, "list")
    count = _I.unpack_from(body)[0]
    result: list[Any] = []
    at = 4
    for _ in range(count):
        value, at = _read_entry(body, at, inner)
        result.append(value)
    if at != len(body):
        raise DecodeError("a list longer than its entries", offset=offset)
    return result, end


def _read_array(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    inner = _nested(depth, offset)
    body, end = _read_sized(buf, offset, 5, "array")
    code, count = _BI.unpack_from(body)
    reader = _READERS.get(code)
    if reader is None:
        raise DecodeError(f"unknown type code 0x{code:02x}", offset=offset)
    if count > len(body):
        raise DecodeError(f"an array of {count} values in {len(body)} octets", offset=offset)
    items = []
    at = 5
    for _ in range(count):
        value, at = reader(body, at, inner)
        items.append(value)
    if at != len(body):
        raise DecodeError("an array longer than its values", offset=offset)
    return Array(TypeCode(code), items), end


def _read_struct32(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    body, end = _read_sized(buf, offset, 2, "struct32")
    return Struct32(_H.unpack_from(body)[0], body[2:]), end


def _write_entry(out: bytearray, value: Any, depth: int) -> None:
    entry = _ENTRY_WRITERS.get(type(value))
    if entry is None:
        code = code_of(value)
        if type(value) is Typed:
            value = value.value
        entry = code, _WRITERS[code]
    out.append(entry[0])
    entry[1](out, value, depth)


def _enter(depth: int) -> int:
    if depth < 1:
        raise EncodeError("maps, lists and arrays nested deeper than the limit")
    return depth - 1


def _write_map(out: bytearray, value: Any, depth: int) -> None:
    inner = _enter(depth)
    start = len(out)
    out += _I.pack(0)
    out += _I.pack(len(value))
    for key, item in value.items():
        _write_str8(out, key, inner)
        _write_entry(out, item, inner)
    _I.pack_into(out, start, len(out) - start - 4)


def _write_list(out: bytearray, value: Any, depth: int) -> None:
    inner = _enter(depth)
    start = len(out)
    out += _I.pack(0)
    out += _I.pack(len(value))
    for item in value:
        _write_entry(out, item, inner)
    _I.pack_into(out, start, len(out) - start - 4)


def _write_array(out: bytearray, value: Any, depth: int) -> None:
    inner = _enter(depth)
    if not isinstance(value, Array):
        items = tuple(value)
        value = Array(code_of(items[0]) if items else TypeCode.VOID, items)
    write = _WRITERS[value.code]
    start = len(out)
    out += _I.pack(0)
    out += _BI.pack(value.code, len(value.items))
    for item in value.items:
        write(out, item.value if type(item) is Typed else item, inner)
    _I.pack_into(out, start, len(out) - start - 4)


def _write_struct32(out: bytearray, value: Any, depth: int) -> None:
    out += _IH.pack(len(value.data) + 2, value.code)
    out += value.data


def code_of(value: Any) -> TypeCode:
    """The type code a map, list or array entry encodes with (0-10 spec 3): the
    :class:`Typed` wrapper's, else the default for the value's Python type (the table in
    ``docs/amqp010.rst``)."""
    code = _DEFAULTS.get(type(value))
    if code is not None:
        return code
    if type(value) is Typed:
        return value.code
    for kind, code in _DEFAULTS.items():
        if isinstance(value, kind):
            return code
    raise EncodeError(f"no AMQP 0-10 type for {type(value).__name__}")


def read_typed(code: int, buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    """Read one value of type ``code`` from ``buf`` at ``offset``."""
    reader = _READERS.get(code)
    if reader is None:
        raise DecodeError(f"unknown type code 0x{code:02x}", offset=offset)
    return reader(buf, offset, depth)


def write_typed(out: bytearray, code: int, value: Any, depth: int) -> None:
    """Append ``value`` as type ``code`` to ``out``."""
    _WRITERS[code](out, value, depth)


_read_vbin8, _write_vbin8 = _vbin(_B)
_read_vbin16, _write_vbin16 = _vbin(_H)
_read_str8, _write_str8 = _str((_read_vbin8, _write_vbin8), "utf-8")

#: Every type, by its XML name: (code or None, reader, writer).
TYPES: dict[str, tuple[TypeCode | None, Reader, Writer]] = {
    "bin8": (TypeCode.BIN8, *_fixed(1)),
    "int8": (TypeCode.INT8, *_number(_b)),
    "uint8": (TypeCode.UINT8, _read_uint8, _number(_B)[1]),
    "char": (TypeCode.CHAR, _read_char, _write_char),
    "boolean": (TypeCode.BOOLEAN, _read_boolean, _write_boolean),
    "bin16": (TypeCode.BIN16, *_fixed(2)),
    "int16": (TypeCode.INT16, *_number(_h)),
    "uint16": (TypeCode.UINT16, *_number(_H)),
    "bin32": (TypeCode.BIN32, *_fixed(4)),
    "int32": (TypeCode.INT32, *_number(_i)),
    "uint32": (TypeCode.UINT32, *_number(_I)),
    "float": (TypeCode.FLOAT, *_number(_f)),
    "char-utf32": (TypeCode.CHAR_UTF32, _read_utf32, _write_utf32),
    "sequence-no": (None, *_number(_I)),
    "bin64": (TypeCode.BIN64, *_fixed(8)),
    "int64": (TypeCode.INT64, *_number(_q)),
    "uint64": (TypeCode.UINT64, *_number(_Q)),
    "double": (TypeCode.DOUBLE, *_number(_d)),
    "datetime": (TypeCode.DATETIME, *_number(_Q)),
    "bin128": (TypeCode.BIN128, *_fixed(16)),
    "uuid": (TypeCode.UUID, _read_uuid, _write_uuid),
    "bin256": (TypeCode.BIN256, *_fixed(32)),
    "bin512": (TypeCode.BIN512, *_fixed(64)),
    "bin1024": (TypeCode.BIN1024, *_fixed(128)),
    "vbin8": (TypeCode.VBIN8, _read_vbin8, _write_vbin8),
    "str8-latin": (TypeCode.STR8_LATIN, *_str((_read_vbin8, _write_vbin8), "iso-8859-15")),
    "str8": (TypeCode.STR8, _read_str8, _write_str8),
    "str8-utf16": (TypeCode.STR8_UTF16, *_str((_read_vbin8, _write_vbin8), "utf-16-be")),
    "vbin16": (TypeCode.VBIN16, _read_vbin16, _write_vbin16),
    "str16-latin": (TypeCode.STR16_LATIN, *_str((_read_vbin16, _write_vbin16), "iso-8859-15")),
    "str16": (TypeCode.STR16, *_str((_read_vbin16, _write_vbin16), "utf-8")),
    "str16-utf16": (TypeCode.STR16_UTF16, *_str((_read_vbin16, _write_vbin16), "utf-16-be")),
    "byte-ranges": (None, *_ranges(_QQ, "byte-ranges")),
    "sequence-set": (None, *_ranges(struct.Struct(">II"), "sequence-set")),
    "vbin32": (TypeCode.VBIN32, _read_vbin32, _write_vbin32),
    "map": (TypeCode.MAP, _read_map, _write_map),
    "list": (TypeCode.LIST, _read_list, _write_list),
    "array": (TypeCode.ARRAY, _read_array, _write_array),
    "struct32": (TypeCode.STRUCT32, _read_struct32, _write_struct32),
    "bin40": (TypeCode.BIN40, *_fixed(5)),
    "dec32": (TypeCode.DEC32, *_decimal(_Bi)),
    "bin72": (TypeCode.BIN72, *_fixed(9)),
    "dec64": (TypeCode.DEC64, *_decimal(_Bq)),
    "void": (TypeCode.VOID, _read_void, _write_void),
    "bit": (TypeCode.BIT, _read_bit, _write_bit),
}

_READERS: dict[int, Reader] = {c: r for c, r, _ in TYPES.values() if c is not None}
_WRITERS: dict[int, Writer] = {c: w for c, _, w in TYPES.values() if c is not None}

#: The type code each Python type encodes with in a map, list or array (exact type first,
#: then ``isinstance`` in this order, so ``bool`` wins over ``int``).
_DEFAULTS: dict[type, TypeCode] = {
    bool: TypeCode.BOOLEAN,
    int: TypeCode.INT64,
    float: TypeCode.DOUBLE,
    str: TypeCode.STR16,
    bytes: TypeCode.VBIN32,
    type(None): TypeCode.VOID,
    dict: TypeCode.MAP,
    list: TypeCode.LIST,
    tuple: TypeCode.LIST,
    uuid.UUID: TypeCode.UUID,
    Decimal: TypeCode.DEC64,
    Array: TypeCode.ARRAY,
    Struct32: TypeCode.STRUCT32,
}
_DEFAULT_CODES = frozenset(_DEFAULTS.values())
#: The code and writer of each Python type with a default code, for map and list entries.
_ENTRY_WRITERS: dict[type, tuple[int, Writer]] = {
    kind: (code, _WRITERS[code]) for kind, code in _DEFAULTS.items()
}
