"""Raw AMQP 0-9-1 and 0-8 octets, as a client writes them by hand (py-amqplib's 0-8
handshake, hostile pipelines), and what comes back read as frames: for the tests that put
the same bytes to RabbitMQ and to our broker side by side (tests/broker/amqp091)."""

from __future__ import annotations

import socket
import struct
import time
from typing import NamedTuple

from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.framing.amqp091 import encode_body_frame, encode_header_frame

__all__ = [
    "Frame",
    "Session",
    "frames",
    "handshake_steps",
    "lstr",
    "method",
    "publish",
    "sstr",
]


class Frame(NamedTuple):
    """One frame read back: type, channel, payload; ``ids`` the method's (class, method)
    for a method frame, else None."""

    type: int
    channel: int
    payload: bytes

    @property
    def ids(self) -> tuple[int, int] | None:
        if self.type != 1 or len(self.payload) < 4:
            return None
        cid, mid = struct.unpack_from(">HH", self.payload)
        return cid, mid

    @property
    def args(self) -> bytes:
        return self.payload[4:] if self.type == 1 else self.payload


def sstr(text: str) -> bytes:
    data = text.encode()
    return bytes([len(data)]) + data


def lstr(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def method(channel: int, class_id: int, method_id: int, args: bytes = b"") -> bytes:
    """A method frame with ``args`` as written (any version's layout)."""
    payload = struct.pack(">HH", class_id, method_id) + args
    return struct.pack(">BHI", 1, channel, len(payload)) + payload + b"\xce"


def publish(channel: int, routing_key: str, body: bytes) -> bytes:
    """``basic.publish`` to the default exchange (0-8 and 0-9-1 alike), header, body."""
    return (
        method(channel, 60, 40, b"\x00\x01" + sstr("") + sstr(routing_key) + b"\x00")
        + encode_header_frame(channel, len(body), spec.BasicProperties(content_type="text/plain"))
        + encode_body_frame(channel, body)
    )


def handshake_steps(header: bytes) -> list[bytes]:
    """The writes of a client that logs in as guest (PLAIN) and opens ``/`` and channel
    1, each sent once the server has answered the one before (as py-amqplib does)."""
    return [
        header,
        method(0, 10, 11, lstr(b"") + sstr("PLAIN") + lstr(b"\x00guest\x00guest") + sstr("en_US")),
        method(0, 10, 31, struct.pack(">HIH", 2047, 131072, 0))
        + method(0, 10, 40, sstr("/") + sstr("") + b"\x00"),
        method(1, 20, 10, sstr("")),
    ]


def frames(data: bytes) -> list[Frame]:
    """The whole frames in ``data`` (a leading protocol header is given as a frame of type
    -1 with the header as payload)."""
    found: list[Frame] = []
    at = 0
    if data[:4] == b"AMQP":
        found.append(Frame(-1, 0, data[:8]))
        at = 8
    while at + 7 <= len(data):
        kind, channel, size = struct.unpack_from(">BHI", data, at)
        found.append(Frame(kind, channel, data[at + 7 : at + 7 + size]))
        at += 8 + size
    return found


class Session:
    """A client's socket to ``host:port``: :meth:`send` bytes, :meth:`read` what comes
    back until the server is quiet for ``quiet`` seconds or closes (:attr:`closed`)."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=5)
        self.closed = False

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self, quiet: float = 0.3, *, until_closed: float = 0.0) -> bytes:
        """What arrives until ``quiet`` seconds pass with nothing (or, with
        ``until_closed``, until the server closes, at most that long)."""
        out = b""
        deadline = time.monotonic() + until_closed
        self.sock.settimeout(quiet if not until_closed else 0.2)
        while not self.closed:
            try:
                data = self.sock.recv(65536)
            except TimeoutError:
                if until_closed and time.monotonic() < deadline:
                    continue
                break
            except ConnectionResetError:
                data = b""
            if not data:
                self.closed = True
                break
            out += data
        return out

    def exchange(self, data: bytes, quiet: float = 0.3) -> list[Frame]:
        self.send(data)
        return frames(self.read(quiet))
