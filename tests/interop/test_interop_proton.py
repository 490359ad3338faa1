"""Interoperability with Apache Qpid Proton (python-qpid-proton) over loopback sockets.

Our engine, driven by :class:`amqp_sansio.adapters.sockets.SocketDriver` in the test's
thread, talks to a Proton ``Container`` run in a thread of its own, in both directions: our
client against a Proton listener, and a Proton client against our server on an accepted
socket. Every test that is not about one role runs in both (the ``role`` fixture says ours).

Each side is scripted by the same link specifications (:class:`Spec`): a link is named for
the test and is "outgoing" when we send on it. In the client role we attach the links and
Proton answers; in the server role Proton attaches them and we answer. Everything Proton
sees is recorded by :class:`ProtonPeer` in its thread and read here once the driver has
seen the matching answer (or, for Proton-side conditions, by polling with a bound).

Proton's reactor is not thread-safe: the test thread only reads the peer's records, and
asks for actions in Proton's thread through an ``EventInjector`` (:meth:`ProtonPeer.call`).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from amqp_sansio.adapters.sockets import ByteStream, SocketDriver

import amqp_sansio as a

proton = pytest.importorskip(
    "proton", reason="python-qpid-proton (the 'test' extra) is needed for the interop tests"
)
from proton import Condition, Delivery, Endpoint, Link, symbol  # noqa: E402
from proton.handlers import MessagingHandler  # noqa: E402
from proton.reactor import (  # noqa: E402
    ApplicationEvent,
    AtLeastOnce,
    AtMostOnce,
    Container,
    EventInjector,
)

WAIT = 20.0  # the bound on any one wait: generous, the tests finish far sooner
POLL = 0.02  # how often conditions that Proton's thread changes are re-checked
BULK = 10_000
BIG = 10 * 1024 * 1024


# -- the scripts ---------------------------------------------------------------------------


@dataclass
class Spec:
    """One link of a test. ``outgoing``: we send on it (our Sender, Proton's receiver)."""

    name: str
    outgoing: bool
    address: str = "queue"
    presettled: bool = False
    #: What Proton sends on an incoming link, as soon as it has credit.
    proton_bodies: list[Any] = field(default_factory=list)
    #: Credit the receiving side keeps topped up to (0: the test grants it by hand).
    window: int = 1000
    #: Proton's receiver drains this much credit once attached (Proton's side of a drain).
    proton_drain: int = 0


def body_of(message: a.Message) -> Any:
    body = message.body
    if isinstance(body, a.AmqpValue | a.Data):
        return body.value
    return body


# -- Proton's side ------------------------------------------------------------------------


class ProtonPeer(MessagingHandler):
    """Proton's end, running in the container's thread: as a server (listening) or as a
    client (connecting to ``connect_to``). It opens the links of the specs in the client role,
    answers ours in the server role, sends what its specs say, settles what arrives with
    ``outcome`` (accept by default), and records everything."""

    def __init__(
        self,
        specs: list[Spec],
        *,
        connect_to: int | None = None,
        idle_timeout: float | None = None,
        outcome: Callable[[Delivery, Any], None] | None = None,
        connect_options: dict[str, Any] | None = None,
        scheme: str = "amqp",
    ) -> None:
        super().__init__(prefetch=0, auto_accept=False, auto_settle=True)
        self.specs = {s.name: s for s in specs}
        self.connect_to = connect_to
        #: The URL scheme of Proton's connect: ``amqps`` for TLS (with an ``ssl_domain``).
        self.scheme = scheme
        #: Options for Proton's connect in the client role (SASL: user, password, ...).
        self.connect_options = {"sasl_enabled": False, **(connect_options or {})}
        self.idle_timeout = idle_timeout
        self.outcome = outcome
        self.queues: dict[str, deque[Any]] = {
            s.name: deque(s.proton_bodies) for s in specs if not s.outgoing
        }
        self.injector = EventInjector()
        self.acceptor: Any = None
        self.connection: Any = None
        self.links: dict[str, Any] = {}
        # What Proton saw.
        self.opened = False
        self.remote_idle_timeout: float | None = None
        #: The transport's authenticated user, and TLS as Proton saw it, once opened.
        self.user: str | None = None
        self.tls: dict[str, Any] | None = None
        self.opened_links: set[str] = set()
        self.received: dict[str, list[Any]] = defaultdict(list)
        self.remote_settled: dict[str, int] = defaultdict(int)
        self.outcomes: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.drains_answered: dict[str, int] = defaultdict(int)
        self.drain_done: dict[str, int] = {}
        self.closed_links: list[tuple[str, Any]] = []
        self.closed_sessions: list[Any] = []
        self.remote_close: list[Any] = []
        self.closed = False
        self.transport_closed = False
        self.errors: list[str] = []

    # Called from the test's thread: run ``fn`` in Proton's.
    def call(self, fn: Callable[[], None]) -> None:
        self.injector.trigger(ApplicationEvent("call", subject=fn))

    def on_call(self, event: Any) -> None:
        event.subject()

    def shutdown(self) -> None:
        """In Proton's thread: stop listening, close what is open, let the container end."""
        if self.acceptor is not None:
            self.acceptor.close()
        conn = self.connection
        if conn is not None and not conn.state & Endpoint.LOCAL_CLOSED:
            conn.close()
        self.injector.close()

    # -- connection -------------------------------------------------------------------------

    def on_start(self, event: Any) -> None:
        event.container.selectable(self.injector)
        if self.connect_to is not None:
            self.connection = event.container.connect(
                f"{self.scheme}://127.0.0.1:{self.connect_to}",
                reconnect=False,
                heartbeat=self.idle_timeout,
                container_id="proton-client",
                **self.connect_options,
            )

    def on_connection_bound(self, event: Any) -> None:
        if self.connect_to is None:  # the listener's connection
            self.connection = event.connection
            if self.idle_timeout:
                event.transport.idle_timeout = self.idle_timeout

    def on_connection_opened(self, event: Any) -> None:
        self.opened = True
        transport = event.transport
        self.remote_idle_timeout = transport.remote_idle_timeout
        self.user = transport.user
        ssl = transport._ssl  # only there when TLS was configured: reading it adds none
        if ssl is not None:
            self.tls = {
                "protocol": ssl.protocol_name(),
                "cipher": ssl.cipher_name(),
                "peer_subject": ssl.remote_subject,
            }
        if self.connect_to is None:
            return
        container = event.container
        for spec in self.specs.values():
            options = AtMostOnce() if spec.presettled else AtLeastOnce()
            if spec.outgoing:  # we send: Proton receives
                link = container.create_receiver(
                    event.connection, source=spec.address, name=spec.name, options=options
                )
            else:
                link = container.create_sender(
                    event.connection, target=spec.address, name=spec.name, options=options
                )
            self.links[spec.name] = link

    def on_connection_closing(self, event: Any) -> None:
        self.remote_close.append(event.connection.remote_condition)

    def on_connection_closed(self, event: Any) -> None:
        self.closed = True
        if self.acceptor is not None:
            self.acceptor.close()

    def on_transport_closed(self, event: Any) -> None:
        self.transport_closed = True

    def on_transport_error(self, event: Any) -> None:
        self.errors.append(f"transport: {event.transport.condition}")

    def on_connection_error(self, event: Any) -> None:
        self.errors.append(f"connection: {event.connection.remote_condition}")

    def on_session_error(self, event: Any) -> None:
        self.errors.append(f"session: {event.session.remote_condition}")

    def on_link_error(self, event: Any) -> None:
        self.errors.append(f"link: {event.link.remote_condition}")

    def on_session_closing(self, event: Any) -> None:
        self.closed_sessions.append(event.session.remote_condition)

    def on_link_closing(self, event: Any) -> None:
        self.closed_links.append((event.link.name, event.link.remote_condition))

    # -- links ------------------------------------------------------------------------------

    def on_link_opening(self, event: Any) -> None:
        """Our attach, in the server role: answer with the same termini and settle mode."""
        link = event.link
        link.source.copy(link.remote_source)
        link.target.copy(link.remote_target)
        if link.is_sender and link.remote_snd_settle_mode == Link.SND_SETTLED:
            link.snd_settle_mode = Link.SND_SETTLED
        self.links[link.name] = link

    def on_link_opened(self, event: Any) -> None:
        link = event.link
        self.opened_links.add(link.name)
        spec = self.specs[link.name]
        if link.is_receiver:
            if spec.proton_drain:
                link.drain(spec.proton_drain)
            elif spec.window:
                link.flow(spec.window)
        else:
            self._send(link)

    def on_link_flow(self, event: Any) -> None:
        link = event.link
        if link.is_sender:
            self._send(link)
        elif self.specs[link.name].proton_drain and not link.draining():
            self.drain_done.setdefault(link.name, link.credit)

    def _send(self, link: Any) -> None:
        if not (link.state & Endpoint.LOCAL_ACTIVE and link.state & Endpoint.REMOTE_ACTIVE):
            return
        queue = self.queues[link.name]
        while link.credit > 0 and queue:
            link.send(proton.Message(body=queue.popleft()))
        if not queue and link.drain_mode and link.credit > 0:
            self.drains_answered[link.name] += link.drained()

    # -- deliveries -------------------------------------------------------------------------

    def on_message(self, event: Any) -> None:
        dlv = event.delivery
        link = event.link
        body = event.message.body
        self.received[link.name].append(bytes(body) if isinstance(body, memoryview) else body)
        if dlv.settled:  # Proton's name for settled by the peer
            self.remote_settled[link.name] += 1
            dlv.settle()
        elif self.outcome is not None:
            self.outcome(dlv, body)
        else:
            self.accept(dlv)
        window = self.specs[link.name].window
        if window and link.credit < window // 2:
            link.flow(window - link.credit)

    def _outcome(self, event: Any) -> None:
        dlv = event.delivery
        remote = dlv.remote
        cond = remote.condition
        self.outcomes[event.link.name].append(
            {
                "state": dlv.remote_state,
                "condition": None if cond is None else (cond.name, cond.description, cond.info),
                "failed": remote.failed,
                "undeliverable": remote.undeliverable,
                "annotations": remote.annotations,
                "settled": dlv.settled,
            }
        )

    on_accepted = on_rejected = on_released = _outcome


def proton_outcome(dlv: Delivery, body: Any) -> None:
    """Proton's receiver answers with the outcome the message body names."""
    if body == "reject":
        dlv.local.condition = Condition(
            "amqp:precondition-failed", "not this one", {symbol("reason"): "test"}
        )
        dlv.update(Delivery.REJECTED)
    elif body == "release":
        dlv.update(Delivery.RELEASED)
    elif body == "modify":
        dlv.local.failed = True
        dlv.local.undeliverable = True
        dlv.local.annotations = {symbol("x-opt-note"): "try elsewhere"}
        dlv.update(Delivery.MODIFIED)
    else:
        dlv.update(Delivery.ACCEPTED)
    dlv.settle()


# -- our side -----------------------------------------------------------------------------


class OurApp:
    """Our application, as the driver's ``on_event`` callback: in the server role it
    accepts the peer's open, begin and attaches; it keeps receivers' credit topped up to the
    spec's window, decodes and settles what arrives (with ``settle_with``, Accepted by
    default), sends what is queued as credit allows, answers a drain, and settles its own
    deliveries once the peer has."""

    def __init__(
        self,
        conn: a.Connection,
        specs: list[Spec],
        *,
        server: bool,
        settle_with: Callable[[a.Message], Any] | None = None,
    ) -> None:
        self.conn = conn
        self.specs = {s.name: s for s in specs}
        self.server = server
        self.settle_with = settle_with
        self.session: a.Session | None = None
        self.links: dict[str, Any] = {}
        self.outgoing: dict[str, deque[bytes]] = defaultdict(deque)
        self.received: dict[str, list[a.Message]] = defaultdict(list)
        self.remote_settled: dict[str, int] = defaultdict(int)
        self.updates: dict[str, list[a.DeliveryUpdated]] = defaultdict(list)
        self.errors: list[a.Event] = []

    def __call__(self, event: a.Event) -> None:
        if isinstance(event, a.ConnectionOpened):
            if self.server:
                self.conn.open()
        elif isinstance(event, a.SessionBegun):
            self.session = event.session
            if event.session.state is a.SessionState.BEGIN_RCVD:
                event.session.begin()
        elif isinstance(event, a.LinkAttached):
            link = event.link
            self.links[link.name] = link
            if link.state is a.LinkState.ATTACH_RCVD:
                link.attach()
            spec = self.specs[link.name]
            if isinstance(link, a.Receiver) and spec.window:
                link.flow(spec.window)
        elif isinstance(event, a.CreditChanged):
            if isinstance(event.link, a.Sender):
                self.pump(event.link)
        elif isinstance(event, a.DeliveryReceived):
            self._received(event)
        elif isinstance(event, a.DeliveryUpdated):
            self.updates[event.link.name].append(event)
            if event.settled and not event.delivery.settled:
                event.link.settle(event.delivery)  # the peer has forgotten it: so do we
        elif isinstance(event, a.ProtocolError | a.IdleTimedOut):
            self.errors.append(event)

    def _received(self, event: a.DeliveryReceived) -> None:
        link = event.link
        assert isinstance(link, a.Receiver)
        assert event.complete
        message = a.Message.decode(event.data)
        self.received[link.name].append(message)
        delivery = event.delivery
        if delivery.remote_settled:
            self.remote_settled[link.name] += 1
        else:
            outcome = self.settle_with(message) if self.settle_with else a.Accepted()
            link.settle(delivery, outcome)
        window = self.specs[link.name].window
        if window and link.link_credit < window // 2 and link.state is a.LinkState.ATTACHED:
            link.flow(window)

    def send(self, name: str, payloads: list[bytes]) -> None:
        self.outgoing[name].extend(payloads)
        self.pump(self.links[name])

    def pump(self, link: a.Sender) -> None:
        if link.state is not a.LinkState.ATTACHED:
            return
        queue = self.outgoing[link.name]
        while queue and link.link_credit > 0:
            link.send(queue.popleft())
        if link.drain and not queue:
            link.drained()

    def attach_all(self) -> None:
        """The client role: begin a session and attach every spec's link."""
        session = self.session = self.conn.begin()
        for spec in self.specs.values():
            mode = a.SenderSettleMode.SETTLED if spec.presettled else a.SenderSettleMode.UNSETTLED
            if spec.outgoing:
                link: a.Link = session.attach_sender(
                    spec.name, target=spec.address, snd_settle_mode=mode
                )
            else:
                link = session.attach_receiver(spec.name, source=spec.address, snd_settle_mode=mode)
            self.links[spec.name] = link


# -- wiring the two together -----------------------------------------------------------------


class Interop:
    """One test's pair: our driver and app, Proton's peer and thread."""

    def __init__(
        self,
        role: str,
        specs: list[Spec],
        *,
        idle_timeout: float | None = None,
        proton_idle_timeout: float | None = None,
        proton_outcome: Callable[[Delivery, Any], None] | None = None,
        settle_with: Callable[[a.Message], Any] | None = None,
        proton_connect: dict[str, Any] | None = None,
        proton_ssl: Any = None,
        wrap: Callable[[a.Connection], ByteStream] | None = None,
        **conn_options: Any,
    ) -> None:
        """``proton_ssl``, a ``proton.SSLDomain``: TLS on Proton's side (its acceptor's
        domain as a server; as a client, an ``amqps`` connect with it). ``wrap`` puts a
        layer around our connection (a ``TLSLayer``): the driver drives what it returns."""
        self.role = role
        self.specs = specs
        self.conn = a.Connection(
            client=role == "client",
            container_id=f"amqp-sansio-{role}",
            idle_timeout=idle_timeout,
            **conn_options,
        )
        self.app = OurApp(self.conn, specs, server=role == "server", settle_with=settle_with)
        #: What the driver drives: our connection, or the layer around it.
        self.transport: ByteStream = self.conn if wrap is None else wrap(self.conn)
        self.listener: socket.socket | None = None
        self.thread_error: list[BaseException] = []
        self.driver: SocketDriver | None = None
        if role == "client":
            self.peer = ProtonPeer(specs, idle_timeout=proton_idle_timeout, outcome=proton_outcome)
            self.container = Container(self.peer)
            self.peer.acceptor = self.container.acceptor("127.0.0.1", 0)
            port = self.peer.acceptor._selectable.getsockname()[1]  # Proton shows it nowhere else
            if proton_ssl is not None:
                self.peer.acceptor.set_ssl_domain(proton_ssl)
        else:
            self.listener = socket.create_server(("127.0.0.1", 0))
            port = self.listener.getsockname()[1]
            self.peer = ProtonPeer(
                specs,
                connect_to=port,
                idle_timeout=proton_idle_timeout,
                outcome=proton_outcome,
                connect_options=(
                    proton_connect
                    if proton_ssl is None
                    else {"ssl_domain": proton_ssl, **(proton_connect or {})}
                ),
                scheme="amqp" if proton_ssl is None else "amqps",
            )
            self.container = Container(self.peer)
        self.port = port
        self.thread = threading.Thread(target=self._run, name="proton", daemon=True)

    def _run(self) -> None:
        try:
            self.container.run()
        except BaseException as exc:  # reported by the fixture
            self.thread_error.append(exc)

    def start(self) -> SocketDriver:
        """Connect, open, begin and attach every link, on both sides."""
        self.thread.start()
        if self.role == "client":
            self.driver = SocketDriver.connect(
                self.transport, ("127.0.0.1", self.port), on_event=self.app
            )
            self.conn.open(now=self.driver.now())
            self.wait(lambda: self.conn.state is a.ConnectionState.OPENED)
            self.app.attach_all()
        else:
            assert self.listener is not None
            self.driver = SocketDriver.accept(self.transport, self.listener, on_event=self.app)
        self.wait(lambda: self.conn.state is a.ConnectionState.OPENED and self.peer.opened)
        self.wait(
            lambda: (
                all(
                    n in self.app.links and self.app.links[n].state is a.LinkState.ATTACHED
                    for n in self.app.specs
                )
                and self.peer.opened_links == set(self.app.specs)
            )
        )
        return self.driver

    def wait(self, predicate: Callable[[], bool], timeout: float = WAIT) -> None:
        assert self.driver is not None

        def done() -> bool:
            if self.thread_error:  # Proton's thread died: nothing more will come
                raise self.thread_error[0]
            return predicate()

        self.driver.run_until(done, timeout, poll_interval=POLL)

    def wait_for(self, kind: type, timeout: float = WAIT) -> Any:
        assert self.driver is not None
        start = len(self.driver.events)
        found: list[Any] = []

        def seen() -> bool:
            found[:] = [e for e in self.driver.events[start:] if isinstance(e, kind)]
            return bool(found)

        self.wait(seen, timeout)
        return found[0]

    def finish(self) -> None:
        """Tear down: close our socket, let Proton's container end, join its thread."""
        if self.driver is not None:
            self.driver.close()
        if self.listener is not None:
            self.listener.close()
        if self.thread.is_alive():
            self.peer.call(self.peer.shutdown)
            self.thread.join(WAIT)
        assert not self.thread.is_alive(), "Proton's container did not stop"
        if self.thread_error:
            raise self.thread_error[0]


@pytest.fixture(params=["client", "server"])
def role(request: pytest.FixtureRequest) -> str:
    """Our engine's role: ``client`` against a Proton listener, ``server`` for a Proton
    client."""
    return str(request.param)


@pytest.fixture
def interop() -> Iterator[Callable[..., Interop]]:
    """Make :class:`Interop` pairs; they are torn down after the test."""
    yield from interop_pairs()


def interop_pairs() -> Iterator[Callable[..., Interop]]:
    made: list[Interop] = []

    def make(*args: Any, **kwargs: Any) -> Interop:
        pair = Interop(*args, **kwargs)
        made.append(pair)
        return pair

    yield make
    for pair in made:
        pair.finish()


def settled_count(updates: list[a.DeliveryUpdated]) -> int:
    return sum(1 for u in updates if u.settled)


# -- the tests -------------------------------------------------------------------------------


def test_open_begin_attach(role: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("to-proton", True, "in-q"), Spec("from-proton", False, "out-q")])
    pair.start()
    conn, peer = pair.conn, pair.peer
    assert conn.state is a.ConnectionState.OPENED and peer.opened
    assert conn.remote is not None
    if role == "server":
        assert conn.remote.container_id == "proton-client"
    assert pair.app.session is not None and pair.app.session.state is a.SessionState.MAPPED
    sender, receiver = pair.app.links["to-proton"], pair.app.links["from-proton"]
    assert isinstance(sender, a.Sender) and isinstance(receiver, a.Receiver)
    assert sender.remote is not None and receiver.remote is not None
    if role == "client":  # we name the nodes at Proton: it answers with the same termini
        assert sender.remote.target.address == "in-q"
        assert receiver.remote.source.address == "out-q"
    else:  # Proton names our nodes; our answer takes its termini
        assert sender.remote.source.address == sender.source.address == "in-q"
        assert receiver.remote.target.address == receiver.target.address == "out-q"
    pair.wait(lambda: sender.link_credit == 1000)  # Proton's receiver granted its window
    assert peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize("presettled", [False, True], ids=["unsettled", "presettled"])
