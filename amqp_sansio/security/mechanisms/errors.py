"""The SASL errors: one class per way an exchange fails, each with its AMQP condition."""

from __future__ import annotations

from typing import ClassVar

from ...definitions.sasl import SaslCode
from ...errors import AMQPError, LocalProtocolError, RemoteProtocolError

# --------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------


class SASLError(AMQPError):
    """Base class of the SASL mechanism errors.

    ``code`` is the sasl-code (AMQP 1.0 part 5.3.3.6) that describes the failure: the code a
    server puts in its sasl-outcome, or the code a client received. Messages never contain
    secrets.
    """

    condition: ClassVar[str] = "amqp:unauthorized-access"
    default_code: ClassVar[SaslCode] = SaslCode.AUTH

    def __init__(self, description: str, *, code: SaslCode | None = None) -> None:
        super().__init__(description)
        #: The sasl-code of AMQP 1.0 part 5.3.3.6.
        self.code: SaslCode = self.default_code if code is None else code


class SASLProtocolError(SASLError, RemoteProtocolError):
    """The peer's mechanism data is malformed or out of order: bad syntax, invalid UTF-8 or
    base64, a SCRAM nonce that does not extend ours, an unsupported mandatory extension, an
    iteration count outside the configured bounds, a challenge where none is expected."""


class SASLAuthenticationError(SASLError):
    """The credentials were refused: by our server side (wrong password, unknown user,
    refused authorization identity), or by the server we are a client of (a sasl-outcome
    whose code is not ``ok``)."""


class SASLServerError(SASLAuthenticationError):
    """The server explained its refusal in the mechanism's own terms: a SCRAM ``e=``
    server-error (RFC 5802 section 7) or an XOAUTH2 JSON error challenge.

    ``server_error`` is the SCRAM error value or the XOAUTH2 ``status``; ``details`` is the
    XOAUTH2 JSON object (empty for SCRAM).
    """

    def __init__(
        self,
        description: str,
        *,
        server_error: str,
        details: dict[str, object] | None = None,
        code: SaslCode | None = None,
    ) -> None:
        super().__init__(description, code=code)
        self.server_error = server_error
        self.details: dict[str, object] = {} if details is None else details


class SASLServerVerificationError(SASLError):
    """The server did not prove that it knows the credentials: its SCRAM server signature
    (RFC 5802 section 3, ``v=``) is wrong or missing. The connection must not be used."""


class SASLSystemError(SASLError):
    """The authentication could not be decided because of a system problem. A credential
    store raises it (with ``code`` :attr:`SaslCode.SYS`, ``SYS_PERM`` or ``SYS_TEMP``) to make
    the server mechanism fail with that code (AMQP 1.0 part 5.3.3.6)."""

    default_code: ClassVar[SaslCode] = SaslCode.SYS


class SASLMechanismNotSupportedError(SASLError):
    """The client chose a mechanism this server does not offer. AMQP 1.0 part 5.3.3.2: the
    server must then fail the connection's authentication."""


class SASLConfigurationError(SASLError, LocalProtocolError, ValueError):
    """Our own arguments are unusable: a username or password that SASLprep prohibits, a NUL
    in a PLAIN field, an unknown SCRAM mechanism, an iteration count below 1."""


class SASLNoMechanismError(SASLConfigurationError):
    """None of the server's mechanisms can be used with the configured credentials and
    options (AMQP 1.0 part 5.3.2). ``offered`` is the server's sasl-mechanisms list (so that
    a layer above can say what to change in its own terms)."""

    def __init__(
        self, description: str, *, offered: tuple[str, ...] = (), code: SaslCode | None = None
    ) -> None:
        super().__init__(description, code=code)
        self.offered = offered


class SASLStateError(SASLError, LocalProtocolError):
    """A mechanism object was called out of order (for example ``respond`` before
    ``initial_response``, or anything after it failed or finished)."""
