"""The Sphinx docs build with warnings as errors, and every example in them runs.

Both builds write into a temporary directory, never into docs/_build.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

DOCS = ROOT / "docs"

needs_sphinx = pytest.mark.skipif(
    importlib.util.find_spec("sphinx") is None,
    reason="Sphinx is not installed (it is in the 'docs' extra: pip install -e '.[docs]')",
)


@needs_sphinx
@pytest.mark.parametrize("builder", ["html", "doctest"])
def test_sphinx_build(builder: str, tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "sphinx",
        "-W",
        "--keep-going",
        "-q",
        "-b",
        builder,
        "-d",
        str(tmp_path / "doctrees"),
        str(DOCS),
        str(tmp_path / builder),
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)
    report = ""
    if builder == "doctest" and (tmp_path / builder / "output.txt").exists():
        report = (tmp_path / builder / "output.txt").read_text()
    assert result.returncode == 0, (
        f"sphinx-build -b {builder} failed:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        f"\n{report[-6000:]}"
    )
