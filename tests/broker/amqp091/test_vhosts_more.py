"""More of the broker's 0-9-1 virtual hosts (amqp_sansio.broker.VirtualHost): queue
arguments given as byte strings, bindings made twice and dangling, alternate exchanges that
are not there, a publish to several queues, dead-lettering of a message
published with 1.0 and of one that died there before, a queue of another virtual host."""

from __future__ import annotations

import pytest
from support.amqp091.broker_net import Client
from support.broker_net import Net, publish

from amqp_sansio.broker import (
    Broker,
    BrokerConfig,
    Queue,
    Refused,
    from_amqp10,
    parse_queue_arguments,
)
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.definitions.amqp091.spec import BasicProperties, ReplyCode
from amqp_sansio.engine.amqp091 import events as ev


def test_queue_arguments_as_byte_strings() -> None:
    parsed = parse_queue_arguments(
        {
            "x-overflow": b"reject-publish",
            "x-dead-letter-exchange": bytearray(b"dlx"),
            "x-dead-letter-routing-key": "k",
        }
    )
    assert parsed.overflow == "reject-publish" and parsed.dead_letter_exchange == "dlx"
    assert parse_queue_arguments({"x-queue-type": "quorum"}).overflow is None
    for bad in ({"x-overflow": b"\xff"}, {"x-dead-letter-exchange": 5}):
        with pytest.raises(Refused) as refused:
            parse_queue_arguments(bad)
        assert refused.value.reply_code == ReplyCode.PRECONDITION_FAILED
        assert "not a string" in refused.value.reply_text


def test_a_vhost_of_its_own_lists_and_deletes_its_queues() -> None:
    broker = Broker(BrokerConfig(virtual_hosts={"/", "other"}))
    other = broker.vhosts["other"]
    assert repr(other) == "<VirtualHost 'other'>"
    queue, _, _ = other.declare_queue("mine")
    assert other.queues() == [queue] and "mine" not in broker.nodes
    # a node of the same name in "/" is not this vhost's: deleting it leaves "mine"
    broker.vhosts["/"].declare_queue("mine")
    broker.vhosts["/"].delete_queue("mine")
    assert other.queue("mine") is queue
    other.bind(("queue", "mine"), "amq.fanout", "")
    assert other.delete_queue("mine") == 0
    assert other.queues() == [] and other.route("amq.fanout", "", None) == []


def test_bindings_made_twice_and_to_what_is_gone() -> None:
    broker = Broker()
    vh = broker.vhosts["/"]
    vh.declare_queue("q")
    vh.declare_exchange("e", "fanout")
    vh.declare_exchange("gone", "fanout")
    vh.bind(("queue", "q"), "e", "")
    vh.bind(("queue", "q"), "e", "")  # one binding
    vh.bind(("exchange", "gone"), "e", "")
    assert len(vh.exchanges["e"].bindings) == 2
    # a queue deleted by 1.0's rules, an exchange dropped behind the vhost's back: the
    # bindings to them route nothing
    vh.exchanges.pop("gone")
    queue = vh.queue("q")
    assert queue is not None
    queue.deleted = True
    assert vh.route("e", "", None) == []
    vh.unbind(("exchange", "e"), "e", "nothing")  # not there: no error


def test_an_alternate_exchange_that_is_not_there_routes_nothing() -> None:
    vh = Broker().vhosts["/"]
    vh.declare_exchange("main", "direct", arguments={"alternate-exchange": "missing"})
    assert vh.route("main", "k", None) == []
    vh.declare_queue("alt")
    vh.declare_exchange("alt", "fanout")
    vh.bind(("queue", "alt"), "alt", "")
    vh.declare_exchange("main2", "direct", arguments={"alternate-exchange": b"alt"})
    assert [q.address for q in vh.route("main2", "k", None)] == ["alt"]


def test_a_publish_to_several_queues_stores_a_copy_in_each() -> None:
    broker = Broker()
    vh = broker.vhosts["/"]
    for name in ("a", "b", "c"):
        vh.declare_queue(name)
        vh.bind(("queue", name), "amq.fanout", "")
    published = vh.publish("amq.fanout", "", BasicProperties(message_id="m"), b"x")
    assert published.routed == 3 and not published.refused
    bodies = {
        name: [from_amqp10(m.data)[:2] for m in broker.nodes[name].available.values()]  # type: ignore[attr-defined]
        for name in ("a", "b", "c")
    }
    assert all(v == [(BasicProperties(message_id="m"), b"x")] for v in bodies.values())
    seqs = {m.seq for n in ("a", "b", "c") for m in broker.nodes[n].available.values()}  # type: ignore[attr-defined]
    assert len(seqs) == 3  # a copy each


