"""Our 0-10 engine against qpid-python, the 0-10 peer, over real sockets:

(a) qpid's low-level client (``qpid.connection.Connection``) against OUR server engine,
    which a small socket loop here drives, playing the application (a queue, a
    subscription, deliveries under credit, accepts, a queue query's result);
(b) OUR client engine against qpid's own small 0-10 server (the ``TestServer`` of
    ``qpid/tests/connection.py``, started as its tests start it): handshake, sessions, a
    command with a result, and a message echoed.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from support.amqp010.engine import authenticator
from support.qpid_peer import qpid_module

from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine

#: qpid-python calls ``threading.currentThread``, deprecated since Python 3.10.
pytestmark = pytest.mark.filterwarnings("ignore:currentThread:DeprecationWarning")


class Broker:
    """The application side of our server engine: queues by name, subscriptions with
    message credit, deliveries, accepts and a queue query, each command completed."""

    def __init__(self, conn: engine.Connection) -> None:
        self.conn = conn
        self.queues: dict[str, list[tuple[tuple[spec.Struct, ...], bytes]]] = {}
        self.subscriptions: dict[tuple[bytes, str], list[Any]] = {}
        self.seen: list[str] = []

    def handle(self, event: engine.Event) -> None:
        conn = self.conn
        if isinstance(event, engine.OpenRequested):
            conn.accept_open()
            return
        if not isinstance(event, engine.CommandReceived):
            return
        cmd, session = event.command, event.session
        self.seen.append(cmd.NAME)
        if isinstance(cmd, spec.QueueDeclare) and cmd.passive and cmd.queue not in self.queues:
            conn.send_exception(
                session, 404, command_id=event.command_id, description=f"no queue {cmd.queue}"
            )
            return
        if isinstance(cmd, spec.QueueDeclare):
            self.queues.setdefault(cmd.queue or "", [])
        elif isinstance(cmd, spec.MessageTransfer):
            props = [s for s in event.header if isinstance(s, spec.DeliveryProperties)]
            key = props[0].routing_key if props else cmd.destination
            self.queues.setdefault(key or "", []).append((event.header, event.body))
        elif isinstance(cmd, spec.MessageSubscribe):
            self.subscriptions[session, cmd.destination or ""] = [cmd.queue, 0]
        elif isinstance(cmd, spec.MessageFlow) and cmd.unit == 0:
            sub = self.subscriptions[session, cmd.destination or ""]
            sub[1] += cmd.value or 0
        elif isinstance(cmd, spec.QueueQuery):
            depth = len(self.queues.get(cmd.queue or "", []))
            result = spec.QueueQueryResult(queue=cmd.queue, message_count=depth)
            conn.send_result(session, event.command_id, result)
        conn.complete(session, event.command_id)
        self.deliver()

    def deliver(self) -> None:
        for (session, destination), sub in self.subscriptions.items():
            queue = self.queues.get(sub[0], [])
            while sub[1] and queue:
                header, body = queue.pop(0)
                sub[1] -= 1
                transfer = spec.MessageTransfer(destination=destination, accept_mode=0)
                self.conn.send_command(session, transfer, header=header, body=body, sync=True)


def serve(
    sock: socket.socket,
    conn: engine.Connection,
    app: Callable[[engine.Event], None],
    stop: threading.Event,
) -> None:
    """Drive ``conn`` over ``sock`` until it closes: the adapters' loop, in small."""
    conn.start(time.monotonic())
    while not conn.closed and not stop.is_set():
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
        ready, _, _ = select.select([sock], [], [], 0.02)
        now = time.monotonic()
        if ready:
            data = sock.recv(65536)
            events = conn.receive_data(data, now)
        else:
            events = conn.handle_timer(now)
        for event in events:
            app(event)
    out = conn.data_to_send()
    if out:
        sock.sendall(out)
    sock.close()


@pytest.fixture
def our_server() -> Any:
    qpid_module("qpid.connection")  # (skips, saying why, without the peer)
    ours, theirs = socket.socketpair()
    conn = engine.Connection(engine.Role.SERVER, authenticator=authenticator())
    broker = Broker(conn)
    stop = threading.Event()
    thread = threading.Thread(target=serve, args=(ours, conn, broker.handle, stop), daemon=True)
    thread.start()
    yield theirs, broker
    stop.set()
    thread.join(5)
    assert not thread.is_alive()


def test_qpid_client_against_our_server(our_server: Any) -> None:
    sock, broker = our_server
    connection = qpid_module("qpid.connection")
    datatypes = qpid_module("qpid.datatypes")
    client = connection.Connection(sock, username="guest", password="guest")
    client.start(10)
    ssn = client.session(b"qpid-session", timeout=10)  # (a vbin16: bytes)
    ssn.queue_declare(queue="q")
    props = ssn.delivery_properties(routing_key="q")
    for n in range(3):
        ssn.message_transfer(destination="", message=datatypes.Message(props, b"hello %d" % n))
    result = ssn.queue_query(queue="q")
    assert result.queue == "q" and result.message_count == 3
    ssn.message_subscribe(queue="q", destination="t")
    incoming = ssn.incoming("t")
    ssn.message_flow(destination="t", unit=ssn.credit_unit.byte, value=0xFFFFFFFF)
    ssn.message_flow(destination="t", unit=ssn.credit_unit.message, value=2)
    got = [incoming.get(timeout=10) for _ in range(2)]
    assert [m.body for m in got] == [b"hello 0", b"hello 1"]
    assert got[0].get("delivery_properties").routing_key == "q"
    ssn.message_accept(datatypes.RangedSet(*[m.id for m in got]))
    ssn.execution_sync()
    ssn.message_flow(destination="t", unit=ssn.credit_unit.message, value=1)
    assert incoming.get(timeout=10).body == b"hello 2"
    ssn.close(10)
    # a refused command: execution.exception, and the session is detached
    session = qpid_module("qpid.session")
    bad = client.session(b"refused", timeout=10)
    with pytest.raises(session.SessionException) as refused:
        bad.queue_declare(queue="missing", passive=True)
    assert refused.value.args[0].error_code == 404
    client.close(10)
    assert broker.seen[:2] == ["queue.declare", "message.transfer"]
    assert "message.accept" in broker.seen and "message.flow" in broker.seen


