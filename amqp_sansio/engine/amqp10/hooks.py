"""The interface through which links and sessions reach transactions (core spec part 4),
which build on them: the connection hands an implementation down, so nothing here imports its
caller."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...codec.amqp10.types import Symbol
    from ...definitions.amqp10.performatives import Transfer
    from ...definitions.amqp10.transactions import TransactionalState
    from .delivery import Delivery
    from .link import Link
    from .receiver import Receiver
    from .sender import Sender
    from .session import Session
    from .transactions import Controller, _Txn


class TransactionHooks(Protocol):
    """What links and sessions ask of transactions (core spec part 4). The connection hands
    its implementation (``transactions.HOOKS``) down to its sessions, so that ``session``,
    ``link``, ``sender`` and ``receiver`` never import ``transactions``, which builds on them
    (its :class:`Controller` is a :class:`Sender`, its coordinator link a :class:`Receiver`)."""

    @property
    def coordinator_link(self) -> type[Receiver]:
        """The class of a link the peer attaches to a coordinator (4.2)."""

    def attach_controller(
        self,
        session: Session,
        name: str,
        *,
        capabilities: Iterable[Symbol],
        properties: dict[Any, Any] | None,
    ) -> Controller:
        """Attach a control link (4.1)."""

    def posting(self, sender: Sender, transaction: Any, state: Any) -> tuple[_Txn | None, Any]:
        """A send's transaction (4.4.1): the transaction that owns it, and its state."""

    def posted(self, owner: _Txn, delivery: Delivery) -> None:
        """A transactional send went out."""

    def retiring(self, link: Link, delivery: Delivery, state: Any, transaction: Any) -> Any:
        """A disposition's state, in its transaction when it has one (4.4.2)."""

    def acquiring(self, receiver: Receiver, transaction: Any) -> dict[Any, Any]:
        """The flow properties that acquire credit in a transaction (4.4.3)."""

    def flow(self, link: Sender, properties: dict[Any, Any]) -> None:
        """A flow's properties on a sending link (transactional acquisition)."""

    def first_transfer(
        self, session: Session, link: Receiver, delivery: Delivery, transfer: Transfer
    ) -> None:
        """A delivery's first transfer, when it has a state or is on a coordinator link."""

    def request(self, link: Receiver, delivery: Delivery, data: bytes) -> None:
        """A whole delivery on a coordinator link: a declare or a discharge (4.2)."""

    def disposition(self, delivery: Delivery, state: TransactionalState) -> None:
        """The peer's transactional state for one of our deliveries (4.4.2)."""

    def outcome(self, link: Link, delivery: Delivery, state: Any) -> None:
        """A declare's or discharge's outcome on a control link (4.2)."""