def test_dead_lettering_a_1_0_message_and_again() -> None:
    net = Net()
    broker = net.broker
    vh = broker.vhosts["/"]
    vh.declare_exchange("dlx", "fanout")
    vh.declare_queue("dead", arguments={"x-dead-letter-exchange": "dlx2"})
    vh.bind(("queue", "dead"), "dlx", "")
    vh.declare_exchange("dlx2", "fanout")
    vh.declare_queue("work", arguments={"x-dead-letter-exchange": "dlx"})
    vh.bind(("queue", "work"), "dlx2", "")
    one = net.connect()
    publish(one, "work", b"from 1.0")
    net.pump()
    client = Client(broker)
    ch = client.channel()
    events = client.call(ch, spec.BasicGet(queue="work"))
    (got,) = [e for e in events if isinstance(e, ev.ContentReceived)]
    client.call(ch, spec.BasicReject(delivery_tag=got.method.delivery_tag, requeue=False))
    (dead,) = broker.nodes["dead"].available.values()  # type: ignore[attr-defined]
    props, body, exchange, routing_key = from_amqp10(dead.data)
    assert body == b"from 1.0" and exchange == "dlx" and routing_key == "work"
    assert props.headers is not None
    (death,) = props.headers["x-death"]
    assert death["queue"] == "work" and death["exchange"] == "" and death["count"] == 1
    # rejected from "dead" back to "work" (a cycle with a rejection is allowed), then again
    for _ in range(2):
        events = client.call(ch, spec.BasicGet(queue="dead"))
        (got,) = [e for e in events if isinstance(e, ev.ContentReceived)]
        client.call(ch, spec.BasicReject(delivery_tag=got.method.delivery_tag, requeue=False))
        events = client.call(ch, spec.BasicGet(queue="work"))
        (got,) = [e for e in events if isinstance(e, ev.ContentReceived)]
        client.call(ch, spec.BasicReject(delivery_tag=got.method.delivery_tag, requeue=False))
    (dead,) = broker.nodes["dead"].available.values()  # type: ignore[attr-defined]
    headers = from_amqp10(dead.data)[0].headers
    assert headers is not None
    counts = {(d["queue"], d["reason"]): d["count"] for d in headers["x-death"]}
    assert counts == {("work", "rejected"): 3, ("dead", "rejected"): 2}
    assert headers["x-death"][0]["queue"] == "work"  # the latest first
    assert headers["x-first-death-queue"] == "work"


def test_a_dead_letter_target_at_its_limit_refuses_it() -> None:
    broker = Broker()
    vh = broker.vhosts["/"]
    vh.declare_exchange("dlx", "fanout")
    vh.declare_queue("full", arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    vh.bind(("queue", "full"), "dlx", "")
    vh.declare_queue("work", arguments={"x-dead-letter-exchange": "dlx"})
    vh.publish("", "work", BasicProperties(), b"x")
    client = Client(broker)
    ch = client.channel()
    events = client.call(ch, spec.BasicGet(queue="work"))
    (got,) = [e for e in events if isinstance(e, ev.ContentReceived)]
    before = broker.dead_lettered
    client.call(ch, spec.BasicReject(delivery_tag=got.method.delivery_tag, requeue=False))
    assert broker.dead_lettered == before and broker.nodes["full"].depth == 0
    assert broker.nodes["work"].depth == 0


def test_a_queue_node_is_a_queue() -> None:
    broker = Broker()
    vh = broker.vhosts["/"]
    queue, _, _ = vh.declare_queue("q")
    assert isinstance(queue, Queue) and vh.queues() == [queue]


def test_an_auto_delete_queue_goes_with_its_last_consumer_only() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="auto", auto_delete=True))
    client.call(ch, spec.BasicConsume(queue="auto", consumer_tag="one"))
    client.call(ch, spec.BasicConsume(queue="auto", consumer_tag="two"))
    client.call(ch, spec.BasicCancel(consumer_tag="one"))
    assert "auto" in broker.nodes  # a consumer is left
    client.call(ch, spec.BasicCancel(consumer_tag="two"))
    assert "auto" not in broker.nodes


def test_a_queue_made_by_1_0_consumed_and_left_by_0_9_1_stays() -> None:
    net = Net()
    broker = net.broker
    one = net.connect()
    publish(one, "made-by-1.0", b"m")
    net.pump()
    assert "made-by-1.0" in broker.nodes and "made-by-1.0" not in broker.vhosts["/"].records
    client = Client(broker)
    ch = client.channel()
    events = client.call(ch, spec.BasicConsume(queue="made-by-1.0", consumer_tag="c"))
    assert [e.body for e in events if isinstance(e, ev.ContentReceived)] == [b"m"]
    client.call(ch, spec.BasicCancel(consumer_tag="c"))
    assert "made-by-1.0" in broker.nodes  # no 0-9-1 record: no auto-delete, no expiry
    assert broker.nodes["made-by-1.0"].depth == 1  # still unacked on the channel
