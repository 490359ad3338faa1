"""Streams over AMQP 0-9-1 (amqp_sansio/broker/_streams091.py): ``queue.declare`` with
``x-queue-type`` ``stream`` makes the broker's 1.0 stream log, and a 0-9-1 consumer reads it
by ``x-stream-offset`` as RabbitMQ's streams are read (its "Streams" guide; the refusals'
codes and texts checked against RabbitMQ 3.10). The 0-9-1 engine's client role drives the
broker's connection through bytes on a simulated clock (tests/support/amqp091/broker_net.py)."""

from __future__ import annotations

from typing import Any

import pytest
from support.amqp091.broker_net import Client

from amqp_sansio.broker import Broker, BrokerConfig, Stream
from amqp_sansio.codec.amqp091 import Int64, Timestamp
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import events as ev

STREAM = {"x-queue-type": "stream"}


def _declare(client: Client, ch: int, name: str, **options: Any) -> list[ev.Event]:
    options.setdefault("durable", True)
    arguments = {**STREAM, **options.pop("arguments", {})}
    return client.call(ch, spec.QueueDeclare(queue=name, arguments=arguments, **options))


def _ok(events: list[ev.Event], kind: type) -> Any:
    (found,) = [e.method for e in events if isinstance(e, ev.MethodReceived)]
    assert isinstance(found, kind), events
    return found


def _closed(events: list[ev.Event]) -> tuple[int, str]:
    closes = [e for e in events if isinstance(e, ev.ChannelClosed | ev.ConnectionClosed)]
    assert closes, events
    return closes[0].reply_code, closes[0].reply_text


def _publish(client: Client, ch: int, name: str, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        client.engine.publish(ch, "", name, b"m%d" % i)
    client.pump()


def _deliveries(events: list[ev.Event]) -> list[Any]:
    return [e for e in events if isinstance(e, ev.ContentReceived)]


def _offsets(events: list[ev.Event]) -> list[int]:
    return [d.properties.headers["x-stream-offset"] for d in _deliveries(events)]


def _consume(client: Client, ch: int, name: str, offset: Any = None, **options: Any) -> Any:
    arguments = {} if offset is None else {"x-stream-offset": offset}
    return client.call(ch, spec.BasicConsume(queue=name, arguments=arguments, **options))


@pytest.fixture
def client() -> Client:
    return Client(Broker())


def test_a_declared_stream_is_the_broker_stream_node(client: Client) -> None:
    ch = client.channel()
    ok = _ok(_declare(client, ch, "s"), spec.QueueDeclareOk)
    assert (ok.queue, ok.message_count, ok.consumer_count) == ("s", 0, 0)
    assert isinstance(client.broker.nodes["s"], Stream)
    _publish(client, ch, "s", 3)
    again = _ok(_declare(client, ch, "s"), spec.QueueDeclareOk)  # equivalent: no change
    assert again.message_count == 3
    passive = client.call(ch, spec.QueueDeclare(queue="s", passive=True))
    assert _ok(passive, spec.QueueDeclareOk).message_count == 3


@pytest.mark.parametrize(
    ("options", "text"),
    [
        ({"durable": False}, "invalid property 'non-durable' for queue 's' in vhost '/'"),
        ({"exclusive": True}, "invalid property 'exclusive-owner' for queue 's' in vhost '/'"),
        ({"auto_delete": True}, "invalid property 'auto-delete' for queue 's' in vhost '/'"),
        (
            {"arguments": {"x-max-length": 5}},
            "invalid arg 'x-max-length' for queue 's' in vhost '/' of queue type "
            "rabbit_stream_queue",
        ),
        ({"arguments": {"x-message-ttl": 5}}, "invalid arg 'x-message-ttl'"),
        ({"arguments": {"x-max-age": 5}}, "invalid arg 'x-max-age'"),
        ({"arguments": {"x-max-age": "7 days"}}, "invalid arg 'x-max-age'"),
        ({"arguments": {"x-max-length-bytes": "5"}}, "invalid arg 'x-max-length-bytes'"),
        ({"arguments": {"x-max-length-bytes": -1}}, "value_negative"),
    ],
)
def test_what_a_stream_declaration_refuses(client: Client, options: Any, text: str) -> None:
    ch = client.channel()
    code, reply = _closed(_declare(client, ch, "s", **options))
    assert code == spec.ReplyCode.PRECONDITION_FAILED and text in reply
    assert "s" not in client.broker.nodes


def test_arguments_it_takes_and_inequivalent_redeclarations(client: Client) -> None:
    ch = client.channel()
    args = {"x-max-age": "7D", "x-stream-max-segment-size-bytes": 1000, "x-foo": 1}
    _ok(_declare(client, ch, "s", arguments=args), spec.QueueDeclareOk)
    stream = client.broker.nodes["s"]
    assert isinstance(stream, Stream) and stream.max_age == 7 * 86400.0
    code, text = _closed(client.call(ch, spec.QueueDeclare(queue="s", durable=True)))
    assert code == 406
    assert text.endswith(
        "inequivalent arg 'x-queue-type' for queue 's' in vhost '/': "
        "received none but current is 'stream'"
    )
    ch = client.channel()
    code, text = _closed(_declare(client, ch, "s", arguments={"x-max-age": "1h"}))
    assert code == 406 and "inequivalent arg 'x-foo'" in text
    ch = client.channel()
    code, text = _closed(_declare(client, ch, "s", arguments={**args, "x-max-age": "1h"}))
    assert code == 406 and "inequivalent arg 'x-max-age'" in text and "received '1h'" in text
    # A queue of that name is not made a stream, nor a stream a queue
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="q", durable=True))
    code, text = _closed(_declare(client, ch, "q"))
    assert code == 406 and "received 'stream' but current is 'classic'" in text
    ch = client.channel()
    code, text = _closed(_declare(client, ch, "amq.s"))
    assert code == spec.ReplyCode.ACCESS_REFUSED


