"""The broker's durable message store (``amqp-sansio broker --store DIR``): SQLite, from the
standard library.

The core broker (:mod:`amqp_sansio.broker`) does no I/O; it tells its
:class:`~amqp_sansio.broker.Store` of every message a node takes, lets go of or changes, and
calls ``flush`` once per input before it settles the publishers' transfers of durable
messages (broker draft 2.2.4: "stored safely before the broker settles"), before it
accepts a commit (core spec 4.4.4) and before any answer to that input goes out. This
store keeps the durable messages (header ``durable``, core spec 3.2.1; a 0-9-1 publish's
delivery-mode 2) of the broker's named queues and of the durable queues of every AMQP
0-9-1 virtual host, and the 0-9-1 topology (a
:class:`~amqp_sansio.broker.TopologyStore`), in one SQLite database,
``DIR/messages.sqlite3``:

* the database is in WAL mode with ``synchronous=FULL``: each ``flush`` is one
  transaction whose commit fsyncs the write-ahead log, so what a flush wrote survives a
  crash of the process *and* of the machine (``synchronous="normal"`` skips that fsync:
  the process may die, the machine may not);
* writes between two flushes are only collected in memory (a message put and removed in
  the same input, e.g. a durable message that went straight to a waiting consumer and
  was accepted, never reaches the disk);
* one table, ``messages(seq, queue, data, delivery_count, expires, subscription,
  vhost)``: the bytes the publisher sent, as the broker holds them, with its arrival
  number, its delivery-count, its expiry (wall clock), for a message waiting in a topic
  subscription's buffer the subscription's number, and for a queue of a 0-9-1 virtual
  host other than ``/`` that host's name (NULL: the broker's node, ``/``'s); a table
  ``subscriptions(id, container, name, source, answered)`` of the durable topic
  subscriptions (core spec 3.5.5: the client's container-id, the link name, the source it
  asked for and the one the broker answered, encoded); the 0-9-1 topology in
  ``vhosts(name)``, ``exchanges(vhost, name, type, auto_delete, internal, arguments)``,
  ``queues(vhost, name, auto_delete, arguments)`` and ``bindings(vhost, source, kind,
  destination, routing_key, arguments)`` (arguments as encoded 0-9-1 field tables); and a
  ``meta`` table naming the format (a store of an earlier format is migrated when it is
  opened: the first had no subscriptions, the second no topology);
* the database is held with an exclusive lock for as long as the broker runs: a second
  broker on the same directory fails to start.

:meth:`SQLiteStore.load` gives the broker the messages back on start
(:meth:`Broker.restore <amqp_sansio.broker.Broker.restore>`), in arrival order; expired
ones are dropped. A store that cannot be opened or read raises :class:`StoreError`, one
line saying what is wrong.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from typing import Any

from amqp_sansio import DecodeError
from amqp_sansio.amqp091 import decode_table, encode_table
from amqp_sansio.broker import (
    BindingRecord,
    Broker,
    ExchangeRecord,
    Node,
    QueueDeclaration,
    StoredMessage,
    TopologyRecord,
    VhostRecord,
)

__all__ = ["FILENAME", "SQLiteStore", "StoreError"]

#: The database's name in the store directory.
FILENAME = "messages.sqlite3"
#: What the ``meta`` table says of a store this module wrote.
_FORMAT = "amqp-sansio broker store 3"
#: The earlier formats, each migrated to the next when opened: the first had no
#: subscriptions, the second no 0-9-1 topology.
_FORMAT_1 = "amqp-sansio broker store 1"
_FORMAT_2 = "amqp-sansio broker store 2"
_SUBSCRIPTIONS = (
    "CREATE TABLE subscriptions (id INTEGER PRIMARY KEY, container TEXT NOT NULL,"
    " name TEXT NOT NULL, source BLOB NOT NULL, answered BLOB NOT NULL)"
)
_TOPOLOGY = (
    "CREATE TABLE vhosts (name TEXT PRIMARY KEY)",
    "CREATE TABLE exchanges (vhost TEXT NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL,"
    " auto_delete INTEGER NOT NULL, internal INTEGER NOT NULL, arguments BLOB NOT NULL,"
    " PRIMARY KEY (vhost, name))",
    "CREATE TABLE queues (vhost TEXT NOT NULL, name TEXT NOT NULL,"
    " auto_delete INTEGER NOT NULL, arguments BLOB NOT NULL, PRIMARY KEY (vhost, name))",
    "CREATE TABLE bindings (vhost TEXT NOT NULL, source TEXT NOT NULL, kind TEXT NOT NULL,"
    " destination TEXT NOT NULL, routing_key TEXT NOT NULL, arguments BLOB NOT NULL,"
    " PRIMARY KEY (vhost, source, kind, destination, routing_key, arguments))",
)
#: The schema of a new store: every table, in one place.
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE messages (seq INTEGER PRIMARY KEY, queue TEXT NOT NULL, data BLOB NOT NULL,"
    " delivery_count INTEGER NOT NULL, expires REAL, subscription INTEGER, vhost TEXT)",
    _SUBSCRIPTIONS,
    *_TOPOLOGY,
)
#: The migrations, by the format they start from: each leaves the next.
_MIGRATIONS = {
    _FORMAT_1: (
        "ALTER TABLE messages ADD COLUMN subscription INTEGER",
        _SUBSCRIPTIONS,
        f"UPDATE meta SET value = '{_FORMAT_2}' WHERE key = 'format'",
    ),
    _FORMAT_2: (
        "ALTER TABLE messages ADD COLUMN vhost TEXT",
        *_TOPOLOGY,
        f"UPDATE meta SET value = '{_FORMAT}' WHERE key = 'format'",
    ),
}


class StoreError(Exception):
    """The message store cannot be opened, read or written: not a store, corrupt, in use by
    another broker, or the disk refused. The message says which and where."""


class SQLiteStore:
    """The durable :class:`~amqp_sansio.broker.Store` in ``directory`` (made if missing).
    ``synchronous`` is ``"full"`` (each flush fsyncs: safe from a machine crash) or
    ``"normal"`` (no fsync: safe from a process crash only). Use it from one thread at a
    time; :meth:`close` when done."""

    def __init__(self, directory: str | os.PathLike[str], *, synchronous: str = "full") -> None:
        if synchronous not in ("full", "normal"):
            raise ValueError(f"synchronous must be 'full' or 'normal', not {synchronous!r}")
        self.path = os.path.join(os.fspath(directory), FILENAME)
        #: Durable messages taken since the last flush, by seq (written at the flush).
        self._puts: dict[int, tuple[Node, StoredMessage]] = {}
        #: Changed since the last flush (written at the flush).
        self._updates: dict[int, StoredMessage] = {}
        self._deletes: list[int] = []
        #: Subscriptions kept or forgotten since the last flush.
        self._subscriptions: dict[int, tuple[str, str, bytes, bytes]] = {}
        self._forgotten: list[int] = []
        #: Topology rows kept (the whole row) or forgotten (None) since the last flush, by
        #: table and key; the last change of a key wins.
        self._topology: dict[tuple[str, tuple[Any, ...]], tuple[Any, ...] | None] = {}
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot make the store directory {directory}: {exc}") from None
        try:
            db = sqlite3.connect(
                self.path, timeout=0, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the message store {self.path}: {exc}") from None
        self._db: sqlite3.Connection | None = db
        try:
            self._open(db, synchronous)
        except sqlite3.Error as exc:
            db.close()
            self._db = None
            if "locked" in str(exc):
                raise StoreError(
                    f"the message store {self.path} is in use by another broker"
                ) from None
            raise StoreError(f"the message store {self.path} is corrupt: {exc}") from None
        except StoreError:
            db.close()
            self._db = None
            raise

    def __repr__(self) -> str:
        return f"<SQLiteStore {self.path!r}>"

    def _open(self, db: sqlite3.Connection, synchronous: str) -> None:
        # Exclusive before WAL: no shared memory, and the lock stays ours until close.
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("BEGIN IMMEDIATE")  # takes the lock now: a second broker fails here
        db.execute("COMMIT")
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode != "wal":  # pragma: no cover - WAL is refused only on odd file systems
            raise StoreError(f"the message store {self.path} cannot use WAL (got {mode})")
        db.execute(f"PRAGMA synchronous={synchronous.upper()}")
        problems = [row[0] for row in db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise StoreError(f"the message store {self.path} is corrupt: {problems[0]}")
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        if not tables:
            db.execute("BEGIN")
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("INSERT INTO meta VALUES ('format', ?)", (_FORMAT,))
            db.execute("COMMIT")
            return
        found = None
        if "meta" in tables and "messages" in tables:
            row = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
            found = None if row is None else row[0]
        if found in _MIGRATIONS:
            db.execute("BEGIN")  # every step in one transaction: all of them, or none
            while found in _MIGRATIONS:
                for statement in _MIGRATIONS[found]:
                    db.execute(statement)
                found = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0]
            db.execute("COMMIT")
        if found != _FORMAT:
            raise StoreError(
                f"{self.path} is not a message store of this broker"
                + ("" if found is None else f" (its format is {found!r})")
            )

    # -- loading ----------------------------------------------------------------------------

    def load(self, broker: Broker, wall: float) -> int:
        """Make the kept 0-9-1 topology again in ``broker``
        (:meth:`~amqp_sansio.broker.Broker.restore_topology`), then put the kept messages
        back at their queues (before it serves anyone); expired ones (at ``wall``, seconds
        since the epoch), those of addresses that are now topics and those of queues not
        made again are deleted. Returns how many were restored."""
        db = self._connection()
        current: list[Any] = [None]
        try:
            lost_topology = broker.restore_topology(self._topology_records(db), wall)
        except sqlite3.Error as exc:
            raise StoreError(f"the message store {self.path} is corrupt: {exc}") from None
        for record in lost_topology:
            self.forget_topology(record)

        def rows(
            where: str, *args: str
        ) -> Iterator[tuple[Any, str, int, bytes, int, float | None]]:
            found = db.execute(
                "SELECT seq, queue, data, delivery_count, expires, subscription FROM messages"
                f" WHERE {where} ORDER BY seq",
                args,
            )
            for row in found:
                current[0] = row[0]
                seq, queue, data, count, expires, subscription = row
                if (
                    type(seq) is not int
                    or type(queue) is not str
                    or type(data) is not bytes
                    or type(count) is not int
                    or count < 0
                    or not (expires is None or type(expires) in (int, float))
                    or not (subscription is None or type(subscription) is int)
                ):
                    raise StoreError(f"the message store {self.path} is corrupt: row {seq!r}")
                yield (
                    subscription,
                    queue,
                    seq,
                    data,
                    count,
                    None if expires is None else float(expires),
                )

        def subscriptions() -> Iterator[tuple[int, str, str, bytes, bytes]]:
            for row in db.execute(
                "SELECT id, container, name, source, answered FROM subscriptions ORDER BY id"
            ):
                ident, container, name, source, answered = row
                if (
                    type(ident) is not int
                    or type(container) is not str
                    or type(name) is not str
                    or type(source) is not bytes
                    or type(answered) is not bytes
                ):
                    raise StoreError(
                        f"the message store {self.path} is corrupt: subscription {ident!r}"
                    )
                yield ident, container, name, source, answered

        try:
            lost, dropped = broker.restore_subscriptions(
                subscriptions(),
                (
                    (sub, seq, data, n, exp)
                    for sub, _, seq, data, n, exp in rows("subscription IS NOT NULL")
                ),
                wall,
            )
            dropped += broker.restore(
                (
                    (queue, seq, data, n, exp)
                    for _, queue, seq, data, n, exp in rows(
                        "subscription IS NULL AND vhost IS NULL"
                    )
                ),
                wall,
            )
            vhosts = [
                row[0]
                for row in db.execute(
                    "SELECT DISTINCT vhost FROM messages WHERE vhost IS NOT NULL ORDER BY vhost"
                )
            ]
            for vhost in vhosts:
                if type(vhost) is not str:
                    raise StoreError(f"the message store {self.path} is corrupt: vhost {vhost!r}")
                dropped += broker.restore(
                    (
                        (queue, seq, data, n, exp)
                        for _, queue, seq, data, n, exp in rows(
                            "subscription IS NULL AND vhost = ?", vhost
                        )
                    ),
                    wall,
                    vhost=vhost,
                )
        except DecodeError as exc:
            raise StoreError(
                f"the message store {self.path} is corrupt: message {current[0]}: {exc}"
            ) from None
        except sqlite3.Error as exc:
            raise StoreError(f"the message store {self.path} is corrupt: {exc}") from None
        if dropped or lost or lost_topology:
            self._deletes.extend(dropped)
            self._forgotten.extend(lost)
            self.flush()
        return broker.depth

    def _topology_records(self, db: sqlite3.Connection) -> Iterator[TopologyRecord]:
        """The kept topology, table by table (:class:`StoreError` for a row of the wrong
        types, or arguments that are not a field table)."""

        def corrupt(table: str, row: tuple[Any, ...]) -> StoreError:
            return StoreError(f"the message store {self.path} is corrupt: {table} {row!r}")

        def table(data: Any, where: str, row: tuple[Any, ...]) -> dict[str, Any]:
            if type(data) is not bytes:
                raise corrupt(where, row)
            try:
                return decode_table(data)
            except DecodeError:
                raise corrupt(where, row) from None

        for row in db.execute("SELECT name FROM vhosts ORDER BY name"):
            if type(row[0]) is not str:
                raise corrupt("vhost", row)
            yield VhostRecord(row[0])
        for row in db.execute(
            "SELECT vhost, name, type, auto_delete, internal, arguments FROM exchanges"
            " ORDER BY vhost, name"
        ):
            vhost, name, kind, auto_delete, internal, arguments = row
            if not _texts(vhost, name, kind) or not _flags(auto_delete, internal):
                raise corrupt("exchange", row)
            yield ExchangeRecord(
                vhost,
                name,
                kind,
                auto_delete=bool(auto_delete),
                internal=bool(internal),
                arguments=table(arguments, "exchange", row),
            )
        for row in db.execute(
            "SELECT vhost, name, auto_delete, arguments FROM queues ORDER BY vhost, name"
        ):
            vhost, name, auto_delete, arguments = row
            if not _texts(vhost, name) or not _flags(auto_delete):
                raise corrupt("queue", row)
            yield QueueDeclaration(
                vhost, name, auto_delete=bool(auto_delete), arguments=table(arguments, "queue", row)
            )
        for row in db.execute(
            "SELECT vhost, source, kind, destination, routing_key, arguments FROM bindings"
            " ORDER BY rowid"
        ):
            vhost, source, kind, destination, routing_key, arguments = row
            if not _texts(vhost, source, destination, routing_key) or kind not in (
                "queue",
                "exchange",
            ):
                raise corrupt("binding", row)
            yield BindingRecord(
                vhost, source, kind, destination, routing_key, table(arguments, "binding", row)
            )

    # -- the Store protocol -----------------------------------------------------------------

    def put(self, node: Node, message: StoredMessage) -> None:
        if message.durable and node.persistent:
            self._puts[message.seq] = (node, message)

    def remove(self, node: Node, message: StoredMessage) -> None:
        if not message.durable:
            return
        seq = message.seq
        if self._puts.pop(seq, None) is None:
            self._updates.pop(seq, None)
            self._deletes.append(seq)

    def update(self, node: Node, message: StoredMessage) -> None:
        if message.durable and message.seq not in self._puts:
            self._updates[message.seq] = message

    def keep_topology(self, record: TopologyRecord) -> None:
        """Record a virtual host, a durable exchange, queue or binding (at the next flush);
        a record of the same key is replaced."""
        table, key, row = _row(record)
        self._topology[table, key] = row

    def forget_topology(self, record: TopologyRecord) -> None:
        """Delete the record of ``record``'s key (at the next flush)."""
        table, key, _ = _row(record)
        self._topology[table, key] = None

    def keep_subscription(
        self, ident: int, container_id: str, link_name: str, source: bytes, answered: bytes
    ) -> None:
        """Record a durable topic subscription (at the next flush)."""
        self._subscriptions[ident] = (container_id, link_name, source, answered)

    def forget_subscription(self, ident: int) -> None:
        """Delete a subscription's record (at the next flush); its messages are removed
        one by one."""
        self._subscriptions.pop(ident, None)
        self._forgotten.append(ident)

    def flush(self) -> None:
        """Write what changed since the last flush in one transaction, and sync it (with
        ``synchronous="full"``); nothing when nothing changed. :class:`StoreError` if the
        disk refuses (the changes stay pending: the next flush tries again)."""
        if not (
            self._puts
            or self._deletes
            or self._updates
            or self._subscriptions
            or self._forgotten
            or self._topology
        ):
            return
        db = self._connection()
        try:
            db.execute("BEGIN")
            if self._forgotten:
                db.executemany(
                    "DELETE FROM subscriptions WHERE id = ?", [(i,) for i in self._forgotten]
                )
            if self._subscriptions:
                db.executemany(
                    "INSERT OR REPLACE INTO subscriptions VALUES (?, ?, ?, ?, ?)",
                    [(i, *record) for i, record in self._subscriptions.items()],
                )
            for (table, key), row in self._topology.items():
                db.execute(_DELETE[table], key)
                if row is not None:
                    db.execute(_INSERT[table], row)
            if self._puts:
                db.executemany(
                    "INSERT OR REPLACE INTO messages"
                    " (seq, queue, data, delivery_count, expires, subscription, vhost)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            seq,
                            node.address,
                            m.data,
                            m.delivery_count,
                            m.expires,
                            _owner(node),
                            _vhost(node),
                        )
                        for seq, (node, m) in self._puts.items()
                    ],
                )
            if self._updates:
                db.executemany(
                    "UPDATE messages SET data = ?, delivery_count = ? WHERE seq = ?",
                    [(m.data, m.delivery_count, seq) for seq, m in self._updates.items()],
                )
            if self._deletes:
                db.executemany("DELETE FROM messages WHERE seq = ?", [(s,) for s in self._deletes])
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise StoreError(f"cannot write the message store {self.path}: {exc}") from None
        self._puts.clear()
        self._updates.clear()
        self._deletes.clear()
        self._subscriptions.clear()
        self._forgotten.clear()
        self._topology.clear()

    def close(self) -> None:
        """Flush, and close the database (its lock goes)."""
        if self._db is None:
            return
        try:
            self.flush()
        finally:
            self._db.close()
            self._db = None

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"the message store {self.path} is closed")
        return self._db


