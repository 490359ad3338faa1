"""The TLS layer (core spec 5.2): two layers pumped in memory, in every chunking; hostile
input; and the standard library's blocking TLS over a loopback socket on the other end."""

from __future__ import annotations

import random
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import amqp_sansio as a
from amqp_sansio.events import Event
from amqp_sansio.framing.amqp10 import AMQP_HEADER, SASL_HEADER
from amqp_sansio.security.mechanisms import ExternalServer
from amqp_sansio.security.tls import (
    TLS_HEADER,
    TLSClosed,
    TLSEstablished,
    TLSFailed,
    TLSHeaderMismatch,
    TLSLayer,
    TLSState,
    client_context,
    server_context,
    subject_to_string,
)

PASSWORD = "correct horse battery staple"

# -- fixtures ------------------------------------------------------------------------------


@attrs.define
class Certs:
    ca: str
    other_ca: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key_encrypted: str
    client_subject: str


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    root = tmp_path_factory.mktemp("certs")
    ca, other = trustme.CA(), trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert(
        "alice@example.org",
        common_name="alice",
        organization_name="Example, Inc.",
        organization_unit_name="Dev",
    )

    def write(name: str, data: bytes) -> str:
        path = root / name
        path.write_bytes(data)
        return str(path)

    key = serialization.load_pem_private_key(client.private_key_pem.bytes(), password=None)
    encrypted = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(PASSWORD.encode()),
    )
    chain = b"".join(blob.bytes() for blob in client.cert_chain_pems)
    subject = x509.load_pem_x509_certificate(client.cert_chain_pems[0].bytes()).subject
    return Certs(
        ca=write("ca.pem", ca.cert_pem.bytes()),
        other_ca=write("other.pem", other.cert_pem.bytes()),
        server_cert=write("server.pem", b"".join(b.bytes() for b in server.cert_chain_pems)),
        server_key=write("server.key", server.private_key_pem.bytes()),
        client_cert=write("client.pem", chain),
        client_key_encrypted=write("client.key", encrypted),
        client_subject=subject.rfc4514_string(),
    )


# -- a fake inner object ----------------------------------------------------------------------


@attrs.frozen
class Got(Event):
    data: bytes


@attrs.frozen
class GotEOF(Event):
    pass


@attrs.frozen
class Ticked(Event):
    now: float


class Inner:
    """Records what arrives and sends what it is told to."""

    def __init__(self, send: bytes = b"") -> None:
        self.received = bytearray()
        self.eof = False
        self.pending = send
        self.deadline: float | None = None

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        if not data:
            self.eof = True
            return [GotEOF()]
        self.received += data
        return [Got(bytes(data))]

    def data_to_send(self) -> bytes:
        out, self.pending = self.pending, b""
        return out

    def next_deadline(self) -> float | None:
        return self.deadline

    def handle_timer(self, now: float) -> list[Event]:
        return [Ticked(now)]


class BareInner:
    """Only the two required methods."""

    def receive_data(self, data: bytes, now: float) -> list[Event]:
        return []

    def data_to_send(self) -> bytes:
        return b""


# -- wiring ---------------------------------------------------------------------------------

Chunker = Callable[[bytes], Iterator[bytes]]


def whole(data: bytes) -> Iterator[bytes]:
    yield data


def bytewise(data: bytes) -> Iterator[bytes]:
    for i in range(len(data)):
        yield data[i : i + 1]


def random_chunks(seed: int) -> Chunker:
    rnd = random.Random(seed)

    def chunks(data: bytes) -> Iterator[bytes]:
        i = 0
        while i < len(data):
            n = rnd.randint(1, 300)
            yield data[i : i + n]
            i += n

    return chunks


CHUNKERS = {"whole": whole, "bytewise": bytewise, "random": random_chunks(7)}


@attrs.define
class Wire:
    client: TLSLayer
    server: TLSLayer
    chunker: Chunker = whole
    client_events: list[Event] = attrs.Factory(list)
    server_events: list[Event] = attrs.Factory(list)
    log: list[tuple[str, bytes]] = attrs.Factory(list)
    #: The events of each receive_data call that returned some.
    calls: list[tuple[str, list[Event]]] = attrs.Factory(list)

    def pump(self, limit: int = 100) -> None:
        for _ in range(limit):
            out_c = self.client.data_to_send()
            out_s = self.server.data_to_send()
            if not out_c and not out_s:
                return
            if out_c:
                self.log.append(("c>s", out_c))
                for piece in self.chunker(out_c):
                    got = self.server.receive_data(piece, 1.0)
                    self.server_events += got
                    self.calls += [("server", got)] if got else []
            if out_s:
                self.log.append(("s>c", out_s))
                for piece in self.chunker(out_s):
                    got = self.client.receive_data(piece, 1.0)
                    self.client_events += got
                    self.calls += [("client", got)] if got else []
        raise AssertionError("never quiet")


def contexts(
    certs: Certs, *, client_cert: bool = False, **server: Any
) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    kwargs: dict[str, Any] = {}
    if client_cert:
        kwargs = {
            "certfile": certs.client_cert,
            "keyfile": certs.client_key_encrypted,
            "password": PASSWORD,
        }
    return (
        client_context(cafile=certs.ca, **kwargs),
        server_context(certs.server_cert, certs.server_key, **server),
    )


