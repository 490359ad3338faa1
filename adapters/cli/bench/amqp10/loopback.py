"""The loopback benchmark (``amqp-sansio bench loopback``): a sender and a receiver in one
process over 127.0.0.1, through each of our adapters, next to Proton's Container."""

from __future__ import annotations

import socket
import threading
import time
import urllib.parse
from collections import deque
from collections.abc import Callable
from typing import Any

import amqp_sansio as amqp
from amqp_sansio.client.amqp10 import WebSocketOptions

from ....sockets import SocketDriver
from ..pipe import CREDIT_WINDOW, PIPE_BODY_SIZE, Stalled, alternate, proton_installed
from ..results import Result

# -- over loopback sockets ------------------------------------------------------------------
#
# A sender and a receiver in one process, over a TCP connection on 127.0.0.1: our client
# sender (driven by SocketDriver) connects to our server, which accepts the connection on a
# listening socket and receives on a thread of its own; Proton does the same with one
# Container, listening and connecting to itself. Each message is built and encoded by the
# sender, decoded and accepted by the receiver, settled at the sender; credit is granted in
# windows of CREDIT_WINDOW. Timed on the wall clock (there is real I/O, and two threads on
# our side), from the sender's first credit to its last settlement.

#: How long a loopback run may go without any progress before it is declared stalled.
LOOPBACK_STALL = 30.0
#: The adapters ``bench loopback`` measures (each has a runner in :data:`LOOPBACK_RUNNERS`).
LOOPBACK_ADAPTERS = ("sockets", "asyncio", "trio")

Progress = Callable[[int], None]


class _LoopbackServer(threading.Thread):
    """Our receiving end: accepts one connection on ``listener``, accepts the session and
    the link, grants credit in windows, decodes and accepts every message."""

    def __init__(self, listener: socket.socket, count: int, size: int) -> None:
        super().__init__(name="bench-loopback-server", daemon=True)
        self.listener = listener
        self.count = count
        self.size = size
        self.received = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._serve()
        except Exception as exc:  # reported by the measuring thread
            self.error = exc

    def _serve(self) -> None:
        conn = amqp.Connection(client=False, container_id="bench-server")
        driver = SocketDriver.accept(conn, self.listener, timeout=LOOPBACK_STALL)
        decode = amqp.Message.decode
        delivery_received = amqp.events.DeliveryReceived
        data_section = amqp.Data
        accepted = amqp.Accepted()
        window = max(1, min(CREDIT_WINDOW, self.count))
        size = self.size
        receiver: amqp.Receiver | None = None
        clock = time.monotonic
        last = clock()
        with driver:
            while not driver.ended and not driver.closed:
                events = driver.step(LOOPBACK_STALL)
                if events:
                    last = clock()
                elif clock() - last > LOOPBACK_STALL:
                    raise Stalled(f"our loopback receiver stalled after {self.received}")
                driver.events.clear()
                for event in events:
                    if type(event) is delivery_received:
                        assert receiver is not None
                        got = decode(event.data).body
                        if type(got) is not data_section or len(got.value) != size:
                            raise AssertionError("our loopback mangled a message")
                        self.received += 1
                        receiver.settle(event.delivery, accepted)
                    elif isinstance(event, amqp.events.ConnectionOpened):
                        conn.open()
                    elif isinstance(event, amqp.events.SessionBegun):
                        event.session.begin()
                    elif isinstance(event, amqp.events.LinkAttached):
                        link = event.link
                        assert isinstance(link, amqp.Receiver)
                        link.attach()
                        receiver = link
                        link.flow(window)
                if (
                    receiver is not None
                    and receiver.state is amqp.LinkState.ATTACHED
                    and conn.state is amqp.ConnectionState.OPENED
                    and receiver.link_credit * 2 <= window
                    and self.received + receiver.link_credit < self.count
                ):
                    receiver.flow(window)
                if driver.eof:
                    break


