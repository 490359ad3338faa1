"""The broker's log (``amqp-sansio broker``, stderr, logger ``amqp_sansio.broker``): a line
per connection opened and closed, with its peer, user, TLS, container-id, why it ended, how
long it lived and its messages in and out; never a password; ``--log-level``; connections
that end before their open (refused, gone) at most once per address per second, the rest
counted. The broker runs as a user starts it (:class:`BrokerProcess`); its clients are ours,
over real sockets."""

from __future__ import annotations

import datetime
import json
import re
import socket
import time
from pathlib import Path

import pytest
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.broker import LOG_PREFIX, OPEN_WARNING
from amqp_sansio.adapters.sockets import SocketDriver
from support.broker_process import LOG_TIME, BrokerProcess, untimed

import amqp_sansio as a
from amqp_sansio.framing import amqp10 as framing

WAIT = 30.0
PASSWORD = "plain-pw-never-logged"


@pytest.fixture
def users(tmp_path: Path) -> Path:
    path = tmp_path / "users.json"
    alice = {"password": PASSWORD, "send": ["*"], "receive": ["*"]}
    path.write_text(json.dumps({"users": {"alice": alice}}))
    return path


def _lines(broker: BrokerProcess, what: str) -> list[str]:
    return [untimed(line) for line in broker.log.splitlines() if what in line]


def _wait_for(broker: BrokerProcess, what: str, count: int = 1) -> list[str]:
    """The broker's log lines with ``what``, once there are ``count`` of them."""
    deadline = time.monotonic() + WAIT
    while len(found := _lines(broker, what)) < count:
        assert time.monotonic() < deadline, f"no {count} lines with {what!r} in:\n{broker.log}"
        time.sleep(0.02)
    return found


def _engine_client(port: int, **options: object) -> tuple[a.Connection, SocketDriver]:
    """Our engine (the bare AMQP header) on a socket, opened."""
    conn = a.Connection(client=True, hostname="127.0.0.1", **options)  # type: ignore[arg-type]
    driver = SocketDriver.connect(conn, ("127.0.0.1", port), timeout=WAIT)
    conn.open(now=driver.now())
    driver.run_until(lambda: conn.state is a.ConnectionState.OPENED, timeout=WAIT)
    return conn, driver


def test_a_line_when_a_connection_opens_and_one_when_it_closes(users: Path) -> None:
    """PLAIN (as the command offers it on a loopback address): the user's name, never its
    password; the messages counted each way; a clean close."""
    with BrokerProcess("--users", str(users)) as broker:
        url = f"amqp://alice:{PASSWORD}@127.0.0.1:{broker.port}/logged"
        with sockets.connect(
            url, timeout=WAIT, sasl_mechanisms=["PLAIN"], container_id="logging-test"
        ) as conn:
            sender = conn.sender()  # (to /logged, where they stay)
            sender.send(b"one")
            sender.send(b"two")
            conn.sender("logged-back").send(b"three")
            delivery = conn.receiver("logged-back", credit=10).receive(timeout=WAIT)
            assert delivery is not None
            delivery.accept()
        (closed,) = _wait_for(broker, " closed after ")
        broker.stop()
    (opened,) = _lines(broker, " opened: ")
    where = re.match(rf"{LOG_PREFIX}connection from (127\.0\.0\.1:\d+) opened: ", opened)
    assert where is not None, opened
    assert opened == (
        f"{LOG_PREFIX}connection from {where[1]} opened: user alice (PLAIN), no TLS, "
        "container-id logging-test"
    )
    assert re.fullmatch(
        rf"{LOG_PREFIX}connection from {where[1]} closed after \d+\.\d\d s: closed by the "
        r"client; user alice \(PLAIN\), messages 3 in, 1 out",
        closed,
    ), closed
    assert PASSWORD not in broker.log
    assert all(line.startswith(LOG_PREFIX) for line in broker.log_lines)


def test_each_line_begins_with_its_time_in_utc() -> None:
    """The broker as a user starts it: each log line's time (ISO 8601, UTC, to the
    millisecond) is when it was written, between the start and the stop."""
    before = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    with BrokerProcess() as broker:
        with sockets.connect(f"{broker.url}/timed", timeout=WAIT):
            pass
        _wait_for(broker, " closed after ")
        broker.stop()
    after = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    lines = broker.log.splitlines()
    assert len(lines) == 3, lines  # the OPEN notice, the open, the close
    for line in lines:
        found = LOG_TIME.match(line)
        assert found is not None, line
        when = datetime.datetime.fromisoformat(found[1])
        slack = datetime.timedelta(seconds=1)  # (milliseconds, rounded down)
        assert before - slack <= when <= after + slack, (line, before, after)
        assert line[found.end() :].startswith(LOG_PREFIX)


