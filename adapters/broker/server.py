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
[--users FILE] [--allow-anonymous] [--tls-cert PEM ...] [--log-level L] [limits]``.

TLS: with an ``ssl_context`` alone the port is amqps (TLS from the first byte, core spec
5.2.1); with ``tls_port`` too, amqps listens there, and the plain port takes the TLS
protocol header (TLS negotiated after it, core spec 5.2) as well as plain AMQP and SASL.

Logs, on the logger ``amqp_sansio.broker`` (never a password or other secret): a line per
connection opened (INFO: peer, user, TLS, container-id) and closed (INFO: why, how long,
messages in and out); a connection that ends before its open (refused, TLS failed, the
client gone) gets one line (WARNING, or INFO for a client that just went), at most one per
source address per :data:`LOG_INTERVAL` seconds, the rest counted in one line after it.
Every per-connection failure line (those, a close with an error, a failure of the broker
met by one connection) counts in one budget of :data:`LOG_BURST` lines per
:data:`LOG_INTERVAL` for all connections; beyond it they are counted, and said in one
"suppressed K similar lines" line, so a flood of failing connections writes a bounded log.

The connection limits of :class:`~amqp_sansio.broker.BrokerConfig` are the core's; this
adapter gives the core each client's address (per-address limits), drives its timers
(handshake time-out, the held answer of a failed login) and closes a transport once its
connection has :attr:`~amqp_sansio.broker.BrokerConnection.ended`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import functools
import gc
import ipaddress
import logging
import os
import socket
import ssl
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from typing import Any

from amqp_sansio import Error, Symbol
from amqp_sansio.amqp091 import PROTOCOL_HEADER
from amqp_sansio.broker import OLDER_PROTOCOL as OLDER
from amqp_sansio.broker import (
    Broker,
    BrokerConfig,
    BrokerConnection,
    BrokerConnection010,
    BrokerConnection091,
    Store,
    Users,
    pick_protocol,
)

from .._transports import transport_for
from ..aio import within
from .store import SQLiteStore

__all__ = ["BrokerServer", "OpenBrokerRefused", "open_broker", "run_broker", "serve_broker"]

log = logging.getLogger("amqp_sansio.broker")

#: A connection of any protocol (the first 8 octets chose: see ``pick_protocol``).
AnyConnection = BrokerConnection | BrokerConnection091 | BrokerConnection010
#: Bytes read from a socket at a time.
READ_SIZE = 256 * 1024
#: Written bytes waiting in a transport above which its reader stops reading until they
#: drain (a slow consumer does not make the broker buffer without bound).
HIGH_WATER = 4 * 1024 * 1024
#: Seconds a stopping broker waits for its clients to answer its close.
STOP_GRACE = 1.0
#: The condition of a stopping broker's close (core spec 2.8.15).
FORCED = Symbol("amqp:connection:forced")
#: Seconds within which one source address gets at most one log line for connections that
#: ended before their open (refused, TLS failed, gone); the rest are counted, in one line.
LOG_INTERVAL = 1.0
#: Per-connection failure lines (ended before the open, closed with an error, a failure of
#: the broker met by one connection) the log takes per :data:`LOG_INTERVAL`, all
#: connections together; the rest are counted, in one "suppressed" line after it.
LOG_BURST = 20


async def _tcp_listen(
    serve: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]],
    host: str,
    port: int,
) -> asyncio.base_events.Server:
    """A TCP listener on ``host``:``port`` (the transport of every scheme: TLS and the
    WebSocket binding are layers of each connection's stack, :class:`Listener`)."""
    return await asyncio.start_server(serve, host, port)


#: The paths of the WebSocket ports' binding (``ws_port``, ``wss_port``): ``/`` and Azure's
#: SDKs' path.
WEBSOCKET_PATHS = ("/", "/$servicebus/websocket")


