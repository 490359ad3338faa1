"""AMQPLAIN (AMQP 0-8's mechanism, which RabbitMQ still offers on 0-9-1), client and server.

The response is a field table ``{"LOGIN": username, "PASSWORD": password}`` (long strings)
*without* its 32-bit length prefix, as RabbitMQ reads it (``rabbit_auth_mechanism_amqplain``)
and py-amqp writes it. The table's grammar is 0-9-1's (0-9-1 spec 4.2.5.5, with RabbitMQ's
errata for the field types); this module reads just enough of it to find the two strings, so
that the SASL layer needs nothing of the 0-9-1 codec. Only 0-9-1 carries it: a
:class:`~.selection.ServerAuthenticator` offers it only when its ``mechanisms`` name it.
"""

from __future__ import annotations

from .base import SASLClientMechanism, SASLServerMechanism, ServerStep, _authorized, _peer_text
from .credentials import Authorizer, PasswordStore
from .errors import SASLAuthenticationError, SASLConfigurationError, SASLProtocolError

__all__ = ["AMQPlainClient", "AMQPlainServer", "read_response"]

#: The octets of each fixed-size field value after its type octet (RabbitMQ's tags).
_FIXED = {
    b"t": 1, b"b": 1, b"B": 1, b"s": 2, b"u": 2, b"I": 4, b"i": 4, b"l": 8, b"f": 4,
    b"d": 8, b"D": 5, b"T": 8, b"V": 0,
}  # fmt: skip
#: The values that are a 32-bit length and that many octets: strings, tables, arrays.
_SIZED = frozenset({b"S", b"x", b"F", b"A"})


def _string(value: str) -> bytes:
    data = value.encode("utf-8")
    return b"S" + len(data).to_bytes(4, "big") + data


def read_response(response: bytes) -> tuple[str, str]:
    """(LOGIN, PASSWORD) of an AMQPLAIN response; raises :class:`SASLProtocolError` for one
    that is not a field table, or lacks either string."""
    found: dict[str, object] = {}
    at, end = 0, len(response)
    while at < end:
        size = response[at]
        key = _peer_text(response[at + 1 : at + 1 + size], "AMQPLAIN field name")
        at += 1 + size
        tag = response[at : at + 1]
        at += 1
        if tag in _SIZED:
            if at + 4 > end:
                raise SASLProtocolError("AMQPLAIN response is not a field table: truncated")
            length = int.from_bytes(response[at : at + 4], "big")
            raw, at = response[at + 4 : at + 4 + length], at + 4 + length
            found[key] = _peer_text(raw, "AMQPLAIN string") if tag == b"S" else raw
        elif tag in _FIXED:
            at += _FIXED[tag]
            found[key] = None
        else:
            raise SASLProtocolError(f"AMQPLAIN response is not a field table: type {tag!r}")
        if at > end:
            raise SASLProtocolError("AMQPLAIN response is not a field table: truncated")
    login, secret = found.get("LOGIN"), found.get("PASSWORD")
    if not isinstance(login, str) or not isinstance(secret, str):
        raise SASLProtocolError("AMQPLAIN response needs LOGIN and PASSWORD strings")
    return login, secret


class AMQPlainClient(SASLClientMechanism):
    """AMQPLAIN's client: sends the table as the initial response. The password crosses the
    wire as is."""

    name = "AMQPLAIN"
    sends_secrets_in_clear = True

    def __init__(self, username: str, password: str) -> None:
        super().__init__()
        for field, value in (("username", username), ("password", password)):
            if not isinstance(value, str) or not value:
                raise SASLConfigurationError(f"AMQPLAIN {field} must be a non-empty str")
        self.username = username
        self._response = b"\x05LOGIN" + _string(username) + b"\x08PASSWORD" + _string(password)

    def __repr__(self) -> str:
        return f"<AMQPlainClient username={self.username!r} {self._phase.value}>"

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return self._response


class AMQPlainServer(SASLServerMechanism):
    """AMQPLAIN's server: checks LOGIN and PASSWORD with the :class:`PasswordStore`, as
    :class:`~.plain.PlainServer` checks PLAIN's (the identity is the LOGIN)."""

    name = "AMQPLAIN"
    sends_secrets_in_clear = True

    def __init__(self, store: PasswordStore, *, authorizer: Authorizer | None = None) -> None:
        super().__init__()
        self._store = store
        self._authorizer = authorizer

    def _start(self, initial_response: bytes) -> ServerStep:
        login, password = read_response(initial_response)
        if not self._store.check_password(login, password):
            raise SASLAuthenticationError("AMQPLAIN: authentication failed")
        return _authorized(self._authorizer, login, "", self.name)
