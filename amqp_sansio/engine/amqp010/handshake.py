"""An AMQP 0-10 connection's own controls: the negotiation of both roles, heartbeats and
the close handshake (0-10 spec, class ``connection``; its grammar: the protocol header,
``start``/``start-ok``, ``secure``/``secure-ok`` challenges, ``tune``/``tune-ok``,
``open``/``open-ok`` or ``redirect``; ``close``/``close-ok``). Each control is dispatched
by the transition table of :mod:`.states`; the login runs the mechanisms of
:mod:`amqp_sansio.security.mechanisms` (the one registry every protocol uses).
"""

from __future__ import annotations

from typing import Any

from ...codec.amqp010 import Array
from ...definitions import amqp010 as spec
from ...framing.amqp010 import PROTOCOL_HEADER
from ...framing.headers import name_of
from ...security.mechanisms import (
    SASLError,
    SASLMechanismNotSupportedError,
    ServerChallenge,
    ServerStep,
    ServerSuccess,
    first_offered,
)
from .core import CloseCode, ConnectionCore, PeerError
from .events import ConnectionOpened, OpenRequested, Redirected
from .states import MIN_MAX_FRAME_SIZE, TABLE, ConnectionState, Role

__all__ = ["Handshake"]

_S = ConnectionState


def _strings(value: Any) -> tuple[str, ...]:
    """A ``str16-array`` (or ``amqp-host-array``) field as strings: empty when absent."""
    if value is None:
        return ()
    items = value.items if isinstance(value, Array) else value
    return tuple(str(item) for item in items)


