"""The 0-10 message mapping to 1.0 and back (amqp_sansio.broker.amqp010.mapping, as Qpid's
broker maps them), field by field, and across protocols through the broker: a 0-9-1 or
1.0 publish read by a 0-10 subscriber, a 0-10 transfer read as 1.0."""

from __future__ import annotations

import datetime
import uuid

from support.amqp010.wire import Client

from amqp_sansio.broker import Broker
from amqp_sansio.broker.amqp010.mapping import (
    APP_ID_PROPERTY,
    COMPLEX_HEADERS,
    MESSAGE_ID_HEADER,
    SUBJECT_HEADER,
    from_amqp10,
    headers_of,
    to_amqp10,
)
from amqp_sansio.codec import amqp010 as c010
from amqp_sansio.codec import amqp10 as t10
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.definitions.amqp091.spec import BasicProperties
from amqp_sansio.definitions.amqp10.message import Message
from amqp_sansio.definitions.amqp10.messaging import (
    AmqpSequence,
    AmqpValue,
    Data,
    Header,
    Properties,
)

ID = uuid.UUID("12345678-1234-5678-1234-567812345678")


def test_every_field_there_and_back() -> None:
    header = (
        spec.DeliveryProperties(
            priority=7,
            delivery_mode=2,
            ttl=5000,
            timestamp=1_700_000_000,
            expiration=1_800_000_000,
            routing_key="k",
            redelivered=True,
        ),
        spec.MessageProperties(
            message_id=ID,
            correlation_id=b"corr",
            reply_to=spec.ReplyTo(exchange="amq.direct", routing_key="back"),
            content_type="text/plain",
            content_encoding="utf-8",
            user_id=b"guest",
            app_id=b"app",
            application_headers={
                "n": 1,
                "s": "x",
                "typed": c010.Typed(c010.TypeCode.UINT16, 5),
                "nested": {"a": [1, 2]},
                "array": c010.Array(c010.TypeCode.INT32, (1, 2)),
                SUBJECT_HEADER: "the.subject",
            },
        ),
    )
    data = to_amqp10(header, b"body", exchange="amq.topic", routing_key="k")
    message = Message.decode(data)
    assert message.header == Header(durable=True, priority=7, ttl=5000)
    props = message.properties
    assert props is not None and props.message_id == ID and props.correlation_id == "corr"
    assert props.reply_to == "amq.direct/back" and props.subject == "the.subject"
    assert (
        props.creation_time == 1_700_000_000_000 and props.absolute_expiry_time == 1_800_000_000_000
    )
    assert props.content_type == "text/plain" and props.user_id == b"guest"
    assert message.application_properties == {"n": 1, "s": "x", "typed": 5, APP_ID_PROPERTY: "app"}
    annotations = message.message_annotations or {}
    assert annotations[COMPLEX_HEADERS] == {"nested": {"a": [1, 2]}, "array": [1, 2]}
    back, body = from_amqp10(data, redelivered=False)
    assert body == b"body"
    delivery, mprops = back
    assert isinstance(delivery, spec.DeliveryProperties) and isinstance(
        mprops, spec.MessageProperties
    )
    assert (delivery.priority, delivery.delivery_mode, delivery.ttl) == (7, 2, 5000)
    assert (delivery.timestamp, delivery.expiration) == (1_700_000_000, 1_800_000_000)
    assert (delivery.exchange, delivery.routing_key, delivery.redelivered) == (
        "amq.topic",
        "k",
        False,
    )
    assert mprops.message_id == ID and mprops.correlation_id == b"corr"
    assert mprops.reply_to == spec.ReplyTo(exchange="amq.direct", routing_key="back")
    assert mprops.app_id == b"app" and mprops.content_length == 4
    assert mprops.application_headers == {
        "n": 1,
        "s": "x",
        "typed": 5,
        "nested": {"a": [1, 2]},
        "array": [1, 2],
        SUBJECT_HEADER: "the.subject",
    }
    assert headers_of(header) is not None and headers_of((delivery,)) is None


def test_a_bare_transfer_and_odd_correlation_ids() -> None:
    data = to_amqp10((), b"", exchange="", routing_key="")
    (delivery, props), body = from_amqp10(data, redelivered=True)
    assert body == b"" and delivery.redelivered and delivery.routing_key is None  # type: ignore[attr-defined]
    assert props.application_headers is None  # type: ignore[attr-defined]
    raw = to_amqp10(
        (
            spec.MessageProperties(
                correlation_id=b"\xff\xfe", reply_to=spec.ReplyTo(routing_key="r")
            ),
        ),
        b"x",
        exchange="",
        routing_key="q",
    )
    message = Message.decode(raw)
    assert message.properties.correlation_id == b"\xff\xfe"  # type: ignore[union-attr]
    assert message.properties.reply_to == "r"  # type: ignore[union-attr]
    (_, props), _ = from_amqp10(raw, redelivered=False)
    assert props.reply_to == spec.ReplyTo(routing_key="r")  # type: ignore[attr-defined]


