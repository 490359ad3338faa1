"""The AMQP 0-9-1 engine's states and limits: the :class:`~amqp_sansio.engine.amqp091.Role`, the
:class:`~amqp_sansio.amqp091.Limits`, the connection's states and its transition table
(0-9-1 spec, class ``connection``), from which
:class:`~amqp_sansio.engine.amqp091.Connection` dispatches every method on channel 0."""

from __future__ import annotations

import enum

import attrs

from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method
from ..contract import Role
from ..liveness import phases

__all__ = ["PHASES", "ROLE_STATES", "TABLE", "ConnectionState", "Limits", "Role"]


@attrs.frozen(kw_only=True)
class Limits:
    """What the engine accepts from a peer (each default is in docs/defaults.rst).

    * ``max_frame``: the largest frame-max the engine proposes or agrees to (131072,
      RabbitMQ's default; negotiated down by ``connection.tune``; 0: no limit);
    * ``max_channels``: the largest channel-max likewise (2047, RabbitMQ's default);
    * ``max_body``: the largest content body accepted (128 MiB, RabbitMQ's default
      ``max_message_size``): a content header announcing more closes its channel, with
      311 ``content-too-large`` (client) or RabbitMQ's 406 ``precondition-failed``
      (server); 0: no limit;
    * ``handshake_timeout``: seconds from ``start()`` to the connection open, and from our
      ``connection.close`` to the peer's ``close-ok`` (10 s, RabbitMQ's
      ``handshake_timeout``); 0: none.
    """

    max_frame: int = 131072
    max_channels: int = 2047
    max_body: int = 128 * 1024 * 1024
    handshake_timeout: float = 10.0


class ConnectionState(enum.Enum):
    """Where the connection is in its life (0-9-1 spec, class ``connection``, the grammar
    ``connection = open-connection *use-connection close-connection``)."""

    #: client: ``start()`` not called yet; server: waiting for the protocol header
    NEW = "new"
    #: client: header sent, waiting for ``connection.start``
    AWAIT_START = "await-start"
    #: server: ``connection.start`` sent, waiting for ``start-ok``
    AWAIT_START_OK = "await-start-ok"
    #: server: ``LoginRequested`` reported, waiting for ``accept_login``/``refuse_login``
    LOGIN_PENDING = "login-pending"
    #: server: ``connection.secure`` sent, waiting for ``secure-ok``
    AWAIT_SECURE_OK = "await-secure-ok"
    #: client: ``start-ok`` sent, waiting for ``secure`` or ``tune``
    AWAIT_TUNE = "await-tune"
    #: server: ``connection.tune`` sent, waiting for ``tune-ok``
    AWAIT_TUNE_OK = "await-tune-ok"
    #: server: waiting for ``connection.open``
    AWAIT_OPEN = "await-open"
    #: server: ``OpenRequested`` reported, waiting for ``accept_open``/``refuse_open``
    OPEN_PENDING = "open-pending"
    #: client: ``tune-ok`` and ``open`` sent, waiting for ``open-ok``
    AWAIT_OPEN_OK = "await-open-ok"
    OPEN = "open"
    #: our ``connection.close`` sent, waiting for ``close-ok``
    CLOSING = "closing"
    CLOSED = "closed"


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
        _S.LOGIN_PENDING,
        _S.AWAIT_SECURE_OK,
        _S.AWAIT_TUNE_OK,
        _S.AWAIT_OPEN,
        _S.OPEN_PENDING,
        _S.OPEN,
        _S.CLOSING,
        _S.CLOSED,
    ),
}

#: The connection's transition table: the ``connection`` methods each (role, state) takes
#: and the handler each goes to. A method on channel 0 not in it is 503
#: ``command-invalid``; in ``CLOSING`` everything not in it is discarded (spec,
#: ``connection.close``).
TABLE: dict[tuple[Role, ConnectionState, type[Method]], str] = {
    (Role.CLIENT, _S.AWAIT_START, spec.ConnectionStart): "_on_start",
    (Role.CLIENT, _S.AWAIT_TUNE, spec.ConnectionSecure): "_on_secure",
    (Role.CLIENT, _S.AWAIT_TUNE, spec.ConnectionTune): "_on_tune",
    (Role.CLIENT, _S.AWAIT_OPEN_OK, spec.ConnectionOpenOk): "_on_open_ok",
    (Role.CLIENT, _S.OPEN, spec.ConnectionBlocked): "_on_blocked",
    (Role.CLIENT, _S.OPEN, spec.ConnectionUnblocked): "_on_unblocked",
    (Role.CLIENT, _S.OPEN, spec.ConnectionUpdateSecretOk): "_on_channel0_method",
    (Role.SERVER, _S.AWAIT_START_OK, spec.ConnectionStartOk): "_on_start_ok",
    (Role.SERVER, _S.AWAIT_SECURE_OK, spec.ConnectionSecureOk): "_on_secure_ok",
    (Role.SERVER, _S.AWAIT_TUNE_OK, spec.ConnectionTuneOk): "_on_tune_ok",
    (Role.SERVER, _S.AWAIT_OPEN, spec.ConnectionOpen): "_on_open",
    (Role.SERVER, _S.OPEN, spec.ConnectionUpdateSecret): "_on_channel0_method",
}
for _role, _states in ROLE_STATES.items():
    for _state in _states[1:-1]:  # a peer may close in every state but before and after
        TABLE[_role, _state, spec.ConnectionClose] = "_on_close"
    TABLE[_role, _S.CLOSING, spec.ConnectionCloseOk] = "_on_close_ok"
