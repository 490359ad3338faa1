"""Reconnection through a planned restart and a crash (issue 14): ``amqp-sansio broker
--store DIR`` (the user's command; started again on the port it listened on, so that it
comes back where it was) is stopped with SIGTERM and later killed with SIGKILL, each time
started again at once, in the middle of a stream of 10,000 durable messages from
``connect(url, reconnect=True)`` in each adapter. Every message arrives (at least once), and
the log of ``amqp_sansio.adapters.reconnect`` tells each disconnect and reconnect, without
credentials.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import aio, sockets
from support.broker_process import BrokerProcess

import amqp_sansio as a

trio = pytest.importorskip("trio", reason="trio is in the 'trio' and 'test' extras")
from amqp_sansio.adapters import trio_adapter  # noqa: E402

WAIT = 60.0
STREAM = int(os.environ.get("AMQP_SANSIO_RECONNECT_STREAM", "10000"))
LOGGER = "amqp_sansio.adapters.reconnect"


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    started = BrokerProcess(store=tmp_path / "store", wait=WAIT)
    yield started
    started.stop()


class Restarts:
    """In a thread: once ``sent()`` passes a third of the stream, SIGTERM and start again;
    past two thirds, SIGKILL and start again. ``statuses``: the stopped brokers' exits."""

    def __init__(self, broker: BrokerProcess, sent: Callable[[], int]) -> None:
        self.statuses: list[int] = []
        self.error: BaseException | None = None
        self._broker, self._sent = broker, sent
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for at, sig in ((STREAM // 3, signal.SIGTERM), (2 * STREAM // 3, signal.SIGKILL)):
                deadline = time.monotonic() + WAIT
                while self._sent() < at:
                    assert time.monotonic() < deadline, "the stream stalled"
                    time.sleep(0.005)
                self.statuses.append(self._broker.restart(sig))
        except BaseException as exc:  # reported by join()
            self.error = exc

    def join(self) -> list[int]:
        self._thread.join(WAIT)
        if self.error is not None:
            raise self.error
        return self.statuses


def durable(i: int) -> a.Message:
    return a.Message(header=a.Header(durable=True), body=f"m{i}")


def stream_with(adapter: str, url: str, broker: BrokerProcess) -> tuple[list[int], int]:
    """Send the stream with ``adapter`` through the restarts; every outcome must be
    accepted. Returns the stopped brokers' exits and the connection's reconnects."""
    sent = [0]
    restarts = Restarts(broker, lambda: sent[0])
    if adapter == "sockets":
        with sockets.connect(url, reconnect=True, timeout=WAIT) as conn:
            sender = conn.sender("stream")
            trackers = []
            for i in range(STREAM):
                trackers.append(sender.send(durable(i), wait=False, timeout=WAIT))
                sent[0] += 1
            outcomes = [t.outcome(timeout=WAIT) for t in trackers]
            reconnects = conn.reconnects
    elif adapter == "aio":

        async def run() -> tuple[list[Any], int]:
            async with aio.connect(url, reconnect=True) as conn:
                sender = await conn.sender("stream")
                trackers = []
                for i in range(STREAM):
                    trackers.append(await sender.send(durable(i), wait=False))
                    sent[0] += 1
                got = [await asyncio.wait_for(t.outcome(), WAIT) for t in trackers]
                return got, conn.reconnects

        outcomes, reconnects = asyncio.run(run())
    else:

        async def run_trio() -> tuple[list[Any], int]:
            async with trio_adapter.connect(url, reconnect=True) as conn:
                sender = await conn.sender("stream")
                trackers = []
                with trio.fail_after(WAIT * 2):
                    for i in range(STREAM):
                        trackers.append(await sender.send(durable(i), wait=False))
                        sent[0] += 1
                    got = [await t.outcome() for t in trackers]
                return got, conn.reconnects

        outcomes, reconnects = trio.run(run_trio)
    statuses = restarts.join()
    assert all(isinstance(outcome, a.Accepted) for outcome in outcomes)
    return statuses, reconnects


def received(url: str) -> Counter[str]:
    """Everything at ``stream``, accepted: how many times each body came."""
    seen: Counter[str] = Counter()
    with sockets.connect(url, timeout=WAIT) as conn:
        receiver = conn.receiver("stream", credit=500)
        while True:
            try:
                delivery = receiver.receive(timeout=2.0)
            except TimeoutError:
                break  # nothing more came
            assert delivery is not None
            seen[delivery.message.body.value] += 1
            delivery.accept()
    return seen


@pytest.mark.parametrize("adapter", ["sockets", "aio", "trio"])
def test_a_stream_through_sigterm_and_sigkill(
    adapter: str, broker: BrokerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    started = time.monotonic()
    statuses, reconnects = stream_with(adapter, f"{broker.url}/stream", broker)
    assert statuses == [0, -signal.SIGKILL]  # SIGTERM is a clean stop
    assert reconnects >= 2
    seen = received(broker.url)
    assert set(seen) == {f"m{i}" for i in range(STREAM)}  # nothing lost
    duplicates = sum(seen.values()) - STREAM
    texts = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    lost = [t for t in texts if "was lost" in t]
    back = [t for t in texts if t.startswith("reconnected to")]
    assert len(lost) >= 2 and len(back) >= 2, texts
    # The planned stop says so: the broker's close carries amqp:connection:forced.
    assert any("amqp:connection:forced" in t for t in lost), lost
    print(
        f"{adapter}: {STREAM:,} messages, {reconnects} reconnects, {duplicates} duplicates, "
        f"{time.monotonic() - started:.1f} s"
    )


def test_the_log_has_no_credentials(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    users = tmp_path / "users.json"
    users.write_text(
        json.dumps({"users": {"alice": {"password": "s3cret-pw", "send": ["*"], "receive": ["*"]}}})
    )
    broker = BrokerProcess("--users", str(users), store=tmp_path / "store", wait=WAIT)
    caplog.set_level(logging.INFO, logger=LOGGER)
    try:
        with sockets.connect(
            f"amqp://alice:s3cret-pw@127.0.0.1:{broker.port}/q", reconnect=True, timeout=WAIT
        ) as conn:
            sender = conn.sender()
            assert isinstance(sender.send(durable(1), timeout=WAIT), a.Accepted)
            assert broker.restart(signal.SIGTERM) == 0
            assert isinstance(sender.send(durable(2), timeout=WAIT), a.Accepted)
            assert conn.reconnects == 1
    finally:
        broker.stop()
    texts = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert texts and all("s3cret-pw" not in t for t in texts), texts
    assert any("amqp://alice:***@127.0.0.1" in t for t in texts), texts
