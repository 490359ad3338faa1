"""Write ``amqp_sansio/definitions/amqp091/spec.py`` from the AMQP 0-9-1 definitions.

Two sources, both in ``../shared/spec/`` beside the repository (or the folder given with
``--spec-dir``):

* ``amqp-0-9-1.xml``, the working group's definition: constants, domains, classes,
  methods, fields and the ``basic`` content properties. Everything it defines is taken from
  it, names included (``reserved-1``, ``no-wait``).
* ``amqp-0-9-1-rabbitmq-extensions.json``, RabbitMQ's definition: the same plus its
  extensions. What the XML lacks is taken from it (the ``access`` and ``confirm`` classes,
  ``exchange.bind``/``unbind``, ``basic.nack``, ``connection.blocked``/``unblocked``/
  ``update-secret``), its field names brought to the XML's spelling (``ticket`` is
  ``reserved-1``, ``nowait`` is ``no-wait``). Default values come from it (the XML gives
  none), matched to the XML's fields by position; both files must agree on every field's
  type where both define a method (checked here).

Only facts are copied: names, numbers, types, defaults, which method answers which; no
text. Run ``python tests/definitions/amqp091/generate_spec.py`` after changing this script;
``tests/definitions/amqp091/test_amqp091_spec_tables.py`` fails when the module differs from what it
writes.
"""

from __future__ import annotations

import argparse
import json
import keyword
import pathlib
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[3]
SPEC_DIR = ROOT.parent / "shared" / "spec"
OUTPUT = ROOT / "amqp_sansio" / "definitions" / "amqp091" / "spec.py"
XML_NAME = "amqp-0-9-1.xml"
JSON_NAME = "amqp-0-9-1-rabbitmq-extensions.json"

#: RabbitMQ's names for fields the XML names otherwise.
_JSON_RENAMES = {"ticket": "reserved-1", "nowait": "no-wait"}
#: The Python type of each domain type.
_PY_TYPES = {
    "bit": "Bit",
    "octet": "Octet",
    "short": "Short",
    "long": "Long",
    "longlong": "LongLong",
    "shortstr": "ShortStr",
    "longstr": "LongStr",
    "timestamp": "Timestamp",
    "table": "FieldTable",
}
#: The zero value of a reserved field of each type (the XML marks them reserved).
_RESERVED_DEFAULTS = {"short": 0, "shortstr": "", "longstr": b"", "bit": False}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("-"))


def _ident(name: str) -> str:
    """A Python name for a spec name: hyphens as underscores, a keyword with ``_`` after."""
    ident = name.replace("-", "_")
    return ident + "_" if keyword.iskeyword(ident) else ident


