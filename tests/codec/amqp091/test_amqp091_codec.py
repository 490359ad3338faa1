"""Field tables and arrays (the 0-9-1 codec) with every field type RabbitMQ and the Python
clients use, against the bytes pamqp writes and reads, and hostile tables."""

from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

import pamqp.decode
import pamqp.encode
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import amqp091 as strategies

from amqp_sansio import amqp091, errors


def table_bytes(*items: bytes) -> bytes:
    body = b"".join(items)
    return struct.pack(">I", len(body)) + body


def item(key: str, tag: bytes, value: bytes) -> bytes:
    return bytes([len(key)]) + key.encode() + tag + value


#: One value of each field type: the octets as RabbitMQ writes them (its "AMQP 0-9-1 errata",
#: section 3) and the value we decode them to.
EVERY_TYPE: list[tuple[str, bytes, Any]] = [
    ("t", b"\x01", True),
    ("t", b"\x00", False),
    ("b", b"\xff", -1),
    ("B", b"\xff", amqp091.codec.UInt8(255)),
    ("s", b"\x80\x00", -32768),
    ("s", b"\x00\x01", amqp091.codec.Int16(1)),
    ("u", b"\xff\xff", amqp091.codec.UInt16(65535)),
    ("I", b"\x80\x00\x00\x00", -(2**31)),
    ("I", b"\x00\x00\x00\x07", amqp091.codec.Int32(7)),
    ("i", b"\xff\xff\xff\xff", amqp091.codec.UInt32(2**32 - 1)),
    ("l", b"\x80" + b"\x00" * 7, -(2**63)),
    ("l", b"\x00" * 7 + b"\x07", amqp091.codec.Int64(7)),
    ("f", struct.pack(">f", 1.5), amqp091.codec.Float32(1.5)),
    ("d", struct.pack(">d", 0.1), 0.1),
    ("D", b"\x02\xff\xff\xff\x85", decimal.Decimal("-1.23")),
    ("S", b"\x00\x00\x00\x03abc", "abc"),
    ("S", b"\x00\x00\x00\x02\xff\xfe", b"\xff\xfe"),
    ("x", b"\x00\x00\x00\x02\x00\x01", bytearray(b"\x00\x01")),
    ("T", b"\x00\x00\x00\x00\x65\x53\xf1\x00", amqp091.codec.Timestamp(1_700_000_000)),
    ("V", b"", None),
    ("F", table_bytes(item("k", b"b", b"\x01")), {"k": 1}),
    ("A", b"\x00\x00\x00\x03b\x01V", [1, None]),
]


@pytest.mark.parametrize(("tag", "value_bytes", "value"), EVERY_TYPE)
def test_every_field_type(tag: str, value_bytes: bytes, value: Any) -> None:
    wire = table_bytes(item("key", tag.encode(), value_bytes))
    decoded = amqp091.decode_table(wire)
    assert decoded == {"key": value}
    assert type(decoded["key"]) is type(value)
    assert amqp091.encode_table(decoded) == wire  # the tag is kept
    assert amqp091.encode_table({"key": value}) == wire


@pytest.mark.parametrize(("tag", "value_bytes", "value"), EVERY_TYPE)
def test_pamqp_reads_every_field_type(tag: str, value_bytes: bytes, value: Any) -> None:
    _, theirs = pamqp.decode.field_table(table_bytes(item("key", tag.encode(), value_bytes)))
    if isinstance(value, amqp091.codec.Timestamp):
        value = strategies.pamqp_timestamp(value)
    assert theirs == {"key": value}


def test_plain_values_take_the_smallest_signed_integer_and_double() -> None:
    """RabbitMQ reads every tag; plain ints go as b, s, I or l, floats as d, str and bytes
    as S, datetimes as T."""
    encode = amqp091.encode_table
    assert encode({"a": 1}) == table_bytes(item("a", b"b", b"\x01"))
    assert encode({"a": 300}) == table_bytes(item("a", b"s", b"\x01\x2c"))
    assert encode({"a": 70000}) == table_bytes(item("a", b"I", struct.pack(">i", 70000)))
    assert encode({"a": 2**40}) == table_bytes(item("a", b"l", struct.pack(">q", 2**40)))
    assert encode({"a": 0.5}) == table_bytes(item("a", b"d", struct.pack(">d", 0.5)))
    assert encode({"a": b"\x00"}) == table_bytes(item("a", b"S", b"\x00\x00\x00\x01\x00"))
    when = datetime.datetime(2023, 11, 14, 22, 13, 20)  # naive: UTC
    assert encode({"a": when}) == table_bytes(item("a", b"T", struct.pack(">Q", 1_700_000_000)))
    assert encode({"a": (1, "x")}) == encode({"a": [1, "x"]})
    assert encode({"a": decimal.Decimal("1E+2")}) == table_bytes(
        item("a", b"D", b"\x00\x00\x00\x00\x64")
    )


