"""Cross-check the codec against Apache Qpid Proton (python-qpid-proton), an independent AMQP
1.0 implementation: what we encode, proton decodes to the same values, and what proton
encodes, we decode to the same values. The same for whole messages.

Proton's Python mapping, and where it differs from ours (read from proton/_data.py and
proton/_message.py, version 0.40):

* The wrappers map one to one (``ubyte`` <-> UByte, ``int32`` <-> Int, ``float32`` <-> Float,
  ``symbol`` <-> Symbol, ``timestamp`` <-> Timestamp, ...). Proton's decimals hold the raw bits
  as we do: ``decimal32``/``decimal64`` are ``int`` subclasses, ``decimal128`` is a ``bytes``
  subclass.
* Proton hands binary out as a ``memoryview`` into its own buffer, which is only valid while
  the ``Data`` (or ``Message``) object lives: it is copied at once.
* Proton's decimals are ``int``/``bytes`` subclasses, so as map keys they collide with equal
  ints and bytes (``Decimal32(0)`` and ``False``), and a binary map key becomes an unhashable
  memoryview: the values sent to proton keep such keys out.
* Proton's decoder loses the value that follows a described value whose value is itself
  described (``[Described(d, Described(d, 1)), 2]`` reads back as one element), and cannot read
  a described value used as a descriptor; its *encoder* writes both correctly, and we decode
  them, so only the proton-decodes direction leaves them out.
* Proton writes an array of nulls as size/count/constructor with no element bytes. Since such
  elements take no bytes, no size bounds their number: our decoder accepts at most two of
  them in one array, by design, to bound allocation. Ours never writes more.
* ``proton.Message`` holds one body section (the last of several data or amqp-sequence
  sections), no footer, times in seconds as floats (``int(seconds * 1000)`` on the way in),
  a ulong message-id as a plain ``int``, an unset content-type as ``symbol("None")``, a
  zero group-sequence as unset (yet it sends 0 along with any group-id), the string
  properties as C strings (cut at a NUL), an amqp-value body of null as no body, and it
  always writes a header and a properties section.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support import strategies as S
from support.strategies import assert_same, same

import amqp_sansio as a
import amqp_sansio.codec.amqp10

proton = pytest.importorskip("proton", reason="python-qpid-proton is in the 'test' extra")

T = a.codec.amqp10.AMQPType
CHECK = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- converting between our values and proton's -------------------------------------------

_PROTON_TYPE = {t: getattr(proton.Data, "BOOL" if t is T.BOOLEAN else t.name) for t in T}
_OUR_TYPE = {code: t for t, code in _PROTON_TYPE.items()}
_WRAPPERS: dict[type, Any] = {
    a.codec.amqp10.UByte: proton.ubyte,
    a.codec.amqp10.UShort: proton.ushort,
    a.codec.amqp10.UInt: proton.uint,
    a.codec.amqp10.ULong: proton.ulong,
    a.codec.amqp10.Byte: proton.byte,
    a.codec.amqp10.Short: proton.short,
    a.codec.amqp10.Int: proton.int32,
    a.codec.amqp10.Float: proton.float32,
    a.codec.amqp10.Char: proton.char,
    a.Symbol: proton.symbol,
    a.codec.amqp10.Timestamp: proton.timestamp,
}
_UNWRAP = {p: ours for ours, p in _WRAPPERS.items()}
_NATIVE = (type(None), bool, int, float, str, bytes, uuid.UUID)


def to_proton(v: Any) -> Any:
    """Our value as the value proton's ``Data.put_object`` takes."""
    t = type(v)
    if t in _NATIVE:
        return v
    if t in _WRAPPERS:
        return _WRAPPERS[t](v)
    if t is a.codec.amqp10.Decimal32:
        return proton.decimal32(v.bits)
    if t is a.codec.amqp10.Decimal64:
        return proton.decimal64(v.bits)
    if t is a.codec.amqp10.Decimal128:
        return proton.decimal128(v.to_bytes())
    if t is list:
        return [to_proton(x) for x in v]
    if t is dict:
        return {to_proton(k): to_proton(x) for k, x in v.items()}
    if t is a.Described:
        return proton.Described(to_proton(v.descriptor), to_proton(v.value))
    if t is a.codec.amqp10.Array:
        descriptor = proton.UNDESCRIBED if v.descriptor is None else to_proton(v.descriptor)
        return proton.Array(descriptor, _PROTON_TYPE[v.type], *map(to_proton, v.items))
    raise TypeError(f"no proton value for {t.__name__}")


