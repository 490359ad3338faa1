"""XOAUTH2 (Google's bearer-token format), client and server."""

from __future__ import annotations

import base64
import json

from ...definitions.sasl import SaslCode
from .base import (
    SASLClientMechanism,
    SASLServerMechanism,
    ServerChallenge,
    ServerStep,
    ServerSuccess,
    _peer_text,
    _short,
)
from .credentials import TokenStore
from .errors import (
    SASLAuthenticationError,
    SASLConfigurationError,
    SASLError,
    SASLProtocolError,
    SASLServerError,
)


def _json_error(challenge: bytes) -> dict[str, object]:
    """Parse an XOAUTH2 error challenge: a JSON object, raw or base64-encoded."""
    data = challenge
    if not challenge.lstrip().startswith(b"{"):
        try:
            data = base64.b64decode(challenge, validate=True)
        except ValueError:
            raise SASLProtocolError("XOAUTH2 challenge is neither JSON nor base64") from None
    text = _peer_text(data, "XOAUTH2 challenge")
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        raise SASLProtocolError("XOAUTH2 challenge is not valid JSON") from None
    if not isinstance(parsed, dict):
        raise SASLProtocolError("XOAUTH2 challenge is not a JSON object")
    return parsed


class XOAuth2Client(SASLClientMechanism):
    """XOAUTH2 (Google's SASL format for OAuth 2.0 bearer tokens): the initial response is
    ``user={username}\\x01auth=Bearer {token}\\x01\\x01``.

    If the server refuses the token it sends a JSON object (``status``, ``schemes``,
    ``scope``) as a challenge; we answer with an empty response, as the format requires, and
    keep the object. :meth:`outcome_error` then returns a :class:`SASLServerError` carrying
    it. The token crosses the wire as is: ``sends_secrets_in_clear`` is True.
    """

    name = "XOAUTH2"
    sends_secrets_in_clear = True

    def __init__(self, username: str, token: str) -> None:
        super().__init__()
        for field, value in (("username", username), ("token", token)):
            if not isinstance(value, str) or not value or any(c in value for c in "\x00\x01"):
                raise SASLConfigurationError(
                    f"XOAUTH2 {field} must be a non-empty str without control separators"
                )
        if any(c.isspace() for c in token):
            raise SASLConfigurationError("XOAUTH2 token must not contain whitespace")
        self.username = username
        self._token = token
        #: The server's JSON error object, once it sent one.
        self.server_error: dict[str, object] | None = None

    def __repr__(self) -> str:
        return f"<XOAuth2Client username={self.username!r} {self._phase.value}>"

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return f"user={self.username}\x01auth=Bearer {self._token}\x01\x01".encode()

    def _respond(self, challenge: bytes) -> bytes:
        if self.server_error is not None:
            raise SASLProtocolError("XOAUTH2: a second challenge")
        self.server_error = _json_error(challenge)
        return b""

    def _verify_outcome(self, additional_data: bytes | None) -> None:
        if self.server_error is not None:
            raise SASLProtocolError("XOAUTH2: success reported after an error challenge")

    def outcome_error(self, code: SaslCode) -> SASLError:
        if self.server_error is None:
            return super().outcome_error(code)
        status = str(self.server_error.get("status", ""))
        return SASLServerError(
            f"the server refused the XOAUTH2 token (status {_short(status)})",
            server_error=status,
            details=self.server_error,
            code=SaslCode(code),
        )


class XOAuth2Server(SASLServerMechanism):
    """XOAUTH2, server side: parses ``user=...\\x01auth=Bearer ...\\x01\\x01`` (no other
    keys, no duplicates; the scheme ``Bearer`` is matched case-insensitively) and checks the
    token with the :class:`TokenStore`. A refused token gets a JSON error challenge
    (``{"status": "401", "schemes": "bearer"}`` plus ``scope`` if given); the client's
    answer to it, whatever it is, ends the exchange with a failure."""

    name = "XOAUTH2"
    sends_secrets_in_clear = True

    def __init__(self, store: TokenStore, *, scope: str | None = None) -> None:
        super().__init__()
        self._store = store
        self._scope = scope

    def _start(self, initial_response: bytes) -> ServerStep:
        text = _peer_text(initial_response, "XOAUTH2 message")
        body, sep, tail = text.rpartition("\x01\x01")
        if not sep or tail:
            raise SASLProtocolError("XOAUTH2 message must end with two \\x01")
        fields: dict[str, str] = {}
        for item in body.split("\x01"):
            key, eq, value = item.partition("=")
            if not eq or key not in ("user", "auth") or key in fields:
                raise SASLProtocolError("XOAUTH2 message has a malformed or unknown field")
            fields[key] = value
        if len(fields) != 2:
            raise SASLProtocolError("XOAUTH2 message needs both user and auth")
        scheme, _, token = fields["auth"].partition(" ")
        user = fields["user"]
        if scheme.lower() != "bearer" or not token or not user:
            raise SASLProtocolError("XOAUTH2 auth must be 'Bearer <token>' with a user")
        if self._store.check_token(user, token):
            return ServerSuccess(identity=user, authentication_identity=user)
        error: dict[str, str] = {"status": "401", "schemes": "bearer"}
        if self._scope is not None:
            error["scope"] = self._scope
        return ServerChallenge(data=json.dumps(error).encode("utf-8"))

    def _step(self, response: bytes) -> ServerStep:
        raise SASLAuthenticationError("XOAUTH2: the token was refused")
