"""The broker's WebSocket listeners (``ws_port``, ``amqp-sansio broker --ws-port``; inside
TLS ``wss_port``, ``--wss-port``): AMQP 1.0 over the AMQP WebSocket binding, at ``/`` and
at Azure's ``/$servicebus/websocket``, from each adapter's client, over ``wss://`` with a
certificate from trustme that the client verifies (its CA and the host name); a hostile
peer on that port; the command line's listeners."""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import wsproto
import wsproto.events as ws
from amqp_sansio.adapters.broker.server import run_broker
from amqp_sansio.adapters.sockets import ConnectionClosedError
from support.adapters import ADAPTERS, WAIT, Adapter, aw
from support.broker_process import BrokerProcess

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig
from amqp_sansio.security.tls import client_context, server_context

trustme = pytest.importorskip("trustme", reason="trustme is in the 'test' extra")


def _round_trip(driver: Adapter, url: str, queue: str, **options: object) -> object:
    async def scenario() -> object:
        async with driver.connected(url, **options) as conn:
            sender = await aw(conn.sender(queue))
            assert isinstance(await aw(sender.send("over the ws port")), a.Accepted)
            receiver = await aw(conn.receiver(queue))
            delivery = await aw(receiver.receive(timeout=WAIT))
            delivery.accept()
            return delivery.message.body.value

    return driver.run(scenario)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_each_adapter_sends_and_receives_over_the_ws_port(name: str) -> None:
    with run_broker(ws_port=0) as server:
        assert server.ws_url == f"ws://127.0.0.1:{server.ws_port}"
        for path in ("/", "/$servicebus/websocket"):
            url = f"ws://127.0.0.1:{server.ws_port}{path}"
            assert _round_trip(ADAPTERS[name], url, f"ws-{name}") == "over the ws port"
        # The plain port still speaks AMQP over TCP.
        assert _round_trip(ADAPTERS[name], server.url, "tcp") == "over the ws port"


def _upgraded(port: int) -> tuple[socket.socket, wsproto.WSConnection]:
    sock = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    sock.sendall(peer.send(ws.Request(host="h", target="/", subprotocols=["amqp"])))
    peer.receive_data(sock.recv(4096))
    assert isinstance(next(peer.events()), ws.AcceptConnection)
    return sock, peer


def _read_until_closed(sock: socket.socket) -> bytes:
    got = b""
    while chunk := sock.recv(4096):
        got += chunk
    return got


def test_a_text_message_on_the_ws_port_is_closed_with_1003() -> None:
    with run_broker(ws_port=0) as server:
        sock, peer = _upgraded(server.ws_port or 0)
        with sock:
            sock.sendall(peer.send(ws.TextMessage(data="AMQP")))
            peer.receive_data(_read_until_closed(sock))
            (close,) = [e for e in peer.events() if isinstance(e, ws.CloseConnection)]
            assert close.code == 1003


def test_an_upgrade_without_amqp_is_refused_and_a_silent_one_times_out() -> None:
    config = BrokerConfig(handshake_timeout=0.5)
    with run_broker(ws_port=0, config=config) as server:
        with socket.create_connection(("127.0.0.1", server.ws_port or 0), timeout=WAIT) as sock:
            peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
            sock.sendall(peer.send(ws.Request(host="h", target="/", subprotocols=["mqtt"])))
            assert _read_until_closed(sock).startswith(b"HTTP/1.1 400 ")
        with socket.create_connection(("127.0.0.1", server.ws_port or 0), timeout=WAIT) as sock:
            started = time.monotonic()
            sock.sendall(b"GET / HTTP/1.1\r\n")  # and nothing more
            answer = _read_until_closed(sock)
            assert time.monotonic() - started < WAIT
            assert answer in (
                b"",
                b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            )


def test_the_command_line_listens_on_the_ws_port() -> None:
    with BrokerProcess("--ws-port", "0") as process:
        assert process.ws_url is not None and process.ws_url.startswith("ws://127.0.0.1:")
        assert _round_trip(ADAPTERS["sockets"], process.ws_url + "/", "cli") == ("over the ws port")


