"""The broker's resource alarm (``BrokerConfig.memory_high_watermark``, RabbitMQ's memory
alarm on the bytes of messages held), I/O-free on a simulated clock: 0-9-1 clients that
announced ``connection.blocked`` get ``connection.blocked`` and ``connection.unblocked``, a
0-9-1 connection that publishes during the alarm is read no further (its heartbeat monitor
waiting), a 1.0 publisher gets no more credit; consumers go on and clear it."""

from __future__ import annotations

from typing import Any

import pytest
from support.broker_net import Net, msg

from amqp_sansio.broker import Broker, BrokerConfig, BrokerConnection091
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import Connection, Role
from amqp_sansio.engine.amqp091 import events as ev

BLOCKED_CAPABLE = {"capabilities": {"connection.blocked": True}}
#: A client that does not announce it (ours does by default, as pika does).
NOT_CAPABLE = {"capabilities": {"connection.blocked": False}}


class Peer:
    """A 0-9-1 client engine wired to its broker connection; what it sends waits in
    ``held`` while the broker does not read it (``conn.reading``), as a socket's would."""

    def __init__(self, broker: Broker, now: float, **options: Any) -> None:
        self.engine = Connection(Role.CLIENT, **options)
        self.conn: BrokerConnection091 = broker.accept_091(now, wall=1e9)
        self.events: list[ev.Event] = []
        self.held = b""
        self.engine.start(now)

    def move(self, now: float) -> bool:
        self.held += self.engine.data_to_send()
        moved = False
        if self.held and self.conn.reading and not self.conn.ended:
            data, self.held = self.held, b""
            self.conn.receive_data(data, now, wall=1e9)
            moved = True
        back = self.conn.data_to_send()
        if back:
            self.events += self.engine.receive_data(back, now)
            moved = True
        return moved

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


class World:
    def __init__(self, config: BrokerConfig) -> None:
        self.broker = Broker(config)
        self.now = 100.0
        self.peers: list[Peer] = []
        self.net10 = Net(broker=self.broker)

    def peer(self, **options: Any) -> Peer:
        peer = Peer(self.broker, self.now, **options)
        self.peers.append(peer)
        self.pump()
        return peer

    def pump(self) -> None:
        for _ in range(1000):
            moved = [p.move(self.now) for p in self.peers]
            self.net10.pump()
            if not any(moved):
                return
        raise AssertionError("never quiet")

    def channel(self, peer: Peer) -> int:
        number = peer.engine.open_channel()
        self.pump()
        return number

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for peer in self.peers:
            peer.conn.handle_timer(self.now, wall=1e9)
            peer.events += peer.engine.handle_timer(self.now)
        self.pump()


BODY = b"x" * 400


def _world() -> World:
    return World(BrokerConfig(memory_high_watermark=1000, memory_low_watermark=500))


def test_blocked_not_read_then_unblocked_as_consumers_drain() -> None:
    world = _world()
    publisher = world.peer(client_properties=BLOCKED_CAPABLE, heartbeat=10)
    consumer = world.peer(client_properties=NOT_CAPABLE)  # never told
    pch, cch = world.channel(publisher), world.channel(consumer)
    consumer.engine.send_method(cch, spec.QueueDeclare(queue="q"))
    world.pump()
    broker = world.broker
    publisher.engine.publish(pch, "", "q", BODY)
    world.pump()
    each = broker.held_bytes  # (the message as the broker holds it: its 1.0 form)
    assert 400 < each < 500 and not broker.alarm
    for _ in range(2):  # three held: above the mark
        publisher.engine.publish(pch, "", "q", BODY)
    world.pump()
    assert broker.alarm and broker.held_bytes == 3 * each
    assert [e.reason for e in publisher.of(ev.Blocked)] == ["low on memory"]
    assert publisher.engine.blocked and not consumer.of(ev.Blocked)
    assert publisher.conn.reading  # it has not published since the alarm
    publisher.engine.publish(pch, "", "q", BODY)  # read: then nothing more is
    world.pump()
    publisher.engine.publish(pch, "", "q", b"later")
    world.pump()
    assert not publisher.conn.reading and broker.held_bytes == 4 * each
    assert publisher.held  # the second publish waits at the client's side
    assert consumer.conn.reading
    for _ in range(13):  # past two heartbeats: not held against a client we do not read
        world.advance(2)
    assert not publisher.conn.ended and not publisher.of(ev.ConnectionClosed)
    for left in (3, 2, 1):  # the consumer drains the queue
        consumer.engine.send_method(cch, spec.BasicGet(queue="q", no_ack=True))
        world.pump()
        if left > 1:
            assert broker.alarm and not publisher.conn.reading
            assert broker.held_bytes == left * each
    # below the low mark: unblocked, read again, the waiting publish goes in
    assert not broker.alarm and publisher.conn.reading
    assert len(publisher.of(ev.Unblocked)) == 1 and not publisher.engine.blocked
    assert not publisher.held
    assert each < broker.held_bytes < 2 * each
    queue = broker.nodes["q"]
    assert queue.depth == 2  # type: ignore[attr-defined]
    for _ in range(8):  # it is read again, heartbeats too
        world.advance(2)
    assert not publisher.conn.ended


