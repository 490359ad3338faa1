"""The AMQP 0-9-1 engine cross-checked with pamqp (the codec under aiormq and aio-pika):
every frame our two engines write in a whole conversation decodes with
``pamqp.frame.unmarshal`` to the same method, header or body; and conversations marshalled
by pamqp drive our server and our client engines to the events they mean."""

from __future__ import annotations

from typing import Any

import attrs
import pamqp.body
import pamqp.commands as pc
import pamqp.frame
import pamqp.header
import pamqp.heartbeat
from support.amqp091 import from_pamqp, to_pamqp
from support.amqp091.engine import frames, give, open_channel, open_pair, take

from amqp_sansio import amqp091
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev


def unmarshal_all(data: bytes) -> list[Any]:
    """Every frame of ``data`` as pamqp reads it."""
    out = []
    while data:
        consumed, channel, value = pamqp.frame.unmarshal(data)
        out.append((channel, value))
        data = data[consumed:]
    return out


def test_pamqp_reads_every_frame_we_write() -> None:
    pair = open_pair(client={"heartbeat": 10}, server={"heartbeat": 10})
    number = open_channel(pair)
    pair.client.send_method(number, amqp091.spec.ConfirmSelect())
    pair.client.publish(
        number, "x", "k", b"y" * 300_000, amqp091.BasicProperties(message_id="m", priority=3)
    )
    pair.server.send_method(number, amqp091.spec.BasicAck(delivery_tag=1))
    pair.server.send_content(
        number,
        amqp091.spec.BasicDeliver(consumer_tag="c", delivery_tag=1, exchange="x", routing_key="k"),
        None,
        b"",
    )
    give(pair.client, pair.client.handle_timer(5.0))
    pair.server.block("disk")
    pair.pump()
    pair.client.close_channel(number)
    pair.pump()
    pair.client.close()
    pair.pump()
    for wire, server in ((pair.wire_to_server, True), (pair.wire_to_client, False)):
        data = b"".join(wire)
        ours = frames(data, server=server)
        theirs = unmarshal_all(data)
        assert len(ours) == len(theirs) > 5
        for mine, (channel, value) in zip(ours, theirs, strict=True):
            if isinstance(mine, amqp091.framing.ProtocolHeader):
                assert isinstance(value, pamqp.header.ProtocolHeader)
                continue
            assert channel == mine.channel
            if isinstance(mine, amqp091.MethodFrame):
                assert value.name == to_pamqp(mine.method).name
                assert from_pamqp(value, type(mine.method)) == attrs.asdict(mine.method)
            elif isinstance(mine, amqp091.ContentHeaderFrame):
                assert value.body_size == mine.body_size
                assert value.properties.message_id == mine.properties.message_id  # type: ignore[attr-defined]
            elif isinstance(mine, amqp091.ContentBodyFrame):
                assert value.value == mine.payload
            else:
                assert isinstance(value, pamqp.heartbeat.Heartbeat)


def _m(value: Any, channel: int = 0) -> bytes:
    return pamqp.frame.marshal(value, channel)


