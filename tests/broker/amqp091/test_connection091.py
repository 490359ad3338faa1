"""The broker's 0-9-1 connection (amqp_sansio.broker.BrokerConnection091) driven through
its byte interface by the 0-9-1 engine's client role, on a simulated clock: logins with the
broker's users, virtual hosts, access rules, refusals as channel or connection closes,
consumer cancel notification, delivery tags, recover, a lost connection's deliveries
back to their queue."""

from __future__ import annotations

import pytest
from support.amqp091.broker_net import Client

from amqp_sansio.broker import Broker, BrokerConfig, User, Users
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import events as ev


def _opened(client: Client) -> bool:
    return any(isinstance(e, ev.ConnectionOpened) for e in client.events)


def _closed(client: Client) -> ev.ConnectionClosed:
    (closed,) = client.of(ev.ConnectionClosed)
    return closed  # type: ignore[no-any-return]


def test_an_open_broker_takes_any_login() -> None:
    client = Client(Broker(), username="anyone", password="anything")
    assert _opened(client) and client.conn.identity == "anyone"


def test_logins_with_users_and_virtual_hosts() -> None:
    users = Users([User(name="alice", password="secret", send=("q*",), receive=("q*",))])
    config = BrokerConfig(users=users, allow_insecure_auth=True, virtual_hosts={"prod"})
    broker = Broker(config)
    good = Client(broker, username="alice", password="secret", virtual_host="prod")
    assert _opened(good) and good.conn.vhost is broker.vhosts["prod"]
    bad = Client(broker, username="alice", password="wrong")
    assert _closed(bad).reply_code == spec.ReplyCode.ACCESS_REFUSED
    assert bad.conn.refused is not None and "authentication failed" in bad.conn.refused
    amqplain = Client(broker, username="alice", password="secret", mechanism="AMQPLAIN")
    assert _opened(amqplain)
    nowhere = Client(broker, username="alice", password="secret", virtual_host="test")
    assert _closed(nowhere).reply_code == spec.ReplyCode.NOT_ALLOWED
    # PLAIN in the clear is refused unless the broker allows it (loopback)
    strict = Broker(BrokerConfig(users=users))
    assert _closed(Client(strict, username="alice", password="secret")).reply_code == 403


def test_access_rules_apply_to_publish_and_consume() -> None:
    users = Users([User(name="alice", password="secret", send=("q1",), receive=("q1",))])
    broker = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    client = Client(broker, username="alice", password="secret")
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="q1"))
    client.call(ch, spec.QueueDeclare(queue="q2"))
    client.events = []
    client.engine.publish(ch, "", "q2", b"no")
    client.pump()
    (closed,) = client.of(ev.ChannelClosed)
    assert closed.reply_code == spec.ReplyCode.ACCESS_REFUSED
    ch = client.channel()
    client.engine.publish(ch, "", "q1", b"yes")
    client.pump()
    events = client.call(ch, spec.BasicGet(queue="q1", no_ack=True))
    (got,) = [e for e in events if isinstance(e, ev.ContentReceived)]
    assert got.body == b"yes"
    events = client.call(ch, spec.BasicConsume(queue="q2"))
    assert [e.reply_code for e in events if isinstance(e, ev.ChannelClosed)] == [403]


def test_hard_errors_close_the_connection() -> None:
    client = Client(Broker())
    ch = client.channel()
    client.call(ch, spec.ExchangeDeclare(exchange="x", type="x-unknown"))
    assert _closed(client).reply_code == spec.ReplyCode.COMMAND_INVALID
    assert client.conn.ended


@pytest.mark.parametrize("soft", [False, True])
def test_methods_pipelined_after_a_refusal_are_dropped(soft: bool) -> None:
    """A refusal and the methods a client pipelined behind it, all in one read: the broker
    answers none of those behind it (0-9-1 spec, channel.close and connection.close: all
    but close and close-ok are discarded); it once raised out of receive_data answering a
    queue.declare on a connection it was closing."""
    client = Client(Broker())
    ch = client.channel()
    client.events = []
    refused = (
        spec.QueueDeclare(queue="missing", passive=True)  # soft: 404 closes the channel
        if soft
        else spec.ExchangeDeclare(exchange="x", type="x-unknown")  # hard: 503
    )
    for method in (refused, spec.QueueDeclare(queue="q2"), spec.ExchangeDeclare(exchange="e")):
        client.engine.send_method(ch, method)
    client.pump()
    assert not client.of(ev.MethodReceived)  # no declare-ok of what came after
    if soft:
        (closed,) = client.of(ev.ChannelClosed)
        assert closed.reply_code == spec.ReplyCode.NOT_FOUND
        # The connection is still usable, and nothing behind the refusal was done.
        again = client.channel()
        client.call(again, spec.QueueDeclare(queue="q2", passive=True))
        assert client.of(ev.ChannelClosed)[0].reply_code == spec.ReplyCode.NOT_FOUND
    else:
        assert _closed(client).reply_code == spec.ReplyCode.COMMAND_INVALID
        assert client.conn.ended


