"""Idle connections and unused queues against ``amqp-sansio broker`` as a user starts it
(issue 27): clients that heartbeat with their defaults (pika, our ``connect(url)``) are not
cut while idle, a silent one is; a local client holding the per-address cap's worth of idle
connections does not lock other local clients out; a queue made on first use expires. The
same in the core on a simulated clock: tests/broker/test_broker_idle_core.py."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time

import pika
import pytest
import trio
from amqp_sansio.adapters import aio, sockets, trio_adapter
from support.broker_limits import WAIT
from support.broker_process import BrokerProcess
from support.engine_pair import frames_in
from support.rabbitmq import rabbitmq_url

import amqp_sansio as a
from amqp_sansio.definitions.amqp10 import performatives


def _handshake(port: int) -> tuple[socket.socket, bytes]:
    """A 1.0 client (our engine, no SASL: the broker's default takes it) that opens and
    then says nothing, not even empty frames: its socket, and what it read up to the
    broker's open."""
    engine = a.Connection(client=True, container_id="silent")
    engine.open(now=0.0)
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    sock.sendall(engine.data_to_send())
    got = b""
    while not any(isinstance(f, performatives.Open) for f in frames_in(got)):
        chunk = sock.recv(65536)
        assert chunk, got
        got += chunk
    return sock, got


def _to_eof(sock: socket.socket, got: bytes = b"", wait: float = WAIT) -> bytes:
    sock.settimeout(wait)
    while chunk := sock.recv(65536):
        got += chunk
    return got


def _close_condition(data: bytes) -> str | None:
    closes = [f for f in frames_in(data) if isinstance(f, performatives.Close)]
    assert len(closes) == 1, frames_in(data)
    error = closes[0].error
    return None if error is None else str(error.condition)


# -- the idle time-out --------------------------------------------------------------------------


def test_a_silent_client_is_closed_after_the_idle_timeout() -> None:
    with BrokerProcess("--idle-timeout", "1") as broker:
        sock, got = _handshake(broker.port)
        opens = [f for f in frames_in(got) if isinstance(f, performatives.Open)]
        assert opens[0].idle_time_out == 500  # half of it, announced (core spec 2.4.5)
        started = time.monotonic()
        with sock:
            data = _to_eof(sock, got)
        assert 0.9 <= time.monotonic() - started < WAIT
        assert _close_condition(data) == "amqp:resource-limit-exceeded"


def test_the_default_idle_timeout_is_announced() -> None:
    with BrokerProcess() as broker:
        sock, got = _handshake(broker.port)
        with sock:
            opens = [f for f in frames_in(got) if isinstance(f, performatives.Open)]
            assert opens[0].idle_time_out == 60_000  # half the default 120 s
        params = pika.URLParameters(broker.url)  # pika with its defaults takes our proposal
        connection = pika.BlockingConnection(params)
        try:
            assert connection._impl.params.heartbeat == 60
        finally:
            connection.close()


@pytest.mark.parametrize("peer", ["rabbitmq", "ours"])
def test_pika_takes_the_same_heartbeat_from_rabbitmq_and_from_us(peer: str) -> None:
    """The same pika program, with its defaults, against RabbitMQ and our broker with no
    options: each proposes a 60 s heartbeat in connection.tune, and pika takes it."""
    with contextlib.ExitStack() as stack:
        url = rabbitmq_url() if peer == "rabbitmq" else stack.enter_context(BrokerProcess()).url
        connection = pika.BlockingConnection(pika.URLParameters(url))
        try:
            assert connection._impl.params.heartbeat == 60
            assert connection.is_open
        finally:
            connection.close()


def test_pika_with_its_defaults_is_not_cut_while_idle() -> None:
    with BrokerProcess("--idle-timeout", "2") as broker:
        connection = pika.BlockingConnection(pika.URLParameters(broker.url))
        try:
            channel = connection.channel()
            channel.queue_declare("idle-pika")
            connection.sleep(6)  # three idle time-outs, pika heartbeating (1 s proposed)
            assert connection.is_open
            channel.basic_publish("", "idle-pika", b"after a while")
            method, _, body = channel.basic_get("idle-pika", auto_ack=True)
            assert method is not None and body == b"after a while"
        finally:
            connection.close()


def test_connect_url_is_not_cut_while_idle() -> None:
    with BrokerProcess("--idle-timeout", "2") as broker:
        with sockets.connect(broker.url, timeout=WAIT) as conn:
            receiver = conn.receiver("idle-ours", credit=1)
            conn.wait(6)  # what an idle blocking application calls: heartbeats go on
            conn.sender("idle-ours").send(a.Message(body=b"still open"))
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None and delivery.message.body == a.Data(b"still open")

        async def idle_async() -> None:
            async with await aio.connect(broker.url, timeout=WAIT) as conn:
                await asyncio.sleep(6)  # the adapter's task heartbeats
                sender = await conn.sender("idle-async")
                assert isinstance(await sender.send(a.Message(body=b"x")), a.Accepted)

        asyncio.run(idle_async())

        async def idle_trio() -> None:
            async with trio_adapter.connect(broker.url) as conn:
                await trio.sleep(6)  # the adapter's nursery heartbeats
                sender = await conn.sender("idle-trio")
                assert isinstance(await sender.send(a.Message(body=b"x")), a.Accepted)

        trio.run(idle_trio)


# -- eviction at the per-address cap ------------------------------------------------------------


def test_idle_connections_at_the_cap_do_not_lock_a_local_client_out() -> None:
    """With no options: a local client holds the per-address cap (500) with one active
    consumer and 499 idle connections; other local clients (ours, pika) still get in, each
    evicting one idle connection, and the active one goes on."""
    with BrokerProcess() as broker, sockets.connect(broker.url, timeout=WAIT) as active:
        consumer = active.receiver("busy", credit=10)
        idle = [_handshake(broker.port) for _ in range(499)]
        try:
            time.sleep(11)  # (evict_idle_after: 10 s)
            with sockets.connect(broker.url, timeout=WAIT) as newcomer:
                newcomer.sender("busy").send(a.Message(body=b"got in"))
                connection = pika.BlockingConnection(pika.URLParameters(broker.url))
                connection.channel().basic_publish("", "busy", b"pika too")
                connection.close()
            got = [consumer.receive(timeout=WAIT) for _ in range(2)]
            assert [d.message.body for d in got if d] == [a.Data(b"got in"), a.Data(b"pika too")]
            evicted = []
            for sock, head in idle:
                sock.setblocking(False)
                try:
                    data = head + sock.recv(65536)
                except BlockingIOError:
                    continue
                evicted.append(_close_condition(_to_eof(sock, data)))
            assert evicted == ["amqp:resource-limit-exceeded"] * 2  # one for each newcomer
        finally:
            for sock, _ in idle:
                sock.close()


# -- queues made on first use -----------------------------------------------------------------


def test_queue_expiry_can_be_turned_off() -> None:
    with (
        BrokerProcess("--queue-expiry", "none", "--idle-timeout", "none") as broker,
        sockets.connect(broker.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("kept-for-ever")
        assert isinstance(sender.send(a.Message(body=b"kept")), a.Accepted)
        sender.close()
        time.sleep(1)
        receiver = conn.receiver("kept-for-ever", credit=1)
        delivery = receiver.receive(timeout=WAIT)
        assert delivery is not None and delivery.message.body == a.Data(b"kept")
