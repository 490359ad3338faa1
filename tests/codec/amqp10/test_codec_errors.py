"""Strict, bounded decoding, and the encoder's refusals.

Whatever the bytes, decoding either gives a value or raises :class:`DecodeError` (condition
``amqp:decode-error``), or its subclass :class:`InvalidFieldError` (``amqp:invalid-field``)
for a composite whose field breaks its definition. Never IndexError, struct.error,
UnicodeDecodeError or RecursionError, and never an allocation out of proportion to the input.
"""

from __future__ import annotations

import re
import time
import tracemalloc
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support import strategies as S
from support.strategies import assert_same

import amqp_sansio as a
import amqp_sansio.codec.amqp10
import amqp_sansio.definitions.amqp10
from amqp_sansio.definitions.amqp10 import performatives

T = a.codec.amqp10.AMQPType
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def h(text: str) -> bytes:
    return bytes.fromhex(text)


def decode_error(data: bytes, *, invalid_field: bool = False, **kwargs: Any) -> a.DecodeError:
    """Decode ``data``, which must fail with exactly the expected error class and condition."""
    with pytest.raises(a.DecodeError) as info:
        a.decode(data, **kwargs)
    err = info.value
    if invalid_field:
        assert type(err) is a.errors.InvalidFieldError, err
        assert err.condition == "amqp:invalid-field"
    else:
        assert type(err) is a.DecodeError, err
        assert err.condition == "amqp:decode-error"
    assert err.offset is not None and 0 <= err.offset <= len(data)
    return err


def message_error(data: bytes) -> a.DecodeError:
    with pytest.raises(a.DecodeError) as info:
        a.Message.decode(data)
    assert type(info.value) is a.DecodeError, info.value
    assert info.value.condition == "amqp:decode-error"
    return info.value


# -- truncation -------------------------------------------------------------------------------

TRUNCATION_CORPUS: list[Any] = [
    None,
    True,
    a.codec.amqp10.UByte(7),
    a.codec.amqp10.UShort(0x1234),
    a.codec.amqp10.UInt(0x12345678),
    a.codec.amqp10.UInt(7),
    a.codec.amqp10.ULong(2**64 - 1),
    a.codec.amqp10.ULong(7),
    a.codec.amqp10.Byte(-1),
    a.codec.amqp10.Short(-2),
    a.codec.amqp10.Int(-3),
    a.codec.amqp10.Int(2**31 - 1),
    -4,
    2**62,
    a.codec.amqp10.Float(1.5),
    2.5,
    a.codec.amqp10.Decimal32(1),
    a.codec.amqp10.Decimal64(2),
    a.codec.amqp10.Decimal128(3),
    a.codec.amqp10.Char("é"),
    a.codec.amqp10.Timestamp(1311704463521),
    uuid.UUID(int=12345),
    b"binary",
    b"x" * 300,
    "string é",
    "s" * 300,
    a.Symbol("symbol"),
    a.Symbol("y" * 300),
    [1, "two", [3.0, None]],
    [None] * 300,
    {"k": [1, {a.Symbol("n"): b"v"}], 2: None},
    a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(1), a.codec.amqp10.Int(2)]),
    a.codec.amqp10.Array(T.STRING, ["x" * 300]),
    a.codec.amqp10.Array(T.SYMBOL, [a.Symbol("a")], a.codec.amqp10.ULong(0x1234_0000_0001)),
    a.codec.amqp10.Array(
        T.ARRAY,
        [
            a.codec.amqp10.Array(T.UINT, [a.codec.amqp10.UInt(1)]),
            a.codec.amqp10.Array(T.LIST, [[1]]),
        ],
    ),
    a.codec.amqp10.Array(T.NULL, [None], a.Symbol("test:null")),
    a.Described(a.Symbol("test:x"), [1, 2]),
    a.Described(a.Described(a.codec.amqp10.ULong(0x99), None), "v"),
    performatives.Open(
        container_id="container",
        hostname="host",
        max_frame_size=512,
        offered_capabilities=("ANONYMOUS-RELAY",),
        properties={"product": "amqp-sansio"},
    ),
    performatives.Attach(
        name="link",
        handle=1,
        role=performatives.Role.RECEIVER,
        source=a.Source(address="q", filter={"f": a.Described(a.Symbol("test:f"), "x = 1")}),
        target=a.Target(address="t"),
    ),
    performatives.Transfer(
        handle=0, delivery_id=5, delivery_tag=b"\x01", state=a.Rejected(error=None)
    ),
    performatives.Disposition(
        role=performatives.Role.SENDER,
        first=1,
        state=a.definitions.amqp10.transactions.TransactionalState(txn_id=b"t"),
    ),
    a.Source(expiry_policy=a.definitions.amqp10.messaging.TerminusExpiryPolicy.NEVER),
    a.AmqpValue({"k": 1}),
    a.Data(b"payload"),
]


