"""Hostile clients against ``amqp-sansio broker`` started as a user starts it (the command,
no options, a free port: support.broker_process), for the message and queue limits (issue
16, part A; docs/broker.rst "Limits"). Each limit is hit and answered as documented while a
well-behaved client on the same broker goes on sending and receiving; the broker's memory
(VmRSS, VmHWM of /proc/PID/status) is read before, during and after the large cases, and
must stay bounded and come back. Further tests set non-default options, to check the
command's options reach the broker. The same limits in the core: test_broker_limits_queues_core.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from amqp_sansio.adapters import sockets
from amqp_sansio.adapters.broker import run_broker
from support.broker_limits import GoodClient, Sampler, memory
from support.broker_process import BrokerProcess

import amqp_sansio as a

MiB = 1024 * 1024
WAIT = 60.0


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    """``amqp-sansio broker --port 0``: every default as the user meets it."""
    with BrokerProcess() as process:
        yield process


def _refused(attach: Any, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(sockets.LinkRefusedError) as caught:
        attach(*args, **kwargs)
    error = caught.value.error
    assert error is not None
    return str(error.condition)


def _relay_outcome(conn: sockets.Connection, to: str) -> Any:
    relay = conn.sender(None)
    return relay.send(a.Message(properties=a.Properties(to=to), body=b"relayed"), timeout=WAIT)


def _memory_back(pid: int, at_most: int, wait: float = 10.0) -> int:
    """The broker's resident memory once it is down to ``at_most`` bytes (what it held is
    given back as the broker gets to it: a loaded machine may take a while), or as it is
    after ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while (rss := memory(pid)["VmRSS"]) > at_most and time.monotonic() < deadline:
        time.sleep(0.1)
    return rss


def _received_until_quiet(
    receiver: sockets.Receiver, quiet: float = 1.0, first: float | None = None
) -> list[Any]:
    """What comes until nothing has come for ``quiet`` seconds (for the first, ``first``
    seconds if given)."""
    got = []
    while True:
        try:
            delivery = receiver.receive(timeout=first if first and not got else quiet)
        except TimeoutError:
            return got
        assert delivery is not None
        got.append(delivery)


# -- message size --------------------------------------------------------------------------------


def test_a_100_mib_message_is_refused_and_memory_comes_back(broker: BrokerProcess) -> None:
    """Default maximum 16 MiB: a hostile client that ignores the maximum the broker offers
    has its link detached with amqp:link:message-size-exceeded once 16 MiB have come; the
    broker holds no more than the limit and a read meanwhile, and gives it back: after
    each of three such clients its memory is within one maximum of where it began (the
    allocator may keep one freed maximum-size buffer for reuse: glibc raises its mmap
    threshold after freeing one, so the next comes from the heap), and it does not grow
    from one to the next (nothing is kept of a refused message)."""
    pid = broker.proc.pid
    with GoodClient(broker.url, "good-size") as good:
        before = memory(pid)["VmRSS"]
        afters = []
        with Sampler(pid) as during:
            for _ in range(3):
                with sockets.connect(broker.url, timeout=WAIT) as conn:
                    sender = conn.sender("big")
                    link = sender.core.link
                    assert link.remote is not None and link.remote.max_message_size == 16 * MiB
                    # Hostile: it ignores the maximum.
                    link.remote = attrs.evolve(link.remote, max_message_size=None)
                    with pytest.raises(sockets.LinkDetachedError, match="message-size-exceeded"):
                        sender.send(a.Message(body=b"x" * (100 * MiB)), timeout=WAIT)
                    # The connection goes on, and so does the good client.
                    assert isinstance(conn.sender("big").send(a.Message(body=b"ok")), a.Accepted)
                    good.goes_on()
                afters.append(_memory_back(pid, before + 8 * MiB))
    print(
        f"\n100 MiB message refused (three times): broker RSS before {before / MiB:.1f} MiB, "
        f"peak during {during.peak / MiB:.1f} MiB, after each "
        f"{', '.join(f'{x / MiB:.1f}' for x in afters)} MiB"
    )
    assert during.peak - before <= 3 * 16 * MiB  # a small multiple of the maximum
    assert all(after - before <= 16 * MiB + 8 * MiB for after in afters)  # given back
    assert afters[2] - afters[0] <= 8 * MiB  # and nothing accumulates


