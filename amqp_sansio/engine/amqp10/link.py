"""Links (core spec 2.6): what a :class:`Link` is on both ends, its deliveries (2.6.12), and
the events a link reports itself; :mod:`.sender` and :mod:`.receiver` hold each end's own
handling of flow, transfer and attach.

A link reaches its session, its connection and transactions (part 4) only through the three
interfaces written here, :class:`LinkSession`, :class:`LinkConnection` and
:class:`TransactionHooks`: the modules above it (``session``, ``transactions``,
``connection``) implement them, and nothing here imports them (docs/architecture.rst)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

import attrs

from ...codec.amqp10.composite import unchecked
from ...codec.amqp10.types import Symbol
from ...definitions.amqp10.messaging import Accepted, Released
from ...definitions.amqp10.performatives import (
    Attach,
    Detach,
    Disposition,
    Error,
    Flow,
    ReceiverSettleMode,
    Role,
    SenderSettleMode,
)
from ...errors import LocalProtocolError
from ..contract import Event
from .frames import _frame
from .payload import Payload, QueuedTransfer
from .peer_error import _PeerError
from .states import (
    CONNECTION_SENDING,
    LINK_TRANSITIONS,
    TRANSACTION_LIVE,
    ConnectionState,
    LinkInput,
    LinkState,
    TransactionState,
)

if TYPE_CHECKING:
    from ...codec.amqp10.types import Described
    from ...definitions.amqp10.messaging import DeliveryState, Outcome, Source, Target
    from ...definitions.amqp10.performatives import Performative, Transfer
    from ...definitions.amqp10.transactions import Coordinator, TransactionalState

L = TypeVar("L", bound="Link")


_LI = LinkInput

# Enum members read on every frame, bound once: on Python 3.11 reading a member from its class
# costs about as much as a function call (the enum metaclass hooks attribute lookup).
_ATTACHED = LinkState.ATTACHED
_SENDER = Role.SENDER
_RECEIVER = Role.RECEIVER
_SECOND = ReceiverSettleMode.SECOND
#: Outcomes whose disposition is always small (no error, no annotations).
_SMALL_STATES = frozenset({Accepted, Released})


@attrs.frozen(kw_only=True)
class LinkAttached(Event):
    """The peer's attach arrived (core spec 2.6.3). If the peer started the link, answer with
    :meth:`Link.attach` (accept) or :meth:`Link.refuse` (attach without a terminus, then
    detach with an error)."""

    link: Link
    remote: Attach


@attrs.frozen(kw_only=True)
class LinkDetached(Event):
    """The peer's detach arrived (core spec 2.6.6); ``closed`` says whether it closed the link
    for good or only detached it."""

    link: Link
    error: Error | None
    closed: bool


@attrs.frozen(kw_only=True)
class DeliveryUpdated(Event):
    """The peer changed a delivery's state or settled it (a disposition, core spec 2.7.6)."""

    link: Link
    delivery: Delivery
    state: DeliveryState | None
    settled: bool


_delivery_updated = unchecked(DeliveryUpdated)


class LinkConnection(Protocol):
    """What a link asks of its session's connection (:class:`~amqp_sansio.Connection`)."""

    @property
    def state(self) -> ConnectionState: ...
    @property
    def max_unsettled(self) -> int | None: ...
    @property
    def peer_max_frame_size(self) -> int: ...
    @property
    def report(self) -> Callable[[Event], None]:
        """Queue an event for the application."""

    def weigh_views(self, delivery: Delivery) -> None:
        """``delivery`` took views of the bytes being received."""

    def transactions_book(self, make: Callable[[], object]) -> object:
        """The connection's transactions (part 4), made by ``make`` on first use."""


