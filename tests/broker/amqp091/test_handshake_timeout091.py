"""The handshake time-out of a 0-9-1 client counts from the TCP connection (the broker's
accept), not from its 8-octet header: ``BrokerConfig.handshake_timeout`` (10 s by default,
docs/defaults.rst), whatever protocol the header picked. On the simulated clock in the
broker core, and with ``amqp-sansio broker`` (no options) and a client that sends the
0-9-1 header late, then nothing."""

from __future__ import annotations

import socket
import time

import pytest
from support.broker_process import BrokerProcess

from amqp_sansio.amqp091 import PROTOCOL_HEADER
from amqp_sansio.broker import Broker, BrokerConfig

HEADERS = [PROTOCOL_HEADER, b"AMQP\x01\x01\x00\x09", b"AMQP\x01\x01\x08\x00"]


@pytest.mark.parametrize("header", HEADERS)
def test_the_deadline_counts_from_the_accept(header: bytes) -> None:
    broker = Broker(BrokerConfig())  # handshake_timeout 10 s
    first = broker.accept(100.0, address="10.0.0.1")
    assert first.next_deadline() == 110.0
    # the header came 7 s later: the 0-9-1 connection takes the transport's place
    conn = broker.accept_091(107.0, address="10.0.0.1", replacing=first)
    conn.receive_data(header, 107.0)
    assert conn.data_to_send()  # connection.start
    assert conn.next_deadline() == 110.0
    conn.handle_timer(109.9)
    assert not conn.ended
    conn.handle_timer(110.0)
    assert conn.ended and conn.refused == "no open within the handshake time-out (10.0 s)"


def test_without_a_replaced_connection_the_deadline_counts_from_now() -> None:
    broker = Broker(BrokerConfig())
    conn = broker.accept_091(50.0)
    assert conn.next_deadline() == 60.0


def test_the_broker_process_closes_a_late_header_within_the_documented_time() -> None:
    with BrokerProcess() as process:
        sock = socket.create_connection(("127.0.0.1", process.port), timeout=30)
        with sock:
            connected = time.monotonic()
            time.sleep(4.0)
            sock.sendall(PROTOCOL_HEADER)
            got = b""
            while chunk := sock.recv(4096):
                got += chunk
            lived = time.monotonic() - connected
        assert got[:1] == b"\x01"  # connection.start, then nothing until the close
        assert 9.5 <= lived < 11.5  # 10 s from the TCP connection, not from the header
