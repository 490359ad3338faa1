"""The AMQP 0-10 compound types: controls, commands and structs, and their encodings (0-10 spec
3.3 "Structs", 4.5 "Controls and commands"; the XML's ``pack`` and ``size`` attributes).

A compound's fields follow its packing flags: ``PACK`` octets (least significant first), one
bit per field in order; a set flag means the field is present (for a ``bit`` field, that it is
true) and only present fields are written. A struct with a ``SIZE`` is preceded by its length
in ``SIZE`` octets, and by its 16-bit code (class code times 256 plus its own) when it has one.
A control is its class code and code octets, then its fields (``PACK`` 2); a command is the
same with the ``session.header`` struct (the sync flag) between the code and the fields.

The classes in :mod:`~amqp_sansio.definitions.amqp010.spec` register themselves here with
:func:`compound`, which compiles one reader and one writer for each from its ``FIELDS``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, ClassVar, TypeAlias, TypeVar

import attrs

from ...codec.amqp010 import (
    DEFAULT_MAX_DEPTH,
    TYPES,
    WRITE_ERRORS,
    DecodeError,
    EncodeError,
    Reader,
    Struct32,
    TruncatedError,
    UnknownCodeError,
    Writer,
)

__all__ = [
    "COMMANDS",
    "CONTROLS",
    "STRUCTS",
    "Command",
    "Compound",
    "Control",
    "Struct",
    "compound",
    "decode_command",
    "decode_control",
    "decode_header",
    "decode_struct32",
    "encode_command",
    "encode_control",
    "encode_header",
    "encode_struct32",
    "split_header",
]

#: A field: its Python name and its type, a ``<type>`` name or a struct's ``NAME``.
Fields: TypeAlias = tuple[tuple[str, str], ...]


@attrs.frozen
class Compound:
    """What controls, commands and structs share: their definition as class attributes."""

    #: The class code (``connection`` 1, ``session`` 2, ...; 0-10 spec 4.5).
    CLASS_CODE: ClassVar[int] = 0
    #: The code within the class (``None`` for a struct without one).
    CODE: ClassVar[int | None] = None
    #: The spec name, ``"session.attach"``.
    NAME: ClassVar[str] = ""
    #: How many octets of packing flags precede the fields.
    PACK: ClassVar[int] = 2
    #: How many octets of length precede a struct (0: none).
    SIZE: ClassVar[int] = 0
    FIELDS: ClassVar[Fields] = ()
    #: The codec of the whole (with size and code for a struct that has them) and of the
    #: packing flags and fields alone; :func:`compound` sets them.
    _read: ClassVar[Reader]
    _write: ClassVar[Writer]
    _read_fields: ClassVar[Reader]
    _write_fields: ClassVar[Writer]


@attrs.frozen
class Control(Compound):
    """A control (0-10 spec 4.5): ``connection.*`` and ``session.*``, on the control track."""


@attrs.frozen
class Command(Compound):
    """A command (0-10 spec 4.5): the classes from ``execution`` on, on the command track.
    ``RESULT`` names the struct its ``execution.result`` carries, if any."""

    RESULT: ClassVar[str | None] = None


@attrs.frozen
class Struct(Compound):
    """A struct (0-10 spec 3.3): message properties, command results, ``xid``..."""


#: Every control, command and struct by its 16-bit code (class code times 256 plus its own).
CONTROLS: dict[int, type[Control]] = {}
COMMANDS: dict[int, type[Command]] = {}
STRUCTS: dict[int, type[Struct]] = {}
#: Every struct by ``NAME``, for the fields of that type.
_STRUCTS_BY_NAME: dict[str, type[Struct]] = {}

_H = struct.Struct(">H")
_IH = struct.Struct(">IH")
_SIZES = {1: struct.Struct(">B"), 2: struct.Struct(">H"), 4: struct.Struct(">I")}
#: How many packing-flags values each class keeps a decoding plan for (a bound against a
#: peer sending every value).
_MAX_PLANS = 64
#: Packing flags: the first octet holds the first eight fields' flags (0-10 spec 3.3).
_FLAGS = {1: struct.Struct("<B"), 2: struct.Struct("<H"), 4: struct.Struct("<I")}
C = TypeVar("C", bound=type[Compound])


def _short(offset: int) -> TruncatedError:
    return TruncatedError("the bytes end inside a compound", offset=offset)


def _field_codec(type_name: str) -> tuple[Reader, Writer]:
    if type_name == "struct32":
        return _read_struct32, _write_struct32
    if type_name in _STRUCTS_BY_NAME:
        kind = _STRUCTS_BY_NAME[type_name]
        return kind._read, kind._write
    _, reader, writer = TYPES[type_name]
    return reader, writer


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving an object's values of ``names``, as a tuple."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        return lambda obj: (getattr(obj, names[0]),)
    return lambda obj: ()


def _compile_fields(cls: type[Compound]) -> tuple[Reader, Writer]:
    """The reader and writer of ``cls``'s packing flags and fields."""
    bits = [type_name == "bit" for _, type_name in cls.FIELDS]
    codecs = [_field_codec(type_name) for _, type_name in cls.FIELDS]
    return _fields_reader(cls, bits, codecs), _fields_writer(cls, bits, codecs)


