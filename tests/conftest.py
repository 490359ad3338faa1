"""Fixtures shared by test modules."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

#: The coverage floor of each part of the package (pyproject.toml).
pytest_plugins = ["support.coverage_floors", "support.alone"]

# Speed is measured by the benchmarks, not by timed tests: on a loaded machine (CI, with
# Spark and the brokers beside it) Hypothesis' time checks fail tests that are correct. Every
# property test therefore runs without a deadline per example and without the health check on
# slow input generation; each test's own @settings still sets its number of examples.
settings.register_profile(
    "amqp-sansio", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("amqp-sansio")

# A shell starts a job in the background (``pytest ... &``, ``nohup``, many CI runners) with
# SIGINT ignored, and every process started from it inherits that: a command the tests
# interrupt with SIGINT would ignore it. The commands are run from a terminal, where SIGINT
# has its default, so the test processes (and so the programs they start) take it back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local Spark (``local[2]``, UI off, UTC) for every Spark test module, with
    ``format("amqp")`` registered: the session the commands make
    (:func:`amqp_sansio.adapters.cli.spark_process.spark_session`). Starting Spark takes tens of
    seconds, so it starts once. Skips, saying why, without pyspark or Java."""
    pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
    from amqp_sansio.adapters import spark as spark_adapter
    from amqp_sansio.adapters.cli import spark_process

    try:
        spark_adapter.ensure_java()
    except spark_adapter.JavaMissing as exc:
        pytest.skip(f"{exc} (.ci/run installs one)")
    session = spark_process.spark_session("local[2]")
    yield session
    session.stop()
