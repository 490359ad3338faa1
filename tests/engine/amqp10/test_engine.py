"""The protocol engine, two ends wired in memory (core spec 2.4-2.7, 3.4)."""

from __future__ import annotations

import tracemalloc

import pytest
from support.engine_pair import LARGE, Pair, large_on_the_wire, of

import amqp_sansio as a
import amqp_sansio.engine.amqp10
import amqp_sansio.framing.amqp10
from amqp_sansio.definitions.amqp10 import messaging, performatives

S = a.ConnectionState


@pytest.mark.parametrize("chunk", [1, 7, None])
def test_open_session_link_transfer_settle_close(chunk: int | None) -> None:
    p = Pair(chunk=chunk)
    p.open()
    assert p.client.state is S.OPENED and p.server.state is S.OPENED
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(5)
    c, _ = p.pump()
    assert of(c, a.events.CreditChanged)[-1].credit == 5
    payload = a.Message(body=b"hello").encode()
    snd.send(payload)
    _, s = p.pump()
    (got,) = of(s, a.events.DeliveryReceived)
    assert got.data == payload and got.complete
    rcv.settle(got.delivery, a.Accepted())
    c, _ = p.pump()
    (upd,) = of(c, a.events.DeliveryUpdated)
    assert upd.settled and upd.state == a.Accepted()
    p.client.close()
    c, s = p.pump()
    assert (
        of(c, a.events.ConnectionEnded)
        and of(s, a.events.ConnectionClosed)
        and of(s, a.events.ConnectionEnded)
    )
    assert p.client.state is S.END and p.server.state is S.END


def test_large_message_is_split_at_the_peer_max_frame_size_and_reassembled() -> None:
    p = Pair(server={"max_frame_size": 1024})
    p.open()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(1)
    p.pump()
    big = bytes(range(256)) * 1000
    snd.send(big)
    _, s = p.pump()
    assert of(s, a.events.DeliveryReceived)[0].data == big
    frames = [d for way, d in p.wire if way == "c>s"]
    assert all(len(chunk) > 0 for chunk in frames)


@pytest.mark.parametrize("streaming", [False, True])
@pytest.mark.parametrize("chunk", [None, 1 << 30])
def test_large_frames_received_whole_reach_the_application_as_bytes(
    streaming: bool, chunk: int | None
) -> None:
    """Frames parsed in place from the bytes received (``chunk`` 1 GiB: each hand-over
    whole) give views of those bytes as payload; what the application gets is bytes."""
    p = Pair(chunk=chunk, server={"max_frame_size": 16384})
    p.open()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.streaming = streaming
    rcv.flow(2)
    p.pump()
    big = bytes(range(256)) * 200
    snd.send(big)
    snd.send(big[:10_000])
    _, s = p.pump()
    got = of(s, a.events.DeliveryReceived)
    assert all(type(e.data) is bytes for e in got)
    if streaming:
        assert b"".join(e.data for e in got) == big + big[:10_000]
        assert [e.complete for e in got][-1] and len(got) > 2
    else:
        assert [e.data for e in got] == [big, big[:10_000]]


# -- connection (2.2, 2.4) -------------------------------------------------------------------


def test_pipelined_open_begin_attach_before_the_server_answers() -> None:
    p = Pair()
    p.client.open(now=0)
    assert p.client.state is S.OPEN_PIPE
    session = p.client.begin()  # pipelined on channel 0: allowed before the peer's open
    session.attach_sender("early", target="q")
    _, s = p.pump()
    assert [type(e) for e in s] == [
        a.events.ConnectionOpened,
        a.events.SessionBegun,
        a.events.LinkAttached,
    ]
    assert p.client.state is S.OPEN_SENT
    with pytest.raises(a.LocalProtocolError):
        s[1].session.begin()  # nothing may be sent before our open
    p.server.open()
    s[1].session.begin()
    s[2].link.attach()
    c, _ = p.pump()
    assert [type(e) for e in c] == [
        a.events.ConnectionOpened,
        a.events.SessionBegun,
        a.events.LinkAttached,
    ]
    assert s[2].link.state is a.LinkState.ATTACHED


def test_open_then_close_pipelined_oc_pipe() -> None:
    p = Pair()
    p.client.open(now=0)
    p.client.close()
    assert p.client.state is S.OC_PIPE
    out = p.client.data_to_send()
    assert out.startswith(a.framing.amqp10.AMQP_HEADER)
    events = p.server.receive_data(out, 0)
    # The server answers the pipelined open and close with its own open and close.
    assert [type(e) for e in events] == [
        a.events.ConnectionOpened,
        a.events.ConnectionClosed,
        a.events.ConnectionEnded,
    ]
    reply = p.server.data_to_send()
    p.client.receive_data(reply[:8], 0)
    assert p.client.state is S.CLOSE_PIPE
    c = p.client.receive_data(reply[8:], 0)
    assert [type(e) for e in c] == [
        a.events.ConnectionOpened,
        a.events.ConnectionClosed,
        a.events.ConnectionEnded,
    ]
    assert p.client.state is S.END and p.server.state is S.END


def test_close_during_open_sent_goes_through_close_pipe() -> None:
    p = Pair()
    p.client.open(now=0)
    p.pump()
    assert p.client.state is S.OPEN_SENT
    p.client.close()
    assert p.client.state is S.CLOSE_PIPE
    p.server.open()
    p.pump()
    assert p.client.state is S.END and p.server.state is S.END


def test_simultaneous_close() -> None:
    p = Pair()
    p.open()
    p.client.close()
    p.server.close(a.Error(condition="amqp:internal-error", description="going away"))
    c, s = p.pump()
    assert of(c, a.events.ConnectionClosed)[0].error.description == "going away"
    assert of(s, a.events.ConnectionClosed)[0].error is None
    assert p.client.state is S.END and p.server.state is S.END


def test_server_refuses_an_open_with_open_then_close() -> None:
    p = Pair()
    p.client.open(now=0)
    p.pump()
    assert p.server.state is S.OPEN_RCVD
    p.server.close(a.Error(condition="amqp:unauthorized-access"))
    c, _ = p.pump()
    assert [type(e) for e in c] == [
        a.events.ConnectionOpened,
        a.events.ConnectionClosed,
        a.events.ConnectionEnded,
    ]
    assert of(c, a.events.ConnectionClosed)[0].error.condition == "amqp:unauthorized-access"


def test_close_with_error_discards_until_the_peer_closes() -> None:
    p = Pair()
    p.open()
    cs, _ = p.session()
    p.server.close(a.Error(condition="amqp:internal-error"))
    assert p.server.state is S.DISCARDING
    cs.end()  # crosses the server's close: the server discards it
    _c, s = p.pump()
    assert not of(s, a.events.SessionEnded)
    assert p.server.state is S.END and p.client.state is S.END


