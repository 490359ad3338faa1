"""The state every AMQP 0-10 :class:`~amqp_sansio.engine.amqp010.Connection` keeps and
what writes to and ends it: the base its parts share (the connection controls in
:mod:`.handshake`, the session controls and commands in :mod:`.sessions`).

Output is a list of encoded frames drained by ``data_to_send()`` (0-10 spec 4.4, frames;
:func:`~amqp_sansio.framing.amqp010.encode_assembly`); every write stamps the time of
the last call for the heartbeat (0-10 spec, ``connection.heartbeat``). Ending the
connection reports :class:`~amqp_sansio.engine.amqp010.events.ConnectionClosed` once, and
each attached session's :class:`~amqp_sansio.engine.amqp010.events.SessionDetached` before
it (its state kept in the store for its time-out).
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from typing import Any

from ...definitions import amqp010 as spec
from ...errors import LocalProtocolError
from ...framing.amqp010 import AssemblyParser, SegmentType, Track, encode_assembly
from ...security.mechanisms import (
    SASLClientMechanism,
    SASLServerMechanism,
    ServerAuthenticator,
    ServerSuccess,
    client_mechanisms,
)
from ..liveness import Liveness
from .events import ConnectionClosed, Event, SessionDetached
from .session import Session, SessionStore
from .states import MIN_MAX_FRAME_SIZE, ConnectionState, Limits, Role, SessionState

__all__ = ["CloseCode", "ConnectionCore", "DetachCode", "PeerError"]

CloseCode = spec.ConnectionCloseCode
DetachCode = spec.SessionDetachCode

_S = ConnectionState


class PeerError(Exception):
    """What a control handler raises when the peer broke the connection's protocol: the
    connection closes with ``code`` (a ``connection.close-code``)."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.code = code
        self.text = text


def default_properties(extra: dict[str, Any] | None) -> dict[str, Any]:
    """The ``client-properties`` or ``server-properties`` we announce (0-10 spec,
    ``connection.start`` and ``start-ok`` rule "required-fields"), ``extra`` over them."""
    props: dict[str, Any] = {
        "product": "amqp-sansio",
        "platform": f"Python {platform.python_version()}",
        "information": "https://github.com/amqp-sansio",
    }
    props.update(extra or {})
    return props


class ConnectionCore:
    """A connection's state and output (the arguments are
    :class:`~amqp_sansio.engine.amqp010.Connection`'s)."""

    def __init__(
        self,
        role: Role,
        *,
        virtual_host: str = "",
        mechanism: str | SASLClientMechanism | Sequence[str] = ("PLAIN", "ANONYMOUS"),
        username: str | None = None,
        password: str | None = None,
        authenticator: ServerAuthenticator | None = None,
        properties: dict[str, Any] | None = None,
        heartbeat: int = 0,
        heartbeat_range: tuple[int, int] | None = (1, 120),
        locale: str = "en_US",
        limits: Limits | None = None,
        sessions: SessionStore | None = None,
    ) -> None:
        self.role = role
        self.limits = limits = limits or Limits()
        if not 0 <= heartbeat <= 0xFFFF:
            raise LocalProtocolError(f"heartbeat {heartbeat} is not a uint16")
        if heartbeat_range is not None and not 0 < heartbeat_range[0] <= heartbeat_range[1]:
            raise LocalProtocolError(f"heartbeat range {heartbeat_range} is not min <= max")
        if heartbeat_range is not None and heartbeat_range[1] > 0xFFFF:
            raise LocalProtocolError(f"heartbeat range {heartbeat_range} is not uint16")
        self._heartbeat_proposal = heartbeat
        self._heartbeat_range = heartbeat_range
        self.virtual_host = virtual_host
        self._locale = locale
        self._properties = default_properties(properties)
        self._choices: tuple[SASLClientMechanism, ...] = ()
        if role is Role.CLIENT:
            self._choices = client_mechanisms(mechanism, username, password)
        self._authenticator = authenticator or ServerAuthenticator(allow_anonymous=True)
        self._username = username
        self.store = (
            sessions if sessions is not None else SessionStore(limits.max_detached_sessions)
        )
        #: The mechanism the client logs in with (once the server's offer is known).
        self.mechanism: SASLClientMechanism | None = None
        self.state = _S.NEW
        self._header = bytearray()
        self._parser = AssemblyParser(
            max_frame_size=MIN_MAX_FRAME_SIZE, max_assembly_size=limits.max_assembly_size
        )
        self._events: list[Event] = []
        self._out: list[bytes] = []
        #: The sessions attached (or attaching, or detaching), by channel.
        self._sessions: dict[int, Session] = {}
        #: The channel of each session in ``_sessions``, by name.
        self._names: dict[bytes, int] = {}
        self._login: SASLServerMechanism | None = None
        self._insist = False
        self._success: ServerSuccess | None = None
        #: The peer's properties (``server-properties`` or ``client-properties``).
        self.peer_properties: dict[str, Any] = {}
        #: The negotiated values (the proposals until tuned).
        self.max_frame_size = MIN_MAX_FRAME_SIZE
        self.channel_max = limits.max_channels
        self.heartbeat = 0
        #: Who logged in: the identity the server's mechanism established, or the client's
        #: username.
        self.identity: str | None = None
        self.known_hosts: tuple[str, ...] = ()
        self._now = 0.0
        #: The handshake and close time-outs, the peer's silence, our heartbeats.
        self._liveness = Liveness()
        self._close_reason: tuple[int, str] = (CloseCode.NORMAL, "")

    def __repr__(self) -> str:
        return f"<amqp010.Connection {self.role.value} {self.state.value}>"

    # -- output ---------------------------------------------------------------------------

    def _write(self, data: bytes) -> None:
        self._out.append(data)
        self._liveness.sent(self._now)

    def _frames(self, channel: int, track: int, segments: Sequence[tuple[int, bytes]]) -> None:
        self._out += encode_assembly(channel, track, segments, self.max_frame_size)
        self._liveness.sent(self._now)

    def _control(self, channel: int, control: spec.Control) -> None:
        self._frames(channel, Track.CONTROL, [(SegmentType.CONTROL, spec.encode_control(control))])

    def _report(self, event: Event) -> None:
        self._events.append(event)

    # -- ending ---------------------------------------------------------------------------

    def _send_close(self, code: int, text: str) -> None:
        self._control(0, spec.ConnectionClose(reply_code=code, reply_text=text[:255]))
        self._close_reason = (code, text)
        self._liveness.closing(self._now)
        self.state = _S.CLOSING

    def _end(self, code: int, text: str, *, by_peer: bool) -> None:
        """The connection is over: its sessions are detached (kept for their time-out) and
        ConnectionClosed is reported."""
        self.state = _S.CLOSED
        for channel, session in sorted(self._sessions.items()):
            self._session_gone(session, channel, None, by_peer=by_peer)
        self._report(ConnectionClosed(reply_code=code, reply_text=text, by_peer=by_peer))

    def _end_closing(self) -> None:
        code, text = self._close_reason
        self._end(code, text, by_peer=False)

    def _session_gone(
        self, session: Session, channel: int, code: int | None, *, by_peer: bool
    ) -> None:
        """``session`` left ``channel``: kept for its time-out, if it has one."""
        del self._sessions[channel]
        del self._names[session.name]
        session.transport_lost()
        session.state = SessionState.DETACHED
        expires = self.store.keep(session, self._now)
        self._report(
            SessionDetached(
                session=session.name, channel=channel, code=code, by_peer=by_peer, expires=expires
            )
        )
