"""The AMQP 0-10 data types (0-10 spec 3 "Types"; the XML's ``<type>`` list) and their
encodings: fixed-width (``bin8`` to ``bin1024``, the integers, ``char``, ``boolean``,
``float``, ``double``, ``datetime``, ``uuid``, ``dec32``, ``dec64``, ``void``, ``bit``) and
variable-width (``vbin8/16/32``, the ``str8``/``str16`` families, ``sequence-set``,
``byte-ranges``, ``map``, ``list``, ``array``, ``struct32``).

Map, list and array entries carry a type code; ``docs/amqp010.rst`` ("Types") has the table of
Python types and the codes they encode as, and :class:`Typed` gives any other code. Decoding
an entry whose code is not the default for its Python type gives a :class:`Typed`, so decoding
and encoding again gives the same octets (but for a map with a key twice, which keeps the
last).

Decoding is bounded and strict: sizes are checked against the bytes there are before anything
is sliced, nesting is limited (``max_depth``, :data:`DEFAULT_MAX_DEPTH`), and bad input raises
:class:`~amqp_sansio.codec.amqp010.errors.TruncatedError` or
:class:`~amqp_sansio.codec.amqp010.errors.DecodeError` (``framing-error``, 501).
"""

from __future__ import annotations

import struct
from typing import Any

from ._types import (
    DEFAULT_MAX_DEPTH,
    TYPES,
    Array,
    Reader,
    Struct32,
    TypeCode,
    Typed,
    Writer,
    code_of,
    read_typed,
    write_typed,
)
from .errors import DecodeError, EncodeError, TruncatedError, UnknownCodeError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "TYPES",
    "Array",
    "DecodeError",
    "EncodeError",
    "Reader",
    "Struct32",
    "TruncatedError",
    "TypeCode",
    "Typed",
    "WRITE_ERRORS",
    "UnknownCodeError",
    "Writer",
    "code_of",
    "decode",
    "encode",
    "read_typed",
    "write_typed",
]

#: What a writer raises on a value of the wrong type or range; the public functions turn it
#: into an :class:`EncodeError`.
WRITE_ERRORS = (struct.error, TypeError, AttributeError, OverflowError, ValueError)


def encode(type_name: str, value: Any, *, max_depth: int = DEFAULT_MAX_DEPTH) -> bytes:
    """Encode ``value`` as the 0-10 type ``type_name`` (``"str8"``, ``"map"``, ...; 0-10
    spec 3). Raises :class:`EncodeError` when it cannot be."""
    if type_name not in TYPES:
        raise EncodeError(f"no AMQP 0-10 type {type_name!r}")
    out = bytearray()
    try:
        TYPES[type_name][2](out, value, max_depth)
    except EncodeError:
        raise
    except WRITE_ERRORS as exc:
        raise EncodeError(f"cannot encode {value!r} as {type_name}: {exc}") from None
    return bytes(out)


def decode(type_name: str, data: bytes, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """Decode ``data``, exactly one value of the 0-10 type ``type_name`` (0-10 spec 3).
    Raises :class:`DecodeError` (or :class:`TruncatedError`) on anything else."""
    if type_name not in TYPES:
        raise EncodeError(f"no AMQP 0-10 type {type_name!r}")
    buf = bytes(data)
    value, end = TYPES[type_name][1](buf, 0, max_depth)
    if end != len(buf):
        raise DecodeError(f"{len(buf) - end} octets after the {type_name}", offset=end)
    return value
