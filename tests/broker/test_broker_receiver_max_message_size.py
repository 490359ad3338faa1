"""A receiver's max-message-size (core spec 2.7.3) against ``amqp-sansio broker`` with no
options (issue 27). A message larger than it used to be withheld silently: the receiver
waited for a message it never got. The broker now detaches the link with
``amqp:link:message-size-exceeded`` (2.8.15), says so in its log, and keeps the message on
its queue for receivers that take it. The receivers: each adapter's (``receiver(...,
max_message_size=)``), and Qpid Proton's (``Link.max_message_size``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.adapters import ADAPTERS, Adapter, aw
from support.broker_process import BrokerProcess

from amqp_sansio.client.ops import LinkDetachedError

WAIT = 20.0
LIMIT = 1000
BIG = b"x" * 2000
CONDITION = "amqp:link:message-size-exceeded"


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess(wait=WAIT) as process:
        yield process


def address() -> str:
    return f"i27-size-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_a_receiver_too_small_for_a_message_is_detached(name: str, broker: BrokerProcess) -> None:
    adapter: Adapter = ADAPTERS[name]
    queue = address()

    async def scenario() -> tuple[BaseException | None, bytes]:
        async with adapter.connected(broker.url) as conn:
            sender = await aw(conn.sender(queue))
            await aw(sender.send(BIG))
            error: BaseException | None = None
            # The broker sends the message as soon as the link has credit, and detaches
            # the link at once: the detach may come in the same read as the attach, so
            # opening the receiver raises, or in a later one, so the receive raises.
            try:
                small = await aw(conn.receiver(queue, max_message_size=LIMIT))
                await aw(small.receive(timeout=WAIT))
            except LinkDetachedError as exc:
                error = exc
            # The message is still there, for a receiver that takes it.
            large = await aw(conn.receiver(queue, auto_accept=True))
            delivery = await aw(large.receive(timeout=WAIT))
            return error, delivery.message.body.value

    error, body = adapter.run(scenario)
    assert isinstance(error, LinkDetachedError), error
    assert error.error is not None and error.error.condition == CONDITION
    assert f"max-message-size {LIMIT}" in str(error)
    assert body == BIG
    assert CONDITION in broker.log and "detached the link" in broker.log


def test_proton_s_receiver_with_a_max_message_size_is_detached(broker: BrokerProcess) -> None:
    pytest.importorskip("proton", reason="python-qpid-proton (the 'test' extra)")
    from proton import Message
    from proton.handlers import MessagingHandler
    from proton.reactor import Container, LinkOption

    queue = address()
    seen: dict[str, Any] = {}
    done = threading.Event()

    class MaxMessageSize(LinkOption):  # type: ignore[misc]
        def apply(self, link: Any) -> None:
            link.max_message_size = LIMIT

    class Client(MessagingHandler):  # type: ignore[misc]
        def on_start(self, event: Any) -> None:
            self.conn = event.container.connect(broker.url.replace("amqp://", ""))
            event.container.create_sender(self.conn, queue)

        def on_sendable(self, event: Any) -> None:
            if "sent" not in seen:
                seen["sent"] = True
                event.sender.send(Message(body=BIG))

        def on_accepted(self, event: Any) -> None:
            event.container.create_receiver(self.conn, queue, options=MaxMessageSize())

        def on_message(self, event: Any) -> None:
            seen["message"] = event.message

        def on_link_error(self, event: Any) -> None:
            condition = event.link.remote_condition
            seen["condition"] = None if condition is None else condition.name
            event.connection.close()

        def on_connection_closed(self, event: Any) -> None:
            done.set()

    container = Container(Client())
    thread = threading.Thread(target=container.run, daemon=True)
    thread.start()
    try:
        assert done.wait(WAIT), seen
    finally:
        container.stop()
        thread.join(WAIT)
    assert seen.get("condition") == CONDITION, seen
    assert "message" not in seen


def test_rhea_s_receiver_with_a_max_message_size_is_detached(broker: BrokerProcess) -> None:
    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is needed for rhea")
    queue = address()
    with ADAPTERS["sockets"].module.connect(broker.url, timeout=WAIT) as conn:
        conn.sender(queue, timeout=WAIT).send(BIG, timeout=WAIT)
    host, port = broker.url.removeprefix("amqp://").rsplit(":", 1)
    args = [host, port, queue, "1", "--max-message-size", str(LIMIT), "--timeout", "10000"]
    done = subprocess.run(
        [node, "receive.js", *args],
        cwd=Path(__file__).parent.parent / "interop" / "peers" / "rhea",
        capture_output=True,
        text=True,
        timeout=WAIT + 10,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result.get("error") == "receiver_error", (result, done.stderr)
    assert result.get("condition") == CONDITION, result
    assert result.get("received") == [], result
