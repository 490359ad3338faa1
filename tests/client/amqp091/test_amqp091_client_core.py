"""The I/O-free AMQP 0-9-1 client core (amqp_sansio/client/amqp091) against an engine in the
server role, through real bytes, on a clock the test moves: replies matched in order,
channel errors, confirms (multiple, nacks, returns before the ack), deliveries and their
settlement, consumer cancel notifications, ``connection.blocked``, the errors that end a
connection (a refused login, the server's close, missed heartbeats), the credentials rule,
and reconnection (what a channel makes again on the next connection, and in which order)."""

from __future__ import annotations

from typing import Any

import pytest

from amqp_sansio.client.amqp091 import (
    AuthenticationError,
    ChannelClosedError,
    ChannelCore,
    Confirmation,
    ConnectionClosedError,
    ConsumerCore,
    Core,
    Delivery,
    TransactionError,
    client_core,
)
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.client.url import InsecureCredentialsError
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.definitions.amqp091.methods import METHODS_BY_NAME, Method
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev
from amqp_sansio.security.mechanisms.errors import SASLConfigurationError

URL = "amqp://guest:guest@127.0.0.1:5672/%2f"


class Server:
    """An engine in the server role that answers each synchronous method with its first
    response (unless :attr:`hold`), records what it receives, and acks publishes in
    confirm mode when told (:meth:`ack`)."""

    def __init__(
        self,
        *,
        refuse_login: bool = False,
        heartbeat: int = 60,
        mechanisms: tuple[str, ...] = ("PLAIN", "AMQPLAIN"),
    ) -> None:
        self.engine = engine.Connection(
            engine.Role.SERVER, heartbeat=heartbeat, mechanisms=mechanisms
        )
        self.engine.start(0.0)
        self.refuse_login = refuse_login
        self.methods: list[tuple[int, Method]] = []
        self.published: list[tuple[int, spec.BasicPublish, bytes]] = []
        self.hold = False
        self.held: list[tuple[int, Method]] = []
        self.confirming: dict[int, int] = {}
        self.tags = 0
        self.engine_events: list[ev.Event] = []
        self.got: list[ev.Event] = []  # what the engine gave, not handled yet

    def handle(self) -> None:
        while self.got:
            got, self.got = self.got, []
            self._handle(got)

    def _handle(self, got: list[ev.Event]) -> None:
        for event in got:
            if self.engine.discarded(event):
                continue
            self.engine_events.append(event)
            if isinstance(event, ev.LoginRequested):
                if self.refuse_login:
                    self.engine.refuse_login("ACCESS_REFUSED - login refused")
                else:
                    self.engine.accept_login(event.username or "")
            elif isinstance(event, ev.OpenRequested):
                self.engine.accept_open()
            elif isinstance(event, ev.MethodReceived):
                self.methods.append((event.channel, event.method))
                if event.method.SYNCHRONOUS and event.method.RESPONSES:
                    if self.hold:
                        self.held.append((event.channel, event.method))
                    else:
                        self.answer(event.channel, event.method)
            elif isinstance(event, ev.ContentReceived):
                assert isinstance(event.method, spec.BasicPublish)
                self.published.append((event.channel, event.method, event.body))
                if event.channel in self.confirming:
                    self.confirming[event.channel] += 1

    def answer(self, channel: int, method: Method) -> None:
        kind = METHODS_BY_NAME[method.RESPONSES[0]]
        fields: dict[str, Any] = {}
        if isinstance(method, spec.QueueDeclare):
            self.tags += 1
            fields = {
                "queue": method.queue or f"amq.gen-{self.tags}",
                "message_count": 0,
                "consumer_count": 0,
            }
        elif isinstance(method, spec.QueuePurge | spec.QueueDelete):
            fields = {"message_count": 7}
        elif isinstance(method, spec.BasicConsume):
            self.tags += 1
            fields = {"consumer_tag": method.consumer_tag or f"ctag-{self.tags}"}
        elif isinstance(method, spec.BasicCancel):
            fields = {"consumer_tag": method.consumer_tag}
        elif isinstance(method, spec.ConfirmSelect):
            self.confirming[channel] = 0
        self.engine.send_method(channel, kind(**fields))

    def release(self) -> None:
        """Answer what was held, in order."""
        held, self.held, self.hold = self.held, [], False
        for channel, method in held:
            self.answer(channel, method)

    def deliver(self, channel: int, tag: str, delivery_tag: int, body: bytes) -> None:
        method = spec.BasicDeliver(
            consumer_tag=tag, delivery_tag=delivery_tag, exchange="", routing_key="q"
        )
        self.engine.send_content(channel, method, spec.BasicProperties(), body)

    def ack(self, channel: int, tag: int, *, multiple: bool = False, ack: bool = True) -> None:
        kind = spec.BasicAck if ack else spec.BasicNack
        self.engine.send_method(channel, kind(delivery_tag=tag, multiple=multiple))

    def sent(self, kind: type[Method]) -> list[Method]:
        return [m for _, m in self.methods if isinstance(m, kind)]