class Spec:
    """The merged definitions: plain data the writer turns into Python."""

    def __init__(self, spec_dir: pathlib.Path) -> None:
        self.xml = ET.parse(spec_dir / XML_NAME).getroot()
        self.json: dict[str, Any] = json.loads((spec_dir / JSON_NAME).read_text())
        self.domains = {d.get("name"): d.get("type") for d in self.xml.iter("domain")}
        for name, type_ in self.json["domains"]:
            self.domains.setdefault(name, type_)
        self.constants = self._constants()
        self.classes = self._classes()

    def _constants(self) -> list[tuple[str, int, str | None]]:
        seen = {
            c.get("name"): (int(c.get("value", "0")), c.get("class"))
            for c in self.xml.iter("constant")
        }
        for c in self.json["constants"]:
            name = c["name"].lower()
            if name in seen:
                assert seen[name] == (c["value"], c.get("class")), name
            else:  # pragma: no cover - both files define the same constants today
                seen[name] = (c["value"], c.get("class"))
        return [(name, value, klass) for name, (value, klass) in seen.items()]

    def _type(self, field: dict[str, Any] | ET.Element) -> str:
        domain = field.get("type") or field.get("domain")
        assert domain is not None
        while self.domains.get(domain, domain) != domain:
            domain = self.domains[domain]
        return domain

    def _classes(self) -> list[dict[str, Any]]:
        json_classes = {c["name"]: c for c in self.json["classes"]}
        xml_classes = {c.get("name"): c for c in self.xml.iter("class")}
        out = []
        for jc in sorted(self.json["classes"], key=lambda c: c["id"]):
            xc = xml_classes.get(jc["name"])
            klass: dict[str, Any] = {
                "name": jc["name"],
                "id": jc["id"],
                "methods": [],
                "properties": [],
            }
            xml_methods = {m.get("name"): m for m in xc.iter("method")} if xc is not None else {}
            for jm in jc["methods"]:
                klass["methods"].append(self._method(jc, jm, xml_methods.get(jm["name"])))
            if xc is not None:
                props = [f for f in xc.findall("field")]
                if props:
                    assert len(props) == len(jc["properties"])
                    for xf, jf in zip(props, jc["properties"], strict=True):
                        assert self._type(xf) == self._type(jf), (jc["name"], jf["name"])
                        klass["properties"].append((_ident(xf.get("name", "")), self._type(xf)))
            out.append(klass)
        assert set(xml_classes) <= set(json_classes)
        return out

    def _method(
        self, jc: dict[str, Any], jm: dict[str, Any], xm: ET.Element | None
    ) -> dict[str, Any]:
        fields = []
        json_args = jm["arguments"]
        if xm is not None:
            xml_fields = xm.findall("field")
            assert len(xml_fields) == len(json_args), (jc["name"], jm["name"])
            assert int(xm.get("index", "-1")) == jm["id"]
            names = [xf.get("name", "") for xf in xml_fields]
            reserved = [xf.get("reserved") == "1" for xf in xml_fields]
            types = [self._type(xf) for xf in xml_fields]
            synchronous = xm.get("synchronous") == "1"
            content = xm.get("content") == "1"
            responses = [r.get("name", "") for r in xm.findall("response")]
            chassis = sorted(c.get("name", "") for c in xm.findall("chassis"))
        else:
            names = [_JSON_RENAMES.get(a["name"], a["name"]) for a in json_args]
            reserved = [a["name"] == "ticket" for a in json_args]
            types = [self._type(a) for a in json_args]
            synchronous = bool(jm.get("synchronous"))
            content = bool(jm.get("content"))
            ok = jm["name"] + "-ok"
            is_ok = any(m["name"] == ok for m in jc["methods"])
            responses = [ok] if synchronous and is_ok else []
            synchronous = synchronous or jm["name"].endswith("-ok")
            chassis = []
        for name, type_, is_reserved, arg in zip(names, types, reserved, json_args, strict=True):
            assert self._type(arg) == type_, (jc["name"], jm["name"], name)
            if "default-value" in arg:
                default = arg["default-value"]
            elif is_reserved:
                default = _RESERVED_DEFAULTS[type_]
            else:
                default = None
            if type_ == "longstr" and isinstance(default, str):
                default = default.encode()
            fields.append((_ident(name), type_, default))
        return {
            "name": jm["name"],
            "id": jm["id"],
            "fields": fields,
            "synchronous": synchronous,
            "content": content,
            "responses": responses,
            "chassis": chassis,
            "extension": xm is None,
        }


def _default(type_: str, value: Any) -> str:
    if type_ == "table":
        assert value == {}
        return "attrs.field(factory=dict)"
    if type_ == "bit":
        return repr(bool(value))
    return repr(value)


def render(spec: Spec) -> str:
    """The module's text, formatted as ``ruff format`` writes it."""
    text = _render(spec)
    return subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--stdin-filename", str(OUTPUT), "-"],
        input=text,
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout


