"""The project's 1,000-line cap on a module, beyond the package (whose modules
tests/project/test_layers.py measures): the fuzz harness (fuzz/, one module per target
family) and what the test modules share (tests/support/). And, in fuzz/, the protocol
naming of the package: a module of one protocol lives in that protocol's folder
(``fuzz/amqp10/``, ``fuzz/amqp091/``), so no module elsewhere has ``091`` in its name."""

from __future__ import annotations

import pytest
from support import ROOT

#: The most lines a module may have.
LIMIT = 1000
#: The folders measured here, from the repository's root.
FOLDERS = ("fuzz", "tests/support")


def _sizes(folder: str) -> dict[str, int]:
    return {
        str(path.relative_to(ROOT)): len(path.read_text().splitlines())
        for path in sorted((ROOT / folder).rglob("*.py"))
    }


@pytest.mark.parametrize("folder", FOLDERS)
def test_no_module_over_a_thousand_lines(folder: str) -> None:
    sizes = _sizes(folder)
    assert sizes, f"no module found under {folder}/"
    assert {name: n for name, n in sizes.items() if n > LIMIT} == {}


def test_fuzz_modules_of_one_protocol_are_in_its_folder() -> None:
    misplaced = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "fuzz").rglob("*.py"))
        if "091" in path.name and path.parent.name != "amqp091"
    ]
    assert misplaced == []
