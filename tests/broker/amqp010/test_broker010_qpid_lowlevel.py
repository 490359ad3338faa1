"""qpid-python's low-level 0-10 client (``qpid.connection.Connection(sock)``,
``connection.session(name)`` and the commands as methods of the session) against our broker
started as a user starts it (``amqp-sansio broker``): queues declared and queried, messages
transferred, subscribed to under credit, accepted; exchanges declared, queried, bound and
asked about (``exchange.bound``), each result read field by field; transactions committed
and rolled back (a rollback un-does transfers and accepts); release, reject, accept-mode
none, browsing then ``message.acquire``, window flow mode, purge, delete, alternate
exchanges and refusals with their codes; a session detached and resumed by name within its
timeout, nothing lost, and one not kept; 10 MiB messages across many frames, both ways."""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess
from support.qpid_peer import qpid_module

#: qpid-python calls ``threading.currentThread``, deprecated since Python 3.10.
pytestmark = pytest.mark.filterwarnings("ignore:currentThread:DeprecationWarning")

WAIT = 10.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    qpid_module("qpid.connection")  # (skips, saying why, without the peer)
    with BrokerProcess() as process:
        yield process


class Qpid:
    """A qpid-python connection to the broker, closed at the end."""

    def __init__(self, broker: BrokerProcess) -> None:
        self.connection = qpid_module("qpid.connection")
        self.datatypes = qpid_module("qpid.datatypes")
        self.session_module = qpid_module("qpid.session")
        self.sock = socket.create_connection(("127.0.0.1", broker.port), timeout=WAIT)
        self.sock.settimeout(None)
        self.conn = self.connection.Connection(self.sock, username="guest", password="guest")
        #: session.timeout answers (qpid's delegate has no handler of its own for them)
        self.timeouts: list[int] = []
        self.conn.delegate.session_timeout = lambda ch, t: self.timeouts.append(t.timeout)
        self.conn.start(WAIT)

    def session(self, name: bytes) -> Any:
        return self.conn.session(name, timeout=WAIT)

    def message(self, ssn: Any, body: bytes, **properties: Any) -> Any:
        routing_key = properties.pop("routing_key", None)
        dp = ssn.delivery_properties(routing_key=routing_key)
        if not properties:
            return self.datatypes.Message(dp, body)
        return self.datatypes.Message(dp, ssn.message_properties(**properties), body)

    def put(self, ssn: Any, body: bytes, queue: str) -> None:
        """``message.transfer`` of ``body`` to ``queue`` through the default exchange."""
        ssn.message_transfer(destination="", message=self.message(ssn, body, routing_key=queue))

    def ids(self, *messages: Any) -> Any:
        return self.datatypes.RangedSet(*[m.id for m in messages])

    def close(self) -> None:
        self.conn.close(WAIT)

    def __enter__(self) -> Qpid:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def subscribe(ssn: Any, queue: str, destination: str, credit: int) -> Any:
    """``message.subscribe`` (explicit accept, pre-acquired) in credit mode (the default is
    window mode: 0-10 spec, ``message.set-flow-mode``) and ``credit`` messages of credit
    (bytes unlimited): the destination's incoming queue."""
    incoming = ssn.incoming(destination)
    ssn.message_subscribe(queue=queue, destination=destination, accept_mode=0, acquire_mode=0)
    ssn.message_set_flow_mode(destination=destination, flow_mode=ssn.flow_mode.credit)
    ssn.message_flow(destination=destination, unit=ssn.credit_unit.byte, value=0xFFFFFFFF)
    ssn.message_flow(destination=destination, unit=ssn.credit_unit.message, value=credit)
    return incoming


def depth(qpid: Qpid, queue: str) -> int:
    """The queue's message count, asked on a session of its own."""
    ssn = qpid.session(b"depth-" + os.urandom(4).hex().encode())
    try:
        count: int = ssn.queue_query(queue=queue).message_count
        return count
    finally:
        ssn.close(WAIT)


