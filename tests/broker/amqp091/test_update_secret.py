"""``connection.update-secret`` (RabbitMQ's extension) from our 0-9-1 client to our broker:
through each adapter (``conn.update_secret``) to ``amqp-sansio broker --users``, which checks
the new secret as the login's user's password (ok, or 530 NOT_ALLOWED closing the
connection), and the client core on a simulated clock: a call while the connection is lost
goes once it is open again, which logs in with the new secret. The same calls against
RabbitMQ are in tests/client/test_adapters_amqp091.py."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from support.adapters import ADAPTERS, WAIT, Adapter, aw
from support.broker_process import BrokerProcess

from amqp_sansio.broker import Broker, BrokerConfig, User, Users
from amqp_sansio.client.amqp091 import ConnectionClosedError, Core, client_core, parse_url


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    path = tmp_path_factory.mktemp("users") / "users.json"
    path.write_text(json.dumps({"users": {"alice": {"password": "s3cret"}}}))
    with BrokerProcess("--users", str(path)) as process:
        yield process


@asynccontextmanager
async def connected(adapter: Adapter, url: str) -> AsyncIterator[Any]:
    """A 0-9-1 connection through ``adapter``, closed at the end."""
    if adapter.name == "trio":
        async with adapter.module.connect(url, protocol="0-9-1", timeout=WAIT) as conn:
            yield conn
        return
    conn = await aw(adapter.module.connect(url, protocol="0-9-1", timeout=WAIT))
    try:
        yield conn
    finally:
        await aw(conn.close())


def test_update_secret_through_each_adapter(adapter: Adapter, broker: BrokerProcess) -> None:
    url = broker.url.replace("amqp://", "amqp://alice:s3cret@")

    async def scenario() -> None:
        async with connected(adapter, url) as conn:
            assert await aw(conn.update_secret("s3cret", "refresh")) is None
            ch = await aw(conn.channel())  # the connection goes on
            assert (await aw(ch.queue_declare("", exclusive=True))).queue
            with pytest.raises(ConnectionClosedError) as refused:
                await aw(conn.update_secret("wrong", "refresh"))
            error = refused.value
            assert (error.reply_code, error.class_id, error.method_id) == (530, 10, 70)
            assert error.reply_text == (
                "NOT_ALLOWED - New secret was refused by one of the backends"
            )
            assert "wrong" not in str(error)

    adapter.run(scenario)


def test_update_secret_on_the_broker_with_its_defaults(adapter: Adapter) -> None:
    """``amqp-sansio broker`` with no options is an open broker: ``connect(url)`` with no
    credentials (guest/guest) logs in, and any new secret is taken (docs/defaults.rst)."""

    async def scenario(url: str) -> None:
        async with connected(adapter, url) as conn:
            assert await aw(conn.update_secret("anything", "refresh")) is None
            ch = await aw(conn.channel())  # the connection goes on
            assert (await aw(ch.queue_declare("", exclusive=True))).queue

    with BrokerProcess() as process:
        adapter.run(scenario, process.url)


class _Wire:
    """A client core wired to an in-memory broker's 0-9-1 connection, on a simulated clock."""

    def __init__(self, broker: Broker, core: Core) -> None:
        self.broker, self.core, self.now = broker, core, 10.0
        self.conn = broker.accept_091(self.now, wall=1e9, address="127.0.0.1")

    def pump(self) -> None:
        core, conn = self.core, self.conn
        for _ in range(100):
            out = core.data_to_send()
            if out:
                conn.receive_data(out, self.now, wall=1e9)
            back = conn.data_to_send()
            if back:
                core.receive_data(back, self.now)
            if not out and not back:
                return
        raise AssertionError("never quiet")


def test_a_secret_updated_while_lost_logs_in_the_next_connection() -> None:
    """``reconnect=``: the core starts lost; the update waits, the URLs take the new secret,
    the next connection logs in with it (the broker knows only the new one), then sends
    the update, whose ``-ok`` completes the call. Other users' URLs keep their own."""
    users = Users([User(name="alice", password="new")])
    broker = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    core = client_core("amqp://alice:old@127.0.0.1", {"allow_insecure_auth": True}, reconnect=True)
    assert core.lost and core.backoff is not None
    core.backoff.urls.append(parse_url("amqp://bob:b@other"))
    op = core.update_secret("new", "rotated")
    assert not op.done()
    assert core.url is not None and core.url.password == "new"
    assert [u.password for u in core.backoff.urls] == ["new", "b"]
    wire = _Wire(broker, core)
    core.restart(wire.now)
    wire.pump()
    assert core.opened.done() and op.done() and op.result() is None
    assert wire.conn.identity == "alice" and not wire.conn.ended


def test_an_update_lost_before_its_ok_is_sent_on_the_next_connection() -> None:
    users = Users([User(name="alice", password="old")])
    broker = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    core = client_core("amqp://alice:old@127.0.0.1", {"allow_insecure_auth": True}, reconnect=True)
    wire = _Wire(broker, core)
    core.restart(wire.now)
    wire.pump()
    assert core.opened.done()
    op = core.update_secret("old", "same")  # sent, not yet answered
    assert core.data_to_send()  # (the method, which the broker never gets)
    core.receive_data(b"", wire.now)  # the transport went
    assert core.lost and not op.done()
    wire.conn.connection_lost(wire.now)
    wire = _Wire(broker, core)
    core.restart(wire.now)
    wire.pump()
    assert core.reconnects == 1 and op.done() and op.result() is None


def test_a_refused_update_fails_the_call_and_ends_the_connection() -> None:
    users = Users([User(name="alice", password="old")])
    broker = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    core = client_core("amqp://alice:old@127.0.0.1", {"allow_insecure_auth": True})
    wire = _Wire(broker, core)
    core.open(wire.now)
    wire.pump()
    assert core.opened.done()
    first = core.update_secret("old", "same")
    wire.pump()
    assert first.done() and first.result() is None
    refused = core.update_secret("nope", "wrong")
    wire.pump()
    assert refused.done() and core.ended.done()
    with pytest.raises(ConnectionClosedError) as info:
        refused.result()
    assert info.value.reply_code == 530
    with pytest.raises(ConnectionClosedError):
        core.update_secret("again", "closed")