@pytest.mark.parametrize("value", TRUNCATION_CORPUS, ids=lambda v: type(v).__name__)
def test_every_prefix_of_a_valid_encoding_is_a_decode_error(value: Any) -> None:
    data = a.encode(value)
    assert a.encode(a.decode(data)) == data
    for n in range(len(data)):
        decode_error(data[:n])
        with pytest.raises(a.DecodeError):
            a.codec.amqp10.decode_from(data[:n], 0)


@given(S.values)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_prefix_of_any_value_is_a_decode_error(value: Any) -> None:
    data = a.encode(value)
    for n in range(len(data)):
        with pytest.raises(a.DecodeError):
            a.decode(data[:n])


def _section_ends(data: bytes) -> set[int]:
    ends, pos = set(), 0
    while pos < len(data):
        _, pos = a.codec.amqp10.decode_from(data, pos)
        ends.add(pos)
    return ends


@given(S.messages)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_prefix_of_a_message_is_an_error_or_fewer_sections(message: a.Message) -> None:
    assume(S.has_sections(message))
    data = message.encode()
    ends = _section_ends(data)
    for n in range(len(data)):
        if n in ends:
            a.Message.decode(data[:n])  # whole sections: a (shorter) message
        else:
            message_error(data[:n])


# -- fuzzing: any input gives a value or a DecodeError ----------------------------------------


def decodes_or_fails_cleanly(data: bytes) -> None:
    try:
        a.decode(data)
    except a.DecodeError as err:
        assert err.condition in ("amqp:decode-error", "amqp:invalid-field")
    try:
        a.Message.decode(data)
    except a.DecodeError as err:
        assert err.condition in ("amqp:decode-error", "amqp:invalid-field")


@given(st.binary(max_size=64))
@FUZZ
def test_random_bytes(data: bytes) -> None:
    decodes_or_fails_cleanly(data)


_targets = st.one_of(S.values, *S.COMPOSITES.values(), *S.SECTIONS.values())


@given(_targets, st.data())
@FUZZ
def test_mutated_encodings(value: Any, data: st.DataObject) -> None:
    encoded = bytearray(a.encode(value))
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(encoded) - 1))
        op = data.draw(st.sampled_from(["flip", "set", "insert", "delete"]))
        if op == "flip":
            encoded[i] ^= 1 << data.draw(st.integers(0, 7))
        elif op == "set":
            encoded[i] = data.draw(st.sampled_from([0x00, 0x40, 0x45, 0xFF, 0x7F, 0x80]))
        elif op == "insert":
            encoded.insert(i, data.draw(st.integers(0, 255)))
        elif len(encoded) > 1:
            del encoded[i]
    decodes_or_fails_cleanly(bytes(encoded))


@given(S.messages, st.data())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_messages(message: a.Message, data: st.DataObject) -> None:
    assume(S.has_sections(message))
    encoded = bytearray(message.encode())
    i = data.draw(st.integers(0, len(encoded) - 1))
    encoded[i] = data.draw(st.integers(0, 255))
    decodes_or_fails_cleanly(bytes(encoded))


# -- sizes and counts larger than the input -------------------------------------------------

OVERSIZED = {
    "list32 count 2**32-1 in 10 bytes": "d0 00000006 ffffffff 4040",
    "list32 size 2**32-1": "d0 ffffffff 00000001 40",
    "list8 size past the end": "c0 ff 01 40",
    "list8 count 255 in 2 bytes": "c0 03 ff 4040",
    "map32 count 2**32-2": "d1 00000006 fffffffe 4040",
    "map32 size 2**32-1": "d1 ffffffff 00000002 4040",
    "map8 count 254": "c1 03 fe 4040",
    "array32 of nulls claiming 4 billion": "f0 00000005 ffffffff 40",
    "array32 of true claiming 4 billion": "f0 00000005 ffffffff 41",
    "array32 of uint0 claiming 4 billion": "f0 00000005 ffffffff 43",
    "array32 of list0 claiming 4 billion": "f0 00000005 ffffffff 45",
    "described array32 of nulls": "f0 00000007 ffffffff 00 44 40",
    "array8 of nulls count 255": "e0 02 ff 40",
    "array of arrays of nulls": "e0 07 01 e0 04 ff 40 40 40",
    "array32 size 2**32-1": "f0 ffffffff 00000001 54 01",
    "array32 of ulong count past the data": "f0 0000000d 00000002 80 0000000000000001",
    "vbin32 2**32-1 bytes": "b0 ffffffff 00",
    "str32 2**32-1 bytes": "b1 ffffffff 61",
    "sym32 2**32-1 bytes": "b3 ffffffff 61",
    "vbin8 past the end": "a0 05 00",
    "str8 past the end": "a1 02 61",
    "sym8 past the end": "a3 02 61",
    "composite list32 size 2**32-1": "005310 d0 ffffffff 00000001 a10163",
    "composite list32 count 2**32-1": "005310 d0 00000008 ffffffff a10163",
    "composite string field past the end": "005310 c0 04 01 a1 ff 63",
    "list32 size below its count field": "d0 00000002 00000000",
    "map32 size below its count field": "d1 00000003 00000000",
    "array32 size below its count field": "f0 00000000 00000000 40",
}


