"""The Azure Service Bus SDK (``azure-servicebus``, on its ``_pyamqp``) over the AMQP
WebSocket binding against ``amqp-sansio broker --ws-port`` (issue 30), written as the SDK's
users write it: the emulator connection string, ``transport_type=AmqpOverWebsocket``, and
``custom_endpoint_address="sb://127.0.0.1:PORT"`` to reach a local endpoint (the SDK appends
``/$servicebus/websocket`` to it and takes its port; without it, it would dial port 443).

The SDK's upgrade offers only the draft binding's subprotocol ``AMQPWSB10``
(``_pyamqp/constants.py``, ``AMQP_WS_SUBPROTOCOL``), which the broker accepts beside
CS01's ``amqp`` (docs/websockets.rst, ``accept_subprotocols``). The sync client speaks
WebSocket through ``websocket-client``, the aio client through ``aiohttp`` (both in the
``test`` extra). docs/azure.rst ("Over WebSocket") says what this establishes. Without
those packages every test skips, saying which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from support.broker_process import BrokerProcess
from support.servicebus import (
    AT_ONCE,
    KEY,
    RECEIVE_WAIT,
    WRONG_KEY,
    bodies,
    complete_all,
    connection_string,
    timed,
    write_users,
)

pytest.importorskip(
    "azure.servicebus", reason="azure-servicebus is not installed (the 'test' extra has it)"
)
websocket = pytest.importorskip(
    "websocket",
    reason="websocket-client (the sync SDK's WebSocket) is not installed (the 'test' extra)",
)
pytest.importorskip(
    "aiohttp", reason="aiohttp (the aio SDK's WebSocket) is not installed (the 'test' extra)"
)
from azure.servicebus import (  # noqa: E402
    ServiceBusClient,
    ServiceBusMessage,
    ServiceBusReceiveMode,
    TransportType,
)
from azure.servicebus._pyamqp.error import TokenAuthFailure  # noqa: E402
from azure.servicebus.aio import ServiceBusClient as AsyncServiceBusClient  # noqa: E402
from azure.servicebus.exceptions import ServiceBusConnectionError  # noqa: E402

#: aiohttp warns that the SDK's aio WebSocket passes ``ssl=None`` for a plain ``ws://``
#: (the emulator's ``use_tls=False``); pytest's ``filterwarnings = error`` would fail it.
pytestmark = pytest.mark.filterwarnings("ignore:ssl=None is deprecated:DeprecationWarning")

#: The subprotocol the SDK offers (its ``AMQP_WS_SUBPROTOCOL``).
AZURE_SUBPROTOCOL = "AMQPWSB10"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    users = write_users(tmp_path_factory.mktemp("azure-ws"))
    with BrokerProcess("--users", str(users), "--ws-port", "0") as process:
        yield process


def ws_port(broker: BrokerProcess) -> int:
    assert broker.ws_url is not None
    port = int(broker.ws_url.rstrip("/").rsplit(":", 1)[1])
    assert port != broker.port
    return port


def over_websocket(broker: BrokerProcess, key: str = KEY) -> dict[str, Any]:
    """``from_connection_string``'s arguments for the broker's WebSocket port."""
    port = ws_port(broker)
    return {
        "conn_str": connection_string(port, key),
        "transport_type": TransportType.AmqpOverWebsocket,
        "custom_endpoint_address": f"sb://127.0.0.1:{port}",
    }


# (The fixture queue: tests/support/servicebus.py.)


# -- the upgrade ------------------------------------------------------------------------------


def test_the_broker_accepts_the_sdks_upgrade_at_its_path(broker: BrokerProcess) -> None:
    """What the SDK's sync transport does first (``websocket.create_connection`` with
    ``subprotocols=["AMQPWSB10"]``, at ``/$servicebus/websocket``): the broker answers 101
    choosing ``AMQPWSB10``, and the AMQP header then goes through."""
    url = f"ws://127.0.0.1:{ws_port(broker)}/$servicebus/websocket"
    ws = websocket.create_connection(url, subprotocols=[AZURE_SUBPROTOCOL], timeout=AT_ONCE)
    try:
        assert ws.getstatus() == 101
        # (websocket-client lower-cases its getsubprotocol(); the header is as sent)
        assert ws.getheaders()["sec-websocket-protocol"] == AZURE_SUBPROTOCOL
        ws.send_binary(b"AMQP\x00\x01\x00\x00")
        assert ws.recv()[:8] == b"AMQP\x00\x01\x00\x00"
    finally:
        ws.close()


# -- the sync client --------------------------------------------------------------------------


def test_sync_send_then_receive_and_delete_over_websocket(
    broker: BrokerProcess, queue: str
) -> None:
    with ServiceBusClient.from_connection_string(**over_websocket(broker)) as sb:
        with sb.get_queue_sender(queue) as sender:
            sender.send_messages(ServiceBusMessage("one"))
            batch = sender.create_message_batch()
            for body in ("two", "three"):
                batch.add_message(ServiceBusMessage(body, application_properties={"n": body}))
            sender.send_messages(batch)
        mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
        with sb.get_queue_receiver(queue, receive_mode=mode) as receiver:
            got: list[Any] = []
            while len(got) < 3:
                more = receiver.receive_messages(max_message_count=3, max_wait_time=RECEIVE_WAIT)
                assert more, f"only {bodies(got)} arrived"
                got += more
            assert receiver.receive_messages(max_wait_time=1) == []  # deleted as delivered
    assert bodies(got) == ["one", "two", "three"]
    assert [m.application_properties for m in got[1:]] == [{b"n": b"two"}, {b"n": b"three"}]


def test_sync_peek_lock_complete_over_websocket(broker: BrokerProcess, queue: str) -> None:
    with ServiceBusClient.from_connection_string(**over_websocket(broker)) as sb:
        with sb.get_queue_sender(queue) as sender:
            sender.send_messages([ServiceBusMessage("first"), ServiceBusMessage("second")])
        with sb.get_queue_receiver(queue) as receiver:  # PEEK_LOCK, the default
            (first,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
            assert str(first) == "first"
            receiver.abandon_message(first)  # back to the queue, its delivery counted
            (again,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
            assert (str(again), again.delivery_count) == ("first", 1)
            receiver.complete_message(again)
            (second,) = receiver.receive_messages(max_message_count=1, max_wait_time=RECEIVE_WAIT)
            assert str(second) == "second"
            receiver.complete_message(second)
        with sb.get_queue_receiver(queue) as receiver:
            assert receiver.receive_messages(max_wait_time=1) == []  # completed: gone


def refused_by_cbs(raised: object) -> None:
    """The SDK's authentication error with ``custom_endpoint_address``: its
    ``_handle_amqp_exception_with_condition`` raises an authentication failure as
    ServiceBusConnectionError there ("for uamqp parity"; ServiceBusAuthenticationError
    without it), around its ``_pyamqp`` TokenAuthFailure carrying the broker's 401."""
    assert isinstance(raised, ServiceBusConnectionError), repr(raised)
    inner = raised.inner_exception
    assert isinstance(inner, TokenAuthFailure), repr(inner)
    assert "Status code: 401" in str(inner)
    assert "signature does not verify" in str(inner)


