"""The 0-9-1 side of the core broker (amqp_sansio.broker): virtual hosts, exchanges,
bindings, queues with RabbitMQ's arguments, publishing, dead-lettering, and queues shared
with 1.0 (our 1.0 engine as the 1.0 client, tests/support/broker_net.py, on a simulated
clock)."""

from __future__ import annotations

from typing import Any

import pytest
from support.broker_net import Net, accept_all, publish

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig, Queue, Refused, VirtualHost, from_amqp10
from amqp_sansio.codec import amqp091 as c091
from amqp_sansio.definitions.amqp091.spec import BasicProperties, ReplyCode


def _net(**config: Any) -> tuple[Net, VirtualHost]:
    net = Net(BrokerConfig(**config))
    net.broker.expire(net.wall)  # the broker's wall clock is the net's
    return net, net.broker.vhosts["/"]


def _bodies(queue: Queue) -> list[bytes]:
    return [from_amqp10(m.data)[1] for m in queue.available.values()]


def _death(message: Any) -> Any:
    """The latest x-death entry of a stored message, as a 0-9-1 consumer reads it."""
    headers = from_amqp10(message.data)[0].headers
    assert headers is not None
    return headers["x-death"][0]


def _refused(code: int, call: Any, *args: Any, **kwargs: Any) -> Refused:
    with pytest.raises(Refused) as info:
        call(*args, **kwargs)
    assert info.value.reply_code == code, info.value.reply_text
    return info.value


def test_standard_exchanges_and_declare_rules() -> None:
    _, vh = _net()
    for name, kind in [
        ("", "direct"),
        ("amq.direct", "direct"),
        ("amq.fanout", "fanout"),
        ("amq.topic", "topic"),
        ("amq.headers", "headers"),
        ("amq.match", "headers"),
    ]:
        assert vh.exchanges[name].type == kind
    ex = vh.declare_exchange("logs", "topic", durable=True)
    assert vh.declare_exchange("logs", "topic", durable=True) is ex  # equivalent: the same
    assert vh.declare_exchange("logs", "", passive=True) is ex
    _refused(ReplyCode.PRECONDITION_FAILED, vh.declare_exchange, "logs", "direct", durable=True)
    _refused(ReplyCode.PRECONDITION_FAILED, vh.declare_exchange, "logs", "topic")
    _refused(ReplyCode.NOT_FOUND, vh.declare_exchange, "nope", "direct", passive=True)
    _refused(ReplyCode.ACCESS_REFUSED, vh.declare_exchange, "amq.mine", "direct")
    _refused(ReplyCode.ACCESS_REFUSED, vh.declare_exchange, "", "direct")
    assert _refused(ReplyCode.COMMAND_INVALID, vh.declare_exchange, "x", "x-delayed").hard
    _refused(ReplyCode.ACCESS_REFUSED, vh.delete_exchange, "amq.topic")
    vh.delete_exchange("nope")  # not there: no error (RabbitMQ's)
    vh.declare_queue("q")
    vh.bind(("queue", "q"), "logs", "#")
    _refused(ReplyCode.PRECONDITION_FAILED, vh.delete_exchange, "logs", if_unused=True)
    vh.delete_exchange("logs")
    assert "logs" not in vh.exchanges


