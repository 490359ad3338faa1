"""The AMQP type system's Python mapping (core spec 1.6).

Python values that map exactly stay native: ``None`` (null), ``bool`` (boolean), ``int``
(long), ``float`` (double), ``str`` (string), ``bytes`` (binary), :class:`uuid.UUID` (uuid),
``list`` (list) and ``dict`` (map). Every other AMQP type has a wrapper here. The integer,
float and text wrappers subclass the Python type, so they compare, hash and compute as the
plain value does, yet keep their AMQP type through decode and encode.
"""

from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import enum
import operator
import struct
import uuid
from collections.abc import Iterable, Iterator
from typing import Protocol, TypeAlias, TypeVar, Union

import attrs

__all__ = [
    "AMQPType",
    "AMQPValue",
    "DescribedType",
    "Array",
    "Byte",
    "Char",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Described",
    "Float",
    "Int",
    "Short",
    "Symbol",
    "Timestamp",
    "UByte",
    "UInt",
    "ULong",
    "UShort",
]


class AMQPType(enum.Enum):
    """The primitive types of core spec 1.6, used to name an :class:`Array`'s element type."""

    NULL = "null"
    BOOLEAN = "boolean"
    UBYTE = "ubyte"
    USHORT = "ushort"
    UINT = "uint"
    ULONG = "ulong"
    BYTE = "byte"
    SHORT = "short"
    INT = "int"
    LONG = "long"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL32 = "decimal32"
    DECIMAL64 = "decimal64"
    DECIMAL128 = "decimal128"
    CHAR = "char"
    TIMESTAMP = "timestamp"
    UUID = "uuid"
    BINARY = "binary"
    STRING = "string"
    SYMBOL = "symbol"
    LIST = "list"
    MAP = "map"
    ARRAY = "array"


_I = TypeVar("_I", bound="_BoundedInt")
_D = TypeVar("_D", bound="_DecimalBID")


