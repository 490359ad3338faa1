"""The broker against Qpid Proton's blocking client: an independent AMQP 1.0 implementation
(python-qpid-proton), over loopback."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from amqp_sansio.adapters.broker import BrokerServer, run_broker

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.reactor import Copy, DynamicNodeProperties  # noqa: E402
from proton.utils import BlockingConnection, LinkDetached  # noqa: E402

WAIT = 10.0


@pytest.fixture
def server() -> Iterator[BrokerServer]:
    config = BrokerConfig(
        dead_letter="dlq", sasl=a.sasl.ServerAuthenticator(None, allow_anonymous=True)
    )
    with run_broker(config=config) as s:
        yield s


@pytest.fixture
def conn(server: BrokerServer) -> Iterator[Any]:
    c = BlockingConnection(server.url, timeout=WAIT)
    try:
        yield c
    finally:
        c.close()


def take(receiver: Any, n: int, *, settle: str = "accept") -> list[Any]:
    out = []
    for _ in range(n):
        m = receiver.receive(timeout=WAIT)
        out.append(m.body)
        getattr(receiver, settle)()
    return out


def test_proton_fifo_and_priority(conn: Any) -> None:
    snd = conn.create_sender("pq")
    for i, prio in enumerate([4, 4, 9, 0, 9, 4]):
        snd.send(Message(body=f"m{i}", priority=prio))
    rcv = conn.create_receiver("pq", credit=10)
    assert take(rcv, 6) == ["m2", "m4", "m0", "m1", "m5", "m3"]


def test_proton_ttl(conn: Any, server: BrokerServer) -> None:
    snd = conn.create_sender("pttl")
    snd.send(Message(body="gone", ttl=0.1))
    snd.send(Message(body="kept", ttl=60))
    time.sleep(0.3)
    rcv = conn.create_receiver("pttl", credit=10)
    assert take(rcv, 1) == ["kept"]
    assert server.broker.expired == 1


def test_proton_dead_letter_and_modified(conn: Any) -> None:
    snd = conn.create_sender("pwork")
    snd.send(Message(body="bad"))
    snd.send(Message(body="retry"))
    rcv = conn.create_receiver("pwork", credit=1)
    assert take(rcv, 1, settle="reject") == ["bad"]
    m = rcv.receive(timeout=WAIT)
    assert m.body == "retry" and m.delivery_count == 0
    rcv.release(delivered=True)  # Proton sends modified without delivery-failed: no count
    m = rcv.receive(timeout=WAIT)
    assert m.body == "retry" and m.delivery_count == 0
    rcv.accept()
    assert take(conn.create_receiver("dlq", credit=5), 1) == ["bad"]


def test_proton_request_reply_with_a_dynamic_queue(conn: Any) -> None:
    replies = conn.create_receiver(None, dynamic=True, credit=5)
    address = replies.link.remote_source.address
    assert address.startswith("tmp.")
    service = conn.create_receiver("psvc", credit=5)
    conn.create_sender("psvc").send(Message(body="ping", reply_to=address))
    request = service.receive(timeout=WAIT)
    service.accept()
    conn.create_sender(request.reply_to).send(Message(body="pong", correlation_id=7))
    reply = replies.receive(timeout=WAIT)
    replies.accept()
    assert (reply.body, reply.correlation_id) == ("pong", 7)


def test_proton_dynamic_node_lifetime_policy(conn: Any, server: BrokerServer) -> None:
    policy = DynamicNodeProperties({"lifetime-policy": proton.symbol("delete-on-no-links")})
    rcv = conn.create_receiver(None, dynamic=True, options=policy)
    address = rcv.link.remote_source.address
    assert address in server.broker.nodes
    rcv.close()
    deadline = time.monotonic() + WAIT
    while address in server.broker.nodes and time.monotonic() < deadline:
        time.sleep(0.01)
    assert address not in server.broker.nodes


def test_proton_link_refusal() -> None:
    config = BrokerConfig(
        auto_create=False, sasl=a.sasl.ServerAuthenticator(None, allow_anonymous=True)
    )
    with run_broker(config=config) as server:
        c = BlockingConnection(server.url, timeout=WAIT)
        try:
            with pytest.raises(LinkDetached):
                c.create_receiver("missing")
            with pytest.raises(LinkDetached):
                c.create_sender("missing")
        finally:
            c.close()


def test_proton_browse_and_round_robin(conn: Any, server: BrokerServer) -> None:
    snd = conn.create_sender("pshare")
    for i in range(4):
        snd.send(Message(body=i))
    # (Proton names a link by its address: links to one address need names of their own.)
    browser = conn.create_receiver("pshare", credit=10, options=Copy(), name="browser")
    assert take(browser, 4) == [0, 1, 2, 3]
    assert server.broker.nodes["pshare"].depth == 4  # browsed, not taken
    one = conn.create_receiver("prr", credit=10, name="one")
    two = conn.create_receiver("prr", credit=10, name="two")
    rr = conn.create_sender("prr")
    for i in range(4):
        rr.send(Message(body=i))
    got = take(one, 2) + take(two, 2)
    assert sorted(got) == [0, 1, 2, 3]


def test_proton_lost_connection_redelivers(server: BrokerServer) -> None:
    c = BlockingConnection(server.url, timeout=WAIT)
    c.create_sender("plost").send(Message(body="m"))
    rcv = c.create_receiver("plost", credit=1)
    assert rcv.receive(timeout=WAIT).body == "m"
    c.close()  # unsettled: the default outcome applies
    c2 = BlockingConnection(server.url, timeout=WAIT)
    try:
        again = c2.create_receiver("plost", credit=1)
        m = again.receive(timeout=WAIT)
        assert (m.body, m.delivery_count) == ("m", 1)
        again.accept()
    finally:
        c2.close()