def drain(qpid: Qpid, queue: str, *, wait: float = 1.0) -> list[bytes]:
    """Every message on ``queue`` (accepted), on a session of its own."""
    empty = qpid_module("qpid.queue").Empty
    ssn = qpid.session(b"drain-" + os.urandom(4).hex().encode())
    incoming = subscribe(ssn, queue, "drain", 1000)
    got = []
    try:
        while True:
            got.append(incoming.get(timeout=wait))
    except empty:
        pass
    if got:
        ssn.message_accept(qpid.ids(*got))
    ssn.close(WAIT)
    return [m.body for m in got]


def test_transfer_subscribe_credit_accept(broker: BrokerProcess) -> None:
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"basic")
        ssn.queue_declare(queue="ll.basic")
        for n in range(3):
            ssn.message_transfer(
                destination="",
                message=qpid.message(
                    ssn, b"m%d" % n, routing_key="ll.basic", content_type="text/plain"
                ),
            )
        assert ssn.queue_query(queue="ll.basic").message_count == 3
        incoming = subscribe(ssn, "ll.basic", "t", 2)
        got = [incoming.get(timeout=WAIT) for _ in range(2)]
        assert [m.body for m in got] == [b"m0", b"m1"]
        dp = got[0].get("delivery_properties")
        mp = got[0].get("message_properties")
        assert dp.routing_key == "ll.basic" and not dp.redelivered
        assert mp.content_type == "text/plain"
        with pytest.raises(qpid_module("qpid.queue").Empty):
            incoming.get(timeout=0.3)  # two messages of credit: no third
        result = ssn.queue_query(queue="ll.basic")
        assert result.subscriber_count == 1
        ssn.message_accept(qpid.ids(*got))
        ssn.message_flow(destination="t", unit=ssn.credit_unit.message, value=1)
        third = incoming.get(timeout=WAIT)
        assert third.body == b"m2"
        ssn.message_cancel(destination="t")
        ssn.close(WAIT)  # m2 not accepted: back on the queue, marked redelivered
        ssn = qpid.session(b"basic-2")
        incoming = subscribe(ssn, "ll.basic", "again", 5)
        again = incoming.get(timeout=WAIT)
        assert again.body == b"m2" and again.get("delivery_properties").redelivered
        ssn.message_accept(qpid.ids(again))
        ssn.close(WAIT)
        assert depth(qpid, "ll.basic") == 0


def test_queue_query_field_by_field(broker: BrokerProcess) -> None:
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"query")
        ssn.queue_declare(queue="ll.plain")
        ssn.queue_declare(queue="ll.flags", durable=True, auto_delete=True)
        qpid.put(ssn, b"x", "ll.plain")
        plain = ssn.queue_query(queue="ll.plain")
        assert plain.queue == "ll.plain"
        assert plain.alternate_exchange in (None, "")
        assert (plain.durable, plain.exclusive, plain.auto_delete) == (False, False, False)
        assert not plain.arguments
        assert (plain.message_count, plain.subscriber_count) == (1, 0)
        flags = ssn.queue_query(queue="ll.flags")
        assert flags.queue == "ll.flags"
        assert (flags.durable, flags.exclusive, flags.auto_delete) == (True, False, True)
        assert (flags.message_count, flags.subscriber_count) == (0, 0)
        ssn.close(WAIT)
        other = qpid.session(b"exclusive")
        other.queue_declare(queue="ll.mine", exclusive=True)
        mine = other.queue_query(queue="ll.mine")
        assert (mine.queue, mine.exclusive) == ("ll.mine", True)
        other.close(WAIT)


def test_passive_declare_of_a_missing_queue_is_not_found(broker: BrokerProcess) -> None:
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"refused")
        with pytest.raises(qpid.session_module.SessionException) as refused:
            ssn.queue_declare(queue="ll.missing", passive=True)
        assert refused.value.args[0].error_code == 404
        ok = qpid.session(b"after-refusal")  # the connection goes on
        ok.queue_declare(queue="ll.after")
        ok.close(WAIT)