def wire(
    certs: Certs,
    *,
    negotiate: bool = True,
    chunker: Chunker = whole,
    client_send: bytes = b"hello from the client",
    server_send: bytes = b"hello from the server",
    hostname: str = "localhost",
    ctx: tuple[ssl.SSLContext, ssl.SSLContext] | None = None,
) -> tuple[Wire, Inner, Inner]:
    cctx, sctx = ctx or contexts(certs)
    ci, si = Inner(client_send), Inner(server_send)
    c = TLSLayer(ci, cctx, client=True, server_hostname=hostname, negotiate=negotiate)
    s = TLSLayer(si, sctx, client=False, negotiate=negotiate)
    return Wire(c, s, chunker), ci, si


def kinds(events: list[Event]) -> list[type]:
    return [type(e) for e in events]


def failed(events: list[Event]) -> TLSFailed:
    failures = [e for e in events if isinstance(e, TLSFailed)]
    assert len(failures) == 1, events
    return failures[0]


# -- both modes, every chunking ---------------------------------------------------------------


@pytest.mark.parametrize("chunking", sorted(CHUNKERS))
@pytest.mark.parametrize("negotiate", [True, False], ids=["negotiated", "direct"])
def test_handshake_and_data_both_ways(certs: Certs, negotiate: bool, chunking: str) -> None:
    w, ci, si = wire(certs, negotiate=negotiate, chunker=CHUNKERS[chunking])
    w.pump()
    assert w.client.state is w.server.state is TLSState.OPEN
    assert bytes(si.received) == b"hello from the client"
    assert bytes(ci.received) == b"hello from the server"
    # TLS's events come first, then the inner object's, in order.
    for events in (w.client_events, w.server_events):
        assert isinstance(events[0], TLSEstablished)
        assert all(isinstance(e, Got) for e in events[1:])
    established = w.client_events[0]
    assert isinstance(established, TLSEstablished)
    assert established.version == w.client.version == "TLSv1.3"
    assert established.cipher == w.client.cipher
    assert established.peer_certificate == w.client.peer_certificate
    assert established.peer_identity == w.client.peer_identity
    assert w.client.peer_certificate is not None
    assert w.client.peer_certificate_der is not None
    assert w.client.server_hostname == "localhost"
    assert w.server.server_hostname is None
    assert w.server.peer_certificate is None and w.server.peer_identity is None
    assert isinstance(w.client.session, ssl.SSLSession)
    # The first bytes each way: the TLS protocol header (5.2), or TLS at once (5.2.1).
    first_c = next(data for d, data in w.log if d == "c>s")
    first_s = next(data for d, data in w.log if d == "s>c")
    if negotiate:
        assert first_c == first_s == TLS_HEADER
    else:
        assert first_c[0] == 0x16 and first_s[0] == 0x16
    # More data later, both ways.
    ci.pending, si.pending = b"more" * 5000, b"less"
    w.pump()
    assert si.received.endswith(b"more" * 5000) and ci.received.endswith(b"less")


def test_before_the_handshake(certs: Certs) -> None:
    w, _, _ = wire(certs)
    for layer in (w.client, w.server):
        assert layer.version is layer.cipher is layer.peer_certificate is None
        assert layer.peer_certificate_der is layer.peer_identity is None
    assert repr(w.client) == "<TLSLayer client header>"
    assert repr(w.server) == "<TLSLayer server header>"
    w.pump()
    assert repr(w.client) == "<TLSLayer client open TLSv1.3>"


def test_tls_1_2(certs: Certs) -> None:
    cctx, sctx = contexts(certs)
    sctx.maximum_version = ssl.TLSVersion.TLSv1_2
    w, ci, si = wire(certs, ctx=(cctx, sctx))
    w.pump()
    assert w.client.version == w.server.version == "TLSv1.2"
    # In TLS 1.2 the server's last flight (Finished) and its first data come in one chunk:
    # the handshake completes and the data reaches the inner object in the same call.
    assert ("client", [w.client_events[0], Got(b"hello from the server")]) in w.calls
    assert bytes(ci.received) == b"hello from the server"
    assert bytes(si.received) == b"hello from the client"


def test_inner_data_after_the_handshake_in_one_chunk(certs: Certs) -> None:
    """TLS 1.3: the client's Finished and its first data arrive together at the server."""
    w, _, si = wire(certs)
    w.pump()
    assert ("server", [w.server_events[0], Got(b"hello from the client")]) in w.calls
    assert bytes(si.received) == b"hello from the client"


def test_leftover_after_the_header_is_handed_on(certs: Certs) -> None:
    """A client that sends its ClientHello right behind the TLS header (pipelining)."""
    cctx, sctx = contexts(certs)
    ci, si = Inner(b"ping"), Inner(b"pong")
    client = TLSLayer(ci, cctx, client=True, server_hostname="localhost", negotiate=False)
    server = TLSLayer(si, sctx, client=False)
    assert server.receive_data(TLS_HEADER + client.data_to_send(), 0.0) == []
    answer = server.data_to_send()
    assert answer.startswith(TLS_HEADER) and len(answer) > 8
    w = Wire(client, server)
    w.client_events += client.receive_data(answer[8:], 0.0)
    w.pump()
    assert bytes(si.received) == b"ping" and bytes(ci.received) == b"pong"


