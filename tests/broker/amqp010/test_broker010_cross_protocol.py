"""Across protocols, through our broker started as a user starts it (``amqp-sansio broker``):
a message published with 0-10 (our 0-10 client) consumed with 1.0 (our 1.0 client) and with
0-9-1 (our 0-9-1 client and pika), and back: published with 1.0 and with 0-9-1, consumed
with 0-10. Each property compared field by field with the mapping docs/amqp010.rst
documents ("Mapping to 1.0"; 0-9-1's side is docs/amqp091.rst's "Mapping to AMQP 1.0"):
content-type, content-encoding, message-id, correlation-id, reply-to, user-id, priority,
durable / delivery-mode, ttl / expiration, application headers of several types, and the
body's octets."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pika
import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess

import amqp_sansio as a
from amqp_sansio.amqp091 import BasicProperties
from amqp_sansio.broker.amqp010.mapping import from_amqp10
from amqp_sansio.codec import amqp010 as codec
from amqp_sansio.definitions import amqp010 as spec

WAIT = 10.0

#: A timestamp, seconds (0-10, 0-9-1) or milliseconds (1.0's creation-time).
STAMP = 1_700_000_000

MESSAGE_ID = uuid.UUID("6f1c1b0e-2a52-4b9c-9d43-3c8f0e5d7a11")

#: Application headers of several types, each one 1.0's application-properties can hold.
HEADERS: dict[str, Any] = {
    "text": "héllo",
    "count": 42,
    "negative": -7,
    "big": 2**40,
    "ratio": 1.5,
    "yes": True,
    "no": False,
}

#: What pika reads and writes of them: not the float (pika writes none, and reads a
#: double as an int: its data.py).
PIKA_HEADERS = {k: v for k, v in HEADERS.items() if not isinstance(v, float)}

#: The body: every octet value, so that nothing is read as text on the way.
BODY = bytes(range(256)) * 4


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def url010(broker: BrokerProcess) -> str:
    """The broker's URL with guest's credentials: the user-id a message carries must be the
    connection's user."""
    return broker.url.replace("amqp://", "amqp://guest:guest@")


def publish010(broker: BrokerProcess, queue: str, *, header: tuple[spec.Struct, ...]) -> None:
    """``message.transfer`` of :data:`BODY` with ``header`` to the default exchange, the
    queue declared first, with our 0-10 client."""
    with (
        sockets.connect(url010(broker), protocol="0-10", timeout=WAIT) as conn,
        conn.session("publisher") as session,
    ):
        session.queue_declare(queue)
        transfer = spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0)
        session.command(transfer, header, BODY)


def consume010(broker: BrokerProcess, queue: str) -> Any:
    """The next message on ``queue``, received and accepted with our 0-10 client."""
    with (
        sockets.connect(url010(broker), protocol="0-10", timeout=WAIT) as conn,
        conn.session("consumer") as session,
    ):
        session.queue_declare(queue)
        session.subscribe(queue, credit=1)
        delivery = session.receive(queue, timeout=WAIT)
        session.accept(delivery)
        session.cancel(queue)
        return delivery


def full_header(queue: str, headers: dict[str, Any] = HEADERS) -> tuple[spec.Struct, ...]:
    """A 0-10 header with every property the mapping carries."""
    return (
        spec.DeliveryProperties(
            routing_key=queue, delivery_mode=2, priority=7, ttl=60_000, timestamp=STAMP
        ),
        spec.MessageProperties(
            content_type="application/octet-stream",
            content_encoding="identity",
            message_id=MESSAGE_ID,
            correlation_id=b"corr-1",
            reply_to=spec.ReplyTo(exchange="", routing_key="the.replies"),
            user_id=b"guest",
            application_headers=dict(headers),
        ),
    )


# -- 0-10 to 1.0 and 0-9-1 ---------------------------------------------------------------


