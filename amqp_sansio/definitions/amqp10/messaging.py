"""The messaging types of core spec part 3, declared as data: message sections (3.2),
delivery states and outcomes (3.4), source, target and their restricted types (3.5), and the
lifetime policies of dynamic nodes (3.5.10-3.5.13)."""

from __future__ import annotations

import enum
import uuid
from typing import Any, TypeAlias

import attrs

from ...codec.amqp10.composite import (
    Composite,
    Restricted,
    amqp,
    composite,
    restricted,
    to_bytes,
    to_tuple,
)
from ...codec.amqp10.types import AMQPValue, Described, Symbol
from .outcomes import Accepted, Modified, Received, Rejected, Released
from .transactions import Declared, TransactionalState

__all__ = [
    "Accepted",
    "AmqpSequence",
    "AmqpValue",
    "ApplicationProperties",
    "Data",
    "DeleteOnClose",
    "DeleteOnNoLinks",
    "DeleteOnNoLinksOrMessages",
    "DeleteOnNoMessages",
    "DeliveryAnnotations",
    "DeliveryState",
    "LifetimePolicy",
    "Footer",
    "Header",
    "MessageAnnotations",
    "Modified",
    "Outcome",
    "Properties",
    "Received",
    "Rejected",
    "Released",
    "Source",
    "Target",
    "TerminusDurability",
    "TerminusExpiryPolicy",
]


class TerminusDurability(enum.IntEnum):
    """What a terminus keeps across a link's lifetime (core spec 3.5.5)."""

    NONE = 0
    CONFIGURATION = 1
    UNSETTLED_STATE = 2


class TerminusExpiryPolicy(str, enum.Enum):
    """When the expiry timer of a terminus starts (core spec 3.5.6)."""

    LINK_DETACH = "link-detach"
    SESSION_END = "session-end"
    CONNECTION_CLOSE = "connection-close"
    NEVER = "never"


# -- sections (3.2) -------------------------------------------------------------------------


def _section_bytes(value: bytes | bytearray | memoryview) -> bytes:
    if type(value) is bytes:
        return value
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"a data section holds bytes, not {type(value).__name__}")
    return bytes(value)


def _section_list(value: list[AMQPValue] | tuple[AMQPValue, ...]) -> list[AMQPValue]:
    if not isinstance(value, list | tuple):
        raise TypeError(f"an amqp-sequence section holds a list, not {type(value).__name__}")
    return list(value)


@composite(0x70, "amqp:header:list", provides=("section",))
@attrs.frozen(kw_only=True)
class Header(Composite):
    """Transport headers for a message (core spec 3.2.1)."""

    durable: bool = attrs.field(default=False, metadata=amqp("boolean"))
    priority: int = attrs.field(default=4, metadata=amqp("ubyte"))
    ttl: int | None = attrs.field(default=None, metadata=amqp("uint"))
    first_acquirer: bool = attrs.field(default=False, metadata=amqp("boolean"))
    delivery_count: int = attrs.field(default=0, metadata=amqp("uint"))


@restricted(0x71, "amqp:delivery-annotations:map", "annotations", provides=("section",))
@attrs.frozen
class DeliveryAnnotations(Restricted):
    """Delivery annotations (core spec 3.2.2): for the next hop only. Keys are symbols (a
    ``str`` key is sent as a symbol) or ulongs."""

    value: dict[Any, Any] | None


@restricted(0x72, "amqp:message-annotations:map", "annotations", provides=("section",))
@attrs.frozen
class MessageAnnotations(Restricted):
    """Message annotations (core spec 3.2.3): for the infrastructure, end to end."""

    value: dict[Any, Any] | None


@composite(0x73, "amqp:properties:list", provides=("section",))
@attrs.frozen(kw_only=True)
class Properties(Composite):
    """Immutable properties of the bare message (core spec 3.2.4). A message-id given as a
    plain ``int`` is sent as a ulong (3.2.11)."""

    message_id: int | uuid.UUID | bytes | str | None = attrs.field(
        default=None, metadata=amqp("*", requires="message-id")
    )
    user_id: bytes | None = attrs.field(default=None, converter=to_bytes, metadata=amqp("binary"))
    to: str | None = attrs.field(default=None, metadata=amqp("*", requires="address"))
    subject: str | None = attrs.field(default=None, metadata=amqp("string"))
    reply_to: str | None = attrs.field(default=None, metadata=amqp("*", requires="address"))
    correlation_id: int | uuid.UUID | bytes | str | None = attrs.field(
        default=None, metadata=amqp("*", requires="message-id")
    )
    content_type: str | None = attrs.field(default=None, metadata=amqp("symbol"))
    content_encoding: str | None = attrs.field(default=None, metadata=amqp("symbol"))
    absolute_expiry_time: int | None = attrs.field(default=None, metadata=amqp("timestamp"))
    creation_time: int | None = attrs.field(default=None, metadata=amqp("timestamp"))
    group_id: str | None = attrs.field(default=None, metadata=amqp("string"))
    group_sequence: int | None = attrs.field(default=None, metadata=amqp("uint"))
    reply_to_group_id: str | None = attrs.field(default=None, metadata=amqp("string"))


@restricted(0x74, "amqp:application-properties:map", "map", provides=("section",))
@attrs.frozen
class ApplicationProperties(Restricted):
    """Application properties (core spec 3.2.5): string keys, simple values."""

    value: dict[str, Any] | None


@restricted(0x75, "amqp:data:binary", "binary", provides=("section",))
@attrs.frozen
class Data(Restricted):
    """A data section: opaque binary application data (core spec 3.2.6)."""

    value: bytes = attrs.field(converter=_section_bytes)