def test_queue_declare_rules() -> None:
    net, vh = _net()
    queue, messages, consumers = vh.declare_queue("")
    assert queue.address.startswith("amq.gen-") and (messages, consumers) == (0, 0)
    assert net.broker.nodes[queue.address] is queue  # a broker node of / : 1.0 sees it
    _refused(ReplyCode.NOT_FOUND, vh.declare_queue, "missing", passive=True)
    _refused(ReplyCode.ACCESS_REFUSED, vh.declare_queue, "amq.mine")
    vh.declare_queue("d", durable=True, arguments={"x-max-length": 5})
    assert vh.declare_queue("d", durable=True, arguments={"x-max-length": 5})[0].max_depth == 5
    _refused(ReplyCode.PRECONDITION_FAILED, vh.declare_queue, "d")
    _refused(
        ReplyCode.PRECONDITION_FAILED,
        vh.declare_queue,
        "d",
        durable=True,
        arguments={"x-max-length": 6},
    )
    for bad in (
        {"x-message-ttl": -1},
        {"x-message-ttl": "soon"},
        {"x-expires": 0},
        {"x-overflow": "reject-publish-dlx!"},
        {"x-dead-letter-routing-key": "k"},  # without an exchange
        {"x-queue-type": "stream"},
    ):
        _refused(ReplyCode.PRECONDITION_FAILED, vh.declare_queue, "bad", arguments=bad)
    # exclusive: another connection gets 405 for everything
    owner, other = object(), object()
    vh.declare_queue("mine", exclusive=True, owner=owner)
    for call, args in [
        (vh.declare_queue, {"passive": True}),
        (vh.declare_queue, {"exclusive": True}),
        (vh.purge_queue, {}),
        (vh.delete_queue, {}),
    ]:
        _refused(ReplyCode.RESOURCE_LOCKED, call, "mine", owner=other, **args)
    _refused(ReplyCode.RESOURCE_LOCKED, vh.bind, ("queue", "mine"), "amq.direct", "k", owner=other)
    vh.bind(("queue", "mine"), "amq.direct", "k", owner=owner)
    vh.owner_gone(owner)
    assert vh.queue("mine") is None and "mine" not in net.broker.nodes
    assert vh.route("amq.direct", "k", None) == []  # its binding went with it
    # a 1.0 topic's address is not a queue
    net.broker.declare("topic/news", topic=True)
    _refused(ReplyCode.PRECONDITION_FAILED, vh.declare_queue, "topic/news")


def test_each_exchange_type_with_exchange_to_exchange_and_alternate() -> None:
    _, vh = _net()
    for name in ("qd", "qf", "qt", "qh", "qe", "qa"):
        vh.declare_queue(name)
    vh.bind(("queue", "qd"), "amq.direct", "key")
    vh.bind(("queue", "qf"), "amq.fanout", "")
    vh.bind(("queue", "qt"), "amq.topic", "stock.*.nyse")
    vh.bind(("queue", "qh"), "amq.headers", "", {"x-match": "any", "a": 1, "b": 2})
    vh.declare_exchange("hub", "fanout")
    vh.declare_exchange("inner", "direct", internal=True)
    vh.bind(("exchange", "inner"), "hub", "")
    vh.bind(("exchange", "hub"), "inner", "loop")  # a cycle: each exchange is visited once
    vh.bind(("queue", "qe"), "inner", "loop")
    vh.declare_exchange("with-ae", "direct", arguments={"alternate-exchange": "ae"})
    vh.declare_exchange("ae", "fanout")
    vh.bind(("queue", "qa"), "ae", "")

    def names(exchange: str, key: str, headers: dict[str, Any] | None = None) -> list[str]:
        return sorted(q.address for q in vh.route(exchange, key, headers))

    assert names("", "qd") == ["qd"]
    assert names("", "nothing") == []
    assert names("amq.direct", "key") == ["qd"]
    assert names("amq.fanout", "whatever") == ["qf"]
    assert names("amq.topic", "stock.ibm.nyse") == ["qt"]
    assert names("amq.topic", "stock.nyse") == []
    assert names("amq.headers", "", {"b": 2}) == ["qh"]
    assert names("amq.headers", "", {"b": 3}) == []
    assert names("hub", "loop") == ["qe"]
    assert names("with-ae", "unbound") == ["qa"]
    _refused(ReplyCode.ACCESS_REFUSED, vh.route, "inner", "loop", None)
    _refused(ReplyCode.NOT_FOUND, vh.route, "nope", "", None)
    _refused(ReplyCode.NOT_FOUND, vh.bind, ("queue", "nope"), "amq.direct", "k")
    _refused(ReplyCode.NOT_FOUND, vh.bind, ("queue", "qd"), "nope", "k")
    _refused(ReplyCode.ACCESS_REFUSED, vh.bind, ("queue", "qd"), "", "k")
    _refused(
        ReplyCode.PRECONDITION_FAILED,
        vh.bind,
        ("queue", "qh"),
        "amq.headers",
        "",
        {"x-match": "no"},
    )
    vh.unbind(("queue", "qd"), "amq.direct", "key")
    vh.unbind(("queue", "qd"), "amq.direct", "key")  # not there: no error
    assert names("amq.direct", "key") == []
    # deleting a queue takes its bindings; an auto-delete exchange goes with its last one
    vh.declare_exchange("temp", "direct", auto_delete=True)
    vh.bind(("queue", "qt"), "temp", "k")
    vh.delete_queue("qt")
    assert "temp" not in vh.exchanges


