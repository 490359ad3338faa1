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
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import decimal
import functools
import itertools
import json
import logging
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections import Counter, deque
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, Protocol, TextIO

import attrs

import amqp_sansio as amqp
from amqp_sansio.client.url import URLError, parse_url

from . import options
from .connect import EXIT_CONNECTION, EXIT_USAGE
from .progress import Bar, duration
from .send_receive import EXIT_INTERRUPTED

__all__ = [
    "MINUTES",
    "REGIONS",
    "Outcome",
    "StageBars",
    "Stages",
    "Total",
    "add_bench_parser",
    "add_parser",
    "bench_spark",
    "describe",
    "format_bench",
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
#: Seconds the JVM is given to exit by itself once its session is stopped (it then is killed).
JVM_EXIT = 5.0


class Stages(Protocol):
    """What the commands report as they go (:class:`StageBars` shows it): a stage begins
    (the previous one has ended), with its total when it has one and a note of what it does;
    then how much of it is done."""

    def stage(self, name: str, total: int | None = None, note: str = "") -> None: ...

    def done(self, count: int) -> None: ...


class _Unseen:
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


#: Spark's log (log4j 2) unless ``--verbose``: errors only. An appender is needed: with none,
#: Spark takes its default profile, which announces itself and logs warnings.
_LOG4J2 = """\
# Written by amqp-sansio for the JVM it starts: Spark's log, errors only.
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def spark_session(master: str, *, partitions: int = 2, verbose: bool = False) -> Any:
    """A local SparkSession for the commands (UI and console progress off, UTC, few shuffle
    partitions: a stateful aggregation keeps a state store per shuffle partition), with
    ``format("amqp")`` registered. Java is found by
    :func:`~amqp_sansio.adapters.spark.ensure_java` first.

    Unless ``verbose``, Spark is quiet: the JVM it starts (``spark-submit``, and the Python
    workers whose output the JVM passes on) writes to ``/dev/null``, not to our standard
    error; its log4j 2 configuration is ours (errors only, ``-Dlog4j2.configurationFile``
    in ``spark.driver.extraJavaOptions``), and the session's log level is ERROR. Either
    way the JVM starts in a session of its own (``start_new_session``), so a Ctrl-C at the
    terminal reaches this process alone, which stops the query and then the JVM
    (``pipeline``'s Ctrl-C) instead of the JVM dying under the query's feet."""
    scratch = tempfile.mkdtemp(prefix="amqp-sansio-log4j2-")
    try:
        _spark_context(master, partitions, verbose, scratch, local=False)
    finally:  # (read once, when the JVM's logging started)
        shutil.rmtree(scratch, ignore_errors=True)
    return _spark_session(verbose)


def _spark_context(
    master: str, partitions: int, verbose: bool, scratch: str, *, local: bool
) -> None:
    """The first half of :func:`spark_session`, the slow one: the JVM and the SparkContext.
    ``scratch``: a directory for our log4j 2 configuration and, if ``local``, for what the
    JVM writes in temporary files (``spark.local.dir`` and ``java.io.tmpdir``), so that it
    can all be removed once the JVM is gone, even killed."""
    from .. import spark as amqp_spark

    amqp_spark.ensure_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if not verbose:
        warnings.filterwarnings(  # (pyspark's, as it imports its pandas support)
            "ignore", message="PySpark does not yet fully support pandas", category=FutureWarning
        )
        py4j = logging.getLogger("py4j")  # (its errors as a JVM goes away: ours say it)
        py4j.addHandler(logging.NullHandler())
        py4j.propagate = False
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName("amqp-sansio")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.shuffle.partitions", str(partitions))
        .set("spark.sql.session.timeZone", "UTC")
        .set("spark.sql.streaming.stopTimeout", "30s")
    )
    java: list[str] = []
    if not verbose:
        path = os.path.join(scratch, "log4j2.properties")
        with open(path, "w", encoding="utf-8") as out:
            out.write(_LOG4J2)
        java.append(f"-Dlog4j2.configurationFile=file:{path}")
    if local:
        conf.set("spark.local.dir", scratch)
        java.append(f"-Djava.io.tmpdir={scratch}")
    if java:
        conf.set("spark.driver.extraJavaOptions", " ".join(shlex.quote(o) for o in java))
    # Spark's Python workers run ``python -m pyspark.daemon`` in the JVM's working directory,
    # which puts that directory first on their import path: started from a checkout of this
    # repository, they would import the source tree's ``amqp_sansio`` (which has no
    # ``adapters``) instead of the installed package. So the JVM starts elsewhere.
    here = os.getcwd()
    os.chdir(tempfile.gettempdir())
    try:
        gateway = None
        if SparkContext._gateway is None:  # (else pyspark reuses the JVM this process has)
            quiet = {} if verbose else {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
            kwargs = {"start_new_session": True, **quiet}
            gateway = launch_gateway(conf, popen_kwargs=kwargs)  # type: ignore[no-untyped-call]
        SparkContext(conf=conf, gateway=gateway)
    finally:
        os.chdir(here)


def _spark_session(verbose: bool) -> Any:
    """The second half of :func:`spark_session`: the session on the SparkContext, made in
    the thread that uses it (the JVM keeps a Python data source, ``format("amqp")``, where
    a streaming write finds it only from the thread the session was made in)."""
    from pyspark.sql import SparkSession

    from .. import spark as amqp_spark

    session = SparkSession.builder.getOrCreate()
    if not verbose:
        session.sparkContext.setLogLevel("ERROR")
    amqp_spark.register(session)
    return session


def _processes() -> Iterator[tuple[int, int, int]]:
    """(pid, parent's pid, session) of each process, from Linux's ``/proc`` (none
    elsewhere)."""
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:  # (ended meanwhile)
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # (the name in parentheses may hold spaces)
        if len(fields) > 3:
            yield int(entry), int(fields[1]), int(fields[3])


def _kill_session(leader: int) -> None:
    """Kill the JVM that leads a session of its own and every process in that session (the
    Python workers it started, whatever their process group), at once (SIGKILL)."""
    pids = {leader} | {pid for pid, _, session in _processes() if session == leader}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _kill_spark(leader: int) -> None:
    """Kill the JVM that leads a session of its own and what it started
    (:func:`_kill_session`), while this process still holds a session of it: pyspark's
    accumulator server, whose connection from the JVM then breaks, says nothing of it
    (by default a socket server prints each failed request's traceback), nor does py4j of
    the call into the JVM that then fails."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    server = getattr(context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = lambda request, address: None
    # py4j reports a call that fails as the JVM goes on the root logger, which it configures
    # (to print on stderr) if it has no handler; then it has one that prints nothing.
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())
    _kill_session(leader)


def _start(master: str, verbose: bool) -> tuple[Any, bool, str]:
    """:func:`spark_session`, its JVM and SparkContext started in a thread of its own, so
    that a Ctrl-C meanwhile interrupts this one at once: starting Spark takes seconds in
    calls into the JVM, which a KeyboardInterrupt would leave half done. The JVM being
    started (a child of this process that leads a session) is then killed. (The session,
    whether its JVM is ours, started now, not reused, and the directory of its temporary
    files, to be removed once it is gone.)"""
    from pyspark import SparkContext

    ours = SparkContext._gateway is None
    scratch = tempfile.mkdtemp(prefix="amqp-sansio-spark-")
    failed: list[BaseException] = []

    def start() -> None:
        try:
            _spark_context(master, 2, verbose, scratch, local=True)
        except BaseException as exc:  # (raised in the caller's thread)
            failed.append(exc)

    thread = threading.Thread(target=start, name="amqp-sansio: starting Spark", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
        if failed:
            raise failed[0]
        return _spark_session(verbose), ours, scratch
    except BaseException:
        if ours:
            me = os.getpid()
            for pid, parent, session in list(_processes()):
                if parent == me and session == pid:
                    _kill_session(pid)
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, 0)
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _jvm(ours: bool) -> Any:
    """The JVM's process (a :class:`subprocess.Popen`) when it is ours, else None."""
    from pyspark import SparkContext

    return getattr(SparkContext._gateway, "proc", None) if ours else None


def _stop(session: Any, jvm: Any, scratch: str, interrupted: bool) -> None:
    """Stop ``session`` and then the JVM if it is ours (``jvm``): it exits when its
    standard input ends (Spark's gateway server watches it), else it is killed after
    :data:`JVM_EXIT` seconds (at once after a Ctrl-C), with what it started; then its
    temporary files go (``scratch``). After a Ctrl-C, the JVM may have been killed already
    (:class:`_Interrupt`): the calls into it then fail, quietly."""
    from pyspark import SparkContext

    try:
        with warnings.catch_warnings():
            if interrupted:  # ("Unable to cleanly shutdown Spark JVM process")
                warnings.simplefilter("ignore")
            session.stop()
    except Exception:
        if not interrupted:
            raise
    if jvm is not None:
        with contextlib.suppress(Exception):
            gateway: Any = SparkContext._gateway
            gateway.shutdown()
        SparkContext._gateway = SparkContext._jvm = None  # (a next session starts a JVM again)
        with contextlib.suppress(OSError):
            jvm.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            if not interrupted:  # (after a Ctrl-C, there is no time to wait)
                jvm.wait(JVM_EXIT)
        _kill_session(jvm.pid)  # (and the Python workers it may have left behind)
        jvm.wait()
    shutil.rmtree(scratch, ignore_errors=True)


class _Interrupt:
    """SIGINT while Spark runs: noted, and acted on by :meth:`check`, between calls into the
    JVM (a KeyboardInterrupt raised inside one leaves py4j's connection out of step, and
    pyspark's own handler raises it there). A call may take seconds (starting a query): if
    the query, the session and the JVM have not been stopped :data:`GRACE` seconds after
    the SIGINT, ``kill`` is called (it kills the JVM, and the calls into it fail). At the
    end, a SIGINT noted and not yet acted on is raised. Only in the main thread (the only
    one signals reach)."""

    #: Seconds from a Ctrl-C to the JVM killed, if the query and the session have not been
    #: stopped by then.
    GRACE = 0.5

    def __init__(self, kill: Callable[[], None] | None) -> None:
        self.noted = False
        self.raised = False
        self._kill = kill
        self._timer: threading.Timer | None = None

    def check(self) -> None:
        if self.noted and not self.raised:
            self.raised = True
            raise KeyboardInterrupt

    def _note(self, signum: int, frame: Any) -> None:
        if self.noted:
            return
        self.noted = True
        if self._kill is not None:
            self._timer = threading.Timer(self.GRACE, self._kill)
            self._timer.daemon = True
            self._timer.start()

    def cancel(self) -> None:
        """The JVM is stopped: no more need to kill it."""
        if self._timer is not None:
            self._timer.cancel()

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGINT, self._note)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)
            self.cancel()
        self.check()


@contextlib.contextmanager
def _session(
    spark: Any, master: str, *, verbose: bool = False, stages: Stages | None = None
) -> Iterator[tuple[Any, Callable[[], None]]]:
    """(``spark``, else the active session (a notebook's, a test's), else a new one made by
    :func:`spark_session` and stopped at the end, its JVM with it; and a ``check`` that
    raises KeyboardInterrupt if SIGINT came). From the session's start to its stop, SIGINT
    is noted, not raised (:class:`_Interrupt`)."""
    from .. import spark as amqp_spark

    amqp_spark.ensure_java()
    from pyspark.sql import SparkSession

    made, ours, scratch = None, False, ""  # (a session made here, whether its JVM is ours)
    if spark is None:
        spark = SparkSession.getActiveSession()
        if spark is None:
            if stages is not None:
                stages.stage("starting Spark", note=f"master {master}")
            made, ours, scratch = _start(master, verbose)
            spark = made
    amqp_spark.register(spark)
    jvm = _jvm(ours)
    interrupt = _Interrupt(None if jvm is None else functools.partial(_kill_spark, jvm.pid))
    with interrupt.deferred():
        try:
            try:
                yield spark, interrupt.check
            finally:
                if made is not None:
                    _stop(made, jvm, scratch, interrupt.noted)
        except Exception:
            if interrupt.noted:  # (a call into the JVM failed: it was killed after a Ctrl-C)
                raise KeyboardInterrupt from None
            raise


def _watch(
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
    **options: Any,
) -> int:
    """Publish ``messages`` to ``address`` with the asyncio adapter; how many the broker
    accepted (all of them, or this raises), told to ``done`` as they are."""
    return asyncio.run(_publish(url, address, messages, done, options))


async def _drain(
    url: str, address: str, first_wait: float, idle: float, options: dict[str, Any]
) -> list[amqp.Message]:
    from .. import aio

    got: list[amqp.Message] = []
    async with aio.connect(url, **options) as conn:
        receiver = await conn.receiver(address, credit=500)
        wait = first_wait
        while True:
            try:
                delivery = await receiver.receive(timeout=wait)
            except TimeoutError:
                break
            if delivery is None:
                break
            got.append(delivery.message)
            delivery.accept()
            wait = idle
    return got


def read_back(
    url: str, address: str, *, first_wait: float = 10.0, idle: float = 1.0, **options: Any
) -> list[amqp.Message]:
    """Take (and accept) what ``address`` holds: until nothing has come for ``idle``
    seconds (``first_wait`` for the first message)."""
    return asyncio.run(_drain(url, address, first_wait, idle, options))


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
    spark: Any, url: str, source: str, sink: str, staging: str, checkpoint: str, batch: int
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
) -> Outcome:
    """Run the pipeline (the module's docstring) and return what it did. ``url``: a broker
    to use instead of starting the embedded one; ``source``/``sink``: the addresses
    (default: ``orders-<run>`` and ``revenue-<run>``, new each run); ``batch``: the read
    limit of each micro-batch; ``stages``: told of each stage (publishing, starting Spark,
    processing, reading back) and its progress; ``verbose``: Spark's own output on standard
    error (:func:`spark_session`); ``spark``: a session to use (default: the active one,
    else a new one on ``master``, started once the orders are published and stopped with
    its JVM before the broker is).

    A Ctrl-C (SIGINT) raises KeyboardInterrupt, at once while publishing or starting Spark
    (a JVM being started is killed), else at the next look at the query (four times a
    second), after stopping the query, then the session and its JVM, then the broker."""
    shown = stages if stages is not None else _Unseen()
    run = uuid.uuid4().hex[:8]
    source = source or f"orders-{run}"
    sink = sink or f"revenue-{run}"
    work = tempfile.mkdtemp(prefix="amqp-sansio-pipeline-")
    try:
        with _broker(url) as broker_url:
            base = _base(broker_url)
            shown.stage("publishing", messages, f"{messages:,} orders to {source} at {base}")
            # (made as they are sent: the first is sent at once, whatever their number)
            made = (o.message() for o in orders(messages))
            sent = publish(broker_url, source, made, done=shown.done)
            with _session(spark, master, verbose=verbose, stages=shown) as (session, check):
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
                )
                _query, rows, batches = _watch(writer, messages, shown, check)
                seconds = time.perf_counter() - started
            shown.stage("reading back", note=f"the totals from {sink}")
            totals = latest_totals(read_back(broker_url, sink))
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


