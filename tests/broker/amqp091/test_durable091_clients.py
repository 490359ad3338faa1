"""Durability end to end, the way a user gets it (issue 19; docs/amqp091.rst,
"Durability"): ``amqp-sansio broker --store DIR --vhost v`` (the broker's defaults
otherwise, its port chosen by the system; without ``--store`` nothing is kept), pika's
BlockingConnection with its defaults declares durable and transient exchanges, queues and
bindings in ``/`` and in ``v`` and publishes persistent and transient messages; the broker
is stopped with SIGTERM and started again on the same store: the durable topology and the
persistent messages of durable queues are there, the transient ones and the acked
messages are not, and the messages unacked when it stopped come back ``redelivered``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest
from support.broker_process import BrokerProcess

VHOSTS = ["/", "v"]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess("--vhost", "v", store=tmp_path / "store") as process:
        yield process


def _pika(broker: BrokerProcess, vhost: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(
        pika.ConnectionParameters("127.0.0.1", broker.port, virtual_host=vhost)
    )


def _persistent(**fields: Any) -> pika.BasicProperties:
    return pika.BasicProperties(delivery_mode=2, **fields)


def _declare(ch: Any) -> None:
    """Durable and transient exchanges, queues and bindings."""
    ch.exchange_declare("events", "topic", durable=True)
    ch.exchange_declare("dlx", "fanout", durable=True)
    ch.exchange_declare("fan", "fanout", durable=True)
    ch.exchange_declare("temp-x", "fanout")  # transient
    ch.queue_declare(
        "orders",
        durable=True,
        arguments={"x-max-length": 100, "x-dead-letter-exchange": "dlx"},
    )
    ch.queue_declare("dlq", durable=True)
    ch.queue_declare("scratch")  # transient
    ch.queue_bind("orders", "events", routing_key="*.order")
    ch.queue_bind("dlq", "dlx")
    ch.exchange_bind(destination="events", source="fan", routing_key="#")
    ch.queue_bind("scratch", "events", routing_key="#")  # to a transient queue
    ch.queue_bind("orders", "temp-x")  # from a transient exchange


def _gone(conn: pika.BlockingConnection, call: str, *args: Any, **kwargs: Any) -> None:
    """A passive declare of something that is not there: 404 NOT_FOUND on its channel."""
    ch = conn.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        getattr(ch, call)(*args, passive=True, **kwargs)
    assert refused.value.reply_code == 404


def _get_all(ch: Any, queue: str) -> list[tuple[bytes, bool, int | None]]:
    """Every message ``basic.get`` takes from ``queue`` (acked)."""
    got = []
    while True:
        method, props, body = ch.basic_get(queue)
        if method is None:
            return got
        got.append((body, method.redelivered, props.delivery_mode))
        ch.basic_ack(method.delivery_tag)


def test_durable_topology_and_messages_survive_a_restart(broker: BrokerProcess) -> None:
    assert broker.restored == 0
    for vhost in VHOSTS:
        with _pika(broker, vhost) as conn:
            ch = conn.channel()
            ch.confirm_delivery()  # (a confirmed persistent message is on disk)
            _declare(ch)
            ch.basic_publish("events", "eu.order", b"o1", _persistent(message_id="1"))
            ch.basic_publish("fan", "us.order", b"o2", _persistent())  # through fan->events
            ch.basic_publish("events", "eu.order", b"t1", pika.BasicProperties(delivery_mode=1))
            ch.basic_publish("", "dlq", b"d1", _persistent())
            # a persistent message in a transient queue is not kept either
            ch.basic_publish("", "scratch", b"s1", _persistent())
            # acked before the stop: must not come back
            ch.basic_publish("", "dlq", b"d2", _persistent())
            method, _, body = ch.basic_get("dlq")
            assert body == b"d1"
            ch.basic_ack(method.delivery_tag)
            ch.queue_declare("dlq", passive=True)  # (a round trip: the ack was taken)
    assert broker.restart() == 0  # SIGTERM, and started again on the same store
    # per vhost: o1, o2 in orders; d2 in dlq
    assert broker.restored == 6

    for vhost in VHOSTS:
        with _pika(broker, vhost) as conn:
            ch = conn.channel()
            for exchange, kind in (("events", "topic"), ("dlx", "fanout"), ("fan", "fanout")):
                ch.exchange_declare(exchange, kind, passive=True)
            assert ch.queue_declare("orders", passive=True).method.message_count == 2
            assert ch.queue_declare("dlq", passive=True).method.message_count == 1
            _gone(conn, "exchange_declare", "temp-x")
            _gone(conn, "queue_declare", "scratch")
            # redeclaring with the same arguments is equivalent; with others, 406
            ch.queue_declare(
                "orders",
                durable=True,
                arguments={"x-max-length": 100, "x-dead-letter-exchange": "dlx"},
            )
            other = conn.channel()
            with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
                other.queue_declare("orders", durable=True)
            assert refused.value.reply_code == 406
            got = _get_all(ch, "orders")
            assert got == [(b"o1", True, 2), (b"o2", True, 2)]
            assert _get_all(ch, "dlq") == [(b"d2", True, 2)]
            # the bindings route again: fan -> events -> orders; events -> scratch is gone
            ch.confirm_delivery()
            ch.basic_publish("fan", "eu.order", b"o3", _persistent())
            ch.basic_publish("events", "x.other", b"nowhere", _persistent())
            assert _get_all(ch, "orders") == [(b"o3", False, 2)]
            # x-dead-letter-exchange acts again: a rejected message goes to dlx -> dlq
            ch.basic_publish("", "orders", b"bad", _persistent())
            method, _, _ = ch.basic_get("orders")
            ch.basic_reject(method.delivery_tag, requeue=False)
            assert [m[0] for m in _get_all(ch, "dlq")] == [b"bad"]


def test_a_restart_midway_through_consumption(broker: BrokerProcess) -> None:
    for vhost in VHOSTS:
        with _pika(broker, vhost) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            ch.queue_declare("work", durable=True)
            for i in range(8):
                ch.basic_publish("", "work", b"%d" % i, _persistent())
    consumers = []
    for vhost in VHOSTS:
        conn = _pika(broker, vhost)
        ch = conn.channel()
        ch.basic_qos(prefetch_count=5)
        deliveries = []
        for method, _, body in ch.consume("work", inactivity_timeout=5):
            assert method is not None, f"only {len(deliveries)} deliveries came"
            deliveries.append((method, body))
            if len(deliveries) == 5:
                break
        assert [body for _, body in deliveries] == [b"0", b"1", b"2", b"3", b"4"]
        for method, body in deliveries:
            if body in (b"1", b"3"):
                ch.basic_ack(method.delivery_tag)
        conn.channel().queue_declare("work", passive=True)  # (the acks were taken)
        consumers.append(conn)
    # stopped with 1 and 3 acked, 0, 2 and 4 out unacked, 5 to 7 waiting
    assert broker.restart() == 0
    assert broker.restored == 2 * 6
    for conn in consumers:  # (their broker went away)
        with pytest.raises(pika.exceptions.AMQPError):
            conn.process_data_events(time_limit=1)
            conn.channel()
    for vhost in VHOSTS:
        with _pika(broker, vhost) as conn:
            got = _get_all(conn.channel(), "work")
            assert [body for body, _, _ in got] == [b"0", b"2", b"4", b"5", b"6", b"7"]
            assert all(redelivered for _, redelivered, _ in got)
    assert broker.restart() == 0
    assert broker.restored == 0  # nothing acked came back


def test_deleted_topology_stays_deleted(broker: BrokerProcess) -> None:
    for vhost in VHOSTS:
        with _pika(broker, vhost) as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            _declare(ch)
            ch.basic_publish("", "orders", b"x", _persistent())
            ch.queue_unbind("dlq", "dlx")
            ch.exchange_delete("fan")
            ch.queue_delete("orders")
    assert broker.restart() == 0
    assert broker.restored == 0
    for vhost in VHOSTS:
        with _pika(broker, vhost) as conn:
            _gone(conn, "queue_declare", "orders")
            _gone(conn, "exchange_declare", "fan")
            ch = conn.channel()
            ch.confirm_delivery()
            ch.exchange_declare("events", "topic", passive=True)
            ch.basic_publish("dlx", "", b"unbound", _persistent())
            assert _get_all(ch, "dlq") == []  # its binding to dlx was unbound


def test_the_broker_with_its_defaults_keeps_nothing_across_a_restart() -> None:
    """``amqp-sansio broker`` with no options holds everything in memory (docs/defaults.rst):
    a durable queue and its persistent message, declared with pika's defaults, are gone
    after a restart, and the broker says it restored nothing from a store."""
    with BrokerProcess() as broker:
        assert broker.restored is None
        with _pika(broker, "/") as conn:
            ch = conn.channel()
            ch.confirm_delivery()
            ch.queue_declare("orders", durable=True)
            ch.basic_publish("", "orders", b"kept?", _persistent())
            assert ch.queue_declare("orders", passive=True).method.message_count == 1
        assert broker.restart() == 0
        assert broker.restored is None
        with _pika(broker, "/") as conn:
            _gone(conn, "queue_declare", "orders")
