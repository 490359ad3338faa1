"""The calls each protocol folder of the Spark adapter makes (:mod:`.amqp10`,
:mod:`.amqp091`, :mod:`.amqp010`): the one interface the readers and writers use, written
down once as :class:`Calls`. Everything the protocols do differently is one of these;
:mod:`.protocols` picks the folder by option ``protocol``, and nothing else in the adapter
knows which protocol it speaks.

What the calls hand back is seen as AMQP 1.0's client shows it (the names
:mod:`.queue_reader` and :mod:`.batch` use):

* a *delivery* has ``message`` (an :class:`amqp_sansio.Message`; ValueError or
  :class:`~amqp_sansio.DecodeError` when the source cannot make one), ``data`` (what it
  weighs against ``maxBytesPerTrigger``), and its settlements ``accept()`` (staged: taken
  for good), ``release()`` (not this task's: back to the queue), ``reject(error)`` and
  ``modify(**how)`` (option ``undecodable``);
* a blocking *receiver* (:meth:`Calls.receiver`) has ``receive(timeout=...)``: the next
  delivery, None when the broker ended it, :class:`TimeoutError` when none came;
* a streaming task's *receiver* (:meth:`Calls.open_receivers`) has ``credit`` (settable;
  0 stops it) and ``core``, with ``queue`` (what it holds: its length and deliveries by
  index), ``take_many(count)`` and ``ask_available()`` (a task whose result is true when
  the broker says it has more).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import amqp_sansio as amqp

from . import protocols
from .options import ReadOptions, WriteOptions

__all__ = ["Calls", "of"]


class Calls(Protocol):
    """What a protocol folder of the Spark adapter provides (module-level names)."""

    #: What a lost connection raises on this protocol's client (the driver retries the
    #: bounds of a stream once on a new connection).
    ERRORS: tuple[type[Exception], ...]

    # -- writing ---------------------------------------------------------------------------

    def publish_rows(
        self,
        options: WriteOptions,
        messages: Iterator[amqp.Message],
        timeout: float,
        *,
        done: Callable[[int], None] | None = None,
    ) -> int:
        """Send each message to ``options.address``, at most ``options.window``
        outstanding, and return the count only once the broker has taken every one (a
        refusal raises RuntimeError with the broker's error). ``done`` is told the count
        taken, at the end at least."""

    # -- reading a queue -------------------------------------------------------------------

    def receiver(
        self, options: ReadOptions, address: str, credit: int
    ) -> contextlib.AbstractContextManager[Any]:
        """A blocking receiver from the queue ``address`` allowed ``credit`` messages
        unsettled, on a connection of its own, for the block (what it holds unsettled at
        the end goes back to the queue)."""

    async def open_receivers(
        self, options: ReadOptions, window: int, keep: Callable[[Any], None]
    ) -> list[tuple[str, Any]]:
        """(address, receiver) of each address, each allowed ``window`` unsettled, on one
        asyncio connection, which ``keep`` is given as soon as the task must close it."""

    def sizes(self, window: int, part: int) -> tuple[int, int]:
        """(window, part) of a streaming queue task: its receivers' window and the most
        messages one staged part holds, given the task's window and the adapter's part."""

    async def before_last_accept(self, receivers: list[tuple[str, Any]]) -> None:
        """The task took its last part and is about to accept it: stop what would come
        after it, where accepting would let the broker send more."""

    async def stop_receivers(self, receivers: list[tuple[str, Any]]) -> bool:
        """The task's taking is over: stop the receivers; true when messages may still be
        under way (they are waited for a moment, and released)."""

    # -- reading a stream (mode ``stream``) ------------------------------------------------

    def stream_connection(self, options: ReadOptions) -> Any:
        """The driver's blocking connection for asking streams where they stand."""

    def stream_bounds(self, conn: Any, options: ReadOptions, address: str) -> tuple[int, int]:
        """(first offset held, next offset) of the stream ``address``, consuming nothing."""

    def read_rows(
        self,
        options: ReadOptions,
        address: str,
        start: int,
        end: int,
        lost: Callable[[int, int], None],
    ) -> Iterator[tuple[Any, ...]]:
        """The rows of offsets [start, end) of the stream ``address`` (on an executor);
        ``lost(first, end)`` is called for offsets retention dropped before they were
        read."""


def of(options: ReadOptions | WriteOptions) -> Calls:
    """The calls of the protocol ``options`` ask for (its folder, imported on first use:
    :data:`.protocols.TABLE`)."""
    row = protocols.check(options.protocol)
    module: Calls = importlib.import_module(f"{__package__}.{row.folder}")
    return module
