"""SASL mechanisms for both ends of an AMQP 1.0 connection (core spec part 5.3), without I/O.

This module knows nothing of frames. The engine that speaks the SASL frames of AMQP 1.0
part 5.3.3 drives one *mechanism object* per exchange:

* a client mechanism (:class:`SASLClientMechanism`) turns the server's challenges into
  responses and checks the outcome (for SCRAM, the server's signature);
* a server mechanism (:class:`SASLServerMechanism`) turns the client's responses into a
  challenge, a success with the authenticated identity, or a failure with the sasl-code of
  AMQP 1.0 part 5.3.3.6.

Built in: ANONYMOUS (RFC 4505), PLAIN (RFC 4616), EXTERNAL (RFC 4422 appendix A),
SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) and XOAUTH2 (Google's bearer-token
format). :func:`select_client_mechanism` picks the client's mechanism from the server's
sasl-mechanisms list; :class:`ServerAuthenticator` lists and creates the server's.

Secrets (passwords, tokens, SCRAM keys and salts) never appear in a ``repr``, a ``str`` or
an exception message. Secret comparisons use :func:`hmac.compare_digest`. Bytes from the peer
that break a mechanism always end in a :class:`SASLError` on the client side, and in a
:class:`ServerFailure` (which carries a :class:`SASLError`) on the server side.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import json
import secrets
import stringprep
import unicodedata
from collections.abc import Callable, Collection, Iterable
from typing import ClassVar, Protocol, TypeVar, runtime_checkable

import attrs

from ._errors import AMQPError, LocalProtocolError, RemoteProtocolError
from ._performatives import SaslCode

__all__ = [
    "MECHANISM_PREFERENCE",
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
    "derive_scram_credentials",
    "saslprep",
    "select_client_mechanism",
]

#: The mechanisms this module implements, strongest first. :func:`select_client_mechanism`
#: prefers them in this order, and :meth:`ServerAuthenticator.offered_mechanisms` lists
#: them in this order (AMQP 1.0 part 5.3.3.1: "in decreasing level of preference").
MECHANISM_PREFERENCE: tuple[str, ...] = (
    "SCRAM-SHA-512",
    "SCRAM-SHA-256",
    "EXTERNAL",
    "PLAIN",
    "XOAUTH2",
    "ANONYMOUS",
)

#: SCRAM mechanism name -> (hashlib name, digest size in bytes), RFC 7677 and RFC 5802.
SCRAM_MECHANISMS: dict[str, tuple[str, int]] = {
    "SCRAM-SHA-512": ("sha512", 64),
    "SCRAM-SHA-256": ("sha256", 32),
}

_DEFAULT_MIN_ITERATIONS = 4096
_DEFAULT_MAX_ITERATIONS = 1_000_000
_HIDDEN = "<hidden>"
_T = TypeVar("_T")
_R = TypeVar("_R")


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
    options (AMQP 1.0 part 5.3.2)."""


class SASLStateError(SASLError, LocalProtocolError):
    """A mechanism object was called out of order (for example ``respond`` before
    ``initial_response``, or anything after it failed or finished)."""


# --------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------


def _peer_text(data: bytes, what: str) -> str:
    """Decode the peer's UTF-8, or raise :class:`SASLProtocolError`."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SASLProtocolError(f"{what} is not valid UTF-8") from None


def _b64decode(text: str, what: str) -> bytes:
    """Strict base64: the standard alphabet, canonical padding, nothing else."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except ValueError:
        raise SASLProtocolError(f"{what} is not valid base64") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise SASLProtocolError(f"{what} is not canonical base64")
    return raw


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _short(text: str) -> str:
    """A peer-supplied value, shortened, for an error message."""
    return repr(text[:60])


# --------------------------------------------------------------------------------------
# SASLprep (RFC 4013, a profile of stringprep, RFC 3454)
# --------------------------------------------------------------------------------------

_PROHIBITED = (
    stringprep.in_table_c12,  # non-ASCII space
    stringprep.in_table_c21,  # ASCII control
    stringprep.in_table_c22,  # non-ASCII control
    stringprep.in_table_c3,  # private use
    stringprep.in_table_c4,  # non-character code points
    stringprep.in_table_c5,  # surrogates
    stringprep.in_table_c6,  # inappropriate for plain text
    stringprep.in_table_c7,  # inappropriate for canonical representation
    stringprep.in_table_c8,  # change display properties / deprecated
    stringprep.in_table_c9,  # tagging characters
)


def saslprep(text: str, *, allow_unassigned: bool = False) -> str:
    """Prepare a username or password with SASLprep (RFC 4013).

    Non-ASCII spaces become spaces, "commonly mapped to nothing" characters are removed, the
    result is normalized with NFKC (Unicode 3.2, as stringprep requires), and prohibited
    output (controls, private use, surrogates, ...) and bidirectional text that breaks RFC
    3454 section 6 are rejected. Unassigned code points are rejected unless
    ``allow_unassigned`` (RFC 3454 section 7: "query" strings may hold them, "stored" strings
    may not). The result must not be empty.

    Raises:
        SASLConfigurationError: the string cannot be prepared. The message never contains it.

    >>> from amqp_sansio._sasl_mechanisms import saslprep
    >>> saslprep("I\\u00adX"), saslprep("\\u2168")
    ('IX', 'IX')
    """
    if text.isascii():
        # Fast path: ASCII is unchanged by the mapping and NFKC; only controls are prohibited.
        if not text or any(ord(c) < 0x20 or c == "\x7f" for c in text):
            raise SASLConfigurationError("SASLprep: empty or contains a control character")
        return text
    mapped = "".join(
        " " if stringprep.in_table_c12(c) else c for c in text if not stringprep.in_table_b1(c)
    )
    prepared = unicodedata.ucd_3_2_0.normalize("NFKC", mapped)
    if not prepared:
        raise SASLConfigurationError("SASLprep: the prepared string is empty")
    for c in prepared:
        if any(table(c) for table in _PROHIBITED):
            raise SASLConfigurationError("SASLprep: contains a prohibited character")
        if not allow_unassigned and stringprep.in_table_a1(c):
            raise SASLConfigurationError("SASLprep: contains an unassigned code point")
    if any(stringprep.in_table_d1(c) for c in prepared) and (
        any(stringprep.in_table_d2(c) for c in prepared)
        or not (stringprep.in_table_d1(prepared[0]) and stringprep.in_table_d1(prepared[-1]))
    ):
        raise SASLConfigurationError("SASLprep: invalid bidirectional text")
    return prepared


