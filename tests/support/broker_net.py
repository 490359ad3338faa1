"""Clients (our engine) and a core broker wired in memory, for the broker's core tests.

``Net.pump()`` moves bytes between every client and its broker connection until all are
quiet, cutting them into chunks (random sizes, or ``chunk`` bytes). The clock is simulated:
``net.now`` (engine clock) and ``net.wall`` (message expiry) move only when a test moves them.
"""

from __future__ import annotations

import math
import random
from typing import Any

import amqp_sansio as a
import amqp_sansio.engine.amqp10
from amqp_sansio.broker import Broker, BrokerConfig, BrokerConnection


class Client:
    def __init__(self, net: Net, engine: a.Connection, conn: BrokerConnection) -> None:
        self.net = net
        self.engine = engine
        self.conn = conn
        self.events: list[a.Event] = []
        self.session: a.Session | None = None
        #: The transport is gone (Net.lose): nothing moves any more.
        self.gone = False

    def begin(self) -> a.Session:
        self.session = self.engine.begin()
        self.net.pump()
        return self.session

    def sender(self, address: str | None, **kwargs: Any) -> a.Sender:
        session = self.session or self.begin()
        target = kwargs.pop("target", a.Target(address=address))
        link = session.attach_sender(f"s-{len(session.links)}", target=target, **kwargs)
        self.net.pump()
        return link

    def receiver(self, address: str | None, credit: int = 0, **kwargs: Any) -> a.Receiver:
        session = self.session or self.begin()
        source = kwargs.pop("source", a.Source(address=address))
        link = session.attach_receiver(f"r-{len(session.links)}", source=source, **kwargs)
        self.net.pump()
        if credit and link.state is a.LinkState.ATTACHED:
            link.flow(credit)
            self.net.pump()
        return link

    def send(self, sender: a.Sender, message: a.Message | bytes, **kwargs: Any) -> a.Delivery:
        data = message.encode() if isinstance(message, a.Message) else message
        delivery = sender.send(data, **kwargs)
        self.net.pump()
        return delivery

    def received(self, link: a.Link | None = None) -> list[a.events.DeliveryReceived]:
        """The deliveries received (on ``link``) since the last call, taken off the list."""
        got = [
            e
            for e in self.events
            if isinstance(e, a.events.DeliveryReceived) and (link is None or e.link is link)
        ]
        taken = {id(e) for e in got}
        self.events = [e for e in self.events if id(e) not in taken]
        return got

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def body(event: a.events.DeliveryReceived) -> Any:
    b = a.Message.decode(event.data).body
    return b.value if isinstance(b, a.Data | a.AmqpValue) else b


class Net:
    def __init__(
        self,
        config: BrokerConfig | None = None,
        *,
        chunk: int | None = None,
        seed: int = 0,
        broker: Broker | None = None,
    ) -> None:
        self.broker = broker or Broker(config or BrokerConfig())
        self.chunk = chunk
        self.rnd = random.Random(seed)
        self.now = 100.0
        self.wall = 1_700_000_000.0
        self.clients: list[Client] = []

    def connect(self, **kwargs: Any) -> Client:
        kwargs.setdefault("container_id", f"c{len(self.clients)}")
        address = kwargs.pop("address", None)  # (the client's source address, if any)
        engine = a.Connection(client=True, **kwargs)
        conn = self.broker.accept(self.now, wall=self.wall, address=address)
        client = Client(self, engine, conn)
        self.clients.append(client)
        engine.open(now=self.now)
        self.pump()
        return client

    def _pieces(self, data: bytes) -> list[bytes]:
        out, i = [], 0
        while i < len(data):
            n = self.chunk or self.rnd.randint(1, max(1, min(len(data), 2048)))
            out.append(data[i : i + n])
            i += n
        return out

    def pump(self, limit: int = 100_000) -> None:
        for _ in range(limit):
            moved = False
            for c in self.clients:
                if c.gone:
                    continue
                out = c.engine.data_to_send()
                if out:
                    moved = True
                    for piece in self._pieces(out):
                        c.conn.receive_data(piece, self.now, wall=self.wall)
                back = c.conn.data_to_send()
                if back:
                    moved = True
                    for piece in self._pieces(back):
                        c.events += c.engine.receive_data(piece, self.now)
            if self.broker.dispatching:  # as the server does once a turn is written
                self.broker.dispatch_more()
                moved = True
            if not moved:
                return
        raise AssertionError("never quiet")

    def lose(self, client: Client) -> None:
        """The client's transport breaks."""
        client.gone = True
        client.conn.connection_lost(self.now, wall=self.wall)
        self.pump()

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.wall += seconds
        self.broker.expire(self.wall)
        for c in self.clients:
            if not c.gone:
                c.conn.handle_timer(self.now, wall=self.wall)
                c.events += c.engine.handle_timer(self.now)
        self.pump()

    def live(self, seconds: float, step: float = 10.0) -> None:
        """Time passes with every client serving its timers as it goes (heartbeats, so the
        broker's idle time-out cuts none of them), in steps of at most ``step`` seconds."""
        steps = max(1, math.ceil(seconds / step))
        for _ in range(steps):
            self.advance(seconds / steps)


# -- steps the broker's tests share -----------------------------------------------------------


def msg(value: bytes, **header: object) -> a.Message:
    return a.Message(header=a.Header(**header) if header else None, body=value)  # type: ignore[arg-type]


def publish(client: Client, address: str, *values: bytes, **header: object) -> a.Sender:
    sender = client.sender(address)
    for v in values:
        client.send(sender, msg(v, **header))
    return sender


def accept_all(client: Client, link: a.Receiver) -> list[object]:
    got = client.received(link)
    for e in got:
        link.settle(e.delivery, a.Accepted())
    client.net.pump()
    return [body(e) for e in got]


def controller(client: Client) -> a.Controller:
    session = client.session or client.begin()
    ctl = session.attach_controller("ctl")
    client.net.pump()
    return ctl


def declare(client: Client, ctl: a.Controller) -> a.Transaction:
    txn = ctl.declare()
    client.net.pump()
    assert txn.state is a.engine.amqp10.states.TransactionState.ACTIVE
    return txn


def discharge(client: Client, ctl: a.Controller, txn: a.Transaction, *, fail: bool) -> None:
    ctl.discharge(txn, fail=fail)
    client.net.pump()