def _fields_reader(
    cls: type[Compound], bits: list[bool], codecs: list[tuple[Reader, Writer]]
) -> Reader:
    readers = [None if bit else reader for bit, (reader, _) in zip(bits, codecs, strict=True)]
    defaults = [False if bit else None for bit in bits]
    pack = cls.PACK
    flags_codec = _FLAGS.get(pack)
    known = (1 << len(bits)) - 1
    #: For each packing flags value seen: the values of absent and bit fields, and the
    #: (index, reader) of each present field, in order.
    plans: dict[int, tuple[list[Any], list[tuple[int, Reader]]]] = {}

    def _plan(flags: int) -> tuple[list[Any], list[tuple[int, Reader]]]:
        values = [True if flags >> i & 1 else d for i, d in enumerate(defaults)]
        present = []
        for index, reader in enumerate(readers):
            if reader is not None and flags >> index & 1:
                values[index] = None
                present.append((index, reader))
        plan = (values, present)
        if len(plans) < _MAX_PLANS:
            plans[flags] = plan
        return plan

    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        if flags_codec is not None:
            if offset + pack > len(buf):
                raise _short(offset)
            flags = flags_codec.unpack_from(buf, offset)[0]
            if flags & ~known:
                raise DecodeError(f"packing flags 0x{flags:x} name no field of {cls.NAME}")
            offset += pack
        else:
            flags = known
        plan = plans.get(flags)
        if plan is None:
            plan = _plan(flags)
        values = plan[0].copy()
        for index, reader in plan[1]:
            values[index], offset = reader(buf, offset, depth)
        return cls(*values), offset

    return read


def _fields_writer(
    cls: type[Compound], bits: list[bool], codecs: list[tuple[Reader, Writer]]
) -> Writer:
    plan = list(zip(range(len(bits)), bits, codecs, strict=True))
    pack = cls.PACK
    flags_codec = _FLAGS.get(pack)
    get = _getter([name for name, _ in cls.FIELDS])
    zeros = bytes(pack)

    def write(out: bytearray, obj: Any, depth: int) -> None:
        start = len(out)
        out += zeros
        flags = 0
        for (index, bit, (_, writer)), value in zip(plan, get(obj), strict=True):
            if bit:
                if value:
                    flags |= 1 << index
            elif value is not None:
                flags |= 1 << index
                writer(out, value, depth)
            elif not pack:
                raise EncodeError(f"{cls.NAME} has no packing flags: every field is needed")
        if flags_codec is not None:
            flags_codec.pack_into(out, start, flags)

    return write


