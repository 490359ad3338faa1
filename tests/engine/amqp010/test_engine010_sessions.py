"""The AMQP 0-10 engine's sessions (0-10 spec, classes ``session`` and ``execution``):
attach and detach with their refusals, command ids, commands both ways with header and
body, completion coalesced into sets, ``execution.sync``, results, exceptions, flush, gap,
and a session that survives its transport for its time-out and resumes with a replay."""

from __future__ import annotations

import random

import pytest
from support.amqp010.engine import Pair, command, control, make_pair, sent

from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as E
from amqp_sansio.errors import EncodeError, LocalProtocolError


def of(events: list[E.Event], kind: type) -> list[E.Event]:
    return [e for e in events if isinstance(e, kind)]


def received(pair: Pair) -> list[E.CommandReceived]:
    return [e for e in pair.server_events if isinstance(e, E.CommandReceived)]


def opened(**options: object) -> Pair:
    pair = make_pair(**options)  # type: ignore[arg-type]
    pair.take()
    return pair


@pytest.mark.parametrize("chunk", [None, 1, random.Random(9)], ids=["whole", "1", "random"])
def test_commands_both_ways_and_their_completion(chunk: int | random.Random | None) -> None:
    pair = opened(chunk=chunk)
    channel = pair.attach(b"s", timeout=30)
    assert channel == 1
    client, server = pair.take()
    assert client == [E.SessionAttached(session=b"s", channel=1)]
    assert server == [E.SessionAttached(session=b"s", channel=1)]
    assert pair.server.session(b"s").timeout == pair.client.session("s").timeout == 30
    header = (spec.DeliveryProperties(routing_key="k"), spec.MessageProperties(content_type="t"))
    ids = [
        pair.client.send_command(b"s", spec.QueueDeclare(queue=f"q{n}"), sync=n == 2)
        for n in range(3)
    ]
    ids.append(
        pair.client.send_command(
            "s", spec.MessageTransfer(destination="x"), header=header, body=b"payload"
        )
    )
    assert ids == [0, 1, 2, 3]
    assert pair.client.session(b"s").outstanding_bytes > 7
    pair.pump()
    got = received(pair)
    assert [e.command_id for e in got] == ids
    assert [e.sync for e in got] == [False, False, True, False]
    assert got[3].header == header and got[3].body == b"payload"
    assert got[3].header_octets == spec.encode_header(header)  # (as it came)
    assert got[0].header_octets == b""
    assert "body=<7 octets>" in repr(got[3])
    pair.take()
    for event in got:
        pair.server.complete(b"s", event.command_id)
    wire = sent(pair.server)  # one completed set for the four
    assert wire == [spec.SessionCompleted(commands=((0, 3),), timely_reply=True)]
    client = pair.client.receive_data(b"".join(control(1, c) for c in wire), 0)  # type: ignore[arg-type]
    assert client == [E.CommandsCompleted(session=b"s", command_ids=(0, 1, 2, 3))]
    assert pair.client.session(b"s").outstanding_bytes == 0
    assert sent(pair.client) == [spec.SessionKnownCompleted(commands=((0, 3),))]
    # the server's commands to the client
    back = pair.server.send_command(b"s", spec.MessageAccept(transfers=((0, 3),)))
    pair.pump()
    [event] = of(pair.client_events, E.CommandReceived)
    assert event.command_id == back == 0  # type: ignore[attr-defined]
    pair.client.complete(b"s", back)
    pair.pump()
    assert of(pair.server_events, E.CommandsCompleted) == [
        E.CommandsCompleted(session=b"s", command_ids=(0,))
    ]


def test_known_completed_only_when_a_timely_reply_is_asked() -> None:
    # qpid.messaging sends completed without timely-reply and cannot take known-completed
    pair = opened()
    pair.attach()
    command = pair.server.send_command(b"s", spec.MessageAccept(transfers=((0, 0),)))
    assert sent(pair.server) == [spec.MessageAccept(transfers=((0, 0),))]
    late = spec.SessionCompleted(commands=((command, command),))
    events = pair.server.receive_data(control(1, late), 0)
    assert events == [E.CommandsCompleted(session=b"s", command_ids=(command,))]
    assert sent(pair.server) == []  # delayed, as the spec allows
    again = spec.SessionCompleted(commands=((command, command),), timely_reply=True)
    pair.server.receive_data(control(1, again), 0)
    assert sent(pair.server) == [spec.SessionKnownCompleted(commands=((0, 0),))]


