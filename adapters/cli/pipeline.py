"""``amqp-sansio pipeline`` and ``amqp-sansio bench spark``: the Spark adapter
(:mod:`amqp_sansio.adapters.spark`) doing a whole job, end to end, with its accounting.

The pipeline: sample orders are published to an address of the embedded reference broker
(or of the broker ``url`` names); a Structured Streaming query reads them through
``format("amqp")`` in queue mode, totals the revenue per region per minute and writes each
micro-batch's updated totals through the ``format("amqp")`` sink to a second address; the
totals are read back from there and printed, with an accounting line.

An order is a message whose message-id is ``order-<n>`` (core 3.2.4), content-type
``application/json``, creation-time its timestamp, and a data section (3.2.6) holding JSON::

    {"order": 17, "region": "eu", "amount": 123.45, "ts": 1767225612345}

(``amount`` exact to the cent, ``ts`` milliseconds since the epoch, spread over
:data:`MINUTES` minutes). The orders are the same for a given count in every run.

The accounting is by message-id, not inferred: each total carries the message-ids of the
orders it sums (``collect_list`` in the streaming aggregation), so the totals read back say
which orders went through the whole path. ``processed`` counts the distinct ids among them,
``duplicates`` the ids counted more than once (an order delivered twice and aggregated
twice), ``lost`` the ids published (and accepted by the broker) that no total holds.

With ``protocol`` ``0-9-1`` every step speaks AMQP 0-9-1 (the embedded broker speaks both):
the two addresses are queues, declared first (:data:`QUEUE091`), the orders are published
to the default exchange in confirm mode and the totals consumed and acked, with the Spark
adapter's 0-9-1 code (:mod:`amqp_sansio.adapters.spark.amqp091`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import decimal
import itertools
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any

import attrs

import amqp_sansio as amqp
from amqp_sansio.client.url import URLError, parse_url

from . import options
from .connect import EXIT_CONNECTION, EXIT_INTERRUPTED, EXIT_USAGE
from .progress import StageBars, Stages
from .spark_process import running_session

__all__ = [
    "MINUTES",
    "REGIONS",
    "Outcome",
    "Total",
    "add_parser",
    "describe",
    "format_outcome",
    "order_id",
    "orders",
    "run",
    "run_pipeline",
]

#: The regions orders come from.
REGIONS = ("eu", "us", "apac", "latam")
#: Orders' timestamps are spread over this many minutes from :data:`START`.
MINUTES = 5
#: The first order's minute (milliseconds since the epoch): 2026-01-01T00:00:00Z.
START = 1_767_225_600_000
#: How many sends may await their outcome at once while publishing.
WINDOW = 2_000
#: Seconds between two looks at a running query (its progress, and whether Ctrl-C was pressed).
POLL = 0.1


class Unseen:
    """Stages nobody sees."""

    def stage(self, name: str, total: int | None = None, note: str = "") -> None:
        pass

    def done(self, count: int) -> None:
        pass


@attrs.frozen
class Order:
    number: int
    region: str
    amount: decimal.Decimal
    ts: int  # ms since the epoch

    @property
    def message_id(self) -> str:
        return order_id(self.number)

    def message(self) -> amqp.Message:
        body = json.dumps(
            {
                "order": self.number,
                "region": self.region,
                "amount": float(self.amount),
                "ts": self.ts,
            },
            separators=(",", ":"),
        ).encode()
        return amqp.Message(
            properties=amqp.Properties(
                message_id=self.message_id,
                content_type="application/json",
                creation_time=self.ts,
            ),
            body=amqp.Data(body),
        )


def order_id(number: int) -> str:
    """The message-id of order ``number``."""
    return f"order-{number}"


def orders(count: int, *, seed: int = 8) -> Iterator[Order]:
    """The sample orders (the same ones for the same ``count`` and ``seed``)."""
    rng = random.Random(seed)
    for number in range(count):
        cents = rng.randint(100, 50_000)
        yield Order(
            number=number,
            region=rng.choice(REGIONS),
            amount=decimal.Decimal(cents).scaleb(-2),
            ts=START + rng.randrange(MINUTES * 60_000),
        )


@attrs.frozen
class Total:
    """One line of the result: revenue of a region in a minute, and the orders counted."""

    region: str
    minute: str
    orders: int
    revenue: decimal.Decimal
    ids: tuple[str, ...]


@attrs.frozen
class Outcome:
    """What the pipeline did: the totals read back and the accounting."""

    totals: list[Total]
    sent: int
    processed: int
    duplicates: int
    lost: int
    rows: int  # rows the streaming query read (its progress reports), duplicates included
    seconds: float  # from the query's start to its end
    batches: int

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "processed": self.processed,
            "duplicates": self.duplicates,
            "lost": self.lost,
            "rows": self.rows,
            "batches": self.batches,
            "seconds": self.seconds,
            "records_per_second": self.rate,
            "totals": [
                {
                    "region": t.region,
                    "minute": t.minute,
                    "orders": t.orders,
                    "revenue": str(t.revenue),
                }
                for t in self.totals
            ],
        }


_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION = re.compile(r"[\w.]+(Error|Exception|Exit|Interrupt)\b")


def describe(exc: BaseException) -> str:
    """What went wrong, in one line (Spark's errors go on with the query's plan)."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    if text.endswith(_TRACEBACK):
        # A Python error inside Spark: its last line says what it was (the JVM's own stack
        # trace comes after it).
        python = itertools.takewhile(lambda line: not line.startswith("JVM stacktrace"), lines)
        cause = next((line for line in reversed(list(python)) if _EXCEPTION.match(line)), "")
        text = f"{text[: -len(_TRACEBACK)].rstrip()} {cause}".rstrip()
    if isinstance(exc, ImportError):
        return (
            f"{text}: the Spark commands need the 'spark' extra (pip install 'amqp-sansio[spark]')"
        )
    if isinstance(exc, ConnectionError | TimeoutError) or type(exc).__module__.startswith(
        ("amqp_sansio", "pyspark", "py4j")
    ):
        return text
    return f"{type(exc).__name__}: {text}"


