"""What the connection-limit tests share (issue 16, part B): a well-behaved client that
goes on sending and receiving while hostile ones hit the limits, and the broker process's
figures from Linux /proc. The broker itself is ``support.broker_process.BrokerProcess``.

::

    with BrokerProcess() as broker, GoodClient(broker.url) as good:
        ...                                 # hostile clients
        good.goes_on()                      # it still sends and receives
        fds(broker.proc.pid), rss(broker.proc.pid)  # memory(pid): VmRSS and VmHWM
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from amqp_sansio.adapters import sockets

import amqp_sansio as a

__all__ = ["WAIT", "GoodClient", "Sampler", "fds", "memory", "rss"]

#: The bound of every wait on the broker's answers, seconds.
WAIT = 10.0


def fds(pid: int) -> int:
    """The open file descriptors of process ``pid`` (Linux /proc)."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def memory(pid: int) -> dict[str, int]:
    """The resident memory of process ``pid`` now (``VmRSS``) and at its peak (``VmHWM``),
    bytes (Linux /proc)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) * 1024
    return found


def rss(pid: int) -> int:
    """The resident memory of process ``pid`` now, bytes (Linux /proc)."""
    return memory(pid)["VmRSS"]


class Sampler:
    """VmRSS of process ``pid`` read every 10 ms on a thread while the block runs: its
    :attr:`peak`."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(rss(self.pid))
            time.sleep(0.01)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak(self) -> int:
        return max(self.samples)


class GoodClient:
    """A well-behaved client: sends a message, has it accepted and receives it back, again
    and again, on a thread of its own, until the block ends; ``rounds`` counts the round
    trips, ``errors`` what went wrong (nothing should). Entering and leaving the block
    wait until it has made progress; :meth:`goes_on` checks it still does (it is not stuck
    behind the hostile clients)."""

    def __init__(self, url: str, address: str = "good") -> None:
        self.url, self.address = url, address
        self.rounds = 0
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> GoodClient:
        self._thread.start()
        self.goes_on(1)
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.goes_on()
        finally:
            self._stop.set()
            self._thread.join(WAIT)
        assert not self.errors, self.errors

    def _run(self) -> None:
        try:
            with sockets.connect(self.url, timeout=WAIT) as conn:
                sender = conn.sender(self.address)
                receiver = conn.receiver(self.address, credit=10)
                while not self._stop.is_set():
                    body = b"round %d" % self.rounds
                    assert isinstance(sender.send(a.Message(body=body)), a.Accepted)
                    delivery = receiver.receive(timeout=WAIT)
                    assert delivery is not None, "no message back within the wait"
                    assert delivery.message.body == a.Data(body)
                    delivery.accept()
                    self.rounds += 1
                    time.sleep(0.01)
        except BaseException as exc:  # reported by goes_on and __exit__
            self.errors.append(exc)

    def goes_on(self, more: int = 3) -> None:
        """``more`` round trips happen from now on (within :data:`WAIT`)."""
        before = self.rounds
        deadline = time.monotonic() + WAIT
        while self.rounds < before + more and not self.errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert self.rounds >= before + more and not self.errors, self.errors
