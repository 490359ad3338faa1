"""What the connection-limit tests share (issue 16, part B): a well-behaved client that
goes on sending and receiving while hostile ones hit the limits, and the broker process's
figures from Linux /proc. The broker itself is ``support.broker_process.BrokerProcess``.

::

    with BrokerProcess() as broker, GoodClient(broker.url) as good:
        ...                                 # hostile clients
        good.goes_on()                      # it still sends and receives
        fds(broker.proc.pid), rss(broker.proc.pid)
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from amqp_sansio.adapters import sockets

__all__ = ["WAIT", "GoodClient", "fds", "rss"]

#: The bound of every wait on the broker's answers, seconds.
WAIT = 10.0


def fds(pid: int) -> int:
    """The open file descriptors of process ``pid`` (Linux /proc)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss(pid: int) -> int:
    """The resident memory of process ``pid``, bytes (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
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
