"""The AMQP 1.0 type system and its encodings (core spec part 1), as one public module.

``encode(value) -> bytes`` and ``decode(data) -> value`` handle one whole value;
``decode_from(data, offset)`` is the incremental form. See the codec page of the docs for the
Python type mapping, the wrapper types, the limits and the errors.
"""

from ...errors import DecodeError, EncodeError, InvalidFieldError
from .decoder import DEFAULT_MAX_DEPTH, MAX_ZERO_WIDTH_ELEMENTS, decode, decode_from
from .encoder import encode, encode_into
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

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_ZERO_WIDTH_ELEMENTS",
    "AMQPType",
    "AMQPValue",
    "Array",
    "Byte",
    "Char",
    "DecodeError",
    "Decimal32",
    "Decimal64",
    "Decimal128",
    "Described",
    "EncodeError",
    "Float",
    "Int",
    "InvalidFieldError",
    "Short",
    "Symbol",
    "Timestamp",
    "UByte",
    "UInt",
    "ULong",
    "UShort",
    "decode",
    "decode_from",
    "encode",
    "encode_into",
]
