"""The protocol engine: connection, session, link and delivery (core spec part 2, 3.4).

One :class:`Connection` per AMQP connection, in the client or the server role. It takes
bytes with :meth:`Connection.receive_data` and returns events; it queues the bytes to send,
which :meth:`Connection.data_to_send` hands over; it never reads a clock: the caller passes
``now`` (seconds, any monotonic origin) and asks :meth:`Connection.next_deadline` when to call
:meth:`Connection.handle_timer`.

The rule for errors: a command that is illegal in the current state, or has bad arguments,
raises :class:`~amqp_sansio.LocalProtocolError` at once and sends nothing. A peer that breaks
the protocol makes the engine send the close, end or detach with the spec's condition, and
report a :class:`~amqp_sansio.ProtocolError` event.

The engine answers by itself where the spec leaves no choice: the protocol header, a peer's
close, end or detach (with its own), flow echo, heartbeats, and session windows (transfers
wait in the engine while the peer's incoming window is full; our incoming window is topped
up as transfers arrive). It leaves to the application what is a decision: accepting or
refusing a peer's open, begin and attach, granting link credit, settling deliveries.
"""

from __future__ import annotations

import itertools
import struct
from collections import deque
from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ..codec import decoder
from ..codec.composite import _requires_ok, unchecked
from ..codec.encoder import encode_into
from ..codec.types import Symbol
from ..definitions.message import Message
from ..definitions.messaging import Accepted, Released, Source, Target
from ..definitions.performatives import (
    Attach,
    Begin,
    Close,
    Detach,
    Disposition,
    End,
    Error,
    Flow,
    Open,
    ReceiverSettleMode,
    Role,
    SaslCode,
    SenderSettleMode,
    Transfer,
)
from ..definitions.transactions import Coordinator, TransactionalState
from ..errors import (
    AMQPError,
    DecodeError,
    FramingError,
    LocalProtocolError,
    UnsupportedProtocolError,
)
from ..events import (
    ConnectionClosed,
    ConnectionEnded,
    ConnectionOpened,
    CreditChanged,
    DeliveryAborted,
    DeliveryReceived,
    DeliveryUpdated,
    DrainCompleted,
    Event,
    IdleTimedOut,
    LinkAttached,
    LinkDetached,
    PeerWithoutSASL,
    ProtocolError,
    SessionBegun,
    SessionEnded,
    UnsupportedProtocol,
)
from ..framing import (
    AMQP_HEADER,
    HEARTBEAT,
    MIN_MAX_FRAME_SIZE,
    FrameParser,
    FramePayload,
    FrameType,
    ProtocolId,
)
from ..security.mechanisms import (
    ClientCredentials,
    SASLError,
    SASLProtocolError,
    ServerAuthenticator,
)
from ..security.sasl import SaslLayer
from ..security.sasl import _Phase as SaslPhase
from .serial import serial_add, serial_diff, serial_le
from .states import (
    CONNECTION_TRANSITIONS,
    LINK_TRANSITIONS,
    SESSION_TRANSITIONS,
    ConnectionInput,
    ConnectionState,
    LinkInput,
    LinkState,
    SessionInput,
    SessionState,
)

if TYPE_CHECKING:
    from .transactions import Controller, _Txn

__all__ = ["Connection", "Delivery", "Link", "Receiver", "Sender", "Session"]

L = TypeVar("L", bound="Link")

_UINT_MAX = 0xFFFFFFFF
#: A session's windows and handle-max, unless :meth:`Connection.begin` is given others; a
#: session the peer begins has these.
_INCOMING_WINDOW = 2048
_OUTGOING_WINDOW = _UINT_MAX
_HANDLE_MAX = _UINT_MAX
_CI = ConnectionInput
_SI = SessionInput
_LI = LinkInput

# Enum members read on every frame, bound once: on Python 3.11 reading a member from its class
# costs about as much as a function call (the enum metaclass hooks attribute lookup).
_ATTACHED = LinkState.ATTACHED
_SENDER = Role.SENDER
_RECEIVER = Role.RECEIVER
_SECOND = ReceiverSettleMode.SECOND
_SND_SETTLED = SenderSettleMode.SETTLED
_AMQP_FRAME = FrameType.AMQP
_CONNECTION_END = ConnectionState.END
#: Outcomes whose disposition is always small (no error, no annotations).
_SMALL_STATES = frozenset({Accepted, Released})
#: Session states in which we may send, in which the peer's frames are handled, and after
#: our end (when they are set aside).
_SESSION_SENDING = (SessionState.BEGIN_SENT, SessionState.MAPPED, SessionState.END_RCVD)
_SESSION_MAPPED = (SessionState.BEGIN_RCVD, SessionState.MAPPED)
_SESSION_ENDING = (SessionState.DISCARDING, SessionState.END_SENT)
_CONNECTION_ENDING = (ConnectionState.DISCARDING, ConnectionState.CLOSE_SENT)


#: Transfers built by the engine from values it has checked: no validation on the hot path.
_transfer = unchecked(Transfer)
#: The per-delivery events, built the same way (their fields need no checks).
_delivery_received = unchecked(DeliveryReceived)
_delivery_updated = unchecked(DeliveryUpdated)


class _PeerError(Exception):
    """Raised inside frame handling when the peer broke the protocol."""

    def __init__(
        self, condition: str, description: str, scope: str = "connection", target: Any = None
    ) -> None:
        super().__init__(description)
        self.error = Error(condition=Symbol(condition), description=description)
        self.scope = scope
        self.target = target


#: Fills in a frame header: size, data offset (2 words), type (0, AMQP), channel.
_pack_frame_header = struct.Struct(">IBBH").pack_into


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


def _frame_head(channel: int, body: Any, payload_size: int) -> bytearray:
    """A frame's header and performative, sized for a payload that goes out separately."""
    out = bytearray(8)
    encode_into(body, out)
    _pack_frame_header(out, 0, len(out) + payload_size, 2, 0, channel)
    return out


def _take(
    out: list[bytes | bytearray | memoryview], max_bytes: int
) -> list[bytes | bytearray | memoryview]:
    """The pieces of up to ``max_bytes`` of what ``out`` queues, taken off its front: a
    piece cut there leaves a view of its rest (the pieces are not changed once queued)."""
    taken = 0
    count = 0
    for piece in out:
        size = len(piece)
        if taken + size > max_bytes:
            break
        taken += size
        count += 1
    else:
        head = out[:]
        out.clear()
        return head
    head = out[:count]
    room = max_bytes - taken
    if room:
        piece = memoryview(out[count])
        head.append(piece[:room])
        out[count] = piece[room:]
    del out[:count]
    return head


#: :meth:`Connection.buffers_to_send` hands over pieces of at least this many bytes as they
#: are; smaller ones next to each other are joined.
_GATHER = 4096


def _gathered(pieces: list[bytes | bytearray | memoryview]) -> list[bytes | memoryview]:
    """``pieces`` with each run of small ones joined, and a large one that is not ``bytes``
    (a view of a message's bytes, or a whole frame the engine has let go of) as a read-only
    view."""
    if not pieces:
        return []
    if max(map(len, pieces)) < _GATHER:
        return [b"".join(pieces)]
    gathered: list[bytes | memoryview] = []
    run: list[bytes | bytearray | memoryview] = []
    for piece in pieces:
        if len(piece) < _GATHER:
            run.append(piece)
            continue
        if run:
            gathered.append(b"".join(run))
            run = []
        gathered.append(piece if type(piece) is bytes else memoryview(piece).toreadonly())
    if run:
        gathered.append(b"".join(run))
    return gathered


def _frame(channel: int, body: Any, payload: bytes | memoryview = b"") -> bytearray:
    out = bytearray(8)
    encode_into(body, out)
    out += payload
    _pack_frame_header(out, 0, len(out), 2, 0, channel)
    return out


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
        self.local_state: Any = None
        self.remote_state: Any = None
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
        #: :class:`~amqp_sansio.TransactionRecord`. Its outcome is final only once that
        #: transaction has committed.
        self.transaction: _Txn | None = None

    def __repr__(self) -> str:
        return (
            f"<Delivery id={self.id} tag={self.tag!r} settled={self.settled} "
            f"remote_settled={self.remote_settled} state={self.remote_state!r}>"
        )