def test_the_engine_runs_inside(certs: Certs) -> None:
    """Two engines, each under a TLS layer: open and close over TLS."""
    cctx, sctx = contexts(certs)
    cconn, sconn = a.Connection(client=True), a.Connection(client=False)
    w = Wire(
        TLSLayer(cconn, cctx, client=True, server_hostname="localhost"),
        TLSLayer(sconn, sctx, client=False),
        random_chunks(3),
    )
    cconn.open()
    w.pump()
    assert any(isinstance(e, a.events.ConnectionOpened) for e in w.server_events)
    sconn.open()
    w.pump()
    assert any(isinstance(e, a.events.ConnectionOpened) for e in w.client_events)
    cconn.close()  # the server's engine answers the close by itself
    w.pump()
    assert any(isinstance(e, a.events.ConnectionEnded) for e in w.server_events)
    assert any(isinstance(e, a.events.ConnectionEnded) for e in w.client_events)
    w.client.close()
    w.pump()
    assert w.client.state is w.server.state is TLSState.CLOSED


#: Long enough never to turn up by chance in a few KiB of ciphertext.
LONG = "a-password-long-enough-never-to-be-seen-by-chance"


class _Users:
    def check_password(self, username: str, password: str) -> bool:
        return (username, password) == ("alice", LONG)


@pytest.mark.parametrize("chunker", ["whole", "bytewise"])
def test_sasl_plain_over_tls_needs_no_opt_in(certs: Certs, chunker: str) -> None:
    """TLS header, handshake, then SASL inside TLS: the layer tells the engine the transport
    is encrypted, so PLAIN goes without ``allow_plain_without_tls`` (core spec 5.2, 5.3)."""
    cctx, sctx = contexts(certs)
    cconn = a.Connection(
        client=True, sasl=a.sasl.ClientCredentials(username="alice", password=LONG)
    )
    sconn = a.Connection(client=False, sasl=a.sasl.ServerAuthenticator(_Users()))
    w = Wire(
        TLSLayer(cconn, cctx, client=True, server_hostname="localhost"),
        TLSLayer(sconn, sctx, client=False),
        CHUNKERS[chunker],
    )
    cconn.open()
    w.pump()
    assert kinds(w.server_events)[:3] == [
        TLSEstablished,
        a.events.Authenticated,
        a.events.ConnectionOpened,
    ]
    assert sconn.authenticated_identity == "alice" and sconn.sasl_mechanism == "PLAIN"
    wire_bytes = b"".join(data for _, data in w.log)
    assert LONG.encode() not in wire_bytes  # encrypted on the wire


def test_sasl_plain_without_tls_is_not_offered_by_default(certs: Certs) -> None:
    server = a.Connection(client=False, sasl=a.sasl.ServerAuthenticator(_Users()))
    events = server.receive_data(SASL_HEADER, 0.0)
    (failed,) = [e for e in events if isinstance(e, a.events.AuthenticationFailed)]
    assert "no SASL mechanism" in failed.description


def test_sasl_external_stands_on_the_client_certificate(certs: Certs) -> None:
    cctx, sctx = contexts(certs, client_cert=True, cafile=certs.ca, require_client_cert=True)
    cconn = a.Connection(client=True, sasl=a.sasl.ClientCredentials())
    sconn = a.Connection(client=False, sasl=a.sasl.ServerAuthenticator())
    w = Wire(
        TLSLayer(cconn, cctx, client=True, server_hostname="localhost", client_certificate=True),
        TLSLayer(sconn, sctx, client=False),
        random_chunks(11),
    )
    cconn.open()
    w.pump()
    (done,) = [e for e in w.server_events if isinstance(e, a.events.Authenticated)]
    assert done == a.events.Authenticated(mechanism="EXTERNAL", identity=certs.client_subject)
    assert sconn.authenticated_identity == "CN=alice,OU=Dev,O=Example\\, Inc."


# -- certificates --------------------------------------------------------------------------


def test_hostname_mismatch(certs: Certs) -> None:
    w, ci, si = wire(certs, hostname="example.com")
    w.pump()
    failure = failed(w.client_events)
    assert failure.reason == "CERTIFICATE_VERIFY_FAILED"
    assert failure.verify_error is not None and "Hostname mismatch" in failure.verify_error
    assert "example.com" in failure.error and "_ssl.c" not in failure.error
    # The client's alert reaches the server, which fails too.
    assert failed(w.server_events).verify_error is None
    assert w.client.state is w.server.state is TLSState.FAILED
    assert not ci.received and not si.received and not ci.eof and not si.eof
    # Afterwards: nothing reported, nothing sent.
    assert w.client.receive_data(b"\x17\x03\x03\x00\x05hello", 2.0) == []
    assert w.client.receive_data(b"", 2.0) == []
    assert w.client.data_to_send() == b""
    assert w.client.handle_timer(2.0) == []
    assert w.client.next_deadline() is None


def test_ip_address_is_checked(certs: Certs) -> None:
    w, _, _ = wire(certs, hostname="127.0.0.1")
    w.pump()
    assert w.client.state is TLSState.OPEN
    w, _, _ = wire(certs, hostname="127.0.0.2")
    w.pump()
    assert "IP address mismatch" in (failed(w.client_events).verify_error or "")


