"""The broker's 0-10 side over bytes, in memory: our 0-10 client engine against
:class:`~amqp_sansio.broker.Broker` (no sockets), every command and its refusals
(0-10 spec, classes exchange, queue, message, tx; execution.exception's error codes)."""

from __future__ import annotations

import random

import pytest
from support.amqp010.wire import Client

from amqp_sansio.broker import Broker, BrokerConfig, pick_protocol
from amqp_sansio.codec import amqp010 as codec
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine

NOT_FOUND, LOCKED, PRECONDITION, ILLEGAL_STATE = 404, 405, 406, 409
NOT_ALLOWED, ILLEGAL_ARGUMENT, NOT_IMPLEMENTED, INVALID = 530, 531, 540, 503


def client(broker: Broker | None = None, **kw: object) -> Client:
    c = Client(broker or Broker(), **kw)  # type: ignore[arg-type]
    c.attach()
    return c


def test_the_header_picks_the_010_engine() -> None:
    assert pick_protocol(b"AMQP\x01\x01\x00\x0a") == "0-10"
    broker = Broker()
    c = client(broker)
    opened = [e for e in c.take() if isinstance(e, engine.ConnectionOpened)]
    assert opened and c.conn.is_open and c.conn.record.opened
    assert c.conn.vhost is broker.vhosts["/"]
    assert c.conn in broker.connections and repr(c.conn).startswith("<BrokerConnection010")


@pytest.mark.parametrize("chunk", [None, 1, random.Random(7)])
def test_a_message_through_the_default_exchange(chunk: object) -> None:
    c = client(chunk=chunk)
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"hello", key="q", content_type="text/plain")
    c.subscribe("q", accept=1)
    [got] = c.deliveries()
    assert got.body == b"hello" and got.command.destination == "d"  # type: ignore[attr-defined]
    delivery, props = got.header
    assert isinstance(delivery, spec.DeliveryProperties) and delivery.routing_key == "q"
    assert isinstance(props, spec.MessageProperties) and props.content_type == "text/plain"
    assert c.broker.nodes["q"].depth == 0  # accept-mode none: taken on delivery


def test_explicit_accept_release_reject_and_acquire() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    for n in range(4):
        c.publish(b"m%d" % n, key="q")
    c.subscribe("q")
    got = c.deliveries()
    assert [g.body for g in got] == [b"m0", b"m1", b"m2", b"m3"]
    ids = [g.command_id for g in got]
    queue = c.broker.nodes["q"]
    acquired = c.result(spec.MessageAcquire(transfers=((ids[0], ids[1]),)))
    assert acquired == spec.Acquired(transfers=((ids[0], ids[0]), (ids[1], ids[1])))
    c.ok(spec.MessageAccept(transfers=((ids[0], ids[0]),)))
    assert queue.depth == 3
    c.ok(spec.MessageReject(transfers=((ids[1], ids[1]),), code=0, text="no"))
    assert queue.depth == 2
    c.ok(spec.MessageStop(destination="d"))
    c.ok(spec.MessageRelease(transfers=((ids[2], ids[3]),), set_redelivered=True))
    assert queue.depth == 2 and len(queue.available) == 2
    c.ok(spec.MessageFlow(destination="d", unit=1, value=0xFFFFFFFF))  # (stop took both)
    c.ok(spec.MessageFlow(destination="d", unit=0, value=2))
    again = c.deliveries()
    assert [g.body for g in again] == [b"m2", b"m3"]
    assert all(g.header[0].redelivered for g in again)  # type: ignore[attr-defined]
    c.ok(spec.MessageAccept(transfers=tuple((g.command_id, g.command_id) for g in again)))
    assert queue.depth == 0


