"""The AMQP 0-10 connection, both roles, without I/O (0-10 spec, classes ``connection``,
``session`` and ``execution``; 4.2 for the protocol header, 4.4 for frames, segments and
assemblies).

The caller moves bytes and time, on the one engine contract every protocol meets
(:class:`amqp_sansio.engine.contract.ProtocolEngine`; docs/architecture.rst, "The engine
contract"): ``receive_data(data, now)`` with what arrived (``b""`` when the stream ended)
and ``handle_timer(now)`` give what happened, ``data_to_send()`` what to write,
``next_deadline()`` when to call ``handle_timer``. The application's calls raise or queue
frames; an event one of them causes comes back from the next ``receive_data`` or
``handle_timer``. The engine answers by itself what the protocol answers: the negotiation
and the login (through :mod:`amqp_sansio.security.mechanisms`), heartbeats, the close
handshake, the session controls, ``execution.sync``; it numbers commands, tracks the
completion of both directions, and keeps a detached session for its time-out so that it
resumes (its commands the peer had not completed replayed).

Errors follow the project's rule. The caller's mistakes raise
:class:`~amqp_sansio.errors.LocalProtocolError` and send nothing. Nothing the peer sends
raises: a fault of the connection's protocol closes it with its ``connection.close-code``
(501 ``framing-error`` for bytes that are not frames), a fault of a session is answered
with ``session.detached`` or ``execution.exception``; each is reported as an event.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from ...codec.amqp010.errors import DecodeError
from ...definitions import amqp010 as spec
from ...errors import LocalProtocolError
from ...framing.amqp010 import PROTOCOL_HEADER, Assembly, FramingError, SegmentType, Track
from ..liveness import Due
from .core import CloseCode, PeerError
from .events import Event, SessionExpired
from .handshake import Handshake
from .session import Session
from .sessions import CONNECTION_CONTROLS, SessionDispatch
from .states import PHASES, ConnectionState, Limits, Role, SessionState

__all__ = ["Connection", "ConnectionState", "Limits", "Role"]

_S = ConnectionState
_HEADER_SIZE = len(PROTOCOL_HEADER)
_COMMAND, _HEADER, _BODY = SegmentType.COMMAND, SegmentType.HEADER, SegmentType.BODY

#: Commands the engine sends itself, or through its own calls.
_ENGINE_COMMANDS = (spec.ExecutionResult, spec.ExecutionException)


def _header_octets(header: Sequence[spec.Struct] | bytes) -> bytes:
    """A command's header segment (0-10 spec 4.4; ``encode_header``), or the segment as
    given, encoded already. A header of delivery properties alone, every field of which is
    immutable, is encoded once per value (the messages of a sender mostly share theirs);
    any other each time."""
    if isinstance(header, bytes):
        return header
    if len(header) == 1 and type(header[0]) is spec.DeliveryProperties:
        try:
            return _delivery_header(header[0])
        except TypeError:  # (a field of the wrong type, unhashable: encode_header says so)
            pass
    return spec.encode_header(header)


def _command_octets(command: spec.Command, sync: bool) -> bytes:
    """A command's segment (``encode_command``). A ``message.transfer``, every field of
    which is immutable, is encoded once per value (a subscription's transfers share
    theirs); any other command each time."""
    if type(command) is spec.MessageTransfer:
        try:
            return _transfer_octets(command, sync)
        except TypeError:  # (a field of the wrong type, unhashable: encode_command says so)
            pass
    return spec.encode_command(command, sync=sync)


@functools.lru_cache(maxsize=256)
def _transfer_octets(command: spec.Command, sync: bool) -> bytes:
    return spec.encode_command(command, sync=sync)


@functools.lru_cache(maxsize=256)
def _delivery_header(properties: spec.DeliveryProperties) -> bytes:
    return spec.encode_header((properties,))


def _name(session: str | bytes) -> bytes:
    if type(session) is bytes:
        return session
    return session.encode() if isinstance(session, str) else bytes(session)


class Connection(Handshake, SessionDispatch):
    """One AMQP 0-10 connection, client or server role, I/O-free.

    Client role: ``virtual_host``; ``mechanism`` (a name, ``"PLAIN"``, ``"ANONYMOUS"``
    or ``"EXTERNAL"``, made with ``username`` and ``password``; several names, preferred
    first, of which the first the server offers is used; or a
    :class:`~amqp_sansio.security.mechanisms.SASLClientMechanism`); ``heartbeat``, the
    delay asked for (seconds, 0: none), brought into the server's range. Server role:
    ``authenticator`` (a :class:`~amqp_sansio.security.mechanisms.ServerAuthenticator`;
    by default one offering ANONYMOUS only) and ``heartbeat_range`` (the
    ``heartbeat-min``/``heartbeat-max`` of ``connection.tune``; None: no heartbeats).
    Both: ``properties`` (over the engine's ``product``, ``platform``, ``information``),
    ``locale``, the :class:`~amqp_sansio.engine.amqp010.Limits`, and ``sessions``, the
    :class:`~amqp_sansio.engine.amqp010.SessionStore` where detached sessions wait to be
    resumed (one per connection by default; share one across connections to resume a
    session on a new transport).
    """

    # -- the caller's side: bytes, time, events --------------------------------------------

    @property
    def closed(self) -> bool:
        """True once the connection has ended: nothing more is read or sent (flush
        :meth:`data_to_send` one last time)."""
        return self.state is _S.CLOSED

    def start(self, now: float) -> None:
        """Start the clock (the handshake time-out runs from here); a client also writes
        the protocol header (0-10 spec 4.2), a server waits for the client's."""
        if self._liveness.started is not None:
            raise LocalProtocolError("start() was called already")
        self._now = now
        self._liveness.start(now)
        if self.role is Role.CLIENT:
            self._write(PROTOCOL_HEADER)
            self.state = _S.AWAIT_START

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        """Take bytes from the peer (``b""``: the stream ended) and give what happened,
        with the events the application's calls queued since the last call first. Never
        raises for what the peer sent: its faults are answered on the wire and reported."""
        if self.state is not _S.CLOSED:
            self._receive(bytes(data), now)
        return self._take_events()

    def _receive(self, data: bytes, now: float) -> None:
        if self._liveness.started is None:
            self.start(now)
        self._now = now
        if not data:
            self._stream_ended()
            return
        self._liveness.received(now)
        if len(self._header) < _HEADER_SIZE:
            want = _HEADER_SIZE - len(self._header)
            self._header += data[:want]
            data = data[want:]
            if len(self._header) < _HEADER_SIZE:
                return
            self._on_protocol_header(bytes(self._header))
            if self.closed or not data:
                return
        error: FramingError | None = None
        try:
            assemblies = self._parser.feed(data)
        except FramingError as exc:
            assemblies, error = list(exc.assemblies), exc
        for assembly in assemblies:
            try:
                self._assembly(assembly)
            except PeerError as exc:
                self._fail(exc.code, exc.text)
            if self.state is _S.CLOSED:
                return
        if error is not None:
            self._fail(CloseCode.FRAMING_ERROR, error.description, broken=True)

    def _assembly(self, assembly: Assembly) -> None:
        """One control or command from the peer (0-10 spec 4.4: a control assembly is one
        control segment on track 0; a command assembly a command segment, then optionally
        a header and a body segment, on track 1)."""
        segments = assembly.segments
        if assembly.track == Track.CONTROL:
            try:
                control = spec.decode_control(segments[0].payload)
            except DecodeError as exc:
                raise PeerError(CloseCode.FRAMING_ERROR, exc.description) from None
            if isinstance(control, CONNECTION_CONTROLS):
                self._connection_control(control)
            elif self._usable(assembly.channel):
                self._dispatch_session_control(assembly.channel, control)
        elif self._usable(assembly.channel):
            self._command(assembly)

    def _usable(self, channel: int) -> bool:
        """Whether a session control or command on ``channel`` is taken now: only on an open
        connection (discarded while closing) and a channel under channel-max."""
        state = self.state
        if state is ConnectionState.CLOSING:
            return False
        if state is not ConnectionState.OPEN:
            raise PeerError(
                CloseCode.CONNECTION_FORCED,
                f"session traffic is not allowed when the connection is {state.value}",
            )
        if channel >= self.channel_max:
            raise PeerError(
                CloseCode.FRAMING_ERROR,
                f"channel {channel} is not under the channel-max {self.channel_max}",
            )
        return True

    def _fail(self, code: int, text: str, *, broken: bool = False) -> None:
        """The peer broke the protocol: our ``connection.close`` with ``code``. When the
        bytes can no longer be read (``broken``), the connection ends at once."""
        if self.state is not _S.CLOSING:
            self._send_close(code, text)
        if broken:
            self._end(code, text, by_peer=False)

    def _stream_ended(self) -> None:
        if self.state is _S.CLOSING:
            self._end_closing()
        else:
            self._end(
                CloseCode.CONNECTION_FORCED,
                f"the peer ended the stream without connection.close ({self.state.value})",
                by_peer=True,
            )

    def _take_events(self) -> list[Event]:
        events, self._events = self._events, []
        return events

    def data_to_send(self) -> bytes:
        """What to write to the peer, drained: first the completions each session owes
        (``session.completed``, ``known-completed``: coalesced until now)."""
        if self.state is _S.OPEN:
            self.flush_completions()
        out, self._out = self._out, []
        return b"".join(out)

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must be called next: a heartbeat to send, the peer's
        silence to check, the handshake or close time-out, a detached session's
        expiry; None for nothing."""
        if self.state is _S.CLOSED or self._liveness.started is None:
            return None
        deadlines = [
            self._liveness.next_deadline(
                PHASES[self.state], self.heartbeat, self.limits.handshake_timeout
            ),
            self.store.next_expiry(),
        ]
        return min((d for d in deadlines if d is not None), default=None)

    def handle_timer(self, now: float) -> list[Event]:
        """Do what is due at ``now`` and give what happened: send ``connection.heartbeat``
        when nothing was sent for half the heartbeat; end the connection when nothing
        arrived for twice the heartbeat (0-10 spec, ``connection.heartbeat``), when the
        handshake took longer than the limit, or when the peer did not answer our close in
        time; forget the detached sessions whose time-out passed (SessionExpired; a
        connection that has ended does nothing more, and the sessions it kept expire on the
        next connection sharing its store)."""
        self._now = now
        if self.state is not _S.CLOSED and self._liveness.started is not None:
            for session in self.store.expire(now):
                self._report(SessionExpired(session=session.name))
            self._tick(now)
        return self._take_events()

    def _tick(self, now: float) -> None:
        due, text = self._liveness.due(
            now, PHASES[self.state], self.heartbeat, self.limits.handshake_timeout
        )
        if due is Due.CLOSE_TIMEOUT:
            self._end_closing()
        elif due is Due.HEARTBEAT:
            self._control(0, spec.ConnectionHeartbeat())
        elif due is not Due.NOTHING:  # the peer's silence, or a handshake too long
            self._end(CloseCode.CONNECTION_FORCED, text, by_peer=False)

    @property
    def login_mechanism(self) -> str | None:
        """Server role: the SASL mechanism the client chose (``connection.start-ok``), or
        None before it did."""
        return None if self._login is None else self._login.name

    # -- the connection's own calls -------------------------------------------------------

    def _check_state(self, state: ConnectionState, what: str) -> None:
        if self.state is not state:
            raise LocalProtocolError(
                f"{what} is not allowed when the connection is {self.state.value}"
            )

    def accept_open(self, known_hosts: Sequence[str] = ()) -> None:
        """Server role, after OpenRequested: ``connection.open-ok`` (with ``known_hosts``);
        ConnectionOpened follows."""
        self._check_state(_S.OPEN_PENDING, "accept_open()")
        self.known_hosts = tuple(known_hosts)
        self._control(0, spec.ConnectionOpenOk(known_hosts=list(known_hosts)))
        self._opened()

    def redirect(self, host: str, known_hosts: Sequence[str] = ()) -> None:
        """Server role, after OpenRequested without ``insist``: ``connection.redirect`` to
        ``host``; the connection ends (0-10 spec, ``connection.redirect``)."""
        self._check_state(_S.OPEN_PENDING, "redirect()")
        if self._insist:
            raise LocalProtocolError("the client insists: it may not be redirected")
        self._control(0, spec.ConnectionRedirect(host=host, known_hosts=list(known_hosts)))
        self._end(CloseCode.NORMAL, f"redirected to {host}", by_peer=False)

    def close(self, reply_code: int = CloseCode.NORMAL, reply_text: str = "") -> None:
        """Begin the close handshake (``connection.close``; a server refuses an open with
        402 ``invalid-path`` so); ConnectionClosed follows the peer's ``close-ok``. Before
        anything was sent the connection simply ends."""
        if self.state in (_S.CLOSING, _S.CLOSED):
            return
        if self.state is _S.NEW:
            self._end(int(reply_code), reply_text, by_peer=False)
            return
        self._send_close(int(reply_code), reply_text)

    # -- sessions -------------------------------------------------------------------------

    def session(self, name: str | bytes) -> Session:
        """The state of the session ``name`` on this connection (raises
        :class:`KeyError` for one not here)."""
        return self._sessions[self._names[_name(name)]]

    @property
    def sessions(self) -> dict[bytes, Session]:
        """The sessions on this connection (attaching, attached or detaching), by name."""
        return {name: self._sessions[channel] for name, channel in self._names.items()}

    def _free_channel(self) -> int:
        self._check_state(_S.OPEN, "attaching a session")
        for channel in range(1, self.channel_max):
            if channel not in self._sessions:
                return channel
        raise LocalProtocolError(f"all {self.channel_max - 1} channels are in use")

    def attach(self, name: str | bytes, *, timeout: int = 0, force: bool = False) -> int:
        """Attach a new session ``name`` on the lowest free channel (``session.attach``),
        asking that its state be kept ``timeout`` seconds once detached
        (``session.request-timeout``); gives the channel. SessionAttached follows (or
        SessionDetached, when the server refuses)."""
        return self._attach(_name(name), timeout, force, None)

    def resume(self, name: str | bytes, *, force: bool = False) -> int:
        """Attach the detached session ``name`` again (kept in :attr:`store`): our commands
        the peer had not completed are replayed once attached; SessionResumed follows."""
        key = (self.identity, _name(name))
        if key not in self.store:
            raise LocalProtocolError(f"no detached session {key[1]!r} is kept to resume")
        self._free_channel()
        kept = self.store.take(key, self._now)
        if kept is None:
            raise LocalProtocolError(f"the session {key[1]!r} has expired")
        return self._attach(key[1], kept.requested_timeout, force, kept)

    def _attach(self, name: bytes, timeout: int, force: bool, kept: Session | None) -> int:
        if not 0 <= timeout <= 0xFFFFFFFF:
            raise LocalProtocolError(f"timeout {timeout} is not a uint32")
        if name in self._names:
            raise LocalProtocolError(f"the session {name!r} is on this connection already")
        if len(name) > 0xFFFF:
            raise LocalProtocolError("a session name is at most 65535 octets (vbin16)")
        channel = self._free_channel()
        session = kept if kept is not None else Session(name, channel, self.identity)
        session.channel = channel
        session.state = SessionState.ATTACHING
        session.requested_timeout = timeout
        session.resuming = kept is not None
        self._sessions[channel] = session
        self._names[name] = channel
        self._control(channel, spec.SessionAttach(name=name, force=force))
        return channel

    def detach(self, name: str | bytes, *, keep: bool = True) -> None:
        """Detach the session ``name`` (``session.detach``); with ``keep`` false, first ask
        that its state not be kept (``session.request-timeout`` 0, how a 0-10 session
        ends). SessionDetached follows the peer's ``detached``."""
        session = self._attached(name, "detach")
        if not keep:
            session.timeout = session.requested_timeout = 0
            self._session_control(session, spec.SessionRequestTimeout(timeout=0))
        self._detach(session)

    def _attached(self, name: str | bytes, what: str) -> Session:
        self._check_state(_S.OPEN, what)
        channel = self._names.get(_name(name))
        session = None if channel is None else self._sessions[channel]
        if session is None or session.state is not SessionState.ATTACHED:
            raise LocalProtocolError(f"cannot {what}: the session {name!r} is not attached")
        return session

    # -- commands -------------------------------------------------------------------------

    def send_command(
        self,
        session: str | bytes,
        command: spec.Command,
        *,
        header: Sequence[spec.Struct] | bytes = (),
        body: bytes = b"",
        sync: bool = False,
    ) -> int:
        """Send ``command`` on ``session`` (with ``header`` structs and ``body`` octets: a
        ``message.transfer``'s; ``header`` may be its segment encoded already, as
        :func:`~amqp_sansio.definitions.amqp010.encode_header` encodes it, which is sent as
        it is), its segments split into frames of max-frame-size (0-10
        spec 4.4); gives its command id. The engine keeps it until the peer completes it
        (CommandsCompleted); ``sync`` asks the peer to say so at once."""
        ssn = self._attached(session, f"send {getattr(command, 'NAME', command)!r}")
        if not isinstance(command, spec.Command):
            raise LocalProtocolError(f"{command!r} is not a 0-10 command")
        if isinstance(command, _ENGINE_COMMANDS):
            raise LocalProtocolError(
                f"{command.NAME} is sent with send_result() or send_exception()"
            )
        segments: list[tuple[int, bytes]] = [(_COMMAND, _command_octets(command, sync))]
        if header:
            segments.append((_HEADER, _header_octets(header)))
        if body:
            segments.append((_BODY, body if type(body) is bytes else bytes(body)))
        return self._queue_command(ssn, segments)

    def _queue_command(self, session: Session, segments: list[tuple[int, bytes]]) -> int:
        size = sum(len(payload) for _, payload in segments)
        limit = self.limits.max_outstanding_bytes
        if session.outstanding_bytes and session.outstanding_bytes + size > limit:
            raise LocalProtocolError(
                f"the session's commands not completed by the peer would pass "
                f"{limit} octets: wait for CommandsCompleted"
            )
        return self._send_segments(session, segments)

    def complete(self, session: str | bytes, command_id: int) -> None:
        """The peer's command ``command_id`` (of a CommandReceived) is done: it is in the
        next ``session.completed`` (0-10 spec, ``session.completed``; several are sent as
        one set, when the bytes are next drained)."""
        ssn = self._attached(session, "complete a command")
        found = ssn.incoming_id(command_id)
        if found is None:
            raise LocalProtocolError(
                f"command {command_id} of {ssn.name!r} was not received or is complete"
            )
        ssn.complete(found)

    def send_result(self, session: str | bytes, command_id: int, value: spec.Struct) -> None:
        """``execution.result`` with ``value`` for the peer's command ``command_id`` (0-10
        spec, ``execution.result``): before completing it."""
        ssn = self._attached(session, "send a result")
        if ssn.incoming_id(command_id) is None:
            raise LocalProtocolError(
                f"command {command_id} of {ssn.name!r} was not received or is complete"
            )
        result = spec.ExecutionResult(command_id=command_id, value=value)
        self._queue_command(ssn, [(_COMMAND, spec.encode_command(result))])

    def send_exception(
        self,
        session: str | bytes,
        error_code: int,
        *,
        command_id: int | None = None,
        description: str = "",
    ) -> None:
        """``execution.exception`` (0-10 spec, ``execution.exception``) with ``error_code``
        (an ``execution.error-code``), for the peer's command ``command_id`` if given;
        then the session is detached and its state not kept."""
        ssn = self._attached(session, "send an exception")
        if command_id is not None and ssn.incoming_id(command_id) is None:
            raise LocalProtocolError(
                f"command {command_id} of {ssn.name!r} was not received or is complete"
            )
        self._refuse_command(ssn, int(error_code), description, command_id)
