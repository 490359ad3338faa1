"""The AMQP 0-9-1 loopback benchmark (``amqp-sansio bench loopback --protocol 0-9-1``):
publish with publisher confirms and consume with acks through one RabbitMQ, ours (asyncio
and trio) next to aio-pika and pika, in alternating rounds of the same run; and, with
``--broker``, our asyncio client through our broker next to the same client through
RabbitMQ.

Each run is one producer connection and one consumer connection, started together, on a
queue of its own (declared before the clock starts, deleted after it stops; auto-delete, so
that RabbitMQ drops it with its consumer should a run fail). The producer
publishes ``count`` messages of ``size`` bytes to the default exchange with the queue's
name as routing key, on a channel in confirm mode (RabbitMQ's ``confirm.select``); the
consumer takes them with ``basic.consume`` under a prefetch of :data:`PREFETCH` and acks
each one. The clock runs from the start of both to the last confirm and the last ack.
Each implementation is driven the way its users write it:

* aio-pika: ``connect_robust``, a channel with ``publisher_confirms=True``,
  ``default_exchange.publish`` awaited :data:`CONFIRM_BATCH` at a time with
  ``asyncio.gather`` (how its documentation pipelines confirms), ``queue.iterator()`` and
  ``message.ack()``;
* pika: ``BlockingConnection``, ``confirm_delivery()``, ``basic_publish`` (which returns
  once the broker confirmed the message), ``basic_consume`` with a callback that acks; a
  thread per connection, as pika's documentation asks (its connections are not shared
  between threads);
* ours: the 0-9-1 client of the asyncio or trio adapter (``connect(url,
  protocol="0-9-1")``), publishing without waiting for each confirm and awaiting them in
  the same batches, consuming with ``ack()`` per message.
"""

from __future__ import annotations

import asyncio
import importlib.util
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from ..pipe import PIPE_BODY_SIZE, Stalled
from ..results import Result
from ..rounds import Both, Runner, Side, alternate, entry, on_asyncio, on_trio, reporter

__all__ = [
    "CONFIRM_BATCH",
    "LOOPBACK091_ADAPTERS",
    "LOOPBACK091_PEERS",
    "LOOPBACK091_STALL",
    "PREFETCH",
    "RABBITMQ_ENV",
    "RABBITMQ_URL",
    "aio_pika_loopback",
    "ours091_asyncio",
    "ours091_trio",
    "loopback091_benchmark",
    "peer_installed",
    "pika_loopback",
    "queue_name",
    "rabbitmq_answers",
]

#: The RabbitMQ the benchmark runs through unless ``--url`` names one: the URL in
#: ``AMQP_SANSIO_RABBITMQ_URL``, else this (RabbitMQ's guest account, allowed on loopback).
RABBITMQ_URL = "amqp://guest:guest@127.0.0.1:5672"
RABBITMQ_ENV = "AMQP_SANSIO_RABBITMQ_URL"
#: The consumer's ``basic.qos`` prefetch count, on every side.
PREFETCH = 1000
#: Publishes awaited together (their confirms), on every side that pipelines.
CONFIRM_BATCH = 1000
#: How long a run may go without a message before it is declared stalled, seconds.
LOOPBACK091_STALL = 30.0
#: Our adapters ``bench loopback --protocol 0-9-1`` measures, in order.
LOOPBACK091_ADAPTERS = ("asyncio", "trio")
#: The peers, in order, with the module each needs.
LOOPBACK091_PEERS = {"aio-pika": "aio_pika", "pika": "pika"}

Progress = Callable[[int], None]


def peer_installed(peer: str) -> bool:
    """Whether ``peer`` (a key of :data:`LOOPBACK091_PEERS`) can be imported."""
    return importlib.util.find_spec(LOOPBACK091_PEERS[peer]) is not None


def rabbitmq_answers(host: str, port: int, timeout: float = 3.0) -> str | None:
    """None when something accepts a TCP connection at ``host``:``port``; else why not."""
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def queue_name(who: str) -> str:
    """A queue of a run's own, named after ``who`` runs it."""
    return f"amqp-sansio-bench091-{who}-{uuid.uuid4().hex[:12]}"


# -- aio-pika ---------------------------------------------------------------------------


