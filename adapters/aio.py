"""The high-level API on :mod:`asyncio` streams: :func:`connect`, :func:`listen`.

The same nouns as the blocking :mod:`amqp_sansio.adapters.sockets` API, with ``await``;
see :doc:`adapters`. All protocol decisions are the shared core's
(:mod:`amqp_sansio.client.amqp10`); this module reads, writes, sleeps until the engine's
deadline on the loop's clock, and wakes the tasks that wait.

Each connection runs one task of its own (started by :func:`connect` on the running loop)
that reads and fires timers; writes are made as soon as the core has bytes. Everything
else runs in the caller's task, and any number of tasks may use one connection.

Cancellation: every wait can be cancelled (or given ``timeout``) and leaves the connection
usable. A :meth:`Sender.send` cancelled while it waits for credit has sent nothing; once
the message has gone out, cancelling only stops waiting for its outcome: the delivery
stays tracked (counted in :attr:`Sender.unsettled` until the outcome arrives). A
:meth:`Receiver.receive` cancelled has taken nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
from collections.abc import Awaitable, Callable, Collection, Coroutine, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, cast, overload

from amqp_sansio.client import amqp10 as client
from amqp_sansio.client import recipes
from amqp_sansio.client.amqp010 import Core as Core010
from amqp_sansio.client.amqp091 import ChannelClosedError
from amqp_sansio.client.amqp091 import Core as Core091
from amqp_sansio.client.amqp10 import (
    IncomingConnection,
    IncomingLink,
    OutgoingLink,
    ServerLink,
    WebSocketOptions,
)
from amqp_sansio.client.amqp10.tokens import TokenProvider
from amqp_sansio.client.lifecycle import HELD_CALLS, DrivenCore
from amqp_sansio.client.ops import (
    AuthenticationError,
    ClientError,
    ConnectionClosedError,
    Delivery,
    LinkDetachedError,
    LinkRefusedError,
    PeerWithoutSASLError,
    TransactionError,
)
from amqp_sansio.client.protocols import ConnectKeywords, connect_protocol
from amqp_sansio.client.recipes import Recipe
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.sasl import ServerAuthenticator

from . import _async
from ._transports import proxies, transport_for
from .amqp010._async import Connection010, Session010
from .amqp091._async import Channel, ConfirmTracker, Connection091, Consumer
from .amqp10 import _async as _async10
from .amqp10._async import Receiver, Sender, Tracker, Transaction

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "AuthenticationError",
    "Channel",
    "ChannelClosedError",
    "ClientError",
    "ConfirmTracker",
    "Connection",
    "Connection091",
    "Connection010",
    "Session010",
    "Consumer",
    "ConnectionClosedError",
    "Delivery",
    "IncomingConnection",
    "IncomingLink",
    "LinkDetachedError",
    "LinkRefusedError",
    "OutgoingLink",
    "PeerWithoutSASLError",
    "Receiver",
    "Reconnect",
    "Sender",
    "Server",
    "ServerLink",
    "Tracker",
    "Transaction",
    "TransactionError",
    "connect",
    "listen",
]

C = TypeVar("C", bound="_async.ConnectionBase[Any]")
T = TypeVar("T")

READ_SIZE = 65536
#: The bound of one reconnection attempt's connect, in seconds.
CONNECT_TIMEOUT = 10.0


if sys.version_info >= (3, 11):

    async def within(awaitable: Awaitable[T], timeout: float | None) -> T:
        """``await awaitable``, TimeoutError (the built-in) after ``timeout`` seconds (None:
        no bound). Unlike :func:`asyncio.wait_for` before Python 3.12, a cancellation that
        comes as the awaitable completes is never lost (a Ctrl-C under
        :func:`asyncio.run` is such a cancellation): every wait with a time-out in the
        adapters goes through here."""
        async with asyncio.timeout(timeout):
            return await awaitable

else:  # pragma: no cover - Python 3.10 (CI runs 3.11)

    async def within(awaitable: Awaitable[T], timeout: float | None) -> T:
        try:
            return await asyncio.wait_for(awaitable, timeout)
        except asyncio.TimeoutError:
            raise TimeoutError(f"not done within {timeout} s") from None


class _Driver:
    """The I/O of one core (:class:`~amqp_sansio.client.amqp10.Core`, or the 0-9-1
    :class:`~amqp_sansio.client.amqp091.Core`) over a stream pair."""

    #: A wait that need not wait returns without suspending (see :class:`~._async.Driver`).
    eager = True

    def __init__(
        self, core: DrivenCore, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.core = core
        self.reader = reader
        self.writer = writer
        self.loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        #: Tasks waiting on :attr:`_changed`: a change with nobody waiting makes no event.
        self._waiters = 0
        self._closed = False
        self._flush_scheduled = False
        #: Calls made since the last write.
        self._held = 0
        self.task: asyncio.Task[None] | None = None
        core.notify = self._notify

    def start(self) -> None:
        self.task = self.loop.create_task(self.run())

    def _notify(self) -> None:
        # The write waits for the loop's next turn: what the tasks do in this one (a run
        # of sends under credit, the outcomes of a batch of deliveries) goes out in one
        # write, and the engine can settle a run of deliveries in one disposition; a run
        # of HELD_CALLS calls in one turn is written at once.
        self._held += 1
        if self._held >= HELD_CALLS:
            self.flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self.flush)
        if self._waiters:  # (an event made at every call cost a tenth of a send's time)
            self._changed.set()
            self._changed = asyncio.Event()

    def flush(self) -> None:
        """Write what the core has to send."""
        self._flush_scheduled = False
        self._held = 0
        data = self.core.data_to_send()
        if data and not self._closed:
            self.writer.write(data)

    async def run(self) -> None:
        core, loop = self.core, self.loop
        try:
            while not core.finished:
                if core.lost:
                    if not await self._reconnect():
                        break
                    continue
                deadline = core.next_deadline()
                try:
                    if deadline is None:
                        data = await self.reader.read(READ_SIZE)
                    else:
                        wait = max(0.0, deadline - loop.time())
                        data = await within(self.reader.read(READ_SIZE), wait)
                except TimeoutError:
                    core.handle_timer(loop.time())
                    continue
                except OSError as exc:
                    core.transport_failed(exc, loop.time())
                    continue  # lost, to be reconnected, or ended
                core.receive_data(data, loop.time())
        finally:
            if not core.finished:  # cancelled, or a bug: nobody may wait forever
                core.stop(loop.time())
            await self._close_transport()

    async def _reconnect(self) -> bool:
        """The connection was lost: close the old transport, connect a new one when the
        core says. False if the core gave up."""
        self._closed = True
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()
        attempts = recipes.reconnect_attempts(self.core, None, CONNECT_TIMEOUT)
        streams = await _async.run(attempts, _LOOP, None, None)
        if not isinstance(streams, _Streams):
            return False
        self.reader, self.writer = streams
        self._closed = False
        self.flush()
        return True

    async def _close_transport(self) -> None:
        if self._closed:
            return
        self.flush()
        self._closed = True
        with contextlib.suppress(OSError):
            await self.writer.drain()
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()

    def shielded(self, seconds: float) -> contextlib.AbstractContextManager[object]:
        """Nothing to do: an asyncio cancellation is delivered once, so a cleanup that
        follows it runs (and the close has its own time-out)."""
        return contextlib.nullcontext()

    def cancel(self) -> None:
        """Cancel the connection's task (it closes the transport as it ends)."""
        if self.task is not None:
            self.task.cancel()

    async def stop(self) -> None:
        """Cancel the connection's task, close the transport. (``asyncio.wait`` rather than
        awaiting the task: a cancellation of the caller is not swallowed with the task's.)"""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            await asyncio.wait([self.task])
        await self._close_transport()

    def drained(self) -> bool:
        """Whether :meth:`drain` has nothing to wait for: the transport's write buffer is
        not over its high-water mark (nor closing), or there is no transport to wait for.
        (What :func:`~._async.run` checks before it awaits :meth:`drain`: a send under
        credit then costs no coroutine for it.)"""
        if self._closed or self.core.lost:
            return True
        transport = self.writer.transport
        high = transport.get_write_buffer_limits()[1]
        return not transport.is_closing() and transport.get_write_buffer_size() <= high

    async def drain(self) -> None:
        """Back-pressure: wait while the transport's write buffer is full."""
        if not self._closed and not self.core.lost:
            try:
                await self.writer.drain()
            except OSError as exc:
                self.core.transport_failed(exc, self.loop.time())

    async def wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        """Wait until ``ready()`` (which raises what ends the wait); TimeoutError after
        ``timeout`` seconds."""
        if ready():
            return
        end = None if timeout is None else self.loop.time() + timeout
        while True:
            changed = self._changed
            if ready():
                return
            remaining = None if end is None else end - self.loop.time()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"not done within {timeout} s")
            self._waiters += 1  # no await since ready(): no change was missed
            try:
                if remaining is None:
                    await changed.wait()
                else:
                    with contextlib.suppress(TimeoutError):
                        await within(changed.wait(), remaining)
            finally:
                self._waiters -= 1


