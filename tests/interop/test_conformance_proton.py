"""Conformance with Qpid Proton (python-qpid-proton), both ways, each side with its defaults.

Proton programs written as Proton's users write them (``tests/interop/peers/proton/``: the
event-driven ``Container`` + ``MessagingHandler``; ``BlockingConnection`` in this file) run
against ``amqp-sansio broker`` started as a user starts it: the command, in a process of its
own, with no option but ``--port`` (and ``--store DIR`` for the restart). And the other way:
our ``amqp-sansio send``/``receive`` commands and the three adapters' ``connect(url)``, with
no extras, against a small broker written with Proton's ``Container.listen``
(``tests/interop/peers/proton/broker.py``).

Every Proton program runs in a subprocess with a bounded timeout (a blocking scenario in a
thread with a bound), so a hang fails its test; each prints one JSON line saying what it
sent, received and met, which the tests compare with what was sent, by id and body.
``docs/interop.rst`` ("Conformance matrix") has the table of what is covered.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import queue
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from amqp_sansio.adapters import aio, sockets
from support.broker_process import BrokerProcess, amqp_sansio_command, free_port

import amqp_sansio as amqp

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.utils import BlockingConnection  # noqa: E402

PEERS = Path(__file__).parent / "peers" / "proton"
#: The bound of one Proton program's run, or of one blocking scenario.
RUN_TIMEOUT = 60.0
#: The bound of one wait inside a program or a blocking call.
WAIT = 20.0
#: How long the checks that a queue is empty wait for a message that should not come.
QUIET = 0.3

T = TypeVar("T")


# -- processes -----------------------------------------------------------------------------


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next line the process prints, waiting at most ``timeout`` seconds (from a thread:
    the pipe's reader buffers, so ``select`` on it would not see a line already read)."""
    assert proc.stdout is not None
    stdout = proc.stdout
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        return lines.get(timeout=timeout)
    except queue.Empty:
        proc.kill()
        proc.wait()
        stdout.close()
        pytest.fail(f"{proc.args!r} printed nothing within {timeout} s")


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    """One broker for the module: every test uses addresses of its own."""
    b = BrokerProcess(wait=WAIT)
    yield b
    b.stop()