def test_commands_illegal_in_the_state_raise_and_send_nothing() -> None:
    p = Pair()
    with pytest.raises(a.LocalProtocolError):
        p.client.begin()
    assert p.client.data_to_send() == b""
    p.open()
    with pytest.raises(a.LocalProtocolError):
        p.client.open()
    p.client.close()
    with pytest.raises(a.LocalProtocolError):
        p.client.begin()
    with pytest.raises(a.LocalProtocolError):
        p.client.close()


def test_close_before_anything_was_said_just_ends() -> None:
    conn = a.Connection()
    conn.close()
    assert conn.state is S.END and conn.data_to_send() == b""


@pytest.mark.parametrize(
    "header, name",
    [
        (b"AMQP\x00\x00\x09\x01", "AMQP 0-9-1"),
        (b"AMQP\x01\x01\x00\x0a", "AMQP 0-10"),
    ],
)
def test_another_protocol_version_gets_our_header_and_the_end(header: bytes, name: str) -> None:
    server = a.Connection(client=False)
    events = server.receive_data(header, 0)
    (bad,) = of(events, a.events.UnsupportedProtocol)
    assert bad.version_name == name and bad.header == header
    assert of(events, a.events.ConnectionEnded)
    assert server.data_to_send() == a.framing.amqp10.AMQP_HEADER
    assert server.state is S.END
    assert server.receive_data(b"more", 1) == []


def test_a_sasl_header_where_amqp_is_expected_is_refused() -> None:
    server = a.Connection(client=False)
    events = server.receive_data(a.framing.amqp10.SASL_HEADER, 0)
    assert "SASL" in of(events, a.events.UnsupportedProtocol)[0].version_name
    assert server.data_to_send() == a.framing.amqp10.AMQP_HEADER


def test_the_client_learns_the_server_speaks_another_version() -> None:
    client = a.Connection()
    client.open(now=0)
    client.data_to_send()
    events = client.receive_data(b"AMQP\x00\x00\x09\x01", 0)
    assert of(events, a.events.UnsupportedProtocol) and client.state is S.END
    assert client.data_to_send() == b""  # our header went out already


def test_transport_closed_by_the_peer_ends_the_connection() -> None:
    p = Pair()
    p.open()
    events = p.client.receive_data(b"", 0)
    assert of(events, a.events.ConnectionEnded) and p.client.state is S.END


def test_max_frame_size_below_512_is_refused_both_ways() -> None:
    with pytest.raises(a.LocalProtocolError):
        a.Connection(max_frame_size=511)
    server = a.Connection(client=False)
    raw = a.framing.amqp10.AMQP_HEADER + a.framing.amqp10.encode_frame(
        performatives.Open(container_id="x", max_frame_size=100)
    )
    events = server.receive_data(raw, 0)
    assert of(events, a.events.ProtocolError)[0].error.condition == "amqp:invalid-field"


def test_frames_larger_than_our_max_are_a_framing_error() -> None:
    p = Pair(server={"max_frame_size": 512})
    p.open()
    events = p.server.receive_data(b"\x00\x00\x10\x00\x02\x00\x00\x00", 0)
    (err,) = of(events, a.events.ProtocolError)
    assert err.error.condition == "amqp:connection:framing-error"
    assert p.server.state is S.END
    c, _ = p.pump()
    assert of(c, a.events.ConnectionClosed)[0].error.condition == "amqp:connection:framing-error"


@pytest.mark.parametrize(
    "body, condition",
    [
        (b"\x00\x53\x10\xc0\x01\x00", "amqp:invalid-field"),  # an open without container-id
        (b"\x00\x53\x11\xc0\x02\x01\xff", "amqp:decode-error"),  # unknown format code
        (b"\x00\x53\x12\xc0\x02\x01\xa1", "amqp:decode-error"),  # truncated
    ],
)
def test_malformed_performatives_close_with_the_decode_condition(
    body: bytes, condition: str
) -> None:
    p = Pair()
    p.open()
    events = p.server.receive_data(a.framing.amqp10.encode_frame(None, payload=body), 0)
    assert of(events, a.events.ProtocolError)[0].error.condition == condition
    c, _ = p.pump()
    assert of(c, a.events.ConnectionClosed)[0].error.condition == condition


# -- time (2.4.5) ---------------------------------------------------------------------------


def test_heartbeats_keep_an_idle_connection_open_for_three_time_outs() -> None:
    p = Pair(client={"idle_timeout": 2.0}, server={"idle_timeout": 2.0})
    p.open()
    assert p.client.remote.idle_time_out == 1000  # half the threshold is advertised
    for _ in range(30):
        deadline = min(p.client.next_deadline(), p.server.next_deadline())
        assert deadline > p.now
        p.advance(deadline - p.now)
    assert p.now >= 6.0
    assert p.client.state is S.OPENED and p.server.state is S.OPENED
    assert a.framing.amqp10.HEARTBEAT in [d for _, d in p.wire]


def test_a_silent_peer_is_detected_by_our_time_out() -> None:
    p = Pair(client={"idle_timeout": 2.0})
    p.open()
    p.now += 2.0
    events = p.client.handle_timer(p.now)
    assert of(events, a.events.IdleTimedOut) and of(events, a.events.ConnectionEnded)
    _, s = p.pump()
    assert of(s, a.events.ConnectionClosed)[0].error.condition == "amqp:resource-limit-exceeded"
    assert p.client.next_deadline() is None


def test_no_deadline_without_time_outs() -> None:
    p = Pair()
    p.open()
    assert p.client.next_deadline() is None and p.server.next_deadline() is None
    assert p.client.handle_timer(100.0) == []


# -- sessions (2.5) -------------------------------------------------------------------------

SS = a.SessionState


def _opened(**kw: object) -> Pair:
    p = Pair(**kw)  # type: ignore[arg-type]
    p.open()
    return p


def test_session_begin_and_end_both_ways() -> None:
    p = _opened()
    cs, ss = p.session()
    assert cs.state is SS.MAPPED and ss.state is SS.MAPPED
    assert cs.channel == 0 and ss.remote_channel == 0
    ss.end()
    assert ss.state is SS.END_SENT
    c, s = p.pump()
    assert of(c, a.events.SessionEnded)[0].error is None and of(s, a.events.SessionEnded)
    assert cs.state is SS.UNMAPPED and ss.state is SS.UNMAPPED


def test_channels_are_the_lowest_free_and_reused() -> None:
    p = _opened()
    sessions = [p.session()[0] for _ in range(3)]
    assert [s.channel for s in sessions] == [0, 1, 2]
    sessions[1].end()
    p.pump()
    again, _ = p.session()
    assert again.channel == 1


def test_channel_max_limits_sessions() -> None:
    p = _opened(server={"channel_max": 1})
    p.session()
    p.session()
    with pytest.raises(a.LocalProtocolError, match="no free channel"):
        p.client.begin()


