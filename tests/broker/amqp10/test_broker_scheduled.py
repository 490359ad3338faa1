"""Azure Service Bus's scheduled messages (amqp_sansio/broker/amqp10/scheduled.py), through
the broker's byte interface with our engine as the client, on a simulated clock
(tests/support/broker_net.py: ``net.advance`` moves the wall clock and calls
``Broker.expire``, as the server does at ``Broker.next_expiry``): the
``com.microsoft:schedule-message`` and ``cancel-scheduled-message`` requests to
``<entity>/$management``, and transfers annotated ``x-opt-scheduled-enqueue-time``. The SDK
itself is driven in tests/interop/test_azure_servicebus_scheduled.py."""

from __future__ import annotations

from typing import Any

import pytest
from support.broker_net import Client, Net, accept_all
from support.servicebus_net import Management

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig
from amqp_sansio.broker.amqp10.servicebus import BATCH_FORMAT
from amqp_sansio.codec.amqp10 import AMQPType, Array, Symbol, Timestamp

URL = "amqps://broker.example:5671/"
SCHEDULE = "com.microsoft:schedule-message"
CANCEL = "com.microsoft:cancel-scheduled-message"
ENQUEUE_TIME = Symbol("x-opt-scheduled-enqueue-time")


def at(when: float, value: bytes, **kwargs: Any) -> a.Message:
    """A message to enqueue at ``when`` (wall clock, seconds)."""
    annotations = {ENQUEUE_TIME: Timestamp(int(when * 1000))}
    return a.Message(message_annotations=annotations, body=value, **kwargs)


def schedule(mgmt: Management, *messages: a.Message) -> tuple[int, dict[str, Any], Any]:
    items = [{"message-id": str(i), "message": m.encode()} for i, m in enumerate(messages)]
    return mgmt.ask(SCHEDULE, {"messages": items})


def cancel(mgmt: Management, *numbers: int) -> tuple[int, dict[str, Any], Any]:
    return mgmt.ask(CANCEL, {"sequence-numbers": Array(AMQPType.LONG, list(numbers))})


def setup(config: BrokerConfig | None = None) -> tuple[Net, Client, Management, a.Receiver]:
    net = Net(config)
    client = net.connect()
    receiver = client.receiver("orders", 100)
    return net, client, Management(client), receiver


def test_scheduled_messages_arrive_at_their_time_not_before() -> None:
    net, client, mgmt, receiver = setup()
    code, _, value = schedule(mgmt, at(net.wall + 10, b"a"), at(net.wall + 20, b"b"))
    assert code == 200
    numbers = value["sequence-numbers"]
    assert isinstance(numbers, Array) and numbers.type is AMQPType.LONG
    assert len(numbers) == 2 and numbers[0] < numbers[1]
    assert net.broker.next_expiry() == net.wall + 10
    net.advance(9.9)
    assert accept_all(client, receiver) == []
    assert net.broker.nodes["orders"].depth == 0
    net.advance(0.1)
    assert accept_all(client, receiver) == [b"a"]
    net.advance(10)
    assert accept_all(client, receiver) == [b"b"]
    assert net.broker.next_expiry() is None
    assert len(net.broker.scheduled) == 0


def test_a_time_now_or_past_enqueues_at_once() -> None:
    net, client, mgmt, receiver = setup()
    code, _, value = schedule(mgmt, at(net.wall - 60, b"past"), at(net.wall, b"now"))
    assert code == 200 and len(value["sequence-numbers"]) == 2
    assert accept_all(client, receiver) == [b"past", b"now"]
    assert len(net.broker.scheduled) == 0


def test_a_message_comes_to_its_entity_even_once_the_queue_was_deleted() -> None:
    net = Net()
    client = net.connect()
    mgmt = Management(client)  # (no link to orders: made on first use when due)
    assert schedule(mgmt, at(net.wall + 5, b"later"))[0] == 200
    assert "orders" not in net.broker.nodes
    net.advance(5)
    assert net.broker.nodes["orders"].depth == 1
    receiver = client.receiver("orders", 10)
    assert accept_all(client, receiver) == [b"later"]


def test_cancel_removes_messages_before_they_are_due() -> None:
    net, client, mgmt, receiver = setup()
    _, _, value = schedule(mgmt, at(net.wall + 10, b"a"), at(net.wall + 10, b"b"))
    first, second = value["sequence-numbers"]
    code, props, result = cancel(mgmt, first)
    assert (code, result) == (200, None)
    net.advance(10)
    assert accept_all(client, receiver) == [b"b"]
    # Already cancelled, already enqueued, never scheduled: as Service Bus answers.
    for number in (first, second, 999_999):
        code, props, _ = cancel(mgmt, number)
        assert code == 404
        assert props["errorCondition"] == "com.microsoft:message-not-found"
        assert str(number) in props["statusDescription"]


def test_cancel_is_all_or_none_and_for_its_entity_only() -> None:
    net, client, mgmt, receiver = setup()
    _, _, value = schedule(mgmt, at(net.wall + 10, b"kept"))
    (number,) = value["sequence-numbers"]
    code, props, _ = cancel(mgmt, number, 424242)
    assert code == 404 and "424242" in props["statusDescription"]
    other = Management(client, "invoices/$management")
    assert cancel(other, number)[0] == 404  # another entity's number
    net.advance(10)
    assert accept_all(client, receiver) == [b"kept"]


def test_the_ttl_counts_from_the_enqueue_time() -> None:
    net = Net()
    mgmt = Management(net.connect())  # (nobody consumes orders)
    late = at(net.wall + 100, b"short-lived", header=a.Header(ttl=5000))
    assert schedule(mgmt, late)[0] == 200
    net.advance(100)
    queue = net.broker.nodes["orders"]
    net.advance(4.9)
    assert queue.depth == 1
    net.advance(0.2)
    assert queue.depth == 0 and net.broker.expired == 1


