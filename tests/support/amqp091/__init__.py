"""Hypothesis strategies for AMQP 0-9-1 values (tests/amqp091), and the bridge to pamqp, the
codec under aiormq and aio-pika, that the cross-checks compare with."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from hypothesis import strategies as st

from amqp_sansio import amqp091

#: Keys of field tables: short, any UTF-8.
keys = st.text(max_size=12)


def decimals() -> st.SearchStrategy[decimal.Decimal]:
    """Decimals a field table holds: a scale octet and a signed 32-bit value."""
    return st.builds(
        lambda value, scale: decimal.Decimal(value).scaleb(-scale),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(0, 255),
    )


#: Bytes that are not UTF-8 (they stay bytes through an ``S`` field).
not_utf8 = st.binary(max_size=20).map(lambda b: b"\xff" + b)

#: Every scalar a field table holds, each of a type that decodes back to itself.
scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(0, 255).map(amqp091.codec.UInt8),
    st.integers(-(2**15), 2**15 - 1).map(amqp091.codec.Int16),
    st.integers(0, 2**16 - 1).map(amqp091.codec.UInt16),
    st.integers(-(2**31), 2**31 - 1).map(amqp091.codec.Int32),
    st.integers(0, 2**32 - 1).map(amqp091.codec.UInt32),
    st.integers(-(2**63), 2**63 - 1).map(amqp091.codec.Int64),
    st.floats(allow_nan=False),
    st.floats(width=32, allow_nan=False).map(amqp091.codec.Float32),
    decimals(),
    st.text(max_size=20),
    not_utf8,
    st.binary(max_size=20).map(bytearray),
    st.integers(0, 2**64 - 1).map(amqp091.codec.Timestamp),
    st.none(),
)


def field_values(leaf: st.SearchStrategy[Any] = scalars) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaf,
        lambda children: (
            st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4)
        ),
        max_leaves=12,
    )


def tables(leaf: st.SearchStrategy[Any] = scalars) -> st.SearchStrategy[dict[str, Any]]:
    return st.dictionaries(keys, field_values(leaf), max_size=5)


#: What pamqp encodes as we decode it back equal: no plain floats (pamqp writes them as
#: single precision), no bytes (it has no ``S`` of bytes), no typed integers.
pamqp_scalars = st.one_of(
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(width=32, allow_nan=False),
    decimals(),
    st.text(max_size=20),
    st.binary(max_size=20).map(bytearray),
    st.none(),
)


def shortstr(alphabet: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[str]:
    text = st.text(alphabet, max_size=40) if alphabet else st.text(max_size=40)
    return text.filter(lambda s: len(s.encode()) <= 255)


def domain_values(type_: str, *, pamqp: bool = False) -> st.SearchStrategy[Any]:
    """Values of a method argument or property of domain type ``type_``."""
    if type_ == "bit":
        return st.booleans()
    if type_ in ("octet", "short", "long", "longlong"):
        bits = {"octet": 8, "short": 16, "long": 32, "longlong": 64}[type_]
        if pamqp and type_ == "longlong":
            bits = 63  # pamqp reads a longlong as signed
        return st.integers(0, 2**bits - 1)
    if type_ == "shortstr":
        return shortstr()
    if type_ == "longstr":
        # pamqp writes long strings from str only.
        return st.text(max_size=40).map(str.encode) if pamqp else st.binary(max_size=40)
    if type_ == "timestamp":
        # pamqp reads a timestamp past 2106 as milliseconds.
        return st.integers(0, 2**32 - 1 if pamqp else 2**64 - 1).map(amqp091.codec.Timestamp)
    assert type_ == "table"
    return tables(pamqp_scalars) if pamqp else tables()


def method_values(cls: type[amqp091.Method], *, pamqp: bool = False) -> st.SearchStrategy[Any]:
    """Instances of the method class ``cls`` with any argument values."""
    return st.fixed_dictionaries(
        {name: domain_values(type_, pamqp=pamqp) for name, type_ in cls.FIELDS}
    ).map(lambda kwargs: cls(**kwargs))


# -- pamqp --------------------------------------------------------------------------------------


def pamqp_class(cls: type[amqp091.Method]) -> Any:
    from pamqp import commands

    return commands.INDEX_MAPPING[cls.CLASS_ID << 16 | cls.METHOD_ID]


def to_pamqp(value: amqp091.Method) -> Any:
    """The pamqp method with the same arguments (by position: pamqp names some otherwise),
    made without pamqp's checks of reserved fields and names (they are policy, not codec)."""
    theirs = pamqp_class(type(value))
    obj = theirs.__new__(theirs)
    names = theirs.attributes()
    assert len(names) == len(value.FIELDS), value.NAME
    for name, (ours, type_) in zip(names, value.FIELDS, strict=True):
        field = getattr(value, ours)
        if type_ == "longstr":
            field = field.decode()
        setattr(obj, name, field)
    return obj


def from_pamqp(obj: Any, cls: type[amqp091.Method]) -> dict[str, Any]:
    """A pamqp method's arguments under our names, long strings as bytes."""
    out = {}
    for name, (ours, type_) in zip(obj.attributes(), cls.FIELDS, strict=True):
        field = getattr(obj, name)
        if type_ == "longstr" and isinstance(field, str):
            field = field.encode()
        out[ours] = field
    return out


@contextmanager
def pamqp_unchecked() -> Iterator[None]:
    """pamqp's ``validate`` (its policy on reserved fields and names) switched off, and its
    warning that a method is deprecated (``basic.recover-async``) silenced."""
    import warnings
    from unittest import mock

    from pamqp import commands

    with ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", "This command is deprecated", DeprecationWarning)
        for cls in commands.INDEX_MAPPING.values():
            if "validate" in vars(cls):
                stack.enter_context(mock.patch.object(cls, "validate", lambda self: None))
        stack.enter_context(
            mock.patch.object(commands.Basic.Properties, "validate", lambda self: None)
        )
        yield


def pamqp_timestamp(value: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(value, datetime.timezone.utc)
