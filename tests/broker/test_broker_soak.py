"""A load test bounded in time: a producer at a steady rate and a consumer through the
broker process, for ``AMQP_SANSIO_BROKER_SOAK`` seconds (default 15; the issue's minute is
``AMQP_SANSIO_BROKER_SOAK=60``). Every second the broker process's resident memory (Linux
/proc) and the messages moved are sampled: the rate must hold (over every three seconds),
and the memory stay flat once warmed up."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from amqp_sansio.adapters import aio
from support.broker_process import BrokerProcess

import amqp_sansio as a

#: A soak measures throughput: nothing of the other worker runs beside it.
pytestmark = pytest.mark.alone

SECONDS = float(os.environ.get("AMQP_SANSIO_BROKER_SOAK", "15"))
RATE = 2000  # messages per second offered
WARM_UP = 3  # seconds before the memory baseline is taken


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")  # pragma: no cover


async def _soak(url: str, pid: int) -> tuple[list[int], list[int], int]:
    moved = 0
    samples: list[int] = []
    memory: list[int] = []
    stop = asyncio.Event()

    async def produce() -> None:
        async with aio.connect(url, timeout=30) as conn:
            sender = await conn.sender("soak")
            start = time.monotonic()
            sent = 0
            pending = []
            while not stop.is_set():
                due = int((time.monotonic() - start) * RATE)
                while sent < due:
                    body = a.Message(header=a.Header(ttl=600_000), body=b"x" * 256)
                    pending.append(await sender.send(body, wait=False))
                    sent += 1
                if len(pending) > 1000:
                    for t in pending:
                        await t.outcome()
                    pending.clear()
                await asyncio.sleep(0.01)
            for t in pending:
                await t.outcome()

    async def consume() -> None:
        nonlocal moved
        async with aio.connect(url, timeout=30) as conn:
            receiver = await conn.receiver("soak", credit=500)
            while not stop.is_set():
                try:
                    d = await receiver.receive(timeout=0.2)
                except TimeoutError:
                    continue
                assert d is not None
                d.accept()
                moved += 1

    async def sample() -> None:
        last = 0
        for _ in range(int(SECONDS)):
            await asyncio.sleep(1)
            samples.append(moved - last)
            last = moved
            memory.append(_rss(pid))
        stop.set()

    await asyncio.gather(produce(), consume(), sample())
    return samples, memory, moved


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_steady_rate_and_flat_memory() -> None:
    with BrokerProcess() as broker:
        samples, memory, moved = asyncio.run(_soak(broker.url, broker.proc.pid))
    steady = samples[1:]  # the first second starts the connections
    print(f"\nmessages/s each second: {samples}\nbroker RSS (MiB): {[m >> 20 for m in memory]}")
    assert moved >= RATE * (SECONDS - 2)
    # The rate holds: every three seconds move at least half of what was offered in them
    # (a window, not each second: a machine's scheduler may stall the broker process for
    # a moment, after which it catches up; a broker that slows down stays slow).
    windows = [sum(steady[i : i + 3]) for i in range(len(steady) - 2)]
    assert min(windows) >= 3 * RATE * 0.5, steady
    baseline = max(memory[:WARM_UP])
    assert max(memory[WARM_UP:]) <= baseline * 1.1 + (4 << 20), memory  # flat