class Link:
    """A link endpoint (core spec 2.6). Made by :meth:`Session.attach_sender` and
    :meth:`Session.attach_receiver`, or by the peer's attach (:class:`LinkAttached`)."""

    role: Role
    #: The two ends of a transaction control link (core spec 4.2) are told apart by these.
    _controller = False
    _coordinator = False

    def __init__(
        self,
        session: Session,
        name: str,
        *,
        source: Any,
        target: Any,
        snd_settle_mode: SenderSettleMode,
        rcv_settle_mode: ReceiverSettleMode,
        properties: dict[Any, Any] | None,
        offered_capabilities: Any,
        desired_capabilities: Any,
        max_message_size: int | None,
    ) -> None:
        self.session = session
        self.name = name
        self.source = source
        self.target = target
        self.snd_settle_mode = snd_settle_mode
        self.rcv_settle_mode = rcv_settle_mode
        self.properties = properties
        self.offered_capabilities = offered_capabilities
        self.desired_capabilities = desired_capabilities
        self.max_message_size = max_message_size
        #: The most unsettled deliveries this end holds on the link (None: no limit): a
        #: sender refuses to start more, a receiver grants no credit beyond it and detaches
        #: with ``amqp:resource-limit-exceeded`` a peer that sends more. Defaults to the
        #: connection's ``max_unsettled``.
        self.max_unsettled: int | None = session.connection.max_unsettled
        self.state = LinkState.DETACHED
        self.handle: int | None = None
        self.remote_handle: int | None = None
        self.remote: Attach | None = None
        self.delivery_count = 0
        self.link_credit = 0
        self.available = 0
        self.drain = False
        self._initial_delivery_count = 0
        self._current: Delivery | None = None
        self.unsettled: dict[bytes, Delivery] = {}
        #: A detach either way said closed: when both are done the link is destroyed
        #: (2.6.6), not suspended (2.6.4).
        self._closing = False
        #: We detached it with an error: the endpoint is destroyed (2.6.5). Until the peer's
        #: detach its frames are discarded.
        self._destroyed = False
        #: The peer detached it with an error and without closing: our next attach of it must
        #: resume it, with a non-null unsettled map (2.6.5).
        self._must_resume = False
        #: The closed flag of our last detach.
        self._sent_closed = False
        #: Our closing detach was answered by a non-closing one: the peer owes us a re-attach
        #: and a closing detach (2.6.6), which the engine answers by itself.
        self._reclose = False
        #: We re-attached to close (2.6.6): the peer's answers are not reported.
        self._reclosing = False
        #: Our last attach carried an incomplete unsettled map (2.7.3).
        self._sent_incomplete = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self.state.value} credit={self.link_credit}>"

    @property
    def remote_max_message_size(self) -> int | None:
        return None if self.remote is None else self.remote.max_message_size

    # -- commands ---------------------------------------------------------------------------

    def attach(self, *, source: Any = None, target: Any = None) -> None:
        """Send our attach: for a link we started, the first step; for a link the peer
        started (:class:`LinkAttached`), accepting it. A terminus not given is the link's
        own, or else the peer's. Refused (:class:`LocalProtocolError`), it changes nothing,
        termini included."""
        source = self.source if source is None else source
        target = self.target if target is None else target
        if self.remote is not None and self.state is LinkState.ATTACH_RCVD:
            source = self.remote.source if source is None else source
            target = self.remote.target if target is None else target
        self._send_attach(source, target)

    def refuse(self, error: Error | None = None) -> None:
        """Refuse a link the peer started (core spec 2.6.3): attach without our terminus,
        then detach (closed) with ``error``."""
        if self.state is not LinkState.ATTACH_RCVD:
            raise LocalProtocolError("only a link the peer started can be refused")
        assert self.remote is not None
        if self.role is Role.SENDER:
            self._send_attach(None, self.remote.target)  # changes nothing if refused
        else:
            self._send_attach(self.remote.source, None)
        self.detach(
            error=error or Error(condition=Symbol("amqp:not-found"), description="no such node")
        )

    def detach(self, *, error: Error | None = None, closed: bool = True) -> None:
        """Detach the link; ``closed=True`` (the default) closes it for good (core spec
        2.6.6). The peer answers with its own detach (:class:`LinkDetached`).

        With an ``error`` the link endpoint is destroyed at once (2.6.5): its unsettled
        deliveries are gone (they can no longer be settled), and what the peer sent on the
        link before it saw our detach (transfers, flows, dispositions) is discarded as it
        arrives. Once the peer's detach has arrived, any further input on its handle (other
        than an attach reusing the handle) ends the session with
        ``amqp:session:errant-link``. If neither end closed the link, the peer's next attach
        of it must resume it (carry an unsettled map): one without is taken for a pipelined
        re-attach and also ends the session with ``amqp:session:errant-link``.

        Why the peer's detach is the line: a correct peer answers our detach at once and
        sends nothing on the link in between, so whatever precedes its detach was sent
        before it knew, and whatever follows on its (released) handle is errant. Input by
        delivery-id is not held against the peer: dispositions naming the destroyed
        deliveries are ignored, as any naming unknown ids. A peer whose own detach crossed
        ours may still settle the link's deliveries until our detach reaches it (a
        detached link's deliveries live on, 2.6.4, and a detaching one's until the detaches
        have crossed), and nothing on the wire tells those dispositions from later ones."""
        self.session._check_can_send()  # nothing after our close or end
        if self._reclose:
            raise LocalProtocolError("the link is being closed (2.6.6)")
        new = LINK_TRANSITIONS.get((self.state, _LI.S_DETACH))
        if new is None:
            raise LocalProtocolError(f"cannot detach a link in state {self.state.value}")
        assert self.handle is not None
        body = Detach(handle=self.handle, closed=closed, error=error)
        if error is not None:
            self.session._check_fits(body)  # (an error may be large) before any change
        self.state = new
        self._closing = self._closing or closed
        self._sent_closed = closed
        if error is not None:
            self._destroy()
        self.session._send(body)
        self.session._release_handle(self)
        self._lost(error)

    def _lost(self, error: Error | None) -> None:
        """The link is detached (either way) or its session ended: a transaction control
        link's transactions go with it (core spec 4.1)."""

    def _destroy(self) -> None:
        """Destroy the endpoint after our error (2.6.5): its deliveries are forgotten."""
        self._destroyed = True
        self._current = None
        self._drop_ids()
        self.unsettled = {}

    def _drop_ids(self) -> None:
        """Take the link's unsettled deliveries out of the session's id maps: no
        disposition may name them any more."""
        deliveries = self.session._deliveries(self.role)
        for delivery in self.unsettled.values():
            if deliveries.get(delivery.id) is delivery:
                del deliveries[delivery.id]

    def _send_attach(self, source: Any, target: Any) -> None:
        """Send our attach with these termini; every check comes before any change."""
        self.session._check_can_send()
        if self.session._links_by_name.get((self.name, self.role)) is not self:
            # The peer attached a link of this name since: that endpoint is the link now.
            raise LocalProtocolError(f"link {self.name!r} has a newer endpoint: use that one")
        if self in self.session._owed:
            raise LocalProtocolError(
                f"link {self.name!r} still owes the peer its answer: wait for a free handle"
            )
        new = LINK_TRANSITIONS.get((self.state, _LI.S_ATTACH))
        if new is None:
            raise LocalProtocolError(f"cannot attach a link in state {self.state.value}")
        handle = self.session._free_handle()  # may refuse (no free handle)
        body = self._attach_body(handle, source, target)  # may refuse (frame too large)
        self.source, self.target = source, target
        self.handle = handle
        self.session._links_out[handle] = self
        self.state = new
        self._sent_incomplete = body.incomplete_unsettled
        if new is LinkState.ATTACH_SENT:
            # (Re)attaching: the flow state starts again, link-credit at zero (2.6.7); a
            # closed or destroyed link starts afresh.
            self.link_credit = 0
            self.drain = False
            self._closing = self._destroyed = False
        self._must_resume = self._reclose = False
        self.session._send(body)

    def _attach_body(self, handle: int, source: Any, target: Any) -> Attach:
        """Our attach. An unsettled map too large for the peer's max-frame-size is cut to
        what fits, and marked incomplete (2.7.3): until an attach with a complete map, only
        resumed deliveries may then be sent (see :meth:`Sender.send`). An attach too large
        even so is refused (:class:`LocalProtocolError`)."""
        initial = self.delivery_count if self.role is Role.SENDER else None
        body = Attach(
            name=self.name,
            handle=handle,
            role=self.role,
            snd_settle_mode=self.snd_settle_mode,
            rcv_settle_mode=self.rcv_settle_mode,
            source=source,
            target=target,
            initial_delivery_count=initial,
            unsettled={t: d.local_state for t, d in self.unsettled.items()}
            or ({} if self._must_resume else None),
            max_message_size=self.max_message_size,
            properties=self.properties,
            offered_capabilities=self.offered_capabilities,
            desired_capabilities=self.desired_capabilities,
        )
        limit = self.session.connection._peer_max_frame_size
        if len(_frame(0, body)) <= limit:
            return body
        fits = attrs.evolve(body, unsettled={}, incomplete_unsettled=True)
        if not body.unsettled or len(_frame(0, fits)) > limit:
            raise LocalProtocolError(
                f"attach of link {self.name!r} exceeds the peer's max-frame-size {limit}"
            )
        # The most entries that fit (the oldest first): found by bisection.
        entries = list(body.unsettled.items())
        low, high = 0, len(entries)
        while low < high:
            middle = (low + high + 1) // 2
            trial = attrs.evolve(fits, unsettled=dict(entries[:middle]))
            if len(_frame(0, trial)) <= limit:
                low, fits = middle, trial
            else:
                high = middle - 1
        return fits

    def _check_attached(self) -> None:
        if self.state is not _ATTACHED or self._reclose:
            raise LocalProtocolError(
                "the link is being closed (2.6.6)"
                if self._reclose
                else f"the link is {self.state.value}, not ATTACHED"
            )
        self.session._check_can_send()  # a closed connection leaves its links ATTACHED

    def _send_flow(self, *, echo: bool = False, properties: Any = None) -> None:
        s = self.session
        assert self.handle is not None
        s._send(
            s._flow(
                handle=self.handle,
                delivery_count=self.delivery_count,
                link_credit=self.link_credit,
                available=self.available,
                drain=self.drain,
                echo=echo,
                properties=properties,
            )
        )

    def update(self, delivery: Delivery, state: Any, *, transaction: Any = None) -> None:
        """Tell the peer a new, unsettled state of ``delivery`` (core spec 2.7.6). With
        ``transaction``, the outcome ``state`` is retired in it (4.4.2); the outcome of a
        delivery that belongs to a live transaction goes in that one."""
        self._own(delivery)
        if delivery.settled:
            raise LocalProtocolError("the delivery is already settled")
        self.session._check_can_send()
        self._check_known(delivery)
        self._check_disposition_fits(delivery, state)
        if transaction is not None or delivery.transaction is not None:
            state = _txn.retiring(self, delivery, state, transaction)
        delivery.local_state = state
        self.session._queue_disposition(self.role, delivery.id, False, state)

    def settle(self, delivery: Delivery, state: Any = None, *, transaction: Any = None) -> None:
        """Settle ``delivery``, with a final state (an outcome) if given. On a receiver in
        rcv-settle-mode second the state is sent first and settlement waits for the sender's
        (core spec 2.8.3). Settling is idempotent (2.6): a settled delivery stays as it is.
        ``transaction``: as for :meth:`update`."""
        self._own(delivery)
        if delivery.settled:
            return
        if not delivery.remote_settled:
            self.session._check_can_send()  # a disposition goes out: refuse before any change
            self._check_known(delivery)
            self._check_disposition_fits(delivery, state)
        if transaction is not None or delivery.transaction is not None:
            state = _txn.retiring(self, delivery, state, transaction)
        if state is not None:
            delivery.local_state = state
        if (
            self.role is _RECEIVER
            and self.rcv_settle_mode is _SECOND
            and not delivery.remote_settled
        ):
            delivery._settle_on_remote = True
            self.session._queue_disposition(self.role, delivery.id, False, delivery.local_state)
            return
        self._forget(delivery)
        if not delivery.remote_settled:
            self.session._queue_disposition(self.role, delivery.id, True, delivery.local_state)

    def _check_disposition_fits(self, delivery: Delivery, state: Any) -> None:
        """An outcome with an error or annotations can outgrow the peer's max-frame-size:
        refuse it now, before anything changes, rather than lose the disposition later. The
        margin covers a transactional-state around it (a txn-id of up to 32 bytes)."""
        if state is None or type(state) in _SMALL_STATES:
            return
        body = Disposition(
            role=self.role, first=delivery.id, last=delivery.id, settled=True, state=state
        )
        size = len(_frame(0, body)) + 48
        limit = self.session.connection._peer_max_frame_size
        if size > limit:
            raise LocalProtocolError(
                f"a disposition with {type(state).__name__} of about {size} bytes exceeds "
                f"the peer's max-frame-size {limit}"
            )

    def _own(self, delivery: Delivery) -> None:
        if delivery.link is not self:
            raise LocalProtocolError("that delivery belongs to another link")

    def _check_known(self, delivery: Delivery) -> None:
        if self.session._deliveries(self.role).get(delivery.id) is not delivery:
            # Its link was closed (2.6.6) or detached with an error (2.6.5): the peer would
            # take a disposition naming it as input for a destroyed link.
            raise LocalProtocolError(
                "the delivery's link was closed or destroyed: it can no longer be settled"
            )

    def _forget(self, delivery: Delivery) -> None:
        delivery.settled = True
        self._untrack(delivery)

    def _untrack(self, delivery: Delivery) -> None:
        self.unsettled.pop(delivery.tag, None)
        s = self.session
        (s._out_deliveries if self.role is _SENDER else s._in_deliveries).pop(delivery.id, None)


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
        self._acquiring: Any = None

    def send(
        self,
        data: bytes | bytearray | memoryview | Message,
        *,
        tag: bytes | None = None,
        settled: bool | None = None,
        message_format: int = 0,
        more: bool = False,
        delivery: Delivery | None = None,
        state: Any = None,
        transaction: Any = None,
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
            owner = None
            if transaction is not None or self._acquiring is not None:
                owner, state = _txn.posting(self, transaction, state)
            # The engine builds its transfers unchecked: check what the caller gave first,
            # before anything changes.
            if tag is not None:
                if not isinstance(tag, bytes | bytearray | memoryview):
                    raise LocalProtocolError(f"a delivery tag is bytes, not {type(tag).__name__}")
                tag = bytes(tag)
                if len(tag) > 32:
                    raise LocalProtocolError("a delivery tag is at most 32 bytes (2.8.7)")
            if type(message_format) is not int or not 0 <= message_format <= _UINT_MAX:
                raise LocalProtocolError(f"message-format {message_format!r} is not a uint")
            if state is not None and not _requires_ok("delivery-state", state):
                raise LocalProtocolError(f"{state!r} is not a delivery state")
            if self._current is not None:
                raise LocalProtocolError("finish (or abort) the current delivery first")
            if self.link_credit <= 0:
                raise LocalProtocolError("no link credit: wait for CreditChanged")
            if self._sent_incomplete or (
                self.remote is not None and self.remote.incomplete_unsettled
            ):
                raise LocalProtocolError(
                    "an unsettled map of this attach was incomplete: only resumed deliveries "
                    "may be sent until the link is attached again with complete maps (2.6.13)"
                )
            if settled is None:
                settled = self.snd_settle_mode is _SND_SETTLED
            elif settled and self.snd_settle_mode is SenderSettleMode.UNSETTLED:
                raise LocalProtocolError("the link's snd-settle-mode is unsettled")
            elif not settled and self.snd_settle_mode is SenderSettleMode.SETTLED:
                raise LocalProtocolError("the link's snd-settle-mode is settled")
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
            delivery = Delivery(self, tag, s._next_delivery_id, message_format)
            s._next_delivery_id = serial_add(s._next_delivery_id, 1)
            delivery.settled = settled
            delivery.local_state = state
            self.delivery_count = serial_add(self.delivery_count, 1)
            self.link_credit -= 1
            if self.available:
                self.available -= 1
            if not settled:
                self.unsettled[tag] = delivery
                s._out_deliveries[delivery.id] = delivery
            if owner is not None:
                _txn.posted(owner, delivery)
            first = True
        else:
            if delivery is not self._current:
                raise LocalProtocolError("that delivery is not the one being sent")
            first = False
        delivery.size = size
        self._current = delivery if more else None
        if not more:
            delivery.complete = True
        self.session._send_transfer(self, delivery, payload, first, more)
        return delivery

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
        s._out_deliveries.pop(delivery.id, None)
        delivery.id = s._next_delivery_id
        s._next_delivery_id = serial_add(s._next_delivery_id, 1)
        s._out_deliveries[delivery.id] = delivery
        delivery.resumed = True
        delivery.size = len(payload) if type(payload) is memoryview else sum(map(len, payload))
        delivery.complete = True
        self.delivery_count = serial_add(self.delivery_count, 1)
        self.link_credit -= 1
        s._send_transfer(self, delivery, payload, True, False, resume=True)

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
        s._queue_transfer(
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

    def set_available(self, available: int) -> None:
        """Tell the receiver how many messages we could send (core spec 2.6.7)."""
        if type(available) is not int or not 0 <= available <= _UINT_MAX:
            raise LocalProtocolError(f"available {available!r} is not a uint")
        self._check_attached()
        self.available = available
        self._send_flow()


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

    def flow(self, credit: int, *, drain: bool = False, transaction: Any = None) -> None:
        """Set the link credit to ``credit`` (how many more deliveries the sender may start
        from now) and the drain flag, and send the flow state (core spec 2.6.7). With
        ``transaction``, what the sender sends from now on is acquired in it (4.4.3).

        With :attr:`max_unsettled` set, the credit is capped at the room left under it
        (the limit less the unsettled deliveries held), so that a sender keeping to its
        credit cannot exceed the limit."""
        self._check_attached()
        if not 0 <= credit <= _UINT_MAX:
            raise LocalProtocolError(f"credit {credit} is out of range")
        properties = None if transaction is None else _txn.acquiring(self, transaction)
        if self.max_unsettled is not None:
            credit = max(0, min(credit, self.max_unsettled - len(self.unsettled)))
        self.link_credit = credit
        self.drain = drain
        limit = serial_add(self.delivery_count, credit)
        if serial_diff(limit, self._granted_limit) > 0:
            self._granted_limit = limit
        self._send_flow(properties=properties)

    def add_credit(self, credit: int) -> None:
        """Let the sender start ``credit`` more deliveries."""
        self.flow(self.link_credit + credit, drain=self.drain)

    def drain_credit(self) -> None:
        """Ask the sender to use up or give back the credit it has (:class:`DrainCompleted`
        follows)."""
        self.flow(self.link_credit, drain=True)


class Session:
    """A session endpoint (core spec 2.5). Made by :meth:`Connection.begin`, or by the
    peer's begin (:class:`SessionBegun`)."""

    def __init__(
        self,
        conn: Connection,
        *,
        incoming_window: int,
        outgoing_window: int,
        handle_max: int,
        properties: dict[Any, Any] | None,
        offered_capabilities: Any,
        desired_capabilities: Any,
    ) -> None:
        self.connection = conn
        self.state = SessionState.UNMAPPED
        self.channel: int | None = None
        self.remote_channel: int | None = None
        self.remote: Begin | None = None
        self.handle_max = handle_max
        self.properties = properties
        self.offered_capabilities = offered_capabilities
        self.desired_capabilities = desired_capabilities
        self._max_incoming_window = incoming_window
        self.incoming_window = incoming_window
        self.outgoing_window = outgoing_window
        self.next_outgoing_id = 0
        self._initial_outgoing_id = 0
        self.next_incoming_id: int | None = None
        self.remote_incoming_window = 0
        self.remote_outgoing_window = 0
        self._next_delivery_id = 0
        self._links_out: dict[int, Link] = {}
        self._links_in: dict[int, Link] = {}
        self._links_by_name: dict[tuple[str, Role], Link] = {}
        self._out_deliveries: dict[int, Delivery] = {}
        self._in_deliveries: dict[int, Delivery] = {}
        #: Frames waiting for the peer's incoming window: transfers (a frame, or a head and a
        #: payload view), and behind them other frames (encoded), or a link's flow.
        self._blocked: deque[QueuedTransfer | bytes | Flow] = deque()
        self._dispositions: list[tuple[Role, int, bool, Any]] = []
        #: Links the peer detached before we could answer their attach (our begin had not
        #: gone out, or no handle was free), with the closed flag of the answer we owe; or
        #: None: a link to re-attach and close (2.6.6).
        self._owed: dict[Link, bool | None] = {}
        #: The peer's input handles of links we detached with an error, since its detach
        #: (2.6.5): input on one ends the session with errant-link, until an attach reuses it.
        self._errant_handles: dict[int, Link] = {}

    def __repr__(self) -> str:
        return f"<Session channel={self.channel} {self.state.value}>"

    @property
    def links(self) -> list[Link]:
        return list(self._links_by_name.values())

    def _move(self, what: SessionInput) -> None:
        new = SESSION_TRANSITIONS.get((self.state, what))
        if new is None:
            raise LocalProtocolError(f"cannot {what.value} a session in state {self.state.value}")
        self.state = new

    def _check_can_send(self) -> None:
        if self.state not in _SESSION_SENDING:
            raise LocalProtocolError(f"the session is {self.state.value}")
        self.connection._check_can_send()

    # -- commands ---------------------------------------------------------------------------

    def begin(self) -> None:
        """Send our begin: for a session we started, done by :meth:`Connection.begin`; for
        one the peer started (:class:`SessionBegun`), accepting it."""
        conn = self.connection
        conn._check_can_send()
        new = SESSION_TRANSITIONS.get((self.state, _SI.S_BEGIN))
        if new is None:
            raise LocalProtocolError(f"cannot begin a session in state {self.state.value}")
        if self.state is SessionState.UNMAPPED and self.remote is not None:
            # Its ids, windows and peer's channel are those of the ended session.
            raise LocalProtocolError("the session has ended: begin a new one")
        body = Begin(
            remote_channel=self.remote_channel,
            next_outgoing_id=self.next_outgoing_id,
            incoming_window=self.incoming_window,
            outgoing_window=self.outgoing_window,
            handle_max=self.handle_max,
            offered_capabilities=self.offered_capabilities,
            desired_capabilities=self.desired_capabilities,
            properties=self.properties,
        )
        conn._checked_frame(0, body)  # too large for the peer: nothing has changed yet
        conn._assign_channel(self)  # may refuse (no free channel): nothing has changed yet
        self.state = new
        assert self.channel is not None
        conn._send_frame(self.channel, body)
        self._answer_owed()

    def end(self, error: Error | None = None) -> None:
        """End the session (core spec 2.5.2); with an error, incoming frames are discarded
        until the peer's end (DISCARDING). Ending a session the peer began but we never
        answered sends our begin first, as refusing one must."""
        body = End(error=error)
        if error is not None:
            self._check_fits(body)  # (an error may be large) before any change
        if self.state is SessionState.BEGIN_RCVD:
            self.begin()
        self.connection._check_can_send()
        self._move(_SI.S_END_ERROR if error is not None else _SI.S_END)
        self._send(body)
        self.connection._release_channel(self)

    def attach_sender(
        self,
        name: str,
        *,
        source: Any = None,
        target: Any = None,
        snd_settle_mode: SenderSettleMode = SenderSettleMode.MIXED,
        rcv_settle_mode: ReceiverSettleMode = ReceiverSettleMode.FIRST,
        properties: dict[Any, Any] | None = None,
        offered_capabilities: Any = None,
        desired_capabilities: Any = None,
        max_message_size: int | None = None,
        initial_delivery_count: int = 0,
        max_unsettled: int | None = None,
    ) -> Sender:
        """Start a sending link to ``target`` (a :class:`~amqp_sansio.Target`, or an address
        string). ``max_unsettled`` caps the unsettled deliveries on the link (by default,
        the connection's ``max_unsettled``; see :attr:`Link.max_unsettled`)."""
        _check_limit(max_unsettled)
        link = Sender(
            self,
            name,
            source=_terminus(source, Source) or Source(),
            target=_terminus(target, Target),
            snd_settle_mode=snd_settle_mode,
            rcv_settle_mode=rcv_settle_mode,
            properties=properties,
            offered_capabilities=offered_capabilities,
            desired_capabilities=desired_capabilities,
            max_message_size=max_message_size,
        )
        link.delivery_count = link._initial_delivery_count = initial_delivery_count & _UINT_MAX
        if max_unsettled is not None:
            link.max_unsettled = max_unsettled
        return self._start(link)

    def attach_receiver(
        self,
        name: str,
        *,
        source: Any = None,
        target: Any = None,
        snd_settle_mode: SenderSettleMode = SenderSettleMode.MIXED,
        rcv_settle_mode: ReceiverSettleMode = ReceiverSettleMode.FIRST,
        properties: dict[Any, Any] | None = None,
        offered_capabilities: Any = None,
        desired_capabilities: Any = None,
        max_message_size: int | None = None,
        max_unsettled: int | None = None,
    ) -> Receiver:
        """Start a receiving link from ``source`` (a :class:`~amqp_sansio.Source`, or an
        address string). ``max_unsettled`` is as for :meth:`attach_sender`."""
        _check_limit(max_unsettled)
        link = Receiver(
            self,
            name,
            source=_terminus(source, Source),
            target=_terminus(target, Target) or Target(),
            snd_settle_mode=snd_settle_mode,
            rcv_settle_mode=rcv_settle_mode,
            properties=properties,
            offered_capabilities=offered_capabilities,
            desired_capabilities=desired_capabilities,
            max_message_size=max_message_size,
        )
        if max_unsettled is not None:
            link.max_unsettled = max_unsettled
        return self._start(link)

    def attach_controller(
        self,
        name: str = "txn-ctl",
        *,
        capabilities: Iterable[Symbol] = (Symbol("amqp:local-transactions"),),
        properties: dict[Any, Any] | None = None,
    ) -> Controller:
        """Start a transaction control link to the peer's coordinator (core spec 4.2),
        asking for ``capabilities``; see :doc:`transactions`."""
        return _txn.attach_controller(self, name, capabilities=capabilities, properties=properties)

    # -- internals ----------------------------------------------------------------------------

    def _start(self, link: L) -> L:
        """Register a link we start, and send its attach. Refused, it changes nothing."""
        key = (link.name, link.role)
        old = self._links_by_name.get(key)
        self._add_link(link)
        try:
            link.attach()
        except LocalProtocolError:
            if old is None:
                del self._links_by_name[key]
            else:
                self._links_by_name[key] = old  # the suspended link keeps its deliveries
                for delivery in old.unsettled.values():
                    delivery.link = old
            raise
        return link

    def _add_link(self, link: Link) -> None:
        key = (link.name, link.role)
        old = self._links_by_name.get(key)
        if old is not None and (old.state is not LinkState.DETACHED or old in self._owed):
            raise LocalProtocolError(
                f"a {link.role.name.lower()} link named {link.name!r} is already attached"
            )
        if old is not None:
            link._must_resume = old._must_resume
            if old.unsettled:
                # Re-attaching a suspended link resumes it: its unsettled deliveries carry
                # over and go in our attach's unsettled map (2.6.13).
                link.unsettled = old.unsettled
                for delivery in link.unsettled.values():
                    delivery.link = link
        self._links_by_name[key] = link

    def _free_handle(self) -> int:
        """The lowest free handle of ours (:class:`LocalProtocolError` if none)."""
        # Our handles are bounded by the peer's handle-max (2.7.2); ours bounds the peer's.
        # Before its begin arrives (a pipelined attach), we keep within our own.
        limit = self.handle_max if self.remote is None else self.remote.handle_max
        links_out = self._links_out
        handle = next(h for h in itertools.count() if h not in links_out)  # the lowest free
        if handle > limit:
            raise LocalProtocolError(f"no free link handle (handle-max {limit})")
        return handle

    def _assign_handle(self, link: Link) -> None:
        link.handle = self._free_handle()
        self._links_out[link.handle] = link

    def _release_handle(self, link: Link) -> None:
        self._links_out.pop(link.handle, None)  # type: ignore[arg-type]
        if link.state is LinkState.DETACHED:
            self._drop_link(link)
        if self._owed:
            self._answer_owed()

    def _answer_owed(self) -> None:
        """Answer the attaches of links the peer has since detached: our attach (no
        terminus, as a refusal's) and our detach, back to back (2.6.3, 2.6.6). A link owed
        ``None`` was closed by the peer while we suspended it: we re-attach it and close it
        (2.6.6), and wait for the peer's answers."""
        owed = self._owed
        while owed and self.state is SessionState.MAPPED and self.connection.state in _SENDING:
            link, closed = next(iter(owed.items()))
            try:
                self._assign_handle(link)
            except LocalProtocolError:
                return  # none free: the next released handle answers
            del owed[link]
            assert link.handle is not None
            self._send(link._attach_body(link.handle, link.source, link.target))
            if closed is None:
                link.state = LinkState.DETACH_SENT  # through ATTACH_SENT
                link._sent_closed = link._reclosing = True
                self._send(Detach(handle=link.handle, closed=True))
                continue
            self._send(Detach(handle=link.handle, closed=closed))
            self._links_out.pop(link.handle, None)

    def _drop_link(self, link: Link) -> None:
        # Detached both ways: a delivery cut short cannot go on after a re-attach (2.6.13).
        link._current = None
        self._links_in.pop(link.remote_handle, None)  # type: ignore[arg-type]
        if link._closing:
            # Closed: the link and its unsettled state are gone (2.6.6).
            for delivery in link.unsettled.values():
                self._deliveries(link.role).pop(delivery.id, None)
            link.unsettled = {}
        # Suspended: its unsettled deliveries live on in the session, which may still
        # exchange dispositions for them by delivery-id (2.6.4), until a re-attach resumes
        # them (2.6.13).

    def _deliveries(self, role: Role) -> dict[int, Delivery]:
        return self._out_deliveries if role is Role.SENDER else self._in_deliveries

    def _send(self, body: Any) -> None:
        if self._dispositions:
            self._flush_dispositions()  # what was settled before goes out before this frame
        self._put(body)

    def _check_fits(self, body: Any) -> None:
        """Refuse, before anything changes, a frame larger than the peer accepts."""
        self.connection._checked_frame(self.channel or 0, body)

    def _put(self, body: Any) -> None:
        """Send a frame, or queue it behind transfers waiting for the peer's window.

        A link's frames must not overtake its transfers: a detach would cut them off, a
        flow would count them before they arrive, a disposition would name a delivery the
        peer has not seen, and a handle freed by a detach is reused by the next attach. Only
        what the peer needs to open its own window goes at once: a session's flow (it
        carries no link's state) and end (which abandons the queue)."""
        assert self.channel is not None
        kind = type(body)
        if self._blocked and kind is not End and (kind is not Flow or body.handle is not None):
            if kind is not Flow:
                body = bytes(self.connection._checked_frame(self.channel, body))  # checked now
            self._blocked.append(body)
            return
        self.connection._send_frame(self.channel, body)

    def _flow(self, **link_fields: Any) -> Flow:
        return Flow(
            next_incoming_id=self.next_incoming_id,
            incoming_window=self.incoming_window,
            next_outgoing_id=self.next_outgoing_id,
            outgoing_window=self.outgoing_window,
            **link_fields,
        )

    def _send_transfer(
        self,
        link: Sender,
        delivery: Delivery,
        data: Payload,
        first: bool,
        more: bool,
        *,
        resume: bool = False,
    ) -> None:
        assert self.channel is not None and link.handle is not None
        conn = self.connection
        last = _transfer(
            handle=link.handle,
            delivery_id=delivery.id if first else None,
            delivery_tag=delivery.tag if first else None,
            message_format=delivery.message_format if first else None,
            settled=delivery.settled if first else None,
            more=more,
            state=delivery.local_state if first else None,
            resume=resume,
        )
        total = len(data) if isinstance(data, memoryview) else sum(map(len, data))
        if total < conn._peer_max_frame_size - 64:
            # Most deliveries fit in one frame: skip the head. The split below cuts at the
            # head's size, which exceeds the last's by at most 8 bytes (two fields and a
            # list32 header): a frame with 9 bytes to spare is one the split would not cut.
            frame = _frame(
                self.channel, last, data if isinstance(data, memoryview) else b"".join(data)
            )
            if len(frame) + 9 <= conn._peer_max_frame_size:
                self._queue_transfer(frame)
                return
        if first:
            head = _transfer(
                handle=link.handle,
                delivery_id=delivery.id,
                delivery_tag=delivery.tag,
                message_format=delivery.message_format,
                settled=delivery.settled,
                more=True,
                state=delivery.local_state,
                resume=resume,
            )
        else:
            head = _transfer(handle=link.handle, more=True)
        room = conn._peer_max_frame_size - 8 - len(_encode_performative(head)) - 1
        offset = 0
        middle: bytes | None = None  # the frame head of the frames between first and last
        while True:
            rest = total - offset
            final = rest <= room
            stop = total if final else offset + room
            if final or first:
                frame_head: bytes | bytearray = _frame_head(
                    self.channel, last if final else head, stop - offset
                )
            else:
                if middle is None:
                    middle = bytes(_frame_head(self.channel, head, room))
                frame_head = middle  # the same performative, the same size: the same bytes
            # The chunk is a view of the (immutable) message bytes, or views of its parts:
            # it is copied once, when data_to_send joins what is queued.
            if isinstance(data, memoryview):
                self._queue_transfer((frame_head, data[offset:stop]))
            else:
                self._queue_transfer((frame_head, *_cut(data, offset, stop)))
            if final:
                break
            offset += room
            if first:
                first = False
                head = _transfer(handle=link.handle, more=True)
                last = _transfer(handle=link.handle, more=more)
                room = conn._peer_max_frame_size - 8 - len(_encode_performative(head)) - 1

    def _queue_transfer(self, frame: QueuedTransfer) -> None:
        if self._blocked or self.remote_incoming_window <= 0:
            self._blocked.append(frame)
            return
        self._emit_transfer(frame)

    def _emit_transfer(self, frame: QueuedTransfer) -> None:
        self.next_outgoing_id = serial_add(self.next_outgoing_id, 1)
        self.remote_incoming_window -= 1
        if type(frame) is tuple:
            conn = self.connection
            conn._out += frame
            conn._last_sent = conn._now
        else:
            self.connection._send_raw(frame)  # type: ignore[arg-type]

    def _unblock(self) -> None:
        blocked = self._blocked
        conn = self.connection
        while blocked:
            item = blocked[0]
            kind = type(item)
            if kind is bytearray or kind is tuple:
                if self.remote_incoming_window <= 0:
                    return
                self._emit_transfer(blocked.popleft())  # type: ignore[arg-type]
                continue
            blocked.popleft()
            if kind is bytes:
                conn._send_raw(item)  # type: ignore[arg-type]
            else:
                # A link's flow waited behind transfers: its session fields are those of now.
                assert self.channel is not None
                conn._send_frame(
                    self.channel,
                    attrs.evolve(
                        item,  # type: ignore[misc]
                        next_incoming_id=self.next_incoming_id,
                        incoming_window=self.incoming_window,
                        next_outgoing_id=self.next_outgoing_id,
                        outgoing_window=self.outgoing_window,
                    ),
                )

    def _queue_disposition(self, role: Role, delivery_id: int, settled: bool, state: Any) -> None:
        # The callers (update, settle) have checked that we may send.
        self._dispositions.append((role, delivery_id, settled, state))
        self.connection._pending_sessions.add(self)

    def _flush_dispositions(self) -> None:
        """Send queued dispositions, contiguous ids with the same outcome as one range."""
        pending = self._dispositions
        if not pending or self.channel is None:
            pending.clear()
            return
        self._dispositions = []
        send = self._put
        role, first, settled, state = pending[0]
        last = first
        for r, did, s, st in pending[1:]:
            if r is role and s == settled and st == state and did == serial_add(last, 1):
                last = did
                continue
            send(
                Disposition(
                    role=role,
                    first=first,
                    last=None if last == first else last,
                    settled=settled,
                    state=state,
                ),
            )
            role, first, settled, state = r, did, s, st
            last = did
        send(
            Disposition(
                role=role,
                first=first,
                last=None if last == first else last,
                settled=settled,
                state=state,
            ),
        )

    # -- incoming frames ------------------------------------------------------------------------

    def _on_frame(self, body: Any, payload: FramePayload) -> None:
        # After our end (END_SENT, DISCARDING) the session's links are already detached on
        # our side (_release_channel): what the peer sent before seeing our end, such as the
        # answer to a detach, is moot until its end arrives.
        if self.state in _SESSION_ENDING and type(body) is not End:
            return
        handler = _SESSION_HANDLERS.get(type(body))
        if handler is None:
            raise _PeerError("amqp:not-allowed", f"unexpected {type(body).__name__} on a session")
        handler(self, body, payload)

    def _on_end(self, end: End, payload: bytes) -> None:
        conn = self.connection
        new = SESSION_TRANSITIONS.get((self.state, _SI.R_END))
        if new is None:
            raise _PeerError("amqp:illegal-state", f"end in session state {self.state.value}")
        self.state = new
        conn._remote_channels.pop(self.remote_channel, None)  # type: ignore[arg-type]
        conn._events.append(SessionEnded(session=self, error=end.error))
        if self.state is SessionState.END_RCVD and conn.state in _SENDING:
            # Answer with our end, as the spec's session diagram requires.
            self._move(_SI.S_END)
            self._send(End())
            conn._release_channel(self)

    def _on_attach(self, attach: Attach, payload: bytes) -> None:
        self._check_mapped()
        handle = attach.handle
        if handle > self.handle_max:
            raise _PeerError(
                "amqp:resource-limit-exceeded",
                f"handle {handle} exceeds handle-max {self.handle_max}",
                scope="session",
                target=self,
            )
        if handle in self._links_in:
            raise _PeerError(
                "amqp:session:handle-in-use",
                f"handle {handle} is in use",
                scope="session",
                target=self,
            )
        our_role = Role.SENDER if attach.role is Role.RECEIVER else Role.RECEIVER
        link = self._links_by_name.get((attach.name, our_role))
        if (
            link is not None
            and link._destroyed
            and link.state is LinkState.DETACHED
            and not link._closing
            and attach.unsettled is None
        ):
            # We detached the link with an error and neither end closed it: the peer must
            # resume it; an attach without an unsettled map is a pipelined re-attach (2.6.5).
            raise self._errant(f"attach of link {attach.name!r} after our error: not a resume")
        self._errant_handles.pop(handle, None)  # a released handle, used again
        if link is None or (link.state is LinkState.DETACHED and not link._reclose):
            cls: type[Link] = Sender if our_role is Role.SENDER else Receiver
            if type(attach.target) is Coordinator and cls is Receiver:
                cls = _txn.CoordinatorLink  # a controller's link (core spec 4.2)
            link = cls(
                self,
                attach.name,
                source=None,
                target=None,
                snd_settle_mode=attach.snd_settle_mode,
                rcv_settle_mode=attach.rcv_settle_mode,
                properties=None,
                offered_capabilities=None,
                desired_capabilities=None,
                max_message_size=None,
            )
            self._add_link(link)  # a suspended link of that name passes on its deliveries
        new = LINK_TRANSITIONS.get((link.state, _LI.R_ATTACH))
        if new is None or link.remote_handle is not None:
            # (The peer's end of the link is still attached on another handle: it must
            # detach it before attaching the link again.)
            raise _PeerError(
                "amqp:illegal-state",
                f"attach of link {attach.name!r} in state {link.state.value}",
                scope="session",
                target=self,
            )
        link.state = new
        link.remote = attach
        link.remote_handle = handle
        self._links_in[handle] = link
        if our_role is Role.RECEIVER:
            link.snd_settle_mode = attach.snd_settle_mode  # the sender's to choose
            if attach.initial_delivery_count is None:
                raise _PeerError(
                    "amqp:invalid-field",
                    "a sender's attach must carry initial-delivery-count",
                    scope="session",
                    target=self,
                )
            link.delivery_count = attach.initial_delivery_count
            link._granted_limit = link.delivery_count  # type: ignore[attr-defined]
        else:
            link.rcv_settle_mode = attach.rcv_settle_mode  # the receiver's to choose
        if link._reclose:
            # The peer re-attaches the link we closed, to close it in turn (2.6.6): we answer
            # at once (or, with no free handle, after its detach), and report only that.
            try:
                handle = self._free_handle()
            except LocalProtocolError:
                return
            self._send(link._attach_body(handle, link.source, link.target))
            link.handle = handle
            self._links_out[handle] = link
            link.state = _ATTACHED
            return
        if link._reclosing:
            return  # the peer's answer to our re-attach to close (2.6.6)
        self.connection._events.append(LinkAttached(link=link, remote=attach))
        if our_role is Role.RECEIVER and link.unsettled and not attach.incomplete_unsettled:
            # Resuming: deliveries only we consider unsettled were settled by the sender
            # (2.6.13). From an incomplete map, a missing tag says nothing (2.7.3).
            theirs = attach.unsettled or {}
            for tag, delivery in list(link.unsettled.items()):
                if tag not in theirs:
                    delivery.remote_settled = True
                    link._untrack(delivery)
                    self.connection._events.append(
                        DeliveryUpdated(
                            link=link, delivery=delivery, state=delivery.remote_state, settled=True
                        )
                    )

    def _check_mapped(self) -> None:
        # 2.5.5: frames may arrive in BEGIN_RCVD (a peer's pipelined attach) and MAPPED; after
        # our end, _on_frame has already set them aside.
        if self.state not in _SESSION_MAPPED:
            raise _PeerError(
                "amqp:illegal-state",
                f"frame in session state {self.state.value}",
                scope="session",
                target=self,
            )

    def _link_in(self, handle: int | None, *, detach: bool = False) -> Link:
        link = self._links_in.get(handle) if handle is not None else None
        if link is None:
            if handle in self._errant_handles and not detach:
                raise self._errant(f"input on handle {handle}, of a link detached with an error")
            raise _PeerError(
                "amqp:session:unattached-handle",
                f"no link on handle {handle}",
                scope="session",
                target=self,
            )
        return link

    def _errant(self, description: str) -> _PeerError:
        return _PeerError("amqp:session:errant-link", description, scope="session", target=self)

    def _on_detach(self, detach: Detach, payload: bytes) -> None:
        self._check_mapped()
        link = self._link_in(detach.handle, detach=True)
        if link.state is LinkState.ATTACH_RCVD:
            # The peer detached a link before we answered its attach (it may: its
            # ATTACH_SENT -> DETACH_SENT). Our answer is an attach without a terminus, as a
            # refusal's, and then our detach (2.6.3): at once if we can, else as soon as our
            # begin has gone out or a handle is free (_answer_owed). The link is detached.
            if link.role is Role.SENDER:
                link.source = None
            else:
                link.target = None
            link.state = LinkState.DETACHED
            link._closing = link._closing or detach.closed
            link._must_resume = detach.error is not None and not link._closing  # (2.6.5)
            link._reclose = False
            self._links_in.pop(detach.handle, None)
            link.remote_handle = None
            self.connection._events.append(
                LinkDetached(link=link, error=detach.error, closed=detach.closed)
            )
            link._lost(detach.error)
            self._drop_link(link)
            self._owed[link] = detach.closed
            self._answer_owed()
            return
        new = LINK_TRANSITIONS.get((link.state, _LI.R_DETACH))
        if new is None:
            raise _PeerError(
                "amqp:illegal-state",
                f"detach in link state {link.state.value}",
                scope="session",
                target=self,
            )
        link.state = new
        link._closing = link._closing or detach.closed
        self._links_in.pop(detach.handle, None)
        link.remote_handle = None
        if link._destroyed:
            # Our error detach is answered: from now on the peer knows (2.6.5, see
            # Link.detach).
            self._errant_handles[detach.handle] = link
        if detach.error is not None:
            # The peer destroyed its endpoint (2.6.5): the ids of our deliveries mean nothing
            # to it now; a link it did not close can only be resumed (also when our own
            # error detach crossed its: both ends destroyed theirs).
            link._drop_ids()
            link._must_resume = not link._closing
        reclosing = link._reclosing
        if not reclosing:  # (the answer to our re-attach to close is not reported)
            self.connection._events.append(
                LinkDetached(link=link, error=detach.error, closed=detach.closed)
            )
        link._reclosing = link._reclose = False
        link._lost(detach.error)
        if link.state is LinkState.DETACH_RCVD and self.connection.state in _SENDING:
            link.detach(closed=detach.closed)  # answer with ours (2.6.6)
            return
        self._drop_link(link)
        if link.state is LinkState.DETACHED and not reclosing:
            # Our detach and the peer's crossed, one closing and one not (2.6.6).
            if detach.closed and not link._sent_closed:
                # We suspended the link, the peer closed it: we signal that we have closed it
                # too by re-attaching it and sending a closing detach.
                self._owed[link] = None
                self._answer_owed()
            elif link._sent_closed and not detach.closed:
                link._reclose = True  # the peer owes us that re-attach and closing detach

    def _on_flow(self, flow: Flow, payload: bytes) -> None:
        self._check_mapped()
        self.next_incoming_id = flow.next_outgoing_id
        self.remote_outgoing_window = flow.outgoing_window
        base = (
            flow.next_incoming_id
            if flow.next_incoming_id is not None
            else self._initial_outgoing_id
        )
        self.remote_incoming_window = serial_diff(
            serial_add(base, flow.incoming_window), self.next_outgoing_id
        )
        self._unblock()
        events = self.connection._events
        if flow.handle is not None:
            link = self._link_in(flow.handle)
            if link._destroyed:
                return  # sent before the peer saw our error detach (2.6.5)
            if link.role is Role.SENDER:
                rcv_count = (
                    flow.delivery_count
                    if flow.delivery_count is not None
                    else link._initial_delivery_count
                )
                credit = flow.link_credit if flow.link_credit is not None else 0
                # Below zero when the receiver lowered its credit under what we had already
                # sent: we may send nothing more (2.6.7), which zero says as well.
                link.link_credit = max(
                    0, serial_diff(serial_add(rcv_count, credit), link.delivery_count)
                )
                link.drain = flow.drain
                if flow.properties:
                    _txn.flow(link, flow.properties)  # type: ignore[arg-type]
                events.append(
                    CreditChanged(
                        link=link,
                        credit=link.link_credit,
                        available=link.available,
                        drain=link.drain,
                    )
                )
            else:
                if flow.delivery_count is not None:
                    limit = serial_add(link.delivery_count, link.link_credit)
                    link.delivery_count = flow.delivery_count
                    link.link_credit = max(0, serial_diff(limit, flow.delivery_count))
                link.available = flow.available or 0
                events.append(
                    CreditChanged(
                        link=link,
                        credit=link.link_credit,
                        available=link.available,
                        drain=link.drain,
                    )
                )
                if link.drain and link.link_credit == 0:
                    link.drain = False
                    events.append(DrainCompleted(link=link))
            if flow.echo and link.state is LinkState.ATTACHED:
                link._send_flow()
        elif flow.echo and self.state is SessionState.MAPPED:
            self._send(self._flow())

    def _on_transfer(self, transfer: Transfer, payload: FramePayload) -> None:
        self._check_mapped()
        link = self._link_in(transfer.handle)
        if link.role is not _RECEIVER:
            raise _PeerError(
                "amqp:not-allowed", "transfer on a link where we send", scope="session", target=self
            )
        if self.incoming_window <= 0:
            raise _PeerError(
                "amqp:session:window-violation",
                "transfer beyond our incoming window",
                scope="session",
                target=self,
            )
        assert isinstance(link, Receiver)
        self.incoming_window -= 1
        self.next_incoming_id = serial_add(self.next_incoming_id or 0, 1)
        if self.remote_outgoing_window > 0:
            self.remote_outgoing_window -= 1
        events = self.connection._events
        delivery = link._current
        if delivery is None:
            if link._destroyed:
                # Sent before the peer saw our error detach (2.6.5): discarded.
                self._replenish()
                return
            if transfer.delivery_id is None or transfer.delivery_tag is None:
                raise _PeerError(
                    "amqp:invalid-field",
                    "the first transfer of a delivery needs its id and tag",
                    scope="session",
                    target=self,
                )
            if link._sent_incomplete and not transfer.resume:
                raise _PeerError(
                    "amqp:illegal-state",
                    "a new delivery after our incomplete unsettled map (2.7.3)",
                    scope="link",
                    target=link,
                )
            # A violation is a transfer beyond the highest delivery-limit we ever granted: after
            # we lowered the credit ("stop", 2.6.10), transfers sent under the old limit may
            # still arrive, and are handled normally (2.6.7 lets the receiver choose).
            if serial_diff(link._granted_limit, link.delivery_count) <= 0:
                raise _PeerError(
                    "amqp:link:transfer-limit-exceeded",
                    "transfer without link credit",
                    scope="link",
                    target=link,
                )
            known = link.unsettled.get(transfer.delivery_tag) if transfer.resume else None
            if known is not None:
                # A delivery we also hold unsettled, resumed (2.6.13): the same Delivery,
                # under its new id.
                self._in_deliveries.pop(known.id, None)
                known.id = transfer.delivery_id
                known.resumed = True
                known.size = 0
                known._chunks = []
                delivery = known
            else:
                delivery = Delivery(
                    link,
                    transfer.delivery_tag,
                    transfer.delivery_id,
                    transfer.message_format or 0,
                )
                delivery.resumed = transfer.resume
                # Resumed, but we hold no such delivery: we had settled it, so it is
                # ignored (2.6.13) and settled, so that the sender can forget it too.
                delivery._ignore = transfer.resume
            link.delivery_count = serial_add(link.delivery_count, 1)
            if link.link_credit > 0:
                link.link_credit -= 1
            if link.available:
                link.available -= 1
            if not transfer.settled:
                if (
                    link.max_unsettled is not None
                    and known is None
                    and len(link.unsettled) >= link.max_unsettled
                ):
                    raise _PeerError(
                        "amqp:resource-limit-exceeded",
                        f"more than {link.max_unsettled} unsettled deliveries",
                        scope="link",
                        target=link,
                    )
                link.unsettled[delivery.tag] = delivery
                self._in_deliveries[delivery.id] = delivery
            link._current = delivery
            if transfer.state is not None or link._coordinator:
                _txn.first_transfer(self, link, delivery, transfer)
        elif transfer.delivery_id is not None and transfer.delivery_id != delivery.id:
            raise _PeerError(
                "amqp:not-allowed",
                "deliveries on one link must not interleave",
                scope="session",
                target=self,
            )
        if transfer.settled:
            delivery.remote_settled = True
        if transfer.state is not None:
            delivery.remote_state = transfer.state
        if transfer.aborted:
            link._current = None
            delivery.aborted = True
            delivery._chunks = []
            link._forget(delivery)
            events.append(DeliveryAborted(link=link, delivery=delivery))
            self._replenish()
            return
        # A payload cut across reads comes as the pieces it came in (FrameParser._gather).
        pieces = type(payload) is list
        delivery.size += sum(map(len, payload)) if pieces else len(payload)  # type: ignore[arg-type]
        limit = link.max_message_size
        if limit and delivery.size > limit:
            raise _PeerError(
                "amqp:link:message-size-exceeded",
                f"delivery of more than {limit} bytes",
                scope="link",
                target=link,
            )
        if delivery._ignore:
            if not transfer.more:
                link._current = None
                delivery.complete = True
                if not delivery.remote_settled:
                    link.settle(delivery)
                else:
                    link._untrack(delivery)
            self._replenish()
            return
        if link.streaming:
            # Each transfer's bytes go to the application as they come.
            if not transfer.more:
                link._current = None
                delivery.complete = True
                if delivery.remote_settled:
                    link._untrack(delivery)
            events.append(
                _delivery_received(
                    link=link,
                    delivery=delivery,
                    data=b"".join(payload) if pieces else bytes(payload),  # type: ignore[arg-type]
                    complete=not transfer.more,
                )
            )
        else:
            if pieces:
                delivery._chunks += payload  # type: ignore[arg-type]
                if transfer.more:
                    # A payload gathered across reads is the first frame of this read: no
                    # delivery is in _viewing yet.
                    self.connection._viewing.append(delivery)
            elif payload:
                delivery._chunks.append(payload)  # type: ignore[arg-type]
                if transfer.more and type(payload) is memoryview:
                    viewing = self.connection._viewing
                    if not viewing or viewing[-1] is not delivery:
                        viewing.append(delivery)
            if not transfer.more:
                link._current = None
                delivery.complete = True
                chunks = delivery._chunks
                delivery._chunks = []
                if delivery.remote_settled:
                    link._untrack(delivery)  # the sender has forgotten it: so do we
                if link._coordinator:
                    assert isinstance(link, _txn.CoordinatorLink)
                    # A declare or discharge (core spec 4.2).
                    link._on_request(delivery, b"".join(chunks))
                else:
                    # A large frame's payload is a view of the bytes received: the event
                    # keeps the pieces, joined (copied) once if asked for its data, or
                    # decoded with only a large data section's bytes copied (message()).
                    data: bytes | tuple[bytes | memoryview, ...]
                    if len(chunks) == 1 and type(chunks[0]) is bytes:
                        data = chunks[0]
                    else:
                        data = tuple(chunks) if chunks else b""
                    events.append(
                        _delivery_received(link=link, delivery=delivery, data=data, complete=True)
                    )
        self._replenish()

    def _replenish(self) -> None:
        """Top our incoming window back up once half of it is used."""
        if (
            self.incoming_window * 2 < self._max_incoming_window
            and self.state is SessionState.MAPPED
        ):
            self.incoming_window = self._max_incoming_window
            self._send(self._flow())

    def _on_disposition(self, disp: Disposition, payload: bytes) -> None:
        self._check_mapped()
        # The disposition's role is the sender of the frame: a receiver settles ours.
        ours = self._out_deliveries if disp.role is Role.RECEIVER else self._in_deliveries
        first = disp.first
        last = disp.last if disp.last is not None else first
        span = serial_diff(last, first)
        if span < 0:
            raise _PeerError(
                "amqp:invalid-field",
                "disposition with last before first",
                scope="session",
                target=self,
            )
        if span < len(ours):
            ids: Iterable[int] = (serial_add(first, i) for i in range(span + 1))
        else:
            ids = [i for i in ours if serial_le(first, i) and serial_le(i, last)]
        events = self.connection._events
        # A receiver's transactional state retires our delivery (core spec 4.4.2).
        txn_state = disp.role is _RECEIVER and type(disp.state) is TransactionalState
        for did in list(ids):
            delivery = ours.get(did)
            if delivery is None:
                continue
            if txn_state:
                _txn.disposition(delivery, disp.state)
            if disp.state is not None:
                delivery.remote_state = disp.state  # a bare settlement keeps the outcome
            link = delivery.link
            if disp.settled:
                delivery.remote_settled = True
                if delivery._settle_on_remote or (isinstance(link, Sender) and link.auto_settle):
                    # rcv-settle-mode second: we waited for the sender to settle. An
                    # auto-settling sender: the receiver has settled. Either way the peer has
                    # forgotten the delivery, so we settle without telling it (2.6.12).
                    link._forget(delivery)
            events.append(
                _delivery_updated(
                    link=link, delivery=delivery, state=disp.state, settled=disp.settled
                )
            )
            if link._controller:
                assert isinstance(link, _txn.Controller)
                link._on_outcome(delivery, disp.state)  # a declare's or discharge's outcome

    def _on_begin(self, begin: Begin, payload: bytes) -> None:
        raise _PeerError("amqp:illegal-state", "begin on a channel already in use")


_SESSION_HANDLERS: dict[type, Any] = {
    Transfer: Session._on_transfer,
    Disposition: Session._on_disposition,
    Flow: Session._on_flow,
    Attach: Session._on_attach,
    Detach: Session._on_detach,
    End: Session._on_end,
    Begin: Session._on_begin,
}


def _encode_performative(body: Any) -> bytearray:
    out = bytearray()
    encode_into(body, out)
    return out


def _check_limit(value: int | None) -> None:
    if value is not None and (type(value) is not int or value < 0):
        raise LocalProtocolError(f"max_unsettled {value!r} is not a count")


def _terminus(value: Any, cls: type) -> Any:
    if value is None or isinstance(value, Source | Target):
        return value
    if isinstance(value, str):
        return cls(address=value)
    return value


class Connection:
    """One AMQP connection endpoint, client or server (core spec 2.4).

    ``idle_timeout`` (seconds) is our own threshold: we advertise half of it, as the spec
    recommends, and close the connection with ``amqp:resource-limit-exceeded`` when nothing
    has arrived for that long. ``max_frame_size`` is the largest frame we accept.
    ``max_unsettled`` is the default limit on unsettled deliveries per link
    (:attr:`Link.max_unsettled`).
    """

    def __init__(
        self,
        *,
        client: bool = True,
        container_id: str = "amqp-sansio",
        hostname: str | None = None,
        max_frame_size: int = 65536,
        channel_max: int = 65535,
        idle_timeout: float | None = None,
        offered_capabilities: Any = None,
        desired_capabilities: Any = None,
        properties: dict[Any, Any] | None = None,
        max_depth: int = decoder.DEFAULT_MAX_DEPTH,
        sasl: ClientCredentials | ServerAuthenticator | None = None,
        sasl_mechanisms: Collection[str] | None = None,
        allow_plain_without_tls: bool = False,
        encrypted: bool = False,
        sasl_max_frame_size: int = 8192,
        max_unsettled: int | None = None,
    ) -> None:
        if max_frame_size < MIN_MAX_FRAME_SIZE:
            raise LocalProtocolError(f"max_frame_size must be at least {MIN_MAX_FRAME_SIZE}")
        self.client = client
        self.container_id = container_id
        self.hostname = hostname
        self.max_frame_size = max_frame_size
        self.channel_max = channel_max
        self.idle_timeout = idle_timeout
        self.offered_capabilities = offered_capabilities
        self.desired_capabilities = desired_capabilities
        self.properties = properties
        self.max_unsettled = max_unsettled  # the default of Link.max_unsettled
        self.state = ConnectionState.START
        self.remote: Open | None = None
        self._parser = FrameParser(max_frame_size=max_frame_size, max_depth=max_depth)
        self._out: list[bytes | bytearray | memoryview] = []
        self._events: list[Event] = []
        self._header_received = False
        self._peer_max_frame_size = MIN_MAX_FRAME_SIZE
        self._peer_channel_max = 0
        self._peer_idle_timeout: float | None = None
        self._now: float | None = None
        self._last_received: float | None = None
        self._last_sent: float | None = None
        self._broken = False
        self._local_channels: dict[int, Session] = {}
        self._remote_channels: dict[int, Session] = {}
        self._pending_sessions: set[Session] = set()
        #: Deliveries that took a view of the bytes being received (see _unpin).
        self._viewing: list[Delivery] = []
        #: The SASL exchange while it lasts (core spec 5.3); its bytes wait in _sasl_out and
        #: go before anything of AMQP's, which is held back until it succeeds.
        self._sasl: SaslLayer | None = None
        self._sasl_out: list[bytes | bytearray | memoryview] = []
        #: The connection's transactions, both sides (core spec part 4), once there are any.
        self._txn_book: Any = None
        #: The transport under us is encrypted (TLS): given, or told by the TLS layer.
        self.encrypted = encrypted
        #: After a SASL exchange: the mechanism used and the identity it established.
        self.sasl_mechanism: str | None = None
        self.authenticated_identity: str | None = None
        if sasl is not None:
            try:
                self._sasl = SaslLayer(
                    sasl,
                    client=client,
                    hostname=hostname,
                    send=self._sasl_out_append,
                    report=self._report,
                    mechanisms=sasl_mechanisms,
                    allow_cleartext=allow_plain_without_tls,
                    encrypted=encrypted,
                )
            except TypeError as exc:
                raise LocalProtocolError(str(exc)) from None
            if sasl_max_frame_size < MIN_MAX_FRAME_SIZE:
                raise LocalProtocolError(
                    f"sasl_max_frame_size must be at least {MIN_MAX_FRAME_SIZE}"
                )
            # SASL frames are bounded on their own (5.3.1 says 512; OAuth tokens are
            # longer): the connection's own limit applies once the exchange is over.
            self._parser.max_frame_size = sasl_max_frame_size

    def __repr__(self) -> str:
        role = "client" if self.client else "server"
        return f"<Connection {role} {self.state.value}>"

    # -- I/O surface -------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview, now: float) -> list[Event]:
        """Take bytes from the peer; return what happened. Empty ``data`` means the peer
        closed the transport.

        ``bytes``, and views of ``bytes`` (such as the pieces of another engine's
        :meth:`buffers_to_send`), are read in place: a large transfer's payload is a view of
        them, held by the delivery (and its :class:`~amqp_sansio.DeliveryReceived`) with
        the whole ``bytes`` object behind it. Other buffers (a ``bytearray``, which may
        change) are copied (core spec 2.3: frames may be cut anywhere)."""
        self._now = now  # _tick, inlined: this runs for every piece received
        if self._last_received is None:
            self._last_received = now
        if self._last_sent is None and self._out:
            self._last_sent = now
        if self.state is _CONNECTION_END or self._broken:
            return self._take_events()
        if not data:
            if self._sasl is not None:
                self._sasl_failed(
                    SASLError("the transport closed during the SASL exchange", code=SaslCode.SYS)
                )
            self._end()
            return self._take_events()
        self._parser.feed(data)
        try:
            self._parse()
        except UnsupportedProtocolError as exc:
            self._bad_header(exc.header, exc.version_name)
        except (FramingError, DecodeError) as exc:
            if self._sasl is not None:
                self._sasl_failed(_sasl_input_error(exc))
            elif type(exc) is FramingError:
                self._fatal("amqp:connection:framing-error", exc.description)
            else:
                self._fatal(exc.condition, exc.description)
        except _PeerError as exc:
            self._peer_error(exc)
        if self._viewing:
            self._unpin(data)
        events = self._events
        self._events = []
        return events

    def _unpin(self, data: Any) -> None:
        """Deliveries still arriving keep large payloads as views of the bytes they came in
        (no copy): all of ``data`` stays alive for them. Where their views of it are less
        than half of it, they are copied out, so that what a delivery holds stays within
        twice its size."""
        viewing, self._viewing = self._viewing, []
        if type(data) is memoryview:
            # A view of bytes (see FrameParser.feed): what it views is weighed, not all of
            # the bytes (a sender's message handed over in views is held by the sender too).
            obj, size = data.obj, data.nbytes
        else:
            obj, size = data, len(data)
        for delivery in viewing:
            # Its chunks from ``data`` are the last ones: older views are of older bytes (or,
            # for views of one bytes object fed in turn, of other parts of it: the count
            # stops at the size of ``data``).
            chunks = delivery._chunks
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

    def data_to_send(self, max_bytes: int | None = None) -> bytes:
        """The bytes to write to the peer now (they are handed over once): all of them, or
        at most ``max_bytes`` (the rest waits for the next call, cut anywhere, even inside a
        frame). A bound keeps what each call builds small: a large message queued whole
        comes out a piece at a time, each copied from the message's own bytes, rather than
        in one buffer as large as the message. :meth:`buffers_to_send` hands over the same
        bytes without joining them."""
        return b"".join(self._take_output(max_bytes))

    def buffers_to_send(self, max_bytes: int | None = None) -> list[bytes | memoryview]:
        """What :meth:`data_to_send` would return, as a list of pieces that join to it, for
        a scatter-gather write (``socket.sendmsg``, asyncio's ``transport.writelines``):
        the payload of a large message's frames comes as views of the message's own
        ``bytes`` (as given to :meth:`Sender.send`), not copied; frame headers and small
        frames next to each other are joined into one ``bytes``. ``max_bytes`` bounds the
        pieces' total as it bounds :meth:`data_to_send`'s result. An empty list when
        nothing waits.

        The views are read-only and valid for as long as they are held (they keep the
        message's bytes alive). Another engine's :meth:`receive_data` may be given each
        piece in turn: views of ``bytes`` are read in place there too."""
        return _gathered(self._take_output(max_bytes))

    def _take_output(self, max_bytes: int | None) -> list[bytes | bytearray | memoryview]:
        """The pieces to hand over now, taken off the queue (of SASL's bytes while the
        exchange lasts)."""
        if max_bytes is not None and (type(max_bytes) is not int or max_bytes < 1):
            raise ValueError(f"max_bytes is a positive int or None, not {max_bytes!r}")
        if self._sasl is not None:
            # Authenticating: only the exchange's own bytes go; AMQP's wait for its end.
            out = self._sasl_out
            if max_bytes is not None:
                return _take(out, max_bytes)
            self._sasl_out = []
            return out
        if self._pending_sessions:
            for session in self._pending_sessions:
                session._flush_dispositions()
            self._pending_sessions.clear()
        out = self._out
        if not out:
            return out
        if max_bytes is not None:
            return _take(out, max_bytes)
        self._out = []
        return out

    def next_deadline(self) -> float | None:
        """When :meth:`handle_timer` must next be called (same clock as ``now``), or None."""
        if self.state is ConnectionState.END or self._broken:
            return None
        deadlines = []
        if self.idle_timeout and self._last_received is not None and self.state in _RECEIVING:
            deadlines.append(self._last_received + self.idle_timeout)
        if self._peer_idle_timeout and self._last_sent is not None and self.state in _SENDING:
            deadlines.append(self._last_sent + self._peer_idle_timeout / 2)
        return min(deadlines) if deadlines else None

    def handle_timer(self, now: float) -> list[Event]:
        """Act on what is due at ``now``: close an idle connection, send a heartbeat."""
        self._tick(now)
        if self.state is ConnectionState.END or self._broken:
            return self._take_events()
        if (
            self.idle_timeout
            and self._last_received is not None
            and self.state in _RECEIVING
            and now >= self._last_received + self.idle_timeout
        ):
            self._events.append(IdleTimedOut())
            if self.state in _OPEN_FIRST:
                self.open()  # a close may only follow our open (2.4.7)
            if self.state in _SENDING:
                self._close(
                    Error(
                        condition=Symbol("amqp:resource-limit-exceeded"),
                        description="idle time-out expired",
                    )
                )
            self._end()
        elif (
            self._peer_idle_timeout
            and self._last_sent is not None
            and self.state in _SENDING
            and now >= self._last_sent + self._peer_idle_timeout / 2
        ):
            self._send_raw(HEARTBEAT)
        return self._take_events()

    # -- commands ---------------------------------------------------------------------------

    def open(self, *, now: float | None = None) -> None:
        """Send the protocol header (if not yet sent) and our open. A client calls it first
        (the frames after it are pipelined); a server calls it to accept the peer's open.
        ``now`` starts the clock for the idle time-out if nothing has yet."""
        if now is not None:
            self._tick(now)
        start = self.state is ConnectionState.START
        if (ConnectionState.HDR_SENT if start else self.state, _CI.S_OPEN) not in (
            CONNECTION_TRANSITIONS
        ):
            raise LocalProtocolError(f"cannot open in connection state {self.state.value}")
        idle = None if not self.idle_timeout else int(self.idle_timeout * 500)
        body = Open(
            container_id=self.container_id,
            hostname=self.hostname,
            max_frame_size=self.max_frame_size,
            channel_max=self.channel_max,
            idle_time_out=idle,
            offered_capabilities=self.offered_capabilities,
            desired_capabilities=self.desired_capabilities,
            properties=self.properties,
        )
        frame = self._checked_frame(0, body)  # too large for the peer: nothing has changed
        if start:
            self._send_header()
        self._move(_CI.S_OPEN)
        self._send_raw(frame)

    def close(self, error: Error | None = None) -> None:
        """Close the connection, with an error if there is one (core spec 2.4.3). In the
        server role, answering a peer's open with a close (with an error) refuses it: our open
        goes first, as the spec requires."""
        if self.state is ConnectionState.START:
            self._end()  # nothing was said: nothing to close
            return
        if error is not None:
            self._checked_frame(0, Close(error=error))  # too large: nothing has changed
        if self.state in _OPEN_FIRST:
            self.open()
        self._close(error)

    def begin(
        self,
        *,
        incoming_window: int = _INCOMING_WINDOW,
        outgoing_window: int = _OUTGOING_WINDOW,
        handle_max: int = _HANDLE_MAX,
        properties: dict[Any, Any] | None = None,
        offered_capabilities: Any = None,
        desired_capabilities: Any = None,
    ) -> Session:
        """Begin a session (core spec 2.5.1) and return it."""
        session = Session(
            self,
            incoming_window=incoming_window,
            outgoing_window=outgoing_window,
            handle_max=handle_max,
            properties=properties,
            offered_capabilities=offered_capabilities,
            desired_capabilities=desired_capabilities,
        )
        session.begin()
        return session

    @property
    def sessions(self) -> list[Session]:
        return list(set(self._local_channels.values()) | set(self._remote_channels.values()))

    # -- internals ----------------------------------------------------------------------------

    def _tick(self, now: float) -> None:
        self._now = now
        if self._last_received is None:
            self._last_received = now
        if self._last_sent is None and self._out:
            self._last_sent = now

    def _take_events(self) -> list[Event]:
        events = self._events
        self._events = []
        return events

    def _move(self, what: ConnectionInput) -> None:
        new = CONNECTION_TRANSITIONS.get((self.state, what))
        if new is None:
            raise LocalProtocolError(f"cannot {what.value} in connection state {self.state.value}")
        self.state = new
        if new is ConnectionState.END:
            self._events.append(ConnectionEnded())

    def _check_can_send(self) -> None:
        if self.state not in _SENDING:
            raise LocalProtocolError(f"nothing may be sent in connection state {self.state.value}")

    def _send_header(self) -> None:
        self._move(_CI.S_HDR)
        if self._sasl is not None:
            self._sasl.send_header()  # first on the wire (5.1); ours waits behind it
        self._send_raw(AMQP_HEADER)

    def _sasl_out_append(self, data: bytes) -> None:
        self._sasl_out.append(data)

    def _report(self, event: Event) -> None:
        self._events.append(event)

    def set_transport_security(
        self,
        *,
        encrypted: bool = True,
        client_certificate: bool = False,
        peer_identity: str | None = None,
    ) -> None:
        """Tell the SASL layer what the transport below it guarantees (core spec 5.2): that
        it is ``encrypted`` (TLS), that we presented a ``client_certificate`` (a client may
        then use EXTERNAL), or the verified ``peer_identity`` of the client's certificate (a
        server may then offer EXTERNAL). Call it before the peer's SASL header arrives (a
        :class:`~amqp_sansio.TLSLayer` calls it when its handshake completes)."""
        sasl = self._sasl
        if sasl is None:
            if self.sasl_mechanism is not None:
                raise LocalProtocolError("set the transport security before the SASL exchange")
            self.encrypted = encrypted  # no SASL: only recorded, for the application
            return
        if sasl.phase is not SaslPhase.HEADER or self._parser.buffered:
            raise LocalProtocolError("set the transport security before the SASL exchange")
        self.encrypted = encrypted
        sasl.encrypted = encrypted
        sasl.client_certificate = client_certificate
        sasl.peer_identity = peer_identity

    def _send_raw(self, data: bytes | bytearray) -> None:
        self._out.append(data)
        self._last_sent = self._now

    def _checked_frame(self, channel: int, body: Any) -> bytearray:
        frame = _frame(channel, body)
        if len(frame) > self._peer_max_frame_size:
            raise LocalProtocolError(
                f"{type(body).__name__} frame of {len(frame)} bytes "
                f"exceeds the peer's max-frame-size "
                f"{self._peer_max_frame_size}"
            )
        return frame

    def _send_frame(self, channel: int, body: Any) -> None:
        self._send_raw(self._checked_frame(channel, body))

    def _close(self, error: Error | None) -> None:
        what = _CI.S_CLOSE_ERROR if error is not None else _CI.S_CLOSE
        if (self.state, what) not in CONNECTION_TRANSITIONS:
            raise LocalProtocolError(f"cannot close in connection state {self.state.value}")
        for session in self._pending_sessions:
            session._flush_dispositions()  # settlements made before the close go first
        self._pending_sessions.clear()
        self._move(what)
        self._send_frame(0, Close(error=error))

    def _end(self) -> None:
        if self.state is not ConnectionState.END:
            self.state = ConnectionState.END
            self._events.append(ConnectionEnded())

    def _assign_channel(self, session: Session) -> None:
        limit = min(self.channel_max, self._peer_channel_max)
        local = self._local_channels
        channel = next(c for c in itertools.count() if c not in local)  # the lowest free
        if channel > limit:
            raise LocalProtocolError(f"no free channel (channel-max {limit})")
        session.channel = channel
        self._local_channels[channel] = session

    def _release_channel(self, session: Session) -> None:
        self._local_channels.pop(session.channel, None)  # type: ignore[arg-type]
        session.channel = None
        session._blocked.clear()
        session._dispositions.clear()
        session._owed.clear()
        for link in session._links_by_name.values():
            link.state = LinkState.DETACHED  # a session's end detaches its links (2.5.2)
            link.handle = link.remote_handle = None
            link._lost(None)
        session._links_in.clear()
        session._links_out.clear()

    def _parse(self) -> None:
        parser = self._parser
        while True:
            if self._sasl is not None:
                if not self._parse_sasl():
                    return
                continue
            if not self._header_received:
                header = parser.next_protocol_header()
                if header is None:
                    return
                if header.protocol_id != 0:
                    self._bad_header(
                        header.to_bytes(),
                        f"AMQP 1.0 with protocol id {int(header.protocol_id)} "
                        f"({header.protocol_id.name}), where we expect AMQP",
                    )
                    return
                self._amqp_header()
                continue
            frame = parser._next()
            if frame is None:
                return
            self._last_received = self._now
            frame_type, channel, body, payload = frame
            if frame_type is not _AMQP_FRAME:
                raise _PeerError(
                    "amqp:connection:framing-error", "a SASL frame after the AMQP header"
                )
            if body is None:
                continue  # heartbeat
            if self.state in _CONNECTION_ENDING and type(body) is not Close:
                continue
            handler = _CONNECTION_HANDLERS.get(type(body))
            if handler is not None:
                handler(self, channel, body)
                if self.state is _CONNECTION_END:
                    return
                continue
            self._on_session_frame(channel, body, payload)
            if self._broken:
                return  # a session's or link's error that closed the connection (_fatal)

    def _amqp_header(self) -> None:
        """The peer's AMQP protocol header (core spec 2.2): a server answers with its own."""
        self._header_received = True
        self._move(_CI.R_HDR)
        if self.state is ConnectionState.HDR_RCVD:
            self._send_header()

    def _parse_sasl(self) -> bool:
        """One step of the SASL exchange; False when it needs more bytes or has ended.

        The peer's header decides first (core spec 2.2, 5.1): SASL's starts the exchange.
        The bare AMQP header, on a server that allows anonymous access (the SASL layer is
        optional there), skips it: the client is anonymous. Anywhere else it is refused
        with our own header and reported as :class:`~amqp_sansio.PeerWithoutSASL`: a
        server that requires authentication, or a client whose server has no SASL layer."""
        sasl = self._sasl
        assert sasl is not None
        parser = self._parser
        if sasl.phase is SaslPhase.HEADER:
            header = parser.next_protocol_header()
            if header is None:
                return False
            if header.protocol_id is ProtocolId.AMQP and sasl.optional:
                self._parser.max_frame_size = self.max_frame_size
                self.authenticated_identity = sasl.accept_without_sasl()
                self._leave_sasl(keep_held=True)
                self._amqp_header()
                return True
            if header.protocol_id is ProtocolId.AMQP:
                self._bad_header(
                    header.to_bytes(),
                    "AMQP without SASL, where we require SASL",
                    event=PeerWithoutSASL,
                )
                return False
            if header.protocol_id is not ProtocolId.SASL:
                name = (
                    f"AMQP 1.0 with protocol id {int(header.protocol_id)} "
                    f"({header.protocol_id.name}), where we expect SASL"
                )
                self._bad_header(header.to_bytes(), name)
                return False
            sasl.on_header(header.protocol_id)
        else:
            frame = parser._next()
            if frame is None:
                return False
            self._last_received = self._now
            sasl.on_frame(frame[0], frame[2])
        if sasl.failed:
            self._sasl_failed()
            return False
        if sasl.done:
            self._parser.max_frame_size = self.max_frame_size
            self.sasl_mechanism = sasl.mechanism
            self.authenticated_identity = sasl.identity
            self._leave_sasl(keep_held=True)  # its last frame goes before what AMQP holds
        return True

    def _sasl_failed(self, error: AMQPError | None = None) -> None:
        """The exchange failed: only what SASL still has to say goes (a server's outcome);
        what AMQP held back is dropped, and the connection ends (5.3.2)."""
        sasl = self._sasl
        assert sasl is not None
        if error is not None:
            sasl.fail(error)
        self._leave_sasl(keep_held=False)
        self._broken = True
        self._end()

    def _leave_sasl(self, *, keep_held: bool) -> None:
        """The SASL exchange is over: its last bytes go out first, and what AMQP held back
        behind it follows (``keep_held``) or is dropped."""
        if keep_held:
            self._out[:0] = self._sasl_out
        else:
            self._out = self._sasl_out
        self._sasl_out = []
        self._sasl = None

    def _on_open(self, channel: int, open_: Open) -> None:
        new = CONNECTION_TRANSITIONS.get((self.state, _CI.R_OPEN))
        if new is None:
            raise _PeerError("amqp:illegal-state", f"open in connection state {self.state.value}")
        if channel != 0:
            raise _PeerError("amqp:connection:framing-error", "open on a channel other than 0")
        if open_.max_frame_size < MIN_MAX_FRAME_SIZE:
            raise _PeerError(
                "amqp:invalid-field",
                f"max-frame-size {open_.max_frame_size} is "
                f"below the minimum of {MIN_MAX_FRAME_SIZE}",
            )
        self.state = new
        self.remote = open_
        self._peer_max_frame_size = open_.max_frame_size
        self._peer_channel_max = open_.channel_max
        self._peer_idle_timeout = open_.idle_time_out / 1000 if open_.idle_time_out else None
        self._events.append(ConnectionOpened(remote=open_))

    def _on_close(self, channel: int, close: Close) -> None:
        if self.state is ConnectionState.OPEN_RCVD:
            # The peer opened and closed in one go (its OC_PIPE): it waits for our open
            # and close to reach its END (2.4.7).
            self.open()
        new = CONNECTION_TRANSITIONS.get((self.state, _CI.R_CLOSE))
        if new is None:
            # A close before the open, or a second close: end all the same.
            self._events.append(ConnectionClosed(error=close.error))
            self._end()
            return
        self.state = new
        self._events.append(ConnectionClosed(error=close.error))
        if new is ConnectionState.CLOSE_RCVD:
            self._close(None)  # answer with ours; that ends the connection
        else:  # END: ours had gone
            self._events.append(ConnectionEnded())

    def _on_session_frame(self, channel: int, body: Any, payload: FramePayload) -> None:
        if self.state not in _PEER_OPENED:
            raise _PeerError("amqp:illegal-state", f"{type(body).__name__} before open")
        if type(body) is Begin and channel not in self._remote_channels:
            self._on_begin(channel, body)
            return
        session = self._remote_channels.get(channel)
        if session is None:
            raise _PeerError(
                "amqp:not-allowed",
                f"{type(body).__name__} on channel {channel}, where no session has begun",
            )
        try:
            session._on_frame(body, payload)
        except _PeerError as exc:
            if exc.scope == "connection":
                raise
            self._peer_error(exc)

    def _on_begin(self, channel: int, begin: Begin) -> None:
        if channel > self.channel_max:
            raise _PeerError(
                "amqp:connection:framing-error",
                f"channel {channel} exceeds channel-max {self.channel_max}",
            )
        if begin.remote_channel is None:
            session = Session(
                self,
                incoming_window=_INCOMING_WINDOW,
                outgoing_window=_OUTGOING_WINDOW,
                handle_max=_HANDLE_MAX,
                properties=None,
                offered_capabilities=None,
                desired_capabilities=None,
            )
            session.state = SessionState.BEGIN_RCVD
        else:
            found = self._local_channels.get(begin.remote_channel)
            if found is None or found.state is not SessionState.BEGIN_SENT:
                raise _PeerError(
                    "amqp:not-allowed",
                    f"begin answers channel {begin.remote_channel}, where we began no session",
                )
            session = found
            session.state = SessionState.MAPPED
        session.remote = begin
        session.remote_channel = channel
        session.next_incoming_id = begin.next_outgoing_id
        session.remote_outgoing_window = begin.outgoing_window
        session.remote_incoming_window = serial_diff(
            serial_add(session._initial_outgoing_id, begin.incoming_window),
            session.next_outgoing_id,
        )
        self._remote_channels[channel] = session
        self._events.append(SessionBegun(session=session, remote=begin))
        session._unblock()

    def _peer_error(self, exc: _PeerError) -> None:
        """Answer a peer's violation at the right level (core spec 2.4.3, 2.5.4, 2.6.5)."""
        self._events.append(ProtocolError(error=exc.error, scope=exc.scope))
        if exc.scope == "link" and isinstance(exc.target, Link):
            link = exc.target
            if link.state is LinkState.ATTACHED:
                link._current = None
                link.detach(error=exc.error)
                return
        if exc.scope in ("link", "session"):
            session = exc.target.session if isinstance(exc.target, Link) else exc.target
            if isinstance(session, Session) and session.state is SessionState.MAPPED:
                session.end(exc.error)
                return
        self._fatal(str(exc.error.condition), exc.error.description or "", reported=True)

    def _fatal(self, condition: str, description: str, *, reported: bool = False) -> None:
        error = Error(condition=Symbol(condition), description=description)
        if not reported:
            self._events.append(ProtocolError(error=error, scope="connection"))
        if self.state in _OPEN_FIRST:
            self.open()  # a close may only follow our open (2.4.7)
        if (self.state, _CI.S_CLOSE_ERROR) in CONNECTION_TRANSITIONS:
            self._close(error)
        self._broken = True  # the stream cannot be trusted: stop reading it
        self._end()

    def _bad_header(
        self,
        header: bytes,
        name: str,
        *,
        event: type[UnsupportedProtocol] = UnsupportedProtocol,
    ) -> None:
        sasl = self._sasl
        if sasl is not None:
            # Only our SASL header answers (5.3.2); what AMQP held back is dropped.
            sasl.send_header()
            self._leave_sasl(keep_held=False)
        elif self.state is ConnectionState.START:
            self._send_header()
        self._events.append(event(header=header, version_name=name))
        self._broken = True
        self._end()


def _sasl_input_error(exc: FramingError | DecodeError) -> AMQPError:
    """The error for bytes that break the SASL exchange. A decode error's description may
    quote what it could not decode, and SASL frames carry credentials: only its kind and
    where it was found are kept (the original is not chained to it either)."""
    if isinstance(exc, FramingError):
        return exc
    return SASLProtocolError(f"a malformed SASL frame (at offset {exc.offset}): {exc.condition}")


_CONNECTION_HANDLERS: dict[type, Any] = {
    Open: Connection._on_open,
    Close: Connection._on_close,
}

#: States where our close must wait for our open; where frames other than open may be sent
#: (2.4.7, Figure 2.24); where frames may still arrive.
_OPEN_FIRST = frozenset(
    {
        ConnectionState.HDR_SENT,
        ConnectionState.HDR_EXCH,
        ConnectionState.OPEN_RCVD,
    }
)
_SENDING = frozenset(
    {
        ConnectionState.OPEN_PIPE,
        ConnectionState.OPEN_SENT,
        ConnectionState.OPENED,
        ConnectionState.CLOSE_RCVD,
    }
)
#: States in which the peer has opened, so session frames may arrive: in OPEN_RCVD a client's
#: pipelined frames come before we answer its open (2.4.2).
_PEER_OPENED = frozenset(
    {
        ConnectionState.OPEN_RCVD,
        ConnectionState.OPENED,
        ConnectionState.CLOSE_RCVD,
    }
)
_RECEIVING = frozenset(set(ConnectionState) - {ConnectionState.END, ConnectionState.CLOSE_RCVD})

# Transactions (core spec part 4): their logic calls back into the classes above.
from . import transactions as _txn  # noqa: E402
