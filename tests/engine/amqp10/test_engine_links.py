"""Links in the corners of core spec 2.6: errant links (2.6.5), a closing detach crossing a
non-closing one (2.6.6), incomplete unsettled maps (2.6.13, 2.7.3) and a limit on unsettled
deliveries."""

from __future__ import annotations

import pytest
from support.engine_pair import Pair, inject, of, ready

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.framing.amqp10

ERROR = a.Error(condition=a.Symbol("amqp:internal-error"), description="broken")


def _conditions(events: list[a.Event]) -> list[str]:
    return [str(e.error.condition) for e in of(events, a.events.ProtocolError)]


def _ended_with(session: a.Session, events: list[a.Event], condition: str) -> None:
    assert _conditions(events) == [condition]
    assert session.state is a.SessionState.DISCARDING


# -- 2.6.5: errant links --------------------------------------------------------------------------


def test_what_the_peer_sent_before_seeing_our_error_detach_is_discarded() -> None:
    """Transfers (even the rest of a delivery cut short) and flows already on their way when
    we detach with an error are dropped, not taken for violations."""
    p, cs, ss = ready()
    _snd, rcv = p.link(cs)
    assert isinstance(rcv, a.Receiver)
    rcv.flow(5)
    p.pump()
    rcv.max_message_size = 10
    tag = {"delivery_id": 0, "delivery_tag": b"t"}
    events = inject(
        p.server,
        a.definitions.amqp10.performatives.Transfer(handle=0, more=True, **tag),
        payload=b"x" * 20,
    )
    assert _conditions(events) == ["amqp:link:message-size-exceeded"]
    assert rcv.state is a.LinkState.DETACH_SENT and not rcv.unsettled
    window = ss.incoming_window
    events = inject(
        p.server, a.definitions.amqp10.performatives.Transfer(handle=0), payload=b"rest"
    )  # the rest of it
    events += inject(
        p.server,
        a.definitions.amqp10.performatives.Transfer(handle=0, delivery_id=1, delivery_tag=b"u"),
    )
    events += inject(
        p.server,
        a.definitions.amqp10.performatives.Flow(
            **_session_flow(), handle=0, delivery_count=2, echo=True
        ),
    )
    assert events == [] and ss.state is a.SessionState.MAPPED
    assert ss.incoming_window == window - 2  # the session still counted them
    inject(p.server, a.definitions.amqp10.performatives.Detach(handle=0, closed=True))
    assert rcv.state is a.LinkState.DETACHED
    events = inject(
        p.server,
        a.definitions.amqp10.performatives.Transfer(handle=0, delivery_id=2, delivery_tag=b"v"),
    )
    _ended_with(ss, events, "amqp:session:errant-link")


def _session_flow() -> dict[str, int]:
    return {"next_incoming_id": 0, "incoming_window": 100, "next_outgoing_id": 0,
            "outgoing_window": 100}  # fmt: skip


def test_real_transfers_in_flight_when_we_detach_with_an_error() -> None:
    p, cs, ss = ready()
    snd, rcv = p.link(cs)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(5)
    p.pump()
    for _ in range(3):
        snd.send(b"m" * 2000)
    rcv.detach(error=ERROR)
    c, s = p.pump()
    assert not of(s, a.events.DeliveryReceived) and not of(c + s, a.events.ProtocolError)
    assert of(c, a.events.LinkDetached)[0].error == ERROR
    assert snd.state is rcv.state is a.LinkState.DETACHED
    events = inject(
        p.server,
        a.definitions.amqp10.performatives.Flow(**_session_flow(), handle=0, delivery_count=0),
    )
    _ended_with(ss, events, "amqp:session:errant-link")


def test_a_detach_or_a_new_attach_on_the_errant_handle() -> None:
    """A detach is not errant input (2.6.5), but no link is attached to the handle; an attach
    reusing the released handle for another link is fine."""
    p, cs, ss = ready()
    _snd, rcv = p.link(cs)
    rcv.detach(error=ERROR)
    p.pump()
    events = inject(p.server, a.definitions.amqp10.performatives.Detach(handle=0))
    _ended_with(ss, events, "amqp:session:unattached-handle")
    p, cs, _ss = ready()
    _snd, rcv = p.link(cs)
    rcv.detach(error=ERROR)
    p.pump()
    snd2 = cs.attach_sender("other", target="q")
    assert snd2.handle == 0
    _, s = p.pump()
    of(s, a.events.LinkAttached)[0].link.attach()
    of(s, a.events.LinkAttached)[0].link.flow(1)
    p.pump()
    snd2.send(b"fine")
    c, s = p.pump()
    assert of(s, a.events.DeliveryReceived) and not of(c + s, a.events.ProtocolError)


