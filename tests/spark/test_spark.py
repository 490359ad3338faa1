"""The Spark adapter (``format("amqp")``) on a local Spark (``local[2]``, UI off) against the
reference broker (and RabbitMQ when ``AMQP_SANSIO_RABBITMQ_URL`` is set): batch read and
write, a streaming read whose messages are accepted exactly when their batch is committed,
a crash and restart from the checkpoint, the sink, bad options (the rows and options
themselves: tests/spark/test_spark_rows.py, without Spark)."""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from support import ROOT

import amqp_sansio as a

RABBITMQ = os.environ.get("AMQP_SANSIO_RABBITMQ_URL")

# -- on Spark --------------------------------------------------------------------------------

pyspark = pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
spark_adapter = pytest.importorskip("amqp_sansio.adapters.spark")
from amqp_sansio.adapters import sockets  # noqa: E402
from amqp_sansio.adapters.broker import run_broker  # noqa: E402
from amqp_sansio.adapters.spark.rows import message_to_row  # noqa: E402
from amqp_sansio.adapters.spark.staging import record_batch  # noqa: E402


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    with run_broker() as server:
        yield server


def publish(url: str, address: str, count: int, *, start: int = 0) -> None:
    with sockets.connect(f"{url}/{address}") as conn:
        sender = conn.sender(address)
        trackers = [
            sender.send(
                a.Message(
                    properties=a.Properties(message_id=f"m{i}"),
                    application_properties={"i": i},
                    body=f"payload {i}".encode(),
                ),
                wait=False,
            )
            for i in range(start, start + count)
        ]
        for tracker in trackers:
            assert isinstance(tracker.outcome(timeout=30), a.Accepted)


def depth(server: Any, address: str) -> int:
    node = server.broker.nodes.get(address)
    return 0 if node is None else int(node.depth)


def depth_after_accepts(server: Any, address: str, expected: int, wait: float = 5.0) -> int:
    """The depth once the accepts already sent have reached the broker: settling does not
    wait for the broker (the dispositions go out on the reader's loop and are applied by
    the broker's), so a depth above ``expected`` is read again for up to ``wait`` seconds.
    A depth below it is returned at once: waiting cannot undo an accept too many."""
    deadline = time.monotonic() + wait
    found = depth(server, address)
    while found > expected and time.monotonic() < deadline:
        time.sleep(0.01)
        found = depth(server, address)
    return found


def test_batch_write_then_read(spark: Any, broker: Any) -> None:
    address = f"batch-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame(
        [(f"row {i}".encode(), {"i": str(i)}) for i in range(200)],
        "body binary, application_properties map<string,string>",
    ).repartition(3)
    df.write.format("amqp").mode("append").option("url", broker.url).option(
        "address", address
    ).save()
    assert depth(broker, address) == 200
    reader = spark.read.format("amqp").option("url", broker.url).option("address", address)
    peeked = reader.load().collect()
    assert len(peeked) == 200 and depth(broker, address) == 200  # released again
    got = reader.option("consume", "true").option("partitions", "2").load()
    bodies = sorted(r.body for r in got.collect())
    assert bodies == sorted(f"row {i}".encode() for i in range(200))
    assert depth(broker, address) == 0
    ids = [r.message_id for r in peeked]
    assert len(set(ids)) == 200 and all(i.startswith("amqp-sansio:") for i in ids)


def test_a_consuming_batch_read_shares_the_queue_among_partitions(spark: Any, broker: Any) -> None:
    """``consume`` with several partitions: each task opens its own receiver (competing
    consumers); together they take every message once, and the limit is shared."""
    from pyspark.sql import functions as F

    address = f"shared-{uuid.uuid4().hex[:8]}"
    count = 2_000
    publish(broker.url, address, count)
    # A partition stops when its queue has had nothing for pollInterval: the default 0.1 s is
    # a gap a loaded CI machine can open between two deliveries (1469 of 1500 taken once).
    # This test is about sharing the queue, so it gives the partitions a second.
    options = {
        "url": broker.url,
        "address": address,
        "consume": "true",
        "partitions": "4",
        "pollInterval": "1",
    }
    planned = spark_adapter.AMQPDataSource(options).reader(spark_adapter.SCHEMA).partitions()
    assert len(planned) == 4 and depth(broker, address) == count  # the tasks read, not planning

    def read(**more: str) -> list[Any]:
        reader = spark.read.format("amqp").options(**options, credit="50", **more)
        rows = reader.load().select("message_id", F.spark_partition_id().alias("task"))
        return list(rows.collect())

    first = read(maxMessages="1500")
    assert len(first) == 1500 and depth(broker, address) == count - 1500
    rest = read()
    ids = Counter(r.message_id for r in first + rest)
    assert set(ids) == {f"m{i}" for i in range(count)} and max(ids.values()) == 1
    assert len({r.task for r in first}) >= 2  # more than one receiver took messages
    assert depth(broker, address) == 0


