"""The README's two commands are the ones we run: CI runs exactly the test command."""

from __future__ import annotations

import os
import re

import pytest
from support import ROOT

import amqp_sansio as a


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)


def test_readme_has_the_two_commands_near_the_top() -> None:
    text = (ROOT / "README.md").read_text()
    commands = _commands()
    assert len(commands) >= 2
    assert "amqp-sansio pipeline" in commands[0] and ".[spark]" in commands[0]
    assert "pytest" in commands[1]
    assert text.index(commands[1]) < len(text) // 2


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _commands()[1] in ci


def _examples() -> list[str]:
    text = (ROOT / "README.md").read_text()
    return re.findall(r"```python\n(.*?)\n```", text, flags=re.S)


def test_readme_codec_example_runs() -> None:
    exec(compile(_examples()[0], "README.md", "exec"), {})


def test_readme_engine_example_runs_against_rabbitmq() -> None:
    """The engine example talks to the RabbitMQ that .ci/run starts on 127.0.0.1:5672."""
    url = os.environ.get("AMQP_SANSIO_RABBITMQ_URL", "")
    if "127.0.0.1:5672" not in url and "localhost:5672" not in url:
        pytest.skip(
            "AMQP_SANSIO_RABBITMQ_URL names no RabbitMQ on 127.0.0.1:5672 (.ci/run starts one)"
        )
    namespace: dict[str, object] = {}
    exec(compile(_examples()[1], "README.md", "exec"), namespace)
    conn = namespace["conn"]
    assert isinstance(conn, a.Connection) and conn.sasl_mechanism == "PLAIN"