def ours_loopback(
    count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds our sockets adapter takes to carry ``count`` messages of ``body`` from a
    client sender to a server receiver over 127.0.0.1, each accepted; ``progress`` is
    called with the count settled so far, now and then."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = _LoopbackServer(listener, count, len(body))
    server.start()
    try:
        conn = amqp.Connection(container_id="bench-client")
        with SocketDriver.connect(conn, listener.getsockname()[:2]) as driver:
            conn.open(now=driver.now())
            session = conn.begin()
            sender = session.attach_sender(
                "bench", target="bench", snd_settle_mode=amqp.SenderSettleMode.UNSETTLED
            )
            driver.run_until(lambda: sender.link_credit > 0, timeout=LOOPBACK_STALL)
            message_cls = amqp.Message
            delivery_updated = amqp.events.DeliveryUpdated
            sent = done = 0
            step = max(1, count // 100)
            next_report = step
            start = last = time.perf_counter()
            while done < count:
                while sent < count and sender.link_credit > 0:
                    sender.send(message_cls(body=body).encode())
                    sent += 1
                events = driver.step(LOOPBACK_STALL)
                if events:
                    last = time.perf_counter()
                elif time.perf_counter() - last > LOOPBACK_STALL:
                    raise Stalled(f"our loopback sender stalled after {done} of {count}")
                driver.events.clear()
                for event in events:
                    if type(event) is delivery_updated and event.settled:
                        done += 1
                if driver.eof:
                    raise Stalled(f"our loopback connection closed after {done} of {count}")
                if progress is not None and next_report <= done < count:
                    progress(done)
                    next_report = done + step
            elapsed = time.perf_counter() - start
            if sender.unsettled:
                raise AssertionError("our loopback left deliveries unsettled")
            conn.close()
            driver.run_until(lambda: conn.state is amqp.ConnectionState.END, LOOPBACK_STALL)
    except Stalled:
        server.join(LOOPBACK_STALL)
        if server.error is not None:  # what stalled the sender
            raise server.error from None
        raise
    finally:
        server.join(LOOPBACK_STALL)
        listener.close()
    if server.error is not None:
        raise server.error
    if server.received != count:
        raise AssertionError(f"our loopback receiver got {server.received} of {count}")
    return elapsed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def proton_loopback(
    count: int, *, body: bytes = bytes(PIPE_BODY_SIZE), progress: Progress | None = None
) -> float:
    """Seconds Proton's Container takes on the work of :func:`ours_loopback`: one Container
    listening on 127.0.0.1 and connecting to itself, a sender on the client connection, a
    receiver (credit window :data:`CREDIT_WINDOW`) accepting each message on the server's."""
    import proton
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    size = len(body)
    port = _free_port()
    step = max(1, count // 100)

    class Loopback(MessagingHandler):
        def __init__(self) -> None:
            super().__init__(prefetch=min(CREDIT_WINDOW, count), auto_accept=True)
            self.sent = self.received = self.accepted = 0
            self.start = self.end = 0.0
            self.acceptor: Any = None
            self.error: str | None = None

        def on_start(self, event: Any) -> None:
            self.acceptor = event.container.listen(f"127.0.0.1:{port}")
            conn = event.container.connect(f"amqp://127.0.0.1:{port}", sasl_enabled=False)
            event.container.create_sender(conn, target="bench")

        def on_sendable(self, event: Any) -> None:
            sender = event.sender
            if not self.start:
                self.start = time.perf_counter()
            while sender.credit > 0 and self.sent < count:
                sender.send(proton.Message(body=body, inferred=True))
                self.sent += 1

        def on_message(self, event: Any) -> None:
            if len(event.message.body) != size:
                raise AssertionError("proton's loopback mangled a message")
            self.received += 1

        def on_accepted(self, event: Any) -> None:
            self.accepted += 1
            if progress is not None and self.accepted % step == 0 and self.accepted < count:
                progress(self.accepted)
            if self.accepted == count:
                self.end = time.perf_counter()
                event.connection.close()
                self.acceptor.close()

        def on_transport_error(self, event: Any) -> None:
            self.error = str(event.transport.condition)
            event.container.stop()

    handler = Loopback()
    container = Container(handler)
    container.timeout = LOOPBACK_STALL
    container.run()
    if handler.error is not None:
        raise Stalled(f"proton's loopback failed: {handler.error}")
    if handler.accepted != count or handler.received != count:
        raise AssertionError(
            f"proton's loopback carried {handler.received} and settled {handler.accepted} "
            f"of {count}"
        )
    return handler.end - handler.start


# -- over loopback, asyncio ---------------------------------------------------------------
#
# The same work through the asyncio high-level API, on one event loop in one thread (as
# Proton's one Container): an aio.listen server whose incoming link keeps CREDIT_WINDOW
# granted, decodes each message and accepts it; an aio.connect client whose sender sends
# with ``wait=False``, so that sends follow each other under credit, and collects each
# outcome from its tracker.


#: Where ``bench loopback --websocket`` listens and connects: a free port on 127.0.0.1,
#: the resource ``/``. ``--url ws://HOST:PORT/PATH`` names another (port 0: a free one).
WEBSOCKET_URL = "ws://127.0.0.1:0/"


def websocket_address(url: str) -> tuple[str, int, str]:
    """The host, port (0: a free one) and path of a ``ws://`` URL for the loopback, or
    :class:`ValueError` saying what is wrong with it (never repeating the URL, which may
    hold a password)."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "ws":
        scheme = parts.scheme or "no scheme"
        raise ValueError(f"the loopback over WebSocket takes a ws:// URL, not {scheme}")
    try:
        port = parts.port or 0
    except ValueError:
        raise ValueError("the loopback URL's port is not a number from 0 to 65535") from None
    if parts.username is not None or parts.query or parts.fragment:
        raise ValueError("the loopback URL is ws://HOST:PORT/PATH (no user, query or fragment)")
    return parts.hostname or "127.0.0.1", port, parts.path or "/"


async def _async_loopback(
    adapter: Any, count: int, body: bytes, progress: Progress | None, websocket: str | None
) -> float:
    """The loopback work through an async adapter (``aio`` or ``trio_adapter``: the same
    API); with ``websocket`` (a ``ws://`` URL, :func:`websocket_address`), over the AMQP
    WebSocket binding at that host, port and path instead of TCP on 127.0.0.1."""
    size = len(body)
    window = max(1, min(CREDIT_WINDOW, count))
    decode = amqp.Message.decode
    data_section = amqp.Data
    received = 0

    def on_delivery(delivery: Any) -> None:
        nonlocal received
        got = decode(delivery.data).body
        if type(got) is not data_section or len(got.value) != size:
            raise AssertionError("our async loopback mangled a message")
        received += 1  # accepted by the link (auto_accept) once this returns

    def on_link(link: Any) -> None:
        if isinstance(link, adapter.IncomingLink):
            link.credit = window
            link.on_delivery = on_delivery
        else:
            link.refuse()

    accepted = amqp.Accepted()
    message_cls = amqp.Message
    step = max(1, count // 100)
    next_report = step
    host, port, path = ("127.0.0.1", 0, "/") if websocket is None else websocket_address(websocket)
    layers = {} if websocket is None else {"websocket": WebSocketOptions(accept_paths=(path,))}
    listening = adapter.listen(host, port, on_link, container_id="bench-server", **layers)
    if not hasattr(listening, "__aenter__"):  # asyncio's: await it for the server
        listening = await listening
    async with listening as server:
        where = f"{host}:{server.port}" if ":" not in host else f"[{host}]:{server.port}"
        url = f"amqp://{where}" if websocket is None else f"ws://{where}{path}"
        async with adapter.connect(
            url,
            timeout=LOOPBACK_STALL,
            container_id="bench-client",
        ) as conn:
            sender = await conn.sender("bench")
            outstanding: deque[Any] = deque()
            done = 0
            start = time.perf_counter()
            for _ in range(count):
                outstanding.append(await sender.send(message_cls(body=body), wait=False))
                while outstanding and outstanding[0].done():
                    if await outstanding.popleft().outcome() != accepted:
                        raise AssertionError("our async loopback: a message not accepted")
                    done += 1
                if progress is not None and next_report <= done < count:
                    progress(done)
                    next_report = done + step
            while outstanding:
                if await outstanding.popleft().outcome() != accepted:
                    raise AssertionError("our async loopback: a message not accepted")
            elapsed = time.perf_counter() - start
    if received != count:
        raise AssertionError(f"our async loopback receiver got {received} of {count}")
    return elapsed


def ours_loopback_asyncio(
    count: int,
    *,
    body: bytes = bytes(PIPE_BODY_SIZE),
    progress: Progress | None = None,
    websocket: str | None = None,
) -> float:
    """Seconds our asyncio adapter takes on the work of :func:`ours_loopback`: an
    :func:`~amqp_sansio.adapters.aio.listen` server and an
    :func:`~amqp_sansio.adapters.aio.connect` client on one event loop (a new one, in this
    thread), the sender pipelining with ``send(..., wait=False)``; over the WebSocket
    binding with ``websocket`` (a ``ws://`` URL: :func:`websocket_address`)."""
    import asyncio

    from .... import aio

    return asyncio.run(_async_loopback(aio, count, body, progress, websocket))


def ours_loopback_trio(
    count: int,
    *,
    body: bytes = bytes(PIPE_BODY_SIZE),
    progress: Progress | None = None,
    websocket: str | None = None,
) -> float:
    """Seconds our trio adapter takes on the work of :func:`ours_loopback`: the same as
    :func:`ours_loopback_asyncio`, on a new trio run in this thread."""
    import trio

    from .... import trio_adapter

    return float(trio.run(_async_loopback, trio_adapter, count, body, progress, websocket))


#: Our side of ``bench loopback`` for each adapter that exists: a function taking the count
#: (and ``progress=``) and returning the seconds. Adding an adapter is adding its entry.
LOOPBACK_RUNNERS: dict[str, Callable[..., float]] = {
    "sockets": ours_loopback,
    "asyncio": ours_loopback_asyncio,
    "trio": ours_loopback_trio,
}


#: The adapters ``bench loopback --websocket`` measures: those whose ``listen`` and
#: ``connect`` run the same work over either transport.
WEBSOCKET_RUNNERS: dict[str, Callable[..., float]] = {
    "asyncio": ours_loopback_asyncio,
    "trio": ours_loopback_trio,
}


def loopback_benchmark(
    messages: int = 50_000,
    *,
    adapter: str = "sockets",
    size: int = PIPE_BODY_SIZE,
    rounds: int = 3,
    seconds: float = 0.0,
    progress: Callable[[str, int, float | None], None] | None = None,
    websocket: str | None = None,
) -> Result:
    """Messages per second between a sender and a receiver in one process over 127.0.0.1,
    ours (with ``adapter``) and Proton's Container, each message a data body of ``size``
    bytes (a large one shows what the adapters copy: the engine frames a large data section
    as it is, and decodes from the pieces received). ``progress(label, settled, rate)`` is
    called now and then during each run (``rate`` None) and once at its end (with the
    run's messages per second), ``label`` naming the side and the round.

    With ``websocket``, a ``ws://HOST:PORT/PATH`` URL (:data:`WEBSOCKET_URL`; port 0 for a
    free one), what the AMQP WebSocket binding costs (:doc:`websockets`): the same work
    through ``adapter`` (one of :data:`WEBSOCKET_RUNNERS`) over WebSocket at that address
    (the WebSocket layer on both ends) next to ours over TCP, in alternating rounds; the
    result's ``"tcp"`` is then the rate over TCP, its ``ratio`` WebSocket's over TCP's."""
    if websocket is not None:
        websocket_address(websocket)  # a bad URL fails before any round
    runners = LOOPBACK_RUNNERS if websocket is None else WEBSOCKET_RUNNERS
    ours = runners.get(adapter)
    if ours is None:
        raise ValueError(f"no adapter named {adapter!r} (one of {', '.join(runners)})")
    body = bytes(size)
    runs: dict[str, int] = {}

    def run(side: str, fn: Callable[..., float], **options: str | None) -> float:
        runs[side] = runs.get(side, 0) + 1
        label = f"{side}, round {runs[side]}"
        report = None if progress is None else (lambda n: progress(label, n, None))
        elapsed = fn(messages, body=body, progress=report, **options)
        if progress is not None:
            progress(label, messages, messages / elapsed)
        return elapsed

    if websocket is not None:
        result = alternate(
            lambda: run("websocket", ours, websocket=websocket),
            lambda: run("tcp", ours, websocket=None),
            messages,
            "msg/s",
            rounds,
            seconds,
            peer="tcp",
        )
        return {f"loopback-{adapter}-websocket": result}
    theirs: Callable[[], float] | None = None
    if proton_installed():
        theirs = lambda: run("proton", proton_loopback)  # noqa: E731
    return {
        f"loopback-{adapter}": alternate(
            lambda: run("ours", ours), theirs, messages, "msg/s", rounds, seconds
        )
    }
