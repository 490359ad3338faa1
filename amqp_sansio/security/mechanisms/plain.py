"""PLAIN (RFC 4616), client and server."""

from __future__ import annotations

from .base import SASLClientMechanism, SASLServerMechanism, ServerStep, _authorized, _peer_text
from .credentials import Authorizer, PasswordStore
from .errors import SASLAuthenticationError, SASLConfigurationError, SASLProtocolError


class PlainClient(SASLClientMechanism):
    """PLAIN (RFC 4616): sends ``authzid NUL authcid NUL password`` as the initial response.

    The password crosses the wire as is: ``sends_secrets_in_clear`` is True.
    """

    name = "PLAIN"
    sends_secrets_in_clear = True

    def __init__(self, username: str, password: str, *, authzid: str | None = None) -> None:
        super().__init__()
        for field, value, empty_ok in (
            ("username", username, False),
            ("password", password, False),
            ("authzid", "" if authzid is None else authzid, True),
        ):
            if not isinstance(value, str) or "\x00" in value or (not value and not empty_ok):
                raise SASLConfigurationError(f"PLAIN {field} must be a non-empty str without NUL")
        self._message = b"\x00".join(
            s.encode("utf-8") for s in ("" if authzid is None else authzid, username, password)
        )
        self.username = username
        self.authzid = authzid

    def __repr__(self) -> str:
        return (
            f"<PlainClient username={self.username!r} authzid={self.authzid!r} {self._phase.value}>"
        )

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return self._message


class PlainServer(SASLServerMechanism):
    """PLAIN (RFC 4616): checks ``authzid NUL authcid NUL password`` with the
    :class:`PasswordStore`. The strings are passed to the store as the client sent them
    (decoded from UTF-8, not SASLprep'd). An authzid other than the authcid needs the
    :class:`Authorizer`'s consent, asked only after the password was accepted."""

    name = "PLAIN"
    sends_secrets_in_clear = True

    def __init__(self, store: PasswordStore, *, authorizer: Authorizer | None = None) -> None:
        super().__init__()
        self._store = store
        self._authorizer = authorizer

    def _start(self, initial_response: bytes) -> ServerStep:
        fields = initial_response.split(b"\x00")
        if len(fields) != 3:
            raise SASLProtocolError("PLAIN message must have exactly three NUL-separated fields")
        authzid, authcid, password = (_peer_text(f, "PLAIN field") for f in fields)
        if not authcid or not password:
            raise SASLProtocolError("PLAIN authcid and password must not be empty")
        if not self._store.check_password(authcid, password):
            raise SASLAuthenticationError("PLAIN: authentication failed")
        return _authorized(self._authorizer, authcid, authzid, self.name)
