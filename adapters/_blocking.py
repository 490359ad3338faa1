"""The blocking adapter's machinery, for both protocols: :class:`SocketDriver` (the loop
over a socket that every connection of :mod:`~amqp_sansio.adapters.sockets` runs inside its
calls), the base of its connections (:class:`ConnectionBase`), and :func:`run`, its runner of
the calls' recipes (:mod:`amqp_sansio.client.recipes`). :mod:`~amqp_sansio.adapters.sockets`
is the public module: see its docstring."""

from __future__ import annotations

import contextlib
import selectors
import signal
import socket
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

import amqp_sansio
from amqp_sansio import Error, Event
from amqp_sansio.client import recipes
from amqp_sansio.client.lifecycle import HELD_CALLS, CoreBase, DrivenCore
from amqp_sansio.client.ops import ConnectionClosedError
from amqp_sansio.client.recipes import Recipe
from amqp_sansio.events import AuthenticationFailed, ConnectionEnded
from amqp_sansio.security.stack import ByteLayer

from ._transports import transport_for

__all__ = [
    "DEFAULT_TIMEOUT",
    "READ_SIZE",
    "TRANSPORTS",
    "ByteStream",
    "ConnectionBase",
    "SocketDriver",
    "connect_transport",
    "run",
]

T = TypeVar("T")
K = TypeVar("K")
CB = TypeVar("CB", bound="ConnectionBase[Any]")

#: The default size of one ``recv``.
READ_SIZE = 65536


#: What the driver drives: the engine's byte interface, which
#: :class:`~amqp_sansio.Connection` and :class:`~amqp_sansio.TLSLayer` both offer (the one
#: declaration is :class:`~amqp_sansio.security.layers.ByteLayer`). An object that also has
#: a ``close()`` (a security layer) has it called once the connection inside reports
#: :class:`~amqp_sansio.events.ConnectionEnded`.
ByteStream = ByteLayer


def _tcp(host: str, port: int, timeout: float | None) -> socket.socket:
    """A TCP connection to ``host``:``port`` (the transport of ``amqp``, ``amqps``, ``ws`` and
    ``wss``: TLS and WebSocket are layers of the stack,
    :func:`~amqp_sansio.security.stack.stack`)."""
    return socket.create_connection((host, port), timeout=timeout)


#: The blocking adapter's transports, by URL scheme (see :mod:`._transports`): what opens a
#: connection's socket.
TRANSPORTS: dict[str, Callable[[str, int, float | None], socket.socket]] = {
    "amqp": _tcp,
    "amqps": _tcp,
    "ws": _tcp,
    "wss": _tcp,
}