class Wire:
    """The core and a server, pumped through real bytes on the test's clock."""

    def __init__(self, core: Core, server: Server) -> None:
        self.core, self.server, self.now = core, server, 0.0

    def pump(self) -> None:
        for _ in range(1000):
            moved = False
            data = self.core.data_to_send()
            if data:
                moved = True
                self.server.got += self.server.engine.receive_data(data, self.now)
            self.server.handle()
            data = self.server.engine.data_to_send()
            if data:
                moved = True
                self.core.receive_data(data, self.now)
            if not moved:
                return
        raise AssertionError("never quiet")

    def tick(self, seconds: float) -> None:
        self.now += seconds
        self.core.handle_timer(self.now)
        self.server.got += self.server.engine.handle_timer(self.now)
        self.pump()


def opened(server: Server | None = None, url: str = URL, **options: Any) -> Wire:
    core = client_core(url, options)  # type: ignore[arg-type]
    wire = Wire(core, server or Server())
    core.open(0.0)
    wire.pump()
    assert core.open_ready()
    return wire


def n(ch: ChannelCore) -> int:
    """The channel's number on the current connection."""
    assert ch.number is not None
    return ch.number


def consuming() -> tuple[Wire, ChannelCore, ConsumerCore]:
    """An open connection, a channel, and a consumer of queue ``q`` the server answered."""
    wire = opened()
    ch = channel(wire)
    consumer = ch.consume("q", {})
    wire.pump()
    assert consumer.started.done()
    return wire, ch, consumer


def reconnecting() -> Wire:
    """A ``reconnect=`` core (it starts lost), connected and open: its first attempt."""
    core = client_core(URL, reconnect=Reconnect(initial_delay=0.0, jitter=0.0))
    assert core.lost
    wire = Wire(core, Server())
    core.restart(0.0)
    wire.pump()
    assert core.open_ready() and core.reconnects == 0
    return wire


def channel(wire: Wire) -> ChannelCore:
    ch = wire.core.channel()
    wire.pump()
    assert ch.open_ready()
    return ch


# -- replies, in order -------------------------------------------------------------------------


def test_synchronous_replies_match_the_requests_in_order() -> None:
    wire = opened()
    ch = channel(wire)
    wire.server.hold = True
    first = ch.call(spec.QueueDeclare(queue="a"))
    second = ch.call(spec.QueueDeclare(queue="b"))
    purge = ch.call(spec.QueuePurge(queue="a"))
    wire.pump()
    assert not first.done() and [m.queue for m in wire.server.sent(spec.QueueDeclare)] == ["a", "b"]
    wire.server.release()
    wire.pump()
    assert [first.result().queue, second.result().queue] == ["a", "b"]  # type: ignore[attr-defined]
    assert purge.result() == spec.QueuePurgeOk(message_count=7)


def test_a_channel_the_server_closes_fails_what_waits_and_the_connection_stays() -> None:
    wire = opened()
    ch = channel(wire)
    wire.server.hold = True
    waiting = ch.call(spec.QueueDeclare(queue="missing", passive=True))
    wire.pump()
    wire.server.engine.close_channel(n(ch), 404, "NOT_FOUND - no queue 'missing'", 50, 10)
    wire.pump()
    with pytest.raises(ChannelClosedError) as closed:
        waiting.result()
    error = closed.value
    assert (error.reply_code, error.class_id, error.method_id) == (404, 50, 10)
    assert str(error) == "the channel was closed: 404 NOT_FOUND - no queue 'missing'"
    with pytest.raises(ChannelClosedError):
        ch.call(spec.QueueDeclare(queue="x"))
    assert ch.closed.done() and not wire.core.gone
    wire.server.hold = False
    other = channel(wire)
    op = other.call(spec.QueueDeclare(queue="x"))
    wire.pump()
    assert op.result().queue == "x"  # type: ignore[attr-defined]


# -- publishing --------------------------------------------------------------------------------