# --------------------------------------------------------------------------------------
# Credentials
# --------------------------------------------------------------------------------------


def _hide(value: object) -> str:
    return "None" if value is None else _HIDDEN


@attrs.frozen(kw_only=True)
class ClientCredentials:
    """What a client may authenticate with; :func:`select_client_mechanism` picks the
    mechanism. ``password`` serves SCRAM and PLAIN, ``token`` (an OAuth 2.0 access token)
    serves XOAUTH2, ``authzid`` is the authorization identity for PLAIN and EXTERNAL.
    ``password`` and ``token`` never show in ``repr``."""

    username: str | None = None
    password: str | None = attrs.field(default=None, repr=_hide)
    token: str | None = attrs.field(default=None, repr=_hide)
    authzid: str | None = None


def _check_iterations(iterations: int) -> int:
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 1:
        raise SASLConfigurationError("SCRAM iteration count must be a positive int")
    return iterations


@attrs.frozen(kw_only=True)
class ScramCredentials:
    """What a server stores for a SCRAM user (RFC 5802 section 3): the salt, the iteration
    count, ``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
    ``ServerKey = HMAC(SaltedPassword, "Server Key")``. Build it with
    :func:`derive_scram_credentials`. Only the iteration count shows in ``repr``."""

    salt: bytes = attrs.field(repr=False)
    iterations: int = attrs.field(converter=_check_iterations)
    stored_key: bytes = attrs.field(repr=False)
    server_key: bytes = attrs.field(repr=False)

    @salt.validator
    def _salt_ok(self, attribute: object, value: bytes) -> None:
        if not isinstance(value, bytes) or not value:
            raise SASLConfigurationError("SCRAM salt must be non-empty bytes")

    @stored_key.validator
    @server_key.validator
    def _key_ok(self, attribute: object, value: bytes) -> None:
        if not isinstance(value, bytes) or not value:
            raise SASLConfigurationError("SCRAM keys must be non-empty bytes")


def _scram_hash(mechanism: str) -> tuple[str, int]:
    try:
        return SCRAM_MECHANISMS[mechanism]
    except (KeyError, TypeError):
        raise SASLConfigurationError(f"not a SCRAM mechanism: {mechanism!r:.40}") from None


def _salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(hash_name, password.encode("utf-8"), salt, iterations)


def derive_scram_credentials(
    password: str,
    *,
    mechanism: str = "SCRAM-SHA-256",
    salt: bytes | None = None,
    iterations: int = _DEFAULT_MIN_ITERATIONS,
) -> ScramCredentials:
    """Derive what a server stores for a SCRAM user from a password (RFC 5802 section 3).

    The password is prepared with :func:`saslprep` ("stored string" rules). ``salt``
    defaults to 16 random bytes from :mod:`secrets`.

    Raises:
        SASLConfigurationError: an unknown mechanism, a bad iteration count, or a password
            that SASLprep rejects.
    """
    hash_name, _ = _scram_hash(mechanism)
    iterations = _check_iterations(iterations)
    prepared = saslprep(password)
    if salt is None:
        salt = secrets.token_bytes(16)
    salted = _salted_password(hash_name, prepared, salt, iterations)
    client_key = hmac.digest(salted, b"Client Key", hash_name)
    return ScramCredentials(
        salt=salt,
        iterations=iterations,
        stored_key=hashlib.new(hash_name, client_key).digest(),
        server_key=hmac.digest(salted, b"Server Key", hash_name),
    )


# --------------------------------------------------------------------------------------
# Credential stores supplied by the server application
# --------------------------------------------------------------------------------------


@runtime_checkable
class PasswordStore(Protocol):
    """Checks PLAIN passwords. Implementations should compare with
    :func:`hmac.compare_digest` (or a password hash's own verifier)."""

    def check_password(self, username: str, password: str) -> bool:
        """True if ``password`` is ``username``'s password."""


@runtime_checkable
class ScramStore(Protocol):
    """Looks up SCRAM credentials (see :func:`derive_scram_credentials`)."""

    def scram_credentials(
        self, username: str, mechanism: str
    ) -> ScramCredentials | tuple[bytes, int, bytes, bytes] | None:
        """``username``'s credentials for ``mechanism`` (``"SCRAM-SHA-256"`` or
        ``"SCRAM-SHA-512"``) as a :class:`ScramCredentials` or a tuple
        ``(salt, iterations, stored_key, server_key)``, or None if there are none."""


@runtime_checkable
class TokenStore(Protocol):
    """Checks XOAUTH2 bearer tokens."""

    def check_token(self, username: str, token: str) -> bool:
        """True if ``token`` is a valid access token for ``username``."""


