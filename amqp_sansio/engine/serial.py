"""RFC 1982 serial-number arithmetic on 32-bit values, for every protocol that counts with
numbers that wrap: AMQP 1.0's transfer ids, delivery ids and delivery counts (core spec
2.5.6, 2.6.7, 2.8.10, its ``sequence-no`` type) and AMQP 0-10's command ids (0-10 spec,
types ``sequence-no`` and ``sequence-set``).

A serial number is 32 bits; adding wraps at 2**32, and of two numbers the one that comes
first is the one from which the other is less than 2**31 ahead. RFC 1982 leaves two
numbers exactly 2**31 apart unordered; here the distance between them is -2**31, so each
is taken to come before the other: callers keep their numbers within 2**31 - 1 of each
other, as both specs require of a window.
"""

from __future__ import annotations

__all__ = ["SERIAL_MASK", "serial_add", "serial_diff", "serial_le", "serial_lt"]

#: A serial number's bits (SERIAL_BITS 32 in RFC 1982's terms).
SERIAL_MASK = 0xFFFFFFFF
_HALF = 0x80000000
_SPAN = SERIAL_MASK + 1


def serial_add(a: int, n: int) -> int:
    """``a + n`` modulo 2**32 (RFC 1982 3.1, for ``n`` in [0, 2**31 - 1]; any ``n`` wraps
    the same way)."""
    return (a + n) & SERIAL_MASK


def serial_diff(a: int, b: int) -> int:
    """The signed distance ``a - b``, in [-2**31, 2**31): how far ``a`` is after ``b`` (before
    it when negative). ``b + serial_diff(a, b)`` is the integer nearest ``b`` whose low 32
    bits are ``a``'s, which unwraps a serial number against a reference near it."""
    d = (a - b) & SERIAL_MASK
    return d - _SPAN if d >= _HALF else d


def serial_lt(a: int, b: int) -> bool:
    """``a`` comes before ``b`` (RFC 1982 3.2)."""
    return serial_diff(a, b) < 0


def serial_le(a: int, b: int) -> bool:
    """``a`` comes before ``b`` or is ``b``."""
    return serial_diff(a, b) <= 0
