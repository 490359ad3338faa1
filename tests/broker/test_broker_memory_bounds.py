"""The memory bounds of ``amqp-sansio broker`` against streams and 1.0 credit, the broker run
as a user runs it (``BrokerProcess``): a stream's bytes raise the resource alarm as a queue's
do, and hold its publishers back (1.0 through ``connect(url)``: no more credit; 0-9-1 through
pika: ``connection.blocked``, not read); a stream keeps 64 MiB by default, its oldest messages
dropped; 1.0 publishers attached before the alarm, sending large messages as fast as their
credit allows, overshoot the mark by no more than their byte budgets (docs/defaults.rst).
The broker's own byte count is read as a user reads it: ``amqp-sansio queues --json``."""

from __future__ import annotations

import contextlib
import json
import subprocess
import threading
import time
import uuid
from typing import Any

import pika
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.broker.server import READ_SIZE
from support.broker_process import WAIT, BrokerProcess, amqp_sansio_command

import amqp_sansio as amqp

MIB = 1024 * 1024
#: The broker's defaults (docs/defaults.rst): link_credit_bytes, stream_max_bytes.
LINK_CREDIT_BYTES = 4 * MIB
CONNECTION_CREDIT_BYTES = 16 * MIB
STREAM_MAX_BYTES = 64 * MIB


def nodes(broker: BrokerProcess) -> dict[str, dict[str, Any]]:
    """What ``amqp-sansio queues URL --json`` says of each node, by name."""
    done = subprocess.run(
        [*amqp_sansio_command(), "queues", broker.url, "--json"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {o["name"]: o for o in json.loads(done.stdout)}


def held(broker: BrokerProcess) -> int:
    """The bytes of messages the broker holds, by its own count."""
    return sum(int(o.get("bytes") or 0) for o in nodes(broker).values())


def fill(sender: Any, body: bytes, most: int, *, wait: bool = True) -> int:
    """Send ``body`` until the broker holds the sender back (no credit for 2 s); the
    messages sent (``most`` at most). ``wait=False``: as fast as credit allows, without
    waiting for outcomes (the client then reads no flow: it uses the credit it has)."""
    for sent in range(most):
        try:
            sender.send(amqp.Message(body=body), wait=wait, timeout=2.0)
        except TimeoutError:
            return sent
    return most


def test_a_stream_raises_the_alarm_and_holds_a_10_publisher() -> None:
    body = b"s" * (100 * 1024)
    high = 2 * MIB
    with BrokerProcess("--memory-high-watermark", "2MiB") as broker:
        address = f"stream/alarm-{uuid.uuid4().hex[:8]}"
        with sockets.connect(broker.url, timeout=WAIT) as conn:
            sender = conn.sender(address)
            sent = fill(sender, body, 400)  # 40 MB, were it not held
            assert sent < 400, "the publisher to a stream was never held back"
            count = held(broker)
            stream = nodes(broker)[address]
            assert stream["bytes"] == count and stream["depth"] == sent
            # Past the mark, by no more than the link's credit in bytes.
            assert high < count <= high + LINK_CREDIT_BYTES + len(body)
            # Held: it stays held, and so does the count.
            assert fill(sender, body, 1) == 0
            assert held(broker) == count


def test_pika_filling_a_stream_is_blocked() -> None:
    body = b"p" * (100 * 1024)
    high = 1 * MIB
    name = f"alarm-stream-{uuid.uuid4().hex[:8]}"
    with BrokerProcess("--memory-high-watermark", "1MiB") as broker:
        params = pika.ConnectionParameters(
            "127.0.0.1", broker.port, blocked_connection_timeout=WAIT
        )
        said: list[str] = []
        publisher = pika.BlockingConnection(params)
        try:
            publisher.add_on_connection_blocked_callback(
                lambda _c, frame: said.append(f"blocked:{frame.method.reason}")
            )
            channel = publisher.channel()
            channel.queue_declare(name, durable=True, arguments={"x-queue-type": "stream"})
            sent = 0
            deadline = time.monotonic() + WAIT
            while not said:
                assert sent < 200, "publishing 20 MB into a stream raised no alarm"
                assert time.monotonic() < deadline
                channel.basic_publish("", name, body)
                sent += 1
                publisher.process_data_events(time_limit=0.05)
            assert said == ["blocked:low on memory"]
            count = held(broker)
            assert high < count <= high + 2 * len(body)
            # A publish during the alarm is read, then the broker reads no further: what
            # came in the same read (READ_SIZE, 2.5 bodies) is stored, the rest waits.
            for _ in range(5):
                channel.basic_publish("", name, body)
            publisher.process_data_events(time_limit=0.5)
            stream = nodes(broker)[name]
            same_read = READ_SIZE // len(body)
            assert stream["depth"] <= sent + 1 + same_read < sent + 5
            assert held(broker) <= count + (1 + same_read) * (len(body) + 100)
        finally:
            broker.stop()  # (a blocked connection's close is not read, as with RabbitMQ)
            with contextlib.suppress(pika.exceptions.AMQPError):
                publisher.close()


def test_a_stream_keeps_64_mib_by_default_the_oldest_dropped() -> None:
    body = b"d" * MIB
    with BrokerProcess() as broker:
        address = f"stream/retained-{uuid.uuid4().hex[:8]}"
        with sockets.connect(broker.url, timeout=WAIT) as conn:
            sender = conn.sender(address)
            for i in range(72):
                sender.send(amqp.Message(body=body, application_properties={"i": i}), wait=False)
            assert isinstance(sender.send(amqp.Message(body=b"last")), amqp.Accepted)
            stream = nodes(broker)[address]
            assert stream["nextOffset"] == 73
            assert stream["firstOffset"] > 0  # the oldest went
            assert STREAM_MAX_BYTES - MIB - 1024 < stream["bytes"] <= STREAM_MAX_BYTES
            reader = conn.receiver(
                address, credit=1, filters={amqp.Symbol("rabbitmq:stream-offset-spec"): "first"}
            )
            first = reader.receive(timeout=WAIT)
            assert first is not None
            assert first.message.application_properties["i"] == stream["firstOffset"]


def test_10_publishers_attached_before_the_alarm_overshoot_it_by_their_budgets() -> None:
    """Six connections attach a publisher each before the alarm, then all send 1 MiB
    messages as fast as the credit they were granted allows (not reading the broker's
    lowered credit): the bytes held pass the mark by no more than one message and each
    connection's ``connection_credit_bytes`` (the rest is rejected)."""
    body = b"L" * MIB
    high = 8 * MIB
    count = 6
    with BrokerProcess("--memory-high-watermark", "8MiB") as broker:
        conns = [sockets.connect(broker.url, timeout=WAIT) for _ in range(count)]
        try:
            queue = f"bounded-{uuid.uuid4().hex[:8]}"
            senders = [conn.sender(f"{queue}-{i}") for i, conn in enumerate(conns)]
            sent = [0] * count
            start = threading.Barrier(count)

            def run(i: int) -> None:
                start.wait()
                sent[i] = fill(senders[i], body, 60, wait=False)

            threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(WAIT * 2)
            for conn in conns:
                conn.wait(0.2)  # (what was sent is in)
            total = held(broker)
            bound = high + len(body) + count * CONNECTION_CREDIT_BYTES
            assert high < total <= bound, (total, sent)
        finally:
            for conn in conns:
                conn.close()
