"""Static checks run with the test suite: ``mypy --strict`` on the core and ``ruff``."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_mypy_strict_on_the_core() -> None:
    pytest.importorskip("mypy", reason="mypy is in the 'test' extra")
    result = _run(sys.executable, "-m", "mypy", "--strict", "amqp_sansio", "adapters")
    assert result.returncode == 0, result.stdout + result.stderr


def _ruff() -> str:
    exe = shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff is not installed (it is in the 'test' extra)")
    return exe


def test_ruff_check() -> None:
    result = _run(_ruff(), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(_ruff(), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr
