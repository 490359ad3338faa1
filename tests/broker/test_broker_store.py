"""The durable message store (amqp_sansio.adapters.broker.store) under the core broker, on a
simulated clock (tests/support/broker_net.py): what is written when, what a new broker on the same
directory gets back, and the errors of a store that cannot be used."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
from amqp_sansio.adapters.broker.store import FILENAME, SQLiteStore, StoreError
from support.broker_net import Net, accept_all, controller, declare, discharge, msg, publish

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig, Queue

WALL = 1_700_000_000.0  # Net's wall clock at start


def rows(directory: Path) -> list[tuple[int, str, int]]:
    """(seq, queue, delivery_count) of the stored messages, read by a second connection
    (the store holds its lock: only once it is closed)."""
    with contextlib.closing(sqlite3.connect(directory / FILENAME)) as db:
        return list(db.execute("SELECT seq, queue, delivery_count FROM messages ORDER BY seq"))


def restart(
    directory: Path, config: BrokerConfig | None = None, wall: float = WALL
) -> tuple[Net, SQLiteStore]:
    store = SQLiteStore(directory)
    broker = Broker(config, store=store)
    store.load(broker, wall)
    net = Net(broker=broker)
    net.wall = wall
    return net, store


def drain(net: Net, address: str, credit: int = 100) -> list[object]:
    c = net.connect()
    return accept_all(c, c.receiver(address, credit))


def test_durable_messages_survive_in_order_with_priorities(tmp_path: Path) -> None:
    net, store = restart(tmp_path)
    p = net.connect()
    s = p.sender("q")
    for value, prio in [(b"a", 4), (b"b", 7), (b"c", 4), (b"d", 7)]:
        d = p.send(s, msg(value, durable=True, priority=prio))
        assert d.remote_settled
    publish(p, "q", b"not durable")
    store.close()
    assert [r[1] for r in rows(tmp_path)] == ["q"] * 4  # the non-durable one is not kept
    net, store = restart(tmp_path)
    assert drain(net, "q") == [b"b", b"d", b"a", b"c"]
    # New messages come after the restored ones.
    publish(net.connect(), "q", b"e", b"f", durable=True)
    store.close()
    net, store = restart(tmp_path)
    assert drain(net, "q") == [b"e", b"f"]
    store.close()
    assert rows(tmp_path) == []


def test_accepted_and_put_then_taken_in_one_input_never_written(tmp_path: Path) -> None:
    net, store = restart(tmp_path)
    c = net.connect()
    r = c.receiver("q", 10)  # waiting: each message goes straight out
    p = net.connect()
    publish(p, "q", b"1", b"2", durable=True)
    writes = []
    original = store.flush

    def flush() -> None:
        writes.append((len(store._puts), len(store._deletes)))
        original()

    store.flush = flush  # type: ignore[method-assign]
    assert accept_all(c, r) == [b"1", b"2"]
    assert any(w == (0, 2) for w in writes)  # the accepts: stored before, removed now
    store.close()
    assert rows(tmp_path) == []


def test_delivery_count_and_annotations_are_kept(tmp_path: Path) -> None:
    net, store = restart(tmp_path)
    publish(net.connect(), "q", b"x", durable=True)
    c = net.connect()
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    r.settle(
        got.delivery,
        a.Modified(delivery_failed=True, message_annotations={a.Symbol("x-opt-k"): 1}),
    )
    net.pump()
    c2 = net.connect()
    r2 = c2.receiver("q", 1)
    c2.received(r2)
    net.lose(c2)  # out with a consumer when its connection went: counted again
    store.close()
    assert rows(tmp_path)[0][2] == 2
    net, store = restart(tmp_path)
    c = net.connect()
    (got,) = c.received(c.receiver("q", 1))
    m = a.Message.decode(got.data)
    assert m.header is not None and m.header.delivery_count == 2 and m.header.durable
    assert m.message_annotations == {"x-opt-k": 1}
    store.close()


def test_expiry_is_kept_and_respected_at_load(tmp_path: Path) -> None:
    net, store = restart(tmp_path)
    p = net.connect()
    publish(p, "q", b"short", durable=True, ttl=10_000)
    publish(p, "q", b"long", durable=True, ttl=100_000)
    store.close()
    # The ttl counts from the first arrival, not from the restart.
    net, store = restart(tmp_path, wall=WALL + 50)
    assert [r[1] for r in rows_open(store)] == ["q"]  # the expired one was deleted
    assert drain(net, "q") == [b"long"]
    store.close()


def rows_open(store: SQLiteStore) -> list[tuple[int, str]]:
    assert store._db is not None
    return list(store._db.execute("SELECT seq, queue FROM messages ORDER BY seq"))


def test_dead_lettered_moves_durably_and_only_queues_are_kept(tmp_path: Path) -> None:
    config = BrokerConfig(dead_letter="dlq")
    net, store = restart(tmp_path, config)
    p = net.connect()
    sub = net.connect()
    topic_r = sub.receiver("topic/t", 10)
    publish(p, "topic/t", b"t", durable=True)
    assert len(sub.received(topic_r)) == 1
    tmp = sub.receiver(None, 10, source=a.Source(dynamic=True))
    assert tmp.remote is not None and tmp.remote.source is not None
    publish(p, tmp.remote.source.address, b"to a temporary queue", durable=True)
    publish(p, "q", b"r", durable=True)
    c = net.connect()
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    r.settle(got.delivery, a.Rejected())
    net.pump()
    store.close()
    assert [row[1] for row in rows(tmp_path)] == ["dlq"]
    net, store = restart(tmp_path, config)
    assert sorted(net.broker.nodes) == ["dlq"]
    assert drain(net, "dlq") == [b"r"]
    store.close()


def test_transactional_publish_is_stored_at_commit(tmp_path: Path) -> None:
    net, store = restart(tmp_path)
    p = net.connect()
    ctl = controller(p)
    s = p.sender("q")
    for outcome in ("rollback", "commit"):
        txn = declare(p, ctl)
        d = s.send(msg(outcome.encode(), durable=True).encode(), transaction=txn)
        net.pump()
        assert store._puts == {} and rows_open(store) == []  # held until the discharge
        discharge(p, ctl, txn, fail=outcome == "rollback")
    assert isinstance(d.remote_state, a.Accepted) and d.settled
    assert [r[1] for r in rows_open(store)] == ["q"]
    store.close()
    net, store = restart(tmp_path)
    assert drain(net, "q") == [b"commit"]
    store.close()


def test_restored_address_now_a_topic_is_dropped(tmp_path: Path) -> None:
    net, store = restart(tmp_path)
    publish(net.connect(), "news", b"x", durable=True)
    publish(net.connect(), "orders", b"y", durable=True)
    store.close()
    net, store = restart(tmp_path, BrokerConfig(topics=["news"]))
    assert isinstance(net.broker.nodes["orders"], Queue)
    assert [r[1] for r in rows_open(store)] == ["orders"]
    store.close()


def test_corrupt_and_foreign_stores_are_refused(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / FILENAME).write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match=r"corrupt|not a message store"):
        SQLiteStore(garbage)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with contextlib.closing(sqlite3.connect(foreign / FILENAME)) as db:
        db.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError, match=r"not a message store of this broker$"):
        SQLiteStore(foreign)
    other = tmp_path / "other"
    SQLiteStore(other).close()
    with contextlib.closing(sqlite3.connect(other / FILENAME)) as db, db:
        db.execute("UPDATE meta SET value = 'v99'")
    with pytest.raises(StoreError, match="its format is 'v99'"):
        SQLiteStore(other)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(StoreError, match="cannot make the store directory"):
        SQLiteStore(a_file)
    with pytest.raises(ValueError, match="synchronous"):
        SQLiteStore(tmp_path / "x", synchronous="off")


@pytest.mark.parametrize(
    ("row", "match"),
    [
        ((1, "q", b"\x00\x53\x70\xff", 0, None), "message 1: "),
        ((2, "q", "text, not bytes", 0, None), "row 2"),
        ((3, "q", b"x", -1, None), "row 3"),
        ((4, "q", b"x", 0, "soon"), "row 4"),
    ],
)
def test_corrupt_rows_are_a_clear_error(
    tmp_path: Path, row: tuple[object, ...], match: str
) -> None:
    SQLiteStore(tmp_path).close()
    with contextlib.closing(sqlite3.connect(tmp_path / FILENAME)) as db, db:
        db.execute(
            "INSERT INTO messages (seq, queue, data, delivery_count, expires)"
            " VALUES (?, ?, ?, ?, ?)",
            row,
        )
    store = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match=match):
        store.load(Broker(store=store), WALL)
    store.close()


def test_one_broker_per_store_and_closed_store(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="in use by another broker"):
        SQLiteStore(tmp_path)
    store.close()
    store.close()  # twice is harmless
    with pytest.raises(StoreError, match="closed"):
        store.load(Broker(store=store), WALL)
    SQLiteStore(tmp_path).close()  # the lock went with the first


def test_a_failed_write_is_an_error_and_is_tried_again(tmp_path: Path) -> None:
    net, store = restart(tmp_path)
    assert store._db is not None
    store._db.execute("ALTER TABLE messages RENAME TO elsewhere")
    p = net.connect()
    s = p.sender("q")
    with pytest.raises(StoreError, match="cannot write"):
        s.send(msg(b"x", durable=True).encode())
        net.pump()
    assert not store._db.in_transaction and len(store._puts) == 1
    store._db.execute("ALTER TABLE elsewhere RENAME TO messages")
    store.close()
    assert len(rows(tmp_path)) == 1


def test_corrupt_pages_fail_the_quick_check(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path)
    net = Net(broker=Broker(store=store))
    publish(net.connect(), "q", *[b"x" * 3000] * 20, durable=True)
    store.close()
    path = tmp_path / FILENAME
    data = bytearray(path.read_bytes())
    assert len(data) > 8192
    data[100:200] = b"\xff" * 100  # the first page's b-tree header (the schema's)
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match="corrupt"):
        s = SQLiteStore(tmp_path)
        s.load(Broker(store=s), WALL)
