"""RabbitMQ 3.10 with its AMQP 1.0 plugin (``rabbitmq_amqp1_0``) as a real peer.

Our client engine, driven by :class:`~amqp_sansio.adapters.sockets.SocketDriver` over a
loopback socket, authenticates with SASL, opens a connection and a session, and moves
messages through a queue of the broker. The broker is the one named by the environment
variable ``AMQP_SANSIO_RABBITMQ_URL`` (``amqp://user:password@host:port``); ``.ci/run``
installs and starts one and sets it. Without it, or if nothing answers there, every test here
skips, saying why.

Addresses are the plugin's (3.x, "v1" format): ``/queue/NAME`` is a queue, declared if absent
(non-durable, as our terminus asks); ``/exchange/NAME/KEY`` publishes to an existing exchange;
``/amq/queue/NAME`` only an existing queue. Each test uses queues of its own (a fresh name), so
runs do not see each other's messages.

What RabbitMQ 3.10 does that the tests pin down: it offers ANONYMOUS, PLAIN and AMQPLAIN; it
answers a wrong password with sasl-outcome ``auth`` and sends nothing more; it refuses an
attach to a missing exchange or queue by ending the *session* with ``amqp:not-found`` (not by
detaching the link); it answers our closing detach with ``closed=False``. Where it departs
from the spec, the tests keep clear: it ends the session with ``amqp:internal-error`` when a
receiver drains a classic queue, so nothing here drains; and it can send past the credit a
receiver tops up while deliveries are under way, so receivers here refill at zero (see
:class:`Collect` and docs/interop.rst).
"""

from __future__ import annotations

import socket
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from amqp_sansio.adapters.sockets import SocketDriver
from support.rabbitmq import rabbitmq_url

import amqp_sansio as a
import amqp_sansio.framing.amqp10
from amqp_sansio import sasl
from amqp_sansio.definitions.amqp10 import performatives

COUNT = 10_000
WAIT = 60.0  # the bound on any one wait; the bulk tests take a few seconds
WINDOW = 1000  # receiver credit, topped up when half is used
#: What RabbitMQ 3.10 offers in its default configuration (auth_mechanisms PLAIN and AMQPLAIN,
#: plus ANONYMOUS from the AMQP 1.0 plugin, which maps it to its default_user).
# The set is fixed; the order is not (it follows the broker's plugin registry, which
# differs from one start to the next).
RABBITMQ_310_MECHANISMS = {"ANONYMOUS", "PLAIN", "AMQPLAIN"}


# -- the broker --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Broker:
    host: str
    port: int
    username: str
    password: str


def _parse(url: str) -> Broker:
    parts = urllib.parse.urlsplit(url)
    assert parts.hostname is not None  # rabbitmq_url checked it
    return Broker(
        host=parts.hostname,
        port=parts.port or 5672,
        username=urllib.parse.unquote(parts.username or "guest"),
        password=urllib.parse.unquote(parts.password or "guest"),
    )


@pytest.fixture(scope="module")
def broker() -> Broker:
    return _parse(rabbitmq_url())


def unique(prefix: str) -> str:
    return f"amqp-sansio-{prefix}-{uuid.uuid4().hex[:12]}"


# -- our client ------------------------------------------------------------------------------


class RecordingSocket:
    """A socket that keeps a copy of everything sent through it, so that a test can say
    exactly what went on the wire (nothing after a refusal, no password where none belongs)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.sent = bytearray()

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, data: Any) -> int:
        n = self._sock.send(data)
        self.sent += memoryview(data)[:n]
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class Client:
    """One connection to the broker: the engine, its driver, and what happened on it."""

    def __init__(
        self,
        broker: Broker,
        *,
        credentials: a.sasl.ClientCredentials | None = None,
        allow_plain_without_tls: bool = True,
        **options: Any,
    ) -> None:
        if credentials is None:
            credentials = a.sasl.ClientCredentials(
                username=broker.username, password=broker.password
            )
        self.conn = a.Connection(
            client=True,
            container_id=unique("client"),
            sasl=credentials,
            allow_plain_without_tls=allow_plain_without_tls,
            **options,
        )
        self.sock = RecordingSocket(socket.create_connection((broker.host, broker.port), 10))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.handlers: list[Callable[[a.Event], None]] = []
        self.driver = SocketDriver(self.conn, self.sock, on_event=self._on_event)  # type: ignore[arg-type]
        self.conn.open(now=self.driver.now())

    def _on_event(self, event: a.Event) -> None:
        for handler in self.handlers:
            handler(event)

    def wait(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        self.driver.run_until(predicate, timeout=timeout)

    def settle_for(self, seconds: float) -> None:
        """Let the broker answer for a while (to see that nothing more comes)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0 and not self.driver.closed:
            self.driver.step(left)

    def of_type(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.driver.events if isinstance(e, kind)]

    def opened(self) -> Client:
        self.wait(lambda: self.conn.state is a.ConnectionState.OPENED)
        return self

    def session(self) -> a.Session:
        session = self.conn.begin()
        self.wait(lambda: session.state is a.SessionState.MAPPED)
        return session

    def close(self) -> None:
        """Close cleanly: our close, the broker's answering close, then the socket."""
        self.conn.close()
        self.wait(lambda: self.conn.state is a.ConnectionState.END)
        self.driver.close()