def test_why_a_connection_ended(tmp_path: Path) -> None:
    """The client's close with an error, a client that goes without a close, a protocol
    error, the broker stopping, a client gone before its open."""
    with BrokerProcess() as broker:
        conn, driver = _engine_client(broker.port, container_id="with-error")
        with driver:
            conn.close(a.Error(condition=a.Symbol("amqp:internal-error"), description="boom"))
            driver.run_until(lambda: conn.state is a.ConnectionState.END, timeout=WAIT)
        conn, driver = _engine_client(broker.port, container_id="goes")
        driver.close()  # the transport, without a close
        conn, driver = _engine_client(broker.port, container_id="breaks")
        with driver:
            driver.sock.sendall(b"\x00\x00\x00\x04\x02\x00\x00\x00")  # a size below 8
            driver.run_until(lambda: conn.state is a.ConnectionState.END, timeout=WAIT)
        with socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT) as early:
            early.sendall(framing.AMQP_HEADER[:4])
        _wait_for(broker, " closed after ", 3)
        _wait_for(broker, "before its open")
        conn, driver = _engine_client(broker.port, container_id="stays")
        with driver:
            _wait_for(broker, " opened: ", 4)
            broker.stop()
    log = broker.log
    closed = {cid: _closed(log, cid) for cid in ("with-error", "goes", "breaks", "stays")}
    assert "closed by the client with amqp:internal-error: boom" in closed["with-error"]
    assert "the client went away without a close" in closed["goes"]
    assert "closed by the broker for a protocol error with amqp:" in closed["breaks"]
    assert (
        "closed by the broker with amqp:connection:forced: the broker is stopping"
        in closed["stays"]
    )
    (early_line,) = _lines(broker, "before its open")
    assert "the client went away without a close" in early_line


def _closed(log: str, container_id: str) -> str:
    """The close line of the connection whose open line names ``container_id``."""
    (opened,) = [x for x in log.splitlines() if x.endswith(f"container-id {container_id}")]
    peer = opened.split("connection from ")[1].split()[0]
    (line,) = [x for x in log.splitlines() if f"connection from {peer} closed after " in x]
    return line


def test_a_forged_line_in_a_container_id_stays_in_its_own_line() -> None:
    forged = "x\namqp-sansio broker: refused the connection from 6.6.6.6:1: forged"
    with BrokerProcess() as broker:
        conn, driver = _engine_client(broker.port, container_id=forged)
        with driver:
            conn.close()
            driver.run_until(lambda: conn.state is a.ConnectionState.END, timeout=WAIT)
        _wait_for(broker, " closed after ")
    assert "6.6.6.6" in broker.log
    assert not any(line.startswith(f"{LOG_PREFIX}refused") for line in broker.log_lines)
    (opened,) = _lines(broker, " opened: ")
    assert opened.endswith(f"container-id {forged!r}")


def test_log_level_warning_hides_opens_and_closes_but_not_refusals(users: Path) -> None:
    with BrokerProcess("--users", str(users), "--log-level", "warning") as broker:
        url = f"amqp://alice:{PASSWORD}@127.0.0.1:{broker.port}/quiet"
        with sockets.connect(url, timeout=WAIT) as conn:
            conn.sender().send(b"quiet")
        with pytest.raises(sockets.AuthenticationError):
            sockets.connect(f"amqp://alice:wrong@127.0.0.1:{broker.port}", timeout=WAIT)
        _wait_for(broker, "refused the connection")
        broker.stop()
    assert not _lines(broker, " opened: ") and not _lines(broker, " closed after ")
    assert PASSWORD not in broker.log and "wrong" not in broker.log
    with BrokerProcess("--log-level", "error") as quiet:
        with sockets.connect(f"{quiet.url}/quiet", timeout=WAIT) as conn:
            conn.sender().send(b"quiet")
        quiet.stop()
    assert quiet.log == ""  # not even the OPEN notice