def test_the_limit_refuses_beyond_it_with_403() -> None:
    net, client, mgmt, receiver = setup(BrokerConfig(max_scheduled_messages=2))
    later = [at(net.wall + 10, b"%d" % i) for i in range(3)]
    code, props, _ = schedule(mgmt, *later)
    assert code == 403
    assert props["errorCondition"] == "amqp:resource-limit-exceeded"
    assert "max_scheduled_messages" in props["statusDescription"]
    assert len(net.broker.scheduled) == 0  # none of them
    assert schedule(mgmt, *later[:2])[0] == 200
    assert schedule(mgmt, at(net.wall - 1, b"due"))[0] == 200  # due now: not held, no room needed
    sender = client.sender("orders")
    delivery = client.send(sender, later[2])
    assert isinstance(delivery.remote_state, a.Rejected)
    assert delivery.remote_state.error is not None
    assert delivery.remote_state.error.condition == "amqp:resource-limit-exceeded"
    net.advance(10)
    assert sorted(accept_all(client, receiver)) == [b"0", b"1", b"due"]  # type: ignore[type-var]


@pytest.mark.parametrize(
    "value",
    [
        None,
        "text",
        {},
        {"messages": []},
        {"messages": "m"},
        {"messages": [{"message": "not bytes"}]},
        {"messages": [{"message-id": "1"}]},
        {"messages": [{"message": b"\x00\x53\x70\x45\xff"}]},  # malformed
        {"messages": [{"message": a.Message(body=b"no time").encode()}]},
    ],
)
def test_a_malformed_schedule_is_answered_400(value: Any) -> None:
    net, _, mgmt, _ = setup()
    code, props, _ = mgmt.ask(SCHEDULE, value)
    assert code == 400
    assert props["errorCondition"] == "com.microsoft:argument-error"
    assert len(net.broker.scheduled) == 0


def test_one_bad_message_schedules_none() -> None:
    net, _, mgmt, _ = setup()
    good = {"message": at(net.wall + 10, b"good").encode()}
    code, _, _ = mgmt.ask(SCHEDULE, {"messages": [good, {"message": b"\x00\x53"}]})
    assert code == 400 and len(net.broker.scheduled) == 0


@pytest.mark.parametrize(
    "value",
    [None, {}, {"sequence-numbers": []}, {"sequence-numbers": ["1"]}, {"sequence-numbers": 7}],
)
def test_a_malformed_cancel_is_answered_400(value: Any) -> None:
    code, props, _ = Management(Net().connect()).ask(CANCEL, value)
    assert code == 400
    assert props["errorCondition"] == "com.microsoft:argument-error"


# -- the annotation on a transfer ----------------------------------------------------------------


def test_a_transfer_with_a_later_enqueue_time_is_held_until_then() -> None:
    net, client, _, receiver = setup()
    sender = client.sender(URL + "orders")
    delivery = client.send(sender, at(net.wall + 30, b"held"))
    assert isinstance(delivery.remote_state, a.Accepted)
    client.send(sender, at(net.wall - 30, b"past"))
    client.send(sender, a.Message(body=b"plain"))
    assert accept_all(client, receiver) == [b"past", b"plain"]
    net.advance(29)
    assert accept_all(client, receiver) == []
    net.advance(1)
    (event,) = client.received(receiver)
    message = a.Message.decode(event.data)
    assert message.body == a.Data(b"held")
    assert message.message_annotations is not None
    assert int(message.message_annotations[ENQUEUE_TIME]) == int((net.wall) * 1000)


def test_a_batch_message_with_an_enqueue_time_is_held() -> None:
    net, client, _, receiver = setup()
    sender = client.sender(URL + "orders")
    inner = [at(net.wall + 5, b"later"), a.Message(body=b"now")]
    outer = a.Message(body=tuple(a.Data(m.encode()) for m in inner))
    client.send(sender, outer, message_format=BATCH_FORMAT)
    assert accept_all(client, receiver) == [b"now"]
    net.advance(5)
    assert accept_all(client, receiver) == [b"later"]


def test_an_enqueue_time_in_pieces_byte_by_byte() -> None:
    net = Net(chunk=1)
    client = net.connect()
    receiver = client.receiver("orders", 10)
    client.send(client.sender("orders"), at(net.wall + 1, b"x" * 300))
    assert accept_all(client, receiver) == []
    net.advance(1)
    assert accept_all(client, receiver) == [b"x" * 300]


# -- the core's timers (BrokerCore.call_at) -----------------------------------------------------


def test_call_at_is_driven_by_next_expiry_and_expire() -> None:
    broker = Broker()
    calls: list[str] = []
    broker.call_at(20.0, lambda: calls.append("b"))
    first = broker.call_at(10.0, lambda: calls.append("a"))
    cancelled = broker.call_at(5.0, lambda: calls.append("never"))
    assert broker.next_expiry() == 5.0
    cancelled.cancel()
    assert len(broker.timers) == 2
    assert broker.next_expiry() == 10.0
    broker.expire(9.99)
    assert calls == []
    broker.expire(25.0)
    assert calls == ["a", "b"]
    first.cancel()  # (fired already: nothing)
    assert broker.next_expiry() is None and len(broker.timers) == 0


def test_cancelled_timers_do_not_pile_up() -> None:
    broker = Broker()
    kept = broker.call_at(1e9, lambda: None)
    for i in range(5000):
        broker.call_at(100.0 + i, lambda: None).cancel()
    assert len(broker.timers) == 1
    assert broker.next_expiry() == 1e9
    kept.cancel()
    assert broker.next_expiry() is None