def test_known_completed_stops_the_completed_set_growing() -> None:
    pair = opened()
    pair.attach()
    for _ in range(3):
        pair.client.send_command(b"s", spec.ExecutionSync(), sync=True)
    pair.pump()
    # the engine completed each execution.sync itself; the client knows of all three
    assert of(pair.client_events, E.CommandsCompleted)[-1].command_ids[-1] == 2  # type: ignore[attr-defined]
    assert pair.server.session(b"s").completed_ranges() == ()
    assert not received(pair)


def test_execution_sync_waits_for_every_command_before_it() -> None:
    pair = opened()
    pair.attach()
    first = pair.client.send_command(b"s", spec.QueueDeclare(queue="a"))
    second = pair.client.send_command(b"s", spec.QueueDeclare(queue="b"))
    sync = pair.client.send_command(b"s", spec.ExecutionSync(), sync=True)
    pair.pump()
    assert not of(pair.client_events, E.CommandsCompleted)
    pair.server.complete(b"s", second)
    pair.pump()
    assert of(pair.client_events, E.CommandsCompleted) == [
        E.CommandsCompleted(session=b"s", command_ids=(second,))
    ]
    pair.server.complete(b"s", first)
    pair.pump()
    assert of(pair.client_events, E.CommandsCompleted)[-1] == E.CommandsCompleted(
        session=b"s", command_ids=(first, sync)
    )


def test_results_and_their_misuse() -> None:
    pair = opened()
    pair.attach()
    query = pair.client.send_command(b"s", spec.QueueQuery(queue="q"), sync=True)
    pair.pump()
    assert len(received(pair)) == 1
    result = spec.QueueQueryResult(queue="q", message_count=5)
    pair.server.send_result(b"s", query, result)
    pair.server.complete(b"s", query)
    pair.pump()
    [got] = of(pair.client_events, E.ResultReceived)
    assert got == E.ResultReceived(session=b"s", command_id=query, value=result)
    with pytest.raises(LocalProtocolError, match="not received or is complete"):
        pair.server.send_result(b"s", query, result)
    with pytest.raises(LocalProtocolError, match="not received or is complete"):
        pair.server.complete(b"s", query)
    with pytest.raises(LocalProtocolError, match="send_result"):
        pair.client.send_command(b"s", spec.ExecutionResult(command_id=0))
    with pytest.raises(LocalProtocolError, match="not a 0-10 command"):
        pair.client.send_command(b"s", spec.SessionFlush())  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="not attached"):
        pair.client.send_command(b"other", spec.ExecutionSync())
    with pytest.raises(LocalProtocolError, match="not received or is complete"):
        pair.server.send_exception(b"s", 404, command_id=77)


def test_an_exception_detaches_the_session_for_good() -> None:
    pair = opened()
    pair.attach(timeout=60)
    declare = pair.client.send_command(b"s", spec.QueueDeclare(queue="q", passive=True))
    pair.pump()
    pair.take()
    pair.server.send_exception(
        b"s", spec.ExecutionErrorCode.NOT_FOUND, command_id=declare, description="no queue q"
    )
    pair.pump()
    client, server = pair.take()
    [exc] = of(client, E.ExecutionExceptionReceived)
    assert exc.exception.error_code == 404 and exc.exception.command_id == declare  # type: ignore[attr-defined]
    assert of(client, E.SessionDetached) == [
        E.SessionDetached(session=b"s", channel=1, code=0, by_peer=True, expires=None)
    ]
    assert of(server, E.SessionDetached) == [
        E.SessionDetached(session=b"s", channel=1, code=0, by_peer=False, expires=None)
    ]
    assert b"s" not in pair.client.sessions and len(pair.server.store) == 0


