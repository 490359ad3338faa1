"""The behavioural suite of the high-level adapters, run over each of them.

Every scenario is written once, as a coroutine over an adapter's public API: ``await
aw(x)`` awaits what the asyncio and trio adapters return and takes the blocking adapter's
result as it is, so the same code drives all three (a blocking adapter's scenario never
really suspends and is run by stepping its coroutine once; a trio scenario runs under
``trio.run`` with strict exception groups, and an instrument checks that no task step
blocks the loop). Peers: our own server side (each adapter's
``listen``, serving the small broker of ``support/adapter_broker.py`` from a thread), Qpid Proton
(a small broker on a ``Container`` in a thread), and RabbitMQ when
``AMQP_SANSIO_RABBITMQ_URL`` is set.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest
import trio
from amqp_sansio.adapters import aio, sockets, trio_adapter
from support import ROOT
from support.adapter_broker import Broker
from support.adapters import ADAPTERS, WAIT, Adapter, aw, connected

import amqp_sansio as a
from amqp_sansio.client.ops import ConnectionClosedError, LinkDetachedError
from amqp_sansio.client.url import InsecureCredentialsError

#: Messages in each round trip (AMQP_SANSIO_ROUND_TRIP to change it).
COUNT = int(os.environ.get("AMQP_SANSIO_ROUND_TRIP", "10000"))
RABBITMQ = "AMQP_SANSIO_RABBITMQ_URL"


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


@pytest.fixture
def own(adapter: Adapter) -> Iterator[tuple[str, Broker]]:
    """Our own server side (the same adapter's ``listen``) serving a broker: its URL."""
    broker = Broker()
    with adapter.serve(broker.on_link) as port:
        yield f"amqp://127.0.0.1:{port}", broker


@contextlib.asynccontextmanager
async def transaction(conn: Any) -> AsyncIterator[Any]:
    """``with``/``async with conn.transaction()``, whichever the adapter has."""
    txn = conn.transaction()
    if hasattr(txn, "__aenter__"):
        async with txn as entered:
            yield entered
    else:
        with txn as entered:
            yield entered


async def receive_all(receiver: Any, count: int) -> list[Any]:
    """Iterate the receiver (``for`` or ``async for``), accepting, until ``count`` came."""
    bodies: list[Any] = []

    def take(delivery: Any) -> bool:
        bodies.append(delivery.message.body.value)
        delivery.accept()
        return len(bodies) == count

    if hasattr(receiver, "__aiter__"):
        async for delivery in receiver:
            if take(delivery):
                break
    else:
        for delivery in receiver:
            if take(delivery):
                break
    return bodies


async def round_trip(adapter: Adapter, url: str, address: str, count: int) -> None:
    async with connected(adapter, url) as conn:
        sender = await aw(conn.sender(address))
        receiver = await aw(conn.receiver(address, credit=200))
        for i in range(count):
            outcome = await aw(sender.send(f"m{i}"))
            assert isinstance(outcome, a.Accepted), outcome
        assert await receive_all(receiver, count) == [f"m{i}" for i in range(count)]
        assert sender.unsettled == 0


# -- round trips ---------------------------------------------------------------------------


def test_round_trip_against_our_server(adapter: Adapter, own: tuple[str, Broker]) -> None:
    url, _ = own
    adapter.run(round_trip, adapter, url, "queue", COUNT)


def test_round_trip_against_proton(adapter: Adapter, proton_broker: int) -> None:
    url = f"amqp://127.0.0.1:{proton_broker}"
    adapter.run(round_trip, adapter, url, f"queue-{uuid.uuid4().hex[:8]}", COUNT)


def test_round_trip_against_rabbitmq(adapter: Adapter) -> None:
    url = os.environ.get(RABBITMQ)
    if not url:
        pytest.skip(f"{RABBITMQ} is not set: no RabbitMQ to test against (.ci/run starts one)")
    address = f"/queue/hl-{adapter.name}-{uuid.uuid4().hex[:8]}"
    adapter.run(round_trip, adapter, url, address, COUNT)


def test_presettled_sends_return_at_once(adapter: Adapter, own: tuple[str, Broker]) -> None:
    async def scenario() -> None:
        async with connected(adapter, own[0]) as conn:
            sender = await aw(conn.sender("fast", settled=True))
            receiver = await aw(conn.receiver("fast", credit=50))
            for i in range(100):
                assert await aw(sender.send(i)) is None
            assert await receive_all(receiver, 100) == list(range(100))

    adapter.run(scenario)


def test_sends_without_waiting_return_trackers(adapter: Adapter, own: tuple[str, Broker]) -> None:
    async def scenario() -> None:
        async with connected(adapter, own[0]) as conn:
            sender = await aw(conn.sender("pipelined"))
            receiver = await aw(conn.receiver("pipelined", credit=300))
            trackers = [await aw(sender.send(f"p{i}", wait=False)) for i in range(250)]
            assert isinstance(trackers[0], adapter.module.Tracker)
            outcomes = [await aw(t.outcome(timeout=WAIT)) for t in trackers]
            assert all(isinstance(outcome, a.Accepted) for outcome in outcomes)
            assert all(t.done() for t in trackers) and sender.unsettled == 0
            assert await receive_all(receiver, 250) == [f"p{i}" for i in range(250)]
            presettled = await aw(conn.sender("pipelined", settled=True))
            tracker = await aw(presettled.send("x", wait=False))
            assert tracker.done() and await aw(tracker.outcome()) is None

    adapter.run(scenario)


# -- outcomes and settlement ----------------------------------------------------------------


def test_outcomes_both_ways(adapter: Adapter, own: tuple[str, Broker]) -> None:
    url, broker = own

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            rejected = await aw(conn.sender("reject/x"))
            outcome = await aw(rejected.send("no"))
            assert isinstance(outcome, a.Rejected)
            assert str(outcome.error.condition) == "amqp:not-allowed"
            sender = await aw(conn.sender("settle"))
            receiver = await aw(conn.receiver("settle", credit=10))
            for body in ("release", "reject", "modify", "accept"):
                await aw(sender.send(body))
            for _ in range(4):
                delivery = await aw(receiver.receive(timeout=WAIT))
                body = delivery.message.body.value
                if body == "release":
                    delivery.release()
                elif body == "reject":
                    delivery.reject(a.Error(condition=a.Symbol("app:bad")))
                elif body == "modify":
                    delivery.modify(undeliverable_here=True)
                else:
                    delivery.accept()
                assert delivery.settled
            await aw(receiver.drain(timeout=WAIT))  # dispositions are out by now

    adapter.run(scenario)
    kinds = [type(o).__name__ for o in broker.outcomes]
    assert kinds == ["Released", "Rejected", "Modified", "Accepted"]


def test_auto_accept_and_drain(adapter: Adapter, own: tuple[str, Broker]) -> None:
    url, broker = own

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            sender = await aw(conn.sender("auto"))
            for i in range(3):
                await aw(sender.send(i))
            receiver = await aw(conn.receiver("auto", credit=10, auto_accept=True))
            await aw(receiver.drain(timeout=WAIT))  # all three are here now
            bodies = [(await aw(receiver.receive(timeout=WAIT))).message.body.value for _ in "abc"]
            assert bodies == [0, 1, 2]
            with pytest.raises(TimeoutError):
                await aw(receiver.receive(timeout=0.2))
            # A drain that finds nothing leaves the link with credit again (it once stayed
            # at zero: the next message never came).
            await aw(receiver.drain(timeout=WAIT))
            await aw(sender.send(3))
            assert (await aw(receiver.receive(timeout=WAIT))).message.body.value == 3

    adapter.run(scenario)
    assert [type(o).__name__ for o in broker.outcomes] == ["Accepted"] * 4


def test_a_refused_link_raises(adapter: Adapter, own: tuple[str, Broker]) -> None:
    async def scenario() -> None:
        async with connected(adapter, own[0]) as conn:
            with pytest.raises(LinkDetachedError, match="amqp:not-found"):
                await aw(conn.sender("missing/x"))
            sender = await aw(conn.sender("ok"))  # the connection is still usable
            assert isinstance(await aw(sender.send("x")), a.Accepted)

    adapter.run(scenario)


# -- request/reply and transactions ----------------------------------------------------------


def test_request_reply_through_a_dynamic_receiver(
    adapter: Adapter, own: tuple[str, Broker]
) -> None:
    async def scenario() -> None:
        async with connected(adapter, own[0]) as conn:
            replies = await aw(conn.receiver(dynamic=True))
            assert replies.address and replies.address.startswith("temp/")
            requests = await aw(conn.sender("service"))
            await aw(
                requests.send(
                    a.Message(body="ping", properties=a.Properties(reply_to=replies.address))
                )
            )
            # The service's side: take the request, answer to its reply-to.
            inbox = await aw(conn.receiver("service"))
            request = await aw(inbox.receive(timeout=WAIT))
            request.accept()
            reply_to = request.message.properties.reply_to
            answer = await aw(conn.sender(reply_to))
            await aw(answer.send(f"pong to {request.message.body.value}"))
            reply = await aw(replies.receive(timeout=WAIT))
            reply.accept()
            assert reply.message.body.value == "pong to ping"

    adapter.run(scenario)


def test_a_transaction_commits_or_rolls_back(adapter: Adapter, own: tuple[str, Broker]) -> None:
    url, broker = own

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            sender = await aw(conn.sender("txn"))
            async with transaction(conn) as txn:
                for i in range(3):
                    outcome = await aw(sender.send(f"kept {i}", transaction=txn))
                    assert isinstance(outcome, a.Accepted)
                assert not broker.queues["txn"]  # held until the commit
            assert txn.committed is True
            with pytest.raises(KeyError):
                async with transaction(conn) as txn2:
                    await aw(sender.send("dropped", transaction=txn2))
                    raise KeyError("the block failed")
            assert txn2.committed is False
            receiver = await aw(conn.receiver("txn"))
            assert await receive_all(receiver, 3) == ["kept 0", "kept 1", "kept 2"]
            with pytest.raises(TimeoutError):
                await aw(receiver.receive(timeout=0.2))

    adapter.run(scenario)


# -- liveness --------------------------------------------------------------------------------


def test_heartbeats_keep_an_idle_connection_alive(adapter: Adapter) -> None:
    broker = Broker()
    with adapter.serve(broker.on_link, idle_timeout=0.4) as port:

        async def scenario() -> None:
            async with connected(adapter, f"amqp://127.0.0.1:{port}", idle_timeout=0.4) as conn:
                sender = await aw(conn.sender("idle"))
                await adapter.idle(conn, 1.5)  # several idle time-outs of both ends
                assert isinstance(await aw(sender.send("still here")), a.Accepted)

        adapter.run(scenario)


@contextlib.contextmanager
def silent_peer() -> Iterator[int]:
    """A server that answers the open, then never sends another byte."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        sock, _ = listener.accept()
        # A server's default SASL layer (anonymous access), which the client's default meets.
        engine = a.Connection(
            client=False, sasl=a.sasl.ServerAuthenticator(None, allow_anonymous=True)
        )
        with sock:
            while not stop.is_set():
                data = sock.recv(65536)
                if not data:
                    return
                if any(
                    isinstance(e, a.events.ConnectionOpened) for e in engine.receive_data(data, 0.0)
                ):
                    engine.open()
                    sock.sendall(engine.data_to_send())
                    stop.wait(WAIT)  # silent from now on
                    return
                sock.sendall(engine.data_to_send())  # the SASL exchange

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        thread.join(WAIT)


def test_a_silent_peer_is_detected(adapter: Adapter) -> None:
    with silent_peer() as port:

        async def scenario() -> None:
            async with connected(adapter, f"amqp://127.0.0.1:{port}", idle_timeout=0.5) as conn:
                start = time.monotonic()
                with pytest.raises(ConnectionClosedError, match="stopped answering"):
                    await aw(conn.receiver("anything", timeout=WAIT))
                assert time.monotonic() - start < 3

        adapter.run(scenario)


# -- cancellation ----------------------------------------------------------------------------


def test_a_send_given_up_while_waiting_for_credit_sends_nothing(
    adapter: Adapter, own: tuple[str, Broker]
) -> None:
    url, broker = own

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            held = await aw(conn.sender("hold/x"))
            with pytest.raises(TimeoutError):
                await aw(held.send("never", timeout=0.2))
            assert held.unsettled == 0
            sender = await aw(conn.sender("after"))
            assert isinstance(await aw(sender.send("usable")), a.Accepted)

    adapter.run(scenario)
    assert not broker.queues["hold/x"]


def test_a_send_given_up_after_the_transfer_stays_tracked(
    adapter: Adapter, own: tuple[str, Broker]
) -> None:
    async def scenario() -> None:
        async with connected(adapter, own[0]) as conn:
            pending = await aw(conn.sender("unsettled/x"))
            with pytest.raises(TimeoutError):
                await aw(pending.send("no outcome comes", timeout=0.2))
            assert pending.unsettled == 1
            sender = await aw(conn.sender("after"))
            assert isinstance(await aw(sender.send("usable")), a.Accepted)

    adapter.run(scenario)


@pytest.mark.parametrize("adapter", ["aio"], indirect=True)  # task cancellation is asyncio's
def test_asyncio_cancellation_mid_send(own: tuple[str, Broker], adapter: Adapter) -> None:

    async def scenario() -> None:
        async with aio.connect(own[0]) as conn:
            held = await conn.sender("hold/y")
            task = asyncio.ensure_future(held.send("never"))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert held.unsettled == 0
            pending = await conn.sender("unsettled/y")
            task = asyncio.ensure_future(pending.send("sent"))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert pending.unsettled == 1
            async with asyncio.TaskGroup() as group:  # concurrent sends on one link
                sender = await conn.sender("group")
                tasks = [group.create_task(sender.send(i)) for i in range(20)]
            assert all(isinstance(t.result(), a.Accepted) for t in tasks)

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_a_cancellation_as_a_timed_wait_ends_is_never_lost() -> None:
    """Before Python 3.12, :func:`asyncio.wait_for` returns the result when the awaitable
    completes in the turn its task is cancelled, and the cancellation is lost: a Ctrl-C
    under :func:`asyncio.run` (a cancellation of the main task) as an outcome came left
    ``amqp-sansio pipeline`` publishing. Every wait of the asyncio adapter with a time-out
    goes through :func:`aio.within`, which keeps it."""

    async def race() -> str:
        done: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(aio.within(done, 10))
        await asyncio.sleep(0)  # (the task waits)
        done.set_result("done")
        task.cancel()
        try:
            return await task
        except asyncio.CancelledError:
            return "cancelled"

    async def times_out() -> None:
        with pytest.raises(TimeoutError):
            await aio.within(asyncio.sleep(5), 0.01)
        assert await aio.within(asyncio.sleep(0, "slept"), None) == "slept"

    assert asyncio.run(race()) == "cancelled"
    asyncio.run(times_out())


@pytest.mark.parametrize("adapter", ["trio"], indirect=True)  # cancel scopes are trio's
def test_trio_cancellation_mid_send(own: tuple[str, Broker], adapter: Adapter) -> None:

    async def scenario() -> None:
        async with trio_adapter.connect(own[0]) as conn:
            held = await conn.sender("hold/z")
            with trio.move_on_after(0.05) as scope:
                await held.send("never")
            assert scope.cancelled_caught
            assert held.unsettled == 0
            pending = await conn.sender("unsettled/z")
            async with trio.open_nursery() as nursery:  # cancelled from another task
                nursery.start_soon(pending.send, "sent")
                await trio.sleep(0.05)
                nursery.cancel_scope.cancel()
            assert pending.unsettled == 1
            receiver = await conn.receiver("empty")
            with trio.move_on_after(0.05):
                await receiver.receive()
            results: list[Any] = []
            sender = await conn.sender("group")

            async def send(i: int) -> None:
                results.append(await sender.send(i))

            async with trio.open_nursery() as nursery:  # concurrent sends on one link
                for i in range(20):
                    nursery.start_soon(send, i)
            assert len(results) == 20 and all(isinstance(r, a.Accepted) for r in results)
            got = await aw(receive_all(await conn.receiver("group"), 20))
            assert sorted(got) == list(range(20))
            with trio.CancelScope() as scope:  # a cancelled scope: nothing is attempted
                scope.cancel()
                await held.send("not even tried")
            assert held.unsettled == 0

    trio.run(scenario, strict_exception_groups=True)


@pytest.mark.parametrize("adapter", ["trio"], indirect=True)  # checkpoints are trio's convention
def test_trio_calls_are_cancel_points_and_yield(own: tuple[str, Broker], adapter: Adapter) -> None:
    """Trio's rules for a library's async calls. Every call is a cancel point: in a
    cancelled scope it raises ``Cancelled`` before doing anything, even when it would not
    have waited. A call that waits is a full checkpoint (:func:`trio.testing.assert_checkpoints`).
    A call that need not wait (a send under credit, a delivery already there) yields to
    the other tasks at least once every ``FAST_CALLS`` calls, so a loop of them never
    starves the rest of the program; not at every call, which would cost three quarters
    of the throughput (``bench loopback --adapter trio``: 45,000 msg/s become 10,000,
    each write carrying one message)."""
    from trio.testing import assert_checkpoints

    fast = trio_adapter.FAST_CALLS

    async def scenario() -> None:
        async with trio_adapter.connect(own[0]) as conn:
            sender = await conn.sender("cp")
            receiver = await conn.receiver("cp", credit=1000)
            tracker = await sender.send("first", wait=False)
            await tracker.outcome()
            first = await receiver.receive()
            assert first is not None
            first.accept()
            txn = conn.transaction()
            await txn.declare()
            calls: list[Callable[[], Awaitable[Any]]] = [
                conn.receiver,
                lambda: conn.sender("cp"),
                lambda: sender.send("not sent", wait=False),
                lambda: sender.send("not sent"),
                tracker.outcome,
                receiver.receive,
                receiver.drain,
                txn.declare,
                lambda: txn.discharge(commit=False),
            ]
            for call in calls:
                with trio.CancelScope() as scope:
                    scope.cancel()
                    await call()
                assert scope.cancelled_caught, call
            assert sender.unsettled == 0 and not receiver.core.queue
            assert txn.committed is None and not conn.core.gone

            with assert_checkpoints():  # it waits for the outcome
                await sender.send("waits")
            ticks = 0

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await trio.lowlevel.checkpoint()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(ticker)
                await trio.lowlevel.checkpoint()
                before = ticks
                trackers = [await sender.send(i, wait=False) for i in range(10 * fast)]
                assert ticks - before >= 9, "a run of sends starved the other tasks"
                for t in trackers:
                    await t.outcome()
                await receiver.receive()  # "waits"
                await trio.sleep(0.1)  # the 10 * FAST_CALLS deliveries are all here now
                assert len(receiver.core.queue) == 10 * fast
                before = ticks
                for _ in range(10 * fast):
                    delivery = await receiver.receive()
                    assert delivery is not None
                    delivery.accept()
                assert ticks - before >= 9, "a run of receives starved the other tasks"
                nursery.cancel_scope.cancel()

            # A close in a cancelled scope closes (trio's rule for aclose), then raises.
            with trio.CancelScope() as scope:
                scope.cancel()
                await sender.close()
            assert scope.cancelled_caught and sender.core.link.state is not a.LinkState.ATTACHED
            with trio.CancelScope() as scope:
                scope.cancel()
                await conn.close()
            assert scope.cancelled_caught and conn.core.gone

        # A cancelled block on a connection whose tasks live on (an outer nursery): its
        # transaction still rolls back and its close is still graceful, shielded.
        async with trio.open_nursery() as nursery:
            conn = await trio_adapter.connect(own[0], nursery=nursery)
            with trio.CancelScope() as scope:
                async with conn.transaction() as txn:
                    await (await conn.sender("cp-txn")).send("rolled back", transaction=txn)
                    scope.cancel()
                    await trio.sleep(1)
            assert scope.cancelled_caught and txn.committed is False
            with trio.CancelScope() as scope:
                async with conn:
                    scope.cancel()
                    await trio.sleep(1)
            assert scope.cancelled_caught
            assert conn.core.engine.state is a.ConnectionState.END  # the peer answered
        # Cancelling the scope that holds the connection's own tasks ends it at once: the
        # transport is dropped (the peer rolls back what was never discharged) and the
        # block's Cancelled comes out as it is, not a ConnectionClosedError.
        with trio.fail_after(5), trio.CancelScope() as scope:
            async with trio_adapter.connect(own[0]) as conn, conn.transaction() as txn:
                await (await conn.sender("cp-txn")).send("dropped", transaction=txn)
                scope.cancel()
                await trio.sleep(1)
        assert scope.cancelled_caught and txn.committed is None and conn.core.gone
        assert not own[1].queues.get("cp-txn")

    trio.run(scenario, strict_exception_groups=True)


@pytest.mark.parametrize("adapter", ["trio"], indirect=True)  # nurseries are trio's
def test_trio_nurseries(own: tuple[str, Broker], adapter: Adapter) -> None:
    """``connect`` and ``listen`` in the application's nursery; an error in an ``async
    with`` block comes out as it is; no task outlives its connection or server."""
    broker = Broker()

    async def scenario() -> None:
        with pytest.raises(TypeError, match="nursery"):
            await trio_adapter.connect(own[0])
        with pytest.raises(TypeError, match="nursery"):
            await trio_adapter.listen("127.0.0.1", 0, broker.on_link)
        async with trio.open_nursery() as nursery:
            server = await trio_adapter.listen("127.0.0.1", 0, broker.on_link, nursery=nursery)
            conn = await trio_adapter.connect(f"amqp://127.0.0.1:{server.port}", nursery=nursery)
            async with conn:
                sender = await conn.sender("q")
                assert isinstance(await sender.send("hi"), a.Accepted)
                assert repr(conn).startswith("<trio.Connection")
            await server.close()
        # The nursery ended by itself: nothing of the connection or the server was left.
        with pytest.raises(KeyError):
            async with trio_adapter.connect(own[0]) as conn:
                raise KeyError("not in an exception group")
        with pytest.raises(TimeoutError):
            async with trio_adapter.connect(own[0]) as conn:
                await (await conn.receiver("nothing")).receive(timeout=0.1)

    async def main() -> None:
        with trio.fail_after(30):  # a leaked task would keep a nursery open
            await scenario()

    trio.run(main, strict_exception_groups=True)


# -- connecting ------------------------------------------------------------------------------


def test_credentials_are_not_sent_in_the_clear_to_another_host(adapter: Adapter) -> None:
    async def scenario() -> None:
        with pytest.raises(InsecureCredentialsError):
            async with connected(adapter, "amqp://user:secret@192.0.2.1/q"):
                pass

    adapter.run(scenario)


def test_sasl_plain_to_our_server(adapter: Adapter) -> None:
    class Store:
        def check_password(self, username: str, password: str) -> bool:
            return (username, password) == ("alice", "s3cret")

    broker = Broker()
    authenticator = a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True)
    with adapter.serve(broker.on_link, sasl=authenticator, allow_insecure_auth=True) as port:

        async def scenario() -> None:
            url = f"amqp://alice:s3cret@127.0.0.1:{port}/inbox"
            async with connected(adapter, url) as conn:
                sender = await aw(conn.sender())  # the URL's address
                assert sender.address == "inbox"
                assert isinstance(await aw(sender.send("hi")), a.Accepted)
            with pytest.raises(aio.AuthenticationError):
                async with connected(adapter, f"amqp://alice:wrong@127.0.0.1:{port}"):
                    pass

        adapter.run(scenario)


def test_on_connection_sees_the_peer_and_may_refuse(adapter: Adapter) -> None:
    """``listen(..., on_connection=...)``: each connection, once its open came, with who
    the peer is (SASL identity and mechanism, address, container-id, hostname); a refusal
    is our open and then a close with the error (core 2.4.1, 2.4.3), which the client
    raises; ``on_link`` sees the connection (``link.connection``) to decide by identity."""

    class Store:
        def check_password(self, username: str, password: str) -> bool:
            return password == f"{username}-pw"

    broker = Broker()
    seen: list[Any] = []

    def on_connection(conn: Any) -> None:
        seen.append(conn)
        if conn.identity == "mallory":
            conn.refuse()
        elif conn.identity == "eve":
            conn.refuse(a.Error(condition=a.Symbol("amqp:resource-limit-exceeded")))

    def on_link(link: Any) -> None:
        if link.connection.identity == "bob" and isinstance(link, sockets.IncomingLink):
            link.refuse(a.Error(condition=a.Symbol("amqp:unauthorized-access")))
        else:
            broker.on_link(link)

    authenticator = a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True)
    options = {"sasl": authenticator, "allow_insecure_auth": True}
    with adapter.serve(on_link, on_connection=on_connection, **options) as port:

        async def scenario() -> None:
            base = f"127.0.0.1:{port}"
            async with connected(adapter, f"amqp://alice:alice-pw@{base}/q") as conn:
                assert isinstance(await aw((await aw(conn.sender())).send("hi")), a.Accepted)
            incoming = seen[-1]
            assert (incoming.identity, incoming.mechanism) == ("alice", "PLAIN")
            assert incoming.peer[0] == "127.0.0.1" and isinstance(incoming.peer[1], int)
            assert incoming.container_id and incoming.hostname == "127.0.0.1"
            assert incoming.tls is None and incoming.refused is None
            assert "alice" in repr(incoming) and "alice-pw" not in repr(incoming)
            for user, condition in [
                ("mallory", "amqp:unauthorized-access"),
                ("eve", "amqp:resource-limit-exceeded"),
            ]:
                with pytest.raises(ConnectionClosedError, match=condition):
                    async with connected(adapter, f"amqp://{user}:{user}-pw@{base}/q") as conn:
                        await aw(conn.sender())
                assert seen[-1].identity == user and seen[-1].refused is not None
            async with connected(adapter, f"amqp://bob:bob-pw@{base}/q") as conn:
                with pytest.raises(LinkDetachedError, match="unauthorized-access"):
                    await aw(conn.sender())
                receiver = await aw(conn.receiver("q"))  # bob may read
                assert (await aw(receiver.receive(timeout=WAIT))).message.body.value == "hi"

        adapter.run(scenario)
    assert [c.identity for c in seen] == ["alice", "mallory", "eve", "bob"]


def test_amqps_with_the_core_tls_layer(adapter: Adapter, tmp_path: Any) -> None:
    """amqps from the first byte, through the core's TLSLayer in every adapter; PLAIN is
    allowed inside it to a host that is not loopback-only by name."""
    trustme = pytest.importorskip("trustme", reason="trustme is in the 'test' extra")
    ca = trustme.CA()
    cert = ca.issue_cert("localhost")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))

    class Store:
        def check_password(self, username: str, password: str) -> bool:
            return (username, password) == ("bob", "pw")

    broker = Broker()
    seen: list[Any] = []
    options = {
        "ssl_context": a.security.tls.server_context(str(tmp_path / "server.pem")),
        "sasl": a.sasl.ServerAuthenticator(Store()),
        "on_connection": seen.append,
    }
    with adapter.serve(broker.on_link, **options) as port:
        context = a.security.tls.client_context(cafile=str(tmp_path / "ca.pem"))
        url = f"amqps://bob:pw@localhost:{port}/secure"

        async def scenario() -> None:
            async with connected(adapter, url, ssl_context=context) as conn:
                sender = await aw(conn.sender())
                receiver = await aw(conn.receiver(credit=10))
                for i in range(20):
                    assert isinstance(await aw(sender.send(i)), a.Accepted)
                assert await receive_all(receiver, 20) == list(range(20))

        adapter.run(scenario)
    [incoming] = seen
    assert incoming.identity == "bob" and incoming.hostname == "localhost"
    assert incoming.tls is not None and incoming.tls.version.startswith("TLSv1.")


# -- Proton ----------------------------------------------------------------------------------


class _ProtonBrokerLogic:
    """What :func:`proton_broker`'s handler does (mixed into Proton's MessagingHandler by
    :func:`_proton_broker_handler`, so that this module imports without Proton): queues by
    address, each message to the consumers with credit."""

    def __init__(self) -> None:
        from proton.reactor import EventInjector

        super().__init__(prefetch=200, auto_accept=True)  # type: ignore[call-arg]
        self.queues: dict[str, deque[Any]] = defaultdict(deque)
        self.consumers: dict[str, list[Any]] = defaultdict(list)
        self.injector = EventInjector()
        self.acceptor: Any = None
        self.connections: list[Any] = []

    def on_start(self, event: Any) -> None:
        event.container.selectable(self.injector)

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        if link.is_sender:
            link.source.copy(link.remote_source)
            self.consumers[link.remote_source.address].append(link)
        else:
            link.target.copy(link.remote_target)

    def on_link_closing(self, event: Any) -> None:
        for links in self.consumers.values():
            if event.link in links:
                links.remove(event.link)

    def on_message(self, event: Any) -> None:
        address = event.link.target.address
        self.queues[address].append(event.message)
        self._pump(address)

    def on_sendable(self, event: Any) -> None:
        self._pump(event.link.source.address)

    def _pump(self, address: str) -> None:
        pending = self.queues[address]
        for link in self.consumers[address]:
            while pending and link.credit > 0:
                link.send(pending.popleft())

    def on_connection_opened(self, event: Any) -> None:
        self.connections.append(event.connection)

    def on_stop_request(self, event: Any) -> None:
        self.acceptor.close()
        for conn in self.connections:
            conn.close()
        self.injector.close()


def _proton_broker_handler() -> Any:
    """:func:`proton_broker`'s handler: :class:`_ProtonBrokerLogic` on Proton's
    MessagingHandler."""
    from proton.handlers import MessagingHandler

    class ProtonBroker(_ProtonBrokerLogic, MessagingHandler):
        pass

    return ProtonBroker()


@pytest.fixture(scope="module")
def proton_broker() -> Iterator[int]:
    """A small queue broker on Qpid Proton, in a thread: its port."""
    proton = pytest.importorskip("proton", reason="python-qpid-proton is in the 'test' extra")
    from proton.reactor import ApplicationEvent, Container

    handler = _proton_broker_handler()
    container = Container(handler)
    handler.acceptor = container.acceptor("127.0.0.1", 0)
    port = handler.acceptor._selectable.getsockname()[1]
    errors: list[BaseException] = []

    def run() -> None:
        try:
            container.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, name="proton-broker", daemon=True)
    thread.start()
    yield port
    handler.injector.trigger(ApplicationEvent("stop_request"))
    thread.join(5)
    container.stop()
    assert not errors, errors
    del proton


# -- the docs' examples ----------------------------------------------------------------------


def _examples() -> dict[str, str]:
    """The named code blocks of docs/adapters.rst, dedented."""
    import re
    import textwrap

    text = (ROOT / "docs" / "adapters.rst").read_text()
    found = {}
    pattern = r"\.\. code-block:: python\n   :name: (example-\w+)\n\n((?:(?:   .*)?\n)+)"
    for name, body in re.findall(pattern, text):
        found[name] = textwrap.dedent(body)
    return found


@pytest.mark.parametrize("example", ["example-sockets", "example-aio", "example-trio"])
def test_the_docs_examples_run(example: str) -> None:
    examples = _examples()
    namespace: dict[str, Any] = {"__name__": "docs_example"}
    exec(compile(examples["example-server"], "example-server", "exec"), namespace)
    exec(compile(examples[example], example, "exec"), namespace)


def test_naming_sasl_mechanisms_without_credentials_means_sasl(adapter: Adapter) -> None:
    """``sasl_mechanisms=["ANONYMOUS"]`` with a URL that has no credentials: SASL, not a
    plain AMQP header the server would refuse."""
    seen: list[Any] = []
    broker = Broker()
    authenticator = a.sasl.ServerAuthenticator(None, allow_anonymous=True)
    with adapter.serve(broker.on_link, sasl=authenticator, on_connection=seen.append) as port:

        async def scenario() -> None:
            url = f"amqp://127.0.0.1:{port}/q"
            async with connected(adapter, url, sasl_mechanisms=["ANONYMOUS"]) as conn:
                assert isinstance(await aw((await aw(conn.sender())).send(1)), a.Accepted)

        adapter.run(scenario)
    assert [c.mechanism for c in seen] == ["ANONYMOUS"]
