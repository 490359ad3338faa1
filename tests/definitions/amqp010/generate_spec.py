"""Write ``amqp_sansio/definitions/amqp010/spec.py`` (domains, structs, controls) and
``commands.py`` (commands) from the AMQP 0-10 definition.

The source is Qpid's machine-readable AMQP 0-10 definition with its errata,
``amqp-0-10-qpid-errata-stripped.xml``, read as data from the qpid-python peer
(``$AMQP_SANSIO_PEERS_DIR/qpid-python`` or ``../shared/peers/qpid-python``, or the file given
with ``--xml``). Only facts are copied: names, codes, types, ``pack`` and ``size``; no text.
Every class is taken, ``file`` and ``stream`` included. Run
``python tests/definitions/amqp010/generate_spec.py`` after changing this script;
``tests/definitions/amqp010/test_amqp010_spec_tables.py`` fails when the module differs.
"""

from __future__ import annotations

import argparse
import keyword
import os
import pathlib
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[3]
OUTPUT = ROOT / "amqp_sansio" / "definitions" / "amqp010" / "spec.py"
XML_PATH = pathlib.Path("qpid-python/qpid/specs/amqp-0-10-qpid-errata-stripped.xml")
NS = "{http://www.amqp.org/schema/amqp.xsd}"

#: The Python annotation of each ``<type>`` a field may have.
_PY_TYPES = {
    "bit": "bool",
    "uint8": "int",
    "uint16": "int",
    "uint32": "int",
    "uint64": "int",
    "sequence-no": "int",
    "datetime": "int",
    "str8": "str",
    "str16": "str",
    "vbin8": "bytes",
    "vbin16": "bytes",
    "vbin32": "bytes",
    "uuid": "uuid.UUID",
    "map": "dict[str, Any]",
    "array": "Array | Sequence[Any]",
    "sequence-set": "tuple[tuple[int, int], ...]",
    "byte-ranges": "tuple[tuple[int, int], ...]",
    "struct32": "Struct | Struct32",
}


def default_xml() -> pathlib.Path:
    """Where the qpid-python peer's definition is expected."""
    peers = os.environ.get("AMQP_SANSIO_PEERS_DIR")
    return (pathlib.Path(peers) if peers else ROOT.parent / "shared" / "peers") / XML_PATH


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def _ident(name: str) -> str:
    ident = name.replace("-", "_")
    return ident + "_" if keyword.iskeyword(ident) else ident


def _tag(element: ET.Element) -> str:
    return element.tag.removeprefix(NS)


class Spec:
    """The definition as plain data for the writer."""

    def __init__(self, xml: pathlib.Path) -> None:
        self.root = ET.parse(xml).getroot()
        self.types = {t.get("name") for t in self.root.iter(NS + "type")}
        self.domains: dict[str, str] = {}
        self.enums: list[tuple[str, str, list[tuple[str, int]]]] = []
        self.structs: list[tuple[str, ET.Element, ET.Element]] = []
        self.struct_classes: dict[str, str] = {}
        for domain in self.root.findall(NS + "domain"):
            self._domain(domain, None)
        for cls in self.root.findall(NS + "class"):
            for domain in cls.findall(NS + "domain"):
                self._domain(domain, cls)
            for struct in cls.iter(NS + "struct"):
                self.structs.append((cls.get("name", ""), struct, cls))
                self.struct_classes[struct.get("name", "")] = _camel(struct.get("name", ""))

    def _domain(self, domain: ET.Element, cls: ET.Element | None) -> None:
        name = domain.get("name", "")
        qualified = f"{cls.get('name')}.{name}" if cls is not None else name
        self.domains[qualified] = domain.get("type", "")
        enum = domain.find(NS + "enum")
        if enum is not None:
            prefix = _camel(cls.get("name", "")) if cls is not None else ""
            choices = [
                (_ident(c.get("name", "")).upper(), int(c.get("value", ""), 0))
                for c in enum.findall(NS + "choice")
            ]
            self.enums.append((prefix + _camel(name), qualified, choices))

    def resolve(self, type_name: str, cls_name: str) -> str:
        """A field's type: a ``<type>`` name or a struct name, domains followed."""
        for candidate in (f"{cls_name}.{type_name}", type_name):
            if candidate in self.domains:
                return self.resolve(self.domains[candidate], cls_name)
        if type_name in self.types or type_name in self.struct_classes:
            return type_name
        raise ValueError(f"cannot resolve {type_name} in {cls_name}")


def _fields(spec: Spec, element: ET.Element, cls_name: str) -> list[tuple[str, str]]:
    return [
        (_ident(f.get("name", "")), spec.resolve(f.get("type", ""), cls_name))
        for f in element.findall(NS + "field")
    ]


def _class_body(spec: Spec, fields: list[tuple[str, str]], head: list[str]) -> list[str]:
    lines = list(head)
    lines.append(f"    FIELDS = {tuple(fields)!r}")
    for name, kind in fields:
        if kind == "bit":
            lines.append(f"    {name}: bool = False")
        else:
            annotation = _PY_TYPES.get(kind) or spec.struct_classes[kind]
            lines.append(f"    {name}: {annotation} | None = None")
    return lines


#: The modules written, and what each holds (the definition is too long for one module).
MODULES = ("spec.py", "commands.py")


