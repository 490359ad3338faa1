"""The broker served over TCP with asyncio: the I/O around :mod:`amqp_sansio.broker`.

One task per connection reads, feeds the broker connection and writes out every connection
with pending output (a publish on one connection makes deliveries on others); one timer
fires the engines' deadlines (on the loop's clock, ``now``) and message expiry (on the wall
clock, :func:`time.time`, ``wall``): the core is given each clock for its purpose.

Embedding::

    async with serve_broker() as server:     # asyncio
        url = server.url                      # amqp://127.0.0.1:<port>

    with run_broker() as server:              # blocking code: the loop runs in a thread
        ...

With ``store=DIR`` (a directory) durable messages are kept in the SQLite store of
:mod:`amqp_sansio.adapters.broker.store` and come back when a broker starts on the same
directory. From the shell: ``amqp-sansio broker [--host H] [--port P] [--store DIR]
[--users FILE] [--allow-anonymous] [connection limits]``.

The connection limits of :class:`~amqp_sansio.broker.BrokerConfig` are the core's; this
adapter gives the core each client's address (per-address limits), drives its timers
(handshake time-out, the held answer of a failed login) and closes a transport once its
connection has :attr:`~amqp_sansio.broker.BrokerConnection.ended`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from amqp_sansio import Error, Symbol
from amqp_sansio.broker import Broker, BrokerConfig, BrokerConnection, Store, Users

from .store import SQLiteStore

__all__ = ["BrokerServer", "OpenBrokerRefused", "open_broker", "run_broker", "serve_broker"]

log = logging.getLogger("amqp_sansio.adapters.broker")

#: Bytes read from a socket at a time.
READ_SIZE = 256 * 1024
#: Written bytes waiting in a transport above which its reader stops reading until they
#: drain (a slow consumer does not make the broker buffer without bound).
HIGH_WATER = 4 * 1024 * 1024
#: Seconds a stopping broker waits for its clients to answer its close.
STOP_GRACE = 1.0
#: The condition of a stopping broker's close (core spec 2.8.15).
FORCED = Symbol("amqp:connection:forced")


class BrokerServer:
    """A listening broker on an asyncio loop. ``broker`` is the core
    :class:`~amqp_sansio.broker.Broker` (its nodes can be inspected); ``port`` and ``url``
    say where it listens."""

    def __init__(
        self,
        broker: Broker,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self.broker = broker
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        self._server: asyncio.base_events.Server | None = None
        self._writers: dict[BrokerConnection, asyncio.StreamWriter] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None

    @property
    def url(self) -> str:
        scheme = "amqps" if self.ssl_context is not None else "amqp"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop listening, close every connection with ``amqp:connection:forced`` (core spec
        2.8.15: the clients' reconnection policies come back), wait up to ``grace`` seconds
        for their answering closes, then end what is left."""
        if self._server is not None:
            self._server.close()
        stopping = Error(condition=FORCED, description="the broker is stopping")
        for conn in list(self._writers):
            conn.close(stopping)
        self._flush()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace)
        # Those that did not answer: their transports go, which ends their tasks' reads.
        for writer in list(self._writers.values()):
            writer.transport.abort()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=grace)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        if self._timer is not None:
            self._timer.cancel()

    # -- serving ----------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        loop = asyncio.get_running_loop()
        sock = writer.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = writer.get_extra_info("peername")
        address = peer[0] if isinstance(peer, tuple) and peer else None
        conn = self.broker.accept(
            loop.time(), wall=time.time(), ssl_context=self.ssl_context, address=address
        )
        self._writers[conn] = writer
        try:
            while not conn.ended:
                data = await reader.read(READ_SIZE)
                if not data:
                    break
                conn.receive_data(data, loop.time(), wall=time.time())
                self._flush()
                transport = writer.transport
                if transport.get_write_buffer_size() > HIGH_WATER:
                    await writer.drain()
        except ConnectionError:
            pass
        except Exception:  # a bug met by one connection: that connection goes, no other
            log.exception("broker connection failed")
        finally:
            if conn.refused is not None:
                _log_refusal(conn, writer.get_extra_info("peername"))
            self._writers.pop(conn, None)
            conn.connection_lost(loop.time(), wall=time.time())
            self._flush()
            writer.close()
            self._tasks.discard(task)

    def _flush(self) -> None:
        """Write out every connection with pending output, and set the timer."""
        for conn in self.broker.pending():
            writer = self._writers.get(conn)
            if writer is None:
                continue
            data = conn.data_to_send()
            if data:
                writer.write(data)
            if conn.ended:
                writer.close()
        self._arm()

    def _arm(self) -> None:
        loop = asyncio.get_running_loop()
        at: float | None = None
        for conn in self._writers:
            deadline = conn.next_deadline()
            if deadline is not None and (at is None or deadline < at):
                at = deadline
        expiry = self.broker.next_expiry()
        if expiry is not None:
            when = loop.time() + max(0.0, expiry - time.time())
            at = when if at is None else min(at, when)
        if at == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = at
        self._timer = None if at is None else loop.call_at(at, self._fire)

    def _fire(self) -> None:
        loop = asyncio.get_running_loop()
        self._timer = self._timer_at = None
        now, wall = loop.time(), time.time()
        self.broker.expire(wall)
        for conn in list(self._writers):
            deadline = conn.next_deadline()
            if deadline is not None and deadline <= now:
                try:
                    conn.handle_timer(now, wall=wall)
                except Exception:  # pragma: no cover - as in _serve
                    log.exception("broker connection failed")
                    self._writers.pop(conn).close()
        self._flush()