def test_confirms_multiple_and_nacks_complete_the_trackers() -> None:
    wire = opened()
    ch = channel(wire)
    ch.call(spec.ConfirmSelect())
    wire.pump()
    assert ch.confirming and ch.publish_ready()
    ops = [ch.publish("", "q", b"%d" % i, None, False) for i in range(4)]
    wire.pump()
    assert [b for _, _, b in wire.server.published] == [b"0", b"1", b"2", b"3"]
    wire.server.ack(n(ch), 2, multiple=True)
    wire.server.ack(n(ch), 3, ack=False)
    wire.pump()
    assert [op.done() for op in ops if op is not None] == [True, True, True, False]
    assert ops[0].result() == ops[1].result() == Confirmation(ack=True)  # type: ignore[union-attr]
    assert ops[2].result() == Confirmation(ack=False)  # type: ignore[union-attr]
    wire.server.ack(n(ch), 4)
    wire.pump()
    assert ops[3].result() == Confirmation(ack=True)  # type: ignore[union-attr]


def test_a_return_belongs_to_the_unconfirmed_mandatory_publish_it_names() -> None:
    wire = opened()
    ch = channel(wire)
    seen: list[Any] = []
    ch.on_return = seen.append
    ch.call(spec.ConfirmSelect())
    wire.pump()
    routed = ch.publish("x", "routed", b"a", None, True)
    lost = ch.publish("x", "nowhere", b"b", None, True)
    wire.pump()
    back = spec.BasicReturn(
        reply_code=312, reply_text="NO_ROUTE", exchange="x", routing_key="nowhere"
    )
    wire.server.engine.send_content(n(ch), back, spec.BasicProperties(), b"b")
    wire.server.ack(n(ch), 2, multiple=True)
    wire.pump()
    assert routed is not None and lost is not None
    assert routed.result() == Confirmation(ack=True)
    returned = lost.result().returned
    assert returned is not None and (returned.reply_code, returned.body) == (312, b"b")
    assert seen == [returned]


def test_publishes_wait_while_the_server_blocks_the_connection() -> None:
    wire = opened()
    ch = channel(wire)
    wire.server.engine.block("low on memory")
    wire.pump()
    assert wire.core.blocked == "low on memory" and not ch.publish_ready()
    wire.server.engine.unblock()
    wire.pump()
    assert wire.core.blocked is None and ch.publish_ready()


# -- consuming ---------------------------------------------------------------------------------


def test_deliveries_are_settled_once_and_multiple_settles_the_earlier_ones() -> None:
    wire, ch, consumer = consuming()
    assert consumer.started.done() and consumer.tag.startswith("ctag-")
    for tag in (1, 2, 3):
        wire.server.deliver(n(ch), consumer.tag, tag, b"m%d" % tag)
    wire.pump()
    deliveries = [consumer.take() for _ in range(3)]
    assert all(isinstance(d, Delivery) for d in deliveries)
    one, two, three = deliveries
    assert one is not None and two is not None and three is not None
    two.ack(multiple=True)
    assert one.settled and two.settled and not three.settled
    one.ack()  # settled: nothing goes out
    three.reject(requeue=False)
    three.nack()  # settled
    wire.pump()
    assert wire.server.sent(spec.BasicAck) == [spec.BasicAck(delivery_tag=2, multiple=True)]
    assert wire.server.sent(spec.BasicReject) == [spec.BasicReject(delivery_tag=3, requeue=False)]
    assert wire.server.sent(spec.BasicNack) == []


def test_the_server_cancels_a_consumer() -> None:
    wire, ch, consumer = consuming()
    wire.server.deliver(n(ch), consumer.tag, 1, b"last")
    wire.server.engine.send_method(n(ch), spec.BasicCancel(consumer_tag=consumer.tag))
    wire.pump()
    assert consumer.take_ready() and consumer.cancelled_by_server
    last = consumer.take()
    assert last is not None and last.body == b"last"
    assert consumer.take_ready() and consumer.take() is None
    assert wire.server.sent(spec.BasicCancelOk) == [spec.BasicCancelOk(consumer_tag=consumer.tag)]


def test_a_get_answered_with_content_or_empty() -> None:
    wire = opened()
    ch = channel(wire)
    wire.server.hold = True
    got = ch.get("q", no_ack=True)
    empty = ch.get("q", no_ack=False)
    wire.pump()
    wire.server.held.clear()
    ok = spec.BasicGetOk(delivery_tag=1, exchange="", routing_key="q", message_count=5)
    wire.server.engine.send_content(n(ch), ok, spec.BasicProperties(), b"x")
    wire.server.engine.send_method(n(ch), spec.BasicGetEmpty())
    wire.pump()
    delivery = got.result()
    assert isinstance(delivery, Delivery)
    assert (delivery.body, delivery.message_count, delivery.settled) == (b"x", 5, True)
    assert isinstance(empty.result(), spec.BasicGetEmpty)