def test_log_level_debug_says_each_tcp_connection_and_info_is_the_default() -> None:
    with BrokerProcess("--log-level", "debug") as broker:
        with sockets.connect(f"{broker.url}/debug", timeout=WAIT):
            pass
        _wait_for(broker, " closed after ")
        broker.stop()
    assert _lines(broker, "accepted")
    with BrokerProcess() as default:
        with sockets.connect(f"{default.url}/debug", timeout=WAIT):
            pass
        _wait_for(default, " closed after ")
        default.stop()
    assert not _lines(default, "accepted")
    assert default.log_lines[0] == OPEN_WARNING


def test_connections_that_end_before_their_open_are_logged_once_a_second_per_address(
    users: Path,
) -> None:
    """A client that sends the bare header to a broker that requires SASL, again and again:
    its first refusal is logged whole, the rest within the second are counted in one line
    after it; together they account for every one."""
    refusals = 25
    with BrokerProcess("--users", str(users)) as broker:
        start = time.monotonic()
        for _ in range(refusals):
            with socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT) as sock:
                sock.sendall(framing.AMQP_HEADER)
                assert sock.recv(8) == framing.SASL_HEADER
                sock.recv(8)  # the end (the broker closes)
        elapsed = time.monotonic() - start
        _wait_for(broker, "more connection")
        broker.stop()
    whole = _lines(broker, f"{LOG_PREFIX}refused the connection from 127.0.0.1:")
    summed = [
        int(line.removeprefix(LOG_PREFIX).split()[0]) for line in _lines(broker, "more connection")
    ]
    assert len(whole) + sum(summed) == refusals, broker.log
    assert len(whole) + len(summed) <= 2 * (elapsed + 2), broker.log
    assert all("from 127.0.0.1 ended before their open in 1 s" in x for x in _lines(broker, "more"))
    assert "bare AMQP header" in _lines(broker, "more connection")[-1]


# -- the core's record of a connection, on a simulated clock ------------------------------------


def _pump(conn: object, client: a.Connection, now: float) -> None:
    """Bytes both ways between a broker connection and our client until neither sends."""
    for _ in range(50):
        out = client.data_to_send()
        if out:
            conn.receive_data(out, now)  # type: ignore[attr-defined]
        back = conn.data_to_send()  # type: ignore[attr-defined]
        if back:
            client.receive_data(back, now)
        if not out and not back:
            return
    raise AssertionError("the exchange did not settle")


def test_the_record_counts_messages_and_says_the_clients_close() -> None:
    from amqp_sansio.broker import Broker, BrokerConfig

    broker = Broker(BrokerConfig())
    conn = broker.accept(0.0, address="10.0.0.1")
    client = a.Connection(client=True, container_id="recorded")
    client.open(now=0.0)
    _pump(conn, client, 0.0)
    assert conn.record.opened and conn.record.tls is None
    session = client.begin()
    sender = session.attach_sender("s", target=a.Target(address="q"))
    receiver = session.attach_receiver("r", source=a.Source(address="q"))
    _pump(conn, client, 0.0)
    for body in (b"1", b"2"):
        sender.send(a.Message(body=body).encode())
    receiver.flow(1)
    _pump(conn, client, 0.0)
    assert (conn.record.messages_in, conn.record.messages_out) == (2, 1)
    client.close(a.Error(condition=a.Symbol("amqp:internal-error")))
    _pump(conn, client, 0.0)
    assert conn.record.ending == "closed by the client with amqp:internal-error"
    assert "opened=True" in repr(conn.record)


def test_the_record_says_an_idle_time_out_and_a_header_it_does_not_speak() -> None:
    from amqp_sansio.broker import Broker, BrokerConfig

    broker = Broker(BrokerConfig(idle_timeout=1.0, handshake_timeout=None))
    conn = broker.accept(0.0)
    client = a.Connection(client=True)
    client.open(now=0.0)
    _pump(conn, client, 0.0)
    deadline = conn.next_deadline()
    assert deadline is not None
    conn.handle_timer(deadline + 1.0)
    assert conn.record.ending is not None and conn.record.ending.startswith("idle time-out")
    other = broker.accept(0.0)
    other.receive_data(b"AMQP\x00\x00\x09\x01", 0.0)
    assert other.record.ending == "it sent the protocol header of AMQP 0-9-1"
    assert not other.record.opened