@dataclasses.dataclass(frozen=True)
class Listener:
    """What serves one URL scheme's port: ``listen`` opens it (``(serve, host, port)``),
    and each accepted connection gets the layers named here, which the broker's ``accept``
    stacks (:func:`amqp_sansio.security.stack.stack`). ``tls``: TLS from the first byte
    (core spec 5.2.1) with the server's ``ssl_context``; ``tls_header``: with an
    ``ssl_context``, TLS after the client's TLS protocol header, or plain AMQP and SASL
    (core spec 5.2); ``websocket``: the AMQP WebSocket binding at these paths
    (:doc:`websockets`), inside TLS if there is TLS."""

    listen: Callable[..., Awaitable[asyncio.base_events.Server]]
    tls: bool = False
    tls_header: bool = False
    websocket: tuple[str, ...] | None = None


#: The broker server's transports, by URL scheme (see :mod:`.._transports`): what listens
#: for a port's connections and which layers its connections get.
LISTENERS: dict[str, Listener] = {
    "amqp": Listener(_tcp_listen, tls_header=True),
    "amqps": Listener(_tcp_listen, tls=True),
    "ws": Listener(_tcp_listen, websocket=WEBSOCKET_PATHS),
    "wss": Listener(_tcp_listen, tls=True, websocket=WEBSOCKET_PATHS),
}


