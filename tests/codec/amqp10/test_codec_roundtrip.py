"""Round trips through the AMQP type-system codec (core spec part 1), composites and messages.

* decode(encode(v)) is v, with the same Python types all the way down, and encoding what was
  decoded gives the same bytes again;
* every encoding of every type decodes (hand-written bytes for the wider forms, and an
  independent test-side encoder that writes every value in its widest form);
* the encoder picks the smallest encoding, checked byte for byte at each boundary.
"""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import strategies as S
from support.strategies import assert_same, same

import amqp_sansio as a
import amqp_sansio.codec.amqp10
import amqp_sansio.definitions.amqp10
from amqp_sansio.codec import amqp10 as codec
from amqp_sansio.definitions.amqp10 import messaging, performatives

T = a.codec.amqp10.AMQPType
MAIN = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EACH = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def roundtrip(v: Any) -> bytes:
    """Check decode(encode(v)) is v and the bytes are stable; return the bytes."""
    data = a.encode(v)
    back = a.decode(data)
    assert_same(back, v)
    assert a.encode(back) == data
    return data


# -- round trips -------------------------------------------------------------------------------


def test_codec_module_is_the_same_api() -> None:
    assert codec.encode is a.encode
    assert codec.decode is a.decode
    assert codec.decode_from is a.codec.amqp10.decode_from
    assert codec.DecodeError is a.DecodeError


@pytest.mark.parametrize("type_name", sorted(S.PRIMITIVES))
@given(data=st.data())
@EACH
def test_every_primitive_type_round_trips(type_name: str, data: st.DataObject) -> None:
    roundtrip(data.draw(S.PRIMITIVES[type_name]))


@pytest.mark.parametrize("element_type", S.ARRAY_TYPES, ids=lambda t: t.value)
@pytest.mark.parametrize("described", [False, True], ids=["plain", "described"])
@given(data=st.data())
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_arrays_of_every_element_type_round_trip(
    element_type: a.codec.amqp10.AMQPType, described: bool, data: st.DataObject
) -> None:
    array = data.draw(S.arrays_of(element_type, described=described))
    encoded = roundtrip(array)
    assert encoded[0] in (0xE0, 0xF0)
    back = a.decode(encoded)
    assert back.type is element_type
    assert (back.descriptor is not None) is described


@given(S.arrays_of_arrays)
@settings(max_examples=100, deadline=None)
def test_arrays_of_arrays_round_trip(array: a.codec.amqp10.Array) -> None:
    roundtrip(array)


@given(S.values)
@MAIN
def test_any_value_round_trips(value: Any) -> None:
    roundtrip(value)


@given(
    st.one_of(S.values, *S.COMPOSITES.values()),
    st.binary(min_size=1, max_size=20),
    st.binary(max_size=20),
)
@MAIN
def test_decode_from_a_non_zero_offset(value: Any, before: bytes, after: bytes) -> None:
    encoded = a.encode(value)
    buf = before + encoded + after
    for data in (buf, bytearray(buf), memoryview(buf)):
        got, end = a.codec.amqp10.decode_from(data, len(before))
        assert_same(got, value)
        assert end == len(before) + len(encoded)


@given(st.lists(S.small_values, min_size=1, max_size=8))
@settings(max_examples=100, deadline=None)
def test_decode_from_walks_a_sequence_of_values(items: list[Any]) -> None:
    buf = b"".join(a.encode(v) for v in items)
    pos = 0
    got = []
    while pos < len(buf):
        v, pos = a.codec.amqp10.decode_from(buf, pos)
        got.append(v)
    assert pos == len(buf)
    assert_same(got, items)


def test_same_is_strict_about_types_nan_and_order() -> None:
    # The helper the round trips rely on must not let type changes through.
    assert same(float("nan"), float("nan"))
    assert not same(0.0, -0.0)
    assert not same(a.codec.amqp10.ULong(1), 1)
    assert not same(1, True)
    assert not same(a.Symbol("a"), "a")
    assert not same({1: 2, 3: 4}, {3: 4, 1: 2})
    assert not same([a.codec.amqp10.UInt(1)], [a.codec.amqp10.ULong(1)])
    assert not same(
        a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(1)]), a.codec.amqp10.Array(T.LONG, [1])
    )
    assert same(
        a.codec.amqp10.Array(T.DOUBLE, [float("nan")]),
        a.codec.amqp10.Array(T.DOUBLE, [float("nan")]),
    )


def test_the_spec_examples_decode() -> None:
    # Core spec 1.2: a string described by the string "URL".
    url = b"\x00\xa1\x03URL\xa1\x1ehttp://example.org/hello-world"
    assert_same(a.decode(url), a.Described("URL", "http://example.org/hello-world"))
    # Core spec 1.4/1.5: a book, a composite type unknown to the library, with its trailing
    # null ISBN sent, and an array of authors.
    book = (
        b"\x00\xa3\x11example:book:list\xc0\x40\x03"
        b"\xa1\x15AMQP for & by Dummies"
        b"\xe0\x25\x02\xa1\x0eRob J. Godfrey\x13Rafael H. Schloming"
        b"\x40"
    )
    want = a.Described(
        a.Symbol("example:book:list"),
        [
            "AMQP for & by Dummies",
            a.codec.amqp10.Array(T.STRING, ["Rob J. Godfrey", "Rafael H. Schloming"]),
            None,
        ],
    )
    assert_same(a.decode(book), want)
    assert a.encode(want) == book


