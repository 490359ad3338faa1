"""``format("amqp")`` with option ``protocol`` ``0-9-1``: the streaming read in queue mode
(receiver tasks staging each part before they ack it), the batch read and the writers, on a
local Spark (``local[2]``, UI off) against RabbitMQ through AMQP 0-9-1; what they did is
checked with pika, the reference 0-9-1 client. The options without Spark first."""

from __future__ import annotations

import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from amqp_sansio.adapters.spark.options import OptionError, ReadOptions, WriteOptions
from support.rabbitmq import rabbitmq_url

# -- options, without Spark ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "match"),
    [
        ({"protocol": "0-11"}, "option 'protocol' must be one of '1.0', '0-9-1', '0-10'"),
        ({"protocol": "0-9-1", "idleTimeout": "5"}, "'idleTimeout' is AMQP 1.0's"),
        ({"protocol": "0-9-1", "saslMechanisms": "PLAIN"}, "'saslMechanisms' is AMQP 1.0's"),
        ({"virtualHost": "v"}, "'virtualHost' is AMQP 0-9-1's"),
    ],
)
def test_bad_protocol_options_name_the_option(given: dict[str, str], match: str) -> None:
    with pytest.raises(OptionError, match=match):
        ReadOptions({"url": "amqp://h/q", **given}, streaming=False)


def test_the_091_url_has_the_virtual_host_as_its_path() -> None:
    opts = WriteOptions(
        {"url": "amqp://h:5673/orders", "protocol": "0-9-1", "username": "u", "password": "p"}
    )
    assert opts.protocol == "0-9-1" and opts.address == "orders"
    assert opts.vhost_url() == opts.url091() == "amqp://u:p@h:5673"
    opts = WriteOptions({"url": "amqp://h/orders", "protocol": "0-9-1", "virtualHost": "a/b"})
    assert opts.vhost_url() == "amqp://h:5672/a%2Fb"
    assert "idle_timeout" not in opts.vhost_connect_options()
    assert opts.connect_options091() == opts.vhost_connect_options()
    assert ReadOptions({"url": "amqp://h/q"}, streaming=False).protocol == "1.0"


# -- on Spark, against RabbitMQ --------------------------------------------------------------

pyspark = pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
spark_adapter = pytest.importorskip("amqp_sansio.adapters.spark")


def _pika(url: str) -> Any:
    import pika

    return pika.BlockingConnection(pika.URLParameters(url))


@pytest.fixture
def rabbit() -> str:
    return rabbitmq_url()


@pytest.fixture
def queue(rabbit: str) -> Iterator[str]:
    name = f"amqp-sansio-spark091-{uuid.uuid4().hex[:10]}"
    conn = _pika(rabbit)
    conn.channel().queue_declare(name)
    conn.close()
    try:
        yield name
    finally:
        conn = _pika(rabbit)
        conn.channel().queue_delete(name)
        conn.close()


def _publish(url: str, queue: str, count: int) -> None:
    import pika

    conn = _pika(url)
    channel = conn.channel()
    channel.confirm_delivery()
    for i in range(count):
        props = pika.BasicProperties(message_id=f"m{i}", headers={"i": str(i)}, delivery_mode=2)
        channel.basic_publish("", queue, f"payload {i}".encode(), props)
    conn.close()


def _depth(url: str, queue: str) -> int:
    conn = _pika(url)
    count: int = conn.channel().queue_declare(queue, passive=True).method.message_count
    conn.close()
    return count


def _reader(spark: Any, url: str, queue: str, **options: str) -> Any:
    reader = spark.readStream.format("amqp").options(
        url=url, address=queue, protocol="0-9-1", **options
    )
    return reader.load()


def test_a_streaming_read_stages_each_part_before_it_acks_it(
    spark: Any, rabbit: str, queue: str
) -> None:
    count, per_batch = 3_000, 1_000
    _publish(rabbit, queue, count)
    staging, checkpoint = tempfile.mkdtemp(), tempfile.mkdtemp()
    seen: list[tuple[int, int, int]] = []  # rows, acked (by the queue's depth), files staged
    rows: Counter[tuple[bytes, str, str, int]] = Counter()

    def on_batch(df: Any, batch_id: int) -> None:
        got = df.select("body", "message_id", "application_properties", "durable").collect()
        rows.update(
            (bytes(r.body), r.message_id, r.application_properties["i"], r.durable) for r in got
        )
        staged = len({n for n, *_rest in spark_adapter.staged_files(staging)})
        seen.append((len(got), count - _depth(rabbit, queue), staged))

    df = _reader(
        spark, rabbit, queue, stagingLocation=staging, maxMessagesPerTrigger=str(per_batch)
    )
    writer = df.writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint)
    query = spark_adapter.run_available_now(writer, timeout=180)
    assert query.exception() is None
    batches = [s for s in seen if s[0]]
    assert sum(n for n, _, _ in batches) == count
    assert all(n <= per_batch for n, _, _ in batches)
    done = 0
    for taken, acked, staged in batches:
        # While a batch runs, its messages are staged and acked (nothing past its share is
        # taken: the rest is still in the queue), and only its own file is left.
        done += taken
        assert (acked, staged) == (done, 1)
    # Each message once, its properties and headers as RabbitMQ maps them to 1.0.
    assert sorted(rows) == sorted(
        (f"payload {i}".encode(), f"m{i}", str(i), True) for i in range(count)
    )
    assert max(rows.values()) == 1
    assert _depth(rabbit, queue) == 0


def test_write_then_batch_read(spark: Any, rabbit: str, queue: str) -> None:
    df = spark.createDataFrame(
        [(f"row {i}".encode(), {"i": str(i)}) for i in range(200)],
        "body binary, application_properties map<string,string>",
    ).repartition(3)
    df.write.format("amqp").mode("append").options(
        url=rabbit, address=queue, protocol="0-9-1"
    ).save()
    assert _depth(rabbit, queue) == 200
    # What pika sees: persistent messages with the derived message-ids and the headers.
    conn = _pika(rabbit)
    _method, props, body = conn.channel().basic_get(queue, auto_ack=False)
    conn.close()  # (unacked: back to the queue)
    assert props.delivery_mode == 2 and props.message_id.startswith("amqp-sansio:")
    assert body == f"row {props.headers['i']}".encode()
    reader = spark.read.format("amqp").options(url=rabbit, address=queue, protocol="0-9-1")
    peeked = reader.load().collect()
    assert len(peeked) == 200 and _depth(rabbit, queue) == 200  # requeued: a look
    got = reader.option("consume", "true").option("partitions", "2").load().collect()
    assert sorted(bytes(r.body) for r in got) == sorted(f"row {i}".encode() for i in range(200))
    assert _depth(rabbit, queue) == 0


def test_a_write_to_no_queue_fails_the_task(spark: Any, rabbit: str) -> None:
    nowhere = f"amqp-sansio-no-such-queue-{uuid.uuid4().hex[:8]}"
    df = spark.createDataFrame([(b"x",)], "body binary")
    with pytest.raises(Exception, match=r"routed a message for .* to no queue: 312"):
        df.write.format("amqp").mode("append").options(
            url=rabbit, address=nowhere, protocol="0-9-1"
        ).save()
