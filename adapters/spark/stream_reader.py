"""``format("amqp")`` in mode ``stream``: reading stream nodes (nodes with offsets, such as
the reference broker's :class:`~amqp_sansio.broker.Stream`) the way Spark's Kafka source
reads topics, for exactly-once processing.

An offset of the source is ``{address: next offset}``, a JSON object Spark writes to the
query's checkpoint. The driver only asks where each stream stands: a receiver attached with
the offset filter ``next`` reads the stream's first and next offsets in the broker's answer
(``docs/broker.rst``) and is closed again, consuming nothing. ``latestOffset`` returns the
streams' ends, as far as the read limit admits; ``partitions(start, end)`` cuts each
address's range ``[start, end)`` into up to ``partitions`` pieces, and each Spark task
attaches its own receiver with the offset filter at the first offset of its piece and reads
exactly that piece. Nothing is acknowledged (a stream keeps its messages): a batch that is
run again after a crash reads the same offsets again, so with Spark's checkpointed offsets
and an idempotent sink (the file sink, or ``foreachBatch`` keyed by batch id) each message
is processed exactly once.

Offsets retention has dropped before a task read them are data loss: with
``failOnDataLoss`` (the default) the task fails, naming the stream and the offsets; without
it they are skipped, with a warning.

With option ``protocol`` ``0-9-1`` the plan is the same; only asking a stream where it
stands and reading a range are 0-9-1's (:mod:`.amqp091`: RabbitMQ's streams as 0-9-1
clients read them, with ``x-stream-offset``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)

from . import calls
from .options import EARLIEST, LATEST, ReadOptions

try:  # pyspark 4.2 and later: admission control, Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - pyspark 4.0 and 4.1
    ReadAllAvailable = ReadMaxRows = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Absent before pyspark 4.2: nothing calls it there."""


__all__ = ["OffsetRange", "StreamBatchReader", "StreamModeReader", "read_range"]

_log = logging.getLogger("amqp_sansio.spark")

Offsets = dict[str, int]


class OffsetRange(InputPartition):
    """Offsets [start, end) of the stream at ``address``: what one task reads."""

    def __init__(self, address: str, start: int, end: int) -> None:
        super().__init__((address, start, end))
        self.address, self.start, self.end = address, start, end


