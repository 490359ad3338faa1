"""What every fuzz target shares: the invariant's first half ("returns, or raises the
library's typed error that blames the remote side"), the error a target raises when it
breaks the rest of its invariant, the canonical-form round trip, and the chunk sizes a
target feeds its input in (derived from the input, so every run is reproducible).

The targets themselves are in one module per family (``amqp10/``, ``amqp091/``,
``selector.py``); ``harness.py`` registers them and runs them.
"""

from __future__ import annotations

import random
import re
import zlib
from collections.abc import Callable
from typing import Any

from amqp_sansio import DecodeError
from amqp_sansio.errors import FramingError, UnsupportedProtocolError

__all__ = [
    "FRAME_MAX",
    "REMOTE_ERRORS",
    "TICK",
    "InvariantViolation",
    "chunk_sizes",
    "label_error",
    "roundtrip",
]

#: The errors that blame the bytes (the remote side); every other exception is a failure.
REMOTE_ERRORS: tuple[type[Exception], ...] = (DecodeError, FramingError, UnsupportedProtocolError)

#: The max-frame-size the frame targets give their parsers.
FRAME_MAX = 8192
#: Seconds of simulated time between two chunks of input (the engine and broker targets).
TICK = 0.005


class InvariantViolation(AssertionError):
    """A target broke the invariant without raising anything unexpected itself.

    ``stage`` says which check failed, ``value`` is what was decoded (when anything was) and
    ``encoded`` the bytes of the first re-encoding (when there were any).
    """

    def __init__(
        self,
        target: str,
        stage: str,
        message: str,
        *,
        value: Any = None,
        encoded: bytes | None = None,
    ) -> None:
        super().__init__(f"[{target}/{stage}] {message}")
        self.target = target
        self.stage = stage
        self.value = value
        self.encoded = encoded


def label_error(exc: BaseException) -> str:
    """A coarse label for an error: its class and its message with the details blanked."""
    text = getattr(exc, "description", None) or str(exc)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|0x[0-9a-fA-F]+|\d+", "#", text)
    return f"{type(exc).__name__}:{text[:60]}"


def roundtrip(
    target: str, value: Any, enc: Callable[[Any], bytes], dec: Callable[[bytes], Any]
) -> None:
    """encode(value) succeeds, decodes back, and re-encodes to the same bytes."""
    try:
        first = enc(value)
    except Exception as exc:
        raise InvariantViolation(
            target, "encode", f"decoded value does not encode: {exc!r}", value=value
        ) from exc
    try:
        again = dec(first)
    except Exception as exc:
        raise InvariantViolation(
            target,
            "redecode",
            f"encoding {first[:64]!r} of a decoded value does not decode: {exc!r}",
            value=value,
            encoded=first,
        ) from exc
    try:
        second = enc(again)
    except Exception as exc:
        raise InvariantViolation(
            target,
            "reencode",
            f"re-decoded value does not encode: {exc!r}",
            value=again,
            encoded=first,
        ) from exc
    if second != first:
        raise InvariantViolation(
            target,
            "unstable",
            f"canonical form is not stable: {first[:64]!r} then {second[:64]!r}",
            value=value,
            encoded=first,
        )


def chunk_sizes(data: bytes) -> list[int]:
    """Chunk sizes derived from the data itself, so that every run is reproducible."""
    rng = random.Random(zlib.crc32(data))
    style = rng.randrange(4)
    if style == 0:
        return [1] * len(data)
    top = (3, 9, 64, max(1, len(data) // 2))[rng.randrange(4)]
    return [rng.randint(1, top) for _ in range(len(data) + 1)]
