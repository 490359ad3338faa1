"""The transaction types of core spec part 4 (4.5), declared as data."""

from __future__ import annotations

import attrs

from ...codec.amqp10.composite import Composite, amqp, composite, to_tuple
from ...codec.amqp10.types import AMQPValue, Described, Symbol
from .outcomes import Accepted, Modified, Rejected, Released

__all__ = [
    "Coordinator",
    "Declare",
    "Declared",
    "Discharge",
    "TransactionalState",
    "TxnCapability",
]


class TxnCapability:
    """The transaction capabilities a coordinator may offer (core spec 4.5.8)."""

    LOCAL_TRANSACTIONS = Symbol("amqp:local-transactions")
    DISTRIBUTED_TRANSACTIONS = Symbol("amqp:distributed-transactions")
    PROMOTABLE_TRANSACTIONS = Symbol("amqp:promotable-transactions")
    MULTI_TXNS_PER_SSN = Symbol("amqp:multi-txns-per-ssn")
    MULTI_SSNS_PER_TXN = Symbol("amqp:multi-ssns-per-txn")


@composite(0x30, "amqp:coordinator:list", provides=("target",))
@attrs.frozen(kw_only=True)
class Coordinator(Composite):
    """The target of a link to a transaction coordinator (core spec 4.5.1)."""

    capabilities: tuple[Symbol, ...] | None = attrs.field(
        default=None,
        converter=to_tuple,
        metadata=amqp("symbol", multiple=True, requires="txn-capability"),
    )


@composite(0x31, "amqp:declare:list")
@attrs.frozen(kw_only=True)
class Declare(Composite):
    """Ask the coordinator for a new transaction (core spec 4.5.2)."""

    global_id: AMQPValue = attrs.field(default=None, metadata=amqp("*", requires="global-tx-id"))


@composite(0x32, "amqp:discharge:list")
@attrs.frozen(kw_only=True)
class Discharge(Composite):
    """End a transaction: commit, or roll back when ``fail`` is true (core spec 4.5.3)."""

    txn_id: bytes = attrs.field(metadata=amqp("*", mandatory=True, requires="txn-id"))
    fail: bool | None = attrs.field(default=None, metadata=amqp("boolean"))


@composite(0x33, "amqp:declared:list", provides=("delivery-state", "outcome"))
@attrs.frozen(kw_only=True)
class Declared(Composite):
    """The coordinator's answer to a declare: the new transaction's id (core spec 4.5.5)."""

    txn_id: bytes = attrs.field(metadata=amqp("*", mandatory=True, requires="txn-id"))


@composite(0x34, "amqp:transactional-state:list", provides=("delivery-state",))
@attrs.frozen(kw_only=True)
class TransactionalState(Composite):
    """The state of a delivery within a transaction (core spec 4.5.6)."""

    txn_id: bytes = attrs.field(metadata=amqp("*", mandatory=True, requires="txn-id"))
    # the messaging Outcome (messaging builds its unions on this module, so they are spelt)
    outcome: Accepted | Rejected | Released | Modified | Declared | Described | None = attrs.field(
        default=None, metadata=amqp("*", requires="outcome")
    )
