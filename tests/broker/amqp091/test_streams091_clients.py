"""Streams over AMQP 0-9-1 with pika (the reference 0-9-1 client, its defaults) against our
broker, started as a user starts it (``amqp-sansio broker``, defaults), and against RabbitMQ
(``AMQP_SANSIO_RABBITMQ_URL``; skipped, saying why, when it is not set or not reachable):
the same behaviour from both (RabbitMQ's "Streams" guide). Then across protocols on our
broker: a stream written with 0-9-1 is read with 1.0 by offset, and back
(docs/amqp091.rst, "Streams")."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pika.exceptions
import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import WAIT, BrokerProcess
from support.rabbitmq import rabbitmq_url

import amqp_sansio as a
import amqp_sansio.codec.amqp10
from amqp_sansio.broker import OFFSET_ANNOTATION, OFFSET_FILTER

STREAM = {"x-queue-type": "stream"}


@pytest.fixture(scope="module")
def ours() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


@pytest.fixture(params=["ours", "rabbitmq"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "ours":
        process: BrokerProcess = request.getfixturevalue("ours")
        return f"amqp://guest:guest@127.0.0.1:{process.port}"
    return rabbitmq_url()


def _pika(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


@pytest.fixture
def stream(url: str) -> Iterator[str]:
    name = f"amqp-sansio-s091-{uuid.uuid4().hex[:10]}"
    with _pika(url) as conn:
        conn.channel().queue_declare(name, durable=True, arguments=STREAM)
    try:
        yield name
    finally:
        with _pika(url) as conn:
            conn.channel().queue_delete(name)


def _publish(url: str, name: str, count: int) -> None:
    with _pika(url) as conn:
        ch = conn.channel()
        ch.confirm_delivery()
        for i in range(count):
            ch.basic_publish("", name, b"m%d" % i, pika.BasicProperties(message_id=f"id{i}"))


def _read(url: str, name: str, offset: Any, count: int, prefetch: int = 10) -> list[Any]:
    """(offset header, body, message-id) of ``count`` deliveries from ``offset``, acked."""
    got: list[Any] = []
    with _pika(url) as conn:
        ch = conn.channel()
        ch.basic_qos(prefetch_count=prefetch)
        for method, props, body in ch.consume(
            name, arguments={"x-stream-offset": offset}, inactivity_timeout=WAIT
        ):
            assert method is not None, f"only {len(got)} of {count} messages came"
            got.append((props.headers["x-stream-offset"], body, props.message_id))
            ch.basic_ack(method.delivery_tag)
            if len(got) == count:
                break
        ch.cancel()
    return got


def test_pika_writes_and_reads_a_stream_by_offset(url: str, stream: str) -> None:
    _publish(url, stream, 10)
    expected = [(i, b"m%d" % i, f"id{i}") for i in range(10)]
    assert _read(url, stream, "first", 10, prefetch=3) == expected
    assert _read(url, stream, 6, 4) == expected[6:]
    assert _read(url, stream, "last", 1) == expected[9:]
    # reading took nothing: all of it again
    assert _read(url, stream, "first", 10) == expected


@pytest.mark.parametrize(
    ("call", "code"),
    [
        (lambda ch, s: ch.basic_get(s), 540),
        (lambda ch, s: ch.queue_purge(s), 540),
        (lambda ch, s: (ch.basic_qos(prefetch_count=5), ch.basic_consume(s, print, True)), 540),
        (lambda ch, s: ch.basic_consume(s, print), 406),  # no prefetch
        (lambda ch, s: ch.queue_declare(s + "-t", arguments=STREAM), 406),  # not durable
        (lambda ch, s: ch.queue_declare(s, durable=True), 406),  # no x-queue-type
    ],
)
def test_what_pika_is_refused(url: str, stream: str, call: Any, code: int) -> None:
    with _pika(url) as conn:
        ch = conn.channel()
        with pytest.raises(pika.exceptions.AMQPError) as raised:
            call(ch, stream)
            conn.process_data_events(1)
        assert raised.value.args[0] == code


def test_0_9_1_written_is_read_with_1_0_by_offset(ours: BrokerProcess) -> None:
    url = f"amqp://guest:guest@127.0.0.1:{ours.port}"
    name = f"s091-cross-{uuid.uuid4().hex[:8]}"
    with _pika(url) as conn:
        ch = conn.channel()
        ch.queue_declare(name, durable=True, arguments=STREAM)
    _publish(url, name, 5)
    with sockets.connect(ours.url, timeout=WAIT) as conn10:
        receiver = conn10.receiver(
            name, credit=10, filters={OFFSET_FILTER: a.codec.amqp10.ULong(2)}
        )
        got = []
        for _ in range(3):
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None
            message = delivery.message
            delivery.accept()
            assert message.properties is not None
            got.append(
                (
                    (message.message_annotations or {})[OFFSET_ANNOTATION],
                    message.body,
                    message.properties.message_id,
                )
            )
        assert got == [(i, a.Data(b"m%d" % i), f"id{i}") for i in (2, 3, 4)]
        # and back: 1.0 writes to the stream, 0-9-1 reads it on from offset 5
        sender = conn10.sender(name)
        sender.send(a.Message(body=a.Data(b"from 1.0"), properties=a.Properties(message_id="x")))
    assert _read(url, name, 5, 1) == [(5, b"from 1.0", "x")]
    assert _read(url, name, "first", 6)[0] == (0, b"m0", "id0")
    with _pika(url) as conn:
        conn.channel().queue_delete(name)