def test_simultaneous_end() -> None:
    p = _opened()
    cs, ss = p.session()
    cs.end()
    ss.end()
    c, s = p.pump()
    assert cs.state is SS.UNMAPPED and ss.state is SS.UNMAPPED
    assert of(c, a.events.SessionEnded) and of(s, a.events.SessionEnded)


def test_refusing_a_session_begins_then_ends_with_the_error() -> None:
    p = _opened()
    cs = p.client.begin()
    _, s = p.pump()
    of(s, a.events.SessionBegun)[0].session.end(a.Error(condition="amqp:resource-limit-exceeded"))
    c, _ = p.pump()
    assert of(c, a.events.SessionBegun) and of(c, a.events.SessionEnded)[0].error.condition == (
        "amqp:resource-limit-exceeded"
    )
    assert cs.state is SS.UNMAPPED


def test_end_with_error_discards_until_the_peer_ends() -> None:
    p = _opened()
    cs, ss = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(10)
    p.pump()
    ss.end(a.Error(condition="amqp:internal-error"))
    assert ss.state is SS.DISCARDING
    snd.send(b"in flight")  # crosses the end: discarded
    _c, s = p.pump()
    assert not of(s, a.events.DeliveryReceived)
    assert ss.state is SS.UNMAPPED and cs.state is SS.UNMAPPED


def test_frames_on_a_channel_without_a_session_close_the_connection() -> None:
    p = _opened()
    events = p.server.receive_data(a.framing.amqp10.encode_frame(performatives.End(), channel=5), 0)
    assert of(events, a.events.ProtocolError)[0].error.condition == "amqp:not-allowed"


def test_a_begin_answering_no_session_of_ours_is_refused() -> None:
    p = _opened()
    frame = a.framing.amqp10.encode_frame(
        performatives.Begin(
            remote_channel=9, next_outgoing_id=0, incoming_window=1, outgoing_window=1
        )
    )
    events = p.client.receive_data(frame, 0)
    assert of(events, a.events.ProtocolError)[0].error.condition == "amqp:not-allowed"


def test_session_window_is_respected_and_topped_up() -> None:
    p = _opened()
    cs = p.client.begin()
    _, s = p.pump()
    remote = of(s, a.events.SessionBegun)[0].session
    remote.incoming_window = remote._max_incoming_window = 4  # a small window, for the test
    remote.begin()
    p.pump()
    snd, rcv = p.link(cs)
    rcv.flow(100)
    p.pump()
    assert cs.remote_incoming_window == 4
    for i in range(20):
        snd.send(b"m%d" % i)
    _, s = p.pump()
    assert [e.data for e in of(s, a.events.DeliveryReceived)] == [b"m%d" % i for i in range(20)]
    assert rcv.session.incoming_window >= 2


def test_a_transfer_beyond_our_window_is_a_window_violation() -> None:
    p = _opened()
    cs, ss = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(100)
    p.pump()
    ss.incoming_window = 0  # we said no more; the peer ignores it
    cs.remote_incoming_window = 10
    snd.send(b"x")
    c, s = p.pump()
    assert of(s, a.events.ProtocolError)[0].error.condition == "amqp:session:window-violation"
    assert of(c, a.events.SessionEnded)[0].error.condition == "amqp:session:window-violation"


def test_serial_numbers_wrap() -> None:
    assert a.engine.amqp10.serial.serial_add(0xFFFFFFFF, 1) == 0
    assert a.engine.amqp10.serial.serial_diff(0, 0xFFFFFFFF) == 1
    assert a.engine.amqp10.serial.serial_lt(0xFFFFFFF0, 5) and not a.engine.amqp10.serial.serial_lt(
        5, 0xFFFFFFF0
    )
    assert a.engine.amqp10.serial.serial_le(7, 7)


def test_ids_and_delivery_counts_survive_wrap_around() -> None:
    p = _opened()
    cs, _ss = p.session()
    cs.next_outgoing_id = cs._initial_outgoing_id = 0xFFFFFFFE
    cs._next_delivery_id = 0xFFFFFFFE
    snd = cs.attach_sender("w", target="q", initial_delivery_count=0xFFFFFFFD)
    _, s = p.pump()
    rcv = of(s, a.events.LinkAttached)[0].link
    rcv.attach()
    rcv.flow(10)
    p.pump()
    for i in range(6):
        snd.send(b"%d" % i)
    _, s = p.pump()
    got = of(s, a.events.DeliveryReceived)
    assert [e.data for e in got] == [b"%d" % i for i in range(6)]
    assert [e.delivery.id for e in got] == [0xFFFFFFFE, 0xFFFFFFFF, 0, 1, 2, 3]
    assert snd.delivery_count == 3 and snd.link_credit == 4
    for e in got:
        rcv.settle(e.delivery, a.Accepted())
    c, _ = p.pump()
    assert len(of(c, a.events.DeliveryUpdated)) == 6


# -- links (2.6) ----------------------------------------------------------------------------


def test_refused_link_is_attached_without_terminus_then_detached() -> None:
    p = _opened()
    cs, _ = p.session()
    snd = cs.attach_sender("l", target="nowhere")
    _, s = p.pump()
    of(s, a.events.LinkAttached)[0].link.refuse(a.Error(condition="amqp:not-found"))
    c, _ = p.pump()
    (att,) = of(c, a.events.LinkAttached)
    assert att.remote.target is None
    (det,) = of(c, a.events.LinkDetached)
    assert det.error.condition == "amqp:not-found" and det.closed
    assert snd.state is a.LinkState.DETACHED


def test_link_detach_and_close_both_ways() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.detach(closed=False)
    c, _ = p.pump()
    assert of(c, a.events.LinkDetached)[0].closed is False
    assert snd.state is a.LinkState.DETACHED and rcv.state is a.LinkState.DETACHED
    snd2, _rcv2 = p.link(cs, name="again")
    snd2.detach()
    _, s = p.pump()
    assert of(s, a.events.LinkDetached)[0].closed


def test_link_names_are_unique_per_direction() -> None:
    p = _opened()
    cs, _ = p.session()
    p.link(cs, name="n")
    with pytest.raises(a.LocalProtocolError, match="already attached"):
        cs.attach_sender("n", target="q")
    cs.attach_receiver("n", source="q")  # the other direction may share the name


def test_handle_in_use_and_unattached_handle() -> None:
    p = _opened()
    cs, _ = p.session()
    p.link(cs)
    dup = a.framing.amqp10.encode_frame(
        performatives.Attach(
            name="other",
            handle=0,
            role=performatives.Role.SENDER,
            initial_delivery_count=0,
        )
    )
    events = p.server.receive_data(dup, 0)
    assert of(events, a.events.ProtocolError)[0].error.condition == "amqp:session:handle-in-use"
    p2 = _opened()
    p2.session()
    flow = a.framing.amqp10.encode_frame(
        performatives.Flow(incoming_window=1, next_outgoing_id=0, outgoing_window=1, handle=7)
    )
    events = p2.server.receive_data(flow, 0)
    assert of(events, a.events.ProtocolError)[0].error.condition == "amqp:session:unattached-handle"