def test_delivery_tags_recover_and_a_lost_connection() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="work"))
    for i in range(3):
        client.engine.publish(ch, "", "work", b"%d" % i)
    client.pump()
    events = client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c"))
    deliveries = [e for e in events if isinstance(e, ev.ContentReceived)]
    assert [d.method.delivery_tag for d in deliveries] == [1, 2, 3]
    assert not any(d.method.redelivered for d in deliveries)
    events = client.call(ch, spec.BasicRecover(requeue=True))
    again = [e for e in events if isinstance(e, ev.ContentReceived)]
    assert [d.method.delivery_tag for d in again] == [4, 5, 6]  # tags go on counting
    assert [d.body for d in again] == [b"0", b"1", b"2"]
    assert all(d.method.redelivered for d in again)
    client.call(ch, spec.BasicAck(delivery_tag=4))
    queue = broker.nodes["work"]
    assert queue.depth == 2
    client.conn.connection_lost(client.now, wall=1e9)  # the unacked two go back
    assert len(queue.available) == 2 and not queue.consumers  # type: ignore[attr-defined]


@pytest.mark.parametrize("notify", [True, False])
def test_consumer_cancel_notification(notify: bool) -> None:
    broker = Broker()
    properties = {"capabilities": {"consumer_cancel_notify": notify}}
    client = Client(broker, client_properties=properties)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="gone"))
    client.call(ch, spec.BasicConsume(queue="gone", consumer_tag="c"))
    client.events = []
    broker.vhosts["/"].delete_queue("gone")
    client.pump()
    cancels = [e for e in client.events if isinstance(e, ev.MethodReceived)]
    assert [type(e.method) for e in cancels] == ([spec.BasicCancel] if notify else [])
    assert not client.conn.channels[ch].consumers


def test_exclusive_queues_go_with_their_connection() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    events = client.call(ch, spec.QueueDeclare(queue="", exclusive=True))
    (ok,) = [e.method for e in events if isinstance(e, ev.MethodReceived)]
    assert ok.queue in broker.nodes
    client.engine.close()
    client.pump()
    assert client.conn.ended and ok.queue not in broker.nodes


def test_answers_first_sends_a_confirm_before_the_deliveries_of_its_publish() -> None:
    # Broker.answers_first (set by the asyncio server): an input's answers are ready when
    # receive_data returns, the deliveries it makes come with dispatch_more.
    broker = Broker()
    broker.answers_first = True
    consumer = Client(broker)
    cch = consumer.channel()
    consumer.call(cch, spec.QueueDeclare(queue="work"))
    consumer.call(cch, spec.BasicConsume(queue="work", consumer_tag="c"))
    publisher = Client(broker)
    pch = publisher.channel()
    publisher.call(pch, spec.ConfirmSelect())
    for i in range(3):
        publisher.engine.publish(pch, "", "work", b"%d" % i)
    publisher.conn.receive_data(publisher.engine.data_to_send(), publisher.now, wall=1e9)
    assert broker.dispatching
    got = publisher.engine.receive_data(publisher.conn.data_to_send(), publisher.now)
    (confirmed,) = [e for e in got if isinstance(e, ev.Confirmed)]
    assert (confirmed.ack, confirmed.delivery_tag, confirmed.multiple) == (True, 3, True)
    assert consumer.conn.data_to_send() == b""  # nothing delivered yet
    broker.dispatch_more()
    assert not broker.dispatching
    got = consumer.engine.receive_data(consumer.conn.data_to_send(), consumer.now)
    delivered = [e for e in got if isinstance(e, ev.ContentReceived)]
    assert [d.body for d in delivered] == [b"0", b"1", b"2"]
    assert [d.method.delivery_tag for d in delivered] == [1, 2, 3]


