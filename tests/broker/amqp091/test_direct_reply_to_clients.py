"""Direct reply-to over AMQP 0-9-1 with pika (its defaults) against our broker, started as a
user starts it (``amqp-sansio broker``, no options), and against RabbitMQ
(``AMQP_SANSIO_RABBITMQ_URL``; skipped, saying why, when it is not set or not reachable): the
same replies and the same refusals from both (RabbitMQ's "Direct Reply-To" page; the codes
and texts are RabbitMQ 3.10's, docs/amqp091.rst "Direct reply-to")."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pika.exceptions
import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import WAIT, BrokerProcess
from support.rabbitmq import rabbitmq_url

PSEUDO = "amq.rabbitmq.reply-to"


@pytest.fixture(scope="module")
def ours() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


@pytest.fixture(params=["ours", "rabbitmq"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "ours":
        process: BrokerProcess = request.getfixturevalue("ours")
        return f"amqp://guest:guest@127.0.0.1:{process.port}"
    return rabbitmq_url()


def _pika(url: str) -> pika.BlockingConnection:
    return pika.BlockingConnection(pika.URLParameters(url))


def _until(conn: pika.BlockingConnection, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not done():
        assert time.monotonic() < deadline, "nothing came in time"
        conn.process_data_events(0.05)


def _serve(server: pika.BlockingConnection, queue: str, count: int) -> list[str]:
    """The RPC server: ``count`` requests from ``queue``, each answered with its body in
    upper case to its ``reply-to`` on the default exchange, with its ``correlation-id``;
    the ``reply-to`` names it saw."""
    ch = server.channel()
    seen: list[str] = []
    deadline = time.monotonic() + WAIT
    while len(seen) < count:
        assert time.monotonic() < deadline, f"only {len(seen)} of {count} requests came"
        method, props, body = ch.basic_get(queue, auto_ack=True)
        if method is None:
            server.process_data_events(0.05)
            continue
        seen.append(props.reply_to)
        ch.basic_publish(
            "",
            props.reply_to,
            body.upper(),
            pika.BasicProperties(correlation_id=props.correlation_id),
        )
    return seen


@pytest.fixture
def request_queue(url: str) -> Iterator[str]:
    name = f"amqp-sansio-rpc-{uuid.uuid4().hex[:10]}"
    with _pika(url) as conn:
        conn.channel().queue_declare(name)
    try:
        yield name
    finally:
        with _pika(url) as conn:
            conn.channel().queue_delete(name)


def test_server_announces_direct_reply_to(url: str) -> None:
    with _pika(url) as conn:
        assert conn._impl.server_capabilities["direct_reply_to"] is True


def test_pika_rpc_over_direct_reply_to(url: str, request_queue: str) -> None:
    with _pika(url) as client, _pika(url) as server:
        ch = client.channel()
        replies: list[Any] = []

        def on_reply(_: Any, method: Any, props: Any, body: bytes) -> None:
            replies.append((method, props.correlation_id, body))

        tag = ch.basic_consume(PSEUDO, on_reply, auto_ack=True)
        for i in range(3):
            props = pika.BasicProperties(reply_to=PSEUDO, correlation_id=f"c{i}")
            ch.basic_publish("", request_queue, b"req%d" % i, props)
        seen = _serve(server, request_queue, 3)
        _until(client, lambda: len(replies) == 3)
        # the reply-to the server saw: the channel's own name, the same for each request
        assert len(set(seen)) == 1
        name = seen[0]
        assert name.startswith(PSEUDO + ".") and len(name) > len(PSEUDO) + 8
        assert [(c, b) for _, c, b in replies] == [(f"c{i}", b"REQ%d" % i) for i in range(3)]
        for method, _, _ in replies:
            assert (method.consumer_tag, method.exchange, method.routing_key) == (tag, "", name)
            assert method.redelivered is False
        # RabbitMQ's: a reply has the channel's next delivery tag, and does not take it
        assert [m.delivery_tag for m, _, _ in replies] == [1, 1, 1]
        # a passive declare of the name: the requester is there (one consumer, no messages)
        ok = server.channel().queue_declare(name, passive=True).method
        assert (ok.queue, ok.message_count, ok.consumer_count) == (name, 0, 1)
        ok = server.channel().queue_declare(PSEUDO).method
        assert (ok.queue, ok.message_count, ok.consumer_count) == (PSEUDO, 0, 1)


def test_replies_to_a_requester_gone_are_dropped_or_returned(url: str, request_queue: str) -> None:
    with _pika(url) as server:
        with _pika(url) as client:
            ch = client.channel()
            ch.basic_consume(PSEUDO, lambda *_: None, auto_ack=True)
            ch.basic_publish("", request_queue, b"late", pika.BasicProperties(reply_to=PSEUDO))
            ch.queue_declare(request_queue, passive=True)  # (the publish was handled)
        sch = server.channel()
        method, props, _ = sch.basic_get(request_queue, auto_ack=True)
        assert method is not None
        returned: list[Any] = []
        sch.add_on_return_callback(
            lambda _c, m, _p, b: returned.append((m.reply_code, m.reply_text, m.routing_key, b))
        )
        sch.basic_publish("", props.reply_to, b"dropped")
        sch.basic_publish("", props.reply_to, b"returned", mandatory=True)
        sch.queue_declare(request_queue, passive=True)  # a round trip: the return came
        _until(server, lambda: bool(returned))
        assert returned == [(312, "NO_ROUTE", props.reply_to, b"returned")]
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            sch.queue_declare(props.reply_to, passive=True)
        assert (info.value.reply_code, info.value.reply_text) == (
            404,
            f"NOT_FOUND - no queue '{props.reply_to}' in vhost '/'",
        )


def _consume_acked(conn: pika.BlockingConnection) -> None:
    conn.channel().basic_consume(PSEUDO, lambda *_: None, auto_ack=False)


def _consume_twice(conn: pika.BlockingConnection) -> None:
    ch = conn.channel()
    ch.basic_consume(PSEUDO, lambda *_: None, auto_ack=True)
    ch.basic_consume(PSEUDO, lambda *_: None, auto_ack=True)


def _publish_without_consumer(conn: pika.BlockingConnection) -> None:
    ch = conn.channel()
    ch.basic_publish("", "amqp-sansio-nowhere", b"x", pika.BasicProperties(reply_to=PSEUDO))
    ch.queue_declare("", exclusive=True)


def _publish_on_another_channel(conn: pika.BlockingConnection) -> None:
    conn.channel().basic_consume(PSEUDO, lambda *_: None, auto_ack=True)
    _publish_without_consumer(conn)


def _publish_after_cancel(conn: pika.BlockingConnection) -> None:
    ch = conn.channel()
    ch.basic_cancel(ch.basic_consume(PSEUDO, lambda *_: None, auto_ack=True))
    ch.basic_publish("", "amqp-sansio-nowhere", b"x", pika.BasicProperties(reply_to=PSEUDO))
    ch.queue_declare("", exclusive=True)


def _get(conn: pika.BlockingConnection) -> None:
    conn.channel().basic_get(PSEUDO, auto_ack=True)


def _declare_unknown_name(conn: pika.BlockingConnection) -> None:
    conn.channel().queue_declare(PSEUDO + ".nobody", passive=True)


def _consume_a_name(conn: pika.BlockingConnection) -> None:
    conn.channel().basic_consume(PSEUDO + ".nobody", lambda *_: None, auto_ack=True)


_406 = "PRECONDITION_FAILED - "


@pytest.mark.parametrize(
    ("call", "code", "text"),
    [
        (_consume_acked, 406, _406 + "reply consumer cannot acknowledge"),
        (_consume_twice, 406, _406 + "reply consumer already set"),
        (_publish_without_consumer, 406, _406 + "fast reply consumer does not exist"),
        (_publish_on_another_channel, 406, _406 + "fast reply consumer does not exist"),
        (_publish_after_cancel, 406, _406 + "fast reply consumer does not exist"),
        (_get, 404, f"NOT_FOUND - no queue '{PSEUDO}' in vhost '/'"),
        (_declare_unknown_name, 404, f"NOT_FOUND - no queue '{PSEUDO}.nobody' in vhost '/'"),
        (_consume_a_name, 404, f"NOT_FOUND - no queue '{PSEUDO}.nobody' in vhost '/'"),
    ],
    ids=lambda v: getattr(v, "__name__", None),
)
def test_refusals_as_rabbitmq(
    url: str, call: Callable[[pika.BlockingConnection], None], code: int, text: str
) -> None:
    with _pika(url) as conn:
        with pytest.raises(pika.exceptions.ChannelClosedByBroker) as info:
            call(conn)
        assert (info.value.reply_code, info.value.reply_text) == (code, text)
        assert conn.is_open  # a channel error: the connection stays


def test_reply_delivery_tags_beside_a_consumer_as_rabbitmq(url: str, request_queue: str) -> None:
    """A reply has the channel's next delivery tag, without using it up (RabbitMQ's)."""
    with _pika(url) as client, _pika(url) as server:
        ch = client.channel()
        got: list[tuple[bytes, int]] = []
        names: list[str] = []

        def on_message(_: Any, method: Any, props: Any, body: bytes) -> None:
            got.append((body, method.delivery_tag))
            if props.reply_to:
                names.append(props.reply_to)

        ch.basic_consume(PSEUDO, on_message, auto_ack=True)
        ch.basic_consume(request_queue, on_message)  # (acks: none sent, none needed here)
        sch = server.channel()
        sch.basic_publish("", request_queue, b"n1")
        _until(client, lambda: len(got) == 1)
        ch.basic_publish("", request_queue, b"req", pika.BasicProperties(reply_to=PSEUDO))
        _until(client, lambda: len(got) == 2)
        sch.basic_publish("", names[0], b"reply")
        _until(client, lambda: len(got) == 3)
        sch.basic_publish("", request_queue, b"n2")
        _until(client, lambda: len(got) == 4)
        assert got == [(b"n1", 1), (b"req", 2), (b"reply", 3), (b"n2", 3)]


def test_a_consumer_tag_in_use_is_refused_as_rabbitmq(url: str, request_queue: str) -> None:
    """A reply consumer's tag must be new on its channel (530, a connection error). pika
    refuses a tag it has already used by itself, so our 0-9-1 client asks."""
    with sockets.connect(url, protocol="0-9-1", timeout=WAIT) as conn:
        ch = conn.channel()
        ch.basic_consume(request_queue, consumer_tag="taken")
        with pytest.raises(sockets.ConnectionClosedError) as info:
            ch.basic_consume(PSEUDO, no_ack=True, consumer_tag="taken")
        assert str(info.value).endswith(
            ": 530 NOT_ALLOWED - attempt to reuse consumer tag 'taken'"
        ), info.value