# -- Spark ------------------------------------------------------------------------------------


def watch(
    writer: Any, total: int, stages: Stages, check: Callable[[], None]
) -> tuple[Any, int, int]:
    """Run ``writer``'s query until what is there now is read (``run_available_now``),
    reporting the rows read so far; (the query, rows, batches) from its progress reports,
    each batch counted once. ``check`` raises KeyboardInterrupt after a SIGINT: the query
    is then stopped, and the interrupt goes on."""
    from .. import spark as amqp_spark

    rows: dict[int, int] = {}
    running: list[Any] = []

    def count(query: Any) -> None:
        for report in query.recentProgress:
            rows[int(report.batchId)] = int(report.numInputRows)

    def show(query: Any) -> None:
        running[:] = [query]
        check()
        count(query)
        stages.done(sum(rows.values()))

    check()
    try:
        query = amqp_spark.run_available_now(writer, watch=show, poll=POLL)
    except KeyboardInterrupt:
        for query in running:
            query.stop()
        raise
    except Exception as exc:
        raise RuntimeError(f"the streaming query failed: {exc}") from exc
    count(query)
    stages.done(sum(rows.values()))
    return query, sum(rows.values()), sum(1 for n in rows.values() if n)


# -- publishing and reading back ---------------------------------------------------------------


async def _publish(
    url: str,
    address: str,
    messages: Iterator[amqp.Message],
    done: Callable[[int], None] | None,
    options: dict[str, Any],
) -> int:
    """Send ``messages`` unsettled, ``WINDOW`` outcomes awaited at a time; the count
    accepted (anything else raises), told to ``done`` every thousand and at the end."""
    from .. import aio

    accepted = 0
    async with aio.connect(url, **options) as conn:
        sender = await conn.sender(address)
        outstanding: deque[Any] = deque()

        async def settle(keep: int) -> None:
            nonlocal accepted
            while len(outstanding) > keep:
                outcome = await outstanding.popleft().outcome()
                if not isinstance(outcome, amqp.Accepted):
                    raise RuntimeError(f"the broker did not accept a message: {outcome!r}")
                accepted += 1
                if done is not None and accepted % 1000 == 0:
                    done(accepted)

        for message in messages:
            outstanding.append(await sender.send(message, wait=False))
            await settle(WINDOW)
        await settle(0)
    if done is not None:
        done(accepted)
    return accepted