@pytest.fixture
def connect(broker: Broker) -> Iterator[Callable[..., Client]]:
    clients: list[Client] = []

    def make(**options: Any) -> Client:
        client = Client(broker, **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.driver.close()


def wire_frames(data: bytes | bytearray) -> list[Any]:
    """Parse what we sent: the protocol header, then the frame bodies, in order."""
    parser = a.framing.amqp10.FrameParser(max_frame_size=1 << 20)
    parser.feed(bytes(data))
    out: list[Any] = [parser.next_protocol_header()]
    while parser.buffered:
        frame = parser.next_frame()
        assert frame is not None, "a frame cut short"
        out.append(frame.body)
    return out


def body_of(data: bytes) -> Any:
    body = a.Message.decode(data).body
    return body.value if isinstance(body, a.AmqpValue | a.Data) else body


# -- SASL ------------------------------------------------------------------------------------


def test_broker_offers_these_mechanisms(broker: Broker) -> None:
    """What RabbitMQ 3.10 offers, read straight off the wire (our SASL header, its
    sasl-mechanisms frame)."""
    with socket.create_connection((broker.host, broker.port), 10) as sock:
        sock.sendall(a.framing.amqp10.SASL_HEADER)
        parser = a.framing.amqp10.FrameParser()
        frame = None
        header = None
        end = time.monotonic() + 10
        while frame is None and time.monotonic() < end:
            data = sock.recv(4096)
            assert data, "RabbitMQ closed the connection before offering its mechanisms"
            parser.feed(data)
            header = header or parser.next_protocol_header()
            frame = parser.next_frame() if header else None
    assert header == a.framing.amqp10.ProtocolHeader(protocol_id=a.framing.amqp10.ProtocolId.SASL)
    assert frame is not None and isinstance(frame.body, performatives.SaslMechanisms)
    offered = [str(m) for m in frame.body.sasl_server_mechanisms]
    assert len(offered) == len(set(offered))
    assert set(offered) == RABBITMQ_310_MECHANISMS


def test_plain_guest_authenticates_and_opens(connect: Callable[..., Client]) -> None:
    client = connect().opened()
    # Credentials and an explicit opt-in on loopback: of ANONYMOUS, PLAIN and AMQPLAIN we
    # pick PLAIN (we have no AMQPLAIN, and never fall back to ANONYMOUS with a password).
    assert client.of_type(a.events.Authenticated) == [
        a.events.Authenticated(mechanism="PLAIN", identity="guest")
    ]
    assert client.conn.sasl_mechanism == "PLAIN"
    remote = client.conn.remote
    assert remote is not None and remote.properties is not None
    assert remote.properties[a.Symbol("product")] == "RabbitMQ"
    session = client.session()
    assert session.state is a.SessionState.MAPPED
    client.close()
    assert client.of_type(a.events.ConnectionClosed) == [a.events.ConnectionClosed(error=None)]
    assert client.of_type(a.events.ProtocolError) == []


def test_plain_only_list_authenticates(connect: Callable[..., Client]) -> None:
    client = connect(sasl_mechanisms=["PLAIN"]).opened()
    assert client.conn.sasl_mechanism == "PLAIN"
    client.close()


def test_anonymous_authenticates(connect: Callable[..., Client]) -> None:
    """No credentials: ANONYMOUS, which the plugin maps to its default user."""
    client = connect(credentials=a.sasl.ClientCredentials()).opened()
    assert client.conn.sasl_mechanism == "ANONYMOUS"
    client.session()
    client.close()


def test_wrong_password_is_refused_cleanly(connect: Callable[..., Client]) -> None:
    client = connect(credentials=a.sasl.ClientCredentials(username="guest", password="not-guest"))
    client.wait(lambda: client.conn.state is a.ConnectionState.END)
    (failed,) = client.of_type(a.events.AuthenticationFailed)
    assert failed.code is performatives.SaslCode.AUTH
    assert isinstance(failed.error, sasl.SASLAuthenticationError)
    assert "not-guest" not in failed.description
    assert [type(e) for e in client.driver.events] == [
        a.events.AuthenticationFailed,
        a.events.ConnectionEnded,
    ]
    client.settle_for(0.3)  # whatever the broker does next, we send nothing
    assert client.conn.data_to_send() == b""
    sent = wire_frames(client.sock.sent)
    assert sent[0] == a.framing.amqp10.ProtocolHeader(protocol_id=a.framing.amqp10.ProtocolId.SASL)
    assert [type(b) for b in sent[1:]] == [performatives.SaslInit]  # no AMQP header, no open
    assert sent[1].mechanism == "PLAIN"
    with pytest.raises(a.LocalProtocolError):
        client.conn.begin()
    client.driver.close()


def test_password_not_sent_without_tls_unless_allowed(connect: Callable[..., Client]) -> None:
    """Without the opt-in, PLAIN over plain TCP is refused by us: the password never leaves."""
    client = connect(allow_plain_without_tls=False)
    client.wait(lambda: client.conn.state is a.ConnectionState.END)
    (failed,) = client.of_type(a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLError)
    assert b"guest" not in client.sock.sent
    client.driver.close()


# -- messages --------------------------------------------------------------------------------


class Pump:
    """Sends ``payloads`` on ``sender`` as credit allows, and records the outcomes."""

    def __init__(self, client: Client, sender: a.Sender, payloads: list[bytes]) -> None:
        self.sender = sender
        self.payloads = payloads
        self.sent = 0
        self.outcomes: list[Any] = []
        self.unsettled_updates = 0
        client.handlers.append(self._on_event)
        self.pump()

    def _on_event(self, event: a.Event) -> None:
        if isinstance(event, a.events.CreditChanged) and event.link is self.sender:
            self.pump()
        elif isinstance(event, a.events.DeliveryUpdated) and event.link is self.sender:
            if event.settled:
                self.outcomes.append(event.state)
            else:
                self.unsettled_updates += 1

    def pump(self) -> None:
        sender = self.sender
        while (
            self.sent < len(self.payloads)
            and sender.state is a.LinkState.ATTACHED
            and sender.link_credit > 0
        ):
            sender.send(self.payloads[self.sent])
            self.sent += 1


class Collect:
    """Keeps credit open on ``receiver``, accepts what arrives (unless it came settled) and
    records the bodies.

    Credit is granted a window at a time, once the last is used up, not topped up while
    deliveries are under way: RabbitMQ 3.10 counts a flow's credit from what its session has
    sent, not from the delivery-count the flow carries, so messages already on their way
    inside the broker go out on top, past the limit we set (and past the credit its own flow
    frames announce). Our engine then detaches the link with
    ``amqp:link:transfer-limit-exceeded``, as 2.6.7 wants; refilling at zero, nothing is
    under way when the new credit arrives.
    """

    def __init__(self, client: Client, receiver: a.Receiver) -> None:
        self.receiver = receiver
        self.bodies: list[Any] = []
        self.presettled = 0
        client.handlers.append(self._on_event)
        receiver.flow(WINDOW)

    def _on_event(self, event: a.Event) -> None:
        if not (isinstance(event, a.events.DeliveryReceived) and event.link is self.receiver):
            return
        assert event.complete
        self.bodies.append(body_of(event.data))
        receiver = self.receiver
        if event.delivery.remote_settled:
            self.presettled += 1
        else:
            receiver.settle(event.delivery, a.Accepted())
        if receiver.link_credit == 0 and receiver.state is a.LinkState.ATTACHED:
            receiver.flow(WINDOW)


def _messages(prefix: str) -> list[bytes]:
    return [a.Message(body=f"{prefix}-{i}").encode() for i in range(COUNT)]


def _attached(client: Client, link: a.Link) -> None:
    client.wait(lambda: link.state is not a.LinkState.ATTACH_SENT)
    assert link.state is a.LinkState.ATTACHED, client.driver.events[-3:]


def _detach(client: Client, link: a.Link) -> None:
    """Close a link: our detach (closed), the broker's answer. RabbitMQ 3.10 answers with
    ``closed=False`` where the spec (2.6.6) says the partner replies closed too; our closing
    stands, so the link is destroyed (its unsettled state dropped), not kept as suspended."""
    link.detach()
    client.wait(lambda: link.state is a.LinkState.DETACHED)
    (detached,) = [e for e in client.of_type(a.events.LinkDetached) if e.link is link]
    assert detached.error is None
    assert link.state is a.LinkState.DETACHED and link.unsettled == {}


def test_ten_thousand_messages_through_a_queue_each_accepted(
    connect: Callable[..., Client],
) -> None:
    client = connect().opened()
    session = client.session()
    address = f"/queue/{unique('bulk')}"
    payloads = _messages("bulk")
    started = time.monotonic()

    sender = session.attach_sender(
        "bulk-out", target=address, snd_settle_mode=a.SenderSettleMode.UNSETTLED
    )
    _attached(client, sender)
    pump = Pump(client, sender, payloads)
    client.wait(lambda: len(pump.outcomes) == COUNT)
    assert pump.outcomes == [a.Accepted()] * COUNT
    assert sender.unsettled == {}
    sent_in = time.monotonic() - started

    receiver = session.attach_receiver(
        "bulk-in", source=address, snd_settle_mode=a.SenderSettleMode.UNSETTLED
    )
    _attached(client, receiver)
    assert receiver.remote is not None
    assert receiver.remote.snd_settle_mode is a.SenderSettleMode.UNSETTLED
    collect = Collect(client, receiver)
    client.wait(lambda: len(collect.bodies) == COUNT)
    assert collect.bodies == [f"bulk-{i}" for i in range(COUNT)]
    assert collect.presettled == 0
    client.settle_for(0.2)
    assert len(collect.bodies) == COUNT  # nothing more in the queue
    _detach(client, receiver)
    _detach(client, sender)

    # Every message was accepted: a new receiver finds the queue empty (unacknowledged
    # messages would have gone back to the queue when the first receiver closed).
    again = session.attach_receiver("bulk-again", source=address)
    _attached(client, again)
    check = Collect(client, again)
    client.settle_for(0.5)
    assert check.bodies == []
    _detach(client, again)
    client.close()
    assert client.of_type(a.events.ProtocolError) == []
    total = time.monotonic() - started
    print(f"\n{COUNT} sent and accepted in {sent_in:.2f} s; through the queue in {total:.2f} s")


def test_ten_thousand_presettled_messages(connect: Callable[..., Client]) -> None:
    """At most once both ways: we send settled, and ask the broker (snd-settle-mode settled on
    our receiver) to send settled, so no disposition crosses in either direction."""
    client = connect().opened()
    session = client.session()
    address = f"/queue/{unique('presettled')}"
    settled = a.SenderSettleMode.SETTLED
    sender = session.attach_sender("fast-out", target=address, snd_settle_mode=settled)
    _attached(client, sender)
    pump = Pump(client, sender, _messages("fast"))
    client.wait(lambda: pump.sent == COUNT)
    client.driver.flush()

    receiver = session.attach_receiver("fast-in", source=address, snd_settle_mode=settled)
    _attached(client, receiver)
    assert receiver.remote is not None and receiver.remote.snd_settle_mode is settled
    collect = Collect(client, receiver)
    client.wait(lambda: len(collect.bodies) == COUNT)
    assert collect.bodies == [f"fast-{i}" for i in range(COUNT)]
    assert collect.presettled == COUNT
    assert pump.outcomes == [] and pump.unsettled_updates == 0
    assert sender.unsettled == {} and receiver.unsettled == {}
    _detach(client, receiver)
    _detach(client, sender)
    client.close()


# -- refusals, and closing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("terminus", "address"),
    [("target", "/exchange/{name}/key"), ("source", "/amq/queue/{name}")],
    ids=["send-to-missing-exchange", "receive-from-missing-queue"],
)
def test_missing_node_ends_the_session(
    connect: Callable[..., Client], terminus: str, address: str
) -> None:
    """RabbitMQ refuses an attach to a node that does not exist by ending the session with
    ``amqp:not-found``: we report SessionEnded with that error, answer the end, and the
    connection stays open for a new session."""
    client = connect().opened()
    session = client.session()
    name = unique("missing")
    link: a.Link
    if terminus == "target":
        link = session.attach_sender("to-nowhere", target=address.format(name=name))
    else:
        link = session.attach_receiver("from-nowhere", source=address.format(name=name))
    client.wait(lambda: session.state is a.SessionState.UNMAPPED)
    (ended,) = client.of_type(a.events.SessionEnded)
    assert ended.session is session
    assert ended.error is not None and ended.error.condition == "amqp:not-found"
    assert name in (ended.error.description or "")
    assert link.state is not a.LinkState.ATTACHED
    if isinstance(link, a.Sender):
        with pytest.raises(a.LocalProtocolError):
            link.send(a.Message(body="lost").encode())
    assert client.of_type(a.events.ProtocolError) == []
    assert client.conn.state is a.ConnectionState.OPENED

    # The connection carries on: a new session, a link to a real queue, one message.
    fresh = client.session()
    ok = fresh.attach_sender("after", target=f"/queue/{unique('after')}")
    _attached(client, ok)
    client.wait(lambda: ok.link_credit > 0)
    pump = Pump(client, ok, [a.Message(body="still here").encode()])
    client.wait(lambda: pump.outcomes == [a.Accepted()])
    client.close()


