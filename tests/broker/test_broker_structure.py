"""The broker's rooms (issue 28, ``docs/architecture.rst``): a protocol-free core, one folder
per protocol, and ``_accept`` on top. Read from the source with :mod:`ast`, imports under
``if TYPE_CHECKING:`` included (a cycle through them is a cycle of the design):

- the core (``amqp_sansio/broker/_*.py`` but ``_accept``) imports no protocol folder, and
  nothing of the broker but ``__init__`` imports ``_accept``;
- ``amqp10/`` and ``amqp091/`` never import each other;
- no import cycle among the broker's modules;
- no ``091`` in a file name outside ``amqp091/``;
- reads of another object's private attributes (``x._name``, ``x`` not ``self``/``cls``
  nor a class) are at most 5 per 1,000 lines, in ``broker/`` and in each protocol folder.
"""

from __future__ import annotations

import ast
import pathlib

from support import ROOT

BROKER = ROOT / "amqp_sansio" / "broker"
PACKAGE = "amqp_sansio.broker"
PROTOCOLS = ("amqp10", "amqp091")


def _module(path: pathlib.Path) -> str:
    parts = list(path.relative_to(BROKER).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGE, *parts])


MODULES = {_module(p): p for p in sorted(BROKER.rglob("*.py"))}


def _imports(path: pathlib.Path) -> set[str]:
    """The broker modules ``path`` imports (relative imports resolved; every import,
    those made only for type checking too)."""
    me = _module(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                name = f"{target}.{alias.name}"
                found.add(name if name in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES and m != me}


GRAPH = {name: _imports(path) for name, path in MODULES.items()}


def _room(module: str) -> str:
    """``amqp10``, ``amqp091``, ``accept``, ``top`` (the package) or ``core``."""
    rest = module.removeprefix(PACKAGE).lstrip(".")
    head = rest.split(".")[0]
    if head in PROTOCOLS:
        return head
    if head == "_accept":
        return "accept"
    return "top" if not rest else "core"


def test_the_core_imports_no_protocol_folder_and_not_accept() -> None:
    wrong = {
        (module, target)
        for module, targets in GRAPH.items()
        if _room(module) == "core"
        for target in targets
        if _room(target) != "core"
    }
    assert wrong == set()


def test_the_protocol_folders_never_import_each_other() -> None:
    wrong = {
        (module, target)
        for module, targets in GRAPH.items()
        if _room(module) in PROTOCOLS
        for target in targets
        if (_room(target) in PROTOCOLS and _room(target) != _room(module))
        or _room(target) == "accept"
    }
    assert wrong == set()


def test_no_import_cycle_among_the_broker_modules() -> None:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(GRAPH):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_protocol_suffix_outside_its_folder() -> None:
    named = [
        str(path.relative_to(BROKER))
        for path in MODULES.values()
        if "091" in path.stem and "amqp091" not in path.parent.name
    ]
    assert named == []


def _private_reads(path: pathlib.Path) -> int:
    count = 0
    for node in ast.walk(ast.parse(path.read_text())):
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


def _per_thousand_lines(paths: list[pathlib.Path]) -> float:
    reads = sum(_private_reads(path) for path in paths)
    lines = sum(len(path.read_text().splitlines()) for path in paths)
    return 1000 * reads / lines


def test_few_reads_of_another_objects_private_attributes() -> None:
    folders = {"broker": list(MODULES.values())}
    for protocol in PROTOCOLS:
        folders[protocol] = sorted((BROKER / protocol).rglob("*.py"))
    rates = {name: round(_per_thousand_lines(paths), 1) for name, paths in folders.items()}
    assert all(rate <= 5 for rate in rates.values()), rates
