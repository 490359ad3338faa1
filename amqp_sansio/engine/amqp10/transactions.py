"""Local transactions in the engine (core spec part 4), on both sides.

The **controller** (4.1) declares and discharges transactions over a control link, a
:class:`Controller` made by :meth:`Session.attach_controller`, and associates work with them:
posting (:meth:`Sender.send` with ``transaction=``), retirement (:meth:`Link.settle` and
:meth:`Link.update` with ``transaction=``) and acquisition (:meth:`Receiver.flow` with
``transaction=``). Each :class:`Transaction` moves through :data:`TRANSACTION_TRANSITIONS`.

The **transactional resource** recognises a peer's attach to a
:class:`~amqp_sansio.definitions.amqp10.transactions.Coordinator` target: the link is a
:class:`CoordinatorLink`, whose
transfers the engine decodes into :class:`DeclareRequested` and :class:`DischargeRequested`
events. The engine keeps, per connection, a :class:`TransactionRecord` for each live
transaction, with the work the controller associated with it, so that the application can
apply it, or discard it, in one go when the transaction is discharged.

The rule for outcomes (both sides): an outcome carried in a
:class:`~amqp_sansio.definitions.amqp10.transactions.TransactionalState` is provisional while its
transaction is live; it
takes effect only when the transaction commits, and is void when it is rolled back.
``Delivery.transaction`` says which transaction a delivery's work belongs to.

This module holds the logic; links call into it through :data:`HOOKS`, the
:class:`~.link.TransactionHooks` that each session hands down to its links (this module
builds on links, so they never import it; it reaches a link's session and connection
through :class:`~.link.LinkSession`, and ``session`` builds on it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any, cast

import attrs

from ...codec.amqp10.types import AMQPValue, Described, Symbol
from ...definitions.amqp10.message import Message
from ...definitions.amqp10.messaging import (
    Accepted,
    AmqpValue,
    DeliveryState,
    Modified,
    Rejected,
    Released,
    Source,
    Target,
)
from ...definitions.amqp10.performatives import Error, ReceiverSettleMode, SenderSettleMode
from ...definitions.amqp10.transactions import (
    Coordinator,
    Declare,
    Declared,
    Discharge,
    TransactionalState,
    TxnCapability,
)
from ...errors import DecodeError, LocalProtocolError
from ..contract import Event
from .link import Delivery, Link, LinkSession, TransactionHooks, TransactionWork
from .peer_error import _PeerError
from .receiver import Receiver
from .sender import Sender
from .states import (
    TRANSACTION_TRANSITIONS,
    LinkState,
    TransactionInput,
    TransactionState,
)

__all__ = [
    "Controller",
    "CoordinatorLink",
    "DeclareRequest",
    "DeclareRequested",
    "DischargeRequest",
    "DischargeRequested",
    "Transaction",
    "TransactionDeclareFailed",
    "TransactionDeclared",
    "TransactionDischarged",
    "TransactionRecord",
    "TransactionRolledBack",
    "TransactionWorkRefused",
]

#: The key of a flow's properties that names the transaction of acquisitions (4.4.3).
TXN_ID = Symbol("txn-id")
UNKNOWN_ID = Symbol("amqp:transaction:unknown-id")
ROLLBACK = Symbol("amqp:transaction:rollback")
TIMEOUT = Symbol("amqp:transaction:timeout")
_ACCEPTED_LIST = Symbol("amqp:accepted:list")
_REJECTED_LIST = Symbol("amqp:rejected:list")
#: The terminal outcomes of part 3 (3.4), which a transactional state may carry.
_T = TransactionState
_TI = TransactionInput
_OUTCOMES = (Accepted, Rejected, Released, Modified)


def _move(txn: TransactionWork, what: TransactionInput) -> None:
    new = TRANSACTION_TRANSITIONS.get((txn.state, what))
    if new is None:  # pragma: no cover - the callers check the state first
        raise LocalProtocolError(f"cannot {what.value} a transaction in state {txn.state}")
    txn.state = new


class Transaction(TransactionWork):
    """A transaction this side controls (core spec 4.2), made by
    :meth:`Controller.declare`. ``id`` is the txn-id the coordinator chose, once declared.

    ``posted``, ``retired`` and ``acquired`` list the work associated with it; their
    outcomes are final only once :class:`TransactionDischarged` says ``committed``."""

    def __init__(self, controller: Controller, global_id: AMQPValue) -> None:
        super().__init__()
        self.controller = controller
        self.global_id = global_id
        self.id: bytes | None = None
        #: The ``fail`` flag of the discharge, once sent.
        self.fail: bool | None = None


class TransactionRecord(TransactionWork):
    """A transaction this side coordinates (the transactional resource, core spec 4.4):
    made when the application answers a :class:`DeclareRequest`.

    ``posted``: the deliveries the controller posted in it (their messages must not become
    available before a commit); ``retired``: ``(delivery, outcome)`` for the deliveries we
    sent that the controller retired in it (the outcome applies only on commit);
    ``acquired``: the deliveries we sent on links the controller's flow put in it."""

    def __init__(self, link: CoordinatorLink, txn_id: bytes, global_id: AMQPValue) -> None:
        super().__init__()
        self.link = link
        self.id: bytes = txn_id
        self.global_id = global_id
        self.state = _T.ACTIVE
        self._acquiring: set[Sender] = set()

    def add_acquiring(self, sender: Sender) -> None:
        """A receiver's flow put our sends on ``sender`` in this transaction (4.4.3)."""
        sender.acquire_in(self)
        self._acquiring.add(sender)

    def end_acquisitions(self) -> None:
        """The transaction is over: its links' txn-id is cleared (4.4.3)."""
        for sender in self._acquiring:
            if sender.acquiring_in is self:
                sender.acquire_in(None)
        self._acquiring.clear()