def test_a_connection_opened_during_the_alarm_is_told_at_once() -> None:
    world = _world()
    first = world.peer()
    ch = world.channel(first)
    first.engine.send_method(ch, spec.QueueDeclare(queue="q"))
    for _ in range(3):
        first.engine.publish(ch, "", "q", BODY)
    world.pump()
    assert world.broker.alarm
    late = world.peer(client_properties=BLOCKED_CAPABLE)
    assert len(late.of(ev.Blocked)) == 1
    first.engine.send_method(ch, spec.QueuePurge(queue="q"))
    world.pump()
    assert not world.broker.alarm and world.broker.held_bytes == 0
    assert len(late.of(ev.Unblocked)) == 1


def test_unacked_messages_count_until_acked_and_a_1_0_publisher_gets_no_credit() -> None:
    world = _world()
    consumer = world.peer()
    ch = world.channel(consumer)
    consumer.engine.send_method(ch, spec.QueueDeclare(queue="q"))
    world.pump()
    client = world.net10.connect()
    sender = client.sender("q")
    assert sender.link_credit == world.broker.config.link_credit
    for _ in range(3):
        client.send(sender, msg(BODY))
    assert world.broker.alarm
    left = sender.link_credit
    for _ in range(left):  # it may use the credit it has, and gets no more
        sender.send(msg(b"y").encode())
    world.pump()
    assert sender.link_credit == 0
    consumer.engine.send_method(ch, spec.BasicConsume(queue="q", consumer_tag="c"))
    world.pump()
    delivered = consumer.of(ev.ContentReceived)
    assert len(delivered) == 3 + left
    assert world.broker.alarm  # delivered, not acked: still held
    consumer.engine.send_method(ch, spec.BasicAck(delivery_tag=0, multiple=True))
    world.pump()
    assert not world.broker.alarm and world.broker.held_bytes == 0
    assert sender.link_credit == world.broker.config.link_credit  # topped up again


def test_expired_messages_clear_the_alarm() -> None:
    world = _world()
    peer = world.peer(client_properties=BLOCKED_CAPABLE)
    ch = world.channel(peer)
    peer.engine.send_method(ch, spec.QueueDeclare(queue="q"))
    for _ in range(3):
        peer.engine.publish(ch, "", "q", BODY, spec.BasicProperties(expiration="1000"))
    world.pump()
    assert world.broker.alarm
    world.broker.expire(1e9 + 2)
    world.pump()
    assert not world.broker.alarm and len(peer.of(ev.Unblocked)) == 1


@pytest.mark.parametrize(("high", "low"), [(-1, None), (100, 101), (None, 10), (100, -1)])
def test_watermarks_are_checked(high: int | None, low: int | None) -> None:
    with pytest.raises(ValueError, match="watermark"):
        BrokerConfig(memory_high_watermark=high, memory_low_watermark=low)


def test_no_alarm_without_a_high_mark() -> None:
    config = BrokerConfig(memory_high_watermark=None)
    assert config.memory_clear_mark is None
    world = World(config)
    peer = world.peer(client_properties=BLOCKED_CAPABLE)
    ch = world.channel(peer)
    peer.engine.send_method(ch, spec.QueueDeclare(queue="q"))
    for _ in range(10):
        peer.engine.publish(ch, "", "q", BODY)
    world.pump()
    assert not world.broker.alarm and world.broker.held_bytes > 4000
    assert not peer.of(ev.Blocked)


def test_the_default_clear_mark_is_ninety_percent() -> None:
    assert BrokerConfig(memory_high_watermark=1000).memory_clear_mark == 900
    assert BrokerConfig().memory_high_watermark == 1024**3
