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
import signal
import socket
import ssl
import time
from collections.abc import Callable, Collection, Iterator
from types import TracebackType
from typing import Literal, Protocol, TypeVar, overload

import amqp_sansio
from amqp_sansio import Error, Event, client
from amqp_sansio.client import (
    AuthenticationError,
    ClientError,
    ConnectionClosedError,
    Delivery,
    IncomingConnection,
    IncomingLink,
    LinkDetachedError,
    LinkRefusedError,
    OutgoingLink,
    PeerWithoutSASLError,
    Reconnect,
    ServerLink,
    TransactionError,
    recipes,
)
from amqp_sansio.client.recipes import Recipe
from amqp_sansio.events import ConnectionEnded
from amqp_sansio.sasl import ServerAuthenticator

__all__ = [
    "AuthenticationError",
    "ByteStream",
    "ClientError",
    "Connection",
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

T = TypeVar("T")

#: The default size of one ``recv``.
READ_SIZE = 65536


class ByteStream(Protocol):
    """What the driver drives: the engine's byte interface, which
    :class:`~amqp_sansio.Connection` and :class:`~amqp_sansio.TLSLayer` both offer.
    ``receive_data(b"", now)`` means the transport closed. An object that also has a
    ``close()`` (a security layer) has it called once the connection inside reports
    :class:`~amqp_sansio.events.ConnectionEnded`."""

    def receive_data(self, data: bytes, now: float) -> list[Event]: ...

    def data_to_send(self) -> bytes: ...

    def next_deadline(self) -> float | None: ...

    def handle_timer(self, now: float) -> list[Event]: ...


class _Whole:
    """A step of two parts (bytes taken from the engine or the socket, and put where they
    go next) that a Ctrl-C must not cut in two: SIGINT is held back for its length and
    delivered, as a KeyboardInterrupt, once the step is whole (bytes taken and lost, or
    written twice, would tear the AMQP stream). Where the platform has no signal masks
    (Windows), nothing is held."""

    __slots__ = ("_old",)

    def __enter__(self) -> None:
        self._old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGINT)

    def __exit__(self, *exc: object) -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, self._old)


class _Nothing:  # pragma: no cover - Windows (no signal masks)
    __slots__ = ()

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


_SIGINT = {signal.SIGINT}
_whole: Callable[[], _Whole | _Nothing] = _Whole if hasattr(signal, "pthread_sigmask") else _Nothing


