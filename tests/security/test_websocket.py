"""The AMQP WebSocket binding's layer (OASIS AMQP WebSocket Binding CS01; RFC 6455): a
client and a server layer around our 1.0 engines, pumped in memory in random chunks and
byte by byte; frames across messages and several in one; hostile peers, written with
wsproto as the other end; the stack's step and the client URLs."""

from __future__ import annotations

import random
import ssl
from typing import Any

import attrs
import pytest
import wsproto
import wsproto.events as ws
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.engine_pair import Pair, of

import amqp_sansio as a
from amqp_sansio.client.url import URLError, parse_url
from amqp_sansio.errors import FramingError, LocalProtocolError
from amqp_sansio.security.layers import LayerFailed
from amqp_sansio.security.stack import stack
from amqp_sansio.security.websocket import (
    DRAFT_SUBPROTOCOL,
    SUBPROTOCOL,
    WebSocketClosed,
    WebSocketError,
    WebSocketEstablished,
    WebSocketFailed,
    WebSocketLayer,
    WebSocketOptions,
    WebSocketState,
)

HOST = "broker.example:8080"


def layers(engine: a.Connection, role: str) -> WebSocketLayer:
    options = WebSocketOptions(host=HOST) if role == "client" else WebSocketOptions()
    return WebSocketLayer(engine, client=role == "client", options=options)


def exchange(pair: Pair, body: bytes = b"hello over websocket") -> bytes:
    """Open, begin, attach, transfer one message (settled by the receiver), detach, end and
    close, across the pair; return the body the server received."""
    pair.open()
    cs, _ = pair.session()
    snd, rcv = pair.link(cs)
    rcv.flow(5)
    pair.pump()
    snd.send(body)
    _, s_events = pair.pump()
    (got,) = of(s_events, a.events.DeliveryReceived)
    rcv.settle(got.delivery, a.Accepted())
    c_events, _ = pair.pump()
    assert of(c_events, a.events.DeliveryUpdated)
    pair.client.close()
    c_events, s_events = pair.pump()
    assert of(c_events, a.events.ConnectionClosed) and of(s_events, a.events.ConnectionClosed)
    assert not of(pair.client_events + pair.server_events, LayerFailed)
    return bytes(got.data)


# -- the whole exchange across the layer -------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 7], ids=["random", "byte-by-byte", "seven"])
def test_an_amqp_exchange_across_the_binding(chunk: int | None) -> None:
    pair = Pair(layers=layers, chunk=chunk, seed=3)
    assert exchange(pair) == b"hello over websocket"
    established = of(pair.client_events, WebSocketEstablished)
    assert established == [WebSocketEstablished(subprotocol="amqp", path="/")]
    assert of(pair.server_events, WebSocketEstablished) == established
    # Everything after the upgrade crossed as masked binary frames (client) and unmasked
    # ones (server): the first byte of each write is FIN + opcode 2.
    first_c, *rest_c = [data for way, data in pair.wire if way == "c>s"]
    assert first_c.startswith(b"GET / HTTP/1.1\r\n") and b"\r\nHost: " + HOST.encode() in first_c
    assert b"Sec-WebSocket-Protocol: amqp\r\n" in first_c
    assert all(data[0] == 0x82 and data[1] & 0x80 for data in rest_c)
    first_s, *rest_s = [data for way, data in pair.wire if way == "s>c"]
    assert first_s.startswith(b"HTTP/1.1 101 ") and b"Sec-WebSocket-Protocol: amqp" in first_s
    assert all(data[0] == 0x82 and not data[1] & 0x80 for data in rest_s)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32), size=st.integers(0, 70_000))
def test_any_chunking_delivers_the_message(seed: int, size: int) -> None:
    body = random.Random(seed).randbytes(size)
    assert exchange(Pair(layers=layers, seed=seed), body) == body


def test_the_client_holds_the_engines_bytes_until_the_upgrade_is_accepted() -> None:
    pair = Pair(layers=layers)
    pair.client.open()
    request = pair.client_end.data_to_send()
    assert request.startswith(b"GET ") and b"AMQP" not in request
    assert pair.client_end.data_to_send() == b""  # the header waits in the engine
    pair.server_end.receive_data(request, 0.0)
    pair.client_end.receive_data(pair.server_end.data_to_send(), 0.0)
    assert pair.client_end.state is WebSocketState.OPEN
    header = _server_side().decode(pair.client_end.data_to_send())
    # The engine's header and open frame, now, in one message.
    assert header.startswith(b"AMQP\x00\x01\x00\x00") and len(header) > 8


