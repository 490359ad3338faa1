"""SASL mechanisms for both ends of an AMQP 1.0 connection (core spec part 5.3) and of an
AMQP 0-9-1 one (its ``connection.start-ok`` and ``secure``), without I/O.

This package knows nothing of frames; it has one module per mechanism (``amqplain``,
``anonymous``, ``plain``, ``external``, ``scram``, ``xoauth2``) over a small ``base``, with
``errors``, ``credentials`` (what clients offer, what server stores check) and
``selection`` (choosing the mechanism at each end, for both protocols). The engine that
speaks the SASL frames of AMQP 1.0 part 5.3.3 (or the 0-9-1 engine's login) drives one
*mechanism object* per exchange:

* a client mechanism (:class:`SASLClientMechanism`) turns the server's challenges into
  responses and checks the outcome (for SCRAM, the server's signature);
* a server mechanism (:class:`SASLServerMechanism`) turns the client's responses into a
  challenge, a success with the authenticated identity, or a failure with the sasl-code of
  AMQP 1.0 part 5.3.3.6.

Built in: ANONYMOUS (RFC 4505), PLAIN (RFC 4616), EXTERNAL (RFC 4422 appendix A),
SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), XOAUTH2 (Google's bearer-token
format) and AMQPLAIN (AMQP 0-8's, carried by 0-9-1 only). :func:`select_client_mechanism`
picks the AMQP 1.0 client's mechanism from the server's sasl-mechanisms list,
:func:`first_offered` the AMQP 0-9-1 client's; :class:`ServerAuthenticator` lists and
creates the server's, for both protocols.

Secrets (passwords, tokens, SCRAM keys and salts) never appear in a ``repr``, a ``str`` or
an exception message. Secret comparisons use :func:`hmac.compare_digest`. Bytes from the peer
that break a mechanism always end in a :class:`SASLError` on the client side, and in a
:class:`ServerFailure` (which carries a :class:`SASLError`) on the server side.
"""

from .amqplain import AMQPlainClient, AMQPlainServer
from .anonymous import AnonymousClient, AnonymousServer
from .base import (
    SASLClientMechanism,
    SASLServerMechanism,
    ServerChallenge,
    ServerFailure,
    ServerStep,
    ServerSuccess,
)
from .credentials import (
    SCRAM_MECHANISMS,
    Authorizer,
    ClientCredentials,
    PasswordStore,
    ScramCredentials,
    ScramStore,
    TokenStore,
    derive_scram_credentials,
    saslprep,
)
from .errors import (
    SASLAuthenticationError,
    SASLConfigurationError,
    SASLError,
    SASLMechanismNotSupportedError,
    SASLNoMechanismError,
    SASLProtocolError,
    SASLServerError,
    SASLServerVerificationError,
    SASLStateError,
    SASLSystemError,
)
from .external import ExternalClient, ExternalServer
from .plain import PlainClient, PlainServer
from .scram import ScramClient, ScramServer
from .selection import (
    MECHANISM_PREFERENCE,
    NAMED_ONLY,
    ServerAuthenticator,
    client_mechanism,
    client_mechanisms,
    first_offered,
    select_client_mechanism,
)
from .xoauth2 import XOAuth2Client, XOAuth2Server

__all__ = [
    "MECHANISM_PREFERENCE",
    "NAMED_ONLY",
    "AMQPlainClient",
    "AMQPlainServer",
    "SCRAM_MECHANISMS",
    "AnonymousClient",
    "AnonymousServer",
    "Authorizer",
    "ClientCredentials",
    "ExternalClient",
    "ExternalServer",
    "PasswordStore",
    "PlainClient",
    "PlainServer",
    "SASLAuthenticationError",
    "SASLClientMechanism",
    "SASLConfigurationError",
    "SASLError",
    "SASLMechanismNotSupportedError",
    "SASLNoMechanismError",
    "SASLProtocolError",
    "SASLServerError",
    "SASLServerMechanism",
    "SASLServerVerificationError",
    "SASLStateError",
    "SASLSystemError",
    "ScramClient",
    "ScramCredentials",
    "ScramServer",
    "ScramStore",
    "ServerAuthenticator",
    "ServerChallenge",
    "ServerFailure",
    "ServerStep",
    "ServerSuccess",
    "TokenStore",
    "XOAuth2Client",
    "XOAuth2Server",
    "client_mechanism",
    "client_mechanisms",
    "derive_scram_credentials",
    "first_offered",
    "saslprep",
    "select_client_mechanism",
]
