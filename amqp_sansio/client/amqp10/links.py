"""The links of a :class:`~amqp_sansio.client.amqp10.core.Core`: the cores of the links this side
starts (senders, receivers, transaction controllers), a peer's connection and links on the
server side, and the state the adapters' senders, trackers, receivers and transactions share
(the waiting is each adapter's own)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
from amqp_sansio import Error, Symbol
from amqp_sansio.definitions.amqp10 import performatives

from ..ops import (
    ClientError,
    Delivery,
    DeliveryOwner,
    LinkDetachedError,
    LinkRefusedError,
    Op,
    Outcome,
    TransactionError,
    TransactionLike,
    as_message,
    engine_txn,
)

__all__ = [
    "DEFAULT_CREDIT",
    "IncomingConnection",
    "IncomingLink",
    "LinkCore",
    "LinkOwner",
    "OutgoingLink",
    "ReceiverBase",
    "ReceiverCore",
    "SenderBase",
    "SenderCore",
    "ServerLink",
    "TrackerBase",
    "TransactionBase",
    "TransactionCore",
    "describe_link",
]

#: The default credit of a receiver (how many messages it lets the sender start).
DEFAULT_CREDIT = 100

_OUTCOMES = (a.Accepted, a.Rejected, a.Released, a.Modified)


class LinkOwner(DeliveryOwner, Protocol):
    """What the links of this module ask of the core that owns them (a
    :class:`~amqp_sansio.client.amqp10.core.Core` is one), written here so that this module need
    not know the core: the connection's state, what the server side knows of its peer, and
    :meth:`drop_link` for a link closed while the connection is lost. The core tells the
    links what happened to them through their own methods (:meth:`LinkCore.link_attached`,
    :meth:`~LinkCore.link_detached`, ...), as the engine's events come."""

    @property
    def gone(self) -> bool: ...

    @property
    def reconnecting(self) -> bool: ...

    @property
    def incoming(self) -> IncomingConnection | None: ...

    @property
    def sasl_identity(self) -> str | None: ...

    @property
    def sasl_mechanism(self) -> str | None: ...

    @property
    def tls(self) -> a.security.tls.TLSEstablished | None: ...

    def check(self) -> None:
        """Raise what ended the connection, if it has ended."""

    def drop_link(self, link: a.Link) -> None:
        """Forget ``link``: it is not attached again when the connection is made again."""


# -- client links ------------------------------------------------------------------------------


class LinkCore:
    """What the core keeps of a link this side started."""

    def __init__(self, core: LinkOwner, link: a.Link) -> None:
        self.core = core
        self.link = link
        self.attached: Op[None] = Op()
        self.detached: Op[None] = Op()
        self.error: ClientError | None = None
        #: The peer answered the attach without a terminus: a refusal (core spec 2.6.3).
        self.refused = False

    def check(self) -> None:
        """Raise what ended the link (or the connection), if anything has."""
        if self.error is not None:
            raise self.error
        self.core.check()

    def attach_ready(self) -> bool:
        self.check()
        return self.attached.done()

    def close(self) -> None:
        link = self.link
        if self.core.lost:  # nothing to detach: the link is not made again
            self.core.drop_link(link)
            self.link_detached(None, "the link was closed")
            self.core.changed()
            return
        if link.state in (a.LinkState.ATTACHED, a.LinkState.ATTACH_SENT) and not self.core.gone:
            link.detach(closed=True)
            self.core.changed()

    def close_ready(self) -> bool:
        return self.detached.done() or self.core.gone or self.error is not None

    # -- what the core tells the link (the engine's events) ------------------------------------

    def link_attached(self, remote: performatives.Attach) -> None:
        """The peer answered the attach with a terminus (core spec 2.6.3)."""
        self.attached.set(None)

    def connection_lost(self) -> None:
        """The connection was lost and will be re-made: the link is attached again then."""
        self.attached = Op()

    def credit_changed(self, available: int) -> None:
        """A flow came on the link (core spec 2.6.7; ``available``: the sender's)."""

    def link_detached(
        self,
        error: Error | None,
        reason: str = "the link was detached",
        *,
        event: a.Event | None = None,
    ) -> None:
        """The link ended (detached, refused, its session or the connection ended): what
        waits on it fails with ``reason`` and the peer's ``error``."""
        if self.error is None:
            if self.refused:
                self.error = LinkRefusedError(
                    f"the peer refused the link {self.what}", error, event=event
                )
            else:
                self.error = LinkDetachedError(reason, error, event=event)
        self.detached.set(None)

    @property
    def what(self) -> str:
        return describe_link(self.link)


