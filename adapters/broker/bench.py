"""``amqp-sansio bench broker``'s workload (:doc:`performance`): one producer and one
consumer through a broker over loopback, ours (a process of its own, as
:mod:`.server` serves it) or RabbitMQ's, with our asyncio adapter."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from .._blocking import connect_transport

__all__ = ["RABBITMQ_ENV", "RABBITMQ_URL", "benchmark", "rabbitmq_benchmark"]


#: Where ``bench broker`` looks for RabbitMQ when neither ``--rabbitmq`` nor
#: ``AMQP_SANSIO_RABBITMQ_URL`` says (the guest account, which RabbitMQ allows on loopback).
RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672"
RABBITMQ_ENV = "AMQP_SANSIO_RABBITMQ_URL"


def benchmark(
    messages: int = 50_000,
    *,
    size: int = 256,
    url: str | None = None,
    durable: bool = False,
    store_dir: str | None = None,
    address: str = "bench",
) -> dict[str, Any]:
    """``amqp-sansio bench broker``: one producer and one consumer through a broker over
    loopback, ``messages`` of ``size`` bytes, at-least-once (every message accepted by the
    consumer, every publish settled by the broker). The broker runs in a process of its own
    (``amqp-sansio broker``, with ``--store`` at ``store_dir``, or a temporary directory, when
    ``durable``) unless ``url`` names one; both clients share one asyncio loop (our asyncio
    adapter). ``durable`` marks the messages durable (header). Returns the figures:
    messages, size, durable, seconds, rate (messages/s)."""
    import subprocess
    import sys
    import tempfile

    if url is not None:
        seconds = asyncio.run(_bench(url, address, messages, size, durable))
        return _figures(messages, size, durable, seconds)
    with contextlib.ExitStack() as stack:
        command = [sys.executable, "-m", "amqp_sansio.adapters.cli", "broker", "--port", "0"]
        if durable:
            directory = store_dir or stack.enter_context(
                tempfile.TemporaryDirectory(prefix="amqp-sansio-bench-")
            )
            command += ["--store", directory]
        proc = stack.enter_context(subprocess.Popen(command, stdout=subprocess.PIPE, text=True))
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if "listening on" not in line:
                raise RuntimeError("the broker did not start")
            seconds = asyncio.run(_bench(line.split()[-1], address, messages, size, durable))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return _figures(messages, size, durable, seconds)


def rabbitmq_benchmark(
    url: str, messages: int = 50_000, *, size: int = 256
) -> dict[str, Any] | None:
    """The workload of :func:`benchmark` against the RabbitMQ (3.x, AMQP 1.0 plugin) at
    ``url`` (``amqp://user:password@host:port``), on a fresh queue (``/queue/NAME``, the
    plugin's address of a queue it declares); None when nothing answers there. RabbitMQ
    3.10's credit quirk (docs/interop.rst) is kept clear of: our receiver grants its next
    credit once the last is used up."""
    import uuid

    from amqp_sansio.client.url import parse_url

    parsed = parse_url(url)
    try:
        connect_transport(parsed.scheme, parsed.host, parsed.port, 2).close()
    except OSError:
        return None
    address = f"/queue/amqp-sansio-bench-{uuid.uuid4().hex[:12]}"
    seconds = asyncio.run(_bench(url, address, messages, size, False))
    return _figures(messages, size, False, seconds)


def _figures(messages: int, size: int, durable: bool, seconds: float) -> dict[str, Any]:
    return {
        "messages": messages,
        "size": size,
        "durable": durable,
        "seconds": seconds,
        "rate": messages / seconds,
    }


async def _bench(target: str, address: str, messages: int, size: int, durable: bool) -> float:
    """One producer and one consumer on one loop; the seconds from the first send to the
    last accept."""
    from amqp_sansio import Accepted, Header, Message

    from .. import aio

    header = Header(durable=True) if durable else None
    body = b"x" * size

    async def produce() -> None:
        async with aio.connect(target, timeout=30) as conn:
            sender = await conn.sender(address)
            trackers = [
                await sender.send(Message(header=header, body=body), wait=False)
                for _ in range(messages)
            ]
            for tracker in trackers:
                if not isinstance(await tracker.outcome(), Accepted):
                    raise RuntimeError("the broker did not accept a message")

    async def consume() -> None:
        taken = 0
        async with aio.connect(target, timeout=30) as conn:
            receiver = await conn.receiver(address, credit=1000)
            while taken < messages:
                delivery = await receiver.receive(timeout=30)
                if delivery is None:
                    raise RuntimeError(f"no message for 30 s after {taken}")
                delivery.accept()
                taken += 1

    start = time.perf_counter()
    await asyncio.gather(produce(), consume())
    return time.perf_counter() - start