def _sent_and_received(p: Pair, cs: a.Session, n: int) -> tuple[a.Sender, a.Receiver, list]:
    """The server sends ``n`` unsettled deliveries to the client."""
    rcv, snd = p.link(cs, client_sends=False)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(n)
    p.pump()
    for _ in range(n):
        snd.send(b"m")
    c, _ = p.pump()
    return snd, rcv, [e.delivery for e in of(c, a.events.DeliveryReceived)]


def test_dispositions_of_an_errant_link_are_ignored() -> None:
    """Settled before the peer saw our error detach, or after: ignored (the two cannot be
    told apart, see Link.detach)."""
    p, cs, ss = ready()
    snd, rcv, got = _sent_and_received(p, cs, 2)
    snd.detach(error=ERROR)
    assert not snd.unsettled
    rcv.settle(got[0], a.Accepted())  # crosses our detach
    c, s = p.pump()
    assert not of(c + s, a.events.ProtocolError) and not of(s, a.events.DeliveryUpdated)
    with pytest.raises(a.LocalProtocolError, match="destroyed"):
        rcv.settle(got[1], a.Accepted())
    events = inject(
        p.server,
        a.definitions.amqp10.performatives.Disposition(
            role=a.definitions.amqp10.performatives.Role.RECEIVER, first=0, last=5, settled=True
        ),
    )
    assert events == [] and ss.state is a.SessionState.MAPPED


def test_dispositions_after_a_non_closing_answer_are_ignored() -> None:
    """A peer that suspended the link may settle its deliveries until our error detach
    reaches it: such dispositions cannot be told from errant ones, and are dropped."""
    p, cs, ss = ready()
    snd, rcv, _got = _sent_and_received(p, cs, 2)
    rcv.detach(closed=False)
    snd.detach(error=ERROR, closed=False)  # crossing
    p.pump()
    assert rcv.state is snd.state is a.LinkState.DETACHED
    events = inject(
        p.server,
        a.definitions.amqp10.performatives.Disposition(
            role=a.definitions.amqp10.performatives.Role.RECEIVER, first=0, last=1, settled=True
        ),
    )
    assert events == [] and ss.state is a.SessionState.MAPPED


def test_after_an_error_without_close_the_peer_must_resume() -> None:
    """A re-attach without an unsettled map is errant; our engine, told of the error, resumes
    (it sends an unsettled map, empty if need be), and the link works again."""
    p, cs, ss = ready()
    snd, rcv, got = _sent_and_received(p, cs, 1)
    snd.detach(error=ERROR, closed=False)
    c, _ = p.pump()
    assert of(c, a.events.LinkDetached)[0].closed is False
    with pytest.raises(a.LocalProtocolError, match="destroyed"):
        rcv.settle(got[0], a.Accepted())  # its id means nothing to the peer now
    assert list(rcv.unsettled) == [got[0].tag]  # ... but it can be resumed
    events = inject(
        p.server,
        a.definitions.amqp10.performatives.Attach(
            name="link", handle=0, role=a.definitions.amqp10.performatives.Role.RECEIVER
        ),
    )
    _ended_with(ss, events, "amqp:session:errant-link")

    p, cs, ss = ready()
    snd, rcv, got = _sent_and_received(p, cs, 0)
    snd.detach(error=ERROR, closed=False)
    p.pump()
    rcv2 = cs.attach_receiver("link", source="q")
    _, s = p.pump()
    (att,) = of(s, a.events.LinkAttached)
    assert att.remote.unsettled == {} and not of(s, a.events.ProtocolError)
    snd2 = att.link
    assert isinstance(snd2, a.Sender)
    snd2.attach()
    p.pump()
    rcv2.flow(1)
    p.pump()
    snd2.send(b"again")
    c, _ = p.pump()
    assert of(c, a.events.DeliveryReceived)[0].data == b"again"


