"""The broker's message and queue limits (issue 16, part A; docs/broker.rst "Limits"), in
the core: our engine as the clients, wired in memory on a simulated clock
(tests/support/broker_net.py). Each limit is hit and answered as documented while a
well-behaved client goes on. The same limits against ``amqp-sansio broker`` as a user starts
it: tests/broker/test_broker_limits_queues.py."""

from __future__ import annotations

import time

import attrs
import pytest
from support.broker_net import Client, Net, accept_all, msg, publish

import amqp_sansio as a
import amqp_sansio.codec.amqp10
from amqp_sansio.broker import Broker, BrokerConfig, Queue, Topic
from amqp_sansio.definitions.amqp10 import messaging

MiB = 1024 * 1024


def _works(net: Net, address: str = "good") -> None:
    """A well-behaved client sends a message and takes it back: the broker goes on."""
    client = net.connect()
    publish(client, address, b"fine")
    receiver = client.receiver(address, 5)
    assert accept_all(client, receiver) == [b"fine"]
    client.engine.close()
    net.pump()


def _detached(client: Client) -> str:
    (event,) = client.of(a.events.LinkDetached)
    assert event.error is not None
    return str(event.error.condition)


def test_the_defaults_are_the_documented_ones() -> None:
    config = BrokerConfig()
    assert config.max_message_size == 16 * MiB
    assert (config.max_queue_depth, config.max_queue_bytes) == (1_000_000, 256 * MiB)
    assert config.queue_overflow == "reject-publish" and config.dead_letter is None
    assert config.auto_delete and config.queue_expiry == 3600
    assert config.max_address_length == 1024
    assert config.max_unsettled_per_link == 100_000
    with pytest.raises(ValueError, match="queue_overflow"):
        BrokerConfig(queue_overflow="drop-tail")
    net = Net()  # the default broker offers its maximum to publishers (core spec 2.7.3)
    client = net.connect()
    sender = client.sender("q")
    relay = client.sender(None)
    for link in (sender, relay):
        assert link.remote is not None and link.remote.max_message_size == 16 * MiB


# -- message size ------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 997])
def test_a_message_over_the_maximum_detaches_its_link(chunk: int | None) -> None:
    net = Net(BrokerConfig(max_message_size=10_000), chunk=chunk)
    hostile = net.connect()
    sender = hostile.sender("q")
    assert sender.remote is not None and sender.remote.max_message_size == 10_000
    # A hostile client ignores the maximum the broker announced (ours keeps to it).
    sender.remote = attrs.evolve(sender.remote, max_message_size=None)
    sender.send(msg(b"x" * 200_000).encode())
    net.pump()
    assert _detached(hostile) == "amqp:link:message-size-exceeded"
    assert "q" not in net.broker.nodes or net.broker.nodes["q"].depth == 0
    # The connection and the broker go on; a message at the maximum is taken.
    good = net.connect()
    sender = good.sender("q")
    data = msg(b"y" * 9_000).encode()
    assert len(data) <= 10_000
    delivery = good.send(sender, data)
    assert isinstance(delivery.remote_state, a.Accepted)
    assert hostile.engine.state is a.ConnectionState.OPENED
    _works(net)


# -- queue depth and bytes, overflow -------------------------------------------------------------


def test_reject_publish_answers_rejected_with_resource_limit_exceeded() -> None:
    net = Net(BrokerConfig(max_queue_depth=3))
    p, c = net.connect(), net.connect()
    sender = p.sender("q")
    outcomes = [p.send(sender, msg(b"%d" % i)).remote_state for i in range(4)]
    assert [type(o) for o in outcomes] == [a.Accepted] * 3 + [a.Rejected]
    assert outcomes[3].error.condition == "amqp:resource-limit-exceeded"  # type: ignore[union-attr]
    assert net.broker.nodes["q"].depth == 3
    _works(net)  # other queues go on
    receiver = c.receiver("q", 1)
    assert accept_all(c, receiver) == [b"0"]  # room again: the next is taken
    assert isinstance(p.send(sender, msg(b"4")).remote_state, a.Accepted)


def test_the_bytes_limit_counts_encoded_messages() -> None:
    one = len(msg(b"x" * 1000).encode())
    net = Net(BrokerConfig(max_queue_bytes=3 * one))
    p = net.connect()
    sender = p.sender("q")
    outcomes = [type(p.send(sender, msg(b"x" * 1000)).remote_state) for _ in range(4)]
    assert outcomes == [a.Accepted] * 3 + [a.Rejected]
    assert net.broker.nodes["q"].bytes == 3 * one  # type: ignore[attr-defined]


