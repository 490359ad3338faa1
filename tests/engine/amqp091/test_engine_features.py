"""The AMQP 0-9-1 engine's features, client against server through real bytes: heartbeats
and time-outs on an injected clock, publisher confirms, flow, blocked/unblocked, the SASL
mechanisms (AMQPLAIN as RabbitMQ and py-amqp write it, EXTERNAL, a secure round), and the
caller's mistakes (LocalProtocolError, nothing sent)."""

from __future__ import annotations

import pamqp.frame
import pytest
from support.amqp091.engine import make_pair, methods, open_channel, open_pair

from amqp_sansio import amqp091, errors
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev
from amqp_sansio.security.mechanisms import PlainClient, SASLConfigurationError

# -- heartbeats and time-outs ----------------------------------------------------------------


def test_heartbeat_negotiation_follows_rabbitmq() -> None:
    assert engine.negotiation.negotiate(60, 0) == 60
    assert engine.negotiation.negotiate(0, 30) == 30
    assert engine.negotiation.negotiate(10, 30) == 10
    assert engine.negotiation.negotiate(0, 0) == 0
    pair = open_pair(client={"heartbeat": 10}, server={"heartbeat": 30})
    assert pair.client.heartbeat == pair.server.heartbeat == 10


def test_heartbeats_sent_at_half_the_interval_and_silence_ends_the_connection() -> None:
    pair = open_pair(client={"heartbeat": 10}, server={"heartbeat": 10})
    client = pair.client
    assert client.next_deadline() == 5.0  # nothing sent for heartbeat/2
    got = client.handle_timer(4.9)
    assert client.data_to_send() == b""
    got += client.handle_timer(5.0)
    assert client.data_to_send() == amqp091.framing.HEARTBEAT
    assert client.next_deadline() == 10.0
    got += client.receive_data(amqp091.framing.HEARTBEAT, 12.0)  # the server's heartbeat: activity
    got += client.handle_timer(10.0)
    assert client.data_to_send() == amqp091.framing.HEARTBEAT
    assert client.next_deadline() == 15.0
    got += client.handle_timer(15.0)
    got += client.handle_timer(20.0)
    got += client.handle_timer(25.0)
    assert client.data_to_send() == amqp091.framing.HEARTBEAT * 3
    assert got == []
    assert client.next_deadline() == 30.0  # 12 + 2 * 10 is 32; the next send is at 30
    assert client.handle_timer(30.0) == []
    client.data_to_send()
    assert client.next_deadline() == 32.0
    [closed] = client.handle_timer(32.0)
    assert client.closed and client.next_deadline() is None
    assert isinstance(closed, ev.ConnectionClosed)
    assert closed.reply_code == 320 and "missed heartbeats" in closed.reply_text
    assert not closed.by_peer
    assert client.handle_timer(40.0) == []
    assert client.data_to_send() == b""


def test_a_paused_monitor_counts_the_peers_silence_from_now() -> None:
    """``monitor_paused`` (the broker sets it while it stops reading a blocked publisher,
    as RabbitMQ pauses its heartbeat monitor): each timer call restarts the silence."""
    pair = open_pair(client={"heartbeat": 10}, server={"heartbeat": 10})
    server = pair.server
    server.monitor_paused = True
    assert server.handle_timer(19.0) == []
    # 19 s of silence since the last call: not two heartbeats
    assert server.handle_timer(38.0) == []
    assert not server.closed
    server.monitor_paused = False
    assert server.next_deadline() == 38.0 + 5.0  # our heartbeat; the silence ends at 58
    [closed] = server.handle_timer(58.0)
    assert isinstance(closed, ev.ConnectionClosed) and "missed heartbeats" in closed.reply_text


def test_no_heartbeat_means_no_deadline_once_open() -> None:
    pair = open_pair(client={"heartbeat": 0}, server={"heartbeat": 0})
    assert pair.client.heartbeat == 0 and pair.client.next_deadline() is None


