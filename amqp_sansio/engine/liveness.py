"""A connection's clocks: the handshake and close time-outs, the peer's silence and our
heartbeats, kept once for every engine that negotiates a heartbeat in seconds (0-9-1 spec,
``connection.tune`` field ``heartbeat``, and AMQP/Fast RFC 006 "Heartbeat Frames"; 0-10
spec, ``connection.tune`` and ``connection.heartbeat``).

The engine never reads a clock: it tells a :class:`Liveness` when it started, sent,
received and began to close (each at the ``now`` it was given), and asks it when
``handle_timer`` is due next (:meth:`Liveness.next_deadline`) and what is due at ``now``
(:meth:`Liveness.due`). The rules, the same for each protocol:

* a heartbeat is due when nothing was sent for half the heartbeat (RabbitMQ's and pika's
  send interval), except while closing;
* the peer is gone when nothing arrived for twice the heartbeat (0-9-1 spec,
  ``connection.tune``; RFC 006; 0-10 spec, ``connection.heartbeat``);
* the handshake must reach the open within the handshake time-out from the start, and
  our close must be answered within it from the close (0: no time-out);
* at one ``now``, the peer's silence comes first, then the close time-out, the handshake
  time-out, and the heartbeat to send.

What differs between the protocols stays in each protocol's folder: the table that names
the :class:`Phase` of each of its connection states (``PHASES`` in its ``states``, made
by :func:`phases`), the
frame a heartbeat is and the reply code that ends the connection.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import TypeVar

__all__ = ["Due", "Liveness", "Phase", "phases"]

_State = TypeVar("_State")


class Phase(enum.Enum):
    """Where a connection is, as far as its clocks go."""

    #: from the start to the open: the handshake time-out runs
    HANDSHAKE = "handshake"
    OPEN = "open"
    #: our close sent, its answer awaited: the close time-out runs, no heartbeats are sent
    CLOSING = "closing"
    #: over: nothing is due
    CLOSED = "closed"


def phases(
    states: Iterable[_State], *, opened: _State, closing: _State, closed: _State
) -> dict[_State, Phase]:
    """A protocol's table of the :class:`Phase` of each of its connection ``states``: the
    three named, and the handshake's for every other (each is before the open)."""
    table = dict.fromkeys(states, Phase.HANDSHAKE)
    table.update({opened: Phase.OPEN, closing: Phase.CLOSING, closed: Phase.CLOSED})
    return table


class Due(enum.Enum):
    """What :meth:`Liveness.due` finds due at ``now``."""

    NOTHING = "nothing"
    #: nothing arrived for twice the heartbeat: end the connection
    SILENCE = "silence"
    #: the peer did not answer our close in time: end the connection
    CLOSE_TIMEOUT = "close-timeout"
    #: the handshake did not reach the open in time: end the connection
    HANDSHAKE_TIMEOUT = "handshake-timeout"
    #: nothing was sent for half the heartbeat: send one
    HEARTBEAT = "heartbeat"


class Liveness:
    """The instants a connection's time-outs count from, and the rules over them.

    ``heartbeat`` (seconds; 0: none) and ``handshake_timeout`` (seconds; 0: none) are
    given to each question, since the heartbeat is negotiated after the start.
    """

    __slots__ = ("closing_since", "last_received", "last_sent", "started")

    def __init__(self) -> None:
        #: When the connection started (None: not yet; nothing is due until it does).
        self.started: float | None = None
        #: When bytes were last written (queued) to the peer.
        self.last_sent = 0.0
        #: When bytes last arrived from the peer.
        self.last_received = 0.0
        #: When our close was sent.
        self.closing_since = 0.0

    def __repr__(self) -> str:
        return (
            f"<Liveness started={self.started} sent={self.last_sent:g} "
            f"received={self.last_received:g} closing={self.closing_since:g}>"
        )

    def start(self, now: float) -> None:
        """The connection starts at ``now``: every clock counts from here."""
        self.started = self.last_sent = self.last_received = now

    def sent(self, now: float) -> None:
        """Bytes were queued for the peer at ``now``."""
        self.last_sent = now

    def received(self, now: float) -> None:
        """Bytes arrived from the peer at ``now`` (or its silence is not to be counted
        until now: a caller that stopped reading it)."""
        self.last_received = now

    def closing(self, now: float) -> None:
        """Our close was sent at ``now``."""
        self.closing_since = now

    def next_deadline(
        self, phase: Phase, heartbeat: float, handshake_timeout: float
    ) -> float | None:
        """The earliest instant at which :meth:`due` may find something due in ``phase``;
        None for none (not started, closed, no heartbeat and no time-out that runs)."""
        started = self.started
        if started is None or phase is Phase.CLOSED:
            return None
        deadlines = []
        if handshake_timeout:
            if phase is Phase.CLOSING:
                deadlines.append(self.closing_since + handshake_timeout)
            elif phase is Phase.HANDSHAKE:
                deadlines.append(started + handshake_timeout)
        if heartbeat:
            deadlines.append(self.last_received + 2 * heartbeat)
            if phase is not Phase.CLOSING:
                deadlines.append(self.last_sent + heartbeat / 2)
        return min(deadlines) if deadlines else None

    def due(
        self, now: float, phase: Phase, heartbeat: float, handshake_timeout: float
    ) -> tuple[Due, str]:
        """What is due at ``now`` in ``phase`` (at most one thing, the first of the order
        above), with the reason to give the peer and the application when it ends the
        connection ("" otherwise)."""
        started = self.started
        if started is None or phase is Phase.CLOSED:
            return Due.NOTHING, ""
        if heartbeat and now >= self.last_received + 2 * heartbeat:
            return Due.SILENCE, (
                f"missed heartbeats: nothing received for {now - self.last_received:g} s "
                f"(heartbeat {heartbeat} s)"
            )
        if handshake_timeout:
            if phase is Phase.CLOSING and now >= self.closing_since + handshake_timeout:
                return (
                    Due.CLOSE_TIMEOUT,
                    f"the close was not answered within {handshake_timeout:g} s",
                )
            if phase is Phase.HANDSHAKE and now >= started + handshake_timeout:
                return Due.HANDSHAKE_TIMEOUT, (
                    f"the handshake did not finish within {handshake_timeout:g} s"
                )
        if heartbeat and phase is not Phase.CLOSING and now >= self.last_sent + heartbeat / 2:
            return Due.HEARTBEAT, ""
        return Due.NOTHING, ""
