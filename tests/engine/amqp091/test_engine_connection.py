"""The AMQP 0-9-1 engine, client against server through real bytes, whole and byte by byte:
negotiation (PLAIN, AMQPLAIN, EXTERNAL, secure/secure-ok), tune, open, channels, content,
the close handshakes in both directions."""

from __future__ import annotations

import pytest
from support.amqp091.engine import make_pair, methods, open_channel, open_pair

from amqp_sansio import amqp091
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev

CHUNKS = [None, 1, 7]


@pytest.mark.parametrize("chunk", CHUNKS)
def test_negotiation_opens_both_ends(chunk: int | None) -> None:
    pair = make_pair(chunk=chunk, client={"username": "ann", "password": "secret"})
    pair.pump()
    client_events, server_events = pair.take()
    login, open_request, opened = server_events
    assert isinstance(login, ev.LoginRequested)
    assert (login.mechanism, login.username, login.password) == ("PLAIN", "ann", "secret")
    assert login.response == b"\x00ann\x00secret"
    assert "secret" not in repr(login)
    capabilities = login.client_properties["capabilities"]
    assert isinstance(capabilities, dict) and capabilities["connection.blocked"] is True
    assert open_request == ev.OpenRequested(virtual_host="/")
    assert isinstance(opened, ev.ConnectionOpened) and opened.identity == "ann"
    [client_opened] = client_events
    assert isinstance(client_opened, ev.ConnectionOpened)
    assert (client_opened.frame_max, client_opened.channel_max, client_opened.heartbeat) == (
        131072,
        2047,
        60,
    )
    assert client_opened.identity == "ann"
    assert client_opened.peer_properties["product"] == "amqp-sansio"
    assert pair.client.state is engine.ConnectionState.OPEN
    assert pair.server.state is engine.ConnectionState.OPEN
    assert pair.wire_to_server[0].startswith(amqp091.PROTOCOL_HEADER)


@pytest.mark.parametrize("chunk", CHUNKS)
def test_channel_open_publish_deliver_close(chunk: int | None) -> None:
    pair = open_pair(chunk=chunk)
    number = open_channel(pair)
    assert number == 1
    body = bytes(range(256)) * 1200  # over frame-max: several body frames
    props = amqp091.BasicProperties(content_type="application/octet-stream", delivery_mode=2)
    assert pair.client.publish(number, "amq.direct", "key", body, props, mandatory=True) is None
    pair.pump()
    _, [content] = pair.take()
    assert isinstance(content, ev.ContentReceived)
    assert content.body == body and content.properties == props
    assert content.method == amqp091.spec.BasicPublish(
        exchange="amq.direct", routing_key="key", mandatory=True
    )
    deliver = amqp091.spec.BasicDeliver(
        consumer_tag="c", delivery_tag=1, exchange="amq.direct", routing_key="key"
    )
    pair.server.send_content(number, deliver, props, b"")
    pair.pump()
    [delivered], _ = pair.take()
    assert delivered == ev.ContentReceived(
        channel=number, method=deliver, properties=props, body=b""
    )
    pair.client.close_channel(number, 200, "bye")
    pair.pump()
    assert pair.take() == (
        [ev.ChannelClosed(channel=1, reply_code=200, reply_text="bye", by_peer=False)],
        [ev.ChannelClosed(channel=1, reply_code=200, reply_text="bye", by_peer=True)],
    )
    with pytest.raises(KeyError):
        pair.client.channel(number)


@pytest.mark.parametrize("by", ["client", "server"])
def test_connection_close_both_directions(by: str) -> None:
    pair = open_pair()
    closer = pair.client if by == "client" else pair.server
    closer.close(200, "done")
    pair.pump()
    client_events, server_events = pair.take()
    closer_events, other_events = (
        (client_events, server_events) if by == "client" else (server_events, client_events)
    )
    assert closer_events == [ev.ConnectionClosed(reply_code=200, reply_text="done", by_peer=False)]
    assert other_events == [ev.ConnectionClosed(reply_code=200, reply_text="done", by_peer=True)]
    assert pair.client.closed and pair.server.closed


def test_after_close_everything_but_close_ok_is_discarded() -> None:
    pair = open_pair()
    number = open_channel(pair)
    pair.client.close()
    sent = pair.client.data_to_send()
    assert methods(sent) == [amqp091.spec.ConnectionClose(reply_code=200, class_id=0, method_id=0)]
    pair.server.send_method(number, amqp091.spec.BasicQosOk())
    pair.server.publish(number, "", "q", b"late")
    got = pair.client.receive_data(pair.server.data_to_send(), 0.0)
    assert got == []
    pair.server.receive_data(sent, 0.0)
    got = pair.client.receive_data(pair.server.data_to_send(), 0.0)
    assert got == [ev.ConnectionClosed(reply_code=200, reply_text="", by_peer=False)]


@pytest.mark.parametrize("mechanism", ["PLAIN", "AMQPLAIN"])
def test_login_refused(mechanism: str) -> None:
    pair = make_pair(client={"mechanism": mechanism, "username": "u", "password": "p"})
    pair.pump(accept=False)
    _, [login] = pair.take()
    assert isinstance(login, ev.LoginRequested)
    assert (login.mechanism, login.username, login.password) == (mechanism, "u", "p")
    pair.server.refuse_login("no")
    pair.pump()
    assert pair.take() == (
        [
            ev.ConnectionClosed(
                reply_code=403, reply_text="no", class_id=10, method_id=11, by_peer=True
            )
        ],
        [
            ev.ConnectionClosed(
                reply_code=403, reply_text="no", class_id=10, method_id=11, by_peer=False
            )
        ],
    )
