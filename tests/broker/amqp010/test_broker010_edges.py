"""The broker's 0-10 side at its edges, in memory: amqps (the header after the TLS
handshake picks the 0-10 engine), a stream refused, a queue deleted under a subscription,
expired and dynamic queues, window credit without bounds, transactions whose accepts were
released, and values the mapping can only give as strings."""

from __future__ import annotations

import ssl
import uuid
from decimal import Decimal

import pytest
from support.amqp010.wire import Client

from amqp_sansio.broker import Broker, BrokerConfig
from amqp_sansio.broker.amqp010.mapping import from_amqp10, to_amqp10
from amqp_sansio.codec import amqp010 as c010
from amqp_sansio.codec import amqp10 as t10
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.definitions.amqp10.message import Message
from amqp_sansio.definitions.amqp10.messaging import DeleteOnNoMessages, Properties
from amqp_sansio.engine import amqp010 as engine
from amqp_sansio.framing.amqp010 import PROTOCOL_HEADER

trustme = pytest.importorskip("trustme", reason="trustme makes the test certificates")


def client(broker: Broker | None = None) -> Client:
    c = Client(broker or Broker())
    c.attach()
    return c


def test_amqps_the_header_after_the_handshake_picks_0_10() -> None:
    authority = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    authority.issue_cert("localhost").configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = client_context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    broker = Broker()
    conn = broker.accept(0.0, ssl_context=server_context)
    ours = engine.Connection(engine.Role.CLIENT, mechanism="ANONYMOUS")
    ours.start(0.0)
    events: list[engine.Event] = []
    handshaken = False
    for _ in range(200):
        if not handshaken:
            try:
                tls.do_handshake()
                handshaken = True
            except ssl.SSLWantReadError:
                pass
        if handshaken:
            data = ours.data_to_send()
            if data:
                tls.write(data)
        sent = outgoing.read()
        if sent:
            conn.receive_data(sent, 0.0)
            wanting = getattr(conn, "tls_wanting", None)
            if wanting is not None:
                conn = broker.accept_header(wanting.inner.wants, 0.0, replacing=conn)
        back = conn.data_to_send()
        if back:
            incoming.write(back)
        if handshaken:
            try:
                while plain := tls.read(65536):
                    events += ours.receive_data(plain, 0.0)
            except ssl.SSLWantReadError:
                pass
        if any(isinstance(e, engine.ConnectionOpened) for e in events):
            break
    assert any(isinstance(e, engine.ConnectionOpened) for e in events), events
    assert conn.protocol == "0-10" and conn.record.tls is not None  # type: ignore[union-attr]
    assert conn in broker.connections and len(broker.connections) == 1
    # TLS records that are not: the connection ends
    conn.receive_data(b"\x17\x03\x03\x00\x05garbage", 1.0)
    assert conn.ended


def test_a_stream_is_not_read_by_0_10() -> None:
    c = client(Broker(BrokerConfig(streams={"st"})))
    refused = c.refused(spec.MessageSubscribe(queue="st", destination="d"))
    assert refused.error_code == 540


def test_a_queue_deleted_under_a_subscription() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.subscribe("q")
    c.attach(b"t")
    c.ok(spec.QueueDelete(queue="q"), session=b"t")
    assert c.conn.sessions[b"s"].subscriptions == {}
    assert repr(c.conn.sessions[b"s"]).startswith("<0-10 session")


def test_a_dynamic_queue_goes_when_emptied_and_an_expired_message_is_dropped() -> None:
    broker = Broker()
    node = broker.dynamic_node({t10.Symbol("lifetime-policy"): DeleteOnNoMessages()})
    vhost = broker.vhosts["/"]
    vhost.publish_message("", node.address, Message(body=b"last").encode())
    c = client(broker)
    c.subscribe(node.address, accept=1)
    assert [d.body for d in c.deliveries()] == [b"last"] and node.deleted
    c.ok(spec.QueueDeclare(queue="ttl"))
    c.publish(b"short", key="ttl", delivery={"ttl": 1000})
    c.subscribe("ttl", destination="e")
    [got] = c.deliveries()
    sub = c.conn.sessions[b"s"].subscriptions["e"]
    assert repr(sub).startswith("<0-10 subscription")
    c.now = 5.0  # (the wall clock too: past its ttl)
    c.ok(spec.MessageRelease(transfers=((got.command_id, got.command_id),)))
    assert broker.nodes["ttl"].depth == 0 and broker.expired == 1


def test_window_credit_without_bounds_and_octets_unbounded_twice() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.ok(spec.MessageSubscribe(queue="q", destination="w", accept_mode=1))
    c.ok(spec.MessageSetFlowMode(destination="w", flow_mode=1))
    for _ in range(2):
        c.ok(spec.MessageFlow(destination="w", unit=1, value=0xFFFFFFFF))
    c.ok(spec.MessageFlow(destination="w", unit=0, value=0xFFFFFFFF))
    c.publish(b"a", key="q")
    [got] = c.deliveries()
    c.engine.complete(b"s", got.command_id)
    c.pump()
    sub = c.conn.sessions[b"s"].subscriptions["w"]
    assert sub.messages == sub.octets == 0xFFFFFFFF


def test_a_commit_of_accepts_released_meanwhile() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"a", key="q")
    c.ok(spec.TxSelect())
    c.subscribe("q")
    [got] = c.deliveries()
    ids = ((got.command_id, got.command_id),)
    c.ok(spec.MessageAccept(transfers=ids))
    c.ok(spec.MessageStop(destination="d"))
    c.ok(spec.MessageRelease(transfers=ids))
    c.ok(spec.TxCommit())
    assert len(c.broker.nodes["q"].available) == 1