def test_a_stream_made_by_the_10_side_is_adopted(client: Client) -> None:
    stream = client.broker.declare("stream/x", stream=True)
    ch = client.channel()
    ok = _ok(_declare(client, ch, "stream/x"), spec.QueueDeclareOk)
    assert ok.queue == "stream/x" and client.broker.nodes["stream/x"] is stream
    server_named = _ok(_declare(client, ch, ""), spec.QueueDeclareOk).queue
    assert server_named.startswith("amq.gen-")
    assert isinstance(client.broker.nodes[server_named], Stream)
    code, text = _closed(client.call(ch, spec.QueueDeclare(queue="stream/x", durable=True)))
    assert code == 406 and "inequivalent arg 'x-queue-type'" in text


@pytest.mark.parametrize(
    ("offset", "expected"),
    [
        ("first", [0, 1, 2, 3, 4]),
        (b"first", [0, 1, 2, 3, 4]),
        ("last", [4]),
        ("next", []),
        (None, []),
        (2, [2, 3, 4]),
        (Int64(3), [3, 4]),
        (-1, [0, 1, 2, 3, 4]),
        (99, []),
    ],
)
def test_where_a_consumer_starts(client: Client, offset: Any, expected: list[int]) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    _publish(client, ch, "s", 5)
    client.call(ch, spec.BasicQos(prefetch_count=10))
    events = _consume(client, ch, "s", offset)
    assert _ok([e for e in events if isinstance(e, ev.MethodReceived)], spec.BasicConsumeOk)
    assert _offsets(events) == expected
    assert [d.body for d in _deliveries(events)] == [b"m%d" % i for i in expected]
    d = _deliveries(events)[0] if expected else None
    if d is not None:
        assert (d.method.exchange, d.method.routing_key, d.method.redelivered) == ("", "s", False)
    # the consumer goes on with what comes next
    client.events = []
    _publish(client, ch, "s", 1, start=5)
    assert _offsets(client.events) == ([5] if offset != 99 else [])


