"""A branch-coverage floor for each part of the package, checked at the end of a ``--cov``
run (pytest-cov's one ``fail_under`` is a floor for the whole).

The parts and their floors are in ``pyproject.toml``, ``[tool.amqp-sansio.coverage-floors]``:
each part names the files it holds (patterns relative to the checkout, as coverage reads
them) and the files of those it leaves to another part (``omit``). Below a floor, the run
fails as pytest-cov fails it below ``fail_under``, and every part's figure is printed.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Generator
from typing import Any

import pytest

from support import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - pytest needs tomli before 3.11
    import tomli as tomllib


def floors() -> dict[str, dict[str, Any]]:
    """The parts by name: ``include``, ``omit`` (lists of patterns) and ``floor`` (percent)."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        config = tomllib.load(file)
    parts: dict[str, dict[str, Any]] = config["tool"]["amqp-sansio"]["coverage-floors"]
    return parts


def _percent(cov: Any, include: list[str], omit: list[str]) -> float | None:
    from coverage.exceptions import NoDataError

    try:
        return float(
            cov.report(
                include=[str(ROOT / p) for p in include],
                omit=[str(ROOT / p) for p in omit],
                file=io.StringIO(),
            )
        )
    except NoDataError:  # none of its files ran: not measured in this run
        return None


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    # tryfirst: this wrapper is outside pytest-cov's, which has combined the data (this
    # process's and the subprocesses') by the time this one goes on.
    result = yield
    plugin = session.config.pluginmanager.getplugin("_cov")
    controller = getattr(plugin, "cov_controller", None)
    if controller is None or getattr(plugin, "cov_total", None) is None:
        return result
    reporter = session.config.pluginmanager.getplugin("terminalreporter")
    below = []
    figures = []
    for name, part in floors().items():
        percent = _percent(controller.cov, part["include"], part.get("omit", []))
        shown = "not run" if percent is None else f"{percent:.2f}%"
        figures.append(f"{name} {shown} (floor {part['floor']}%)")
        if percent is not None and percent < part["floor"]:
            below.append(name)
    reporter.write("\ncoverage by part: " + ", ".join(figures) + "\n")
    if below:
        reporter.write(
            f"ERROR: coverage below the floor of {', '.join(below)}\n", red=True, bold=True
        )
        session.testsfailed += 1
    return result
