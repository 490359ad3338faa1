"""Idle connections and unused queues with the broker's defaults (issue 27), in the core on a
simulated clock (tests/support/broker_net.py, broker091_net.py): the idle time-out each
protocol announces, the eviction of idle anonymous connections at the connection caps, and
the expiry of queues made on first use. The same against ``amqp-sansio broker`` as a process:
tests/broker/test_broker_idle.py."""

from __future__ import annotations

from support.amqp091.broker_net import Client as Client091
from support.broker_net import Client, Net, accept_all, publish

import amqp_sansio as a
from amqp_sansio.broker import Broker, BrokerConfig, Users
from amqp_sansio.definitions.amqp091 import spec


def _closed_by_broker(client: Client) -> str | None:
    closed = client.of(a.events.ConnectionClosed)
    return str(closed[-1].error.condition) if closed and closed[-1].error else None


# -- the idle time-out --------------------------------------------------------------------------


def test_the_default_idle_timeout_is_announced_and_a_silent_client_is_closed() -> None:
    net = Net()  # the defaults
    assert BrokerConfig().idle_timeout == 120
    client = net.connect()  # (our engine, which asks for no idle time-out of its own)
    (opened,) = client.of(a.events.ConnectionOpened)
    assert opened.remote.idle_time_out == 60_000  # half the broker's (core spec 2.4.5)
    assert client.conn.next_deadline() == net.now + 120
    client.conn.handle_timer(net.now + 119)  # only the broker's clock moves: no heartbeat
    net.pump()
    assert client.engine.state is a.ConnectionState.OPENED
    client.conn.handle_timer(net.now + 120)
    net.pump()
    assert _closed_by_broker(client) == "amqp:resource-limit-exceeded"
    assert client.conn.ended


def test_a_client_that_heartbeats_is_not_cut_while_idle() -> None:
    net = Net()
    client = net.connect()
    receiver = client.receiver("q", 5)
    net.live(3600, step=15)  # an hour of silence but for empty frames
    assert client.engine.state is a.ConnectionState.OPENED and not client.conn.ended
    publish(net.connect(), "q", b"still here")
    assert accept_all(client, receiver) == [b"still here"]


def test_the_idle_timeout_can_be_changed_or_turned_off() -> None:
    net = Net(BrokerConfig(idle_timeout=10))
    client = net.connect()
    assert client.of(a.events.ConnectionOpened)[0].remote.idle_time_out == 5000
    net = Net(BrokerConfig(idle_timeout=None))
    client = net.connect()
    assert client.of(a.events.ConnectionOpened)[0].remote.idle_time_out is None
    assert client.conn.next_deadline() is None
    net.advance(100_000)
    assert client.engine.state is a.ConnectionState.OPENED


def test_0_9_1_proposes_half_the_idle_timeout_as_its_heartbeat() -> None:
    # A client that asks for no heartbeat of its own (heartbeat=0 in its proposal, as pika
    # with its defaults) takes the broker's: 60 s by default, as RabbitMQ.
    assert Client091(Broker(), heartbeat=0).engine.heartbeat == 60
    client = Client091(Broker(BrokerConfig(idle_timeout=10)), heartbeat=0)
    assert client.engine.heartbeat == 5 and client.conn.engine.heartbeat == 5
    assert client.conn.next_deadline() == client.now + 2.5  # (our heartbeat, at half)
    off = Client091(Broker(BrokerConfig(idle_timeout=None)), heartbeat=0)
    assert off.engine.heartbeat == 0 and off.conn.next_deadline() is None
    # A lower wish of the client is taken (the lower of the two, 0-9-1 spec connection.tune).
    assert Client091(Broker(), heartbeat=20).conn.engine.heartbeat == 20


def test_0_9_1_silent_past_two_heartbeats_is_cut() -> None:
    client = Client091(Broker(BrokerConfig(idle_timeout=10)), heartbeat=0)
    client.conn.handle_timer(client.now + 9)
    assert not client.conn.ended
    client.conn.handle_timer(client.now + 10.5)
    assert client.conn.ended


# -- eviction of idle anonymous connections at a cap -----------------------------------------


def test_at_the_per_address_cap_the_least_recently_active_idle_connection_goes() -> None:
    net = Net(BrokerConfig(max_connections_per_address=3))
    assert BrokerConfig().evict_idle_after == 10
    here = "10.0.0.1"
    consumer = net.connect(address=here)
    receiver = consumer.receiver("q", 5)  # a link: in use, never evicted
    old, newer = net.connect(address=here), net.connect(address=here)
    net.live(40)  # heartbeats only (at 30 s): they are not activity
    newer.begin()  # newer does something
    net.live(5)
    assert net.broker.accept(net.now, address="10.0.0.2").refused is None  # other address
    late = net.connect(address=here)  # at the cap: the least recently active idle one goes
    assert late.engine.state is a.ConnectionState.OPENED
    net.pump()
    assert _closed_by_broker(old) == "amqp:resource-limit-exceeded" and old.conn.ended
    assert not newer.conn.ended and not consumer.conn.ended
    # The one quiet for less than evict_idle_after is kept: the next one is refused.
    latest = net.broker.accept(net.now, address=here)
    assert latest.ended and latest.refused == "at most 3 connections from one address"
    assert not late.conn.ended
    net.live(10)
    assert net.connect(address=here).engine.state is a.ConnectionState.OPENED
    net.pump()
    assert newer.conn.ended and not late.conn.ended and not consumer.conn.ended
    publish(net.connect(), "q", b"on")
    assert accept_all(consumer, receiver) == [b"on"]


