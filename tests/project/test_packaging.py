"""The adapters install as ``amqp_sansio.adapters``: from a built wheel (``pip install .``)
and from the editable install the README uses, from any working directory."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import attrs
from support import ROOT

import amqp_sansio

#: The environment of the programs these tests run, without coverage's: what they import is a
#: built copy of the package, not the checkout the suite measures.
ENV = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}

CHECK = "import amqp_sansio.adapters.cli, amqp_sansio, sys; print(amqp_sansio.adapters.__file__)"


def _check(cwd: pathlib.Path) -> str:
    """CHECK run by this interpreter from ``cwd``: where the adapters came from."""
    result = subprocess.run(
        [sys.executable, "-c", CHECK],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_from_another_directory(tmp_path: pathlib.Path) -> None:
    _check(tmp_path)


def test_import_from_the_checkout_root() -> None:
    """Run from the checkout's root, the source folder amqp_sansio/ comes before any installed
    copy on the path: its adapters still import, from adapters/ beside it."""
    assert _check(ROOT) == str(ROOT / "adapters" / "__init__.py")


def _sources(tmp_path: pathlib.Path) -> pathlib.Path:
    """A copy of what the wheel is built from: setuptools builds in the source tree
    (``build/``), where a leftover of an earlier build would put removed modules into the
    wheel unseen; a fresh copy has none, as a clean clone has none."""
    copy = tmp_path / "src"
    copy.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, copy / name)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    shutil.copytree(ROOT / "amqp_sansio", copy / "amqp_sansio", ignore=skip)
    shutil.copytree(ROOT / "adapters", copy / "adapters", ignore=skip)
    return copy


def test_wheel_holds_the_adapters_and_py_typed(tmp_path: pathlib.Path) -> None:
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path / "dist"),
            str(_sources(tmp_path)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=ENV,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (tmp_path / "dist").glob("amqp_sansio-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "amqp_sansio/adapters/__init__.py" in names
    assert "amqp_sansio/adapters/cli/__main__.py" in names
    assert "amqp_sansio/py.typed" in names
    # Every package of the source tree (the core's and the adapters', as installed) is in it.
    for init in sorted(ROOT.glob("amqp_sansio/**/__init__.py")):
        assert str(init.relative_to(ROOT)) in names
    for init in sorted(ROOT.glob("adapters/**/__init__.py")):
        assert "amqp_sansio/" + str(init.relative_to(ROOT)) in names
    assert not any(n.startswith(("adapters/", "tests/")) for n in names)
    # One version source (amqp_sansio.__version__), and the LICENSE file the metadata names.
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    headers = zipfile.ZipFile(wheel).read(metadata).decode()
    assert f"\nVersion: {amqp_sansio.__version__}\n" in headers
    assert "License: Apache-2.0" in headers or "License-Expression: Apache-2.0" in headers
    assert any(n.endswith("LICENSE") and ".dist-info/" in n for n in names), names
    # Installed from the wheel alone (no source tree on the path), from an unrelated cwd.
    target = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)
    result = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); " + CHECK],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    assert str(target) in result.stdout
    # Installed from the wheel (not editable), Python run from the checkout's root: the source
    # folder shadows the installed package, and finds its adapters beside it.
    path = ["", str(target), str(pathlib.Path(attrs.__file__).parent.parent)]
    result = subprocess.run(
        # -S: no site module, so no editable install's finder; attrs from where it is.
        [sys.executable, "-I", "-S", "-c", f"import sys; sys.path[:0] = {path!r}; " + CHECK],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(ROOT / "adapters" / "__init__.py")


def test_py_typed_ships() -> None:
    assert (ROOT / "amqp_sansio" / "py.typed").exists()