def test_a_wrong_key_is_refused_over_websocket(broker: BrokerProcess, queue: str) -> None:
    """The put-token on ``$cbs``, inside the WebSocket, is answered 401: the SDK raises its
    authentication failure at once (``retry_total=0``: the broker's own answer)."""
    wrong = over_websocket(broker, key=WRONG_KEY)

    def send() -> None:
        sb = ServiceBusClient.from_connection_string(**wrong, retry_total=0)
        with sb, sb.get_queue_sender(queue) as sender:
            sender.send_messages(ServiceBusMessage("never"))

    raised, took = timed(send)
    refused_by_cbs(raised)
    assert took < AT_ONCE
    with ServiceBusClient.from_connection_string(**over_websocket(broker)) as sb:
        mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
        with sb.get_queue_receiver(queue, receive_mode=mode) as receiver:
            assert receiver.receive_messages(max_wait_time=1) == []  # nothing got through


# -- the aio client ---------------------------------------------------------------------------


def test_aio_send_then_receive_and_delete_over_websocket(broker: BrokerProcess, queue: str) -> None:
    async def main() -> list[str]:
        async with AsyncServiceBusClient.from_connection_string(**over_websocket(broker)) as sb:
            async with sb.get_queue_sender(queue) as sender:
                await sender.send_messages(ServiceBusMessage("a"))
                batch = await sender.create_message_batch()
                batch.add_message(ServiceBusMessage("b"))
                batch.add_message(ServiceBusMessage("c"))
                await sender.send_messages(batch)
            got: list[Any] = []
            mode = ServiceBusReceiveMode.RECEIVE_AND_DELETE
            async with sb.get_queue_receiver(queue, receive_mode=mode) as receiver:
                while len(got) < 3:
                    more = await receiver.receive_messages(
                        max_message_count=3, max_wait_time=RECEIVE_WAIT
                    )
                    assert more, f"only {bodies(got)} arrived"
                    got += more
                assert await receiver.receive_messages(max_wait_time=1) == []
            return bodies(got)

    assert asyncio.run(asyncio.wait_for(main(), 60)) == ["a", "b", "c"]


def test_aio_peek_lock_complete_over_websocket(broker: BrokerProcess, queue: str) -> None:
    async def main() -> list[str]:
        async with AsyncServiceBusClient.from_connection_string(**over_websocket(broker)) as sb:
            async with sb.get_queue_sender(queue) as sender:
                await sender.send_messages([ServiceBusMessage("x"), ServiceBusMessage("y")])
            async with sb.get_queue_receiver(queue) as receiver:  # PEEK_LOCK
                got = await complete_all(receiver, 2, abandon_once="x")
            async with sb.get_queue_receiver(queue) as receiver:
                assert await receiver.receive_messages(max_wait_time=1) == []  # all completed
            return got

    assert sorted(asyncio.run(asyncio.wait_for(main(), 60))) == ["x1", "y0"]  # x abandoned


def test_aio_a_wrong_key_is_refused_over_websocket(broker: BrokerProcess, queue: str) -> None:
    async def send() -> None:
        sb = AsyncServiceBusClient.from_connection_string(
            **over_websocket(broker, key=WRONG_KEY), retry_total=0
        )
        async with sb, sb.get_queue_sender(queue) as sender:
            await sender.send_messages(ServiceBusMessage("never"))

    raised, took = timed(lambda: asyncio.run(asyncio.wait_for(send(), 60)))
    refused_by_cbs(raised)
    assert took < AT_ONCE
