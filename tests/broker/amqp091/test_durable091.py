"""Durable AMQP 0-9-1 topology and persistent messages across a restart, I/O-free: the
broker (amqp_sansio.broker) with the SQLite store (amqp_sansio.adapters.broker.store),
driven by the 0-9-1 engine's client role through bytes, stopped (its store closed) and
started again on the same store (issue 19; 0-9-1 spec ``exchange.declare`` and
``queue.declare`` field ``durable``; docs/amqp091.rst, "Durability").

Kept: virtual hosts, durable exchanges, durable queues that are not exclusive (with their
flags and arguments), bindings whose two ends are durable, and the persistent messages
(delivery-mode 2) of those queues in every virtual host; gone: the rest."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters.broker.store import FILENAME, SQLiteStore, StoreError
from support.amqp091.broker_net import Client

from amqp_sansio.amqp091 import encode_table
from amqp_sansio.broker import Broker, BrokerConfig, Exchange, VirtualHost
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import events as ev

#: The wall clock of support.amqp091.broker_net.Client (seconds since the epoch).
WALL = 1e9
PERSISTENT = spec.BasicProperties(delivery_mode=2)
TRANSIENT = spec.BasicProperties(delivery_mode=1)


def _start(directory: Path, config: BrokerConfig | None = None) -> tuple[Broker, SQLiteStore]:
    """A broker on the store in ``directory``, its topology and messages restored."""
    store = SQLiteStore(directory)
    broker = Broker(config or BrokerConfig(virtual_hosts={"v"}), store=store)
    store.load(broker, WALL)
    return broker, store


def _client(broker: Broker, vhost: str) -> tuple[Client, int]:
    client = Client(broker, virtual_host=vhost)
    assert any(isinstance(e, ev.ConnectionOpened) for e in client.events), client.events
    return client, client.channel()


def _ok(client: Client, channel: int, method: spec.Method) -> None:
    """Send ``method``; its ``-ok`` must come back (no close)."""
    events = client.call(channel, method)
    assert not client.of(ev.ChannelClosed) and not client.of(ev.ConnectionClosed), events
    assert client.of(ev.MethodReceived), events


def _publish(
    client: Client, channel: int, exchange: str, key: str, bodies: list[bytes], props: Any
) -> None:
    for body in bodies:
        client.engine.publish(channel, exchange, key, body, props)
    client.pump()


def _get_all(client: Client, channel: int, queue: str) -> list[tuple[bytes, bool, int]]:
    """Every message ``basic.get`` takes from ``queue`` (acked): body, redelivered,
    delivery-mode."""
    got = []
    while True:
        events = client.call(channel, spec.BasicGet(queue=queue))
        content = [e for e in events if isinstance(e, ev.ContentReceived)]
        if not content:
            assert [e for e in events if isinstance(e, ev.MethodReceived)], events
            return got
        (message,) = content
        got.append((message.body, message.method.redelivered, message.properties.delivery_mode))
        client.call(channel, spec.BasicAck(delivery_tag=message.method.delivery_tag))


def _rows(directory: Path, table: str) -> list[tuple[Any, ...]]:
    """A table of the store (closed: a running broker holds it locked)."""
    with contextlib.closing(sqlite3.connect(directory / FILENAME)) as db:
        return sorted(db.execute(f"SELECT * FROM {table}").fetchall(), key=repr)


def _topology(vhost: VirtualHost) -> dict[str, Any]:
    """What a virtual host has, as a client declared it (the standard exchanges left out)."""
    standard = {"", "amq.direct", "amq.fanout", "amq.topic", "amq.headers", "amq.match"}
    exchanges: dict[str, Exchange] = {n: e for n, e in vhost.exchanges.items() if n not in standard}
    return {
        "exchanges": {
            n: (e.type, e.durable, e.auto_delete, e.internal, e.arguments)
            for n, e in exchanges.items()
        },
        "queues": {
            n: (r.durable, r.exclusive, r.auto_delete, r.arguments)
            for n, r in vhost.records.items()
        },
        "bindings": sorted(
            (b.source, b.destination, b.routing_key, dict(b.arguments))
            for e in vhost.exchanges.values()
            for b in e.bindings
        ),
    }


def _declare_everything(client: Client, ch: int) -> None:
    """Durable and transient exchanges, queues and bindings of every kind."""
    for method in (
        spec.ExchangeDeclare(exchange="logs", type="topic", durable=True),
        spec.ExchangeDeclare(
            exchange="route",
            type="direct",
            durable=True,
            arguments={"alternate-exchange": "unrouted"},
        ),
        spec.ExchangeDeclare(exchange="unrouted", type="fanout", durable=True),
        # (RabbitMQ's internal and auto-delete bits are the spec's reserved ones)
        spec.ExchangeDeclare(exchange="hdrs", type="headers", durable=True, reserved_3=True),
        spec.ExchangeDeclare(exchange="dlx", type="fanout", durable=True, reserved_2=True),
        spec.ExchangeDeclare(exchange="scratch", type="fanout"),
        spec.QueueDeclare(
            queue="orders",
            durable=True,
            arguments={
                "x-message-ttl": 60_000,
                "x-max-length": 100,
                "x-dead-letter-exchange": "dlx",
                "x-dead-letter-routing-key": "dead",
            },
        ),
        spec.QueueDeclare(queue="dead", durable=True),
        spec.QueueDeclare(queue="lazy", durable=True, auto_delete=True),
        spec.QueueDeclare(queue="temp"),
        spec.QueueDeclare(queue="mine", durable=True, exclusive=True),
        spec.QueueBind(queue="orders", exchange="logs", routing_key="*.order"),
        spec.QueueBind(queue="orders", exchange="route", routing_key="o"),
        spec.QueueBind(queue="dead", exchange="dlx"),
        spec.QueueBind(queue="dead", exchange="unrouted"),
        spec.QueueBind(
            queue="orders", exchange="hdrs", arguments={"x-match": "any", "kind": "order"}
        ),
        spec.QueueBind(queue="lazy", exchange="amq.topic", routing_key="#"),
        spec.ExchangeBind(destination="hdrs", source="logs", routing_key="#"),
        # with a transient end: not kept
        spec.QueueBind(queue="temp", exchange="logs", routing_key="#"),
        spec.QueueBind(queue="orders", exchange="scratch"),
        spec.QueueBind(queue="mine", exchange="logs", routing_key="#"),
        spec.ExchangeBind(destination="scratch", source="logs", routing_key="x"),
    ):
        _ok(client, ch, method)


@pytest.mark.parametrize("vhost", ["/", "v"])
def test_durable_topology_survives_a_restart_and_transient_goes(tmp_path: Path, vhost: str) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, vhost)
    _declare_everything(client, ch)
    before = _topology(broker.vhosts[vhost])
    store.close()

    broker, store = _start(tmp_path)
    after = _topology(broker.vhosts[vhost])
    durable = {"logs", "route", "unrouted", "hdrs", "dlx"}
    assert after["exchanges"] == {n: v for n, v in before["exchanges"].items() if n in durable}
    assert after["queues"] == {
        n: v for n, v in before["queues"].items() if n in {"orders", "dead", "lazy"}
    }
    assert after["queues"]["orders"][3] == {
        "x-message-ttl": 60_000,
        "x-max-length": 100,
        "x-dead-letter-exchange": "dlx",
        "x-dead-letter-routing-key": "dead",
    }
    assert after["bindings"] == [
        b
        for b in before["bindings"]
        if b[0] != "scratch"
        and b[1] not in {("queue", "temp"), ("queue", "mine"), ("exchange", "scratch")}
    ]
    assert len(after["bindings"]) == 7
    # The arguments act again: x-max-length, the alternate exchange, the headers binding
    queue = broker.vhosts[vhost].queue("orders")
    assert queue is not None and queue.max_depth == 100 and queue.message_ttl == 60_000
    client, ch = _client(broker, vhost)
    _publish(client, ch, "route", "nowhere", [b"alternate"], PERSISTENT)
    _publish(client, ch, "logs", "eu.order", [b"topic"], PERSISTENT)
    assert [m[0] for m in _get_all(client, ch, "dead")] == [b"alternate"]
    # logs -> orders (*.order) and logs -> hdrs -> orders (no kind header: no match)
    assert [m[0] for m in _get_all(client, ch, "orders")] == [b"topic"]
    # transient ones are gone (404 on a passive declare), durable ones answer it
    client.call(ch, spec.QueueDeclare(queue="temp", passive=True))
    assert client.of(ev.ChannelClosed)[0].reply_code == spec.ReplyCode.NOT_FOUND
    ch = client.channel()
    client.call(ch, spec.ExchangeDeclare(exchange="scratch", type="fanout", passive=True))
    assert client.of(ev.ChannelClosed)[0].reply_code == spec.ReplyCode.NOT_FOUND
    ch = client.channel()
    _ok(client, ch, spec.ExchangeDeclare(exchange="logs", type="topic", passive=True))
    # a redeclaration must be equivalent to the restored one
    client.call(ch, spec.QueueDeclare(queue="orders", durable=True))
    assert client.of(ev.ChannelClosed)[0].reply_code == spec.ReplyCode.PRECONDITION_FAILED
    store.close()


@pytest.mark.parametrize("vhost", ["/", "v"])
def test_persistent_messages_of_durable_queues_survive_in_every_vhost(
    tmp_path: Path, vhost: str
) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, vhost)
    _ok(client, ch, spec.QueueDeclare(queue="jobs", durable=True))
    _ok(client, ch, spec.QueueDeclare(queue="scratch"))
    _ok(client, ch, spec.ExchangeDeclare(exchange="fan", type="fanout", durable=True))
    _ok(client, ch, spec.QueueBind(queue="jobs", exchange="fan"))
    _ok(client, ch, spec.QueueBind(queue="scratch", exchange="fan"))
    _publish(client, ch, "fan", "", [b"p1", b"p2"], PERSISTENT)
    _publish(client, ch, "fan", "", [b"t1"], TRANSIENT)
    _publish(client, ch, "", "jobs", [b"p3"], PERSISTENT)
    _publish(client, ch, "", "jobs", [b"t2"], None)
    store.close()

    broker, store = _start(tmp_path)
    client, ch = _client(broker, vhost)
    # nothing lost, nothing doubled, in order; the transient ones and queue are gone
    assert _get_all(client, ch, "jobs") == [(b"p1", True, 2), (b"p2", True, 2), (b"p3", True, 2)]
    client.call(ch, spec.QueueDeclare(queue="scratch", passive=True))
    assert client.of(ev.ChannelClosed)[0].reply_code == spec.ReplyCode.NOT_FOUND
    ch = client.channel()
    # what was acked does not come back
    _publish(client, ch, "fan", "", [b"p4"], PERSISTENT)
    store.close()
    broker, store = _start(tmp_path)
    client, ch = _client(broker, vhost)
    assert _get_all(client, ch, "jobs") == [(b"p4", True, 2)]
    store.close()
    broker, store = _start(tmp_path)
    assert broker.vhosts[vhost].queue("jobs") is not None
    store.close()
    assert _rows(tmp_path, "messages") == []


@pytest.mark.parametrize("vhost", ["/", "v"])
def test_a_restart_midway_through_consumption(tmp_path: Path, vhost: str) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, vhost)
    _ok(client, ch, spec.QueueDeclare(queue="work", durable=True))
    _publish(client, ch, "", "work", [b"%d" % i for i in range(6)], PERSISTENT)
    _ok(client, ch, spec.BasicQos(prefetch_count=4))
    events = client.call(ch, spec.BasicConsume(queue="work", consumer_tag="c"))
    delivered = [e for e in events if isinstance(e, ev.ContentReceived)]
    assert [d.body for d in delivered] == [b"0", b"1", b"2", b"3"]
    assert not any(d.method.redelivered for d in delivered)
    client.call(ch, spec.BasicAck(delivery_tag=1))
    client.call(ch, spec.BasicAck(delivery_tag=3))
    # stopped with 0 and 2 acked, 1 and 3 unacked, 4 and 5 not delivered yet
    store.close()

    broker, store = _start(tmp_path)
    client, ch = _client(broker, vhost)
    got = _get_all(client, ch, "work")
    assert [body for body, _, _ in got] == [b"1", b"3", b"4", b"5"]
    # every restored message may have been delivered before: redelivered
    assert all(redelivered for _, redelivered, _ in got)
    store.close()
    broker, store = _start(tmp_path)
    assert broker.vhosts[vhost].queue("work").depth == 0  # type: ignore[union-attr]
    store.close()


def test_deleting_forgets_the_records_and_their_bindings(tmp_path: Path) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    _declare_everything(client, ch)
    store.close()
    assert len(_rows(tmp_path, "bindings")) == 7
    assert {r[1] for r in _rows(tmp_path, "queues")} == {"orders", "dead", "lazy"}
    assert _rows(tmp_path, "vhosts") == [("/",), ("v",)]
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    _ok(client, ch, spec.QueueUnbind(queue="orders", exchange="route", routing_key="o"))
    _ok(client, ch, spec.ExchangeDelete(exchange="logs"))  # orders' and hdrs' bindings go
    _ok(client, ch, spec.QueueDelete(queue="dead"))  # the last binding of dlx: auto-deleted
    store.close()
    assert {r[1] for r in _rows(tmp_path, "exchanges")} == {"route", "unrouted", "hdrs"}
    assert {r[1] for r in _rows(tmp_path, "queues")} == {"orders", "lazy"}
    assert [(r[1], r[3]) for r in _rows(tmp_path, "bindings")] == [
        ("amq.topic", "lazy"),
        ("hdrs", "orders"),
    ]
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    _ok(client, ch, spec.ExchangeDelete(exchange="hdrs"))
    _ok(client, ch, spec.QueueDelete(queue="lazy"))
    store.close()
    assert [(r[1], r[3]) for r in _rows(tmp_path, "bindings")] == []
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    # deleted and declared again transient: not kept; the other way round: kept
    _ok(client, ch, spec.QueueDelete(queue="orders"))
    _ok(client, ch, spec.QueueDeclare(queue="orders"))
    _ok(client, ch, spec.ExchangeDelete(exchange="unrouted"))
    _ok(client, ch, spec.ExchangeDeclare(exchange="unrouted", type="direct"))
    _ok(client, ch, spec.QueueDeclare(queue="dead", durable=True))
    store.close()
    assert _rows(tmp_path, "queues") == [("v", "dead", 0, encode_table({}))]
    assert [r[1] for r in _rows(tmp_path, "exchanges")] == ["route"]
    broker, store = _start(tmp_path)
    assert _topology(broker.vhosts["v"])["queues"] == {"dead": (True, False, False, {})}
    assert list(_topology(broker.vhosts["v"])["exchanges"]) == ["route"]
    store.close()


def test_a_durable_queue_deleted_with_messages_leaves_nothing(tmp_path: Path) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    _ok(client, ch, spec.QueueDeclare(queue="q", durable=True, arguments={"x-expires": 5000}))
    _publish(client, ch, "", "q", [b"a", b"b"], PERSISTENT)
    store.close()
    assert len(_rows(tmp_path, "messages")) == 2
    broker, store = _start(tmp_path)
    assert broker.vhosts["v"].queue("q").depth == 2  # type: ignore[union-attr]
    broker.expire(WALL + 6)  # unused for its x-expires: deleted, messages and all
    assert broker.vhosts["v"].queue("q") is None
    store.close()
    assert _rows(tmp_path, "messages") == [] and _rows(tmp_path, "queues") == []


def test_x_expires_starts_again_at_a_restart(tmp_path: Path) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    _ok(client, ch, spec.QueueDeclare(queue="q", durable=True, arguments={"x-expires": 5000}))
    store.close()
    broker, store = _start(tmp_path)
    assert broker.next_expiry() == pytest.approx(WALL + 5)
    broker.expire(WALL + 5)
    assert broker.vhosts["v"].queue("q") is None
    store.close()
    assert _rows(tmp_path, "queues") == []


def test_exclusive_and_auto_delete_queues_follow_rabbitmq(tmp_path: Path) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "/")
    _ok(client, ch, spec.QueueDeclare(queue="excl", durable=True, exclusive=True))
    _ok(client, ch, spec.QueueDeclare(queue="auto", durable=True, auto_delete=True))
    _publish(client, ch, "", "excl", [b"x"], PERSISTENT)
    _publish(client, ch, "", "auto", [b"y"], PERSISTENT)
    store.close()
    assert [r[1] for r in _rows(tmp_path, "queues")] == ["auto"]
    assert [r[1] for r in _rows(tmp_path, "messages")] == ["auto"]
    # the durable auto-delete queue is there until a consumer comes and goes
    broker, store = _start(tmp_path)
    assert broker.vhosts["/"].queue("excl") is None
    client, ch = _client(broker, "/")
    _ok(client, ch, spec.BasicConsume(queue="auto", consumer_tag="c", no_ack=True))
    _ok(client, ch, spec.BasicCancel(consumer_tag="c"))
    assert broker.vhosts["/"].queue("auto") is None
    store.close()
    assert _rows(tmp_path, "queues") == []


def test_a_vhost_is_kept_when_the_configuration_drops_it(tmp_path: Path) -> None:
    broker, store = _start(tmp_path, BrokerConfig(virtual_hosts={"v", "w"}))
    client, ch = _client(broker, "w")
    _ok(client, ch, spec.QueueDeclare(queue="q", durable=True))
    _publish(client, ch, "", "q", [b"kept"], PERSISTENT)
    store.close()
    broker, store = _start(tmp_path, BrokerConfig())
    assert sorted(broker.vhosts) == ["/", "v", "w"]
    client, ch = _client(broker, "w")
    assert _get_all(client, ch, "q") == [(b"kept", True, 2)]
    store.close()


def test_numbering_goes_on_after_every_vhost(tmp_path: Path) -> None:
    """Messages of several virtual hosts restored: new ones are numbered after all of them,
    so none replaces a kept one."""
    broker, store = _start(tmp_path)
    for vhost in ("v", "/"):
        client, ch = _client(broker, vhost)
        _ok(client, ch, spec.QueueDeclare(queue="q", durable=True))
        _publish(client, ch, "", "q", [vhost.encode()], PERSISTENT)
    store.close()
    for round in range(2):
        broker, store = _start(tmp_path)
        for vhost in ("/", "v"):
            client, ch = _client(broker, vhost)
            _publish(client, ch, "", "q", [b"%s%d" % (vhost.encode(), round)], PERSISTENT)
        store.close()
    broker, store = _start(tmp_path)
    for vhost in ("/", "v"):
        client, ch = _client(broker, vhost)
        bodies = [m[0] for m in _get_all(client, ch, "q")]
        assert bodies == [vhost.encode(), b"%s0" % vhost.encode(), b"%s1" % vhost.encode()]
    store.close()


def test_dead_lettering_works_after_a_restart(tmp_path: Path) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    _ok(client, ch, spec.ExchangeDeclare(exchange="dlx", type="fanout", durable=True))
    _ok(client, ch, spec.QueueDeclare(queue="dead", durable=True))
    _ok(client, ch, spec.QueueBind(queue="dead", exchange="dlx"))
    _ok(
        client,
        ch,
        spec.QueueDeclare(queue="q", durable=True, arguments={"x-dead-letter-exchange": "dlx"}),
    )
    _publish(client, ch, "", "q", [b"bad"], PERSISTENT)
    store.close()
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "v")
    events = client.call(ch, spec.BasicGet(queue="q"))
    (message,) = [e for e in events if isinstance(e, ev.ContentReceived)]
    client.call(ch, spec.BasicReject(delivery_tag=message.method.delivery_tag, requeue=False))
    store.close()
    broker, store = _start(tmp_path)  # the dead-lettered copy is durable too
    client, ch = _client(broker, "v")
    assert [m[0] for m in _get_all(client, ch, "dead")] == [b"bad"]
    assert _get_all(client, ch, "q") == []
    store.close()


def test_records_that_no_longer_apply_are_forgotten(tmp_path: Path) -> None:
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "/")
    _ok(client, ch, spec.QueueDeclare(queue="news", durable=True))
    _ok(client, ch, spec.ExchangeDeclare(exchange="x", type="fanout", durable=True))
    _ok(client, ch, spec.QueueBind(queue="news", exchange="x"))
    _publish(client, ch, "", "news", [b"m"], PERSISTENT)
    store.close()
    # "news" is now a topic of the 1.0 side: the queue, its binding and message go
    broker, store = _start(tmp_path, BrokerConfig(topics=frozenset({"news"})))
    assert broker.vhosts["/"].queue("news") is None
    store.close()
    assert _rows(tmp_path, "queues") == [] and _rows(tmp_path, "bindings") == []
    assert _rows(tmp_path, "messages") == []
    assert [r[1] for r in _rows(tmp_path, "exchanges")] == ["x"]


def test_a_second_format_store_is_migrated(tmp_path: Path) -> None:
    """A store a broker of the second format wrote (no topology) opens, its messages come
    back, and it keeps the topology from then on."""
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute(
            "CREATE TABLE messages (seq INTEGER PRIMARY KEY, queue TEXT NOT NULL,"
            " data BLOB NOT NULL, delivery_count INTEGER NOT NULL, expires REAL,"
            " subscription INTEGER)"
        )
        db.execute(
            "CREATE TABLE subscriptions (id INTEGER PRIMARY KEY, container TEXT NOT NULL,"
            " name TEXT NOT NULL, source BLOB NOT NULL, answered BLOB NOT NULL)"
        )
        db.execute("INSERT INTO meta VALUES ('format', 'amqp-sansio broker store 2')")
        old = Broker()
        old.vhosts["/"].declare_queue("q", durable=True)
        old.vhosts["/"].publish("", "q", PERSISTENT, b"old")
        (message,) = old.nodes["q"].available.values()  # type: ignore[attr-defined]
        db.execute("INSERT INTO messages VALUES (7, 'q', ?, 0, NULL, NULL)", (message.data,))
        db.commit()
    broker, store = _start(tmp_path)
    client, ch = _client(broker, "/")
    # (the queue is back as the 1.0 side makes queues; a declare adopts it, recorded now)
    _ok(client, ch, spec.QueueDeclare(queue="q", durable=True))
    assert _get_all(client, ch, "q") == [(b"old", True, 2)]
    _ok(client, ch, spec.QueueDeclare(queue="q2", durable=True))
    store.close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        (fmt,) = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    assert fmt == "amqp-sansio broker store 3"
    broker, store = _start(tmp_path)
    assert broker.vhosts["/"].queue("q2") is not None
    assert broker.vhosts["/"].records["q"].durable
    store.close()


@pytest.mark.parametrize(
    ("table", "row", "named"),
    [
        ("vhosts", "(x'01')", "vhost"),
        ("exchanges", "('/', 'x', 'fanout', 0, 2, x'')", "exchange"),
        ("exchanges", "('/', 'x', 'fanout', 0, 0, x'00')", "exchange"),
        ("queues", "('/', 'q', 0, 'text')", "queue"),
        ("queues", "('/', x'71', 0, x'00000000')", "queue"),
        ("bindings", "('/', 'amq.fanout', 'node', 'q', '', x'00000000')", "binding"),
    ],
)
def test_corrupt_topology_rows_are_a_clear_error(
    tmp_path: Path, table: str, row: str, named: str
) -> None:
    SQLiteStore(tmp_path).close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        db.execute(f"INSERT INTO {table} VALUES {row}")
        db.commit()
    store = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match=f"corrupt: {named}"):
        store.load(Broker(store=store), WALL)
    store.close()


def test_without_a_durable_store_nothing_is_recorded() -> None:
    """The default store (in memory) takes no topology: a broker without ``--store``
    declares as before."""
    broker = Broker(BrokerConfig(virtual_hosts={"v"}))
    client, ch = _client(broker, "v")
    _declare_everything(client, ch)
    assert broker.vhosts["v"]._topology is None


def test_messages_of_a_vhost_row_of_the_wrong_type_are_a_clear_error(tmp_path: Path) -> None:
    SQLiteStore(tmp_path).close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        db.execute("INSERT INTO messages VALUES (1, 'q', x'00', 0, NULL, NULL, x'76')")
        db.commit()
    store = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="corrupt: vhost b'v'"):
        store.load(Broker(store=store), WALL)
    store.close()


def test_a_missing_topology_table_is_a_clear_error(tmp_path: Path) -> None:
    SQLiteStore(tmp_path).close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        db.execute("DROP TABLE bindings")
        db.commit()
    store = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="corrupt: no such table: bindings"):
        store.load(Broker(store=store), WALL)
    store.close()


def test_records_of_a_vhost_the_store_has_not_are_forgotten(tmp_path: Path) -> None:
    """Rows naming a virtual host with no row of its own (a store edited by hand): they,
    and the messages of their queues, are dropped at load."""
    SQLiteStore(tmp_path).close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db:
        empty = encode_table({})
        db.execute("INSERT INTO exchanges VALUES ('gone', 'x', 'fanout', 0, 0, ?)", (empty,))
        db.execute("INSERT INTO queues VALUES ('gone', 'q', 0, ?)", (empty,))
        db.execute("INSERT INTO bindings VALUES ('gone', 'x', 'queue', 'q', '', ?)", (empty,))
        old = Broker()
        old.vhosts["/"].declare_queue("q", durable=True)
        old.vhosts["/"].publish("", "q", PERSISTENT, b"lost")
        (message,) = old.nodes["q"].available.values()  # type: ignore[attr-defined]
        db.execute(
            "INSERT INTO messages VALUES (1, 'q', ?, 0, NULL, NULL, 'gone')", (message.data,)
        )
        db.commit()
    broker, store = _start(tmp_path)
    assert "gone" not in broker.vhosts and broker.depth == 0
    store.close()
    for table in ("exchanges", "queues", "bindings", "messages"):
        assert _rows(tmp_path, table) == [], table
