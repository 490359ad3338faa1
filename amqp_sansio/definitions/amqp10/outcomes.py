"""The error type (core spec 2.8.14) and the delivery states and outcomes of part 3 (3.4),
declared as data: the values the performatives, the messaging types and the transaction
types all carry, so they sit below each of them. :mod:`amqp_sansio.definitions.amqp10.messaging`
and :mod:`amqp_sansio.definitions.amqp10.performatives` export them too."""

from __future__ import annotations

from typing import Any

import attrs

from ...codec.amqp10.composite import Composite, amqp, composite

__all__ = ["Accepted", "Error", "Modified", "Received", "Rejected", "Released"]


@composite(0x1D, "amqp:error:list")
@attrs.frozen(kw_only=True)
class Error(Composite):
    """Details of an error (core spec 2.8.14): a condition symbol, a description, info."""

    condition: str = attrs.field(
        metadata=amqp("symbol", mandatory=True, requires="error-condition")
    )
    description: str | None = attrs.field(default=None, metadata=amqp("string"))
    info: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("fields"))


# -- delivery states (3.4) --------------------------------------------------------------------


@composite(0x23, "amqp:received:list", provides=("delivery-state",))
@attrs.frozen(kw_only=True)
class Received(Composite):
    """The state of a partly received delivery, for resuming (core spec 3.4.1)."""

    section_number: int = attrs.field(metadata=amqp("uint", mandatory=True))
    section_offset: int = attrs.field(metadata=amqp("ulong", mandatory=True))


@composite(0x24, "amqp:accepted:list", provides=("delivery-state", "outcome"))
@attrs.frozen(kw_only=True)
class Accepted(Composite):
    """The terminal outcome: the message was processed (core spec 3.4.2)."""


@composite(0x25, "amqp:rejected:list", provides=("delivery-state", "outcome"))
@attrs.frozen(kw_only=True)
class Rejected(Composite):
    """The terminal outcome: the message is invalid and will not be processed (3.4.3)."""

    error: Error | None = attrs.field(default=None, metadata=amqp(Error))


@composite(0x26, "amqp:released:list", provides=("delivery-state", "outcome"))
@attrs.frozen(kw_only=True)
class Released(Composite):
    """The terminal outcome: the message was not (and will not be) processed (3.4.4)."""


@composite(0x27, "amqp:modified:list", provides=("delivery-state", "outcome"))
@attrs.frozen(kw_only=True)
class Modified(Composite):
    """The terminal outcome: not processed, with changes for redelivery (3.4.5)."""

    delivery_failed: bool | None = attrs.field(default=None, metadata=amqp("boolean"))
    undeliverable_here: bool | None = attrs.field(default=None, metadata=amqp("boolean"))
    message_annotations: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("fields"))