def from_proton(v: Any) -> Any:
    """A value from proton's ``Data.get_object`` as ours (copying binary out of proton)."""
    t = type(v)
    if t in _NATIVE:
        return v
    if t is memoryview:
        return bytes(v)
    if t in _UNWRAP:
        return _UNWRAP[t](v)
    if t is proton.decimal32:
        return a.codec.amqp10.Decimal32(int(v))
    if t is proton.decimal64:
        return a.codec.amqp10.Decimal64(int(v))
    if t is proton.decimal128:
        return a.codec.amqp10.Decimal128.from_bytes(bytes(v))
    if t is list:
        return [from_proton(x) for x in v]
    if isinstance(v, dict):  # also proton's AnnotationDict
        return {from_proton(k): from_proton(x) for k, x in v.items()}
    if t is proton.Described:
        return a.Described(from_proton(v.descriptor), from_proton(v.value))
    if t is proton.Array:
        descriptor = None if v.descriptor is proton.UNDESCRIBED else from_proton(v.descriptor)
        return a.codec.amqp10.Array(
            _OUR_TYPE[v.type], [from_proton(x) for x in v.elements], descriptor
        )
    raise TypeError(f"unexpected proton value {v!r:.60} of type {t.__name__}")


def proton_decode(data: bytes) -> Any:
    """Decode one value with proton, converted to ours while proton's buffer is alive."""
    d = proton.Data()
    assert d.decode(data) == len(data)
    d.rewind()
    assert d.next() is not None
    return from_proton(d.get_object())


def proton_encode(value: Any) -> bytes:
    d = proton.Data()
    d.put_object(to_proton(value))
    return bytes(d.encode())


def proton_can_decode(v: Any) -> bool:
    """False for what proton's decoder gets wrong (see the module docstring): a described
    value whose value, or whose descriptor, is itself described; a binary map key."""
    t = type(v)
    if t is a.Described:
        if type(v.descriptor) is a.Described or _is_described(v.value):
            return False
        return proton_can_decode(v.value)
    if t in (list, tuple):
        return all(map(proton_can_decode, v))
    if t is dict:
        # A binary key comes back from proton as an unhashable memoryview.
        return all(
            type(k) is not bytes and proton_can_decode(k) and proton_can_decode(x)
            for k, x in v.items()
        )
    if t is a.codec.amqp10.Array:
        return all(map(proton_can_decode, v.items))
    if attrs.has(t):
        if not hasattr(t, "DESCRIPTOR_CODE"):  # a.Message
            return all(proton_can_decode(getattr(v, f.name)) for f in attrs.fields(t))
        fields = [getattr(v, f.name) for f in attrs.fields(t)]
        if not hasattr(t, "_amqp_specs") and _is_described(fields[0]):
            return False  # a restricted type (one value, not a list) holding a described value
        return all(map(proton_can_decode, fields))
    return True


def _is_described(v: Any) -> bool:
    return type(v) is a.Described or hasattr(type(v), "DESCRIPTOR_CODE")


#: Map keys proton can hold: hashable, no binary (a memoryview) and no decimals (int and
#: bytes subclasses in proton, which collide with other keys).
_proton_keys = S.hashable_scalars.filter(
    lambda k: (
        type(k)
        not in (
            bytes,
            a.codec.amqp10.Decimal32,
            a.codec.amqp10.Decimal64,
            a.codec.amqp10.Decimal128,
        )
    )
)
proton_values = S.make_values(_proton_keys, max_leaves=20, max_size=5, described_descriptors=False)
_proton_small_values = S.make_values(
    _proton_keys, max_leaves=6, max_size=3, described_descriptors=False
)
PROTON_COMPOSITES, PROTON_SECTIONS = S.make_composites(_proton_small_values)
proton_messages = S.make_messages(_proton_small_values)


def test_the_converters_are_inverse() -> None:
    for value in CORPUS:
        assert_same(from_proton(to_proton(value)), value)


# -- the corpus ---------------------------------------------------------------------------------

