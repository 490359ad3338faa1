"""Hypothesis strategies for the AMQP 0-10 types, maps and compounds, and the qpid-python
peer's codec wrapped for cross-checks (``tests/support/qpid_peer.py`` finds it); two
engines wired in memory are in ``engine``."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

from amqp_sansio.codec.amqp010 import Array, TypeCode, Typed

Strategy = st.SearchStrategy


def _ints(bits: int, signed: bool) -> Strategy[int]:
    if signed:
        return st.integers(-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return st.integers(0, (1 << bits) - 1)


def _bin(size: int) -> Strategy[bytes]:
    return st.binary(min_size=size, max_size=size)


def _latin(max_size: int) -> Strategy[str]:
    return st.text(st.characters(codec="iso-8859-15"), max_size=max_size)


def _utf8(max_octets: int) -> Strategy[str]:
    return st.text(max_size=max_octets // 4)


def _utf16(max_octets: int) -> Strategy[str]:
    return st.text(st.characters(exclude_categories=("Cs",)), max_size=max_octets // 4)


_ranges32 = st.tuples(_ints(32, False), _ints(32, False))
_ranges64 = st.tuples(_ints(64, False), _ints(64, False))

#: The values of each fixed or string type, as decoding gives them back.
SCALARS: dict[str, Strategy[Any]] = {
    "bin8": _bin(1),
    "int8": _ints(8, True),
    "uint8": _ints(8, False),
    "char": st.characters(codec="iso-8859-15"),
    "boolean": st.booleans(),
    "bin16": _bin(2),
    "int16": _ints(16, True),
    "uint16": _ints(16, False),
    "bin32": _bin(4),
    "int32": _ints(32, True),
    "uint32": _ints(32, False),
    "float": st.floats(width=32, allow_nan=False),
    "char-utf32": st.characters(exclude_categories=("Cs",)),
    "sequence-no": _ints(32, False),
    "bin64": _bin(8),
    "int64": _ints(64, True),
    "uint64": _ints(64, False),
    "double": st.floats(allow_nan=False),
    "datetime": _ints(64, False),
    "bin128": _bin(16),
    "uuid": st.uuids(),
    "bin256": _bin(32),
    "bin512": _bin(64),
    "bin1024": _bin(128),
    "vbin8": st.binary(max_size=255),
    "str8-latin": _latin(255),
    "str8": _utf8(255),
    "str8-utf16": _utf16(255),
    "vbin16": st.binary(max_size=300),
    "str16-latin": _latin(300),
    "str16": _utf8(300),
    "str16-utf16": _utf16(300),
    "byte-ranges": st.lists(_ranges64, max_size=5).map(tuple),
    "sequence-set": st.lists(_ranges32, max_size=5).map(tuple),
    "vbin32": st.binary(max_size=300),
    "bin40": _bin(5),
    "dec32": st.tuples(_ints(8, False), _ints(32, True)),
    "bin72": _bin(9),
    "dec64": st.tuples(_ints(8, False), _ints(64, True)),
    "void": st.none(),
    "bit": st.just(True),
}


def decimal_of(pair: tuple[int, int]) -> Any:
    """The :class:`~decimal.Decimal` a (exponent, unscaled) pair decodes as."""
    from decimal import Decimal

    exponent, value = pair
    return Decimal(value).scaleb(-exponent)


def scalar(type_name: str) -> Strategy[Any]:
    """Values of a non-compound type as decoding gives them back."""
    strategy = SCALARS[type_name]
    if type_name in ("dec32", "dec64"):
        return strategy.map(decimal_of)
    return strategy


_CODED = [name for name in SCALARS if name.replace("-", "_").upper() in TypeCode.__members__]
_DEFAULT_SCALARS: Strategy[Any] = st.one_of(
    st.booleans(),
    _ints(64, True),
    st.floats(allow_nan=False),
    _utf8(300),
    st.binary(max_size=50),
    st.none(),
    st.uuids(),
)


def _typed(name: str) -> Strategy[Any]:
    return scalar(name).map(lambda v: Typed(TypeCode[name.replace("-", "_").upper()], v))


def _array(name: str) -> Strategy[Array]:
    code = TypeCode[name.replace("-", "_").upper()]
    return st.lists(scalar(name), max_size=4).map(lambda items: Array(code, items))


#: The types whose code is the default of a Python type (docs/amqp010.rst, "Types").
DEFAULT_TYPES = ("boolean", "int64", "double", "str16", "vbin32", "void", "uuid", "dec64")


#: The types qpid-python's codec010 reads in a map, list or array besides the defaults.
QPID_TYPES = (
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "uint64",
    "float",
    "vbin8",
    "vbin16",
    "str8",
    "str16-latin",
    "bin128",
)


def entries(max_leaves: int = 10, types: tuple[str, ...] | None = None) -> Strategy[Any]:
    """Map, list and array entries as decoding gives them back: plain values for the default
    codes, :class:`Typed` for the others (of ``types`` if given), nested maps, lists and
    arrays."""
    others = [n for n in types or _CODED if n not in DEFAULT_TYPES and n != "bit"]
    typed = st.sampled_from(others).flatmap(_typed)
    in_arrays = [n for n in types or _CODED if n not in ("void", "bit")]
    arrays = st.sampled_from(in_arrays).flatmap(_array)
    bit = st.just(Typed(TypeCode.BIT, True)) if types is None else st.nothing()
    leaves = st.one_of(_DEFAULT_SCALARS, typed, arrays, bit)
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(_utf8(255), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def maps(types: tuple[str, ...] | None = None) -> Strategy[dict[str, Any]]:
    """Maps as decoding gives them back (entries of ``types`` and the defaults if given)."""
    return st.dictionaries(_utf8(255), entries(types=types), max_size=5)


def plain(value: Any) -> Any:
    """``value`` without the :class:`Typed` and :class:`Array` wrappers, lists for tuples:
    what qpid-python decodes the same octets as (but for its own types, see
    :func:`from_qpid`)."""
    if isinstance(value, Typed):
        return plain(value.value)
    if isinstance(value, Array):
        return [plain(v) for v in value.items]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def from_qpid(value: Any) -> Any:
    """A value qpid-python decoded, in plain Python types (its ``timestamp`` and ``serial``
    as ints, its ``UUID`` as :class:`uuid.UUID`)."""
    if isinstance(value, dict):
        return {k: from_qpid(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_qpid(v) for v in value]
    if type(value).__name__ == "UUID":
        return uuid.UUID(bytes=value.bytes)
    if type(value).__name__ in ("timestamp", "serial"):
        return int(value) if type(value).__name__ == "timestamp" else value.value
    return value


_QPID_SCALARS = st.one_of(
    st.booleans(),
    _ints(64, True),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.none(),
    st.uuids(),
)


def qpid_maps() -> Strategy[dict[str, Any]]:
    """Maps that qpid-python writes with the same codes as ours: default-coded entries only,
    no bytes (which it writes as ``vbin16``)."""
    values = st.recursive(
        _QPID_SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)
        ),
        max_leaves=8,
    )
    return st.dictionaries(st.text(max_size=10), values, max_size=4)
