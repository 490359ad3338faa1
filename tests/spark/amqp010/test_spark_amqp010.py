"""``format("amqp")`` with option ``protocol`` ``0-10`` (docs/spark.rst, "AMQP 0-10"): the
options and the 0-10 mapping without Spark; then against the 0-10 side of our broker,
started as a user starts it (``amqp-sansio broker``, its defaults): what the executors run
(the writer's transfers confirmed by ``execution.sync``, the batch reader's subscription, a
streaming read's receiver tasks staging each part before they accept it), called in this
process as Spark calls it, and at last the sink and the source on a local Spark
(``local[2]``, UI off), rows written and read back compared. What the broker holds is
asked over 0-10 (``queue.query``)."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters.spark import calls
from amqp_sansio.adapters.spark.amqp010 import mapping
from amqp_sansio.adapters.spark.options import OptionError, ReadOptions, WriteOptions
from amqp_sansio.adapters.spark.rows import FIELDS, message_to_row, row_to_message

import amqp_sansio as a

# -- options, without Spark ------------------------------------------------------------------


def test_protocol_0_10_reads_queues_at_the_virtual_host_of_the_url() -> None:
    opts = ReadOptions(
        {"url": "amqp://u:p@h:5673/orders", "protocol": "0-10", "virtualHost": "v/1"},
        streaming=False,
    )
    assert (opts.protocol, opts.addresses, opts.modes) == ("0-10", ["orders"], ("queue",))
    assert opts.vhost_url() == "amqp://u:p@h:5673/v%2F1"
    assert "idle_timeout" not in opts.vhost_connect_options()
    assert calls.of(opts).__name__ == "amqp_sansio.adapters.spark.amqp010"


@pytest.mark.parametrize(
    ("given", "match"),
    [
        (
            {"protocol": "0-11"},
            r"option 'protocol' must be one of '1.0', '0-9-1', '0-10', not '0-11'",
        ),
        ({"protocol": "AMQP"}, r"must be one of '1.0', '0-9-1', '0-10', not 'AMQP'"),
        ({"protocol": "0-10", "idleTimeout": "5"}, r"'idleTimeout' is AMQP 1.0's, not AMQP 0-10's"),
        ({"protocol": "0-10", "containerId": "c"}, r"'containerId' is AMQP 1.0's, not AMQP 0-10's"),
        ({"virtualHost": "v"}, r"'virtualHost' is AMQP 0-9-1's and AMQP 0-10's, not AMQP 1.0's"),
        ({"protocol": "0-10", "mode": "stream"}, r"'stream' is not available with protocol '0-10'"),
    ],
)
def test_bad_protocol_options_name_the_option(given: dict[str, str], match: str) -> None:
    with pytest.raises(OptionError, match=match):
        ReadOptions({"url": "amqp://h/q", **given}, streaming=False)
    if "mode" not in given:  # the writer checks them alike
        with pytest.raises(OptionError, match=match):
            WriteOptions({"url": "amqp://h/q", **given})


def test_a_job_loads_only_the_folder_of_its_protocol() -> None:
    """The table's folders are imported when a job asks for them: a 1.0 job (its reader,
    writer and calls) never loads the Spark adapter's 0-9-1 or 0-10 folder."""
    import subprocess
    import sys

    script = """
import sys
from amqp_sansio.adapters.spark import batch, calls, queue_reader, stream_reader
from amqp_sansio.adapters.spark.options import ReadOptions
picked = calls.of(ReadOptions({"url": "amqp://h/q"}, streaming=False))
folders = ("amqp_sansio.adapters.spark.amqp091", "amqp_sansio.adapters.spark.amqp010")
loaded = sorted(m for m in sys.modules if m.startswith(folders))
print(picked.__name__, loaded)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split(" ", 1) == ["amqp_sansio.adapters.spark.amqp10", "[]\n"]


def test_the_stream_calls_say_0_10_has_none() -> None:
    """Mode ``stream`` is refused with the options; the folder's stream calls say why too."""
    opts = ReadOptions({"url": "amqp://h/q", "protocol": "0-10"}, streaming=False)
    protocol = calls.of(opts)
    for call in (
        lambda: protocol.stream_connection(opts),
        lambda: protocol.stream_bounds(None, opts, "q"),
        lambda: protocol.read_rows(opts, "q", 0, 1, lambda first, end: None),
    ):
        with pytest.raises(RuntimeError, match="AMQP 0-10 has no streams"):
            call()