def test_handle_max_limits_the_peers_links() -> None:
    """Our handle-max bounds the handles the peer uses; the peer's bounds ours (2.7.2)."""
    p = _opened()
    cs = p.client.begin(handle_max=1)
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    ss.handle_max = 2
    ss.begin()
    p.pump()
    ss.attach_sender("a", target="q")
    ss.attach_sender("b", target="q")
    with pytest.raises(a.LocalProtocolError, match="handle"):
        ss.attach_sender("c", target="q")
    for name in "xyz":
        cs.attach_sender(name, target="q")
    with pytest.raises(a.LocalProtocolError, match="handle-max 2"):
        cs.attach_sender("w", target="q")
    c, s = p.pump()
    assert not of(c, a.events.ProtocolError) and not of(s, a.events.ProtocolError)


def test_sending_needs_credit() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, _rcv = p.link(cs)
    with pytest.raises(a.LocalProtocolError, match="credit"):
        snd.send(b"x")
    assert p.client.data_to_send() == b""


def test_a_transfer_without_credit_detaches_with_transfer_limit_exceeded() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, _rcv = p.link(cs)
    snd.link_credit = 1  # a sender that ignores the receiver's flow
    snd.send(b"x")
    c, s = p.pump()
    assert of(s, a.events.ProtocolError)[0].error.condition == "amqp:link:transfer-limit-exceeded"
    assert of(c, a.events.LinkDetached)[0].error.condition == "amqp:link:transfer-limit-exceeded"


def test_max_message_size_is_enforced_both_ways() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, client_sends=False, max_message_size=1000)
    snd, rcv = rcv, snd  # the server sends, the client receives with a limit
    rcv.flow(5)
    p.pump()
    with pytest.raises(a.LocalProtocolError, match="max-message-size"):
        snd.send(b"x" * 1001)
    snd.max_message_size = None
    snd.remote = None  # a sender that ignores the limit
    snd.send(b"x" * 1001)
    c, s = p.pump()
    assert of(c, a.events.ProtocolError)[0].error.condition == "amqp:link:message-size-exceeded"
    assert of(s, a.events.LinkDetached)[0].error.condition == "amqp:link:message-size-exceeded"


def test_drain_uses_up_credit_and_completes() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(10)
    p.pump()
    snd.send(b"one")
    rcv.drain_credit()
    c, s = p.pump()
    assert of(c, a.events.CreditChanged)[-1].drain
    snd.drained()
    _, s = p.pump()
    assert of(s, a.events.DrainCompleted) and rcv.link_credit == 0
    assert snd.link_credit == 0 and snd.delivery_count == 10


def test_available_and_echo() -> None:
    p = _opened()
    cs, ss = p.session()
    snd, rcv = p.link(cs)
    snd.set_available(42)
    _, s = p.pump()
    assert of(s, a.events.CreditChanged)[-1].available == 42
    flow = performatives.Flow(
        next_incoming_id=0,
        incoming_window=100,
        next_outgoing_id=0,
        outgoing_window=100,
        handle=rcv.handle,
        delivery_count=0,
        link_credit=3,
        echo=True,
    )
    frame = a.framing.amqp10.encode_frame(flow, channel=ss.channel)
    p.client.receive_data(frame, 0)
    reply = a.framing.amqp10.FrameParser(max_frame_size=65536)
    reply.feed(p.client.data_to_send())
    echoed = reply.next_frame()
    assert isinstance(echoed.body, performatives.Flow) and echoed.body.link_credit == 3


# -- deliveries (2.6.12-2.6.14, 3.4) ---------------------------------------------------------


def _link_pair(**kw: object) -> tuple[Pair, a.Sender, a.Receiver]:
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, **kw)  # type: ignore[arg-type]
    rcv.flow(1000)  # type: ignore[attr-defined]
    p.pump()
    return p, snd, rcv  # type: ignore[return-value]


@pytest.mark.parametrize(
    "outcome",
    [
        a.Accepted(),
        a.Rejected(error=a.Error(condition="amqp:invalid-field", description="bad")),
        a.Released(),
        a.Modified(
            delivery_failed=True,
            undeliverable_here=True,
            message_annotations={"x-opt-reason": "retry"},
        ),
    ],
)
def test_every_outcome_reaches_the_sender(outcome: object) -> None:
    p, snd, rcv = _link_pair()
    d = snd.send(b"x")
    _, s = p.pump()
    rcv.settle(of(s, a.events.DeliveryReceived)[0].delivery, outcome)
    c, _ = p.pump()
    (upd,) = of(c, a.events.DeliveryUpdated)
    assert upd.delivery is d and upd.state == outcome and upd.settled
    assert d.remote_state == outcome
    assert d.settled and not snd.unsettled  # auto-settled: the receiver settled first
    snd.settle(d)  # idempotent
    assert p.client.data_to_send() == b""


def test_non_terminal_state_then_settlement() -> None:
    p, snd, rcv = _link_pair()
    d = snd.send(b"x" * 10)
    _, s = p.pump()
    rd = of(s, a.events.DeliveryReceived)[0].delivery
    rcv.update(rd, messaging.Received(section_number=0, section_offset=5))
    c, _ = p.pump()
    (upd,) = of(c, a.events.DeliveryUpdated)
    assert upd.state == messaging.Received(section_number=0, section_offset=5) and not upd.settled
    snd.settle(d, a.Accepted())
    _, s = p.pump()
    (upd,) = of(s, a.events.DeliveryUpdated)
    assert upd.settled and upd.state == a.Accepted()
    rcv.settle(rd)
    assert p.server.data_to_send() == b""  # the sender settled first


def test_contiguous_settlements_are_coalesced_into_one_disposition() -> None:
    p, snd, rcv = _link_pair()
    for i in range(50):
        snd.send(b"%d" % i)
    _, s = p.pump()
    for e in of(s, a.events.DeliveryReceived):
        rcv.settle(e.delivery, a.Accepted())
    out = p.server.data_to_send()
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(out)
    frames = []
    while (f := parser.next_frame()) is not None:
        frames.append(f.body)
    assert frames == [
        performatives.Disposition(
            role=performatives.Role.RECEIVER,
            first=0,
            last=49,
            settled=True,
            state=a.Accepted(),
        )
    ]
    p.client.receive_data(out, 0)
    assert not snd.unsettled or all(d.remote_settled for d in snd.unsettled.values())