class LinkSession(Protocol):
    """What a link asks of its session (:class:`~amqp_sansio.Session`, core spec 2.5): its
    frames go out through it, its handle and its deliveries' ids are the session's."""

    @property
    def connection(self) -> LinkConnection: ...
    @property
    def transaction_hooks(self) -> TransactionHooks: ...
    @property
    def channel(self) -> int | None: ...
    def check_can_send(self) -> None: ...
    def check_fits(self, body: Performative) -> None: ...
    def send_frame(self, body: Performative) -> None: ...
    def queue_transfer(self, frame: QueuedTransfer) -> None: ...
    def start_link(self, link: L) -> L: ...
    def free_handle(self) -> int: ...
    def map_handle(self, handle: int, link: Link) -> None: ...
    def release_handle(self, link: Link) -> None: ...
    def unmap_remote_handle(self, handle: int) -> None: ...
    def mark_errant(self, handle: int, link: Link) -> None: ...
    def drop_link(self, link: Link) -> None: ...
    def is_current(self, link: Link) -> bool: ...
    def owes_answer(self, link: Link) -> bool: ...
    def owe_answer(self, link: Link, closed: bool | None) -> None: ...
    def next_delivery_id(self) -> int: ...
    def track(self, role: Role, delivery: Delivery) -> None: ...
    def untrack(self, role: Role, delivery_id: int) -> None: ...
    def tracks(self, role: Role, delivery: Delivery) -> bool: ...
    def untrack_all(self, role: Role, deliveries: Iterable[Delivery]) -> None: ...
    def queue_disposition(
        self, role: Role, delivery_id: int, settled: bool, state: DeliveryState | None
    ) -> None: ...
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
    ) -> None: ...
    def send_transfer(
        self,
        link: Link,
        delivery: Delivery,
        data: Payload,
        first: bool,
        more: bool,
        *,
        resume: bool = False,
    ) -> None: ...


class TransactionHooks(Protocol):
    """What links ask of transactions (core spec part 4), which build on them: the session
    hands down the implementation (``transactions.HOOKS``), so that ``link``, ``sender`` and
    ``receiver`` never import ``transactions`` (its :class:`Controller
    <amqp_sansio.engine.amqp10.transactions.Controller>` is a sender, its coordinator link a
    receiver)."""

    def posting(
        self, sender: Link, transaction: TransactionWork | None, state: Any
    ) -> tuple[TransactionWork | None, Any]:
        """A send's transaction (4.4.1): the transaction that owns it, and its state."""

    def posted(self, owner: TransactionWork, delivery: Delivery) -> None:
        """A transactional send went out."""

    def retiring(
        self, link: Link, delivery: Delivery, state: Any, transaction: TransactionWork | None
    ) -> Any:
        """A disposition's state, in its transaction when it has one (4.4.2)."""

    def acquiring(self, receiver: Link, transaction: TransactionWork) -> dict[Any, Any]:
        """The flow properties that acquire credit in a transaction (4.4.3)."""

    def flow(self, link: Link, properties: dict[Any, Any]) -> None:
        """A flow's properties on a sending link (transactional acquisition)."""

    def first_transfer(
        self, session: LinkSession, link: Link, delivery: Delivery, transfer: Transfer
    ) -> None:
        """A delivery's first transfer, when it has a state or is on a coordinator link."""

    def request(self, link: Link, delivery: Delivery, data: bytes) -> None:
        """A whole delivery on a coordinator link: a declare or a discharge (4.2)."""

    def disposition(self, delivery: Delivery, state: TransactionalState) -> None:
        """The peer's transactional state for one of our deliveries (4.4.2)."""

    def outcome(self, link: Link, delivery: Delivery, state: Any) -> None:
        """A declare's or discharge's outcome on a control link (4.2)."""


