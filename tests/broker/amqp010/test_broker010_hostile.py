"""Hostile input to the broker's 0-10 side, in memory: a valid client's bytes with octets
changed at random, and random commands with field values from awkward pools (reserved
names, unknown destinations, bad queue arguments, out-of-range sets). Nothing the client
sends may raise out of the broker: it answers on the wire (an exception, a close)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from support.amqp010.engine import command, control, sent
from support.amqp010.wire import Client

from amqp_sansio.broker import Broker, BrokerConfig
from amqp_sansio.broker.amqp010.commands import COMMANDS
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine

POOL: dict[str, list[Any]] = {
    "str8": ["", "q", "q2", "amq.topic", "amq.direct", "amq.match", "x", "d", "amq.q", "st", None],
    "str16": ["", "r", None],
    "bit": [True, False],
    "uint8": [0, 1, 2, 255, None],
    "uint16": [0, 1, 404, None],
    "uint32": [0, 1, 5, 0xFFFFFFFF, None],
    "uint64": [0, 1, None],
    "map": [
        None,
        {},
        {"x-max-length": "abc"},
        {"x-match": "any", "k": 1},
        {"x-queue-type": "stream"},
        {"alternate-exchange": 5},
        {"x-message-ttl": -1},
    ],
    "sequence-set": [None, ((0, 3),), ((0, 0xFFFFFFFF),)],
}


def recorded_stream() -> bytes:
    """A valid client's bytes: declare, bind, publish, subscribe, accept, a transaction."""
    c = Client(Broker())
    sent: list[bytes] = []
    original = c.conn.receive_data

    def keep(data: Any, now: float, *, wall: float | None = None) -> None:
        sent.append(bytes(data))
        original(data, now, wall=wall)

    c.conn.receive_data = keep  # type: ignore[method-assign]
    c.attach()
    c.ok(spec.QueueDeclare(queue="q"))
    c.ok(spec.ExchangeBind(queue="q", exchange="amq.topic", binding_key="#"))
    c.publish(b"hello", key="q", content_type="t", application_headers={"a": 1})
    c.subscribe("q")
    c.ok(spec.MessageAccept(transfers=((0, 5),)))
    c.ok(spec.TxSelect())
    c.publish(b"x", exchange="amq.topic", key="k")
    c.ok(spec.TxCommit())
    return b"".join(sent)


@pytest.mark.parametrize("seed", range(3))
def test_octets_changed_at_random(seed: int) -> None:
    stream = recorded_stream()
    rng = random.Random(seed)
    for _ in range(150):
        data = bytearray(stream)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(8, len(data))] = rng.randrange(256)
        broker = Broker()
        conn = broker.accept_010(0.0)
        at = 0
        while at < len(data):
            size = rng.randint(1, 200)
            conn.receive_data(bytes(data[at : at + size]), 0.0)
            conn.data_to_send()
            for other in broker.pending():
                other.data_to_send()
            at += size
        conn.handle_timer(100.0)
        conn.connection_lost(200.0)
        assert conn not in broker.connections