# -- events ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class TransactionDeclared(Event):
    """The coordinator declared the transaction: ``transaction.id`` is set and work may be
    associated with it."""

    transaction: Transaction


@attrs.frozen(kw_only=True)
class TransactionDeclareFailed(Event):
    """The declare was refused (``error``: the coordinator's transaction-error), or the
    control link went before the answer. The transaction is FAILED."""

    transaction: Transaction
    error: Error | None


@attrs.frozen(kw_only=True)
class TransactionDischarged(Event):
    """The coordinator accepted the discharge: with ``committed`` the work took effect (its
    outcomes are final); otherwise it was rolled back as asked."""

    transaction: Transaction
    committed: bool


@attrs.frozen(kw_only=True)
class TransactionRolledBack(Event):
    """A transaction was rolled back without being asked to: the discharge was rejected
    (``error``, e.g. ``amqp:transaction:timeout``), or its control link was detached (with
    its error, if it carried one) or its session ended. Its work is void. On the resource's
    side ``transaction`` is the :class:`TransactionRecord`, whose work the application
    discards."""

    transaction: Transaction | TransactionRecord
    error: Error | None


@attrs.frozen(kw_only=True)
class DeclareRequested(Event):
    """A controller asks to declare a transaction: answer with ``request.declare()`` or
    ``request.reject()``."""

    link: CoordinatorLink
    request: DeclareRequest


@attrs.frozen(kw_only=True)
class DischargeRequested(Event):
    """A controller asks to discharge ``request.transaction``, committing it unless
    ``request.fail``: apply (or discard) its work, then answer with ``request.accept()``, or
    refuse a commit with ``request.reject()``."""

    link: CoordinatorLink
    request: DischargeRequest


@attrs.frozen(kw_only=True)
class TransactionWorkRefused(Event):
    """The engine refused, by itself, a delivery naming a transaction that is not live (a
    posting, a discharge: rejected with ``amqp:transaction:unknown-id``, or the error a
    transaction was rolled back with), or a malformed request on a coordinator link (rejected
    with ``amqp:decode-error``). It is not reported otherwise."""

    link: Link
    delivery: Delivery
    error: Error