# -- composites and sections -------------------------------------------------------------------


def _all_composite_classes() -> set[type]:
    found = set()
    for module in (
        a,
        a.definitions.amqp10.performatives,
        a.definitions.amqp10.messaging,
        a.definitions.amqp10.transactions,
    ):
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type) and hasattr(obj, "DESCRIPTOR_CODE"):
                found.add(obj)
    return found


def test_the_strategies_cover_every_composite_type() -> None:
    assert _all_composite_classes() == set(S.COMPOSITES) | set(S.SECTIONS)


ALL_DESCRIBED = {**S.COMPOSITES, **S.SECTIONS}


@pytest.mark.parametrize("cls", list(ALL_DESCRIBED), ids=lambda c: c.__name__)
@given(data=st.data())
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_composite_round_trips(cls: type, data: st.DataObject) -> None:
    value = data.draw(ALL_DESCRIBED[cls])
    encoded = roundtrip(value)
    # The descriptor is the smallulong code (core spec 1.5: the numeric form is preferred).
    assert encoded[:3] == bytes((0x00, 0x53, cls.DESCRIPTOR_CODE))  # type: ignore[attr-defined]


@pytest.mark.parametrize("cls", list(ALL_DESCRIBED), ids=lambda c: c.__name__)
@given(data=st.data())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_every_descriptor_form_decodes(cls: type, data: st.DataObject) -> None:
    value = data.draw(ALL_DESCRIBED[cls])
    rest = a.encode(value)[3:]
    name = cls.DESCRIPTOR_NAME.encode()  # type: ignore[attr-defined]
    code = cls.DESCRIPTOR_CODE  # type: ignore[attr-defined]
    for head in (
        b"\x00\x80" + code.to_bytes(8, "big"),  # ulong
        b"\x00\xa3" + bytes((len(name),)) + name,  # sym8
        b"\x00\xb3" + len(name).to_bytes(4, "big") + name,  # sym32
    ):
        assert_same(a.decode(head + rest), value)


def _list_fields(encoded: bytes) -> tuple[bytes, int, bytes]:
    """Split a composite's encoding into (descriptor, field count, field bytes)."""
    head, code = encoded[:3], encoded[3]
    if code == 0x45:
        return head, 0, b""
    if code == 0xC0:
        return head, encoded[5], encoded[6:]
    _size, count = struct.unpack_from(">II", encoded, 4)
    return head, count, encoded[12:]


@pytest.mark.parametrize("cls", list(S.COMPOSITES), ids=lambda c: c.__name__)
@given(data=st.data())
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_composites_decode_from_list32_with_explicit_trailing_nulls(
    cls: type, data: st.DataObject
) -> None:
    value = data.draw(S.COMPOSITES[cls])
    head, count, fields = _list_fields(a.encode(value))
    n_fields = len(attrs.fields(cls))
    # list32, and every field the type defines given, the absent ones as null (core spec 1.4:
    # trailing nulls may be left out or sent, and mean the same).
    pad = n_fields - count
    body = fields + b"\x40" * pad
    wide = head + b"\xd0" + struct.pack(">II", len(body) + 4, n_fields) + body
    assert_same(a.decode(wide), value)


@given(S.messages)
@MAIN
def test_messages_round_trip(message: a.Message) -> None:
    if not S.has_sections(message):
        # No section at all would be no bytes, which is no message: refused.
        with pytest.raises(a.EncodeError):
            message.encode()
        return
    encoded = message.encode()
    back = a.Message.decode(encoded)
    assert_same(back, message)
    assert back.encode() == encoded
    if not S.has_sections(message, bare=True):
        with pytest.raises(a.EncodeError):
            message.encode_bare()
        return
    bare = message.encode_bare()
    assert_same(a.Message.decode(bare), message.bare())
    if message.footer is None:
        assert encoded.endswith(bare)


BODIES = {
    "none": None,
    "one-data": a.Data(b"\x00\x01"),
    "several-data": (a.Data(b"a"), a.Data(b""), a.Data(b"c" * 300)),
    "amqp-value": a.AmqpValue({"k": [1, a.Symbol("s")]}),
    "one-sequence": a.AmqpSequence([1, "two", None]),
    "several-sequences": (a.AmqpSequence([1]), a.AmqpSequence([]), a.AmqpSequence(["x"])),
}


@pytest.mark.parametrize("body", list(BODIES.values()), ids=list(BODIES))
def test_every_body_kind_round_trips(body: Any) -> None:
    message = a.Message(
        header=a.Header(durable=True),
        properties=a.Properties(message_id=a.codec.amqp10.ULong(1), subject="é"),
        application_properties={"k": "v"},
        body=body,
        footer={a.Symbol("f"): b"\xff"},
    )
    back = a.Message.decode(message.encode())
    assert_same(back, message)
    assert_same(back.body, body)


