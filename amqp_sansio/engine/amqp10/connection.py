"""The protocol engine's connection (core spec 2.4), over its sessions (``session``), links
(``link``) and deliveries (``delivery``); core spec part 2, 3.4.

One :class:`Connection` per AMQP connection, in the client or the server role. It takes
bytes with :meth:`Connection.receive_data` and returns events; it queues the bytes to send,
which :meth:`Connection.data_to_send` hands over; it never reads a clock: the caller passes
``now`` (seconds, any monotonic origin) and asks :meth:`Connection.next_deadline` when to call
:meth:`Connection.handle_timer`.

The rule for errors: a command that is illegal in the current state, or has bad arguments,
raises :class:`~amqp_sansio.LocalProtocolError` at once and sends nothing. A peer that breaks
the protocol makes the engine send the close, end or detach with the spec's condition, and
report a :class:`~amqp_sansio.engine.amqp10.events.ProtocolError` event.

The engine answers by itself where the spec leaves no choice: the protocol header, a peer's
close, end or detach (with its own), flow echo, heartbeats, and session windows (transfers
wait in the engine while the peer's incoming window is full; our incoming window is topped
up as transfers arrive). It leaves to the application what is a decision: accepting or
refusing a peer's open, begin and attach, granting link credit, settling deliveries.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable
from typing import Any

from ...codec.amqp10 import decoder
from ...codec.amqp10.types import Symbol
from ...definitions.amqp10.performatives import Begin, Close, Error, Open, Performative, SaslCode
from ...errors import (
    AMQPError,
    DecodeError,
    FramingError,
    LocalProtocolError,
    UnsupportedProtocolError,
)
from ...framing.amqp10 import (
    AMQP_HEADER,
    HEARTBEAT,
    MIN_MAX_FRAME_SIZE,
    FrameParser,
    FramePayload,
    FrameType,
    ProtocolId,
)
from ...security.mechanisms import (
    ClientCredentials,
    SASLError,
    SASLProtocolError,
    ServerAuthenticator,
)
from .events import (
    ConnectionClosed,
    ConnectionEnded,
    ConnectionOpened,
    Event,
    IdleTimedOut,
    PeerWithoutSASL,
    ProtocolError,
    UnsupportedProtocol,
)
from .frames import _frame, _gathered, _take
from .link import Delivery, Link
from .peer_error import _PeerError
from .sasl import SaslLayer
from .sasl import _Phase as SaslPhase
from .session import Session
from .states import (
    CONNECTION_ENDING,
    CONNECTION_OPEN_FIRST,
    CONNECTION_PEER_OPENED,
    CONNECTION_RECEIVING,
    CONNECTION_SENDING,
    CONNECTION_TRANSITIONS,
    ConnectionInput,
    ConnectionState,
    LinkState,
    SessionState,
)

_UINT_MAX = 0xFFFFFFFF
#: A session's windows and handle-max, unless :meth:`Connection.begin` is given others; a
#: session the peer begins has these.
_INCOMING_WINDOW = 2048
_OUTGOING_WINDOW = _UINT_MAX
_HANDLE_MAX = _UINT_MAX
_CI = ConnectionInput

_AMQP_FRAME = FrameType.AMQP
_CONNECTION_END = ConnectionState.END


class Connection:
    """One AMQP connection endpoint, client or server (core spec 2.4).

    ``idle_timeout`` (seconds) is our own threshold: we advertise half of it, as the spec
    recommends, and close the connection with ``amqp:resource-limit-exceeded`` when nothing
    has arrived for that long. ``max_frame_size`` is the largest frame we accept.
    ``max_unsettled`` is the default limit on unsettled deliveries per link
    (:attr:`Link.max_unsettled`).

    ``open_max_frame_size`` bounds the frames accepted before the peer's open, the open
    included (core spec 2.4.1: before any negotiation the maximum frame size is 512; SASL
    frames have their own bound, ``sasl_max_frame_size``). None (the default): 512
    (``MIN_MAX_FRAME_SIZE``) in the server role, which faces unknown clients whose opens are
    small; ``max_frame_size`` in the client role, which faces a server it chose (some send
    opens of several hundred bytes: RabbitMQ's is 280). A larger frame closes the connection
    with ``amqp:connection:framing-error``. ``max_frame_size`` applies from the open on.
    """

    def __init__(
        self,
        *,
        client: bool = True,
        container_id: str = "amqp-sansio",
        hostname: str | None = None,
        max_frame_size: int = 65536,
        channel_max: int = 65535,
        idle_timeout: float | None = None,
        offered_capabilities: str | Iterable[str] | None = None,
        desired_capabilities: str | Iterable[str] | None = None,
        properties: dict[Any, Any] | None = None,
        max_depth: int = decoder.DEFAULT_MAX_DEPTH,
        sasl: ClientCredentials | ServerAuthenticator | None = None,
        sasl_mechanisms: Collection[str] | None = None,
        allow_plain_without_tls: bool = False,
        encrypted: bool = False,
        sasl_max_frame_size: int = 8192,
        max_unsettled: int | None = None,
        open_max_frame_size: int | None = None,
    ) -> None:
        if max_frame_size < MIN_MAX_FRAME_SIZE:
            raise LocalProtocolError(f"max_frame_size must be at least {MIN_MAX_FRAME_SIZE}")
        if open_max_frame_size is None:
            open_max_frame_size = max_frame_size if client else MIN_MAX_FRAME_SIZE
        if open_max_frame_size < MIN_MAX_FRAME_SIZE:
            raise LocalProtocolError(f"open_max_frame_size must be at least {MIN_MAX_FRAME_SIZE}")
        self.client = client
        self.container_id = container_id
        self.hostname = hostname
        self.max_frame_size = max_frame_size
        self.channel_max = channel_max
        self.idle_timeout = idle_timeout
        self.offered_capabilities = offered_capabilities
        self.desired_capabilities = desired_capabilities
        self.properties = properties
        self.max_unsettled = max_unsettled  # the default of Link.max_unsettled
        #: The bound on frames until the peer's open has arrived (2.4.1).
        self.open_max_frame_size = min(open_max_frame_size, max_frame_size)
        self.state = ConnectionState.START
        self.remote: Open | None = None
        self._parser = FrameParser(max_frame_size=self.open_max_frame_size, max_depth=max_depth)
        self._out: list[bytes | bytearray | memoryview] = []
        self._events: list[Event] = []
        #: Queue an event for the application (what ``receive_data`` returns next): how
        #: sessions and links hand over what they report. The list's own ``append``, bound
        #: once (the list is emptied, never replaced), as the transfer paths call it for
        #: each delivery.
        self.report: Callable[[Event], None] = self._events.append
        self._header_received = False
        self._peer_max_frame_size = MIN_MAX_FRAME_SIZE
        self._peer_channel_max = 0
        self._peer_idle_timeout: float | None = None
        self._now: float | None = None
        self._last_received: float | None = None
        self._last_sent: float | None = None
        self._broken = False
        self._local_channels: dict[int, Session] = {}
        self._remote_channels: dict[int, Session] = {}
        self._pending_sessions: set[Session] = set()
        #: A session holds dispositions to send as ranges: they are flushed before the next
        #: output is taken (or before our close). The set's own ``add``, bound once (the
        #: set is cleared, never replaced), as each settlement calls it.
        self.defer_dispositions: Callable[[Session], None] = self._pending_sessions.add
        #: Deliveries that took a view of the bytes being received (see _unpin).
        self._viewing: list[Delivery] = []
        #: The SASL exchange while it lasts (core spec 5.3); its bytes wait in _sasl_out and
        #: go before anything of AMQP's, which is held back until it succeeds.
        self._sasl: SaslLayer | None = None
        self._sasl_out: list[bytes | bytearray | memoryview] = []
        #: The connection's transactions, both sides (core spec part 4), once there are any.
        self._txn_book: Any = None
        #: The transport under us is encrypted (TLS): given, or told by the TLS layer.
        self.encrypted = encrypted
        #: After a SASL exchange: the mechanism used and the identity it established.
        self.sasl_mechanism: str | None = None
        self.authenticated_identity: str | None = None
        if sasl is not None:
            try:
                self._sasl = SaslLayer(
                    sasl,
                    client=client,
                    hostname=hostname,
                    send=self._sasl_out_append,
                    report=self.report,
                    mechanisms=sasl_mechanisms,
                    allow_cleartext=allow_plain_without_tls,
                    encrypted=encrypted,
                )
            except TypeError as exc:
                raise LocalProtocolError(str(exc)) from None
            if sasl_max_frame_size < MIN_MAX_FRAME_SIZE:
                raise LocalProtocolError(
                    f"sasl_max_frame_size must be at least {MIN_MAX_FRAME_SIZE}"
                )
            # SASL frames are bounded on their own (5.3.1 says 512; OAuth tokens are
            # longer): the connection's own limit applies once the exchange is over.
            self._parser.max_frame_size = sasl_max_frame_size

    def __repr__(self) -> str:
        role = "client" if self.client else "server"
        return f"<Connection {role} {self.state.value}>"

    # -- I/O surface -------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Take bytes from the peer; return what happened. Empty ``data`` means the peer
        closed the transport.

        ``bytes``, and views of ``bytes`` (such as the pieces of another engine's
        :meth:`buffers_to_send`), are read in place: a large transfer's payload is a view of
        them, held by the delivery (and its
        :class:`~amqp_sansio.engine.amqp10.events.DeliveryReceived`) with the whole ``bytes`` object
        behind it. Other buffers (a ``bytearray``, which may change) are copied (core spec 2.3:
        frames may be cut anywhere)."""
        self._now = now  # _tick, inlined: this runs for every piece received
        if self._last_received is None:
            self._last_received = now
        if self._last_sent is None and self._out:
            self._last_sent = now
        if self.state is _CONNECTION_END or self._broken:
            return self._take_events()
        if not data:
            # (A client's server that closes right after its header, or before it, sending
            # nothing more, refused the connection: no authentication failed, and
            # ConnectionEnded alone says it. A frame cut short is a broken exchange.)
            if self._sasl is not None and (self._sasl.begun or self._parser.buffered):
                self._sasl_failed(
                    SASLError("the transport closed during the SASL exchange", code=SaslCode.SYS)
                )
            self._end()
            return self._take_events()
        self._parser.feed(data)
        try:
            self._parse()
        except UnsupportedProtocolError as exc:
            self._bad_header(exc.header, exc.version_name)
        except (FramingError, DecodeError) as exc:
            if self._sasl is not None:
                self._sasl_failed(_sasl_input_error(exc))
            elif type(exc) is FramingError:
                self._fatal("amqp:connection:framing-error", exc.description)
            else:
                self._fatal(exc.condition, exc.description)
        except _PeerError as exc:
            self._peer_error(exc)
        if self._viewing:
            self._unpin(data)
        events = self._events.copy()
        self._events.clear()
        return events

    def _unpin(self, data: Any) -> None:
        """Deliveries still arriving keep large payloads as views of the bytes they came in
        (no copy): all of ``data`` stays alive for them. Where their views of it are less
        than half of it, they are copied out, so that what a delivery holds stays within
        twice its size."""
        viewing, self._viewing = self._viewing, []
        if type(data) is memoryview:
            # A view of bytes (see FrameParser.feed): what it views is weighed, not all of
            # the bytes (a sender's message handed over in views is held by the sender too).
            obj, size = data.obj, data.nbytes
        else:
            obj, size = data, len(data)
        for delivery in viewing:
            # Its chunks from ``data`` are the last ones: older views are of older bytes (or,
            # for views of one bytes object fed in turn, of other parts of it: the count
            # stops at the size of ``data``).
            delivery.unpin(obj, size)

    def data_to_send(self, max_bytes: int | None = None) -> bytes:
        """The bytes to write to the peer now (they are handed over once): all of them, or
        at most ``max_bytes`` (the rest waits for the next call, cut anywhere, even inside a
        frame). A bound keeps what each call builds small: a large message queued whole
        comes out a piece at a time, each copied from the message's own bytes, rather than
        in one buffer as large as the message. :meth:`buffers_to_send` hands over the same
        bytes without joining them."""
        return b"".join(self._take_output(max_bytes))

    def buffers_to_send(self, max_bytes: int | None = None) -> list[bytes | memoryview]:
        """What :meth:`data_to_send` would return, as a list of pieces that join to it, for
        a scatter-gather write (``socket.sendmsg``, asyncio's ``transport.writelines``):
        the payload of a large message's frames comes as views of the message's own
        ``bytes`` (as given to :meth:`Sender.send`), not copied; frame headers and small
        frames next to each other are joined into one ``bytes``. ``max_bytes`` bounds the
        pieces' total as it bounds :meth:`data_to_send`'s result. An empty list when
        nothing waits.

        The views are read-only and valid for as long as they are held (they keep the
        message's bytes alive). Another engine's :meth:`receive_data` may be given each
        piece in turn: views of ``bytes`` are read in place there too."""
        return _gathered(self._take_output(max_bytes))

    def _take_output(self, max_bytes: int | None) -> list[bytes | bytearray | memoryview]:
        """The pieces to hand over now, taken off the queue (of SASL's bytes while the
        exchange lasts)."""
        if max_bytes is not None and (type(max_bytes) is not int or max_bytes < 1):
            raise ValueError(f"max_bytes is a positive int or None, not {max_bytes!r}")
        if self._sasl is not None:
            # Authenticating: only the exchange's own bytes go; AMQP's wait for its end.
            out = self._sasl_out
            if max_bytes is not None:
                return _take(out, max_bytes)
            self._sasl_out = []
            return out
        if self._pending_sessions:
            for session in self._pending_sessions:
                session.flush_dispositions()
            self._pending_sessions.clear()
        out = self._out
        if not out:
            return out
        if max_bytes is not None:
            return _take(out, max_bytes)
        self._out = []
        return out

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must next be called (same clock as ``now``), or None."""
        if self.state is ConnectionState.END or self._broken:
            return None
        deadlines = []
        if (
            self.idle_timeout
            and self._last_received is not None
            and self.state in CONNECTION_RECEIVING
        ):
            deadlines.append(self._last_received + self.idle_timeout)
        if (
            self._peer_idle_timeout
            and self._last_sent is not None
            and self.state in CONNECTION_SENDING
        ):
            deadlines.append(self._last_sent + self._peer_idle_timeout / 2)
        return min(deadlines) if deadlines else None

    def handle_timer(self, now: float) -> list[Event]:
        """Act on what is due at ``now``: close an idle connection, send a heartbeat."""
        self._tick(now)
        if self.state is ConnectionState.END or self._broken:
            return self._take_events()
        if (
            self.idle_timeout
            and self._last_received is not None
            and self.state in CONNECTION_RECEIVING
            and now >= self._last_received + self.idle_timeout
        ):
            self._events.append(IdleTimedOut())
            if self.state in CONNECTION_OPEN_FIRST:
                self.open()  # a close may only follow our open (2.4.7)
            if self.state in CONNECTION_SENDING:
                self._close(
                    Error(
                        condition=Symbol("amqp:resource-limit-exceeded"),
                        description="idle time-out expired",
                    )
                )
            self._end()
        elif (
            self._peer_idle_timeout
            and self._last_sent is not None
            and self.state in CONNECTION_SENDING
            and now >= self._last_sent + self._peer_idle_timeout / 2
        ):
            self.emit(HEARTBEAT)
        return self._take_events()

    # -- commands ---------------------------------------------------------------------------

    def open(self, *, now: float | None = None) -> None:
        """Send the protocol header (if not yet sent) and our open. A client calls it first
        (the frames after it are pipelined); a server calls it to accept the peer's open.
        ``now`` starts the clock for the idle time-out if nothing has yet."""
        if now is not None:
            self._tick(now)
        start = self.state is ConnectionState.START
        if (ConnectionState.HDR_SENT if start else self.state, _CI.S_OPEN) not in (
            CONNECTION_TRANSITIONS
        ):
            raise LocalProtocolError(f"cannot open in connection state {self.state.value}")
        idle = None if not self.idle_timeout else int(self.idle_timeout * 500)
        body = Open(
            container_id=self.container_id,
            hostname=self.hostname,
            max_frame_size=self.max_frame_size,
            channel_max=self.channel_max,
            idle_time_out=idle,
            offered_capabilities=self.offered_capabilities,
            desired_capabilities=self.desired_capabilities,
            properties=self.properties,
        )
        frame = self.checked_frame(0, body)  # too large for the peer: nothing has changed
        if start:
            self._send_header()
        self._move(_CI.S_OPEN)
        self.emit(frame)

    def close(self, error: Error | None = None) -> None:
        """Close the connection, with an error if there is one (core spec 2.4.3). In the
        server role, answering a peer's open with a close (with an error) refuses it: our open
        goes first, as the spec requires."""
        if self.state is ConnectionState.START:
            self._end()  # nothing was said: nothing to close
            return
        if error is not None:
            self.checked_frame(0, Close(error=error))  # too large: nothing has changed
        if self.state in CONNECTION_OPEN_FIRST:
            self.open()
        self._close(error)

    def begin(
        self,
        *,
        incoming_window: int = _INCOMING_WINDOW,
        outgoing_window: int = _OUTGOING_WINDOW,
        handle_max: int = _HANDLE_MAX,
        properties: dict[Any, Any] | None = None,
        offered_capabilities: str | Iterable[str] | None = None,
        desired_capabilities: str | Iterable[str] | None = None,
    ) -> Session:
        """Begin a session (core spec 2.5.1) and return it."""
        session = Session(
            self,
            incoming_window=incoming_window,
            outgoing_window=outgoing_window,
            handle_max=handle_max,
            properties=properties,
            offered_capabilities=offered_capabilities,
            desired_capabilities=desired_capabilities,
        )
        session.begin()
        return session

    @property
    def sessions(self) -> list[Session]:
        return list(set(self._local_channels.values()) | set(self._remote_channels.values()))

    # -- internals ----------------------------------------------------------------------------

    def _tick(self, now: float) -> None:
        self._now = now
        if self._last_received is None:
            self._last_received = now
        if self._last_sent is None and self._out:
            self._last_sent = now

    def _take_events(self) -> list[Event]:
        events = self._events.copy()
        self._events.clear()
        return events

    def _move(self, what: ConnectionInput) -> None:
        new = CONNECTION_TRANSITIONS.get((self.state, what))
        if new is None:
            raise LocalProtocolError(f"cannot {what.value} in connection state {self.state.value}")
        self.state = new
        if new is ConnectionState.END:
            self._events.append(ConnectionEnded())

    def check_can_send(self) -> None:
        """Refuse (:class:`LocalProtocolError`) once nothing may be sent any more."""
        if self.state not in CONNECTION_SENDING:
            raise LocalProtocolError(f"nothing may be sent in connection state {self.state.value}")

    def _send_header(self) -> None:
        self._move(_CI.S_HDR)
        if self._sasl is not None:
            self._sasl.send_header()  # first on the wire (5.1); ours waits behind it
        self.emit(AMQP_HEADER)

    def _sasl_out_append(self, data: bytes) -> None:
        self._sasl_out.append(data)

    def set_transport_security(
        self,
        *,
        encrypted: bool = True,
        client_certificate: bool = False,
        peer_identity: str | None = None,
    ) -> None:
        """Tell the SASL layer what the transport below it guarantees (core spec 5.2): that
        it is ``encrypted`` (TLS), that we presented a ``client_certificate`` (a client may
        then use EXTERNAL), or the verified ``peer_identity`` of the client's certificate (a
        server may then offer EXTERNAL). Call it before the peer's SASL header arrives (a
        :class:`~amqp_sansio.TLSLayer` calls it when its handshake completes)."""
        sasl = self._sasl
        if sasl is None:
            if self.sasl_mechanism is not None:
                raise LocalProtocolError("set the transport security before the SASL exchange")
            self.encrypted = encrypted  # no SASL: only recorded, for the application
            return
        if sasl.phase is not SaslPhase.HEADER or self._parser.buffered:
            raise LocalProtocolError("set the transport security before the SASL exchange")
        self.encrypted = encrypted
        sasl.encrypted = encrypted
        sasl.client_certificate = client_certificate
        sasl.peer_identity = peer_identity

    # -- what the sessions and links hand their owner ------------------------------------------

    def emit(self, data: bytes | bytearray) -> None:
        """Queue an encoded frame (or header) for the peer."""
        self._out.append(data)
        self._last_sent = self._now

    def emit_parts(self, parts: tuple[bytes | bytearray | memoryview, ...]) -> None:
        """Queue a transfer frame written as its parts (a head and views of the payload):
        they are joined only when :meth:`data_to_send` copies them out."""
        self._out += parts
        self._last_sent = self._now

    def forget_remote_channel(self, channel: int | None) -> None:
        """The peer has ended the session on ``channel`` (core spec 2.5.5)."""
        self._remote_channels.pop(channel, None)  # type: ignore[arg-type]

    def weigh_views(self, delivery: Delivery) -> None:
        """``delivery``, still arriving, keeps views of the bytes being received: weigh
        them once the read is done (see :meth:`_unpin`)."""
        viewing = self._viewing
        if not viewing or viewing[-1] is not delivery:
            viewing.append(delivery)

    def transactions_book(self, make: Callable[[], object]) -> object:
        """The connection's transactions, both sides (core spec part 4; txn-ids are
        connection-scoped): kept here for the transactions module, made by ``make`` when
        first asked for."""
        if self._txn_book is None:
            self._txn_book = make()
        return self._txn_book

    @property
    def peer_max_frame_size(self) -> int:
        """The largest frame the peer accepts (its open's max-frame-size, core spec 2.7.1)."""
        return self._peer_max_frame_size

    def checked_frame(self, channel: int, body: Performative) -> bytearray:
        """The frame, encoded; refused if larger than the peer accepts."""
        frame = _frame(channel, body)
        if len(frame) > self._peer_max_frame_size:
            raise LocalProtocolError(
                f"{type(body).__name__} frame of {len(frame)} bytes "
                f"exceeds the peer's max-frame-size "
                f"{self._peer_max_frame_size}"
            )
        return frame

    def send_frame(self, channel: int, body: Performative) -> None:
        """Queue a frame for the peer, checked against its max-frame-size."""
        self.emit(self.checked_frame(channel, body))

    def _close(self, error: Error | None) -> None:
        what = _CI.S_CLOSE_ERROR if error is not None else _CI.S_CLOSE
        if (self.state, what) not in CONNECTION_TRANSITIONS:
            raise LocalProtocolError(f"cannot close in connection state {self.state.value}")
        for session in self._pending_sessions:
            session.flush_dispositions()  # settlements made before the close go first
        self._pending_sessions.clear()
        self._move(what)
        self.send_frame(0, Close(error=error))

    def _end(self) -> None:
        if self.state is not ConnectionState.END:
            self.state = ConnectionState.END
            self._events.append(ConnectionEnded())

    def assign_channel(self, session: Session) -> None:
        """Give ``session`` our lowest free channel (refused if none is free)."""
        limit = min(self.channel_max, self._peer_channel_max)
        local = self._local_channels
        channel = next(c for c in itertools.count() if c not in local)  # the lowest free
        if channel > limit:
            raise LocalProtocolError(f"no free channel (channel-max {limit})")
        session.channel = channel
        self._local_channels[channel] = session

    def release_channel(self, session: Session) -> None:
        """Our end of ``session`` went out: free its channel; its links are detached."""
        self._local_channels.pop(session.channel, None)  # type: ignore[arg-type]
        session.unmapped()

    def _parse(self) -> None:
        parser = self._parser
        while True:
            if self._sasl is not None:
                if not self._parse_sasl():
                    return
                continue
            if not self._header_received:
                header = parser.next_protocol_header()
                if header is None:
                    return
                if header.protocol_id != 0:
                    self._bad_header(
                        header.to_bytes(),
                        f"AMQP 1.0 with protocol id {int(header.protocol_id)} "
                        f"({header.protocol_id.name}), where we expect AMQP",
                    )
                    return
                self._amqp_header()
                continue
            frame = parser._next()
            if frame is None:
                return
            self._last_received = self._now
            frame_type, channel, body, payload = frame
            if frame_type is not _AMQP_FRAME:
                raise _PeerError(
                    "amqp:connection:framing-error", "a SASL frame after the AMQP header"
                )
            if body is None:
                continue  # heartbeat
            if self.state in CONNECTION_ENDING and type(body) is not Close:
                continue
            handler = _CONNECTION_HANDLERS.get(type(body))
            if handler is not None:
                handler(self, channel, body)
                if self.state is _CONNECTION_END:
                    return
                continue
            self._on_session_frame(channel, body, payload)
            if self._broken:
                return  # a session's or link's error that closed the connection (_fatal)

    def _amqp_header(self) -> None:
        """The peer's AMQP protocol header (core spec 2.2): a server answers with its own."""
        self._header_received = True
        self._move(_CI.R_HDR)
        if self.state is ConnectionState.HDR_RCVD:
            self._send_header()

    def _parse_sasl(self) -> bool:
        """One step of the SASL exchange; False when it needs more bytes or has ended.

        The peer's header decides first (core spec 2.2, 5.1): SASL's starts the exchange.
        The bare AMQP header, on a server that allows anonymous access (the SASL layer is
        optional there), skips it: the client is anonymous. Anywhere else it is refused
        with our own header and reported as
        :class:`~amqp_sansio.engine.amqp10.events.PeerWithoutSASL`: a server that requires
        authentication, or a client whose server has no SASL layer."""
        sasl = self._sasl
        assert sasl is not None
        parser = self._parser
        if sasl.phase is SaslPhase.HEADER:
            header = parser.next_protocol_header()
            if header is None:
                return False
            if header.protocol_id is ProtocolId.AMQP and sasl.optional:
                self._parser.max_frame_size = self.open_max_frame_size
                self.authenticated_identity = sasl.accept_without_sasl()
                self._leave_sasl(keep_held=True)
                self._amqp_header()
                return True
            if header.protocol_id is ProtocolId.AMQP:
                self._bad_header(
                    header.to_bytes(),
                    "AMQP without SASL, where we require SASL",
                    event=PeerWithoutSASL,
                )
                return False
            if header.protocol_id is not ProtocolId.SASL:
                name = (
                    f"AMQP 1.0 with protocol id {int(header.protocol_id)} "
                    f"({header.protocol_id.name}), where we expect SASL"
                )
                self._bad_header(header.to_bytes(), name)
                return False
            sasl.on_header(header.protocol_id)
        else:
            frame = parser._next()
            if frame is None:
                return False
            self._last_received = self._now
            sasl.on_frame(frame[0], frame[2])
        if sasl.failed:
            self._sasl_failed()
            return False
        if sasl.done:
            self._parser.max_frame_size = self.open_max_frame_size
            self.sasl_mechanism = sasl.mechanism
            self.authenticated_identity = sasl.identity
            self._leave_sasl(keep_held=True)  # its last frame goes before what AMQP holds
        return True

    def _sasl_failed(self, error: AMQPError | None = None) -> None:
        """The exchange failed: only what SASL still has to say goes (a server's outcome);
        what AMQP held back is dropped, and the connection ends (5.3.2)."""
        sasl = self._sasl
        assert sasl is not None
        if error is not None:
            sasl.fail(error)
        self._leave_sasl(keep_held=False)
        self._broken = True
        self._end()

    def _leave_sasl(self, *, keep_held: bool) -> None:
        """The SASL exchange is over: its last bytes go out first, and what AMQP held back
        behind it follows (``keep_held``) or is dropped."""
        if keep_held:
            self._out[:0] = self._sasl_out
        else:
            self._out = self._sasl_out
        self._sasl_out = []
        self._sasl = None

    def _on_open(self, channel: int, open_: Open) -> None:
        new = CONNECTION_TRANSITIONS.get((self.state, _CI.R_OPEN))
        if new is None:
            raise _PeerError("amqp:illegal-state", f"open in connection state {self.state.value}")
        if channel != 0:
            raise _PeerError("amqp:connection:framing-error", "open on a channel other than 0")
        if open_.max_frame_size < MIN_MAX_FRAME_SIZE:
            raise _PeerError(
                "amqp:invalid-field",
                f"max-frame-size {open_.max_frame_size} is "
                f"below the minimum of {MIN_MAX_FRAME_SIZE}",
            )
        self.state = new
        self.remote = open_
        self._parser.max_frame_size = self.max_frame_size  # negotiated: ours from now on
        self._peer_max_frame_size = open_.max_frame_size
        self._peer_channel_max = open_.channel_max
        self._peer_idle_timeout = open_.idle_time_out / 1000 if open_.idle_time_out else None
        self._events.append(ConnectionOpened(remote=open_))

    def _on_close(self, channel: int, close: Close) -> None:
        if self.state is ConnectionState.OPEN_RCVD:
            # The peer opened and closed in one go (its OC_PIPE): it waits for our open
            # and close to reach its END (2.4.7).
            self.open()
        new = CONNECTION_TRANSITIONS.get((self.state, _CI.R_CLOSE))
        if new is None:
            # A close before the open, or a second close: end all the same.
            self._events.append(ConnectionClosed(error=close.error))
            self._end()
            return
        self.state = new
        self._events.append(ConnectionClosed(error=close.error))
        if new is ConnectionState.CLOSE_RCVD:
            self._close(None)  # answer with ours; that ends the connection
        else:  # END: ours had gone
            self._events.append(ConnectionEnded())

    def _on_session_frame(self, channel: int, body: Any, payload: FramePayload) -> None:
        if self.state not in CONNECTION_PEER_OPENED:
            raise _PeerError("amqp:illegal-state", f"{type(body).__name__} before open")
        if type(body) is Begin and channel not in self._remote_channels:
            self._on_begin(channel, body)
            return
        session = self._remote_channels.get(channel)
        if session is None:
            raise _PeerError(
                "amqp:not-allowed",
                f"{type(body).__name__} on channel {channel}, where no session has begun",
            )
        try:
            session.receive_frame(body, payload)
        except _PeerError as exc:
            if exc.scope == "connection":
                raise
            self._peer_error(exc)

    def _on_begin(self, channel: int, begin: Begin) -> None:
        if channel > self.channel_max:
            raise _PeerError(
                "amqp:connection:framing-error",
                f"channel {channel} exceeds channel-max {self.channel_max}",
            )
        if begin.remote_channel is None:
            session = Session(
                self,
                incoming_window=_INCOMING_WINDOW,
                outgoing_window=_OUTGOING_WINDOW,
                handle_max=_HANDLE_MAX,
                properties=None,
                offered_capabilities=None,
                desired_capabilities=None,
            )
            session.state = SessionState.BEGIN_RCVD
        else:
            found = self._local_channels.get(begin.remote_channel)
            if found is None or found.state is not SessionState.BEGIN_SENT:
                raise _PeerError(
                    "amqp:not-allowed",
                    f"begin answers channel {begin.remote_channel}, where we began no session",
                )
            session = found
            session.state = SessionState.MAPPED
        self._remote_channels[channel] = session
        session.receive_begin(channel, begin)

    def _peer_error(self, exc: _PeerError) -> None:
        """Answer a peer's violation at the right level (core spec 2.4.3, 2.5.4, 2.6.5)."""
        self._events.append(ProtocolError(error=exc.error, scope=exc.scope))
        if exc.scope == "link" and isinstance(exc.target, Link):
            link = exc.target
            if link.state is LinkState.ATTACHED:
                link.detach_for_peer_error(exc.error)
                return
        if exc.scope in ("link", "session"):
            session = exc.target.session if isinstance(exc.target, Link) else exc.target
            if isinstance(session, Session) and session.state is SessionState.MAPPED:
                session.end(exc.error)
                return
        self._fatal(str(exc.error.condition), exc.error.description or "", reported=True)

    def _fatal(self, condition: str, description: str, *, reported: bool = False) -> None:
        error = Error(condition=Symbol(condition), description=description)
        if not reported:
            self._events.append(ProtocolError(error=error, scope="connection"))
        if self.state in CONNECTION_OPEN_FIRST:
            self.open()  # a close may only follow our open (2.4.7)
        if (self.state, _CI.S_CLOSE_ERROR) in CONNECTION_TRANSITIONS:
            self._close(error)
        self._broken = True  # the stream cannot be trusted: stop reading it
        self._end()

    def _bad_header(
        self,
        header: bytes,
        name: str,
        *,
        event: type[UnsupportedProtocol] = UnsupportedProtocol,
    ) -> None:
        sasl = self._sasl
        if sasl is not None:
            # Only our SASL header answers (5.3.2); what AMQP held back is dropped.
            sasl.send_header()
            self._leave_sasl(keep_held=False)
        elif self.state is ConnectionState.START:
            self._send_header()
        self._events.append(event(header=header, version_name=name))
        self._broken = True
        self._end()


def _sasl_input_error(exc: FramingError | DecodeError) -> AMQPError:
    """The error for bytes that break the SASL exchange. A decode error's description may
    quote what it could not decode, and SASL frames carry credentials: only its kind and
    where it was found are kept (the original is not chained to it either)."""
    if isinstance(exc, FramingError):
        return exc
    return SASLProtocolError(f"a malformed SASL frame (at offset {exc.offset}): {exc.condition}")


_CONNECTION_HANDLERS: dict[type, Any] = {
    Open: Connection._on_open,
    Close: Connection._on_close,
}
