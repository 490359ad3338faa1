"""What the tests driving the Azure Service Bus SDK (``azure-servicebus``) against
``amqp-sansio broker`` share: the SAS key, the emulator connection string, the bounds on
each call's time, and the bodies of what was received."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from support.broker_process import BrokerProcess

__all__ = [
    "AT_ONCE",
    "KEY",
    "KEY_NAME",
    "RECEIVE_WAIT",
    "bodies",
    "connection_string",
    "timed",
]

KEY_NAME = "RootManageSharedAccessKey"
KEY = "c2VjcmV0LWtleS1mb3ItdGhlLXRlc3Rz"
#: A refusal arrives within this (the SDK's own time-outs are tens of seconds).
AT_ONCE = 5.0
#: The most a receive waits for a message the broker holds.
RECEIVE_WAIT = 5


def connection_string(broker: BrokerProcess, key: str = KEY) -> str:
    """The emulator connection string (``UseDevelopmentEmulator=true``: plain AMQP)."""
    return (
        f"Endpoint=sb://127.0.0.1:{broker.port};SharedAccessKeyName={KEY_NAME};"
        f"SharedAccessKey={key};UseDevelopmentEmulator=true"
    )


def bodies(messages: list[Any]) -> list[str]:
    return [str(m) for m in messages]


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    start = time.monotonic()
    try:
        return call(), time.monotonic() - start
    except Exception as exc:  # (the refusal tests look at it)
        return exc, time.monotonic() - start
