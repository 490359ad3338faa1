"""Sessions (core spec 2.5): handles, windows and delivery ids; a session hands each link's
frames to the link."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import attrs

from ...codec.amqp10.composite import unchecked
from ...codec.amqp10.types import Symbol
from ...definitions.amqp10.messaging import DeliveryState, Source, Target
from ...definitions.amqp10.performatives import (
    Attach,
    Begin,
    Detach,
    Disposition,
    End,
    Error,
    Flow,
    Performative,
    ReceiverSettleMode,
    Role,
    SenderSettleMode,
    Transfer,
)
from ...definitions.amqp10.transactions import Coordinator, TransactionalState
from ...errors import LocalProtocolError
from ...framing.amqp10 import FramePayload
from ..contract import Event
from .events import DeliveryReceived
from .frames import _encode_performative, _frame, _frame_head
from .link import Delivery, DeliveryUpdated, Link, LinkConnection, TransactionHooks
from .payload import Payload, QueuedTransfer, _cut
from .peer_error import _PeerError
from .receiver import Receiver
from .sender import Sender
from .serial import serial_add, serial_diff, serial_le
from .states import (
    CONNECTION_SENDING,
    LINK_TRANSITIONS,
    SESSION_ENDING,
    SESSION_MAPPED,
    SESSION_SENDING,
    SESSION_TRANSITIONS,
    LinkInput,
    LinkState,
    SessionInput,
    SessionState,
)
from .transactions import HOOKS, Controller, CoordinatorLink, attach_controller

_SENDER = Role.SENDER

if TYPE_CHECKING:
    from ...codec.amqp10.types import Described


L = TypeVar("L", bound="Link")

_UINT_MAX = 0xFFFFFFFF
_SI = SessionInput
_LI = LinkInput

# Enum members read on every frame, bound once: on Python 3.11 reading a member from its class
# costs about as much as a function call (the enum metaclass hooks attribute lookup).
_ATTACHED = LinkState.ATTACHED
_RECEIVER = Role.RECEIVER


#: Transfers built by the engine from values it has checked: no validation on the hot path.
_transfer = unchecked(Transfer)
#: The per-delivery events, built the same way (their fields need no checks).
_delivery_received = unchecked(DeliveryReceived)
_delivery_updated = unchecked(DeliveryUpdated)


@attrs.frozen(kw_only=True)
class SessionBegun(Event):
    """The peer's begin arrived (core spec 2.5.1). If the peer started the session, answer
    with :meth:`Session.begin` (accept) or :meth:`Session.end` with an error (refuse)."""

    session: Session
    remote: Begin


@attrs.frozen(kw_only=True)
class SessionEnded(Event):
    """The peer's end arrived, with its error if it gave one (core spec 2.5.2)."""

    session: Session
    error: Error | None


class SessionConnection(LinkConnection, Protocol):
    """What a session asks of its connection (:class:`~amqp_sansio.Connection`, core spec
    2.4): its channel, and the way out for its frames."""

    @property
    def defer_dispositions(self) -> Callable[[Session], None]:
        """Flush this session's dispositions before the next output is taken."""

    def check_can_send(self) -> None: ...
    def assign_channel(self, session: Session) -> None: ...
    def release_channel(self, session: Session) -> None: ...
    def forget_remote_channel(self, channel: int | None) -> None: ...
    def checked_frame(self, channel: int, body: Performative) -> bytearray: ...
    def send_frame(self, channel: int, body: Performative) -> None: ...
    def emit(self, data: bytes | bytearray) -> None: ...
    def emit_parts(self, parts: tuple[bytes | bytearray | memoryview, ...]) -> None: ...


