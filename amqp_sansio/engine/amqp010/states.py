"""The AMQP 0-10 engine's roles, limits and states: the connection's states and its
transition table (0-10 spec, class ``connection``: its grammar ``open-connection``,
``close-connection``), and a session's states (class ``session``: attach, attached,
detach, detached). :class:`~amqp_sansio.engine.amqp010.Connection` dispatches every
connection control by the table; a control not in it for the state is refused.
"""

from __future__ import annotations

import enum

import attrs

from ...definitions import amqp010 as spec
from ...errors import LocalProtocolError
from ..contract import Role
from ..liveness import phases

__all__ = [
    "MIN_MAX_FRAME_SIZE",
    "PHASES",
    "ROLE_STATES",
    "TABLE",
    "ConnectionState",
    "Limits",
    "Role",
    "SessionState",
]

#: The smallest max-frame-size a connection may agree (0-10 spec, constant
#: ``MIN-MAX-FRAME-SIZE``); frames up to it are accepted before ``connection.tune``.
MIN_MAX_FRAME_SIZE = 4096


@attrs.frozen(kw_only=True)
class Limits:
    """What the engine proposes and accepts (each default is in docs/defaults.rst, "AMQP
    0-10 engine").

    * ``max_frame_size``: the largest frame proposed or agreed (65535, the largest the
      ``uint16`` of ``connection.tune`` carries; at least 4096, ``MIN-MAX-FRAME-SIZE``);
    * ``max_channels``: channel-max proposed or agreed (2047), so at most that many
      sessions are attached at once;
    * ``max_assembly_size``: the largest command (its segments together) accepted from the
      peer (128 MiB); a larger one closes the connection with 501 ``framing-error``;
    * ``max_outstanding_bytes``: per session, the octets of our commands the peer has not
      completed yet, which the engine keeps to replay on resume (64 MiB): a
      ``send_command`` over it raises, until CommandsCompleted frees room;
    * ``max_incomplete_commands``: per session, the peer's commands the application has
      not completed yet (65536); one more is refused with ``execution.exception``
      506 ``resource-limit-exceeded``;
    * ``max_session_timeout``: the longest time a detached session's state is kept, in
      seconds (3600): a ``session.request-timeout`` for more is granted this;
    * ``max_detached_sessions``: detached sessions kept for resuming (1024); the oldest
      beyond it is forgotten;
    * ``handshake_timeout``: seconds from the start to the connection open, and from our
      ``connection.close`` to the peer's ``close-ok`` (10 s); 0: none.
    """

    max_frame_size: int = 65535
    max_channels: int = 2047
    max_assembly_size: int = 128 * 1024 * 1024
    max_outstanding_bytes: int = 64 * 1024 * 1024
    max_incomplete_commands: int = 65536
    max_session_timeout: int = 3600
    max_detached_sessions: int = 1024
    handshake_timeout: float = 10.0

    def __attrs_post_init__(self) -> None:
        if not MIN_MAX_FRAME_SIZE <= self.max_frame_size <= 0xFFFF:
            raise LocalProtocolError(
                f"max_frame_size {self.max_frame_size} is not between "
                f"{MIN_MAX_FRAME_SIZE} and 65535 (0-10 spec, connection.tune)"
            )
        if not 1 <= self.max_channels <= 0xFFFF:
            raise LocalProtocolError(f"max_channels {self.max_channels} is not between 1 and 65535")
        for name in (
            "max_assembly_size",
            "max_outstanding_bytes",
            "max_incomplete_commands",
            "max_detached_sessions",
        ):
            if getattr(self, name) < 1:
                raise LocalProtocolError(f"{name} must be at least 1")
        if not 0 <= self.max_session_timeout <= 0xFFFFFFFF:
            raise LocalProtocolError(
                f"max_session_timeout {self.max_session_timeout} is not a uint32"
            )
        if self.handshake_timeout < 0:
            raise LocalProtocolError("handshake_timeout must not be negative")