def test_bad_options_fail_at_once(spark: Any, broker: Any) -> None:
    with pytest.raises(Exception, match="unknown option 'colour'"):
        spark.read.format("amqp").option("url", broker.url + "/q").option(
            "colour", "red"
        ).load().collect()
    df = spark.createDataFrame([(1,)], "n int")
    with pytest.raises(Exception, match="'body' column"):
        df.write.format("amqp").mode("append").option("url", broker.url + "/q").save()


def _stream(spark: Any, url: str, address: str, staging: str, **options: str) -> Any:
    reader = (
        spark.readStream.format("amqp")
        .option("url", url)
        .option("address", address)
        .option("stagingLocation", staging)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _each_batch(df: Any, on_batch: Any, checkpoint: str) -> Any:
    """Run ``df`` with ``foreachBatch(on_batch)`` until what is there now is read (and, in
    queue mode, accepted): the query, ended."""
    writer = df.writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint)
    return spark_adapter.run_available_now(writer, timeout=180)


def test_a_streaming_read_stages_each_batch_before_it_accepts_it(spark: Any, broker: Any) -> None:
    address = f"stream-{uuid.uuid4().hex[:8]}"
    count, per_batch = 10_000, 2_000
    publish(broker.url, address, count)
    staging, checkpoint = tempfile.mkdtemp(), tempfile.mkdtemp()
    seen: list[tuple[int, int, int, int]] = []  # batch id, rows, accepted, files staged
    bodies: Counter[bytes] = Counter()

    def on_batch(df: Any, batch_id: int) -> None:
        got = df.select("body", "delivery_count").collect()
        bodies.update(bytes(r.body) for r in got)  # bytearray on pyspark 4.0 and 4.1
        staged = len({n for n, *_rest in spark_adapter.staged_files(staging)})
        seen.append((batch_id, len(got), count - depth(broker, address), staged))

    df = _stream(spark, broker.url, address, staging, maxMessagesPerTrigger=str(per_batch))
    query = _each_batch(df, on_batch, checkpoint)
    assert query.exception() is None
    batches = [s for s in seen if s[1]]
    assert sum(n for _, n, _, _ in batches) == count
    assert all(n <= per_batch for _, n, _, _ in batches)
    done = 0
    for _batch, rows_in_batch, accepted, staged in batches:
        # While a batch runs: its messages are staged and accepted, those of the earlier
        # batches too, and only the running batch's file is left (the others committed).
        done += rows_in_batch
        assert (accepted, staged) == (done, 1)
    assert set(bodies) == {f"payload {i}".encode() for i in range(count)}
    assert max(bodies.values()) == 1
    assert depth(broker, address) == 0  # the last batch too, once committed
    # Staged files go once their batch is committed; on pyspark 4.0 and 4.1 the number of
    # the last batch planned stays (docs/spark.rst, "pyspark versions").
    assert spark_adapter.staged_files(staging) == []
    assert set(os.listdir(staging)) <= {"planned"}


def test_a_crashed_query_restarts_without_loss(spark: Any, broker: Any) -> None:
    address = f"crash-{uuid.uuid4().hex[:8]}"
    count, per_batch = 3_000, 500
    publish(broker.url, address, count)
    staging, checkpoint = tempfile.mkdtemp(), tempfile.mkdtemp()
    processed: list[tuple[str, int]] = []  # message id, delivery-count
    crashed: list[str] = []

    def run(crash_at: int | None) -> Any:
        def on_batch(df: Any, batch_id: int) -> None:
            got = [(r.message_id, r.delivery_count or 0) for r in df.collect()]
            if crash_at is not None and batch_id == crash_at:
                crashed.extend(i for i, _ in got)
                raise RuntimeError("the job crashed")
            processed.extend(got)

        df = _stream(spark, broker.url, address, staging, maxMessagesPerTrigger=str(per_batch))
        if crash_at is None:
            return _each_batch(df, on_batch, checkpoint)
        with pytest.raises(Exception, match="the job crashed"):
            _each_batch(df, on_batch, checkpoint)
        return None

    run(crash_at=2)
    assert 0 < len(crashed) <= per_batch  # what had come, up to the limit
    query = run(crash_at=None)
    assert query.exception() is None
    ids = Counter(i for i, _ in processed)
    assert set(ids) == {f"m{i}" for i in range(count)}  # nothing lost
    # The batch that never committed ran again from its staged file: the same messages,
    # none taken from the broker twice.
    assert max(ids.values()) == 1
    assert set(crashed) <= set(ids)
    assert depth(broker, address) == 0


