"""More of the 0-9-1 <-> 1.0 message mapping (amqp_sansio.broker.to_amqp10, from_amqp10):
header values of each width and of subclasses, message ids that cannot be what they claim,
1.0 values and keys no field type holds, sections the mapping passes over, messages
without a body, and many publishers' properties past the cache of encodings."""

from __future__ import annotations

import datetime
import enum
import uuid

import pytest

from amqp_sansio import DecodeError
from amqp_sansio.broker import from_amqp10, to_amqp10
from amqp_sansio.broker.amqp091.mapping import parse_expiration
from amqp_sansio.codec.amqp10 import types as t10
from amqp_sansio.codec.amqp10.encoder import encode
from amqp_sansio.definitions.amqp091.spec import BasicProperties
from amqp_sansio.definitions.amqp10.message import Message
from amqp_sansio.definitions.amqp10.messaging import Header, Properties

UTC = datetime.UTC


class Level(enum.IntEnum):
    HIGH = 7


class Name(str):
    pass


class Moment(datetime.datetime):
    pass


def _app(props: BasicProperties) -> dict:
    decoded = Message.decode(to_amqp10(props, b"body"))
    return dict(decoded.application_properties or {})


def test_plain_ints_take_the_smallest_signed_width() -> None:
    app = _app(BasicProperties(headers={"b": 100, "s": 1000, "i": 100_000, "l": 1 << 40}))
    assert type(app["b"]) is t10.Byte and app["b"] == 100
    assert type(app["s"]) is t10.Short and app["s"] == 1000
    assert type(app["i"]) is t10.Int and app["i"] == 100_000
    assert app["l"] == 1 << 40 and not isinstance(app["l"], t10.Int)


def test_subclassed_header_values_map_as_their_base() -> None:
    when = Moment(2026, 1, 1, tzinfo=UTC)
    app = _app(
        BasicProperties(
            headers={"level": Level.HIGH, "name": Name("n"), "when": when, "id": uuid.UUID(int=1)}
        )
    )
    assert type(app["level"]) is t10.Byte and app["level"] == 7
    assert type(app["name"]) is str and app["name"] == "n"
    assert app["when"] == t10.Timestamp(int(when.timestamp()) * 1000)
    assert app["id"] == str(uuid.UUID(int=1))  # no field type: its string
    back = from_amqp10(to_amqp10(BasicProperties(headers={"level": Level.HIGH}), b""))[0]
    assert back.headers == {"level": 7}


def test_a_timestamp_given_as_a_datetime() -> None:
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    data = to_amqp10(BasicProperties(timestamp=when), b"")  # type: ignore[arg-type]
    props = Message.decode(data).properties
    assert props is not None and props.creation_time == int(when.timestamp()) * 1000
    assert from_amqp10(data)[0].timestamp == int(when.timestamp())


def test_an_urn_uuid_id_that_is_not_a_uuid_stays_a_string() -> None:
    data = to_amqp10(BasicProperties(message_id="urn:uuid:not-one"), b"")
    props = Message.decode(data).properties
    assert props is not None and props.message_id == "urn:uuid:not-one"
    assert from_amqp10(data)[0].message_id == "urn:uuid:not-one"


def test_expiration_past_32_bits_is_refused() -> None:
    assert parse_expiration(str(0xFFFFFFFF)) == 0xFFFFFFFF
    with pytest.raises(ValueError, match="larger than 2\\^32-1"):
        parse_expiration(str(0x100000000))
    with pytest.raises(ValueError):
        to_amqp10(BasicProperties(expiration=str(0x100000000)), b"")


def test_1_0_values_and_keys_no_field_type_holds_are_left_out() -> None:
    long_key = "k" * 256
    message = Message(
        message_annotations={
            t10.Symbol("x-amqp-0-9-1-headers"): {"ok": 1, 5: "int key", "big": t10.ULong(1 << 63)},
            t10.Symbol("x-exchange"): 42,  # not a string: no exchange
            t10.Symbol("other"): "not x-",  # not an x- annotation: no header
        },
        properties=Properties(message_id="m" * 300, correlation_id="c"),
        application_properties={
            "keep": t10.Int(1),
            long_key: "too long a key",
            "described": t10.Described(t10.Symbol("d"), 1),
            "neg": -(1 << 63),
        },
        body=b"x",
    )
    props, body, exchange, routing_key = from_amqp10(message.encode())
    assert body == b"x" and exchange is None and routing_key is None
    assert props.message_id is None and props.correlation_id == "c"
    assert props.headers == {
        "keep": 1,
        "neg": -(1 << 63),
        "ok": 1,
        "x-message-id": "m" * 300,  # longer than a shortstr: in a header
    }


def test_sections_the_mapping_passes_over_and_no_body() -> None:
    with_delivery_annotations = Message(
        header=Header(durable=True),
        delivery_annotations={t10.Symbol("x-opt-d"): 1},
        body=b"payload",
    ).encode()
    props, body, _, _ = from_amqp10(with_delivery_annotations)
    assert body == b"payload" and props.delivery_mode == 2 and props.headers is None
    header_only = b"\x00\x53\x70" + encode([True, t10.UByte(9)])
    props, body, _, _ = from_amqp10(header_only)
    assert body == b"" and props.delivery_mode == 2 and props.priority == 9
    assert from_amqp10(b"") == (BasicProperties(), b"", None, None)


@pytest.mark.parametrize("data", [b"\x01\x02\x03", b"\x00\x53"])
def test_what_is_not_a_message_is_a_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        from_amqp10(data)


def test_more_publishers_than_the_cache_holds_map_correctly() -> None:
    """Past the cache of encodings (256 kinds of publish) it starts again: each message
    still maps as it would alone."""
    props = BasicProperties(delivery_mode=2, content_type="text/plain")
    first = to_amqp10(props, b"first", exchange="ex", routing_key="k0")
    for i in range(300):
        data = to_amqp10(props, b"%d" % i, exchange="ex", routing_key=f"k{i}")
        assert from_amqp10(data) == (props, b"%d" % i, "ex", f"k{i}")
    assert to_amqp10(props, b"first", exchange="ex", routing_key="k0") == first