def test_message_body_conveniences() -> None:
    assert a.Message(body=b"xy").body == a.Data(b"xy")
    assert a.Message(body=[a.Data(b"x")]).body == a.Data(b"x")
    assert a.Message(body=[a.Data(b"x"), a.Data(b"y")]).body == (a.Data(b"x"), a.Data(b"y"))
    assert a.Message(body="text").body == a.AmqpValue("text")
    assert a.Message(body=[1, 2]).body == a.AmqpValue([1, 2])
    with pytest.raises(TypeError):
        a.Message(body=[a.Data(b"x"), a.AmqpSequence([])])


def test_annotation_keys_given_as_str_and_int_are_sent_as_symbol_and_ulong() -> None:
    message = a.Message(message_annotations={"x-opt": 1, 7: 2}, body=None)
    back = a.Message.decode(message.encode())
    assert back.message_annotations is not None
    keys = list(back.message_annotations)
    assert_same(keys, [a.Symbol("x-opt"), a.codec.amqp10.ULong(7)])


def test_a_plain_int_message_id_is_sent_as_ulong() -> None:
    props = a.Properties(message_id=5, correlation_id=2**64 - 1)
    encoded = a.encode(props)
    assert encoded == bytes.fromhex("005373 c0 10 06 5305 40404040 80ffffffffffffffff")
    back = a.decode(encoded)
    assert_same(back.message_id, a.codec.amqp10.ULong(5))
    assert_same(back.correlation_id, a.codec.amqp10.ULong(2**64 - 1))
    with pytest.raises(ValueError):
        a.Properties(message_id=-1)


def test_null_annotation_maps_round_trip() -> None:
    classes: list[Any] = [
        messaging.DeliveryAnnotations,
        messaging.MessageAnnotations,
        messaging.Footer,
    ]
    for cls in [*classes, messaging.ApplicationProperties]:
        value = cls(None)
        encoded = roundtrip(value)
        assert encoded == bytes((0x00, 0x53, cls.DESCRIPTOR_CODE, 0x40))


# -- every encoding decodes ------------------------------------------------------------------

OPEN_C = performatives.Open(container_id="c")

#: (hex bytes, value) for encodings the encoder never writes, or writes only sometimes.
OTHER_ENCODINGS: list[tuple[str, Any]] = [
    ("5601", True),
    ("5600", False),
    ("41", True),
    ("42", False),
    ("43", a.codec.amqp10.UInt(0)),
    ("5200", a.codec.amqp10.UInt(0)),
    ("7000000000", a.codec.amqp10.UInt(0)),
    ("7000000005", a.codec.amqp10.UInt(5)),
    ("70000000ff", a.codec.amqp10.UInt(255)),
    ("44", a.codec.amqp10.ULong(0)),
    ("5300", a.codec.amqp10.ULong(0)),
    ("800000000000000000", a.codec.amqp10.ULong(0)),
    ("800000000000000007", a.codec.amqp10.ULong(7)),
    ("5400", a.codec.amqp10.Int(0)),
    ("7100000005", a.codec.amqp10.Int(5)),
    ("71ffffffff", a.codec.amqp10.Int(-1)),
    ("5500", 0),
    ("810000000000000005", 5),
    ("81ffffffffffffffff", -1),
    ("b000000000", b""),
    ("b00000000161", b"a"),
    ("b100000000", ""),
    ("b100000002c3a9", "é"),
    ("b300000000", a.Symbol("")),
    ("b30000000161", a.Symbol("a")),
    ("45", []),
    ("c00100", []),
    ("d00000000400000000", []),
    ("d0000000050000000140", [None]),
    ("d000000006000000024142", [True, False]),
    ("c10100", {}),
    ("d10000000400000000", {}),
    ("d1000000060000000240 40", {None: None}),
    ("d10000000b00000004 44 a1016b 5601 40", {a.codec.amqp10.ULong(0): "k", True: None}),
    ("e0020040", a.codec.amqp10.Array(T.NULL, [])),
    ("f0 00000005 00000000 71", a.codec.amqp10.Array(T.INT, [])),
    ("f0 00000006 00000001 54 05", a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(5)])),
    ("e0 06 01 71 00000005", a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(5)])),
    ("e0 06 01 70 00000005", a.codec.amqp10.Array(T.UINT, [a.codec.amqp10.UInt(5)])),
    ("e0 0a 01 80 0000000000000005", a.codec.amqp10.Array(T.ULONG, [a.codec.amqp10.ULong(5)])),
    ("e0 0a 01 81 fffffffffffffffe", a.codec.amqp10.Array(T.LONG, [-2])),
    ("e0 04 02 56 01 00", a.codec.amqp10.Array(T.BOOLEAN, [True, False])),
    # Zero-width element constructors: every element is the one value the code stands for.
    ("e0 02 01 41", a.codec.amqp10.Array(T.BOOLEAN, [True])),
    ("e0 02 01 42", a.codec.amqp10.Array(T.BOOLEAN, [False])),
    ("e0 02 01 43", a.codec.amqp10.Array(T.UINT, [a.codec.amqp10.UInt(0)])),
    ("e0 02 01 44", a.codec.amqp10.Array(T.ULONG, [a.codec.amqp10.ULong(0)])),
    ("e0 02 01 45", a.codec.amqp10.Array(T.LIST, [[]])),
    ("e0 08 01 b0 00000002 6162", a.codec.amqp10.Array(T.BINARY, [b"ab"])),
    ("e0 08 01 b1 00000002 c3a9", a.codec.amqp10.Array(T.STRING, ["é"])),
    ("e0 08 01 b3 00000002 6162", a.codec.amqp10.Array(T.SYMBOL, [a.Symbol("ab")])),
    ("e0 0d 01 d0 00000007 00000002 550141", a.codec.amqp10.Array(T.LIST, [[1, True]])),
    ("e0 0c 01 d1 00000006 00000002 4040", a.codec.amqp10.Array(T.MAP, [{None: None}])),
    (
        "e0 0f 01 f0 00000009 00000001 71 00000007",
        a.codec.amqp10.Array(T.ARRAY, [a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(7)])]),
    ),
    ("f0 0000000a 00000001 00a30164 55 05", a.codec.amqp10.Array(T.LONG, [5], a.Symbol("d"))),
    ("00 80 0000123400000001 40", a.Described(a.codec.amqp10.ULong(0x1234_0000_0001), None)),
    ("00 44 40", a.Described(a.codec.amqp10.ULong(0), None)),
    ("00 b3 00000006 746573743a78 5501", a.Described(a.Symbol("test:x"), 1)),
    ("00 00 5399 40 a100", a.Described(a.Described(a.codec.amqp10.ULong(0x99), None), "")),
    # Composites: ulong and symbolic descriptors, list8/list32, wide field encodings,
    # explicit trailing nulls.
    ("00 80 0000000000000010 c0 04 01 a10163", OPEN_C),
    ("00 a3 0e 616d71703a6f70656e3a6c697374 c0 04 01 a10163", OPEN_C),
    ("005310 d0 0000000a 00000001 b1 00000001 63", OPEN_C),
    ("005310 c0 05 02 a10163 40", OPEN_C),
    (
        "005310 c0 0a 03 a10163 40 7000000005",
        performatives.Open(container_id="c", max_frame_size=5),
    ),
    ("005370 c0 03 01 5601", a.Header(durable=True)),
    ("005370 c0 07 05 42 5004 40 42 43", a.Header()),
    ("005324 c0 01 00", a.Accepted()),
    ("005324 d0 00000004 00000000", a.Accepted()),
    (
        "005311 c0 0a 04 40 5201 7000000002 43",
        performatives.Begin(next_outgoing_id=1, incoming_window=2, outgoing_window=0),
    ),
    (
        "005328 c0 07 02 40 7000000002",
        a.Source(durable=messaging.TerminusDurability.UNSETTLED_STATE),
    ),
    (
        "005328 c0 0a 03 40 43 a3 05 6e65766572",
        a.Source(expiry_policy=messaging.TerminusExpiryPolicy.NEVER),
    ),
]


