"""``format("amqp")`` streaming in queue mode: receivers on the executors.

Each micro-batch is ``partitions`` receiver tasks, competing consumers on the addresses. A
task takes its share of the batch's read limit from the broker, writes what it took to
``stagingLocation`` (one Arrow file, published atomically), only then accepts it, and hands
the rows to Spark. The driver plans micro-batches by number and never sees a message: it
learns from the staged files whether the last batch found anything, and removes them once
Spark has committed their batch.

The promise (at-least-once, nothing lost; docs/spark.rst, "Delivery guarantees"):

- A message is accepted only once it is staged. A task that fails before that takes nothing
  away: its connection goes and the broker redelivers what it held, marked as redelivered
  (``delivery_count``).
- A micro-batch that Spark runs again (a failed task, a lost executor, a query restarted
  from its checkpoint) reads each task's staged file instead of receiving: the same rows.
  A task that had staged nothing receives afresh.
- Staged files stay until Spark has committed their batch: ``stagingLocation`` must be
  storage every executor reaches and that outlives them (a shared mount, HDFS, an object
  store).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceStreamReader,
    InputPartition,
)

import amqp_sansio as amqp

from .options import ReadOptions
from .rows import message_to_row
from .schema import (
    ReadAllAvailable,
    ReadMaxBytes,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from .staging import (
    filesystem,
    find_staged,
    read_staged,
    record_batch,
    refuse_undecodable,
    remove_staged,
    stage,
    staged_files,
)

_log = logging.getLogger("amqp_sansio.spark")

#: A task's receiving ends when no message has come for this many seconds, or for
#: ``_QUIET_FACTOR`` times the longest pause it has seen between messages (a broker that
#: sends in bursts, or a loaded machine), at most ``_QUIET_MAX``.
_QUIET = 0.05
_QUIET_FACTOR = 3.0
_QUIET_MAX = 1.0
#: Seconds without a message after which what was under way is taken to have come.
_SETTLING = 0.05
#: Seconds a receiver waits for its first message (at least): a new link's first message
#: may take a while on a loaded broker, and an empty look must not come of that. In a
#: streaming read this is the first micro-batch's wait (Spark's Python workers and the
#: broker may still be starting); later ones wait ``_NEXT_WAIT`` (at least).
FIRST_BATCH_WAIT = 2.0
_NEXT_WAIT = 0.5
#: The longest a task of a micro-batch with no read limit takes messages (option
#: ``maxReceiveSeconds`` sets it for every micro-batch).
_UNLIMITED_SECONDS = 5.0
#: The most credit a receiver task grants first (the module's ``_receive_and_stage``).
_START_CREDIT = 1000
#: The file, under ``stagingLocation``, that keeps the number of the last micro-batch
#: planned, for pyspark 4.0 and 4.1 (which do not tell a restarted reader where it is).
_PLANNED = "planned"


def share(total: int | None, parts: int, index: int) -> int | None:
    """Task ``index``'s share of ``total`` (None: no limit) among ``parts`` tasks."""
    if total is None:
        return None
    base, extra = divmod(total, parts)
    return base + (index < extra)


class ReceiverTask(InputPartition):
    """Task ``index`` of micro-batch ``batch``: take up to ``max_rows`` messages (and about
    ``max_bytes``; None: no limit), stage them, accept them."""

    def __init__(
        self,
        batch: int,
        index: int,
        max_rows: int | None,
        max_bytes: int | None,
        first_wait: float = FIRST_BATCH_WAIT,
        max_seconds: float | None = None,
    ) -> None:
        super().__init__((batch, index))
        self.batch, self.index = batch, index
        self.max_rows, self.max_bytes = max_rows, max_bytes
        #: Seconds to wait for a first message before the task ends empty.
        self.first_wait = first_wait
        #: The longest the task takes messages (None: until a limit, or the queue is empty).
        self.max_seconds = max_seconds


# -- on the executors ------------------------------------------------------------------------