@pytest.mark.parametrize("closing", ["channel", "connection"])
def test_publishes_in_the_same_input_as_a_close_are_routed_first(closing: str) -> None:
    """A client that publishes on a channel in confirm mode and closes the channel (or the
    connection) sends it all in one write (a Ctrl-C while ``amqp-sansio pipeline
    --protocol 0-9-1`` publishes): the engine has the channel gone by the time the broker
    handles the publishes, which are still routed, in the order they came (as RabbitMQ
    does), and the close is answered as usual."""
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="orders"))
    client.call(ch, spec.ConfirmSelect())
    client.events = []
    for i in range(3):
        client.engine.publish(ch, "", "orders", b"%d" % i, mandatory=True)
    if closing == "channel":
        client.engine.close_channel(ch)
    else:
        client.engine.close()
    client.pump()
    assert broker.nodes["orders"].depth == 3
    if closing == "channel":
        (closed,) = client.of(ev.ChannelClosed)
        assert closed.channel == ch and closed.reply_code == 200
        assert not client.conn.ended
    else:
        assert _closed(client).reply_code == 200
        assert client.conn.ended and client.conn.refused is None


def test_recover_without_requeue_redelivers_to_the_same_consumer() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="rec"))
    for body in (b"a", b"b", b"c"):
        client.engine.publish(ch, "", "rec", body)
    client.pump()
    events = client.call(ch, spec.BasicGet(queue="rec"))  # "a", by basic.get: tag 1
    assert [e.body for e in events if isinstance(e, ev.ContentReceived)] == [b"a"]
    events = client.call(ch, spec.BasicConsume(queue="rec", consumer_tag="mine"))
    first = [e.method for e in events if isinstance(e, ev.ContentReceived)]
    assert [(d.delivery_tag, d.redelivered) for d in first] == [(2, False), (3, False)]
    client.call(ch, spec.BasicConsume(queue="rec", consumer_tag="other"))  # gets nothing
    events = client.call(ch, spec.BasicRecover(requeue=False))
    again = {e.body: e.method for e in events if isinstance(e, ev.ContentReceived)}
    # b and c again to "mine" (requeued, one of them would go to "other"), redelivered,
    # new tags; a (no consumer) back to its queue, for either
    assert sorted(again) == [b"a", b"b", b"c"]
    assert again[b"b"].consumer_tag == again[b"c"].consumer_tag == "mine"
    assert all(method.redelivered for method in again.values())
    assert sorted(method.delivery_tag for method in again.values()) == [4, 5, 6]
    assert any(
        isinstance(e, ev.MethodReceived) and isinstance(e.method, spec.BasicRecoverOk)
        for e in events
    )
    client.call(ch, spec.BasicAck(delivery_tag=0, multiple=True))
    assert broker.nodes["rec"].depth == 0


def test_a_message_a_1_0_consumer_released_comes_redelivered() -> None:
    from support.broker_net import Net

    import amqp_sansio as a

    net = Net()
    client = Client(net.broker)
    ch = client.channel()
    client.call(ch, spec.QueueDeclare(queue="rel"))
    client.engine.publish(ch, "", "rel", b"once")
    client.pump()
    one = net.connect()
    receiver = one.receiver("rel", credit=1)
    (got,) = one.received(receiver)
    receiver.settle(got.delivery, a.Released())  # not counted as a delivery attempt
    net.pump()
    events = client.call(ch, spec.BasicGet(queue="rel", no_ack=True))
    (back,) = [e for e in events if isinstance(e, ev.ContentReceived)]
    assert back.body == b"once" and back.method.redelivered


def test_a_ttl_of_0_is_delivered_to_a_ready_consumer_else_dead() -> None:
    broker = Broker()
    client = Client(broker)
    ch = client.channel()
    client.call(ch, spec.ExchangeDeclare(exchange="dlx", type="fanout"))
    client.call(ch, spec.QueueDeclare(queue="dead"))
    client.call(ch, spec.QueueBind(queue="dead", exchange="dlx"))
    client.call(ch, spec.QueueDeclare(queue="now", arguments={"x-dead-letter-exchange": "dlx"}))
    client.engine.publish(ch, "", "now", b"nobody", spec.BasicProperties(expiration="0"))
    client.pump()  # no consumer: expired at once, dead-lettered
    assert broker.nodes["now"].depth == 0 and broker.nodes["dead"].depth == 1
    client.call(ch, spec.BasicConsume(queue="now", consumer_tag="ready"))
    client.events = []
    client.engine.publish(ch, "", "now", b"taken", spec.BasicProperties(expiration="0"))
    client.pump()
    (got,) = client.of(ev.ContentReceived)
    assert got.body == b"taken" and broker.nodes["dead"].depth == 1
    # given back, it expires then
    client.call(ch, spec.BasicReject(delivery_tag=got.method.delivery_tag, requeue=True))
    assert broker.nodes["now"].depth == 0 and broker.nodes["dead"].depth == 2
