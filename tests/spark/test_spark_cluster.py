"""``format("amqp")`` on a Spark standalone cluster of this machine (support/spark_cluster.py):
a master and two workers started from the scripts the pyspark package ships, each worker
with one core, so an application has two executors, each a JVM of its own with Python
workers of its own. The driver is a process of its own (tests/spark/spark_cluster_job.py),
the broker the reference broker as a user starts it (``amqp-sansio broker``).

On it: a batch write and read in queue mode and in stream mode, a streaming read (queue mode)
that processes exactly the messages sent, counted by message-id, tasks on both executors, an
executor killed with SIGKILL in the middle of a streaming query and the query restarted from
its checkpoint with nothing lost, and ``amqp-sansio pipeline --master spark://...``. The
cluster starts once for the module; when it stops, no process of it is left.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.broker_process import BrokerProcess, amqp_sansio_command
from support.spark_cluster import Driver, SparkCluster, cluster_unavailable

JOB = Path(__file__).with_name("spark_cluster_job.py")

#: Bound of a wait for a streaming query to reach a point (seconds).
STREAM_WAIT = 90.0


@pytest.fixture(scope="module")
def cluster() -> Iterator[SparkCluster]:
    """The cluster, started once for the module; at the end, stopped, and every process it
    had (master, workers, executors, Python workers) checked gone."""
    reason = cluster_unavailable()
    if reason is not None:
        pytest.skip(reason)
    started = time.monotonic()
    with SparkCluster(workers=2) as running:
        running.started_in = time.monotonic() - started
        yield running
        seen = running.processes()
    assert running.leftover == [], f"processes still alive after the cluster stopped: {seen}"
    assert all(not Path(f"/proc/{pid}").exists() for pid in seen), seen


class DriverSlot:
    """The module's driver, started when a test first needs it and stopped when a test
    needs the cluster's cores for another application (the pipeline)."""

    def __init__(self, cluster: SparkCluster) -> None:
        self.cluster = cluster
        self.driver: Driver | None = None

    def get(self) -> Driver:
        if self.driver is None:
            self.driver = Driver(self.cluster, JOB)
        return self.driver

    def release(self) -> None:
        if self.driver is not None:
            self.driver.stop()
            self.driver = None


@pytest.fixture(scope="module")
def slot(cluster: SparkCluster) -> Iterator[DriverSlot]:
    held = DriverSlot(cluster)
    yield held
    held.release()


@pytest.fixture
def driver(slot: DriverSlot) -> Driver:
    return slot.get()