def run(program: str, *args: str, timeout: float = RUN_TIMEOUT) -> dict[str, Any]:
    """Run a Proton program of ``tests/interop/peers/proton`` to its end; its JSON report."""
    command = [sys.executable, str(PEERS / program), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{program} {' '.join(args)} hung for {timeout} s: {e.stdout!r} {e.stderr!r}")
    lines = done.stdout.strip().splitlines()
    assert done.returncode == 0 and lines, (program, done.returncode, done.stdout, done.stderr)
    report: dict[str, Any] = json.loads(lines[-1])
    return report


def bounded(scenario: Callable[[], T], timeout: float = RUN_TIMEOUT) -> T:
    """Run a blocking scenario in a thread; fail the test if it has not ended in time."""
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            result.append(scenario())
        except BaseException as e:  # re-raised in the test's thread
            error.append(e)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        pytest.fail(f"the blocking scenario hung for {timeout} s")
    if error:
        raise error[0]
    return result[0]


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


def ids(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i}" for i in range(1, count + 1)]


def messages(prefix: str, count: int) -> list[dict[str, Any]]:
    """What ``send.py --prefix PREFIX --count COUNT`` sends, as ``receive.py`` reports it."""
    return [{"id": f"{prefix}-{i}", "body": f"{prefix} {i}"} for i in range(1, count + 1)]


def received(report: dict[str, Any]) -> list[dict[str, Any]]:
    assert report["errors"] == [], report
    return [{"id": m["id"], "body": m["body"]} for m in report["received"]]


def send(url: str, address: str, count: int, *options: str, prefix: str = "message") -> None:
    report = run("send.py", url, address, "--count", str(count), "--prefix", prefix, *options)
    assert report["errors"] == [], report
    assert report["sent"] == report["accepted"] == ids(prefix, count), report


def assert_empty(url: str, address: str) -> None:
    """Nothing is left at ``address``: a drain of ten credits brings nothing."""
    report = run("drain.py", url, address, "--credit", "10")
    assert received(report) == [] and report["credit"] == 0, report


# -- 1. send and receive, with acceptance -------------------------------------------------


def test_send_receive_event_driven(broker: BrokerProcess) -> None:
    address = unique("send-receive")
    send(broker.url, address, 5)
    report = run("receive.py", broker.url, address, "--count", "5")
    assert received(report) == messages("message", 5)
    assert_empty(broker.url, address)  # each was accepted: none comes back


def test_send_receive_blocking(broker: BrokerProcess) -> None:
    address = unique("blocking")

    def scenario() -> list[tuple[Any, Any]]:
        conn = BlockingConnection(broker.url, timeout=WAIT)
        try:
            sender = conn.create_sender(address)
            for i in range(1, 6):
                delivery = sender.send(Message(id=f"b-{i}", body=f"blocking {i}"))
                assert delivery.remote_state == proton.Delivery.ACCEPTED
            receiver = conn.create_receiver(address, credit=10)
            got = []
            for _ in range(5):
                m = receiver.receive(timeout=WAIT)
                got.append((m.id, m.body))
                receiver.accept()
            with pytest.raises(proton.Timeout):
                receiver.receive(timeout=QUIET)
            return got
        finally:
            conn.close()

    assert bounded(scenario) == [(f"b-{i}", f"blocking {i}") for i in range(1, 6)]


# -- 2. request/response through an anonymous relay ---------------------------------------


def request_response(url: str) -> None:
    """``server.py`` serves three requests of ``client.py`` at ``url``."""
    service = unique("service")
    command = [sys.executable, str(PEERS / "server.py"), url, service, "--count", "3"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as server:
        try:
            first = read_line(server, WAIT).strip()
            if first != "ready":  # the server refused to start: why
                out, err = server.communicate(timeout=WAIT)
                pytest.fail(f"server.py did not start: {first} {out} {err}")
            client = run("client.py", url, service, "one", "two", "three")
            out, err = server.communicate(timeout=RUN_TIMEOUT)
        finally:
            if server.poll() is None:
                server.kill()
    assert client["errors"] == [] and client["reply_to"], client
    assert client["replies"] == [
        {"correlation_id": f"request-{i}", "body": text}
        for i, text in enumerate(["ONE", "TWO", "THREE"], 1)
    ]
    report = json.loads(out.strip().splitlines()[-1])
    assert report == {"served": ids("request", 3), "accepted": 3, "errors": []}, err
    assert server.returncode == 0


def test_request_response_anonymous_relay(broker: BrokerProcess) -> None:
    request_response(broker.url)


# -- 3. transactions ----------------------------------------------------------------------


def test_transactional_send_commit_and_abort(broker: BrokerProcess) -> None:
    address = unique("tx-send")
    committed = run("tx_send.py", broker.url, address, "--count", "4", "--commit")
    assert committed == {"sent": ids("message", 4), "ended": "committed", "errors": []}
    aborted = run("tx_send.py", broker.url, address, "--count", "3", "--prefix", "no", "--abort")
    assert aborted == {"sent": ids("no", 3), "ended": "aborted", "errors": []}
    # The committed four arrive; the aborted three never do.
    report = run("drain.py", broker.url, address, "--credit", "10")
    assert received(report) == messages("message", 4)


def test_transactional_accept(broker: BrokerProcess) -> None:
    address = unique("tx-accept")
    send(broker.url, address, 3)
    aborted = run("tx_receive.py", broker.url, address, "--count", "3", "--abort")
    assert (aborted["ended"], received(aborted)) == ("aborted", messages("message", 3))
    # An aborted transaction's accepts do not apply: the messages are there again.
    committed = run("tx_receive.py", broker.url, address, "--count", "3", "--commit")
    assert (committed["ended"], received(committed)) == ("committed", messages("message", 3))
    assert_empty(broker.url, address)


# -- 4. browsing --------------------------------------------------------------------------


def test_browse_with_copy(broker: BrokerProcess) -> None:
    address = unique("browse")
    send(broker.url, address, 3)
    for _ in range(2):  # browsed twice: the messages stay
        report = run("receive.py", broker.url, address, "--count", "3", "--copy")
        assert received(report) == messages("message", 3)
    report = run("drain.py", broker.url, address, "--credit", "10")
    assert received(report) == messages("message", 3)


# -- 5. selectors -------------------------------------------------------------------------


def test_selector(broker: BrokerProcess) -> None:
    address = unique("selector")
    # Message i has colour blue, green, red for i mod 3 = 1, 2, 0.
    send(broker.url, address, 6, "--property", "colour=red,blue,green")
    report = run("receive.py", broker.url, address, "--count", "2", "--selector", "colour = 'red'")
    assert report["filter"] == ["selector"], report  # the broker applies the filter
    assert received(report) == [messages("message", 6)[i] for i in (2, 5)]
    # The others were not taken.
    rest = run("drain.py", broker.url, address, "--credit", "10")
    assert received(rest) == [messages("message", 6)[i] for i in (0, 1, 3, 4)]


def test_selector_that_does_not_parse_is_refused(broker: BrokerProcess) -> None:
    # Proton sends whatever string it is given; the broker refuses the link, saying why.
    address = unique("bad-selector")
    send(broker.url, address, 1)
    report = run("receive.py", broker.url, address, "--selector", "colour = ", "--timeout", "5")
    assert report["received"] == [], report
    assert len(report["errors"]) == 1 and "amqp:invalid-field" in report["errors"][0], report
    assert received(run("drain.py", broker.url, address, "--credit", "10")) == messages(
        "message", 1
    )


# -- 6. durable subscriptions -------------------------------------------------------------


def subscribe(url: str, topic: str, *options: str) -> dict[str, Any]:
    args = ["--container-id", "proton-subscriber", "--name", "subscription", *options]
    report = run("durable_subscribe.py", url, topic, *args)
    assert report["errors"] == [], report
    return report


def test_durable_subscription_across_a_detach(broker: BrokerProcess) -> None:
    topic = "topic/" + unique("news")
    report = subscribe(broker.url, topic, "--before", "2", "--during", "3", "--end", "detach")
    assert (report["before"], report["during"]) == (ids("before", 2), ids("during", 3))
    # The subscription outlives the connection too: what is published meanwhile waits.
    send(broker.url, topic, 2, prefix="later")
    report = subscribe(broker.url, topic, "--expect", "2", "--end", "close")
    assert report["expected"] == ids("later", 2)


def test_durable_subscription_across_a_restart(tmp_path: Path) -> None:
    first = BrokerProcess(store=tmp_path, wait=WAIT)
    try:
        topic = "topic/" + unique("alerts")
        report = subscribe(first.url, topic, "--before", "1", "--end", "detach")
        assert report["before"] == ids("before", 1)
        send(first.url, topic, 3, "--durable", prefix="durable")
    finally:
        status = first.stop()
    assert status == 0
    second = BrokerProcess(port=first.port, store=tmp_path, wait=WAIT)  # the same port, store
    try:
        assert second.url == first.url
        report = subscribe(second.url, topic, "--expect", "3", "--end", "close")
        assert report["expected"] == ids("durable", 3)
    finally:
        second.stop()


# -- 7. drain -----------------------------------------------------------------------------


def test_drain_event_driven(broker: BrokerProcess) -> None:
    address = unique("drain")
    empty = run("drain.py", broker.url, address, "--credit", "5")
    assert (received(empty), empty["credit"]) == ([], 0)  # the credit comes back
    send(broker.url, address, 3)
    report = run("drain.py", broker.url, address, "--credit", "5")
    assert (received(report), report["credit"]) == (messages("message", 3), 0)


def test_drain_blocking(broker: BrokerProcess) -> None:
    address = unique("drain-blocking")

    def scenario() -> tuple[int, list[Any], int]:
        conn = BlockingConnection(broker.url, timeout=WAIT)
        try:
            receiver = conn.create_receiver(address, credit=0)
            link = receiver.link
            link.drain(5)
            # Drained: the broker's flow gives the credit back (core spec 2.6.7).
            conn.wait(lambda: link.credit == 0, timeout=WAIT, msg="draining an empty queue")
            empty_credit = link.credit
            sender = conn.create_sender(address)
            for i in range(1, 4):
                sender.send(Message(id=f"d-{i}", body=f"drained {i}"))
            link.drain(5)
            conn.wait(lambda: link.credit == 0, timeout=WAIT, msg="draining three")
            credit = link.credit
            got = []
            for _ in range(3):  # already here: the drain brought them
                m = receiver.receive(timeout=WAIT)
                got.append((m.id, m.body))
            receiver.accept()
            with pytest.raises(proton.Timeout):
                receiver.receive(timeout=QUIET)  # nothing else came
            return empty_credit, got, credit
        finally:
            conn.close()

    empty_credit, got, credit = bounded(scenario)
    assert empty_credit == 0
    assert (got, credit) == ([(f"d-{i}", f"drained {i}") for i in range(1, 4)], 0)


# -- 8. a 10 MiB message ------------------------------------------------------------------

BIG = 10 * 1024 * 1024


def payload(i: int, size: int) -> bytes:
    """What ``send.py --size`` sends as message ``i``."""
    block = hashlib.sha256(str(i).encode()).digest() * 2048
    return (block * (size // len(block) + 1))[:size]


def test_large_message(broker: BrokerProcess) -> None:
    address = unique("large")
    send(broker.url, address, 1, "--size", str(BIG))
    expected = payload(1, BIG)

    def scenario() -> bytes:
        conn = BlockingConnection(broker.url, timeout=WAIT)
        try:
            receiver = conn.create_receiver(address, credit=1)
            m = receiver.receive(timeout=WAIT)
            receiver.accept()
            assert isinstance(m.body, bytes | memoryview)  # (Proton gives a large one as a view)
            return bytes(m.body)
        finally:
            conn.close()

    assert bounded(scenario) == expected
    # And with the event-driven receiver, sent by the blocking client.
    bounded(lambda: _blocking_send(broker.url, address, Message(id="big", body=expected)))
    report = run("receive.py", broker.url, address)
    assert report["errors"] == [], report
    digest = {"length": BIG, "sha256": hashlib.sha256(expected).hexdigest()}
    assert [(m["id"], m["body"]) for m in report["received"]] == [("big", digest)]


def _blocking_send(url: str, address: str, message: Message) -> None:
    conn = BlockingConnection(url, timeout=WAIT)
    try:
        delivery = conn.create_sender(address).send(message)
        assert delivery.remote_state == proton.Delivery.ACCEPTED
    finally:
        conn.close()


# -- the other way: our clients against a Proton listener -----------------------------------


class ProtonBroker:
    """``tests/interop/peers/proton/broker.py``: a broker written with Proton's
    ``Container.listen``."""

    def __init__(self) -> None:
        self.url = f"amqp://127.0.0.1:{free_port()}"
        command = [sys.executable, str(PEERS / "broker.py"), self.url]
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        line = read_line(self.proc, WAIT)
        assert line.strip() == "listening", (line, self.proc.poll())

    def stop(self) -> dict[str, int]:
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=WAIT)
        stats: dict[str, int] = json.loads(out.strip().splitlines()[-1])
        return stats


@pytest.fixture(scope="module")
def proton_broker() -> Iterator[ProtonBroker]:
    b = ProtonBroker()
    yield b
    stats = b.stop()
    assert stats["stored"] == stats["delivered"], stats  # every test took what it sent


def test_cli_against_a_proton_listener(proton_broker: ProtonBroker) -> None:
    url = f"{proton_broker.url}/{unique('cli')}"
    command = amqp_sansio_command()
    sent = subprocess.run(
        [*command, "send", url, "--count", "5"], capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert sent.returncode == 0, sent.stderr
    assert ": 5 accepted in " in sent.stdout, sent.stdout
    got = subprocess.run(
        [*command, "receive", url, "--count", "5", "--print"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == [f"message {i}" for i in range(1, 6)]


def body_text(message: amqp.Message) -> Any:
    body = message.body
    return body.value if isinstance(body, amqp.AmqpValue | amqp.Data) else body


def test_sockets_adapter_against_a_proton_listener(proton_broker: ProtonBroker) -> None:
    url = f"{proton_broker.url}/{unique('sockets')}"

    def scenario() -> list[tuple[Any, Any]]:
        with sockets.connect(url) as conn:
            sender = conn.sender()
            for i in range(1, 6):
                m = amqp.Message(properties=amqp.Properties(message_id=f"s-{i}"), body=f"s {i}")
                assert sender.send(m) == amqp.Accepted()
            receiver = conn.receiver()
            got = []
            for _ in range(5):
                delivery = receiver.receive(timeout=WAIT)
                props = delivery.message.properties
                got.append((props and props.message_id, body_text(delivery.message)))
                delivery.accept()
            return got

    assert bounded(scenario) == [(f"s-{i}", f"s {i}") for i in range(1, 6)]


async def _async_scenario(conn: Any, prefix: str) -> list[tuple[Any, Any]]:
    sender = await conn.sender()
    for i in range(1, 6):
        m = amqp.Message(properties=amqp.Properties(message_id=f"{prefix}-{i}"), body=f"{i}")
        assert await sender.send(m) == amqp.Accepted()
    receiver = await conn.receiver()
    got = []
    for _ in range(5):
        delivery = await receiver.receive()
        props = delivery.message.properties
        got.append((props and props.message_id, body_text(delivery.message)))
        delivery.accept()
    return got


def test_asyncio_adapter_against_a_proton_listener(proton_broker: ProtonBroker) -> None:
    url = f"{proton_broker.url}/{unique('asyncio')}"

    async def main() -> list[tuple[Any, Any]]:
        async with aio.connect(url) as conn:
            return await _async_scenario(conn, "a")

    got = asyncio.run(asyncio.wait_for(main(), RUN_TIMEOUT))
    assert got == [(f"a-{i}", f"{i}") for i in range(1, 6)]


def test_trio_adapter_against_a_proton_listener(proton_broker: ProtonBroker) -> None:
    trio = pytest.importorskip("trio", reason="the trio extra is not installed")
    from amqp_sansio.adapters import trio_adapter

    url = f"{proton_broker.url}/{unique('trio')}"

    async def main() -> list[tuple[Any, Any]]:
        with trio.fail_after(RUN_TIMEOUT):
            async with trio_adapter.connect(url) as conn:
                return await _async_scenario(conn, "t")

    assert trio.run(main) == [(f"t-{i}", f"{i}") for i in range(1, 6)]


def test_request_response_control_through_the_proton_listener(
    proton_broker: ProtonBroker,
) -> None:
    # The same two programs through Proton's own listener (which offers ANONYMOUS-RELAY):
    # they are right, so a failure against our broker is our broker's.
    request_response(proton_broker.url)


def test_proton_sends_our_clients_receive_through_the_proton_listener(
    proton_broker: ProtonBroker,
) -> None:
    # Messages Proton wrote, read by our engine: the same ids and bodies.
    address = unique("mixed")
    send(proton_broker.url, address, 4, prefix="from-proton")

    def scenario() -> list[tuple[Any, Any]]:
        with sockets.connect(f"{proton_broker.url}/{address}") as conn:
            receiver = conn.receiver()
            got = []
            for _ in range(4):
                delivery = receiver.receive(timeout=WAIT)
                props = delivery.message.properties
                got.append((props and props.message_id, body_text(delivery.message)))
                delivery.accept()
            return got

    expected = [(m["id"], m["body"]) for m in messages("from-proton", 4)]
    assert bounded(scenario) == expected
