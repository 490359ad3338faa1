"""The qpid-python peer (Apache qpid-python with its Python 3 fixes, in
``../shared/peers/qpid-python``; its README says what it holds): where it is, and its modules
imported for the AMQP 0-10 tests.

The folder is found at ``$AMQP_SANSIO_PEERS_DIR/qpid-python`` when that variable is set (a
checkout outside the usual place), else at ``../shared/peers/qpid-python`` beside the
checkout. It needs no packages: the folder goes on ``sys.path``. Where it is absent, the tests
that need it skip, saying so; ``.ci/run`` stops before the suite if it is absent, so CI never
skips them.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from support import ROOT

__all__ = ["QPID_DIR", "qpid_module", "qpid_spec_xml"]


def _peers_dir() -> Path:
    configured = os.environ.get("AMQP_SANSIO_PEERS_DIR")
    return Path(configured) if configured else ROOT.parent / "shared" / "peers"


#: Where qpid-python is expected (it may be absent).
QPID_DIR = _peers_dir() / "qpid-python"


def qpid_module(name: str) -> ModuleType:
    """Import ``name`` (``"qpid.codec010"``, ``"qpid.messaging"``, ...) from the qpid-python
    peer, or skip the calling test saying why it cannot."""
    if not (QPID_DIR / "qpid" / "__init__.py").is_file():
        pytest.skip(
            f"qpid-python (the AMQP 0-10 peer) is not at {QPID_DIR}: set AMQP_SANSIO_PEERS_DIR "
            "to the folder holding qpid-python/"
        )
    if str(QPID_DIR) not in sys.path:
        sys.path.insert(0, str(QPID_DIR))
    return importlib.import_module(name)


def qpid_spec_xml() -> Path:
    """Qpid's AMQP 0-10 definition with its errata (the machine-readable form of the
    standard's classes; ``amqp-0-10-qpid-errata-stripped.xml``), or skip saying why."""
    path = QPID_DIR / "qpid" / "specs" / "amqp-0-10-qpid-errata-stripped.xml"
    if not path.is_file():
        pytest.skip(f"qpid-python's 0-10 definition is not at {path}")
    return path
