"""Scheduled messages (issue 30; docs/azure.rst "Scheduled messages") with the Azure Service
Bus SDK (``azure-servicebus``, pure Python on its ``_pyamqp``), sync and ``aio``, against
``amqp-sansio broker`` started with no options, as its users write it:
``ServiceBusClient.from_connection_string`` with the emulator connection string,
``schedule_messages``, ``cancel_scheduled_messages``, and ``send_messages`` of a message
with ``scheduled_enqueue_time_utc``. Times are a second or two ahead: a message must not
arrive before its time, and must arrive soon after it.

Without ``azure-servicebus`` (the ``test`` extra has it) every test skips, saying so.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from typing import Any

import pytest
from support.broker_process import BrokerProcess
from support.servicebus import (
    AT_ONCE,
    RECEIVE_WAIT,
    bodies,
    bounded,
    connection_string,
    timed,
)

pytest.importorskip(
    "azure.servicebus", reason="azure-servicebus is not installed (the 'test' extra has it)"
)
from azure.servicebus import (
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
)
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient
from azure.servicebus.exceptions import (
    MessageNotFoundError,
    ServiceBusQuotaExceededError,
)

#: How far ahead messages are scheduled, seconds.
AHEAD = 2.0
#: The most a due message may take to arrive after its time (a loaded machine's margin).
LATE = 5.0
#: The broker's timer and the test read the same clock; the SDK sends milliseconds.
SLACK = 0.01
DELETE = ServiceBusReceiveMode.RECEIVE_AND_DELETE
# (The fixtures broker, client and queue: tests/support/servicebus.py.)


def ahead(seconds: float = AHEAD) -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)


def nothing_before(receiver: Any, when: datetime.datetime) -> None:
    """Nothing arrives while there is still time before ``when`` (half a second spared)."""
    left = when.timestamp() - time.time() - 0.5
    if left > 0.2:
        got = receiver.receive_messages(max_message_count=10, max_wait_time=left)
        assert got == [], f"{bodies(got)} arrived before their time"
        assert time.time() < when.timestamp()


def arrivals(receiver: Any, count: int, when: datetime.datetime) -> list[Any]:
    """``count`` messages received, each after ``when`` and at most :data:`LATE` after it
    (then nothing more for a second)."""
    got: list[Any] = []
    deadline = when.timestamp() + LATE
    while len(got) < count and time.time() < deadline:
        more = receiver.receive_messages(max_message_count=count, max_wait_time=1)
        assert time.time() >= when.timestamp() - SLACK or not more, "arrived early"
        got += more
    assert len(got) == count, f"only {bodies(got)} arrived by {LATE} s after their time"
    assert receiver.receive_messages(max_wait_time=1) == []
    return got


def test_scheduled_messages_arrive_at_their_time_not_before(client: Any, queue: str) -> None:
    when = ahead()
    with client.get_queue_sender(queue) as sender:
        numbers = sender.schedule_messages([ServiceBusMessage("a"), ServiceBusMessage("b")], when)
        (single,) = sender.schedule_messages(ServiceBusMessage("c"), when)
    assert len(numbers) == 2 and all(isinstance(n, int) for n in numbers)
    assert len({*numbers, single}) == 3
    with client.get_queue_receiver(queue, receive_mode=DELETE) as receiver:
        nothing_before(receiver, when)
        got = arrivals(receiver, 3, when)
    assert sorted(bodies(got)) == ["a", "b", "c"]
    expected = when.replace(microsecond=when.microsecond // 1000 * 1000)
    assert {m.scheduled_enqueue_time_utc for m in got} == {expected}


def test_cancelled_messages_never_arrive(client: Any, queue: str) -> None:
    when = ahead()
    with client.get_queue_sender(queue) as sender:
        numbers = sender.schedule_messages([ServiceBusMessage(b) for b in "abc"], when)
        assert sender.cancel_scheduled_messages(numbers[:2]) is None
        sender.cancel_scheduled_messages([])  # (the SDK's no-op: nothing sent)
    with client.get_queue_receiver(queue, receive_mode=DELETE) as receiver:
        nothing_before(receiver, when)
        assert bodies(arrivals(receiver, 1, when)) == ["c"]


def test_cancelling_an_unknown_number_raises_message_not_found(
    broker: BrokerProcess, queue: str
) -> None:
    # Service Bus answers 404 com.microsoft:message-not-found; the SDK retries that error
    # (its default retry_total is 3, with back-off), so this client does not retry.
    string = connection_string(broker.port)
    sb = ServiceBusClient.from_connection_string(string, retry_total=0)
    with sb, sb.get_queue_sender(queue) as sender:
        (number,) = sender.schedule_messages(ServiceBusMessage("x"), ahead(60))
        start = time.monotonic()
        with pytest.raises(MessageNotFoundError, match="Status Code: 404"):
            sender.cancel_scheduled_messages([number, number + 10_000])
        sender.cancel_scheduled_messages(number)  # (none was cancelled above)
        with pytest.raises(MessageNotFoundError, match=str(number)):
            sender.cancel_scheduled_messages(number)  # cancelled already
        assert time.monotonic() - start < 5


def test_scheduled_enqueue_time_utc_holds_a_sent_message(client: Any, queue: str) -> None:
    when = ahead()
    past = ahead(-3600)
    with client.get_queue_sender(queue) as sender:
        sender.send_messages(ServiceBusMessage("held", scheduled_enqueue_time_utc=when))
        sender.send_messages(ServiceBusMessage("past", scheduled_enqueue_time_utc=past))
        sender.send_messages(ServiceBusMessage("plain"))
    with client.get_queue_receiver(queue, receive_mode=DELETE) as receiver:
        first = receiver.receive_messages(max_message_count=10, max_wait_time=1)
        while len(first) < 2 and time.time() < when.timestamp() - 0.3:
            first += receiver.receive_messages(max_message_count=10, max_wait_time=0.2)
        assert bodies(first) == ["past", "plain"]
        nothing_before(receiver, when)
        assert bodies(arrivals(receiver, 1, when)) == ["held"]


def test_the_aio_client_schedules_and_cancels(broker: BrokerProcess, queue: str) -> None:
    async def main() -> tuple[list[str], float, float]:
        string = connection_string(broker.port)
        async with AsyncServiceBusClient.from_connection_string(string) as sb:
            when = ahead()
            async with sb.get_queue_sender(queue) as sender:
                messages = [ServiceBusMessage("kept"), ServiceBusMessage("dropped")]
                _, dropped = await sender.schedule_messages(messages, when)
                await sender.cancel_scheduled_messages(dropped)
            got: list[Any] = []
            first = 0.0
            async with sb.get_queue_receiver(queue, receive_mode=DELETE) as receiver:
                while time.time() < when.timestamp() + LATE:
                    more = await receiver.receive_messages(max_message_count=5, max_wait_time=1)
                    if more and not first:
                        first = time.time()
                    got += more
                    if got and time.time() > first + 1:
                        break
            return bodies(got), first, when.timestamp()

    got, first, due = asyncio.run(asyncio.wait_for(main(), 60))
    assert got == ["kept"]
    assert due - SLACK <= first <= due + LATE


def test_beyond_max_scheduled_messages_raises_quota_exceeded(queue: str) -> None:
    # The SDK retries this error too (its default retry_total is 3): this client does not.
    with BrokerProcess("--max-scheduled-messages", "2") as process:
        string = connection_string(process.port)
        with ServiceBusClient.from_connection_string(string, retry_total=0) as sb:
            when = ahead(60)
            three = [ServiceBusMessage(b) for b in "abc"]
            with sb.get_queue_sender(queue) as sender:
                with pytest.raises(ServiceBusQuotaExceededError, match="max_scheduled_messages"):
                    sender.schedule_messages(three, when)
                assert len(sender.schedule_messages(three[:2], when)) == 2
                with pytest.raises(ServiceBusQuotaExceededError, match="Status Code: 403"):
                    sender.schedule_messages(three[2], when)
                # A sent message held beyond it is rejected (amqp:resource-limit-exceeded),
                # raised at once (bounded: a sender that cannot read the outcome waits).
                late = ServiceBusMessage("late", scheduled_enqueue_time_utc=when)
                raised, took = bounded(lambda: timed(lambda: sender.send_messages(late)), 10)
                assert isinstance(raised, ServiceBusQuotaExceededError), repr(raised)
                assert "max_scheduled_messages" in str(raised)
                assert took < AT_ONCE
                sender.send_messages(ServiceBusMessage("now"))  # the sender goes on
            with sb.get_queue_receiver(queue, receive_mode=DELETE) as receiver:
                got = receiver.receive_messages(max_message_count=5, max_wait_time=RECEIVE_WAIT)
                assert bodies(got) == ["now"]