def test_the_sink_writes_each_batch_at_least_once(spark: Any, broker: Any) -> None:
    source, sink = f"in-{uuid.uuid4().hex[:8]}", f"out-{uuid.uuid4().hex[:8]}"
    count = 1_000
    publish(broker.url, source, count)
    staging, checkpoint = tempfile.mkdtemp(), tempfile.mkdtemp()
    df = _stream(spark, broker.url, source, staging, maxMessagesPerTrigger="300")
    writer = (
        df.select("body", "application_properties")
        .writeStream.format("amqp")
        .option("url", broker.url)
        .option("address", sink)
        .option("checkpointLocation", checkpoint)
    )
    query = spark_adapter.run_available_now(writer, timeout=180)
    assert query.exception() is None
    assert depth(broker, sink) == count and depth(broker, source) == 0
    out = spark.read.format("amqp").option("url", broker.url).option("address", sink).load()
    got = out.select("body", "message_id").collect()
    assert sorted(r.body for r in got) == sorted(f"payload {i}".encode() for i in range(count))
    assert len({r.message_id for r in got}) == count


@pytest.mark.skipif(not RABBITMQ, reason="no RabbitMQ: set AMQP_SANSIO_RABBITMQ_URL (.ci/run does)")
def test_against_rabbitmq(spark: Any) -> None:
    assert RABBITMQ is not None
    address = f"/queue/spark-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame([(f"r{i}".encode(),) for i in range(100)], "body binary")
    (
        df.write.format("amqp")
        .mode("append")
        .option("url", RABBITMQ)
        .option("address", address)
        .save()
    )
    staging, checkpoint = tempfile.mkdtemp(), tempfile.mkdtemp()
    bodies: list[bytes] = []
    stream = _stream(spark, RABBITMQ, address, staging, maxMessagesPerTrigger="40")
    query = _each_batch(
        stream, lambda d, _i: bodies.extend(bytes(r.body) for r in d.collect()), checkpoint
    )
    assert query.exception() is None
    assert sorted(bodies) == sorted(f"r{i}".encode() for i in range(100))


def test_the_docs_example_runs(spark: Any, broker: Any) -> None:
    """The example of docs/spark.rst, as it is written there."""
    import json
    import re
    import textwrap

    text = (ROOT / "docs" / "spark.rst").read_text()
    block = re.search(r":name: spark-example\n\n((?:   .*\n|\n)+)", text)
    assert block is not None
    code = textwrap.dedent(block[1])
    amounts = {"eu": [12.5, 7.5, 30.0], "us": [5.0, 1.25], "apac": [100.0]}
    with sockets.connect(f"{broker.url}/orders") as conn:
        sender = conn.sender("orders")
        for region, values in amounts.items():
            for value in values:
                message = a.Message(
                    application_properties={"region": region}, body=str(value).encode()
                )
                assert isinstance(sender.send(message), a.Accepted)
    scope = {
        "spark": spark,
        "url": broker.url,
        "staging": tempfile.mkdtemp(),
        "checkpoint": tempfile.mkdtemp(),
    }
    exec(compile(code, "docs/spark.rst", "exec"), scope)
    assert scope["query"].exception() is None
    with sockets.connect(f"{broker.url}/revenue") as conn:
        receiver = conn.receiver("revenue", credit=100)
        latest: dict[str, float] = {}
        while True:
            try:
                delivery = receiver.receive(timeout=2)
            except TimeoutError:
                break
            row = json.loads(delivery.message.body.value)
            latest[row["region"]] = row["revenue"]
            delivery.accept()
    assert latest == {region: sum(values) for region, values in amounts.items()}


def test_a_batch_read_of_an_empty_queue_has_no_rows(spark: Any, broker: Any) -> None:
    """Given no partitions, Spark would make one of its own and hand it to the reader."""
    address = f"empty-{uuid.uuid4().hex[:8]}"
    reader = spark.read.format("amqp").option("url", broker.url).option("address", address)
    assert reader.load().collect() == []
    assert reader.option("consume", "true").option("partitions", "3").load().collect() == []


def _reader(url: str, address: str, staging: str, **options: str) -> Any:
    """The queue-mode stream reader, to be called as Spark calls it (no Spark needed)."""
    source = spark_adapter.AMQPDataSource(
        {"url": url, "address": address, "stagingLocation": staging, **options}
    )
    return source.streamReader(spark_adapter.SCHEMA)


