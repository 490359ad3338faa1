"""A Spark standalone cluster on this machine, for the tests: a master and workers started
from the scripts the pyspark package ships (``bin/spark-class``, which runs
``org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker`` as a user's
``start-master.sh``/``start-worker.sh`` would, but in the foreground, as subprocesses the
tests control), and a driver process the tests talk to.

::

    from support.spark_cluster import SparkCluster, Driver

    with SparkCluster(workers=2) as cluster:       # waits until both workers registered
        cluster.master                              # spark://127.0.0.1:PORT
        cluster.state()                             # the master's JSON (workers, apps)
        cluster.executors()                         # the executor JVMs: [Executor(pid, id, app)]
        with Driver(cluster, JOB) as driver:        # a SparkSession on the cluster, in a
            driver.call("name", arg=1)              # process of its own, running JOB's
                                                    # functions on request (JSON in and out)
    cluster.processes()                             # [] once stopped: nothing left behind

Everything of the cluster lives under one temporary directory (:attr:`SparkCluster.root`):
the logs, each worker's work directory (where its executors run, ``SPARK_WORKER_DIR``) and
Spark's local directories (``SPARK_LOCAL_DIRS``). Every process of the cluster (master,
workers, the executors the workers start, their Python workers) runs with its working
directory there, which is how :meth:`SparkCluster.processes` finds them all (``/proc``:
Linux). Each worker has one core and ``memory`` of memory, so an application gets one
executor per worker, each a JVM of its own with Python workers of its own.

Every wait is bounded (``wait``): a master or worker that does not come up, a driver that
does not answer, fails the test, saying so, with the logs' last lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.broker_process import Lines, free_port

__all__ = ["WAIT", "Driver", "Executor", "SparkCluster", "cluster_unavailable"]

#: The default bound of each wait (a process up, the workers registered, a driver's answer).
WAIT = 120.0

#: What a driver prints before each answer (Spark and py4j may print lines of their own).
ANSWER = "@@answer "


def cluster_unavailable() -> str | None:
    """Why a cluster cannot start here (no pyspark, no Java, no ``/proc``), or None."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is in the 'spark' extra"
    from amqp_sansio.adapters import spark as spark_adapter

    try:
        spark_adapter.ensure_java()
    except spark_adapter.JavaMissing as exc:
        return f"{exc} (.ci/run installs one)"
    if not Path("/proc/self/cwd").exists():
        return "the cluster's processes are found through /proc (Linux)"
    return None


