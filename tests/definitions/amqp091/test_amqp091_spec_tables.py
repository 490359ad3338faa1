"""``amqp_sansio/definitions/amqp091/spec.py`` is what
``tests/definitions/amqp091/generate_spec.py`` writes from the spec files: this fails when either
changed without the other (run the script), or when the tables lose a class, a method or an argument
of the XML or of RabbitMQ's JSON.

The spec files are in ``../shared/spec/`` beside the repository (the issue tracker's
references); ``AMQP_SANSIO_SPEC_DIR`` names another folder."""

from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import sys
import xml.etree.ElementTree as ET
from types import ModuleType

import pytest
from support import ROOT

from amqp_sansio import amqp091

SPEC_DIR = pathlib.Path(os.environ.get("AMQP_SANSIO_SPEC_DIR", ROOT.parent / "shared" / "spec"))


def _generator() -> ModuleType:
    name = "amqp_sansio_generate_amqp091"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, ROOT / "tests" / "definitions" / "amqp091" / "generate_spec.py"
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture(scope="module")
def spec_dir() -> pathlib.Path:
    if not (SPEC_DIR / "amqp-0-9-1.xml").is_file():
        # The spec files are the project's references beside the checkout, not part of it:
        # a checkout without them cannot regenerate the tables (the pamqp cross-checks still
        # check every method), and says so.
        pytest.skip(f"the AMQP 0-9-1 spec files are not in {SPEC_DIR} (set AMQP_SANSIO_SPEC_DIR)")
    return SPEC_DIR


def test_the_module_is_what_the_generator_writes(spec_dir: pathlib.Path) -> None:
    generator = _generator()
    expected = generator.render(generator.Spec(spec_dir))
    assert (ROOT / "amqp_sansio" / "definitions" / "amqp091" / "spec.py").read_text() == expected, (
        "amqp_sansio/definitions/amqp091/spec.py is stale: run python "
        "tests/definitions/amqp091/generate_spec.py"
    )


def test_the_generator_writes_where_it_is_told(
    spec_dir: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    out = tmp_path / "spec.py"
    _generator().main(["--spec-dir", str(spec_dir), "--output", str(out)])
    assert (
        out.read_text()
        == (ROOT / "amqp_sansio" / "definitions" / "amqp091" / "spec.py").read_text()
    )


def test_every_method_of_the_xml_and_the_json(spec_dir: pathlib.Path) -> None:
    xml = ET.parse(spec_dir / "amqp-0-9-1.xml").getroot()
    data = json.loads((spec_dir / "amqp-0-9-1-rabbitmq-extensions.json").read_text())
    expected = set()
    for klass in xml.iter("class"):
        for method in klass.iter("method"):
            expected.add((int(klass.get("index", "")), int(method.get("index", ""))))
            cls = amqp091.METHODS[int(klass.get("index", "")), int(method.get("index", ""))]
            names = [f.get("name", "").replace("-", "_") for f in method.findall("field")]
            assert [n.rstrip("_") for n, _ in cls.FIELDS] == names, cls.NAME
    for klass in data["classes"]:
        for method in klass["methods"]:
            expected.add((klass["id"], method["id"]))
            cls = amqp091.METHODS[klass["id"], method["id"]]
            assert f"{klass['name']}.{method['name']}" == cls.NAME
            assert len(cls.FIELDS) == len(method["arguments"])
    assert set(amqp091.METHODS) == expected
    assert len(expected) == 66
    basic = next(k for k in data["classes"] if k["name"] == "basic")
    assert len(amqp091.BasicProperties.FIELDS) == len(basic["properties"]) == 14


def test_constants_and_reply_codes(spec_dir: pathlib.Path) -> None:
    data = json.loads((spec_dir / "amqp-0-9-1-rabbitmq-extensions.json").read_text())
    for constant in data["constants"]:
        name = constant["name"].replace("-", "_")
        if "class" in constant:
            code = amqp091.ReplyCode[name]
            assert code == constant["value"]
            group = (
                amqp091.SOFT_ERRORS if constant["class"] == "soft-error" else amqp091.HARD_ERRORS
            )
            assert code in group
        elif name == "REPLY_SUCCESS":
            assert constant["value"] == amqp091.ReplyCode.REPLY_SUCCESS
        else:
            assert getattr(amqp091.spec, name) == constant["value"]
