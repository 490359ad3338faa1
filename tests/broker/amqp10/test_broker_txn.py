"""The broker as a transactional resource (core spec part 4; broker draft 3): work posted,
retired or acquired in a transaction takes effect on commit, all at once, and not at all on
rollback. Our engine's controller in memory (tests/support/broker_net.py), and Qpid Proton's over
loopback."""

from __future__ import annotations

from typing import Any

import pytest
from amqp_sansio.adapters.broker import run_broker
from support.broker_net import Net, body, controller, declare, discharge

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.engine.amqp10
from amqp_sansio.broker import BrokerConfig


@pytest.mark.parametrize("commit", [True, False])
def test_transactional_publish(commit: bool) -> None:
    net = Net()
    c, other = net.connect(), net.connect()
    ctl = controller(c)
    s = c.sender("q")
    txn = declare(c, ctl)
    ds = [s.send(a.Message(body=b"%d" % i).encode(), transaction=txn) for i in range(3)]
    net.pump()
    r = other.receiver("q", 10)
    assert other.received(r) == []  # posted, not visible before the commit
    assert isinstance(ds[0].remote_state, a.definitions.amqp10.transactions.TransactionalState)
    discharge(c, ctl, txn, fail=not commit)
    got = [body(e) for e in other.received(r)]
    assert got == ([b"0", b"1", b"2"] if commit else [])
    assert txn.state is (
        a.engine.amqp10.states.TransactionState.COMMITTED
        if commit
        else a.engine.amqp10.states.TransactionState.ROLLED_BACK
    )
    if commit:
        assert all(isinstance(d.remote_state, a.Accepted) and d.settled for d in ds)


@pytest.mark.parametrize("commit", [True, False])
def test_transactional_accept(commit: bool) -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    for i in range(2):
        p.send(s, a.Message(body=b"%d" % i))
    ctl = controller(c)
    r = c.receiver("q", 2)
    got = c.received(r)
    txn = declare(c, ctl)
    for e in got:
        r.update(e.delivery, a.Accepted(), transaction=txn)
    net.pump()
    queue = net.broker.nodes["q"]
    assert queue.depth == 2  # retired, not yet final
    discharge(c, ctl, txn, fail=not commit)
    assert queue.depth == (0 if commit else 2)
    if not commit:  # still the consumer's: it may settle them again
        for e in got:
            r.settle(e.delivery, a.Released())
        net.pump()
        r.flow(5)
        net.pump()
        assert [body(e) for e in c.received(r)] == [b"0", b"1"]


def test_settled_retirement_rolled_back_takes_the_default_outcome() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    p.send(p.sender("q"), a.Message(body=b"x"))
    ctl = controller(c)
    r = c.receiver("q", 1)
    (e,) = c.received(r)
    txn = declare(c, ctl)
    r.settle(e.delivery, a.Accepted(), transaction=txn)
    net.pump()
    discharge(c, ctl, txn, fail=True)
    r.flow(1)
    net.pump()
    (again,) = c.received(r)
    assert a.Message.decode(again.data).header.delivery_count == 1  # type: ignore[union-attr]


@pytest.mark.parametrize("commit", [True, False])
def test_transactional_acquisition(commit: bool) -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    for i in range(2):
        p.send(s, a.Message(body=b"%d" % i))
    ctl = controller(c)
    txn = declare(c, ctl)
    r = c.receiver("q", 0)
    r.flow(2, transaction=txn)
    net.pump()
    got = c.received(r)
    assert len(got) == 2
    for e in got:
        r.update(e.delivery, a.Accepted())  # goes in the transaction it was acquired in
    net.pump()
    discharge(c, ctl, txn, fail=not commit)
    queue = net.broker.nodes["q"]
    assert queue.depth == (0 if commit else 2)
    assert len(queue.available) == (0 if commit else 2)  # type: ignore[attr-defined]


def test_commit_refused_when_a_queue_cannot_take_the_messages() -> None:
    net = Net(BrokerConfig(max_queue_depth=2))
    c = net.connect()
    ctl = controller(c)
    s = c.sender("q")
    txn = declare(c, ctl)
    for i in range(3):
        s.send(a.Message(body=b"%d" % i).encode(), transaction=txn)
    net.pump()
    discharge(c, ctl, txn, fail=False)
    (rolled,) = c.of(a.engine.amqp10.transactions.TransactionRolledBack)
    assert rolled.error.condition == "amqp:transaction:rollback"
    assert net.broker.nodes["q"].depth == 0