def test_a_message_under_the_maximum_goes_through(broker: BrokerProcess) -> None:
    """A 15 MiB message (the suite's interop tests send 10 MiB) is taken and delivered;
    memory meanwhile stays within a small multiple of its size and comes back."""
    pid = broker.proc.pid
    body = bytes(range(256)) * (15 * MiB // 256)
    before = memory(pid)["VmRSS"]
    with (
        GoodClient(broker.url, "good-large"),
        Sampler(pid) as during,
        sockets.connect(broker.url, timeout=WAIT) as conn,
    ):
        assert isinstance(conn.sender("large").send(a.Message(body=body)), a.Accepted)
        delivery = conn.receiver("large", credit=1).receive(timeout=WAIT)
        assert delivery is not None and delivery.message.body.value == body  # type: ignore[union-attr]
        delivery.accept()
    time.sleep(0.5)
    after = memory(pid)["VmRSS"]
    print(
        f"\n15 MiB message through: broker RSS before {before / MiB:.1f} MiB, peak during "
        f"{during.peak / MiB:.1f} MiB, after {after / MiB:.1f} MiB"
    )
    assert during.peak - before <= 6 * 16 * MiB
    assert after - before <= 16 * MiB


# -- queue depth and bytes ----------------------------------------------------------------------


def test_the_default_byte_limit_of_a_queue_rejects_the_next_message(
    broker: BrokerProcess,
) -> None:
    """256 MiB per queue: sixteen messages of just under 16 MiB fill it, the seventeenth
    is rejected with amqp:resource-limit-exceeded; once taken, the memory comes back."""
    pid = broker.proc.pid
    body = b"f" * (16 * MiB - 100)
    before = memory(pid)["VmRSS"]
    with (
        GoodClient(broker.url, "good-bytes") as good,
        Sampler(pid) as during,
        sockets.connect(broker.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("full")
        for _ in range(16):
            assert isinstance(sender.send(a.Message(body=body), timeout=WAIT), a.Accepted)
        full = memory(pid)["VmRSS"]
        outcome = sender.send(a.Message(body=body), timeout=WAIT)
        assert isinstance(outcome, a.Rejected)
        assert outcome.error is not None
        assert outcome.error.condition == "amqp:resource-limit-exceeded"
        good.goes_on()
        sender.close()
        receiver = conn.receiver("full", credit=2)
        for _ in range(16):
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None
            delivery.accept()
        receiver.close()
        # Emptied and unlinked: the queue is gone (the relay finds no node there).
        outcome = _relay_outcome(conn, "full")
        assert isinstance(outcome, a.Rejected) and outcome.error is not None
        assert outcome.error.condition == "amqp:not-found"
    time.sleep(0.5)
    after = memory(pid)["VmRSS"]
    print(
        f"\nqueue filled to 256 MiB: broker RSS before {before / MiB:.1f} MiB, full "
        f"{full / MiB:.1f} MiB, peak {during.peak / MiB:.1f} MiB, after {after / MiB:.1f} MiB"
    )
    assert full - before >= 200 * MiB  # (the messages were held)
    assert during.peak - before <= 256 * MiB + 8 * 16 * MiB
    assert after - before <= 64 * MiB


def test_queue_depth_overflow_options(tmp_path: Any) -> None:
    """--max-queue-depth: reject-publish by default; --queue-overflow drop-head with
    --dead-letter: the oldest goes to the dead-letter queue and the new one is taken."""
    with (
        BrokerProcess("--max-queue-depth", "3") as process,
        GoodClient(process.url, "good"),
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("q")
        outcomes = [sender.send(a.Message(body=b"%d" % i)) for i in range(4)]
        assert [type(o) for o in outcomes] == [a.Accepted] * 3 + [a.Rejected]
        assert outcomes[3].error.condition == "amqp:resource-limit-exceeded"
    options = ("--max-queue-depth", "3", "--queue-overflow", "drop-head", "--dead-letter", "dlq")
    with (
        BrokerProcess(*options) as process,
        GoodClient(process.url, "good"),
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("q")
        for i in range(5):
            assert isinstance(sender.send(a.Message(body=b"%d" % i)), a.Accepted)
        taken = []
        for address in ("q", "dlq"):
            for delivery in _received_until_quiet(conn.receiver(address, credit=10), 0.5):
                taken.append(delivery.message.body.value)
                delivery.accept()
        assert taken == [b"2", b"3", b"4", b"0", b"1"]


# -- queues made on first use -------------------------------------------------------------------


def _throw_away(url: str, count: int) -> None:
    """``count`` links to as many addresses, each closed at once; half of them leave a
    message behind that a consumer then takes."""
    with sockets.connect(url, timeout=WAIT) as conn:
        for i in range(count):
            if i % 2:
                conn.receiver(f"throw-away-{i}", credit=1).close()
            else:
                sender = conn.sender(f"throw-away-{i}")
                sender.send(a.Message(body=b"x"))
                sender.close()
                receiver = conn.receiver(f"throw-away-{i}", credit=1)
                delivery = receiver.receive(timeout=WAIT)
                assert delivery is not None
                delivery.accept()
                receiver.close()


def test_2000_throw_away_addresses_leave_no_queue_in_the_server() -> None:
    """In-process (the BrokerServer of ``amqp-sansio broker``, default configuration): the
    broker's nodes, seen from its core, are none once the links are gone."""
    with run_broker() as server:
        _throw_away(server.url, 2000)
        deadline = time.monotonic() + WAIT
        while server.broker.nodes and time.monotonic() < deadline:
            time.sleep(0.01)  # (the last close reaches the broker's thread)
        assert server.broker.nodes == {}


def test_2000_throw_away_addresses_leave_no_queue_in_the_process(broker: BrokerProcess) -> None:
    """The command: no queue is left (the anonymous relay finds none at any of those
    addresses) and its memory is as before, while a good client goes on."""
    pid = broker.proc.pid
    with GoodClient(broker.url, "good-addresses"):
        # Warm-up: what a first run allocates once (the allocator's arenas, the relay's
        # links); 200 left 5.5 MiB of noise under load, 2,000 queues kept cost 7.4 MiB.
        _throw_away(broker.url, 2000)
        before = memory(pid)["VmRSS"]
        _throw_away(broker.url, 2000)
        after = memory(pid)["VmRSS"]
        with sockets.connect(broker.url, timeout=WAIT) as conn:
            for i in (0, 1, 998, 1999):
                outcome = _relay_outcome(conn, f"throw-away-{i}")
                assert isinstance(outcome, a.Rejected) and outcome.error is not None
                assert outcome.error.condition == "amqp:not-found"
    print(f"\n2,000 throw-away addresses: broker RSS {before / MiB:.1f} -> {after / MiB:.1f} MiB")
    assert after - before <= 4 * MiB


def test_queue_expiry_option_deletes_an_unlinked_queue_with_messages() -> None:
    with (
        BrokerProcess("--queue-expiry", "0.5") as process,
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("expiring")
        assert isinstance(sender.send(a.Message(body=b"kept a while")), a.Accepted)
        sender.close()
        assert isinstance(_relay_outcome(conn, "expiring"), a.Accepted)  # still there
        time.sleep(1.5)
        outcome = _relay_outcome(conn, "expiring")
        assert isinstance(outcome, a.Rejected) and outcome.error is not None
        assert outcome.error.condition == "amqp:not-found"
    with (
        BrokerProcess("--no-auto-delete") as process,
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        conn.receiver("kept", credit=1).close()
        assert isinstance(_relay_outcome(conn, "kept"), a.Accepted)


# -- address length ------------------------------------------------------------------------------


def test_a_60_kb_address_is_refused_with_invalid_field(broker: BrokerProcess) -> None:
    pid = broker.proc.pid
    with GoodClient(broker.url, "good-address"), sockets.connect(broker.url, timeout=WAIT) as conn:
        before = memory(pid)["VmRSS"]
        for i in range(20):
            address = f"{i}-" + "a" * 60_000
            assert _refused(conn.receiver, address, credit=1) == "amqp:invalid-field"
            assert _refused(conn.sender, address) == "amqp:invalid-field"
        after = memory(pid)["VmRSS"]
        assert isinstance(conn.sender("b" * 1024).send(a.Message(body=b"at the limit")), a.Accepted)
    assert after - before <= 4 * MiB  # nothing kept of them
    with (
        BrokerProcess("--max-address-length", "16") as process,
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        assert _refused(conn.sender, "a" * 17) == "amqp:invalid-field"
        conn.sender("a" * 16).close()
    with (
        BrokerProcess("--max-address-length", "none") as process,
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        conn.receiver("a" * 60_000, credit=1).close()


# -- unsettled deliveries per link ----------------------------------------------------------------


def test_a_consumer_never_settling_gets_the_default_maximum(broker: BrokerProcess) -> None:
    """100,000 unsettled deliveries per link: a consumer that grants more credit and settles
    nothing gets 100,000, and one more for each it settles; the good client goes on."""
    count = 100_010
    with (
        GoodClient(broker.url, "good-unsettled") as good,
        sockets.connect(broker.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("hoard", settled=True)
        for i in range(count):
            sender.send(a.Message(body=b"%d" % i), wait=False)
        receiver = conn.receiver("hoard", credit=count)
        got = _received_until_quiet(receiver, first=WAIT)  # (once the publishing is in)
        assert len(got) == 100_000
        good.goes_on()
        for delivery in got[:7]:
            delivery.accept()
        assert len(_received_until_quiet(receiver)) == 7
    with (
        BrokerProcess("--max-unsettled-per-link", "3") as process,
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("q")
        for i in range(5):
            sender.send(a.Message(body=b"%d" % i))
        receiver = conn.receiver("q", credit=10)
        assert len(_received_until_quiet(receiver, 0.5)) == 3


def test_the_message_size_option() -> None:
    with (
        BrokerProcess("--max-message-size", "64KiB") as process,
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("q")
        assert sender.core.link.remote.max_message_size == 64 * 1024  # type: ignore[union-attr]
    with (
        BrokerProcess("--max-message-size", "none") as process,
        sockets.connect(process.url, timeout=WAIT) as conn,
    ):
        sender = conn.sender("q")
        assert sender.core.link.remote.max_message_size is None  # type: ignore[union-attr]