def test_different_outcomes_split_the_ranges() -> None:
    p, snd, rcv = _link_pair()
    for i in range(4):
        snd.send(b"%d" % i)
    _, s = p.pump()
    got = of(s, a.events.DeliveryReceived)
    for e, outcome in zip(
        got, [a.Accepted(), a.Accepted(), a.Released(), a.Accepted()], strict=True
    ):
        rcv.settle(e.delivery, outcome)
    c, _ = p.pump()
    assert [type(e.state) for e in of(c, a.events.DeliveryUpdated)] == [
        a.Accepted,
        a.Accepted,
        a.Released,
        a.Accepted,
    ]


def test_pre_settled_deliveries() -> None:
    p, snd, rcv = _link_pair(snd_settle_mode=a.SenderSettleMode.SETTLED)
    d = snd.send(b"fire and forget")
    assert d.settled and not snd.unsettled
    _, s = p.pump()
    (got,) = of(s, a.events.DeliveryReceived)
    assert got.delivery.remote_settled and not rcv.unsettled
    rcv.settle(got.delivery, a.Accepted())
    assert p.server.data_to_send() == b""
    with pytest.raises(a.LocalProtocolError):
        snd.send(b"x", settled=False)


def test_settle_modes_are_checked() -> None:
    _p, snd, _ = _link_pair(snd_settle_mode=a.SenderSettleMode.UNSETTLED)
    with pytest.raises(a.LocalProtocolError):
        snd.send(b"x", settled=True)
    d = snd.send(b"x")
    snd.settle(d)
    snd.settle(d, a.Released())  # idempotent: nothing changes, nothing is sent again
    assert d.local_state is None
    with pytest.raises(a.LocalProtocolError):
        snd.update(d, a.Accepted())


def test_receiver_settle_mode_second_settles_after_the_sender() -> None:
    p, snd, rcv = _link_pair(rcv_settle_mode=a.ReceiverSettleMode.SECOND)
    assert rcv.rcv_settle_mode is a.ReceiverSettleMode.SECOND
    d = snd.send(b"exactly once")
    _, s = p.pump()
    rd = of(s, a.events.DeliveryReceived)[0].delivery
    rcv.settle(rd, a.Accepted())
    assert not rd.settled  # first the state goes out, unsettled
    c, _ = p.pump()
    (upd,) = of(c, a.events.DeliveryUpdated)
    assert upd.state == a.Accepted() and not upd.settled
    snd.settle(d)
    _, s = p.pump()
    assert of(s, a.events.DeliveryUpdated)[0].settled
    assert rd.settled and not rcv.unsettled  # ... and the receiver settles once the sender has
    assert p.server.data_to_send() == b""  # without a word: the sender has forgotten it


def test_streaming_send_and_streaming_receive() -> None:
    p, snd, rcv = _link_pair()
    rcv.streaming = True
    d = snd.send(b"part one, ", more=True)
    with pytest.raises(a.LocalProtocolError):
        snd.send(b"another delivery")  # one delivery at a time on a link
    snd.send(b"part two, ", delivery=d, more=True)
    snd.send(b"end", delivery=d)
    _, s = p.pump()
    got = of(s, a.events.DeliveryReceived)
    assert [e.data for e in got] == [b"part one, ", b"part two, ", b"end"]
    assert [e.complete for e in got] == [False, False, True]
    assert len({id(e.delivery) for e in got}) == 1


def test_abort_discards_a_partial_delivery() -> None:
    p, snd, _rcv = _link_pair()
    d = snd.send(b"half", more=True)
    snd.abort(d)
    snd.send(b"next")
    _, s = p.pump()
    assert of(s, a.events.DeliveryAborted)[0].delivery.aborted
    assert [e.data for e in of(s, a.events.DeliveryReceived)] == [b"next"]
    with pytest.raises(a.LocalProtocolError):
        snd.abort(d)


def test_delivery_tags_are_unique_among_unsettled() -> None:
    _p, snd, _ = _link_pair()
    snd.send(b"x", tag=b"t")
    with pytest.raises(a.LocalProtocolError, match="already in use"):
        snd.send(b"y", tag=b"t")


def test_deliveries_belong_to_their_link() -> None:
    _p, snd, rcv = _link_pair()
    d = snd.send(b"x")
    with pytest.raises(a.LocalProtocolError):
        rcv.settle(d)


# -- resuming links and deliveries (2.6.13) ----------------------------------------------------


def test_resuming_a_link_resends_what_both_ends_hold_unsettled() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, name="durable")
    rcv.flow(10)
    p.pump()
    sent = [snd.send(b"m%d" % i) for i in range(3)]
    _, s = p.pump()
    got = of(s, a.events.DeliveryReceived)
    rcv.settle(got[0].delivery, a.Accepted())  # m0 is done; m1 and m2 stay unsettled
    p.pump()
    snd.settle(sent[0])
    # The link is suspended (detached, not closed), then attached again under its name.
    snd.detach(closed=False)
    p.pump()
    assert set(snd.unsettled) == {sent[1].tag, sent[2].tag}
    snd2 = cs.attach_sender("durable", target="q")
    assert set(snd2.unsettled) == {sent[1].tag, sent[2].tag}
    _, s = p.pump()
    (att,) = of(s, a.events.LinkAttached)
    assert set(att.remote.unsettled) == {sent[1].tag, sent[2].tag}
    rcv2 = att.link
    assert set(rcv2.unsettled) == {sent[1].tag, sent[2].tag}
    rcv2.attach()
    rcv2.flow(10)
    c, _ = p.pump()
    assert set(of(c, a.events.LinkAttached)[0].remote.unsettled) == {sent[1].tag, sent[2].tag}
    for d in sent[1:]:
        snd2.resume(d, b"again")
    _, s = p.pump()
    again = of(s, a.events.DeliveryReceived)
    assert [e.delivery.tag for e in again] == [sent[1].tag, sent[2].tag]
    assert all(e.delivery.resumed for e in again)
    assert again[0].delivery is got[1].delivery  # the receiver's own record, resumed
    for e in again:
        rcv2.settle(e.delivery, a.Accepted())
    c, _ = p.pump()
    assert all(e.settled for e in of(c, a.events.DeliveryUpdated))


def test_deliveries_only_the_receiver_holds_are_settled_on_resume() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, name="l")
    rcv.flow(10)
    p.pump()
    d = snd.send(b"x")
    _, s = p.pump()
    rd = of(s, a.events.DeliveryReceived)[0].delivery
    snd.settle(d, a.Accepted())  # the sender forgets, but its disposition is lost...
    p.client.data_to_send()
    snd.detach(closed=False)
    p.pump()
    cs.attach_sender("l", target="q")
    _, s = p.pump()
    upd = of(s, a.events.DeliveryUpdated)
    assert [u.delivery for u in upd] == [rd] and upd[0].settled  # ... and resuming says so
    assert not of(s, a.events.LinkAttached)[0].link.unsettled


