"""Hostile input to the AMQP 0-9-1 engine: a catalogue of what a peer may send wrong, each
answered on the wire with the reply code the spec (or RabbitMQ, where the spec names none)
gives: a hard error closes the connection, a soft one the channel. Fed whole and byte by
byte."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from support.amqp091.engine import (
    Pair,
    frames,
    give,
    methods,
    open_channel,
    open_pair,
    take,
    take_one,
)

from amqp_sansio import amqp091
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev

PUBLISH = amqp091.spec.BasicPublish(exchange="", routing_key="q")
PROPS = amqp091.BasicProperties()


def frame(frame_type: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">BHI", frame_type, channel, len(payload)) + payload + b"\xce"


def method(channel: int, m: amqp091.Method) -> bytes:
    return amqp091.encode_method_frame(channel, m)


def header(channel: int, size: int, props: amqp091.methods.Properties = PROPS) -> bytes:
    return amqp091.encode_header_frame(channel, size, props)


def body(channel: int, data: bytes) -> bytes:
    return amqp091.encode_body_frame(channel, data)


def publish(channel: int, size: int) -> bytes:
    return method(channel, PUBLISH) + header(channel, size)


# (name, bytes the client side sends to an open server with channel 1 open,
#  expected: ("connection" | "channel", reply code))
CATALOGUE: list[tuple[str, Any, tuple[str, int]]] = [
    (
        "bad frame end",
        lambda: method(1, amqp091.spec.BasicQos())[:-1] + b"\x00",
        ("connection", 501),
    ),
    ("unknown frame type", lambda: frame(9, 1, b""), ("connection", 501)),
    ("heartbeat on a channel", lambda: frame(8, 1, b""), ("connection", 501)),
    ("frame over frame-max", lambda: frame(3, 1, b"x" * 131072), ("connection", 501)),
    ("unknown method", lambda: frame(1, 1, struct.pack(">HH", 60, 99)), ("connection", 540)),
    ("truncated method", lambda: frame(1, 1, struct.pack(">HH", 50, 10)), ("connection", 501)),
    ("body on channel 0", lambda: frame(3, 0, b"x"), ("connection", 505)),
    ("header without a method", lambda: header(1, 3), ("connection", 505)),
    ("body without a header", lambda: body(1, b"abc"), ("connection", 505)),
    ("body with no method", lambda: method(1, PUBLISH) + body(1, b"x"), ("connection", 505)),
    (
        "second method mid-content",
        lambda: publish(1, 5) + body(1, b"ab") + method(1, PUBLISH),
        ("connection", 505),
    ),
    (
        "method between method and header",
        lambda: method(1, PUBLISH) + method(1, amqp091.spec.BasicQos()),
        ("connection", 505),
    ),
    ("second header", lambda: publish(1, 5) + header(1, 5), ("connection", 505)),
    ("body larger than announced", lambda: publish(1, 2) + body(1, b"abc"), ("connection", 501)),
    (
        "header for a class without content",
        lambda: method(1, PUBLISH) + frame(2, 1, struct.pack(">HHQH", 50, 0, 1, 0)),
        ("connection", 540),
    ),
    # (a server answers as RabbitMQ does, 406: test_content_over_max_body_is_rabbitmqs_406)
    ("content over max_body", lambda: publish(1, 200 * 1024 * 1024), ("channel", 406)),
    (
        "frame on a channel never opened",
        lambda: method(7, amqp091.spec.BasicQos()),
        ("connection", 504),
    ),
    ("content on a channel never opened", lambda: header(7, 1), ("connection", 504)),
    (
        "channel.open on an open channel",
        lambda: method(1, amqp091.spec.ChannelOpen()),
        ("connection", 504),
    ),
    (
        "channel.open over channel-max",
        lambda: method(3000, amqp091.spec.ChannelOpen()),
        ("connection", 530),
    ),
    (
        "channel.close-ok on an open channel",
        lambda: method(1, amqp091.spec.ChannelCloseOk()),
        ("connection", 503),
    ),
    (
        "queue method on channel 0",
        lambda: method(0, amqp091.spec.QueueDeclare(queue="q")),
        ("connection", 503),
    ),
    (
        "connection method on channel 1",
        lambda: method(1, amqp091.spec.ConnectionOpen()),
        ("connection", 503),
    ),
    (
        "connection.start-ok when open",
        lambda: method(0, amqp091.spec.ConnectionStartOk(client_properties={}, response=b"")),
        ("connection", 503),
    ),
    (
        "connection.close-ok when open",
        lambda: method(0, amqp091.spec.ConnectionCloseOk()),
        ("connection", 503),
    ),
    (
        "tx.select in confirm mode",
        lambda: method(1, amqp091.spec.ConfirmSelect()) + method(1, amqp091.spec.TxSelect()),
        ("channel", 406),
    ),
    (
        "confirm.select in tx mode",
        lambda: method(1, amqp091.spec.TxSelect()) + method(1, amqp091.spec.ConfirmSelect()),
        ("channel", 406),
    ),
    (
        "bad table type",
        lambda: frame(
            1,
            1,
            amqp091.spec.QueueDeclare(queue="q").encode()[:-4] + struct.pack(">I", 3) + b"\x01kZ",
        ),
        ("connection", 502),
    ),
]


def _close_codes(data: bytes, *, server: bool = False) -> tuple[list[int], list[tuple[int, int]]]:
    """(connection.close codes, (channel, channel.close code)) in ``data``."""
    conn, chan = [], []
    for f in frames(data, server=server):
        if isinstance(f, amqp091.MethodFrame):
            if isinstance(f.method, amqp091.spec.ConnectionClose):
                conn.append(f.method.reply_code)
            elif isinstance(f.method, amqp091.spec.ChannelClose):
                chan.append((f.channel, f.method.reply_code))
    return conn, chan


@pytest.mark.parametrize("chunk", [None, 1])
@pytest.mark.parametrize(("name", "make", "expected"), CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_catalogue(name: str, make: Any, expected: tuple[str, int], chunk: int | None) -> None:
    pair = open_pair()
    number = open_channel(pair)
    assert number == 1
    data = make()
    if chunk:
        for i in range(len(data)):
            give(pair.server, pair.server.receive_data(data[i : i + 1], 1.0))
    else:
        give(pair.server, pair.server.receive_data(data, 1.0))
    sent = pair.server.data_to_send()
    conn, chan = _close_codes(sent)
    give(pair.client, pair.client.receive_data(sent, 1.0))
    pair.pump()
    client_events, server_events = pair.take()
    scope, code = expected
    if scope == "connection":
        assert conn == [code], (conn, chan)
        # the client answers the close; both report the code
        assert [(e.reply_code, e.by_peer) for e in client_events] == [(code, True)]
        assert [(e.reply_code, e.by_peer) for e in server_events] == [(code, False)]
        assert pair.client.closed and pair.server.closed
    else:
        assert conn == [] and chan == [(1, code)], (conn, chan)
        closed = [e for e in server_events if isinstance(e, ev.ChannelClosed)]
        assert [(e.reply_code, e.by_peer) for e in closed] == [(code, False)]
        assert pair.server.state is engine.ConnectionState.OPEN


def test_parser_error_ends_the_connection_at_once() -> None:
    pair = open_pair()
    give(pair.server, pair.server.receive_data(frame(9, 0, b""), 1.0))
    assert pair.server.closed
    assert take(pair.server) == [
        ev.ConnectionClosed(reply_code=501, reply_text="unknown frame type 9", by_peer=False)
    ]
    assert methods(pair.server.data_to_send()) == [
        amqp091.spec.ConnectionClose(
            reply_code=501, reply_text="unknown frame type 9", class_id=0, method_id=0
        )
    ]


@pytest.mark.parametrize("chunk", [None, 1])
def test_wrong_protocol_header_gets_ours_and_the_stream_closed(chunk: int | None) -> None:
    server = engine.Connection(engine.Role.SERVER)
    data = b"AMQP\x00\x01\x00\x00"
    for piece in [data] if chunk is None else [data[i : i + 1] for i in range(len(data))]:
        give(server, server.receive_data(piece, 0.0))
    assert server.data_to_send() == amqp091.PROTOCOL_HEADER
    assert server.closed
    [closed] = take(server)
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 501
    assert "protocol header" in closed.reply_text
    if chunk is None:
        assert "AMQP 1.0" in closed.reply_text


def test_http_gets_our_header() -> None:
    server = engine.Connection(engine.Role.SERVER)
    give(server, server.receive_data(b"GET / HTTP/1.1\r\n", 0.0))
    assert server.data_to_send() == amqp091.PROTOCOL_HEADER and server.closed


def test_client_told_another_version() -> None:
    client = engine.Connection(engine.Role.CLIENT)
    client.start(0.0)
    give(client, client.receive_data(b"AMQP\x00\x00\x09\x00", 0.0))
    [closed] = take(client)
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 540
    assert closed.by_peer and client.closed


def _server_after_header() -> engine.Connection:
    server = engine.Connection(engine.Role.SERVER, mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"))
    server.start(0.0)
    give(server, server.receive_data(amqp091.PROTOCOL_HEADER, 0.0))
    server.data_to_send()
    return server


def test_mechanism_not_offered_closes_without_a_word() -> None:
    server = _server_after_header()
    give(
        server,
        server.receive_data(
            method(
                0,
                amqp091.spec.ConnectionStartOk(
                    client_properties={}, mechanism="CRAM-MD5", response=b"x"
                ),
            ),
            0.0,
        ),
    )
    assert server.data_to_send() == b"" and server.closed
    [closed] = take(server)
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 503


@pytest.mark.parametrize(
    ("mechanism", "response"),
    [
        ("PLAIN", b"no-nuls"),
        ("PLAIN", b"\x00\xff\x00x"),
        ("AMQPLAIN", b"\x05LOGIN"),
        ("AMQPLAIN", amqp091.encode_table({"LOGIN": 1, "PASSWORD": "p"})[4:]),
    ],
)
def test_malformed_login_response_is_refused_with_403(mechanism: str, response: bytes) -> None:
    server = _server_after_header()
    give(
        server,
        server.receive_data(
            method(
                0,
                amqp091.spec.ConnectionStartOk(
                    client_properties={}, mechanism=mechanism, response=response
                ),
            ),
            0.0,
        ),
    )
    assert _close_codes(server.data_to_send())[0] == [403]
    assert take(server) == []
    give(server, server.receive_data(method(0, amqp091.spec.ConnectionCloseOk()), 0.0))
    [closed] = take(server)
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 403


def test_tune_ok_over_our_channel_max_closes_without_a_word() -> None:
    server = _server_after_header()
    give(
        server,
        server.receive_data(
            method(0, amqp091.spec.ConnectionStartOk(client_properties={}, response=b"\x00u\x00p")),
            0.0,
        ),
    )
    take(server)
    server.accept_login("u")
    server.data_to_send()
    give(
        server,
        server.receive_data(
            method(0, amqp091.spec.ConnectionTuneOk(channel_max=4000, frame_max=4096)), 0.0
        ),
    )
    assert server.data_to_send() == b"" and server.closed
    [closed] = take(server)
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 530


@pytest.mark.parametrize("frame_max", [0, 1000, 4095, 131073, 200000])
def test_tune_ok_with_a_bad_frame_max_closes_without_a_word(frame_max: int) -> None:
    """0-9-1 spec connection.tune-ok, field frame-max, rules "upper-limit" and "minimum":
    as for channel-max, the socket closes without a negotiated close."""
    server = _server_after_header()
    give(
        server,
        server.receive_data(
            method(0, amqp091.spec.ConnectionStartOk(client_properties={}, response=b"\x00u\x00p")),
            0.0,
        ),
    )
    take(server)
    server.accept_login("u")
    server.data_to_send()
    give(
        server,
        server.receive_data(
            method(0, amqp091.spec.ConnectionTuneOk(channel_max=10, frame_max=frame_max)), 0.0
        ),
    )
    assert server.data_to_send() == b"" and server.closed
    [closed] = take(server)
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 530
    assert f"frame-max {frame_max} " in closed.reply_text


def test_content_over_max_body_is_rabbitmqs_406_from_a_server_311_from_a_client() -> None:
    """A server closes the channel as RabbitMQ does (its rabbit_channel check_msg_size);
    a client with the spec's 311 CONTENT_TOO_LARGE; both at the content header, before
    the body comes."""
    limits = engine.Limits(max_body=1000)
    pair = open_pair(client={"limits": limits}, server={"limits": limits})
    ch = open_channel(pair)
    give(pair.server, pair.server.receive_data(publish(ch, 1001), 0.0))
    [close] = [
        m for m in methods(pair.server.data_to_send()) if isinstance(m, amqp091.spec.ChannelClose)
    ]
    assert (close.reply_code, close.class_id, close.method_id) == (406, 60, 40)
    assert close.reply_text == (
        "PRECONDITION_FAILED - message size 1001 is larger than configured max size 1000"
    )
    deliver = method(
        ch,
        amqp091.spec.BasicDeliver(consumer_tag="c", delivery_tag=1, exchange="", routing_key="q"),
    )
    give(pair.client, pair.client.receive_data(deliver + header(ch, 1001), 0.0))
    [close] = [
        m for m in methods(pair.client.data_to_send()) if isinstance(m, amqp091.spec.ChannelClose)
    ]
    assert close.reply_code == 311


def test_client_refuses_a_tune_under_frame_min_size() -> None:
    client = engine.Connection(engine.Role.CLIENT)
    client.start(0.0)
    give(
        client,
        client.receive_data(method(0, amqp091.spec.ConnectionStart(server_properties={})), 0.0),
    )
    client.data_to_send()
    give(
        client,
        client.receive_data(
            method(0, amqp091.spec.ConnectionTune(channel_max=0, frame_max=512, heartbeat=0)), 0.0
        ),
    )
    assert _close_codes(client.data_to_send())[0] == [530]


def test_client_closes_silently_on_another_version_or_no_mechanism() -> None:
    for start in (
        amqp091.spec.ConnectionStart(version_major=1, version_minor=0, server_properties={}),
        amqp091.spec.ConnectionStart(server_properties={}, mechanisms=b"EXTERNAL"),
    ):
        client = engine.Connection(engine.Role.CLIENT)
        client.start(0.0)
        client.data_to_send()
        give(client, client.receive_data(method(0, start), 0.0))
        assert client.data_to_send() == b"" and client.closed
        [closed] = take(client)
        assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code in (540, 403)


def test_client_cannot_answer_a_plain_challenge() -> None:
    client = engine.Connection(engine.Role.CLIENT)
    client.start(0.0)
    give(
        client,
        client.receive_data(method(0, amqp091.spec.ConnectionStart(server_properties={})), 0.0),
    )
    client.data_to_send()
    give(client, client.receive_data(method(0, amqp091.spec.ConnectionSecure(challenge=b"?")), 0.0))
    assert _close_codes(client.data_to_send())[0] == [503]


def test_server_refuses_a_channel_open_before_the_connection_is_open() -> None:
    server = _server_after_header()
    give(server, server.receive_data(method(1, amqp091.spec.ChannelOpen()), 0.0))
    assert _close_codes(server.data_to_send())[0] == [504]


def test_client_refuses_channel_open_from_a_server() -> None:
    pair = open_pair()
    give(pair.client, pair.client.receive_data(method(5, amqp091.spec.ChannelOpen()), 0.0))
    assert _close_codes(pair.client.data_to_send())[0] == [503]


def test_unknown_confirm_tag_is_406_on_the_channel() -> None:
    pair = open_pair()
    number = open_channel(pair)
    pair.client.send_method(number, amqp091.spec.ConfirmSelect())
    pair.pump()
    pair.server.send_method(number, amqp091.spec.ConfirmSelectOk())
    pair.pump()
    pair.take()
    seq = pair.client.publish(number, "", "q", b"x")
    assert seq == 1
    for bad in (
        amqp091.spec.BasicAck(delivery_tag=2),
        amqp091.spec.BasicAck(delivery_tag=5, multiple=True),
    ):
        pair2 = pair  # the same client, a fresh frame each time
        give(pair2.client, pair2.client.receive_data(method(number, bad), 1.0))
        assert _close_codes(pair2.client.data_to_send())[1] == [(number, 406)]
        give(
            pair2.client,
            pair2.client.receive_data(method(number, amqp091.spec.ChannelCloseOk()), 1.0),
        )
        [closed] = take(pair2.client)
        assert isinstance(closed, ev.ChannelClosed) and closed.reply_code == 406
        pair = open_pair()
        number = open_channel(pair)
        pair.client.send_method(number, amqp091.spec.ConfirmSelect())
        pair.pump()
        pair.client.publish(number, "", "q", b"x")


def test_channel_closing_discards_everything_but_close_and_close_ok() -> None:
    pair: Pair = open_pair()
    number = open_channel(pair)
    pair.client.close_channel(number, 200, "bye")
    pair.client.data_to_send()
    give(
        pair.client,
        pair.client.receive_data(
            method(number, amqp091.spec.BasicQosOk())
            + publish(number, 3)
            + body(number, b"abc")
            + method(number, amqp091.spec.ChannelClose(reply_code=406, class_id=0, method_id=0)),
            0.0,
        ),
    )
    assert take(pair.client) == []
    assert methods(pair.client.data_to_send()) == [amqp091.spec.ChannelCloseOk()]
    give(pair.client, pair.client.receive_data(method(number, amqp091.spec.ChannelCloseOk()), 0.0))
    assert take(pair.client) == [
        ev.ChannelClosed(channel=number, reply_code=200, reply_text="bye", by_peer=False)
    ]


def test_frames_over_frame_min_size_before_tune_are_501() -> None:
    """Spec, connection.tune field frame-max, rule "minimum": until tuned, frames of up to
    frame-min-size (4096) octets; a larger one is a frame error."""
    server = _server_after_header()
    big = amqp091.spec.ConnectionStartOk(client_properties={"pad": "x" * 5000}, response=b"\0u\0p")
    give(server, server.receive_data(method(0, big), 0.0))
    assert _close_codes(server.data_to_send())[0] == [501]
    assert server.closed


@pytest.mark.parametrize("chunk", [None, 1])
def test_frames_over_the_negotiated_frame_max_are_501(chunk: int | None) -> None:
    pair = open_pair(client={"frame_max": 4096})
    number = open_channel(pair)
    data = amqp091.encode_body_frame(number, b"x" * 4089)  # 4097 octets
    for piece in [data] if chunk is None else [data[i : i + 1] for i in range(len(data))]:
        give(pair.server, pair.server.receive_data(piece, 0.0))
    assert _close_codes(pair.server.data_to_send())[0] == [501]
    # one octet less is a frame the server reads (and a body without a header: 505)
    pair = open_pair(client={"frame_max": 4096})
    number = open_channel(pair)
    give(pair.server, pair.server.receive_data(amqp091.encode_body_frame(number, b"x" * 4088), 0.0))
    assert _close_codes(pair.server.data_to_send())[0] == [505]


def _pipelined(number: int, other: int) -> bytes:
    """A client's pipelined write: three methods and a content on ``number``, one method
    on ``other``."""
    return (
        method(number, amqp091.spec.QueueDeclare(queue="a"))
        + method(number, amqp091.spec.QueueDeclare(queue="b"))
        + publish(number, 3)
        + body(number, b"abc")
        + method(other, amqp091.spec.QueueDeclare(queue="c"))
        + method(number, amqp091.spec.BasicQos(prefetch_count=1))
    )


@pytest.mark.parametrize("chunk", [None, 1])
def test_closing_a_channel_drops_what_it_queued_and_was_not_taken(chunk: int | None) -> None:
    """Spec, channel.close: after sending close, everything but close and close-ok is
    discarded. A server that refuses the first of a client's pipelined methods closes the
    channel while the rest are queued: they are dropped, not surfaced (another channel's
    stay), and so is what arrives on the channel until its close-ok."""
    pair = open_pair()
    number, other = open_channel(pair), open_channel(pair)
    server = pair.server
    data = _pipelined(number, other)
    for piece in [data] if chunk is None else [data[i : i + 1] for i in range(len(data))]:
        give(server, server.receive_data(piece, 0.0))
    first = take_one(server)
    assert first == ev.MethodReceived(channel=number, method=amqp091.spec.QueueDeclare(queue="a"))
    server.close_channel(number, 404, "NOT_FOUND - no queue 'a'", 50, 10)
    assert take(server) == [
        ev.MethodReceived(channel=other, method=amqp091.spec.QueueDeclare(queue="c"))
    ]
    assert methods(server.data_to_send()) == [
        amqp091.spec.ChannelClose(
            reply_code=404, reply_text="NOT_FOUND - no queue 'a'", class_id=50, method_id=10
        )
    ]
    # what the client sent before it saw the close: a content cut in the middle too
    give(
        server,
        server.receive_data(
            method(number, amqp091.spec.QueueBind(queue="x", exchange="e"))
            + publish(number, 5)
            + body(number, b"ab"),
            0.0,
        ),
    )
    assert take(server) == [] and server.data_to_send() == b""
    give(
        server,
        server.receive_data(
            body(number, b"cde") + method(number, amqp091.spec.ChannelCloseOk()), 0.0
        ),
    )
    assert take(server) == [
        ev.ChannelClosed(
            channel=number,
            reply_code=404,
            reply_text="NOT_FOUND - no queue 'a'",
            class_id=50,
            method_id=10,
            by_peer=False,
        )
    ]
    assert not server.closed and server.data_to_send() == b""
    # the channel number is free again, and the other channel works on
    give(server, server.receive_data(method(number, amqp091.spec.ChannelOpen()), 0.0))
    give(server, server.receive_data(publish(other, 2) + body(other, b"hi"), 0.0))
    assert take(server) == [
        ev.ChannelOpened(channel=number),
        ev.ContentReceived(channel=other, method=PUBLISH, properties=PROPS, body=b"hi"),
    ]


def test_a_content_whose_method_came_before_the_close_is_discarded_whole() -> None:
    """The content frames of a content whose method was queued (or taken) when the channel
    closed are discarded with it: no 505 for a header or body without its method."""
    for taken in (False, True):
        pair = open_pair()
        number = open_channel(pair)
        server = pair.server
        give(server, server.receive_data(method(number, PUBLISH), 0.0))
        if taken:
            assert take(server) == []  # (content surfaces whole, at its end)
        server.close_channel(number, 406, "PRECONDITION_FAILED - no")
        server.data_to_send()
        give(
            server,
            server.receive_data(header(number, 4) + body(number, b"ab") + body(number, b"cd"), 0.0),
        )
        assert take(server) == [] and server.data_to_send() == b""
        give(server, server.receive_data(method(number, amqp091.spec.ChannelCloseOk()), 0.0))
        [closed] = take(server)
        assert isinstance(closed, ev.ChannelClosed) and closed.reply_code == 406
        assert not server.closed


def test_closing_the_connection_drops_every_queued_method_and_content() -> None:
    """Spec, connection.close: after sending it, everything but close and close-ok is
    discarded; a hard refusal of the first of pipelined methods drops the rest, on every
    channel, so the application is not asked for answers it can no longer send."""
    pair = open_pair()
    number, other = open_channel(pair), open_channel(pair)
    server = pair.server
    give(server, server.receive_data(_pipelined(number, other), 0.0))
    first = take_one(server)
    assert isinstance(first, ev.MethodReceived)
    server.close(503, "COMMAND_INVALID - invalid exchange type", 40, 10)
    assert take(server) == []
    give(server, server.receive_data(method(other, amqp091.spec.QueueDeclare(queue="d")), 0.0))
    assert take(server) == []
    give(server, server.receive_data(method(0, amqp091.spec.ConnectionCloseOk()), 0.0))
    [closed] = take(server)
    assert isinstance(closed, ev.ConnectionClosed) and closed.reply_code == 503
    assert server.closed


def test_closing_keeps_the_events_that_report_a_state() -> None:
    """Client role: a confirm and a flow queued when the application closes the channel
    still surface (the publish was confirmed, the engine answered the flow); a delivery
    queued with them is dropped (the server requeues it when the channel closes)."""
    pair = open_pair()
    number = open_channel(pair)
    client = pair.client
    client.send_method(number, amqp091.spec.ConfirmSelect())
    pair.pump()
    pair.server.send_method(number, amqp091.spec.ConfirmSelectOk())
    pair.pump()
    pair.take()
    assert client.publish(number, "", "q", b"x") == 1
    pair.pump()
    pair.take()
    deliver = amqp091.spec.BasicDeliver(
        consumer_tag="c", delivery_tag=1, exchange="", routing_key="q"
    )
    give(
        client,
        client.receive_data(
            method(number, amqp091.spec.BasicAck(delivery_tag=1))
            + method(number, deliver)
            + header(number, 1)
            + body(number, b"y")
            + method(number, amqp091.spec.ChannelFlow(active=False)),
            1.0,
        ),
    )
    client.close_channel(number)
    assert take(client) == [
        ev.Confirmed(channel=number, delivery_tag=1, multiple=False, ack=True),
        ev.FlowChanged(channel=number, active=False),
    ]