def test_timestamps_and_intervals_start_at_the_first_message_since(client: Client) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    client.wall = 1000.0
    _publish(client, ch, "s", 2)
    client.wall = 2000.0
    _publish(client, ch, "s", 2, start=2)
    client.wall = 2600.0
    client.call(ch, spec.BasicQos(prefetch_count=10))
    assert _offsets(_consume(client, ch, "s", Timestamp(1500))) == [2, 3]
    assert _offsets(_consume(client, ch, "s", Timestamp(500))) == [0, 1, 2, 3]
    assert _offsets(_consume(client, ch, "s", Timestamp(3000))) == []
    assert _offsets(_consume(client, ch, "s", "10m")) == [2, 3]  # since 2000
    assert _offsets(_consume(client, ch, "s", "1h")) == [0, 1, 2, 3]
    for bad in ("bogus", "10x", True, 1.5):
        code, text = _closed(_consume(client, ch, "s", bad))
        assert code == 406 and "invalid x-stream-offset" in text
        ch = client.channel()
        client.call(ch, spec.BasicQos(prefetch_count=10))


def test_acks_are_credit_and_nothing_leaves_the_stream(client: Client) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    _publish(client, ch, "s", 6)
    client.call(ch, spec.BasicQos(prefetch_count=2))
    events = _consume(client, ch, "s", "first")
    assert _offsets(events) == [0, 1]  # the prefetch bounds what is out unacked
    tags = [d.method.delivery_tag for d in _deliveries(events)]
    client.events = []
    client.engine.send_method(ch, spec.BasicAck(delivery_tag=tags[0]))
    client.pump()
    assert _offsets(client.events) == [2]
    client.events = []
    client.engine.send_method(ch, spec.BasicAck(delivery_tag=0, multiple=True))
    client.pump()
    assert _offsets(client.events) == [3, 4]
    stream = client.broker.nodes["s"]
    assert isinstance(stream, Stream) and (stream.first, stream.end, stream.depth) == (0, 6, 6)
    # another consumer reads it all again
    other = client.channel()
    client.call(other, spec.BasicQos(prefetch_count=100))
    assert _offsets(_consume(client, other, "s", "first")) == [0, 1, 2, 3, 4, 5]


def test_what_a_stream_consumer_is_refused(client: Client) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    _publish(client, ch, "s", 2)
    code, text = _closed(_consume(client, ch, "s", "first"))  # no basic.qos
    assert code == 406
    assert text.endswith("consumer prefetch count is not set for 'queue 's' in vhost '/''")
    ch = client.channel()
    client.call(ch, spec.BasicQos(prefetch_count=5, global_=True))  # the channel's only
    assert _closed(_consume(client, ch, "s", "first"))[0] == 406
    ch = client.channel()
    client.call(ch, spec.BasicQos(prefetch_count=5))
    events = _consume(client, ch, "s", "first", consumer_tag="c", exclusive=True)
    assert _offsets(events) == [0, 1]
    other = client.channel()
    client.call(other, spec.BasicQos(prefetch_count=5))
    code, text = _closed(_consume(client, other, "s"))
    assert code == spec.ReplyCode.ACCESS_REFUSED and "in exclusive use" in text
    # a consumer tag used twice on a channel: 530 (hard)
    assert _closed(_consume(client, ch, "s", consumer_tag="c"))[0] == spec.ReplyCode.NOT_ALLOWED


def test_a_queue_refuses_a_stream_offset(client: Client) -> None:
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="q", durable=True))
    code, text = _closed(_consume(client, ch, "q", "first"))
    assert code == 406
    assert text.endswith(
        "invalid arg 'x-stream-offset' for queue 'q' in vhost '/' of queue type "
        "rabbit_classic_queue"
    )
    ch = client.channel()
    assert _closed(_consume(client, ch, "missing", "first"))[0] == spec.ReplyCode.NOT_FOUND


