"""``amqp-sansio queues``, run as a user runs it (a subprocess of the installed command)
against ``amqp-sansio broker`` started with its default options (``BrokerProcess()``), and
against RabbitMQ when ``AMQP_SANSIO_RABBITMQ_URL`` names one; and the broker's management
node asked by Qpid Proton's blocking client as its own tools (qdmanage) ask. The numbers are
checked against what was sent and received. Exit statuses: 0 listed, 1 no such node, 2
usage, 3 connection failed or no management node, 4 timed out."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.cli.queues import format_table
from support.broker_process import BrokerProcess, amqp_sansio_command, free_port
from support.rabbitmq import rabbitmq_url

import amqp_sansio as amqp

WAIT = 30.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as b:
        yield b


def queues(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*amqp_sansio_command(), "queues", *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


def listed(url: str) -> dict[str, dict[str, Any]]:
    done = queues(url, "--json")
    assert done.returncode == 0, done.stderr
    objects = json.loads(done.stdout)
    assert isinstance(objects, list)
    return {o["name"]: o for o in objects}


def test_queues_shows_what_was_sent_and_received(broker: BrokerProcess) -> None:
    """Seven sent, two received (one accepted, one held unsettled): the table and the JSON
    say 6 messages, 1 consumer, and as many unsettled as the receiver's link holds; the
    command's own reply node is not in the list."""
    name = f"orders-{uuid.uuid4().hex[:8]}"
    with sockets.connect(f"{broker.url}/{name}", timeout=WAIT) as conn:
        sender = conn.sender(name)
        for i in range(7):
            assert isinstance(sender.send(amqp.Message(body=f"order {i}")), amqp.Accepted)
        sender.close()
        receiver = conn.receiver(name, credit=2)
        first = receiver.receive(timeout=WAIT)
        second = receiver.receive(timeout=WAIT)
        assert first is not None and second is not None
        first.accept()
        conn.wait(0.2)  # (the disposition goes out, the credit is granted again)
        # What the receiver's link holds unsettled: the second, and those its credit,
        # granted again, let the broker send since.
        held = len(receiver.core.link.unsettled)
        assert held >= 1
        row = listed(broker.url)[name]
        assert row["depth"] == 6 and row["consumers"] == 1 and row["unsettled"] == held
        assert row["producers"] == 0 and row["durable"] is False
        assert row["type"] == "org.amqp-sansio.queue"
        # The bytes of the messages waiting: those not yet sent to the receiver.
        assert row["available"] == 6 - held
        sizes = sum(len(amqp.Message(body=f"order {i}").encode()) for i in range(1 + held, 7))
        assert row["bytes"] == sizes
        assert "firstOffset" not in row  # an attribute of streams only: null, left out
        assert not any(n.startswith("tmp.") for n in listed(broker.url))  # its reply node

        table = queues(broker.url)
        assert table.returncode == 0, table.stderr
        lines = table.stdout.splitlines()
        assert lines[0].split() == [
            "NAME",
            "TYPE",
            "MESSAGES",
            "BYTES",
            "CONSUMERS",
            "UNSETTLED",
            "DURABLE",
        ]
        (line,) = [ln for ln in lines if ln.startswith(name + " ")]
        assert line.split() == [name, "queue", "6", f"{sizes:,}", "1", str(held), "no"]
        assert len({len(ln) for ln in lines if ln.endswith(("no", "yes"))}) == 1  # aligned
        second.accept()

    one = queues(f"{broker.url}/{name}", "--json")
    assert one.returncode == 0, one.stderr
    (only,) = json.loads(one.stdout)
    assert only["name"] == name and only["depth"] == 5 and only["consumers"] == 0


def test_a_node_that_is_not_there(broker: BrokerProcess) -> None:
    done = queues(f"{broker.url}/no-such-queue")
    assert done.returncode == 1
    assert done.stderr == (
        "amqp-sansio queues: error: the broker answered 404: no node 'no-such-queue'\n"
    )
    assert "no-such-queue" not in listed(broker.url)  # asking made nothing


def test_errors_are_one_line() -> None:
    port = free_port()
    refused = queues(f"amqp://127.0.0.1:{port}")
    assert refused.returncode == 3
    assert refused.stderr == (
        f"amqp-sansio queues: error: cannot connect to 127.0.0.1:{port}: connection refused\n"
    )
    usage = queues("http://127.0.0.1")
    assert usage.returncode == 2
    assert usage.stderr.startswith("amqp-sansio queues: error: ")
    assert len(usage.stderr.splitlines()) == 1
    bad = queues("amqp://127.0.0.1", "--timeout", "soon")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.splitlines()[-1] == (
        "amqp-sansio queues: error: argument --timeout: not a number of seconds: 'soon'"
    )


