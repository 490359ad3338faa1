"""Claims-based security (``$cbs``, amqp_sansio/broker/amqp10/cbs.py) and the refusal of
``$`` addresses, through the broker's byte interface with our engine as the clients, on a
simulated clock (tests/support/broker_net.py). The requests are sent as Azure's ``_pyamqp``
sends them: a sender to ``$cbs``, a receiver from ``$cbs`` whose target is ``$cbs``, a
``put-token`` with a message-id and no reply-to."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from support.broker_net import Client, Net

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig, Users, UsersFileError
from amqp_sansio.broker.amqp10.cbs import (
    MAX_AUDIENCE_LENGTH,
    MAX_TOKENS_PER_CONNECTION,
    SAS_TOKEN_TYPE,
)
from amqp_sansio.security.jwt import make_jwt
from amqp_sansio.security.sas import MAX_TOKEN_LENGTH, make_sas_token

HOST = "sb://broker.example"
ROOT_KEY = "root-secret-key"
ORDERS_KEY = "orders-secret-key"
USERS = {
    "users": {"alice": {"password": "pw", "send": ["orders"], "receive": ["orders"]}},
    "sas-keys": {
        "Root": {"key": ROOT_KEY, "rights": ["Send", "Listen", "Manage"]},
        "OrdersSend": {"key": ORDERS_KEY, "rights": ["Send"], "entity": "orders"},
    },
}


class Azure:
    """A CBS client as Azure's ``_pyamqp`` is one (``ManagementLink`` to ``$cbs``)."""

    def __init__(self, client: Client, *, reply_to: str | None = None) -> None:
        self.client = client
        session = client.session or client.begin()
        self.requests = client.sender("$cbs")
        assert self.requests.state is a.LinkState.ATTACHED
        self.responses = session.attach_receiver(
            "cbs-receiver", source=a.Source(address="$cbs"), target=a.Target(address="$cbs")
        )
        client.net.pump()
        assert self.responses.state is a.LinkState.ATTACHED
        self.responses.flow(100)
        client.net.pump()
        self.reply_to = reply_to
        self.ids = 0

    def put(
        self, token: Any, audience: str, *, kind: str = SAS_TOKEN_TYPE, **app: Any
    ) -> a.Message:
        self.ids += 1
        props = {"operation": "put-token", "type": kind, "name": audience, "expiration": 0, **app}
        message = a.Message(
            properties=a.Properties(message_id=self.ids, reply_to=self.reply_to),
            application_properties={k: v for k, v in props.items() if v is not None},
            body=a.AmqpValue(token),
        )
        delivery = self.client.send(self.requests, message)
        assert isinstance(delivery.remote_state, a.Accepted), delivery.remote_state
        (event,) = self.client.received(self.responses)
        self.responses.settle(event.delivery, a.Accepted())
        self.client.net.pump()
        response = a.Message.decode(event.data)
        assert response.properties is not None
        assert response.properties.correlation_id == self.ids
        return response


def status(response: a.Message) -> tuple[int, str]:
    props = response.application_properties
    assert props is not None and response.body is None
    return int(props["status-code"]), str(props["status-description"])


def token(audience: str, *, key_name: str = "Root", key: str = ROOT_KEY, expiry: float) -> str:
    return make_sas_token(audience, key_name, key, int(expiry))


def secured(**kwargs: Any) -> Net:
    return Net(BrokerConfig(users=Users.from_json(json.dumps(USERS))), **kwargs)


# -- no $ node made on first use --------------------------------------------------------------


# (``orders/$management`` is an entity's management node, as Azure Service Bus has them:
# tests/interop/test_azure_servicebus.py; ``$queue/$management``'s entity is a $-name.)
@pytest.mark.parametrize(
    "address", ["$cbz", "$", "$queue/x", "orders/$managemen", "$queue/$management"]
)
def test_unknown_dollar_addresses_are_refused_both_ways(address: str) -> None:
    net = Net()  # an open broker, which makes any other node on first use
    client = net.connect()
    sender = client.sender(address)
    receiver = client.receiver(address, 1)
    for link in (sender, receiver):
        assert link.state is not a.LinkState.ATTACHED
        (detached,) = [e for e in client.of(a.events.LinkDetached) if e.link is link]
        assert detached.error is not None
        assert detached.error.condition == "amqp:not-found"
        assert "broker's own nodes" in (detached.error.description or "")
    assert address not in net.broker.nodes
    # other names are still made on first use
    assert client.sender("orders").state is a.LinkState.ATTACHED
    assert "orders" in net.broker.nodes


