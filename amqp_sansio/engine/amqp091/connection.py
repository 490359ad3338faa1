"""The AMQP 0-9-1 connection, both roles, without I/O (0-9-1 spec, classes ``connection``
and ``channel``; AMQP/Fast 0.9 RFC 006 for negotiation, content frames and heartbeats).

The caller moves bytes and time, as with the 1.0 engine (:mod:`amqp_sansio.engine.amqp10`): the
engine contract, ``amqp_sansio.engine.contract.ProtocolEngine`` (docs/architecture.rst, "The
engine contract"). ``receive_data(data, now)`` with what arrived (``b""`` when the stream
ended) and ``handle_timer(now)`` give what happened, ``data_to_send()`` what to write,
``next_deadline()`` when to call ``handle_timer``. The application's calls raise or queue
frames; an event one of them causes (``accept_open``'s ConnectionOpened, ``accept_channel``'s
ChannelOpened, a ``close()`` before anything was sent) comes back from the next
``receive_data`` or ``handle_timer``. The engine answers by itself what the protocol
answers: the negotiation, ``channel.open``/``close``/``flow`` and their ``-ok``, the close
handshakes and heartbeats.

Errors follow the project's rule. The caller's mistakes raise
:class:`~amqp_sansio.errors.LocalProtocolError` (or the codec's
:class:`~amqp_sansio.codec.amqp091.errors.EncodeError`) and send nothing. Nothing the peer sends
raises: a hard error (0-9-1 spec, the ``constant`` elements of class ``hard-error``)
queues ``connection.close`` with its reply code, after which everything but
``connection.close`` and ``connection.close-ok`` is discarded (spec, ``connection.close``);
a soft error queues ``channel.close`` on its channel, after which that channel discards
everything but ``channel.close`` and ``channel.close-ok`` (spec, ``channel.close``). The
catalogue of what answers what is in docs/amqp091.rst, "The engine".
"""

from __future__ import annotations

from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method, Properties
from ...definitions.amqp091.spec import ReplyCode
from ...errors import AMQPError, LocalProtocolError
from ...framing.amqp091 import (
    HEARTBEAT,
    PROTOCOL_HEADER,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    content_octets,
    encode_method_frame,
)
from ..liveness import Due
from .channel import Channel, ChannelState, PeerError
from .core import MAX_CHANNEL
from .dispatch import ChannelDispatch
from .events import Event, is_request
from .handshake import Handshake
from .states import PHASES, ConnectionState, Limits, Role

__all__ = ["Connection", "ConnectionState", "Limits", "Role"]

_S = ConnectionState


#: Methods the application may not send with ``send_method``: the engine sends them.
_ENGINE_METHODS = frozenset(
    {spec.ChannelOpen, spec.ChannelOpenOk, spec.ChannelClose, spec.ChannelCloseOk}
    | {spec.ChannelFlowOk}
)


