"""The README's two commands are the ones we run: CI runs exactly the test command."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_readme_has_the_two_commands_near_the_top() -> None:
    text = (ROOT / "README.md").read_text()
    commands = _commands()
    assert len(commands) >= 2
    assert "amqp-sansio bench codec" in commands[0]
    assert "pytest" in commands[1]
    assert text.index(commands[1]) < len(text) // 2


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _commands()[1] in ci


def test_readme_example_runs() -> None:
    text = (ROOT / "README.md").read_text()
    (example,) = re.findall(r"```python\n(.*?)\n```", text, flags=re.S)
    exec(compile(example, "README.md", "exec"), {})
