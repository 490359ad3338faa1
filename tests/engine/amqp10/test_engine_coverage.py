"""Corners of the engine that only a deterministic scenario reaches: each test names the
core spec section whose rule it checks, and asserts what crosses the wire."""

from __future__ import annotations

from typing import Any

import pytest
from support.engine_pair import Pair, inject, of, ready

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.framing.amqp10
from amqp_sansio.definitions.amqp10 import performatives


def _links(p: Pair, cs: a.Session, **kw: Any) -> tuple[a.Sender, a.Receiver]:
    """A link from the client to the server: (the client's sender, the server's receiver)."""
    snd, rcv = p.link(cs, **kw)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    return snd, rcv


def _frames(data: bytes) -> list[a.framing.amqp10.Frame]:
    """The frames in ``data`` (no protocol header)."""
    parser = a.framing.amqp10.FrameParser(max_frame_size=1 << 20)
    parser.feed(data)
    out = []
    while (frame := parser.next_frame()) is not None:
        out.append(frame)
    return out


def _frame_sizes(data: bytes) -> list[int]:
    """The sizes in the headers of the frames in ``data`` (2.3.1)."""
    sizes, i = [], 0
    while i < len(data):
        sizes.append(int.from_bytes(data[i : i + 4], "big"))
        i += sizes[-1]
    return sizes


def _bodies(data: bytes) -> list[object]:
    return [f.body for f in _frames(data)]


def _protocol_error(events: list[a.Event]) -> a.events.ProtocolError:
    (error,) = of(events, a.events.ProtocolError)
    assert isinstance(error, a.events.ProtocolError)
    return error


# -- 2.6.13, 2.8.7: tags carried over by a resumed link ------------------------------------------


def test_an_automatic_tag_skips_the_tags_a_resumed_link_carries_over() -> None:
    """A delivery tag is unique among a link's unsettled deliveries (2.8.7, 2.6.12). A
    suspended link re-attached by a new endpoint carries over its unsettled deliveries
    (2.6.13); the new endpoint's automatic tags start afresh, and skip the ones in use."""
    p, cs, _ss = ready()
    snd, rcv = _links(p, cs, name="durable")
    rcv.flow(10)
    p.pump()
    held = [snd.send(b"m0"), snd.send(b"m1")]
    p.pump()
    assert [d.tag for d in held] == [b"\x00", b"\x01"]
    snd.detach(closed=False)  # suspended: both stay unsettled
    p.pump()
    snd2 = cs.attach_sender("durable", target="q")
    _, s = p.pump()
    rcv2 = of(s, a.events.LinkAttached)[0].link
    rcv2.attach()
    rcv2.flow(10)
    p.pump()
    assert set(snd2.unsettled) == {b"\x00", b"\x01"}
    new = snd2.send(b"new")
    assert new.tag == b"\x02"  # \x00 and \x01 are carried over from the resumed link
    assert set(snd2.unsettled) == {b"\x00", b"\x01", b"\x02"}
    _, s = p.pump()
    (got,) = of(s, a.events.DeliveryReceived)
    assert got.data == b"new" and got.delivery.tag == b"\x02"
    assert not of(s, a.events.ProtocolError)


# -- 2.6.14, 2.7.5: splitting a delivery at the peer's max-frame-size ----------------------------


def test_a_delivery_under_the_quick_bound_whose_frame_does_not_fit_is_split() -> None:
    """No frame may exceed the peer's max-frame-size (2.4.1, 2.7.1); a message that does not
    fit one transfer goes in several, all but the last with ``more`` (2.6.14). The payload
    is 65 bytes short of the limit, but a 32-byte tag (2.8.7) and a delivery state (2.7.5)
    make the transfer's frame too large for it: it is split all the same."""
    p, cs, _ss = ready(server={"max_frame_size": 512})
    snd, rcv = _links(p, cs)
    rcv.flow(1)
    p.pump()
    data = b"x" * (512 - 65)
    state = a.definitions.amqp10.messaging.Received(section_number=70000, section_offset=2**40)
    snd.send(data, tag=b"T" * 32, state=state)
    out = p.client.data_to_send()
    frames = _frames(out)
    assert [type(f.body) for f in frames] == [
        performatives.Transfer,
        performatives.Transfer,
    ]
    assert [f.body.more for f in frames] == [True, False]
    sizes = _frame_sizes(out)
    assert len(sizes) == 2 and max(sizes) <= 512 and sum(sizes) == len(out)
    assert frames[0].body.delivery_tag == b"T" * 32 and frames[0].body.state == state
    events = p.server.receive_data(out, 0)
    (got,) = of(events, a.events.DeliveryReceived)
    assert got.data == data and got.complete and got.delivery.tag == b"T" * 32