def test_an_exclusive_consumer_needs_the_stream_to_itself(client: Client) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    client.call(ch, spec.BasicQos(prefetch_count=5))
    _consume(client, ch, "s")
    code, text = _closed(_consume(client, ch, "s", exclusive=True))
    assert code == spec.ReplyCode.ACCESS_REFUSED and "it has consumers" in text


@pytest.mark.parametrize(
    ("method", "what"),
    [
        (spec.BasicGet(queue="s"), "basic.get"),
        (spec.QueuePurge(queue="s"), "queue.purge"),
        (spec.BasicConsume(queue="s", no_ack=True), "automatic acknowledgement"),
    ],
)
def test_methods_a_stream_does_not_take(client: Client, method: Any, what: str) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    client.call(ch, spec.BasicQos(prefetch_count=5))
    code, text = _closed(client.call(ch, method))
    assert code == spec.ReplyCode.NOT_IMPLEMENTED
    assert text == f"NOT_IMPLEMENTED - {what} not supported by stream queues queue 's' in vhost '/'"
    assert client.conn.ended


@pytest.mark.parametrize("method", [spec.BasicNack, spec.BasicReject])
def test_nack_and_reject_are_not_implemented(client: Client, method: Any) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    _publish(client, ch, "s", 1)
    client.call(ch, spec.BasicQos(prefetch_count=5))
    (d,) = _deliveries(_consume(client, ch, "s", "first"))
    code, text = _closed(client.call(ch, method(delivery_tag=d.method.delivery_tag)))
    assert code == spec.ReplyCode.NOT_IMPLEMENTED
    assert "basic.nack and basic.reject not supported by stream queues" in text
    assert client.broker.nodes["s"].depth == 1


def test_a_closed_channel_and_recover_leave_the_stream_as_it_was(client: Client) -> None:
    ch = client.channel()
    _declare(client, ch, "s")
    client.call(ch, spec.QueueDeclare(queue="q", durable=True))
    _publish(client, ch, "s", 3)
    _publish(client, ch, "q", 1)
    client.call(ch, spec.BasicQos(prefetch_count=5))
    assert _offsets(_consume(client, ch, "s", "first")) == [0, 1, 2]
    client.call(ch, spec.BasicConsume(queue="q"))
    events = client.call(ch, spec.BasicRecover(requeue=False))
    # the queue's delivery comes again; the stream's are not redelivered
    assert [d.body for d in _deliveries(events)] == [b"m0"]
    assert all(d.method.redelivered for d in _deliveries(events))
    client.engine.close_channel(ch)
    client.pump()
    stream = client.broker.nodes["s"]
    assert isinstance(stream, Stream) and stream.depth == 3 and not stream.consumers


def test_retention_by_size_and_by_age(client: Client) -> None:
    ch = client.channel()
    _declare(client, ch, "sized", arguments={"x-max-length-bytes": 0})
    _publish(client, ch, "sized", 5)
    sized = client.broker.nodes["sized"]
    assert isinstance(sized, Stream) and (sized.first, sized.end) == (4, 5)  # the newest kept
    client.wall = 1000.0
    _declare(client, ch, "aged", arguments={"x-max-age": "1m"})
    _publish(client, ch, "aged", 3)
    client.wall = 1030.0
    _publish(client, ch, "aged", 2, start=3)
    aged = client.broker.nodes["aged"]
    assert isinstance(aged, Stream) and (aged.first, aged.end) == (0, 5)
    client.wall = 1075.0  # the first three are older than a minute: a consumer coming drops them
    client.call(ch, spec.BasicQos(prefetch_count=10))
    assert _offsets(_consume(client, ch, "aged", "first")) == [3, 4]
    assert aged.first == 3
    client.wall = 2000.0
    ok = _ok(client.call(ch, spec.QueueDeclare(queue="aged", passive=True)), spec.QueueDeclareOk)
    assert ok.message_count == 1  # (the newest is always kept)


