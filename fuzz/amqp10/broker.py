"""The broker core's AMQP 1.0 front door: the targets ``broker-10`` and
``broker-10-opened``, and their seeds (the driver and the invariant they share with the
0-9-1 targets are in ``fuzz/broker_core.py``).

* ``broker-10``: the data from scratch to ``Broker.accept`` (SASL or AMQP header first);
* ``broker-10-opened``: after a 1.0 client's header and open.

An open connection that ends while the data comes must have the ``close`` performative on
the wire (stage ``no-close``). The seeds are a 1.0 client engine's writes to the broker
core (:func:`_client_10`).
"""

from __future__ import annotations

from collections.abc import Sequence

import amqp_sansio as amqp
from amqp_sansio.broker import Broker, BrokerConfig

from ..broker_core import Driver, chunks, outcome_label
from ..common import InvariantViolation

__all__ = ["fuzz_broker_10", "fuzz_broker_10_opened", "seeds"]

#: The 1.0 close performative's descriptor (core spec 2.7.9: 0x00 0x53 0x18).
_CLOSE_10 = b"\x00\x53\x18"


def _fuzz_10(target: str, data: bytes, prefix: Sequence[bytes]) -> str:
    driver = Driver("1.0")
    for step in prefix:
        driver.feed(step)
    conn = driver.conn
    before = len(driver.out)
    for chunk in chunks(data):
        if conn.ended:
            break
        driver.feed(chunk)
    opened, ended = conn.record.opened, conn.ended
    if opened and ended and _CLOSE_10 not in driver.out[before:]:
        raise InvariantViolation(target, "no-close", "the open connection ended, no close sent")
    driver.finish()
    if not conn.ended:
        raise InvariantViolation(target, "not-ended", "the transport ended, the connection not")
    return outcome_label(conn, opened, ended)


def _client_10() -> list[bytes]:
    """A 1.0 client engine's writes to the broker core: header and open, a begin, a sender
    and a receiver on queue ``q``, a message, its delivery settled."""
    broker = Broker(BrokerConfig())
    conn = broker.accept(100.0, wall=1e9)
    client = amqp.Connection(client=True, container_id="fuzz")
    client.open(now=100.0)
    writes: list[bytes] = []

    def pump() -> None:
        for _ in range(50):
            data = client.data_to_send()
            if data:
                writes.append(data)
                conn.receive_data(data, 100.0, wall=1e9)
            back = b"".join(c.data_to_send() for c in broker.pending())
            if back:
                client.receive_data(back, 100.0)
            if not data and not back:
                return

    pump()
    session = client.begin()
    pump()
    sender = session.attach_sender("s", target=amqp.Target(address="q"))
    receiver = session.attach_receiver("r", source=amqp.Source(address="q"))
    pump()
    receiver.flow(5)
    sender.send(amqp.Message(body=b"hello").encode())
    pump()
    client.close()
    pump()
    return writes


def fuzz_broker_10(data: bytes) -> str:
    return _fuzz_10("broker-10", data, ())


def fuzz_broker_10_opened(data: bytes) -> str:
    return _fuzz_10("broker-10-opened", data, _client_10()[:1])


def _seeds_10() -> list[bytes]:
    writes = _client_10()
    return [b"".join(writes), writes[0], b"".join(writes[:3]), b"AMQP\x03\x01\x00\x00"]


def _seeds_10_opened() -> list[bytes]:
    writes = _client_10()
    return [b"".join(writes[1:]), b"".join(writes[1:-1]), writes[-1]]


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``broker-10`` and ``broker-10-opened`` (deterministic)."""
    return {"broker-10": _seeds_10(), "broker-10-opened": _seeds_10_opened()}
