"""Corners of the engine: illegal commands, and each kind of peer violation, pushed as
hand-made frames."""

from __future__ import annotations

import pytest
from support.engine_pair import Pair, inject, of, ready

import amqp_sansio as a
import amqp_sansio.framing.amqp10
from amqp_sansio.definitions.amqp10 import performatives


def _condition(events: list) -> str:
    return str(of(events, a.events.ProtocolError)[0].error.condition)


def test_reprs_and_collections() -> None:
    p, cs, _ss = ready()
    snd, _ = p.link(cs)
    assert "Sender 'link' ATTACHED" in repr(snd)
    assert "Session channel=0 MAPPED" in repr(cs)
    assert "client OPENED" in repr(p.client) and "server" in repr(p.server)
    assert cs.links == [snd] and p.client.sessions == [cs]
    assert "Delivery" in repr(a.Delivery(snd, b"t", 0, 0))


def test_illegal_link_and_session_commands() -> None:
    p, cs, _ss = ready()
    snd, rcv = p.link(cs)
    with pytest.raises(a.LocalProtocolError):
        snd.refuse()  # only a link the peer started
    snd.detach()
    with pytest.raises(a.LocalProtocolError):
        snd.detach()
    with pytest.raises(a.LocalProtocolError, match="not ATTACHED"):
        snd.send(b"x")
    with pytest.raises(a.LocalProtocolError):
        rcv.flow(2**32)
    p.pump()
    cs.end()
    with pytest.raises(a.LocalProtocolError):
        cs.end()
    with pytest.raises(a.LocalProtocolError):
        cs.attach_sender("late", target="q")


def test_accepting_a_link_with_our_own_termini() -> None:
    p, cs, _ = ready()
    cs.attach_receiver("r", source="from-here")
    _, s = p.pump()
    link = of(s, a.events.LinkAttached)[0].link
    link.attach(source=a.Source(address="really-here"), target=a.Target(address="t"))
    c, _ = p.pump()
    remote = of(c, a.events.LinkAttached)[0].remote
    assert remote.source.address == "really-here" and remote.target.address == "t"


def test_refusing_a_receiver_attach_sends_no_source() -> None:
    p, cs, _ = ready()
    cs.attach_receiver("r", source="nothing")
    _, s = p.pump()
    of(s, a.events.LinkAttached)[0].link.refuse()
    c, _ = p.pump()
    assert of(c, a.events.LinkAttached)[0].remote.source is None
    assert of(c, a.events.LinkDetached)[0].error.condition == "amqp:not-found"


def test_sender_commands() -> None:
    p, cs, _ = ready()
    snd, rcv = p.link(cs)
    snd.drained()  # not asked to drain: nothing happens
    assert p.client.data_to_send() == b""
    rcv.add_credit(2)
    rcv.add_credit(1)
    p.pump()
    assert snd.link_credit == 3
    snd.set_available(5)
    d = snd.send(b"a", more=True)
    with pytest.raises(a.LocalProtocolError):
        snd.send(b"b", delivery=a.Delivery(snd, b"z", 9, 0))
    with pytest.raises(a.LocalProtocolError):
        snd.resume(d, b"a")  # a delivery is being sent
    snd.send(b"b", delivery=d)
    assert snd.available == 4
    snd.send(b"c")
    snd.send(b"d")
    assert snd.link_credit == 0
    with pytest.raises(a.LocalProtocolError, match="credit"):
        snd.resume(d, b"ab")
    _, s = p.pump()
    assert [e.data for e in of(s, a.events.DeliveryReceived)] == [b"ab", b"c", b"d"]


def test_peer_violations_on_a_session() -> None:
    cases = [
        (
            performatives.Attach(
                name="x",
                handle=2**31,
                role=performatives.Role.SENDER,
                initial_delivery_count=0,
            ),
            "amqp:resource-limit-exceeded",
        ),
        (
            performatives.Attach(name="x", handle=1, role=performatives.Role.SENDER),
            "amqp:invalid-field",
        ),
        (performatives.Detach(handle=9), "amqp:session:unattached-handle"),
        (
            performatives.Transfer(handle=9, delivery_id=0, delivery_tag=b"t"),
            "amqp:session:unattached-handle",
        ),
        (
            performatives.Disposition(role=performatives.Role.RECEIVER, first=5, last=2),
            "amqp:invalid-field",
        ),
        (
            performatives.Begin(
                remote_channel=0, next_outgoing_id=0, incoming_window=1, outgoing_window=1
            ),
            "amqp:illegal-state",
        ),
        (performatives.Open(container_id="again"), "amqp:illegal-state"),
    ]
    for body, condition in cases:
        p, _cs, ss = ready()
        if type(body) is performatives.Attach and body.handle == 2**31:
            ss.handle_max = 10
        events = inject(p.server, body, channel=0)
        assert _condition(events) == condition, body


