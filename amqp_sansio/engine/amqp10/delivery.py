"""Deliveries (core spec 2.6.12) and the views of their payloads: what :meth:`Sender.send` was
given, as views that cannot change while its frames wait to go out."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...definitions.amqp10.message import Message

if TYPE_CHECKING:
    from ...definitions.amqp10.messaging import DeliveryState
    from .link import Link
    from .transactions import _Txn


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


class Delivery:
    """One delivery on a link (core spec 2.6.12): its tag and id, and the state and
    settlement of each end. ``local_state`` is what we last said, ``remote_state`` what the
    peer last said."""

    __slots__ = (
        "_chunks",
        "_ignore",
        "_settle_on_remote",
        "aborted",
        "complete",
        "id",
        "link",
        "local_state",
        "message_format",
        "remote_settled",
        "remote_state",
        "resumed",
        "settled",
        "size",
        "tag",
        "transaction",
    )

    def __init__(self, link: Link, tag: bytes, delivery_id: int, message_format: int) -> None:
        self.link = link
        self.tag = tag
        self.id = delivery_id
        self.message_format = message_format
        self.settled = False
        self.remote_settled = False
        self.local_state: DeliveryState | None = None
        self.remote_state: DeliveryState | None = None
        self.aborted = False
        self.complete = False
        self.size = 0
        self._chunks: list[bytes | memoryview] = []
        self._settle_on_remote: Any = None
        #: True when this delivery was sent again after its link was resumed (2.6.13).
        self.resumed = False
        self._ignore = False
        #: The transaction its work belongs to (posting, acquisition, retirement; core spec
        #: 4.4): a :class:`~amqp_sansio.Transaction` or a
        #: :class:`~amqp_sansio.engine.amqp10.transactions.TransactionRecord`. Its outcome is final
        #: only
        # once that
        #: transaction has committed.
        self.transaction: _Txn | None = None

    # -- for the receiver: the bytes of a delivery still arriving ---------------------------

    def add_chunk(self, chunk: bytes | memoryview) -> None:
        """Keep a transfer's payload (a view of the bytes received, or bytes)."""
        self._chunks.append(chunk)

    def add_chunks(self, chunks: list[memoryview]) -> None:
        """Keep the pieces of a payload gathered across reads."""
        self._chunks += chunks

    def take_chunks(self, last: bytes | memoryview | None = None) -> list[bytes | memoryview]:
        """The payloads kept so far, and ``last`` after them, handed over (the delivery
        keeps none after)."""
        chunks = self._chunks
        if last is not None:
            chunks.append(last)
        self._chunks = []
        return chunks

    def unpin(self, obj: object, size: int) -> None:
        """Copy out this delivery's views of ``obj`` (``size`` bytes received) where they
        are less than half of it, so that what it holds stays within twice its size (see
        ``Connection._unpin``). Its chunks from ``obj`` are the last ones: older views are of
        older bytes (or, for views of one bytes object fed in turn, of other parts of it: the
        count stops at ``size``)."""
        chunks = self._chunks
        held = 0
        first = len(chunks)
        while first and held < size:
            chunk = chunks[first - 1]
            if type(chunk) is memoryview:
                if chunk.obj is not obj:
                    break
                held += len(chunk)
            first -= 1
        if held and held * 2 < size:
            chunks[first:] = [bytes(c) if type(c) is memoryview else c for c in chunks[first:]]

    @property
    def ignored(self) -> bool:
        """Its transfers are ignored: a delivery resumed that we had settled (2.6.13), or
        one of a transaction's that we refused (its bytes are not kept)."""
        return self._ignore

    def ignore(self, ignored: bool = True) -> None:
        """Set whether its transfers are ignored (see :attr:`ignored`)."""
        self._ignore = ignored

    @property
    def settles_on_remote(self) -> bool:
        """We settled it in rcv-settle-mode second: settlement waits for the sender's."""
        return bool(self._settle_on_remote)

    def settle_on_remote(self) -> None:
        """Settle it once the sender has (rcv-settle-mode second, core spec 2.8.3)."""
        self._settle_on_remote = True

    def __repr__(self) -> str:
        return (
            f"<Delivery id={self.id} tag={self.tag!r} settled={self.settled} "
            f"remote_settled={self.remote_settled} state={self.remote_state!r}>"
        )
