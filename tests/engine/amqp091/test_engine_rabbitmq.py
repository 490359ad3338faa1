"""Our AMQP 0-9-1 client engine against a real RabbitMQ (``AMQP_SANSIO_RABBITMQ_URL``; the
tests skip, saying why, when it is not set), over a plain socket driven by a small loop in
the test (the adapters come later): negotiation with PLAIN and AMQPLAIN, heartbeats
negotiated, a channel, queue.declare, basic.publish with confirms, basic.get, a soft error
from the broker, and both close handshakes."""

from __future__ import annotations

import socket
import time
import urllib.parse
import uuid
from collections.abc import Callable

import pytest
from support.rabbitmq import rabbitmq_url

from amqp_sansio import amqp091
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev


class Loop:
    """A client engine on a blocking socket: write what it has, read until an event
    matches, fire its timer when due."""

    def __init__(self, url: str, **kwargs: object) -> None:
        parts = urllib.parse.urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port or 5672), timeout=10)
        self.conn = engine.Connection(
            engine.Role.CLIENT,
            username=urllib.parse.unquote(parts.username or "guest"),
            password=urllib.parse.unquote(parts.password or "guest"),
            **kwargs,  # type: ignore[arg-type]
        )
        self.conn.start(time.monotonic())
        self.seen: list[ev.Event] = []
        self.pending: list[ev.Event] = []  # given by the engine, not looked at yet

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def until(self, wanted: Callable[[ev.Event], bool], timeout: float = 10.0) -> ev.Event:
        """Pump until an event ``wanted`` accepts arrives; gives it."""
        end = time.monotonic() + timeout
        while True:
            events, self.pending = self.pending, []
            for i, event in enumerate(events):
                self.seen.append(event)
                if wanted(event):
                    self.pending = events[i + 1 :]
                    return event
            self.flush()
            if self.conn.closed:
                raise AssertionError(f"closed before the event: {self.seen[-3:]}")
            now = time.monotonic()
            assert now < end, f"no such event within {timeout} s: {self.seen[-3:]}"
            deadline = self.conn.next_deadline()
            if deadline is not None and deadline <= now:
                self.pending += self.conn.handle_timer(now)
                continue
            wait = min(end, deadline if deadline is not None else end) - now
            self.sock.settimeout(max(wait, 0.01))
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                continue
            self.pending += self.conn.receive_data(data, time.monotonic())

    def until_closed(self) -> ev.Event:
        """Pump until the connection is closed; gives the last event (ConnectionClosed)."""
        end = time.monotonic() + 10
        while not self.conn.closed:
            assert time.monotonic() < end
            self.flush()
            self.pending += self.conn.receive_data(self.sock.recv(65536), time.monotonic())
        self.flush()
        self.seen += self.pending
        self.pending = []
        return self.seen[-1]

    def close(self) -> None:
        self.sock.close()


def kind(cls: type[ev.Event]) -> Callable[[ev.Event], bool]:
    return lambda e: isinstance(e, cls)


def method_of(cls: type[amqp091.Method]) -> Callable[[ev.Event], bool]:
    return lambda e: (
        isinstance(e, ev.MethodReceived | ev.ContentReceived) and isinstance(e.method, cls)
    )


@pytest.fixture
def url() -> str:
    return rabbitmq_url()


