"""qpid-python's own small 0-10 server (``qpid/tests/connection.py``, its ``TestServer``)
on a free port of its own, served as that test's ``setUp`` serves it: it answers
``queue.query``, echoes a ``message.transfer`` to ``echo`` back, and puts any other
transfer in :attr:`QpidServer.queue`. Skips, saying why, without the peer."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

from support.qpid_peer import qpid_module


class QpidServer:
    def __init__(self) -> None:
        tests = qpid_module("qpid.tests.connection")
        qconnection = qpid_module("qpid.connection")
        qqueue = qpid_module("qpid.queue")
        self.queue = qqueue.Queue()
        self.listener = socket.create_server(("127.0.0.1", 0))
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
                # (a client that leaves before the open fails the start: its business)
                with contextlib.suppress(qconnection.Closed, qconnection.ConnectionFailed):
                    conn.start(5)

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.running = False
        self.listener.close()
        self.thread.join(3)


@contextlib.contextmanager
def qpid_server() -> Iterator[QpidServer]:
    server = QpidServer()
    try:
        yield server
    finally:
        server.stop()