def _render(spec: Spec) -> str:
    out: list[str] = [
        '"""AMQP 0-9-1 constants, reply codes, classes, methods and the ``basic`` content',
        "properties, as data (0-9-1 spec, the XML definition; RabbitMQ's extensions).",
        "",
        "Generated by ``tests/definitions/amqp091/generate_spec.py`` from ``amqp-0-9-1.xml`` and",
        "``amqp-0-9-1-rabbitmq-extensions.json``: do not edit; change the script and run it.",
        "Field names are the XML's with hyphens as underscores; methods the XML lacks are",
        "RabbitMQ's. Each method class is registered (class id, method id) by",
        ":func:`~amqp_sansio.definitions.amqp091.methods.method`, which compiles its encoder and"
        " decoder.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import enum",
        "",
        "import attrs",
        "",
        "from ...codec.amqp091 import (",
        "    Bit,",
        "    FieldTable,",
        "    Long,",
        "    LongLong,",
        "    LongStr,",
        "    Octet,",
        "    Short,",
        "    ShortStr,",
        "    Timestamp,",
        ")",
        "from .methods import Method, Properties, method, properties",
        "",
        "__all__ = [",
        '    "FRAME_METHOD",',
        '    "FRAME_HEADER",',
        '    "FRAME_BODY",',
        '    "FRAME_HEARTBEAT",',
        '    "FRAME_MIN_SIZE",',
        '    "FRAME_END",',
        '    "ReplyCode",',
        '    "SOFT_ERRORS",',
        '    "HARD_ERRORS",',
        '    "CLASS_IDS",',
    ]
    names = [_camel(c["name"]) + _camel(m["name"]) for c in spec.classes for m in c["methods"]]
    names += [_camel(c["name"]) + "Properties" for c in spec.classes if c["properties"]]
    out += [f'    "{n}",' for n in names]
    out += ["]", ""]
    codes = []
    for name, value, klass in spec.constants:
        if klass is None and name != "reply-success":
            out.append(f"{_ident(name).upper()} = {value}")
        else:
            codes.append((name, value, klass))
    out += [
        "",
        "",
        "class ReplyCode(enum.IntEnum):",
        '    """The reply codes (0-9-1 spec, the ``constant`` elements; ``reply-success`` and',
        '    the soft and hard errors)."""',
        "",
    ]
    out += [f"    {_ident(n).upper()} = {v}" for n, v, _ in codes]
    soft = ", ".join(f"ReplyCode.{_ident(n).upper()}" for n, _, k in codes if k == "soft-error")
    hard = ", ".join(f"ReplyCode.{_ident(n).upper()}" for n, _, k in codes if k == "hard-error")
    out += [
        "",
        "",
        "#: Reply codes of channel exceptions: the channel closes, the connection stays.",
        f"SOFT_ERRORS = frozenset({{{soft}}})",
        "#: Reply codes of connection exceptions: the whole connection closes.",
        f"HARD_ERRORS = frozenset({{{hard}}})",
        "#: Class ids by class name.",
        "CLASS_IDS = {" + ", ".join(f'"{c["name"]}": {c["id"]}' for c in spec.classes) + "}",
    ]
    for c in spec.classes:
        for m in c["methods"]:
            out += _render_method(c, m)
        if c["properties"]:
            out += _render_properties(c)
    return "\n".join(out) + "\n"


def _render_method(c: dict[str, Any], m: dict[str, Any]) -> list[str]:
    full = f"{c['name']}.{m['name']}"
    traits = []
    if m["synchronous"]:
        traits.append("synchronous")
    if m["content"]:
        traits.append("carries content")
    if m["responses"]:
        traits.append("answered by " + ", ".join(f"``{c['name']}.{r}``" for r in m["responses"]))
    source = "RabbitMQ's extension" if m["extension"] else "0-9-1 spec"
    doc = f"``{full}`` (class {c['id']}, method {m['id']}; {source})"
    doc += ": " + "; ".join(traits) + "." if traits else "."
    responses = ", ".join(f'"{c["name"]}.{r}"' for r in m["responses"])
    responses = f"({responses},)" if m["responses"] else "()"
    lines = [
        "",
        "",
        f'@method({c["id"]}, {m["id"]}, "{full}", synchronous={m["synchronous"]}, '
        f"content={m['content']}, responses={responses})",
        "@attrs.define(kw_only=True, slots=True)",
        f"class {_camel(c['name'])}{_camel(m['name'])}(Method):",
    ]
    lines += _wrap_doc(doc)
    if m["fields"]:
        lines.append("")
    for name, type_, default in m["fields"]:
        annotation = _PY_TYPES[type_]
        if default is None:
            lines.append(f"    {name}: {annotation}")
        else:
            lines.append(f"    {name}: {annotation} = {_default(type_, default)}")
    return lines


def _render_properties(c: dict[str, Any]) -> list[str]:
    doc = (
        f"The ``{c['name']}`` content properties (class {c['id']}; 0-9-1 spec, the class's "
        "fields), sent in the content header with a property flag each; ``None`` is absent."
    )
    lines = [
        "",
        "",
        f"@properties({c['id']})",
        "@attrs.define(kw_only=True, slots=True)",
        f"class {_camel(c['name'])}Properties(Properties):",
    ]
    lines += _wrap_doc(doc)
    lines.append("")
    for name, type_ in c["properties"]:
        lines.append(f"    {name}: {_PY_TYPES[type_]} | None = None")
    return lines


def _wrap_doc(text: str) -> list[str]:
    words = text.split()
    lines: list[str] = []
    line = '    """'
    for word in words:
        if len(line) + 1 + len(word) > 96 and line.strip() != '"""':
            lines.append(line)
            line = "    " + word
        else:
            line = line + word if line.endswith('"""') else line + " " + word
    lines.append(line + '"""')
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec-dir", type=pathlib.Path, default=SPEC_DIR)
    parser.add_argument("--output", type=pathlib.Path, default=OUTPUT)
    args = parser.parse_args(argv)
    args.output.write_text(render(Spec(args.spec_dir)))


if __name__ == "__main__":
    main()