def test_our_endpoint_reattached_after_our_error_starts_afresh() -> None:
    p, cs, _ss = ready()
    snd, _rcv = p.link(cs)
    snd.detach(error=ERROR, closed=False)
    p.pump()
    snd.attach()  # the same, destroyed, endpoint
    _, s = p.pump()
    assert of(s, a.events.LinkAttached)[0].remote.unsettled is None
    assert not snd._destroyed and not of(s, a.events.ProtocolError)


def test_a_refused_link_may_be_attached_again_as_usual() -> None:
    """A refusal detaches with an error but closes the link: a new attach of the name is a
    new link, not a pipelined re-attach."""
    p, cs, _ss = ready()
    cs.attach_receiver("r", source="nothing")
    _, s = p.pump()
    of(s, a.events.LinkAttached)[0].link.refuse()
    p.pump()
    cs.attach_receiver("r", source="something")
    c, s = p.pump()
    assert of(s, a.events.LinkAttached) and not of(c + s, a.events.ProtocolError)


def test_a_link_errored_before_we_answered_is_resumed_when_attached_again() -> None:
    p, cs, _ss = ready()
    cs.attach_receiver("early", source="q")
    _, s = p.pump()
    late = of(s, a.events.LinkAttached)[0].link
    cs.links[0].detach(error=ERROR, closed=False)
    _, s = p.pump()  # answered by the engine: attach without terminus, detach
    assert of(s, a.events.LinkDetached) and late.state is a.LinkState.DETACHED
    late.attach()
    c, _ = p.pump()
    assert of(c, a.events.LinkAttached)[0].remote.unsettled == {} and not of(
        c, a.events.ProtocolError
    )


def test_an_error_detach_of_a_resumed_link_before_its_deliveries_are_resumed() -> None:
    """Deliveries carried over by a resume have no delivery-id until resumed (2.6.13):
    destroying the link then forgets them all the same."""
    p, cs, _ss = ready()
    snd, _rcv, got = _sent_and_received(p, cs, 1)
    snd.detach(error=ERROR, closed=False)
    p.pump()
    rcv2 = cs.attach_receiver("link", source="q")
    assert list(rcv2.unsettled) == [got[0].tag]
    rcv2.detach(error=ERROR)  # before the peer's answer
    c, s = p.pump()
    assert not rcv2.unsettled and not of(c + s, a.events.ProtocolError)


# -- 2.6.6: a closing detach crossing a non-closing one ----------------------------------------


def _bodies(data: bytes) -> list[object]:
    """The performatives in ``data`` (frames only, no protocol header)."""
    parser = a.framing.amqp10.FrameParser(max_frame_size=1 << 20)
    parser.feed(data)
    out = []
    while (frame := parser.next_frame()) is not None:
        out.append(frame.body)
    return out


def _sent(p: Pair, way: str, kind: type) -> list:
    return [b for w, data in p.wire if w == way for b in _bodies(data) if isinstance(b, kind)]


def test_a_closing_detach_crossing_a_suspending_one_is_closed_by_a_reattach() -> None:
    """We suspend while the peer closes: we re-attach and close (core spec 2.6.6), and the
    peer answers both; neither application sees an attach."""
    p, cs, _ss = ready()
    snd, rcv, got = _sent_and_received(p, cs, 1)  # the server sends, the client receives
    p.wire.clear()
    rcv.detach(closed=False)
    snd.detach(closed=True)
    c, s = p.pump()
    assert [e.closed for e in of(c, a.events.LinkDetached)] == [True]
    assert [e.closed for e in of(s, a.events.LinkDetached)] == [False, True]
    assert not of(c + s, a.events.LinkAttached) and not of(c + s, a.events.ProtocolError)
    assert [d.closed for d in _sent(p, "c>s", a.definitions.amqp10.performatives.Detach)] == [
        False,
        True,
    ]
    assert (
        len(_sent(p, "c>s", a.definitions.amqp10.performatives.Attach))
        == len(_sent(p, "s>c", a.definitions.amqp10.performatives.Attach))
        == 1
    )
    assert rcv.state is snd.state is a.LinkState.DETACHED
    assert not rcv.unsettled and not snd.unsettled  # closed: nothing to resume
    with pytest.raises(a.LocalProtocolError):
        rcv.settle(got[0], a.Accepted())
    rcv2 = cs.attach_receiver("link", source="q")  # the name starts afresh
    c, s = p.pump()
    assert of(s, a.events.LinkAttached)[0].remote.unsettled is None and rcv2.state is not None


