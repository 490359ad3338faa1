"""The AMQP WebSocket binding (OASIS AMQP WebSocket Binding CS01), as a byte layer without I/O.

:class:`WebSocketLayer` sits between the network (or a TLS layer, for ``wss``) and an
*inner* byte layer (the engine, or the frame trace around it): see
:class:`~amqp_sansio.security.layers.ByteLayer`. The binding (CS01 section 2) is an HTTP/1.1
upgrade (RFC 6455 section 4) offering the subprotocol ``amqp`` (a server also takes the
draft binding's ``AMQPWSB10``, which Azure's SDKs offer), then binary WebSocket
messages carrying the AMQP byte stream: protocol headers, SASL frames and AMQP frames, where
a frame may span messages and a message may hold several frames. The layer hands the
payload of each binary message to the inner layer as it arrives, so a message is never
gathered whole; the inner layer's output goes out as one binary message per
:meth:`WebSocketLayer.data_to_send`.

WebSocket itself is python-hyper's sans-IO ``wsproto``. The layer adds what the binding and
this library ask around it: the subprotocol check in both roles, the path a server serves,
limits on the upgrade's size and time and on a message's size, a bounded answer to pings,
the WebSocket close when the engine inside has ended, and events
(:class:`WebSocketEstablished`, :class:`WebSocketFailed`, :class:`WebSocketClosed`),
reported before those of the inner layer, as every layer does.

A failure (a peer's fault) is reported, never raised: :class:`WebSocketFailed`, with the
WebSocket close code (RFC 6455 section 7.4.1) or the HTTP status the layer answered with,
then end-of-stream to the inner layer, whose connection then ends as on a lost transport
(the client cores report it as an ``amqp:connection:framing-error``,
:class:`WebSocketError`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any, ClassVar

import attrs
from wsproto import ConnectionType, WSConnection
from wsproto.connection import ConnectionState
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.utilities import RemoteProtocolError as _WSRemoteError

from ..engine.contract import Event
from ..errors import FramingError, LocalProtocolError
from .layers import ByteLayer, LayerFailed, close_inner

__all__ = [
    "DRAFT_SUBPROTOCOL",
    "SUBPROTOCOL",
    "WebSocketClosed",
    "WebSocketError",
    "WebSocketEstablished",
    "WebSocketFailed",
    "WebSocketLayer",
    "WebSocketOptions",
    "WebSocketState",
]

#: The subprotocol of the binding (CS01 section 2.1): ``Sec-WebSocket-Protocol: amqp``.
SUBPROTOCOL = "amqp"
#: The subprotocol of the binding's working draft (``AMQPWSB10``, "AMQP WebSocket Binding
#: 1.0"), which CS01 renamed ``amqp``: Azure's SDKs (``azure-servicebus``' ``_pyamqp``,
#: its ``AMQP_WS_SUBPROTOCOL``) offer it, and only it. The bytes inside are the same.
DRAFT_SUBPROTOCOL = "AMQPWSB10"

#: The close codes the layer sends (RFC 6455 section 7.4.1).
NORMAL_CLOSURE = 1000
PROTOCOL_ERROR = 1002
UNSUPPORTED_DATA = 1003
MESSAGE_TOO_BIG = 1009
#: The code of a connection that ended without a close frame (never sent, RFC 6455 7.1.5).
ABNORMAL_CLOSURE = 1006

#: What wsproto raises on a peer's bytes: its own error (a bad upgrade), and a header's or a
#: close reason's bytes that do not decode.
_PEER_FAULTS = (_WSRemoteError, UnicodeError)

#: h11's own ceiling on an HTTP head (wsproto's h11 connection keeps its default).
_H11_HEAD_LIMIT = 16 * 1024


class WebSocketError(FramingError):
    """A WebSocket failure, as an AMQP error: the stream carrying the frames broke
    (``amqp:connection:framing-error``, core spec 2.8.16). ``close_code`` is the WebSocket
    close code sent (RFC 6455 7.4.1), ``status_code`` the HTTP status of a refused upgrade
    (sent by a server, received by a client); either may be None."""

    def __init__(
        self, description: str, *, close_code: int | None = None, status_code: int | None = None
    ) -> None:
        super().__init__(description)
        self.close_code = close_code
        self.status_code = status_code


def _positive(_: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value > 0:
        raise LocalProtocolError(f"{attribute.name} must be positive, not {value!r}")


def _head_size(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if not 0 < value <= _H11_HEAD_LIMIT:
        raise LocalProtocolError(
            f"{attribute.name} must be between 1 and {_H11_HEAD_LIMIT} (h11's ceiling), "
            f"not {value!r}"
        )


def _as_tuple(values: Iterable[str]) -> tuple[str, ...]:
    """A tuple of strings (paths, subprotocol names), a lone string as one of them."""
    return (values,) if isinstance(values, str) else tuple(values)


def _names(_: object, attribute: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
    if not value or not all(isinstance(name, str) and name for name in value):
        raise LocalProtocolError(f"{attribute.name} must hold at least one subprotocol name")


def _paths(_: object, attribute: attrs.Attribute[tuple[str, ...]], value: tuple[str, ...]) -> None:
    if not value or not all(path.startswith("/") for path in value):
        raise LocalProtocolError(f"{attribute.name} must hold paths that start with '/'")


@attrs.frozen(kw_only=True)
class WebSocketOptions:
    """What a :class:`WebSocketLayer` needs, and its limits (see :doc:`websockets`).

    ``host`` is the client's ``Host`` header (``host`` or ``host:port``; required of a
    client) and ``path`` the resource it asks for (RFC 6455 3, the URL's path, ``/`` by
    default). A server serves the paths in ``accept_paths`` (the query is not compared) and
    answers any other with 404. It accepts an upgrade offering one of
    ``accept_subprotocols`` (by default ``amqp``, CS01 2.1, and the draft's ``AMQPWSB10``,
    :data:`DRAFT_SUBPROTOCOL`), choosing the first of the client's offers it accepts, and
    answers an upgrade offering none with 400. A client offers ``amqp`` only.

    Limits: ``max_handshake_size`` bytes may arrive before the upgrade is done (16 KiB, also
    h11's own ceiling on an HTTP head); the upgrade must be done within
    ``handshake_timeout`` seconds, counted from the first call with a time (a server's
    first bytes; a client's first ``handle_timer`` or ``receive_data``); one incoming
    message may carry at most ``max_message_size`` bytes (close code 1009 beyond), however
    it is fragmented; and the inner layer's output goes out in messages of at most
    ``max_message_size`` bytes too (a peer with the same limit never refuses ours: a run of
    large transfers written at once is split, frames spanning messages as CS01 allows)."""

    host: str | None = None
    path: str = attrs.field(default="/", validator=attrs.validators.matches_re(r"/\S*"))
    accept_paths: tuple[str, ...] = attrs.field(
        default=("/",), converter=_as_tuple, validator=_paths
    )
    accept_subprotocols: tuple[str, ...] = attrs.field(
        default=(SUBPROTOCOL, DRAFT_SUBPROTOCOL), converter=_as_tuple, validator=_names
    )
    max_handshake_size: int = attrs.field(default=_H11_HEAD_LIMIT, validator=_head_size)
    handshake_timeout: float = attrs.field(default=30.0, validator=_positive)
    max_message_size: int = attrs.field(default=16 * 1024 * 1024, validator=_positive)


# -- events ----------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class WebSocketEstablished(Event):
    """The upgrade completed with ``subprotocol`` (``amqp``, CS01 2.1; a server may have
    chosen another of its ``accept_subprotocols``, e.g. ``AMQPWSB10``): binary messages now
    carry the AMQP stream. ``path`` is the resource (the server's: as the client asked)."""

    subprotocol: str
    path: str


@attrs.frozen(kw_only=True)
class WebSocketFailed(LayerFailed):
    """The WebSocket layer failed: a refused or broken upgrade (``status_code``: the HTTP
    status a server sent, or a client received), a server that did not choose ``amqp``, a
    text message (close code 1003), a message over the limit (1009), a frame that breaks
    RFC 6455 (1002, or the code wsproto names), an upgrade over its size or time. The
    close frame or HTTP answer (if any) is the last thing the layer sends; the inner layer
    then receives end-of-stream. Close the transport."""

    layer: ClassVar[str] = "WebSocket"

    close_code: int | None = None
    status_code: int | None = None

    def exception(self) -> WebSocketError:
        """The failure as a :class:`WebSocketError` (``amqp:connection:framing-error``)."""
        return WebSocketError(self.error, close_code=self.close_code, status_code=self.status_code)


@attrs.frozen(kw_only=True)
class WebSocketClosed(Event):
    """The peer's side of the WebSocket ended: its close frame (``clean``, with its ``code``
    and ``reason``; answered) or the transport's end without one (``code`` 1006, not
    ``clean``). The inner layer then receives end-of-stream."""

    code: int
    reason: str = ""
    clean: bool


# -- the layer -------------------------------------------------------------------------------


class WebSocketState(enum.Enum):
    """Where a :class:`WebSocketLayer` is."""

    #: The HTTP upgrade is under way; the inner layer's bytes wait inside it.
    HANDSHAKE = "handshake"
    #: Binary messages flow both ways.
    OPEN = "open"
    #: We sent a close frame; the peer's messages are still read until its close.
    CLOSING = "closing"
    #: Done: both sides closed, or the transport ended.
    CLOSED = "closed"
    #: Failed: nothing more is sent (after the close or HTTP answer) or reported.
    FAILED = "failed"


def _http_error(status: int, phrase: str) -> bytes:
    return (f"HTTP/1.1 {status} {phrase}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").encode(
        "ascii"
    )


class WebSocketLayer:
    """The AMQP WebSocket binding between the network and ``inner``, as a ``client`` or a
    server, with ``options`` (:class:`WebSocketOptions`; a client's must name the host).

    A client sends its upgrade request at once and holds the inner layer's bytes (they stay
    in the inner layer) until the server accepts with the subprotocol ``amqp``. A server
    accepts an upgrade that offers one of its ``accept_subprotocols`` (``amqp`` or
    ``AMQPWSB10`` by default) at one of its paths, and answers any other with an HTTP
    error (400 without one, 404 at another path, 431 over the size limit, 408
    over the time limit). Pings are answered with a pong, at most one waiting (RFC 6455
    5.5.3 allows answering only the latest), so a flood of pings never queues output.

    Drive it like the engine (``receive_data``, ``data_to_send``, ``next_deadline``,
    ``handle_timer``); :meth:`close` once the engine inside has ended sends the WebSocket
    close (a TLS layer around it calls it as it closes itself)."""

    #: :meth:`close` ends this layer, not the engine: the layer around it calls it first
    #: (:func:`~amqp_sansio.security.stack.close_inner`).
    closes_as_layer: ClassVar[bool] = True

    def __init__(
        self, inner: ByteLayer, *, client: bool, options: WebSocketOptions | None = None
    ) -> None:
        options = WebSocketOptions() if options is None else options
        if client and not options.host:
            raise LocalProtocolError("a WebSocket client needs options.host (the Host header)")
        self.inner = inner
        self.client = client
        self.options = options
        self.state = WebSocketState.HANDSHAKE
        self._ws = WSConnection(ConnectionType.CLIENT if client else ConnectionType.SERVER)
        self._out: list[bytes] = []
        self._seen = 0  # bytes received during the handshake
        self._deadline: float | None = None  # the handshake's, once armed
        self._message = 0  # bytes of the incoming message so far
        self._pong: bytes | None = None  # the payload of the latest ping not yet answered
        #: The resource of the upgrade, once it is done (a server's: as the client asked).
        self.path: str | None = None
        if client:
            assert options.host is not None
            request = Request(host=options.host, target=options.path, subprotocols=[SUBPROTOCOL])
            self._out.append(self._ws.send(request))

    def __repr__(self) -> str:
        role = "client" if self.client else "server"
        return f"<WebSocketLayer {role} {self.state.value}>"

    # -- the byte interface ------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Take bytes from the network (empty: the transport closed); return what happened:
        this layer's events, then the inner layer's, in order. The payload of binary
        messages goes to ``inner.receive_data`` as it arrives."""
        events: list[Event] = []
        self._arm(now)
        if self.state in (WebSocketState.CLOSED, WebSocketState.FAILED):
            return events
        if not data:
            self._eof(events, now)
            return events
        if self.state is WebSocketState.HANDSHAKE:
            self._seen += len(data)
            if self._seen > self.options.max_handshake_size:
                self._fail(
                    events,
                    now,
                    f"the upgrade exceeded {self.options.max_handshake_size} bytes",
                    status=(431, "Request Header Fields Too Large"),
                )
                return events
        try:
            self._ws.receive_data(bytes(data))
            self._process(events, now)
        except _PEER_FAULTS as exc:  # a broken upgrade (or frame) wsproto did not catch
            if self.state not in (WebSocketState.FAILED, WebSocketState.CLOSED):
                what = "upgrade" if self.state is WebSocketState.HANDSHAKE else "frame"
                self._fail(
                    events,
                    now,
                    f"bad WebSocket {what}: {exc}",
                    close=PROTOCOL_ERROR,
                    status=(400, "Bad Request"),
                )
        return events

    def data_to_send(self) -> bytes:
        """The bytes to write now (handed over once): the upgrade, a pong, then the inner
        layer's output as one binary message (once the upgrade is done)."""
        if self.state is WebSocketState.OPEN and self._ws.state is ConnectionState.OPEN:
            if self._pong is not None:
                self._out.append(self._ws.send(Ping(payload=self._pong).response()))
                self._pong = None
            self._send_inner()
        out, self._out = self._out, []
        return b"".join(out)

    def next_deadline(self) -> float | None:
        """The handshake's deadline (while it runs) or the inner layer's, whichever is
        first; None once failed."""
        if self.state is WebSocketState.FAILED:
            return None
        inner = self.inner.next_deadline()
        mine = self._deadline if self.state is WebSocketState.HANDSHAKE else None
        if mine is None or inner is None:
            return inner if mine is None else mine
        return min(mine, inner)

    def handle_timer(self, now: float) -> list[Event]:
        """Fail the upgrade if it is overdue (a server answers 408); pass the timer on."""
        events: list[Event] = []
        self._arm(now)
        if (
            self.state is WebSocketState.HANDSHAKE
            and self._deadline is not None
            and now >= self._deadline
        ):
            self._fail(
                events,
                now,
                f"the upgrade took longer than {self.options.handshake_timeout} s",
                status=(408, "Request Timeout"),
            )
            return events
        if self.state is not WebSocketState.FAILED:
            events.extend(self.inner.handle_timer(now))
        return events

    def close(self) -> None:
        """End our side: the inner layer's last bytes go out, then a close frame (1000).
        Call it once the engine inside has ended; the peer's messages are still read until
        its close. Before the upgrade is done the layer just ends. Again: nothing."""
        close_inner(self.inner)
        if self.state is WebSocketState.OPEN and self._ws.state is ConnectionState.OPEN:
            self._send_inner()
            self._out.append(self._ws.send(CloseConnection(code=NORMAL_CLOSURE)))
            self.state = WebSocketState.CLOSING
        elif self.state is WebSocketState.HANDSHAKE:
            self.state = WebSocketState.CLOSED

    def set_transport_security(self, **facts: object) -> None:
        """(From a TLS layer below, ``wss``: passed on to the inner layer, for SASL.)"""
        secure = getattr(self.inner, "set_transport_security", None)
        if secure is not None:
            secure(**facts)

    # -- internals ---------------------------------------------------------------------------

    def _arm(self, now: float) -> None:
        if self._deadline is None and self.state is WebSocketState.HANDSHAKE:
            self._deadline = now + self.options.handshake_timeout

    def _send_inner(self) -> None:
        data = self.inner.data_to_send()
        most = self.options.max_message_size
        if len(data) <= most:
            if data:
                self._out.append(self._ws.send(BytesMessage(data=data)))
            return
        for start in range(0, len(data), most):
            self._out.append(self._ws.send(BytesMessage(data=data[start : start + most])))

    def _process(self, events: list[Event], now: float) -> None:
        """Act on what wsproto parsed; binary payloads go to the inner layer, joined."""
        payload: list[bytes] = []
        for event in self._ws.events():
            if self.state in (WebSocketState.FAILED, WebSocketState.CLOSED):
                break  # what follows a failure or the close is not read
            if isinstance(event, BytesMessage):
                self._message += len(event.data)
                if self._message > self.options.max_message_size:
                    self._flush(payload, events, now)
                    self._fail(
                        events,
                        now,
                        f"a message exceeded {self.options.max_message_size} bytes",
                        close=MESSAGE_TOO_BIG,
                    )
                    break
                if event.message_finished:
                    self._message = 0
                payload.append(bytes(event.data))
                continue
            self._flush(payload, events, now)
            if isinstance(event, Ping):
                self._pong = bytes(event.payload)
            elif isinstance(event, TextMessage):
                self._fail(events, now, "a text message (AMQP is binary)", close=UNSUPPORTED_DATA)
            elif isinstance(event, CloseConnection):
                self._closed(event, events, now)
            elif isinstance(event, Request):
                self._accept(event, events, now)
            elif isinstance(event, AcceptConnection):
                self._accepted(event, events, now)
            elif isinstance(event, RejectConnection):
                self._fail(
                    events,
                    now,
                    f"the server refused the upgrade (HTTP {event.status_code})",
                    received_status=event.status_code,
                )
            # Pong and a refusal's body (RejectData): nothing to do.
        self._flush(payload, events, now)

    def _flush(self, payload: list[bytes], events: list[Event], now: float) -> None:
        if payload:
            data = b"".join(payload)
            payload.clear()
            events.extend(self.inner.receive_data(data, now))

    def _accept(self, request: Request, events: list[Event], now: float) -> None:
        """A server's answer to the upgrade request (CS01 2.1)."""
        path = request.target.split("?", 1)[0]
        accepted = self.options.accept_subprotocols
        chosen = next((name for name in request.subprotocols if name in accepted), None)
        if chosen is None:
            names = ", ".join(accepted)
            self._reject(events, now, 400, f"the upgrade offers none of the subprotocols {names}")
        elif path not in self.options.accept_paths:
            self._reject(events, now, 404, "no AMQP endpoint at this path")
        else:
            self._out.append(self._ws.send(AcceptConnection(subprotocol=chosen)))
            self._open(path, events, chosen)

    def _accepted(self, event: AcceptConnection, events: list[Event], now: float) -> None:
        """A client's check of the server's answer: it must choose ``amqp``."""
        if event.subprotocol != SUBPROTOCOL:
            self._fail(
                events, now, "the server did not choose the subprotocol amqp", close=PROTOCOL_ERROR
            )
            return
        self._open(self.options.path, events, SUBPROTOCOL)

    def _open(self, path: str, events: list[Event], subprotocol: str) -> None:
        self.state = WebSocketState.OPEN
        self.path = path
        events.append(WebSocketEstablished(subprotocol=subprotocol, path=path))

    def _reject(self, events: list[Event], now: float, status: int, why: str) -> None:
        self._out.append(self._ws.send(RejectConnection(status_code=status, has_body=False)))
        self._fail(events, now, why, sent_status=status)

    def _closed(self, event: CloseConnection, events: list[Event], now: float) -> None:
        if self._ws.state in (ConnectionState.OPEN, ConnectionState.LOCAL_CLOSING):
            # wsproto reports a frame it cannot parse as a close it wants sent.
            self._fail(
                events, now, f"a broken WebSocket frame: {event.reason}", close=int(event.code)
            )
            return
        if self._ws.state is ConnectionState.REMOTE_CLOSING:
            self._out.append(self._ws.send(event.response()))
        self.state = WebSocketState.CLOSED
        events.append(WebSocketClosed(code=int(event.code), reason=event.reason or "", clean=True))
        events.extend(self.inner.receive_data(b"", now))

    def _eof(self, events: list[Event], now: float) -> None:
        if self.state is WebSocketState.HANDSHAKE:
            self._fail(events, now, "the transport closed during the WebSocket upgrade")
            return
        self.state = WebSocketState.CLOSED
        events.append(WebSocketClosed(code=ABNORMAL_CLOSURE, clean=False))
        events.extend(self.inner.receive_data(b"", now))

    def _fail(
        self,
        events: list[Event],
        now: float,
        why: str,
        *,
        close: int | None = None,
        status: tuple[int, str] | None = None,
        sent_status: int | None = None,
        received_status: int | None = None,
    ) -> None:
        """Report the failure, leave its close frame (once open) or HTTP answer (a server's,
        before the upgrade) as the last bytes sent, and end the inner layer's stream."""
        code = None
        if close is not None and self._ws.state is ConnectionState.OPEN:
            self._out.append(self._ws.send(CloseConnection(code=close, reason=why[:100])))
            code = close
        elif status is not None and not self.client and self.state is WebSocketState.HANDSHAKE:
            self._out.append(_http_error(*status))
            sent_status = status[0]
        self.state = WebSocketState.FAILED
        events.append(
            WebSocketFailed(error=why, close_code=code, status_code=sent_status or received_status)
        )
        events.extend(self.inner.receive_data(b"", now))
