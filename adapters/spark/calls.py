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
  ``modify(**how)`` (option ``undecodable``); a protocol whose client's deliveries are
  not 1.0's hands them back as a :class:`Delivery`, given its :class:`Settlements`;
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

__all__ = ["Calls", "Delivery", "Settlements", "of"]


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


class Settlements(Protocol):
    """What a protocol folder does with its client's received deliveries, for
    :class:`Delivery`: make a delivery's 1.0 form and settle it, each as the protocol
    can."""

    def message(self, delivery: Any) -> amqp.Message:
        """``delivery``'s message in its 1.0 form (ValueError or
        :class:`~amqp_sansio.DecodeError`: it cannot be made one)."""

    def accept(self, delivery: Any) -> None:
        """Staged: taken for good."""

    def release(self, delivery: Any) -> None:
        """Not this task's: back to the queue as it was."""

    def reject(self, delivery: Any, error: object) -> None:
        """Not a message the source can make a row of (``error`` says why, when it has a
        ``description``)."""

    def modify(self, delivery: Any) -> None:
        """Option ``undecodable`` ``modify``: back to the queue, for another consumer."""


class Delivery:
    """A received delivery of a protocol's client, as :mod:`.queue_reader` and
    :mod:`.batch` handle a 1.0 one (the module's text): ``delivery`` (the client's),
    ``data`` (its body), ``message`` (its 1.0 form, made once) and the settlements, each
    what the protocol's ``settlements`` do."""

    __slots__ = ("_message", "delivery", "settlements")

    def __init__(self, delivery: Any, settlements: Settlements) -> None:
        self.delivery = delivery
        self.settlements = settlements
        self._message: amqp.Message | None = None

    @property
    def data(self) -> bytes:
        """What the message weighs against ``maxBytesPerTrigger``: its body."""
        body: bytes = self.delivery.body
        return body

    @property
    def message(self) -> amqp.Message:
        """The message's 1.0 form (:meth:`Settlements.message`, once)."""
        if self._message is None:
            self._message = self.settlements.message(self.delivery)
        return self._message

    def accept(self) -> None:
        """Staged: taken for good."""
        self.settlements.accept(self.delivery)

    def release(self) -> None:
        """Not this task's: back to the queue."""
        self.settlements.release(self.delivery)

    def reject(self, error: object = None) -> None:
        """Not a message the source can make a row of."""
        self.settlements.reject(self.delivery, error)

    def modify(self, **how: object) -> None:
        """Option ``undecodable`` ``modify``: back to the queue."""
        self.settlements.modify(self.delivery)


def of(options: ReadOptions | WriteOptions) -> Calls:
    """The calls of the protocol ``options`` ask for (its folder, imported on first use:
    :data:`.protocols.TABLE`)."""
    row = protocols.check(options.protocol)
    module: Calls = importlib.import_module(f"{__package__}.{row.folder}")
    return module