def test_the_tags_pamqp_writes_for_plain_values() -> None:
    """pamqp writes 32768..65535 as ``u`` and floats as ``f``: we read both."""
    for value in (40000, 3_000_000_000, 0.25, -5, True, "x", None, [1], {"n": {}}):
        wire = pamqp.encode.field_table({"v": value})
        assert amqp091.decode_table(wire) == {"v": value}


def test_subclasses_of_supported_types_encode_as_their_base() -> None:
    import enum

    class Color(enum.IntEnum):
        RED = 1

    class Name(str):
        pass

    assert amqp091.encode_table({"c": Color.RED, "n": Name("x")}) == amqp091.encode_table(
        {"c": 1, "n": "x"}
    )


def test_timestamps() -> None:
    stamp = amqp091.codec.Timestamp.from_datetime(
        datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
    )
    assert stamp == 1_704_067_200 and repr(stamp) == "Timestamp(1704067200)"
    assert stamp.to_datetime() == datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


@settings(max_examples=300, deadline=None)
@given(table=strategies.tables())
def test_tables_round_trip_exactly(table: dict[str, Any]) -> None:
    wire = amqp091.encode_table(table)
    decoded = amqp091.decode_table(wire)
    assert decoded == table
    assert amqp091.encode_table(decoded) == wire


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200))
def test_any_bytes_decode_or_raise_a_decode_error(data: bytes) -> None:
    """The fuzz invariant, here on tables: a decoded table encodes back to the same octets."""
    wire = struct.pack(">I", len(data)) + data
    try:
        table = amqp091.decode_table(wire)
    except errors.DecodeError as exc:
        assert exc.reply_code in (501, 502)  # type: ignore[attr-defined]
        return
    again = amqp091.encode_table(table)
    assert amqp091.encode_table(amqp091.decode_table(again)) == again


@settings(max_examples=200, deadline=None)
@given(table=strategies.tables(strategies.pamqp_scalars))
def test_we_read_pamqp_tables(table: dict[str, Any]) -> None:
    assert amqp091.decode_table(pamqp.encode.field_table(table)) == table


