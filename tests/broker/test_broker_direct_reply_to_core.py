"""Direct reply-to's edges on the broker core over AMQP 1.0, in memory (our engine as the
client, tests/support/broker_net.py): a reply is dropped, not held, when its requester has no
credit; a requester's name goes with its link, its session and its connection; a volatile
terminus is a source only (docs/broker.rst, "Direct reply-to")."""

from __future__ import annotations

from support.broker_net import Client, Net, body

import amqp_sansio as a

VOLATILE = a.Symbol("rabbitmq:volatile-queue")


def _requester(client: Client, credit: int) -> tuple[a.Receiver, str]:
    link = client.receiver(None, credit, source=a.Source(dynamic=True, capabilities=(VOLATILE,)))
    assert link.state is a.LinkState.ATTACHED
    assert link.remote is not None and isinstance(link.remote.source, a.Source)
    name = link.remote.source.address
    assert isinstance(name, str) and name.startswith("amq.rabbitmq.reply-to.")
    return link, name


def _reply(client: Client, relay: a.Sender, name: str, value: bytes) -> a.Delivery:
    return client.send(relay, a.Message(properties=a.Properties(to=name), body=value))


def test_a_reply_without_credit_is_dropped_not_held() -> None:
    net = Net()
    requester, responder = net.connect(), net.connect()
    replies, name = _requester(requester, 0)
    relay = responder.sender(None)
    first = _reply(responder, relay, name, b"no credit")
    assert isinstance(first.remote_state, a.Accepted)  # (accepted all the same)
    assert requester.received(replies) == []
    replies.flow(1)
    net.pump()
    _reply(responder, relay, name, b"credit")
    got = requester.received(replies)
    assert [body(e) for e in got] == [b"credit"]
    assert got[0].delivery.remote_settled  # (settled: nothing to give back)
    assert requester.received(replies) == []  # the first never comes
    assert (net.broker.replies.delivered, net.broker.replies.dropped) == (1, 1)


def test_a_name_goes_with_its_link_session_or_connection() -> None:
    net = Net()
    client = net.connect()
    link, name = _requester(client, 1)
    assert net.broker.replies.present(name)
    link.detach(closed=True)
    net.pump()
    assert not net.broker.replies.present(name) and len(net.broker.replies) == 0
    _, name = _requester(client, 1)
    assert client.session is not None
    client.session.end()
    net.pump()
    assert len(net.broker.replies) == 0
    other = net.connect()
    _, name = _requester(other, 1)
    net.lose(other)
    assert len(net.broker.replies) == 0
    # the responder's relay drops a reply to a name gone, and counts it
    responder = net.connect()
    late = _reply(responder, responder.sender(None), name, b"late")
    assert isinstance(late.remote_state, a.Accepted)
    assert net.broker.replies.dropped == 1


def test_a_volatile_target_is_refused() -> None:
    net = Net()
    client = net.connect()
    link = client.sender(None, target=a.Target(dynamic=True, capabilities=(VOLATILE,)))
    assert link.state is not a.LinkState.ATTACHED
    detached = client.of(a.events.LinkDetached)
    assert detached and detached[-1].error is not None
    assert str(detached[-1].error.condition) == "amqp:not-implemented"


def test_rabbitmq_s_queues_form_of_a_name_is_taken() -> None:
    """RabbitMQ 4.2 hands out ``/queues/amq.rabbitmq.reply-to.<token>`` (its address scheme
    v2); a responder that writes a name so reaches the requester here too."""
    net = Net()
    requester, responder = net.connect(), net.connect()
    replies, name = _requester(requester, 1)
    _reply(responder, responder.sender(None), "/queues/" + name, b"v2")
    assert [body(e) for e in requester.received(replies)] == [b"v2"]