# -- per-connection bookkeeping -------------------------------------------------------------


class _Book:
    """The transactions of one connection, by txn-id (txn-ids are connection-scoped)."""

    def __init__(self) -> None:
        #: Resource side: live transactions.
        self.records: dict[bytes, TransactionRecord] = {}
        #: Resource side: transactions the application rolled back while live, with the
        #: error a discharge of them is refused with.
        self.ended: dict[bytes, Error] = {}
        #: Controller side: live transactions.
        self.transactions: dict[bytes, Transaction] = {}
        self.ids = itertools.count(1)


def _book(link: Link) -> _Book:
    return cast(_Book, link.session.connection.transactions_book(_Book))


def _report(link: Link, event: Event) -> None:
    link.session.connection.report(event)


def _error(condition: Symbol, description: str) -> Error:
    return Error(condition=condition, description=description)


def _encode_body(value: Any) -> bytes:
    return Message(body=AmqpValue(value)).encode()


# -- the controller -------------------------------------------------------------------------


def attach_controller(
    session: LinkSession,
    name: str,
    *,
    capabilities: Iterable[Symbol],
    properties: dict[Any, Any] | None,
) -> Controller:
    link = Controller(
        session,
        name,
        # The controller lets the coordinator reject (4.2).
        source=Source(outcomes=(_ACCEPTED_LIST, _REJECTED_LIST)),
        target=Coordinator(capabilities=tuple(capabilities) or None),
        snd_settle_mode=SenderSettleMode.UNSETTLED,
        rcv_settle_mode=ReceiverSettleMode.FIRST,
        properties=properties,
        offered_capabilities=None,
        desired_capabilities=None,
        max_message_size=None,
    )
    return session.start_link(link)