# -- the end of a connection ------------------------------------------------------------------


def test_a_refused_login_is_an_authentication_error() -> None:
    core = client_core(URL)
    wire = Wire(core, Server(refuse_login=True))
    core.open(0.0)
    wire.pump()
    with pytest.raises(AuthenticationError) as refused:
        core.open_ready()
    assert refused.value.reply_code == 403 and not refused.value.retryable
    assert "guest" not in str(refused.value) or "***" in str(refused.value)


def test_the_servers_close_ends_the_connection_with_its_code() -> None:
    wire = opened()
    ch = channel(wire)
    waiting = ch.call(spec.QueueDeclare(queue="q"))
    wire.server.engine.close(320, "CONNECTION_FORCED - broker shutdown")
    wire.pump()
    with pytest.raises(ConnectionClosedError) as closed:
        waiting.result()
    assert closed.value.reply_code == 320 and closed.value.retryable
    assert wire.core.gone


def test_missed_heartbeats_end_the_connection_on_the_injected_clock() -> None:
    server = Server(heartbeat=2)
    wire = opened(server)
    wire.server.engine = engine.Connection(engine.Role.SERVER)  # the server goes silent
    wire.now += 10.0
    wire.core.handle_timer(wire.now)
    with pytest.raises(ConnectionClosedError) as closed:
        wire.core.check()
    assert closed.value.reply_code == 320 and closed.value.retryable
    assert "missed heartbeats" in closed.value.reply_text


def test_credentials_cross_the_network_in_the_clear_only_as_the_1_0_client_allows() -> None:
    with pytest.raises(InsecureCredentialsError):
        client_core("amqp://alice:secret@broker.example/%2f")
    with pytest.raises(InsecureCredentialsError):  # RabbitMQ's guest/guest by default
        client_core("amqp://broker.example")
    client_core("amqp://alice:secret@broker.example/v", {"allow_insecure_auth": True})
    tls = client_core("amqps://alice:secret@broker.example/v")
    layer = tls.stream
    assert getattr(layer, "server_hostname", None) == "broker.example"
    assert "secret" not in repr(tls)


# -- reconnection ------------------------------------------------------------------------------


def test_a_channel_is_made_again_after_a_loss() -> None:
    wire = reconnecting()
    core, ch = wire.core, channel(wire)
    for method in (
        spec.BasicQos(prefetch_count=10),
        spec.ConfirmSelect(),
        spec.QueueDeclare(queue="", exclusive=True),
        spec.QueueDeclare(queue="kept"),
        spec.QueueDeclare(queue="deleted"),
        spec.QueueBind(queue="kept", exchange="x", routing_key="k"),
        spec.QueueDelete(queue="deleted"),
    ):
        ch.call(method)
    wire.pump()
    named = "amq.gen-1"
    bind = ch.call(spec.QueueBind(queue=named, exchange="x"))
    consumer = ch.consume(named, {})
    wire.pump()
    assert bind.done() and consumer.started.done()
    unconfirmed = ch.publish("", "kept", b"unconfirmed", None, False)
    wire.pump()
    wire.server.hold = True
    pending = ch.call(spec.QueueDeclare(queue="pending"))
    wire.pump()

    core.receive_data(b"", 1.0)  # the transport ended
    assert core.lost and not pending.done() and unconfirmed is not None
    assert not unconfirmed.done() and not ch.publish_ready()
    second = Server()
    second.tags = 100  # (another server, other names)
    wire.server = second
    core.restart(core.next_attempt(1.0)[0])
    wire.pump()
    assert core.reconnects == 1 and ch.open_ready()
    assert [type(m).__name__ for _, m in second.methods] == [
        "BasicQos",
        "ConfirmSelect",
        "QueueDeclare",
        "QueueDeclare",
        "QueueBind",
        "QueueBind",
        "BasicConsume",
        "QueueDeclare",
    ]
    declares = second.sent(spec.QueueDeclare)
    assert [d.queue for d in declares] == ["", "kept", "pending"]  # type: ignore[attr-defined]
    renamed = ch.renamed[named]
    assert renamed == "amq.gen-101" and second.sent(spec.QueueBind)[1].queue == renamed  # type: ignore[attr-defined]
    assert second.sent(spec.BasicConsume)[0].queue == renamed  # type: ignore[attr-defined]
    assert second.sent(spec.BasicConsume)[0].consumer_tag == consumer.tag  # type: ignore[attr-defined]
    assert pending.result().queue == "pending"  # type: ignore[attr-defined]
    assert [b for _, _, b in second.published] == [b"unconfirmed"]  # sent again
    second.ack(n(ch), 1)
    wire.pump()
    assert unconfirmed.result() == Confirmation(ack=True)


