"""Static checks run with the test suite: ``mypy --strict`` on the core, ``ruff``, and
flake8-async (trio's own linter) on the adapters."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from support import ROOT

#: The environment of the checkers, without coverage's: they read the package's source and run
#: none of it, so there is nothing to measure in them (under coverage, flake8-async took
#: two and a half times as long).
ENV = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600, env=ENV)


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


def test_flake8_async_on_the_adapters() -> None:
    """Trio's checks for blocking and cancellation (python-trio/flake8-async): its default
    rules (ASYNC1xx-3xx: blocking calls in async code, unshielded awaits in cleanup, a
    swallowed Cancelled, ...), but ASYNC109 (a ``timeout`` parameter: the adapters' shared
    API takes one; cancel scopes work too). The opt-in ASYNC9xx rules ask every async
    function to checkpoint on every path; the adapters' rule is in docs/adapters.rst."""
    exe = shutil.which("flake8-async")
    if exe is None:
        pytest.skip("flake8-async is not installed (it is in the 'test' extra)")
    files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "adapters").rglob("*.py"))
    result = _run(exe, "--enable=ASYNC1,ASYNC2,ASYNC3", "--disable=ASYNC109", *files)
    assert result.returncode == 0, result.stdout + result.stderr


def test_pre_commit_runs_what_ci_runs() -> None:
    """``.pre-commit-config.yaml`` runs the commands of the checks above, so that a commit
    meets what CI checks (the hooks are local: the tools of the ``test`` extra)."""
    yaml = pytest.importorskip("yaml", reason="PyYAML reads the pre-commit configuration")
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    entries = {hook["entry"] for repo in config["repos"] for hook in repo["hooks"]}
    assert entries == {
        "python3 -m ruff check",
        "python3 -m ruff format --check",
        "python3 -m mypy --strict amqp_sansio adapters",
        "flake8-async --enable=ASYNC1,ASYNC2,ASYNC3 --disable=ASYNC109",
    }