def connect_transport(scheme: str, host: str, port: int, timeout: float | None) -> socket.socket:
    """The blocking adapter's one connect: the transport of ``scheme`` (a URL's) to
    ``host``:``port`` within ``timeout`` seconds; :class:`OSError` if it cannot be made."""
    return transport_for(TRANSPORTS, scheme)(host, port, timeout)


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
        #: Why its SASL exchange failed (:class:`~amqp_sansio.events.AuthenticationFailed`'s
        #: ``error``), if it did: the connection is over, and a client has nothing to send.
        self.authentication_error: Exception | None = None
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
        sock = _tcp(address[0], address[1], timeout)
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
        seconds, :class:`ConnectionError` if the transport closes first, the SASL error
        (:attr:`authentication_error`) at once if authentication fails first (a client
        that finds no mechanism it may use sends nothing more, and a server would only
        close the transport when its handshake time-out passes). ``poll_interval``
        re-checks the predicate that often even when nothing happens on the socket, for
        conditions that other threads change."""
        end = self._clock() + timeout
        while not predicate():
            if self.authentication_error is not None:
                raise self.authentication_error
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

    @property
    def writing(self) -> bool:
        """Bytes wait to be written (a server's selector then watches for writability)."""
        return bool(self._out)

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
            if isinstance(event, AuthenticationFailed):
                self.authentication_error = event.error
            if isinstance(event, ConnectionEnded) and not self.ended:
                self.ended = True
                self._close_layer()

    def _close_layer(self) -> None:
        """The connection inside has ended: a layer around it (TLS) closes its side too."""
        if isinstance(self.connection, amqp_sansio.Connection | CoreBase):
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


#: The default bound, in seconds, of any one wait of the blocking API (None: no bound).
DEFAULT_TIMEOUT = 60.0


class ConnectionBase(Generic[K]):
    """What the blocking connections of both protocols share: the core, the driver over
    its socket, running a call's recipe (the I/O happens inside the calls), closing (a
    context manager: leaving it closes the connection). ``timeout`` bounds each blocking
    call that is not given its own."""

    def __init__(self, core: K, driver: SocketDriver, *, timeout: float | None) -> None:
        self.core = core
        self.driver = driver
        self.timeout = timeout
        self._stepping = False
        self._batching = 0
        #: Calls made in a batch since its last write.
        self._held = 0
        self._driven().notify = self._notify

    def _driven(self) -> DrivenCore:
        return cast(DrivenCore, self.core)

    # -- running recipes -------------------------------------------------------------------

    def _notify(self) -> None:
        if self._stepping or self.driver.closed:
            return
        if self._batching:
            self._held += 1
            if self._held < HELD_CALLS:
                return
        self._held = 0
        self.driver.send_pending()

    def _run(self, recipe: Recipe[T], timeout: float | None) -> T:
        """Carry out a call's recipe (:mod:`amqp_sansio.client.recipes`): each wait bounded
        by ``timeout`` (None: the connection's)."""
        return run(recipe, timeout, self)

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Within the block, what the calls produce goes out when a call has to wait (for
        credit, an outcome, a delivery), every
        :data:`~amqp_sansio.client.lifecycle.HELD_CALLS` calls (100) and when the block
        ends, not at once: a run of ``send(message, wait=False)`` that credit allows goes
        out in one write per hundred instead of one each, and so do the outcomes of a run
        of deliveries taken from a receiver (as the asyncio adapter writes once per turn of
        its loop). Outside a block each call writes before it returns."""
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
            if self._driven().lost:
                self.driver.close()
                sock = run(recipes.reconnect_attempts(self._driven(), end, self.timeout), None)
                if isinstance(sock, socket.socket):
                    self.driver = SocketDriver._drive(self._driven(), sock)
                continue
            if self.driver.closed:
                self._driven().check()
                raise ConnectionClosedError("the connection is closed")
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
        self._run(recipes.wait(self._driven()), seconds)

    @property
    def reconnects(self) -> int:
        """How many times the connection was made again after a loss (``reconnect=``)."""
        return self._driven().reconnects

    def close(self, error: Error | None = None, *, timeout: float | None = None) -> None:
        """Close the connection, wait (briefly) for the peer's answer, close the socket."""
        try:
            bound = recipes.CLOSE_TIMEOUT if timeout is None else timeout
            self._run(recipes.close_connection(self._driven(), error), bound)
        finally:
            self.driver.close()

    def __enter__(self: CB) -> CB:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run(
    recipe: Recipe[T],
    timeout: float | None,
    conn: ConnectionBase[Any] | None = None,
    connection: Callable[[DrivenCore, SocketDriver, float | None], ConnectionBase[Any]]
    | None = None,
) -> T:
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
                if type(step) is recipes.Wait:
                    conn._wait(step.ready, timeout)  # type: ignore[union-attr]
                elif step is recipes.DRAIN:
                    pass  # a blocking connection writes as it goes
                elif step is recipes.NOW:
                    value = time.monotonic()
                elif step is recipes.WALL:
                    value = time.time()
                elif isinstance(step, recipes.Sleep):
                    time.sleep(max(0.0, step.until - time.monotonic()))
                elif isinstance(step, recipes.Connect):
                    value = connect_transport(step.scheme, step.host, step.port, step.timeout)
                elif isinstance(step, recipes.Start):
                    assert isinstance(step.transport, socket.socket) and connection is not None
                    driver = SocketDriver._drive(step.core, step.transport)
                    value = conn = connection(step.core, driver, timeout)
                elif isinstance(step, recipes.Abort):
                    assert isinstance(step.connection, ConnectionBase)
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
