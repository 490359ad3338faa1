"""``amqp-sansio bench spark``: a Structured Streaming query reading from the reference
broker through ``format("amqp")`` (queue mode, the ``noop`` sink), next to the asyncio
adapter receiving as many messages from the same broker in the same run, with where the
query's time went and the CPU time of the driver's processes and the executors'
(:mod:`.processes`), per message (docs/performance.rst, "Spark")."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import amqp_sansio as amqp

from .. import options
from ..pipeline import EXITS, Unseen, common_options, publish, run_spark_command, watch
from ..progress import StageBars, Stages
from ..spark_process import running_session
from .processes import CPUByRole, measuring

__all__ = ["add_parser", "bench_spark", "format_bench", "run"]


async def _receive_all(
    url: str, address: str, count: int, credit: int, done: Callable[[int], None]
) -> float:
    """Seconds the asyncio adapter takes to receive, decode and accept ``count`` messages
    (the work the Spark source does for each, short of making it a row), told to ``done``
    every thousand."""
    from ... import aio

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
    query, rows, batches = watch(writer, count, stages, check)
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
    shown = stages if stages is not None else Unseen()
    body = bytes(size)
    work = tempfile.mkdtemp(prefix="amqp-sansio-bench-")
    try:
        from amqp_sansio.broker import BrokerConfig

        from ...broker import run_broker

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
            with running_session(spark, master, verbose=verbose, stages=shown) as (session, check):
                # Warm-up, not timed: the first query of a session starts Spark's Python
                # workers and compiles what the JVM runs, which is no cost of the adapter's.
                shown.stage("warming up", note=f"a first query of {warm:,} messages")
                _noop_read(
                    session, url, "bench-warm-up", warm, batch, partitions, work, Unseen(), check
                )
                shown.stage(
                    "processing",
                    messages,
                    f"a streaming query, micro-batches of up to {batch:,} messages",
                )
                with measuring(session.sparkContext.applicationId) as cpu:
                    marking = _MarkAtFirstRows(shown, cpu)
                    rows, batches, spark_seconds, phases = _noop_read(
                        session,
                        url,
                        "bench-spark",
                        messages,
                        batch,
                        partitions,
                        work,
                        marking,
                        check,
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
    used = cpu.seconds()
    driver, executors = _per_message(used, messages)
    steady = cpu.since_mark()
    steady_messages = messages - (marking.at or messages)
    if steady is not None and steady_messages:
        steady_driver, steady_executors = _per_message(steady, steady_messages)
    else:  # one micro-batch did it all: no steady state to tell apart
        steady_driver, steady_executors = driver, executors
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
        "cpu_seconds": used,
        "cpu_us_per_message": {"driver": driver, "executors": executors},
        "driver_cpu_share": driver / executors if executors else None,
        "steady": {
            "messages": steady_messages,
            "cpu_seconds": steady,
            "cpu_us_per_message": {"driver": steady_driver, "executors": steady_executors},
            "driver_cpu_share": steady_driver / steady_executors if steady_executors else None,
        },
        "master": master,
    }


class _MarkAtFirstRows:
    """The stages shown, and a mark of the CPU figures when the first rows are reported
    read (the first micro-batch done): what the processes used after it is the steady
    state, without the start of the query's Python processes."""

    def __init__(self, stages: Stages, cpu: CPUByRole) -> None:
        self._stages, self._cpu = stages, cpu
        #: Rows read when the mark was made (None: not yet).
        self.at: int | None = None

    def stage(self, name: str, total: int | None = None, note: str = "") -> None:
        self._stages.stage(name, total, note)

    def done(self, count: int) -> None:
        if count and self.at is None:
            self._cpu.mark()
            self.at = count
        self._stages.done(count)


def _per_message(used: dict[str, float], messages: int) -> tuple[float, float]:
    """(driver, executors) CPU microseconds per message. In local mode one JVM is driver and
    executor: only the Python processes are told apart (the driver's, which plans, and the
    workers, which run the tasks), and the JVM counts for neither."""
    local = not used["executor JVMs"]
    driver = used["driver Python"] + (0.0 if local else used["driver JVM"])
    executors = used["executor Python"] + used["executor JVMs"]
    return driver / messages * 1e6, executors / messages * 1e6


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
            _format_cpu(figures),
        ]
    )


def _format_cpu(figures: dict[str, Any]) -> str:
    used = figures["cpu_seconds"]
    local = not used["executor JVMs"]
    scope = (
        "local mode: one JVM is driver and executor, so the Python processes only"
        if local
        else "JVMs and Python processes"
    )

    def line(label: str, per: dict[str, float], share: float | None) -> str:
        ratio = "-" if share is None else f"{share:.3f}"
        return (
            f"CPU per message, {label}: driver {per['driver']:.2f} us, executors "
            f"{per['executors']:.2f} us, driver / executors {ratio}"
        )

    steady = figures["steady"]
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in used.items())
    return "\n".join(
        [
            line("whole query", figures["cpu_us_per_message"], figures["driver_cpu_share"]),
            line(
                f"after the first micro-batch ({steady['messages']:,} messages)",
                steady["cpu_us_per_message"],
                steady["driver_cpu_share"],
            ),
            f"CPU by process ({scope}): {parts}",
        ]
    )


def add_parser(bsub: Any) -> None:
    """Add ``spark`` to ``bench``'s subparsers."""
    bs = bsub.add_parser(
        "spark",
        help="messages from the reference broker into a Spark streaming query "
        "(format('amqp'), queue mode), next to the asyncio adapter's receive rate",
        description="Measure a Spark Structured Streaming query reading from the embedded "
        "reference broker through format('amqp') (queue mode, the noop sink), next to the "
        "asyncio adapter receiving as many messages from the same broker in the same run, "
        "and where the query's time went. Progress goes to stderr when it is a terminal, or "
        "with --progress. " + EXITS.format(ok="measured"),
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
        help="receiver tasks per micro-batch, competing consumers on the executors (default 2)",
    )
    common_options(bs, "local[*]")
    bs.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``bench spark``."""

    def work(stages: StageBars) -> Callable[[], int]:
        figures = bench_spark(
            args.messages,
            size=args.size,
            batch=args.batch,
            partitions=args.partitions,
            master=args.master,
            stages=stages,
            verbose=args.verbose,
        )

        def report() -> int:
            print(json.dumps(figures, indent=2) if args.json else format_bench(figures))
            return 0

        return report

    return run_spark_command("bench spark", args, work)
