"""The ``alone`` marker (``tests/support/alone.py``): with ``-n 2``, no test of the other
worker runs while an ``alone`` test does. A small suite in two workers records when each of
its tests starts and ends; with the marker the ``alone`` test overlaps none, and without it
(the control) it overlaps some, so the check can fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

_TIMED = """
import json, os, time
import pytest

def _record(name):
    start = time.monotonic()
    time.sleep({sleep})
    with open(os.environ["ALONE_LOG"], "a") as log:
        log.write(json.dumps([name, start, time.monotonic()]) + "\\n")
"""

_ALONE = (
    _TIMED.format(sleep=1.0)
    + """
{marker}
def test_alone():
    _record("alone")
"""
)

_OTHERS = (
    _TIMED.format(sleep=0.15)
    + """
@pytest.mark.parametrize("n", range(12))
def test_other(n):
    _record(f"other{n}")
"""
)


def _overlaps(tmp_path: Path, marker: str) -> list[str]:
    """The suite run in two workers: the tests that ran while the ``alone`` test did."""
    (tmp_path / "test_a.py").write_text(_ALONE.format(marker=marker))
    (tmp_path / "test_b.py").write_text(_OTHERS)
    log = tmp_path / "log"
    env = {**os.environ, "ALONE_LOG": str(log), "PYTHONPATH": str(ROOT / "tests")}
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    env.pop("PYTEST_ADDOPTS", None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "support.alone",
            "-n",
            "2",
            "--dist",
            "loadfile",
            "-o",
            "addopts=",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(rows) == 13
    ((_, a_start, a_end),) = [row for row in rows if row[0] == "alone"]
    return [
        name for name, start, end in rows if name != "alone" and start < a_end and end > a_start
    ]


def test_no_test_runs_beside_an_alone_test(tmp_path: Path) -> None:
    pytest.importorskip("xdist", reason="pytest-xdist is in the 'test' extra")
    assert _overlaps(tmp_path, "@pytest.mark.alone") == []


def test_without_the_marker_the_tests_overlap(tmp_path: Path) -> None:
    """The control: the same suite without the marker runs tests side by side."""
    pytest.importorskip("xdist", reason="pytest-xdist is in the 'test' extra")
    assert _overlaps(tmp_path, "") != []