def test_handshake_timeout() -> None:
    pair = make_pair()
    pair.pump(accept=False)
    assert pair.server.next_deadline() == 10.0
    got = pair.server.handle_timer(9.0)
    assert not pair.server.closed
    got += pair.server.handle_timer(10.0)
    [login] = pair.server_events
    assert isinstance(login, ev.LoginRequested)
    [closed] = got
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 320
    assert "handshake" in closed.reply_text


def test_close_ok_timeout() -> None:
    pair = open_pair(client={"heartbeat": 0})
    pair.client.close(320, "going")
    assert pair.client.next_deadline() == 10.0
    assert pair.client.handle_timer(10.0) == [
        ev.ConnectionClosed(reply_code=320, reply_text="going", by_peer=False)
    ]


def test_stream_end() -> None:
    pair = open_pair()
    [closed] = pair.client.receive_data(b"", 1.0)
    assert isinstance(closed, ev.ConnectionClosed) and closed.by_peer and closed.reply_code == 320
    assert pair.client.receive_data(b"more", 2.0) == []  # ignored once closed
    pair.server.close()
    # the stream ended while closing: our close's reason
    assert pair.server.receive_data(b"", 1.0) == [
        ev.ConnectionClosed(reply_code=200, reply_text="", by_peer=False)
    ]


def test_simultaneous_closes() -> None:
    pair = open_pair()
    number = open_channel(pair)
    pair.client.close_channel(number)
    pair.server.close_channel(number, 406, "x")
    pair.pump()
    client_events, server_events = pair.take()
    assert [e.reply_code for e in client_events] == [200]
    assert [e.reply_code for e in server_events] == [406]
    pair.client.close(200, "a")
    pair.server.close(200, "b")
    pair.pump()
    assert pair.take() == (
        [ev.ConnectionClosed(reply_code=200, reply_text="a", by_peer=False)],
        [ev.ConnectionClosed(reply_code=200, reply_text="b", by_peer=False)],
    )


# -- confirms, flow, blocked ----------------------------------------------------------------


def test_publisher_confirms() -> None:
    pair = open_pair()
    number = open_channel(pair)
    pair.client.send_method(number, amqp091.spec.ConfirmSelect())
    pair.pump()
    _, [select] = pair.take()
    assert select == ev.MethodReceived(channel=number, method=amqp091.spec.ConfirmSelect())
    assert pair.server.channel(number).confirm_mode
    pair.server.send_method(number, amqp091.spec.ConfirmSelectOk())
    pair.pump()
    assert pair.client.channel(number).confirm_mode
    pair.take()
    seqs = [pair.client.publish(number, "", "q", b"%d" % i) for i in range(5)]
    assert seqs == [1, 2, 3, 4, 5]
    pair.pump()
    assert pair.server.channel(number).next_publish_seq == 6
    assert pair.client.channel(number).unconfirmed == {1, 2, 3, 4, 5}
    pair.server.send_method(number, amqp091.spec.BasicAck(delivery_tag=2, multiple=True))
    pair.server.send_method(number, amqp091.spec.BasicNack(delivery_tag=4))
    pair.server.send_method(number, amqp091.spec.BasicAck(delivery_tag=0, multiple=True))
    pair.pump()
    client_events, _ = pair.take()
    assert client_events == [
        ev.Confirmed(channel=number, delivery_tag=2, multiple=True, ack=True),
        ev.Confirmed(channel=number, delivery_tag=4, multiple=False, ack=False),
        ev.Confirmed(channel=number, delivery_tag=0, multiple=True, ack=True),
    ]
    assert pair.client.channel(number).unconfirmed == set()


def test_acks_outside_confirm_mode_are_methods() -> None:
    pair = open_pair()
    number = open_channel(pair)
    pair.client.send_method(number, amqp091.spec.BasicAck(delivery_tag=3))
    pair.server.send_method(number, amqp091.spec.BasicAck(delivery_tag=3))
    pair.pump()
    assert pair.take() == (
        [ev.MethodReceived(channel=number, method=amqp091.spec.BasicAck(delivery_tag=3))],
        [ev.MethodReceived(channel=number, method=amqp091.spec.BasicAck(delivery_tag=3))],
    )


