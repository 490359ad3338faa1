"""What the broker core's fuzz targets share: a :class:`~amqp_sansio.broker.Broker` with its
defaults accepts one connection and is fed the data in chunks (:func:`chunks`), driven as
the server drives it (:class:`Driver`: output drained after each input, the timer fired
when due, the dispatch turns run, an hour of silence, then the transport's end).

The targets are in one module per protocol:

* ``amqp091/broker.py``: ``broker-091`` (the data from scratch to ``Broker.accept_091``, its
  protocol header part of it) and ``broker-091-opened`` (after a valid handshake);
* ``amqp10/broker.py``: ``broker-10`` (the data from scratch to ``Broker.accept``) and
  ``broker-10-opened`` (after a 1.0 client's header and open);
* ``amqp010/broker.py``: ``broker-010`` (the data from scratch to the connection
  ``Broker.accept_header("0-10")`` makes, its protocol header part of it) and
  ``broker-010-opened`` (after a valid 0-10 handshake).

A :class:`Driver` is made for a protocol's key: 0-9-1's and 0-10's connections come from
``Broker.acceptors`` (as ``Broker.accept_header`` makes them), 1.0's from ``Broker.accept``.

The invariant: every call returns (any exception is a failure, stage ``crash``); the
broker's output parses as its client would parse it, with nothing but the close's answer
after a close (stages ``output``, ``after-close``); a connection that was open and ends
while the data comes has a close on the wire (stage ``no-close``); after the silence and
the transport's end the connection has ended (``not-ended``). Registered in
:data:`fuzz.harness.TARGETS` (``BROKER_TARGETS``); the bounded pass in
tests/project/test_fuzz_pass.py runs them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from amqp_sansio.broker import Broker, BrokerConfig

from .common import TICK, InvariantViolation

__all__ = ["SILENCE", "Driver", "chunks", "outcome_label", "run_target"]

#: The silence at the end (the idle and handshake time-outs pass); a chunk takes
#: :data:`fuzz.common.TICK`.
SILENCE = 3600.0


def chunks(data: bytes, *, frame_cuts: Callable[[bytes], list[int]] | None = None) -> list[bytes]:
    """The data in chunks derived from it (reproducible): at frame boundaries for half
    the inputs (``frame_cuts``, 0-9-1's), else cut anywhere."""
    if not data:
        return []
    if frame_cuts is not None and data[-1] % 2 == 0:
        sizes = frame_cuts(data)
    elif data[0] % 3 == 0:
        sizes = [len(data)]
    else:
        sizes = [1 + (b % 61) for b in data]
    out, at = [], 0
    for size in sizes:
        if at >= len(data):
            break
        out.append(data[at : at + size])
        at += size
    if at < len(data):
        out.append(data[at:])
    return out


# -- the driver -------------------------------------------------------------------------------


class Driver:
    """One broker, one connection, driven as adapters/broker/server.py drives them."""

    def __init__(self, protocol: str) -> None:
        self.broker = Broker(BrokerConfig())
        self.now = 100.0
        self.wall = 1_700_000_000.0
        self.protocol = protocol
        # 0-9-1's and 0-10's connection as Broker.accept_header makes it (their header is
        # part of the data), 1.0's as Broker.accept
        accept = self.broker.acceptors.get(protocol, self.broker.accept)
        self.conn: Any = accept(self.now, wall=self.wall, address="10.0.0.1")
        self.out = bytearray()

    def flush(self) -> None:
        broker = self.broker
        for _ in range(100):
            for conn in broker.pending():
                data = conn.data_to_send()
                if type(data) is not bytes:
                    raise InvariantViolation(self.protocol, "output", "data_to_send() not bytes")
                self.out += data
            if not broker.dispatching:
                return
            broker.dispatch_more()

    def feed(self, chunk: bytes) -> None:
        self.conn.receive_data(chunk, self.now, wall=self.wall)
        self.flush()
        self.now += TICK
        self.wall += TICK
        self.timers(self.now)

    def timers(self, until: float) -> None:
        conn = self.conn
        for _ in range(20):
            deadline = conn.next_deadline()
            if conn.ended or deadline is None or deadline > until:
                return
            self.now = max(self.now, deadline)
            conn.handle_timer(self.now, wall=self.wall)
            self.flush()

    def finish(self) -> None:
        """An hour of silence, then the transport ends."""
        self.timers(self.now + SILENCE)
        self.now += SILENCE
        self.broker.expire(self.wall + SILENCE)
        self.conn.connection_lost(self.now, wall=self.wall)
        self.flush()


def outcome_label(conn: Any, opened: bool, ended: bool) -> str:
    """The outcome: how far the connection got, and why it ended (digits and quoted names
    dropped), so that inputs reaching a new reason join the fuzzer's pool."""
    why = conn.record.ending or conn.refused or ""
    why = re.sub(r"'[^']*'|\d+", "#", why)[:60]
    return f"ok:{'opened' if opened else 'handshake'}:{'ended' if ended else 'open'}:{why}"


#: What a target checks of the broker's output before the transport ends:
#: ``(driver, opened, ended)``, ``opened`` and ``ended`` as the data left the connection.
Check = Callable[[Driver, bool, bool], None]


def run_target(
    target: str,
    protocol: str,
    data: bytes,
    prefix: Sequence[bytes],
    frame_cuts: Callable[[bytes], list[int]],
    check: Check,
) -> str:
    """One run of a broker target: a :class:`Driver` of ``protocol`` fed ``prefix`` (a
    handshake, each step whole) and then ``data`` in :func:`chunks` until the connection
    ends, ``check`` run on what it sent, then the silence and the transport's end (stage
    ``not-ended`` if the connection is still there); the :func:`outcome_label`."""
    driver = Driver(protocol)
    for step in prefix:
        driver.feed(step)
    conn = driver.conn
    for chunk in chunks(data, frame_cuts=frame_cuts):
        if conn.ended:
            break
        driver.feed(chunk)
    opened, ended = conn.record.opened, conn.ended
    check(driver, opened, ended)
    driver.finish()
    if not conn.ended:
        raise InvariantViolation(target, "not-ended", "the transport ended, the connection not")
    return outcome_label(conn, opened, ended)
