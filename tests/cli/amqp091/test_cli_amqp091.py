"""``amqp-sansio send`` and ``receive`` with ``--protocol 0-9-1``, run as a user runs them
(the command in a subprocess, default options), against RabbitMQ; what they did is checked
with pika, the reference 0-9-1 client. Exit statuses as for 1.0: 0 done, 1 not every
message confirmed (returned, nacked), 2 usage, 3 connection, authentication or a channel
closed by the broker, 4 timed out, 130 interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from support.broker_process import BrokerProcess, Lines, amqp_sansio_command
from support.rabbitmq import rabbitmq_url

WAIT = 60.0


def cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*amqp_sansio_command(), *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
        input=None if stdin is None else stdin.decode(),
    )


def _pika(url: str) -> Any:
    import pika

    return pika.BlockingConnection(pika.URLParameters(url))


@pytest.fixture
def rabbit() -> str:
    return rabbitmq_url()


@pytest.fixture
def queue(rabbit: str) -> Iterator[str]:
    """A fresh queue at RabbitMQ (declared with pika, deleted after the test)."""
    name = f"amqp-sansio-cli091-{uuid.uuid4().hex[:10]}"
    conn = _pika(rabbit)
    try:
        conn.channel().queue_declare(name)
        yield name
    finally:
        conn.close()
        conn = _pika(rabbit)
        conn.channel().queue_delete(name)
        conn.close()


def _publish(url: str, queue: str, bodies: list[bytes], **properties: Any) -> None:
    import pika

    conn = _pika(url)
    try:
        channel = conn.channel()
        channel.confirm_delivery()
        props = pika.BasicProperties(**properties)
        for body in bodies:
            channel.basic_publish("", queue, body, props)
    finally:
        conn.close()


def _take(url: str, queue: str) -> list[tuple[Any, bytes]]:
    """Everything in ``queue``, taken (basic.get, auto-ack): (properties, body)."""
    conn = _pika(url)
    try:
        channel = conn.channel()
        got = []
        while True:
            method, properties, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                return got
            got.append((properties, body))
    finally:
        conn.close()


def _depth(url: str, queue: str) -> int:
    conn = _pika(url)
    try:
        count: int = conn.channel().queue_declare(queue, passive=True).method.message_count
        return count
    finally:
        conn.close()


def _at(url: str, queue: str) -> str:
    return f"{url}/{queue}"


def _shown(url: str, queue: str) -> str:
    """The URL as the summary prints it: the password hidden."""
    return _at(url, queue).replace(":guest@", ":***@")


# -- send ---------------------------------------------------------------------------------------


def test_send_publishes_to_the_queue_named_by_the_url_and_waits_for_confirms(
    rabbit: str, queue: str
) -> None:
    result = cli("send", _at(rabbit, queue), "--protocol", "0-9-1", "--count", "250")
    assert result.returncode == 0, result.stderr
    shown = _shown(rabbit, queue)
    assert result.stdout.startswith(f"sent 250 messages to {shown}: 250 confirmed in ")
    assert result.stdout.rstrip().endswith("msg/s)") and result.stderr == ""
    assert [body for _, body in _take(rabbit, queue)] == [
        f"message {i}".encode() for i in range(1, 251)
    ]


def test_send_maps_the_message_options_to_basic_properties(rabbit: str, queue: str) -> None:
    result = cli(
        "send", _at(rabbit, queue), "--protocol", "0-9-1", "--body", "héllo", "--durable",
        "--priority", "5", "--ttl", "60000", "--property", "message-id=m-1",
        "--property", "content-type=text/plain", "--property", "correlation-id=c-1",
        "--property", "reply-to=answers", "--app-property", "n=int:5",
        "--app-property", "colour=red",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    ((props, body),) = _take(rabbit, queue)
    assert body == "héllo".encode()
    assert props.delivery_mode == 2 and props.priority == 5 and props.expiration == "60000"
    assert props.message_id == "m-1" and props.content_type == "text/plain"
    assert props.correlation_id == "c-1" and props.reply_to == "answers"
    assert props.headers == {"n": 5, "colour": "red"}


def test_send_to_an_exchange_with_a_routing_key(rabbit: str, queue: str) -> None:
    conn = _pika(rabbit)
    conn.channel().queue_bind(queue, "amq.topic", routing_key="orders.*")
    conn.close()
    result = cli(
        "send", _at(rabbit, "ignored-here"), "--protocol", "0-9-1", "--exchange", "amq.topic",
        "--routing-key", "orders.created", "--count", "3", "--size", "10",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "3 confirmed" in result.stdout
    assert [body for _, body in _take(rabbit, queue)] == [b"x" * 10] * 3


def test_an_unroutable_message_is_returned_and_the_status_is_1(rabbit: str) -> None:
    nowhere = f"amqp-sansio-no-such-queue-{uuid.uuid4().hex[:8]}"
    result = cli(
        "send", _at(rabbit, nowhere), "--protocol", "0-9-1", "--count", "2", "--no-declare"
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.startswith(f"sent 2 messages to {_shown(rabbit, nowhere)}: 2 returned in ")


def test_a_missing_exchange_closes_the_channel_and_the_status_is_3(rabbit: str) -> None:
    missing = f"amqp-sansio-no-such-exchange-{uuid.uuid4().hex[:8]}"
    result = cli("send", _at(rabbit, "q"), "--protocol", "0-9-1", "--exchange", missing)
    assert result.returncode == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("amqp-sansio send: error: the broker closed the channel: 404 ")
    assert "NOT_FOUND" in line and missing in line


def test_send_json_is_one_summary_object(rabbit: str, queue: str) -> None:
    result = cli("send", _at(rabbit, queue), "--protocol", "0-9-1", "--count", "25", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["seconds"] > 0 and summary["rate"] > 0
    del summary["seconds"], summary["rate"]
    assert summary == {
        "sent": 25,
        "requested": 25,
        "outcomes": {"confirmed": 25},
        "url": _shown(rabbit, queue),
        "address": queue,
        "interrupted": False,
        "timed_out": False,
    }
    result = cli(
        "send", _at(rabbit, queue), "--protocol", "0-9-1", "--settled", "--json", "--count", "4"
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["sent"] == 4 and summary["outcomes"] == {"unconfirmed": 4}
    assert _depth(rabbit, queue) == 29


def test_lines_from_standard_input(rabbit: str, queue: str) -> None:
    result = cli("send", _at(rabbit, queue), "--protocol", "0-9-1", "--lines", "-", stdin=b"a\nb\n")
    assert result.returncode == 0, result.stderr
    assert [body for _, body in _take(rabbit, queue)] == [b"a", b"b"]


# -- receive ------------------------------------------------------------------------------------


def test_receive_takes_the_count_and_leaves_the_rest(rabbit: str, queue: str) -> None:
    _publish(rabbit, queue, [f"m{i}".encode() for i in range(260)])
    result = cli(
        "receive",
        _at(rabbit, queue),
        "--protocol",
        "0-9-1",
        "--count",
        "250",
        "--credit",
        "7",
        "--count-only",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"received 250 messages from {_shown(rabbit, queue)}: 250 acked in "
    )
    # Never past the count: the broker keeps the rest, in order.
    assert [body for _, body in _take(rabbit, queue)] == [f"m{i}".encode() for i in range(250, 260)]


def test_receive_prints_bodies_and_sends_the_summary_to_stderr(rabbit: str, queue: str) -> None:
    _publish(rabbit, queue, ["héllo".encode()] * 3)
    result = cli("receive", _at(rabbit, queue), "--protocol", "0-9-1", "--count", "3", "--print")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "héllo\n" * 3
    assert result.stderr.startswith("received 3 messages") and "3 acked" in result.stderr
    assert _depth(rabbit, queue) == 0


def test_receive_json_prints_each_message(rabbit: str, queue: str) -> None:
    _publish(
        rabbit, queue, [b"{}"], content_type="application/json", message_id="m-7",
        headers={"n": 5}, delivery_mode=2, priority=3,
    )  # fmt: skip
    result = cli("receive", _at(rabbit, queue), "--protocol", "0-9-1", "--json")
    assert result.returncode == 0, result.stderr
    (line,) = result.stdout.splitlines()
    message = json.loads(line)
    assert message["body"] == "{}" and message["exchange"] == ""
    assert message["routing-key"] == queue and message["redelivered"] is False
    assert message["properties"] == {
        "content-type": "application/json", "message-id": "m-7", "delivery-mode": 2,
        "priority": 3,
    }  # fmt: skip
    assert message["headers"] == {"n": 5}


def test_send_then_receive_round_trip(rabbit: str, queue: str) -> None:
    assert cli("send", _at(rabbit, queue), "--protocol", "0-9-1", "--count", "40").returncode == 0
    result = cli("receive", _at(rabbit, queue), "--protocol", "0-9-1", "--count", "40", "--print")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"message {i}" for i in range(1, 41)]


def test_receive_from_a_missing_queue_is_status_3(rabbit: str) -> None:
    nowhere = f"amqp-sansio-no-such-queue-{uuid.uuid4().hex[:8]}"
    result = cli("receive", _at(rabbit, nowhere), "--protocol", "0-9-1")
    assert result.returncode == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("amqp-sansio receive: error: the broker closed the channel: 404 ")
    assert "NOT_FOUND" in line and nowhere in line


def test_receive_timed_out_is_status_4(rabbit: str, queue: str) -> None:
    _publish(rabbit, queue, [b"only"])
    result = cli(
        "receive",
        _at(rabbit, queue),
        "--protocol",
        "0-9-1",
        "--count",
        "3",
        "--timeout",
        "1",
        "--count-only",
    )
    assert result.returncode == 4
    shown = _shown(rabbit, queue)
    assert result.stdout.startswith(f"received 1 of 3 messages from {shown}: 1 acked")
    assert result.stdout.rstrip().endswith("(timed out)")
    assert result.stderr.splitlines()[-1] == (
        "amqp-sansio receive: error: timed out after 1 s waiting for message 2 of 3"
    )
    assert _depth(rabbit, queue) == 0


def test_count_0_receives_until_interrupted(rabbit: str, queue: str) -> None:
    proc = subprocess.Popen(
        [*amqp_sansio_command(), "receive", _at(rabbit, queue), "--protocol", "0-9-1",
         "--count", "0", "--print"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    lines = Lines(proc)
    try:
        _publish(rabbit, queue, [b"one", b"two", b"three"])
        assert [lines.next(WAIT).rstrip("\n") for _ in range(3)] == ["one", "two", "three"]
        proc.send_signal(signal.SIGINT)
        rest = lines.rest(WAIT)
        assert proc.stderr is not None
        err = proc.stderr.read()
    finally:
        proc.kill()
        proc.wait(WAIT)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == 0, err
    assert rest == []
    assert err.startswith(f"received 3 messages from {_shown(rabbit, queue)}: 3 acked in ")
    assert _depth(rabbit, queue) == 0


def test_a_wrong_password_is_status_3(rabbit: str) -> None:
    url = rabbit.replace(":guest@", ":wrong@")
    result = cli("send", f"{url}/q", "--protocol", "0-9-1")
    assert result.returncode == 3
    (line,) = result.stderr.splitlines()
    assert line.startswith("amqp-sansio send: error: ") and "403" in line


def test_connection_refused_is_status_3() -> None:
    result = cli("receive", "amqp://127.0.0.1:1/q", "--protocol", "0-9-1")
    assert result.returncode == 3
    assert result.stderr.splitlines() == [
        "amqp-sansio receive: error: cannot connect to 127.0.0.1:1: connection refused"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["receive", "--browse"], "--browse is AMQP 1.0's"),
        (["receive", "--selector", "a = 1"], "--selector is AMQP 1.0's"),
        (["receive", "--offset", "first"], "--offset is AMQP 1.0's"),
        (["send", "--annotation", "x-opt-a=1"], "--annotation is AMQP 1.0's"),
        (["send", "--property", "subject=s"], "0-9-1 has no property subject"),
        (["send", "--sasl-mechanism", "SCRAM-SHA-256"], "--sasl-mechanism is AMQP 1.0's"),
        (["send", "--exchange", "amq.topic", "--protocol", "1.0"], "--exchange is AMQP 0-9-1's"),
        (["receive", "--vhost", "v", "--protocol", "1.0"], "--vhost is AMQP 0-9-1's"),
    ],
)
def test_usage_errors(args: list[str], message: str) -> None:
    command, *rest = args
    protocol = [] if "--protocol" in rest else ["--protocol", "0-9-1"]
    # Port 1 refuses connections: status 3 if the command tried; 2 says it did not.
    result = cli(command, "amqp://127.0.0.1:1/q", *protocol, *rest)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"amqp-sansio {command}: error: ") and message in line


# -- against amqp-sansio broker, which serves both protocols on one port --------------------


@pytest.fixture
def our_broker() -> Iterator[str]:
    with BrokerProcess() as process:
        yield process.url


def test_through_our_broker_sent_with_091_received_with_10_and_back(our_broker: str) -> None:
    from amqp_sansio.adapters import sockets

    name = f"cli091-{uuid.uuid4().hex[:8]}"
    with sockets.connect(our_broker, protocol="0-9-1", timeout=WAIT) as conn:
        conn.channel().queue_declare(name)
    url = f"{our_broker}/{name}"
    result = cli("send", url, "--protocol", "0-9-1", "--count", "20")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"sent 20 messages to {url}: 20 confirmed in ")
    result = cli("receive", url, "--count", "20", "--print")  # AMQP 1.0
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [f"message {i}" for i in range(1, 21)]
    assert cli("send", url, "--count", "3", "--size", "5").returncode == 0  # AMQP 1.0
    result = cli("receive", url, "--protocol", "0-9-1", "--count", "3", "--json")
    assert result.returncode == 0, result.stderr
    messages = [json.loads(line) for line in result.stdout.splitlines()]
    assert [m["body"] for m in messages] == ["xxxxx"] * 3
    assert all(m["routing-key"] == name and m["exchange"] == "" for m in messages)
    assert "3 acked" in result.stderr