def test_the_peer_re_attaching_to_close_is_answered_and_the_link_stays_unusable() -> None:
    p, cs, ss = ready()
    _snd, rcv = p.link(cs)  # the client's sender on handle 0
    assert isinstance(rcv, a.Receiver)
    rcv.detach()  # closing
    inject(
        p.server, a.definitions.amqp10.performatives.Detach(handle=0, closed=False)
    )  # the client's, crossing
    p.server.data_to_send()
    attach = a.definitions.amqp10.performatives.Attach(
        name="link",
        handle=0,
        role=a.definitions.amqp10.performatives.Role.SENDER,
        initial_delivery_count=0,
    )
    assert inject(p.server, attach) == []
    assert [type(b) for b in _bodies(p.server.data_to_send())] == [
        a.definitions.amqp10.performatives.Attach
    ]
    assert rcv.state is a.LinkState.ATTACHED
    for command in (lambda: rcv.flow(1), rcv.detach):
        with pytest.raises(a.LocalProtocolError, match="being closed"):
            command()
    assert p.server.data_to_send() == b""
    events = inject(p.server, a.definitions.amqp10.performatives.Detach(handle=0, closed=True))
    assert [e.closed for e in of(events, a.events.LinkDetached)] == [True]
    assert [b.closed for b in _bodies(p.server.data_to_send())] == [True]
    assert rcv.state is a.LinkState.DETACHED and ss.state is a.SessionState.MAPPED


def test_the_peer_re_attaching_to_close_while_we_have_no_free_handle() -> None:
    p = Pair()
    p.open()
    p.client.begin(handle_max=0)  # the server may use handle 0 only
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    ss.begin()
    p.pump()
    ss.attach_receiver("link", source="q")
    c, _ = p.pump()
    of(c, a.events.LinkAttached)[0].link.attach()
    p.pump()
    (rcv,) = ss.links
    rcv.detach()  # closing; handle 0 is free
    inject(
        p.server, a.definitions.amqp10.performatives.Detach(handle=0, closed=False)
    )  # the client's, crossing
    other = ss.attach_sender("other", target="q")  # takes handle 0
    p.server.data_to_send()
    attach = a.definitions.amqp10.performatives.Attach(
        name="link",
        handle=1,
        role=a.definitions.amqp10.performatives.Role.SENDER,
        initial_delivery_count=0,
    )
    assert inject(p.server, attach) == []
    assert p.server.data_to_send() == b""  # no handle to answer with yet
    events = inject(p.server, a.definitions.amqp10.performatives.Detach(handle=1, closed=True))
    assert [e.closed for e in of(events, a.events.LinkDetached)] == [True]
    other.detach()
    assert [type(b) for b in _bodies(p.server.data_to_send())] == [
        a.definitions.amqp10.performatives.Detach,
        a.definitions.amqp10.performatives.Attach,
        a.definitions.amqp10.performatives.Detach,
    ]


def test_re_attaching_to_close_waits_for_a_free_handle() -> None:
    p = Pair()
    p.open()
    cs = p.client.begin()
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    ss.handle_max = 1  # the client may use handles 0 and 1
    ss.begin()
    p.pump()
    first, _ = p.link(cs, name="first")
    second, _ = p.link(cs, name="second")
    srv_first = next(link for link in ss.links if link.name == "first")
    first.detach(closed=False)
    srv_first.detach(closed=True)
    third = cs.attach_sender("third", target="q")  # takes handle 0
    c, s = p.pump()
    assert first.state is a.LinkState.DETACHED and first in cs._owed
    with pytest.raises(a.LocalProtocolError):
        first.attach()
    second.detach()  # frees handle 1: the re-attach and close go out
    c, s = p.pump()
    assert not of(c + s, a.events.ProtocolError)
    assert first.state is a.LinkState.DETACHED and first not in cs._owed
    assert [e.link.name for e in of(s, a.events.LinkDetached)] == ["second", "first"]
    assert third.handle == 0


# -- 2.6.13, 2.7.3: incomplete unsettled maps ------------------------------------------------------

SMALL = {"max_frame_size": 512}


def _suspended_with(n: int) -> tuple[Pair, a.Session, a.Sender, a.Receiver, list]:
    """``n`` unsettled deliveries, held by both ends of a link the client then suspends."""
    p, cs, _ss = ready(client=SMALL, server=SMALL)
    snd, rcv = p.link(cs, name="many")
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(n)
    p.pump()
    sent = [snd.send(b"m") for _ in range(n)]
    p.pump()
    snd.detach(closed=False)
    p.pump()
    assert len(snd.unsettled) == len(rcv.unsettled) == n
    return p, cs, snd, rcv, sent


