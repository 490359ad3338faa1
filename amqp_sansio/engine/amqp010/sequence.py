"""Command ids and the sets of them a 0-10 session carries (0-10 spec, types
``sequence-no`` and ``sequence-set``; class ``session``: ``completed``,
``known-completed``, ``gap``).

A ``sequence-no`` is an RFC 1982 serial number of 32 bits: it wraps (the arithmetic is the
shared :mod:`amqp_sansio.engine.serial`, AMQP 1.0's too). Inside a session the engine counts
ids as plain, unbounded integers (an id *unwrapped* against a reference near it:
:func:`unwrap`), so that its sets are ordinary sorted ranges; on the wire each id is the
low 32 bits (:func:`wire`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ..serial import SERIAL_MASK, serial_diff

__all__ = ["SERIAL_MASK", "SequenceSet", "unwrap", "wire"]


def wire(value: int) -> int:
    """The ``sequence-no`` on the wire for an unwrapped id: its low 32 bits."""
    return value & SERIAL_MASK


def unwrap(sequence_no: int, reference: int) -> int:
    """The unwrapped id nearest ``reference`` (an unwrapped id) whose low 32 bits are
    ``sequence_no``: RFC 1982 comparison (0-10 spec, ``sequence-no``), within 2**31 either
    side of the reference."""
    return reference + serial_diff(sequence_no, reference)


class SequenceSet:
    """A set of unwrapped command ids as sorted, disjoint, non-touching inclusive ranges
    (0-10 spec, ``sequence-set``: its list-of-pairs form, minimal)."""

    __slots__ = ("_ranges",)

    def __init__(self, ranges: Iterable[tuple[int, int]] = ()) -> None:
        self._ranges: list[list[int]] = []
        for low, high in ranges:
            self.add(low, high)

    def __repr__(self) -> str:
        return f"SequenceSet({self.ranges!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SequenceSet) and self._ranges == other._ranges

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __bool__(self) -> bool:
        return bool(self._ranges)

    def __contains__(self, value: object) -> bool:
        return any(low <= value <= high for low, high in self._ranges)  # type: ignore[operator]

    def __iter__(self) -> Iterator[int]:
        for low, high in list(self._ranges):
            yield from range(low, high + 1)

    @property
    def ranges(self) -> tuple[tuple[int, int], ...]:
        """The ranges, lowest first, each ``(low, high)`` inclusive."""
        return tuple((low, high) for low, high in self._ranges)

    def count(self) -> int:
        """How many ids the set holds."""
        return sum(high - low + 1 for low, high in self._ranges)

    def lowest(self) -> int | None:
        """The lowest id, or None for the empty set."""
        return self._ranges[0][0] if self._ranges else None

    def add(self, low: int, high: int | None = None) -> None:
        """Add the ids ``low`` to ``high`` (inclusive; ``low`` alone without it)."""
        high = low if high is None else high
        if high < low:
            raise ValueError(f"range {low}..{high} is reversed")
        ranges = self._ranges
        kept: list[list[int]] = []
        at = 0
        while at < len(ranges) and ranges[at][1] < low - 1:
            kept.append(ranges[at])
            at += 1
        while at < len(ranges) and ranges[at][0] <= high + 1:
            low = min(low, ranges[at][0])
            high = max(high, ranges[at][1])
            at += 1
        kept.append([low, high])
        kept.extend(ranges[at:])
        self._ranges = kept

    def update(self, other: SequenceSet) -> None:
        """Add every id of ``other``."""
        for low, high in other.ranges:
            self.add(low, high)

    def remove(self, low: int, high: int | None = None) -> None:
        """Remove the ids ``low`` to ``high`` (those not in the set are ignored)."""
        high = low if high is None else high
        kept: list[list[int]] = []
        for r_low, r_high in self._ranges:
            if r_high < low or r_low > high:
                kept.append([r_low, r_high])
                continue
            if r_low < low:
                kept.append([r_low, low - 1])
            if r_high > high:
                kept.append([high + 1, r_high])
        self._ranges = kept

    def difference_update(self, other: SequenceSet) -> None:
        """Remove every id of ``other``."""
        for low, high in other.ranges:
            self.remove(low, high)

    def copy(self) -> SequenceSet:
        """A copy."""
        return SequenceSet(self.ranges)

    def clear(self) -> None:
        """Remove every id."""
        self._ranges = []
