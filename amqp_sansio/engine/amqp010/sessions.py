"""An AMQP 0-10 connection's sessions: the session controls and the commands on each
channel (0-10 spec, class ``session``: attach, attached, detach, detached,
request-timeout, timeout, command-point, expected, confirmed, completed, known-completed,
flush, gap; class ``execution``: sync, result, exception).

Each control is dispatched by :data:`SESSION_TABLE` to its handler here. A control other
than attach, attached, detach and detached on a channel without a session is discarded and
answered with ``session.detached`` ``not-attached`` (0-10 spec, class ``session``, rule
"attachment"); a command there likewise, and a command before the peer's
``command-point`` with ``unknown-ids``. A command that cannot be decoded is refused with
``execution.exception`` (503 ``command-invalid``, or 540 ``not-implemented`` for an unknown
code), after which the session is detached and not kept.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...codec.amqp010.errors import DecodeError, UnknownCodeError
from ...codec.kept import Kept
from ...definitions import amqp010 as spec
from ...framing.amqp010 import Assembly, SegmentType, Track
from .core import ConnectionCore, DetachCode
from .events import (
    CommandReceived,
    CommandsCompleted,
    ExecutionExceptionReceived,
    ResultReceived,
    SessionAttached,
    SessionResumed,
)
from .session import DUPLICATE, Session
from .states import SessionState

__all__ = ["CONNECTION_CONTROLS", "ErrorCode", "SESSION_TABLE", "SessionDispatch"]


ErrorCode = spec.ExecutionErrorCode

#: The session controls and their handlers; those marked True need an attached session
#: on the channel.
SESSION_TABLE: dict[type[spec.Control], tuple[str, bool]] = {
    spec.SessionAttach: ("_on_attach", False),
    spec.SessionAttached: ("_on_attached", False),
    spec.SessionDetach: ("_on_detach", False),
    spec.SessionDetached: ("_on_detached", False),
    spec.SessionRequestTimeout: ("_on_request_timeout", True),
    spec.SessionTimeout: ("_on_timeout", True),
    spec.SessionCommandPoint: ("_on_command_point", True),
    spec.SessionExpected: ("_on_ignored", True),
    spec.SessionConfirmed: ("_on_ignored", True),
    spec.SessionCompleted: ("_on_completed", True),
    spec.SessionKnownCompleted: ("_on_known_completed", True),
    spec.SessionFlush: ("_on_flush", True),
    spec.SessionGap: ("_on_gap", True),
}

_COMMAND = int(SegmentType.COMMAND)
#: Header segments decoded already, by their octets: those of 512 octets or less whose
#: structs are immutable (no map inside), at most 256 of them (the messages of a sender
#: mostly share their header).
_headers: Kept[bytes, tuple[spec.Struct, ...]] = Kept()


def _decode_header(payload: bytes) -> tuple[spec.Struct, ...]:
    """``decode_header``, once per header of immutable structs (see :data:`_headers`)."""
    header = _headers.get(payload)
    if header is not None:
        return header
    header = spec.decode_header(payload)
    try:
        hash(header)
    except TypeError:  # (a map inside: each message gets its own)
        return header
    return _headers.keep(payload, len(payload), header)


CONNECTION_CONTROLS = tuple(
    control
    for control in vars(spec).values()
    if isinstance(control, type)
    and issubclass(control, spec.Control)
    and control is not spec.Control
    and control.NAME.startswith("connection.")
)


def _ranges(value: Sequence[tuple[int, int]] | None) -> list[tuple[int, int]]:
    return list(value or ())


class SessionDispatch(ConnectionCore):
    """The session controls and the commands of a connection."""

    # -- sending --------------------------------------------------------------------------

    def _session_control(self, session: Session, control: spec.Control) -> None:
        self._control(session.channel, control)

    def _send_segments(self, session: Session, segments: list[tuple[int, bytes]]) -> int:
        command_id = session.sent(segments)
        self._frames(session.channel, Track.COMMAND, segments)
        return command_id

    def _announce(self, session: Session, *, resumed: bool) -> None:
        """The session is attached: our ``command-point`` (0-10 spec,
        ``session.command-point``: before any command on a newly attached transport), the
        replay of what the peer had not completed (a ``command-point`` again past each run of
        ids it completed, and before the next new command), and the completions it may have
        missed."""
        session.state = SessionState.ATTACHED
        pending = session.unreplayed()
        point = None
        for command_id, segments in pending:
            if command_id != point:  # a gap: the peer completed those between
                self._command_point(session, command_id)
            self._frames(session.channel, Track.COMMAND, segments)
            point = command_id + 1
        if point != session.next_out:
            self._command_point(session, session.next_out)
        if resumed:
            session.resend_completed()
            self._report(
                SessionResumed(session=session.name, channel=session.channel, replayed=len(pending))
            )
        else:
            self._report(SessionAttached(session=session.name, channel=session.channel))

    def _command_point(self, session: Session, command_id: int) -> None:
        self._session_control(
            session, spec.SessionCommandPoint(command_id=command_id & 0xFFFFFFFF, command_offset=0)
        )

    def _refuse_command(
        self, session: Session, code: int, text: str, command_id: int | None
    ) -> None:
        """``execution.exception`` for the peer's command, then ``session.detach``: the
        session is not kept."""
        exception = spec.ExecutionException(
            error_code=code,
            command_id=None if command_id is None else command_id & 0xFFFFFFFF,
            description=text[:65535],
        )
        self._send_segments(session, [(_COMMAND, spec.encode_command(exception))])
        session.failed = True
        self._detach(session)

    def _detach(self, session: Session) -> None:
        session.state = SessionState.DETACHING
        self._session_control(session, spec.SessionDetach(name=session.name))

    def flush_completions(self) -> None:
        """Send what each attached session owes: ``session.completed`` for the commands
        completed since the last (coalesced into one set, ``timely-reply`` set so that the
        peer's ``known-completed`` comes back and the set stays small), and
        ``known-completed`` for the peer's ``completed`` when it asked for a timely reply
        (0-10 spec, rules "known-completed-reply", "merged-reply")."""
        for session in list(self._sessions.values()):
            if session.state is not SessionState.ATTACHED:
                continue
            completed = session.take_completed()
            if completed is not None:
                # timely-reply: the peer's known-completed lets this set shrink
                self._session_control(
                    session, spec.SessionCompleted(commands=completed, timely_reply=True)
                )
            known = session.take_known_completed()
            if known is not None:
                self._session_control(session, spec.SessionKnownCompleted(commands=known))

    # -- receiving ------------------------------------------------------------------------

    def _dispatch_session_control(self, channel: int, control: spec.Control) -> None:
        handler, needs_session = SESSION_TABLE[type(control)]
        session = self._sessions.get(channel)
        if needs_session and (session is None or session.state is not SessionState.ATTACHED):
            if session is None:
                self._not_attached(channel)
            return
        getattr(self, handler)(channel, session, control)

    def _not_attached(self, channel: int, name: bytes = b"") -> None:
        self._control(channel, spec.SessionDetached(name=name, code=DetachCode.NOT_ATTACHED))

    # session controls

    def _on_attach(
        self, channel: int, session: Session | None, control: spec.SessionAttach
    ) -> None:
        name = bytes(control.name or b"")
        if session is not None:
            if session.name == name and session.state is SessionState.ATTACHED:
                self._control(channel, spec.SessionAttached(name=name))  # rule "idempotence"
            elif session.name != name:
                self._control(
                    channel, spec.SessionDetached(name=name, code=DetachCode.TRANSPORT_BUSY)
                )
            return
        other = self._names.get(name)
        if other is not None:
            if not control.force:
                self._control(
                    channel, spec.SessionDetached(name=name, code=DetachCode.SESSION_BUSY)
                )
                return
            self._session_gone(self._sessions[other], other, DetachCode.SESSION_BUSY, by_peer=True)
        kept = self.store.take((self.identity, name), self._now)
        session = kept if kept is not None else Session(name, channel, self.identity)
        session.channel = channel
        self._sessions[channel] = session
        self._names[name] = channel
        self._control(channel, spec.SessionAttached(name=name))
        self._announce(session, resumed=kept is not None)

    def _on_attached(
        self, channel: int, session: Session | None, control: spec.SessionAttached
    ) -> None:
        if session is not None and session.state is SessionState.ATTACHING:
            if session.requested_timeout:
                self._session_control(
                    session, spec.SessionRequestTimeout(timeout=session.requested_timeout)
                )
            self._announce(session, resumed=session.resuming)

    def _on_detach(
        self, channel: int, session: Session | None, control: spec.SessionDetach
    ) -> None:
        name = bytes(control.name or b"")
        if session is None or session.name != name:
            self._not_attached(channel, name)
            return
        self._control(channel, spec.SessionDetached(name=name, code=DetachCode.NORMAL))
        self._session_gone(session, channel, DetachCode.NORMAL, by_peer=True)

    def _on_detached(
        self, channel: int, session: Session | None, control: spec.SessionDetached
    ) -> None:
        if session is not None and session.name == bytes(control.name or b""):
            by_peer = session.state is not SessionState.DETACHING
            code = None if control.code is None else int(control.code)
            self._session_gone(session, channel, code, by_peer=by_peer)

    def _on_request_timeout(
        self, channel: int, session: Session, control: spec.SessionRequestTimeout
    ) -> None:
        # session.request-timeout rule "maximum-granted-timeout"
        limit = self.limits.max_session_timeout
        asked = control.timeout
        session.timeout = limit if asked is None else min(asked, limit)
        self._session_control(session, spec.SessionTimeout(timeout=session.timeout))

    def _on_timeout(self, channel: int, session: Session, control: spec.SessionTimeout) -> None:
        granted = control.timeout
        asked = session.requested_timeout
        session.timeout = asked if granted is None else min(granted, asked)

    def _on_command_point(
        self, channel: int, session: Session, control: spec.SessionCommandPoint
    ) -> None:
        session.command_point(control.command_id or 0)

    def _on_ignored(self, channel: int, session: Session, control: spec.Control) -> None:
        """``expected`` and ``confirmed``: the engine replays every command not completed,
        so it needs neither (0-10 spec, ``session.confirmed``: a simple implementation
        takes no action)."""

    def _on_completed(self, channel: int, session: Session, control: spec.SessionCompleted) -> None:
        done = session.peer_completed(_ranges(control.commands), timely=bool(control.timely_reply))
        if done:
            self._report(CommandsCompleted(session=session.name, command_ids=tuple(done)))

    def _on_known_completed(
        self, channel: int, session: Session, control: spec.SessionKnownCompleted
    ) -> None:
        session.known_completed(_ranges(control.commands))

    def _on_flush(self, channel: int, session: Session, control: spec.SessionFlush) -> None:
        if control.expected:
            self._session_control(session, spec.SessionExpected(commands=session.expected()))
        if control.confirmed:
            self._session_control(
                session, spec.SessionConfirmed(commands=session.completed_ranges())
            )
        if control.completed:
            session.take_completed()
            self._session_control(
                session, spec.SessionCompleted(commands=session.completed_ranges())
            )

    def _on_gap(self, channel: int, session: Session, control: spec.SessionGap) -> None:
        session.gap(_ranges(control.commands))

    # commands

    def _command(self, assembly: Assembly) -> None:
        channel = assembly.channel
        session = self._sessions.get(channel)
        if session is None:
            self._not_attached(channel)
            return
        if session.state is not SessionState.ATTACHED:
            return  # detaching: what was in flight is dropped
        if not session.numbered:
            # session.command-point rule "newly-attached-transports"
            self._control(
                channel, spec.SessionDetached(name=session.name, code=DetachCode.UNKNOWN_IDS)
            )
            self._session_gone(session, channel, DetachCode.UNKNOWN_IDS, by_peer=False)
            return
        command_id = session.next_incoming()
        if command_id == DUPLICATE:
            return
        segments = assembly.segments
        try:
            command, sync = spec.decode_command(segments[0].payload)
            header: tuple[spec.Struct, ...] = ()
            octets = body = b""
            for segment in segments[1:]:
                if segment.type == SegmentType.HEADER:
                    octets = segment.payload
                    header = _decode_header(octets)
                else:
                    body = segment.payload
        except UnknownCodeError as exc:
            self._refuse_command(session, ErrorCode.NOT_IMPLEMENTED, exc.description, command_id)
            return
        except DecodeError as exc:
            self._refuse_command(session, ErrorCode.COMMAND_INVALID, exc.description, command_id)
            return
        if session.incomplete_count > self.limits.max_incomplete_commands:
            self._refuse_command(
                session,
                ErrorCode.RESOURCE_LIMIT_EXCEEDED,
                f"more than {self.limits.max_incomplete_commands} commands not completed",
                command_id,
            )
            return
        name = session.name
        if isinstance(command, spec.ExecutionSync):
            session.sync_received(command_id)
        elif isinstance(command, spec.ExecutionResult):
            session.complete(command_id)
            self._report(
                ResultReceived(session=name, command_id=command.command_id, value=command.value)
            )
        elif isinstance(command, spec.ExecutionException):
            session.complete(command_id)
            session.failed = True
            self._report(ExecutionExceptionReceived(session=name, exception=command))
        else:
            self._report(
                CommandReceived(
                    session=name,
                    command_id=command_id & 0xFFFFFFFF,
                    command=command,
                    sync=sync,
                    header=header,
                    header_octets=octets,
                    body=body,
                )
            )