def test_the_relay_makes_no_dollar_node() -> None:
    net = Net()
    client = net.connect()
    relay = client.sender(None)
    delivery = client.send(relay, a.Message(properties=a.Properties(to="$nope"), body=b"x"))
    assert isinstance(delivery.remote_state, a.Rejected)
    assert "$nope" not in net.broker.nodes


# -- put-token on an open broker --------------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 1])
def test_open_broker_takes_any_token_and_says_so_once(
    chunk: int | None, caplog: pytest.LogCaptureFixture
) -> None:
    net = Net(chunk=chunk)
    cbs = Azure(net.connect())
    with caplog.at_level(logging.WARNING, logger="amqp_sansio.broker"):
        for kind in (SAS_TOKEN_TYPE, "jwt", "whatever"):
            assert status(cbs.put("not even a token", f"{HOST}/orders", kind=kind))[0] == 202
    told = [r for r in caplog.records if "UNCHECKED" in r.getMessage()]
    assert len(told) == 1 and "OPEN" in told[0].getMessage()
    assert "not even a token" not in caplog.text
    assert "$cbs" not in net.broker.nodes
    # another connection is told once too
    with caplog.at_level(logging.WARNING, logger="amqp_sansio.broker"):
        Azure(net.connect()).put("t", f"{HOST}/orders")
    assert len([r for r in caplog.records if "UNCHECKED" in r.getMessage()]) == 2


def test_reply_to_a_dynamic_node() -> None:
    net = Net()
    client = net.connect()
    replies = client.receiver(None, 5, source=a.Source(dynamic=True))
    assert replies.remote is not None and replies.remote.source is not None
    requests = client.sender("$cbs")
    message = a.Message(
        properties=a.Properties(message_id="m-1", reply_to=replies.remote.source.address),
        application_properties={"operation": "put-token", "type": "jwt", "name": "amqp://h/q"},
        body=a.AmqpValue("eyJ..."),
    )
    assert isinstance(client.send(requests, message).remote_state, a.Accepted)
    (event,) = client.received(replies)
    response = a.Message.decode(event.data)
    assert response.properties is not None and response.properties.correlation_id == "m-1"
    assert status(response) == (202, "Accepted")


def test_a_request_with_nowhere_to_answer_is_rejected() -> None:
    net = Net()
    client = net.connect()
    requests = client.sender("$cbs")
    app = {"operation": "put-token", "type": "jwt", "name": "amqp://h/q"}
    message = a.Message(application_properties=app, body=a.AmqpValue("t"))
    outcome = client.send(requests, message).remote_state
    assert isinstance(outcome, a.Rejected) and outcome.error is not None
    assert outcome.error.condition == "amqp:invalid-field"


# -- SAS tokens checked against the users file's keys ----------------------------------------


def test_a_valid_sas_token_is_taken_and_gives_its_rights() -> None:
    net = secured()
    client = net.connect()  # ANONYMOUS, as Azure's SDK logs in
    assert client.conn.identity == "anonymous"
    refused = client.sender("orders")
    assert refused.state is not a.LinkState.ATTACHED  # no token yet: $cbs only
    cbs = Azure(client)
    assert status(cbs.put(token(f"{HOST}/orders", expiry=net.wall + 600), f"{HOST}/orders")) == (
        202,
        "Accepted",
    )
    sender = client.sender("orders")
    assert sender.state is a.LinkState.ATTACHED
    assert client.receiver("orders", 1).state is a.LinkState.ATTACHED  # Root: Listen too
    assert client.sender("orders/sub").state is a.LinkState.ATTACHED  # below the audience
    assert client.sender("invoices").state is not a.LinkState.ATTACHED  # not covered
    assert client.sender("$management").state is not a.LinkState.ATTACHED  # not covered


def test_a_uri_address_is_covered_by_its_path() -> None:
    """Azure's SDKs attach to ``amqps://host/queue``: the token for ``sb://host/queue``
    covers it."""
    net = secured()
    client = net.connect()
    assert client.sender("amqps://broker.example/orders").state is not a.LinkState.ATTACHED
    Azure(client).put(token(f"{HOST}/orders", expiry=net.wall + 60), f"{HOST}/orders")
    assert client.sender("amqps://broker.example/orders").state is a.LinkState.ATTACHED
    assert client.sender("amqps://broker.example/other").state is not a.LinkState.ATTACHED