def test_bulk_we_send(role: str, presettled: bool, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("bulk", True, presettled=presettled)])
    pair.start()
    sender = pair.app.links["bulk"]
    assert sender.snd_settle_mode is (
        a.SenderSettleMode.SETTLED if presettled else a.SenderSettleMode.UNSETTLED
    )
    bodies = [f"message {i}" for i in range(BULK)]
    pair.app.send("bulk", [a.Message(body=b).encode() for b in bodies])
    if presettled:
        pair.wait(lambda: len(pair.peer.received["bulk"]) == BULK)
        assert pair.peer.remote_settled["bulk"] == BULK
        assert pair.app.updates["bulk"] == [] and sender.unsettled == {}
    else:
        pair.wait(lambda: settled_count(pair.app.updates["bulk"]) == BULK)
        assert {type(u.state) for u in pair.app.updates["bulk"]} == {a.Accepted}
        assert sender.unsettled == {} and pair.peer.remote_settled["bulk"] == 0
    assert pair.peer.received["bulk"] == bodies
    assert pair.peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize("presettled", [False, True], ids=["unsettled", "presettled"])
def test_bulk_proton_sends(role: str, presettled: bool, interop: Callable[..., Interop]) -> None:
    bodies = [f"message {i}" for i in range(BULK)]
    pair = interop(role, [Spec("bulk", False, presettled=presettled, proton_bodies=bodies)])
    pair.start()
    pair.wait(lambda: len(pair.app.received["bulk"]) == BULK)
    assert [body_of(m) for m in pair.app.received["bulk"]] == bodies
    receiver = pair.app.links["bulk"]
    assert receiver.unsettled == {}
    if presettled:
        assert pair.app.remote_settled["bulk"] == BULK
    else:
        assert pair.app.remote_settled["bulk"] == 0
        pair.wait(lambda: len(pair.peer.outcomes["bulk"]) == BULK)
        assert all(o["state"] == Delivery.ACCEPTED for o in pair.peer.outcomes["bulk"])
    assert pair.peer.errors == [] and pair.app.errors == []


