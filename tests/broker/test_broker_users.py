"""The broker's users: SASL credentials (PLAIN, SCRAM, ANONYMOUS) from a users file, and the
per-user access rule (who may send to or receive from which address)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.broker import run_broker
from support.broker_net import Net
from support.broker_process import BrokerProcess

import amqp_sansio as a
from amqp_sansio.broker import ANONYMOUS, BrokerConfig, Users, UsersFileError, scram_entry
from amqp_sansio.client.ops import LinkDetachedError

WAIT = 10.0

FILE = {
    "anonymous": {"send": ["public/*"], "receive": ["public/*"]},
    "users": {
        "alice": {"password": "secret", "send": ["*"], "receive": ["orders", "public/*"]},
        "bob": {"scram-sha-256": scram_entry("hunter2"), "receive": ["orders"]},
    },
}


@pytest.fixture(scope="module")
def users() -> Users:
    return Users.from_json(json.dumps(FILE))


def test_passwords_and_scram(users: Users) -> None:
    assert users.check_password("alice", "secret")
    assert not users.check_password("alice", "nope")
    assert users.check_password("bob", "hunter2")  # PLAIN checked against SCRAM credentials
    assert not users.check_password("bob", "x")
    assert not users.check_password("bob", "\u0007")  # SASLprep refuses it
    assert not users.check_password("carol", "x")
    assert users.scram_credentials("alice", "SCRAM-SHA-512") is not None
    assert users.scram_credentials("bob", "SCRAM-SHA-512") is None
    assert users.scram_credentials("carol", "SCRAM-SHA-256") is None


def test_access_rules(users: Users) -> None:
    assert users.allows("alice", "anything", send=True)
    assert users.allows("alice", "orders", send=False)
    assert not users.allows("alice", "secret", send=False)
    assert not users.allows("bob", "orders", send=True)
    assert users.allows(ANONYMOUS, "public/news", send=True)
    assert not users.allows(ANONYMOUS, "orders", send=False)
    assert not users.allows(None, "orders", send=False)
    assert not users.allows("carol", "orders", send=False)
    assert not Users([]).allows(ANONYMOUS, "x", send=True)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "not JSON"),
        ("[]", "expected an object"),
        ('{"users": []}', "object of user names"),
        ('{"users": {"x": 1}}', "expected an object"),
        ('{"users": {"x": {"password": "p", "admin": true}}}', "unknown fields"),
        ('{"users": {"x": {"password": "p", "send": "*"}}}', "list of address patterns"),
        ('{"users": {"x": {"password": 5}}}', "must be a string"),
        ('{"users": {"x": {"scram-sha-256": {"salt": "!"}}}}', "bad credentials"),
        ('{"users": {"x": {"send": ["*"]}}}', "needs a password"),
        ('{"users": {"anonymous": {"password": "p"}}}', "reserved"),
        ('{"anonymous": {"password": "p"}}', "unknown fields"),
    ],
)
def test_bad_users_files(text: str, why: str) -> None:
    with pytest.raises(UsersFileError, match=why):
        Users.from_json(text)


def test_access_enforced_on_attach(users: Users) -> None:
    net = Net(BrokerConfig(users=users, allow_insecure_auth=True))
    bob = net.connect(sasl=a.sasl.ClientCredentials(username="bob", password="hunter2"))
    assert bob.conn.identity == "bob"
    ok = bob.receiver("orders")
    assert ok.state is a.LinkState.ATTACHED
    bob.sender("orders")
    (refused,) = bob.of(a.events.LinkDetached)
    assert refused.error.condition == "amqp:unauthorized-access"
    assert "orders" in net.broker.nodes and "secret" not in net.broker.nodes
    dyn = bob.receiver(None, source=a.Source(dynamic=True))  # a node of one's own: allowed
    assert dyn.state is a.LinkState.ATTACHED
    anon = net.connect(sasl=a.sasl.ClientCredentials())
    assert anon.conn.identity == ANONYMOUS
    anon.receiver("orders")
    assert anon.of(a.events.LinkDetached)[-1].error.condition == "amqp:unauthorized-access"
    assert anon.receiver("public/x").state is a.LinkState.ATTACHED


def test_wrong_password_fails_sasl(users: Users) -> None:
    net = Net(BrokerConfig(users=users, allow_insecure_auth=True))
    c = net.connect(sasl=a.sasl.ClientCredentials(username="alice", password="wrong"))
    assert c.of(a.events.AuthenticationFailed)


def test_cli_users_file_scram_over_the_wire(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    path.write_text(json.dumps(FILE))
    with BrokerProcess("--users", str(path), wait=WAIT) as broker:
        host = broker.url.removeprefix("amqp://")
        with sockets.connect(f"amqp://alice:secret@{host}", timeout=WAIT) as conn:
            conn.sender("orders").send(b"1")
            with pytest.raises(LinkDetachedError, match="unauthorized-access"):
                conn.receiver("secret")
        with sockets.connect(f"amqp://bob:hunter2@{host}", timeout=WAIT) as conn:
            d = conn.receiver("orders", credit=1).receive(timeout=WAIT)
            assert d is not None and d.message.body.value == b"1"
            d.accept()


def test_cli_bad_users_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from amqp_sansio.adapters import cli

    path = tmp_path / "users.json"
    path.write_text("{")
    assert cli.main(["broker", "--port", "0", "--users", str(path)]) != 0
    assert "not JSON" in capsys.readouterr().err
    assert cli.main(["broker", "--port", "0", "--users", str(tmp_path / "missing")]) != 0


def test_proton_plain_and_anonymous(users: Users) -> None:
    proton_utils: Any = pytest.importorskip("proton.utils", reason="python-qpid-proton")
    config = BrokerConfig(users=users, allow_insecure_auth=True)
    with run_broker(config=config) as server:
        host = server.url.removeprefix("amqp://")
        conn = proton_utils.BlockingConnection(
            f"amqp://alice:secret@{host}", timeout=WAIT, allowed_mechs="PLAIN"
        )
        try:
            conn.create_sender("orders")
            with pytest.raises(proton_utils.LinkDetached):
                conn.create_receiver("secret")
        finally:
            conn.close()
        anon = proton_utils.BlockingConnection(server.url, timeout=WAIT, allowed_mechs="ANONYMOUS")
        try:
            anon.create_receiver("public/feed")
            with pytest.raises(proton_utils.LinkDetached):
                anon.create_sender("orders")
        finally:
            anon.close()


def test_amqps_with_plain_inside_tls(users: Users, tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme", reason="trustme is in the 'test' extra")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "server.pem")
    )
    server_ctx = a.security.tls.server_context(str(tmp_path / "server.pem"))
    config = BrokerConfig(users=users)  # PLAIN only under TLS
    with run_broker(host="localhost", config=config, ssl_context=server_ctx) as server:
        assert server.url.startswith("amqps://localhost:")
        client_ctx = a.security.tls.client_context(cafile=str(tmp_path / "ca.pem"))
        url = f"amqps://alice:secret@localhost:{server.port}"
        with sockets.connect(url, timeout=WAIT, ssl_context=client_ctx) as conn:
            conn.sender("orders").send(b"secure")
            d = conn.receiver("orders", credit=1).receive(timeout=WAIT)
            assert d is not None and d.message.body.value == b"secure"
            d.accept()
