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


def test_the_commands_help_names_both_protocols_and_the_daily_commands() -> None:
    """``amqp-sansio --help``, as a user types it: both protocols, and the daily commands
    (broker, send, receive) as lines that the command takes as they are."""
    shown = subprocess.run(
        [*amqp_sansio_command(), "--help"], capture_output=True, text=True, timeout=60
    )
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "AMQP 1.0" in text and "AMQP 0-9-1" in text
    daily = [
        line.strip().split()
        for line in shown.stdout.splitlines()
        if line.strip().startswith("amqp-sansio ")
    ]
    assert {words[1] for words in daily} >= {"broker", "send", "receive"}
    assert any("--protocol" in words for words in daily)
    for words in daily:  # each one parses (its description, if any, cut off)
        command = words[1 : words.index("run")] if "run" in words else words[1:]
        build_parser().parse_args(command)
