"""The broker's 0-10 connections over bytes, in memory: the Peer contract they share with
the other protocols' (limits, logins through the broker's users, the handshake time-out,
eviction, the resource alarm, the broker's close, a transport gone) and their sessions
(detached and kept for their time-out, resumed, expired)."""

from __future__ import annotations

from support.amqp010.wire import Client

from amqp_sansio.broker import Broker, BrokerConfig, Users
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.definitions.amqp10.message import Message
from amqp_sansio.engine import amqp010 as engine
from amqp_sansio.framing.amqp010 import PROTOCOL_HEADER

USERS = Users.from_json('{"users": {"u": {"password": "pw", "send": ["*"], "receive": ["*"]}}}')


def closed(c: Client) -> engine.ConnectionClosed:
    [event] = [e for e in c.take() if isinstance(e, engine.ConnectionClosed)]
    return event


def test_an_unknown_virtual_host_is_refused_with_invalid_path() -> None:
    c = Client(Broker(), virtual_host="nope")
    assert closed(c).reply_code == 402
    assert c.conn.refused == "no virtual host 'nope'" and c.conn.ended


def test_another_virtual_host_has_its_own_queues() -> None:
    broker = Broker(BrokerConfig(virtual_hosts={"/", "v"}))
    c = Client(broker, virtual_host="v")
    c.attach()
    c.ok(spec.QueueDeclare(queue="inner"))
    assert "inner" not in broker.nodes and broker.vhosts["v"].queue("inner") is not None


def test_users_log_in_and_are_counted_per_user() -> None:
    config = BrokerConfig(users=USERS, allow_insecure_auth=True, max_connections_per_user=1)
    broker = Broker(config)
    first = Client(broker, mechanism="PLAIN", username="u", password="pw")
    assert first.conn.identity == "u" and first.conn.is_open
    second = Client(broker, mechanism="PLAIN", username="u", password="pw")
    assert closed(second).reply_code == 320 and second.conn.refused is not None
    wrong = Client(broker, mechanism="PLAIN", username="u", password="no")
    assert not wrong.conn.record.opened
    first.engine.close()
    first.pump()
    assert closed(first).reply_code == 200 and first.conn.record.ending == "closed by the client"


def test_a_broker_with_its_own_sasl_and_anonymous() -> None:
    from amqp_sansio.security.mechanisms import ServerAuthenticator

    c = Client(Broker(BrokerConfig(sasl=ServerAuthenticator(allow_anonymous=True))))
    assert c.conn.is_open
    c = Client(Broker(BrokerConfig(sasl=False)))
    assert c.conn.is_open


def test_the_connection_cap_refuses_and_eviction_makes_room() -> None:
    broker = Broker(BrokerConfig(max_connections=1, evict_idle_after=None))
    first = Client(broker)
    refused = broker.accept_010(1.0)
    assert refused.ended and refused.refused is not None
    broker = Broker(BrokerConfig(max_connections=1, evict_idle_after=10))
    idle = Client(broker)
    assert idle.conn.idle_since() == 0.0
    later = Client(broker, now=20.0)
    assert later.conn.is_open and idle.conn.ended
    idle.pump()
    assert closed(idle).reply_code == 320
    busy = Client(
        Broker(BrokerConfig(users=USERS, allow_insecure_auth=True)),
        mechanism="PLAIN",
        username="u",
        password="pw",
    )
    assert busy.conn.idle_since() is None
    del first


def test_the_handshake_time_out_cuts_a_silent_client() -> None:
    broker = Broker(BrokerConfig(handshake_timeout=5))
    conn = broker.accept_010(0.0)
    assert conn.next_deadline() == 5.0
    conn.handle_timer(5.0)
    assert conn.ended and conn.cut and "handshake" in (conn.refused or "")
    conn.connection_lost(6.0)
    assert conn not in broker.connections


def test_heartbeats_on_the_broker_idle_time_out() -> None:
    broker = Broker(BrokerConfig(idle_timeout=4))
    c = Client(broker, heartbeat=2)
    assert c.conn.engine.heartbeat == 2
    deadline = c.conn.next_deadline()
    assert deadline is not None
    c.now = deadline
    c.conn.handle_timer(deadline)
    c.pump()
    assert c.conn.is_open


