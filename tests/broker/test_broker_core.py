"""The core broker (amqp_sansio.broker) driven through its byte interface, with our engine
as the clients, on a simulated clock (tests/support/broker_net.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.broker_net import Client, Net, accept_all, body, msg, publish

import amqp_sansio as a
import amqp_sansio.engine.amqp10
from amqp_sansio.broker import OFFSET_FILTER, Broker, BrokerConfig, MemoryStore, parse_message
from amqp_sansio.definitions.amqp10 import messaging

SYM = a.Symbol


@pytest.mark.parametrize("chunk", [None, 1])
def test_fifo_whole_and_byte_by_byte(chunk: int | None) -> None:
    net = Net(chunk=chunk)
    p, c = net.connect(), net.connect()
    sender = publish(p, "q", *(b"%d" % i for i in range(5)))
    assert all(d.remote_settled for d in sender.unsettled.values()) or not sender.unsettled
    r = c.receiver("q", 10)
    assert accept_all(c, r) == [b"0", b"1", b"2", b"3", b"4"]
    assert net.broker.nodes["q"].depth == 0


def test_publisher_outcome_is_accepted_and_settled() -> None:
    net = Net()
    p = net.connect()
    s = p.sender("q")
    d = p.send(s, msg(b"x"))
    assert d.remote_settled and isinstance(d.remote_state, a.Accepted)


def test_priority_higher_first_fifo_within_and_ten_levels() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    for value, prio in [(b"a", 4), (b"b", 7), (b"c", 7), (b"d", 0), (b"e", 200), (b"f", 9)]:
        p.send(s, msg(value, priority=prio))
    r = c.receiver("q", 10)
    # 200 is the same level as 9 (core spec 3.2.1): FIFO between e and f.
    assert accept_all(c, r) == [b"e", b"f", b"b", b"c", b"a", b"d"]


def test_pending_lists_the_consumer_connection() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    r = c.receiver("q", 5)
    s = p.sender("q")
    net.broker.pending()
    s.send(msg(b"x").encode())
    p.conn.receive_data(p.engine.data_to_send(), net.now)
    assert c.conn in net.broker.pending()
    assert c.conn.data_to_send()
    assert r.link_credit == 5


def test_ttl_expired_messages_are_dropped_never_sent() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    p.send(s, msg(b"short", ttl=1000))
    p.send(s, msg(b"long", ttl=10_000))
    p.send(
        s,
        a.Message(
            properties=a.Properties(absolute_expiry_time=int((net.wall + 3) * 1000)), body=b"abs"
        ),
    )
    p.send(s, msg(b"none"))
    assert net.broker.next_expiry() == pytest.approx(net.wall + 1)
    net.advance(2)
    assert net.broker.expired == 1
    net.advance(2)  # abs expires: dropped by the timer
    assert net.broker.expired == 2
    r = c.receiver("q", 10)
    assert accept_all(c, r) == [b"long", b"none"]


def test_expired_on_arrival_and_at_dispatch() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    old = a.Properties(absolute_expiry_time=int((net.wall - 1) * 1000))
    d = p.send(s, a.Message(properties=old, body=b"old"))
    assert isinstance(d.remote_state, a.Accepted)
    p.send(s, msg(b"soon", ttl=500))
    net.wall += 1  # the timer has not fired: the dispatch itself drops it
    r = c.receiver("q", 10)
    assert accept_all(c, r) == []
    assert net.broker.expired == 2


def test_released_goes_back_to_head_unchanged_modified_counts() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"1", b"2")
    r = c.receiver("q", 1)
    (first,) = c.received(r)
    r.settle(first.delivery, a.Released())
    net.pump()
    r.flow(1)
    net.pump()
    (again,) = c.received(r)
    assert again.data == first.data  # released: delivery-count not incremented (3.4.4)
    r.settle(again.delivery, a.Modified(delivery_failed=True))
    net.pump()
    r.flow(1)
    net.pump()
    (third,) = c.received(r)
    m = a.Message.decode(third.data)
    assert m.header is not None and m.header.delivery_count == 1
    assert m.body == a.Message.decode(first.data).body
    assert third.data.endswith(first.data[-5:])


def test_modified_undeliverable_here_goes_to_another_consumer() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    publish(p, "q", b"1")
    r1 = c1.receiver("q", 5)
    (got,) = c1.received(r1)
    r2 = c2.receiver("q", 0)
    r1.settle(got.delivery, a.Modified(undeliverable_here=True))
    net.pump()
    assert c1.received(r1) == []
    r2.flow(5)
    net.pump()
    assert accept_all(c2, r2) == [b"1"]


def test_round_robin_between_consumers() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    r1 = c1.receiver("q", 10)
    r2 = c2.receiver("q", 10)
    publish(p, "q", *(b"%d" % i for i in range(6)))
    one, two = accept_all(c1, r1), accept_all(c2, r2)
    assert len(one) == len(two) == 3
    assert sorted(one + two) == [b"%d" % i for i in range(6)]


def test_browse_copy_sees_without_taking() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    publish(p, "q", b"1", b"2")
    b = c1.receiver("q", 10, source=a.Source(address="q", distribution_mode=SYM("copy")))
    assert b.remote is not None and b.remote.source.distribution_mode == "copy"
    assert accept_all(c1, b) == [b"1", b"2"]
    publish(p, "q", b"3")
    assert accept_all(c1, b) == [b"3"]
    r = c2.receiver("q", 10)
    assert accept_all(c2, r) == [b"1", b"2", b"3"]


def test_topic_copies_to_every_subscriber() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    r1 = c1.receiver("topic/news", 10)
    r2 = c2.receiver("topic/news", 10)
    publish(p, "topic/news", b"a", b"b")
    assert accept_all(c1, r1) == [b"a", b"b"]
    assert accept_all(c2, r2) == [b"a", b"b"]
    r1.detach()
    net.pump()
    publish(p, "topic/news", b"c")
    assert accept_all(c2, r2) == [b"c"]


def test_at_most_once_consumer_gets_presettled() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"1")
    r = c.receiver("q", 5, snd_settle_mode=a.SenderSettleMode.SETTLED)
    (got,) = c.received(r)
    assert got.delivery.remote_settled
    assert net.broker.nodes["q"].depth == 0


def test_presettled_publish_is_taken() -> None:
    net = Net()
    p = net.connect()
    s = p.sender("q", snd_settle_mode=a.SenderSettleMode.SETTLED)
    p.send(s, msg(b"x"))
    assert net.broker.nodes["q"].depth == 1


def test_exactly_once_second_mode_both_ways() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q", rcv_settle_mode=a.ReceiverSettleMode.SECOND)
    d = p.send(s, msg(b"x"))
    # The broker's outcome came unsettled; it settles once we do (core spec 2.8.3).
    assert isinstance(d.remote_state, a.Accepted)
    r = c.receiver("q", 5, rcv_settle_mode=a.ReceiverSettleMode.SECOND)
    (got,) = c.received(r)
    r.settle(got.delivery, a.Accepted())
    net.pump()
    assert got.delivery.settled
    assert net.broker.nodes["q"].depth == 0


def test_conflicting_outcomes_detach_with_illegal_state() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"x")
    r = c.receiver("q", 5, rcv_settle_mode=a.ReceiverSettleMode.SECOND)
    (got,) = c.received(r)
    r.update(got.delivery, a.Accepted())
    first = c.engine.data_to_send()
    r.update(got.delivery, a.Rejected())  # before the broker's settlement reached us
    c.conn.receive_data(first + c.engine.data_to_send(), net.now)
    net.pump()
    (detached,) = c.of(a.events.LinkDetached)
    assert detached.error.condition == "amqp:illegal-state"


def test_rejected_goes_to_dead_letter_queue() -> None:
    net = Net(BrokerConfig(dead_letter="dlq"))
    p, c = net.connect(), net.connect()
    publish(p, "q", b"bad", b"good")
    r = c.receiver("q", 5)
    bad, good = c.received(r)
    r.settle(bad.delivery, a.Rejected())
    r.settle(good.delivery, a.Accepted())
    net.pump()
    assert net.broker.dead_lettered == 1
    d = c.receiver("dlq", 5)
    assert accept_all(c, d) == [b"bad"]


def test_rejected_without_dead_letter_queue_is_dropped() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"bad")
    r = c.receiver("q", 5)
    (bad,) = c.received(r)
    r.settle(bad.delivery, a.Rejected())
    net.pump()
    assert net.broker.nodes["q"].depth == 0 and net.broker.dead_lettered == 0


def test_lost_connection_redelivers_with_delivery_count() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    publish(p, "q", b"1", b"2")
    r1 = c1.receiver("q", 1)
    assert len(c1.received(r1)) == 1
    net.lose(c1)
    r2 = c2.receiver("q", 5)
    got = c2.received(r2)
    counts = [
        (body(e), (a.Message.decode(e.data).header or a.Header()).delivery_count) for e in got
    ]
    assert counts == [(b"1", 1), (b"2", 0)]


def test_detached_link_default_outcome_from_source() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"1")
    r = c.receiver("q", 1, source=a.Source(address="q", default_outcome=a.Accepted()))
    assert len(c.received(r)) == 1
    r.detach()
    net.pump()
    assert net.broker.nodes["q"].depth == 0  # the client's default outcome: accepted


def test_settled_without_outcome_takes_the_default() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"1")
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    r.settle(got.delivery)
    r.update  # noqa: B018
    net.pump()
    r.flow(1)
    net.pump()
    (again,) = c.received(r)
    assert a.Message.decode(again.data).header.delivery_count == 1  # type: ignore[union-attr]


def test_received_state_is_not_an_outcome() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"1")
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    r.update(got.delivery, messaging.Received(section_number=0, section_offset=0))
    net.pump()
    r.settle(got.delivery, a.Accepted())
    net.pump()
    assert net.broker.nodes["q"].depth == 0


def test_drain_with_nothing_advances_and_completes() -> None:
    net = Net()
    c = net.connect()
    r = c.receiver("q", 5)
    r.drain_credit()
    net.pump()
    assert c.of(a.events.DrainCompleted)
    assert r.link_credit == 0


def test_dynamic_reply_queue_request_reply_and_delete_on_close() -> None:
    net = Net()
    requester, server = net.connect(), net.connect()
    reply = requester.receiver(None, 5, source=a.Source(dynamic=True))
    assert reply.remote is not None
    address = reply.remote.source.address
    assert address.startswith("tmp.") and len(address) > 20 and address in net.broker.nodes
    req = requester.sender("requests")
    requester.send(req, a.Message(properties=a.Properties(reply_to=address), body=b"ping"))
    inbox = server.receiver("requests", 5)
    (request,) = server.received(inbox)
    inbox.settle(request.delivery, a.Accepted())
    to = a.Message.decode(request.data).properties.reply_to  # type: ignore[union-attr]
    out = server.sender(to)
    server.send(out, msg(b"pong"))
    assert accept_all(requester, reply) == [b"pong"]
    reply.detach()
    net.pump()
    assert address not in net.broker.nodes
    (gone,) = server.of(a.events.LinkDetached)
    assert gone.error.condition == "amqp:resource-deleted"


@pytest.mark.parametrize(
    "policy",
    [
        messaging.DeleteOnNoLinks(),
        messaging.DeleteOnNoMessages(),
        messaging.DeleteOnNoLinksOrMessages(),
    ],
)
def test_dynamic_lifetime_policies(policy: object) -> None:
    net = Net()
    c, p = net.connect(), net.connect()
    props = {SYM("lifetime-policy"): policy}
    r = c.receiver(None, 0, source=a.Source(dynamic=True, dynamic_node_properties=props))
    address = r.remote.source.address  # type: ignore[union-attr]
    s = p.sender(address)
    p.send(s, msg(b"x"))
    r.detach()  # the creator goes: not deleted while a producer is attached / a message waits
    net.pump()
    assert address in net.broker.nodes
    s.detach()
    net.pump()
    gone = address not in net.broker.nodes
    assert gone is (type(policy) is not messaging.DeleteOnNoMessages)
    if not gone:
        r2 = c.receiver(address, 5)
        accept_all(c, r2)
        assert address not in net.broker.nodes


def test_dynamic_target_for_a_producer() -> None:
    net = Net()
    c = net.connect()
    s = c.sender(None, target=a.Target(dynamic=True))
    address = s.remote.target.address  # type: ignore[union-attr]
    assert address in net.broker.nodes
    s.detach()
    net.pump()
    assert address not in net.broker.nodes


def test_refusals() -> None:
    net = Net(BrokerConfig(auto_create=False, queues={"known"}, max_links_per_connection=3))
    c = net.connect()
    unknown = c.receiver("nope")
    no_source = c.receiver(None, source=None)
    no_address = c.receiver(None)  # (a sender without one is the anonymous relay)
    errors = [e.error.condition for e in c.of(a.events.LinkDetached)]
    assert errors == ["amqp:not-found", "amqp:invalid-field", "amqp:invalid-field"]
    assert unknown.remote.source is None and no_source.remote.source is None  # type: ignore[union-attr]
    assert no_address.remote.source is None  # type: ignore[union-attr]
    links = [c.receiver("known") for _ in range(4)]
    assert [link.state for link in links][-1] is not a.LinkState.ATTACHED
    assert c.of(a.events.LinkDetached)[-1].error.condition == "amqp:resource-limit-exceeded"


def test_queue_limits_reject_with_resource_limit_exceeded() -> None:
    net = Net(BrokerConfig(max_queue_depth=2, max_queue_bytes=10_000))
    p = net.connect()
    s = p.sender("q")
    ds = [p.send(s, msg(b"x")) for _ in range(3)]
    assert [type(d.remote_state) for d in ds] == [a.Accepted, a.Accepted, a.Rejected]
    assert ds[2].remote_state.error.condition == "amqp:resource-limit-exceeded"
    net2 = Net(BrokerConfig(max_queue_bytes=100))
    p2 = net2.connect()
    s2 = p2.sender("q")
    d = p2.send(s2, msg(b"y" * 200))
    assert isinstance(d.remote_state, a.Rejected)


def test_a_malformed_message_is_rejected_with_decode_error() -> None:
    net = Net()
    p, other = net.connect(), net.connect()
    s = p.sender("q")
    d = p.send(s, b"\x00\x53\x70\xc0\x01")  # a header whose list is cut short
    assert isinstance(d.remote_state, a.Rejected)
    assert d.remote_state.error.condition == "amqp:decode-error"
    assert not p.of(a.events.SessionEnded)
    publish(other, "q", b"still fine")  # the broker and other connections go on
    r = other.receiver("q", 5)
    assert accept_all(other, r) == [b"still fine"]


def test_a_consumer_too_small_for_a_message_is_detached() -> None:
    """A message larger than the consumer's max-message-size is a link error (core spec
    2.7.3): the link is detached with amqp:link:message-size-exceeded (2.8.15), so the
    receiver learns it; the messages stay for others (issue 27: it waited in silence)."""
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"x" * 600, b"small")
    r = c.receiver("q", 5, max_message_size=300)
    assert accept_all(c, r) == []
    (detached,) = c.of(a.events.LinkDetached)
    assert detached.link is r and detached.error.condition == "amqp:link:message-size-exceeded"
    assert "max-message-size 300" in detached.error.description
    assert net.broker.nodes["q"].depth == 2
    other = c.receiver("q", 5)
    assert accept_all(c, other) == [b"x" * 600, b"small"]


def test_protocol_error_from_a_client_is_contained() -> None:
    net = Net()
    bad, good = net.connect(), net.connect()
    publish(good, "q", b"1")
    r = bad.receiver("q", 5)
    assert len(bad.received(r)) == 1
    bad.conn.receive_data(b"\x00\x00\x00\x08\x02\x00\x00\x00garbage-frame", net.now)
    net.pump()
    assert bad.conn.ended or bad.conn.engine.state is not a.ConnectionState.OPENED
    r2 = good.receiver("q", 5)
    assert accept_all(good, r2) == [b"1"]  # the bad client's delivery came back


def test_close_and_session_end_clean_up() -> None:
    net = Net()
    c = net.connect()
    r = c.receiver("q", 5)
    assert net.broker.nodes["q"].links
    c.session.end()  # type: ignore[union-attr]
    net.pump()
    # No link left, nothing held: the queue made on first use is deleted (auto_delete).
    assert "q" not in net.broker.nodes
    c.session = None
    c.receiver("q", 5)
    c.engine.close()
    net.pump()
    assert c.conn.ended and c.conn not in net.broker.connections
    assert r.state is not a.LinkState.ATTACHED


def test_broker_close_and_delete_node() -> None:
    broker = Broker(BrokerConfig(topics={"t"}))
    net = Net(broker=broker)
    c = net.connect()
    r = c.receiver("t", 5)
    broker.delete_node(broker.nodes["t"])
    broker.delete_node(r and broker.declare("x"))
    net.pump()
    assert r.state is not a.LinkState.ATTACHED
    c.conn.close()
    net.pump()
    assert c.engine.state is a.ConnectionState.END
    assert "closed" not in repr(c.conn)


def test_parse_message_sections() -> None:
    data = a.Message(
        header=a.Header(ttl=2000, priority=3),
        message_annotations={"k": 1},
        properties=a.Properties(absolute_expiry_time=5000),
        body=b"x",
    ).encode()
    m = parse_message(data, seq=1, wall=10.0)
    assert (m.priority, m.expires, m.encoded()) == (3, 5.0, data)
    plain = parse_message(a.Message(body=b"x").encode(), seq=2, wall=0.0)
    assert (plain.priority, plain.expires, plain.header) == (4, None, None)
    plain.delivery_count = 2
    assert a.Message.decode(plain.encoded()).header == a.Header(delivery_count=2)
    assert "seq=2" in repr(plain)
    with pytest.raises(a.DecodeError):
        parse_message(b"\x01", seq=3, wall=0.0)
    with pytest.raises(a.DecodeError):
        parse_message(b"\x00\x53\x70\xa1\x01x", seq=3, wall=0.0)  # a header that is a string
    with pytest.raises(a.DecodeError):
        parse_message(b"\x00\x53", seq=3, wall=0.0)
    odd = b"\x00\xa3\x01x\x45" + a.Message(body=b"y").encode()  # a symbolic descriptor: stop
    assert parse_message(odd, seq=4, wall=0.0).header is None
    long_form = b"\x00\x80" + bytes(7) + b"\x70\x45"  # a header with a ulong descriptor
    assert parse_message(long_form, seq=5, wall=0.0).header == a.Header()
    MemoryStore().put(None, plain)  # type: ignore[arg-type]


# -- conservation, as a property -------------------------------------------------------------

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(0, 1), st.integers(0, 9)),
        st.tuples(st.just("credit"), st.integers(0, 1), st.integers(1, 3)),
        st.tuples(
            st.just("outcome"),
            st.integers(0, 1),
            st.sampled_from(["accept", "release", "modify", "reject", "none"]),
        ),
        st.tuples(st.just("lose"), st.integers(0, 1), st.just(0)),
        st.tuples(st.just("tick"), st.just(0), st.integers(1, 3)),
        # A transactional publish of ``i + 1`` messages, committed or rolled back; or a
        # transactional accept by consumer ``i``, committed or rolled back.
        st.tuples(st.just("txn-publish"), st.integers(0, 1), st.sampled_from(["commit", "abort"])),
        st.tuples(st.just("txn-accept"), st.integers(0, 1), st.sampled_from(["commit", "abort"])),
    ),
    max_size=40,
)


class _Ledger:
    """The world of :func:`test_every_published_message_is_accounted_for`: a publisher, two
    consumers made on demand, and what was published and accepted; one method per op."""

    def __init__(self) -> None:
        self.net = net = Net(BrokerConfig(dead_letter="dlq"), seed=1)
        self.p = net.connect()
        self.s = self.p.sender("q")
        self.consumers: list[tuple[Client, a.Receiver] | None] = [None, None]
        self.accepted: list[bytes] = []
        self.published: list[bytes] = []
        self.pending: dict[int, list[a.events.DeliveryReceived]] = {0: [], 1: []}
        self.controllers: dict[Client, a.Controller] = {}

    def consumer(self, i: int) -> tuple[Client, a.Receiver]:
        if self.consumers[i] is None:
            c = self.net.connect()
            self.consumers[i] = (c, c.receiver("q"))
        return self.consumers[i]  # type: ignore[return-value]

    def transaction(self, client: Client) -> tuple[a.Controller, a.Transaction]:
        controllers = self.controllers
        if client not in controllers:
            assert client.session is not None
            controllers[client] = client.session.attach_controller(f"ctl-{id(client)}")
            self.net.pump()
        ctl = controllers[client]
        txn = ctl.declare()
        self.net.pump()
        return ctl, txn

    def publish(self, n: int, i: int, arg: int | str) -> None:
        value = b"%d" % n
        self.published.append(value)
        ttl = 2000 if arg == 9 else None
        self.p.send(self.s, msg(value, ttl=ttl) if ttl else msg(value))

    def credit(self, n: int, i: int, arg: int | str) -> None:
        _, r = self.consumer(i)
        r.flow(r.link_credit + int(arg))
        self.net.pump()

    def outcome(self, n: int, i: int, arg: int | str) -> None:
        c, r = self.consumer(i)
        pending = self.pending
        pending[i] += c.received(r)
        if not pending[i]:
            return
        e = pending[i].pop(0)
        state = {
            "accept": a.Accepted(),
            "release": a.Released(),
            "modify": a.Modified(delivery_failed=True),
            "reject": a.Rejected(),
            "none": None,
        }[str(arg)]
        if isinstance(state, a.Accepted):
            self.accepted.append(body(e))
        r.settle(e.delivery, state)
        self.net.pump()

    def lose(self, n: int, i: int, arg: int | str) -> None:
        if self.consumers[i] is None:
            return
        self.net.lose(self.consumers[i][0])  # type: ignore[index]
        self.consumers[i] = None
        self.pending[i] = []

    def tick(self, n: int, i: int, arg: int | str) -> None:
        self.net.advance(float(arg))

    def txn_publish(self, n: int, i: int, arg: int | str) -> None:
        ctl, txn = self.transaction(self.p)
        values = [b"%d.%d" % (n, k) for k in range(i + 1)]
        for value in values:
            self.s.send(msg(value).encode(), transaction=txn)
        self.net.pump()
        ctl.discharge(txn, fail=arg == "abort")
        self.net.pump()
        if arg == "commit":
            self.published += values

    def txn_accept(self, n: int, i: int, arg: int | str) -> None:
        c, r = self.consumer(i)
        pending = self.pending
        pending[i] += c.received(r)
        if not pending[i]:
            return
        e = pending[i].pop(0)
        ctl, txn = self.transaction(c)
        r.update(e.delivery, a.Accepted(), transaction=txn)
        self.net.pump()
        ctl.discharge(txn, fail=arg == "abort")
        self.net.pump()
        if arg == "commit":
            self.accepted.append(body(e))
        else:
            r.settle(e.delivery, a.Released())  # still ours after the rollback: give back
            self.net.pump()


_LEDGER_OPS = {
    "publish": _Ledger.publish,
    "credit": _Ledger.credit,
    "outcome": _Ledger.outcome,
    "lose": _Ledger.lose,
    "tick": _Ledger.tick,
    "txn-publish": _Ledger.txn_publish,
    "txn-accept": _Ledger.txn_accept,
}


@settings(max_examples=60, deadline=None)
@given(OPS)
def test_every_published_message_is_accounted_for(ops: list[tuple[str, int, int | str]]) -> None:
    ledger = _Ledger()
    net, consumers, accepted, published = (
        ledger.net,
        ledger.consumers,
        ledger.accepted,
        ledger.published,
    )
    for n, (op, i, arg) in enumerate(ops):
        _LEDGER_OPS[op](ledger, n, i, arg)
    for i in (0, 1):
        if consumers[i] is not None:
            net.lose(consumers[i][0])  # type: ignore[index]
    queue = net.broker.nodes["q"]
    dlq = net.broker.nodes.get("dlq")
    left = [m.encoded() for m in queue.available.values()]  # type: ignore[attr-defined]
    dead = [] if dlq is None else list(dlq.available.values())  # type: ignore[attr-defined]
    assert len(accepted) == len(set(accepted))
    assert queue.acquired == 0  # type: ignore[attr-defined]
    total = len(accepted) + len(left) + len(dead) + net.broker.expired
    assert total == len(published)


# -- corners ----------------------------------------------------------------------------------


def test_expiry_of_a_message_out_with_a_consumer() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"soon", ttl=1000)
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    net.advance(2)  # the timer passes it by: it is the consumer's
    assert net.broker.expired == 0
    r.settle(got.delivery, a.Released())  # back, but expired: dropped (broker draft 2.2.5)
    net.pump()
    assert net.broker.expired == 1 and net.broker.nodes["q"].depth == 0


def test_expiry_empties_a_delete_on_no_messages_node() -> None:
    net = Net()
    c = net.connect()
    props = {SYM("lifetime-policy"): messaging.DeleteOnNoMessages()}
    s = c.sender(None, target=a.Target(dynamic=True, dynamic_node_properties=props))
    address = s.remote.target.address  # type: ignore[union-attr]
    c.send(s, msg(b"x", ttl=1000))
    net.advance(2)
    assert address not in net.broker.nodes
    assert s.state is not a.LinkState.ATTACHED  # detached: resource-deleted


def test_released_expired_message_empties_its_node() -> None:
    net = Net()
    c = net.connect()
    props = {SYM("lifetime-policy"): messaging.DeleteOnNoMessages()}
    r = c.receiver(None, 1, source=a.Source(dynamic=True, dynamic_node_properties=props))
    address = r.remote.source.address  # type: ignore[union-attr]
    publish(c, address, b"x", ttl=1000)
    (got,) = c.received(r)
    net.wall += 2
    r.settle(got.delivery, a.Released())
    net.pump()
    assert address not in net.broker.nodes


def test_declare_delete_and_odd_dynamic_properties() -> None:
    broker = Broker()
    q = broker.declare("q")
    assert broker.declare("q") is q
    broker.delete_node(q)
    broker.delete_node(q)  # twice: nothing more
    stray = broker.declare("stray")
    del broker.nodes["stray"]
    broker.delete_node(stray)  # not registered any more
    net = Net(broker=broker)
    c = net.connect()
    props = {SYM("lifetime-policy"): "not a policy"}
    r = c.receiver(None, 0, source=a.Source(dynamic=True, dynamic_node_properties=props))
    node = broker.nodes[r.remote.source.address]  # type: ignore[union-attr]
    assert type(node.policy) is messaging.DeleteOnClose


def test_dead_letter_queue_full_or_a_topic() -> None:
    net = Net(BrokerConfig(dead_letter="dlq", max_queue_depth=1))
    p, c = net.connect(), net.connect()
    publish(p, "dlq", b"already")
    publish(p, "q", b"bad")
    r = c.receiver("q", 1)
    (bad,) = c.received(r)
    r.settle(bad.delivery, a.Rejected())
    net.pump()
    assert net.broker.dead_lettered == 0  # no room: dropped
    net2 = Net(BrokerConfig(dead_letter="topic/dead"))
    p2, c2 = net2.connect(), net2.connect()
    watcher = c2.receiver("topic/dead", 5)
    publish(p2, "q", b"bad")
    r2 = c2.receiver("q", 1)
    (bad2,) = c2.received(r2)
    r2.settle(bad2.delivery, a.Rejected())
    net2.pump()
    assert accept_all(c2, watcher) == [b"bad"]


def test_publish_and_detach_of_a_delete_on_close_node_in_one_read() -> None:
    net = Net()
    c = net.connect()
    s = c.sender(None, target=a.Target(dynamic=True))
    address = s.remote.target.address  # type: ignore[union-attr]
    s.send(msg(b"x").encode())
    s.detach()
    net.pump()
    assert address not in net.broker.nodes


def test_lost_connection_with_creator_and_producer_of_a_dynamic_node() -> None:
    net = Net()
    c = net.connect()
    r = c.receiver(None, 0, source=a.Source(dynamic=True))
    address = r.remote.source.address  # type: ignore[union-attr]
    c.sender(address)
    net.lose(c)
    assert address not in net.broker.nodes and not c.conn.consumers and not c.conn.producers


def test_a_detached_consumer_has_no_credit_and_browsers_too_small_are_detached() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"small", b"x" * 600)
    b = c.receiver(
        "q", 5, max_message_size=300, source=a.Source(address="q", distribution_mode=SYM("copy"))
    )
    assert [body(e) for e in c.received(b)] == [b"small"]  # (not settled: detached since)
    (detached,) = c.of(a.events.LinkDetached)
    assert detached.error.condition == "amqp:link:message-size-exceeded"
    assert not c.conn.consumers  # removed once the detaches crossed
    r = c.receiver("q", 5)
    (consumer,) = c.conn.consumers.values()
    r.detach()
    net.pump()
    assert consumer.credit == 0


def test_explicit_sasl_and_closing_twice() -> None:
    broker = Broker()
    conn = broker.accept(0.0, sasl=a.sasl.ServerAuthenticator(None, allow_anonymous=True))
    assert conn.engine._sasl is not None
    net = Net()
    c = net.connect()
    c.conn.close()
    c.conn.close()  # closing already: nothing more
    net.pump()
    assert c.engine.state is a.ConnectionState.END


def test_transactional_corners() -> None:
    net = Net(BrokerConfig(max_queue_bytes=200, topics={"t"}))
    c, sub = net.connect(), net.connect()
    watcher = sub.receiver("t", 5)
    ctl_session = c.begin()
    ctl = ctl_session.attach_controller("ctl")
    net.pump()
    txn = ctl.declare()
    net.pump()
    big, to_topic = c.sender("q"), c.sender("t")
    big.send(msg(b"y" * 300).encode(), transaction=txn)
    net.pump()
    ctl.discharge(txn)
    net.pump()
    assert (
        c.of(a.engine.amqp10.transactions.TransactionRolledBack)[-1].error.condition
        == "amqp:transaction:rollback"
    )
    txn2 = ctl.declare()
    net.pump()
    to_topic.send(msg(b"news").encode(), transaction=txn2)
    net.pump()
    ctl.discharge(txn2)
    net.pump()
    assert accept_all(sub, watcher) == [b"news"]


def test_redelivery_keeps_the_rest_of_the_header() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"x", priority=7, durable=True)
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    r.settle(got.delivery, a.Modified(delivery_failed=True))
    net.pump()
    r.flow(1)
    net.pump()
    (again,) = c.received(r)
    header = a.Message.decode(again.data).header
    assert header == a.Header(durable=True, priority=7, delivery_count=1)


def test_a_consumer_of_a_deleted_node_gives_back_nothing() -> None:
    net = Net()
    owner, other = net.connect(), net.connect()
    r = owner.receiver(None, 0, source=a.Source(dynamic=True))
    address = r.remote.source.address  # type: ignore[union-attr]
    publish(owner, address, b"x")
    r2 = other.receiver(address, 1)
    assert len(other.received(r2)) == 1
    r.detach()  # delete-on-close: the node goes, with what the other consumer holds
    net.pump()
    assert address not in net.broker.nodes
    assert other.of(a.events.LinkDetached)[-1].error.condition == "amqp:resource-deleted"


def test_browsing_drops_expired_and_stops_at_its_credit() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"old", ttl=1000)
    publish(p, "q", b"1", b"2")
    net.wall += 2
    copy = a.Source(address="q", distribution_mode=SYM("copy"))
    b = c.receiver("q", 1, source=copy)
    assert accept_all(c, b) == [b"1"]
    assert net.broker.expired == 1
    b.flow(1)
    net.pump()
    assert accept_all(c, b) == [b"2"]


def test_topic_depth_repr_and_config() -> None:
    config = BrokerConfig(topics={"events"}, topic_prefix=None)
    assert config.is_topic("events") and not config.is_topic("topic/x")
    net = Net(config)
    c, p = net.connect(), net.connect()
    r = c.receiver("events", 0)
    publish(p, "events", b"1", b"2")
    topic = net.broker.nodes["events"]
    assert topic.depth == 2 and repr(topic) == "<Topic 'events'>"
    r.flow(5)
    net.pump()
    assert accept_all(c, r) == [b"1", b"2"] and topic.depth == 0
    assert "links=1" in repr(c.conn)


def test_released_messages_return_in_arrival_order() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"1", b"2", b"3", b"4")
    r = c.receiver("q", 3)
    one, two, three = c.received(r)
    for e in (three, one, two):
        r.settle(e.delivery, a.Released())
        net.pump()
    r.flow(4)
    net.pump()
    assert accept_all(c, r) == [b"1", b"2", b"3", b"4"]


def test_publisher_credit_is_topped_up_and_its_flow_is_harmless() -> None:
    net = Net(BrokerConfig(link_credit=4))
    p = net.connect()
    s = p.sender("q")
    for i in range(10):
        p.send(s, msg(b"%d" % i))
    assert s.link_credit >= 2 and net.broker.nodes["q"].depth == 10
    s.set_available(3)
    net.pump()
    assert s.state is a.LinkState.ATTACHED


def test_second_mode_publisher_settles_and_browser_outcome() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q", rcv_settle_mode=a.ReceiverSettleMode.SECOND)
    s.auto_settle = False
    d = p.send(s, msg(b"x"))
    s.settle(d)
    net.pump()
    assert not s.unsettled
    copy = a.Source(address="q", distribution_mode=SYM("copy"))
    b = c.receiver("q", 5, source=copy, rcv_settle_mode=a.ReceiverSettleMode.SECOND)
    (got,) = c.received(b)
    b.settle(got.delivery, a.Accepted())
    net.pump()
    assert got.delivery.settled and net.broker.nodes["q"].depth == 1


def test_the_expiry_heap_stays_proportional_to_waiting_messages() -> None:
    net = Net(BrokerConfig(link_credit=5000))
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    r = c.receiver("q", 5000)
    for i in range(3000):  # consumed at once, long before they would expire
        s.send(msg(b"%d" % i, ttl=3_600_000).encode())
        if i % 100 == 99:
            net.pump()
            for e in c.received(r):
                r.settle(e.delivery, a.Accepted())
    net.pump()
    assert len(net.broker._expiry) < 1100
    assert net.broker.next_expiry() is not None


@pytest.mark.parametrize("with_header", [False, True])
def test_modified_merges_message_annotations_and_keeps_the_bare_message(
    with_header: bool,
) -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    original = a.Message(
        header=a.Header(priority=6) if with_header else None,
        delivery_annotations={"x-opt-da": 1},
        message_annotations={"x-opt-kept": "k", "x-opt-over": 1},
        properties=a.Properties(message_id="m-1", to="q"),
        application_properties={"region": "eu"},
        body=b"payload",
    )
    s = p.sender("q")
    p.send(s, original)
    bare = original.encode_bare()
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    annotations = {SYM("x-opt-over"): 2, SYM("x-opt-new"): True}
    r.settle(got.delivery, a.Modified(delivery_failed=True, message_annotations=annotations))
    net.pump()
    r.flow(1)
    net.pump()
    (again,) = c.received(r)
    m = a.Message.decode(again.data)
    assert m.message_annotations == {"x-opt-kept": "k", "x-opt-over": 2, "x-opt-new": True}
    assert m.delivery_annotations == {"x-opt-da": 1}
    assert m.header is not None and m.header.delivery_count == 1
    assert m.header.priority == (6 if with_header else 4)
    assert again.data.endswith(bare)  # the bare message, byte for byte
    plain = parse_message(a.Message(body=b"x").encode(), seq=1, wall=0.0)
    plain.annotate({SYM("x-opt-a"): 1})
    assert a.Message.decode(plain.data).message_annotations == {"x-opt-a": 1}
    assert plain.size == len(plain.data)  # (what queues and the alarm count: the new bytes)


class RecordingStore(MemoryStore):
    """A store that records what the broker tells it, and what was settled at each flush."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []
        self.links: list[a.Link] = []

    def put(self, node: object, message: object) -> None:
        self.calls.append(("put", message))

    def remove(self, node: object, message: object) -> None:
        self.calls.append(("remove", message))

    def flush(self) -> None:
        self.calls.append(("flush", sum(len(link.unsettled) for link in self.links)))


