"""Which protocol a client speaks, by the 8 octets it sends first (as RabbitMQ and Qpid,
which serve several on one port, tell them apart): one table, :data:`PROTOCOLS`, from a
protocol header to the key of the engine that serves it (:attr:`Broker.acceptors
<amqp_sansio.broker.Broker.acceptors>` makes its connection, with the factory
:data:`~amqp_sansio.broker._accept.CONNECTIONS` names for the key). AMQP 0-9-1's
``AMQP\\x00\\x00\\x09\\x01`` (0-9-1 spec 4.2.2) and the earlier headers of its line RabbitMQ
serves too (:data:`~amqp_sansio.framing.amqp091.SERVED_HEADERS`: 0-9's, 0-8's, py-amqplib's)
go to the 0-9-1 engine; AMQP 0-10's ``AMQP\\x01\\x01\\x00\\x0a`` (0-10 spec 4.2) to the 0-10
engine. Another 0-x header (``AMQP\\x01\\x01...``, ``AMQP\\x00\\x00...``) is :data:`OLDER`: it
gets the 0-9-1 header back and the connection closes (0-9-1 spec 4.2.2, rule
"protocol-negotiation"), as RabbitMQ answers it; anything else (1.0's headers: ``AMQP``
then protocol id 0, 2 or 3 and version 1.0.0, core spec 2.2, 5.1, 5.2.1) goes to the 1.0
engine, which answers it by 1.0's rule (its own header, then it closes). On the amqps port
the same octets, read after the TLS handshake, decide (:class:`ProtocolSniffer`)."""

from __future__ import annotations

from typing import Any

from ..framing.amqp010 import PROTOCOL_HEADER as AMQP010_HEADER
from ..framing.amqp091 import SERVED_HEADERS

__all__ = ["AMQP10", "OLDER", "PROTOCOLS", "ProtocolSniffer", "pick_protocol"]

#: The key of the 1.0 engine: every header not in :data:`PROTOCOLS` and not :data:`OLDER`.
AMQP10 = "1.0"
#: The key of an unserved 0-x header: 0-9-1's header is the answer, and the connection ends.
OLDER = "0-9-1-older"
#: The headers served by an engine other than 1.0's, and that engine's key.
PROTOCOLS: dict[bytes, str] = {
    **dict.fromkeys(SERVED_HEADERS, "0-9-1"),
    AMQP010_HEADER: "0-10",
}
#: The first two octets after ``AMQP`` of the 0-x lines (class 1 instance 1, and 0-9-1's
#: revisions: 0 0); 1.0's are a protocol id then 1.
_OLDER_LINES = (b"\x01\x01", b"\x00\x00")


def pick_protocol(header: bytes) -> str:
    """The key of the engine for a client whose first octets are ``header`` (at least 8,
    or all it sent before it went): the one :data:`PROTOCOLS` gives (``"0-9-1"``, 0-8's
    and 0-9's headers too; ``"0-10"``), :data:`OLDER` (answer 0-9-1's
    :data:`~amqp_sansio.amqp091.PROTOCOL_HEADER` and close) or :data:`AMQP10`
    (everything else, TLS records of the amqps port included)."""
    served = PROTOCOLS.get(bytes(header[:8]))
    if served is not None:
        return served
    if header[:4] == b"AMQP" and len(header) >= 8 and bytes(header[4:6]) in _OLDER_LINES:
        return OLDER
    return AMQP10


class ProtocolSniffer:
    """The inner object of an amqps connection's TLS layer (TLS from the first octet): the
    first 8 octets of plaintext pick the engine, as :func:`pick_protocol` picks it on the
    plain port. Until they are in, nothing is passed on; then a 1.0 (or unknown) header
    goes to ``engine`` (the 1.0 engine, told of the transport's security as the TLS layer
    told this object), and a header of :data:`PROTOCOLS` is held, :attr:`wants` set to its
    engine's key, for the broker to put that engine in its place (:meth:`switch`)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        #: Where plaintext goes once picked (None: not yet).
        self.inner: Any = None
        #: The key of the engine the client's header asks for (held in :attr:`head`), when
        #: it is not the 1.0 engine's; None: not (yet) such a header.
        self.wants: str | None = None
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
        if self.wants is not None:
            self.head += data  # (until the switch)
            return []
        self.head += data
        if data and len(self.head) < 8:
            return []
        if data:
            self.wants = PROTOCOLS.get(bytes(self.head[:8]))
            if self.wants is not None:
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
