"""The Azure Service Bus SDK (``azure-servicebus``, pure Python on its ``_pyamqp``) against
``amqp-sansio broker`` (issue 30), written as the SDK's users write it:
``ServiceBusClient.from_connection_string`` with the emulator connection string
(``UseDevelopmentEmulator=true``: plain AMQP to a local endpoint), ``get_queue_sender`` /
``get_queue_receiver`` in context managers. The broker is started as a user starts it
(``amqp-sansio broker --port 0 --users FILE``), the users file holding a SAS key: the SDK
logs in with ANONYMOUS and puts a SAS token to ``$cbs`` for each entity.

What is served and what is refused is docs/azure.rst's table; each row is a test here. Every
refusal must arrive at once (never the SDK's time-outs): the tests bound each call's time.
Without ``azure-servicebus`` (the ``test`` extra has it) every test skips, saying so.
"""

from __future__ import annotations

import asyncio
import datetime
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.broker_process import BrokerProcess
from support.servicebus import (
    AT_ONCE,
    KEY,
    KEY_NAME,
    RECEIVE_WAIT,
    WRONG_KEY,
    bodies,
    bounded,
    complete_all,
    receive_all,
    timed,
    write_users,
)
from support.servicebus import connection_string as servicebus_connection_string

from amqp_sansio.security.sas import make_sas_token

