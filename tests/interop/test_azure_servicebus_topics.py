"""Service Bus topics and subscriptions: the Azure Service Bus SDK (``azure-servicebus``,
pure Python on its ``_pyamqp``) against ``amqp-sansio broker`` started with no options
(issue 30; docs/azure.rst, "Topics and subscriptions"), written as the SDK's users write it:
``ServiceBusClient.from_connection_string`` with the emulator connection string,
``get_topic_sender`` and ``get_subscription_receiver`` in context managers, sync and aio.

A subscription is made by its first receiver; the tests open and close one to make it, as
a deployment makes its subscriptions before anything is sent. A users file with a SAS key
scoped to the topic shows the topic's key covers its subscriptions. Without
``azure-servicebus`` (the ``test`` extra has it) every test skips, saying so.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import uuid
from typing import Any

import pytest
from support.broker_process import BrokerProcess
from support.servicebus import RECEIVE_WAIT, bodies, complete_all, connection_string, receive_all

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

DELETE = ServiceBusReceiveMode.RECEIVE_AND_DELETE


# (The fixtures broker, client and queue: tests/support/servicebus.py.)


@pytest.fixture
def topic() -> str:
    return f"events-{uuid.uuid4().hex[:8]}"


def make_subscriptions(client: Any, topic: str, *names: str) -> None:
    """Each subscription is made by its first receiver (and kept once it detaches)."""
    for name in names:
        with client.get_subscription_receiver(topic, name) as receiver:
            assert receiver.receive_messages(max_wait_time=0.5) == []


def test_each_subscription_receives_a_copy(client: Any, topic: str) -> None:
    make_subscriptions(client, topic, "audit", "billing")
    with client.get_topic_sender(topic) as sender:
        sender.send_messages(ServiceBusMessage("one"))
        batch = sender.create_message_batch()
        for body in ("two", "three"):
            batch.add_message(ServiceBusMessage(body, application_properties={"n": body}))
        sender.send_messages(batch)
    for name in ("audit", "billing"):
        with client.get_subscription_receiver(topic, name, receive_mode=DELETE) as receiver:
            got = receive_all(receiver, 3)
            assert bodies(got) == ["one", "two", "three"]
            assert got[1].application_properties == {b"n": b"two"}
            assert receiver.receive_messages(max_wait_time=1) == []  # deleted as delivered


def test_messages_sent_while_no_receiver_is_attached_wait(client: Any, topic: str) -> None:
    make_subscriptions(client, topic, "late")
    with client.get_topic_sender(topic) as sender:
        sender.send_messages([ServiceBusMessage(f"m{i}") for i in range(3)])
    with client.get_subscription_receiver(topic, "late") as receiver:
        got = receive_all(receiver, 3)
        assert bodies(got) == ["m0", "m1", "m2"]
        for message in got:
            receiver.complete_message(message)
    with client.get_subscription_receiver(topic, "late") as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []  # completed: gone


def test_peek_lock_complete_abandon_and_dead_letter(client: Any, topic: str) -> None:
    make_subscriptions(client, topic, "work", "other")
    with client.get_topic_sender(topic) as sender:
        sender.send_messages([ServiceBusMessage("retry"), ServiceBusMessage("bad")])
    with client.get_subscription_receiver(topic, "work") as receiver:  # PEEK_LOCK
        retry, bad = receive_all(receiver, 2)
        receiver.abandon_message(retry)
        receiver.dead_letter_message(bad, reason="unparseable", error_description="no JSON")
        (again,) = receive_all(receiver, 1)
        assert str(again) == "retry" and again.delivery_count == 1
        receiver.complete_message(again)
    dead = ServiceBusSubQueue.DEAD_LETTER
    with client.get_subscription_receiver(topic, "work", sub_queue=dead) as receiver:
        (got,) = receive_all(receiver, 1)
        assert str(got) == "bad"
        assert got.dead_letter_reason == "unparseable"
        assert got.dead_letter_error_description == "no JSON"
        receiver.complete_message(got)
    with client.get_subscription_receiver(topic, "work") as receiver:
        assert receiver.receive_messages(max_wait_time=1) == []
    with client.get_subscription_receiver(topic, "other", receive_mode=DELETE) as receiver:
        assert bodies(receive_all(receiver, 2)) == ["retry", "bad"]  # its own copies


def test_peek_and_renew_lock_on_a_subscription(client: Any, topic: str) -> None:
    make_subscriptions(client, topic, "s")
    with client.get_topic_sender(topic) as sender:
        sender.send_messages([ServiceBusMessage(f"p{i}") for i in range(3)])
    with client.get_subscription_receiver(topic, "s") as receiver:
        peeked = receiver.peek_messages(max_message_count=5)
        assert bodies(peeked) == ["p0", "p1", "p2"]
        (got,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
        before = datetime.datetime.now(datetime.timezone.utc)
        until = receiver.renew_message_lock(got)
        assert before < until <= before + datetime.timedelta(seconds=61)
        assert got.sequence_number == peeked[0].sequence_number
        receiver.complete_message(got)
    with client.get_subscription_receiver(topic, "s", receive_mode=DELETE) as receiver:
        assert bodies(receive_all(receiver, 2)) == ["p1", "p2"]


def test_a_key_scoped_to_the_topic_reads_its_subscriptions(
    tmp_path_factory: pytest.TempPathFactory, topic: str
) -> None:
    """The SDK puts a token whose audience is the subscription's path, signed with a key
    whose entity is the topic: the broker takes it for Listen there."""
    users = tmp_path_factory.mktemp("azure-topics") / "users.json"
    keys = {
        "RootManageSharedAccessKey": {
            "key": "c2VjcmV0LWtleS1mb3ItdGhlLXRlc3Rz",
            "rights": ["Send", "Listen"],
            "entity": topic,
        }
    }
    users.write_text(json.dumps({"sas-keys": keys}))
    with (
        BrokerProcess("--users", str(users)) as scoped,
        ServiceBusClient.from_connection_string(connection_string(scoped.port)) as sb,
    ):
        make_subscriptions(sb, topic, "s")
        with sb.get_topic_sender(topic) as sender:
            sender.send_messages(ServiceBusMessage("scoped"))
        with sb.get_subscription_receiver(topic, "s", receive_mode=DELETE) as receiver:
            assert bodies(receive_all(receiver, 1)) == ["scoped"]


def test_the_aio_client_topic_round_trip(broker: BrokerProcess, topic: str) -> None:
    async def main() -> dict[str, list[str]]:
        async with AsyncServiceBusClient.from_connection_string(
            connection_string(broker.port)
        ) as sb:
            for name in ("a", "b"):
                async with sb.get_subscription_receiver(topic, name) as receiver:
                    assert await receiver.receive_messages(max_wait_time=0.5) == []
            async with sb.get_topic_sender(topic) as sender:
                await sender.send_messages([ServiceBusMessage("x"), ServiceBusMessage("y")])
            got: dict[str, list[str]] = {}
            for name in ("a", "b"):
                async with sb.get_subscription_receiver(topic, name) as receiver:
                    got[name] = await complete_all(receiver, 2, abandon_once="x")
                    peeked = await receiver.peek_messages(max_message_count=5)
                    assert peeked == []  # all completed
            return got

    got = asyncio.run(asyncio.wait_for(main(), 60))
    assert {name: sorted(values) for name, values in got.items()} == {
        "a": ["x1", "y0"],
        "b": ["x1", "y0"],
    }
