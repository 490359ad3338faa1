"""A flood of failing connections writes a bounded log: ``amqp-sansio broker`` (no options)
takes at most ``LOG_BURST`` per-connection failure lines per ``LOG_INTERVAL`` for all
connections together, then one "suppressed K similar lines" line (docs/broker.rst,
docs/defaults.rst): connections from many source addresses that end before their open,
and 0-9-1 connections closed with an error after their open."""

from __future__ import annotations

import math
import socket
import time

from amqp_sansio.adapters.broker import LOG_BURST, LOG_INTERVAL
from support.amqp091.raw import Session, handshake_steps
from support.broker_process import BrokerProcess

from amqp_sansio.amqp091 import PROTOCOL_HEADER
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.framing.amqp091 import encode_header_frame, encode_method_frame


def _bound(seconds: float) -> int:
    """The most failure lines ``seconds`` of flood may write: a budget per interval begun,
    each with its "suppressed" line, and one more interval for the last of them."""
    intervals = math.ceil(seconds / LOG_INTERVAL) + 2
    return intervals * (LOG_BURST + 1)


def _failure_lines(log: str, *marks: str) -> list[str]:
    return [line for line in log.splitlines() if any(mark in line for mark in marks)]


def test_connections_from_many_addresses_ending_before_their_open() -> None:
    with BrokerProcess() as process:
        started = time.monotonic()
        count = 250
        for n in range(count):  # each from its own loopback address: 127.0.1.x, 127.0.2.x
            source = f"127.0.{1 + n // 250}.{1 + n % 250}"
            with socket.create_connection(
                ("127.0.0.1", process.port), timeout=5, source_address=(source, 0)
            ) as sock:
                sock.sendall(b"GET / HTTP/1.1\r\n\r\n")
                sock.recv(64)  # the 1.0 header, then the broker closes
        flood = time.monotonic() - started
        time.sleep(3 * LOG_INTERVAL)  # (the held lines are said)
        lines = _failure_lines(process.log, "ended before", "suppressed")
    suppressed = [line for line in lines if "suppressed" in line]
    assert suppressed, "\n".join(lines[-5:])
    assert len(lines) <= _bound(flood + 3 * LOG_INTERVAL) < count, (len(lines), flood)


def test_091_connections_closed_with_an_error_after_their_open() -> None:
    bad = encode_method_frame(1, spec.QueueDeclare(queue="q")) + encode_header_frame(
        1, 0, spec.BasicProperties()
    )
    with BrokerProcess() as process:
        count = 150
        sessions = [Session("127.0.0.1", process.port) for _ in range(count)]
        for step in handshake_steps(PROTOCOL_HEADER):  # all of them, step by step
            for session in sessions:
                session.send(step)
            for session in sessions:
                assert session.sock.recv(65536)  # (each answer is one small frame)
        started = time.monotonic()
        for session in sessions:
            session.send(bad)
        for session in sessions:
            assert session.sock.recv(65536)[:1] == b"\x01"  # connection.close 505
            session.sock.close()
        flood = time.monotonic() - started
        time.sleep(3 * LOG_INTERVAL)
        lines = _failure_lines(process.log, "closed after", "suppressed")
    assert any("suppressed" in line for line in lines)
    assert len(lines) <= _bound(flood + 3 * LOG_INTERVAL), (len(lines), flood)
    assert len(lines) < count
