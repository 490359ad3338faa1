"""Interfaces between rooms: a module reads another object's private attributes
(``x._name``, x not ``self``, ``cls`` or a capitalised name) at most 5 times per 1,000 lines,
in each of ``engine/``, ``broker/``, ``client/`` and the AMQP 0-9-1 folders (every
``amqp091/`` folder of the package, together). The owner offers a method or a read-only
property instead, or the callee returns what it produced (as h2's streams return
``(frames, events)``). The count is /work/shared/tools/house_measures.py's."""

from __future__ import annotations

import ast
import pathlib

import pytest
from support import ROOT

LIMIT = 5.0  # per 1,000 lines


def private_reads(tree: ast.AST) -> int:
    count = 0
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            owner = node.value
            if isinstance(owner, ast.Name) and (
                owner.id in ("self", "cls") or owner.id[:1].isupper()
            ):
                continue
            count += 1
    return count


def per_thousand(files: list[pathlib.Path]) -> tuple[float, int, int]:
    reads = lines = 0
    for path in files:
        text = path.read_text()
        reads += private_reads(ast.parse(text))
        lines += len(text.splitlines())
    return round(1000 * reads / max(lines, 1), 1), reads, lines


FOLDERS = {
    "engine": sorted((ROOT / "amqp_sansio" / "engine").rglob("*.py")),
    "broker": sorted((ROOT / "amqp_sansio" / "broker").rglob("*.py")),
    "client": sorted((ROOT / "amqp_sansio" / "client").rglob("*.py")),
    "0-9-1": sorted(
        p
        for top in ("amqp_sansio", "adapters")
        for p in (ROOT / top).rglob("*.py")
        if "amqp091" in p.relative_to(ROOT).parts[:-1]
    ),
}


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_few_private_reads_across_objects(folder: str) -> None:
    rate, reads, lines = per_thousand(FOLDERS[folder])
    assert lines > 500
    assert rate <= LIMIT, f"{folder}: {reads} private reads in {lines} lines"


def test_the_count() -> None:
    tree = ast.parse("self._a; cls._b; Conn._c; other._d; x.y._e; other.__len__")
    assert private_reads(tree) == 2