@pytest.mark.alone
@pytest.mark.parametrize("hexed", list(OVERSIZED.values()), ids=list(OVERSIZED))
def test_sizes_and_counts_larger_than_the_input_fail_fast_without_allocating(
    hexed: str,
) -> None:
    data = h(hexed)
    tracemalloc.start()
    start = time.perf_counter()
    try:
        decode_error(data)
        with pytest.raises(a.DecodeError):
            a.codec.amqp10.decode_from(data, 0)
    finally:
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < 0.5
    assert peak < 256 * 1024


def test_the_message_decoder_checks_sizes_too() -> None:
    for hexed in ("005375 b0 ffffffff 00", "005377 d0 00000006 ffffffff 4040", "005370 c0 ff"):
        message_error(h(hexed))


# -- invalid contents ---------------------------------------------------------------------------

INVALID = {
    "invalid utf-8 str8": "a1 02 c3 28",
    "invalid utf-8 byte": "a1 01 ff",
    "utf-8 surrogate": "a1 03 eda080",
    "overlong utf-8": "a1 02 c080",
    "invalid utf-8 str32": "b1 00000001 80",
    "invalid utf-8 map key (str8)": "c1 05 02 a1 01 ff 40",
    "invalid utf-8 map value": "c1 05 02 40 a1 01 ff",
    "invalid utf-8 in a list": "c0 04 01 a1 01 ff",
    "invalid utf-8 in an array": "e0 04 01 a1 01 ff",
    "invalid utf-8 composite field": "005310 c0 04 01 a1 01 ff",
    "non-ascii symbol": "a3 02 c3a9",
    "non-ascii sym32": "b3 00000001 80",
    "non-ascii symbol in an array": "e0 04 01 a3 01 80",
    "non-ascii composite symbol field": "00531d c0 04 01 a3 01 80",
    "non-ascii symbolic descriptor": "00 a3 01 80 40",
    "boolean 0x02": "56 02",
    "boolean 0xff": "56 ff",
    "boolean 0x02 in an array": "e0 03 01 56 02",
    "boolean 0x02 in a composite": "005370 c0 03 01 56 02",
    "char beyond unicode": "73 00110000",
    "char surrogate": "73 0000d800",
    "char in an array": "e0 06 01 73 ffffffff",
    "map with an odd count": "c1 04 03 404040",
    "map32 with an odd count": "d1 00000005 00000001 40",
    "duplicate map keys": "c1 09 04 5501 5502 5501 5503",
    "duplicate str8 map keys": "c1 09 04 a10161 40 a10161 40",
    "duplicate symbol map keys": "c1 09 04 a30161 40 a30161 40",
    "map key that cannot be a dict key": "c1 04 02 c10100 40",
    "list shorter than its size": "c0 04 01 40",
    "list longer than its size": "c0 02 01 5501",
    "map longer than its size": "c1 03 02 40 5501",
    "array longer than its size": "e0 03 01 55 0102",
    "array elements do not fill the size": "e0 05 01 55 010203",
    "uint array cut mid-element": "e0 04 01 70 0001",
    "array of arrays with a bad inner size": "e0 07 01 e0 09 01 54 01 00",
    "array element constructor 0x00 twice": "e0 06 01 00 53 01 00 40",
    "array element constructor unknown": "e0 03 01 01 00",
    "array element constructor 0xff": "e0 03 01 ff 00",
    "array with a described element constructor": "e0 05 01 00 00 53 01",
    "list32 count above its size": "d0 00000005 00000002 40",
}


@pytest.mark.parametrize("hexed", list(INVALID.values()), ids=list(INVALID))
def test_invalid_contents(hexed: str) -> None:
    decode_error(h(hexed))


#: Every format code of core spec 1.6, and 0x00 for described values.
ASSIGNED = {
    0x00, 0x40, 0x41, 0x42, 0x43, 0x44, 0x45, 0x50, 0x51, 0x52, 0x53, 0x54, 0x55, 0x56,
    0x60, 0x61, 0x70, 0x71, 0x72, 0x73, 0x74, 0x80, 0x81, 0x82, 0x83, 0x84, 0x94, 0x98,
    0xA0, 0xA1, 0xA3, 0xB0, 0xB1, 0xB3, 0xC0, 0xC1, 0xD0, 0xD1, 0xE0, 0xF0,
}  # fmt: skip
UNASSIGNED = sorted(set(range(256)) - ASSIGNED)