class SocketDriver:
    """Move bytes between ``connection`` and the connected stream socket ``sock``.

    ``connection`` is a :class:`~amqp_sansio.Connection`, or a layer around one such as
    :class:`~amqp_sansio.TLSLayer` (anything with the :class:`ByteStream` interface). When
    the connection inside a layer ends (:class:`~amqp_sansio.events.ConnectionEnded` passes
    through), the driver calls the layer's ``close()``: its closing bytes (TLS
    close_notify) go out after the connection's last ones.

    Every event the engine reports is appended to :attr:`events` (in order; clear the list
    when done with them) and passed to ``on_event`` if given, which may answer at once with
    engine commands. ``clock`` gives ``now`` for the engine (:func:`time.monotonic` by
    default); the timeouts of :meth:`step`, :meth:`run_until` and :meth:`flush` are measured
    on it too.
    """

    def __init__(
        self,
        connection: ByteStream,
        sock: socket.socket,
        *,
        on_event: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        read_size: int = READ_SIZE,
    ) -> None:
        self.connection = connection
        self.sock = sock
        self.on_event = on_event
        self.events: list[Event] = []
        #: The transport is closed for reading: the peer closed it, or it failed.
        self.eof = False
        #: What ended the transport, if it failed rather than closed.
        self.error: OSError | None = None
        self.closed = False
        #: The driven connection has reported :class:`~amqp_sansio.events.ConnectionEnded`.
        self.ended = False
        self._clock = clock
        self._read_size = read_size
        self._out = bytearray()
        sock.setblocking(False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(sock, selectors.EVENT_READ)
        self._mask = selectors.EVENT_READ

    # -- making one --------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        connection: ByteStream,
        address: tuple[str, int],
        *,
        timeout: float | None = 10.0,
        on_event: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        read_size: int = READ_SIZE,
    ) -> SocketDriver:
        """Connect to ``address`` (host, port) as a client and drive ``connection`` over it
        (the other arguments are the constructor's)."""
        sock = socket.create_connection(address, timeout=timeout)
        return cls._drive(connection, sock, on_event, clock, read_size)

    @classmethod
    def accept(
        cls,
        connection: ByteStream,
        listener: socket.socket,
        *,
        timeout: float | None = 10.0,
        on_event: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        read_size: int = READ_SIZE,
    ) -> SocketDriver:
        """Accept one connection on the listening socket ``listener`` (which stays open) and
        drive ``connection``, in the server role, over it. :class:`TimeoutError` if no peer
        connects within ``timeout`` seconds."""
        with selectors.DefaultSelector() as sel:
            sel.register(listener, selectors.EVENT_READ)
            if not sel.select(timeout):
                raise TimeoutError(f"no connection within {timeout} s")
        sock, _ = listener.accept()
        return cls._drive(connection, sock, on_event, clock, read_size)

    @classmethod
    def _drive(
        cls,
        connection: ByteStream,
        sock: socket.socket,
        on_event: Callable[[Event], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        read_size: int = READ_SIZE,
    ) -> SocketDriver:
        """A driver over the newly connected ``sock`` (closed if that fails)."""
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return cls(connection, sock, on_event=on_event, clock=clock, read_size=read_size)
        except BaseException:
            sock.close()
            raise

    # -- the loop ----------------------------------------------------------------------------

    def now(self) -> float:
        """The driver's clock, for commands that take ``now`` (such as ``open``)."""
        return self._clock()

    def step(self, timeout: float | None = None) -> list[Event]:
        """One round: send what the engine has, wait until the socket is readable (or
        writable while output waits), the engine's deadline passes or ``timeout`` seconds
        pass (None: no limit but the engine's), then read, fire the timer if due, and send.
        Returns the events of this round."""
        new: list[Event] = []
        self._pull()
        if self.closed:
            return new
        conn = self.connection
        now = self._clock()
        deadline = conn.next_deadline()
        wait = timeout
        if deadline is not None:
            wait = max(0.0, deadline - now) if wait is None else min(wait, deadline - now)
        if wait is not None:
            wait = max(0.0, wait)
        mask = (0 if self.eof else selectors.EVENT_READ) | (
            selectors.EVENT_WRITE if self._out else 0
        )
        if mask:
            if mask != self._mask:
                # Unknown until modify returns: an exception inside it (a KeyboardInterrupt)
                # leaves the socket unregistered (selectors' modify unregisters on failure).
                self._mask = 0
                try:
                    self._selector.modify(self.sock, mask)
                except KeyError:
                    self._selector.register(self.sock, mask)
                self._mask = mask
            ready = self._selector.select(wait)
        else:  # nothing to read or write: only time can bring something
            if wait is None:
                return new
            time.sleep(wait)
            ready = []
        for _, what in ready:
            if what & selectors.EVENT_WRITE:
                self._write(new)
            if what & selectors.EVENT_READ:
                self._read(new)
        deadline = conn.next_deadline()
        if deadline is not None:
            now = self._clock()
            if now >= deadline:
                self._dispatch(conn.handle_timer(now), new)
        self._pull()
        if self._out and not self.eof:
            self._write(new)  # most writes fit at once: save a round trip through select
        return new

    def run_until(
        self,
        predicate: Callable[[], bool],
        timeout: float,
        *,
        poll_interval: float | None = None,
    ) -> None:
        """Step until ``predicate()`` is true; :class:`TimeoutError` after ``timeout``
        seconds, :class:`ConnectionError` if the transport closes first. ``poll_interval``
        re-checks the predicate that often even when nothing happens on the socket, for
        conditions that other threads change."""
        end = self._clock() + timeout
        while not predicate():
            if self.closed or (self.eof and not self._out and not self._pending()):
                raise ConnectionError("the transport closed before the condition was met")
            remaining = end - self._clock()
            if remaining <= 0:
                raise TimeoutError(f"condition not met within {timeout} s")
            self.step(remaining if poll_interval is None else min(remaining, poll_interval))

    def flush(self, timeout: float = 10.0) -> None:
        """Send everything the engine has to send (reading meanwhile);
        :class:`TimeoutError` if the peer does not take it within ``timeout`` seconds."""
        self._pull()
        end = self._clock() + timeout
        while self._out and not self.eof and not self.closed:
            remaining = end - self._clock()
            if remaining <= 0:
                raise TimeoutError(f"output not written within {timeout} s")
            self.step(remaining)

    def send_pending(self) -> list[Event]:
        """Write what the engine has to send, without waiting (what the socket does not take
        now goes in a later step). Returns the events this caused (a failed write ends the
        connection)."""
        new: list[Event] = []
        self._pull()
        if self._out and not self.eof and not self.closed:
            self._write(new)
        return new

    def close(self) -> None:
        """Send what is left (briefly), then close the socket. The AMQP connection is the
        application's to close first (:meth:`~amqp_sansio.Connection.close`)."""
        if self.closed:
            return
        try:
            if not self.eof:
                self.flush(timeout=1.0)
        except (TimeoutError, OSError):
            pass
        finally:
            self.closed = True
            self._selector.close()
            self.sock.close()

    def __enter__(self) -> SocketDriver:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------

    def _pending(self) -> bool:
        """Whether the engine may still produce something on its own (a timer)."""
        return self.connection.next_deadline() is not None

    def _pull(self) -> None:
        with _whole():
            data = self.connection.data_to_send()
            if data and not self.eof:
                self._out += data

    def _dispatch(self, events: list[Event], new: list[Event]) -> None:
        for event in events:
            self.events.append(event)
            new.append(event)
            if self.on_event is not None:
                self.on_event(event)
            if isinstance(event, ConnectionEnded) and not self.ended:
                self.ended = True
                self._close_layer()

    def _close_layer(self) -> None:
        """The connection inside has ended: a layer around it (TLS) closes its side too."""
        if isinstance(self.connection, amqp_sansio.Connection | client.Core):
            return  # (the core closes its own layer)
        close = getattr(self.connection, "close", None)
        if close is not None:
            close()

    def _read(self, new: list[Event]) -> None:
        with _whole():  # (what is read goes to the engine)
            try:
                data = self.sock.recv(self._read_size)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # reset, aborted: the transport is gone
                self.error = exc
                data = b""
            if not data:
                self.eof = True
                self._out.clear()
            events = self.connection.receive_data(data, self._clock())
        self._dispatch(events, new)

    def _write(self, new: list[Event]) -> None:
        with _whole():  # (what is written leaves the buffer)
            try:
                sent = self.sock.send(self._out)
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                error: OSError | None = exc
            else:
                error = None
                del self._out[:sent]
        if error is not None:
            self._lost_writing(error, new)

    def _lost_writing(self, exc: OSError, new: list[Event]) -> None:
        """A write failed (broken pipe, reset): nothing more can go out."""
        self.error = exc
        self.eof = True
        self._out.clear()
        if not self.ended:  # the connection is told, unless it has ended already
            self._dispatch(self.connection.receive_data(b"", self._clock()), new)


# -- the high-level, blocking API ------------------------------------------------------------
#
# The same nouns as amqp_sansio.adapters.aio and amqp_sansio.adapters.trio_adapter, over the
# shared core in amqp_sansio.client; see docs/adapters.rst. The I/O happens inside the calls: the
# connection is serviced (heartbeats, dispositions) only while one of its calls runs, and it
# is not safe to use one connection from several threads at once.

#: The default bound, in seconds, of any one wait of the blocking API (None: no bound).
DEFAULT_TIMEOUT = 60.0


class Connection:
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
        self.core = core
        self.driver = driver
        core.default_address = address
        self.timeout = timeout
        self._stepping = False
        self._batching = 0
        core.notify = self._notify

    def __repr__(self) -> str:
        return f"<sockets.Connection {self.core.engine!r}>"

    # -- running recipes -------------------------------------------------------------------

    def _notify(self) -> None:
        if not self._stepping and not self._batching and not self.driver.closed:
            self.driver.send_pending()

    def _run(self, recipe: Recipe[T], timeout: float | None) -> T:
        """Carry out a call's recipe (:mod:`amqp_sansio.client.recipes`): each wait bounded
        by ``timeout`` (None: the connection's)."""
        return _run(recipe, timeout, self)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Within the block, what the calls produce goes out when a call has to wait (for
        credit, an outcome, a delivery) and when the block ends, not at once: a run of
        ``send(message, wait=False)`` that credit allows goes out in one write instead of
        one each, and so do the outcomes of a run of deliveries taken from a receiver (as
        the asyncio adapter writes once per turn of its loop). Outside a block each call
        writes before it returns."""
        self._batching += 1
        try:
            yield
        finally:
            self._batching -= 1
            if not self._batching:
                self._notify()

    def _wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        """Run the connection's I/O until ``ready()``; TimeoutError after ``timeout``. A
        lost connection is made again here (``reconnect=``), within the same bound."""
        if ready():
            return
        timeout = self.timeout if timeout is None else timeout
        end = None if timeout is None else self.driver.now() + timeout
        while not ready():
            remaining = None if end is None else end - self.driver.now()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"not done within {timeout} s")
            if self.core.lost:
                self.driver.close()
                sock = _run(recipes.reconnect_attempts(self.core, end, self.timeout), None)
                if isinstance(sock, socket.socket):
                    self.driver = SocketDriver._drive(self.core, sock)
                continue
            if self.driver.closed:
                self.core.check()
                raise client.ConnectionClosedError("the connection is closed")
            self._stepping = True
            try:
                self.driver.step(remaining)
            finally:
                self._stepping = False
                self.driver.events.clear()  # the core has handled them: keep none

    # -- the API ---------------------------------------------------------------------------

    def wait(self, seconds: float) -> None:
        """Keep the connection serviced (heartbeats, incoming frames) for ``seconds``: what
        an idle application calls instead of sleeping. Raises if the connection ends."""
        self._run(recipes.wait(self.core), seconds)

    @property
    def reconnects(self) -> int:
        """How many times the connection was made again after a loss (``reconnect=``)."""
        return self.core.reconnects

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
    ) -> Receiver:
        """Attach a receiver from ``address`` (the URL's by default; ``dynamic``: from a
        temporary node the peer makes, whose address is :attr:`Receiver.address`), keeping
        ``credit`` messages granted; ``filters``: the source's filter-set (core spec 3.5.8);
        ``selector``: a JMS message selector, added to it as the filter
        ``apache.org:selector-filter:string`` (key ``jms-selector``); ``browse``: read the
        messages without taking them (the source's distribution-mode ``copy``, core spec
        3.5.3), so they stay on the node."""
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
        )
        return Receiver(self, self._run(recipe, timeout))

    def transaction(self, *, timeout: float | None = None) -> Transaction:
        """A transaction, declared on entering it as a context manager: committed when the
        block ends normally, rolled back when it raises."""
        return Transaction(self, timeout)

    def close(self, error: Error | None = None, *, timeout: float | None = None) -> None:
        """Close the connection, wait (briefly) for the peer's answer, close the socket."""
        try:
            bound = recipes.CLOSE_TIMEOUT if timeout is None else timeout
            self._run(recipes.close_connection(self.core, error), bound)
        finally:
            self.driver.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
        return self.connection._run(
            recipes.send(self, message, transaction, wait, Tracker), timeout
        )

    def close(self, *, timeout: float | None = None) -> None:
        self.connection._run(recipes.close_link(self.core), timeout)


class Tracker(client.TrackerBase):
    """A message sent by ``sender.send(message, wait=False)``: :meth:`done` says whether
    its outcome has come, :meth:`outcome` waits for it."""

    __slots__ = ()

    sender: Sender

    def outcome(self, *, timeout: float | None = None) -> client.Outcome | None:
        """The receiver's outcome (None on a pre-settled sender); raises what ended the
        link or the connection first. A time-out leaves the delivery tracked."""
        return self.sender.connection._run(recipes.outcome(self._op), timeout)


class Receiver(client.ReceiverBase):
    """A receiving link (:meth:`Connection.receiver`): iterate it for deliveries (the loop
    ends when the link is closed), or call :meth:`receive`."""

    connection: Connection

    def receive(self, *, timeout: float | None = None) -> client.Delivery | None:
        """The next delivery; None once the link is closed."""
        return self.connection._run(recipes.receive(self.core), timeout)

    def __iter__(self) -> Iterator[client.Delivery]:
        while (delivery := self.receive()) is not None:
            yield delivery

    def drain(self, *, timeout: float | None = None) -> None:
        """Ask the sender for what it has now, and wait until it has used up or given back
        the credit; what came is then waiting to be received."""
        self.connection._run(recipes.drain(self.core), timeout)

    def close(self, *, timeout: float | None = None) -> None:
        self.connection._run(recipes.close_link(self.core), timeout)


class Transaction(client.TransactionBase):
    """A local transaction (core spec part 4), from :meth:`Connection.transaction`: pass it
    as ``transaction=`` to :meth:`Sender.send` or a delivery's ``accept``."""

    connection: Connection

    def declare(self) -> None:
        self.connection._run(recipes.declare(self, self.connection.core), self.timeout)

    def discharge(self, *, commit: bool = True) -> bool:
        """Commit (or roll back); returns whether it committed."""
        recipe = recipes.discharge(self, self.connection.core, commit=commit)
        return self.connection._run(recipe, self.timeout)

    def __enter__(self) -> Transaction:
        self.declare()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Commit, or roll back if the block raised (then a failing rollback does not hide
        the block's exception), unless discharged already."""
        recipe = recipes.end_transaction(self, self.connection.core, failed=exc_type is not None)
        self.connection._run(recipe, self.timeout)


def connect(
    url: str,
    *,
    timeout: float | None = DEFAULT_TIMEOUT,
    ssl_context: ssl.SSLContext | None = None,
    idle_timeout: float | None = None,
    allow_insecure_auth: bool = False,
    container_id: str | None = None,
    sasl_mechanisms: Collection[str] | None = None,
    reconnect: Reconnect | bool | None = None,
    on_reconnect: Callable[[Connection], None] | None = None,
    sasl: bool | None = None,
) -> Connection:
    """Connect to ``url`` (``amqp://[user:password@]host[:port][/address]``, or ``amqps://``
    for TLS from the first byte, verified with ``ssl_context`` or the system's CAs) and open
    an AMQP connection. SASL (see :doc:`defaults`): the credentials in the URL, over a plain
    connection only to a loopback host, unless ``allow_insecure_auth``; ANONYMOUS without
    them, and, if the server turns out to have no SASL layer, once more without SASL (logged).
    ``sasl=False``: no SASL layer; ``sasl=True``: SASL or fail
    (:class:`PeerWithoutSASLError`). ``idle_timeout``: close the
    connection when the peer sends nothing for that long (and ask it for heartbeats).
    ``reconnect`` (a :class:`Reconnect`, or True for its defaults): when the connection is
    lost, connect again (to ``url`` or the fallbacks), re-attach the links and send again
    what was unsettled; ``on_reconnect(conn)`` is called each time (see :doc:`adapters`)."""
    options = client.connect_options(
        container_id=container_id,
        idle_timeout=idle_timeout,
        ssl_context=ssl_context,
        allow_insecure_auth=allow_insecure_auth,
        sasl_mechanisms=sasl_mechanisms,
        sasl=sasl,
    )
    recipe = recipes.connect(
        url, options, timeout=timeout, reconnect=reconnect, on_reconnect=on_reconnect
    )
    conn: Connection = _run(recipe, timeout)
    return conn


def _run(recipe: Recipe[T], timeout: float | None, conn: Connection | None = None) -> T:
    """The blocking adapter's runner of recipes (:mod:`amqp_sansio.client.recipes`): each
    :class:`~amqp_sansio.client.recipes.Wait` runs ``conn``'s I/O (bounded by ``timeout``,
    None: the connection's own), a :class:`~amqp_sansio.client.recipes.Start` makes the
    connection, the other steps use :func:`time.monotonic` and blocking sockets."""
    send = recipe.send
    try:
        step = send(None)
        while True:
            value: object = None
            try:
                if type(step) is _Wait:
                    conn._wait(step.ready, timeout)  # type: ignore[union-attr]
                elif step is recipes.DRAIN:
                    pass  # a blocking connection writes as it goes
                elif step is recipes.NOW:
                    value = time.monotonic()
                elif isinstance(step, recipes.Sleep):
                    time.sleep(max(0.0, step.until - time.monotonic()))
                elif isinstance(step, recipes.Connect):
                    value = socket.create_connection((step.host, step.port), timeout=step.timeout)
                elif isinstance(step, recipes.Start):
                    assert isinstance(step.transport, socket.socket)
                    address = None if step.core.url is None else step.core.url.address
                    driver = SocketDriver._drive(step.core, step.transport)
                    value = conn = Connection(step.core, driver, address=address, timeout=timeout)
                elif isinstance(step, recipes.Abort):
                    assert isinstance(step.connection, Connection)
                    step.connection.driver.close()
                else:  # pragma: no cover - every step is above
                    raise TypeError(f"not a step: {step!r}")
            except BaseException as exc:  # noqa: ASYNC103 (thrown into the recipe)
                step = recipe.throw(exc)
            else:
                step = send(value)
    except StopIteration as stop:
        result: T = stop.value
        return result


_Wait = recipes.Wait


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
            mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if driver._out else 0)
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
    )
    return Server(sock, on_link, options, on_connection)
