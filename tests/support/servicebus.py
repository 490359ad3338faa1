"""What the Azure Service Bus SDK's tests share (tests/interop/test_azure_servicebus*.py: over
TCP and WebSocket, topics, scheduled messages): the broker's users file holding one SAS key,
the emulator connection string, the bounds on the SDK's waits, the receive loops, and the
fixtures ``broker`` (``amqp-sansio broker`` with no options), ``client`` (the SDK's client
on it) and ``queue`` (a fresh name), which tests/interop/conftest.py makes theirs. A module
that needs the broker started with options defines its own ``broker``: ``client`` then
connects to that one."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from support.broker_process import BrokerProcess

KEY_NAME = "RootManageSharedAccessKey"
KEY = "c2VjcmV0LWtleS1mb3ItdGhlLXRlc3Rz"
#: A key the broker does not hold (base64, as a SAS key is).
WRONG_KEY = "d3Jvbmcta2V5"
#: A refusal arrives within this (the SDK's own time-outs are tens of seconds).
AT_ONCE = 5.0
#: The most a receive waits for a message the broker holds.
RECEIVE_WAIT = 5


def write_users(folder: Path) -> Path:
    """A users file (``amqp-sansio broker --users FILE``) holding :data:`KEY` as
    :data:`KEY_NAME`, with every right."""
    users = folder / "users.json"
    keys = {KEY_NAME: {"key": KEY, "rights": ["Manage", "Send", "Listen"]}}
    users.write_text(json.dumps({"sas-keys": keys}))
    return users


def connection_string(port: int, key: str = KEY, key_name: str = KEY_NAME) -> str:
    """The emulator connection string for a broker on 127.0.0.1:``port`` (plain AMQP, the
    port kept: ``UseDevelopmentEmulator=true``)."""
    return (
        f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName={key_name};"
        f"SharedAccessKey={key};UseDevelopmentEmulator=true"
    )


def bodies(messages: list[Any]) -> list[str]:
    return [str(m) for m in messages]


def bounded(call: Callable[[], Any], seconds: float) -> Any:
    """``call()``'s result (or the exception it raised, raised here), run in a thread of its
    own that the test waits for at most ``seconds``: a call still running then fails the
    test, saying so (an SDK that waits for good must fail its test, not hang the suite; the
    broker's stop at the test's end ends its connection)."""
    done: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            done.append((True, call()))
        except BaseException as exc:  # (raised again in the test's thread)
            done.append((False, exc))

    thread = threading.Thread(target=run, name="sdk-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if not done:
        raise AssertionError(f"the SDK's call still waits after {seconds:g} s")
    ok, value = done[0]
    if not ok:
        raise value
    return value


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()``'s result, or the exception it raised, and the seconds it took."""
    start = time.monotonic()
    try:
        return call(), time.monotonic() - start
    except Exception as exc:  # (the refusal tests look at it)
        return exc, time.monotonic() - start


def receive_all(receiver: Any, count: int) -> list[Any]:
    """``count`` messages from the SDK's sync ``receiver``, each receive waiting at most
    :data:`RECEIVE_WAIT` (a receive that gets none fails the test, saying what came)."""
    got: list[Any] = []
    while len(got) < count:
        more = receiver.receive_messages(max_message_count=count, max_wait_time=RECEIVE_WAIT)
        assert more, f"only {bodies(got)} arrived"
        got += more
    return got


async def complete_all(receiver: Any, count: int, *, abandon_once: str) -> list[str]:
    """Receive in peek-lock with the SDK's ``aio`` ``receiver`` until ``count`` messages are
    completed: the one whose body is ``abandon_once`` is abandoned at its first delivery (it
    comes again, counted), every other completed. Each completed message as its body and
    delivery-count (``"b1"``: abandoned once)."""
    got: list[str] = []
    while len(got) < count:
        more = await receiver.receive_messages(max_message_count=count, max_wait_time=RECEIVE_WAIT)
        assert more, f"only {got} arrived"
        for message in more:
            if str(message) == abandon_once and not message.delivery_count:
                await receiver.abandon_message(message)  # comes again
            else:
                await receiver.complete_message(message)
                got.append(f"{message}{message.delivery_count or 0}")
    return got


# -- fixtures (tests/interop/conftest.py) ------------------------------------------------------


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    """``amqp-sansio broker`` started with no options (no users file: no entities
    configured, any key taken), one for the module."""
    with BrokerProcess() as process:
        yield process


@pytest.fixture
def client(broker: BrokerProcess) -> Iterator[Any]:
    """The SDK's ``ServiceBusClient`` on ``broker``, by the emulator connection string with
    :data:`KEY`, closed after the test."""
    from azure.servicebus import ServiceBusClient  # (an SDK test module skips without it)

    with ServiceBusClient.from_connection_string(connection_string(broker.port)) as sb:
        yield sb


@pytest.fixture
def queue() -> str:
    """A queue name no other test uses."""
    return f"orders-{uuid.uuid4().hex[:8]}"
