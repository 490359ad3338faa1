"""Hostile clients against ``amqp-sansio broker`` started as a user starts it (issue 16,
part B): each connection limit hit and answered as docs/broker.rst's "Limits" table says,
while a well-behaved client on the same broker goes on sending and receiving. The broker is
the command in a process of its own (support.broker_process.BrokerProcess); the clients
speak raw bytes over TCP, or through our engine, or through the sockets adapter."""

from __future__ import annotations

import json
import selectors
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.broker import OPEN_WARNING
from support.broker_limits import WAIT, GoodClient, fds
from support.broker_process import BrokerProcess, Lines, amqp_sansio_command, untimed
from support.engine_pair import frames_in

import amqp_sansio as a
from amqp_sansio.client.ops import AuthenticationError, ConnectionClosedError
from amqp_sansio.definitions.amqp10 import performatives
from amqp_sansio.framing import amqp10 as framing

USERS = {
    "users": {
        "alice": {"password": "secret", "send": ["*"], "receive": ["*"]},
        "bob": {"password": "hunter2", "send": ["*"], "receive": ["*"]},
    }
}


def _condition(data: bytes, kind: type) -> str | None:
    found = [b for b in frames_in(data) if isinstance(b, kind)]
    assert len(found) == 1, frames_in(data)
    error = found[0].error
    return None if error is None else str(error.condition)


def _read_to_eof(sock: socket.socket, wait: float = WAIT) -> tuple[bytes, float]:
    """All the bytes until the broker closes (and when, time.monotonic())."""
    sock.settimeout(wait)
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data, time.monotonic()
        data += chunk