def test_every_unassigned_format_code_is_refused() -> None:
    assert len(UNASSIGNED) == 256 - 40
    for code in UNASSIGNED:
        err = decode_error(bytes((code,)) + b"\x00" * 32)
        assert err.offset == 0
        assert f"{code:#04x}" in str(err)
        # The same code inside a list, a map, a described value and as an array's
        # element constructor.
        decode_error(bytes((0xC0, 0x03, 0x01, code, 0x00)))
        decode_error(bytes((0xC1, 0x04, 0x02, 0x40, code, 0x00)))
        decode_error(bytes((0x00, 0x53, 0x99, code)))
        decode_error(bytes((0xE0, 0x03, 0x01, code, 0x00)))


def test_every_assigned_format_code_decodes_something() -> None:
    # The other half of the table: an assigned code with a well-formed payload decodes.
    samples = {0x00: "00 53 99 40", 0x94: "94" + "00" * 16, 0x98: "98" + "00" * 16}
    for code in sorted(ASSIGNED):
        hexed = samples.get(code)
        if hexed is None:
            # A payload of zeros is a valid value for every other fixed, variable and
            # compound encoding (size 0/1, count 0), once the size is right.
            width = {0x4: 0, 0x5: 1, 0x6: 2, 0x7: 4, 0x8: 8, 0xA: 1, 0xB: 4}.get(code >> 4)
            payload = {0xC0: "0100", 0xC1: "0100", 0xE0: "020040", 0xD0: "0000000400000000",
                       0xD1: "0000000400000000", 0xF0: "000000050000000040"}  # fmt: skip
            hexed = f"{code:02x}" + payload.get(code, "00" * (width or 0))
        a.decode(h(hexed))


def test_trailing_bytes_are_an_error() -> None:
    for value in (None, 1, "x", [1], performatives.Open(container_id="c")):
        data = a.encode(value)
        err = decode_error(data + b"\x40")
        assert err.offset == len(data)
        # decode_from is the incremental form: it stops at the value's end.
        assert a.codec.amqp10.decode_from(data + b"\x40", 0)[1] == len(data)


def test_empty_input_and_offsets_past_the_end() -> None:
    decode_error(b"")
    with pytest.raises(a.DecodeError):
        a.codec.amqp10.decode_from(b"\x40", 1)
    with pytest.raises(a.DecodeError):
        a.codec.amqp10.decode_from(b"\x40", 5)


def test_decode_takes_only_bytes_like_input() -> None:
    with pytest.raises(TypeError):
        a.decode("40")  # type: ignore[arg-type]
    assert a.decode(bytearray(b"\x40")) is None
    assert a.decode(memoryview(b"\x55\x01")) == 1


# -- nesting --------------------------------------------------------------------------------


def nested_lists(levels: int) -> bytes:
    value: Any = [None]
    for _ in range(levels - 1):
        value = [value]
    return a.encode(value)


def nested_maps(levels: int) -> bytes:
    value: Any = {1: None}
    for _ in range(levels - 1):
        value = {1: value}
    return a.encode(value)


def nested_arrays(levels: int) -> bytes:
    value = a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(1)])
    for _ in range(levels - 1):
        value = a.codec.amqp10.Array(T.ARRAY, [value])
    return a.encode(value)


def nested_described(levels: int) -> bytes:
    value: Any = None
    for _ in range(levels):
        value = a.Described(a.codec.amqp10.ULong(0x1234_0000_0000), value)
    return a.encode(value)


def nested_descriptors(levels: int) -> bytes:
    # 0x00 0x00 0x00 ... : each descriptor is itself a described value.
    return b"\x00" * levels + b"\x40" * (levels + 1)


NESTERS = [nested_lists, nested_maps, nested_arrays, nested_described, nested_descriptors]


@pytest.mark.parametrize("nest", NESTERS, ids=lambda f: f.__name__)
def test_default_depth_limit_is_64(nest: Any) -> None:
    assert a.codec.amqp10.DEFAULT_MAX_DEPTH == 64
    a.decode(nest(64))
    err = decode_error(nest(65))
    assert "deeper" in str(err)