class Link:
    """A link endpoint (core spec 2.6). Made by :meth:`Session.attach_sender` and
    :meth:`Session.attach_receiver`, or by the peer's attach (:class:`LinkAttached`)."""

    role: Role
    #: The two ends of a transaction control link (core spec 4.2) are told apart by these.
    _controller = False
    _coordinator = False

    def __init__(
        self,
        session: LinkSession,
        name: str,
        *,
        source: Source | Described | None,
        target: Target | Coordinator | Described | None,
        snd_settle_mode: SenderSettleMode,
        rcv_settle_mode: ReceiverSettleMode,
        properties: dict[Any, Any] | None,
        offered_capabilities: str | Iterable[str] | None,
        desired_capabilities: str | Iterable[str] | None,
        max_message_size: int | None,
    ) -> None:
        #: Its :class:`~amqp_sansio.Session`, named through what a link asks of it.
        self.session = session
        #: Where the link's events go: its connection's (bound once, for the hot paths).
        self._report = session.connection.report
        #: Transactions (core spec part 4), as the session hands them down.
        self._txn = session.transaction_hooks
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

    def attach(
        self,
        *,
        source: Source | Described | None = None,
        target: Target | Coordinator | Described | None = None,
    ) -> None:
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
        self.session.check_can_send()  # nothing after our close or end
        if self._reclose:
            raise LocalProtocolError("the link is being closed (2.6.6)")
        new = LINK_TRANSITIONS.get((self.state, _LI.S_DETACH))
        if new is None:
            raise LocalProtocolError(f"cannot detach a link in state {self.state.value}")
        assert self.handle is not None
        body = Detach(handle=self.handle, closed=closed, error=error)
        if error is not None:
            self.session.check_fits(body)  # (an error may be large) before any change
        self.state = new
        self._closing = self._closing or closed
        self._sent_closed = closed
        if error is not None:
            self._destroy()
        self.session.send_frame(body)
        self.session.release_handle(self)
        self.lose_transactions(error)

    # -- what the session asks of its links ----------------------------------------------------

    @property
    def destroyed(self) -> bool:
        """We detached the link with an error (2.6.5): until the peer's detach, its input
        is discarded."""
        return self._destroyed

    @property
    def peer_owes_reclose(self) -> bool:
        """Our closing detach was answered by a non-closing one: the peer owes us a
        re-attach and a closing detach (2.6.6)."""
        return self._reclose

    def awaits_resume(self) -> bool:
        """We destroyed the link (2.6.5), it is detached and neither end closed it: the
        peer may only resume it."""
        return self._destroyed and self.state is LinkState.DETACHED and not self._closing

    def start_delivery_count(self, count: int) -> None:
        """The delivery-count a new sending link starts from (core spec 2.6.7)."""
        self.delivery_count = self._initial_delivery_count = count

    def take_over(self, old: Link) -> None:
        """This endpoint replaces ``old``, a suspended link of the same name: re-attaching
        resumes it, its unsettled deliveries carry over and go in our attach's unsettled map
        (2.6.13), and a resume the peer required is still required (2.6.5)."""
        self._must_resume = old.awaits_peer_resume
        if old.unsettled:
            self.unsettled = old.unsettled
            for delivery in self.unsettled.values():
                delivery.link = self

    @property
    def awaits_peer_resume(self) -> bool:
        """The peer detached the link with an error and without closing: our next attach
        must resume it, with a non-null unsettled map (2.6.5)."""
        return self._must_resume

    def answer_owed(self, closed: bool | None) -> bool:
        """Answer the peer's attach of this link, which it has since detached, on our new
        handle: our attach (no terminus, as a refusal's) and our detach (2.6.3, 2.6.6). With
        ``closed`` None, the peer closed the link we suspended: we re-attach it and close it,
        and wait for the peer's answers (true: the link keeps its handle)."""
        assert self.handle is not None
        session = self.session
        session.send_frame(self._attach_body(self.handle, self.source, self.target))
        if closed is None:
            self.state = LinkState.DETACH_SENT  # through ATTACH_SENT
            self._sent_closed = self._reclosing = True
            session.send_frame(Detach(handle=self.handle, closed=True))
            return True
        session.send_frame(Detach(handle=self.handle, closed=closed))
        return False

    def dropped(self) -> None:
        """Detached both ways: a delivery cut short cannot go on after a re-attach
        (2.6.13). Closed, the link and its unsettled state are gone (2.6.6); suspended, its
        unsettled deliveries live on in the session, which may still exchange dispositions
        for them by delivery-id (2.6.4), until a re-attach resumes them (2.6.13)."""
        self._current = None
        if self._closing:
            session = self.session
            for delivery in self.unsettled.values():
                session.untrack(self.role, delivery.id)
            self.unsettled = {}

    def session_ended(self) -> None:
        """Our end of the session went out: the link is detached (2.5.2)."""
        self.state = LinkState.DETACHED
        self.handle = self.remote_handle = None
        self.lose_transactions(None)

    def detach_for_peer_error(self, error: Error) -> None:
        """The peer broke the protocol on this link: detach it with ``error`` (2.6.5); the
        delivery it was sending goes with it."""
        self._current = None
        self.detach(error=error)

    def lose_transactions(self, error: Error | None) -> None:
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
        self.session.untrack_all(self.role, self.unsettled.values())

    def _send_attach(self, source: Any, target: Any) -> None:
        """Send our attach with these termini; every check comes before any change."""
        self.session.check_can_send()
        if not self.session.is_current(self):
            # The peer attached a link of this name since: that endpoint is the link now.
            raise LocalProtocolError(f"link {self.name!r} has a newer endpoint: use that one")
        if self.session.owes_answer(self):
            raise LocalProtocolError(
                f"link {self.name!r} still owes the peer its answer: wait for a free handle"
            )
        new = LINK_TRANSITIONS.get((self.state, _LI.S_ATTACH))
        if new is None:
            raise LocalProtocolError(f"cannot attach a link in state {self.state.value}")
        handle = self.session.free_handle()  # may refuse (no free handle)
        body = self._attach_body(handle, source, target)  # may refuse (frame too large)
        self.source, self.target = source, target
        self.handle = handle
        self.session.map_handle(handle, self)
        self.state = new
        self._sent_incomplete = body.incomplete_unsettled
        if new is LinkState.ATTACH_SENT:
            # (Re)attaching: the flow state starts again, link-credit at zero (2.6.7); a
            # closed or destroyed link starts afresh.
            self.link_credit = 0
            self.drain = False
            self._closing = self._destroyed = False
        self._must_resume = self._reclose = False
        self.session.send_frame(body)

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
        limit = self.session.connection.peer_max_frame_size
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
        self.session.check_can_send()  # a closed connection leaves its links ATTACHED

    def _send_flow(self, *, echo: bool = False, properties: Any = None) -> None:
        assert self.handle is not None
        self.session.send_flow(
            handle=self.handle,
            delivery_count=self.delivery_count,
            link_credit=self.link_credit,
            available=self.available,
            drain=self.drain,
            echo=echo,
            properties=properties,
        )

    def _echo(self, flow: Flow) -> None:
        if flow.echo and self.state is LinkState.ATTACHED:
            self._send_flow()

    def receive_flow(self, flow: Flow) -> None:
        """The peer's flow state for this link (core spec 2.6.7): each end has its own."""
        raise NotImplementedError  # pragma: no cover - Sender and Receiver override it

    def receive_attach(self, attach: Attach) -> bool:
        """The peer's attach of this link, mapped to its handle: false when it is only the
        peer's part in closing the link (2.6.6), which is not reported."""
        session = self.session
        if self._reclose:
            # The peer re-attaches the link we closed, to close it in turn (2.6.6): we answer
            # at once (or, with no free handle, after its detach), and report only that.
            try:
                handle = session.free_handle()
            except LocalProtocolError:
                return False
            session.send_frame(self._attach_body(handle, self.source, self.target))
            self.handle = handle
            session.map_handle(handle, self)
            self.state = _ATTACHED
            return False
        if self._reclosing:
            return False  # the peer's answer to our re-attach to close (2.6.6)
        self._report(LinkAttached(link=self, remote=attach))
        return True

    def receive_detach(self, detach: Detach) -> None:
        """The peer's detach of this link (core spec 2.6.6)."""
        session = self.session
        if self.state is LinkState.ATTACH_RCVD:
            # The peer detached a link before we answered its attach (it may: its
            # ATTACH_SENT -> DETACH_SENT). Our answer is an attach without a terminus, as a
            # refusal's, and then our detach (2.6.3): at once if we can, else as soon as our
            # begin has gone out or a handle is free (_answer_owed). The link is detached.
            if self.role is Role.SENDER:
                self.source = None
            else:
                self.target = None
            self.state = LinkState.DETACHED
            self._closing = self._closing or detach.closed
            self._must_resume = detach.error is not None and not self._closing  # (2.6.5)
            self._reclose = False
            session.unmap_remote_handle(detach.handle)
            self.remote_handle = None
            self._report(LinkDetached(link=self, error=detach.error, closed=detach.closed))
            self.lose_transactions(detach.error)
            session.drop_link(self)
            session.owe_answer(self, detach.closed)
            return
        new = LINK_TRANSITIONS.get((self.state, _LI.R_DETACH))
        if new is None:
            raise _PeerError(
                "amqp:illegal-state",
                f"detach in link state {self.state.value}",
                scope="session",
                target=session,
            )
        self.state = new
        self._closing = self._closing or detach.closed
        session.unmap_remote_handle(detach.handle)
        self.remote_handle = None
        if self._destroyed:
            # Our error detach is answered: from now on the peer knows (2.6.5, see
            # Link.detach).
            session.mark_errant(detach.handle, self)
        if detach.error is not None:
            # The peer destroyed its endpoint (2.6.5): the ids of our deliveries mean nothing
            # to it now; a link it did not close can only be resumed (also when our own
            # error detach crossed its: both ends destroyed theirs).
            self._drop_ids()
            self._must_resume = not self._closing
        reclosing = self._reclosing
        if not reclosing:  # (the answer to our re-attach to close is not reported)
            self._report(LinkDetached(link=self, error=detach.error, closed=detach.closed))
        self._reclosing = self._reclose = False
        self.lose_transactions(detach.error)
        if self.state is LinkState.DETACH_RCVD and session.connection.state in CONNECTION_SENDING:
            self.detach(closed=detach.closed)  # answer with ours (2.6.6)
            return
        session.drop_link(self)
        if self.state is LinkState.DETACHED and not reclosing:
            # Our detach and the peer's crossed, one closing and one not (2.6.6).
            if detach.closed and not self._sent_closed:
                # We suspended the link, the peer closed it: we signal that we have closed it
                # too by re-attaching it and sending a closing detach.
                session.owe_answer(self, None)
            elif self._sent_closed and not detach.closed:
                self._reclose = True  # the peer owes us that re-attach and closing detach

    def receive_disposition(
        self, delivery: Delivery, state: DeliveryState | None, settled: bool, txn_state: bool
    ) -> None:
        """The peer's disposition of one of this link's deliveries (core spec 2.7.6)."""
        if txn_state:
            self._txn.disposition(delivery, cast("TransactionalState", state))
        if state is not None:
            delivery.remote_state = state  # a bare settlement keeps the outcome
        if settled:
            delivery.remote_settled = True
            if delivery.settles_on_remote or self._settles_with_peer():
                # rcv-settle-mode second: we waited for the sender to settle. An
                # auto-settling sender: the receiver has settled. Either way the peer has
                # forgotten the delivery, so we settle without telling it (2.6.12).
                self._forget(delivery)
        self._report(_delivery_updated(link=self, delivery=delivery, state=state, settled=settled))
        if self._controller:
            self._txn.outcome(self, delivery, state)  # a declare's or discharge's outcome

    def update(
        self,
        delivery: Delivery,
        state: DeliveryState | None,
        *,
        transaction: TransactionWork | None = None,
    ) -> None:
        """Tell the peer a new, unsettled state of ``delivery`` (core spec 2.7.6). With
        ``transaction``, the outcome ``state`` is retired in it (4.4.2); the outcome of a
        delivery that belongs to a live transaction goes in that one."""
        self._own(delivery)
        if delivery.settled:
            raise LocalProtocolError("the delivery is already settled")
        self.session.check_can_send()
        self._check_known(delivery)
        self._check_disposition_fits(delivery, state)
        if transaction is not None or delivery.transaction is not None:
            state = self._txn.retiring(self, delivery, state, transaction)
        delivery.local_state = state
        self.session.queue_disposition(self.role, delivery.id, False, state)

    def settle(
        self,
        delivery: Delivery,
        state: DeliveryState | None = None,
        *,
        transaction: TransactionWork | None = None,
    ) -> None:
        """Settle ``delivery``, with a final state (an outcome) if given. On a receiver in
        rcv-settle-mode second the state is sent first and settlement waits for the sender's
        (core spec 2.8.3). Settling is idempotent (2.6): a settled delivery stays as it is.
        ``transaction``: as for :meth:`update`."""
        self._own(delivery)
        if delivery.settled:
            return
        if not delivery.remote_settled:
            self.session.check_can_send()  # a disposition goes out: refuse before any change
            self._check_known(delivery)
            self._check_disposition_fits(delivery, state)
        if transaction is not None or delivery.transaction is not None:
            state = self._txn.retiring(self, delivery, state, transaction)
        if state is not None:
            delivery.local_state = state
        if (
            self.role is _RECEIVER
            and self.rcv_settle_mode is _SECOND
            and not delivery.remote_settled
        ):
            delivery.settle_on_remote()
            self.session.queue_disposition(self.role, delivery.id, False, delivery.local_state)
            return
        self._forget(delivery)
        if not delivery.remote_settled:
            self.session.queue_disposition(self.role, delivery.id, True, delivery.local_state)

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
        limit = self.session.connection.peer_max_frame_size
        if size > limit:
            raise LocalProtocolError(
                f"a disposition with {type(state).__name__} of about {size} bytes exceeds "
                f"the peer's max-frame-size {limit}"
            )

    def _own(self, delivery: Delivery) -> None:
        if delivery.link is not self:
            raise LocalProtocolError("that delivery belongs to another link")

    def _check_known(self, delivery: Delivery) -> None:
        if not self.session.tracks(self.role, delivery):
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
        self.session.untrack(self.role, delivery.id)

    def _settles_with_peer(self) -> bool:
        """Whether we settle a delivery as soon as the peer has (an auto-settling sender)."""
        return False