# -- 2.4.1, 2.7.1: a frame too large for the peer is refused --------------------------------------


def test_a_frame_larger_than_the_peers_max_frame_size_is_refused_and_not_sent() -> None:
    """A peer may not be sent a frame larger than its max-frame-size (2.7.1): a detach whose
    error does not fit is refused with LocalProtocolError, and nothing goes out."""
    p, cs, _ss = ready(server={"max_frame_size": 512})
    snd, _rcv = _links(p, cs)
    big = a.Error(condition=a.Symbol("amqp:internal-error"), description="x" * 600)
    with pytest.raises(a.LocalProtocolError, match=r"Detach frame of .* max-frame-size 512"):
        snd.detach(error=big)
    assert p.client.data_to_send() == b""


# -- 2.4.3, 2.7.6: settlements made before a close ---------------------------------------------


def test_dispositions_pending_at_a_close_go_out_before_it() -> None:
    """The close is the last frame written on a connection (2.4.3): a settlement made before
    it (2.7.6), still waiting to be coalesced, goes out first, and the peer sees it."""
    p, cs, _ss = ready()
    snd, rcv = _links(p, cs)
    rcv.flow(1)
    p.pump()
    sent = snd.send(b"m")
    _, s = p.pump()
    rcv.settle(of(s, a.events.DeliveryReceived)[0].delivery, a.Accepted())
    p.server.close()  # no data_to_send in between: the disposition is still pending
    out = p.server.data_to_send()
    bodies = _bodies(out)
    assert [type(b) for b in bodies] == [
        performatives.Disposition,
        performatives.Close,
    ]
    disp = bodies[0]
    assert isinstance(disp, performatives.Disposition)
    assert disp.first == sent.id and disp.settled and disp.state == a.Accepted()
    events = p.client.receive_data(out, 0)
    (upd,) = of(events, a.events.DeliveryUpdated)
    assert upd.delivery is sent and upd.settled and upd.state == a.Accepted()
    assert events.index(upd) < events.index(of(events, a.events.ConnectionClosed)[0])


# -- 2.4.3: nothing after our close --------------------------------------------------------------


def test_a_malformed_frame_after_our_close_ends_the_connection_without_a_second_close() -> None:
    """Our close is the last frame we write (2.4.3): a framing error (2.3.1) found while we
    wait for the peer's close is reported, and ends the connection, but no second close goes
    out."""
    p, _cs, _ss = ready()
    p.client.close()
    assert [type(b) for b in _bodies(p.client.data_to_send())] == [performatives.Close]
    closing = p.client.state
    assert closing is a.ConnectionState.CLOSE_SENT
    bad = b"\x00\x00\x00\x04\x02\x00\x00\x00"  # a frame size below the header's 8 bytes
    events = p.client.receive_data(bad, 0)
    error = _protocol_error(events)
    assert error.error.condition == "amqp:connection:framing-error"
    assert error.scope == "connection"
    assert of(events, a.events.ConnectionEnded)
    assert p.client.state is a.ConnectionState.END
    assert p.client.data_to_send() == b""


# -- 2.5.5: an end before our begin ----------------------------------------------------------------


def test_an_end_before_we_answered_the_begin_closes_the_connection() -> None:
    """In BEGIN_RCVD the session diagram (2.5.5, Figure 2.30) has no R:END: the peer's end
    before our begin answers its own is an illegal-state (2.8.15), answered with a close
    (2.4.3); no begin of ours goes out for that session."""
    p = Pair()
    p.open()
    begin = performatives.Begin(next_outgoing_id=0, incoming_window=10, outgoing_window=10)
    events = inject(p.server, begin, channel=1)
    (begun,) = of(events, a.events.SessionBegun)
    assert begun.session.state is a.SessionState.BEGIN_RCVD
    events = inject(p.server, performatives.End(), channel=1)
    error = _protocol_error(events)
    assert error.error.condition == "amqp:illegal-state" and error.scope == "connection"
    bodies = _bodies(p.server.data_to_send())
    assert [type(b) for b in bodies] == [performatives.Close]
    close = bodies[0]
    assert isinstance(close, performatives.Close) and close.error is not None
    assert close.error.condition == "amqp:illegal-state"