def test_tx_and_confirm_do_not_mix_on_the_client() -> None:
    pair = open_pair()
    number = open_channel(pair)
    other = open_channel(pair)
    pair.client.send_method(number, amqp091.spec.TxSelect())
    with pytest.raises(errors.LocalProtocolError):
        pair.client.send_method(number, amqp091.spec.ConfirmSelect())
    pair.client.send_method(other, amqp091.spec.ConfirmSelect())
    with pytest.raises(errors.LocalProtocolError):
        pair.client.send_method(other, amqp091.spec.TxSelect())
    pair.pump()
    assert pair.server.channel(number).tx_mode


def test_flow() -> None:
    pair = open_pair()
    number = open_channel(pair)
    pair.server.send_method(number, amqp091.spec.ChannelFlow(active=False))
    assert not pair.server.channel(number).peer_flow_active
    pair.pump()
    client_events, server_events = pair.take()
    assert client_events == [ev.FlowChanged(channel=number, active=False)]
    assert server_events == [
        ev.MethodReceived(channel=number, method=amqp091.spec.ChannelFlowOk(active=False))
    ]
    with pytest.raises(errors.LocalProtocolError):
        pair.client.publish(number, "", "q", b"x")
    assert pair.client.data_to_send() == b""
    pair.server.send_method(number, amqp091.spec.ChannelFlow(active=True))
    pair.pump()
    assert pair.client.publish(number, "", "q", b"x") is None


def test_blocked_and_unblocked() -> None:
    pair = open_pair()
    assert pair.server.block("low on memory") is True
    pair.pump()
    assert pair.client.blocked
    assert pair.server.unblock() is True
    pair.pump()
    assert not pair.client.blocked
    assert pair.take()[0] == [ev.Blocked(reason="low on memory"), ev.Unblocked()]
    quiet = open_pair(client={"client_properties": {"capabilities": {"connection.blocked": False}}})
    assert quiet.server.block("x") is False
    assert quiet.server.data_to_send() == b""
    with pytest.raises(errors.LocalProtocolError):
        quiet.client.block()


def test_update_secret() -> None:
    pair = open_pair()
    pair.client.send_method(0, amqp091.spec.ConnectionUpdateSecret(new_secret=b"t", reason="r"))
    pair.pump()
    _, [update] = pair.take()
    assert isinstance(update, ev.MethodReceived) and update.channel == 0
    pair.server.send_method(0, amqp091.spec.ConnectionUpdateSecretOk())
    pair.pump()
    assert pair.take()[0] == [
        ev.MethodReceived(channel=0, method=amqp091.spec.ConnectionUpdateSecretOk())
    ]


def test_server_channel_accepted_by_the_application() -> None:
    pair = open_pair(server={"auto_accept_channels": False})
    a = pair.client.open_channel()
    b = pair.client.open_channel()
    pair.pump()
    assert pair.take() == (
        [],
        [
            ev.MethodReceived(channel=a, method=amqp091.spec.ChannelOpen()),
            ev.MethodReceived(channel=b, method=amqp091.spec.ChannelOpen()),
        ],
    )
    pair.server.accept_channel(a)
    pair.server.close_channel(b, 403, "no")
    pair.pump()
    client_events, server_events = pair.take()
    assert client_events == [
        ev.ChannelOpened(channel=a),
        ev.ChannelClosed(channel=b, reply_code=403, reply_text="no", by_peer=True),
    ]
    assert server_events == [
        ev.ChannelOpened(channel=a),
        ev.ChannelClosed(channel=b, reply_code=403, reply_text="no", by_peer=False),
    ]
    with pytest.raises(errors.LocalProtocolError):
        pair.server.accept_channel(a)


def test_channel_numbers_reused_and_exhausted() -> None:
    pair = open_pair(client={"channel_max": 2})
    assert pair.client.channel_max == 2
    assert [open_channel(pair), open_channel(pair)] == [1, 2]
    with pytest.raises(errors.LocalProtocolError):
        pair.client.open_channel()
    pair.client.close_channel(1)
    pair.pump()
    assert open_channel(pair) == 1 if pair.take() else False