def test_publish_0_9_1_consume_1_0_properties_mapped() -> None:
    net, vh = _net()
    vh.declare_queue("shared")
    vh.bind(("queue", "shared"), "amq.topic", "orders.#")
    props = BasicProperties(
        content_type="application/json",
        headers={"region": "eu", "x-trace": "t1"},
        delivery_mode=2,
        priority=5,
        correlation_id="c1",
        reply_to="answers",
        message_id="m1",
        timestamp=c091.Timestamp(1_700_000_000),
        type="order.created",
        app_id="shop",
        user_id="guest",
    )
    published = vh.publish("amq.topic", "orders.new", props, b'{"id": 1}')
    assert published.routed == 1 and published.durable and not published.refused
    client = net.connect()
    receiver = client.receiver("shared", 10)
    got = client.received(receiver)
    assert len(got) == 1
    message = got[0].message()
    receiver.settle(got[0].delivery, a.Accepted())
    net.pump()
    assert message.body == a.Data(b'{"id": 1}')
    assert message.header is not None
    assert message.header.durable and message.header.priority == 5
    assert message.properties is not None
    assert message.properties.content_type == "application/json"
    assert message.properties.correlation_id == "c1"
    assert message.properties.reply_to == "answers"
    assert message.properties.message_id == "m1"
    assert message.properties.creation_time == 1_700_000_000_000
    assert message.properties.group_id == "shop"
    assert message.properties.user_id == b"guest"
    assert message.application_properties == {"region": "eu"}
    annotations = message.message_annotations or {}
    assert annotations[a.Symbol("x-exchange")] == "amq.topic"
    assert annotations[a.Symbol("x-routing-key")] == "orders.new"
    assert annotations[a.Symbol("x-basic-type")] == "order.created"
    assert annotations[a.Symbol("x-trace")] == "t1"
    assert net.broker.nodes["shared"].depth == 0


def test_publish_1_0_read_as_0_9_1() -> None:
    net, vh = _net()
    client = net.connect()
    sender = client.sender("from10")
    client.send(
        sender,
        a.Message(
            header=a.Header(durable=True, priority=2),
            properties=a.Properties(message_id="x1", content_type=a.Symbol("text/plain")),
            application_properties={"k": "v"},
            body=b"hello",
        ),
    )
    queue, messages, _ = vh.declare_queue("from10")  # adopts the queue 1.0 made
    assert messages == 1 and not queue.auto
    props, body, exchange, routing_key = from_amqp10(next(iter(queue.available.values())).data)
    assert body == b"hello" and (exchange, routing_key) == (None, None)
    assert props.delivery_mode == 2 and props.priority == 2
    assert props.message_id == "x1" and props.content_type == "text/plain"
    assert props.headers == {"k": "v"}


