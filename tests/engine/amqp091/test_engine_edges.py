"""Corners of the AMQP 0-9-1 engine the other test modules do not reach: what arrives while
closing or opening, representations, mechanisms the engine does not read, limits of 0."""

from __future__ import annotations

import pytest
from support.amqp091.engine import make_pair, methods, open_channel, open_pair

from amqp_sansio import amqp091, errors
from amqp_sansio.engine import amqp091 as engine
from amqp_sansio.engine.amqp091 import events as ev
from amqp_sansio.security.mechanisms import AMQPlainClient, PlainClient, SASLConfigurationError


def test_next_event_repr_and_channels() -> None:
    pair = open_pair()
    number = open_channel(pair)
    assert pair.client.handle_timer(0.0) == []  # nothing more happened
    assert list(pair.client.channels) == [number]
    assert repr(pair.client.channel(number)) == "<Channel 1 open>"
    pair.client.publish(number, "", "q", b"abc")
    [content] = pair.server.receive_data(pair.client.data_to_send(), 0.0)
    assert isinstance(content, ev.ContentReceived)
    assert "<3 octets>" in repr(content)


def test_a_second_confirm_select_keeps_counting() -> None:
    pair = open_pair()
    number = open_channel(pair)
    pair.client.send_method(number, amqp091.spec.ConfirmSelect())
    assert pair.client.publish(number, "", "q", b"") == 1
    pair.client.send_method(number, amqp091.spec.ConfirmSelect())
    assert pair.client.publish(number, "", "q", b"") == 2
    pair.pump()
    pair.server.send_method(number, amqp091.spec.ConfirmSelect())  # a server's select: a method
    pair.pump()
    assert pair.take()[0] == [
        ev.MethodReceived(channel=number, method=amqp091.spec.ConfirmSelect())
    ]
    assert not pair.client.channel(number).confirm_mode


def test_garbage_while_closing_sends_no_second_close() -> None:
    pair = open_pair()
    pair.client.close()
    pair.client.data_to_send()
    got = pair.client.receive_data(amqp091.encode_method_frame(0, amqp091.spec.BasicQos()), 0.0)
    assert got == [] and not pair.client.closed
    pair.client.receive_data(b"\x09\x00\x00\x00\x00\x00\x00\xce", 0.0)
    assert pair.client.data_to_send() == b""
    assert pair.client.closed


def test_a_method_on_a_channel_being_opened() -> None:
    pair = open_pair()
    number = pair.client.open_channel()
    pair.client.receive_data(amqp091.encode_method_frame(number, amqp091.spec.BasicQosOk()), 0.0)
    [close] = methods(pair.client.data_to_send())[1:]
    assert isinstance(close, amqp091.spec.ConnectionClose) and close.reply_code == 504


def test_a_channel_refused_while_opening() -> None:
    pair = open_pair()
    number = pair.client.open_channel()
    pair.client.data_to_send()
    refusal = amqp091.spec.ChannelClose(reply_code=530, reply_text="no", class_id=20, method_id=10)
    got = pair.client.receive_data(amqp091.encode_method_frame(number, refusal), 0.0)
    assert got == [
        ev.ChannelClosed(
            channel=number, reply_code=530, reply_text="no", class_id=20, method_id=10, by_peer=True
        )
    ]
    assert methods(pair.client.data_to_send()) == [amqp091.spec.ChannelCloseOk()]


def test_no_handshake_timeout() -> None:
    pair = open_pair(
        client={"limits": engine.Limits(handshake_timeout=0), "heartbeat": 0},
        server={"heartbeat": 0},
    )
    pair.client.close()
    assert pair.client.next_deadline() is None


def test_properties_merge() -> None:
    props = engine.negotiation.client_properties({"product": "mine", "capabilities": {"x": True}})
    assert props["product"] == "mine"
    capabilities = props["capabilities"]
    assert isinstance(capabilities, dict) and capabilities["x"] is True
    assert capabilities["publisher_confirms"] is True


def test_amqplain_client_checks_its_credentials() -> None:
    with pytest.raises(SASLConfigurationError):
        AMQPlainClient("", "p")
    client = AMQPlainClient("u", "secret")
    assert "secret" not in repr(client) and "u" in repr(client)


def test_a_mechanism_the_engine_does_not_read() -> None:
    class Token(PlainClient):
        name = "X-TOKEN"

    pair = make_pair(client={"mechanism": Token("u", "p")}, server={"mechanisms": ("X-TOKEN",)})
    pair.pump(accept=False)
    _, [login] = pair.take()
    assert isinstance(login, ev.LoginRequested)
    assert (login.mechanism, login.username, login.password) == ("X-TOKEN", None, None)
    assert login.response == b"\x00u\x00p"


def test_server_side_mistakes() -> None:
    pair = open_pair()
    with pytest.raises(errors.LocalProtocolError):
        pair.server.send_method(0, amqp091.spec.ConnectionUpdateSecret(new_secret=b"", reason=""))
    with pytest.raises(errors.LocalProtocolError):
        pair.client.send_method(0, amqp091.spec.ConnectionUpdateSecretOk())
