"""The broker's anonymous relay (core spec 3.5.4 target ``address`` null, 3.2.4 ``to``; the
``ANONYMOUS-RELAY`` connection capability): a sender without a target address, each
message routed by its ``to`` to a node that exists, or rejected per message. Our engine as
the client, in memory (tests/support/broker_net.py); then our blocking adapter against the broker's
server."""

from __future__ import annotations

import pytest
from support.broker_net import Client, Net, accept_all

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.engine.amqp10
from amqp_sansio.broker import BrokerConfig, Users
from amqp_sansio.engine.amqp10 import states

RELAY = a.Symbol("ANONYMOUS-RELAY")


def to(address: str | None, value: bytes, **header: object) -> bytes:
    return a.Message(
        header=a.Header(**header) if header else None,  # type: ignore[arg-type]
        properties=a.Properties(to=address) if address is not None else None,
        body=value,
    ).encode()


def condition(delivery: a.Delivery) -> str | None:
    state = delivery.remote_state
    if isinstance(state, a.definitions.amqp10.transactions.TransactionalState):
        state = state.outcome
    assert isinstance(state, a.Rejected), state
    assert state.error is not None
    return str(state.error.condition)


def test_relay_is_offered_and_a_null_target_is_accepted() -> None:
    net = Net()
    c = net.connect()
    assert c.engine.remote is not None
    assert RELAY in (c.engine.remote.offered_capabilities or ())
    s = c.sender(None)
    assert s.state is a.LinkState.ATTACHED
    assert s.remote is not None and isinstance(s.remote.target, a.Target)
    assert s.remote.target.address is None
    assert s.link_credit > 0


def test_routes_to_queue_topic_stream_and_dynamic_reply_to() -> None:
    net = Net()
    server, client = net.connect(), net.connect()
    queue_reader = server.receiver("requests", 10)
    topic_reader = server.receiver("topic/news", 10)
    stream_reader = server.receiver("stream/log", 10)
    reply = client.receiver(None, 10, source=a.Source(dynamic=True))
    assert reply.remote is not None and reply.remote.source is not None
    reply_to = reply.remote.source.address
    relay = server.sender(None)
    outcomes = [
        server.send(relay, to(address, value))
        for address, value in [
            ("requests", b"q"),
            ("topic/news", b"t"),
            ("stream/log", b"s"),
            (reply_to, b"r"),
        ]
    ]
    assert all(isinstance(d.remote_state, a.Accepted) and d.remote_settled for d in outcomes)
    assert accept_all(server, queue_reader) == [b"q"]
    assert accept_all(server, topic_reader) == [b"t"]
    assert accept_all(server, stream_reader) == [b"s"]
    assert accept_all(client, reply) == [b"r"]


def test_unknown_or_missing_to_is_rejected_per_message_the_link_stays_up() -> None:
    net = Net()
    c = net.connect()
    reader = c.receiver("good", 10)
    relay = c.sender(None)
    typo = c.send(relay, to("goood", b"1"))
    none = c.send(relay, to(None, b"2"))
    good = c.send(relay, to("good", b"3"))
    assert condition(typo) == "amqp:not-found"
    assert condition(none) == "amqp:not-found"
    assert typo.remote_settled and none.remote_settled
    assert isinstance(good.remote_state, a.Accepted)
    assert relay.state is a.LinkState.ATTACHED
    assert "goood" not in net.broker.nodes  # the relay makes no node
    assert accept_all(c, reader) == [b"3"]


def test_presettled_unroutable_messages_are_dropped_and_counted() -> None:
    net = Net()
    c = net.connect()
    reader = c.receiver("good", 10)
    relay = c.sender(None, snd_settle_mode=a.SenderSettleMode.SETTLED)
    c.send(relay, to("nowhere", b"1"))
    c.send(relay, to("good", b"2"))
    assert net.broker.unroutable == 1
    assert relay.state is a.LinkState.ATTACHED
    assert accept_all(c, reader) == [b"2"]


def test_presettled_to_a_full_queue_is_counted_and_a_bare_header_has_no_to() -> None:
    net = Net(BrokerConfig(max_queue_depth=1))
    c = net.connect()
    c.receiver("q", 0)
    relay = c.sender(None, snd_settle_mode=a.SenderSettleMode.SETTLED)
    c.send(relay, to("q", b"1"))
    c.send(relay, to("q", b"2"))
    assert net.broker.unroutable == 1 and net.broker.nodes["q"].depth == 1
    unsettled = c.sender(None)
    bare = c.send(unsettled, a.Message(header=a.Header(durable=False)).encode())
    assert condition(bare) == "amqp:not-found"


def test_forbidden_address_is_rejected_unauthorized_access() -> None:
    users = Users.from_json(
        '{"users": {"u": {"password": "p", "send": ["public/*"], "receive": ["*"]}}}'
    )
    net = Net(BrokerConfig(users=users, allow_insecure_auth=True))
    c = net.connect(
        sasl=a.sasl.ClientCredentials(username="u", password="p"), allow_plain_without_tls=True
    )
    reader = c.receiver("secret", 10)
    open_reader = c.receiver("public/x", 10)
    relay = c.sender(None)
    assert relay.state is a.LinkState.ATTACHED  # access is checked per message
    denied = c.send(relay, to("secret", b"1"))
    allowed = c.send(relay, to("public/x", b"2"))
    assert condition(denied) == "amqp:unauthorized-access"
    assert isinstance(allowed.remote_state, a.Accepted)
    assert accept_all(c, reader) == [] and accept_all(c, open_reader) == [b"2"]