def test_frames_spanning_messages_and_several_frames_in_one_message() -> None:
    """The server's bytes, re-cut by hand: one message holding the header and several
    frames, and a frame cut across many messages, some of them fragmented."""
    pair = Pair(layers=layers)
    pair.open()
    cs, _ = pair.session()
    snd, rcv = pair.link(cs)
    rcv.flow(5)
    pair.pump()
    snd.send(b"a" * 3000)
    snd.send(b"b" * 10)
    amqp_bytes = pair.client.data_to_send()  # two transfer frames, taken from the engine
    assert amqp_bytes
    # Framed by hand, as the client's side of the open WebSocket connection.
    peer = wsproto.connection.Connection(wsproto.ConnectionType.CLIENT)
    server = pair.server_end
    pieces = [amqp_bytes[:5], amqp_bytes[5:1001], amqp_bytes[1001:]]
    events: list[Any] = []
    events += server.receive_data(peer.send(ws.Message(data=pieces[0])), 0.0)  # a fragment
    events += server.receive_data(
        peer.send(ws.Message(data=pieces[1], message_finished=False)), 0.0
    )
    wire = peer.send(ws.Message(data=pieces[2], message_finished=True))
    for i in range(len(wire)):
        events += server.receive_data(wire[i : i + 1], 0.0)
    bodies = [e.data for e in of(events, a.events.DeliveryReceived)]
    assert bodies == [b"a" * 3000, b"b" * 10]


def test_output_over_the_limit_goes_out_in_messages_within_it() -> None:
    """A run of transfers larger than ``max_message_size`` written at once is split into
    messages no larger (frames spanning them), so a peer with the same limit takes it."""
    small = 4096

    def limited(engine: a.Connection, role: str) -> WebSocketLayer:
        options = WebSocketOptions(host=HOST if role == "client" else None)
        options = attrs.evolve(options, max_message_size=small)
        return WebSocketLayer(engine, client=role == "client", options=options)

    pair = Pair(layers=limited, seed=5)
    body = bytes(range(256)) * 100  # 25,600 bytes: several messages' worth
    assert exchange(pair, body) == body
    sizes = [size for way, data in pair.wire[1:] if way == "c>s" for size in _payloads(data)]
    assert max(sizes) <= small and sum(size == small for size in sizes) >= 6


def _payloads(data: bytes) -> list[int]:
    """The payload lengths of the WebSocket frames ``data`` holds (RFC 6455 5.2)."""
    sizes = []
    pos = 0
    while pos < len(data):
        length, pos = data[pos + 1] & 0x7F, pos + 2
        masked = data[pos - 1] & 0x80
        if length >= 126:
            width = 2 if length == 126 else 8
            length, pos = int.from_bytes(data[pos : pos + width], "big"), pos + width
        pos += (4 if masked else 0) + length
        sizes.append(length)
    return sizes


def _server_side() -> Any:
    class Decoder:
        def __init__(self) -> None:
            self.conn = wsproto.connection.Connection(wsproto.ConnectionType.SERVER)

        def decode(self, data: bytes) -> bytes:
            self.conn.receive_data(data)
            return b"".join(bytes(e.data) for e in self.conn.events())

    return Decoder()


def _upgraded_server(
    peer: wsproto.WSConnection, *, engine: a.Connection | None = None, **options: Any
) -> WebSocketLayer:
    """A server layer (around a fresh server engine, unless one is given) that ``peer``
    (a wsproto client) has upgraded; the answer is given to ``peer``."""
    engine = engine or a.Connection(client=False, container_id="server", sasl=None)
    server = WebSocketLayer(engine, client=False, options=WebSocketOptions(**options))
    events = server.receive_data(
        peer.send(ws.Request(host="h", target="/", subprotocols=["amqp"])), 0.0
    )
    assert of(events, WebSocketEstablished)
    peer.receive_data(server.data_to_send())
    assert isinstance(next(peer.events()), ws.AcceptConnection)
    return server


def _upgraded_client(
    peer: wsproto.WSConnection, **options: Any
) -> tuple[WebSocketLayer, a.Connection]:
    engine = a.Connection(client=True, container_id="client")
    client = WebSocketLayer(engine, client=True, options=WebSocketOptions(host="h", **options))
    peer.receive_data(client.data_to_send())
    (request,) = peer.events()
    events = client.receive_data(peer.send(ws.AcceptConnection(subprotocol="amqp")), 0.0)
    assert of(events, WebSocketEstablished) and isinstance(request, ws.Request)
    return client, engine