class BrokerServer:
    """A listening broker on an asyncio loop. ``broker`` is the core
    :class:`~amqp_sansio.broker.Broker` (its nodes can be inspected); ``port`` and ``url``
    say where it listens. ``ssl_context`` alone makes ``port`` amqps; with ``tls_port``
    too (0: any free port) amqps listens there (``tls_url``) and ``port`` stays plain,
    taking the TLS protocol header as well (core spec 5.2). ``ws_port`` (0: any free port)
    serves AMQP 1.0 over the WebSocket binding too (``ws_url``; :doc:`websockets`), and
    ``wss_port`` (0: any free port; it needs the ``ssl_context``) the binding inside TLS
    from the first byte (``wss_url``)."""

    def __init__(
        self,
        broker: Broker,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
        tls_port: int | None = None,
        ws_port: int | None = None,
        wss_port: int | None = None,
    ) -> None:
        if tls_port is not None and ssl_context is None:
            raise ValueError("tls_port needs an ssl_context")
        if wss_port is not None and ssl_context is None:
            raise ValueError("wss_port needs an ssl_context")
        self.broker = broker
        # A publisher's confirms go out before the deliveries its publishes make (which
        # _flush has made in the next turn): it publishes on while those are written.
        broker.answers_first = True
        self.host = host
        self.port = port
        self.ssl_context = ssl_context
        #: The amqps port (TLS from the first byte) beside the plain one; None: ``port``
        #: alone, amqps if there is an ``ssl_context``.
        self.tls_port = tls_port
        #: The port of the AMQP WebSocket binding (plain ``ws``), or None.
        self.ws_port = ws_port
        #: The port of the AMQP WebSocket binding inside TLS (``wss``), or None.
        self.wss_port = wss_port
        self._server: asyncio.base_events.Server | None = None
        self._tls_server: asyncio.base_events.Server | None = None
        self._ws_server: asyncio.base_events.Server | None = None
        self._wss_server: asyncio.base_events.Server | None = None
        self._failures = _FailureLines(log)
        self._early = _EarlyEnds(self._failures)
        self._writers: dict[AnyConnection, asyncio.StreamWriter] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        #: A further turn of handing messages to consumers is scheduled.
        self._more = False
        #: Connections the broker reads no further for now (its resource alarm), each
        #: with what wakes its reader.
        self._paused: dict[AnyConnection, asyncio.Event] = {}

    @property
    def url(self) -> str:
        """``amqp://HOST:PORT``, or ``amqps://`` when ``port`` is amqps (an ``ssl_context``
        without ``tls_port``)."""
        amqps = self.ssl_context is not None and self.tls_port is None
        return self._url("amqps" if amqps else "amqp", self.port)

    @property
    def tls_url(self) -> str | None:
        """``amqps://HOST:TLS_PORT`` with a ``tls_port``, else None."""
        return None if self.tls_port is None else self._url("amqps", self.tls_port)

    @property
    def ws_url(self) -> str | None:
        """``ws://HOST:WS_PORT`` with a ``ws_port``, else None."""
        return None if self.ws_port is None else self._url("ws", self.ws_port)

    @property
    def wss_url(self) -> str | None:
        """``wss://HOST:WSS_PORT`` with a ``wss_port``, else None."""
        return None if self.wss_port is None else self._url("wss", self.wss_port)

    def _url(self, scheme: str, port: int) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{port}"

    async def start(self) -> None:
        both = self.ssl_context is not None and self.tls_port is not None
        scheme = "amqps" if self.ssl_context is not None and not both else "amqp"
        self._server = await self._listen(scheme, self.port)
        try:
            if both:
                self._tls_server = await self._listen("amqps", self.tls_port or 0)
                self.tls_port = self._tls_server.sockets[0].getsockname()[1]
            if self.ws_port is not None:
                self._ws_server = await self._listen("ws", self.ws_port)
                self.ws_port = self._ws_server.sockets[0].getsockname()[1]
            if self.wss_port is not None:
                self._wss_server = await self._listen("wss", self.wss_port)
                self.wss_port = self._wss_server.sockets[0].getsockname()[1]
        except BaseException:
            for listening in filter(None, self._listening()):
                listening.close()
            raise
        self.port = self._server.sockets[0].getsockname()[1]

    async def _listen(self, scheme: str, port: int) -> asyncio.base_events.Server:
        """Listen on ``port`` for connections of ``scheme`` through its entry in
        :data:`LISTENERS`, which says their layers: TLS from the first byte, the TLS
        protocol header taken (core spec 5.2) when the server has an ``ssl_context``, the
        WebSocket binding. Each accepted connection's layers are stacked by the broker's
        ``accept`` (:func:`amqp_sansio.security.stack.stack`)."""
        listener = transport_for(LISTENERS, scheme)
        tls = self.ssl_context if listener.tls or listener.tls_header else None
        if listener.tls and tls is None:
            raise ValueError(f"a {scheme}:// port needs an ssl_context")
        serve = functools.partial(
            self._serve,
            tls=tls,
            tls_header=tls is not None and listener.tls_header,
            websocket=listener.websocket,
        )
        return await listener.listen(serve, self.host, port)

    def _listening(self) -> tuple[asyncio.base_events.Server | None, ...]:
        return (self._server, self._tls_server, self._ws_server, self._wss_server)

    async def stop(self, grace: float = STOP_GRACE) -> None:
        """Stop listening, close every connection with ``amqp:connection:forced`` (core spec
        2.8.15: the clients' reconnection policies come back), wait up to ``grace`` seconds
        for their answering closes, then end what is left."""
        for listening in filter(None, self._listening()):
            listening.close()
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
        for listening in filter(None, self._listening()):
            await listening.wait_closed()
        if self._timer is not None:
            self._timer.cancel()
        self._early.flush()
        self._failures.flush()

    # -- serving ----------------------------------------------------------------------------

    async def _serve(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        tls: ssl.SSLContext | None,
        tls_header: bool,
        websocket: tuple[str, ...] | None = None,
    ) -> None:
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
        where = _where(peer)
        started = loop.time()
        conn10 = self.broker.accept(
            started,
            wall=time.time(),
            address=address,
            ssl_context=tls,
            tls_header=tls_header,
            websocket_paths=websocket,
        )
        self._flush()  # (an idle connection it evicted to make room says why, and goes)
        conn: AnyConnection = conn10
        first = b""
        if not conn10.ended and (tls is None or tls_header) and websocket is None:
            # The first 8 octets pick the engine (on the amqps port, the first 8 after the
            # TLS handshake: see ProtocolSniffer).
            first = await self._header(reader)
            protocol = pick_protocol(first)
            if protocol in self.broker.acceptors:
                conn = self.broker.accept_header(
                    protocol, loop.time(), wall=time.time(), address=address, replacing=conn10
                )
            elif protocol == OLDER:
                # An earlier 0-x: the header we speak of that line, and the connection
                # closes (0-9-1 spec 4.2.2), as RabbitMQ does.
                writer.write(PROTOCOL_HEADER)
                conn10.record.ending_because("the client asked for an AMQP 0-x we do not speak")
                conn10.cut = True
                first = b""
        log.debug(
            "connection from %s accepted%s",
            where,
            " (TLS from the first byte)" if tls and not tls_header else "",
        )
        self._writers[conn] = writer
        said_open = False
        went = "the client went away without a close"
        try:
            if first and not conn.ended:
                conn.receive_data(first, loop.time(), wall=time.time())
            self._flush()  # (and the timer: its handshake time-out may be due already)
            while not conn.ended:
                if not conn.reading:  # (the broker's resource alarm: see BrokerConfig)
                    resumed = self._paused[conn] = asyncio.Event()
                    await resumed.wait()
                    continue
                data = await reader.read(READ_SIZE)
                if not data:
                    break
                conn.receive_data(data, loop.time(), wall=time.time())
                conn = self._tls_switch(conn, writer, address)
                if conn.record.opened and not said_open:
                    said_open = True
                    _log_opened(conn, where)
                self._flush()
                transport = writer.transport
                if transport.get_write_buffer_size() > HIGH_WATER:
                    await writer.drain()
        except ConnectionError as exc:
            went = f"the connection broke ({exc.strerror or type(exc).__name__})"
        except Exception:  # a bug met by one connection: that connection goes, no other
            self._failures.log(logging.ERROR, "broker connection failed", exc_info=True)
            went = "a failure of the broker (logged above)"
        finally:
            self._log_end(conn, address or where, where, went, loop.time() - started, said_open)
            self._writers.pop(conn, None)
            self._paused.pop(conn, None)
            conn.connection_lost(loop.time(), wall=time.time())
            self._flush()
            writer.close()
            self._tasks.discard(task)

    def _log_end(
        self, conn: AnyConnection, source: str, where: str, went: str, lived: float, opened: bool
    ) -> None:
        """The line of a connection that ended: a refusal, an end before the open (at most
        one per source address a second), a close with an error (both in the failure
        lines' budget: :class:`_FailureLines`) or a close."""
        if conn.refused is not None:
            self._early.line(
                source, logging.WARNING, f"refused the connection from {where}: {conn.refused}"
            )
        elif not opened:
            why = conn.record.ending or went
            self._early.line(
                source,
                logging.INFO if conn.record.ending is None else logging.WARNING,
                f"connection from {where} ended before its open, after {lived:.2f} s: {why}",
            )
        elif conn.record.ending == "closed by the client":
            _log_closed(conn, where, conn.record.ending, lived, log.info)
        else:  # (closed with an error, or the client gone without a close: a failure line)
            _log_closed(conn, where, conn.record.ending or went, lived, self._failures.info)

    def _tls_switch(
        self, conn: AnyConnection, writer: asyncio.StreamWriter, address: str | None
    ) -> AnyConnection:
        """On the amqps port, once the header after the TLS handshake is another engine's
        (the TLS layer's inner object ``wants`` it): that engine's connection in the 1.0
        one's place (the TLS layer goes on under it)."""
        if not isinstance(conn, BrokerConnection):
            return conn
        tls = conn.tls_wanting
        if tls is None:
            return conn
        self._writers.pop(conn, None)
        loop = asyncio.get_running_loop()
        other: AnyConnection = self.broker.accept_header(
            getattr(tls.inner, "wants", ""),
            loop.time(),
            wall=time.time(),
            address=address,
            replacing=conn,
        )
        self._writers[other] = writer
        return other

    async def _header(self, reader: asyncio.StreamReader) -> bytes:
        """The client's first 8 octets (fewer if it goes, or is silent past the handshake
        time-out): its protocol header, which picks the engine."""
        timeout = self.broker.config.handshake_timeout
        try:
            return await within(reader.readexactly(8), timeout)
        except asyncio.IncompleteReadError as exc:
            return exc.partial
        except (TimeoutError, ConnectionError):
            return b""

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
        for conn, resumed in list(self._paused.items()):
            if conn.reading or conn.ended:
                del self._paused[conn]
                resumed.set()
        if self.broker.dispatching and not self._more:
            # This turn is written: consumers have it while the next is made, and what the
            # other connections sent meanwhile is read first.
            self._more = True
            asyncio.get_running_loop().call_soon(self._dispatch_more)
        self._arm()

    def _dispatch_more(self) -> None:
        self._more = False
        self.broker.dispatch_more()
        self._flush()

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
                    self._failures.log(logging.ERROR, "broker connection failed", exc_info=True)
                    self._writers.pop(conn).close()
        self._flush()