# -- bench spark -------------------------------------------------------------------------------


async def _receive_all(
    url: str, address: str, count: int, credit: int, done: Callable[[int], None]
) -> float:
    """Seconds the asyncio adapter takes to receive, decode and accept ``count`` messages
    (the work the Spark source does for each, short of making it a row), told to ``done``
    every thousand."""
    from .. import aio

    async with aio.connect(url) as conn:
        receiver = await conn.receiver(address, credit=credit)
        start = time.perf_counter()
        for n in range(1, count + 1):
            delivery = await receiver.receive(timeout=60)
            if delivery is None:
                raise RuntimeError("the broker closed the link before every message came")
            delivery.message  # noqa: B018 - decoded, as an application would
            delivery.accept()
            if n % 1000 == 0:
                done(n)
        seconds = time.perf_counter() - start
    done(count)
    return seconds


def _noop_read(
    session: Any,
    url: str,
    address: str,
    count: int,
    batch: int,
    partitions: int,
    work: str,
    stages: Stages,
    check: Callable[[], None],
) -> tuple[int, int, float, Counter[str]]:
    """Read ``address`` in a streaming query into the ``noop`` sink until it is empty:
    (rows, batches, seconds from start to end, Spark's durations by phase in ms)."""
    stream = (
        session.readStream.format("amqp")
        .option("url", url)
        .option("address", address)
        .option("stagingLocation", os.path.join(work, address, "staging"))
        .option("maxMessagesPerTrigger", str(batch))
        .option("partitions", str(partitions))
        .load()
    )
    started = time.perf_counter()
    writer = stream.writeStream.format("noop").option(
        "checkpointLocation", os.path.join(work, address, "checkpoint")
    )
    query, rows, batches = _watch(writer, count, stages, check)
    seconds = time.perf_counter() - started
    phases: Counter[str] = Counter()
    for report in query.recentProgress:
        phases.update({k: int(v) for k, v in report.durationMs.items()})
    return rows, batches, seconds, phases


