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
    """A virtual environment first (a system Python may refuse pip), then the pipeline and
    the test suite."""
    text = (ROOT / "README.md").read_text()
    venv, pipeline, tests = _commands()[:3]
    assert venv == "python3 -m venv .venv && . .venv/bin/activate"
    assert "amqp-sansio pipeline" in pipeline and ".[spark]" in pipeline
    assert "pytest" in tests
    assert text.index(tests) < len(text) // 2


def test_ci_runs_exactly_the_readme_commands() -> None:
    """CI makes the README's virtual environment and runs its test command in it."""
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    venv, _, tests = _commands()[:3]
    assert venv in ci and tests in ci
    assert ci.index(venv) + 1 == ci.index(tests)


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
