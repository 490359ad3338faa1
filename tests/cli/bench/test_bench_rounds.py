"""The rounds' runners of our async adapters (:mod:`amqp_sansio.adapters.cli.bench.rounds`):
one async body run on asyncio and on trio, its producer and consumer together."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from amqp_sansio.adapters import aio, trio_adapter
from amqp_sansio.adapters.cli.bench import rounds


async def _pause(adapter: Any) -> None:
    """Let the event loop run something else (each library's own way)."""
    if adapter is aio:
        import asyncio

        await asyncio.sleep(0)
    else:
        import trio.lowlevel

        await trio.lowlevel.checkpoint()


@pytest.mark.parametrize(
    ("on_loop", "expected"), [(rounds.on_asyncio, aio), (rounds.on_trio, trio_adapter)]
)
def test_an_async_run_gets_its_adapter_and_runs_both_sides_together(
    on_loop: Callable[..., float], expected: Any
) -> None:
    """The body is given the adapter's module and its arguments, its result comes back,
    and ``both`` returns only once both sides did, each having started before either
    ended (run one after the other, a side would end before the other started)."""
    log: list[str] = []
    seen: list[tuple[Any, ...]] = []

    async def run(
        adapter: Any,
        both: rounds.Both,
        url: str,
        count: int,
        body: bytes,
        progress: Callable[[int], None] | None,
    ) -> float:
        seen.append((adapter, url, count, body, progress))

        def side(name: str) -> Callable[[], Awaitable[None]]:
            async def work() -> None:
                log.append(f"{name} start")
                for _ in range(3):
                    await _pause(adapter)
                log.append(f"{name} end")

            return work

        await both(side("producer"), side("consumer"))
        return 1.5

    assert on_loop(run, "amqp://h", 7, b"xy", print) == 1.5
    assert seen == [(expected, "amqp://h", 7, b"xy", print)]
    assert sorted(log[:2]) == ["consumer start", "producer start"]
    assert sorted(log[2:]) == ["consumer end", "producer end"]
