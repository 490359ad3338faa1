"""``amqp-sansio bench all``: every bench one after another, a table each or one JSON object
keyed by bench name; a bench without its peer left out saying so; ours failing is exit
status 3. Only the quick benches run here (``--only``); no timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from amqp_sansio.adapters import cli
from amqp_sansio.adapters.cli.bench import every

#: No RabbitMQ listens on port 1.
_NO_RABBITMQ = "amqp://guest:guest@127.0.0.1:1"


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amqp_sansio.adapters.cli", "bench", "all", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
    )


def test_json_holds_each_bench_s_own_json_keyed_by_name() -> None:
    result = _run("--json", "--only", "codec,pipe", "--seconds", "0.05", "--messages", "200")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert list(data) == ["codec/1.0", "codec/0-9-1", "codec/0-10", "pipe"]
    assert set(data["codec/1.0"]) == {"encode", "decode", "encode vs rbfly", "decode vs rbfly"}
    assert set(data["codec/0-9-1"]) >= {"method encode", "header decode"}
    assert set(data["pipe"]) == {"pipe"}
    for bench in data.values():
        assert all(row["ours"] > 0 and "ratio" in row for row in bench.values())
    assert "bench all: pipe: running" in result.stderr


def test_a_bench_without_its_peer_is_left_out_saying_why(tmp_path: Path) -> None:
    result = _run(
        *("--json", "--only", "loopback/0-9-1,loopback/0-10"),
        AMQP_SANSIO_RABBITMQ_URL=_NO_RABBITMQ,
        AMQP_SANSIO_PEERS_DIR=str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["loopback/0-9-1"]["skipped"].startswith("no RabbitMQ at amqp://")
    assert "qpid-python is not found" in data["loopback/0-10"]["skipped"]
    assert "bench all: loopback/0-10: left out: qpid-python" in result.stderr


def test_tables_one_per_bench_and_skip(tmp_path: Path) -> None:
    """Without --json each bench prints its own table (a peer it lacks said there, as
    when it runs alone); --skip leaves out a bench by name."""
    result = _run(
        *("--only", "codec,loopback/0-9-1", "--skip", "codec/1.0,codec/0-9-1"),
        *("--seconds", "0.05"),
        AMQP_SANSIO_PEERS_DIR=str(tmp_path),
        AMQP_SANSIO_RABBITMQ_URL=_NO_RABBITMQ,
    )
    assert result.returncode == 0, result.stderr
    blocks = result.stdout.strip().split("\n\n")
    assert len(blocks) == 2
    assert blocks[0].startswith("codec 0-10:") and "qpid-python is not found" in blocks[0]
    assert blocks[1].startswith("loopback/0-9-1: left out: no RabbitMQ at")


def test_ours_failing_is_status_3_and_the_others_still_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = every.Bench(
        "loopback/1.0", lambda a: ["loopback", "--url", "ws://[bad"], every.BENCHES[0].absent
    )
    absent = every.Bench("spark", lambda a: ["spark"], lambda: "no Java runtime")
    monkeypatch.setattr(every, "BENCHES", (failing, absent))
    assert cli.main(["bench", "all", "--json"]) == 3
    data = json.loads(capsys.readouterr().out)
    assert data["loopback/1.0"]["exit_status"] == 2
    assert "--url" in data["loopback/1.0"]["failed"]
    assert data["spark"] == {"skipped": "no Java runtime"}


def test_an_unknown_bench_is_a_usage_error() -> None:
    result = _run("--only", "codec,nope")
    assert result.returncode == 2
    assert "unknown bench 'nope'" in result.stderr and "loopback/0-9-1" in result.stderr


def test_the_benchmark_record_has_a_row_for_every_bench() -> None:
    """docs/performance.rst, "The benchmark record": every bench ``bench all`` runs has its
    rows there, and the command that made them is the one given."""
    from support import ROOT

    text = (ROOT / "docs" / "performance.rst").read_text()
    record = text.split("\nThe benchmark record\n")[1].split("\nReading the numbers\n")[0]
    assert "amqp-sansio bench all --json --seconds 1 --messages 50000 --rounds 3" in record
    benches = {line.split("``")[1] for line in record.splitlines() if line.startswith("   * - ``")}
    assert benches >= {one.name for one in every.BENCHES}
