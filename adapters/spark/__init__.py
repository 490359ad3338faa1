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

How a streaming read in queue mode keeps its promise (at-least-once, nothing lost): each
micro-batch is ``partitions`` receiver tasks on the executors, competing consumers on the
addresses. A task takes its share of the read limit a part at a time: it writes each part
under ``stagingLocation`` as an Arrow file (published atomically), only then accepts it, and
hands the rows to Spark. A batch that Spark runs again (a failed task, a lost executor, a
restarted query) reads the staged parts instead of receiving them again; the files go once
Spark has committed their batch. The driver plans batches by number and never handles a
message (:mod:`.queue_reader`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .options import OptionError

if TYPE_CHECKING:
    from .java import JavaMissing, ensure_java
    from .schema import ADMISSION_CONTROL, SCHEMA
    from .source import AMQPDataSource, register, run_available_now
    from .staging import read_staged, stage, staged_files

__all__ = [
    "SCHEMA",
    "AMQPDataSource",
    "JavaMissing",
    "OptionError",
    "ensure_java",
    "register",
    "run_available_now",
    "ADMISSION_CONTROL",
    "read_staged",
    "stage",
    "staged_files",
]

#: Where each name lives. They are imported when first used, so that the modules that need
#: no Spark (:mod:`.rows`, :mod:`.options`) import without pyspark or pyarrow.
_WHERE = {
    "SCHEMA": "schema",
    "ADMISSION_CONTROL": "schema",
    "AMQPDataSource": "source",
    "register": "source",
    "run_available_now": "source",
    "JavaMissing": "java",
    "ensure_java": "java",
    "read_staged": "staging",
    "stage": "staging",
    "staged_files": "staging",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
