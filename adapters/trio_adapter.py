"""The high-level API on :mod:`trio`: :func:`connect`, :func:`listen`.

The same nouns as :mod:`amqp_sansio.adapters.aio` (the very same :class:`Connection`,
:class:`Sender`, :class:`Receiver` and :class:`Transaction` calls), on trio's streams; see
:doc:`adapters`. All protocol decisions are the shared core's
(:mod:`amqp_sansio.client.amqp10`); TLS (amqps) is the core's
:class:`~amqp_sansio.TLSLayer` over a plain :func:`trio.open_tcp_stream`, as in the other
adapters.

Nurseries: each connection runs two background tasks (a reader, which also fires the
engine's timers at :meth:`~amqp_sansio.Connection.next_deadline` on trio's clock, and a
writer) inside a cancel scope of its own. ``async with connect(url) as conn`` opens a
nursery for them and closes the connection, then the nursery, when the block ends (an
exception from the block comes out as it is, not in an exception group).
``conn = await connect(url, nursery=nursery)`` starts them in the application's nursery
instead: ``await conn.close()`` (or ``async with conn``) ends them. :func:`listen` is the
same, with a server task that accepts and serves each connection.

Cancellation: every wait can be cancelled (a cancel scope, ``timeout``) and leaves the
connection usable. A :meth:`Sender.send` cancelled while it waits for credit has sent
nothing; once the message has gone out, cancelling only stops waiting for its outcome: the
delivery stays tracked (counted in :attr:`Sender.unsettled` until the outcome arrives). A
:meth:`Receiver.receive` cancelled has taken nothing. Time-outs raise :class:`TimeoutError`,
as in the other adapters.

Trio APIs used (all in trio 0.25): :func:`trio.open_tcp_stream`,
:func:`trio.open_tcp_listeners`, :class:`trio.SocketStream` (``receive_some``,
``send_all``, ``aclose``), :func:`trio.open_nursery`, :class:`trio.CancelScope` (its
``deadline``, ``shield``), :func:`trio.move_on_at`, :func:`trio.move_on_after`,
:func:`trio.current_time`, :class:`trio.Event`, :func:`trio.lowlevel.checkpoint_if_cancelled`,
:func:`trio.lowlevel.cancel_shielded_checkpoint`.
"""

from __future__ import annotations

import contextlib
import math
import ssl
from collections.abc import Awaitable, Callable, Collection, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar, cast, overload

import trio

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
from amqp_sansio.client.lifecycle import DrivenCore
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
from ._async import CLOSE_GRACE
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

READ_SIZE = 65536
#: The bound of one reconnection attempt's connect, in seconds.
CONNECT_TIMEOUT = 10.0
#: A send waits (back-pressure) while more than this many bytes wait to be written.
WRITE_HIGH_WATER = 65536
#: A call that need not wait yields to the other tasks once in this many such calls.
FAST_CALLS = 64

_TRANSPORT_ERRORS = (trio.BrokenResourceError, trio.ClosedResourceError, OSError)


