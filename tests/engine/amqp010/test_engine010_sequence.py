"""Command ids and their sets (0-10 spec, ``sequence-no``: RFC 1982 serial numbers;
``sequence-set``: sorted, disjoint ranges), against a plain set as the model."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_sansio.engine.amqp010 import SequenceSet
from amqp_sansio.engine.amqp010.sequence import unwrap, wire

ids = st.integers(0, 200)
spans = st.tuples(ids, st.integers(0, 10)).map(lambda t: (t[0], t[0] + t[1]))


@given(st.lists(st.tuples(st.booleans(), spans), max_size=30))
def test_a_set_holds_what_a_plain_set_holds(steps: list[tuple[bool, tuple[int, int]]]) -> None:
    ours, model = SequenceSet(), set()
    for add, (low, high) in steps:
        if add:
            ours.add(low, high)
            model |= set(range(low, high + 1))
        else:
            ours.remove(low, high)
            model -= set(range(low, high + 1))
        assert set(ours) == model
        assert ours.count() == len(model)
        assert ours.lowest() == (min(model) if model else None)
        assert bool(ours) == bool(model)
        ranges = ours.ranges
        # minimal: sorted, disjoint, not touching
        assert all(a[1] + 1 < b[0] for a, b in itertools.pairwise(ranges))
        assert all(low <= high for low, high in ranges)
        for probe in range(0, 215, 7):
            assert (probe in ours) == (probe in model)


@given(st.lists(spans, max_size=10), st.lists(spans, max_size=10))
def test_update_and_difference(first: list[tuple[int, int]], second: list[tuple[int, int]]) -> None:
    a, b = SequenceSet(first), SequenceSet(second)
    union = a.copy()
    union.update(b)
    assert set(union) == set(a) | set(b)
    rest = a.copy()
    rest.difference_update(b)
    assert set(rest) == set(a) - set(b)
    assert union == SequenceSet(union.ranges) and union != union.ranges
    rest.clear()
    assert not rest and repr(rest) == "SequenceSet(())"


def test_a_reversed_range_is_refused() -> None:
    with pytest.raises(ValueError, match="reversed"):
        SequenceSet([(5, 4)])


@given(st.integers(-(2**40), 2**40), st.integers(-(2**31) + 1, 2**31 - 1))
def test_unwrap_finds_the_id_near_the_reference(reference: int, distance: int) -> None:
    """RFC 1982: an id within 2**31 of the reference is found from its low 32 bits."""
    value = reference + distance
    assert unwrap(wire(value), reference) == value
    assert 0 <= wire(value) <= 0xFFFFFFFF


def test_unwrap_across_the_wrap() -> None:
    assert unwrap(2, 0xFFFFFFFE) == 0x100000002
    assert unwrap(0xFFFFFFFF, 0x100000001) == 0xFFFFFFFF
