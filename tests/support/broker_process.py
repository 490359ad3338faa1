"""``amqp-sansio broker`` in a process of its own, started exactly as a user starts it: the
installed command, its default options (``--port 0`` unless a port is given), stopped with
SIGTERM as a service manager stops it, or killed with SIGKILL, and started again on the same
port and store. Also what other tests that run programs share: :func:`amqp_sansio_command`,
:class:`Lines` (a program's output, line by line, with time-outs) and :func:`free_port`.

::

    from support.broker_process import BrokerProcess

    with BrokerProcess() as broker:                        # amqp-sansio broker --port 0
        with sockets.connect(f"{broker.url}/orders") as conn: ...

    broker = BrokerProcess("--users", str(users), store=tmp_path / "store")
    tls = BrokerProcess("--tls-cert", "server.pem", "--tls-key", "server.key", cwd=tmp_path)
    tls.tls_url                                            # amqps://127.0.0.1:<tls_port>
    assert broker.restored == 0                            # "N durable messages restored"
    assert broker.kill() == -signal.SIGKILL                # a crash: no clean stop
    broker.restart()                                       # same port, store and options
    assert broker.stop() == 0                              # SIGTERM: it exits by itself
    broker.log                                             # what it wrote to stderr

Every wait is bounded (``wait``, :data:`WAIT` by default): a broker that does not start,
print its lines, or stop on SIGTERM fails the test, saying so, with its stderr.
"""

from __future__ import annotations

import queue
import re
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

__all__ = [
    "LOG_TIME",
    "WAIT",
    "BrokerProcess",
    "Lines",
    "amqp_sansio_command",
    "free_port",
    "untimed",
]

#: The default bound of every wait on the process (start, a line, stop), seconds.
WAIT = 30.0


#: What begins each line of the broker's log: its time, ISO 8601 in UTC to the millisecond,
#: and a space (``2026-12-05T09:14:05.123Z amqp-sansio broker: ...``).
LOG_TIME = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z ")


def untimed(line: str) -> str:
    """A line of the broker's log without its time, which it must begin with (the test
    fails, saying so, when it does not)."""
    found = LOG_TIME.match(line)
    assert found is not None, f"the broker's log line has no time first: {line!r}"
    return line[found.end() :]


