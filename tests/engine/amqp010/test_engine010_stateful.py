"""Hypothesis drives both ends of a 0-10 session at once (0-10 spec, class ``session``):
commands either way, completions in any order, bytes in any chunking, time passing with
heartbeats. The model: every command arrives once, in order, with its id; every
completion comes back to its sender; nothing ends the connection."""

from __future__ import annotations

import random

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from support.amqp010.engine import make_pair

from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as E

ENDS = st.sampled_from(["client", "server"])


class TwoEnds(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.pair = make_pair(chunk=random.Random(0), client={"heartbeat": 4})
        self.pair.attach(b"m", timeout=3600)
        self.pair.take()
        #: per sending end: ids sent, ids the peer completed
        self.sent: dict[str, list[int]] = {"client": [], "server": []}
        self.completed: dict[str, set[int]] = {"client": set(), "server": set()}
        #: per receiving end: ids received and not completed yet
        self.pending: dict[str, list[int]] = {"client": [], "server": []}
        self.received: dict[str, list[int]] = {"client": [], "server": []}

    def end(self, name: str) -> E.Connection:
        return self.pair.client if name == "client" else self.pair.server

    @rule(who=ENDS, body=st.binary(max_size=300), sync=st.booleans())
    def send(self, who: str, body: bytes, sync: bool) -> None:
        command: spec.Command = spec.MessageTransfer(destination="d")
        if not body:
            command = spec.QueueDeclare(queue="q")
        cid = self.end(who).send_command(b"m", command, body=body, sync=sync)
        self.sent[who].append(cid)

    @precondition(lambda self: self.pending["client"] or self.pending["server"])
    @rule(who=ENDS, pick=st.integers(0, 1000))
    def complete(self, who: str, pick: int) -> None:
        pending = self.pending[who]
        if pending:
            cid = pending.pop(pick % len(pending))
            self.end(who).complete(b"m", cid)

    @rule(chunk=st.integers(1, 100) | st.none())
    def pump(self, chunk: int | None) -> None:
        self.pair.chunk = chunk
        self.pair.pump()
        self.collect()

    @rule(seconds=st.floats(0.0, 3.0))
    def wait(self, seconds: float) -> None:
        self.pair.advance(seconds)
        self.collect()

    @rule(deliver=st.booleans())
    def lose_the_transport_and_resume(self, deliver: bool) -> None:
        """The transport goes (with what was not delivered yet, unless ``deliver``); a new
        connection between the same stores resumes the session: what either end had not
        seen completed is replayed, what arrived before is not delivered twice."""
        old = self.pair
        if deliver:
            old.pump()
            self.collect()
        old.client.data_to_send()
        old.server.data_to_send()
        old.client_events += old.client.receive_data(b"", old.now)
        old.server_events += old.server.receive_data(b"", old.now)
        self.collect()
        pair = make_pair(
            chunk=random.Random(1),
            client={"heartbeat": 4, "sessions": old.client.store},
            server={"sessions": old.server.store},
        )
        pair.now = old.now
        pair.take()
        pair.client.resume(b"m")
        pair.pump()
        self.pair = pair
        client, server = pair.take()
        assert any(isinstance(e, E.SessionResumed) for e in client), client
        assert any(isinstance(e, E.SessionResumed) for e in server), server
        self.pair.client_events, self.pair.server_events = client, server
        self.collect()

    def collect(self) -> None:
        client, server = self.pair.take()
        for who, events in (("client", client), ("server", server)):
            for event in events:
                if isinstance(event, E.ConnectionClosed):
                    assert event.reply_code == 320 and event.by_peer, event  # a lost transport

                if isinstance(event, E.CommandReceived):
                    self.received[who].append(event.command_id)
                    self.pending[who].append(event.command_id)
                elif isinstance(event, E.CommandsCompleted):
                    assert not set(event.command_ids) & self.completed[who]
                    self.completed[who] |= set(event.command_ids)

    @invariant()
    def in_order_once(self) -> None:
        for who, peer in (("client", "server"), ("server", "client")):
            got = self.received[who]
            assert got == self.sent[peer][: len(got)]
            assert self.completed[peer] <= set(self.sent[peer])

    def teardown(self) -> None:
        self.pair.pump()
        self.collect()
        for who in ("client", "server"):
            for cid in self.pending[who]:
                self.end(who).complete(b"m", cid)
            self.pending[who] = []
        self.pair.pump()
        self.collect()
        for who in ("client", "server"):
            assert self.completed[who] == set(self.sent[who])
            assert self.end(who).session(b"m").outstanding_bytes == 0


TestTwoEnds = TwoEnds.TestCase
TestTwoEnds.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