def test_a_peers_text_is_escaped_and_cut_for_the_log() -> None:
    from amqp_sansio.broker._record import TEXT_MAX, describe, printable

    assert printable("two\nlines") == "two\\nlines"
    assert len(printable("x" * 1000)) == TEXT_MAX
    error = a.Error(condition=a.Symbol("amqp:internal-error"), description="bad\r\nforged")
    assert describe(error) == "amqp:internal-error: bad\\r\\nforged"


def test_the_record_keeps_the_first_cause_a_protocol_error_and_a_tls_failure(
    tmp_path: Path,
) -> None:
    from amqp_sansio.broker import Broker, BrokerConfig
    from amqp_sansio.security.tls import TLSLayer, client_context, server_context

    broker = Broker(BrokerConfig())
    conn = broker.accept(0.0)
    client = a.Connection(client=True)
    client.open(now=0.0)
    _pump(conn, client, 0.0)
    conn.close(a.Error(condition=a.Symbol("amqp:connection:forced"), description="stopping"))
    _pump(conn, client, 0.0)  # the client answers with its own close: not the cause
    assert conn.record.ending == "closed by the broker with amqp:connection:forced: stopping"
    broken = broker.accept(0.0)
    broken.receive_data(framing.AMQP_HEADER + b"\x00\x00\x00\x04\x02\x00\x00\x00", 0.0)
    assert broken.record.ending is not None
    assert broken.record.ending.startswith("closed by the broker for a protocol error with amqp:")
    session_error = a.events.ProtocolError(
        error=a.Error(condition=a.Symbol("amqp:session:errant-link")), scope="session"
    )
    conn.record.ending = None
    conn.record.saw(conn, session_error)  # a session's error does not end the connection
    assert conn.record.ending is None
    trustme = pytest.importorskip("trustme", reason="trustme is in the 'test' extra")
    ca, stranger = trustme.CA(), trustme.CA()
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "server.pem")
    )
    stranger.cert_pem.write_to_path(str(tmp_path / "stranger.pem"))
    secured = broker.accept(0.0, ssl_context=server_context(str(tmp_path / "server.pem")))
    distrusting = TLSLayer(
        a.Connection(client=True, hostname="localhost"),
        client_context(cafile=str(tmp_path / "stranger.pem")),
        client=True,
        server_hostname="localhost",
        negotiate=False,
    )
    for _ in range(10):  # until the client's alert has reached the broker
        out = distrusting.data_to_send()
        if out:
            secured.receive_data(out, 0.0)
        back = secured.data_to_send()
        if back:
            distrusting.receive_data(back, 0.0)
        if not out and not back:
            break
    assert secured.record.ending is not None and "TLSV1_ALERT_UNKNOWN_CA" in secured.record.ending
    assert secured.cut and secured.ended and secured.record.tls is None


def test_the_command_run_in_a_program_leaves_its_logging_as_it_was(tmp_path: Path) -> None:
    """``amqp-sansio broker`` run inside another program (here a test) that ends, as with a
    store it cannot use: its log handler and levels are gone with it."""
    import logging

    from amqp_sansio.adapters import cli

    before = logging.getLogger().handlers[:], logging.getLogger("amqp_sansio").level
    (tmp_path / "not-a-directory").write_text("")
    assert cli.main(["broker", "--port", "0", "--store", str(tmp_path / "not-a-directory")]) == 2
    after = logging.getLogger().handlers[:], logging.getLogger("amqp_sansio").level
    assert after == before


def test_the_command_run_in_a_program_leaves_its_signals_and_collector_as_they_were() -> None:
    """``amqp-sansio broker`` run inside another program stops on SIGTERM (asyncio's handler,
    while it runs), then puts back the program's handlers: here SIGINT ignored, as a shell
    starts a job in the background (and as every process the program starts would inherit
    it), and SIGTERM the program's own; and the collector's thresholds and frozen objects."""
    import gc
    import os
    import signal
    import threading

    from amqp_sansio.adapters import cli

    def own(signum: int, frame: object) -> None:  # pragma: no cover - never sent
        raise AssertionError("the program's own SIGTERM handler ran")

    def stop_when_listening() -> None:  # the broker's handler in place: it is running
        while signal.getsignal(signal.SIGTERM) is own:
            time.sleep(0.02)
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGTERM, own)
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        stopper = threading.Thread(target=stop_when_listening, daemon=True)
        stopper.start()
        assert cli.main(["broker", "--port", "0"]) == 0
        stopper.join(WAIT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is own
        assert (gc.get_threshold(), gc.get_freeze_count()) == (thresholds, frozen)
    finally:
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGTERM, before[1])
