"""pika (blocking) and aio-pika as clients of our broker, started as a user starts it (the
``amqp-sansio broker`` command, its port chosen by the system): publish, consume, ack, nack,
reject, confirms, mandatory returns, qos, each exchange type, tx, heartbeats, soft errors;
and across protocols: published with pika, consumed with our 1.0 client and Qpid Proton,
and back, the properties mapped (docs/amqp091.rst, "The broker")."""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aio_pika
import pika
import pika.exceptions
import pytest
from amqp_sansio.adapters import sockets
from proton import Message as ProtonMessage
from proton.utils import BlockingConnection as ProtonConnection
from support.broker_process import WAIT, BrokerProcess

import amqp_sansio as a


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def _pika(broker: BrokerProcess, **params: Any) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.ConnectionParameters("127.0.0.1", broker.port, **params))


def _drain(channel: Any, queue: str, count: int, *, ack: bool = True) -> list[Any]:
    """Consume ``count`` messages from ``queue``: (method, properties, body) each."""
    got: list[Any] = []
    for method, props, body in channel.consume(queue, inactivity_timeout=WAIT):
        assert method is not None, f"only {len(got)} of {count} messages came"
        got.append((method, props, body))
        if ack:
            channel.basic_ack(method.delivery_tag)
        if len(got) == count:
            break
    channel.cancel()
    return got