def run_task(options: ReadOptions, task: ReceiverTask) -> Iterator[pa.RecordBatch]:
    """A receiver task (on an executor): its staged file if it has one (the batch is run
    again), else what it takes from the broker, staged and then accepted."""
    location = options.staging_location or ""
    staged = find_staged(location, task.batch, task.index)
    if staged is not None:
        yield from read_staged(staged)
        return
    if task.max_rows == 0:
        return
    records = asyncio.run(_receive_and_stage(options, task))
    if records is None:
        # Another attempt of this task staged first (or it took nothing): its file, if any.
        staged = find_staged(location, task.batch, task.index)
        if staged is not None:
            yield from read_staged(staged)
    elif records.num_rows:
        yield records


async def _receive_and_stage(options: ReadOptions, task: ReceiverTask) -> pa.RecordBatch | None:
    """Take messages (:func:`_take`), stage the decodable ones, then accept them; settle the
    undecodable ones as option ``undecodable`` says. Returns the staged rows, or None when
    another attempt of the task had staged its file first (these messages were given
    back)."""
    from .. import aio

    location = options.staging_location or ""
    url = options.url_for(options.addresses[0])
    async with aio.connect(url, **options.connect_options()) as conn:
        window = options.credit if task.max_rows is None else min(options.credit, task.max_rows)
        # A first grant of at most _START_CREDIT: a broker that encodes a whole grant before
        # it sends any (the reference broker does) sends the first message at once; the
        # window is granted from the next grant on.
        receivers = [
            (address, await conn.receiver(address, credit=max(1, min(window, _START_CREDIT))))
            for address in options.addresses
        ]
        for _address, receiver in receivers:
            receiver.credit = max(1, window)
        taken = await _take(receivers, task)
        # What is under way still comes, and goes back below.
        revoked = sum([receiver.core.revoke() for _address, receiver in receivers])
        rows, good = [], []
        for address, delivery in taken:
            try:
                rows.append(message_to_row(delivery.message, address))
            except (amqp.DecodeError, ValueError) as exc:
                _log.warning(
                    "an undecodable message from %s (%s): %s", address, exc, options.undecodable
                )
                refuse_undecodable(delivery, options.undecodable)
            else:
                good.append(delivery)
        records: pa.RecordBatch | None = record_batch(rows)
        if rows and stage(location, task.batch, task.index, records) is None:
            # Another attempt of this task staged first: its file stands, these go back.
            records = None
            for delivery in good:
                delivery.release()
        else:
            for delivery in good:
                delivery.accept()
        await _give_back_the_rest(receivers, settle=revoked > 0)
    return records


async def _give_back_the_rest(receivers: list[tuple[str, Any]], *, settle: bool) -> None:
    """Release what came after the task stopped taking (not this batch's: back to the head
    of the queue, its delivery-count unchanged, core spec 3.4.4); if credit was taken back
    (``settle``), until nothing has come for :data:`_SETTLING` seconds (at most one second),
    for what was under way. What still came after that would be returned by the closing
    connection, counted as a failed delivery (a possible duplicate): never lost."""
    deadline = time.monotonic() + 1.0
    quiet_since = time.monotonic()
    while True:
        for _address, receiver in receivers:
            core = receiver.core
            late = core.take_many(len(core.queue))
            for delivery in late:
                delivery.release()
            if late:
                quiet_since = time.monotonic()
        now = time.monotonic()
        if not settle or now - quiet_since >= _SETTLING or now >= deadline:
            return
        await asyncio.sleep(0.005)