_D1 = a.codec.amqp10.ULong(0x1234_0000_0001)
_DS = a.Symbol("test:x")
FLOAT32_MAX = a.codec.amqp10.Float(3.4028234663852886e38)

CORPUS: list[Any] = [
    None,
    True,
    False,
    *(a.codec.amqp10.UByte(n) for n in (0, 1, 255)),
    *(a.codec.amqp10.UShort(n) for n in (0, 256, 65535)),
    *(a.codec.amqp10.UInt(n) for n in (0, 1, 255, 256, 2**32 - 1)),
    *(a.codec.amqp10.ULong(n) for n in (0, 255, 256, 2**32, 2**64 - 1)),
    *(a.codec.amqp10.Byte(n) for n in (-128, -1, 0, 127)),
    *(a.codec.amqp10.Short(n) for n in (-(2**15), -1, 0, 2**15 - 1)),
    *(a.codec.amqp10.Int(n) for n in (-(2**31), -129, -128, -1, 0, 127, 128, 2**31 - 1)),
    *(-(2**63), -129, -128, -1, 0, 127, 128, 2**63 - 1),
    *(
        a.codec.amqp10.Float(x)
        for x in (0.0, -0.0, 1.5, -2.25, float("inf"), float("-inf"), float("nan"))
    ),
    FLOAT32_MAX,
    *(0.0, -0.0, 0.1, 5e-324, 1.7976931348623157e308, float("inf"), float("nan")),
    a.codec.amqp10.Decimal32(0),
    a.codec.amqp10.Decimal32(2**32 - 1),
    a.codec.amqp10.Decimal32.from_decimal("-1.5"),
    a.codec.amqp10.Decimal64(0),
    a.codec.amqp10.Decimal64.from_decimal("123456789.0123456"),
    a.codec.amqp10.Decimal64(2**64 - 1),
    a.codec.amqp10.Decimal128(0),
    a.codec.amqp10.Decimal128.from_decimal("-" + "9" * 34),
    a.codec.amqp10.Decimal128(2**128 - 1),
    *(a.codec.amqp10.Char(c) for c in ("\x00", "a", "é", "\uffff", "\U0001f600", "\U0010ffff")),
    *(a.codec.amqp10.Timestamp(n) for n in (-(2**63), -1, 0, 1311704463521, 2**63 - 1)),
    uuid.UUID(int=0),
    uuid.UUID(int=2**128 - 1),
    uuid.UUID("12345678-1234-5678-1234-567812345678"),
    b"",
    b"\x00",
    b"\xff" * 255,
    b"\xfe" * 256,
    bytes(range(256)) * 274,  # 70144 bytes
    "",
    "é",
    "日本語 \U0001f600",
    "x" * 255,
    "é" * 128,
    "y" * 70000,
    a.Symbol(""),
    a.Symbol("amqp:accepted:list"),
    a.Symbol("s" * 300),
    [],
    [None],
    [[]],
    list(range(1000)),
    [a.Symbol("s")] * 1000,
    [1, "two", [3.0, [a.codec.amqp10.UInt(4), {"five": a.codec.amqp10.Char("6")}]], None, True],
    {},
    {None: None},
    {
        "k": 1,
        a.Symbol("s"): a.codec.amqp10.ULong(2),
        3: [4],
        a.codec.amqp10.UInt(5): {"n": None},
        uuid.UUID(int=6): b"",
    },
    {str(i): i for i in range(1000)},
    a.codec.amqp10.Array(T.NULL, []),
    a.codec.amqp10.Array(T.NULL, [None]),
    a.codec.amqp10.Array(T.NULL, [None] * 2, a.Symbol("test:nulls")),
    a.codec.amqp10.Array(T.BOOLEAN, [True, False, True]),
    a.codec.amqp10.Array(T.UBYTE, [a.codec.amqp10.UByte(0), a.codec.amqp10.UByte(255)]),
    a.codec.amqp10.Array(T.USHORT, [a.codec.amqp10.UShort(0), a.codec.amqp10.UShort(65535)]),
    a.codec.amqp10.Array(T.UINT, []),
    a.codec.amqp10.Array(T.UINT, [a.codec.amqp10.UInt(0), a.codec.amqp10.UInt(255)]),
    a.codec.amqp10.Array(T.UINT, [a.codec.amqp10.UInt(0), a.codec.amqp10.UInt(2**32 - 1)]),
    a.codec.amqp10.Array(T.ULONG, [a.codec.amqp10.ULong(1), a.codec.amqp10.ULong(2**64 - 1)]),
    a.codec.amqp10.Array(T.BYTE, [a.codec.amqp10.Byte(-128), a.codec.amqp10.Byte(127)]),
    a.codec.amqp10.Array(T.SHORT, [a.codec.amqp10.Short(-1)]),
    a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(n) for n in range(-500, 500)]),
    a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(-(2**31)), a.codec.amqp10.Int(2**31 - 1)]),
    a.codec.amqp10.Array(T.LONG, [-1, 0, 2**63 - 1]),
    a.codec.amqp10.Array(T.FLOAT, [a.codec.amqp10.Float(1.5), a.codec.amqp10.Float(float("-inf"))]),
    a.codec.amqp10.Array(T.DOUBLE, [0.1, -0.0, float("nan")]),
    a.codec.amqp10.Array(
        T.DECIMAL32, [a.codec.amqp10.Decimal32(1), a.codec.amqp10.Decimal32(2**32 - 1)]
    ),
    a.codec.amqp10.Array(T.DECIMAL64, [a.codec.amqp10.Decimal64(7)]),
    a.codec.amqp10.Array(T.DECIMAL128, [a.codec.amqp10.Decimal128(2**127 + 5)]),
    a.codec.amqp10.Array(T.CHAR, [a.codec.amqp10.Char("a"), a.codec.amqp10.Char("\U0010ffff")]),
    a.codec.amqp10.Array(
        T.TIMESTAMP, [a.codec.amqp10.Timestamp(-1), a.codec.amqp10.Timestamp(1311704463521)]
    ),
    a.codec.amqp10.Array(T.UUID, [uuid.UUID(int=1), uuid.UUID(int=2)]),
    a.codec.amqp10.Array(T.BINARY, [b"", b"\x00" * 300]),
    a.codec.amqp10.Array(T.STRING, ["a", "é", ""]),
    a.codec.amqp10.Array(T.SYMBOL, [a.Symbol("a"), a.Symbol("b" * 256)]),
    a.codec.amqp10.Array(T.LIST, [[], [1, "x"], [None]]),
    a.codec.amqp10.Array(T.MAP, [{}, {"k": a.codec.amqp10.UInt(1)}]),
    a.codec.amqp10.Array(
        T.ARRAY,
        [
            a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(1)]),
            a.codec.amqp10.Array(T.STRING, ["s"]),
        ],
    ),
    a.codec.amqp10.Array(
        T.ARRAY,
        [a.codec.amqp10.Array(T.ARRAY, [a.codec.amqp10.Array(T.SYMBOL, [a.Symbol("deep")])])],
    ),
    # Arrays of described values: the descriptor is shared, the items are undescribed.
    a.codec.amqp10.Array(T.STRING, ["x", "y"], _DS),
    a.codec.amqp10.Array(T.ULONG, [a.codec.amqp10.ULong(3)], _D1),
    a.codec.amqp10.Array(T.LIST, [[1], [2]], a.codec.amqp10.ULong(0x1234_0000_0002)),
    a.codec.amqp10.Array(T.MAP, [{a.Symbol("k"): "v"}], _DS),
    a.codec.amqp10.Array(T.ARRAY, [a.codec.amqp10.Array(T.INT, [a.codec.amqp10.Int(1)], _DS)], _D1),
    a.Described(_D1, None),
    a.Described(_DS, "value"),
    a.Described(a.codec.amqp10.ULong(0x99), [1, 2]),
    a.Described(_DS, a.codec.amqp10.Array(T.SYMBOL, [a.Symbol("a")])),
    a.Described(_D1, {a.Symbol("k"): a.Described(_DS, [a.Described(_D1, 1), 2])}),
    [a.Described(_D1, 1), a.Described(_DS, None), 3],
]


