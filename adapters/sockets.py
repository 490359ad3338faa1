"""Drive a :class:`~amqp_sansio.Connection` (or a :class:`~amqp_sansio.TLSLayer` around
one) over a stream socket, blocking the caller.

The loop is the one every adapter has: wait until the socket can be read (or written, while
bytes wait to go out) or the engine's deadline comes; feed what was read to
:meth:`~amqp_sansio.Connection.receive_data`; fire :meth:`~amqp_sansio.Connection.handle_timer`
when it is due; write :meth:`~amqp_sansio.Connection.data_to_send`. The driver owns no AMQP
logic: opening, beginning, attaching, granting credit and settling are the application's
calls on the engine, between the driver's steps or from an ``on_event`` callback.

::

    conn = Connection(container_id="me", idle_timeout=30)
    with SocketDriver.connect(conn, ("127.0.0.1", 5672)) as driver:
        conn.open(now=driver.now())
        driver.run_until(lambda: conn.state is ConnectionState.OPENED, timeout=10)
        ...

The driver talks to anything with the engine's byte interface (:class:`ByteStream`): a
:class:`~amqp_sansio.TLSLayer` wrapping the connection is driven the same way, and once the
connection inside has ended the driver closes the layer, so that TLS close_notify follows
the AMQP close::

    conn = Connection(container_id="me")
    layer = TLSLayer(conn, client_context(), client=True, server_hostname="broker")
    with SocketDriver.connect(layer, ("broker", 5671)) as driver:
        conn.open(now=driver.now())
        ...

Internally the socket is non-blocking, so that reading goes on while a large write is
under way: two peers that both write more than the socket buffers hold never wait on each
other.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import ssl
import time
from collections.abc import Callable, Collection, Iterator
from typing import TYPE_CHECKING, Any, Literal, overload

from amqp_sansio.client import amqp10 as client
from amqp_sansio.client.amqp010 import Core as Core010
from amqp_sansio.client.amqp091 import ChannelClosedError
from amqp_sansio.client.amqp091 import Core as Core091
from amqp_sansio.client.amqp10 import (
    IncomingConnection,
    IncomingLink,
    OutgoingLink,
    ServerLink,
    WebSocketOptions,
    recipes,
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

from ._blocking import DEFAULT_TIMEOUT, ByteStream, ConnectionBase, SocketDriver, run
from ._transports import proxies
from .amqp010._blocking import Connection010, Session010
from .amqp091._blocking import Channel, ConfirmTracker, Connection091, Consumer

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "AuthenticationError",
    "ByteStream",
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
    "SocketDriver",
    "Tracker",
    "Transaction",
    "TransactionError",
    "connect",
    "listen",
]

_log = logging.getLogger(__name__)


# -- the high-level, blocking API ------------------------------------------------------------
#
# The same nouns as amqp_sansio.adapters.aio and amqp_sansio.adapters.trio_adapter, over the
# shared core in amqp_sansio.client.amqp10; see docs/adapters.rst. The I/O happens inside the calls:
# the connection is serviced (heartbeats, dispositions) only while one of its calls runs, and it
# is not safe to use one connection from several threads at once.


class Connection(ConnectionBase[client.Core]):
    """A client connection made by :func:`connect` (a context manager: leaving it closes
    the connection). ``timeout`` bounds each blocking call that is not given its own."""

    def __init__(
        self,
        core: client.Core,
        driver: SocketDriver,
        *,
        address: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(core, driver, timeout=timeout)
        core.default_address = address

    def __repr__(self) -> str:
        return f"<sockets.Connection {self.core.engine!r}>"

    def sender(
        self,
        address: str | None = None,
        *,
        settled: bool = False,
        name: str | None = None,
        timeout: float | None = None,
    ) -> Sender:
        """Attach a sender to ``address`` (the URL's by default) and wait until the peer
        has answered; :class:`LinkDetachedError` if it refuses."""
        recipe = recipes.attach_sender(self.core, address, settled=settled, name=name)
        return Sender(self, self._run(recipe, timeout), settled)

    def receiver(
        self,
        address: str | None = None,
        *,
        credit: int = client.DEFAULT_CREDIT,
        auto_accept: bool = False,
        dynamic: bool = False,
        name: str | None = None,
        timeout: float | None = None,
        filters: client.Filters | None = None,
        selector: str | None = None,
        browse: bool = False,
        capabilities: tuple[str, ...] = (),
        max_message_size: int | None = None,
    ) -> Receiver:
        """Attach a receiver from ``address`` (the URL's by default; ``dynamic``: from a
        temporary node the peer makes, whose address is :attr:`Receiver.address`), keeping
        ``credit`` messages granted; ``filters``: the source's filter-set (core spec 3.5.8);
        ``selector``: a JMS message selector, added to it as the filter
        ``apache.org:selector-filter:string`` (key ``jms-selector``); ``browse``: read the
        messages without taking them (the source's distribution-mode ``copy``, core spec
        3.5.3), so they stay on the node; ``capabilities``: the source's, such as
        ``rabbitmq:volatile-queue`` with ``dynamic`` for a direct reply-to address;
        ``max_message_size``: the largest message, in
        bytes, it takes (core spec 2.7.3; None: no limit): a sender with a larger one
        detaches the link with ``amqp:link:message-size-exceeded``, raised as
        :class:`LinkDetachedError` by the receive that waits."""
        recipe = recipes.attach_receiver(
            self.core,
            address,
            credit=credit,
            auto_accept=auto_accept,
            dynamic=dynamic,
            name=name,
            filters=filters,
            selector=selector,
            browse=browse,
            capabilities=capabilities,
            max_message_size=max_message_size,
        )
        return Receiver(self, self._run(recipe, timeout))

    def transaction(self, *, timeout: float | None = None) -> Transaction:
        """A transaction, declared on entering it as a context manager: committed when the
        block ends normally, rolled back when it raises."""
        return Transaction(self, timeout)


class Sender(client.SenderBase):
    """A sending link (:meth:`Connection.sender`)."""

    connection: Connection

    @overload
    def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: Literal[True] = True,
    ) -> client.Outcome | None: ...

    @overload
    def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: Literal[False],
    ) -> Tracker: ...

    @overload
    def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: bool,
    ) -> client.Outcome | Tracker | None: ...

    def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: bool = True,
    ) -> client.Outcome | Tracker | None:
        """Send ``message`` (a :class:`~amqp_sansio.Message`, or a body): wait for credit,
        send, and return the outcome (:class:`~amqp_sansio.Accepted`, ...), or None at once
        on a pre-settled sender. A time-out while waiting for credit sends nothing; one
        while waiting for the outcome leaves the message sent and tracked (:attr:`unsettled`).
        With ``wait=False``, return a :class:`Tracker` once the message is out, without
        waiting for its outcome (sends then follow each other under the receiver's credit;
        ``tracker.outcome()`` later)."""
        recipe = recipes.send(self, message, transaction, wait, Tracker)
        return run(recipe, timeout, self.connection)

    def close(self, *, timeout: float | None = None) -> None:
        run(recipes.close_link(self.core), timeout, self.connection)


class Tracker(client.TrackerBase):
    """A message sent by ``sender.send(message, wait=False)``: :meth:`done` says whether
    its outcome has come, :meth:`outcome` waits for it."""

    __slots__ = ()

    sender: Sender

    def outcome(self, *, timeout: float | None = None) -> client.Outcome | None:
        """The receiver's outcome (None on a pre-settled sender); raises what ended the
        link or the connection first. A time-out leaves the delivery tracked."""
        return run(recipes.outcome(self._op), timeout, self.sender.connection)


class Receiver(client.ReceiverBase):
    """A receiving link (:meth:`Connection.receiver`): iterate it for deliveries (the loop
    ends when the link is closed), or call :meth:`receive`."""

    connection: Connection

    def receive(self, *, timeout: float | None = None) -> client.Delivery | None:
        """The next delivery; None once the link is closed."""
        return run(recipes.receive(self.core), timeout, self.connection)

    def __iter__(self) -> Iterator[client.Delivery]:
        while (delivery := self.receive()) is not None:
            yield delivery

    def drain(self, *, timeout: float | None = None) -> None:
        """Ask the sender for what it has now, and wait until it has used up or given back
        the credit; what came is then waiting to be received."""
        run(recipes.drain(self.core), timeout, self.connection)

    def close(self, *, timeout: float | None = None) -> None:
        run(recipes.close_link(self.core), timeout, self.connection)


class Transaction(client.TransactionBase):
    """A local transaction (core spec part 4), from :meth:`Connection.transaction`: pass it
    as ``transaction=`` to :meth:`Sender.send` or a delivery's ``accept``."""

    connection: Connection

    def declare(self) -> None:
        run(recipes.declare(self, self.connection.core), self.timeout, self.connection)

    def discharge(self, *, commit: bool = True) -> bool:
        """Commit (or roll back); returns whether it committed."""
        recipe = recipes.discharge(self, self.connection.core, commit=commit)
        return run(recipe, self.timeout, self.connection)

    def __enter__(self) -> Transaction:
        self.declare()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Commit, or roll back if the block raised (then a failing rollback does not hide
        the block's exception), unless discharged already."""
        recipe = recipes.end_transaction(self, self.connection.core, failed=exc_type is not None)
        run(recipe, self.timeout, self.connection)


@overload
def connect(
    url: str, *, protocol: Literal["1.0"] = "1.0", **options: Unpack[ConnectKeywords]
) -> Connection: ...


@overload
def connect(
    url: str, *, protocol: Literal["0-9-1"], **options: Unpack[ConnectKeywords]
) -> Connection091: ...


@overload
def connect(
    url: str, *, protocol: Literal["0-10"], **options: Unpack[ConnectKeywords]
) -> Connection010: ...


def connect(
    url: str,
    *,
    protocol: str = "1.0",
    timeout: float | None = DEFAULT_TIMEOUT,
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
) -> Connection | Connection091 | Connection010:
    """Connect to ``url`` (``amqp://[user:password@]host[:port][/address]``, or ``amqps://``
    for TLS from the first byte, verified with ``ssl_context`` or the system's CAs) and open
    an AMQP connection. ``protocol``: ``"1.0"`` (the default) or ``"0-9-1"`` (a
    :class:`Connection091`; its URLs are RabbitMQ's, see :doc:`amqp091`) or ``"0-10"`` (a
    :class:`Connection010`, see :doc:`amqp010`), never guessed.
    SASL (see :doc:`defaults`): the credentials in the URL, over a plain
    connection only to a loopback host, unless ``allow_insecure_auth``; ANONYMOUS without
    them, and, if the server turns out to have no SASL layer, once more without SASL (logged).
    ``sasl=False``: no SASL layer; ``sasl=True``: SASL or fail
    (:class:`PeerWithoutSASLError`). ``idle_timeout``: close the
    connection when the peer sends nothing for that long (and ask it for heartbeats).
    ``reconnect`` (a :class:`Reconnect`, or True for its defaults): when the connection is
    lost, connect again (to ``url`` or the fallbacks), re-attach the links and send again
    what was unsettled; ``on_reconnect(conn)`` is called each time (see :doc:`adapters`).
    ``token_provider`` (a :class:`~amqp_sansio.client.amqp10.tokens.TokenProvider`, such as
    :class:`~amqp_sansio.client.amqp10.tokens.SasTokenProvider`): before each link
    attaches, put its address's token to ``$cbs``, and put it again before it expires
    (claims-based security, see :doc:`cbs`). ``proxy``: an HTTP proxy to tunnel through
    (HTTP CONNECT), ``"http://[user:password@]host:port"``, for any scheme; False: none;
    None (the default): ``HTTP_PROXY`` for ``ws://``, ``HTTPS_PROXY`` for ``wss://``,
    unless ``NO_PROXY`` names the host (see :doc:`websockets`, "Proxies")."""
    recipe: Recipe[Connection | Connection091 | Connection010] = connect_protocol(
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
    return run(recipe, timeout, connection=_connection)


def _connection(
    core: DrivenCore, driver: SocketDriver, timeout: float | None
) -> Connection | Connection091 | Connection010:
    """The connection of ``core``'s protocol (a :class:`~.recipes.Start` step's), from
    :data:`CONNECTIONS`."""
    conn: Connection | Connection091 | Connection010 = CONNECTIONS[type(core)](
        core, driver, timeout
    )
    return conn


def _connection10(core: Any, driver: SocketDriver, timeout: float | None) -> Connection:
    address = None if core.url is None else core.url.address
    return Connection(core, driver, address=address, timeout=timeout)


#: The blocking connection of each protocol, by the type of its client core: a new
#: protocol is one more entry.
CONNECTIONS: dict[type, Callable[[Any, SocketDriver, float | None], Any]] = {
    client.Core: _connection10,
    Core091: lambda core, driver, timeout: Connection091(core, driver, timeout=timeout),
    Core010: lambda core, driver, timeout: Connection010(core, driver, timeout=timeout),
}


class Server:
    """A listening socket serving AMQP connections (:func:`listen`). Every connection's I/O
    runs in the thread that calls :meth:`serve_forever` (or :meth:`serve`); ``on_link``
    runs there too. :meth:`close` may be called from any thread."""

    def __init__(
        self,
        sock: socket.socket,
        on_link: Callable[[client.ServerLink], None],
        options: client.ListenOptions,
        on_connection: Callable[[client.IncomingConnection], None] | None = None,
    ) -> None:
        self.socket = sock
        self.on_link = on_link
        self.on_connection = on_connection
        self._options = options
        self._drivers: dict[socket.socket, SocketDriver] = {}
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector = selectors.DefaultSelector()
        self._selector.register(sock, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._closing = False
        self.closed = False

    @property
    def host(self) -> str:
        host: str = self.socket.getsockname()[0]
        return host

    @property
    def port(self) -> int:
        port: int = self.socket.getsockname()[1]
        return port

    def serve_forever(self) -> None:
        """Serve until :meth:`close`."""
        while not self._closing:
            self.serve(None)
        self._shut()

    def serve(self, timeout: float | None) -> None:
        """One round: wait for the sockets or a deadline (at most ``timeout`` seconds), and
        serve what is ready."""
        now = time.monotonic()
        wait = timeout
        for sock, driver in list(self._drivers.items()):
            driver.send_pending()  # what other connections' work queued here
            deadline = driver.connection.next_deadline()
            if deadline is not None:
                wait = max(0.0, deadline - now) if wait is None else min(wait, deadline - now)
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if driver.writing else 0)
            self._selector.modify(sock, mask)
        for key, _ in self._selector.select(None if wait is None else max(0.0, wait)):
            if key.fileobj is self.socket:
                self._accept()
            elif key.fileobj is self._wake_r:
                self._wake_r.recv(64)
            else:
                driver = self._drivers.get(key.fileobj)  # type: ignore[call-overload]
                if driver is not None:
                    self._step(driver)
        now = time.monotonic()
        for sock, driver in list(self._drivers.items()):
            deadline = driver.connection.next_deadline()
            if deadline is not None and now >= deadline:
                self._step(driver)
            if driver.ended or driver.eof or driver.closed:
                driver.send_pending()
                self._selector.unregister(sock)
                del self._drivers[sock]
                driver.close()

    def _step(self, driver: SocketDriver) -> None:
        """Serve one connection; one that fails (a bug in ``on_link``) is dropped, logged,
        and the others go on."""
        try:
            driver.step(0)
            driver.events.clear()  # the core has handled them: keep none
        except Exception:
            _log.exception("dropping a connection after an error")
            driver.close()

    def _accept(self) -> None:
        try:
            sock, peer = self.socket.accept()
        except (BlockingIOError, InterruptedError):
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        core = client.server_core(
            self._options, on_link=self.on_link, on_connection=self.on_connection, peer=peer
        )
        driver = SocketDriver(core, sock)
        self._drivers[sock] = driver
        self._selector.register(sock, selectors.EVENT_READ)

    def close(self) -> None:
        """Stop serving: :meth:`serve_forever` closes every connection and returns."""
        self._closing = True
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _shut(self) -> None:
        for driver in self._drivers.values():
            core = driver.connection
            assert isinstance(core, client.Core)
            if not core.gone:
                core.close()
            driver.close()
        self._drivers.clear()
        self._selector.close()
        self.socket.close()
        self._wake_r.close()
        self._wake_w.close()
        self.closed = True

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
        if not self.closed:
            self._shut()


def listen(
    host: str,
    port: int,
    on_link: Callable[[client.ServerLink], None],
    *,
    on_connection: Callable[[client.IncomingConnection], None] | None = None,
    ssl_context: ssl.SSLContext | None = None,
    sasl: ServerAuthenticator | bool | None = None,
    allow_insecure_auth: bool = False,
    idle_timeout: float | None = None,
    container_id: str = "amqp-sansio-server",
    backlog: int = 128,
    websocket: WebSocketOptions | None = None,
) -> Server:
    """Listen on ``host``:``port`` (0: any free port, see :attr:`Server.port`). Each
    connection's open and sessions are accepted; each link a peer attaches is handed to
    ``on_link`` (an :class:`IncomingLink` or :class:`OutgoingLink`), which configures it
    without blocking. ``on_connection``, if given, gets
    each :class:`IncomingConnection` when its open comes (who the peer is: address, SASL
    identity, TLS certificate), and may refuse it. ``ssl_context``: TLS from the first byte
    (amqps). ``sasl`` (see :doc:`defaults`): by default anonymous access, through SASL
    ANONYMOUS or without SASL (the bare AMQP header), so that every client's default works;
    a :class:`~amqp_sansio.sasl.ServerAuthenticator` without ``allow_anonymous`` requires
    authentication (a client without SASL is refused, and logged); False: no SASL layer."""
    sock = socket.create_server((host, port), backlog=backlog)
    sock.setblocking(False)
    options = client.listen_options(
        container_id=container_id,
        idle_timeout=idle_timeout,
        ssl_context=ssl_context,
        sasl=sasl,
        allow_insecure_auth=allow_insecure_auth,
        websocket=websocket,
    )
    return Server(sock, on_link, options, on_connection)
