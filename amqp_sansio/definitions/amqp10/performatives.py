"""The transport performatives (core spec 2.7) and the SASL frame bodies (5.3.3), declared as
data; the error type (2.8.14) they carry is declared in ``outcomes`` and exported here too.

Field names are the spec's, with hyphens as underscores. Defaults are the spec's defaults; a
field left at its default is sent as null (trailing nulls are trimmed), which the spec makes
equivalent.
"""

from __future__ import annotations

import enum
from typing import Any

import attrs

from ...codec.amqp10.composite import Composite, amqp, composite, to_bytes, to_tuple
from ...codec.amqp10.types import Described, Symbol
from ..sasl import SaslCode
from .messaging import DeliveryState, Source, Target
from .outcomes import Error
from .transactions import Coordinator

__all__ = [
    "Attach",
    "Begin",
    "Close",
    "Detach",
    "Disposition",
    "End",
    "Error",
    "Flow",
    "Open",
    "Performative",
    "ReceiverSettleMode",
    "Role",
    "SaslChallenge",
    "SaslCode",
    "SaslFrameBody",
    "SaslInit",
    "SaslMechanisms",
    "SaslOutcome",
    "SaslResponse",
    "SenderSettleMode",
    "Transfer",
]

_UINT_MAX = 0xFFFFFFFF


class Role(enum.IntEnum):
    """Link role (core spec 2.8.1), sent as a boolean: sender is false, receiver true."""

    SENDER = 0
    RECEIVER = 1


class SenderSettleMode(enum.IntEnum):
    """Settlement policy for a sender (core spec 2.8.2)."""

    UNSETTLED = 0
    SETTLED = 1
    MIXED = 2


class ReceiverSettleMode(enum.IntEnum):
    """Settlement policy for a receiver (core spec 2.8.3)."""

    FIRST = 0
    SECOND = 1


class Performative(Composite):
    """Base of the nine frame bodies of core spec 2.7."""

    __slots__ = ()


class SaslFrameBody(Composite):
    """Base of the five SASL frame bodies of core spec 5.3.3."""

    __slots__ = ()


@composite(0x10, "amqp:open:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Open(Performative):
    """Negotiate connection parameters (core spec 2.7.1)."""

    container_id: str = attrs.field(metadata=amqp("string", mandatory=True))
    hostname: str | None = attrs.field(default=None, metadata=amqp("string"))
    max_frame_size: int = attrs.field(default=_UINT_MAX, metadata=amqp("uint"))
    channel_max: int = attrs.field(default=0xFFFF, metadata=amqp("ushort"))
    idle_time_out: int | None = attrs.field(default=None, metadata=amqp("uint"))
    outgoing_locales: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    incoming_locales: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    offered_capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    desired_capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    properties: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("fields"))


@composite(0x11, "amqp:begin:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Begin(Performative):
    """Begin a session on a channel (core spec 2.7.2)."""

    remote_channel: int | None = attrs.field(default=None, metadata=amqp("ushort"))
    next_outgoing_id: int = attrs.field(metadata=amqp("uint", mandatory=True))
    incoming_window: int = attrs.field(metadata=amqp("uint", mandatory=True))
    outgoing_window: int = attrs.field(metadata=amqp("uint", mandatory=True))
    handle_max: int = attrs.field(default=_UINT_MAX, metadata=amqp("uint"))
    offered_capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    desired_capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    properties: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("fields"))


@composite(0x12, "amqp:attach:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Attach(Performative):
    """Attach a link to a session (core spec 2.7.3)."""

    name: str = attrs.field(metadata=amqp("string", mandatory=True))
    handle: int = attrs.field(metadata=amqp("uint", mandatory=True))
    role: Role = attrs.field(metadata=amqp("boolean", mandatory=True, enum=Role))
    snd_settle_mode: SenderSettleMode = attrs.field(
        default=SenderSettleMode.MIXED, metadata=amqp("ubyte", enum=SenderSettleMode)
    )
    rcv_settle_mode: ReceiverSettleMode = attrs.field(
        default=ReceiverSettleMode.FIRST, metadata=amqp("ubyte", enum=ReceiverSettleMode)
    )
    source: Source | Described | None = attrs.field(
        default=None, metadata=amqp("*", requires="source")
    )
    target: Target | Coordinator | Described | None = attrs.field(
        default=None, metadata=amqp("*", requires="target")
    )
    unsettled: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("map"))
    incomplete_unsettled: bool = attrs.field(default=False, metadata=amqp("boolean"))
    initial_delivery_count: int | None = attrs.field(default=None, metadata=amqp("uint"))
    max_message_size: int | None = attrs.field(default=None, metadata=amqp("ulong"))
    offered_capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    desired_capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None, converter=to_tuple, metadata=amqp("symbol", multiple=True)
    )
    properties: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("fields"))