def test_unknown_ca(certs: Certs) -> None:
    _, sctx = contexts(certs)
    w, _, _ = wire(certs, ctx=(client_context(cafile=certs.other_ca), sctx))
    w.pump()
    failure = failed(w.client_events)
    assert failure.reason == "CERTIFICATE_VERIFY_FAILED"
    assert "issuer" in (failure.verify_error or "")
    assert failed(w.server_events).reason == "TLSV1_ALERT_UNKNOWN_CA"


def test_verification_off_must_be_asked_for(certs: Certs) -> None:
    _, sctx = contexts(certs)
    cctx = client_context(cafile=certs.other_ca, verify=False)
    w, ci, _ = wire(certs, hostname="example.com", ctx=(cctx, sctx))
    w.pump()
    assert w.client.state is TLSState.OPEN
    assert bytes(ci.received) == b"hello from the server"
    # Nothing was verified: no decoded certificate, no identity; the DER is still there.
    assert w.client.peer_certificate is None and w.client.peer_identity is None
    assert w.client.peer_certificate_der is not None


def test_hostname_check_off_keeps_verification(certs: Certs) -> None:
    _, sctx = contexts(certs)
    cctx = client_context(cafile=certs.ca, check_hostname=False)
    assert cctx.verify_mode is ssl.CERT_REQUIRED
    w, _, _ = wire(certs, hostname="example.com", ctx=(cctx, sctx))
    w.pump()
    assert w.client.state is TLSState.OPEN
    cctx = client_context(cafile=certs.other_ca, check_hostname=False)
    w, _, _ = wire(certs, ctx=(cctx, sctx))
    w.pump()
    assert failed(w.client_events).reason == "CERTIFICATE_VERIFY_FAILED"


def test_client_certificate_required_and_missing(certs: Certs) -> None:
    w, ci, _ = wire(certs, ctx=contexts(certs, cafile=certs.ca, require_client_cert=True))
    w.pump()
    assert failed(w.server_events).reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE"
    # In TLS 1.3 the client finishes first, then reads the server's alert: its inner object
    # is told the stream ended.
    assert kinds(w.client_events) == [TLSEstablished, TLSFailed, GotEOF]
    assert ci.eof and w.client.state is TLSState.FAILED


@pytest.mark.parametrize("required", [True, False])
def test_client_certificate_gives_the_identity(certs: Certs, required: bool) -> None:
    ctx = contexts(certs, client_cert=True, cafile=certs.ca, require_client_cert=required)
    w, _, si = wire(certs, ctx=ctx)
    w.pump()
    assert w.server.state is TLSState.OPEN
    assert bytes(si.received) == b"hello from the client"
    assert w.server.peer_identity == certs.client_subject
    assert w.server.peer_identity == "CN=alice,OU=Dev,O=Example\\, Inc."
    established = w.server_events[0]
    assert isinstance(established, TLSEstablished)
    assert established.peer_identity == certs.client_subject
    assert established.peer_certificate is not None
    assert established.peer_certificate["subjectAltName"] == (("email", "alice@example.org"),)
    # The identity works for SASL EXTERNAL.
    outcome = ExternalServer(w.server.peer_identity).start(b"")
    assert outcome.identity == certs.client_subject


def test_client_certificate_optional_and_missing(certs: Certs) -> None:
    w, _, _ = wire(certs, ctx=contexts(certs, cafile=certs.ca))
    w.pump()
    assert w.server.state is TLSState.OPEN and w.server.peer_identity is None


def test_client_certificate_from_an_unknown_ca(certs: Certs) -> None:
    cctx, _ = contexts(certs, client_cert=True)
    sctx = server_context(certs.server_cert, certs.server_key, cafile=certs.other_ca)
    w, _, _ = wire(certs, ctx=(cctx, sctx))
    w.pump()
    assert failed(w.server_events).reason == "CERTIFICATE_VERIFY_FAILED"


# -- closing --------------------------------------------------------------------------------


@pytest.mark.parametrize("chunking", sorted(CHUNKERS))
@pytest.mark.parametrize("who", ["client", "server"])
def test_close_notify_both_ways(certs: Certs, who: str, chunking: str) -> None:
    w, ci, si = wire(certs, chunker=CHUNKERS[chunking])
    w.pump()
    w.client_events.clear()
    w.server_events.clear()
    closer, closer_inner = (w.client, ci) if who == "client" else (w.server, si)
    other_inner = si if who == "client" else ci
    closer_events, other_events = (
        (w.client_events, w.server_events)
        if who == "client"
        else (w.server_events, w.client_events)
    )
    closer_inner.pending = b"last words"  # encrypted before the close_notify
    closer.close()
    assert closer.state is TLSState.CLOSING
    closer.close()  # again: nothing more
    w.pump()
    assert bytes(other_inner.received).endswith(b"last words")
    assert kinds(other_events) == [Got, TLSClosed, GotEOF]
    assert other_events[1] == TLSClosed(truncated=False)
    assert kinds(closer_events) == [TLSClosed, GotEOF]
    assert closer_events[0] == TLSClosed(truncated=False)
    assert w.client.state is w.server.state is TLSState.CLOSED
    assert w.client.data_to_send() == w.server.data_to_send() == b""
    assert w.client.receive_data(b"", 2.0) == w.server.receive_data(b"x", 2.0) == []


