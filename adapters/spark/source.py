"""The data source itself: ``format("amqp")`` (:class:`AMQPDataSource`, made known to a
session by :func:`register`), and :func:`run_available_now` to run a streaming query to the
end of what its sources have."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import (
    StructType,
)

from .batch import BatchReader, BatchWriter, StreamWriter
from .options import ReadOptions, WriteOptions
from .queue_reader import QueueStreamReader
from .schema import ADMISSION_CONTROL, SCHEMA
from .stream_reader import StreamBatchReader, StreamModeReader


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
