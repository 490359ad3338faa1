"""The broker's TLS (core spec 5.2): ``amqp-sansio broker --tls-cert ... --tls-key ...``
started as a user starts it, with certificates the test makes (trustme), verified by our
client, by Qpid Proton and by the command line; amqps on its own port (TLS from the first
byte, 5.2.1) and the TLS protocol header on the plain port (5.2); mutual TLS with
``--tls-ca``; and the core's plain port that offers TLS, byte by byte on a simulated
clock."""

from __future__ import annotations

import json
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.sockets import SocketDriver
from support.broker_process import BrokerProcess, amqp_sansio_command

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig
from amqp_sansio.security.tls import (
    TLSEstablished,
    TLSLayer,
    TLSOrPlain,
    client_context,
    server_context,
)

trustme = pytest.importorskip("trustme", reason="trustme is in the 'test' extra")

WAIT = 30.0
PASSWORD = "tls-secret-pw"


@dataclass
class Certs:
    """PEM files: the CA both sides trust, the broker's certificate (localhost, 127.0.0.1)
    and key, a client certificate (alice) and key, and a CA nobody trusts with a broker
    certificate of its own."""

    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path
    rogue_ca: Path
    rogue_key: Path


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    root = tmp_path_factory.mktemp("certs")
    ca, rogue = trustme.CA(), trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert("alice@example.com", common_name="alice")
    paths = Certs(
        ca=root / "ca.pem",
        cert=root / "server.pem",
        key=root / "server.key",
        client_cert=root / "client.pem",
        client_key=root / "client.key",
        rogue_ca=root / "rogue-ca.pem",
        rogue_key=root / "rogue.key",
    )
    ca.cert_pem.write_to_path(str(paths.ca))
    paths.cert.write_bytes(b"".join(blob.bytes() for blob in server.cert_chain_pems))
    server.private_key_pem.write_to_path(str(paths.key))
    paths.client_cert.write_bytes(b"".join(blob.bytes() for blob in client.cert_chain_pems))
    client.private_key_pem.write_to_path(str(paths.client_key))
    rogue.cert_pem.write_to_path(str(paths.rogue_ca))
    rogue.issue_cert("localhost").private_key_pem.write_to_path(str(paths.rogue_key))
    return paths


def _tls(certs: Certs, *more: str) -> tuple[str, ...]:
    return ("--tls-cert", str(certs.cert), "--tls-key", str(certs.key), *more)


@pytest.fixture(scope="module")
def broker(certs: Certs) -> Iterator[BrokerProcess]:
    """``amqp-sansio broker --tls-cert server.pem --tls-key server.key``: open, as a user
    starts it (amqp on --port 0, amqps on --tls-port 0)."""
    with BrokerProcess(*_tls(certs)) as process:
        yield process


def _round_trip(url: str, body: bytes, **options: Any) -> bytes:
    with sockets.connect(url, timeout=WAIT, **options) as conn:
        assert conn.sender().send(body) == a.Accepted()
        delivery = conn.receiver(credit=1).receive(timeout=WAIT)
        assert delivery is not None
        delivery.accept()
        value: bytes = delivery.message.body.value
        return value


# -- amqps: TLS from the first byte -----------------------------------------------------------


def test_it_says_where_it_listens_for_amqp_and_amqps(broker: BrokerProcess) -> None:
    assert broker.url.startswith("amqp://127.0.0.1:")
    assert broker.tls_url == f"amqps://127.0.0.1:{broker.tls_port}"
    assert broker.tls_port != broker.port


def test_our_client_verifies_the_broker_and_sends_and_receives(
    broker: BrokerProcess, certs: Certs
) -> None:
    url = f"amqps://localhost:{broker.tls_port}/tls-ours"
    context = client_context(cafile=str(certs.ca))  # host name checked: localhost
    assert _round_trip(url, b"over amqps", ssl_context=context) == b"over amqps"
    # The plain port still serves plain AMQP beside it.
    assert _round_trip(f"{broker.url}/tls-plain", b"plain") == b"plain"