def _where(peer: Any) -> str:
    """A client's address and port for the log: ``127.0.0.1:50912``, ``[::1]:50912``."""
    if isinstance(peer, tuple) and len(peer) >= 2:
        host = f"[{peer[0]}]" if ":" in str(peer[0]) else peer[0]
        return f"{host}:{peer[1]}"
    return "a client"


def _user(conn: AnyConnection) -> str:
    """Who the connection is, for the log: the SASL identity and its mechanism."""
    if not isinstance(conn, BrokerConnection):
        return f"{_quoted(conn.identity or 'anonymous')} (AMQP {conn.protocol})"
    mechanism = conn.engine.sasl_mechanism or "no SASL"
    return f"{_quoted(conn.identity or 'anonymous')} ({mechanism})"


def _quoted(text: str) -> str:
    """A client's text (a container-id, a user name) in a log line: as is when it is plain,
    else quoted with escapes (a line break could forge a line), at most 200 characters."""
    text = text if len(text) <= 200 else text[:197] + "..."
    plain = text.isprintable() and text.strip() == text and " " not in text and text
    return text if plain else repr(text)


def _log_opened(conn: AnyConnection, where: str) -> None:
    if not isinstance(conn, BrokerConnection):  # (0-9-1, 0-10: a virtual host)
        vhost = conn.vhost.name if conn.vhost is not None else "?"
        log.info(
            "connection from %s opened: user %s, %s, vhost %s",
            where,
            _user(conn),
            conn.record.tls or "no TLS",
            _quoted(vhost),
        )
        return
    remote = conn.engine.remote
    container = _quoted(remote.container_id) if remote is not None else "?"
    log.info(
        "connection from %s opened: user %s, %s, container-id %s",
        where,
        _user(conn),
        conn.record.tls or "no TLS",
        container,
    )


