"""What an application waits for and what it gets: the high-level API's errors, a pending
operation (:class:`Op`), a delivery that arrived (:class:`Delivery`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast

import amqp_sansio as a
from amqp_sansio import Error, Message, Symbol

if TYPE_CHECKING:
    from amqp_sansio.codec.amqp10 import AMQPValue

__all__ = [
    "AuthenticationError",
    "Annotations",
    "ClientError",
    "ConnectionClosedError",
    "Delivery",
    "DeliveryOwner",
    "Filters",
    "HasEngineTransaction",
    "LinkDetachedError",
    "LinkRefusedError",
    "Op",
    "Outcome",
    "PeerWithoutSASLError",
    "Sendable",
    "TransactionError",
    "TransactionLike",
    "as_message",
    "engine_txn",
]

T = TypeVar("T")

#: The outcome of a delivery (messaging spec 3.4): what a sender's ``send`` returns, what a
#: delivery is settled with.
Outcome = a.Accepted | a.Rejected | a.Released | a.Modified

#: What a ``send`` takes: a :class:`~amqp_sansio.Message`, or any value the codec encodes,
#: sent as the body of a message (bytes as a data section, others as an amqp-value).
Sendable = object

#: A source's filter-set (core spec 3.5.8): filter descriptors by their keys.
Filters = dict[Symbol | str, object]

#: Message annotations (messaging spec 3.2.3), as a :class:`~amqp_sansio.Modified` outcome
#: carries them: values by symbolic (or numeric) keys.
Annotations = dict[Symbol | str | int, object]


class HasEngineTransaction(Protocol):
    """An adapter's transaction: it carries the engine's."""

    @property
    def engine_transaction(self) -> a.Transaction | None: ...


#: What ``transaction=`` takes: an adapter's transaction, or the engine's.
TransactionLike = HasEngineTransaction | a.Transaction


class DeliveryOwner(Protocol):
    """What a :class:`Delivery` asks of the core it came through (a
    :class:`~amqp_sansio.client.amqp10.core.Core` is one), written here so that this module need
    not know the core: the engine the core drives now (a delivery of an engine since
    replaced can no longer be settled), whether the connection is lost, and :meth:`changed`
    after a settlement, so that the adapter writes it."""

    @property
    def engine(self) -> a.Connection: ...

    @property
    def lost(self) -> bool: ...

    def changed(self) -> None:
        """Something changed in the engine: the adapter writes, and wakes its waiters."""


# -- errors ------------------------------------------------------------------------------------


class ClientError(Exception):
    """Base class of the errors the high-level API raises. ``error`` is the AMQP error the
    peer gave (an :class:`~amqp_sansio.Error`), if any. ``event`` is the engine's event that
    caused it, when one did (None for a transport that failed, a connection closed by this
    side): the details a report may want beyond the message, such as the peer's SASL
    description (:class:`~amqp_sansio.events.AuthenticationFailed`), the certificate check
    that failed (:class:`~amqp_sansio.security.tls.TLSFailed`), the protocol the peer
    answered with (:class:`~amqp_sansio.events.UnsupportedProtocol`), or whether a link
    went because its session ended (:class:`~amqp_sansio.events.SessionEnded`) or was
    detached (:class:`~amqp_sansio.events.LinkDetached`)."""

    def __init__(
        self, description: str, error: Error | None = None, *, event: a.Event | None = None
    ) -> None:
        if error is not None:
            description = f"{description}: {error.condition}"
            if error.description:
                description += f" ({error.description})"
        super().__init__(description)
        self.error = error
        self.event = event


class ConnectionClosedError(ClientError, ConnectionError):
    """The connection is closed or lost: closed by the peer (with its ``error``), timed out
    (the peer stopped answering), or the transport failed. ``retryable``: a reconnecting
    connection tries again after it (a lost transport, an idle time-out, the peer's close
    without an error, as in a planned restart, or with ``amqp:connection:forced``)."""

    def __init__(
        self,
        description: str,
        error: Error | None = None,
        *,
        retryable: bool = False,
        event: a.Event | None = None,
    ) -> None:
        super().__init__(description, error, event=event)
        self.retryable = retryable


class AuthenticationError(ConnectionClosedError):
    """SASL authentication failed; the connection has ended."""


class PeerWithoutSASLError(ConnectionClosedError):
    """The server answered our SASL header with the bare AMQP header: it has no SASL layer
    (core spec 2.2, 5.1; the engine's :class:`~amqp_sansio.events.PeerWithoutSASL`). ``connect``
    raises it only where it cannot connect again without SASL by itself: ``sasl=True``,
    credentials in the URL (a server without SASL cannot check them), or
    ``sasl_mechanisms``; otherwise it connects again once without SASL (see
    :doc:`defaults`)."""


class LinkDetachedError(ClientError):
    """The link was detached by the peer (with its ``error``), or refused
    (:class:`LinkRefusedError`)."""


class LinkRefusedError(LinkDetachedError):
    """The peer refused the link: it answered the attach without a terminus (core spec
    2.6.3). Raised as soon as that answer comes, in every adapter and for every kind of link;
    ``error`` is the condition of the peer's detach when it came with the answer (our
    broker's, Proton's), None when the peer sent none (rhea's listener sends only the
    attach)."""


class TransactionError(ClientError):
    """A declare was refused, or the transaction was rolled back without being asked."""


# -- pending operations ------------------------------------------------------------------------


class Op(Generic[T]):
    """Something an application waits for: done once, with a value or an error."""

    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def set(self, value: T) -> None:
        if not self._done:
            self._done, self._value = True, value

    def fail(self, error: BaseException) -> None:
        if not self._done:
            self._done, self._error = True, error


# -- deliveries --------------------------------------------------------------------------------


class Delivery:
    """A message that arrived. ``message`` is the decoded :class:`~amqp_sansio.Message`,
    ``data`` its bytes. Settle it with one outcome: :meth:`accept`, :meth:`reject`,
    :meth:`release` or :meth:`modify` (a second settlement does nothing). A delivery that
    came pre-settled (``settled`` is already true) needs none. ``transaction`` in each puts
    the outcome in that transaction (retirement, core spec 4.4.2)."""

    __slots__ = ("_core", "_engine", "_message", "_received", "engine_delivery", "link")

    def __init__(
        self,
        core: DeliveryOwner,
        link: a.Link,
        delivery: a.Delivery,
        received: a.events.DeliveryReceived,
    ) -> None:
        self._core = core
        self._engine = core.engine
        self.link = link
        self.engine_delivery = delivery
        #: The engine's event: the message as the pieces it came in, joined only if
        #: :attr:`data` is asked for (decoding reads the pieces, the engine's one copy).
        self._received = received
        self._message: Message | None = None

    def __repr__(self) -> str:
        return f"<Delivery {self.engine_delivery.tag!r} settled={self.settled}>"

    @property
    def data(self) -> bytes:
        """The message's encoded bytes (joined from its frames' pieces on first use)."""
        return self._received.data

    @property
    def message(self) -> Message:
        if self._message is None:
            self._message = self._received.message()
        return self._message

    @property
    def settled(self) -> bool:
        """Settled here (by an outcome, or by the sender)."""
        d = self.engine_delivery
        return d.settled or d.remote_settled

    def accept(self, *, transaction: TransactionLike | None = None) -> None:
        self.settle(a.Accepted(), transaction=transaction)

    def reject(
        self, error: Error | None = None, *, transaction: TransactionLike | None = None
    ) -> None:
        self.settle(a.Rejected(error=error), transaction=transaction)

    def release(self, *, transaction: TransactionLike | None = None) -> None:
        self.settle(a.Released(), transaction=transaction)

    def modify(
        self,
        *,
        delivery_failed: bool = True,
        undeliverable_here: bool = False,
        annotations: Annotations | None = None,
        transaction: TransactionLike | None = None,
    ) -> None:
        outcome = a.Modified(
            delivery_failed=delivery_failed,
            undeliverable_here=undeliverable_here,
            message_annotations=annotations,
        )
        self.settle(outcome, transaction=transaction)

    def settle(self, outcome: Outcome, *, transaction: TransactionLike | None = None) -> None:
        """Settle with ``outcome`` (any outcome of core spec 3.4). A delivery that came on a
        connection since lost (and reconnected), or on a link the peer has detached since
        (perhaps in the same bytes as the delivery), can no longer be settled (core spec
        2.6.6): this does nothing, :attr:`settled` stays false, and the peer delivers the
        message again."""
        if self.settled or self._engine is not self._core.engine or self._core.lost:
            return
        if self.link.state is not a.LinkState.ATTACHED:
            return
        txn = None if transaction is None else engine_txn(transaction)
        self.link.settle(self.engine_delivery, outcome, transaction=txn)
        self._core.changed()


def engine_txn(transaction: TransactionLike | None) -> a.Transaction | None:
    """An adapter's transaction object carries the engine's as ``engine_transaction``."""
    if transaction is None or isinstance(transaction, a.Transaction):
        return transaction
    return transaction.engine_transaction


def as_message(message: Sendable) -> Message:
    """What to send: a :class:`~amqp_sansio.Message` as it is, any other value as the body
    of one (bytes as a data section, others as an amqp-value). It goes to the engine as the
    message, not as its encoding: the engine encodes it into its transfer frames, a large
    data section's bytes as they are (see :meth:`amqp_sansio.Sender.send`), so the only
    copy of the body before the socket is the one into the bytes the adapter writes."""
    if isinstance(message, Message):
        return message
    # Any value the codec takes (see amqp_sansio.codec.amqp10.encode: ``object``, for invariance).
    return Message(body=cast("AMQPValue", message))
