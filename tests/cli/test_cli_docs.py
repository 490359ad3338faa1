"""Every ``console`` example in the docs runs, as a user types it, and prints what the docs
say it prints.

An example is a ``.. code-block:: console`` of ``$ command`` lines, each followed by the
output it shows (standard output and standard error together, as a terminal shows them).
Each example runs in a fresh temporary directory against a fresh ``amqp-sansio broker``:
the broker the example starts itself when one of its commands is ``amqp-sansio broker ...``
(run in the background, as with ``&``, in that directory), otherwise one started with no
options. Commands before the broker's are set-up, run first in the directory (e.g.
``python -m trustme``, which writes a certificate there; ``python`` is the interpreter
running the tests). Since CI has RabbitMQ on 5672, the broker listens on a port of its own,
and ``localhost:PORT`` (or a plain ``localhost``) in the example's ``amqp://`` URLs and
output becomes that port; with ``--tls-cert`` its amqps port is one of its own too, and
``amqps://localhost`` (port 5671) becomes that one. Output is compared as doctest compares
it, ``...`` matching anything (rates and times). A command must exit with status 0 unless
the output shown has an ``error:`` line or the next command is ``echo $?``, which prints the
status. ``text`` blocks are not run: use them for what needs what CI lacks (a second
machine, a minute of Spark).
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT
from support.broker_process import BrokerProcess, amqp_sansio_command

DOCS = ROOT / "docs"

#: One example: its file and line, and its commands, each with the output it shows.
Example = tuple[str, list[tuple[str, str]]]


def examples() -> list[Example]:
    found: list[Example] = []
    for path in sorted(DOCS.glob("*.rst")):
        lines = path.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].strip() != ".. code-block:: console":
                i += 1
                continue
            start = i + 1
            indent: int | None = None
            body: list[str] = []
            i += 1
            while i < len(lines) and (
                not lines[i].strip()
                or indent is None
                or (len(lines[i]) - len(lines[i].lstrip()) >= indent)
            ):
                if lines[i].strip():
                    if indent is None:
                        indent = len(lines[i]) - len(lines[i].lstrip())
                    body.append(lines[i][indent:])
                elif body:
                    body.append("")
                i += 1
            found.append((f"{path.name}:{start}", _commands(body)))
    return found


def _commands(body: list[str]) -> list[tuple[str, str]]:
    commands: list[tuple[str, str]] = []
    command: str | None = None
    output: list[str] = []
    continued = False
    for line in body:
        if continued and command is not None:
            command += "\n" + line
            continued = line.endswith("\\")
        elif line.startswith("$ "):
            if command is not None:
                commands.append((command, "\n".join(output).strip("\n")))
            command, output = line[2:], []
            continued = line.endswith("\\")
        else:
            output.append(line)
    if command is not None:
        commands.append((command, "\n".join(output).strip("\n")))
    return commands


_CHECKER = doctest.OutputChecker()
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _on_port(text: str, port: int, tls_port: int | None = None) -> str:
    """``localhost`` and ``localhost:5672`` in ``amqp://`` URLs become ``localhost:PORT``;
    ``localhost`` and ``localhost:5671`` in ``amqps://`` URLs ``localhost:TLS_PORT``."""
    text = re.sub(r"(amqp://(?:[^@/\s]+@)?localhost)(?::5672)?(?=[/\s]|$)", rf"\1:{port}", text)
    if tls_port is not None:
        text = re.sub(
            r"(amqps://(?:[^@/\s]+@)?localhost)(?::5671)?(?=[/\s]|$)", rf"\1:{tls_port}", text
        )
    return text


def _run(command: str, program: str, cwd: Path, env: dict[str, str]) -> tuple[str, int]:
    """One command as bash runs it, ``amqp-sansio`` and a leading ``python`` being this
    environment's; its output (stdout and stderr) and exit status."""
    line = re.sub(r"(?<![\w-])amqp-sansio(?![\w-])", program, command)
    line = re.sub(r"^python(?=\s)", shlex.quote(sys.executable), line)
    result = subprocess.run(
        ["bash", "-c", line],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
    )
    return result.stdout, result.returncode


@pytest.mark.parametrize("where, commands", [pytest.param(*e, id=e[0]) for e in examples()])
def test_console_example(where: str, commands: list[tuple[str, str]], tmp_path: Path) -> None:
    assert commands, f"{where}: a console block without a '$ ' command"
    program = shlex.join(amqp_sansio_command())
    env = {**os.environ, "COLUMNS": "100"}
    starts = [i for i, (cmd, _) in enumerate(commands) if cmd.startswith("amqp-sansio broker")]
    if starts:
        first = starts[0]
        for command, shown in commands[:first]:  # set-up, before the broker
            got, status = _run(command, program, tmp_path, env)
            assert status == 0 and _CHECKER.check_output(
                shown + "\n" if shown else "", got, _FLAGS
            ), f"{where}: $ {command}\nexpected:\n{shown}\ngot (status {status}):\n{got}"
        broker = BrokerProcess(*shlex.split(commands[first][0])[2:], cwd=tmp_path)
        commands = commands[first + 1 :]
    else:
        broker = BrokerProcess()
    status = 0
    with broker:
        for index, (command, shown) in enumerate(commands):
            if command == "echo $?":
                got, status = f"{status}\n", 0  # (echo itself succeeds)
            else:
                got, status = _run(
                    _on_port(command, broker.port, broker.tls_port), program, tmp_path, env
                )
            want = _on_port(shown, broker.port, broker.tls_port)
            assert _CHECKER.check_output(want + "\n" if want else "", got, _FLAGS), (
                f"{where}: $ {command}\nexpected:\n{want}\ngot (status {status}):\n{got}"
            )
            status_shown = index + 1 < len(commands) and commands[index + 1][0] == "echo $?"
            assert status == 0 or "error:" in want or status_shown, (
                f"{where}: $ {command} exited with status {status}:\n{got}"
            )
