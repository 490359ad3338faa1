"""A tunnel through an HTTP proxy (HTTP CONNECT, RFC 9110 section 9.3.6), as a byte layer
without I/O: the outermost layer of a client's stack when a proxy is in the way.

:class:`ProxyLayer` sits between the network (the TCP connection to the proxy) and an
*inner* byte layer (the engine, the WebSocket layer, or TLS: TLS goes *inside* the tunnel,
so it is TLS to the broker, not to the proxy): see
:class:`~amqp_sansio.security.layers.ByteLayer`. It sends ``CONNECT host:port HTTP/1.1``
at once, with the ``Host`` header (RFC 9112 3.2.3: the same authority) and, when the proxy
URL has credentials, ``Proxy-Authorization: Basic`` (RFC 9110 11.7.2, RFC 7617). The
reply's head is parsed with python-hyper's sans-IO ``h11``; on a 2xx reply the tunnel is
open: bytes after the reply's head go to the inner layer, and the inner layer's output
(held until then) goes out as it is, both ways, to the end.

A failure is reported, never raised: :class:`ProxyFailed` (a non-2xx reply, with its
``status_code``; a malformed reply; a reply head over ``max_head_size``; no reply within
``handshake_timeout``; the proxy closing first), naming the proxy without its password;
then end-of-stream to the inner layer, whose connection ends as on a lost transport
(:class:`ProxyError`, ``amqp:connection:framing-error``, for the client cores).
"""

from __future__ import annotations

import base64
import enum
import math
from typing import Any, ClassVar

import attrs
import h11

from ..engine.contract import Event
from ..errors import FramingError, LocalProtocolError
from .layers import ByteLayer, LayerFailed, close_inner

__all__ = [
    "ProxyError",
    "ProxyEstablished",
    "ProxyFailed",
    "ProxyLayer",
    "ProxyOptions",
    "ProxyState",
]

#: The default limit on the proxy's reply head (its status line and headers), in bytes.
DEFAULT_MAX_HEAD_SIZE = 16 * 1024
#: The default time the proxy has to answer the CONNECT, in seconds.
DEFAULT_HANDSHAKE_TIMEOUT = 30.0


class ProxyError(FramingError):
    """The HTTP proxy did not open the tunnel, as an AMQP error: the stream that was to
    carry the frames never came (``amqp:connection:framing-error``, core spec 2.8.16).
    ``status_code`` is the proxy's HTTP status (407: it wants credentials), or None when
    it sent none (a malformed or oversized reply, a time-out, a close)."""

    def __init__(self, description: str, *, status_code: int | None = None) -> None:
        super().__init__(description)
        self.status_code = status_code