def test_an_unsettled_map_too_large_for_a_frame_is_sent_incomplete() -> None:
    p, cs, _snd, rcv, sent = _suspended_with(200)
    p.wire.clear()
    snd2 = cs.attach_sender("many", target="q")
    _, s = p.pump()
    (ours,) = _sent(p, "c>s", a.definitions.amqp10.performatives.Attach)
    assert ours.incomplete_unsettled and 0 < len(ours.unsettled) < 200
    assert len(a.framing.amqp10.encode_frame(ours)) <= 512
    assert list(ours.unsettled) == [d.tag for d in sent[: len(ours.unsettled)]]  # oldest first
    (att,) = of(s, a.events.LinkAttached)
    assert att.remote.incomplete_unsettled
    receiver = att.link
    assert isinstance(receiver, a.Receiver)
    receiver.attach()
    c, _ = p.pump()
    (theirs,) = _sent(p, "s>c", a.definitions.amqp10.performatives.Attach)
    assert theirs.incomplete_unsettled  # the receiver's is too large as well
    # Neither end took a missing tag for a settlement.
    assert len(snd2.unsettled) == len(receiver.unsettled) == 200
    assert not of(c, a.events.DeliveryUpdated)
    receiver.flow(10)
    p.pump()
    with pytest.raises(a.LocalProtocolError, match="incomplete"):
        snd2.send(b"new")
    assert snd2.link_credit == 10 and p.client.data_to_send() == b""
    assert rcv.state is a.LinkState.DETACHED  # the old endpoint is out of date


def test_resume_settle_and_detach_until_the_maps_are_complete() -> None:
    """2.7.3: "an endpoint can attach, resume, settle, and detach until enough unsettled
    state has been cleared for an attach where this flag is set to false"."""
    p, cs, _snd, _rcv, _deliveries = _suspended_with(200)
    rounds = 0
    while True:
        rounds += 1
        snd = cs.attach_sender("many", target="q")
        _, s = p.pump()
        rcv = of(s, a.events.LinkAttached)[0].link
        assert isinstance(rcv, a.Receiver)
        rcv.attach()
        c, _ = p.pump()
        if not (
            snd._sent_incomplete or of(c, a.events.LinkAttached)[0].remote.incomplete_unsettled
        ):
            break
        rcv.flow(100)
        p.pump()
        for delivery in list(snd.unsettled.values())[:100]:
            snd.resume(delivery, b"m")
        _, s = p.pump()
        for e in of(s, a.events.DeliveryReceived):
            rcv.settle(e.delivery, a.Accepted())
        c, s = p.pump()
        assert not of(c + s, a.events.ProtocolError)
        snd.detach(closed=False)
        p.pump()
    assert rounds == 2 and len(snd.unsettled) == len(rcv.unsettled) == 100  # complete maps
    rcv.flow(1)
    p.pump()
    snd.send(b"new at last")
    _, s = p.pump()
    assert of(s, a.events.DeliveryReceived)[0].data == b"new at last"


def test_a_new_delivery_after_our_incomplete_map_detaches_the_link() -> None:
    p, cs, _snd, _rcv, _deliveries = _suspended_with(200)
    snd = cs.attach_sender("many", target="q")  # incomplete
    _, s = p.pump()
    rcv = of(s, a.events.LinkAttached)[0].link
    assert isinstance(rcv, a.Receiver)
    rcv.attach()
    rcv.flow(5)
    p.pump()
    assert rcv._sent_incomplete and snd.handle is not None
    resumed = a.definitions.amqp10.performatives.Transfer(
        handle=snd.handle, delivery_id=500, delivery_tag=b"\x00", resume=True
    )
    assert not of(inject(p.server, resumed), a.events.ProtocolError)
    new = a.definitions.amqp10.performatives.Transfer(
        handle=snd.handle, delivery_id=501, delivery_tag=b"new"
    )
    events = inject(p.server, new)
    assert _conditions(events) == ["amqp:illegal-state"]
    assert rcv.state is a.LinkState.DETACH_SENT