def _run(reader: Any, task: Any, column: str = "body") -> list[Any]:
    """Task ``task`` run as an executor runs it: its rows' ``column``."""
    return [value for batch in reader.read(task) for value in batch.column(column).to_pylist()]


def test_the_queue_reader_cuts_batches_at_the_byte_limit(broker: Any) -> None:
    """The stream reader called as Spark calls it: with ``maxBytesPerTrigger`` each batch
    holds what fits, in the order sent, a message larger than the limit alone; each task
    stages its messages before it accepts them, a batch run again reads the staged file
    (the same rows, nothing taken), and the files go once the batch is committed."""
    address = f"bytes-{uuid.uuid4().hex[:8]}"
    bodies = [bytes([i]) * 100 for i in range(20)] + [bytes(5000)] + [b"x" * 100] * 3
    with sockets.connect(f"{broker.url}/{address}") as conn:
        sender = conn.sender(address)
        for body in bodies:
            assert isinstance(sender.send(a.Message(body=body)), a.Accepted)
    small = len(a.Message(body=bodies[0]).encode())
    limit = 5 * small + small // 2
    staging = tempfile.mkdtemp()
    reader = _reader(broker.url, address, staging, maxBytesPerTrigger=str(limit))
    batches: list[list[bytes]] = []
    offset = reader.initialOffset()
    while sum(map(len, batches)) < len(bodies):
        end = reader.latestOffset(offset, None)
        assert end == {"batch": offset["batch"] + 1}
        (task,) = reader.partitions(offset, end)
        got = _run(reader, task)
        assert got, "a batch found nothing"
        # Staged, then accepted: the part is there, the task marked done, and the broker
        # has let them go.
        files = [(n, i, p) for n, i, p, _ in spark_adapter.staged_files(staging)]
        assert files == [(end["batch"], 0, None), (end["batch"], 0, 0)]
        left = len(bodies) - sum(map(len, batches)) - len(got)
        assert depth(broker, address) == left
        assert _run(reader, task) == got  # run again: the staged rows, nothing taken
        assert depth(broker, address) == left
        reader.commit(end)
        assert spark_adapter.staged_files(staging) == []
        batches.append(got)
        offset = end
    assert [body for batch in batches for body in batch] == bodies
    for batch in batches:
        assert len(batch) == 1 or sum(len(a.Message(body=b).encode()) for b in batch) <= limit
    assert [bodies[20]] in batches
    assert len(batches) >= 6
    # The queue is empty: the next batch takes nothing, and the reader then says so.
    end = reader.latestOffset(offset, None)
    assert [_run(reader, t) for t in reader.partitions(offset, end)] == [[]]
    reader.commit(end)
    assert reader.latestOffset(end, None) == end


