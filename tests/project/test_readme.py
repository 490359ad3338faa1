"""The README's two commands are the ones we run: CI runs exactly the test command."""

from __future__ import annotations

import os
import re
import time

import pytest
from amqp_sansio.adapters import sockets
from support import ROOT
from support.broker_process import BrokerProcess

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


def test_every_test_file_ci_names_exists() -> None:
    """The test files CI names itself (the Spark tests on the older pyspark lines) are
    there: a moved test would otherwise leave that step failing on a missing file."""
    named = re.findall(r"tests/[\w/]+\.py", (ROOT / ".ci" / "run").read_text())
    assert named
    assert [path for path in named if not (ROOT / path).is_file()] == []


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


def test_readme_engine_example_runs_against_the_default_broker() -> None:
    """The same example against ``amqp-sansio broker`` started with no options (open: it
    takes any PLAIN login, as RabbitMQ takes guest/guest on the loopback), on its port:
    done well within a second, far from the example's 10 s bounds, and the message is
    on the node."""
    example = _examples()[1]
    assert '("127.0.0.1", 5672)' in example
    with BrokerProcess() as broker:
        namespace: dict[str, object] = {}
        started = time.monotonic()
        code = example.replace('("127.0.0.1", 5672)', f'("127.0.0.1", {broker.port})')
        exec(compile(code, "README.md", "exec"), namespace)
        assert time.monotonic() - started < 5.0
        conn = namespace["conn"]
        assert isinstance(conn, a.Connection) and conn.sasl_mechanism == "PLAIN"
        with sockets.connect(f"{broker.url}//queue/orders", timeout=5.0) as reader:
            delivery = reader.receiver(credit=1).receive(timeout=5.0)
            assert delivery is not None and delivery.message.body == a.Data(b"hello")
            delivery.accept()


def test_readme_says_both_protocols_the_daily_commands_and_what_the_suite_skips() -> None:
    """Both protocols from the first paragraph; how to install (the Spark extra, or the
    library alone); how long the suite takes and what it skips without each peer; the
    daily commands, each of which the command takes as it is."""
    from amqp_sansio.adapters.cli.command import build_parser

    text = (ROOT / "README.md").read_text()
    flat = " ".join(text.split())
    first = text.split("\n\n")[1]
    assert "**AMQP 1.0**" in first and "**AMQP 0-9-1**" in first
    assert "pip install '.[spark]'" in flat and "`python3 -m pip install .`" in flat
    assert "about 28 minutes on 2 cores with `--cov`" in flat
    for peer in ("without RabbitMQ", "without Node.js", "without Java", "../shared/spec/"):
        assert peer in flat, peer
    daily = [block for block in _commands() if block.startswith("amqp-sansio broker")]
    assert len(daily) == 1
    lines = [line.split("#")[0].split() for line in daily[0].splitlines()]
    assert {words[1] for words in lines} == {"broker", "send", "receive"}
    assert any("--protocol" in words for words in lines)
    for words in lines:
        build_parser().parse_args(words[1:])
