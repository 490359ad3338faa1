"""Corners of the public codec API: construction checks, conversions, and the encoder's
refusals when a value got past construction some other way."""

from __future__ import annotations

import decimal
import enum

import attrs
import pytest

import amqp_sansio as a
import amqp_sansio.codec.amqp10
from amqp_sansio.definitions.amqp10 import performatives


def test_binary_fields_take_any_bytes_like_value() -> None:
    t = performatives.Transfer(handle=0, delivery_tag=bytearray(b"tag"))
    assert t.delivery_tag == b"tag" and type(t.delivery_tag) is bytes
    assert performatives.Transfer(handle=0, delivery_tag=memoryview(b"m")).delivery_tag == b"m"
    with pytest.raises(TypeError):
        performatives.Transfer(handle=0, delivery_tag=5)  # type: ignore[arg-type]


def test_restricted_fields_take_the_enum_or_its_value() -> None:
    assert performatives.Attach(name="l", handle=0, role=1).role == 1  # type: ignore[arg-type]
    assert (
        a.decode(a.encode(performatives.Attach(name="l", handle=0, role=1))).role
        is performatives.Role.RECEIVER
    )  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="is not one of"):
        performatives.Attach(name="l", handle=0, role=5)  # type: ignore[arg-type]


def test_field_ranges_and_key_types_are_checked_on_construction() -> None:
    with pytest.raises(ValueError, match="out of range for a timestamp"):
        a.Properties(creation_time=2**63)
    with pytest.raises(ValueError, match="out of range for uint"):
        performatives.Flow(incoming_window=-1, next_outgoing_id=0, outgoing_window=0)
    with pytest.raises(TypeError, match="must be a symbol"):
        performatives.Open(container_id="c", properties={1: 2})
    with pytest.raises(TypeError, match="mandatory"):
        performatives.SaslMechanisms(sasl_server_mechanisms=[])
    with pytest.raises(ValueError, match="ASCII"):
        performatives.Open(container_id="c", offered_capabilities=["é"])


def test_empty_multiple_field_is_none() -> None:
    assert (
        performatives.Open(container_id="c", offered_capabilities=()).offered_capabilities is None
    )
    assert performatives.Open(
        container_id="c",
        offered_capabilities=a.codec.amqp10.Array(a.codec.amqp10.AMQPType.SYMBOL, ["x"]),
    ).offered_capabilities == ("x",)


def test_an_unknown_field_kind_is_refused_when_declaring_a_type() -> None:
    from amqp_sansio.codec.amqp10.composite import amqp

    with pytest.raises(ValueError, match="unknown field kind"):
        amqp("list")


def test_section_wrappers_hold_their_type() -> None:
    assert a.Data(bytearray(b"x")).value == b"x"
    assert a.AmqpSequence((1, 2)) == a.AmqpSequence([1, 2])
    with pytest.raises(TypeError):
        a.Data(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        a.AmqpSequence(5)  # type: ignore[arg-type]


def test_integer_wrappers_refuse_bools_and_non_integers() -> None:
    with pytest.raises(TypeError):
        a.codec.amqp10.UInt(True)
    with pytest.raises(TypeError):
        a.codec.amqp10.UInt("5")  # type: ignore[arg-type]

    class Index:
        def __index__(self) -> int:
            return 7

    assert a.codec.amqp10.UInt(Index()) == 7  # type: ignore[arg-type]


def test_decimals_are_immutable_and_sized() -> None:
    d = a.codec.amqp10.Decimal32.from_decimal("1.5")
    with pytest.raises(AttributeError):
        d.bits = 0  # type: ignore[misc]
    with pytest.raises(ValueError):
        a.codec.amqp10.Decimal32.from_bytes(b"\x00" * 8)
    assert a.codec.amqp10.Decimal32.from_bytes(d.to_bytes()) == d


def test_decimal_exponent_below_range_is_normalised_when_exact() -> None:
    # 1000E-104 is 1E-101: the same value, with an exponent decimal32 can hold.
    d = a.codec.amqp10.Decimal32.from_decimal(decimal.Decimal("1000E-104"))
    assert d.to_decimal() == decimal.Decimal("1E-101")
    with pytest.raises(ValueError):
        a.codec.amqp10.Decimal32.from_decimal(decimal.Decimal("1234E-104"))


def test_array_is_a_sequence() -> None:
    arr = a.codec.amqp10.Array(
        a.codec.amqp10.AMQPType.INT, [a.codec.amqp10.Int(1), a.codec.amqp10.Int(2)]
    )
    assert list(arr) == [1, 2] and arr[1] == 2 and len(arr) == 2


def test_decode_from_refuses_a_negative_offset() -> None:
    with pytest.raises(ValueError):
        a.codec.amqp10.decode_from(b"\x40\x41", -1)


def test_subclasses_encode_as_their_base() -> None:
    class Colour(enum.IntEnum):
        RED = 1

    class Name(str):
        pass

    class Wide(a.codec.amqp10.UInt):
        pass

    assert a.encode([Colour.RED, Name("n")]) == a.encode([1, "n"])
    assert a.encode({Name("k"): Colour.RED}) == a.encode({"k": 1})
    assert a.encode(Wide(300)) == a.encode(a.codec.amqp10.UInt(300))


def test_multidimensional_memoryview_encodes_as_its_bytes() -> None:
    view = memoryview(bytes(range(8))).cast("B", (2, 4))
    assert a.encode(view) == a.encode(bytes(range(8)))


def test_array_of_maps_holds_only_dicts() -> None:
    with pytest.raises(a.EncodeError, match="only dicts"):
        a.encode(a.codec.amqp10.Array(a.codec.amqp10.AMQPType.MAP, [[1]]))


def test_values_that_bypassed_construction_checks_still_fail_cleanly() -> None:
    """Frozen objects can be forced (``object.__setattr__``); the encoder still reports an
    EncodeError rather than a struct, value or attribute error."""
    header = a.Header()
    object.__setattr__(header, "priority", 300)
    with pytest.raises(a.EncodeError, match="out of range"):
        a.encode(header)
    props = a.Properties()
    object.__setattr__(props, "message_id", -1)
    with pytest.raises(a.EncodeError):
        a.encode(props)
    end = performatives.End()
    object.__setattr__(end, "error", "not an Error")
    ok = a.encode(end)  # a string is still a value: sent as one, and refused on decode
    with pytest.raises(a.DecodeError):
        a.decode(ok)
    begin = attrs.evolve(
        performatives.Begin(next_outgoing_id=0, incoming_window=0, outgoing_window=0)
    )
    object.__setattr__(begin, "offered_capabilities", (1,))
    with pytest.raises(a.EncodeError):
        a.encode(begin)


def test_max_depth_zero_refuses_even_a_message() -> None:
    with pytest.raises(a.DecodeError, match="deeper"):
        a.Message.decode(a.Message(body=b"x").encode(), max_depth=0)


def test_remaining_refusals() -> None:
    with pytest.raises(TypeError, match="expected fields"):
        performatives.Open(container_id="c", properties=[1])  # type: ignore[arg-type]

    class Level(enum.IntEnum):
        HIGH = 9

    m = a.Message(message_annotations={"x-level": Level.HIGH}, body=b"")
    assert a.Message.decode(m.encode()).message_annotations == {"x-level": 9}
    header = a.Header()
    object.__setattr__(header, "priority", "high")
    with pytest.raises(a.EncodeError, match="wrong type"):
        a.encode(header)
