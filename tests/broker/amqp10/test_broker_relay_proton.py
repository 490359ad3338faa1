"""The anonymous relay and durable subscriptions as Qpid Proton's own programs use them,
against ``amqp-sansio broker`` started as a user starts it (``--port`` only; ``--store DIR``
too for the restart): a request/response server that replies through an anonymous sender
once it sees ``ANONYMOUS-RELAY`` in the broker's offered capabilities (the pattern of
Proton's ``server.py`` example) and a client with a dynamic reply-to receiver; a durable
subscriber (``DurableSubscription``) that detaches, misses messages, and comes back for
them, also across a broker restart (SIGTERM, then a new broker on the same port and store).
Proton's clients keep their defaults."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters import sockets
from support.broker_process import BrokerProcess

import amqp_sansio as a

proton = pytest.importorskip("proton", reason="python-qpid-proton is not installed")
from proton import Message  # noqa: E402
from proton.handlers import MessagingHandler  # noqa: E402
from proton.reactor import Container, DurableSubscription  # noqa: E402

WAIT = 20.0


class Broker(BrokerProcess):
    """``amqp-sansio broker --port P [--store DIR]``, the command a user types."""

    @property
    def address(self) -> str:
        """``host:port``, as Proton's ``Container.connect`` takes it."""
        return f"127.0.0.1:{self.port}"


@pytest.fixture
def start() -> Iterator[Any]:
    started: list[Broker] = []

    def run(port: int = 0, store: Path | None = None) -> Broker:
        broker = Broker(port=port, store=store, wait=WAIT)
        started.append(broker)
        return broker

    yield run
    for broker in started:
        broker.stop()


def run(*containers: Container) -> None:
    """Run Proton's containers (each in a thread of its own, as separate programs) until
    their handlers close their connections (bounded)."""
    errors: list[BaseException] = []

    def target(container: Container) -> None:
        try:
            container.run()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(c,), daemon=True) for c in containers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
        if thread.is_alive():
            for other in containers:
                other.stop()
            raise AssertionError("Proton's container did not finish in time")
    if errors:
        raise errors[0]


# -- request/response through the anonymous relay ------------------------------------------


class Server(MessagingHandler):  # type: ignore[misc]
    """Proton's server.py pattern: requests from a queue, each reply sent to its reply-to
    through one anonymous sender, if the broker offers ANONYMOUS-RELAY."""

    def __init__(self, url: str, address: str, outcomes: int) -> None:
        super().__init__()
        self.url = url
        self.address = address
        self.expect = outcomes
        self.relay: Any = None
        self.senders: dict[str, Any] = {}
        self.outcomes: list[Any] = []
        self.offered: Any = None

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url)
        self.receiver = event.container.create_receiver(self.conn, self.address)

    def on_connection_opened(self, event: Any) -> None:
        self.offered = event.connection.remote_offered_capabilities
        if self.offered and "ANONYMOUS-RELAY" in self.offered:
            self.relay = event.container.create_sender(self.conn, None)

    def on_message(self, event: Any) -> None:
        request = event.message
        sender = self.relay
        assert sender is not None, "the broker offers no ANONYMOUS-RELAY"
        sender.send(
            Message(
                address=request.reply_to,
                body=request.body.upper(),
                correlation_id=request.correlation_id,
            )
        )

    def on_accepted(self, event: Any) -> None:
        self._outcome("accepted")

    def on_rejected(self, event: Any) -> None:
        self._outcome(event.delivery.remote.condition.name)

    def _outcome(self, outcome: str) -> None:
        self.outcomes.append(outcome)
        if len(self.outcomes) == self.expect:
            self.conn.close()


class Client(MessagingHandler):  # type: ignore[misc]
    """Requests with a dynamic reply-to (Proton's client.py pattern)."""

    def __init__(self, url: str, address: str, requests: list[str]) -> None:
        super().__init__()
        self.url = url
        self.address = address
        self.requests = requests
        self.replies: list[tuple[Any, str]] = []

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url)
        self.sender = event.container.create_sender(self.conn, self.address)
        self.receiver = event.container.create_receiver(self.conn, None, dynamic=True)

    def on_link_opened(self, event: Any) -> None:
        if event.receiver == self.receiver:
            reply_to = self.receiver.remote_source.address
            for i, body in enumerate(self.requests):
                self.sender.send(Message(reply_to=reply_to, correlation_id=i, body=body))

    def on_message(self, event: Any) -> None:
        self.replies.append((event.message.correlation_id, event.message.body))
        if len(self.replies) == len(self.requests):
            self.conn.close()