def _failure(events: list[Any]) -> WebSocketFailed:
    (failed,) = of(events, WebSocketFailed)
    assert of(events, a.events.ConnectionEnded)  # the engine saw the stream end
    assert events.index(failed) < events.index(of(events, a.events.ConnectionEnded)[0])
    return failed


def _close_sent(peer: wsproto.WSConnection, data: bytes) -> int:
    peer.receive_data(data)
    (close,) = [e for e in peer.events() if isinstance(e, ws.CloseConnection)]
    return int(close.code)


# -- the server's upgrade ----------------------------------------------------------------------


def test_an_upgrade_without_amqp_is_refused_with_400() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    server = WebSocketLayer(a.Connection(client=False), client=False)
    events = server.receive_data(
        peer.send(ws.Request(host="h", target="/", subprotocols=["mqtt"])), 0.0
    )
    failed = _failure(events)
    assert failed.status_code == 400 and "amqp" in failed.error
    peer.receive_data(server.data_to_send())
    refused = next(peer.events())
    assert isinstance(refused, ws.RejectConnection) and refused.status_code == 400
    assert server.state is WebSocketState.FAILED and server.data_to_send() == b""
    assert server.receive_data(b"more", 0.0) == [] and server.next_deadline() is None


def test_only_the_configured_paths_are_served() -> None:
    for target, served in [("/", False), ("/$servicebus/websocket?x=1", True), ("/amqp", True)]:
        peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
        options = WebSocketOptions(accept_paths=("/$servicebus/websocket", "/amqp"))
        server = WebSocketLayer(a.Connection(client=False), client=False, options=options)
        events = server.receive_data(
            peer.send(ws.Request(host="h", target=target, subprotocols=["amqp"])), 0.0
        )
        if served:
            assert of(events, WebSocketEstablished)[0].path == target.split("?")[0]
            assert server.path == target.split("?")[0]
        else:
            assert _failure(events).status_code == 404
            assert server.data_to_send().startswith(b"HTTP/1.1 404 ")


@pytest.mark.parametrize(
    ("offered", "accept", "chosen"),
    [
        (["AMQPWSB10"], None, "AMQPWSB10"),  # Azure's SDKs: the draft's name, by default
        (["amqp"], None, "amqp"),
        (["AMQPWSB10", "amqp"], None, "AMQPWSB10"),  # the client's first offer accepted
        (["mqtt", "amqp", "AMQPWSB10"], None, "amqp"),
        (["AMQPWSB10", "amqp"], ("amqp",), "amqp"),  # the draft's name turned off
        (["AMQPWSB10"], ("amqp",), None),
        (["amqpwsb10"], None, None),  # subprotocols are compared as sent (RFC 6455 4.1)
    ],
)
def test_the_server_chooses_a_subprotocol_it_accepts(
    offered: list[str], accept: tuple[str, ...] | None, chosen: str | None
) -> None:
    """CS01's ``amqp`` and the draft's ``AMQPWSB10`` by default
    (``WebSocketOptions.accept_subprotocols``); the answer names the one chosen."""
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    options = WebSocketOptions() if accept is None else WebSocketOptions(accept_subprotocols=accept)
    server = WebSocketLayer(a.Connection(client=False), client=False, options=options)
    events = server.receive_data(
        peer.send(ws.Request(host="h", target="/", subprotocols=offered)), 0.0
    )
    if chosen is None:
        failed = _failure(events)
        assert failed.status_code == 400 and "none of the subprotocols" in failed.error
        return
    assert of(events, WebSocketEstablished) == [WebSocketEstablished(subprotocol=chosen, path="/")]
    peer.receive_data(server.data_to_send())
    (accepted,) = peer.events()
    assert isinstance(accepted, ws.AcceptConnection) and accepted.subprotocol == chosen


def test_the_default_subprotocols_and_the_client_offer() -> None:
    assert WebSocketOptions().accept_subprotocols == (SUBPROTOCOL, DRAFT_SUBPROTOCOL)
    assert (SUBPROTOCOL, DRAFT_SUBPROTOCOL) == ("amqp", "AMQPWSB10")
    assert WebSocketOptions(accept_subprotocols="amqp").accept_subprotocols == ("amqp",)
    client = WebSocketLayer(
        a.Connection(), client=True, options=WebSocketOptions(host="h", path="/")
    )
    peer = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
    peer.receive_data(client.data_to_send())
    (request,) = peer.events()
    assert isinstance(request, ws.Request) and request.subprotocols == ["amqp"]


