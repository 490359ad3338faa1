"""Direct reply-to over AMQP 1.0, as RabbitMQ 4.2 serves it (its page "Direct Reply-To"): a
requester's receiver with a dynamic source and the capability ``rabbitmq:volatile-queue``
gets a name (``amq.rabbitmq.reply-to.<token>``) in the attach's answer; a responder sends to
it through the anonymous relay (``to``) or on a sender attached to it. Our client
(``sockets.connect(url)``) against ``amqp-sansio broker`` with no options; then across
protocols, a 0-9-1 requester (pika) answered by a 1.0 responder and the other way round
(docs/broker.rst, "Direct reply-to")."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pika
import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import WAIT, BrokerProcess

import amqp_sansio as a

VOLATILE = ("rabbitmq:volatile-queue",)
PSEUDO = "amq.rabbitmq.reply-to"


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def _fresh() -> str:
    return f"rpc.{uuid.uuid4().hex[:10]}"


def _serve(conn: sockets.Connection, queue: str, count: int, *, relay: bool = True) -> list[str]:
    """A 1.0 responder: ``count`` requests from ``queue``, each answered with its body in
    upper case and its message-id as correlation-id, through the anonymous relay (``to``),
    or on a sender attached to the reply-to address; the reply-to addresses it saw."""
    requests = conn.receiver(queue, credit=count)
    relay_sender = conn.sender() if relay else None
    seen: list[str] = []
    for _ in range(count):
        d = requests.receive(timeout=WAIT)
        assert d is not None
        d.accept()
        props = d.message.properties
        assert props is not None and isinstance(props.reply_to, str)
        seen.append(props.reply_to)
        body = d.message.body.value.upper()
        if relay_sender is not None:
            reply = a.Properties(to=props.reply_to, correlation_id=props.message_id)
            relay_sender.send(a.Message(properties=reply, body=body))
        else:
            sender = conn.sender(props.reply_to)
            sender.send(
                a.Message(properties=a.Properties(correlation_id=props.message_id), body=body)
            )
    return seen


@pytest.mark.parametrize("relay", [True, False], ids=["anonymous-relay", "sender-to-address"])
def test_our_client_rpc_over_a_volatile_queue(broker: BrokerProcess, relay: bool) -> None:
    queue = _fresh()
    with (
        sockets.connect(broker.url, timeout=WAIT) as requester,
        sockets.connect(broker.url, timeout=WAIT) as responder,
    ):
        responder.receiver(queue).close()  # (the request queue, made on first use, is there)
        replies = requester.receiver(dynamic=True, capabilities=VOLATILE, credit=10)
        name = replies.address
        assert name is not None and name.startswith(PSEUDO + ".") and len(name) > 30
        requests = requester.sender(queue)
        for i in range(3):
            props = a.Properties(message_id=f"m{i}", reply_to=name)
            requests.send(a.Message(properties=props, body=b"req%d" % i))
        assert _serve(responder, queue, 3, relay=relay) == [name] * 3
        got = []
        for _ in range(3):
            d = replies.receive(timeout=WAIT)
            assert d is not None
            props = d.message.properties
            assert props is not None
            got.append((props.correlation_id, d.message.body.value))
        assert got == [(f"m{i}", b"REQ%d" % i) for i in range(3)]


def test_a_volatile_queue_sends_settled_and_is_not_a_queue(broker: BrokerProcess) -> None:
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        replies = conn.receiver(dynamic=True, capabilities=VOLATILE)
        link = replies.core.link
        assert link.snd_settle_mode is a.SenderSettleMode.SETTLED
        remote = link.remote
        assert remote is not None and isinstance(remote.source, a.Source)
        assert remote.source.expiry_policy == a.Symbol("link-detach")
        name = replies.address
        assert name is not None
        # nobody consumes a name: a receiver attached to it is refused
        with pytest.raises(sockets.LinkDetachedError, match="amqp:not-found"):
            conn.receiver(name)
        replies.close()
        # its requester gone, a sender to the name is refused, and the relay drops replies
        with pytest.raises(sockets.LinkDetachedError, match="amqp:not-found"):
            conn.sender(name)
        outcome = conn.sender().send(a.Message(properties=a.Properties(to=name), body=b"late"))
        assert isinstance(outcome, a.Accepted)  # (at most once: accepted, and dropped)


def test_a_0_9_1_requester_answered_by_a_1_0_responder(broker: BrokerProcess) -> None:
    queue = _fresh()
    url = f"amqp://guest:guest@127.0.0.1:{broker.port}"
    with (
        pika.BlockingConnection(pika.URLParameters(url)) as requester,
        sockets.connect(broker.url, timeout=WAIT) as responder,
    ):
        ch = requester.channel()
        ch.queue_declare(queue)
        replies: list[tuple[str, bytes]] = []
        ch.basic_consume(
            PSEUDO, lambda _c, _m, p, b: replies.append((p.correlation_id, b)), auto_ack=True
        )
        props = pika.BasicProperties(reply_to=PSEUDO, message_id="q1")
        ch.basic_publish("", queue, b"from 0-9-1", props)
        seen = _serve(responder, queue, 1)
        assert seen[0].startswith(PSEUDO + ".")
        deadline = time.monotonic() + WAIT
        while not replies and time.monotonic() < deadline:
            requester.process_data_events(0.05)
        assert replies == [("q1", b"FROM 0-9-1")]
        ch.queue_delete(queue)


def test_a_1_0_requester_answered_by_a_0_9_1_responder(broker: BrokerProcess) -> None:
    queue = _fresh()
    url = f"amqp://guest:guest@127.0.0.1:{broker.port}"
    with (
        sockets.connect(broker.url, timeout=WAIT) as requester,
        pika.BlockingConnection(pika.URLParameters(url)) as responder,
    ):
        ch = responder.channel()
        ch.queue_declare(queue)
        replies = requester.receiver(dynamic=True, capabilities=VOLATILE)
        assert replies.address is not None and replies.address.startswith(PSEUDO + ".")
        props = a.Properties(message_id="r1", reply_to=replies.address)
        requester.sender(queue).send(a.Message(properties=props, body=b"from 1.0"))
        method, request, body = ch.basic_get(queue, auto_ack=True)
        assert method is not None and request.reply_to == replies.address
        reply = pika.BasicProperties(correlation_id=request.message_id)
        ch.basic_publish("", request.reply_to, body.upper(), reply, mandatory=True)
        d = replies.receive(timeout=WAIT)
        assert d is not None and d.message.body.value == b"FROM 1.0"
        assert d.message.properties is not None
        assert d.message.properties.correlation_id == "r1"
        ch.queue_delete(queue)