def bench_spark(
    messages: int = 200_000,
    *,
    size: int = 256,
    batch: int = 50_000,
    partitions: int = 2,
    master: str = "local[*]",
    stages: Stages | None = None,
    verbose: bool = False,
    spark: Any = None,
) -> dict[str, Any]:
    """``amqp-sansio bench spark``: ``messages`` of ``size`` bytes from the embedded broker
    into a streaming query (queue mode, the ``noop`` sink, ``Trigger.AvailableNow``, read
    limit ``batch``), next to the asyncio adapter receiving (and accepting) as many from the
    same broker in the same run (before Spark starts). Returns the figures: each side's
    seconds and messages/s, the ratio, and where the query's time went (Spark's per-batch
    durations, summed). ``stages``, ``verbose``, ``spark`` and a Ctrl-C: as in
    :func:`run_pipeline`."""
    shown = stages if stages is not None else _Unseen()
    body = bytes(size)
    work = tempfile.mkdtemp(prefix="amqp-sansio-bench-")
    try:
        from amqp_sansio.broker import BrokerConfig

        from ..broker import run_broker

        # The queues are filled before they are read, with as many messages as asked: no
        # queue limit (docs/broker.rst "Limits") on this broker of the benchmark's own.
        unbounded = BrokerConfig(max_queue_depth=None, max_queue_bytes=None)
        with run_broker(config=unbounded) as server:
            url = server.url

            def fill(address: str, count: int, done: Callable[[int], None] | None) -> None:
                bodies = (amqp.Message(body=body) for _ in range(count))
                publish(url, address, bodies, done=done)

            shown.stage("publishing", messages, f"{messages:,} messages to bench-asyncio")
            fill("bench-asyncio", messages, shown.done)
            shown.stage("receiving", messages, "with the asyncio adapter")
            aio_seconds = asyncio.run(
                _receive_all(url, "bench-asyncio", messages, min(batch, 10_000), shown.done)
            )
            # Both of the query's queues are filled before Spark starts: the warm-up's, and
            # the measured one's.
            warm = min(messages, 2_000)
            shown.stage("publishing", messages, f"{messages:,} messages to bench-spark")
            fill("bench-warm-up", warm, None)
            fill("bench-spark", messages, shown.done)
            with _session(spark, master, verbose=verbose, stages=shown) as (session, check):
                # Warm-up, not timed: the first query of a session starts Spark's Python
                # workers and compiles what the JVM runs, which is no cost of the adapter's.
                shown.stage("warming up", note=f"a first query of {warm:,} messages")
                _noop_read(
                    session, url, "bench-warm-up", warm, batch, partitions, work, _Unseen(), check
                )
                shown.stage(
                    "processing",
                    messages,
                    f"a streaming query, micro-batches of up to {batch:,} messages",
                )
                rows, batches, spark_seconds, phases = _noop_read(
                    session, url, "bench-spark", messages, batch, partitions, work, shown, check
                )
            node = server.broker.nodes.get("bench-spark")  # (deleted once emptied and unused)
            left = 0 if node is None else int(node.depth)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if rows != messages or left:
        raise RuntimeError(
            f"the streaming query read {rows:,} of {messages:,} messages ({left:,} left)"
        )
    aio_rate, spark_rate = messages / aio_seconds, messages / spark_seconds
    return {
        "messages": messages,
        "size": size,
        "asyncio": {"seconds": aio_seconds, "rate": aio_rate},
        "spark": {
            "seconds": spark_seconds,
            "rate": spark_rate,
            "batches": batches,
            "read_limit": batch,
            "partitions": partitions,
            "phases_ms": dict(phases),
        },
        "ratio": spark_rate / aio_rate,
    }