class _BoundedInt(int):
    _min: int = 0
    _max: int = 0
    __slots__ = ()

    def __new__(cls: type[_I], value: int = 0) -> _I:
        if isinstance(value, bool):
            raise TypeError(f"{cls.__name__} takes an integer, not a bool")
        if not isinstance(value, int):
            try:
                value = operator.index(value)
            except TypeError:
                raise TypeError(
                    f"{cls.__name__} takes an integer, not {type(value).__name__}"
                ) from None
        if not cls._min <= value <= cls._max:
            raise ValueError(f"{cls.__name__} must be in [{cls._min}, {cls._max}], got {value}")
        return int.__new__(cls, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"


class UByte(_BoundedInt):
    """AMQP ubyte: an integer in [0, 2**8 - 1] (core spec 1.6.3)."""

    __slots__ = ()
    _min, _max = 0, 0xFF


class UShort(_BoundedInt):
    """AMQP ushort: an integer in [0, 2**16 - 1] (core spec 1.6.4)."""

    __slots__ = ()
    _min, _max = 0, 0xFFFF


class UInt(_BoundedInt):
    """AMQP uint: an integer in [0, 2**32 - 1] (core spec 1.6.5)."""

    __slots__ = ()
    _min, _max = 0, 0xFFFFFFFF


class ULong(_BoundedInt):
    """AMQP ulong: an integer in [0, 2**64 - 1] (core spec 1.6.6)."""

    __slots__ = ()
    _min, _max = 0, 0xFFFFFFFFFFFFFFFF


class Byte(_BoundedInt):
    """AMQP byte: an integer in [-2**7, 2**7 - 1] (core spec 1.6.7)."""

    __slots__ = ()
    _min, _max = -0x80, 0x7F


class Short(_BoundedInt):
    """AMQP short: an integer in [-2**15, 2**15 - 1] (core spec 1.6.8)."""

    __slots__ = ()
    _min, _max = -0x8000, 0x7FFF


class Int(_BoundedInt):
    """AMQP int: an integer in [-2**31, 2**31 - 1] (core spec 1.6.9). A plain Python ``int``
    is an AMQP long."""

    __slots__ = ()
    _min, _max = -0x80000000, 0x7FFFFFFF


class Timestamp(_BoundedInt):
    """AMQP timestamp: signed milliseconds since the Unix epoch, UTC (core spec 1.6.17)."""

    __slots__ = ()
    _min, _max = -0x8000000000000000, 0x7FFFFFFFFFFFFFFF

    @classmethod
    def from_datetime(cls, value: _dt.datetime) -> Timestamp:
        """The timestamp of an aware datetime (a naive one is taken as UTC)."""
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        delta = value - _EPOCH
        ms = (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000
        result: Timestamp = cls(ms)
        return result

    def to_datetime(self) -> _dt.datetime:
        """This timestamp as an aware UTC datetime (raises OverflowError outside years 1-9999)."""
        return _EPOCH + _dt.timedelta(milliseconds=int(self))


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_pack_f = struct.Struct(">f").pack
_unpack_f = struct.Struct(">f").unpack


class Float(float):
    """AMQP float: an IEEE 754 binary32 (core spec 1.6.11). The value is rounded to binary32
    on construction, so what you hold is exactly what is sent. A plain Python ``float`` is an
    AMQP double."""

    __slots__ = ()

    def __new__(cls, value: float = 0.0) -> Float:
        try:
            rounded: float = _unpack_f(_pack_f(value))[0]
        except OverflowError:
            raise ValueError(f"{value!r} is outside the range of a 32-bit float") from None
        return float.__new__(cls, rounded)

    def __repr__(self) -> str:
        return f"Float({float(self)!r})"


class Symbol(str):
    """AMQP symbol: a name from a constrained domain, ASCII only (core spec 1.6.21)."""

    __slots__ = ()

    def __new__(cls, value: str = "") -> Symbol:
        if not isinstance(value, str):
            raise TypeError(f"Symbol takes a str, not {type(value).__name__}")
        if not value.isascii():
            raise ValueError(f"a symbol must be ASCII: {value!r}")
        return str.__new__(cls, value)

    def __repr__(self) -> str:
        return f"Symbol({str(self)!r})"


class Char(str):
    """AMQP char: a single Unicode scalar value, sent as UTF-32BE (core spec 1.6.16)."""

    __slots__ = ()

    def __new__(cls, value: str) -> Char:
        if not isinstance(value, str) or len(value) != 1:
            raise ValueError(f"Char takes a string of exactly one character, got {value!r}")
        if 0xD800 <= ord(value) <= 0xDFFF:
            raise ValueError("Char cannot hold a surrogate code point")
        return str.__new__(cls, value)

    def __repr__(self) -> str:
        return f"Char({str(self)!r})"


class _DecimalBID:
    """An IEEE 754-2008 decimal in the Binary Integer Decimal encoding (core spec 1.6.13-15).

    The value is held as its raw bits, so decode then encode gives back the same bytes
    (including non-canonical encodings, NaN payloads and signed zeros);
    :meth:`to_decimal` and :meth:`from_decimal` convert to and from :class:`decimal.Decimal`.
    """

    __slots__ = ("bits",)
    _width = 0  # bits
    _exp_bits = 0
    _bias = 0
    _digits = 0
    bits: int

    def __init__(self, bits: int) -> None:
        if isinstance(bits, bool) or not isinstance(bits, int):
            raise TypeError(f"{type(self).__name__} takes the raw bits as an int")
        if not 0 <= bits < (1 << self._width):
            raise ValueError(f"{type(self).__name__} bits must fit in {self._width} bits")
        object.__setattr__(self, "bits", bits)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self.bits == other.bits
        return NotImplemented

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.bits))

    def __repr__(self) -> str:
        return f"{type(self).__name__}.from_decimal({str(self.to_decimal())!r})"

    def to_bytes(self) -> bytes:
        """The big-endian bytes as they go on the wire."""
        return self.bits.to_bytes(self._width // 8, "big")

    @classmethod
    def from_bytes(cls: type[_D], data: bytes) -> _D:
        if len(data) != cls._width // 8:
            raise ValueError(f"{cls.__name__} takes exactly {cls._width // 8} bytes")
        return cls(int.from_bytes(data, "big"))

    def to_decimal(self) -> _decimal.Decimal:
        """The value as a :class:`decimal.Decimal` (exact; non-canonical coefficients read as
        zero, as IEEE 754-2008 says)."""
        width, ebits = self._width, self._exp_bits
        bits = self.bits
        sign = bits >> (width - 1)
        top5 = (bits >> (width - 6)) & 0x1F
        if top5 == 0x1F:
            signalling = (bits >> (width - 7)) & 1
            return _decimal.Decimal(
                "-sNaN"
                if sign and signalling
                else "sNaN"
                if signalling
                else "-NaN"
                if sign
                else "NaN"
            )
        if top5 == 0x1E:
            return _decimal.Decimal("-Infinity" if sign else "Infinity")
        if (bits >> (width - 3)) & 0x3 == 0x3:
            tbits = width - 3 - ebits
            exponent = (bits >> tbits) & ((1 << ebits) - 1)
            coefficient = (0b100 << tbits) | (bits & ((1 << tbits) - 1))
        else:
            tbits = width - 1 - ebits
            exponent = (bits >> tbits) & ((1 << ebits) - 1)
            coefficient = bits & ((1 << tbits) - 1)
        if coefficient >= 10**self._digits:
            coefficient = 0
        digits = tuple(int(d) for d in str(coefficient))
        return _decimal.Decimal((sign, digits, exponent - self._bias))

    @classmethod
    def from_decimal(cls: type[_D], value: _decimal.Decimal | str | int) -> _D:
        """Encode a decimal exactly; raises ValueError when it needs more digits or a larger
        exponent than this format holds (no rounding is done behind your back)."""
        d = _decimal.Decimal(value)
        width, ebits = cls._width, cls._exp_bits
        sign = 1 if d.is_signed() else 0
        top = sign << (width - 1)
        if d.is_nan():
            flag = 0x3F if d.is_snan() else 0x3E
            return cls(top | (flag << (width - 7)))
        if d.is_infinite():
            return cls(top | (0x1E << (width - 6)))
        _, digit_tuple, exp = d.as_tuple()
        assert isinstance(exp, int)
        coefficient = int("".join(map(str, digit_tuple)) or "0")
        max_coefficient = 10**cls._digits - 1
        # Normalise: shift trailing digits into the exponent range if we can do so exactly.
        biased = exp + cls._bias
        emax = (3 << (ebits - 2)) - 1  # the largest biased exponent BID allows
        while biased > emax and coefficient and coefficient * 10 <= max_coefficient:
            coefficient *= 10
            biased -= 1
        while biased < 0 and coefficient % 10 == 0 and coefficient:
            coefficient //= 10
            biased += 1
        if coefficient == 0:
            biased = min(max(biased, 0), emax)
        if coefficient > max_coefficient or not 0 <= biased <= emax:
            raise ValueError(f"{value!r} does not fit exactly in {cls.__name__}")
        tbits = width - 1 - ebits
        if coefficient < (1 << tbits):
            return cls(top | (biased << tbits) | coefficient)
        tbits = width - 3 - ebits
        return cls(
            top | (0x3 << (width - 3)) | (biased << tbits) | (coefficient & ((1 << tbits) - 1))
        )


class Decimal32(_DecimalBID):
    """AMQP decimal32 (core spec 1.6.13): 7 digits, exponent -101 to 90."""

    __slots__ = ()
    _width, _exp_bits, _bias, _digits = 32, 8, 101, 7


class Decimal64(_DecimalBID):
    """AMQP decimal64 (core spec 1.6.14): 16 digits, exponent -398 to 369."""

    __slots__ = ()
    _width, _exp_bits, _bias, _digits = 64, 10, 398, 16


class Decimal128(_DecimalBID):
    """AMQP decimal128 (core spec 1.6.15): 34 digits, exponent -6176 to 6111."""

    __slots__ = ()
    _width, _exp_bits, _bias, _digits = 128, 14, 6176, 34


@attrs.frozen(repr=True)
class Described:
    """A described value whose descriptor the library does not know (core spec 1.2).

    ``descriptor`` is normally a :class:`ULong` (``(domain << 32) | id``) or a
    :class:`Symbol` (``"domain:name"``); ``value`` is any AMQP value. Known descriptors
    (performatives, sections, outcomes, ...) decode to their own classes instead.
    """

    descriptor: AMQPValue
    value: AMQPValue


def _to_tuple(items: Iterable[AMQPValue]) -> tuple[AMQPValue, ...]:
    return tuple(items)


@attrs.frozen(repr=True)
class Array:
    """An AMQP array (core spec 1.6.24): values of one type sharing one constructor.

    ``type`` names the element type. For an array of described values, ``descriptor`` is the
    shared descriptor and the ``items`` are the undescribed values. For an array of arrays,
    ``type`` is :attr:`AMQPType.ARRAY` and each item is an :class:`Array` of one common type.
    """

    type: AMQPType
    items: tuple[AMQPValue, ...] = attrs.field(converter=_to_tuple)
    descriptor: AMQPValue = None

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[AMQPValue]:
        return iter(self.items)

    def __getitem__(self, index: int) -> AMQPValue:
        return self.items[index]


class DescribedType(Protocol):
    """A value of a described type the library knows (core spec 1.3, 1.4): a composite
    (performative, outcome, terminus, transaction type, header or properties section) or a
    restricted message section (data, amqp-sequence, amqp-value, the annotation maps, the
    footer). The definitions declare them on :mod:`~amqp_sansio.codec.amqp10.composite`, which
    registers their encoders and decoders; the codec itself knows them only by this shape:
    each is a class with its descriptor (``DESCRIPTOR_CODE``, ``DESCRIPTOR_NAME``, core spec
    1.5) set on it."""

    DESCRIPTOR_CODE: int
    DESCRIPTOR_NAME: str


#: An AMQP value as Python holds it (core spec 1.6; see the codec docs for the mapping): what
#: :func:`~amqp_sansio.decode` returns and what :func:`~amqp_sansio.encode` writes. The
#: wrappers that subclass ``int``, ``float`` and ``str`` (:class:`UInt`, :class:`Float`,
#: :class:`Symbol`, ...) are in those arms; a composite is a performative, outcome, terminus,
#: transaction type or the header or properties section, and the other message sections
#: (core spec 3.2) have their own classes; a tuple is written as a list (and is how a list
#: used as a map key decodes).
AMQPValue: TypeAlias = Union[
    bool,
    int,
    float,
    str,
    bytes,
    uuid.UUID,
    Decimal32,
    Decimal64,
    Decimal128,
    Described,
    Array,
    DescribedType,
    "list[AMQPValue]",
    "tuple[AMQPValue, ...]",
    "dict[AMQPValue, AMQPValue]",
    None,
]