def describe_link(link: a.Link) -> str:
    """A link, for a message: ``to ADDRESS`` (a sender), ``from ADDRESS`` (a receiver), or
    ``to the transaction coordinator`` (a controller, the sender whose target is one)."""
    if isinstance(link, a.Controller):
        return "to the transaction coordinator"
    if isinstance(link, a.Sender):
        return f"to {getattr(link.target, 'address', None)}"
    return f"from {getattr(link.source, 'address', None)}"


class SenderCore(LinkCore):
    """A sending link: :meth:`send_ready` says whether a send can start now,
    :meth:`send` starts it and returns an :class:`Op` done with the outcome."""

    link: a.Sender

    def __init__(self, core: LinkOwner, link: a.Sender) -> None:
        super().__init__(core, link)
        #: Each unsettled delivery's op, and (on a reconnecting connection) its bytes.
        self._unsettled: dict[a.Delivery, tuple[Op[Outcome | None], bytes | None]] = {}
        #: After a reconnect: what was unsettled, sent again before any new send.
        self._resend: deque[tuple[bytes, Op[Outcome | None]]] = deque()

    @property
    def address(self) -> str | None:
        target = self.link.target
        return getattr(target, "address", None)

    @property
    def unsettled(self) -> int:
        """Deliveries sent whose outcome has not arrived (with those to be sent again after
        a reconnect)."""
        return len(self._unsettled) + len(self._resend)

    def send_ready(self) -> bool:
        self.check()
        return self.attached.done() and not self._resend and self.link.link_credit > 0

    def send(
        self,
        data: bytes | a.Message,
        *,
        settled: bool = False,
        transaction: TransactionLike | None = None,
    ) -> Op[Outcome | None]:
        """Send ``data`` (a :class:`~amqp_sansio.Message`, or its encoding) now
        (:meth:`send_ready` must be true): the :class:`Op` is done at once if ``settled``,
        else when the outcome arrives."""
        txn = None if transaction is None else engine_txn(transaction)
        keep: bytes | None = None
        if not settled and txn is None and self.core.reconnecting:
            # Kept to be sent again after a reconnect as it is now, whatever the application
            # changes in the message later (its maps are mutable): encoded once, here.
            data = keep = data.encode() if isinstance(data, a.Message) else data
        delivery = self.link.send(data, settled=settled, transaction=txn)
        op: Op[Outcome | None] = Op()
        if settled:
            op.set(None)
        else:
            self._unsettled[delivery] = (op, keep)
        self.core.changed()
        return op

    def delivery_updated(self, delivery: a.Delivery, state: object) -> None:
        """The peer's state or settlement of ``delivery`` came (core spec 2.7.6)."""
        entry = self._unsettled.get(delivery)
        if entry is None:
            return
        outcome = (
            state.outcome
            if isinstance(state, a.definitions.amqp10.transactions.TransactionalState)
            else state
        )
        if delivery.remote_settled or isinstance(outcome, _OUTCOMES):
            del self._unsettled[delivery]
            entry[0].set(outcome if isinstance(outcome, _OUTCOMES) else None)

    def link_attached(self, remote: performatives.Attach) -> None:
        super().link_attached(remote)
        self._send_again()

    def credit_changed(self, available: int) -> None:
        if self._resend:
            self._send_again()

    def _send_again(self) -> None:
        """Send again, as credit allows, what was unsettled when the connection was lost."""
        link = self.link
        while self._resend and link.state is a.LinkState.ATTACHED and link.link_credit > 0:
            data, op = self._resend.popleft()
            self._unsettled[link.send(data)] = (op, data)

    def connection_lost(self) -> None:
        super().connection_lost()
        again: deque[tuple[bytes, Op[Outcome | None]]] = deque()
        for op, data in self._unsettled.values():
            if data is None:  # sent in a transaction, which the loss rolled back
                op.fail(TransactionError("the connection was lost: the transaction is over"))
            else:
                again.append((data, op))
        self._unsettled.clear()
        again.extend(self._resend)
        self._resend = again

    def link_detached(
        self,
        error: Error | None,
        reason: str = "the link was detached",
        *,
        event: a.Event | None = None,
    ) -> None:
        super().link_detached(error, reason, event=event)
        assert self.error is not None
        for op, _ in self._unsettled.values():
            op.fail(self.error)
        for _, op in self._resend:
            op.fail(self.error)
        self._unsettled.clear()
        self._resend.clear()