# -- the mapping, without a broker -----------------------------------------------------------

_WHEN = datetime.datetime(2026, 12, 6, 17, 0, 5, tzinfo=datetime.timezone.utc)


def _full_row() -> dict[str, Any]:
    return {
        "body": b"hello",
        "body_type": "data",
        "durable": True,
        "priority": 7,
        "ttl": 60000,
        "message_id": "amqp-sansio:abc:1",
        "user_id": b"guest",
        "to": "orders",
        "subject": "greeting",
        "reply_to": "replies",
        "correlation_id": "c-1",
        "content_type": "text/plain",
        "content_encoding": "utf-8",
        "absolute_expiry_time": _WHEN + datetime.timedelta(hours=1),
        "creation_time": _WHEN,
        "group_id": "g",
        "group_sequence": 3,
        "reply_to_group_id": "rg",
        "application_properties": {"i": "1", "x-opt-note": "n"},
        "message_annotations": {"x-opt-kind": "k", "not-x": "lost"},
    }


def _round_trip(message: a.Message) -> a.Message:
    header, body = mapping.to_010(message, routing_key="orders")
    return mapping.from_010(header, body)


def test_a_row_maps_to_0_10_and_back() -> None:
    """Every column of a row written over 0-10 reads back the same (timestamps to the
    second); what 0-10 has no field for rides in application headers; the exchange and
    routing key come as message annotations, as for 0-9-1."""
    row = _full_row()
    message = row_to_message(row)
    header, body = mapping.to_010(message, routing_key="orders")
    delivery, properties = header
    assert isinstance(delivery, a.amqp010.definitions.DeliveryProperties)
    assert (delivery.delivery_mode, delivery.priority, delivery.ttl) == (2, 7, 60000)
    assert delivery.timestamp == int(_WHEN.timestamp()) and delivery.routing_key == "orders"
    assert isinstance(properties, a.amqp010.definitions.MessageProperties)
    assert properties.message_id is None  # not a UUID: a header
    assert properties.application_headers is not None
    assert properties.application_headers["x-amqp-1.0-message-id"] == "amqp-sansio:abc:1"
    assert properties.application_headers["qpid.subject"] == "greeting"
    assert (properties.correlation_id, properties.app_id) == (b"c-1", b"g")
    assert body == b"hello"
    read = message_to_row(mapping.from_010(header, body), "orders")
    back = dict(zip([name for name, _ in FIELDS], read, strict=True))
    for name, value in row.items():
        if name == "message_annotations":
            continue
        if name == "application_properties":
            assert back[name] == {"i": "1"}  # "x-..." names are annotations when read
            continue
        assert back[name] == value, name
    assert back["message_annotations"] == {
        "x-opt-kind": "k",
        "x-opt-note": "n",
        "x-routing-key": "orders",
    }
    assert (back["first_acquirer"], back["delivery_count"]) == (False, 0)


@pytest.mark.parametrize(
    "body",
    [
        a.AmqpValue("text"),
        a.AmqpValue(b"\x00\x01"),
        a.AmqpValue({"k": 1}),
        [a.AmqpSequence([1, 2]), a.AmqpSequence(["x"])],
        None,
        [a.Data(b"ab"), a.Data(b"cd")],
    ],
)
def test_every_body_reads_back_as_written(body: Any) -> None:
    message = a.Message(body=body)
    back = _round_trip(message)
    expected = a.Data(b"abcd") if isinstance(body, list) and isinstance(body[0], a.Data) else body
    if isinstance(expected, list):
        expected = tuple(expected)
    assert back.body == expected
    assert back.header is None and back.properties is None
    assert back.application_properties is None