def _compile_struct(cls: type[Struct]) -> tuple[Reader, Writer]:
    """A struct with its size and code before the fields (0-10 spec 3.3)."""
    read_fields, write_fields = cls._read_fields, cls._write_fields
    if not cls.SIZE:
        return read_fields, write_fields
    width = cls.SIZE
    size_codec = _SIZES[width]
    code = None if cls.CODE is None else cls.CLASS_CODE << 8 | cls.CODE
    head = width + (2 if code is not None else 0)

    def read(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
        if offset + head > len(buf):
            raise _short(offset)
        end = offset + width + size_codec.unpack_from(buf, offset)[0]
        if end > len(buf):
            raise _short(offset)
        if code is not None and _H.unpack_from(buf, offset + width)[0] != code:
            raise DecodeError(f"a {cls.NAME} with the code of another struct", offset=offset)
        value, after = read_fields(buf, offset + head, depth)
        if after != end:
            raise DecodeError(f"a {cls.NAME} longer than its fields", offset=offset)
        return value, end

    def write(out: bytearray, obj: Any, depth: int) -> None:
        start = len(out)
        out += bytes(width)
        if code is not None:
            out += _H.pack(code)
        write_fields(out, obj, depth)
        size_codec.pack_into(out, start, len(out) - start - width)

    return read, write


def compound(cls: C) -> C:
    """Register a generated control, command or struct class and compile its codec."""
    full = None if cls.CODE is None else cls.CLASS_CODE << 8 | cls.CODE
    cls._read_fields, cls._write_fields = _compile_fields(cls)
    if issubclass(cls, Struct):
        cls._read, cls._write = _compile_struct(cls)
        _STRUCTS_BY_NAME[cls.NAME] = cls
        if full is not None:
            STRUCTS[full] = cls
    else:
        cls._read, cls._write = cls._read_fields, cls._write_fields
        registry: dict[int, Any] = COMMANDS if issubclass(cls, Command) else CONTROLS
        registry[full] = cls  # type: ignore[index]
    return cls


def _struct32_at(buf: bytes, offset: int) -> tuple[int, int]:
    """The code of the ``struct32`` at ``offset`` and where it ends (its size is checked
    against the buffer, not its fields)."""
    if offset + 6 > len(buf):
        raise _short(offset)
    size, code = _IH.unpack_from(buf, offset)
    end = offset + 4 + size
    if end > len(buf):
        raise _short(offset)
    if size < 2:
        raise DecodeError("a struct32 shorter than its code", offset=offset)
    return code, end


def _read_struct32(buf: bytes, offset: int, depth: int) -> tuple[Any, int]:
    code, end = _struct32_at(buf, offset)
    kind = STRUCTS.get(code)
    if kind is None:
        raise UnknownCodeError(f"no struct has the code 0x{code:04x}", offset=offset)
    value, after = kind._read_fields(buf, offset + 6, depth)
    if after != end:
        raise DecodeError(f"a {kind.NAME} longer than its fields", offset=offset)
    return value, end


def _write_struct32(out: bytearray, value: Any, depth: int) -> None:
    if isinstance(value, Struct32):
        TYPES["struct32"][2](out, value, depth)
        return
    if not isinstance(value, Struct) or value.CODE is None:
        raise EncodeError(f"a struct32 holds a struct with a code, not {value!r}")
    start = len(out)
    out += bytes(4)
    out += _H.pack(value.CLASS_CODE << 8 | value.CODE)
    type(value)._write_fields(out, value, depth)
    _SIZES[4].pack_into(out, start, len(out) - start - 4)


def _encode(write: Callable[[bytearray], None], what: object) -> bytes:
    out = bytearray()
    try:
        write(out)
    except EncodeError:
        raise
    except WRITE_ERRORS as exc:
        raise EncodeError(f"cannot encode {what!r}: {exc}") from None
    return bytes(out)


def _whole(value: Any, end: int, buf: bytes, name: str) -> Any:
    if end != len(buf):
        raise DecodeError(f"{len(buf) - end} octets after the {name}", offset=end)
    return value


def encode_control(control: Control) -> bytes:
    """A control's octets: class code, control code, packing flags, fields (0-10 spec 4.5)."""

    def write(out: bytearray) -> None:
        out += bytes((control.CLASS_CODE, control.CODE or 0))
        type(control)._write(out, control, DEFAULT_MAX_DEPTH)

    return _encode(write, control)


def decode_control(data: bytes, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Control:
    """The control in ``data``, a control segment's payload (0-10 spec 4.5). An unknown
    control raises :class:`~amqp_sansio.codec.amqp010.errors.UnknownCodeError`."""
    buf = bytes(data)
    if len(buf) < 2:
        raise _short(0)
    kind = CONTROLS.get(_H.unpack_from(buf)[0])
    if kind is None:
        raise UnknownCodeError(f"no control has the code {buf[0]}.{buf[1]}", offset=0)
    value, end = kind._read(buf, 2, max_depth)
    return _whole(value, end, buf, kind.NAME)  # type: ignore[no-any-return]


def encode_command(command: Command, *, sync: bool = False) -> bytes:
    """A command's octets: class code, command code, the ``session.header`` (its sync flag),
    packing flags, fields (0-10 spec 4.5)."""

    def write(out: bytearray) -> None:
        out += bytes((command.CLASS_CODE, command.CODE or 0, 1, 1 if sync else 0))
        type(command)._write(out, command, DEFAULT_MAX_DEPTH)

    return _encode(write, command)


def decode_command(data: bytes, *, max_depth: int = DEFAULT_MAX_DEPTH) -> tuple[Command, bool]:
    """The command in ``data``, a command segment's payload, and its sync flag (0-10 spec
    4.5). An unknown command raises
    :class:`~amqp_sansio.codec.amqp010.errors.UnknownCodeError` (``not-implemented``)."""
    buf = bytes(data)
    if len(buf) < 4:
        raise _short(0)
    kind = COMMANDS.get(_H.unpack_from(buf)[0])
    if kind is None:
        raise UnknownCodeError(f"no command has the code {buf[0]}.{buf[1]}", offset=0)
    if buf[2] != 1 or buf[3] > 1:
        raise DecodeError("a session.header other than one octet of flags, 0 or 1", offset=2)
    value, end = kind._read(buf, 4, max_depth)
    return _whole(value, end, buf, kind.NAME), buf[3] == 1


def encode_struct32(value: Struct) -> bytes:
    """A struct with a code as a ``struct32`` (0-10 spec 3.2): 32-bit size, 16-bit code,
    packing flags, fields. ``execution.result`` values and header entries are these."""
    return _encode(lambda out: _write_struct32(out, value, DEFAULT_MAX_DEPTH), value)


def decode_struct32(data: bytes, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Struct:
    """The ``struct32`` in ``data`` (0-10 spec 3.2); an unknown code raises
    :class:`~amqp_sansio.codec.amqp010.errors.UnknownCodeError`."""
    buf = bytes(data)
    value, end = _read_struct32(buf, 0, max_depth)
    return _whole(value, end, buf, "struct32")  # type: ignore[no-any-return]


def encode_header(structs: Sequence[Struct]) -> bytes:
    """A header segment's payload: each struct as a ``struct32`` (0-10 spec 4.6)."""

    def write(out: bytearray) -> None:
        for value in structs:
            _write_struct32(out, value, DEFAULT_MAX_DEPTH)

    return _encode(write, structs)


def split_header(data: bytes) -> list[tuple[int, bytes]]:
    """The structs of a header segment's payload undecoded (0-10 spec 4.6): each one's code
    (its class code times 256 plus its own) and its ``struct32`` octets, size included, in
    order; what the octets hold is not read. Raises
    :class:`~amqp_sansio.codec.amqp010.errors.DecodeError` where a struct's size passes the
    end or leaves no room for its code."""
    buf = bytes(data)
    parts: list[tuple[int, bytes]] = []
    offset = 0
    while offset < len(buf):
        code, end = _struct32_at(buf, offset)
        parts.append((code, buf[offset:end]))
        offset = end
    return parts


def decode_header(data: bytes, *, max_depth: int = DEFAULT_MAX_DEPTH) -> tuple[Struct, ...]:
    """The structs of a header segment's payload (0-10 spec 4.6)."""
    buf = bytes(data)
    offset = 0
    result = []
    while offset < len(buf):
        value, offset = _read_struct32(buf, offset, max_depth)
        result.append(value)
    return tuple(result)