def test_the_receivers_incomplete_map_alone_stops_new_deliveries() -> None:
    p, cs, _ss = ready(client=SMALL, server=SMALL)
    snd, rcv = p.link(cs, name="many")
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(200)
    p.pump()
    for _ in range(200):
        snd.settle(snd.send(b"m"))  # the sender forgets them; the receiver holds them
    p.pump()
    snd.detach(closed=False)
    p.pump()
    assert not snd.unsettled and len(rcv.unsettled) == 200
    rcv.attach()  # the receiver resumes: its map is too large
    c, _ = p.pump()
    (att,) = of(c, a.events.LinkAttached)
    assert att.remote.incomplete_unsettled
    snd2 = att.link
    assert isinstance(snd2, a.Sender)
    snd2.attach()
    p.pump()
    rcv.flow(1)
    p.pump()
    assert not snd2._sent_incomplete and snd2.link_credit == 1
    with pytest.raises(a.LocalProtocolError, match="incomplete"):
        snd2.send(b"new")


# -- a limit on unsettled deliveries -----------------------------------------------------------


def test_a_sender_refuses_to_start_more_unsettled_deliveries_than_its_limit() -> None:
    p, cs, _ss = ready()
    snd, rcv = p.link(cs, max_unsettled=2)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    assert snd.max_unsettled == 2 and rcv.max_unsettled is None
    rcv.flow(10)
    p.pump()
    snd.send(b"1")
    snd.send(b"2")
    with pytest.raises(a.LocalProtocolError, match="max_unsettled is 2"):
        snd.send(b"3")
    assert snd.link_credit == 8 and len(snd.unsettled) == 2
    snd.send(b"pre-settled", settled=True)  # creates no unsettled state
    _, s = p.pump()
    rcv.settle(of(s, a.events.DeliveryReceived)[0].delivery, a.Accepted())
    p.pump()
    assert len(snd.unsettled) == 1
    snd.send(b"3")


def test_a_receiver_grants_no_credit_beyond_its_limit() -> None:
    p, cs, _ss = ready()
    rcv, snd = p.link(cs, client_sends=False, max_unsettled=3)  # the client receives
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(10)
    _, s = p.pump()
    assert rcv.link_credit == 3 and of(s, a.events.CreditChanged)[-1].credit == 3
    for _ in range(3):
        snd.send(b"m")
    c, _ = p.pump()
    got = [e.delivery for e in of(c, a.events.DeliveryReceived)]
    rcv.flow(10)
    assert rcv.link_credit == 0
    rcv.settle(got[0], a.Accepted())
    rcv.add_credit(10)
    assert rcv.link_credit == 1


def test_a_peer_beyond_our_limit_gets_a_detach() -> None:
    p, cs, _ss = ready(server={"max_unsettled": 2})  # the default of the server's links
    snd, rcv = p.link(cs)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    assert rcv.max_unsettled == 2
    rcv.max_unsettled = None
    rcv.flow(5)
    p.pump()
    rcv.max_unsettled = 1  # lowered after the credit went out
    snd.send(b"1")
    snd.send(b"2", settled=True)  # settled: not counted
    snd.send(b"3")
    c, s = p.pump()
    assert _conditions(s) == ["amqp:resource-limit-exceeded"]
    assert of(c, a.events.LinkDetached)[0].error.condition == "amqp:resource-limit-exceeded"
    assert len(of(s, a.events.DeliveryReceived)) == 2


@pytest.mark.parametrize("bad", [-1, 1.5, "3"])
def test_a_bad_limit_is_refused(bad: object) -> None:
    p, cs, _ss = ready()
    for attach in (cs.attach_sender, cs.attach_receiver):
        with pytest.raises(a.LocalProtocolError, match="max_unsettled"):
            attach("x", max_unsettled=bad)  # type: ignore[operator]
    assert p.client.data_to_send() == b"" and not cs.links


# -- refused commands change nothing; shared session defaults --------------------------------------


def _peer_link_without_a_free_handle() -> tuple[Pair, a.Link]:
    p = Pair()
    p.open()
    p.client.begin(handle_max=0)  # the server may use handle 0 only
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    ss.begin()
    p.pump()
    ss.attach_sender("mine", target="q")  # takes it
    cs = p.client.sessions[0]
    cs.attach_sender("theirs", target=a.Target(address="t"))
    _, s = p.pump()
    link = of(s, a.events.LinkAttached)[0].link
    p.server.data_to_send()
    return p, link