def test_ids_of_every_type_and_a_redelivery() -> None:
    some = uuid.uuid4()
    for message_id, correlation_id in [(some, 7), (12, some), (b"\xff", b"\xfe\x00")]:
        message = a.Message(
            properties=a.Properties(message_id=message_id, correlation_id=correlation_id),
            body=b"",
        )
        back = _round_trip(message)
        assert back.properties is not None
        assert (back.properties.message_id, back.properties.correlation_id) == (
            message_id,
            correlation_id,
        )
    spec = a.amqp010.definitions
    redelivered = (spec.DeliveryProperties(redelivered=True),)
    assert mapping.from_010(redelivered, b"x").header == a.Header(delivery_count=1)
    plain = mapping.from_010((spec.DeliveryProperties(delivery_mode=1, redelivered=True),), b"")
    assert plain.header == a.Header(durable=False, delivery_count=1)
    reply = spec.MessageProperties(reply_to=spec.ReplyTo(exchange="amq.direct", routing_key="k"))
    got = mapping.from_010((reply,), b"")
    assert got.properties is not None and got.properties.reply_to == "amq.direct/k"
    assert mapping.from_010((), b"x") == a.Message(body=a.Data(b"x"))


def test_a_body_that_says_it_is_10_sections_and_is_not_cannot_be_read() -> None:
    spec = a.amqp010.definitions
    header = (spec.MessageProperties(application_headers={mapping.BODY_SECTIONS: True}),)
    with pytest.raises((a.DecodeError, ValueError)):
        mapping.from_010(header, b"\x00\x53")


# -- against our broker's 0-10 side, without Spark -------------------------------------------

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
from amqp_sansio.adapters import sockets  # noqa: E402
from amqp_sansio.adapters import spark as spark_adapter  # noqa: E402
from amqp_sansio.adapters.spark import amqp010, staging  # noqa: E402
from amqp_sansio.adapters.spark.batch import read_queue  # noqa: E402
from support.broker_process import BrokerProcess  # noqa: E402


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with BrokerProcess() as process:
        yield f"amqp://guest:guest@127.0.0.1:{process.port}"


def _name() -> str:
    """A session name of its own."""
    return f"test-{uuid.uuid4()}"


class Queues:
    """Queues of the test's own (unique names), declared and deleted over 0-10."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.names: list[str] = []

    def new(self) -> str:
        name = f"amqp-sansio-spark010-{uuid.uuid4().hex[:10]}"
        with sockets.connect(self.url, protocol="0-10") as conn, conn.session(_name()) as s:
            s.queue_declare(name, durable=True)
        self.names.append(name)
        return name

    def delete(self) -> None:
        spec = a.amqp010.definitions
        with sockets.connect(self.url, protocol="0-10") as conn, conn.session(_name()) as s:
            for name in self.names:
                s.command(spec.QueueDelete(queue=name))


@pytest.fixture
def queues(url: str) -> Iterator[Queues]:
    made = Queues(url)
    try:
        yield made
    finally:
        made.delete()


def depth(url: str, queue: str, expected: int | None = None, wait: float = 5.0) -> int:
    """The queue's messages (``queue.query``); with ``expected``, asked again (for up to
    ``wait`` seconds) while above it: an accept sent without waiting is applied when the
    broker reads it."""
    import time

    deadline = time.monotonic() + wait
    with sockets.connect(url, protocol="0-10") as conn, conn.session(_name()) as session:
        while True:
            found = int(session.queue_query(queue).message_count or 0)
            if expected is None or found <= expected or time.monotonic() >= deadline:
                return found
            time.sleep(0.02)


def publish(url: str, queue: str, count: int, *, start: int = 0) -> None:
    """``count`` persistent messages with a message-id and a header each, completed."""
    with sockets.connect(url, protocol="0-10") as conn, conn.session(_name()) as session:
        for i in range(start, start + count):
            session.send(
                f"payload {i}".encode(),
                routing_key=queue,
                durable=True,
                headers={"i": str(i), mapping.MESSAGE_ID: f"m{i}"},
                wait=i == start + count - 1,
            )


def _write(url: str, queue: str, **options: str) -> WriteOptions:
    return WriteOptions({"url": f"{url}/{queue}", "protocol": "0-10", **options})


def test_published_rows_arrive_with_their_properties(url: str, queues: Queues) -> None:
    """The writer's transfers, confirmed by ``execution.sync`` every ``window``; a 0-10
    consumer sees each message's properties and headers."""
    queue = queues.new()
    messages = [
        row_to_message(
            {
                "body": f"row {i}".encode(),
                "durable": True,
                "priority": 7,
                "correlation_id": "c",
                "content_type": "text/plain",
                "application_properties": {"i": str(i)},
            },
            message_id=f"row-{i}",
        )
        for i in range(150)
    ]
    told: list[int] = []
    options = _write(url, queue, window="64")
    assert amqp010.publish_rows(options, iter(messages), 30, done=told.append) == 150
    assert told == [64, 128, 150]
    assert depth(url, queue) == 150
    with sockets.connect(url, protocol="0-10") as conn, conn.session(_name()) as session:
        session.subscribe(queue, credit=10, accept=True)
        got = [session.receive(queue, timeout=10) for _ in range(150)]
        session.accept(*got)
    assert [d.body for d in got] == [f"row {i}".encode() for i in range(150)]
    for i, d in enumerate(got):
        assert (d.durable, d.routing_key, d.content_type) == (True, queue, "text/plain")
        # A message-id that is not a UUID (the writers' are not) rides in a header.
        assert (d.message_id, d.correlation_id) == (None, b"c")
        assert d.headers == {"i": str(i), mapping.MESSAGE_ID: f"row-{i}"}
        assert d.delivery_properties is not None and d.delivery_properties.priority == 7
    assert depth(url, queue) == 0


