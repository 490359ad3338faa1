"""rhea over the AMQP WebSocket binding (issue 30): rhea 3 with the ``ws`` package, written
as rhea's README has it, against ``amqp-sansio broker --ws-port 0`` (and ``--wss-port 0``,
inside TLS, with a trustme certificate); and our clients (each
adapter, ``ws://`` URLs) against rhea serving AMQP over a ``ws`` WebSocket server
(``container.websocket_accept``). docs/websockets.rst ("Interoperability") says what this
establishes.

The programs are ``tests/interop/peers/rhea/ws_client.js`` and ``ws_listener.js``; rhea and
``ws`` are pinned by that directory's ``package.json`` and ``package-lock.json``. Without
``node``, or without those packages installed (``npm ci --prefix tests/interop/peers/rhea``),
every test skips, saying which. Every wait is bounded: the programs stop themselves
(``--timeout``) and each subprocess is killed past ``NODE_WAIT``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from support import node_peers
from support.adapters import ADAPTERS, Adapter, aw
from support.broker_process import BrokerProcess, Lines, amqp_sansio_command

import amqp_sansio as a

PEERS = node_peers.folder("rhea")
NODE = node_peers.NODE
NODE_WAIT = 20.0
PROGRAM_TIMEOUT_MS = "8000"
LISTENER_TIMEOUT_MS = "120000"
SKIP = node_peers.skip_reason("rhea", "rhea", "ws")


pytestmark = pytest.mark.skipif(SKIP is not None, reason=str(SKIP))


def fresh(name: str) -> str:
    """An address no other test uses."""
    return f"rhea-ws.{name}.{uuid.uuid4().hex[:8]}"


def texts(n: int, prefix: str = "m") -> list[dict[str, Any]]:
    return [{"id": f"{prefix}-{i}", "body": f"message {i}"} for i in range(1, n + 1)]


def node(program: str, *args: str) -> dict[str, Any]:
    """Run ``PROGRAM.js ARGS`` and return the JSON result it prints (with its status)."""
    return node_peers.run("rhea", program, *args, timeout_ms=PROGRAM_TIMEOUT_MS, wait=NODE_WAIT)


def rhea_ws(mode: str, url: str, address: str, count: int, *more: str) -> dict[str, Any]:
    result = node("ws_client", mode, url, address, str(count), *more)
    assert result["_status"] == 0 and "error" not in result, result
    return result


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    started = BrokerProcess("--ws-port", "0")
    yield started
    started.stop()


# -- rhea's WebSocket client, our broker ----------------------------------------------------


def test_rhea_sends_and_receives_over_websocket(broker: BrokerProcess) -> None:
    """``container.websocket_connect(require('ws'))`` with the subprotocol ``amqp``: the
    broker's ws port takes rhea's upgrade, each message is accepted, and a rhea receiver
    over WebSocket gets them back in order."""
    assert broker.ws_url is not None
    url = broker.ws_url + "/"
    address = fresh("both")
    sent = rhea_ws("send", url, address, 10)
    assert sent["sent"] == [f"m-{i}" for i in range(1, 11)]
    assert sent["outcomes"] == {"accepted": 10, "rejected": 0, "released": 0, "modified": 0}
    assert rhea_ws("receive", url, address, 10)["received"] == texts(10)


def test_what_rhea_sends_over_websocket_reaches_tcp(broker: BrokerProcess) -> None:
    """Both transports reach the same nodes: our sockets client on the TCP port (an
    ``amqp://`` URL) receives what rhea sent over WebSocket, and rhea over WebSocket
    receives what our client sent over TCP."""
    assert broker.ws_url is not None
    address = fresh("tcp")
    rhea_ws("send", broker.ws_url + "/", address, 3)
    with sockets.connect(broker.url, timeout=10) as conn:
        receiver = conn.receiver(address)
        got = [receiver.receive(timeout=10) for _ in range(3)]
        for delivery in got:
            assert delivery is not None
            delivery.accept()
        back = fresh("back")
        sender = conn.sender(back)
        for i in range(1, 3):
            message = a.Message(
                body=a.AmqpValue(f"message {i}"), properties=a.Properties(message_id=f"m-{i}")
            )
            assert sender.send(message) == a.Accepted()
    assert [d.message.body for d in got if d is not None] == [
        a.AmqpValue(f"message {i}") for i in (1, 2, 3)
    ]
    assert [
        d.message.properties.message_id for d in got if d is not None and d.message.properties
    ] == ["m-1", "m-2", "m-3"]
    assert rhea_ws("receive", broker.ws_url + "/", back, 2)["received"] == texts(2)


# -- our clients, rhea's WebSocket server ---------------------------------------------------


class WsListener:
    """``ws_listener.js``: a ``ws`` server handing each connection to
    ``container.websocket_accept``; it prints its port, then a line per message it got."""

    def __init__(self, *options: str) -> None:
        assert NODE is not None
        self.proc = subprocess.Popen(
            [NODE, "ws_listener.js", *options, "--timeout", LISTENER_TIMEOUT_MS],
            cwd=PEERS,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.lines = Lines(self.proc)
        self.port = int(json.loads(self.lines.next(NODE_WAIT))["port"])
        self.url = f"ws://127.0.0.1:{self.port}/"

    def received(self, count: int) -> list[dict[str, Any]]:
        """The next ``count`` messages rhea reports it received."""
        return [json.loads(self.lines.next(NODE_WAIT))["received"] for _ in range(count)]

    def stop(self) -> dict[str, Any]:
        self.proc.send_signal(signal.SIGTERM)
        rest = self.lines.rest(NODE_WAIT)
        assert rest, f"ws_listener.js printed nothing at the end (status {self.proc.returncode})"
        result: dict[str, Any] = json.loads(rest[-1])
        return result


@pytest.fixture
def ws_listener() -> Iterator[WsListener]:
    started = WsListener("--send", "outbox", "--count", "3")
    yield started
    if started.proc.poll() is None:
        started.proc.kill()
        started.proc.wait(NODE_WAIT)


@pytest.mark.parametrize("adapter", ADAPTERS.values(), ids=ADAPTERS.keys())
def test_our_clients_with_rheas_websocket_server(adapter: Adapter, ws_listener: WsListener) -> None:
    """Each adapter's ``connect("ws://127.0.0.1:PORT/")`` upgrades with the subprotocol
    ``amqp``, which ``ws`` chooses (its default: the first offered); rhea accepts each
    message sent, and sends three that the adapter receives."""
    address = fresh(adapter.name)

    async def scenario() -> list[Any]:
        async with adapter.connected(ws_listener.url) as conn:
            sender = await aw(conn.sender(address))
            for i in range(1, 4):
                message = a.Message(
                    body=a.AmqpValue(f"message {i}"),
                    properties=a.Properties(message_id=f"m-{i}"),
                )
                assert await aw(sender.send(message)) == a.Accepted()
            receiver = await aw(conn.receiver("outbox"))
            bodies = []
            for _ in range(3):
                delivery = await aw(receiver.receive(timeout=10))
                assert delivery is not None
                await aw(delivery.accept())
                bodies.append(delivery.message.body)
            return bodies

    assert adapter.run(scenario) == [a.AmqpValue(f"message {i}") for i in (1, 2, 3)]
    got = ws_listener.received(3)
    assert got == [dict(entry, address=address) for entry in texts(3)]
    counts = ws_listener.stop()["counts"]
    assert counts["connections"] == 1 and counts["received"] == 3 and counts["sent"] == 3


# -- the commands ---------------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*amqp_sansio_command(), *args, "--timeout", "8"],
        capture_output=True,
        text=True,
        timeout=NODE_WAIT,
    )


def test_our_commands_with_rheas_websocket_server(ws_listener: WsListener) -> None:
    """``amqp-sansio send ws://127.0.0.1:PORT/ --address A``: a WebSocket URL's path is the
    upgrade's resource, so the address is given with ``--address``; rhea gets each message.
    ``receive`` takes what rhea sends."""
    address = fresh("cli")
    sent = cli("send", ws_listener.url, "--address", address, "--body", "hello", "--count", "2")
    assert sent.returncode == 0, sent.stderr
    assert "2 accepted" in sent.stdout + sent.stderr
    assert [entry["body"] for entry in ws_listener.received(2)] == ["hello", "hello"]
    got = cli("receive", ws_listener.url, "--address", "outbox", "--count", "3", "--print")
    assert got.returncode == 0, got.stderr
    assert got.stdout.splitlines() == ["message 1", "message 2", "message 3"]


def test_our_commands_with_the_brokers_websocket_port(broker: BrokerProcess) -> None:
    """``send`` over WebSocket to the broker, ``receive`` over TCP and over WebSocket; a
    ``ws://`` URL without ``--address`` is a usage error saying so (exit status 2)."""
    assert broker.ws_url is not None
    url = broker.ws_url + "/"
    address = fresh("cli")
    sent = cli("send", url, "--address", address, "--body", "over ws", "--count", "4")
    assert sent.returncode == 0, sent.stderr
    tcp = cli("receive", f"{broker.url}/{address}", "--count", "2", "--print")
    assert tcp.returncode == 0, tcp.stderr
    ws = cli("receive", url, "--address", address, "--count", "2", "--print")
    assert ws.returncode == 0, ws.stderr
    assert tcp.stdout.splitlines() == ws.stdout.splitlines() == ["over ws"] * 2
    refused = cli("send", url, "--body", "x")
    assert refused.returncode == 2
    assert "give the address with --address NAME" in refused.stderr


# -- rhea over wss: the broker's WebSocket port inside TLS -------------------------------------


@pytest.fixture(scope="module")
def wss_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[BrokerProcess, Path]]:
    """``amqp-sansio broker --tls-cert ... --tls-key ... --wss-port 0`` with a certificate
    for localhost from a trustme CA, and that CA's PEM file."""
    trustme = pytest.importorskip("trustme", reason="trustme is in the 'test' extra")
    root = tmp_path_factory.mktemp("rhea-wss")
    ca = trustme.CA()
    issued = ca.issue_cert("localhost", "127.0.0.1")
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    (root / "server.pem").write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(root / "server.key"))
    tls = ("--tls-cert", str(root / "server.pem"), "--tls-key", str(root / "server.key"))
    started = BrokerProcess(*tls, "--wss-port", "0")
    yield started, root / "ca.pem"
    started.stop()