class Session:
    """A session endpoint (core spec 2.5). Made by :meth:`Connection.begin`, or by the
    peer's begin (:class:`SessionBegun`)."""

    def __init__(
        self,
        conn: SessionConnection,
        *,
        incoming_window: int,
        outgoing_window: int,
        handle_max: int,
        properties: dict[Any, Any] | None,
        offered_capabilities: str | Iterable[str] | None,
        desired_capabilities: str | Iterable[str] | None,
    ) -> None:
        #: Its :class:`~amqp_sansio.Connection`, named through what a session asks of it.
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

    def check_can_send(self) -> None:
        """Refuse (:class:`LocalProtocolError`) once the session or connection may send no
        more."""
        if self.state not in SESSION_SENDING:
            raise LocalProtocolError(f"the session is {self.state.value}")
        self.connection.check_can_send()

    # -- commands ---------------------------------------------------------------------------

    def begin(self) -> None:
        """Send our begin: for a session we started, done by :meth:`Connection.begin`; for
        one the peer started (:class:`SessionBegun`), accepting it."""
        conn = self.connection
        conn.check_can_send()
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
        conn.checked_frame(0, body)  # too large for the peer: nothing has changed yet
        conn.assign_channel(self)  # may refuse (no free channel): nothing has changed yet
        self.state = new
        assert self.channel is not None
        conn.send_frame(self.channel, body)
        self._answer_owed()

    def end(self, error: Error | None = None) -> None:
        """End the session (core spec 2.5.2); with an error, incoming frames are discarded
        until the peer's end (DISCARDING). Ending a session the peer began but we never
        answered sends our begin first, as refusing one must."""
        body = End(error=error)
        if error is not None:
            self.check_fits(body)  # (an error may be large) before any change
        if self.state is SessionState.BEGIN_RCVD:
            self.begin()
        self.connection.check_can_send()
        self._move(_SI.S_END_ERROR if error is not None else _SI.S_END)
        self.send_frame(body)
        self.connection.release_channel(self)

    def attach_sender(
        self,
        name: str,
        *,
        source: Source | Described | str | None = None,
        target: Target | Coordinator | Described | str | None = None,
        snd_settle_mode: SenderSettleMode = SenderSettleMode.MIXED,
        rcv_settle_mode: ReceiverSettleMode = ReceiverSettleMode.FIRST,
        properties: dict[Any, Any] | None = None,
        offered_capabilities: str | Iterable[str] | None = None,
        desired_capabilities: str | Iterable[str] | None = None,
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
        link.start_delivery_count(initial_delivery_count & _UINT_MAX)
        if max_unsettled is not None:
            link.max_unsettled = max_unsettled
        return self.start_link(link)

    def attach_receiver(
        self,
        name: str,
        *,
        source: Source | Described | str | None = None,
        target: Target | Coordinator | Described | str | None = None,
        snd_settle_mode: SenderSettleMode = SenderSettleMode.MIXED,
        rcv_settle_mode: ReceiverSettleMode = ReceiverSettleMode.FIRST,
        properties: dict[Any, Any] | None = None,
        offered_capabilities: str | Iterable[str] | None = None,
        desired_capabilities: str | Iterable[str] | None = None,
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
        return self.start_link(link)

    def attach_controller(
        self,
        name: str = "txn-ctl",
        *,
        capabilities: Iterable[Symbol] = (Symbol("amqp:local-transactions"),),
        properties: dict[Any, Any] | None = None,
    ) -> Controller:
        """Start a transaction control link to the peer's coordinator (core spec 4.2),
        asking for ``capabilities``; see :doc:`transactions`."""
        return attach_controller(self, name, capabilities=capabilities, properties=properties)

    # -- internals ----------------------------------------------------------------------------

    def start_link(self, link: L) -> L:
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
            link.take_over(old)
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

    def release_handle(self, link: Link) -> None:
        """Our detach of ``link`` went out: its handle is free."""
        self._links_out.pop(link.handle, None)  # type: ignore[arg-type]
        if link.state is LinkState.DETACHED:
            self.drop_link(link)
        if self._owed:
            self._answer_owed()

    def _answer_owed(self) -> None:
        """Answer the attaches of links the peer has since detached: our attach (no
        terminus, as a refusal's) and our detach, back to back (2.6.3, 2.6.6). A link owed
        ``None`` was closed by the peer while we suspended it: we re-attach it and close it
        (2.6.6), and wait for the peer's answers."""
        owed = self._owed
        while (
            owed
            and self.state is SessionState.MAPPED
            and self.connection.state in CONNECTION_SENDING
        ):
            link, closed = next(iter(owed.items()))
            try:
                self._assign_handle(link)
            except LocalProtocolError:
                return  # none free: the next released handle answers
            del owed[link]
            if not link.answer_owed(closed):
                self._links_out.pop(link.handle, None)  # type: ignore[arg-type]

    def drop_link(self, link: Link) -> None:
        """``link`` is detached both ways: its input handle is free (and the link forgets
        what it must, see :meth:`Link.dropped`)."""
        self._links_in.pop(link.remote_handle, None)  # type: ignore[arg-type]
        link.dropped()

    def free_handle(self) -> int:
        """The lowest free handle of ours (:class:`LocalProtocolError` if none)."""
        return self._free_handle()

    def map_handle(self, handle: int, link: Link) -> None:
        """``link`` goes out on our ``handle`` (its attach is sent)."""
        self._links_out[handle] = link

    def unmap_remote_handle(self, handle: int) -> None:
        """The peer's ``handle`` is free: it detached the link on it (core spec 2.6.6)."""
        self._links_in.pop(handle, None)

    def is_current(self, link: Link) -> bool:
        """Whether ``link`` is the session's endpoint for its name and role (the peer may
        have attached a newer one since)."""
        return self._links_by_name.get((link.name, link.role)) is link

    def owes_answer(self, link: Link) -> bool:
        """Whether ``link`` still owes the peer the answer to its attach (see
        :meth:`owe_answer`)."""
        return link in self._owed

    def owe_answer(self, link: Link, closed: bool | None) -> None:
        """The peer detached ``link`` before we answered its attach: answer it (an attach and
        a detach with ``closed``), or, with ``None``, re-attach and close it (2.6.6), as soon
        as a handle is free."""
        self._owed[link] = closed
        self._answer_owed()

    def mark_errant(self, handle: int, link: Link) -> None:
        """The peer answered our error detach of ``link`` on its ``handle``: input on it
        is errant until an attach reuses it (2.6.5)."""
        self._errant_handles[handle] = link

    def _deliveries(self, role: Role) -> dict[int, Delivery]:
        return self._out_deliveries if role is Role.SENDER else self._in_deliveries

    # -- what the links ask of their session ----------------------------------------------------

    @property
    def transaction_hooks(self) -> TransactionHooks:
        """Transactions (core spec part 4), which the session hands down to its links."""
        return HOOKS

    def next_delivery_id(self) -> int:
        """A new delivery-id of ours (core spec 2.7.5): the session numbers the deliveries
        of all its sending links in one sequence."""
        delivery_id = self._next_delivery_id
        self._next_delivery_id = serial_add(delivery_id, 1)
        return delivery_id

    def track(self, role: Role, delivery: Delivery) -> None:
        """Know ``delivery`` (of a link of ``role``) by its id, for the peer's dispositions."""
        (self._out_deliveries if role is _SENDER else self._in_deliveries)[delivery.id] = delivery

    def untrack(self, role: Role, delivery_id: int) -> None:
        """Forget the delivery of a link of ``role`` with that id: no disposition names it."""
        (self._out_deliveries if role is _SENDER else self._in_deliveries).pop(delivery_id, None)

    def tracks(self, role: Role, delivery: Delivery) -> bool:
        """Whether a disposition may still name ``delivery`` by its id."""
        known = self._out_deliveries if role is _SENDER else self._in_deliveries
        return known.get(delivery.id) is delivery

    def untrack_all(self, role: Role, deliveries: Iterable[Delivery]) -> None:
        """Forget those of ``deliveries`` known by their ids (a link destroyed or closed)."""
        known = self._deliveries(role)
        for delivery in deliveries:
            if known.get(delivery.id) is delivery:
                del known[delivery.id]

    def send_frame(self, body: Performative) -> None:
        """Send a frame on the session (behind the dispositions queued before it)."""
        if self._dispositions:
            self.flush_dispositions()  # what was settled before goes out before this frame
        self._put(body)

    def check_fits(self, body: Performative) -> None:
        """Refuse, before anything changes, a frame larger than the peer accepts."""
        self.connection.checked_frame(self.channel or 0, body)

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
                body = bytes(self.connection.checked_frame(self.channel, body))  # checked now
            self._blocked.append(body)
            return
        self.connection.send_frame(self.channel, body)

    def send_flow(
        self,
        *,
        handle: int,
        delivery_count: int | None,
        link_credit: int | None,
        available: int | None,
        drain: bool,
        echo: bool,
        properties: dict[Symbol, object] | None,
    ) -> None:
        """Send a link's flow (core spec 2.7.4): its fields with the session's own."""
        self.send_frame(
            self._flow(
                handle=handle,
                delivery_count=delivery_count,
                link_credit=link_credit,
                available=available,
                drain=drain,
                echo=echo,
                properties=properties,
            )
        )

    def _flow(self, **link_fields: Any) -> Flow:
        return Flow(
            next_incoming_id=self.next_incoming_id,
            incoming_window=self.incoming_window,
            next_outgoing_id=self.next_outgoing_id,
            outgoing_window=self.outgoing_window,
            **link_fields,
        )

    def send_transfer(
        self,
        link: Link,
        delivery: Delivery,
        data: Payload,
        first: bool,
        more: bool,
        *,
        resume: bool = False,
    ) -> None:
        """Send the transfer frames of ``data`` (a delivery's next bytes) for ``link``."""
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
        if total < conn.peer_max_frame_size - 64:
            # Most deliveries fit in one frame: skip the head. The split below cuts at the
            # head's size, which exceeds the last's by at most 8 bytes (two fields and a
            # list32 header): a frame with 9 bytes to spare is one the split would not cut.
            frame = _frame(
                self.channel, last, data if isinstance(data, memoryview) else b"".join(data)
            )
            if len(frame) + 9 <= conn.peer_max_frame_size:
                self.queue_transfer(frame)
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
        room = conn.peer_max_frame_size - 8 - len(_encode_performative(head)) - 1
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
                self.queue_transfer((frame_head, data[offset:stop]))
            else:
                self.queue_transfer((frame_head, *_cut(data, offset, stop)))
            if final:
                break
            offset += room
            if first:
                first = False
                head = _transfer(handle=link.handle, more=True)
                last = _transfer(handle=link.handle, more=more)
                room = conn.peer_max_frame_size - 8 - len(_encode_performative(head)) - 1

    def queue_transfer(self, frame: QueuedTransfer) -> None:
        """Send a transfer frame, or queue it until the peer's incoming window opens."""
        if self._blocked or self.remote_incoming_window <= 0:
            self._blocked.append(frame)
            return
        self._emit_transfer(frame)

    def _emit_transfer(self, frame: QueuedTransfer) -> None:
        self.next_outgoing_id = serial_add(self.next_outgoing_id, 1)
        self.remote_incoming_window -= 1
        if type(frame) is tuple:
            self.connection.emit_parts(frame)
        else:
            self.connection.emit(frame)  # type: ignore[arg-type]

    def receive_begin(self, channel: int, begin: Begin) -> None:
        """The peer's begin on ``channel`` (core spec 2.5.1): its channel, ids and windows;
        reported, and what waited for its incoming window goes out."""
        self.remote = begin
        self.remote_channel = channel
        self.next_incoming_id = begin.next_outgoing_id
        self.remote_outgoing_window = begin.outgoing_window
        self.remote_incoming_window = serial_diff(
            serial_add(self._initial_outgoing_id, begin.incoming_window),
            self.next_outgoing_id,
        )
        self.connection.report(SessionBegun(session=self, remote=begin))
        self._unblock()

    def unmapped(self) -> None:
        """Our end went out and the connection freed our channel: what waited to be sent
        is dropped, and the session's end detaches its links (2.5.2)."""
        self.channel = None
        self._blocked.clear()
        self._dispositions.clear()
        self._owed.clear()
        for link in self._links_by_name.values():
            link.session_ended()
        self._links_in.clear()
        self._links_out.clear()

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
                conn.emit(item)  # type: ignore[arg-type]
            else:
                # A link's flow waited behind transfers: its session fields are those of now.
                assert self.channel is not None
                flow: Flow = item  # type: ignore[assignment]
                conn.send_frame(
                    self.channel,
                    attrs.evolve(
                        flow,
                        next_incoming_id=self.next_incoming_id,
                        incoming_window=self.incoming_window,
                        next_outgoing_id=self.next_outgoing_id,
                        outgoing_window=self.outgoing_window,
                    ),
                )

    def queue_disposition(
        self, role: Role, delivery_id: int, settled: bool, state: DeliveryState | None
    ) -> None:
        """A disposition to send, merged into ranges with its neighbours before the next
        frame or output (the callers, update and settle, have checked that we may send)."""
        self._dispositions.append((role, delivery_id, settled, state))
        self.connection.defer_dispositions(self)

    def flush_dispositions(self) -> None:
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

    def receive_frame(self, body: Performative, payload: FramePayload) -> None:
        """A frame the peer sent on the session's channel (begin aside)."""
        # After our end (END_SENT, DISCARDING) the session's links are already detached on
        # our side (_release_channel): what the peer sent before seeing our end, such as the
        # answer to a detach, is moot until its end arrives.
        if self.state in SESSION_ENDING and type(body) is not End:
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
        conn.forget_remote_channel(self.remote_channel)
        conn.report(SessionEnded(session=self, error=end.error))
        if self.state is SessionState.END_RCVD and conn.state in CONNECTION_SENDING:
            # Answer with our end, as the spec's session diagram requires.
            self._move(_SI.S_END)
            self.send_frame(End())
            conn.release_channel(self)

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
        if link is not None and link.awaits_resume() and attach.unsettled is None:
            # We detached the link with an error and neither end closed it: the peer must
            # resume it; an attach without an unsettled map is a pipelined re-attach (2.6.5).
            raise self._errant(f"attach of link {attach.name!r} after our error: not a resume")
        self._errant_handles.pop(handle, None)  # a released handle, used again
        if link is None or (link.state is LinkState.DETACHED and not link.peer_owes_reclose):
            cls: type[Link] = Sender if our_role is Role.SENDER else Receiver
            if type(attach.target) is Coordinator and cls is Receiver:
                cls = CoordinatorLink  # a controller's link (core spec 4.2)
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
        link.receive_attach(attach)

    def _check_mapped(self) -> None:
        # 2.5.5: frames may arrive in BEGIN_RCVD (a peer's pipelined attach) and MAPPED; after
        # our end, _on_frame has already set them aside.
        if self.state not in SESSION_MAPPED:
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
        self._link_in(detach.handle, detach=True).receive_detach(detach)

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
        if flow.handle is not None:
            link = self._link_in(flow.handle)
            if link.destroyed:
                return  # sent before the peer saw our error detach (2.6.5)
            link.receive_flow(flow)
        elif flow.echo and self.state is SessionState.MAPPED:
            self.send_frame(self._flow())

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
        link.receive_transfer(transfer, payload)
        self._replenish()

    def _replenish(self) -> None:
        """Top our incoming window back up once half of it is used."""
        if (
            self.incoming_window * 2 < self._max_incoming_window
            and self.state is SessionState.MAPPED
        ):
            self.incoming_window = self._max_incoming_window
            self.send_frame(self._flow())

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
        # A receiver's transactional state retires our delivery (core spec 4.4.2).
        txn_state = disp.role is _RECEIVER and type(disp.state) is TransactionalState
        for did in list(ids):
            delivery = ours.get(did)
            if delivery is None:
                continue
            delivery.link.receive_disposition(delivery, disp.state, disp.settled, txn_state)

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


def _check_limit(value: int | None) -> None:
    if value is not None and (type(value) is not int or value < 0):
        raise LocalProtocolError(f"max_unsettled {value!r} is not a count")


def _terminus(value: Any, cls: type) -> Any:
    if value is None or isinstance(value, Source | Target):
        return value
    if isinstance(value, str):
        return cls(address=value)
    return value