def test_the_broker_closes_and_the_transport_goes() -> None:
    broker = Broker()
    c = Client(broker)
    c.attach()
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"x", key="q")
    c.subscribe("q")
    assert len(c.deliveries()) == 1 and broker.nodes["q"].depth == 1
    c.conn.close(why="stopping")
    c.pump()
    assert closed(c).reply_code == 320
    c.conn.connection_lost(1.0)
    c.conn.close()  # (again: nothing more)
    queue = broker.nodes["q"]
    assert len(queue.available) == 1 and queue.depth == 1  # back, unaccepted
    assert c.conn not in broker.connections


def test_the_resource_alarm_stops_reading_a_publisher() -> None:
    broker = Broker(BrokerConfig(memory_high_watermark=100))
    c = Client(broker)
    c.attach()
    c.ok(spec.QueueDeclare(queue="q"))
    c.publish(b"x" * 200, key="q")
    assert broker.alarm and not c.conn.reading
    c.conn.alarm_changed(True)  # (on again: nothing to say)
    c.subscribe("q", accept=1)
    assert not broker.alarm and c.conn.reading
    late = Client(broker)
    assert late.conn.reading


def test_a_session_kept_resumes_and_its_subscription_delivers_again() -> None:
    broker = Broker()
    c = Client(broker)
    c.attach(timeout=60)
    c.ok(spec.QueueDeclare(queue="q"))
    c.subscribe("q")
    c.engine.detach(b"s")
    c.pump()
    session = c.conn.sessions[b"s"]
    assert not session.attached
    broker.vhosts["/"].publish_message("", "q", Message(body=b"while away").encode())
    broker.dispatch()
    c.pump()
    assert c.deliveries() == [] and broker.nodes["q"].depth == 1
    c.engine.resume(b"s")
    c.pump()
    assert [d.body for d in c.deliveries()] == [b"while away"]
    # kept again, then its time-out passes: gone, its subscription with it
    c.engine.detach(b"s")
    c.pump()
    c.now = 61.0
    c.conn.handle_timer(61.0)
    c.pump()
    assert b"s" not in c.conn.sessions and broker.nodes["q"].consumers == []


def test_a_session_detached_without_keeping_goes() -> None:
    c = Client(Broker())
    c.attach()
    c.ok(spec.QueueDeclare(queue="q"))
    c.subscribe("q")
    c.engine.detach(b"s", keep=False)
    c.pump()
    assert c.conn.sessions == {} and c.broker.nodes["q"].consumers == []


def test_a_session_name_of_a_connection_gone_is_free_on_a_new_one() -> None:
    # the engine bug: a name kept for its time-out made a new connection's commands hang
    broker = Broker()
    old = Client(broker)
    old.attach(b"name", timeout=60)
    old.ok(spec.QueueDeclare(queue="q"), session=b"name")
    old.conn.connection_lost(1.0)
    new = Client(broker, now=2.0)
    new.attach(b"name", timeout=60)
    new.ok(spec.QueueDeclare(queue="q2"), session=b"name")
    new.publish(b"m", key="q", session=b"name")
    assert broker.nodes["q"].depth == 1


def test_the_header_after_a_10_accept_and_a_tls_failure() -> None:
    broker = Broker()
    first = broker.accept(0.0)
    conn = broker.accept_header("0-10", 1.0, replacing=first)
    assert first not in broker.connections and conn in broker.connections
    conn.receive_data(PROTOCOL_HEADER, 1.0)
    assert conn.data_to_send().startswith(PROTOCOL_HEADER)
    conn.receive_data(b"", 2.0)  # the client went
    assert conn.ended


def test_bytes_that_are_not_frames_close_the_connection() -> None:
    broker = Broker()
    conn = broker.accept_010(0.0)
    conn.receive_data(PROTOCOL_HEADER + b"\xff" * 20, 0.0)
    assert conn.ended and conn.record.ending is not None


