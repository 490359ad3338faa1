"""The protocol headers every AMQP version opens a connection with, by name: the first
8 octets, which tell one protocol from another (core spec 2.2; 0-9-1 spec 4.2.2; 0-10 and
the older versions by the same layout). What reads a connection's first octets before a
protocol is chosen (the broker's sniffer, the TLS layer's header exchange, an error
message naming what a peer sent) reads them here; each protocol's framing has its own.
"""

from __future__ import annotations

__all__ = ["AMQP_HEADER", "SASL_HEADER", "TLS_HEADER", "name_of"]

#: The three AMQP 1.0 protocol headers (core spec 2.2, 5.2.1, 5.3.1).
AMQP_HEADER = b"AMQP\x00\x01\x00\x00"
TLS_HEADER = b"AMQP\x02\x01\x00\x00"
SASL_HEADER = b"AMQP\x03\x01\x00\x00"

#: The names of the other versions' headers.
_OTHER_VERSIONS = {
    b"AMQP\x00\x00\x09\x01": "AMQP 0-9-1",
    b"AMQP\x01\x01\x00\x0a": "AMQP 0-10",
    b"AMQP\x01\x01\x00\x09": "AMQP 0-9",
    b"AMQP\x01\x01\x08\x00": "AMQP 0-8",
    b"AMQP\x01\x01\x09\x01": "AMQP 0-9-1",
}


def name_of(raw: bytes) -> str:
    """A readable name for a header that is not AMQP 1.0 (8 bytes, zero-padded if short)."""
    if raw in _OTHER_VERSIONS:
        return _OTHER_VERSIONS[raw]
    if raw[:4] == b"AMQP":
        return f"AMQP protocol id {raw[4]} version {raw[5]}.{raw[6]}.{raw[7]}"
    if raw[:4] in (b"GET ", b"POST", b"HEAD", b"PUT ", b"HTTP"):
        return "HTTP"
    if raw[0] == 0x16:
        return "a TLS handshake without the AMQP TLS header"
    return "not AMQP"