class Controller(Sender):
    """The controller's end of a control link to a transaction coordinator (core spec 4.2),
    made by :meth:`Session.attach_controller`. Its deliveries are declares and discharges:
    :meth:`send` is refused."""

    _controller = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The transactions declared on this link that are not yet over.
        self.transactions: list[Transaction] = []
        self._requests: dict[Delivery, Transaction] = {}

    @property
    def capabilities(self) -> tuple[Symbol, ...]:
        """The coordinator's capabilities (from its attach): check that they meet yours."""
        target = None if self.remote is None else self.remote.target
        return tuple(target.capabilities or ()) if isinstance(target, Coordinator) else ()

    def send(self, *args: object, **kwargs: object) -> Delivery:
        raise LocalProtocolError("a control link carries declares and discharges only (4.1)")

    def declare(self, *, global_id: AMQPValue = None) -> Transaction:
        """Ask the coordinator for a new transaction; :class:`TransactionDeclared` (or
        :class:`TransactionDeclareFailed`) follows. Takes a unit of credit, as a send does.
        ``global_id`` needs a coordinator with distributed transactions (4.5.2)."""
        if global_id is not None and TxnCapability.DISTRIBUTED_TRANSACTIONS not in (
            self.capabilities
        ):
            raise LocalProtocolError("the coordinator does not offer distributed transactions")
        data = _encode_body(Declare(global_id=global_id))
        transaction = Transaction(self, global_id)
        delivery = Sender.send(self, data, settled=False)
        self._requests[delivery] = transaction
        self.transactions.append(transaction)
        return transaction

    def discharge(self, transaction: Transaction, *, fail: bool = False) -> None:
        """End ``transaction``: commit it, or roll it back with ``fail=True`` (4.3).
        :class:`TransactionDischarged` (or :class:`TransactionRolledBack`) follows."""
        if transaction.controller is not self:
            raise LocalProtocolError("that transaction was declared on another control link")
        if transaction.state is not _T.ACTIVE:
            raise LocalProtocolError(f"the transaction is {transaction.state.value}, not ACTIVE")
        assert transaction.id is not None
        data = _encode_body(Discharge(txn_id=transaction.id, fail=bool(fail)))
        delivery = Sender.send(self, data, settled=False)
        self._requests[delivery] = transaction
        transaction.fail = bool(fail)
        _move(transaction, _TI.DISCHARGE)

    # -- engine hooks -------------------------------------------------------------------------

    def receive_outcome(self, delivery: Delivery, state: DeliveryState | None) -> None:
        """A disposition for one of our requests."""
        transaction = self._requests.get(delivery)
        if transaction is None or type(state) not in _TERMINAL:
            return  # not ours, or not yet an outcome (received, a bare settlement)
        del self._requests[delivery]
        error = state.error if type(state) is Rejected else None
        if transaction.state is _T.DECLARING:
            if type(state) is Declared:
                transaction.id = state.txn_id
                _move(transaction, _TI.DECLARED)
                _book(self).transactions[state.txn_id] = transaction
                _report(self, TransactionDeclared(transaction=transaction))
                return
            transaction.error = error
            _move(transaction, _TI.DECLARE_REFUSED)
            self.transactions.remove(transaction)
            _report(self, TransactionDeclareFailed(transaction=transaction, error=error))
            return
        # DISCHARGING: accepted is the discharge done as asked; anything else is a rollback
        # the coordinator chose (4.4.2).
        if type(state) is Accepted:
            committed = not transaction.fail
            self._end(transaction, _TI.COMMITTED if committed else _TI.ROLLED_BACK)
            _report(self, TransactionDischarged(transaction=transaction, committed=committed))
            return
        if error is None:
            error = _error(ROLLBACK, f"the coordinator answered the discharge with {state!r}")
        transaction.error = error
        self._end(transaction, _TI.ROLLED_BACK)
        _report(self, TransactionRolledBack(transaction=transaction, error=error))

    def _end(self, transaction: Transaction, what: TransactionInput) -> None:
        _move(transaction, what)
        self.transactions.remove(transaction)
        assert transaction.id is not None  # declared: DECLARING ends elsewhere
        _book(self).transactions.pop(transaction.id, None)
        if transaction.state is _T.ROLLED_BACK:
            # Retired deliveries are live again, in the state they had before (4.4.2).
            for delivery, previous in transaction.states_before():
                if not delivery.settled:
                    delivery.local_state = previous

    def lose_transactions(self, error: Error | None) -> None:
        """The control link is gone: its transactions are rolled back (4.1)."""
        self._requests.clear()
        for transaction in list(self.transactions):
            transaction.error = error
            if transaction.state is _T.DECLARING:
                _move(transaction, _TI.LINK_LOST)
                self.transactions.remove(transaction)
                _report(self, TransactionDeclareFailed(transaction=transaction, error=error))
            else:
                self._end(transaction, _TI.LINK_LOST)
                _report(self, TransactionRolledBack(transaction=transaction, error=error))


#: The outcomes that answer a declare or a discharge.
_TERMINAL = (*_OUTCOMES, Declared)


# -- the coordinator (transactional resource) --------------------------------------------------

#: What a coordinator offers unless told otherwise: the engine keeps transactions per
#: connection, any number per session.
DEFAULT_CAPABILITIES = (
    TxnCapability.LOCAL_TRANSACTIONS,
    TxnCapability.MULTI_TXNS_PER_SSN,
    TxnCapability.MULTI_SSNS_PER_TXN,
)


