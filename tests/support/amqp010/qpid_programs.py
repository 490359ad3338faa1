"""qpid-python's example programs (``examples/api`` of the peer: hello, spout, drain,
server), run as programs against a broker, with the peer's folder on their ``PYTHONPATH``:
what tests/broker/amqp010's example tests share.

::

    lines = run(broker, "spout", "-c", "3", "q; {create: always}")   # exit 0, no stderr
    server = start(broker, "server", "requests")                      # a Popen
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from support.broker_process import BrokerProcess
from support.qpid_peer import QPID_DIR

__all__ = ["EXAMPLES", "WAIT", "command", "env", "run", "start", "stderr_of"]

#: Each program's bound (seconds): a program that hangs fails the test.
WAIT = 20.0

EXAMPLES = QPID_DIR / "examples" / "api"

#: What qpid-python sometimes writes as a program exits, its work done: its selector's
#: ``atexit`` hook wakes a thread whose pipe is already closed (qpid/selector.py,
#: ``Selector.stop``). Nothing of the broker's: taken out of stderr before it is read.
EXIT_NOISE = re.compile(
    r"Exception ignored in atexit callback: <bound method Selector\.stop .*?"
    r"OSError: \[Errno 9\] Bad file descriptor\n",
    re.DOTALL,
)


def stderr_of(text: str) -> str:
    """A program's stderr without qpid-python's exit noise (:data:`EXIT_NOISE`)."""
    return EXIT_NOISE.sub("", text)


def command(program: str, *args: str) -> list[str]:
    return [sys.executable, str(EXAMPLES / program), *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(QPID_DIR), "PYTHONWARNINGS": "ignore"}


def _argv(broker: BrokerProcess, program: str, args: tuple[str, ...]) -> list[str]:
    where = f"127.0.0.1:{broker.port}"
    return command(program, *([where, *args] if program == "hello" else ["-b", where, *args]))


def run(broker: BrokerProcess, program: str, *args: str) -> list[str]:
    """Run an example program against ``broker`` (``-b host:port``, but hello, which takes
    the broker as its first argument): its output lines. It must exit with status 0 and
    write nothing on stderr."""
    done = subprocess.run(
        _argv(broker, program, args), capture_output=True, text=True, timeout=WAIT, env=env()
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr, broker.log)
    assert stderr_of(done.stderr) == "", (done.stderr, broker.log)
    return done.stdout.splitlines()


def start(broker: BrokerProcess, program: str, *args: str) -> subprocess.Popen[str]:
    """Start an example program against ``broker``, its output and stderr piped."""
    return subprocess.Popen(
        _argv(broker, program, args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(),
    )