def test_big_message_each_way(role: str, interop: Callable[..., Interop]) -> None:
    ours = bytes(range(256)) * (BIG // 256)
    theirs = bytes(reversed(ours))
    pair = interop(role, [Spec("up", True), Spec("down", False, proton_bodies=[theirs])])
    pair.start()
    pair.app.send("up", [a.Message(body=ours).encode()])
    pair.wait(lambda: len(pair.app.received["down"]) == 1)
    pair.wait(lambda: settled_count(pair.app.updates["up"]) == 1)
    assert pair.peer.received["up"] == [ours]
    assert body_of(pair.app.received["down"][0]) == theirs
    assert pair.app.updates["up"][-1].state == a.Accepted()
    pair.wait(lambda: len(pair.peer.outcomes["down"]) == 1)
    assert pair.peer.errors == [] and pair.app.errors == []


def test_small_frames_each_way(role: str, interop: Callable[..., Interop]) -> None:
    """Our max-frame-size at 4096: Proton splits its 1 MiB message to fit, as we split ours
    at Proton's."""
    ours = bytes(range(256)) * 4096
    theirs = bytes(reversed(ours))
    specs = [Spec("up", True), Spec("down", False, proton_bodies=[theirs, "after"])]
    pair = interop(role, specs, max_frame_size=4096)
    pair.start()
    assert pair.conn.remote is not None
    pair.app.send("up", [a.Message(body=ours).encode(), a.Message(body="after").encode()])
    pair.wait(lambda: len(pair.app.received["down"]) == 2)
    pair.wait(lambda: settled_count(pair.app.updates["up"]) == 2)
    assert [body_of(m) for m in pair.app.received["down"]] == [theirs, "after"]
    assert pair.peer.received["up"] == [ours, "after"]
    assert pair.peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize("waiting", [0, 3])
def test_we_drain_a_proton_sender(role: str, waiting: int, interop: Callable[..., Interop]) -> None:
    bodies = [f"m{i}" for i in range(waiting)]
    pair = interop(role, [Spec("drain", False, window=0, proton_bodies=bodies)])
    pair.start()
    receiver = pair.app.links["drain"]
    start_count = receiver.delivery_count
    receiver.flow(10)
    receiver.drain_credit()
    pair.wait_for(a.DrainCompleted)
    assert receiver.link_credit == 0 and not receiver.drain
    assert a.serial_diff(receiver.delivery_count, start_count) == 10
    assert [body_of(m) for m in pair.app.received["drain"]] == bodies
    assert pair.peer.drains_answered["drain"] == 10 - waiting
    assert pair.peer.errors == [] and pair.app.errors == []


def test_proton_drains_our_sender(role: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("drain", True, proton_drain=10)])
    pair.start()
    sender = pair.app.links["drain"]
    pair.wait(lambda: "drain" in pair.peer.drain_done)
    assert pair.peer.drain_done["drain"] == 0
    assert sender.link_credit == 0 and sender.delivery_count == 10
    assert pair.peer.errors == [] and pair.app.errors == []


