"""A connection's clocks (:mod:`amqp_sansio.engine.liveness`): the handshake and close
time-outs, the peer's silence and our heartbeats, the rules the 0-9-1 and 0-10 engines
share; and, on simulated time, that :meth:`Liveness.next_deadline` is exactly when
:meth:`Liveness.due` first finds something due."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from amqp_sansio.engine.amqp010.states import PHASES as PHASES_010
from amqp_sansio.engine.amqp010.states import ConnectionState as State010
from amqp_sansio.engine.amqp091.states import PHASES as PHASES_091
from amqp_sansio.engine.amqp091.states import ConnectionState as State091
from amqp_sansio.engine.liveness import Due, Liveness, Phase, phases


def started(at: float = 100.0) -> Liveness:
    clocks = Liveness()
    clocks.start(at)
    return clocks


def test_nothing_is_due_before_the_start() -> None:
    clocks = Liveness()
    assert clocks.started is None
    for phase in Phase:
        assert clocks.next_deadline(phase, 10, 5) is None
        assert clocks.due(1e9, phase, 10, 5) == (Due.NOTHING, "")


def test_nothing_is_due_once_closed() -> None:
    clocks = started()
    assert clocks.next_deadline(Phase.CLOSED, 10, 5) is None
    assert clocks.due(1e9, Phase.CLOSED, 10, 5) == (Due.NOTHING, "")


def test_the_start_sets_every_clock() -> None:
    clocks = started(42.0)
    assert (clocks.started, clocks.last_sent, clocks.last_received) == (42.0, 42.0, 42.0)
    assert "started=42.0" in repr(clocks)


def test_the_handshake_time_out_runs_from_the_start() -> None:
    clocks = started(100.0)
    clocks.sent(103.0)
    clocks.received(104.0)
    assert clocks.next_deadline(Phase.HANDSHAKE, 0, 10) == 110.0
    assert clocks.due(109.9, Phase.HANDSHAKE, 0, 10) == (Due.NOTHING, "")
    assert clocks.due(110.0, Phase.HANDSHAKE, 0, 10) == (
        Due.HANDSHAKE_TIMEOUT,
        "the handshake did not finish within 10 s",
    )
    # no time-out: nothing runs
    assert clocks.next_deadline(Phase.HANDSHAKE, 0, 0) is None
    assert clocks.due(1e9, Phase.HANDSHAKE, 0, 0) == (Due.NOTHING, "")


def test_the_handshake_time_out_stops_at_the_open() -> None:
    clocks = started(100.0)
    assert clocks.next_deadline(Phase.OPEN, 0, 10) is None
    assert clocks.due(1e9, Phase.OPEN, 0, 10) == (Due.NOTHING, "")


def test_the_close_time_out_runs_from_the_close() -> None:
    clocks = started(100.0)
    clocks.closing(150.0)
    assert clocks.closing_since == 150.0
    assert clocks.next_deadline(Phase.CLOSING, 0, 10) == 160.0
    assert clocks.due(159.0, Phase.CLOSING, 0, 10) == (Due.NOTHING, "")
    assert clocks.due(160.0, Phase.CLOSING, 0, 10) == (
        Due.CLOSE_TIMEOUT,
        "the close was not answered within 10 s",
    )
    assert clocks.next_deadline(Phase.CLOSING, 0, 0) is None
    assert clocks.due(1e9, Phase.CLOSING, 0, 0) == (Due.NOTHING, "")


def test_a_heartbeat_is_due_after_half_the_heartbeat_of_our_silence() -> None:
    clocks = started(100.0)
    clocks.received(130.0)
    clocks.sent(120.0)
    assert clocks.next_deadline(Phase.OPEN, 20, 10) == 130.0
    assert clocks.due(129.0, Phase.OPEN, 20, 10) == (Due.NOTHING, "")
    assert clocks.due(130.0, Phase.OPEN, 20, 10) == (Due.HEARTBEAT, "")
    clocks.sent(130.0)
    assert clocks.next_deadline(Phase.OPEN, 20, 10) == 140.0


def test_the_peer_is_gone_after_twice_the_heartbeat_of_its_silence() -> None:
    clocks = started(100.0)
    assert clocks.next_deadline(Phase.OPEN, 10, 0) == 105.0  # our heartbeat first
    clocks.sent(139.0)
    assert clocks.next_deadline(Phase.OPEN, 10, 0) == 120.0
    assert clocks.due(120.5, Phase.OPEN, 10, 0) == (
        Due.SILENCE,
        "missed heartbeats: nothing received for 20.5 s (heartbeat 10 s)",
    )


def test_no_heartbeat_is_sent_while_closing_but_silence_still_counts() -> None:
    clocks = started(100.0)
    clocks.closing(100.0)
    assert clocks.next_deadline(Phase.CLOSING, 10, 0) == 120.0
    assert clocks.due(119.0, Phase.CLOSING, 10, 0) == (Due.NOTHING, "")
    assert clocks.due(120.0, Phase.CLOSING, 10, 0)[0] is Due.SILENCE


def test_silence_comes_before_the_time_outs_and_the_heartbeat() -> None:
    clocks = started(100.0)
    assert clocks.due(1e9, Phase.HANDSHAKE, 1, 1)[0] is Due.SILENCE
    assert clocks.due(1e9, Phase.CLOSING, 1, 1)[0] is Due.SILENCE
    assert clocks.due(1e9, Phase.OPEN, 1, 1)[0] is Due.SILENCE


def test_a_time_out_comes_before_the_heartbeat() -> None:
    clocks = started(100.0)
    clocks.received(109.0)
    assert clocks.due(110.0, Phase.HANDSHAKE, 4, 10)[0] is Due.HANDSHAKE_TIMEOUT
    assert clocks.due(109.0, Phase.HANDSHAKE, 4, 10)[0] is Due.HEARTBEAT


def test_a_table_of_phases_from_the_three_states_named() -> None:
    table = phases("abcde", opened="c", closing="d", closed="e")
    assert table == {
        "a": Phase.HANDSHAKE,
        "b": Phase.HANDSHAKE,
        "c": Phase.OPEN,
        "d": Phase.CLOSING,
        "e": Phase.CLOSED,
    }


@pytest.mark.parametrize(
    ("table", "states"), [(PHASES_091, State091), (PHASES_010, State010)], ids=["0-9-1", "0-10"]
)
def test_each_protocol_names_the_phase_of_every_state(
    table: Mapping[enum.Enum, Phase], states: type[enum.Enum]
) -> None:
    assert set(table) == set(states)
    assert table[states["OPEN"]] is Phase.OPEN
    assert table[states["CLOSING"]] is Phase.CLOSING
    assert table[states["CLOSED"]] is Phase.CLOSED
    assert table[states["NEW"]] is Phase.HANDSHAKE
    assert {table[s] for s in states} == set(Phase)


instants = st.floats(0, 1e6, allow_nan=False)
seconds = st.sampled_from([0, 0.5, 1, 2.5, 10, 60, 65535])


@given(
    start=instants,
    sent=instants,
    received=instants,
    closing=instants,
    phase=st.sampled_from(Phase),
    heartbeat=seconds,
    timeout=seconds,
    later=st.floats(0, 1e6, allow_nan=False),
)
def test_the_deadline_is_when_something_first_falls_due(
    start: float,
    sent: float,
    received: float,
    closing: float,
    phase: Phase,
    heartbeat: float,
    timeout: float,
    later: float,
) -> None:
    """Before the deadline nothing is due; at it, something is; without one, nothing ever
    is (the engine may sleep until the deadline and miss nothing)."""
    clocks = started(start)
    clocks.sent(max(start, sent))
    clocks.received(max(start, received))
    clocks.closing(max(start, closing))
    deadline = clocks.next_deadline(phase, heartbeat, timeout)
    if deadline is None:
        assert clocks.due(start + later, phase, heartbeat, timeout) == (Due.NOTHING, "")
        return
    due, text = clocks.due(deadline, phase, heartbeat, timeout)
    assert due is not Due.NOTHING
    assert bool(text) is (due is not Due.HEARTBEAT)
    before = deadline - later if later else deadline - 1
    if before < deadline:
        assert clocks.due(before, phase, heartbeat, timeout) == (Due.NOTHING, "")