def test_credit_window_flush_stop_and_cancel() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    for n in range(5):
        c.publish(b"%d" % n, key="q")
    c.ok(spec.MessageSubscribe(queue="q", destination="w", accept_mode=0, acquire_mode=0))
    c.ok(spec.MessageSetFlowMode(destination="w", flow_mode=1))  # window
    c.ok(spec.MessageFlow(destination="w", unit=1, value=0xFFFFFFFF))
    c.ok(spec.MessageFlow(destination="w", unit=0, value=2))
    first = c.deliveries()
    assert len(first) == 2
    # window mode: completing the transfers gives their credit back
    for g in first:
        c.engine.complete(b"s", g.command_id)
    c.pump()
    assert len(c.deliveries()) == 2
    # credit mode, a byte credit that runs out
    c.ok(spec.MessageSetFlowMode(destination="w", flow_mode=0))
    c.ok(spec.MessageFlow(destination="w", unit=0, value=5))
    c.ok(spec.MessageFlow(destination="w", unit=1, value=1))
    assert len(c.deliveries()) == 1
    # flush: what the credit allows, then none
    c.broker.vhosts["/"].publish_message("", "q", _encoded(b"late"))
    c.ok(spec.MessageFlush(destination="w"))
    assert c.deliveries() == []
    c.ok(spec.MessageFlow(destination="w", unit=0, value=0xFFFFFFFF))
    c.ok(spec.MessageFlow(destination="w", unit=1, value=0xFFFFFFFF))
    c.ok(spec.MessageFlow(destination="w", unit=0, value=3))  # (infinite stays infinite)
    assert [g.body for g in c.deliveries()] == [b"late"]
    c.ok(spec.MessageFlush(destination="w"))
    c.ok(spec.MessageCancel(destination="w"))
    assert c.conn.sessions[b"s"].subscriptions == {}
    assert c.refused(spec.MessageFlow(destination="w", unit=0, value=1)).error_code == NOT_FOUND


def _encoded(body: bytes) -> bytes:
    from amqp_sansio.definitions.amqp10.message import Message

    return Message(body=body).encode()


def test_exchanges_declare_query_bind_bound_unbind_delete() -> None:
    c = client()
    c.ok(
        spec.ExchangeDeclare(
            exchange="x", type="topic", durable=True, alternate_exchange="amq.fanout"
        )
    )
    c.ok(spec.ExchangeDeclare(exchange="x", type="topic"))  # again: the same
    c.ok(spec.ExchangeDeclare(exchange="x", passive=True))
    found = c.result(spec.ExchangeQuery(name="x"))
    assert found.type == "topic" and found.durable and not found.not_found
    assert found.arguments == {"alternate-exchange": "amq.fanout"}
    assert c.result(spec.ExchangeQuery(name="nope")).not_found
    c.ok(spec.QueueDeclare(queue="q"))
    c.ok(spec.ExchangeBind(queue="q", exchange="x", binding_key="a.#"))
    bound = c.result(spec.ExchangeBound(exchange="x", queue="q", binding_key="a.#"))
    assert bound == spec.ExchangeBoundResult()
    bound = c.result(
        spec.ExchangeBound(exchange="x", queue="q", binding_key="b", arguments={"k": 1})
    )
    assert bound.key_not_matched and bound.args_not_matched and not bound.queue_not_matched
    bound = c.result(spec.ExchangeBound(exchange="x", queue="other"))
    assert bound.queue_not_found and bound.queue_not_matched
    bound = c.result(spec.ExchangeBound(exchange="none"))
    assert bound.exchange_not_found and not bound.queue_not_matched
    assert c.result(spec.ExchangeBound(exchange="x")) == spec.ExchangeBoundResult()
    c.publish(b"routed", exchange="x", key="a.b")
    assert c.broker.nodes["q"].depth == 1
    c.ok(spec.ExchangeUnbind(queue="q", exchange="x", binding_key="a.#"))
    assert c.result(spec.ExchangeBound(exchange="x", queue="q")).queue_not_matched
    c.ok(spec.ExchangeDelete(exchange="x"))
    assert c.result(spec.ExchangeQuery(name="x")).not_found