class RawClient:
    """Our engine as a client over a blocking socket, for hand-made frames after its open."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT)
        self.engine = a.Connection(client=True, container_id="raw")
        self.engine.open(now=time.monotonic())
        self.events: list[a.Event] = []
        self.pump(lambda: self.engine.remote is not None)

    def pump(self, done: Any) -> None:
        deadline = time.monotonic() + WAIT
        while not done():
            out = self.engine.data_to_send()
            if out:
                self.sock.sendall(out)
            assert time.monotonic() < deadline, "the broker did not answer"
            self.events += self.engine.receive_data(self.sock.recv(65536), time.monotonic())

    def send_raw(self, data: bytes) -> bytes:
        """Send ``data`` as it is; return what the broker answers before it goes quiet."""
        out = self.engine.data_to_send()
        self.sock.sendall(out + data)
        self.sock.settimeout(1.0)
        got = b""
        try:
            while True:
                chunk = self.sock.recv(65536)
                if not chunk:
                    break
                got += chunk
        except TimeoutError:
            pass
        return got


# -- the open broker --------------------------------------------------------------------------


def test_an_open_broker_refuses_to_listen_beyond_the_loopback_and_says_it_is_open() -> None:
    refused = subprocess.run(
        [*amqp_sansio_command(), "broker", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    lines = refused.stderr.splitlines()
    assert len(lines) == 1 and "--allow-anonymous" in lines[0], refused.stderr
    with BrokerProcess() as broker:  # as a user starts it: open, on the loopback
        deadline = time.monotonic() + WAIT
        while OPEN_WARNING not in broker.log and time.monotonic() < deadline:
            time.sleep(0.05)
        assert broker.log_lines == [OPEN_WARNING]
    beyond = [*amqp_sansio_command(), "broker", "--host", "0.0.0.0", "--port", "0"]
    with subprocess.Popen(
        [*beyond, "--allow-anonymous"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    ) as proc:
        output = Lines(proc)
        try:
            assert output.next(WAIT * 3).startswith(
                "amqp-sansio broker listening on amqp://0.0.0.0:"
            )
            assert untimed(output.next(WAIT).rstrip("\n")) == OPEN_WARNING
        finally:
            proc.terminate()
            output.rest(WAIT * 3)
    helped = subprocess.run(
        [*amqp_sansio_command(), "broker", "--help"],
        capture_output=True,
        text=True,
        timeout=WAIT * 3,
    )
    text = " ".join(helped.stdout.split())
    assert "OPEN" in text and "--allow-anonymous" in text and "connections:" in text


def test_a_broker_with_users_does_not_say_it_is_open(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    path.write_text(json.dumps(USERS))
    with BrokerProcess("--users", str(path)) as broker:
        with sockets.connect(f"amqp://bob:hunter2@127.0.0.1:{broker.port}", timeout=WAIT):
            pass
        assert OPEN_WARNING not in broker.log


# -- the handshake time-out -------------------------------------------------------------------


def test_silent_trickling_and_half_done_connections_are_cut_at_the_timeout() -> None:
    """The command's default (10 s from the TCP connection): 300 silent connections, a client
    trickling a byte every 0.25 s, one that stops in the middle of SASL and one after the
    protocol headers are all cut; the well-behaved client goes on throughout."""
    with BrokerProcess() as broker, GoodClient(broker.url) as good:
        baseline = fds(broker.proc.pid)
        where = ("127.0.0.1", broker.port)
        start = time.monotonic()
        silent = [socket.create_connection(where, timeout=WAIT) for _ in range(300)]
        mid_sasl = socket.create_connection(where, timeout=WAIT)
        mid_sasl.sendall(framing.SASL_HEADER)
        headers_only = socket.create_connection(where, timeout=WAIT)
        headers_only.sendall(framing.AMQP_HEADER)
        trickler = socket.create_connection(where, timeout=WAIT)
        wire = framing.AMQP_HEADER + framing.encode_frame(performatives.Open(container_id="t"))

        def trickle() -> None:
            for byte in wire[:-1]:
                try:
                    trickler.sendall(bytes([byte]))
                except OSError:
                    return  # cut
                time.sleep(0.25)

        threading.Thread(target=trickle, daemon=True).start()
        deadline = time.monotonic() + WAIT
        while fds(broker.proc.pid) < baseline + 300 and time.monotonic() < deadline:
            time.sleep(0.05)  # (the broker accepts them as it can)
        assert fds(broker.proc.pid) >= baseline + 300
        good.goes_on()
        ended: dict[socket.socket, tuple[bytes, float]] = {}
        everyone = [*silent, mid_sasl, headers_only, trickler]
        with selectors.DefaultSelector() as sel:
            for sock in everyone:
                sock.setblocking(False)
                sel.register(sock, selectors.EVENT_READ, b"")
            received: dict[socket.socket, bytes] = dict.fromkeys(everyone, b"")
            while len(ended) < len(everyone) and time.monotonic() < start + 30:
                for key, _ in sel.select(1.0):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        chunk = sock.recv(65536)
                    except ConnectionResetError:
                        chunk = b""
                    if chunk:
                        received[sock] += chunk
                        continue
                    ended[sock] = (received[sock], time.monotonic() - start)
                    sel.unregister(sock)
        assert len(ended) == len(everyone), f"{len(everyone) - len(ended)} never cut"
        for sock in silent:
            data, at = ended[sock]
            assert data == b"" and 9.0 <= at <= 20.0, (data, at)
        data, at = ended[mid_sasl]
        assert data.startswith(framing.SASL_HEADER) and 9.0 <= at <= 20.0
        assert not any(isinstance(b, performatives.Close) for b in frames_in(data))
        for sock in (headers_only, trickler):
            data, at = ended[sock]
            assert data.startswith(framing.AMQP_HEADER) and 9.0 <= at <= 20.0, (data, at)
            assert _condition(data, performatives.Close) == "amqp:resource-limit-exceeded"
        for sock in everyone:
            sock.close()
        good.goes_on()
        deadline = time.monotonic() + WAIT
        while fds(broker.proc.pid) > baseline and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fds(broker.proc.pid) <= baseline


# -- connection caps --------------------------------------------------------------------------


def _refused_at_once(where: tuple[str, int], source: str) -> bool:
    """Whether a connection from ``source`` is closed by the broker at once, without a byte
    (it sends the AMQP header: an accepted one is answered)."""
    sock = socket.create_connection(where, timeout=WAIT, source_address=(source, 0))
    with sock:
        try:
            sock.sendall(framing.AMQP_HEADER)
        except OSError:
            return True
        sock.settimeout(WAIT)
        try:
            first = sock.recv(8)
        except ConnectionResetError:
            return True
        return first == b""


def test_connections_in_all_and_per_address_are_closed_at_once() -> None:
    """``--max-connections 7 --max-connections-per-address 3``: from 127.0.0.1 (where the
    well-behaved client is) two more; from 127.0.0.2 three; from 127.0.0.3 one more fills
    the broker. One more from any of them is closed at once without a byte."""
    options = ("--max-connections", "7", "--max-connections-per-address", "3")
    with BrokerProcess(*options) as broker, GoodClient(broker.url) as good:
        where = ("127.0.0.1", broker.port)
        held = []
        for source, count in (("127.0.0.1", 2), ("127.0.0.2", 3)):
            for _ in range(count):
                sock = socket.create_connection(where, timeout=WAIT, source_address=(source, 0))
                sock.sendall(framing.AMQP_HEADER)
                assert sock.recv(8) == framing.AMQP_HEADER  # taken: the header is answered
                held.append(sock)
            assert _refused_at_once(where, source)  # one more from that address
        sock = socket.create_connection(where, timeout=WAIT, source_address=("127.0.0.3", 0))
        sock.sendall(framing.AMQP_HEADER)
        assert sock.recv(8) == framing.AMQP_HEADER
        held.append(sock)
        assert _refused_at_once(where, "127.0.0.3")  # the broker is full (7)
        good.goes_on()
        held.pop().close()  # one goes: there is room again
        deadline = time.monotonic() + WAIT
        while _refused_at_once(where, "127.0.0.4") and time.monotonic() < deadline:
            time.sleep(0.1)
        assert time.monotonic() < deadline
        for sock in held:
            sock.close()
        good.goes_on()
        assert "at most 3 connections from one address" in broker.log
        assert "the broker takes at most 7 connections" in broker.log


def test_connections_per_user_are_refused_with_resource_limit_exceeded(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    path.write_text(json.dumps(USERS))
    options = ("--users", str(path), "--max-connections-per-user", "2")
    with BrokerProcess(*options) as broker:
        hostport = f"127.0.0.1:{broker.port}"
        with GoodClient(f"amqp://bob:hunter2@{hostport}") as good:
            first = sockets.connect(f"amqp://alice:secret@{hostport}", timeout=WAIT)
            second = sockets.connect(f"amqp://alice:secret@{hostport}", timeout=WAIT)
            with pytest.raises(ConnectionClosedError, match="resource-limit-exceeded") as info:
                sockets.connect(f"amqp://alice:secret@{hostport}", timeout=WAIT)
            assert info.value.error is not None
            assert "at most 2 connections per user" in str(info.value.error.description)
            good.goes_on()
            first.close()
            deadline = time.monotonic() + WAIT
            while True:  # its place is free once the broker has seen it go
                try:
                    third = sockets.connect(f"amqp://alice:secret@{hostport}", timeout=WAIT)
                    break
                except ConnectionClosedError:
                    assert time.monotonic() < deadline
                    time.sleep(0.1)
            third.sender("q").send(b"still here")
            third.close()
            second.close()
            good.goes_on()


# -- sessions, links, delivery-tags, frames before the open -----------------------------------


def test_channel_max_handle_max_tags_and_early_frames_on_the_wire() -> None:
    with BrokerProcess() as broker, GoodClient(broker.url) as good:
        raw = RawClient(broker)
        remote = raw.engine.remote
        assert remote is not None and remote.channel_max == 255
        session = raw.engine.begin()
        raw.pump(lambda: session.remote is not None)
        assert session.remote is not None and session.remote.handle_max == 1023
        begin = performatives.Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=1)
        got = raw.send_raw(framing.encode_frame(begin, channel=256))
        assert _condition(got, performatives.Close) == "amqp:connection:framing-error"
        raw.sock.close()

        raw = RawClient(broker)
        session = raw.engine.begin()
        raw.pump(lambda: session.remote is not None)
        attach = performatives.Attach(
            name="x",
            handle=1024,
            role=performatives.Role.SENDER,
            target=a.Target(address="q"),
            initial_delivery_count=0,
        )
        got = raw.send_raw(framing.encode_frame(attach, channel=session.channel or 0))
        assert _condition(got, performatives.End) == "amqp:resource-limit-exceeded"
        raw.sock.close()

        raw = RawClient(broker)
        session = raw.engine.begin()
        sender = session.attach_sender("s", target=a.Target(address="tags"))
        raw.pump(lambda: sender.state is a.LinkState.ATTACHED and sender.link_credit > 0)
        transfer = performatives.Transfer(
            handle=sender.handle, delivery_id=0, delivery_tag=b"t" * 33
        )
        payload = a.Message(body=b"x").encode()
        got = raw.send_raw(framing.encode_frame(transfer, payload=payload, channel=0))
        assert _condition(got, performatives.Detach) == "amqp:invalid-field"
        raw.sock.close()

        sock = socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT)
        with sock:
            big = performatives.Open(container_id="c" * 600)
            sock.sendall(framing.AMQP_HEADER + framing.encode_frame(big))
            data, _ = _read_to_eof(sock)
        assert _condition(data, performatives.Close) == "amqp:connection:framing-error"
        good.goes_on()


# -- failed logins ----------------------------------------------------------------------------


def _timed_login(url: str) -> tuple[bool, float]:
    start = time.monotonic()
    try:
        with sockets.connect(url, timeout=30):
            return True, time.monotonic() - start
    except AuthenticationError:
        return False, time.monotonic() - start


@pytest.mark.alone
def test_failed_logins_are_slowed_per_address(tmp_path: Path) -> None:
    """The command's defaults: three failures from one address are answered at once, the
    fourth after 1 s, the fifth after 2 s; a right password is not slowed."""
    path = tmp_path / "users.json"
    path.write_text(json.dumps(USERS))
    with BrokerProcess("--users", str(path)) as broker:
        hostport = f"127.0.0.1:{broker.port}"
        with GoodClient(f"amqp://bob:hunter2@{hostport}") as good:
            wrong = f"amqp://alice:wrong@{hostport}"
            for _ in range(3):
                ok, took = _timed_login(wrong)
                assert not ok and took < 1.0
            for delay in (1.0, 2.0):
                ok, took = _timed_login(wrong)
                assert not ok and delay <= took < delay + 3.0, took
            ok, took = _timed_login(f"amqp://alice:secret@{hostport}")
            assert ok and took < 1.0
            good.goes_on()


def test_limit_options_are_checked(capsys: pytest.CaptureFixture[str]) -> None:
    from amqp_sansio.adapters import cli

    assert cli.main(["broker", "--port", "0", "--channel-max", "70000"]) == 2
    assert "channel_max must be from 0 to 65535" in capsys.readouterr().err
    assert cli.main(["broker", "--port", "0", "--open-max-frame-size", "100"]) == 2
    assert "open_max_frame_size" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["broker", "--max-connections", "-1"])
    with pytest.raises(SystemExit):
        cli.main(["broker", "--channel-max", "none"])  # channel-max cannot be lifted
