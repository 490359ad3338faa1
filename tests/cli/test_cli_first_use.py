"""What a new user meets at the command line, the way they run it: ``amqp-sansio broker``
with no options (:class:`support.broker_process.BrokerProcess`), then ``amqp-sansio send``
and ``receive`` as programs, in either protocol, and against RabbitMQ when
``AMQP_SANSIO_RABBITMQ_URL`` names one.

* ``receive`` shows the bodies it takes, one a line (as Proton's and rhea's receive
  examples do); ``--count-only`` counts them silently. On a terminal no body shares a line
  with the progress bar.
* ``send --protocol 0-9-1`` to the default exchange declares its queue first (as the 1.0
  side makes one on first use), so a fresh broker takes the messages rather than returning
  them; ``--no-declare`` leaves the broker as it is.
* ``send --lines -`` sends each line as it arrives on standard input.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest
from support.broker_process import BrokerProcess, amqp_sansio_command
from support.rabbitmq import rabbitmq_url

#: The bound of each command here, seconds.
WAIT = 30.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as b:  # amqp-sansio broker --port 0, nothing else
        yield b


def command(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*amqp_sansio_command(), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=WAIT,
        check=False,
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# -- receive shows what it takes ----------------------------------------------------------


def test_receive_prints_each_body_by_default(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{unique('first')}"
    assert command("send", url, "--count", "3").returncode == 0
    done = command("receive", url, "--count", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "message 1\nmessage 2\nmessage 3\n"
    assert done.stderr.startswith("received 3 messages from ") and "3 accepted" in done.stderr


def test_receive_count_only_prints_the_summary_alone(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{unique('count')}"
    assert command("send", url, "--count", "3").returncode == 0
    done = command("receive", url, "--count", "3", "--count-only")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("received 3 messages from ") and "message 1" not in done.stdout
    assert done.stderr == ""


def test_receive_091_prints_each_body_by_default(broker: BrokerProcess) -> None:
    queue = unique("first091")
    url = f"{broker.url}/{queue}"
    sent = command("send", url, "--protocol", "0-9-1", "--count", "2")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    done = command("receive", url, "--protocol", "0-9-1", "--count", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "message 1\nmessage 2\n"


def _screen(output: str) -> list[str]:
    """The lines a terminal shows for ``output``: ``\\r`` returns to the line's start,
    ``ESC [K`` erases from there to its end, ``\\n`` ends it; other text overwrites."""
    lines: list[str] = []
    line: list[str] = []
    col = 0
    for token in re.findall(r"\x1b\[K|\r|\n|[^\r\n\x1b]+|\x1b", output):
        if token == "\n":
            lines.append("".join(line))
            line, col = [], 0
        elif token == "\r":
            col = 0
        elif token == "\x1b[K":
            del line[col:]
        else:
            for ch in token:
                if col < len(line):
                    line[col] = ch
                else:
                    line.append(ch)
                col += 1
    if line:
        lines.append("".join(line))
    return lines


def test_receive_on_a_terminal_never_puts_a_body_on_the_bars_line(broker: BrokerProcess) -> None:
    """stdout and stderr on one terminal (a pseudo-terminal), as a user runs it: the bar
    draws (``receiving  [###...]``) and every body is a line of its own."""
    count = 40
    url = f"{broker.url}/{unique('tty')}"
    assert command("send", url, "--count", str(count)).returncode == 0
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [*amqp_sansio_command(), "receive", url, "--count", str(count), "--print"],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    chunks: list[bytes] = []
    end = time.monotonic() + WAIT
    try:
        while time.monotonic() < end:
            if select.select([controller], [], [], 1.0)[0]:
                try:
                    data = os.read(controller, 65536)
                except OSError:  # (EIO: the program ended, the terminal closed)
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        assert proc.wait(timeout=WAIT) == 0
    finally:
        os.close(controller)
        if proc.poll() is None:
            proc.kill()
    output = b"".join(chunks).decode().replace("\r\n", "\n")
    assert "receiving" in output  # the bar was drawn
    shown = [line for line in _screen(output) if line]
    bodies = [line for line in shown if "message" in line and not line.startswith("received")]
    assert bodies == [f"message {n}" for n in range(1, count + 1)], shown
    assert shown[-1].startswith(f"received {count} messages from ")


# -- send --protocol 0-9-1 to a fresh broker -----------------------------------------------


def _pika(url: str) -> object:
    import pika

    return pika.BlockingConnection(pika.URLParameters(url))


@pytest.fixture(params=["amqp-sansio broker", "RabbitMQ"])
def fresh(request: pytest.FixtureRequest, broker: BrokerProcess) -> Iterator[tuple[str, str]]:
    """A broker as it starts (ours with no options, or RabbitMQ) and a queue name it has
    never seen; at RabbitMQ the queue, if made, is deleted after the test (with pika)."""
    queue = unique("fresh091")
    if request.param == "amqp-sansio broker":
        yield broker.url, queue
        return
    rabbit = rabbitmq_url()
    try:
        yield rabbit, queue
    finally:
        conn: object = _pika(rabbit)
        channel = conn.channel()  # type: ignore[attr-defined]
        channel.queue_delete(queue)
        conn.close()  # type: ignore[attr-defined]


def test_send_091_to_a_fresh_broker_declares_its_queue(fresh: tuple[str, str]) -> None:
    """The default exchange routes to the queue the routing key names: send makes it, and
    every message is confirmed (none returned), then received, on either broker."""
    base, queue = fresh
    url = f"{base}/{queue}"
    sent = command("send", url, "--protocol", "0-9-1", "--count", "3")
    assert sent.returncode == 0, sent.stdout + sent.stderr
    assert ": 3 confirmed in " in sent.stdout
    done = command("receive", url, "--protocol", "0-9-1", "--count", "3")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "message 1\nmessage 2\nmessage 3\n"


def test_send_091_no_declare_leaves_the_broker_as_it_is(fresh: tuple[str, str]) -> None:
    """``--no-declare``: no queue, so the mandatory publishes come back, on either broker."""
    base, queue = fresh
    sent = command("send", f"{base}/{queue}", "--protocol", "0-9-1", "--count", "2", "--no-declare")
    assert sent.returncode == 1, sent.stdout + sent.stderr
    assert ": 2 returned in " in sent.stdout


def test_send_091_keeps_a_queue_the_broker_has() -> None:
    """A durable queue declared by pika (RabbitMQ): send's declaration asks first, so the
    queue's arguments differing from a plain declaration's is no 406."""
    rabbit = rabbitmq_url()
    queue = unique("durable091")
    conn: object = _pika(rabbit)
    channel = conn.channel()  # type: ignore[attr-defined]
    channel.queue_declare(queue, durable=True, arguments={"x-max-length": 100})
    try:
        sent = command("send", f"{rabbit}/{queue}", "--protocol", "0-9-1", "--count", "2")
        assert sent.returncode == 0, sent.stdout + sent.stderr
        assert channel.queue_declare(queue, passive=True).method.message_count == 2
    finally:
        channel.queue_delete(queue)
        conn.close()  # type: ignore[attr-defined]


# -- send --lines - sends each line as it arrives ---------------------------------------------


@pytest.mark.parametrize("protocol", ["1.0", "0-9-1"])
def test_send_lines_from_stdin_sends_each_line_as_it_arrives(
    broker: BrokerProcess, protocol: str
) -> None:
    """A writer that keeps standard input open (as ``tail -f`` does): each line it writes
    reaches a receiver while the writer is still writing, not when it closes."""
    url = f"{broker.url}/{unique('stream')}"
    flags = ["--protocol", protocol]
    if protocol == "0-9-1":  # (the queue, for the receiver to consume before the send)
        assert command("send", url, *flags, "--count", "1", "--body", "0").returncode == 0
    else:
        assert command("send", url, "--count", "1", "--body", "0").returncode == 0
    receiving = [*amqp_sansio_command(), "receive", url, *flags, "--count", "3"]
    sending = [*amqp_sansio_command(), "send", url, *flags, "--lines", "-"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    with (
        subprocess.Popen(receiving, **pipes) as receiver,  # type: ignore[call-overload]
        subprocess.Popen(sending, stdin=subprocess.PIPE, **pipes) as sender,  # type: ignore[call-overload]
    ):
        try:
            for line in ("first", "second"):
                sender.stdin.write(line + "\n")
                sender.stdin.flush()
            # The receiver has all three (the one before, and the two lines) while the
            # sender's standard input is still open.
            out, err = receiver.communicate(timeout=WAIT)
            assert receiver.returncode == 0, err
            assert out == "0\nfirst\nsecond\n"
            assert sender.poll() is None  # still reading its input
            summary, err = sender.communicate(timeout=WAIT)  # (closes its input)
            assert sender.returncode == 0, err
            assert summary.startswith("sent 2 messages to "), summary
        finally:
            for proc in (sender, receiver):
                if proc.poll() is None:
                    proc.kill()
