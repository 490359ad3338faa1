"""Our side of ``bench loopback --protocol 0-9-1`` (:mod:`.loopback091`): the 0-9-1 client
of the asyncio and trio adapters (``connect(url, protocol="0-9-1")``), a producer
connection and a consumer connection on one event loop, doing what the peers do."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from . import loopback091
from .loopback091 import CONFIRM_BATCH, LOOPBACK091_STALL, PREFETCH, Progress
from .pipe import PIPE_BODY_SIZE, Stalled

__all__ = ["ours091_asyncio", "ours091_trio"]

#: Runs two coroutine functions concurrently until both return (asyncio's gather, trio's
#: nursery).
Both = Callable[[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]], Awaitable[None]]


async def _run(
    adapter: Any, both: Both, url: str, count: int, body: bytes, progress: Progress | None
) -> float:
    """The work of :func:`~.loopback091.aio_pika_loopback` through ``adapter``."""
    name = loopback091.queue_name("ours")
    report = loopback091.reporter(count, progress)
    size = len(body)
    async with adapter.connect(url, protocol="0-9-1", timeout=LOOPBACK091_STALL) as producer:
        out = await producer.channel()
        await out.queue_declare(name, durable=False, auto_delete=False)
        try:
            async with adapter.connect(
                url, protocol="0-9-1", timeout=LOOPBACK091_STALL
            ) as consumer_conn:
                inbound = await consumer_conn.channel()
                await inbound.basic_qos(PREFETCH)
                consumer = await inbound.basic_consume(name)
                await out.confirm_select()

                async def produce() -> None:
                    publish = out.basic_publish
                    sent = 0
                    while sent < count:
                        n = min(CONFIRM_BATCH, count - sent)
                        trackers = [await publish("", name, body, wait=False) for _ in range(n)]
                        for tracker in trackers:
                            confirmation = await tracker.confirmation(timeout=LOOPBACK091_STALL)
                            if not confirmation.ack or confirmation.returned is not None:
                                raise AssertionError(f"our 0-9-1 loopback: {confirmation}")
                        sent += n

                async def consume() -> None:
                    taken = 0
                    receive = consumer.receive
                    while taken < count:
                        delivery = await receive(timeout=LOOPBACK091_STALL)
                        if delivery is None:
                            raise Stalled(f"our 0-9-1 consumer ended after {taken} of {count}")
                        if len(delivery.body) != size:
                            raise AssertionError("our 0-9-1 loopback mangled a message")
                        delivery.ack()
                        taken += 1
                        report(taken)

                start = time.perf_counter()
                try:
                    await both(produce, consume)
                except TimeoutError:
                    raise Stalled("our 0-9-1 loopback stalled") from None
                elapsed = time.perf_counter() - start
        finally:
            await out.queue_delete(name)
    return elapsed


def ours091_asyncio(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our asyncio adapter's 0-9-1 client takes on the work of
    :func:`~.loopback091.aio_pika_loopback` (a new event loop, in this thread)."""
    import asyncio

    from ... import aio

    async def both(a: Callable[[], Awaitable[None]], b: Callable[[], Awaitable[None]]) -> None:
        await asyncio.gather(a(), b())

    return asyncio.run(_run(aio, both, url, count, body, progress))


def ours091_trio(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our trio adapter's 0-9-1 client takes on the same work (a new trio run, in
    this thread)."""
    import trio

    from ... import trio_adapter

    async def both(a: Callable[[], Awaitable[None]], b: Callable[[], Awaitable[None]]) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(a)
            nursery.start_soon(b)

    return float(trio.run(_run, trio_adapter, both, url, count, body, progress))