def test_detach_keeps_the_session_for_its_timeout_and_resume_replays() -> None:
    pair = opened()
    pair.attach(b"r", timeout=60)
    done = pair.client.send_command(b"r", spec.QueueDeclare(queue="kept"))
    pair.pump()
    pair.server.complete(b"r", done)
    pair.pump()
    lost = pair.client.send_command(b"r", spec.MessageTransfer(destination="d"), body=b"one")
    pair.client.data_to_send()  # lost with the transport
    pair.take()
    # the transport goes: both ends keep the session
    client = pair.client.receive_data(b"", 1.0)
    pair.server.receive_data(b"", 1.0)
    assert of(client, E.SessionDetached) == [
        E.SessionDetached(session=b"r", channel=1, code=None, by_peer=True, expires=61.0)
    ]
    assert len(pair.client.store) == len(pair.server.store) == 1
    # a new connection, the same stores
    again = make_pair(
        client={"sessions": pair.client.store}, server={"sessions": pair.server.store}
    )
    again.now = 10.0
    again.take()
    with pytest.raises(LocalProtocolError, match="no detached session"):
        again.client.resume(b"other")
    again.client.resume(b"r")
    again.pump()
    client, server = again.take()
    assert of(client, E.SessionResumed) == [E.SessionResumed(session=b"r", channel=1, replayed=1)]
    assert of(server, E.SessionResumed) == [E.SessionResumed(session=b"r", channel=1, replayed=0)]
    [replayed] = of(server, E.CommandReceived)
    assert replayed.command_id == lost and replayed.body == b"one"  # type: ignore[attr-defined]
    again.server.complete(b"r", lost)
    again.pump()
    assert of(again.client_events, E.CommandsCompleted) == [
        E.CommandsCompleted(session=b"r", command_ids=(lost,))
    ]
    nxt = again.client.send_command(b"r", spec.ExecutionSync())
    assert nxt == lost + 1


def test_a_replay_of_what_arrived_is_not_delivered_twice() -> None:
    pair = opened()
    pair.attach(b"r", timeout=60)
    cmd = pair.client.send_command(b"r", spec.QueueDeclare(queue="q"))
    pair.pump()
    assert len(received(pair)) == 1
    pair.client.receive_data(b"", 1.0)
    pair.server.receive_data(b"", 1.0)
    again = make_pair(
        client={"sessions": pair.client.store}, server={"sessions": pair.server.store}
    )
    again.take()
    again.client.resume(b"r")
    again.pump()
    assert not of(again.server_events, E.CommandReceived)  # dropped: delivered before
    again.server.complete(b"r", cmd)  # the application completes it on the new transport
    again.pump()
    assert of(again.client_events, E.CommandsCompleted)[-1].command_ids == (cmd,)  # type: ignore[attr-defined]


def test_a_kept_session_expires() -> None:
    pair = opened()
    pair.attach(b"e", timeout=5)
    pair.client.detach(b"e")
    pair.pump()
    client, server = pair.take()
    assert of(client, E.SessionDetached) == [
        E.SessionDetached(session=b"e", channel=1, code=0, by_peer=False, expires=5.0)
    ]
    assert of(server, E.SessionDetached)[0].expires == 5.0  # type: ignore[attr-defined]
    assert pair.client.next_deadline() == 5.0
    pair.advance(5.0)
    client, server = pair.take()
    assert client == [E.SessionExpired(session=b"e")] and server == [E.SessionExpired(session=b"e")]
    with pytest.raises(LocalProtocolError, match="no detached session"):
        pair.client.resume(b"e")
    # a kept session past its time, not yet swept, cannot be resumed either
    pair.attach(b"f", timeout=5)
    pair.client.detach(b"f")
    pair.pump()
    pair.now = 100.0
    pair.client.receive_data(control(0, spec.ConnectionHeartbeat()), 100.0)  # (no sweep)
    with pytest.raises(LocalProtocolError, match="expired"):
        pair.client.resume(b"f")
    pair.client.attach(b"f")  # a fresh one of the same name: the server forgets the old
    pair.pump()
    assert of(pair.server_events, E.SessionAttached)[-1].session == b"f"  # type: ignore[attr-defined]


def test_detach_without_keeping() -> None:
    pair = opened()
    pair.attach(b"g", timeout=60)
    pair.client.detach(b"g", keep=False)
    pair.pump()
    client, server = pair.take()
    assert of(client, E.SessionDetached)[0].expires is None  # type: ignore[attr-defined]
    assert of(server, E.SessionDetached)[0].expires is None  # type: ignore[attr-defined]
    assert len(pair.client.store) == len(pair.server.store) == 0


def test_the_store_forgets_the_oldest_past_its_size() -> None:
    store = E.SessionStore(max_sessions=2)
    for n in range(3):
        session = E.Session(bytes([n]), 1, None)
        session.timeout = 10
        assert store.keep(session, 0.0) == 10.0
    assert (None, b"\x00") not in store and (None, b"\x02") in store and len(store) == 2
    assert store.next_expiry() == 10.0
    assert [s.name for s in store.expire(10.0)] == [b"\x01", b"\x02"]
    assert store.next_expiry() is None
    assert repr(E.Session(b"x", 3, None)) == "<amqp010 Session b'x' attaching channel 3>"


