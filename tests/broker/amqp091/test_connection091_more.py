"""More of the broker's 0-9-1 connection (amqp_sansio.broker.BrokerConnection091) through its
byte interface, a 0-9-1 client engine on a simulated clock (tests/support/amqp091/broker_net.py):
prefetch per channel, no-ack consumers, channel.flow, the exchange/queue methods' refusals
and no-wait forms, transactions with acks, nacks and rejects, confirms with a nack between
acks, logins held back, refused and timed out, the broker closing a connection."""

from __future__ import annotations

from typing import Any

import pytest
from support.amqp091.broker_net import Client

from amqp_sansio.broker import Broker, BrokerConfig, User, Users
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import events as ev
from amqp_sansio.security.mechanisms.selection import ServerAuthenticator


def _methods(events: list[ev.Event]) -> list[Any]:
    return [e.method for e in events if isinstance(e, ev.MethodReceived)]


def _bodies(events: list[ev.Event]) -> list[bytes]:
    return [e.body for e in events if isinstance(e, ev.ContentReceived)]


def _channel_close(client: Client) -> int:
    (closed,) = client.of(ev.ChannelClosed)
    return int(closed.reply_code)


def _with_queue(name: str = "q", **config: Any) -> tuple[Broker, Client, int]:
    broker = Broker(BrokerConfig(**config))
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue=name))
    return broker, client, ch


def _publish(client: Client, ch: int, key: str, *bodies: bytes, **kw: Any) -> None:
    for body in bodies:
        client.engine.publish(ch, "", key, body, **kw)
    client.pump()


# -- consumers and prefetch --------------------------------------------------------------------


def test_reprs_name_the_consumer_and_the_channels() -> None:
    _, client, ch = _with_queue("work")
    client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c1"))
    (consumer,) = client.conn.channels[ch].consumers.values()
    assert repr(consumer) == "<0-9-1 consumer 'c1' of 'work'>"
    assert repr(client.conn) == "<BrokerConnection091 channels=1>"


def test_global_prefetch_bounds_the_channel_and_qos_again_lets_more_through() -> None:
    broker, client, ch = _with_queue("work")
    _publish(client, ch, "work", *[b"%d" % i for i in range(5)])
    client.call(ch, spec.BasicQos(prefetch_count=2, global_=True))
    events = client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c"))
    assert _bodies(events) == [b"0", b"1"]  # the channel's two, then nothing
    # raising the channel's prefetch with a consumer on it: the queue dispatches again
    events = client.call(ch, spec.BasicQos(prefetch_count=3, global_=True))
    assert _bodies(events) == [b"2"]
    assert isinstance(_methods(events)[0], spec.BasicQosOk)
    assert broker.nodes["work"].depth == 5  # all five unacked or ready


def test_a_no_ack_consumer_takes_messages_for_good() -> None:
    broker, client, ch = _with_queue("work")
    _publish(client, ch, "work", b"a", b"b", b"c")
    client.call(ch, spec.BasicQos(prefetch_count=1))  # no bound for a no-ack consumer
    events = client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c", no_ack=True))
    assert _bodies(events) == [b"a", b"b", b"c"]
    assert broker.nodes["work"].depth == 0 and not client.conn.channels[ch].unacked


def test_channel_flow_stops_and_resumes_deliveries_and_get() -> None:
    broker, client, ch = _with_queue("work")
    client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c"))
    events = client.call(ch, spec.ChannelFlow(active=False))
    assert [type(m) for m in _methods(events)] == [spec.ChannelFlowOk]
    client.events = []
    _publish(client, ch, "work", b"held")
    assert not _bodies(client.events)  # no delivery while the client's flow is off
    events = client.call(ch, spec.BasicGet(queue="work"))
    assert [type(m) for m in _methods(events)] == [spec.BasicGetEmpty]
    events = client.call(ch, spec.ChannelFlow(active=True))
    assert _bodies(events) == [b"held"]
    assert broker.nodes["work"].depth == 1