def _ranges(start: Offsets, end: Offsets, parts: int) -> list[InputPartition]:
    """Each address's [start, end) cut into up to ``parts`` pieces of equal size."""
    out: list[InputPartition] = []
    for address, last in end.items():
        first = start.get(address, last)
        count = last - first
        if count <= 0:
            continue
        size = -(-count // parts)
        out.extend(
            OffsetRange(address, lo, min(last, lo + size)) for lo in range(first, last, size)
        )
    return out


def _lost(options: ReadOptions, address: str, first: int, end: int) -> None:
    what = f"offsets {first} to {end - 1} of stream {address!r} were dropped by the node's "
    what += "retention before they were read"
    if options.fail_on_data_loss:
        raise RuntimeError(f"{what} (data loss; set option 'failOnDataLoss' to false to skip them)")
    _log.warning("%s: skipped (failOnDataLoss is false)", what)


def read_range(options: ReadOptions, part: OffsetRange) -> Iterator[tuple[Any, ...]]:
    """The rows of offsets [start, end) of ``part``'s stream (on an executor): a receiver
    of its own, attached with the offset filter at ``start``; gaps are data loss. With
    protocol ``0-9-1``: :func:`.amqp091.read_range` (:func:`.calls.of` picks)."""
    if part.start >= part.end:
        return  # an empty range: nothing to connect for
    address = part.address

    def lost(first: int, end: int) -> None:
        _lost(options, address, first, end)

    yield from calls.of(options).read_rows(options, address, part.start, part.end, lost)


class _Bounds:
    """The driver's connection, for asking streams where they stand."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._conn: Any = None

    def __call__(self) -> dict[str, tuple[int, int]]:
        opts = self.options
        protocol = calls.of(opts)
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = protocol.stream_connection(opts)
            try:
                return {a: protocol.stream_bounds(self._conn, opts, a) for a in opts.addresses}
            except protocol.ERRORS:
                self.close()  # a lost connection: once more on a new one
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close(timeout=5)


def _resolve(given: Any, known: dict[str, tuple[int, int]], default: int) -> Offsets:
    """Offsets from option ``startingOffsets``/``endingOffsets`` and the streams' bounds."""
    out = {}
    for address, (first, end) in known.items():
        value = given if isinstance(given, str) else given.get(address, default)
        if value in ("earliest", EARLIEST):
            out[address] = first
        elif value in ("latest", LATEST):
            out[address] = end
        else:
            out[address] = int(value)
    return out


def _admit(start: Offsets, end: Offsets, limit: int) -> Offsets:
    """Ends taking at most ``limit`` messages in all, shared in proportion to what each
    address has (what is left over goes to the first ones)."""
    available = {a: max(0, e - start.get(a, e)) for a, e in end.items()}
    total = sum(available.values())
    if total <= limit:
        return end
    share = {a: n * limit // total for a, n in available.items()}
    left = limit - sum(share.values())
    for address in end:
        extra = min(left, available[address] - share[address])
        share[address] += extra
        left -= extra
    return {a: start.get(a, e) + share[a] for a, e in end.items()}


class StreamModeReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read in mode ``stream`` (the module's docstring)."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._bounds = _Bounds(options)
        self._latest: Offsets | None = None
        self._reported: Offsets | None = None
        self._target: Offsets | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    def initialOffset(self) -> Offsets:
        """Where a new query starts (option ``startingOffsets``; later runs start from the
        checkpoint)."""
        return _resolve(self.options.starting_offsets, self._bounds(), EARLIEST)

    def getDefaultReadLimit(self) -> Any:
        limit = self.options.max_messages_per_trigger
        if ReadMaxRows is not None and limit is not None:
            return ReadMaxRows(limit)
        return ReadAllAvailable() if ReadAllAvailable is not None else None

    def prepareForTriggerAvailableNow(self) -> None:
        """Trigger.AvailableNow: the streams' ends now are where the query stops."""
        self._target = {a: end for a, (_, end) in self._bounds().items()}

    def latestOffset(self, start: Offsets | None = None, limit: Any = None) -> Offsets:
        """The streams' ends (or the Trigger.AvailableNow target), as far as the read limit
        admits from ``start``."""
        ends = {a: end for a, (_, end) in self._bounds().items()}
        self._reported = dict(ends)
        if self._target is not None:
            ends = {a: min(e, self._target.get(a, e)) for a, e in ends.items()}
        if start is None:
            # pyspark 4.0/4.1: no admission control, and Spark does not say where it is
            # (it asks for the end before it asks for the initial offsets). The last batch
            # planned ends where the next starts; a query's first batch has no such start
            # and reads to the streams' ends, unlimited (docs/spark.rst).
            start = self._latest
        start = start or {}
        ends = {a: max(e, start.get(a, e)) for a, e in ends.items()}
        max_rows = self.options.max_messages_per_trigger
        if ReadMaxRows is not None and isinstance(limit, ReadMaxRows):
            max_rows = limit.max_rows
        elif ReadAllAvailable is not None and isinstance(limit, ReadAllAvailable):
            max_rows = None
        if max_rows is not None:
            ends = _admit(start, ends, max_rows)
        self._latest = ends
        return ends

    def reportLatestOffset(self) -> Offsets | None:
        return self._reported

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        self._latest = dict(end)  # where the next batch starts (pyspark 4.0/4.1)
        return _ranges(start, end, self.options.partitions)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, OffsetRange)
        return read_range(self.options, partition)

    def commit(self, end: Offsets) -> None:
        """Nothing to do: a stream keeps its messages, and the offsets are Spark's."""

    def stop(self) -> None:
        self._bounds.close()


class StreamBatchReader(DataSourceReader):
    """``spark.read`` in mode ``stream``: offsets [startingOffsets, endingOffsets) of each
    address (an end past the stream's end reads to its end)."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def __getstate__(self) -> dict[str, Any]:
        return {"options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["options"])  # type: ignore[misc]

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        reader = _Bounds(opts)
        try:
            known = reader()
        finally:
            reader.close()
        start = _resolve(opts.starting_offsets, known, EARLIEST)
        end = _resolve(opts.ending_offsets, known, LATEST)
        end = {a: min(e, known[a][1]) for a, e in end.items()}
        # No offsets in the range: one partition with no rows (given none, Spark would make
        # one of its own and hand that to read()).
        return _ranges(start, end, opts.partitions) or [OffsetRange("", 0, 0)]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, OffsetRange)
        return read_range(self.options, partition)