def test_exchanges_declared_queried_bound(broker: BrokerProcess) -> None:
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"exchanges")
        ssn.exchange_declare(exchange="ll.topic", type="topic")
        ssn.queue_declare(queue="ll.bound")
        ssn.queue_declare(queue="ll.unbound")
        ssn.exchange_bind(exchange="ll.topic", queue="ll.bound", binding_key="a.*")

        query = ssn.exchange_query(name="ll.topic")
        assert (query.type, query.durable, query.not_found) == ("topic", False, False)
        assert ssn.exchange_query(name="amq.direct").type == "direct"
        assert ssn.exchange_query(name="amq.fanout").type == "fanout"
        assert ssn.exchange_query(name="ll.nowhere").not_found

        def bound(**args: Any) -> tuple[bool, ...]:
            r = ssn.exchange_bound(**args)
            return (
                bool(r.exchange_not_found),
                bool(r.queue_not_found),
                bool(r.queue_not_matched),
                bool(r.key_not_matched),
                bool(r.args_not_matched),
            )

        nothing = (False, False, False, False, False)
        assert bound(exchange="ll.topic", queue="ll.bound", binding_key="a.*") == nothing
        assert bound(exchange="ll.topic", queue="ll.bound") == nothing
        assert bound(exchange="ll.topic", queue="ll.bound", binding_key="b.*") == (
            False, False, False, True, False,
        )  # fmt: skip
        # not bound to that queue (whether the key counts bindings to other queues, the
        # standard leaves open: only queue-not-matched is read)
        unbound = bound(exchange="ll.topic", queue="ll.unbound", binding_key="a.*")
        assert unbound[:3] == (False, False, True) and not unbound[4]
        assert bound(exchange="ll.topic", queue="ll.nosuch")[:2] == (False, True)
        assert bound(exchange="ll.nosuch", queue="ll.bound")[:2] == (True, False)

        for key in ("a.b", "b.c", "a.x"):
            msg = qpid.message(ssn, key.encode(), routing_key=key)
            ssn.message_transfer(destination="ll.topic", message=msg)
        assert ssn.queue_query(queue="ll.bound").message_count == 2

        ssn.exchange_unbind(exchange="ll.topic", queue="ll.bound", binding_key="a.*")
        assert bound(exchange="ll.topic", queue="ll.bound", binding_key="a.*")[2:4] == (True, True)
        ssn.exchange_delete(exchange="ll.topic")
        assert ssn.exchange_query(name="ll.topic").not_found
        ssn.close(WAIT)
        assert drain(qpid, "ll.bound") == [b"a.b", b"a.x"]


def test_transactions_commit_and_rollback(broker: BrokerProcess) -> None:
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"tx")
        ssn.queue_declare(queue="ll.tx")
        ssn.tx_select()
        for body in (b"rolled-1", b"rolled-2"):
            qpid.put(ssn, body, "ll.tx")
        assert ssn.queue_query(queue="ll.tx").message_count == 0  # not yet committed
        ssn.tx_rollback()
        assert ssn.queue_query(queue="ll.tx").message_count == 0  # un-done
        qpid.put(ssn, b"kept", "ll.tx")
        ssn.tx_commit()
        assert ssn.queue_query(queue="ll.tx").message_count == 1

        # an accept rolled back: the message is not consumed
        incoming = subscribe(ssn, "ll.tx", "tx", 1)
        got = incoming.get(timeout=WAIT)
        assert got.body == b"kept"
        ssn.message_accept(qpid.ids(got))
        ssn.tx_rollback()
        ssn.message_cancel(destination="tx")
        ssn.close(WAIT)  # the message, acquired and not accepted, goes back
        assert depth(qpid, "ll.tx") == 1

        # an accept committed: consumed
        ssn = qpid.session(b"tx-2")
        ssn.tx_select()
        incoming = subscribe(ssn, "ll.tx", "tx", 1)
        got = incoming.get(timeout=WAIT)
        assert got.body == b"kept" and got.get("delivery_properties").redelivered
        ssn.message_accept(qpid.ids(got))
        ssn.tx_commit()
        ssn.message_cancel(destination="tx")
        ssn.close(WAIT)
        assert depth(qpid, "ll.tx") == 0