def test_a_write_to_no_queue_fails_naming_it(url: str) -> None:
    """The default exchange drops what no queue takes: the writer asks first and fails."""
    nowhere = f"amqp-sansio-no-such-queue-{uuid.uuid4().hex[:8]}"
    with pytest.raises(RuntimeError, match=rf"the broker has no queue '{nowhere}'"):
        amqp010.publish_rows(_write(url, nowhere), iter([a.Message(body=b"x")]), 30)


def test_a_refused_transfer_fails_the_write(url: str, queues: Queues, monkeypatch: Any) -> None:
    """A transfer the broker refuses (here: to an exchange it does not have) ends the
    session with ``execution.exception``: the sync fails, and so does the task, with the
    broker's words."""
    queue = queues.new()
    spec = a.amqp010.definitions
    nowhere = spec.MessageTransfer(destination="no-such-exchange", accept_mode=1, acquire_mode=0)
    monkeypatch.setattr(amqp010, "TRANSFER", nowhere)
    told: list[int] = []
    with pytest.raises(RuntimeError, match=rf"refused a message for '{queue}'"):
        amqp010.publish_rows(_write(url, queue), iter([a.Message(body=b"x")]), 30, done=told.append)
    assert told == []


def test_undecodable_messages_go_back_marked_with_modify(url: str, queues: Queues) -> None:
    queue = queues.new()
    spec = a.amqp010.definitions
    with sockets.connect(url, protocol="0-10") as conn, conn.session(_name()) as session:
        bad = spec.MessageProperties(application_headers={mapping.BODY_SECTIONS: True})
        transfer = spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0)
        session.command(transfer, (spec.DeliveryProperties(routing_key=queue), bad), b"\x00\x53")
    options = ReadOptions(
        {"url": f"{url}/{queue}", "protocol": "0-10", "undecodable": "modify"}, streaming=False
    )
    assert list(read_queue(options, None, consume=True)) == []
    assert depth(url, queue) == 1  # back in the queue, for another consumer


def test_the_batch_receiver_looks_then_takes(url: str, queues: Queues) -> None:
    """A look (``consume`` false) releases what it read: the queue keeps it; taking
    accepts it; an undecodable message is rejected, never a row."""
    queue = queues.new()
    publish(url, queue, 5)
    spec = a.amqp010.definitions
    with sockets.connect(url, protocol="0-10") as conn, conn.session(_name()) as session:
        bad = spec.MessageProperties(application_headers={mapping.BODY_SECTIONS: True})
        transfer = spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0)
        session.command(transfer, (spec.DeliveryProperties(routing_key=queue), bad), b"\x00\x53")
    options = ReadOptions({"url": f"{url}/{queue}", "protocol": "0-10"}, streaming=False)
    looked = list(read_queue(options, None, consume=False))
    assert sorted(r[8] for r in looked) == [f"m{i}" for i in range(5)]
    assert depth(url, queue) == 5  # released; the undecodable one rejected
    taken = list(read_queue(options, 3, consume=True))
    assert len(taken) == 3 and depth(url, queue) == 2
    assert {r[2] for r in taken} == {queue} and all(r[3] for r in taken)