class _Driver:
    """The I/O of one core (:class:`~amqp_sansio.client.amqp10.Core`, or the 0-9-1
    :class:`~amqp_sansio.client.amqp091.Core`) over a trio stream."""

    #: Every wait is a cancel point and counts towards :data:`FAST_CALLS`.
    eager = False

    def __init__(self, core: DrivenCore, stream: trio.abc.Stream) -> None:
        self.core = core
        self.stream = stream
        self._changed = trio.Event()
        #: Tasks waiting on :attr:`_changed`: a change with nobody waiting makes no event.
        self._waiters = 0
        self._outgoing = bytearray()
        #: The core has output not yet taken (see _notify).
        self._pending = True
        self._in_flight = 0
        self._wake_writer = trio.Event()
        self._closed = False
        #: The scope of the connection's tasks: :meth:`stop` cancels it.
        self._scope = trio.CancelScope()
        #: The reader's wait: its deadline is the engine's next one.
        self._read_scope: trio.CancelScope | None = None
        self._done = trio.Event()
        #: Calls in a row that did not need to wait (see :meth:`wait`).
        self._fast = 0
        core.notify = self._notify

    def _notify(self) -> None:
        # The writer takes the core's output when it runs, not now: what the other tasks do
        # meanwhile (the settlements of a whole read, a run of sends) goes out in one write,
        # and the engine coalesces a run of settlements into one disposition.
        if not self._closed:
            self._pending = True
            self._wake_writer.set()
        scope = self._read_scope
        if scope is not None:  # a call may have brought the next timer nearer
            deadline = self.core.next_deadline()
            if deadline is None:
                deadline = math.inf
            if deadline != scope.deadline:  # (setting it costs much more than reading it)
                scope.deadline = deadline
            if self.core.lost:
                scope.cancel()
        self._wake()

    def _wake(self) -> None:
        if self._waiters:  # (an event made at every call cost a tenth of a send's time)
            self._changed.set()
            self._changed = trio.Event()

    async def run(self) -> None:
        """The connection's I/O, until it ends or :meth:`stop` is called."""
        core = self.core
        try:
            with self._scope:
                while True:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._write)
                        await self._read()
                        if core.lost:
                            nursery.cancel_scope.cancel()
                        self._wake_writer.set()  # it flushes what is left (the close), then ends
                    if not core.lost:
                        break
                    # Lost: a new transport when the core says, unless it gives up.
                    with trio.CancelScope(shield=True):
                        await trio.aclose_forcefully(self.stream)
                    self._outgoing.clear()
                    attempts = recipes.reconnect_attempts(core, None, CONNECT_TIMEOUT)
                    stream = await _async.run(attempts, _TrioLoop(None), None, None)
                    if not isinstance(stream, trio.SocketStream):
                        break
                    self.stream = stream
        finally:
            if not core.finished:  # cancelled: nobody may wait forever
                core.stop(trio.current_time())
            self._closed = True
            self._outgoing.clear()
            with trio.CancelScope(shield=True):
                await trio.aclose_forcefully(self.stream)
            self._done.set()
            self._wake()

    async def _read(self) -> None:
        core = self.core
        while not core.finished and not core.lost:
            deadline = core.next_deadline()
            data = None
            with trio.move_on_at(math.inf if deadline is None else deadline) as scope:
                self._read_scope = scope
                try:
                    data = await self.stream.receive_some(READ_SIZE)
                except _TRANSPORT_ERRORS as exc:
                    core.transport_failed(exc, trio.current_time())
                    return
                finally:
                    self._read_scope = None
            if data is None:
                if core.lost:
                    return
                core.handle_timer(trio.current_time())
            else:
                core.receive_data(bytes(data), trio.current_time())

    def _pull(self) -> None:
        """Take what the core has to send into our buffer."""
        if self._pending:
            self._pending = False
            data = self.core.data_to_send()
            if data and not self._closed:
                self._outgoing += data

    async def _write(self) -> None:
        core = self.core
        while True:
            self._pull()
            while not self._outgoing:
                if core.finished or core.lost:
                    return
                self._wake_writer = event = trio.Event()
                await event.wait()
                self._pull()
            data = bytes(self._outgoing)
            self._outgoing.clear()
            self._in_flight = len(data)
            try:
                await self.stream.send_all(data)
            except _TRANSPORT_ERRORS as exc:
                core.transport_failed(exc, trio.current_time())
                return
            finally:
                self._in_flight = 0
                self._wake()  # for drain()

    def drained(self) -> bool:
        self._pull()  # (what waits in the core counts too)
        return self._closed or len(self._outgoing) + self._in_flight <= WRITE_HIGH_WATER

    async def drain(self) -> None:
        """Back-pressure: wait while more than :data:`WRITE_HIGH_WATER` bytes wait."""
        await self.wait(self.drained, None)

    def shielded(self, seconds: float) -> contextlib.AbstractContextManager[object]:
        """A scope shielded from the caller's cancellation, ended after ``seconds``."""
        return trio.CancelScope(deadline=trio.current_time() + seconds, shield=True)

    def cancel(self) -> None:
        """End the connection's tasks (now, without waiting)."""
        self._scope.cancel()

    async def stop(self) -> None:
        """End the connection's tasks and close the stream; wait until they have ended,
        even in a cancelled scope (they end at once: their own cleanup is shielded)."""
        self._scope.cancel()
        with trio.CancelScope(shield=True):
            await self._done.wait()

    async def wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        """Wait until ``ready()`` (which raises what ends the wait); TimeoutError after
        ``timeout`` seconds. Always a cancel point (a cancelled scope ends it first); a
        schedule point whenever it has to wait, and once in :data:`FAST_CALLS` calls that
        need not: a run of sends under credit then goes out in few writes, as with asyncio,
        yet never starves the other tasks. (A schedule point at every call costs three
        quarters of the throughput: each write then carries a single message.)"""
        await trio.lowlevel.checkpoint_if_cancelled()
        self._fast += 1
        if self._fast >= FAST_CALLS:  # before ready(): what it says must hold on return
            self._fast = 0
            await trio.lowlevel.cancel_shielded_checkpoint()
        if ready():
            return
        self._fast = 0
        deadline = math.inf if timeout is None else trio.current_time() + timeout
        with trio.move_on_at(deadline):
            while True:
                changed = self._changed
                if ready():
                    return
                self._waiters += 1  # no checkpoint since ready(): no change was missed
                try:
                    await changed.wait()
                finally:
                    self._waiters -= 1
        raise TimeoutError(f"not done within {timeout} s")