def render(spec: Spec, xml_name: str) -> dict[str, str]:
    """The text of each module, formatted as ``ruff format`` writes it."""
    return {
        name: subprocess.run(
            [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(OUTPUT), "-"],
            input=text,
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        ).stdout
        for name, text in _render(spec, xml_name).items()
    }


def _header(what: str, xml_name: str, imports: list[str]) -> list[str]:
    return [
        f'"""AMQP 0-10 {what}, as data (0-10 spec 3.3, 4.5 and the class',
        "sections; the XML definition with Qpid's errata).",
        "",
        "Generated by ``tests/definitions/amqp010/generate_spec.py`` from",
        f"``{xml_name}``: do not edit; change the script and run it.",
        "Field names are the XML's with hyphens as underscores; every field is optional",
        "(``None``, its packing flag clear) but ``bit`` fields, which are ``False``. Each class",
        "registers itself with :func:`~amqp_sansio.definitions.amqp010.compounds.compound`,",
        "which compiles its codec.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        *imports,
        "",
        "__all__ = [@ALL@]",
        "",
    ]


def _finish(lines: list[str], names: list[str]) -> str:
    """The module's text: ``__all__`` filled, imports the classes do not use left out."""
    exported = "".join(f'    "{name}",\n' for name in sorted(names))
    text = "\n".join(lines).replace("[@ALL@]", f"[\n{exported}]")
    head, body = text.split("__all__", 1)
    kept = []
    for line in head.splitlines():
        match = re.fullmatch(r"(from \S+ import |import )(.+)", line)
        if match and match.group(2) != "annotations":
            used = [n for n in match.group(2).split(", ") if re.search(rf"\b{n}\b", body)]
            if not used:
                continue
            line = match.group(1) + ", ".join(used)
        kept.append(line)
    return "\n".join(kept) + "\n__all__" + body


def _render(spec: Spec, xml_name: str) -> dict[str, str]:
    imports = [
        "import enum",
        "import uuid",
        "from collections.abc import Sequence",
        "from typing import Any, ClassVar",
        "",
        "import attrs",
        "",
        "from ...codec.amqp010 import Array, Struct32",
        "from .compounds import Command, Control, Fields, Struct, compound",
    ]
    out = _header("domains, structs and controls", xml_name, imports)
    names: list[str] = []
    for enum_name, qualified, choices in spec.enums:
        names.append(enum_name)
        out += ["", f"class {enum_name}(enum.IntEnum):"]
        out += [f'    """The ``{qualified}`` domain."""', ""]
        out += [f"    {choice} = {value}" for choice, value in choices]
        out.append("")
    for cls_name, struct, cls in spec.structs:
        name = struct.get("name", "")
        class_name = spec.struct_classes[name]
        names.append(class_name)
        code = struct.get("code")
        head = [
            "",
            "@compound",
            "@attrs.frozen",
            f"class {class_name}(Struct):",
            f'    """The ``{cls_name}.{name}`` struct."""',
            "",
            f"    CLASS_CODE, CODE, NAME = {int(cls.get('code', ''), 0)}, "
            f'{int(code, 0) if code else None}, "{name}"',
            f"    PACK, SIZE = {int(struct.get('pack', '0'))}, {int(struct.get('size', '0'))}",
        ]
        out += _class_body(spec, _fields(spec, struct, cls_name), head)
        out.append("")
    struct_names = list(spec.struct_classes.values())
    command_imports = [
        "import uuid",
        "from collections.abc import Sequence",
        "from typing import Any, ClassVar",
        "",
        "import attrs",
        "",
        "from ...codec.amqp010 import Array, Struct32",
        "from .compounds import Command, Fields, Struct, compound",
        f"from .spec import {', '.join(sorted(struct_names))}",
    ]
    commands = _header("commands", xml_name, command_imports)
    command_names: list[str] = []
    for cls in spec.root.findall(NS + "class"):
        cls_name = cls.get("name", "")
        for element in cls:
            kind = _tag(element)
            if kind not in ("control", "command"):
                continue
            name = element.get("name", "")
            class_name = _camel(cls_name) + _camel(name)
            head = [
                "",
                "@compound",
                "@attrs.frozen",
                f"class {class_name}({kind.capitalize()}):",
                f'    """``{cls_name}.{name}``."""',
                "",
                f"    CLASS_CODE, CODE = {int(cls.get('code', ''), 0)}, "
                f"{int(element.get('code', ''), 0)}",
                f'    NAME = "{cls_name}.{name}"',
            ]
            result = element.find(NS + "result")
            if result is not None:
                struct = result.find(NS + "struct")
                target = struct.get("name") if struct is not None else result.get("type")
                head.append(f'    RESULT = "{target}"')
            body = [*_class_body(spec, _fields(spec, element, cls_name), head), ""]
            if kind == "control":
                names.append(class_name)
                out += body
            else:
                command_names.append(class_name)
                commands += body
    return {"spec.py": _finish(out, names), "commands.py": _finish(commands, command_names)}


def generate(xml: pathlib.Path, output: pathlib.Path) -> None:
    """Write the modules into the folder ``output``."""
    for name, text in render(Spec(xml), xml.name).items():
        (output / name).write_text(text)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--xml", type=pathlib.Path, default=default_xml())
    parser.add_argument("--output", type=pathlib.Path, default=OUTPUT.parent)
    args = parser.parse_args(argv)
    generate(args.xml, args.output)


if __name__ == "__main__":
    main()
