"""Our engine and Qpid Proton (python-qpid-proton) wired over a loopback socket, for the
interop tests of tests/interop/ (test_interop_proton.py and its SASL, TLS and transaction
companions).

Our engine, driven by :class:`amqp_sansio.adapters.sockets.SocketDriver` in the test's
thread, talks to a Proton ``Container`` run in a thread of its own: our client against a
Proton listener, or a Proton client against our server on an accepted socket. Each side is
scripted by the same link specifications (:class:`Spec`); everything Proton sees is
recorded by :class:`ProtonPeer` in its thread, and :class:`Interop` wires the two together.
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
        self.updates: dict[str, list[a.events.DeliveryUpdated]] = defaultdict(list)
        self.errors: list[a.Event] = []

    def __call__(self, event: a.Event) -> None:
        if isinstance(event, a.events.ConnectionOpened):
            if self.server:
                self.conn.open()
        elif isinstance(event, a.events.SessionBegun):
            self.session = event.session
            if event.session.state is a.SessionState.BEGIN_RCVD:
                event.session.begin()
        elif isinstance(event, a.events.LinkAttached):
            link = event.link
            self.links[link.name] = link
            if link.state is a.LinkState.ATTACH_RCVD:
                link.attach()
            spec = self.specs[link.name]
            if isinstance(link, a.Receiver) and spec.window:
                link.flow(spec.window)
        elif isinstance(event, a.events.CreditChanged):
            if isinstance(event.link, a.Sender):
                self.pump(event.link)
        elif isinstance(event, a.events.DeliveryReceived):
            self._received(event)
        elif isinstance(event, a.events.DeliveryUpdated):
            self.updates[event.link.name].append(event)
            if event.settled and not event.delivery.settled:
                event.link.settle(event.delivery)  # the peer has forgotten it: so do we
        elif isinstance(event, a.events.ProtocolError | a.events.IdleTimedOut):
            self.errors.append(event)

    def _received(self, event: a.events.DeliveryReceived) -> None:
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


def interop_pairs() -> Iterator[Callable[..., Interop]]:
    made: list[Interop] = []

    def make(*args: Any, **kwargs: Any) -> Interop:
        pair = Interop(*args, **kwargs)
        made.append(pair)
        return pair

    yield make
    for pair in made:
        pair.finish()


def poll(predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Whether ``predicate()`` comes true within ``timeout`` seconds (asked every 20 ms):
    for what Proton's container thread does while the test's thread waits."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def settled_count(updates: list[a.events.DeliveryUpdated]) -> int:
    return sum(1 for u in updates if u.settled)
