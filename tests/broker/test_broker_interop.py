"""The broker served over loopback (amqp_sansio.adapters.broker), against our own adapters
(blocking sockets, asyncio, trio) and Qpid Proton: an independent implementation."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from amqp_sansio.adapters import aio, sockets, trio_adapter
from amqp_sansio.adapters.broker import BrokerServer, run_broker, serve_broker
from support.broker_process import BrokerProcess

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig
from amqp_sansio.client.ops import ConnectionClosedError, LinkDetachedError

WAIT = 10.0


@pytest.fixture
def server() -> Iterator[BrokerServer]:
    with run_broker(config=BrokerConfig(dead_letter="dlq")) as s:
        yield s


def bodies(receiver: Any, n: int, *, accept: bool = True) -> list[Any]:
    out = []
    for _ in range(n):
        d = receiver.receive(timeout=WAIT)
        assert d is not None
        out.append(d.message.body.value)
        if accept:
            d.accept()
    return out


def test_fifo_priority_and_outcomes_with_our_sockets_adapter(server: BrokerServer) -> None:
    with sockets.connect(server.url, timeout=WAIT) as conn:
        s = conn.sender("orders")
        for i, prio in enumerate([4, 4, 9, 0, 9]):
            outcome = s.send(a.Message(header=a.Header(priority=prio), body=b"%d" % i))
            assert isinstance(outcome, a.Accepted)
        r = conn.receiver("orders", credit=10)
        assert bodies(r, 5) == [b"2", b"4", b"0", b"1", b"3"]


def test_ttl_expiry_over_the_wire(server: BrokerServer) -> None:
    with sockets.connect(server.url, timeout=WAIT) as conn:
        s = conn.sender("ttl")
        s.send(a.Message(header=a.Header(ttl=100), body=b"gone"))
        past = int((time.time() - 1) * 1000)
        s.send(a.Message(properties=a.Properties(absolute_expiry_time=past), body=b"old"))
        s.send(a.Message(body=b"kept"))
        time.sleep(0.3)
        r = conn.receiver("ttl", credit=10)
        assert bodies(r, 1) == [b"kept"]
        with pytest.raises(TimeoutError):
            r.receive(timeout=0.3)
        assert server.broker.expired == 2


def test_dead_letter_and_release_redelivery(server: BrokerServer) -> None:
    with sockets.connect(server.url, timeout=WAIT) as conn:
        s = conn.sender("work")
        s.send(b"bad")
        s.send(b"again")
        r = conn.receiver("work", credit=1)
        d = r.receive(timeout=WAIT)
        assert d is not None
        d.reject()
        d2 = r.receive(timeout=WAIT)
        assert d2 is not None and d2.message.body.value == b"again"
        d2.modify(delivery_failed=True)
        d3 = r.receive(timeout=WAIT)
        assert d3 is not None and d3.message.header.delivery_count == 1
        d3.accept()
        dlq = conn.receiver("dlq", credit=5)
        assert bodies(dlq, 1) == [b"bad"]


def test_lost_link_redelivers_with_delivery_count(server: BrokerServer) -> None:
    with sockets.connect(server.url, timeout=WAIT) as conn:
        conn.sender("lost").send(b"m")
    raw = sockets.connect(server.url, timeout=WAIT)
    r = raw.receiver("lost", credit=1)
    assert r.receive(timeout=WAIT) is not None
    raw.driver.sock.shutdown(socket.SHUT_RDWR)  # the transport goes, nothing settled
    raw.driver.sock.close()
    with sockets.connect(server.url, timeout=WAIT) as conn:
        d = conn.receiver("lost", credit=1).receive(timeout=WAIT)
        assert d is not None and d.message.header.delivery_count == 1
        d.accept()


def test_request_reply_through_a_dynamic_queue(server: BrokerServer) -> None:
    with sockets.connect(server.url, timeout=WAIT) as conn:
        replies = conn.receiver(dynamic=True, credit=5)
        assert replies.address and replies.address.startswith("tmp.")
        requests = conn.receiver("service", credit=5)
        conn.sender("service").send(
            a.Message(properties=a.Properties(reply_to=replies.address), body=b"ping")
        )
        req = requests.receive(timeout=WAIT)
        assert req is not None
        req.accept()
        conn.sender(req.message.properties.reply_to).send(b"pong")
        assert bodies(replies, 1) == [b"pong"]


def test_link_refusal() -> None:
    config = BrokerConfig(auto_create=False, queues={"only"})
    with run_broker(config=config) as server, sockets.connect(server.url, timeout=WAIT) as conn:
        with pytest.raises(LinkDetachedError, match="not-found"):
            conn.receiver("missing")
        conn.sender("only").send(b"ok")


def test_a_misbehaving_connection_does_not_take_down_the_broker(server: BrokerServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as raw:
        raw.sendall(b"AMQP\x00\x01\x00\x00" + b"\x00\x00\x00\x10\x02\x00\x00\x00" + b"\xff" * 8)
        raw.settimeout(WAIT)
        assert raw.recv(100).startswith(b"AMQP")
    with socket.create_connection(("127.0.0.1", server.port)) as raw:
        raw.sendall(b"GET / HTTP/1.1\r\n\r\n")
    with sockets.connect(server.url, timeout=WAIT) as conn:
        conn.sender("ok").send(b"fine")
        assert bodies(conn.receiver("ok", credit=1), 1) == [b"fine"]


def test_asyncio_adapter_and_serve_broker() -> None:
    async def main() -> list[Any]:
        async with serve_broker() as server, aio.connect(server.url, timeout=WAIT) as conn:
            s = await conn.sender("q")
            for i in range(3):
                await s.send(b"%d" % i)
            r = await conn.receiver("q", credit=5)
            out = []
            for _ in range(3):
                d = await r.receive(timeout=WAIT)
                assert d is not None
                out.append(d.message.body.value)
                d.accept()
            return out

    assert asyncio.run(main()) == [b"0", b"1", b"2"]


def test_trio_adapter(server: BrokerServer) -> None:
    async def main() -> list[Any]:
        async with trio_adapter.connect(server.url, timeout=WAIT) as conn:
            s = await conn.sender("tq")
            await s.send(b"t")
            r = await conn.receiver("tq", credit=5)
            d = await r.receive(timeout=WAIT)
            assert d is not None
            d.accept()
            return [d.message.body.value]

    assert trio.run(main) == [b"t"]


def test_cli_broker_runs_until_sigterm() -> None:
    with BrokerProcess(wait=WAIT) as broker:
        with sockets.connect(broker.url, timeout=WAIT) as conn:
            conn.sender("x").send(b"1")
            assert bodies(conn.receiver("x", credit=1), 1) == [b"1"]
        assert broker.stop() == 0


def test_cli_store_that_cannot_be_used_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from amqp_sansio.adapters import cli

    (tmp_path / "messages.sqlite3").write_bytes(b"not a database" * 100)
    assert cli.main(["broker", "--port", "0", "--store", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("amqp-sansio broker: error: the message store ") and "corrupt" in err
    assert err.count("\n") == 1


def test_bench_broker_command(capsys: pytest.CaptureFixture[str], server: BrokerServer) -> None:
    from amqp_sansio.adapters import cli

    argv = ["bench", "broker", "--messages", "500", "--url", server.url, "--no-rabbitmq"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "500 messages of 256 bytes" in out and "msg/s" in out
    assert "durable" not in out and "RabbitMQ" not in out  # --url: that broker only
    assert "bench" not in server.broker.nodes  # emptied, its links gone: deleted (auto_delete)


def test_bench_broker_durable_and_rabbitmq_in_one_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from amqp_sansio.adapters import cli
    from amqp_sansio.adapters.broker import store as broker_store

    argv = ["bench", "broker", "--messages", "300", "--store", str(tmp_path), "--json"]
    assert cli.main(argv) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["rate"] > 0 and not figures["durable"]
    assert figures["durable_run"]["durable"] and figures["durable_run"]["messages"] == 300
    store = broker_store.SQLiteStore(tmp_path)  # the durable run's store: used, and empty
    assert store.load(Broker(store=store), time.time()) == 0
    store.close()
    rabbit = figures["rabbitmq"]
    if os.environ.get("AMQP_SANSIO_RABBITMQ_URL") is None:
        return  # (it may or may not be running here: the figures are checked when it is)
    assert rabbit["messages"] == 300 and rabbit["rate"] > 0
    assert figures["ratio"] == pytest.approx(figures["rate"] / rabbit["rate"])


def test_bench_broker_rabbitmq_option(capsys: pytest.CaptureFixture[str]) -> None:
    from amqp_sansio.adapters import cli

    argv = ["bench", "broker", "--messages", "100", "--no-durable", "--rabbitmq"]
    assert cli.main([*argv, "amqp://guest:guest@127.0.0.1:1"]) == 0  # nothing answers there
    captured = capsys.readouterr()
    assert "RabbitMQ" not in captured.out
    assert "no RabbitMQ run at amqp://guest:***@127.0.0.1:1" in captured.err
    assert cli.main([*argv, "http://x"]) == 2
    assert "--rabbitmq" in capsys.readouterr().err


def test_stopping_the_broker_closes_its_connections() -> None:
    with run_broker() as server:
        conn = sockets.connect(server.url, timeout=WAIT)
        receiver = conn.receiver("q", credit=1)
    try:
        # The broker's close says why (core spec 2.8.15), so that a reconnecting client
        # comes back; one without reconnection ends with that error.
        with pytest.raises(ConnectionClosedError, match="amqp:connection:forced"):
            receiver.receive(timeout=WAIT)
        assert conn.core.engine.state is a.ConnectionState.END  # closed by the broker
    finally:
        conn.close()
