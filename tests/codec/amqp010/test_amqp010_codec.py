"""The AMQP 0-10 types (0-10 spec 3): every type round-trips, maps, lists and arrays against
qpid-python's ``codec010`` in both directions, and hostile input ends in the typed errors."""

from __future__ import annotations

import struct
import uuid
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import amqp010 as strategies
from support.qpid_peer import qpid_module

from amqp_sansio import errors
from amqp_sansio.codec import amqp010 as codec
from amqp_sansio.codec.amqp010 import Array, Struct32, TypeCode, Typed


def sized(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def map_bytes(*entries: bytes) -> bytes:
    return sized(struct.pack(">I", len(entries)) + b"".join(entries))


# -- every type ---------------------------------------------------------------------------


@pytest.mark.parametrize("type_name", sorted(strategies.SCALARS))
@settings(max_examples=40)
@given(data=st.data())
def test_every_type_round_trips(type_name: str, data: st.DataObject) -> None:
    value = data.draw(strategies.scalar(type_name))
    octets = codec.encode(type_name, value)
    assert codec.decode(type_name, octets) == value
    assert codec.encode(type_name, codec.decode(type_name, octets)) == octets


@given(strategies.maps())
def test_maps_decode_and_encode_to_the_same_octets(value: dict[str, Any]) -> None:
    octets = codec.encode("map", value)
    decoded = codec.decode("map", octets)
    assert decoded == value
    assert codec.encode("map", decoded) == octets


@pytest.mark.parametrize(
    ("type_name", "value", "octets"),
    [
        ("uint16", 0x1234, b"\x12\x34"),
        ("int8", -1, b"\xff"),
        ("boolean", True, b"\x01"),
        ("char", "€", b"\xa4"),
        ("str8", "é", b"\x02\xc3\xa9"),
        ("str16-utf16", "a", b"\x00\x02\x00a"),
        ("dec32", Decimal("-1.5"), b"\x01\xff\xff\xff\xf1"),
        ("sequence-set", ((1, 3),), b"\x00\x08\x00\x00\x00\x01\x00\x00\x00\x03"),
        ("void", None, b""),
        ("bit", True, b""),
        ("list", [1], sized(b"\x00\x00\x00\x01\x31" + bytes(7) + b"\x01")),
        ("array", ["a"], sized(b"\x95\x00\x00\x00\x01\x00\x01a")),
        ("array", [], sized(b"\xf0\x00\x00\x00\x00")),
        ("struct32", Struct32(0x0401, b"\x00\x00"), sized(b"\x04\x01\x00\x00")),
    ],
)
def test_the_octets_of_the_spec(type_name: str, value: Any, octets: bytes) -> None:
    assert codec.encode(type_name, value) == octets
    decoded = codec.decode(type_name, octets)
    assert strategies.plain(decoded) == strategies.plain(value)


def test_a_positive_exponent_decimal_scales_its_value() -> None:
    assert codec.encode("dec64", Decimal("5E+2")) == b"\x00" + struct.pack(">q", 500)


def test_python_types_pick_their_codes() -> None:
    class Flag(int):
        pass

    assert codec.code_of(Flag(3)) is TypeCode.INT64
    assert codec.encode("map", {"f": Flag(3)}) == codec.encode("map", {"f": 3})
    assert codec.code_of(Typed(TypeCode.UINT8, 3)) is TypeCode.UINT8
    assert codec.code_of(Decimal(1)) is TypeCode.DEC64
    assert codec.code_of((1,)) is TypeCode.LIST
    with pytest.raises(codec.EncodeError):
        codec.code_of(object())


def test_read_and_write_typed_by_code() -> None:
    out = bytearray()
    codec.write_typed(out, TypeCode.UINT16, 7, 1)
    assert codec.read_typed(TypeCode.UINT16, bytes(out), 0, 1) == (7, 2)
    with pytest.raises(codec.DecodeError):
        codec.read_typed(0x03, b"", 0, 1)


# -- qpid-python, both ways ----------------------------------------------------------------

QPID_TYPES = {
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "uint16": "uint16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
    "double": "double",
    "float": "float",
    "boolean": "boolean",
    "vbin8": "vbin8",
    "vbin16": "vbin16",
    "vbin32": "vbin32",
    "str8": "str8",
    "str16": "str16",
    "uuid": "uuid",
    "bin128": "bin128",
    "datetime": "datetime",
    "sequence-no": "sequence_no",
    "void": "void",
}


def _qpid_value(type_name: str, value: Any) -> Any:
    datatypes = qpid_module("qpid.datatypes")
    if type_name == "uuid":
        return datatypes.UUID(bytes=value.bytes)
    if type_name == "sequence-no":
        return datatypes.serial(value)
    return value


@pytest.mark.parametrize("type_name", sorted(QPID_TYPES))
@settings(max_examples=30)
@given(data=st.data())
def test_types_against_qpid_both_ways(type_name: str, data: st.DataObject) -> None:
    sc_class = qpid_module("qpid.codec010").StringCodec
    value = data.draw(strategies.scalar(type_name))
    if type_name == "datetime":
        value %= 1 << 53  # qpid-python's timestamp is a float
    ours = codec.encode(type_name, value)
    theirs = sc_class(ours)
    assert strategies.from_qpid(getattr(theirs, f"read_{QPID_TYPES[type_name]}")()) == value
    written = sc_class()
    getattr(written, f"write_{QPID_TYPES[type_name]}")(_qpid_value(type_name, value))
    assert written.encoded == ours
    assert codec.decode(type_name, written.encoded) == value


@settings(max_examples=60)
@given(strategies.maps(strategies.QPID_TYPES))
def test_maps_we_write_qpid_reads(value: dict[str, Any]) -> None:
    sc = qpid_module("qpid.codec010").StringCodec(codec.encode("map", value))
    assert strategies.from_qpid(sc.read_map()) == _comparable(value)


def _comparable(value: Any) -> Any:
    if isinstance(value, Typed):
        if value.code in (TypeCode.UUID,):
            return value.value
        return _comparable(value.value)
    if isinstance(value, Array):
        return [_comparable(v) for v in value.items]
    if isinstance(value, dict):
        return {k: _comparable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    return value


_QPID_SCALARS = st.one_of(
    st.booleans(),
    st.integers(-(1 << 63), (1 << 63) - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.none(),
    st.uuids(),
)
_QPID_VALUES = st.recursive(
    _QPID_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=8,
)


def _to_qpid(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return qpid_module("qpid.datatypes").UUID(bytes=value.bytes)
    if isinstance(value, dict):
        return {k: _to_qpid(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_to_qpid(v) for v in value]
    return value


@settings(max_examples=60)
@given(st.dictionaries(st.text(max_size=10), _QPID_VALUES, max_size=4))
def test_maps_qpid_writes_we_read(value: dict[str, Any]) -> None:
    sc = qpid_module("qpid.codec010").StringCodec()
    sc.write_map(_to_qpid(value))
    decoded = codec.decode("map", sc.encoded)
    # qpid-python writes bytes as vbin16, which we read as Typed(VBIN16, ...)
    assert strategies.plain(decoded) == value
    assert codec.encode("map", decoded) == sc.encoded


@settings(max_examples=40)
@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=5))
def test_arrays_and_lists_both_ways(items: list[int]) -> None:
    qpid = qpid_module("qpid.codec010")
    for kind in ("array", "list"):
        sc = qpid.StringCodec()
        getattr(sc, f"write_{kind}")(items)
        if kind == "array" and not items:
            continue  # qpid-python writes an empty array with the void code, as we do
        assert codec.encode(kind, items) == sc.encoded
        assert strategies.plain(codec.decode(kind, sc.encoded)) == items
        assert getattr(qpid.StringCodec(codec.encode(kind, items)), f"read_{kind}")() == items


# -- hostile input -------------------------------------------------------------------------


@settings(max_examples=40)
@given(strategies.maps())
def test_every_prefix_is_a_typed_error(value: dict[str, Any]) -> None:
    octets = codec.encode("map", value)
    for end in range(len(octets)):
        with pytest.raises(codec.DecodeError):
            codec.decode("map", octets[:end])


@pytest.mark.parametrize("type_name", sorted(codec.TYPES))
@given(data=st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_the_typed_error(type_name: str, data: bytes) -> None:
    try:
        codec.decode(type_name, data)
    except codec.DecodeError as exc:
        assert isinstance(exc, errors.DecodeError)
        assert exc.error_code in (501, 540)


@pytest.mark.parametrize(
    ("type_name", "octets", "error"),
    [
        ("uint32", b"\x00\x00", codec.TruncatedError),
        ("bin16", b"\x00", codec.TruncatedError),
        ("vbin16", b"\x00", codec.TruncatedError),
        ("vbin16", b"\xff\xff\x00", codec.TruncatedError),
        ("boolean", b"", codec.TruncatedError),
        ("boolean", b"\x02", codec.DecodeError),
        ("char", b"", codec.TruncatedError),
        ("char-utf32", b"\x00\x00", codec.TruncatedError),
        ("char-utf32", b"\x00\x11\x00\x00", codec.DecodeError),
        ("uuid", bytes(15), codec.TruncatedError),
        ("dec32", bytes(4), codec.TruncatedError),
        ("str8", b"\x01\xff", codec.DecodeError),
        ("str16-utf16", b"\x00\x02\xd8\x00", codec.DecodeError),
        ("sequence-set", b"\x00", codec.TruncatedError),
        ("sequence-set", b"\x00\x08\x00", codec.TruncatedError),
        ("sequence-set", b"\x00\x04" + bytes(4), codec.DecodeError),
        ("map", b"\x00\x00", codec.TruncatedError),
        ("map", b"\xff\xff\xff\xff", codec.TruncatedError),
        ("map", sized(b""), codec.DecodeError),
        ("map", map_bytes(b"\x01a\x03"), codec.DecodeError),
        ("map", sized(struct.pack(">I", 0) + b"\x00"), codec.DecodeError),
        ("list", sized(b""), codec.DecodeError),
        ("list", sized(struct.pack(">I", 1) + b"\x03"), codec.DecodeError),
        ("map", sized(struct.pack(">I", 1)), codec.TruncatedError),
        ("map", map_bytes(b"\x01\xff\xf0"), codec.DecodeError),
        ("list", sized(struct.pack(">I", 0) + b"\x00"), codec.DecodeError),
        ("list", sized(struct.pack(">I", 1)), codec.TruncatedError),
        ("array", sized(b"\x03\x00\x00\x00\x00"), codec.DecodeError),
        ("array", sized(b"\xf0\xff\xff\xff\xff"), codec.DecodeError),
        ("array", sized(b"\xf0\x00\x00\x00\x00\x00"), codec.DecodeError),
        ("struct32", sized(b"\x00"), codec.DecodeError),
        ("uint8", b"\x00\x00", codec.DecodeError),
    ],
)
def test_hostile_values(type_name: str, octets: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        codec.decode(type_name, octets)


def test_nesting_deeper_than_the_limit() -> None:
    octets = codec.encode("list", [])
    for _ in range(codec.DEFAULT_MAX_DEPTH - 1):
        octets = sized(struct.pack(">I", 1) + b"\xa9" + octets)
    assert codec.decode("list", octets) is not None
    deeper = sized(struct.pack(">I", 1) + b"\xa9" + octets)
    with pytest.raises(codec.DecodeError, match="nested"):
        codec.decode("list", deeper)
    assert codec.decode("list", deeper, max_depth=codec.DEFAULT_MAX_DEPTH + 1)
    deep_map = codec.encode("map", {})
    for _ in range(codec.DEFAULT_MAX_DEPTH):
        deep_map = map_bytes(b"\x01k\xa8" + deep_map)
    with pytest.raises(codec.DecodeError, match="nested"):
        codec.decode("map", deep_map)
    nested: list[Any] = []
    for _ in range(codec.DEFAULT_MAX_DEPTH):
        nested = [nested]
    with pytest.raises(codec.EncodeError, match="nested"):
        codec.encode("list", nested)


def test_a_huge_array_of_nothing_is_refused_before_allocating() -> None:
    with pytest.raises(codec.DecodeError, match="values in"):
        codec.decode("array", sized(b"\xf0" + struct.pack(">I", 10**9)))


@pytest.mark.parametrize(
    ("type_name", "value"),
    [
        ("bin8", b"ab"),
        ("vbin8", "text"),
        ("vbin8", b"x" * 256),
        ("str8", b"bytes"),
        ("uint8", 256),
        ("uint16", "1"),
        ("char", "ab"),
        ("char-utf32", "ab"),
        ("dec32", Decimal("NaN")),
        ("void", 0),
        ("bit", False),
        ("map", {"k": object()}),
        ("uuid", "not a uuid"),
        ("nonesuch", 1),
    ],
)
def test_values_that_cannot_be_encoded(type_name: str, value: Any) -> None:
    with pytest.raises(codec.EncodeError):
        codec.encode(type_name, value)


def test_an_unknown_type_name_to_decode_is_the_callers_mistake() -> None:
    with pytest.raises(codec.EncodeError):
        codec.decode("nonesuch", b"")