def _reader(url: str, addresses: str, location: str, **options: str) -> Any:
    """The queue-mode stream reader, called as Spark calls it (no Spark needed)."""
    source = spark_adapter.AMQPDataSource(
        {
            "url": url,
            "address": addresses,
            "protocol": "0-10",
            "stagingLocation": location,
            **options,
        }
    )
    return source.streamReader(spark_adapter.SCHEMA)


def _run(reader: Any, task: Any, *columns: str) -> list[Any]:
    names = columns or ("message_id",)
    return [
        tuple(row[name] for name in names) if len(names) > 1 else row[names[0]]
        for batch in reader.read(task)
        for row in batch.to_pylist()
    ]


def test_receiver_tasks_take_their_share_stage_then_accept(
    tmp_path: Path, url: str, queues: Queues
) -> None:
    """A batch's tasks each take their share from two queues, stage it, accept it and
    mark themselves done; what they took past it goes back; a task run again reads its
    staged parts and takes nothing."""
    first, second = queues.new(), queues.new()
    publish(url, first, 20)
    publish(url, second, 20, start=20)
    location = str(tmp_path / "staging")
    reader = _reader(url, f"{first},{second}", location, partitions="2", maxMessagesPerTrigger="11")
    offset = reader.initialOffset()
    end = reader.latestOffset(offset, None)
    tasks = reader.partitions(offset, end)
    assert [(t.batch, t.index, t.max_rows) for t in tasks] == [(1, 0, 6), (1, 1, 5)]
    rows = [
        _run(reader, t, "message_id", "body", "application_properties", "durable") for t in tasks
    ]
    assert [len(r) for r in rows] == [6, 5]
    taken = sorted(row for r in rows for row in r)
    assert len({m for m, *_ in taken}) == 11
    for message_id, body, application, durable in taken:
        i = int(message_id[1:])
        assert (body, dict(application), durable) == (f"payload {i}".encode(), {"i": str(i)}, True)
    assert depth(url, first, 29) + depth(url, second, 29) == 29  # accepted; the rest back
    files = [(n, i, p) for n, i, p, _ in staging.staged_files(location)]
    assert files == [(1, 0, None), (1, 0, 0), (1, 1, None), (1, 1, 0)]
    again = [
        _run(reader, t, "message_id", "body", "application_properties", "durable") for t in tasks
    ]
    assert again == rows
    assert depth(url, first) + depth(url, second) == 29
    reader.commit(end)
    assert staging.staged_files(location) == []


def test_a_task_takes_about_its_bytes(tmp_path: Path, url: str, queues: Queues) -> None:
    """``maxBytesPerTrigger``: a task takes messages while their bodies fit (9 octets
    each: three fit in 30); the rest stays in the queue."""
    queue = queues.new()
    publish(url, queue, 10)
    reader = _reader(url, queue, str(tmp_path / "staging"), maxBytesPerTrigger="30")
    (task,) = reader.partitions({"batch": 0}, {"batch": 1})
    assert sorted(_run(reader, task)) == ["m0", "m1", "m2"]
    assert depth(url, queue, 7) == 7


def test_a_task_with_no_limit_takes_until_the_queue_is_empty(
    tmp_path: Path, url: str, queues: Queues
) -> None:
    queue = queues.new()
    publish(url, queue, 250)
    reader = _reader(url, queue, str(tmp_path / "staging"), credit="40")
    (task,) = reader.partitions({"batch": 0}, {"batch": 1})
    got = _run(reader, task)
    assert sorted(got) == sorted(f"m{i}" for i in range(250))
    assert depth(url, queue, 0) == 0


# -- on Spark ----------------------------------------------------------------------------------