def _log_closed(
    conn: AnyConnection, where: str, why: str, lived: float, say: Callable[..., None]
) -> None:
    say(
        "connection from %s closed after %s: %s; user %s, messages %d in, %d out",
        where,
        _duration(lived),
        why,
        _user(conn),
        conn.record.messages_in,
        conn.record.messages_out,
    )


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


class _FailureLines:
    """The log's per-connection failure lines, all connections together: at most
    :data:`LOG_BURST` per :data:`LOG_INTERVAL` seconds (on the running loop's clock); those
    beyond are counted and said in one line when the interval ends (that line counts in
    the next interval's budget), so a flood of failing connections writes a bounded log."""

    def __init__(
        self, logger: logging.Logger, interval: float = LOG_INTERVAL, burst: int = LOG_BURST
    ) -> None:
        self._log = logger
        self.interval = interval
        self.burst = burst
        self._used = 0
        self._suppressed = 0
        self._level = logging.NOTSET
        self._timer: asyncio.TimerHandle | None = None

    def info(self, message: str, *args: Any) -> None:
        self.log(logging.INFO, message % args if args else message)

    def log(self, level: int, text: str, *, exc_info: bool = False) -> None:
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.interval, self._end)
        if self._used < self.burst:
            self._used += 1
            self._log.log(level, "%s", text, exc_info=exc_info)
        else:
            self._suppressed += 1
            self._level = max(self._level, level)

    def _end(self) -> None:
        self._timer = None
        self._used = 0
        if self._suppressed:
            self._say()
            self._used = 1
            self._timer = asyncio.get_running_loop().call_later(self.interval, self._end)

    def _say(self) -> None:
        count, self._suppressed = self._suppressed, 0
        level, self._level = self._level, logging.NOTSET
        self._log.log(
            level,
            "suppressed %d similar line%s (connection failures) in %g s: at most %d a %g s",
            count,
            "" if count == 1 else "s",
            self.interval,
            self.burst,
            self.interval,
        )

    def flush(self) -> None:
        """Say what was suppressed at once (the broker is stopping)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._suppressed:
            self._say()


class _EarlyEnds:
    """The log lines of connections that ended before their open (refused, TLS failed, the
    client gone): at most one per source address per :data:`LOG_INTERVAL` seconds, on the
    running loop's clock. Those that come within the interval are counted, and said in one
    line when it ends (which starts the next interval), with the last one's words."""

    def __init__(self, lines: _FailureLines, interval: float = LOG_INTERVAL) -> None:
        self._log = lines
        self.interval = interval
        #: By source address: [lines held, highest level, last line, the interval's timer].
        self._held: dict[str, list[Any]] = {}

    def line(self, address: str, level: int, text: str) -> None:
        held = self._held.get(address)
        if held is None:
            self._log.log(level, text)
            self._start(address)
        else:
            held[0] += 1
            held[1] = max(held[1], level)
            held[2] = text

    def _start(self, address: str) -> None:
        timer = asyncio.get_running_loop().call_later(self.interval, self._end, address)
        self._held[address] = [0, logging.NOTSET, "", timer]

    def _end(self, address: str) -> None:
        count, level, text, _ = self._held.pop(address)
        if count:
            self._say(address, count, level, text)
            self._start(address)

    def _say(self, address: str, count: int, level: int, text: str) -> None:
        self._log.log(
            level,
            f"{count} more connection{'' if count == 1 else 's'} from {address} ended before "
            f"their open in {self.interval:g} s, not logged one by one; the last: {text}",
        )

    def flush(self) -> None:
        """Say what is held at once (the broker is stopping)."""
        held, self._held = self._held, {}
        for address, (count, level, text, timer) in held.items():
            timer.cancel()
            if count:
                self._say(address, count, level, text)


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
    tls_port: int | None = None,
    ws_port: int | None = None,
    wss_port: int | None = None,
) -> AsyncIterator[BrokerServer]:
    """Serve a broker on the running loop for the duration of the block. ``store``: a
    :class:`~amqp_sansio.broker.Store`, or a directory for the durable SQLite store
    (opened, its messages restored, closed at the end; see :func:`open_broker`).
    ``ssl_context``, ``tls_port``, ``ws_port`` and ``wss_port``: as :class:`BrokerServer`
    takes them."""
    broker, opened = open_broker(config, store)
    try:
        server = BrokerServer(
            broker,
            host=host,
            port=port,
            ssl_context=ssl_context,
            tls_port=tls_port,
            ws_port=ws_port,
            wss_port=wss_port,
        )
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
    tls_port: int | None = None,
    ws_port: int | None = None,
    wss_port: int | None = None,
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
                host=host,
                port=port,
                config=config,
                store=store,
                ssl_context=ssl_context,
                tls_port=tls_port,
                ws_port=ws_port,
                wss_port=wss_port,
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


