"""Which protocol a client speaks, by the 8 octets it sends first (as RabbitMQ, which
serves both on one port, tells them apart): AMQP 1.0's headers (``AMQP`` then protocol id
0, 2 or 3 and version 1.0.0; core spec 2.2, 5.1, 5.2.1), AMQP 0-9-1's ``AMQP\\x00\\x00\\x09\\x01``
(0-9-1 spec 4.2.2) and the earlier headers of its line RabbitMQ serves too: 0-9's
(``AMQP\\x01\\x01\\x00\\x09``, served as 0-9-1) and 0-8's (``AMQP\\x01\\x01\\x08\\x00``, and
py-amqplib's ``AMQP\\x01\\x01\\x09\\x01``; served as 0-8), all to the 0-9-1 engine
(:data:`~amqp_sansio.framing.amqp091.SERVED_HEADERS`). Another 0-x header (0-10, another
0-9-1 revision: ``AMQP\\x01\\x01...``, ``AMQP\\x00\\x00...``) gets the 0-9-1 header back,
the server's preferred version of that line, and the connection closes (0-9-1 spec 4.2.2,
rule "protocol-negotiation"), as RabbitMQ answers it; anything else goes to the 1.0
engine, which answers it by 1.0's rule (its own header, then it closes). On the amqps
port the same octets, read after the TLS handshake, decide (:class:`ProtocolSniffer`)."""

from __future__ import annotations

from typing import Any, Literal

from ..framing.amqp091 import SERVED_HEADERS

__all__ = ["ProtocolSniffer", "pick_protocol"]

#: The octets a 1.0 header starts with after ``AMQP`` (its protocol id).
_AMQP10_IDS = (0, 2, 3)


def pick_protocol(header: bytes) -> Literal["1.0", "0-9-1", "0-9-1-older"]:
    """The engine for a client whose first octets are ``header`` (at least 8, or all it
    sent before it went): ``"0-9-1"`` (0-8's and 0-9's headers too), ``"0-9-1-older"``
    (answer 0-9-1's :data:`~amqp_sansio.amqp091.PROTOCOL_HEADER` and close) or ``"1.0"``
    (everything else, TLS records of the amqps port included)."""
    if bytes(header[:8]) in SERVED_HEADERS:
        return "0-9-1"
    if header[:4] == b"AMQP" and len(header) >= 8:
        if header[4] == 1 and header[5] == 1:  # 0-10 and others: class 1, instance 1
            return "0-9-1-older"
        if header[4] == 0 and header[5] == 0:  # another 0-x revision (1.0's is 0 1 0 0)
            return "0-9-1-older"
    return "1.0"


class ProtocolSniffer:
    """The inner object of an amqps connection's TLS layer (TLS from the first octet): the
    first 8 octets of plaintext pick the engine, as :func:`pick_protocol` picks it on the
    plain port. Until they are in, nothing is passed on; then a 1.0 (or unknown) header
    goes to ``engine`` (the 1.0 engine, told of the transport's security as the TLS layer
    told this object), and a 0-9-1 header is held, :attr:`wants_091` set, for the broker
    to put a 0-9-1 engine in its place (:meth:`switch`)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        #: Where plaintext goes once picked (None: not yet).
        self.inner: Any = None
        #: The client sent the 0-9-1 header (held in :attr:`head`).
        self.wants_091 = False
        self.head = b""
        self._security: dict[str, Any] | None = None
        self._given: list[Any] = []  # what ``inner`` gave for the head (see switch)

    def set_transport_security(self, **security: Any) -> None:
        self._security = security
        if self.inner is self.engine:
            self.engine.set_transport_security(**security)

    def receive_data(self, data: bytes, now: float) -> list[Any]:
        if self.inner is not None:
            given, self._given = self._given, []
            return given + list(self.inner.receive_data(data, now) or ())
        if self.wants_091:
            self.head += data  # (until the switch)
            return []
        self.head += data
        if data and len(self.head) < 8:
            return []
        if data and pick_protocol(self.head) == "0-9-1":
            self.wants_091 = True
            return []
        self.inner = self.engine
        if self._security is not None:
            self.engine.set_transport_security(**self._security)
        head, self.head = self.head, b""
        events: list[Any] = []
        if head:
            events += self.engine.receive_data(head, now)
        if not data:
            events += self.engine.receive_data(b"", now)
        return events

    def switch(self, inner: Any, now: float) -> None:
        """Plaintext goes to ``inner`` from now on, starting with what was held for it (the
        events it gives for that come with the next input's)."""
        self.inner = inner
        head, self.head = self.head, b""
        self._given = list(inner.receive_data(head, now))

    def data_to_send(self) -> bytes:
        return b"" if self.inner is None else bytes(self.inner.data_to_send())

    def next_deadline(self) -> float | None:
        deadline: float | None = (self.inner or self.engine).next_deadline()
        return deadline

    def handle_timer(self, now: float) -> list[Any]:
        return list((self.inner or self.engine).handle_timer(now) or ())