@pytest.mark.parametrize(("hexed", "want"), OTHER_ENCODINGS, ids=[h for h, _ in OTHER_ENCODINGS])
def test_every_encoding_decodes(hexed: str, want: Any) -> None:
    data = bytes.fromhex(hexed)
    assert_same(a.decode(data), want)
    # And the decoder stops where the value ends.
    assert a.codec.amqp10.decode_from(data + b"\x40", 0) == (a.decode(data), len(data))


_WIDE_CODES = {
    T.NULL: 0x40, T.BOOLEAN: 0x56, T.UBYTE: 0x50, T.USHORT: 0x60, T.UINT: 0x70, T.ULONG: 0x80,
    T.BYTE: 0x51, T.SHORT: 0x61, T.INT: 0x71, T.LONG: 0x81, T.FLOAT: 0x72, T.DOUBLE: 0x82,
    T.DECIMAL32: 0x74, T.DECIMAL64: 0x84, T.DECIMAL128: 0x94, T.CHAR: 0x73,
    T.TIMESTAMP: 0x83, T.UUID: 0x98, T.BINARY: 0xB0, T.STRING: 0xB1, T.SYMBOL: 0xB3,
    T.LIST: 0xD0, T.MAP: 0xD1, T.ARRAY: 0xF0,
}  # fmt: skip


def _compound(code: int, count: int, body: bytes) -> bytes:
    return bytes((code,)) + struct.pack(">II", len(body) + 4, count) + body