def test_control_link_lost_rolls_back() -> None:
    net = Net()
    c, other = net.connect(), net.connect()
    ctl = controller(c)
    s = c.sender("q")
    txn = declare(c, ctl)
    s.send(a.Message(body=b"x").encode(), transaction=txn)
    net.pump()
    ctl.detach()
    net.pump()
    r = other.receiver("q", 5)
    assert other.received(r) == []
    assert net.broker.nodes["q"].depth == 0


# -- Proton, the controller ------------------------------------------------------------------

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton.handlers import MessagingHandler, TransactionHandler  # noqa: E402
from proton.reactor import Container  # noqa: E402


class _TxnClient(MessagingHandler, TransactionHandler):  # type: ignore[misc]
    """Proton declares a transaction, posts ``bodies`` in it (or accepts what ``take``
    receives in it), then commits or aborts, and closes."""

    def __init__(self, url: str, address: str, *, bodies: list[str], take: int, commit: bool):
        super().__init__(auto_accept=False, prefetch=0)
        self.url, self.address = url, address
        self.bodies, self.take, self.commit = bodies, take, commit
        self.txn: Any = None
        self.outcome: str | None = None
        self.received: list[Any] = []

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url)
        self.sender = event.container.create_sender(self.conn, self.address)
        if self.take:
            self.receiver = event.container.create_receiver(self.conn, self.address)
        event.container.declare_transaction(self.conn, handler=self)
        self.container = event.container

    def on_transaction_declared(self, event: Any) -> None:
        self.txn = event.transaction
        if self.take:
            self.receiver.flow(self.take)
            return
        for b in self.bodies:
            self.txn.send(self.sender, proton.Message(body=b))
        self._discharge()

    def on_message(self, event: Any) -> None:
        self.received.append(event.message.body)
        self.txn.accept(event.delivery)
        if len(self.received) == self.take:
            self._discharge()

    def _discharge(self) -> None:
        if self.commit:
            self.txn.commit()
        else:
            self.txn.abort()

    def on_transaction_committed(self, event: Any) -> None:
        self.outcome = "committed"
        self.conn.close()

    def on_transaction_aborted(self, event: Any) -> None:
        self.outcome = "aborted"
        self.conn.close()


def _run(client: _TxnClient) -> None:
    container = Container(client)
    container.timeout = 10
    container.run()


@pytest.mark.parametrize("commit", [True, False])
def test_proton_transactional_publish_and_accept(commit: bool) -> None:
    config = BrokerConfig(sasl=a.sasl.ServerAuthenticator(None, allow_anonymous=True))
    with run_broker(config=config) as server:
        client = _TxnClient(server.url, "ptx", bodies=["a", "b", "c"], take=0, commit=commit)
        _run(client)
        assert client.outcome == ("committed" if commit else "aborted")
        if commit:
            assert server.broker.nodes["ptx"].depth == 3
        else:  # nothing kept, its links gone: the queue made on first use is deleted
            assert "ptx" not in server.broker.nodes
        if commit:
            taker = _TxnClient(server.url, "ptx", bodies=[], take=3, commit=False)
            _run(taker)
            assert (taker.outcome, taker.received) == ("aborted", ["a", "b", "c"])
            assert server.broker.nodes["ptx"].depth == 3  # the accepts were rolled back
            taker = _TxnClient(server.url, "ptx", bodies=[], take=3, commit=True)
            _run(taker)
            assert taker.outcome == "committed"
            assert "ptx" not in server.broker.nodes  # emptied, its links gone: deleted


def test_transaction_corners() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    s = p.sender("q")
    for i in range(3):
        p.send(s, a.Message(body=b"%d" % i))
    ctl = controller(c)
    r = c.receiver("q", 3)
    one, two, three = c.received(r)
    txn = declare(c, ctl)
    r.settle(one.delivery, a.Accepted(), transaction=txn)  # settled by the consumer
    r.update(two.delivery, a.Accepted(), transaction=txn)
    posted = c.sender("q")
    posted.send(a.Message(body=b"pre").encode(), settled=True, transaction=txn)
    net.pump()
    discharge(c, ctl, txn, fail=False)
    r.settle(three.delivery, a.Released())
    net.pump()
    assert net.broker.nodes["q"].depth == 2  # "2" and "pre" gone... "3" back, "pre" in
    r.flow(5)
    net.pump()
    assert [body(e) for e in c.received(r)] == [b"2", b"pre"]


def test_retired_then_consumer_gone_before_commit() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    p.send(p.sender("q"), a.Message(body=b"x"))
    ctl = controller(c)
    r = c.receiver("q", 1)
    (got,) = c.received(r)
    txn = declare(c, ctl)
    r.update(got.delivery, a.Accepted(), transaction=txn)
    net.pump()
    r.detach()  # the default outcome applies now: the message is back
    net.pump()
    discharge(c, ctl, txn, fail=False)
    assert net.broker.nodes["q"].depth == 1