def _owner(node: Node) -> int | None:
    """The number of the topic subscription whose buffer ``node`` is, if it is one."""
    subscription = getattr(node, "subscription", None)
    return None if subscription is None else int(subscription.ident)


def _vhost(node: Node) -> str | None:
    """The 0-9-1 virtual host whose own queue ``node`` is (None: a broker node, ``/``'s)."""
    vhost = getattr(node, "vhost", None)
    return None if vhost is None else str(vhost.name)


#: The statements that delete a topology row by its key, and insert one, by table.
_DELETE = {
    "vhosts": "DELETE FROM vhosts WHERE name = ?",
    "exchanges": "DELETE FROM exchanges WHERE vhost = ? AND name = ?",
    "queues": "DELETE FROM queues WHERE vhost = ? AND name = ?",
    "bindings": "DELETE FROM bindings WHERE vhost = ? AND source = ? AND kind = ?"
    " AND destination = ? AND routing_key = ? AND arguments = ?",
}
_INSERT = {
    "vhosts": "INSERT INTO vhosts VALUES (?)",
    "exchanges": "INSERT INTO exchanges VALUES (?, ?, ?, ?, ?, ?)",
    "queues": "INSERT INTO queues VALUES (?, ?, ?, ?)",
    "bindings": "INSERT INTO bindings VALUES (?, ?, ?, ?, ?, ?)",
}


def _row(record: TopologyRecord) -> tuple[str, tuple[Any, ...], tuple[Any, ...]]:
    """A topology record's table, key and row."""
    if isinstance(record, VhostRecord):
        return "vhosts", (record.name,), (record.name,)
    if isinstance(record, ExchangeRecord):
        key: tuple[Any, ...] = (record.vhost, record.name)
        flags = (int(record.auto_delete), int(record.internal))
        return "exchanges", key, (*key, record.type, *flags, encode_table(record.arguments))
    if isinstance(record, QueueDeclaration):
        key = (record.vhost, record.name)
        return "queues", key, (*key, int(record.auto_delete), encode_table(record.arguments))
    key = (
        record.vhost,
        record.source,
        record.kind,
        record.destination,
        record.routing_key,
        encode_table(record.arguments),
    )
    return "bindings", key, key


def _texts(*values: Any) -> bool:
    return all(type(value) is str for value in values)


def _flags(*values: Any) -> bool:
    return all(value in (0, 1) and type(value) is int for value in values)