def test_a_loss_ends_the_work_of_a_transaction() -> None:
    wire = reconnecting()
    core, ch = wire.core, channel(wire)
    ch.call(spec.TxSelect())
    wire.pump()
    ch.publish("", "q", b"in tx", None, False)
    core.receive_data(b"", 1.0)
    wire.server = Server()
    core.restart(1.0)
    wire.pump()
    with pytest.raises(TransactionError):
        ch.tx_commit_ready()
    assert ch.tx_commit_ready()  # once: the channel is transactional again
    assert wire.server.sent(spec.TxSelect) and not wire.server.published


# -- the corners -------------------------------------------------------------------------------


def test_calls_made_before_the_channel_is_open_go_once_it_is() -> None:
    wire = opened()
    ch = wire.core.channel()
    op = ch.call(spec.QueueDeclare(queue="early"))
    assert repr(ch) == "<ChannelCore 1 opening>"
    wire.pump()
    assert op.result().queue == "early"  # type: ignore[attr-defined]
    assert repr(ch) == "<ChannelCore 1 open>"


def test_a_reply_that_answers_nothing_waiting_changes_nothing() -> None:
    wire = opened()
    ch = channel(wire)
    wire.server.hold = True
    waiting = ch.call(spec.QueueDeclare(queue="a"))
    wire.pump()
    wire.server.engine.send_method(n(ch), spec.BasicQosOk())  # nothing asked for it
    wire.pump()
    assert not waiting.done()
    wire.server.release()
    wire.pump()
    assert waiting.result().queue == "a"  # type: ignore[attr-defined]
    wire.server.engine.send_method(n(ch), spec.QueuePurgeOk(message_count=1))  # none waits
    wire.pump()
    assert not wire.core.gone and ch.open_ready()


def test_closing_a_channel_fails_what_waits_on_it() -> None:
    wire = opened()
    ch = channel(wire)
    ch.call(spec.ConfirmSelect())
    wire.pump()
    unconfirmed = ch.publish("", "q", b"x", None, False)
    wire.server.hold = True
    waiting = ch.call(spec.QueueDeclare(queue="a"))
    consumer = ch.consume("q", {})
    wire.pump()
    ch.close()
    ch.close()  # once
    with pytest.raises(ChannelClosedError, match="200"):
        ch.check()
    wire.pump()
    assert ch.close_ready() and repr(ch) == "<ChannelCore 1 closed>"
    for op in (unconfirmed, waiting, consumer.started):
        assert op is not None
        with pytest.raises(ChannelClosedError) as closed:
            op.result()
        assert closed.value.reply_code == 200
    assert consumer.take_ready() and consumer.take() is None


def test_stray_deliveries_and_cancels_are_ignored_and_returns_need_no_callback() -> None:
    wire = opened()
    ch = channel(wire)
    ch.call(spec.ConfirmSelect())
    consumer = ch.consume("q", {"no_ack": True})
    wire.pump()
    op = ch.publish("x", "k", b"m", None, True)
    wire.pump()
    back = spec.BasicReturn(reply_code=312, reply_text="NO_ROUTE", exchange="x", routing_key="k")
    wire.server.engine.send_content(n(ch), back, spec.BasicProperties(), b"m")  # no on_return
    wire.server.ack(n(ch), 1)
    wire.server.deliver(n(ch), "unknown-tag", 1, b"?")
    wire.server.engine.send_method(n(ch), spec.BasicCancel(consumer_tag="unknown-tag"))
    wire.server.deliver(n(ch), consumer.tag, 2, b"kept")
    wire.pump()
    assert op is not None and op.result().returned is not None
    delivery = consumer.take()
    assert delivery is not None and (delivery.body, delivery.settled) == (b"kept", True)
    assert "settled=True" in repr(delivery) and consumer.take() is None
    assert wire.server.sent(spec.BasicCancelOk) == [spec.BasicCancelOk(consumer_tag="unknown-tag")]


