"""Interoperability with Apache Qpid Proton (python-qpid-proton) over loopback sockets.

Our engine, driven by :class:`amqp_sansio.adapters.sockets.SocketDriver` in the test's
thread, talks to a Proton ``Container`` run in a thread of its own, in both directions: our
client against a Proton listener, and a Proton client against our server on an accepted
socket. Every test that is not about one role runs in both (the ``role`` fixture says ours).

Each side is scripted by the same link specifications (:class:`Spec`): a link is named for
the test and is "outgoing" when we send on it. In the client role we attach the links and
Proton answers; in the server role Proton attaches them and we answer. Everything Proton
sees is recorded by :class:`ProtonPeer` in its thread and read here once the driver has
seen the matching answer (or, for Proton-side conditions, by polling with a bound).

Proton's reactor is not thread-safe: the test thread only reads the peer's records, and
asks for actions in Proton's thread through an ``EventInjector`` (:meth:`ProtonPeer.call`).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from amqp_sansio.adapters.sockets import SocketDriver
from support.proton_peer import (
    WAIT,
    Interop,
    Spec,
    body_of,
    interop_pairs,
    proton_outcome,
    settled_count,
)

import amqp_sansio as a
import amqp_sansio.engine.amqp10
import amqp_sansio.framing.amqp10

proton = pytest.importorskip(
    "proton", reason="python-qpid-proton (the 'test' extra) is needed for the interop tests"
)
from proton import Delivery, symbol  # noqa: E402

BULK = 10_000
BIG = 10 * 1024 * 1024


@pytest.fixture(params=["client", "server"])
def role(request: pytest.FixtureRequest) -> str:
    """Our engine's role: ``client`` against a Proton listener, ``server`` for a Proton
    client."""
    return str(request.param)


@pytest.fixture
def interop() -> Iterator[Callable[..., Interop]]:
    """Make :class:`Interop` pairs; they are torn down after the test."""
    yield from interop_pairs()


# -- the tests -------------------------------------------------------------------------------


def test_open_begin_attach(role: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("to-proton", True, "in-q"), Spec("from-proton", False, "out-q")])
    pair.start()
    conn, peer = pair.conn, pair.peer
    assert conn.state is a.ConnectionState.OPENED and peer.opened
    assert conn.remote is not None
    if role == "server":
        assert conn.remote.container_id == "proton-client"
    assert pair.app.session is not None and pair.app.session.state is a.SessionState.MAPPED
    sender, receiver = pair.app.links["to-proton"], pair.app.links["from-proton"]
    assert isinstance(sender, a.Sender) and isinstance(receiver, a.Receiver)
    assert sender.remote is not None and receiver.remote is not None
    if role == "client":  # we name the nodes at Proton: it answers with the same termini
        assert sender.remote.target.address == "in-q"
        assert receiver.remote.source.address == "out-q"
    else:  # Proton names our nodes; our answer takes its termini
        assert sender.remote.source.address == sender.source.address == "in-q"
        assert receiver.remote.target.address == receiver.target.address == "out-q"
    pair.wait(lambda: sender.link_credit == 1000)  # Proton's receiver granted its window
    assert peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize("presettled", [False, True], ids=["unsettled", "presettled"])
def test_bulk_we_send(role: str, presettled: bool, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("bulk", True, presettled=presettled)])
    pair.start()
    sender = pair.app.links["bulk"]
    assert sender.snd_settle_mode is (
        a.SenderSettleMode.SETTLED if presettled else a.SenderSettleMode.UNSETTLED
    )
    bodies = [f"message {i}" for i in range(BULK)]
    pair.app.send("bulk", [a.Message(body=b).encode() for b in bodies])
    if presettled:
        pair.wait(lambda: len(pair.peer.received["bulk"]) == BULK)
        assert pair.peer.remote_settled["bulk"] == BULK
        assert pair.app.updates["bulk"] == [] and sender.unsettled == {}
    else:
        pair.wait(lambda: settled_count(pair.app.updates["bulk"]) == BULK)
        assert {type(u.state) for u in pair.app.updates["bulk"]} == {a.Accepted}
        assert sender.unsettled == {} and pair.peer.remote_settled["bulk"] == 0
    assert pair.peer.received["bulk"] == bodies
    assert pair.peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize("presettled", [False, True], ids=["unsettled", "presettled"])
def test_bulk_proton_sends(role: str, presettled: bool, interop: Callable[..., Interop]) -> None:
    bodies = [f"message {i}" for i in range(BULK)]
    pair = interop(role, [Spec("bulk", False, presettled=presettled, proton_bodies=bodies)])
    pair.start()
    pair.wait(lambda: len(pair.app.received["bulk"]) == BULK)
    assert [body_of(m) for m in pair.app.received["bulk"]] == bodies
    receiver = pair.app.links["bulk"]
    assert receiver.unsettled == {}
    if presettled:
        assert pair.app.remote_settled["bulk"] == BULK
    else:
        assert pair.app.remote_settled["bulk"] == 0
        pair.wait(lambda: len(pair.peer.outcomes["bulk"]) == BULK)
        assert all(o["state"] == Delivery.ACCEPTED for o in pair.peer.outcomes["bulk"])
    assert pair.peer.errors == [] and pair.app.errors == []


def test_big_message_each_way(role: str, interop: Callable[..., Interop]) -> None:
    ours = bytes(range(256)) * (BIG // 256)
    theirs = bytes(reversed(ours))
    pair = interop(role, [Spec("up", True), Spec("down", False, proton_bodies=[theirs])])
    pair.start()
    pair.app.send("up", [a.Message(body=ours).encode()])
    pair.wait(lambda: len(pair.app.received["down"]) == 1)
    pair.wait(lambda: settled_count(pair.app.updates["up"]) == 1)
    assert pair.peer.received["up"] == [ours]
    assert body_of(pair.app.received["down"][0]) == theirs
    assert pair.app.updates["up"][-1].state == a.Accepted()
    pair.wait(lambda: len(pair.peer.outcomes["down"]) == 1)
    assert pair.peer.errors == [] and pair.app.errors == []


def test_small_frames_each_way(role: str, interop: Callable[..., Interop]) -> None:
    """Our max-frame-size at 4096: Proton splits its 1 MiB message to fit, as we split ours
    at Proton's."""
    ours = bytes(range(256)) * 4096
    theirs = bytes(reversed(ours))
    specs = [Spec("up", True), Spec("down", False, proton_bodies=[theirs, "after"])]
    pair = interop(role, specs, max_frame_size=4096)
    pair.start()
    assert pair.conn.remote is not None
    pair.app.send("up", [a.Message(body=ours).encode(), a.Message(body="after").encode()])
    pair.wait(lambda: len(pair.app.received["down"]) == 2)
    pair.wait(lambda: settled_count(pair.app.updates["up"]) == 2)
    assert [body_of(m) for m in pair.app.received["down"]] == [theirs, "after"]
    assert pair.peer.received["up"] == [ours, "after"]
    assert pair.peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize("waiting", [0, 3])
