"""SASL (core spec 5.3) against Apache Qpid Proton over loopback sockets.

Proton's Python wheel has its built-in SASL only (no Cyrus): as a client it offers
ANONYMOUS, PLAIN and EXTERNAL; as a server, ANONYMOUS (and EXTERNAL with TLS). So: a Proton
client authenticates to our server with PLAIN and with ANONYMOUS, and our client to a
Proton listener with ANONYMOUS; a wrong password and a mechanism the listener does not offer
are refused cleanly on both ends.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator

import pytest
from amqp_sansio.adapters.sockets import SocketDriver
from support.proton_peer import Interop, Spec, interop_pairs, poll, settled_count

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
from amqp_sansio import sasl

PASSWORD = "guest-pw"
COUNT = 200


class Users:
    def check_password(self, username: str, password: str) -> bool:
        return username == "alice" and hmac.compare_digest(password.encode(), PASSWORD.encode())


@pytest.fixture
def interop() -> Iterator[Callable[..., Interop]]:
    yield from interop_pairs()


def _traffic(pair: Interop) -> None:
    """Messages both ways once authenticated: the AMQP layer runs on after SASL."""
    pair.app.send("to-proton", [a.Message(body=f"m{i}").encode() for i in range(COUNT)])
    pair.wait(lambda: settled_count(pair.app.updates["to-proton"]) == COUNT)
    pair.wait(lambda: len(pair.app.received["from-proton"]) == 3)
    assert pair.peer.received["to-proton"] == [f"m{i}" for i in range(COUNT)]
    assert [m.body.value for m in pair.app.received["from-proton"]] == ["x", "y", "z"]
    assert pair.peer.errors == [] and pair.app.errors == []


def _specs() -> list[Spec]:
    return [Spec("to-proton", True), Spec("from-proton", False, proton_bodies=["x", "y", "z"])]


def test_proton_client_authenticates_with_plain(interop: Callable[..., Interop]) -> None:
    pair = interop(
        "server",
        _specs(),
        sasl=a.sasl.ServerAuthenticator(Users(), allow_cleartext_secrets=True),
        proton_connect={
            "sasl_enabled": True,
            "user": "alice",
            "password": PASSWORD,
            "allowed_mechs": "PLAIN",
            "allow_insecure_mechs": True,
        },
    )
    pair.start()
    assert pair.conn.sasl_mechanism == "PLAIN"
    assert pair.conn.authenticated_identity == "alice"
    (done,) = [e for e in pair.driver.events if isinstance(e, a.events.Authenticated)]  # type: ignore[union-attr]
    assert done == a.events.Authenticated(mechanism="PLAIN", identity="alice")
    _traffic(pair)


def test_proton_client_authenticates_anonymously(interop: Callable[..., Interop]) -> None:
    pair = interop(
        "server",
        _specs(),
        sasl=a.sasl.ServerAuthenticator(allow_anonymous=True),
        proton_connect={"sasl_enabled": True, "allowed_mechs": "ANONYMOUS"},
    )
    pair.start()
    assert pair.conn.sasl_mechanism == "ANONYMOUS"
    _traffic(pair)


def test_proton_client_with_a_wrong_password_is_refused(
    interop: Callable[..., Interop],
) -> None:
    pair = interop(
        "server",
        _specs(),
        sasl=a.sasl.ServerAuthenticator(Users(), allow_cleartext_secrets=True),
        proton_connect={
            "sasl_enabled": True,
            "user": "alice",
            "password": "wrong",
            "allowed_mechs": "PLAIN",
            "allow_insecure_mechs": True,
        },
    )
    pair.thread.start()
    assert pair.listener is not None
    pair.driver = SocketDriver.accept(pair.conn, pair.listener, on_event=pair.app)
    failed = pair.wait_for(a.events.AuthenticationFailed)
    assert failed.code is a.definitions.amqp10.performatives.SaslCode.AUTH
    pair.wait(lambda: pair.conn.state is a.ConnectionState.END)
    pair.driver.close()
    deadline_ok = poll(lambda: bool(pair.peer.errors))
    assert deadline_ok, "Proton was not told"
    assert any("unauthorized" in e or "Authentication failed" in e for e in pair.peer.errors)
    assert not pair.peer.opened


def test_our_client_authenticates_anonymously_to_proton(
    interop: Callable[..., Interop],
) -> None:
    pair = interop("client", _specs(), sasl=a.sasl.ClientCredentials())
    pair.start()
    assert pair.conn.sasl_mechanism == "ANONYMOUS"
    _traffic(pair)


def test_our_client_refuses_when_no_offered_mechanism_fits(
    interop: Callable[..., Interop],
) -> None:
    """Proton's listener offers no mechanism for a password here (no Cyrus): we neither
    fall back to ANONYMOUS nor send the password."""
    pair = interop(
        "client",
        _specs(),
        sasl=a.sasl.ClientCredentials(username="alice", password=PASSWORD),
        sasl_mechanisms=["SCRAM-SHA-256", "PLAIN"],
    )
    pair.thread.start()
    pair.driver = SocketDriver.connect(pair.conn, ("127.0.0.1", pair.port), on_event=pair.app)
    pair.conn.open(now=pair.driver.now())
    failed = pair.wait_for(a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLNoMechanismError)
    assert pair.conn.state is a.ConnectionState.END
    assert not pair.peer.opened