def test_rights_are_the_keys() -> None:
    net = secured()
    client = net.connect()
    cbs = Azure(client)
    orders = f"{HOST}/orders"
    put = cbs.put(
        token(orders, key_name="OrdersSend", key=ORDERS_KEY, expiry=net.wall + 60), orders
    )
    assert status(put)[0] == 202
    assert client.sender("orders").state is a.LinkState.ATTACHED
    assert client.receiver("orders", 1).state is not a.LinkState.ATTACHED  # Send only
    # a key scoped to orders signs nothing else, even for a resource it names
    other = f"{HOST}/invoices"
    code, why = status(
        cbs.put(token(other, key_name="OrdersSend", key=ORDERS_KEY, expiry=net.wall + 60), other)
    )
    assert code == 401 and "another entity" in why
    # a namespace-wide token of Root gives $management (Manage)
    assert status(cbs.put(token(f"{HOST}/", expiry=net.wall + 60), f"{HOST}/"))[0] == 202
    assert client.sender("$management").state is a.LinkState.ATTACHED


def test_bad_tokens_are_refused_and_never_said() -> None:
    net = secured()
    cbs = Azure(net.connect())
    orders = f"{HOST}/orders"
    good = token(orders, expiry=net.wall + 600)
    signature = good.split("sig=")[1].split("&")[0]
    cases = {
        "wrong key": make_sas_token(orders, "Root", "not-the-key", int(net.wall + 600)),
        "unknown key name": token(orders, key_name="Nobody", expiry=net.wall + 600),
        "expired": token(orders, expiry=net.wall - 1),
        "expires now": token(orders, expiry=net.wall),
        "another resource": token(f"{HOST}/invoices", expiry=net.wall + 600),
        "another host": token("sb://elsewhere/orders", expiry=net.wall + 600),
        "malformed": "SharedAccessSignature sr=x",
        "non-numeric se": good.replace(f"se={int(net.wall + 600)}", "se=tomorrow"),
        "huge": good + "&" + "x" * MAX_TOKEN_LENGTH,
        "not SAS": "Bearer abc",
    }
    for case, text in cases.items():
        code, why = status(cbs.put(text, orders))
        assert code == 401, (case, why)
        for secret in (ROOT_KEY, ORDERS_KEY, signature, "not-the-key"):
            assert secret not in why, case
    assert cbs.client.sender("orders").state is not a.LinkState.ATTACHED
    assert status(cbs.put(good, orders))[0] == 202  # and the connection is fine after all that
    assert cbs.client.sender("orders").state is a.LinkState.ATTACHED


@pytest.mark.parametrize(
    ("token_value", "app", "code"),
    [
        ("t", {"operation": None}, 400),
        ("t", {"operation": 7}, 400),
        ("t", {"operation": "delete-token"}, 501),
        ("t", {"name": None}, 400),
        ("t", {"name": ""}, 400),
        ("t", {"name": 5}, 400),
        ("t", {"name": "sb://h/" + "q" * MAX_AUDIENCE_LENGTH}, 400),
        ("t", {"type": None}, 400),
        ("t", {"type": "made-up"}, 400),
        ("t", {"type": "jwt"}, 401),  # not a JWT
        (b"SharedAccessSignature binary", {}, 401),  # binary: UTF-8, taken as the token
        (b"\xff\xfe", {}, 400),
        (["a", "list"], {}, 400),
        (None, {}, 400),
    ],
)
def test_hostile_requests_are_answered(token_value: Any, app: dict[str, Any], code: int) -> None:
    net = secured()
    cbs = Azure(net.connect())
    response = cbs.put(token_value, f"{HOST}/orders", **app)
    assert status(response)[0] == code


def test_a_request_without_application_properties_is_400() -> None:
    net = secured(chunk=1)
    cbs = Azure(net.connect())
    message = a.Message(properties=a.Properties(message_id=1), body=a.AmqpValue("t"))
    cbs.client.send(cbs.requests, message)
    (event,) = cbs.client.received(cbs.responses)
    assert status(a.Message.decode(event.data))[0] == 400


def test_users_file_sas_keys_are_checked() -> None:
    def users(keys: Any) -> Users:
        return Users.from_json(json.dumps({"sas-keys": keys}))

    assert "Root" in repr(users({"Root": {"key": "k", "rights": ["Send"]}}).sas_keys)
    assert "'k'" not in repr(users({"Root": {"key": "k", "rights": ["Send"]}}).sas_keys)
    bad: Any
    for bad in (
        [],
        {"R": "k"},
        {"R": {"rights": ["Send"]}},
        {"R": {"key": "k"}},
        {"R": {"key": "k", "rights": []}},
        {"R": {"key": "k", "rights": ["Read"]}},
        {"R": {"key": "k", "rights": ["Send"], "entity": 3}},
        {"R": {"key": "k", "rights": ["Send"], "extra": 1}},
    ):
        with pytest.raises(UsersFileError):
            users(bad)
    for jwt in ("k", {"key": ""}, {"key": "k", "alg": "HS256"}, {}):
        with pytest.raises(UsersFileError):
            Users.from_json(json.dumps({"jwt": jwt}))
    assert Users.from_json('{"jwt": {"key": "k"}}').anonymous is not None
    # keys, no anonymous entry: ANONYMOUS is offered, with no rules of its own
    anonymous = users({"R": {"key": "k", "rights": ["Send"]}}).anonymous
    assert anonymous is not None and not anonymous.send and not anonymous.receive