def test_outcomes_reach_our_sender(role: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("judged", True)], proton_outcome=proton_outcome)
    pair.start()
    pair.app.send("judged", [a.Message(body=b).encode() for b in ("reject", "release", "modify")])
    pair.wait(lambda: settled_count(pair.app.updates["judged"]) == 3)
    # Proton settles them in an order of its own: take them in delivery order.
    states = [u.state for u in sorted(pair.app.updates["judged"], key=lambda u: u.delivery.id)]
    assert states == [
        a.Rejected(
            error=a.Error(
                condition=a.Symbol("amqp:precondition-failed"),
                description="not this one",
                info={a.Symbol("reason"): "test"},
            )
        ),
        a.Released(),
        a.Modified(
            delivery_failed=True,
            undeliverable_here=True,
            message_annotations={a.Symbol("x-opt-note"): "try elsewhere"},
        ),
    ]
    assert pair.app.links["judged"].unsettled == {}
    assert pair.peer.errors == [] and pair.app.errors == []


def our_outcome(message: a.Message) -> Any:
    body = body_of(message)
    if body == "reject":
        return a.Rejected(
            error=a.Error(
                condition=a.Symbol("amqp:precondition-failed"),
                description="not this one",
                info={a.Symbol("reason"): "test"},
            )
        )
    if body == "release":
        return a.Released()
    if body == "modify":
        return a.Modified(
            delivery_failed=True,
            undeliverable_here=True,
            message_annotations={a.Symbol("x-opt-note"): "try elsewhere"},
        )
    return a.Accepted()


