"""``amqp-sansio broker`` started as a user starts it, for the connection-limit tests: the
command in a process of its own on ``--port 0`` (plus any options given), its address read
from its first line, its stderr kept, stopped with SIGTERM. A minimal starter until the
shared ``support.broker_process`` lands (then these tests move to it).

::

    with CommandBroker() as broker:         # amqp-sansio broker --port 0
        socket.create_connection((broker.host, broker.port))
        broker.fds(), broker.rss()          # the broker process's /proc figures
        with GoodClient(broker.url) as good:  # sends and receives on a thread
            ...
            good.goes_on()                  # it still does
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import TracebackType

from amqp_sansio.adapters import sockets

__all__ = ["START_WAIT", "WAIT", "CommandBroker", "GoodClient", "command"]

#: The bound of a wait on the process (its start, its stop), seconds.
START_WAIT = 30.0
#: The bound of every wait on the broker's answers, seconds.
WAIT = 10.0


def command(*args: str) -> list[str]:
    """``amqp-sansio ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "amqp_sansio.adapters.cli", *args]


class CommandBroker:
    """``amqp-sansio broker --port 0 OPTIONS`` for the duration of a ``with`` block."""

    def __init__(self, *options: str) -> None:
        self.options = options
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.host = ""
        self.port = 0
        self._stderr: list[str] = []
        self._reader: threading.Thread | None = None

    def __enter__(self) -> CommandBroker:
        proc = subprocess.Popen(
            command("broker", "--port", "0", *self.options),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.proc = proc
        assert proc.stdout is not None and proc.stderr is not None
        err = proc.stderr
        self._reader = threading.Thread(target=lambda: self._stderr.extend(err), daemon=True)
        self._reader.start()
        first: list[str] = []
        line_reader = threading.Thread(
            target=lambda: first.append(proc.stdout.readline()),  # type: ignore[union-attr]
            daemon=True,
        )
        line_reader.start()
        line_reader.join(START_WAIT)
        if not first or "listening on" not in first[0]:
            self._stop()
            raise AssertionError(f"the broker did not start: {first!r} {self.stderr!r}")
        self.url = first[0].split()[-1]
        self.host, _, port = self.url.removeprefix("amqp://").rpartition(":")
        self.port = int(port)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()

    def _stop(self) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(START_WAIT)
                except subprocess.TimeoutExpired:  # pragma: no cover - a broker that hangs
                    proc.kill()
                    proc.wait(START_WAIT)
                    raise AssertionError("the broker did not stop on SIGTERM") from None
        finally:
            if self._reader is not None:
                self._reader.join(START_WAIT)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def stderr(self) -> str:
        """What the broker wrote to stderr so far."""
        return "".join(self._stderr)

    def fds(self) -> int:
        """The broker process's open file descriptors (Linux /proc)."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def rss(self) -> int:
        """The broker process's resident memory, bytes (Linux /proc)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS")  # pragma: no cover


class GoodClient:
    """A well-behaved client: sends a message and receives it back, again and again, on a
    thread of its own, until stopped; ``rounds`` counts the round trips, ``errors`` what
    went wrong (nothing should)."""

    def __init__(self, url: str, address: str = "good") -> None:
        self.url, self.address = url, address
        self.rounds = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> GoodClient:
        self._thread.start()
        deadline = time.monotonic() + WAIT
        while self.rounds == 0 and not self.errors and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.rounds > 0, self.errors
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(WAIT)
        assert not self.errors, self.errors

    def _run(self) -> None:
        try:
            with sockets.connect(self.url, timeout=WAIT) as conn:
                sender = conn.sender(self.address)
                receiver = conn.receiver(self.address, credit=10)
                while not self._stop.is_set():
                    sender.send(f"m{self.rounds}".encode())
                    delivery = receiver.receive(timeout=WAIT)
                    assert delivery is not None, "no message back within the wait"
                    delivery.accept()
                    self.rounds += 1
                    time.sleep(0.05)
        except BaseException as exc:  # reported by __exit__
            self.errors.append(exc)

    def goes_on(self) -> None:
        """More round trips happen from now on."""
        before = self.rounds
        deadline = time.monotonic() + WAIT
        while self.rounds < before + 3 and not self.errors and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.rounds >= before + 3 and not self.errors, self.errors
