"""The peers' clients stay connected while idle past ``amqp-sansio broker``'s idle time-out
(issue 27): each heartbeats with its own defaults at the pace the broker asks (1.0: half
the idle-time-out of the broker's open, core spec 2.4.5; 0-9-1: the heartbeat of its
``connection.tune``). The broker runs with a small ``--idle-timeout`` (2 s) for the wait;
its default (120 s) is tested on the simulated clock, tests/broker/test_broker_idle_core.py.
Pika and our ``connect(url)``: tests/broker/test_broker_idle.py."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from support.broker_process import BrokerProcess

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.handlers import MessagingHandler  # noqa: E402
from proton.reactor import Container  # noqa: E402

IDLE = 6.0  # seconds idle: three idle time-outs of the broker's 2 s
WAIT = 30.0
RHEA = Path(__file__).parent / "peers" / "rhea"
NODE = shutil.which("node")


@pytest.fixture(scope="module")
def broker() -> Any:
    with BrokerProcess("--idle-timeout", "2") as started:
        yield started


class _IdleThenSend(MessagingHandler):  # type: ignore[misc]
    """Proton's event-driven client (a Container, its defaults): a receiver, IDLE seconds
    of nothing, then one message sent to itself."""

    def __init__(self, url: str, address: str) -> None:
        super().__init__()
        self.url, self.address = url, address
        self.received: list[Any] = []
        self.errors: list[str] = []
        self.sent = False

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url)
        event.container.create_receiver(self.conn, self.address)
        event.container.schedule(IDLE, self)

    def on_timer_task(self, event: Any) -> None:
        if self.conn.state & proton.Endpoint.REMOTE_ACTIVE:
            event.container.create_sender(self.conn, self.address)

    def on_sendable(self, event: Any) -> None:
        if not self.sent:
            self.sent = True
            event.sender.send(Message(body="after a while"))

    def on_message(self, event: Any) -> None:
        self.received.append(event.message.body)
        event.connection.close()

    def on_connection_error(self, event: Any) -> None:
        self.errors.append(str(event.connection.remote_condition))

    def on_transport_error(self, event: Any) -> None:
        self.errors.append(str(event.transport.condition))


def test_proton_is_not_cut_while_idle(broker: BrokerProcess) -> None:
    handler = _IdleThenSend(broker.url, "idle-proton")
    runner = threading.Thread(target=Container(handler).run, daemon=True)
    runner.start()
    runner.join(WAIT)
    assert not runner.is_alive()
    assert handler.errors == [] and handler.received == ["after a while"]


@pytest.mark.skipif(NODE is None, reason="node is not installed (.ci/run installs it)")
def test_rhea_is_not_cut_while_idle(broker: BrokerProcess) -> None:
    assert NODE is not None
    done = subprocess.run(
        [NODE, "idle.js", "127.0.0.1", str(broker.port), "idle-rhea", "--idle-ms", "6000"],
        cwd=RHEA,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"idle.js printed nothing (status {done.returncode}): {done.stderr}"
    assert json.loads(lines[-1]) == {"received": ["after a while"], "idle_ms": 6000}
    assert done.returncode == 0


def test_aio_pika_is_not_cut_while_idle(broker: BrokerProcess) -> None:
    aio_pika = pytest.importorskip("aio_pika", reason="aio-pika is not installed")

    async def idle() -> bytes:
        connection = await aio_pika.connect(broker.url)  # its defaults: our 1 s heartbeat
        async with connection:
            channel = await connection.channel()
            queue = await channel.declare_queue("idle-aio-pika")
            await asyncio.sleep(IDLE)
            await channel.default_exchange.publish(
                aio_pika.Message(b"after a while"), routing_key="idle-aio-pika"
            )
            message = await queue.get(timeout=WAIT)
            await message.ack()
            return message.body

    assert asyncio.run(idle()) == b"after a while"
