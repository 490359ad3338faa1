"""``$cbs`` over the wire: ``amqp-sansio broker`` started as users start it (no options: an
open broker; or ``--users`` with SAS keys), our blocking client sending ``put-token`` as the
Azure SDKs do (a sender to ``$cbs``, the responses on a dynamic reply node), and the broker's
log."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess

import amqp_sansio as a
from amqp_sansio.broker.amqp10.cbs import SAS_TOKEN_TYPE
from amqp_sansio.client.ops import LinkDetachedError
from amqp_sansio.security.sas import make_sas_token

WAIT = 10.0
KEY = "the-namespace-key"


def put_token(conn: sockets.Connection, token: str, audience: str) -> tuple[int, str]:
    replies = conn.receiver(dynamic=True, credit=5)
    requests = conn.sender("$cbs")
    message = a.Message(
        properties=a.Properties(message_id="put-1", reply_to=replies.address),
        application_properties={
            "operation": "put-token",
            "type": SAS_TOKEN_TYPE,
            "name": audience,
            "expiration": a.codec.amqp10.Timestamp(int(time.time() * 1000) + 3_600_000),
        },
        body=a.AmqpValue(token),
    )
    assert isinstance(requests.send(message, timeout=WAIT), a.Accepted)
    delivery = replies.receive(timeout=WAIT)
    assert delivery is not None
    delivery.accept()
    response = delivery.message
    assert response.properties is not None and response.properties.correlation_id == "put-1"
    props: Any = response.application_properties
    return int(props["status-code"]), str(props["status-description"])


def test_an_open_broker_answers_put_token_at_once() -> None:
    with BrokerProcess(wait=WAIT) as broker:
        with sockets.connect(broker.url, timeout=WAIT) as conn:
            assert put_token(conn, "anything", "sb://localhost/orders") == (202, "Accepted")
            assert put_token(conn, "again", "sb://localhost/orders")[0] == 202
            with pytest.raises(LinkDetachedError, match="not-found"):
                conn.sender("$nonexistent")
        log = broker.wait_for_log("connection from")
    assert log.count("UNCHECKED") == 1, log
    assert "anything" not in log


def test_a_broker_with_sas_keys_checks_the_token(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"sas-keys": {"Root": {"key": KEY, "rights": ["Send", "Listen"]}}}))
    with BrokerProcess("--users", str(users), wait=WAIT) as broker:
        host = broker.url.removeprefix("amqp://")
        audience = f"sb://{host}/orders"
        with sockets.connect(broker.url, timeout=WAIT) as conn:  # ANONYMOUS
            with pytest.raises(LinkDetachedError, match="unauthorized-access"):
                conn.sender("orders")
            forged = make_sas_token(audience, "Root", "guessed", int(time.time()) + 600)
            code, why = put_token(conn, forged, audience)
            assert code == 401 and "guessed" not in why
            token = make_sas_token(audience, "Root", KEY, int(time.time()) + 600)
            assert put_token(conn, token, audience) == (202, "Accepted")
            conn.sender("orders").send(b"paid", timeout=WAIT)
            got = conn.receiver("orders", credit=1).receive(timeout=WAIT)
            assert got is not None and got.message.body == a.Data(b"paid")
            got.accept()
        assert KEY not in broker.log
