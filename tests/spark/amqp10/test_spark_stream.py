"""``format("amqp")`` in mode ``stream`` (adapters/spark/stream_reader.py, AMQP 1.0's part in
adapters/spark/amqp10/): offset ranges of the
reference broker's stream nodes read on executors, exactly-once counts across a crash and a
restart from the checkpoint, startingOffsets/endingOffsets, failOnDataLoss, bad options.
Local Spark (``local[2]``, UI off)."""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from amqp_sansio.adapters.spark.options import OptionError, ReadOptions

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig

pyspark = pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
from amqp_sansio.adapters import sockets  # noqa: E402
from amqp_sansio.adapters import spark as spark_adapter  # noqa: E402
from amqp_sansio.adapters.broker import run_broker  # noqa: E402
from amqp_sansio.adapters.spark import stream_reader as st  # noqa: E402

URL = "amqp://h:5672"


# -- options and planning, without Spark -----------------------------------------------------


def opts(streaming: bool = True, **given: str) -> ReadOptions:
    return ReadOptions({"url": URL, "mode": "stream", **given}, streaming=streaming)


@pytest.mark.parametrize(
    ("given", "streaming", "match"),
    [
        ({"stagingLocation": "/s"}, True, "'stagingLocation' does not apply to mode 'stream'"),
        ({"maxBytesPerTrigger": "10"}, True, "'maxBytesPerTrigger' does not apply"),
        ({"undecodable": "reject"}, True, "'undecodable' does not apply"),
        ({"consume": "true"}, False, "'consume' does not apply"),
        ({"startingOffsets": "middle"}, True, "'startingOffsets' must be"),
        ({"startingOffsets": '{"a": -3}'}, True, "'startingOffsets' must be"),
        ({"startingOffsets": '{"a": "1"}'}, True, "'startingOffsets' must be"),
        ({"startingOffsets": '{"a": 1}'}, True, "missing: \\['b'\\]"),
        ({"startingOffsets": '{"a": 1, "b": 2, "c": 3}'}, True, "not read: \\['c'\\]"),
        ({"startingOffsets": "latest"}, False, "cannot be 'latest' for a batch read"),
        ({"endingOffsets": "latest"}, True, "'endingOffsets' applies to a batch read"),
        ({"endingOffsets": "earliest"}, False, "cannot be 'earliest'"),
        ({"endingOffsets": '{"a": -2, "b": 5}'}, False, "cannot be 'earliest'"),
        ({"failOnDataLoss": "perhaps"}, True, "'failOnDataLoss' must be true or false"),
        ({"maxMessagesPerTrigger": "5"}, False, "streaming read"),
    ],
)
def test_bad_stream_options_name_the_option(
    given: dict[str, str], streaming: bool, match: str
) -> None:
    with pytest.raises(OptionError, match=match):
        opts(streaming, address="a,b", **given)


def test_stream_option_defaults_and_json() -> None:
    streaming = opts(address="a")
    assert (streaming.starting_offsets, streaming.fail_on_data_loss) == ("latest", True)
    batch = opts(False, address="a,b", startingOffsets='{"a": 3, "b": -2}')
    assert batch.starting_offsets == {"a": 3, "b": -2} and batch.ending_offsets == "latest"
    assert opts(False, address="a", failOnDataLoss="false").fail_on_data_loss is False
    known = {"a": (5, 20), "b": (0, 7)}
    assert st._resolve(batch.starting_offsets, known, -2) == {"a": 3, "b": 0}
    assert st._resolve("latest", known, -2) == {"a": 20, "b": 7}
    assert st._resolve({"a": -1, "b": 4}, known, -2) == {"a": 20, "b": 4}


def test_read_limit_is_shared_by_what_each_address_has() -> None:
    start = {"a": 0, "b": 10, "c": 5}
    end = {"a": 100, "b": 10, "c": 305}
    admitted = st._admit(start, end, 40)
    assert sum(admitted[k] - start[k] for k in start) == 40
    assert admitted == {"a": 10, "b": 10, "c": 35}
    assert st._admit(start, end, 1000) == end
    assert st._admit({"a": 0, "b": 0}, {"a": 1, "b": 1}, 1) == {"a": 1, "b": 0}


def test_ranges_cut_each_address() -> None:
    ranges = st._ranges({"a": 0, "b": 5}, {"a": 10, "b": 5, "c": 3}, 3)
    assert [(r.address, r.start, r.end) for r in ranges] == [  # type: ignore[attr-defined]
        ("a", 0, 4),
        ("a", 4, 8),
        ("a", 8, 10),
    ]


# -- on Spark --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    with run_broker() as server:
        yield server


@pytest.fixture(scope="module")
def short() -> Iterator[Any]:
    """A broker whose streams keep their last 60 messages."""
    with run_broker(config=BrokerConfig(stream_max_length=60, streams=["short"])) as server:
        yield server


def publish(url: str, address: str, count: int, *, start: int = 0) -> None:
    with sockets.connect(f"{url}/{address}") as conn:
        sender = conn.sender(address)
        trackers = [
            sender.send(a.Message(body=f"payload {i}".encode()), wait=False)
            for i in range(start, start + count)
        ]
        for tracker in trackers:
            assert isinstance(tracker.outcome(timeout=30), a.Accepted)


