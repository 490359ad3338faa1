"""Credentials a client may offer, SCRAM keys derived from a password (RFC 5802), and the
protocols of the credential stores a server application supplies."""

from __future__ import annotations

import hashlib
import hmac
import secrets
import stringprep
import unicodedata
from typing import Protocol, runtime_checkable

import attrs

from .errors import SASLConfigurationError

#: SCRAM mechanism name -> (hashlib name, digest size in bytes), RFC 7677 and RFC 5802.
SCRAM_MECHANISMS: dict[str, tuple[str, int]] = {
    "SCRAM-SHA-512": ("sha512", 64),
    "SCRAM-SHA-256": ("sha256", 32),
}

_DEFAULT_MIN_ITERATIONS = 4096
_DEFAULT_MAX_ITERATIONS = 1_000_000
_HIDDEN = "<hidden>"


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

    >>> from amqp_sansio.sasl import saslprep
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
