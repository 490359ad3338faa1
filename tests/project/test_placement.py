"""The placement rule of ``docs/architecture.rst``: layer first; at each layer where the
protocols differ, each protocol has its own subfolder (``amqp10/``, ``amqp091/``, and
``amqp010/`` when AMQP 0-10 comes), and what they share sits beside those subfolders.

- a folder named for a protocol is named for one of :data:`PROTOCOLS`;
- no module outside a protocol's folder carries that protocol's suffix;
- a shared module imports no protocol folder;
- a protocol folder never imports another protocol's folder.

Imports are those ``test_layers`` reads (``if TYPE_CHECKING:`` ones too). The faces (the
public modules users import, documented in docs/api.rst) re-export from the protocol folders
and are exempt, as is the one module that reads a connection's first octets and builds the
connection of the protocol they ask for (:data:`SNIFFERS`). A layer above the api uses a
protocol's public modules as any user does: those imports are not crossings."""

from __future__ import annotations

import pathlib
import re

from support import PUBLIC_MODULES, ROOT
from test_layers import GRAPH, LAYERS, MODULES, layer_of

#: The protocol folders' names: AMQP 1.0, AMQP 0-9-1, and AMQP 0-10 (to come).
PROTOCOLS = ("amqp10", "amqp091", "amqp010")

#: The faces: modules of the api layer (and the adapters users import) that re-export a
#: protocol's names under the path users know. ``amqp_sansio`` is AMQP 1.0's face (the
#: library's first protocol), ``amqp_sansio.amqp091`` 0-9-1's (a protocol folder itself).
FACES = (
    "amqp_sansio",
    "amqp_sansio.events",
    "amqp_sansio.sasl",
    "amqp_sansio.adapters",
    "amqp_sansio.adapters.sockets",
    "amqp_sansio.adapters.aio",
    "amqp_sansio.adapters.trio_adapter",
)

#: The one module of a package that picks the protocol: the broker's reads the first octets.
SNIFFERS = (
    "amqp_sansio.broker._accept",
    "amqp_sansio.broker._protocols",
    # the client's: connect(url, protocol=...) to that protocol's connect recipe
    "amqp_sansio.client.protocols",
    # the command line's: send and receive by --protocol, to that protocol's functions
    "amqp_sansio.adapters.cli.protocols",
    # the Spark adapter's: the readers' and writers' calls by option protocol
    "amqp_sansio.adapters.spark.protocols",
)

#: The layers that may import the api: they use the public modules as users do.
ABOVE_API = {name for name, _, others in LAYERS if "api" in others}

_PROTOCOL_NAME = re.compile(r"^amqp\d+$")
_SUFFIX = re.compile(r"(091|010)")


def protocol_of(module: str) -> str | None:
    """The protocol folder a module is in (its innermost), or None for a shared module."""
    found = [part for part in module.split(".") if part in PROTOCOLS]
    return found[-1] if found else None


def _folders() -> list[pathlib.Path]:
    roots = [ROOT / "amqp_sansio", ROOT / "adapters", ROOT / "tests"]
    return [
        p
        for root in roots
        for p in [root, *root.rglob("*")]
        if p.is_dir()
        and "node_modules" not in p.parts
        and "__pycache__" not in p.parts
        and "peers" not in p.parts
        and not p.name.startswith(".")
    ]


def test_protocol_folders_are_named_for_a_protocol() -> None:
    odd = [
        str(p.relative_to(ROOT))
        for p in _folders()
        if _PROTOCOL_NAME.match(p.name) and p.name not in PROTOCOLS
    ]
    assert odd == []


def suffixed(paths: list[pathlib.Path]) -> list[str]:
    """Files whose name carries a protocol suffix their folder path does not (the measure of
    /work/shared/tools/house_measures.py)."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in paths
        for tag in set(_SUFFIX.findall(p.stem))
        if tag not in str(p.parent.relative_to(ROOT))
    )


def test_no_protocol_suffix_outside_its_folder() -> None:
    files = [p for folder in _folders() for p in folder.glob("*.py")]
    assert suffixed(files) == []


def test_the_suffix_check_finds_a_suffix() -> None:
    paths = [ROOT / "amqp_sansio" / "broker" / "_streams091.py",
             ROOT / "amqp_sansio" / "broker" / "amqp091" / "streams091.py"]  # fmt: skip
    assert suffixed(paths) == ["amqp_sansio/broker/_streams091.py"]


def _exempt(module: str) -> bool:
    return module in FACES or module in SNIFFERS or module.startswith("amqp_sansio.amqp091")


def crossings() -> tuple[list[str], list[str]]:
    """(a shared module importing a protocol folder, a protocol folder importing another)."""
    shared, across = [], []
    for module, (inside, _) in sorted(GRAPH.items()):
        if _exempt(module):
            continue
        mine = protocol_of(module)
        for target in sorted(inside):
            theirs = protocol_of(target)
            if theirs is None or target.startswith(module + "."):
                continue  # a shared target, or a package's own subpackage
            if target in PUBLIC_MODULES and layer_of(module) in ABOVE_API:
                continue  # a user of the faces
            if mine is None:
                shared.append(f"{module} imports {target}")
            elif theirs != mine:
                across.append(f"{module} ({mine}) imports {target} ({theirs})")
    return shared, across


def test_shared_modules_import_no_protocol_folder() -> None:
    assert crossings()[0] == []


def test_protocol_folders_never_import_each_other() -> None:
    assert crossings()[1] == []


def test_protocols_are_found() -> None:
    assert protocol_of("amqp_sansio.engine.amqp091.connection") == "amqp091"
    assert protocol_of("amqp_sansio.client.ops") is None
    assert any(protocol_of(m) == "amqp10" for m in MODULES)
    assert any(protocol_of(m) == "amqp091" for m in MODULES)