def test_0_10_to_our_1_0_client(broker: BrokerProcess) -> None:
    publish010(broker, "x.010.to.10", header=full_header("x.010.to.10"))
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        delivery = conn.receiver("x.010.to.10", credit=1).receive(timeout=WAIT)
        assert delivery is not None
        delivery.accept()
    message = delivery.message
    assert message.body == a.Data(BODY)
    header, props = message.header, message.properties
    assert header is not None and props is not None
    assert header.durable is True
    assert header.priority == 7
    assert header.ttl == 60_000
    assert props.creation_time == STAMP * 1000
    assert props.content_type == "application/octet-stream"
    assert props.content_encoding == "identity"
    assert props.message_id == MESSAGE_ID
    assert props.correlation_id == "corr-1"  # UTF-8 octets: a string
    assert props.reply_to == "the.replies"  # the default exchange's: the key alone
    assert props.user_id == b"guest"
    assert props.subject is None  # only qpid.subject is a subject; the key is annotated
    assert message.application_properties == HEADERS
    annotations = message.message_annotations or {}
    assert annotations[a.Symbol("x-exchange")] == ""
    assert annotations[a.Symbol("x-routing-key")] == "x.010.to.10"


def test_0_10_without_properties_to_1_0(broker: BrokerProcess) -> None:
    """A message with only its routing key: not durable, no properties made up."""
    publish010(broker, "x.010.bare", header=(spec.DeliveryProperties(routing_key="x.010.bare"),))
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        delivery = conn.receiver("x.010.bare", credit=1).receive(timeout=WAIT)
        assert delivery is not None
        delivery.accept()
    message = delivery.message
    assert message.body == a.Data(BODY)
    assert message.header is None or not message.header.durable
    props = message.properties
    for field in (
        "message_id",
        "user_id",
        "reply_to",
        "correlation_id",
        "content_type",
        "content_encoding",
    ):
        assert props is None or getattr(props, field) is None, field
    assert not message.application_properties


def _check_091(props: BasicProperties | Any, body: bytes, headers: dict[str, Any]) -> None:
    """A 0-9-1 reading of :func:`full_header`'s message: 0-10 to 1.0 (docs/amqp010.rst),
    then 1.0 to 0-9-1 (docs/amqp091.rst: a uuid message-id is ``urn:uuid:...``; the
    correlation-id, UTF-8 octets, is a 1.0 string and so 0-9-1's)."""
    assert body == BODY
    assert props.content_type == "application/octet-stream"
    assert props.content_encoding == "identity"
    assert props.delivery_mode == 2
    assert props.priority == 7
    assert props.expiration == "60000"
    assert props.timestamp == STAMP
    assert props.message_id == f"urn:uuid:{MESSAGE_ID}"
    assert props.reply_to == "the.replies"
    assert props.user_id == "guest"
    assert props.correlation_id == "corr-1"
    assert props.headers == headers


def test_0_10_to_our_0_9_1_client(broker: BrokerProcess) -> None:
    publish010(broker, "x.010.to.091", header=full_header("x.010.to.091"))
    with sockets.connect(broker.url, protocol="0-9-1", timeout=WAIT) as conn, conn.channel() as ch:
        delivery = ch.basic_get("x.010.to.091", no_ack=True)
    assert delivery is not None
    assert delivery.exchange == "" and delivery.routing_key == "x.010.to.091"
    _check_091(delivery.properties, delivery.body, HEADERS)


def test_0_10_to_pika(broker: BrokerProcess) -> None:
    publish010(broker, "x.010.to.pika", header=full_header("x.010.to.pika", PIKA_HEADERS))
    params = pika.ConnectionParameters("127.0.0.1", broker.port)
    with pika.BlockingConnection(params) as conn:
        method, props, body = conn.channel().basic_get("x.010.to.pika", auto_ack=True)
    assert method is not None and method.routing_key == "x.010.to.pika"
    _check_091(props, body, PIKA_HEADERS)


# -- 1.0 and 0-9-1 to 0-10 ---------------------------------------------------------------


def _check_010(delivery: Any, *, user_id: bytes | None, headers: dict[str, Any] = HEADERS) -> None:
    assert delivery.body == BODY
    dp, mp = delivery.delivery_properties, delivery.message_properties
    assert dp is not None and mp is not None
    assert dp.delivery_mode == 2
    assert dp.priority == 7
    assert dp.ttl == 60_000
    assert dp.timestamp == STAMP
    assert mp.content_type == "application/octet-stream"
    assert mp.content_encoding == "identity"
    assert mp.message_id == MESSAGE_ID
    assert mp.correlation_id == b"corr-1"
    assert mp.reply_to is not None
    assert (mp.reply_to.exchange or "", mp.reply_to.routing_key) == ("", "the.replies")
    assert mp.user_id == user_id
    assert delivery.headers == headers