def test_eviction_at_the_cap_in_all_and_its_option() -> None:
    net = Net(BrokerConfig(max_connections=2))
    idle = [net.connect(address="10.0.0.1")]
    net.live(5)
    idle.append(net.connect(address="10.0.0.2"))
    net.live(20)
    assert net.connect(address="10.0.0.3").engine.state is a.ConnectionState.OPENED
    net.pump()
    assert idle[0].conn.ended and not idle[1].conn.ended
    net = Net(BrokerConfig(max_connections=1, evict_idle_after=None))
    quiet = net.connect()
    net.live(60)
    assert net.broker.accept(net.now).refused == "the broker takes at most 1 connections"
    assert not quiet.conn.ended


def test_authenticated_connections_are_not_evicted() -> None:
    users = Users.from_json('{"users": {"u": {"password": "pw", "send": ["*"], "receive": ["*"]}}}')
    net = Net(BrokerConfig(users=users, allow_insecure_auth=True, max_connections=1))
    user = net.connect(sasl=a.sasl.ClientCredentials(username="u", password="pw"))
    assert user.engine.state is a.ConnectionState.OPENED
    net.live(60)
    assert net.broker.accept(net.now).refused is not None
    assert not user.conn.ended


def test_0_9_1_idle_connections_are_evicted_not_consumers() -> None:
    broker = Broker(BrokerConfig(max_connections_per_address=2))
    busy, idle = Client091(broker), Client091(broker)  # (both from 10.0.0.1)
    channel = busy.channel()
    busy.call(channel, spec.QueueDeclare(queue="work"))
    busy.call(channel, spec.BasicConsume(queue="work", consumer_tag="c"))
    assert Client091(broker, now=105).conn.ended  # idle for 5 s only: refused
    later = Client091(broker, now=130)
    assert later.conn.is_open and not busy.conn.ended
    assert idle.conn.ended and "evicted" in (idle.conn.record.ending or "")


# -- queues made on first use expire ----------------------------------------------------------


def test_a_queue_made_on_first_use_goes_after_an_hour_unused_messages_and_all() -> None:
    net = Net()  # the defaults
    assert BrokerConfig().queue_expiry == 3600
    producer = net.connect()
    publish(producer, "made", b"left behind").detach()  # (an attach, a send, a detach)
    net.pump()
    held = net.broker.held_bytes
    assert held > 0 and net.broker.next_expiry() == net.wall + 3600
    net.live(3590, step=30)
    assert net.broker.nodes["made"].depth == 1
    net.live(20)
    assert "made" not in net.broker.nodes and net.broker.held_bytes == 0
    assert producer.engine.state is a.ConnectionState.OPENED  # (the connection goes on)


def test_a_link_keeps_an_auto_created_queue_and_its_going_starts_the_clock() -> None:
    net = Net()
    consumer = net.connect()
    receiver = consumer.receiver("kept")  # no credit: a consumer waiting
    publish(net.connect(), "kept", b"waits").detach()
    net.live(7200, step=30)
    assert net.broker.nodes["kept"].depth == 1
    receiver.detach()
    net.live(3590, step=30)
    assert "kept" in net.broker.nodes
    again = consumer.receiver("kept", 1)  # attached again in time: the clock stops
    assert accept_all(consumer, again) == [b"waits"]
    again.detach()
    net.pump()
    assert "kept" not in net.broker.nodes  # (empty and unlinked: auto-delete, at once)


def test_declared_queues_do_not_expire_and_the_expiry_is_an_option() -> None:
    net = Net()
    declaring = Client091(net.broker)
    channel = declaring.channel()
    declaring.call(channel, spec.QueueDeclare(queue="declared"))
    publish(net.connect(), "made", b"x").detach()
    net.pump()
    net.broker.expire(net.wall + 3600)
    assert "made" not in net.broker.nodes and "declared" in net.broker.nodes
    net.broker.expire(net.wall + 86400 * 30)
    assert "declared" in net.broker.nodes
    net = Net(BrokerConfig(queue_expiry=None))
    publish(net.connect(), "made", b"x").detach()
    net.pump()
    assert net.broker.next_expiry() is None
    net.broker.expire(net.wall + 86400 * 30)
    assert net.broker.nodes["made"].depth == 1