#: What begins every line the command writes to stderr (its log).
LOG_PREFIX = "amqp-sansio broker: "
#: What an open broker says at start (stderr), and why it may not listen beyond the loopback.
OPEN_WARNING = (
    LOG_PREFIX + "this broker is OPEN (no --users): any client that reaches it may "
    "connect anonymously and send to and receive from any address"
)
#: The command's log levels (``--log-level``), and its default.
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_LEVEL = "info"
#: The amqps port of the command (``--tls-port``) when it has a certificate.
TLS_PORT = 5671


class LogFormatter(logging.Formatter):
    """The command's log line: when (ISO 8601, UTC, to the millisecond, as
    ``2026-12-05T09:14:05.123Z``), then :data:`LOG_PREFIX` and the message: a line a person
    or ``grep`` places in time, the same wherever the broker runs."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s " + LOG_PREFIX + "%(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        when = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        return when.isoformat(timespec="milliseconds").removesuffix("+00:00") + "Z"


@contextlib.contextmanager
def log_to_stderr(level: str = LOG_LEVEL) -> Iterator[None]:
    """For the duration of the block, the command's log: each line on stderr, its time
    and :data:`LOG_PREFIX` first (:class:`LogFormatter`), the package's loggers
    (``amqp_sansio.*``) from ``level`` up (one of :data:`LOG_LEVELS`), others' from WARNING.
    The handler and the levels go at the end (the command may run inside another
    program, or a test)."""
    import sys

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogFormatter())
    root, package = logging.getLogger(), logging.getLogger("amqp_sansio")
    levels = root.level, package.level
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    package.setLevel(level.upper())
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(levels[0])
        package.setLevel(levels[1])


#: The process's garbage collector thresholds while ``amqp-sansio broker`` runs (Python's
#: default: 700, 10, 10): each message makes short-lived objects by the dozen, which
#: reference counting frees; the collector is for cycles, and its young generation is
#: then swept once 50,000 more objects were made than freed rather than 700 (about 7% of
#: the broker's CPU for a message before).
GC_THRESHOLDS = (50_000, 20, 20)


@contextlib.contextmanager
def _process_kept() -> Iterator[None]:
    """What the broker changes of its process while it runs, put back when it stops: the
    SIGINT and SIGTERM handlers (asyncio's, which stop it), and the collector's thresholds
    and frozen objects (:func:`_tune_gc`). ``amqp-sansio broker`` run inside another
    program (:func:`amqp_sansio.adapters.cli.main`) leaves that program as it found it:
    without this, a program that ignored SIGINT would take Ctrl-C again, and would pass
    that on to every process it starts."""
    import signal

    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    thresholds = gc.get_threshold()
    frozen = gc.get_freeze_count()
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        if frozen == 0:
            gc.unfreeze()
        if threading.current_thread() is threading.main_thread():
            for sig, handler in handlers.items():
                if handler is not None:  # (None: set outside Python, not ours to restore)
                    signal.signal(sig, handler)


def _tune_gc() -> None:
    """The broker process's collector: what was made at start (modules, the broker and
    its store) set aside from the collections (``gc.freeze``), and :data:`GC_THRESHOLDS`."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def main(
    host: str,
    port: int,
    *,
    users_file: str | None = None,
    store_dir: str | None = None,
    allow_anonymous: bool = False,
    limits: Mapping[str, object] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    tls_port: int = TLS_PORT,
    log_level: str = LOG_LEVEL,
    ws_port: int | None = None,
    wss_port: int | None = None,
) -> None:
    """Run a broker until SIGINT or SIGTERM (``amqp-sansio broker``). ``users_file``: the
    users and their access rules (see :class:`~amqp_sansio.broker.Users`); PLAIN is offered
    without TLS only on a loopback address. ``store_dir``: the durable store's directory
    (:mod:`amqp_sansio.adapters.broker.store`). ``limits``: fields of
    :class:`~amqp_sansio.broker.BrokerConfig` (its limits on messages and queues, and on
    connections). ``ssl_context`` (the broker's certificate): amqps on ``tls_port`` too,
    and the TLS protocol header taken on ``port``. ``ws_port``: AMQP 1.0 over the
    WebSocket binding there too (:doc:`websockets`); ``wss_port`` (with ``ssl_context``):
    the binding inside TLS there. ``log_level``: see :func:`log_to_stderr`.

    It prints ``amqp-sansio broker listening on URL`` on stdout for each port (amqp, amqps,
    ws, wss), then the count of messages restored from ``store_dir``. Without ``users_file``
    the broker is open: it says so on stderr at start, and refuses
    (:class:`OpenBrokerRefused`, before listening) to listen beyond the loopback unless
    ``allow_anonymous``. Run inside a program, it stops on the program's SIGINT or SIGTERM
    too, and at the end puts back the handlers those signals had and the collector's
    settings."""
    import signal

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
        async with serve_broker(
            host=host,
            port=port,
            config=config,
            store=store_dir,
            ssl_context=ssl_context,
            tls_port=None if ssl_context is None else tls_port,
            ws_port=ws_port,
            wss_port=wss_port,
        ) as server:
            for url in (server.url, server.tls_url, server.ws_url, server.wss_url):
                if url is not None:
                    print(f"amqp-sansio broker listening on {url}", flush=True)
            if store_dir is not None:
                kept = server.broker.depth  # (of every virtual host)
                print(f"{kept} durable messages restored from {store_dir}", flush=True)
            if users is None:  # (after the lines on stdout, which programs read in order)
                log.warning("%s", OPEN_WARNING.removeprefix(LOG_PREFIX))
            _tune_gc()
            await stop.wait()

    with log_to_stderr(log_level), _process_kept():
        asyncio.run(run())
