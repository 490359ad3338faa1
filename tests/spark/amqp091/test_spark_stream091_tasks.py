"""Mode ``stream`` with option ``protocol`` ``0-9-1`` without Spark: what the driver and the
executors run (adapters/spark/stream_reader.py's planning, adapters/spark/amqp091/__init__.py's
bounds and per-range reader), called in this process as Spark calls it, against a real
broker: ours (in a thread) and RabbitMQ (``AMQP_SANSIO_RABBITMQ_URL``; skipped, saying why,
when it is not set or not reachable). Streams are queues declared with ``x-queue-type``
``stream`` (RabbitMQ's streams over 0-9-1); docs/spark.rst, "AMQP 0-9-1"."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.broker import run_broker
from amqp_sansio.adapters.spark import amqp091, stream_reader
from amqp_sansio.adapters.spark.options import OptionError, ReadOptions
from support.rabbitmq import rabbitmq_url

from amqp_sansio.amqp091 import BasicProperties

STREAM = {"x-queue-type": "stream"}


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


class Streams:
    """Streams (and queues) of the test's own, deleted after it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.names: list[str] = []

    def new(self, *, queue: bool = False, **arguments: Any) -> str:
        name = f"amqp-sansio-spark-s091-{uuid.uuid4().hex[:10]}"
        with sockets.connect(self.url, protocol="0-9-1") as conn:
            conn.channel().queue_declare(
                name, durable=True, arguments=arguments if queue else {**STREAM, **arguments}
            )
        self.names.append(name)
        return name

    def delete(self) -> None:
        with sockets.connect(self.url, protocol="0-9-1") as conn:
            channel = conn.channel()
            for name in self.names:
                channel.queue_delete(name)


@pytest.fixture
def streams(url: str) -> Iterator[Streams]:
    made = Streams(url)
    try:
        yield made
    finally:
        made.delete()


def publish(url: str, name: str, count: int, *, start: int = 0, size: int = 0) -> None:
    """``count`` messages (``payload i``, message-id ``m<i>``), confirmed."""
    with sockets.connect(url, protocol="0-9-1") as conn:
        channel = conn.channel()
        channel.confirm_select()
        trackers = [
            channel.basic_publish(
                "",
                name,
                f"payload {i}".encode() + b"." * size,
                properties=BasicProperties(message_id=f"m{i}"),
                wait=False,
            )
            for i in range(start, start + count)
        ]
        for tracker in trackers:
            assert tracker.confirmation(timeout=30).ack


def options(url: str, address: str, *, streaming: bool = False, **more: str) -> ReadOptions:
    given = {"url": url, "address": address, "protocol": "0-9-1", "mode": "stream", **more}
    return ReadOptions(given, streaming=streaming)


def read_all(opts: ReadOptions) -> list[tuple[Any, ...]]:
    reader = stream_reader.StreamBatchReader(opts)
    return [row for part in reader.partitions() for row in reader.read(part)]


def _offset(row: tuple[Any, ...]) -> int:
    offset: int = row[-2]
    return offset


def test_mode_stream_takes_protocol_091() -> None:
    opts = options("amqp://h", "s", partitions="2")
    assert (opts.protocol, opts.mode, opts.starting_offsets) == ("0-9-1", "stream", "earliest")
    with pytest.raises(OptionError, match="'stagingLocation' does not apply to mode 'stream'"):
        options("amqp://h", "s", streaming=True, stagingLocation="/tmp/x")


def test_a_batch_read_in_ranges(url: str, streams: Streams) -> None:
    name = streams.new()
    publish(url, name, 40)
    rows = read_all(options(url, name, partitions="3"))
    assert sorted(_offset(r) for r in rows) == list(range(40))
    assert all(r[0] == f"payload {_offset(r)}".encode() for r in rows)
    assert {r[2] for r in rows} == {name}
    # offsets given as JSON, and an end past the stream's: to its end
    given = options(url, name, startingOffsets=f'{{"{name}": 15}}', endingOffsets="latest")
    assert sorted(_offset(r) for r in read_all(given)) == list(range(15, 40))
    # reading took nothing
    assert len(read_all(options(url, name))) == 40


def test_the_bounds_seen_by_the_driver(url: str, streams: Streams) -> None:
    name = streams.new()
    opts = options(url, name)
    with amqp091.connect091(opts) as conn:
        assert amqp091.stream_bounds(conn, opts, name) == (0, 0)  # empty
        publish(url, name, 7)
        assert amqp091.stream_bounds(conn, opts, name) == (0, 7)
    # an empty stream: one partition, no rows
    empty = streams.new()
    parts = stream_reader.StreamBatchReader(options(url, empty)).partitions()
    assert [(p.start, p.end) for p in parts] == [(0, 0)]
    assert list(stream_reader.StreamBatchReader(options(url, empty)).read(parts[0])) == []