def amqp_sansio_command() -> list[str]:
    """The installed ``amqp-sansio`` command: the console script of this interpreter's
    environment (next to it in a virtual environment, else in its scripts directory); the
    module it runs (``python -m amqp_sansio.adapters.cli``) where no script is installed."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        if (folder / "amqp-sansio").is_file():
            return [str(folder / "amqp-sansio")]
    return [sys.executable, "-m", "amqp_sansio.adapters.cli"]


def free_port() -> int:
    """A loopback port nothing listens on now: one to be refused at, or one for a program
    that must be told its port before it listens (Proton's ``Container.listen``). A broker
    needs none: it starts on ``--port 0`` and says where it listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Lines:
    """The lines a process prints, read by a thread of their own, so that a test waits for
    the next one with a time-out (select() cannot see what a text stream has buffered)."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.queue: queue.Queue[str | None] = queue.Queue()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:
            for line in self.proc.stdout:
                self.queue.put(line)
        self.queue.put(None)

    def next(self, timeout: float) -> str:
        """The next line; fails the test if none comes within ``timeout`` seconds, or if the
        process ends first."""
        try:
            line = self.queue.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{self.proc.args!r} printed nothing in {timeout} s") from None
        if line is None:
            self.queue.put(None)
            raise AssertionError(
                f"{self.proc.args!r} ended (status {self.proc.poll()}) without a line"
            )
        return line

    def rest(self, timeout: float) -> list[str]:
        """Every line still to come, once the process has ended."""
        self.proc.wait(timeout=timeout)
        lines = []
        while (line := self.queue.get(timeout=timeout)) is not None:
            lines.append(line)
        self.queue.put(None)
        return lines


class BrokerProcess:
    """``amqp-sansio broker --port PORT [--store STORE] [OPTIONS...]``, started at once and
    running until :meth:`stop` (or the end of a ``with`` block).

    ``port``: 0 (the default) lets the system choose; :attr:`port` and :attr:`url` say where
    it listens. ``store``: the durable store's directory; :attr:`restored` is then the count
    the broker prints of the messages it restored (``None`` without a store). ``options``:
    further command-line options, as strings (``"--users", path``). With ``--tls-cert``
    among them the broker also listens for amqps, on ``--tls-port 0`` unless the options
    give one: :attr:`tls_port` and :attr:`tls_url` say where (None without); with
    ``--ws-port`` or ``--wss-port``, :attr:`ws_url` or :attr:`wss_url`. ``cwd``: the
    directory it runs in (relative paths in the options are from there)."""

    def __init__(
        self,
        *options: str,
        port: int = 0,
        store: Path | None = None,
        wait: float = WAIT,
        cwd: Path | None = None,
    ) -> None:
        self.options = options
        self.store = store
        self.wait = wait
        self.cwd = cwd
        self.port = port
        self.url = ""
        self.tls_port: int | None = None
        self.tls_url: str | None = None
        self.ws_url: str | None = None
        self.wss_url: str | None = None
        self.restored: int | None = None
        self._log: list[str] = []
        self.start()

    @property
    def command(self) -> list[str]:
        """The command line that starts it (on its current port)."""
        command = [*amqp_sansio_command(), "broker", "--port", str(self.port)]
        if self.store is not None:
            command += ["--store", str(self.store)]
        if "--tls-cert" in self.options and "--tls-port" not in self.options:
            command += ["--tls-port", str(self.tls_port or 0)]
        return [*command, *self.options]

    @property
    def log(self) -> str:
        """What the broker wrote to stderr (its log) so far; all of it once stopped."""
        return "".join(self._log)

    def wait_for_log(self, text: str, timeout: float = 10.0) -> str:
        """The log once it holds ``text`` (the broker writes a connection's line as it
        ends, after the client has gone), or as it is after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while text not in self.log and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.log

    @property
    def log_lines(self) -> list[str]:
        """The log's lines without their times, each checked to begin with one
        (:func:`untimed`)."""
        return [untimed(line) for line in self.log.splitlines()]

    def start(self) -> None:
        """Start the process and wait until it listens (and has restored its store)."""
        self.proc = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=self.cwd
        )
        self._stderr = threading.Thread(target=self._read_log, args=(self.proc,), daemon=True)
        self._stderr.start()
        self.lines = Lines(self.proc)
        try:
            line = self.lines.next(self.wait)
            assert "listening on amqp://127.0.0.1:" in line, line
            self.url = line.split()[-1]
            port = urlsplit(self.url).port
            assert port is not None and (self.port in (0, port)), (self.port, line)
            self.port = port
            if "--tls-cert" in self.options:
                line = self.lines.next(self.wait)
                assert "listening on amqps://127.0.0.1:" in line, line
                self.tls_url = line.split()[-1]
                self.tls_port = urlsplit(self.tls_url).port
            if "--ws-port" in self.options:
                line = self.lines.next(self.wait)
                assert "listening on ws://127.0.0.1:" in line, line
                self.ws_url = line.split()[-1]
            if "--wss-port" in self.options:
                line = self.lines.next(self.wait)
                assert "listening on wss://127.0.0.1:" in line, line
                self.wss_url = line.split()[-1]
            if self.store is not None:
                line = self.lines.next(self.wait)
                assert "restored" in line, line
                self.restored = int(line.split()[0])
        except BaseException as exc:
            self._end(signal.SIGKILL)
            raise AssertionError(f"{self.command!r} did not start: {exc}\n{self.log}") from exc

    def _read_log(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        with proc.stderr:
            for line in proc.stderr:
                self._log.append(line)

    def _end(self, sig: signal.Signals) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=self.wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(
                    f"the broker did not stop on {sig.name} in {self.wait} s\n{self.log}"
                ) from None
        self.lines.rest(self.wait)
        self._stderr.join(self.wait)
        return self.proc.returncode

    def stop(self) -> int:
        """SIGTERM, as a service manager stops it; it must exit by itself. Its exit status
        (that of its earlier end, if it has ended already)."""
        return self._end(signal.SIGTERM)

    def kill(self) -> int:
        """SIGKILL: a crash, no clean stop. Its exit status, ``-SIGKILL``."""
        status = self._end(signal.SIGKILL)
        assert status == -signal.SIGKILL, status
        return status

    def restart(self, sig: signal.Signals = signal.SIGTERM) -> int:
        """End it with ``sig`` (SIGTERM: a planned restart; SIGKILL: a crash) and start it
        again on the same port, store and options. The ended process's exit status."""
        status = self.kill() if sig is signal.SIGKILL else self._end(sig)
        self.start()
        return status

    def __enter__(self) -> BrokerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
