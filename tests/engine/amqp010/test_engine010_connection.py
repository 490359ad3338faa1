"""The AMQP 0-10 engine's connection, both roles, through real bytes between our client
and our server (0-10 spec, class ``connection``): the protocol header, the login through
the mechanism registry (PLAIN, ANONYMOUS, SCRAM's challenges), tune, open, redirect,
heartbeats on an injected clock, the close handshake, time-outs, and every refusal."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.amqp010.engine import (
    PROTOCOL_HEADER,
    Pair,
    authenticator,
    chunks,
    close_sent,
    command,
    control,
    make_pair,
)

from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine
from amqp_sansio.errors import LocalProtocolError
from amqp_sansio.framing.amqp010 import SegmentType, encode_assembly
from amqp_sansio.security.mechanisms import (
    AnonymousClient,
    ScramClient,
    ServerAuthenticator,
    derive_scram_credentials,
)

E = engine


def kinds(events: list[E.Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def only(events: list[E.Event], kind: type) -> E.Event:
    [found] = [e for e in events if isinstance(e, kind)]
    return found


@pytest.mark.parametrize("chunk", [None, 1, 7, random.Random(3)], ids=["whole", "1", "7", "random"])
def test_the_handshake_opens_both_ends(chunk: int | random.Random | None) -> None:
    pair = make_pair(chunk=chunk)
    client, server = pair.take()
    opened = only(client, E.ConnectionOpened)
    assert isinstance(opened, E.ConnectionOpened)
    assert opened.identity == "guest" and opened.max_frame_size == 65535
    assert opened.channel_max == 2047 and opened.heartbeat == 0
    assert opened.peer_properties["product"] == "amqp-sansio"
    assert kinds(server) == ["OpenRequested", "ConnectionOpened"]
    requested = server[0]
    assert isinstance(requested, E.OpenRequested) and requested.identity == "guest"
    assert pair.client.state is pair.server.state is E.ConnectionState.OPEN
    assert pair.to_server[0].startswith(PROTOCOL_HEADER)
    assert pair.to_client[0].startswith(PROTOCOL_HEADER)
    assert repr(pair.client) == "<amqp010.Connection client open>"


def test_anonymous_and_the_default_server() -> None:
    pair = Pair(E.Connection(E.Role.CLIENT, mechanism="ANONYMOUS"), E.Connection(E.Role.SERVER))
    pair.client.start(0)
    pair.pump()
    assert only(pair.client_events, E.ConnectionOpened).identity is None  # type: ignore[attr-defined]
    assert only(pair.server_events, E.ConnectionOpened).identity == "anonymous"  # type: ignore[attr-defined]


def test_the_client_takes_the_first_mechanism_offered() -> None:
    """The default client prefers PLAIN, then ANONYMOUS: against a server offering
    ANONYMOUS only, it logs in anonymously."""
    pair = Pair(E.Connection(E.Role.CLIENT), E.Connection(E.Role.SERVER))
    pair.client.start(0)
    pair.pump()
    assert pair.client.mechanism is not None and pair.client.mechanism.name == "ANONYMOUS"
    assert pair.client.state is E.ConnectionState.OPEN


def test_no_common_mechanism_ends_the_client() -> None:
    pair = Pair(E.Connection(E.Role.CLIENT, mechanism="EXTERNAL"), E.Connection(E.Role.SERVER))
    pair.client.start(0)
    pair.pump()
    closed = only(pair.client_events, E.ConnectionClosed)
    assert closed.reply_code == 320 and "not EXTERNAL" in closed.reply_text  # type: ignore[attr-defined]
    assert pair.client.closed


def test_a_wrong_password_is_refused_with_a_close() -> None:
    pair = make_pair(client={"username": "guest", "password": "nope"})
    closed = only(pair.client_events, E.ConnectionClosed)
    assert isinstance(closed, E.ConnectionClosed)
    assert closed.by_peer and closed.reply_code == 320
    assert "authentication failed" in closed.reply_text
    assert only(pair.server_events, E.ConnectionClosed).by_peer is False  # type: ignore[attr-defined]


class Scram:
    def __init__(self) -> None:
        self.creds = derive_scram_credentials("secret", iterations=4096)

    def scram_credentials(self, username: str, mechanism: str) -> object:
        return self.creds if username == "alice" else None


@pytest.mark.parametrize("chunk", [None, 3])
def test_scram_runs_through_secure_and_secure_ok(chunk: int | None) -> None:
    """SCRAM's challenges go in ``connection.secure``; its server signature, which 0-10
    has no outcome to carry, in a last ``secure`` answered with an empty ``secure-ok``."""
    pair = make_pair(
        chunk=chunk,
        client={"mechanism": ScramClient("alice", "secret")},
        server={"authenticator": ServerAuthenticator(Scram())},
    )
    assert only(pair.server_events, E.ConnectionOpened).identity == "alice"  # type: ignore[attr-defined]
    assert only(pair.client_events, E.ConnectionOpened).identity is None  # type: ignore[attr-defined]


def test_a_broken_challenge_closes_the_client() -> None:
    client = E.Connection(E.Role.CLIENT, mechanism=ScramClient("alice", "secret"))
    client.start(0)
    client.data_to_send()
    start = spec.ConnectionStart(mechanisms=["SCRAM-SHA-256"], locales=["en_US"])
    client.receive_data(PROTOCOL_HEADER + control(0, start), 0)
    client.data_to_send()
    events = client.receive_data(control(0, spec.ConnectionSecure(challenge=b"junk")), 0)
    assert events == []
    assert client.state is E.ConnectionState.CLOSING
    assert close_sent(client).reply_code == 320


def test_an_unoffered_mechanism_ends_the_server_without_a_close() -> None:
    server = E.Connection(E.Role.SERVER)
    server.start(0)
    server.receive_data(PROTOCOL_HEADER, 0)
    server.data_to_send()
    start_ok = spec.ConnectionStartOk(mechanism="PLAIN", response=b"\0a\0b", locale="en_US")
    [closed] = server.receive_data(control(0, start_ok), 0)
    assert isinstance(closed, E.ConnectionClosed) and "not offered" in closed.reply_text
    assert server.data_to_send() == b"" and server.closed


@pytest.mark.parametrize(
    ("wanted", "heartbeats", "agreed"),
    [(10, (1, 120), 10), (500, (1, 120), 120), (1, (5, 60), 5), (10, None, 0), (0, (1, 9), 0)],
)
def test_the_heartbeat_is_brought_into_the_servers_range(
    wanted: int, heartbeats: tuple[int, int] | None, agreed: int
) -> None:
    pair = make_pair(client={"heartbeat": wanted}, server={"heartbeat_range": heartbeats})
    assert pair.client.heartbeat == pair.server.heartbeat == agreed


def test_heartbeats_keep_the_connection_and_silence_ends_it() -> None:
    pair = make_pair(client={"heartbeat": 10})
    assert pair.client.next_deadline() == 5.0
    for _ in range(8):
        pair.advance(5.0)
    assert pair.client.state is pair.server.state is E.ConnectionState.OPEN
    beat = control(0, spec.ConnectionHeartbeat())
    assert any(beat in data for data in pair.to_server)
    pair.take()
    # the server stops answering: two heartbeats of silence end the client
    pair.client.handle_timer(pair.now + 19)
    events = pair.client.handle_timer(pair.now + 20.5)
    closed = only(events, E.ConnectionClosed)
    assert closed.reply_code == 320 and "missed heartbeats" in closed.reply_text  # type: ignore[attr-defined]
    assert pair.client.next_deadline() is None


def test_the_handshake_has_a_time_limit() -> None:
    server = E.Connection(E.Role.SERVER)
    server.start(100.0)
    assert server.next_deadline() == 110.0
    assert server.handle_timer(105.0) == []
    [closed] = server.handle_timer(110.0)
    assert isinstance(closed, E.ConnectionClosed) and "did not finish" in closed.reply_text
    no_limit = E.Connection(E.Role.SERVER, limits=E.Limits(handshake_timeout=0))
    no_limit.start(0)
    assert no_limit.next_deadline() is None and no_limit.handle_timer(1e9) == []


def test_the_close_handshake() -> None:
    pair = make_pair()
    pair.take()
    pair.client.close(200, "bye")
    assert pair.client.next_deadline() == 10.0
    pair.pump()
    client, server = pair.take()
    assert client == [E.ConnectionClosed(reply_code=200, reply_text="bye", by_peer=False)]
    assert server == [E.ConnectionClosed(reply_code=200, reply_text="bye", by_peer=True)]
    assert pair.client.closed and pair.server.closed
    assert pair.client.receive_data(b"more", 1.0) == [] and pair.client.handle_timer(1.0) == []
    pair.client.close()  # nothing more to do


def test_both_close_at_once() -> None:
    pair = make_pair()
    pair.take()
    pair.client.close()
    pair.server.close(320, "going down")
    pair.pump()
    client, server = pair.take()
    assert only(client, E.ConnectionClosed).by_peer is False  # type: ignore[attr-defined]
    assert only(server, E.ConnectionClosed).reply_text == "going down"  # type: ignore[attr-defined]


def test_an_unanswered_close_times_out() -> None:
    pair = make_pair()
    pair.client.close()
    assert pair.client.handle_timer(5.0) == []
    [closed] = pair.client.handle_timer(10.0)
    assert isinstance(closed, E.ConnectionClosed) and not closed.by_peer


def test_close_before_start_ends_at_once() -> None:
    client = E.Connection(E.Role.CLIENT)
    client.close()
    assert client.closed and client.data_to_send() == b""
    assert kinds(client.receive_data(b"", 0)) == ["ConnectionClosed"]
    assert client.next_deadline() is None


def test_the_stream_ending() -> None:
    pair = make_pair()
    pair.take()
    events = pair.client.receive_data(b"", 1.0)
    assert events == [
        E.ConnectionClosed(
            reply_code=320,
            reply_text="the peer ended the stream without connection.close (open)",
            by_peer=True,
        )
    ]
    closing = make_pair()
    closing.take()
    closing.client.close(200, "done")
    [closed] = closing.client.receive_data(b"", 1.0)
    assert closed == E.ConnectionClosed(reply_code=200, reply_text="done", by_peer=False)


def test_start_twice_is_misuse_and_receive_starts_the_clock() -> None:
    client = E.Connection(E.Role.CLIENT)
    client.start(0)
    with pytest.raises(LocalProtocolError):
        client.start(0)
    server = E.Connection(E.Role.SERVER)
    assert server.next_deadline() is None
    server.receive_data(PROTOCOL_HEADER[:3], 5.0)
    assert server.next_deadline() == 15.0
    server.receive_data(PROTOCOL_HEADER[3:], 5.0)
    assert server.state is E.ConnectionState.AWAIT_START_OK


def test_a_wrong_protocol_header() -> None:
    server = E.Connection(E.Role.SERVER)
    [closed] = server.receive_data(b"AMQP\x00\x00\x09\x01", 0)
    assert isinstance(closed, E.ConnectionClosed) and closed.reply_code == 501
    assert "0-9-1" in closed.reply_text and not closed.by_peer
    assert server.data_to_send() == PROTOCOL_HEADER
    client = E.Connection(E.Role.CLIENT)
    client.start(0)
    [closed] = client.receive_data(b"AMQP\x00\x01\x00\x00rest", 0)
    assert isinstance(closed, E.ConnectionClosed) and closed.by_peer and closed.reply_code == 501


def test_redirect() -> None:
    pair = make_pair(open_=False)
    pair.accept = False
    pair.pump()
    assert isinstance(pair.server_events[-1], E.OpenRequested)
    pair.server.redirect("other:5672", ["a:1", "b:2"])
    assert pair.server.closed
    pair.pump()
    client, _ = pair.take()
    assert client == [
        E.Redirected(host="other:5672", known_hosts=("a:1", "b:2")),
        E.ConnectionClosed(reply_code=200, reply_text="redirected to other:5672", by_peer=True),
    ]


def test_an_insisting_client_is_not_redirected() -> None:
    server = E.Connection(E.Role.SERVER)
    server.start(0)
    _open_server(server, spec.ConnectionOpen(virtual_host="v", insist=True, capabilities=["x"]))
    with pytest.raises(LocalProtocolError, match="insists"):
        server.redirect("elsewhere")
    server.accept_open(["here:1"])
    opened = only(server.handle_timer(0), E.ConnectionOpened)
    assert opened.known_hosts == ("here:1",) and opened.virtual_host == "v"  # type: ignore[attr-defined]
    with pytest.raises(LocalProtocolError):
        server.accept_open()


def test_a_refused_open() -> None:
    pair = make_pair(client={"virtual_host": "nowhere"}, open_=False)
    pair.accept = False
    pair.pump()
    requested = only(pair.server_events, E.OpenRequested)
    assert requested.virtual_host == "nowhere"  # type: ignore[attr-defined]
    pair.server.close(402, "no such virtual host")
    pair.pump()
    assert only(pair.client_events, E.ConnectionClosed) == E.ConnectionClosed(
        reply_code=402, reply_text="no such virtual host", by_peer=True
    )


def _open_server(server: E.Connection, opening: spec.ConnectionOpen | None = None) -> None:
    """Feed a server the client's side of the handshake by hand (ANONYMOUS)."""
    server.receive_data(PROTOCOL_HEADER, 0)
    server.receive_data(
        control(0, spec.ConnectionStartOk(mechanism="ANONYMOUS", response=b"", locale="en_US")), 0
    )
    server.receive_data(control(0, spec.ConnectionTuneOk(channel_max=10, max_frame_size=4096)), 0)
    server.receive_data(control(0, opening or spec.ConnectionOpen(virtual_host="")), 0)
    server.data_to_send()


