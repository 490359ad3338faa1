"""Every package folder and module is on the pages that describe the house: each folder of
``amqp_sansio/`` and ``adapters/`` is a term of the *Folders* section of
``docs/architecture.rst`` whose text names each of its modules (````name````), each package
folder is named in ``CONTRIBUTING.md``, and ``tests/`` has the folder that mirrors each
layer folder and each protocol folder. A module added without a word on the page fails
here."""

from __future__ import annotations

import pathlib
import re

from support import ROOT

PAGE = ROOT / "docs" / "architecture.rst"
PROTOCOLS = ("amqp10", "amqp091", "amqp010")

#: Package folders tested in another test folder than their mirror, and why.
TESTED_ELSEWHERE = {
    "amqp_sansio/amqp091": "the 0-9-1 face: its names are tested in the layers' folders",
    "amqp_sansio/amqp010": "the 0-10 face: tests/definitions/amqp010/ checks it",
    "amqp_sansio/security/mechanisms": "tests/security/ tests the mechanisms",
    "adapters/cli/bench": "tests/cli/ runs the benchmarks",
    "adapters/cli/bench/amqp10": "tests/cli/ runs the 1.0 benchmarks",
}

#: Where the adapters' tests are: the adapters' high-level API is tested in tests/client/.
ADAPTER_TESTS = {"adapters": "tests/client"}


def package_folders() -> list[str]:
    return sorted(
        str(init.parent.relative_to(ROOT))
        for top in ("amqp_sansio", "adapters")
        for init in (ROOT / top).rglob("__init__.py")
    )


def modules_of(folder: str) -> list[str]:
    return sorted(
        p.stem for p in (ROOT / folder).glob("*.py") if p.name not in ("__init__.py", "__main__.py")
    )


def sections(text: str) -> dict[str, str]:
    """The Folders section's definition list: each term ````folder/```` and its text."""
    found: dict[str, str] = {}
    term = None
    for line in text.splitlines():
        match = re.fullmatch(r"``((?:amqp_sansio|adapters)(?:/[\w]+)*)/``", line)
        if match:
            term = match.group(1)
            found[term] = ""
        elif term is not None and (line.startswith(" ") or not line):
            found[term] += line + "\n"
        else:
            term = None
    return found


def missing_from_page(text: str) -> list[str]:
    """The folders and modules the page does not name where it should."""
    described = sections(text)
    missing = []
    for folder in package_folders():
        if folder not in described:
            missing.append(f"{folder}/")
            continue
        missing += [
            f"{folder}/{m}" for m in modules_of(folder) if f"``{m}``" not in described[folder]
        ]
    missing += [f"{f}/ (no such folder)" for f in described if not (ROOT / f).is_dir()]
    return missing


def test_every_folder_and_module_is_on_the_architecture_page() -> None:
    assert missing_from_page(PAGE.read_text()) == []


def test_a_module_missing_from_the_page_fails() -> None:
    text = PAGE.read_text()
    folder = "amqp_sansio/engine/amqp10"
    body = sections(text)[folder]
    assert "``session``" in body
    without = text.replace(body, body.replace("``session``", "the session module"))
    assert f"{folder}/session" not in missing_from_page(text)
    assert f"{folder}/session" in missing_from_page(without)


def test_every_package_folder_is_in_contributing() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert [f for f in package_folders() if f"`{f}/`" not in text] == []


def mirror(folder: str) -> str:
    top, _, rest = folder.partition("/")
    if top == "amqp_sansio":
        return f"tests/{rest}"
    base = ADAPTER_TESTS.get("adapters") if not rest or rest.split("/")[0] in PROTOCOLS else "tests"
    return f"{base}/{rest}".rstrip("/")


def test_tests_mirror_the_package() -> None:
    """Each layer folder (``amqp_sansio/x/``) and each protocol folder has its folder in
    ``tests/``: ``amqp_sansio/engine/amqp091/`` is tested in ``tests/engine/amqp091/``."""
    wanted = [
        f
        for f in package_folders()
        if f not in TESTED_ELSEWHERE
        and f != "amqp_sansio"
        and (f.count("/") == 1 or f.rpartition("/")[2] in PROTOCOLS)
    ]
    assert [f"{f} -> {mirror(f)}" for f in wanted if not (ROOT / mirror(f)).is_dir()] == []


def test_the_mirror() -> None:
    assert mirror("amqp_sansio/engine/amqp091") == "tests/engine/amqp091"
    assert mirror("adapters/amqp091") == "tests/client/amqp091"
    assert mirror("adapters/cli/amqp091") == "tests/cli/amqp091"
    assert pathlib.Path(ROOT / "tests" / "engine").is_dir()