@pytest.fixture(scope="module")
def broker(cluster: SparkCluster) -> Iterator[BrokerProcess]:
    with BrokerProcess() as running:
        yield running


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A directory the driver and every executor reach (one machine: any local one)."""
    return tmp_path


def _name(prefix: str) -> str:
    return f"{prefix}-{time.monotonic_ns()}"


def _ids(tasks: list[Any]) -> Counter[str]:
    return Counter(row[0] for *_where, rows in tasks for row in rows)


def _executors(tasks: list[Any]) -> set[str]:
    """The executors that ran tasks which had rows."""
    return {executor for executor, _pid, _worker, rows in tasks if rows}


def test_tasks_run_on_two_executors_each_a_jvm_of_its_own(
    cluster: SparkCluster, driver: Driver
) -> None:
    state = cluster.state()
    assert [w["cores"] for w in state["workers"]] == [1, 1]
    tasks = driver.call("where", tasks=8)
    ids = {executor for executor, _pid, _worker in tasks}
    jvms = {pid for _executor, pid, _worker in tasks}
    assert len(ids) == 2 and len(jvms) == 2, tasks
    # They are the workers' executor processes of this application, each with its own
    # Python workers.
    app = driver.started["app"]
    running = {e.pid: e for e in cluster.executors() if e.app == app}
    assert jvms <= set(running) and {running[p].id for p in jvms} == ids
    for _executor, pid, worker in tasks:
        assert cluster.executor_of(worker) == running[pid]
    apps = [a for a in cluster.state()["activeapps"] if a["id"] == app]
    assert apps and apps[0]["cores"] == 2


def test_batch_write_then_read_in_queue_mode(driver: Driver, broker: BrokerProcess) -> None:
    address, count = _name("cluster-batch"), 5_000
    assert driver.call("write", url=broker.url, address=address, count=count, partitions=2)
    # Two tasks, on the two executors, each with its own receiver (competing consumers:
    # how the broker shares the queue between them depends on when each attaches, so a task
    # that starts late may find it empty).
    options = {"consume": "true", "partitions": "2", "pollInterval": "1", "credit": "100"}
    tasks = driver.call("read", url=broker.url, address=address, **options)
    ids = _ids(tasks)
    assert set(ids) == {f"m{i}" for i in range(count)} and max(ids.values()) == 1
    assert len(tasks) == 2 and len({task[0] for task in tasks}) == 2, tasks
    assert _ids(driver.call("read", url=broker.url, address=address, **options)) == Counter()


def test_batch_write_then_read_in_stream_mode(driver: Driver, broker: BrokerProcess) -> None:
    address, count = f"stream/{_name('cluster')}", 5_000
    assert driver.call("write", url=broker.url, address=address, count=count, partitions=2)
    tasks = driver.call("read", url=broker.url, address=address, mode="stream", partitions="2")
    ids = _ids(tasks)
    assert set(ids) == {f"m{i}" for i in range(count)} and max(ids.values()) == 1
    offsets = sorted(row[1] for *_where, rows in tasks for row in rows)
    assert offsets == list(range(count))
    assert len(_executors(tasks)) == 2
    # A stream keeps its messages: the same range again, from the middle.
    again = driver.call(
        "read",
        url=broker.url,
        address=address,
        mode="stream",
        partitions="2",
        startingOffsets=json.dumps({address: 4_000}),
    )
    assert sorted(row[1] for *_where, rows in again for row in rows) == list(range(4_000, count))


def _batches(out: Path) -> list[list[Any]]:
    return [json.loads(p.read_text()) for p in sorted(out.glob("batch-*.json"))]


def test_a_streaming_read_processes_exactly_the_messages_sent(
    driver: Driver, broker: BrokerProcess, shared: Path
) -> None:
    address, count = _name("cluster-stream"), 10_000
    driver.call("write", url=broker.url, address=address, count=count, partitions=2)
    rows = driver.call(
        "stream_available_now",
        url=broker.url,
        address=address,
        staging=(shared / "staging").as_uri(),  # a file:// URI
        checkpoint=str(shared / "checkpoint"),
        out=str(shared / "out"),
        per_trigger=2_000,
    )
    assert sum(rows) == count and max(rows) <= 2_000
    tasks = [task for batch in _batches(shared / "out") for task in batch]
    ids = _ids(tasks)
    assert set(ids) == {f"m{i}" for i in range(count)} and max(ids.values()) == 1
    assert len(_executors(tasks)) == 2
    # Every batch was accepted, the last one too: the queue is empty.
    options = {"consume": "true", "pollInterval": "1"}
    assert _ids(driver.call("read", url=broker.url, address=address, **options)) == Counter()


def _wait_for(what: str, check: Any, wait: float = STREAM_WAIT) -> Any:
    deadline = time.monotonic() + wait
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what} within {wait} s"
        time.sleep(0.2)
    return found


def test_an_executor_killed_mid_stream_loses_nothing(
    cluster: SparkCluster, driver: Driver, broker: BrokerProcess, shared: Path
) -> None:
    """SIGKILL to the executor JVM running a task of a streaming query (queue mode): Spark
    runs the lost task again elsewhere, the query goes on; then it is stopped and restarted
    from its checkpoint, and reads on to the end. Every message is in the output; a message
    seen twice was redelivered by the broker, and says so (``delivery_count``)."""
    address, count = _name("cluster-kill"), 6_000
    driver.call("write", url=broker.url, address=address, count=count, partitions=2)
    query = {
        "url": broker.url,
        "address": address,
        "staging": (shared / "staging").as_uri(),
        "checkpoint": str(shared / "checkpoint"),
        "out": str(shared / "out"),
        "per_trigger": 1_500,
    }
    marks = shared / "marks"
    driver.call("stream_start", name="kill", slow=2.0, marks=str(marks), **query)
    # The third task to start: the first batch's two are done (or nearly), the second
    # batch's first has written its mark and sleeps. Its executor is killed now.
    mark = _wait_for("a third task started", lambda: sorted(marks.glob("*"))[2:])[0]
    victim = cluster.executor_of(int(mark.name.split("-")[0]))
    os.kill(victim.pid, signal.SIGKILL)
    killed_at = time.monotonic()

    def batches_after_the_kill() -> Any:
        progress = driver.call("stream_progress", name="kill")
        assert progress["exception"] is None, progress["exception"]
        done = [b for b in progress["batches"] if b[1]]
        return len(done) >= 3 and progress

    progress = _wait_for("two batches done after the kill", batches_after_the_kill)
    assert progress["active"], progress
    assert victim.pid not in {e.pid for e in cluster.executors()}
    driver.call("stream_stop", name="kill")
    # Restarted from its checkpoint (and its staged batches), to the end of the queue.
    driver.call("stream_available_now", **query)
    tasks = [task for batch in _batches(shared / "out") for task in batch]
    ids = _ids(tasks)
    if set(ids) != {f"m{i}" for i in range(count)}:
        left = _ids(driver.call("read", url=broker.url, address=address, consume="true"))
        missing = {f"m{i}" for i in range(count)} - set(ids)
        raise AssertionError(
            f"{len(missing)} not processed, {len(missing & set(left))} of them still queued; "
            f"batches: {[(len(b), [len(t[3]) for t in b]) for b in _batches(shared / 'out')]}"
            f"\n{progress}\n{driver.timings}"
        )
    redelivered = {row[0] for *_where, rows in tasks for row in rows if row[1] and row[1] > 0}
    assert {i for i, n in ids.items() if n > 1} <= redelivered
    print(f"executor {victim.id} killed; query done {time.monotonic() - killed_at:.1f} s later")


def test_the_pipeline_runs_on_the_cluster(
    cluster: SparkCluster, slot: DriverSlot, tmp_path: Path
) -> None:
    """``amqp-sansio pipeline --master spark://...``, as a user runs it (the module's driver
    is stopped first: an application takes every free core of the cluster)."""
    slot.release()
    started = time.monotonic()
    done = subprocess.run(
        [
            *amqp_sansio_command(),
            *("pipeline", "--master", cluster.master, "--messages", "20000", "--json"),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    outcome = json.loads(done.stdout)
    assert (outcome["sent"], outcome["processed"], outcome["lost"]) == (20_000, 20_000, 0)
    apps = [a for a in cluster.state()["completedapps"] if a["name"] == "amqp-sansio"]
    assert apps and apps[-1]["cores"] == 2, apps
    print(f"pipeline on the cluster: {time.monotonic() - started:.1f} s\n{done.stdout}")