def test_a_session_resumed_on_a_new_connection_keeps_its_subscriptions() -> None:
    broker = Broker()
    store = engine.SessionStore()
    old = Client(broker, sessions=store)
    old.attach(b"r", timeout=60)
    old.ok(spec.QueueDeclare(queue="q"), session=b"r")
    old.ok(spec.MessageSubscribe(queue="q", destination="d", accept_mode=0), session=b"r")
    old.ok(spec.MessageFlow(destination="d", unit=1, value=0xFFFFFFFF), session=b"r")
    old.ok(spec.MessageFlow(destination="d", unit=0, value=10), session=b"r")
    old.publish(b"one", key="q", session=b"r")
    assert [d.body for d in old.deliveries()] == [b"one"]
    # the transport goes: both ends keep the session
    old.conn.connection_lost(1.0)
    old.engine.receive_data(b"", 1.0)
    assert (old.conn.record.ending or "").startswith("closed: 320 the peer ended the stream")
    assert (None, b"r") in broker.kept_010 or ("anonymous", b"r") in broker.kept_010
    assert len(broker.nodes["q"].available) == 1  # (unaccepted: back in its queue)
    new = Client(broker, now=2.0, sessions=store)
    new.engine.resume(b"r")
    new.pump()
    assert broker.kept_010 == {} and "d" in new.conn.sessions[b"r"].subscriptions
    [again] = new.deliveries()
    assert again.body == b"one" and again.header[0].redelivered  # type: ignore[attr-defined]
    new.ok(spec.MessageAccept(transfers=((again.command_id, again.command_id),)), session=b"r")
    new.ok(spec.MessageFlow(destination="d", unit=0, value=1), session=b"r")
    assert broker.nodes["q"].depth == 0


def test_a_session_kept_past_its_connection_expires() -> None:
    broker = Broker()
    old = Client(broker)
    old.attach(b"k", timeout=5)
    old.ok(spec.QueueDeclare(queue="q"), session=b"k")
    old.ok(spec.MessageSubscribe(queue="q", destination="d"), session=b"k")
    old.conn.connection_lost(1.0)
    assert len(broker.kept_010) == 1 and len(broker.nodes["q"].consumers) == 1
    other = Client(broker, now=10.0)
    other.conn.handle_timer(10.0)
    assert broker.kept_010 == {} and broker.nodes["q"].consumers == []


def test_the_users_access_rules_hold_for_0_10() -> None:
    users = Users.from_json(
        '{"users": {"r": {"password": "pw", "send": ["in"], "receive": ["mine"]}}}'
    )
    broker = Broker(BrokerConfig(users=users, allow_insecure_auth=True))
    c = Client(broker, mechanism="PLAIN", username="r", password="pw")
    c.attach()
    c.ok(spec.QueueDeclare(queue="in"))
    c.ok(spec.QueueDeclare(queue="mine"))
    c.publish(b"ok", key="in")
    assert broker.nodes["in"].depth == 1
    header = [spec.DeliveryProperties(routing_key="mine")]
    transfer = spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0)
    assert c.refused(transfer, header=header, body=b"no").error_code == 403
    c.attach(b"t")
    refused = c.refused(spec.MessageSubscribe(queue="in", destination="d"), session=b"t")
    assert refused.error_code == 403
    c.attach(b"u")
    c.ok(spec.MessageSubscribe(queue="mine", destination="d"), session=b"u")


def test_a_name_still_held_by_a_silent_connection_is_free_on_a_new_one() -> None:
    broker = Broker()
    old = Client(broker)
    old.attach(b"n", timeout=60)  # (its client is gone, unnoticed: the transport is open)
    new = Client(broker, now=2.0)
    new.attach(b"n", timeout=60)
    new.ok(spec.QueueDeclare(queue="q"), session=b"n")
    new.publish(b"m", key="q", session=b"n")
    assert broker.nodes["q"].depth == 1
    old.conn.connection_lost(3.0)  # noticed at last: kept, for its time-out
    new.ok(spec.QueueDeclare(queue="q2"), session=b"n")


def test_a_session_the_full_store_cannot_keep_goes_with_its_connection() -> None:
    broker = Broker()
    broker.sessions_010 = engine.SessionStore(1)  # (room for one detached session)
    c = Client(broker)
    c.attach(b"a", timeout=60)
    c.attach(b"b", timeout=60)
    for name in (b"a", b"b"):
        c.ok(spec.QueueDeclare(queue="q"), session=name)
        c.ok(spec.MessageSubscribe(queue="q", destination="d"), session=name)
    c.conn.connection_lost(1.0)
    assert len(broker.kept_010) == 1 and len(broker.nodes["q"].consumers) == 1
