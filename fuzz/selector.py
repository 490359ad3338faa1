"""The broker's message-selector parser's target, ``selector``, and its seeds (both
protocols' consumers use selectors, so the target is in no protocol's folder).

:class:`amqp_sansio.broker.Selector` (length limit 2048, nesting limit 16) is fed the bytes
as UTF-8 text (undecodable bytes replaced); what parses is evaluated against a few messages
(plain mappings and ``MessageFields`` of encoded messages). The invariant: parsing returns or
raises :class:`~amqp_sansio.broker.SelectorError` with a position inside the text;
evaluating returns TRUE, FALSE or UNKNOWN and raises nothing. The seeds are selectors using
every construct, and a few broken ones.
"""

from __future__ import annotations

from typing import Any

from .amqp10.codec import seed_messages
from .common import InvariantViolation, label_error

__all__ = ["fuzz_selector", "seeds"]


def _selector_messages() -> list[Any]:
    from amqp_sansio.broker import MessageFields

    messages: list[Any] = [
        {},
        {"a": 1, "b": "x", "c": 2.5, "d": True, "e": None, "s": "red%_'", "n": -(2**63)},
        {"a": "1", "b": 0, "c": float("nan"), "d": False, "x": [1], "y": b"\x00"},
    ]
    for m in seed_messages()[:5]:
        messages.append(MessageFields(m.encode(), address="q"))
    return messages


_SELECTOR_MESSAGES: list[Any] = []


def fuzz_selector(data: bytes) -> str:
    """Target ``selector``: the bytes as UTF-8 text (undecodable bytes replaced), parsed by
    :class:`~amqp_sansio.broker.Selector` (with limits small enough to reach); what parses
    is evaluated against a few messages. Returns or raises
    :class:`~amqp_sansio.broker.SelectorError` at a position inside the text; nothing
    else."""
    from amqp_sansio.broker import Selector, SelectorError

    text = data.decode("utf-8", "replace")
    try:
        selector = Selector(text, max_length=2048, max_depth=16)
    except SelectorError as exc:
        if not 0 <= exc.position <= len(text):
            raise InvariantViolation(
                "selector", "position", f"error position {exc.position} outside the text"
            ) from exc
        return label_error(exc)
    if not _SELECTOR_MESSAGES:
        _SELECTOR_MESSAGES.extend(_selector_messages())
    results = set()
    for message in _SELECTOR_MESSAGES:
        result = selector.evaluate(message)
        if result not in (True, False, None):
            raise InvariantViolation("selector", "result", f"evaluated to {result!r}")
        results.add(result)
    return "ok:" + ",".join(sorted(str(r) for r in results))


def _selector_seeds() -> list[bytes]:
    texts = [
        "colour = 'red' AND weight > 2",
        "a = 1 OR b <> 'x' AND NOT c < 2.5e3",
        "s LIKE 'r%e_d!%' ESCAPE '!' AND s NOT LIKE '%%'",
        "b IN ('x', 'y', 'it''s') OR b NOT IN ('z')",
        "a BETWEEN -1 AND 0x1F AND c NOT BETWEEN 017 AND 9L",
        "e IS NULL AND a IS NOT NULL",
        "(a + 2) * 3 / -c - +a >= 10 OR d = TRUE",
        "JMSPriority > 4 AND JMSType = 'order' AND JMSMessageID LIKE 'ID:%'",
        "JMSDeliveryMode = 'PERSISTENT' OR AMQSize > 10 AND AMQAddress = 'q'",
        "((((a = 1))))",
        "NOT NOT NOT d",
        "n = -9223372036854775808 AND 9223372036854775807 + 1 < 0",
        "\u00e9t\u00e9 = 1 AND $x = _y",
        "a = 1 = 2",
        "'unterminated",
        "a LIKE 'x!' ESCAPE '!'",
    ]
    return [t.encode() for t in texts]


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``selector`` (deterministic)."""
    return {"selector": _selector_seeds()}