def test_drop_head_dead_letters_the_oldest_and_takes_the_new() -> None:
    net = Net(BrokerConfig(max_queue_depth=3, queue_overflow="drop-head", dead_letter="dlq"))
    p, c = net.connect(), net.connect()
    sender = p.sender("q")
    # The oldest goes first, whatever its priority: "1" (priority 9) goes before "2".
    outcomes = [
        p.send(sender, msg(b"%d" % i, priority=9 if i == 1 else 4)).remote_state for i in range(5)
    ]
    assert all(isinstance(o, a.Accepted) for o in outcomes)
    assert net.broker.overflowed == 2 and net.broker.dead_lettered == 2
    assert accept_all(c, c.receiver("q", 10)) == [b"2", b"3", b"4"]
    assert accept_all(c, c.receiver("dlq", 10)) == [b"1", b"0"]  # (priority there too)


def test_drop_head_without_a_dead_letter_queue_drops() -> None:
    net = Net(BrokerConfig(max_queue_depth=2, queue_overflow="drop-head"))
    p, c = net.connect(), net.connect()
    publish(p, "q", b"a", b"b", b"c")
    assert net.broker.overflowed == 1 and net.broker.dead_lettered == 0
    assert accept_all(c, c.receiver("q", 10)) == [b"b", b"c"]


def test_drop_head_rejects_what_could_never_fit_and_when_all_are_out() -> None:
    one = len(msg(b"x" * 100).encode())
    config = BrokerConfig(max_queue_bytes=2 * one, max_queue_depth=2, queue_overflow="drop-head")
    net = Net(config)
    p, c = net.connect(), net.connect()
    sender = p.sender("q")
    assert isinstance(p.send(sender, msg(b"x" * 100)).remote_state, a.Accepted)
    big = p.send(sender, msg(b"x" * (3 * one))).remote_state
    assert isinstance(big, a.Rejected)  # larger than the queue by itself: nothing dropped
    assert big.error.condition == "amqp:resource-limit-exceeded"  # type: ignore[union-attr]
    assert net.broker.nodes["q"].depth == 1 and net.broker.overflowed == 0
    p.send(sender, msg(b"y" * 100))
    receiver = c.receiver("q", 10)
    assert len(c.received(receiver)) == 2  # both out with the consumer, unsettled
    full = p.send(sender, msg(b"z" * 100)).remote_state
    assert isinstance(full, a.Rejected)  # nothing waits to be dropped


def test_drop_head_on_the_dead_letter_queue_itself_drops() -> None:
    config = BrokerConfig(max_queue_depth=1, queue_overflow="drop-head", dead_letter="dlq")
    net = Net(config)
    p, c = net.connect(), net.connect()
    publish(p, "dlq", b"a", b"b")
    assert net.broker.overflowed == 1 and net.broker.dead_lettered == 0
    assert accept_all(c, c.receiver("dlq", 10)) == [b"b"]


# -- queues made on first use ------------------------------------------------------------------


def test_two_thousand_throw_away_addresses_leave_no_queue() -> None:
    net = Net()
    client = net.connect()
    for i in range(1000):  # links that detach
        link = client.receiver(f"gone-r-{i}", 1) if i % 2 else client.sender(f"gone-s-{i}")
        link.detach()
    net.pump()
    assert net.broker.nodes == {}
    for i in range(1000):  # links that go with their connection
        if i % 100 == 0:
            client.engine.close()
            net.pump()
            client = net.connect()
        client.receiver(f"left-{i}", 1) if i % 2 else client.sender(f"left-{i}")
    assert len(net.broker.nodes) == 100
    client.engine.close()
    net.pump()
    assert net.broker.nodes == {}
    _works(net)
    assert net.broker.nodes == {}


def test_a_queue_with_messages_stays_until_emptied_and_unlinked() -> None:
    net = Net()
    p = net.connect()
    sender = publish(p, "q", b"a", b"b")
    sender.detach()
    net.pump()
    queue = net.broker.nodes["q"]
    assert queue.depth == 2 and not queue.links  # kept for its consumer
    c = net.connect()
    receiver = c.receiver("q", 1)
    assert accept_all(c, receiver) == [b"a"]
    receiver.detach()
    net.pump()
    assert net.broker.nodes["q"] is queue  # one message left
    receiver = c.receiver("q", 5)
    got = c.received(receiver)
    assert len(got) == 1 and "q" in net.broker.nodes  # out, unsettled, still linked
    receiver.settle(got[0].delivery, a.Accepted())
    net.pump()
    assert net.broker.nodes["q"] is queue  # empty, but linked
    receiver.detach()
    net.pump()
    assert "q" not in net.broker.nodes and queue.deleted
    # Emptied with no link left (the last message taken by a pre-settled... expiring): gone.
    publish(p, "e", b"short", ttl=1000).detach()
    net.pump()
    assert net.broker.nodes["e"].depth == 1
    net.advance(2)
    assert "e" not in net.broker.nodes


