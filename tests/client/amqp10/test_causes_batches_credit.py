"""What the high-level API gives an application that reports and paces its own work (the
``amqp-sansio send``/``receive`` commands are one, :mod:`amqp_sansio.adapters.cli`):

* every error an engine event caused carries it (``ClientError.event``): the details of a
  refusal, a failed authentication, a TLS check, a session that ended, a peer without SASL;
* ``Connection.batch()`` (blocking) writes a run of calls once, when a call has to wait or
  the block ends, and not before, but for every ``HELD_CALLS`` calls of a long run (so
  does the asyncio connection within one turn of its loop);
* a receiver's ``credit`` can be lowered as the messages wanted run out, so that the sender
  is never let start more than those;
* a delivery that came with its link's detach (2.6.6) cannot be settled: settling it does
  nothing (it raised the engine's LocalProtocolError);
* a connection keeps none of the engine's events once they are handled.

The peers are our own ``sockets.listen`` applications and ``support/cli_broker.py``."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ssl
import time
from collections.abc import Iterator
from typing import Any

import pytest
from amqp_sansio.adapters import aio, sockets
from support.adapters import ADAPTERS
from support.cli_broker import TestBroker

import amqp_sansio as a
from amqp_sansio.client.lifecycle import HELD_CALLS

WAIT = 20.0


@contextlib.contextmanager
def listener(on_link: Any) -> Iterator[str]:
    """Our ``listen`` serving ``on_link`` in a thread (``support.adapters``): its URL."""
    with ADAPTERS["sockets"].serve(on_link) as port:
        yield f"amqp://127.0.0.1:{port}"


# -- ClientError.event ------------------------------------------------------------------------


def refuse(link: Any) -> None:
    link.refuse(a.Error(condition=a.Symbol("amqp:not-found"), description="nothing here"))


def test_a_refusal_carries_the_peers_detach() -> None:
    with (
        listener(refuse) as url,
        sockets.connect(f"{url}/q", timeout=WAIT) as conn,
        pytest.raises(sockets.LinkRefusedError) as raised,
    ):
        conn.sender()
    event = raised.value.event
    assert isinstance(event, a.events.LinkDetached)
    assert event.error is not None and event.error.condition == "amqp:not-found"
    assert raised.value.error == event.error


def test_the_asyncio_adapter_shares_it() -> None:
    async def attach(url: str) -> None:
        async with aio.connect(url) as conn:
            await conn.receiver()

    with listener(refuse) as url, pytest.raises(aio.LinkRefusedError) as raised:
        asyncio.run(attach(f"{url}/q"))
    assert isinstance(raised.value.event, a.events.LinkDetached)


def end_the_session(link: Any) -> None:
    link.accept()
    link.link.session.end(a.Error(condition=a.Symbol("amqp:internal-error"), description="no"))


def test_a_link_whose_session_ended_says_so() -> None:
    with (
        listener(end_the_session) as url,
        sockets.connect(f"{url}/q", timeout=WAIT) as conn,
        pytest.raises(sockets.LinkDetachedError) as raised,
    ):
        conn.sender().send(b"x")  # the end may come with the attach
    assert not isinstance(raised.value, sockets.LinkRefusedError)
    event = raised.value.event
    assert isinstance(event, a.events.SessionEnded)
    assert event.error is not None and event.error.condition == "amqp:internal-error"


def test_a_failed_authentication_carries_the_servers_description() -> None:
    with (
        TestBroker(users={"alice": "s3cret"}) as broker,
        pytest.raises(sockets.AuthenticationError) as raised,
    ):
        sockets.connect(broker.url("q", user="alice", password="wrong"), timeout=WAIT)
    event = raised.value.event
    assert isinstance(event, a.events.AuthenticationFailed)
    assert event.description and event.description in str(raised.value)


def test_a_peer_without_sasl_carries_the_header_it_sent() -> None:
    with TestBroker(sasl=False) as broker, pytest.raises(sockets.PeerWithoutSASLError) as raised:
        sockets.connect(broker.url("q"), timeout=WAIT, sasl=True)
    event = raised.value.event
    assert isinstance(event, a.events.PeerWithoutSASL)
    assert event.version_name


def test_a_refused_certificate_carries_the_check_that_failed() -> None:
    trustme = pytest.importorskip("trustme")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    trustme.CA().issue_cert("127.0.0.1").configure_cert(context)
    with TestBroker(tls=context) as broker, pytest.raises(sockets.ConnectionClosedError) as raised:
        sockets.connect(broker.url("q"), timeout=WAIT)  # the system's CAs: unknown issuer
    event = raised.value.event
    assert isinstance(event, a.security.tls.TLSFailed)
    assert event.verify_error and "issuer" in event.verify_error


def test_an_error_without_an_event_has_none() -> None:
    assert sockets.ConnectionClosedError("gone").event is None
    assert sockets.LinkDetachedError("gone").event is None


# -- Connection.batch -------------------------------------------------------------------------


def counting() -> tuple[Any, list[bytes]]:
    """An application that accepts every message (keeping its bytes) and a credit of 100."""
    got: list[bytes] = []

    def on_link(link: Any) -> None:
        link.on_delivery = lambda delivery: got.append(delivery.data)

    return on_link, got


def test_a_batch_is_written_when_it_ends() -> None:
    on_link, got = counting()
    with listener(on_link) as url, sockets.connect(f"{url}/q", timeout=WAIT) as conn:
        sender = conn.sender()
        with conn.batch():
            trackers = [sender.send(f"m{i}", wait=False) for i in range(5)]
            time.sleep(0.3)  # what the calls made is still here
            assert got == []
        assert [t.outcome(timeout=WAIT) for t in trackers] == [a.Accepted()] * 5
    assert [a.Message.decode(d).body for d in got] == [a.AmqpValue(f"m{i}") for i in range(5)]


def test_without_a_batch_each_send_is_written_at_once() -> None:
    on_link, got = counting()
    with listener(on_link) as url, sockets.connect(f"{url}/q", timeout=WAIT) as conn:
        sender = conn.sender()
        sender.send("m", wait=False)
        end = time.monotonic() + WAIT
        while not got and time.monotonic() < end:  # no call of ours: the write was made
            time.sleep(0.01)
        assert len(got) == 1


def test_a_batch_writes_when_a_call_waits() -> None:
    """More sends than the peer's credit (100): each wait for credit writes what is
    pending, so the batch never stalls."""
    on_link, got = counting()
    with listener(on_link) as url, sockets.connect(f"{url}/q", timeout=WAIT) as conn:
        sender = conn.sender()
        with conn.batch(), conn.batch():  # nested: written when the outer one ends
            trackers = [sender.send(i, wait=False, timeout=WAIT) for i in range(250)]
            assert len(got) >= 100
        assert all(t.outcome(timeout=WAIT) == a.Accepted() for t in trackers)
    assert len(got) == 250


def _arrived(got: list[bytes], count: int) -> int:
    end = time.monotonic() + WAIT
    while len(got) < count and time.monotonic() < end:
        time.sleep(0.01)
    return len(got)


def test_a_long_batch_is_written_a_hundred_calls_at_a_time() -> None:
    """The peer gets a long run's first hundred while the block goes on."""
    on_link, got = counting()
    with listener(on_link) as url, sockets.connect(f"{url}/q", timeout=WAIT) as conn:
        sender = conn.sender()
        with conn.batch():
            trackers = [sender.send(i, wait=False) for i in range(HELD_CALLS)]
            assert _arrived(got, HELD_CALLS) == HELD_CALLS  # (the block has not ended)
        assert all(t.outcome(timeout=WAIT) == a.Accepted() for t in trackers)


