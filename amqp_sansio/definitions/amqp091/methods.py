"""The machinery behind the method and property classes of
:mod:`amqp_sansio.definitions.amqp091.spec`.

A method class (0-9-1 spec 4.2.6 "Method payloads") is a plain attrs class whose ``FIELDS``
list its arguments in wire order with their domain types. The :func:`method` decorator
registers it under its class and method ids and compiles, once at import, a straight-line
encoder and decoder for it: consecutive fixed-size fields (and the length octet of the
string after them, and packed bits) are one precompiled :class:`struct.Struct`, so encoding
or decoding a method is a handful of ``pack``/``unpack_from`` calls and no loop over fields.
:func:`properties` does the same for a class's content properties (0-9-1 spec 4.2.6.1
"Content header payloads": a property-flags word, then the present properties in order).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import attrs

from ...codec import amqp091 as codec
from ...codec.amqp091.errors import (
    DecodeError,
    EncodeError,
    FrameError,
    TruncatedError,
    UnknownMethodError,
)

__all__ = [
    "METHODS",
    "METHODS_BY_NAME",
    "Method",
    "Properties",
    "decode_method",
    "decode_content_header",
    "encode_content_header",
    "method",
    "properties",
]

_ENCODE_ERRORS = (struct.error, OverflowError, UnicodeEncodeError, AttributeError, TypeError)


class Method:
    """Base class of every method: ``encode()`` gives the method frame's payload.

    The class attributes describe the method as the spec does: ``CLASS_ID`` and
    ``METHOD_ID``, ``NAME`` (``"basic.publish"``), ``SYNCHRONOUS`` (the sender waits for
    one of ``RESPONSES``), ``CONTENT`` (a content header and body frames follow it) and
    ``FIELDS`` (the arguments in wire order: name and domain type).
    """

    __slots__ = ()

    CLASS_ID: ClassVar[int]
    METHOD_ID: ClassVar[int]
    NAME: ClassVar[str]
    SYNCHRONOUS: ClassVar[bool]
    CONTENT: ClassVar[bool]
    RESPONSES: ClassVar[tuple[str, ...]]
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = ()

    def encode(self) -> bytes:
        """The method frame's payload: class id, method id, then the arguments (0-9-1 spec
        4.2.6). Raises :class:`~amqp_sansio.codec.amqp091.errors.EncodeError` for a value its
        field cannot hold (a string over 255 octets in a ``shortstr``, a negative
        ``short``, a wrong type)."""
        try:
            return self._encode()
        except EncodeError:
            raise
        except _ENCODE_ERRORS as exc:
            raise EncodeError(f"cannot encode {self.NAME}: {exc}") from exc

    def _encode(self) -> bytes:  # pragma: no cover - replaced by @method on every subclass
        raise NotImplementedError


class Properties:
    """Base class of content properties: each field is ``None`` when absent."""

    __slots__ = ()

    CLASS_ID: ClassVar[int]
    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = ()

    def encode(self) -> bytes:
        """The property flags and the present properties (0-9-1 spec 4.2.6.1)."""
        try:
            return self._encode()
        except EncodeError:
            raise
        except _ENCODE_ERRORS as exc:
            raise EncodeError(f"cannot encode content properties: {exc}") from exc

    def _encode(self) -> bytes:  # pragma: no cover - replaced by @properties
        raise NotImplementedError


#: Every method class by (class id, method id).
METHODS: dict[tuple[int, int], type[Method]] = {}
#: Every method class by its spec name (``"basic.publish"``).
METHODS_BY_NAME: dict[str, type[Method]] = {}
_Decoder = Callable[[bytes, int], tuple[Any, int]]
_DECODERS: dict[int, _Decoder] = {}
_PROPERTIES: dict[int, tuple[type[Properties], Callable[[bytes, int, int], tuple[Any, int]]]] = {}

#: The domain type each annotation of a method or property class names.
_ANNOTATIONS = {
    "Bit": "bit",
    "Octet": "octet",
    "Short": "short",
    "Long": "long",
    "LongLong": "longlong",
    "ShortStr": "shortstr",
    "LongStr": "longstr",
    "Timestamp": "timestamp",
    "FieldTable": "table",
}
_FIXED = {"octet": "B", "short": "H", "long": "I", "longlong": "Q", "timestamp": "Q"}


def _fields(cls: type) -> tuple[tuple[str, str], ...]:
    """(name, domain type) of each field of an attrs class, in order, from its annotations."""
    annotations = cls.__annotations__
    return tuple(
        (f.name, _ANNOTATIONS[annotations[f.name].removesuffix(" | None")])
        for f in attrs.fields(cls)
    )


_M = TypeVar("_M", bound=type[Method])
_P = TypeVar("_P", bound=type[Properties])


class _Source:
    """Lines of a function being generated, and the names it uses."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, object] = {
            "_new": object.__new__,
            "_Truncated": TruncatedError,
            "_SHORT": "string of %d octets, %d left",
            "_DecodeError": DecodeError,
            "_read_table": codec.read_table,
            "_encode_table": codec.encode_table,
            "_Timestamp": codec.Timestamp,
        }

    def struct(self, fmt: str) -> str:
        name = f"_S{len(self.names)}"
        self.names[name] = struct.Struct(">" + fmt)
        return name

    def compile(self, name: str) -> Any:
        namespace = dict(self.names)
        exec("\n".join(self.lines), namespace)  # the tables are the spec's, not input
        return namespace[name]