async def _tcp(host: str, port: int, timeout: float | None) -> trio.SocketStream:
    """A TCP connection to ``host``:``port`` (the transport of ``amqp`` and ``amqps``: TLS is
    a layer of the stack, :func:`~amqp_sansio.security.stack.stack`)."""
    with trio.move_on_after(math.inf if timeout is None else timeout):
        return await trio.open_tcp_stream(host, port)
    raise TimeoutError("timed out")


#: The trio adapter's transports, by URL scheme (see :mod:`._transports`): what opens a
#: connection's stream.
TRANSPORTS: dict[str, Callable[[str, int, float | None], Awaitable[trio.SocketStream]]] = {
    "amqp": _tcp,
    "amqps": _tcp,
    "ws": _tcp,
    "wss": _tcp,
}


class _TrioLoop:
    """The steps of the recipes (:mod:`amqp_sansio.client.recipes`) that are not a
    connection's, on trio (see :class:`~._async.Loop`): a connection started runs its
    tasks in ``nursery``."""

    def __init__(self, nursery: trio.Nursery | None) -> None:
        self.nursery = nursery

    def now(self) -> float:
        return trio.current_time()

    async def sleep_until(self, deadline: float) -> None:
        await trio.sleep_until(deadline)

    async def connect(self, scheme: str, host: str, port: int, timeout: float | None) -> object:
        return await transport_for(TRANSPORTS, scheme)(host, port, timeout)

    def start(
        self, core: DrivenCore, transport: object, timeout: float | None
    ) -> _async.ConnectionBase[Any]:
        assert isinstance(transport, trio.SocketStream) and self.nursery is not None
        driver = _Driver(core, transport)
        conn = CONNECTIONS[type(core)](driver, timeout)
        self.nursery.start_soon(driver.run)
        return conn

    async def abort(self, conn: _async.ConnectionBase[Any]) -> None:
        driver = conn.driver
        assert isinstance(driver, _Driver)
        driver.cancel()


class Connection(_async10.Connection):
    __doc__ = _async10.Connection.__doc__
    adapter = "trio"


