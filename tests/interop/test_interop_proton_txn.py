"""Transactions (core spec part 4) against Apache Qpid Proton over loopback sockets.

Proton implements the controller's side only: its container's ``declare_transaction``
attaches a control link to the peer's coordinator, and its ``Transaction`` posts messages and
commits or aborts. Here a Proton client is the controller and our server the transactional
resource, a coordinator built on the engine: the messages Proton posts in a transaction
become visible to our application only once Proton commits; if it aborts, none does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support.proton_peer import Interop, OurApp, ProtonPeer, Spec, interop_pairs

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.engine.amqp10
from amqp_sansio.engine.amqp10 import states

proton = pytest.importorskip("proton")
from proton.handlers import TransactionHandler  # noqa: E402

COUNT = 10


class ProtonController(ProtonPeer, TransactionHandler):  # type: ignore[misc]
    """Proton's client: the spec links, and a transaction controller on demand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.container: Any = None
        self.transaction: Any = None
        self.declared = 0
        self.outcome: str | None = None

    def on_start(self, event: Any) -> None:
        self.container = event.container
        super().on_start(event)

    def on_link_opened(self, event: Any) -> None:
        if event.link.name in self.specs:  # not the control link
            super().on_link_opened(event)

    # In Proton's thread, asked for by the test.
    def declare(self) -> None:
        self.container.declare_transaction(self.connection, handler=self)

    def post_and_discharge(self, link_name: str, bodies: list[str], *, commit: bool) -> None:
        sender = self.links[link_name]
        for body in bodies:
            self.transaction.send(sender, proton.Message(body=body))
        if commit:
            self.transaction.commit()
        else:
            self.transaction.abort()

    # TransactionHandler
    def on_transaction_declared(self, event: Any) -> None:
        self.transaction = event.transaction
        self.declared += 1

    def on_transaction_committed(self, event: Any) -> None:
        self.outcome = "committed"

    def on_transaction_aborted(self, event: Any) -> None:
        self.outcome = "aborted"

    def on_transaction_declare_failed(self, event: Any) -> None:
        self.outcome = "declare failed"

    def on_transaction_commit_failed(self, event: Any) -> None:
        self.outcome = "commit failed"


class OurResource(OurApp):
    """Our server as transactional resource: accepts the control link, declares, and holds
    what is posted in a transaction until its discharge."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending: dict[a.engine.amqp10.transactions.TransactionRecord, list[a.Message]] = (
            defaultdict(list)
        )
        self.records: list[a.engine.amqp10.transactions.TransactionRecord] = []
        self.discharges: list[tuple[bytes, bool]] = []

    def __call__(self, event: a.Event) -> None:
        if isinstance(event, a.events.LinkAttached) and isinstance(
            event.link, a.engine.amqp10.transactions.CoordinatorLink
        ):
            event.link.attach()
        elif isinstance(event, a.engine.amqp10.transactions.DeclareRequested):
            self.records.append(event.request.declare())
        elif isinstance(event, a.engine.amqp10.transactions.DischargeRequested):
            request = event.request
            record = request.transaction
            self.discharges.append((record.id, request.fail))
            posted = self.pending.pop(record, [])
            if not request.fail:
                self.received["visible"].extend(posted)
            request.accept()
        else:
            super().__call__(event)

    def _received(self, event: a.events.DeliveryReceived) -> None:
        record = event.delivery.transaction
        if record is None:
            super()._received(event)
            return
        assert isinstance(record, a.engine.amqp10.transactions.TransactionRecord)
        self.pending[record].append(a.Message.decode(event.data))
        # The provisional outcome; the engine sends it in the transaction (4.4.1).
        event.link.settle(event.delivery, a.Accepted())


@pytest.fixture
def interop() -> Iterator[Callable[..., Interop]]:
    yield from interop_pairs()


def _start(interop: Callable[..., Interop]) -> tuple[Interop, ProtonController, OurResource]:
    pair = interop("server", [Spec("txn-orders", False, "orders")])
    peer = ProtonController(pair.specs, connect_to=pair.port)
    pair.peer = peer
    pair.container = proton.reactor.Container(peer)
    app = OurResource(pair.conn, pair.specs, server=True)
    pair.app = app
    pair.start()
    peer.call(peer.declare)
    pair.wait(lambda: peer.declared == 1)
    assert len(app.records) == 1 and app.records[0].state is states.TransactionState.ACTIVE
    coord = app.records[0].link
    assert coord.remote is not None and isinstance(
        coord.remote.target, a.definitions.amqp10.transactions.Coordinator
    )
    assert a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS in (
        coord.remote.target.capabilities or ()
    )
    return pair, peer, app


def test_proton_declares_posts_ten_and_commits(interop: Callable[..., Interop]) -> None:
    pair, peer, app = _start(interop)
    (record,) = app.records
    bodies = [f"order {i}" for i in range(COUNT)]
    peer.call(lambda: peer.post_and_discharge("txn-orders", bodies, commit=True))
    pair.wait(lambda: peer.outcome is not None)
    assert peer.outcome == "committed"
    assert [m.body.value for m in app.received["visible"]] == bodies  # type: ignore[union-attr]
    assert app.received["txn-orders"] == []  # nothing was visible outside the transaction
    assert (
        app.discharges == [(record.id, False)] and record.state is states.TransactionState.COMMITTED
    )
    assert len(record.posted) == COUNT
    assert all(
        d.local_state
        == a.definitions.amqp10.transactions.TransactionalState(
            txn_id=record.id, outcome=a.Accepted()
        )
        for d in record.posted
    )
    assert peer.errors == [] and app.errors == []


def test_proton_declares_posts_and_rolls_back(interop: Callable[..., Interop]) -> None:
    pair, peer, app = _start(interop)
    (record,) = app.records
    bodies = [f"order {i}" for i in range(COUNT)]
    peer.call(lambda: peer.post_and_discharge("txn-orders", bodies, commit=False))
    pair.wait(lambda: peer.outcome is not None)
    assert peer.outcome == "aborted"
    assert app.received["visible"] == [] and app.received["txn-orders"] == []
    assert app.discharges == [(record.id, True)]
    assert record.state is states.TransactionState.ROLLED_BACK and len(record.posted) == COUNT
    assert peer.errors == [] and app.errors == []


def test_proton_runs_two_transactions_one_after_the_other(
    interop: Callable[..., Interop],
) -> None:
    pair, peer, app = _start(interop)
    peer.call(lambda: peer.post_and_discharge("txn-orders", ["a", "b"], commit=False))
    pair.wait(lambda: peer.outcome == "aborted")
    peer.outcome = None
    peer.call(peer.declare)
    pair.wait(lambda: peer.declared == 2)
    peer.call(lambda: peer.post_and_discharge("txn-orders", ["c", "d"], commit=True))
    pair.wait(lambda: peer.outcome == "committed")
    assert [m.body.value for m in app.received["visible"]] == ["c", "d"]  # type: ignore[union-attr]
    first, second = app.records
    assert first.id != second.id
    assert first.state is states.TransactionState.ROLLED_BACK
    assert second.state is states.TransactionState.COMMITTED
    assert peer.errors == [] and app.errors == []
