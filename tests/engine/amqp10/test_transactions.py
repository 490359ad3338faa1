"""Local transactions (core spec part 4), both sides, two engines wired in memory.

The client is the transaction controller; the server is the transactional resource, with a
small application (:class:`Resource`) that keeps queues and applies a transaction's work, or
discards it, when the controller discharges it. Every scenario is pumped in random chunks and
whole.
"""

from __future__ import annotations

from collections import defaultdict, deque
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.engine_pair import Pair, of

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.engine.amqp10
from amqp_sansio.definitions.amqp10 import messaging

T = a.engine.amqp10.states.TransactionState
CHUNKS = [None, 1 << 30]  # random chunk sizes, and whole


def body(data: bytes) -> Any:
    value = a.Message.decode(data).body
    assert isinstance(value, a.AmqpValue | a.Data)
    return value.value


class Resource:
    """The server's application: a broker with queues, acting as transactional resource.

    Messages posted outside a transaction are visible at once; posted in one, they wait in
    the record and become visible on commit. Messages it sends wait in ``unacked`` until an
    outcome is applied: at once outside a transaction, on commit inside one; on rollback they
    stay, unsettled, live again."""

    def __init__(self, conn: a.Connection) -> None:
        self.conn = conn
        self.queues: dict[str, list[Any]] = defaultdict(list)
        self.data: dict[a.Delivery, bytes] = {}
        self.unacked: dict[a.Delivery, Any] = {}
        self.outgoing: dict[str, deque[Any]] = defaultdict(deque)
        self.coordinators: list[a.engine.amqp10.transactions.CoordinatorLink] = []
        self.senders: dict[str, a.Sender] = {}
        self.receivers: dict[str, a.Receiver] = {}
        self.declare_with: Any = None  # a txn-id to declare with, or an Error to refuse with
        self.commit_refusal: a.Error | None = None
        self.committed: list[a.engine.amqp10.transactions.TransactionRecord] = []
        self.rolled_back: list[a.engine.amqp10.transactions.TransactionRecord] = []
        self.applied: list[tuple[a.Delivery, Any]] = []
        self.refused: list[a.engine.amqp10.transactions.TransactionWorkRefused] = []
        self.events: list[a.Event] = []

    def handle(self, events: list[a.Event]) -> None:
        for event in events:
            self.events.append(event)
            self.on(event)

    def on(self, event: a.Event) -> None:
        if (
            isinstance(event, a.events.SessionBegun)
            and event.session.state is a.SessionState.BEGIN_RCVD
        ):
            event.session.begin()
        elif isinstance(event, a.events.LinkAttached):
            self.on_attach(event.link)
        elif isinstance(event, a.events.CreditChanged) and isinstance(event.link, a.Sender):
            self.pump(event.link)
        elif isinstance(event, a.events.DeliveryReceived):
            self.on_message(event)
        elif isinstance(event, a.events.DeliveryUpdated):
            delivery = event.delivery
            if delivery in self.unacked and delivery.transaction is None and event.settled:
                self.applied.append((delivery, event.state))
                del self.unacked[delivery]
        elif isinstance(event, a.engine.amqp10.transactions.DeclareRequested):
            if isinstance(self.declare_with, a.Error):
                event.request.reject(self.declare_with)
            else:
                event.request.declare(self.declare_with)
        elif isinstance(event, a.engine.amqp10.transactions.DischargeRequested):
            self.discharge(event.request)
        elif isinstance(event, a.engine.amqp10.transactions.TransactionRolledBack):
            assert isinstance(event.transaction, a.engine.amqp10.transactions.TransactionRecord)
            self.rolled_back.append(event.transaction)
        elif isinstance(event, a.engine.amqp10.transactions.TransactionWorkRefused):
            self.refused.append(event)

    def on_attach(self, link: a.Link) -> None:
        if link.state is not a.LinkState.ATTACH_RCVD:
            return
        link.attach()
        if isinstance(link, a.engine.amqp10.transactions.CoordinatorLink):
            self.coordinators.append(link)
        elif isinstance(link, a.Receiver):
            self.receivers[link.name] = link
            link.flow(100)
        else:
            assert isinstance(link, a.Sender)
            self.senders[link.name] = link

    def on_message(self, event: a.events.DeliveryReceived) -> None:
        self.data[event.delivery] = event.data
        if event.delivery.transaction is not None:
            # Posted in a transaction: the provisional outcome (4.4.1); the engine puts
            # it in the transaction.
            event.link.update(event.delivery, a.Accepted())
        else:
            self.queues[event.link.target.address].append(body(event.data))
            event.link.settle(event.delivery, a.Accepted())

    def discharge(self, request: a.engine.amqp10.transactions.DischargeRequest) -> None:
        record = request.transaction
        if request.fail or self.commit_refusal is not None:
            if request.fail:
                request.accept()
            else:
                request.reject(self.commit_refusal)
            self.rolled_back.append(record)
            return
        for delivery in record.posted:
            link = delivery.link
            self.queues[link.target.address].append(body(self.data[delivery]))
        for delivery, outcome in record.retired:
            self.applied.append((delivery, outcome))
            self.unacked.pop(delivery, None)
        request.accept()
        for delivery in record.posted:  # the outcome, final now (4.4.4.1)
            delivery.link.settle(delivery, a.Accepted())
        self.committed.append(record)

    def send(self, address: str, bodies: list[Any]) -> None:
        self.outgoing[address].extend(bodies)
        for link in self.senders.values():
            if link.source.address == address:
                self.pump(link)

    def pump(self, link: a.Sender) -> None:
        queue = self.outgoing[link.source.address]
        while queue and link.link_credit > 0 and link.state is a.LinkState.ATTACHED:
            delivery = link.send(a.Message(body=queue.popleft()).encode(), settled=False)
            self.unacked[delivery] = delivery


