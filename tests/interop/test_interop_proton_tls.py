"""TLS (core spec 5.2) against Apache Qpid Proton over loopback sockets.

Our :class:`~amqp_sansio.TLSLayer` wraps our connection and the socket driver drives the
layer; Proton's wheel brings its own OpenSSL. Certificates are made at test time with
``trustme``: a CA, a server certificate for ``localhost``, a client certificate for
``alice``, and a server certificate from a CA nobody trusts.

What Proton (0.40) does, and so what is tested here:

* Pure TLS from the first byte ("amqps", core spec 5.2.1) both ways, with the server's
  certificate verified and its name checked on both clients (Proton: ``VERIFY_PEER_NAME``);
  our layers use ``negotiate=False``. Traffic flows both ways and either side closes
  cleanly: AMQP close, then TLS close_notify from each side.
* Proton never sends the AMQP TLS header (``AMQP 2.1.0.0``, part 5.2): its client starts
  with a ClientHello, which our negotiating server refuses cleanly (and Proton reports it).
  Its listener does not answer the TLS header either (with or without TLS configured), so
  negotiated TLS with Proton is not possible in either direction.
* A certificate from an unknown CA and a wrong host name are refused by either client;
  a server requiring a client certificate refuses a Proton client without one.
* SASL inside TLS: a Proton client authenticates with PLAIN to our server, which offers it
  only because the layer says the transport is encrypted; with a client certificate, a
  Proton client authenticates with EXTERNAL to our server, and we with EXTERNAL to Proton's
  listener; our client authenticates anonymously to a Proton TLS listener.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from amqp_sansio.adapters.sockets import SocketDriver
from support.proton_peer import Interop, Spec, interop_pairs, poll, settled_count

import amqp_sansio as a

proton = pytest.importorskip("proton", reason="python-qpid-proton is needed for the interop tests")
trustme = pytest.importorskip("trustme")
if not proton.SSL.present():  # pragma: no cover - the wheel has OpenSSL
    pytest.skip("this Proton has no TLS support", allow_module_level=True)
from proton import SSLDomain  # noqa: E402

HOST = "localhost"
COUNT = 300
PASSWORD = "alice-pw"


@dataclass
class Certs:
    ca: str  # the CA both sides trust
    server: tuple[str, str]  # certificate chain, key: for localhost
    client: tuple[str, str]  # for alice
    rogue: tuple[str, str]  # for localhost, from a CA nobody trusts


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    root = tmp_path_factory.mktemp("certs")
    ca, unknown = trustme.CA(), trustme.CA()

    def write(name: str, cert: trustme.LeafCert) -> tuple[str, str]:
        chain, key = root / f"{name}.pem", root / f"{name}.key"
        chain.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
        cert.private_key_pem.write_to_path(str(key))
        return str(chain), str(key)

    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    return Certs(
        ca=str(root / "ca.pem"),
        server=write("server", ca.issue_cert(HOST)),
        client=write("client", ca.issue_cert("alice@example.com", common_name="alice")),
        rogue=write("rogue", unknown.issue_cert(HOST)),
    )


@pytest.fixture
def interop() -> Iterator[Callable[..., Interop]]:
    yield from interop_pairs()


# -- both sides' TLS configuration ------------------------------------------------------------


def proton_server(cert: tuple[str, str], *, client_ca: str | None = None) -> SSLDomain:
    """Proton's listener: its certificate; with ``client_ca``, a client certificate is
    required and verified."""
    domain = SSLDomain(SSLDomain.MODE_SERVER)
    domain.set_credentials(cert[0], cert[1], None)
    if client_ca is not None:
        domain.set_trusted_ca_db(client_ca)
        domain.set_peer_authentication(SSLDomain.VERIFY_PEER, client_ca)
    return domain


def proton_client(certs: Certs, *, cert: tuple[str, str] | None = None) -> SSLDomain:
    """Proton's client: verifies the server's certificate and name against our CA."""
    domain = SSLDomain(SSLDomain.MODE_CLIENT)
    domain.set_trusted_ca_db(certs.ca)
    domain.set_peer_authentication(SSLDomain.VERIFY_PEER_NAME)
    if cert is not None:
        domain.set_credentials(cert[0], cert[1], None)
    return domain


def our_client(
    certs: Certs, *, hostname: str = HOST, cert: tuple[str, str] | None = None
) -> Callable[[a.Connection], a.TLSLayer]:
    context = a.security.tls.client_context(
        cafile=certs.ca,
        certfile=cert[0] if cert else None,
        keyfile=cert[1] if cert else None,
    )
    return lambda conn: a.TLSLayer(
        conn,
        context,
        client=True,
        server_hostname=hostname,
        negotiate=False,
        client_certificate=cert is not None,
    )


def our_server(
    cert: tuple[str, str], *, client_ca: str | None = None, negotiate: bool = False
) -> Callable[[a.Connection], a.TLSLayer]:
    context = a.security.tls.server_context(
        cert[0], cert[1], cafile=client_ca, require_client_cert=client_ca is not None
    )
    return lambda conn: a.TLSLayer(conn, context, client=False, negotiate=negotiate)


def tls_pair(
    interop: Callable[..., Interop],
    role: str,
    certs: Certs,
    *,
    client_cert: bool = False,
    proton_connect: dict[str, object] | None = None,
    **kwargs: object,
) -> Interop:
    """A pair with TLS on both sides, the server's certificate verified and its name checked;
    with ``client_cert``, the client presents alice's certificate and the server requires
    one."""
    client = certs.client if client_cert else None
    if role == "client":
        return interop(
            role,
            _specs(),
            proton_ssl=proton_server(certs.server, client_ca=certs.ca if client_cert else None),
            wrap=our_client(certs, cert=client),
            **kwargs,
        )
    return interop(
        role,
        _specs(),
        proton_ssl=proton_client(certs, cert=client),
        proton_connect={"sni": HOST, **(proton_connect or {})},
        wrap=our_server(certs.server, client_ca=certs.ca if client_cert else None),
        **kwargs,
    )


def _specs() -> list[Spec]:
    bodies = [f"p{i}" for i in range(COUNT)]
    return [Spec("to-proton", True), Spec("from-proton", False, proton_bodies=bodies)]


def _traffic(pair: Interop) -> None:
    """A few hundred messages each way, all settled."""
    pair.app.send("to-proton", [a.Message(body=f"m{i}").encode() for i in range(COUNT)])
    pair.wait(lambda: settled_count(pair.app.updates["to-proton"]) == COUNT)
    pair.wait(lambda: len(pair.app.received["from-proton"]) == COUNT)
    assert pair.peer.received["to-proton"] == [f"m{i}" for i in range(COUNT)]
    assert [m.body.value for m in pair.app.received["from-proton"]] == [
        f"p{i}" for i in range(COUNT)
    ]
    pair.wait(lambda: len(pair.peer.outcomes["from-proton"]) == COUNT)
    assert pair.peer.errors == [] and pair.app.errors == []


def _established(pair: Interop) -> a.security.tls.TLSEstablished:
    assert pair.driver is not None
    (established,) = [e for e in pair.driver.events if isinstance(e, a.security.tls.TLSEstablished)]
    assert pair.driver.events[0] is established  # before anything of the connection's
    return established


def _refused(pair: Interop) -> a.security.tls.TLSFailed:
    """Connect (our side of ``pair`` in its role) and wait for our layer's ``TLSFailed``;
    nothing of AMQP ever reaches either side."""
    pair.thread.start()
    if pair.role == "client":
        pair.driver = SocketDriver.connect(pair.transport, ("127.0.0.1", pair.port))
        pair.conn.open(now=pair.driver.now())
    else:
        assert pair.listener is not None
        pair.driver = SocketDriver.accept(pair.transport, pair.listener)
    failed = pair.wait_for(a.security.tls.TLSFailed)
    layer = pair.transport
    assert isinstance(layer, a.TLSLayer)
    assert layer.state is a.security.tls.TLSState.FAILED
    assert layer.data_to_send() == b""  # the alert went; nothing follows it
    # Nothing else was reported: the connection inside never got a byte.
    assert [type(e) for e in pair.driver.events] == [a.security.tls.TLSFailed]
    assert pair.conn.remote is None
    assert poll(lambda: bool(pair.peer.errors)), "Proton saw no failure"
    assert not pair.peer.opened
    return failed


# -- traffic ----------------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["client", "server"])
@pytest.mark.parametrize("closer", ["we", "proton"])
def test_direct_tls_traffic_and_clean_close(
    role: str, closer: str, certs: Certs, interop: Callable[..., Interop]
) -> None:
    """Pure TLS ("amqps") both ways: the server's certificate verified and its name checked by
    either client, messages both ways, then the AMQP close and TLS close_notify each way."""
    pair = tls_pair(interop, role, certs)
    driver = pair.start()
    established = _established(pair)
    assert established.version in ("TLSv1.2", "TLSv1.3")
    assert pair.peer.tls is not None
    assert pair.peer.tls["protocol"] == established.version
    if role == "client":  # we verified Proton's certificate
        assert established.peer_certificate is not None
        assert established.peer_certificate["subjectAltName"] == (("DNS", HOST),)
    else:  # Proton presented none: there is no client identity
        assert established.peer_certificate is None and established.peer_identity is None
    _traffic(pair)
    if closer == "we":
        pair.conn.close()
    else:
        pair.peer.call(lambda: pair.peer.connection.close())
    pair.wait_for(a.events.ConnectionEnded)
    pair.wait(lambda: driver.eof)  # Proton hangs up once the closes are exchanged
    # The driver closed the layer once the connection ended: our close_notify followed the
    # AMQP close. Proton sent its own before hanging up: nothing was cut short.
    kinds = [type(e) for e in driver.events]
    assert kinds[-3:] == [
        a.events.ConnectionClosed,
        a.events.ConnectionEnded,
        a.security.tls.TLSClosed,
    ]
    assert driver.events[-1] == a.security.tls.TLSClosed(truncated=False)
    assert driver.events[-3] == a.events.ConnectionClosed(error=None)
    assert isinstance(pair.transport, a.TLSLayer)
    assert pair.transport.state is a.security.tls.TLSState.CLOSED
    assert poll(lambda: pair.peer.closed and pair.peer.transport_closed)
    assert pair.peer.remote_close == ([None] if closer == "we" else [])
    assert pair.peer.errors == []


def test_a_proton_client_without_the_tls_header_is_refused_by_a_negotiating_server(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    """Proton's client starts TLS with its ClientHello, never the TLS header of core spec
    5.2: our server, which negotiates, answers with its header (2.2) and ends; Proton reports
    that what came back is not TLS."""
    pair = interop(
        "server",
        _specs(),
        proton_ssl=proton_client(certs),
        proton_connect={"sni": HOST},
        wrap=our_server(certs.server, negotiate=True),
    )
    pair.thread.start()
    assert pair.listener is not None
    pair.driver = SocketDriver.accept(pair.transport, pair.listener)
    mismatch = pair.wait_for(a.security.tls.TLSHeaderMismatch)
    assert mismatch.header[:3] == b"\x16\x03\x01"  # a TLS handshake record
    assert mismatch.version_name == "a TLS handshake without the AMQP TLS header"
    assert [type(e) for e in pair.driver.events] == [a.security.tls.TLSHeaderMismatch]
    pair.driver.close()  # after our TLS header
    assert poll(lambda: bool(pair.peer.errors))
    assert any("wrong version number" in e for e in pair.peer.errors), pair.peer.errors
    assert not pair.peer.opened


# -- refusals ---------------------------------------------------------------------------------


def test_our_client_refuses_a_certificate_from_an_unknown_ca(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    pair = interop(
        "client", _specs(), proton_ssl=proton_server(certs.rogue), wrap=our_client(certs)
    )
    failed = _refused(pair)
    assert failed.reason == "CERTIFICATE_VERIFY_FAILED"
    assert failed.verify_error is not None and "issuer certificate" in failed.verify_error
    assert any("unknown ca" in e for e in pair.peer.errors), pair.peer.errors


def test_our_client_refuses_a_wrong_host_name(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    pair = interop(
        "client",
        _specs(),
        proton_ssl=proton_server(certs.server),
        wrap=our_client(certs, hostname="wrong.example"),
    )
    failed = _refused(pair)
    assert failed.reason == "CERTIFICATE_VERIFY_FAILED"
    assert failed.verify_error == "Hostname mismatch, certificate is not valid for 'wrong.example'."


def test_a_proton_client_refuses_our_certificate_from_an_unknown_ca(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    pair = interop(
        "server",
        _specs(),
        proton_ssl=proton_client(certs),
        proton_connect={"sni": HOST},
        wrap=our_server(certs.rogue),
    )
    failed = _refused(pair)
    assert failed.reason == "TLSV1_ALERT_UNKNOWN_CA"
    assert any("certificate verify failed" in e for e in pair.peer.errors), pair.peer.errors


def test_a_proton_client_checking_names_refuses_a_wrong_host_name(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    """Proton's VERIFY_PEER_NAME checks the name it connects as (here its SNI) against our
    certificate."""
    pair = interop(
        "server",
        _specs(),
        proton_ssl=proton_client(certs),
        proton_connect={"sni": "wrong.example"},
        wrap=our_server(certs.server),
    )
    failed = _refused(pair)
    # Proton's alert: handshake_failure, which OpenSSL still names for SSL 3.
    assert failed.reason == "SSLV3_ALERT_HANDSHAKE_FAILURE"
    assert any("certificate verify failed" in e for e in pair.peer.errors), pair.peer.errors


def test_our_server_refuses_a_proton_client_without_a_certificate(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    pair = interop(
        "server",
        _specs(),
        proton_ssl=proton_client(certs),
        proton_connect={"sni": HOST},
        wrap=our_server(certs.server, client_ca=certs.ca),
    )
    failed = _refused(pair)
    assert failed.reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE"


# -- SASL inside TLS --------------------------------------------------------------------------


class Users:
    def check_password(self, username: str, password: str) -> bool:
        return username == "alice" and hmac.compare_digest(password.encode(), PASSWORD.encode())


def test_a_proton_client_authenticates_with_plain_inside_tls(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    """Our server offers PLAIN without allow_cleartext_secrets: the layer told it the
    transport is encrypted. Proton, too, sends PLAIN without allow_insecure_mechs."""
    pair = tls_pair(
        interop,
        "server",
        certs,
        sasl=a.sasl.ServerAuthenticator(Users()),
        proton_connect={
            "sasl_enabled": True,
            "user": "alice",
            "password": PASSWORD,
            "allowed_mechs": "PLAIN",
            "allow_insecure_mechs": False,
        },
    )
    pair.start()
    _established(pair)
    assert pair.conn.sasl_mechanism == "PLAIN"
    assert pair.conn.authenticated_identity == "alice"
    _traffic(pair)


def test_our_client_authenticates_anonymously_inside_tls(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    pair = tls_pair(interop, "client", certs, sasl=a.sasl.ClientCredentials())
    pair.start()
    _established(pair)
    assert pair.conn.sasl_mechanism == "ANONYMOUS"
    _traffic(pair)


def test_a_proton_client_certificate_gives_our_server_its_identity_and_external(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    """Our server requires a client certificate: Proton presents alice's, whose subject is
    the identity SASL EXTERNAL authenticates."""
    pair = tls_pair(
        interop,
        "server",
        certs,
        client_cert=True,
        sasl=a.sasl.ServerAuthenticator(Users()),
        proton_connect={"sasl_enabled": True, "allowed_mechs": "EXTERNAL"},
    )
    pair.start()
    identity = _established(pair).peer_identity
    assert identity is not None and identity.startswith("CN=alice,")
    assert isinstance(pair.transport, a.TLSLayer) and pair.transport.peer_identity == identity
    assert pair.conn.sasl_mechanism == "EXTERNAL"
    assert pair.conn.authenticated_identity == identity
    _traffic(pair)


def test_our_client_certificate_authenticates_with_external_to_proton(
    certs: Certs, interop: Callable[..., Interop]
) -> None:
    """Proton's listener requires and verifies our client certificate and offers EXTERNAL;
    our client, whose layer says it presented a certificate, prefers it."""
    pair = tls_pair(interop, "client", certs, client_cert=True, sasl=a.sasl.ClientCredentials())
    pair.start()
    _established(pair)
    assert pair.conn.sasl_mechanism == "EXTERNAL"
    assert pair.peer.tls is not None
    subject = pair.peer.tls["peer_subject"]
    assert subject is not None and "CN=alice" in subject
    assert pair.peer.user == subject  # Proton's EXTERNAL takes the certificate's subject
    _traffic(pair)