def test_exchanges_route_to_streams_and_deletion(client: Client) -> None:
    broker = client.broker
    ch = client.channel()
    _declare(client, ch, "s")
    client.call(ch, spec.ExchangeDeclare(exchange="x", type="fanout"))
    client.call(ch, spec.QueueBind(queue="s", exchange="x"))
    client.engine.publish(ch, "x", "any", b"routed")
    client.pump()
    client.call(ch, spec.BasicQos(prefetch_count=5))
    (d,) = _deliveries(_consume(client, ch, "s", "first", consumer_tag="c"))
    assert (d.body, d.method.exchange, d.method.routing_key) == (b"routed", "x", "any")
    assert d.properties.headers["x-stream-offset"] == 0
    code, _ = _closed(client.call(ch, spec.QueueDelete(queue="s", if_unused=True)))
    assert code == 406
    ch = client.channel()
    code, _ = _closed(client.call(ch, spec.QueueDelete(queue="s", if_empty=True)))
    assert code == 406
    ch = client.channel()
    ok = _ok(client.call(ch, spec.QueueDelete(queue="s")), spec.QueueDeleteOk)
    assert ok.message_count == 1 and "s" not in broker.nodes
    assert "s" not in broker.vhosts["/"].stream_records
    assert not broker.vhosts["/"].exchanges["x"].bindings
    # the deleted stream's consumer was cancelled (the client asked to be told)
    client.call(ch, spec.QueueUnbind(queue="s", exchange="x"))
    assert _closed(client.events)[0] == spec.ReplyCode.NOT_FOUND


def test_the_consumer_of_a_deleted_stream_is_told() -> None:
    client = Client(Broker(), client_properties={"capabilities": {"consumer_cancel_notify": True}})
    ch = client.channel()
    _declare(client, ch, "s")
    client.call(ch, spec.BasicQos(prefetch_count=5))
    _consume(client, ch, "s", consumer_tag="c")
    other = client.channel()
    events = client.call(other, spec.QueueDelete(queue="s"))
    cancels = [e.method for e in events if isinstance(e, ev.MethodReceived)]
    assert spec.BasicCancel(consumer_tag="c") in cancels


def test_the_channel_prefetch_bounds_stream_consumers_too(client: Client) -> None:
    ch = client.channel()
    _declare(client, ch, "s", arguments={"x-queue-type": b"stream", "x-max-age": b"1D"})
    _publish(client, ch, "s", 5)
    client.call(ch, spec.BasicQos(prefetch_count=10))
    client.call(ch, spec.BasicQos(prefetch_count=3, global_=True))
    events = _consume(client, ch, "s", "first", consumer_tag="c")
    assert _offsets(events) == [0, 1, 2]
    consumer = client.conn.channels[ch].consumers["c"]
    assert repr(consumer) == "<0-9-1 stream consumer 'c' of 's'>"
    code, text = _closed(_declare(client, ch, "t", arguments={"x-max-age": b"\xff"}))
    assert code == 406 and "invalid arg 'x-max-age'" in text


def test_streams_of_another_virtual_host() -> None:
    broker = Broker(BrokerConfig(virtual_hosts={"v", "w"}))
    client = Client(broker, virtual_host="v")
    ch = client.channel()
    _declare(client, ch, "s")
    assert "s" not in broker.nodes  # (1.0 sees "/" only)
    _publish(client, ch, "s", 2)
    client.call(ch, spec.BasicQos(prefetch_count=5))
    assert _offsets(_consume(client, ch, "s", "first")) == [0, 1]
    other = client.channel()
    client.call(other, spec.QueueDelete(queue="s"))
    assert broker.vhosts["v"].stream("s") is None
    code, _ = _closed(client.call(other, spec.QueueDeclare(queue="s", passive=True)))
    assert code == spec.ReplyCode.NOT_FOUND
