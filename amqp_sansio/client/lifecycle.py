"""A client connection's life, whatever protocol it speaks: what the adapters drive (bytes
and time in, bytes out, ``notify`` on every change), how it ends, and how a ``reconnect=``
connection is lost and made again on the schedule of :mod:`.reconnect`.

:class:`CoreBase` holds all of that once. The AMQP 1.0 core (:class:`~.core.Core`) and the
0-9-1 one (:class:`amqp_sansio.client.amqp091.Core`) derive from it and add what their
protocol has: which engine a new transport gets, what is made again on it (links; channels),
and what a loss or the end does to what the application holds. So the reconnection
promise, its schedule and its log lines are the same for both protocols by construction
(see :doc:`adapters`, "Reconnection")."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import amqp_sansio as a
from amqp_sansio.security.stack import ByteLayer

from .ops import ClientError, ConnectionClosedError, Op
from .proxy import Proxies
from .reconnect import Backoff
from .url import AMQPURL

__all__ = ["HELD_CALLS", "CoreBase", "DrivenCore", "EngineStream", "reconnect_log"]

#: The most calls whose output an adapter holds back to write it at once (the blocking
#: adapter's ``batch()``, the asyncio adapter's turn of the loop): a long run of calls goes
#: out this many at a time, so that the peer works on the first while the next are made.
HELD_CALLS = 100

#: Where the disconnects, attempts and reconnects of a ``reconnect=`` connection are logged
#: (see :doc:`adapters`, "Reconnection"): URLs without their credentials.
reconnect_log = logging.getLogger("amqp_sansio.adapters.reconnect")

E = TypeVar("E")


#: The byte interface of what a core drives: an engine, or the layers stacked around one
#: (:class:`~amqp_sansio.security.layers.ByteLayer`, the one declaration).
EngineStream = ByteLayer


class DrivenCore(ByteLayer, Protocol):
    """What the adapters' drivers and the shared recipes need of a core, of either
    protocol (the waits, the I/O, the reconnection steps): the byte interface
    (:class:`~amqp_sansio.security.layers.ByteLayer`) and the connection's life."""

    notify: Callable[[], None]
    url: AMQPURL | None
    lost: bool
    reconnects: int
    on_reconnect: Callable[[], None] | None

    def transport_failed(self, error: BaseException, now: float) -> None: ...

    def stop(self, now: float) -> None: ...

    @property
    def gone(self) -> bool: ...

    @property
    def finished(self) -> bool: ...

    def check(self) -> None: ...

    def open(self, now: float) -> None: ...

    def close(self, error: Any = None) -> None:
        """Close (``error``: the protocol's, as its core takes it; None: a normal close)."""

    def open_ready(self) -> bool: ...

    def close_ready(self) -> bool: ...

    def connected_ready(self) -> bool: ...

    def next_attempt(self, now: float) -> tuple[float, AMQPURL]: ...

    def address(self, url: AMQPURL) -> tuple[str, int]: ...

    def attempt_failed(self, error: BaseException, now: float) -> None: ...

    def restart(self, now: float) -> None: ...