@pytest.mark.parametrize(
    ("command", "code"),
    [
        (spec.ExchangeDeclare(exchange="nope", passive=True), NOT_FOUND),
        (spec.ExchangeDeclare(exchange="amq.topic", type="direct"), NOT_ALLOWED),
        (spec.ExchangeDeclare(exchange="amq.new", type="direct"), NOT_ALLOWED),
        (spec.ExchangeDeclare(exchange="y", type="no-such-type"), NOT_FOUND),
        (spec.ExchangeDeclare(exchange="y"), INVALID),
        (spec.ExchangeDelete(exchange="nope"), NOT_FOUND),
        (spec.ExchangeDelete(exchange=""), NOT_ALLOWED),
        (spec.ExchangeBind(queue="nope", exchange="amq.topic", binding_key="k"), NOT_FOUND),
        (spec.ExchangeBind(queue="", exchange="amq.topic"), ILLEGAL_ARGUMENT),
        (spec.ExchangeBind(queue="q", exchange="nope"), NOT_FOUND),
        (spec.ExchangeUnbind(queue="q", exchange="amq.topic", binding_key="k"), NOT_FOUND),
        (spec.ExchangeUnbind(queue="nope", exchange="amq.topic", binding_key="k"), NOT_FOUND),
        (spec.ExchangeUnbind(queue=""), ILLEGAL_ARGUMENT),
        (spec.QueueDeclare(queue=""), ILLEGAL_ARGUMENT),
        (spec.QueueDeclare(queue="nope", passive=True), NOT_FOUND),
        (spec.QueueDeclare(queue="amq.q"), NOT_ALLOWED),
        (spec.QueueDelete(queue="nope"), NOT_FOUND),
        (spec.QueueDelete(queue=""), ILLEGAL_ARGUMENT),
        (spec.QueuePurge(queue="nope"), NOT_FOUND),
        (spec.QueuePurge(queue=""), ILLEGAL_ARGUMENT),
        (spec.MessageSubscribe(queue="nope", destination="d"), NOT_FOUND),
        (spec.MessageSubscribe(queue="q", destination="d", resume_id="r"), NOT_IMPLEMENTED),
        (spec.MessageCancel(destination="nope"), NOT_FOUND),
        (spec.MessageSetFlowMode(destination="nope", flow_mode=0), NOT_FOUND),
        (spec.MessageFlush(destination="nope"), NOT_FOUND),
        (spec.MessageStop(destination="nope"), NOT_FOUND),
        (spec.TxCommit(), ILLEGAL_STATE),
        (spec.TxRollback(), ILLEGAL_STATE),
        (spec.DtxSelect(), NOT_IMPLEMENTED),
        (spec.FileQos(prefetch_count=1), NOT_IMPLEMENTED),
        (spec.StreamQos(prefetch_count=1), NOT_IMPLEMENTED),
        (spec.MessageResume(destination="d", resume_id="r"), NOT_IMPLEMENTED),
    ],
)
def test_refusals_and_their_error_codes(command: spec.Command, code: int) -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    refused = c.refused(command)
    assert refused.error_code == code, refused
    c.pump()
    # the session is gone (not kept), its state with it; the connection goes on
    assert b"s" not in c.conn.sessions and c.conn.is_open
    c.attach(b"t")
    c.ok(spec.QueueDeclare(queue="q2"), session=b"t")


def test_queues_declare_query_purge_delete() -> None:
    c = client()
    c.ok(
        spec.QueueDeclare(
            queue="q", durable=True, auto_delete=False, arguments={"x-max-length": 10}
        )
    )
    c.ok(spec.QueueDeclare(queue="q"))  # again: the same queue
    c.ok(spec.QueueDeclare(queue="q", passive=True))
    c.ok(spec.QueueDeclare(queue="dl", alternate_exchange="amq.fanout"))
    assert c.result(spec.QueueQuery(queue="dl")).alternate_exchange == "amq.fanout"
    c.publish(b"1", key="q")
    c.publish(b"2", key="q")
    found = c.result(spec.QueueQuery(queue="q"))
    assert found.queue == "q" and found.durable and found.message_count == 2
    assert found.arguments == {"x-max-length": 10} and found.subscriber_count == 0
    assert c.result(spec.QueueQuery(queue="nope")) == spec.QueueQueryResult()
    c.broker.declare("made-by-1.0")
    assert c.result(spec.QueueQuery(queue="made-by-1.0")).queue == "made-by-1.0"
    c.ok(spec.QueuePurge(queue="q"))
    assert c.result(spec.QueueQuery(queue="q")).message_count == 0
    c.publish(b"3", key="q")
    assert c.refused(spec.QueueDelete(queue="q", if_empty=True)).error_code == PRECONDITION
    c.attach(b"t")
    c.ok(
        spec.MessageSubscribe(queue="q", destination="d", accept_mode=0, acquire_mode=0),
        session=b"t",
    )
    assert (
        c.refused(spec.QueueDelete(queue="q", if_unused=True), session=b"t").error_code
        == PRECONDITION
    )
    c.attach(b"u")
    c.ok(spec.QueueDelete(queue="q"), session=b"u")
    assert "q" not in c.broker.nodes