# -- 2.6.1, 2.6.2: a second attach of an attached link -------------------------------------------


def test_a_second_attach_of_an_attached_link_ends_the_session() -> None:
    """A link name identifies one link in each direction (2.6.1); its attach assigns a
    handle that stays in use until the link detaches (2.6.2). An attach of a link already
    attached, under another handle, is an illegal-state (2.8.15): the session ends with it
    (2.5.4), and the link is not attached again."""
    p, cs, _ss = ready()
    _snd, rcv = _links(p, cs)
    again = performatives.Attach(
        name="link",
        handle=1,
        role=performatives.Role.SENDER,
        target=a.Target(address="q"),
        initial_delivery_count=0,
    )
    events = inject(p.server, again)
    error = _protocol_error(events)
    assert error.error.condition == "amqp:illegal-state" and error.scope == "session"
    assert not of(events, a.events.LinkAttached)
    bodies = _bodies(p.server.data_to_send())
    assert [type(b) for b in bodies] == [performatives.End]
    end = bodies[0]
    assert isinstance(end, performatives.End) and end.error is not None
    assert end.error.condition == "amqp:illegal-state"
    assert rcv.session.state is a.SessionState.DISCARDING


def test_a_second_attach_of_a_link_still_attached_on_another_handle_ends_the_session() -> None:
    """While we detach a link (DETACH_SENT) the peer attaches it again under a second handle
    without detaching the first: its end is still attached there, so the attach is an
    illegal-state (2.6.2, 2.8.15) that ends the session (2.5.4)."""
    p, cs, ss = ready()
    _snd, rcv = _links(p, cs)  # the client's handle 0
    rcv.detach()
    assert [type(b) for b in _bodies(p.server.data_to_send())] == [performatives.Detach]  # lost
    again = performatives.Attach(
        name="link",
        handle=1,
        role=performatives.Role.SENDER,
        target=a.Target(address="q"),
        initial_delivery_count=0,
    )
    events = inject(p.server, again)
    error = _protocol_error(events)
    assert error.error.condition == "amqp:illegal-state" and error.scope == "session"
    bodies = _bodies(p.server.data_to_send())
    assert [type(b) for b in bodies] == [performatives.End]
    end = bodies[0]
    assert isinstance(end, performatives.End) and end.error is not None
    assert end.error.condition == "amqp:illegal-state"
    assert ss.state is a.SessionState.DISCARDING


# -- 2.5.6: a transfer beyond the peer's outgoing window -------------------------------------------


def test_a_transfer_beyond_the_peers_outgoing_window_is_taken_and_the_window_stays_at_zero() -> (
    None
):
    """The remote-outgoing-window is decremented for each incoming transfer (2.5.6); a peer
    whose begin advertised an outgoing window of 0 may send all the same (it is the
    receiver's incoming window that bounds transfers): the delivery arrives, and the
    window does not go below zero."""
    p = Pair()
    p.open()
    cs = p.client.begin(outgoing_window=0)
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    ss.begin()
    p.pump()
    assert ss.remote_outgoing_window == 0
    snd, rcv = _links(p, cs)
    rcv.flow(2)
    p.pump()
    snd.send(b"a")
    snd.send(b"b")
    _, s = p.pump()
    assert [e.data for e in of(s, a.events.DeliveryReceived)] == [b"a", b"b"]
    assert not of(s, a.events.ProtocolError)
    assert ss.remote_outgoing_window == 0


# -- 2.7.6: a disposition range with gaps ------------------------------------------------------