def publish(
    url: str,
    address: str,
    messages: Iterator[amqp.Message],
    *,
    done: Callable[[int], None] | None = None,
    protocol: str = "1.0",
    **options: Any,
) -> int:
    """Publish ``messages`` to ``address`` with the asyncio adapter (``options``: its
    ``connect``'s); how many the broker accepted (all of them, or this raises), told to
    ``done`` as they are. With ``protocol`` ``"0-9-1"``: to the queue ``address`` through
    the default exchange, each message mapped as RabbitMQ maps 1.0 to 0-9-1, in confirm
    mode, each confirmed (the Spark writer's code)."""
    if protocol == "0-9-1":
        from ..spark import calls

        _read, write = _options091(url, address)
        return calls.of(write).publish_rows(write, messages, write.timeout, done=done)
    return asyncio.run(_publish(url, address, messages, done, options))


def _take_all(receive: Callable[..., Any], first_wait: float, idle: float) -> list[amqp.Message]:
    """The messages ``receive`` (a blocking receiver's or consumer's) gives, each accepted,
    until nothing has come for ``idle`` seconds (``first_wait`` for the first message)."""
    got: list[amqp.Message] = []
    wait = first_wait
    while True:
        try:
            delivery = receive(timeout=wait)
        except TimeoutError:
            break
        if delivery is None:
            break
        got.append(delivery.message)
        delivery.accept()
        wait = idle
    return got


def read_back(
    url: str,
    address: str,
    *,
    first_wait: float = 10.0,
    idle: float = 1.0,
    protocol: str = "1.0",
    **options: Any,
) -> list[amqp.Message]:
    """Take (and accept) what ``address`` holds: until nothing has come for ``idle``
    seconds (``first_wait`` for the first message). ``options``: the blocking adapter's
    ``connect``'s. With ``protocol`` ``"0-9-1"``: consume the queue ``address`` and ack
    each message, mapped to 1.0 as RabbitMQ maps it (the Spark reader's consumer)."""
    if protocol == "0-9-1":
        from ..spark import calls

        read, _write = _options091(url, address)
        with calls.of(read).receiver(read, address, 500) as consumer:
            return _take_all(consumer.receive, first_wait, idle)
    from .. import sockets

    with sockets.connect(url, **options) as conn:
        return _take_all(conn.receiver(address, credit=500).receive, first_wait, idle)


def _options091(url: str, address: str) -> tuple[Any, Any]:
    """The Spark adapter's 0-9-1 read and write options for ``address`` at ``url``: the
    publishing and reading back with 0-9-1 are its code
    (:mod:`amqp_sansio.adapters.spark.amqp091`)."""
    from ..spark.options import ReadOptions, WriteOptions

    given = {"url": url, "address": address, "protocol": "0-9-1"}
    return ReadOptions(given, streaming=False), WriteOptions({**given, "window": str(WINDOW)})


#: ``queue.declare``'s arguments for the pipeline's two queues with ``--protocol 0-9-1``:
#: durable (they outlive a broker's restart), not exclusive, not auto-deleted, no
#: ``arguments`` (the broker's default queue type: a classic queue on RabbitMQ).
QUEUE091: dict[str, Any] = {"durable": True, "exclusive": False, "auto_delete": False}


def declare091(url: str, queues: list[str]) -> None:
    """Declare each of ``queues`` at ``url`` (0-9-1) as :data:`QUEUE091` says: a 0-9-1
    broker routes a publish to no queue that was not declared."""
    from .. import sockets

    read, _write = _options091(url, queues[0])
    with sockets.connect(read.url091(), protocol="0-9-1", **read.connect_options091()) as conn:
        channel = conn.channel()
        for queue in queues:
            channel.queue_declare(queue, **QUEUE091)


def latest_totals(messages: list[amqp.Message]) -> list[Total]:
    """The totals of the result messages: the sink sends each batch's updated totals, and
    a (region, minute) total only grows, so the one with the most orders is the latest."""
    best: dict[tuple[str, str], Total] = {}
    for message in messages:
        body = message.body
        data = body.value if isinstance(body, amqp.Data) else body
        try:
            if not isinstance(data, bytes | bytearray | memoryview):
                raise TypeError("its body is not one data section")
            row = json.loads(bytes(data))
            total = Total(
                region=str(row["region"]),
                minute=str(row["minute"]),
                orders=int(row["orders"]),
                revenue=decimal.Decimal(str(row["revenue"])),
                ids=tuple(str(i) for i in row["ids"]),
            )
        except (TypeError, ValueError, KeyError, decimal.InvalidOperation) as exc:
            raise RuntimeError(f"a result message is not a total: {exc}") from None
        key = (total.region, total.minute)
        if key not in best or total.orders > best[key].orders:
            best[key] = total
    return sorted(best.values(), key=lambda t: (t.minute, t.region))