def test_durable_messages_are_settled_after_the_store_flushes() -> None:
    store = RecordingStore()
    net = Net(broker=Broker(store=store), chunk=1 << 20)  # each output is one input
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    (producer,) = p.conn.producers
    store.links.append(producer)
    assert {k for k, _ in store.calls} == {"flush"}  # at the end of every input
    store.calls.clear()
    durable = s.send(msg(b"d", durable=True).encode())
    plain = s.send(msg(b"p").encode())
    net.pump()
    kinds = [k for k, _ in store.calls]
    assert kinds == ["put", "put", "flush"]
    assert store.calls[2] == ("flush", 1)  # the durable one waited for the flush
    assert durable.remote_settled and plain.remote_settled
    r = c.receiver("q", 5)
    store.calls.clear()
    accept_all(c, r)
    kinds = [k for k, _ in store.calls]
    # Both removals are flushed before the broker answers the input that accepted them.
    assert kinds == ["remove", "remove", "flush"]


def test_idle_timeout_closes_a_silent_client_and_gives_back_its_deliveries() -> None:
    net = Net(BrokerConfig(idle_timeout=5))
    p, silent = net.connect(), net.connect()
    publish(p, "q", b"x")
    r = silent.receiver("q", 1)
    assert len(silent.received(r)) == 1
    deadline = silent.conn.next_deadline()
    assert deadline is not None and deadline <= net.now + 5
    silent.conn.handle_timer(net.now + 6)  # only the broker's clock moves
    net.pump()
    assert (
        silent.of(a.events.ConnectionClosed)[-1].error.condition == "amqp:resource-limit-exceeded"
    )
    assert silent.conn.ended and not silent.conn.consumers
    c = net.connect()
    got = c.received(c.receiver("q", 1))
    assert a.Message.decode(got[0].data).header.delivery_count == 1  # type: ignore[union-attr]