class Connection(_async10.Connection):
    __doc__ = _async10.Connection.__doc__
    adapter = "aio"


class _Streams(tuple[asyncio.StreamReader, asyncio.StreamWriter]):
    """A transport: the stream pair of a connection."""


async def _tcp(host: str, port: int, timeout: float | None) -> _Streams:
    """A TCP connection to ``host``:``port`` (the transport of ``amqp`` and ``amqps``: TLS is
    a layer of the stack, :func:`~amqp_sansio.security.stack.stack`)."""
    try:
        streams = await within(asyncio.open_connection(host, port), timeout)
    except TimeoutError:
        raise TimeoutError("timed out") from None
    return _Streams(streams)


#: The asyncio adapter's transports, by URL scheme (see :mod:`._transports`): what opens a
#: connection's streams.
TRANSPORTS: dict[str, Callable[[str, int, float | None], Awaitable[_Streams]]] = {
    "amqp": _tcp,
    "amqps": _tcp,
    "ws": _tcp,
    "wss": _tcp,
}


class _AsyncioLoop:
    """The steps of the recipes (:mod:`amqp_sansio.client.recipes`) that are not a
    connection's, on the running asyncio loop (see :class:`~._async.Loop`)."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep_until(self, deadline: float) -> None:
        await asyncio.sleep(max(0.0, deadline - self.now()))

    async def connect(self, scheme: str, host: str, port: int, timeout: float | None) -> object:
        return await transport_for(TRANSPORTS, scheme)(host, port, timeout)

    def start(
        self, core: DrivenCore, transport: object, timeout: float | None
    ) -> _async.ConnectionBase[Any]:
        assert isinstance(transport, _Streams)
        driver = _Driver(core, *transport)
        conn = CONNECTIONS[type(core)](driver, timeout)
        driver.start()
        driver.flush()
        return conn

    async def abort(self, conn: _async.ConnectionBase[Any]) -> None:
        await conn.close(timeout=0)


_LOOP = _AsyncioLoop()


class _Connecting(Generic[C]):
    """What :func:`connect` returns: await it, or use it with ``async with``."""

    def __init__(self, opening: Callable[[], Coroutine[object, None, C]]) -> None:
        self._opening = opening
        self._conn: C | None = None

    def __await__(self) -> Generator[object, None, C]:
        conn: C = yield from self._opening().__await__()
        return conn

    async def __aenter__(self) -> C:
        self._conn = await self._opening()
        return self._conn

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._conn is not None
        await self._conn.close()


@overload
def connect(
    url: str, *, protocol: Literal["1.0"] = "1.0", **options: Unpack[ConnectKeywords]
) -> _Connecting[Connection]: ...


@overload
def connect(
    url: str, *, protocol: Literal["0-9-1"], **options: Unpack[ConnectKeywords]
) -> _Connecting[Connection091]: ...


@overload
def connect(
    url: str, *, protocol: Literal["0-10"], **options: Unpack[ConnectKeywords]
) -> _Connecting[Connection010]: ...


def connect(
    url: str,
    *,
    protocol: str = "1.0",
    timeout: float | None = 60.0,
    ssl_context: ssl.SSLContext | None = None,
    idle_timeout: float | None = None,
    allow_insecure_auth: bool = False,
    container_id: str | None = None,
    sasl_mechanisms: Collection[str] | None = None,
    reconnect: Reconnect | bool | None = None,
    on_reconnect: Callable[[Connection], None]
    | Callable[[Connection091], None]
    | Callable[[Connection010], None]
    | None = None,
    sasl: bool | None = None,
    token_provider: TokenProvider | None = None,
    proxy: str | bool | None = None,
) -> _Connecting[Connection] | _Connecting[Connection091] | _Connecting[Connection010]:
    """Connect to ``url`` and open an AMQP connection: ``conn = await connect(url)``, or
    ``async with connect(url) as conn``. ``protocol``: ``"1.0"`` (the default) or
    ``"0-9-1"`` (a :class:`Connection091`, see :doc:`amqp091`) or ``"0-10"`` (a
    :class:`Connection010`, see :doc:`amqp010`), never guessed. The options
    are those of the blocking :func:`amqp_sansio.adapters.sockets.connect` (``reconnect``,
    ``on_reconnect``, ``sasl`` and its one fallback without SASL too)."""
    recipe: Recipe[_async.ConnectionBase[Any]] = connect_protocol(
        url,
        protocol,
        timeout=timeout,
        ssl_context=ssl_context,
        allow_insecure_auth=allow_insecure_auth,
        reconnect=reconnect,
        on_reconnect=on_reconnect,
        idle_timeout=idle_timeout,
        container_id=container_id,
        sasl_mechanisms=sasl_mechanisms,
        sasl=sasl,
        token_provider=token_provider,
        proxies=proxies(proxy, url),
    )

    async def connecting() -> _async.ConnectionBase[Any]:
        return await _async.run(recipe, _LOOP, None, timeout)

    return cast(
        "_Connecting[Connection] | _Connecting[Connection091] | _Connecting[Connection010]",
        _Connecting(connecting),
    )


class Server:
    """Serving AMQP connections (:func:`listen`); an async context manager that closes the
    listener and every connection it accepted."""

    def __init__(
        self,
        on_link: Callable[[ServerLink], None],
        options: client.ListenOptions,
        on_connection: Callable[[IncomingConnection], None] | None = None,
    ) -> None:
        self.on_link = on_link
        self.on_connection = on_connection
        self._options = options
        self._server: asyncio.Server | None = None
        self._drivers: set[_Driver] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        core = client.server_core(
            self._options,
            on_link=self.on_link,
            on_connection=self.on_connection,
            peer=writer.get_extra_info("peername"),
        )
        driver = _Driver(core, reader, writer)
        self._drivers.add(driver)
        try:
            await driver.run()
        finally:
            self._drivers.discard(driver)

    async def close(self) -> None:
        """Stop listening, close every connection (their peers are sent a close)."""
        if self._server is not None:
            self._server.close()
        await _async.close_all(list(self._drivers), 1.0)
        if self._server is not None:
            await self._server.wait_closed()

    async def __aenter__(self) -> Server:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def listen(
    host: str,
    port: int,
    on_link: Callable[[ServerLink], None],
    *,
    on_connection: Callable[[IncomingConnection], None] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    sasl: ServerAuthenticator | bool | None = None,
    allow_insecure_auth: bool = False,
    idle_timeout: float | None = None,
    container_id: str = "amqp-sansio-server",
    websocket: WebSocketOptions | None = None,
) -> Server:
    """Listen on ``host``:``port`` (0: any free port, :attr:`Server.port`); as the blocking
    :func:`amqp_sansio.adapters.sockets.listen`, ``on_link`` gets each link a peer
    attaches, in the connection's task (it must not block); so does ``on_connection``
    with each connection."""
    options = client.listen_options(
        container_id=container_id,
        idle_timeout=idle_timeout,
        ssl_context=ssl_context,
        sasl=sasl,
        allow_insecure_auth=allow_insecure_auth,
        websocket=websocket,
    )
    server = Server(on_link, options, on_connection)
    server._server = await asyncio.start_server(server._serve, host, port)
    return server


def _connection10(driver: _async.Driver, timeout: float | None) -> Connection:
    core = driver.core
    address = None if core.url is None else core.url.address
    return Connection(driver, address=address, timeout=timeout)


#: The connection of each protocol, by the type of its client core: a new protocol is
#: one more entry.
CONNECTIONS: dict[type, Callable[[_async.Driver, float | None], _async.ConnectionBase[Any]]] = {
    client.Core: _connection10,
    Core091: lambda driver, timeout: Connection091(driver, timeout=timeout),
    Core010: lambda driver, timeout: Connection010(driver, timeout=timeout),
}