class CoordinatorLink(Receiver):
    """The resource's end of a control link: a peer's attach to a
    :class:`~amqp_sansio.definitions.amqp10.transactions.Coordinator` target (core spec 4.2). Accept
    it with :meth:`attach`
    (or refuse it with :meth:`refuse`); the engine then keeps its credit topped up to
    ``credit_window`` and turns what arrives into :class:`DeclareRequested` and
    :class:`DischargeRequested` events. Links to a coordinator cannot be resumed."""

    _coordinator = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: How much credit the engine keeps granting (topped up when half is used).
        self.credit_window = 100
        #: The live transactions declared on this link.
        self.records: list[TransactionRecord] = []

    @property
    def streaming(self) -> bool:
        """Requests are decoded whole: a coordinator link never streams."""
        return False

    @streaming.setter
    def streaming(self, value: bool) -> None:
        if value:
            raise LocalProtocolError("a coordinator link does not stream")

    def attach(
        self,
        *,
        source: Source | Described | None = None,
        target: Target | Coordinator | Described | None = None,
        capabilities: Iterable[Symbol] = DEFAULT_CAPABILITIES,
    ) -> None:
        """Accept the controller's link, saying which ``capabilities`` this coordinator
        has (4.5.1), and grant it credit."""
        if target is None:
            target = Coordinator(capabilities=tuple(capabilities) or None)
        super().attach(source=source, target=target)
        self.flow(self.credit_window)

    def roll_back(self, record: TransactionRecord, error: Error | None = None) -> None:
        """Roll back a live transaction now, e.g. because it took too long: its work is
        void; work naming it is refused, and so is its discharge, with ``error``
        (``amqp:transaction:timeout`` by default, 4.5.8)."""
        if record.link is not self or record.state is not _T.ACTIVE:
            raise LocalProtocolError("only an ACTIVE transaction of this link can be rolled back")
        if error is None:
            error = _error(TIMEOUT, "the transaction took too long")
        book = _book(self)
        del book.records[record.id]
        book.ended[record.id] = error
        record.error = error
        _finish(record, _TI.ROLLED_BACK)

    # -- engine hooks -------------------------------------------------------------------------

    def receive_request(self, delivery: Delivery, data: bytes) -> None:
        """A whole declare or discharge arrived (4.2, 4.3)."""
        try:
            body = Message.decode(data).body
        except DecodeError:
            body = None
        value = body.value if type(body) is AmqpValue else None
        if type(value) is Declare:
            request: Any = DeclareRequest(self, delivery, value.global_id)
            _report(self, DeclareRequested(link=self, request=request))
        elif type(value) is Discharge:
            book = _book(self)
            record = book.records.get(value.txn_id)
            if record is None:
                error = book.ended.pop(value.txn_id, None) or _error(
                    UNKNOWN_ID, f"no live transaction {value.txn_id!r}"
                )
                self._refuse(delivery, error)
            elif any(not d.complete for d in record.posted):
                # 4.4.1: a partial delivery posted: the control link goes, and with it the
                # transaction.
                book.records.pop(record.id)
                record.error = _error(ROLLBACK, "discharge with a partial delivery posted")
                _finish(record, _TI.ROLLED_BACK)
                _report(self, TransactionRolledBack(transaction=record, error=record.error))
                raise _PeerError(
                    "amqp:transaction:rollback",
                    "discharge with a partial delivery posted (4.4.1)",
                    scope="link",
                    target=self,
                )
            else:
                del book.records[record.id]
                _move(record, _TI.DISCHARGE)
                request = DischargeRequest(self, delivery, record, bool(value.fail))
                _report(self, DischargeRequested(link=self, request=request))
        else:
            self._refuse(
                delivery,
                _error(Symbol("amqp:decode-error"), "not a declare or discharge in an amqp-value"),
            )
        if self.state is LinkState.ATTACHED and self.link_credit * 2 < self.credit_window:
            self.flow(self.credit_window)

    def _refuse(self, delivery: Delivery, error: Error) -> None:
        _report(self, TransactionWorkRefused(link=self, delivery=delivery, error=error))
        self.reject_or_detach(delivery, error)

    def reject_or_detach(self, delivery: Delivery, error: Error) -> None:
        """Reject with the error if the controller's source allows it, else detach with it
        (4.2, 4.3)."""
        source = None if self.remote is None else self.remote.source
        outcomes = getattr(source, "outcomes", None)
        if not outcomes or _REJECTED_LIST in outcomes:
            self.settle(delivery, Rejected(error=error))
        else:
            self.detach(error=error)

    def lose_transactions(self, error: Error | None) -> None:
        """The control link is gone: its live transactions are rolled back (4.1)."""
        book = _book(self)
        for record in list(self.records):
            book.records.pop(record.id, None)
            record.error = error
            _finish(record, _TI.LINK_LOST)
            _report(self, TransactionRolledBack(transaction=record, error=error))