def test_the_flow_a_client_sets_first_on_a_channel_holds() -> None:
    """channel.flow as the first method on a channel: the broker once took the channel's
    flow for on, and raised out of receive_data delivering on it."""
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="work"))
    client.engine.publish(ch, "", "work", b"held")
    client.pump()
    fresh = client.channel()
    client.call(fresh, spec.ChannelFlow(active=False))  # the first method on the channel
    events = client.call(fresh, spec.BasicConsume(queue="work", consumer_tag="c"))
    assert not [e for e in events if isinstance(e, ev.ContentReceived)]
    events = client.call(fresh, spec.ChannelFlow(active=True))
    assert [e.body for e in events if isinstance(e, ev.ContentReceived)] == [b"held"]


def test_recover_without_requeue_with_only_consumer_deliveries() -> None:
    _, client, ch = _with_queue("work")
    _publish(client, ch, "work", b"a", b"b")
    client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c"))
    events = client.call(ch, spec.BasicRecover(requeue=False))
    again = [e.method for e in events if isinstance(e, ev.ContentReceived)]
    assert [(d.delivery_tag, d.redelivered, d.consumer_tag) for d in again] == [
        (3, True, "c"),
        (4, True, "c"),
    ]


@pytest.mark.parametrize("requeue", [True, False])
def test_recover_async_gives_the_deliveries_again_without_an_answer(requeue: bool) -> None:
    broker, client, ch = _with_queue("work")
    _publish(client, ch, "work", b"a")
    client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c"))
    events = client.call(ch, spec.BasicRecoverAsync(requeue=requeue))
    (again,) = [e.method for e in events if isinstance(e, ev.ContentReceived)]
    assert again.redelivered and again.delivery_tag == 2
    assert not _methods(events)  # recover-async has no -ok
    assert broker.nodes["work"].depth == 1


def test_consumer_refusals() -> None:
    broker, client, ch = _with_queue("work")
    client.call(ch, spec.BasicConsume(queue="work", consumer_tag="solo", exclusive=True))
    other = client.channel()
    client.call(other, spec.BasicConsume(queue="work", consumer_tag="second"))
    assert _channel_close(client) == spec.ReplyCode.ACCESS_REFUSED  # in exclusive use
    third = client.channel()
    client.call(third, spec.QueueDeclare(queue="shared"))
    client.call(third, spec.BasicConsume(queue="shared", consumer_tag="one"))
    client.call(third, spec.BasicConsume(queue="shared", consumer_tag="two", exclusive=True))
    assert _channel_close(client) == spec.ReplyCode.ACCESS_REFUSED  # it has consumers
    # a consumer tag used twice on a channel: 530 NOT_ALLOWED, a connection error
    ch = client.channel()
    client.call(ch, spec.BasicConsume(queue="shared", consumer_tag="dup"))
    client.call(ch, spec.BasicConsume(queue="shared", consumer_tag="dup"))
    (closed,) = client.of(ev.ConnectionClosed)
    assert closed.reply_code == spec.ReplyCode.NOT_ALLOWED and client.conn.ended
    assert not broker.nodes["shared"].consumers  # all gone with the connection


def test_cancel_of_an_unknown_tag_is_answered() -> None:
    _, client, ch = _with_queue("work")
    events = client.call(ch, spec.BasicCancel(consumer_tag="never"))
    assert _methods(events) == [spec.BasicCancelOk(consumer_tag="never")]


def test_acks_of_unknown_tags_close_the_channel() -> None:
    _, client, ch = _with_queue("work")
    client.call(ch, spec.BasicAck(delivery_tag=7, multiple=True))
    assert _channel_close(client) == spec.ReplyCode.PRECONDITION_FAILED
    ch = client.channel()
    client.call(ch, spec.BasicReject(delivery_tag=1, requeue=False))
    assert _channel_close(client) == spec.ReplyCode.PRECONDITION_FAILED


# -- the exchange and queue classes ------------------------------------------------------------


