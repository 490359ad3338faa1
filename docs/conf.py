"""Sphinx configuration for amqp-sansio.

Only Sphinx and its built-in extensions are used, and nothing is fetched from the network:
the docs build offline with ``sphinx-build -W -b html docs docs/_build/html``, and the
examples run with ``sphinx-build -W -b doctest docs docs/_build/doctest``.
"""

from __future__ import annotations

import doctest
import importlib
import re
import sys
import typing
from pathlib import Path
from typing import Any

# autodoc imports the package from this checkout, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Our own small extension: state diagrams drawn from the engine's transition tables.
sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

import amqp_sansio

project = "amqp-sansio"
author = "the amqp-sansio authors"
copyright = "the amqp-sansio authors"
release = amqp_sansio.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.doctest",
    "sphinx.ext.napoleon",
    "amqp_states",
]

root_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_title = f"amqp-sansio {release}"

# Links to the standard library's documentation would need intersphinx, which fetches an
# inventory over the network; such references stay plain text, so nitpicky mode stays off.
nitpicky = False

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
autodoc_default_options = {"members": True, "show-inheritance": True}
add_module_names = False

napoleon_google_docstring = True
napoleon_numpy_docstring = False

# Every page's examples start from the same names, and plain ">>>" blocks run as well as
# ".. doctest::" directives.
doctest_global_setup = """
import amqp_sansio
from amqp_sansio import *
from amqp_sansio import codec, errors, events, framing, sasl
"""

#: The public modules: those with a section in api.rst (tests/project/test_public_api.py).
PUBLIC_MODULES = tuple(
    dict.fromkeys(
        re.findall(
            r"^\.\. (?:module|currentmodule|automodule):: (\S+)",
            (Path(__file__).parent / "api.rst").read_text(),
            re.M,
        )
    )
)
doctest_default_flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
doctest_test_doctest_blocks = "default"


def _public_bases(app: Any, name: str, obj: Any, options: Any, bases: list[Any]) -> None:
    """Show a class's public bases: a private helper base (the bounded-int base, the composite
    base) is replaced by its own bases, up to ones that are public."""
    public = {name for module in PUBLIC_MODULES for name in importlib.import_module(module).__all__}

    def expand(base: Any) -> list[Any]:
        origin = typing.get_origin(base) or base  # (a generic base: ConnectionBase[Core])
        if origin is typing.Generic:
            return []
        module = getattr(origin, "__module__", "")
        if module.startswith("amqp_sansio") and origin.__name__ not in public:
            return [b for parent in origin.__bases__ for b in expand(parent)]
        return [base]

    expanded = [b for base in bases for b in expand(base)]
    bases[:] = list(dict.fromkeys(expanded)) or [object]


def _top_level_names(app: Any, doctree: Any) -> None:
    """Point a bare engine name (``Delivery`` in an annotation of :mod:`amqp_sansio.events`)
    at its one public home, the top level, rather than let Sphinx guess among the adapters'
    classes of the same name."""
    from sphinx.addnodes import pending_xref

    top = set(amqp_sansio.__all__)
    for node in doctree.findall(pending_xref):
        module = node.get("py:module") or ""
        target = node.get("reftarget", "")
        if node.get("refdomain") == "py" and target in top and module.startswith("amqp_sansio."):
            if module.startswith("amqp_sansio.adapters") or module.startswith("amqp_sansio.broker"):
                continue
            node["reftarget"] = f"amqp_sansio.{target}"


def setup(app: Any) -> None:
    app.connect("doctree-read", _top_level_names)
    app.connect("autodoc-process-bases", _public_bases)