async def _take(receivers: list[tuple[str, Any]], task: ReceiverTask) -> list[tuple[str, Any]]:
    """What the receivers bring, up to the limits: (address, delivery) pairs, unsettled. It
    ends once no message has come for a moment (``_QUIET``, longer after long pauses
    between messages), or none at all within the task's ``first_wait``, or after its
    ``max_seconds`` whatever comes. Before it ends for want of messages it asks the
    broker (:meth:`~amqp_sansio.client.links.ReceiverCore.ask_available`): one that says it
    has messages for a link is slow, not empty, and the task waits on. A message larger
    than the task's ``max_bytes`` is taken alone."""
    taking = _Taking(receivers, task)
    started = quiet_since = time.monotonic()
    quiet = _QUIET  # grows with the longest pause seen between messages (a slow broker)
    wait = task.first_wait  # for the first message
    asked: list[Any] | None = None  # the broker's answers awaited, once the task would end
    asked_at = 0.0
    while True:
        before = len(taking.taken)
        if taking.take():
            return taking.taken
        now = time.monotonic()
        if len(taking.taken) > before:
            if before:
                quiet = min(_QUIET_MAX, max(quiet, _QUIET_FACTOR * (now - quiet_since)))
            quiet_since, wait, asked = now, quiet, None
        if task.max_seconds is not None and now - started >= task.max_seconds:
            return taking.taken
        if now - quiet_since >= wait:
            if asked is None:
                asked, asked_at = [r.core.ask_available() for _a, r in receivers], now
            elif all(op.done() for op in asked):
                if not any(op.result() for op in asked):
                    return taking.taken  # nothing more for these links (or it never says)
                quiet_since, wait, asked = now, quiet, None  # it has some: slow, not empty
            elif now - asked_at >= _QUIET_MAX:
                return taking.taken  # no answer to the echo: a peer that gives none
        await asyncio.sleep(0.002 if taking.taken else 0.01)


class _Taking:
    """The messages a task has taken so far, and the taking of more from its receivers in
    turn, up to its limits."""

    def __init__(self, receivers: list[tuple[str, Any]], task: ReceiverTask) -> None:
        self.receivers = receivers
        self.max_rows, self.max_bytes = task.max_rows, task.max_bytes
        self.taken: list[tuple[str, Any]] = []
        self.size = 0
        self._turn = 0

    def take(self) -> bool:
        """Take what each receiver holds (in one call per receiver: its credit topped up
        once, not once a message); true once a limit is reached."""
        max_rows, max_bytes, taken = self.max_rows, self.max_bytes, self.taken
        for _ in range(len(self.receivers)):
            address, receiver = self.receivers[self._turn]
            self._turn = (self._turn + 1) % len(self.receivers)
            core = receiver.core
            queue = core.queue
            count = len(queue)
            if max_rows is not None:
                count = min(count, max_rows - len(taken))
            full = False
            if max_bytes is not None:
                for index in range(count):
                    self.size += len(queue[index].data)
                    if self.size > max_bytes and (taken or index):
                        count, full = index, True
                        break
            taken.extend([(address, d) for d in core.take_many(count)])
            if max_rows is not None:
                receiver.credit = min(receiver.credit, max(0, max_rows - len(taken)))
            if full or (max_bytes is not None and self.size >= max_bytes):
                return True
        return max_rows is not None and len(taken) >= max_rows


# -- on the driver ---------------------------------------------------------------------------


class QueueStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read in queue mode (the module's docstring). Offsets are
    ``{"batch": n}``: the number of micro-batches planned so far."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        #: The last micro-batch planned (None: not known yet; see :meth:`_last_planned`).
        self._planned: int | None = None
        #: When a committed micro-batch was found to have taken nothing (None: it took some).
        self._idle_since: float | None = None
        self._idle_told = False
        #: The last micro-batch known to be committed (its files removed).
        self._done = 0
        #: The last micro-batch this reader made tasks for (:meth:`partitions`).
        self._ran = 0
        self._limit: tuple[int | None, int | None] = (
            options.max_messages_per_trigger,
            options.max_bytes_per_trigger,
        )

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the reader for read(): only its options go.
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    def initialOffset(self) -> dict[str, int]:
        return {"batch": 0}

    def getDefaultReadLimit(self) -> Any:
        opts = self.options
        if ReadMaxRows is not None and opts.max_messages_per_trigger is not None:
            return ReadMaxRows(opts.max_messages_per_trigger)
        if ReadMaxBytes is not None and opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(opts.max_bytes_per_trigger)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: nothing to prepare. A queue has no offset to fix the target
        by (docs/spark.rst): the query reads until a micro-batch takes nothing, which
        :meth:`latestOffset` reports by returning its ``start``."""

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        """The next micro-batch's number, or ``start`` (nothing new) when the last one took
        nothing: at the first call after it (so that ``Trigger.AvailableNow`` ends), and
        for ``pollInterval`` seconds (so that an idle query does not run empty batches back
        to back). pyspark 4.0 and 4.1 give no ``start``: the last batch planned is kept in
        the staging location for a restarted query."""
        last = _batch(start) if start is not None else self._last_planned()
        # Spark asks for a next batch only once the last is in its commit log: what commit()
        # would have done (pyspark 4.0 and 4.1 do not call it reliably) is done here.
        self._committed(last)
        self._limit = self._read_limit(limit)
        if self._idle_since is not None:
            if (
                not self._idle_told
                or time.monotonic() - self._idle_since < self.options.poll_interval
            ):
                self._idle_told = True
                return {"batch": last}
            self._idle_since = None
        self._planned = last + 1
        if start is None:
            self._keep_planned(last + 1)
        return {"batch": last + 1}

    def _read_limit(self, limit: Any) -> tuple[int | None, int | None]:
        opts = self.options
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            return limit.max_rows, None
        if ReadMaxBytes is not None and isinstance(limit, ReadMaxBytes):
            return None, limit.max_bytes
        if ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
            return None, None
        return opts.max_messages_per_trigger, opts.max_bytes_per_trigger

    def _last_planned(self) -> int:
        if self._planned is None:
            fs, path = filesystem(self.options.staging_location or "")
            try:
                with fs.open_input_stream(f"{path.rstrip('/')}/{_PLANNED}") as kept:
                    self._planned = int(kept.read().decode())
            except (FileNotFoundError, ValueError):
                self._planned = 0
        return self._planned

    def _keep_planned(self, batch: int) -> None:
        fs, path = filesystem(self.options.staging_location or "")
        fs.create_dir(path, recursive=True)
        temporary = f"{path.rstrip('/')}/{_PLANNED}.tmp"
        with fs.open_output_stream(temporary) as out:
            out.write(str(batch).encode())
        fs.move(temporary, f"{path.rstrip('/')}/{_PLANNED}")

    def reportLatestOffset(self) -> dict[str, int] | None:
        return None if self._planned is None else {"batch": self._planned}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        """``partitions`` receiver tasks for each micro-batch after ``start`` up to ``end``,
        each with its share of the read limit."""
        first, last = _batch(start), _batch(end)
        if first > last:
            raise RuntimeError(
                f"the micro-batch numbers went back from {first} to {last}: is the staging "
                "location the one this query staged into?"
            )
        self._planned = max(self._planned or 0, last)
        poll = self.options.poll_interval
        wait = max(poll, FIRST_BATCH_WAIT if not self._ran else _NEXT_WAIT)
        self._ran = max(self._ran, last)
        rows, size = self._limit
        parts = self.options.partitions
        seconds = self.options.max_receive_seconds
        if seconds is None and rows is None and size is None:
            seconds = _UNLIMITED_SECONDS
        return [
            ReceiverTask(batch, i, share(rows, parts, i), share(size, parts, i), wait, seconds)
            for batch in range(first + 1, last + 1)
            for i in range(parts)
        ]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, ReceiverTask)
        return run_task(self.options, partition)

    def commit(self, end: dict[str, int]) -> None:
        """Spark has committed every micro-batch up to ``end``: their staged files go. If the
        last took nothing, the next :meth:`latestOffset` says so."""
        self._committed(_batch(end))

    def _committed(self, committed: int) -> None:
        if committed <= self._done:
            return
        self._done = committed
        took = False
        for batch, _index, reference in staged_files(self.options.staging_location or ""):
            if batch <= committed:
                took = took or batch == committed
                remove_staged(reference)
        if took or committed > self._ran:
            # Took something, or ran before this reader (a restart): not a sign of an idle
            # queue (the files of a batch committed before the restart are gone).
            self._idle_since = None
        elif self._idle_since is None:
            self._idle_since, self._idle_told = time.monotonic(), False

    def stop(self) -> None:
        """The query ended. Nothing is held here: what was staged stays for the batches
        Spark has not committed (run again from their files when the query restarts)."""


def _batch(offset: dict[str, int]) -> int:
    """The micro-batch number of an offset."""
    if "batch" not in offset:
        raise RuntimeError(
            f"the checkpoint's offset {offset!r} is not a micro-batch number: it was written "
            "by an earlier version of the source (queue mode's offsets changed in 0.x): "
            "start the query with a new checkpoint location"
        )
    return int(offset["batch"])