def test_proton_verifies_the_broker_and_sends_and_receives(
    broker: BrokerProcess, certs: Certs
) -> None:
    proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton.utils import BlockingConnection

    domain = proton.SSLDomain(proton.SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(str(certs.ca))
    domain.set_peer_authentication(proton.SSLDomain.VERIFY_PEER_NAME)
    url = f"amqps://localhost:{broker.tls_port}"
    conn = BlockingConnection(url, timeout=WAIT, ssl_domain=domain)
    try:
        conn.create_sender("tls-proton").send(proton.Message(body="from proton"))
        receiver = conn.create_receiver("tls-proton", credit=1)
        message = receiver.receive(timeout=WAIT)
        receiver.accept()
        assert message.body == "from proton"
    finally:
        conn.close()


def test_a_client_that_does_not_trust_the_ca_fails(broker: BrokerProcess, certs: Certs) -> None:
    url = f"amqps://localhost:{broker.tls_port}/tls-untrusted"
    with pytest.raises(sockets.ConnectionClosedError, match="CERTIFICATE_VERIFY_FAILED"):
        sockets.connect(url, timeout=WAIT)  # the system's CAs: ours is not among them
    stranger = client_context(cafile=str(certs.rogue_ca))
    with pytest.raises(sockets.ConnectionClosedError, match="CERTIFICATE_VERIFY_FAILED"):
        sockets.connect(url, timeout=WAIT, ssl_context=stranger)
    proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton.utils import BlockingConnection

    domain = proton.SSLDomain(proton.SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(str(certs.rogue_ca))
    domain.set_peer_authentication(proton.SSLDomain.VERIFY_PEER_NAME)
    with pytest.raises(proton.ConnectionException):
        BlockingConnection(f"amqps://localhost:{broker.tls_port}", timeout=WAIT, ssl_domain=domain)


def test_the_command_line_sends_and_receives_over_amqps(
    broker: BrokerProcess, certs: Certs, tmp_path: Path
) -> None:
    url = f"amqps://localhost:{broker.tls_port}/tls-cli"
    sent = subprocess.run(
        [*amqp_sansio_command(), "send", url, "--cafile", str(certs.ca), "--body", "by cli"],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
    )
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith(f"sent 1 message to {url}: 1 accepted"), sent.stdout
    got = subprocess.run(
        [*amqp_sansio_command(), "receive", url, "--cafile", str(certs.ca), "--print"],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout == "by cli\n"
    refused = subprocess.run(
        [*amqp_sansio_command(), "send", url],
        capture_output=True,
        text=True,
        timeout=WAIT * 2,
    )
    assert refused.returncode == 3
    assert refused.stderr.count("\n") == 1 and "certificate was refused" in refused.stderr


def test_embedded_the_server_listens_on_both_ports_with_a_tls_port(certs: Certs) -> None:
    from amqp_sansio.adapters.broker import BrokerServer, run_broker

    context = server_context(str(certs.cert), str(certs.key))
    with run_broker(ssl_context=context, tls_port=0) as server:
        assert server.url == f"amqp://127.0.0.1:{server.port}"
        assert server.tls_url == f"amqps://127.0.0.1:{server.tls_port}"
        assert server.tls_port not in (None, 0, server.port)
        url = f"amqps://localhost:{server.tls_port}/embedded"
        ours = client_context(cafile=str(certs.ca))
        assert _round_trip(url, b"embedded", ssl_context=ours) == b"embedded"
        assert _round_trip(f"{server.url}/embedded", b"plain") == b"plain"
    with run_broker(ssl_context=context) as server:  # one port, amqps
        assert server.url.startswith("amqps://") and server.tls_url is None
    with pytest.raises(ValueError, match="tls_port needs an ssl_context"):
        BrokerServer(Broker(), tls_port=0)


# -- the TLS protocol header on the plain port (core spec 5.2) ---------------------------------


def _header_client(
    port: int, context: Any, **sasl: str | None
) -> tuple[a.Connection, TLSLayer, SocketDriver]:
    """Our engine under a TLS layer that negotiates: the TLS header ``AMQP 2.1.0.0`` first,
    then TLS, then SASL (``sasl``: the credentials) and AMQP inside it."""
    conn = a.Connection(client=True, hostname="localhost", sasl=a.sasl.ClientCredentials(**sasl))
    layer = TLSLayer(conn, context, client=True, server_hostname="localhost", negotiate=True)
    driver = SocketDriver.connect(layer, ("127.0.0.1", port), timeout=WAIT)
    conn.open(now=driver.now())
    return conn, layer, driver


def _send_and_take(conn: a.Connection, driver: SocketDriver, address: str, body: bytes) -> bytes:
    """Publish ``body`` to ``address`` and take it back, on the engine."""
    driver.run_until(lambda: conn.state is a.ConnectionState.OPENED, timeout=WAIT)
    session = conn.begin()
    sender = session.attach_sender("s", target=a.Target(address=address))
    receiver = session.attach_receiver("r", source=a.Source(address=address))
    driver.run_until(lambda: sender.link_credit > 0, timeout=WAIT)
    sender.send(a.Message(body=body).encode())
    receiver.flow(1)
    driver.run_until(
        lambda: any(isinstance(e, a.events.DeliveryReceived) for e in driver.events),
        timeout=WAIT,
    )
    (got,) = [e for e in driver.events if isinstance(e, a.events.DeliveryReceived)]
    value: bytes = got.message().body.value
    receiver.settle(got.delivery, a.Accepted())
    conn.close()
    driver.run_until(lambda: conn.state is a.ConnectionState.END, timeout=WAIT)
    return value


def test_the_tls_header_on_the_plain_port_starts_tls(broker: BrokerProcess, certs: Certs) -> None:
    conn, _, driver = _header_client(broker.port, client_context(cafile=str(certs.ca)))
    with driver:
        assert _send_and_take(conn, driver, "tls-header", b"negotiated") == b"negotiated"
        (established,) = [e for e in driver.events if isinstance(e, TLSEstablished)]
        assert established.version in ("TLSv1.2", "TLSv1.3")
        assert conn.sasl_mechanism == "ANONYMOUS" and conn.encrypted
    # And what the plain port takes without TLS is unchanged: the bare and SASL headers.
    assert _round_trip(f"{broker.url}/tls-header", b"plain after") == b"plain after"


def test_plain_over_the_tls_header_on_a_broker_with_users(certs: Certs, tmp_path: Path) -> None:
    """With --users, PLAIN is offered inside TLS (the TLS header on the plain port, or
    amqps) as without it on a loopback address: today's rule, unchanged by TLS."""
    users = tmp_path / "users.json"
    alice = {"password": PASSWORD, "send": ["*"], "receive": ["*"]}
    users.write_text(json.dumps({"users": {"alice": alice}}))
    context = client_context(cafile=str(certs.ca))
    with BrokerProcess(*_tls(certs), "--users", str(users)) as process:
        conn, _, driver = _header_client(process.port, context, username="alice", password=PASSWORD)
        with driver:
            assert _send_and_take(conn, driver, "tls-users", b"alice's") == b"alice's"
            assert conn.sasl_mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256")
        url = f"amqps://alice:{PASSWORD}@localhost:{process.tls_port}/tls-users"
        assert _round_trip(url, b"amqps", ssl_context=context) == b"amqps"
        anonymous = f"amqps://localhost:{process.tls_port}/tls-users"
        with pytest.raises(sockets.AuthenticationError):
            sockets.connect(anonymous, timeout=WAIT, ssl_context=context)
    assert PASSWORD not in process.log


def test_a_client_that_distrusts_the_broker_over_the_tls_header_fails(
    broker: BrokerProcess, certs: Certs
) -> None:
    conn, _, driver = _header_client(broker.port, client_context(cafile=str(certs.rogue_ca)))
    with driver:
        driver.run_until(
            lambda: any(isinstance(e, a.security.tls.TLSFailed) for e in driver.events),
            timeout=WAIT,
        )
        (failed,) = [e for e in driver.events if isinstance(e, a.security.tls.TLSFailed)]
        assert failed.reason == "CERTIFICATE_VERIFY_FAILED"
        assert conn.state is not a.ConnectionState.OPENED


# -- mutual TLS (--tls-ca) ---------------------------------------------------------------------


def test_mutual_tls_refuses_a_client_without_a_certificate(certs: Certs) -> None:
    with BrokerProcess(*_tls(certs, "--tls-ca", str(certs.ca))) as process:
        url = f"amqps://localhost:{process.tls_port}/tls-mutual"
        bare = client_context(cafile=str(certs.ca))
        with pytest.raises(sockets.ConnectionClosedError, match="TLS failed"):
            _round_trip(url, b"no certificate", ssl_context=bare)
        with_cert = client_context(
            cafile=str(certs.ca), certfile=str(certs.client_cert), keyfile=str(certs.client_key)
        )
        assert _round_trip(url, b"certified", ssl_context=with_cert) == b"certified"
        # The TLS header on the plain port asks for the certificate too.
        conn, _, driver = _header_client(process.port, bare)
        with driver:
            driver.run_until(
                lambda: any(isinstance(e, a.security.tls.TLSFailed) for e in driver.events),
                timeout=WAIT,
            )
            assert conn.state is not a.ConnectionState.OPENED
        process.stop()
    assert "TLS failed" in process.log and "CERTIFICATE" in process.log


def test_mutual_tls_with_proton_and_sasl_external(certs: Certs) -> None:
    """An open broker offers SASL EXTERNAL to a client with a verified certificate (core
    spec 5.3): Proton's client takes it, and the broker's log names the certificate's
    subject as the user."""
    proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton.utils import BlockingConnection

    domain = proton.SSLDomain(proton.SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(str(certs.ca))
    domain.set_peer_authentication(proton.SSLDomain.VERIFY_PEER_NAME)
    domain.set_credentials(str(certs.client_cert), str(certs.client_key), None)
    with BrokerProcess(*_tls(certs, "--tls-ca", str(certs.ca))) as process:
        url = f"amqps://localhost:{process.tls_port}"
        conn = BlockingConnection(
            url, timeout=WAIT, ssl_domain=domain, sasl_enabled=True, allowed_mechs="EXTERNAL"
        )
        try:
            conn.create_sender("tls-external").send(proton.Message(body="certified"))
        finally:
            conn.close()
        process.stop()
    (opened,) = [line for line in process.log.splitlines() if " opened: " in line]
    assert "CN=alice" in opened and "(EXTERNAL)" in opened, opened


# -- bad options: one line, exit status 2 -------------------------------------------------------


@pytest.mark.parametrize(
    "options, says",
    [
        (["--tls-cert", "missing.pem"], "cannot use --tls-cert missing.pem: No such file"),
        (["--tls-key", "{key}"], "--tls-key need --tls-cert"),
        (["--tls-ca", "{ca}", "--tls-port", "0"], "--tls-ca and --tls-port need --tls-cert"),
        (["--wss-port", "0"], "--wss-port need --tls-cert"),
        (["--tls-cert", "{cert}", "--tls-key", "{rogue_key}"], "the key is not the certificate's"),
        (["--tls-cert", "{ca}"], "cannot use --tls-cert"),
        (["--tls-cert", "{cert}", "--tls-key", "{key}", "--tls-ca", "nope.pem"], "--tls-ca nope"),
        (["--tls-cert", "{cert}", "--tls-key", "{key}", "--tls-port", "70000"], "65535"),
    ],
)
def test_bad_tls_options_are_one_line_and_exit_2(
    certs: Certs, tmp_path: Path, options: list[str], says: str
) -> None:
    files = {
        "cert": certs.cert,
        "key": certs.key,
        "ca": certs.ca,
        "rogue_key": certs.rogue_key,
    }
    command = [*amqp_sansio_command(), "broker", "--port", "0"]
    command += [option.format(**files) for option in options]
    result = subprocess.run(command, capture_output=True, text=True, timeout=WAIT, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    lines = result.stderr.splitlines()  # (argparse's own errors come after the usage)
    assert len(lines) == 1 or lines[0].startswith("usage:"), result.stderr
    assert lines[-1].startswith("amqp-sansio broker: error: ") and says in lines[-1], lines


def test_an_amqps_port_in_use_is_one_line_and_exit_2(broker: BrokerProcess, certs: Certs) -> None:
    command = [*amqp_sansio_command(), "broker", "--port", "0", *_tls(certs)]
    command += ["--tls-port", str(broker.tls_port)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=WAIT)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("amqp-sansio broker: error: ")
    assert result.stderr.count("\n") == 1, result.stderr


# -- the core: a plain port that offers TLS, on a simulated clock -------------------------------


def _pump(broker_conn: Any, client: Any, now: float, *, chunk: int | None = None) -> list[a.Event]:
    """Move bytes both ways until neither side has any (``chunk``: the client's bytes a
    piece of that many at a time); the client's events."""
    events: list[a.Event] = []
    for _ in range(100):
        out = client.data_to_send()
        back = b""
        if out:
            step = chunk or len(out)
            for i in range(0, len(out), step):
                broker_conn.receive_data(out[i : i + step], now)
        back = broker_conn.data_to_send()
        if back:
            events += client.receive_data(back, now)
        if not out and not back:
            return events
    raise AssertionError("the exchange did not settle")


@pytest.mark.parametrize("chunk", [None, 1])
def test_the_core_takes_the_tls_header_whole_or_byte_by_byte(
    certs: Certs, chunk: int | None
) -> None:
    broker = Broker(BrokerConfig())
    context = server_context(str(certs.cert), str(certs.key))
    conn = broker.accept(0.0, ssl_context=context, tls_header=True, address="10.0.0.1")
    client = a.Connection(client=True, hostname="localhost", sasl=a.sasl.ClientCredentials())
    layer = TLSLayer(
        client, client_context(cafile=str(certs.ca)), client=True, server_hostname="localhost"
    )
    client.open(now=0.0)
    events = _pump(conn, layer, 0.0, chunk=chunk)
    assert any(isinstance(e, TLSEstablished) for e in events)
    assert client.state is a.ConnectionState.OPENED and conn.record.opened
    assert conn.record.tls in ("TLSv1.2", "TLSv1.3") and conn.identity == "anonymous"


@pytest.mark.parametrize("chunk", [None, 1])
def test_the_core_takes_a_plain_header_beside_tls(certs: Certs, chunk: int | None) -> None:
    """A SASL header (or the bare AMQP header) on the port that offers TLS goes on
    without TLS, whole or byte by byte; nothing is answered before the client's header."""
    broker = Broker(BrokerConfig())
    context = server_context(str(certs.cert), str(certs.key))
    for sasl in (a.sasl.ClientCredentials(), None):
        conn = broker.accept(0.0, ssl_context=context, tls_header=True)
        assert conn.data_to_send() == b""
        client = a.Connection(client=True, hostname="localhost", sasl=sasl)
        client.open(now=0.0)
        _pump(conn, client, 0.0, chunk=chunk)
        assert (
            client.state is a.ConnectionState.OPENED
            and conn.record.opened
            and conn.record.tls is None
        )


def test_tls_or_plain_hands_a_cut_header_to_the_engine() -> None:
    """The transport closes after the start of the TLS header: the engine gets those bytes
    and the end of the stream (a connection that ended before its header)."""
    engine = a.Connection(client=False)
    switch = TLSOrPlain(engine, _no_certificate())
    assert switch.receive_data(b"AMQP\x02", 0.0) == []
    assert repr(switch) == "<TLSOrPlain undecided>"
    switch.receive_data(b"", 0.0)
    assert switch.tls is None and repr(switch) == "<TLSOrPlain plain>"
    assert engine.state is a.ConnectionState.END


def _no_certificate() -> ssl.SSLContext:
    """A server context without a certificate: enough for a layer that is never used."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)


def test_tls_or_plain_passes_timers_and_close_to_what_was_chosen(certs: Certs) -> None:
    """Before the choice and after a plain one, the engine's deadline and timer; after TLS,
    the layer's (which passes them on), and ``close`` sends TLS close_notify."""

    class Bare:  # an inner object without timers
        def receive_data(self, data: bytes, now: float) -> list[a.Event]:
            return []

        def data_to_send(self) -> bytes:
            return b""

    bare = TLSOrPlain(Bare(), _no_certificate())
    assert bare.next_deadline() is None and bare.handle_timer(0.0) == []
    bare.close()  # nothing chosen: nothing to end
    engine = a.Connection(client=False, idle_timeout=2.0)
    switch = TLSOrPlain(engine, server_context(str(certs.cert), str(certs.key)))
    client = a.Connection(client=True, hostname="localhost")
    layer = TLSLayer(
        client, client_context(cafile=str(certs.ca)), client=True, server_hostname="localhost"
    )
    client.open(now=0.0)
    for _ in range(20):
        out = layer.data_to_send()
        if out:
            switch.receive_data(out, 0.0)
        back = switch.data_to_send()
        if back:
            layer.receive_data(back, 0.0)
        if not out and not back:
            break
    assert switch.tls is not None and repr(switch) == "<TLSOrPlain tls>"
    assert engine.remote is not None  # the client's open came through TLS
    assert switch.next_deadline() == engine.next_deadline() is not None
    assert switch.handle_timer(0.5) == []
    switch.close()
    assert switch.tls.state in (a.security.tls.TLSState.CLOSING, a.security.tls.TLSState.CLOSED)
