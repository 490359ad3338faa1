"""The rounds of the benchmarks that run whole workloads through a broker
(``bench loopback --protocol 0-9-1`` and ``--protocol 0-10``), whatever the protocol: each
side (one of our adapters, or a peer) runs the same work in turn, round after round, and
keeps its median rate; each of ours is then put next to each peer, with the ratio.

A side is a :class:`Side`: its label, whether it is ours, and a :data:`Runner` that does the
work once and returns the seconds it took. A peer whose run fails is left out after its
first failure (the caller is told); ours failing raises, since then there is nothing to
measure. Machines are noisy: alternating rounds let a burst of load fall on every side
alike, and the medians keep one slow round from deciding (docs/performance.rst).

Ours on the asyncio and trio adapters are one async body per protocol (an
:data:`AsyncRun`), run by :func:`on_asyncio` and :func:`on_trio`, each with its event
loop's way of running producer and consumer together (a :data:`Both`).
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from typing import Any, NamedTuple

from .results import Result

__all__ = [
    "AsyncRun",
    "Both",
    "RoundProgress",
    "Runner",
    "Side",
    "alternate",
    "broker_for_bench",
    "entry",
    "format_pairs",
    "on_asyncio",
    "on_trio",
    "reporter",
]

#: A side's run: ``(where, count, body=, progress=) -> seconds`` (``where``: the broker's
#: URL; ``progress``: called with the count done so far, now and then).
Runner = Callable[..., float]

#: ``progress(label, done, rate)``: now and then during each run (``rate`` None) and once
#: at its end, with the run's messages per second.
RoundProgress = Callable[[str, int, float | None], None]


#: Runs two coroutine functions concurrently until both return (asyncio's gather, trio's
#: nursery).
Both = Callable[[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]], Awaitable[None]]

#: One run of ours on an async adapter: ``(adapter, both, url, count, body, progress) ->
#: seconds``, ``adapter`` the module (:mod:`amqp_sansio.adapters.aio` or
#: :mod:`~amqp_sansio.adapters.trio_adapter`) whose ``connect`` it calls, ``both`` how it
#: runs its producer and consumer together.
AsyncRun = Callable[
    [Any, Both, str, int, bytes, Callable[[int], None] | None], Coroutine[Any, Any, float]
]


class Side(NamedTuple):
    """One side of the rounds: ``label`` (``"ours asyncio"``, ``"pika"``...), its runner,
    where the runner goes (a broker's URL), and whether it is ours."""

    label: str
    runner: Runner
    where: str
    ours: bool


def reporter(count: int, progress: Callable[[int], None] | None) -> Callable[[int], None]:
    """``progress`` called about a hundred times over a run (never with ``count``)."""
    if progress is None:
        return lambda n: None
    step = max(1, count // 100)

    def report(n: int) -> None:
        if n % step == 0 and n < count:
            progress(n)

    return report


async def _asyncio_both(a: Callable[[], Awaitable[None]], b: Callable[[], Awaitable[None]]) -> None:
    await asyncio.gather(a(), b())


async def _trio_both(a: Callable[[], Awaitable[None]], b: Callable[[], Awaitable[None]]) -> None:
    import trio

    async with trio.open_nursery() as nursery:
        nursery.start_soon(a)
        nursery.start_soon(b)


def on_asyncio(
    run: AsyncRun, url: str, count: int, body: bytes, progress: Callable[[int], None] | None
) -> float:
    """Seconds ``run`` takes through our asyncio adapter (a new event loop, in this
    thread), its producer and consumer run together by ``asyncio.gather``."""
    from ... import aio

    return asyncio.run(run(aio, _asyncio_both, url, count, body, progress))


def on_trio(
    run: AsyncRun, url: str, count: int, body: bytes, progress: Callable[[int], None] | None
) -> float:
    """Seconds ``run`` takes through our trio adapter (a new trio run, in this thread),
    its producer and consumer run together in a nursery."""
    import trio

    from ... import trio_adapter

    return float(trio.run(run, trio_adapter, _trio_both, url, count, body, progress))


@contextlib.contextmanager
def broker_for_bench(enabled: bool = True) -> Iterator[str | None]:
    """Our broker (``amqp-sansio broker --port 0``, in a process of its own, so that it
    has a core of its own on a machine that has two) for the block, and the URL a client
    reaches it at (``amqp://guest:guest@127.0.0.1:<port>``, whatever the protocol: the
    broker answers each on the one port); None when not ``enabled``."""
    if not enabled:
        yield None
        return
    command = [
        *(sys.executable, "-m", "amqp_sansio.adapters.cli", "broker"),
        *("--port", "0", "--log-level", "error"),
    ]
    with (
        tempfile.TemporaryFile("w+") as log,
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True) as proc,
    ):
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if "listening on" not in line:
                proc.wait(timeout=10)
                log.seek(0)
                raise RuntimeError(f"our broker did not start: {log.read().strip()}")
            where = line.split()[-1].removeprefix("amqp://").rstrip("/")
            yield f"amqp://guest:guest@{where}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def alternate(
    sides: Sequence[Side],
    messages: int,
    body: bytes,
    rounds: int,
    seconds: float,
    progress: RoundProgress | None = None,
    on_peer_failure: Callable[[str, BaseException], None] | None = None,
    *,
    cpu_rates: dict[str, float] | None = None,
) -> dict[str, float]:
    """Each side's median rate (``messages`` per second) over alternating rounds: every
    side runs once a round, in order, at least ``rounds`` rounds, more until each has run
    ``seconds``. A peer that fails is dropped (``on_peer_failure(label, error)``), ours
    failing raises; a side with no round has no entry. ``cpu_rates``, when given, is
    filled with each side's median of ``messages`` per second of this process's CPU time
    (``time.process_time``, every thread, the run's opening and closing included): what
    the side itself costs when the broker runs in a process of its own."""
    rates: dict[str, list[float]] = {side.label: [] for side in sides}
    per_cpu: dict[str, list[float]] = {side.label: [] for side in sides}
    spent = dict.fromkeys(rates, 0.0)
    live = list(sides)

    def wanted() -> bool:
        return any(len(rates[s.label]) < rounds or spent[s.label] < seconds for s in live)

    while wanted():
        for side in list(live):
            label = side.label
            name = f"{label}, round {len(rates[label]) + 1}"
            report = None if progress is None else (lambda k, name=name: progress(name, k, None))
            cpu = time.process_time()
            try:
                elapsed = side.runner(side.where, messages, body=body, progress=report)
            except Exception as exc:
                if side.ours:
                    raise
                live.remove(side)
                if on_peer_failure is not None:
                    on_peer_failure(label, exc)
                continue
            per_cpu[label].append(messages / max(time.process_time() - cpu, 1e-9))
            spent[label] += elapsed
            rates[label].append(messages / elapsed)
            if progress is not None:
                progress(name, messages, messages / elapsed)
    if cpu_rates is not None:
        cpu_rates.update({label: statistics.median(r) for label, r in per_cpu.items() if r})
    return {label: statistics.median(r) for label, r in rates.items() if r}


def entry(ours: float, peer: str, theirs: float | None, unit: str = "msg/s") -> dict[str, Any]:
    """One pair of the result: our median, the peer's under its name (None: not
    measured), the ratio (ours divided by theirs: above 1 we are faster) and the unit."""
    return {
        "ours": round(ours, 1),
        peer: None if theirs is None else round(theirs, 1),
        "ratio": None if theirs is None else round(ours / theirs, 3),
        "unit": unit,
    }


def format_pairs(title: str, results: Result) -> str:
    """The results as a table: each row ours, the peer's figure and name, the ratio."""
    width = max(10, *(len(name) + 2 for name in results)) if results else 10
    lines = [title, f"{'':{width}}{'ours':>12}{'theirs':>12}{'ratio':>9}  peer"]
    for name, r in results.items():
        (peer,) = (k for k in r if k not in ("ours", "ratio", "unit"))
        theirs = "n/a" if r[peer] is None else f"{r[peer]:,.0f}"
        ratio = "n/a" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        lines.append(f"{name:{width}}{r['ours']:>12,.0f}{theirs:>12}{ratio:>9}  {peer}")
    return "\n".join(lines)
