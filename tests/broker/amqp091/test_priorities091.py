"""Priorities of the broker's queues where AMQP 0-9-1 and 1.0 meet (docs/amqp091.rst,
"Priorities"), on the broker core and a simulated clock: a 0-9-1 queue orders by
RabbitMQ's rules (``x-max-priority`` N levels, a message's priority as a 0-9-1 consumer
sees it, 0 without one; strictly FIFO without the argument), a queue made by 1.0 by 1.0's
(core spec 3.2.1: 0 to 9, 4 without one), whichever protocol published. The same pika
program against RabbitMQ and ours is in test_rabbitmq_parity091.py."""

from __future__ import annotations

from typing import Any

import pytest
from support.amqp091.broker_net import Client as Client091
from support.broker_net import Net, accept_all, msg

import amqp_sansio as a
from amqp_sansio.broker import Broker
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import events as ev


def _get_all(client: Client091, ch: int, queue: str, *, ack: bool = True) -> list[Any]:
    """basic.get until the queue is empty: (body, priority) of each."""
    got = []
    while True:
        events = client.call(ch, spec.BasicGet(queue=queue, no_ack=ack))
        contents = [e for e in events if isinstance(e, ev.ContentReceived)]
        if not contents:
            return got
        got.append((contents[0].body, contents[0].properties.priority))


def _publish(client: Client091, ch: int, queue: str, *priorities: int | None) -> None:
    for priority in priorities:
        client.engine.publish(
            ch, "", queue, b"p%s" % str(priority).encode(), spec.BasicProperties(priority=priority)
        )
    client.pump()


def test_x_max_priority_counts_levels_and_a_missing_priority_as_0() -> None:
    client = Client091(Broker())
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="pq", arguments={"x-max-priority": 3}))
    _publish(client, ch, "pq", None, 9, 2, 3, 0, 200, None, 1)
    assert [body for body, _ in _get_all(client, ch, "pq")] == [
        b"p9",  # 9, 3 and 200 count as 3: in arrival order
        b"p3",
        b"p200",
        b"p2",
        b"p1",
        b"pNone",  # no priority and 0 are the same: arrival order
        b"p0",
        b"pNone",
    ]


@pytest.mark.parametrize("arguments", [{}, {"x-max-priority": 0}])
def test_a_0_9_1_queue_without_priorities_is_fifo(arguments: dict[str, Any]) -> None:
    client = Client091(Broker())
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="fifo", arguments=arguments))
    _publish(client, ch, "fifo", None, 9, 0, 5, 255)
    got = _get_all(client, ch, "fifo")
    assert got == [(b"pNone", None), (b"p9", 9), (b"p0", 0), (b"p5", 5), (b"p255", 255)]


def test_x_max_priority_over_255_is_refused_406() -> None:
    client = Client091(Broker())
    ch = client.channel()
    events = client.call(ch, spec.QueueDeclare(queue="q", arguments={"x-max-priority": 256}))
    assert [e.reply_code for e in events if isinstance(e, ev.ChannelClosed)] == [406]
    ch = client.channel()
    events = client.call(ch, spec.QueueDeclare(queue="q", arguments={"x-max-priority": 255}))
    assert [type(e) for e in events if isinstance(e, ev.ChannelClosed)] == []


def test_a_requeued_message_goes_back_to_the_head_of_its_level() -> None:
    client = Client091(Broker())
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="rq", arguments={"x-max-priority": 2}))
    _publish(client, ch, "rq", None, 7, 2)
    events = client.call(ch, spec.BasicGet(queue="rq"))
    (first,) = [e for e in events if isinstance(e, ev.ContentReceived)]
    assert first.body == b"p7"
    client.call(ch, spec.BasicReject(delivery_tag=first.method.delivery_tag, requeue=True))
    assert [body for body, _ in _get_all(client, ch, "rq")] == [b"p7", b"p2", b"pNone"]


def test_a_1_0_message_on_an_x_max_priority_queue_counts_its_header_priority() -> None:
    """The 1.0 header's priority where the publisher wrote one (capped at N), else 0: the
    priority a 0-9-1 consumer of it sees."""
    net = Net()
    client = Client091(net.broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="mixed", arguments={"x-max-priority": 5}))
    amqp10 = net.connect()
    sender = amqp10.sender("mixed")
    for body, header in [
        (b"none", None),
        (b"seven", a.Header(priority=7)),
        (b"two", a.Header(priority=2)),
        (b"four", a.Header(priority=4)),
        (b"five", a.Header(priority=5)),
    ]:
        amqp10.send(sender, a.Message(header=header, body=a.Data(body)))
    assert [e for e in amqp10.of(a.events.LinkDetached)] == []
    got = _get_all(client, ch, "mixed")
    # In the order of the priority the 0-9-1 consumer sees, capped, arrival among equals:
    # a header's priority of 4, the 1.0 default, may be left off the wire (as our encoder
    # does), and then it is none.
    assert got == sorted(got, key=lambda g: -min(g[1] or 0, 5))
    assert [body for body, _ in got if body != b"four"] == [b"seven", b"five", b"two", b"none"]


def test_a_0_9_1_publish_to_a_queue_made_by_1_0_orders_as_1_0() -> None:
    """A queue a 1.0 link made keeps 1.0's ten levels: a 0-9-1 message without a priority
    counts as 4 (its 1.0 form has none: core spec 3.2.1's default), one above 9 as 9."""
    net = Net()
    amqp10 = net.connect()
    sender = amqp10.sender("made-by-1-0")  # (holds the queue: it is auto-deleted empty)
    client = Client091(net.broker)
    ch = client.channel()
    _publish(client, ch, "made-by-1-0", 3, None, 200, 9, 5)
    receiver = amqp10.receiver("made-by-1-0", credit=10)
    assert accept_all(amqp10, receiver) == [b"p200", b"p9", b"p5", b"pNone", b"p3"]
    assert not amqp10.of(a.events.LinkDetached) and sender.handle is not None


def test_a_1_0_queue_a_0_9_1_declare_adopts_orders_by_0_9_1_from_then() -> None:
    """What waits is filed again: FIFO without x-max-priority, by its levels with it."""
    net = Net()
    amqp10 = net.connect()
    for name in ("adopt-fifo", "adopt-levels"):
        sender = amqp10.sender(name)
        for priority in (0, 9, None, 3):
            header = {} if priority is None else {"priority": priority}
            amqp10.send(sender, msg(b"%s" % str(priority).encode(), **header))
    client = Client091(net.broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="adopt-fifo"))
    assert [body for body, _ in _get_all(client, ch, "adopt-fifo")] == [b"0", b"9", b"None", b"3"]
    client.call(ch, spec.QueueDeclare(queue="adopt-levels", arguments={"x-max-priority": 2}))
    got = [body for body, _ in _get_all(client, ch, "adopt-levels")]
    assert got == [b"9", b"3", b"0", b"None"]