@restricted(0x76, "amqp:amqp-sequence:list", "list", provides=("section",))
@attrs.frozen
class AmqpSequence(Restricted):
    """An amqp-sequence section: a list of AMQP values (core spec 3.2.7). Any sequence given
    is held as a list, as it decodes."""

    value: list[AMQPValue] = attrs.field(converter=_section_list)


@restricted(0x77, "amqp:amqp-value:*", "*", provides=("section",))
@attrs.frozen
class AmqpValue(Restricted):
    """An amqp-value section: one AMQP value of any type (core spec 3.2.8)."""

    value: AMQPValue


@restricted(0x78, "amqp:footer:map", "annotations", provides=("section",))
@attrs.frozen
class Footer(Restricted):
    """Transport footers (core spec 3.2.9): hashes, signatures and the like."""

    value: dict[Any, Any] | None


# -- terminus (3.5) ---------------------------------------------------------------------------


@composite(0x28, "amqp:source:list", provides=("source",))
@attrs.frozen(kw_only=True)
class Source(Composite):
    """The source of a link (core spec 3.5.3)."""

    address: str | None = attrs.field(default=None, metadata=amqp("*", requires="address"))
    durable: TerminusDurability = attrs.field(
        default=TerminusDurability.NONE, metadata=amqp("uint", enum=TerminusDurability)
    )
    expiry_policy: TerminusExpiryPolicy = attrs.field(
        default=TerminusExpiryPolicy.SESSION_END, metadata=amqp("symbol", enum=TerminusExpiryPolicy)
    )
    timeout: int = attrs.field(default=0, metadata=amqp("uint"))
    dynamic: bool = attrs.field(default=False, metadata=amqp("boolean"))
    dynamic_node_properties: dict[Any, Any] | None = attrs.field(
        default=None, metadata=amqp("fields")
    )
    distribution_mode: str | None = attrs.field(default=None, metadata=amqp("symbol"))
    filter: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("fields"))
    default_outcome: Outcome | None = attrs.field(
        default=None, metadata=amqp("*", requires="outcome")
    )
    outcomes: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )


@composite(0x29, "amqp:target:list", provides=("target",))
@attrs.frozen(kw_only=True)
class Target(Composite):
    """The target of a link (core spec 3.5.4)."""

    address: str | None = attrs.field(default=None, metadata=amqp("*", requires="address"))
    durable: TerminusDurability = attrs.field(
        default=TerminusDurability.NONE, metadata=amqp("uint", enum=TerminusDurability)
    )
    expiry_policy: TerminusExpiryPolicy = attrs.field(
        default=TerminusExpiryPolicy.SESSION_END, metadata=amqp("symbol", enum=TerminusExpiryPolicy)
    )
    timeout: int = attrs.field(default=0, metadata=amqp("uint"))
    dynamic: bool = attrs.field(default=False, metadata=amqp("boolean"))
    dynamic_node_properties: dict[Any, Any] | None = attrs.field(
        default=None, metadata=amqp("fields")
    )
    capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )


@composite(0x2B, "amqp:delete-on-close:list", provides=("lifetime-policy",))
@attrs.frozen(kw_only=True)
class DeleteOnClose(Composite):
    """Delete the dynamic node when the link that created it closes (core spec 3.5.10)."""


@composite(0x2C, "amqp:delete-on-no-links:list", provides=("lifetime-policy",))
@attrs.frozen(kw_only=True)
class DeleteOnNoLinks(Composite):
    """Delete the dynamic node once no link is attached to it (core spec 3.5.11)."""


@composite(0x2D, "amqp:delete-on-no-messages:list", provides=("lifetime-policy",))
@attrs.frozen(kw_only=True)
class DeleteOnNoMessages(Composite):
    """Delete the dynamic node once it holds no messages (core spec 3.5.12)."""


@composite(0x2E, "amqp:delete-on-no-links-or-messages:list", provides=("lifetime-policy",))
@attrs.frozen(kw_only=True)
class DeleteOnNoLinksOrMessages(Composite):
    """Delete the dynamic node once it has neither links nor messages (core spec 3.5.13)."""


# -- the archetypes as unions -----------------------------------------------------------------

#: An outcome (core spec 3.4, and :class:`~amqp_sansio.definitions.amqp10.transactions.Declared` of
#: 4.5.5): the terminal state of a delivery, as a source's ``default_outcome`` and inside a
#: transactional state. A :class:`~amqp_sansio.Described` value is an outcome the library does
#: not know (an extension), which the peer may send.
Outcome: TypeAlias = Accepted | Rejected | Released | Modified | Declared | Described

#: A delivery state (core spec 3.4, 4.5.5 and 4.5.6): what a transfer or a disposition
#: carries, and what :meth:`~amqp_sansio.Link.update` and :meth:`~amqp_sansio.Link.settle`
#: take. As for :data:`Outcome`, a :class:`~amqp_sansio.Described` value is one the library
#: does not know.
DeliveryState: TypeAlias = (
    Received | Accepted | Rejected | Released | Modified | Declared | TransactionalState | Described
)

#: A lifetime policy of a dynamic node (core spec 3.5.10-3.5.13), as the ``lifetime-policy``
#: entry of a terminus's ``dynamic_node_properties``.
LifetimePolicy: TypeAlias = (
    DeleteOnClose | DeleteOnNoLinks | DeleteOnNoMessages | DeleteOnNoLinksOrMessages
)
