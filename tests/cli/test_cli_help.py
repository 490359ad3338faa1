"""``--help`` of every command says what it does and every default: each subcommand has a
description, and every option that has a default names it ("(default X)") in its help."""

from __future__ import annotations

import argparse
import subprocess

import pytest
from amqp_sansio.adapters.cli.command import build_parser
from support.broker_process import amqp_sansio_command


def _commands(
    parser: argparse.ArgumentParser, name: str = "amqp-sansio"
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                found += _commands(sub, f"{name} {sub_name}")
    return found


COMMANDS = _commands(build_parser())


@pytest.mark.parametrize("name, parser", COMMANDS, ids=[n for n, _ in COMMANDS])
def test_help_describes_the_command_and_every_default(
    name: str, parser: argparse.ArgumentParser
) -> None:
    assert parser.description, f"{name}: no description"
    missing = []
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if action.default in (None, False, True, argparse.SUPPRESS) or action.nargs == 0:
            continue  # a flag, or nothing unless given
        if "default" not in (action.help or ""):
            missing.append("/".join(action.option_strings))
    assert not missing, f"{name}: the help of {', '.join(missing)} does not give its default"


def test_help_runs_as_a_user_types_it() -> None:
    """``--help`` of every command prints and exits 0, as the installed command."""
    for name, _ in COMMANDS:
        words = name.split()[1:]
        result = subprocess.run(
            [*amqp_sansio_command(), *words, "--help"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, (name, result.stderr)
        assert result.stdout.startswith("usage: amqp-sansio"), (name, result.stdout[:200])