def test_request_timeout_is_granted_within_the_limit() -> None:
    pair = opened(server={"limits": E.Limits(max_session_timeout=100)})
    pair.attach(b"t", timeout=1000)
    assert pair.client.session(b"t").timeout == 100
    assert pair.server.session(b"t").timeout == 100
    pair.client.receive_data(control(1, spec.SessionTimeout()), 0)  # "indefinitely"
    assert pair.client.session(b"t").timeout == 1000
    pair.server.receive_data(control(1, spec.SessionRequestTimeout()), 0)
    assert sent(pair.server) == [spec.SessionTimeout(timeout=100)]


def test_flush_gap_and_the_controls_taking_no_action() -> None:
    pair = opened()
    pair.attach()
    server = pair.server
    assert server.receive_data(control(1, spec.SessionFlush(expected=True)), 0) == []
    assert sent(server) == [spec.SessionExpected(commands=((0, 0),))]
    first = pair.client.send_command(b"s", spec.QueueDeclare(queue="a"))
    pair.pump()
    server.complete(b"s", first)
    server.receive_data(
        control(1, spec.SessionFlush(expected=True, confirmed=True, completed=True)), 0
    )
    assert sent(server) == [
        spec.SessionExpected(commands=((1, 1),)),
        spec.SessionConfirmed(commands=((0, 0),)),
        spec.SessionCompleted(commands=((0, 0),)),
    ]
    server.receive_data(control(1, spec.SessionKnownCompleted(commands=((0, 0),))), 0)
    server.receive_data(control(1, spec.SessionFlush(completed=True)), 0)
    assert sent(server) == [spec.SessionCompleted(commands=())]
    # a gap: ids 1 to 3 will not come; they count as completed, and 4 is next
    server.receive_data(control(1, spec.SessionGap(commands=((1, 3),))), 0)
    server.receive_data(control(1, spec.SessionExpected(commands=((0, 1),))), 0)
    server.receive_data(control(1, spec.SessionConfirmed(commands=((0, 1),))), 0)
    assert sent(server) == [spec.SessionCompleted(commands=((1, 3),), timely_reply=True)]
    pair.take()
    server.receive_data(command(1, spec.ExecutionSync()), 0)
    assert sent(server) == [spec.SessionCompleted(commands=((1, 4),), timely_reply=True)]


def test_attach_refusals_and_rules() -> None:
    pair = opened()
    pair.attach(b"a")
    server = pair.server
    # attaching again on the same channel is idempotent
    server.receive_data(control(1, spec.SessionAttach(name=b"a")), 0)
    assert sent(server) == [spec.SessionAttached(name=b"a")]
    # another name on a busy channel: transport-busy
    server.receive_data(control(1, spec.SessionAttach(name=b"b")), 0)
    assert sent(server) == [spec.SessionDetached(name=b"b", code=2)]
    # the same name on another channel: session-busy, unless forced
    server.receive_data(control(2, spec.SessionAttach(name=b"a")), 0)
    assert sent(server) == [spec.SessionDetached(name=b"a", code=1)]
    pair.take()
    events = server.receive_data(control(2, spec.SessionAttach(name=b"a", force=True)), 0)
    assert events[0] == E.SessionDetached(
        session=b"a", channel=1, code=1, by_peer=True, expires=None
    )
    assert events[1] == E.SessionAttached(session=b"a", channel=2)
    assert server.sessions[b"a"].channel == 2
    assert [type(c) for c in sent(server)] == [spec.SessionAttached, spec.SessionCommandPoint]
    # detach of a session not on the channel; a detached for nothing is ignored
    server.receive_data(control(3, spec.SessionDetach(name=b"zz")), 0)
    server.receive_data(control(3, spec.SessionDetached(name=b"zz", code=0)), 0)
    server.receive_data(control(3, spec.SessionAttached(name=b"zz")), 0)
    assert sent(server) == [spec.SessionDetached(name=b"zz", code=3)]
    # controls and commands on a channel without a session: not-attached
    server.receive_data(control(5, spec.SessionFlush(completed=True)), 0)
    server.receive_data(command(5, spec.ExecutionSync()), 0)
    assert sent(server) == [spec.SessionDetached(name=b"", code=3)] * 2