def test_peer_keeps_sending_after_our_close_notify(certs: Certs) -> None:
    """Unidirectional shutdown (5.2): after our close_notify, the peer's data still arrives."""
    w, ci, si = wire(certs)
    w.pump()
    w.client.close()
    assert w.client.data_to_send()  # our close_notify: not yet at the server
    si.pending = b"late"
    assert kinds(w.client.receive_data(w.server.data_to_send(), 2.0)) == [Got]
    assert ci.received.endswith(b"late")
    assert w.client.state is TLSState.CLOSING


def test_close_notify_then_eof(certs: Certs) -> None:
    w, _, si = wire(certs)
    w.pump()
    w.client.close()
    assert kinds(w.server.receive_data(w.client.data_to_send(), 2.0)) == [TLSClosed, GotEOF]
    assert w.server.receive_data(b"", 2.0) == []  # already reported
    assert si.eof
    assert w.server.data_to_send() != b""  # our own close_notify still goes out
    assert w.server.state is TLSState.CLOSED


def test_eof_without_close_notify_is_truncation(certs: Certs) -> None:
    w, ci, _ = wire(certs)
    w.pump()
    assert w.client.receive_data(b"", 2.0) == [TLSClosed(truncated=True), GotEOF()]
    assert ci.eof and w.client.state is TLSState.CLOSED
    # While we wait for the peer's close_notify, too.
    w, _, _ = wire(certs)
    w.pump()
    w.client.close()
    assert w.client.receive_data(b"", 2.0) == [TLSClosed(truncated=True), GotEOF()]


@pytest.mark.parametrize("negotiate", [True, False], ids=["negotiated", "direct"])
def test_eof_during_the_handshake(certs: Certs, negotiate: bool) -> None:
    w, ci, si = wire(certs, negotiate=negotiate)
    for layer in (w.client, w.server):
        failure = failed(layer.receive_data(b"", 0.0))
        assert failure.reason == "EOF_DURING_HANDSHAKE"
    assert not ci.eof and not si.eof  # the inner objects never started


def test_close_before_the_handshake(certs: Certs) -> None:
    w, _, _ = wire(certs)
    assert w.client.data_to_send() == TLS_HEADER
    w.client.close()
    w.server.close()
    assert w.client.state is w.server.state is TLSState.CLOSED
    assert w.client.receive_data(TLS_HEADER, 0.0) == []
    assert w.client.data_to_send() == b""
    w.client.close()
    w, _, _ = wire(certs, negotiate=False)
    w.server.close()
    assert w.server.state is TLSState.CLOSED


def test_failed_layer_ignores_close(certs: Certs) -> None:
    w, _, _ = wire(certs, hostname="example.com")
    w.pump()
    w.client.close()
    assert w.client.state is TLSState.FAILED and w.client.data_to_send() == b""


# -- protocol headers (2.2, 5.2) ------------------------------------------------------------


@pytest.mark.parametrize("chunking", sorted(CHUNKERS))
@pytest.mark.parametrize(
    ("header", "name"),
    [
        (AMQP_HEADER, "AMQP 1.0 without TLS"),
        (SASL_HEADER, "AMQP 1.0 SASL without TLS"),
        (b"AMQP\x00\x00\x09\x01", "AMQP 0-9-1"),
        (b"AMQP\x02\x01\x00\x01", "AMQP protocol id 2 version 1.0.1"),
    ],
)
def test_server_refuses_another_header(
    certs: Certs, header: bytes, name: str, chunking: str
) -> None:
    _, sctx = contexts(certs)
    inner = Inner(b"never")
    server = TLSLayer(inner, sctx, client=False)
    events = [
        e for piece in CHUNKERS[chunking](header + b"rest") for e in server.receive_data(piece, 0.0)
    ]
    assert events == [TLSHeaderMismatch(header=header, version_name=name)]
    # As 2.2 says: the server answers with the header it requires, then ends.
    assert server.data_to_send() == TLS_HEADER
    assert server.data_to_send() == b""
    assert server.state is TLSState.FAILED and not inner.received


@pytest.mark.parametrize(
    ("data", "header", "name"),
    [
        (b"GET / HTTP/1.1\r\n", b"GET / HT", "HTTP"),
        (b"\x16\x03\x01\x02\x00\x01", b"\x16\x03\x01\x02\x00\x01", "a TLS handshake without"),
        (b"AM\x00", b"AM\x00", "not AMQP"),
    ],
)
def test_server_refuses_what_is_not_amqp_at_once(
    certs: Certs, data: bytes, header: bytes, name: str
) -> None:
    _, sctx = contexts(certs)
    server = TLSLayer(Inner(), sctx, client=False)
    [event] = server.receive_data(data, 0.0)
    assert isinstance(event, TLSHeaderMismatch)
    assert event.header == header and event.version_name.startswith(name)
    assert server.data_to_send() == TLS_HEADER


def test_client_gets_another_header(certs: Certs) -> None:
    cctx, _ = contexts(certs)
    client = TLSLayer(Inner(b"x"), cctx, client=True, server_hostname="localhost")
    assert client.data_to_send() == TLS_HEADER
    events = client.receive_data(SASL_HEADER, 0.0)
    assert events == [
        TLSHeaderMismatch(header=SASL_HEADER, version_name="AMQP 1.0 SASL without TLS")
    ]
    assert client.data_to_send() == b""  # a client says nothing more
    assert client.receive_data(b"", 0.0) == []


