"""Stream nodes of the core broker (amqp_sansio/broker/_streams.py): offsets, reading by
offset through the source's filter, settlement taken and ignored, the bounds in the attach
answer, retention; through the byte interface with our engine as the clients
(tests/support/broker_net.py)."""

from __future__ import annotations

from typing import Any

import pytest
from support.broker_net import Client, Net, body

import amqp_sansio as a
import amqp_sansio.codec.amqp10
from amqp_sansio.broker import (
    FIRST_OFFSET,
    NEXT_OFFSET,
    OFFSET_ANNOTATION,
    OFFSET_FILTER,
    RABBITMQ_OFFSET_FILTER,
    STREAM_CAPABILITY,
    BrokerConfig,
    Queue,
    Stream,
)

SYM = a.Symbol


def publish(client: Client, address: str, *values: bytes, **kwargs: Any) -> a.Sender:
    sender = client.sender(address, **kwargs)
    for v in values:
        d = client.send(sender, a.Message(body=v))
        assert isinstance(d.remote_state, a.Accepted)
    return sender


def reader(client: Client, address: str, start: Any = None, credit: int = 100, **kw: Any) -> Any:
    filters = None if start is None else {OFFSET_FILTER: start}
    source = a.Source(address=address, filter=filters)
    return client.receiver(address, credit, source=source, **kw)


def offsets(client: Client, link: a.Link, *, settle: bool = True) -> list[tuple[int, Any]]:
    got = client.received(link)
    if settle:
        for e in got:
            if not e.delivery.settled:
                link.settle(e.delivery, a.Accepted())  # type: ignore[attr-defined]
        client.net.pump()
    out = []
    for e in got:
        annotations = a.Message.decode(e.data).message_annotations or {}
        out.append((annotations[OFFSET_ANNOTATION], body(e)))
    return out


def test_offsets_reading_keeps_and_each_consumer_has_its_position() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    publish(p, "stream/s", *(b"%d" % i for i in range(5)))
    node = net.broker.nodes["stream/s"]
    assert isinstance(node, Stream) and node.kind == "stream"
    r1 = reader(c1, "stream/s", SYM("first"))
    r2 = reader(c2, "stream/s", 2)
    assert offsets(c1, r1) == [(i, b"%d" % i) for i in range(5)]
    assert offsets(c2, r2) == [(2, b"2"), (3, b"3"), (4, b"4")]
    # Accepting took nothing: a third reader sees them all, and so does the node.
    assert node.depth == 5 and (node.first, node.end) == (0, 5)
    c3 = net.connect()
    assert [o for o, _ in offsets(c3, reader(c3, "stream/s", 0))] == [0, 1, 2, 3, 4]
    # New messages reach every consumer at its position (tailing).
    publish(p, "stream/s", b"5")
    assert offsets(c1, r1) == [(5, b"5")] and offsets(c2, r2) == [(5, b"5")]


def test_attach_answer_gives_bounds_filter_and_capability() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "stream/b", b"a", b"b", b"c")
    r = reader(c, "stream/b", SYM("last"))
    assert r.remote is not None and r.remote.source is not None
    assert r.remote.properties == {FIRST_OFFSET: 0, NEXT_OFFSET: 3}
    assert r.remote.source.filter == {OFFSET_FILTER: SYM("last")}
    assert r.remote.source.distribution_mode == SYM("copy")
    assert STREAM_CAPABILITY in r.remote.source.capabilities
    assert offsets(c, r) == [(2, b"c")]
    # No filter: what comes next, and none is echoed.
    plain = c.receiver("stream/b", 10)
    assert plain.remote is not None and plain.remote.source is not None
    assert plain.remote.source.filter is None
    assert offsets(c, plain) == []
    # Only filters of other kinds: none applied, what comes next.
    other = a.Source(address="stream/b", filter={SYM("other:filter"): "x"})
    unfiltered = c.receiver("stream/b", 10, source=other)
    assert unfiltered.remote is not None and unfiltered.remote.source is not None
    assert unfiltered.remote.source.filter is None
    publish(p, "stream/b", b"d")
    assert offsets(c, plain) == [(3, b"d")] == offsets(c, unfiltered)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        (OFFSET_FILTER, a.codec.amqp10.ULong(1), [1, 2]),
        (OFFSET_FILTER, "first", [0, 1, 2]),
        (OFFSET_FILTER, SYM("next"), []),
        (OFFSET_FILTER, a.Described(OFFSET_FILTER, 2), [2]),
        (RABBITMQ_OFFSET_FILTER, "last", [2]),
        (RABBITMQ_OFFSET_FILTER, a.Described(RABBITMQ_OFFSET_FILTER, 0), [0, 1, 2]),
        (OFFSET_FILTER, 99, []),
    ],
)
def test_offset_filter_forms(key: Any, value: Any, expected: list[int]) -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "stream/f", b"0", b"1", b"2")
    source = a.Source(address="stream/f", filter={key: value, SYM("other:filter"): "x"})
    r = c.receiver("stream/f", 10, source=source)
    assert r.state is a.LinkState.ATTACHED
    assert r.remote is not None and r.remote.source is not None
    assert r.remote.source.filter == {key: value}  # the other filter was not applied
    assert [o for o, _ in offsets(c, r)] == expected