class Connection(Handshake, ChannelDispatch):
    """One AMQP 0-9-1 connection, client or server role, I/O-free.

    Client role: ``virtual_host``, ``mechanism`` (a name, ``"PLAIN"``, ``"AMQPLAIN"`` or
    ``"EXTERNAL"``, made with ``username`` and ``password``; several names, preferred
    first, of which the first the server offers is used; or a
    :class:`~amqp_sansio.security.mechanisms.SASLClientMechanism`), ``client_properties``
    (merged over the engine's, which announce pika's capabilities), ``locale``. Server
    role: ``server_properties`` and the ``mechanisms`` offered; with
    ``auto_accept_channels`` false, a client's ``channel.open`` surfaces as
    :class:`~amqp_sansio.engine.amqp091.events.MethodReceived` and waits for
    :meth:`accept_channel` (or :meth:`close_channel`). Both: the ``frame_max``,
    ``channel_max`` and ``heartbeat`` we propose (each capped by ``limits``; 0 is "no
    limit", which the limit then sets) and the :class:`~amqp_sansio.amqp091.Limits`.
    """

    # -- the caller's side: bytes, time, events --------------------------------------------

    @property
    def closed(self) -> bool:
        """True once the close handshake is over or the stream ended: nothing more will be
        read or sent (flush :meth:`data_to_send` one last time)."""
        return self.state is _S.CLOSED

    def start(self, now: float) -> None:
        """Start the clock (the handshake time-out runs from here); a client also writes
        the protocol header (0-9-1 spec 4.2.2), a server waits for the client's."""
        if self._liveness.started is not None:
            raise LocalProtocolError("start() was called already")
        self._now = now
        self._liveness.start(now)
        if self.role is Role.CLIENT:
            self._write(PROTOCOL_HEADER)
            self.state = _S.AWAIT_START

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Take bytes from the peer (``b""``: the stream ended) and give what happened, with
        the events the application's calls queued since the last call first. Never raises
        for what the peer sent: its faults are answered on the wire and reported."""
        self._cut.clear()
        if self.state is not _S.CLOSED:
            self._receive(data, now)
        return self._take_events()

    def _receive(self, data: bytes | bytearray | memoryview, now: float) -> None:
        if self._liveness.started is None:
            self.start(now)
        self._now = now
        if not data:
            self._stream_ended()
            return
        self._liveness.received(now)
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

    def _take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def discarded(self, event: Event) -> bool:
        """Whether ``event``, given by the last :meth:`receive_data` or
        :meth:`handle_timer`, was made moot by :meth:`close_channel` or :meth:`close`
        called since: a method or content of what they closed (for the connection, a login
        or an open not answered yet too), which asks for an answer the application can no
        longer give. The application skips it, as the engine drops what arrives after
        (0-9-1 spec, ``channel.close`` and ``connection.close``: after sending close,
        discard everything but close and close-ok). The events that report a state
        (ChannelOpened, Confirmed, FlowChanged, ...) are never discarded."""
        cut = self._cut
        if not cut:
            return False
        if None in cut:
            return is_request(event, None)
        return any(is_request(event, number) for number in cut)

    def data_to_send(self) -> bytes:
        """What to write to the peer, drained."""
        out, self._out = self._out, []
        return b"".join(out)

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must be called next: a heartbeat to send, the peer's silence
        to check, the handshake or close time-out; None for nothing."""
        return self._liveness.next_deadline(
            PHASES[self.state], self.heartbeat, self.limits.handshake_timeout
        )

    def handle_timer(self, now: float) -> list[Event]:
        """Do what is due at ``now`` and give what happened (with the events the
        application's calls queued since the last call first; calling it early does
        nothing else): send a heartbeat when nothing was sent for half the
        heartbeat (RabbitMQ's and pika's send interval); end the connection when nothing
        arrived for two heartbeats (spec, ``connection.tune`` field ``heartbeat``; RFC 006
        "Heartbeat Frames"), when the handshake took longer than the limit, or when the
        peer did not answer our close in time (``monitor_paused``: silence counts from now)."""
        self._cut.clear()
        self._tick(now)
        return self._take_events()

    def _tick(self, now: float) -> None:
        self._now = now
        if self.monitor_paused:
            self._liveness.received(now)
        due, text = self._liveness.due(
            now, PHASES[self.state], self.heartbeat, self.limits.handshake_timeout
        )
        if due is Due.CLOSE_TIMEOUT:
            self._end_closing()
        elif due is Due.HEARTBEAT:
            self._write(HEARTBEAT)
        elif due is not Due.NOTHING:  # the peer's silence, or a handshake too long
            self._end(ReplyCode.CONNECTION_FORCED, text, by_peer=False)

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
        highest = self.channel_max or MAX_CHANNEL
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
        server's pending ``channel.open`` too). Its methods and contents already given are
        :meth:`discarded`; all but ``close``/``close-ok`` that arrives after is dropped;
        ChannelClosed follows."""
        ch = self._channels.get(number)
        if ch is None or ch.state is ChannelState.CLOSING:
            raise LocalProtocolError(f"channel {number} is not open")
        self._check_open("close a channel")
        self._close_channel(ch, int(reply_code), reply_text, class_id, method_id)
        self._cut.add(number)

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
        octets = content_octets(channel, method, props, bytes(body), self.frame_max)
        if (
            self.role is Role.CLIENT
            and isinstance(method, spec.BasicPublish)
            and ch.next_publish_seq
        ):
            ch.unconfirmed.add(ch.next_publish_seq)
            ch.next_publish_seq += 1
        self._out.append(octets)
        self._liveness.sent(self._now)

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
        yet are :meth:`discarded`); ConnectionClosed follows the peer's ``close-ok``. Before
        anything was sent the connection simply ends."""
        if self.state in (_S.CLOSING, _S.CLOSED):
            return
        if self.state is _S.NEW:
            self._end(int(reply_code), reply_text, class_id, method_id, by_peer=False)
            return
        self._send_close(int(reply_code), reply_text, class_id, method_id)
        self._cut.add(None)

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
            self._on_protocol_header(frame)
        else:
            assert isinstance(frame, HeartbeatFrame)  # any octet counts as activity