class ReceiverCore(LinkCore):
    """A receiving link with a credit window: :meth:`take` hands out what arrived."""

    link: a.Receiver

    def __init__(self, core: LinkOwner, link: a.Receiver, credit: int, auto_accept: bool) -> None:
        super().__init__(core, link)
        self.credit = credit
        self.auto_accept = auto_accept
        self.queue: deque[Delivery] = deque()
        self._drain: Op[None] | None = None
        self._asks: list[Op[int]] = []

    @property
    def address(self) -> str | None:
        """The source's address; for a dynamic receiver, the one the peer made."""
        remote = self.link.remote
        if remote is not None and remote.source is not None:
            return getattr(remote.source, "address", None)
        return getattr(self.link.source, "address", None)

    @property
    def source(self) -> a.Source | None:
        """The source as the peer's attach gave it (None before the answer, or without
        one): what it applies, core spec 3.5.3 (the filters in place, its
        distribution-mode)."""
        remote = self.link.remote
        source = None if remote is None else remote.source
        return source if isinstance(source, a.Source) else None

    def link_attached(self, remote: performatives.Attach) -> None:
        super().link_attached(remote)
        self._refill()

    def _refill(self) -> None:
        """Grant a window of credit once the last is used up (not while deliveries are under
        way: some brokers count a flow's credit from what they have sent, see
        docs/interop.rst), never more than the room left by what waits to be taken."""
        link = self.link
        if link.state is not a.LinkState.ATTACHED or self._drain is not None or self.core.lost:
            return
        room = self.credit - len(self.queue)
        if link.link_credit == 0 and room > 0 and room * 2 >= self.credit:
            link.flow(room)

    def take_ready(self) -> bool:
        """A delivery waits, or nothing more will come (then :meth:`take` raises or gives
        None)."""
        if self.queue:
            return True
        if self.error is not None or self.core.gone:
            return True
        return self._closed

    @property
    def _closed(self) -> bool:
        return self.detached.done()

    def take(self) -> Delivery | None:
        """The next delivery (accepted if ``auto_accept``); None when the link has closed
        and nothing is left; raises what ended the link abnormally."""
        if not self.queue:
            if self._closed and (self.error is None or self.error.error is None):
                return None
            self.check()
            return None
        return self.take_many(1)[0]

    def take_many(self, count: int) -> list[Delivery]:
        """Up to ``count`` of the deliveries that wait, oldest first (each accepted if
        ``auto_accept``): the credit topped up and the change written once for them all."""
        queue = self.queue
        taken = [queue.popleft() for _ in range(min(count, len(queue)))]
        if taken:
            if self.auto_accept:
                for delivery in taken:
                    if not delivery.settled:
                        delivery.accept()
            self._refill()
            self.core.changed()
        return taken

    def ask_available(self) -> Op[int]:
        """Ask the sender for its flow state (a flow with ``echo``, the credit as it is,
        core spec 2.6.7): done with the ``available`` of the next flow the sender sends on
        the link, how many messages it could send. The reference broker gives the messages
        its node holds not yet taken, so 0 with nothing queued here means the node is empty,
        not slow. A peer that never answers an echo leaves the operation pending: bound the
        wait."""
        self.check()
        op: Op[int] = Op()
        link = self.link
        if link.state is not a.LinkState.ATTACHED or self.core.lost:
            op.set(0)
            return op
        self._asks.append(op)
        link.flow(link.link_credit, drain=link.drain, echo=True)
        self.core.changed()
        return op

    def credit_changed(self, available: int) -> None:
        """The answers to :meth:`ask_available` (the flow the sender sent)."""
        asks, self._asks = self._asks, []
        for op in asks:
            op.set(available)

    def revoke(self) -> int:
        """Take back the credit not used yet and grant no more (:attr:`credit` set to 0): a
        flow with link-credit 0 (core spec 2.6.7). The sender starts no delivery once it has
        the flow; those already under way still arrive (and are queued as usual). Unlike
        :meth:`drain` it waits for no answer, so it works where a peer mishandles drains.
        Returns the credit taken back (deliveries the sender may have started meanwhile)."""
        self.check()
        self.credit = 0
        link = self.link
        left = link.link_credit
        if link.state is not a.LinkState.ATTACHED or left == 0 or self._drain is not None:
            return 0
        link.flow(0)
        self.core.changed()
        return left

    def drain(self) -> Op[None]:
        """Ask the sender to use up or give back the credit; done when it has."""
        self.check()
        if self._drain is not None:
            return self._drain
        op: Op[None] = Op()
        link = self.link
        if link.link_credit == 0:
            op.set(None)
            return op
        self._drain = op
        link.drain_credit()
        self.core.changed()
        return op

    def drain_completed(self) -> None:
        """The sender used up or gave back the credit (core spec 2.6.7)."""
        op, self._drain = self._drain, None
        if op is not None:
            op.set(None)
        if not self.core.lost:
            self.link.drain = False
            self._refill()  # the window again, or nothing would come after an empty drain

    def delivery_received(self, delivery: Delivery) -> None:
        """A whole delivery came: it waits to be taken."""
        self.queue.append(delivery)
        self._refill()

    def connection_lost(self) -> None:
        # What waits unsettled can no longer be settled: the peer delivers it again.
        super().connection_lost()
        self.queue = deque(d for d in self.queue if d.settled)
        self.drain_completed()

    def link_detached(
        self,
        error: Error | None,
        reason: str = "the link was detached",
        *,
        event: a.Event | None = None,
    ) -> None:
        closed_cleanly = error is None and not self.refused
        super().link_detached(error, reason, event=event)
        if closed_cleanly:
            self.error = None  # a clean close ends iteration; an error raises
        if self._drain is not None:
            self._drain.set(None)