@pytest.mark.parametrize(
    ("tune_ok", "code", "text", "negotiated"),
    [
        (spec.ConnectionTuneOk(channel_max=3000), 320, "channel-max 3000", False),
        (spec.ConnectionTuneOk(channel_max=0), 320, "channel-max 0", False),
        (
            spec.ConnectionTuneOk(channel_max=5, max_frame_size=100),
            501,
            "max-frame-size 100",
            False,
        ),
        (spec.ConnectionTuneOk(max_frame_size=5000, heartbeat=500), 320, "heartbeat 500", True),
    ],
)
def test_the_server_refuses_a_tune_ok_out_of_range(
    tune_ok: spec.ConnectionTuneOk, code: int, text: str, negotiated: bool
) -> None:
    server = E.Connection(E.Role.SERVER)
    server.receive_data(PROTOCOL_HEADER, 0)
    server.receive_data(
        control(0, spec.ConnectionStartOk(mechanism="ANONYMOUS", response=b"", locale="en_US")), 0
    )
    server.data_to_send()
    events = server.receive_data(control(0, tune_ok), 0)
    if negotiated:  # a negotiated close
        assert events == [] and server.state is E.ConnectionState.CLOSING
        close = close_sent(server)
        assert close.reply_code == code and text in (close.reply_text or "")
    else:  # the socket closed without one (tune-ok rule "upper-limit")
        [closed] = events
        assert isinstance(closed, E.ConnectionClosed) and closed.reply_code == code
        assert text in closed.reply_text and server.data_to_send() == b""


