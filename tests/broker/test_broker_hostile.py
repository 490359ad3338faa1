"""Hostile clients: whatever frames a client sends (well-formed performatives with any
field values, messages of any shape, garbage), the broker answers on the wire and never
raises, and the other connections go on. On the WebSocket port (``amqp-sansio broker
--ws-port``, driven with raw sockets): a huge upgrade request, a text message, a message
that never ends and a ping flood, each answered as docs/websockets.rst says, the broker
still serving another client after."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import wsproto
import wsproto.events as ws
from amqp_sansio.adapters import sockets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.broker_net import Net, body
from support.broker_process import BrokerProcess
from support.strategies import COMPOSITES, has_sections, messages

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.framing.amqp10
from amqp_sansio.broker import BrokerConfig

HANDLES = st.integers(0, 3)


def _attach(draw: Any) -> a.definitions.amqp10.performatives.Attach:
    attach = draw(COMPOSITES[a.definitions.amqp10.performatives.Attach])
    return a.definitions.amqp10.performatives.Attach(
        name=draw(st.sampled_from(["l0", "l1", attach.name])),
        handle=draw(HANDLES),
        role=attach.role,
        snd_settle_mode=attach.snd_settle_mode,
        rcv_settle_mode=attach.rcv_settle_mode,
        source=draw(
            st.one_of(
                st.just(attach.source),
                st.builds(a.Source, address=st.sampled_from(["q", "topic/t", "dlq"])),
                st.builds(a.Source, dynamic=st.just(True)),
            )
        ),
        target=draw(
            st.one_of(
                st.just(attach.target),
                st.builds(a.Target, address=st.sampled_from(["q", "topic/t"])),
                st.just(a.definitions.amqp10.transactions.Coordinator()),
            )
        ),
        initial_delivery_count=attach.initial_delivery_count,
        max_message_size=attach.max_message_size,
    )


@st.composite
def frames(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["attach", "transfer", "flow", "disposition", "detach", "raw"]))
    if kind == "attach":
        return a.framing.amqp10.encode_frame(_attach(draw))
    if kind == "transfer":
        encoded = messages.filter(has_sections).map(lambda m: m.encode())
        payload = draw(st.one_of(encoded, st.binary(max_size=40)))
        transfer = a.definitions.amqp10.performatives.Transfer(
            handle=draw(HANDLES),
            delivery_id=draw(st.integers(0, 5)),
            delivery_tag=draw(st.binary(min_size=1, max_size=4)),
            settled=draw(st.booleans()),
            more=draw(st.booleans()),
            state=draw(
                st.one_of(
                    st.none(), COMPOSITES[a.definitions.amqp10.transactions.TransactionalState]
                )
            ),
        )
        return a.framing.amqp10.encode_frame(transfer, payload=payload)
    if kind == "flow":
        flow = draw(COMPOSITES[a.definitions.amqp10.performatives.Flow])
        return a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Flow(
                next_incoming_id=0,
                incoming_window=100,
                next_outgoing_id=draw(st.integers(0, 5)),
                outgoing_window=100,
                handle=draw(st.one_of(st.none(), HANDLES)),
                delivery_count=flow.delivery_count,
                link_credit=flow.link_credit,
                drain=flow.drain,
                echo=flow.echo,
                properties=flow.properties,
            )
        )
    if kind == "disposition":
        disposition = draw(COMPOSITES[a.definitions.amqp10.performatives.Disposition])
        return a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Disposition(
                role=disposition.role,
                first=draw(st.integers(0, 5)),
                last=draw(st.one_of(st.none(), st.integers(0, 6))),
                settled=disposition.settled,
                state=disposition.state,
            )
        )
    if kind == "detach":
        return a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Detach(
                handle=draw(HANDLES), closed=draw(st.booleans()), error=None
            )
        )
    return draw(st.binary(min_size=1, max_size=30))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(frames(), max_size=12), st.booleans())
def test_hostile_frames_never_break_the_broker(sequence: list[bytes], lose: bool) -> None:
    net = Net(BrokerConfig(dead_letter="dlq", max_queue_depth=5, max_message_size=4096))
    good = net.connect()
    watcher = good.receiver("q", 100)
    hostile = net.broker.accept(net.now)
    opening = (
        a.framing.amqp10.AMQP_HEADER
        + a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Open(container_id="hostile")
        )
        + a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Begin(
                next_outgoing_id=0, incoming_window=100, outgoing_window=100
            )
        )
    )
    hostile.receive_data(opening, net.now)
    for frame in sequence:
        hostile.receive_data(frame, net.now)
        hostile.data_to_send()
        net.pump()
    if lose:
        hostile.connection_lost(net.now)
    else:
        hostile.handle_timer(net.now + 1000)
    net.pump()
    # The broker and the well-behaved client go on.
    s = good.sender("q")
    good.send(s, a.Message(body=b"still here"))
    got = [body(e) for e in good.received(watcher)]
    assert b"still here" in got


# -- the WebSocket port: raw sockets against ``amqp-sansio broker --ws-port 0`` ----------------

#: The bound of every wait on the broker process's sockets, seconds.
WAIT = 30.0
#: The WebSocket layer's limits the broker keeps (WebSocketOptions' defaults).
HANDSHAKE_LIMIT = 16 * 1024
MESSAGE_LIMIT = 16 * 1024 * 1024


@pytest.fixture(scope="module")
def ws_broker() -> Iterator[BrokerProcess]:
    """``amqp-sansio broker --ws-port 0``, open, one process for the WebSocket tests."""
    with BrokerProcess("--ws-port", "0") as process:
        yield process


def _ws_port(broker: BrokerProcess) -> int:
    assert broker.ws_url is not None
    port = urlsplit(broker.ws_url).port
    assert port is not None
    return port


def _rss(broker: BrokerProcess) -> int:
    """The broker process's resident memory, bytes (Linux's /proc)."""
    status = Path(f"/proc/{broker.proc.pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmRSS:")]
    return int(line.split()[1]) * 1024


def _still_serves(broker: BrokerProcess, queue: str) -> None:
    """Another client, over the ws port, sends a message and receives it back."""
    url = f"{broker.ws_url}/"
    with sockets.connect(url, timeout=WAIT) as conn:
        assert conn.sender(queue).send(b"still serving") == a.Accepted()
        delivery = conn.receiver(queue, credit=1).receive(timeout=WAIT)
        assert delivery is not None
        delivery.accept()
        assert delivery.message.body.value == b"still serving"


def _raw(broker: BrokerProcess) -> socket.socket:
    return socket.create_connection(("127.0.0.1", _ws_port(broker)), timeout=WAIT)


def _upgraded(broker: BrokerProcess) -> tuple[socket.socket, wsproto.WSConnection]:
    """A raw socket whose upgrade (subprotocol ``amqp``) the broker accepted."""
    sock = _raw(broker)
    peer = wsproto.WSConnection(wsproto.ConnectionType.CLIENT)
    sock.sendall(peer.send(ws.Request(host="h", target="/", subprotocols=["amqp"])))
    while not (events := list(peer.events())):
        peer.receive_data(sock.recv(4096))
    assert isinstance(events[0], ws.AcceptConnection), events
    return sock, peer


def _until_closed(sock: socket.socket) -> bytes:
    """What the broker sends until it closes the connection (a clean close: no reset)."""
    got = bytearray()
    while chunk := sock.recv(65536):
        got += chunk
    return bytes(got)


def _close_code(peer: wsproto.WSConnection, data: bytes) -> int:
    peer.receive_data(data)
    closes = [e for e in peer.events() if isinstance(e, ws.CloseConnection)]
    assert len(closes) == 1, closes
    return int(closes[0].code)


def test_a_huge_upgrade_request_is_answered_431_and_closed(ws_broker: BrokerProcess) -> None:
    head = b"GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    padding = b"X-Pad: " + b"a" * HANDSHAKE_LIMIT + b"\r\n"  # (the head never ends)
    with _raw(ws_broker) as sock:
        sock.sendall(head + padding)
        answer = _until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:80]
    # Far beyond: the broker stops reading at the limit and hangs up (431 or a reset, as
    # what it did not read is discarded), its memory not grown by what was sent.
    before = _rss(ws_broker)
    with _raw(ws_broker) as sock:
        try:
            sock.sendall(head + b"X-Pad: " + b"a" * (64 * 1024 * 1024))
            hung_up = _until_closed(sock)
        except (ConnectionResetError, BrokenPipeError):
            hung_up = b""
    assert hung_up in (b"", answer) or hung_up.startswith(b"HTTP/1.1 431 "), hung_up[:80]
    assert _rss(ws_broker) - before < 8 * 1024 * 1024
    _still_serves(ws_broker, "ws-hostile-upgrade")


def test_a_text_message_is_closed_with_1003(ws_broker: BrokerProcess) -> None:
    sock, peer = _upgraded(ws_broker)
    with sock:
        sock.sendall(peer.send(ws.TextMessage(data="AMQP")))
        assert _close_code(peer, _until_closed(sock)) == 1003
    _still_serves(ws_broker, "ws-hostile-text")


#: An AMQP 1.0 empty frame (core spec 2.3.1), a heartbeat: what the endless message carries
#: after its header and open, so the engine inside takes every byte as it arrives.
EMPTY_FRAME = b"\x00\x00\x00\x08\x02\x00\x00\x00"


def test_a_message_that_never_ends_is_closed_with_1009(ws_broker: BrokerProcess) -> None:
    opening = a.framing.amqp10.AMQP_HEADER + a.framing.amqp10.encode_frame(
        a.definitions.amqp10.performatives.Open(container_id="endless")
    )
    chunk = EMPTY_FRAME * 8192  # 64 KiB
    sock, peer = _upgraded(ws_broker)
    before = _rss(ws_broker)
    with sock:
        # One binary message in fragments, its final one never sent: the limit, in full...
        sock.sendall(peer.send(ws.BytesMessage(data=opening, message_finished=False)))
        sent = len(opening)
        while sent + len(chunk) <= MESSAGE_LIMIT:
            sock.sendall(peer.send(ws.BytesMessage(data=chunk, message_finished=False)))
            sent += len(chunk)
        # ... and one frame past it.
        sock.sendall(peer.send(ws.BytesMessage(data=chunk, message_finished=False)))
        data = _until_closed(sock)
    peer.receive_data(data)
    events = list(peer.events())
    closes = [e for e in events if isinstance(e, ws.CloseConnection)]
    assert [c.code for c in closes] == [1009], events[-3:]
    # The broker answered the open (the engine took the bytes as they came), and held no
    # message: its memory grew by less than half the limit.
    assert any(isinstance(e, ws.BytesMessage) for e in events)
    assert _rss(ws_broker) - before < MESSAGE_LIMIT // 2
    _still_serves(ws_broker, "ws-hostile-endless")


def test_a_ping_flood_is_answered_without_queueing_pongs(ws_broker: BrokerProcess) -> None:
    pings = 50_000
    sock, peer = _upgraded(ws_broker)
    served: list[BaseException | None] = []

    def other_client() -> None:
        try:
            _still_serves(ws_broker, "ws-hostile-pings-during")
            served.append(None)
        except BaseException as exc:  # (reported by the test's thread)
            served.append(exc)

    with sock:
        during = threading.Thread(target=other_client)
        flood = b"".join(peer.send(ws.Ping(payload=b"%08d" % i)) for i in range(pings))
        during.start()
        sock.sendall(flood)  # without reading: a slow reader of its pongs
        during.join(WAIT)
        assert served == [None], served
        pongs: list[bytes] = []
        last = b"%08d" % (pings - 1)
        while last not in pongs:
            chunk = sock.recv(65536)
            assert chunk, "the broker closed the connection"
            peer.receive_data(chunk)
            pongs += [bytes(e.payload) for e in peer.events() if isinstance(e, ws.Pong)]
        # Each pong answers the latest ping the broker had read (RFC 6455 5.5.3), at most
        # one waiting at a time: far fewer pongs than pings, in the order of the pings.
        assert len(pongs) < pings // 10, len(pongs)
        assert pongs == sorted(pongs) and len(set(pongs)) == len(pongs)
    _still_serves(ws_broker, "ws-hostile-pings-after")