class Setup:
    """A client (the controller) and a server (the resource), a session, a control link."""

    def __init__(
        self, chunk: int | None = None, *, capabilities: Any = None, **server: Any
    ) -> None:
        self.p = Pair(chunk=chunk, seed=chunk or 7, server=server)
        self.res = Resource(self.p.server)
        self.p.open()
        self.cs = self.p.client.begin()
        self.pump()
        kwargs = {} if capabilities is None else {"capabilities": capabilities}
        self.ctl = self.cs.attach_controller(**kwargs)
        self.pump()
        (self.coord,) = self.res.coordinators
        self.ss = self.coord.session
        assert self.ctl.state is a.LinkState.ATTACHED and self.ctl.link_credit == 100

    def pump(self) -> list[a.Event]:
        """Pump until quiet, the resource answering as it goes; the client's events."""
        got: list[a.Event] = []
        while True:
            c, s = self.p.pump()
            got += c
            if not c and not s:
                return got
            self.res.handle(s)

    def declare(self, **kwargs: Any) -> a.Transaction:
        txn = self.ctl.declare(**kwargs)
        assert txn.state is T.DECLARING and txn.id is None
        (declared,) = of(self.pump(), a.engine.amqp10.transactions.TransactionDeclared)
        assert declared.transaction is txn and txn.state is T.ACTIVE
        assert isinstance(txn.id, bytes)
        return txn

    def sender(self, address: str = "orders") -> a.Sender:
        snd = self.cs.attach_sender(f"to-{address}", target=address)
        self.pump()
        assert snd.link_credit == 100
        return snd

    def receiver(self, address: str = "outbox", credit: int = 0) -> a.Receiver:
        rcv = self.cs.attach_receiver(f"from-{address}", source=address)
        self.pump()
        if credit:
            rcv.flow(credit)
        return rcv

    def discharge(self, txn: a.Transaction, fail: bool = False) -> list[a.Event]:
        self.ctl.discharge(txn, fail=fail)
        assert txn.state is T.DISCHARGING
        return self.pump()

    def record(self, txn: a.Transaction) -> a.engine.amqp10.transactions.TransactionRecord:
        (record,) = [r for r in self.coord.records if r.id == txn.id]
        return record


def received(events: list[a.Event]) -> list[a.events.DeliveryReceived]:
    return of(events, a.events.DeliveryReceived)


# -- declare and discharge -----------------------------------------------------------------


def test_the_control_link_is_a_coordinator_link_with_the_capabilities() -> None:
    t = Setup(
        capabilities=[
            a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS,
            a.definitions.amqp10.transactions.TxnCapability.MULTI_TXNS_PER_SSN,
        ]
    )
    assert isinstance(t.ctl, a.Controller) and isinstance(
        t.coord, a.engine.amqp10.transactions.CoordinatorLink
    )
    assert (
        t.coord.remote is not None
        and t.coord.remote.target
        == a.definitions.amqp10.transactions.Coordinator(
            capabilities=[
                a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS,
                a.definitions.amqp10.transactions.TxnCapability.MULTI_TXNS_PER_SSN,
            ]
        )
    )
    # The controller allows the rejected outcome (4.2); the coordinator says what it has.
    assert t.coord.remote.source.outcomes == (
        a.Symbol("amqp:accepted:list"),
        a.Symbol("amqp:rejected:list"),
    )
    assert t.ctl.capabilities == (
        a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS,
        a.definitions.amqp10.transactions.TxnCapability.MULTI_TXNS_PER_SSN,
        a.definitions.amqp10.transactions.TxnCapability.MULTI_SSNS_PER_TXN,
    )
    assert t.ctl.snd_settle_mode is a.SenderSettleMode.UNSETTLED
    assert not t.coord.streaming


@pytest.mark.parametrize("chunk", CHUNKS)
def test_declare_post_ten_and_commit_makes_all_ten_visible(chunk: int | None) -> None:
    t = Setup(chunk)
    snd = t.sender()
    txn = t.declare()
    record = t.record(txn)
    assert record.state is T.ACTIVE and record.link is t.coord
    sent = [snd.send(a.Message(body=f"m{i}").encode(), transaction=txn) for i in range(10)]
    events = t.pump()
    assert txn.posted == sent and all(d.transaction is txn for d in sent)
    assert t.res.queues["orders"] == []  # nothing visible before the commit
    assert len(record.posted) == 10 and all(d.transaction is record for d in record.posted)
    # The resource's provisional outcomes come in the transaction (4.4.1).
    states = [u.state for u in of(events, a.events.DeliveryUpdated)]
    assert (
        states
        == [
            a.definitions.amqp10.transactions.TransactionalState(
                txn_id=txn.id, outcome=a.Accepted()
            )
        ]
        * 10
    )
    assert not any(d.settled for d in sent)
    events = t.discharge(txn)
    (done,) = of(events, a.engine.amqp10.transactions.TransactionDischarged)
    assert done.transaction is txn and done.committed and txn.state is T.COMMITTED
    assert t.res.queues["orders"] == [f"m{i}" for i in range(10)]
    assert record.state is T.COMMITTED and t.coord.records == []
    # After the commit the resource settles with the final outcome; ours follow.
    assert all(d.settled and d.remote_state == a.Accepted() for d in sent)
    assert t.ctl.transactions == [] and not txn.live


