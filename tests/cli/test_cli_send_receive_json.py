"""``amqp-sansio send`` with every section the options give, and ``amqp-sansio receive
--json`` printing every section back, against ``amqp-sansio broker`` started as a user
starts it (``BrokerProcess()``), the commands run as a user runs them; the JSON parsed back
and compared field by field with what was sent, and the AMQP types checked through the
public API (:func:`amqp_sansio.adapters.sockets.connect`); the same through RabbitMQ's
``/queue/NAME`` when ``AMQP_SANSIO_RABBITMQ_URL`` names one. Also the bodies from a file and
from standard input, ``--lines``, and ``send --json``."""

from __future__ import annotations

import json
import subprocess
import uuid
from base64 import b64encode
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess, amqp_sansio_command
from support.rabbitmq import rabbitmq_url

import amqp_sansio as amqp
from amqp_sansio.codec.amqp10 import types as t

WAIT = 60.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*amqp_sansio_command(), *args],
        input=stdin.decode("utf-8", "surrogateescape") if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    return result


def address() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


#: Every property (core spec 3.2.4), an application property of every prefix, annotations.
SECTIONS = [
    "--durable",
    "--priority", "7",
    "--ttl", "60000",
    "--property", "message-id=uuid:0f8f7b8e-5c58-4a4a-9b7e-2d0c1d2e3f40",
    "--property", "user-id=anonymous",
    "--property", "to=/queue/elsewhere",
    "--property", "subject=an order",
    "--property", "reply-to=replies",
    "--property", "correlation-id=ulong:42",
    "--property", "content-type=text/plain",
    "--property", "content-encoding=identity",
    "--property", "absolute-expiry-time=2030-01-01T00:00:00Z",
    "--property", "creation-time=timestamp:1795687200250",
    "--property", "group-id=g1",
    "--property", "group-sequence=3",
    "--property", "reply-to-group-id=g2",
    "--app-property", "s=text",
    "--app-property", "s2=str:int:5",
    "--app-property", "sym=symbol:sym",
    "--app-property", "b=bool:true",
    "--app-property", "by=byte:-8",
    "--app-property", "sh=short:-300",
    "--app-property", "i=int:-70000",
    "--app-property", "l=long:9007199254740993",
    "--app-property", "ub=ubyte:200",
    "--app-property", "us=ushort:60000",
    "--app-property", "ui=uint:4000000000",
    "--app-property", "ul=ulong:18446744073709551615",
    "--app-property", "f=float:1.5",
    "--app-property", "d=double:-2.25",
    "--app-property", "c=char:é",
    "--app-property", "ts=timestamp:2026-11-26T10:00:00Z",
    "--app-property", "u=uuid:11111111-2222-3333-4444-555555555555",
    "--app-property", "bin=binary:AAEC/w==",
    "--app-property", "n=null:",
    "--annotation", "x-opt-tenant=eu",
    "--annotation", "x-opt-level=int:3",
]  # fmt: skip

#: What ``receive --json`` must print for a message sent with SECTIONS and the body "héllo".
EXPECTED: dict[str, Any] = {
    "header": {
        "durable": True,
        "priority": 7,
        "ttl": 60000,
        "first-acquirer": False,
        "delivery-count": 0,
    },
    "delivery-annotations": None,
    "message-annotations": {"x-opt-tenant": "eu", "x-opt-level": 3},
    "properties": {
        "message-id": "0f8f7b8e-5c58-4a4a-9b7e-2d0c1d2e3f40",
        "user-id": "YW5vbnltb3Vz",  # b"anonymous" in base64
        "to": "/queue/elsewhere",
        "subject": "an order",
        "reply-to": "replies",
        "correlation-id": 42,
        "content-type": "text/plain",
        "content-encoding": "identity",
        "absolute-expiry-time": "2030-01-01T00:00:00.000Z",
        "creation-time": "2026-11-26T10:00:00.250Z",
        "group-id": "g1",
        "group-sequence": 3,
        "reply-to-group-id": "g2",
    },
    "application-properties": {
        "s": "text",
        "s2": "int:5",
        "sym": "sym",
        "b": True,
        "by": -8,
        "sh": -300,
        "i": -70000,
        "l": 9007199254740993,
        "ub": 200,
        "us": 60000,
        "ui": 4000000000,
        "ul": 18446744073709551615,
        "f": 1.5,
        "d": -2.25,
        "c": "é",
        "ts": "2026-11-26T10:00:00.000Z",
        "u": "11111111-2222-3333-4444-555555555555",
        "bin": "AAEC/w==",
        "n": None,
    },
    "body-section": "amqp-value",
    "body-encoding": "text",
    "body": "héllo",
    "footer": None,
}