def test_max_length_overflow_and_bytes() -> None:
    _, vh = _net()
    vh.declare_queue("head", arguments={"x-max-length": 2})
    vh.declare_queue("reject", arguments={"x-max-length": 2, "x-overflow": "reject-publish"})
    vh.declare_queue("bytes", arguments={"x-max-length-bytes": 200})
    for i in range(4):
        vh.publish("", "head", None, b"%d" % i)
        result = vh.publish("", "reject", None, b"%d" % i)
        assert bool(result.refused) == (i >= 2)
    assert _bodies(vh.queue("head")) == [b"2", b"3"]  # type: ignore[arg-type]
    assert _bodies(vh.queue("reject")) == [b"0", b"1"]  # type: ignore[arg-type]
    vh.publish("", "bytes", None, b"x" * 150)
    assert vh.publish("", "bytes", None, b"y" * 150).refused == []  # drop-head by default
    assert _bodies(vh.queue("bytes")) == [b"y" * 150]  # type: ignore[arg-type]
    _refused(
        ReplyCode.PRECONDITION_FAILED,
        vh.publish,
        "",
        "bytes",
        BasicProperties(expiration="tomorrow"),
        b"",
    )


def test_message_ttl_and_dead_lettering_on_expiry_rejection_and_length() -> None:
    net, vh = _net()
    vh.declare_exchange("dlx", "direct")
    vh.declare_queue("dead")
    vh.bind(("queue", "dead"), "dlx", "work")
    vh.bind(("queue", "dead"), "dlx", "to-dead")
    vh.declare_queue(
        "work",
        arguments={"x-message-ttl": 1000, "x-dead-letter-exchange": "dlx", "x-max-length": 3},
    )
    vh.publish("", "work", BasicProperties(headers={"h": 1}), b"old")
    net.advance(2)  # past the queue's ttl: dead-lettered, reason expired
    assert net.broker.expired == 1
    dead = vh.queue("dead")
    assert dead is not None
    (message,) = dead.available.values()
    props, body, exchange, routing_key = from_amqp10(message.data)
    assert body == b"old" and (exchange, routing_key) == ("dlx", "work")
    assert props.headers is not None and props.headers["h"] == 1
    (death,) = props.headers["x-death"]
    assert death["reason"] == "expired" and death["queue"] == "work" and death["count"] == 1
    assert death["exchange"] == "" and death["routing-keys"] == ["work"]
    assert props.headers["x-first-death-reason"] == "expired"
    assert message.expires is None  # its ttl went with it
    # rejected by a 1.0 consumer: dead-lettered with reason rejected
    vh.publish("", "work", None, b"bad")
    client = net.connect()
    receiver = client.receiver("work", 1)
    (event,) = client.received(receiver)
    receiver.settle(event.delivery, a.Rejected())
    net.pump()
    assert _bodies(dead)[-1] == b"bad"
    assert [_death(m)["reason"] for m in dead.available.values()] == ["expired", "rejected"]
    receiver.detach()
    net.pump()
    # past x-max-length (drop-head): the oldest is dead-lettered, reason maxlen
    for i in range(4):
        vh.publish("", "work", None, b"m%d" % i)
    assert _bodies(dead)[-1] == b"m0"
    assert _death(list(dead.available.values())[-1])["reason"] == "maxlen"


def test_dead_letter_routing_key_and_cycles() -> None:
    net, vh = _net()
    vh.declare_queue("a", arguments={"x-message-ttl": 10, "x-dead-letter-exchange": ""})
    # dead-lettered back to itself through the default exchange: a cycle, dropped
    vh.publish("", "a", None, b"loop")
    net.advance(1)
    assert vh.queue("a").depth == 0  # type: ignore[union-attr]
    vh.declare_queue(
        "b",
        arguments={
            "x-message-ttl": 10,
            "x-dead-letter-exchange": "",
            "x-dead-letter-routing-key": "c",
        },
    )
    vh.declare_queue("c")
    vh.publish("", "b", None, b"moved")
    net.advance(1)
    assert _bodies(vh.queue("c")) == [b"moved"]  # type: ignore[arg-type]
    # a dead-letter exchange that is not there: dropped
    vh.declare_queue("d", arguments={"x-message-ttl": 10, "x-dead-letter-exchange": "gone"})
    vh.publish("", "d", None, b"lost")
    net.advance(1)
    assert vh.queue("d").depth == 0  # type: ignore[union-attr]