def test_password_users_keep_their_rights() -> None:
    net = Net(BrokerConfig(users=Users.from_json(json.dumps(USERS)), allow_insecure_auth=True))
    alice = net.connect(sasl=a.sasl.ClientCredentials(username="alice", password="pw"))
    assert alice.sender("orders").state is a.LinkState.ATTACHED
    assert alice.sender("invoices").state is not a.LinkState.ATTACHED


def test_jwts_signed_with_the_users_files_key() -> None:
    users = Users.from_json(json.dumps({**USERS, "jwt": {"key": "jwt-key"}}))
    net = Net(BrokerConfig(users=users))
    client = net.connect()
    cbs = Azure(client)
    orders = f"{HOST}/orders"

    def jwt(key: str = "jwt-key", **claims: Any) -> str:
        return make_jwt({"aud": orders, "exp": net.wall + 60, "roles": ["Send"], **claims}, key)

    refused = {
        "another key": jwt("not-it"),
        "expired": jwt(exp=net.wall),
        "another audience": jwt(aud=f"{HOST}/invoices"),
        "no roles": jwt(roles=[]),
        "unknown roles": jwt(roles=["Admin"]),
        "malformed": "e30.e30",
    }
    for case, text in refused.items():
        code, why = status(cbs.put(text, orders, kind="jwt"))
        assert code == 401, (case, why)
        assert "jwt-key" not in why
    assert client.sender("orders").state is not a.LinkState.ATTACHED
    assert status(cbs.put(jwt(aud=[f"{HOST}/x", orders]), orders, kind="jwt"))[0] == 202
    sender = client.sender("orders")
    assert sender.state is a.LinkState.ATTACHED
    assert client.receiver("orders", 1).state is not a.LinkState.ATTACHED  # Send only
    net.advance(60)
    assert detached(client, sender).error is not None  # its exp


def test_a_sas_token_typed_jwt_is_checked_as_sas() -> None:
    """As Azure's ``_pyamqp`` sends it (``JWTTokenAuth`` with a SAS token)."""
    net = secured()
    client = net.connect()
    cbs = Azure(client)
    orders = f"{HOST}/orders"
    forged = make_sas_token(orders, "Root", "wrong", int(net.wall + 60))
    assert status(cbs.put(forged, orders, kind="jwt"))[0] == 401
    assert status(cbs.put(token(orders, expiry=net.wall + 60), orders, kind="jwt"))[0] == 202
    assert client.sender("orders").state is a.LinkState.ATTACHED


def test_without_a_jwt_key_jwts_are_refused() -> None:
    net = secured()
    code, why = status(Azure(net.connect()).put(make_jwt({}, "k"), f"{HOST}/q", kind="jwt"))
    assert code == 401 and "no 'jwt' key" in why


def test_without_sas_keys_a_sas_token_is_refused() -> None:
    users = Users.from_json('{"anonymous": {"send": ["public"], "receive": []}}')
    net = Net(BrokerConfig(users=users))
    cbs = Azure(net.connect())
    code, why = status(cbs.put(token(f"{HOST}/public", expiry=net.wall + 60), f"{HOST}/public"))
    assert code == 401 and "unknown" in why


# -- expiry and renewal (the broker's wall clock, simulated) ----------------------------------


def detached(client: Client, link: a.Link) -> a.events.LinkDetached:
    (event,) = [e for e in client.of(a.events.LinkDetached) if e.link is link]
    return event  # type: ignore[no-any-return]


