"""The receiving end of a link (core spec 2.6): granting credit, and the sender's transfers
and flow state."""

from __future__ import annotations

from typing import Any

from ...codec.amqp10.composite import unchecked
from ...definitions.amqp10.performatives import Attach, Flow, Role, Transfer
from ...errors import LocalProtocolError
from ...framing.amqp10 import FramePayload
from .events import CreditChanged, DeliveryAborted, DeliveryReceived, DrainCompleted
from .link import Delivery, DeliveryUpdated, Link, TransactionWork
from .payload import MAX_DELIVERY_TAG
from .peer_error import _PeerError
from .serial import serial_add, serial_diff

_RECEIVER = Role.RECEIVER

_UINT_MAX = 0xFFFFFFFF


#: The per-delivery events, built the same way (their fields need no checks).
_delivery_received = unchecked(DeliveryReceived)


class Receiver(Link):
    """The receiving end of a link."""

    role = Role.RECEIVER

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: When true, each transfer's bytes are reported as they arrive
        #: (``DeliveryReceived(complete=False)`` until the last); otherwise a delivery is
        #: reported once, whole.
        self.streaming = False
        #: The highest delivery-limit (delivery-count + credit) we have granted: what the
        #: sender may have seen, whatever we lowered the credit to since.
        self._granted_limit = 0

    def flow(
        self,
        credit: int,
        *,
        drain: bool = False,
        echo: bool = False,
        transaction: TransactionWork | None = None,
    ) -> None:
        """Set the link credit to ``credit`` (how many more deliveries the sender may start
        from now) and the drain flag, and send the flow state (core spec 2.6.7); ``echo``
        asks the sender for its flow state in return (its ``available`` among it). With
        ``transaction``, what the sender sends from now on is acquired in it (4.4.3).

        With :attr:`max_unsettled` set, the credit is capped at the room left under it
        (the limit less the unsettled deliveries held), so that a sender keeping to its
        credit cannot exceed the limit."""
        self._check_attached()
        if not 0 <= credit <= _UINT_MAX:
            raise LocalProtocolError(f"credit {credit} is out of range")
        properties = None if transaction is None else self._txn.acquiring(self, transaction)
        if self.max_unsettled is not None:
            credit = max(0, min(credit, self.max_unsettled - len(self.unsettled)))
        self.link_credit = credit
        self.drain = drain
        limit = serial_add(self.delivery_count, credit)
        if serial_diff(limit, self._granted_limit) > 0:
            self._granted_limit = limit
        self._send_flow(echo=echo, properties=properties)

    def add_credit(self, credit: int) -> None:
        """Let the sender start ``credit`` more deliveries."""
        self.flow(self.link_credit + credit, drain=self.drain)

    def drain_credit(self) -> None:
        """Ask the sender to use up or give back the credit it has (:class:`DrainCompleted`
        follows)."""
        self.flow(self.link_credit, drain=True)

    def receive_attach(self, attach: Attach) -> bool:
        self.snd_settle_mode = attach.snd_settle_mode  # the sender's to choose
        if attach.initial_delivery_count is None:
            raise _PeerError(
                "amqp:invalid-field",
                "a sender's attach must carry initial-delivery-count",
                scope="session",
                target=self.session,
            )
        self.delivery_count = attach.initial_delivery_count
        self._granted_limit = self.delivery_count
        reported = super().receive_attach(attach)
        if reported and self.unsettled and not attach.incomplete_unsettled:
            # Resuming: deliveries only we consider unsettled were settled by the sender
            # (2.6.13). From an incomplete map, a missing tag says nothing (2.7.3).
            theirs = attach.unsettled or {}
            for tag, delivery in list(self.unsettled.items()):
                if tag not in theirs:
                    delivery.remote_settled = True
                    self._untrack(delivery)
                    self._report(
                        DeliveryUpdated(
                            link=self, delivery=delivery, state=delivery.remote_state, settled=True
                        )
                    )
        return reported

    def receive_flow(self, flow: Flow) -> None:
        """The sender's flow state: its delivery-count and what it has available (2.6.7)."""
        if flow.delivery_count is not None:
            limit = serial_add(self.delivery_count, self.link_credit)
            self.delivery_count = flow.delivery_count
            self.link_credit = max(0, serial_diff(limit, flow.delivery_count))
        self.available = flow.available or 0
        self._report(
            CreditChanged(
                link=self,
                credit=self.link_credit,
                available=self.available,
                drain=self.drain,
            )
        )
        if self.drain and self.link_credit == 0:
            self.drain = False
            self._report(DrainCompleted(link=self))
        self._echo(flow)

    def receive_transfer(self, transfer: Transfer, payload: FramePayload) -> None:
        """A transfer on this link; the session has counted it against its window."""
        delivery = self._current
        if delivery is None:
            delivery = self._first_transfer(transfer)
            if delivery is None:
                return
        elif transfer.delivery_id is not None and transfer.delivery_id != delivery.id:
            raise _PeerError(
                "amqp:not-allowed",
                "deliveries on one link must not interleave",
                scope="session",
                target=self.session,
            )
        if transfer.settled:
            delivery.remote_settled = True
        if transfer.state is not None:
            delivery.remote_state = transfer.state
        if transfer.aborted:
            self._abort(delivery)
            return
        # A payload cut across reads comes as the pieces it came in (FrameParser._gather).
        pieces = type(payload) is list
        delivery.size += sum(map(len, payload)) if pieces else len(payload)  # type: ignore[arg-type]
        limit = self.max_message_size
        if limit and delivery.size > limit:
            raise _PeerError(
                "amqp:link:message-size-exceeded",
                f"delivery of more than {limit} bytes",
                scope="link",
                target=self,
            )
        if delivery.ignored or self.streaming:
            self._unbuffered_transfer(delivery, transfer, payload, pieces)
            return
        # The usual case, inline: the delivery's bytes are kept until its last transfer.
        if pieces:
            self._gathered(delivery, payload, transfer.more)  # type: ignore[arg-type]
        elif payload and transfer.more:
            delivery.add_chunk(payload)  # type: ignore[arg-type]
            if type(payload) is memoryview:
                self._viewed(delivery)
        if transfer.more:
            return
        self._current = None
        delivery.complete = True
        # (the last payload, unless gathered, joins the kept ones here)
        chunks = delivery.take_chunks(None if pieces or not payload else payload)  # type: ignore[arg-type]
        if delivery.remote_settled:
            self._untrack(delivery)  # the sender has forgotten it: so do we
        if self._coordinator:
            # A declare or discharge (core spec 4.2).
            self._txn.request(self, delivery, b"".join(chunks))
            return
        # A large frame's payload is a view of the bytes received: the event keeps the
        # pieces, joined (copied) once if asked for its data, or decoded with only a large
        # data section's bytes copied (message()).
        data: bytes | tuple[bytes | memoryview, ...] = (
            chunks[0]
            if len(chunks) == 1 and type(chunks[0]) is bytes
            else (tuple(chunks) if chunks else b"")
        )
        self._report(_delivery_received(link=self, delivery=delivery, data=data, complete=True))

    def _unbuffered_transfer(
        self, delivery: Delivery, transfer: Transfer, payload: FramePayload, pieces: bool
    ) -> None:
        """A transfer whose bytes are not kept: of a delivery ignored, or streamed."""
        if delivery.ignored:
            self._ignored_transfer(delivery, transfer)
        else:
            self._streamed_transfer(delivery, transfer, payload, pieces)

    def _gathered(self, delivery: Delivery, payload: list[memoryview], more: bool | None) -> None:
        """A payload gathered across reads: its pieces kept."""
        delivery.add_chunks(payload)
        if more:
            # A payload gathered across reads is the first frame of this read: no delivery
            # is in _viewing yet.
            self.session.connection.weigh_views(delivery)

    def _first_transfer(self, transfer: Transfer) -> Delivery | None:
        """The first transfer of a delivery: checked against the link's state and credit,
        and its delivery started (or resumed); ``None`` when the transfer is discarded."""
        if self._destroyed:
            # Sent before the peer saw our error detach (2.6.5): discarded.
            return None
        if transfer.delivery_id is None or transfer.delivery_tag is None:
            raise _PeerError(
                "amqp:invalid-field",
                "the first transfer of a delivery needs its id and tag",
                scope="session",
                target=self.session,
            )
        if len(transfer.delivery_tag) > MAX_DELIVERY_TAG:
            # A delivery-tag is up to 32 octets (2.8.7): a longer one is a field set wrong
            # (2.8.15 invalid-field); the link goes, the session and its other links stay.
            raise _PeerError(
                "amqp:invalid-field",
                f"a delivery-tag of {len(transfer.delivery_tag)} octets "
                f"(at most {MAX_DELIVERY_TAG}, 2.8.7)",
                scope="link",
                target=self,
            )
        if self._sent_incomplete and not transfer.resume:
            raise _PeerError(
                "amqp:illegal-state",
                "a new delivery after our incomplete unsettled map (2.7.3)",
                scope="link",
                target=self,
            )
        # A violation is a transfer beyond the highest delivery-limit we ever granted: after
        # we lowered the credit ("stop", 2.6.10), transfers sent under the old limit may
        # still arrive, and are handled normally (2.6.7 lets the receiver choose).
        if serial_diff(self._granted_limit, self.delivery_count) <= 0:
            raise _PeerError(
                "amqp:link:transfer-limit-exceeded",
                "transfer without link credit",
                scope="link",
                target=self,
            )
        known = self.unsettled.get(transfer.delivery_tag) if transfer.resume else None
        if known is None:
            delivery = Delivery(
                self, transfer.delivery_tag, transfer.delivery_id, transfer.message_format or 0
            )
            delivery.resumed = transfer.resume
            if transfer.resume:
                # Resumed, but we hold no such delivery: we had settled it, so it is
                # ignored (2.6.13) and settled, so that the sender can forget it too.
                delivery.ignore()
        else:
            # A delivery we also hold unsettled, resumed (2.6.13): the same Delivery,
            # under its new id.
            self.session.untrack(_RECEIVER, known.id)
            known.id = transfer.delivery_id
            known.resumed = True
            known.size = 0
            known.take_chunks()
            delivery = known
        self.delivery_count = serial_add(self.delivery_count, 1)
        if self.link_credit > 0:
            self.link_credit -= 1
        if self.available:
            self.available -= 1
        if not transfer.settled:
            if (
                self.max_unsettled is not None
                and known is None
                and len(self.unsettled) >= self.max_unsettled
            ):
                raise _PeerError(
                    "amqp:resource-limit-exceeded",
                    f"more than {self.max_unsettled} unsettled deliveries",
                    scope="link",
                    target=self,
                )
            self.unsettled[delivery.tag] = delivery
            self.session.track(_RECEIVER, delivery)
        self._current = delivery
        if transfer.state is not None or self._coordinator:
            self._txn.first_transfer(self.session, self, delivery, transfer)
        return delivery

    def _viewed(self, delivery: Delivery) -> None:
        """A delivery still arriving keeps a view of the bytes received (a large frame's
        payload): the connection weighs what it views once the read is done (_unpin)."""
        self.session.connection.weigh_views(delivery)

    def _abort(self, delivery: Delivery) -> None:
        """The sender aborted the delivery: its bytes are dropped."""
        self._current = None
        delivery.aborted = True
        delivery.take_chunks()
        self._forget(delivery)
        self._report(DeliveryAborted(link=self, delivery=delivery))

    def _ignored_transfer(self, delivery: Delivery, transfer: Transfer) -> None:
        """A transfer of a delivery resumed that we had settled: ignored, and the delivery
        settled once whole."""
        if not transfer.more:
            self._current = None
            delivery.complete = True
            if not delivery.remote_settled:
                self.settle(delivery)
            else:
                self._untrack(delivery)

    def _streamed_transfer(
        self, delivery: Delivery, transfer: Transfer, payload: FramePayload, pieces: bool
    ) -> None:
        """Streaming: each transfer's bytes go to the application as they come."""
        if not transfer.more:
            self._current = None
            delivery.complete = True
            if delivery.remote_settled:
                self._untrack(delivery)
        self._report(
            _delivery_received(
                link=self,
                delivery=delivery,
                data=b"".join(payload) if pieces else bytes(payload),  # type: ignore[arg-type]
                complete=not transfer.more,
            )
        )
