"""A small in-process broker for tests and examples: queues of messages by address, served
over loopback by our engine in the server role, one thread per connection.

Not a production broker: messages live in memory, are not durable, and a receiver waiting
on an empty queue is woken by polling (every :data:`POLL` seconds). What it does:

* SASL with ANONYMOUS (unless ``allow_anonymous=False``) and PLAIN against ``users``
  (a dict of user to password), offered over plain TCP too (it is for loopback); or no
  SASL at all (``sasl=False``);
* TLS from the first byte (``amqps``) with an :class:`ssl.SSLContext` for the server;
* a client's sending link to any address (not in ``refuse``) puts each message on that
  address's queue and accepts it (or rejects it, for an address in ``reject``);
* a client's receiving link from any address takes messages off its queue as credit
  allows; a message released or modified by the client goes back to the front.

::

    with TestBroker(users={"user": "secret"}) as broker:
        url = broker.url("orders", user="user", password="secret")
        ...
        assert len(broker.queues["orders"]) == 10
"""

from __future__ import annotations

import hmac
import selectors
import socket
import ssl
import threading
from collections import defaultdict, deque
from collections.abc import Collection
from types import TracebackType
from typing import Any

from amqp_sansio.adapters.sockets import ByteStream, SocketDriver

import amqp_sansio as amqp

__all__ = ["TestBroker"]

#: How often a connection's thread looks for new messages for its receivers, seconds.
POLL = 0.01
#: Credit the broker keeps open on a client's sending link.
WINDOW = 100


#: Connection states in which the broker may still answer.
_OPEN = frozenset({amqp.ConnectionState.OPENED, amqp.ConnectionState.CLOSE_RCVD})


class _Passwords:
    def __init__(self, users: dict[str, str]) -> None:
        self._users = users

    def check_password(self, username: str, password: str) -> bool:
        expected = self._users.get(username)
        return expected is not None and hmac.compare_digest(expected, password)


