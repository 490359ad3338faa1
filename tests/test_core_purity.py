"""The core never does I/O: no module under amqp_sansio/ (recursively) imports sockets, event
loops, threads, clocks or Spark (the adapters do)."""

from __future__ import annotations

import ast
import pathlib

import amqp_sansio

FORBIDDEN = {"socket", "selectors", "asyncio", "trio", "threading", "time", "pyspark"}
CORE = pathlib.Path(amqp_sansio.__file__).parent


def _imports(path: pathlib.Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "__import__"
            and node.args
            and isinstance(node.args[0], ast.Constant)
        ):
            names.add(str(node.args[0].value).split(".")[0])
    return names


def test_core_modules_import_no_io() -> None:
    modules = sorted(CORE.rglob("*.py"))
    assert len(modules) >= 10
    offenders = {
        str(p.relative_to(CORE)): sorted(_imports(p) & FORBIDDEN)
        for p in modules
        if _imports(p) & FORBIDDEN
    }
    assert offenders == {}


def test_the_check_would_catch_an_offender(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import socket\nfrom time import monotonic\nimport asyncio.tasks\n")
    assert _imports(bad) & FORBIDDEN == {"socket", "time", "asyncio"}


def test_py_typed_ships() -> None:
    assert (CORE / "py.typed").exists()