def test_exchange_delete_bind_unbind_through_the_protocol() -> None:
    broker, client, ch = _with_queue("dest")
    client.call(ch, spec.ExchangeDeclare(exchange="src", type="fanout"))
    client.call(ch, spec.ExchangeDeclare(exchange="mid", type="fanout"))
    assert isinstance(
        _methods(client.call(ch, spec.ExchangeBind(destination="mid", source="src")))[0],
        spec.ExchangeBindOk,
    )
    client.call(ch, spec.QueueBind(queue="", exchange="mid"))  # "": the last declared
    client.engine.publish(ch, "src", "", b"one")
    client.pump()
    assert broker.nodes["dest"].depth == 1
    events = client.call(ch, spec.QueueUnbind(queue="dest", exchange="mid"))
    assert [type(m) for m in _methods(events)] == [spec.QueueUnbindOk]
    events = client.call(ch, spec.ExchangeUnbind(destination="mid", source="src"))
    assert [type(m) for m in _methods(events)] == [spec.ExchangeUnbindOk]
    events = client.call(ch, spec.ExchangeDelete(exchange="src"))
    assert [type(m) for m in _methods(events)] == [spec.ExchangeDeleteOk]
    assert "src" not in broker.vhosts["/"].exchanges
    client.call(ch, spec.QueueBind(queue="dest", exchange="mid"))
    client.engine.publish(ch, "mid", "", b"two")
    client.pump()
    assert broker.nodes["dest"].depth == 2


def test_no_wait_methods_are_done_unanswered() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    events = client.call(ch, spec.QueueDeclare(queue="quiet", no_wait=True))
    events += client.call(ch, spec.ExchangeDeclare(exchange="x", type="direct", no_wait=True))
    events += client.call(ch, spec.QueueBind(queue="quiet", exchange="x", no_wait=True))
    assert not _methods(events)
    assert "quiet" in broker.nodes and "x" in broker.vhosts["/"].exchanges
    client.engine.publish(ch, "x", "", b"routed")
    client.pump()
    assert broker.nodes["quiet"].depth == 1


def test_an_empty_queue_name_without_a_declared_queue_is_not_found() -> None:
    client = Client(Broker())
    ch = client.channel()
    client.call(ch, spec.QueuePurge(queue=""))
    assert _channel_close(client) == spec.ReplyCode.NOT_FOUND


# -- publishing ----------------------------------------------------------------------------------


def test_immediate_is_not_implemented() -> None:
    _, client, ch = _with_queue("work")
    client.events = []
    client.engine.send_content(
        ch, spec.BasicPublish(routing_key="work", immediate=True), None, b"now"
    )
    client.pump()
    (closed,) = client.of(ev.ConnectionClosed)
    assert closed.reply_code == spec.ReplyCode.NOT_IMPLEMENTED


def test_a_user_id_other_than_the_login_is_refused() -> None:
    broker = Broker()
    client = Client(broker, username="alice", password="x")
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="work"))
    client.events = []
    _publish(client, ch, "work", b"mine", properties=spec.BasicProperties(user_id="alice"))
    assert not client.of(ev.ChannelClosed) and broker.nodes["work"].depth == 1
    _publish(client, ch, "work", b"forged", properties=spec.BasicProperties(user_id="bob"))
    assert _channel_close(client) == spec.ReplyCode.PRECONDITION_FAILED
    assert broker.nodes["work"].depth == 1


def test_confirms_with_a_nack_between_acks() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="open"))
    arguments = {"x-max-length": 1, "x-overflow": "reject-publish"}
    client.call(ch, spec.QueueDeclare(queue="small", arguments=arguments))
    client.call(ch, spec.QueueDeclare(queue="rest"))
    client.call(ch, spec.ConfirmSelect())
    client.events = []
    client.engine.publish(ch, "", "small", b"1")  # ack
    client.engine.publish(ch, "", "open", b"2")  # ack
    client.engine.publish(ch, "", "small", b"3")  # nack: small is full
    client.engine.publish(ch, "", "open", b"4")  # ack
    client.pump()
    confirmed = [(c.delivery_tag, c.ack) for c in client.of(ev.Confirmed)]
    assert confirmed == [(2, True), (3, False), (4, True)]  # 2 with multiple covers 1
    assert broker.nodes["small"].depth == 1 and broker.nodes["open"].depth == 2


def test_a_mandatory_publish_on_a_channel_closed_in_the_same_input_is_not_returned() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="kept"))
    client.events = []
    client.engine.publish(ch, "", "nowhere", b"lost", mandatory=True)
    client.engine.publish(ch, "", "kept", b"kept")
    client.engine.close_channel(ch)
    client.pump()
    assert not [e for e in client.events if isinstance(e, ev.ContentReceived)]  # no return
    (closed,) = client.of(ev.ChannelClosed)
    assert closed.reply_code == 200 and broker.nodes["kept"].depth == 1