def test_a_disposition_range_over_settled_ids_updates_only_the_unsettled_ones() -> None:
    """A disposition names a range of delivery-ids, first to last inclusive (2.7.6): those of
    deliveries already settled (here the middle one) are passed over; the others are
    updated and, settled by the receiver, settled at the sender too."""
    p, cs, _ss = ready()
    snd, rcv = _links(p, cs)
    rcv.flow(5)
    p.pump()
    sent = [snd.send(b"m%d" % i) for i in range(4)]
    _, s = p.pump()
    rcv.settle(of(s, a.events.DeliveryReceived)[1].delivery, a.Accepted())
    c, _ = p.pump()
    assert [e.delivery for e in of(c, a.events.DeliveryUpdated)] == [sent[1]]
    assert [d.id for d in sent] == [0, 1, 2, 3]
    disp = performatives.Disposition(
        role=performatives.Role.RECEIVER,
        first=0,
        last=2,
        settled=True,
        state=a.Released(),
    )
    events = inject(p.client, disp)
    updated = of(events, a.events.DeliveryUpdated)
    assert [e.delivery for e in updated] == [sent[0], sent[2]]
    assert all(e.settled and e.state == a.Released() for e in updated)
    assert set(snd.unsettled) == {sent[3].tag}
    assert not of(events, a.events.ProtocolError)


# -- the error rule: a frame too large for the peer is refused before anything changes -------------

_BIG = a.Error(condition=a.Symbol("amqp:internal-error"), description="x" * 700)


def _small_peer() -> tuple[Pair, a.Session, a.Session]:
    """Both ends accept frames of at most 512 bytes (the minimum, 2.7.1)."""
    return ready(client={"max_frame_size": 512}, server={"max_frame_size": 512})


def test_a_detach_too_large_changes_nothing_and_a_smaller_one_goes() -> None:
    p, cs, _ = _small_peer()
    snd, rcv = _links(p, cs)
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        snd.detach(error=_BIG)
    assert snd.state is a.LinkState.ATTACHED and p.client.data_to_send() == b""
    snd.detach(error=a.Error(condition=a.Symbol("amqp:internal-error")))
    p.pump()
    assert snd.state is rcv.state is a.LinkState.DETACHED


def test_an_end_too_large_changes_nothing() -> None:
    p, cs, ss = _small_peer()
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        cs.end(_BIG)
    assert cs.state is a.SessionState.MAPPED and p.client.data_to_send() == b""
    cs.end()
    p.pump()
    assert cs.state is ss.state is a.SessionState.UNMAPPED


def test_a_close_too_large_changes_nothing() -> None:
    p, _, _ = _small_peer()
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        p.client.close(_BIG)
    assert p.client.state is a.ConnectionState.OPENED and p.client.data_to_send() == b""
    p.client.close()
    p.pump()
    assert p.client.state is p.server.state is a.ConnectionState.END


def test_a_begin_too_large_takes_no_channel() -> None:
    p, _, _ = _small_peer()
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        p.client.begin(properties={"k": "v" * 700})
    assert p.client.data_to_send() == b"" and len(p.client.sessions) == 1
    second = p.client.begin()
    assert second.channel == 1  # the failed begin held none


def test_an_open_too_large_sends_not_even_the_header() -> None:
    client = a.Connection(client=True, properties={"k": "v" * 700})
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        client.open(now=0.0)
    assert client.state is a.ConnectionState.START and client.data_to_send() == b""
    with pytest.raises(a.LocalProtocolError, match="cannot open"):
        p, _, _ = ready()
        p.client.open()  # already open


def test_an_outcome_too_large_is_refused_and_the_delivery_stays_unsettled() -> None:
    p, cs, _ = _small_peer()
    snd, rcv = _links(p, cs)
    rcv.flow(1)
    p.pump()
    snd.send(b"m")
    _, s = p.pump()
    (got,) = of(s, a.events.DeliveryReceived)
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        rcv.settle(got.delivery, a.Rejected(error=_BIG))
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        rcv.update(got.delivery, a.Modified(message_annotations={a.Symbol("x"): "y" * 700}))
    assert not got.delivery.settled and got.delivery.local_state is None
    assert p.server.data_to_send() == b""
    rcv.settle(got.delivery, a.Rejected(error=a.Error(condition=a.Symbol("amqp:not-allowed"))))
    c, _ = p.pump()
    (upd,) = of(c, a.events.DeliveryUpdated)
    assert isinstance(upd.state, a.Rejected) and upd.settled