def test_a_command_before_the_command_point_is_unknown_ids() -> None:
    pair = opened()
    server = pair.server
    server.receive_data(control(1, spec.SessionAttach(name=b"u", force=False)), 0)
    assert [type(c) for c in sent(server)] == [spec.SessionAttached, spec.SessionCommandPoint]
    events = server.receive_data(command(1, spec.ExecutionSync()), 0)
    assert events[-1] == E.SessionDetached(
        session=b"u", channel=1, code=4, by_peer=False, expires=None
    )
    assert sent(server) == [spec.SessionDetached(name=b"u", code=4)]


def test_the_client_side_of_attach_refusals() -> None:
    pair = opened()
    pair.server.receive_data(control(1, spec.SessionAttach(name=b"theirs")), 0)
    pair.server.data_to_send()
    pair.client.attach(b"x")
    pair.pump()
    assert of(pair.client_events, E.SessionDetached) == [
        E.SessionDetached(session=b"x", channel=1, code=2, by_peer=True, expires=None)
    ]
    # an unexpected attached is ignored; so is a detached for another name
    pair.attach(b"y")
    pair.take()
    assert pair.client.receive_data(control(1, spec.SessionAttached(name=b"y")), 0) == []
    assert pair.client.receive_data(control(1, spec.SessionDetached(name=b"no", code=0)), 0) == []


def test_commands_while_detaching_are_dropped() -> None:
    pair = opened()
    pair.attach(b"d")
    pair.client.detach(b"d")
    assert pair.client.session(b"d").state is E.SessionState.DETACHING
    pair.client.data_to_send()
    assert pair.client.receive_data(command(1, spec.ExecutionSync()), 0) == []
    assert sent(pair.client) == []


@pytest.mark.parametrize(
    ("segment", "code"),
    [
        (b"\x03\x09\x01\x00", 540),  # an unknown command code in execution
        (b"\x0b\x01\x00\x00", 540),  # an unknown class
        (b"\x08\x01\x01\x00\xff", 503),  # queue.declare cut short
    ],
)
def test_a_command_that_cannot_be_decoded_is_refused(segment: bytes, code: int) -> None:
    pair = opened()
    pair.attach(b"h", timeout=60)
    pair.take()
    events = pair.server.receive_data(command(1, segment), 0)
    assert events == []
    exception, detach = sent(pair.server)
    assert isinstance(exception, spec.ExecutionException) and exception.error_code == code
    assert exception.command_id == 0 and detach == spec.SessionDetach(name=b"h")


def test_headers_of_delivery_properties_alone_and_others_go_as_given() -> None:
    # (A header of delivery properties alone is encoded once per value: the same bytes.)
    pair = opened()
    pair.attach(b"s")
    pair.take()
    alone = (spec.DeliveryProperties(routing_key="k", priority=3),)
    both = (spec.DeliveryProperties(routing_key="k"), spec.MessageProperties(content_type="t"))
    headers = [alone, (spec.DeliveryProperties(routing_key="k", priority=3),), both, alone]
    for header in headers:
        pair.client.send_command(b"s", spec.MessageTransfer(destination="x"), header=header)
    pair.pump()
    assert [e.header for e in received(pair)] == headers
    with pytest.raises(EncodeError, match="a string type holds str, not list"):
        pair.client.send_command(
            b"s",
            spec.MessageTransfer(destination="x"),
            header=(spec.DeliveryProperties(routing_key=["k"]),),  # type: ignore[arg-type]
        )


def test_a_header_that_cannot_be_decoded_is_refused() -> None:
    pair = opened()
    pair.attach(b"h")
    pair.server.receive_data(
        command(1, spec.MessageTransfer(destination="d"), header=b"\x00\x00\x00\x09junk"), 0
    )
    exception, _ = sent(pair.server)
    assert isinstance(exception, spec.ExecutionException) and exception.error_code == 503


def test_too_many_incomplete_commands_are_refused() -> None:
    pair = opened(server={"limits": E.Limits(max_incomplete_commands=2)})
    pair.attach(b"l")
    for _ in range(3):
        pair.client.send_command(b"l", spec.QueueDeclare(queue="q"))
    pair.pump()
    assert len(received(pair)) == 2
    [exc] = of(pair.client_events, E.ExecutionExceptionReceived)
    assert exc.exception.error_code == 506 and exc.exception.command_id == 2  # type: ignore[attr-defined]


