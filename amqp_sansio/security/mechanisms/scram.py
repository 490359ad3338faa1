"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), client and server."""

from __future__ import annotations

import hashlib
import hmac
import secrets

from ...definitions.sasl import SaslCode
from .base import (
    SASLClientMechanism,
    SASLServerMechanism,
    ServerChallenge,
    ServerStep,
    ServerSuccess,
    _b64,
    _b64decode,
    _peer_text,
    _short,
)
from .credentials import (
    _DEFAULT_MAX_ITERATIONS,
    _DEFAULT_MIN_ITERATIONS,
    ScramCredentials,
    ScramStore,
    _check_iterations,
    _salted_password,
    _scram_hash,
    saslprep,
)
from .errors import (
    SASLAuthenticationError,
    SASLConfigurationError,
    SASLProtocolError,
    SASLServerError,
    SASLServerVerificationError,
    SASLSystemError,
)


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