def test_a_resumed_delivery_the_receiver_no_longer_holds_is_ignored_and_settled() -> None:
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, name="l")
    rcv.flow(10)
    p.pump()
    d = snd.send(b"x")
    _, s = p.pump()
    rcv.settle(of(s, a.events.DeliveryReceived)[0].delivery, a.Accepted())
    p.server.data_to_send()  # the receiver's settlement is lost on the way
    snd.detach(closed=False)
    p.pump()
    snd2 = cs.attach_sender("l", target="q")
    _, s = p.pump()
    rcv2 = of(s, a.events.LinkAttached)[0].link
    rcv2.attach()
    rcv2.flow(10)
    p.pump()
    snd2.resume(d, b"x")
    c, s = p.pump()
    assert not of(s, a.events.DeliveryReceived)  # ignored ...
    assert of(c, a.events.DeliveryUpdated)[0].settled  # ... and settled, so the sender forgets it
    snd2.settle(d)
    with pytest.raises(a.LocalProtocolError):
        snd2.resume(d, b"x")  # only unsettled deliveries of the link


def test_without_auto_settle_the_sender_settles_itself() -> None:
    p, snd, rcv = _link_pair()
    snd.auto_settle = False
    d = snd.send(b"x")
    _, s = p.pump()
    rcv.settle(of(s, a.events.DeliveryReceived)[0].delivery, a.Accepted())
    p.pump()
    assert d.remote_settled and not d.settled and d.tag in snd.unsettled
    snd.settle(d)
    assert d.settled and not snd.unsettled
    assert p.client.data_to_send() == b""  # the receiver had settled: nothing to say


def test_a_bare_settlement_keeps_the_outcome_already_given() -> None:
    p, snd, rcv = _link_pair()
    snd.auto_settle = False
    d = snd.send(b"x")
    _, s = p.pump()
    rd = of(s, a.events.DeliveryReceived)[0].delivery
    rcv.update(rd, a.Accepted())
    p.pump()
    rcv.settle(rd)  # settled with no state: the outcome stays Accepted
    p.pump()
    assert d.remote_settled and d.remote_state == a.Accepted()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"tag": "not bytes"},
        {"tag": b"x" * 33},
        {"message_format": -1},
        {"message_format": 2**32},
        {"state": "not a state"},
    ],
)
def test_bad_send_arguments_raise_before_anything_changes(kwargs: dict) -> None:
    p, snd, _ = _link_pair()
    before = (snd.link_credit, snd.delivery_count, dict(snd.unsettled))
    with pytest.raises(a.LocalProtocolError):
        snd.send(b"x", **kwargs)
    assert (snd.link_credit, snd.delivery_count, dict(snd.unsettled)) == before
    assert p.client.data_to_send() == b""


def test_a_bytearray_tag_and_a_state_go_out() -> None:
    p, snd, _ = _link_pair()
    d = snd.send(
        b"x",
        tag=bytearray(b"tg"),
        state=messaging.Received(section_number=0, section_offset=0),
    )
    _, s = p.pump()
    got = of(s, a.events.DeliveryReceived)[0].delivery
    assert got.tag == d.tag == b"tg" and got.remote_state == d.local_state


def test_the_caller_may_reuse_its_buffer_right_after_send() -> None:
    p = Pair(server={"max_frame_size": 1024})
    p.open()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(2)
    p.pump()
    buf = bytearray(b"a" * 5000)  # several frames, held until data_to_send
    snd.send(buf)
    buf[:] = b"b" * 5000
    snd.send(memoryview(buf))
    _, s = p.pump()
    assert [e.data for e in of(s, a.events.DeliveryReceived)] == [b"a" * 5000, b"b" * 5000]


def test_stopping_a_link_lets_transfers_in_flight_arrive() -> None:
    p, snd, rcv = _link_pair()
    snd.send(b"already on its way")
    rcv.flow(0)  # "stop" (2.6.10), crossing the transfer
    _, s = p.pump()
    assert [e.data for e in of(s, a.events.DeliveryReceived)] == [b"already on its way"]
    assert not of(s, a.events.ProtocolError) and snd.link_credit == 0
    with pytest.raises(a.LocalProtocolError, match="credit"):
        snd.send(b"no more")


def test_a_link_detached_before_we_answered_its_attach() -> None:
    p = _opened()
    cs, _ = p.session()
    snd = cs.attach_sender("hasty", target="q")
    snd.detach()  # before the peer answered
    c, s = p.pump()
    assert [type(e) for e in s] == [a.events.LinkAttached, a.events.LinkDetached]
    assert [type(e) for e in c] == [a.events.LinkAttached, a.events.LinkDetached]
    assert of(c, a.events.LinkAttached)[0].remote.target is None  # answered without a terminus
    assert snd.state is a.LinkState.DETACHED
    assert of(s, a.events.LinkAttached)[0].link.state is a.LinkState.DETACHED


def test_a_link_detached_before_we_answered_its_session_is_answered_after_our_begin() -> None:
    """A pipelined begin, attach and detach (core spec 2.5.5, 2.6.3): we cannot send the
    link's frames before our begin, so its answer (attach, detach) follows the begin."""
    p = _opened()
    cs = p.client.begin()
    snd = cs.attach_sender("hasty", target="q")
    snd.detach()
    _, s = p.pump()
    assert [type(e) for e in s] == [
        a.events.SessionBegun,
        a.events.LinkAttached,
        a.events.LinkDetached,
    ]
    link = of(s, a.events.LinkAttached)[0].link
    assert link.state is a.LinkState.DETACHED
    with pytest.raises(a.LocalProtocolError, match="BEGIN_RCVD"):
        link.attach()  # (the engine answers for it, after our begin)
    of(s, a.events.SessionBegun)[0].session.begin()
    c, s = p.pump()
    assert [type(e) for e in c] == [
        a.events.SessionBegun,
        a.events.LinkAttached,
        a.events.LinkDetached,
    ]
    assert of(c, a.events.LinkAttached)[0].remote.target is None
    assert snd.state is a.LinkState.DETACHED and not s


def test_a_link_detached_before_we_had_a_handle_to_answer_is_answered_when_one_frees() -> None:
    p = _opened()
    cs = p.client.begin(handle_max=0)
    _, s = p.pump()
    ss = of(s, a.events.SessionBegun)[0].session
    ss.begin()
    p.pump()
    ours = ss.attach_sender("first", target="q")  # takes the only handle the client allows
    c, _ = p.pump()
    of(c, a.events.LinkAttached)[0].link.attach()
    p.pump()
    theirs = cs.attach_sender("second", target="q")
    _, s = p.pump()
    waiting = of(s, a.events.LinkAttached)[0].link
    with pytest.raises(a.LocalProtocolError, match="no free link handle"):
        waiting.attach()
    theirs.detach()  # before we could answer
    c, s = p.pump()
    assert not c and [type(e) for e in s] == [a.events.LinkDetached]
    assert theirs.state is a.LinkState.DETACH_SENT
    with pytest.raises(a.LocalProtocolError, match="owes"):
        waiting.attach()  # the engine answers for it first
    with pytest.raises(a.LocalProtocolError, match="already attached"):
        ss.attach_receiver("second", source="q")
    ours.detach()  # frees the handle: the owed answer follows
    c, s = p.pump()
    assert [type(e) for e in c] == [
        a.events.LinkDetached,
        a.events.LinkAttached,
        a.events.LinkDetached,
    ]
    assert theirs.state is a.LinkState.DETACHED and ours.state is a.LinkState.DETACHED
    assert not of(s, a.events.ProtocolError) and not of(c, a.events.ProtocolError)


