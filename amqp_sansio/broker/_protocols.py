"""Which protocol a client speaks, by the 8 octets it sends first (as RabbitMQ, which
serves both on one port, tells them apart): AMQP 1.0's headers (``AMQP`` then protocol id
0, 2 or 3 and version 1.0.0; core spec 2.2, 5.1, 5.2.1), AMQP 0-9-1's ``AMQP\\x00\\x00\\x09\\x01``
(0-9-1 spec 4.2.2). An earlier 0-x header (0-8, 0-9, 0-10: ``AMQP\\x01\\x01...``) gets the
0-9-1 header back, the server's preferred version of that line, and the connection closes
(0-9-1 spec 4.2.2, rule "protocol-negotiation"); anything else goes to the 1.0 engine,
which answers it by 1.0's rule (its own header, then it closes)."""

from __future__ import annotations

from typing import Literal

from ..amqp091.framing import PROTOCOL_HEADER

__all__ = ["pick_protocol"]

#: The octets a 1.0 header starts with after ``AMQP`` (its protocol id).
_AMQP10_IDS = (0, 2, 3)


def pick_protocol(header: bytes) -> Literal["1.0", "0-9-1", "0-9-1-older"]:
    """The engine for a client whose first octets are ``header`` (at least 8, or all it
    sent before it went): ``"0-9-1"``, ``"0-9-1-older"`` (answer 0-9-1's
    :data:`~amqp_sansio.amqp091.PROTOCOL_HEADER` and close) or ``"1.0"`` (everything
    else, TLS records of the amqps port included)."""
    if header[:8] == PROTOCOL_HEADER:
        return "0-9-1"
    if header[:4] == b"AMQP" and len(header) >= 8:
        if header[4] == 1 and header[5] == 1:  # 0-8, 0-9, 0-10: class 1, instance 1
            return "0-9-1-older"
        if header[4] == 0 and header[5:7] == b"\x00\x09":  # another 0-9 revision
            return "0-9-1-older"
    return "1.0"