@pytest.mark.parametrize(
    "value",
    [
        -1,
        a.codec.amqp10.ULong(2**63),
        True,
        "middle",
        1.5,
        a.Described(SYM("x:y"), 0),
        None,
        a.codec.amqp10.Timestamp(5),  # a time (RabbitMQ's form), not an offset
    ],
)
def test_bad_offset_filter_refuses_the_link(value: Any) -> None:
    net = Net()
    c = net.connect()
    r = c.receiver(
        "stream/bad", 5, source=a.Source(address="stream/bad", filter={OFFSET_FILTER: value})
    )
    detached = c.of(a.events.LinkDetached)
    assert r.state is not a.LinkState.ATTACHED
    assert detached and detached[-1].error.condition == SYM("amqp:invalid-field")
    # The connection goes on.
    assert reader(c, "stream/bad", 0).state is a.LinkState.ATTACHED


def test_settlement_is_taken_and_ignored_in_every_mode() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "stream/m", b"0", b"1", b"2")
    r = reader(c, "stream/m", 0)
    got = c.received(r)
    r.settle(got[0].delivery, a.Rejected())
    r.settle(got[1].delivery, a.Released())
    r.settle(got[2].delivery, a.Modified(delivery_failed=True))
    net.pump()
    assert net.broker.nodes["stream/m"].depth == 3
    # At-most-once: the broker sends settled.
    settled = reader(c, "stream/m", 0, snd_settle_mode=a.SenderSettleMode.SETTLED)
    events = c.received(settled)
    assert len(events) == 3 and all(e.delivery.remote_settled for e in events)
    # A consumer that goes with deliveries unsettled takes nothing either.
    r2 = reader(c, "stream/m", 0)
    assert len(c.received(r2)) == 3
    r2.detach()
    net.pump()
    assert net.broker.nodes["stream/m"].depth == 3
    assert len(offsets(c, reader(c, "stream/m", "first"))) == 3


def test_credit_and_drain() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "stream/c", *(b"%d" % i for i in range(5)))
    r = reader(c, "stream/c", 0, credit=2)
    assert [o for o, _ in offsets(c, r)] == [0, 1]
    r.flow(2)
    net.pump()
    assert [o for o, _ in offsets(c, r)] == [2, 3]
    r.flow(5, drain=True)
    net.pump()
    assert [o for o, _ in offsets(c, r)] == [4]
    assert r.link_credit == 0  # the rest was given back


def test_retention_by_length_drops_the_oldest_and_a_late_reader_sees_the_gap() -> None:
    net = Net(BrokerConfig(stream_max_length=3))
    p, c = net.connect(), net.connect()
    publish(p, "stream/r", *(b"%d" % i for i in range(5)))
    node = net.broker.nodes["stream/r"]
    assert isinstance(node, Stream)
    assert (node.first, node.end, node.depth) == (2, 5, 3)
    r = reader(c, "stream/r", 0)
    assert r.remote is not None and r.remote.properties == {FIRST_OFFSET: 2, NEXT_OFFSET: 5}
    assert [o for o, _ in offsets(c, r)] == [2, 3, 4]
    # A consumer left behind by retention while it had no credit jumps to the first held.
    slow = reader(c, "stream/r", 2, credit=1)
    assert [o for o, _ in offsets(c, slow)] == [2]
    publish(p, "stream/r", b"5", b"6", b"7")
    slow.flow(10)
    net.pump()
    assert [o for o, _ in offsets(c, slow)] == [5, 6, 7]


