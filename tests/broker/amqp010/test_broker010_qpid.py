"""The broker serving AMQP 0-10 as a user starts it (``amqp-sansio broker``, no option but
its port): qpid.messaging's own examples (qpid-python's ``examples/api``: ``hello``,
``spout``, ``drain``) run against it unchanged, on the port that serves 1.0 and 0-9-1."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.broker_process import BrokerProcess
from support.qpid_peer import QPID_DIR, qpid_module

#: qpid-python's examples of its messaging API.
EXAMPLES = QPID_DIR / "examples" / "api"


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    qpid_module("qpid.messaging")  # (skips, saying why, without the peer)
    process = BrokerProcess()
    try:
        yield process
    finally:
        process.stop()


def example(broker: BrokerProcess, name: str, *args: str) -> str:
    """Run the example ``name`` against the broker (its first argument, ``host:port``, or
    ``-b host:port`` for spout and drain) and give what it printed; it must succeed."""
    where = f"127.0.0.1:{broker.port}"
    command = [sys.executable, "-W", "ignore", str(EXAMPLES / name)]
    command += [where, *args] if name == "hello" else ["-b", where, *args]
    env = dict(os.environ, PYTHONPATH=str(QPID_DIR))
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, env=env, cwd=Path(EXAMPLES)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_hello(broker: BrokerProcess) -> None:
    # through amq.topic (a subscription queue of its own, bound with the subject "#")
    assert example(broker, "hello") == "Hello world!\n"
    assert "user anonymous (AMQP 0-10), no TLS, vhost /" in broker.wait_for_log("AMQP 0-10")


def test_hello_through_each_standard_exchange(broker: BrokerProcess) -> None:
    for exchange in ("amq.fanout", "amq.direct", "amq.topic"):
        assert example(broker, "hello", exchange) == "Hello world!\n", exchange


def test_spout_and_drain_a_queue(broker: BrokerProcess) -> None:
    example(broker, "spout", "qpid-q; {create: always}", "first")
    example(broker, "spout", "--durable", "qpid-q", "second")
    out = example(broker, "drain", "-t", "1", "qpid-q")
    lines = out.splitlines()
    assert len(lines) == 2, out
    assert "content='first'" in lines[0] and "durable=True" not in lines[0]
    assert "content='second'" in lines[1] and "durable=True" in lines[1]
    assert example(broker, "drain", "-t", "0.2", "qpid-q") == ""  # accepted: gone


def test_persistent_messages_of_a_durable_queue_survive_a_restart(tmp_path: Path) -> None:
    qpid_module("qpid.messaging")
    with BrokerProcess(store=tmp_path) as process:
        address = "durable-q; {create: always, node: {durable: True}}"
        example(process, "spout", "--durable", address, "kept")
        example(process, "spout", address, "not kept")
        process.restart()
        out = example(process, "drain", "-t", "1", "durable-q")
    assert "content='kept'" in out and "not kept" not in out, out