def test_publish_consume_ack_with_properties(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("p.basic")
        props = pika.BasicProperties(
            content_type="text/plain",
            headers={"n": 1, "s": "x", "nested": {"k": [1, 2]}},
            delivery_mode=2,
            priority=3,
            correlation_id="c",
            reply_to="r",
            message_id="m",
            timestamp=1_700_000_000,
            type="t",
            app_id="app",
        )
        for i in range(3):
            ch.basic_publish("", "p.basic", b"%d" % i, props)
        got = _drain(ch, "p.basic", 3)
        assert [body for _, _, body in got] == [b"0", b"1", b"2"]
        method, back, _ = got[0]
        assert method.exchange == "" and method.routing_key == "p.basic"
        assert not method.redelivered
        for field in (
            "content_type",
            "headers",
            "delivery_mode",
            "priority",
            "correlation_id",
            "reply_to",
            "message_id",
            "timestamp",
            "type",
            "app_id",
        ):
            assert getattr(back, field) == getattr(props, field), field
        assert ch.queue_declare("p.basic", passive=True).method.message_count == 0


def test_nack_reject_requeue_redelivered_and_dead_lettering(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.exchange_declare("p.dlx", "fanout")
        ch.queue_declare("p.dead")
        ch.queue_bind("p.dead", "p.dlx")
        ch.queue_declare("p.work", arguments={"x-dead-letter-exchange": "p.dlx"})
        ch.basic_publish("", "p.work", b"a")
        ch.basic_publish("", "p.work", b"b")
        first = ch.basic_get("p.work")
        second = ch.basic_get("p.work")
        assert first[2] == b"a" and second[2] == b"b"
        ch.basic_nack(first[0].delivery_tag, requeue=True)
        ch.basic_reject(second[0].delivery_tag, requeue=False)  # dead-lettered
        again = ch.basic_get("p.work")
        assert again[2] == b"a" and again[0].redelivered
        ch.basic_nack(again[0].delivery_tag, multiple=True, requeue=False)
        dead = _drain(ch, "p.dead", 2)
        assert [body for _, _, body in dead] == [b"b", b"a"]
        deaths = dead[0][1].headers["x-death"]
        assert deaths[0]["reason"] == "rejected" and deaths[0]["queue"] == "p.work"
        assert ch.basic_get("p.work") == (None, None, None)


def test_confirms_and_mandatory_returns(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        ch.queue_declare("p.confirm", arguments={"x-max-length": 1, "x-overflow": "reject-publish"})
        ch.basic_publish("", "p.confirm", b"fits", pika.BasicProperties(delivery_mode=2))
        with pytest.raises(pika.exceptions.NackError):  # the queue is full: nacked
            ch.basic_publish("", "p.confirm", b"refused")
        with pytest.raises(pika.exceptions.UnroutableError) as info:
            ch.basic_publish("", "p.nowhere", b"lost", mandatory=True)
        (returned,) = info.value.messages
        assert returned.method.reply_code == 312 and returned.method.reply_text == "NO_ROUTE"
        assert returned.body == b"lost"
        ch.basic_publish("", "p.nowhere", b"dropped")  # not mandatory: acked, dropped
        assert ch.basic_get("p.confirm", auto_ack=True)[2] == b"fits"


def test_qos_prefetch_per_consumer(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("p.qos")
        for i in range(5):
            ch.basic_publish("", "p.qos", b"%d" % i)
        ch.basic_qos(prefetch_count=2)
        got: list[Any] = []
        ch.basic_consume("p.qos", lambda c, m, p, b: got.append(m))
        conn.process_data_events(time_limit=0.5)
        assert len(got) == 2  # at most two unacked
        ch.basic_ack(got[1].delivery_tag, multiple=True)
        conn.process_data_events(time_limit=0.5)
        assert len(got) == 4
        ch.basic_ack(got[3].delivery_tag, multiple=True)
        conn.process_data_events(time_limit=0.5)
        assert len(got) == 5
        ch.basic_ack(got[4].delivery_tag)


@pytest.mark.parametrize(
    ("kind", "binding", "key", "headers", "routed"),
    [
        ("direct", {"routing_key": "k"}, "k", None, True),
        ("direct", {"routing_key": "k"}, "other", None, False),
        ("fanout", {}, "anything", None, True),
        ("topic", {"routing_key": "a.*.c"}, "a.b.c", None, True),
        ("topic", {"routing_key": "a.#"}, "b", None, False),
        ("headers", {"arguments": {"x-match": "any", "h": 1}}, "", {"h": 1}, True),
        ("headers", {"arguments": {"x-match": "all", "h": 1, "i": 2}}, "", {"h": 1}, False),
    ],
)
def test_each_exchange_type(
    broker: BrokerProcess,
    kind: str,
    binding: dict[str, Any],
    key: str,
    headers: dict[str, Any] | None,
    routed: bool,
) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        exchange = f"p.ex.{kind}"
        ch.exchange_declare(exchange, kind)
        queue = ch.queue_declare("", exclusive=True).method.queue
        assert queue.startswith("amq.gen-")
        ch.queue_bind(queue, exchange, **binding)
        ch.basic_publish(exchange, key, b"m", pika.BasicProperties(headers=headers))
        got = ch.basic_get(queue, auto_ack=True)
        assert (got[2] == b"m") is routed
        if routed:
            assert got[0].exchange == exchange and got[0].routing_key == key


def test_exchange_to_exchange_binding(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.exchange_declare("p.e2e.src", "topic")
        ch.exchange_declare("p.e2e.dst", "fanout")
        ch.exchange_bind("p.e2e.dst", "p.e2e.src", "orders.#")
        queue = ch.queue_declare("", exclusive=True).method.queue
        ch.queue_bind(queue, "p.e2e.dst")
        ch.basic_publish("p.e2e.src", "orders.eu", b"routed")
        ch.basic_publish("p.e2e.src", "logs", b"not")
        assert ch.basic_get(queue, auto_ack=True)[2] == b"routed"
        assert ch.basic_get(queue, auto_ack=True)[2] is None
        ch.exchange_unbind("p.e2e.dst", "p.e2e.src", "orders.#")
        ch.basic_publish("p.e2e.src", "orders.eu", b"unbound")
        assert ch.basic_get(queue, auto_ack=True)[2] is None


def test_tx_commit_and_rollback(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("p.tx")
        ch.tx_select()
        ch.basic_publish("", "p.tx", b"rolled back")
        ch.tx_rollback()
        ch.basic_publish("", "p.tx", b"committed")
        with _pika(broker) as other:
            assert other.channel().basic_get("p.tx")[2] is None  # not before the commit
        ch.tx_commit()
        method, _, body = ch.basic_get("p.tx")
        assert body == b"committed"
        ch.basic_ack(method.delivery_tag)
        ch.tx_rollback()  # the ack is undone: the message stays unacked
        ch.close()  # ... and comes back when the channel closes
        ch2 = conn.channel()
        method, _, body = ch2.basic_get("p.tx", auto_ack=True)
        assert body == b"committed" and method.redelivered


def test_soft_errors_close_the_channel(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare("p.missing", passive=True)
        assert info.value.reply_code == 404
        ch = conn.channel()
        ch.queue_declare("p.args", arguments={"x-max-length": 1})
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.queue_declare("p.args", arguments={"x-max-length": 2})
        assert info.value.reply_code == 406
        ch = conn.channel()
        ch.queue_declare("p.excl", exclusive=True)
        with _pika(broker) as other:
            och = other.channel()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                och.basic_consume("p.excl", lambda *args: None)
            assert info.value.reply_code == 405
        ch.basic_publish("", "p.args", b"x")
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            ch.basic_ack(99)
            ch.queue_declare("p.args", passive=True)  # (a round trip: the close arrives)
        assert info.value.reply_code == 406
        assert conn.is_open  # soft errors: the connection stays


def test_consumer_cancelled_when_its_queue_is_deleted(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("p.gone")
        cancelled: list[Any] = []
        ch.add_on_cancel_callback(cancelled.append)
        ch.basic_consume("p.gone", lambda *args: None)
        with _pika(broker) as other:
            other.channel().queue_delete("p.gone")
        conn.process_data_events(time_limit=0.5)
        assert len(cancelled) == 1


def test_heartbeats_keep_an_idle_connection(broker: BrokerProcess) -> None:
    with _pika(broker, heartbeat=1) as conn:
        ch = conn.channel()
        ch.queue_declare("p.hb")
        deadline = time.monotonic() + 3.5  # past three heartbeat intervals, idle
        while time.monotonic() < deadline:
            conn.process_data_events(time_limit=0.2)
        ch.basic_publish("", "p.hb", b"alive")
        assert ch.basic_get("p.hb", auto_ack=True)[2] == b"alive"


def test_aio_pika(broker: BrokerProcess) -> None:
    async def main() -> list[bytes]:
        conn = await aio_pika.connect_robust(f"amqp://guest:guest@127.0.0.1:{broker.port}/")
        async with conn:
            ch = await conn.channel(publisher_confirms=True)
            await ch.set_qos(prefetch_count=10)
            ex = await ch.declare_exchange("p.aio", aio_pika.ExchangeType.TOPIC)
            queue = await ch.declare_queue("p.aio.q", auto_delete=True)
            await queue.bind(ex, "aio.#")
            for i in range(5):
                await ex.publish(aio_pika.Message(b"%d" % i, delivery_mode=2), "aio.x")
            got = []
            async with queue.iterator() as it:
                async for message in it:
                    async with message.process():
                        got.append(message.body)
                    if len(got) == 5:
                        break
            return got

    assert asyncio.run(asyncio.wait_for(main(), WAIT)) == [b"0", b"1", b"2", b"3", b"4"]


# -- across protocols --------------------------------------------------------------------------


def test_pika_to_our_1_0_client_and_back(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.queue_declare("x.ours")
        ch.basic_publish(
            "",
            "x.ours",
            b"from pika",
            pika.BasicProperties(
                content_type="text/plain",
                headers={"k": "v", "x-opt": 1},
                delivery_mode=2,
                priority=6,
                message_id="m1",
                correlation_id="c1",
                timestamp=1_700_000_000,
                type="greeting",
            ),
        )
        with sockets.connect(broker.url, timeout=WAIT) as ours:
            receiver = ours.receiver("x.ours", credit=1)
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None
            message = delivery.message
            delivery.accept()
            assert message.body == a.Data(b"from pika")
            assert message.header is not None and message.header.durable
            assert message.header.priority == 6
            assert message.properties is not None
            assert message.properties.message_id == "m1"
            assert message.properties.correlation_id == "c1"
            assert message.properties.content_type == "text/plain"
            assert message.properties.creation_time == 1_700_000_000_000
            assert message.application_properties == {"k": "v"}
            annotations = message.message_annotations or {}
            assert annotations[a.Symbol("x-opt")] == 1
            assert annotations[a.Symbol("x-basic-type")] == "greeting"
            assert annotations[a.Symbol("x-routing-key")] == "x.ours"
            sender = ours.sender("x.ours")
            sender.send(
                a.Message(
                    header=a.Header(durable=True, priority=2, ttl=60_000),
                    properties=a.Properties(
                        message_id="back", reply_to="replies", creation_time=1_700_000_001_000
                    ),
                    application_properties={"answer": 42},
                    body=b"from 1.0",
                )
            )
        method, props, body = ch.basic_get("x.ours", auto_ack=True)
        assert body == b"from 1.0" and method.routing_key == "x.ours"
        assert props.delivery_mode == 2 and props.priority == 2 and props.expiration == "60000"
        assert props.message_id == "back" and props.reply_to == "replies"
        assert props.timestamp == 1_700_000_001
        assert props.headers == {"answer": 42}


def test_pika_to_proton_and_back(broker: BrokerProcess) -> None:
    with _pika(broker) as conn:
        ch = conn.channel()
        ch.exchange_declare("x.proton", "direct")
        ch.queue_declare("x.proton.q")
        ch.queue_bind("x.proton.q", "x.proton", "to-proton")
        ch.basic_publish(
            "x.proton",
            "to-proton",
            b"hello proton",
            pika.BasicProperties(
                headers={"h": "v"}, delivery_mode=2, priority=7, message_id="p1", reply_to="r"
            ),
        )
        proton = ProtonConnection(broker.url, timeout=WAIT)
        try:
            receiver = proton.create_receiver("x.proton.q")
            message = receiver.receive(timeout=WAIT)
            receiver.accept()
            assert bytes(message.body) == b"hello proton"
            assert message.durable and message.priority == 7
            assert message.id == "p1" and message.reply_to == "r"
            assert message.properties == {"h": "v"}
            assert message.annotations["x-exchange"] == "x.proton"
            assert message.annotations["x-routing-key"] == "to-proton"
            sender = proton.create_sender("x.proton.q")
            sender.send(
                ProtonMessage(
                    body=b"hello pika",
                    inferred=True,  # a data section (else an amqp-value holding binary)
                    durable=True,
                    id="p2",
                    correlation_id="c2",
                    content_type="application/octet-stream",
                    properties={"from": "proton"},
                )
            )
            sender.send(ProtonMessage(body="a string"))  # an amqp-value, as RabbitMQ passes it
        finally:
            proton.close()
        _, props, body = ch.basic_get("x.proton.q", auto_ack=True)
        assert body == b"hello pika"
        assert props.delivery_mode == 2 and props.message_id == "p2"
        assert props.correlation_id == "c2"
        assert props.content_type == "application/octet-stream"
        assert props.headers == {"from": "proton"}
        _, props, body = ch.basic_get("x.proton.q", auto_ack=True)
        assert props.type == "amqp-1.0"
        assert a.Message.decode(body).body == a.AmqpValue("a string")


def test_virtual_hosts_from_the_command_line() -> None:
    with BrokerProcess("--vhost", "prod") as process:
        params = pika.ConnectionParameters("127.0.0.1", process.port, virtual_host="prod")
        with pika.BlockingConnection(params) as conn:
            ch = conn.channel()
            ch.queue_declare("jobs")
            ch.basic_publish("", "jobs", b"in prod")
            assert ch.basic_get("jobs", auto_ack=True)[2] == b"in prod"
        with _pika(process) as conn:  # / does not see prod's queues
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
                conn.channel().queue_declare("jobs", passive=True)
            assert info.value.reply_code == 404
        params = pika.ConnectionParameters("127.0.0.1", process.port, virtual_host="test")
        with pytest.raises(pika.exceptions.ProbableAccessDeniedError) as denied:
            pika.BlockingConnection(params)
        assert "530" in str(denied.value)


@pytest.mark.parametrize(
    "header", [b"AMQP\x01\x01\x00\x0b", b"AMQP\x00\x00\x08\x00", b"AMQP\x00\x00\x09\x00"]
)
def test_an_older_0_x_header_gets_0_9_1_back(broker: BrokerProcess, header: bytes) -> None:
    with socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT) as sock:
        sock.sendall(header)
        got = b""
        while chunk := sock.recv(64):
            got += chunk
    assert got == b"AMQP\x00\x00\x09\x01"


def test_persistent_messages_of_durable_queues_survive_a_restart(tmp_path: Path) -> None:
    with BrokerProcess(store=tmp_path) as process:
        with _pika(process) as conn:
            ch = conn.channel()
            ch.confirm_delivery()  # each confirm comes once the store has the message
            ch.queue_declare("d.durable", durable=True)
            ch.queue_declare("d.transient")
            for queue in ("d.durable", "d.transient"):
                ch.basic_publish("", queue, b"kept?", pika.BasicProperties(delivery_mode=2))
                ch.basic_publish("", queue, b"never", pika.BasicProperties(delivery_mode=1))
        process.restart(signal.SIGKILL)
        assert process.restored == 1
        with _pika(process) as conn:
            ch = conn.channel()
            ch.queue_declare("d.durable", durable=True)  # declared again: adopted
            _, props, body = ch.basic_get("d.durable", auto_ack=True)
            assert body == b"kept?" and props.delivery_mode == 2
            assert ch.basic_get("d.durable")[2] is None
            ch.queue_declare("d.transient")
            assert ch.basic_get("d.transient")[2] is None


def test_a_stopping_broker_closes_0_9_1_connections_with_320() -> None:
    process = BrokerProcess()
    try:
        conn = _pika(process)
        conn.channel().queue_declare("s.q")
        process.stop()
        deadline = time.monotonic() + WAIT
        with pytest.raises(pika.exceptions.ConnectionClosedByBroker) as info:
            while time.monotonic() < deadline:
                conn.process_data_events(time_limit=0.2)
        assert info.value.reply_code == 320
    finally:
        process.stop()