def test_a_streaming_read_plans_ranges_exactly_once(url: str, streams: Streams) -> None:
    name = streams.new()
    publish(url, name, 25)
    opts = options(
        url,
        name,
        streaming=True,
        startingOffsets="earliest",
        maxMessagesPerTrigger="10",
        partitions="2",
    )
    reader = stream_reader.StreamModeReader(opts)
    try:
        start = reader.initialOffset()
        assert start == {name: 0}
        seen: list[int] = []
        # (RabbitMQ's end, as a look finds it, may be behind for a moment: the next
        # trigger takes the rest; never a range twice, never past what is there)
        for _ in range(50):
            if len(seen) >= 25:
                break
            end = reader.latestOffset(start, reader.getDefaultReadLimit())
            for part in reader.partitions(start, end):
                seen.extend(_offset(r) for r in reader.read(part))
            reader.commit(end)
            start = end
        assert seen == list(range(25))
        publish(url, name, 3, start=25)
        for _ in range(50):
            end = reader.latestOffset(start, reader.getDefaultReadLimit())
            if end[name] == 28:
                break
            time.sleep(0.1)
        assert end == {name: 28} and reader.reportLatestOffset() == {name: 28}
    finally:
        reader.stop()


def test_a_queue_is_not_a_stream(url: str, streams: Streams) -> None:
    queue = streams.new(queue=True)
    publish(url, queue, 2)
    with pytest.raises(RuntimeError, match="is not a stream"):
        read_all(options(url, queue))
    # nothing was taken: the messages went back (unacked) when the channel closed
    with sockets.connect(url, protocol="0-9-1") as conn:
        assert conn.channel().queue_declare(queue, passive=True).message_count == 2


def test_a_range_past_what_is_there_times_out(url: str, streams: Streams) -> None:
    name = streams.new()
    publish(url, name, 2)
    opts = options(url, name, timeout="1")
    with pytest.raises(RuntimeError, match=r"no message at offset 2 of stream .* within 1.0 s"):
        list(stream_reader.read_range(opts, stream_reader.OffsetRange(name, 0, 5)))


def test_data_loss_fails_or_is_skipped(ours: str, caplog: pytest.LogCaptureFixture) -> None:
    streams = Streams(ours)
    try:
        # retention keeps about 2,000 bytes: the oldest go
        name = streams.new(**{"x-max-length-bytes": 2000})
        publish(ours, name, 40, size=100)
        part = stream_reader.OffsetRange(name, 0, 40)
        with pytest.raises(RuntimeError, match=r"offsets 0 to \d+ of stream .* were dropped"):
            list(stream_reader.read_range(options(ours, name), part))
        skipping = options(ours, name, failOnDataLoss="false")
        with caplog.at_level(logging.WARNING, logger="amqp_sansio.spark"):
            rows = list(stream_reader.read_range(skipping, part))
        kept = [_offset(r) for r in rows]
        assert kept and kept == list(range(kept[0], 40)) and kept[0] > 0
        assert "skipped (failOnDataLoss is false)" in caplog.text
    finally:
        streams.delete()


def test_rabbitmq_offsets_may_skip_without_loss() -> None:
    """RabbitMQ starts each segment with a tracking record that takes an offset: with small
    segments a stream's offsets skip some, which is no data loss."""
    url = rabbitmq_url()
    streams = Streams(url)
    try:
        name = streams.new(**{"x-stream-max-segment-size-bytes": 500})
        publish(url, name, 60, size=20)
        rows = read_all(options(url, name, partitions="4"))
        offsets = sorted(_offset(r) for r in rows)
        assert len(rows) == 60 and len(set(offsets)) == 60
        assert offsets[-1] > 59  # some skipped
        assert sorted(int(r[0].split(b".")[0].split()[1]) for r in rows) == list(range(60))
    finally:
        streams.delete()


def test_the_end_of_a_stream_never_quiet(ours: str) -> None:
    """A stream written to without a pause: the look for its end stops after ten times
    ``pollInterval``, and what it gives is an offset the stream has."""
    streams = Streams(ours)
    stop = threading.Event()

    def keep_writing() -> None:
        with sockets.connect(ours, protocol="0-9-1") as conn:
            channel = conn.channel()
            deadline = time.monotonic() + 30
            while not stop.is_set() and time.monotonic() < deadline:
                channel.basic_publish("", name, b"more")
                time.sleep(0.01)

    try:
        name = streams.new()
        publish(ours, name, 5)
        writer = threading.Thread(target=keep_writing, daemon=True)
        writer.start()
        opts = options(ours, name, pollInterval="0.3")
        started = time.monotonic()
        with amqp091.connect091(opts) as conn:
            first, end = amqp091.stream_bounds(conn, opts, name)
        assert time.monotonic() - started < 10  # (the writer goes on for 30 s)
        assert first == 0 and end >= 5
        stop.set()
        writer.join(timeout=30)
        rows = list(stream_reader.read_range(opts, stream_reader.OffsetRange(name, 0, end)))
        assert [_offset(r) for r in rows] == list(range(end))
    finally:
        stop.set()
        streams.delete()
