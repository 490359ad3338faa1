"""A bounded table of values made once from encoded octets and kept: what the hot paths
of the protocols share when their messages are mostly alike (a sender's messages share
their header; a publisher sends to a few addresses).

Each table holds at most ``most`` values and is emptied when full (no order is kept: the
cost of a miss is one making again); a value is kept only for a key of at most
``largest`` octets, so what a hostile peer sends can neither grow a table past its bound
nor make it hold large keys.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Kept"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Kept(Generic[K, V]):
    """A bounded table from keys to values made once (the module's rules). ``get(key)`` is
    the table's own ``dict.get`` (None: not kept), for the fast path of a caller that
    inlines the look-up."""

    __slots__ = ("_largest", "_most", "_table", "get")

    def __init__(self, *, most: int = 256, largest: int = 512) -> None:
        self._table: dict[K, V] = {}
        self._most = most
        self._largest = largest
        self.get: Callable[[K], V | None] = self._table.get

    def __len__(self) -> int:
        return len(self._table)

    def keep(self, key: K, size: int, value: V) -> V:
        """Keep ``value`` for ``key`` (of ``size`` octets) if it is small enough; returns
        ``value``."""
        if size <= self._largest:
            table = self._table
            if len(table) >= self._most:
                table.clear()
            table[key] = value
        return value

    def made(self, key: K, size: int, make: Callable[[K], V]) -> V:
        """The value kept for ``key``, else ``make(key)`` (kept as :meth:`keep` says)."""
        found = self._table.get(key)
        if found is None:
            found = self.keep(key, size, make(key))
        return found