def test_kept_nodes_are_not_deleted() -> None:
    config = BrokerConfig(queues={"fixed"}, dead_letter="dlq")
    net = Net(config)
    client = net.connect()
    for address in ("fixed", "dlq", "stream/s"):
        client.receiver(address, 1).detach()
    dynamic = client.receiver(None, 1, source=a.Source(dynamic=True))
    net.pump()
    assert set(net.broker.nodes) >= {"fixed", "dlq", "stream/s"}
    assert dynamic.remote is not None and dynamic.remote.source.address in net.broker.nodes  # type: ignore[union-attr]
    net2 = Net(BrokerConfig(auto_delete=False))
    other = net2.connect()
    other.receiver("kept", 1).detach()
    net2.pump()
    assert isinstance(net2.broker.nodes["kept"], Queue)


def test_a_topic_goes_with_its_last_link_and_kept_subscription() -> None:
    net = Net()
    client = net.connect()
    client.receiver("topic/plain", 1).detach()
    net.pump()
    assert "topic/plain" not in net.broker.nodes
    # A durable subscription kept past its link keeps its topic until it expires.
    source = a.Source(
        address="topic/kept",
        durable=messaging.TerminusDurability.CONFIGURATION,
        expiry_policy=messaging.TerminusExpiryPolicy.LINK_DETACH,
        timeout=60,
    )
    sub = client.receiver("topic/kept", 1, source=source)
    sub.detach(closed=False)
    net.pump()
    assert isinstance(net.broker.nodes["topic/kept"], Topic)
    net.advance(61)
    assert "topic/kept" not in net.broker.nodes and not net.broker.subscriptions


def test_queue_expiry_deletes_an_unlinked_queue_with_its_messages() -> None:
    net = Net(BrokerConfig(queue_expiry=60))
    p = net.connect()
    publish(p, "q", b"a").detach()
    net.pump()
    start = net.wall
    assert net.broker.next_expiry() == start + 60
    net.advance(30)
    c = net.connect()
    c.receiver("q").detach()  # a link stops the clock, its going starts it again
    net.pump()
    net.advance(59)
    assert net.broker.nodes["q"].depth == 1
    net.advance(2)
    assert "q" not in net.broker.nodes
    assert net.broker.next_expiry() is None
    _works(net)


def test_a_transaction_posting_to_a_queue_deleted_since_makes_it_again() -> None:
    net = Net()
    client = net.connect()
    session = client.begin()
    ctl = session.attach_controller("ctl")
    net.pump()
    txn = ctl.declare()
    net.pump()
    sender = client.sender("q")
    sender.send(msg(b"held").encode(), transaction=txn)
    net.pump()
    sender.detach()
    net.pump()
    assert "q" not in net.broker.nodes  # nothing in it yet: deleted
    ctl.discharge(txn, fail=False)
    net.pump()
    c = net.connect()
    assert accept_all(c, c.receiver("q", 5)) == [b"held"]


def test_the_relay_routes_only_to_queues_still_there() -> None:
    net = Net()
    client = net.connect()
    client.receiver("gone", 1).detach()
    net.pump()
    relay = client.sender(None)
    outcome = client.send(relay, a.Message(properties=a.Properties(to="gone"), body=b"x"))
    assert isinstance(outcome.remote_state, a.Rejected)
    assert outcome.remote_state.error.condition == "amqp:not-found"  # type: ignore[union-attr]


def test_a_refused_attach_leaves_no_queue() -> None:
    net = Net()
    client = net.connect()
    source = a.Source(
        address="bad",
        filter={
            a.Symbol("sel"): a.codec.amqp10.Described(
                a.Symbol("apache.org:selector-filter:string"), "(("
            )
        },
    )
    link = client.receiver("bad", source=source)
    assert link.remote is not None and link.remote.source is None
    assert net.broker.nodes == {}


# -- address length ------------------------------------------------------------------------------


def test_an_address_over_the_maximum_is_refused_with_invalid_field() -> None:
    net = Net()
    client = net.connect()
    assert client.sender("a" * 1024).state is a.LinkState.ATTACHED  # at the limit: fine
    assert client.receiver("é" * 512).state is a.LinkState.ATTACHED  # 1,024 bytes
    for link in (
        client.sender("a" * 1025),
        client.receiver("é" * 513),
        client.receiver("x" * 60_000),
    ):
        assert link.remote is not None
        assert (link.remote.target if isinstance(link, a.Sender) else link.remote.source) is None
    errors = [str(e.error.condition) for e in client.of(a.events.LinkDetached)]
    assert errors == ["amqp:invalid-field"] * 3
    assert set(net.broker.nodes) == {"a" * 1024, "é" * 512}
    _works(net)
    net2 = Net(BrokerConfig(max_address_length=None))
    assert net2.connect().receiver("x" * 60_000).state is a.LinkState.ATTACHED


