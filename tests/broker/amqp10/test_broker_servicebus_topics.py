"""Service Bus topics and subscriptions (amqp_sansio/broker/amqp10/servicebus_topics.py),
through the broker's byte interface with our engine as the client, attaching as the SDK
does (``amqps://host/<topic>`` to send, ``amqps://host/<topic>/Subscriptions/<name>`` to
receive), on a simulated clock (tests/support/broker_net.py). The SDK itself is driven in
tests/interop/test_azure_servicebus_topics.py."""

from __future__ import annotations

import json
import time
import uuid

from support.broker_net import Client, Net, body
from support.servicebus_net import Management, depth, drain, publish_all

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig, Queue, Topic, Users
from amqp_sansio.broker.amqp10.servicebus import PEEK, RENEW_LOCK
from amqp_sansio.codec.amqp10 import AMQPType, Array
from amqp_sansio.security.sas import make_sas_token

URL = "amqps://broker.example:5671/"
SECOND = a.ReceiverSettleMode.SECOND
SUB_A = "t/subscriptions/a"
SUB_B = "t/subscriptions/b"


# (How a subscription's name maps, canonical and subscription_of: the names table of
# tests/broker/amqp10/test_broker_servicebus.py.)


def subscribe(client: Client, address: str, credit: int = 0, **kwargs: object) -> a.Receiver:
    topic, name = address.split("/subscriptions/")
    receiver = client.receiver(f"{URL}{topic}/Subscriptions/{name}", credit, **kwargs)
    assert receiver.state is a.LinkState.ATTACHED
    return receiver


def test_each_subscription_gets_a_copy_of_each_message() -> None:
    net = Net()
    client = net.connect()
    first, second = subscribe(client, SUB_A, 10), subscribe(client, SUB_B, 10)
    assert isinstance(net.broker.nodes["t"], Topic)
    assert isinstance(net.broker.nodes[SUB_A], Queue)
    sender = client.sender(URL + "t")
    for value in (b"m0", b"m1"):
        delivery = client.send(sender, a.Message(body=value))
        assert delivery.remote_settled and isinstance(delivery.remote_state, a.Accepted)
    assert [body(e) for e in client.received(first)] == [b"m0", b"m1"]
    assert [body(e) for e in client.received(second)] == [b"m0", b"m1"]


def test_a_subscription_keeps_what_comes_while_no_receiver_is_attached() -> None:
    net = Net()
    client = net.connect()
    receiver = subscribe(client, SUB_A)
    receiver.detach(closed=True)
    net.pump()
    publish_all(client, URL + "t", b"while-away")
    other = net.connect()  # another connection, later
    publish_all(other, "t", b"plain-address")  # the topic, by its plain name too
    assert depth(net, SUB_A) == 2
    assert drain(other, URL + "t/Subscriptions/a") == [b"while-away", b"plain-address"]
    assert SUB_A in net.broker.nodes  # empty and unlinked: kept all the same


def test_a_message_to_a_topic_before_any_subscription_is_dropped() -> None:
    net = Net()
    client = net.connect()
    subscribe(client, SUB_A).detach(closed=True)
    net.pump()
    publish_all(client, URL + "t", b"for-a")
    subscribe(client, SUB_B)  # made later: gets what is sent from now on only
    publish_all(client, URL + "t", b"for-both")
    assert drain(client, URL + "t/Subscriptions/b") == [b"for-both"]
    assert drain(client, URL + "t/Subscriptions/a") == [b"for-a", b"for-both"]


def test_peek_lock_abandon_complete_and_dead_letter_on_a_subscription() -> None:
    net = Net()
    client = net.connect()
    receiver = subscribe(client, SUB_A, 2, rcv_settle_mode=SECOND)
    publish_all(client, URL + "t", b"again", b"bad")
    first, bad = client.received(receiver)
    assert len(first.delivery.tag) == 16  # a lock token
    receiver.settle(first.delivery, a.Modified(delivery_failed=True))  # abandon
    dead = a.Error(condition=a.Symbol("com.microsoft:dead-letter"), info={"DeadLetterReason": "no"})
    receiver.settle(bad.delivery, a.Rejected(error=dead))
    receiver.flow(10)
    net.pump()
    (again,) = client.received(receiver)
    assert body(again) == b"again"
    receiver.settle(again.delivery, a.Accepted())  # complete
    net.pump()
    assert depth(net, SUB_A) == 0
    dlq = client.receiver(URL + "t/Subscriptions/a/$DeadLetterQueue", 10)
    (got,) = client.received(dlq)
    message = a.Message.decode(got.data)
    assert message.body == a.Data(b"bad")
    assert message.application_properties == {"DeadLetterReason": "no"}
    assert depth(net, SUB_B) == 0 and "t/subscriptions/b/$deadletterqueue" not in net.broker.nodes


