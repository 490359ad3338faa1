"""``amqp-sansio bench codec --protocol 0-10``: a message.transfer with its header and body,
encoded and decoded, ours next to qpid-python's codec010 in the same run.
(No timing is asserted: speed is measured by the benchmark, not by tests.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.qpid_peer import QPID_DIR, qpid_module


def _run(*args: str, peers: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, AMQP_SANSIO_PEERS_DIR=str(peers or QPID_DIR.parent))
    return subprocess.run(
        [sys.executable, "-m", "amqp_sansio.adapters.cli", "bench", "codec", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_bench_codec_010_json_compares_with_qpid() -> None:
    qpid_module("qpid.codec010")  # skips, saying why, without the peer
    result = _run("--protocol", "0-10", "--json", "--seconds", "0.2")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"message encode", "message decode"}
    for entry in data.values():
        assert set(entry) == {"ours", "qpid-python", "ratio", "unit"}
        assert entry["unit"] == "ops/s" and entry["ours"] > 0 and entry["qpid-python"] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry["qpid-python"], rel=1e-2)


def test_bench_codec_010_table() -> None:
    qpid_module("qpid.codec010")
    result = _run("--protocol", "0-10", "--seconds", "0.1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("codec 0-10")
    assert lines[1].split() == ["ours", "qpid-python", "ratio", "unit"]
    assert [line.split()[:2] for line in lines[2:]] == [
        ["message", "encode"],
        ["message", "decode"],
    ]


def test_bench_codec_010_without_qpid(tmp_path: Path) -> None:
    """Without qpid-python only our figures: the table says where to point."""
    result = _run("--protocol", "0-10", "--seconds", "0.05", peers=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "n/a" in result.stdout and "qpid-python is not found" in result.stdout
    assert "AMQP_SANSIO_PEERS_DIR" in result.stdout
