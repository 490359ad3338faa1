"""Every method of every class, and the basic content properties: encoded and decoded back
equal (Hypothesis over every argument's domain), and checked against pamqp both ways."""

from __future__ import annotations

import datetime
from typing import Any

import pamqp.frame
import pamqp.header
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pamqp import commands
from support import amqp091 as strategies

from amqp_sansio import amqp091

ALL = sorted(amqp091.METHODS.values(), key=lambda cls: (cls.CLASS_ID, cls.METHOD_ID))
IDS = [cls.NAME for cls in ALL]
#: pamqp has every class but ``access`` (which 0-9-1 deprecates; RabbitMQ still defines it).
WITH_PAMQP = [cls for cls in ALL if amqp091.spec.CLASS_IDS["access"] != cls.CLASS_ID]
PAMQP_IDS = [cls.NAME for cls in WITH_PAMQP]
ROUND_TRIP = settings(max_examples=25, deadline=None)


def test_every_method_is_registered_once() -> None:
    assert len(ALL) == len(amqp091.METHODS_BY_NAME) == 66
    for cls in ALL:
        assert amqp091.METHODS[cls.CLASS_ID, cls.METHOD_ID] is cls
        assert amqp091.METHODS_BY_NAME[cls.NAME] is cls
        assert getattr(amqp091.spec, cls.__name__) is cls


def test_pamqp_knows_the_same_methods() -> None:
    ours = {(cls.CLASS_ID << 16) | cls.METHOD_ID for cls in WITH_PAMQP}
    assert len(WITH_PAMQP) == len(ALL) - 2
    assert ours == set(commands.INDEX_MAPPING)


@pytest.mark.parametrize("cls", ALL, ids=IDS)
@ROUND_TRIP
@given(data=st.data())
def test_round_trip(cls: type[amqp091.Method], data: st.DataObject) -> None:
    method = data.draw(strategies.method_values(cls))
    payload = method.encode()
    assert payload[:4] == bytes([cls.CLASS_ID >> 8, cls.CLASS_ID & 255, 0, cls.METHOD_ID])
    decoded = amqp091.decode_method(payload)
    assert type(decoded) is cls
    assert decoded == method
    assert decoded.encode() == payload
    assert amqp091.decode_method(memoryview(payload)) == method
    frame = amqp091.encode_method_frame(7, method)
    parser = amqp091.framing.FrameParser(0)
    parser.feed(frame)
    assert parser.next_frame() == amqp091.MethodFrame(7, method)
    for octet in frame:  # byte by byte
        assert parser.next_frame() is None
        parser.feed(bytes([octet]))
    assert list(parser) == [amqp091.MethodFrame(7, method)]


@pytest.mark.parametrize("cls", WITH_PAMQP, ids=PAMQP_IDS)
@ROUND_TRIP
@given(data=st.data())
def test_pamqp_reads_what_we_write(cls: type[amqp091.Method], data: st.DataObject) -> None:
    method = data.draw(strategies.method_values(cls, pamqp=True))
    with strategies.pamqp_unchecked():
        _, channel, theirs = pamqp.frame.unmarshal(amqp091.encode_method_frame(3, method))
    assert channel == 3 and type(theirs) is strategies.pamqp_class(cls)
    assert strategies.from_pamqp(theirs, cls) == {n: getattr(method, n) for n, _ in cls.FIELDS}


@pytest.mark.parametrize("cls", WITH_PAMQP, ids=PAMQP_IDS)
@ROUND_TRIP
@given(data=st.data())
def test_we_read_what_pamqp_writes(cls: type[amqp091.Method], data: st.DataObject) -> None:
    method = data.draw(strategies.method_values(cls, pamqp=True))
    with strategies.pamqp_unchecked():
        wire = pamqp.frame.marshal(strategies.to_pamqp(method), 5)
    parser = amqp091.framing.FrameParser(0)
    parser.feed(wire)
    assert parser.next_frame() == amqp091.MethodFrame(5, method)


