"""What an AMQP 0-9-1 queue declaration says, read for the broker's virtual hosts
(:mod:`.vhosts`): RabbitMQ's common queue arguments (``queue.declare``, 1.7.2.1, field
``arguments``), the record of a declared queue with the equivalence a redeclaration must
meet, and :class:`Refused`, the refusal with the reply code a peer gets.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from ...codec.amqp091 import FieldValue
from ...definitions.amqp091.spec import SOFT_ERRORS, ReplyCode
from .._nodes import Queue
from .._refused import Refused as _Refused
from .exchanges import _freeze
from .streams import StreamRefused

__all__ = ["QueueArguments", "QueueRecord", "Refused", "parse_queue_arguments"]


class Refused(_Refused):
    """A method the virtual host refuses (:class:`~amqp_sansio.broker._refused.Refused`):
    ``reply_code`` (a :class:`ReplyCode`) and ``reply_text``; a soft error closes the
    channel, a hard one (503, 530) the connection."""

    @property
    def hard(self) -> bool:
        return self.reply_code not in SOFT_ERRORS


def _refused(refused: StreamRefused) -> Refused:
    """A stream's refusal (:mod:`.streams`) as the virtual host's."""
    return Refused(refused.reply_code, refused.reply_text)


# -- queue arguments ---------------------------------------------------------------------------

#: The most priorities ``x-max-priority`` gives a queue (RabbitMQ's bound: 1 to 255).
MAX_PRIORITY_LEVELS = 255


@attrs.frozen
class QueueArguments:
    """RabbitMQ's common queue arguments, read (each None where not given): milliseconds
    for ``message_ttl`` and ``expires``."""

    message_ttl: int | None = None
    expires: int | None = None
    max_length: int | None = None
    max_length_bytes: int | None = None
    overflow: str | None = None
    dead_letter_exchange: str | None = None
    dead_letter_routing_key: str | None = None
    max_priority: int | None = None


def _integer(name: str, value: Any, *, positive: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Refused(ReplyCode.PRECONDITION_FAILED, f"invalid arg '{name}': not an integer")
    if value < 0 or (positive and value == 0):
        kind = "positive" if positive else "non-negative"
        raise Refused(ReplyCode.PRECONDITION_FAILED, f"invalid arg '{name}': not {kind}")
    return int(value)


def text_argument(name: str, value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            pass
    elif isinstance(value, str):
        return str(value)
    raise Refused(ReplyCode.PRECONDITION_FAILED, f"invalid arg '{name}': not a string")


def parse_queue_arguments(arguments: Mapping[str, FieldValue]) -> QueueArguments:
    """Read RabbitMQ's common queue arguments; a value of the wrong kind is refused with 406
    PRECONDITION_FAILED (as RabbitMQ does). Arguments it does not know are kept, unused."""
    fields: dict[str, Any] = {}
    for name, field, positive in (
        ("x-message-ttl", "message_ttl", False),
        ("x-expires", "expires", True),
        ("x-max-length", "max_length", False),
        ("x-max-length-bytes", "max_length_bytes", False),
        ("x-max-priority", "max_priority", False),
    ):
        if name in arguments:
            fields[field] = _integer(name, arguments[name], positive=positive)
    if fields.get("max_priority", 0) > MAX_PRIORITY_LEVELS:
        raise Refused(
            ReplyCode.PRECONDITION_FAILED,
            f"invalid arg 'x-max-priority': {fields['max_priority']} is over {MAX_PRIORITY_LEVELS}",
        )
    if "x-overflow" in arguments:
        overflow = text_argument("x-overflow", arguments["x-overflow"])
        if overflow not in ("drop-head", "reject-publish"):
            raise Refused(
                ReplyCode.PRECONDITION_FAILED,
                f"invalid arg 'x-overflow': {overflow!r} (drop-head or reject-publish)",
            )
        fields["overflow"] = overflow
    if "x-dead-letter-exchange" in arguments:
        fields["dead_letter_exchange"] = text_argument(
            "x-dead-letter-exchange", arguments["x-dead-letter-exchange"]
        )
    if "x-dead-letter-routing-key" in arguments:
        if "dead_letter_exchange" not in fields:
            raise Refused(
                ReplyCode.PRECONDITION_FAILED,
                "invalid arg 'x-dead-letter-routing-key': x-dead-letter-exchange is not set",
            )
        fields["dead_letter_routing_key"] = text_argument(
            "x-dead-letter-routing-key", arguments["x-dead-letter-routing-key"]
        )
    if "x-queue-type" in arguments:
        kind = text_argument("x-queue-type", arguments["x-queue-type"])
        if kind not in ("classic", "quorum"):
            raise Refused(ReplyCode.PRECONDITION_FAILED, f"invalid arg 'x-queue-type': {kind!r}")
    return QueueArguments(**fields)


@attrs.define
class QueueRecord:
    """A queue as 0-9-1 declared it: its flags, arguments and owner (the connection of an
    exclusive queue)."""

    queue: Queue
    durable: bool
    exclusive: bool
    auto_delete: bool
    arguments: dict[str, FieldValue]
    parsed: QueueArguments
    owner: object | None = None
    #: A 0-9-1 consumer was ever added (auto-delete waits for the first).
    had_consumers: bool = False

    def equivalent(
        self, durable: bool, exclusive: bool, auto_delete: bool, arguments: Mapping[str, FieldValue]
    ) -> str | None:
        """Why a redeclaration is not equivalent (406), or None."""
        name = self.queue.address
        for field, mine, theirs in (
            ("durable", self.durable, durable),
            ("exclusive", self.exclusive, exclusive),
            ("auto_delete", self.auto_delete, auto_delete),
        ):
            if mine != theirs:
                return (
                    f"inequivalent arg '{field}' for queue '{name}': "
                    f"received {theirs!r} but current is {mine!r}"
                )
        mine_args, theirs_args = self.arguments, dict(arguments)
        for key in sorted(set(mine_args) | set(theirs_args)):
            if _freeze(mine_args.get(key)) != _freeze(theirs_args.get(key)):
                return f"inequivalent arg '{key}' for queue '{name}'"
        return None