@composite(0x13, "amqp:flow:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Flow(Performative):
    """Update link and session flow state (core spec 2.7.4)."""

    next_incoming_id: int | None = attrs.field(default=None, metadata=amqp("uint"))
    incoming_window: int = attrs.field(metadata=amqp("uint", mandatory=True))
    next_outgoing_id: int = attrs.field(metadata=amqp("uint", mandatory=True))
    outgoing_window: int = attrs.field(metadata=amqp("uint", mandatory=True))
    handle: int | None = attrs.field(default=None, metadata=amqp("uint"))
    delivery_count: int | None = attrs.field(default=None, metadata=amqp("uint"))
    link_credit: int | None = attrs.field(default=None, metadata=amqp("uint"))
    available: int | None = attrs.field(default=None, metadata=amqp("uint"))
    drain: bool = attrs.field(default=False, metadata=amqp("boolean"))
    echo: bool = attrs.field(default=False, metadata=amqp("boolean"))
    properties: dict[Any, Any] | None = attrs.field(default=None, metadata=amqp("fields"))


@composite(0x14, "amqp:transfer:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Transfer(Performative):
    """Transfer a message, or a part of one (core spec 2.7.5). The message bytes follow the
    performative in the frame as its payload."""

    handle: int = attrs.field(metadata=amqp("uint", mandatory=True))
    delivery_id: int | None = attrs.field(default=None, metadata=amqp("uint"))
    delivery_tag: bytes | None = attrs.field(
        default=None, converter=to_bytes, metadata=amqp("binary")
    )
    message_format: int | None = attrs.field(default=None, metadata=amqp("uint"))
    settled: bool | None = attrs.field(default=None, metadata=amqp("boolean"))
    more: bool = attrs.field(default=False, metadata=amqp("boolean"))
    rcv_settle_mode: ReceiverSettleMode | None = attrs.field(
        default=None, metadata=amqp("ubyte", enum=ReceiverSettleMode)
    )
    state: DeliveryState | None = attrs.field(
        default=None, metadata=amqp("*", requires="delivery-state")
    )
    resume: bool = attrs.field(default=False, metadata=amqp("boolean"))
    aborted: bool = attrs.field(default=False, metadata=amqp("boolean"))
    batchable: bool = attrs.field(default=False, metadata=amqp("boolean"))


@composite(0x15, "amqp:disposition:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Disposition(Performative):
    """Inform the peer of delivery state changes (core spec 2.7.6)."""

    role: Role = attrs.field(metadata=amqp("boolean", mandatory=True, enum=Role))
    first: int = attrs.field(metadata=amqp("uint", mandatory=True))
    last: int | None = attrs.field(default=None, metadata=amqp("uint"))
    settled: bool = attrs.field(default=False, metadata=amqp("boolean"))
    state: DeliveryState | None = attrs.field(
        default=None, metadata=amqp("*", requires="delivery-state")
    )
    batchable: bool = attrs.field(default=False, metadata=amqp("boolean"))


@composite(0x16, "amqp:detach:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Detach(Performative):
    """Detach a link from its session (core spec 2.7.7)."""

    handle: int = attrs.field(metadata=amqp("uint", mandatory=True))
    closed: bool = attrs.field(default=False, metadata=amqp("boolean"))
    error: Error | None = attrs.field(default=None, metadata=amqp(Error))


@composite(0x17, "amqp:end:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class End(Performative):
    """End a session (core spec 2.7.8)."""

    error: Error | None = attrs.field(default=None, metadata=amqp(Error))


@composite(0x18, "amqp:close:list", provides=("frame",))
@attrs.frozen(kw_only=True)
class Close(Performative):
    """Close the connection (core spec 2.7.9)."""

    error: Error | None = attrs.field(default=None, metadata=amqp(Error))


@composite(0x40, "amqp:sasl-mechanisms:list", provides=("sasl-frame",))
@attrs.frozen(kw_only=True)
class SaslMechanisms(SaslFrameBody):
    """The server's supported SASL mechanisms (core spec 5.3.3.1)."""

    sasl_server_mechanisms: tuple[Symbol, ...] = attrs.field(
        converter=to_tuple, metadata=amqp("symbol", mandatory=True, multiple=True)
    )


@composite(0x41, "amqp:sasl-init:list", provides=("sasl-frame",))
@attrs.frozen(kw_only=True)
class SaslInit(SaslFrameBody):
    """The client's chosen mechanism and initial response (core spec 5.3.3.2). The
    ``initial_response`` is a credential: it is never shown in the repr."""

    mechanism: str = attrs.field(metadata=amqp("symbol", mandatory=True))
    initial_response: bytes | None = attrs.field(
        default=None, converter=to_bytes, repr=False, metadata=amqp("binary")
    )
    hostname: str | None = attrs.field(default=None, metadata=amqp("string"))


@composite(0x42, "amqp:sasl-challenge:list", provides=("sasl-frame",))
@attrs.frozen(kw_only=True)
class SaslChallenge(SaslFrameBody):
    """Security challenge data (core spec 5.3.3.3)."""

    challenge: bytes = attrs.field(
        converter=to_bytes, repr=False, metadata=amqp("binary", mandatory=True)
    )


@composite(0x43, "amqp:sasl-response:list", provides=("sasl-frame",))
@attrs.frozen(kw_only=True)
class SaslResponse(SaslFrameBody):
    """Security response data (core spec 5.3.3.4); never shown in the repr."""

    response: bytes = attrs.field(
        converter=to_bytes, repr=False, metadata=amqp("binary", mandatory=True)
    )


@composite(0x44, "amqp:sasl-outcome:list", provides=("sasl-frame",))
@attrs.frozen(kw_only=True)
class SaslOutcome(SaslFrameBody):
    """The result of the SASL exchange (core spec 5.3.3.5)."""

    code: SaslCode = attrs.field(metadata=amqp("ubyte", mandatory=True, enum=SaslCode))
    additional_data: bytes | None = attrs.field(
        default=None, converter=to_bytes, repr=False, metadata=amqp("binary")
    )