class _Closable(Protocol):
    async def close(self) -> None: ...

    def _cancel(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class _Running(Generic[C]):
    """What :func:`connect` and :func:`listen` return: ``async with`` it (it opens a nursery
    for the tasks), or ``await`` it when given a ``nursery``."""

    def __init__(
        self, what: str, start: Callable[[trio.Nursery], Awaitable[C]], nursery: trio.Nursery | None
    ) -> None:
        self._what = what
        self._start = start
        self._nursery = nursery
        self._stack: contextlib.AsyncExitStack | None = None
        self._value: C | None = None

    def __await__(self) -> Generator[object, None, C]:
        if self._nursery is None:
            raise TypeError(
                f"await {self._what}(...) needs a nursery for its tasks: "
                f"await {self._what}(..., nursery=nursery), or async with {self._what}(...)"
            )
        value: C = yield from self._start(self._nursery).__await__()
        return value

    async def __aenter__(self) -> C:
        # The nursery is entered here and left in __aexit__, in this task. The block's own
        # exception is not passed to it (the tasks never raise, and are ended first), so
        # that it comes out as it is and not in an exception group.
        stack = contextlib.AsyncExitStack()
        nursery = await stack.enter_async_context(trio.open_nursery())
        try:
            self._value = await self._start(nursery)
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self._value

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._stack is not None and self._value is not None
        try:
            # A graceful close even when the block was cancelled, bounded.
            with trio.move_on_after(CLOSE_GRACE, shield=True):
                await self._value.close()
        finally:
            self._value._cancel()
            await self._stack.aclose()


@overload
def connect(
    url: str,
    *,
    nursery: trio.Nursery | None = None,
    protocol: Literal["1.0"] = "1.0",
    **options: Unpack[ConnectKeywords],
) -> _Running[Connection]: ...


@overload
def connect(
    url: str,
    *,
    nursery: trio.Nursery | None = None,
    protocol: Literal["0-9-1"],
    **options: Unpack[ConnectKeywords],
) -> _Running[Connection091]: ...


@overload
def connect(
    url: str,
    *,
    nursery: trio.Nursery | None = None,
    protocol: Literal["0-10"],
    **options: Unpack[ConnectKeywords],
) -> _Running[Connection010]: ...


def connect(
    url: str,
    *,
    nursery: trio.Nursery | None = None,
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
) -> _Running[Connection] | _Running[Connection091] | _Running[Connection010]:
    """Connect to ``url`` and open an AMQP connection: ``async with connect(url) as conn``
    (the connection's tasks run in a nursery of its own), or
    ``conn = await connect(url, nursery=nursery)`` (in the given nursery; close the
    connection before the nursery ends). ``protocol``: ``"1.0"`` (the default) or
    ``"0-9-1"`` (a :class:`Connection091`, see :doc:`amqp091`) or ``"0-10"`` (a
    :class:`Connection010`, see :doc:`amqp010`), never guessed. The other
    options are those of the blocking :func:`amqp_sansio.adapters.sockets.connect`
    (``reconnect``, ``on_reconnect``, ``sasl`` and its one fallback without SASL too)."""
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

    async def connecting(nursery: trio.Nursery) -> _async.ConnectionBase[Any]:
        return await _async.run(recipe, _TrioLoop(nursery), None, timeout)

    running = _Running("connect", connecting, nursery)
    return cast("_Running[Connection] | _Running[Connection091] | _Running[Connection010]", running)


class Server:
    """Serving AMQP connections (:func:`listen`); an async context manager that closes the
    listener and every connection it accepted."""

    def __init__(
        self,
        on_link: Callable[[ServerLink], None],
        options: client.ListenOptions,
        listeners: list[trio.SocketListener],
        on_connection: Callable[[IncomingConnection], None] | None = None,
    ) -> None:
        self.on_link = on_link
        self.on_connection = on_connection
        self._options = options
        self._listeners = listeners
        self._drivers: set[_Driver] = set()
        self._scope = trio.CancelScope()
        self._done = trio.Event()

    @property
    def port(self) -> int:
        port: int = self._listeners[0].socket.getsockname()[1]
        return port

    async def _run(self) -> None:
        try:
            with self._scope:
                async with trio.open_nursery() as nursery:
                    for listener in self._listeners:
                        nursery.start_soon(self._accept, listener, nursery)
        finally:
            with trio.CancelScope(shield=True):
                for listener in self._listeners:
                    await listener.aclose()
            self._done.set()

    async def _accept(self, listener: trio.SocketListener, nursery: trio.Nursery) -> None:
        while True:
            try:
                stream = await listener.accept()
            except trio.ClosedResourceError:
                return
            except OSError:  # out of descriptors, or the like: try again shortly
                await trio.sleep(0.1)
                continue
            nursery.start_soon(self._serve, stream)

    async def _serve(self, stream: trio.SocketStream) -> None:
        core = client.server_core(
            self._options,
            on_link=self.on_link,
            on_connection=self.on_connection,
            peer=stream.socket.getpeername(),
        )
        driver = _Driver(core, stream)
        self._drivers.add(driver)
        try:
            await driver.run()
        finally:
            self._drivers.discard(driver)

    async def close(self) -> None:
        """Stop listening, close every connection (their peers are sent a close); in a
        cancelled scope, the connections are ended without waiting for their answers."""
        try:
            for listener in self._listeners:
                await listener.aclose()
            await _async.close_all(list(self._drivers), 1.0)
        finally:
            self._scope.cancel()
            with trio.CancelScope(shield=True):
                await self._done.wait()

    def _cancel(self) -> None:
        self._scope.cancel()

    async def __aenter__(self) -> Server:
        return self

    async def __aexit__(self, *exc: object) -> None:
        with trio.move_on_after(CLOSE_GRACE, shield=True):  # even when the block was cancelled
            await self.close()


def listen(
    host: str,
    port: int,
    on_link: Callable[[ServerLink], None],
    *,
    nursery: trio.Nursery | None = None,
    on_connection: Callable[[IncomingConnection], None] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    sasl: ServerAuthenticator | bool | None = None,
    allow_insecure_auth: bool = False,
    idle_timeout: float | None = None,
    container_id: str = "amqp-sansio-server",
    websocket: WebSocketOptions | None = None,
) -> _Running[Server]:
    """Listen on ``host``:``port`` (0: any free port, :attr:`Server.port`):
    ``async with listen(...) as server`` (serving in a nursery of its own until the block
    ends), or ``server = await listen(..., nursery=nursery)`` (serving in the given nursery
    until ``await server.close()``). As the blocking
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

    async def starting(nursery: trio.Nursery) -> Server:
        listeners = await trio.open_tcp_listeners(port, host=host)
        server = Server(on_link, options, listeners, on_connection)
        nursery.start_soon(server._run)
        return server

    return _Running("listen", starting, nursery)


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
