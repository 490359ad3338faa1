"""``connect(url, token_provider=...)`` in each adapter against ``amqp-sansio broker``
started as users start it: with a users file holding a SAS key (the client logs in
ANONYMOUS and puts a token for each address, then again before it expires), and open
(no options: any token is taken). A restart of the broker under ``reconnect=True``: the
token is put again before the links attach again."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from support.adapters import ADAPTERS, Adapter, aw, connected
from support.broker_process import BrokerProcess

import amqp_sansio as a
from amqp_sansio.client.amqp10.tokens import (
    CallableTokenProvider,
    SasTokenProvider,
    Token,
    TokenRefusedError,
)
from amqp_sansio.client.ops import LinkDetachedError

KEY = "the-namespace-key"
WAIT = 10.0
#: A token's life in the renewal tests, seconds (SAS expiries are whole seconds).
LIFE = 2


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A broker whose users file has one SAS key and no users: its URL."""
    users = tmp_path_factory.mktemp("users") / "users.json"
    users.write_text(json.dumps({"sas-keys": {"Root": {"key": KEY, "rights": ["Send", "Listen"]}}}))
    with BrokerProcess("--users", str(users), wait=WAIT) as broker:
        yield broker.url
        assert KEY not in broker.log


async def round_trip(adapter: Adapter, url: str, provider: Any, address: str) -> None:
    async with connected(adapter, url, token_provider=provider) as conn:
        sender = await aw(conn.sender(address))
        receiver = await aw(conn.receiver(address, credit=5))
        assert isinstance(await aw(sender.send("paid")), a.Accepted)
        delivery = await aw(receiver.receive(timeout=WAIT))
        assert delivery is not None and delivery.message.body == a.AmqpValue("paid")
        await aw(delivery.accept())


def test_each_adapter_sends_and_receives_under_a_sas_token(adapter: Adapter, secured: str) -> None:
    adapter.run(round_trip, adapter, secured, SasTokenProvider("Root", KEY), f"q-{adapter.name}")


async def wrong_key(adapter: Adapter, url: str) -> None:
    async with connected(adapter, url, token_provider=SasTokenProvider("Root", "guessed")) as conn:
        with pytest.raises(TokenRefusedError) as caught:
            await aw(conn.sender("orders"))
        assert caught.value.status_code == 401
        assert caught.value.error is not None
        assert caught.value.error.condition == "amqp:unauthorized-access"
        assert "guessed" not in str(caught.value)


def test_a_wrong_key_fails_at_the_link(adapter: Adapter, secured: str) -> None:
    adapter.run(wrong_key, adapter, secured)


async def outlive(adapter: Adapter, url: str, address: str) -> None:
    provider = SasTokenProvider("Root", KEY, lifetime=LIFE)
    async with connected(adapter, url, token_provider=provider) as conn:
        receiver = await aw(conn.receiver(address, credit=5))
        sender = await aw(conn.sender(address))
        started = time.monotonic()
        await adapter.idle(conn, 2.5 * LIFE)  # the links outlive two tokens
        assert time.monotonic() - started >= 2 * LIFE
        assert isinstance(await aw(sender.send("still here")), a.Accepted)
        delivery = await aw(receiver.receive(timeout=WAIT))
        assert delivery is not None and delivery.message.body == a.AmqpValue("still here")
        assert conn.core.tokens.puts >= 3  # the first token and two renewals at least


def test_renewed_tokens_keep_the_links_past_the_tokens_life(adapter: Adapter, secured: str) -> None:
    adapter.run(outlive, adapter, secured, f"renewed-{adapter.name}")


async def not_renewed(adapter: Adapter, url: str, address: str) -> None:
    good = SasTokenProvider("Root", KEY, lifetime=LIFE)
    forged = SasTokenProvider("Root", "guessed", lifetime=LIFE)
    made: list[str] = []

    def first_good(audience: str, now: float) -> Token:
        made.append(audience)
        return (good if len(made) == 1 else forged).get_token(audience, now)

    async with connected(adapter, url, token_provider=CallableTokenProvider(first_good)) as conn:
        receiver = await aw(conn.receiver(address, credit=5))
        with pytest.raises(LinkDetachedError) as caught:
            await aw(receiver.receive(timeout=3 * LIFE))
        assert caught.value.error is not None
        assert caught.value.error.condition == "amqp:unauthorized-access"
        failure = conn.core.tokens.failure
        assert isinstance(failure, TokenRefusedError) and failure.status_code == 401


def test_without_renewal_the_broker_detaches_the_link(adapter: Adapter, secured: str) -> None:
    adapter.run(not_renewed, adapter, secured, f"expired-{adapter.name}")


def test_an_open_broker_takes_any_token(adapter: Adapter, tmp_path: Path) -> None:
    def anything(audience: str, now: float) -> Token:
        return Token(text="not a token at all", type="jwt", expires=now + 600)

    with BrokerProcess(wait=WAIT) as broker:
        adapter.run(round_trip, adapter, broker.url, CallableTokenProvider(anything), "open")
        log = broker.wait_for_log("UNCHECKED")
    assert "not a token at all" not in log


async def through_a_restart(adapter: Adapter, broker: BrokerProcess) -> None:
    provider = SasTokenProvider("Root", KEY)
    async with connected(adapter, broker.url, token_provider=provider, reconnect=True) as conn:
        sender = await aw(conn.sender("orders"))
        receiver = await aw(conn.receiver("orders", credit=5))
        assert conn.core.tokens.puts == 1
        await restart(adapter, broker)
        # The new connection puts the token again before the links attach again: the
        # broker (which forgot it) refuses neither.
        assert isinstance(await aw(sender.send("after")), a.Accepted)
        delivery = await aw(receiver.receive(timeout=WAIT))
        assert delivery is not None and delivery.message.body == a.AmqpValue("after")
        assert conn.reconnects == 1
        assert conn.core.tokens.puts == 2


async def restart(adapter: Adapter, broker: BrokerProcess) -> None:
    """The broker restarts (a planned restart, SIGTERM), on the same port and users file;
    the async adapters' loops run meanwhile (the restart in a thread)."""
    if adapter.name == "aio":
        await asyncio.to_thread(broker.restart)
    elif adapter.name == "trio":
        await trio.to_thread.run_sync(broker.restart)
    else:
        broker.restart()


def test_after_a_reconnection_the_links_come_back_under_a_new_token(
    adapter: Adapter, tmp_path: Path
) -> None:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"sas-keys": {"Root": {"key": KEY, "rights": ["Send", "Listen"]}}}))
    with BrokerProcess("--users", str(users), wait=WAIT) as broker:
        adapter.run(through_a_restart, adapter, broker)