class QpidServer:
    """qpid's own small 0-10 server (``qpid/tests/connection.py``), on a port of its own:
    its ``TestServer`` serving each accepted socket as its test's ``setUp`` does."""

    def __init__(self) -> None:
        tests = qpid_module("qpid.tests.connection")
        qconnection = qpid_module("qpid.connection")
        qqueue = qpid_module("qpid.queue")
        self.queue = qqueue.Queue()
        # its tests read QPID_TEST_HOST and QPID_TEST_PORT; by default a free port here
        host = os.environ.get("QPID_TEST_HOST", "127.0.0.1")
        self.listener = socket.create_server((host, int(os.environ.get("QPID_TEST_PORT", "0"))))
        self.host = "127.0.0.1" if host in ("", "0.0.0.0") else host
        self.port = self.listener.getsockname()[1]
        self.server = tests.TestServer(self.queue)
        self.running = True

        def run() -> None:
            while self.running:
                try:
                    sock, _ = self.listener.accept()
                except OSError:
                    return
                conn = qconnection.Connection(sock, delegate=self.server.connection)
                with contextlib.suppress(qconnection.Closed):
                    conn.start(5)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.running = False
        self.listener.close()
        self.thread.join(3)


def drive(
    sock: socket.socket,
    conn: engine.Connection,
    until: Callable[[list[engine.Event]], bool],
    events: list[engine.Event],
    timeout: float = 10.0,
) -> None:
    """Move bytes between ``conn`` and the socket until ``until(events)`` holds."""
    deadline = time.monotonic() + timeout
    while not until(events):
        assert time.monotonic() < deadline, events
        out = conn.data_to_send()
        if out:
            sock.sendall(out)
        ready, _, _ = select.select([sock], [], [], 0.02)
        now = time.monotonic()
        if ready:
            events += conn.receive_data(sock.recv(65536), now)
        else:
            events += conn.handle_timer(now)


def test_our_client_against_qpids_server() -> None:
    server = QpidServer()
    try:
        sock = socket.create_connection((server.host, server.port))
        conn = engine.Connection(engine.Role.CLIENT)
        conn.start(time.monotonic())
        events: list[engine.Event] = []
        drive(
            sock, conn, lambda ev: any(isinstance(e, engine.ConnectionOpened) for e in ev), events
        )
        opened = next(e for e in events if isinstance(e, engine.ConnectionOpened))
        assert conn.mechanism is not None and conn.mechanism.name == "ANONYMOUS"
        assert opened.channel_max == 2047
        conn.attach(b"ours", timeout=10)
        drive(sock, conn, lambda ev: any(isinstance(e, engine.SessionAttached) for e in ev), events)
        # a command with a result
        query = conn.send_command(b"ours", spec.QueueQuery(queue="asdf"), sync=True)
        drive(sock, conn, lambda ev: any(isinstance(e, engine.ResultReceived) for e in ev), events)
        result = next(e for e in events if isinstance(e, engine.ResultReceived))
        assert result.command_id == query and result.value == spec.QueueQueryResult(queue="asdf")
        # a message to qpid's queue, and one echoed back
        conn.send_command(
            b"ours", spec.MessageTransfer(destination="four"), body=b"four", sync=True
        )
        sock.sendall(conn.data_to_send())
        cmd = server.queue.get(10)
        assert cmd.destination == "four" and cmd.payload == b"four"
        header = (spec.DeliveryProperties(routing_key="k"),)
        sent = conn.send_command(
            b"ours",
            spec.MessageTransfer(destination="echo"),
            header=header,
            body=b"ping",
            sync=True,
        )
        drive(sock, conn, lambda ev: any(isinstance(e, engine.CommandReceived) for e in ev), events)
        echo = next(e for e in events if isinstance(e, engine.CommandReceived))
        assert isinstance(echo.command, spec.MessageTransfer) and echo.body == b"ping"
        assert echo.header == header
        conn.complete(b"ours", echo.command_id)
        drive(
            sock,
            conn,
            lambda ev: any(
                isinstance(e, engine.CommandsCompleted) and sent in e.command_ids for e in ev
            ),
            events,
        )
        conn.detach(b"ours", keep=False)
        drive(sock, conn, lambda ev: any(isinstance(e, engine.SessionDetached) for e in ev), events)
        conn.close()
        drive(
            sock, conn, lambda ev: any(isinstance(e, engine.ConnectionClosed) for e in ev), events
        )
        sock.close()
    finally:
        server.stop()