def _finish(record: TransactionRecord, what: TransactionInput) -> None:
    """A transaction is over at the resource: its links' txn-id is cleared (4.4.3); rolled
    back, its retired deliveries are live again, in their earlier state (4.4.2)."""
    _move(record, what)
    record.link.records.remove(record)
    record.end_acquisitions()
    if record.state is _T.ROLLED_BACK:
        for delivery, previous in record.states_before():
            delivery.remote_state = previous


class _Request:
    def __init__(self, link: CoordinatorLink, delivery: Delivery) -> None:
        self.link = link
        self.delivery = delivery
        self.answered = False

    def _check(self) -> None:
        if self.answered:
            raise LocalProtocolError("the request has been answered")
        if self.link.state is not LinkState.ATTACHED:
            raise LocalProtocolError("the coordinator link is not attached")
        self.link.session.check_can_send()


class DeclareRequest(_Request):
    """A controller's declare (4.2), handed over by :class:`DeclareRequested`."""

    def __init__(self, link: CoordinatorLink, delivery: Delivery, global_id: AMQPValue) -> None:
        super().__init__(link, delivery)
        #: The global transaction the controller names, if any (distributed transactions).
        self.global_id = global_id

    def declare(self, txn_id: bytes | None = None) -> TransactionRecord:
        """Declare the transaction, under ``txn_id`` (at most 32 bytes, not in use on this
        connection), or one the engine chooses; answer the controller with ``declared``."""
        self._check()
        book = _book(self.link)
        if txn_id is None:
            txn_id = next(book.ids).to_bytes(4, "big")
            while txn_id in book.records:  # pragma: no cover - an application's own id
                txn_id = next(book.ids).to_bytes(4, "big")
        elif not isinstance(txn_id, bytes) or len(txn_id) > 32:
            raise LocalProtocolError("a txn-id is at most 32 bytes (4.5.4)")
        elif txn_id in book.records:
            raise LocalProtocolError(f"txn-id {txn_id!r} is in use")
        self.link.settle(self.delivery, Declared(txn_id=txn_id))
        self.answered = True
        record = TransactionRecord(self.link, txn_id, self.global_id)
        book.records[txn_id] = record
        book.ended.pop(txn_id, None)
        self.link.records.append(record)
        return record

    def reject(self, error: Error | None = None) -> None:
        """Refuse the declare with a transaction-error (``amqp:transaction:rollback`` by
        default): rejected, or, if the controller's source cannot take a rejection, the
        control link detached with it (4.2)."""
        self._check()
        self.answered = True
        self.link.reject_or_detach(
            self.delivery, error or _error(ROLLBACK, "the transaction cannot be declared")
        )


class DischargeRequest(_Request):
    """A controller's discharge (4.3) of ``transaction``, handed over by
    :class:`DischargeRequested`: ``fail`` asks for a rollback."""

    def __init__(
        self, link: CoordinatorLink, delivery: Delivery, record: TransactionRecord, fail: bool
    ) -> None:
        super().__init__(link, delivery)
        self.transaction = record
        self.fail = fail

    def accept(self) -> None:
        """Done: the work was applied (a commit) or discarded (``fail``). For a commit, every
        delivery the controller posted unsettled must have had its outcome sent first
        (settle or update it: the engine puts the outcome in the transaction), 4.4.1."""
        self._check()
        record = self.transaction
        if not self.fail:
            for delivery in record.posted:
                state = delivery.local_state
                if not delivery.remote_settled and (
                    type(state) is not TransactionalState or state.outcome is None
                ):
                    raise LocalProtocolError(
                        f"posted delivery {delivery.tag!r} has no outcome: settle or update it "
                        "before the commit (4.4.1)"
                    )
        self.link.settle(self.delivery, Accepted())
        self.answered = True
        _finish(record, _TI.ROLLED_BACK if self.fail else _TI.COMMITTED)

    def reject(self, error: Error | None = None) -> None:
        """Refuse the commit (``amqp:transaction:rollback`` by default): the transaction is
        rolled back (4.3). A rollback cannot be refused."""
        if self.fail:
            raise LocalProtocolError("a coordinator must always be able to roll back (4.3)")
        self._check()
        self.answered = True
        record = self.transaction
        record.error = error or _error(ROLLBACK, "the transaction cannot be committed")
        self.link.reject_or_detach(self.delivery, record.error)
        if record.state is _T.DISCHARGING:  # a detach instead of a rejection has ended it
            _finish(record, _TI.ROLLED_BACK)