def _segments(fields: tuple[tuple[str, str], ...]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The fields grouped for packing: (struct format, [(kind, name)]) where each group is
    fixed fields and bit octets, closed by the length of a string (or a table, alone)."""
    groups: list[tuple[str, list[tuple[str, str]]]] = []
    fmt, items = "", []
    bits: list[str] = []

    def close_bits() -> None:
        nonlocal fmt
        if bits:
            fmt += "B"
            items.append(("bits", ",".join(bits)))
            bits.clear()

    for name, type_ in fields:
        if type_ == "bit":
            if len(bits) == 8:  # pragma: no cover - no method has more than 6 bits in a row
                close_bits()
            bits.append(name)
            continue
        close_bits()
        if type_ in _FIXED:
            fmt += _FIXED[type_]
            items.append((type_, name))
        elif type_ in ("shortstr", "longstr"):
            fmt += "B" if type_ == "shortstr" else "I"
            items.append((type_, name))
            groups.append((fmt, items))
            fmt, items = "", []
        else:  # table
            if fmt:
                groups.append((fmt, items))
            groups.append(("", [(type_, name)]))
            fmt, items = "", []
    close_bits()
    if fmt:
        groups.append((fmt, items))
    return groups


def _compile_encoder(prefix: bytes, fields: tuple[tuple[str, str], ...]) -> Any:
    src = _Source()
    src.names["_PREFIX"] = prefix
    src.lines.append("def _encode(self):")
    parts = ["_PREFIX"]
    for index, (fmt, items) in enumerate(_segments(fields)):
        if not fmt:  # a table
            parts.append(f"_encode_table(self.{items[0][1]})")
            continue
        args = []
        for kind, name in items:
            if kind == "bits":
                args.append(
                    " | ".join(
                        f"(1 if self.{bit} else 0) << {i}" for i, bit in enumerate(name.split(","))
                    )
                )
            elif kind == "shortstr":
                src.lines.append(f"    v{index} = self.{name}.encode()")
                args.append(f"len(v{index})")
            elif kind == "longstr":
                src.lines.append(f"    v{index} = bytes(self.{name})")
                args.append(f"len(v{index})")
            else:
                args.append(f"self.{name}")
        parts.append(f"{src.struct(fmt)}.pack({', '.join(args)})")
        if items[-1][0] in ("shortstr", "longstr"):
            parts.append(f"v{index}")
    src.lines.append(f"    return b''.join(({', '.join(parts)},))")
    return src.compile("_encode")


def _string_lines(target: str, kind: str, indent: str = "    ") -> list[str]:
    """Lines reading the string whose length ``n`` was just unpacked, at ``o``."""
    read = "buf[o:e].decode()" if kind == "shortstr" else "buf[o:e]"
    return [
        f"{indent}e = o + n",
        f"{indent}if e > len(buf):",
        f"{indent}    raise _Truncated(_SHORT % (n, len(buf) - o), offset=o)",
        f"{indent}{target} = {read}",
        f"{indent}o = e",
    ]


def _compile_decoder(cls: type, fields: tuple[tuple[str, str], ...]) -> Any:
    src = _Source()
    src.names["_cls"] = cls
    src.lines += ["def _decode(buf, o):", "    m = _new(_cls)"]
    for fmt, items in _segments(fields):
        if not fmt:
            src.lines.append(f"    m.{items[0][1]}, o = _read_table(buf, o)")
            continue
        targets = []
        after: list[str] = []
        for index, (kind, name) in enumerate(items):
            if kind == "bits":
                targets.append(f"b{index}")
                after += [
                    f"    m.{bit} = b{index} & {1 << i} != 0"
                    for i, bit in enumerate(name.split(","))
                ]
            elif kind in ("shortstr", "longstr"):
                targets.append("n")
                after += _string_lines(f"m.{name}", kind)
            else:
                targets.append(f"m.{name}")
        code = src.struct(fmt)
        src.lines.append(f"    {', '.join(targets)}, = {code}.unpack_from(buf, o)")
        src.lines.append(f"    o += {struct.calcsize('>' + fmt)}")
        src.lines += after
    src.lines.append("    return m, o")
    return src.compile("_decode")


def method(
    class_id: int,
    method_id: int,
    name: str,
    *,
    synchronous: bool,
    content: bool,
    responses: tuple[str, ...],
) -> Callable[[_M], _M]:
    """Register a method class and compile its encoder and decoder."""

    def register(cls: _M) -> _M:
        cls.CLASS_ID, cls.METHOD_ID, cls.NAME = class_id, method_id, name
        cls.SYNCHRONOUS, cls.CONTENT, cls.RESPONSES = synchronous, content, responses
        cls.FIELDS = _fields(cls)
        cls._encode = _compile_encoder(struct.pack(">HH", class_id, method_id), cls.FIELDS)  # type: ignore[method-assign]
        METHODS[class_id, method_id] = cls
        METHODS_BY_NAME[name] = cls
        _DECODERS[class_id << 16 | method_id] = _compile_decoder(cls, cls.FIELDS)
        return cls

    return register


_key = struct.Struct(">I").unpack_from


def decode_method(payload: bytes | bytearray | memoryview) -> Method:
    """The method a method frame's payload holds (0-9-1 spec 4.2.6), whole.

    Raises :class:`~amqp_sansio.codec.amqp091.errors.UnknownMethodError` (540) for an unknown
    class or method id, :class:`~amqp_sansio.codec.amqp091.errors.TruncatedError` (501) when the
    payload ends inside an argument, :class:`~amqp_sansio.codec.amqp091.errors.FrameError` (501)
    when octets are left after the arguments and
    :class:`~amqp_sansio.codec.amqp091.errors.DecodeError` (502) for an illegal value.
    """
    if type(payload) is not bytes:
        payload = bytes(payload)  # the strings are slices of it
    try:
        (key,) = _key(payload, 0)
        decoder = _DECODERS.get(key)
        if decoder is None:
            raise UnknownMethodError(f"unknown method: class {key >> 16}, method {key & 0xFFFF}")
        result, offset = decoder(payload, 4)
    except (struct.error, IndexError) as exc:
        raise TruncatedError("method frame payload ends inside an argument") from exc
    except UnicodeDecodeError as exc:
        raise DecodeError(f"short string is not UTF-8: {exc.reason}", offset=exc.start) from exc
    if offset != len(payload):
        raise FrameError(f"{len(payload) - offset} octets after the method's arguments")
    method: Method = result
    return method


# -- content properties --------------------------------------------------------------------


def _property_encoder(fields: tuple[tuple[str, str], ...]) -> Any:
    """The ``basic`` properties are short strings, octets, a table and a timestamp (no
    class with content has a ``longstr`` or ``bit`` property)."""
    src = _Source()
    src.names["_H"] = struct.Struct(">H").pack
    src.lines += ["def _encode(self):", "    flags = 0", "    parts = [b'']"]
    for index, (name, type_) in enumerate(fields):
        flag = 1 << (15 - index)
        src.lines += [f"    v = self.{name}", "    if v is not None:", f"        flags |= {flag}"]
        if type_ == "shortstr":
            src.lines += [
                "        v = v.encode()",
                f"        parts += ({src.struct('B')}.pack(len(v)), v)",
            ]
        elif type_ == "table":
            src.lines.append("        parts.append(_encode_table(v))")
        else:
            src.lines.append(f"        parts.append({src.struct(_FIXED[type_])}.pack(v))")
    src.lines += ["    parts[0] = _H(flags)", "    return b''.join(parts)"]
    return src.compile("_encode")


def _property_decoder(cls: type, fields: tuple[tuple[str, str], ...]) -> Any:
    src = _Source()
    src.names["_cls"] = cls
    src.lines += ["def _decode(buf, o, flags):", "    m = _new(_cls)"]
    for index, (name, type_) in enumerate(fields):
        flag = 1 << (15 - index)
        src.lines.append(f"    if flags & {flag}:")
        if type_ in ("shortstr", "longstr"):
            code = src.struct("B" if type_ == "shortstr" else "I")
            size = 1 if type_ == "shortstr" else 4
            src.lines += [f"        n, = {code}.unpack_from(buf, o)", f"        o += {size}"]
            src.lines += _string_lines(f"m.{name}", type_, "        ")
        elif type_ == "table":
            src.lines.append(f"        m.{name}, o = _read_table(buf, o)")
        else:
            code = src.struct(_FIXED[type_])
            value = f"{code}.unpack_from(buf, o)[0]"
            if type_ == "timestamp":
                value = f"_Timestamp({value})"
            src.lines += [
                f"        m.{name} = {value}",
                f"        o += {struct.calcsize('>' + _FIXED[type_])}",
            ]
        src.lines += ["    else:", f"        m.{name} = None"]
    src.lines.append("    return m, o")
    return src.compile("_decode")


def properties(class_id: int) -> Callable[[_P], _P]:
    """Register a content class's properties and compile their encoder and decoder."""

    def register(cls: _P) -> _P:
        cls.CLASS_ID = class_id
        cls.FIELDS = _fields(cls)
        cls._encode = _property_encoder(cls.FIELDS)  # type: ignore[method-assign]
        assert len(cls.FIELDS) <= 15  # one flags word (no continuation) holds them all
        _PROPERTIES[class_id] = (cls, _property_decoder(cls, cls.FIELDS))
        return cls

    return register


_HEADER = struct.Struct(">HHQH")


def encode_content_header(body_size: int, properties: Properties) -> bytes:
    """A content header frame's payload (0-9-1 spec 4.2.6.1): the class id, weight 0, the
    body size and the properties."""
    try:
        head = _HEADER.pack(properties.CLASS_ID, 0, body_size, 0)
    except _ENCODE_ERRORS as exc:
        raise EncodeError(f"cannot encode a content header: {exc}") from exc
    return head[:12] + properties.encode()


def decode_content_header(
    payload: bytes | bytearray | memoryview,
) -> tuple[int, int, Properties]:
    """(class id, body size, properties) of a content header frame's payload, whole.

    Raises :class:`~amqp_sansio.codec.amqp091.errors.UnknownMethodError` (540) for a class with
    no content, :class:`~amqp_sansio.codec.amqp091.errors.DecodeError` (502) for a non-zero
    weight or a property flag the class does not define (or the continuation flag: no
    defined class needs a second flags word), and the errors of :func:`decode_method` for
    the rest.
    """
    if type(payload) is not bytes:
        payload = bytes(payload)  # the strings are slices of it
    try:
        class_id, weight, body_size, flags = _HEADER.unpack_from(payload, 0)
        entry = _PROPERTIES.get(class_id)
        if entry is None:
            raise UnknownMethodError(f"content header for class {class_id}, which has no content")
        if weight:
            raise DecodeError(f"content header weight {weight}, not 0", offset=2)
        cls, decoder = entry
        if flags & ((1 << (16 - len(cls.FIELDS))) - 1):
            raise DecodeError(f"property flags {flags:#06x} name undefined properties", offset=12)
        props, offset = decoder(payload, 14, flags)
    except (struct.error, IndexError) as exc:
        raise TruncatedError("content header payload ends inside a property") from exc
    except UnicodeDecodeError as exc:
        raise DecodeError(f"short string is not UTF-8: {exc.reason}", offset=exc.start) from exc
    if offset != len(payload):
        raise FrameError(f"{len(payload) - offset} octets after the content properties")
    return class_id, body_size, props
