"""The ``amqp-sansio`` command: ``bench codec`` prints our figure, Proton's and the ratio.
(No timing is asserted: speed is measured by the benchmark, not by tests.)"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from amqp_sansio.adapters import bench, cli


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amqp_sansio.adapters.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_bench_codec_json_shape() -> None:
    result = _run("bench", "codec", "--json", "--seconds", "0.2")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"encode", "decode"}
    for entry in data.values():
        assert set(entry) == {"ours", "proton", "ratio", "unit"}
        assert entry["unit"] == "ops/s"
        assert entry["ours"] > 0


def test_bench_codec_compares_with_proton_when_installed() -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is in the 'test' extra")
    data = json.loads(_run("bench", "codec", "--json", "--seconds", "0.2").stdout)
    for entry in data.values():
        assert entry["proton"] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry["proton"], rel=1e-2)


def test_bench_table_output() -> None:
    result = _run("bench", "codec", "--seconds", "0.2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["ours", "proton", "ratio", "unit"]
    assert lines[2].startswith("encode") and lines[3].startswith("decode")


def test_table_without_proton_says_so() -> None:
    text = bench.format_table(
        "t", {"encode": {"ours": 1.0, "proton": None, "ratio": None, "unit": "ops/s"}}
    )
    assert "n/a" in text and "not installed" in text


def test_the_benchmark_message_is_the_one_the_issue_describes() -> None:
    m = bench.typical_message()
    assert m.header is not None and m.header.durable and m.header.priority == 4
    p = m.properties
    assert p is not None
    assert None not in (p.message_id, p.to, p.subject, p.content_type, p.correlation_id)
    assert m.application_properties is not None and len(m.application_properties) == 5
    assert len({type(v) for v in m.application_properties.values()}) >= 4
    assert m.body is not None and len(m.body.value) == 256  # type: ignore[union-attr]


def test_usage_errors_exit_nonzero() -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["bench"])
    assert info.value.code == 2
