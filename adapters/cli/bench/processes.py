"""CPU time by role in a Spark application on this machine, for ``bench spark``: the driver's
(its JVM and the Python process that runs a streaming source's planning: ``latestOffset``,
``partitions``, ``commit``) and the executors' (their JVMs and their Python workers, which
run the tasks). Read from ``/proc`` (Linux), sampled while the query runs: a process's figure
is its user and system time, so one that ends between two samples loses at most the time
since the last."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: What tells each role's processes apart, in their command lines: the driver's Python
#: processes run a streaming source's planning (``python_streaming_source_runner``) or
#: another of the driver's jobs for a Python data source (``pyspark.sql.worker.*``: look
#: it up, make it, plan a batch read, commit a write); the executors' run tasks
#: (``pyspark.daemon pyspark.worker``, and the workers it forks).
_DRIVER_PYTHON = ("python_streaming_source_runner", "pyspark.sql.worker.")
_EXECUTOR_JVM = "CoarseGrainedExecutorBackend"
_EXECUTOR_PYTHON = ("pyspark.daemon", "pyspark.worker")
_DRIVER_JVM = "org.apache.spark.deploy.SparkSubmit"

ROLES = ("driver JVM", "driver Python", "executor JVMs", "executor Python")


def role(command: str) -> str | None:
    """The role of a process with this command line (arguments joined by spaces), if it
    has one in a Spark application."""
    if any(name in command for name in _DRIVER_PYTHON):
        return "driver Python"
    if _EXECUTOR_JVM in command:
        return "executor JVMs"
    if any(name in command for name in _EXECUTOR_PYTHON):
        return "executor Python"
    if _DRIVER_JVM in command:
        return "driver JVM"
    return None


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def stat(pid: int | str) -> tuple[str, float] | None:
    """(parent pid, user plus system CPU seconds) of process ``pid``, from one read of
    ``/proc/PID/stat`` (None: gone, or not readable)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: fields after it.
    fields = data[data.rindex(b")") + 2 :].split()
    return fields[1].decode(), (int(fields[11]) + int(fields[12])) / _TICK


def _command(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


class CPUByRole:
    """CPU seconds each role of one Spark application used since :meth:`start`: the
    processes under ``root`` (the process that made the session: the driver's JVM and its
    Python processes, and in local mode the task workers), and the executors of
    application ``app_id`` on this machine (their JVMs name it on their command line) with
    the processes under them. Other applications' processes are not counted."""

    def __init__(self, root: int | None = None, app_id: str | None = None) -> None:
        self.root = str(os.getpid() if root is None else root)
        self.app_id = app_id
        self._ours: dict[str, bool] = {}
        self._roles: dict[str, str] = {}
        self._first: dict[str, float] = {}
        self._last: dict[str, float] = {}
        self._lock = threading.Lock()

    def sample(self) -> None:
        """Look at every process once: a process first seen counts from this sample if
        it was there at :meth:`start`, from nothing if it began after."""
        try:
            pids = [p for p in os.listdir("/proc") if p.isdigit()]
        except OSError:  # no /proc: nothing to measure
            return
        stats = {pid: stat(pid) for pid in pids}
        parents = {pid: got[0] for pid, got in stats.items() if got is not None}
        with self._lock:
            for pid, got in stats.items():
                if got is None:
                    continue
                seconds = got[1]
                if pid not in self._roles:
                    kind = role(_command(pid))
                    if kind is None or not self._belongs(pid, parents):
                        continue
                    self._roles[pid] = kind
                    self._first[pid] = 0.0 if self._started else seconds
                self._last[pid] = seconds

    _started = False

    def _belongs(self, pid: str, parents: dict[str, str]) -> bool:
        """Whether ``pid`` is under :attr:`root`, or is (or is under) an executor of
        :attr:`app_id`."""
        seen: list[str] = []
        known: bool | None = None
        current: str | None = pid
        while current is not None and current not in ("0", "1") and len(seen) < 64:
            known = self._ours.get(current)
            if known is not None:
                break
            if current == self.root:
                known = True
                break
            if self.app_id is not None:
                command = _command(current)
                if role(command) == "executor JVMs":
                    known = self.app_id in command
                    break
            seen.append(current)
            current = parents.get(current)
        result = bool(known)
        for each in seen:
            self._ours[each] = result
        return result

    def start(self) -> None:
        self.sample()
        self._started = True

    def seconds(self) -> dict[str, float]:
        """CPU seconds by role (every role of :data:`ROLES`, 0.0 where none was seen)."""
        totals = dict.fromkeys(ROLES, 0.0)
        with self._lock:
            for pid, kind in self._roles.items():
                totals[kind] += max(0.0, self._last.get(pid, 0.0) - self._first[pid])
        return totals

    def mark(self) -> None:
        """Remember the figures now (a fresh sample): :meth:`since_mark` gives what each
        role used after it."""
        self.sample()
        self._mark = self.seconds()

    _mark: dict[str, float] | None = None

    def since_mark(self) -> dict[str, float] | None:
        """CPU seconds by role since :meth:`mark` (None: never marked)."""
        if self._mark is None:
            return None
        now = self.seconds()
        return {kind: max(0.0, now[kind] - self._mark[kind]) for kind in ROLES}


@contextmanager
def measuring(app_id: str | None = None, every: float = 0.2) -> Iterator[CPUByRole]:
    """A :class:`CPUByRole` of this process's Spark application (``app_id``: its
    executors') started now and sampled every ``every`` seconds (in a thread) until the
    block ends, then once more."""
    cpu = CPUByRole(app_id=app_id)
    cpu.start()
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(every):
            cpu.sample()

    thread = threading.Thread(target=run, name="bench-cpu", daemon=True)
    thread.start()
    try:
        yield cpu
    finally:
        stop.set()
        thread.join()
        cpu.sample()
