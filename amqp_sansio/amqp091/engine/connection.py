"""The AMQP 0-9-1 connection, both roles, without I/O (0-9-1 spec, classes ``connection``
and ``channel``; AMQP/Fast 0.9 RFC 006 for negotiation, content frames and heartbeats).

The caller moves bytes and time, as with the 1.0 engine (:mod:`amqp_sansio.engine`):
``receive_data(data, now)`` with what arrived (``b""`` when the stream ended),
``data_to_send()`` for what to write, ``next_deadline()`` for when to call ``tick(now)``,
and ``next_event()`` for what happened. The engine answers by itself what the protocol
answers: the negotiation, ``channel.open``/``close``/``flow`` and their ``-ok``, the close
handshakes and heartbeats.

Errors follow the project's rule. The caller's mistakes raise
:class:`~amqp_sansio.errors.LocalProtocolError` (or the codec's
:class:`~amqp_sansio.amqp091.errors.EncodeError`) and send nothing. Nothing the peer sends
raises: a hard error (0-9-1 spec, the ``constant`` elements of class ``hard-error``)
queues ``connection.close`` with its reply code, after which everything but
``connection.close`` and ``connection.close-ok`` is discarded (spec, ``connection.close``);
a soft error queues ``channel.close`` on its channel, after which that channel discards
everything but ``channel.close`` and ``channel.close-ok`` (spec, ``channel.close``). The
catalogue of what answers what is in docs/amqp091.rst, "The engine".
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...errors import AMQPError, LocalProtocolError, UnsupportedProtocolError
from ...security.mechanisms import SASLClientMechanism, SASLError
from .. import spec
from ..codec import FieldTable
from ..framing import (
    HEARTBEAT,
    PROTOCOL_HEADER,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    FrameParser,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    encode_content,
    encode_method_frame,
)
from ..methods import Method, Properties
from ..spec import FRAME_MIN_SIZE, ReplyCode
from . import negotiation
from .channel import Channel, ChannelState, PeerError, hard
from .events import (
    Blocked,
    ChannelClosed,
    ChannelOpened,
    ConnectionClosed,
    ConnectionOpened,
    Event,
    LoginRequested,
    MethodReceived,
    OpenRequested,
    Unblocked,
    discard_requests,
)
from .states import TABLE, ConnectionState, Limits, Role

__all__ = ["Connection", "ConnectionState", "Limits", "Role"]

_MAX_CHANNEL = 65535
_S = ConnectionState


#: Methods the application may not send with ``send_method``: the engine sends them.
_ENGINE_METHODS = frozenset(
    {spec.ChannelOpen, spec.ChannelOpenOk, spec.ChannelClose, spec.ChannelCloseOk}
    | {spec.ChannelFlowOk}
)


class Connection:
    """One AMQP 0-9-1 connection, client or server role, I/O-free.

    Client role: ``virtual_host``, ``mechanism`` (a name, ``"PLAIN"``, ``"AMQPLAIN"`` or
    ``"EXTERNAL"``, made with ``username`` and ``password``; several names, preferred
    first, of which the first the server offers is used; or a
    :class:`~amqp_sansio.security.mechanisms.SASLClientMechanism`), ``client_properties``
    (merged over the engine's, which announce pika's capabilities), ``locale``. Server
    role: ``server_properties`` and the ``mechanisms`` offered; with
    ``auto_accept_channels`` false, a client's ``channel.open`` surfaces as
    :class:`~amqp_sansio.amqp091.engine.events.MethodReceived` and waits for
    :meth:`accept_channel` (or :meth:`close_channel`). Both: the ``frame_max``,
    ``channel_max`` and ``heartbeat`` we propose (each capped by ``limits``; 0 is "no
    limit", which the limit then sets) and the :class:`~amqp_sansio.amqp091.Limits`.
    """

    def __init__(
        self,
        role: Role,
        *,
        virtual_host: str = "/",
        mechanism: str | SASLClientMechanism | Sequence[str] = "PLAIN",
        username: str | None = None,
        password: str | None = None,
        client_properties: FieldTable | None = None,
        server_properties: FieldTable | None = None,
        mechanisms: tuple[str, ...] = ("PLAIN", "AMQPLAIN"),
        frame_max: int = 131072,
        channel_max: int = 2047,
        heartbeat: int = 60,
        locale: str = "en_US",
        auto_accept_channels: bool = True,
        limits: Limits | None = None,
    ) -> None:
        self.role = role
        self.limits = limits = limits or Limits()
        self._frame_max = negotiation.negotiate(frame_max, limits.max_frame)
        if self._frame_max and self._frame_max < FRAME_MIN_SIZE:
            raise LocalProtocolError(
                f"frame-max {self._frame_max} is under the spec's frame-min-size "
                f"{FRAME_MIN_SIZE} (0-9-1 spec, connection.tune, rule 'minimum')"
            )
        self._channel_max = negotiation.negotiate(channel_max, limits.max_channels)
        if not 0 <= self._channel_max <= _MAX_CHANNEL:
            raise LocalProtocolError(f"channel-max {channel_max} is not a short")
        if not 0 <= heartbeat <= 0xFFFF:
            raise LocalProtocolError(f"heartbeat {heartbeat} is not a short")
        self._heartbeat_proposal = heartbeat
        self.virtual_host = virtual_host
        self._locale = locale
        self._auto_accept = auto_accept_channels
        self._username = username
        if role is Role.CLIENT:
            self._choices = negotiation.client_mechanisms(mechanism, username, password)
            self._properties = negotiation.client_properties(client_properties)
        else:
            self._choices = ()
            self._properties = negotiation.server_properties(server_properties)
        #: The mechanism the client logs in with (once the server's offer is known).
        self.mechanism: SASLClientMechanism | None = None
        self._mechanisms = tuple(mechanisms)
        self.state = _S.NEW
        self._parser = FrameParser(FRAME_MIN_SIZE, protocol_header=role is Role.SERVER)
        self._events: deque[Event] = deque()
        self._out: list[bytes] = []
        self._channels: dict[int, Channel] = {}
        #: The peer's properties (``server-properties`` or ``client-properties``).
        self.peer_properties: FieldTable = {}
        #: The negotiated values, once tuned (the proposals until then).
        self.frame_max = self._frame_max
        self.channel_max = self._channel_max
        self.heartbeat = 0
        #: Who logged in: the client's username, or the identity the server accepted.
        self.identity: str | None = None
        #: Client role: the server blocked publishing (``connection.blocked``).
        self.blocked = False
        self.monitor_paused = False  # set while the caller does not read the peer: see tick()
        self._login_mechanism = ""
        self._now = 0.0
        self._started: float | None = None
        self._last_sent = 0.0
        self._last_received = 0.0
        self._closing_since = 0.0
        self._close_reason: tuple[int, str, int, int] = (0, "", 0, 0)

    def __repr__(self) -> str:
        return f"<amqp091.Connection {self.role.value} {self.state.value}>"

    # -- the caller's side: bytes, time, events --------------------------------------------

    @property
    def closed(self) -> bool:
        """True once the close handshake is over or the stream ended: nothing more will be
        read or sent (flush :meth:`data_to_send` one last time)."""
        return self.state is _S.CLOSED

    def start(self, now: float) -> None:
        """Start the clock (the handshake time-out runs from here); a client also writes
        the protocol header (0-9-1 spec 4.2.2), a server waits for the client's."""
        if self._started is not None:
            raise LocalProtocolError("start() was called already")
        self._now = self._started = self._last_received = self._last_sent = now
        if self.role is Role.CLIENT:
            self._write(PROTOCOL_HEADER)
            self.state = _S.AWAIT_START

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> None:
        """Take bytes from the peer; ``b""`` means the stream ended. Never raises for what
        the peer sent: its faults are answered on the wire and reported as events."""
        if self.state is _S.CLOSED:
            return
        if self._started is None:
            self.start(now)
        self._now = now
        if not data:
            self._stream_ended()
            return
        self._last_received = now
        parser = self._parser
        parser.feed(bytes(data))
        next_frame, handle = parser.next_frame, self._frame
        while not self.closed:
            try:
                frame = next_frame()
            except AMQPError as exc:
                self._parse_error(exc)
                return
            if frame is None:
                return
            try:
                handle(frame)
            except PeerError as exc:
                self._peer_error(exc)

    def next_event(self) -> Event | None:
        """The next event, or None."""
        return self._events.popleft() if self._events else None

    def events(self) -> Iterator[Event]:
        """Every event there is now, in order."""
        while self._events:
            yield self._events.popleft()

    def data_to_send(self) -> bytes:
        """What to write to the peer, drained."""
        out, self._out = self._out, []
        return b"".join(out)

    def next_deadline(self) -> float | None:
        """When :meth:`tick` must be called next: a heartbeat to send, the peer's silence
        to check, the handshake or close time-out; None for nothing."""
        state = self.state
        if state is _S.CLOSED or self._started is None:
            return None
        deadlines = []
        timeout = self.limits.handshake_timeout
        if state is _S.CLOSING:
            if timeout:
                deadlines.append(self._closing_since + timeout)
        elif state is not _S.OPEN and timeout:
            deadlines.append(self._started + timeout)
        if self.heartbeat:
            deadlines.append(self._last_received + 2 * self.heartbeat)
            if state is not _S.CLOSING:
                deadlines.append(self._last_sent + self.heartbeat / 2)
        return min(deadlines) if deadlines else None

    def tick(self, now: float) -> None:
        """Do what is due at ``now``: send a heartbeat when nothing was sent for half the
        heartbeat (RabbitMQ's and pika's send interval); end the connection when nothing
        arrived for two heartbeats (spec, ``connection.tune`` field ``heartbeat``; RFC 006
        "Heartbeat Frames"), when the handshake took longer than the limit, or when the
        peer did not answer our close in time (``monitor_paused``: silence counts from now)."""
        self._now = now
        self._last_received = now if self.monitor_paused else self._last_received
        state = self.state
        if state is _S.CLOSED or self._started is None:
            return
        timeout = self.limits.handshake_timeout
        hb = self.heartbeat
        if hb and now >= self._last_received + 2 * hb:
            self._end(
                ReplyCode.CONNECTION_FORCED,
                f"missed heartbeats: nothing received for {now - self._last_received:g} s "
                f"(heartbeat {hb} s)",
                by_peer=False,
            )
        elif state is _S.CLOSING and timeout and now >= self._closing_since + timeout:
            code, text, class_id, method_id = self._close_reason
            self._end(code, text, class_id, method_id, by_peer=False)
        elif state not in (_S.OPEN, _S.CLOSING) and timeout and now >= self._started + timeout:
            self._end(
                ReplyCode.CONNECTION_FORCED,
                f"the handshake did not finish within {timeout:g} s",
                by_peer=False,
            )
        elif hb and state is not _S.CLOSING and now >= self._last_sent + hb / 2:
            self._write(HEARTBEAT)

    # -- channels ------------------------------------------------------------------------

    def channel(self, number: int) -> Channel:
        """The state of channel ``number`` (raises :class:`KeyError` for one not in use)."""
        return self._channels[number]

    @property
    def channels(self) -> dict[int, Channel]:
        """The channels in use, by number (a copy)."""
        return dict(self._channels)

    def open_channel(self) -> int:
        """Client role: open the lowest free channel (``channel.open``); ChannelOpened
        follows. Channel numbers are 1 to channel-max (0-9-1 spec, ``connection.tune``)."""
        self._check_open("open a channel")
        if self.role is not Role.CLIENT:
            raise LocalProtocolError("a server does not open channels")
        highest = self.channel_max or _MAX_CHANNEL
        number = next((n for n in range(1, highest + 1) if n not in self._channels), None)
        if number is None:
            raise LocalProtocolError(f"all {highest} channels are in use (channel-max)")
        self._channels[number] = Channel(number, ChannelState.OPENING, self.limits.max_body)
        self._send(number, spec.ChannelOpen())
        return number

    def accept_channel(self, number: int) -> None:
        """Server role, ``auto_accept_channels`` false: answer the client's ``channel.open``
        with ``channel.open-ok``; ChannelOpened follows."""
        ch = self._channels.get(number)
        if self.role is not Role.SERVER or ch is None or ch.state is not ChannelState.OPENING:
            raise LocalProtocolError(f"channel {number} is not waiting to be accepted")
        self._accept(ch)

    def close_channel(
        self,
        number: int,
        reply_code: int = 200,
        reply_text: str = "",
        class_id: int = 0,
        method_id: int = 0,
    ) -> None:
        """Begin channel ``number``'s close handshake (``channel.close``; refuses a
        server's pending ``channel.open`` too). Its methods and contents not taken yet are
        dropped, as is all but ``close``/``close-ok`` after; ChannelClosed follows."""
        ch = self._channels.get(number)
        if ch is None or ch.state is ChannelState.CLOSING:
            raise LocalProtocolError(f"channel {number} is not open")
        self._check_open("close a channel")
        self._close_channel(ch, int(reply_code), reply_text, class_id, method_id)
        discard_requests(self._events, number)

    def send_method(self, channel: int, method: Method) -> None:
        """Send a method without content on ``channel`` (``queue.declare``, ``basic.ack``,
        ``confirm.select``, ``channel.flow``, ...; on channel 0 only
        ``connection.update-secret`` and its ``-ok``)."""
        if method.CONTENT:
            raise LocalProtocolError(f"{method.NAME} carries content: use send_content()")
        if type(method) in _ENGINE_METHODS:
            raise LocalProtocolError(f"the engine sends {method.NAME} itself")
        if channel == 0:
            allowed = (
                spec.ConnectionUpdateSecret
                if self.role is Role.CLIENT
                else spec.ConnectionUpdateSecretOk
            )
            if type(method) is not allowed:
                raise LocalProtocolError(f"{method.NAME} cannot be sent on channel 0")
            self._check_open(f"send {method.NAME}")
            self._send(0, method)
            return
        if method.CLASS_ID == spec.ConnectionStart.CLASS_ID:
            raise LocalProtocolError(f"{method.NAME} goes on channel 0")
        ch = self._open_channel(channel, method.NAME)
        payload = encode_method_frame(channel, method, self.frame_max)
        if isinstance(method, spec.ConfirmSelect) and self.role is Role.CLIENT:
            if ch.tx_mode:
                raise LocalProtocolError("a channel in tx mode cannot enter confirm mode")
            if not ch.next_publish_seq:
                ch.next_publish_seq = 1
        elif isinstance(method, spec.TxSelect) and self.role is Role.CLIENT:
            if ch.next_publish_seq:
                raise LocalProtocolError("a channel in confirm mode cannot enter tx mode")
            ch.tx_mode = True
        elif isinstance(method, spec.ChannelFlow):
            ch.peer_flow_active = method.active
        self._write(payload)

    def send_content(
        self, channel: int, method: Method, properties: Properties | None, body: bytes
    ) -> None:
        """Send a content-carrying method (``basic.publish``, ``basic.deliver``,
        ``basic.return``, ``basic.get-ok``) with its header and ``body`` in frames of at
        most frame-max octets (0-9-1 spec 4.2.6.2)."""
        if not method.CONTENT:
            raise LocalProtocolError(f"{method.NAME} carries no content: use send_method()")
        ch = self._open_channel(channel, method.NAME)
        if not ch.flow_active:
            raise LocalProtocolError(
                f"the peer stopped content on channel {channel} (channel.flow active=false)"
            )
        props = properties if properties is not None else spec.BasicProperties()
        frames = encode_content(channel, method, props, bytes(body), self.frame_max)
        if (
            self.role is Role.CLIENT
            and isinstance(method, spec.BasicPublish)
            and ch.next_publish_seq
        ):
            ch.unconfirmed.add(ch.next_publish_seq)
            ch.next_publish_seq += 1
        self._out += frames
        self._last_sent = self._now

    def publish(
        self,
        channel: int,
        exchange: str,
        routing_key: str,
        body: bytes,
        properties: Properties | None = None,
        *,
        mandatory: bool = False,
    ) -> int | None:
        """``basic.publish`` with ``body``: gives the publish's sequence number on a channel
        in confirm mode (counted from the ``confirm.select`` sent, as the server counts),
        else None."""
        ch = self._open_channel(channel, "basic.publish")
        seq = ch.next_publish_seq or None
        method = spec.BasicPublish(exchange=exchange, routing_key=routing_key, mandatory=mandatory)
        self.send_content(channel, method, properties, body)
        return seq

    # -- the connection's own calls -------------------------------------------------------

    def close(
        self, reply_code: int = 200, reply_text: str = "", class_id: int = 0, method_id: int = 0
    ) -> None:
        """Begin the close handshake (``connection.close``; methods and contents not taken
        yet are dropped); ConnectionClosed follows the peer's ``close-ok``. Before
        anything was sent the connection simply ends."""
        if self.state in (_S.CLOSING, _S.CLOSED):
            return
        if self.state is _S.NEW:
            self._end(int(reply_code), reply_text, class_id, method_id, by_peer=False)
            return
        self._send_close(int(reply_code), reply_text, class_id, method_id)
        discard_requests(self._events, None)

    def accept_login(self, identity: str) -> None:
        """Server role, after LoginRequested: the login is good; ``connection.tune``
        follows with our proposals."""
        self._check_state(_S.LOGIN_PENDING, "accept_login()")
        self.identity = identity
        self._send(
            0,
            spec.ConnectionTune(
                channel_max=self._channel_max,
                frame_max=self._frame_max,
                heartbeat=self._heartbeat_proposal,
            ),
        )
        self.state = _S.AWAIT_TUNE_OK

    def refuse_login(self, reply_text: str = "login refused") -> None:
        """Server role, after LoginRequested: ``connection.close`` with 403
        ``access-refused`` (RabbitMQ's answer to a client announcing
        ``authentication_failure_close``)."""
        self._check_state(_S.LOGIN_PENDING, "refuse_login()")
        self._send_close(ReplyCode.ACCESS_REFUSED, reply_text, 10, 11)

    def challenge(self, data: bytes) -> None:
        """Server role, after LoginRequested: send ``connection.secure`` with ``data``; the
        client's ``secure-ok`` comes as another LoginRequested."""
        self._check_state(_S.LOGIN_PENDING, "challenge()")
        self._send(0, spec.ConnectionSecure(challenge=bytes(data)))
        self.state = _S.AWAIT_SECURE_OK

    def accept_open(self) -> None:
        """Server role, after OpenRequested: ``connection.open-ok``, ConnectionOpened."""
        self._check_state(_S.OPEN_PENDING, "accept_open()")
        self._send(0, spec.ConnectionOpenOk())
        self._opened()

    def refuse_open(self, reply_code: int = ReplyCode.NOT_ALLOWED, reply_text: str = "") -> None:
        """Server role, after OpenRequested: ``connection.close`` with ``reply_code`` (530
        ``not-allowed`` for a virtual host the login may not use, 402 ``invalid-path`` for
        one that does not exist)."""
        self._check_state(_S.OPEN_PENDING, "refuse_open()")
        self._send_close(int(reply_code), reply_text, 10, 40)

    def block(self, reason: str = "") -> bool:
        """Server role: send ``connection.blocked`` (RabbitMQ's extension) if the client
        announced the ``connection.blocked`` capability; gives whether it was sent."""
        return self._blocking(spec.ConnectionBlocked(reason=reason))

    def unblock(self) -> bool:
        """Server role: send ``connection.unblocked``, as :meth:`block`."""
        return self._blocking(spec.ConnectionUnblocked())

    def _blocking(self, method: Method) -> bool:
        if self.role is not Role.SERVER:
            raise LocalProtocolError(f"only a server sends {method.NAME}")
        self._check_open(f"send {method.NAME}")
        capabilities = self.peer_properties.get("capabilities")
        if not isinstance(capabilities, dict) or capabilities.get("connection.blocked") is not True:
            return False
        self._send(0, method)
        return True

    # -- internals: output --------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._last_sent = self._now

    def _send(self, channel: int, method: Method) -> None:
        self._write(encode_method_frame(channel, method, self.frame_max))

    def _report(self, event: Event) -> None:
        self._events.append(event)

    def _check_state(self, state: ConnectionState, what: str) -> None:
        if self.state is not state:
            raise LocalProtocolError(
                f"{what} is not allowed when the connection is {self.state.value}"
            )

    def _check_open(self, what: str) -> None:
        if self.state is not _S.OPEN:
            raise LocalProtocolError(f"cannot {what}: the connection is {self.state.value}")

    def _open_channel(self, number: int, what: str) -> Channel:
        if self.state is not _S.OPEN:  # (the message is made only for the error)
            self._check_open(f"send {what}")
        ch = self._channels.get(number)
        if ch is None or ch.state is not ChannelState.OPEN:
            raise LocalProtocolError(f"cannot send {what}: channel {number} is not open")
        return ch

    def _send_close(self, code: int, text: str, class_id: int, method_id: int) -> None:
        self._send(
            0,
            spec.ConnectionClose(
                reply_code=code, reply_text=text[:255], class_id=class_id, method_id=method_id
            ),
        )
        self._close_reason = (code, text, class_id, method_id)
        self._closing_since = self._now
        self.state = _S.CLOSING

    def _close_channel(
        self, ch: Channel, code: int, text: str, class_id: int, method_id: int
    ) -> None:
        ch.discard_content()
        ch.state = ChannelState.CLOSING
        ch.close_reason = (code, text, class_id, method_id)
        self._send(
            ch.number,
            spec.ChannelClose(
                reply_code=code, reply_text=text[:255], class_id=class_id, method_id=method_id
            ),
        )

    def _end(
        self, code: int, text: str, class_id: int = 0, method_id: int = 0, *, by_peer: bool
    ) -> None:
        self.state = _S.CLOSED
        self._channels.clear()
        self._report(
            ConnectionClosed(
                reply_code=int(code),
                reply_text=text,
                class_id=class_id,
                method_id=method_id,
                by_peer=by_peer,
            )
        )

    def _stream_ended(self) -> None:
        if self.state is _S.CLOSING:
            code, text, class_id, method_id = self._close_reason
            self._end(code, text, class_id, method_id, by_peer=False)
        else:
            self._end(
                ReplyCode.CONNECTION_FORCED,
                f"the peer ended the stream without connection.close ({self.state.value})",
                by_peer=True,
            )

    def _parse_error(self, exc: AMQPError) -> None:
        """The bytes cannot be read any more: a refused protocol header, or a frame error
        (the parser is broken, so no ``close-ok`` could be read: the connection ends after
        our ``connection.close``)."""
        if isinstance(exc, UnsupportedProtocolError):
            text = f"{exc.description} ({exc.version_name})"
            if self.role is Role.SERVER:
                # spec, connection.start, rule "protocol-name": our header, then close
                self._write(PROTOCOL_HEADER)
                self._end(ReplyCode.FRAME_ERROR, text, by_peer=False)
            else:
                self._end(ReplyCode.NOT_IMPLEMENTED, text, by_peer=True)
            return
        code = int(getattr(exc, "reply_code", ReplyCode.FRAME_ERROR))
        if self.state is not _S.CLOSING and self.state is not _S.NEW:
            self._send_close(code, exc.description, 0, 0)
        self._end(code, exc.description, by_peer=False)

    def _peer_error(self, exc: PeerError) -> None:
        """A hard error (soft ones are answered on their channel where they arise)."""
        self._send_close(exc.reply_code, exc.text, exc.class_id, exc.method_id)

    # -- internals: input -----------------------------------------------------------------

    def _frame(self, frame: Frame | ProtocolHeader) -> None:
        if isinstance(frame, MethodFrame):
            if frame.channel == 0:
                self._connection_method(frame.method)
            else:
                self._channel_method(frame.channel, frame.method)
        elif isinstance(frame, ContentHeaderFrame | ContentBodyFrame):
            self._content_frame(frame)
        elif isinstance(frame, ProtocolHeader):
            self._send(
                0,
                spec.ConnectionStart(
                    server_properties=self._properties,
                    mechanisms=" ".join(self._mechanisms).encode(),
                    locales=self._locale.encode(),
                ),
            )
            self.state = _S.AWAIT_START_OK
        else:
            assert isinstance(frame, HeartbeatFrame)  # any octet counts as activity

    def _connection_method(self, method: Method) -> None:
        handler = TABLE.get((self.role, self.state, type(method)))
        if handler is not None:
            getattr(self, handler)(method)
        elif self.state is not _S.CLOSING:
            if method.CLASS_ID != spec.ConnectionStart.CLASS_ID:
                text = f"{method.NAME} on channel 0, which carries the connection class only"
            else:
                text = f"{method.NAME} is not allowed when the connection is {self.state.value}"
            raise hard(ReplyCode.COMMAND_INVALID, text, method)

    # client negotiation

    def _on_start(self, method: spec.ConnectionStart) -> None:
        self.peer_properties = method.server_properties
        if (method.version_major, method.version_minor) != (0, 9):
            # spec, connection.start, rule "client-support": close without another octet
            self._end(
                ReplyCode.NOT_IMPLEMENTED,
                f"the server proposes version {method.version_major}-{method.version_minor}",
                by_peer=False,
            )
            return
        offered = bytes(method.mechanisms).decode(errors="replace").split()
        self.mechanism = mech = negotiation.choose_mechanism(self._choices, offered)
        if mech is None:
            ours = " or ".join(m.name for m in self._choices)
            self._end(
                ReplyCode.ACCESS_REFUSED,
                f"the server offers {' '.join(offered) or 'no mechanism'}, not {ours}",
                by_peer=False,
            )
            return
        self._username = negotiation.login_identity(mech, self._username)
        locales = bytes(method.locales).decode(errors="replace").split()
        locale = self._locale if self._locale in locales or not locales else locales[0]
        response = mech.initial_response() or b""
        self._send(
            0,
            spec.ConnectionStartOk(
                client_properties=self._properties,
                mechanism=mech.name,
                response=response,
                locale=locale,
            ),
        )
        self.state = _S.AWAIT_TUNE

    def _on_secure(self, method: spec.ConnectionSecure) -> None:
        mech = self.mechanism
        assert mech is not None
        try:
            response = mech.respond(bytes(method.challenge))
        except SASLError as exc:
            raise hard(ReplyCode.COMMAND_INVALID, exc.description, method) from None
        self._send(0, spec.ConnectionSecureOk(response=response))

    def _on_tune(self, method: spec.ConnectionTune) -> None:
        if method.frame_max and method.frame_max < FRAME_MIN_SIZE:
            raise hard(
                ReplyCode.NOT_ALLOWED,
                f"frame-max {method.frame_max} is under frame-min-size {FRAME_MIN_SIZE}",
                method,
            )
        self.channel_max = negotiation.negotiate(self._channel_max, method.channel_max)
        self.frame_max = negotiation.negotiate(self._frame_max, method.frame_max)
        self.heartbeat = negotiation.negotiate(self._heartbeat_proposal, method.heartbeat)
        self._parser.frame_max = self.frame_max
        self._send(
            0,
            spec.ConnectionTuneOk(
                channel_max=self.channel_max, frame_max=self.frame_max, heartbeat=self.heartbeat
            ),
        )
        self._send(0, spec.ConnectionOpen(virtual_host=self.virtual_host))
        self.identity = self._username
        self.state = _S.AWAIT_OPEN_OK

    def _on_open_ok(self, method: spec.ConnectionOpenOk) -> None:
        self._opened()

    def _opened(self) -> None:
        self.state = _S.OPEN
        self._report(
            ConnectionOpened(
                virtual_host=self.virtual_host,
                frame_max=self.frame_max,
                channel_max=self.channel_max,
                heartbeat=self.heartbeat,
                peer_properties=self.peer_properties,
                identity=self.identity,
            )
        )

    def _on_blocked(self, method: spec.ConnectionBlocked) -> None:
        self.blocked = True
        self._report(Blocked(reason=method.reason))

    def _on_unblocked(self, method: spec.ConnectionUnblocked) -> None:
        self.blocked = False
        self._report(Unblocked())

    def _on_channel0_method(self, method: Method) -> None:
        self._report(MethodReceived(channel=0, method=method))

    # server negotiation

    def _on_start_ok(self, method: spec.ConnectionStartOk) -> None:
        self.peer_properties = method.client_properties
        if method.mechanism not in self._mechanisms:
            # spec, connection.start-ok, field mechanism, rule "validity": close the
            # socket without another octet
            self._end(
                ReplyCode.COMMAND_INVALID,
                f"the client chose mechanism {method.mechanism!r}, which was not offered",
                by_peer=False,
            )
            return
        self._login_mechanism = method.mechanism
        response = bytes(method.response)
        try:
            username, password = negotiation.read_login(method.mechanism, response)
        except ValueError as exc:
            self._send_close(ReplyCode.ACCESS_REFUSED, f"malformed response: {exc}", 10, 11)
            return
        self._locale = method.locale
        self.state = _S.LOGIN_PENDING
        self._report(
            LoginRequested(
                mechanism=method.mechanism,
                response=response,
                username=username,
                password=password,
                client_properties=method.client_properties,
                locale=method.locale,
            )
        )

    def _on_secure_ok(self, method: spec.ConnectionSecureOk) -> None:
        self.state = _S.LOGIN_PENDING
        self._report(
            LoginRequested(
                mechanism=self._login_mechanism,
                response=bytes(method.response),
                username=None,
                password=None,
                client_properties=self.peer_properties,
                locale=self._locale,
            )
        )

    def _on_tune_ok(self, method: spec.ConnectionTuneOk) -> None:
        ours = self._channel_max
        if ours and not 0 < method.channel_max <= ours:
            # spec, connection.tune-ok, field channel-max, rule "upper-limit": close the
            # socket without a negotiated close
            self._end(
                ReplyCode.NOT_ALLOWED,
                f"the client's channel-max {method.channel_max} is over ours, {ours}",
                by_peer=False,
            )
            return
        frame_max = method.frame_max
        if (self._frame_max and not 0 < frame_max <= self._frame_max) or (
            frame_max and frame_max < FRAME_MIN_SIZE
        ):
            raise hard(
                ReplyCode.NOT_ALLOWED,
                f"frame-max {frame_max} is not between {FRAME_MIN_SIZE} and {self._frame_max}",
                spec.ConnectionTuneOk,
            )
        self.channel_max = method.channel_max
        self.frame_max = frame_max
        self.heartbeat = method.heartbeat  # the client's word, as RabbitMQ takes it
        self._parser.frame_max = frame_max
        self.state = _S.AWAIT_OPEN

    def _on_open(self, method: spec.ConnectionOpen) -> None:
        self.virtual_host = method.virtual_host
        self.state = _S.OPEN_PENDING
        self._report(OpenRequested(virtual_host=method.virtual_host))

    # both

    def _on_close(self, method: spec.ConnectionClose) -> None:
        self._send(0, spec.ConnectionCloseOk())
        if self.state is _S.CLOSING:
            return  # both closed at once: our close-ok still comes (spec, connection.close)
        self._end(
            method.reply_code,
            method.reply_text,
            method.class_id,
            method.method_id,
            by_peer=True,
        )

    def _on_close_ok(self, method: spec.ConnectionCloseOk) -> None:
        code, text, class_id, method_id = self._close_reason
        self._end(code, text, class_id, method_id, by_peer=False)

    # channels

    def _channel_method(self, number: int, method: Method) -> None:
        if self.state is _S.CLOSING:
            return
        if method.CLASS_ID == spec.ConnectionStart.CLASS_ID:
            raise hard(
                ReplyCode.COMMAND_INVALID,
                f"{method.NAME} on channel {number}: the connection class goes on channel 0",
                method,
            )
        ch = self._channels.get(number)
        if isinstance(method, spec.ChannelOpen):
            self._on_channel_open(number, ch)
            return
        if ch is None or self.state is not _S.OPEN:
            raise hard(
                ReplyCode.CHANNEL_ERROR,
                f"{method.NAME} on channel {number}, which is not open",
                method,
            )
        if ch.state is ChannelState.CLOSING:
            self._closing_channel_method(ch, method)
            return
        ch.check_no_content(method.NAME)
        if ch.state is ChannelState.OPENING:
            self._opening_channel_method(ch, method)
            return
        handler = _CHANNEL_TABLE.get(type(method))
        try:
            if handler is not None:
                handler(self, ch, method)
            elif method.CONTENT:
                ch.content_method(method)
            else:
                self._report(MethodReceived(channel=number, method=method))
        except PeerError as exc:
            if exc.hard:
                raise
            self._close_channel(ch, exc.reply_code, exc.text, exc.class_id, exc.method_id)

    def _on_channel_open(self, number: int, ch: Channel | None) -> None:
        if self.role is Role.CLIENT or self.state is not _S.OPEN:
            raise hard(
                ReplyCode.COMMAND_INVALID if self.role is Role.CLIENT else ReplyCode.CHANNEL_ERROR,
                f"channel.open on channel {number} "
                + (
                    "from a server" if self.role is Role.CLIENT else "before the connection is open"
                ),
                spec.ChannelOpen,
            )
        if ch is not None:
            raise hard(
                ReplyCode.CHANNEL_ERROR,
                f"channel.open on channel {number}, which is open already",
                spec.ChannelOpen,
            )
        if self.channel_max and number > self.channel_max:
            raise hard(
                ReplyCode.NOT_ALLOWED,
                f"channel {number} is over the negotiated channel-max {self.channel_max}",
                spec.ChannelOpen,
            )
        ch = Channel(number, ChannelState.OPENING, self.limits.max_body)
        self._channels[number] = ch
        if self._auto_accept:
            self._accept(ch)
        else:
            self._report(MethodReceived(channel=number, method=spec.ChannelOpen()))

    def _accept(self, ch: Channel) -> None:
        ch.state = ChannelState.OPEN
        self._send(ch.number, spec.ChannelOpenOk())
        self._report(ChannelOpened(channel=ch.number))

    def _opening_channel_method(self, ch: Channel, method: Method) -> None:
        if isinstance(method, spec.ChannelOpenOk) and self.role is Role.CLIENT:
            ch.state = ChannelState.OPEN
            self._report(ChannelOpened(channel=ch.number))
        elif isinstance(method, spec.ChannelClose):
            self._on_channel_close(ch, method)
        else:
            raise hard(
                ReplyCode.CHANNEL_ERROR,
                f"{method.NAME} on channel {ch.number}, which is not open yet",
                method,
            )

    def _closing_channel_method(self, ch: Channel, method: Method) -> None:
        """Spec, ``channel.close``: after sending it, discard everything but ``close`` and
        ``close-ok``."""
        if isinstance(method, spec.ChannelClose):
            self._send(ch.number, spec.ChannelCloseOk())  # both closed: theirs still comes
        elif isinstance(method, spec.ChannelCloseOk):
            del self._channels[ch.number]
            code, text, class_id, method_id = ch.close_reason
            ch.state = ChannelState.CLOSED
            self._report(
                ChannelClosed(
                    channel=ch.number,
                    reply_code=code,
                    reply_text=text,
                    class_id=class_id,
                    method_id=method_id,
                    by_peer=False,
                )
            )

    def _on_channel_close(self, ch: Channel, method: spec.ChannelClose) -> None:
        del self._channels[ch.number]
        ch.state = ChannelState.CLOSED
        self._send(ch.number, spec.ChannelCloseOk())
        self._report(
            ChannelClosed(
                channel=ch.number,
                reply_code=method.reply_code,
                reply_text=method.reply_text,
                class_id=method.class_id,
                method_id=method.method_id,
                by_peer=True,
            )
        )

    def _on_channel_unexpected(self, ch: Channel, method: Method) -> None:
        raise hard(
            ReplyCode.COMMAND_INVALID,
            f"{method.NAME} on channel {ch.number}, which is open",
            method,
        )

    def _on_flow(self, ch: Channel, method: spec.ChannelFlow) -> None:
        self._send(ch.number, spec.ChannelFlowOk(active=method.active))
        self._report(ch.flow(method.active))

    def _on_mode(self, ch: Channel, method: Method) -> None:
        """``confirm.select``, ``confirm.select-ok``, ``tx.select``: the channel's mode
        changes (a soft 406 for a server channel asked to mix them); the application sees
        the method too (it answers a select)."""
        ch.select(method, server=self.role is Role.SERVER)
        self._report(MethodReceived(channel=ch.number, method=method))

    def _on_confirmation(self, ch: Channel, method: spec.BasicAck | spec.BasicNack) -> None:
        if self.role is Role.SERVER or not ch.next_publish_seq:
            self._report(MethodReceived(channel=ch.number, method=method))
        else:
            self._report(ch.confirmation(method))

    def _content_frame(self, frame: ContentHeaderFrame | ContentBodyFrame) -> None:
        if self.state is _S.CLOSING:
            return
        ch = self._channels.get(frame.channel)
        if ch is None or ch.state is ChannelState.OPENING:
            raise hard(
                ReplyCode.CHANNEL_ERROR, f"content frame on channel {frame.channel}, not open"
            )
        if ch.state is ChannelState.CLOSING:
            return
        try:
            if isinstance(frame, ContentHeaderFrame):
                event = ch.header(frame)
            else:
                event = ch.body(frame.payload)
        except PeerError as exc:
            if exc.hard:
                raise
            self._close_channel(ch, exc.reply_code, exc.text, exc.class_id, exc.method_id)
            return
        if event is not None:
            if (
                self.role is Role.SERVER
                and ch.confirm_mode
                and isinstance(event.method, spec.BasicPublish)
            ):
                ch.next_publish_seq += 1
            self._report(event)


_ChannelHandler = Callable[[Connection, Channel, Any], None]
#: The channel methods the engine acts on in state OPEN (the rest surface as
#: MethodReceived or ContentReceived).
_CHANNEL_TABLE: dict[type[Method], _ChannelHandler] = {
    spec.ChannelClose: Connection._on_channel_close,
    spec.ChannelCloseOk: Connection._on_channel_unexpected,
    spec.ChannelOpenOk: Connection._on_channel_unexpected,
    spec.ChannelFlow: Connection._on_flow,
    spec.ConfirmSelect: Connection._on_mode,
    spec.ConfirmSelectOk: Connection._on_mode,
    spec.TxSelect: Connection._on_mode,
    spec.BasicAck: Connection._on_confirmation,
    spec.BasicNack: Connection._on_confirmation,
}