class TransactionCore:
    """A transaction this side controls."""

    def __init__(self, core: LinkOwner) -> None:
        self.core = core
        self.engine_transaction: a.Transaction | None = None
        self.declared: Op[None] = Op()
        self.discharged: Op[bool] = Op()


# -- server connections and links --------------------------------------------------------------


class IncomingConnection:
    """A connection a peer opened to a server, handed to the application's
    ``on_connection`` (:func:`listen` in each adapter) when the peer's open has come (after
    TLS and SASL), before our open answers it. The callback runs inside the connection's
    I/O (it must not block); it accepts by returning, or calls :meth:`refuse`. Each link
    the peer attaches on it then names it (:attr:`ServerLink.connection`), so that
    ``on_link`` can decide by who is asking.

    ``peer`` is the transport's remote address (``(host, port)``), ``container_id``,
    ``hostname`` and ``properties`` come from the peer's open (core 2.7.1), ``identity``
    and ``mechanism`` from SASL (None on a server without SASL; a client that used ANONYMOUS,
    or came without a SASL layer to a server that allows anonymous access, has the
    authenticator's anonymous identity, and mechanism ``ANONYMOUS`` or None; EXTERNAL's
    is the TLS client certificate's subject), ``tls`` is the
    :class:`~amqp_sansio.security.tls.TLSEstablished`
    event of an amqps connection (version, cipher, the client's certificate), or None."""

    def __init__(self, core: LinkOwner, peer: object) -> None:
        self.core = core
        self.peer = peer
        remote = core.engine.remote
        assert remote is not None
        self.container_id: str = remote.container_id
        self.hostname: str | None = remote.hostname
        self.properties: dict[Symbol, object] | None = remote.properties
        self.identity: str | None = core.sasl_identity
        self.mechanism: str | None = core.sasl_mechanism
        self.tls: a.security.tls.TLSEstablished | None = core.tls
        self.refused: Error | None = None

    def __repr__(self) -> str:
        who = f" identity={self.identity!r}" if self.identity is not None else ""
        return f"<IncomingConnection peer={self.peer!r} container_id={self.container_id!r}{who}>"

    def refuse(self, error: Error | None = None) -> None:
        """Refuse the connection: our open goes out (it must come first, core 2.4.1) and a
        close with ``error`` (``amqp:unauthorized-access`` by default) follows at once
        (2.4.3)."""
        self.refused = error or Error(
            condition=Symbol("amqp:unauthorized-access"), description="connection refused"
        )