def test_a_session_detached_and_resumed_loses_nothing(broker: BrokerProcess) -> None:
    """A session asks the broker to keep it 60 s once detached (``session.request-timeout``),
    receives two messages under its subscription, completes them (``session.completed``)
    and detaches without accepting them. Attached again by name on another connection, it
    finds its subscription (given credit again: none is kept while detached); the two
    messages it had not accepted went back to the head of the queue when it detached
    (docs/amqp010.rst, "Broker": the client that resumes cannot know which it had), so
    they come first, redelivered, then the others."""
    name = b"resumable"
    with Qpid(broker) as first:
        ssn = first.session(name)
        ssn.channel.session_request_timeout(timeout=60)
        ssn.queue_declare(queue="ll.resume")
        for n in range(4):
            first.put(ssn, b"r%d" % n, "ll.resume")
        incoming = subscribe(ssn, "ll.resume", "d", 2)
        got = [incoming.get(timeout=WAIT) for _ in range(2)]
        assert [m.body for m in got] == [b"r0", b"r1"]
        assert first.timeouts == [60]
        for m in got:
            ssn.receiver.completed(m)
        ssn.channel.session_completed(ssn.receiver._completed)
        ssn.execution_sync()
        ssn.channel.session_detach(name)
    with Qpid(broker) as second:
        ssn = second.session(name)  # the same name: the broker's session, resumed
        incoming = ssn.incoming("d")  # the subscription is still there
        ssn.message_flow(destination="d", unit=ssn.credit_unit.message, value=4)
        after = [incoming.get(timeout=WAIT) for _ in range(4)]
        assert [m.body for m in after] == [b"r0", b"r1", b"r2", b"r3"]
        redelivered = [bool(m.get("delivery_properties").redelivered) for m in after]
        assert redelivered == [True, True, False, False]
        ssn.message_accept(second.ids(*after))
        ssn.execution_sync()
        ssn.close(WAIT)
        assert depth(second, "ll.resume") == 0


def test_a_session_not_kept_releases_its_messages(broker: BrokerProcess) -> None:
    """The same without ``request-timeout``: the detached session is gone, its acquired
    messages back on the queue; the name attaches afresh, without the subscription."""
    name = b"not-kept"
    with Qpid(broker) as first:
        ssn = first.session(name)
        ssn.queue_declare(queue="ll.notkept")
        for n in range(2):
            msg = first.message(ssn, b"n%d" % n, routing_key="ll.notkept")
            ssn.message_transfer(destination="", message=msg)
        incoming = subscribe(ssn, "ll.notkept", "d", 2)
        got = [incoming.get(timeout=WAIT) for _ in range(2)]
        ssn.close(WAIT)
        assert first.timeouts == []
    with Qpid(broker) as second:
        ssn = second.session(name)
        with pytest.raises(second.session_module.SessionException) as gone:
            ssn.message_flow(destination="d", unit=ssn.credit_unit.message, value=1)
        assert gone.value.args[0].error_code == 404  # no subscription "d" now
        assert depth(second, "ll.notkept") == 2
        assert drain(second, "ll.notkept") == [m.body for m in got]


BIG = 10 * 1024 * 1024


