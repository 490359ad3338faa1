"""``amqp-sansio send`` and ``receive``: the progress bar on a real terminal (the child's
stderr on a pseudo-terminal, ``os.openpty``) with its rate and time left, none on a pipe,
standard output untouched by it; and the partial counts of a run cut short by a time-out
(exit status 4), against ``amqp-sansio broker`` started as a user starts it (stopped with
SIGSTOP to make a sender wait)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess, amqp_sansio_command

WAIT = 60.0


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def fresh() -> str:
    return f"q-{uuid.uuid4().hex[:10]}"


def on_a_terminal(*args: str) -> tuple[int, str, str]:
    """Run the command with its stderr on a pseudo-terminal: (status, stdout, what the
    terminal showed)."""
    master, slave = os.openpty()
    try:
        proc = subprocess.Popen(
            [*amqp_sansio_command(), *args], stdout=subprocess.PIPE, stderr=slave
        )
    finally:
        os.close(slave)
    shown = bytearray()
    assert proc.stdout is not None
    stdout = proc.stdout
    out: list[bytes] = []  # (read meanwhile: a full pipe would stop the child)
    reader = threading.Thread(target=lambda: out.append(stdout.read()), daemon=True)
    reader.start()
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal's last end
                break
            if not chunk:
                break
            shown += chunk
        reader.join(WAIT)
        proc.wait(WAIT)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait(WAIT)
        if proc.stdout is not None:
            proc.stdout.close()
    return proc.returncode, b"".join(out).decode(), shown.decode()


def test_send_shows_a_bar_with_rate_and_time_left_on_a_terminal(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{fresh()}"
    status, out, shown = on_a_terminal("send", url, "--count", "100000")
    assert status == 0, shown
    assert out.startswith(f"sent 100,000 messages to {url}: 100,000 accepted in ")
    drawn = [d for d in shown.split("\r\x1b[K") if d]
    assert drawn, repr(shown)
    assert all(re.match(r"sending +\[", d) and "/ 100,000" in d for d in drawn), drawn
    assert any(re.search(r"[\d,]+ msg/s  \d+[smh]\S* left$", d) for d in drawn), drawn
    assert "100,000 / 100,000" in drawn[-1]
    assert shown.endswith("\r\x1b[K")  # taken off the terminal at the end
    assert "\n" not in shown


def test_receive_json_stdout_is_untouched_by_the_bar(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{fresh()}"
    assert (
        subprocess.run(
            [*amqp_sansio_command(), "send", url, "--count", "20000"], capture_output=True
        ).returncode
        == 0
    )
    status, out, shown = on_a_terminal("receive", url, "--count", "20000", "--json")
    assert status == 0, shown
    bodies = [json.loads(line)["body"] for line in out.splitlines()]
    assert bodies == [f"message {n}" for n in range(1, 20001)]
    assert re.search(r"receiving +\[", shown) and " msg/s" in shown and " left" in shown
    # The summary comes after the bar is taken off, on a line of its own.
    assert re.search(r"\r\x1b\[Kreceived 20,000 messages from .*: 20,000 accepted in ", shown)


def test_no_bar_on_a_pipe(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{fresh()}"
    sent = subprocess.run(
        [*amqp_sansio_command(), "send", url, "--count", "5000"],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert sent.returncode == 0 and sent.stderr == ""
    got = subprocess.run(
        [*amqp_sansio_command(), "receive", url, "--count", "5000", "--print"],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert got.returncode == 0
    assert got.stderr.startswith("received 5,000 messages") and got.stderr.count("\n") == 1


def test_receive_timed_out_says_how_many_came(broker: BrokerProcess) -> None:
    url = f"{broker.url}/{fresh()}"
    assert (
        subprocess.run(
            [*amqp_sansio_command(), "send", url, "--count", "3"], capture_output=True
        ).returncode
        == 0
    )
    result = subprocess.run(
        [*amqp_sansio_command(), "receive", url, "--count", "5", "--timeout", "1", "--count-only"],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 4
    assert re.fullmatch(
        rf"received 3 of 5 messages from {re.escape(url)}: 3 accepted in [\d.]+ s "
        r"\([\d,]+ msg/s\) \(timed out\)\n",
        result.stdout,
    ), result.stdout
    assert result.stderr == (
        "amqp-sansio receive: error: timed out after 1 s waiting for message 4 of 5\n"
    )


def test_send_timed_out_says_how_many_were_sent_and_what_came_of_them(
    broker: BrokerProcess,
) -> None:
    name = fresh()
    proc = subprocess.Popen(
        [*amqp_sansio_command(), "send", f"{broker.url}/{name}", "--count", "100000000",
         "--timeout", "2", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        with sockets.connect(broker.url, timeout=WAIT) as conn:  # wait until it is sending
            assert conn.receiver(name, credit=1).receive(timeout=WAIT) is not None
        broker.proc.send_signal(signal.SIGSTOP)  # the broker stops answering
        try:
            out, err = proc.communicate(timeout=WAIT)
        finally:
            broker.proc.send_signal(signal.SIGCONT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=WAIT)
    assert proc.returncode == 4, err
    summary = json.loads(out)
    assert summary["timed_out"] is True and summary["interrupted"] is False
    assert summary["requested"] == 100_000_000 and 0 < summary["sent"] < 100_000_000
    assert sum(summary["outcomes"].values()) == summary["sent"]  # every one accounted for
    assert summary["outcomes"].get("without an outcome", 0) > 0
    assert re.fullmatch(
        r"amqp-sansio send: error: timed out after 2 s waiting for credit or outcomes "
        r"\([\d,]+ of 100,000,000 sent, [\d,]+ settled\)\n",
        err,
    ), err
