"""SASL mechanisms (core spec 5.3; RFC 4422, 4505, 4616, 5802, 7677; XOAUTH2), both ends,
without frames: RFC test vectors, client <-> server round trips, refusals, hostile input
(Hypothesis), mechanism selection, and that secrets never show in a repr, a str or an error.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_sansio import LocalProtocolError, RemoteProtocolError, Symbol
from amqp_sansio.definitions.amqp10.performatives import SaslCode
from amqp_sansio.security.mechanisms import (
    MECHANISM_PREFERENCE,
    AnonymousClient,
    AnonymousServer,
    ClientCredentials,
    ExternalClient,
    ExternalServer,
    PlainClient,
    PlainServer,
    SASLAuthenticationError,
    SASLClientMechanism,
    SASLConfigurationError,
    SASLError,
    SASLMechanismNotSupportedError,
    SASLNoMechanismError,
    SASLProtocolError,
    SASLServerError,
    SASLServerMechanism,
    SASLServerVerificationError,
    SASLStateError,
    SASLSystemError,
    ScramClient,
    ScramCredentials,
    ScramServer,
    ServerAuthenticator,
    ServerChallenge,
    ServerFailure,
    ServerSuccess,
    XOAuth2Client,
    XOAuth2Server,
    derive_scram_credentials,
    saslprep,
    select_client_mechanism,
)

# RFC 7677 section 3.
RFC_USER = "user"
RFC_PASSWORD = "pencil"
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="

# Secrets whose appearance anywhere in a repr/str is a failure.
PASSWORD = "s3cr3t-Pässw0rd"
TOKEN = "ya29.SECRET-TOKEN-value"
SERVER_NONCE = "srvNONCE123"


class Store:
    """A credential store implementing every protocol, with call records."""

    def __init__(
        self,
        *,
        password: str = PASSWORD,
        token: str = TOKEN,
        iterations: int = 4096,
        authorize: dict[str, set[str]] | None = None,
    ) -> None:
        self.users = {"alice", "a=b,c", "Ünïcode"}
        self.password = password
        self.token = token
        self.scram: dict[tuple[str, str], Any] = {}
        for user in self.users:
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                self.scram[(user, mech)] = derive_scram_credentials(
                    password, mechanism=mech, salt=b"salt-" + user.encode(), iterations=iterations
                )
        self.authorizations = authorize or {}
        self.raise_error: SASLError | None = None

    def check_password(self, username: str, password: str) -> bool:
        if self.raise_error is not None:
            raise self.raise_error
        return username in self.users and hmac.compare_digest(
            password.encode(), self.password.encode()
        )

    def scram_credentials(self, username: str, mechanism: str) -> Any:
        if self.raise_error is not None:
            raise self.raise_error
        return self.scram.get((username, mechanism))

    def check_token(self, username: str, token: str) -> bool:
        return username in self.users and hmac.compare_digest(token.encode(), self.token.encode())

    def authorize(self, authcid: str, authzid: str) -> bool:
        return authzid in self.authorizations.get(authcid, set())


class PasswordOnly:
    def check_password(self, username: str, password: str) -> bool:
        return username == "alice" and password == PASSWORD


def rfc_store() -> Store:
    store = Store()
    store.scram[(RFC_USER, "SCRAM-SHA-256")] = derive_scram_credentials(
        RFC_PASSWORD, salt=RFC_SALT, iterations=4096
    )
    return store


def run_exchange(
    client: SASLClientMechanism, server: SASLServerMechanism, hostname: str | None = "host"
) -> ServerSuccess | ServerFailure:
    """Pump one exchange the way the engine would; returns the server's outcome, after the
    client verified it (success) or built its error (failure)."""
    step = server.start(client.initial_response(hostname), hostname)
    while isinstance(step, ServerChallenge):
        step = server.step(client.respond(step.data))
    if isinstance(step, ServerSuccess):
        client.verify_outcome(step.additional_data)
    return step


# --------------------------------------------------------------------------------------
# SCRAM: RFC 7677 test vector
# --------------------------------------------------------------------------------------


def test_rfc7677_client_side() -> None:
    client = ScramClient(RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE)
    assert client.name == "SCRAM-SHA-256"
    assert not client.sends_secrets_in_clear
    assert client.initial_response("example.com") == RFC_CLIENT_FIRST
    assert client.respond(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify_outcome(RFC_SERVER_FINAL)
    assert "done" in repr(client)


def test_rfc7677_client_side_server_final_as_challenge() -> None:
    client = ScramClient(RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE)
    client.initial_response(None)
    client.respond(RFC_SERVER_FIRST)
    assert client.respond(RFC_SERVER_FINAL) == b""
    client.verify_outcome(None)
    assert "done" in repr(client)


def test_rfc7677_server_side_with_injected_nonce_and_salt() -> None:
    server = ScramServer(rfc_store(), nonce=RFC_SERVER_NONCE)
    assert server.start(RFC_CLIENT_FIRST, "host") == ServerChallenge(data=RFC_SERVER_FIRST)
    assert server.step(RFC_CLIENT_FINAL) == ServerSuccess(
        identity="user", authentication_identity="user", additional_data=RFC_SERVER_FINAL
    )
    with pytest.raises(SASLStateError):
        server.step(RFC_CLIENT_FINAL)


def test_rfc7677_stored_credentials() -> None:
    credentials = derive_scram_credentials(RFC_PASSWORD, salt=RFC_SALT)
    salted = hashlib.pbkdf2_hmac("sha256", b"pencil", RFC_SALT, 4096)
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    assert credentials.stored_key == hashlib.sha256(client_key).digest()
    assert credentials.server_key == hmac.digest(salted, b"Server Key", "sha256")
    assert credentials.iterations == 4096


# --------------------------------------------------------------------------------------
# SCRAM: round trips and refusals
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256"])
@pytest.mark.parametrize("username", ["alice", "a=b,c", "Ünïcode"])
def test_scram_round_trip(mechanism: str, username: str) -> None:
    authenticator = ServerAuthenticator(Store())
    server = authenticator.create_mechanism(mechanism)
    client = ScramClient(username, PASSWORD, mechanism=mechanism)
    outcome = run_exchange(client, server)
    assert isinstance(outcome, ServerSuccess)
    assert outcome.identity == outcome.authentication_identity == username
    assert outcome.additional_data is not None and outcome.additional_data.startswith(b"v=")
    assert server.name == client.name == mechanism


def test_scram_escapes_username() -> None:
    client = ScramClient("a=b,c", PASSWORD, nonce="abc")
    assert client.initial_response() == b"n,,n=a=3Db=2Cc,r=abc"


def test_scram_sha512_exchange_with_store_tuple() -> None:
    store = Store()
    creds = store.scram[("alice", "SCRAM-SHA-512")]
    store.scram[("alice", "SCRAM-SHA-512")] = (
        creds.salt,
        creds.iterations,
        creds.stored_key,
        creds.server_key,
    )
    server = ScramServer(store, mechanism="SCRAM-SHA-512")
    outcome = run_exchange(ScramClient("alice", PASSWORD, mechanism="SCRAM-SHA-512"), server)
    assert isinstance(outcome, ServerSuccess)


def test_scram_wrong_password_fails_with_auth() -> None:
    server = ScramServer(Store())
    client = ScramClient("alice", "not the password")
    outcome = run_exchange(client, server)
    assert isinstance(outcome, ServerFailure)
    assert outcome.code is SaslCode.AUTH
    assert type(outcome.error) is SASLAuthenticationError
    error = client.outcome_error(outcome.code)
    assert isinstance(error, SASLAuthenticationError) and error.code is SaslCode.AUTH


def test_scram_unknown_user_looks_like_wrong_password() -> None:
    key = b"k" * 32
    first = ScramServer(Store(), fake_key=key, nonce="n1")
    second = ScramServer(Store(), fake_key=key, nonce="n1")
    challenge_1 = first.start(b"n,,n=mallory,r=abc")
    challenge_2 = second.start(b"n,,n=mallory,r=abc")
    assert challenge_1 == challenge_2  # same fake salt every time
    assert isinstance(challenge_1, ServerChallenge)
    assert b",i=4096" in challenge_1.data
    wrong = run_exchange(ScramClient("alice", "wrong"), ScramServer(Store()))
    unknown = run_exchange(ScramClient("mallory", PASSWORD), ScramServer(Store()))
    assert isinstance(wrong, ServerFailure) and isinstance(unknown, ServerFailure)
    assert str(wrong.error) == str(unknown.error)


def test_scram_unknown_user_with_forged_proof_still_fails() -> None:
    """Even a client that computes the proof from the fake salt gets nowhere: the fake
    keys are not derived from any password."""
    server = ScramServer(Store(), nonce="n1", fake_key=b"k" * 32)
    client = ScramClient("mallory", "anything", nonce="c1")
    outcome = run_exchange(client, server)
    assert isinstance(outcome, ServerFailure) and outcome.code is SaslCode.AUTH


def test_scram_tampered_server_signature() -> None:
    client = ScramClient(RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE)
    client.initial_response()
    client.respond(RFC_SERVER_FIRST)
    signature = bytearray(base64.b64decode(RFC_SERVER_FINAL[2:]))
    signature[0] ^= 1
    with pytest.raises(SASLServerVerificationError):
        client.verify_outcome(b"v=" + base64.b64encode(bytes(signature)))
    with pytest.raises(SASLStateError):
        client.verify_outcome(RFC_SERVER_FINAL)


def test_scram_server_from_a_different_password_is_detected() -> None:
    """A server that does not know the password cannot produce the signature."""
    store = Store(password="other password")
    client = ScramClient("alice", PASSWORD)
    server = ScramServer(store)
    step = server.start(client.initial_response())
    assert isinstance(step, ServerChallenge)
    client.respond(step.data)
    # The impostor computes the signature from its own key.
    salted = hashlib.pbkdf2_hmac("sha256", b"other password", b"salt-alice", 4096)
    forged = hmac.digest(hmac.digest(salted, b"Server Key", "sha256"), b"x", "sha256")
    with pytest.raises(SASLServerVerificationError):
        client.verify_outcome(b"v=" + base64.b64encode(forged))


def scram_client_after_first() -> ScramClient:
    client = ScramClient(RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE)
    client.initial_response()
    client.respond(RFC_SERVER_FIRST)
    return client


def test_scram_success_without_signature_is_refused() -> None:
    with pytest.raises(SASLServerVerificationError):
        scram_client_after_first().verify_outcome(None)
    with pytest.raises(SASLServerVerificationError):
        scram_client_after_first().verify_outcome(b"")


def test_scram_success_before_server_first_is_refused() -> None:
    client = ScramClient("alice", PASSWORD)
    client.initial_response()
    with pytest.raises(SASLServerVerificationError, match="before the exchange"):
        client.verify_outcome(RFC_SERVER_FINAL)


def test_scram_server_final_twice_is_refused() -> None:
    client = scram_client_after_first()
    client.respond(RFC_SERVER_FINAL)
    with pytest.raises(SASLProtocolError, match="second server-final"):
        client.verify_outcome(RFC_SERVER_FINAL)
    client = scram_client_after_first()
    client.respond(RFC_SERVER_FINAL)
    with pytest.raises(SASLProtocolError, match="after the server-final"):
        client.respond(b"anything")


@pytest.mark.parametrize("where", ["challenge", "outcome"])
def test_scram_server_final_error_is_typed(where: str) -> None:
    client = scram_client_after_first()
    with pytest.raises(SASLServerError) as info:
        if where == "challenge":
            client.respond(b"e=invalid-proof")
        else:
            client.verify_outcome(b"e=invalid-proof,x=ext")
    assert info.value.server_error == "invalid-proof"
    assert info.value.details == {}
    assert info.value.code is SaslCode.AUTH


def test_scram_server_first_error_is_typed() -> None:
    client = ScramClient("alice", PASSWORD)
    client.initial_response()
    with pytest.raises(SASLServerError) as info:
        client.respond(b"e=unknown-user")
    assert info.value.server_error == "unknown-user"


def test_scram_server_first_extensions_are_ignored() -> None:
    client = ScramClient(RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE)
    client.initial_response()
    # The extension is part of the AuthMessage, so the proof differs from the RFC's.
    assert client.respond(RFC_SERVER_FIRST + b",x=whatever").startswith(b"c=biws,r=")


GOOD_NONCE = "r=rOprNGfwEbeRWgbNEkqOsrv"


@pytest.mark.parametrize(
    ("server_first", "match"),
    [
        (b"\xff\xfe", "UTF-8"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22Z\x00aJ0=,i=4096", "NUL"),
        (b"m=x," + RFC_SERVER_FIRST, "mandatory extension"),
        (RFC_SERVER_FIRST + b",m=x", "mandatory extension"),
        (b"garbage", "malformed attribute"),
        (b"r=abc,,s=x", "malformed attribute"),
        (b"\xc3\xa9=x", "malformed attribute"),
        (b"s=W22ZaJ0SNY7soEsUEjb6gQ==,r=rOprNGfwEbeRWgbNEkqOsrv,i=4096", "must start with"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==", "must start with"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=,i=4096", "empty attribute"),
        (b"r=rOprNGfwEbeRWgbNEkqO\xc3\xa9,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "invalid char"),
        (b"r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=xOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOpr,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "does not extend"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7so!sUEjb6gQ==,i=4096", "not valid base64"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ,i=4096", "not valid base64"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gR==,i=4096", "not canonical"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=====,i=4096", "not valid base64"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=04096", "positive number"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=-4096", "positive number"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=\xd9\xa4", "positive number"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=" + b"9" * 11, "positive"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4095", "outside"),
        (b"r=rOprNGfwEbeRWgbNEkqOsrv,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1000001", "outside"),
    ],
)
def test_scram_client_rejects_bad_server_first(server_first: bytes, match: str) -> None:
    client = ScramClient(RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE)
    client.initial_response()
    with pytest.raises(SASLProtocolError, match=match) as info:
        client.respond(server_first)
    assert info.value.code is SaslCode.AUTH
    with pytest.raises(SASLStateError):  # spent after an error
        client.respond(RFC_SERVER_FIRST)


def test_scram_iteration_bounds_are_configurable() -> None:
    client = ScramClient(
        RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE, min_iterations=8192, max_iterations=9000
    )
    client.initial_response()
    with pytest.raises(SASLProtocolError, match=r"\[8192, 9000\]"):
        client.respond(RFC_SERVER_FIRST)
    lenient = ScramClient("alice", PASSWORD, min_iterations=1)
    outcome = run_exchange(lenient, ScramServer(Store(iterations=2)))
    assert isinstance(outcome, ServerSuccess)


@pytest.mark.parametrize(
    ("server_final", "error"),
    [
        (b"\xff", SASLProtocolError),
        (b"x=1", SASLProtocolError),
        (b"v=", SASLProtocolError),
        (b"v=%%%", SASLProtocolError),
        (b"v=AAAA", SASLServerVerificationError),
        (b"m=1,v=AAAA", SASLProtocolError),
    ],
)
def test_scram_client_rejects_bad_server_final(server_final: bytes, error: type) -> None:
    with pytest.raises(error):
        scram_client_after_first().verify_outcome(server_final)


def client_final_for(server: ScramServer, client_first: bytes = RFC_CLIENT_FIRST) -> bytes:
    step = server.start(client_first)
    assert isinstance(step, ServerChallenge), step
    return step.data


def rfc_server() -> ScramServer:
    server = ScramServer(rfc_store(), nonce=RFC_SERVER_NONCE)
    client_final_for(server)
    return server


@pytest.mark.parametrize(
    ("client_first", "match"),
    [
        (b"\xff", "UTF-8"),
        (b"p=tls-unique,,n=user,r=abc", "channel binding is not supported"),
        (b"q,,n=user,r=abc", "GS2 header"),
        (b"n,n=user,r=abc", "GS2 header"),
        (b"n", "GS2 header"),
        (b"n,a=admin,n=user,r=abc", "authorization identity"),
        (b"n,,m=ext,n=user,r=abc", "mandatory extension"),
        (b"n,,r=abc,n=user", "must start with n,r"),
        (b"n,,n=user", "must start with n,r"),
        (b"n,,n=,r=abc", "empty attribute"),
        (b"n,,n=us=2Der,r=abc", "bad '=' escape"),
        (b"n,,n=user,r=a\xc3\xa9", "invalid characters"),
        (b"n,,n=us\x07er,r=abc", "SCRAM username"),
        (b"n,,n=user,r=abc,\x00=x", "NUL"),
    ],
)
def test_scram_server_rejects_bad_client_first(client_first: bytes, match: str) -> None:
    server = ScramServer(Store())
    outcome = server.start(client_first)
    assert isinstance(outcome, ServerFailure)
    assert outcome.code is SaslCode.AUTH
    assert isinstance(outcome.error, SASLProtocolError)
    assert match in outcome.error.description
    with pytest.raises(SASLStateError):
        server.step(b"c=biws")


@pytest.mark.parametrize(
    ("client_final", "match"),
    [
        (b"\xff", "UTF-8"),
        (b"c=biws,r=x", "must end with the proof"),
        (RFC_CLIENT_FINAL + b",x=ext", "must end with the proof"),
        (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,c=biws,p=AAAA", "must start with"),
        (b"c=eSws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA", "GS2 header"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%other,p=AAAA", "nonce does not match"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA", "wrong length"),
        (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=!!", "base64"),
        (b"c=biws,m=x,r=y,p=AAAA", "mandatory extension"),
    ],
)
def test_scram_server_rejects_bad_client_final(client_final: bytes, match: str) -> None:
    outcome = rfc_server().step(client_final)
    assert isinstance(outcome, ServerFailure)
    assert isinstance(outcome.error, SASLProtocolError)
    assert match in outcome.error.description


def test_scram_server_ignores_client_final_extensions_but_they_change_the_proof() -> None:
    without_proof = b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,x=ext"
    outcome = rfc_server().step(without_proof + RFC_CLIENT_FINAL[-47:])
    assert isinstance(outcome, ServerFailure)
    assert type(outcome.error) is SASLAuthenticationError


def manual_client_final(
    client_first_bare: bytes, server_first: bytes, channel_binding: bytes, password: bytes
) -> bytes:
    """A client-final-message computed from RFC 5802 section 3 by hand (SHA-256)."""
    attributes = dict(part.split(b"=", 1) for part in server_first.split(b","))
    salted = hashlib.pbkdf2_hmac(
        "sha256", password, base64.b64decode(attributes[b"s"]), int(attributes[b"i"])
    )
    client_key = hmac.digest(salted, b"Client Key", "sha256")
    without_proof = b"c=" + base64.b64encode(channel_binding) + b",r=" + attributes[b"r"]
    auth_message = client_first_bare + b"," + server_first + b"," + without_proof
    signature = hmac.digest(hashlib.sha256(client_key).digest(), auth_message, "sha256")
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    return without_proof + b",p=" + base64.b64encode(proof)


def test_scram_server_accepts_y_flag() -> None:
    """'y': the client can bind channels but thinks we cannot (RFC 5802 section 6); its
    channel-binding attribute is then base64('y,,')."""
    server = ScramServer(rfc_store(), nonce=RFC_SERVER_NONCE)
    step = server.start(b"y,,n=user,r=" + RFC_CLIENT_NONCE.encode())
    assert step == ServerChallenge(data=RFC_SERVER_FIRST)
    final = manual_client_final(RFC_CLIENT_FIRST[3:], RFC_SERVER_FIRST, b"y,,", b"pencil")
    assert final.startswith(b"c=eSws,")
    assert isinstance(server.step(final), ServerSuccess)
    # The same client-final with the 'n,,' binding does not match the 'y,,' header.
    server = ScramServer(rfc_store(), nonce=RFC_SERVER_NONCE)
    server.start(b"y,,n=user,r=" + RFC_CLIENT_NONCE.encode())
    outcome = server.step(RFC_CLIENT_FINAL)
    assert isinstance(outcome, ServerFailure)
    assert "GS2 header" in outcome.error.description


def test_manual_client_final_reproduces_the_rfc() -> None:
    assert (
        manual_client_final(RFC_CLIENT_FIRST[3:], RFC_SERVER_FIRST, b"n,,", b"pencil")
        == RFC_CLIENT_FINAL
    )


def test_scram_server_without_initial_response_sends_empty_challenge() -> None:
    server = ScramServer(rfc_store(), nonce=RFC_SERVER_NONCE)
    assert server.start(None) == ServerChallenge(data=b"")
    assert server.step(RFC_CLIENT_FIRST) == ServerChallenge(data=RFC_SERVER_FIRST)
    outcome = server.step(RFC_CLIENT_FINAL)
    assert isinstance(outcome, ServerSuccess)
    assert outcome.additional_data == RFC_SERVER_FINAL


@pytest.mark.parametrize("code", [SaslCode.SYS, SaslCode.SYS_PERM, SaslCode.SYS_TEMP])
def test_store_system_errors_become_the_outcome_code(code: SaslCode) -> None:
    store = Store()
    store.raise_error = SASLSystemError("database unavailable", code=code)
    for server in (ScramServer(store), PlainServer(store)):
        first = b"n,,n=alice,r=abc" if isinstance(server, ScramServer) else b"\x00alice\x00pw"
        outcome = server.start(first)
        assert outcome == ServerFailure(code=code, error=store.raise_error)


def test_store_returning_unusable_credentials_is_sys_perm() -> None:
    store = Store()
    store.scram[("alice", "SCRAM-SHA-256")] = (b"salt", 0, b"k", b"k")
    outcome = ScramServer(store).start(b"n,,n=alice,r=abc")
    assert isinstance(outcome, ServerFailure) and outcome.code is SaslCode.SYS_PERM
    store.scram[("alice", "SCRAM-SHA-256")] = (b"salt", 4096)
    outcome = ScramServer(store).start(b"n,,n=alice,r=abc")
    assert isinstance(outcome, ServerFailure) and outcome.code is SaslCode.SYS_PERM
    assert isinstance(outcome.error, SASLSystemError)


# --------------------------------------------------------------------------------------
# PLAIN
# --------------------------------------------------------------------------------------


def test_plain_without_authzid() -> None:
    client = PlainClient("alice", PASSWORD)
    assert client.sends_secrets_in_clear
    assert client.initial_response("host") == b"\x00alice\x00" + PASSWORD.encode()
    outcome = run_exchange(PlainClient("alice", PASSWORD), PlainServer(Store()))
    assert outcome == ServerSuccess(identity="alice", authentication_identity="alice")


def test_plain_with_authzid() -> None:
    client = PlainClient("alice", PASSWORD, authzid="bob")
    assert client.initial_response() == b"bob\x00alice\x00" + PASSWORD.encode()
    allowed = Store(authorize={"alice": {"bob"}})
    outcome = run_exchange(
        PlainClient("alice", PASSWORD, authzid="bob"), PlainServer(allowed, authorizer=allowed)
    )
    assert outcome == ServerSuccess(identity="bob", authentication_identity="alice")


def test_plain_authzid_equal_to_authcid_needs_no_authorizer() -> None:
    outcome = run_exchange(PlainClient("alice", PASSWORD, authzid="alice"), PlainServer(Store()))
    assert outcome == ServerSuccess(identity="alice", authentication_identity="alice")


@pytest.mark.parametrize("authorizer", [None, Store(authorize={"alice": {"carol"}})])
def test_plain_mismatched_authzid_is_refused(authorizer: Store | None) -> None:
    server = PlainServer(Store(), authorizer=authorizer)
    outcome = run_exchange(PlainClient("alice", PASSWORD, authzid="bob"), server)
    assert isinstance(outcome, ServerFailure) and outcome.code is SaslCode.AUTH
    assert "authorization identity" in outcome.error.description


def test_plain_wrong_password() -> None:
    client = PlainClient("alice", "wrong")
    outcome = run_exchange(client, PlainServer(Store()))
    assert isinstance(outcome, ServerFailure)
    assert type(outcome.error) is SASLAuthenticationError and outcome.code is SaslCode.AUTH


def test_plain_password_checked_before_authzid() -> None:
    """A wrong password with a foreign authzid fails for the password, revealing nothing
    about authorizations."""
    store = Store(authorize={"alice": {"bob"}})
    outcome = run_exchange(PlainClient("alice", "wrong", authzid="bob"), PlainServer(store))
    assert isinstance(outcome, ServerFailure)
    assert outcome.error.description == "PLAIN: authentication failed"


@pytest.mark.parametrize(
    "message",
    [b"alice\x00pw", b"\x00alice\x00pw\x00", b"\x00\x00pw", b"\x00alice\x00", b"\x00\xff\x00pw"],
)
def test_plain_server_rejects_malformed(message: bytes) -> None:
    outcome = PlainServer(Store()).start(message)
    assert isinstance(outcome, ServerFailure) and isinstance(outcome.error, SASLProtocolError)


@pytest.mark.parametrize(
    "args",
    [
        ("", "pw", None),
        ("alice", "", None),
        ("a\x00", "pw", None),
        ("alice", "p\x00", None),
        ("alice", "pw", "z\x00"),
        (b"alice", "pw", None),
    ],
)
def test_plain_client_rejects_bad_arguments(args: tuple[Any, Any, Any]) -> None:
    with pytest.raises(SASLConfigurationError) as info:
        PlainClient(args[0], args[1], authzid=args[2])
    assert "pw" not in str(info.value)


def test_plain_client_expects_no_challenge() -> None:
    client = PlainClient("alice", PASSWORD)
    client.initial_response()
    with pytest.raises(SASLProtocolError, match="expects no challenge"):
        client.respond(b"")


def test_plain_client_ignores_additional_data() -> None:
    client = PlainClient("alice", PASSWORD)
    client.initial_response()
    client.verify_outcome(b"whatever")


# --------------------------------------------------------------------------------------
# XOAUTH2
# --------------------------------------------------------------------------------------


def test_xoauth2_success() -> None:
    client = XOAuth2Client("alice", TOKEN)
    assert client.sends_secrets_in_clear
    assert client.initial_response() == f"user=alice\x01auth=Bearer {TOKEN}\x01\x01".encode()
    outcome = run_exchange(XOAuth2Client("alice", TOKEN), XOAuth2Server(Store()))
    assert outcome == ServerSuccess(identity="alice", authentication_identity="alice")


def test_xoauth2_refused_token_error_challenge() -> None:
    client = XOAuth2Client("alice", "expired-token")
    server = XOAuth2Server(Store(), scope="https://example.com/amqp")
    step = server.start(client.initial_response())
    assert isinstance(step, ServerChallenge)
    assert json.loads(step.data) == {
        "status": "401",
        "schemes": "bearer",
        "scope": "https://example.com/amqp",
    }
    assert client.respond(step.data) == b""
    assert client.server_error is not None and client.server_error["status"] == "401"
    outcome = server.step(b"")
    assert isinstance(outcome, ServerFailure) and outcome.code is SaslCode.AUTH
    error = client.outcome_error(outcome.code)
    assert isinstance(error, SASLServerError)
    assert error.server_error == "401"
    assert error.details["scope"] == "https://example.com/amqp"
    assert error.code is SaslCode.AUTH


def test_xoauth2_client_accepts_base64_error_challenge() -> None:
    client = XOAuth2Client("alice", TOKEN)
    client.initial_response()
    payload = base64.b64encode(b'{"status":"400","schemes":"Bearer"}')
    assert client.respond(payload) == b""
    assert client.server_error == {"status": "400", "schemes": "Bearer"}
    with pytest.raises(SASLProtocolError, match="second challenge"):
        client.respond(payload)


def test_xoauth2_success_after_error_is_refused() -> None:
    client = XOAuth2Client("alice", TOKEN)
    client.initial_response()
    client.respond(b'{"status":"401"}')
    with pytest.raises(SASLProtocolError, match="after an error"):
        client.verify_outcome(None)


@pytest.mark.parametrize(
    ("challenge", "match"),
    [
        (b"not json", "neither JSON nor base64"),
        (b"{not json", "not valid JSON"),
        (b"[1]", "neither JSON"),
        (base64.b64encode(b"[1]"), "not a JSON object"),
        (base64.b64encode(b"\xff"), "UTF-8"),
        (b"{" * 100_000, "not valid JSON"),
        (b'{"n": ' + b"1" * 5000 + b"}", "not valid JSON"),
    ],
)
def test_xoauth2_client_rejects_bad_challenge(challenge: bytes, match: str) -> None:
    client = XOAuth2Client("alice", TOKEN)
    client.initial_response()
    with pytest.raises(SASLProtocolError, match=match):
        client.respond(challenge)


@pytest.mark.parametrize(
    "message",
    [
        b"user=alice\x01auth=Bearer tok\x01",
        b"user=alice\x01auth=Bearer tok\x01\x01x",
        b"user=alice\x01auth=Bearer tok\x01host=x\x01\x01",
        b"user=alice\x01user=alice\x01auth=Bearer tok\x01\x01",
        b"user=alice\x01\x01",
        b"user=alice\x01auth\x01\x01",
        b"user=alice\x01auth=Basic tok\x01\x01",
        b"user=alice\x01auth=Bearer \x01\x01",
        b"user=\x01auth=Bearer tok\x01\x01",
        b"\xff",
    ],
)
def test_xoauth2_server_rejects_malformed(message: bytes) -> None:
    outcome = XOAuth2Server(Store()).start(message)
    assert isinstance(outcome, ServerFailure) and isinstance(outcome.error, SASLProtocolError)


def test_xoauth2_server_scheme_is_case_insensitive() -> None:
    message = f"auth=bearer {TOKEN}\x01user=alice\x01\x01".encode()
    assert isinstance(XOAuth2Server(Store()).start(message), ServerSuccess)


@pytest.mark.parametrize(
    ("username", "token"),
    [("", TOKEN), ("alice", ""), ("al\x01ice", TOKEN), ("alice", "a b"), ("alice", b"t")],
)
def test_xoauth2_client_rejects_bad_arguments(username: str, token: Any) -> None:
    with pytest.raises(SASLConfigurationError) as info:
        XOAuth2Client(username, token)
    assert TOKEN not in str(info.value)


# --------------------------------------------------------------------------------------
# ANONYMOUS and EXTERNAL
# --------------------------------------------------------------------------------------


def test_anonymous_enabled() -> None:
    authenticator = ServerAuthenticator(None, allow_anonymous=True, anonymous_identity="guest")
    assert authenticator.offered_mechanisms() == ["ANONYMOUS"]
    server = authenticator.create_mechanism("ANONYMOUS")
    outcome = run_exchange(AnonymousClient("me@example.com"), server)
    assert outcome == ServerSuccess(identity="guest", authentication_identity="guest")
    assert isinstance(server, AnonymousServer) and server.trace == "me@example.com"


def test_anonymous_disabled() -> None:
    authenticator = ServerAuthenticator(PasswordOnly(), allow_cleartext_secrets=True)
    assert authenticator.offered_mechanisms() == ["PLAIN"]
    with pytest.raises(SASLMechanismNotSupportedError) as info:
        authenticator.create_mechanism("ANONYMOUS")
    assert info.value.code is SaslCode.AUTH
    with pytest.raises(SASLConfigurationError, match="no SASL mechanism"):
        ServerAuthenticator(None).offered_mechanisms()


def test_anonymous_client_sends_trace() -> None:
    client = AnonymousClient()
    assert client.initial_response() == b""
    assert not client.sends_secrets_in_clear
    for bad in ("x" * 256, "a\x00", b"bytes"):
        with pytest.raises(SASLConfigurationError):
            AnonymousClient(bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("message", [b"\xff", b"x" * 256, b"a\x00", b"\x00guest", b"a\nb"])
def test_anonymous_server_drops_a_trace_rfc_4505_does_not_allow(message: bytes) -> None:
    """The trace is information only (RFC 4505 section 2): one that is not valid UTF-8, is
    over 255 characters or holds control characters (section 3) is dropped, and the client
    is let in as anonymous (rhea sends NUL and a name)."""
    server = AnonymousServer()
    outcome = server.start(message)
    assert outcome == ServerSuccess(identity="anonymous", authentication_identity="anonymous")
    assert server.trace is None


def test_anonymous_server_keeps_a_valid_trace() -> None:
    server = AnonymousServer()
    assert isinstance(server.start(b"x" * 255), ServerSuccess)
    assert server.trace == "x" * 255


def test_anonymous_server_without_initial_response() -> None:
    server = AnonymousServer()
    assert server.start(None) == ServerChallenge(data=b"")
    assert isinstance(server.step(b""), ServerSuccess)


def test_external_with_peer_identity() -> None:
    authenticator = ServerAuthenticator(None)
    assert authenticator.offered_mechanisms(peer_identity="CN=alice") == ["EXTERNAL"]
    server = authenticator.create_mechanism("EXTERNAL", peer_identity="CN=alice")
    client = ExternalClient()
    assert client.name == "EXTERNAL"
    outcome = run_exchange(client, server)
    assert outcome == ServerSuccess(identity="CN=alice", authentication_identity="CN=alice")
    same = run_exchange(ExternalClient("CN=alice"), ExternalServer("CN=alice"))
    assert isinstance(same, ServerSuccess)


def test_external_without_peer_identity() -> None:
    with pytest.raises(SASLMechanismNotSupportedError):
        ServerAuthenticator(None, allow_anonymous=True).create_mechanism("EXTERNAL")
    outcome = run_exchange(ExternalClient(), ExternalServer(None))
    assert isinstance(outcome, ServerFailure)
    assert type(outcome.error) is SASLAuthenticationError
    assert "no verified peer identity" in outcome.error.description


def test_external_authzid_needs_the_authorizer() -> None:
    refused = run_exchange(ExternalClient("admin"), ExternalServer("CN=alice"))
    assert isinstance(refused, ServerFailure)
    store = Store(authorize={"CN=alice": {"admin"}})
    server = ServerAuthenticator(store).create_mechanism("EXTERNAL", peer_identity="CN=alice")
    allowed = run_exchange(ExternalClient("admin"), server)
    assert allowed == ServerSuccess(identity="admin", authentication_identity="CN=alice")


@pytest.mark.parametrize("message", [b"\xff", b"a\x00b"])
def test_external_server_rejects_malformed(message: bytes) -> None:
    outcome = ExternalServer("CN=alice").start(message)
    assert isinstance(outcome, ServerFailure) and isinstance(outcome.error, SASLProtocolError)


def test_external_client_rejects_bad_authzid() -> None:
    with pytest.raises(SASLConfigurationError):
        ExternalClient("a\x00")


# --------------------------------------------------------------------------------------
# Selecting and offering mechanisms
# --------------------------------------------------------------------------------------

ALL = list(MECHANISM_PREFERENCE)
USER_PASS = ClientCredentials(username="alice", password=PASSWORD)


@pytest.mark.parametrize(
    ("offered", "credentials", "options", "expected"),
    [
        (ALL, USER_PASS, {}, "SCRAM-SHA-512"),
        (list(reversed(ALL)), USER_PASS, {}, "SCRAM-SHA-512"),
        (["PLAIN", "SCRAM-SHA-256"], USER_PASS, {}, "SCRAM-SHA-256"),
        (["PLAIN", "EXTERNAL"], USER_PASS, {"tls_client_cert": True}, "EXTERNAL"),
        (["PLAIN", "EXTERNAL"], USER_PASS, {"encrypted": True}, "PLAIN"),
        (["PLAIN"], USER_PASS, {"allow_cleartext_secrets": True}, "PLAIN"),
        (ALL, USER_PASS, {"allowed": {"PLAIN"}, "encrypted": True}, "PLAIN"),
        (ALL, USER_PASS, {"allowed": ["SCRAM-SHA-256", "PLAIN"]}, "SCRAM-SHA-256"),
        (
            ["XOAUTH2", "PLAIN"],
            ClientCredentials(username="alice", token=TOKEN),
            {"encrypted": True},
            "XOAUTH2",
        ),
        (ALL, ClientCredentials(), {}, "ANONYMOUS"),
        (["ANONYMOUS", "PLAIN"], USER_PASS, {"allow_anonymous": True}, "ANONYMOUS"),
        ([Symbol("EXTERNAL"), "ANONYMOUS"], ClientCredentials(), {"tls_client_cert": True}, "EXT"),
        (["GSSAPI", "SCRAM-SHA-256"], USER_PASS, {}, "SCRAM-SHA-256"),
    ],
)
def test_select_client_mechanism(
    offered: list[str], credentials: ClientCredentials, options: dict[str, Any], expected: str
) -> None:
    mechanism = select_client_mechanism(offered, credentials, **options)
    assert mechanism.name.startswith(expected)


@pytest.mark.parametrize(
    ("offered", "credentials", "options"),
    [
        (["PLAIN"], USER_PASS, {}),  # secrets in the clear, not allowed
        (["XOAUTH2"], ClientCredentials(username="alice", token=TOKEN), {}),
        (["ANONYMOUS"], USER_PASS, {}),  # configured credentials are not dropped silently
        (["ANONYMOUS"], ClientCredentials(), {"allow_anonymous": False}),
        (["EXTERNAL"], ClientCredentials(), {}),  # no client certificate
        (["SCRAM-SHA-256"], ClientCredentials(username="alice"), {}),
        (["SCRAM-SHA-256"], USER_PASS, {"allowed": {"PLAIN"}}),
        (["GSSAPI"], USER_PASS, {}),
        ([], USER_PASS, {}),
    ],
)
def test_select_client_mechanism_finds_nothing(
    offered: list[str], credentials: ClientCredentials, options: dict[str, Any]
) -> None:
    with pytest.raises(SASLNoMechanismError) as info:
        select_client_mechanism(offered, credentials, **options)
    assert PASSWORD not in str(info.value) and TOKEN not in str(info.value)
    assert isinstance(info.value, LocalProtocolError)


def test_select_passes_options_to_the_mechanism() -> None:
    scram = select_client_mechanism(["SCRAM-SHA-256"], USER_PASS, min_iterations=5000)
    first = scram.initial_response()
    assert first is not None
    nonce = first.partition(b",r=")[2]
    with pytest.raises(SASLProtocolError, match="outside"):
        scram.respond(b"r=" + nonce + b"x,s=AAAA,i=4096")
    anonymous = select_client_mechanism(["ANONYMOUS"], ClientCredentials(), anonymous_trace="t")
    assert anonymous.initial_response() == b"t"
    external = select_client_mechanism(
        ["EXTERNAL"], ClientCredentials(authzid="admin"), tls_client_cert=True
    )
    assert external.initial_response() == b"admin"
    plain = select_client_mechanism(
        ["PLAIN"],
        ClientCredentials(username="alice", password=PASSWORD, authzid="bob"),
        encrypted=True,
    )
    assert plain.initial_response() == b"bob\x00alice\x00" + PASSWORD.encode()


def test_authenticator_offers_by_store_and_connection() -> None:
    store = Store()
    authenticator = ServerAuthenticator(store, allow_anonymous=True)
    assert authenticator.offered_mechanisms() == ["SCRAM-SHA-512", "SCRAM-SHA-256", "ANONYMOUS"]
    assert authenticator.offered_mechanisms(peer_identity="CN=x", encrypted=True) == ALL
    restricted = ServerAuthenticator(store, mechanisms={"PLAIN", "SCRAM-SHA-256"})
    assert restricted.offered_mechanisms(encrypted=True) == ["SCRAM-SHA-256", "PLAIN"]
    with pytest.raises(SASLMechanismNotSupportedError):
        restricted.create_mechanism("SCRAM-SHA-512", encrypted=True)
    with pytest.raises(SASLMechanismNotSupportedError):
        authenticator.create_mechanism("PLAIN")  # not encrypted


def test_authenticator_creates_every_mechanism() -> None:
    store = Store()
    authenticator = ServerAuthenticator(
        store, allow_anonymous=True, nonce_factory=lambda: SERVER_NONCE, xoauth2_scope="s"
    )
    created = {
        name: authenticator.create_mechanism(name, peer_identity="CN=x", encrypted=True)
        for name in ALL
    }
    assert {name: type(m) for name, m in created.items()} == {
        "SCRAM-SHA-512": ScramServer,
        "SCRAM-SHA-256": ScramServer,
        "EXTERNAL": ExternalServer,
        "PLAIN": PlainServer,
        "XOAUTH2": XOAuth2Server,
        "ANONYMOUS": AnonymousServer,
    }
    step = created["SCRAM-SHA-256"].start(b"n,,n=alice,r=abc")
    assert isinstance(step, ServerChallenge) and step.data.startswith(b"r=abc" + b"srvNONCE123,")
    for name, server in created.items():
        assert server.name == name
        assert server.sends_secrets_in_clear is (name in ("PLAIN", "XOAUTH2"))


def test_full_selection_to_outcome_for_every_mechanism() -> None:
    store = Store()
    authenticator = ServerAuthenticator(store, allow_anonymous=True)
    offered = authenticator.offered_mechanisms(peer_identity="CN=alice", encrypted=True)
    credentials = ClientCredentials(username="alice", password=PASSWORD, token=TOKEN)
    for name in offered:
        client = select_client_mechanism(
            offered,
            credentials,
            allowed={name},
            tls_client_cert=True,
            encrypted=True,
            allow_anonymous=True,
        )
        server = authenticator.create_mechanism(
            client.name, peer_identity="CN=alice", encrypted=True
        )
        outcome = run_exchange(client, server)
        assert isinstance(outcome, ServerSuccess), name


# --------------------------------------------------------------------------------------
# Object state, outcome errors, error classes
# --------------------------------------------------------------------------------------


def test_client_calls_out_of_order() -> None:
    client = PlainClient("alice", PASSWORD)
    with pytest.raises(SASLStateError, match="is new"):
        client.respond(b"")
    with pytest.raises(SASLStateError):
        client.verify_outcome(None)
    client.initial_response()
    with pytest.raises(SASLStateError, match="once"):
        client.initial_response()
    client.verify_outcome(None)
    with pytest.raises(SASLStateError, match="is done"):
        client.respond(b"")


def test_server_calls_out_of_order() -> None:
    server = PlainServer(Store())
    with pytest.raises(SASLStateError):
        server.step(b"")
    server.start(b"\x00alice\x00" + PASSWORD.encode())
    with pytest.raises(SASLStateError, match="once"):
        server.start(None)
    with pytest.raises(SASLStateError, match="done"):
        server.step(b"")


def test_outcome_error_codes() -> None:
    client = PlainClient("alice", PASSWORD)
    client.initial_response()
    auth = client.outcome_error(SaslCode.AUTH)
    assert type(auth) is SASLAuthenticationError and auth.code is SaslCode.AUTH
    for code in (SaslCode.SYS, SaslCode.SYS_PERM, SaslCode.SYS_TEMP):
        error = client.outcome_error(code)
        assert type(error) is SASLSystemError and error.code is code
        assert code.name.lower() in str(error)
    xoauth = XOAuth2Client("alice", TOKEN)
    xoauth.initial_response()
    assert type(xoauth.outcome_error(SaslCode.SYS_TEMP)) is SASLSystemError


def test_error_hierarchy() -> None:
    assert issubclass(SASLProtocolError, RemoteProtocolError)
    assert issubclass(SASLConfigurationError, LocalProtocolError)
    assert issubclass(SASLConfigurationError, ValueError)
    assert issubclass(SASLStateError, LocalProtocolError)
    assert issubclass(SASLServerError, SASLAuthenticationError)
    for cls in (
        SASLProtocolError,
        SASLAuthenticationError,
        SASLServerError,
        SASLServerVerificationError,
        SASLSystemError,
        SASLMechanismNotSupportedError,
        SASLConfigurationError,
        SASLNoMechanismError,
        SASLStateError,
    ):
        assert issubclass(cls, SASLError)
        assert cls.condition == "amqp:unauthorized-access"
    assert SASLSystemError("x").code is SaslCode.SYS
    assert SASLError("x").code is SaslCode.AUTH
    assert str(SASLError("x")) == "x [amqp:unauthorized-access]"


# --------------------------------------------------------------------------------------
# SASLprep (RFC 4013 section 3 examples and more) and credential helpers
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "prepared"),
    [
        ("I\u00adX", "IX"),  # soft hyphen mapped to nothing
        ("user", "user"),
        ("USER", "USER"),
        ("\u00aa", "a"),  # NFKC
        ("\u2168", "IX"),  # NFKC
        ("a\u00a0b", "a b"),  # non-ASCII space mapped to space
        ("\u0627\u0031\u0628", "\u0627\u0031\u0628"),  # RandAL first and last
        ("Ünïcode", "Ünïcode"),
    ],
)
def test_saslprep(text: str, prepared: str) -> None:
    assert saslprep(text) == prepared


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\u0007",  # RFC 4013: prohibited
        "\u0627\u0031",  # RFC 4013: bidi check
        "\u0627a\u0628",  # RandAL and L mixed
        "\u00ad",  # mapped to nothing: empty
        "a\ue000",  # private use
        "a\u0221",  # unassigned in Unicode 3.2 (stored strings)
        "é\x00",
    ],
)
def test_saslprep_rejects(text: str) -> None:
    with pytest.raises(SASLConfigurationError) as info:
        saslprep(text)
    assert text not in str(info.value) or not text


def test_saslprep_unassigned_for_queries() -> None:
    assert saslprep("a\u0221", allow_unassigned=True) == "a\u0221"


def test_scram_client_prepares_credentials() -> None:
    with pytest.raises(SASLConfigurationError):
        ScramClient("al\x07ice", PASSWORD)
    with pytest.raises(SASLConfigurationError):
        ScramClient("alice", "\u00ad")
    # "I\u00adX" and "IX" are the same password after SASLprep.
    store = Store(password="IX")
    assert isinstance(
        run_exchange(ScramClient("alice", "I\u00adX"), ScramServer(store)), ServerSuccess
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"mechanism": "SCRAM-SHA-1"},
        {"mechanism": ["SCRAM-SHA-256"]},
        {"nonce": "a,b"},
        {"nonce": ""},
        {"nonce": "\u00e9"},
        {"min_iterations": 0},
        {"max_iterations": True},
        {"min_iterations": 1.5},
    ],
)
def test_scram_client_rejects_bad_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(SASLConfigurationError):
        ScramClient("alice", PASSWORD, **kwargs)


def test_scram_client_rejects_non_str_credentials() -> None:
    with pytest.raises(SASLConfigurationError):
        ScramClient(b"alice", PASSWORD)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs", [{"nonce": "a,b"}, {"mechanism": "PLAIN"}, {"fake_iterations": 0}]
)
def test_scram_server_rejects_bad_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(SASLConfigurationError):
        ScramServer(Store(), **kwargs)


def test_derive_scram_credentials() -> None:
    first = derive_scram_credentials(PASSWORD)
    second = derive_scram_credentials(PASSWORD)
    assert len(first.salt) == 16 and first.salt != second.salt
    assert len(derive_scram_credentials(PASSWORD, mechanism="SCRAM-SHA-512").stored_key) == 64
    with pytest.raises(SASLConfigurationError):
        derive_scram_credentials(PASSWORD, iterations=0)
    with pytest.raises(SASLConfigurationError):
        derive_scram_credentials(PASSWORD, mechanism="SCRAM-MD5")
    with pytest.raises(SASLConfigurationError):
        derive_scram_credentials("\u0007")


@pytest.mark.parametrize(
    "fields",
    [
        {"salt": b""},
        {"salt": "text"},
        {"stored_key": b""},
        {"server_key": None},
        {"iterations": 0},
    ],
)
def test_scram_credentials_validate(fields: dict[str, Any]) -> None:
    base: dict[str, Any] = {"salt": b"s", "iterations": 1, "stored_key": b"k", "server_key": b"k"}
    with pytest.raises(SASLConfigurationError):
        ScramCredentials(**(base | fields))


# --------------------------------------------------------------------------------------
# Secrets never show
# --------------------------------------------------------------------------------------


def _secret_forms(credentials: ScramCredentials) -> list[str]:
    # The salt is public (the server sends it to anyone who asks), the keys are not.
    forms = [PASSWORD, TOKEN]
    for raw in (credentials.stored_key, credentials.server_key):
        forms += [raw.hex(), base64.b64encode(raw).decode(), repr(raw)[2:-1]]
    return forms


def test_no_secret_in_any_repr_or_str() -> None:
    store = Store()
    objects: list[object] = [
        ClientCredentials(username="alice", password=PASSWORD, token=TOKEN, authzid="bob"),
        store.scram[("alice", "SCRAM-SHA-256")],
        store.scram[("alice", "SCRAM-SHA-512")],
        ServerAuthenticator(store, fake_key=b"F" * 32),
    ]
    secrets_shown = _secret_forms(store.scram[("alice", "SCRAM-SHA-256")])
    secrets_shown += _secret_forms(store.scram[("alice", "SCRAM-SHA-512")])

    def record(*items: object) -> None:
        objects.extend(items)

    authenticator = ServerAuthenticator(store, allow_anonymous=True)
    pairs: list[tuple[SASLClientMechanism, SASLServerMechanism]] = [
        (ScramClient("alice", PASSWORD), authenticator.create_mechanism("SCRAM-SHA-256")),
        (
            ScramClient("alice", PASSWORD, mechanism="SCRAM-SHA-512"),
            authenticator.create_mechanism("SCRAM-SHA-512"),
        ),
        (ScramClient("alice", PASSWORD + "x"), ScramServer(store)),
        (PlainClient("alice", PASSWORD, authzid="bob"), PlainServer(store)),
        (PlainClient("alice", PASSWORD + "x"), PlainServer(store)),
        (XOAuth2Client("alice", TOKEN), XOAuth2Server(store)),
        (XOAuth2Client("alice", TOKEN + "x"), XOAuth2Server(store)),
        (ExternalClient(), ExternalServer("CN=alice")),
        (AnonymousClient("trace"), AnonymousServer()),
    ]
    for client, server in pairs:
        record(client, server)
        step = server.start(client.initial_response("host"))
        record(client, server, step)
        while isinstance(step, ServerChallenge):
            step = server.step(client.respond(step.data))
            record(client, server, step)
        if isinstance(step, ServerSuccess):
            client.verify_outcome(step.additional_data)
        else:
            record(step.error, client.outcome_error(step.code))
        record(client, server)
    # Errors raised from secret-bearing input.
    for action in (
        lambda: PlainClient(PASSWORD, PASSWORD + "\x00"),
        lambda: XOAuth2Client("alice", TOKEN + " x"),
        lambda: ScramClient("alice", PASSWORD + "\x07"),
        lambda: derive_scram_credentials(PASSWORD + "\ue000"),
        lambda: select_client_mechanism(
            ["PLAIN"], ClientCredentials(username="a", password=PASSWORD)
        ),
    ):
        with pytest.raises(SASLError) as info:
            action()
        record(info.value)
    plain = PlainServer(store).start(b"\x00alice\x00" + PASSWORD.encode() + b"\xff")
    assert isinstance(plain, ServerFailure)
    record(plain, plain.error)
    for obj in objects:
        for text in (repr(obj), str(obj)):
            for secret in secrets_shown:
                assert secret not in text, (type(obj).__name__, text)
    assert len(objects) > 60


# --------------------------------------------------------------------------------------
# Hostile input: only typed errors come out (Hypothesis)
# --------------------------------------------------------------------------------------

SCRAM_TOKENS = [
    "r=",
    "s=",
    "i=",
    "v=",
    "e=",
    "m=",
    "c=",
    "p=",
    "n=",
    "a=",
    ",",
    "=",
    "=2C",
    "=3D",
    "n,,",
    "y,,",
    "p=x,,",
    "biws",
    "4096",
    "0",
    "AAAA",
    "W22ZaJ0SNY7soEsUEjb6gQ==",
    RFC_CLIENT_NONCE,
    RFC_SERVER_NONCE,
    "\x00",
    "\x01",
    "user",
    "auth=Bearer ",
    "{",
    "}",
    '"status"',
    ":",
    "é",
]
scram_like = st.lists(st.sampled_from(SCRAM_TOKENS), max_size=16).map(
    lambda parts: "".join(parts).encode("utf-8")
)
hostile = st.one_of(st.binary(max_size=300), scram_like)

CLIENT_FACTORIES: dict[str, Callable[[], SASLClientMechanism]] = {
    "ANONYMOUS": AnonymousClient,
    "PLAIN": lambda: PlainClient("alice", PASSWORD),
    "EXTERNAL": ExternalClient,
    "XOAUTH2": lambda: XOAuth2Client("alice", TOKEN),
    "SCRAM-SHA-256": lambda: ScramClient(RFC_USER, RFC_PASSWORD, nonce=RFC_CLIENT_NONCE),
    "SCRAM-SHA-512": lambda: ScramClient("alice", PASSWORD, mechanism="SCRAM-SHA-512"),
}


def only_typed_errors(action: Callable[[], object]) -> None:
    try:
        action()
    except SASLError as error:
        assert isinstance(error.code, SaslCode)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(CLIENT_FACTORIES)), challenges=st.lists(hostile, max_size=3))
def test_fuzz_client_challenges(name: str, challenges: list[bytes]) -> None:
    client = CLIENT_FACTORIES[name]()
    client.initial_response("host")
    for challenge in challenges:
        only_typed_errors(lambda c=challenge: client.respond(c))  # type: ignore[misc]


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(CLIENT_FACTORIES)), data=st.one_of(st.none(), hostile))
def test_fuzz_client_outcome(name: str, data: bytes | None) -> None:
    client = CLIENT_FACTORIES[name]()
    client.initial_response("host")
    only_typed_errors(lambda: client.verify_outcome(data))


@settings(max_examples=200, deadline=None)
@given(data=st.one_of(st.none(), hostile), via_challenge=st.booleans())
def test_fuzz_scram_client_server_final(data: bytes | None, via_challenge: bool) -> None:
    client = scram_client_after_first()
    if via_challenge:
        only_typed_errors(lambda: client.respond(data or b""))
    else:
        only_typed_errors(lambda: client.verify_outcome(data))


def server_factories() -> dict[str, Callable[[], SASLServerMechanism]]:
    store = rfc_store()
    return {
        "ANONYMOUS": AnonymousServer,
        "PLAIN": lambda: PlainServer(store, authorizer=store),
        "EXTERNAL": lambda: ExternalServer("CN=alice", authorizer=store),
        "XOAUTH2": lambda: XOAuth2Server(store),
        "SCRAM-SHA-256": lambda: ScramServer(store, nonce=RFC_SERVER_NONCE),
        "SCRAM-SHA-512": lambda: ScramServer(store, mechanism="SCRAM-SHA-512"),
    }


SERVERS = server_factories()


@settings(max_examples=400, deadline=None)
@given(
    name=st.sampled_from(sorted(SERVERS)),
    first=st.one_of(st.none(), hostile, st.just(RFC_CLIENT_FIRST)),
    responses=st.lists(hostile, max_size=3),
)
def test_fuzz_server_steps(name: str, first: bytes | None, responses: list[bytes]) -> None:
    server = SERVERS[name]()
    step = server.start(first)
    for response in responses:
        if not isinstance(step, ServerChallenge):
            with pytest.raises(SASLStateError):
                server.step(response)
            break
        step = server.step(response)
    assert isinstance(step, ServerChallenge | ServerSuccess | ServerFailure)
    if isinstance(step, ServerFailure):
        assert isinstance(step.error, SASLError) and step.code is step.error.code


@settings(max_examples=300, deadline=None)
@given(response=hostile)
def test_fuzz_scram_server_client_final(response: bytes) -> None:
    step = rfc_server().step(response)
    assert isinstance(step, ServerFailure | ServerSuccess)
    if isinstance(step, ServerFailure):
        assert isinstance(step.error, SASLError)


@settings(max_examples=100, deadline=None)
@given(response=hostile)
def test_fuzz_xoauth2_server_after_refusal(response: bytes) -> None:
    server = XOAuth2Server(Store())
    assert isinstance(server.start(b"user=alice\x01auth=Bearer bad\x01\x01"), ServerChallenge)
    step = server.step(response)
    assert isinstance(step, ServerFailure) and step.code is SaslCode.AUTH
