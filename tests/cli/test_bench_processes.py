"""``bench spark``'s CPU time by role (adapters/cli/bench/processes.py): which process of a
Spark application is the driver's and which the executors', read from ``/proc``."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from amqp_sansio.adapters.cli.bench import processes


@pytest.mark.parametrize(
    ("command", "role"),
    [
        (
            "/usr/bin/python3 -m pyspark.sql.streaming.python_streaming_source_runner",
            "driver Python",
        ),
        (
            "java -cp x org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url u",
            "executor JVMs",
        ),
        ("/venv/bin/python -m pyspark.daemon pyspark.worker", "executor Python"),
        ("/venv/bin/python -m pyspark.daemon", "executor Python"),
        (
            "/venv/bin/python -m pyspark.daemon pyspark.sql.worker.plan_data_source_read",
            "driver Python",
        ),
        (
            "/venv/bin/python -m pyspark.daemon pyspark.sql.worker.lookup_data_sources",
            "driver Python",
        ),
        ("java -cp x org.apache.spark.deploy.SparkSubmit pyspark-shell", "driver JVM"),
        ("java -cp x org.apache.spark.deploy.worker.Worker spark://h:7077", None),
        ("bash", None),
    ],
)
def test_each_process_is_given_its_role(command: str, role: str | None) -> None:
    assert processes.role(command) == role


def _burn(seconds: float, tag: str, then_sleep: float = 0.0) -> subprocess.Popen[bytes]:
    """A Python process that uses ``seconds`` of CPU, then sleeps ``then_sleep`` seconds,
    with ``tag`` in its command line. It starts without site packages (``-S``) or the
    coverage hooks a test run sets in the environment, so its start costs little."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COV_CORE", "COVERAGE"))}
    command = [sys.executable, "-S", "-c", _CODE, str(seconds), tag, f"sleep={then_sleep}"]
    return subprocess.Popen(command, env=env)


def _cpu_of(process: subprocess.Popen[bytes]) -> float:
    got = processes.stat(process.pid)
    return 0.0 if got is None else got[1]


def test_cpu_is_counted_by_role_from_the_start() -> None:
    # There at the start, done with its CPU before it: nothing of it counts. It uses more
    # than any interpreter's start may (a start was seen to take 1.06 s on a loaded CI
    # machine), so counting it shows whatever the start costs.
    before = _burn(3.0, "pyspark.daemon", then_sleep=3.0)
    deadline = time.monotonic() + 60
    while _cpu_of(before) < 3.0 and time.monotonic() < deadline:
        time.sleep(0.05)
    with processes.measuring(every=0.05) as cpu:
        worker = _burn(0.5, "pyspark.daemon")
        driver = _burn(0.2, "python_streaming_source_runner")
        for process in (worker, driver):
            process.wait(30)
        time.sleep(0.01)
    before.kill()
    before.wait()
    used = cpu.seconds()
    assert set(used) == set(processes.ROLES)
    # The worker's 0.5 s and the driver's 0.2 s, each with its interpreter's start (up to
    # 2 s allowed; at most one sampling period missed at its end); none of the first
    # process's 3 s: counted, the executors' share would be at least 3.5 s.
    assert 0.45 <= used["executor Python"] <= 0.5 + 2.0, used
    assert 0.15 <= used["driver Python"] <= 0.2 + 2.0, used
    assert used["executor JVMs"] == 0.0


def _orphan(seconds: float, *tags: str) -> None:
    """A process that uses ``seconds`` of CPU with ``tags`` in its command line, outside this
    process's tree (its parent ends at once: it goes to init)."""
    inner = [sys.executable, "-c", _CODE, str(seconds), *tags]
    subprocess.run([sys.executable, "-c", f"import subprocess; subprocess.Popen({inner!r})"])


_CODE = (
    "import sys, time\n"
    "end = time.process_time() + float(sys.argv[1])\n"
    "while time.process_time() < end: pass\n"
    "last = sys.argv[-1]\n"
    "time.sleep(float(last[6:]) if last.startswith('sleep=') else 0.0)"
)


def test_only_this_application_s_processes_count() -> None:
    """Another Spark application's processes on the machine are not counted; an executor
    JVM outside this process's tree counts when it names this application."""
    _orphan(1.5, "pyspark.daemon pyspark.worker")  # another application's worker
    _orphan(1.5, "CoarseGrainedExecutorBackend", "--app-id", "app-other")
    _orphan(1.5, "CoarseGrainedExecutorBackend", "--app-id", "app-ours")
    # Each is orphaned now (its parent has ended): measured from here, for a second.
    with processes.measuring(app_id="app-ours", every=0.05) as cpu:
        time.sleep(1.0)
    used = cpu.seconds()
    assert used["executor Python"] == 0.0, used
    assert 0.05 <= used["executor JVMs"] <= 1.2, used  # a share of a busy machine