def test_a_disposition_after_a_suspending_detach_still_reaches_the_delivery() -> None:
    """Deliveries outlive their link's detach (core spec 2.6.4): the receiver may settle one
    of a suspended link, and the sender hears of it, by delivery-id."""
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, name="durable")
    rcv.flow(1)
    p.pump()
    sent = snd.send(b"m")
    _, s = p.pump()
    (got,) = of(s, a.events.DeliveryReceived)
    snd.detach(closed=False)
    p.pump()
    assert rcv.state is a.LinkState.DETACHED and snd.state is a.LinkState.DETACHED
    rcv.settle(got.delivery, a.Accepted())
    c, _ = p.pump()
    (upd,) = of(c, a.events.DeliveryUpdated)
    assert upd.delivery is sent and upd.settled and upd.state == a.Accepted()
    assert sent.settled and not snd.unsettled  # auto-settled: nothing left to resume


def test_closing_a_link_discards_its_unsettled_deliveries() -> None:
    """A closed link is destroyed with its unsettled state (core spec 2.6.6): a new link of
    the same name starts afresh, and a late disposition names no delivery."""
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, name="gone")
    rcv.flow(1)
    p.pump()
    snd.send(b"m")
    _, s = p.pump()
    (got,) = of(s, a.events.DeliveryReceived)
    snd.detach()
    p.pump()
    assert not snd.unsettled and not rcv.unsettled
    snd2 = cs.attach_sender("gone", target="q")
    assert not snd2.unsettled
    _, s = p.pump()
    assert of(s, a.events.LinkAttached)[0].remote.unsettled is None
    with pytest.raises(a.LocalProtocolError):
        rcv.settle(got.delivery, a.Accepted())  # its session no longer knows it


def test_a_replaced_link_endpoint_cannot_attach_again() -> None:
    """Once the peer attaches a link of the same name, the old (detached) endpoint object is
    out of date: attaching it again is refused, and the new endpoint is the link."""
    p = _opened()
    cs, _ = p.session()
    snd, rcv = p.link(cs, name="again")
    snd.detach(closed=False)
    p.pump()
    snd2 = cs.attach_sender("again", target="q")
    _, s = p.pump()
    (att,) = of(s, a.events.LinkAttached)
    assert att.link is not rcv
    before = p.server.data_to_send()
    with pytest.raises(a.LocalProtocolError, match="newer endpoint"):
        rcv.attach()
    assert p.server.data_to_send() == before == b""
    att.link.attach()
    c, _ = p.pump()
    assert of(c, a.events.LinkAttached) and snd2.state is a.LinkState.ATTACHED


def test_a_delivery_arriving_over_several_reads_holds_at_most_twice_its_size() -> None:
    """Large payloads are views of the bytes received (no copy); a delivery still arriving
    keeps only views that make up at least half of the bytes they came in, and copies out
    the rest, so that a peer cannot make small frames pin large reads."""
    p = _opened(client={"max_frame_size": 65536}, server={"max_frame_size": 65536})
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(2)
    p.pump()
    wire, ends = large_on_the_wire(snd, p.client)  # 256 KiB: five frames
    padding = a.framing.amqp10.encode_frame(None) * (1 << 17)  # 1 MiB of empty frames

    def retained(start: int, stop: int, extra: bytes = b"") -> int:
        """Bytes still allocated after a piece of the wire was received and dropped."""
        before = tracemalloc.get_traced_memory()[0]
        data = wire[start:stop] + extra
        assert not p.server.receive_data(data, p.now)
        del data
        return tracemalloc.get_traced_memory()[0] - before

    tracemalloc.start()
    try:
        alone = retained(ends[0], ends[1])  # the frame is all of it: a view, kept
        padded = retained(ends[1], ends[2], padding)  # a copy of the frame, not 1 MiB
    finally:
        tracemalloc.stop()
    assert 60_000 < alone < 80_000 and 60_000 < padded < 200_000
    (e,) = of(p.server.receive_data(wire[ends[2] :], p.now), a.events.DeliveryReceived)
    assert e.data == LARGE and type(e.data) is bytes


@pytest.mark.parametrize("streaming", [False, True])
def test_transfers_cut_inside_their_payload_arrive_as_the_views_they_came_in(
    streaming: bool,
) -> None:
    """A large message handed over as buffers_to_send cuts it (frame payloads as views of
    the sender's bytes, cut where a bound falls inside one, the last frame too): the
    delivery holds the views, the payload of a cut frame as the two views it came in."""
    p = _opened(client={"max_frame_size": 65536}, server={"max_frame_size": 65536})
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    assert isinstance(rcv, a.Receiver)
    rcv.streaming = streaming
    rcv.flow(2)
    p.pump()
    big = bytes(range(256)) * 1024 + b"tail" * 5000  # 276 KiB: five frames
    snd.send(big)
    got: list[a.Event] = []
    while pieces := p.client.buffers_to_send(100_000):  # cuts inside the 2nd and 4th frames
        for piece in pieces:
            got += p.server.receive_data(piece, p.now)
    received = of(got, a.events.DeliveryReceived)
    if streaming:
        assert [type(e.data) for e in received] == [bytes] * 5
        assert b"".join(e.data for e in received) == big
        return
    (e,) = received
    pieces_held = e._data
    assert type(pieces_held) is tuple
    # The second frame's payload as its two views; the fourth one's head came in a small
    # piece (joined with its frame's header), copied.
    assert [type(piece) for piece in pieces_held] == [memoryview] * 4 + [bytes] + [memoryview] * 2
    assert [len(piece) for piece in pieces_held[1:3]] == [34_445, 31_070]
    assert b"".join(pieces_held) == big and e.data == big


def test_a_last_transfer_cut_inside_its_payload_ends_the_delivery_with_its_views() -> None:
    p = _opened(client={"max_frame_size": 65536}, server={"max_frame_size": 65536})
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(1)
    p.pump()
    big = bytes(range(256)) * 1024 + b"tail" * 5000  # the last frame of 20,086 bytes
    snd.send(big)
    got: list[a.Event] = []
    while pieces := p.client.buffers_to_send(270_000):  # cuts inside the last frame
        for piece in pieces:
            got += p.server.receive_data(piece, p.now)
    (e,) = of(got, a.events.DeliveryReceived)
    assert type(e._data) is tuple
    assert [type(piece) for piece in e._data] == [memoryview] * 6
    assert e._data[-1].obj is e._data[-2].obj is big  # type: ignore[union-attr]
    assert e.data == big