def test_asyncio_writes_a_hundred_calls_of_one_turn_at_once() -> None:
    """A run of sends that never lets the loop turn goes out a hundred at a time."""
    on_link, got = counting()

    async def main(url: str) -> None:
        async with aio.connect(f"{url}/q", timeout=WAIT) as conn:
            sender = await conn.sender()
            trackers = [await sender.send(i, wait=False) for i in range(HELD_CALLS)]
            assert _arrived(got, HELD_CALLS) == HELD_CALLS  # (the loop is held here)
            for tracker in trackers:
                assert await tracker.outcome(timeout=WAIT) == a.Accepted()

    with listener(on_link) as url:
        asyncio.run(main(url))


def _delivery_updates() -> list[a.events.DeliveryUpdated]:
    return [o for o in gc.get_objects() if isinstance(o, a.events.DeliveryUpdated)]


def test_the_connection_keeps_no_event_it_has_handled() -> None:
    """The engine's events are the core's to handle: a long run of sends leaves none of them
    behind (the socket driver's list of events used to keep every one). Counted are the
    events made during the test: what earlier tests of the process left is not this
    connection's."""
    on_link, got = counting()
    earlier = _delivery_updates()  # (kept alive, so that no new one takes an id of theirs)
    seen = {id(o) for o in earlier}
    with listener(on_link) as url, sockets.connect(f"{url}/q", timeout=WAIT) as conn:
        sender = conn.sender()
        with conn.batch():
            trackers = [sender.send(i, wait=False) for i in range(500)]
        assert all(t.outcome(timeout=WAIT) == a.Accepted() for t in trackers)
        # The sender's events only: the listener, in a thread of this process, may still
        # have the settlements of the last sends to handle.
        updates = [
            o for o in _delivery_updates() if id(o) not in seen and isinstance(o.link, a.Sender)
        ]
        assert len(updates) < 10, len(updates)
    assert len(got) == 500
    del earlier


