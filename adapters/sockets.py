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

import selectors
import socket
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol

from amqp_sansio import Connection, ConnectionEnded, Event

__all__ = ["ByteStream", "SocketDriver"]

#: The default size of one ``recv``.
READ_SIZE = 65536


class ByteStream(Protocol):
    """What the driver drives: the engine's byte interface, which
    :class:`~amqp_sansio.Connection` and :class:`~amqp_sansio.TLSLayer` both offer.
    ``receive_data(b"", now)`` means the transport closed. An object that also has a
    ``close()`` (a security layer) has it called once the connection inside reports
    :class:`~amqp_sansio.ConnectionEnded`."""

    def receive_data(self, data: bytes, now: float) -> list[Event]: ...

    def data_to_send(self) -> bytes: ...

    def next_deadline(self) -> float | None: ...

    def handle_timer(self, now: float) -> list[Event]: ...


class SocketDriver:
    """Move bytes between ``connection`` and the connected stream socket ``sock``.

    ``connection`` is a :class:`~amqp_sansio.Connection`, or a layer around one such as
    :class:`~amqp_sansio.TLSLayer` (anything with the :class:`ByteStream` interface). When
    the connection inside a layer ends (:class:`~amqp_sansio.ConnectionEnded` passes
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
        #: The driven connection has reported :class:`~amqp_sansio.ConnectionEnded`.
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
        **kwargs: Any,
    ) -> SocketDriver:
        """Connect to ``address`` (host, port) as a client and drive ``connection`` over it."""
        sock = socket.create_connection(address, timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return cls(connection, sock, **kwargs)
        except BaseException:
            sock.close()
            raise

    @classmethod
    def accept(
        cls,
        connection: ByteStream,
        listener: socket.socket,
        *,
        timeout: float | None = 10.0,
        **kwargs: Any,
    ) -> SocketDriver:
        """Accept one connection on the listening socket ``listener`` (which stays open) and
        drive ``connection``, in the server role, over it. :class:`TimeoutError` if no peer
        connects within ``timeout`` seconds."""
        with selectors.DefaultSelector() as sel:
            sel.register(listener, selectors.EVENT_READ)
            if not sel.select(timeout):
                raise TimeoutError(f"no connection within {timeout} s")
        sock, _ = listener.accept()
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return cls(connection, sock, **kwargs)
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
                self._selector.modify(self.sock, mask)
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
        if isinstance(self.connection, Connection):
            return
        close = getattr(self.connection, "close", None)
        if close is not None:
            close()

    def _read(self, new: list[Event]) -> None:
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
        self._dispatch(self.connection.receive_data(data, self._clock()), new)

    def _write(self, new: list[Event]) -> None:
        try:
            sent = self.sock.send(self._out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # broken pipe, reset: nothing more can go out
            self.error = exc
            self.eof = True
            self._out.clear()
            if not self.ended:  # the connection is told, unless it has ended already
                self._dispatch(self.connection.receive_data(b"", self._clock()), new)
            return
        del self._out[:sent]