def format_bench(figures: dict[str, Any]) -> str:
    spark, aio = figures["spark"], figures["asyncio"]
    phases = ", ".join(
        f"{k} {v / 1000:.1f} s"
        for k, v in sorted(spark["phases_ms"].items(), key=lambda kv: -kv[1])
        if k != "triggerExecution"
    )
    return "\n".join(
        [
            f"spark: {figures['messages']:,} messages of {figures['size']} bytes from the "
            "reference broker over 127.0.0.1, each accepted",
            f"{'':30}{'msg/s':>12}{'seconds':>10}",
            f"{'asyncio adapter receiver':30}{aio['rate']:>12,.0f}{aio['seconds']:>10.2f}",
            f"{'Spark streaming query':30}{spark['rate']:>12,.0f}{spark['seconds']:>10.2f}",
            f"ratio {figures['ratio']:.2f} (Spark / asyncio; {spark['batches']} micro-batches of "
            f"up to {spark['read_limit']:,})",
            f"query time by phase: {phases}",
        ]
    )


# -- the commands ----------------------------------------------------------------------------


class StageBars:
    """:class:`Stages` shown on ``stream`` (standard error): a line when a stage begins and
    when it ends, and between them a :class:`~amqp_sansio.adapters.cli.progress.Bar` of its
    count, with its rate and time left (on a terminal, redrawn in place; elsewhere, a plain
    line every ten seconds)::

        publishing: 100,000 / 100,000 in 2s, 48,211 msg/s
        starting Spark: done in 9s
        processing  [########............]   40,000 / 100,000  6,851 msg/s  9s left

    On a terminal the line a stage begins with (``publishing: 100,000 orders to ...``) gives
    way to its bar, and the bar to the line it ends with, which stays. Without a stream
    nothing is shown; the counts are kept either way, for the line of an interrupted
    command (:meth:`interrupted`). ``tty`` and ``clock`` are injected for tests."""

    #: How a stage's count is said once done.
    PAST: ClassVar[dict[str, str]] = {
        "publishing": "published",
        "receiving": "received",
        "processing": "processed",
    }

    def __init__(
        self,
        stream: TextIO | None,
        *,
        tty: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.tty = (stream is not None and stream.isatty()) if tty is None else tty
        self._clock = clock
        self.name: str | None = None
        self.total: int | None = None
        self.count = 0
        self.counts: dict[str, tuple[int, int]] = {}  # a stage's count and total, by name
        self._started = 0.0
        self._bar: Bar | None = None

    def stage(self, name: str, total: int | None = None, note: str = "") -> None:
        self.close()
        self.name, self.total, self.count = name, total, 0
        self._started = self._clock()
        if total is not None:
            self.counts[name] = (0, total)
        if self.stream is None:
            return
        line = f"{name}: {note}" if note else name
        self._write(f"\r\033[K{line}" if self.tty else f"{line}\n")
        if total:
            self._bar = Bar(name, total, stream=self.stream, tty=self.tty, clock=self._clock)

    def done(self, count: int) -> None:
        self.count = count
        if self.name is not None and self.total is not None:
            self.counts[self.name] = (count, self.total)
        if self._bar is not None:
            self._bar.update(count)

    def close(self) -> None:
        """End the stage: the line that says what it did (safe to call twice)."""
        if self.name is None:
            return
        name, self.name = self.name, None
        if self.stream is None:
            return
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        seconds = self._clock() - self._started
        if self.total is None:
            line = f"{name}: done in {duration(seconds)}"
        else:
            rate = f", {self.count / seconds:,.0f} msg/s" if seconds > 0 else ""
            line = f"{name}: {self.count:,} / {self.total:,} in {duration(seconds)}{rate}"
        self._write(f"\r\033[K{line}\n" if self.tty else f"{line}\n")

    def abandon(self) -> None:
        """Take the stage off the terminal without its last line (the command's error or
        interruption says what happened instead)."""
        if self.name is None:
            return
        self.name = None
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        if self.stream is not None and self.tty:
            self._write("\r\033[K")

    def interrupted(self, stage: str | None) -> str:
        """``while processing (published 100,000 of 100,000, processed 40,000 of
        100,000)``: the stage an interruption stopped, and the counts so far."""
        counts = ", ".join(
            f"{self.PAST.get(name, name)} {count:,} of {total:,}"
            for name, (count, total) in self.counts.items()
        )
        where = f"while {stage}" if stage else "at the end"
        return f"{where} ({counts})" if counts else where

    def _write(self, text: str) -> None:
        assert self.stream is not None
        self.stream.write(text)
        self.stream.flush()


_EXITS = (
    "Exit status: 0 {ok}, 2 usage error (before Spark starts), 3 no Java runtime, the "
    "broker unreachable, or the query failed (one line), 130 interrupted (Ctrl-C: the query, "
    "Spark and the broker are stopped, and one line says what was done)."
)


def _common_options(parser: argparse.ArgumentParser, master: str) -> None:
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
        + _EXITS.format(ok="nothing lost, 1 an order was lost"),
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
        help="an AMQP 1.0 broker to use, amqp://[user:password@]host[:port] with no "
        "address (default: start the embedded reference broker on a free loopback port)",
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
    _common_options(pl, "local[*]")
    pl.set_defaults(run=run)


def add_bench_parser(bsub: Any) -> None:
    """Add ``spark`` to ``bench``'s subparsers."""
    bs = bsub.add_parser(
        "spark",
        help="messages from the reference broker into a Spark streaming query "
        "(format('amqp'), queue mode), next to the asyncio adapter's receive rate",
        description="Measure a Spark Structured Streaming query reading from the embedded "
        "reference broker through format('amqp') (queue mode, the noop sink), next to the "
        "asyncio adapter receiving as many messages from the same broker in the same run, "
        "and where the query's time went. Progress goes to stderr when it is a terminal, or "
        "with --progress. " + _EXITS.format(ok="measured"),
    )
    bs.add_argument(
        "--messages",
        type=options.positive_int,
        default=200_000,
        metavar="N",
        help="messages, each a data body of --size bytes (default 200,000)",
    )
    bs.add_argument(
        "--size",
        type=options.positive_int,
        default=256,
        metavar="BYTES",
        help="body bytes (default 256)",
    )
    bs.add_argument(
        "--batch",
        type=options.positive_int,
        default=50_000,
        metavar="N",
        help="the query's read limit per micro-batch (default 50,000)",
    )
    bs.add_argument(
        "--partitions",
        type=options.positive_int,
        default=2,
        metavar="N",
        help="Spark partitions each staged batch is cut into (default 2)",
    )
    _common_options(bs, "local[*]")
    bs.set_defaults(run=run)


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
    """``pipeline`` and ``bench spark``."""
    name = "pipeline" if args.command == "pipeline" else "bench spark"
    problem = _usage(args)  # a usage error at once, not after Spark has started
    if problem is not None:
        print(f"amqp-sansio {name}: error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    shown = args.progress or sys.stderr.isatty()
    stages = StageBars(sys.stderr if shown else None)
    try:
        if args.command == "pipeline":
            outcome = run_pipeline(
                args.messages,
                url=args.url,
                source=args.orders,
                sink=args.results,
                master=args.master,
                batch=args.batch,
                stages=stages,
                verbose=args.verbose,
            )
        else:
            figures = bench_spark(
                args.messages,
                size=args.size,
                batch=args.batch,
                partitions=args.partitions,
                master=args.master,
                stages=stages,
                verbose=args.verbose,
            )
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
    if args.command == "pipeline":
        print(json.dumps(outcome.as_dict(), indent=2) if args.json else format_outcome(outcome))
        return 1 if outcome.lost else 0
    print(json.dumps(figures, indent=2) if args.json else format_bench(figures))
    return 0
