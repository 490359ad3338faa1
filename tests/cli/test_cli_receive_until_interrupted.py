"""``amqp-sansio receive --count 0``: receive until interrupted (Ctrl-C, SIGINT), then the
summary; and an interrupt before ``--count N`` came says how many did (exit status 130).
Against ``amqp-sansio broker`` as a user starts it, the commands run as a user runs them."""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess, Lines, amqp_sansio_command

import amqp_sansio as amqp

WAIT = 30.0


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess() as process:
        yield process


def _publish(url: str, address: str, bodies: list[str]) -> None:
    with sockets.connect(url, timeout=WAIT) as conn:
        sender = conn.sender(address)
        for body in bodies:
            assert isinstance(sender.send(amqp.Message(body=body)), amqp.Accepted)


def _receive(url: str, *args: str) -> tuple[subprocess.Popen[str], Lines]:
    proc = subprocess.Popen(
        [*amqp_sansio_command(), "receive", url, *args, "--print"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, Lines(proc)


def _interrupt(proc: subprocess.Popen[str], lines: Lines) -> tuple[int, list[str], str]:
    proc.send_signal(signal.SIGINT)
    rest = lines.rest(WAIT)
    assert proc.stderr is not None
    with proc.stderr:
        return proc.returncode, rest, proc.stderr.read()


def _end(proc: subprocess.Popen[str]) -> None:
    """However the test went: the process ended, its pipes closed."""
    proc.kill()
    proc.wait(WAIT)
    if proc.stderr is not None:
        proc.stderr.close()


def test_count_0_receives_until_interrupted_then_prints_the_summary(
    broker: BrokerProcess,
) -> None:
    proc, lines = _receive(f"{broker.url}/forever", "--count", "0")
    try:
        _publish(broker.url, "forever", ["one", "two", "three"])
        assert [lines.next(WAIT).rstrip("\n") for _ in range(3)] == ["one", "two", "three"]
        _publish(broker.url, "forever", ["four", "five"])  # it is still receiving
        assert [lines.next(WAIT).rstrip("\n") for _ in range(2)] == ["four", "five"]
        status, rest, err = _interrupt(proc, lines)
    finally:
        _end(proc)
    assert status == 0, err
    assert rest == []
    (summary,) = err.splitlines()
    assert summary.startswith(f"received 5 messages from {broker.url}/forever: 5 accepted in ")
    assert "Traceback" not in err


def test_an_interrupt_before_the_count_says_how_many_came(broker: BrokerProcess) -> None:
    proc, lines = _receive(f"{broker.url}/partial", "--count", "10", "--timeout", "60")
    try:
        _publish(broker.url, "partial", ["a", "b", "c"])
        assert [lines.next(WAIT).rstrip("\n") for _ in range(3)] == ["a", "b", "c"]
        status, _, err = _interrupt(proc, lines)
    finally:
        _end(proc)
    assert status == 130, err
    (summary,) = err.splitlines()
    assert summary.startswith(f"received 3 of 10 messages from {broker.url}/partial: 3 accepted")
    assert summary.endswith("(interrupted)")
    # The three were accepted, not left to come again.
    with sockets.connect(broker.url, timeout=WAIT) as conn:
        receiver = conn.receiver("partial", credit=1)
        with pytest.raises(TimeoutError):
            receiver.receive(timeout=0.5)


def test_a_negative_count_is_a_usage_error() -> None:
    result = subprocess.run(
        [*amqp_sansio_command(), "receive", "amqp://127.0.0.1/q", "--count", "-1"],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].endswith("argument --count: must be 0 or more, not -1")


def test_an_interrupted_send_says_how_many_were_sent_and_what_came_of_them(
    broker: BrokerProcess,
) -> None:
    proc = subprocess.Popen(
        [*amqp_sansio_command(), "send", f"{broker.url}/big", "--count", "100000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with sockets.connect(broker.url, timeout=WAIT) as conn:  # wait until it is sending
            receiver = conn.receiver("big", credit=1)
            assert receiver.receive(timeout=WAIT) is not None
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=WAIT)  # (its pipes closed, whatever came of it)
    assert proc.returncode == 130, err
    assert err == ""
    (summary,) = out.splitlines()
    match = re.fullmatch(
        rf"sent ([\d,]+) of 100,000,000 messages to {re.escape(broker.url)}/big: "
        r"(.+) in [\d.]+ s \([\d,]+ msg/s\) \(interrupted\)",
        summary,
    )
    assert match, summary
    sent = int(match[1].replace(",", ""))
    counted = sum(int(n.replace(",", "")) for n in re.findall(r"([\d,]+) [a-z]", match[2]))
    assert 0 < sent < 100_000_000 and counted == sent  # every one sent is accounted for