def test_a_recover_forgets_the_delivery_tags_it_gives_back() -> None:
    wire, ch, consumer = consuming()
    wire.server.deliver(n(ch), consumer.tag, 1, b"a")
    wire.pump()
    delivery = consumer.take()
    assert delivery is not None
    ch.call(spec.BasicRecover(requeue=True))
    delivery.ack()  # its tag is gone: nothing is sent
    wire.pump()
    assert not delivery.settled and wire.server.sent(spec.BasicAck) == []


def test_the_same_declaration_is_made_again_once() -> None:
    wire = reconnecting()
    core, ch = wire.core, channel(wire)
    lazy = core.channel()  # opened, then lost before it is open
    for _ in range(2):
        ch.call(spec.QueueDeclare(queue="twice"))
    ch.call(spec.ExchangeDeclare(exchange="e", type="topic"))
    ch.call(spec.ExchangeBind(destination="e", source="amq.topic", routing_key="#"))
    ch.call(spec.QueueBind(queue="twice", exchange="e"))
    ch.call(spec.ExchangeUnbind(destination="e", source="amq.topic", routing_key="#"))
    ch.call(spec.ExchangeDeclare(exchange="gone", type="fanout"))
    ch.call(spec.QueueBind(queue="twice", exchange="gone"))
    ch.call(spec.ExchangeDelete(exchange="gone"))
    ch.call(spec.QueueBind(queue="twice", exchange="e", routing_key="k"))
    ch.call(spec.QueueUnbind(queue="twice", exchange="e", routing_key="k"))
    wire.pump()
    core.receive_data(b"", 1.0)
    lost_too = core.channel()  # made while lost: opened with the others
    wire.server = Server()
    core.restart(1.0)
    wire.pump()
    made = [(type(m).__name__, getattr(m, "exchange", "")) for _, m in wire.server.methods]
    assert made == [("QueueDeclare", ""), ("ExchangeDeclare", "e"), ("QueueBind", "e")]
    assert lazy.open_ready() and lost_too.open_ready()


def test_a_no_ack_consumers_deliveries_outlive_a_loss_and_commits_waiting_fail() -> None:
    wire = reconnecting()
    core, ch = wire.core, channel(wire)
    consumer = ch.consume("q", {"no_ack": True})
    ch.call(spec.TxSelect())
    wire.pump()
    wire.server.deliver(n(ch), consumer.tag, 1, b"settled already")
    wire.server.hold = True
    commit = ch.call(spec.TxCommit())
    wire.pump()
    core.receive_data(b"", 1.0)
    with pytest.raises(TransactionError):
        commit.result()
    delivery = consumer.take()
    assert delivery is not None and delivery.body == b"settled already"
    ch.close()  # while lost: at once
    assert ch.closed.done()
    core.close()
    assert core.gone


def test_the_servers_other_closes() -> None:
    wire = opened()
    wire.server.engine.close(530, "NOT_ALLOWED - vhost busy")  # once open: not a login
    wire.pump()
    with pytest.raises(ConnectionClosedError) as closed:
        wire.core.check()
    assert not isinstance(closed.value, AuthenticationError) and not closed.value.retryable

    wire = opened()
    wire.server.got += wire.server.engine.receive_data(
        b"\x01\x00\x00\x00\x00\x00\x01garbage", 0.0
    )  # noise
    wire.core.receive_data(b"\x09\x00\x00\x00\x00\x00\x00\xce", 0.0)  # an unknown frame type
    with pytest.raises(ConnectionClosedError) as broken:
        wire.core.check()
    assert broken.value.reply_code == 501 and not broken.value.retryable
    assert "broke the protocol" in str(broken.value)


def test_options_of_the_engine_and_the_urls_query() -> None:
    core = client_core(URL + "?heartbeat=7", {"frame_max": 8192, "channel_max": 16})
    wire = Wire(core, Server())
    core.open(0.0)
    wire.pump()
    opened_event = core.opened_event
    assert opened_event is not None
    assert (opened_event.heartbeat, opened_event.frame_max, opened_event.channel_max) == (
        7,
        8192,
        16,
    )
    assert repr(core) == "<amqp091.Core amqp://guest:***@127.0.0.1:5672?heartbeat=7>"


# -- TLS ---------------------------------------------------------------------------------------