def test_unroutable_message_is_accepted(connect: Callable[..., Client]) -> None:
    """An existing exchange with no queue bound for the key: RabbitMQ 3.10 takes the message
    and drops it, and says so with Accepted (it does not reject or release it)."""
    client = connect().opened()
    session = client.session()
    sender = session.attach_sender(
        "unroutable",
        target=f"/exchange/amq.direct/{unique('nobody-binds')}",
        snd_settle_mode=a.SenderSettleMode.UNSETTLED,
    )
    _attached(client, sender)
    client.wait(lambda: sender.link_credit > 0)
    pump = Pump(client, sender, [a.Message(body="into the void").encode()])
    client.wait(lambda: len(pump.outcomes) == 1)
    assert pump.outcomes == [a.Accepted()]
    client.close()


def test_clean_close_at_every_level(connect: Callable[..., Client]) -> None:
    """We close a link, a session and the connection in turn; the broker answers each with
    no error. (It leaves the transport to us: the closing side hangs up, 2.4.3.)"""
    client = connect().opened()
    session = client.session()
    address = f"/queue/{unique('close')}"
    sender = session.attach_sender("close-out", target=address)
    receiver = session.attach_receiver("close-in", source=address)
    _attached(client, sender)
    _attached(client, receiver)
    _detach(client, sender)
    _detach(client, receiver)

    session.end()
    client.wait(lambda: session.state is a.SessionState.UNMAPPED)
    assert client.of_type(a.events.SessionEnded) == [
        a.events.SessionEnded(session=session, error=None)
    ]

    client.conn.close()
    client.wait(lambda: client.conn.state is a.ConnectionState.END)
    assert client.of_type(a.events.ConnectionClosed) == [a.events.ConnectionClosed(error=None)]
    assert isinstance(client.driver.events[-1], a.events.ConnectionEnded)
    assert client.conn.data_to_send() == b""
    assert client.driver.error is None
    assert client.of_type(a.events.ProtocolError) == []
    client.driver.close()