def wide(v: Any) -> Any:
    """The widest encoding of a value: a second encoder, written from the spec, that never
    uses a short form (0x56 booleans, 0x70 uints, 0x80 ulongs, list32, str32, ...)."""
    t = type(v)
    if v is None:
        return b"\x40"
    if t is bool:
        return b"\x56\x01" if v else b"\x56\x00"
    fixed = {
        a.codec.amqp10.UByte: (0x50, ">B"), a.codec.amqp10.UShort: (0x60, ">H"),
        a.codec.amqp10.UInt: (0x70, ">I"), a.codec.amqp10.ULong: (0x80, ">Q"),
        a.codec.amqp10.Byte: (0x51, ">b"), a.codec.amqp10.Short: (0x61, ">h"),
        a.codec.amqp10.Int: (0x71, ">i"), int: (0x81, ">q"),
        a.codec.amqp10.Timestamp: (0x83, ">q"), a.codec.amqp10.Float: (0x72, ">f"),
        float: (0x82, ">d"),
    }  # fmt: skip
    if t in fixed:
        code, fmt = fixed[t]
        return bytes((code,)) + struct.pack(fmt, v)
    if t is a.codec.amqp10.Char:
        return b"\x73" + struct.pack(">I", ord(v))
    if t in (a.codec.amqp10.Decimal32, a.codec.amqp10.Decimal64, a.codec.amqp10.Decimal128):
        code = {
            a.codec.amqp10.Decimal32: 0x74,
            a.codec.amqp10.Decimal64: 0x84,
            a.codec.amqp10.Decimal128: 0x94,
        }[t]
        return bytes((code,)) + v.to_bytes()
    if t is uuid.UUID:
        return b"\x98" + v.bytes
    if t in (bytes, str, a.Symbol):
        raw = v if t is bytes else v.encode()
        code = {bytes: 0xB0, str: 0xB1, a.Symbol: 0xB3}[t]  # type: ignore[index]
        return bytes((code,)) + struct.pack(">I", len(raw)) + raw
    if t in (list, tuple):
        return _compound(0xD0, len(v), b"".join(wide(x) for x in v))
    if t is dict:
        return _compound(0xD1, 2 * len(v), b"".join(wide(k) + wide(x) for k, x in v.items()))
    if t is a.Described:
        return b"\x00" + wide(v.descriptor) + wide(v.value)
    if t is a.codec.amqp10.Array:
        head = b"" if v.descriptor is None else b"\x00" + wide(v.descriptor)
        # Each element is its widest encoding less the constructor, which is shared.
        elements = b"".join(wide(x)[1:] for x in v.items)
        return _compound(0xF0, len(v.items), head + bytes((_WIDE_CODES[v.type],)) + elements)
    raise TypeError(t)


@given(S.values)
@MAIN
def test_the_widest_encoding_of_any_value_decodes(value: Any) -> None:
    assert_same(a.decode(wide(value)), value)


# -- the encoder picks the smallest encoding ---------------------------------------------------

