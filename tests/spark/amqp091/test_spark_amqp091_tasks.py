"""``format("amqp")`` with option ``protocol`` ``0-9-1`` without Spark: what the executors
run (adapters/spark/amqp091/__init__.py: :func:`publish_rows`, :func:`blocking_consumer`, and the
receiver tasks of :mod:`.queue_reader` on its consumers), called in this process as Spark
calls it, against a real broker: ours (in a thread) and RabbitMQ (``AMQP_SANSIO_RABBITMQ_URL``;
skipped, saying why, when it is not set). Each test uses queues of its own, deleted after.
docs/spark.rst, "AMQP 0-9-1"; the 0-9-1/1.0 mapping is :mod:`amqp_sansio.broker`'s."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import amqp_sansio as a

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters import spark as spark_adapter
from amqp_sansio.adapters.broker import run_broker
from amqp_sansio.adapters.spark import amqp091, staging
from amqp_sansio.adapters.spark.options import ReadOptions, WriteOptions
from support.rabbitmq import rabbitmq_url

from amqp_sansio.amqp091 import BasicProperties


@pytest.fixture(scope="module")
def ours() -> Iterator[str]:
    with run_broker() as server:
        yield server.url


@pytest.fixture(params=["ours", "rabbitmq"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "ours":
        found: str = request.getfixturevalue("ours")
        return found
    return rabbitmq_url()


class Queues:
    """Queues of the test's own (unique names), deleted after it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.names: list[str] = []

    def new(self, **arguments: Any) -> str:
        name = f"amqp-sansio-spark091t-{uuid.uuid4().hex[:10]}"
        with sockets.connect(self.url, protocol="0-9-1") as conn:
            conn.channel().queue_declare(name, arguments=arguments)
        self.names.append(name)
        return name

    def delete(self) -> None:
        with sockets.connect(self.url, protocol="0-9-1") as conn:
            channel = conn.channel()
            for name in self.names:
                channel.queue_delete(name)


@pytest.fixture
def queues(url: str) -> Iterator[Queues]:
    made = Queues(url)
    try:
        yield made
    finally:
        made.delete()


def publish(url: str, queue: str, count: int, *, start: int = 0) -> None:
    """``count`` persistent messages with a message-id and a header each, confirmed."""
    with sockets.connect(url, protocol="0-9-1") as conn:
        channel = conn.channel()
        channel.confirm_select()
        trackers = [
            channel.basic_publish(
                "",
                queue,
                f"payload {i}".encode(),
                properties=BasicProperties(
                    message_id=f"m{i}", headers={"i": str(i)}, delivery_mode=2
                ),
                mandatory=True,
                wait=False,
            )
            for i in range(start, start + count)
        ]
        for tracker in trackers:
            assert tracker.confirmation(timeout=30).ack


def depth(url: str, queue: str, expected: int | None = None, wait: float = 5.0) -> int:
    """The queue's ready messages; with ``expected``, read again (for up to ``wait``
    seconds) while above it: acks and nacks are not answered, the broker applies them
    when it reads them."""
    deadline = time.monotonic() + wait
    with sockets.connect(url, protocol="0-9-1") as conn:
        channel = conn.channel()
        while True:
            found: int = channel.queue_declare(queue, passive=True).message_count
            if expected is None or found <= expected or time.monotonic() >= deadline:
                return found
            time.sleep(0.02)


def drain(url: str, queue: str) -> list[Any]:
    """Every message left in the queue (basic.get, acked): the deliveries."""
    got = []
    with sockets.connect(url, protocol="0-9-1") as conn:
        channel = conn.channel()
        while (delivery := channel.basic_get(queue)) is not None:
            delivery.ack()
            got.append(delivery)
    return got


# -- the writers: publish_rows ---------------------------------------------------------------