def test_proton_request_response_through_the_anonymous_relay(start: Any) -> None:
    broker = start()
    server = Server(broker.address, "requests", outcomes=3)
    client = Client(broker.address, "requests", ["one", "two", "three"])
    run(Container(server), Container(client))
    assert "ANONYMOUS-RELAY" in server.offered
    assert client.replies == [(0, "ONE"), (1, "TWO"), (2, "THREE")]
    assert server.outcomes == ["accepted"] * 3


class TypoServer(Server):
    """Replies once to a mistyped address, then to the right one."""

    def on_message(self, event: Any) -> None:
        request = event.message
        self.relay.send(Message(address=request.reply_to + "-typo", body="lost"))
        self.relay.send(Message(address=request.reply_to, body=request.body.upper()))


def test_proton_reply_to_an_unknown_address_is_rejected_not_found(start: Any) -> None:
    broker = start()
    server = TypoServer(broker.address, "requests", outcomes=2)
    client = Client(broker.address, "requests", ["x"])
    run(Container(server), Container(client))
    assert client.replies == [(None, "X")]
    assert sorted(server.outcomes) == ["accepted", "amqp:not-found"]


# -- durable subscriptions ----------------------------------------------------------------


class Subscriber(MessagingHandler):  # type: ignore[misc]
    """A durable subscriber (Proton's DurableSubscription: durable unsettled-state, expiry
    never) that takes ``expect`` messages and then detaches (``detach``: without closing
    the link) or closes it, and closes its connection."""

    def __init__(self, url: str, expect: int, *, detach: bool = True) -> None:
        super().__init__()
        self.url = url
        self.expect = expect
        self.detach = detach
        self.got: list[str] = []
        self.counts: list[int] = []
        self.opened = threading.Event()

    def on_start(self, event: Any) -> None:
        self.conn = event.container.connect(self.url)
        self.receiver = event.container.create_receiver(
            self.conn, "topic/news", name="sub1", options=DurableSubscription()
        )

    def on_link_opened(self, event: Any) -> None:
        self.opened.set()
        if self.expect == 0:
            self._done()

    def on_message(self, event: Any) -> None:
        self.got.append(event.message.body)
        self.counts.append(event.message.delivery_count)
        if len(self.got) == self.expect:
            self._done()

    def _done(self) -> None:
        if self.detach:
            self.receiver.detach()
        else:
            self.receiver.close()
        self.conn.close()


def publish(url: str, *bodies: str) -> None:
    with sockets.connect(url, timeout=WAIT) as conn:
        sender = conn.sender("topic/news")
        for body in bodies:
            outcome = sender.send(
                a.Message(header=a.Header(durable=True), body=a.AmqpValue(body)), timeout=WAIT
            )
            assert isinstance(outcome, a.Accepted)


def subscribe(url: str, expect: int, *, detach: bool = True) -> Subscriber:
    subscriber = Subscriber(url, expect, detach=detach)
    run(Container(subscriber, container_id="news-reader"))
    return subscriber


def test_proton_durable_subscriber_gets_what_was_published_while_away(start: Any) -> None:
    broker = start()
    assert subscribe(broker.address, 0).got == []  # subscribes, detaches, goes
    publish(broker.url, "m1", "m2", "m3")
    back = subscribe(broker.address, 3, detach=False)  # comes back, then unsubscribes
    assert back.got == ["m1", "m2", "m3"]
    publish(broker.url, "m4")
    assert subscribe(broker.address, 0).got == []  # closed: gone, m4 was not kept
    publish(broker.url, "m5")
    assert subscribe(broker.address, 1).got == ["m5"]


def test_proton_durable_subscriber_across_a_broker_restart(start: Any, tmp_path: Path) -> None:
    store = tmp_path / "store"
    broker = start(0, store)
    subscribe(broker.address, 0)
    publish(broker.url, "m1", "m2")
    broker.stop()
    broker = start(broker.port, store)
    back = subscribe(broker.address, 2)
    assert back.got == ["m1", "m2"]
