"""Opt-in reconnection (``connect(url, reconnect=...)``), over each adapter: a stream of
messages through a TCP proxy that is cut several times mid-stream arrives whole (at least
once), fallback URLs, giving up, the back-off schedule (the core's, on an injected clock),
and no reconnection without the option."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from support.adapter_broker import Broker
from support.adapters import ADAPTERS, WAIT, Adapter, aw, connected
from support.broker_process import free_port
from support.proxy import Proxy, proxy

import amqp_sansio as a
from amqp_sansio.client.ops import ConnectionClosedError, LinkDetachedError
from amqp_sansio.client.reconnect import Backoff, Reconnect
from amqp_sansio.client.url import parse_url

#: The messages of the stream (the issue's 10,000).
STREAM = int(os.environ.get("AMQP_SANSIO_RECONNECT_STREAM", "10000"))
FAST = Reconnect(initial_delay=0.01, max_delay=0.1, jitter=0.0)


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


@pytest.fixture
def own(adapter: Adapter) -> Iterator[tuple[int, Broker]]:
    """Our own server (the adapter's ``listen``) serving a broker whose queues outlive
    connections: its port."""
    broker = Broker()
    with adapter.serve(broker.on_link) as port:
        yield port, broker


# -- the core's schedule ------------------------------------------------------------------------


def test_the_back_off_schedule_on_an_injected_clock() -> None:
    policy = Reconnect(
        urls=["amqp://b:5672", "amqp://c:5672"],
        initial_delay=0.5,
        multiplier=2.0,
        max_delay=3.0,
        max_attempts=5,
        jitter=0.5,
    )
    assert [policy.delay(n) for n in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert policy.delay(1, rand=0.5) == 0.75  # jitter takes away up to half
    backoff = Backoff(policy, parse_url("amqp://a:5672"), rand=lambda: 0.0)
    # The first connection: at once, to the URL; each failure moves on, later and later.
    assert (backoff.next_attempt(100.0), backoff.url.host) == (100.0, "a")
    assert backoff.next_attempt(150.0) == 100.0  # fixed until it is made
    assert backoff.failed()
    assert (backoff.next_attempt(101.0), backoff.url.host) == (102.0, "b")
    assert backoff.failed()
    assert (backoff.next_attempt(102.0), backoff.url.host) == (104.0, "c")
    backoff.succeeded()
    # A loss: the same URL again, after the initial delay; the schedule starts over.
    backoff.lost()
    assert (backoff.next_attempt(200.0), backoff.url.host) == (200.5, "c")
    assert [backoff.failed() for _ in range(5)] == [True, True, True, True, False]
    with pytest.raises(ValueError):
        Reconnect(multiplier=0.5)
    with pytest.raises(ValueError):
        Reconnect(max_attempts=0)


# -- over each adapter ----------------------------------------------------------------------


def test_a_stream_survives_repeated_kills(adapter: Adapter, own: tuple[int, Broker]) -> None:
    port, _ = own
    kills = 3
    # About 45 bytes a message each way: cut well inside each half of the stream.
    every = max(20_000, STREAM * 40 // (kills + 1))

    async def scenario(send_url: str, receive_url: str) -> tuple[int, int, Counter[str]]:
        told: list[Any] = []
        async with connected(adapter, send_url, reconnect=FAST, on_reconnect=told.append) as c:
            sender = await aw(c.sender("stream"))
            trackers = [await aw(sender.send(f"m{i}", wait=False)) for i in range(STREAM)]
            for tracker in trackers:
                assert isinstance(await aw(tracker.outcome(timeout=WAIT)), a.Accepted)
            assert sender.unsettled == 0
            assert told == [c] * c.reconnects
            sent_again = c.reconnects
        seen: Counter[str] = Counter()
        async with connected(adapter, receive_url, reconnect=FAST) as c:
            receiver = await aw(c.receiver("stream", credit=200))
            while len(seen) < STREAM:
                delivery = await aw(receiver.receive(timeout=WAIT))
                delivery.accept()
                seen[delivery.message.body.value] += 1
            return sent_again, c.reconnects, seen

    started = time.monotonic()
    with proxy(port, every=every, kills=kills) as up, proxy(port, every=every, kills=kills) as down:
        url = "amqp://127.0.0.1:{}"
        sent_again, received_again, seen = adapter.run(
            scenario, url.format(up.port), url.format(down.port)
        )
        assert (up.cuts, down.cuts) == (kills, kills)
    assert sent_again == kills and received_again == kills
    assert set(seen) == {f"m{i}" for i in range(STREAM)}  # none missing
    duplicates = sum(seen.values()) - STREAM
    print(
        f"{adapter.name}: {2 * kills} kills, {duplicates} duplicates received, "
        f"{time.monotonic() - started:.1f} s"
    )


def test_a_fallback_url_when_the_first_is_down(adapter: Adapter, own: tuple[int, Broker]) -> None:
    port, _ = own
    policy = Reconnect(urls=[f"amqp://127.0.0.1:{port}"], initial_delay=0.01, jitter=0.0)

    async def scenario() -> None:
        async with connected(adapter, f"amqp://127.0.0.1:{free_port()}", reconnect=policy) as c:
            sender = await aw(c.sender("fallback"))
            assert isinstance(await aw(sender.send("x")), a.Accepted)
            assert c.reconnects == 0  # the first connection is not a reconnection
            assert c.core.backoff.url.port == port  # the fallback's

    adapter.run(scenario)


def test_giving_up_after_max_attempts(adapter: Adapter) -> None:
    policy = Reconnect(initial_delay=0.01, max_attempts=3, jitter=0.0)

    async def scenario() -> None:
        with pytest.raises(ConnectionClosedError, match="gave up after 3 attempts"):
            async with connected(adapter, f"amqp://127.0.0.1:{free_port()}", reconnect=policy):
                pass

    adapter.run(scenario)


def test_no_reconnection_without_the_option(adapter: Adapter, own: tuple[int, Broker]) -> None:
    port, _ = own

    async def scenario(p: Proxy) -> None:
        async with connected(adapter, f"amqp://127.0.0.1:{p.port}") as c:
            sender = await aw(c.sender("plain"))
            assert isinstance(await aw(sender.send("x")), a.Accepted)
            p.cut()
            with pytest.raises((ConnectionClosedError, LinkDetachedError)):
                for _ in range(100):
                    await aw(sender.send("y", timeout=WAIT))
                    await adapter.idle(c, 0.01)
            assert c.reconnects == 0

    with proxy(port) as p:
        adapter.run(scenario, p)


@pytest.mark.alone
def test_closing_while_lost_ends_at_once(adapter: Adapter, own: tuple[int, Broker]) -> None:
    port, _ = own
    policy = Reconnect(initial_delay=30.0, jitter=0.0)

    async def scenario(p: Proxy) -> None:
        async with connected(adapter, f"amqp://127.0.0.1:{p.port}", reconnect=policy) as c:
            receiver = await aw(c.receiver("idle"))
            p.cut()
            p.close()
            with pytest.raises(TimeoutError):
                await aw(receiver.receive(timeout=0.3))
            assert c.core.lost
            started = time.monotonic()
            await aw(c.close())
            assert time.monotonic() - started < 5

    with proxy(port) as p:
        adapter.run(scenario, p)


@pytest.mark.alone
def test_an_authentication_failure_is_not_retried(adapter: Adapter) -> None:
    """A refused credential would be refused again: the error comes at once, whatever the
    reconnection policy, and nothing is retried."""

    class Store:
        def check_password(self, username: str, password: str) -> bool:
            return (username, password) == ("alice", "s3cret")

    broker = Broker()
    authenticator = a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True)
    policy = Reconnect(initial_delay=0.01, max_attempts=5, jitter=0.0)
    with adapter.serve(broker.on_link, sasl=authenticator, allow_insecure_auth=True) as port:

        async def scenario() -> None:
            started = time.monotonic()
            with pytest.raises(adapter.module.AuthenticationError):
                async with connected(
                    adapter, f"amqp://alice:wrong@127.0.0.1:{port}", reconnect=policy
                ):
                    pass
            assert time.monotonic() - started < 2.0

        adapter.run(scenario)
