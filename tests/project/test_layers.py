"""The layer rules of ``docs/architecture.rst`` and ``CONTRIBUTING.md``, enforced on the
source: each module belongs to one layer, imports only from its own layer or the layers
below it (never from a sibling layer), no modules import each other in a cycle, and nothing
under ``amqp_sansio/`` (the I/O-free core, every subpackage) imports sockets, event loops,
threads, clocks or Spark.

Imports are read with :mod:`ast` (relative ones resolved), including those inside
functions and those under ``if TYPE_CHECKING:``: an import made only for the type checker
is an arrow all the same, so it may not run up a layer or close a cycle either."""

from __future__ import annotations

import ast
import pathlib
from collections.abc import Iterator

from support import PUBLIC_MODULES, ROOT

#: Where the installed packages' sources are: the core, and the adapters (installed as
#: ``amqp_sansio.adapters``, see pyproject.toml).
SOURCES = {"amqp_sansio": ROOT / "amqp_sansio", "amqp_sansio.adapters": ROOT / "adapters"}

#: The layers, lowest first: (name, the modules in it by prefix, the other layers it may
#: import). A module belongs to the layer with the longest matching prefix; it may import
#: its own layer and those listed, nothing else (docs/architecture.rst draws the diagram).
#: Each layer folder holds one subfolder per protocol where the protocols differ
#: (``amqp10/``, ``amqp091/``) and what they share beside them: tests/project/
#: test_placement.py checks that rule, this module the arrows between layers.
CORE = ("errors", "codec", "definitions", "framing", "security", "engine", "byte layers")
API = ("api", "public submodules")
LAYERS: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("errors", ("amqp_sansio.errors",), ()),
    ("codec", ("amqp_sansio.codec",), CORE[:1]),
    ("definitions", ("amqp_sansio.definitions",), CORE[:2]),
    ("framing", ("amqp_sansio.framing",), CORE[:3]),
    ("security", ("amqp_sansio.security",), CORE[:4]),
    ("engine", ("amqp_sansio.engine",), CORE[:5]),
    ("byte layers", (
        "amqp_sansio.security.layers", "amqp_sansio.security.stack", "amqp_sansio.security.tls",
        "amqp_sansio.security.websocket", "amqp_sansio.security.proxy",
    ), CORE[:6]),
    ("public submodules", ("amqp_sansio.sasl", "amqp_sansio.events"), ("security", "engine")),
    ("api", ("amqp_sansio", "amqp_sansio.amqp091", "amqp_sansio.amqp010"), (
        *CORE, "public submodules",
    )),
    ("client core", ("amqp_sansio.client", "amqp_sansio.amqp091.client"), (*CORE, *API)),
    ("broker core", ("amqp_sansio.broker",), (*CORE, *API)),
    ("I/O adapters", (
        "amqp_sansio.adapters", "amqp_sansio.adapters.sockets", "amqp_sansio.adapters.aio",
        "amqp_sansio.adapters.trio_adapter", "amqp_sansio.adapters._async",
        "amqp_sansio.adapters._blocking", "amqp_sansio.adapters.amqp091",
    ), (*API, "client core")),
    ("broker server", ("amqp_sansio.adapters.broker",), (
        *API, "client core", "broker core", "I/O adapters",
    )),
    ("spark", ("amqp_sansio.adapters.spark",), (
        *API, "client core", "broker core", "I/O adapters",
    )),
    ("command line", ("amqp_sansio.adapters.cli",), (
        *API, "client core", "broker core", "I/O adapters", "broker server", "spark",
    )),
]  # fmt: skip

FORBIDDEN_IN_CORE = {"socket", "selectors", "asyncio", "trio", "threading", "time", "pyspark"}


def modules() -> Iterator[tuple[str, pathlib.Path]]:
    """Every module of the installed packages: its dotted name and its file."""
    for package, folder in SOURCES.items():
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(folder).with_suffix("")
            parts = [p for p in relative.parts if p != "__init__"]
            if package == "amqp_sansio" and parts[:1] == ["adapters"]:
                continue  # pragma: no cover - the adapters are not inside amqp_sansio/
            yield ".".join([package, *parts]), path