def test_published_rows_arrive_with_their_properties(url: str, queues: Queues) -> None:
    queue = queues.new()
    messages = [
        a.Message(
            header=a.Header(durable=True, priority=7),
            properties=a.Properties(
                message_id=f"row-{i}",
                correlation_id="c-1",
                content_type="text/plain",
                reply_to="replies",
            ),
            application_properties={"i": str(i), "n": i},
            body=f"row {i}".encode(),
        )
        for i in range(1001)
    ]
    told: list[int] = []
    options = WriteOptions({"url": f"{url}/{queue}", "protocol": "0-9-1", "window": "64"})
    assert amqp091.publish_rows(options, iter(messages), 30, done=told.append) == 1001
    assert told == [1000, 1001]  # every thousand confirmed, and at the end
    got = drain(url, queue)
    assert [d.body for d in got] == [f"row {i}".encode() for i in range(1001)]
    for i, delivery in enumerate(got):
        p = delivery.properties
        assert (p.message_id, p.correlation_id, p.content_type, p.reply_to) == (
            f"row-{i}",
            "c-1",
            "text/plain",
            "replies",
        )
        assert (p.delivery_mode, p.priority) == (2, 7)
        assert p.headers == {"i": str(i), "n": i}
        assert (delivery.exchange, delivery.routing_key) == ("", queue)


def test_a_nack_fails_the_publish(url: str, queues: Queues) -> None:
    """A queue at its length limit that refuses new messages (``reject-publish``): the
    broker nacks the second, and the task fails."""
    queue = queues.new(**{"x-max-length": 1, "x-overflow": "reject-publish"})
    options = WriteOptions({"url": f"{url}/{queue}", "protocol": "0-9-1"})
    told: list[int] = []
    with pytest.raises(RuntimeError, match=rf"refused a message for '{queue}' \(nack\)"):
        amqp091.publish_rows(
            options, iter([a.Message(body=b"1"), a.Message(body=b"2")]), 30, done=told.append
        )
    assert told == []  # failed: never told it was done
    assert [d.body for d in drain(url, queue)] == [b"1"]


def test_a_return_fails_the_publish(url: str) -> None:
    """``mandatory``: a message no queue takes comes back (312 NO_ROUTE), and the task
    fails, naming the address."""
    nowhere = f"amqp-sansio-no-such-queue-{uuid.uuid4().hex[:8]}"
    options = WriteOptions({"url": f"{url}/{nowhere}", "protocol": "0-9-1", "window": "1"})
    with pytest.raises(RuntimeError, match=rf"routed a message for '{nowhere}' to no queue: 312"):
        amqp091.publish_rows(options, iter([a.Message(body=b"x")]), 30)


# -- the batch reader's consumer: blocking_consumer ------------------------------------------


def test_a_blocking_consumer_sees_deliveries_as_10_messages(url: str, queues: Queues) -> None:
    """Each delivery as RabbitMQ maps it to 1.0 (properties, headers as application
    properties, exchange and routing key as annotations, a redelivered one with
    delivery-count 1), its body as its weight; accepted (acked), rejected (gone), or
    modified and released (back, redelivered); what the block held unsettled goes back."""
    queue = queues.new()
    publish(url, queue, 5)
    options = ReadOptions({"url": f"{url}/{queue}", "protocol": "0-9-1"}, streaming=False)
    with amqp091.blocking_consumer(options, queue, 5) as consumer:
        got = [consumer.receive(timeout=10) for _ in range(5)]
        with pytest.raises(TimeoutError):  # nothing more (the batch read's end)
            consumer.receive(timeout=0.2)
        assert all(d is not None for d in got)
        first, second, third, fourth, _fifth = [d for d in got if d is not None]
        message = first.message
        assert first.message is message  # mapped once
        assert first.data == b"payload 0" and message.body == a.Data(b"payload 0")
        assert message.properties is not None and message.properties.message_id == "m0"
        assert message.application_properties == {"i": "0"}
        assert message.header is not None and message.header.durable
        assert not message.header.delivery_count
        annotations = message.message_annotations or {}
        assert (annotations.get("x-exchange"), annotations.get("x-routing-key")) == ("", queue)
        first.accept()
        second.reject("cannot make a row of it")
        third.modify(delivery_failed=True)
        fourth.release()
        # _fifth: left unsettled, back to the queue when the block closes the connection.
    assert depth(url, queue, 3) == 3
    with amqp091.blocking_consumer(options, queue, 5) as consumer:
        back = [consumer.receive(timeout=10) for _ in range(3)]
        assert all(d is not None for d in back)
        bodies = sorted(d.data for d in back if d is not None)
        assert bodies == [b"payload 2", b"payload 3", b"payload 4"]
        for d in back:
            assert d is not None
            assert d.message.header is not None and d.message.header.delivery_count == 1
            d.accept()
    assert depth(url, queue, 0) == 0