def test_outstanding_bytes_are_limited() -> None:
    pair = opened(client={"limits": E.Limits(max_outstanding_bytes=100)})
    pair.attach(b"o")
    pair.client.send_command(b"o", spec.MessageTransfer(destination="d"), body=b"x" * 200)
    with pytest.raises(LocalProtocolError, match="wait for CommandsCompleted"):
        pair.client.send_command(b"o", spec.MessageTransfer(destination="d"), body=b"y")
    pair.pump()
    pair.server.complete(b"o", 0)
    pair.pump()
    pair.client.send_command(b"o", spec.MessageTransfer(destination="d"), body=b"y")


def test_session_misuse_raises_and_sends_nothing() -> None:
    pair = make_pair(open_=False)
    with pytest.raises(LocalProtocolError, match="not allowed when the connection is"):
        pair.client.attach(b"n")
    pair.pump()
    pair.take()
    with pytest.raises(LocalProtocolError, match="uint32"):
        pair.client.attach(b"n", timeout=-1)
    with pytest.raises(LocalProtocolError, match="65535 octets"):
        pair.client.attach(b"n" * 70000)
    pair.client.attach(b"n")
    with pytest.raises(LocalProtocolError, match="already"):
        pair.client.attach("n")
    with pytest.raises(LocalProtocolError, match="not attached"):
        pair.client.detach(b"n")  # still attaching
    pair.pump()
    with pytest.raises(KeyError):
        pair.client.session(b"nothing")
    assert pair.client.data_to_send() == b""
    small = opened(client={"limits": E.Limits(max_channels=2)})
    small.client.attach(b"one")
    with pytest.raises(LocalProtocolError, match="channels are in use"):
        small.client.attach(b"two")


def test_a_connection_ending_detaches_its_sessions() -> None:
    pair = opened()
    pair.attach(b"k", timeout=30)
    pair.take()
    pair.client.attach(b"pending")
    pair.client.close()
    pair.pump()
    client, _ = pair.take()
    assert [type(e).__name__ for e in client] == [
        "SessionDetached",
        "SessionDetached",
        "ConnectionClosed",
    ]
    assert client[0] == E.SessionDetached(
        session=b"k", channel=1, code=None, by_peer=False, expires=30.0
    )


def test_corners_of_the_session_controls() -> None:
    pair = opened()
    server = pair.server
    # flush(expected) before the peer's command-point: nothing is expected yet
    server.receive_data(control(1, spec.SessionAttach(name=b"c")), 0)
    sent(server)
    server.receive_data(control(1, spec.SessionFlush(expected=True)), 0)
    assert sent(server) == [spec.SessionExpected(commands=())]
    # a gap away from the next command leaves it; a completed for none of ours says nothing
    server.receive_data(control(1, spec.SessionCommandPoint(command_id=0, command_offset=0)), 0)
    server.receive_data(control(1, spec.SessionGap(commands=((5, 6), (0, 0)))), 0)
    assert sent(server) == [spec.SessionCompleted(commands=((0, 0), (5, 6)), timely_reply=True)]
    assert server.receive_data(control(1, spec.SessionCompleted(commands=((9, 9),))), 0) == []
    # an attach of the session while it is detaching is not answered
    server.detach(b"c")
    sent(server)
    assert server.receive_data(control(1, spec.SessionAttach(name=b"c")), 0) == []
    assert sent(server) == []


def test_a_new_client_takes_over_a_name_kept_for_a_transport_gone() -> None:
    # a name kept in a shared store after its transport went, attached again by a client
    # that starts its numbering again (not a resume): its commands are not replays
    pair = opened()
    pair.attach(b"n", timeout=60)
    pair.client.send_command(b"n", spec.QueueDeclare(queue="q"))
    pair.pump()
    for event in received(pair):
        pair.server.complete(b"n", event.command_id)
    pair.pump()  # (completed, and known-completed back: the client knows it is done)
    pair.client.receive_data(b"", 1.0)
    pair.server.receive_data(b"", 1.0)
    fresh = make_pair(server={"sessions": pair.server.store})
    fresh.take()
    fresh.attach(b"n")
    first = fresh.client.send_command(b"n", spec.QueueDeclare(queue="again"))
    fresh.pump()
    assert [e.command_id for e in received(fresh)] == [first] == [0]
