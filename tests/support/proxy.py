"""A TCP proxy in threads that a test cuts: each side of every connection through it sees its
transport end (the reconnection tests of both protocols)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["Proxy", "proxy"]


class Proxy:
    """A TCP proxy in threads to ``127.0.0.1:target``. :meth:`cut` drops every connection
    through it; with ``every``, it cuts them itself each time that many more bytes have
    gone through (either way), ``kills`` times."""

    def __init__(self, target: int, *, every: int = 0, kills: int = 0) -> None:
        self.target = target
        self.every, self.kills = every, kills
        self.cuts = 0
        self._bytes = 0
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            with self._lock:
                self._socks += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        while True:
            try:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            except OSError:
                break
            with self._lock:
                self._bytes += len(data)
                due = self.every and self._bytes >= self.every and self.cuts < self.kills
                if due:
                    self._bytes = 0
                    self.cuts += 1
            if due:
                self.cut()
        self._drop(src, dst)

    def _drop(self, *socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def cut(self) -> None:
        """Drop every connection now (each side sees its transport end)."""
        with self._lock:
            socks, self._socks = self._socks, []
        self._drop(*socks)

    def close(self) -> None:
        self._closed = True
        self.listener.close()
        self.cut()


@contextlib.contextmanager
def proxy(target: int, **options: Any) -> Iterator[Proxy]:
    p = Proxy(target, **options)
    try:
        yield p
    finally:
        p.close()