class TestBroker:
    """Listen on ``host`` (an ephemeral port unless ``port`` is given) and serve every
    connection in a thread of its own until :meth:`stop`."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        users: dict[str, str] | None = None,
        allow_anonymous: bool = True,
        sasl: bool = True,
        tls: ssl.SSLContext | None = None,
        refuse: Collection[str] = (),
        reject: Collection[str] = (),
    ) -> None:
        self.host = host
        self.users = dict(users or {})
        self.allow_anonymous = allow_anonymous
        self.sasl = sasl
        self.tls = tls
        self.refuse = frozenset(refuse)
        self.reject = frozenset(reject)
        #: The messages (encoded) waiting on each address.
        self.queues: defaultdict[str, deque[bytes]] = defaultdict(deque)
        #: Who authenticated, per connection, in order.
        self.identities: list[str | None] = []
        self.lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server((host, port))
        self.port: int = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []

    def url(self, address: str, *, user: str | None = None, password: str | None = None) -> str:
        """An ``amqp://`` (or ``amqps://``) URL for ``address`` at this broker."""
        scheme = "amqps" if self.tls is not None else "amqp"
        auth = ""
        if user is not None:
            auth = user + (f":{password}" if password is not None else "") + "@"
        return f"{scheme}://{auth}{self.host}:{self.port}/{address}"

    # -- running -----------------------------------------------------------------------------

    def start(self) -> TestBroker:
        thread = threading.Thread(target=self._accept_loop, name="test-broker", daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(timeout=5)
        self._listener.close()

    def __enter__(self) -> TestBroker:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            while not self._stop.is_set():
                if not sel.select(0.05):
                    continue
                try:
                    sock, _ = self._listener.accept()
                except OSError:  # pragma: no cover - the listener closed under us
                    return
                thread = threading.Thread(
                    target=self._serve, args=(sock,), name="test-broker-conn", daemon=True
                )
                thread.start()
                self._threads.append(thread)

    def _serve(self, sock: socket.socket) -> None:
        sasl = None
        if self.sasl:
            sasl = amqp.sasl.ServerAuthenticator(
                _Passwords(self.users) if self.users else None,
                allow_anonymous=self.allow_anonymous,
                allow_cleartext_secrets=True,
            )
        conn = amqp.Connection(client=False, container_id="test-broker", sasl=sasl)
        stream: ByteStream = conn
        if self.tls is not None:
            stream = amqp.TLSLayer(conn, self.tls, client=False, negotiate=False)
        peer = _Peer(self, conn)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        driver = SocketDriver(stream, sock, on_event=peer.on_event)
        with driver:
            while not self._stop.is_set() and not driver.closed and not driver.ended:
                if driver.eof and not driver.connection.data_to_send():
                    break
                driver.step(POLL)
                driver.events.clear()
                peer.feed()
            if conn.state is amqp.ConnectionState.OPENED:  # stopped: say so to the client
                conn.close()


class _Peer:
    """The broker's side of one connection: answers opens, begins and attaches; moves
    messages between the links and the queues."""

    def __init__(self, broker: TestBroker, conn: amqp.Connection) -> None:
        self.broker = broker
        self.conn = conn
        self.outgoing: list[amqp.Sender] = []
        #: What each unsettled outgoing delivery carried, to requeue it if released.
        self.in_flight: dict[amqp.Delivery, tuple[str, bytes]] = {}

    def on_event(self, event: amqp.Event) -> None:
        broker = self.broker
        if isinstance(event, amqp.events.Authenticated):
            with broker.lock:
                broker.identities.append(event.identity)
        elif isinstance(event, amqp.events.ConnectionOpened):
            self.conn.open()
        elif isinstance(event, amqp.events.SessionBegun):
            if event.session.state is amqp.SessionState.BEGIN_RCVD:
                event.session.begin()
        elif isinstance(event, amqp.events.LinkAttached):
            self._attached(event.link)
        elif isinstance(event, amqp.events.DeliveryReceived) and event.complete:
            self._received(event)
        elif isinstance(event, amqp.events.DeliveryUpdated) and event.settled:
            sent = self.in_flight.pop(event.delivery, None)
            if sent is not None and isinstance(event.state, amqp.Released | amqp.Modified):
                with broker.lock:
                    broker.queues[sent[0]].appendleft(sent[1])
        elif isinstance(event, amqp.events.LinkDetached) and event.link in self.outgoing:
            self.outgoing.remove(event.link)

    def _attached(self, link: amqp.Link) -> None:
        if link.state is not amqp.LinkState.ATTACH_RCVD:
            return
        remote = link.remote
        assert remote is not None
        terminus = remote.target if isinstance(link, amqp.Receiver) else remote.source
        address = getattr(terminus, "address", None)
        if not isinstance(address, str) or address in self.broker.refuse:
            link.refuse(
                amqp.Error(
                    condition=amqp.Symbol("amqp:not-found"), description=f"no node {address!r}"
                )
            )
            return
        link.attach()
        if isinstance(link, amqp.Receiver):
            link.flow(WINDOW)
        else:
            assert isinstance(link, amqp.Sender)
            self.outgoing.append(link)

    def _received(self, event: amqp.events.DeliveryReceived) -> None:
        link = event.link
        assert isinstance(link, amqp.Receiver)
        address = getattr(link.remote.target if link.remote else None, "address", "")
        state: Any
        if address in self.broker.reject:
            state = amqp.Rejected(
                error=amqp.Error(condition=amqp.Symbol("amqp:precondition-failed"))
            )
        else:
            with self.broker.lock:
                self.broker.queues[address].append(event.data)
            state = amqp.Accepted()
        if link.state is not amqp.LinkState.ATTACHED or self.conn.state not in _OPEN:
            return  # the client has gone already: what it sent is kept, nothing to answer
        link.settle(event.delivery, state)
        if link.link_credit * 2 <= WINDOW:
            link.flow(WINDOW)

    def feed(self) -> None:
        """Send what the queues hold to the client's receivers, as their credit allows."""
        broker = self.broker
        if self.conn.state is not amqp.ConnectionState.OPENED:
            return
        for link in self.outgoing:
            if link.state is not amqp.LinkState.ATTACHED or link.link_credit <= 0:
                continue
            address = getattr(link.remote.source if link.remote else None, "address", "")
            with broker.lock:
                queue = broker.queues[address]
                while link.link_credit > 0 and queue:
                    data = queue.popleft()
                    delivery = link.send(data)
                    if not delivery.settled:
                        self.in_flight[delivery] = (address, data)
