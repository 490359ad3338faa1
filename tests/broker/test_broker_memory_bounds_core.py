"""The core broker's memory bounds on streams and 1.0 credit (amqp_sansio/broker/_streams.py,
_endpoints.py, _connection.py), on a simulated clock, through the byte interface with our
engine as the clients (tests/support/broker_net.py): age retention on the broker's timer with
the defaults, a stream's bytes in the resource alarm, credit sized in bytes, and what one
connection may put in while the alarm is on. The real process: test_broker_memory_bounds.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.amqp091.broker_net import Client
from support.broker_net import Net

import amqp_sansio as a
from amqp_sansio.broker import OFFSET_FILTER, Broker, BrokerConfig, Stream
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import events as ev

DAY = 86400.0


def stream(net: Net, address: str) -> Stream:
    node = net.broker.nodes[address]
    assert isinstance(node, Stream)
    return node


def test_age_retention_runs_on_the_broker_timer_with_the_defaults() -> None:
    """A stream keeps a message a day by default: the oldest go when their day is over,
    without any message arriving, at the time :meth:`Broker.next_expiry` says."""
    net = Net()
    p = net.connect()
    s = p.sender("stream/aged")
    start = net.wall
    for i in range(3):
        p.send(s, a.Message(body=b"old %d" % i))
    net.live(3600, step=20)  # (the clients heartbeat, so the idle time-out cuts none)
    for i in range(2):
        p.send(s, a.Message(body=b"new %d" % i))
    node = stream(net, "stream/aged")
    assert (node.first, node.end) == (0, 5)
    assert net.broker.next_expiry() == start + DAY
    net.live(DAY - 3600 + 1, step=20)  # a day and a second after the first three
    assert (node.first, node.end) == (3, 5)
    assert net.broker.held_bytes == node.bytes
    assert net.broker.next_expiry() == start + 3600 + DAY
    net.live(3600, step=20)  # the newest is kept, whatever its age
    assert (node.first, node.end) == (4, 5)
    assert net.broker.next_expiry() is None


def test_a_streams_bytes_raise_the_alarm_and_its_retention_clears_it() -> None:
    net = Net(BrokerConfig(memory_high_watermark=1000, stream_max_age=10))
    p = net.connect()
    s = p.sender("stream/full")
    for _ in range(3):
        p.send(s, a.Message(body=b"x" * 400))
    node = stream(net, "stream/full")
    assert net.broker.alarm and net.broker.held_bytes == node.bytes > 1000
    # Read and accepted: still held (nothing leaves a stream but by retention).
    c = net.connect()
    source = a.Source(address="stream/full", filter={OFFSET_FILTER: a.Symbol("first")})
    r = c.receiver("stream/full", 10, source=source)
    got = c.received(r)
    assert len(got) == 3
    for e in got:
        r.settle(e.delivery, a.Accepted())
    net.pump()
    assert net.broker.alarm and net.broker.held_bytes == node.bytes > 1000
    net.advance(11)  # age retention: the newest alone stays
    assert node.depth == 1 and net.broker.held_bytes == node.bytes < 900
    assert not net.broker.alarm
    net.broker.delete_node(node)
    assert net.broker.held_bytes == 0


def test_a_larger_message_lowers_a_publishers_credit_at_once() -> None:
    """Credit times the largest message stays within ``link_credit_bytes`` (4 MiB) and the
    link's share of ``connection_credit_bytes`` (16 MiB)."""
    net = Net()
    p = net.connect()
    s = p.sender("big")
    assert s.link_credit == 1000
    big = a.Message(body=b"b" * (1024 * 1024))
    p.send(s, big)
    size = len(big.encode())
    assert s.link_credit == (4 * 1024 * 1024) // size == 3  # 3 of a bit over 1 MiB
    s.send(a.Message(body=b"small").encode())
    net.pump()
    assert s.link_credit == 2  # topped up only once half is used
    s.send(a.Message(body=b"small").encode())
    net.pump()
    assert s.link_credit == 3
    # Eight publishers on one connection: a 2 MiB share each of 16 MiB.
    links = [p.sender(f"share-{i}") for i in range(7)]
    medium = a.Message(body=b"m" * (512 * 1024))
    p.send(links[0], medium)
    assert links[0].link_credit == (2 * 1024 * 1024) // len(medium.encode()) == 3