SMALLEST: list[tuple[Any, str]] = [
    (None, "40"),
    (True, "41"),
    (False, "42"),
    (a.codec.amqp10.UByte(0), "5000"),
    (a.codec.amqp10.UByte(255), "50ff"),
    (a.codec.amqp10.UShort(0), "600000"),
    (a.codec.amqp10.UShort(65535), "60ffff"),
    (a.codec.amqp10.UInt(0), "43"),
    (a.codec.amqp10.UInt(1), "5201"),
    (a.codec.amqp10.UInt(255), "52ff"),
    (a.codec.amqp10.UInt(256), "7000000100"),
    (a.codec.amqp10.UInt(2**32 - 1), "70ffffffff"),
    (a.codec.amqp10.ULong(0), "44"),
    (a.codec.amqp10.ULong(1), "5301"),
    (a.codec.amqp10.ULong(255), "53ff"),
    (a.codec.amqp10.ULong(256), "800000000000000100"),
    (a.codec.amqp10.ULong(2**32), "800000000100000000"),
    (a.codec.amqp10.ULong(2**64 - 1), "80ffffffffffffffff"),
    (a.codec.amqp10.Byte(0), "5100"),
    (a.codec.amqp10.Byte(-1), "51ff"),
    (a.codec.amqp10.Byte(-128), "5180"),
    (a.codec.amqp10.Byte(127), "517f"),
    (a.codec.amqp10.Short(-1), "61ffff"),
    (a.codec.amqp10.Short(-32768), "618000"),
    (a.codec.amqp10.Short(32767), "617fff"),
    (a.codec.amqp10.Int(0), "5400"),
    (a.codec.amqp10.Int(-1), "54ff"),
    (a.codec.amqp10.Int(127), "547f"),
    (a.codec.amqp10.Int(128), "7100000080"),
    (a.codec.amqp10.Int(-128), "5480"),
    (a.codec.amqp10.Int(-129), "71ffffff7f"),
    (a.codec.amqp10.Int(2**31 - 1), "717fffffff"),
    (a.codec.amqp10.Int(-(2**31)), "7180000000"),
    (0, "5500"),
    (-1, "55ff"),
    (127, "557f"),
    (128, "810000000000000080"),
    (-128, "5580"),
    (-129, "81ffffffffffffff7f"),
    (255, "8100000000000000ff"),
    (2**63 - 1, "817fffffffffffffff"),
    (-(2**63), "818000000000000000"),
    (a.codec.amqp10.Float(1.5), "723fc00000"),
    (a.codec.amqp10.Float(-0.0), "7280000000"),
    (a.codec.amqp10.Float(float("inf")), "727f800000"),
    (1.5, "823ff8000000000000"),
    (-0.0, "828000000000000000"),
    (a.codec.amqp10.Decimal32(0x32800001), "7432800001"),
    (a.codec.amqp10.Decimal64(1), "840000000000000001"),
    (a.codec.amqp10.Decimal128(1 << 127), "94" + "80" + "00" * 15),
    (a.codec.amqp10.Char("a"), "7300000061"),
    (a.codec.amqp10.Char("\U0010ffff"), "730010ffff"),
    (a.codec.amqp10.Timestamp(0), "830000000000000000"),
    (a.codec.amqp10.Timestamp(-1), "83ffffffffffffffff"),
    (a.codec.amqp10.Timestamp(1311704463521), "83" + (1311704463521).to_bytes(8, "big").hex()),
    (uuid.UUID(int=1), "98" + "00" * 15 + "01"),
    (b"", "a000"),
    (b"\xff", "a001ff"),
    (b"x" * 255, "a0ff" + "78" * 255),
    (b"x" * 256, "b000000100" + "78" * 256),
    ("", "a100"),
    ("é", "a102c3a9"),
    ("x" * 255, "a1ff" + "78" * 255),
    ("x" * 256, "b100000100" + "78" * 256),
    # The size is in bytes, not characters: 127 and 128 two-byte characters.
    ("é" * 127, "a1fe" + "c3a9" * 127),
    ("é" * 128, "b100000100" + "c3a9" * 128),
    (a.Symbol(""), "a300"),
    (a.Symbol("a" * 255), "a3ff" + "61" * 255),
    (a.Symbol("a" * 256), "b300000100" + "61" * 256),
    ([], "45"),
    ([None], "c0020140"),
    # list8 while the size (count byte + body) fits in a byte and the count < 256.
    ([None] * 254, "c0fffe" + "40" * 254),
    ([None] * 255, "d000000103000000ff" + "40" * 255),
    ([b"x" * 252], "c0ff01a0fc" + "78" * 252),
    ([b"x" * 253], "d00000010300000001a0fd" + "78" * 253),
    ({}, "c10100"),
    ({None: None}, "c103024040"),
    ({a.Symbol("k"): 1}, "c10602a3016b5501"),
    ({"k" * 251: None}, "c1ff02a1fb" + "6b" * 251 + "40"),
    ({"k" * 252: None}, "d10000010300000002a1fc" + "6b" * 252 + "40"),
    (a.codec.amqp10.Array(T.INT, []), "e0020054"),
    (
        a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(1), a.codec.amqp10.Int(-128)]),
        "e00402540180",
    ),
    (
        a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(1), a.codec.amqp10.Int(128)]),
        "e00a02710000000100000080",
    ),
    (a.codec.amqp10.Array(T.UINT, [a.codec.amqp10.UInt(0)]), "e003015200"),
    (a.codec.amqp10.Array(T.UINT, [a.codec.amqp10.UInt(256)]), "e006017000000100"),
    (a.codec.amqp10.Array(T.ULONG, [a.codec.amqp10.ULong(0)]), "e003015300"),
    (a.codec.amqp10.Array(T.LONG, [1, -1]), "e004025501ff"),
    (a.codec.amqp10.Array(T.BOOLEAN, [True, False]), "e00402560100"),
    (a.codec.amqp10.Array(T.NULL, []), "e0020040"),
    (a.codec.amqp10.Array(T.NULL, [None]), "e0020140"),
    (a.codec.amqp10.Array(T.STRING, ["a", ""]), "e00502a1016100"),
    (a.codec.amqp10.Array(T.STRING, ["x" * 256]), "f00000010900000001b100000100" + "78" * 256),
    (a.codec.amqp10.Array(T.LIST, [[], [None]]), "e00702c00100020140"),
    (a.codec.amqp10.Array(T.MAP, [{}, {None: None}]), "e00802c1010003024040"),
    (a.codec.amqp10.Array(T.ARRAY, [a.codec.amqp10.Array(T.INT, [])]), "e00501e0020054"),
    (a.codec.amqp10.Array(T.SYMBOL, [a.Symbol("a")], a.Symbol("d")), "e0080100a30164a30161"),
    (a.Described(a.codec.amqp10.ULong(5), None), "00530540"),
    (a.Described(a.codec.amqp10.ULong(0x1234_0000_0001), None), "0080000012340000000140"),
    (a.Described(a.Symbol("test:x"), 1), "00a306746573743a785501"),
    (OPEN_C, "005310c00401a10163"),
    (
        performatives.Open(container_id="c", max_frame_size=512),
        "005310c00a03a10163407000000200",
    ),
    (performatives.Close(), "00531845"),
    (a.Accepted(), "00532445"),
    (a.Header(durable=True), "005370c0020141"),
    (performatives.Transfer(handle=0), "005314c0020143"),
    (a.Data(b"x"), "005375a00178"),
]


@pytest.mark.parametrize(("value", "hexed"), SMALLEST, ids=[h[:24] for _, h in SMALLEST])
def test_the_encoder_picks_the_smallest_encoding(value: Any, hexed: str) -> None:
    assert a.encode(value).hex() == hexed
    assert_same(a.decode(bytes.fromhex(hexed)), value)


@given(S.ulongs)
@settings(max_examples=200, deadline=None)
def test_unsigned_widths(v: a.codec.amqp10.ULong) -> None:
    want_ulong = b"\x44" if v == 0 else b"\x53" + bytes((v,)) if v < 256 else b"\x80"
    assert a.encode(v).startswith(want_ulong)
    if v < 2**32:
        want_uint = b"\x43" if v == 0 else b"\x52" + bytes((v,)) if v < 256 else b"\x70"
        assert a.encode(a.codec.amqp10.UInt(v)).startswith(want_uint)


