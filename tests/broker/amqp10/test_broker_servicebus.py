"""What the broker does as Azure Service Bus does (amqp_sansio/broker/amqp10/servicebus.py),
through the broker's byte interface with our engine as the client, on a simulated clock
(tests/support/broker_net.py): the URL addresses, the settle mode answered, batches, lock
tokens, the dead-letter sub-queue and ``<entity>/$management``. The SDK itself is driven in
tests/interop/test_azure_servicebus.py."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from support.broker_net import Net
from support.servicebus_net import Management, depth, drain, publish_all

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig
from amqp_sansio.broker.amqp10.servicebus import (
    BATCH_FORMAT,
    LOCK_DURATION,
    PEEK,
    RENEW_LOCK,
    entity_address,
)
from amqp_sansio.broker.amqp10.servicebus_topics import canonical, subscription_of
from amqp_sansio.codec.amqp10 import AMQPType, Array

URL = "amqps://broker.example:5671/"
SECOND = a.ReceiverSettleMode.SECOND
FIRST = a.ReceiverSettleMode.FIRST


#: How the SDK's names map to the broker's: ``entity_address`` maps its URLs only (to the
#: entity's path); ``canonical`` spells a topic's ``subscriptions`` segment; and
#: ``subscription_of`` takes only a subscription's path (.servicebus_topics).
NAMES: list[tuple[Callable[[str], Any], str, Any]] = [
    (entity_address, "amqps://h:5671/orders", "orders"),
    (entity_address, "amqp://h/orders/", "orders"),
    (entity_address, "sb://H.example/orders/$management", "orders/$management"),
    (entity_address, "sb://h/orders/$DeadLetterQueue", "orders/$deadletterqueue"),
    (entity_address, "amqps://h/topic/subscriptions/sub", "topic/subscriptions/sub"),
    (entity_address, "amqps://h/t/Subscriptions/s", "t/subscriptions/s"),
    (
        entity_address,
        "amqps://h/t/Subscriptions/s/$DeadLetterQueue",
        "t/subscriptions/s/$deadletterqueue",
    ),
    (entity_address, "orders", "orders"),
    (entity_address, "https://h/orders", "https://h/orders"),
    (entity_address, "orders/$DeadLetterQueue", "orders/$DeadLetterQueue"),
    (canonical, "t/Subscriptions/s", "t/subscriptions/s"),
    (canonical, "t/SUBSCRIPTIONS/s/$management", "t/subscriptions/s/$management"),
    (canonical, "t/subscriptions/s", "t/subscriptions/s"),
    (canonical, "t/Subscriptions", "t/Subscriptions"),
    (canonical, "orders", "orders"),
    (canonical, "a/b/c", "a/b/c"),
    (subscription_of, "t/subscriptions/s", ("t", "s")),
    (subscription_of, "t/Subscriptions/s", ("t", "s")),
    (subscription_of, "t/subscriptions/s/$deadletterqueue", None),
    (subscription_of, "t/subscriptions/s/$management", None),
    (subscription_of, "t/subscriptions/", None),
    (subscription_of, "/subscriptions/s", None),
    (subscription_of, "$t/subscriptions/s", None),
    (subscription_of, "t/queues/s", None),
    (subscription_of, "t", None),
]


@pytest.mark.parametrize(
    ("mapping", "name", "expected"), NAMES, ids=[f"{m.__name__}:{n}" for m, n, _ in NAMES]
)
def test_the_sdk_names_map_as_service_bus_spells_them(
    mapping: Callable[[str], Any], name: str, expected: Any
) -> None:
    assert mapping(name) == expected


# -- addresses and the settle mode -------------------------------------------------------------


def test_a_url_sender_is_answered_rcv_settle_mode_first_and_settled_at_once() -> None:
    net = Net()
    client = net.connect()
    sender = client.sender(URL + "orders", rcv_settle_mode=SECOND)
    assert sender.state is a.LinkState.ATTACHED
    assert sender.remote is not None and sender.remote.rcv_settle_mode is FIRST
    assert sender.remote.target is not None
    assert sender.remote.target.address == "orders"  # type: ignore[union-attr]
    delivery = client.send(sender, a.Message(body=b"x"))
    assert delivery.remote_settled and isinstance(delivery.remote_state, a.Accepted)
    assert drain(client, "orders") == [b"x"]


def test_a_plain_sender_keeps_rcv_settle_mode_second() -> None:
    net = Net()
    client = net.connect()
    sender = client.sender("orders", rcv_settle_mode=SECOND)
    assert sender.remote is not None and sender.remote.rcv_settle_mode is SECOND
    delivery = client.send(sender, a.Message(body=b"x"))
    assert not delivery.remote_settled and isinstance(delivery.remote_state, a.Accepted)


# -- batches --------------------------------------------------------------------------------------


def batch(*messages: a.Message) -> a.Message:
    return a.Message(body=tuple(a.Data(m.encode()) for m in messages))


def test_a_batch_puts_each_message_in_order() -> None:
    net = Net()
    client = net.connect()
    sender = client.sender(URL + "orders")
    inner = [a.Message(application_properties={"n": i}, body=f"m{i}".encode()) for i in range(3)]
    delivery = client.send(sender, batch(*inner), message_format=BATCH_FORMAT)
    assert delivery.remote_settled and isinstance(delivery.remote_state, a.Accepted)
    assert depth(net, "orders") == 3
    assert drain(client, "orders") == [b"m0", b"m1", b"m2"]


def test_a_batch_to_a_plain_address_is_split_too() -> None:
    net = Net()
    client = net.connect()
    sender = client.sender("orders")
    client.send(
        sender, batch(a.Message(body=b"1"), a.Message(body=b"2")), message_format=BATCH_FORMAT
    )
    assert drain(client, "orders") == [b"1", b"2"]


@pytest.mark.parametrize(
    "outer",
    [
        a.Message(body=a.AmqpValue("not data sections")),
        a.Message(body=(a.Data(a.Message(body=b"ok").encode()), a.Data(b"\x00\x53"))),
        a.Message(body=a.Data(b"\xa1\x03abc")),
    ],
    ids=["amqp-value", "a-truncated-message", "not-a-message"],
)
def test_a_malformed_batch_is_rejected_and_nothing_is_put(outer: a.Message) -> None:
    net = Net()
    client = net.connect()
    sender = client.sender(URL + "orders")
    delivery = client.send(sender, outer, message_format=BATCH_FORMAT)
    state = delivery.remote_state
    assert isinstance(state, a.Rejected) and state.error is not None
    assert state.error.condition == "amqp:decode-error"
    assert state.error.info == {}  # (the SDK reads three fields: see the next test)
    assert depth(net, "orders") == 0
    ok = client.send(sender, a.Message(body=b"next"))  # the link goes on
    assert isinstance(ok.remote_state, a.Accepted)


@pytest.mark.parametrize("batched", [False, True], ids=["message", "batch"])
@pytest.mark.parametrize("address", [URL + "orders", "orders"], ids=["url", "plain"])
def test_a_rejection_on_a_url_sender_carries_an_empty_info(address: str, batched: bool) -> None:
    """A transfer to a full queue is rejected (``amqp:resource-limit-exceeded``); on a
    Service Bus link the error's info is an empty map, not left out (the SDK's ``_pyamqp``
    reads three fields and hangs on two); on any other link it is left out."""
    net = Net(config=BrokerConfig(max_queue_depth=1))
    client = net.connect()
    sender = client.sender(address)
    client.send(sender, a.Message(body=b"fits"))
    over = a.Message(body=b"over")
    if batched:
        delivery = client.send(sender, batch(over), message_format=BATCH_FORMAT)
    else:
        delivery = client.send(sender, over)
    state = delivery.remote_state
    assert isinstance(state, a.Rejected) and state.error is not None
    assert state.error.condition == "amqp:resource-limit-exceeded"
    assert state.error.info == ({} if address.startswith(URL) else None)
    assert drain(client, "orders") == [b"fits"]


def test_a_batch_in_pieces_byte_by_byte() -> None:
    net = Net(chunk=1)  # every frame delivered a byte at a time
    client = net.connect()
    sender = client.sender(URL + "orders")
    client.send(
        sender, batch(a.Message(body=b"a"), a.Message(body=b"b")), message_format=BATCH_FORMAT
    )
    assert drain(client, "orders") == [b"a", b"b"]


# -- receiving: lock tokens, the outcome echoed, the dead-letter sub-queue ------------------------


def test_a_url_receiver_gets_lock_tokens_and_the_applied_outcome() -> None:
    net = Net()
    client = net.connect()
    client.send(client.sender("orders"), a.Message(body=b"x"))
    receiver = client.receiver(URL + "orders", 10, rcv_settle_mode=SECOND)
    (event,) = client.received(receiver)
    assert len(event.delivery.tag) == 16
    receiver.settle(event.delivery, a.Modified(delivery_failed=True))
    net.pump()
    assert event.delivery.remote_settled
    assert isinstance(event.delivery.remote_state, a.Modified)
    (again,) = client.received(receiver)  # abandoned: it comes again
    assert again.delivery.tag != event.delivery.tag
    plain = client.receiver("orders", 10)
    client.send(client.sender("orders"), a.Message(body=b"y"))
    (other,) = client.received(plain)
    assert len(other.delivery.tag) < 16


def test_a_modified_outcome_is_echoed_without_its_annotations() -> None:
    net = Net()
    client = net.connect()
    publish_all(client, "orders", b"x")
    receiver = client.receiver("orders", 10, rcv_settle_mode=SECOND)
    (event,) = client.received(receiver)
    notes = {a.Symbol("x-opt-why"): "y" * 1000}
    receiver.settle(event.delivery, a.Modified(delivery_failed=True, message_annotations=notes))
    net.pump()
    echoed = event.delivery.remote_state
    assert event.delivery.remote_settled
    assert echoed == a.Modified(delivery_failed=True, undeliverable_here=None)
    (again,) = client.received(receiver)  # the annotations applied to the message itself
    assert a.Message.decode(again.data).message_annotations == notes


def test_a_url_receiver_gets_each_message_with_its_sequence_number() -> None:
    net = Net()
    client = net.connect()
    publish_all(client, "orders", b"m0", b"m1")
    mgmt = Management(client)
    _, _, value = mgmt.ask(PEEK, {"from-sequence-number": 0, "message-count": 2})
    peeked = [a.Message.decode(m["message"]).message_annotations for m in value["messages"]]
    receiver = client.receiver(URL + "orders", 10)
    got = [a.Message.decode(e.data) for e in client.received(receiver)]
    assert [m.message_annotations for m in got] == peeked
    assert [m.body for m in got] == [a.Data(b"m0"), a.Data(b"m1")]
    for event in client.received(receiver):
        receiver.settle(event.delivery, a.Released())
    plain = Net().connect()
    publish_all(plain, "orders", b"x")
    (event,) = plain.received(plain.receiver("orders", 10))
    assert a.Message.decode(event.data).message_annotations is None  # as it was sent


def test_a_rejection_goes_to_the_dead_letter_queue_and_is_echoed_without_its_error() -> None:
    net = Net()
    client = net.connect()
    client.send(client.sender("orders"), a.Message(body=b"bad"))
    receiver = client.receiver(URL + "orders", 10, rcv_settle_mode=SECOND)
    (event,) = client.received(receiver)
    dead = a.Error(condition=a.Symbol("com.microsoft:dead-letter"), description="why")
    receiver.settle(event.delivery, a.Rejected(error=dead))
    net.pump()
    echoed = event.delivery.remote_state
    assert event.delivery.remote_settled
    assert isinstance(echoed, a.Rejected) and echoed.error is None
    assert depth(net, "orders") == 0
    dlq = client.receiver(URL + "orders/$DeadLetterQueue", 10)
    (dead_event,) = client.received(dlq)
    assert a.Message.decode(dead_event.data).body == a.Data(b"bad")
    assert a.Message.decode(dead_event.data).application_properties is None  # no reason given


def test_the_sdk_reason_is_set_on_the_dead_lettered_message() -> None:
    net = Net()
    client = net.connect()
    sent = a.Message(application_properties={"kind": "order"}, body=b"bad")
    client.send(client.sender("orders"), sent)
    receiver = client.receiver(URL + "orders", 10, rcv_settle_mode=SECOND)
    (event,) = client.received(receiver)
    info = {"DeadLetterReason": "unparseable", "DeadLetterErrorDescription": "x" * 5000}
    dead = a.Error(condition=a.Symbol("com.microsoft:dead-letter"), info=info)
    receiver.settle(event.delivery, a.Rejected(error=dead))
    net.pump()
    dlq = client.receiver(URL + "orders/$deadletterqueue", 10)
    (got,) = client.received(dlq)
    props = a.Message.decode(got.data).application_properties
    assert props == {
        "kind": "order",
        "DeadLetterReason": "unparseable",
        "DeadLetterErrorDescription": "x" * 4096,
    }


def test_a_plain_consumer_rejection_does_not_make_a_sub_queue() -> None:
    net = Net()
    client = net.connect()
    client.send(client.sender("orders"), a.Message(body=b"bad"))
    receiver = client.receiver("orders", 10)
    (event,) = client.received(receiver)
    receiver.settle(event.delivery, a.Rejected())
    net.pump()
    assert "orders/$deadletterqueue" not in net.broker.nodes
    refused = client.receiver("orders/$deadletterqueue", 1)  # a $-name: never made
    assert refused.state is not a.LinkState.ATTACHED


# -- <entity>/$management -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "operation",
    ["com.microsoft:receive-by-sequence-number", "com.microsoft:update-disposition", "READ", None],
)
def test_entity_management_refuses_other_operations_with_501(operation: Any) -> None:
    mgmt = Management(Net().connect())
    code, props, _ = mgmt.ask(operation, {"lock-tokens": []})
    assert code == 501
    assert props["errorCondition"] == "amqp:not-implemented"
    assert (
        repr(operation) in props["statusDescription"]
        or str(operation) in props["statusDescription"]
    )


def test_peek_returns_available_messages_from_a_sequence_number() -> None:
    net = Net()
    client = net.connect()
    publish_all(client, "orders", b"m0", b"m1", b"m2")
    mgmt = Management(client)
    code, _, value = mgmt.ask(PEEK, {"from-sequence-number": 0, "message-count": 2})
    assert code == 200
    peeked = [a.Message.decode(m["message"]) for m in value["messages"]]
    assert [m.body for m in peeked] == [a.Data(b"m0"), a.Data(b"m1")]
    seqs = [m.message_annotations["x-opt-sequence-number"] for m in peeked]  # type: ignore[index]
    code, _, value = mgmt.ask(PEEK, {"from-sequence-number": seqs[1] + 1, "message-count": 9})
    assert [a.Message.decode(m["message"]).body for m in value["messages"]] == [a.Data(b"m2")]
    assert mgmt.ask(PEEK, {"from-sequence-number": seqs[1] + 99, "message-count": 9})[0] == 204
    assert mgmt.ask(PEEK, {"message-count": 1})[0] == 200  # from the start
    assert depth(net, "orders") == 3  # nothing taken


@pytest.mark.parametrize(
    "value",
    [None, "text", {"message-count": 0}, {"message-count": True}, {"from-sequence-number": "1"}],
)
def test_a_malformed_peek_is_answered_400(value: Any) -> None:
    code, props, _ = Management(Net().connect()).ask(PEEK, value)
    assert code == 400
    assert props["errorCondition"] == "com.microsoft:argument-error"


def test_peek_of_an_unknown_entity_is_empty() -> None:
    mgmt = Management(Net().connect(), "nothing-here/$management")
    assert mgmt.ask(PEEK, {"from-sequence-number": 0, "message-count": 1})[0] == 204


def test_renew_lock_renews_a_lock_the_connection_holds() -> None:
    net = Net()
    client = net.connect()
    publish_all(client, "orders", b"x")
    receiver = client.receiver(URL + "orders", 10, rcv_settle_mode=SECOND)
    (event,) = client.received(receiver)
    token = uuid.UUID(bytes_le=event.delivery.tag)
    mgmt = Management(client)
    code, _, value = mgmt.ask(RENEW_LOCK, {"lock-tokens": Array(AMQPType.UUID, [token])})
    assert code == 200
    (until,) = value["expirations"]
    assert int(until) == int((net.wall + LOCK_DURATION) * 1000)
    receiver.settle(event.delivery, a.Accepted())
    net.pump()
    code, props, _ = mgmt.ask(RENEW_LOCK, {"lock-tokens": Array(AMQPType.UUID, [token])})
    assert code == 410
    assert props["errorCondition"] == "com.microsoft:message-lock-lost"


def test_renew_lock_refuses_another_connection_lock() -> None:
    net = Net()
    holder = net.connect()
    publish_all(holder, "orders", b"x")
    receiver = holder.receiver(URL + "orders", 10)
    (event,) = holder.received(receiver)
    token = uuid.UUID(bytes_le=event.delivery.tag)
    code, _, _ = Management(net.connect()).ask(RENEW_LOCK, {"lock-tokens": [token]})
    assert code == 410


@pytest.mark.parametrize("value", [None, {}, {"lock-tokens": []}, {"lock-tokens": ["x"]}])
def test_a_malformed_renew_lock_is_answered_400(value: Any) -> None:
    code, props, _ = Management(Net().connect()).ask(RENEW_LOCK, value)
    assert code == 400
    assert props["errorCondition"] == "com.microsoft:argument-error"