def test_a_browsed_message_taken_by_another_is_not_acquired() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"a", key="q")
    c.ok(spec.MessageSubscribe(queue="q", destination="b", acquire_mode=1))
    c.ok(spec.MessageFlow(destination="b", unit=1, value=0xFFFFFFFF))
    c.ok(spec.MessageFlow(destination="b", unit=0, value=1))
    [shown] = c.deliveries()
    c.subscribe("q", destination="taker", accept=1)
    assert len(c.deliveries()) == 1
    got = c.result(spec.MessageAcquire(transfers=((shown.command_id, shown.command_id),)))
    assert got == spec.Acquired(transfers=())


def test_values_given_as_strings() -> None:
    header = (spec.MessageProperties(application_headers={"d": Decimal("1.5")}),)
    message = Message.decode(to_amqp10(header, b"", exchange="", routing_key=""))
    assert message.application_properties == {"d": "1.5"}
    data = Message(
        application_properties={"u": uuid.UUID(int=1), "n": None, "t": True, "x": t10.Decimal32(1)},
        body=b"",
    ).encode()
    (_, props), _ = from_amqp10(data, redelivered=False)
    headers = props.application_headers  # type: ignore[attr-defined]
    assert headers["u"] == uuid.UUID(int=1) and headers["n"] is None and headers["t"] is True
    assert isinstance(headers["x"], str)


def test_the_protocol_header_alone_and_a_refused_010_at_the_cap() -> None:
    broker = Broker(BrokerConfig(max_connections=0))
    conn = broker.accept_010(0.0)
    assert conn.ended and conn.refused is not None and conn.next_deadline() is None
    broker = Broker()
    conn = broker.accept_010(0.0)
    conn.receive_data(PROTOCOL_HEADER, 0.0)
    answer = conn.data_to_send()
    assert answer.startswith(PROTOCOL_HEADER) and len(answer) > len(PROTOCOL_HEADER)


def test_window_credit_in_octets_comes_back() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.ok(spec.MessageSubscribe(queue="q", destination="w", accept_mode=1))
    c.ok(spec.MessageSetFlowMode(destination="w", flow_mode=1))
    c.ok(spec.MessageFlow(destination="w", unit=1, value=10_000))
    c.ok(spec.MessageFlow(destination="w", unit=0, value=1))
    c.publish(b"a", key="q")
    [got] = c.deliveries()
    sub = c.conn.sessions[b"s"].subscriptions["w"]
    assert sub.messages == 0 and sub.octets < 10_000
    c.engine.complete(b"s", got.command_id)
    c.pump()
    assert sub.messages == 1 and sub.octets == 10_000


def test_a_full_queue_refuses_the_transfer() -> None:
    c = client(Broker(BrokerConfig(max_queue_depth=1)))
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"fits", key="q")
    header = [spec.DeliveryProperties(routing_key="q")]
    transfer = spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0)
    refused = c.refused(transfer, header=header, body=b"does not")
    assert refused.error_code == 506 and c.broker.nodes["q"].depth == 1


def test_what_1_0_cannot_hold_is_brought_into_range_or_refused() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"big", key="q", delivery={"ttl": 2**40, "timestamp": 2**62, "expiration": 2**62})
    message = c.broker.nodes["q"].available  # (held, its times brought down)
    assert len(message) == 1
    header = [spec.DeliveryProperties(routing_key="q"), spec.MessageProperties(content_type="ü")]
    transfer = spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0)
    assert c.refused(transfer, header=header, body=b"x").error_code == 531
    c.attach(b"t")
    header = [
        spec.DeliveryProperties(routing_key="q"),
        spec.MessageProperties(
            application_headers={"k": c010.Typed(c010.TypeCode.UINT64, 2**64 - 1)}
        ),
    ]
    assert c.refused(transfer, session=b"t", header=header, body=b"x").error_code == 531


def test_a_1_0_message_0_10_cannot_carry_whole_goes_with_its_delivery_properties() -> None:
    broker = Broker()
    c = client(broker)
    c.ok(spec.QueueDeclare(queue="q"))
    message = Message(
        properties=Properties(content_type="x" * 300),
        application_properties={"big": t10.ULong(2**64 - 1)},
        body=b"whole body",
    )
    broker.vhosts["/"].publish_message("", "q", message.encode())
    c.subscribe("q", accept=1)
    [got] = c.deliveries()
    assert got.body == b"whole body" and len(got.header) == 1


def test_flow_defaults_stop_and_an_infinite_byte_credit() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.ok(spec.MessageSubscribe(queue="q", destination="d", accept_mode=1))
    sub = c.conn.sessions[b"s"].subscriptions["d"]
    assert sub.window  # (no set-flow-mode yet: window, 0-10 spec)
    c.ok(spec.MessageFlow(destination="d", unit=1))  # no value: infinite
    c.ok(spec.MessageFlow(destination="d", unit=0, value=1))
    assert sub.octets == 0xFFFFFFFF and sub.messages == 1
    c.ok(spec.MessageStop(destination="d"))
    assert sub.messages == 0 and sub.octets == 0xFFFFFFFF  # (qpid.messaging counts on it)
    c.ok(spec.MessageFlow(destination="d", unit=1, value=0))
    c.ok(spec.MessageSetFlowMode(destination="d", flow_mode=0))
    assert not sub.window and sub.messages == sub.octets == 0
    c.ok(spec.MessageFlow(destination="d", unit=1, value=100))
    c.ok(spec.MessageStop(destination="d"))
    assert sub.octets == 0  # (a finite byte credit goes)
