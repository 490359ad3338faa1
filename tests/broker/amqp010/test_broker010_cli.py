"""``amqp-sansio send`` and ``receive --protocol 0-10`` (docs/amqp010.rst, "Command line")
against our broker started as a user starts it (``amqp-sansio broker``): messages sent to a
queue and received, durable and with a priority; sent with 0-10 and received with the 1.0
command, and back."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from support.broker_process import BrokerProcess, amqp_sansio_command

WAIT = 20.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def cli(*args: str) -> list[str]:
    """Run ``amqp-sansio ARGS``: its output lines; it must exit with status 0."""
    done = subprocess.run(
        [*amqp_sansio_command(), *args], capture_output=True, text=True, timeout=WAIT
    )
    assert done.returncode == 0, (args, done.returncode, done.stdout, done.stderr)
    return done.stdout.splitlines()


def test_send_and_receive_with_0_10(broker: BrokerProcess) -> None:
    url = f"{broker.url}/cli.q"
    cli("send", "--protocol", "0-10", "--count", "3", "--durable", "--priority", "7", url)
    got = cli("receive", "--protocol", "0-10", "--count", "3", url)
    assert got == ["message 1", "message 2", "message 3"]


def test_0_10_to_1_0_and_back(broker: BrokerProcess) -> None:
    url = f"{broker.url}/cli.cross"
    cli("send", "--protocol", "0-10", "--body", "from 0-10", url)
    assert cli("receive", "--count", "1", url) == ["from 0-10"]
    cli("send", "--body", "from 1.0", url)
    assert cli("receive", "--protocol", "0-10", "--count", "1", url) == ["from 1.0"]
