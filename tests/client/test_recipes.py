"""The recipes of the high-level calls (``amqp_sansio.client.recipes``, AMQP 1.0's calls in
``amqp_sansio.client.amqp10.recipes``), carried out by a
runner of their own that moves real bytes between the client's core and a server core in
memory, on a simulated clock: the order of the steps, what the clock and the reconnection
schedule decide, and what each call leaves behind, without sockets or sleeping. (The three
adapters' runners carry out the same recipes over real transports in test_adapters.py and
test_reconnect.py.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.adapter_broker import Broker

import amqp_sansio as a
import amqp_sansio.engine.amqp10
from amqp_sansio.client import amqp10 as client
from amqp_sansio.client import recipes
from amqp_sansio.client.amqp10 import recipes as recipes10
from amqp_sansio.client.ops import (
    ConnectionClosedError,
    LinkRefusedError,
    PeerWithoutSASLError,
    TransactionError,
)
from amqp_sansio.client.recipes import Recipe
from amqp_sansio.client.reconnect import Reconnect

URL = "amqp://127.0.0.1:5672/q"


class Memory:
    """Runs recipes over an in-memory transport to a server core (``sasl`` as ``listen``'s)
    serving ``broker``, on a clock that only moves when nothing else can happen. The first
    ``refuse`` connects fail. Every step is recorded in :attr:`steps`."""

    def __init__(
        self, broker: Broker, *, refuse: int = 0, sasl: bool | None = None, timeout: float = 5.0
    ) -> None:
        self.broker = broker
        self.refuse = refuse
        self.sasl = sasl
        self.timeout = timeout
        self.now = 100.0
        self.steps: list[str] = []
        self.core: client.Core | None = None
        self.server: client.Core | None = None
        self.aborted: list[object] = []

    #: What makes the server's core (the one ``listen`` makes, unless a test changes it).
    server_core = staticmethod(client.server_core)

    # -- the runner ------------------------------------------------------------------------

    def run(self, recipe: Recipe[Any], timeout: float | None = None) -> Any:
        value: object = None
        error: BaseException | None = None
        while True:
            try:
                step = recipe.send(value) if error is None else recipe.throw(error)
            except StopIteration as stop:
                return stop.value
            value = error = None
            try:
                value = self.do(step, self.timeout if timeout is None else timeout)
            except BaseException as exc:
                error = exc

    def do(self, step: recipes.Step, timeout: float) -> object:
        self.steps.append(type(step).__name__.strip("_"))
        if isinstance(step, recipes.Wait):
            self.wait(step.ready, timeout)
        elif step is recipes.NOW:
            return self.now
        elif isinstance(step, recipes.Sleep):
            self.now = max(self.now, step.until)
        elif isinstance(step, recipes.Connect):
            if self.refuse:
                self.refuse -= 1
                raise ConnectionRefusedError("refused")
            options = client.listen_options(
                container_id="memory",
                idle_timeout=None,
                ssl_context=None,
                sasl=self.sasl,
                allow_insecure_auth=False,
            )
            return self.server_core(
                options, on_link=self.broker.on_link, on_connection=None, peer=("mem", 1)
            )
        elif isinstance(step, recipes.Start):
            assert isinstance(step.transport, client.Core)
            self.core, self.server = step.core, step.transport
            return self
        elif isinstance(step, recipes.Abort):
            self.aborted.append(step.connection)
        return None

    def pump(self) -> bool:
        """Move bytes both ways once; whether any moved."""
        assert self.core is not None and self.server is not None
        out = self.core.data_to_send()
        if out:
            self.server.receive_data(out, self.now)
        back = self.server.data_to_send()
        if back:
            self.core.receive_data(back, self.now)
        return bool(out or back)

    def wait(self, ready: Callable[[], bool], timeout: float) -> None:
        end = self.now + timeout
        while not ready():
            assert self.core is not None and self.server is not None
            if self.core.lost:  # a new transport, as the adapters' runners make one
                transport = self.run(recipes.reconnect_attempts(self.core, end, timeout))
                if transport is not None:
                    self.server = transport
                continue
            if self.pump():
                continue
            deadlines = [d for d in (self.core.next_deadline(), self.server.next_deadline()) if d]
            if not deadlines or min(deadlines) > end:
                self.now = end
                raise TimeoutError(f"not done within {timeout} s")
            self.now = min(deadlines)
            self.core.handle_timer(self.now)
            self.server.handle_timer(self.now)

    def drop(self) -> None:
        """The transport fails."""
        assert self.core is not None and self.server is not None
        self.server.receive_data(b"", self.now)
        self.core.transport_failed(ConnectionResetError("reset"), self.now)

    # -- the calls, as the adapters make them ----------------------------------------------

    def connect(self, **kwargs: Any) -> Memory:
        options = client.connect_options(
            container_id="c",
            idle_timeout=kwargs.pop("idle_timeout", None),
            ssl_context=None,
            allow_insecure_auth=False,
            sasl_mechanisms=None,
            sasl=kwargs.pop("sasl", None),
        )
        url = kwargs.pop("url", URL)
        conn: Memory = self.run(recipes10.connect(url, options, timeout=self.timeout, **kwargs))
        return conn

    def sender(self, address: str | None = None) -> client.SenderBase:
        assert self.core is not None
        link = self.run(recipes10.attach_sender(self.core, address, settled=False, name=None))
        return client.SenderBase(self, link, False)

    def receiver(self, address: str | None = None, credit: int = 10) -> client.ReceiverCore:
        assert self.core is not None
        recipe = recipes10.attach_receiver(
            self.core,
            address,
            credit=credit,
            auto_accept=False,
            dynamic=False,
            name=None,
            filters=None,
            selector=None,
        )
        link: client.ReceiverCore = self.run(recipe)
        return link

    def send(self, sender: client.SenderBase, body: object, **kwargs: Any) -> Any:
        wait = kwargs.pop("wait", True)
        transaction = kwargs.pop("transaction", None)
        recipe = recipes10.send(sender, body, transaction, wait, client.TrackerBase)
        return self.run(recipe, **kwargs)


def test_connect_attach_send_receive_close() -> None:
    broker = Broker()
    mem = Memory(broker).connect()
    assert mem.steps == ["Connect", "Now", "Start", "Wait"]
    assert mem.core is not None and mem.core.opened.done()
    sender = mem.sender()
    outcome = mem.send(sender, "hello")
    assert isinstance(outcome, a.Accepted)
    tracker = mem.send(sender, "later", wait=False)
    assert isinstance(tracker, client.TrackerBase)
    mem.steps.clear()
    assert isinstance(mem.run(recipes10.outcome(tracker._op)), a.Accepted)
    assert mem.steps == ["Wait"]  # a wait even when done: an async adapter's cancel point
    receiver = mem.receiver()
    delivery = mem.run(recipes10.receive(receiver))
    assert delivery.message.body.value == "hello"
    delivery.accept()
    mem.steps.clear()
    mem.run(recipes10.drain(receiver))
    assert mem.steps == ["Wait", "Wait"]
    assert mem.run(recipes10.receive(receiver)).message.body.value == "later"
    mem.run(recipes10.close_link(receiver))
    assert receiver.detached.done()
    mem.run(recipes.close_connection(mem.core, None))
    assert mem.core.gone
    mem.steps.clear()
    mem.run(recipes.close_connection(mem.core, None))  # closed already: nothing to do
    assert mem.steps == []


def test_a_send_waits_for_credit_and_a_time_out_sends_nothing() -> None:
    mem = Memory(Broker()).connect()
    sender = mem.sender("hold/q")
    with pytest.raises(TimeoutError, match=r"not done within 0\.5 s"):
        mem.send(sender, "x", timeout=0.5)
    assert sender.unsettled == 0
    assert mem.steps[-1] == "Wait"  # the first wait, for credit: nothing was sent


def test_a_time_out_waiting_for_the_outcome_leaves_the_delivery_tracked() -> None:
    mem = Memory(Broker()).connect()
    sender = mem.sender("unsettled/q")
    with pytest.raises(TimeoutError):
        mem.send(sender, "x", timeout=0.5)
    assert sender.unsettled == 1


def test_a_refused_attach_raises() -> None:
    mem = Memory(Broker()).connect()
    with pytest.raises(LinkRefusedError):
        mem.sender("missing/q")


def test_connect_again_without_sasl_when_the_server_has_none() -> None:
    mem = Memory(Broker(), sasl=False)
    conn = mem.connect()
    assert mem.aborted == [conn]  # the first connection, its open failed
    assert mem.steps.count("Connect") == 2
    assert mem.core is not None and mem.core.opened.done()


def test_without_sasl_is_not_tried_when_sasl_was_asked_for() -> None:
    mem = Memory(Broker(), sasl=False)
    with pytest.raises(PeerWithoutSASLError):
        mem.connect(sasl=True)
    assert mem.steps.count("Connect") == 1


def test_a_time_out_while_connecting_names_it() -> None:
    class Slow(Memory):
        def do(self, step: recipes.Step, timeout: float) -> object:
            if isinstance(step, recipes.Connect):
                raise TimeoutError("timed out")
            return super().do(step, timeout)

    with pytest.raises(TimeoutError, match=r"could not connect within 5\.0 s"):
        Slow(Broker()).connect()


def test_a_reconnecting_connection_makes_its_first_attempts_on_the_schedule() -> None:
    mem = Memory(Broker(), refuse=2)
    policy = Reconnect(initial_delay=0.5, multiplier=2.0, jitter=0.0)
    start = mem.now
    mem.connect(reconnect=policy)
    assert mem.steps.count("Connect") == 3
    assert mem.now == start + 1.0 + 2.0  # at once, then 0.5 * 2 ** failures s after each
    assert mem.core is not None and mem.core.opened.done() and mem.core.reconnects == 0


def test_a_reconnecting_connect_gives_up_after_max_attempts() -> None:
    mem = Memory(Broker(), refuse=5)
    policy = Reconnect(initial_delay=0.1, jitter=0.0, max_attempts=3)
    with pytest.raises(ConnectionClosedError, match="gave up after 3 attempts"):
        mem.connect(reconnect=policy)
    assert mem.steps.count("Connect") == 3


def test_a_reconnecting_connect_is_bounded_by_its_time_out() -> None:
    mem = Memory(Broker(), refuse=100, timeout=2.0)
    policy = Reconnect(initial_delay=1.5, multiplier=1.0, jitter=0.0)
    start = mem.now
    with pytest.raises(TimeoutError, match=r"could not connect within 2\.0 s"):
        mem.connect(reconnect=policy)
    assert mem.now == start + 2.0  # slept until the end, not past it
    assert mem.steps.count("Connect") == 2  # at once, then after 1.5 s


def test_a_lost_connection_is_made_again_inside_a_wait() -> None:
    broker = Broker()
    mem = Memory(broker)
    calls: list[Memory] = []
    mem.connect(reconnect=Reconnect(initial_delay=0.2, jitter=0.0), on_reconnect=calls.append)
    sender = mem.sender("unsettled/q")
    tracker = mem.send(sender, "once", wait=False)
    mem.drop()
    assert mem.core is not None and mem.core.lost
    mem.refuse = 1
    mem.run(recipes10.attach_sender(mem.core, "q", settled=False, name=None))
    assert calls == [mem] and mem.core.reconnects == 1
    assert not tracker.done() and sender.unsettled == 1  # sent again on the new transport


def test_the_end_of_a_transaction_block() -> None:
    mem = Memory(Broker()).connect()
    assert mem.core is not None
    txn = client.TransactionBase(mem, None)
    mem.run(recipes10.declare(txn, mem.core))
    sender = mem.sender()
    mem.send(sender, "in txn", transaction=txn)
    mem.run(recipes10.end_transaction(txn, mem.core, failed=False))
    assert txn.committed is True
    mem.steps.clear()
    mem.run(recipes10.end_transaction(txn, mem.core, failed=False))  # discharged already
    assert mem.steps == []

    rolled = client.TransactionBase(mem, None)
    mem.run(recipes10.declare(rolled, mem.core))
    mem.run(recipes10.end_transaction(rolled, mem.core, failed=True))
    assert rolled.committed is False


def test_a_failing_rollback_does_not_hide_the_block_s_exception() -> None:
    mem = Memory(Broker()).connect()
    assert mem.core is not None
    txn = client.TransactionBase(mem, None)
    mem.run(recipes10.declare(txn, mem.core))
    assert txn.core is not None
    txn.core.discharged.fail(TransactionError("rolled back by the peer"))
    mem.run(recipes10.end_transaction(txn, mem.core, failed=True))  # the block's error stands
    again = client.TransactionBase(mem, None)
    mem.run(recipes10.declare(again, mem.core))
    assert again.core is not None
    again.core.discharged.fail(TransactionError("rolled back by the peer"))
    with pytest.raises(TransactionError):  # the block ended well: the failure is news
        mem.run(recipes10.end_transaction(again, mem.core, failed=False))


class NoTransactions(client.Core):
    """A server core whose peer has no transactions, as RabbitMQ 3.10: it answers each
    attach to the coordinator by ending the session with ``amqp:not-implemented`` (or, with
    ``refuse``, refuses the link: an attach without a target and a detach, core 2.6.3)."""

    coordinator_attaches = 0
    refuse = False

    def _on_event(self, event: a.Event) -> None:
        link = getattr(event, "link", None)
        if isinstance(event, a.events.LinkAttached) and isinstance(
            link, a.engine.amqp10.transactions.CoordinatorLink
        ):
            self.coordinator_attaches += 1
            assert self.coordinator_attaches < 10, "the client attaches again in a loop"
            error = a.Error(condition=a.Symbol("amqp:not-implemented"), description="no txn")
            if self.refuse:
                link.refuse(error)
            else:
                link.session.end(error)
            return
        super()._on_event(event)


@pytest.mark.parametrize("refuse", [False, True], ids=["session-ended", "link-refused"])
def test_a_coordinator_that_refuses_the_control_link_fails_the_declare_at_once(
    refuse: bool,
) -> None:
    """A refusal of the control link is the peer's answer: one attach, then the declare
    raises with the peer's condition (it used to attach again until the time-out)."""

    def no_transactions(options: Any, **kwargs: Any) -> NoTransactions:
        engine, stream = client.server_engine(**options)
        server = NoTransactions(engine, stream=stream, **kwargs)
        server.refuse = refuse
        return server

    mem = Memory(Broker())
    mem.server_core = no_transactions  # type: ignore[method-assign,assignment]
    mem.connect()
    assert isinstance(mem.server, NoTransactions) and mem.core is not None
    start = mem.now
    txn = client.TransactionBase(mem, None)
    with pytest.raises(TransactionError, match="not-implemented") as raised:
        mem.run(recipes10.declare(txn, mem.core))
    assert raised.value.error is not None
    assert raised.value.error.condition == "amqp:not-implemented"
    assert raised.value.error.description == "no txn"
    assert mem.server.coordinator_attaches == 1 and mem.now == start
    # The connection lives on, and a later declare asks the coordinator again.
    mem.receiver("q")
    with pytest.raises(TransactionError, match="not-implemented"):
        mem.run(recipes10.declare(client.TransactionBase(mem, None), mem.core))
    assert mem.server.coordinator_attaches == 2


def test_wait_services_the_connection_and_raises_when_it_ends() -> None:
    mem = Memory(Broker()).connect(idle_timeout=1.0)
    assert mem.core is not None
    start = mem.now
    mem.run(recipes.wait(mem.core), 3.0)  # heartbeats go both ways meanwhile
    assert mem.now == start + 3.0 and not mem.core.gone
    mem.drop()
    with pytest.raises(ConnectionClosedError):
        mem.run(recipes.wait(mem.core), 3.0)


def test_the_steps_say_what_they_are() -> None:
    assert repr(recipes.Wait(recipes.always)).startswith("Wait(<function always")
    assert [repr(s) for s in (recipes.DRAIN, recipes.NOW)] == ["DRAIN", "NOW"]
    assert repr(recipes.Sleep(1.5)) == "Sleep(1.5)"
    assert repr(recipes.Connect("h", 1, None)) == "Connect('h', 1, None)"
    assert repr(recipes.Abort("c")) == "Abort('c')"
    assert repr(recipes.Start(None, "t")).startswith("Start(None")  # type: ignore[arg-type]


# -- the core's branches, through the recipes ------------------------------------------------


class Breaking(Memory):
    """The first ``break_opens`` transports fail as soon as they carry bytes (before the
    open is answered)."""

    break_opens = 0

    def pump(self) -> bool:
        if self.break_opens:
            self.break_opens -= 1
            self.drop()
            return True
        return super().pump()


def test_an_attempt_that_fails_before_the_open_counts_as_failed() -> None:
    mem = Breaking(Broker())
    mem.break_opens = 1
    policy = Reconnect(initial_delay=0.1, jitter=0.0, max_attempts=3)
    mem.connect(reconnect=policy)
    assert mem.steps.count("Connect") == 2
    assert mem.core is not None and mem.core.opened.done()
    lost = Breaking(Broker())
    lost.break_opens = 5
    with pytest.raises(ConnectionClosedError, match="gave up after 2 attempts"):
        lost.connect(reconnect=Reconnect(initial_delay=0.1, jitter=0.0, max_attempts=2))


def test_a_server_without_on_link_refuses_every_link() -> None:
    class NoLinks(Memory):
        def do(self, step: recipes.Step, timeout: float) -> object:
            server = super().do(step, timeout)
            if isinstance(server, client.Core):
                server.on_link = None
            return server

    mem = NoLinks(Broker()).connect()
    with pytest.raises(LinkRefusedError, match="refused the link to q"):
        mem.sender()


def test_a_receiver_s_credit_is_at_least_one() -> None:
    mem = Memory(Broker()).connect()
    with pytest.raises(ValueError, match="at least 1"):
        mem.receiver(credit=0)


def test_a_loss_ends_transactions_and_what_was_closing() -> None:
    mem = Memory(Broker())
    mem.connect(reconnect=Reconnect(initial_delay=0.1, jitter=0.0))
    assert mem.core is not None
    txn = client.TransactionBase(mem, None)
    mem.run(recipes10.declare(txn, mem.core))
    sender = mem.sender("unsettled/q")
    assert isinstance(mem.send(sender, "in txn", transaction=txn), a.Accepted)  # provisional
    closing = mem.receiver("other")
    pending = mem.send(sender, "unanswered", transaction=txn, wait=False)
    closing.close()  # its detach is not answered before the loss
    mem.drop()
    assert mem.core.lost
    with pytest.raises(TransactionError, match="the transaction is over"):
        mem.run(recipes10.outcome(pending._op))  # not sent again: the loss rolled it back
    assert closing.detached.done() and closing.take() is None  # closed, as asked
    with pytest.raises(TransactionError, match="the transaction is over"):
        mem.run(recipes10.end_transaction(txn, mem.core, failed=False))
    lost_link = sender.core
    lost_link.close()  # while lost: nothing to detach, the link is not made again
    assert lost_link.detached.done()
    mem.run(recipes.wait(mem.core), 1.0)  # made again meanwhile
    assert not mem.core.lost and lost_link.link not in mem.core._links


def test_the_peer_ending_the_session_detaches_its_links() -> None:
    mem = Memory(Broker()).connect()
    receiver = mem.receiver("q")
    assert mem.server is not None
    (session,) = mem.server.engine.sessions
    session.end(a.Error(condition=a.Symbol("amqp:internal-error"), description="gone"))
    with pytest.raises(client.LinkDetachedError, match="the session ended"):
        mem.run(recipes10.receive(receiver))


def test_the_peer_breaking_the_protocol_closes_the_connection() -> None:
    mem = Memory(Broker()).connect()
    assert mem.core is not None
    bogus = bytes([0, 0, 0, 12, 2, 0, 0, 0, 0x00, 0x53, 0x99, 0x45])  # an unknown performative
    mem.core.receive_data(bogus, mem.now)
    with pytest.raises(ConnectionClosedError, match="broke the protocol"):
        mem.run(recipes10.attach_sender(mem.core, "q", settled=False, name=None))


def test_drain_with_no_credit_left_is_done_at_once() -> None:
    broker = Broker()
    mem = Memory(broker).connect()
    sender = mem.sender("q")
    mem.send(sender, "one")
    receiver = mem.receiver("q", credit=1)
    mem.run(recipes10.receive(receiver)).accept()
    mem.send(sender, "two")
    mem.run(recipes.wait(mem.core), 0.1)  # it arrives, and waits to be taken: no credit
    assert receiver.link.link_credit == 0
    assert receiver.drain().done()


def test_revoke_takes_back_the_credit_left_and_grants_no_more() -> None:
    """A flow with link-credit 0 (core spec 2.6.7): the broker starts nothing more; what was
    queued stays to be taken; taking it grants nothing (credit 0); a second revoke, with
    no credit left, sends nothing and takes back nothing."""
    broker = Broker()
    mem = Memory(broker).connect()
    sender = mem.sender("q")
    receiver = mem.receiver("q", credit=10)
    mem.send(sender, "one")
    mem.run(recipes.wait(mem.core), 0.1)  # type: ignore[arg-type]
    assert receiver.link.link_credit == 9
    assert receiver.revoke() == 9
    assert (receiver.credit, receiver.link.link_credit) == (0, 0)
    mem.send(sender, "two", wait=False)
    mem.run(recipes.wait(mem.core), 0.1)  # type: ignore[arg-type]
    assert [d.message.body.value for d in receiver.take_many(5)] == ["one"]
    mem.run(recipes.wait(mem.core), 0.1)  # type: ignore[arg-type]
    assert not receiver.queue and receiver.link.link_credit == 0  # "two" waits at the broker
    assert receiver.revoke() == 0


def test_ask_available_is_answered_by_the_sender_s_next_flow() -> None:
    """``ask_available`` sends a flow with ``echo`` (core spec 2.6.7), the credit as it was;
    the sender's answer gives its ``available`` (0 from this test broker, which keeps no
    count); on a link no longer attached it is 0 at once."""
    mem = Memory(Broker()).connect()
    receiver = mem.receiver("q", credit=4)
    op = receiver.ask_available()
    assert not op.done()
    mem.run(recipes.wait(mem.core), 0.1)  # type: ignore[arg-type]
    assert op.done() and op.result() == 0
    assert receiver.link.link_credit == 4
    mem.run(recipes10.close_link(receiver))
    closed = receiver.ask_available()
    assert closed.done() and closed.result() == 0


def test_a_server_link_closed_by_the_server_ends_the_client_s_iteration() -> None:
    links: list[client.ServerLink] = []

    class Keeping(Broker):
        def on_link(self, link: client.ServerLink) -> None:
            links.append(link)
            super().on_link(link)

    mem = Memory(Keeping()).connect()
    receiver = mem.receiver("q")
    (server_link,) = links
    assert server_link.container_id == "c"
    server_link.close()
    assert mem.run(recipes10.receive(receiver)) is None  # a clean close: the loop ends
    assert mem.run(recipes10.receive(receiver)) is None
    sender = mem.sender("p")
    incoming = links[-1]
    assert isinstance(incoming, client.IncomingLink)
    incoming.flow(5)
    mem.run(recipes.wait(mem.core), 0.1)  # type: ignore[arg-type]
    assert sender.core.link.link_credit >= 5
    tracker = mem.send(sender, "x", wait=False)
    assert repr(tracker).startswith("<TrackerBase done=")


def test_a_message_goes_to_the_engine_as_it_is_so_its_body_is_copied_once() -> None:
    """``send`` hands the engine the Message, not its encoding: the transfer frames the
    engine has ready to write are views of the body the application gave (core spec 2.7.5,
    3.2), so the one copy of the body before the socket is the adapter's join of them."""
    mem = Memory(Broker()).connect()
    sender = mem.sender()
    body = bytes(range(256)) * 1024  # 256 KiB: several frames
    recipe = recipes10.send(sender, a.Message(body=body), None, False, client.TrackerBase)
    step = recipe.send(None)
    assert isinstance(step, recipes.Wait) and step.ready()  # credit at hand
    assert recipe.send(None) is recipes.DRAIN  # sent
    assert mem.core is not None and mem.server is not None
    pieces = mem.core.engine.buffers_to_send()
    views = [p for p in pieces if isinstance(p, memoryview)]
    assert views and all(v.obj is body for v in views)
    assert sum(map(len, views)) > len(body) * 0.9  # the body travels as those views
    mem.server.receive_data(b"".join(pieces), mem.now)
    tracker = mem.run(recipe)
    assert isinstance(mem.run(recipes10.outcome(tracker._op)), a.Accepted)
    delivery = mem.run(recipes10.receive(mem.receiver()))
    assert delivery.message.body == a.Data(body)
