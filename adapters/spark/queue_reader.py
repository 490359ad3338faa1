"""``format("amqp")`` streaming in queue mode: receivers on the executors.

Each micro-batch is ``partitions`` receiver tasks, competing consumers on the addresses. A
task takes its share of the batch's read limit from the broker a part at a time: it writes
each part to ``stagingLocation`` (an Arrow file, published atomically), only then accepts
it, and hands its rows to Spark, then marks itself done. The driver plans micro-batches by
number and never sees a message: it learns from the staged files whether the last batch
found anything, and removes them once Spark has committed their batch.

The promise (at-least-once, nothing lost; docs/spark.rst, "Delivery guarantees"):

- A message is accepted only once it is staged. A task that fails before that takes nothing
  away: its connection goes and the broker redelivers what it held, marked as redelivered
  (``delivery_count``).
- A micro-batch that Spark runs again (a failed task, a lost executor, a query restarted
  from its checkpoint) reads each task's staged parts instead of receiving them again; a
  task that was not done then takes the rest of its share.
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

from . import calls
from .options import ReadOptions
from .rows import message_to_row
from .schema import ReadAllAvailable, ReadMaxBytes, ReadMaxRows, SupportsTriggerAvailableNow
from .staging import (
    filesystem,
    mark_done,
    read_staged,
    record_batch,
    refuse_undecodable,
    remove_staged,
    stage,
    staged_files,
    task_files,
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
#: The most messages a receiver task stages (and hands to Spark) at a time.
_PART = 5000
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
    """A receiver task (on an executor): the parts it staged before, if it is run again;
    then, unless it was done, what it takes from the broker, part by part (:data:`_PART`
    messages at most), each staged, then accepted, then handed to Spark, so that Spark
    works on a part while the next comes."""
    location = options.staging_location or ""
    parts, done = task_files(location, task.batch, task.index)
    had = 0
    for reference in parts:
        for records in read_staged(reference):
            had += records.num_rows
            yield records
    if done or task.max_rows == 0 or (task.max_rows is not None and had >= task.max_rows):
        return
    loop = asyncio.new_event_loop()
    receiving = _TaskReceiving(options, task, first_part=len(parts), had=had)
    try:
        loop.run_until_complete(receiving.open())
        while (records := loop.run_until_complete(receiving.next_part())) is not None:
            yield records
        loop.run_until_complete(receiving.finish())
    finally:
        loop.run_until_complete(receiving.close())
        loop.close()
    if receiving.lost_part is not None:
        # Another attempt staged this part first: its parts from there are this task's.
        parts, _done = task_files(location, task.batch, task.index)
        for reference in parts[receiving.lost_part :]:
            yield from read_staged(reference)


class _TaskReceiving:
    """A receiver task's connection and its taking (:class:`_Taking`), a part at a time:
    each part's decodable messages staged, then accepted, then given; the undecodable ones
    settled as option ``undecodable`` says. Once its taking is over (:meth:`finish`) the
    task is marked done. If another attempt of the task staged a part first, what this one
    took goes back, and it stops (:attr:`lost_part`: the other attempt's parts from there
    on are the task's)."""

    def __init__(
        self, options: ReadOptions, task: ReceiverTask, *, first_part: int, had: int
    ) -> None:
        self.options, self.task = options, task
        self.location = options.staging_location or ""
        self.part = first_part
        self.max_rows = None if task.max_rows is None else task.max_rows - had
        self.lost_part: int | None = None
        self._conn: Any = None
        self._receivers: list[tuple[str, Any]] = []
        self._taking: _Taking | None = None
        self._over = False
        #: The most messages a part holds: :data:`_PART`, or less as the protocol says
        #: (:meth:`.calls.Calls.sizes`).
        self.part_size = _PART
        self.calls = calls.of(options)

    async def open(self) -> None:
        options = self.options
        max_rows = self.max_rows
        window = options.credit if max_rows is None else min(options.credit, max_rows)
        window, self.part_size = self.calls.sizes(window, _PART)
        receivers = await self.calls.open_receivers(options, window, self._keep)
        self._receivers.extend(receivers)
        self._taking = _Taking(self._receivers, self.task, max_rows)

    def _keep(self, conn: Any) -> None:
        self._conn = conn

    async def next_part(self) -> pa.RecordBatch | None:
        """The next part, staged and accepted; None once the taking is over (or another
        attempt staged the part first)."""
        assert self._taking is not None
        while not self._over:
            taken, self._over = await self._taking.next_part(self.part_size)
            rows, good = _decode(taken, self.options)
            if not rows:
                continue
            records = record_batch(rows)
            task = self.task
            if stage(self.location, task.batch, task.index, self.part, records) is None:
                for delivery in good:
                    delivery.release()
                self.lost_part, self._over = self.part, True
                return None
            if self._over:
                await self.calls.before_last_accept(self._receivers)
            for delivery in good:
                delivery.accept()
            self.part += 1
            return records
        return None

    async def finish(self) -> None:
        """The taking is over: what came after it goes back, the connection closes, and the
        task (if it staged a part and lost none) is marked done."""
        receivers = self._receivers
        # What is under way still comes, and goes back.
        under_way = await self.calls.stop_receivers(receivers)
        await _give_back_the_rest(receivers, settle=under_way)
        await self.close()
        if self.part > 0 and self.lost_part is None:
            task = self.task
            mark_done(self.location, task.batch, task.index)

    async def close(self) -> None:
        """Close the connection (what it holds unsettled goes back to the broker)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


def _decode(taken: list[tuple[str, Any]], options: ReadOptions) -> tuple[list[Any], list[Any]]:
    """The rows of what was taken, and the deliveries they came from; an undecodable
    message is settled as option ``undecodable`` says, never dropped silently."""
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
    return rows, good


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


class _Taking:
    """A task's taking from its receivers, in turn, up to its limits (``max_rows`` left,
    its ``max_bytes``), part by part (:meth:`next_part`). It ends once no message has
    come for a moment (``_QUIET``, longer after long pauses between messages), or none at
    all within the task's ``first_wait``, or after its ``max_seconds`` whatever comes.
    Before it ends for want of messages it asks the broker
    (:meth:`~amqp_sansio.client.amqp10.links.ReceiverCore.ask_available`): one that says it has
    messages for a link is slow, not empty, and the task waits on. A message larger than
    ``max_bytes`` is taken alone."""

    def __init__(
        self, receivers: list[tuple[str, Any]], task: ReceiverTask, max_rows: int | None
    ) -> None:
        self.receivers = receivers
        self.task = task
        self.left, self.max_bytes = max_rows, task.max_bytes
        self.size = 0
        #: Messages taken so far, in every part.
        self.took = 0
        self._turn = 0
        self.started = self._quiet_since = time.monotonic()
        self._quiet = _QUIET  # grows with the longest pause between messages (a slow broker)
        self._wait = task.first_wait  # for the first message
        self._asked: list[Any] | None = None  # the broker's answers awaited
        self._asked_at = 0.0

    async def next_part(self, most: int) -> tuple[list[tuple[str, Any]], bool]:
        """Up to ``most`` messages (address, delivery), unsettled, and whether the task's
        taking is over."""
        taken: list[tuple[str, Any]] = []
        while True:
            before = self.took
            if self._take(taken, most):
                return taken, True
            now = time.monotonic()
            if self.took > before:
                if before:  # a pause between two messages (not the wait for the first)
                    gap = now - self._quiet_since
                    self._quiet = min(_QUIET_MAX, max(self._quiet, _QUIET_FACTOR * gap))
                self._quiet_since, self._wait, self._asked = now, self._quiet, None
            if len(taken) >= most:
                return taken, False
            seconds = self.task.max_seconds
            if seconds is not None and now - self.started >= seconds:
                return taken, True
            if now - self._quiet_since >= self._wait and self._ended(now):
                return taken, True
            await asyncio.sleep(0.002 if taken else 0.01)

    def _ended(self, now: float) -> bool:
        """Whether the taking ends for want of messages: asks the broker first."""
        if self._asked is None:
            self._asked = [r.core.ask_available() for _a, r in self.receivers]
            self._asked_at = now
            return False
        if all(op.done() for op in self._asked):
            if not any(op.result() for op in self._asked):
                return True  # nothing more for these links (or a broker that never says)
            self._quiet_since, self._wait, self._asked = now, self._quiet, None
            return False  # it has some: slow, not empty
        return now - self._asked_at >= _QUIET_MAX  # no answer to the echo: it gives none

    def _take(self, taken: list[tuple[str, Any]], most: int) -> bool:
        """Take what each receiver holds into ``taken`` (in one call per receiver: its
        credit topped up once, not once a message), at most ``most`` in all; true once a
        limit of the task is reached."""
        max_bytes = self.max_bytes
        for _ in range(len(self.receivers)):
            address, receiver = self.receivers[self._turn]
            self._turn = (self._turn + 1) % len(self.receivers)
            core = receiver.core
            queue = core.queue
            count = min(len(queue), most - len(taken))
            if self.left is not None:
                count = min(count, self.left)
            full = False
            if max_bytes is not None:
                for index in range(count):
                    self.size += len(queue[index].data)
                    if self.size > max_bytes and (self.took or index):
                        count, full = index, True
                        break
            got = core.take_many(count)
            self.took += len(got)
            taken.extend([(address, d) for d in got])
            if self.left is not None:
                self.left -= len(got)
                receiver.credit = min(receiver.credit, max(0, self.left))
            if full or (max_bytes is not None and self.size >= max_bytes):
                return True
            if self.left is not None and self.left <= 0:
                return True
        return False


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
        for batch, _index, part, reference in staged_files(self.options.staging_location or ""):
            if batch <= committed:
                took = took or (batch == committed and part is not None)
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