@runtime_checkable
class Authorizer(Protocol):
    """Decides whether an authenticated identity may act as another one (the authzid of
    PLAIN and EXTERNAL, RFC 4422 section 3.4.1). Without an authorizer, an authzid
    different from the authenticated identity is refused."""

    def authorize(self, authcid: str, authzid: str) -> bool:
        """True if ``authcid`` (already authenticated) may act as ``authzid``."""


# Any of the store methods may raise SASLSystemError to fail the exchange with its code.


# --------------------------------------------------------------------------------------
# Client mechanisms
# --------------------------------------------------------------------------------------


class _Phase(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class SASLClientMechanism:
    """The client side of one SASL exchange (AMQP 1.0 part 5.3.2, RFC 4422 section 3).

    The engine drives it like this:

    1. on sasl-mechanisms, choose one (:func:`select_client_mechanism`) and send sasl-init
       with ``mechanism=name`` and ``initial_response=initial_response(hostname)``;
    2. on each sasl-challenge, send sasl-response with ``respond(challenge)``;
    3. on sasl-outcome with code ``ok``, call ``verify_outcome(additional_data)``: if it
       raises, the server is not who it claims to be and the connection must be closed;
       on any other code, raise or report ``outcome_error(code)``.

    Every method raises only :class:`SASLError` subclasses: :class:`SASLProtocolError` for
    bad peer data, :class:`SASLServerError` for a server's explained refusal,
    :class:`SASLServerVerificationError` for a failed server signature, and
    :class:`SASLStateError` for calls out of order. After an error the object is spent.

    ``sends_secrets_in_clear`` is True for mechanisms that put a reusable secret on the wire
    (PLAIN, XOAUTH2): the engine should refuse them on an unencrypted connection unless the
    application opted in.
    """

    #: The SASL mechanism name, sent as the sasl-init ``mechanism`` symbol.
    name: str = ""
    #: True if the mechanism sends a password or token that an eavesdropper could reuse.
    sends_secrets_in_clear: bool = False

    def __init__(self) -> None:
        self._phase = _Phase.NEW

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self._phase.value}>"

    def initial_response(self, hostname: str | None = None) -> bytes | None:
        """The sasl-init ``initial-response`` (AMQP 1.0 part 5.3.3.2), or None to send none.

        ``hostname`` is the sasl-init hostname; the built-in mechanisms do not use it.
        """
        if self._phase is not _Phase.NEW:
            raise SASLStateError("initial_response() may be called once, first")
        self._phase = _Phase.RUNNING
        return self._guard(self._initial_response, hostname)

    def respond(self, challenge: bytes) -> bytes:
        """The sasl-response (AMQP 1.0 part 5.3.3.4) to a sasl-challenge (5.3.3.3)."""
        self._check_running("respond()")
        return self._guard(self._respond, bytes(challenge))

    def verify_outcome(self, additional_data: bytes | None) -> None:
        """Check a sasl-outcome with code ``ok`` (AMQP 1.0 part 5.3.3.5) and its
        ``additional-data``. Returns if the exchange succeeded from our side too."""
        self._check_running("verify_outcome()")
        data = None if additional_data is None else bytes(additional_data)
        self._guard(self._verify_outcome, data)
        self._phase = _Phase.DONE

    def outcome_error(self, code: SaslCode) -> SASLError:
        """The error to raise or report for a sasl-outcome whose ``code`` is not ``ok``
        (AMQP 1.0 part 5.3.3.6). It does not raise it, and does not change the state."""
        code = SaslCode(code)
        if code is SaslCode.AUTH:
            return SASLAuthenticationError(
                f"the server refused the {self.name} credentials (sasl-code auth)", code=code
            )
        return SASLSystemError(
            f"the server could not authenticate (sasl-code {code.name.lower()})", code=code
        )

    # Hooks for the concrete mechanisms.

    def _initial_response(self, hostname: str | None) -> bytes | None:
        raise NotImplementedError  # pragma: no cover - every mechanism overrides it

    def _respond(self, challenge: bytes) -> bytes:
        raise SASLProtocolError(f"{self.name} expects no challenge, the server sent one")

    def _verify_outcome(self, additional_data: bytes | None) -> None:
        """By default, additional data is ignored (RFC 4422 lets mechanisms define none)."""

    def _check_running(self, what: str) -> None:
        if self._phase is not _Phase.RUNNING:
            raise SASLStateError(f"{what} is not allowed when the exchange is {self._phase.value}")

    def _guard(self, hook: Callable[[_T], _R], arg: _T) -> _R:
        try:
            return hook(arg)
        except SASLError:
            self._phase = _Phase.FAILED
            raise


class AnonymousClient(SASLClientMechanism):
    """ANONYMOUS (RFC 4505): no credentials. ``trace`` is the optional trace information
    (an email address or an opaque string of at most 255 characters) sent as the initial
    response."""

    name = "ANONYMOUS"

    def __init__(self, trace: str = "") -> None:
        super().__init__()
        if not isinstance(trace, str) or len(trace) > 255 or "\x00" in trace:
            raise SASLConfigurationError("ANONYMOUS trace must be a str of at most 255 chars")
        self._trace = trace

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return self._trace.encode("utf-8")


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


def _escape_saslname(name: str) -> str:
    """RFC 5802 section 5.1: ``=`` becomes ``=3D`` and ``,`` becomes ``=2C``."""
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape_saslname(text: str) -> str:
    first, *rest = text.split("=")
    parts = [first]
    for part in rest:
        if part.startswith("2C"):
            parts.append("," + part[2:])
        elif part.startswith("3D"):
            parts.append("=" + part[2:])
        else:
            raise SASLProtocolError("SCRAM username has a bad '=' escape")
    return "".join(parts)


