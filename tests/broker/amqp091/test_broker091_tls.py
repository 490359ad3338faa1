"""AMQP 0-9-1 over TLS on the broker's amqps port (``amqp-sansio broker --tls-cert ...``
started as a user starts it): the header after the TLS handshake picks the engine, as the
first octets do on the plain port. pika's ``SSLOptions`` and our 0-9-1 client
(``connect("amqps://...", protocol="0-9-1")``) publish and consume; a 1.0 client still
gets 1.0 on the same port."""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest
import trustme
from amqp_sansio.adapters import sockets
from support.broker_process import WAIT, BrokerProcess

import amqp_sansio as a


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[trustme.CA, Path]]:
    root = tmp_path_factory.mktemp("certs091")
    authority = trustme.CA()
    server = authority.issue_cert("localhost", "127.0.0.1")
    cert, key = root / "server.pem", root / "server.key"
    cert.write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
    server.private_key_pem.write_to_path(str(key))
    yield authority, root


@pytest.fixture(scope="module")
def broker(ca: tuple[trustme.CA, Path]) -> Iterator[BrokerProcess]:
    root = ca[1]
    tls = ("--tls-cert", str(root / "server.pem"), "--tls-key", str(root / "server.key"))
    with BrokerProcess(*tls) as process:
        yield process


def _context(ca: tuple[trustme.CA, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context()
    ca[0].configure_trust(context)
    return context


def _tls_port(broker: BrokerProcess) -> int:
    assert broker.tls_port is not None
    return broker.tls_port


def test_pika_over_tls(broker: BrokerProcess, ca: tuple[trustme.CA, Path]) -> None:
    options = pika.SSLOptions(_context(ca), "localhost")
    params = pika.ConnectionParameters("127.0.0.1", _tls_port(broker), ssl_options=options)
    with pika.BlockingConnection(params) as conn:
        ch = conn.channel()
        ch.queue_declare("tls.pika")
        ch.confirm_delivery()
        ch.basic_publish("", "tls.pika", b"over tls", pika.BasicProperties(delivery_mode=2))
        method, props, body = ch.basic_get("tls.pika", auto_ack=True)
        assert body == b"over tls" and props.delivery_mode == 2
        assert method.routing_key == "tls.pika"
    deadline = time.monotonic() + WAIT
    while "(AMQP 0-9-1), TLSv1." not in broker.log:  # the log says it runs over TLS
        assert time.monotonic() < deadline, broker.log
        time.sleep(0.05)


def test_our_0_9_1_client_over_tls_and_1_0_on_the_same_port(
    broker: BrokerProcess, ca: tuple[trustme.CA, Path]
) -> None:
    url = f"amqps://guest:guest@localhost:{_tls_port(broker)}"
    with sockets.connect(url, protocol="0-9-1", ssl_context=_context(ca), timeout=WAIT) as conn:
        ch = conn.channel()
        ch.queue_declare("tls.ours")
        ch.basic_publish("", "tls.ours", b"ours")
        got = ch.basic_get("tls.ours", no_ack=True)
        assert got is not None and got.body == b"ours"
        ch.basic_publish("", "tls.ours", b"to 1.0")
    # the queue is the broker's: a 1.0 client on the same amqps port takes the message
    with sockets.connect(f"{broker.tls_url}/tls.ours", ssl_context=_context(ca)) as conn10:
        delivery = conn10.receiver(credit=1).receive(timeout=WAIT)
        assert delivery is not None
        delivery.accept()
        assert delivery.message.body == a.Data(b"to 1.0")