def test_a_huge_upgrade_request_is_refused_with_431() -> None:
    server = WebSocketLayer(
        a.Connection(client=False), client=False, options=WebSocketOptions(max_handshake_size=1000)
    )
    head = b"GET / HTTP/1.1\r\nHost: h\r\n" + b"X-Padding: " + b"p" * 2000
    events: list[Any] = []
    for i in range(0, len(head), 100):
        events += server.receive_data(head[i : i + 100], 0.0)
        if events:
            break
    assert _failure(events).status_code == 431
    assert server.data_to_send().startswith(b"HTTP/1.1 431 ")
    assert i < 1100  # refused as the limit passed, not at the end


def test_a_malformed_upgrade_is_refused_with_400() -> None:
    server = WebSocketLayer(a.Connection(client=False), client=False)
    events = server.receive_data(b"POST / HTTP/1.1\r\nHost: h\r\n\r\n", 0.0)
    assert _failure(events).status_code == 400
    assert server.data_to_send().startswith(b"HTTP/1.1 400 ")


def test_an_upgrade_that_takes_too_long_is_refused_with_408() -> None:
    server = WebSocketLayer(
        a.Connection(client=False), client=False, options=WebSocketOptions(handshake_timeout=5)
    )
    assert server.receive_data(b"GET / HT", 100.0) == []
    assert server.next_deadline() == 105.0
    assert server.handle_timer(104.9) == []
    failed = _failure(server.handle_timer(105.0))
    assert failed.status_code == 408 and "5" in failed.error
    assert server.data_to_send().startswith(b"HTTP/1.1 408 ")
    assert server.next_deadline() is None


def test_the_transport_closing_during_the_upgrade_is_a_failure() -> None:
    server = WebSocketLayer(a.Connection(client=False), client=False)
    server.receive_data(b"GET /", 0.0)
    failed = _failure(server.receive_data(b"", 0.0))
    assert failed.close_code is None and failed.status_code is None


# -- the client's upgrade ----------------------------------------------------------------------


def test_a_server_that_does_not_choose_amqp_is_a_failure() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
    client = WebSocketLayer(a.Connection(), client=True, options=WebSocketOptions(host="h"))
    peer.receive_data(client.data_to_send())
    list(peer.events())
    events = client.receive_data(peer.send(ws.AcceptConnection()), 0.0)
    failed = _failure(events)
    assert failed.close_code == 1002 and "amqp" in failed.error
    assert _close_sent(peer, client.data_to_send()) == 1002


def test_a_refused_upgrade_is_a_failure_with_its_status() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
    client = WebSocketLayer(a.Connection(), client=True, options=WebSocketOptions(host="h"))
    peer.receive_data(client.data_to_send())
    list(peer.events())
    events = client.receive_data(peer.send(ws.RejectConnection(status_code=403)), 0.0)
    assert _failure(events).status_code == 403
    assert client.data_to_send() == b""


def test_a_client_needs_a_host_and_options_are_checked() -> None:
    with pytest.raises(LocalProtocolError, match="host"):
        WebSocketLayer(a.Connection(), client=True)
    for bad in (
        {"max_handshake_size": 0},
        {"max_handshake_size": 1 << 20},
        {"handshake_timeout": 0},
        {"max_message_size": -1},
        {"accept_paths": ()},
        {"accept_paths": ("amqp",)},
        {"accept_subprotocols": ()},
        {"accept_subprotocols": ("",)},
    ):
        with pytest.raises((LocalProtocolError, ValueError)):
            WebSocketOptions(**bad)
    with pytest.raises(ValueError):
        WebSocketOptions(path="no-slash")


# -- hostile messages --------------------------------------------------------------------------


def test_a_text_message_closes_with_1003() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    server = _upgraded_server(peer)
    failed = _failure(server.receive_data(peer.send(ws.TextMessage(data="AMQP")), 0.0))
    assert failed.close_code == 1003
    assert _close_sent(peer, server.data_to_send()) == 1003
    error = failed.exception()
    assert isinstance(error, WebSocketError) and isinstance(error, FramingError)
    assert error.condition == "amqp:connection:framing-error" and error.close_code == 1003