def test_a_message_with_every_section_comes_back_equal_in_json(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{address()}"
    sent = cli("send", url, "--body", "héllo", "--count", "2", *SECTIONS)
    assert sent.returncode == 0, sent.stderr
    got = cli("receive", url, "--count", "2", "--json")
    assert got.returncode == 0, got.stderr
    first, second = (json.loads(line) for line in got.stdout.splitlines())
    assert list(first) == list(EXPECTED)  # every section, in the spec's order
    for section, value in EXPECTED.items():  # field by field, for a readable failure
        assert first[section] == value, section
    assert first == second == EXPECTED
    assert got.stderr.startswith(f"received 2 messages from {url}: 2 accepted in ")


def test_the_types_sent_are_the_amqp_types_named(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{address()}"
    assert cli("send", url, "--body", "héllo", *SECTIONS).returncode == 0
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        delivery = conn.receiver(url.rsplit("/", 1)[1]).receive(timeout=WAIT)
        assert delivery is not None
        message = delivery.message
        delivery.settle(amqp.Accepted())
    assert message.header == amqp.Header(durable=True, priority=7, ttl=60000)
    assert message.message_annotations == {"x-opt-tenant": "eu", "x-opt-level": t.Int(3)}
    assert all(type(k) is t.Symbol for k in message.message_annotations)
    assert message.properties == amqp.Properties(
        message_id=uuid.UUID("0f8f7b8e-5c58-4a4a-9b7e-2d0c1d2e3f40"),
        user_id=b"anonymous",
        to="/queue/elsewhere",
        subject="an order",
        reply_to="replies",
        correlation_id=t.ULong(42),
        content_type=t.Symbol("text/plain"),
        content_encoding=t.Symbol("identity"),
        absolute_expiry_time=t.Timestamp(1893456000000),
        creation_time=t.Timestamp(1795687200250),
        group_id="g1",
        group_sequence=3,
        reply_to_group_id="g2",
    )
    assert type(message.properties.correlation_id) is t.ULong
    kinds = {k: type(v) for k, v in (message.application_properties or {}).items()}
    assert kinds == {
        "s": str,
        "s2": str,
        "sym": t.Symbol,
        "b": bool,
        "by": t.Byte,
        "sh": t.Short,
        "i": t.Int,
        "l": int,
        "ub": t.UByte,
        "us": t.UShort,
        "ui": t.UInt,
        "ul": t.ULong,
        "f": t.Float,
        "d": float,
        "c": t.Char,
        "ts": t.Timestamp,
        "u": uuid.UUID,
        "bin": bytes,
        "n": type(None),
    }
    assert message.body == amqp.AmqpValue("héllo")


def test_every_body_and_section_as_json(broker: BrokerProcess) -> None:
    name = address()
    bodies: list[Any] = [
        b"plain text \xc3\xa9",  # UTF-8 data: as text
        b"\x00\xff\xfe",  # other bytes: base64
        amqp.AmqpValue(b"\x01\x02"),  # a binary value: base64
        amqp.AmqpValue({"k": [1, t.Timestamp(0), None], t.Symbol("s"): float("nan")}),
        amqp.AmqpSequence([1, "two", t.Symbol("three")]),
        None,
    ]
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        sender = conn.sender(name)
        for body in bodies:
            message = amqp.Message(
                delivery_annotations={"x-opt-d": 1},
                footer={"x-opt-f": b"\x00"},
                body=body if body is not None else None,
                properties=amqp.Properties(subject="only"),
            )
            assert isinstance(sender.send(message), amqp.Accepted)
    got = cli("receive", f"{broker.url}/{name}", "--count", str(len(bodies)), "--json")
    assert got.returncode == 0, got.stderr
    objects = [json.loads(line) for line in got.stdout.splitlines()]
    assert [(o["body-section"], o["body-encoding"], o["body"]) for o in objects] == [
        ("data", "text", "plain text é"),
        ("data", "base64", "AP/+"),
        ("amqp-value", "base64", "AQI="),
        ("amqp-value", "json", {"k": [1, "1970-01-01T00:00:00.000Z", None], "s": "NaN"}),
        ("amqp-sequence", "json", [1, "two", "three"]),
        (None, None, None),
    ]
    for o in objects:
        assert o["header"] is None and o["application-properties"] is None
        assert o["properties"] == {"subject": "only"}  # the fields set, only
        assert o["delivery-annotations"] == {"x-opt-d": 1}
        assert o["footer"] == {"x-opt-f": "AA=="}


def test_send_json_is_one_summary_object(broker: BrokerProcess) -> None:
    name = address()
    result = cli("send", f"{broker.url}/{name}", "--count", "25", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["seconds"] > 0 and summary["rate"] > 0
    del summary["seconds"], summary["rate"]
    assert summary == {
        "sent": 25,
        "requested": 25,
        "outcomes": {"accepted": 25},
        "url": f"{broker.url}/{name}",
        "address": name,
        "interrupted": False,
        "timed_out": False,
    }
    settled = json.loads(cli("send", f"{broker.url}/{name}", "--settled", "--json").stdout)
    assert settled["sent"] == 1 and settled["outcomes"] == {"pre-settled": 1}


def _bodies(url: str, address: str, n: int) -> list[Any]:
    with sockets.connect(url, timeout=WAIT) as conn:
        receiver = conn.receiver(address, credit=n)
        bodies = []
        for _ in range(n):
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None
            bodies.append(delivery.message.body)
            delivery.settle(amqp.Accepted())
        return bodies


def test_lines_from_standard_input_and_from_a_file(broker: BrokerProcess, tmp_path: Path) -> None:
    name = address()
    url = f"{broker.url}/{name}"
    result = cli("send", url, "--lines", "-", stdin="one\ntwo\nthree é\n".encode())
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"sent 3 messages to {url}: 3 accepted in ")
    lines = tmp_path / "lines.txt"
    lines.write_text("four\n\nsix\nseven\n")
    result = cli("send", url, "--lines", str(lines), "--count", "3")  # the first 3
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"sent 3 messages to {url}: 3 accepted in ")
    assert _bodies(broker.url, name, 6) == [
        amqp.AmqpValue(text) for text in ["one", "two", "three é", "four", "", "six"]
    ]


def test_body_file_and_standard_input_as_bytes(broker: BrokerProcess, tmp_path: Path) -> None:
    name = address()
    url = f"{broker.url}/{name}"
    data = bytes(range(256)) * 10
    path = tmp_path / "body.bin"
    path.write_bytes(data)
    result = cli("send", url, "--body-file", str(path), "--count", "2")
    assert result.returncode == 0, result.stderr
    piped = subprocess.run(
        [*amqp_sansio_command(), "send", url, "--body-file", "-"],
        input=b"\xff\x00 from stdin",
        capture_output=True,
        timeout=WAIT,
    )
    assert piped.returncode == 0, piped.stderr
    assert _bodies(broker.url, name, 3) == [
        amqp.Data(data),
        amqp.Data(data),
        amqp.Data(b"\xff\x00 from stdin"),
    ]


# -- RabbitMQ -------------------------------------------------------------------------------


def test_rabbitmq_properties_and_application_properties_round_trip() -> None:
    rabbitmq = rabbitmq_url()
    user = rabbitmq.split("//", 1)[1].split(":", 1)[0]  # RabbitMQ checks user-id (3.2.4)
    sections = [f"user-id={user}" if s == "user-id=anonymous" else s for s in SECTIONS]
    url = f"{rabbitmq}//queue/{'cli-json-' + uuid.uuid4().hex[:10]}"
    sent = cli("send", url, "--body", "héllo", *sections)
    assert sent.returncode == 0, sent.stderr
    got = cli("receive", url, "--json")
    assert got.returncode == 0, got.stderr
    message = json.loads(got.stdout)
    expected = {
        **EXPECTED,
        "properties": {**EXPECTED["properties"], "user-id": b64encode(user.encode()).decode()},
        # RabbitMQ marks a message first acquired (core spec 3.2.1) as it delivers it.
        "header": {**EXPECTED["header"], "first-acquirer": True},
    }
    for section, value in expected.items():
        assert message[section] == value, section
    assert message == expected