async def _aio_pika_run(url: str, count: int, body: bytes, progress: Progress | None) -> float:
    import aio_pika

    name = queue_name("aio-pika")
    report = reporter(count, progress)
    producer = await aio_pika.connect_robust(url, timeout=LOOPBACK091_STALL)
    consumer = await aio_pika.connect_robust(url, timeout=LOOPBACK091_STALL)
    async with producer, consumer:
        out = await producer.channel(publisher_confirms=True)
        queue = await out.declare_queue(name, durable=False, auto_delete=True)
        inbound = await consumer.channel()
        await inbound.set_qos(prefetch_count=PREFETCH)
        their_queue = await inbound.get_queue(name)

        async def produce() -> None:
            exchange = out.default_exchange
            sent = 0
            while sent < count:
                n = min(CONFIRM_BATCH, count - sent)
                await asyncio.gather(
                    *(exchange.publish(aio_pika.Message(body), routing_key=name) for _ in range(n))
                )
                sent += n

        async def consume() -> None:
            taken = 0
            async with their_queue.iterator() as messages:
                async for message in messages:
                    if len(message.body) != len(body):
                        raise AssertionError("aio-pika's loopback mangled a message")
                    await message.ack()
                    taken += 1
                    report(taken)
                    if taken == count:
                        break

        start = time.perf_counter()
        try:
            await asyncio.wait_for(
                asyncio.gather(produce(), consume()), LOOPBACK091_STALL + count / 100
            )
        except asyncio.TimeoutError:
            raise Stalled("aio-pika's loopback stalled") from None
        elapsed = time.perf_counter() - start
        await queue.delete(if_unused=False, if_empty=False)
    return elapsed