# -- the receiver tasks of a streaming read --------------------------------------------------


def _reader(url: str, addresses: str, location: str, **options: str) -> Any:
    """The queue-mode stream reader, called as Spark calls it (no Spark needed)."""
    source = spark_adapter.AMQPDataSource(
        {
            "url": url,
            "address": addresses,
            "protocol": "0-9-1",
            "stagingLocation": location,
            **options,
        }
    )
    return source.streamReader(spark_adapter.SCHEMA)


def _run(reader: Any, task: Any, *columns: str) -> list[Any]:
    """Task ``task`` run as an executor runs it: its rows' ``columns``."""
    names = columns or ("message_id",)
    return [
        tuple(row[name] for name in names) if len(names) > 1 else row[names[0]]
        for batch in reader.read(task)
        for row in batch.to_pylist()
    ]


def test_receiver_tasks_take_their_share_stage_then_ack(
    tmp_path: Path, url: str, queues: Queues
) -> None:
    """A batch's tasks (competing consumers) each take their share, stage it, ack it and
    mark themselves done; the rows carry the messages' properties; the rest stays in the
    queue. A task run again reads its staged parts and takes nothing."""
    queue = queues.new()
    publish(url, queue, 30)
    location = str(tmp_path / "staging")
    reader = _reader(url, queue, location, partitions="2", maxMessagesPerTrigger="11")
    offset = reader.initialOffset()
    end = reader.latestOffset(offset, None)
    tasks = reader.partitions(offset, end)
    assert [(t.batch, t.index, t.max_rows) for t in tasks] == [(1, 0, 6), (1, 1, 5)]
    rows = [
        _run(reader, t, "message_id", "body", "application_properties", "durable") for t in tasks
    ]
    assert [len(r) for r in rows] == [6, 5]
    taken = sorted(row for r in rows for row in r)
    ids = sorted(m for m, *_ in taken)
    assert len(set(ids)) == 11
    for message_id, body, application, durable in taken:
        i = int(message_id[1:])
        assert (body, dict(application), durable) == (
            f"payload {i}".encode(),
            {"i": str(i)},
            True,
        )
    assert depth(url, queue, 19) == 19  # acked: gone from the queue
    files = [(n, i, p) for n, i, p, _ in staging.staged_files(location)]
    assert files == [(1, 0, None), (1, 0, 0), (1, 1, None), (1, 1, 0)]
    # A task run again (a retried task, a restarted query): its staged rows, nothing taken.
    assert [
        _run(reader, t, "message_id", "body", "application_properties", "durable") for t in tasks
    ] == rows
    assert depth(url, queue) == 19
    reader.commit(end)
    assert staging.staged_files(location) == []
    left = sorted(d.properties.message_id for d in drain(url, queue))
    assert sorted(left + ids) == sorted(f"m{i}" for i in range(30))