def _valid_nonce(nonce: str) -> bool:
    """RFC 5802 ``printable``: %x21-2B / %x2D-7E, at least one."""
    return bool(nonce) and all("\x21" <= c <= "\x7e" and c != "," for c in nonce)


def _scram_attributes(text: str, what: str) -> list[tuple[str, str]]:
    """Split a SCRAM message into (attribute, value) pairs, strictly (RFC 5802 section 7).

    Every part is one ASCII letter, ``=``, a value without NUL. The reserved mandatory
    extension ``m`` is refused wherever it appears.
    """
    if "\x00" in text:
        raise SASLProtocolError(f"{what} contains NUL")
    pairs = []
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=" or not (part[0].isascii() and part[0].isalpha()):
            raise SASLProtocolError(f"{what} has a malformed attribute")
        pairs.append((part[0], part[2:]))
    if any(key == "m" for key, _ in pairs):
        raise SASLProtocolError(f"{what} has a mandatory extension (m=), which is not supported")
    return pairs


def _expect(pairs: list[tuple[str, str]], keys: str, what: str) -> list[str]:
    """The values of the leading attributes, which must be exactly ``keys`` in order and
    non-empty; later attributes are extensions, which RFC 5802 says to ignore."""
    if "".join(key for key, _ in pairs[: len(keys)]) != keys:
        raise SASLProtocolError(f"{what} must start with {','.join(keys)} attributes")
    values = [value for _, value in pairs[: len(keys)]]
    if not all(values):
        raise SASLProtocolError(f"{what} has an empty attribute")
    return values


def _new_nonce() -> str:
    return secrets.token_urlsafe(24)


class ScramClient(SASLClientMechanism):
    """SCRAM-SHA-256 (RFC 7677) or SCRAM-SHA-512 (RFC 5802 with SHA-512), client side.

    The GS2 header is always ``n,,``: no channel binding, no authorization identity. The
    username and password are prepared with :func:`saslprep` ("query" rules: unassigned code
    points are allowed); the username is escaped (``=`` as ``=3D``, ``,`` as ``=2C``).

    ``nonce`` is the client nonce (random from :mod:`secrets` if None; injectable for tests).
    The server's iteration count must lie within ``[min_iterations, max_iterations]``: the
    lower bound refuses servers that weaken the hash, the upper bound refuses servers that
    would make us burn CPU.

    The server's final message (``v=`` signature or ``e=`` error, RFC 5802 section 7) is
    accepted in the sasl-outcome's additional-data (the usual AMQP placement) or in a last
    sasl-challenge, which is then answered with an empty response. The signature is compared
    in constant time; an ``e=`` error raises :class:`SASLServerError`.
    """

    sends_secrets_in_clear = False

    def __init__(
        self,
        username: str,
        password: str,
        *,
        mechanism: str = "SCRAM-SHA-256",
        nonce: str | None = None,
        min_iterations: int = _DEFAULT_MIN_ITERATIONS,
        max_iterations: int = _DEFAULT_MAX_ITERATIONS,
    ) -> None:
        super().__init__()
        self._hash, self._digest_size = _scram_hash(mechanism)
        self.name = mechanism
        if not isinstance(username, str) or not isinstance(password, str):
            raise SASLConfigurationError("SCRAM username and password must be str")
        self.username = username
        self._prepared_user = saslprep(username, allow_unassigned=True)
        self._password = saslprep(password, allow_unassigned=True)
        self._nonce = _new_nonce() if nonce is None else nonce
        if not isinstance(self._nonce, str) or not _valid_nonce(self._nonce):
            raise SASLConfigurationError("SCRAM nonce must be printable ASCII without ','")
        self._min_iterations = _check_iterations(min_iterations)
        self._max_iterations = _check_iterations(max_iterations)
        self._client_first_bare = f"n={_escape_saslname(self._prepared_user)},r={self._nonce}"
        self._server_signature: bytes | None = None
        self._verified = False

    def __repr__(self) -> str:
        return f"<ScramClient {self.name} username={self.username!r} {self._phase.value}>"

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return ("n,," + self._client_first_bare).encode("utf-8")

    def _respond(self, challenge: bytes) -> bytes:
        if self._server_signature is None:
            return self._client_final(challenge)
        if self._verified:
            raise SASLProtocolError("SCRAM: a challenge after the server-final message")
        # Some servers send server-final as a challenge and the outcome without data.
        self._check_server_final(challenge)
        return b""

    def _client_final(self, challenge: bytes) -> bytes:
        text = _peer_text(challenge, "SCRAM server-first-message")
        pairs = _scram_attributes(text, "SCRAM server-first-message")
        if pairs[0][0] == "e":
            raise SASLServerError(
                f"SCRAM server error: {_short(pairs[0][1])}", server_error=pairs[0][1]
            )
        nonce, salt_b64, count = _expect(pairs, "rsi", "SCRAM server-first-message")
        if not _valid_nonce(nonce):
            raise SASLProtocolError("SCRAM server nonce has invalid characters")
        prefix = nonce[: len(self._nonce)].encode("ascii")
        if len(nonce) <= len(self._nonce) or not hmac.compare_digest(
            prefix, self._nonce.encode("ascii")
        ):
            raise SASLProtocolError("SCRAM server nonce does not extend the client nonce")
        salt = _b64decode(salt_b64, "SCRAM salt")  # not empty: "s=" was refused above
        if not (count.isascii() and count.isdigit() and count[0] != "0" and len(count) <= 10):
            raise SASLProtocolError("SCRAM iteration count is not a positive number")
        iterations = int(count)
        if not self._min_iterations <= iterations <= self._max_iterations:
            raise SASLProtocolError(
                f"SCRAM iteration count {iterations} is outside the accepted range "
                f"[{self._min_iterations}, {self._max_iterations}]"
            )
        salted = _salted_password(self._hash, self._password, salt, iterations)
        client_key = hmac.digest(salted, b"Client Key", self._hash)
        stored_key = hashlib.new(self._hash, client_key).digest()
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, self._hash)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self._hash)
        self._server_signature = hmac.digest(server_key, auth_message, self._hash)
        return f"{without_proof},p={_b64(proof)}".encode("ascii")

    def _check_server_final(self, data: bytes) -> None:
        text = _peer_text(data, "SCRAM server-final-message")
        pairs = _scram_attributes(text, "SCRAM server-final-message")
        key, value = pairs[0]
        if key == "e":
            raise SASLServerError(f"SCRAM server error: {_short(value)}", server_error=value)
        (verifier,) = _expect(pairs, "v", "SCRAM server-final-message")
        signature = _b64decode(verifier, "SCRAM server signature")
        assert self._server_signature is not None
        if not hmac.compare_digest(signature, self._server_signature):
            raise SASLServerVerificationError("SCRAM server signature does not match")
        self._verified = True

    def _verify_outcome(self, additional_data: bytes | None) -> None:
        if self._server_signature is None:
            raise SASLServerVerificationError(
                "SCRAM: the server reported success before the exchange was complete"
            )
        if additional_data:
            if self._verified:
                raise SASLProtocolError("SCRAM: a second server-final message")
            self._check_server_final(additional_data)
        elif not self._verified:
            raise SASLServerVerificationError("SCRAM: the server sent no server signature")


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