def test_outcomes_reach_the_proton_sender(role: str, interop: Callable[..., Interop]) -> None:
    bodies = ["reject", "release", "modify"]
    pair = interop(role, [Spec("judged", False, proton_bodies=bodies)], settle_with=our_outcome)
    pair.start()
    pair.wait(lambda: len(pair.peer.outcomes["judged"]) == 3)
    rejected, released, modified = pair.peer.outcomes["judged"]
    assert rejected["state"] == Delivery.REJECTED and rejected["settled"]
    assert rejected["condition"] == (
        "amqp:precondition-failed",
        "not this one",
        {symbol("reason"): "test"},
    )
    assert released["state"] == Delivery.RELEASED and released["settled"]
    assert modified["state"] == Delivery.MODIFIED and modified["settled"]
    assert modified["failed"] and modified["undeliverable"]
    assert modified["annotations"] == {symbol("x-opt-note"): "try elsewhere"}
    assert pair.peer.errors == [] and pair.app.errors == []


@pytest.mark.parametrize(
    ("role", "who"),
    [("client", "both"), ("server", "both"), ("client", "ours"), ("server", "proton")],
)
def test_heartbeats_keep_an_idle_connection_open(
    role: str, who: str, interop: Callable[..., Interop]
) -> None:
    """Idle time-outs of 1 s (on both sides, or only one), and three seconds of silence from
    the applications: the heartbeats alone keep the connection open."""
    idle = 1.0
    ours = idle if who in ("both", "ours") else None
    theirs = idle if who in ("both", "proton") else None
    pair = interop(role, [], idle_timeout=ours, proton_idle_timeout=theirs)
    driver = pair.start()
    assert pair.conn.remote is not None
    # Both advertise half their own time-out (2.4.5 recommends it).
    assert pair.conn.remote.idle_time_out == (500 if theirs else None)
    assert pair.peer.remote_idle_timeout == pytest.approx(idle / 2 if ours else 0.0)
    end = driver.now() + 3 * idle
    pair.wait(lambda: driver.now() >= end)
    assert pair.conn.state is a.ConnectionState.OPENED
    assert not pair.peer.closed and pair.peer.errors == [] and pair.app.errors == []
    assert not any(isinstance(e, a.IdleTimedOut) for e in driver.events)
    pair.conn.close()
    pair.wait_for(a.ConnectionEnded)


