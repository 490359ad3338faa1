"""The AMQP 0-10 loopback benchmark (``amqp-sansio bench loopback --protocol 0-10``): a
producer and a consumer through our broker (``amqp-sansio broker``, in a process of its
own, on a free port of 127.0.0.1), ours next to qpid.messaging (the qpid-python peer's
high-level API, the one Qpid's users wrote applications with), in alternating rounds of
the same run (:mod:`..rounds`).

Each run is one producer connection and one consumer connection, started together, on a
queue of its own (declared before the clock starts, deleted after it stops). The producer
transfers ``count`` messages of ``size`` bytes to the default exchange with the queue's
name as routing key (accept mode none, 0-10 spec ``message.transfer``); the consumer
subscribes in credit mode with :data:`WINDOW` messages of credit, given back as it takes
each, and accepts what it took (explicit accept mode, ``message.accept``) every
:data:`ACCEPT_BATCH` messages, each accept waited for until the broker completes it. The
producer keeps at most :data:`WINDOW` transfers in flight: windows on both sides, so that
the figure is throughput, not round trips. The clock runs from the start of both to the
producer's last completion and the consumer's last accept. Each side is driven the way
its users write it:

* ours: the 0-10 client of the sockets adapter (producer and consumer a thread each, as
  the blocking API has it) or of the asyncio or trio adapter (both on one event loop),
  ``connect(url, protocol="0-10")``: ``send(..., wait=False)`` and an
  ``execution.sync`` (0-10 spec, ``execution.sync``: complete once every earlier command
  is) every :data:`WINDOW` messages; ``subscribe(queue, credit=WINDOW)``, ``receive`` and
  ``accept``; with the sockets adapter, each window's sends and the consumer's loop in a
  ``batch()`` (what a run of calls makes goes out a hundred calls to a write, as the
  asyncio adapter writes once a turn of its loop, or every hundred calls);
* qpid.messaging: ``Connection(host, port, username, password)``, a sender of capacity
  :data:`WINDOW` (``send(message, sync=False)``, ``sync()`` at the end) in a thread of its
  own, a receiver of capacity :data:`WINDOW` (``fetch``) and ``session.acknowledge()``.
  The queue is created by the receiver's address (``{create: always, delete: receiver}``)
  before the clock starts.

qpid-python is found as the other 0-10 benchmarks find it
(``$AMQP_SANSIO_PEERS_DIR/qpid-python``, else ``../shared/peers/qpid-python``) and runs in
this process with its folder on ``sys.path``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from types import ModuleType
from typing import Any

from amqp_sansio import amqp010
from amqp_sansio.client.url import parse_url

from ..pipe import PIPE_BODY_SIZE, Stalled
from ..results import Result
from ..rounds import Both, Runner, Side, alternate, entry, on_asyncio, on_trio, reporter
from .codec import qpid_folder, qpid_import

__all__ = [
    "ACCEPT_BATCH",
    "CPU_UNIT",
    "LOOPBACK010_ADAPTERS",
    "LOOPBACK010_DEFAULT",
    "LOOPBACK010_PEER",
    "LOOPBACK010_STALL",
    "WINDOW",
    "loopback010_benchmark",
    "ours010_asyncio",
    "ours010_sockets",
    "ours010_trio",
    "qpid_messaging_loopback",
    "queue_name",
]

#: Messages in flight on every side: the producer's transfers not yet completed (ours: an
#: ``execution.sync`` each window; qpid.messaging: the sender's capacity) and the
#: consumer's credit (ours: the subscription's; qpid.messaging: the receiver's capacity).
WINDOW = 1000
#: Messages the consumer takes before it accepts them, on every side.
ACCEPT_BATCH = 100
#: How long a run may wait for any one thing before it is declared stalled, seconds.
LOOPBACK010_STALL = 30.0
#: Our adapters ``bench loopback --protocol 0-10`` can measure, and those it measures by
#: default.
LOOPBACK010_ADAPTERS = ("sockets", "asyncio", "trio")
LOOPBACK010_DEFAULT = ("sockets", "asyncio")
#: The peer's name, in the results.
LOOPBACK010_PEER = "qpid.messaging"
#: The unit of the client-side figures: messages per second of the client's CPU time.
CPU_UNIT = "msg/cpu-s"

Progress = Callable[[int], None]

spec = amqp010.definitions


def queue_name(who: str) -> str:
    """A queue of a run's own, named after ``who`` runs it."""
    return f"amqp-sansio-bench010-{who}-{uuid.uuid4().hex[:12]}"


# -- ours ------------------------------------------------------------------------------------