def _big(seed: bytes) -> bytes:
    block = hashlib.sha256(seed).digest() * 2048  # 64 KiB
    return (block * (BIG // len(block) + 1))[:BIG]


def test_ten_mib_messages_both_ways(broker: BrokerProcess) -> None:
    """10 MiB bodies across many frames (each at most 64 KiB): qpid to the broker to qpid,
    and qpid to our 0-10 client and back; each body compared whole."""
    one, two = _big(b"one"), _big(b"two")
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"big")
        ssn.queue_declare(queue="ll.big")
        ssn.queue_declare(queue="ll.big.back")
        qpid.put(ssn, one, "ll.big")
        incoming = subscribe(ssn, "ll.big", "big", 1)
        got = incoming.get(timeout=30)
        assert len(got.body) == BIG and got.body == one
        ssn.message_accept(qpid.ids(got))
        ssn.message_cancel(destination="big")
        qpid.put(ssn, two, "ll.big")

        with (
            sockets.connect(broker.url, protocol="0-10", timeout=30) as ours,
            ours.session("big-ours") as ours_ssn,
        ):
            ours_ssn.subscribe("ll.big", credit=1)
            d = ours_ssn.receive("ll.big", timeout=30)
            assert len(d.body) == BIG and d.body == two
            ours_ssn.accept(d)
            ours_ssn.send(one[::-1], routing_key="ll.big.back", timeout=30)

        incoming = subscribe(ssn, "ll.big.back", "back", 1)
        back = incoming.get(timeout=30)
        assert len(back.body) == BIG and back.body == one[::-1]
        ssn.message_accept(qpid.ids(back))
        ssn.close(WAIT)


def test_release_reject_and_no_accept(broker: BrokerProcess) -> None:
    """``message.release`` puts a message back (redelivered), ``message.reject`` drops it;
    with ``accept-mode`` none a message is gone once sent."""
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"dispositions")
        ssn.queue_declare(queue="ll.disp")
        for body in (b"keep", b"drop"):
            qpid.put(ssn, body, "ll.disp")
        incoming = subscribe(ssn, "ll.disp", "d", 2)
        keep, drop = (incoming.get(timeout=WAIT) for _ in range(2))
        assert (keep.body, drop.body) == (b"keep", b"drop")
        ssn.message_cancel(destination="d")
        ssn.message_release(qpid.ids(keep), set_redelivered=True)
        ssn.message_reject(qpid.ids(drop), code=0, text="unwanted")
        assert ssn.queue_query(queue="ll.disp").message_count == 1
        incoming = subscribe(ssn, "ll.disp", "again", 5)
        again = incoming.get(timeout=WAIT)
        assert again.body == b"keep" and again.get("delivery_properties").redelivered
        ssn.message_accept(qpid.ids(again))
        ssn.message_cancel(destination="again")
        ssn.close(WAIT)
        assert depth(qpid, "ll.disp") == 0

        ssn = qpid.session(b"no-accept")
        qpid.put(ssn, b"unacked", "ll.disp")
        auto = ssn.incoming("n")
        ssn.message_subscribe(queue="ll.disp", destination="n", accept_mode=1, acquire_mode=0)
        ssn.message_flow(destination="n", unit=ssn.credit_unit.byte, value=0xFFFFFFFF)
        ssn.message_flow(destination="n", unit=ssn.credit_unit.message, value=5)
        assert auto.get(timeout=WAIT).body == b"unacked"
        ssn.message_cancel(destination="n")
        ssn.close(WAIT)  # nothing to accept: it is gone
        assert depth(qpid, "ll.disp") == 0


def test_browse_then_acquire(broker: BrokerProcess) -> None:
    """A subscription that does not acquire (``acquire-mode`` not-acquired: qpid.messaging's
    ``{mode: browse}``) sees the messages, which stay on the queue until
    ``message.acquire`` takes them."""
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"browse")
        ssn.queue_declare(queue="ll.browse")
        qpid.put(ssn, b"seen", "ll.browse")
        browse = ssn.incoming("b")
        ssn.message_subscribe(queue="ll.browse", destination="b", accept_mode=0, acquire_mode=1)
        ssn.message_flow(destination="b", unit=ssn.credit_unit.byte, value=0xFFFFFFFF)
        ssn.message_flow(destination="b", unit=ssn.credit_unit.message, value=5)
        seen = browse.get(timeout=WAIT)
        assert seen.body == b"seen"
        ssn.message_cancel(destination="b")
        assert ssn.queue_query(queue="ll.browse").message_count == 1  # still there
        acquired = ssn.message_acquire(qpid.ids(seen))
        assert str(acquired.transfers) == str(qpid.ids(seen))  # (its ranges have no ==)
        ssn.message_accept(qpid.ids(seen))
        ssn.close(WAIT)
        assert depth(qpid, "ll.browse") == 0