def _corpus_id(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


@pytest.mark.parametrize("value", CORPUS, ids=_corpus_id)
def test_corpus_encoded_here_decodes_in_proton(value: Any) -> None:
    assert_same(proton_decode(a.encode(value)), value)


@pytest.mark.parametrize("value", CORPUS, ids=_corpus_id)
def test_corpus_encoded_by_proton_decodes_here(value: Any) -> None:
    data = proton_encode(value)
    assert_same(a.decode(data), value)
    # And our encoding of it decodes in proton too (proton's own choices of width differ:
    # it writes list32/map32/array32, and fixed-width array elements).
    assert_same(proton_decode(a.encode(a.decode(data))), value)


def test_proton_put_methods_decode_here() -> None:
    d = proton.Data()
    d.put_list()
    d.enter()
    d.put_bool(True)
    d.put_ubyte(200)
    d.put_ushort(60000)
    d.put_uint(7)
    d.put_ulong(0)
    d.put_byte(-5)
    d.put_short(-300)
    d.put_int(-70000)
    d.put_long(-(2**40))
    d.put_float(0.5)
    d.put_double(-2.5)
    d.put_char("é")
    d.put_timestamp(1311704463521)
    d.put_uuid(uuid.UUID(int=9))
    d.put_binary(b"\x00\x01")
    d.put_string("héllo")
    d.put_symbol("sym")
    d.put_null()
    d.put_described()
    d.enter()
    d.put_symbol("test:d")
    d.put_map()
    d.enter()
    d.put_symbol("k")
    d.put_int(1)
    d.exit()
    d.exit()
    d.put_array(True, proton.Data.STRING)
    d.enter()
    d.put_ulong(0x1234_0000_0003)
    d.put_string("a")
    d.put_string("b")
    d.exit()
    d.exit()
    want = [
        True,
        a.codec.amqp10.UByte(200),
        a.codec.amqp10.UShort(60000),
        a.codec.amqp10.UInt(7),
        a.codec.amqp10.ULong(0),
        a.codec.amqp10.Byte(-5),
        a.codec.amqp10.Short(-300),
        a.codec.amqp10.Int(-70000),
        -(2**40),
        a.codec.amqp10.Float(0.5),
        -2.5,
        a.codec.amqp10.Char("é"),
        a.codec.amqp10.Timestamp(1311704463521),
        uuid.UUID(int=9),
        b"\x00\x01",
        "héllo",
        a.Symbol("sym"),
        None,
        a.Described(a.Symbol("test:d"), {a.Symbol("k"): a.codec.amqp10.Int(1)}),
        a.codec.amqp10.Array(T.STRING, ["a", "b"], a.codec.amqp10.ULong(0x1234_0000_0003)),
    ]
    assert_same(a.decode(d.encode()), want)


def test_proton_described_descriptors_decode_here() -> None:
    # Proton writes a described descriptor correctly though it cannot read one back.
    value = a.Described(
        a.Described(_DS, a.codec.amqp10.UInt(1)), [a.Described(_D1, a.Described(_D1, 2)), 3]
    )
    assert_same(a.decode(proton_encode(value)), value)


def test_proton_arrays_of_more_than_two_nulls_are_refused_here() -> None:
    # Documented in the module docstring: a design limit of ours (null elements take no
    # bytes, so no size bounds their number), not a disagreement on the bytes.
    two = proton_encode(a.codec.amqp10.Array(T.NULL, [None, None]))
    assert two == bytes.fromhex("f0 00000005 00000002 40")
    assert_same(a.decode(two), a.codec.amqp10.Array(T.NULL, [None, None]))
    three = proton_encode(a.codec.amqp10.Array(T.NULL, [None, None, None]))
    with pytest.raises(a.DecodeError, match="at most 2"):
        a.decode(three)


# -- generated values --------------------------------------------------------------------------


def keys_stay_apart(v: Any) -> bool:
    """Whether every map's keys stay distinct as Python values on proton's side: proton's
    decimal32 and friends are ints, so ``False``, ``0`` and ``decimal32(0)`` are one key
    there (a Python dict, not the codec, merges them)."""
    t = type(v)
    if t is dict:
        return len({to_proton(k) for k in v}) == len(v) and all(
            keys_stay_apart(k) and keys_stay_apart(x) for k, x in v.items()
        )
    if t is list:
        return all(keys_stay_apart(x) for x in v)
    if t is a.Described:
        return keys_stay_apart(v.descriptor) and keys_stay_apart(v.value)
    if t is a.codec.amqp10.Array:
        return all(keys_stay_apart(x) for x in v.items)
    return True


@given(proton_values)
@CHECK
def test_generated_values_encoded_here_decode_in_proton(value: Any) -> None:
    assume(keys_stay_apart(value))
    assert same(from_proton(to_proton(value)), value)
    assume(proton_can_decode(value))
    assert_same(proton_decode(a.encode(value)), value)


@given(proton_values)
@CHECK
def test_generated_values_encoded_by_proton_decode_here(value: Any) -> None:
    assume(keys_stay_apart(value))
    assert_same(a.decode(proton_encode(value)), value)


_ALL_PROTON_DESCRIBED = {**PROTON_COMPOSITES, **PROTON_SECTIONS}


@pytest.mark.parametrize("cls", list(_ALL_PROTON_DESCRIBED), ids=lambda c: c.__name__)
@given(data=st.data())
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_composites_agree_with_proton(cls: type, data: st.DataObject) -> None:
    value = data.draw(_ALL_PROTON_DESCRIBED[cls])
    assume(proton_can_decode(value))
    encoded = a.encode(value)
    # Proton reads a described list (or restricted value) with our descriptor, and each
    # field with its type: written back by our generic encoder, it is the same bytes.
    generic = proton_decode(encoded)
    assert type(generic) is a.Described
    assert generic.descriptor == cls.DESCRIPTOR_CODE  # type: ignore[attr-defined]
    assert a.encode(generic) == encoded
    # Proton's own encoding of it (list32 and friends) decodes here to the same composite.
    assert_same(a.decode(proton_encode(generic)), value)


# -- messages ---------------------------------------------------------------------------------

_TIME_LIMIT = 2**50  # where milliseconds survive proton's float seconds


#: Properties that proton.Message keeps as C strings: they end at the first NUL.
_C_STRINGS = ("to", "subject", "reply_to", "content_type", "content_encoding", "group_id",
              "reply_to_group_id")  # fmt: skip


def for_proton_api(message: a.Message) -> a.Message:
    """``message`` within what proton.Message can hold: times within the range its float
    seconds keep to the millisecond, and no NUL in the properties it keeps as C strings."""
    p = message.properties
    if p is None:
        return message

    def clamp(t: int | None) -> a.codec.amqp10.Timestamp | None:
        return (
            None if t is None else a.codec.amqp10.Timestamp(max(-_TIME_LIMIT, min(_TIME_LIMIT, t)))
        )

    def no_nul(text: str | None) -> str | None:
        return None if text is None else type(text)(text.replace("\x00", ""))

    changes: dict[str, Any] = {name: no_nul(getattr(p, name)) for name in _C_STRINGS}
    changes["absolute_expiry_time"] = clamp(p.absolute_expiry_time)
    changes["creation_time"] = clamp(p.creation_time)
    return attrs.evolve(message, properties=attrs.evolve(p, **changes))


def _last_section(body: Any) -> Any:
    return body[-1] if type(body) is tuple else body


def to_proton_message(m: a.Message) -> Any:
    """The proton.Message holding what ours holds (one body section: the last)."""
    pm = proton.Message()
    h = m.header
    if h is not None:
        pm.durable = h.durable
        pm.priority = h.priority
        pm.ttl = (h.ttl or 0) / 1000
        pm.first_acquirer = h.first_acquirer
        pm.delivery_count = h.delivery_count
    p = m.properties
    if p is not None:
        for ours, theirs in (("message_id", "id"), ("correlation_id", "correlation_id")):
            value = getattr(p, ours)
            if value is not None:
                setattr(pm, theirs, to_proton(value))
        for ours, theirs in (
            ("user_id", "user_id"),
            ("to", "address"),
            ("subject", "subject"),
            ("reply_to", "reply_to"),
            ("content_type", "content_type"),
            ("content_encoding", "content_encoding"),
            ("group_id", "group_id"),
            ("group_sequence", "group_sequence"),
            ("reply_to_group_id", "reply_to_group_id"),
        ):
            value = getattr(p, ours)
            if value is not None:
                setattr(pm, theirs, value)
        if p.absolute_expiry_time is not None:
            pm.expiry_time = p.absolute_expiry_time / 1000
        if p.creation_time is not None:
            pm.creation_time = p.creation_time / 1000
    pm.instructions = to_proton(m.delivery_annotations)
    pm.annotations = to_proton(m.message_annotations)
    pm.properties = to_proton(m.application_properties)
    body = _last_section(m.body)
    if type(body) is a.Data:
        pm.body, pm.inferred = body.value, True
    elif type(body) is a.AmqpSequence:
        pm.body, pm.inferred = to_proton(body.value), True
    elif type(body) is a.AmqpValue:
        pm.body, pm.inferred = to_proton(body.value), False
    return pm


def _proton_ms(ms: int | None) -> int | None:
    """What proton sends for a time we gave it in milliseconds, through its float seconds
    (``int(seconds * 1000)``); 0 means unset to proton."""
    if ms is None:
        return None
    sent = int((ms / 1000) * 1000)
    return sent or None


def expected_from_proton(m: a.Message) -> a.Message:
    """The message we decode from what proton encodes of ``to_proton_message(m)``."""
    h = m.header or a.Header()
    p = m.properties or a.Properties()
    ttl = _proton_ms(h.ttl)
    expiry, created = _proton_ms(p.absolute_expiry_time), _proton_ms(p.creation_time)
    return a.Message(
        header=attrs.evolve(h, ttl=ttl),
        delivery_annotations=m.delivery_annotations,
        message_annotations=m.message_annotations,
        properties=attrs.evolve(
            p,
            absolute_expiry_time=None if expiry is None else a.codec.amqp10.Timestamp(expiry),
            creation_time=None if created is None else a.codec.amqp10.Timestamp(created),
            # 0 is unset to proton, but it sends a 0 with any group-id.
            group_sequence=p.group_sequence or (None if p.group_id is None else 0),
        ),
        application_properties=m.application_properties,
        # To proton, a body of None is no body at all.
        body=None if m.body == a.AmqpValue(None) else _last_section(m.body),
    )


def assert_proton_holds(pm: Any, m: a.Message) -> None:
    """Check what ``proton.Message.decode`` made of our encoding of ``m``."""
    h = m.header or a.Header()
    assert pm.durable == h.durable
    assert pm.priority == h.priority
    assert round(pm.ttl * 1000) == (h.ttl or 0)
    assert pm.first_acquirer == h.first_acquirer
    assert pm.delivery_count == h.delivery_count
    p = m.properties or a.Properties()
    for ours, theirs in (("message_id", "id"), ("correlation_id", "correlation_id")):
        want, got = getattr(p, ours), from_proton(getattr(pm, theirs))
        if type(want) is a.codec.amqp10.ULong:
            got = a.codec.amqp10.ULong(got)  # proton gives a ulong message-id as a plain int
        assert_same(got, want)
    assert bytes(pm.user_id) == (p.user_id or b"")
    assert pm.address == p.to
    assert pm.subject == p.subject
    assert pm.reply_to == p.reply_to
    if p.content_type is not None:  # unset, proton says symbol("None")
        assert_same(from_proton(pm.content_type), p.content_type)
    if p.content_encoding is not None:
        assert_same(from_proton(pm.content_encoding), p.content_encoding)
    for ours, theirs in (
        ("absolute_expiry_time", "expiry_time"),
        ("creation_time", "creation_time"),
    ):
        want = getattr(p, ours) or 0
        if abs(want) < _TIME_LIMIT:
            assert round(getattr(pm, theirs) * 1000) == want
    assert pm.group_id == p.group_id
    assert pm.group_sequence == (p.group_sequence or 0)
    assert pm.reply_to_group_id == p.reply_to_group_id
    for ours, theirs in (
        ("delivery_annotations", "instructions"),
        ("message_annotations", "annotations"),
        ("application_properties", "properties"),
    ):
        assert_same(from_proton(getattr(pm, theirs)), getattr(m, ours))
    body = _last_section(m.body)  # proton keeps the last of several sections
    if body is None:
        assert pm.body is None
    elif type(body) is a.Data:
        assert bytes(pm.body) == body.value
        assert pm.inferred
    elif type(body) is a.AmqpSequence:
        assert_same(from_proton(pm.body), body.value)
        assert pm.inferred
    else:
        assert_same(from_proton(pm.body), body.value)
        assert not pm.inferred
    # The footer has no place in proton.Message: nothing to compare.


EXAMPLE_MESSAGES = [
    a.Message(body="hello"),
    a.Message(body=b"\x00\x01\x02"),
    a.Message(body=(a.Data(b"one"), a.Data(b"two"))),
    a.Message(body=a.AmqpSequence([1, "two", None])),
    a.Message(body=a.AmqpValue([a.Symbol("s"), {"k": a.codec.amqp10.UInt(1)}])),
    a.Message(body=a.AmqpValue(b"binary in an amqp-value")),
    a.Message(properties=a.Properties(subject="no body"), body=None),
    a.Message(
        header=a.Header(durable=True, priority=9, ttl=1500, first_acquirer=True, delivery_count=3),
        delivery_annotations={a.Symbol("x-opt-da"): 1},
        message_annotations={a.Symbol("x-opt-ma"): "v", a.codec.amqp10.ULong(7): None},
        properties=a.Properties(
            message_id=uuid.UUID(int=42),
            user_id=b"user",
            to="queue://é",
            subject="subject",
            reply_to="reply",
            correlation_id=a.codec.amqp10.ULong(2**64 - 1),
            content_type=a.Symbol("text/plain"),
            content_encoding=a.Symbol("gzip"),
            absolute_expiry_time=a.codec.amqp10.Timestamp(1311704463521),
            creation_time=a.codec.amqp10.Timestamp(1311704400000),
            group_id="group",
            group_sequence=2**32 - 1,
            reply_to_group_id="rgroup",
        ),
        application_properties={
            "s": "x",
            "i": a.codec.amqp10.Int(-1),
            "l": 2**40,
            "b": True,
            "n": None,
        },
        body="annotated",
        footer={a.Symbol("f"): b"dropped by proton"},
    ),
    a.Message(properties=a.Properties(message_id="string-id", correlation_id=b"bytes-id")),
    a.Message(properties=a.Properties(message_id=a.codec.amqp10.ULong(0)), body=b"x" * 70000),
]


@pytest.mark.parametrize("message", EXAMPLE_MESSAGES, ids=range(len(EXAMPLE_MESSAGES)))
def test_example_messages_encoded_here_decode_in_proton(message: a.Message) -> None:
    pm = proton.Message()
    pm.decode(message.encode())
    assert_proton_holds(pm, message)


@pytest.mark.parametrize("message", EXAMPLE_MESSAGES, ids=range(len(EXAMPLE_MESSAGES)))
def test_example_messages_encoded_by_proton_decode_here(message: a.Message) -> None:
    data = to_proton_message(message).encode()
    assert_same(a.Message.decode(data), expected_from_proton(message))


def test_a_message_built_with_proton_decodes_here() -> None:
    pm = proton.Message(
        body={"key": [1, 2.5, "three"]},
        id=5,
        durable=True,
        priority=7,
        ttl=2,
        subject="s",
        address="a",
        content_type="application/json",
        properties={"p": proton.int32(3)},
        annotations={"x-opt": proton.symbol("y")},
        instructions={proton.ulong(9): "nine"},
    )
    got = a.Message.decode(pm.encode())
    want = a.Message(
        header=a.Header(durable=True, priority=7, ttl=2000),
        delivery_annotations={a.codec.amqp10.ULong(9): "nine"},
        message_annotations={a.Symbol("x-opt"): a.Symbol("y")},
        properties=a.Properties(
            message_id=a.codec.amqp10.ULong(5),  # proton sends an int message-id as a ulong
            to="a",
            subject="s",
            content_type=a.Symbol("application/json"),
        ),
        application_properties={"p": a.codec.amqp10.Int(3)},
        body=a.AmqpValue({"key": [1, 2.5, "three"]}),
    )
    assert_same(got, want)


@given(proton_messages)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_messages_encoded_here_decode_in_proton(message: a.Message) -> None:
    message = for_proton_api(message)
    assume(proton_can_decode(message))
    assume(S.has_sections(message))  # with none, encode() refuses: no bytes is no message
    encoded = message.encode()
    pm = proton.Message()
    pm.decode(encoded)
    assert_proton_holds(pm, message)


@given(proton_messages)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_generated_messages_encoded_by_proton_decode_here(message: a.Message) -> None:
    message = for_proton_api(message)
    data = to_proton_message(message).encode()
    assert_same(a.Message.decode(data), expected_from_proton(message))
