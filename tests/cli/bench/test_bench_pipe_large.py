"""``bench pipe --large``: one large message through our engines, next to Proton two ways
(the ``large`` row: Proton on the same work as ours; ``large-engine``: Proton's engine
driven directly on the message encoded beforehand), and with ``--memory`` the copies of
the body our engines make on each side. Sizes stay small (1 MiB); no timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from amqp_sansio.adapters.cli import bench


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amqp_sansio.adapters.cli", "bench", "pipe", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def _large_json(*args: str) -> dict[str, dict[str, object]]:
    result = _run("--large", "1MiB", "--rounds", "1", "--json", *args)
    assert result.returncode == 0, result.stderr
    data: dict[str, dict[str, object]] = json.loads(result.stdout)
    return data


def test_large_reports_both_proton_rows() -> None:
    data = _large_json()
    assert list(data)[:2] == ["large", "large-engine"]
    assert set(data["large"]) == {"ours", "proton", "ratio", "unit"}
    assert set(data["large-engine"]) == {"ours", "proton-engine", "ratio", "unit"}
    for entry in data.values():
        assert entry["unit"] == "MiB/s"
        assert isinstance(entry["ours"], float) and entry["ours"] > 0


def test_large_engine_row_measures_proton_when_installed() -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is in the 'test' extra")
    entry = _large_json()["large-engine"]
    theirs = entry["proton-engine"]
    assert isinstance(theirs, float) and theirs > 0
    assert isinstance(entry["ours"], float)
    assert entry["ratio"] == pytest.approx(entry["ours"] / theirs, rel=1e-2)


def test_large_table_names_the_engine_peer() -> None:
    result = _run("--large", "1MiB", "--rounds", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["ours", "theirs", "ratio", "unit", "peer"]
    assert lines[2].split()[0] == "large" and lines[2].split()[-2:] == ["MiB/s", "proton"]
    row = lines[3].split()
    assert row[0] == "large-engine" and row[-2:] == ["MiB/s", "proton-engine"]
    if bench.proton_installed():
        assert row[3].endswith("x")  # a ratio, not n/a


def test_proton_engine_carries_the_whole_message() -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is in the 'test' extra")
    import proton

    body = bytes(range(256)) * 4096  # 1 MiB, every 64 KiB frame's bytes different
    encoded = bench.proton_encoded(body)
    elapsed, payload = bench.proton_engine_transfer(encoded)
    assert elapsed > 0
    assert len(payload) == len(encoded) > len(body)
    assert payload == encoded
    decoded = proton.Message()
    decoded.decode(payload)
    assert decoded.body == body
    assert bench.proton_engine_large(encoded) > 0  # checks the payload itself


def test_large_memory_reports_our_copies_on_each_side() -> None:
    data = _large_json("--memory", "--memory-messages", "200", "--memory-unsettled", "100")
    for name in ("copies-sending", "copies-receiving"):
        entry = data[name]
        assert entry == {"ours": entry["ours"], "proton": None, "ratio": None, "unit": "copies"}
    sending = data["copies-sending"]["ours"]
    receiving = data["copies-receiving"]["ours"]
    assert isinstance(sending, float) and isinstance(receiving, float)
    # The sender frames the body's own bytes; the receiver decodes it into one new body.
    assert sending < 0.1
    assert 0.9 < receiving < 1.1


def test_large_copies_checks_the_body_it_decodes() -> None:
    copies = bench.large_copies(256 * 1024)
    assert set(copies) == {"copies-sending", "copies-receiving"}
    assert copies["copies-receiving"]["ours"] >= 0.9  # the decoded body was really made
