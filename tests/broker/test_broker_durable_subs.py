"""Topic subscriptions that outlive their links (core spec 3.5.3, 3.5.5 terminus
durability, 3.5.6 expiry policy, 2.6.6 detach without closing, 2.6.13 resuming): our engine
as the client against the core broker in memory, on a simulated clock
(tests/support/broker_net.py)."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from amqp_sansio.adapters.broker.store import FILENAME, SQLiteStore, StoreError
from hypothesis import given, settings
from hypothesis import strategies as st
from support.broker_net import Client, Net, body

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig
from amqp_sansio.definitions.amqp10 import messaging

NEVER = messaging.TerminusExpiryPolicy.NEVER
DURABLE = messaging.TerminusDurability.UNSETTLED_STATE


def source(
    address: str = "topic/x",
    policy: messaging.TerminusExpiryPolicy = NEVER,
    *,
    timeout: int = 0,
    durable: messaging.TerminusDurability = DURABLE,
    **fields: object,
) -> a.Source:
    return a.Source(
        address=address, durable=durable, expiry_policy=policy, timeout=timeout, **fields
    )  # type: ignore[arg-type]


def subscribe(
    client: Client, name: str = "sub1", credit: int = 0, src: a.Source | None = None
) -> a.Receiver:
    session = client.session or client.begin()
    link = session.attach_receiver(name, source=src or source())
    client.net.pump()
    if credit and link.state is a.LinkState.ATTACHED:
        link.flow(credit)
        client.net.pump()
    return link


def publish(client: Client, *values: bytes, address: str = "topic/x") -> None:
    sender = client.sender(address)
    for v in values:
        client.send(sender, a.Message(body=v))


def take(client: Client, link: a.Receiver, *, settle: bool = True) -> list[object]:
    got = client.received(link)
    if settle:
        for e in got:
            link.settle(e.delivery, a.Accepted())
        client.net.pump()
    return [body(e) for e in got]


def headers(client: Client, link: a.Receiver) -> list[tuple[object, int, bool]]:
    out = []
    for e in client.received(link):
        m = a.Message.decode(e.data)
        h = m.header or a.Header()
        out.append((body(e), h.delivery_count, h.first_acquirer))
        link.settle(e.delivery, a.Accepted())
    client.net.pump()
    return out


def test_answer_says_what_the_broker_does() -> None:
    net = Net()
    c = net.connect()
    sub = subscribe(c)
    answered = sub.remote.source  # type: ignore[union-attr]
    assert answered.expiry_policy is NEVER
    # No durable store: nothing survives a restart, so durability is none.
    assert answered.durable is messaging.TerminusDurability.NONE
    q = c.receiver("q", source=source("q"))
    assert q.remote.source.expiry_policy is messaging.TerminusExpiryPolicy.LINK_DETACH  # type: ignore[union-attr]
    assert q.remote.source.durable is messaging.TerminusDurability.NONE  # type: ignore[union-attr]


@pytest.mark.parametrize("same_session", [False, True])
def test_detach_publish_reattach_resumes_unsettled_first(same_session: bool) -> None:
    net = Net()
    sub_client, pub = net.connect(), net.connect()
    sub = subscribe(sub_client, credit=10)
    publish(pub, b"0", b"1", b"2")
    got = sub_client.received(sub)
    assert [body(e) for e in got] == [b"0", b"1", b"2"]
    sub.settle(got[0].delivery, a.Accepted())  # 1 and 2 stay unsettled
    sub.detach(closed=False)
    net.pump()
    (detached,) = sub_client.of(a.events.LinkDetached)
    assert detached.closed is False
    publish(pub, b"3", b"4")
    assert [s.key for s in net.broker.subscriptions.values()] == [("c0", "sub1")]
    if same_session:
        again = subscribe(sub_client, credit=10)
        client = sub_client
    else:
        net.lose(sub_client)
        client = net.connect(container_id="c0")
        again = subscribe(client, credit=10)
    assert again.state is a.LinkState.ATTACHED
    # The unsettled ones come back first, marked as possible duplicates (delivery-count
    # 1, first-acquirer false), then the rest (published with no header: count 0).
    assert headers(client, again) == [
        (b"1", 1, False),
        (b"2", 1, False),
        (b"3", 0, False),
        (b"4", 0, False),
    ]


def test_unsettled_map_in_the_reattach_is_honoured() -> None:
    net = Net()
    c, pub = net.connect(), net.connect()
    sub = subscribe(c, credit=10)
    publish(pub, b"0", b"1", b"2")
    got = c.received(sub)
    sub.detach(closed=False)
    net.pump()
    # The client decided the first (accepted) and the second (rejected) while detached,
    # and tells the broker so in its re-attach's unsettled map (2.6.13); the third it
    # holds with no state.
    got[0].delivery.local_state = a.Accepted()
    got[1].delivery.local_state = a.Rejected()
    again = subscribe(c, credit=10)
    assert again.remote is not None
    assert set(again.remote.unsettled or {}) == {e.delivery.tag for e in got}
    assert headers(c, again) == [(b"2", 1, False)]
    assert net.broker.nodes["topic/x"].depth == 0
    # The carried-over deliveries are settled by the broker.
    assert all(d.remote_settled for d in again.unsettled.values())


def test_settled_on_the_detached_link_is_not_redelivered() -> None:
    """A detached link's deliveries live on (2.6.4): the client may still settle them, and
    the outcome applies at once."""
    net = Net()
    c, pub = net.connect(), net.connect()
    sub = subscribe(c, credit=10)
    publish(pub, b"0", b"1", b"2")
    got = c.received(sub)
    sub.detach(closed=False)
    net.pump()
    sub.settle(got[0].delivery, a.Accepted())
    sub.update(got[1].delivery, a.Released())  # back to the buffer, not counted
    sub.update(
        got[2].delivery, messaging.Received(section_number=0, section_offset=0)
    )  # no outcome
    net.pump()
    (kept,) = net.broker.subscriptions.values()
    assert list(kept.unsettled) == [got[2].delivery.tag]
    assert got[1].delivery.remote_settled  # the broker settled what it took back
    net.lose(c)
    client = net.connect(container_id="c0")
    again = subscribe(client, credit=10)
    assert headers(client, again) == [(b"1", 0, False), (b"2", 1, False)]


def test_close_deletes_the_subscription() -> None:
    net = Net()
    c, pub = net.connect(), net.connect()
    sub = subscribe(c, credit=10)
    sub.detach(closed=True)
    net.pump()
    assert net.broker.subscriptions == {}
    publish(pub, b"lost")
    again = subscribe(c, credit=10)
    assert take(c, again) == []


def test_changed_address_or_filter_replaces_the_subscription() -> None:
    net = Net()
    c, pub = net.connect(), net.connect()
    sub = subscribe(c)
    sub.detach(closed=False)
    net.pump()
    publish(pub, b"old")
    assert net.broker.nodes["topic/x"].depth == 1
    other = subscribe(c, credit=10, src=source("topic/y"))
    assert other.state is a.LinkState.ATTACHED
    assert net.broker.nodes["topic/x"].depth == 0  # the old buffer went
    (kept,) = net.broker.subscriptions.values()
    assert kept.topic.address == "topic/y"


def test_attach_without_source_finds_the_kept_subscription_to_unsubscribe() -> None:
    """Qpid JMS unsubscribes so: an attach of the subscription's name with no source, whose
    answer carries the kept source, then a closing detach."""
    net = Net()
    c, pub = net.connect(), net.connect()
    sub = subscribe(c)
    sub.detach(closed=False)
    net.pump()
    publish(pub, b"waiting")
    lookup = c.session.attach_receiver("sub1", source=None)  # type: ignore[union-attr]
    net.pump()
    assert lookup.state is a.LinkState.ATTACHED
    assert lookup.remote.source.address == "topic/x"  # type: ignore[union-attr]
    lookup.detach(closed=True)
    net.pump()
    assert net.broker.subscriptions == {}
    # With nothing kept under that name, the attach is refused as before.
    missing = c.session.attach_receiver("sub1", source=None)  # type: ignore[union-attr]
    net.pump()
    assert missing.remote.source is None  # type: ignore[union-attr]
    assert c.of(a.events.LinkDetached)[-1].error.condition == "amqp:invalid-field"


def test_second_live_attach_of_the_same_subscription_is_refused() -> None:
    net = Net()
    first = net.connect(container_id="same")
    subscribe(first)
    second = net.connect(container_id="same")
    link = subscribe(second)
    assert link.remote.source is None  # type: ignore[union-attr]
    (detached,) = second.of(a.events.LinkDetached)
    assert detached.error.condition == "amqp:resource-locked"


@pytest.mark.parametrize(
    ("policy", "kept_after_detach", "kept_after_end", "kept_after_close"),
    [
        (messaging.TerminusExpiryPolicy.LINK_DETACH, False, False, False),
        (messaging.TerminusExpiryPolicy.SESSION_END, True, False, False),
        (messaging.TerminusExpiryPolicy.CONNECTION_CLOSE, True, True, False),
        (NEVER, True, True, True),
    ],
)
def test_expiry_policies(
    policy: messaging.TerminusExpiryPolicy,
    kept_after_detach: bool,
    kept_after_end: bool,
    kept_after_close: bool,
) -> None:
    net = Net()
    c = net.connect()
    session = c.begin()
    link = session.attach_receiver("s", source=source(policy=policy))
    net.pump()
    link.detach(closed=False)
    net.pump()
    assert bool(net.broker.subscriptions) is kept_after_detach
    session.end()
    net.pump()
    assert bool(net.broker.subscriptions) is kept_after_end
    c.engine.close()
    net.pump()
    assert bool(net.broker.subscriptions) is kept_after_close


def test_session_end_starts_the_timer_of_the_most_recent_session_only() -> None:
    net = Net()
    c = net.connect()
    first = c.begin()
    link = first.attach_receiver(
        "s", source=source(policy=messaging.TerminusExpiryPolicy.SESSION_END)
    )
    net.pump()
    link.detach(closed=False)
    net.pump()
    second = c.engine.begin()
    net.pump()
    second.end()  # not the subscription's session
    net.pump()
    assert net.broker.subscriptions
    first.end()
    net.pump()
    assert not net.broker.subscriptions


@pytest.mark.parametrize("policy", list(messaging.TerminusExpiryPolicy)[:3])
def test_timeout_counts_on_the_injected_clock(
    policy: messaging.TerminusExpiryPolicy,
) -> None:
    net = Net()
    c, pub = net.connect(), net.connect()
    subscribe(c, src=source(policy=policy, timeout=60))
    net.lose(c)  # the link, its session and its connection all go
    assert net.broker.next_expiry() == pytest.approx(net.wall + 60)
    publish(pub, b"kept")
    net.advance(59)
    assert net.broker.subscriptions
    again_client = net.connect(container_id="c0")
    again = subscribe(again_client, credit=10, src=source(policy=policy, timeout=60))
    assert take(again_client, again) == [b"kept"]  # re-attached in time: the timer stops
    net.advance(2)  # (past the first timer: it was stopped)
    assert net.broker.subscriptions
    assert net.broker.next_expiry() is None
    net.lose(again_client)
    net.advance(61)
    assert not net.broker.subscriptions
    assert net.broker.nodes["topic/x"].depth == 0


def test_limits() -> None:
    net = Net(
        BrokerConfig(
            max_subscriptions=3, max_subscriptions_per_container=2, max_subscription_depth=2
        )
    )
    c, d, e = net.connect(), net.connect(), net.connect()
    assert subscribe(c, "a").state is a.LinkState.ATTACHED
    assert subscribe(c, "b").state is a.LinkState.ATTACHED
    refused = subscribe(c, "c")
    assert c.of(a.events.LinkDetached)[-1].error.condition == "amqp:resource-limit-exceeded"
    assert refused.remote.source is None  # type: ignore[union-attr]
    assert subscribe(d, "a").state is a.LinkState.ATTACHED
    subscribe(e, "a")
    assert e.of(a.events.LinkDetached)[-1].error.condition == "amqp:resource-limit-exceeded"
    # A plain topic receiver (source expiring at its detach) is not a kept subscription.
    plain = e.receiver("topic/x", source=source(policy=messaging.TerminusExpiryPolicy.LINK_DETACH))
    assert plain.state is a.LinkState.ATTACHED
    publish(e, b"1", b"2", b"3")
    # The three subscriptions and the plain receiver's buffer hold two each.
    assert net.broker.overflowed == 4
    assert net.broker.nodes["topic/x"].depth == 4 * 2


def test_default_limits_are_set() -> None:
    config = BrokerConfig()
    assert config.max_subscriptions == 10_000
    assert config.max_subscriptions_per_container == 1000
    assert config.max_subscription_depth == 100_000


# -- with the durable store (adapters/broker/store.py) ------------------------------------


def _restart(directory: Path, wall: float = 1_700_000_000.0) -> tuple[Net, SQLiteStore]:
    store = SQLiteStore(directory)
    broker = Broker(store=store)
    store.load(broker, wall)
    net = Net(broker=broker)
    net.wall = wall
    return net, store


def _durable(value: bytes) -> a.Message:
    return a.Message(header=a.Header(durable=True), body=value)


def test_durable_subscription_survives_a_restart(tmp_path: Path) -> None:
    net, store = _restart(tmp_path)
    sub_client, pub = net.connect(container_id="app"), net.connect()
    sub = subscribe(sub_client, credit=10)
    assert sub.remote.source.durable is DURABLE  # type: ignore[union-attr]
    sender = pub.sender("topic/x")
    pub.send(sender, _durable(b"0"))
    got = sub_client.received(sub)  # unsettled when the broker stops
    assert [body(e) for e in got] == [b"0"]
    sub.detach(closed=False)
    net.pump()
    for value in (b"1", b"2"):
        pub.send(sender, _durable(value))
    pub.send(sender, a.Message(body=b"not durable"))
    store.close()

    net, store = _restart(tmp_path)
    (kept,) = net.broker.subscriptions.values()
    assert kept.key == ("app", "sub1") and kept.consumer is None
    client = net.connect(container_id="app")
    again = subscribe(client, credit=10)
    assert again.state is a.LinkState.ATTACHED
    assert take(client, again) == [b"0", b"1", b"2"]
    # Accepted: gone from the store too.
    again.detach(closed=True)
    net.pump()
    store.close()
    net, store = _restart(tmp_path)
    assert net.broker.subscriptions == {}
    store.close()


def test_configuration_durability_keeps_the_subscription_not_its_messages(
    tmp_path: Path,
) -> None:
    net, store = _restart(tmp_path)
    c, pub = net.connect(container_id="app"), net.connect()
    sub = subscribe(c, src=source(durable=messaging.TerminusDurability.CONFIGURATION))
    assert sub.remote.source.durable is messaging.TerminusDurability.CONFIGURATION  # type: ignore[union-attr]
    sub.detach(closed=False)
    net.pump()
    pub.send(pub.sender("topic/x"), _durable(b"1"))
    store.close()
    net, store = _restart(tmp_path)
    assert len(net.broker.subscriptions) == 1
    assert net.broker.nodes["topic/x"].depth == 0
    store.close()


def test_restored_subscription_expires_by_its_timeout(tmp_path: Path) -> None:
    net, store = _restart(tmp_path)
    c = net.connect(container_id="app")
    subscribe(
        c,
        src=source(policy=messaging.TerminusExpiryPolicy.CONNECTION_CLOSE, timeout=30),
    )
    store.close()
    net, store = _restart(tmp_path, wall=1_700_000_100.0)
    assert net.broker.next_expiry() == pytest.approx(1_700_000_130.0)
    net.advance(31)
    assert net.broker.subscriptions == {}
    store.close()
    net, store = _restart(tmp_path)
    assert net.broker.subscriptions == {}
    store.close()


def test_a_first_format_store_is_migrated(tmp_path: Path) -> None:
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute(
            "CREATE TABLE messages (seq INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
            " data BLOB NOT NULL, delivery_count INTEGER NOT NULL, expires REAL)"
        )
        db.execute("INSERT INTO meta VALUES ('format', 'amqp-sansio broker store 1')")
        db.execute("INSERT INTO messages VALUES (7, 'q', ?, 0, NULL)", (_durable(b"old").encode(),))
        db.commit()
    net, store = _restart(tmp_path)
    c = net.connect()
    r = c.receiver("q", 10)
    assert take(c, r) == [b"old"]
    # ... and keeps subscriptions from now on.
    subscribe(net.connect(container_id="app"))
    store.close()
    net, store = _restart(tmp_path)
    assert len(net.broker.subscriptions) == 1
    store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        (fmt,) = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    assert fmt == "amqp-sansio broker store 3"


def test_corrupt_subscription_rows_are_a_clear_error(tmp_path: Path) -> None:
    SQLiteStore(tmp_path).close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        db.execute("INSERT INTO subscriptions VALUES (1, 'c', 'n', 'text', x'00')")
        db.commit()
    store = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="subscription 1"):
        store.load(Broker(store=store), 0.0)
    store.close()


def test_undecodable_or_repeated_subscription_records_are_dropped(tmp_path: Path) -> None:
    SQLiteStore(tmp_path).close()
    good = a.encode(source())
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        db.execute("INSERT INTO subscriptions VALUES (1, 'c', 'n', x'ff', x'ff')")
        db.execute("INSERT INTO subscriptions VALUES (2, 'c', 'm', ?, ?)", (good, good))
        db.execute("INSERT INTO subscriptions VALUES (3, 'c', 'm', ?, ?)", (good, good))
        db.execute(
            "INSERT INTO messages (seq, queue, data, delivery_count, expires, subscription)"
            " VALUES (3, 'topic/x', ?, 0, NULL, 1)",
            (_durable(b"x").encode(),),
        )
        db.commit()
    net, store = _restart(tmp_path)
    assert list(net.broker.subscriptions) == [("c", "m")]
    store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        assert list(db.execute("SELECT id FROM subscriptions")) == [(2,)]
        assert list(db.execute("SELECT seq FROM messages")) == []


# -- property: nothing lost, nothing accepted twice ----------------------------------------

_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(1, 4)),
        st.tuples(st.just("accept"), st.integers(0, 3)),
        st.tuples(st.sampled_from(["detach", "lose", "end", "attach"]), st.just(0)),
    ),
    max_size=25,
)


class _Subscriber:
    """The world of :func:`test_a_never_expiring_subscription_loses_nothing`: a publisher
    and a durable subscriber ("app") whose link comes and goes; one method per step."""

    def __init__(self, chunk: int | None) -> None:
        self.net = net = Net(chunk=chunk)
        self.pub = net.connect()
        self.sender = self.pub.sender("topic/x")
        self.client = net.connect(container_id="app")
        self.link: a.Receiver | None = subscribe(self.client, credit=100)
        self.published: list[bytes] = []
        self.accepted: list[bytes] = []
        self.firsts: list[bytes] = []
        self.held: list[
            a.events.DeliveryReceived
        ] = []  # received on the current link, not settled yet

    def collect(self, count: int | None) -> None:
        link = self.link
        if link is None:
            return
        held = self.held
        for e in self.client.received(link):
            header = a.Message.decode(e.data).header
            if header is None or header.delivery_count == 0:
                self.firsts.append(body(e))
            held.append(e)
        take = len(held) if count is None else min(count, len(held))
        for e in held[:take]:
            link.settle(e.delivery, a.Accepted())
            self.accepted.append(body(e))
        del held[:take]
        self.net.pump()

    def publish(self, n: int) -> None:
        for _ in range(n):
            value = b"%d" % len(self.published)
            self.published.append(value)
            self.pub.send(self.sender, a.Message(body=value))

    def attach(self, n: int) -> None:
        if self.link is not None:
            return
        client = self.client
        if client.gone or client.engine.state is not a.ConnectionState.OPENED:
            client = self.client = self.net.connect(container_id="app")
            client.session = None
        self.link = subscribe(client, credit=100)

    def detach(self, n: int) -> None:
        if self.link is None:
            return
        self.collect(0)
        self.link.detach(closed=False)
        self.net.pump()
        self.link = None

    def lose(self, n: int) -> None:
        if self.link is None:
            return
        self.collect(0)
        self.net.lose(self.client)
        self.link = None

    def end(self, n: int) -> None:
        if self.link is None:
            return
        self.collect(0)
        self.client.session.end()  # type: ignore[union-attr]
        self.net.pump()
        self.client.session = None
        self.link = None


_SUBSCRIBER_STEPS = {
    "publish": _Subscriber.publish,
    "accept": _Subscriber.collect,
    "attach": _Subscriber.attach,
    "detach": _Subscriber.detach,
    "lose": _Subscriber.lose,
    "end": _Subscriber.end,
}


@settings(max_examples=60, deadline=None)
@given(steps=_STEPS, chunk=st.sampled_from([None, 1, 7]))
def test_a_never_expiring_subscription_loses_nothing(
    steps: list[tuple[str, int]], chunk: int | None
) -> None:
    """Whatever the subscriber does (detach without closing, lose its connection, end its
    session, come back) every message published after it subscribed is accepted exactly
    once in the end, each first delivery in publication order."""
    sub = _Subscriber(chunk)
    net, published, accepted, firsts = sub.net, sub.published, sub.accepted, sub.firsts
    for kind, n in steps:
        _SUBSCRIBER_STEPS[kind](sub, n)
        if sub.link is None:
            sub.held.clear()  # the broker sends them again when the subscriber is back
    if sub.link is None:
        client = sub.client
        if client.gone or client.engine.state is not a.ConnectionState.OPENED:
            sub.client = net.connect(container_id="app")
        sub.link = subscribe(sub.client, credit=1000)
    sub.collect(None)
    assert sorted(accepted, key=int) == published  # each once, none lost
    assert firsts == [m for m in published if m in firsts]  # first deliveries in order
    assert net.broker.nodes["topic/x"].depth == 0


def test_expiry_with_unsettled_deliveries_and_the_per_container_count() -> None:
    net = Net()
    c, pub = net.connect(container_id="app"), net.connect()
    link_detach = messaging.TerminusExpiryPolicy.LINK_DETACH
    first = subscribe(c, "one", credit=10, src=source(policy=link_detach, timeout=5))
    subscribe(c, "two", src=source(policy=NEVER))
    publish(pub, b"0")
    assert len(c.received(first)) == 1  # unsettled when its link goes
    first.detach(closed=False)
    net.pump()
    assert net.broker.next_expiry() == pytest.approx(net.wall + 5)
    first = subscribe(c, "one", credit=10, src=source(policy=link_detach, timeout=5))
    assert net.broker.next_expiry() is None  # re-attached: the timer stopped
    assert len(c.received(first)) == 1  # the unsettled one, again
    first.detach(closed=False)
    net.pump()
    assert "<Subscription ('app', 'one') 'topic/x' suspended>" in repr(
        net.broker.subscriptions[("app", "one")]
    )
    net.advance(6)
    assert list(net.broker.subscriptions) == [("app", "two")]
    assert net.broker._per_container == {"app": 1}
    (buffer,) = net.broker.nodes["topic/x"].subscriptions.values()  # type: ignore[attr-defined]
    assert buffer.depth == 1  # "two" keeps its copy; "one"'s unsettled copy went


def test_deleting_the_topic_deletes_its_subscriptions() -> None:
    net = Net()
    c, d, pub = net.connect(), net.connect(), net.connect()
    suspended = subscribe(c, "s")
    suspended.detach(closed=False)
    net.pump()
    attached = subscribe(d, "t", credit=10)
    publish(pub, b"x")
    topic = net.broker.nodes["topic/x"]
    net.broker.delete_node(topic)
    net.pump()
    assert net.broker.subscriptions == {}
    assert topic.depth == 0
    (gone,) = d.of(a.events.LinkDetached)
    assert gone.error.condition == "amqp:resource-deleted" and attached.state is not (
        a.LinkState.ATTACHED
    )


def test_queue_limits_apply_to_a_subscription_buffer() -> None:
    net = Net(BrokerConfig(max_queue_depth=1, max_subscription_depth=None))
    c, pub = net.connect(), net.connect()
    subscribe(c)
    publish(pub, b"1", b"2")
    assert net.broker.overflowed == 1
    assert net.broker.nodes["topic/x"].depth == 1


def test_a_subscription_with_a_filter_resumes_after_a_restart(tmp_path: Path) -> None:
    selector = {
        a.Symbol("jms-selector"): a.Described(
            a.Symbol("apache.org:selector-filter:string"), "colour = 'red'"
        )
    }
    net, store = _restart(tmp_path)
    c, pub = net.connect(container_id="app"), net.connect()
    subscribe(c, src=source(filter=selector)).detach(closed=False)
    net.pump()
    red = a.Message(
        header=a.Header(durable=True), application_properties={"colour": "red"}, body=b"kept"
    )
    pub.send(pub.sender("topic/x"), red)  # (selected by the filter, where it applies)
    store.close()
    net, store = _restart(tmp_path)
    client = net.connect(container_id="app")
    again = subscribe(client, credit=10, src=source(filter=selector))
    assert take(client, again) == [b"kept"]  # the same filter: resumed, not replaced
    store.close()


def test_selector_of_a_suspended_and_restored_subscription(tmp_path: Path) -> None:
    selector = {
        a.Symbol("jms-selector"): a.Described(
            a.Symbol("apache.org:selector-filter:string"), "colour = 'red'"
        )
    }
    net, store = _restart(tmp_path)
    c, pub = net.connect(container_id="app"), net.connect()
    subscribe(c, src=source(filter=selector)).detach(closed=False)
    net.pump()
    sender = pub.sender("topic/x")
    for colour in ("red", "blue"):
        pub.send(
            sender,
            a.Message(
                header=a.Header(durable=True),
                application_properties={"colour": colour},
                body=colour.encode(),
            ),
        )
    store.close()
    net, store = _restart(tmp_path)
    pub = net.connect()
    sender = pub.sender("topic/x")
    for colour in ("blue", "red"):
        pub.send(
            sender,
            a.Message(application_properties={"colour": colour}, body=colour.encode() + b"2"),
        )
    client = net.connect(container_id="app")
    again = subscribe(client, credit=10, src=source(filter=selector))
    assert take(client, again) == [b"red", b"red2"]
    store.close()
