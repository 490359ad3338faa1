"""``format("amqp")`` streaming in queue mode: one long-lived receiver on the driver, whose
messages are staged per micro-batch and accepted once Spark has committed the batch
(at-least-once, nothing lost; see :mod:`amqp_sansio.adapters.spark`)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.ipc
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
    StagedPartition,
    read_staged,
    record_batch,
    refuse_undecodable,
    remove_staged,
    split,
    stage,
    staged_batches,
)

_log = logging.getLogger("amqp_sansio.spark")


# -- the long-lived receiver -----------------------------------------------------------------


#: A batch being filled ends when no message has come for this many seconds.
_QUIET = 0.02
#: Seconds the first batch of new receivers waits for a first message (at least): a broker
#: may encode a whole grant of credit before the first message goes out (tens of thousands
#: with a large read limit), and an empty first batch ends a ``Trigger.AvailableNow`` query.
_FIRST_WAIT = 5.0
#: Seconds a batch read waits for each address's first message (at least).
FIRST_BATCH_WAIT = 2.0


class _Receiving:
    """Receivers on the configured addresses, on an asyncio loop in a thread of its own. The
    stream reader's calls come from Spark's thread and hand work to the loop."""

    def __init__(self, options: ReadOptions) -> None:
        from .. import aio

        self.options = options
        self._aio = aio
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="amqp-spark-receiver", daemon=True
        )
        self._thread.start()
        self._conn: Any = None
        self.receivers: list[tuple[str, Any]] = []
        self._next = 0
        self._first = True
        self._call(self._open())

    def _call(self, coroutine: Any, timeout: float | None = None) -> Any:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    async def _open(self) -> None:
        opts = self.options
        # One connection (with reconnection: a lost transport comes back by itself, and what
        # was unsettled on it is redelivered by the broker), a receiver per address.
        self._conn = conn = await self._aio.connect(
            opts.url_for(opts.addresses[0]), reconnect=True, **opts.connect_options()
        )
        for address in opts.addresses:
            receiver = await conn.receiver(address, credit=opts.credit)
            self.receivers.append((address, receiver))

    def take(self, max_rows: int | None, max_bytes: int | None, wait: float) -> list[Any]:
        """What the receivers hold, up to the limits (waiting up to ``wait`` seconds for the
        first message; at least :data:`_FIRST_WAIT` the first time): (address, delivery)
        pairs, unsettled."""
        if self._first:
            self._first, wait = False, max(wait, _FIRST_WAIT)
        return list(self._call(self._take(max_rows, max_bytes, wait)))

    async def _take(
        self, max_rows: int | None, max_bytes: int | None, wait: float
    ) -> list[tuple[str, Any]]:
        taken: list[tuple[str, Any]] = []
        size = 0
        deadline = time.monotonic() + wait
        quiet_since = time.monotonic()
        while True:
            before = len(taken)
            for _ in range(len(self.receivers)):
                address, receiver = self.receivers[self._next]
                self._next = (self._next + 1) % len(self.receivers)
                core = receiver.core
                queue = core.queue
                count = len(queue)
                if max_rows is not None:
                    count = min(count, max_rows - len(taken))
                if max_bytes is not None:
                    for index in range(count):
                        size += len(queue[index].data)
                        if size > max_bytes and (taken or index):
                            count = index
                            break
                # Taken in one call: the link's credit topped up once, not once a message.
                taken.extend([(address, d) for d in core.take_many(count)])
                if max_bytes is not None and size > max_bytes:
                    return taken
            now = time.monotonic()
            if len(taken) > before:
                quiet_since = now
            if max_rows is not None and len(taken) >= max_rows:
                return taken
            # Once messages come, the batch goes on filling while they keep coming (the
            # broker sends on as the link's credit is topped up), up to the limit.
            if taken and now - quiet_since >= _QUIET:
                return taken
            if not taken and now >= deadline:
                return taken
            await asyncio.sleep(0.002 if taken else min(0.01, max(0.0, deadline - now)))

    def settle(self, deliveries: Sequence[Any], how: str) -> None:
        """Accept (or reject, modify) deliveries, on the loop; those of a connection that
        was lost meanwhile are skipped (the broker redelivers them)."""
        if deliveries:
            self._call(self._settle(list(deliveries), how))

    async def _settle(self, deliveries: list[Any], how: str) -> None:
        for delivery in deliveries:
            if delivery.settled:
                continue
            try:
                if how == "accept":
                    delivery.accept()
                else:
                    refuse_undecodable(delivery, how)
            except Exception as exc:  # its link or connection went: redelivered, not lost
                _log.info("could not settle a delivery (%s): the broker redelivers it", exc)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._call(self._conn.close(timeout=5), timeout=10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


# -- reading: streaming (queue mode) ---------------------------------------------------------


class QueueStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read in queue mode: at-least-once, nothing lost (the module's docstring).
    Offsets are ``{"staged": n}``: how many messages have been staged so far."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._receiving: _Receiving | None = None
        #: Staged but not yet accepted: (end offset of its batch, its deliveries).
        self._unsettled: list[tuple[int, list[Any]]] = []
        self._end: int | None = None
        #: The end of the last batch Spark planned (:meth:`partitions`).
        self._planned = 0

    def __getstate__(self) -> dict[str, Any]:
        # Executors get the reader for read(): only its options go.
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    # The staged batches are the record of where we are: a restarted query goes on from the
    # last one, and replays the uncommitted ones from them. With every staged file
    # committed and removed, a restarted query counts from 0: :meth:`latestOffset` then
    # goes on from Spark's ``start`` instead (pyspark 4.2 and later; on 4.0 and 4.1,
    # :meth:`partitions` refuses the range that went back).
    def _current_end(self) -> int:
        if self._end is None:
            staged = staged_batches(self.options.staging_location or "")
            self._end = staged[-1][1] if staged else 0
        return self._end

    def initialOffset(self) -> dict[str, int]:
        return {"staged": 0}

    def getDefaultReadLimit(self) -> Any:
        opts = self.options
        if ReadMaxRows is not None and opts.max_messages_per_trigger is not None:
            return ReadMaxRows(opts.max_messages_per_trigger)
        if ReadMaxBytes is not None and opts.max_bytes_per_trigger is not None:
            return ReadMaxBytes(opts.max_bytes_per_trigger)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: nothing to prepare. A queue has no offset to fix the target
        by (docs/spark.rst): the query reads until a batch finds the receivers empty, which
        :meth:`latestOffset` reports by returning its ``start``."""

    def latestOffset(
        self, start: dict[str, int] | None = None, limit: Any = None
    ) -> dict[str, int]:
        """Accept what Spark has committed (everything up to ``start``), then stage the next
        batch: what the receivers hold, up to the read limit.

        pyspark 4.0 and 4.1 give no ``start``. Spark runs micro-batches one after another and
        asks for the next end only once the batch before is in its commit log, so every batch
        it has planned (:meth:`partitions`) is committed by then: those are accepted."""
        opts = self.options
        end = self._current_end()
        if start is None:
            self._settle_committed(self._planned)
        else:
            committed = int(start["staged"])
            self._settle_committed(committed)
            if committed > end:
                # Restarted after every staged batch was committed (and its file removed):
                # the next batch starts where Spark is, never below it (a batch planned
                # below would run empty while its messages were accepted).
                end = self._end = committed
            if committed < end:
                # Staged after the last batch Spark logged (a crash between the two): never
                # planned, never accepted, so redelivered by the broker. Drop them.
                for first, _last, path in staged_batches(opts.staging_location or ""):
                    if first >= committed:
                        remove_staged(path)
                end = self._end = committed
        max_rows, max_bytes = opts.max_messages_per_trigger, opts.max_bytes_per_trigger
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif ReadMaxBytes is not None and isinstance(limit, ReadMaxBytes):
            max_rows, max_bytes = None, limit.max_bytes
        elif ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
            max_rows = max_bytes = None
        if self._receiving is None:
            self._receiving = _Receiving(opts)
            # pyarrow imports pandas when it makes its first array (half a second, more on
            # a busy machine): done here, while the broker sends the first batch, rather
            # than in the first stage().
            record_batch([])
        taken = self._receiving.take(max_rows, max_bytes, opts.poll_interval)
        rows, good, bad = [], [], []
        for address, delivery in taken:
            try:
                rows.append(message_to_row(delivery.message, address))
                good.append(delivery)
            except (amqp.DecodeError, ValueError) as exc:
                _log.warning(
                    "an undecodable message from %s (%s): %s", address, exc, opts.undecodable
                )
                bad.append(delivery)
        self._receiving.settle(bad, opts.undecodable)
        if not rows:
            return {"staged": end}
        stage(opts.staging_location or "", end, rows)
        end = self._end = end + len(rows)
        self._unsettled.append((end, good))
        return {"staged": end}

    def reportLatestOffset(self) -> dict[str, int] | None:
        return None if self._end is None else {"staged": self._end}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        first, last = int(start["staged"]), int(end["staged"])
        self._planned = max(self._planned, last)
        if first > last:
            raise RuntimeError(
                f"the staged offsets went back from {first} to {last}: was the staging "
                "location cleared, or is it not the one this query staged into?"
            )
        if first == last:
            return []
        staged = staged_batches(self.options.staging_location or "")
        partitions: list[InputPartition] = split(first, last, staged, self.options.partitions)
        return partitions

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, StagedPartition)
        return read_staged(partition)

    def commit(self, end: dict[str, int]) -> None:
        """Spark has committed everything up to ``end``: accept it, drop its staged files."""
        self._settle_committed(int(end["staged"]))

    def _settle_committed(self, committed: int) -> None:
        done = [d for batch_end, ds in self._unsettled if batch_end <= committed for d in ds]
        self._unsettled = [(e, ds) for e, ds in self._unsettled if e > committed]
        if done and self._receiving is not None:
            self._receiving.settle(done, "accept")
        for _first, last, path in staged_batches(self.options.staging_location or ""):
            if last <= committed:
                remove_staged(path)

    def stop(self) -> None:
        """The query ended: what was staged but not accepted stays unsettled and goes back
        to the broker with the connection (redelivered to the next reader)."""
        if self._receiving is not None:
            self._receiving.close()
            self._receiving = None