servicebus = pytest.importorskip(
    "azure.servicebus", reason="azure-servicebus is not installed (the 'test' extra has it)"
)
from azure.servicebus import (  # noqa: E402
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    ServiceBusSubQueue,
)
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient  # noqa: E402
from azure.servicebus.exceptions import (  # noqa: E402
    ServiceBusAuthenticationError,
    ServiceBusError,
    ServiceBusQuotaExceededError,
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    users = write_users(tmp_path_factory.mktemp("azure"))
    with BrokerProcess("--users", str(users)) as process:
        yield process


def connection_string(broker: BrokerProcess, key: str = KEY) -> str:
    return servicebus_connection_string(broker.port, key)


# (The fixtures client and queue: tests/support/servicebus.py.)


# -- send, receive, settle ----------------------------------------------------------------------


def test_send_single_and_batch_then_receive_and_delete(client: Any, queue: str) -> None:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages(ServiceBusMessage("one"))
        batch = sender.create_message_batch()
        for body in ("two", "three", "four"):
            batch.add_message(ServiceBusMessage(body, application_properties={"n": body}))
        sender.send_messages(batch)
        sender.send_messages([ServiceBusMessage("five"), ServiceBusMessage("six")])
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
    with client.get_queue_receiver(queue, receive_mode=mode) as receiver:
        got = receive_all(receiver, 6)
    assert bodies(got) == ["one", "two", "three", "four", "five", "six"]
    assert [m.application_properties for m in got[1:4]] == [
        {b"n": b"two"},
        {b"n": b"three"},
        {b"n": b"four"},
    ]
    with client.get_queue_receiver(queue, receive_mode=mode) as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []  # deleted as delivered


def test_peek_lock_complete_and_abandon(client: Any, queue: str) -> None:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage("first"), ServiceBusMessage("second")])
    with client.get_queue_receiver(queue) as receiver:  # PEEK_LOCK, the default
        (first,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
        assert str(first) == "first"
        assert isinstance(first.lock_token, uuid.UUID | str)
        receiver.abandon_message(first)  # back to the queue, its delivery counted
        (again,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
        assert str(again) == "first"
        assert again.delivery_count == 1
        assert again.lock_token != first.lock_token
        receiver.complete_message(again)
        (second,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
        assert str(second) == "second"
        receiver.complete_message(second)
    with client.get_queue_receiver(queue) as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []  # completed: gone


def test_an_unsettled_peek_lock_message_comes_back(client: Any, queue: str) -> None:
    """A message received in peek-lock and never settled is delivered again once its
    receiver is gone (the lock ends with the link)."""
    with client.get_queue_sender(queue) as sender:
        sender.send_messages(ServiceBusMessage("kept"))
    with client.get_queue_receiver(queue, prefetch_count=0) as receiver:
        (got,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
        assert str(got) == "kept"
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
    with client.get_queue_receiver(queue, receive_mode=mode) as receiver:
        again = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
        assert bodies(again) == ["kept"]


def test_dead_letter_goes_to_the_entity_dead_letter_queue(client: Any, queue: str) -> None:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage("bad"), ServiceBusMessage("good")])
    with client.get_queue_receiver(queue) as receiver:
        bad, good = receiver.receive_messages(max_message_count=2, max_wait_time=RECEIVE_WAIT)
        receiver.dead_letter_message(bad, reason="unparseable", error_description="no JSON")
        receiver.complete_message(good)
    dead = ServiceBusSubQueue.DEAD_LETTER
    with client.get_queue_receiver(queue, sub_queue=dead) as receiver:
        got = receiver.receive_messages(max_message_count=2, max_wait_time=RECEIVE_WAIT)
        assert bodies(got) == ["bad"]
        assert got[0].dead_letter_reason == "unparseable"
        assert got[0].dead_letter_error_description == "no JSON"
        receiver.complete_message(got[0])
    with client.get_queue_receiver(queue, sub_queue=dead) as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []
    with client.get_queue_receiver(queue) as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []


# -- a transfer the broker rejects --------------------------------------------------------------


def test_a_send_to_a_full_queue_raises_quota_exceeded_at_once(tmp_path: Path, queue: str) -> None:
    """A queue at its depth limit (``--max-queue-depth``) rejects a transfer (``rejected``,
    ``amqp:resource-limit-exceeded``): the SDK's sender raises ServiceBusQuotaExceededError
    at once, for a single message, a batch and in the aio client, and goes on. (Each SDK
    session is bounded: a sender that cannot read the outcome waits for good, the SDK's own
    ``timeout`` notwithstanding, as it did while the broker's error left out its null
    info.)"""
    users = write_users(tmp_path)
    with BrokerProcess("--users", str(users), "--max-queue-depth", "1") as process:
        string = servicebus_connection_string(process.port)
        full = f"queue {queue!r} holds its maximum of 1 messages"

        def refused(send: Callable[[], Any]) -> None:
            raised, took = timed(send)
            assert isinstance(raised, ServiceBusQuotaExceededError), repr(raised)
            assert full in str(raised)
            assert "amqp:resource-limit-exceeded" in str(raised)
            assert took < AT_ONCE, f"refused after {took:.1f} s"

        def sync() -> None:
            sb = ServiceBusClient.from_connection_string(string)
            with sb, sb.get_queue_sender(queue) as sender:
                sender.send_messages(ServiceBusMessage("fits"))
                refused(lambda: sender.send_messages(ServiceBusMessage("over")))
                batch = sender.create_message_batch()
                batch.add_message(ServiceBusMessage("batched"))
                refused(lambda: sender.send_messages(batch))
                mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
                with sb.get_queue_receiver(queue, receive_mode=mode) as receiver:
                    got = receiver.receive_messages(max_message_count=5, max_wait_time=RECEIVE_WAIT)
                    assert bodies(got) == ["fits"]
                sender.send_messages(ServiceBusMessage("again"))  # room again: it goes on

        async def aio() -> None:
            sb = AsyncServiceBusClient.from_connection_string(string)
            async with sb, sb.get_queue_sender(queue) as sender:
                await sender.send_messages(ServiceBusMessage("over"))

        bounded(sync, 6 * AT_ONCE)
        bounded(lambda: refused(lambda: asyncio.run(aio())), 3 * AT_ONCE)


# -- security -----------------------------------------------------------------------------------


def test_a_wrong_key_is_refused_with_the_sdk_authentication_error(
    broker: BrokerProcess, queue: str
) -> None:
    """The put-token is answered 401; the SDK raises its ServiceBusAuthenticationError.
    (The SDK retries an authentication error by its retry policy: ``retry_total=0`` shows
    the broker's answer itself is at once.)"""
    wrong = connection_string(broker, key=WRONG_KEY)

    def send() -> None:
        sb = ServiceBusClient.from_connection_string(wrong, retry_total=0)
        with sb, sb.get_queue_sender(queue) as sender:
            sender.send_messages(ServiceBusMessage("never"))

    raised, took = timed(send)
    assert isinstance(raised, ServiceBusAuthenticationError), repr(raised)
    assert "Status code: 401" in str(raised.inner_exception)
    assert took < AT_ONCE
    with ServiceBusClient.from_connection_string(connection_string(broker)) as sb:
        mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
        with sb.get_queue_receiver(queue, receive_mode=mode) as receiver:
            assert receiver.receive_messages(max_wait_time=1) == []  # nothing got through


def test_an_expired_token_is_refused_by_the_broker(broker: BrokerProcess, queue: str) -> None:
    """A connection string with a SharedAccessSignature (a token the SDK puts as it is):
    one that expired a minute ago is answered 401 by the broker, which the SDK raises as
    its ServiceBusAuthenticationError; the same token, unexpired, sends."""

    def send_with(expiry: float) -> Any:
        token = make_sas_token(f"sb://127.0.0.1:{broker.port}", KEY_NAME, KEY, int(expiry))
        text = (
            f"Endpoint=sb://127.0.0.1:{broker.port};SharedAccessSignature={token};"
            "UseDevelopmentEmulator=true"
        )

        def send() -> None:
            sb = ServiceBusClient.from_connection_string(text, retry_total=0)
            with sb, sb.get_queue_sender(queue) as sender:
                sender.send_messages(ServiceBusMessage(f"{expiry}"))

        return timed(send)

    raised, took = send_with(time.time() - 60)
    assert isinstance(raised, ServiceBusAuthenticationError), repr(raised)
    assert "the SAS token has expired" in str(raised.inner_exception)
    assert took < AT_ONCE
    sent, _ = send_with(time.time() + 600)
    assert sent is None
    sb = ServiceBusClient.from_connection_string(connection_string(broker))
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
    with sb, sb.get_queue_receiver(queue, receive_mode=mode) as receiver:
        got = receiver.receive_messages(max_message_count=2, max_wait_time=RECEIVE_WAIT)
        assert len(got) == 1


# -- the entity's $management node: refused at once ---------------------------------------------


def _refused_at_once(call: Callable[[], Any], operation: str) -> None:
    raised, took = timed(call)
    assert isinstance(raised, ServiceBusError), repr(raised)
    assert "Status Code: 501" in str(raised)
    assert "amqp:not-implemented" in str(raised)
    assert operation in str(raised)
    assert took < AT_ONCE, f"{operation} refused after {took:.1f} s"


def test_receiver_management_operations_are_refused_at_once(client: Any, queue: str) -> None:
    with client.get_queue_receiver(queue) as receiver:
        _refused_at_once(
            lambda: receiver.receive_deferred_messages([1]),
            "com.microsoft:receive-by-sequence-number",
        )


# -- the entity's $management node: served ------------------------------------------------------


def test_peek_messages_pages_through_the_queue_and_takes_nothing(client: Any, queue: str) -> None:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(5)])
    with client.get_queue_receiver(queue) as receiver:
        first = receiver.peek_messages(max_message_count=2)
        assert bodies(first) == ["m0", "m1"]
        numbers = [m.sequence_number for m in first]
        assert numbers[0] < numbers[1]
        rest = receiver.peek_messages(max_message_count=10)  # on from the last one seen
        assert bodies(rest) == ["m2", "m3", "m4"]
        again = receiver.peek_messages(max_message_count=1, sequence_number=numbers[1])
        assert bodies(again) == ["m1"]
        peeked = numbers + [m.sequence_number for m in rest]
    mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
    with client.get_queue_receiver(queue, receive_mode=mode) as receiver:
        got = receive_all(receiver, 5)
        assert bodies(got) == ["m0", "m1", "m2", "m3", "m4"]  # peeked, never taken
        assert [m.sequence_number for m in got] == peeked
    with client.get_queue_receiver(queue) as receiver:
        assert receiver.peek_messages(max_message_count=5) == []  # an empty queue: 204


