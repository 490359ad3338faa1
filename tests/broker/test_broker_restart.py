"""Durable restart (issue 7): ``amqp-sansio broker --store DIR`` is killed (SIGKILL, no clean
stop) and started again on the same directory; the durable messages it had accepted and not
seen accepted are there, in order, and none that a consumer accepted comes back. Publishers
and consumers are our sockets adapter and Qpid Proton's blocking client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess

import amqp_sansio as a

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton.utils import BlockingConnection  # noqa: E402

WAIT = 30.0


class Broker(BrokerProcess):
    """``amqp-sansio broker --store DIR --users FILE``, anonymous clients allowed (SASL
    ANONYMOUS, which Proton's client uses)."""

    def connect(self) -> sockets.Connection:
        return sockets.connect(self.url, timeout=WAIT, sasl_mechanisms=["ANONYMOUS"])


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Any]:
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"anonymous": {"send": ["*"], "receive": ["*"]}}))
    started: list[Broker] = []

    def run() -> Broker:
        broker = Broker("--users", str(users), store=tmp_path / "store", wait=WAIT)
        started.append(broker)
        return broker

    yield run
    for broker in started:
        broker.stop()


def durable(i: int) -> a.Message:
    return a.Message(header=a.Header(durable=True), body=f"m{i}".encode())


def drain(broker: Broker, address: str, expect: int) -> list[str]:
    """Every message at ``address``, accepted, in the order they come."""
    out: list[str] = []
    with broker.connect() as conn:
        receiver = conn.receiver(address, credit=500)
        while len(out) < expect:
            delivery = receiver.receive(timeout=WAIT)
            assert delivery is not None
            out.append(delivery.message.body.value.decode())
            delivery.accept()
        with pytest.raises(TimeoutError):
            receiver.receive(timeout=0.5)  # and nothing more
    return out


def test_killed_broker_keeps_exactly_what_was_not_accepted(start: Any) -> None:
    broker = start()
    assert broker.restored == 0
    with broker.connect() as conn:
        sender = conn.sender("orders")
        trackers = [sender.send(durable(i), wait=False) for i in range(1000)]
        assert all(isinstance(t.outcome(timeout=WAIT), a.Accepted) for t in trackers)
    # Proton takes the first 400 and accepts them; its close is answered after the broker
    # handled every accept (and stored their removal before answering).
    proton_conn = BlockingConnection(broker.url, timeout=WAIT)
    receiver = proton_conn.create_receiver("orders", credit=400)
    for i in range(400):
        assert receiver.receive(timeout=WAIT).body == f"m{i}".encode()
        receiver.accept()
    proton_conn.close()
    # Ours holds 50 unsettled (never accepted) when the broker dies.
    holder = broker.connect()
    held = holder.receiver("orders", credit=50)
    for i in range(400, 450):
        delivery = held.receive(timeout=WAIT)
        assert delivery is not None and delivery.message.body.value == f"m{i}".encode()
    broker.kill()
    holder.close(timeout=0)

    again = start()
    assert again.restored == 600
    assert drain(again, "orders", 600) == [f"m{i}" for i in range(400, 1000)]
    again.kill()
    assert start().restored == 0  # the accepts of the drain were kept too


def test_killed_with_publishes_in_flight_keeps_every_accepted_one(start: Any) -> None:
    broker = start()
    conn = broker.connect()
    sender = conn.sender("inflight")
    trackers = [sender.send(durable(i), wait=False) for i in range(3000)]
    broker.kill()  # while the last ones are still on their way
    accepted = set()
    for i, tracker in enumerate(trackers):
        try:
            if isinstance(tracker.outcome(timeout=WAIT), a.Accepted):
                accepted.add(f"m{i}")
        except Exception:  # the connection is gone: no outcome for the rest
            pass
    conn.close(timeout=0)
    assert len(accepted) >= 1000  # the broker's credit let at least a window through

    again = start()
    got = drain(again, "inflight", again.restored)
    assert accepted <= set(got)  # every publish the broker accepted is there
    assert len(got) == len(set(got))  # once
    assert got == sorted(got, key=lambda body: int(body[1:]))  # in order
