"""AMQPLAIN in the one SASL registry (security/mechanisms): the client's response is the
0-9-1 field table pika and RabbitMQ use, the server mechanism checks it with the same
password store as PLAIN, a ServerAuthenticator offers it only when named (the AMQP 1.0
offer is unchanged), and the 0-9-1 engine has no mechanism or choice of its own."""

from __future__ import annotations

import pamqp.encode
import pytest

from amqp_sansio import amqp091
from amqp_sansio.engine.amqp091 import negotiation
from amqp_sansio.security.mechanisms import (
    AMQPlainClient,
    AMQPlainServer,
    ServerAuthenticator,
    ServerFailure,
    ServerSuccess,
    client_mechanisms,
    first_offered,
)


class Store:
    def check_password(self, username: str, password: str) -> bool:
        return (username, password) == ("alice", "s3cret")


def test_the_client_response_is_pikas_table_without_its_length() -> None:
    response = AMQPlainClient("alice", "s3cret").initial_response()
    assert response == pamqp.encode.field_table({"LOGIN": "alice", "PASSWORD": "s3cret"})[4:]


@pytest.mark.parametrize(
    ("response", "identity"),
    [
        (amqp091.encode_table({"LOGIN": "alice", "PASSWORD": "s3cret"})[4:], "alice"),
        (amqp091.encode_table({"n": 1, "LOGIN": "alice", "PASSWORD": "s3cret"})[4:], "alice"),
        (amqp091.encode_table({"LOGIN": "alice", "PASSWORD": "wrong"})[4:], None),
        (amqp091.encode_table({"LOGIN": 1, "PASSWORD": "p"})[4:], None),
        (b"\x05LOGIN", None),
        (b"\x05LOGINS\xff\xff\xff\xff", None),
        (b"", None),
    ],
)
def test_the_server_mechanism(response: bytes, identity: str | None) -> None:
    step = AMQPlainServer(Store()).start(response)
    if identity is None:
        assert isinstance(step, ServerFailure)
    else:
        assert isinstance(step, ServerSuccess) and step.identity == identity


def test_offered_only_when_named() -> None:
    one_o = ServerAuthenticator(Store(), allow_cleartext_secrets=True)
    assert one_o.offered_mechanisms() == ["PLAIN"]
    named = ServerAuthenticator(
        Store(), allow_cleartext_secrets=True, mechanisms=["PLAIN", "AMQPLAIN"]
    )
    assert named.offered_mechanisms() == ["PLAIN", "AMQPLAIN"]
    mechanism = named.create_mechanism("AMQPLAIN")
    assert isinstance(mechanism, AMQPlainServer)
    response = AMQPlainClient("alice", "s3cret").initial_response()
    assert isinstance(mechanism.start(response), ServerSuccess)


def test_the_0_9_1_clients_choice_is_the_registrys() -> None:
    choices = client_mechanisms(("PLAIN", "AMQPLAIN"), "alice", "s3cret")
    assert [m.name for m in choices] == ["PLAIN", "AMQPLAIN"]
    chosen = first_offered(choices, ["AMQPLAIN"])
    assert chosen is not None and chosen.name == "AMQPLAIN"
    assert first_offered(choices, ["EXTERNAL"]) is None
    for gone in ("AMQPlainClient", "choose_mechanism", "client_mechanism", "client_mechanisms"):
        assert not hasattr(negotiation, gone)