# --------------------------------------------------------------------------------------
# Server mechanisms
# --------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ServerChallenge:
    """Send a sasl-challenge (AMQP 1.0 part 5.3.3.3) with ``data``, then pass the client's
    sasl-response to :meth:`SASLServerMechanism.step`."""

    data: bytes


@attrs.frozen(kw_only=True)
class ServerSuccess:
    """Send a sasl-outcome with code ``ok`` and ``additional_data`` (AMQP 1.0 part 5.3.3.5).

    ``identity`` is who the connection acts as (the authorization identity);
    ``authentication_identity`` is whose credentials were checked. They differ only when an
    :class:`Authorizer` allowed an authzid.
    """

    identity: str
    authentication_identity: str
    additional_data: bytes | None = None


@attrs.frozen(kw_only=True)
class ServerFailure:
    """Send a sasl-outcome with ``code`` (AMQP 1.0 part 5.3.3.6) and no additional data.
    ``error`` says why, for the server's logs; it is not sent to the client."""

    code: SaslCode
    error: SASLError


#: What a server mechanism step returns.
ServerStep = ServerChallenge | ServerSuccess | ServerFailure


class SASLServerMechanism:
    """The server side of one SASL exchange (AMQP 1.0 part 5.3.2, RFC 4422 section 3).

    The engine drives it like this:

    1. on sasl-init, create the mechanism named by the client
       (:meth:`ServerAuthenticator.create_mechanism`) and call
       ``start(initial_response, hostname)``;
    2. on :class:`ServerChallenge`, send a sasl-challenge, and pass the client's sasl-response
       to ``step(response)``; repeat;
    3. on :class:`ServerSuccess` or :class:`ServerFailure`, send the sasl-outcome.

    ``start`` and ``step`` never raise because of what the client sent: malformed data,
    wrong credentials and a store's :class:`SASLSystemError` all become a
    :class:`ServerFailure`. They raise :class:`SASLStateError` only when called out of order
    (``step`` before ``start`` or after the outcome). Any other exception raised by the
    application's store propagates unchanged (it is a bug, not an outcome).

    If the client sent no initial response, a client-first mechanism answers with an empty
    challenge (RFC 4422 section 5) and takes the next response as the initial one.
    """

    name: str = ""
    sends_secrets_in_clear: bool = False

    def __init__(self) -> None:
        self._phase = _Phase.NEW
        self._awaiting_initial = False
        #: The sasl-init hostname, once :meth:`start` was called.
        self.hostname: str | None = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name} {self._phase.value}>"

    def start(self, initial_response: bytes | None, hostname: str | None = None) -> ServerStep:
        """Begin with the sasl-init ``initial-response`` and ``hostname`` (AMQP 1.0 part
        5.3.3.2). The built-in mechanisms do not use the hostname."""
        if self._phase is not _Phase.NEW:
            raise SASLStateError("start() may be called once, first")
        self._phase = _Phase.RUNNING
        self.hostname = hostname
        if initial_response is None:
            self._awaiting_initial = True
            return ServerChallenge(data=b"")
        return self._run(self._start, bytes(initial_response))

    def step(self, response: bytes) -> ServerStep:
        """Continue with the client's sasl-response (AMQP 1.0 part 5.3.3.4)."""
        if self._phase is not _Phase.RUNNING:
            raise SASLStateError(f"step() is not allowed when the exchange is {self._phase.value}")
        if self._awaiting_initial:
            self._awaiting_initial = False
            return self._run(self._start, bytes(response))
        return self._run(self._step, bytes(response))

    def _run(self, hook: Callable[[bytes], ServerStep], data: bytes) -> ServerStep:
        try:
            result = hook(data)
        except SASLError as error:
            result = ServerFailure(code=error.code, error=error)
        if not isinstance(result, ServerChallenge):
            self._phase = _Phase.DONE if isinstance(result, ServerSuccess) else _Phase.FAILED
        return result

    def _start(self, initial_response: bytes) -> ServerStep:
        raise NotImplementedError  # pragma: no cover - every mechanism overrides it

    def _step(self, response: bytes) -> ServerStep:
        raise NotImplementedError  # pragma: no cover - only multi-step mechanisms get here