@pytest.mark.parametrize("seed", range(3))
def test_random_commands(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(15):
        broker = Broker(BrokerConfig(streams={"st"}, max_queue_depth=3))
        c = Client(broker)
        c.attach()
        for _ in range(30):
            kind = rng.choice([*COMMANDS, spec.DtxSelect])
            fields = {name: rng.choice(POOL.get(t, [None])) for name, t in kind.FIELDS}
            command = kind(**fields)
            header: tuple[spec.Struct, ...] = ()
            if kind is spec.MessageTransfer:
                header = (spec.DeliveryProperties(routing_key=rng.choice(["q", "", "k"])),)
            state = c.engine.sessions.get(b"s")
            if state is None or state.state is not engine.SessionState.ATTACHED:
                c.attach()
            c.engine.send_command(b"s", command, header=header, body=b"x", sync=rng.random() < 0.5)
            if rng.random() < 0.3:
                c.pump()
        c.pump()
        c.conn.handle_timer(50.0)
        c.conn.connection_lost(60.0)
        assert c.conn not in broker.connections


# -- a request and a close in one input (found by fuzz/amqp010/broker.py) -------------------

#: What closes an open connection: a connection control out of place (320, the broker's
#: close then waits for close-ok), or octets that are no frame (501, the connection ends).
STRAYS = {
    "control": control(0, spec.ConnectionStartOk(mechanism="ANONYMOUS")),
    "not-a-frame": b"\x40" * 12,
}


@pytest.mark.parametrize("stray", sorted(STRAYS))
def test_an_open_and_a_close_in_one_input(stray: str) -> None:
    """The client's open and what closes the connection arrive in one read: the open is
    not answered (no open-ok after the close), nothing raises."""
    broker = Broker()
    conn = broker.accept_010(0.0)
    client = engine.Connection(engine.Role.CLIENT, mechanism="ANONYMOUS")
    client.start(0.0)
    for _ in range(2):  # the header, then start-ok, each answered
        conn.receive_data(client.data_to_send(), 0.0)
        client.receive_data(conn.data_to_send(), 0.0)
    conn.receive_data(client.data_to_send() + STRAYS[stray], 0.0)  # tune-ok, open, stray
    assert [type(c) for c in sent(conn)] == [spec.ConnectionClose]
    assert not conn.record.opened
    conn.connection_lost(1.0)
    assert conn.ended and conn not in broker.connections


@pytest.mark.parametrize("stray", sorted(STRAYS))
@pytest.mark.parametrize("request_", ["declare", "explicit-transfer", "window-completion"])
def test_a_request_and_a_close_in_one_input(request_: str, stray: str) -> None:
    """A command (its completion, the broker's message.accept of a transfer) or the
    completion that gives window credit back (a delivery) comes with what closes the
    connection, in one read: nothing raises, nothing but the close is sent, and the
    command is not carried out."""
    c = Client(Broker())
    c.attach()
    c.ok(spec.QueueDeclare(queue="w"))
    if request_ == "declare":
        c.engine.send_command(b"s", spec.QueueDeclare(queue="q"), sync=True)
    elif request_ == "explicit-transfer":
        header = (spec.DeliveryProperties(routing_key="w"),)
        transfer = spec.MessageTransfer(destination="", accept_mode=0, acquire_mode=0)
        c.engine.send_command(b"s", transfer, header=header, body=b"x")
    else:
        c.ok(spec.MessageSubscribe(queue="w", destination="d", accept_mode=1, acquire_mode=0))
        c.ok(spec.MessageFlow(destination="d", unit=1, value=0xFFFFFFFF))
        c.ok(spec.MessageFlow(destination="d", unit=0, value=1))  # window mode: one at once
        c.publish(b"a", key="w")
        c.publish(b"b", key="w")
        [first] = c.deliveries()
        c.engine.complete(b"s", first.command_id)  # its credit back: "b" would go
    c.conn.receive_data(c.engine.data_to_send() + STRAYS[stray], 0.0)
    assert [type(x) for x in sent(c.conn)] == [spec.ConnectionClose]
    assert "q" not in c.broker.nodes
    assert c.broker.nodes["w"].depth == (1 if request_ == "window-completion" else 0)
    c.conn.connection_lost(1.0)
    assert c.conn.ended and c.conn not in c.broker.connections


@pytest.mark.parametrize("refused", [False, True])
def test_a_command_of_a_session_replaced_in_the_same_input(refused: bool) -> None:
    """A command, then its session detached and another of the same name attached, in one
    read: the command is not the new session's (it is neither completed nor refused on
    it), nothing raises."""
    c = Client(Broker())
    c.attach()  # b"s", on channel 1
    if refused:  # (to an exchange there is not: execution.exception 404)
        header = (spec.DeliveryProperties(routing_key="k"),)
        first = command(1, spec.MessageTransfer(destination="none"), header=header, body=b"x")
    else:
        first = command(1, spec.QueueDeclare(queue="q"), sync=True)
    detach = control(1, spec.SessionDetach(name=b"s"))
    c.conn.receive_data(first + detach + control(2, spec.SessionAttach(name=b"s")), 0.0)
    out = sent(c.conn)
    assert [type(x) for x in out] == [
        spec.SessionDetached,
        spec.SessionAttached,
        spec.SessionCommandPoint,
    ]
    assert "q" not in c.broker.nodes
    c.conn.connection_lost(1.0)
    assert c.conn.ended and c.conn not in c.broker.connections
