"""Helpers the test modules share (tests import them as ``support.X``: pyproject.toml puts
``tests/`` on ``sys.path`` with pytest's ``pythonpath`` option). No test module imports
another test module; what two of them need lives here."""

from __future__ import annotations

from pathlib import Path

#: The repository's root (this file is tests/support/__init__.py).
ROOT = Path(__file__).resolve().parents[2]