def test_frames_split_at_the_negotiated_frame_max() -> None:
    pair = open_pair(client={"frame_max": 4096})
    number = open_channel(pair)
    assert pair.server.frame_max == 4096
    pair.client.publish(number, "", "q", b"x" * 10000)
    data = pair.client.data_to_send()
    sizes = [len(f) for f in pamqp_frames(data)]
    assert max(sizes) <= 4096
    [content] = pair.server.receive_data(data, 0.0)
    assert isinstance(content, ev.ContentReceived) and content.body == b"x" * 10000


def pamqp_frames(data: bytes) -> list[bytes]:
    out = []
    while data:
        consumed, _, _ = pamqp.frame.unmarshal(data)
        out.append(data[:consumed])
        data = data[consumed:]
    return out


# -- mechanisms ----------------------------------------------------------------------------


def test_amqplain_is_a_table_without_its_length() -> None:
    import pamqp.encode

    pair = make_pair(client={"mechanism": "AMQPLAIN", "username": "ann", "password": "pw"})
    pair.pump(accept=False)
    _, [login] = pair.take()
    assert isinstance(login, ev.LoginRequested)
    assert login.response == pamqp.encode.field_table({"LOGIN": "ann", "PASSWORD": "pw"})[4:]
    assert (login.username, login.password) == ("ann", "pw")


def test_several_mechanism_names_the_first_the_server_offers_is_used() -> None:
    """``mechanism=`` with several names, preferred first: the first the server offers
    (``connection.start`` field ``mechanisms``), whatever the server's order; none in
    common ends the connection with 403 before any credential is sent."""
    for offered, used in ((("PLAIN", "AMQPLAIN"), "AMQPLAIN"), (("EXTERNAL",), "EXTERNAL")):
        pair = make_pair(
            client={
                "mechanism": ("AMQPLAIN", "EXTERNAL", "PLAIN"),
                "username": "ann",
                "password": "pw",
            },
            server={"mechanisms": offered},
        )
        pair.pump(accept=False)
        _, [login] = pair.take()
        assert isinstance(login, ev.LoginRequested) and login.mechanism == used
        assert pair.client.mechanism is not None and pair.client.mechanism.name == used
    pair = make_pair(client={"mechanism": ["AMQPLAIN"]}, server={"mechanisms": ("PLAIN",)})
    pair.pump(accept=False)
    [closed], server_events = pair.take()
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 403
    assert "offers PLAIN, not AMQPLAIN" in closed.reply_text
    assert not [e for e in server_events if isinstance(e, ev.LoginRequested)]
    for bad in ([], ["PLAIN", 7]):
        with pytest.raises(SASLConfigurationError, match="mechanism names"):
            engine.Connection(engine.Role.CLIENT, mechanism=bad)  # type: ignore[arg-type]


def test_external_and_a_secure_round() -> None:
    pair = make_pair(
        client={"mechanism": "EXTERNAL", "username": "cn=app"},
        server={"mechanisms": ("EXTERNAL",)},
    )
    pair.pump(accept=False)
    _, [login] = pair.take()
    assert isinstance(login, ev.LoginRequested)
    assert (login.mechanism, login.response, login.username, login.password) == (
        "EXTERNAL",
        b"cn=app",
        "cn=app",
        None,
    )
    pair.server.challenge(b"more?")
    pair.pump(accept=False)
    text = "EXTERNAL expects no challenge, the server sent one"
    assert pair.take() == (  # the client cannot answer: it closes with 503
        [
            ev.ConnectionClosed(
                reply_code=503, reply_text=text, class_id=10, method_id=20, by_peer=False
            )
        ],
        [
            ev.ConnectionClosed(
                reply_code=503, reply_text=text, class_id=10, method_id=20, by_peer=True
            )
        ],
    )