@pytest.mark.parametrize("mechanism", ["PLAIN", "AMQPLAIN"])
def test_negotiate_declare_publish_get_close(url: str, mechanism: str) -> None:
    loop = Loop(url, mechanism=mechanism, heartbeat=30)
    try:
        opened = loop.until(kind(ev.ConnectionOpened))
        assert isinstance(opened, ev.ConnectionOpened)
        assert opened.peer_properties["product"] == "RabbitMQ"
        assert opened.heartbeat == 30 and opened.frame_max == 131072
        number = loop.conn.open_channel()
        assert loop.until(kind(ev.ChannelOpened)) == ev.ChannelOpened(channel=number)
        queue = f"amqp-sansio-engine-{uuid.uuid4().hex[:8]}"
        loop.conn.send_method(number, amqp091.spec.QueueDeclare(queue=queue, auto_delete=True))
        declared = loop.until(method_of(amqp091.spec.QueueDeclareOk))
        assert isinstance(declared, ev.MethodReceived)
        assert declared.method == amqp091.spec.QueueDeclareOk(
            queue=queue, message_count=0, consumer_count=0
        )
        loop.conn.send_method(number, amqp091.spec.ConfirmSelect())
        loop.until(method_of(amqp091.spec.ConfirmSelectOk))
        body = bytes(range(256)) * 1000  # over frame-max: several body frames
        props = amqp091.BasicProperties(content_type="application/octet-stream", headers={"n": 1})
        assert loop.conn.publish(number, "", queue, body, props) == 1
        confirmed = loop.until(kind(ev.Confirmed))
        assert confirmed == ev.Confirmed(channel=number, delivery_tag=1, multiple=False, ack=True)
        assert loop.conn.channel(number).unconfirmed == set()
        loop.conn.send_method(number, amqp091.spec.BasicGet(queue=queue, no_ack=True))
        got = loop.until(method_of(amqp091.spec.BasicGetOk))
        assert isinstance(got, ev.ContentReceived)
        assert got.body == body
        assert got.properties == props
        loop.conn.send_method(number, amqp091.spec.BasicGet(queue=queue, no_ack=True))
        loop.until(method_of(amqp091.spec.BasicGetEmpty))
        loop.conn.close_channel(number)
        assert loop.until(kind(ev.ChannelClosed)) == ev.ChannelClosed(
            channel=number, reply_code=200, reply_text="", by_peer=False
        )
        loop.conn.close()
        loop.flush()
        closed = loop.until_closed()
        assert closed == ev.ConnectionClosed(reply_code=200, reply_text="", by_peer=False)
    finally:
        loop.close()


def test_soft_error_from_rabbitmq_closes_the_channel(url: str) -> None:
    loop = Loop(url)
    try:
        loop.until(kind(ev.ConnectionOpened))
        number = loop.conn.open_channel()
        loop.until(kind(ev.ChannelOpened))
        loop.conn.send_method(
            number, amqp091.spec.QueueDeclare(queue=f"absent-{uuid.uuid4().hex}", passive=True)
        )
        closed = loop.until(kind(ev.ChannelClosed))
        assert isinstance(closed, ev.ChannelClosed)
        assert (closed.reply_code, closed.by_peer, closed.class_id) == (404, True, 50)
        assert loop.conn.state is engine.ConnectionState.OPEN
        assert loop.conn.open_channel() == number  # the number is free again
        loop.until(kind(ev.ChannelOpened))
        loop.conn.close()
        loop.flush()
        assert isinstance(loop.until_closed(), ev.ConnectionClosed)
    finally:
        loop.close()


def test_refused_login_and_vhost(url: str) -> None:
    loop = Loop(url.replace("://", "://nobody-", 1) if "@" in url else url)
    try:
        closed = loop.until_closed()
        assert isinstance(closed, ev.ConnectionClosed)
        assert (closed.reply_code, closed.by_peer) == (403, True)
    finally:
        loop.close()
    loop = Loop(url, virtual_host=f"/absent-{uuid.uuid4().hex[:6]}")
    try:
        closed = loop.until_closed()
        assert isinstance(closed, ev.ConnectionClosed)
        assert (closed.reply_code, closed.by_peer) == (530, True)
    finally:
        loop.close()


def test_rabbitmq_closes_the_connection_for_a_hard_error(url: str) -> None:
    loop = Loop(url)
    try:
        loop.until(kind(ev.ConnectionOpened))
        loop.sock.sendall(amqp091.encode_body_frame(5, b"stray"))  # a body on no channel
        closed = loop.until_closed()
        assert isinstance(closed, ev.ConnectionClosed) and closed.by_peer
        assert closed.reply_code == 505, closed  # RabbitMQ: unexpected_frame
    finally:
        loop.close()