def test_header_waits_for_eight_bytes(certs: Certs) -> None:
    _, sctx = contexts(certs)
    server = TLSLayer(Inner(), sctx, client=False)
    assert server.receive_data(b"AMQP\x02\x01\x00", 0.0) == []
    assert server.state is TLSState.HEADER and server.data_to_send() == b""
    assert server.receive_data(b"\x00", 0.0) == []
    assert server.data_to_send() == TLS_HEADER and server.state is TLSState.HANDSHAKE


# -- hostile input -----------------------------------------------------------------------------


def test_garbage_in_the_handshake(certs: Certs) -> None:
    cctx, sctx = contexts(certs)
    server = TLSLayer(Inner(), sctx, client=False, negotiate=False)
    failure = failed(server.receive_data(b"\xff" * 64, 0.0))
    assert failure.reason is not None
    server.data_to_send()  # an alert, perhaps: then nothing
    assert server.data_to_send() == b"" and server.state is TLSState.FAILED
    client = TLSLayer(Inner(), cctx, client=True, server_hostname="localhost", negotiate=False)
    assert client.data_to_send()[0] == 0x16
    failed(client.receive_data(b"\x15\x03\x03\x00\x02\x02\x28", 0.0))  # a fatal alert


def test_record_longer_than_tls_allows_fails_at_once(certs: Certs) -> None:
    _, sctx = contexts(certs)
    server = TLSLayer(Inner(), sctx, client=False, negotiate=False)
    assert failed(server.receive_data(b"\x16\x03\x01\xff\xff", 0.0)).reason == (
        "PACKET_LENGTH_TOO_LONG"
    )


@pytest.mark.parametrize("garbage_at", ["alone", "after_data"])
def test_garbage_after_the_handshake(certs: Certs, garbage_at: str) -> None:
    w, ci, si = wire(certs)
    w.pump()
    w.client_events.clear()
    si.pending = b"good"
    good = w.server.data_to_send() if garbage_at == "after_data" else b""
    events = w.client.receive_data(good + b"\x17\x03\x03\x00\x20" + b"\x00" * 32, 2.0)
    expected = [Got, TLSFailed, GotEOF] if good else [TLSFailed, GotEOF]
    assert kinds(events) == expected
    assert ci.eof and w.client.state is TLSState.FAILED
    alert = w.client.data_to_send()  # in TLS 1.3, encrypted: it looks like data
    assert w.client.data_to_send() == b""
    assert kinds(w.server.receive_data(alert, 2.0)) == [TLSFailed, GotEOF]


def test_tampered_record(certs: Certs) -> None:
    w, _, si = wire(certs)
    w.pump()
    si.pending = b"secret" * 10
    record = bytearray(w.server.data_to_send())
    record[-1] ^= 1
    events = w.client.receive_data(bytes(record), 2.0)
    assert failed(events).reason in {"DECRYPTION_FAILED_OR_BAD_RECORD_MAC", "BAD_RECORD_MAC"}
    # The alert goes to the server, which fails in turn.
    assert failed(w.server.receive_data(w.client.data_to_send(), 2.0)).reason is not None


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=2000), negotiate=st.booleans(), client=st.booleans())
def test_random_bytes_never_raise(certs: Certs, data: bytes, negotiate: bool, client: bool) -> None:
    cctx, sctx = contexts_cache(certs)
    layer = (
        TLSLayer(Inner(), cctx, client=True, server_hostname="localhost", negotiate=negotiate)
        if client
        else TLSLayer(Inner(), sctx, client=False, negotiate=negotiate)
    )
    layer.data_to_send()
    events = layer.receive_data(data, 0.0)
    assert set(kinds(events)) <= {TLSFailed, TLSHeaderMismatch}
    assert len(events) <= 1
    layer.data_to_send()
    # Nothing is left lying in the incoming buffer: OpenSSL holds at most one record.
    assert layer._incoming.pending == 0
    layer.receive_data(b"", 0.0)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(min_size=1, max_size=3000))
def test_random_bytes_after_the_handshake(certs: Certs, data: bytes) -> None:
    w, ci, _ = wire(certs, ctx=contexts_cache(certs))
    w.pump()
    events = w.client.receive_data(data, 2.0)
    assert kinds(events) in ([], [TLSFailed, GotEOF])
    assert ci.eof is bool(events)
    assert w.client._incoming.pending == 0


_CACHE: dict[str, tuple[ssl.SSLContext, ssl.SSLContext]] = {}


def contexts_cache(certs: Certs) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    if certs.ca not in _CACHE:
        _CACHE[certs.ca] = contexts(certs)
    return _CACHE[certs.ca]