def test_accepting_or_refusing_without_a_free_handle_leaves_the_termini_alone() -> None:
    p, link = _peer_link_without_a_free_handle()
    assert link.source is None and link.target is None
    with pytest.raises(a.LocalProtocolError, match="no free link handle"):
        link.attach(source=a.Source(address="s"), target=a.Target(address="x"))
    with pytest.raises(a.LocalProtocolError, match="no free link handle"):
        link.attach()
    with pytest.raises(a.LocalProtocolError, match="no free link handle"):
        link.refuse()
    assert link.source is None and link.target is None and link.handle is None
    assert link.state is a.LinkState.ATTACH_RCVD and p.server.data_to_send() == b""


def test_an_attach_too_large_for_the_peer_is_refused_before_any_change() -> None:
    p, cs, _ss = ready(server=SMALL)
    with pytest.raises(a.LocalProtocolError, match="max-frame-size"):
        cs.attach_sender("big", target="q", properties={"x": "y" * 600})
    assert not cs.links and p.client.data_to_send() == b""


def test_resuming_a_suspended_link_without_a_free_handle_changes_nothing() -> None:
    p = Pair()
    p.open()
    cs = p.client.begin()
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    ss.handle_max = 0  # the client may use handle 0 only
    ss.begin()
    p.pump()
    snd, rcv = p.link(cs, name="kept")
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(1)
    p.pump()
    delivery = snd.send(b"m")
    p.pump()
    snd.detach(closed=False)
    p.pump()
    p.link(cs, name="other")  # takes handle 0
    with pytest.raises(a.LocalProtocolError, match="no free link handle"):
        cs.attach_sender("kept", target="q")
    assert delivery.link is snd and snd.unsettled == {delivery.tag: delivery}
    assert [link.name for link in cs.links] == ["kept", "other"] and snd in cs.links


@pytest.mark.parametrize("bad", [-1, 2**32, 1.0, None])
def test_set_available_checks_its_argument_first(bad: object) -> None:
    p, cs, _ss = ready()
    snd, _ = p.link(cs)
    assert isinstance(snd, a.Sender)
    snd.detach()
    with pytest.raises(a.LocalProtocolError, match="not a uint"):
        snd.set_available(bad)  # type: ignore[arg-type]
    assert snd.available == 0


def test_a_session_the_peer_begins_has_the_default_windows() -> None:
    p = Pair()
    p.open()
    cs = p.client.begin()
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    for attr in ("incoming_window", "outgoing_window", "handle_max"):
        assert getattr(ss, attr) == getattr(cs, attr)


# -- an idle time-out before our open --------------------------------------------------------


@pytest.mark.parametrize("client_sends", [b"", b"open"])
def test_an_idle_time_out_before_our_open_sends_open_then_close(client_sends: bytes) -> None:
    """A server whose peer went silent before its open (HDR_EXCH), or whose application never
    answered the open (OPEN_RCVD): the close with resource-limit-exceeded must follow an
    open of ours (core spec 2.4.7)."""
    server = a.Connection(client=False, idle_timeout=2.0)
    client = a.Connection(client=True)
    client.open(now=0.0)
    data = client.data_to_send()
    server.receive_data(data if client_sends else a.framing.amqp10.AMQP_HEADER, 0.0)
    expected = a.ConnectionState.OPEN_RCVD if client_sends else a.ConnectionState.HDR_EXCH
    assert server.state is expected
    server.data_to_send()  # (our header)
    events = server.handle_timer(2.0)
    assert of(events, a.events.IdleTimedOut) and of(events, a.events.ConnectionEnded)
    assert [type(b) for b in _bodies(server.data_to_send())] == [
        a.definitions.amqp10.performatives.Open,
        a.definitions.amqp10.performatives.Close,
    ]


def test_an_idle_time_out_before_our_open_reaches_the_peer_as_open_and_close() -> None:
    server = a.Connection(client=False, idle_timeout=2.0)
    client = a.Connection(client=True)
    client.open(now=0.0)
    server.receive_data(client.data_to_send(), 0.0)
    server.handle_timer(2.0)
    events = client.receive_data(server.data_to_send(), 2.0)
    assert of(events, a.events.ConnectionOpened)
    assert (
        of(events, a.events.ConnectionClosed)[0].error.condition == "amqp:resource-limit-exceeded"
    )
