"""The state every AMQP 0-9-1 :class:`~amqp_sansio.engine.amqp091.Connection` keeps and
what writes to and ends it: the base the connection's parts share (its channel-0
handshake in :mod:`.handshake`, its channels' methods and contents in :mod:`.dispatch`).

Output is a list of encoded frames drained by ``data_to_send()``; every write stamps the
time of the last call (``_now``) for the heartbeat (0-9-1 spec, ``connection.tune`` field
``heartbeat``). Ending the connection (``_end``) reports
:class:`~amqp_sansio.engine.amqp091.events.ConnectionClosed` once.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...codec.amqp091 import FieldTable
from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method
from ...definitions.amqp091.spec import FRAME_MIN_SIZE, ReplyCode
from ...errors import AMQPError, LocalProtocolError, UnsupportedProtocolError
from ...framing.amqp091 import PROTOCOL_HEADER, FrameParser, encode_method_frame
from ...security.mechanisms import SASLClientMechanism, client_mechanisms
from ..liveness import Liveness
from . import negotiation
from .channel import Channel, ChannelState, PeerError
from .events import ChannelClosed, ConnectionClosed, Event, discard_requests
from .states import ConnectionState, Limits, Role

__all__ = ["MAX_CHANNEL", "ConnectionCore"]

#: The largest channel number (a short).
MAX_CHANNEL = 65535
_S = ConnectionState


class ConnectionCore:
    """A connection's state and output (the arguments are
    :class:`~amqp_sansio.engine.amqp091.Connection`'s)."""

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
        if not 0 <= self._channel_max <= MAX_CHANNEL:
            raise LocalProtocolError(f"channel-max {channel_max} is not a short")
        if not 0 <= heartbeat <= 0xFFFF:
            raise LocalProtocolError(f"heartbeat {heartbeat} is not a short")
        self._heartbeat_proposal = heartbeat
        self.virtual_host = virtual_host
        self._locale = locale
        self._auto_accept = auto_accept_channels
        self._username = username
        if role is Role.CLIENT:
            self._choices = client_mechanisms(mechanism, username, password)
            self._properties = negotiation.client_properties(client_properties)
        else:
            self._choices = ()
            self._properties = negotiation.server_properties(server_properties)
        #: The mechanism the client logs in with (once the server's offer is known).
        self.mechanism: SASLClientMechanism | None = None
        self._mechanisms = tuple(mechanisms)
        self.state = _S.NEW
        self._parser = FrameParser(FRAME_MIN_SIZE, protocol_header=role is Role.SERVER)
        #: The version the connection speaks: ``"0-9-1"``, or ``"0-8"`` for a server
        #: whose client sent a 0-8 header (:mod:`amqp_sansio.framing.amqp091.amqp08`).
        self.protocol_version = "0-9-1"
        self._encode_frame = encode_method_frame
        self._events: list[Event] = []
        #: The channels (None: the connection) the application closed since the last
        #: events were given (see ``Connection.discarded``).
        self._cut: set[int | None] = set()
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
        self.monitor_paused = (
            False  # set while the caller does not read the peer: see handle_timer()
        )
        self._login_mechanism = ""
        self._now = 0.0
        #: The handshake and close time-outs, the peer's silence, our heartbeats.
        self._liveness = Liveness()
        self._close_reason: tuple[int, str, int, int] = (0, "", 0, 0)

    def __repr__(self) -> str:
        return f"<amqp091.Connection {self.role.value} {self.state.value}>"

    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._liveness.sent(self._now)

    def _send(self, channel: int, method: Method) -> None:
        self._write(self._encode_frame(channel, method, self.frame_max))

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
        self._liveness.closing(self._now)
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

    def _end_closing(self) -> None:
        """End with the reason of our ``connection.close``: its ``close-ok`` came, the
        peer did not answer in time, or the stream ended while we waited."""
        code, text, class_id, method_id = self._close_reason
        self._end(code, text, class_id, method_id, by_peer=False)

    def _channel_closed(
        self, ch: Channel, reason: tuple[int, str, int, int], *, by_peer: bool
    ) -> None:
        """``ch``'s close handshake is over (0-9-1 spec, ``channel.close``): its number is
        free again; ChannelClosed reports the ``reason`` (code, text, class and method
        ids) of the ``channel.close`` that began it."""
        del self._channels[ch.number]
        ch.state = ChannelState.CLOSED
        code, text, class_id, method_id = reason
        self._report(
            ChannelClosed(
                channel=ch.number,
                reply_code=code,
                reply_text=text,
                class_id=class_id,
                method_id=method_id,
                by_peer=by_peer,
            )
        )

    def _stream_ended(self) -> None:
        if self.state is _S.CLOSING:
            self._end_closing()
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
        discard_requests(self._events, None)
        self._end(code, exc.description, by_peer=False)

    def _peer_error(self, exc: PeerError) -> None:
        """A hard error (soft ones are answered on their channel where they arise): our
        ``connection.close``, and what the peer asked for before the error and the
        application has not taken yet is dropped, as everything after it is (0-9-1 spec,
        ``connection.close``: a closing peer discards all but close and close-ok), so no
        answer is sent after the close (an application's ``send_method`` would raise)."""
        self._send_close(exc.reply_code, exc.text, exc.class_id, exc.method_id)
        discard_requests(self._events, None)