@st.composite
def cuts(draw: st.DrawFn) -> Chunker:
    sizes = draw(st.lists(st.integers(1, 600), min_size=1, max_size=40))

    def chunks(data: bytes) -> Iterator[bytes]:
        i, k = 0, 0
        while i < len(data):
            n = sizes[k % len(sizes)]
            yield data[i : i + n]
            i, k = i + n, k + 1

    return chunks


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(chunker=cuts(), negotiate=st.booleans(), payload=st.binary(max_size=5000))
def test_chunking_never_changes_the_outcome(
    certs: Certs, chunker: Chunker, negotiate: bool, payload: bytes
) -> None:
    w, ci, si = wire(
        certs,
        negotiate=negotiate,
        chunker=chunker,
        client_send=b"c" + payload,
        server_send=b"s" + payload[::-1],
        ctx=contexts_cache(certs),
    )
    w.pump()
    assert bytes(si.received) == b"c" + payload
    assert bytes(ci.received) == b"s" + payload[::-1]
    assert kinds(w.client_events)[0] is kinds(w.server_events)[0] is TLSEstablished
    w.server.close()
    w.pump()
    assert w.client.state is w.server.state is TLSState.CLOSED
    assert w.client_events[-2:] == [TLSClosed(truncated=False), GotEOF()]


# -- timers, odd corners -----------------------------------------------------------------------


def test_timers_pass_through(certs: Certs) -> None:
    w, ci, _ = wire(certs)
    assert w.client.next_deadline() is None
    ci.deadline = 12.5
    assert w.client.next_deadline() == 12.5
    assert w.client.handle_timer(13.0) == [Ticked(13.0)]
    cctx, _ = contexts(certs)
    bare = TLSLayer(BareInner(), cctx, client=True, server_hostname="localhost")
    assert bare.next_deadline() is None and bare.handle_timer(1.0) == []


def test_local_mistakes(certs: Certs) -> None:
    cctx, sctx = contexts(certs)
    with pytest.raises(a.LocalProtocolError, match="server_hostname"):
        TLSLayer(Inner(), cctx, client=True)
    with pytest.raises(a.LocalProtocolError, match="client role"):
        TLSLayer(Inner(), sctx, client=False, server_hostname="localhost")
    with pytest.raises(a.LocalProtocolError, match="SSLContext"):
        TLSLayer(Inner(), sctx, client=True)
    with pytest.raises(a.LocalProtocolError, match="cafile"):
        server_context(certs.server_cert, certs.server_key, require_client_cert=True)
    with pytest.raises(a.LocalProtocolError, match="certfile"):
        client_context(cafile=certs.ca, keyfile=certs.client_key_encrypted)
    with pytest.raises(ssl.SSLError):
        client_context(
            cafile=certs.ca,
            certfile=certs.client_cert,
            keyfile=certs.client_key_encrypted,
            password="wrong",
        )


def test_contexts_are_secure_by_default(certs: Certs) -> None:
    cctx = client_context(cafile=certs.ca)
    assert cctx.verify_mode is ssl.CERT_REQUIRED and cctx.check_hostname
    assert cctx.minimum_version is ssl.TLSVersion.TLSv1_2
    assert cctx.options & ssl.OP_NO_RENEGOTIATION
    off = client_context(verify=False)
    assert off.verify_mode is ssl.CERT_NONE and not off.check_hostname
    sctx = server_context(certs.server_cert, certs.server_key)
    assert sctx.verify_mode is ssl.CERT_NONE  # no CA given: no client certificate asked for
    assert sctx.minimum_version is ssl.TLSVersion.TLSv1_2
    asked = server_context(certs.server_cert, certs.server_key, cafile=certs.ca)
    assert asked.verify_mode is ssl.CERT_OPTIONAL
    required = server_context(
        certs.server_cert, certs.server_key, cafile=certs.ca, require_client_cert=True
    )
    assert required.verify_mode is ssl.CERT_REQUIRED
    assert server_context(certs.server_cert, certs.server_key).get_ca_certs() == []


def test_passwords_stay_out_of_reprs(certs: Certs) -> None:
    ctx = contexts(certs, client_cert=True, cafile=certs.ca, require_client_cert=True)
    w, _, _ = wire(certs, ctx=ctx)
    w.pump()
    for thing in [ctx[0], w.client, w.server, *w.client_events, *w.server_events]:
        assert PASSWORD not in repr(thing) and PASSWORD not in str(thing)
    assert w.server.peer_identity is not None


class _Failing:
    """An SSLObject whose write or unwrap fails (neither happens with a sound context)."""

    def __init__(self, real: ssl.SSLObject, fail: str) -> None:
        self._real, self._fail = real, fail

    def write(self, data: bytes) -> int:
        if self._fail == "write":
            raise ssl.SSLError(1, "[SSL: BAD_WRITE_RETRY] bad write retry (_ssl.c:1)")
        return self._real.write(data)

    def unwrap(self) -> None:
        raise ssl.SSLError(1, "[SSL: SHUTDOWN_WHILE_IN_INIT] nope (_ssl.c:1)")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def test_a_failed_write_is_reported_by_the_next_call(certs: Certs) -> None:
    for call in ("receive_data", "handle_timer"):
        w, ci, _ = wire(certs)
        w.pump()
        w.client._ssl = _Failing(w.client._ssl, "write")  # type: ignore[assignment]
        ci.pending = b"doomed"
        assert w.client.data_to_send() == b""
        if call == "receive_data":
            events = w.client.receive_data(b"", 3.0)
        else:
            events = w.client.handle_timer(3.0)
        assert kinds(events) == [TLSFailed, GotEOF]
        assert failed(events).error == "[SSL: BAD_WRITE_RETRY] bad write retry"
        assert w.client.state is TLSState.FAILED and ci.eof
        assert w.client.handle_timer(4.0) == []


