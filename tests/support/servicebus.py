"""What the Azure Service Bus SDK's tests share (tests/interop/test_azure_servicebus.py over
TCP, tests/interop/test_azure_servicebus_ws.py over WebSocket): the broker's users file
holding one SAS key, the emulator connection string, and the bounds on the SDK's waits."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

KEY_NAME = "RootManageSharedAccessKey"
KEY = "c2VjcmV0LWtleS1mb3ItdGhlLXRlc3Rz"
#: A key the broker does not hold (base64, as a SAS key is).
WRONG_KEY = "d3Jvbmcta2V5"
#: A refusal arrives within this (the SDK's own time-outs are tens of seconds).
AT_ONCE = 5.0
#: The most a receive waits for a message the broker holds.
RECEIVE_WAIT = 5


def write_users(folder: Path) -> Path:
    """A users file (``amqp-sansio broker --users FILE``) holding :data:`KEY` as
    :data:`KEY_NAME`, with every right."""
    users = folder / "users.json"
    keys = {KEY_NAME: {"key": KEY, "rights": ["Manage", "Send", "Listen"]}}
    users.write_text(json.dumps({"sas-keys": keys}))
    return users


def connection_string(port: int, key: str = KEY, key_name: str = KEY_NAME) -> str:
    """The emulator connection string for a broker on 127.0.0.1:``port`` (plain AMQP, the
    port kept: ``UseDevelopmentEmulator=true``)."""
    return (
        f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName={key_name};"
        f"SharedAccessKey={key};UseDevelopmentEmulator=true"
    )


def bodies(messages: list[Any]) -> list[str]:
    return [str(m) for m in messages]


def bounded(call: Callable[[], Any], seconds: float) -> Any:
    """``call()``'s result (or the exception it raised, raised here), run in a thread of its
    own that the test waits for at most ``seconds``: a call still running then fails the
    test, saying so (an SDK that waits for good must fail its test, not hang the suite; the
    broker's stop at the test's end ends its connection)."""
    done: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            done.append((True, call()))
        except BaseException as exc:  # (raised again in the test's thread)
            done.append((False, exc))

    thread = threading.Thread(target=run, name="sdk-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if not done:
        raise AssertionError(f"the SDK's call still waits after {seconds:g} s")
    ok, value = done[0]
    if not ok:
        raise value
    return value


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()``'s result, or the exception it raised, and the seconds it took."""
    start = time.monotonic()
    try:
        return call(), time.monotonic() - start
    except Exception as exc:  # (the refusal tests look at it)
        return exc, time.monotonic() - start