def _authorized(
    authorizer: Authorizer | None, authcid: str, authzid: str, mechanism: str
) -> ServerSuccess:
    """The success for ``authcid`` acting as ``authzid`` (empty: as itself), or raise."""
    if authzid and authzid != authcid:
        if authorizer is None or not authorizer.authorize(authcid, authzid):
            raise SASLAuthenticationError(f"{mechanism}: the authorization identity is refused")
        return ServerSuccess(identity=authzid, authentication_identity=authcid)
    return ServerSuccess(identity=authcid, authentication_identity=authcid)


class AnonymousServer(SASLServerMechanism):
    """ANONYMOUS (RFC 4505). Every client succeeds as ``identity``. The trace information
    is informational only (RFC 4505 section 2): it is kept in :attr:`trace` when it is
    valid UTF-8 of at most 255 characters without control characters (the "trace"
    profile, section 3), and otherwise dropped, not refused: rhea, for one, sends a NUL
    and a name (PLAIN's layout) as its ANONYMOUS response. Its size is bounded by the SASL
    frame limit. Offer ANONYMOUS only on purpose (:class:`ServerAuthenticator` needs
    ``allow_anonymous=True``)."""

    name = "ANONYMOUS"

    def __init__(self, *, identity: str = "anonymous") -> None:
        super().__init__()
        self._identity = identity
        #: The client's trace information, once received: None if it sent none that RFC
        #: 4505's trace profile allows.
        self.trace: str | None = None

    def _start(self, initial_response: bytes) -> ServerStep:
        try:
            trace: str | None = initial_response.decode("utf-8")
        except UnicodeDecodeError:
            trace = None
        if trace is not None and (len(trace) > 255 or any(ord(c) < 0x20 for c in trace)):
            trace = None
        self.trace = trace
        return ServerSuccess(identity=self._identity, authentication_identity=self._identity)


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