def test_a_tune_ok_without_values_takes_ours() -> None:
    """qpid-python sends ``tune-ok`` with no field set: the server's proposals stand."""
    server = E.Connection(E.Role.SERVER)
    server.receive_data(PROTOCOL_HEADER, 0)
    server.receive_data(
        control(0, spec.ConnectionStartOk(mechanism="ANONYMOUS", response=b"", locale="en_US")), 0
    )
    server.receive_data(control(0, spec.ConnectionTuneOk()), 0)
    assert server.channel_max == 2047 and server.max_frame_size == 65535
    assert server.state is E.ConnectionState.AWAIT_OPEN


@pytest.mark.parametrize(
    ("tune", "text"),
    [
        (spec.ConnectionTune(max_frame_size=1000), "under MIN-MAX-FRAME-SIZE"),
        (spec.ConnectionTune(heartbeat_max=10), "not a range"),
        (spec.ConnectionTune(heartbeat_min=10, heartbeat_max=5), "not a range"),
    ],
)
def test_the_client_refuses_a_tune_out_of_range(tune: spec.ConnectionTune, text: str) -> None:
    client = _client_at_tune()
    assert client.receive_data(control(0, tune), 0) == []
    assert client.state is E.ConnectionState.CLOSING
    assert text in (close_sent(client).reply_text or "")