def test_expires_auto_delete_purge_delete() -> None:
    net, vh = _net()
    vh.declare_queue("idle", arguments={"x-expires": 5000})
    net.advance(3)
    vh.declare_queue("idle", arguments={"x-expires": 5000})  # use: the timer starts again
    net.advance(3)
    assert vh.queue("idle") is not None
    net.advance(3)
    assert vh.queue("idle") is None and "idle" not in vh.records
    queue, _, _ = vh.declare_queue("auto", auto_delete=True)
    vh.consumer_removed(queue)  # never had a consumer: stays
    assert vh.queue("auto") is queue
    vh.consumer_added(queue)
    vh.consumer_removed(queue)
    assert vh.queue("auto") is None
    vh.declare_queue("p")
    for i in range(3):
        vh.publish("", "p", None, b"%d" % i)
    assert vh.purge_queue("p") == 3 and vh.queue("p").depth == 0  # type: ignore[union-attr]
    _refused(ReplyCode.NOT_FOUND, vh.purge_queue, "nope")
    vh.publish("", "p", None, b"x")
    _refused(ReplyCode.PRECONDITION_FAILED, vh.delete_queue, "p", if_empty=True)
    client = net.connect()
    client.receiver("p", 0)
    _refused(ReplyCode.PRECONDITION_FAILED, vh.delete_queue, "p", if_unused=True)
    assert vh.delete_queue("p") == 1
    assert vh.delete_queue("p") == 0  # not there: no error
    net.pump()


def test_other_virtual_hosts_keep_their_queues() -> None:
    net = Net(BrokerConfig(virtual_hosts={"prod"}))
    assert set(net.broker.vhosts) == {"/", "prod"}
    prod = net.broker.vhosts["prod"]
    queue, _, _ = prod.declare_queue("jobs")
    assert "jobs" not in net.broker.nodes
    assert net.broker.vhosts["/"].queue("jobs") is None
    prod.publish("", "jobs", None, b"j")
    assert _bodies(queue) == [b"j"]
    assert prod.delete_queue("jobs") == 1 and prod.queue("jobs") is None


def test_1_0_queue_and_0_9_1_queue_are_one() -> None:
    net, vh = _net()
    vh.declare_queue("both")
    vh.publish("", "both", BasicProperties(delivery_mode=1), b"from 0-9-1")
    sender_client, receiver_client = net.connect(), net.connect()
    publish(sender_client, "both", b"from 1.0")
    receiver = receiver_client.receiver("both", 10)
    got = accept_all(receiver_client, receiver)
    assert got == [b"from 0-9-1", b"from 1.0"]


def test_only_durable_queues_are_persistent_in_every_vhost() -> None:
    # (issue 19: the durable queues of every virtual host keep their persistent messages)
    net = Net(BrokerConfig(virtual_hosts={"v"}))
    for vh in (net.broker.vhosts["/"], net.broker.vhosts["v"]):
        assert vh.declare_queue("durable", durable=True)[0].persistent
        assert not vh.declare_queue("transient")[0].persistent
        assert not vh.declare_queue("excl", durable=True, exclusive=True)[0].persistent
        # a deleted queue is no longer kept
        queue = vh.declare_queue("gone", durable=True)[0]
        vh.delete_queue("gone")
        assert not queue.persistent


def test_a_1_0_link_may_not_attach_to_an_exclusive_queue() -> None:
    net, vh = _net()
    vh.declare_queue("mine", exclusive=True, owner=object())
    client = net.connect()
    client.receiver("mine", 1)
    client.sender("mine")
    conditions = [e.error.condition for e in client.of(a.events.LinkDetached)]
    assert conditions == ["amqp:resource-locked", "amqp:resource-locked"]


def test_expires_put_off_by_each_use() -> None:
    net, vh = _net()
    queue, _, _ = vh.declare_queue("polled", arguments={"x-expires": 5000})
    for _ in range(20):
        net.advance(1)
        vh.got(queue)  # a basic.get: used
    assert vh.queue("polled") is queue
    assert net.broker.next_expiry() == pytest.approx(net.wall + 5)
    net.advance(4.9)
    assert vh.queue("polled") is queue
    net.advance(0.2)
    assert vh.queue("polled") is None
