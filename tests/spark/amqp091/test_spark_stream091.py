"""``format("amqp")`` in mode ``stream`` with option ``protocol`` ``0-9-1``, on a local Spark
(``local[2]``, UI off): batch and streaming reads of offset ranges from streams (queues
declared with ``x-queue-type`` ``stream``) of our broker, started as a user starts it
(``amqp-sansio broker``, defaults), and of RabbitMQ (``AMQP_SANSIO_RABBITMQ_URL``; skipped,
saying why, when it is not set or not reachable); the 0-9-1 writer into a stream; and across
protocols on our broker, a stream written over 0-9-1 read by the 1.0 stream mode
(docs/spark.rst, "AMQP 0-9-1")."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
from amqp_sansio.adapters import spark as spark_adapter
from support.broker_process import BrokerProcess
from support.rabbitmq import rabbitmq_url

STREAM = {"x-queue-type": "stream"}


@pytest.fixture(scope="module")
def ours() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


@pytest.fixture(params=["ours", "rabbitmq"])
def url(request: pytest.FixtureRequest) -> str:
    if request.param == "ours":
        process: BrokerProcess = request.getfixturevalue("ours")
        return f"amqp://guest:guest@127.0.0.1:{process.port}"
    return rabbitmq_url()


def _pika(url: str) -> Any:
    import pika

    return pika.BlockingConnection(pika.URLParameters(url))


@pytest.fixture
def stream(url: str) -> Iterator[str]:
    name = f"amqp-sansio-spark-s091-{uuid.uuid4().hex[:10]}"
    with _pika(url) as conn:
        conn.channel().queue_declare(name, durable=True, arguments=STREAM)
    try:
        yield name
    finally:
        with _pika(url) as conn:
            conn.channel().queue_delete(name)


def _publish(url: str, name: str, count: int, *, start: int = 0) -> None:
    import pika

    with _pika(url) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        for i in range(start, start + count):
            props = pika.BasicProperties(message_id=f"m{i}", headers={"i": str(i)})
            channel.basic_publish("", name, f"payload {i}".encode(), props)


def _read(spark: Any, url: str, name: str, **options: str) -> Any:
    reader = spark.read.format("amqp").options(
        url=url, address=name, protocol="0-9-1", mode="stream", **options
    )
    return reader.load()


def test_a_batch_read_of_offset_ranges(spark: Any, url: str, stream: str) -> None:
    _publish(url, stream, 60)
    df = _read(spark, url, stream, partitions="3")
    got = df.select("offset", "body", "message_id", "application_properties").collect()
    assert sorted(r.offset for r in got) == list(range(60))
    assert all(r.body == f"payload {r.offset}".encode() for r in got)
    assert all(
        (r.message_id, r.application_properties["i"]) == (f"m{r.offset}", str(r.offset))
        for r in got
    )
    ranged = _read(
        spark,
        url,
        stream,
        startingOffsets=f'{{"{stream}": 10}}',
        endingOffsets=f'{{"{stream}": 25}}',
        partitions="2",
    )
    assert sorted(r.offset for r in ranged.select("offset").collect()) == list(range(10, 25))
    assert _read(spark, url, stream).count() == 60  # reading took nothing


def test_a_streaming_read_is_exactly_once_across_a_crash(spark: Any, url: str, stream: str) -> None:
    count, per_batch = 1_000, 400
    _publish(url, stream, count)
    checkpoint = tempfile.mkdtemp()
    out: dict[int, list[int]] = {}
    crashed: list[int] = []

    def run(crash_at: int | None) -> None:
        def on_batch(df: Any, batch_id: int) -> None:
            offsets = [r.offset for r in df.select("offset").collect()]
            if batch_id == crash_at:
                crashed.extend(offsets)
                raise RuntimeError("the job crashed")
            out[batch_id] = offsets

        df = (
            spark.readStream.format("amqp")
            .options(url=url, address=stream, protocol="0-9-1", mode="stream")
            .option("startingOffsets", "earliest")
            .option("maxMessagesPerTrigger", str(per_batch))
            .option("partitions", "2")
            .load()
        )
        writer = df.writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint)
        if crash_at is not None:
            with pytest.raises(Exception, match="the job crashed"):
                spark_adapter.run_available_now(writer, timeout=180)
        else:
            query = spark_adapter.run_available_now(writer, timeout=180)
            assert query.exception() is None

    crash_at = 1 if spark_adapter.ADMISSION_CONTROL else 0
    run(crash_at=crash_at)
    assert len(out) == crash_at
    _publish(url, stream, 100, start=count)  # more arrives while it is down
    run(crash_at=None)
    offsets = sorted(o for batch in out.values() for o in batch)
    assert offsets == list(range(count + 100))  # every offset exactly once
    assert sorted(out[crash_at]) == sorted(crashed)  # the crashed batch ran again: the same range


def test_the_091_writer_writes_a_stream(spark: Any, url: str, stream: str) -> None:
    df = spark.createDataFrame(
        [(f"row {i}".encode(), {"i": str(i)}) for i in range(100)],
        "body binary, application_properties map<string,string>",
    ).repartition(2)
    df.write.format("amqp").mode("append").options(url=url, address=stream, protocol="0-9-1").save()
    got = _read(spark, url, stream).select("offset", "body", "application_properties").collect()
    assert sorted(r.offset for r in got) == list(range(100))
    assert sorted(bytes(r.body) for r in got) == sorted(f"row {i}".encode() for i in range(100))
    assert all(r.body == f"row {r.application_properties['i']}".encode() for r in got)


def test_written_over_091_read_over_10(spark: Any, ours: BrokerProcess) -> None:
    url091 = f"amqp://guest:guest@127.0.0.1:{ours.port}"
    name = f"amqp-sansio-spark-x-{uuid.uuid4().hex[:8]}"
    with _pika(url091) as conn:
        conn.channel().queue_declare(name, durable=True, arguments=STREAM)
    df = spark.createDataFrame(
        [(f"row {i}".encode(), f"id{i}") for i in range(50)], "body binary, message_id string"
    ).coalesce(1)
    df.write.format("amqp").mode("append").options(
        url=url091, address=name, protocol="0-9-1"
    ).save()
    read10 = spark.read.format("amqp").options(
        url=ours.url, address=name, mode="stream", partitions="2"
    )
    got = read10.load().select("offset", "body", "message_id").collect()
    assert sorted((r.offset, bytes(r.body), r.message_id) for r in got) == [
        (i, f"row {i}".encode(), f"id{i}") for i in range(50)
    ]
    read091 = _read(spark, url091, name).select("offset", "body", "message_id").collect()
    assert sorted(tuple(r) for r in read091) == sorted(tuple(r) for r in got)