# -- server links ------------------------------------------------------------------------------


class ServerLink:
    """A link a peer attached to a server (:func:`listen` in each adapter hands it to the
    application's ``on_link``, which runs inside the connection's I/O: it must not block).
    ``address`` is the peer's target (an :class:`IncomingLink`) or source (an
    :class:`OutgoingLink`); ``dynamic`` when the peer asks for a node to be made, whose
    address the application sets with :meth:`accept` (``address=``) before returning.
    ``on_detach`` (a callable taking the link) is called when the link goes."""

    def __init__(self, core: LinkOwner, link: a.Link, remote: performatives.Attach) -> None:
        self.core = core
        self.link = link
        terminus = remote.target if isinstance(self, IncomingLink) else remote.source
        self.dynamic = bool(getattr(terminus, "dynamic", False))
        self.address: str | None = getattr(terminus, "address", None)
        self.name = link.name
        self.on_detach: Callable[[ServerLink], None] | None = None
        self._decided = False

    @property
    def container_id(self) -> str | None:
        """The peer's container-id."""
        remote = self.core.engine.remote
        return None if remote is None else remote.container_id

    @property
    def connection(self) -> IncomingConnection | None:
        """The connection the link is on, as ``on_connection`` saw it (who the peer is)."""
        return self.core.incoming

    @property
    def attached(self) -> bool:
        return self.link.state is a.LinkState.ATTACHED

    def accept(self, *, address: str | None = None) -> None:
        """Accept the link (the default once ``on_link`` returns). For a dynamic node,
        ``address`` is the address given to it."""
        if self._decided:
            return
        self._decided = True
        if address is not None:
            self.address = address
        self._attach()
        self.core.changed()

    def refuse(self, error: Error | None = None) -> None:
        """Refuse the link, with an error (``amqp:not-found`` by default)."""
        if self._decided:
            return
        self._decided = True
        self.link.refuse(
            error or Error(condition=Symbol("amqp:not-found"), description="no such node")
        )
        self.core.changed()

    def close(self, error: Error | None = None) -> None:
        if self.link.state is a.LinkState.ATTACHED and not self.core.gone:
            self.link.detach(error=error, closed=True)
            self.core.changed()

    def _attach(self) -> None:
        raise NotImplementedError


class IncomingLink(ServerLink):
    """A peer sends to us on it. ``on_delivery`` (a callable taking a :class:`Delivery`)
    gets each message, which the application settles (or it is accepted once the callback
    returns, with ``auto_accept``). ``credit`` is the window the core keeps granted.
    Messages posted in a transaction reach ``on_delivery`` only when it commits (already
    accepted then); a rollback discards them."""

    link: a.Receiver

    def __init__(self, core: LinkOwner, link: a.Receiver, remote: performatives.Attach) -> None:
        super().__init__(core, link, remote)
        self.credit = DEFAULT_CREDIT
        self.auto_accept = True
        self.on_delivery: Callable[[Delivery], None] | None = None

    def _attach(self) -> None:
        target = self.link.target
        if self.dynamic:
            target = a.Target(address=self.address, dynamic=True)
        self.link.attach(target=target)
        self.link.flow(self.credit)

    def flow(self, credit: int) -> None:
        """Grant the peer ``credit`` now (with ``credit = 0`` set in ``on_link``, the core
        grants none by itself)."""
        self.link.flow(credit)
        self.core.changed()