def test_max_message_size_is_announced_and_enforced() -> None:
    net = Net(BrokerConfig(max_message_size=1000))
    p = net.connect()
    s = p.sender("q")
    assert s.remote is not None and s.remote.max_message_size == 1000
    with pytest.raises(a.LocalProtocolError, match="max-message-size"):
        s.send(msg(b"x" * 2000).encode())  # our engine keeps to what the broker announced
    p.send(s, msg(b"x" * 500))
    assert net.broker.nodes["q"].depth == 1


def _turn(net: Net, client: Client) -> None:
    """One exchange of bytes each way, with no further turn of dispatching (what the server
    does before it writes a turn out)."""
    client.conn.receive_data(client.engine.data_to_send(), net.now, wall=net.wall)
    client.events += client.engine.receive_data(client.conn.data_to_send(), net.now)


@pytest.mark.parametrize("address", ["q", "events"])
def test_a_turn_hands_out_at_most_dispatch_batch_messages(address: str) -> None:
    """``BrokerConfig.dispatch_batch``: a turn delivers at most that many (to a queue's
    consumers, or a stream's readers), the rest waits for ``dispatch_more`` (which the
    server calls once the turn is written); a drain is answered only once every message
    the credit allows has gone."""
    net = Net(BrokerConfig(dispatch_batch=2, streams=["events"], stream_prefix=None))
    p, c = net.connect(), net.connect()
    publish(p, address, *(b"%d" % i for i in range(5)))
    first = {OFFSET_FILTER: "first"} if address == "events" else None
    link = c.receiver(address, source=a.Source(address=address, filter=first))  # no credit
    link.flow(10, drain=True)
    _turn(net, c)
    assert [body(e) for e in c.received(link)] == [b"0", b"1"]
    assert net.broker.dispatching and link.link_credit == 8  # not drained yet
    got = []
    while net.broker.dispatching:
        net.broker.dispatch_more()
        assert c.conn in net.broker.pending()
        c.events += c.engine.receive_data(c.conn.data_to_send(), net.now)
        got.append([body(e) for e in c.received(link)])
    assert got == [[b"2", b"3"], [b"4"]]
    assert link.link_credit == 0  # the drain's answer came with the last turn
    assert not net.broker.dispatching


def test_an_echo_is_answered_with_what_the_node_holds_as_available() -> None:
    """A consumer's flow with ``echo`` (core spec 2.6.7) gets the broker's flow back, whose
    ``available`` is the messages its node holds not yet taken: how a receiver tells an
    empty queue from a slow one."""
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", b"1", b"2", b"3")
    link = c.receiver("q")  # no credit: nothing sent yet

    def asked() -> int:
        c.events.clear()
        link.flow(link.link_credit, echo=True)
        net.pump()
        (answer,) = [e for e in c.of(a.events.CreditChanged) if e.link is link]
        return int(answer.available)

    assert asked() == 3
    link.flow(2)
    net.pump()
    assert accept_all(c, link) == [b"1", b"2"]
    assert asked() == 1
    link.flow(5)
    net.pump()
    assert accept_all(c, link) == [b"3"]
    assert asked() == 0