# -- wss: the binding inside TLS ----------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """PEM files: the CA (``ca``), the broker's certificate for localhost and 127.0.0.1
    (``cert``, ``key``), and one for another host only (``elsewhere``, ``elsewhere_key``)."""
    root = tmp_path_factory.mktemp("wss-certs")
    ca = trustme.CA()
    files = {name: root / f"{name}.pem" for name in ("ca", "cert", "key", "other", "other_key")}
    ca.cert_pem.write_to_path(str(files["ca"]))
    for cert, key, hosts in (
        ("cert", "key", ("localhost", "127.0.0.1")),
        ("other", "other_key", ("elsewhere.example",)),
    ):
        issued = ca.issue_cert(*hosts)
        files[cert].write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
        issued.private_key_pem.write_to_path(str(files[key]))
    return files


@pytest.fixture(scope="module")
def wss_broker(pki: dict[str, Path]) -> Iterator[str]:
    """A broker with ``wss_port=0`` and the certificate of localhost: its port."""
    context = server_context(str(pki["cert"]), str(pki["key"]))
    with run_broker(ssl_context=context, wss_port=0) as server:
        assert server.wss_url == f"wss://127.0.0.1:{server.wss_port}"
        assert server.ws_url is None
        yield str(server.wss_port)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_each_adapter_verifies_the_broker_over_wss(
    name: str, wss_broker: str, pki: dict[str, Path]
) -> None:
    trusted = client_context(cafile=str(pki["ca"]))  # host names checked
    for host in ("localhost", "127.0.0.1"):
        for path in ("/", "/$servicebus/websocket"):
            url = f"wss://{host}:{wss_broker}{path}"
            got = _round_trip(ADAPTERS[name], url, f"wss-{name}", ssl_context=trusted)
            assert got == "over the ws port"


def _refused(name: str, url: str, **options: object) -> str:
    with pytest.raises(ConnectionClosedError) as failed:
        _round_trip(ADAPTERS[name], url, "never", **options)
    return str(failed.value)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_client_that_does_not_trust_the_ca_is_refused(name: str, wss_broker: str) -> None:
    url = f"wss://localhost:{wss_broker}/"
    # The system's CAs (no ssl_context): ours is not among them.
    assert "CERTIFICATE_VERIFY_FAILED" in _refused(name, url)
    stranger = ssl.create_default_context()
    trustme.CA().configure_trust(stranger)
    why = _refused(name, url, ssl_context=stranger)
    assert "CERTIFICATE_VERIFY_FAILED" in why and "unable to get local issuer" in why


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_certificate_for_another_host_is_refused(name: str, pki: dict[str, Path]) -> None:
    context = server_context(str(pki["other"]), str(pki["other_key"]))
    trusted = client_context(cafile=str(pki["ca"]))
    with run_broker(ssl_context=context, wss_port=0) as server:
        why = _refused(name, f"wss://localhost:{server.wss_port}/", ssl_context=trusted)
    assert "CERTIFICATE_VERIFY_FAILED" in why and "Hostname mismatch" in why


def test_wss_port_needs_a_certificate() -> None:
    with pytest.raises(ValueError, match="wss_port needs an ssl_context"), run_broker(wss_port=0):
        pass


def test_the_command_line_listens_on_the_wss_port(pki: dict[str, Path]) -> None:
    tls = ("--tls-cert", str(pki["cert"]), "--tls-key", str(pki["key"]))
    with BrokerProcess(*tls, "--ws-port", "0", "--wss-port", "0") as process:
        assert process.ws_url is not None and process.wss_url is not None
        assert process.wss_url.startswith("wss://127.0.0.1:")
        port = process.wss_url.rsplit(":", 1)[1]
        trusted = client_context(cafile=str(pki["ca"]))
        url = f"wss://localhost:{port}/$servicebus/websocket"
        got = _round_trip(ADAPTERS["sockets"], url, "cli-wss", ssl_context=trusted)
        assert got == "over the ws port"
        # The plain ws port beside it.
        assert _round_trip(ADAPTERS["sockets"], process.ws_url + "/", "cli-ws") == (
            "over the ws port"
        )