# -- unsettled deliveries per link ----------------------------------------------------------------


def test_a_consumer_gets_no_more_than_the_unsettled_maximum() -> None:
    net = Net(BrokerConfig(max_unsettled_per_link=5))
    p, c = net.connect(), net.connect()
    publish(p, "q", *(b"%d" % i for i in range(12)))
    receiver = c.receiver("q", 100)
    got = c.received(receiver)
    assert len(got) == 5 and receiver.link_credit == 95  # its credit unused
    for event in got[:2]:
        receiver.settle(event.delivery, a.Accepted())
    net.pump()
    assert len(c.received(receiver)) == 2  # as many as were settled
    browser = c.receiver("q", 100, source=a.Source(address="q", distribution_mode=a.Symbol("copy")))
    assert len(c.received(browser)) == 5  # (the 5 available: browsers too are capped)
    _works(net)


def test_a_drain_at_the_unsettled_maximum_gives_the_credit_back() -> None:
    net = Net(BrokerConfig(max_unsettled_per_link=2))
    p, c = net.connect(), net.connect()
    publish(p, "q", b"a", b"b", b"c")
    receiver = c.receiver("q", 10)
    assert len(c.received(receiver)) == 2
    receiver.drain_credit()
    net.pump()
    assert receiver.link_credit == 0 and c.of(a.events.DrainCompleted)
    assert net.broker.nodes["q"].depth == 3  # "c" waits for the next credit


def test_a_publishers_credit_is_capped_at_the_unsettled_room() -> None:
    net = Net(BrokerConfig(max_unsettled_per_link=5))
    p = net.connect()
    # rcv-settle-mode second: the broker's outcomes stay unsettled until the publisher settles.
    sender = p.sender("q", rcv_settle_mode=a.ReceiverSettleMode.SECOND)
    assert sender.link_credit == 5
    deliveries = [p.send(sender, msg(b"%d" % i)) for i in range(5)]
    assert all(isinstance(d.remote_state, a.Accepted) for d in deliveries)
    assert sender.link_credit == 0
    for delivery in deliveries:
        sender.settle(delivery)
    net.pump()
    assert sender.link_credit == 5
    assert net.broker.nodes["q"].depth == 5


def test_limits_are_none_when_lifted() -> None:
    net = Net(
        BrokerConfig(
            max_message_size=None,
            max_queue_depth=None,
            max_queue_bytes=None,
            max_unsettled_per_link=None,
        )
    )
    client = net.connect()
    sender = client.sender("q")
    assert sender.remote is not None and sender.remote.max_message_size is None
    assert isinstance(client.send(sender, msg(b"x" * 100_000)).remote_state, a.Accepted)


def test_the_default_queue_depth_is_reached_at_a_million() -> None:
    """The default depth as a user meets it, on the core's queue (a million messages over
    the wire would take the suite minutes; tests/broker/test_broker_limits_queues.py hits the
    default byte limit over the wire)."""
    broker = Broker()
    client = Net(broker=broker).connect()
    publish(client, "q", b"first")
    queue = broker.nodes["q"]
    assert isinstance(queue, Queue)
    (first,) = queue.available.values()
    for _ in range(999_999):
        assert queue.offer(first.copy(broker.next_seq())) is None
    assert queue.depth == 1_000_000
    why = queue.offer(first.copy(broker.next_seq()))
    assert why is not None and "1000000" in why


def test_many_unsettled_deliveries_go_back_at_once_and_in_order() -> None:
    """A consumer lost with 20,000 unsettled deliveries (the default allows 100,000): they
    go back to the head of the queue in their order, at once (each was placed by a scan
    of those before it: minutes for 100,000)."""
    net = Net(chunk=1 << 20)
    p, c = net.connect(), net.connect()
    sender = p.sender("q")
    for i in range(20_000):
        sender.send(msg(b"%d" % i).encode())
        if i % 500 == 499:
            net.pump()  # (the broker's credit: 1,000, topped up once half is used)
    receiver = c.receiver("q", 20_000)
    assert len(c.received(receiver)) == 20_000
    publish(p, "q", b"after")
    start = time.perf_counter()
    net.lose(c)
    assert time.perf_counter() - start < 5
    d = net.connect()
    got = d.received(d.receiver("q", 3))
    assert [a.Message.decode(e.data).body.value for e in got] == [b"0", b"1", b"2"]  # type: ignore[union-attr]
    assert all(a.Message.decode(e.data).header.delivery_count == 1 for e in got)  # type: ignore[union-attr]
    assert net.broker.nodes["q"].depth == 20_001
