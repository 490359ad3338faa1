"""RFC 1982 serial-number arithmetic on 32 bits (:mod:`amqp_sansio.engine.serial`), shared
by AMQP 1.0 (transfer and delivery ids, delivery counts) and AMQP 0-10 (command ids), against
plain integers as the model: a serial number is an integer seen through its low 32 bits."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from amqp_sansio.engine import serial
from amqp_sansio.engine.amqp010 import sequence
from amqp_sansio.engine.amqp10 import serial as serial10
from amqp_sansio.engine.serial import SERIAL_MASK, serial_add, serial_diff, serial_le, serial_lt

SPAN = 2**32
HALF = 2**31
numbers = st.integers(0, SERIAL_MASK)
#: Distances RFC 1982 orders: less than 2**31 either way.
distances = st.integers(-(HALF - 1), HALF - 1)


def test_the_wrap_at_two_to_the_32() -> None:
    assert SERIAL_MASK == SPAN - 1
    assert serial_add(SERIAL_MASK, 1) == 0
    assert serial_add(0, -1) == SERIAL_MASK
    assert serial_diff(0, SERIAL_MASK) == 1
    assert serial_diff(SERIAL_MASK, 0) == -1
    assert serial_lt(SERIAL_MASK, 0) and not serial_lt(0, SERIAL_MASK)
    assert serial_le(SERIAL_MASK, 0) and not serial_le(0, SERIAL_MASK)


def test_numbers_two_to_the_31_apart() -> None:
    """RFC 1982 leaves them unordered; the distance is -2**31 both ways, so each is taken
    as coming first (the module's documented choice)."""
    assert serial_diff(HALF, 0) == serial_diff(0, HALF) == -HALF
    assert serial_lt(0, HALF) and serial_lt(HALF, 0)


@given(numbers, st.integers(-(2**40), 2**40))
def test_adding_is_modulo_two_to_the_32(a: int, n: int) -> None:
    assert serial_add(a, n) == (a + n) % SPAN


@given(numbers, distances)
def test_the_distance_undoes_the_addition(a: int, d: int) -> None:
    b = serial_add(a, d)
    assert serial_diff(b, a) == d
    assert serial_diff(a, b) == -d
    assert serial_lt(a, b) is (d > 0)
    assert serial_lt(b, a) is (d < 0)
    assert serial_le(a, b) is (d >= 0)
    assert serial_le(b, a) is (d <= 0)


@given(numbers, numbers)
def test_the_distance_is_in_range_and_agrees_modulo(a: int, b: int) -> None:
    d = serial_diff(a, b)
    assert -HALF <= d < HALF
    assert (b + d) % SPAN == a


@given(numbers, numbers)
def test_order_is_total_but_for_the_half_way_pair(a: int, b: int) -> None:
    if (a - b) % SPAN == HALF:
        return
    assert [serial_lt(a, b), a == b, serial_lt(b, a)].count(True) == 1
    assert serial_le(a, b) is (serial_lt(a, b) or a == b)


@given(numbers, distances, distances)
def test_order_is_transitive_within_a_window(a: int, d1: int, d2: int) -> None:
    """Inside a window narrower than 2**31 (both specs keep ids so), the order is that of
    the integers the numbers stand for."""
    if abs(d1) + abs(d2) >= HALF or d1 * d2 < 0:
        return
    b, c = serial_add(a, d1), serial_add(a, d1 + d2)
    if serial_lt(a, b) and serial_lt(b, c):
        assert serial_lt(a, c)


@given(st.integers(0, 2**40), distances)
def test_0_10_unwraps_a_command_id_against_a_reference(reference: int, d: int) -> None:
    """0-10 counts command ids as unbounded integers and sends their low 32 bits."""
    value = reference + d
    assert sequence.wire(value) == value % SPAN
    assert sequence.unwrap(sequence.wire(value), reference) == value
    assert sequence.SERIAL_MASK is serial.SERIAL_MASK


def test_1_0_keeps_its_path() -> None:
    """amqp_sansio.engine.amqp10.serial (documented in docs/api.rst) is the shared module."""
    for name in serial10.__all__:
        assert getattr(serial10, name) is getattr(serial, name)
    assert set(serial10.__all__) == set(serial.__all__) - {"SERIAL_MASK"}
