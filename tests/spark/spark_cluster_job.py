"""The driver of tests/spark/test_spark_cluster.py, in a process of its own
(:class:`support.spark_cluster.Driver`): ``python spark_cluster_job.py MASTER`` makes a
SparkSession on MASTER (``spark://127.0.0.1:PORT``, a standalone cluster of this machine)
with ``format("amqp")`` registered, then reads requests from stdin, a JSON line each
(``{"call": name, "args": {...}}``), runs ``name(spark, **args)`` and prints the answer after
``@@answer `` (``{"result": ...}`` or ``{"error": traceback}``). It stops its session and
exits when stdin closes.

The tasks' functions tag what they return with the executor they ran on: the executor JVM
(``CoarseGrainedExecutorBackend``) above the Python worker in the process tree, its pid and
``--executor-id``.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ANSWER = "@@answer "

#: Running streaming queries, by name.
QUERIES: dict[str, Any] = {}


def executor() -> tuple[str, int]:
    """(executor id, JVM pid) of the executor this Python worker runs under (/proc)."""
    pid = os.getpid()
    while pid > 1:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in command:
            return command[command.index(b"--executor-id") + 1].decode(), pid
        stat = Path(f"/proc/{pid}/stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    raise RuntimeError(f"python worker {os.getpid()} runs under no executor")


def ready(spark: Any) -> dict[str, Any]:
    sc = spark.sparkContext
    return {"master": sc.master, "app": sc.applicationId, "python": sys.executable}


def _tagged(df: Any, columns: list[str], slow: float = 0.0, marks: str = "") -> list[Any]:
    """``df``'s ``columns`` by task: [executor id, executor pid, python worker pid, rows]."""

    def tag(rows: Iterator[Any]) -> Iterator[Any]:
        where = executor()
        taken = [[row[c] for c in columns] for row in rows]
        if marks:  # the test kills this task's executor while it sleeps
            Path(marks, f"{os.getpid()}-{time.monotonic_ns()}").write_text(str(len(taken)))
        time.sleep(slow)
        yield [*where, os.getpid(), taken]

    return list(df.select(*columns).rdd.mapPartitions(tag).collect())


def where(spark: Any, tasks: int) -> list[Any]:
    """``tasks`` tasks of a plain job: where each ran."""
    rdd = spark.sparkContext.parallelize(range(tasks), tasks)
    return list(rdd.mapPartitions(lambda _: iter([[*executor(), os.getpid()]])).collect())


def write(spark: Any, url: str, address: str, count: int, partitions: int) -> int:
    """A batch write of ``count`` rows, message-ids ``m0``..., from ``partitions`` tasks."""
    df = spark.createDataFrame(
        [(f"m{i}", f"payload {i}".encode()) for i in range(count)],
        "message_id string, body binary",
    ).repartition(partitions)
    df.write.format("amqp").mode("append").option("url", url).option("address", address).save()
    return count


def read(spark: Any, url: str, address: str, **options: str) -> list[Any]:
    """A batch read; by task: [executor id, pid, worker pid, [[message_id, offset], ...]]."""
    reader = spark.read.format("amqp").option("url", url).option("address", address)
    df = reader.options(**options).load()
    return _tagged(df, ["message_id", "offset"])


def _stream(spark: Any, url: str, address: str, staging: str, per_trigger: int) -> Any:
    return (
        spark.readStream.format("amqp")
        .option("url", url)
        .option("address", address)
        .option("stagingLocation", staging)
        .option("maxMessagesPerTrigger", str(per_trigger))
        .option("partitions", "2")
        .load()
    )


def _writer(df: Any, out: str, checkpoint: str, slow: float, marks: str) -> Any:
    """foreachBatch keyed by batch id (a batch run again replaces its file): each batch's
    rows by task, as JSON in ``out``/batch-N.json."""

    def on_batch(batch: Any, batch_id: int) -> None:
        rows = _tagged(batch, ["message_id", "delivery_count"], slow, marks)
        Path(out, f"batch-{batch_id}.json").write_text(json.dumps(rows))

    return df.writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint)


def stream_available_now(
    spark: Any,
    url: str,
    address: str,
    staging: str,
    checkpoint: str,
    out: str,
    per_trigger: int,
) -> list[int]:
    """A streaming read (queue mode) of what is there, ``run_available_now``; the rows of
    each batch."""
    from amqp_sansio.adapters import spark as amqp_spark

    os.makedirs(out, exist_ok=True)
    writer = _writer(_stream(spark, url, address, staging, per_trigger), out, checkpoint, 0, "")
    query = amqp_spark.run_available_now(writer, timeout=150)
    return [int(p.numInputRows) for p in query.recentProgress]


def stream_start(
    spark: Any,
    name: str,
    url: str,
    address: str,
    staging: str,
    checkpoint: str,
    out: str,
    per_trigger: int,
    slow: float,
    marks: str,
) -> str:
    """Start a streaming read (queue mode) that runs until :func:`stream_stop`; each task
    writes a file in ``marks`` and then sleeps ``slow`` seconds."""
    os.makedirs(out, exist_ok=True)
    os.makedirs(marks, exist_ok=True)
    df = _stream(spark, url, address, staging, per_trigger)
    query = _writer(df, out, checkpoint, slow, marks).start()
    QUERIES[name] = query
    return str(query.id)


def stream_progress(spark: Any, name: str) -> dict[str, Any]:
    query = QUERIES[name]
    exception = query.exception()
    return {
        "active": query.isActive,
        "batches": [[int(p.batchId), int(p.numInputRows)] for p in query.recentProgress],
        "exception": None if exception is None else str(exception),
    }


def stream_stop(spark: Any, name: str) -> dict[str, Any]:
    progress = stream_progress(spark, name)
    QUERIES.pop(name).stop()
    return progress


def main(master: str) -> None:
    warnings.simplefilter("ignore")  # pyspark's own warnings (pandas versions, configs)
    from amqp_sansio.adapters.cli import spark_process

    spark = spark_process.spark_session(master)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                result = globals()[request["call"]](spark, **request["args"])
                answer = {"result": result}
            except Exception:
                answer = {"error": traceback.format_exc()}
            print(ANSWER + json.dumps(answer), flush=True)
    finally:
        for query in QUERIES.values():
            query.stop()
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