class Handshake(ConnectionCore):
    """The connection controls of a connection."""

    def _on_protocol_header(self, header: bytes) -> None:
        """The peer's protocol header (0-10 spec 4.2, "Protocol header"). Server: a good
        one is answered with ours and ``connection.start``; another with ours, and the
        connection ends (``connection.start`` rule "protocol-name"). Client: the server's
        must be ours."""
        if header != PROTOCOL_HEADER:
            text = f"the peer sent the protocol header of {name_of(header)}, not AMQP 0-10"
            if self.role is Role.SERVER:
                self._write(PROTOCOL_HEADER)
            self._end(CloseCode.FRAMING_ERROR, text, by_peer=self.role is Role.CLIENT)
            return
        if self.role is Role.CLIENT:
            return
        self._write(PROTOCOL_HEADER)
        offered = self._authenticator.offered_mechanisms()
        self._control(
            0,
            spec.ConnectionStart(
                server_properties=self._properties,
                mechanisms=offered,
                locales=[self._locale],
            ),
        )
        self.state = _S.AWAIT_START_OK

    def _connection_control(self, control: spec.Control) -> None:
        handler = TABLE.get((self.role, self.state, type(control)))
        if handler is not None:
            getattr(self, handler)(control)
        elif self.state is not _S.CLOSING:
            raise PeerError(
                CloseCode.CONNECTION_FORCED,
                f"{control.NAME} is not allowed when the connection is {self.state.value}",
            )

    # client negotiation

    def _on_start(self, control: spec.ConnectionStart) -> None:
        self.peer_properties = dict(control.server_properties or {})
        offered = _strings(control.mechanisms)
        self.mechanism = mech = first_offered(self._choices, offered)
        if mech is None:
            ours = " or ".join(m.name for m in self._choices)
            self._end(
                CloseCode.CONNECTION_FORCED,
                f"the server offers {' '.join(offered) or 'no mechanism'}, not {ours}",
                by_peer=False,
            )
            return
        if self._username is None and mech.name == "PLAIN":
            self._username = getattr(mech, "username", None)
        locales = _strings(control.locales)
        locale = self._locale if self._locale in locales or not locales else locales[0]
        self._control(
            0,
            spec.ConnectionStartOk(
                client_properties=self._properties,
                mechanism=mech.name,
                response=mech.initial_response() or b"",
                locale=locale,
            ),
        )
        self.state = _S.AWAIT_TUNE

    def _on_secure(self, control: spec.ConnectionSecure) -> None:
        mech = self.mechanism
        assert mech is not None
        try:
            response = mech.respond(bytes(control.challenge or b""))
        except SASLError as exc:
            raise PeerError(CloseCode.CONNECTION_FORCED, exc.description) from None
        self._control(0, spec.ConnectionSecureOk(response=response))

    def _on_tune(self, control: spec.ConnectionTune) -> None:
        theirs = control.max_frame_size
        if theirs is not None and theirs < MIN_MAX_FRAME_SIZE:
            raise PeerError(
                CloseCode.CONNECTION_FORCED,
                f"max-frame-size {theirs} is under MIN-MAX-FRAME-SIZE {MIN_MAX_FRAME_SIZE}",
            )
        low, high = control.heartbeat_min, control.heartbeat_max
        if (low is None and high is not None) or (
            low is not None and high is not None and high < low
        ):
            raise PeerError(
                CloseCode.CONNECTION_FORCED,
                f"heartbeat-min {low} and heartbeat-max {high} are not a range "
                "(connection.tune rules 'permitted-range', 'no-heartbeat-min')",
            )
        self.channel_max = min(self.limits.max_channels, control.channel_max or 0xFFFF)
        self.max_frame_size = min(self.limits.max_frame_size, theirs or 0xFFFF)
        wanted = self._heartbeat_proposal
        heartbeat = 0
        if wanted and low is not None:
            heartbeat = max(low, wanted if high is None else min(wanted, high))
        self.heartbeat = heartbeat
        self._parser.max_frame_size = self.max_frame_size
        self._control(
            0,
            spec.ConnectionTuneOk(
                channel_max=self.channel_max,
                max_frame_size=self.max_frame_size,
                heartbeat=heartbeat or None,
            ),
        )
        self._control(0, spec.ConnectionOpen(virtual_host=self.virtual_host))
        self.identity = self._username
        self.state = _S.AWAIT_OPEN_OK

    def _on_open_ok(self, control: spec.ConnectionOpenOk) -> None:
        self.known_hosts = _strings(control.known_hosts)
        self._opened()

    def _on_redirect(self, control: spec.ConnectionRedirect) -> None:
        known = _strings(control.known_hosts)
        host = control.host or ""
        self._report(Redirected(host=host, known_hosts=known))
        self._end(CloseCode.NORMAL, f"redirected to {host}", by_peer=True)

    def _opened(self) -> None:
        self.state = _S.OPEN
        self._report(
            ConnectionOpened(
                virtual_host=self.virtual_host,
                max_frame_size=self.max_frame_size,
                channel_max=self.channel_max,
                heartbeat=self.heartbeat,
                peer_properties=self.peer_properties,
                identity=self.identity,
                known_hosts=self.known_hosts,
            )
        )

    # server negotiation

    def _on_start_ok(self, control: spec.ConnectionStartOk) -> None:
        self.peer_properties = dict(control.client_properties or {})
        self._locale = control.locale or ""
        try:
            self._login = login = self._authenticator.create_mechanism(control.mechanism or "")
        except SASLMechanismNotSupportedError:
            # connection.start-ok, field mechanism, rule "validity": close the socket
            # without another octet
            self._end(
                CloseCode.CONNECTION_FORCED,
                f"the client chose mechanism {control.mechanism!r:.40}, which was not offered",
                by_peer=False,
            )
            return
        self._login_step(login.start(bytes(control.response or b"")))

    def _on_secure_ok(self, control: spec.ConnectionSecureOk) -> None:
        login = self._login
        assert login is not None
        if self._success is not None:
            # the answer to the mechanism's last data, sent as a challenge (SCRAM's
            # server signature): 0-10 has no outcome to carry it
            self._login_step(self._success)
            return
        self._login_step(login.step(bytes(control.response or b"")))

    def _login_step(self, step: ServerStep) -> None:
        if isinstance(step, ServerChallenge):
            self._control(0, spec.ConnectionSecure(challenge=step.data))
            self.state = _S.AWAIT_SECURE_OK
        elif isinstance(step, ServerSuccess):
            if step.additional_data and self._success is None:
                self._success = step
                self._control(0, spec.ConnectionSecure(challenge=step.additional_data))
                self.state = _S.AWAIT_SECURE_OK
                return
            self.identity = step.identity
            heartbeats = self._heartbeat_range
            self._control(
                0,
                spec.ConnectionTune(
                    channel_max=self.limits.max_channels,
                    max_frame_size=self.limits.max_frame_size,
                    heartbeat_min=heartbeats[0] if heartbeats else None,
                    heartbeat_max=heartbeats[1] if heartbeats else None,
                ),
            )
            self.state = _S.AWAIT_TUNE_OK
        else:
            self._send_close(
                CloseCode.CONNECTION_FORCED, f"authentication failed: {step.error.description}"
            )

    def _on_tune_ok(self, control: spec.ConnectionTuneOk) -> None:
        # connection.tune-ok, fields channel-max and max-frame-size, rules "upper-limit"
        # and "minimum": the server closes the socket without a negotiated close
        ours = self.limits.max_channels
        channel_max = ours if control.channel_max is None else control.channel_max
        if not 0 < channel_max <= ours:
            self._end(
                CloseCode.CONNECTION_FORCED,
                f"the client's channel-max {channel_max} is not between 1 and {ours}",
                by_peer=False,
            )
            return
        size = control.max_frame_size
        if size is not None and not MIN_MAX_FRAME_SIZE <= size <= self.limits.max_frame_size:
            self._end(
                CloseCode.FRAMING_ERROR,
                f"the client's max-frame-size {size} is not between {MIN_MAX_FRAME_SIZE} "
                f"and {self.limits.max_frame_size}",
                by_peer=False,
            )
            return
        heartbeat = control.heartbeat or 0
        heartbeats = self._heartbeat_range
        if heartbeat and (heartbeats is None or not heartbeats[0] <= heartbeat <= heartbeats[1]):
            raise PeerError(
                CloseCode.CONNECTION_FORCED,
                f"the client's heartbeat {heartbeat} is outside {heartbeats or 'none'} "
                "(connection.tune-ok rule 'permitted-range')",
            )
        self.channel_max = channel_max  # absent (as qpid-python sends it): ours
        self.max_frame_size = size or self.limits.max_frame_size
        self.heartbeat = heartbeat
        self._parser.max_frame_size = self.max_frame_size
        self.state = _S.AWAIT_OPEN

    def _on_open(self, control: spec.ConnectionOpen) -> None:
        self.virtual_host = control.virtual_host or ""
        self._insist = bool(control.insist)
        self.state = _S.OPEN_PENDING
        self._report(
            OpenRequested(
                virtual_host=self.virtual_host,
                capabilities=_strings(control.capabilities),
                insist=bool(control.insist),
                identity=self.identity,
            )
        )

    # both

    def _on_heartbeat(self, control: spec.ConnectionHeartbeat) -> None:
        """Nothing to do: its arrival counted as activity."""

    def _on_close(self, control: spec.ConnectionClose) -> None:
        self._control(0, spec.ConnectionCloseOk())
        if self.state is _S.CLOSING:
            return  # both closed at once: our close-ok still comes
        self._end(int(control.reply_code or 0), control.reply_text or "", by_peer=True)

    def _on_close_ok(self, control: spec.ConnectionCloseOk) -> None:
        self._end_closing()
