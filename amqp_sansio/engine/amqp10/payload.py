"""The payloads of deliveries (core spec 2.6.12): what :meth:`Sender.send` was given, as views
that cannot change while its frames wait to go out, and the bound on a delivery-tag. The
:class:`~amqp_sansio.Delivery` itself is its link's (:mod:`.link`)."""

from __future__ import annotations

from ...definitions.amqp10.message import Message

#: The longest delivery-tag, in octets (core spec 2.8.7): the sender refuses a longer one
#: (``LocalProtocolError``), the receiver detaches the link of a peer that sends one
#: (``amqp:invalid-field``).
MAX_DELIVERY_TAG = 32
#: A transfer's bytes: a view of one immutable ``bytes``, or views of several (a message
#: whose large data section is kept apart, see :meth:`Sender.send`).
Payload = memoryview | list[memoryview]
#: A queued transfer frame: whole, or its header and performative followed by views.
QueuedTransfer = bytearray | tuple[bytes | bytearray | memoryview, ...]


def _payload(data: bytes | bytearray | memoryview | Message) -> Payload:
    """What :meth:`Sender.send` was given, as views that cannot change while frames wait to
    go out: a caller's bytearray (or view of one) is copied once; a
    :class:`~amqp_sansio.Message` is encoded, its large data sections not copied."""
    if type(data) is bytes:
        return memoryview(data)
    if isinstance(data, Message):
        parts = data._parts()
        if len(parts) == 1:
            return memoryview(parts[0])
        return [memoryview(part) for part in parts]
    return memoryview(bytes(data))


def _cut(parts: list[memoryview], start: int, stop: int) -> tuple[memoryview, ...]:
    """Views of bytes ``start`` to ``stop`` of the pieces ``parts`` join to."""
    views = []
    at = 0
    for part in parts:
        end = at + len(part)
        if end > start and at < stop:
            views.append(part[max(start - at, 0) : stop - at])
        at = end
    return tuple(views)
