"""The project's one SASL default (``docs/defaults.rst``), in every place that has one.

* The engine, in memory on a simulated clock: a server that allows anonymous access takes
  the SASL header (ANONYMOUS) and the bare AMQP header (core spec 2.2, 5.1), whole and byte
  by byte; one that requires authentication answers the bare header with its SASL header
  and nothing else; a client that asked for SASL and got the bare header reports
  :class:`~amqp_sansio.events.PeerWithoutSASL`.
* ``amqp-sansio broker`` as a user starts it (only ``--port 0``): Proton's blocking client
  and its Container with their defaults, our ``connect(url)``, ``amqp-sansio send`` and
  ``receive``, and a bare-header client all get through; with ``--users`` and no anonymous
  entry the bare header is refused and the broker's log says why.
* ``connect(url)`` (sockets, asyncio, trio) against a server with no SASL layer connects
  after one logged fallback; against a Proton listener with its defaults, with ANONYMOUS.
* RabbitMQ (``AMQP_SANSIO_RABBITMQ_URL``): ``connect`` without credentials, ANONYMOUS.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import aio, sockets, trio_adapter
from amqp_sansio.adapters.sockets import SocketDriver
from hypothesis import given, settings
from hypothesis import strategies as st
from support.broker_process import BrokerProcess, amqp_sansio_command
from support.engine_pair import Pair, of

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.framing.amqp10
from amqp_sansio.broker import Broker, BrokerConfig, Users
from amqp_sansio.client.engines import client_engine, server_engine, without_sasl
from amqp_sansio.client.url import parse_url

WAIT = 10.0
PASSWORD = "s3cret-pw"


class Store:
    """One user, for PLAIN (a server that requires authentication)."""

    def check_password(self, username: str, password: str) -> bool:
        return username == "alice" and password == PASSWORD


def _anonymous() -> a.sasl.ServerAuthenticator:
    return a.sasl.ServerAuthenticator(None, allow_anonymous=True)


def _requiring() -> a.sasl.ServerAuthenticator:
    return a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True)


def _sent(p: Pair, direction: str) -> bytes:
    return b"".join(data for d, data in p.wire if d == direction)


def _open_frame() -> bytes:
    return a.framing.amqp10.encode_frame(
        a.definitions.amqp10.performatives.Open(container_id="bare-client")
    )


# -- the engine, both roles ------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, None])
def test_an_anonymous_server_takes_the_sasl_header(chunk: int | None) -> None:
    p = Pair(
        chunk=chunk, client={"sasl": a.sasl.ClientCredentials()}, server={"sasl": _anonymous()}
    )
    p.open()
    assert p.client.state is p.server.state is a.ConnectionState.OPENED
    assert of(p.server_events, a.events.Authenticated) == [
        a.events.Authenticated(mechanism="ANONYMOUS", identity="anonymous")
    ]
    assert p.server.sasl_mechanism == "ANONYMOUS"
    assert _sent(p, "s>c").startswith(a.framing.amqp10.SASL_HEADER)


@pytest.mark.parametrize("chunk", [1, 3, None])
def test_an_anonymous_server_takes_the_bare_amqp_header(chunk: int | None) -> None:
    p = Pair(chunk=chunk, client={"sasl": None}, server={"sasl": _anonymous()})
    p.open()
    assert p.client.state is p.server.state is a.ConnectionState.OPENED
    # Reported as an anonymous client without a mechanism: what ANONYMOUS would give.
    assert of(p.server_events, a.events.Authenticated) == [
        a.events.Authenticated(mechanism=None, identity="anonymous")
    ]
    assert p.server.authenticated_identity == "anonymous"
    assert p.server.sasl_mechanism is None
    answer = _sent(p, "s>c")
    assert (
        answer.startswith(a.framing.amqp10.AMQP_HEADER)
        and a.framing.amqp10.SASL_HEADER not in answer
    )
    # The connection works on: a session and a message.
    client_session, _ = p.session()
    sender, receiver = p.link(client_session)
    assert isinstance(sender, a.Sender) and isinstance(receiver, a.Receiver)
    receiver.flow(1)
    p.pump()
    sender.send(a.Message(body=b"hi").encode())
    p.pump()
    assert [e.message().body.value for e in of(p.server_events, a.events.DeliveryReceived)] == [
        b"hi"
    ]


def test_the_bare_header_byte_by_byte_on_the_raw_engine() -> None:
    server = a.Connection(client=False, sasl=_anonymous())
    stream = a.framing.amqp10.AMQP_HEADER + _open_frame()
    events: list[a.Event] = []
    for i in range(len(stream)):
        events += server.receive_data(stream[i : i + 1], float(i))
        if i < len(a.framing.amqp10.AMQP_HEADER) - 1:
            assert events == [] and server.data_to_send() == b""
    assert [type(e) for e in events] == [a.events.Authenticated, a.events.ConnectionOpened]
    server.open()
    out = server.data_to_send()
    assert out.startswith(a.framing.amqp10.AMQP_HEADER)
    parser = a.framing.amqp10.FrameParser()
    parser.feed(out[8:])
    frame = parser.next_frame()
    assert frame is not None and isinstance(frame.body, a.definitions.amqp10.performatives.Open)


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=8))
def test_the_bare_header_anywhere_cut(cuts: list[int]) -> None:
    """Wherever the stream is cut, the anonymous server hears the same thing."""
    server = a.Connection(client=False, sasl=_anonymous())
    stream = a.framing.amqp10.AMQP_HEADER + _open_frame()
    events: list[a.Event] = []
    at = 0
    for n in [*cuts, len(stream)]:
        piece = stream[at : at + n]
        if piece:  # (empty data means the transport closed)
            events += server.receive_data(piece, 0.0)
        at += n
    assert [type(e) for e in events] == [a.events.Authenticated, a.events.ConnectionOpened]
    assert server.data_to_send() == a.framing.amqp10.AMQP_HEADER


@pytest.mark.parametrize("chunk", [1, None])
def test_a_server_that_requires_authentication_refuses_the_bare_header(
    chunk: int | None,
) -> None:
    server = a.Connection(client=False, sasl=_requiring())
    stream = a.framing.amqp10.AMQP_HEADER + _open_frame()
    step = chunk or len(stream)
    events: list[a.Event] = []
    for i in range(0, len(stream), step):
        events += server.receive_data(stream[i : i + step], 0.0)
    assert [type(e) for e in events] == [a.events.PeerWithoutSASL, a.events.ConnectionEnded]
    (refused,) = of(events, a.events.PeerWithoutSASL)
    assert refused.header == a.framing.amqp10.AMQP_HEADER and isinstance(
        refused, a.events.UnsupportedProtocol
    )
    assert server.data_to_send() == a.framing.amqp10.SASL_HEADER  # its own header, then the close
    assert (
        server.receive_data(a.framing.amqp10.SASL_HEADER, 1.0) == []
        and server.data_to_send() == b""
    )
    assert server.authenticated_identity is None


def test_anonymous_must_be_offered_for_the_bare_header() -> None:
    """``allow_anonymous`` with ANONYMOUS left out of ``mechanisms`` is not anonymous access."""
    restricted = a.sasl.ServerAuthenticator(
        Store(), allow_anonymous=True, allow_cleartext_secrets=True, mechanisms=["PLAIN"]
    )
    assert not restricted.allows_anonymous and _anonymous().allows_anonymous
    server = a.Connection(client=False, sasl=restricted)
    assert of(server.receive_data(a.framing.amqp10.AMQP_HEADER, 0.0), a.events.PeerWithoutSASL)


def test_after_its_sasl_header_went_an_anonymous_server_wants_sasl() -> None:
    """A server that opened first has announced SASL (5.1): the bare header is refused."""
    server = a.Connection(client=False, sasl=_anonymous())
    server.open()
    assert server.data_to_send() == a.framing.amqp10.SASL_HEADER
    assert of(server.receive_data(a.framing.amqp10.AMQP_HEADER, 0.0), a.events.PeerWithoutSASL)
    assert server.data_to_send() == b""


@pytest.mark.parametrize("chunk", [1, None])
def test_a_client_meeting_a_server_without_sasl_says_so(chunk: int | None) -> None:
    p = Pair(chunk=chunk, client={"sasl": a.sasl.ClientCredentials()}, server={"sasl": None})
    p.client.open(now=0.0)
    c, s = p.pump()
    (outcome,) = of(c, a.events.PeerWithoutSASL)
    assert outcome.header == a.framing.amqp10.AMQP_HEADER
    assert of(c, a.events.ConnectionEnded) and not of(c, a.events.AuthenticationFailed)
    assert p.client.state is a.ConnectionState.END
    assert _sent(p, "c>s") == a.framing.amqp10.SASL_HEADER  # the held-back open never went
    # The server (no SASL layer) saw a SASL header: a plain UnsupportedProtocol, not ours.
    (theirs,) = of(s, a.events.UnsupportedProtocol)
    assert type(theirs) is a.events.UnsupportedProtocol


def test_users_with_an_anonymous_entry_take_the_bare_header() -> None:
    rules = {"anonymous": {"send": ["public/*"], "receive": ["public/*"]}, "users": {}}
    users = Users.from_json(json.dumps(rules))
    server = a.Connection(client=False, sasl=users.authenticator())
    events = server.receive_data(a.framing.amqp10.AMQP_HEADER + _open_frame(), 0.0)
    assert of(events, a.events.Authenticated) == [
        a.events.Authenticated(mechanism=None, identity="anonymous")
    ]
    without = Users.from_json(json.dumps({"users": {"alice": {"password": PASSWORD}}}))
    server = a.Connection(client=False, sasl=without.authenticator())
    assert of(server.receive_data(a.framing.amqp10.AMQP_HEADER, 0.0), a.events.PeerWithoutSASL)


def _broker_accepts(broker: Broker, header: bytes) -> tuple[Any, bytes]:
    conn = broker.accept(0.0)
    conn.receive_data(header, 0.0)
    return conn, conn.data_to_send()


def test_the_broker_core_defaults() -> None:
    """No users, no ``sasl``: both headers; ``sasl=False``: the bare one only."""
    broker = Broker()
    conn, out = _broker_accepts(broker, a.framing.amqp10.AMQP_HEADER)
    assert (
        out == a.framing.amqp10.AMQP_HEADER
        and conn.identity == "anonymous"
        and conn.refused is None
    )
    conn, out = _broker_accepts(broker, a.framing.amqp10.SASL_HEADER)
    assert out.startswith(a.framing.amqp10.SASL_HEADER) and b"ANONYMOUS" in out
    plain = Broker(BrokerConfig(sasl=False))
    conn, out = _broker_accepts(plain, a.framing.amqp10.AMQP_HEADER)
    assert out == a.framing.amqp10.AMQP_HEADER
    conn, out = _broker_accepts(plain, a.framing.amqp10.SASL_HEADER)
    assert out == a.framing.amqp10.AMQP_HEADER and conn.ended
    users = Users.from_json(json.dumps({"users": {"alice": {"password": PASSWORD}}}))
    strict = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    conn, out = _broker_accepts(strict, a.framing.amqp10.AMQP_HEADER)
    assert out == a.framing.amqp10.SASL_HEADER and conn.ended
    assert conn.refused is not None and "requires SASL" in conn.refused


def test_the_broker_core_says_why_authentication_failed() -> None:
    users = Users.from_json(json.dumps({"users": {"alice": {"password": PASSWORD}}}))
    broker = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    conn = broker.accept(0.0)
    client = a.Connection(
        sasl=a.sasl.ClientCredentials(username="alice", password="wrong-pw"),
        sasl_mechanisms=["PLAIN"],
        allow_plain_without_tls=True,
    )
    client.open(now=0.0)
    for _ in range(10):  # (empty data would mean a closed transport: only bytes go)
        if out := client.data_to_send():
            conn.receive_data(out, 0.0)
        if back := conn.data_to_send():
            client.receive_data(back, 0.0)
    assert conn.ended and client.state is a.ConnectionState.END
    assert conn.refused is not None and conn.refused.startswith("authentication failed")
    assert "transport" not in conn.refused and "wrong-pw" not in conn.refused


def test_client_engine_defaults_to_sasl_and_server_engine_to_anonymous() -> None:
    _, engine, _ = client_engine("amqp://127.0.0.1")
    engine.open(now=0.0)
    assert engine.data_to_send() == a.framing.amqp10.SASL_HEADER
    _, bare, _ = client_engine("amqp://127.0.0.1", sasl=False)
    bare.open(now=0.0)
    assert bare.data_to_send().startswith(a.framing.amqp10.AMQP_HEADER)
    server, _ = server_engine()
    assert server.receive_data(a.framing.amqp10.AMQP_HEADER, 0.0)[0] == a.events.Authenticated(
        mechanism=None, identity="anonymous"
    )
    none, _ = server_engine(sasl=False)
    assert of(none.receive_data(a.framing.amqp10.SASL_HEADER, 0.0), a.events.UnsupportedProtocol)


def test_the_fallback_is_only_for_our_own_choice() -> None:
    assert without_sasl("amqp://h", {"sasl": None}) == {"sasl": False}
    assert without_sasl("amqp://h", {"sasl": True}) is None
    assert without_sasl("amqp://u:p@h", {"sasl": None}) is None
    assert without_sasl("amqp://h", {"sasl": None, "sasl_mechanisms": ["PLAIN"]}) is None


# -- amqp-sansio broker, started as a user starts it ------------------------------------------


@pytest.fixture
def broker() -> Iterator[BrokerProcess]:
    running = BrokerProcess()
    try:
        yield running
    finally:
        running.stop()


def test_proton_blocking_connection_with_its_defaults(broker: BrokerProcess) -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton import Message
    from proton.utils import BlockingConnection

    conn = BlockingConnection(broker.url, timeout=WAIT)
    try:
        conn.create_sender("blocking").send(Message(body="from proton"))
        receiver = conn.create_receiver("blocking")
        assert receiver.receive(timeout=WAIT).body == "from proton"
        receiver.accept()
    finally:
        conn.close()


def test_proton_container_with_its_defaults(broker: BrokerProcess) -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton import Message
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    class RoundTrip(MessagingHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.got: list[Any] = []
            self.sent = False

        def on_start(self, event: Any) -> None:
            conn = event.container.connect(broker.url)
            event.container.create_sender(conn, "container")
            event.container.create_receiver(conn, "container")

        def on_sendable(self, event: Any) -> None:
            if not self.sent:
                event.sender.send(Message(body="via container"))
                self.sent = True

        def on_message(self, event: Any) -> None:
            self.got.append(event.message.body)
            event.connection.close()

    handler = RoundTrip()
    container = Container(handler)
    thread = threading.Thread(target=container.run, daemon=True)
    thread.start()
    thread.join(timeout=WAIT)
    if thread.is_alive():
        container.stop()
    assert handler.got == ["via container"]


def test_our_connect_with_no_extras(broker: BrokerProcess) -> None:
    with sockets.connect(broker.url + "/ours") as conn:
        assert conn.core.sasl_mechanism == "ANONYMOUS"  # no fallback was needed
        conn.sender().send(b"ours")
        (delivery,) = [conn.receiver(credit=1).receive(timeout=WAIT)]
        assert delivery.message.body.value == b"ours"
        delivery.accept()


def test_credentials_at_the_open_broker(broker: BrokerProcess) -> None:
    """RabbitMQ's guest/guest in the URL, as its users write it: the open broker takes any
    PLAIN login on its loopback port (as its 0-9-1 side does), the name as the identity."""
    url = broker.url.replace("amqp://", "amqp://guest:guest@") + "/creds"
    with sockets.connect(url, timeout=WAIT) as conn:
        assert conn.core.sasl_mechanism == "PLAIN"
        conn.sender().send(b"with credentials")
    assert "user guest (PLAIN)" in broker.wait_for_log("user guest (PLAIN)")


@pytest.mark.alone
def test_a_failed_sasl_exchange_ends_the_drivers_wait_at_once(broker: BrokerProcess) -> None:
    """Our engine with a password it may not send in the clear (no
    ``allow_plain_without_tls``): no mechanism fits, the engine ends and sends nothing, and
    ``run_until`` raises the SASL error at once, not when the broker's handshake time-out
    (10 s) closes the transport."""
    conn = a.Connection(sasl=a.sasl.ClientCredentials(username="guest", password="guest"))
    started = time.monotonic()
    with SocketDriver.connect(conn, ("127.0.0.1", broker.port), timeout=WAIT) as driver:
        conn.open(now=driver.now())
        with pytest.raises(a.sasl.SASLNoMechanismError, match="no usable SASL mechanism"):
            driver.run_until(lambda: conn.state is a.ConnectionState.OPENED, timeout=WAIT)
    assert time.monotonic() - started < 2.0
    assert conn.state is a.ConnectionState.END


def test_the_send_and_receive_commands(broker: BrokerProcess) -> None:
    url = broker.url + "/cli"
    sent = subprocess.run(
        [*amqp_sansio_command(), "send", url, "--count", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.startswith(f"sent 3 messages to {url}: 3 accepted")
    assert sent.stderr == ""  # no fallback, no warning
    got = subprocess.run(
        [*amqp_sansio_command(), "receive", url, "--count", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout == "message 1\nmessage 2\nmessage 3\n"
    assert got.stderr.startswith(f"received 3 messages from {url}: 3 accepted")


def _bare_client(port: int) -> tuple[a.Connection, SocketDriver]:
    """Our engine with SASL explicitly off: the bare AMQP header first (core spec 2.2)."""
    conn = a.Connection(client=True, hostname="127.0.0.1", sasl=None)
    driver = SocketDriver.connect(conn, ("127.0.0.1", port), timeout=WAIT)
    conn.open(now=driver.now())
    return conn, driver


def test_a_bare_header_client(broker: BrokerProcess) -> None:
    conn, driver = _bare_client(broker.port)
    with driver:
        driver.run_until(lambda: conn.state is a.ConnectionState.OPENED, timeout=WAIT)
        session = conn.begin()
        sender = session.attach_sender("bare-s", target=a.Target(address="bare"))
        receiver = session.attach_receiver("bare-r", source=a.Source(address="bare"))
        driver.run_until(lambda: sender.link_credit > 0, timeout=WAIT)
        sender.send(a.Message(body=b"bare").encode())
        receiver.flow(1)
        driver.run_until(
            lambda: any(isinstance(e, a.events.DeliveryReceived) for e in driver.events),
            timeout=WAIT,
        )
        (got,) = [e for e in driver.events if isinstance(e, a.events.DeliveryReceived)]
        assert got.message().body.value == b"bare"
        conn.close()
        driver.run_until(lambda: conn.state is a.ConnectionState.END, timeout=WAIT)


@pytest.fixture
def users_broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    users = tmp_path / "users.json"
    users.write_text(
        json.dumps({"users": {"alice": {"password": PASSWORD, "send": ["*"], "receive": ["*"]}}})
    )
    running = BrokerProcess("--users", str(users))
    try:
        yield running
    finally:
        running.stop()


def test_users_without_anonymous_refuse_the_bare_header_and_log_why(
    users_broker: BrokerProcess,
) -> None:
    conn, driver = _bare_client(users_broker.port)
    with driver:
        driver.run_until(lambda: conn.state is a.ConnectionState.END, timeout=WAIT)
        (refused,) = [e for e in driver.events if isinstance(e, a.events.UnsupportedProtocol)]
        assert (
            refused.header == a.framing.amqp10.SASL_HEADER
        )  # the broker's own header, then the close
        local_port = driver.sock.getsockname()[1]
    with sockets.connect(f"amqp://alice:{PASSWORD}@127.0.0.1:{users_broker.port}/q") as ok:
        assert ok.core.sasl_mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
        ok.sender().send(b"with credentials")
    with pytest.raises(sockets.AuthenticationError) as info:
        sockets.connect(users_broker.url + "/q", timeout=WAIT)
    assert "this server requires authentication: put user:password in the URL" in str(info.value)
    users_broker.stop()
    log = users_broker.log
    lines = [line for line in log.splitlines() if "refused the connection" in line]
    assert lines and f"127.0.0.1:{local_port}" in lines[0]
    assert "bare AMQP header" in lines[0] and "requires SASL" in lines[0]
    assert PASSWORD not in log


# -- connect(url) against a server without SASL --------------------------------------------------


@pytest.fixture
def bare_server() -> Iterator[sockets.Server]:
    """Our engine with SASL explicitly off, behind a socket: a queue of one address."""
    held: list[bytes] = []

    def on_link(link: Any) -> None:
        if isinstance(link, sockets.IncomingLink):
            link.on_delivery = lambda delivery: held.append(delivery.message.body.value)

    server = sockets.listen("127.0.0.1", 0, on_link, sasl=False)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    server.held = held  # type: ignore[attr-defined]
    try:
        yield server
    finally:
        server.close()
        thread.join(timeout=WAIT)


@contextlib.contextmanager
def _serving(**options: Any) -> Iterator[tuple[sockets.Server, list[Any]]]:
    """``sockets.listen`` with ``options``, serving in a thread; the connections it saw."""
    seen: list[Any] = []
    server = sockets.listen("127.0.0.1", 0, lambda link: None, on_connection=seen.append, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server, seen
    finally:
        server.close()
        thread.join(timeout=WAIT)


def test_listen_by_default_takes_both_headers() -> None:
    with _serving() as (server, seen):
        conn, driver = _bare_client(server.port)
        with driver:
            driver.run_until(lambda: conn.state is a.ConnectionState.OPENED, timeout=WAIT)
        with sockets.connect(f"amqp://127.0.0.1:{server.port}") as ours:
            assert ours.core.sasl_mechanism == "ANONYMOUS"
    assert [(c.identity, c.mechanism) for c in seen] == [
        ("anonymous", None),
        ("anonymous", "ANONYMOUS"),
    ]


def test_listen_requiring_authentication_refuses_and_logs_a_bare_header(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    with _serving(sasl=_requiring(), allow_insecure_auth=True) as (server, seen):
        conn, driver = _bare_client(server.port)
        with driver:
            driver.run_until(lambda: conn.state is a.ConnectionState.END, timeout=WAIT)
            (refused,) = [e for e in driver.events if isinstance(e, a.events.UnsupportedProtocol)]
            assert refused.header == a.framing.amqp10.SASL_HEADER
            local_port = driver.sock.getsockname()[1]
        url = f"amqp://alice:{PASSWORD}@127.0.0.1:{server.port}"
        with sockets.connect(url) as ok:
            assert ok.core.sasl_mechanism == "PLAIN"
    assert [c.identity for c in seen] == ["alice"]
    (record,) = [r for r in caplog.records if "refused the connection" in r.getMessage()]
    assert f"from 127.0.0.1:{local_port}:" in record.getMessage()
    assert "bare AMQP header" in record.getMessage()
    assert all(PASSWORD not in r.getMessage() for r in caplog.records)


def _fallbacks(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if "connecting again without SASL" in r.getMessage()]


@pytest.mark.parametrize("reconnect", [None, True])
def test_sockets_connect_falls_back_once(
    bare_server: sockets.Server, caplog: pytest.LogCaptureFixture, reconnect: bool | None
) -> None:
    """Also with ``reconnect=True``, as the Spark source connects."""
    caplog.set_level(logging.INFO)
    url = f"amqp://127.0.0.1:{bare_server.port}/plain"
    with sockets.connect(url, reconnect=reconnect) as conn:
        assert conn.core.sasl_mechanism is None
        conn.sender().send(b"no sasl")
    (record,) = _fallbacks(caplog)
    assert record.levelno == logging.WARNING
    assert f"127.0.0.1:{bare_server.port} has no SASL layer" in record.getMessage()
    assert bare_server.held == [b"no sasl"]  # type: ignore[attr-defined]


def test_explicit_choices_do_not_fall_back(
    bare_server: sockets.Server, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"amqp://127.0.0.1:{bare_server.port}"
    with pytest.raises(sockets.PeerWithoutSASLError, match="no SASL layer"):
        sockets.connect(url, sasl=True, timeout=WAIT)
    with pytest.raises(sockets.PeerWithoutSASLError, match="cannot check the credentials"):
        sockets.connect(f"amqp://alice:{PASSWORD}@127.0.0.1:{bare_server.port}", timeout=WAIT)
    with sockets.connect(url, sasl=False) as conn:  # straight there
        assert conn.core.sasl_mechanism is None
    assert _fallbacks(caplog) == []


def test_aio_connect_falls_back_once(
    bare_server: sockets.Server, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        async with aio.connect(f"amqp://127.0.0.1:{bare_server.port}/aio") as conn:
            await (await conn.sender()).send(b"aio")

    asyncio.run(main())
    assert len(_fallbacks(caplog)) == 1
    assert bare_server.held == [b"aio"]  # type: ignore[attr-defined]


def test_trio_connect_falls_back_once(
    bare_server: sockets.Server, caplog: pytest.LogCaptureFixture
) -> None:
    trio = pytest.importorskip("trio", reason="trio is not installed")

    async def main() -> None:
        async with trio_adapter.connect(f"amqp://127.0.0.1:{bare_server.port}/trio") as conn:
            await (await conn.sender()).send(b"trio")

    trio.run(main)
    assert len(_fallbacks(caplog)) == 1
    assert bare_server.held == [b"trio"]  # type: ignore[attr-defined]


def test_the_send_command_falls_back_once(bare_server: sockets.Server) -> None:
    url = f"amqp://127.0.0.1:{bare_server.port}/cli"
    sent = subprocess.run(
        [*amqp_sansio_command(), "send", url], capture_output=True, text=True, timeout=60
    )
    assert sent.returncode == 0, sent.stderr
    assert "has no SASL layer" in sent.stderr and "connecting again without SASL" in sent.stderr
    forced = subprocess.run(
        [*amqp_sansio_command(), "send", url, "--sasl-mechanism", "ANONYMOUS"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert forced.returncode == 3 and "try --sasl-mechanism none" in forced.stderr


def test_a_proton_listener_with_its_defaults() -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is not installed")
    from proton.handlers import MessagingHandler
    from proton.reactor import Container

    class Listener(MessagingHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.got: list[Any] = []
            self.port = 0
            self.ready = threading.Event()

        def on_start(self, event: Any) -> None:
            self.acceptor = event.container.listen("127.0.0.1:0")
            self.port = self.acceptor._selectable._delegate.getsockname()[1]
            self.ready.set()

        def on_message(self, event: Any) -> None:
            self.got.append(event.message.body)
            self.acceptor.close()  # one message: then the container's run returns

    handler = Listener()
    container = Container(handler)
    thread = threading.Thread(target=container.run, daemon=True)
    thread.start()
    try:
        assert handler.ready.wait(WAIT)
        with sockets.connect(f"amqp://127.0.0.1:{handler.port}/proton") as conn:
            assert conn.core.sasl_mechanism == "ANONYMOUS"
            conn.sender().send(a.Message(body="to proton"))
        thread.join(timeout=WAIT)
        assert handler.got == ["to proton"]
    finally:
        if thread.is_alive():
            container.stop()
            thread.join(timeout=WAIT)


# -- RabbitMQ ------------------------------------------------------------------------------------


def test_rabbitmq_without_credentials() -> None:
    env = os.environ.get("AMQP_SANSIO_RABBITMQ_URL")
    if not env:
        pytest.skip("AMQP_SANSIO_RABBITMQ_URL is not set: no RabbitMQ to test against")
    found = parse_url(env)
    with sockets.connect(f"amqp://{found.host}:{found.port}", timeout=WAIT) as conn:
        assert conn.core.sasl_mechanism == "ANONYMOUS"
