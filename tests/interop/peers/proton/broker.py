"""A small message broker written with Qpid Proton's event-driven API, as a Proton user writes
one: ``Container.listen(url)`` with the listener's defaults, a queue per address, senders
store messages, receivers are served round robin as their credit allows, a dynamic source
gets a fresh address, and a sender without a target address is an anonymous relay: each
of its messages goes to the address in its ``to`` (offered as ``ANONYMOUS-RELAY``).

    python broker.py amqp://127.0.0.1:PORT

It prints ``listening`` once the listener is up, and runs until SIGTERM. On its
way out it prints one JSON line: how many messages it stored and delivered."""

from __future__ import annotations

import collections
import json
import signal
import sys
import uuid
from typing import Any

from proton.handlers import MessagingHandler
from proton.reactor import ApplicationEvent, Container, EventInjector


class Queue:
    def __init__(self) -> None:
        self.messages: collections.deque[Any] = collections.deque()
        self.consumers: list[Any] = []

    def dispatch(self, stats: dict[str, int]) -> None:
        # Round robin over the consumers that have credit, until nothing more can move.
        while self.messages:
            ready = [c for c in self.consumers if c.credit > 0]
            if not ready:
                return
            for consumer in ready:
                if not self.messages:
                    return
                consumer.send(self.messages.popleft())
                stats["delivered"] += 1


class Broker(MessagingHandler):
    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url
        self.queues: dict[str, Queue] = {}
        self.stats = {"stored": 0, "delivered": 0}

    def queue(self, address: str) -> Queue:
        return self.queues.setdefault(address, Queue())

    def on_start(self, event: Any) -> None:
        self.container = event.container
        self.acceptor = event.container.listen(self.url)
        print("listening", flush=True)

    def on_connection_opening(self, event: Any) -> None:
        event.connection.offered_capabilities = ["ANONYMOUS-RELAY"]

    def on_link_opening(self, event: Any) -> None:
        link = event.link
        if link.is_sender:  # the peer receives from us
            if link.remote_source.dynamic:
                address = f"dynamic-{uuid.uuid4()}"
            else:
                address = link.remote_source.address
            link.source.address = address
            self.queue(address).consumers.append(link)
        else:
            link.target.address = link.remote_target.address

    def unsubscribe(self, link: Any) -> None:
        if link.is_sender:
            queue = self.queues.get(link.source.address)
            if queue is not None and link in queue.consumers:
                queue.consumers.remove(link)

    def on_link_closing(self, event: Any) -> None:
        self.unsubscribe(event.link)

    def forget(self, connection: Any) -> None:
        link = connection.link_head(0)
        while link is not None:
            self.unsubscribe(link)
            link = link.next(0)

    def on_connection_closing(self, event: Any) -> None:
        self.forget(event.connection)

    def on_disconnected(self, event: Any) -> None:
        self.forget(event.connection)

    def on_sendable(self, event: Any) -> None:
        self.queue(event.link.source.address).dispatch(self.stats)

    def on_stop(self, event: Any) -> None:
        self.acceptor.close()
        self.container.stop()

    def on_message(self, event: Any) -> None:
        address = event.link.target.address or event.message.address
        self.queue(address).messages.append(event.message)
        self.stats["stored"] += 1
        self.queue(address).dispatch(self.stats)


def main() -> None:
    broker = Broker(sys.argv[1])
    container = Container(broker)
    # A signal handler may not touch the container; an injected event wakes its loop.
    wakeup = EventInjector()
    container.selectable(wakeup)
    signal.signal(signal.SIGTERM, lambda signum, frame: wakeup.trigger(ApplicationEvent("stop")))
    container.run()
    print(json.dumps(broker.stats), flush=True)


if __name__ == "__main__":
    main()
