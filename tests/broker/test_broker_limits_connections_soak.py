"""A soak of abandoned connections against ``amqp-sansio broker`` (issue 16, part B): for
``AMQP_SANSIO_LIMITS_SOAK`` seconds (default 20) connections are opened and abandoned in a
loop, in every state of the handshake (a bare TCP connect and close, a silent TCP
connection, in the middle of SASL, in the middle of the open, after the open and a reset),
while a well-behaved client sends and receives. The broker's file descriptors
(/proc/PID/fd) must come back to where they were, and its resident memory stay flat once
warmed up. The figures are printed (``pytest -s``)."""

from __future__ import annotations

import collections
import os
import socket
import struct
import time

import pytest
from support.broker_limits import WAIT, GoodClient, fds, rss
from support.broker_process import BrokerProcess

from amqp_sansio.definitions.amqp10 import performatives
from amqp_sansio.framing import amqp10 as framing

#: A soak measures memory and descriptors: nothing of the other worker runs beside it.
pytestmark = pytest.mark.alone

SECONDS = float(os.environ.get("AMQP_SANSIO_LIMITS_SOAK", "20"))
WARM_UP = 4.0  # seconds of churn before the memory baseline is taken
LIVE = 150  # abandoned connections the test keeps open at once (it resets the oldest)
MIB = 1024 * 1024

OPEN = framing.encode_frame(performatives.Open(container_id="soak"))
BEGIN = framing.encode_frame(
    performatives.Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10)
)


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (SO_LINGER 0): the client vanishes without a goodbye."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _abandon(where: tuple[str, int], kind: int) -> socket.socket | None:
    """One connection left in the handshake state ``kind``; the socket, if it is kept."""
    sock = socket.create_connection(where, timeout=WAIT)
    if kind == 0:  # connect and close at once
        sock.close()
        return None
    if kind == 2:  # in the middle of SASL
        sock.sendall(framing.SASL_HEADER)
    elif kind == 3:  # in the middle of the open
        sock.sendall(framing.AMQP_HEADER + OPEN[: len(OPEN) // 2])
    elif kind == 4:  # after the open and a begin: reset at once
        sock.sendall(framing.AMQP_HEADER + OPEN + BEGIN)
        sock.recv(8)
        _reset(sock)
        return None
    elif kind == 5:  # after the open, then silent (reset later, by the LIVE bound)
        sock.sendall(framing.AMQP_HEADER + OPEN)
    return sock  # (kind 1: a silent TCP connection)


def test_abandoned_connections_leave_fds_and_memory_flat() -> None:
    with BrokerProcess("--handshake-timeout", "2") as broker, GoodClient(broker.url) as good:
        where = ("127.0.0.1", broker.port)
        fds_before = fds(broker.proc.pid)
        rss_start = rss(broker.proc.pid)
        live: collections.deque[socket.socket] = collections.deque()
        opened = 0
        peak_fds = 0
        rss_samples: list[int] = []
        start = time.monotonic()
        next_sample = start + 1.0
        baseline: int | None = None
        while time.monotonic() < start + SECONDS:
            sock = _abandon(where, opened % 6)
            opened += 1
            if sock is not None:
                live.append(sock)
            while len(live) > LIVE:
                _reset(live.popleft())
            now = time.monotonic()
            if now >= next_sample:
                next_sample += 1.0
                rss_samples.append(rss(broker.proc.pid))
                peak_fds = max(peak_fds, fds(broker.proc.pid))
                if baseline is None and now - start >= WARM_UP:
                    baseline = rss_samples[-1]
            time.sleep(0.003)
        for sock in live:
            _reset(sock)
        good.goes_on()
        deadline = time.monotonic() + WAIT
        while fds(broker.proc.pid) > fds_before and time.monotonic() < deadline:
            time.sleep(0.1)
        fds_after = fds(broker.proc.pid)
        rss_after = rss(broker.proc.pid)
        assert baseline is not None
        print(
            f"\nabandoned-connection soak: {opened} connections in {SECONDS:.0f} s; broker fds "
            f"{fds_before} before, peak {peak_fds}, {fds_after} after; RSS "
            f"{rss_start / MIB:.1f} MiB at start, {baseline / MIB:.1f} MiB after warm-up, "
            f"peak {max(rss_samples) / MIB:.1f} MiB, {rss_after / MIB:.1f} MiB after; "
            f"well-behaved client: {good.rounds} round trips"
        )
        assert opened > 1000
        assert fds_after <= fds_before
        assert rss_after - baseline < 16 * MIB, (baseline, rss_after)
        assert max(rss_samples) - baseline < 32 * MIB, (baseline, rss_samples)
