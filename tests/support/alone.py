"""The ``alone`` marker, for a run in worker processes (``-n 2``, pytest-xdist): a test that
times itself or loads the machine runs while the other worker waits.

Every test of the run holds a shared ``flock`` on one file, named by the run
(``PYTEST_XDIST_TESTRUNUID``); an ``alone`` test holds it exclusively. A second lock, the
gate, is taken briefly by every test before its shared lock and held by an ``alone`` test
while it waits for the shared holders to finish, so the other worker cannot start test after
test in front of it. In one process (no xdist), and where there is no ``flock``, the fixture
does nothing. ``tests/project/test_alone_marker.py`` checks it.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: every test runs as in one process
    fcntl = None  # type: ignore[assignment]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "alone: runs with no test of the other worker process at the same time"
    )


@contextmanager
def _flock(path: Path, kind: int) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, kind)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(autouse=True)
def _alone_or_shared(request: pytest.FixtureRequest) -> Iterator[None]:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None or fcntl is None:
        yield
        return
    shared = Path(tempfile.gettempdir()) / f"amqp-sansio-tests-{run}.lock"
    gate = shared.with_suffix(".gate")
    if request.node.get_closest_marker("alone") is not None:
        with _flock(gate, fcntl.LOCK_EX), _flock(shared, fcntl.LOCK_EX):
            yield
    else:
        with _flock(gate, fcntl.LOCK_EX):
            pass
        with _flock(shared, fcntl.LOCK_SH):
            yield
