"""The adapters install as ``amqp_sansio.adapters``: from a built wheel (``pip install .``)
and from the editable install the README uses, from any working directory."""

from __future__ import annotations

import pathlib
import subprocess
import sys
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECK = "import amqp_sansio.adapters.cli, amqp_sansio, sys; print(amqp_sansio.adapters.__file__)"


def test_import_from_another_directory(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHECK], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


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
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = (tmp_path / "dist").glob("amqp_sansio-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "amqp_sansio/adapters/__init__.py" in names
    assert "amqp_sansio/adapters/cli.py" in names
    assert "amqp_sansio/py.typed" in names
    # Every subpackage of the core ships (pyproject lists them one by one).
    core = pathlib.Path(__file__).resolve().parents[1] / "amqp_sansio"
    for init in core.rglob("__init__.py"):
        assert f"amqp_sansio/{init.relative_to(core).as_posix()}" in names
    assert not any(n.startswith(("adapters/", "tests/")) for n in names)
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
    )
    assert result.returncode == 0, result.stderr
    assert str(target) in result.stdout
