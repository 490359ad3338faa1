"""An AMQP 0-9-1 connection's channel 0: the negotiation of both roles and the close
handshake (0-9-1 spec, class ``connection``; AMQP/Fast 0.9 RFC 006 for the negotiation).
Each method is dispatched by the transition table of :mod:`.states` (role, state, method
class) to its handler here; the server's answers the application chooses (login, virtual
host) are :class:`~amqp_sansio.engine.amqp091.Connection`'s calls.
"""

from __future__ import annotations

from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method
from ...definitions.amqp091.spec import FRAME_MIN_SIZE, ReplyCode
from ...framing.amqp091 import ProtocolHeader, amqp08
from ...security.mechanisms import SASLError, first_offered
from . import negotiation
from .channel import hard
from .core import ConnectionCore
from .events import (
    Blocked,
    ConnectionOpened,
    LoginRequested,
    MethodReceived,
    OpenRequested,
    Unblocked,
)
from .states import TABLE, ConnectionState

__all__ = ["Handshake"]

_S = ConnectionState


class Handshake(ConnectionCore):
    """The channel-0 methods of a connection."""

    def _on_protocol_header(self, header: ProtocolHeader) -> None:
        """Server role: the client's protocol header (0-9-1 spec 4.2.2) is good:
        ``connection.start`` with our properties, mechanisms and locale. A 0-8 header
        (:data:`~amqp_sansio.framing.amqp091.HEADERS_08`) makes the connection speak 0-8's
        method ids from here (:mod:`amqp_sansio.framing.amqp091.amqp08`), as RabbitMQ serves 0-8."""
        if header.major == 8:
            self.protocol_version = "0-8"
            self._parser.decode_method = amqp08.decode_method_08
            self._encode_frame = amqp08.encode_method_frame_08
        self._send(
            0,
            spec.ConnectionStart(
                server_properties=self._properties,
                mechanisms=" ".join(self._mechanisms).encode(),
                locales=self._locale.encode(),
            ),
        )
        self.state = _S.AWAIT_START_OK

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
        self.mechanism = mech = first_offered(self._choices, offered)
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
        # spec, connection.tune-ok, fields channel-max and frame-max, rules "upper-limit"
        # (and frame-max's "minimum"): a value over what we proposed (0, "no limit", is
        # over any limit), or a frame-max under frame-min-size, closes the socket without a
        # negotiated close, for either field (as RabbitMQ does, though it waits 3 s first)
        ours = self._channel_max
        if ours and not 0 < method.channel_max <= ours:
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
            self._end(
                ReplyCode.NOT_ALLOWED,
                f"the client's frame-max {frame_max} is not between {FRAME_MIN_SIZE} and "
                f"{self._frame_max or 'any'}",
                by_peer=False,
            )
            return
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
        self._end_closing()