# -- Receiver.credit ----------------------------------------------------------------------


def endless(sent: list[int]) -> Any:
    """An application that sends on every link a peer receives from, as long as it has
    credit."""

    def on_link(link: Any) -> None:
        def on_credit(link: Any) -> None:
            while link.credit > 0:
                sent[0] += 1
                link.send(f"message {sent[0]}")

        link.on_credit = on_credit

    return on_link


def test_lowering_the_credit_bounds_what_the_sender_may_start() -> None:
    sent = [0]
    wanted = 7
    with listener(endless(sent)) as url, sockets.connect(f"{url}/q", timeout=WAIT) as conn:
        receiver = conn.receiver(credit=3)
        assert receiver.credit == 3
        for taken in range(wanted):
            receiver.credit = min(3, wanted - taken - 1)
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None
            delivery.accept()
        conn.wait(0.3)  # nothing more comes
        assert sent[0] == wanted
        with pytest.raises(ValueError):
            receiver.credit = -1


def test_the_credit_is_a_window_otherwise() -> None:
    sent = [0]
    with listener(endless(sent)) as url, sockets.connect(f"{url}/q", timeout=WAIT) as conn:
        receiver = conn.receiver(credit=3)
        for _ in range(7):
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None
            delivery.accept()
        conn.wait(0.3)
        assert sent[0] > 7  # the window is granted again, past the 7 taken


# -- settling on a detached link ----------------------------------------------------------


def send_then_detach(count: int) -> Any:
    """Sends ``count`` messages and detaches the link (closed, no error) in the same bytes."""

    def on_link(link: Any) -> None:
        sent = [0]

        def on_credit(link: Any) -> None:
            while link.credit > 0 and sent[0] < count:
                sent[0] += 1
                link.send(f"message {sent[0]}")
            if sent[0] == count:
                link.close()

        link.on_credit = on_credit

    return on_link


def test_a_delivery_that_came_with_the_detach_cannot_be_settled() -> None:
    with (
        listener(send_then_detach(2)) as url,
        sockets.connect(f"{url}/q", timeout=WAIT) as conn,
    ):
        receiver = conn.receiver()
        deliveries = list(receiver)  # the iteration ends: the link was closed cleanly
        assert len(deliveries) == 2
        for delivery in deliveries:
            delivery.accept()  # does nothing, raises nothing
            assert not delivery.settled
