"""The broker's general timers: calls due at a time of the wall clock (seconds since the
epoch), fired by :meth:`~amqp_sansio.broker._broker.BrokerCore.expire` when the driver
calls it at :meth:`~amqp_sansio.broker._broker.BrokerCore.next_expiry`, as message expiry
is (broker draft 2.2.5). Like the rest of the core, nothing here reads a clock: the time
comes in (aioquic's ``get_timer()``/``handle_timer(now)`` shape).

A room with something to do later (Azure Service Bus's scheduled messages,
:mod:`.amqp10.scheduled`) asks for it with :meth:`Timers.call_at` and keeps the
:class:`Timer` to cancel it; it needs no heap of its own, nor a hook in the driver.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

__all__ = ["Timer", "Timers"]

#: The heap is compacted when cancelled entries are more than this, and half of it.
_COMPACT_MIN = 1024


class Timer:
    """A call waiting for its time (:meth:`Timers.call_at`); :meth:`cancel` it to drop it."""

    __slots__ = ("_owner", "call", "cancelled", "when")

    def __init__(self, owner: Timers, when: float, call: Callable[[], object]) -> None:
        self._owner = owner
        self.when = when
        self.call = call
        #: Cancelled, or fired: it will not be called (again).
        self.cancelled = False

    def cancel(self) -> None:
        """Do not call it (nothing if it was called or cancelled already)."""
        if not self.cancelled:
            self.cancelled = True
            self._owner.cancelled_one()


class Timers:
    """Calls by the wall-clock time they are due, in a heap; a cancelled one stays there
    until it reaches the top or the heap is compacted (when cancelled entries are most of
    it), so the heap stays proportional to the calls waiting."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._ties = itertools.count()
        self._cancelled = 0

    def __len__(self) -> int:
        """The calls waiting (not cancelled)."""
        return len(self._heap) - self._cancelled

    def call_at(self, when: float, call: Callable[[], object]) -> Timer:
        """Call ``call()`` once the wall clock reaches ``when`` (at the first
        :meth:`fire` at or after it); a time already past is called at the next one."""
        timer = Timer(self, when, call)
        heapq.heappush(self._heap, (when, next(self._ties), timer))
        return timer

    def cancelled_one(self) -> None:
        """A timer of this heap was cancelled (its :meth:`Timer.cancel`)."""
        self._cancelled += 1
        heap = self._heap
        if self._cancelled > max(_COMPACT_MIN, len(heap) // 2):
            heap[:] = [entry for entry in heap if not entry[2].cancelled]
            heapq.heapify(heap)
            self._cancelled = 0

    def next(self) -> float | None:
        """When the next call is due, or None."""
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
            self._cancelled -= 1
        return heap[0][0] if heap else None

    def fire(self, wall: float) -> int:
        """Make the calls due by ``wall``, in time order (those a call adds for ``wall`` or
        before too); return how many were made."""
        heap = self._heap
        made = 0
        while heap and heap[0][0] <= wall:
            _, _, timer = heapq.heappop(heap)
            if timer.cancelled:
                self._cancelled -= 1
                continue
            timer.cancelled = True  # (fired: a cancel now does nothing)
            timer.call()
            made += 1
        return made