class _ServerBytes:
    """A server engine's byte interface, for a server TLS layer."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def receive_data(self, data: bytes, now: float) -> list[Any]:
        self.server.got += self.server.engine.receive_data(data, now)
        return []

    def data_to_send(self) -> bytes:
        return self.server.engine.data_to_send()


def _tls_wire(name: str, tmp_path: Any) -> tuple[Core, Any, Server]:
    trustme = pytest.importorskip("trustme")
    import ssl

    from amqp_sansio import TLSLayer
    from amqp_sansio.security.tls import client_context

    ca = trustme.CA()
    cert = ca.issue_cert(name)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(server_context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    server = Server()
    layer = TLSLayer(_ServerBytes(server), server_context, client=False, negotiate=False)
    core = client_core(
        "amqps://alice:secret@localhost/%2f", {"ssl_context": client_context(cafile=str(ca_file))}
    )
    return core, layer, server


def _pump_tls(core: Core, layer: Any, server: Server) -> None:
    for _ in range(100):
        moved = False
        data = core.data_to_send()
        if data:
            moved = True
            layer.receive_data(data, 0.0)
        server.handle()
        data = layer.data_to_send()
        if data:
            moved = True
            core.receive_data(data, 0.0)
        if not moved:
            return


def test_the_credentials_sent() -> None:
    def login(url: str) -> tuple[str | None, str | None]:
        wire = opened(url=url)
        event = next(e for e in wire.server.engine_events if isinstance(e, ev.LoginRequested))
        return event.username, event.password

    assert login("amqp://127.0.0.1") == ("guest", "guest")
    with pytest.raises(SASLConfigurationError, match="password"):  # PLAIN needs one
        login("amqp://alice@127.0.0.1")
    assert login("amqp://alice:s%40cret@127.0.0.1/%2f") == ("alice", "s@cret")


def test_amqps_verifies_the_servers_certificate_and_name(tmp_path: Any) -> None:
    core, layer, server = _tls_wire("localhost", tmp_path)
    core.open(0.0)
    _pump_tls(core, layer, server)
    assert core.open_ready() and core.tls is not None and core.tls.version
    login = next(e for e in server.engine_events if isinstance(e, ev.LoginRequested))
    assert (login.username, login.password) == ("alice", "secret")

    core, layer, server = _tls_wire("elsewhere.example", tmp_path)
    core.open(0.0)
    _pump_tls(core, layer, server)
    with pytest.raises(ConnectionClosedError, match="TLS failed"):
        core.open_ready()
    assert core.gone


def test_a_channel_closed_while_it_opens_is_closed_once_open_and_flow_holds_publishes() -> None:
    wire = opened()
    ch = wire.core.channel()
    ch.close()
    wire.pump()
    assert ch.closed.done() and wire.server.engine.channels == {}
    other = channel(wire)
    assert other.number == ch.number  # the number is free again
    wire.server.engine.send_method(n(other), spec.ChannelFlow(active=False))
    wire.pump()
    assert not other.flow_active and not other.publish_ready()
    wire.server.engine.send_method(n(other), spec.ChannelFlow(active=True))
    wire.pump()
    assert other.publish_ready()


def test_reply_codes_are_named() -> None:
    from amqp_sansio.client.amqp091 import describe_reply

    assert describe_reply(404, "NOT_FOUND - no queue 'q'") == "404 NOT_FOUND - no queue 'q'"
    assert describe_reply(406, "inequivalent arg") == "406 PRECONDITION_FAILED - inequivalent arg"
    assert describe_reply(999, "") == "999 UNKNOWN"


# -- SASL mechanisms ---------------------------------------------------------------------------


def _login(wire: Wire) -> ev.LoginRequested:
    return next(e for e in wire.server.engine_events if isinstance(e, ev.LoginRequested))


def test_the_mechanism_is_plain_or_amqplain_where_the_server_offers_only_that() -> None:
    """Without ``sasl_mechanisms``: PLAIN (RabbitMQ's and pika's default), AMQPLAIN from a
    server that offers only AMQPLAIN; the credentials arrive either way."""
    for offered, used in (
        (("AMQPLAIN", "PLAIN"), "PLAIN"),
        (("PLAIN",), "PLAIN"),
        (("AMQPLAIN",), "AMQPLAIN"),
    ):
        wire = opened(Server(mechanisms=offered), "amqp://alice:s3cret@127.0.0.1/%2f")
        login = _login(wire)
        assert (login.mechanism, login.username, login.password) == (used, "alice", "s3cret")
        assert wire.core.engine.mechanism is not None
        assert wire.core.engine.mechanism.name == used


def test_sasl_mechanisms_restricts_the_choice_and_one_name_forces_it() -> None:
    """``sasl_mechanisms`` means what it means for AMQP 1.0: the client's choice among
    those names (strongest first, whatever their order); a server offering none of them
    is an authentication error, before any credential is sent."""
    wire = opened(Server(), URL, sasl_mechanisms=["amqplain"])
    login = _login(wire)
    assert (login.mechanism, login.username, login.password) == ("AMQPLAIN", "guest", "guest")
    wire = opened(Server(), URL, sasl_mechanisms=["AMQPLAIN", "PLAIN"])
    assert _login(wire).mechanism == "PLAIN"

    core = client_core(URL, {"sasl_mechanisms": ["PLAIN"]})
    wire = Wire(core, Server(mechanisms=("AMQPLAIN",)))
    core.open(0.0)
    wire.pump()
    with pytest.raises(AuthenticationError) as refused:
        core.open_ready()
    assert refused.value.reply_code == 403
    assert "offers AMQPLAIN, not PLAIN" in str(refused.value)
    assert not [e for e in wire.server.engine_events if isinstance(e, ev.LoginRequested)]


def test_sasl_mechanisms_that_cannot_work_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match="among EXTERNAL, PLAIN, AMQPLAIN, not SCRAM-SHA-256"):
        client_core(URL, {"sasl_mechanisms": ["SCRAM-SHA-256", "PLAIN"]})
    with pytest.raises(ValueError, match="not none"):
        client_core(URL, {"sasl_mechanisms": []})
    with pytest.raises(ValueError, match="collection of names"):
        client_core(URL, {"sasl_mechanisms": "PLAIN"})
    with pytest.raises(ValueError, match="TLS client certificate"):
        client_core("amqp://127.0.0.1", {"sasl_mechanisms": ["EXTERNAL"]})
    with pytest.raises(ValueError, match="remove the credentials"):
        client_core("amqps://alice:secret@localhost", {"sasl_mechanisms": ["EXTERNAL"]})
    # EXTERNAL sends no password: the rule on credentials in the clear does not apply
    client_core("amqps://broker.example", {"sasl_mechanisms": ["EXTERNAL"]})
    with pytest.raises(InsecureCredentialsError):  # AMQPLAIN's password is in the clear too
        client_core("amqp://alice:secret@broker.example", {"sasl_mechanisms": ["AMQPLAIN"]})


def _external_wire(tmp_path: Any, *, client_cert: bool) -> tuple[Core, Any, Server]:
    """A TLS server that asks for a client certificate (signed by its CA) and offers
    EXTERNAL only, and a core with ``sasl_mechanisms=["EXTERNAL"]``."""
    trustme = pytest.importorskip("trustme")
    import ssl

    from amqp_sansio import TLSLayer
    from amqp_sansio.security.tls import client_context

    ca = trustme.CA()
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(server_context)
    server_context.verify_mode = ssl.CERT_REQUIRED
    ca.configure_trust(server_context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    context = client_context(cafile=str(ca_file))
    if client_cert:
        ca.issue_cert("alice@example.com", common_name="alice").configure_cert(context)
    server = Server(mechanisms=("EXTERNAL",))
    layer = TLSLayer(_ServerBytes(server), server_context, client=False, negotiate=False)
    core = client_core(
        "amqps://localhost/%2f", {"ssl_context": context, "sasl_mechanisms": ["EXTERNAL"]}
    )
    return core, layer, server


def test_external_logs_in_with_the_tls_client_certificate(tmp_path: Any) -> None:
    """EXTERNAL (0-9-1 spec, connection.start-ok; RabbitMQ's rabbitmq_auth_mechanism_ssl):
    no credentials cross the connection, the server takes the identity from the client
    certificate TLS verified."""
    core, layer, server = _external_wire(tmp_path, client_cert=True)
    core.open(0.0)
    _pump_tls(core, layer, server)
    assert core.open_ready()
    login = next(e for e in server.engine_events if isinstance(e, ev.LoginRequested))
    assert (login.mechanism, login.response, login.password) == ("EXTERNAL", b"", None)
    assert layer.peer_identity is not None and "CN=alice" in layer.peer_identity
    assert core.opened_event is not None and core.opened_event.identity is None

    core, layer, server = _external_wire(tmp_path, client_cert=False)
    core.open(0.0)
    _pump_tls(core, layer, server)
    with pytest.raises(ConnectionClosedError, match="TLS failed"):  # no certificate: refused
        core.open_ready()
    assert not [e for e in server.engine_events if isinstance(e, ev.LoginRequested)]