def _client_at_tune() -> E.Connection:
    client = E.Connection(E.Role.CLIENT, mechanism="ANONYMOUS")
    client.start(0)
    client.data_to_send()
    start = spec.ConnectionStart(mechanisms=["ANONYMOUS"], locales=["de_DE"])
    client.receive_data(PROTOCOL_HEADER + control(0, start), 0)
    sent = spec.decode_control(client.data_to_send()[12:])
    assert isinstance(sent, spec.ConnectionStartOk) and sent.locale == "de_DE"
    return client


def test_a_tune_without_values_leaves_the_clients_limits() -> None:
    client = _client_at_tune()
    client.receive_data(control(0, spec.ConnectionTune()), 0)
    assert client.max_frame_size == 65535 and client.channel_max == 2047
    assert client.heartbeat == 0


def test_a_control_out_of_place_closes_the_connection() -> None:
    client = _client_at_tune()
    client.receive_data(control(0, spec.ConnectionOpenOk()), 0)
    assert client.state is E.ConnectionState.CLOSING
    assert "connection.open-ok is not allowed" in (close_sent(client).reply_text or "")
    # while closing, anything but close and close-ok is discarded
    assert client.receive_data(control(0, spec.ConnectionOpenOk()), 0) == []
    assert client.receive_data(control(1, spec.SessionAttach(name=b"x")), 0) == []
    assert client.receive_data(command(1, spec.ExecutionSync()), 0) == []
    [closed] = client.receive_data(control(0, spec.ConnectionCloseOk()), 0)
    assert isinstance(closed, E.ConnectionClosed) and closed.reply_code == 320