@pytest.mark.parametrize("nest", NESTERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("limit", [1, 5, 200])
def test_the_depth_limit_is_configurable(nest: Any, limit: int) -> None:
    a.decode(nest(limit), max_depth=limit)
    decode_error(nest(limit + 1), max_depth=limit)
    a.codec.amqp10.decode_from(nest(limit + 1), 0, max_depth=limit + 1)
    with pytest.raises(a.DecodeError):
        a.codec.amqp10.decode_from(nest(limit + 1), 0, max_depth=limit)


def test_max_depth_zero_refuses_any_compound_but_not_scalars() -> None:
    assert a.decode(b"\x55\x01", max_depth=0) == 1
    assert a.decode(b"\x45", max_depth=0) == []  # list0 holds nothing to nest
    decode_error(b"\xc0\x01\x00", max_depth=0)
    decode_error(b"\x00\x53\x99\x40", max_depth=0)


@pytest.mark.parametrize(
    "data",
    [
        nested_descriptors(100_000),
        b"\xc0\xff\x01" * 100_000 + b"\x40" * 300,  # list8 in list8 in ...
        b"\xd1\x00\x00\x01\x00\x00\x00\x00\x02\x40" * 100_000,  # map value in map value ...
        b"\xe0\xff\x01\xe0" * 100_000,  # array of arrays of arrays ...
    ],
    ids=["descriptors", "lists", "maps", "arrays"],
)
def test_very_deep_nesting_is_a_decode_error_not_a_recursion_error(data: bytes) -> None:
    decode_error(data)
    # Even with a limit above what Python's stack allows, the error is a DecodeError.
    decode_error(data, max_depth=10**9)
    with pytest.raises(a.DecodeError):
        a.Message.decode(b"\x00\x53\x77" + data, max_depth=10**9)
    # And the interpreter is still fine afterwards.
    assert a.decode(nested_lists(50)) is not None


def test_message_depth_limit() -> None:
    # The section's descriptor counts as one level, as it does for a.decode.
    body = a.Message(body=a.AmqpValue(a.decode(nested_lists(63)))).encode()
    a.Message.decode(body)
    a.decode(body)
    deeper = a.Message(body=a.AmqpValue(a.decode(nested_lists(64)))).encode()
    message_error(deeper)
    decode_error(deeper)
    a.Message.decode(deeper, max_depth=65)


# -- encode errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 2**64, -(2**100)])
def test_int_out_of_range_for_long(value: int) -> None:
    with pytest.raises(a.EncodeError) as info:
        a.encode(value)
    assert info.value.condition == "amqp:invalid-field"
    with pytest.raises(a.EncodeError):
        a.encode([1, {"k": value}])


@pytest.mark.parametrize(
    ("cls", "bad"),
    [
        (a.codec.amqp10.UByte, -1),
        (a.codec.amqp10.UByte, 256),
        (a.codec.amqp10.UShort, -1),
        (a.codec.amqp10.UShort, 2**16),
        (a.codec.amqp10.UInt, -1),
        (a.codec.amqp10.UInt, 2**32),
        (a.codec.amqp10.ULong, -1),
        (a.codec.amqp10.ULong, 2**64),
        (a.codec.amqp10.Byte, -129),
        (a.codec.amqp10.Byte, 128),
        (a.codec.amqp10.Short, -(2**15) - 1),
        (a.codec.amqp10.Short, 2**15),
        (a.codec.amqp10.Int, -(2**31) - 1),
        (a.codec.amqp10.Int, 2**31),
        (a.codec.amqp10.Timestamp, 2**63),
        (a.codec.amqp10.Timestamp, -(2**63) - 1),
        (a.codec.amqp10.Decimal32, 2**32),
        (a.codec.amqp10.Decimal64, -1),
        (a.codec.amqp10.Decimal128, 2**128),
        (a.codec.amqp10.Float, 1e300),
        (a.codec.amqp10.Char, "ab"),
        (a.codec.amqp10.Char, ""),
        (a.codec.amqp10.Char, "\ud800"),
        (a.Symbol, "é"),
        (a.Symbol, "\x80"),
    ],
)
def test_wrappers_refuse_out_of_range_values_at_construction(cls: type, bad: Any) -> None:
    with pytest.raises(ValueError):
        cls(bad)


@pytest.mark.parametrize(
    ("cls", "bad"),
    [
        (a.codec.amqp10.UInt, 1.5),
        (a.codec.amqp10.UInt, "1"),
        (a.codec.amqp10.Int, None),
        (a.codec.amqp10.Decimal32, True),
        (a.Symbol, b"x"),
    ],
)
def test_wrappers_refuse_the_wrong_type(cls: type, bad: Any) -> None:
    with pytest.raises(TypeError):
        cls(bad)


def test_a_non_ascii_symbol_that_slipped_through_is_refused_by_the_encoder() -> None:
    sneaky = str.__new__(a.Symbol, "é")
    for value in (
        sneaky,
        [sneaky],
        a.codec.amqp10.Array(T.SYMBOL, [sneaky]),
        a.Described(sneaky, None),
        a.Error(condition="amqp:x", info={"é": 1}),
    ):
        with pytest.raises(a.EncodeError):
            a.encode(value)
    with pytest.raises(a.EncodeError):
        a.Message(message_annotations={"é": 1}).encode()


@pytest.mark.parametrize("build", ["list", "dict", "tuple-in-list", "described"])
def test_self_referential_values_are_an_encode_error_not_a_recursion_error(build: str) -> None:
    if build == "list":
        value: Any = []
        value.append(value)
    elif build == "dict":
        value = {}
        value["me"] = value
    elif build == "tuple-in-list":
        inner: list[Any] = []
        value = (inner,)
        inner.append(value)
    else:
        inner = []
        value = a.Described(a.codec.amqp10.ULong(0x1234_0000_0000), inner)
        inner.append(value)
    with pytest.raises(a.EncodeError):
        a.encode(value)


def test_very_deep_values_are_an_encode_error_not_a_recursion_error() -> None:
    deep: Any = None
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(a.EncodeError):
        a.encode(deep)
    deep = None
    for _ in range(100_000):
        deep = a.Described(a.codec.amqp10.ULong(1), deep)
    with pytest.raises(a.EncodeError):
        a.encode(deep)


@pytest.mark.parametrize(
    "value",
    [
        object(),
        {1, 2},
        1 + 2j,
        "\ud800",  # a lone surrogate is not UTF-8 encodable
        [b"ok", object()],
        {"k": object()},
        {object(): 1},
    ],
    # An object's repr holds its address, which differs between processes: the ids must not.
    ids=lambda value: re.sub(r" at 0x[0-9a-f]+", "", repr(value)),
)
def test_values_with_no_amqp_type(value: Any) -> None:
    with pytest.raises(a.EncodeError):
        a.encode(value)


@pytest.mark.parametrize(
    "array",
    [
        a.codec.amqp10.Array(T.NULL, [1]),
        a.codec.amqp10.Array(
            T.NULL, [None, None, None]
        ),  # more zero-width items than the limit of 2
        a.codec.amqp10.Array(
            T.ARRAY, [a.codec.amqp10.Array(T.NULL, [None] * 5)]
        ),  # ... even inside an array
        a.codec.amqp10.Array(T.BOOLEAN, [1]),
        a.codec.amqp10.Array(T.UBYTE, [256]),
        a.codec.amqp10.Array(T.UBYTE, ["x"]),
        a.codec.amqp10.Array(T.USHORT, [-1]),
        a.codec.amqp10.Array(T.UINT, [2**32]),
        a.codec.amqp10.Array(T.ULONG, [-1]),
        a.codec.amqp10.Array(T.INT, [2**31]),
        a.codec.amqp10.Array(T.LONG, [2**63]),
        a.codec.amqp10.Array(T.FLOAT, [1e300]),
        a.codec.amqp10.Array(T.FLOAT, ["x"]),
        a.codec.amqp10.Array(T.DOUBLE, ["x"]),
        a.codec.amqp10.Array(T.DECIMAL32, [a.codec.amqp10.Decimal64(1)]),
        a.codec.amqp10.Array(T.DECIMAL64, [a.codec.amqp10.Decimal128(1)]),
        a.codec.amqp10.Array(T.DECIMAL128, [a.codec.amqp10.Decimal32(1)]),
        a.codec.amqp10.Array(T.DECIMAL32, [5]),
        a.codec.amqp10.Array(T.CHAR, ["ab"]),
        a.codec.amqp10.Array(T.TIMESTAMP, [1.5]),
        a.codec.amqp10.Array(T.UUID, [b"0123456789abcdef"]),
        a.codec.amqp10.Array(T.BINARY, ["text"]),
        a.codec.amqp10.Array(T.STRING, [b"bytes"]),
        a.codec.amqp10.Array(T.SYMBOL, [str.__new__(a.Symbol, "é")]),
        a.codec.amqp10.Array(T.LIST, [{}]),
        a.codec.amqp10.Array(T.MAP, [[]]),
        a.codec.amqp10.Array(T.ARRAY, [1]),
        a.codec.amqp10.Array(T.ARRAY, [[1]]),
    ],
    ids=lambda v: f"{v.type.value}-{v.items!r:.20}",
)
def test_array_elements_that_do_not_fit_the_element_type(array: a.codec.amqp10.Array) -> None:
    with pytest.raises(a.EncodeError):
        a.encode(array)


def test_composite_construction_checks_fields() -> None:
    with pytest.raises(TypeError):
        performatives.Open(container_id=None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        performatives.Open(container_id=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        performatives.Begin(next_outgoing_id=-1, incoming_window=0, outgoing_window=0)
    with pytest.raises(ValueError):
        performatives.Open(container_id="c", channel_max=2**16)
    with pytest.raises(ValueError):
        performatives.Attach(name="l", handle=0, role=performatives.Role.SENDER, snd_settle_mode=7)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        performatives.Transfer(handle=0, state=a.Source())  # not a delivery state
    with pytest.raises(TypeError):
        performatives.SaslMechanisms(
            sasl_server_mechanisms=()
        )  # mandatory and multiple: one at least
    with pytest.raises(ValueError):
        performatives.Open(container_id="c", offered_capabilities=["é"])


def test_message_encode_errors() -> None:
    with pytest.raises(a.EncodeError):
        a.Message(application_properties={1: "non-string key"}).encode()  # type: ignore[dict-item]
    with pytest.raises(a.EncodeError):
        a.Message(body=a.AmqpValue(object())).encode()
    with pytest.raises(a.EncodeError):
        a.Message(delivery_annotations={-1: "negative ulong key"}).encode()


# -- composites -------------------------------------------------------------------------------

#: (hex, expected value) for composites whose fields take unusual but valid forms.
COMPOSITE_OK = [
    # A "multiple" field takes a single value or an array (core spec 1.4).
    ("005310 c0 0d 08 a10163 40 40 40 40 40 40 a301 78", ("x",)),
    ("005310 c0 0e 08 a10163 40 40 40 40 40 40 e0 02 00 a3", None),  # empty array is null
    ("005310 c0 12 08 a10163 40 40 40 40 40 40 e0 06 02 a3 0178 0179", ("x", "y")),
    ("005310 c0 0b 08 a10163 40 40 40 40 40 40 40", None),
]


@pytest.mark.parametrize(("hexed", "caps"), COMPOSITE_OK)
def test_multiple_fields_take_a_single_value_or_an_array(hexed: str, caps: Any) -> None:
    got = a.decode(h(hexed))
    assert type(got) is performatives.Open
    assert got.offered_capabilities == caps
    if caps is not None:
        assert all(type(c) is a.Symbol for c in got.offered_capabilities or ())


COMPOSITE_INVALID_FIELD = {
    "mandatory field null": "005310 c0 02 01 40",
    "mandatory field absent (list0)": "005310 45",
    "mandatory field absent (short list)": "005311 c0 02 01 40",
    "mandatory composite field null": "00531d c0 02 01 40",
    "mandatory multiple field empty array": "005340 c0 05 01 e0 02 00 a3",
    "mandatory multiple field null": "005340 c0 02 01 40",
    "mandatory binary field null": "005332 c0 02 01 40",
    "bad enum: snd-settle-mode 3": "005312 c0 08 04 a10163 43 42 5003",
    "bad enum: sasl code 5": "005344 c0 03 01 5005",
    "bad enum: expiry policy": "005328 c0 0a 03 40 43 a3 05 626f677573",
    "bad enum: terminus durability 3": "005328 c0 04 02 40 5203",
}


@pytest.mark.parametrize("hexed", list(COMPOSITE_INVALID_FIELD.values()),
                         ids=list(COMPOSITE_INVALID_FIELD))  # fmt: skip
def test_composite_invalid_field(hexed: str) -> None:
    decode_error(h(hexed), invalid_field=True)


COMPOSITE_DECODE_ERROR = {
    "open with an int container-id": "005310 c0 03 01 5505",
    "open with a symbol container-id": "005310 c0 04 01 a30163",
    "more fields than defined": "005310 c0 0e 0b a10163" + "40" * 10,
    "accepted with a field": "005324 c0 02 01 40",
    "composite not a list": "005310 a10163",
    "composite as a map": "005310 c1 01 00",
    "composite as an array": "005310 e0 02 00 40",
    "fields do not fill the list": "005310 c0 05 01 a10163 40",
    "list longer than its fields": "005310 c0 03 02 a10163",
    "multiple field as a string": "005310 c0 0d 08 a10163 40 40 40 40 40 40 a101 78",
    "multiple field as an array of strings": (
        "005310 c0 0f 08 a10163 40 40 40 40 40 40 e0 03 01 a1 00"
    ),
    "uint field as a long": "005370 c0 04 03 42 5004 5501",
    "uint field as a ulong": "005370 c0 04 03 42 5004 5301",
    "ubyte field as a uint": "005370 c0 04 02 42 5204",
    "boolean field as an int": "005315 c0 04 02 5501 43",
    "composite field of another composite type": "005316 c0 07 03 43 42 00 53 24 45",
    "delivery-state field holding a source": "005315 c0 08 05 41 43 40 42 005328 45",
    "fields map with int keys": "00531d c0 0a 03 a30178 40 c1 04 02 5501 40",
    "annotations-keyed field with string keys": "005327 c0 09 03 40 40 c1 04 02 a10178 40",
    "binary field as a string": "005314 c0 06 03 43 40 a10178",
    "timestamp field as a long": "005373 c0 0c 09 40 40 40 40 40 40 40 40 5501",
    "address field as an int": "005373 c0 05 03 40 40 5501",
    "message-id as a long": "005373 c0 03 01 5501",
    "txn-id as a string": "005332 c0 04 01 a10174",
    "source as a string": "005312 c0 0a 06 a10163 43 42 40 40 a10173",
    "restricted data section holding a string": "005375 a10178",
    "restricted sequence section holding a map": "005376 c10100",
    "restricted annotations with string keys": "005372 c1 05 02 a10178 40",
}


@pytest.mark.parametrize("hexed", list(COMPOSITE_DECODE_ERROR.values()),
                         ids=list(COMPOSITE_DECODE_ERROR))  # fmt: skip
def test_composite_decode_error(hexed: str) -> None:
    decode_error(h(hexed))


def test_registered_descriptors_of_other_types_are_not_composites() -> None:
    # A long (not ulong) 0x10, or a string (not symbol) "amqp:open:list", is just a
    # described value with an unknown descriptor.
    got = a.decode(h("00 55 10 c0 04 01 a10163"))
    assert got == a.Described(0x10, ["c"]) and type(got.descriptor) is int
    got = a.decode(h("00 a1 0e") + b"amqp:open:list" + h("c0 04 01 a10163"))
    assert got == a.Described("amqp:open:list", ["c"]) and type(got.descriptor) is str


# -- messages ---------------------------------------------------------------------------------

HEADER = "005370 45"
PROPS = "005373 45"
APP = "005374 c10100"
DATA = "005375 a001 78"
SEQ = "005376 45"
VALUE = "005377 40"
FOOTER = "005378 c10100"

MESSAGE_ERRORS = {
    "sections out of order": PROPS + HEADER,
    "repeated header": HEADER + HEADER,
    "repeated properties": PROPS + PROPS,
    "application-properties before properties": APP + PROPS,
    "data then amqp-value": DATA + VALUE,
    "amqp-value then data": VALUE + DATA,
    "amqp-sequence then data": SEQ + DATA,
    "data then amqp-sequence": DATA + SEQ,
    "two amqp-values": VALUE + VALUE,
    "a section after the footer": FOOTER + DATA,
    "a performative": "005310 c0 04 01 a10163",
    "an outcome": "005324 45",
    "a non-section described value": "0080 0000123400000001 40",
    "an unknown symbolic descriptor": "00a3 06 746573743a78 40",
    "not a described value": "40",
    "a section then a plain value": DATA + "40",
    "empty input": "",
    "data holding a string": "005375 a10178",
    "application-properties with a non-string key": "005374 c1 04 02 5501 40",
    "application-properties not a map": "005374 45",
    "message-annotations with a string key": "005372 c1 05 02 a10178 40",
    "delivery-annotations not a map": "005371 a10178",
    "footer with a long key": "005378 c1 04 02 5501 40",
    "header with a bad field": "005370 c0 03 01 5501",
    "truncated data section": "005375 a0 05 78",
}


@pytest.mark.parametrize("hexed", list(MESSAGE_ERRORS.values()), ids=list(MESSAGE_ERRORS))
def test_message_decode_errors(hexed: str) -> None:
    message_error(h(hexed))


_SYMBOLIC = {
    "header": ("amqp:header:list", "45"),
    "delivery_annotations": ("amqp:delivery-annotations:map", "c10100"),
    "message_annotations": ("amqp:message-annotations:map", "c10100"),
    "properties": ("amqp:properties:list", "c0 03 01 5305"),
    "application_properties": ("amqp:application-properties:map", "c10100"),
    "body": ("amqp:data:binary", "a001 78"),
    "footer": ("amqp:footer:map", "c10100"),
}


def test_symbolic_section_descriptors_decode() -> None:
    data = b""
    for name, value in _SYMBOLIC.values():
        data += b"\x00\xa3" + bytes((len(name),)) + name.encode() + h(value)
    got = a.Message.decode(data)
    want = a.Message(
        header=a.Header(),
        delivery_annotations={},
        message_annotations={},
        properties=a.Properties(message_id=a.codec.amqp10.ULong(5)),
        application_properties={},
        body=a.Data(b"x"),
        footer={},
    )
    assert_same(got, want)
    # The other body kinds, with symbolic and ulong (0x80) descriptors.
    seq = b"\x00\xa3\x17" + b"amqp:amqp-sequence:list" + h("c0 03 01 5501")
    assert_same(a.Message.decode(seq + seq).body, (a.AmqpSequence([1]), a.AmqpSequence([1])))
    amqp_value = b"\x00\xa3\x11" + b"amqp:amqp-value:*" + h("a10178")
    assert_same(a.Message.decode(amqp_value).body, a.AmqpValue("x"))
    amqp_value = h("0080 0000000000000077 a10178")
    assert_same(a.Message.decode(amqp_value).body, a.AmqpValue("x"))
