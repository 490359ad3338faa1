"""amqplib (npm ``amqplib``, the Node.js 0-9-1 client) against our broker, started as a user
starts it (``amqp-sansio broker``, no options): amqplib's own examples, run as they are from
its package, ``examples/direct_reply_to_server.js`` and ``direct_reply_to_client.js``
(RabbitMQ's direct reply-to, docs/amqp091.rst). They connect to ``amqp://localhost``; the
preloaded ``tests/interop/peers/amqplib/at_url.js`` points that at the broker under test.

amqplib is pinned by ``tests/interop/peers/amqplib/package.json`` and its lock file
(``npm ci --prefix tests/interop/peers/amqplib``, as ``.ci/run`` does). Without ``node``, or
without amqplib installed there, the test skips, saying which."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest
from support import node_peers
from support.broker_process import WAIT, BrokerProcess, Lines

PEERS = str(node_peers.folder("amqplib"))
NODE = node_peers.NODE
EXAMPLES = os.path.join(PEERS, "node_modules", "amqplib", "examples")
SKIP = node_peers.skip_reason("amqplib", "amqplib")


pytestmark = pytest.mark.skipif(SKIP is not None, reason=str(SKIP))


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def _example(name: str) -> list[str]:
    assert NODE is not None
    return [NODE, "-r", "./at_url.js", os.path.join(EXAMPLES, name)]


def test_amqplib_direct_reply_to_examples(broker: BrokerProcess) -> None:
    env = {**os.environ, "AMQP_URL": f"amqp://guest:guest@127.0.0.1:{broker.port}"}
    server = subprocess.Popen(
        _example("direct_reply_to_server.js"),
        cwd=PEERS,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = Lines(server)
        assert lines.next(WAIT).strip() == "[x] To exit press CTRL+C."
        client = subprocess.run(
            _example("direct_reply_to_client.js"),
            cwd=PEERS,
            env=env,
            capture_output=True,
            text=True,
            timeout=WAIT,
        )
        # the client printed the server's reply, and closed (no 404 NOT_FOUND)
        assert (client.returncode, client.stdout.strip()) == (0, "[.] pong"), client.stderr
        assert lines.next(WAIT).strip() == "[X] ping"
    finally:
        server.send_signal(signal.SIGINT)  # (the example closes its channel and connection)
        try:
            server.wait(WAIT)
        except subprocess.TimeoutExpired:  # pragma: no cover - a server that hangs
            server.kill()
            server.wait(WAIT)