def test_a_message_over_the_limit_closes_with_1009() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    server = _upgraded_server(peer, max_message_size=100)
    events = server.receive_data(
        peer.send(ws.Message(data=b"AMQP\x00\x01\x00\x00" + b"x" * 200)), 0.0
    )
    assert _failure(events).close_code == 1009
    assert _close_sent(peer, server.data_to_send()) == 1009


def test_a_fragmented_message_that_never_ends_closes_past_the_limit() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    engine = a.Connection(client=False, container_id="server", sasl=None)
    server = _upgraded_server(peer, engine=engine, max_message_size=1000)
    header = peer.send(ws.Message(data=b"AMQP\x00\x01\x00\x00", message_finished=False))
    events = server.receive_data(header, 0.0)
    sent = 8
    empty_frames = b"\x00\x00\x00\x08\x02\x00\x00\x00" * 10  # heartbeats: valid AMQP
    while not of(events, WebSocketFailed):
        assert not events
        part = peer.send(ws.Message(data=empty_frames, message_finished=False))
        events = server.receive_data(part, 0.0)
        sent += len(empty_frames)
    assert 1000 < sent <= 1080
    assert _failure(events).close_code == 1009


def test_the_limit_counts_per_message() -> None:
    """Finished messages reset the count: a long stream of small messages is fine."""
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    server = _upgraded_server(peer, max_message_size=10)
    events = server.receive_data(peer.send(ws.Message(data=b"AMQP\x00\x01\x00\x00")), 0.0)
    events += server.receive_data(peer.send(ws.Message(data=b"\x00\x00\x00\x08")), 0.0)
    assert not of(events, WebSocketFailed)


def test_a_ping_flood_gets_one_pong_and_no_growing_output() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    server = _upgraded_server(peer)
    flood = b"".join(peer.send(ws.Ping(payload=i.to_bytes(4, "big"))) for i in range(20_000))
    assert server.receive_data(flood, 0.0) == []
    out = server.data_to_send()
    assert len(out) < 64
    peer.receive_data(out)
    (pong,) = peer.events()
    assert isinstance(pong, ws.Pong) and pong.payload == (19_999).to_bytes(4, "big")
    assert server.data_to_send() == b""
    assert server.receive_data(peer.send(ws.Pong(payload=b"unasked")), 0.0) == []


def test_a_bad_close_frame_closes_with_1002() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    server = _upgraded_server(peer)
    bad_close = bytes([0x88, 0x81, 0, 0, 0, 0, 0x03])  # a masked close with a 1-byte body
    failed = _failure(server.receive_data(bad_close, 0.0))
    assert failed.close_code == 1002
    assert _close_sent(peer, server.data_to_send()) == 1002


def test_an_unmasked_client_frame_is_a_protocol_error() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    server = _upgraded_server(peer)
    assert _failure(server.receive_data(b"\x82\x02hi", 0.0)).close_code == 1002


# -- ends --------------------------------------------------------------------------------------


def test_a_close_from_the_peer_ends_the_transport_cleanly() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
    client, _ = _upgraded_client(peer)
    events = client.receive_data(peer.send(ws.CloseConnection(code=1001, reason="going")), 0.0)
    (closed,) = of(events, WebSocketClosed)
    assert closed == WebSocketClosed(code=1001, reason="going", clean=True)
    assert of(events, a.events.ConnectionEnded)
    assert _close_sent(peer, client.data_to_send()) == 1001  # the answer echoes the code
    assert client.state is WebSocketState.CLOSED and client.receive_data(b"x", 0.0) == []


def test_the_engines_end_sends_a_close_and_the_answer_completes_it() -> None:
    pair = Pair(layers=layers)
    exchange(pair)
    pair.client_end.close()
    assert pair.client_end.state is WebSocketState.CLOSING
    pair.pump()
    assert of(pair.server_events, WebSocketClosed)[-1].code == 1000
    assert pair.server_end.state is WebSocketState.CLOSED
    assert pair.client_end.state is WebSocketState.CLOSED
    assert of(pair.client_events, WebSocketClosed)[-1].clean
    pair.client_end.close()  # again: nothing
    assert pair.client_end.data_to_send() == b""