# -- transactions --------------------------------------------------------------------------------


def test_commit_and_rollback_need_a_transaction() -> None:
    _, client, ch = _with_queue("work")
    client.call(ch, spec.TxCommit())
    assert _channel_close(client) == spec.ReplyCode.PRECONDITION_FAILED
    ch = client.channel()
    client.call(ch, spec.TxRollback())
    assert _channel_close(client) == spec.ReplyCode.PRECONDITION_FAILED


def test_a_transaction_holds_acks_nacks_and_rejects_until_commit() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.ExchangeDeclare(exchange="dlx", type="fanout"))
    client.call(ch, spec.QueueDeclare(queue="dead"))
    client.call(ch, spec.QueueBind(queue="dead", exchange="dlx"))
    client.call(ch, spec.QueueDeclare(queue="work", arguments={"x-dead-letter-exchange": "dlx"}))
    _publish(client, ch, "work", b"a", b"b", b"c", b"d")
    events = client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c"))
    assert [e.method.delivery_tag for e in events if isinstance(e, ev.ContentReceived)] == [
        1,
        2,
        3,
        4,
    ]
    client.call(ch, spec.TxSelect())
    client.call(ch, spec.BasicAck(delivery_tag=1))
    client.call(ch, spec.BasicNack(delivery_tag=2, requeue=False))
    client.call(ch, spec.BasicReject(delivery_tag=3, requeue=False))
    client.call(ch, spec.BasicNack(delivery_tag=4, multiple=True, requeue=True))
    work, dead = broker.nodes["work"], broker.nodes["dead"]
    assert work.depth == 4 and dead.depth == 0  # nothing done before the commit
    events = client.call(ch, spec.TxCommit())
    assert [type(m) for m in _methods(events)] == [spec.TxCommitOk]
    # 1 acked, 2 and 3 dead-lettered, 4 requeued and delivered again
    assert [
        (e.body, e.method.redelivered) for e in events if isinstance(e, ev.ContentReceived)
    ] == [(b"d", True)]
    assert work.depth == 1 and dead.depth == 2
    # a rollback forgets what waited
    client.call(ch, spec.BasicAck(delivery_tag=5))
    events = client.call(ch, spec.TxRollback())
    assert [type(m) for m in _methods(events)] == [spec.TxRollbackOk]
    client.call(ch, spec.TxCommit())
    assert work.depth == 1


# -- logins, opens, the connection's end ---------------------------------------------------------


def test_an_open_broker_without_a_sasl_layer_takes_any_login() -> None:
    """``BrokerConfig(sasl=False)``: no SASL layer for 1.0, no users: any client comes in
    (docs/broker.rst), a 0-9-1 login too."""
    client = Client(Broker(BrokerConfig(sasl=False)), username="anyone", password="x")
    assert client.of(ev.ConnectionOpened) and client.conn.identity == "anyone"


def test_a_broker_whose_logins_are_sasl_refuses_0_9_1_logins() -> None:
    config = BrokerConfig(sasl=ServerAuthenticator(None, allow_anonymous=True))
    client = Client(Broker(config), username="anyone", password="x")
    (closed,) = client.of(ev.ConnectionClosed)
    assert closed.reply_code == spec.ReplyCode.ACCESS_REFUSED
    assert client.conn.refused is not None and "SASL" in client.conn.refused


def test_connections_per_user_are_limited_at_open() -> None:
    broker = Broker(BrokerConfig(max_connections_per_user=1))
    first = Client(broker, username="alice", password="x")
    assert first.of(ev.ConnectionOpened)
    second = Client(broker, username="alice", password="x")
    (closed,) = second.of(ev.ConnectionClosed)
    assert closed.reply_code == spec.ReplyCode.NOT_ALLOWED
    assert second.conn.refused == "at most 1 connections per user"
    first.engine.close()
    first.pump()
    assert Client(broker, username="alice", password="x").of(ev.ConnectionOpened)