@pytest.mark.parametrize("closer", ["we", "proton"])
def test_clean_close(role: str, closer: str, interop: Callable[..., Interop]) -> None:
    pair = interop(role, [Spec("up", True), Spec("down", False)])
    driver = pair.start()
    peer = pair.peer
    if closer == "we":
        # Detach and end at once: Proton's detaches cross our end and arrive in END_SENT.
        for link in pair.app.links.values():
            link.detach()
        assert pair.app.session is not None
        pair.app.session.end()
        pair.wait_for(a.SessionEnded)
        assert sorted(name for name, _ in peer.closed_links) == ["down", "up"]
        assert peer.closed_sessions == [None]
        pair.conn.close()
        pair.wait_for(a.ConnectionEnded)
        pair.wait(lambda: peer.closed)
        assert peer.remote_close == [None]
        assert all(condition is None for _, condition in peer.closed_links)
    else:

        def close_all() -> None:
            for link in peer.links.values():
                link.close()
            peer.connection.session_head(0).close()
            peer.connection.close()

        peer.call(close_all)
        pair.wait_for(a.ConnectionEnded)
        detached = [e for e in driver.events if isinstance(e, a.LinkDetached)]
        assert sorted(e.link.name for e in detached) == ["down", "up"]
        assert all(e.closed and e.error is None for e in detached)
        assert [e.error for e in driver.events if isinstance(e, a.SessionEnded)] == [None]
        assert [e.error for e in driver.events if isinstance(e, a.ConnectionClosed)] == [None]
        pair.wait(lambda: peer.closed)
    assert pair.conn.state is a.ConnectionState.END
    assert all(link.state is a.LinkState.DETACHED for link in pair.app.links.values())
    pair.wait(lambda: driver.eof)  # Proton hangs up once the closes are exchanged
    assert peer.errors == [] and pair.app.errors == []


