"""``format("amqp")`` through Spark Connect: the data source registered on a Spark Connect
session (a local Spark Connect server, ``remote("local[2]")``) reads and writes in batch
and streams in queue mode, with the same results as on a classic session. The session runs
in a process of its own (tests/spark/spark_connect_job.py): a process holds one kind of session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import amqp_sansio as a

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
pytest.importorskip("grpc", reason="a Spark Connect client needs pyspark[connect] (test extra)")
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters import spark as spark_adapter
from amqp_sansio.adapters.broker import run_broker

JOB = Path(__file__).with_name("spark_connect_job.py")


@pytest.fixture
def broker() -> Iterator[Any]:
    try:
        spark_adapter.ensure_java()
    except spark_adapter.JavaMissing as exc:
        pytest.skip(f"{exc} (.ci/run installs one)")
    with run_broker() as server:
        yield server


def publish(url: str, address: str, count: int) -> None:
    with sockets.connect(f"{url}/{address}") as conn:
        sender = conn.sender(address)
        trackers = [
            sender.send(a.Message(body=f"{address} {i}".encode()), wait=False) for i in range(count)
        ]
        for tracker in trackers:
            assert isinstance(tracker.outcome(timeout=30), a.Accepted)


def depth(server: Any, address: str) -> int:
    node = server.broker.nodes.get(address)
    return 0 if node is None else int(node.depth)


def test_batch_and_streaming_through_spark_connect(broker: Any, tmp_path: Path) -> None:
    publish(broker.url, "connect-in", 300)
    publish(broker.url, "connect-stream", 500)
    env = dict(os.environ, PYTHONPATH="")
    done = subprocess.run(
        [sys.executable, str(JOB), broker.url],
        cwd=tmp_path,  # Spark's Python workers must not import a checkout's amqp_sansio/
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["session"].startswith("pyspark.sql.connect")
    assert result["read"] == sorted(f"connect-in {i}" for i in range(300))
    assert depth(broker, "connect-in") == 0  # consumed
    assert depth(broker, "connect-out") == 200  # the batch write
    data = [b for b in result["batches"] if b]
    assert sum(data) == 500 and max(data) <= 100 and len(data) >= 5  # the read limit held
    assert depth(broker, "connect-stream") == 0  # every batch accepted, the last one too
    assert depth(broker, "connect-sink") == 500
