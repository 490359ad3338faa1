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

import importlib
from typing import TYPE_CHECKING, Any

from .options import OptionError

if TYPE_CHECKING:
    from .java import JavaMissing, ensure_java
    from .schema import ADMISSION_CONTROL, SCHEMA
    from .source import AMQPDataSource, register, run_available_now
    from .staging import StagedPartition, read_staged, stage, staged_batches

__all__ = [
    "SCHEMA",
    "AMQPDataSource",
    "JavaMissing",
    "OptionError",
    "ensure_java",
    "register",
    "run_available_now",
    "ADMISSION_CONTROL",
    "StagedPartition",
    "read_staged",
    "stage",
    "staged_batches",
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
    "StagedPartition": "staging",
    "read_staged": "staging",
    "stage": "staging",
    "staged_batches": "staging",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
