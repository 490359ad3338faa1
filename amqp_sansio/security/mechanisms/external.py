"""EXTERNAL (RFC 4422 appendix A), client and server: the TLS client certificate's identity."""

from __future__ import annotations

from .base import SASLClientMechanism, SASLServerMechanism, ServerStep, _authorized, _peer_text
from .credentials import Authorizer
from .errors import SASLAuthenticationError, SASLConfigurationError, SASLProtocolError


class ExternalClient(SASLClientMechanism):
    """EXTERNAL (RFC 4422 appendix A): the credentials are established outside SASL, here by
    the TLS client certificate. The initial response is the authorization identity
    (empty: act as the identity the certificate proves)."""

    name = "EXTERNAL"

    def __init__(self, authzid: str | None = None) -> None:
        super().__init__()
        if authzid is not None and (not isinstance(authzid, str) or "\x00" in authzid):
            raise SASLConfigurationError("EXTERNAL authzid must be a str without NUL")
        self.authzid = authzid

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return (self.authzid or "").encode("utf-8")


class ExternalServer(SASLServerMechanism):
    """EXTERNAL (RFC 4422 appendix A): the engine passes ``peer_identity``, the identity
    proven outside SASL (the verified TLS client certificate's subject, for example). The
    client's initial response is its authzid: empty (act as ``peer_identity``), equal to it,
    or another identity that the :class:`Authorizer` allows. Without a peer identity every
    attempt fails."""

    name = "EXTERNAL"

    def __init__(self, peer_identity: str | None, *, authorizer: Authorizer | None = None) -> None:
        super().__init__()
        self._peer_identity = peer_identity
        self._authorizer = authorizer

    def _start(self, initial_response: bytes) -> ServerStep:
        authzid = _peer_text(initial_response, "EXTERNAL authzid")
        if "\x00" in authzid:
            raise SASLProtocolError("EXTERNAL authzid contains NUL")
        if not self._peer_identity:
            raise SASLAuthenticationError("EXTERNAL: no verified peer identity")
        return _authorized(self._authorizer, self._peer_identity, authzid, self.name)
