"""The sending end of a link (core spec 2.6): sending, resuming and aborting deliveries, and
the receiver's flow state."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

from ...codec.amqp10.composite import _requires_ok, unchecked
from ...definitions.amqp10.message import Message
from ...definitions.amqp10.performatives import Attach, Flow, Role, SenderSettleMode, Transfer
from ...errors import LocalProtocolError
from .events import CreditChanged
from .frames import _frame
from .link import Delivery, Link, TransactionWork
from .payload import MAX_DELIVERY_TAG, _payload
from .serial import serial_add, serial_diff

_SENDER = Role.SENDER

if TYPE_CHECKING:
    from ...definitions.amqp10.messaging import DeliveryState


_UINT_MAX = 0xFFFFFFFF

_SND_SETTLED = SenderSettleMode.SETTLED


#: Transfers built by the engine from values it has checked: no validation on the hot path.
_transfer = unchecked(Transfer)


def _checked_tag(tag: Any) -> bytes:
    """A delivery tag given by the caller: bytes of at most 32 (core spec 2.8.7)."""
    if not isinstance(tag, bytes | bytearray | memoryview):
        raise LocalProtocolError(f"a delivery tag is bytes, not {type(tag).__name__}")
    checked = bytes(tag)
    if len(checked) > MAX_DELIVERY_TAG:
        raise LocalProtocolError(f"a delivery tag is at most {MAX_DELIVERY_TAG} bytes (2.8.7)")
    return checked


class Sender(Link):
    """The sending end of a link."""

    role = Role.SENDER

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tags = itertools.count()
        #: When true (the default), a delivery the receiver settles is settled here too,
        #: at once: the outcome is in the DeliveryUpdated event and on the Delivery. When
        #: false, the application calls settle() itself.
        self.auto_settle = True
        #: The transaction the receiver's flow put our sends in (core spec 4.4.3).
        self._acquiring: TransactionWork | None = None

    def send(
        self,
        data: bytes | bytearray | memoryview | Message,
        *,
        tag: bytes | None = None,
        settled: bool | None = None,
        message_format: int = 0,
        more: bool = False,
        delivery: Delivery | None = None,
        state: DeliveryState | None = None,
        transaction: TransactionWork | None = None,
    ) -> Delivery:
        """Send a message (an encoded :class:`~amqp_sansio.Message`), or a chunk of one.

        A new delivery takes one unit of link credit (:class:`LocalProtocolError` if there is
        none). ``more=True`` leaves the delivery open: continue it by passing it back as
        ``delivery``. Frames are split at the peer's max-frame-size. ``settled`` defaults
        from the link's snd-settle-mode (settled only in mode ``SETTLED``). ``transaction``
        posts the message in that :class:`~amqp_sansio.Transaction` (core spec 4.4.1).

        ``data`` may also be the :class:`~amqp_sansio.Message` itself: it is encoded here
        (the same bytes as :meth:`Message.encode <amqp_sansio.Message.encode>`), and the
        bytes of a large data section go into the transfer frames (core spec 2.7.5, 3.2)
        as they are, with no copy of the message made first. ``bytes`` are framed as they
        are too; a ``bytearray`` or a view of one is copied once, so that the caller may
        change it afterwards.
        """
        self._check_attached()
        payload = _payload(data)
        length = len(payload) if type(payload) is memoryview else sum(map(len, payload))
        size = (0 if delivery is None else delivery.size) + length
        limit = self.remote_max_message_size
        if limit and size > limit:
            raise LocalProtocolError(
                f"message of {size} bytes exceeds the peer's max-message-size {limit}"
            )
        if delivery is None:
            delivery = self._new_delivery(tag, settled, message_format, state, transaction)
            first = True
        else:
            if delivery is not self._current:
                raise LocalProtocolError("that delivery is not the one being sent")
            first = False
        delivery.size = size
        self._current = delivery if more else None
        if not more:
            delivery.complete = True
        self.session.send_transfer(self, delivery, payload, first, more)
        return delivery

    def _new_delivery(
        self,
        tag: bytes | None,
        settled: bool | None,
        message_format: int,
        state: Any,
        transaction: Any,
    ) -> Delivery:
        """A new delivery for :meth:`send`, from what the caller gave, checked: it takes a
        unit of link credit, and is held until settled unless sent settled."""
        owner = None
        if transaction is not None or self._acquiring is not None:
            owner, state = self._txn.posting(self, transaction, state)
        # The engine builds its transfers unchecked: check what the caller gave first,
        # before anything changes.
        if tag is not None:
            tag = _checked_tag(tag)
        if type(message_format) is not int or not 0 <= message_format <= _UINT_MAX:
            raise LocalProtocolError(f"message-format {message_format!r} is not a uint")
        if state is not None and not _requires_ok("delivery-state", state):
            raise LocalProtocolError(f"{state!r} is not a delivery state")
        if (
            self._current is not None
            or self.link_credit <= 0
            or self._sent_incomplete
            or (self.remote is not None and self.remote.incomplete_unsettled)
        ):
            raise self._cannot_start()
        if settled is None:
            settled = self.snd_settle_mode is _SND_SETTLED
        else:
            self._check_settle_mode(settled)
        cap = self.max_unsettled
        if not settled and cap is not None and len(self.unsettled) >= cap:
            raise LocalProtocolError(
                f"{len(self.unsettled)} unsettled deliveries: the link's max_unsettled is {cap}"
            )
        if tag is None:
            tag = next(self._tags).to_bytes(8, "big").lstrip(b"\x00") or b"\x00"
            while tag in self.unsettled:  # tags carried over from a resumed link
                tag = next(self._tags).to_bytes(8, "big").lstrip(b"\x00") or b"\x00"
        elif tag in self.unsettled:
            raise LocalProtocolError(f"delivery tag {tag!r} is already in use")
        s = self.session
        delivery = Delivery(self, tag, s.next_delivery_id(), message_format)
        delivery.settled = settled
        delivery.local_state = state
        self.delivery_count = serial_add(self.delivery_count, 1)
        self.link_credit -= 1
        if self.available:
            self.available -= 1
        if not settled:
            self.unsettled[tag] = delivery
            s.track(_SENDER, delivery)
        if owner is not None:
            self._txn.posted(owner, delivery)
        return delivery

    @property
    def acquiring_in(self) -> TransactionWork | None:
        """The transaction a receiver's flow put our sends in (4.4.3), or None."""
        return self._acquiring

    def acquire_in(self, record: TransactionWork | None) -> None:
        """Put our sends in the transaction ``record`` (4.4.3), or none."""
        self._acquiring = record

    def _check_settle_mode(self, settled: bool) -> None:
        """``settled``, asked for, is what the link's snd-settle-mode allows."""
        if settled and self.snd_settle_mode is SenderSettleMode.UNSETTLED:
            raise LocalProtocolError("the link's snd-settle-mode is unsettled")
        if not settled and self.snd_settle_mode is SenderSettleMode.SETTLED:
            raise LocalProtocolError("the link's snd-settle-mode is settled")

    def _cannot_start(self) -> LocalProtocolError:
        """Why no new delivery can be started now."""
        if self._current is not None:
            return LocalProtocolError("finish (or abort) the current delivery first")
        if self.link_credit <= 0:
            return LocalProtocolError("no link credit: wait for CreditChanged")
        return LocalProtocolError(
            "an unsettled map of this attach was incomplete: only resumed deliveries "
            "may be sent until the link is attached again with complete maps (2.6.13)"
        )

    def resume(self, delivery: Delivery, data: bytes | bytearray | memoryview | Message) -> None:
        """Send an unsettled delivery again on a resumed link, marked ``resume`` (core spec
        2.6.13): one the receiver also holds unsettled must be resumed; one only we hold may
        be (the receiver ignores it if it had settled it). It takes a unit of credit."""
        self._check_attached()
        if self.unsettled.get(delivery.tag) is not delivery:
            raise LocalProtocolError("only an unsettled delivery of this link can be resumed")
        if self._current is not None:
            raise LocalProtocolError("finish (or abort) the current delivery first")
        if self.link_credit <= 0:
            raise LocalProtocolError("no link credit: wait for CreditChanged")
        payload = _payload(data)
        s = self.session
        s.untrack(_SENDER, delivery.id)
        delivery.id = s.next_delivery_id()
        s.track(_SENDER, delivery)
        delivery.resumed = True
        delivery.size = len(payload) if type(payload) is memoryview else sum(map(len, payload))
        delivery.complete = True
        self.delivery_count = serial_add(self.delivery_count, 1)
        self.link_credit -= 1
        s.send_transfer(self, delivery, payload, True, False, resume=True)

    def abort(self, delivery: Delivery) -> None:
        """Abort a delivery that is still being sent (core spec 2.6.14)."""
        self._check_attached()
        if delivery is not self._current:
            raise LocalProtocolError("only the delivery being sent can be aborted")
        assert self.handle is not None
        self._current = None
        delivery.aborted = True
        self._forget(delivery)
        s = self.session
        assert s.channel is not None
        s.queue_transfer(
            _frame(
                s.channel,
                _transfer(handle=self.handle, delivery_id=delivery.id, aborted=True, settled=True),
            )
        )

    def drained(self) -> None:
        """Say we have nothing more to send: if the receiver asked to drain, use up the
        remaining credit and report the new flow state (core spec 2.6.7)."""
        self._check_attached()
        if self.drain and self.link_credit > 0:
            self.delivery_count = serial_add(self.delivery_count, self.link_credit)
            self.link_credit = 0
            self._send_flow()

    def set_available(self, available: int, *, send: bool = True) -> None:
        """Tell the receiver how many messages we could send (core spec 2.6.7): in a flow
        now, or (``send=False``) in the next flow that goes (an echo's answer, a drain's)."""
        if type(available) is not int or not 0 <= available <= _UINT_MAX:
            raise LocalProtocolError(f"available {available!r} is not a uint")
        self._check_attached()
        self.available = available
        if send:
            self._send_flow()

    def receive_attach(self, attach: Attach) -> bool:
        self.rcv_settle_mode = attach.rcv_settle_mode  # the receiver's to choose
        return super().receive_attach(attach)

    def receive_flow(self, flow: Flow) -> None:
        """The receiver's flow state: our credit (core spec 2.6.7)."""
        rcv_count = (
            flow.delivery_count if flow.delivery_count is not None else self._initial_delivery_count
        )
        credit = flow.link_credit if flow.link_credit is not None else 0
        # Below zero when the receiver lowered its credit under what we had already
        # sent: we may send nothing more (2.6.7), which zero says as well.
        self.link_credit = max(0, serial_diff(serial_add(rcv_count, credit), self.delivery_count))
        self.drain = flow.drain
        if flow.properties:
            self._txn.flow(self, flow.properties)
        self._report(
            CreditChanged(
                link=self,
                credit=self.link_credit,
                available=self.available,
                drain=self.drain,
            )
        )
        self._echo(flow)

    def _settles_with_peer(self) -> bool:
        return self.auto_settle