def test_bits_pack_eight_to_an_octet_low_bit_first() -> None:
    """0-9-1 spec 4.2.5.2: consecutive bits share octets."""
    declare = amqp091.spec.QueueDeclare(queue="q", durable=True, auto_delete=True, no_wait=False)
    assert declare.encode() == b"\x00\x32\x00\x0a\x00\x00\x01q\x0a\x00\x00\x00\x00"
    nack = amqp091.spec.BasicNack(delivery_tag=2**64 - 1, multiple=True, requeue=False)
    assert nack.encode() == b"\x00\x3c\x00\x78" + b"\xff" * 8 + b"\x01"


def test_known_facts_of_the_tables() -> None:
    assert amqp091.spec.BasicPublish.CONTENT and not amqp091.spec.BasicPublish.SYNCHRONOUS
    assert amqp091.spec.BasicGetOk.CONTENT and amqp091.spec.BasicGetOk.SYNCHRONOUS
    assert amqp091.spec.QueueDeclare.RESPONSES == ("queue.declare-ok",)
    assert amqp091.spec.BasicGet.RESPONSES == ("basic.get-ok", "basic.get-empty")
    assert amqp091.spec.ConfirmSelect.RESPONSES == ("confirm.select-ok",)
    assert (amqp091.spec.ExchangeUnbindOk.CLASS_ID, amqp091.spec.ExchangeUnbindOk.METHOD_ID) == (
        40,
        51,
    )
    assert amqp091.spec.BasicQos.FIELDS == (
        ("prefetch_size", "long"),
        ("prefetch_count", "short"),
        ("global_", "bit"),
    )
    assert (
        amqp091.spec.ConnectionStart(server_properties={}).version_minor == 9
    )  # RabbitMQ's defaults
    assert amqp091.spec.BasicReject(delivery_tag=1).requeue is True
    assert amqp091.ReplyCode.NO_ROUTE == 312 and amqp091.ReplyCode.FRAME_ERROR == 501
    assert amqp091.ReplyCode.NOT_FOUND in amqp091.SOFT_ERRORS
    assert amqp091.ReplyCode.CHANNEL_ERROR in amqp091.HARD_ERRORS
    assert amqp091.SOFT_ERRORS.isdisjoint(amqp091.HARD_ERRORS)
    assert set(amqp091.ReplyCode) == amqp091.SOFT_ERRORS | amqp091.HARD_ERRORS | {200}


@pytest.mark.parametrize(
    ("method", "reason"),
    [
        (amqp091.spec.BasicPublish(exchange="x" * 256), "shortstr"),
        (amqp091.spec.BasicAck(delivery_tag=-1), "longlong"),
        (amqp091.spec.BasicQos(prefetch_count=70000), "short"),
        (amqp091.spec.ConnectionSecure(challenge="text"), "longstr"),  # type: ignore[arg-type]
        (amqp091.spec.QueueDeclare(queue=5), "shortstr"),  # type: ignore[arg-type]
        (amqp091.spec.QueueDeclare(arguments={"a": object()}), "table"),  # type: ignore[dict-item]
        (amqp091.spec.QueueDeclare(arguments=[1]), "table"),  # type: ignore[arg-type]
    ],
)
def test_what_cannot_be_encoded(method: amqp091.Method, reason: str) -> None:
    with pytest.raises(amqp091.errors.EncodeError):
        method.encode()


# -- content properties ---------------------------------------------------------------------

PROPERTY_FIELDS = amqp091.BasicProperties.FIELDS


def properties(*, pamqp: bool = False) -> st.SearchStrategy[amqp091.BasicProperties]:
    optional = {
        name: st.none() | strategies.domain_values(type_, pamqp=pamqp)
        for name, type_ in PROPERTY_FIELDS
    }
    return st.fixed_dictionaries(optional).map(lambda kw: amqp091.BasicProperties(**kw))