def test_exclusive_queues_and_subscriptions() -> None:
    broker = Broker()
    a, b = client(broker), client(broker)
    a.others, b.others = [b], [a]
    a.ok(spec.QueueDeclare(queue="mine", exclusive=True, auto_delete=True))
    assert b.refused(spec.QueueDeclare(queue="mine")).error_code == LOCKED
    b.attach(b"t")
    assert (
        b.refused(spec.MessageSubscribe(queue="mine", destination="d"), session=b"t").error_code
        == LOCKED
    )
    a.ok(spec.QueueDeclare(queue="shared"))
    a.ok(spec.MessageSubscribe(queue="shared", destination="x", exclusive=True, accept_mode=1))
    b.attach(b"u")
    assert (
        b.refused(spec.MessageSubscribe(queue="shared", destination="d"), session=b"u").error_code
        == LOCKED
    )
    a.ok(spec.MessageSubscribe(queue="mine", destination="m", accept_mode=1))
    assert a.refused(spec.MessageSubscribe(queue="mine", destination="m")).error_code == NOT_ALLOWED
    a.attach(b"t")
    # an exclusive auto-delete queue stays after its subscriber's cancel, till its connection goes
    a.ok(spec.MessageSubscribe(queue="mine", destination="m2", accept_mode=1), session=b"t")
    a.ok(spec.MessageCancel(destination="m2"), session=b"t")
    assert "mine" in broker.nodes
    a.engine.close()
    a.pump()
    assert "mine" not in broker.nodes and a.conn.ended and a.conn not in broker.connections


def test_auto_delete_queue_goes_with_its_last_subscriber() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="ad", auto_delete=True))
    c.ok(spec.MessageSubscribe(queue="ad", destination="d", accept_mode=1))
    c.ok(spec.MessageCancel(destination="d"))
    assert "ad" not in c.broker.nodes


def test_transactions_hold_transfers_and_accepts() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.ok(spec.TxSelect())
    c.publish(b"t1", key="q")
    assert c.broker.nodes["q"].depth == 0
    c.ok(spec.TxCommit())
    assert c.broker.nodes["q"].depth == 1
    c.publish(b"t2", key="q")
    c.ok(spec.TxRollback())
    assert c.broker.nodes["q"].depth == 1
    assert (
        c.refused(
            spec.MessageTransfer(destination="nope", accept_mode=1, acquire_mode=0)
        ).error_code
        == NOT_FOUND
    )
    c.attach(b"t")
    c.ok(spec.TxSelect(), session=b"t")
    c.ok(
        spec.MessageSubscribe(queue="q", destination="d", accept_mode=0, acquire_mode=0),
        session=b"t",
    )
    c.ok(spec.MessageFlow(destination="d", unit=1, value=0xFFFFFFFF), session=b"t")
    c.ok(spec.MessageFlow(destination="d", unit=0, value=5), session=b"t")
    [got] = c.deliveries()
    c.ok(spec.MessageAccept(transfers=((got.command_id, got.command_id),)), session=b"t")
    assert c.broker.nodes["q"].depth == 1
    c.ok(spec.TxRollback(), session=b"t")
    c.ok(spec.MessageAccept(transfers=((got.command_id, got.command_id),)), session=b"t")
    c.ok(spec.TxCommit(), session=b"t")
    assert c.broker.nodes["q"].depth == 0


def test_a_transfer_with_accept_mode_explicit_is_accepted() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"x", key="q", accept_mode=0)
    accepts = [
        e
        for e in c.take()
        if isinstance(e, engine.CommandReceived) and isinstance(e.command, spec.MessageAccept)
    ]
    assert accepts and c.broker.nodes["q"].depth == 1


def test_unroutable_too_large_and_not_acquired_transfers() -> None:
    c = client(Broker(BrokerConfig(max_message_size=10)))
    c.publish(b"nowhere", key="no-such-queue")  # dropped, as 0-9-1 drops it
    c.attach(b"t")
    refused = c.refused(
        spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0),
        session=b"t",
        header=[spec.DeliveryProperties(routing_key="q")],
        body=b"x" * 11,
    )
    assert refused.error_code == 506
    c.attach(b"u")
    refused = c.refused(
        spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=1), session=b"u"
    )
    assert refused.error_code == NOT_IMPLEMENTED