def test_the_transport_ending_without_a_close_is_reported_unclean() -> None:
    peer = wsproto.WSConnection(wsproto.ConnectionType.SERVER)
    client, _ = _upgraded_client(peer)
    events = client.receive_data(b"", 0.0)
    assert of(events, WebSocketClosed) == [WebSocketClosed(code=1006, clean=False)]
    assert of(events, a.events.ConnectionEnded)


def test_repr_shows_no_headers() -> None:
    client = WebSocketLayer(
        a.Connection(), client=True, options=WebSocketOptions(host="secret.example")
    )
    assert repr(client) == "<WebSocketLayer client handshake>"


# -- the stack and the URLs --------------------------------------------------------------------


def test_the_stack_puts_websocket_under_tls_and_over_the_trace() -> None:
    engine = a.Connection()
    traced: list[object] = []

    def trace(inner: Any) -> Any:
        traced.append(inner)
        return inner

    options = WebSocketOptions(host="h")
    plain = stack(engine, role="client", websocket=options, trace=trace)
    assert isinstance(plain, WebSocketLayer) and plain.inner is engine and plain.client
    wss = stack(
        engine,
        role="client",
        websocket=options,
        tls=a.security.tls.client_context(),
        server_hostname="example.com",
    )
    assert isinstance(wss, a.TLSLayer) and isinstance(wss.inner, WebSocketLayer)
    server = stack(engine, role="server", websocket=WebSocketOptions())
    assert isinstance(server, WebSocketLayer) and not server.client


def test_failures_share_one_event_base() -> None:
    assert issubclass(WebSocketFailed, LayerFailed) and WebSocketFailed.layer == "WebSocket"
    assert issubclass(a.security.tls.TLSFailed, LayerFailed)


@pytest.mark.parametrize(
    ("url", "port", "host", "path", "tls"),
    [
        ("ws://h", 80, "h", "/", False),
        ("ws://h:5673/amqp", 5673, "h:5673", "/amqp", False),
        (
            "wss://ns.servicebus.windows.net/$servicebus/websocket",
            443,
            "ns.servicebus.windows.net",
            "/$servicebus/websocket",
            True,
        ),
        ("wss://[::1]:8443/", 8443, "[::1]:8443", "/", True),
    ],
)
def test_websocket_urls(url: str, port: int, host: str, path: str, tls: bool) -> None:
    parsed = parse_url(url)
    assert (parsed.port, parsed.tls, parsed.address) == (port, tls, None)
    assert parsed.websocket_options() == WebSocketOptions(host=host, path=path)
    assert parse_url(str(parsed)) == parsed  # (the port written out)
    assert parse_url("amqp://h/q").websocket_options() is None


def test_websocket_urls_keep_credentials_out_of_sight() -> None:
    parsed = parse_url("wss://user:pw@h/p")
    assert "pw" not in repr(parsed) and "pw" not in str(parsed)
    with pytest.raises(URLError):
        parse_url("ws://h/p?q=1")


def test_client_engine_stacks_the_urls_layers() -> None:
    from amqp_sansio.client.engines import client_engine

    _, _, stream = client_engine("ws://127.0.0.1:5673/ws")
    assert isinstance(stream, WebSocketLayer) and stream.options.path == "/ws"
    _, _, secure = client_engine("wss://localhost/", ssl_context=ssl.create_default_context())
    assert isinstance(secure, a.TLSLayer) and isinstance(secure.inner, WebSocketLayer)


def test_an_upgrade_whose_headers_do_not_decode_is_refused_with_400() -> None:
    """(Found by fuzzing: wsproto raises UnicodeDecodeError on a non-ASCII subprotocol.)"""
    server = WebSocketLayer(a.Connection(client=False), client=False)
    request = (
        b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: ZnV6ei1rZXktMTIzNDU2Nw==\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Protocol: amqp\xc0\r\n\r\n"
    )
    assert _failure(server.receive_data(request, 0.0)).status_code == 400
    assert server.data_to_send().startswith(b"HTTP/1.1 400 ")


def test_the_other_protocols_refuse_websocket_urls() -> None:
    """The binding is AMQP 1.0's: 0-9-1's URLs have no ws scheme, 0-10's client says so."""
    from amqp_sansio.client.amqp010.core import client_engine as client_engine010
    from amqp_sansio.client.amqp091 import parse_url as parse_url091

    with pytest.raises(URLError, match=r"amqp:// or amqps://"):
        parse_url091("ws://h/")
    with pytest.raises(URLError, match="no WebSocket binding"):
        client_engine010("ws://h/")