def test_our_1_0_client_to_0_10(broker: BrokerProcess) -> None:
    queue = "x.10.to.010"
    with sockets.connect(url010(broker), timeout=WAIT) as conn:
        conn.sender(queue).send(
            a.Message(
                header=a.Header(durable=True, priority=7, ttl=60_000),
                properties=a.Properties(
                    message_id=MESSAGE_ID,
                    user_id=b"guest",
                    reply_to="the.replies",
                    correlation_id=b"corr-1",
                    content_type="application/octet-stream",
                    content_encoding="identity",
                    creation_time=STAMP * 1000,
                ),
                application_properties=dict(HEADERS),
                body=BODY,
            )
        )
    _check_010(consume010(broker, queue), user_id=b"guest")


def test_pika_to_0_10(broker: BrokerProcess) -> None:
    """0-9-1's correlation-id is text (``corr-1``, a 1.0 string); a 0-10 correlation-id is
    octets: its UTF-8. The message-id ``urn:uuid:...`` is 1.0's uuid, 0-10's uuid."""
    queue = "x.pika.to.010"
    params = pika.ConnectionParameters(
        "127.0.0.1", broker.port, credentials=pika.PlainCredentials("guest", "guest")
    )
    with pika.BlockingConnection(params) as conn:
        ch = conn.channel()
        ch.queue_declare(queue)
        ch.basic_publish(
            "",
            queue,
            BODY,
            pika.BasicProperties(
                content_type="application/octet-stream",
                content_encoding="identity",
                delivery_mode=2,
                priority=7,
                expiration="60000",
                timestamp=STAMP,
                message_id=f"urn:uuid:{MESSAGE_ID}",
                correlation_id="corr-1",
                reply_to="the.replies",
                user_id="guest",
                headers=dict(PIKA_HEADERS),
            ),
        )
    _check_010(consume010(broker, queue), user_id=b"guest", headers=PIKA_HEADERS)


def test_our_0_9_1_client_to_0_10(broker: BrokerProcess) -> None:
    queue = "x.091.to.010"
    with (
        sockets.connect(url010(broker), protocol="0-9-1", timeout=WAIT) as conn,
        conn.channel() as ch,
    ):
        ch.queue_declare(queue)
        ch.basic_publish(
            "",
            queue,
            BODY,
            properties=BasicProperties(
                content_type="application/octet-stream",
                content_encoding="identity",
                delivery_mode=2,
                priority=7,
                expiration="60000",
                timestamp=STAMP,
                message_id=f"urn:uuid:{MESSAGE_ID}",
                correlation_id="corr-1",
                reply_to="the.replies",
                user_id="guest",
                headers=dict(HEADERS),
            ),
        )
    _check_010(consume010(broker, queue), user_id=b"guest")


def test_0_10_round_trip_keeps_every_field(broker: BrokerProcess) -> None:
    """0-10 in, 0-10 out: what the 1.0 form in between keeps."""
    publish010(broker, "x.010.to.010", header=full_header("x.010.to.010"))
    delivery = consume010(broker, "x.010.to.010")
    _check_010(delivery, user_id=b"guest")
    assert delivery.routing_key == "x.010.to.010"


def test_what_1_0_cannot_hold_as_0_10_has_it(broker: BrokerProcess) -> None:
    """0-10 to 1.0, the fields without a 1.0 place of their own: app-id (the application
    property ``x-amqp-0-10.app-id``), a correlation-id not UTF-8 (binary), a reply-to on an
    exchange (``exchange/key``), headers holding a map and a list (the message annotation
    ``x-amqp-0-10-headers``), ``qpid.subject`` (the subject); and back to 0-10 unchanged."""
    queue = "x.010.edges"
    header = (
        spec.DeliveryProperties(routing_key=queue),
        spec.MessageProperties(
            app_id=b"the-app",
            correlation_id=b"\xff\x00\xfe",
            reply_to=spec.ReplyTo(exchange="amq.topic", routing_key="answers.here"),
            application_headers={
                "nested": {"k": 1, "s": "v"},
                "items": [1, "two"],
                "qpid.subject": "the-subject",
                "plain": 3,
            },
        ),
    )
    publish010(broker, queue, header=header)
    publish010(broker, queue, header=header)
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        delivery = conn.receiver(queue, credit=1).receive(timeout=WAIT)
        assert delivery is not None
        delivery.accept()
    message = delivery.message
    props = message.properties
    assert props is not None
    assert props.correlation_id == b"\xff\x00\xfe"
    assert props.reply_to == "amq.topic/answers.here"
    assert props.subject == "the-subject"
    assert message.application_properties == {"plain": 3, "x-amqp-0-10.app-id": "the-app"}
    annotations = message.message_annotations or {}
    assert annotations[a.Symbol("x-amqp-0-10-headers")] == {
        "nested": {"k": 1, "s": "v"},
        "items": [1, "two"],
    }

    back = consume010(broker, queue)
    mp = back.message_properties
    assert mp.app_id == b"the-app"
    assert mp.correlation_id == b"\xff\x00\xfe"
    assert (mp.reply_to.exchange, mp.reply_to.routing_key) == ("amq.topic", "answers.here")
    assert back.headers == {
        "nested": {"k": 1, "s": "v"},
        "items": [1, "two"],
        "qpid.subject": "the-subject",
        "plain": 3,
    }