class ConnectionState(enum.Enum):
    """Where the connection is in its life (0-10 spec, class ``connection``)."""

    #: client: ``start()`` not called yet; server: waiting for the protocol header
    NEW = "new"
    #: client: header sent, waiting for the server's header and ``connection.start``
    AWAIT_START = "await-start"
    #: server: ``connection.start`` sent, waiting for ``start-ok``
    AWAIT_START_OK = "await-start-ok"
    #: server: ``connection.secure`` sent, waiting for ``secure-ok``
    AWAIT_SECURE_OK = "await-secure-ok"
    #: client: ``start-ok`` sent, waiting for ``secure`` or ``tune``
    AWAIT_TUNE = "await-tune"
    #: server: ``connection.tune`` sent, waiting for ``tune-ok``
    AWAIT_TUNE_OK = "await-tune-ok"
    #: server: waiting for ``connection.open``
    AWAIT_OPEN = "await-open"
    #: server: OpenRequested reported, waiting for ``accept_open``/``redirect``/``close``
    OPEN_PENDING = "open-pending"
    #: client: ``tune-ok`` and ``open`` sent, waiting for ``open-ok`` or ``redirect``
    AWAIT_OPEN_OK = "await-open-ok"
    OPEN = "open"
    #: our ``connection.close`` sent, waiting for ``close-ok``
    CLOSING = "closing"
    CLOSED = "closed"


class SessionState(enum.Enum):
    """Where a session's attachment to a channel is (0-10 spec, class ``session``)."""

    #: client: ``session.attach`` sent, waiting for ``attached``
    ATTACHING = "attaching"
    ATTACHED = "attached"
    #: our ``session.detach`` sent, waiting for ``detached``
    DETACHING = "detaching"
    #: not on a transport: its state kept for its timeout, to be resumed
    DETACHED = "detached"


_S = ConnectionState

#: The clocks' :class:`~amqp_sansio.engine.liveness.Phase` of each state.
PHASES = phases(ConnectionState, opened=_S.OPEN, closing=_S.CLOSING, closed=_S.CLOSED)

#: The states each role goes through, in order.
ROLE_STATES: dict[Role, tuple[ConnectionState, ...]] = {
    Role.CLIENT: (
        _S.NEW,
        _S.AWAIT_START,
        _S.AWAIT_TUNE,
        _S.AWAIT_OPEN_OK,
        _S.OPEN,
        _S.CLOSING,
        _S.CLOSED,
    ),
    Role.SERVER: (
        _S.NEW,
        _S.AWAIT_START_OK,
        _S.AWAIT_SECURE_OK,
        _S.AWAIT_TUNE_OK,
        _S.AWAIT_OPEN,
        _S.OPEN_PENDING,
        _S.OPEN,
        _S.CLOSING,
        _S.CLOSED,
    ),
}

#: The connection's transition table: the ``connection`` controls each (role, state)
#: takes and the handler each goes to. One not in it closes the connection (320
#: ``connection-forced``); in ``CLOSING`` everything not in it is discarded.
TABLE: dict[tuple[Role, ConnectionState, type[spec.Control]], str] = {
    (Role.CLIENT, _S.AWAIT_START, spec.ConnectionStart): "_on_start",
    (Role.CLIENT, _S.AWAIT_TUNE, spec.ConnectionSecure): "_on_secure",
    (Role.CLIENT, _S.AWAIT_TUNE, spec.ConnectionTune): "_on_tune",
    (Role.CLIENT, _S.AWAIT_OPEN_OK, spec.ConnectionOpenOk): "_on_open_ok",
    (Role.CLIENT, _S.AWAIT_OPEN_OK, spec.ConnectionRedirect): "_on_redirect",
    (Role.SERVER, _S.AWAIT_START_OK, spec.ConnectionStartOk): "_on_start_ok",
    (Role.SERVER, _S.AWAIT_SECURE_OK, spec.ConnectionSecureOk): "_on_secure_ok",
    (Role.SERVER, _S.AWAIT_TUNE_OK, spec.ConnectionTuneOk): "_on_tune_ok",
    (Role.SERVER, _S.AWAIT_OPEN, spec.ConnectionOpen): "_on_open",
}
for _role, _states in ROLE_STATES.items():
    for _state in _states[1:-1]:  # a peer may close in every state but before and after
        TABLE[_role, _state, spec.ConnectionClose] = "_on_close"
        TABLE[_role, _state, spec.ConnectionHeartbeat] = "_on_heartbeat"
    TABLE[_role, _S.CLOSING, spec.ConnectionCloseOk] = "_on_close_ok"
