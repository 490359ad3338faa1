"""Our 0-10 client through each adapter (blocking sockets, asyncio, trio), against our broker
started as a user starts it (``amqp-sansio broker``), connected with the broker's URL and
``protocol="0-10"`` only: a queue declared, messages sent with their properties, received
under a subscription's credit and accepted; what is not accepted comes back, redelivered;
routing through ``amq.direct``; a refused command; a message sent through one adapter
received through the others; with ``reconnect=``, a connection cut by a proxy made again
and its session resumed."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from support.adapters import ADAPTERS, Adapter, aw
from support.broker_process import BrokerProcess
from support.proxy import proxy

from amqp_sansio.client.amqp010 import SessionError
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.definitions import amqp010 as spec

FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0.0)


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


def test_send_receive_accept(adapter: Adapter, broker: BrokerProcess) -> None:
    queue = f"ad.{adapter.name}"
    message_id = uuid.uuid4()

    async def scenario() -> None:
        async with adapter.connected(broker.url, protocol="0-10") as conn:
            session = await aw(conn.session("work"))
            await aw(session.queue_declare(queue))
            await aw(
                session.send(
                    b"first",
                    routing_key=queue,
                    content_type="text/plain",
                    correlation_id="c-1",
                    reply_to="replies",
                    message_id=message_id,
                    headers={"n": 7, "s": "x"},
                    durable=True,
                    priority=6,
                )
            )
            for n in range(2):
                await aw(session.send(b"m%d" % n, routing_key=queue))
            assert (await aw(session.queue_query(queue))).message_count == 3
            await aw(session.subscribe(queue, credit=2))
            got = [await aw(session.receive(queue)) for _ in range(3)]
            assert [d.body for d in got] == [b"first", b"m0", b"m1"]
            first = got[0]
            assert first.routing_key == queue and first.durable
            assert first.content_type == "text/plain" and first.correlation_id == b"c-1"
            assert first.reply_to == "replies" and first.message_id == message_id
            assert first.headers == {"n": 7, "s": "x"}
            assert first.delivery_properties.priority == 6
            assert not got[1].durable and got[1].content_type is None
            assert got[1].headers == {} and got[1].message_id is None
            await aw(session.accept(*got[:2]))  # m1 left unaccepted
            await aw(session.cancel(queue))
            await aw(session.close())  # m1 goes back to the queue

            again = await aw(conn.session("again"))
            await aw(again.subscribe(queue, credit=5))
            back = await aw(again.receive(queue))
            assert back.body == b"m1" and back.delivery_properties.redelivered
            await aw(again.accept(back))
            with pytest.raises(TimeoutError):
                await aw(again.receive(queue, timeout=0.3))
            await aw(again.cancel(queue))
            assert (await aw(again.queue_query(queue))).message_count == 0
            await aw(again.close())

    adapter.run(scenario)


def test_routing_through_amq_direct_and_a_refusal(adapter: Adapter, broker: BrokerProcess) -> None:
    queue = f"ad.direct.{adapter.name}"

    async def scenario() -> None:
        async with adapter.connected(broker.url, protocol="0-10") as conn:
            session = await aw(conn.session("routing"))
            await aw(session.queue_declare(queue))
            bind = spec.ExchangeBind(queue=queue, exchange="amq.direct", binding_key="k")
            await aw(session.command(bind))
            await aw(session.send(b"routed", destination="amq.direct", routing_key="k"))
            await aw(session.send(b"dropped", destination="amq.direct", routing_key="other"))
            await aw(session.subscribe(queue, credit=5))
            d = await aw(session.receive(queue))
            assert d.body == b"routed" and d.routing_key == "k"
            await aw(session.accept(d))
            with pytest.raises(TimeoutError):
                await aw(session.receive(queue, timeout=0.3))
            with pytest.raises(SessionError) as refused:
                await aw(session.queue_declare(f"{queue}.missing", passive=True))
            assert refused.value.error_code == 404
            other = await aw(conn.session("after"))  # the connection goes on
            assert (await aw(other.queue_query(queue))).message_count == 0
            await aw(other.close())

    adapter.run(scenario)


def test_a_message_sent_by_one_adapter_is_received_by_the_others(broker: BrokerProcess) -> None:
    """The blocking adapter sends, asyncio and trio receive (one message each)."""
    queue = "ad.shared"

    async def send() -> None:
        async with ADAPTERS["sockets"].connected(broker.url, protocol="0-10") as conn:
            session = await aw(conn.session("sender"))
            await aw(session.queue_declare(queue))
            for body in (b"to-aio", b"to-trio"):
                await aw(session.send(body, routing_key=queue))

    def receiver(adapter: Adapter) -> Any:
        async def receive() -> bytes:
            async with adapter.connected(broker.url, protocol="0-10") as conn:
                session = await aw(conn.session("receiver"))
                await aw(session.subscribe(queue, credit=1))
                d = await aw(session.receive(queue))
                await aw(session.accept(d))
                await aw(session.close())
                body: bytes = d.body
                return body

        return adapter.run(receive)

    ADAPTERS["sockets"].run(send)
    assert receiver(ADAPTERS["aio"]) == b"to-aio"
    assert receiver(ADAPTERS["trio"]) == b"to-trio"


def test_a_cut_connection_resumes_its_session(adapter: Adapter, broker: BrokerProcess) -> None:
    """With ``reconnect=``, through a proxy the test cuts: the connection is made again and
    its session resumed by the broker, which kept it (``keep``, 60 s by default); what is
    sent after the cut arrives, once, and so does what was sent before."""
    queue = f"ad.resume.{adapter.name}"

    async def scenario(p: Any) -> None:
        reconnected: list[Any] = []
        url = f"amqp://127.0.0.1:{p.port}"
        options = {"reconnect": FAST, "on_reconnect": reconnected.append}
        async with adapter.connected(url, protocol="0-10", **options) as conn:
            session = await aw(conn.session(f"survivor-{adapter.name}"))
            await aw(session.queue_declare(queue))
            await aw(session.send(b"before", routing_key=queue))
            p.cut()
            await aw(session.send(b"after", routing_key=queue))
            assert conn.reconnects >= 1 and reconnected == [conn]
            await aw(session.subscribe(queue, credit=5))
            got = [await aw(session.receive(queue)) for _ in range(2)]
            assert [d.body for d in got] == [b"before", b"after"]
            await aw(session.accept(*got))
            with pytest.raises(TimeoutError):
                await aw(session.receive(queue, timeout=0.3))
            await aw(session.close())

    with proxy(broker.port) as p:
        adapter.run(scenario, p)