def _positive(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value > 0:
        raise LocalProtocolError(f"{attribute.name} must be positive, not {value!r}")


def _hidden(value: object) -> str:
    return "None" if value is None else "'***'"


def _ascii_host(host: str) -> str:
    """``host`` as it goes in the request target: an internationalized name in IDNA
    (RFC 5890) form."""
    return host if host.isascii() else host.encode("idna").decode("ascii")


def _host(_: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value or any(c.isspace() or not c.isprintable() or c in "/?#@" for c in value):
        raise LocalProtocolError(f"{attribute.name} is not a host name: {value!r}")
    try:
        _ascii_host(value)
    except UnicodeError:
        raise LocalProtocolError(f"{attribute.name} is not a host name: {value!r}") from None


def _user(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    _no_line_breaks(_, attribute, value)
    if value is not None and ":" in value:  # (RFC 7617 2: the user-id has no colon)
        raise LocalProtocolError(f"{attribute.name} holds a colon (Basic forbids it)")


def _no_line_breaks(_: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and any(c in value for c in "\r\n\0"):
        raise LocalProtocolError(f"{attribute.name} holds a line break or NUL")


@attrs.frozen(kw_only=True)
class ProxyOptions:
    """What a :class:`ProxyLayer` needs (see :doc:`websockets`, "Proxies").

    ``host`` and ``port`` are the tunnel's far end (the broker); ``proxy`` names the proxy
    in messages and events (``host:port``, never with credentials). ``username`` and
    ``password`` (both, or neither) go in ``Proxy-Authorization: Basic``; the password never
    shows in a repr. Limits: the reply's head may have at most ``max_head_size`` bytes
    (16 KiB), and must come within ``handshake_timeout`` seconds (30), counted from the
    first call with a time."""

    host: str = attrs.field(validator=_host)
    port: int = attrs.field(validator=[attrs.validators.ge(1), attrs.validators.le(65535)])
    proxy: str
    username: str | None = attrs.field(default=None, validator=_user)
    password: str | None = attrs.field(default=None, repr=_hidden, validator=_no_line_breaks)
    max_head_size: int = attrs.field(default=DEFAULT_MAX_HEAD_SIZE, validator=_positive)
    handshake_timeout: float = attrs.field(default=DEFAULT_HANDSHAKE_TIMEOUT, validator=_positive)

    @property
    def target(self) -> str:
        """The CONNECT's request target and ``Host``: ``host:port`` (RFC 9112 3.2.3), an
        IPv6 address in brackets, an internationalized name in IDNA form."""
        host = f"[{self.host}]" if ":" in self.host else _ascii_host(self.host)
        return f"{host}:{self.port}"

    def headers(self) -> list[tuple[str, str]]:
        """The CONNECT request's headers."""
        headers = [("Host", self.target)]
        if self.username is not None or self.password is not None:
            pair = f"{self.username or ''}:{self.password or ''}".encode()
            headers.append(("Proxy-Authorization", "Basic " + base64.b64encode(pair).decode()))
        return headers


# -- events ----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ProxyEstablished(Event):
    """The proxy answered the CONNECT with ``status_code`` (2xx): the tunnel to ``target``
    is open and carries the inner layer's bytes."""

    proxy: str
    target: str
    status_code: int


@attrs.frozen(kw_only=True)
class ProxyFailed(LayerFailed):
    """The proxy did not open the tunnel: a non-2xx reply (``status_code``: 407, it wants
    credentials; 403, it refuses the target; 502, it could not reach it), a malformed
    reply, a reply head over its limit, no reply in time, or the proxy closing first.
    ``proxy`` names it (without credentials). The inner layer then receives end-of-stream.
    Close the transport."""

    layer: ClassVar[str] = "HTTP proxy"

    proxy: str
    status_code: int | None = None

    def exception(self) -> ProxyError:
        """The failure as a :class:`ProxyError` (``amqp:connection:framing-error``)."""
        return ProxyError(self.error, status_code=self.status_code)


# -- the layer -------------------------------------------------------------------------------


class ProxyState(enum.Enum):
    """Where a :class:`ProxyLayer` is."""

    #: The CONNECT is sent; the reply is awaited. The inner layer's bytes wait inside it.
    CONNECTING = "connecting"
    #: The tunnel is open: bytes pass through both ways.
    OPEN = "open"
    #: The transport ended after the tunnel opened.
    CLOSED = "closed"
    #: Failed: nothing more is sent or reported.
    FAILED = "failed"


class ProxyLayer:
    """An HTTP CONNECT tunnel (RFC 9110 9.3.6) between the network and ``inner``, as the
    client, with ``options`` (:class:`ProxyOptions`).

    Drive it like the engine (``receive_data``, ``data_to_send``, ``next_deadline``,
    ``handle_timer``). :meth:`close` passes the close on to a layer inside that ends as a
    layer (TLS: its close_notify goes through the tunnel)."""

    def __init__(self, inner: ByteLayer, options: ProxyOptions) -> None:
        self.inner = inner
        self.options = options
        self.state = ProxyState.CONNECTING
        self._h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=options.max_head_size)
        self._fed = 0  # bytes given to h11 so far (the reply's head and what followed)
        self._deadline: float | None = None
        request = h11.Request(method="CONNECT", target=options.target, headers=options.headers())
        self._out: list[bytes] = [self._h11.send(request) or b""]

    def __repr__(self) -> str:
        return f"<ProxyLayer {self.options.proxy} -> {self.options.target} {self.state.value}>"

    # -- the byte interface ------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Take bytes from the network (empty: the transport closed); return this layer's
        events, then the inner layer's. Once the tunnel is open, bytes go inward as they
        are."""
        events: list[Event] = []
        self._arm(now)
        if self.state is ProxyState.OPEN:
            if not data:
                self.state = ProxyState.CLOSED
            events.extend(self.inner.receive_data(bytes(data), now))
            return events
        if self.state is not ProxyState.CONNECTING:
            return events
        if not data:
            self._fail(events, now, "closed the connection before answering the CONNECT")
            return events
        self._fed += len(data)
        self._h11.receive_data(bytes(data))
        self._read_reply(events, now)
        return events

    def data_to_send(self) -> bytes:
        """The bytes to write now (handed over once): the CONNECT request, then, once the
        tunnel is open, the inner layer's output."""
        if self.state is ProxyState.OPEN or self.state is ProxyState.CLOSED:
            self._out.append(self.inner.data_to_send())
        out, self._out = self._out, []
        return b"".join(out)

    def next_deadline(self) -> float | None:
        """The reply's deadline (while it is awaited) or the inner layer's, whichever is
        first; None once failed. Before the layer has been given a time (by
        :meth:`receive_data` or :meth:`handle_timer`), minus infinity: call
        :meth:`handle_timer` at once, so that the reply's time-out counts from the start
        (the layer never reads a clock)."""
        if self.state is ProxyState.FAILED:
            return None
        inner = self.inner.next_deadline()
        mine = None
        if self.state is ProxyState.CONNECTING:
            mine = -math.inf if self._deadline is None else self._deadline
        if mine is None or inner is None:
            return inner if mine is None else mine
        return min(mine, inner)

    def handle_timer(self, now: float) -> list[Event]:
        """Fail if the reply is overdue; pass the timer on if the inner layer's deadline
        has come (a call that only gives this layer the time goes no further)."""
        events: list[Event] = []
        self._arm(now)
        due = self._deadline is not None and now >= self._deadline
        if self.state is ProxyState.CONNECTING and due:
            why = f"did not answer the CONNECT within {self.options.handshake_timeout} s"
            self._fail(events, now, why)
            return events
        inner = self.inner.next_deadline()
        if self.state is not ProxyState.FAILED and inner is not None and now >= inner:
            events.extend(self.inner.handle_timer(now))
        return events

    def close(self) -> None:
        """Close the layer inside, if it ends as a layer (TLS, a WebSocket layer): its
        closing bytes go through the tunnel. The tunnel itself ends with the transport."""
        if self.state is ProxyState.OPEN or self.state is ProxyState.CLOSED:
            close_inner(self.inner)

    # -- internals ---------------------------------------------------------------------------

    def _arm(self, now: float) -> None:
        if self._deadline is None and self.state is ProxyState.CONNECTING:
            self._deadline = now + self.options.handshake_timeout

    def _read_reply(self, events: list[Event], now: float) -> None:
        while True:
            try:
                event = self._h11.next_event()
            except h11.RemoteProtocolError as exc:
                if self._fed > self.options.max_head_size:
                    why = f"sent a reply head over {self.options.max_head_size} bytes"
                else:
                    why = f"sent a malformed reply ({exc})"
                self._fail(events, now, why)
                return
            if event is h11.NEED_DATA:
                return
            if isinstance(event, h11.InformationalResponse):
                continue  # (1xx: the final reply follows, RFC 9110 15.2)
            assert isinstance(event, h11.Response)  # the only other event before a body
            self._answered(event, events, now)
            return

    def _answered(self, reply: h11.Response, events: list[Event], now: float) -> None:
        status = reply.status_code
        reason = reply.reason.decode("ascii", "replace")[:100]
        if not 200 <= status < 300:
            why = f"refused the CONNECT: HTTP {status} {reason}".rstrip()
            if status == 407:
                why += " (it wants credentials: http://USER:PASSWORD@host:port as the proxy)"
            self._fail(events, now, why, status=status)
            return
        rest, _ = self._h11.trailing_data
        head = self._fed - len(rest)
        if head > self.options.max_head_size:
            self._fail(events, now, f"sent a reply head over {self.options.max_head_size} bytes")
            return
        self.state = ProxyState.OPEN
        options = self.options
        events.append(
            ProxyEstablished(proxy=options.proxy, target=options.target, status_code=status)
        )
        if rest:
            events.extend(self.inner.receive_data(rest, now))

    def _fail(
        self, events: list[Event], now: float, why: str, *, status: int | None = None
    ) -> None:
        """Report the failure (the proxy named, without credentials) and end the inner
        layer's stream."""
        self.state = ProxyState.FAILED
        self._out.clear()
        events.append(
            ProxyFailed(
                error=f"the HTTP proxy {self.options.proxy} {why}",
                proxy=self.options.proxy,
                status_code=status,
            )
        )
        events.extend(self.inner.receive_data(b"", now))