def _log_refusal(conn: BrokerConnection, peer: Any) -> None:
    """Say in the log why a client was refused before AMQP began (no SASL where the broker
    requires it, a failed authentication), with its address; never a credential."""
    where = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else "a client"
    log.warning("refused the connection from %s: %s", where, conn.refused)


def open_broker(
    config: BrokerConfig | None = None, store: Store | str | os.PathLike[str] | None = None
) -> tuple[Broker, SQLiteStore | None]:
    """A core broker with ``store``: a :class:`~amqp_sansio.broker.Store`, or a directory,
    whose :class:`~amqp_sansio.adapters.broker.store.SQLiteStore` is opened and whose
    messages are restored (then returned too, for the caller to close). Raises
    :class:`~amqp_sansio.adapters.broker.store.StoreError` for a store it cannot use."""
    if store is None or not isinstance(store, (str, os.PathLike)):
        return Broker(config, store=store), None
    opened = SQLiteStore(store)
    broker = Broker(config, store=opened)
    try:
        opened.load(broker, time.time())
    except BaseException:
        opened.close()
        raise
    return broker, opened


@contextlib.asynccontextmanager
async def serve_broker(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: BrokerConfig | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> AsyncIterator[BrokerServer]:
    """Serve a broker on the running loop for the duration of the block. ``store``: a
    :class:`~amqp_sansio.broker.Store`, or a directory for the durable SQLite store
    (opened, its messages restored, closed at the end; see :func:`open_broker`)."""
    broker, opened = open_broker(config, store)
    try:
        server = BrokerServer(broker, host=host, port=port, ssl_context=ssl_context)
        await server.start()
        try:
            yield server
        finally:
            await server.stop()
    finally:
        if opened is not None:
            opened.close()


@contextlib.contextmanager
def run_broker(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    config: BrokerConfig | None = None,
    store: Store | str | os.PathLike[str] | None = None,
    ssl_context: ssl.SSLContext | None = None,
) -> Iterator[BrokerServer]:
    """Serve a broker from a background thread (its own asyncio loop) for the duration of
    the block: for blocking code and tests. The server's ``broker`` is the loop's: inspect
    it, but change nothing from this thread while it runs."""
    ready = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> None:
        stop = asyncio.Event()
        box["loop"], box["stop"] = asyncio.get_running_loop(), stop
        try:
            async with serve_broker(
                host=host, port=port, config=config, store=store, ssl_context=ssl_context
            ) as server:
                box["server"] = server
                ready.set()
                await stop.wait()
        except Exception as exc:
            box["error"] = exc
        finally:
            ready.set()  # (also when it could not start)

    thread = threading.Thread(target=asyncio.run, args=(main(),), name="broker", daemon=True)
    thread.start()
    ready.wait()
    if "server" not in box:
        thread.join()
        raise box.get("error") or RuntimeError("the broker did not start")
    try:
        yield box["server"]
    finally:
        box["loop"].call_soon_threadsafe(box["stop"].set)
        thread.join(timeout=10)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


class OpenBrokerRefused(Exception):
    """An open broker (no users) asked to listen beyond the loopback without
    ``allow_anonymous``."""


#: What an open broker says at start (stderr), and why it may not listen beyond the loopback.
OPEN_WARNING = (
    "amqp-sansio broker: this broker is OPEN (no --users): any client that reaches it may "
    "connect anonymously and send to and receive from any address"
)


def main(
    host: str,
    port: int,
    *,
    users_file: str | None = None,
    store_dir: str | None = None,
    allow_anonymous: bool = False,
    limits: Mapping[str, object] | None = None,
) -> None:
    """Run a broker until SIGINT or SIGTERM (``amqp-sansio broker``). ``users_file``: the
    users and their access rules (see :class:`~amqp_sansio.broker.Users`); PLAIN is offered
    without TLS only on a loopback address. ``store_dir``: the durable store's directory
    (:mod:`amqp_sansio.adapters.broker.store`). ``limits``: fields of
    :class:`~amqp_sansio.broker.BrokerConfig` (its limits on messages and queues, and on
    connections).

    Without ``users_file`` the broker is open: it says so on stderr at start, and refuses
    (:class:`OpenBrokerRefused`, before listening) to listen beyond the loopback unless
    ``allow_anonymous``."""
    import signal
    import sys

    users = None
    if users_file is not None:
        with open(users_file, encoding="utf-8") as f:
            users = Users.from_json(f.read())
    elif not _loopback(host) and not allow_anonymous:
        raise OpenBrokerRefused(
            f"an open broker (no --users) listens only on a loopback address, not {host!r}, "
            "unless --allow-anonymous"
        )
    fields: dict[str, Any] = dict(limits or {})  # checked by BrokerConfig itself
    config = BrokerConfig(users=users, allow_insecure_auth=_loopback(host), **fields)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        async with serve_broker(host=host, port=port, config=config, store=store_dir) as server:
            print(f"amqp-sansio broker listening on {server.url}", flush=True)
            if store_dir is not None:
                kept = sum(node.depth for node in server.broker.nodes.values())
                print(f"{kept} durable messages restored from {store_dir}", flush=True)
            if users is None:  # (after the lines on stdout, which programs read in order)
                print(OPEN_WARNING, file=sys.stderr, flush=True)
            await stop.wait()

    asyncio.run(run())


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
        socket.create_connection((parsed.host, parsed.port), timeout=2).close()
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