# -- a peer that stops answering ---------------------------------------------------------------


def _read_until(sock: socket.socket, engine: a.Connection, kind: type, timeout: float) -> Any:
    """Feed what ``sock`` delivers to ``engine`` until it reports ``kind``."""
    end = time.monotonic() + timeout
    while True:
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"no {kind.__name__}")
        sock.settimeout(remaining)
        data = sock.recv(65536)
        for event in engine.receive_data(data, time.monotonic()):
            if isinstance(event, kind):
                return event
        if not data:
            raise ConnectionError(f"closed before {kind.__name__}")


def test_a_silent_peer_is_detected_by_our_idle_timeout(role: str) -> None:
    """The peer completes the header and open exchange, then says nothing more: our engine
    gives up after its idle time-out, reports it, and sends a close with
    amqp:resource-limit-exceeded."""
    idle = 0.5
    ours = a.Connection(client=role == "client", idle_timeout=idle)
    # The silent peer is an engine of ours too, used only to speak and read the bytes.
    silent = a.Connection(client=role != "client", container_id="silent")
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        if role == "client":
            driver = SocketDriver.connect(ours, ("127.0.0.1", port))
            raw, _ = listener.accept()
            ours.open(now=driver.now())
            driver.flush()
        else:
            raw = socket.create_connection(("127.0.0.1", port), timeout=WAIT)
            driver = SocketDriver.accept(ours, listener)
            silent.open(now=time.monotonic())
            raw.sendall(silent.data_to_send())
            driver.run_until(lambda: ours.state is a.ConnectionState.OPEN_RCVD, WAIT)
            ours.open()
            driver.flush()
    with raw, driver:
        _read_until(raw, silent, a.ConnectionOpened, WAIT)
        if role == "client":
            silent.open()
            raw.sendall(silent.data_to_send())
        driver.run_until(lambda: ours.state is a.ConnectionState.OPENED, WAIT)
        opened_at = driver.now()
        driver.run_until(lambda: any(isinstance(e, a.IdleTimedOut) for e in driver.events), WAIT)
        waited = driver.now() - opened_at
        assert idle * 0.9 <= waited < idle + 2.0
        assert ours.state is a.ConnectionState.END
        assert isinstance(driver.events[-1], a.ConnectionEnded)
        driver.flush()
        closed = _read_until(raw, silent, a.ConnectionClosed, WAIT)
        assert closed.error is not None
        assert closed.error.condition == "amqp:resource-limit-exceeded"


def test_the_driver_bounds_its_waits_and_sees_the_peer_hang_up() -> None:
    """The driver's own contract: run_until gives up after its timeout, and reports a
    transport the peer closed (the engine ends)."""
    conn = a.Connection(idle_timeout=None)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        driver = SocketDriver.connect(conn, listener.getsockname())
        raw, _ = listener.accept()
    with driver:
        conn.open(now=driver.now())
        driver.flush()
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            driver.run_until(lambda: False, 0.2)
        assert 0.2 <= time.monotonic() - started < 2.0
        assert raw.recv(8) == a.AMQP_HEADER
        raw.close()
        with pytest.raises(ConnectionError):
            driver.run_until(lambda: False, WAIT)
        assert driver.eof and conn.state is a.ConnectionState.END
        assert isinstance(driver.events[-1], a.ConnectionEnded)
    assert driver.closed