def test_bodies_and_properties_a_1_0_sender_makes() -> None:
    cases = [
        (AmqpValue("text"), b"text", "text/plain"),
        (AmqpValue(b"raw"), b"raw", None),
        (AmqpValue({"k": 1}), c010.encode("map", {"k": 1}), "amqp/map"),
        (AmqpValue([1, "a"]), c010.encode("list", [1, "a"]), "amqp/list"),
        ((Data(b"a"), Data(b"b")), b"ab", None),
    ]
    for section, body, content_type in cases:
        data = Message(body=section).encode()
        (_, props), got = from_amqp10(data, redelivered=False, routing_key="q")
        assert got == body and props.content_type == content_type, section  # type: ignore[attr-defined]
    for section in (AmqpValue(7), AmqpSequence([1, 2])):
        (_, props), got = from_amqp10(Message(body=section).encode(), redelivered=False)
        assert props.content_type == "application/x-amqp-1.0"  # type: ignore[attr-defined]
        assert Message.decode(got).body == section
    (_, props), got = from_amqp10(Message(properties=Properties()).encode(), redelivered=False)
    assert got == b""  # (no body section)
    when = t10.Timestamp(1_700_000_000_000)
    message = Message(
        header=Header(priority=4),
        properties=Properties(
            message_id="not-a-uuid",
            correlation_id=ID,
            subject="subj",
            content_type="application/json",
        ),
        application_properties={
            "when": when,
            "f": t10.Float(1.5),
            "b": b"x",
            "sym": t10.Symbol("s"),
        },
        body=AmqpValue("{}"),
    )
    (delivery, props), got = from_amqp10(message.encode(), redelivered=False)
    assert delivery.priority is None  # type: ignore[attr-defined]
    assert props.content_type == "application/json" and got == b"{}"  # type: ignore[attr-defined]
    assert props.message_id is None and props.correlation_id == ID.bytes  # type: ignore[attr-defined]
    headers = props.application_headers  # type: ignore[attr-defined]
    assert headers[MESSAGE_ID_HEADER] == "not-a-uuid" and headers[SUBJECT_HEADER] == "subj"
    assert headers["when"] == datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc)
    assert headers["f"] == 1.5 and headers["b"] == b"x" and headers["sym"] == "s"
    (_, props), _ = from_amqp10(
        Message(properties=Properties(correlation_id=7, message_id=9)).encode(), redelivered=False
    )
    assert props.correlation_id == b"7" and props.application_headers == {MESSAGE_ID_HEADER: 9}  # type: ignore[attr-defined]


def test_a_0_9_1_publish_read_by_a_0_10_subscriber() -> None:
    broker = Broker()
    c = Client(broker)
    c.attach()
    c.ok(spec.QueueDeclare(queue="q"))
    broker.vhosts["/"].publish(
        "",
        "q",
        BasicProperties(content_type="text/plain", headers={"h": 1}, delivery_mode=2),
        b"091",
    )
    c.subscribe("q", accept=1)
    [got] = c.deliveries()
    delivery, props = got.header
    assert got.body == b"091" and delivery.delivery_mode == 2  # type: ignore[attr-defined]
    assert props.content_type == "text/plain" and props.application_headers == {"h": 1}  # type: ignore[attr-defined]


def test_a_1_0_made_queue_is_adopted_by_a_0_10_subscriber() -> None:
    broker = Broker()
    node = broker.resolve("made")
    assert node is not None and node.auto
    broker.vhosts["/"].publish_message("", "made", Message(body=b"1.0").encode())
    c = Client(broker)
    c.attach()
    c.ok(spec.QueueDeclare(queue="made"))
    c.subscribe("made")
    [got] = c.deliveries()
    c.ok(spec.MessageAccept(transfers=((got.command_id, got.command_id),)))
    c.ok(spec.MessageCancel(destination="d"))
    assert "made" in broker.nodes and not broker.nodes["made"].auto
    broker.resolve("made2")
    c.subscribe("made2", destination="e")  # (adopted at the subscribe)
    assert not broker.nodes["made2"].auto


def test_a_headers_exchange_matches_0_10_application_headers() -> None:
    c = Client(Broker())
    c.attach()
    c.ok(spec.QueueDeclare(queue="hq"))
    c.ok(
        spec.ExchangeBind(
            queue="hq", exchange="amq.match", arguments={"x-match": "all", "color": "red"}
        )
    )
    c.publish(b"red", exchange="amq.match", application_headers={"color": "red"})
    c.publish(b"blue", exchange="amq.match", application_headers={"color": "blue"})
    c.subscribe("hq", accept=1)
    assert [d.body for d in c.deliveries()] == [b"red"]


def test_a_1_0_message_id_that_is_not_a_uuid_comes_back() -> None:
    header = (spec.MessageProperties(application_headers={MESSAGE_ID_HEADER: "abc"}),)
    message = Message.decode(to_amqp10(header, b"x", exchange="", routing_key="q"))
    assert message.properties.message_id == "abc"  # type: ignore[union-attr]
    assert message.application_properties is None