def test_retention_by_bytes_keeps_the_newest() -> None:
    net = Net(BrokerConfig(stream_max_bytes=1))
    p = net.connect()
    publish(p, "stream/big", b"x" * 100, b"y" * 100)
    node = net.broker.nodes["stream/big"]
    assert isinstance(node, Stream)
    assert (node.first, node.end) == (1, 2) and node.bytes > 100


def test_long_stream_with_retention_compacts_and_keeps_offsets() -> None:
    net = Net(BrokerConfig(stream_max_length=10))
    p, c = net.connect(), net.connect()
    s = p.sender("stream/long")
    for i in range(3000):
        s.send(a.Message(body=b"%d" % i).encode())
        if i % 200 == 0:
            net.pump()
    net.pump()
    node = net.broker.nodes["stream/long"]
    assert isinstance(node, Stream)
    assert (node.first, node.end) == (2990, 3000)
    assert len(node._log) < 1100  # compacted as retention dropped the head
    got = offsets(c, reader(c, "stream/long", 2995))
    assert got == [(i, b"%d" % i) for i in range(2995, 3000)]


def test_how_a_node_becomes_a_stream() -> None:
    net = Net(BrokerConfig(streams=["events"], stream_prefix=None))
    p, c = net.connect(), net.connect()
    assert isinstance(net.broker.nodes["events"], Stream)
    # The capability on an attach that creates the node.
    target = a.Target(address="orders", capabilities=(STREAM_CAPABILITY,))
    publish(p, "orders", b"o", target=target)
    assert isinstance(net.broker.nodes["orders"], Stream)
    r = c.receiver("orders", 5, source=a.Source(address="orders", filter={OFFSET_FILTER: 0}))
    assert offsets(c, r) == [(0, b"o")]
    # Without either, a queue; asking a queue for the capability is refused.
    publish(p, "stream/not-a-prefix-here", b"q")
    assert isinstance(net.broker.nodes["stream/not-a-prefix-here"], Queue)
    source = a.Source(address="stream/not-a-prefix-here", capabilities=(STREAM_CAPABILITY,))
    refused = c.receiver("stream/not-a-prefix-here", 5, source=source)
    assert refused.state is not a.LinkState.ATTACHED
    assert c.of(a.events.LinkDetached)[-1].error.condition == SYM("amqp:precondition-failed")


def test_dead_letters_to_a_stream_and_deletion_detaches_its_consumers() -> None:
    net = Net(BrokerConfig(dead_letter="stream/dlq"))
    p, c = net.connect(), net.connect()
    publish(p, "q", b"bad")
    r = c.receiver("q", 1)
    (event,) = c.received(r)
    r.settle(event.delivery, a.Rejected())
    net.pump()
    node = net.broker.nodes["stream/dlq"]
    assert isinstance(node, Stream) and net.broker.dead_lettered == 1
    dlq = reader(c, "stream/dlq", 0)
    assert offsets(c, dlq) == [(0, b"bad")]
    net.broker.delete_node(node)
    net.pump()
    assert dlq.state is not a.LinkState.ATTACHED
    assert c.of(a.events.LinkDetached)[-1].error.condition == SYM("amqp:resource-deleted")
    assert node.depth == 0 and node.first == node.end == 1
    assert "stream/dlq" not in net.broker.nodes


def test_a_message_too_large_for_a_reader_detaches_it_alone() -> None:
    """Core spec 2.7.3: the reader too small for the message at offset 0 is detached with
    amqp:link:message-size-exceeded (issue 27); another reads on."""
    net = Net()
    p, small, big = net.connect(), net.connect(), net.connect()
    publish(p, "stream/size", b"x" * 2000, b"y")
    r_small = reader(small, "stream/size", 0, max_message_size=1000)
    r_big = reader(big, "stream/size", 0)
    assert offsets(small, r_small) == []
    (detached,) = small.of(a.events.LinkDetached)
    assert detached.error.condition == SYM("amqp:link:message-size-exceeded")
    assert [o for o, _ in offsets(big, r_big)] == [0, 1]


def test_position() -> None:
    net = Net(BrokerConfig(stream_max_length=2))
    node = net.broker.declare("s", stream=True)
    assert isinstance(node, Stream)
    assert [node.position(s) for s in ("first", "last", "next", 0, 7)] == [0, 0, 0, 0, 7]
    p = net.connect()
    publish(p, "s", b"0", b"1", b"2")
    assert [node.position(s) for s in ("first", "last", "next", 0, 7)] == [1, 2, 3, 1, 7]
