"""What the broker's AMQP 1.0 side asks of the broker (:class:`Broker10`: the core's
:class:`~amqp_sansio.broker._interface.ConnectionBroker` and the request/response nodes it
keeps there, ``$management`` and ``$cbs``) and of a 1.0 connection (:class:`Connection10`:
what its endpoints, the management node and transactions use), so that those modules need
not import the connection, nor it them for their types."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._interface import ConnectionBroker

if TYPE_CHECKING:
    from ...definitions.amqp10.messaging import Source, Target
    from ...definitions.amqp10.performatives import Error
    from ...engine.amqp10.connection import Connection
    from ...engine.amqp10.link import Delivery, Link
    from ...engine.amqp10.receiver import Receiver
    from ...engine.amqp10.sender import Sender
    from ...engine.amqp10.transactions import TransactionRecord
    from ...events import DeliveryReceived
    from .._nodes import Node
    from .._record import ConnectionRecord
    from .._store import StoredMessage
    from .._timers import Timer

__all__ = ["Broker10", "Connection10", "OwnNode", "Scheduler", "Tokens"]


class OwnNode(Protocol):
    """A request/response node of the broker's own (``$management``, ``$cbs``: see
    :mod:`.requests`), as a connection reaches it."""

    #: Any client may attach to it, whatever the users file says.
    open_to_all: bool

    def attach(self, conn: Any, link: Link, terminus: Source | Target) -> None: ...

    def request(self, conn: Any, event: DeliveryReceived) -> bool: ...


class Tokens(Protocol):
    """The tokens connections put to ``$cbs`` (:class:`.cbs.Cbs`), as a connection asks
    whether one allows a link."""

    def authorize(self, conn: Any, link: Link, address: str, *, send: bool) -> bool: ...


class Scheduler(Protocol):
    """Azure Service Bus's scheduled messages (:class:`.scheduled.ScheduledMessages`), as
    a connection and the entity management node reach them."""

    def offer(self, node: Node, message: StoredMessage) -> str | None: ...

    def schedule(self, address: str, messages: Iterable[bytes]) -> list[int]: ...

    def cancel(self, address: str, numbers: Iterable[int]) -> None: ...


class Broker10(ConnectionBroker, Protocol):
    """What the 1.0 side asks of the broker."""

    @property
    def cbs(self) -> Tokens: ...

    @property
    def request_nodes(self) -> Mapping[str, OwnNode]:
        """The broker's own request/response nodes, by address."""
        ...

    @property
    def scheduled(self) -> Scheduler:
        """Azure Service Bus's scheduled messages (every 1.0 publish goes through its
        ``offer``)."""
        ...

    def call_at(self, when: float, call: Callable[[], object]) -> Timer: ...


class Connection10(Protocol):
    """What a 1.0 connection's endpoints, the management node, transactions and direct
    reply-to ask of it."""

    broker: Broker10
    engine: Connection
    record: ConnectionRecord
    address: str | None
    identity: str | None
    lost: bool
    #: Its consumers and producers, by link.
    consumers: dict[Any, Any]
    producers: dict[Any, Any]
    #: Transfers received in a transaction, not yet discharged: their node and message.
    held_in_txn: dict[Delivery, tuple[Node, StoredMessage]]
    #: Transactions that can only roll back, and why (a transfer in them was refused).
    doomed_txns: dict[TransactionRecord, str]

    def add_consumer(self, link: Sender, node: Node, source: Source) -> None: ...

    def give_credit(self, link: Receiver, producer: Any = None) -> None: ...

    def revoke(self, link: Link, why: Error) -> None: ...