class OutgoingLink(ServerLink):
    """A peer receives from us on it. The application sends with :meth:`send` while
    :attr:`credit` is above zero; ``on_credit`` (a callable taking the link) is called when
    the peer grants more. If the peer drains, the credit left after ``on_credit`` returns is
    given back. ``send`` returns an :class:`Op`-like tracker; ``on_outcome`` (a callable
    taking the engine delivery and its outcome) is told of each outcome."""

    link: a.Sender

    def __init__(self, core: LinkOwner, link: a.Sender, remote: performatives.Attach) -> None:
        super().__init__(core, link, remote)
        self.on_credit: Callable[[OutgoingLink], None] | None = None
        self.on_outcome: Callable[[a.Delivery, object], None] | None = None

    @property
    def credit(self) -> int:
        """How many messages may be sent now: none once the link, its session or the
        connection can no longer send (closed meanwhile by either end)."""
        if not self.attached:
            return 0
        try:
            self.link._check_attached()
        except a.LocalProtocolError:
            return 0
        return self.link.link_credit

    def _attach(self) -> None:
        source = self.link.source
        if self.dynamic:
            source = a.Source(address=self.address, dynamic=True)
        self.link.attach(source=source)

    def send(self, message: object, *, settled: bool = False) -> a.Delivery:
        """Send ``message`` (a :class:`~amqp_sansio.Message`, or a body) now: raises
        :class:`~amqp_sansio.LocalProtocolError` without credit."""
        delivery = self.link.send(as_message(message), settled=settled)
        self.core.changed()
        return delivery

    def send_data(self, data: bytes, *, settled: bool = False) -> a.Delivery:
        """Send an encoded message (such as a :class:`Delivery`'s ``data``, forwarded)."""
        delivery = self.link.send(data, settled=settled)
        self.core.changed()
        return delivery


# -- what the adapters' objects share ----------------------------------------------------------


class SenderBase:
    """The adapters' senders: their state (the waiting is each adapter's own)."""

    def __init__(self, conn: object, core: SenderCore, settled: bool) -> None:
        self.connection = conn
        self.core = core
        self.settled = settled

    @property
    def address(self) -> str | None:
        return self.core.address

    @property
    def unsettled(self) -> int:
        """Messages sent whose outcome has not come (after a send that was cancelled or
        timed out once the message was out): the deliveries stay tracked."""
        return self.core.unsettled


class TrackerBase:
    """A message sent without waiting for its outcome (``send(..., wait=False)`` in each
    adapter): :meth:`done` says whether the outcome has come; each adapter's ``outcome()``
    waits for it. Many can be outstanding at once (as many as the receiver's credit lets
    out), so that sends are pipelined instead of taking a round trip each."""

    __slots__ = ("_op", "sender")

    def __init__(self, sender: SenderBase, op: Op[Outcome | None]) -> None:
        self.sender = sender
        self._op = op

    def __repr__(self) -> str:
        return f"<{type(self).__name__} done={self._op.done()}>"

    def done(self) -> bool:
        """The outcome has come (or the link or connection ended, and ``outcome()`` raises
        why); at once on a pre-settled sender."""
        return self._op.done()


class ReceiverBase:
    """The adapters' receivers: their state."""

    def __init__(self, conn: object, core: ReceiverCore) -> None:
        self.connection = conn
        self.core = core

    @property
    def address(self) -> str | None:
        """The source's address; for a dynamic receiver, the peer's temporary node."""
        return self.core.address

    @property
    def source(self) -> a.Source | None:
        """The source as the peer answered the attach (core spec 2.7.3, 3.5.3): the
        filters it applies (those it does not are left out), its distribution-mode
        (``copy`` when it browses). None before the answer."""
        return self.core.source

    @property
    def credit(self) -> int:
        """The window of credit the receiver keeps granted (``credit=`` when it was made).
        Setting it changes the grants that follow, never credit already granted: lower it
        as the messages still wanted run out, and the sender is never let start more than
        those (0: grant no more)."""
        return self.core.credit

    @credit.setter
    def credit(self, value: int) -> None:
        if value < 0:
            raise ValueError("a receiver's credit is at least 0")
        self.core.credit = value


class TransactionBase:
    """The adapters' transactions: pass one as ``transaction=`` to a sender's ``send`` or a
    delivery's ``accept``."""

    def __init__(self, conn: object, timeout: float | None) -> None:
        self.connection = conn
        self.timeout = timeout
        self.core: TransactionCore | None = None
        #: After the discharge: whether it committed.
        self.committed: bool | None = None

    @property
    def engine_transaction(self) -> a.Transaction | None:
        return None if self.core is None else self.core.engine_transaction