class TransactionWork:
    """What the two sides' transaction objects share (core spec 4.4): a state, an id, the work
    associated with it. :class:`~amqp_sansio.Transaction` is the controller's,
    :class:`~amqp_sansio.engine.amqp10.transactions.TransactionRecord` the coordinator's."""

    id: bytes | None
    state: TransactionState

    def __init__(self) -> None:
        self.state = TransactionState.DECLARING
        #: Why it failed or was rolled back, when the peer said.
        self.error: Error | None = None
        self._posted: list[Delivery] = []
        self._retired: dict[Delivery, Outcome | None] = {}
        #: What the retired deliveries' state was before their transactional outcome:
        #: restored on rollback, when they are live again (4.4.2).
        self._previous: dict[Delivery, DeliveryState | None] = {}
        self.acquired: list[Delivery] = []

    def __repr__(self) -> str:
        return f"<{type(self).__name__} id={self.id!r} {self.state.value}>"

    @property
    def live(self) -> bool:
        """Declared and not yet discharged: its outcomes are still provisional."""
        return self.state in TRANSACTION_LIVE

    @property
    def posted(self) -> list[Delivery]:
        """Deliveries posted in this transaction (4.4.1), aborted ones left out."""
        return [d for d in self._posted if not d.aborted]

    @property
    def retired(self) -> list[tuple[Delivery, Outcome | None]]:
        """``(delivery, outcome)`` for each delivery retired in this transaction (4.4.2); the
        outcome is None where the controller's transactional state named none."""
        return list(self._retired.items())

    def add_posted(self, delivery: Delivery) -> None:
        """``delivery`` is posted in this transaction (4.4.1)."""
        self._posted.append(delivery)

    def add_retired(
        self, delivery: Delivery, outcome: Outcome | None, before: DeliveryState | None
    ) -> None:
        """``delivery`` is retired in this transaction with ``outcome`` (4.4.2); ``before``
        is its state until then, restored on rollback (the first one given is kept)."""
        self._previous.setdefault(delivery, before)
        self._retired[delivery] = outcome

    def states_before(self) -> list[tuple[Delivery, DeliveryState | None]]:
        """``(delivery, state)``: the retired deliveries' states before their retirement,
        which a rollback restores (4.4.2)."""
        return list(self._previous.items())


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
        #: :class:`~amqp_sansio.engine.amqp10.transactions.TransactionRecord`. Its outcome is
        #: final only once that transaction has committed.
        self.transaction: TransactionWork | None = None

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
