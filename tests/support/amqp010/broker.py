"""Our 0-10 server-role engine playing a small broker (tests/client/amqp010): queues,
subscriptions with message credit, deliveries, accepts, a queue query's result, a refused
passive declare; in memory (:class:`Server`) or over sockets for the adapters
(:func:`serving`)."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine
from support.amqp010.engine import authenticator


class Server:
    """Our server-role engine playing a broker: queues, subscriptions with message
    credit, deliveries, a queue query's result; ``hold`` keeps commands uncompleted."""

    def __init__(
        self,
        store: engine.SessionStore | None = None,
        queues: dict[str, list[tuple[tuple[spec.Struct, ...], bytes]]] | None = None,
    ) -> None:
        self.conn = engine.Connection(
            engine.Role.SERVER, authenticator=authenticator(), sessions=store
        )
        self.queues = {} if queues is None else queues
        self.subscriptions: dict[tuple[bytes, str], list[Any]] = {}
        self.commands: list[spec.Command] = []
        self.events: list[engine.Event] = []
        self.hold = False

    def handle(self, events: list[engine.Event]) -> None:
        for event in events:
            self.events.append(event)
            if isinstance(event, engine.OpenRequested):
                self.conn.accept_open()
            elif isinstance(event, engine.CommandReceived):
                self.command(event)
        self.deliver()

    def command(self, event: engine.CommandReceived) -> None:
        conn, cmd, session = self.conn, event.command, event.session
        self.commands.append(cmd)
        if isinstance(cmd, spec.QueueDeclare) and cmd.passive and cmd.queue not in self.queues:
            conn.send_exception(session, 404, command_id=event.command_id, description="no q")
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
            sub = self.subscriptions.get((session, cmd.destination or ""), [None, 0])
            sub[1] += cmd.value or 0
        elif isinstance(cmd, spec.MessageCancel):
            del self.subscriptions[session, cmd.destination or ""]
        elif isinstance(cmd, spec.QueueQuery):
            depth = len(self.queues.get(cmd.queue or "", []))
            result = spec.QueueQueryResult(queue=cmd.queue, message_count=depth)
            conn.send_result(session, event.command_id, result)
        attached = self.conn.sessions.get(session)
        if self.hold or attached is None or attached.state is not engine.SessionState.ATTACHED:
            return  # (held; or detached in the same bytes: nothing to complete)
        conn.complete(session, event.command_id)

    def deliver(self) -> None:
        if self.conn.state is not engine.ConnectionState.OPEN:
            return
        for (session, destination), sub in self.subscriptions.items():
            queue = self.queues.get(sub[0], [])
            while sub[1] and queue:
                header, body = queue.pop(0)
                sub[1] -= 1
                transfer = spec.MessageTransfer(destination=destination, accept_mode=0)
                self.conn.send_command(session, transfer, header=header, body=body)


def _serve(sock: socket.socket, server: Server, stop: threading.Event) -> None:
    conn = server.conn
    conn.start(time.monotonic())
    with sock:
        while not conn.closed and not stop.is_set():
            out = conn.data_to_send()
            if out:
                sock.sendall(out)
            ready, _, _ = select.select([sock], [], [], 0.02)
            now = time.monotonic()
            if ready:
                try:
                    data = sock.recv(65536)
                except OSError:
                    data = b""
                server.handle(conn.receive_data(data, now))
            else:
                server.handle(conn.handle_timer(now))
        with contextlib.suppress(OSError):
            sock.sendall(conn.data_to_send())


@contextlib.contextmanager
def serving(queues: dict[str, Any] | None = None) -> Iterator[int]:
    """Our broker on a free port of 127.0.0.1, each connection served in a thread of its
    own, all with the same ``queues``: yields the port."""
    queues = {} if queues is None else queues
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    threads: list[threading.Thread] = []

    def accept() -> None:
        while not stop.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            thread = threading.Thread(
                target=_serve, args=(sock, Server(queues=queues), stop), daemon=True
            )
            thread.start()
            threads.append(thread)

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()
        acceptor.join(3)
        for thread in threads:
            thread.join(3)