def test_a_failed_close_notify_just_ends(certs: Certs) -> None:
    w, _, _ = wire(certs)
    w.pump()
    w.client._ssl = _Failing(w.client._ssl, "unwrap")  # type: ignore[assignment]
    w.client.close()
    assert w.client.state is TLSState.CLOSED


# -- subjects (RFC 4514) ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("subject", "text"),
    [
        ((), None),
        (((("commonName", "alice"),),), "CN=alice"),
        (
            ((("countryName", "GB"),), (("organizationName", "Example"),), (("commonName", "a"),)),
            "CN=a,O=Example,C=GB",
        ),
        ((((("commonName", "a"), ("userId", "7"))),), "CN=a+UID=7"),
        (((("emailAddress", "a@b"),), (("2.5.4.97", "x"),)), "2.5.4.97=x,emailAddress=a@b"),
        (((("commonName", 'a,b+c"d\\e<f>g;h'),),), 'CN=a\\,b\\+c\\"d\\\\e\\<f\\>g\\;h'),
        (((("commonName", "#lead"),),), "CN=\\#lead"),
        (((("commonName", " both "),),), "CN=\\ both\\ "),
        (((("commonName", " "),),), "CN=\\ "),
        (((("commonName", "nul\x00"),),), "CN=nul\\00"),
        (((("domainComponent", "org"),), (("domainComponent", "example"),)), "DC=example,DC=org"),
    ],
)
def test_subject_to_string(subject: Any, text: str | None) -> None:
    assert subject_to_string(subject) == text


# -- against the standard library's blocking TLS over a real socket -------------------------------


def _serve(
    listener: socket.socket, sctx: ssl.SSLContext, negotiate: bool, result: dict[str, Any]
) -> None:
    try:
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(10)
            if negotiate:
                result["header"] = _recv_exactly(conn, 8)
                conn.sendall(TLS_HEADER)
            with sctx.wrap_socket(conn, server_side=True) as tls:
                result["got"] = _recv_exactly(tls, 12)
                tls.sendall(b"stdlib says hi" * 1000)
                result["eof"] = tls.recv(100)  # b"" on our close_notify
                tls.unwrap()
    except Exception as exc:  # pragma: no cover - reported by the test
        result["error"] = exc


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk
        data += chunk
    return data


def _drive(sock: socket.socket, layer: TLSLayer, until: Callable[[], bool]) -> list[Event]:
    events: list[Event] = []
    for _ in range(1000):
        out = layer.data_to_send()
        if out:
            sock.sendall(out)
        if until():
            return events
        data = sock.recv(65536)
        events += layer.receive_data(data, 0.0)
        if not data:
            return events
    raise AssertionError("never done")  # pragma: no cover


@pytest.mark.parametrize("negotiate", [True, False], ids=["negotiated", "direct"])
def test_our_client_against_stdlib_server(certs: Certs, negotiate: bool) -> None:
    cctx, sctx = contexts(certs, client_cert=True, cafile=certs.ca, require_client_cert=True)
    result: dict[str, Any] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:
        thread = threading.Thread(target=_serve, args=(listener, sctx, negotiate, result))
        thread.start()
        inner = Inner(b"hello stdlib")
        layer = TLSLayer(inner, cctx, client=True, server_hostname="localhost", negotiate=negotiate)
        with socket.create_connection(listener.getsockname(), timeout=10) as sock:
            events = _drive(sock, layer, lambda: len(inner.received) >= 14000)
            layer.close()
            events += _drive(sock, layer, lambda: layer.state is TLSState.CLOSED)
        thread.join(10)
    assert "error" not in result, result
    assert result["got"] == b"hello stdlib" and result["eof"] == b""
    assert result.get("header", TLS_HEADER) == TLS_HEADER
    assert bytes(inner.received) == b"stdlib says hi" * 1000
    assert isinstance(events[0], TLSEstablished)
    assert (layer.peer_identity or "").startswith("OU=Testing cert")  # trustme's subject
    assert TLSClosed(truncated=False) in events


def _client(port: int, cctx: ssl.SSLContext, result: dict[str, Any]) -> None:
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            cctx.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.sendall(b"from stdlib client")
            result["got"] = _recv_exactly(tls, 9)
            result["eof"] = tls.recv(100)
            result["version"] = tls.version()
    except Exception as exc:  # pragma: no cover - reported by the test
        result["error"] = exc


def test_stdlib_client_against_our_server(certs: Certs) -> None:
    cctx, sctx = contexts(certs, client_cert=True, cafile=certs.ca, require_client_cert=True)
    result: dict[str, Any] = {}
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        thread = threading.Thread(target=_client, args=(port, cctx, result))
        thread.start()
        conn, _ = listener.accept()
        with conn:
            conn.settimeout(10)
            inner = Inner(b"from ours")
            layer = TLSLayer(inner, sctx, client=False, negotiate=False)
            events = _drive(conn, layer, lambda: len(inner.received) >= 18)
            layer.close()
            events += _drive(conn, layer, lambda: layer.state is TLSState.CLOSED)
        thread.join(10)
    assert "error" not in result, result
    assert result["got"] == b"from ours" and result["eof"] == b""
    assert bytes(inner.received) == b"from stdlib client"
    assert isinstance(events[0], TLSEstablished)
    assert layer.peer_identity == certs.client_subject
