"""AMQP 0-9-1 through each adapter (``connect(url, protocol="0-9-1")``) against RabbitMQ,
every class end to end: exchanges of each type, exchange-to-exchange bindings, queues
(declare, bind, unbind, purge, delete), publish with ``mandatory`` (returned), consumers
with a prefetch, ack, nack and reject (``multiple`` too), get, recover, publisher confirms,
transactions, channel errors (404, 406) that leave the connection usable, cancellation and
time-outs, and reconnection through a proxy the test cuts. The protocol is chosen, never
guessed. Skipped, saying why, without ``AMQP_SANSIO_RABBITMQ_URL``."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from support.adapters import ADAPTERS, WAIT, Adapter, aw
from support.proxy import proxy
from support.rabbitmq import rabbitmq_url

from amqp_sansio.amqp091 import BasicProperties
from amqp_sansio.client.amqp091 import ChannelClosedError, Confirmation, Returned
from amqp_sansio.client.ops import ConnectionClosedError
from amqp_sansio.client.reconnect import Reconnect

FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0.0)


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


@pytest.fixture
def url() -> str:
    """RabbitMQ's URL with the default virtual host, as RabbitMQ's URI spec writes it."""
    return rabbitmq_url() + "/%2f"


def unique(what: str) -> str:
    return f"amqp-sansio-091-{what}-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def connected(adapter: Adapter, url: str, **options: Any) -> AsyncIterator[Any]:
    """A 0-9-1 connection through ``adapter``, closed at the end."""
    if adapter.name == "trio":
        async with adapter.module.connect(url, protocol="0-9-1", timeout=WAIT, **options) as c:
            yield c
        return
    conn = await aw(adapter.module.connect(url, protocol="0-9-1", timeout=WAIT, **options))
    try:
        yield conn
    finally:
        await aw(conn.close())


async def receive_n(consumer: Any, n: int, timeout: float = WAIT) -> list[Any]:
    return [await aw(consumer.receive(timeout=timeout)) for _ in range(n)]


async def drain(channel: Any, queue: str) -> list[bytes]:
    """What ``queue`` holds, by ``basic.get`` (acknowledged)."""
    bodies = []
    while (delivery := await aw(channel.basic_get(queue))) is not None:
        bodies.append(delivery.body)
        delivery.ack()
    return bodies


# -- exchanges, queues, bindings -------------------------------------------------------------


def test_exchanges_of_each_type_and_their_bindings(adapter: Adapter, url: str) -> None:
    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            await aw(ch.confirm_select())
            names = {kind: unique(kind) for kind in ("direct", "fanout", "topic", "headers")}
            for kind, name in names.items():
                await aw(ch.exchange_declare(name, kind, auto_delete=False))
                await aw(ch.exchange_declare(name, kind, passive=True))  # it exists
            queue = (await aw(ch.queue_declare("", exclusive=True))).queue
            assert queue.startswith("amq.gen-")
            await aw(ch.queue_bind(queue, names["direct"], routing_key="k"))
            await aw(ch.queue_bind(queue, names["fanout"]))
            await aw(ch.queue_bind(queue, names["topic"], routing_key="a.*"))
            await aw(ch.queue_bind(queue, names["headers"], arguments={"x-match": "all", "h": "v"}))
            send = [
                (names["direct"], "k", {}),
                (names["direct"], "other", {}),  # not routed
                (names["fanout"], "whatever", {}),
                (names["topic"], "a.b", {}),
                (names["topic"], "b.a", {}),  # not routed
                (names["headers"], "", {"h": "v"}),
                (names["headers"], "", {"h": "w"}),  # not routed
            ]
            for exchange, key, headers in send:
                body = f"{exchange}/{key}/{headers}".encode()
                properties = BasicProperties(headers=headers)
                confirmation = await aw(
                    ch.basic_publish(exchange, key, body, properties=properties)
                )
                assert confirmation == Confirmation(ack=True)
            expected = {b"%s/%s/%s" % (e.encode(), k.encode(), str(h).encode()) for e, k, h in send}
            got = await drain(ch, queue)
            assert len(got) == 4 and set(got) <= expected
            assert all(b"other" not in g and b"b.a" not in g and b"'w'" not in g for g in got)

            # exchange to exchange (RabbitMQ's extension): the fanout feeds the topic
            await aw(ch.exchange_bind(names["topic"], names["fanout"]))
            await aw(ch.queue_unbind(queue, names["fanout"]))
            await aw(ch.basic_publish(names["fanout"], "a.z", b"via-e2e"))
            assert await drain(ch, queue) == [b"via-e2e"]
            await aw(ch.exchange_unbind(names["topic"], names["fanout"]))
            await aw(ch.queue_unbind(queue, names["direct"], routing_key="k"))
            await aw(ch.basic_publish(names["fanout"], "a.z", b"gone"))
            await aw(ch.basic_publish(names["direct"], "k", b"gone"))
            assert await drain(ch, queue) == []

            for name in names.values():
                await aw(ch.exchange_delete(name))
            with pytest.raises(ChannelClosedError) as refused:
                await aw(ch.exchange_declare(names["direct"], "direct", passive=True))
            assert refused.value.reply_code == 404
            # the channel is closed, the connection is not
            with pytest.raises(ChannelClosedError):
                await aw(ch.queue_declare("", exclusive=True))
            again = await aw(conn.channel())
            assert (await aw(again.queue_declare("", exclusive=True))).queue

    adapter.run(scenario)


def test_queue_declare_purge_delete(adapter: Adapter, url: str) -> None:
    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            name = unique("queue")
            ok = await aw(ch.queue_declare(name, arguments={"x-max-length": 100}))
            assert (ok.queue, ok.message_count, ok.consumer_count) == (name, 0, 0)
            await aw(ch.confirm_select())
            for i in range(3):
                await aw(ch.basic_publish("", name, b"%d" % i))
            assert (await aw(ch.queue_declare(name, passive=True))).message_count == 3
            assert await aw(ch.queue_purge(name)) == 3
            for i in range(2):
                await aw(ch.basic_publish("", name, b"%d" % i))
            assert await aw(ch.queue_delete(name, if_empty=False)) == 2
            with pytest.raises(ChannelClosedError) as gone:
                await aw(ch.queue_declare(name, passive=True))
            assert gone.value.reply_code == 404
            assert "no queue" in gone.value.reply_text

    adapter.run(scenario)


def test_a_redeclare_with_other_arguments_is_406_and_the_connection_stays(
    adapter: Adapter, url: str
) -> None:
    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            name = unique("precondition")
            await aw(ch.queue_declare(name, auto_delete=True))
            with pytest.raises(ChannelClosedError) as refused:
                await aw(ch.queue_declare(name, durable=True))
            error = refused.value
            assert (error.reply_code, error.class_id, error.method_id) == (406, 50, 10)
            assert "PRECONDITION_FAILED" in str(error)
            other = await aw(conn.channel())
            assert (await aw(other.queue_declare(name, passive=True))).queue == name
            await aw(other.queue_delete(name))

    adapter.run(scenario)


# -- publishing ------------------------------------------------------------------------------


def test_mandatory_publish_is_returned(adapter: Adapter, url: str) -> None:
    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            returned: list[Returned] = []
            ch.on_return = returned.append
            assert ch.on_return == returned.append and repr(ch) == f"<Channel {ch.number}>"
            await aw(ch.confirm_select())
            key = unique("nowhere")
            confirmation = await aw(ch.basic_publish("amq.direct", key, b"lost?", mandatory=True))
            assert confirmation.ack
            assert confirmation.returned is not None
            assert (confirmation.returned.reply_code, confirmation.returned.body) == (312, b"lost?")
            assert confirmation.returned.routing_key == key
            assert returned == [confirmation.returned]
            plain = await aw(ch.basic_publish("amq.direct", key, b"dropped"))
            assert plain == Confirmation(ack=True)  # not mandatory: dropped, not returned
            # without confirm mode the return still comes, to on_return
            other = await aw(conn.channel())
            got: list[Returned] = []
            other.on_return = got.append
            assert await aw(other.basic_publish("amq.direct", key, b"x", mandatory=True)) is None
            await aw(other.queue_declare("", exclusive=True))  # a round trip: the return came
            assert [r.body for r in got] == [b"x"]

    adapter.run(scenario)


def test_confirms_without_waiting_and_transactions(adapter: Adapter, url: str) -> None:
    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            queue = (await aw(ch.queue_declare("", exclusive=True))).queue
            await aw(ch.confirm_select())
            trackers = [
                await aw(ch.basic_publish("", queue, b"%d" % i, wait=False)) for i in range(200)
            ]
            assert isinstance(trackers[0], adapter.module.ConfirmTracker)
            confirmations = [await aw(t.confirmation(timeout=WAIT)) for t in trackers]
            assert all(c == Confirmation(ack=True) for c in confirmations)
            assert all(t.done() for t in trackers)
            assert (await aw(ch.queue_purge(queue))) == 200

            tx = await aw(conn.channel())
            await aw(tx.tx_select())
            assert await aw(tx.basic_publish("", queue, b"rolled back")) is None
            await aw(tx.tx_rollback())
            assert await drain(ch, queue) == []
            await aw(tx.basic_publish("", queue, b"committed"))
            await aw(tx.tx_commit())
            assert await drain(ch, queue) == [b"committed"]
            # an ack in a transaction counts only at the commit
            await aw(tx.basic_publish("", queue, b"acked in tx"))
            await aw(tx.tx_commit())
            delivery = await aw(tx.basic_get(queue))
            delivery.ack()
            await aw(tx.tx_rollback())
            await aw(tx.basic_recover())
            again = await aw(tx.basic_get(queue))
            assert again.body == b"acked in tx" and again.redelivered
            again.ack()
            await aw(tx.tx_commit())
            assert await aw(ch.basic_get(queue)) is None

    adapter.run(scenario)


# -- consuming -------------------------------------------------------------------------------


def test_consume_with_prefetch_ack_nack_reject(adapter: Adapter, url: str) -> None:
    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            queue = (await aw(ch.queue_declare("", exclusive=True))).queue
            await aw(ch.confirm_select())
            for i in range(10):
                await aw(ch.basic_publish("", queue, b"%d" % i))
            await aw(ch.basic_qos(3))
            consumer = await aw(ch.basic_consume(queue))
            assert consumer.tag.startswith("amq.ctag-")
            first = await receive_n(consumer, 3)
            assert [d.body for d in first] == [b"0", b"1", b"2"]
            assert [d.delivery_tag for d in first] == [1, 2, 3]
            with pytest.raises(TimeoutError):  # the prefetch holds the rest back
                await aw(consumer.receive(timeout=0.3))
            first[2].ack(multiple=True)  # all three
            assert all(d.settled for d in first)
            first[0].ack()  # settled already: nothing is sent (the server would close)
            second = await receive_n(consumer, 3)
            assert [d.body for d in second] == [b"3", b"4", b"5"]
            second[0].nack(requeue=False)  # dropped
            second[1].reject(requeue=True)  # back to the queue
            second[2].nack(multiple=True, requeue=True)  # and this one
            rest = await receive_n(consumer, 3)
            assert [d.body for d in rest] == [b"4", b"5", b"6"] or {d.body for d in rest} == {
                b"4",
                b"5",
                b"6",
            }
            assert [d.redelivered for d in rest if d.body in (b"4", b"5")] == [True, True]
            rest[-1].ack(multiple=True)
            last = await receive_n(consumer, 3)
            assert {d.body for d in last} == {b"7", b"8", b"9"}
            last[-1].ack(multiple=True)
            await aw(consumer.cancel())
            assert await aw(consumer.receive(timeout=WAIT)) is None
            assert await aw(ch.queue_purge(queue)) == 0

    adapter.run(scenario)


def test_get_recover_and_a_consumer_the_server_cancels(adapter: Adapter, url: str) -> None:
    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            queue = unique("cancelled")
            await aw(ch.queue_declare(queue, auto_delete=False))
            await aw(ch.confirm_select())
            await aw(ch.basic_publish("", queue, b"one"))
            got = await aw(ch.basic_get(queue))
            assert (got.body, got.message_count, got.redelivered) == (b"one", 0, False)
            await aw(ch.basic_recover(requeue=True))
            again = await aw(ch.basic_get(queue, no_ack=True))
            assert (again.body, again.redelivered, again.settled) == (b"one", True, True)
            got.ack()  # from before the recover: that delivery tag is gone, nothing is sent
            consumer = await aw(ch.basic_consume(queue, no_ack=True))
            other = await aw(conn.channel())
            await aw(other.queue_delete(queue))
            assert await aw(consumer.receive(timeout=WAIT)) is None
            assert consumer.cancelled_by_server
            assert (await aw(ch.queue_declare("", exclusive=True))).queue  # channel still open

    adapter.run(scenario)


def test_cancelled_and_timed_out_calls_leave_the_channel_in_step(
    adapter: Adapter, url: str
) -> None:
    """A receive that times out has taken nothing; a synchronous call that times out after
    it was sent leaves its reply to itself, so the next call gets its own."""

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            ch = await aw(conn.channel())
            queue = (await aw(ch.queue_declare("", exclusive=True))).queue
            consumer = await aw(ch.basic_consume(queue, no_ack=True))
            with pytest.raises(TimeoutError):
                await aw(consumer.receive(timeout=0.05))
            with pytest.raises(TimeoutError):
                await aw(ch.queue_declare(unique("late"), auto_delete=True, timeout=0))
            mine = unique("mine")
            assert (await aw(ch.queue_declare(mine, auto_delete=True))).queue == mine
            await aw(ch.basic_publish("", queue, b"after"))
            delivery = await aw(consumer.receive(timeout=WAIT))
            assert delivery.body == b"after"

    adapter.run(scenario)


def test_cancelled_calls_in_the_async_adapters(url: str) -> None:
    """An asyncio task or a trio cancel scope cancelled in a call: a receive has taken
    nothing; a declare already sent leaves its reply to itself (the next call gets its
    own); the connection goes on."""
    import asyncio
    import contextlib

    import trio
    from amqp_sansio.adapters import aio, trio_adapter

    async def check(conn: Any, cancel_receive: Any, cancel_declare: Any) -> None:
        ch = await conn.channel()
        queue = (await ch.queue_declare("", exclusive=True)).queue
        consumer = await ch.basic_consume(queue, no_ack=True)
        await cancel_receive(consumer.receive())
        await cancel_declare(ch.queue_declare(unique("cancelled"), auto_delete=True))
        mine = unique("mine")
        assert (await ch.queue_declare(mine, auto_delete=True)).queue == mine
        await ch.basic_publish("", queue, b"after")
        assert (await consumer.receive(timeout=WAIT)).body == b"after"

    async def with_asyncio() -> None:
        async def cancelled(call: Any) -> None:
            task = asyncio.ensure_future(call)
            await asyncio.sleep(0.05)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        async with aio.connect(url, protocol="0-9-1", timeout=WAIT) as conn:
            await check(conn, cancelled, cancelled)

    async def with_trio() -> None:
        async def timed_out(call: Any) -> None:
            with trio.move_on_after(0.05) as scope:
                await call
            assert scope.cancelled_caught

        async def cancelled_at_once(call: Any) -> None:
            with trio.CancelScope() as scope:
                scope.cancel()
                await call
            assert scope.cancelled_caught

        async with trio_adapter.connect(url, protocol="0-9-1", timeout=WAIT) as conn:
            await check(conn, timed_out, cancelled_at_once)

    asyncio.run(with_asyncio())
    trio.run(with_trio)


# -- the protocol is chosen, never guessed ---------------------------------------------------


def test_the_protocol_is_explicit(adapter: Adapter, url: str) -> None:
    with pytest.raises(ValueError, match=r"protocol is one of 1\.0, 0-9-1"):
        adapter.module.connect(url, protocol="0-9")
    with pytest.raises(ValueError, match=r"idle_timeout: AMQP 1\.0 options"):
        adapter.module.connect(url, protocol="0-9-1", idle_timeout=5)

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            assert conn.blocked is None
            assert "guest:***@" in repr(conn) and ":guest@" not in repr(conn)

    adapter.run(scenario)


def test_amqplain_logs_in_to_rabbitmq_when_asked(adapter: Adapter, url: str) -> None:
    """``sasl_mechanisms`` means for 0-9-1 what it means for 1.0: one name forces the
    mechanism. RabbitMQ offers PLAIN and AMQPLAIN; without the option PLAIN is used."""

    async def scenario() -> None:
        for asked, used in ((["AMQPLAIN"], "AMQPLAIN"), (None, "PLAIN")):
            async with connected(adapter, url, sasl_mechanisms=asked) as conn:
                mechanism = conn.core.engine.mechanism
                assert mechanism is not None and mechanism.name == used
                ch = await aw(conn.channel())
                declared = await aw(ch.queue_declare("", exclusive=True))
                assert declared.queue.startswith("amq.gen-")

    adapter.run(scenario)


def test_update_secret_with_rabbitmq(adapter: Adapter, url: str) -> None:
    """``connection.update-secret`` (RabbitMQ's extension): RabbitMQ answers
    ``update-secret-ok`` and the connection goes on (its internal users' backend takes the
    secret; our broker's refusal, 530, is in tests/broker/amqp091/test_update_secret.py)."""
    password = url.split("@", 1)[0].rsplit(":", 1)[1]

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            assert await aw(conn.update_secret(password, "refresh")) is None
            assert conn.core.url.password == password
            ch = await aw(conn.channel())
            declared = await aw(ch.queue_declare("", exclusive=True))
            assert declared.queue.startswith("amq.gen-")
            assert await aw(conn.update_secret(password, "again")) is None

    adapter.run(scenario)


def test_a_refused_login_is_an_authentication_error(adapter: Adapter, url: str) -> None:
    from amqp_sansio.client.amqp091 import AuthenticationError

    bad = url.replace("guest:guest@", "guest:wrong@")

    async def scenario() -> None:
        with pytest.raises(AuthenticationError) as refused:
            async with connected(adapter, bad):
                pass
        assert refused.value.reply_code == 403
        assert "wrong" not in str(refused.value)
        with pytest.raises(AuthenticationError) as refused:  # the same refusal by AMQPLAIN
            async with connected(adapter, bad, sasl_mechanisms=["AMQPLAIN"]):
                pass
        assert refused.value.reply_code == 403 and "AMQPLAIN" in str(refused.value)

    adapter.run(scenario)


# -- reconnection ----------------------------------------------------------------------------


def test_reconnection_through_a_proxy_that_is_cut(adapter: Adapter, url: str) -> None:
    """Cut mid-stream, the connection comes back: its channel is opened again with its
    prefetch, confirm mode, declarations and consumer; publishes whose confirms had not
    come are published again, so every message arrives at least once."""
    base = rabbitmq_url()
    port = int(base.rsplit(":", 1)[1])
    count = 300

    async def scenario(p: Any) -> None:
        via = f"amqp://guest:guest@127.0.0.1:{p.port}/%2f"
        reconnected: list[Any] = []
        async with connected(adapter, via, reconnect=FAST, on_reconnect=reconnected.append) as conn:
            ch = await aw(conn.channel())
            queue = unique("reconnect")
            await aw(ch.queue_declare(queue, auto_delete=False))
            await aw(ch.basic_qos(50))
            await aw(ch.confirm_select())
            consumer = await aw(ch.basic_consume(queue))
            trackers = []
            for i in range(count):
                trackers.append(await aw(ch.basic_publish("", queue, b"%d" % i, wait=False)))
                if i in (100, 200):
                    p.cut()
            for tracker in trackers:
                assert (await aw(tracker.confirmation(timeout=WAIT))).ack
            seen: set[bytes] = set()
            while len(seen) < count:
                delivery = await aw(consumer.receive(timeout=WAIT))
                seen.add(delivery.body)
                delivery.ack()
            assert conn.reconnects >= 1 and reconnected
            await aw(ch.queue_delete(queue))

    with proxy(port) as p:
        adapter.run(scenario, p)


def test_without_reconnect_a_cut_ends_the_connection(adapter: Adapter, url: str) -> None:
    base = rabbitmq_url()
    port = int(base.rsplit(":", 1)[1])

    async def scenario(p: Any) -> None:
        via = f"amqp://guest:guest@127.0.0.1:{p.port}/%2f"
        async with connected(adapter, via) as conn:
            ch = await aw(conn.channel())
            queue = (await aw(ch.queue_declare("", exclusive=True))).queue
            consumer = await aw(ch.basic_consume(queue))
            p.cut()
            with pytest.raises(ConnectionClosedError) as lost:
                await aw(consumer.receive(timeout=WAIT))
            assert lost.value.retryable
            with pytest.raises(ConnectionClosedError):
                await aw(conn.channel())

    with proxy(port) as p:
        adapter.run(scenario, p)


# -- the docs' examples ----------------------------------------------------------------------


def _examples() -> dict[str, str]:
    """The named code blocks of docs/amqp091.rst, dedented."""
    import re
    import textwrap

    from support import ROOT

    text = (ROOT / "docs" / "amqp091.rst").read_text()
    pattern = r"\.\. code-block:: python\n   :name: (example-091-\w+)\n\n((?:(?:   .*)?\n)+)"
    return {name: textwrap.dedent(body) for name, body in re.findall(pattern, text)}


@pytest.mark.parametrize("example", ["example-091-sockets", "example-091-aio", "example-091-trio"])
def test_the_docs_examples_run(example: str, url: str) -> None:
    examples = _examples()
    assert "example-091-url" in examples  # the one the docs show; the test's RabbitMQ instead
    namespace: dict[str, Any] = {"__name__": "docs_example", "URL": url}
    exec(compile(examples[example], example, "exec"), namespace)