def test_session_traffic_before_the_open_closes_the_connection() -> None:
    client = _client_at_tune()
    client.receive_data(control(1, spec.SessionAttached(name=b"x")), 0)
    assert "session traffic is not allowed" in (close_sent(client).reply_text or "")


def test_a_control_that_cannot_be_decoded_is_a_framing_error() -> None:
    pair = make_pair()
    pair.take()
    raw = b"".join(encode_assembly(0, 0, [(SegmentType.CONTROL, b"\x01")], 4096))
    assert pair.server.receive_data(raw, 0) == []
    assert close_sent(pair.server).reply_code == 501


def test_hostile_frames_close_with_framing_error() -> None:
    pair = make_pair()
    pair.take()
    good = control(0, spec.ConnectionHeartbeat())
    events = pair.server.receive_data(good + b"\xff" * 20, 0)
    [closed] = events
    assert isinstance(closed, E.ConnectionClosed) and closed.reply_code == 501
    assert close_sent(pair.server).reply_code == 501


def test_a_channel_past_channel_max_is_a_framing_error() -> None:
    pair = make_pair(client={"limits": E.Limits(max_channels=4)})
    pair.take()
    assert pair.server.channel_max == 4
    pair.server.receive_data(control(4, spec.SessionAttach(name=b"x")), 0)
    close = close_sent(pair.server)
    assert (close.reply_code, close.reply_text) == (501, "channel 4 is not under the channel-max 4")


