"""Commit subjects are at most 72 characters, the why in the body (CONTRIBUTING.md),
for every commit since the rule was written (issue 28; the commits before it, some longer,
are history and stay as they are)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from support import ROOT

BASE = "b2fc181"
LIMIT = 72


def subjects() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("no git history in this checkout (a source tree without .git)")
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{BASE}^{{commit}}"], cwd=ROOT, capture_output=True
    )
    if known.returncode:
        pytest.skip(f"the base commit {BASE} is not in this checkout's history (shallow clone)")
    log = subprocess.run(
        ["git", "log", "--format=%s", f"{BASE}..HEAD"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return log.stdout.splitlines()


def test_commit_subjects_are_short() -> None:
    assert [s for s in subjects() if len(s) > LIMIT] == []