def test_failed_logins_past_the_limit_are_held_back() -> None:
    users = Users([User(name="alice", password="secret")])
    config = BrokerConfig(
        users=users, allow_insecure_auth=True, login_delay_after=0, login_delay=2.0
    )
    broker = Broker(config)
    client = Client(broker, username="alice", password="wrong")
    conn = client.conn
    assert not client.of(ev.ConnectionClosed)  # the refusal is held back
    assert conn.data_to_send() == b"" and not conn.ended
    assert conn.next_deadline() == client.now + 2.0
    conn.handle_timer(client.now + 1.0)  # too early: still held
    assert conn.next_deadline() == client.now + 2.0
    client.now += 2.0
    conn.handle_timer(client.now)
    client.pump()
    (closed,) = client.of(ev.ConnectionClosed)
    assert closed.reply_code == spec.ReplyCode.ACCESS_REFUSED
    assert conn.ended


def test_no_open_within_the_handshake_time_out_cuts_the_connection() -> None:
    broker = Broker(BrokerConfig(handshake_timeout=5.0))
    conn = broker.accept_091(10.0, wall=1e9)
    assert conn.next_deadline() == 15.0 and not conn.ended
    conn.handle_timer(15.0)
    assert conn.ended and conn.cut
    assert conn.refused == "no open within the handshake time-out (5.0 s)"
    conn.connection_lost(16.0)
    assert conn not in broker.connections


def test_the_broker_closing_a_connection_twice_sends_one_close() -> None:
    client = Client(Broker())
    client.conn.close()
    first = client.conn.data_to_send()
    client.conn.close()  # closing already: nothing more
    assert client.conn.data_to_send() == b""
    client.events += client.engine.receive_data(first, client.now)
    client.pump()
    (closed,) = client.of(ev.ConnectionClosed)
    assert closed.reply_code == spec.ReplyCode.CONNECTION_FORCED and closed.by_peer
    assert client.conn.ended


def test_bytes_that_are_not_amqp_end_the_connection() -> None:
    broker = Broker()
    conn = broker.accept_091(10.0, wall=1e9)
    conn.receive_data(b"GET / HTTP/1.1\r\n\r\n", 10.0)
    assert conn.ended and conn.lost
    assert conn not in broker.connections


def test_a_second_alarm_is_told_once() -> None:
    client = Client(Broker())
    client.events = []
    client.conn.alarm_changed(True)
    client.conn.alarm_changed(True)
    client.pump()
    assert len(client.of(ev.Blocked)) == 1
    client.conn.alarm_changed(False)
    client.pump()
    assert len(client.of(ev.Unblocked)) == 1


@pytest.mark.parametrize("method", [spec.BasicQos(prefetch_count=5), spec.QueuePurge(queue="")])
def test_a_method_pipelined_before_the_clients_channel_close(method: spec.Method) -> None:
    """The client closes the channel in the same write as a method: the broker does what
    it can (the qos, or nothing for a refused purge) and says nothing more on the closing
    channel; the close is answered as usual (200, no refusal's code)."""
    client = Client(Broker())
    ch = client.channel()
    client.events = []
    client.engine.send_method(ch, method)
    client.engine.close_channel(ch)
    client.pump()
    assert not _methods(client.events)  # no qos-ok, no channel.close of a 404
    (closed,) = client.of(ev.ChannelClosed)
    assert closed.reply_code == 200 and not client.conn.ended
    assert ch not in client.conn.channels


def test_the_broker_closing_a_closed_connection_does_nothing() -> None:
    client = Client(Broker())
    client.engine.close()
    client.pump()
    assert client.conn.ended
    client.conn.close()
    assert client.conn.data_to_send() == b""
    assert client.conn.record.ending == "closed by the client"


def test_a_clients_ok_the_broker_does_not_wait_for_is_passed_over() -> None:
    """A ``-ok`` of a method the broker never sends (the client's mistake) is passed over,
    as the broker's code says: no answer, the channel goes on."""
    _, client, ch = _with_queue("work")
    for method in (spec.BasicQosOk(), spec.ExchangeDeclareOk(), spec.BasicRecoverOk()):
        assert client.call(ch, method) == []
    events = client.call(ch, spec.QueueDeclare(queue="work", passive=True))
    assert [type(m) for m in _methods(events)] == [spec.QueueDeclareOk]
    assert not client.conn.ended


def test_update_secret_is_answered() -> None:
    client = Client(Broker())
    events = client.call(0, spec.ConnectionUpdateSecret(new_secret=b"new", reason="refresh"))
    assert [type(m) for m in _methods(events)] == [spec.ConnectionUpdateSecretOk]