def test_the_first_deadline_counts_from_output_queued_before_any_time_was_known() -> None:
    """A client's open queued without a time: the first call that brings one (here
    handle_timer) starts the clock for its heartbeats (sent at half the time-out the peer
    advertises: the server advertises half of its own)."""
    client = a.Connection(client=True, container_id="c")
    server = a.Connection(client=False, container_id="s", idle_timeout=10.0)
    client.open()
    assert client.handle_timer(100.0) == []
    server.receive_data(client.data_to_send(), 100.0)
    server.open()
    client.receive_data(server.data_to_send(), 101.0)
    assert client.next_deadline() == 102.5  # 100 + the half of the 5 s the server asks for


def test_a_delivery_arriving_in_cut_frames_holds_at_most_twice_its_size() -> None:
    """A frame cut short at the end of a large read whose views the delivery does not keep
    (less than half of it) is copied out of it too, not held in views of the read."""
    p = _opened(client={"max_frame_size": 65536}, server={"max_frame_size": 65536})
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(2)
    p.pump()
    big = bytes(range(256)) * 1024
    snd.send(big)
    wire = p.client.data_to_send()
    padding = a.framing.amqp10.encode_frame(None) * (1 << 17)  # 1 MiB of empty frames
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        data = padding + wire[:40_000]  # the first frame's head and part of its payload
        assert not p.server.receive_data(data, p.now)
        data = wire[40_000:70_000]  # the rest of it: the delivery holds both parts
        assert not p.server.receive_data(data, p.now)
        del data
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert 60_000 < held < 200_000
    (e,) = of(p.server.receive_data(wire[70_000:], p.now), a.events.DeliveryReceived)
    assert e.data == big


# -- large messages without copies: data_to_send(max_bytes), send(Message) ----------------


def _sender_pair(max_frame_size: int = 4096) -> tuple[Pair, a.Sender, a.Receiver]:
    p = _opened(
        client={"max_frame_size": max_frame_size}, server={"max_frame_size": max_frame_size}
    )
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(10)
    p.pump()
    return p, snd, rcv


@pytest.mark.parametrize("bound", [1, 7, 4096, 10_000, 1 << 20])
def test_data_to_send_with_a_bound_hands_over_the_same_bytes_in_pieces(bound: int) -> None:
    whole, snd, _ = _sender_pair()
    cut, snd2, _ = _sender_pair()
    body = bytes(range(256)) * 80
    for sender in (snd, snd2):
        sender.send(body)
        sender.send(b"small")
    expected = whole.client.data_to_send()
    pieces = []
    while piece := cut.client.data_to_send(bound):
        assert type(piece) is bytes and 0 < len(piece) <= bound
        pieces.append(piece)
    assert b"".join(pieces) == expected
    # And the receiver takes them in those pieces: two deliveries, the same bytes.
    got = [e for piece in pieces for e in cut.server.receive_data(piece, cut.now)]
    assert [e.data for e in of(got, a.events.DeliveryReceived)] == [body, b"small"]


@pytest.mark.parametrize("bound", [0, -1, 1.5, "10"])
def test_data_to_send_refuses_a_bound_that_is_not_a_positive_int(bound: object) -> None:
    p, _, _ = _sender_pair()
    with pytest.raises(ValueError, match="max_bytes"):
        p.client.data_to_send(bound)  # type: ignore[arg-type]


def test_data_to_send_with_a_bound_during_sasl() -> None:
    client = a.Connection(client=True, sasl=a.sasl.ClientCredentials())
    client.open(now=0.0)
    whole = a.Connection(client=True, sasl=a.sasl.ClientCredentials())
    whole.open(now=0.0)
    expected = whole.data_to_send()
    pieces = []
    while piece := client.data_to_send(3):
        pieces.append(piece)
    assert b"".join(pieces) == expected and max(map(len, pieces)) == 3


def _message_shapes() -> list[a.Message]:
    big = bytes(range(256)) * 64  # 16 KiB: kept apart by the encoder
    return [
        a.Message(body=big),
        a.Message(
            header=a.Header(durable=True),
            properties=a.Properties(message_id="m1", subject="s"),
            application_properties={"k": 1},
            body=[a.Data(big), a.Data(b"tiny"), a.Data(big[::-1])],
            footer={a.Symbol("f"): "x" * 3000},
        ),
        a.Message(body="an amqp-value", application_properties={"n": 2}),
        a.Message(body=[a.Data(big[:5000]), a.Data(big[:5000])]),
    ]


@pytest.mark.parametrize("index", range(4))
def test_sending_a_message_puts_its_encoding_on_the_wire_in_the_same_frames(
    index: int,
) -> None:
    """send(message) frames the message's encoding, its large data sections straight
    from their own bytes: the same frames as send(message.encode())."""
    message = _message_shapes()[index]
    encoded, snd, _ = _sender_pair()
    given, snd2, _ = _sender_pair()
    first = snd.send(message.encode())
    second = snd2.send(message)
    assert first.size == second.size == len(message.encode())
    wire = given.client.data_to_send()
    assert wire == encoded.client.data_to_send()
    (got,) = of(given.server.receive_data(wire, given.now), a.events.DeliveryReceived)
    assert a.Message.decode(got.data) == message


def test_a_message_sent_whole_is_encoded_before_anything_changes() -> None:
    p, snd, _ = _sender_pair()
    credit = snd.link_credit
    with pytest.raises(a.EncodeError):
        snd.send(a.Message())  # no sections: no message
    assert snd.link_credit == credit and not snd.unsettled
    assert p.client.data_to_send() == b""


def test_a_message_over_the_peers_max_message_size_is_refused_whole() -> None:
    p = _opened()
    cs, _ = p.session()
    _, snd = p.link(cs, client_sends=False, max_message_size=1000)
    assert isinstance(snd, a.Sender)
    with pytest.raises(a.LocalProtocolError, match="max-message-size"):
        snd.send(_message_shapes()[0])
    assert not snd.unsettled


def test_a_delivery_read_in_cuts_keeps_views_of_the_bytes_behind_a_frame_cut_short() -> None:
    """The frame cut short is completed by a copy; the frames after it in the same read are
    views of it, counted (with that copy between) against the read's size."""
    p = _opened(client={"max_frame_size": 65536}, server={"max_frame_size": 65536})
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(1)
    p.pump()
    big = bytes(range(256)) * 1024  # 256 KiB: five frames
    snd.send(big)
    wire = p.client.data_to_send()
    assert not p.server.receive_data(wire[:70_000], p.now)
    assert not p.server.receive_data(wire[70_000:200_000], p.now)
    (e,) = of(p.server.receive_data(wire[200_000:], p.now), a.events.DeliveryReceived)
    assert e.data == big