def test_queue_limit_is_resource_limit_exceeded() -> None:
    net = Net(BrokerConfig(max_queue_depth=1))
    c = net.connect()
    c.receiver("q", 0)  # makes the queue; takes nothing
    relay = c.sender(None)
    first = c.send(relay, to("q", b"1"))
    second = c.send(relay, to("q", b"2"))
    assert isinstance(first.remote_state, a.Accepted)
    assert condition(second) == "amqp:resource-limit-exceeded"


def test_durable_relay_message_is_settled_after_the_store_flush() -> None:
    flushed: list[int] = []

    class Counting:
        def put(self, node: object, message: object) -> None:
            flushed.append(0)

        def remove(self, node: object, message: object) -> None:
            pass

        def update(self, node: object, message: object) -> None:
            pass

        def flush(self) -> None:
            pass

    from amqp_sansio.broker import Broker

    net = Net(broker=Broker(store=Counting()))
    c = net.connect()
    c.receiver("q", 0)
    d = c.send(c.sender(None), to("q", b"x", durable=True))
    assert isinstance(d.remote_state, a.Accepted) and flushed == [0]


def _controller(client: Client) -> a.Controller:
    session = client.session or client.begin()
    ctl = session.attach_controller("ctl")
    client.net.pump()
    return ctl


@pytest.mark.parametrize("commit", [True, False])
def test_in_a_transaction(commit: bool) -> None:
    net = Net()
    c, other = net.connect(), net.connect()
    reader = other.receiver("q", 10)
    ctl = _controller(c)
    relay = c.sender(None)
    txn = ctl.declare()
    net.pump()
    good = relay.send(to("q", b"1"), transaction=txn)
    bad = relay.send(to("nowhere", b"2"), transaction=txn)
    net.pump()
    assert accept_all(other, reader) == []  # not before the commit
    assert isinstance(good.remote_state, a.definitions.amqp10.transactions.TransactionalState)
    assert isinstance(good.remote_state.outcome, a.Accepted)
    # The unknown address is rejected at post time, in the transaction's state; the
    # transaction goes on without it.
    assert condition(bad) == "amqp:not-found" and bad.remote_settled
    ctl.discharge(txn, fail=not commit)
    net.pump()
    assert txn.state is (
        states.TransactionState.COMMITTED if commit else states.TransactionState.ROLLED_BACK
    )
    assert accept_all(other, reader) == ([b"1"] if commit else [])


def test_presettled_unroutable_in_a_transaction_refuses_the_commit() -> None:
    net = Net()
    c = net.connect()
    reader = c.receiver("q", 10)
    ctl = _controller(c)
    relay = c.sender(None, snd_settle_mode=a.SenderSettleMode.SETTLED)
    txn = ctl.declare()
    net.pump()
    relay.send(to("q", b"1"), transaction=txn)
    relay.send(to("nowhere", b"2"), transaction=txn)
    net.pump()
    ctl.discharge(txn, fail=False)
    net.pump()
    (rolled,) = c.of(a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.error is not None and rolled.error.condition == "amqp:transaction:rollback"
    assert accept_all(c, reader) == []
    # The next transaction is not affected.
    txn = ctl.declare()
    net.pump()
    relay.send(to("q", b"3"), transaction=txn)
    ctl.discharge(txn, fail=False)
    net.pump()
    assert txn.state is states.TransactionState.COMMITTED
    assert accept_all(c, reader) == [b"3"]


def test_our_blocking_adapter_sends_through_the_relay() -> None:
    from amqp_sansio.adapters import sockets
    from amqp_sansio.adapters.broker import run_broker

    with run_broker() as server, sockets.connect(server.url, timeout=10) as conn:
        receiver = conn.receiver("replies", credit=5)
        relay = conn.sender(None)
        bad = relay.send(a.Message(properties=a.Properties(to="nope"), body=b"x"), timeout=10)
        good = relay.send(a.Message(properties=a.Properties(to="replies"), body=b"y"), timeout=10)
        assert isinstance(bad, a.Rejected) and bad.error is not None
        assert bad.error.condition == "amqp:not-found"
        assert isinstance(good, a.Accepted)
        got = receiver.receive(timeout=10)
        got.accept()
        assert got.message.body.value == b"y"  # type: ignore[union-attr]


def test_our_asyncio_adapter_sends_through_the_relay() -> None:
    import asyncio

    from amqp_sansio.adapters import aio
    from amqp_sansio.adapters.broker import serve_broker

    async def main() -> tuple[object, object, object]:
        async with serve_broker() as server, aio.connect(server.url, timeout=10) as conn:
            receiver = await conn.receiver("topic/replies", credit=5)
            relay = await conn.sender(None)
            bad = await relay.send(a.Message(properties=a.Properties(), body=b"x"), timeout=10)
            good = await relay.send(
                a.Message(properties=a.Properties(to="topic/replies"), body=b"y"), timeout=10
            )
            got = await receiver.receive(timeout=10)
            got.accept()
            return bad, good, got.message.body.value  # type: ignore[union-attr]

    bad, good, value = asyncio.run(main())
    assert isinstance(bad, a.Rejected) and bad.error is not None
    assert bad.error.condition == "amqp:not-found"
    assert isinstance(good, a.Accepted) and value == b"y"
