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


def _module_name(path: pathlib.Path) -> str:
    parts = [CORE.name, *path.relative_to(CORE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _runtime_imports(path: pathlib.Path, modules: set[str]) -> set[str]:
    """The core modules that ``path`` imports when it runs: imports under ``if TYPE_CHECKING:``
    serve annotations only and are left out."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if _is_type_checking(node):
            return
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in modules else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return found & modules


def test_core_modules_import_no_cycle() -> None:
    """Layers import downwards only: no core module imports, directly or through others, a
    module that imports it (the engine reaches transactions through ``engine.hooks``)."""
    paths = sorted(CORE.rglob("*.py"))
    modules = {_module_name(p) for p in paths}
    graph = {_module_name(p): _runtime_imports(p, modules) for p in paths}
    assert graph["amqp_sansio.engine.connection"] >= {"amqp_sansio.engine.transactions"}
    done: set[str] = set()
    cycles: list[list[str]] = []

    def walk(node: str, stack: list[str]) -> None:
        if node in stack:
            cycles.append([*stack[stack.index(node) :], node])
            return
        if node in done:
            return
        for dep in sorted(graph[node]):
            walk(dep, [*stack, node])
        done.add(node)

    for module in sorted(graph):
        walk(module, [])
    assert cycles == []


def test_core_modules_import_first() -> None:
    """Every core module imports at its top: no import below a definition."""
    for path in sorted(CORE.rglob("*.py")):
        text = path.read_text()
        seen_definition = False
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                seen_definition = True
            elif isinstance(node, ast.Import | ast.ImportFrom) or _is_type_checking(node):
                assert not seen_definition, f"{path}:{node.lineno} imports after a definition"


def test_core_modules_stay_small() -> None:
    """No core module has more than 1,000 lines: a larger one is split by concern."""
    sizes = {str(p.relative_to(CORE)): p.read_text().count("\n") for p in CORE.rglob("*.py")}
    assert {name: n for name, n in sizes.items() if n > 1000} == {}
