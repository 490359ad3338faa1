"""The Node.js peers (rhea, amqplib): their programs live in ``tests/interop/peers/<name>/``,
each peer pinned by that folder's ``package.json`` and installed there with
``npm ci --prefix tests/interop/peers/<name>`` (``.ci/run`` does). What every test of
them shares: where they are, whether they are installed as pinned (else why the tests
skip), and running one of their programs for the JSON result it prints last."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["NODE", "folder", "install_command", "installed", "result_of", "run", "skip_reason"]

#: The ``node`` program, or None when Node.js is not installed.
NODE = shutil.which("node")


def folder(peer: str) -> Path:
    """Where ``peer``'s programs and ``package.json`` are."""
    return Path(__file__).parent.parent / "interop" / "peers" / peer


def install_command(peer: str) -> str:
    return f"npm ci --prefix tests/interop/peers/{peer}"


def installed(peer: str, package: str) -> str | None:
    """The version of ``package`` installed for ``peer``, or None."""
    try:
        manifest = folder(peer) / "node_modules" / package / "package.json"
        return str(json.loads(manifest.read_text())["version"])
    except (OSError, ValueError, KeyError):
        return None


def skip_reason(peer: str, *packages: str) -> str | None:
    """Why ``peer``'s tests cannot run (no Node.js; one of ``packages`` missing, or not the
    version ``package.json`` pins), or None when they can."""
    if NODE is None:
        return "node is not installed (.ci/run installs Debian's nodejs and npm)"
    pinned = json.loads((folder(peer) / "package.json").read_text())["dependencies"]
    for package in packages:
        version = installed(peer, package)
        if version is None:
            return f"{package} is not installed: run `{install_command(peer)}`"
        if version != pinned[package]:
            return (
                f"{package} {version} is installed, package.json pins {pinned[package]}: "
                f"run `{install_command(peer)}`"
            )
    return None


def result_of(program: str, status: int | None, stdout: str, stderr: str) -> dict[str, Any]:
    """The JSON result ``program`` printed last, with its exit ``status`` (``_status``) and
    what it wrote to stderr (``_stderr``); the test fails, saying so, if it printed none."""
    lines = stdout.strip().splitlines()
    assert lines, f"{program}.js printed nothing (status {status}): {stderr}"
    result: dict[str, Any] = json.loads(lines[-1])
    result["_status"] = status
    result["_stderr"] = stderr
    return result


def run(peer: str, program: str, *args: str, timeout_ms: str, wait: float) -> dict[str, Any]:
    """Run ``peer``'s ``PROGRAM.js ARGS --timeout TIMEOUT_MS`` (the program stops itself then)
    and return its result (:func:`result_of`); it is killed past ``wait`` seconds."""
    assert NODE is not None
    done = subprocess.run(
        [NODE, f"{program}.js", *args, "--timeout", timeout_ms],
        cwd=folder(peer),
        capture_output=True,
        text=True,
        timeout=wait,
    )
    return result_of(program, done.returncode, done.stdout, done.stderr)