# -- engine hooks for transactional work ------------------------------------------------------


def posting(sender: Sender, transaction: Any, state: Any) -> tuple[TransactionWork | None, Any]:
    """``Sender.send``: the transaction a new delivery belongs to, and its transfer state.
    Raises before anything changes."""
    if transaction is None:
        record = sender.acquiring_in
        if record is None or record.state is not _T.ACTIVE:
            sender.acquire_in(None)
            return None, state
        if state is not None:
            raise LocalProtocolError(
                "the link acquires in a transaction (4.4.3): the engine sets its state"
            )
        assert record.id is not None  # (a coordinator's record has its id from the start)
        return record, TransactionalState(txn_id=record.id)
    if state is not None:
        raise LocalProtocolError("give a transaction or a state, not both")
    _check_work(sender, transaction)
    return transaction, TransactionalState(txn_id=transaction.id)


def posted(owner: TransactionWork, delivery: Delivery) -> None:
    delivery.transaction = owner
    if type(owner) is Transaction:
        owner.add_posted(delivery)
    else:
        owner.acquired.append(delivery)


def _check_work(link: Link, transaction: Any) -> None:
    if not isinstance(transaction, Transaction):
        raise LocalProtocolError(f"{transaction!r} is not a Transaction")
    if transaction.state is not _T.ACTIVE:
        raise LocalProtocolError(f"the transaction is {transaction.state.value}, not ACTIVE")
    if transaction.controller.session.connection is not link.session.connection:
        raise LocalProtocolError("the transaction belongs to another connection")
    if link is transaction.controller:  # pragma: no cover - Controller.send refuses first
        raise LocalProtocolError("no transactional work on the control link (4.1)")


def retiring(link: Link, delivery: Delivery, state: Any, transaction: Any) -> Any:
    """``Link.update`` and ``Link.settle``: an outcome given ``transaction``, or for a
    delivery that belongs to a live transaction, goes in a transactional state (4.4.2,
    4.4.4.3). Returns the state to send; raises before anything changes."""
    owner = delivery.transaction
    if transaction is None:
        if owner is None or not owner.live or state is None or type(state) is TransactionalState:
            return state
        transaction = owner
    else:
        _check_work(link, transaction)
        if state is None or type(state) is TransactionalState:
            raise LocalProtocolError("transactional retirement needs an outcome (4.4.2)")
        if owner is not None and owner is not transaction and owner.live:
            raise LocalProtocolError(
                "the delivery belongs to another transaction that is not discharged (4.4.2)"
            )
    if type(state) not in _OUTCOMES:
        raise LocalProtocolError(f"{state!r} is not an outcome")
    if type(transaction) is Transaction and link.role is Receiver.role:
        transaction.add_retired(delivery, state, delivery.local_state)
        delivery.transaction = transaction
    return TransactionalState(txn_id=transaction.id, outcome=state)


def acquiring(receiver: Receiver, transaction: Any) -> dict[Any, Any]:
    """``Receiver.flow``: the flow's properties that put acquisitions in ``transaction``
    (4.4.3)."""
    _check_work(receiver, transaction)
    return {TXN_ID: transaction.id}