def account(sent_ids: set[str], totals: list[Total]) -> tuple[int, int, int]:
    """(processed, duplicates, lost) by message-id: distinct ids in the totals, ids counted
    more than once (each extra count), sent ids in no total."""
    counted = Counter(i for t in totals for i in t.ids)
    processed = len(counted)
    duplicates = sum(n - 1 for n in counted.values())
    lost = len(sent_ids - counted.keys())
    return processed, duplicates, lost


# -- the pipeline ------------------------------------------------------------------------------


def _aggregate(
    spark: Any,
    url: str,
    source: str,
    sink: str,
    staging: str,
    checkpoint: str,
    batch: int,
    protocol: str = "1.0",
) -> Any:
    """The streaming query, not yet started: orders in, revenue per region per minute out."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DecimalType, LongType, StringType, StructField, StructType

    order = StructType(
        [
            StructField("order", LongType()),
            StructField("region", StringType()),
            StructField("amount", DecimalType(12, 2)),
            StructField("ts", LongType()),
        ]
    )
    stream = (
        spark.readStream.format("amqp")
        .option("url", url)
        .option("protocol", protocol)
        .option("address", source)
        .option("stagingLocation", staging)
        .option("maxMessagesPerTrigger", str(batch))
        .load()
    )
    parsed = stream.select(
        "message_id", F.from_json(F.col("body").cast("string"), order).alias("o")
    )
    totals = parsed.groupBy(
        F.col("o.region").alias("region"),
        F.window(F.timestamp_millis(F.col("o.ts")), "1 minute").alias("w"),
    ).agg(
        F.count(F.lit(1)).alias("orders"),
        F.sum("o.amount").alias("revenue"),
        F.collect_list("message_id").alias("ids"),
    )
    out = totals.select(
        F.to_json(
            F.struct(
                "region",
                F.date_format("w.start", "yyyy-MM-dd HH:mm").alias("minute"),
                "orders",
                F.col("revenue").cast("string").alias("revenue"),
                "ids",
            )
        )
        .cast("binary")
        .alias("body"),
        F.lit("application/json").alias("content_type"),
    )
    return (
        out.writeStream.format("amqp")
        .outputMode("complete")
        .option("url", url)
        .option("protocol", protocol)
        .option("address", sink)
        .option("checkpointLocation", checkpoint)
    )


@contextlib.contextmanager
def _broker(url: str | None) -> Iterator[str]:
    if url is not None:
        yield url
        return
    from ..broker import run_broker

    with run_broker() as server:
        yield server.url


def _base(url: str) -> str:
    """``url`` without its address (the data source is given the address as an option)."""
    parsed = parse_url(url)
    return attrs.evolve(parsed, address=None).unredacted()


def run_pipeline(
    messages: int = 100_000,
    *,
    url: str | None = None,
    source: str | None = None,
    sink: str | None = None,
    master: str = "local[*]",
    batch: int = 20_000,
    stages: Stages | None = None,
    verbose: bool = False,
    spark: Any = None,
    protocol: str = "1.0",
) -> Outcome:
    """Run the pipeline (the module's docstring) and return what it did. ``url``: a broker
    to use instead of starting the embedded one; ``source``/``sink``: the addresses
    (default: ``orders-<run>`` and ``revenue-<run>``, new each run); ``batch``: the read
    limit of each micro-batch; ``stages``: told of each stage (publishing, starting Spark,
    processing, reading back) and its progress; ``verbose``: Spark's own output on standard
    error (:func:`~amqp_sansio.adapters.cli.spark_process.spark_session`); ``spark``: a
    session to use (default: the active one, else a new one on ``master``, started once the
    orders are published and stopped with
    its JVM before the broker is); ``protocol``: ``"1.0"`` or ``"0-9-1"`` (the addresses
    are queues, declared first as :data:`QUEUE091` says, and left on the broker).

    A Ctrl-C (SIGINT) raises KeyboardInterrupt, at once while publishing or starting Spark
    (a JVM being started is killed), else at the next look at the query (four times a
    second), after stopping the query, then the session and its JVM, then the broker."""
    shown = stages if stages is not None else Unseen()
    run = uuid.uuid4().hex[:8]
    source = source or f"orders-{run}"
    sink = sink or f"revenue-{run}"
    work = tempfile.mkdtemp(prefix="amqp-sansio-pipeline-")
    try:
        with _broker(url) as broker_url:
            base = _base(broker_url)
            shown.stage(
                "publishing",
                messages,
                f"{messages:,} orders to {source} at {parse_url(base).redacted()}",
            )
            # (made as they are sent: the first is sent at once, whatever their number)
            made = (o.message() for o in orders(messages))
            if protocol == "0-9-1":
                declare091(base, [source, sink])
            sent = publish(base, source, made, done=shown.done, protocol=protocol)
            with running_session(spark, master, verbose=verbose, stages=shown) as (session, check):
                shown.stage(
                    "processing",
                    messages,
                    f"a streaming query, micro-batches of up to {batch:,} orders",
                )
                started = time.perf_counter()
                writer = _aggregate(
                    session,
                    base,
                    source,
                    sink,
                    os.path.join(work, "staging"),
                    os.path.join(work, "checkpoint"),
                    batch,
                    protocol,
                )
                _query, rows, batches = watch(writer, messages, shown, check)
                seconds = time.perf_counter() - started
            shown.stage("reading back", note=f"the totals from {sink}")
            totals = latest_totals(read_back(base, sink, protocol=protocol))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    # (the broker accepted each of the first ``sent``, or publish raised)
    processed, duplicates, lost = account({order_id(n) for n in range(sent)}, totals)
    return Outcome(
        totals=totals,
        sent=sent,
        processed=processed,
        duplicates=duplicates,
        lost=lost,
        rows=rows,
        seconds=seconds,
        batches=batches,
    )


def format_outcome(outcome: Outcome) -> str:
    """The result table and the accounting line."""
    lines = [f"{'minute (UTC)':<18}{'region':<8}{'orders':>9}{'revenue':>16}"]
    for t in outcome.totals:
        lines.append(f"{t.minute:<18}{t.region:<8}{t.orders:>9,}{t.revenue:>16,.2f}")
    lines.append(
        f"{'total':<26}{sum(t.orders for t in outcome.totals):>9,}"
        f"{sum((t.revenue for t in outcome.totals), decimal.Decimal(0)):>16,.2f}"
    )
    lines.append(
        f"sent {outcome.sent:,}, processed {outcome.processed:,}, duplicates "
        f"{outcome.duplicates:,}, lost {outcome.lost:,}; {outcome.rate:,.0f} records/s "
        f"({outcome.rows:,} rows in {outcome.batches} micro-batches, {outcome.seconds:.1f} s)"
    )
    return "\n".join(lines)


# -- the commands ----------------------------------------------------------------------------


EXITS = (
    "Exit status: 0 {ok}, 2 usage error (before Spark starts), 3 no Java runtime, the "
    "broker unreachable, or the query failed (one line), 130 interrupted (Ctrl-C: the query, "
    "Spark and the broker are stopped, and one line says what was done)."
)


def common_options(parser: argparse.ArgumentParser, master: str) -> None:
    parser.add_argument(
        "--master",
        type=options.master,
        default=master,
        help=f"Spark master URL: local[N], spark://HOST:PORT, ... (default {master})",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="show the stages and their progress on stderr even when it is not a terminal "
        "(plain lines: one as each stage begins and ends, one every 10 s between)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="let Spark and the JVM write their own log and warnings to stderr "
        "(by default they are discarded)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def add_parser(sub: Any) -> None:
    """Add ``pipeline`` to the command's subparsers."""
    pl = sub.add_parser(
        "pipeline",
        help="the Spark job: sample orders through a streaming query (format('amqp')), "
        "revenue per region per minute back through the sink, and the accounting",
        description="Publish sample orders to the embedded reference broker (or --url), "
        "total them per region per minute in a Spark Structured Streaming query that reads "
        "and writes through format('amqp'), read the totals back, print them and the "
        "accounting line. Progress (publishing, starting Spark, processing) goes to "
        "stderr when it is a terminal, or with --progress. "
        + EXITS.format(ok="nothing lost, 1 an order was lost"),
    )
    pl.add_argument(
        "--messages",
        type=options.positive_int,
        default=100_000,
        metavar="N",
        help="orders to publish (default 100,000)",
    )
    pl.add_argument(
        "--url",
        default=None,
        help="an AMQP 1.0 broker to use (0-9-1 with --protocol 0-9-1), "
        "amqp://[user:password@]host[:port] with no address (default: start the embedded "
        "reference broker on a free loopback port)",
    )
    pl.add_argument(
        "--protocol",
        choices=("1.0", "0-9-1"),
        default="1.0",
        help="the AMQP version the orders and totals go through, published, read by the "
        "query, written by its sink and read back: 0-9-1 declares the two addresses as "
        "durable queues first (default 1.0)",
    )
    pl.add_argument(
        "--orders",
        default=None,
        metavar="ADDRESS",
        help="the orders' address (default orders-<run>, new each run)",
    )
    pl.add_argument(
        "--results",
        default=None,
        metavar="ADDRESS",
        help="the totals' address (default revenue-<run>, new each run)",
    )
    pl.add_argument(
        "--batch",
        type=options.positive_int,
        default=20_000,
        metavar="N",
        help="the read limit of each micro-batch (maxMessagesPerTrigger; default 20,000)",
    )
    common_options(pl, "local[*]")
    pl.set_defaults(run=run)


def _usage(args: argparse.Namespace) -> str | None:
    """What is wrong with the options that argparse cannot see alone, or None."""
    url = getattr(args, "url", None)
    if url is not None:
        try:
            parsed = parse_url(url)
        except URLError as exc:
            return str(exc)
        if parsed.address:
            return (
                f"--url names a broker, not an address ({parsed.address!r}): "
                "give the addresses with --orders and --results"
            )
    names = [getattr(args, "orders", None), getattr(args, "results", None)]
    for option, address in zip(("--orders", "--results"), names, strict=True):
        if address is not None and not address.strip():
            return f"{option} is empty: give an address, or leave the option out"
    if names[0] is not None and names[0] == names[1]:
        return f"--orders and --results are the same address ({names[0]!r})"
    return None


def run(args: argparse.Namespace) -> int:
    """``pipeline``."""

    def work(stages: StageBars) -> Callable[[], int]:
        outcome = run_pipeline(
            args.messages,
            url=args.url,
            source=args.orders,
            sink=args.results,
            master=args.master,
            batch=args.batch,
            stages=stages,
            verbose=args.verbose,
            protocol=args.protocol,
        )

        def report() -> int:
            print(json.dumps(outcome.as_dict(), indent=2) if args.json else format_outcome(outcome))
            return 1 if outcome.lost else 0

        return report

    return run_spark_command("pipeline", args, work)


def run_spark_command(
    name: str, args: argparse.Namespace, work: Callable[[StageBars], Callable[[], int]]
) -> int:
    """What the Spark commands (``pipeline``, ``bench spark``) share: options checked
    before Spark starts, the stages shown on stderr (a terminal, or ``--progress``), a
    Ctrl-C and an error each told in one line (``EXIT_INTERRUPTED``, ``EXIT_CONNECTION``).
    ``work(stages)`` does the job and returns what prints its result and gives the exit
    status."""
    problem = _usage(args)  # a usage error at once, not after Spark has started
    if problem is not None:
        print(f"amqp-sansio {name}: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    shown = args.progress or sys.stderr.isatty()
    stages = StageBars(sys.stderr if shown else None)
    try:
        report = work(stages)
    except KeyboardInterrupt:
        stage = stages.name
        stages.abandon()
        print(f"amqp-sansio {name}: interrupted {stages.interrupted(stage)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        stages.abandon()
        hint = "" if args.verbose or isinstance(exc, ImportError) else " (--verbose: Spark's log)"
        print(f"amqp-sansio {name}: error: {describe(exc)}{hint}", file=sys.stderr)
        return EXIT_CONNECTION
    stages.close()
    return report()