MODULES = dict(modules())


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node``, those under ``if TYPE_CHECKING:`` too."""
    return ast.walk(node)


def imports(name: str, path: pathlib.Path) -> tuple[set[str], set[str]]:
    """What the module ``name`` imports: (modules of the packages, top-level names of the
    others)."""
    is_package = path.name == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    inside: set[str] = set()
    outside: set[str] = set()

    def add(target: str) -> None:
        if target in MODULES or target.startswith("amqp_sansio"):
            # The longest known module that the name starts with.
            while target not in MODULES and "." in target:
                target = target.rpartition(".")[0]
            inside.add(target)
        else:
            outside.add(target.split(".")[0])

    for node in _walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                add(submodule if submodule in MODULES else module)
    inside.discard(name)
    return inside, outside


GRAPH = {name: imports(name, path) for name, path in MODULES.items()}


def layer_of(module: str) -> str:
    best, length = "", -1
    for layer, prefixes, _ in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = layer, len(prefix)
    return best


def test_every_module_has_a_layer() -> None:
    assert len(MODULES) > 50
    assert {m: layer_of(m) for m in MODULES if not layer_of(m)} == {}


def test_each_layer_imports_only_what_it_may() -> None:
    """A layer that may use the api may use every public module (the api's submodules:
    ``from amqp_sansio import events``), whatever layer the module lives in."""
    allowed = {layer: {layer, *others} for layer, _, others in LAYERS}
    broken = sorted(
        f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})"
        for module, (inside, _) in GRAPH.items()
        for target in inside
        if not target.startswith(module + ".")  # a package's face re-exporting its own
        and layer_of(target) not in allowed[layer_of(module)]
        and not ("api" in allowed[layer_of(module)] and target in PUBLIC_MODULES)
    )
    assert broken == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _without_package_reexports(module: str, targets: set[str]) -> set[str]:
    """A package's ``__init__`` re-exports its own submodules: that is the package's face,
    not a dependency of the package on itself, so a submodule importing a sibling through
    the package is no cycle with the ``__init__``. Edges from a package to its own
    submodules are left out."""
    return {t for t in targets if not t.startswith(module + ".")}


#: The one cycle left, issue 28's open work: the AMQP 1.0 engine's objects name their owners
#: (``delivery.link``, ``link.session``, ``session.connection``) and its events carry them,
#: for the type checker only (the run-time imports already go one way). Nothing may join
#: it and no other cycle may appear; when it is broken, this list goes.


def test_no_import_cycles() -> None:
    graph = {m: _without_package_reexports(m, inside) for m, (inside, _) in GRAPH.items()}
    assert _cycles(graph) == []


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_core_does_no_io() -> None:
    core = {
        m: outside for m, (_, outside) in GRAPH.items() if not m.startswith("amqp_sansio.adapters")
    }
    assert any(m.startswith("amqp_sansio.broker.") for m in core)  # every subpackage is read
    assert {
        m: sorted(o & FORBIDDEN_IN_CORE) for m, o in core.items() if o & FORBIDDEN_IN_CORE
    } == {}


def test_the_import_reader(tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from typing import TYPE_CHECKING\n"
        "import socket\nfrom time import monotonic\nimport asyncio.tasks\n"
        "from amqp_sansio.codec.amqp10 import encode\n"
        "if TYPE_CHECKING:\n    import trio\n"
        "def f():\n    import threading\n"
    )
    inside, outside = imports("amqp_sansio.x", bad)
    assert outside & FORBIDDEN_IN_CORE == {"socket", "time", "asyncio", "threading", "trio"}
    assert inside == {"amqp_sansio.codec.amqp10"}


def test_no_module_over_a_thousand_lines() -> None:
    sizes = {m: len(path.read_text().splitlines()) for m, path in MODULES.items()}
    assert {m: n for m, n in sizes.items() if n > 1000} == {}


def test_imports_come_first() -> None:
    """Every module imports at its top (an import below a definition hides a cycle)."""
    late = []
    for module, path in MODULES.items():
        seen_definition = False
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                seen_definition = True
            elif seen_definition and (
                isinstance(node, ast.Import | ast.ImportFrom)
                or (isinstance(node, ast.If) and _type_checking(node))
            ):
                late.append(f"{module}:{node.lineno}")
    assert late == []


def test_a_layer_may_not_reach_up() -> None:
    assert layer_of("amqp_sansio.codec.amqp10.types") == "codec"
    assert layer_of("amqp_sansio.adapters.cli.bench.pipe") == "command line"
    allowed = {layer: others for layer, _, others in LAYERS}
    assert "engine" not in allowed["codec"] and "client core" not in allowed["broker core"]


def test_the_architecture_page_gives_these_rules() -> None:
    """docs/architecture.rst's table of layers is this module's ``LAYERS``, row by row."""
    text = (ROOT / "docs" / "architecture.rst").read_text()
    table = text[text.index(".. list-table::") :].split("\n\n")[1]
    rows = [row.split("\n     - ") for row in table.split("   * - ")[2:]]
    expected = [
        [
            name,
            ", ".join(f"``{p}``" for p in prefixes),
            ", ".join(others) if others else "(nothing of the project)",
        ]
        for name, prefixes, others in LAYERS
    ]
    assert [[" ".join(cell.split()) for cell in row] for row in rows] == expected
