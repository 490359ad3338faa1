"""The first 8 octets pick the engine (amqp_sansio.broker._protocols)."""

from __future__ import annotations

import pytest

from amqp_sansio.broker import pick_protocol


@pytest.mark.parametrize(
    ("header", "protocol"),
    [
        (b"AMQP\x00\x00\x09\x01", "0-9-1"),
        (b"AMQP\x00\x01\x00\x00", "1.0"),
        (b"AMQP\x03\x01\x00\x00", "1.0"),  # SASL
        (b"AMQP\x02\x01\x00\x00", "1.0"),  # TLS
        (b"AMQP\x01\x01\x08\x00", "0-9-1"),  # 0-8: served as 0-8
        (b"AMQP\x01\x01\x09\x01", "0-9-1"),  # py-amqplib's 0-8: served as 0-8
        (b"AMQP\x01\x01\x00\x09", "0-9-1"),  # 0-9: served as 0-9-1
        (b"AMQP\x00\x00\x08\x00", "0-9-1-older"),  # (RabbitMQ's answer too)
        (b"AMQP\x01\x01\x00\x0a", "0-10"),  # 0-10: its own engine
        (b"AMQP\x01\x01\x00\x0b", "0-9-1-older"),  # an unserved 0-x
        (b"AMQP\x00\x00\x09\x00", "0-9-1-older"),  # 0-9-0
        (b"\x16\x03\x01\x02\x00\x01\x00\x01", "1.0"),  # a TLS record (the amqps port)
        (b"GET / HTTP/1.1", "1.0"),  # the 1.0 engine answers with its header
        (b"AMQ", "1.0"),
    ],
)
def test_pick_protocol(header: bytes, protocol: str) -> None:
    assert pick_protocol(header) == protocol