def test_window_flow_mode_gives_credit_back_on_completion(broker: BrokerProcess) -> None:
    """``message.set-flow-mode`` window: the credit a transfer used comes back when the
    subscriber completes it (``session.completed``), not before."""
    empty = qpid_module("qpid.queue").Empty
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"window")
        ssn.queue_declare(queue="ll.window")
        for n in range(4):
            qpid.put(ssn, b"w%d" % n, "ll.window")
        incoming = ssn.incoming("w")
        ssn.message_subscribe(queue="ll.window", destination="w", accept_mode=1, acquire_mode=0)
        ssn.message_set_flow_mode(destination="w", flow_mode=ssn.flow_mode.window)
        ssn.message_flow(destination="w", unit=ssn.credit_unit.byte, value=0xFFFFFFFF)
        ssn.message_flow(destination="w", unit=ssn.credit_unit.message, value=2)
        first = [incoming.get(timeout=WAIT) for _ in range(2)]
        assert [m.body for m in first] == [b"w0", b"w1"]
        with pytest.raises(empty):
            incoming.get(timeout=0.3)  # the window is full
        ssn.receiver.completed(first[0])
        ssn.channel.session_completed(ssn.receiver._completed)
        assert incoming.get(timeout=WAIT).body == b"w2"  # one completed: one more
        with pytest.raises(empty):
            incoming.get(timeout=0.3)
        ssn.close(WAIT)


def test_queue_purge_delete_and_refusals(broker: BrokerProcess) -> None:
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"admin")
        ssn.queue_declare(queue="ll.admin")
        for n in range(3):
            qpid.put(ssn, b"p%d" % n, "ll.admin")
        ssn.queue_purge(queue="ll.admin")
        assert ssn.queue_query(queue="ll.admin").message_count == 0
        qpid.put(ssn, b"left", "ll.admin")
        with pytest.raises(qpid.session_module.SessionException) as refused:
            ssn.queue_delete(queue="ll.admin", if_empty=True)
        assert refused.value.args[0].error_code == 406  # precondition-failed
        ssn = qpid.session(b"admin-2")
        ssn.queue_delete(queue="ll.admin")
        with pytest.raises(qpid.session_module.SessionException) as gone:
            ssn.queue_declare(queue="ll.admin", passive=True)
        assert gone.value.args[0].error_code == 404
        ssn = qpid.session(b"admin-3")
        with pytest.raises(qpid.session_module.SessionException) as missing:
            ssn.exchange_declare(exchange="ll.nope", type="direct", passive=True)
        assert missing.value.args[0].error_code == 404
        ssn = qpid.session(b"admin-4")
        with pytest.raises(qpid.session_module.SessionException) as dtx:
            ssn.dtx_select()
        assert dtx.value.args[0].error_code == 540  # not-implemented


def test_alternate_exchanges(broker: BrokerProcess) -> None:
    """A queue's ``alternate-exchange`` takes what is rejected from it; an exchange's
    takes what it routes nowhere (0-10 spec, ``message.reject`` rule alternate-exchange,
    ``exchange.declare`` field alternate-exchange); ``queue.query`` gives the queue's back
    in its own field."""
    with Qpid(broker) as qpid:
        ssn = qpid.session(b"alternates")
        ssn.exchange_declare(exchange="ll.alt", type="fanout")
        ssn.queue_declare(queue="ll.dead")
        ssn.exchange_bind(exchange="ll.alt", queue="ll.dead", binding_key="")
        ssn.queue_declare(queue="ll.withalt", alternate_exchange="ll.alt")
        ssn.exchange_declare(exchange="ll.x", type="direct", alternate_exchange="ll.alt")

        qpid.put(ssn, b"rejected", "ll.withalt")
        incoming = subscribe(ssn, "ll.withalt", "r", 1)
        got = incoming.get(timeout=WAIT)
        ssn.message_reject(qpid.ids(got), code=0, text="no")
        ssn.message_cancel(destination="r")
        msg = qpid.message(ssn, b"unroutable", routing_key="nobody")
        ssn.message_transfer(destination="ll.x", message=msg)
        ssn.close(WAIT)
        assert drain(qpid, "ll.dead") == [b"rejected", b"unroutable"]

        ssn = qpid.session(b"alternates-query")
        assert ssn.queue_query(queue="ll.withalt").alternate_exchange == "ll.alt"
        ssn.close(WAIT)