def test_rhea_sends_and_receives_over_wss(wss_broker: tuple[BrokerProcess, Path]) -> None:
    """rhea's WebSocket client with ``ws`` trusting the CA (its ``ca`` option): Node checks
    the broker's certificate and the host name ``localhost``; sends and receives."""
    broker, ca = wss_broker
    assert broker.wss_url is not None
    port = broker.wss_url.rsplit(":", 1)[1]
    url = f"wss://localhost:{port}/$servicebus/websocket"
    address = fresh("wss")
    sent = rhea_ws("send", url, address, 5, "--ca", str(ca))
    assert sent["outcomes"] == {"accepted": 5, "rejected": 0, "released": 0, "modified": 0}
    assert rhea_ws("receive", url, address, 5, "--ca", str(ca))["received"] == texts(5)


def test_rhea_without_the_ca_is_refused_over_wss(wss_broker: tuple[BrokerProcess, Path]) -> None:
    broker, _ = wss_broker
    assert broker.wss_url is not None
    port = broker.wss_url.rsplit(":", 1)[1]
    result = node("ws_client", "send", f"wss://localhost:{port}/", fresh("untrusted"), "1")
    assert result["_status"] != 0 and result["error"] == "disconnected", result
    assert result["description"] == "unable to verify the first certificate", result
    assert result["sent"] == []