@settings(max_examples=100, deadline=None)
@given(props=properties(), body_size=st.integers(0, 2**64 - 1))
def test_content_header_round_trip(props: amqp091.BasicProperties, body_size: int) -> None:
    payload = amqp091.encode_content_header(body_size, props)
    assert amqp091.decode_content_header(payload) == (60, body_size, props)
    assert amqp091.decode_content_header(bytearray(payload)) == (60, body_size, props)
    frame = amqp091.encode_header_frame(9, body_size, props)
    parser = amqp091.framing.FrameParser(0)
    parser.feed(frame)
    assert parser.next_frame() == amqp091.ContentHeaderFrame(9, 60, body_size, props)
    for octet in frame:  # byte by byte
        parser.feed(bytes([octet]))
    assert list(parser) == [amqp091.ContentHeaderFrame(9, 60, body_size, props)]


def _pamqp_properties(props: amqp091.BasicProperties) -> dict[str, Any]:
    values = {}
    for (name, type_), theirs in zip(
        PROPERTY_FIELDS, commands.Basic.Properties.attributes(), strict=True
    ):
        value = getattr(props, name)
        if type_ == "timestamp" and value is not None:
            value = strategies.pamqp_timestamp(value)
        values[theirs] = value
    return values


# pamqp takes an empty string property for an absent one: ours are non-empty there.
_PAMQP_PROPS = properties(pamqp=True).filter(
    lambda p: all(getattr(p, n) != "" for n, t in PROPERTY_FIELDS if t == "shortstr")
)


@settings(max_examples=100, deadline=None)
@given(props=_PAMQP_PROPS, body_size=st.integers(0, 2**63 - 1))
def test_pamqp_reads_our_content_headers(props: amqp091.BasicProperties, body_size: int) -> None:
    _, channel, header = pamqp.frame.unmarshal(amqp091.encode_header_frame(2, body_size, props))
    assert (channel, header.class_id, header.body_size) == (2, 60, body_size)
    # pamqp takes an empty string property for an absent one, and starts them empty.
    got = {
        name: None if getattr(header.properties, name) == "" else getattr(header.properties, name)
        for name in header.properties.attributes()
    }
    assert got == _pamqp_properties(props)


@settings(max_examples=100, deadline=None)
@given(props=_PAMQP_PROPS, body_size=st.integers(0, 2**63 - 1))
def test_we_read_pamqp_content_headers(props: amqp091.BasicProperties, body_size: int) -> None:
    theirs = commands.Basic.Properties.__new__(commands.Basic.Properties)
    for name, value in _pamqp_properties(props).items():
        setattr(theirs, name, value)
    with strategies.pamqp_unchecked():
        wire = pamqp.frame.marshal(pamqp.header.ContentHeader(0, body_size, theirs), 2)
    parser = amqp091.framing.FrameParser(0)
    parser.feed(wire)
    assert parser.next_frame() == amqp091.ContentHeaderFrame(2, 60, body_size, props)


def test_every_property_against_pamqp_bytes() -> None:
    """All fourteen properties set: the flags word is 0xfffc and pamqp writes the same."""
    props = amqp091.BasicProperties(
        content_type="application/json",
        content_encoding="gzip",
        headers={"x": "y"},
        delivery_mode=2,
        priority=9,
        correlation_id="c",
        reply_to="r",
        expiration="60000",
        message_id="m",
        timestamp=amqp091.codec.Timestamp(1_700_000_000),
        type="t",
        user_id="guest",
        app_id="app",
        reserved="cluster",
    )
    ours = amqp091.encode_content_header(5, props)
    assert ours[12:14] == b"\xff\xfc"
    with strategies.pamqp_unchecked():
        theirs = commands.Basic.Properties(
            **{
                **_pamqp_properties(props),
                "timestamp": datetime.datetime.fromtimestamp(1_700_000_000, datetime.timezone.utc),
            }
        )
        assert pamqp.header.ContentHeader(0, 5, theirs).marshal() == ours


def test_properties_that_cannot_be_encoded() -> None:
    with pytest.raises(amqp091.errors.EncodeError):
        amqp091.encode_content_header(1, amqp091.BasicProperties(priority=256))
    with pytest.raises(amqp091.errors.EncodeError):
        amqp091.encode_content_header(-1, amqp091.BasicProperties())
    with pytest.raises(amqp091.errors.EncodeError):
        amqp091.encode_content_header(1, amqp091.BasicProperties(headers={1: 2}))  # type: ignore[dict-item]