def test_we_drain_a_proton_sender(role: str, waiting: int, interop: Callable[..., Interop]) -> None:
    bodies = [f"m{i}" for i in range(waiting)]
    pair = interop(role, [Spec("drain", False, window=0, proton_bodies=bodies)])
    pair.start()
    receiver = pair.app.links["drain"]
    start_count = receiver.delivery_count
    receiver.flow(10)
    receiver.drain_credit()
    pair.wait_for(a.events.DrainCompleted)
    assert receiver.link_credit == 0 and not receiver.drain
    assert a.engine.amqp10.serial.serial_diff(receiver.delivery_count, start_count) == 10
    assert [body_of(m) for m in pair.app.received["drain"]] == bodies
    assert pair.peer.drains_answered["drain"] == 10 - waiting
    assert pair.peer.errors == [] and pair.app.errors == []


def test_proton_drains_our_sender(role: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("drain", True, proton_drain=10)])
    pair.start()
    sender = pair.app.links["drain"]
    pair.wait(lambda: "drain" in pair.peer.drain_done)
    assert pair.peer.drain_done["drain"] == 0
    assert sender.link_credit == 0 and sender.delivery_count == 10
    assert pair.peer.errors == [] and pair.app.errors == []


def test_outcomes_reach_our_sender(role: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("judged", True)], proton_outcome=proton_outcome)
    pair.start()
    pair.app.send("judged", [a.Message(body=b).encode() for b in ("reject", "release", "modify")])
    pair.wait(lambda: settled_count(pair.app.updates["judged"]) == 3)
    # Proton settles them in an order of its own: take them in delivery order.
    states = [u.state for u in sorted(pair.app.updates["judged"], key=lambda u: u.delivery.id)]
    assert states == [
        a.Rejected(
            error=a.Error(
                condition=a.Symbol("amqp:precondition-failed"),
                description="not this one",
                info={a.Symbol("reason"): "test"},
            )
        ),
        a.Released(),
        a.Modified(
            delivery_failed=True,
            undeliverable_here=True,
            message_annotations={a.Symbol("x-opt-note"): "try elsewhere"},
        ),
    ]
    assert pair.app.links["judged"].unsettled == {}
    assert pair.peer.errors == [] and pair.app.errors == []