def ours010_sockets(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our sockets adapter's 0-10 client takes to carry ``count`` messages of
    ``body`` through the broker at ``url`` (see the module's text): the producer on a
    thread of its own, the consumer on this one; ``progress`` is called with the count
    taken so far, now and then."""
    from .... import sockets

    name = queue_name("ours-sockets")
    report = reporter(count, progress)
    size = len(body)
    stall = LOOPBACK010_STALL
    with (
        sockets.connect(url, protocol="0-10", timeout=stall) as producer,
        sockets.connect(url, protocol="0-10", timeout=stall) as consumer,
    ):
        out = producer.session(f"{name}-producer", keep=0)
        inbound = consumer.session(f"{name}-consumer", keep=0)
        inbound.queue_declare(name)
        destination = inbound.subscribe(name, credit=WINDOW)
        failed: list[BaseException] = []

        def produce() -> None:
            try:
                send, sync = out.send, out.command
                sent = 0
                while sent < count:
                    n = min(WINDOW, count - sent)
                    with producer.batch():  # (the window's transfers, 100 to a write)
                        for _ in range(n):
                            send(body, routing_key=name, wait=False)
                    sync(spec.ExecutionSync())
                    sent += n
            except Exception as exc:  # reported by the consuming thread
                failed.append(exc)

        thread = threading.Thread(target=produce, name="bench010-producer", daemon=True)
        start = time.perf_counter()
        thread.start()
        taken = 0
        batch = []
        receive, accept = inbound.receive, inbound.accept
        try:
            with consumer.batch():  # (what taking makes goes out when receive waits)
                while taken < count:
                    if failed:
                        raise failed[0]
                    delivery = receive(destination)
                    if len(delivery.body) != size:
                        raise AssertionError("our 0-10 loopback mangled a message")
                    batch.append(delivery)
                    taken += 1
                    if len(batch) == ACCEPT_BATCH or taken == count:
                        accept(*batch)
                        batch.clear()
                    report(taken)
        except TimeoutError:
            raise Stalled(f"our 0-10 consumer stalled after {taken} of {count}") from None
        thread.join(stall)
        elapsed = time.perf_counter() - start
        if failed:
            raise failed[0]
        if thread.is_alive():
            raise Stalled("our 0-10 producer did not finish")
        inbound.command(spec.QueueDelete(queue=name))
        out.close()
        inbound.close()
    return elapsed


async def _run_async(
    adapter: Any, both: Both, url: str, count: int, body: bytes, progress: Progress | None
) -> float:
    """The work of :func:`ours010_sockets` through ``adapter``'s 0-10 client, producer
    and consumer on one event loop."""
    name = queue_name("ours-async")
    report = reporter(count, progress)
    size = len(body)
    stall = LOOPBACK010_STALL
    connect = adapter.connect
    async with (
        connect(url, protocol="0-10", timeout=stall) as producer,
        connect(url, protocol="0-10", timeout=stall) as consumer,
    ):
        out = await producer.session(f"{name}-producer", keep=0)
        inbound = await consumer.session(f"{name}-consumer", keep=0)
        await inbound.queue_declare(name)
        destination = await inbound.subscribe(name, credit=WINDOW)

        async def produce() -> None:
            send, sync = out.send, out.command
            for i in range(1, count + 1):
                await send(body, routing_key=name, wait=False)
                if i % WINDOW == 0 or i == count:
                    await sync(spec.ExecutionSync())

        async def consume() -> None:
            taken = 0
            batch = []
            receive, accept = inbound.receive, inbound.accept
            try:
                while taken < count:
                    delivery = await receive(destination)
                    if len(delivery.body) != size:
                        raise AssertionError("our 0-10 loopback mangled a message")
                    batch.append(delivery)
                    taken += 1
                    if len(batch) == ACCEPT_BATCH or taken == count:
                        await accept(*batch)
                        batch.clear()
                    report(taken)
            except TimeoutError:
                raise Stalled(f"our 0-10 consumer stalled after {taken} of {count}") from None

        start = time.perf_counter()
        await both(produce, consume)
        elapsed = time.perf_counter() - start
        await inbound.command(spec.QueueDelete(queue=name))
        await out.close()
        await inbound.close()
    return elapsed


def ours010_asyncio(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our asyncio adapter's 0-10 client takes on the work of
    :func:`ours010_sockets` (a new event loop, in this thread)."""
    return on_asyncio(_run_async, url, count, body, progress)


def ours010_trio(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our trio adapter's 0-10 client takes on the same work (a new trio run, in
    this thread)."""
    return on_trio(_run_async, url, count, body, progress)


# -- qpid.messaging ------------------------------------------------------------------------


def _qpid_messaging() -> ModuleType:
    messaging = qpid_import("qpid.messaging")
    if messaging is None:
        raise RuntimeError("qpid-python is not found (set AMQP_SANSIO_PEERS_DIR)")
    return messaging


def qpid_messaging_loopback(
    url: str, count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds qpid.messaging takes on the work of :func:`ours010_sockets` through the
    broker at ``url``: a producer thread sending with a sender's capacity, this thread
    fetching with a receiver's capacity and acknowledging (see the module's text)."""
    messaging = _qpid_messaging()
    where = parse_url(url)
    options: dict[str, Any] = {"host": where.host, "port": where.port}
    if where.username is not None:
        options.update(
            username=where.username, password=where.password or "", sasl_mechanisms="PLAIN"
        )
    name = queue_name("qpid")
    report = reporter(count, progress)
    size = len(body)
    stall = LOOPBACK010_STALL
    producer = messaging.Connection(**options)
    consumer = messaging.Connection(**options)
    try:
        producer.open()
        consumer.open()
        inbound = consumer.session()
        receiver = inbound.receiver(
            f"{name}; {{create: always, delete: receiver}}", capacity=WINDOW
        )
        out = producer.session()
        sender = out.sender(name, capacity=WINDOW)
        message_cls = messaging.Message
        failed: list[BaseException] = []

        def produce() -> None:
            try:
                send = sender.send
                for _ in range(count):
                    send(message_cls(content=body), sync=False, timeout=stall)
                sender.sync(timeout=stall)
            except Exception as exc:  # reported by the consuming thread
                failed.append(exc)

        thread = threading.Thread(target=produce, name="bench010-qpid-producer", daemon=True)
        start = time.perf_counter()
        thread.start()
        taken = 0
        fetch, acknowledge = receiver.fetch, inbound.acknowledge
        try:
            while taken < count:
                if failed:
                    raise failed[0]
                message = fetch(timeout=stall)
                if len(message.content) != size:
                    raise AssertionError("qpid.messaging's loopback mangled a message")
                taken += 1
                if taken % ACCEPT_BATCH == 0 or taken == count:
                    acknowledge()
                report(taken)
        except messaging.Empty:
            raise Stalled(f"qpid.messaging's consumer stalled after {taken} of {count}") from None
        thread.join(stall)
        elapsed = time.perf_counter() - start
        if failed:
            raise failed[0]
        if thread.is_alive():
            raise Stalled("qpid.messaging's producer did not finish")
        sender.close()
        receiver.close()
    finally:
        producer.close()
        consumer.close()
    return elapsed


# -- the benchmark ------------------------------------------------------------------------


def _ours_runners() -> dict[str, Runner]:
    """Our runners by adapter."""
    return {"sockets": ours010_sockets, "asyncio": ours010_asyncio, "trio": ours010_trio}


def loopback010_benchmark(
    url: str,
    messages: int = 50_000,
    *,
    adapters: tuple[str, ...] = LOOPBACK010_DEFAULT,
    peer: bool = True,
    size: int = PIPE_BODY_SIZE,
    rounds: int = 3,
    seconds: float = 0.0,
    progress: Callable[[str, int, float | None], None] | None = None,
    on_peer_failure: Callable[[str, BaseException], None] | None = None,
) -> Result:
    """Messages per second through the 0-10 broker at ``url``: ours with each of
    ``adapters`` and (with ``peer``, when qpid-python is found) qpid.messaging, in
    alternating rounds (at least ``rounds`` each, more until each has run ``seconds``),
    each keeping its median.

    The result has an entry per adapter, ``"<adapter> vs qpid.messaging"``, in the shape
    of every benchmark (``{"ours": ..., "qpid.messaging": ..., "ratio": ..., "unit":
    "msg/s"}``; the peer not measured: None), and one ``"<adapter> vs qpid.messaging,
    client CPU"`` in :data:`CPU_UNIT`: messages per second of this process's CPU time,
    what each client costs apart from the broker both go through (which runs in a
    process of its own, so that a slow broker caps both rates alike while this figure
    shows the clients). The peer's run failing leaves it out
    (``on_peer_failure(peer, error)`` is told, once); ours failing raises.
    ``progress(label, taken, rate)`` is called now and then during each run (``rate``
    None) and once at its end."""
    ours = _ours_runners()
    for adapter in adapters:
        if adapter not in ours:
            raise ValueError(f"no 0-10 adapter named {adapter!r} (one of {', '.join(ours)})")
    sides = [Side(f"ours {a}", ours[a], url, True) for a in adapters]
    if peer and qpid_folder() is not None:
        sides.append(Side(LOOPBACK010_PEER, qpid_messaging_loopback, url, False))
    cpu: dict[str, float] = {}
    median = alternate(
        sides, messages, bytes(size), rounds, seconds, progress, on_peer_failure, cpu_rates=cpu
    )
    result: Result = {}
    for adapter in adapters:
        name = f"{adapter} vs {LOOPBACK010_PEER}"
        mine, theirs = median[f"ours {adapter}"], median.get(LOOPBACK010_PEER)
        result[name] = entry(mine, LOOPBACK010_PEER, theirs)
    for adapter in adapters:
        mine, theirs = cpu[f"ours {adapter}"], cpu.get(LOOPBACK010_PEER)
        result[f"{adapter} vs {LOOPBACK010_PEER}, client CPU"] = entry(
            mine, LOOPBACK010_PEER, theirs, CPU_UNIT
        )
    return result