class CoreBase(Generic[E]):
    """One client (or server) connection's life for the high-level API: see the module's
    docstring. ``engine`` is the protocol's engine, ``stream`` what the adapter drives (the
    engine's byte interface, or a TLS layer around it). A subclass handles the events
    (:meth:`_handle`) and provides the hooks below."""

    #: The class of the errors that end the connection (a protocol's core may add details).
    closed_error: type[ConnectionClosedError] = ConnectionClosedError

    def __init__(
        self, engine: E, stream: EngineStream, notify: Callable[[], None] | None = None
    ) -> None:
        self.engine = engine
        self.stream = stream
        #: A client's URL.
        self.url: AMQPURL | None = None
        #: A client's HTTP proxies (:doc:`websockets`, "Proxies"), or None: none.
        self.proxies: Proxies | None = None
        self.notify: Callable[[], None] = notify or (lambda: None)
        self.opened: Op[None] = Op()
        #: Done when the connection has ended (both closes exchanged, or lost).
        self.ended: Op[None] = Op()
        #: What ended the connection abnormally, if anything did.
        self.error: ClientError | None = None
        self._closing = False
        self._restarting = False
        self._transport_closed = False
        #: Reconnection (a client's, opt-in): the schedule.
        self.backoff: Backoff | None = None
        #: The transport is gone and a new one is wanted (see :meth:`next_attempt`).
        self.lost = False
        #: How many times the connection was made again after a loss.
        self.reconnects = 0
        #: What made the connection go, the last time it was lost.
        self.last_error: ClientError | None = None
        #: Called once the connection is open again (what the application has is being
        #: made again).
        self.on_reconnect: Callable[[], None] | None = None
        self._stopping = False

    # -- the hooks of a protocol's core ------------------------------------------------------

    def _handle(self, events: list[a.Event]) -> list[a.Event]:
        """Handle what the stream reported; call :meth:`_changed`; return the events."""
        raise NotImplementedError  # pragma: no cover - every core has its own

    def _restart_engine(self, now: float) -> None:
        """A new engine (and stream) for :attr:`backoff`'s URL, opened, with what the
        application has made again on it."""
        raise NotImplementedError  # pragma: no cover

    def _close_engine(self, reply: object) -> None:
        """Start the engine's close handshake (``reply``: the protocol's error, or None)."""
        raise NotImplementedError  # pragma: no cover

    def _on_lost(self) -> None:
        """The connection was lost and will be made again: what cannot survive (a
        transaction) fails, the rest waits for the next transport."""

    def _on_end(self, error: ClientError) -> None:
        """The connection has ended for good: everything waiting fails with ``error``."""

    def _summary(self) -> str:
        """What a reconnection makes again, for its log line ("attaching 3 links again")."""
        return ""

    # -- the adapter's side --------------------------------------------------------------------

    def receive_data(self, data: bytes, now: float) -> list[a.Event]:
        """Bytes from the transport; ``b""`` when it closed. Returns the stream's events
        (already handled), so that the core has the byte interface of what it drives."""
        if self._transport_closed:
            return []
        if not data:
            self._transport_closed = True
        return self._handle(self.stream.receive_data(data, now))

    def transport_failed(self, error: BaseException, now: float) -> None:
        """The transport failed (reset, broken pipe): the connection is lost."""
        if self.error is None and not self.ended.done() and not self.lost:
            self.error = self.closed_error(f"the transport failed: {error}", retryable=True)
        self.receive_data(b"", now)

    def stop(self, now: float) -> None:
        """The adapter stops driving the connection (its task was cancelled): it ends, as
        lost, without another attempt."""
        self._stopping = True
        if self.lost:
            self._give_up(self.closed_error("the connection is closed"))
        else:
            self.receive_data(b"", now)

    def handle_timer(self, now: float) -> list[a.Event]:
        """Call at (or after) :meth:`next_deadline`."""
        deadline = self.stream.next_deadline()
        if deadline is not None and now >= deadline:
            return self._handle(self.stream.handle_timer(now))
        return []

    def next_deadline(self) -> float | None:
        return self.stream.next_deadline()

    def data_to_send(self) -> bytes:
        return self.stream.data_to_send()

    @property
    def gone(self) -> bool:
        """The connection has ended: nothing more is sent or received."""
        return self.ended.done()

    @property
    def finished(self) -> bool:
        """The adapter may close the transport (once it has written what is left)."""
        return self.ended.done()

    # -- reconnection (the adapter connects, the core decides) ----------------------------

    @property
    def reconnecting(self) -> bool:
        """Reconnection is on."""
        return self.backoff is not None

    def next_attempt(self, now: float) -> tuple[float, AMQPURL]:
        """While :attr:`lost`: when (on the adapter's clock) and to which URL to connect."""
        assert self.backoff is not None and self.lost
        return self.backoff.next_attempt(now), self.backoff.url

    def address(self, url: AMQPURL) -> tuple[str, int]:
        """Where the transport to ``url`` goes: its HTTP proxy's host and port
        (:attr:`proxies`), or the URL's own."""
        return (url.host, url.port) if self.proxies is None else self.proxies.address(url)

    def attempt_failed(self, error: BaseException, now: float) -> None:
        """The adapter could not connect (refused, unreachable, timed out): the next attempt
        is scheduled, or, after ``max_attempts``, the connection ends with the error."""
        assert self.backoff is not None
        self.last_error = self.closed_error(f"could not connect: {error}", retryable=True)
        self._log_failed_attempt(self.last_error)
        if not self.backoff.failed():
            self._give_up(self.last_error)

    def _log_failed_attempt(self, error: ClientError | None) -> None:
        assert self.backoff is not None
        reconnect_log.warning(
            "attempt %d to %s %s failed: %s",
            self.backoff.failures + 1,
            "reconnect to" if self.opened.done() else "connect to",
            self.backoff.url,
            error,
        )

    def restart(self, now: float) -> None:
        """The adapter has connected a new transport to :meth:`next_attempt`'s URL: a new
        engine opens, and what the application has is made again on it
        (:meth:`_restart_engine`)."""
        assert self.backoff is not None and self.lost
        if self.opened.done():
            reconnect_log.info(
                "attempt %d to reconnect to %s: connected, opening",
                self.backoff.failures + 1,
                self.backoff.url,
            )
        self.lost = False
        self._restarting = True
        self._transport_closed = False
        self._restart_engine(now)
        self._changed()

    def connected_ready(self) -> bool:
        """Not waiting for a new transport (raises if the connection has ended)."""
        self.check()
        return not self.lost

    def _lose(self) -> None:
        """The connection was lost (a retryable error): keep what the application has, to be
        made again on the next transport."""
        assert self.backoff is not None
        cause, self.error = self.error, None
        if self._restarting:  # the attempt failed before the open
            self._log_failed_attempt(cause)
            if not self.backoff.failed():
                self.last_error = cause
                self._give_up(cause or self.closed_error("the connection was lost"))
                return
        else:
            self.backoff.lost()
            reconnect_log.warning(
                "the connection to %s was lost (%s): reconnecting", self.backoff.url, cause
            )
        self.lost = True
        self.last_error = cause
        self._on_lost()

    def _give_up(self, error: ClientError | None) -> None:
        self.lost = False
        if self.error is None:
            if self.backoff is not None and self.backoff.failures:
                failures = self.backoff.failures
                reconnect_log.error(
                    "gave up connecting to %s after %d attempts: %s",
                    self.backoff.url,
                    failures,
                    error,
                )
                self.error = self.closed_error(
                    f"gave up after {failures} attempts; the last: {error}",
                    error.error if error is not None else None,
                )
            else:
                self.error = error
        self._end()

    def _reopened(self, backoff: Backoff) -> None:
        """A ``reconnect=`` connection is open: the first time, or again."""
        if self.opened.done():
            reconnect_log.warning(
                "reconnected to %s after %d failed attempts; %s",
                backoff.url,
                backoff.failures,
                self._summary(),
            )
        backoff.succeeded()
        self._restarting = False
        if self.opened.done():
            self.reconnects += 1
            if self.on_reconnect is not None:
                self.on_reconnect()

    # -- commands ------------------------------------------------------------------------------

    def check(self) -> None:
        """Raise what ended the connection, if it has ended."""
        if self.error is not None:
            raise self.error
        if self.ended.done() or self._closing:
            raise self.closed_error("the connection is closed")

    def open_ready(self) -> bool:
        self.check()
        return self.opened.done()

    def close(self, error: object = None) -> None:
        """Close the connection; :attr:`ended` is done when the peer has answered."""
        if self._closing or self.ended.done():
            return
        self._closing = True
        if self.lost:  # no transport: nothing to say to the peer
            self.lost = False
            self._end()
            self._changed()
            return
        self._close_engine(error)
        self._changed()

    def close_ready(self) -> bool:
        return self.ended.done()

    # -- the end -------------------------------------------------------------------------------

    def _changed(self) -> None:
        self.notify()

    def _fail(self, error: ClientError) -> None:
        if self.error is None:
            self.error = error

    def _ended(self, event: a.Event | None) -> None:
        """The engine has ended (the close handshake is over, or the transport went): the
        connection is lost (to be made again) or ends."""
        if self.ended.done() or self.lost:
            return
        if self.error is None and not self._closing:
            self._fail(self.closed_error("the connection was lost", retryable=True, event=event))
        close = getattr(self.stream, "close", None)
        if self.stream is not self.engine and close is not None:
            close()  # TLS close_notify after the AMQP close
        error = self.error
        if (
            self.backoff is not None
            and not self._closing
            and not self._stopping
            and isinstance(error, ConnectionClosedError)
            and error.retryable
        ):
            self._lose()
            return
        self._end()

    def _end(self) -> None:
        """The connection has ended for good: everything waiting fails with the reason."""
        error = self.error or self.closed_error("the connection is closed")
        self.opened.fail(error)
        self._on_end(error)
        self.ended.set(None)