def _as_pamqp(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _as_pamqp(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_pamqp(v) for v in value]
    if isinstance(value, amqp091.codec.Timestamp):
        return strategies.pamqp_timestamp(value)
    return value


_ours_for_pamqp = st.one_of(
    strategies.pamqp_scalars,
    st.floats(allow_nan=False),
    strategies.not_utf8,
    st.integers(0, 2**32 - 1).map(amqp091.codec.Timestamp),
    st.integers(0, 255).map(amqp091.codec.UInt8),
    st.integers(0, 2**16 - 1).map(amqp091.codec.UInt16),
    st.integers(0, 2**32 - 1).map(amqp091.codec.UInt32),
)


@settings(max_examples=200, deadline=None)
@given(table=strategies.tables(_ours_for_pamqp))
def test_pamqp_reads_our_tables(table: dict[str, Any]) -> None:
    _, theirs = pamqp.decode.field_table(amqp091.encode_table(table))
    assert theirs == _as_pamqp(table)


def nested(depth: int) -> bytes:
    """A table holding a table ... ``depth`` tables in all."""
    wire = table_bytes()
    for _ in range(depth - 1):
        wire = table_bytes(item("n", b"F", wire))
    return wire


def nested_arrays(depth: int) -> bytes:
    wire = b"\x00\x00\x00\x00"
    for _ in range(depth - 2):
        wire = struct.pack(">I", len(wire) + 1) + b"A" + wire
    return table_bytes(item("a", b"A", wire))


#: Hostile tables: (octets, error class, reply code).
HOSTILE: list[tuple[str, bytes, type[Exception], int]] = [
    ("empty", b"", amqp091.TruncatedError, 501),
    ("short length", b"\x00\x00", amqp091.TruncatedError, 501),
    ("length past the end", b"\x00\x00\x00\x05\x01a", amqp091.TruncatedError, 501),
    ("huge length", b"\xff\xff\xff\xff", amqp091.TruncatedError, 501),
    ("key past the table", table_bytes(b"\x05ab"), amqp091.TruncatedError, 501),
    ("key with no value", table_bytes(b"\x01a"), amqp091.TruncatedError, 501),
    ("unknown tag", table_bytes(item("a", b"Z", b"")), amqp091.errors.DecodeError, 502),
    ("spec-only tag U", table_bytes(item("a", b"U", b"\x00\x01")), amqp091.errors.DecodeError, 502),
    ("NUL tag", table_bytes(item("a", b"\x00", b"")), amqp091.errors.DecodeError, 502),
    ("key not UTF-8", table_bytes(b"\x01\xffV"), amqp091.errors.DecodeError, 502),
    ("boolean 2", table_bytes(item("a", b"t", b"\x02")), amqp091.errors.DecodeError, 502),
    ("int past the table", table_bytes(item("a", b"I", b"\x00\x00")) + b"\x00\x00",
     amqp091.TruncatedError, 501),
    ("int past the input", table_bytes(item("a", b"l", b"\x00")), amqp091.TruncatedError, 501),
    ("string past the table", table_bytes(item("a", b"S", b"\x00\x00\x00\x09abc")),
     amqp091.TruncatedError, 501),
    ("huge string", table_bytes(item("a", b"S", b"\xff\xff\xff\xff")), amqp091.TruncatedError,
     501),
    ("huge byte array", table_bytes(item("a", b"x", b"\x7f\xff\xff\xff")),
     amqp091.TruncatedError, 501),
    ("huge array", table_bytes(item("a", b"A", b"\x7f\xff\xff\xff")), amqp091.TruncatedError,
     501),
    ("huge nested table", table_bytes(item("a", b"F", b"\x7f\xff\xff\xff")),
     amqp091.TruncatedError, 501),
    ("array value past the array",
     table_bytes(item("a", b"A", b"\x00\x00\x00\x02I\x00\x00\x00\x00")),
     amqp091.TruncatedError, 501),
    ("unknown tag in an array", table_bytes(item("a", b"A", b"\x00\x00\x00\x01Z")),
     amqp091.errors.DecodeError, 502),
    ("boolean 2 in an array", table_bytes(item("a", b"A", b"\x00\x00\x00\x02t\x02")),
     amqp091.errors.DecodeError, 502),
    ("huge string in an array", table_bytes(item("a", b"A", b"\x00\x00\x00\x05S\xff\xff\xff\xff")),
     amqp091.TruncatedError, 501),
    ("decimal cut", table_bytes(item("a", b"D", b"\x01\x00")), amqp091.TruncatedError, 501),
    ("too deep", nested(amqp091.codec.MAX_DEPTH + 1), amqp091.errors.DecodeError, 502),
    ("arrays too deep", nested_arrays(amqp091.codec.MAX_DEPTH + 1),
     amqp091.errors.DecodeError, 502),
    ("deeper than Python recurses", nested(5000), amqp091.errors.DecodeError, 502),
    ("deep and cut", nested(5000)[:20_000], amqp091.TruncatedError, 501),
    ("trailing octets", table_bytes() + b"\x00", amqp091.errors.DecodeError, 502),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "error", "code"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE]
)
def test_hostile_tables(data: bytes, error: type[Exception], code: int) -> None:
    with pytest.raises(error) as caught:
        amqp091.decode_table(data)
    assert type(caught.value) is error
    assert caught.value.reply_code == code  # type: ignore[attr-defined]
    assert isinstance(caught.value, errors.DecodeError)


def test_nesting_up_to_the_limit_decodes() -> None:
    assert amqp091.decode_table(nested(amqp091.codec.MAX_DEPTH))
    assert amqp091.decode_table(nested_arrays(amqp091.codec.MAX_DEPTH))


def test_what_cannot_go_in_a_table() -> None:
    too_deep: dict[str, Any] = {}
    for _ in range(amqp091.codec.MAX_DEPTH):
        too_deep = {"n": too_deep}
    loop: list[Any] = []
    loop.append(loop)
    for bad in (
        {"a": object()},
        {1: "a"},
        {"k" * 256: 1},
        {"a": 2**63},
        {"a": decimal.Decimal("NaN")},
        {"a": decimal.Decimal("1E-256")},
        {"a": decimal.Decimal(2**31)},
        {"a": amqp091.codec.UInt8(256)},
        {"a": amqp091.codec.Timestamp(-1)},
        {"a": "\udcff"},
        too_deep,
        {"a": loop},
        [1],
    ):
        with pytest.raises(amqp091.errors.EncodeError):
            amqp091.encode_table(bad)  # type: ignore[arg-type]