def test_renew_message_lock_is_served(client: Any, queue: str) -> None:
    with client.get_queue_sender(queue) as sender:
        sender.send_messages(ServiceBusMessage("long job"))
    with client.get_queue_receiver(queue) as receiver:
        (got,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
        before = datetime.datetime.now(datetime.timezone.utc)
        until = receiver.renew_message_lock(got)
        assert before < until <= before + datetime.timedelta(seconds=61)
        assert got.locked_until_utc == until
        receiver.complete_message(got)
    with client.get_queue_receiver(queue) as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []


# -- the aio client -----------------------------------------------------------------------------


def test_the_aio_client_round_trip(broker: BrokerProcess, queue: str) -> None:
    async def main() -> list[str]:
        async with AsyncServiceBusClient.from_connection_string(connection_string(broker)) as sb:
            async with sb.get_queue_sender(queue) as sender:
                await sender.send_messages(ServiceBusMessage("a"))
                batch = await sender.create_message_batch()
                batch.add_message(ServiceBusMessage("b"))
                batch.add_message(ServiceBusMessage("c"))
                await sender.send_messages(batch)
            async with sb.get_queue_receiver(queue) as receiver:
                return await complete_all(receiver, 3, abandon_once="b")

    assert sorted(asyncio.run(asyncio.wait_for(main(), 60))) == ["a0", "b1", "c0"]
