"""The broker's WebSocket listener (``ws_port``, ``amqp-sansio broker --ws-port``): AMQP 1.0
over the AMQP WebSocket binding, at ``/`` and at Azure's ``/$servicebus/websocket``, from
each adapter's client; a hostile peer on that port; the command line's listener."""

from __future__ import annotations

import socket
import time

import pytest
import wsproto
import wsproto.events as ws
from amqp_sansio.adapters.broker.server import run_broker
from support.adapters import ADAPTERS, WAIT, Adapter, aw
from support.broker_process import BrokerProcess

import amqp_sansio as a
from amqp_sansio.broker import BrokerConfig


def _round_trip(driver: Adapter, url: str, queue: str) -> object:
    async def scenario() -> object:
        async with driver.connected(url) as conn:
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