def test_limits_and_options_are_checked() -> None:
    for bad in (
        {"max_frame_size": 100},
        {"max_channels": 0},
        {"max_assembly_size": 0},
        {"max_session_timeout": -1},
        {"handshake_timeout": -1.0},
    ):
        with pytest.raises(LocalProtocolError):
            E.Limits(**bad)  # type: ignore[arg-type]
    for options in (
        {"heartbeat": 70000},
        {"heartbeat_range": (5, 1)},
        {"heartbeat_range": (1, 70000)},
    ):
        with pytest.raises(LocalProtocolError):
            E.Connection(E.Role.SERVER, **options)  # type: ignore[arg-type]


def test_a_small_frame_size_splits_big_commands() -> None:
    limits = E.Limits(max_frame_size=4096)
    pair = make_pair(chunk=random.Random(5), client={"limits": limits})
    assert pair.client.max_frame_size == pair.server.max_frame_size == 4096
    pair.attach(b"big")
    body = bytes(range(256)) * 200
    pair.client.send_command(b"big", spec.MessageTransfer(destination="d"), body=body)
    pair.pump()
    got = only(pair.server_events, E.CommandReceived)
    assert got.body == body  # type: ignore[attr-defined]
    assert max(len(d) for d in pair.to_server[-1:]) > 4096  # many frames in one write


def test_authenticators_default_offers_anonymous() -> None:
    assert authenticator().offered_mechanisms()[-1] == "ANONYMOUS"
    assert AnonymousClient().name == "ANONYMOUS"


def test_garbage_while_closing_ends_without_a_second_close() -> None:
    pair = make_pair(client={"heartbeat": 10, "limits": E.Limits(handshake_timeout=0)})
    pair.take()
    pair.client.close()
    assert pair.client.next_deadline() == 20.0  # the peer's silence only: no close limit
    close_sent(pair.client)
    [closed] = pair.client.receive_data(b"\xff" * 12, 1.0)
    assert isinstance(closed, E.ConnectionClosed) and closed.reply_code == 501
    assert pair.client.data_to_send() == b""


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300), st.sampled_from([None, 1, 5]), st.booleans())
def test_hostile_bytes_end_in_events_never_in_an_exception(
    data: bytes, chunk: int | None, opened: bool
) -> None:
    """Anything after the header (and after a valid handshake, or not) gives events or a
    clean close with a 0-10 close-code, whole and in chunks."""
    pair = make_pair(open_=opened)
    server = pair.server
    if not opened:
        server.receive_data(PROTOCOL_HEADER, 0)
    events = []
    for piece in chunks(data, chunk):
        events += server.receive_data(piece, 0.5)
    events += server.handle_timer(1000.0)
    events += server.receive_data(b"", 1000.0)
    closed = [e for e in events if isinstance(e, E.ConnectionClosed)]
    assert len(closed) <= 1 and server.closed
    assert not closed or closed[0].reply_code in (200, 320, 402, 501)


def test_the_face() -> None:
    from amqp_sansio import amqp010
    from amqp_sansio.codec.amqp010 import errors as codec_errors
    from amqp_sansio.framing import amqp010 as framing

    assert amqp010.engine.Connection is E.Connection
    assert amqp010.framing.AssemblyParser is framing.AssemblyParser
    assert amqp010.errors.DecodeError is codec_errors.DecodeError
    assert amqp010.errors.FramingError is framing.FramingError
    assert amqp010.definitions.MessageTransfer is spec.MessageTransfer