def test_help_describes_the_command_and_its_defaults() -> None:
    done = subprocess.run(
        [*amqp_sansio_command(), "queues", "--help"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=True,
    )
    text = " ".join(done.stdout.split())
    assert "List the queues, streams and topics" in text
    assert "Exit status: 0 listed, 1 no such node" in text
    assert "(default 10)" in text


def test_empty_broker_says_so() -> None:
    with BrokerProcess() as fresh:
        done = queues(fresh.url)
        assert (done.returncode, done.stdout) == (0, "no queues\n")
        assert listed(fresh.url) == {}


def test_durable_queues_with_a_store_across_a_restart(tmp_path: Path) -> None:
    with BrokerProcess(store=tmp_path / "store") as stored:
        with sockets.connect(f"{stored.url}/kept", timeout=WAIT) as conn:
            sender = conn.sender("kept")
            for i in range(4):
                message = amqp.Message(header=amqp.Header(durable=True), body=f"d{i}")
                assert isinstance(sender.send(message), amqp.Accepted)
        assert listed(stored.url)["kept"]["durable"] is True
        stored.restart()
        assert stored.restored == 4
        row = listed(stored.url)["kept"]
        assert (row["depth"], row["durable"]) == (4, True)
        (line,) = [ln for ln in queues(stored.url).stdout.splitlines() if ln.startswith("kept")]
        assert line.split()[2] == "4" and line.split()[-1] == "yes"


def test_format_table_aligns_numbers_right() -> None:
    rows = [
        {"name": "a", "type": "org.amqp-sansio.queue", "depth": 1_234_567, "durable": True},
        {"name": "long-name", "type": "org.amqp-sansio.stream", "depth": 2, "bytes": None},
    ]
    assert format_table(rows).splitlines() == [
        "NAME       TYPE     MESSAGES  BYTES  CONSUMERS  UNSETTLED  DURABLE",
        "a          queue   1,234,567      -          -          -  yes",
        "long-name  stream          2      -          -          -  -",
    ]


def test_rabbitmq_has_no_management_node_one_clear_line() -> None:
    url = rabbitmq_url()
    done = queues(url)
    assert done.returncode == 3
    (line,) = done.stderr.splitlines()
    host = url.rsplit("@", 1)[-1]
    assert line.startswith(
        f"amqp-sansio queues: error: {host} does not answer AMQP management requests at "
        "$management: "
    ), line


# -- Qpid Proton, as its users ask a management node ---------------------------------------


def test_proton_management_query_and_read(broker: BrokerProcess) -> None:
    """A QUERY and a READ as qdmanage sends them (Proton's BlockingConnection, a dynamic
    receiver for the replies, correlation-id in the request), answered as Proton reads
    them."""
    pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton import Message
    from proton.utils import BlockingConnection

    name = f"proton-{uuid.uuid4().hex[:8]}"
    conn = BlockingConnection(broker.url, timeout=WAIT)
    try:
        sender = conn.create_sender(name)
        for i in range(3):
            sender.send(Message(body=f"m{i}"))
        replies = conn.create_receiver(None, dynamic=True, credit=10)
        reply_to = replies.link.remote_source.address
        requests = conn.create_sender("$management")
        requests.send(
            Message(
                reply_to=reply_to,
                correlation_id=1,
                properties={
                    "operation": "QUERY",
                    "type": "org.amqp.management",
                    "name": "self",
                    "entityType": "org.amqp-sansio.queue",
                },
                body={"attributeNames": ["name", "depth", "producers"]},
            )
        )
        response = replies.receive(timeout=WAIT)
        replies.accept()
        assert response.correlation_id == 1
        assert response.properties["statusCode"] == 200
        assert response.properties["statusDescription"] == "OK"
        assert response.body["attributeNames"] == ["name", "depth", "producers"]
        assert [name, 3, 1] in response.body["results"]
        assert response.properties["count"] == len(response.body["results"])

        requests.send(
            Message(
                reply_to=reply_to,
                id=uuid.uuid4(),
                properties={"operation": "READ", "type": "queue", "name": name},
            )
        )
        read = replies.receive(timeout=WAIT)
        replies.accept()
        assert read.properties["statusCode"] == 200
        assert read.body["depth"] == 3 and read.body["name"] == name

        requests.send(Message(reply_to=reply_to, id=9, properties={"operation": "UPDATE"}))
        unknown = replies.receive(timeout=WAIT)
        replies.accept()
        assert (unknown.correlation_id, unknown.properties["statusCode"]) == (9, 501)
    finally:
        conn.close()
