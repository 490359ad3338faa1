"""The SASL layer of a connection (core spec 5.3), driven by :class:`~amqp_sansio.Connection`.

Under SASL the protocol header of the stream is the SASL one (protocol id 3, 5.3.1); the
server answers with its own and sasl-mechanisms, the client chooses with sasl-init, and
challenges and responses follow until the server's sasl-outcome. Then both sides start
again with the AMQP header (5.1), on the same bytes: what arrived after the outcome is not
lost. Until then the engine holds back the AMQP frames the application has already asked
for (a client's open, sessions and links are pipelined behind the exchange).

The mechanisms themselves are in :mod:`amqp_sansio.security.mechanisms`; this module is the
state machine that carries their data in frames. Failures end the connection with an
:class:`~amqp_sansio.engine.amqp10.events.AuthenticationFailed` event; nothing follows on the wire
but, for a server, the failed outcome.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection
from typing import Any

from ...codec.amqp10.types import Symbol
from ...definitions.amqp10.performatives import (
    SaslChallenge,
    SaslCode,
    SaslInit,
    SaslMechanisms,
    SaslOutcome,
    SaslResponse,
)
from ...errors import AMQPError
from ...framing.amqp10 import SASL_HEADER, FrameType, ProtocolId, encode_frame
from ...security.mechanisms import (
    ClientCredentials,
    SASLClientMechanism,
    SASLConfigurationError,
    SASLError,
    SASLMechanismNotSupportedError,
    SASLProtocolError,
    SASLServerMechanism,
    ServerAuthenticator,
    ServerChallenge,
    ServerFailure,
    ServerSuccess,
    select_client_mechanism,
)
from .events import Authenticated, AuthenticationFailed, Event


class _Phase(enum.Enum):
    HEADER = "header"  # waiting for the peer's SASL header
    MECHANISMS = "mechanisms"  # client: waiting for sasl-mechanisms
    INIT = "init"  # server: waiting for sasl-init
    EXCHANGE = "exchange"  # client: waiting for a challenge or the outcome
    RESPONSE = "response"  # server: waiting for a response to its challenge
    DONE = "done"
    FAILED = "failed"


class SaslLayer:
    """One connection's SASL exchange, client or server (core spec 5.3.2).

    ``send`` takes the bytes to put on the wire (ahead of anything of AMQP's), ``report``
    what the application is told. The connection feeds :meth:`on_header` and
    :meth:`on_frame` with what its parser finds until :attr:`done`.
    """

    def __init__(
        self,
        config: ClientCredentials | ServerAuthenticator,
        *,
        client: bool,
        hostname: str | None,
        send: Callable[[bytes], None],
        report: Callable[[Event], None],
        mechanisms: Collection[str] | None = None,
        allow_cleartext: bool = False,
        encrypted: bool = False,
        client_certificate: bool = False,
        peer_identity: str | None = None,
    ) -> None:
        if client and not isinstance(config, ClientCredentials):
            raise TypeError("a client's sasl is a ClientCredentials")
        if not client and not isinstance(config, ServerAuthenticator):
            raise TypeError("a server's sasl is a ServerAuthenticator")
        self.client = client
        self._config = config
        self._hostname = hostname
        self._send = send
        self._report = report
        self._allowed = mechanisms
        self._allow_cleartext = allow_cleartext
        self.encrypted = encrypted
        self.client_certificate = client_certificate
        self.peer_identity = peer_identity
        self.phase = _Phase.HEADER
        self.header_sent = False
        self.mechanism: str | None = None
        self.identity: str | None = None
        self._client_mech: SASLClientMechanism | None = None
        self._server_mech: SASLServerMechanism | None = None

    def __repr__(self) -> str:
        role = "client" if self.client else "server"
        return f"<SaslLayer {role} {self.phase.value} mechanism={self.mechanism}>"

    @property
    def done(self) -> bool:
        return self.phase is _Phase.DONE

    @property
    def failed(self) -> bool:
        return self.phase is _Phase.FAILED

    @property
    def begun(self) -> bool:
        """The exchange has begun, as far as a transport that closes now is concerned: a
        server's always (it counts as a failed login); a client's once the server's
        sasl-mechanisms came. A client's server that closes before (right after the protocol
        header, or before it) has refused the connection (a connection limit, an address it
        does not serve): no authentication was tried."""
        return not self.client or self.phase not in (_Phase.HEADER, _Phase.MECHANISMS)

    @property
    def optional(self) -> bool:
        """A server that allows anonymous access takes the bare AMQP header in place of the
        SASL one (core spec 2.2, 5.1), until it has sent its own SASL header."""
        config = self._config
        return (
            not self.client
            and not self.header_sent
            and isinstance(config, ServerAuthenticator)
            and config.allows_anonymous
        )

    def accept_without_sasl(self) -> str:
        """The client sent the bare AMQP header and :attr:`optional` allows it: the exchange
        is over, with the anonymous identity (reported as :class:`Authenticated` with no
        mechanism). Returns that identity."""
        assert self.optional and isinstance(self._config, ServerAuthenticator)
        self.identity = self._config.anonymous_identity
        self.phase = _Phase.DONE
        self._report(Authenticated(mechanism=None, identity=self.identity))
        return self.identity

    def send_header(self) -> None:
        if not self.header_sent:
            self.header_sent = True
            self._send(SASL_HEADER)

    def _frame(self, body: Any) -> None:
        self._send(encode_frame(body, frame_type=FrameType.SASL))

    # -- input ---------------------------------------------------------------------------------

    def on_header(self, protocol_id: ProtocolId) -> None:
        """The peer's protocol header: ours must be SASL's (the caller checked the rest)."""
        self.send_header()
        if self.client:
            self.phase = _Phase.MECHANISMS
            return
        assert isinstance(self._config, ServerAuthenticator)
        try:
            offered = self._config.offered_mechanisms(
                peer_identity=self.peer_identity, encrypted=self.encrypted
            )
        except SASLConfigurationError as exc:
            self.fail(exc, send_outcome=False)
            return
        self._frame(SaslMechanisms(sasl_server_mechanisms=[Symbol(m) for m in offered]))
        self.phase = _Phase.INIT

    def on_frame(self, frame_type: FrameType, body: Any) -> None:
        """A frame that arrived during the exchange."""
        if frame_type is not FrameType.SASL:
            self.fail(SASLProtocolError("an AMQP frame before the SASL outcome"))
            return
        handler = _HANDLERS.get((self.client, self.phase, type(body)))
        if handler is None:
            what = "an empty frame" if body is None else type(body).__name__
            self.fail(SASLProtocolError(f"{what} where the SASL exchange is {self.phase.value}"))
            return
        handler(self, body)

    # -- client --------------------------------------------------------------------------------

    def _on_mechanisms(self, body: SaslMechanisms) -> None:
        assert isinstance(self._config, ClientCredentials)
        offered = [str(m) for m in body.sasl_server_mechanisms]
        try:
            mech = select_client_mechanism(
                offered,
                self._config,
                tls_client_cert=self.client_certificate,
                encrypted=self.encrypted,
                allow_cleartext_secrets=self._allow_cleartext,
                allowed=self._allowed,
            )
            initial = mech.initial_response(self._hostname)
        except SASLError as exc:
            self.fail(exc)
            return
        self._client_mech = mech
        self.mechanism = mech.name
        self._frame(
            SaslInit(mechanism=Symbol(mech.name), initial_response=initial, hostname=self._hostname)
        )
        self.phase = _Phase.EXCHANGE

    def _on_challenge(self, body: SaslChallenge) -> None:
        assert self._client_mech is not None
        try:
            response = self._client_mech.respond(body.challenge)
        except SASLError as exc:
            self.fail(exc)
            return
        self._frame(SaslResponse(response=response))

    def _on_outcome(self, body: SaslOutcome) -> None:
        mech = self._client_mech
        assert mech is not None and self.mechanism is not None
        try:
            if body.code is not SaslCode.OK:
                raise mech.outcome_error(SaslCode(body.code))
            mech.verify_outcome(body.additional_data)
        except SASLError as exc:
            self.fail(exc)
            return
        assert isinstance(self._config, ClientCredentials)
        self.identity = self._config.username
        self.phase = _Phase.DONE
        self._report(Authenticated(mechanism=self.mechanism, identity=self.identity))

    # -- server --------------------------------------------------------------------------------

    def _on_init(self, body: SaslInit) -> None:
        assert isinstance(self._config, ServerAuthenticator)
        name = str(body.mechanism)
        try:
            mech = self._config.create_mechanism(
                name, peer_identity=self.peer_identity, encrypted=self.encrypted
            )
        except SASLMechanismNotSupportedError as exc:
            self.fail(exc)
            return
        self._server_mech = mech
        self.mechanism = name
        self._server_step(mech.start(body.initial_response, body.hostname))

    def _on_response(self, body: SaslResponse) -> None:
        assert self._server_mech is not None
        self._server_step(self._server_mech.step(body.response))

    def _server_step(self, step: ServerChallenge | ServerSuccess | ServerFailure) -> None:
        if isinstance(step, ServerChallenge):
            self._frame(SaslChallenge(challenge=step.data))
            self.phase = _Phase.RESPONSE
        elif isinstance(step, ServerSuccess):
            assert self.mechanism is not None
            self._frame(SaslOutcome(code=SaslCode.OK, additional_data=step.additional_data))
            self.identity = step.identity
            self.phase = _Phase.DONE
            self._report(Authenticated(mechanism=self.mechanism, identity=step.identity))
        else:
            self.fail(step.error, code=step.code)

    # -- failure -------------------------------------------------------------------------------

    def fail(
        self,
        error: AMQPError,
        *,
        code: SaslCode | None = None,
        send_outcome: bool = True,
    ) -> None:
        """End the exchange: a server tells the client with a failed outcome (unless it never
        offered anything); a client just stops. The connection then ends."""
        if code is None:
            code = error.code if isinstance(error, SASLError) else SaslCode.SYS_PERM
        if not self.client and send_outcome and self.header_sent:
            self._frame(SaslOutcome(code=code))
        self.phase = _Phase.FAILED
        self._report(AuthenticationFailed(code=code, description=error.description, error=error))


_HANDLERS: dict[tuple[bool, _Phase, type], Callable[[SaslLayer, Any], None]] = {
    (True, _Phase.MECHANISMS, SaslMechanisms): SaslLayer._on_mechanisms,
    (True, _Phase.EXCHANGE, SaslChallenge): SaslLayer._on_challenge,
    (True, _Phase.EXCHANGE, SaslOutcome): SaslLayer._on_outcome,
    (False, _Phase.INIT, SaslInit): SaslLayer._on_init,
    (False, _Phase.RESPONSE, SaslResponse): SaslLayer._on_response,
}