@pytest.mark.parametrize("chunk", CHUNKS)
def test_declare_post_ten_and_roll_back_makes_none_visible(chunk: int | None) -> None:
    t = Setup(chunk)
    snd = t.sender()
    txn = t.declare()
    record = t.record(txn)
    for i in range(10):
        snd.send(a.Message(body=f"m{i}").encode(), transaction=txn)
    t.pump()
    events = t.discharge(txn, fail=True)
    (done,) = of(events, a.engine.amqp10.transactions.TransactionDischarged)
    assert not done.committed and txn.state is T.ROLLED_BACK
    assert t.res.queues["orders"] == [] and record.state is T.ROLLED_BACK
    assert t.res.rolled_back == [record]
    # Work after the discharge naming it is refused (the id is no longer known).
    with pytest.raises(a.LocalProtocolError):
        snd.send(b"x", transaction=txn)


def test_declare_with_a_chosen_txn_id_and_a_global_id() -> None:
    t = Setup()
    t.res.declare_with = b"my-txn"
    with pytest.raises(a.LocalProtocolError, match="distributed"):
        t.ctl.declare(global_id="g-1")
    txn = t.declare()
    assert txn.id == b"my-txn" and t.record(txn).global_id is None


def test_global_id_reaches_a_coordinator_that_offers_distributed_transactions() -> None:
    t = Setup()
    t.coord.detach()
    t.pump()
    ctl = t.cs.attach_controller("txn-2")
    _, s = t.p.pump()
    (attached,) = of(s, a.events.LinkAttached)
    coord = attached.link
    assert isinstance(coord, a.engine.amqp10.transactions.CoordinatorLink)
    coord.attach(
        capabilities=[a.definitions.amqp10.transactions.TxnCapability.DISTRIBUTED_TRANSACTIONS]
    )
    t.p.pump()
    assert ctl.capabilities == (
        a.definitions.amqp10.transactions.TxnCapability.DISTRIBUTED_TRANSACTIONS,
    )
    ctl.declare(global_id=b"gtrid")
    _, s = t.p.pump()
    (req,) = of(s, a.engine.amqp10.transactions.DeclareRequested)
    assert req.link is coord and req.request.global_id == b"gtrid"
    record = req.request.declare()
    assert record.global_id == b"gtrid"


def test_declare_refused_is_reported_with_the_transaction_error() -> None:
    t = Setup()
    t.res.declare_with = a.Error(condition=a.Symbol("amqp:transaction:rollback"), description="no")
    txn = t.ctl.declare()
    (failed,) = of(t.pump(), a.engine.amqp10.transactions.TransactionDeclareFailed)
    assert failed.transaction is txn and txn.state is T.FAILED
    assert failed.error == t.res.declare_with and txn.error == failed.error
    assert t.ctl.transactions == [] and t.ctl.state is a.LinkState.ATTACHED
    with pytest.raises(a.LocalProtocolError, match="FAILED"):
        t.ctl.discharge(txn)


def test_declare_refused_by_default_condition() -> None:
    t = Setup()
    t.ctl.declare()
    _, s = t.p.pump()
    (req,) = of(s, a.engine.amqp10.transactions.DeclareRequested)
    req.request.reject()
    c, _ = t.p.pump()
    (failed,) = of(c, a.engine.amqp10.transactions.TransactionDeclareFailed)
    assert failed.error is not None
    assert failed.error.condition == "amqp:transaction:rollback"
    with pytest.raises(a.LocalProtocolError, match="answered"):
        req.request.declare()


def test_a_refusal_detaches_when_the_controllers_source_cannot_reject() -> None:
    """4.2: the controller's source does not list rejected: the link is detached with the
    transaction-error instead."""
    t = Setup()
    snd = t.cs.attach_sender(
        "plain-ctl",
        source=a.Source(outcomes=[a.Symbol("amqp:accepted:list")]),
        target=a.definitions.amqp10.transactions.Coordinator(
            capabilities=[a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS]
        ),
    )
    t.pump()
    coord = t.res.coordinators[-1]
    assert coord.name == "plain-ctl"
    t.res.declare_with = a.Error(condition=a.Symbol("amqp:transaction:rollback"))
    snd.send(
        a.Message(body=a.AmqpValue(a.definitions.amqp10.transactions.Declare())).encode(),
        settled=False,
    )
    events = t.pump()
    (detached,) = of(events, a.events.LinkDetached)
    assert detached.link is snd and detached.error == t.res.declare_with


def test_the_coordinators_capabilities_are_the_applications() -> None:
    t = Setup()
    assert t.coord.credit_window == 100