def our_outcome(message: a.Message) -> Any:
    body = body_of(message)
    if body == "reject":
        return a.Rejected(
            error=a.Error(
                condition=a.Symbol("amqp:precondition-failed"),
                description="not this one",
                info={a.Symbol("reason"): "test"},
            )
        )
    if body == "release":
        return a.Released()
    if body == "modify":
        return a.Modified(
            delivery_failed=True,
            undeliverable_here=True,
            message_annotations={a.Symbol("x-opt-note"): "try elsewhere"},
        )
    return a.Accepted()


def test_outcomes_reach_the_proton_sender(role: str, interop: Callable[..., Interop]) -> None:
    bodies = ["reject", "release", "modify"]
    pair = interop(role, [Spec("judged", False, proton_bodies=bodies)], settle_with=our_outcome)
    pair.start()
    pair.wait(lambda: len(pair.peer.outcomes["judged"]) == 3)
    rejected, released, modified = pair.peer.outcomes["judged"]
    assert rejected["state"] == Delivery.REJECTED and rejected["settled"]
    assert rejected["condition"] == (
        "amqp:precondition-failed",
        "not this one",
        {symbol("reason"): "test"},
    )
    assert released["state"] == Delivery.RELEASED and released["settled"]
    assert modified["state"] == Delivery.MODIFIED and modified["settled"]
    assert modified["failed"] and modified["undeliverable"]
    assert modified["annotations"] == {symbol("x-opt-note"): "try elsewhere"}
    assert pair.peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize(
    ("role", "who"),
    [("client", "both"), ("server", "both"), ("client", "ours"), ("server", "proton")],
)
def test_heartbeats_keep_an_idle_connection_open(
    role: str, who: str, interop: Callable[..., Interop]
) -> None:
    """Idle time-outs of 1 s (on both sides, or only one), and three seconds of silence from
    the applications: the heartbeats alone keep the connection open."""
    idle = 1.0
    ours = idle if who in ("both", "ours") else None
    theirs = idle if who in ("both", "proton") else None
    pair = interop(role, [], idle_timeout=ours, proton_idle_timeout=theirs)
    driver = pair.start()
    assert pair.conn.remote is not None
    # Both advertise half their own time-out (2.4.5 recommends it).
    assert pair.conn.remote.idle_time_out == (500 if theirs else None)
    assert pair.peer.remote_idle_timeout == pytest.approx(idle / 2 if ours else 0.0)
    end = driver.now() + 3 * idle
    pair.wait(lambda: driver.now() >= end)
    assert pair.conn.state is a.ConnectionState.OPENED
    assert not pair.peer.closed and pair.peer.errors == [] and pair.app.errors == []
    assert not any(isinstance(e, a.events.IdleTimedOut) for e in driver.events)
    pair.conn.close()
    pair.wait_for(a.events.ConnectionEnded)