def test_browsing_then_acquiring() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    for n in range(3):
        c.publish(b"b%d" % n, key="q")
    c.ok(spec.MessageSubscribe(queue="q", destination="b", accept_mode=0, acquire_mode=1))
    c.ok(spec.MessageFlow(destination="b", unit=1, value=0xFFFFFFFF))
    c.ok(spec.MessageFlow(destination="b", unit=0, value=10))
    shown = c.deliveries()
    assert [g.body for g in shown] == [b"b0", b"b1", b"b2"]
    assert all(g.command.acquire_mode == 1 for g in shown)  # type: ignore[attr-defined]
    queue = c.broker.nodes["q"]
    assert len(queue.available) == 3  # a browser takes nothing
    first, second, third = (g.command_id for g in shown)
    # another subscriber takes b2 meanwhile: it can no longer be acquired
    c.attach(b"t")
    c.ok(spec.MessageSubscribe(queue="q", destination="t", accept_mode=1), session=b"t")
    c.ok(spec.MessageFlow(destination="t", unit=1, value=0xFFFFFFFF), session=b"t")
    got = c.result(spec.MessageAcquire(transfers=((first, second),)))
    assert got == spec.Acquired(transfers=((first, first), (second, second)))
    assert len(queue.available) == 1
    c.ok(spec.MessageAccept(transfers=((first, first),)))
    c.ok(spec.MessageRelease(transfers=((second, second),)))
    c.ok(spec.MessageAccept(transfers=((third, third),)))  # not acquired: it stays
    assert queue.depth == 2 and len(queue.available) == 2
    c.ok(spec.MessageFlow(destination="t", unit=0, value=5), session=b"t")
    taken = c.deliveries()
    assert sorted(g.body for g in taken) == [b"b1", b"b2"]
    assert c.result(spec.MessageAcquire(transfers=((third, third),))) == spec.Acquired(transfers=())


def test_a_command_in_the_input_that_detaches_its_session_is_dropped() -> None:
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.subscribe("q")
    c.engine.send_command(b"s", spec.MessageFlow(destination="d", unit=0, value=1))
    c.engine.detach(b"s", keep=False)
    c.pump()
    assert c.conn.is_open and c.conn.sessions == {}


def test_a_010_message_is_passed_through_to_010_subscribers() -> None:
    """docs/amqp010.rst, "Mapping to 1.0": what the mapping loses (a header's exact 0-10
    type, delivery-mode 1, priority 4, the sender's flags, content-length) reaches a 0-10
    subscriber as it was published; the broker sets exchange, routing-key and redelivered.
    Published again with other values, the next message is not given the first's header."""
    c = client()
    c.ok(spec.QueueDeclare(queue="q"))
    c.ok(spec.ExchangeBind(queue="q", exchange="amq.direct", binding_key="k"))
    headers = {"small": codec.Typed(codec.TypeCode.INT8, 7), "nested": {"a": [1, 2]}}
    given = {"delivery_mode": 1, "priority": 4, "redelivered": True, "discard_unroutable": True}
    for n in range(2):
        c.publish(
            b"body%d" % n,
            key="k",
            exchange="amq.direct",
            delivery=given,
            content_length=5,
            application_headers={**headers, "n": n},
        )
    c.subscribe("q", accept=0)
    first, second = c.deliveries()
    delivery, props = first.header
    assert isinstance(delivery, spec.DeliveryProperties)
    assert (delivery.delivery_mode, delivery.priority, delivery.discard_unroutable) == (1, 4, True)
    assert (delivery.exchange, delivery.routing_key, delivery.redelivered) == (
        "amq.direct",
        "k",
        False,
    )
    assert isinstance(props, spec.MessageProperties) and props.content_length == 5
    assert props.application_headers == {**headers, "n": 0}
    assert isinstance(props.application_headers["small"], codec.Typed)
    assert first.body == b"body0" and second.body == b"body1"
    assert second.header[1].application_headers["n"] == 1  # type: ignore[attr-defined]
    # released: redelivered, the rest as published
    c.ok(spec.MessageRelease(transfers=((first.command_id, first.command_id),)))
    c.ok(spec.MessageFlow(destination="d", unit=0, value=1))
    [again] = c.deliveries()
    assert again.body == b"body0" and again.header[0].redelivered  # type: ignore[attr-defined]
    assert again.header[0].delivery_mode == 1  # type: ignore[attr-defined]
