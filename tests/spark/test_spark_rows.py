"""The Spark adapter's rows and options (``adapters/spark/rows.py`` and ``options.py``),
without Spark: each body type, the header and properties, maps, message-ids, and options
that fail naming the option."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest
from amqp_sansio.adapters.spark import rows
from amqp_sansio.adapters.spark.options import OptionError, ReadOptions, WriteOptions
from hypothesis import given
from hypothesis import strategies as st

import amqp_sansio as a
import amqp_sansio.codec.amqp10

# -- rows and options, without Spark ---------------------------------------------------------


def _row(message: a.Message) -> dict[str, Any]:
    return dict(zip(rows.COLUMNS, rows.message_to_row(message, "q"), strict=True))


@pytest.mark.parametrize(
    ("body", "kind", "payload"),
    [
        (b"\x00raw", "data", b"\x00raw"),
        ((a.Data(b"ab"), a.Data(b"cd")), "data", b"abcd"),
        ("héllo", "string", "héllo".encode()),
        (a.AmqpValue(b"bin"), "binary", b"bin"),
        (a.AmqpValue({"k": 1}), "value", a.encode({"k": 1})),
        (a.AmqpSequence([1, 2]), "sequence", a.encode([[1, 2]])),
        (None, "none", None),
    ],
)
def test_each_body_type_and_back(body: Any, kind: str, payload: Any) -> None:
    row = _row(a.Message(body=body))
    assert (row["body"], row["body_type"]) == (payload, kind)
    again = rows.row_to_message(row)
    if kind == "data":
        assert again.body == a.Data(payload)
    else:
        assert again.body == a.Message(body=body).body


def test_header_properties_and_maps() -> None:
    when = datetime.datetime(2026, 11, 21, 12, 0, tzinfo=datetime.timezone.utc)
    ms = int(when.timestamp() * 1000)
    ident = uuid.UUID(int=7)
    message = a.Message(
        header=a.Header(durable=True, priority=7, ttl=5000, first_acquirer=True, delivery_count=2),
        properties=a.Properties(
            message_id=ident,
            user_id=b"me",
            to="q",
            subject="s",
            reply_to="r",
            correlation_id=a.codec.amqp10.ULong(9),
            content_type="text/plain",
            content_encoding="utf-8",
            absolute_expiry_time=ms,
            creation_time=ms,
            group_id="g",
            group_sequence=3,
            reply_to_group_id="rg",
        ),
        application_properties={"region": "eu", "n": 5},
        message_annotations={"x-opt": "v"},
        body=b"x",
    )
    row = _row(message)
    assert row["durable"] and row["priority"] == 7 and row["ttl"] == 5000
    assert row["first_acquirer"] and row["delivery_count"] == 2
    assert row["message_id"] == str(ident) and row["correlation_id"] == "9"
    assert row["creation_time"] == when and row["absolute_expiry_time"] == when
    assert dict(row["application_properties"]) == {"region": "eu", "n": "5"}
    assert dict(row["message_annotations"]) == {"x-opt": "v"}
    assert row["address"] == "q" and row["offset"] is None and row["partition"] is None
    back = rows.row_to_message(row)
    assert back.properties is not None and back.properties.creation_time == ms
    assert back.header is not None and back.header.priority == 7
    assert back.application_properties == {"region": "eu", "n": "5"}


def test_message_ids_are_stable_and_distinct() -> None:
    first = rows.message_id_for("query", 3, 1, 10)
    assert first == rows.message_id_for("query", 3, 1, 10)
    others = {
        rows.message_id_for(q, b, p, r)
        for q in "qr"
        for b in (3, 4)
        for p in (1, 2)
        for r in (10, 11)
    }
    assert len(others) == 16


@given(st.binary(max_size=64), st.sampled_from(["data", "binary"]), st.integers(0, 9))
def test_rows_round_trip(payload: bytes, kind: str, priority: int) -> None:
    row = {"body": payload, "body_type": kind, "priority": priority}
    message = rows.row_to_message(row)
    again = _row(a.Message.decode(message.encode()))
    assert (again["body"], again["body_type"], again["priority"]) == (payload, kind, priority)


@pytest.mark.parametrize(
    ("options", "streaming", "match"),
    [
        ({"url": "amqp://h/q", "stagingLocation": "/s", "bogus": "1"}, True, "'bogus'"),
        ({"stagingLocation": "/s"}, True, "'url'"),
        ({"url": "amqp://h/q", "host": "h", "stagingLocation": "/s"}, True, "not both"),
        ({"url": "amqp://h/q"}, True, "'stagingLocation'"),
        ({"url": "amqp://h"}, False, "'address'"),
        ({"url": "amqp://h/q", "stagingLocation": "/s", "mode": "fifo"}, True, "'mode'"),
        ({"url": "amqp://h/q", "stagingLocation": "/s", "mode": "stream"}, True, "mode 'stream'"),
        (
            {"url": "amqp://h/q", "stagingLocation": "/s", "startingOffsets": "0"},
            True,
            "startingOffsets",
        ),
        (
            {"url": "amqp://h/q", "stagingLocation": "/s", "failOnDataLoss": "x"},
            True,
            "failOnDataLoss",
        ),
        (
            {"url": "amqp://h/q", "stagingLocation": "/s", "maxMessagesPerTrigger": "0"},
            True,
            "at least 1",
        ),
        ({"url": "amqp://h/q", "stagingLocation": "/s", "credit": "x"}, True, "'credit'"),
        (
            {"url": "amqp://h/q", "stagingLocation": "/s", "undecodable": "drop"},
            True,
            "'undecodable'",
        ),
        (
            {"url": "amqp://h/q", "stagingLocation": "/s", "consume": "true"},
            True,
            "batch read only",
        ),
        ({"url": "amqp://h/q", "maxMessagesPerTrigger": "5"}, False, "streaming read"),
        ({"url": "amqp://h/q", "sslCaFile": "/ca.pem"}, False, "amqps"),
        ({"url": "amqp://h/q", "allowInsecureAuth": "maybe"}, False, "true or false"),
        ({"url": "http://h/q"}, False, "'url'"),
    ],
)
def test_bad_read_options_name_the_option(
    options: dict[str, str], streaming: bool, match: str
) -> None:
    with pytest.raises(OptionError, match=match):
        ReadOptions(options, streaming=streaming)


def test_options_and_secrets() -> None:
    opts = ReadOptions(
        {"URL": "amqp://h:5673/a, b", "username": "u", "password": "p@ss", "stagingLocation": "/s"},
        streaming=True,
    )
    assert opts.addresses == ["a", "b"] and opts.credit == 1000
    assert opts.url_for("a") == "amqp://u:p%40ss@h:5673/a"
    assert "p@ss" not in repr(opts) and "***" in repr(opts)
    with pytest.raises(OptionError, match="one address"):
        WriteOptions({"url": "amqp://h/a", "address": "a,b"})
    assert WriteOptions({"host": "h", "port": "1", "address": "q"}).url_for("q") == "amqp://h:1/q"


def test_map_values_as_decoded_show_as_plain_strings() -> None:
    # What a receiver hands over: the decoder's typed values, not Python's plain ones.
    ident = uuid.UUID(int=7)
    decoded = a.decode(
        a.encode(
            {
                "int": a.codec.amqp10.Int(-5),
                "ulong": a.codec.amqp10.ULong(2**40),
                "float": a.codec.amqp10.Float(1.5),
                "double": 2.25,
                "uuid": ident,
                "bool": True,
                "symbol": a.codec.amqp10.Symbol("sym"),
            }
        )
    )
    message = a.Message(application_properties=decoded, body=b"x")
    assert dict(_row(message)["application_properties"]) == {
        "int": "-5",
        "ulong": str(2**40),
        "float": "1.5",
        "double": "2.25",
        "uuid": str(ident),
        "bool": "True",
        "symbol": "sym",
    }
