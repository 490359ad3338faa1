"""A small in-memory broker on the adapters' server side (``listen``), written once against
the shared server links, so it runs under every adapter.

Messages sent to an address wait in that address's queue until a receiver of it has
credit; temporary (dynamic) nodes get addresses of their own. Addresses starting with
``hold/`` grant no credit (a sender waits); ``unsettled/`` never settles what arrives (a
sender waits for the outcome); ``reject/`` rejects everything; ``missing/`` is refused.
``outcomes`` records what receivers said of the messages sent to them. A message sent to a
receiver whose link (or connection) goes before it settles the message goes back to the
front of its queue (at-least-once), and the queues outlive connections.
"""

from __future__ import annotations

import itertools
from collections import defaultdict, deque

import amqp_sansio as a
from amqp_sansio.client.amqp10 import IncomingLink, OutgoingLink, ServerLink
from amqp_sansio.client.ops import Delivery


class Broker:
    def __init__(self) -> None:
        self.queues: dict[str, deque[bytes]] = defaultdict(deque)
        self.consumers: dict[str, list[OutgoingLink]] = defaultdict(list)
        self.links: list[ServerLink] = []
        self.outcomes: list[object] = []
        #: What each receiver has not settled yet: its address and bytes.
        self.unsettled: dict[OutgoingLink, dict[a.Delivery, bytes]] = defaultdict(dict)
        self._temporary = itertools.count(1)

    def on_link(self, link: ServerLink) -> None:
        self.links.append(link)
        if link.dynamic:
            link.accept(address=f"temp/{next(self._temporary)}")
        address = link.address or ""
        if address.startswith("missing/"):
            link.refuse()
            return
        if isinstance(link, IncomingLink):
            if address.startswith("hold/"):
                link.credit = 0
            if address.startswith("unsettled/"):
                link.auto_accept = False
            link.on_delivery = self._incoming(link)
        elif isinstance(link, OutgoingLink):
            self.consumers[address].append(link)
            link.on_credit = lambda _: self._pump(address)
            link.on_detach = self._gone
            link.on_outcome = self._outcome(link)

    def _incoming(self, link: IncomingLink):  # type: ignore[no-untyped-def]
        def on_delivery(delivery: Delivery) -> None:
            address = link.address
            if address is None:  # an anonymous sender: the message says where
                address = delivery.message.properties.to if delivery.message.properties else ""
            if address.startswith("unsettled/"):
                return
            if address.startswith("reject/"):
                delivery.reject(a.Error(condition=a.Symbol("amqp:not-allowed")))
                return
            self.queues[address].append(delivery.data)
            self._pump(address)

        return on_delivery

    def _outcome(self, link: OutgoingLink):  # type: ignore[no-untyped-def]
        def on_outcome(delivery: a.Delivery, outcome: object) -> None:
            self.outcomes.append(outcome)
            self.unsettled[link].pop(delivery, None)

        return on_outcome

    def _gone(self, link: ServerLink) -> None:
        for consumers in self.consumers.values():
            if link in consumers:
                consumers.remove(link)
        if isinstance(link, OutgoingLink):
            back = self.unsettled.pop(link, {})
            if back and link.address is not None:
                self.queues[link.address].extendleft(reversed(back.values()))
                self._pump(link.address)

    def _pump(self, address: str) -> None:
        queue = self.queues[address]
        consumers = self.consumers[address]
        while queue:
            ready = [c for c in consumers if c.credit > 0]
            if not ready:
                return
            for consumer in ready:
                if not queue:
                    return
                data = queue.popleft()
                delivery = consumer.send_data(data)
                if not delivery.settled:
                    self.unsettled[consumer][delivery] = data
