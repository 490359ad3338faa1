"""The public face: a narrow top level, and every other public name in one public submodule.

The top level of :mod:`amqp_sansio` is pinned to what an engine user touches; every public
module's ``__all__`` is importable, and docs/api.rst has a section per public module that
documents each of its names (with a directive, or, for a name the module re-exports, a
reference to where it is documented).
"""

from __future__ import annotations

import importlib
import re

from support import PUBLIC_MODULES, ROOT

import amqp_sansio

#: The top level, by what it is for.
TOP_LEVEL = {
    # engine objects
    "Connection",
    "Session",
    "Link",
    "Sender",
    "Receiver",
    "Delivery",
    "ConnectionState",
    "SessionState",
    "LinkState",
    "SenderSettleMode",
    "ReceiverSettleMode",
    "Transaction",
    "Controller",
    "TLSLayer",
    # messages
    "Message",
    "Header",
    "Properties",
    "Data",
    "AmqpValue",
    "AmqpSequence",
    # outcomes and termini
    "Accepted",
    "Rejected",
    "Released",
    "Modified",
    "Source",
    "Target",
    # errors
    "AMQPError",
    "Error",
    "LocalProtocolError",
    "RemoteProtocolError",
    "DecodeError",
    "EncodeError",
    # values
    "Symbol",
    "Described",
    "encode",
    "decode",
    # events: the base (the events themselves are in amqp_sansio.events)
    "Event",
    "__version__",
}

API = ROOT / "docs" / "api.rst"
_DIRECTIVE = re.compile(r"^\.\. (?:auto(?!module)\w+|data|function|class|exception):: (\S+)", re.M)
_MODULE = re.compile(r"^\.\. (?:module|currentmodule|automodule):: (\S+)", re.M)


def _sections() -> dict[str, str]:
    """docs/api.rst cut at each ``module``/``currentmodule``/``automodule`` directive."""
    text = API.read_text()
    marks = list(_MODULE.finditer(text))
    sections: dict[str, str] = {}
    for mark, following in zip(marks, [*marks[1:], None], strict=True):
        end = following.start() if following else len(text)
        sections[mark.group(1)] = sections.get(mark.group(1), "") + text[mark.start() : end]
    return sections


def test_top_level_is_pinned() -> None:
    assert set(amqp_sansio.__all__) == TOP_LEVEL
    assert len(amqp_sansio.__all__) == len(TOP_LEVEL)
    assert amqp_sansio.__version__


def test_every_concrete_event_is_in_events() -> None:
    from amqp_sansio import events

    concrete = [n for n in events.__all__ if n != "Event"]
    assert concrete
    assert not set(concrete) & set(amqp_sansio.__all__)
    for name in concrete:
        assert issubclass(getattr(events, name), amqp_sansio.Event)


def test_every_public_name_is_importable() -> None:
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        assert len(module.__all__) == len(set(module.__all__)), module_name
        for name in module.__all__:
            assert hasattr(module, name), f"{module_name}.{name}"


def test_one_documented_place_per_name() -> None:
    """Each public module has a section in docs/api.rst; each name of its ``__all__`` is
    documented there by a directive, or is a re-export that the section refers to and that
    a directive documents in another section (the same object)."""
    sections = _sections()
    assert set(sections) == set(PUBLIC_MODULES), "docs/api.rst: one section per public module"
    homes: dict[int, str] = {}
    directives: dict[str, set[str]] = {}
    for module_name, text in sections.items():
        module = importlib.import_module(module_name)
        documented = {name.rsplit(".", 1)[-1] for name in _DIRECTIVE.findall(text)}
        if re.search(r"^\.\. automodule:: .*\n(   .*\n)*   :members:", text, re.M):
            documented |= set(module.__all__)
        directives[module_name] = documented
        for name in documented & set(module.__all__):
            obj = getattr(module, name)
            assert isinstance(obj, (int, str, bytes)) or id(obj) not in homes, (
                f"{module_name}.{name} is documented twice (also in {homes.get(id(obj))})"
            )
            homes[id(obj)] = module_name
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        unknown = directives[module_name] - set(module.__all__)
        assert not unknown, f"docs/api.rst documents names {module_name} does not export: {unknown}"
        for name in set(module.__all__) - directives[module_name]:
            obj = getattr(module, name)
            home = homes.get(id(obj))
            assert home is not None, f"docs/api.rst does not document {module_name}.{name}"
            assert f"{home}.{name}`" in sections[module_name], (
                f"docs/api.rst: the {module_name} section does not refer to {home}.{name}"
            )