def test_links_go_when_their_token_expires() -> None:
    net = secured()
    client = net.connect(idle_timeout=0)
    cbs = Azure(client)
    orders = f"{HOST}/orders"
    assert status(cbs.put(token(orders, expiry=net.wall + 60), orders))[0] == 202
    sender = client.sender("orders")
    receiver = client.receiver("orders", 1)
    assert net.broker.next_expiry() == net.wall + 60
    net.advance(59)
    assert sender.state is a.LinkState.ATTACHED and receiver.state is a.LinkState.ATTACHED
    net.advance(1)
    for link in (sender, receiver):
        error = detached(client, link).error
        assert error is not None and error.condition == "amqp:unauthorized-access"
        assert "expired" in (error.description or "")
    assert net.broker.next_expiry() is None or net.broker.next_expiry() > net.wall
    # the $cbs links stay; a new token, a new link
    assert status(cbs.put(token(orders, expiry=net.wall + 60), orders))[0] == 202
    assert client.sender("orders").state is a.LinkState.ATTACHED


def test_a_renewed_token_keeps_its_links() -> None:
    net = secured()
    client = net.connect(idle_timeout=0)
    cbs = Azure(client)
    orders = f"{HOST}/orders"
    cbs.put(token(orders, expiry=net.wall + 60), orders)
    sender = client.sender("orders")
    net.advance(50)
    assert status(cbs.put(token(orders, expiry=net.wall + 60), orders))[0] == 202
    net.advance(30)  # past the first token's expiry
    assert sender.state is a.LinkState.ATTACHED
    assert not client.of(a.events.LinkDetached)
    outcome = client.send(sender, a.Message(body=b"still here")).remote_state
    assert isinstance(outcome, a.Accepted)
    net.advance(31)  # past the renewed one's
    assert detached(client, sender).error is not None


def test_another_token_takes_over_a_link_at_expiry() -> None:
    net = secured()
    client = net.connect(idle_timeout=0)
    cbs = Azure(client)
    cbs.put(token(f"{HOST}/orders", expiry=net.wall + 10), f"{HOST}/orders")
    sender = client.sender("orders")
    cbs.put(token(f"{HOST}/", expiry=net.wall + 100), f"{HOST}/")  # namespace-wide
    net.advance(20)
    assert sender.state is a.LinkState.ATTACHED
    net.advance(100)
    assert detached(client, sender).error is not None


def test_tokens_per_connection_are_bounded_and_renewals_compacted() -> None:
    net = secured()
    client = net.connect(idle_timeout=0)
    cbs = Azure(client)
    cbs.responses.flow(2000)
    for i in range(MAX_TOKENS_PER_CONNECTION):
        audience = f"{HOST}/q{i}"
        assert status(cbs.put(token(audience, expiry=net.wall + 60), audience))[0] == 202
    audience = f"{HOST}/one-more"
    code, why = status(cbs.put(token(audience, expiry=net.wall + 60), audience))
    assert code == 400 and "at most" in why
    for i in range(1200):  # one audience renewed again and again
        expiry = net.wall + 100 + i
        assert status(cbs.put(token(f"{HOST}/q0", expiry=expiry), f"{HOST}/q0"))[0] == 202
    # (the renewals' stale entries were compacted away; what is due stays due)
    assert net.broker.next_expiry() == net.wall + 60
    latest = net.wall + 100 + 1199
    net.advance(60)
    assert net.broker.next_expiry() == latest


def test_a_lost_connection_forgets_its_tokens() -> None:
    net = secured()
    client = net.connect(idle_timeout=0)
    cbs = Azure(client)
    cbs.put(token(f"{HOST}/orders", expiry=net.wall + 10), f"{HOST}/orders")
    client.sender("orders")
    net.lose(client)
    assert net.broker.next_expiry() is None
    net.advance(20)  # nothing to do, nothing breaks


def test_0091_and_010_declare_as_rabbitmq_does_and_10_reaches_those_queues() -> None:
    """0-9-1's and 0-10's queue.declare (one rule, the virtual host's): ``amq.`` is
    reserved (403, as RabbitMQ), a ``$`` name is a client's to choose (RabbitMQ allows
    it); a queue so declared exists, so a 1.0 link reaches it."""
    from amqp_sansio.broker import Refused
    from amqp_sansio.definitions.amqp091.spec import ReplyCode

    net = Net()
    vhost = net.broker.vhosts["/"]
    with pytest.raises(Refused) as info:
        vhost.declare_queue("amq.mine")
    assert info.value.reply_code == ReplyCode.ACCESS_REFUSED
    queue, _, _ = vhost.declare_queue("$legacy")
    client = net.connect()
    sender = client.sender("$legacy")
    assert sender.state is a.LinkState.ATTACHED
    assert isinstance(client.send(sender, a.Message(body=b"x")).remote_state, a.Accepted)
    assert queue.depth == 1
    # $cbs stays the broker's own node, whatever a 0-9-1 client declares
    vhost.declare_queue("$cbs")
    assert status(Azure(client).put("t", f"{HOST}/q"))[0] == 202
