"""The I/O-free AMQP 0-9-1 client core that the adapters drive for ``connect(url,
protocol="0-9-1")``: URLs (:mod:`.url`), the errors and values an application sees
(:mod:`.ops`). It does no I/O: an adapter feeds it bytes and time (see
:doc:`amqp091`, "Adapters")."""

from __future__ import annotations

from .ops import (
    AuthenticationError,
    ChannelClosedError,
    Confirmation,
    ConnectionClosedError,
    ConsumeOptions,
    ExchangeOptions,
    QueueOptions,
    Returned,
    TransactionError,
    describe_reply,
)
from .url import URL, parse_url

__all__ = [
    "AuthenticationError",
    "ChannelClosedError",
    "Confirmation",
    "ConnectionClosedError",
    "ConsumeOptions",
    "ExchangeOptions",
    "QueueOptions",
    "Returned",
    "TransactionError",
    "URL",
    "describe_reply",
    "parse_url",
]
