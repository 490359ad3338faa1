"""The 0-9-1 <-> 1.0 message mapping (RabbitMQ's, see amqp_sansio.broker.amqp091.mapping): each
property both ways, headers to application-properties and x- headers to message
annotations, a 0-9-1 message through the 1.0 form and back unchanged (a property test), a
1.0 message's body other than data as type amqp-1.0."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_sansio.broker import StoredMessage, parse_message
from amqp_sansio.broker.amqp091.mapping import (
    AMQP10_TYPE,
    encode_091,
    from_amqp10,
    parse_expiration,
    to_amqp10,
)
from amqp_sansio.codec import amqp091 as c091
from amqp_sansio.codec.amqp10 import types as t10
from amqp_sansio.definitions.amqp091.spec import BasicProperties
from amqp_sansio.definitions.amqp10.message import Message
from amqp_sansio.definitions.amqp10.messaging import AmqpSequence, Data, Header, Properties


def test_0_9_1_to_1_0_each_property() -> None:
    props = BasicProperties(
        content_type="text/plain",
        content_encoding="utf-8",
        headers={"h": "v", "n": 5, "x-custom": "xx", "tbl": {"a": 1}, "lst": [1, 2]},
        delivery_mode=2,
        priority=3,
        correlation_id="cid",
        reply_to="replies",
        expiration="60000",
        message_id="mid",
        timestamp=c091.Timestamp(1_700_000_000),
        type="order",
        user_id="guest",
        app_id="shop",
    )
    message = Message.decode(to_amqp10(props, b"hello", exchange="ex", routing_key="rk"))
    assert message.header == Header(durable=True, priority=3, ttl=60000)
    assert message.properties == Properties(
        message_id="mid",
        user_id=b"guest",
        reply_to="replies",
        correlation_id="cid",
        content_type=t10.Symbol("text/plain"),
        content_encoding=t10.Symbol("utf-8"),
        creation_time=1_700_000_000_000,  # seconds to milliseconds
        group_id="shop",
    )
    assert message.application_properties == {"h": "v", "n": 5}
    annotations = message.message_annotations
    assert annotations is not None
    assert annotations[t10.Symbol("x-exchange")] == "ex"
    assert annotations[t10.Symbol("x-routing-key")] == "rk"
    assert annotations[t10.Symbol("x-basic-type")] == "order"
    assert annotations[t10.Symbol("x-custom")] == "xx"
    assert annotations[t10.Symbol("x-amqp-0-9-1-headers")] == {
        t10.Symbol("tbl"): {t10.Symbol("a"): 1},
        t10.Symbol("lst"): [1, 2],
    }
    assert message.body == Data(b"hello")


def test_uuid_message_ids_and_transient_messages() -> None:
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    props = BasicProperties(
        message_id=f"urn:uuid:{ident}", correlation_id=f"urn:uuid:{ident}", delivery_mode=1
    )
    message = Message.decode(to_amqp10(props, b""))
    assert message.properties is not None
    assert message.properties.message_id == ident
    assert message.properties.correlation_id == ident
    assert message.header is not None and message.header.durable is False
    back, _, _, _ = from_amqp10(to_amqp10(props, b""))
    assert back.message_id == f"urn:uuid:{ident}" and back.delivery_mode == 1


def test_1_0_to_0_9_1_each_property() -> None:
    message = Message(
        header=Header(durable=True, priority=7, ttl=30),
        message_annotations={t10.Symbol("x-opt-foo"): "bar", t10.Symbol("x-basic-type"): "t"},
        properties=Properties(
            message_id=t10.ULong(42),
            user_id=b"guest",
            to="somewhere",
            subject="subj",
            reply_to="rt",
            correlation_id=b"\x00\x01",
            content_type=t10.Symbol("application/json"),
            content_encoding=t10.Symbol("gzip"),
            creation_time=1_700_000_001_500,
            group_id="g",
        ),
        application_properties={
            "ap": "v",
            "num": t10.Int(3),
            "u": t10.UInt(7),
            "f": t10.Float(0.5),
        },
        body=b"world",
    )
    props, body, exchange, routing_key = from_amqp10(message.encode())
    assert body == b"world"
    assert exchange is None and routing_key is None  # published with 1.0
    assert props.delivery_mode == 2 and props.priority == 7 and props.expiration == "30"
    assert props.message_id == "42"  # a ulong: its decimal string
    assert props.correlation_id is None  # binary: in a header
    assert props.headers == {
        "ap": "v",
        "num": 3,
        "u": 7,
        "f": 0.5,
        "x-opt-foo": "bar",
        "x-correlation-id": bytearray(b"\x00\x01"),
    }
    assert type(props.headers["num"]) is c091.Int32
    assert type(props.headers["u"]) is c091.UInt32
    assert type(props.headers["f"]) is c091.Float32
    assert props.user_id == "guest" and props.reply_to == "rt" and props.app_id == "g"
    assert props.content_type == "application/json" and props.content_encoding == "gzip"
    assert props.timestamp == 1_700_000_001  # milliseconds to whole seconds
    assert props.type == "t"
    # the headers encode as a field table
    c091.encode_table(props.headers)


def test_a_body_other_than_data_is_type_amqp_1_0() -> None:
    data = Message(body="a string").encode()
    props, body, _, _ = from_amqp10(data)
    assert props.type == AMQP10_TYPE
    assert Message.decode(body).body.value == "a string"  # type: ignore[union-attr]
    seq = Message(body=[AmqpSequence([1, 2])]).encode()
    assert from_amqp10(seq)[0].type == AMQP10_TYPE
    joined = Message(body=[Data(b"ab"), Data(b"cd")]).encode()
    assert from_amqp10(joined)[1] == b"abcd"
    # no header: no delivery-mode, no priority (not the 1.0 defaults)
    assert from_amqp10(Message(body=b"x").encode())[0] == BasicProperties()


def test_expiration_must_be_an_integer() -> None:
    assert parse_expiration("0") == 0
    for bad in ("-1", "1.5", "soon", "", "²"):
        with pytest.raises(ValueError):
            parse_expiration(bad)
    with pytest.raises(ValueError):
        to_amqp10(BasicProperties(expiration="later"), b"")


SCALAR = st.one_of(
    st.text(max_size=20),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(0, 255).map(c091.UInt8),
    st.integers(-(2**15), 2**15 - 1).map(c091.Int16),
    st.integers(0, 2**16 - 1).map(c091.UInt16),
    st.integers(-(2**31), 2**31 - 1).map(c091.Int32),
    st.integers(0, 2**32 - 1).map(c091.UInt32),
    st.integers(-(2**63), 2**63 - 1).map(c091.Int64),
    st.floats(allow_nan=False),
    st.integers(0, 2**40).map(c091.Timestamp),
    st.binary(max_size=10).map(bytearray),
    st.none(),
)
NAME = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAME, inner, max_size=3),
    max_leaves=8,
)
SHORT = st.text(max_size=30)


@settings(max_examples=150, deadline=None)
@given(
    st.builds(
        BasicProperties,
        content_type=st.none() | SHORT,
        content_encoding=st.none() | SHORT,
        headers=st.none() | st.dictionaries(NAME, VALUE, min_size=1, max_size=5),
        delivery_mode=st.none() | st.sampled_from([1, 2]),
        priority=st.none() | st.integers(0, 255),
        correlation_id=st.none() | SHORT,
        reply_to=st.none() | SHORT,
        expiration=st.none() | st.integers(0, 2**32 - 1).map(str),
        message_id=st.none() | SHORT,
        timestamp=st.none() | st.integers(0, 2**40).map(c091.Timestamp),
        type=st.none() | SHORT.filter(lambda s: s != AMQP10_TYPE),
        user_id=st.none() | SHORT,
        app_id=st.none() | SHORT,
    ),
    st.binary(max_size=50),
    st.text(max_size=10),
    st.text(max_size=10),
)
def test_0_9_1_through_1_0_and_back_is_unchanged(
    props: BasicProperties, body: bytes, exchange: str, routing_key: str
) -> None:
    back, body_back, ex_back, rk_back = from_amqp10(
        to_amqp10(props, body, exchange=exchange, routing_key=routing_key)
    )
    assert (body_back, ex_back, rk_back) == (body, exchange, routing_key)
    assert back == props
    if props.headers is not None:
        assert back.headers is not None
        # each header encodes to the same octets (its field type kept); order may differ
        for name, value in props.headers.items():
            assert c091.encode_table({name: back.headers[name]}) == c091.encode_table({name: value})


@settings(max_examples=100, deadline=None)
@given(
    st.none() | st.sampled_from([1, 2]),
    st.none() | st.integers(0, 255),
    st.none() | st.integers(0, 2**32 - 1),
    st.binary(max_size=300),
)
def test_what_the_broker_reads_of_a_0_9_1_message_is_what_parse_message_reads(
    delivery_mode: int | None, priority: int | None, ttl: int | None, body: bytes
) -> None:
    props = BasicProperties(
        delivery_mode=delivery_mode,
        priority=priority,
        expiration=None if ttl is None else str(ttl),
    )
    data, header, rest, got_ttl = encode_091(props, body, exchange="e", routing_key="k")
    parsed = parse_message(data, seq=1, wall=1000.0)
    assert header == parsed.header
    # with a delivery-count to carry, the header is encoded again before the rest
    ours = StoredMessage(data, seq=1, header=header, rest=rest, expires=None)
    ours.delivery_count = parsed.delivery_count = 3
    assert ours.encoded() == parsed.encoded()
    assert got_ttl == (None if parsed.header is None else parsed.header.ttl)
    assert data.endswith(body)


def test_messages_published_alike_map_as_each_would_alone() -> None:
    # The sections before the body are encoded once per exchange, routing key and
    # properties (without headers): what follows for other bodies, keys and properties is
    # each message's own mapping, the data section sized for its body (vbin8 up to 255).
    alike = [
        BasicProperties(),
        BasicProperties(delivery_mode=2),
        BasicProperties(delivery_mode=1, priority=7, expiration="5000", content_type="a/b"),
        BasicProperties(message_id=f"urn:uuid:{uuid.UUID(int=7)}", timestamp=c091.Timestamp(9)),
    ]
    for _ in range(2):
        for props in alike:
            for routing_key in ("k1", "k2"):
                for size in (0, 1, 255, 256, 70_000):
                    body = bytes([size % 251]) * size
                    data, header, rest, ttl = encode_091(
                        props, body, exchange="ex", routing_key=routing_key
                    )
                    assert from_amqp10(data) == (props, body, "ex", routing_key)
                    parsed = parse_message(data, seq=1, wall=0.0)
                    assert header == parsed.header
                    assert ttl == (None if header is None else header.ttl)
                    assert data[rest : rest + 3] == b"\x00\x53\x72"  # annotations next
                    assert Message.decode(data).body == Data(body)