@given(S.longs)
@settings(max_examples=200, deadline=None)
def test_signed_widths(v: int) -> None:
    assert a.encode(v)[0] == (0x55 if -128 <= v <= 127 else 0x81)
    if -(2**31) <= v < 2**31:
        assert a.encode(a.codec.amqp10.Int(v))[0] == (0x54 if -128 <= v <= 127 else 0x71)


@given(st.one_of(S.values, S.arrays_of_arrays))
@MAIN
def test_compound_and_variable_widths(value: Any) -> None:
    """Every list, map, array, binary, string and symbol, at any depth, has its short form
    exactly when its size and count fit in one byte."""
    data = a.encode(value)

    def check(v: Any, enc: bytes) -> None:
        code = enc[0]
        if type(v) in (bytes, str, a.Symbol):
            n = len(v if type(v) is bytes else v.encode())
            assert (code & 0xF0) == (0xA0 if n < 256 else 0xB0)
        elif type(v) in (list, dict, a.codec.amqp10.Array):
            if type(v) is list and not v:
                assert code == 0x45
                return
            short = code in (0xC0, 0xC1, 0xE0)
            assert short or code in (0xD0, 0xD1, 0xF0)
            body_size = enc[1] - 1 if short else struct.unpack_from(">I", enc, 1)[0] - 4
            count = len(v) * (2 if type(v) is dict else 1)
            assert short == (body_size < 255 and count < 256)
        for child in _children(v):
            check(child, a.encode(child))

    check(value, data)


def _children(v: Any) -> list[Any]:
    if type(v) is list:
        return v
    if type(v) is dict:
        return [x for kv in v.items() for x in kv]
    if type(v) is a.Described:
        return [v.descriptor, v.value]
    return []


# -- decimals --------------------------------------------------------------------------------

DECIMAL_BITS = [
    (a.codec.amqp10.Decimal32, "0", 0x32800000),
    (a.codec.amqp10.Decimal32, "1", 0x32800001),
    (a.codec.amqp10.Decimal32, "-1", 0xB2800001),
    (a.codec.amqp10.Decimal32, "1.5", 0x3200000F),
    (a.codec.amqp10.Decimal32, "-0", 0xB2800000),
    (a.codec.amqp10.Decimal32, "9999999", 0x6CB8967F),
    (a.codec.amqp10.Decimal32, "9999999E+90", 0x77F8967F),
    (a.codec.amqp10.Decimal32, "1E-101", 0x00000001),
    (a.codec.amqp10.Decimal32, "Infinity", 0x78000000),
    (a.codec.amqp10.Decimal32, "-Infinity", 0xF8000000),
    (a.codec.amqp10.Decimal32, "NaN", 0x7C000000),
    (a.codec.amqp10.Decimal32, "sNaN", 0x7E000000),
    (a.codec.amqp10.Decimal64, "1", 0x31C0000000000001),
    (a.codec.amqp10.Decimal64, "-7.5", 0xB1A000000000004B),
    (a.codec.amqp10.Decimal64, "9999999999999999E+369", 0x77FB86F26FC0FFFF),
    (a.codec.amqp10.Decimal64, "1E-398", 0x0000000000000001),
    (a.codec.amqp10.Decimal64, "Infinity", 0x7800000000000000),
    (a.codec.amqp10.Decimal128, "1", 0x30400000000000000000000000000001),
    (a.codec.amqp10.Decimal128, "9" * 34 + "E+6111", 0x5FFFED09BEAD87C0378D8E63FFFFFFFF),
    (a.codec.amqp10.Decimal128, "-Infinity", 0xF8000000000000000000000000000000),
    (a.codec.amqp10.Decimal128, "NaN", 0x7C000000000000000000000000000000),
]


@pytest.mark.parametrize(("cls", "text", "bits"), DECIMAL_BITS)
def test_decimal_bid_encodings(cls: Any, text: str, bits: int) -> None:
    value = cls.from_decimal(text)
    assert value.bits == bits
    back = value.to_decimal()
    want = decimal.Decimal(text)
    if want.is_nan():
        assert back.is_nan() and back.is_snan() == want.is_snan()
    else:
        assert back == want and back.is_signed() == want.is_signed()
    width = {
        a.codec.amqp10.Decimal32: 4,
        a.codec.amqp10.Decimal64: 8,
        a.codec.amqp10.Decimal128: 16,
    }[cls]
    encoded = roundtrip(value)
    assert encoded[1:] == bits.to_bytes(width, "big")