def test_a_pamqp_client_drives_our_server() -> None:
    server = engine.Connection(engine.Role.SERVER)
    server.start(0.0)
    body = b"z" * 10_000
    script = [
        pamqp.frame.marshal(pamqp.header.ProtocolHeader(), 0),
        _m(pc.Connection.StartOk(client_properties={"product": "pamqp"}, response="\0u\0p")),
    ]
    give(server, server.receive_data(b"".join(script), 0.0))
    assert [type(e) for e in take(server)] == [ev.LoginRequested]
    server.accept_login("u")
    give(
        server,
        server.receive_data(
            _m(pc.Connection.TuneOk(channel_max=10, frame_max=4096, heartbeat=0))
            + _m(pc.Connection.Open(virtual_host="/v")),
            0.0,
        ),
    )
    assert take(server) == [ev.OpenRequested(virtual_host="/v")]
    server.accept_open()
    props = pc.Basic.Properties(content_type="text/plain", headers={"a": 1})
    chunks = [body[i : i + 4088] for i in range(0, len(body), 4088)]
    give(
        server,
        server.receive_data(
            _m(pc.Channel.Open(), 1)
            + _m(pc.Confirm.Select(), 1)
            + _m(pc.Basic.Publish(exchange="", routing_key="q"), 1)
            + _m(pamqp.header.ContentHeader(0, len(body), props), 1)
            + b"".join(_m(pamqp.body.ContentBody(c), 1) for c in chunks)
            + _m(pamqp.heartbeat.Heartbeat(), 0)
            + _m(pc.Channel.Close(reply_code=200, reply_text="bye", class_id=0, method_id=0), 1)
            + _m(pc.Connection.Close(reply_code=200, reply_text="done", class_id=0, method_id=0)),
            1.0,
        ),
    )
    got = take(server)
    assert [type(e) for e in got] == [
        ev.ConnectionOpened,
        ev.ChannelOpened,
        ev.MethodReceived,
        ev.ContentReceived,
        ev.ChannelClosed,
        ev.ConnectionClosed,
    ]
    content = got[3]
    assert isinstance(content, ev.ContentReceived) and content.body == body
    assert content.properties == amqp091.BasicProperties(
        content_type="text/plain", headers={"a": 1}
    )
    assert got[-1] == ev.ConnectionClosed(reply_code=200, reply_text="done", by_peer=True)
    assert server.channel_max == 10 and server.frame_max == 4096
    answers = unmarshal_all(server.data_to_send())
    assert [v.name for _, v in answers] == [
        "Connection.Start",
        "Connection.Tune",
        "Connection.OpenOk",
        "Channel.OpenOk",
        "Channel.CloseOk",
        "Connection.CloseOk",
    ]


def test_a_pamqp_server_drives_our_client() -> None:
    client = engine.Connection(engine.Role.CLIENT, mechanism="AMQPLAIN", username="u", password="p")
    client.start(0.0)
    give(
        client,
        client.receive_data(
            _m(pc.Connection.Start(server_properties={"product": "pamqp"}, mechanisms="AMQPLAIN"))
            + _m(pc.Connection.Tune(channel_max=0, frame_max=0, heartbeat=5))
            + _m(pc.Connection.OpenOk()),
            0.0,
        ),
    )
    [opened] = take(client)
    assert isinstance(opened, ev.ConnectionOpened)
    assert (opened.frame_max, opened.channel_max, opened.heartbeat) == (131072, 2047, 5)
    sent = unmarshal_all(client.data_to_send()[8:])
    start_ok = sent[0][1]
    assert start_ok.mechanism == "AMQPLAIN"
    assert [v.name for _, v in sent] == [
        "Connection.StartOk",
        "Connection.TuneOk",
        "Connection.Open",
    ]
    number = client.open_channel()
    give(client, client.receive_data(_m(pc.Channel.OpenOk(), number), 0.0))
    give(
        client,
        client.receive_data(
            _m(
                pc.Basic.Deliver(consumer_tag="c", delivery_tag=9, exchange="", routing_key="q"),
                number,
            )
            + _m(pamqp.header.ContentHeader(0, 3, pc.Basic.Properties(delivery_mode=2)), number)
            + _m(pamqp.body.ContentBody(b"abc"), number)
            + _m(pc.Connection.Blocked(reason="memory"))
            + _m(pc.Channel.Flow(active=False), number),
            0.0,
        ),
    )
    assert take(client) == [
        ev.ChannelOpened(channel=number),
        ev.ContentReceived(
            channel=number,
            method=amqp091.spec.BasicDeliver(
                consumer_tag="c", delivery_tag=9, exchange="", routing_key="q"
            ),
            properties=amqp091.BasicProperties(delivery_mode=2),
            body=b"abc",
        ),
        ev.Blocked(reason="memory"),
        ev.FlowChanged(channel=number, active=False),
    ]