def read(spark: Any, url: str, address: str, **options: str) -> Any:
    reader = spark.read.format("amqp").option("url", url).option("address", address)
    for key, value in {"mode": "stream", **options}.items():
        reader = reader.option(key, value)
    return reader.load()


def test_exactly_once_counts_across_a_crash_and_a_restart(spark: Any, broker: Any) -> None:
    address = f"stream/eo-{uuid.uuid4().hex[:8]}"
    count, per_batch = 5_000, 2_000
    publish(broker.url, address, count)
    checkpoint = tempfile.mkdtemp()
    # The sink: foreachBatch keyed by batch id, so that a batch run again replaces its
    # output (an idempotent sink, as Spark's exactly-once needs).
    out: dict[int, list[tuple[int, bytes]]] = {}
    crashed: list[tuple[int, bytes]] = []

    def run(crash_at: int | None) -> Any:
        def on_batch(df: Any, batch_id: int) -> None:
            rows = [(r.offset, bytes(r.body)) for r in df.select("offset", "body").collect()]
            if batch_id == crash_at:
                crashed.extend(rows)
                raise RuntimeError("the job crashed")
            out[batch_id] = rows

        df = (
            spark.readStream.format("amqp")
            .option("url", broker.url)
            .option("address", address)
            .option("mode", "stream")
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

    # pyspark 4.0 and 4.1 do not tell the reader where a query starts: its first batch
    # reads to the stream's end, and the limit holds from the second (docs/spark.rst).
    crash_at = 1 if spark_adapter.ADMISSION_CONTROL else 0
    run(crash_at=crash_at)
    assert len(out) == crash_at  # stopped in the middle
    assert len(crashed) == (per_batch if crash_at else count)
    publish(broker.url, address, 500, start=count)  # more arrives while it is down
    run(crash_at=None)
    rows = [row for batch in out.values() for row in batch]
    offsets = sorted(o for o, _ in rows)
    assert offsets == list(range(count + 500))  # every offset exactly once
    assert all(body == f"payload {o}".encode() for o, body in rows)
    assert sorted(out[crash_at]) == sorted(crashed)  # the crashed batch ran again: the same range
    limited = [b for i, b in out.items() if i or spark_adapter.ADMISSION_CONTROL]
    assert limited and all(len(batch) <= per_batch for batch in limited)


def test_batch_read_of_an_offset_range(spark: Any, broker: Any) -> None:
    address = f"stream/b-{uuid.uuid4().hex[:8]}"
    publish(broker.url, address, 50)
    df = read(
        spark,
        broker.url,
        address,
        startingOffsets=f'{{"{address}": 10}}',
        endingOffsets=f'{{"{address}": 30}}',
        partitions="3",
    )
    assert df.rdd.getNumPartitions() == 3
    got = df.select("offset", "partition", "body", "address").collect()
    assert sorted(r.offset for r in got) == list(range(10, 30))
    assert {(r.partition, r.address) for r in got} == {(0, address)}
    assert all(r.body == f"payload {r.offset}".encode() for r in got)
    # Defaults: from the earliest to the latest; an end past the stream reads to its end.
    assert read(spark, broker.url, address).count() == 50
    beyond = read(spark, broker.url, address, endingOffsets=f'{{"{address}": 500}}')
    assert beyond.count() == 50
    assert broker.broker.nodes[address].depth == 50  # reading took nothing


def test_fail_on_data_loss(spark: Any, short: Any) -> None:
    url = short.url
    publish(url, "short", 100)  # retention keeps the last 60: offsets 40 to 99
    start = '{"short": 0}'
    with pytest.raises(Exception, match=r"offsets 0 to 39 of stream 'short' were dropped"):
        read(spark, url, "short", startingOffsets=start).collect()
    got = read(spark, url, "short", startingOffsets=start, failOnDataLoss="false")
    assert sorted(r.offset for r in got.select("offset").collect()) == list(range(40, 100))


def test_stream_mode_needs_a_stream_and_bad_options_fail_at_once(spark: Any, broker: Any) -> None:
    queue = f"q-{uuid.uuid4().hex[:8]}"
    publish(broker.url, queue, 1)
    with pytest.raises(Exception, match="is not a stream node"):
        read(spark, broker.url, queue).collect()
    with pytest.raises(Exception, match="option 'startingOffsets' must be"):
        read(spark, broker.url, "stream/s", startingOffsets="soon").collect()
    df = (
        spark.readStream.format("amqp")
        .option("url", broker.url)
        .option("address", "stream/s")
        .option("mode", "stream")
        .option("endingOffsets", "latest")
        .load()
    )
    with pytest.raises(Exception, match="'endingOffsets' applies to a batch read"):
        df.writeStream.format("noop").start().awaitTermination(60)


def test_a_batch_read_of_an_empty_range_has_no_rows(spark: Any, broker: Any) -> None:
    address = f"stream/none-{uuid.uuid4().hex[:8]}"
    publish(broker.url, address, 3)
    past = json.dumps({address: 3})
    assert read(spark, broker.url, address, startingOffsets=past).collect() == []