def first_transfer(session: LinkSession, link: Link, delivery: Delivery, transfer: Any) -> None:
    """``Session.receive_transfer``, at a delivery's first transfer: a request on a coordinator
    link, or a transfer carrying a transactional state."""
    if isinstance(link, CoordinatorLink):
        if transfer.settled:
            raise _PeerError(
                "amqp:illegal-state",
                "a declare or discharge sent settled (4.2)",
                scope="link",
                target=link,
            )
        return
    state = transfer.state
    if type(state) is not TransactionalState:
        return
    book = _book(link)
    record = book.records.get(state.txn_id)
    if record is not None:  # the controller posts (4.4.1)
        delivery.transaction = record
        record.add_posted(delivery)
        return
    transaction = book.transactions.get(state.txn_id)
    if transaction is not None:  # the resource sends what we acquired in it (4.4.3)
        delivery.transaction = transaction
        transaction.acquired.append(delivery)
        return
    error = book.ended.get(state.txn_id) or _error(
        UNKNOWN_ID, f"no live transaction {state.txn_id!r}"
    )
    # Refused: the rest of it is set aside, and it is rejected once whole.
    delivery.ignore()
    delivery.local_state = Rejected(error=error)
    _report(link, TransactionWorkRefused(link=link, delivery=delivery, error=error))


def disposition(delivery: Delivery, state: TransactionalState) -> None:
    """``Session.receive_disposition``: a receiver's transactional state for a delivery we
    sent. At the resource it retires the delivery in the named transaction (4.4.2); at the
    controller it is the resource's provisional outcome of our posting (4.4.1)."""
    owner = delivery.transaction
    if type(owner) is Transaction:
        return
    link = delivery.link
    record = _book(link).records.get(state.txn_id)
    if record is None:
        raise _PeerError(
            "amqp:transaction:unknown-id",
            f"a disposition names no live transaction {state.txn_id!r}",
            scope="link",
            target=link,
        )
    if owner is not None and owner is not record and owner.live:
        assert type(owner) is TransactionRecord
        raise _PeerError(
            "amqp:transaction:rollback",
            "a delivery retired in another transaction than its own (4.4.2)",
            scope="link",
            target=owner.link,
        )
    record.add_retired(delivery, state.outcome, delivery.remote_state)
    delivery.transaction = record


def flow(link: Sender, properties: dict[Any, Any]) -> None:
    """``Session.receive_flow``: a txn-id in a receiver's flow puts our sends on that link in
    that transaction (4.4.3), until it is discharged."""
    txn_id = properties.get(TXN_ID)
    if txn_id is None:
        return
    record = _book(link).records.get(txn_id)
    if record is None:
        raise _PeerError(
            "amqp:transaction:unknown-id",
            f"a flow names no live transaction {txn_id!r}",
            scope="link",
            target=link,
        )
    record.add_acquiring(link)


class _Hooks:
    """The engine's calls into transactions (:class:`~.link.TransactionHooks`): a link's
    calls name it as a :class:`Link`; the ones only one end makes check which end it is."""

    posted = staticmethod(posted)
    retiring = staticmethod(retiring)
    first_transfer = staticmethod(first_transfer)
    disposition = staticmethod(disposition)

    @staticmethod
    def posting(
        sender: Link, transaction: TransactionWork | None, state: Any
    ) -> tuple[TransactionWork | None, Any]:
        assert isinstance(sender, Sender)
        return posting(sender, transaction, state)

    @staticmethod
    def acquiring(receiver: Link, transaction: TransactionWork) -> dict[Any, Any]:
        assert isinstance(receiver, Receiver)
        return acquiring(receiver, transaction)

    @staticmethod
    def flow(link: Link, properties: dict[Any, Any]) -> None:
        assert isinstance(link, Sender)
        flow(link, properties)

    @staticmethod
    def request(link: Link, delivery: Delivery, data: bytes) -> None:
        assert isinstance(link, CoordinatorLink)
        link.receive_request(delivery, data)

    @staticmethod
    def outcome(link: Link, delivery: Delivery, state: Any) -> None:
        assert isinstance(link, Controller)
        link.receive_outcome(delivery, state)


#: What a :class:`~amqp_sansio.Session` hands its links.
HOOKS: TransactionHooks = _Hooks()