def test_while_the_alarm_is_on_a_connection_puts_in_at_most_its_budget() -> None:
    """A publisher that ignores the lowered credit (it sends what it was granted before
    the alarm) has its messages beyond ``connection_credit_bytes`` rejected."""
    budget = 8 * 4096
    net = Net(BrokerConfig(memory_high_watermark=1, connection_credit_bytes=budget))
    p = net.connect()
    s = p.sender("q")
    assert s.link_credit == 8  # of 4 KiB, before the first message
    sent = [s.send(a.Message(body=b"z" * 10_000).encode()) for _ in range(8)]
    net.pump()
    outcomes = [d.remote_state for d in sent]
    accepted = [o for o in outcomes if isinstance(o, a.Accepted)]
    rejected = [o for o in outcomes if isinstance(o, a.Rejected)]
    assert len(accepted) == 4 and len(rejected) == 4  # one over the mark, three in budget
    assert all(
        o.error is not None and str(o.error.condition) == "amqp:resource-limit-exceeded"
        for o in rejected
    )
    node = net.broker.nodes["q"]
    assert net.broker.held_bytes == node.bytes <= 1 + 10_100 + budget
    assert s.link_credit == 0  # none granted while the alarm is on


def test_a_091_streams_x_max_age_runs_on_the_timer_and_its_bytes_raise_the_alarm() -> None:
    """A stream declared over 0-9-1 with ``x-max-age`` ``10s``: its oldest messages go ten
    seconds on, by the broker's timer; its bytes are in the alarm's count, and its
    publisher is blocked (``connection.blocked``) once they pass the mark."""
    broker = Broker(BrokerConfig(memory_high_watermark=600))
    client = Client(broker, client_properties={"capabilities": {"connection.blocked": True}})
    ch = client.channel()
    arguments: dict[str, Any] = {"x-queue-type": "stream", "x-max-age": "10s"}
    client.call(ch, spec.QueueDeclare(queue="aged", durable=True, arguments=arguments))
    start = client.wall
    for i in range(3):
        client.engine.publish(ch, "", "aged", b"old %d" % i)
    client.pump()
    client.wall = start + 5
    client.engine.publish(ch, "", "aged", b"x" * 500)
    client.pump()
    node = broker.vhosts["/"].stream("aged")
    assert node is not None and (node.first, node.end) == (0, 4)
    assert broker.alarm and broker.held_bytes == node.bytes > 600
    assert [e.reason for e in client.of(ev.Blocked)] == ["low on memory"]
    client.engine.publish(ch, "", "aged", b"during")  # read: then the broker stops reading
    client.pump()
    assert not client.conn.reading and node.end == 5
    assert broker.next_expiry() == start + 10
    broker.expire(start + 11)
    assert (node.first, node.end) == (3, 5) and broker.held_bytes == node.bytes
    assert broker.next_expiry() == start + 15
    broker.expire(start + 16)
    assert (node.first, node.end) == (4, 5)
    # Retention made room: below the low mark, the publisher is unblocked and read again.
    assert not broker.alarm and client.conn.reading
    client.pump()
    assert len(client.of(ev.Unblocked)) == 1
    assert broker.next_expiry() is None  # (the newest is kept)


@pytest.mark.parametrize(
    "option",
    [
        {"stream_max_bytes": 0},
        {"stream_max_age": 0},
        {"link_credit_bytes": -1},
        {"connection_credit_bytes": 0},
    ],
)
def test_the_bounds_refuse_values_out_of_range(option: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(option))):
        BrokerConfig(**option)  # type: ignore[arg-type]