def test_what_0_10_cannot_hold_as_1_0_has_it(broker: BrokerProcess) -> None:
    """1.0 to 0-10: a message-id that is not a uuid (the application header
    ``x-amqp-1.0-message-id``), a subject (``qpid.subject``, which qpid.messaging reads as
    its subject), a string body (its UTF-8, ``text/plain``), a map body (``amqp/map``)."""
    queue = "x.10.edges"
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        sender = conn.sender(queue)
        sender.send(
            a.Message(
                properties=a.Properties(message_id="order-17", subject="orders.new"),
                body=a.AmqpValue("naïve text"),
            )
        )
        sender.send(a.Message(body=a.AmqpValue({"a": 1, "b": "two"})))
    first = consume010(broker, queue)
    assert first.body == "naïve text".encode()
    assert first.content_type == "text/plain"
    assert first.message_id is None
    assert first.headers == {"x-amqp-1.0-message-id": "order-17", "qpid.subject": "orders.new"}
    second = consume010(broker, queue)
    assert second.content_type == "amqp/map"
    assert codec.decode("map", second.body) == {"a": 1, "b": "two"}


def test_0_10_through_an_exchange_to_0_9_1(broker: BrokerProcess) -> None:
    """Published with 0-10 to ``amq.topic``: a 0-9-1 consumer of a bound queue reads the
    exchange and routing key the message was published with."""
    with (
        sockets.connect(broker.url, protocol="0-9-1", timeout=WAIT) as conn,
        conn.channel() as ch,
    ):
        ch.queue_declare("x.010.topic")
        ch.queue_bind("x.010.topic", "amq.topic", routing_key="t.#")
        with (
            sockets.connect(url010(broker), protocol="0-10", timeout=WAIT) as c010,
            c010.session("topic") as session,
        ):
            session.send(b"routed", destination="amq.topic", routing_key="t.x")
        delivery = ch.basic_get("x.010.topic", no_ack=True)
    assert delivery is not None and delivery.body == b"routed"
    assert (delivery.exchange, delivery.routing_key) == ("amq.topic", "t.x")


def test_what_the_mapping_leaves_out(broker: BrokerProcess) -> None:
    """docs/amqp010.rst, "Mapping to 1.0", column "lost": delivery-mode 1 and none are the
    same (not durable); priority 4, 1.0's default, is left out on the way back from 1.0; an
    absolute expiration (seconds) is 1.0's absolute-expiry-time (milliseconds) and back. A
    0-10 subscriber gets the message as it was published: nothing is lost."""
    queue = "x.010.lost"
    expires = int(time.time()) + 3600
    header = (
        spec.DeliveryProperties(routing_key=queue, delivery_mode=1, priority=4, expiration=expires),
    )
    publish010(broker, queue, header=header)
    publish010(broker, queue, header=header)
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        delivery = conn.receiver(queue, credit=1).receive(timeout=WAIT)
        assert delivery is not None
        delivery.accept()
    message = delivery.message
    assert message.header is not None and not message.header.durable
    assert message.header.priority == 4
    assert message.properties is not None
    assert message.properties.absolute_expiry_time == expires * 1000
    mapped, _ = from_amqp10(message.encode(), redelivered=False)
    back = mapped[0]
    assert isinstance(back, spec.DeliveryProperties)
    assert back.delivery_mode is None and back.priority is None
    assert back.expiration == expires
    passed = consume010(broker, queue).delivery_properties
    assert (passed.delivery_mode, passed.priority, passed.expiration) == (1, 4, expires)
    assert (passed.exchange, passed.routing_key) == ("", queue)