def spark_home() -> Path:
    """The installed pyspark package: a Spark distribution (``bin/``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


@dataclass(frozen=True)
class Executor:
    """An executor JVM (``CoarseGrainedExecutorBackend``) a worker started."""

    pid: int
    id: str
    app: str


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _argument(command: list[str], name: str) -> str:
    return command[command.index(name) + 1] if name in command[:-1] else ""


class SparkCluster:
    """A master and ``workers`` workers on 127.0.0.1, each worker with ``cores`` cores and
    ``memory`` of memory, started at once; :meth:`stop` (or the end of a ``with`` block)
    ends them and everything they started."""

    def __init__(
        self, workers: int = 2, *, cores: int = 1, memory: str = "1g", wait: float = WAIT
    ) -> None:
        self.workers, self.cores, self.memory, self.wait = workers, cores, memory, wait
        self.root = Path(tempfile.mkdtemp(prefix="amqp-sansio-spark-cluster-")).resolve()
        self.port = free_port()
        self.webui_port = free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self._procs: list[subprocess.Popen[bytes]] = []
        self._logs: list[Path] = []
        self.env = dict(
            os.environ,
            SPARK_HOME=str(spark_home()),
            SPARK_LOCAL_IP="127.0.0.1",  # bind to loopback, not the host's other address
            SPARK_LOG_DIR=str(self.root / "logs"),
            SPARK_LOCAL_DIRS=str(self.root / "local"),
            SPARK_CONF_DIR=str(self.root / "conf"),  # none: Spark's defaults
            PYTHONPATH="",  # Python workers import the installed package, not a checkout
        )
        for folder in ("logs", "local", "conf"):
            (self.root / folder).mkdir()
        try:
            self.start()
        except BaseException:
            self.stop()
            raise

    # -- starting ------------------------------------------------------------------------

    def _spawn(self, name: str, *arguments: str, **env: str) -> subprocess.Popen[bytes]:
        log = self.root / "logs" / f"{name}.log"
        self._logs.append(log)
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *arguments],
                cwd=self.root,
                env={**self.env, **env},
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: Ctrl-C in a terminal is ours
            )
        self._procs.append(proc)
        return proc

    def start(self) -> None:
        """Start the master and the workers (at the same time: a worker retries until the
        master is there) and wait until every worker has registered with the master."""
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.webui_port),
        )
        for n in range(1, self.workers + 1):
            work = self.root / f"worker-{n}"
            work.mkdir()
            self._spawn(
                f"worker-{n}",
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--webui-port",
                "0",
                "--work-dir",
                str(work),
                self.master,
                SPARK_WORKER_DIR=str(work),
            )
        deadline = time.monotonic() + self.wait
        while True:
            for proc in self._procs:
                if proc.poll() is not None:
                    raise AssertionError(
                        f"{proc.args[1]} ended (status {proc.returncode})\n{self.log_tail()}"
                    )
            with contextlib.suppress(OSError, ValueError):
                if self.alive_workers() == self.workers:
                    return
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{self.workers} workers did not register with {self.master} in "
                    f"{self.wait} s\n{self.log_tail()}"
                )
            time.sleep(0.5)

    # -- what it is doing ----------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """The master's JSON: ``workers``, ``aliveworkers``, ``activeapps``, ..."""
        url = f"http://127.0.0.1:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=10) as answer:
            state: dict[str, Any] = json.load(answer)
        return state

    def alive_workers(self) -> int:
        return sum(1 for w in self.state()["workers"] if w["state"] == "ALIVE")

    def processes(self) -> list[int]:
        """Every live process of the cluster: those whose working directory is under
        :attr:`root` (the master, the workers, their executors and Python workers)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cwd = Path(os.readlink(entry / "cwd"))
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z" and (cwd == self.root or self.root in cwd.parents):
                found.append(int(entry.name))
        return sorted(found)

    def executors(self) -> list[Executor]:
        """The executor JVMs running now (any application's)."""
        found = []
        for pid in self.processes():
            command = _cmdline(pid)
            if "org.apache.spark.executor.CoarseGrainedExecutorBackend" in command:
                found.append(
                    Executor(
                        pid, _argument(command, "--executor-id"), _argument(command, "--app-id")
                    )
                )
        return found

    def executor_of(self, pid: int) -> Executor:
        """The executor whose process tree holds ``pid`` (a Python worker, say)."""
        by_pid = {e.pid: e for e in self.executors()}
        current = pid
        while current > 1:
            if current in by_pid:
                return by_pid[current]
            stat = Path(f"/proc/{current}/stat").read_text()
            current = int(stat.rsplit(")", 1)[1].split()[1])
        raise AssertionError(f"process {pid} is not under an executor of {self.master}")

    def log_tail(self, lines: int = 15) -> str:
        out = []
        for log in self._logs:
            with contextlib.suppress(OSError):
                text = log.read_text(errors="replace").splitlines()
                out.append(f"--- {log.name}\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    # -- stopping ------------------------------------------------------------------------

    def stop(self) -> None:
        """SIGTERM to the workers (each kills its executors) and then the master, SIGKILL to
        whatever has not ended within ``wait``; then SIGKILL to any process of the cluster
        still alive (an orphaned Python worker, say), and the directory removed."""
        for proc in reversed(self._procs):  # the workers first, the master last
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=self.wait / 4)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        deadline = time.monotonic() + self.wait / 4
        while (left := self.processes()) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.leftover = left
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SparkCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class Driver:
    """A Spark application on ``cluster``: ``python JOB MASTER`` in a process of its own (a
    process holds one SparkContext, and the test process may hold a local one), which makes
    its session and then runs JOB's functions on request: :meth:`call` writes
    ``{"call": name, "args": {...}}`` as a line to its stdin and reads the line it prints
    after :data:`ANSWER`, ``{"result": ...}`` or ``{"error": "..."}``. JOB's ``main`` does
    that (tests/spark/spark_cluster_job.py)."""

    def __init__(self, cluster: SparkCluster, job: Path, wait: float = WAIT) -> None:
        self.cluster, self.wait = cluster, wait
        self.log = cluster.root / "logs" / f"driver-{time.monotonic_ns()}.log"
        self._log_file = self.log.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, str(job), cluster.master],
            cwd=cluster.root,
            env=cluster.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log_file,
            text=True,
        )
        self.lines = Lines(self.proc)
        #: (function, seconds) of each call so far.
        self.timings: list[tuple[str, float]] = []
        self.started = self.call("ready")

    def call(self, name: str, /, *, wait: float | None = None, **args: Any) -> Any:
        """Run JOB's ``name(spark, **args)`` in the driver; its result (JSON). An exception
        there fails the test with its traceback."""
        assert self.proc.stdin is not None
        started = time.monotonic()
        self.proc.stdin.write(json.dumps({"call": name, "args": args}) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + (wait or self.wait)
        while True:
            left = deadline - time.monotonic()
            try:
                line = self.lines.next(max(left, 0.01))
            except AssertionError as exc:
                raise AssertionError(f"{name}: {exc}\n{self.log_tail()}") from None
            if line.startswith(ANSWER):
                answer = json.loads(line[len(ANSWER) :])
                self.timings.append((name, time.monotonic() - started))
                if "error" in answer:
                    raise AssertionError(f"{name} failed in the driver:\n{answer['error']}")
                return answer["result"]

    def log_tail(self, lines: int = 30) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> None:
        """Close its stdin: it stops its session and exits."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=self.wait / 2)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.lines.rest(self.wait)
        self._log_file.close()

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
