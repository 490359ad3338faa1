"""Conformance with rhea (issue 14): rhea 3 programs, written as rhea's users write them and
run with rhea's defaults, against ``amqp-sansio broker`` started as a user starts it; and
our clients (the ``amqp-sansio send``/``receive`` commands, the three adapters' ``connect(url)``)
against a rhea program serving AMQP with ``container.listen``.

The programs are in ``tests/interop/peers/rhea/`` (one per role; each prints one JSON result), rhea
pinned by its ``package.json`` and ``package-lock.json``. Without ``node``, or without rhea
installed there (``npm ci --prefix tests/interop/peers/rhea``), every test skips, saying which.
``docs/interop.rst`` ("Conformance matrix", "rhea") has what each test establishes.

One broker serves the module (each test has addresses of its own); the restart test has its
own, with ``--store``. Every wait is bounded: the programs time out by themselves
(``--timeout``), and each subprocess is killed past ``NODE_WAIT``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import aio, sockets
from support import node_peers
from support.broker_process import BrokerProcess, Lines, amqp_sansio_command

import amqp_sansio as a

PEERS = node_peers.folder("rhea")
NODE = node_peers.NODE
#: What a program may take, start to end; each also stops itself after PROGRAM_TIMEOUT_MS.
NODE_WAIT = 30.0
PROGRAM_TIMEOUT_MS = "10000"
LISTENER_TIMEOUT_MS = "300000"
BROKER_WAIT = 20.0
#: The 10 MiB body, byte i = (i * 31 + 7) mod 251, as tests/interop/peers/rhea/common.js makes it.
LARGE = 10 * 1024 * 1024


SKIP = node_peers.skip_reason("rhea", "rhea")


pytestmark = pytest.mark.skipif(SKIP is not None, reason=str(SKIP))


def pattern(size: int) -> bytes:
    return bytes((i * 31 + 7) % 251 for i in range(size))


def fresh(name: str) -> str:
    """An address no other test (or earlier run against the same broker) uses."""
    return f"rhea.{name}.{uuid.uuid4().hex[:8]}"


# -- processes --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    started = BrokerProcess(wait=BROKER_WAIT)
    yield started
    started.stop()


def node(program: str, *args: str) -> dict[str, Any]:
    """Run ``tests/interop/peers/rhea/PROGRAM.js ARGS`` and return the JSON result it prints."""
    return node_peers.run("rhea", program, *args, timeout_ms=PROGRAM_TIMEOUT_MS, wait=NODE_WAIT)


def node_ok(program: str, *args: str) -> dict[str, Any]:
    result = node(program, *args)
    assert result["_status"] == 0 and "error" not in result, result
    return result


class Program:
    """A program that runs beside the test (a server, a listener): its lines as they come,
    then its result."""

    def __init__(self, program: str, *args: str, timeout_ms: str = PROGRAM_TIMEOUT_MS) -> None:
        assert NODE is not None
        self.proc = subprocess.Popen(
            [NODE, f"{program}.js", *args, "--timeout", timeout_ms],
            cwd=PEERS,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines = Lines(self.proc)
        self.last: str | None = None

    def next(self) -> dict[str, Any]:
        self.last = self.lines.next(NODE_WAIT)
        result: dict[str, Any] = json.loads(self.last)
        return result

    def finish(self) -> dict[str, Any]:
        """The program's result: the last line it printed (it may have ended on a line
        already taken by :meth:`next`, when it failed at once)."""
        lines = self.lines.rest(NODE_WAIT) or ([self.last] if self.last else [])
        assert lines, f"{self.proc.args!r} printed nothing (status {self.proc.returncode})"
        result: dict[str, Any] = json.loads(lines[-1])
        result["_status"] = self.proc.returncode
        return result


def send(broker: BrokerProcess, address: str, count: int, *options: str) -> dict[str, Any]:
    return node_ok("send", "127.0.0.1", str(broker.port), address, str(count), *options)


def receive(broker: BrokerProcess, address: str, count: int, *options: str) -> dict[str, Any]:
    return node_ok("receive", "127.0.0.1", str(broker.port), address, str(count), *options)


def ids(n: int, prefix: str = "m") -> list[str]:
    return [f"{prefix}-{i}" for i in range(1, n + 1)]


def texts(n: int, prefix: str = "m") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}-{i}", "body": f"message {i}"} for i in range(1, n + 1)]


# -- 1. send and receive, with and without SASL ---------------------------------------------


def test_send_receive_with_rheas_defaults(broker: BrokerProcess) -> None:
    """``container.connect({host, port})``: no credentials, so rhea opens with the bare AMQP
    header (no SASL layer); at-least-once both ways, each message accepted."""
    address = fresh("plain")
    sent = send(broker, address, 20)
    assert sent["sent"] == ids(20)
    assert sent["outcomes"] == {"accepted": 20, "rejected": 0, "released": 0, "modified": 0}
    got = receive(broker, address, 20)
    assert got["received"] == texts(20)
    assert got["source"]["address"] == address
    assert receive(broker, address, 5, "--idle", "300")["received"] == []


@pytest.mark.parametrize(
    "options", [("--sasl-anonymous",), ("--username", "guest")], ids=["sasl_mechanisms", "username"]
)
def test_rheas_sasl_anonymous(broker: BrokerProcess, options: tuple[str, ...]) -> None:
    """rhea's ANONYMOUS (``sasl_mechanisms`` with ANONYMOUS enabled, or a ``username``
    without a password) sends as its initial response a NUL byte followed by the name,
    PLAIN's layout. The ANONYMOUS response is trace information (RFC 4505 section 2), and
    the "trace" profile prohibits control characters such as NUL (section 3); the trace is
    information only, so the broker drops it and lets rhea in as anonymous."""
    address = fresh("anonymous")
    sent = node("send", "127.0.0.1", str(broker.port), address, "2", *options)
    assert sent["_status"] == 0, sent
    assert sent["outcomes"]["accepted"] == 2, sent
    assert receive(broker, address, 2)["received"] == texts(2)


def test_username_password_is_taken_by_the_default_broker(broker: BrokerProcess) -> None:
    """``username``/``password``: rhea uses SASL PLAIN and nothing else. The default broker
    (open) takes any PLAIN login on its loopback port, as its 0-9-1 side does and as
    RabbitMQ takes guest/guest there: the messages go, and come back to a receiver."""
    address = fresh("plain-sasl")
    credentials = ("--username", "guest", "--password", "guest")
    sent = node("send", "127.0.0.1", str(broker.port), address, "2", *credentials)
    assert sent["_status"] == 0, sent
    assert sent["outcomes"]["accepted"] == 2, sent
    assert receive(broker, address, 2)["received"] == texts(2)
    assert "user guest (PLAIN)" in broker.wait_for_log("user guest (PLAIN)")


# -- 2. request/response through an anonymous relay -------------------------------------------


def test_request_response_through_anonymous_relay(broker: BrokerProcess) -> None:
    """A rhea server answers through one sender with ``{target: {}}`` (a target without an
    address: the broker routes each reply by its ``to``); the rhea client's reply-to is a
    dynamic node (``{source: {dynamic: true}}``)."""
    address = fresh("requests")
    server = Program("rpc_server", "127.0.0.1", str(broker.port), address, "3")
    if server.next() != {"ready": True}:
        raise AssertionError(f"the server did not start: {server.finish()}")
    try:
        client = node("rpc_client", "127.0.0.1", str(broker.port), address, "3")
    finally:
        served = server.finish()
    assert served["_status"] == 0 and "error" not in served, served
    assert client["_status"] == 0 and "error" not in client, client
    assert client["reply_to"]
    assert client["replies"] == [
        {"correlation_id": f"request-{i}", "body": f"REQUEST {i}"} for i in (1, 2, 3)
    ]
    assert served["answered"] == ["request-1", "request-2", "request-3"]
    assert served["accepted"] == 3


def test_request_response_through_direct_reply_to(broker: BrokerProcess) -> None:
    """As above, with RabbitMQ 4.2's direct reply-to: the rhea client's dynamic source has
    the capability ``rabbitmq:volatile-queue``, and its address is a name the replies go to
    directly, settled (docs/broker.rst, "Direct reply-to")."""
    address = fresh("requests")
    server = Program("rpc_server", "127.0.0.1", str(broker.port), address, "3")
    if server.next() != {"ready": True}:
        raise AssertionError(f"the server did not start: {server.finish()}")
    try:
        client = node("rpc_client", "127.0.0.1", str(broker.port), address, "3", "--volatile")
    finally:
        served = server.finish()
    assert served["_status"] == 0 and "error" not in served, served
    assert client["_status"] == 0 and "error" not in client, client
    assert client["reply_to"].startswith("amq.rabbitmq.reply-to.")
    assert client["replies"] == [
        {"correlation_id": f"request-{i}", "body": f"REQUEST {i}"} for i in (1, 2, 3)
    ]
    assert client["settled"] == 3
    assert served["answered"] == ["request-1", "request-2", "request-3"]


def test_sender_without_target_is_refused(broker: BrokerProcess) -> None:
    """``connection.open_sender()`` with no options attaches with no target at all, which
    core spec 2.7.3 (attach, target) makes a link that never permits messages (rhea's own anonymous
    sender, ``connection.send()``, uses ``{target: {}}``). The broker refuses it with
    ``amqp:invalid-field``, and rhea reports that on the sender."""
    refused = node(
        "rpc_server", "127.0.0.1", str(broker.port), fresh("no-target"), "1", "--relay", "none"
    )
    assert refused["_status"] == 3, refused
    assert refused["error"] == "sender_error", refused
    assert refused["condition"] == "amqp:invalid-field", refused


# -- 3. transactions --------------------------------------------------------------------------


@pytest.mark.parametrize("discharge", ["commit", "rollback"])
def test_transactional_accept(broker: BrokerProcess, discharge: str) -> None:
    """rhea has no transaction API; a rhea program drives the coordinator itself (see
    ``txn.js``): declare, accept two of four messages in the transaction, discharge. On
    commit they are gone; on rollback they come back (rhea had settled them, so they take
    the broker's default outcome, core spec 4.4.4.2)."""
    address = fresh(f"txn-{discharge}")
    send(broker, address, 4)
    done = node_ok("txn", "127.0.0.1", str(broker.port), address, "2", "--discharge", discharge)
    assert len(bytes.fromhex(done["txn_id"])) >= 1
    assert done["retired"] == ["m-1", "m-2"]
    assert done["discharge"] == "accepted"
    left = [m["id"] for m in receive(broker, address, 4, "--idle", "500")["received"]]
    assert left == (["m-3", "m-4"] if discharge == "commit" else ["m-1", "m-2", "m-3", "m-4"])


# -- 4. browsing ------------------------------------------------------------------------------


def test_browsing_leaves_the_messages(broker: BrokerProcess) -> None:
    """``source: {address, distribution_mode: 'copy'}``: the browser sees every message,
    twice over, and a consumer then takes them all."""
    address = fresh("browse")
    send(broker, address, 5)
    for _ in range(2):
        browsed = receive(broker, address, 5, "--copy")
        assert browsed["received"] == texts(5)
        assert browsed["source"]["distribution_mode"] == "copy"
    assert receive(broker, address, 5)["received"] == texts(5)


# -- 5. selectors -----------------------------------------------------------------------------


def test_selector_receives_exactly_the_matching_messages(broker: BrokerProcess) -> None:
    """``filter: rhea.filter.selector("colour = 'red'")``: the broker applies the filter
    (and names it in its answering source, core spec 3.5.8), so the receiver gets the red
    messages only, and the others stay for a consumer without one."""
    address = fresh("selector")
    send(broker, address, 9, "--colours", "red,green,blue")
    red = receive(broker, address, 10, "--selector", "colour = 'red'", "--idle", "500")
    assert red["source"]["filter"] == ["jms-selector"], red["source"]
    assert [(m["id"], m["colour"]) for m in red["received"]] == [
        ("m-1", "red"),
        ("m-4", "red"),
        ("m-7", "red"),
    ]
    rest = receive(broker, address, 6)
    assert [m["id"] for m in rest["received"]] == ["m-2", "m-3", "m-5", "m-6", "m-8", "m-9"]


# -- 6. durable subscriptions -----------------------------------------------------------------


def durable_subscriber(
    broker: BrokerProcess, topic: str, container_id: str, count: int, *options: str
) -> dict[str, Any]:
    return receive(
        broker,
        topic,
        count,
        "--durable",
        "--name",
        "subscription",
        "--container-id",
        container_id,
        *options,
    )


def test_durable_subscription_across_a_detach(broker: BrokerProcess) -> None:
    """A fixed container id and link name, ``source: {address, durable: 2, expiry_policy:
    'never'}``: after ``receiver.detach()`` (not close) the subscription stays, and the
    messages published meanwhile arrive when the same link attaches again."""
    topic = "topic/" + fresh("durable")
    container_id = fresh("subscriber")
    first = durable_subscriber(broker, topic, container_id, 0, "--detach")
    assert first["source"]["address"] == topic, first
    send(broker, topic, 4)
    again = durable_subscriber(broker, topic, container_id, 4, "--detach")
    assert again["received"] == texts(4)
    send(broker, topic, 2, "--prefix", "later")
    assert durable_subscriber(broker, topic, container_id, 2)["received"] == texts(2, "later")


def test_durable_subscription_across_a_broker_restart(tmp_path: Path) -> None:
    """The same across ``amqp-sansio broker --store DIR`` stopped with SIGTERM and started
    again on the same port and store: durable messages published to the detached durable
    subscription before the stop arrive after the restart."""
    store = tmp_path / "store"
    topic = "topic/" + fresh("restart")
    container_id = fresh("subscriber")
    first = BrokerProcess(store=store, wait=BROKER_WAIT)
    try:
        durable_subscriber(first, topic, container_id, 0, "--detach")
        send(first, topic, 3, "--durable")
    finally:
        first.stop()
    second = BrokerProcess(port=first.port, store=store, wait=BROKER_WAIT)
    try:
        assert durable_subscriber(second, topic, container_id, 3)["received"] == texts(3)
    finally:
        second.stop()


# -- 7. drain ---------------------------------------------------------------------------------


def test_drain_on_an_empty_queue(broker: BrokerProcess) -> None:
    """``receiver.drain = true; receiver.add_credit(5)`` with nothing queued: the broker
    gives all the credit back at once (a flow with drain, credit 0, delivery-count
    advanced by 5, core spec 2.6.7), and rhea raises ``receiver_drained``."""
    done = node_ok("drain", "127.0.0.1", str(broker.port), fresh("drain-empty"), "5")
    assert done["received"] == []
    assert done["drained"] == {"credit": 0, "delivery_count": 5}


def test_drain_on_a_queue_with_fewer_messages_than_credit(broker: BrokerProcess) -> None:
    """Three queued, credit 5 in drain mode: the three come, then the rest of the credit
    is given back (delivery-count 5), then ``receiver_drained``."""
    address = fresh("drain")
    send(broker, address, 3)
    done = node_ok("drain", "127.0.0.1", str(broker.port), address, "5")
    assert done["received"] == texts(3)
    assert done["drained"] == {"credit": 0, "delivery_count": 5}


# -- 8. a large message ------------------------------------------------------------------------


def test_ten_mebibyte_message(broker: BrokerProcess) -> None:
    """A 10 MiB data section: rhea splits it into frames of the broker's max-frame-size
    (64 KiB, from its open) and the broker sends it back in frames of at most rhea's
    (rhea announces none: 4 GiB - 1, so the broker's own limit applies); the body comes
    back byte for byte."""
    address = fresh("large")
    sent = send(broker, address, 1, "--size", str(LARGE))
    assert sent["outcomes"]["accepted"] == 1
    got = receive(broker, address, 1)
    expected = {"length": LARGE, "sha256": hashlib.sha256(pattern(LARGE)).hexdigest()}
    assert got["received"] == [{"id": "m-1", "body": expected}]


# -- the other direction: our clients, a rhea listener ---------------------------------------


class Listener:
    """``listener.js``: rhea's ``container.listen({port})`` serving in-memory queues."""

    def __init__(self, *options: str) -> None:
        # It serves the whole module; the time-out only keeps it from outliving the tests.
        self.program = Program("listener", "0", *options, timeout_ms=LISTENER_TIMEOUT_MS)
        self.port = int(self.program.next()["port"])

    def url(self, address: str) -> str:
        return f"amqp://127.0.0.1:{self.port}/{address}"

    def stop(self) -> dict[str, Any]:
        self.program.proc.send_signal(signal.SIGTERM)
        return self.program.finish()


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    started = Listener()
    yield started
    started.stop()


def messages(n: int, prefix: str) -> list[a.Message]:
    return [
        a.Message(properties=a.Properties(message_id=f"{prefix}-{i}"), body=f"{prefix} {i}")
        for i in range(n)
    ]


def test_our_commands_with_a_rhea_listener(listener: Listener) -> None:
    """``amqp-sansio send`` and ``receive`` with their defaults (SASL ANONYMOUS, which rhea's
    listener offers by default)."""
    url = listener.url(fresh("cli"))
    sent = subprocess.run(
        [*amqp_sansio_command(), "send", url, "--count", "5"],
        capture_output=True,
        text=True,
        timeout=NODE_WAIT,
    )
    assert sent.returncode == 0, sent.stderr
    assert "5 accepted" in sent.stdout, sent.stdout
    got = subprocess.run(
        [*amqp_sansio_command(), "receive", url, "--count", "5", "--print"],
        capture_output=True,
        text=True,
        timeout=NODE_WAIT,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == [f"message {i}" for i in range(1, 6)]


def test_our_commands_without_sasl_with_a_rhea_listener(listener: Listener) -> None:
    """``--sasl-mechanism none``: the bare AMQP header, which rhea's listener takes too (it
    offers ANONYMOUS without requiring SASL)."""
    url = listener.url(fresh("cli-bare"))
    for command in (["send", url, "--count", "2"], ["receive", url, "--count", "2", "--print"]):
        done = subprocess.run(
            [*amqp_sansio_command(), *command, "--sasl-mechanism", "none"],
            capture_output=True,
            text=True,
            timeout=NODE_WAIT,
        )
        assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["message 1", "message 2"]


def test_sockets_adapter_with_a_rhea_listener(listener: Listener) -> None:
    url = listener.url(fresh("sockets"))
    with sockets.connect(url) as conn:
        sender = conn.sender()
        for message in messages(3, "sockets"):
            assert sender.send(message) == a.Accepted()
        receiver = conn.receiver()
        got = [receiver.receive(timeout=10) for _ in range(3)]
        for delivery in got:
            assert delivery is not None
            delivery.accept()
    assert [d.message.body for d in got if d is not None] == [
        a.AmqpValue(f"sockets {i}") for i in range(3)
    ]
    assert [
        d.message.properties.message_id for d in got if d is not None and d.message.properties
    ] == [f"sockets-{i}" for i in range(3)]


def test_asyncio_adapter_with_a_rhea_listener(listener: Listener) -> None:
    url = listener.url(fresh("aio"))

    async def run() -> list[Any]:
        async with aio.connect(url) as conn:
            sender = await conn.sender()
            for message in messages(3, "aio"):
                assert await sender.send(message) == a.Accepted()
            receiver = await conn.receiver()
            bodies = []
            for _ in range(3):
                delivery = await asyncio.wait_for(receiver.receive(), 10)
                assert delivery is not None
                delivery.accept()
                bodies.append(delivery.message.body)
            return bodies

    assert asyncio.run(run()) == [a.AmqpValue(f"aio {i}") for i in range(3)]


def test_trio_adapter_with_a_rhea_listener(listener: Listener) -> None:
    trio = pytest.importorskip("trio", reason="trio is in the 'trio' and 'test' extras")
    from amqp_sansio.adapters import trio_adapter

    url = listener.url(fresh("trio"))

    async def run() -> list[Any]:
        async with trio_adapter.connect(url) as conn:
            sender = await conn.sender()
            for message in messages(3, "trio"):
                assert await sender.send(message) == a.Accepted()
            receiver = await conn.receiver()
            bodies = []
            with trio.fail_after(10):
                for _ in range(3):
                    delivery = await receiver.receive()
                    assert delivery is not None
                    delivery.accept()
                    bodies.append(delivery.message.body)
            return bodies

    assert trio.run(run) == [a.AmqpValue(f"trio {i}") for i in range(3)]


@pytest.fixture
def bare_listener() -> Iterator[Listener]:
    """A rhea listener whose program does not set the link's terminus (``--bare``: no
    ``set_source``/``set_target`` in its ``sender_open``/``receiver_open`` handlers): rhea
    then answers every attach with a null source or target, and sends no detach. Core spec
    2.6.3 makes a null terminus in the answer a refusal, which the refusing peer must follow
    with a detach; rhea leaves the detach out."""
    started = Listener("--bare")
    yield started
    held = started.stop()
    assert held["counts"]["received"] == 0, held


def test_our_commands_take_a_null_terminus_as_a_refusal(bare_listener: Listener) -> None:
    for command in ("send", "receive"):
        refused = subprocess.run(
            [*amqp_sansio_command(), command, bare_listener.url("orders"), "--timeout", "5"],
            capture_output=True,
            text=True,
            timeout=NODE_WAIT,
        )
        assert refused.returncode == 3, refused
        assert "refused the link" in refused.stderr, refused.stderr


@pytest.mark.parametrize("adapter", ["sockets", "aio", "trio"])
@pytest.mark.parametrize("kind", ["sender", "receiver"])
def test_adapters_take_a_null_terminus_as_a_refusal(
    bare_listener: Listener, adapter: str, kind: str
) -> None:
    """Each adapter raises :class:`LinkRefusedError` as soon as the null terminus comes,
    although rhea never sends the detach (without it, the attach used to time out)."""
    url = bare_listener.url("orders")
    started = time.monotonic()
    if adapter == "sockets":
        with sockets.connect(url) as conn, pytest.raises(sockets.LinkRefusedError) as raised:
            getattr(conn, kind)(timeout=30)
    elif adapter == "aio":

        async def run() -> None:
            async with aio.connect(url) as conn:
                await asyncio.wait_for(getattr(conn, kind)(), 30)

        with pytest.raises(aio.LinkRefusedError) as raised:
            asyncio.run(run())
    else:
        trio = pytest.importorskip("trio", reason="trio is in the 'trio' and 'test' extras")
        from amqp_sansio.adapters import trio_adapter

        async def run_trio() -> None:
            async with trio_adapter.connect(url) as conn:
                with trio.fail_after(30):
                    await getattr(conn, kind)()

        with pytest.raises(trio_adapter.LinkRefusedError) as raised:
            trio.run(run_trio)
    elapsed = time.monotonic() - started
    assert elapsed < 5, f"the refusal took {elapsed:.1f} s"
    assert raised.value.error is None  # rhea gave no condition
    assert "refused the link" in str(raised.value)


def test_skip_reason_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Where rhea is missing, the skip says how to install it (the reason the whole module
    skips with; checked here against an empty folder)."""
    monkeypatch.setattr(node_peers, "folder", lambda peer: tmp_path)
    (tmp_path / "package.json").write_text(json.dumps({"dependencies": {"rhea": "3.0.5"}}))
    install = "npm ci --prefix tests/interop/peers/rhea"
    assert node_peers.skip_reason("rhea", "rhea") == f"rhea is not installed: run `{install}`"