def test_a_mechanism_object_and_a_secure_round() -> None:
    class Twice(PlainClient):
        def _respond(self, challenge: bytes) -> bytes:
            return challenge[::-1]

    pair = make_pair(client={"mechanism": Twice("u", "p")})
    pair.pump(accept=False)
    assert [type(e) for e in pair.take()[1]] == [ev.LoginRequested]
    pair.server.challenge(b"abc")
    pair.pump(accept=False)
    _, [again] = pair.take()
    assert isinstance(again, ev.LoginRequested)
    assert (again.mechanism, again.response, again.username) == ("PLAIN", b"cba", None)
    pair.server.accept_login("u")
    pair.pump()
    client_events, _ = pair.take()
    assert isinstance(client_events[-1], ev.ConnectionOpened)
    assert client_events[-1].identity == "u"


def test_refused_open() -> None:
    pair = make_pair(client={"virtual_host": "/nope"})
    pair.pump(accept=False)
    pair.server.accept_login("guest")
    pair.pump(accept=False)
    _, [_, request] = pair.take()
    assert request == ev.OpenRequested(virtual_host="/nope")
    pair.server.refuse_open(530, "no access to /nope")
    pair.pump()
    client_events, _ = pair.take()
    assert client_events == [
        ev.ConnectionClosed(
            reply_code=530, reply_text="no access to /nope", class_id=10, method_id=40, by_peer=True
        )
    ]


# -- the caller's mistakes ----------------------------------------------------------------


def test_local_errors_send_nothing() -> None:
    with pytest.raises(errors.LocalProtocolError):
        engine.Connection(engine.Role.CLIENT, frame_max=1000)
    with pytest.raises(errors.LocalProtocolError):
        engine.Connection(engine.Role.CLIENT, heartbeat=70000)
    with pytest.raises(errors.LocalProtocolError):
        engine.Connection(
            engine.Role.CLIENT, channel_max=70000, limits=engine.Limits(max_channels=0)
        )
    with pytest.raises(SASLConfigurationError, match="CRAM-MD5"):
        engine.Connection(engine.Role.CLIENT, mechanism="CRAM-MD5")
    client = engine.Connection(engine.Role.CLIENT)
    with pytest.raises(errors.LocalProtocolError):
        client.open_channel()
    client.start(0.0)
    with pytest.raises(errors.LocalProtocolError):
        client.start(0.0)
    with pytest.raises(errors.LocalProtocolError):
        client.accept_login("x")
    pair = open_pair()
    number = open_channel(pair)
    bad = [
        lambda: pair.client.send_method(number, amqp091.spec.BasicPublish()),
        lambda: pair.client.send_method(
            number, amqp091.spec.ChannelClose(reply_code=200, class_id=0, method_id=0)
        ),
        lambda: pair.client.send_method(0, amqp091.spec.QueueDeclare()),
        lambda: pair.client.send_method(number, amqp091.spec.ConnectionBlocked()),
        lambda: pair.client.send_method(9, amqp091.spec.BasicQos()),
        lambda: pair.client.send_content(number, amqp091.spec.BasicQos(), None, b""),
        lambda: pair.server.open_channel(),
        lambda: pair.client.close_channel(9),
        lambda: pair.server.accept_open(),
        lambda: pair.client.unblock(),
    ]
    for call in bad:
        with pytest.raises(errors.LocalProtocolError):
            call()
    with pytest.raises(amqp091.errors.EncodeError):
        pair.client.send_method(number, amqp091.spec.BasicQos(prefetch_count=70000))
    assert pair.client.data_to_send() == b"" and pair.server.data_to_send() == b""
    pair.client.close()
    pair.client.close()  # once only
    assert len(methods(pair.client.data_to_send())) == 1


def test_close_before_start_ends_at_once() -> None:
    client = engine.Connection(engine.Role.CLIENT)
    client.close()
    assert client.closed and client.data_to_send() == b""
    assert client.next_deadline() is None
    assert [type(e) for e in client.handle_timer(100.0)] == [ev.ConnectionClosed]
    assert "client" in repr(client) and "Channel" not in repr(client)
