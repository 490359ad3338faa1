"""The broker's resource alarm (``--memory-high-watermark``) seen by pika and aio-pika,
the broker started as a user starts it: publishers past the mark get
``connection.blocked``, their further publishes are not read, a consumer drains the
queue, ``connection.unblocked`` follows and what was held goes in."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import aio_pika
import pika
import pytest
from support.broker_process import WAIT, BrokerProcess

BODY = b"x" * 10_000


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess("--memory-high-watermark", "50KiB", "--memory-low-watermark", "25KiB") as b:
        yield b


def _pika(broker: BrokerProcess) -> pika.BlockingConnection:
    # (blocked_connection_timeout: a test that fails while blocked ends, as the broker does
    # not read the close of a connection it stopped reading, as RabbitMQ does not)
    params = pika.ConnectionParameters("127.0.0.1", broker.port, blocked_connection_timeout=WAIT)
    return pika.BlockingConnection(params)


def _until(conn: pika.BlockingConnection, done: list[str], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while what not in done:
        assert time.monotonic() < deadline, f"no connection.{what} within {WAIT} s"
        conn.process_data_events(time_limit=0.1)


def _depth(channel: object, queue: str) -> int:
    declared = channel.queue_declare(queue, passive=True)  # type: ignore[attr-defined]
    return int(declared.method.message_count)


def test_pika_blocked_then_unblocked(broker: BrokerProcess) -> None:
    said: list[str] = []
    with _pika(broker) as publisher, _pika(broker) as consumer:
        publisher.add_on_connection_blocked_callback(
            lambda _conn, frame: said.append(f"blocked:{frame.method.reason}")
        )
        publisher.add_on_connection_unblocked_callback(lambda _conn, _f: said.append("unblocked"))
        pch, cch = publisher.channel(), consumer.channel()
        cch.queue_declare("alarm.pika")
        for _ in range(6):  # 60 kB held: above the mark
            pch.basic_publish("", "alarm.pika", BODY)
        _until(publisher, said, "blocked:low on memory")
        assert _depth(cch, "alarm.pika") == 6
        pch.basic_publish("", "alarm.pika", BODY)  # read: it makes the broker stop reading
        deadline = time.monotonic() + WAIT
        while _depth(cch, "alarm.pika") < 7:
            assert time.monotonic() < deadline, "the publish during the alarm was not read"
            publisher.process_data_events(time_limit=0.1)
        pch.basic_publish("", "alarm.pika", b"held")
        publisher.process_data_events(time_limit=0.5)
        assert _depth(cch, "alarm.pika") == 7  # the second waits in the socket
        assert "unblocked" not in said
        taken = 0
        while _depth(cch, "alarm.pika") and taken < 7:  # the consumer goes on
            assert cch.basic_get("alarm.pika", auto_ack=True)[2] == BODY
            taken += 1
            if taken == 5:  # 20 kB held: below the low mark
                _until(publisher, said, "unblocked")
        assert said == ["blocked:low on memory", "unblocked"]
        deadline = time.monotonic() + WAIT
        while cch.basic_get("alarm.pika", auto_ack=True)[2] != b"held":
            assert time.monotonic() < deadline, "the held publish never went in"
            publisher.process_data_events(time_limit=0.1)


def test_aio_pika_waits_while_blocked(broker: BrokerProcess) -> None:
    async def main() -> None:
        url = f"amqp://guest:guest@127.0.0.1:{broker.port}/"
        async with await aio_pika.connect(url) as publisher, await aio_pika.connect(url) as other:
            pch = await publisher.channel(publisher_confirms=False)
            cch = await other.channel()
            queue = await cch.declare_queue("alarm.aio")
            for _ in range(6):
                await pch.default_exchange.publish(aio_pika.Message(BODY), "alarm.aio")
            underlay = publisher.transport.connection  # type: ignore[union-attr]
            deadline = time.monotonic() + WAIT
            while True:  # aiormq's ready() waits while the connection is blocked
                try:
                    await asyncio.wait_for(underlay.ready(), 0.2)
                except TimeoutError:
                    break
                assert time.monotonic() < deadline, "no connection.blocked"
            for _ in range(6):
                message = await queue.get(no_ack=True, timeout=WAIT)
                assert message.body == BODY
            await asyncio.wait_for(underlay.ready(), WAIT)  # unblocked
            await pch.default_exchange.publish(aio_pika.Message(b"after"), "alarm.aio")
            deadline = time.monotonic() + WAIT
            while (got := await queue.get(no_ack=True, fail=False)) is None:
                assert time.monotonic() < deadline, "the publish after the alarm never came"
                await asyncio.sleep(0.05)
            assert got.body == b"after"

    asyncio.run(main())