def test_queue_mode_tasks_share_the_batch_and_stage_before_they_accept(
    broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``partitions`` tasks a batch, each with its share of the read limit (competing
    consumers); a task run again reads the parts it staged and, unless it was done, takes
    the rest of its share; a task whose part another attempt staged first gives back what
    it took; a task that cannot stage accepts nothing (the broker redelivers it, marked)."""
    from amqp_sansio.adapters.spark import queue_reader

    address = f"tasks-{uuid.uuid4().hex[:8]}"
    publish(broker.url, address, 100)
    staging = tempfile.mkdtemp()
    reader = _reader(broker.url, address, staging, partitions="3", maxMessagesPerTrigger="20")
    offset = reader.initialOffset()
    end = reader.latestOffset(offset, None)
    tasks = reader.partitions(offset, end)
    assert [(t.batch, t.index, t.max_rows) for t in tasks] == [(1, 0, 7), (1, 1, 7), (1, 2, 6)]
    ids = [_run(reader, t, "message_id") for t in tasks]
    assert [len(x) for x in ids] == [7, 7, 6]
    assert sorted(i for x in ids for i in x) == sorted(f"m{i}" for i in range(20))
    assert depth(broker, address) == 80
    reader.commit(end)

    offset, end = end, reader.latestOffset(end, None)
    first, second, third = reader.partitions(offset, end)
    theirs = record_batch([message_to_row(a.Message(body=b"theirs"), address)])
    # Task 0 of batch 2 ran before, staged a part of one message, and was lost: it reads
    # that part, then takes the rest of its share (6 of 7).
    assert spark_adapter.stage(staging, 2, 0, 0, theirs) is not None
    assert spark_adapter.stage(staging, 2, 0, 0, theirs) is None  # a part is staged once
    got = _run(reader, first)
    assert got[0] == b"theirs" and len(got) == 7
    assert depth(broker, address) == 74
    # Task 1 ran before and was done: its parts, nothing taken.
    spark_adapter.stage(staging, 2, 1, 0, theirs)
    spark_adapter.staging.mark_done(staging, 2, 1)
    assert _run(reader, second) == [b"theirs"]
    assert depth(broker, address) == 74

    # Another attempt of task 2 stages its part 0 while this one takes: this one's messages
    # go back, and it gives the other's part.
    real_stage = queue_reader.stage

    def raced(location: str, batch: int, index: int, part: int, records: Any) -> Any:
        real_stage(location, batch, index, part, theirs)
        return real_stage(location, batch, index, part, records)

    monkeypatch.setattr(queue_reader, "stage", raced)
    assert _run(reader, third) == [b"theirs"]
    monkeypatch.undo()
    assert depth_after_accepts(broker, address, 74) == 74  # given back, not accepted
    reader.commit(end)
    assert spark_adapter.staged_files(staging) == []

    # A task that cannot stage (a full disk, say) fails and accepts nothing: what it took
    # goes back marked as a failed delivery.
    def full(*args: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(queue_reader, "stage", full)
    failing = _reader(broker.url, address, tempfile.mkdtemp(), maxMessagesPerTrigger="5")
    (task,) = failing.partitions({"batch": 0}, {"batch": 1})
    with pytest.raises(OSError, match="No space left"):
        _run(failing, task)
    monkeypatch.undo()
    assert depth_after_accepts(broker, address, 74) == 74
    with sockets.connect(f"{broker.url}/{address}") as conn:
        receiver = conn.receiver(address, credit=5)
        redelivered = [receiver.receive(timeout=10) for _ in range(5)]
        assert all(d.message.header.delivery_count >= 1 for d in redelivered)
        for d in redelivered:
            d.release()


def test_an_old_checkpoint_offset_is_refused_with_a_reason() -> None:
    reader = _reader("amqp://h:5672", "q", tempfile.mkdtemp())
    with pytest.raises(RuntimeError, match="new checkpoint location"):
        reader.latestOffset({"staged": 12}, None)
    with pytest.raises(RuntimeError, match="went back from 5 to 2"):
        reader.partitions({"batch": 5}, {"batch": 2})


def test_a_staged_batch_reads_back_as_its_rows() -> None:
    """Every column of the schema, null and not, through stage() and read_staged()."""
    import datetime

    import pyarrow as pa
    from amqp_sansio.adapters.spark.rows import COLUMNS, message_to_row

    messages = [
        a.Message(body=b"plain"),
        a.Message(
            header=a.Header(durable=True, priority=7, ttl=1500, first_acquirer=True),
            properties=a.Properties(
                message_id=uuid.UUID(int=42),
                user_id=b"me",
                to="there",
                subject="s",
                reply_to="back",
                correlation_id=b"\x01\x02",
                content_type="text/plain",
                content_encoding="utf-8",
                absolute_expiry_time=1_700_000_000_123,
                creation_time=0,
                group_id="g",
                group_sequence=3,
                reply_to_group_id="rg",
            ),
            application_properties={"n": 1, "s": "x", "f": 1.5},
            message_annotations={a.Symbol("x-opt"): "y"},
            body=a.AmqpValue("é"),
        ),
        a.Message(properties=a.Properties(message_id=7), body=a.AmqpSequence([1, "two"])),
        a.Message(application_properties={}, body=None),
    ]
    rows = [message_to_row(m, f"q{i}") for i, m in enumerate(messages)]
    staging = tempfile.mkdtemp()
    path = spark_adapter.stage(staging, 10, 3, 2, record_batch(rows))
    assert path is not None and os.path.basename(path) == "000000000010-00003-00002.arrow"
    assert spark_adapter.staged_files(staging) == [(10, 3, 2, path)]
    got = [r for batch in spark_adapter.read_staged(path) for r in batch.to_pylist()][1:]
    # Maps come back as (key, value) pairs.
    pairs = [tuple(list(v.items()) if isinstance(v, dict) else v for v in row) for row in rows]
    expected = [dict(zip(COLUMNS, row, strict=True)) for row in pairs[1:]]
    assert got == expected
    assert got[0]["creation_time"] == datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
    assert got[0]["message_id"] == str(uuid.UUID(int=42))
    empty = spark_adapter.stage(staging, 14, 0, 0, record_batch([]))
    assert empty is not None
    with pa.memory_map(empty) as f:
        table = pa.ipc.open_file(f).read_all()
    assert table.num_rows == 0
    assert table.schema.names == list(COLUMNS)
