"""RFC-1982 serial-number arithmetic on 32-bit values (core spec 2.5.6, 2.6.7, 2.8.10).

Transfer ids, delivery ids and delivery counts are sequence numbers that wrap at 2**32;
comparing or subtracting them must survive the wrap.
"""

from __future__ import annotations

__all__ = ["serial_add", "serial_diff", "serial_lt", "serial_le"]

_MASK = 0xFFFFFFFF
_HALF = 0x80000000


def serial_add(a: int, n: int) -> int:
    """``a + n`` modulo 2**32."""
    return (a + n) & _MASK


def serial_diff(a: int, b: int) -> int:
    """The signed distance ``a - b``, in [-2**31, 2**31)."""
    d = (a - b) & _MASK
    return d - 0x100000000 if d >= _HALF else d


def serial_lt(a: int, b: int) -> bool:
    """``a`` comes before ``b``."""
    return serial_diff(a, b) < 0


def serial_le(a: int, b: int) -> bool:
    """``a`` comes before ``b`` or is ``b``."""
    return serial_diff(a, b) <= 0