@pytest.mark.parametrize(
    ("cls", "width", "digits", "emin", "emax"),
    [
        (a.codec.amqp10.Decimal32, 32, 7, -101, 90),
        (a.codec.amqp10.Decimal64, 64, 16, -398, 369),
        (a.codec.amqp10.Decimal128, 128, 34, -6176, 6111),
    ],
)
@given(data=st.data())
@settings(max_examples=100, deadline=None)
def test_decimal_from_and_to_decimal(
    cls: type, width: int, digits: int, emin: int, emax: int, data: st.DataObject
) -> None:
    coefficient = data.draw(st.integers(0, 10**digits - 1))
    exponent = data.draw(st.integers(emin, emax))
    sign = data.draw(st.sampled_from([1, -1]))
    # Made exactly: scaleb() would round to the context's 28 digits (34 are drawn).
    d = decimal.Decimal(f"{sign * coefficient}E{exponent}")
    value = cls.from_decimal(d)  # type: ignore[attr-defined]
    assert value.to_decimal() == d
    # The raw bits survive the wire exactly.
    back = a.decode(a.encode(value))
    assert back.bits == value.bits and 0 <= value.bits < 2**width
    # Bits are bits: any pattern round trips, canonical or not.
    bits = data.draw(st.integers(0, 2**width - 1))
    raw = cls(bits)
    assert a.decode(a.encode(raw)).bits == bits
    assert cls.from_bytes(raw.to_bytes()) == raw  # type: ignore[attr-defined]
    raw.to_decimal()  # never raises


@pytest.mark.parametrize(
    ("cls", "text"),
    [
        (a.codec.amqp10.Decimal32, "12345678"),  # 8 digits
        (a.codec.amqp10.Decimal32, "1E+97"),  # 1000000E+91 is one digit too many
        (a.codec.amqp10.Decimal32, "1E-102"),
        (a.codec.amqp10.Decimal64, "1" * 17),
        (a.codec.amqp10.Decimal128, "1E-6177"),
        (a.codec.amqp10.Decimal128, "1" * 35),
    ],
)
def test_decimal_that_does_not_fit_is_refused(cls: type, text: str) -> None:
    with pytest.raises(ValueError):
        cls.from_decimal(text)  # type: ignore[attr-defined]


def test_decimal_exponent_is_shifted_into_range_when_exact() -> None:
    value = a.codec.amqp10.Decimal32.from_decimal("1E+96")  # 1000000E+90
    assert value.to_decimal() == decimal.Decimal("1E+96")
    assert value.bits == (191 << 23) | 1000000


def test_non_canonical_decimal_coefficient_reads_as_zero() -> None:
    # The "11" form with a coefficient above 9999999 (IEEE 754-2008 says: zero).
    value = a.codec.amqp10.Decimal32(0x6CBFFFFF)
    assert value.to_decimal() == 0
    assert a.encode(value) == b"\x74\x6c\xbf\xff\xff"


def test_decimal_equality_is_by_bits_and_type() -> None:
    assert a.codec.amqp10.Decimal32(5) == a.codec.amqp10.Decimal32(5)
    assert a.codec.amqp10.Decimal32(5) != a.codec.amqp10.Decimal64(5)
    assert hash(a.codec.amqp10.Decimal32(5)) == hash(a.codec.amqp10.Decimal32(5))
    # 1 and 10E-1 are equal numbers but different bits, so different values here.
    assert a.codec.amqp10.Decimal32.from_decimal("1") != a.codec.amqp10.Decimal32.from_decimal(
        "1.0"
    )


# -- timestamps --------------------------------------------------------------------------------

UTC = dt.timezone.utc


def test_timestamp_spec_example() -> None:
    # Core spec 1.6.17: 1311704463521 is 2011-07-26T18:21:03.521Z.
    moment = dt.datetime(2011, 7, 26, 18, 21, 3, 521000, tzinfo=UTC)
    assert a.codec.amqp10.Timestamp(1311704463521).to_datetime() == moment
    assert a.codec.amqp10.Timestamp.from_datetime(moment) == 1311704463521
    assert type(a.codec.amqp10.Timestamp.from_datetime(moment)) is a.codec.amqp10.Timestamp


def test_timestamp_naive_aware_negative_and_truncation() -> None:
    assert (
        a.codec.amqp10.Timestamp.from_datetime(dt.datetime(1970, 1, 1, 0, 0, 1)) == 1000
    )  # naive is UTC
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert (
        a.codec.amqp10.Timestamp.from_datetime(dt.datetime(1970, 1, 1, 2, 0, 0, tzinfo=plus2)) == 0
    )
    assert a.codec.amqp10.Timestamp(-1).to_datetime() == dt.datetime(
        1969, 12, 31, 23, 59, 59, 999000, UTC
    )
    # Sub-millisecond parts are dropped towards the past, on both sides of the epoch.
    assert a.codec.amqp10.Timestamp.from_datetime(dt.datetime(1970, 1, 1, 0, 0, 0, 1900, UTC)) == 1
    assert (
        a.codec.amqp10.Timestamp.from_datetime(dt.datetime(1969, 12, 31, 23, 59, 59, 999500, UTC))
        == -1
    )
    with pytest.raises(OverflowError):
        a.codec.amqp10.Timestamp(2**63 - 1).to_datetime()


@given(st.datetimes(timezones=st.just(UTC)))
@settings(max_examples=200, deadline=None)
def test_timestamp_datetime_round_trip(moment: dt.datetime) -> None:
    ts = a.codec.amqp10.Timestamp.from_datetime(moment)
    assert ts.to_datetime() == moment.replace(microsecond=moment.microsecond // 1000 * 1000)
    assert_same(a.decode(a.encode(ts)), ts)