def aio_pika_loopback(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds aio-pika takes to publish ``count`` messages of ``body`` with confirms and
    consume them with acks through the RabbitMQ at ``url`` (see the module's text), on a new
    event loop in this thread; ``progress`` is called with the count acked so far."""
    return asyncio.run(_aio_pika_run(url, count, body, progress))


# -- pika ---------------------------------------------------------------------------------


def pika_loopback(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds pika's BlockingConnection takes on the work of :func:`aio_pika_loopback`: a
    producer thread publishing in confirm mode (each ``basic_publish`` returns once the
    broker confirmed it), this thread consuming with ``basic_consume`` and acking each."""
    import pika

    name = queue_name("pika")
    report = reporter(count, progress)
    params = pika.URLParameters(url)
    admin = pika.BlockingConnection(params)
    try:
        admin_channel = admin.channel()
        admin_channel.queue_declare(name, durable=False, auto_delete=True)
        producer = pika.BlockingConnection(params)
        consumer = pika.BlockingConnection(params)
        failed: list[Exception] = []

        def produce() -> None:
            try:
                channel = producer.channel()
                channel.confirm_delivery()
                for _ in range(count):
                    channel.basic_publish(exchange="", routing_key=name, body=body)
                producer.close()
            except Exception as exc:  # reported by the consuming thread
                failed.append(exc)

        channel = consumer.channel()
        channel.basic_qos(prefetch_count=PREFETCH)
        taken = 0

        def on_message(ch: Any, method: Any, properties: Any, got: bytes) -> None:
            nonlocal taken
            if len(got) != len(body):
                raise AssertionError("pika's loopback mangled a message")
            ch.basic_ack(delivery_tag=method.delivery_tag)
            taken += 1
            report(taken)
            if taken == count:
                ch.stop_consuming()

        channel.basic_consume(name, on_message)
        thread = threading.Thread(target=produce, name="bench091-pika-producer", daemon=True)
        start = time.perf_counter()
        thread.start()
        last, last_taken = time.perf_counter(), 0
        while taken < count and not failed:
            consumer.process_data_events(time_limit=1.0)
            if taken != last_taken:
                last, last_taken = time.perf_counter(), taken
            elif time.perf_counter() - last > LOOPBACK091_STALL:
                raise Stalled(f"pika's loopback stalled after {taken} of {count}")
        thread.join(LOOPBACK091_STALL)
        elapsed = time.perf_counter() - start
        if failed:
            raise failed[0]
        if thread.is_alive():
            raise Stalled("pika's producer did not finish")
        channel.close()
        consumer.close()
        admin_channel.queue_delete(name)
    finally:
        if admin.is_open:
            admin.close()
    return elapsed


# -- ours ----------------------------------------------------------------------------------


async def _run(
    adapter: Any, both: Both, url: str, count: int, body: bytes, progress: Progress | None
) -> float:
    """The work of :func:`aio_pika_loopback` through ``adapter``'s 0-9-1 client."""
    name = queue_name("ours")
    report = reporter(count, progress)
    size = len(body)
    connect = adapter.connect
    async with (
        connect(url, protocol="0-9-1", timeout=LOOPBACK091_STALL) as producer,
        connect(url, protocol="0-9-1", timeout=LOOPBACK091_STALL) as consumer_conn,
    ):
        out = await producer.channel()
        await out.queue_declare(name, durable=False, auto_delete=True)
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
        await out.queue_delete(name)
    return elapsed


def ours091_asyncio(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our asyncio adapter's 0-9-1 client takes on the work of
    :func:`aio_pika_loopback` (a new event loop, in this thread)."""
    return on_asyncio(_run, url, count, body, progress)


def ours091_trio(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our trio adapter's 0-9-1 client takes on the same work (a new trio run, in
    this thread)."""
    return on_trio(_run, url, count, body, progress)


# -- the benchmark ------------------------------------------------------------------------


def _ours_runners() -> dict[str, Runner]:
    """Our runners by adapter."""
    return {"asyncio": ours091_asyncio, "trio": ours091_trio}


def _peer_runners() -> dict[str, Runner]:
    return {"aio-pika": aio_pika_loopback, "pika": pika_loopback}


def loopback091_benchmark(
    url: str,
    messages: int = 50_000,
    *,
    adapters: tuple[str, ...] = LOOPBACK091_ADAPTERS,
    peers: tuple[str, ...] | None = None,
    size: int = PIPE_BODY_SIZE,
    rounds: int = 3,
    seconds: float = 0.0,
    broker_url: str | None = None,
    progress: Callable[[str, int, float | None], None] | None = None,
    on_peer_failure: Callable[[str, BaseException], None] | None = None,
) -> Result:
    """Messages per second through the RabbitMQ at ``url``, published with confirms and
    consumed with acks: ours with each of ``adapters`` and each of ``peers`` (by default
    those installed), in alternating rounds (at least ``rounds`` each, more until each
    has run ``seconds``), each keeping its median. ``broker_url``: also our first adapter
    through the broker there, next to the same adapter through RabbitMQ (run right after
    it in each round, so that the machine's load of the moment falls on both alike).

    The result has an entry per pair, ``"<adapter> vs <peer>"``, in the shape of every
    benchmark (``{"ours": ..., "<peer>": ..., "ratio": ..., "unit": "msg/s"}``; a peer
    not measured: None), and with ``broker_url`` one ``"<adapter>: our broker vs
    rabbitmq"`` (``{"ours": ..., "rabbitmq": ..., ...}``). A peer whose run fails is left
    out after its first failure (``on_peer_failure(peer, error)`` is told); ours failing
    raises. ``progress(label, acked, rate)`` is called now and then during each run
    (``rate`` None) and once at its end."""
    ours = _ours_runners()
    for adapter in adapters:
        if adapter not in ours:
            raise ValueError(f"no 0-9-1 adapter named {adapter!r} (one of {', '.join(ours)})")
    if peers is None:
        peers = tuple(p for p in LOOPBACK091_PEERS if peer_installed(p))
    theirs = _peer_runners()
    sides = [Side(f"ours {a}", ours[a], url, True) for a in adapters]
    if broker_url is not None:  # right after the same client through RabbitMQ, each round
        sides.insert(
            1, Side(f"ours {adapters[0]}, our broker", ours[adapters[0]], broker_url, True)
        )
    sides += [Side(p, theirs[p], url, False) for p in peers]
    median = alternate(sides, messages, bytes(size), rounds, seconds, progress, on_peer_failure)
    result: Result = {}
    for adapter in adapters:
        mine = median[f"ours {adapter}"]
        for peer in LOOPBACK091_PEERS:  # (one not measured: None)
            result[f"{adapter} vs {peer}"] = entry(mine, peer, median.get(peer))
    if broker_url is not None:
        adapter = adapters[0]
        result[f"{adapter}: our broker vs rabbitmq"] = entry(
            median[f"ours {adapter}, our broker"], "rabbitmq", median[f"ours {adapter}"]
        )
    return result