def test_write_then_read_back_the_same_rows(spark: Any, url: str, queues: Queues) -> None:
    """The sink writes rows over 0-10; the batch source looks (the queue keeps them), then
    takes them with two receivers; the rows read are the rows written."""
    queue = queues.new()
    rows = [
        # (priority 4, 1.0's default, the broker leaves out: it reads back as none)
        (f"row {i}".encode(), f"id-{i}", "text/plain", {"i": str(i)}, 5 + i % 4)
        for i in range(200)
    ]
    df = spark.createDataFrame(
        rows,
        "body binary, message_id string, content_type string, "
        "application_properties map<string,string>, priority int",
    ).repartition(3)
    options = {"url": url, "address": queue, "protocol": "0-10"}
    df.write.format("amqp").mode("append").options(**options).save()
    assert depth(url, queue) == 200
    reader = spark.read.format("amqp").options(**options)
    columns = ["body", "message_id", "content_type", "application_properties", "priority"]
    looked = reader.load().select(*columns).collect()
    assert depth(url, queue) == 200  # a look: released
    got = reader.option("consume", "true").option("partitions", "2").load().select(*columns)
    for found in (looked, got.collect()):
        assert sorted(
            (
                bytes(r.body),
                r.message_id,
                r.content_type,
                dict(r.application_properties),
                r.priority,
            )
            for r in found
        ) == sorted(rows)
    assert depth(url, queue) == 0


def test_a_streaming_read_writes_each_message_once(spark: Any, url: str, queues: Queues) -> None:
    """Written by the streaming sink from a streaming read of another queue: each message
    once, staged and accepted per micro-batch."""
    import tempfile

    source, target = queues.new(), queues.new()
    publish(url, source, 300)
    staging_dir, checkpoint = tempfile.mkdtemp(), tempfile.mkdtemp()
    df = (
        spark.readStream.format("amqp")
        .options(url=url, address=source, protocol="0-10", stagingLocation=staging_dir)
        .option("maxMessagesPerTrigger", "120")
        .load()
        .select("body", "message_id", "application_properties")
    )
    writer = (
        df.writeStream.format("amqp")
        .options(url=url, address=target, protocol="0-10")
        .option("checkpointLocation", checkpoint)
    )
    query = spark_adapter.run_available_now(writer, timeout=180)
    assert query.exception() is None
    assert depth(url, source, 0) == 0
    back = spark.read.format("amqp").options(url=url, address=target, protocol="0-10").load()
    got = back.select("body", "message_id", "application_properties").collect()
    assert sorted(
        (bytes(r.body), r.message_id, r.application_properties["i"]) for r in got
    ) == sorted((f"payload {i}".encode(), f"m{i}", str(i)) for i in range(300))


def test_rows_cross_between_1_0_and_0_10(spark: Any, url: str, queues: Queues) -> None:
    """The broker's queues are the same nodes for both protocols: rows the 0-10 sink wrote
    the 1.0 source reads, and the other way round, with their message-ids and
    application properties."""
    one, other = queues.new(), queues.new()
    rows = [(f"row {i}".encode(), f"id-{i}", {"i": str(i)}) for i in range(20)]
    df = spark.createDataFrame(
        rows, "body binary, message_id string, application_properties map<string,string>"
    )
    columns = ["body", "message_id", "application_properties"]
    for written, read, queue in (("0-10", "1.0", one), ("1.0", "0-10", other)):
        df.write.format("amqp").mode("append").options(
            url=url, address=queue, protocol=written
        ).save()
        reader = spark.read.format("amqp").options(url=url, address=queue, protocol=read)
        got = reader.option("consume", "true").load().select(*columns).collect()
        assert sorted(
            (bytes(r.body), r.message_id, dict(r.application_properties)) for r in got
        ) == sorted(rows), (written, read)
        assert depth(url, queue) == 0


def test_a_bad_protocol_name_fails_the_read_saying_which_are_known(spark: Any) -> None:
    reader = spark.read.format("amqp").options(url="amqp://127.0.0.1/q", protocol="0-11")
    with pytest.raises(Exception, match=r"must be one of '1.0', '0-9-1', '0-10', not '0-11'"):
        reader.load().collect()