@pytest.mark.parametrize("closer", ["we", "proton"])
def test_clean_close(role: str, closer: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("up", True), Spec("down", False)])
    driver = pair.start()
    peer = pair.peer
    if closer == "we":
        # Detach and end at once: Proton's detaches cross our end and arrive in END_SENT.
        for link in pair.app.links.values():
            link.detach()
        assert pair.app.session is not None
        pair.app.session.end()
        pair.wait_for(a.events.SessionEnded)
        assert sorted(name for name, _ in peer.closed_links) == ["down", "up"]
        assert peer.closed_sessions == [None]
        pair.conn.close()
        pair.wait_for(a.events.ConnectionEnded)
        pair.wait(lambda: peer.closed)
        assert peer.remote_close == [None]
        assert all(condition is None for _, condition in peer.closed_links)
    else:

        def close_all() -> None:
            for link in peer.links.values():
                link.close()
            peer.connection.session_head(0).close()
            peer.connection.close()

        peer.call(close_all)
        pair.wait_for(a.events.ConnectionEnded)
        detached = [e for e in driver.events if isinstance(e, a.events.LinkDetached)]
        assert sorted(e.link.name for e in detached) == ["down", "up"]
        assert all(e.closed and e.error is None for e in detached)
        assert [e.error for e in driver.events if isinstance(e, a.events.SessionEnded)] == [None]
        assert [e.error for e in driver.events if isinstance(e, a.events.ConnectionClosed)] == [
            None
        ]
        pair.wait(lambda: peer.closed)
    assert pair.conn.state is a.ConnectionState.END
    assert all(link.state is a.LinkState.DETACHED for link in pair.app.links.values())
    pair.wait(lambda: driver.eof)  # Proton hangs up once the closes are exchanged
    assert peer.errors == [] and pair.app.errors == []


# -- a peer that stops answering ---------------------------------------------------------------


def _read_until(sock: socket.socket, engine: a.Connection, kind: type, timeout: float) -> Any:
    """Feed what ``sock`` delivers to ``engine`` until it reports ``kind``."""
    end = time.monotonic() + timeout
    while True:
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no {kind.__name__}")
        sock.settimeout(remaining)
        data = sock.recv(65536)
        for event in engine.receive_data(data, time.monotonic()):
            if isinstance(event, kind):
                return event
        if not data:
            raise ConnectionError(f"closed before {kind.__name__}")


def test_a_silent_peer_is_detected_by_our_idle_timeout(role: str) -> None:
    """The peer completes the header and open exchange, then says nothing more: our engine
    gives up after its idle time-out, reports it, and sends a close with
    amqp:resource-limit-exceeded."""
    idle = 0.5
    ours = a.Connection(client=role == "client", idle_timeout=idle)
    # The silent peer is an engine of ours too, used only to speak and read the bytes.
    silent = a.Connection(client=role != "client", container_id="silent")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        if role == "client":
            driver = SocketDriver.connect(ours, ("127.0.0.1", port))
            raw, _ = listener.accept()
            ours.open(now=driver.now())
            driver.flush()
        else:
            raw = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
            driver = SocketDriver.accept(ours, listener)
            silent.open(now=time.monotonic())
            raw.sendall(silent.data_to_send())
            driver.run_until(lambda: ours.state is a.ConnectionState.OPEN_RCVD, WAIT)
            ours.open()
            driver.flush()
    with raw, driver:
        _read_until(raw, silent, a.events.ConnectionOpened, WAIT)
        if role == "client":
            silent.open()
            raw.sendall(silent.data_to_send())
        driver.run_until(lambda: ours.state is a.ConnectionState.OPENED, WAIT)
        opened_at = driver.now()
        driver.run_until(
            lambda: any(isinstance(e, a.events.IdleTimedOut) for e in driver.events), WAIT
        )
        waited = driver.now() - opened_at
        assert idle * 0.9 <= waited < idle + 2.0
        assert ours.state is a.ConnectionState.END
        assert isinstance(driver.events[-1], a.events.ConnectionEnded)
        driver.flush()
        closed = _read_until(raw, silent, a.events.ConnectionClosed, WAIT)
        assert closed.error is not None
        assert closed.error.condition == "amqp:resource-limit-exceeded"


@pytest.mark.alone
def test_the_driver_bounds_its_waits_and_sees_the_peer_hang_up() -> None:
    """The driver's own contract: run_until gives up after its timeout, and reports a
    transport the peer closed (the engine ends)."""
    conn = a.Connection(idle_timeout=None)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        driver = SocketDriver.connect(conn, listener.getsockname())
        raw, _ = listener.accept()
    with driver:
        conn.open(now=driver.now())
        driver.flush()
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            driver.run_until(lambda: False, 0.2)
        assert 0.2 <= time.monotonic() - started < 2.0
        assert raw.recv(8) == a.framing.amqp10.AMQP_HEADER
        raw.close()
        with pytest.raises(ConnectionError):
            driver.run_until(lambda: False, WAIT)
        assert driver.eof and conn.state is a.ConnectionState.END
        assert isinstance(driver.events[-1], a.events.ConnectionEnded)
    assert driver.closed