class ScramServer(SASLServerMechanism):
    """SCRAM-SHA-256 / SCRAM-SHA-512, server side (RFC 5802, RFC 7677).

    Accepts GS2 headers ``n,,`` and ``y,,`` (the client can do channel binding but thinks we
    cannot, which is right: we never offer ``-PLUS``); refuses ``p=`` (channel binding) and
    an ``a=`` authorization identity. The username is unescaped and prepared with
    :func:`saslprep` before the :class:`ScramStore` sees it. Unknown users get a
    deterministic fake salt (derived from ``fake_key``) and the same refusal as a wrong
    password, so probing does not reveal which users exist (RFC 5802 section 9). On success
    the additional data is the server-final message ``v=<ServerSignature>``.

    ``nonce`` is the server's part of the nonce (random from :mod:`secrets` if None;
    injectable for tests).
    """

    def __init__(
        self,
        store: ScramStore,
        *,
        mechanism: str = "SCRAM-SHA-256",
        nonce: str | None = None,
        fake_key: bytes | None = None,
        fake_iterations: int = _DEFAULT_MIN_ITERATIONS,
    ) -> None:
        super().__init__()
        self._hash, self._digest_size = _scram_hash(mechanism)
        self.name = mechanism
        self._store = store
        self._server_nonce = _new_nonce() if nonce is None else nonce
        if not isinstance(self._server_nonce, str) or not _valid_nonce(self._server_nonce):
            raise SASLConfigurationError("SCRAM nonce must be printable ASCII without ','")
        self._fake_key = secrets.token_bytes(32) if fake_key is None else fake_key
        self._fake_iterations = _check_iterations(fake_iterations)
        self._username = ""
        self._credentials: ScramCredentials | None = None
        self._known_user = False
        self._gs2_header = ""
        self._nonce = ""
        self._auth_prefix = ""

    def _start(self, initial_response: bytes) -> ServerStep:
        text = _peer_text(initial_response, "SCRAM client-first-message")
        flag, _, rest = text.partition(",")
        authzid, comma, bare = rest.partition(",")
        if flag.startswith("p="):
            raise SASLProtocolError("SCRAM channel binding is not supported")
        if flag not in ("n", "y") or not comma or authzid[:2] not in ("", "a="):
            raise SASLProtocolError("SCRAM client-first-message has a malformed GS2 header")
        if authzid:
            raise SASLProtocolError("SCRAM authorization identity (a=) is not supported")
        pairs = _scram_attributes(bare, "SCRAM client-first-message")
        saslname, client_nonce = _expect(pairs, "nr", "SCRAM client-first-message")
        if not _valid_nonce(client_nonce):
            raise SASLProtocolError("SCRAM client nonce has invalid characters")
        try:
            username = saslprep(_unescape_saslname(saslname), allow_unassigned=True)
        except SASLConfigurationError as error:
            raise SASLProtocolError(f"SCRAM username: {error.description}") from None
        self._username = username
        self._gs2_header = text[: len(text) - len(bare)]
        self._credentials = self._lookup(username)
        self._nonce = client_nonce + self._server_nonce
        server_first = (
            f"r={self._nonce},s={_b64(self._credentials.salt)},i={self._credentials.iterations}"
        )
        self._auth_prefix = f"{bare},{server_first},"
        return ServerChallenge(data=server_first.encode("ascii"))

    def _lookup(self, username: str) -> ScramCredentials:
        found = self._store.scram_credentials(username, self.name)
        if found is not None:
            self._known_user = True
            if isinstance(found, ScramCredentials):
                return found
            try:
                salt, iterations, stored_key, server_key = found
                return ScramCredentials(
                    salt=salt, iterations=iterations, stored_key=stored_key, server_key=server_key
                )
            except (TypeError, ValueError):
                raise SASLSystemError(
                    "the SCRAM store returned unusable credentials", code=SaslCode.SYS_PERM
                ) from None
        label = f"{self.name}\x00{username}".encode()

        def fake(purpose: bytes) -> bytes:
            return hmac.digest(self._fake_key, purpose + label, "sha256")

        return ScramCredentials(
            salt=fake(b"salt")[:16],
            iterations=self._fake_iterations,
            stored_key=fake(b"stored"),
            server_key=fake(b"server"),
        )

    def _step(self, response: bytes) -> ServerStep:
        assert self._credentials is not None
        text = _peer_text(response, "SCRAM client-final-message")
        without_proof, sep, proof_b64 = text.rpartition(",p=")
        if not sep or "," in proof_b64:
            raise SASLProtocolError("SCRAM client-final-message must end with the proof (p=)")
        pairs = _scram_attributes(without_proof, "SCRAM client-final-message")
        binding, nonce = _expect(pairs, "cr", "SCRAM client-final-message")
        if _b64decode(binding, "SCRAM channel binding") != self._gs2_header.encode("utf-8"):
            raise SASLProtocolError("SCRAM channel binding does not match the GS2 header")
        if not hmac.compare_digest(nonce.encode("utf-8"), self._nonce.encode("ascii")):
            raise SASLProtocolError("SCRAM nonce does not match")
        proof = _b64decode(proof_b64, "SCRAM proof")
        if len(proof) != self._digest_size:
            raise SASLProtocolError("SCRAM proof has the wrong length")
        auth_message = (self._auth_prefix + without_proof).encode("utf-8")
        credentials = self._credentials
        signature = hmac.digest(credentials.stored_key, auth_message, self._hash)
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        candidate = hashlib.new(self._hash, client_key).digest()
        if not (hmac.compare_digest(candidate, credentials.stored_key) and self._known_user):
            raise SASLAuthenticationError(f"{self.name}: authentication failed")
        server_signature = hmac.digest(credentials.server_key, auth_message, self._hash)
        return ServerSuccess(
            identity=self._username,
            authentication_identity=self._username,
            additional_data=b"v=" + _b64(server_signature).encode("ascii"),
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


# --------------------------------------------------------------------------------------
# Choosing mechanisms
# --------------------------------------------------------------------------------------


class ServerAuthenticator:
    """The server application's SASL configuration: which mechanisms to offer, and a fresh
    mechanism object for each exchange.

    ``store`` is any object implementing some of :class:`PasswordStore` (PLAIN),
    :class:`ScramStore` (SCRAM-SHA-512 and SCRAM-SHA-256), :class:`TokenStore` (XOAUTH2)
    and :class:`Authorizer` (authzid for PLAIN and EXTERNAL); a mechanism is offered only if
    the store implements its method. EXTERNAL is offered when the engine passes a
    ``peer_identity``; ANONYMOUS only if ``allow_anonymous``. A server that offers ANONYMOUS
    (:attr:`allows_anonymous`) also takes a client that sends the bare AMQP protocol header
    instead of SASL's (core spec 2.2, 5.1: the SASL layer is then optional), as the
    ``anonymous_identity``; one that does not refuses such a client. PLAIN and XOAUTH2 are offered
    only on an ``encrypted`` connection, unless ``allow_cleartext_secrets``. ``mechanisms``,
    if given, restricts the offer to those names.

    ``nonce_factory`` and ``fake_key`` are passed to :class:`ScramServer` (injectable for
    tests); ``fake_key`` is random by default, and stays the same for this object's life,
    so an unknown user gets the same fake salt every time.
    """

    def __init__(
        self,
        store: object = None,
        *,
        allow_anonymous: bool = False,
        allow_cleartext_secrets: bool = False,
        mechanisms: Collection[str] | None = None,
        anonymous_identity: str = "anonymous",
        xoauth2_scope: str | None = None,
        nonce_factory: Callable[[], str] | None = None,
        fake_key: bytes | None = None,
        fake_iterations: int = _DEFAULT_MIN_ITERATIONS,
    ) -> None:
        self._store = store
        self._allow_anonymous = allow_anonymous
        self._allow_cleartext = allow_cleartext_secrets
        self._restrict = None if mechanisms is None else frozenset(mechanisms)
        self._anonymous_identity = anonymous_identity
        self._xoauth2_scope = xoauth2_scope
        self._nonce_factory = nonce_factory
        self._fake_key = secrets.token_bytes(32) if fake_key is None else fake_key
        self._fake_iterations = _check_iterations(fake_iterations)

    def __repr__(self) -> str:
        return (
            f"<ServerAuthenticator store={type(self._store).__name__} "
            f"anonymous={self._allow_anonymous} cleartext={self._allow_cleartext}>"
        )

    @property
    def allows_anonymous(self) -> bool:
        """ANONYMOUS is offered, so a client without a SASL layer (the bare AMQP header) is
        taken too, as :attr:`anonymous_identity` (core spec 5.1)."""
        return self._allow_anonymous and (self._restrict is None or "ANONYMOUS" in self._restrict)

    @property
    def anonymous_identity(self) -> str:
        """The identity of anonymous clients: through ANONYMOUS, or without SASL."""
        return self._anonymous_identity

    def offered_mechanisms(
        self, *, peer_identity: str | None = None, encrypted: bool = False
    ) -> list[str]:
        """The sasl-server-mechanisms to send (AMQP 1.0 part 5.3.3.1), strongest first.

        Raises:
            SASLConfigurationError: nothing can be offered (the spec forbids an empty list).
        """
        store = self._store
        cleartext = encrypted or self._allow_cleartext
        available = {
            "SCRAM-SHA-512": isinstance(store, ScramStore),
            "SCRAM-SHA-256": isinstance(store, ScramStore),
            "EXTERNAL": bool(peer_identity),
            "PLAIN": cleartext and isinstance(store, PasswordStore),
            "XOAUTH2": cleartext and isinstance(store, TokenStore),
            "ANONYMOUS": self._allow_anonymous,
        }
        offered = [
            name
            for name in MECHANISM_PREFERENCE
            if available[name] and (self._restrict is None or name in self._restrict)
        ]
        if not offered:
            raise SASLConfigurationError("no SASL mechanism can be offered with this setup")
        return offered

    def create_mechanism(
        self, name: str, *, peer_identity: str | None = None, encrypted: bool = False
    ) -> SASLServerMechanism:
        """A new server mechanism for the client's choice in sasl-init (AMQP 1.0 part
        5.3.3.2), with the same ``peer_identity`` and ``encrypted`` as the offer.

        Raises:
            SASLMechanismNotSupportedError: ``name`` is not among
                :meth:`offered_mechanisms`; the engine fails the authentication.
        """
        if name not in self.offered_mechanisms(peer_identity=peer_identity, encrypted=encrypted):
            raise SASLMechanismNotSupportedError(f"mechanism {name!r:.40} is not offered")
        store = self._store
        authorizer = store if isinstance(store, Authorizer) else None
        if name in SCRAM_MECHANISMS:
            assert isinstance(store, ScramStore)
            return ScramServer(
                store,
                mechanism=name,
                nonce=None if self._nonce_factory is None else self._nonce_factory(),
                fake_key=self._fake_key,
                fake_iterations=self._fake_iterations,
            )
        if name == "PLAIN":
            assert isinstance(store, PasswordStore)
            return PlainServer(store, authorizer=authorizer)
        if name == "XOAUTH2":
            assert isinstance(store, TokenStore)
            return XOAuth2Server(store, scope=self._xoauth2_scope)
        if name == "EXTERNAL":
            return ExternalServer(peer_identity, authorizer=authorizer)
        return AnonymousServer(identity=self._anonymous_identity)


def select_client_mechanism(
    offered: Iterable[str],
    credentials: ClientCredentials,
    *,
    tls_client_cert: bool = False,
    encrypted: bool = False,
    allow_cleartext_secrets: bool = False,
    allow_anonymous: bool | None = None,
    allowed: Collection[str] | None = None,
    min_iterations: int = _DEFAULT_MIN_ITERATIONS,
    max_iterations: int = _DEFAULT_MAX_ITERATIONS,
    anonymous_trace: str = "",
) -> SASLClientMechanism:
    """Choose the strongest mechanism that the server offers (its sasl-mechanisms list,
    AMQP 1.0 part 5.3.3.1) and the credentials allow, and return a new client mechanism.

    The order is :data:`MECHANISM_PREFERENCE`, whatever the server's order (part 5.3.3.2:
    "authenticate using the highest-level security profile it can handle"):

    * SCRAM-SHA-512, SCRAM-SHA-256: a username and password;
    * EXTERNAL: ``tls_client_cert`` (a client certificate is in use), with the optional
      ``credentials.authzid``;
    * PLAIN: a username and password, on an ``encrypted`` connection or with
      ``allow_cleartext_secrets``;
    * XOAUTH2: a username and token, under the same condition;
    * ANONYMOUS: if ``allow_anonymous``; by default (None) only when the credentials hold no
      username, password or token, so that configured credentials are never silently
      dropped.

    ``allowed`` restricts the choice to those names (one name forces that mechanism).

    Raises:
        SASLNoMechanismError: nothing fits. The message lists the server's offer.
    """
    offer = [str(name) for name in offered]
    if allow_anonymous is None:
        allow_anonymous = (
            credentials.username is None
            and credentials.password is None
            and credentials.token is None
        )
    cleartext = encrypted or allow_cleartext_secrets
    has_password = credentials.username is not None and credentials.password is not None
    usable = {
        "SCRAM-SHA-512": has_password,
        "SCRAM-SHA-256": has_password,
        "EXTERNAL": tls_client_cert,
        "PLAIN": has_password and cleartext,
        "XOAUTH2": cleartext and credentials.username is not None and credentials.token is not None,
        "ANONYMOUS": allow_anonymous,
    }
    for name in MECHANISM_PREFERENCE:
        if name not in offer or not usable[name] or (allowed is not None and name not in allowed):
            continue
        if name in SCRAM_MECHANISMS:
            assert credentials.username is not None and credentials.password is not None
            return ScramClient(
                credentials.username,
                credentials.password,
                mechanism=name,
                min_iterations=min_iterations,
                max_iterations=max_iterations,
            )
        if name == "EXTERNAL":
            return ExternalClient(credentials.authzid)
        if name == "PLAIN":
            assert credentials.username is not None and credentials.password is not None
            return PlainClient(
                credentials.username, credentials.password, authzid=credentials.authzid
            )
        if name == "XOAUTH2":
            assert credentials.username is not None and credentials.token is not None
            return XOAuth2Client(credentials.username, credentials.token)
        return AnonymousClient(anonymous_trace)
    shown = ", ".join(repr(name[:40]) for name in offer[:20]) or "nothing"
    raise SASLNoMechanismError(
        f"no usable SASL mechanism: the server offers {shown}; check the credentials, "
        "tls_client_cert, encrypted/allow_cleartext_secrets and allowed"
    )