def _alice(password: str = "old") -> tuple[Users, Client]:
    users = Users([User(name="alice", password=password), User(name="bob", password="new")])
    broker = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    client = Client(broker, username="alice", password=password)
    assert client.of(ev.ConnectionOpened)
    return users, client


def test_update_secret_is_checked_as_the_logins_user() -> None:
    """The new secret is checked against the broker's users as they are now (alice's
    password changed since her login): ok, and the connection goes on."""
    users, client = _alice()
    users.users["alice"] = User(name="alice", password="new")
    events = client.call(0, spec.ConnectionUpdateSecret(new_secret=b"new", reason="rotated"))
    assert [type(m) for m in _methods(events)] == [spec.ConnectionUpdateSecretOk]
    ch = client.channel()
    events = client.call(ch, spec.QueueDeclare(queue="q"))
    assert [type(m) for m in _methods(events)] == [spec.QueueDeclareOk]
    assert not client.conn.ended


@pytest.mark.parametrize(
    "secret",
    [b"wrong", b"new", b"\xff"],  # not alice's; bob's (another user's); not UTF-8
)
def test_a_refused_secret_closes_the_connection_with_530(secret: bytes) -> None:
    """As RabbitMQ's ``rabbit_reader``: 530 NOT_ALLOWED, "New secret was refused by one of
    the backends", naming connection.update-secret (10, 70)."""
    _, client = _alice()
    events = client.call(0, spec.ConnectionUpdateSecret(new_secret=secret, reason="r"))
    assert not _methods(events)
    (closed,) = client.of(ev.ConnectionClosed)
    assert (closed.reply_code, closed.class_id, closed.method_id) == (530, 10, 70)
    assert closed.reply_text == "NOT_ALLOWED - New secret was refused by one of the backends"
    assert client.conn.ended
    assert client.conn.record.ending == "update-secret refused"


def test_content_other_than_a_publish_is_passed_over() -> None:
    """A client sending a content method only a server sends (``basic.return``): not
    counted, not routed, no answer; the connection goes on."""
    broker, client, ch = _with_queue("w")
    client.events = []
    method = spec.BasicReturn(reply_code=312, reply_text="x", exchange="", routing_key="w")
    client.engine.send_content(ch, method, None, b"b")
    client.pump()
    assert client.events == [] and not client.conn.ended
    assert broker.nodes["w"].depth == 0 and client.conn.record.messages_in == 0
    _publish(client, ch, "w", b"real")
    assert broker.nodes["w"].depth == 1 and client.conn.record.messages_in == 1


def _refused_then(client: Client, ch: int, *, same_input: bool) -> None:
    """``basic.consume`` of a missing queue (the broker closes the channel, 404), then,
    before the client has seen that close, a ``queue.declare`` and a publish on the same
    channel: in the same input as the refused method, or in the next one."""
    engine = client.engine
    engine.send_method(ch, spec.BasicConsume(queue="missing", consumer_tag="c"))
    if not same_input:
        client.conn.receive_data(engine.data_to_send(), client.now, wall=1e9)
    engine.send_method(ch, spec.QueueDeclare(queue="made-after"))
    engine.publish(ch, "", "w", b"after the close")
    client.pump()


@pytest.mark.parametrize("same_input", [True, False])
def test_what_comes_on_a_channel_the_broker_is_closing_is_ignored(same_input: bool) -> None:
    """0-9-1 spec, ``channel.close``: after sending it, the broker discards all but
    ``close`` and ``close-ok`` on the channel (the 0-9-1 engine drops them): no queue
    declared, nothing routed or counted, no answer; the connection goes on."""
    broker, client, ch = _with_queue("w")
    client.events = []
    _refused_then(client, ch, same_input=same_input)
    assert _channel_close(client) == spec.ReplyCode.NOT_FOUND
    assert not _methods(client.events)  # no declare-ok
    assert "made-after" not in broker.nodes
    assert broker.nodes["w"].depth == 0 and client.conn.record.messages_in == 0
    assert ch not in client.conn.channels and not client.conn.ended
    again = client.channel()  # the connection is usable, the channel number too
    _publish(client, again, "w", b"real")
    assert broker.nodes["w"].depth == 1