def test_a_task_not_done_reads_its_part_then_takes_the_rest(
    tmp_path: Path, url: str, queues: Queues
) -> None:
    """A task that staged a part and was lost before it was done: run again, it gives that
    part, then takes the rest of its share (its prefetch the rest, not the share)."""
    queue = queues.new()
    publish(url, queue, 10)
    location = str(tmp_path / "staging")
    reader = _reader(url, queue, location, maxMessagesPerTrigger="4")
    (task,) = reader.partitions({"batch": 0}, {"batch": 1})
    theirs = staging.record_batch(
        [
            spark_adapter.rows.message_to_row(
                a.Message(properties=a.Properties(message_id="theirs")), queue
            )
        ]
    )
    assert staging.stage(location, 1, 0, 0, theirs) is not None
    got = _run(reader, task)
    assert got[0] == "theirs" and len(got) == 4
    assert sorted(got[1:]) == ["m0", "m1", "m2"]
    assert depth(url, queue, 7) == 7
    assert [(n, i, p) for n, i, p, _ in staging.staged_files(location)] == [
        (1, 0, None),
        (1, 0, 0),
        (1, 0, 1),
    ]
    assert _run(reader, task) == got  # done now: its two parts, nothing taken
    assert depth(url, queue) == 7


def test_a_task_gives_back_what_it_took_past_its_share(
    tmp_path: Path, url: str, queues: Queues, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task reading two queues has a consumer on each with its whole prefetch (its
    share): it takes its share and gives the rest back (``basic.nack`` with requeue): the
    broker keeps those for another consumer, marked as redelivered."""
    first, second = queues.new(), queues.new()
    publish(url, first, 10)
    publish(url, second, 10, start=10)
    real_open = amqp091.open_receivers
    held: list[int] = []

    async def open_and_fill(options: ReadOptions, prefetch: int, keep: Any) -> Any:
        # Both consumers hold their whole prefetch before the task takes any: what the task
        # holds past its share is then known (5 of 10).
        receivers = await real_open(options, prefetch, keep)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            held[:] = [len(r.core.queue) for _a, r in receivers]
            if held == [prefetch] * len(receivers):
                break
            await asyncio.sleep(0.01)
        return receivers

    monkeypatch.setattr(amqp091, "open_receivers", open_and_fill)
    location = str(tmp_path / "staging")
    reader = _reader(url, f"{first},{second}", location, maxMessagesPerTrigger="5")
    (task,) = reader.partitions({"batch": 0}, {"batch": 1})
    rows = _run(reader, task, "message_id", "address", "delivery_count")
    assert held == [5, 5]
    assert len(rows) == 5  # its share, no more
    assert all(count in (None, 0) for _m, _a, count in rows)
    assert depth(url, first, 5) + depth(url, second, 10) == 15
    monkeypatch.undo()
    # What it held past its share (the first 5 of each queue, less those it took) is back
    # in the queues, marked as redelivered; the rest was never delivered.
    held_ids = {f"m{i}" for i in (*range(5), *range(10, 15))}
    taken = {m for m, _a, _c in rows}
    assert taken < held_ids
    left = {d.properties.message_id: d.redelivered for q in (first, second) for d in drain(url, q)}
    assert set(left) == {f"m{i}" for i in range(20)} - taken
    assert {m for m, redelivered in left.items() if redelivered} == held_ids - taken


def test_a_task_ends_when_the_queue_is_empty(tmp_path: Path, url: str, queues: Queues) -> None:
    """A share larger than the queue: the task takes what there is, asks the broker (a
    passive ``queue.declare``) whether more is ready, and ends; an empty queue, an empty
    task (nothing staged, not marked done)."""
    queue = queues.new()
    publish(url, queue, 3)
    location = str(tmp_path / "staging")
    reader = _reader(url, queue, location, maxMessagesPerTrigger="50")
    (task,) = reader.partitions({"batch": 0}, {"batch": 1})
    task.first_wait = 0.5
    assert sorted(_run(reader, task)) == ["m0", "m1", "m2"]
    assert depth(url, queue, 0) == 0
    reader.commit({"batch": 1})
    (empty,) = reader.partitions({"batch": 1}, {"batch": 2})
    empty.first_wait = 0.2
    started = time.monotonic()
    assert _run(reader, empty) == []
    assert time.monotonic() - started < 10
    assert staging.staged_files(location) == []


def test_a_task_stops_at_its_byte_share(tmp_path: Path, url: str, queues: Queues) -> None:
    """``maxBytesPerTrigger`` with 0-9-1 weighs each message's body: the task takes what
    fits, in the order sent, and gives back what it held past that (the queue keeps it,
    marked as redelivered, for the next batch)."""
    queue = queues.new()
    with sockets.connect(url, protocol="0-9-1") as conn:
        channel = conn.channel()
        channel.confirm_select()
        for i in range(10):
            body = bytes([i]) * 100
            confirmation = channel.basic_publish("", queue, body, mandatory=True)
            assert confirmation is not None and confirmation.ack
    location = str(tmp_path / "staging")
    reader = _reader(url, queue, location, maxBytesPerTrigger="350")
    (task,) = reader.partitions({"batch": 0}, {"batch": 1})
    assert (task.max_rows, task.max_bytes) == (None, 350)
    assert _run(reader, task, "body") == [bytes([i]) * 100 for i in range(3)]
    assert depth(url, queue, 7) == 7
    left = drain(url, queue)
    assert [d.body for d in left] == [bytes([i]) * 100 for i in range(3, 10)]


# -- the batch writer and reader's tasks -----------------------------------------------------


def test_a_write_task_then_batch_reads(url: str, queues: Queues) -> None:
    """A write task (no Spark task context: partition 0 of job ``local``) publishes its
    rows, each with a derived message-id, persistent; a look at the queue (the reader's
    plan) takes nothing; consuming read tasks share the queue out and take it all."""
    from pyspark.sql import types as T

    queue = queues.new()
    source = spark_adapter.AMQPDataSource(
        {"url": url, "address": queue, "protocol": "0-9-1", "window": "7"}
    )
    schema = T.StructType(
        [
            T.StructField("body", T.BinaryType()),
            T.StructField("application_properties", T.MapType(T.StringType(), T.StringType())),
        ]
    )
    rows = [
        {"body": f"row {i}".encode(), "application_properties": {"i": str(i)}} for i in range(20)
    ]
    commit = source.writer(schema, False).write(iter(rows))
    assert (commit.partition, commit.sent) == (0, 20)
    assert depth(url, queue, 20) == 20
    columns = spark_adapter.rows.COLUMNS
    look = spark_adapter.AMQPDataSource(
        {"url": url, "address": queue, "protocol": "0-9-1", "partitions": "3"}
    ).reader(schema)
    pieces = look.partitions()
    seen = [dict(zip(columns, row, strict=True)) for p in pieces for row in look.read(p)]
    assert sorted(r["body"] for r in seen) == sorted(r["body"] for r in rows)
    assert all(r["message_id"].startswith("amqp-sansio:") and r["durable"] for r in seen)
    assert len({r["message_id"] for r in seen}) == 20
    assert all(r["body"] == f"row {r['application_properties']['i']}".encode() for r in seen)
    assert depth(url, queue) == 20  # a look: released
    consuming = spark_adapter.AMQPDataSource(
        {
            "url": url,
            "address": queue,
            "protocol": "0-9-1",
            "partitions": "2",
            "consume": "true",
            "maxMessages": "15",
        }
    ).reader(schema)
    tasks = consuming.partitions()
    assert [t.limit for t in tasks] == [8, 7]
    taken = [[dict(zip(columns, row, strict=True)) for row in consuming.read(t)] for t in tasks]
    assert [len(t) for t in taken] == [8, 7]
    assert depth(url, queue, 5) == 5
    left = [d.body for d in drain(url, queue)]
    assert sorted(left + [r["body"] for t in taken for r in t]) == sorted(r["body"] for r in rows)
