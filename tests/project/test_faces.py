"""The public face of ``amqp_sansio.amqp091``, organised as pamqp is: a few submodules
(every method grouped by its class in ``commands``, by flat name in ``spec``), at most 40
top-level names, none of them a name the 1.0 API uses for something else; and its client
core's channels do not import the core (no cycle, ``TYPE_CHECKING`` imports counted)."""

from __future__ import annotations

import ast
import importlib

from support import PUBLIC_MODULES, ROOT

import amqp_sansio
import amqp_sansio.engine.amqp091
from amqp_sansio import amqp091
from amqp_sansio.amqp091 import commands
from amqp_sansio.definitions.amqp091 import methods, spec


def test_at_most_40_top_level_names() -> None:
    assert len(amqp091.__all__) <= 40, len(amqp091.__all__)
    assert len(set(amqp091.__all__)) == len(amqp091.__all__)
    for name in amqp091.__all__:
        assert hasattr(amqp091, name), name


def test_no_name_means_another_thing_than_in_the_1_0_api() -> None:
    """No top-level name is a name of ``amqp_sansio`` or of one of its 1.0 public modules
    (``Connection``, ``Properties``, ``Frame``, ``FrameParser``, ``DecodeError``, ...)
    unless it is the same object."""
    taken: dict[str, object] = {
        name: getattr(amqp_sansio, name) for name in dir(amqp_sansio) if not name.startswith("_")
    }
    for module_name in PUBLIC_MODULES:
        if module_name.startswith("amqp_sansio.amqp091"):
            continue
        module = importlib.import_module(module_name)
        for name in module.__all__:
            taken.setdefault(name, getattr(module, name))
    clashes = [
        name
        for name in amqp091.__all__
        if name in taken and taken[name] is not getattr(amqp091, name)
    ]
    assert clashes == []


def test_the_submodules_hold_the_rest() -> None:
    for name in ("codec", "commands", "engine", "errors", "framing", "methods", "spec"):
        assert importlib.import_module(f"amqp_sansio.amqp091.{name}") is getattr(amqp091, name)
    assert amqp_sansio.engine.amqp091.Connection is not amqp_sansio.Connection
    assert spec.BasicPublish.NAME == "basic.publish"


def test_every_method_is_in_commands_once_under_its_class() -> None:
    found: dict[type, str] = {}
    for class_name in commands.__all__:
        group = getattr(commands, class_name)
        for attr, value in vars(group).items():
            if isinstance(value, type) and issubclass(value, methods.Method):
                assert value not in found, (value, found.get(value))
                found[value] = f"{class_name}.{attr}"
    assert set(found) == set(methods.METHODS.values())
    for cls, where in found.items():
        amqp_class, amqp_method = cls.NAME.split(".")
        group, attr = where.split(".")
        assert group.lower() == amqp_class
        assert attr == "".join(part.capitalize() for part in amqp_method.split("-"))
    assert commands.Basic.Publish is spec.BasicPublish
    assert commands.Basic.Properties is amqp091.BasicProperties


def test_channels_do_not_import_the_client_core() -> None:
    """``amqp091.client.channels`` and ``.core`` imported each other (the channels under
    ``if TYPE_CHECKING:``); the channels now name what they ask of the core in a Protocol
    of their own (``ChannelOwner``)."""
    tree = ast.parse((ROOT / "amqp_sansio/client/amqp091/channels.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            imported.add("." * node.level + (node.module or ""))
    assert not {".core", "amqp_sansio.client.amqp091.core"} & imported, imported