def test_discharge_refused_is_a_rollback_with_the_error() -> None:
    t = Setup()
    snd = t.sender()
    txn = t.declare()
    record = t.record(txn)
    snd.send(b"x", transaction=txn)
    t.pump()
    t.res.commit_refusal = a.Error(condition=a.Symbol("amqp:transaction:rollback"), description="x")
    events = t.discharge(txn)
    (rolled,) = of(events, a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.transaction is txn and rolled.error == t.res.commit_refusal
    assert txn.state is T.ROLLED_BACK and record.state is T.ROLLED_BACK
    assert t.res.queues["orders"] == []


def test_a_timed_out_transaction_is_refused_at_its_discharge() -> None:
    t = Setup()
    snd = t.sender()
    txn = t.declare()
    record = t.record(txn)
    t.coord.roll_back(record)  # the resource's own time-out
    assert record.state is T.ROLLED_BACK and t.coord.records == []
    with pytest.raises(a.LocalProtocolError, match="ACTIVE"):
        t.coord.roll_back(record)
    # Work naming it is refused with the timeout, as is the discharge.
    snd.send(b"late", transaction=txn)
    events = t.pump()
    (refused,) = t.res.refused
    assert refused.error.condition == "amqp:transaction:timeout"
    (upd,) = of(events, a.events.DeliveryUpdated)
    assert isinstance(upd.state, a.Rejected) and upd.state.error == refused.error
    assert not received(t.res.events)
    events = t.discharge(txn)
    (rolled,) = of(events, a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.error is not None and rolled.error.condition == "amqp:transaction:timeout"


def test_a_released_discharge_is_reported_as_a_rollback() -> None:
    t = Setup()
    txn = t.declare()
    t.ctl.discharge(txn)
    _, s = t.p.pump()
    (req,) = of(s, a.engine.amqp10.transactions.DischargeRequested)
    # An application that answers with another outcome, bypassing the request.
    t.coord.settle(req.request.delivery, a.Released())
    c, _ = t.p.pump()
    (rolled,) = of(c, a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.error is not None and rolled.error.condition == "amqp:transaction:rollback"


# -- retirement ---------------------------------------------------------------------------


def _three_from_the_resource(t: Setup) -> tuple[a.Receiver, list[a.Delivery]]:
    rcv = t.receiver("outbox", credit=10)
    t.res.send("outbox", ["r0", "r1", "r2"])
    events = t.pump()
    got = received(events)
    assert [body(e.data) for e in got] == ["r0", "r1", "r2"]
    return rcv, [e.delivery for e in got]


@pytest.mark.parametrize("chunk", CHUNKS)
def test_transactional_retirement_with_commit(chunk: int | None) -> None:
    t = Setup(chunk)
    rcv, deliveries = _three_from_the_resource(t)
    txn = t.declare()
    for d in deliveries:
        rcv.update(d, a.Accepted(), transaction=txn)
    t.pump()
    record = t.record(txn)
    assert [(d.tag, o) for d, o in record.retired] == [(d.tag, a.Accepted()) for d in deliveries]
    assert txn.retired == [(d, a.Accepted()) for d in deliveries]
    assert all(d.transaction is txn for d in deliveries)
    assert t.res.applied == [] and len(t.res.unacked) == 3  # provisional
    (done,) = of(t.discharge(txn), a.engine.amqp10.transactions.TransactionDischarged)
    assert done.committed
    assert [o for _, o in t.res.applied] == [a.Accepted()] * 3 and t.res.unacked == {}
    # Final now: the controller settles (4.4.4.2); the outcome is not re-sent in a txn.
    for d in deliveries:
        rcv.settle(d)
    t.pump()
    assert all(d.settled for d in deliveries)


@pytest.mark.parametrize("chunk", CHUNKS)
def test_transactional_retirement_with_rollback_leaves_the_deliveries_live(
    chunk: int | None,
) -> None:
    t = Setup(chunk)
    rcv, deliveries = _three_from_the_resource(t)
    txn = t.declare()
    for d in deliveries:
        rcv.update(d, a.Accepted(), transaction=txn)
    t.pump()
    record = t.record(txn)
    theirs = [d for d, _ in record.retired]
    assert all(
        isinstance(d.remote_state, a.definitions.amqp10.transactions.TransactionalState)
        for d in theirs
    )
    (done,) = of(t.discharge(txn, fail=True), a.engine.amqp10.transactions.TransactionDischarged)
    assert not done.committed
    # Rolled back: the outcome is not applied; the deliveries are live again, at both ends,
    # in the state they had before (4.4.2).
    assert t.res.applied == [] and len(t.res.unacked) == 3
    assert all(d.remote_state is None and not d.settled for d in theirs)
    assert all(d.local_state is None and not d.settled for d in deliveries)
    # ... so they can be retired again, in a new transaction.
    txn2 = t.declare()
    for d in deliveries:
        rcv.settle(d, a.Accepted(), transaction=txn2)
    t.pump()
    assert t.record(txn2).retired and t.res.applied == []
    t.discharge(txn2)
    assert len(t.res.applied) == 3 and t.res.unacked == {}


def test_retirement_misuse() -> None:
    t = Setup()
    rcv, deliveries = _three_from_the_resource(t)
    txn = t.declare()
    other = t.declare()
    with pytest.raises(a.LocalProtocolError, match="needs an outcome"):
        rcv.update(deliveries[0], None, transaction=txn)
    with pytest.raises(a.LocalProtocolError, match="not an outcome"):
        rcv.update(
            deliveries[0],
            messaging.Received(section_number=0, section_offset=0),
            transaction=txn,
        )
    with pytest.raises(a.LocalProtocolError, match="not a Transaction"):
        rcv.update(deliveries[0], a.Accepted(), transaction="txn")
    rcv.update(deliveries[0], a.Accepted(), transaction=txn)
    with pytest.raises(a.LocalProtocolError, match="another transaction"):
        rcv.update(deliveries[0], a.Accepted(), transaction=other)
    # The delivery belongs to a live transaction: a plain outcome goes in it (4.4.4.3).
    rcv.update(deliveries[0], a.Rejected())
    assert deliveries[0].local_state == a.definitions.amqp10.transactions.TransactionalState(
        txn_id=txn.id, outcome=a.Rejected()
    )
    assert txn.retired == [(deliveries[0], a.Rejected())]
    t.pump()
    assert t.record(txn).retired[0][1] == a.Rejected()


# -- acquisition --------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", CHUNKS)
def test_transactional_acquisition(chunk: int | None) -> None:
    t = Setup(chunk)
    rcv = t.receiver("outbox")
    txn = t.declare()
    record = t.record(txn)
    rcv.flow(5, drain=True, transaction=txn)
    t.pump()
    snd = t.res.senders["from-outbox"]
    assert snd._acquiring is record
    t.res.send("outbox", [f"a{i}" for i in range(5)])
    events = t.pump()
    got = received(events)
    assert [body(e.data) for e in got] == [f"a{i}" for i in range(5)]
    mine = [e.delivery for e in got]
    # The resource's transfers say the transaction (4.4.3).
    assert all(
        d.remote_state == a.definitions.amqp10.transactions.TransactionalState(txn_id=txn.id)
        for d in mine
    )
    assert txn.acquired == mine and all(d.transaction is txn for d in mine)
    assert [d.tag for d in record.acquired] == [d.tag for d in mine]
    # Outcomes of deliveries acquired in a transaction go in it without being told.
    for d in mine:
        rcv.update(d, a.Accepted())
    t.pump()
    assert [o for _, o in record.retired] == [a.Accepted()] * 5
    assert of(t.discharge(txn), a.engine.amqp10.transactions.TransactionDischarged)[0].committed
    assert len(t.res.applied) == 5
    # Discharged: the link's txn-id is cleared; what is sent now is not in a transaction.
    assert snd._acquiring is None
    rcv.flow(1)
    t.pump()
    t.res.send("outbox", ["after"])
    (late,) = received(t.pump())
    assert late.delivery.remote_state is None and late.delivery.transaction is None


def test_acquisition_state_is_the_engines() -> None:
    t = Setup()
    rcv = t.receiver("outbox")
    txn = t.declare()
    rcv.flow(5, transaction=txn)
    t.pump()
    snd = t.res.senders["from-outbox"]
    with pytest.raises(a.LocalProtocolError, match="acquires"):
        snd.send(b"x", state=messaging.Received(section_number=0, section_offset=0))
    with pytest.raises(a.LocalProtocolError, match="ACTIVE"):
        rcv.flow(1, transaction=a.Transaction(t.ctl, None))


# -- several transactions -----------------------------------------------------------------


@pytest.mark.parametrize("chunk", CHUNKS)
def test_two_transactions_interleaved_on_one_session(chunk: int | None) -> None:
    t = Setup(chunk)
    snd = t.sender()
    snd2 = t.sender("audit")
    t1, t2 = t.ctl.declare(), t.ctl.declare()
    declared = of(t.pump(), a.engine.amqp10.transactions.TransactionDeclared)
    assert [e.transaction for e in declared] == [t1, t2] and t1.id != t2.id
    assert set(t.ctl.transactions) == {t1, t2}
    for i in range(6):
        txn = (t1, t2)[i % 2]
        (snd if i < 3 else snd2).send(a.Message(body=f"m{i}").encode(), transaction=txn)
    snd.send(a.Message(body="plain").encode())
    t.pump()
    assert t.res.queues["orders"] == ["plain"]
    r1, r2 = t.record(t1), t.record(t2)
    assert [body(t.res.data[d]) for d in r1.posted] == ["m0", "m2", "m4"]
    assert [body(t.res.data[d]) for d in r2.posted] == ["m1", "m3", "m5"]
    t.ctl.discharge(t2, fail=True)
    t.ctl.discharge(t1)
    events = t.pump()
    assert [
        (e.transaction, e.committed)
        for e in of(events, a.engine.amqp10.transactions.TransactionDischarged)
    ] == [
        (t2, False),
        (t1, True),
    ]
    assert t.res.queues["orders"] == ["plain", "m0", "m2"]
    assert t.res.queues["audit"] == ["m4"]


# -- unknown txn-ids ----------------------------------------------------------------------


@pytest.mark.parametrize("chunk", CHUNKS)
def test_posting_with_an_unknown_txn_id_is_rejected(chunk: int | None) -> None:
    t = Setup(chunk, max_frame_size=512)
    snd = t.sender()
    d = snd.send(
        bytes(3000), state=a.definitions.amqp10.transactions.TransactionalState(txn_id=b"nope")
    )  # several frames
    events = t.pump()
    (refused,) = t.res.refused
    assert refused.error.condition == "amqp:transaction:unknown-id"
    assert refused.link.name == "to-orders" and not received(t.res.events)
    (upd,) = of(events, a.events.DeliveryUpdated)
    assert upd.delivery is d and isinstance(upd.state, a.Rejected) and upd.settled
    assert upd.state.error == refused.error


def test_posting_presettled_with_an_unknown_txn_id_is_dropped() -> None:
    t = Setup()
    snd = t.sender()
    snd.send(
        b"x",
        state=a.definitions.amqp10.transactions.TransactionalState(txn_id=b"nope"),
        settled=True,
    )
    events = t.pump()
    assert len(t.res.refused) == 1 and not received(t.res.events)
    assert not of(events, a.events.DeliveryUpdated)


def test_a_discharge_of_an_unknown_txn_id_is_rejected() -> None:
    t = Setup()
    data = a.Message(
        body=a.AmqpValue(a.definitions.amqp10.transactions.Discharge(txn_id=b"nope"))
    ).encode()
    d = a.Sender.send(t.ctl, data, settled=False)
    events = t.pump()
    (refused,) = t.res.refused
    assert refused.link is t.coord and refused.error.condition == "amqp:transaction:unknown-id"
    (upd,) = of(events, a.events.DeliveryUpdated)
    assert upd.delivery is d and isinstance(upd.state, a.Rejected)
    assert not of(t.res.events, a.engine.amqp10.transactions.DischargeRequested)


def test_a_disposition_with_an_unknown_txn_id_detaches_the_link() -> None:
    t = Setup()
    rcv, deliveries = _three_from_the_resource(t)
    rcv.update(
        deliveries[0],
        a.definitions.amqp10.transactions.TransactionalState(txn_id=b"nope", outcome=a.Accepted()),
    )
    events = t.pump()
    (err,) = of(t.res.events, a.events.ProtocolError)
    assert err.scope == "link" and err.error.condition == "amqp:transaction:unknown-id"
    (detached,) = of(events, a.events.LinkDetached)
    assert detached.link is rcv and detached.error == err.error


def test_a_flow_with_an_unknown_txn_id_detaches_the_link() -> None:
    t = Setup()
    rcv = t.receiver("outbox")
    txn = t.declare()
    t.coord.roll_back(t.record(txn), a.Error(condition=a.Symbol("amqp:transaction:rollback")))
    rcv.flow(1, transaction=txn)  # the controller does not know yet
    events = t.pump()
    (err,) = of(t.res.events, a.events.ProtocolError)
    assert err.error.condition == "amqp:transaction:unknown-id"
    assert of(events, a.events.LinkDetached)[0].link is rcv


def test_a_retirement_in_another_transaction_than_the_acquisitions_rolls_back() -> None:
    """4.4.2: a delivery acquired in one live transaction, retired in another: the control
    link is terminated with transaction-rollback."""
    t = Setup()
    rcv = t.receiver("outbox")
    t1, t2 = t.declare(), t.declare()
    rcv.flow(1, transaction=t1)
    t.pump()
    t.res.send("outbox", ["x"])
    (got,) = received(t.pump())
    # Bypassing the controller's own check, with a hand-made state.
    rcv.update(
        got.delivery,
        a.definitions.amqp10.transactions.TransactionalState(txn_id=t2.id, outcome=a.Accepted()),
    )
    events = t.pump()
    (err,) = of(t.res.events, a.events.ProtocolError)
    assert err.error.condition == "amqp:transaction:rollback"
    rolled = of(events, a.engine.amqp10.transactions.TransactionRolledBack)
    assert {e.transaction for e in rolled} == {t1, t2}
    assert t1.state is T.ROLLED_BACK and t2.state is T.ROLLED_BACK
    assert {r.id for r in t.res.rolled_back} == {t1.id, t2.id}


# -- the control link going -----------------------------------------------------------------


@pytest.mark.parametrize("chunk", CHUNKS)
def test_coordinator_detach_mid_transaction_rolls_back(chunk: int | None) -> None:
    t = Setup(chunk)
    snd = t.sender()
    txn = t.declare()
    record = t.record(txn)
    pending = t.ctl.declare()
    snd.send(b"x", transaction=txn)
    t.p.pump()  # the declare arrives; the resource does not answer it
    error = a.Error(condition=a.Symbol("amqp:internal-error"), description="going")
    t.coord.detach(error=error)
    events = t.pump()
    (rolled,) = of(events, a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.transaction is txn and rolled.error == error and txn.state is T.ROLLED_BACK
    (failed,) = of(events, a.engine.amqp10.transactions.TransactionDeclareFailed)
    assert failed.transaction is pending and pending.state is T.FAILED
    assert t.res.rolled_back == [record] and record.state is T.ROLLED_BACK
    assert t.res.queues["orders"] == []
    # Work in it is refused now, locally; at the resource the id is unknown.
    with pytest.raises(a.LocalProtocolError):
        snd.send(b"y", transaction=txn)


def test_controller_detach_mid_transaction_rolls_back_at_the_resource() -> None:
    t = Setup()
    snd = t.sender()
    txn = t.declare()
    record = t.record(txn)
    snd.send(b"x", transaction=txn)
    t.pump()
    t.ctl.detach()
    events = t.pump()
    assert of(events, a.engine.amqp10.transactions.TransactionRolledBack)[0].transaction is txn
    (rolled,) = of(t.res.events, a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.transaction is record and rolled.error is None
    # The posted delivery is refused now that its transaction is gone.
    snd.send(b"y", state=a.definitions.amqp10.transactions.TransactionalState(txn_id=txn.id))  # type: ignore[arg-type]
    t.pump()
    assert len(t.res.refused) == 1


def test_session_end_rolls_back_both_sides() -> None:
    t = Setup()
    txn = t.declare()
    record = t.record(txn)
    t.cs.end()
    events = t.pump()
    assert of(events, a.engine.amqp10.transactions.TransactionRolledBack)[0].transaction is txn
    assert [
        e.transaction for e in of(t.res.events, a.engine.amqp10.transactions.TransactionRolledBack)
    ] == [record]


def test_a_settled_declare_detaches_with_illegal_state() -> None:
    t = Setup()
    snd = t.cs.attach_sender("raw-ctl", target=a.definitions.amqp10.transactions.Coordinator())
    t.pump()
    snd.send(
        a.Message(body=a.AmqpValue(a.definitions.amqp10.transactions.Declare())).encode(),
        settled=True,
    )
    events = t.pump()
    (err,) = of(t.res.events, a.events.ProtocolError)
    assert err.scope == "link" and err.error.condition == "amqp:illegal-state"
    assert of(events, a.events.LinkDetached)[0].link is snd


@pytest.mark.parametrize(
    "payload",
    [b"\x00\x53\x77\xa1\x03abc", b"\x00\x53\x77\x45", b"\xff\xff"],
    ids=["a-string", "an-empty-list", "undecodable"],
)
def test_a_malformed_request_is_rejected_with_decode_error(payload: bytes) -> None:
    t = Setup()
    d = a.Sender.send(t.ctl, payload, settled=False)
    events = t.pump()
    (refused,) = t.res.refused
    assert refused.error.condition == "amqp:decode-error"
    (upd,) = of(events, a.events.DeliveryUpdated)
    assert upd.delivery is d and isinstance(upd.state, a.Rejected)


def test_discharge_with_a_partial_delivery_posted_terminates_the_control_link() -> None:
    t = Setup()
    snd = t.sender()
    txn = t.declare()
    record = t.record(txn)
    snd.send(b"part one", transaction=txn, more=True)
    t.pump()
    assert len(record.posted) == 1 and not record.posted[0].complete
    events = t.discharge(txn)
    (err,) = of(t.res.events, a.events.ProtocolError)
    assert err.error.condition == "amqp:transaction:rollback"
    (rolled,) = of(events, a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.transaction is txn and rolled.error == err.error
    assert record.state is T.ROLLED_BACK and t.res.rolled_back == [record]


def test_an_aborted_posting_is_not_in_the_transaction() -> None:
    t = Setup()
    snd = t.sender()
    txn = t.declare()
    d = snd.send(b"part", transaction=txn, more=True)
    t.pump()
    snd.abort(d)
    snd.send(a.Message(body="whole").encode(), transaction=txn)
    t.pump()
    assert len(t.record(txn).posted) == 1
    t.discharge(txn)
    assert t.res.queues["orders"] == ["whole"]


# -- the application's mistakes -------------------------------------------------------------


def test_controller_misuse_raises_and_sends_nothing() -> None:
    t = Setup()
    snd = t.sender()
    with pytest.raises(a.LocalProtocolError, match="declares and discharges"):
        t.ctl.send(b"x")
    txn = t.ctl.declare()
    with pytest.raises(a.LocalProtocolError, match="DECLARING"):
        t.ctl.discharge(txn)
    with pytest.raises(a.LocalProtocolError, match="ACTIVE"):
        snd.send(b"x", transaction=txn)
    t.pump()
    with pytest.raises(a.LocalProtocolError, match="not both"):
        snd.send(b"x", transaction=txn, state=a.Accepted())
    other = t.cs.attach_controller("other-ctl")
    t.pump()
    with pytest.raises(a.LocalProtocolError, match="another control link"):
        other.discharge(txn)
    p2 = Setup()
    txn2 = p2.declare()
    with pytest.raises(a.LocalProtocolError, match="another connection"):
        snd.send(b"x", transaction=txn2)
    assert t.p.client.data_to_send() == b""
    # No credit: as for any send.
    t.coord.flow(0)
    t.pump()
    with pytest.raises(a.LocalProtocolError, match="credit"):
        t.ctl.declare()


def test_coordinator_misuse_raises() -> None:
    t = Setup()
    t.res.declare_with = b"dup"
    t.declare()
    t.ctl.declare()
    _, s = t.p.pump()
    (req,) = of(s, a.engine.amqp10.transactions.DeclareRequested)
    with pytest.raises(a.LocalProtocolError, match="in use"):
        req.request.declare(b"dup")
    with pytest.raises(a.LocalProtocolError, match="32 bytes"):
        req.request.declare(bytes(33))
    second = req.request.declare()
    assert second.id != b"dup"
    with pytest.raises(a.LocalProtocolError, match="stream"):
        t.coord.streaming = True


def test_a_commit_needs_the_outcome_of_every_posted_delivery_first() -> None:
    t = Setup()
    snd = t.sender()
    txn = t.declare()
    snd.send(b"x", transaction=txn)
    t.ctl.discharge(txn)
    _, s = t.p.pump()  # bypass the Resource: answer by hand
    (got,) = of(s, a.events.DeliveryReceived)
    (req,) = of(s, a.engine.amqp10.transactions.DischargeRequested)
    assert req.request.transaction.posted == [got.delivery] and not req.request.fail
    with pytest.raises(a.LocalProtocolError, match="no outcome"):
        req.request.accept()
    got.link.settle(got.delivery, a.Accepted())  # in the transaction, as it is live
    assert got.delivery.local_state == a.definitions.amqp10.transactions.TransactionalState(
        txn_id=txn.id, outcome=a.Accepted()
    )
    req.request.accept()
    with pytest.raises(a.LocalProtocolError, match="answered"):
        req.request.reject()
    c, _ = t.p.pump()
    assert of(c, a.engine.amqp10.transactions.TransactionDischarged)[0].committed


def test_a_rollback_cannot_be_refused() -> None:
    t = Setup()
    txn = t.declare()
    t.ctl.discharge(txn, fail=True)
    _, s = t.p.pump()
    (req,) = of(s, a.engine.amqp10.transactions.DischargeRequested)
    with pytest.raises(a.LocalProtocolError, match="roll back"):
        req.request.reject()
    t.coord.detach()
    with pytest.raises(a.LocalProtocolError, match="not attached"):
        req.request.accept()


def test_a_refused_commit_on_a_link_that_cannot_reject_detaches() -> None:
    t = Setup()
    snd = t.cs.attach_sender(
        "plain-ctl",
        source=a.Source(outcomes=[a.Symbol("amqp:accepted:list")]),
        target=a.definitions.amqp10.transactions.Coordinator(),
    )
    t.pump()
    coord = t.res.coordinators[-1]
    snd.send(
        a.Message(body=a.AmqpValue(a.definitions.amqp10.transactions.Declare())).encode(),
        settled=False,
    )
    t.pump()
    (record,) = coord.records
    snd.send(
        a.Message(
            body=a.AmqpValue(a.definitions.amqp10.transactions.Discharge(txn_id=record.id))
        ).encode(),
        settled=False,
    )
    _, s = t.p.pump()
    (req,) = of(s, a.engine.amqp10.transactions.DischargeRequested)
    req.request.reject()
    assert record.state is T.ROLLED_BACK and coord.state is not a.LinkState.ATTACHED
    c, _ = t.p.pump()
    assert of(c, a.events.LinkDetached)[0].error.condition == "amqp:transaction:rollback"


def test_the_transition_table() -> None:
    table = a.engine.amqp10.states.TRANSACTION_TRANSITIONS
    assert table[(T.DECLARING, a.engine.amqp10.states.TransactionInput.DECLARED)] is T.ACTIVE
    assert (T.COMMITTED, a.engine.amqp10.states.TransactionInput.DISCHARGE) not in table
    txn = a.Transaction.__new__(a.Transaction)
    assert "Transaction" in repr(Setup().declare())
    del txn


def test_rollback_leaves_a_retirement_settled_by_the_controller_settled() -> None:
    """4.4.4.2: a delivery the controller settled in a transaction that is rolled back
    stays settled; the resource applies its default outcome."""
    t = Setup()
    rcv, deliveries = _three_from_the_resource(t)
    txn = t.declare()
    rcv.settle(deliveries[0], a.Accepted(), transaction=txn)
    rcv.update(deliveries[1], a.Accepted(), transaction=txn)
    t.pump()
    t.discharge(txn, fail=True)
    assert deliveries[0].settled
    assert deliveries[0].local_state == a.definitions.amqp10.transactions.TransactionalState(
        txn_id=txn.id, outcome=a.Accepted()
    )
    assert deliveries[1].local_state is None and not deliveries[1].settled


def test_an_explicit_target_and_the_credit_window() -> None:
    t = Setup()
    ctl = t.cs.attach_controller("small")
    _, s = t.p.pump()
    (attached,) = of(s, a.events.LinkAttached)
    coord = attached.link
    assert isinstance(coord, a.engine.amqp10.transactions.CoordinatorLink)
    coord.credit_window = 4
    coord.attach(
        target=a.definitions.amqp10.transactions.Coordinator(
            capabilities=[a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS]
        )
    )
    t.p.pump()
    assert (
        ctl.capabilities == (a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS,)
        and ctl.link_credit == 4
    )
    for _ in range(3):
        ctl.declare()
    _, s = t.p.pump()
    for event in of(s, a.engine.amqp10.transactions.DeclareRequested):
        event.request.declare()
    c, _ = t.p.pump()
    assert len(of(c, a.engine.amqp10.transactions.TransactionDeclared)) == 3
    assert ctl.link_credit == 4  # topped up once half was used


def test_a_second_acquiring_flow_moves_the_link_to_the_other_transaction() -> None:
    t = Setup()
    rcv = t.receiver("outbox")
    t1, t2 = t.declare(), t.declare()
    rcv.flow(1, transaction=t1)
    rcv.flow(2, transaction=t2)
    # A flow without a txn-id leaves the association as it is.
    rcv._send_flow(properties={a.Symbol("x-other"): 1})
    t.pump()
    snd = t.res.senders["from-outbox"]
    assert snd._acquiring is t.record(t2)
    t.discharge(t1)
    assert snd._acquiring is t.record(t2)
    t.res.send("outbox", ["x"])
    (got,) = received(t.pump())
    assert got.delivery.transaction is t2


def test_what_is_sent_while_the_discharge_is_answered_is_not_acquired() -> None:
    t = Setup()
    rcv = t.receiver("outbox")
    txn = t.declare()
    rcv.flow(2, transaction=txn)
    t.pump()
    snd = t.res.senders["from-outbox"]
    t.ctl.discharge(txn)
    _, s = t.p.pump()
    (req,) = of(s, a.engine.amqp10.transactions.DischargeRequested)
    d = snd.send(b"meanwhile")
    assert d.local_state is None and d.transaction is None and snd._acquiring is None
    req.request.accept()
    c, _ = t.p.pump()
    assert of(c, a.engine.amqp10.transactions.TransactionDischarged)[0].committed


def test_a_transfer_with_another_delivery_state_is_not_transactional() -> None:
    t = Setup()
    snd = t.sender()
    snd.send(
        a.Message(body="r").encode(),
        state=messaging.Received(section_number=0, section_offset=0),
    )
    t.pump()
    assert t.res.queues["orders"] == ["r"] and not t.res.refused


# -- a property: exactly the committed work takes effect ------------------------------------

OPS = st.lists(
    st.tuples(st.integers(0, 1), st.sampled_from(["post", "retire"]), st.booleans()),
    max_size=16,
)


@settings(max_examples=40, deadline=None)
@given(
    ops=OPS,
    commits=st.tuples(st.booleans(), st.booleans()),
    second_first=st.booleans(),
    chunk=st.sampled_from([None, 1 << 30, 13]),
)
def test_two_interleaved_transactions_apply_exactly_the_committed_work(
    ops: list[tuple[int, str, bool]],
    commits: tuple[bool, bool],
    second_first: bool,
    chunk: int | None,
) -> None:
    t = Setup(chunk)
    snd = t.sender()
    rcv = t.receiver("outbox", credit=20)
    t.res.send("outbox", [f"r{i}" for i in range(16)])
    inbound = [e.delivery for e in received(t.pump())]
    txns = [t.declare(), t.declare()]
    posted: list[str] = []
    retired: set[bytes] = set()
    to_retire = iter(inbound)
    for k, (which, op, pump) in enumerate(ops):
        txn = txns[which]
        if op == "post":
            snd.send(a.Message(body=f"p{k}").encode(), transaction=txn)
            if commits[which]:
                posted.append(f"p{k}")
        else:
            delivery = next(to_retire)
            rcv.update(delivery, a.Accepted(), transaction=txn)
            if commits[which]:
                retired.add(delivery.tag)
        if pump:
            t.pump()
    t.pump()
    assert t.res.queues["orders"] == []  # nothing visible before a discharge
    for which in (1, 0) if second_first else (0, 1):
        t.ctl.discharge(txns[which], fail=not commits[which])
    events = t.pump()
    assert sorted(
        e.committed for e in of(events, a.engine.amqp10.transactions.TransactionDischarged)
    ) == sorted(commits)
    assert sorted(t.res.queues["orders"]) == sorted(posted)
    assert {d.tag for d, _ in t.res.applied} == retired
    assert len(t.res.unacked) == 16 - len(retired)
    # What was retired in a rolled-back transaction is live again at both ends.
    for delivery in inbound:
        assert not delivery.settled
        if delivery.tag not in retired:
            assert delivery.local_state is None
