"""A 0-9-1 client engine wired to the broker's 0-9-1 connection through bytes, on a
simulated clock (tests/broker/amqp091)."""

from __future__ import annotations

from typing import Any

from amqp_sansio.broker import Broker, BrokerConnection091
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import Connection, Role
from amqp_sansio.engine.amqp091 import events as ev

__all__ = ["Client"]


class Client:
    """A 0-9-1 client engine wired to a broker connection."""

    def __init__(self, broker: Broker, **options: Any) -> None:
        self.broker = broker
        self.now: float = options.pop("now", 100.0)
        #: The broker's wall clock for what this client sends (a test moves it).
        self.wall = 1e9
        self.engine = Connection(Role.CLIENT, **options)
        self.conn: BrokerConnection091 = broker.accept_091(self.now, wall=1e9, address="10.0.0.1")
        self.events: list[ev.Event] = []
        self.engine.start(self.now)
        self.pump()

    def pump(self) -> None:
        for _ in range(1000):
            moved = False
            data = self.engine.data_to_send()
            if data:
                moved = True
                self.conn.receive_data(data, self.now, wall=self.wall)
            for other in self.broker.pending():
                back = other.data_to_send()
                if back and other is self.conn:
                    moved = True
                    self.events += self.engine.receive_data(back, self.now)
            if not moved:
                return
        raise AssertionError("never quiet")

    def channel(self) -> int:
        number = self.engine.open_channel()
        self.pump()
        return number

    def call(self, channel: int, method: spec.Method) -> list[ev.Event]:
        self.events = []
        self.engine.send_method(channel, method)
        self.pump()
        return self.events

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]