def test_an_echo_gives_the_queue_depth_and_a_revoke_stops_the_flow() -> None:
    """What the Spark source relies on when it reads RabbitMQ 3.10 (adapters/spark): a flow
    with ``echo`` is answered with ``available`` = the messages the queue holds for the
    link (so an empty queue is told from a slow one), and a flow with link-credit 0 (a
    revoke, not a drain: RabbitMQ 3.10 fails drains on classic queues) stops it sending."""
    import asyncio

    from amqp_sansio.adapters import aio

    url = rabbitmq_url()
    address = f"/queue/{unique('echo')}"

    async def answered(receiver: Any) -> int:
        op = receiver.core.ask_available()
        for _ in range(500):
            if op.done():
                return int(op.result())
            await asyncio.sleep(0.01)
        raise AssertionError("RabbitMQ did not answer the echo within 5 s")

    async def main() -> None:
        async with aio.connect(f"{url}/") as conn:
            receiver = await conn.receiver(address, credit=10)
            assert await answered(receiver) == 0  # an empty queue
            assert receiver.core.revoke() == 10
            sender = await conn.sender(address)
            for i in range(5):
                await sender.send(a.Message(body=f"m{i}".encode()))
            await asyncio.sleep(0.5)
            assert not receiver.core.queue  # no credit: nothing sent
            assert await answered(receiver) == 5  # held for the link
            again = await conn.receiver(address, credit=10)
            got = [await again.receive(timeout=10) for _ in range(5)]
            assert [d.message.body.value for d in got] == [f"m{i}".encode() for i in range(5)]
            for delivery in got:
                delivery.accept()
            assert await answered(again) == 0

    asyncio.run(main())