def test_peek_and_renew_lock_on_the_subscription_management_node() -> None:
    net = Net()
    client = net.connect()
    subscribe(client, SUB_A).detach(closed=True)
    subscribe(client, SUB_B).detach(closed=True)
    net.pump()
    publish_all(client, URL + "t", b"m0", b"m1")
    mgmt = Management(client, "t/Subscriptions/a/$management")  # (as the SDK names it)
    code, _, value = mgmt.ask(PEEK, {"from-sequence-number": 0, "message-count": 5})
    assert code == 200
    assert [a.Message.decode(m["message"]).body for m in value["messages"]] == [
        a.Data(b"m0"),
        a.Data(b"m1"),
    ]
    receiver = subscribe(client, SUB_A, 1, rcv_settle_mode=SECOND)
    (event,) = client.received(receiver)
    token = uuid.UUID(bytes_le=event.delivery.tag)
    code, _, _ = mgmt.ask(RENEW_LOCK, {"lock-tokens": Array(AMQPType.UUID, [token])})
    assert code == 200
    assert depth(net, SUB_B) == 2  # the other subscription's copies: untouched


def test_a_plain_name_stays_a_queue() -> None:
    net = Net()
    client = net.connect()
    publish_all(client, URL + "orders", b"x")
    assert isinstance(net.broker.nodes["orders"], Queue)
    assert drain(client, URL + "orders") == [b"x"]


def test_a_subscription_of_a_queue_in_use_is_refused_and_an_unused_one_gives_way() -> None:
    net = Net()
    client = net.connect()
    sender = client.sender(URL + "busy")
    client.send(sender, a.Message(body=b"held"))
    refused = client.receiver(URL + "busy/Subscriptions/s", 1)
    assert refused.state is not a.LinkState.ATTACHED
    assert isinstance(net.broker.nodes["busy"], Queue) and depth(net, "busy") == 1
    receiver = client.receiver("busy", 1)
    (event,) = client.received(receiver)
    receiver.settle(event.delivery, a.Accepted())
    for link in (sender, receiver):
        link.detach(closed=True)
    net.pump()
    assert isinstance(net.broker.nodes.get("busy", None), Queue | None)
    subscribe(client, "busy/subscriptions/s")  # an unused queue made on first use: replaced
    assert isinstance(net.broker.nodes["busy"], Topic)


def test_no_subscription_is_made_where_the_broker_makes_no_node() -> None:
    net = Net(BrokerConfig(auto_create=False))
    client = net.connect()
    refused = client.receiver(URL + "t/Subscriptions/s", 1)
    assert refused.state is not a.LinkState.ATTACHED
    assert "t" not in net.broker.nodes and SUB_A not in net.broker.nodes


def test_a_token_for_the_topic_lets_its_subscriptions_be_read() -> None:
    keys = {"t-listen": {"key": "c2VjcmV0", "rights": ["Listen", "Send"], "entity": "t"}}
    net = Net(BrokerConfig(users=Users.from_json(json.dumps({"sas-keys": keys}))))
    net.wall = time.time()
    client = net.connect()
    token = make_sas_token("sb://broker.example/t", "t-listen", "c2VjcmV0", int(net.wall) + 600)
    put_token(client, "sb://broker.example/t/Subscriptions/a", token)
    receiver = subscribe(client, SUB_A, 10)
    put_token(client, "sb://broker.example/t", token)  # (the sender's audience: the topic)
    publish_all(client, URL + "t", b"x")
    assert [body(e) for e in client.received(receiver)] == [b"x"]
    other = client.receiver(URL + "u/Subscriptions/a", 1)  # no token for topic u
    assert other.state is not a.LinkState.ATTACHED


def put_token(client: Client, audience: str, token: str) -> None:
    session = client.session or client.begin()
    requests = client.sender("$cbs")
    source, target = a.Source(address="$cbs"), a.Target(address="cbs-r")
    responses = session.attach_receiver(f"cbs-{len(session.links)}", source=source, target=target)
    client.net.pump()
    responses.flow(1)
    client.net.pump()
    request = a.Message(
        properties=a.Properties(message_id=1, reply_to="cbs-r"),
        application_properties={
            "operation": "put-token",
            "type": "servicebus.windows.net:sastoken",
            "name": audience,
        },
        body=a.AmqpValue(token),
    )
    client.send(requests, request)
    (event,) = client.received(responses)
    response = a.Message.decode(event.data)
    assert (response.application_properties or {})["status-code"] == 202


def test_subscriptions_count_against_max_subscriptions() -> None:
    net = Net(BrokerConfig(max_subscriptions=2))
    client = net.connect()
    subscribe(client, SUB_A).detach(closed=True)
    subscribe(client, SUB_B).detach(closed=True)
    net.pump()
    refused = client.receiver(URL + "t/Subscriptions/c", 1)
    assert refused.state is not a.LinkState.ATTACHED
    assert "t/subscriptions/c" not in net.broker.nodes
    subscribe(client, SUB_A)  # an existing one: found, not made
    net.broker.delete_node(net.broker.nodes[SUB_B])
    subscribe(client, "t/subscriptions/c")  # room again
    publish_all(client, URL + "t", b"x")
    topic = net.broker.nodes["t"]
    assert isinstance(topic, Topic)
    assert sorted(q.address for q in topic.subscriptions.values()) == [SUB_A, "t/subscriptions/c"]
