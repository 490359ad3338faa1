"""The broker core's connection limits on a simulated clock (issue 16, part B): the handshake
time-out, the connection caps, channel-max and handle-max, the bound on frames before the open,
delivery-tags over 32 octets, and failed logins slowed per source address. Bytes go in and
come out as on the wire; no clock is read (``now`` is given)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.broker_net import Net, publish
from support.engine_pair import frames_in

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig, Users
from amqp_sansio.definitions.amqp10 import performatives
from amqp_sansio.framing import amqp10 as framing

USERS = Users.from_json(
    json.dumps({"users": {"alice": {"password": "secret", "send": ["*"], "receive": ["*"]}}})
)
SASL_HEADER = framing.SASL_HEADER


def _close_condition(data: bytes) -> str | None:
    closes = [b for b in frames_in(data) if isinstance(b, performatives.Close)]
    assert len(closes) == 1, frames_in(data)
    error = closes[0].error
    return None if error is None else str(error.condition)


def _open_frame(**kwargs: Any) -> bytes:
    return framing.encode_frame(performatives.Open(container_id="raw", **kwargs))


# -- the handshake time-out ---------------------------------------------------------------------


def test_a_silent_connection_is_cut_at_the_handshake_timeout_without_a_byte() -> None:
    broker = Broker()
    conn = broker.accept(100.0, address="10.0.0.1")
    assert conn.next_deadline() == 110.0  # the default: 10 s from the TCP connection
    conn.handle_timer(109.9)
    assert not conn.ended
    conn.handle_timer(110.0)
    assert conn.ended and conn.cut
    assert conn.data_to_send() == b""  # no header came: nothing can be said
    assert "handshake time-out" in (conn.refused or "")
    conn.connection_lost(110.0)
    assert broker.connections == set() and broker._by_address == {}


def test_a_trickling_client_is_cut_at_the_time_out_with_a_close_once_headers_are_out() -> None:
    """A byte at a time: the header, then an open that never ends. The time-out runs from
    the TCP connection, not from the last byte."""
    broker = Broker()
    conn = broker.accept(0.0)
    wire = framing.AMQP_HEADER + _open_frame()
    out = b""
    for i, byte in enumerate(wire[:-1]):
        now = i * 0.25
        if now >= 10:
            break
        conn.receive_data(bytes([byte]), now)
        out += conn.data_to_send()
        assert not conn.ended
    assert out == framing.AMQP_HEADER  # the header is answered, the open never arrives
    assert conn.next_deadline() == 10.0
    conn.handle_timer(10.0)
    out = conn.data_to_send()
    assert conn.ended
    bodies = frames_in(out)
    assert [type(b) for b in bodies] == [performatives.Open, performatives.Close]
    assert _close_condition(out) == "amqp:resource-limit-exceeded"


def test_mid_sasl_is_cut_by_closing_the_transport() -> None:
    broker = Broker(BrokerConfig(users=USERS, allow_insecure_auth=True))
    conn = broker.accept(0.0)
    conn.receive_data(SASL_HEADER, 1.0)
    assert frames_in(conn.data_to_send())  # the mechanisms
    conn.handle_timer(10.0)
    assert conn.ended and conn.data_to_send() == b""


def test_an_open_client_is_not_cut_and_the_timeout_is_configurable() -> None:
    net = Net(BrokerConfig(handshake_timeout=2.0))
    client = net.connect()
    assert client.engine.state is a.ConnectionState.OPENED
    # the handshake time-out is over: what is left is the idle time-out (default 120 s)
    assert client.conn.next_deadline() == net.now + 120
    net.advance(60)
    assert client.engine.state is a.ConnectionState.OPENED
    broker = Broker(BrokerConfig(handshake_timeout=None))
    assert broker.accept(0.0).next_deadline() is None


# -- connection caps ----------------------------------------------------------------------------


def test_connections_per_address_and_in_all_are_refused_before_any_byte() -> None:
    broker = Broker(BrokerConfig(max_connections=5, max_connections_per_address=2))
    a1 = [broker.accept(0.0, address="10.0.0.1") for _ in range(2)]
    refused = broker.accept(0.0, address="10.0.0.1")
    assert refused.ended and refused.data_to_send() == b""
    assert refused.refused == "at most 2 connections from one address"
    refused.connection_lost(0.0)  # (the driver's finally: nothing counted, nothing freed)
    others = [broker.accept(0.0, address=f"10.0.0.{i}") for i in (2, 2, 3)]
    assert not any(c.ended for c in a1 + others)
    full = broker.accept(0.0, address="10.0.0.9")
    assert full.ended and full.refused == "the broker takes at most 5 connections"
    a1[0].connection_lost(1.0)  # one goes: one more may come, from that address too
    again = broker.accept(1.0, address="10.0.0.1")
    assert not again.ended
    assert broker._by_address == {"10.0.0.1": 2, "10.0.0.2": 2, "10.0.0.3": 1}


def test_connections_per_user_are_refused_with_a_close_after_the_open() -> None:
    config = BrokerConfig(users=USERS, allow_insecure_auth=True, max_connections_per_user=2)
    net = Net(config)
    alice = a.sasl.ClientCredentials(username="alice", password="secret")
    first, second = net.connect(sasl=alice), net.connect(sasl=alice)
    third = net.connect(sasl=alice)
    assert first.engine.state is a.ConnectionState.OPENED
    assert second.engine.state is a.ConnectionState.OPENED
    closed = third.of(a.events.ConnectionClosed)
    assert closed and closed[0].error.condition == "amqp:resource-limit-exceeded"
    assert third.conn.refused == "at most 2 connections per user"
    # The refused one did not count; one that goes frees its place.
    first.engine.close()
    net.pump()
    fourth = net.connect(sasl=alice)
    assert fourth.engine.state is a.ConnectionState.OPENED
    # The others go on.
    sender = publish(second, "q", b"1")
    assert sender.state is a.LinkState.ATTACHED


# -- channel-max, handle-max, frames before the open, delivery-tags ----------------------------


def test_channel_max_and_handle_max_are_announced_and_enforced() -> None:
    net = Net()
    client = net.connect()
    assert client.engine.remote is not None and client.engine.remote.channel_max == 255
    session = client.begin()
    assert session.remote is not None and session.remote.handle_max == 1023
    # A begin on channel 256 (above channel-max): the connection is closed (2.7.1).
    client.conn.receive_data(
        framing.encode_frame(
            performatives.Begin(next_outgoing_id=0, incoming_window=1, outgoing_window=1),
            channel=256,
        ),
        net.now,
    )
    assert _close_condition(client.conn.data_to_send()) == "amqp:connection:framing-error"
    # An attach on handle 1024 (above handle-max): its session ends (the engine's rule).
    client = net.connect()
    session = client.begin()
    client.conn.receive_data(
        framing.encode_frame(
            performatives.Attach(
                name="x",
                handle=1024,
                role=performatives.Role.SENDER,
                target=a.Target(address="q"),
                initial_delivery_count=0,
            ),
            channel=session.channel or 0,
        ),
        net.now,
    )
    ends = [b for b in frames_in(client.conn.data_to_send()) if isinstance(b, performatives.End)]
    assert ends and ends[0].error.condition == "amqp:resource-limit-exceeded"


def test_handle_max_and_channel_max_are_configurable() -> None:
    net = Net(BrokerConfig(channel_max=1, handle_max=0))
    client = net.connect()
    client.engine.begin()
    client.engine.begin()
    with pytest.raises(a.LocalProtocolError, match="channel-max 1"):
        client.engine.begin()  # our engine keeps within the broker's channel-max
    session = net.connect().begin()
    assert session.remote is not None and session.remote.handle_max == 0
    with pytest.raises(ValueError, match="channel_max"):
        BrokerConfig(channel_max=70000)


@pytest.mark.parametrize("sasl", [False, True])
def test_frames_before_the_open_are_bounded_by_512_octets(sasl: bool) -> None:
    """Core spec 2.4.1: before the open the maximum frame size is 512; an open of 600 octets
    closes the connection with amqp:connection:framing-error. One of 512 is taken."""
    config = BrokerConfig(users=USERS, allow_insecure_auth=True) if sasl else BrokerConfig()
    for size, ok in ((512, True), (513, False)):
        broker = Broker(config)
        conn = broker.accept(0.0)
        wire = b""
        if sasl:
            init = performatives.SaslInit(
                mechanism=a.Symbol("PLAIN"), initial_response=b"\x00alice\x00secret"
            )
            wire += SASL_HEADER + framing.encode_frame(init, frame_type=framing.FrameType.SASL)
        pad = next(n for n in range(size) if len(_open_frame(hostname="h" * n)) == size)
        wire += framing.AMQP_HEADER + _open_frame(hostname="h" * pad)
        conn.receive_data(wire, 0.0)
        out = conn.data_to_send()
        bodies = frames_in(out)
        if ok:
            assert not any(isinstance(b, performatives.Close) for b in bodies)
            assert conn.engine.state is a.ConnectionState.OPENED
        else:
            assert _close_condition(out) == "amqp:connection:framing-error"
    # After the open the negotiated max-frame-size applies (64 KiB by default).
    net = Net()
    client = net.connect()
    sender = client.sender("big")
    client.send(sender, a.Message(body=b"x" * 60_000))
    assert net.broker.nodes["big"].depth == 1


def test_a_delivery_tag_over_32_octets_detaches_the_link() -> None:
    net = Net()
    client = net.connect()
    sender = client.sender("q")
    other = client.sender("q")
    assert sender.handle is not None
    transfer = performatives.Transfer(handle=sender.handle, delivery_id=0, delivery_tag=b"t" * 33)
    client.conn.receive_data(
        framing.encode_frame(transfer, payload=a.Message(body=b"x").encode(), channel=0), net.now
    )
    detaches = [
        b for b in frames_in(client.conn.data_to_send()) if isinstance(b, performatives.Detach)
    ]
    assert len(detaches) == 1 and detaches[0].error.condition == "amqp:invalid-field"
    assert "33 octets" in detaches[0].error.description
    assert net.broker.nodes["q"].depth == 0
    # A tag of 32 is taken, and our own sender never makes a longer one.
    net2 = Net()
    c2 = net2.connect()
    s2 = c2.sender("q")
    c2.send(s2, a.Message(body=b"ok"), tag=b"t" * 32)
    assert net2.broker.nodes["q"].depth == 1
    with pytest.raises(a.LocalProtocolError, match="at most 32"):
        s2.send(b"no", tag=b"t" * 33)
    assert other.state is a.LinkState.ATTACHED


# -- failed logins slowed -----------------------------------------------------------------------


def _login(
    broker: Broker, now: float, password: str, address: str = "10.0.0.1", *, mute: bool = False
) -> Any:
    """A client's SASL PLAIN login and open at ``now``; ``mute``: it stops sending once the
    broker closes (it never answers the close)."""
    conn = broker.accept(now, address=address)
    engine = a.Connection(
        client=True,
        sasl=a.sasl.ClientCredentials(username="alice", password=password),
        allow_plain_without_tls=True,
    )
    engine.open(now=now)
    events: list[a.Event] = []
    for _ in range(20):
        out = engine.data_to_send()
        if out:
            conn.receive_data(out, now)
        back = conn.data_to_send()
        if back:
            events += engine.receive_data(back, now)
        if not out and not back:
            break
        if mute and any(isinstance(e, a.events.ConnectionClosed) for e in events):
            break
    return conn, engine, events


def _failed(events: list[a.Event]) -> bool:
    return any(isinstance(e, a.events.AuthenticationFailed) for e in events)


def test_failed_logins_are_slowed_per_address() -> None:
    broker = Broker(BrokerConfig(users=USERS, allow_insecure_auth=True))
    now = 0.0
    for _ in range(3):  # login_delay_after: the first three fail at once
        conn, _, events = _login(broker, now, "wrong")
        assert _failed(events) and conn.ended
        conn.connection_lost(now)
    delays = []
    for _ in range(6):
        conn, engine, events = _login(broker, now, "wrong")
        assert not _failed(events) and not conn.ended  # its outcome is held
        deadline = conn.next_deadline()
        assert deadline is not None
        delays.append(deadline - now)
        conn.handle_timer(deadline - 0.01)
        assert conn.data_to_send() == b""
        conn.handle_timer(deadline)
        assert _failed(engine.receive_data(conn.data_to_send(), deadline))
        assert conn.ended
        conn.connection_lost(deadline)
        now = deadline
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 16.0]  # doubling, at most login_delay_max
    # Another address is not slowed, nor a right password from this one.
    conn, engine, events = _login(broker, now, "wrong", address="10.0.0.2")
    assert _failed(events)
    conn, engine, events = _login(broker, now, "secret")
    assert engine.state is a.ConnectionState.OPENED
    # After the window (300 s) without a failure the address starts afresh.
    now += 301
    conn, engine, events = _login(broker, now, "wrong")
    assert _failed(events)


def test_a_held_connection_counts_until_its_transport_goes() -> None:
    config = BrokerConfig(
        users=USERS, allow_insecure_auth=True, login_delay_after=0, max_connections_per_address=1
    )
    broker = Broker(config)
    conn, _, _ = _login(broker, 0.0, "wrong")
    assert conn.next_deadline() == 1.0
    assert broker.accept(0.5, address="10.0.0.1").ended  # still counted while held
    conn.connection_lost(0.5)  # the client went: nothing to hold any more
    assert conn.ended
    assert not broker.accept(0.6, address="10.0.0.1").ended


def test_the_failure_table_is_bounded() -> None:
    from amqp_sansio.broker import _broker

    broker = Broker(BrokerConfig(users=USERS, allow_insecure_auth=True))
    for i in range(_broker._FAILURES_MAX + 50):
        broker.login_failed(f"a{i}", float(i) / 1000)
    assert len(broker._failures) <= _broker._FAILURES_MAX


def test_a_refused_user_that_never_answers_the_close_is_cut_at_the_timeout() -> None:
    config = BrokerConfig(users=USERS, allow_insecure_auth=True, max_connections_per_user=1)
    broker = Broker(config)
    _, first, _ = _login(broker, 0.0, "secret")
    assert first.state is a.ConnectionState.OPENED
    conn, _, events = _login(broker, 1.0, "secret", mute=True)
    closed = [e for e in events if isinstance(e, a.events.ConnectionClosed)]
    assert closed and closed[0].error.condition == "amqp:resource-limit-exceeded"
    # Our engine answers the close at once; a client that does not is cut at 10 s.
    assert not conn.ended
    assert conn.next_deadline() == 11.0
    conn.handle_timer(11.0)
    assert conn.ended and conn.cut


def test_anonymous_clients_are_not_counted_per_user() -> None:
    anonymous = Users.from_json(json.dumps({"anonymous": {"send": ["*"], "receive": ["*"]}}))
    net = Net(BrokerConfig(users=anonymous, max_connections_per_user=1))
    clients = [net.connect(), net.connect(sasl=a.sasl.ClientCredentials()), net.connect()]
    assert all(c.engine.state is a.ConnectionState.OPENED for c in clients)
    assert {c.conn.engine.sasl_mechanism for c in clients} == {None, "ANONYMOUS"}
    assert {c.conn.identity for c in clients} == {"anonymous"}
    assert net.broker._by_user == {}


def test_a_client_engine_takes_a_larger_open_from_its_server() -> None:
    """The 512-byte bound before the open is the server role's default; a client takes its
    chosen server's larger open (RabbitMQ's is 280 bytes, others' larger), up to its own
    max_frame_size, unless told otherwise."""
    properties = {a.Symbol("information"): "x" * 2000}
    for bound, ok in ((None, True), (512, False)):
        server = a.Connection(client=False, properties=properties)
        client = a.Connection(open_max_frame_size=bound)
        client.open(now=0)
        server.receive_data(client.data_to_send(), 0)
        server.open()
        events = client.receive_data(server.data_to_send(), 0)
        opened = any(isinstance(e, a.events.ConnectionOpened) for e in events)
        assert opened is ok, events
    with pytest.raises(a.LocalProtocolError, match="open_max_frame_size"):
        a.Connection(open_max_frame_size=100)


def test_a_tls_handshake_that_never_ends_is_cut_at_the_timeout(tmp_path: Path) -> None:
    """amqps (TLS from the first byte): a client that stops in the middle of its TLS
    ClientHello is cut at the time-out like any other, the transport closed."""
    import ssl

    trustme = pytest.importorskip("trustme", reason="trustme is in the 'test' extra")
    ca = trustme.CA()
    ca.issue_cert("localhost").private_key_and_cert_chain_pem.write_to_path(
        str(tmp_path / "server.pem")
    )
    server_ctx = a.security.tls.server_context(str(tmp_path / "server.pem"))
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        client.do_handshake()
    hello = outgoing.read()
    broker = Broker()
    conn = broker.accept(0.0, ssl_context=server_ctx, address="10.0.0.1")
    conn.receive_data(hello[: len(hello) // 2], 1.0)
    assert conn.data_to_send() == b"" and not conn.ended
    assert conn.next_deadline() == 10.0
    conn.handle_timer(10.0)
    assert conn.ended and conn.cut and conn.data_to_send() == b""