def test_transfer_violations() -> None:
    p, cs, _ = ready()
    _, rcv = p.link(cs)
    rcv.flow(5)
    p.pump()
    events = inject(p.server, performatives.Transfer(handle=0), channel=0)  # no id or tag
    assert _condition(events) == "amqp:invalid-field"
    p, cs, _ = ready()
    _, rcv = p.link(cs, client_sends=False)  # the client receives: the server sends
    events = inject(p.server, performatives.Transfer(handle=0, delivery_id=0, delivery_tag=b"t"))
    assert _condition(events) == "amqp:not-allowed"
    p, cs, _ss = ready()
    _snd, rcv = p.link(cs)
    rcv.flow(5)
    p.pump()
    inject(
        p.server,
        performatives.Transfer(handle=0, delivery_id=0, delivery_tag=b"t", more=True),
        payload=b"a",
    )
    events = inject(
        p.server,
        performatives.Transfer(handle=0, delivery_id=1, delivery_tag=b"u"),
        payload=b"b",
    )
    assert _condition(events) == "amqp:not-allowed"  # interleaved on one link


def test_transfer_state_and_late_settlement_on_a_multi_frame_delivery() -> None:
    p, cs, _ss = ready()
    _snd, rcv = p.link(cs)
    rcv.flow(5)
    p.pump()
    inject(
        p.server,
        performatives.Transfer(handle=0, delivery_id=0, delivery_tag=b"t", more=True),
        payload=b"a",
    )
    events = inject(
        p.server,
        performatives.Transfer(handle=0, settled=True, state=a.Accepted()),
        payload=b"b",
    )
    (got,) = of(events, a.events.DeliveryReceived)
    assert got.data == b"ab" and got.delivery.remote_settled
    assert got.delivery.remote_state == a.Accepted() and not rcv.unsettled
    rcv.streaming = True
    inject(
        p.server,
        performatives.Transfer(handle=0, delivery_id=1, delivery_tag=b"v", more=True),
        payload=b"",
    )
    events = inject(p.server, performatives.Transfer(handle=0, settled=True), payload=b"z")
    assert of(events, a.events.DeliveryReceived)[0].complete and not rcv.unsettled


def test_frames_before_open_and_on_other_channels() -> None:
    server = a.Connection(client=False)
    events = server.receive_data(
        a.framing.amqp10.AMQP_HEADER
        + a.framing.amqp10.encode_frame(
            performatives.Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=1)
        ),
        0,
    )
    assert _condition(events) == "amqp:illegal-state"
    server = a.Connection(client=False)
    events = server.receive_data(
        a.framing.amqp10.AMQP_HEADER
        + a.framing.amqp10.encode_frame(performatives.Open(container_id="c"), channel=3),
        0,
    )
    assert _condition(events) == "amqp:connection:framing-error"
    p = Pair(server={"channel_max": 2})
    p.open()
    events = inject(
        p.server,
        performatives.Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=1),
        channel=5,
    )
    assert _condition(events) == "amqp:connection:framing-error"
    p = Pair()
    p.open()
    events = p.server.receive_data(
        a.framing.amqp10.encode_frame(
            performatives.SaslOutcome(code=performatives.SaslCode.OK),
            frame_type=a.framing.amqp10.FrameType.SASL,
        ),
        0,
    )
    assert _condition(events) == "amqp:connection:framing-error"


def test_a_close_before_the_open_ends_all_the_same() -> None:
    client = a.Connection()
    client.open(now=0)
    client.data_to_send()
    events = client.receive_data(
        a.framing.amqp10.AMQP_HEADER + a.framing.amqp10.encode_frame(performatives.Close()), 0
    )
    assert [type(e) for e in events] == [a.events.ConnectionClosed, a.events.ConnectionEnded]


def test_an_end_in_the_wrong_state_and_a_stray_begin() -> None:
    p, cs, _ss = ready()
    cs.end()
    p.pump()
    events = inject(p.server, performatives.End(), channel=0)
    assert _condition(events) == "amqp:not-allowed"


def test_disposition_over_a_huge_range_looks_only_at_known_deliveries() -> None:
    p, cs, _ss = ready()
    snd, rcv = p.link(cs)
    rcv.flow(5)
    p.pump()
    d = snd.send(b"x")
    p.pump()
    events = inject(
        p.client,
        performatives.Disposition(
            role=performatives.Role.RECEIVER,
            first=0,
            last=2**31 - 1,
            settled=True,
            state=a.Accepted(),
        ),
    )
    assert [e.delivery for e in of(events, a.events.DeliveryUpdated)] == [d]


def test_session_echo_and_flow_without_delivery_count() -> None:
    p, cs, _ss = ready()
    _snd, _rcv = p.link(cs)
    events = inject(
        p.client,
        performatives.Flow(incoming_window=10, next_outgoing_id=0, outgoing_window=10, echo=True),
    )
    assert events == []
    frame = a.framing.amqp10.FrameParser(max_frame_size=65536)
    frame.feed(p.client.data_to_send())
    assert isinstance(frame.next_frame().body, performatives.Flow)
    events = inject(
        p.server,
        performatives.Flow(
            incoming_window=10, next_outgoing_id=0, outgoing_window=10, handle=0, available=3
        ),
    )
    assert of(events, a.events.CreditChanged)[0].available == 3


def test_idle_time_out_while_closing() -> None:
    p = Pair(client={"idle_timeout": 1.0})
    p.open()
    p.client.close()
    p.client.data_to_send()  # the close is lost
    p.now += 1.0
    events = p.client.handle_timer(p.now)
    assert of(events, a.events.IdleTimedOut) and p.client.state is a.ConnectionState.END
