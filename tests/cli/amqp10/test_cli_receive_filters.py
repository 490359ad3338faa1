"""``amqp-sansio receive --selector``, ``--browse`` and ``--offset`` against ``amqp-sansio
broker`` started as a user starts it, and browsing RabbitMQ's ``/queue/NAME`` when
``AMQP_SANSIO_RABBITMQ_URL`` names one; the commands run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess, amqp_sansio_command
from support.rabbitmq import rabbitmq_url

import amqp_sansio as amqp

WAIT = 60.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*amqp_sansio_command(), *args], capture_output=True, text=True, timeout=WAIT
    )


def fresh(prefix: str = "q") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_selector_picks_only_the_matching_messages(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{fresh()}"
    for n, color in enumerate(["red", "blue", "red", "green"]):
        sent = cli("send", url, "--body", f"{color} {n}", "--app-property", f"color={color}",
                   "--app-property", f"n=int:{n}")  # fmt: skip
        assert sent.returncode == 0, sent.stderr
    red = cli("receive", url, "--selector", "color = 'red'", "--count", "2", "--json")
    assert red.returncode == 0, red.stderr
    assert [json.loads(line)["body"] for line in red.stdout.splitlines()] == ["red 0", "red 2"]
    none = cli("receive", url, "--selector", "color = 'red'", "--timeout", "1")
    assert none.returncode == 4, none.stderr  # no red one left
    rest = cli("receive", url, "--selector", "n > 0", "--count", "2", "--print")
    assert rest.returncode == 0, rest.stderr
    assert rest.stdout.splitlines() == ["blue 1", "green 3"]


def test_a_bad_selector_is_refused_by_the_broker(broker: BrokerProcess) -> None:
    result = cli("receive", f"{broker.url}/{fresh()}", "--selector", "color = ")
    assert result.returncode == 3
    assert result.stderr.startswith("amqp-sansio receive: error: the broker refused the link")


def test_browse_leaves_the_messages_for_the_next_receiver(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{fresh()}"
    assert cli("send", url, "--count", "3").returncode == 0
    for _ in range(2):  # browsed twice: still there
        browsed = cli("receive", url, "--browse", "--count", "3", "--print")
        assert browsed.returncode == 0, browsed.stderr
        assert browsed.stdout.splitlines() == ["message 1", "message 2", "message 3"]
        assert browsed.stderr.startswith(f"received 3 messages from {url}: 3 browsed in ")
    taken = cli("receive", url, "--count", "3", "--print")
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.splitlines() == ["message 1", "message 2", "message 3"]
    assert cli("receive", url, "--browse", "--timeout", "1").returncode == 4  # gone now


def _offsets(result: subprocess.CompletedProcess[str]) -> list[tuple[int, str]]:
    assert result.returncode == 0, result.stderr
    objects = [json.loads(line) for line in result.stdout.splitlines()]
    return [(o["message-annotations"]["x-stream-offset"], o["body"]) for o in objects]


def test_offset_on_a_stream(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{fresh('stream/s')}"  # stream/...: a stream node (docs/broker.rst)
    assert cli("send", url, "--count", "5").returncode == 0
    everything = [(n, f"message {n + 1}") for n in range(5)]
    assert _offsets(cli("receive", url, "--offset", "first", "--count", "5", "--json")) == (
        everything
    )
    # Reading a stream takes nothing: from the first again, from an offset, the last.
    assert _offsets(cli("receive", url, "--offset", "0", "--count", "5", "--json")) == (everything)
    assert (
        _offsets(cli("receive", url, "--offset", "3", "--count", "2", "--json")) == (everything[3:])
    )
    assert (
        _offsets(cli("receive", url, "--offset", "last", "--count", "1", "--json"))
        == (everything[4:])
    )
    nothing_new = cli("receive", url, "--offset", "next", "--timeout", "1")
    assert nothing_new.returncode == 4
    assert nothing_new.stderr == (
        "amqp-sansio receive: error: timed out after 1 s waiting for a message\n"
    )


def test_a_time_offset_is_refused_by_our_broker(broker: BrokerProcess) -> None:
    # RabbitMQ's streams take a time; the reference broker keeps none, and says so.
    result = cli("receive", f"{broker.url}/{fresh('stream/t')}", "--offset",
                 "2026-11-26T10:00:00Z")  # fmt: skip
    assert result.returncode == 3
    assert "the broker refused the link" in result.stderr
    assert "amqp:invalid-field" in result.stderr


# -- RabbitMQ -------------------------------------------------------------------------------


def test_rabbitmq_browse_leaves_the_messages() -> None:
    url = f"{rabbitmq_url()}//queue/{fresh('cli-browse')}"
    assert cli("send", url, "--count", "2").returncode == 0
    browsed = cli("receive", url, "--browse", "--count", "2", "--print")
    assert browsed.returncode == 0, browsed.stderr
    taken = cli("receive", url, "--count", "2", "--print")
    assert taken.returncode == 0, taken.stderr
    assert browsed.stdout == taken.stdout == "message 1\nmessage 2\n"


def test_the_public_receiver_browses_and_shows_the_brokers_answer(broker: BrokerProcess) -> None:
    name = fresh()
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        assert conn.sender(name).send("kept") is not None
        browser = conn.receiver(name, browse=True, selector="TRUE", timeout=WAIT)
        assert browser.source is not None and browser.source.distribution_mode == "copy"
        assert browser.source.filter is not None and "jms-selector" in browser.source.filter
        delivery = browser.receive(timeout=WAIT)
        assert delivery is not None and delivery.message.body is not None
        taker = conn.receiver(name, timeout=WAIT)
        assert taker.source is not None and taker.source.distribution_mode != "copy"
        taken = taker.receive(timeout=WAIT)  # still there for a receiver that takes it
        assert taken is not None and taken.message.body == delivery.message.body
        taken.settle(amqp.Accepted())
