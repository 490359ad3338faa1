"""The I/O-free core that the high-level adapters (:mod:`~amqp_sansio.adapters.sockets`,
:mod:`~amqp_sansio.adapters.aio`, :mod:`~amqp_sansio.adapters.trio_adapter`) share.

:class:`Core` owns one engine :class:`~amqp_sansio.Connection` (or a
:class:`~amqp_sansio.TLSLayer` around it) and turns the engine's events into the completion
of what an application waits for: an open, an attach, credit, an outcome, a delivery, a
drain, a declare or discharge, the end of the connection. Every protocol decision of the
high-level API is made here, once: which credit to grant and when, when a send is done,
what a server answers to a peer's open, begin and attach, how a transactional resource
holds posted work until the commit.

An adapter does only I/O and waiting. It feeds bytes and time in
(:meth:`Core.receive_data`, :meth:`Core.handle_timer`), writes what
:meth:`Core.data_to_send` returns, sleeps until :meth:`Core.next_deadline` on its loop's
clock, and is told through the ``notify`` callback whenever something an application may be
waiting for has changed (or bytes are waiting to go out): it then re-checks its waiters'
conditions. A condition is a ``ready()`` function that returns a bool, or raises the error
that ends the wait (the link was detached, the connection closed).
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import amqp_sansio as a
from amqp_sansio import Error, Message, Symbol
from amqp_sansio.sasl import SASLNoMechanismError

from . import _trace
from ._reconnect import Backoff, Reconnect
from .url import AMQPURL, parse_url

__all__ = [
    "AuthenticationError",
    "ClientError",
    "ConnectionClosedError",
    "Core",
    "Delivery",
    "IncomingConnection",
    "IncomingLink",
    "LinkDetachedError",
    "OutgoingLink",
    "PeerWithoutSASLError",
    "ServerLink",
    "TrackerBase",
    "TransactionError",
]

T = TypeVar("T")

_log = logging.getLogger(__name__)
#: Where the disconnects, attempts and reconnects of a ``reconnect=`` connection are logged
#: (see :doc:`adapters`, "Reconnection"): URLs without their credentials.
reconnect_log = logging.getLogger("amqp_sansio.adapters.reconnect")

#: The default credit of a receiver (how many messages it lets the sender start).
DEFAULT_CREDIT = 100
#: The selector filter a receiver's ``selector`` adds to its source's filter-set: its
#: descriptor, and the key Qpid JMS gives it (a broker knows it by the descriptor).
SELECTOR_FILTER = Symbol("apache.org:selector-filter:string")
SELECTOR_KEY = Symbol("jms-selector")

_OUTCOMES = (a.Accepted, a.Rejected, a.Released, a.Modified)


# -- errors ----------------------------------------------------------------------------------


class ClientError(Exception):
    """Base class of the errors the high-level API raises. ``error`` is the AMQP error the
    peer gave (an :class:`~amqp_sansio.Error`), if any."""

    def __init__(self, description: str, error: Error | None = None) -> None:
        if error is not None:
            description = f"{description}: {error.condition}"
            if error.description:
                description += f" ({error.description})"
        super().__init__(description)
        self.error = error


class ConnectionClosedError(ClientError, ConnectionError):
    """The connection is closed or lost: closed by the peer (with its ``error``), timed out
    (the peer stopped answering), or the transport failed. ``retryable``: a reconnecting
    connection tries again after it (a lost transport, an idle time-out, the peer's close
    without an error, as in a planned restart, or with ``amqp:connection:forced``)."""

    def __init__(
        self, description: str, error: Error | None = None, *, retryable: bool = False
    ) -> None:
        super().__init__(description, error)
        self.retryable = retryable


class AuthenticationError(ConnectionClosedError):
    """SASL authentication failed; the connection has ended."""


class PeerWithoutSASLError(ConnectionClosedError):
    """The server answered our SASL header with the bare AMQP header: it has no SASL layer
    (core spec 2.2, 5.1; the engine's :class:`~amqp_sansio.PeerWithoutSASL`). ``connect``
    raises it only where it cannot connect again without SASL by itself: ``sasl=True``,
    credentials in the URL (a server without SASL cannot check them), or
    ``sasl_mechanisms``; otherwise it connects again once without SASL (see
    :doc:`defaults`)."""


class LinkDetachedError(ClientError):
    """The link was detached by the peer (with its ``error``), or refused
    (:class:`LinkRefusedError`)."""


class LinkRefusedError(LinkDetachedError):
    """The peer refused the link: it answered the attach without a terminus (core spec
    2.6.3). Raised as soon as that answer comes, in every adapter and for every kind of link;
    ``error`` is the condition of the peer's detach when it came with the answer (our
    broker's, Proton's), None when the peer sent none (rhea's listener sends only the
    attach)."""


class TransactionError(ClientError):
    """A declare was refused, or the transaction was rolled back without being asked."""


# -- pending operations ----------------------------------------------------------------------


class Op(Generic[T]):
    """Something an application waits for: done once, with a value or an error."""

    __slots__ = ("_done", "_error", "_value")

    def __init__(self) -> None:
        self._done = False
        self._value: T | None = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]

    def set(self, value: T) -> None:
        if not self._done:
            self._done, self._value = True, value

    def fail(self, error: BaseException) -> None:
        if not self._done:
            self._done, self._error = True, error


# -- deliveries ------------------------------------------------------------------------------


class Delivery:
    """A message that arrived. ``message`` is the decoded :class:`~amqp_sansio.Message`,
    ``data`` its bytes. Settle it with one outcome: :meth:`accept`, :meth:`reject`,
    :meth:`release` or :meth:`modify` (a second settlement does nothing). A delivery that
    came pre-settled (``settled`` is already true) needs none. ``transaction`` in each puts
    the outcome in that transaction (retirement, core spec 4.4.2)."""

    __slots__ = ("_core", "_engine", "_message", "data", "engine_delivery", "link")

    def __init__(self, core: Core, link: a.Link, delivery: a.Delivery, data: bytes) -> None:
        self._core = core
        self._engine = core.engine
        self.link = link
        self.engine_delivery = delivery
        self.data = data
        self._message: Message | None = None

    def __repr__(self) -> str:
        return f"<Delivery {self.engine_delivery.tag!r} settled={self.settled}>"

    @property
    def message(self) -> Message:
        if self._message is None:
            self._message = Message.decode(self.data)
        return self._message

    @property
    def settled(self) -> bool:
        """Settled here (by an outcome, or by the sender)."""
        d = self.engine_delivery
        return d.settled or d.remote_settled

    def accept(self, *, transaction: Any = None) -> None:
        self.settle(a.Accepted(), transaction=transaction)

    def reject(self, error: Error | None = None, *, transaction: Any = None) -> None:
        self.settle(a.Rejected(error=error), transaction=transaction)

    def release(self, *, transaction: Any = None) -> None:
        self.settle(a.Released(), transaction=transaction)

    def modify(
        self,
        *,
        delivery_failed: bool = True,
        undeliverable_here: bool = False,
        annotations: dict[Any, Any] | None = None,
        transaction: Any = None,
    ) -> None:
        outcome = a.Modified(
            delivery_failed=delivery_failed,
            undeliverable_here=undeliverable_here,
            message_annotations=annotations,
        )
        self.settle(outcome, transaction=transaction)

    def settle(self, outcome: Any, *, transaction: Any = None) -> None:
        """Settle with ``outcome`` (any outcome of core spec 3.4). A delivery that came on a
        connection since lost (and reconnected) can no longer be settled: this does
        nothing, and the peer delivers the message again."""
        if self.settled or self._engine is not self._core.engine or self._core.lost:
            return
        txn = None if transaction is None else _engine_txn(transaction)
        self.link.settle(self.engine_delivery, outcome, transaction=txn)
        self._core._changed()


def _engine_txn(transaction: Any) -> Any:
    """An adapter's transaction object carries the engine's as ``engine_transaction``."""
    return getattr(transaction, "engine_transaction", transaction)


# -- client links -------------------------------------------------------------------------


class _LinkCore:
    """What the core keeps of a link this side started."""

    def __init__(self, core: Core, link: a.Link) -> None:
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
            self.core._links.pop(link, None)
            self._on_detached(None, "the link was closed")
            self.core._changed()
            return
        if link.state in (a.LinkState.ATTACHED, a.LinkState.ATTACH_SENT) and not self.core.gone:
            link.detach(closed=True)
            self.core._changed()

    def close_ready(self) -> bool:
        return self.detached.done() or self.core.gone or self.error is not None

    def _on_attached(self, remote: a.Attach) -> None:
        self.attached.set(None)

    def _on_lost(self) -> None:
        """The connection was lost and will be re-made: the link is attached again then."""
        self.attached = Op()

    def _on_detached(self, error: Error | None, reason: str = "the link was detached") -> None:
        if self.error is None:
            if self.refused:
                self.error = LinkRefusedError(f"the peer refused the link {self.what}", error)
            else:
                self.error = LinkDetachedError(reason, error)
        self.detached.set(None)

    @property
    def what(self) -> str:
        """The link, for a message: ``to ADDRESS`` or ``from ADDRESS``."""
        if isinstance(self.link, a.Sender):
            return f"to {getattr(self.link.target, 'address', None)}"
        if isinstance(self.link, a.Receiver):
            return f"from {getattr(self.link.source, 'address', None)}"
        return "to the transaction coordinator"


class SenderCore(_LinkCore):
    """A sending link: :meth:`send_ready` says whether a send can start now,
    :meth:`send` starts it and returns an :class:`Op` done with the outcome."""

    link: a.Sender

    def __init__(self, core: Core, link: a.Sender) -> None:
        super().__init__(core, link)
        #: Each unsettled delivery's op, and (on a reconnecting connection) its bytes.
        self._unsettled: dict[a.Delivery, tuple[Op[Any], bytes | None]] = {}
        #: After a reconnect: what was unsettled, sent again before any new send.
        self._resend: deque[tuple[bytes, Op[Any]]] = deque()

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

    def send(self, data: bytes, *, settled: bool = False, transaction: Any = None) -> Op[Any]:
        """Send now (:meth:`send_ready` must be true): the :class:`Op` is done at once if
        ``settled``, else when the outcome arrives."""
        txn = None if transaction is None else _engine_txn(transaction)
        delivery = self.link.send(data, settled=settled, transaction=txn)
        op: Op[Any] = Op()
        if settled:
            op.set(None)
        else:
            keep = data if self.core.reconnecting and txn is None else None
            self._unsettled[delivery] = (op, keep)
        self.core._changed()
        return op

    def _on_update(self, delivery: a.Delivery, state: Any) -> None:
        entry = self._unsettled.get(delivery)
        if entry is None:
            return
        outcome = state.outcome if isinstance(state, a.TransactionalState) else state
        if delivery.remote_settled or isinstance(outcome, _OUTCOMES):
            del self._unsettled[delivery]
            entry[0].set(outcome)

    def _on_attached(self, remote: a.Attach) -> None:
        super()._on_attached(remote)
        self._send_again()

    def _send_again(self) -> None:
        """Send again, as credit allows, what was unsettled when the connection was lost."""
        link = self.link
        while self._resend and link.state is a.LinkState.ATTACHED and link.link_credit > 0:
            data, op = self._resend.popleft()
            self._unsettled[link.send(data)] = (op, data)

    def _on_lost(self) -> None:
        super()._on_lost()
        again: deque[tuple[bytes, Op[Any]]] = deque()
        for op, data in self._unsettled.values():
            if data is None:  # sent in a transaction, which the loss rolled back
                op.fail(TransactionError("the connection was lost: the transaction is over"))
            else:
                again.append((data, op))
        self._unsettled.clear()
        again.extend(self._resend)
        self._resend = again

    def _on_detached(self, error: Error | None, reason: str = "the link was detached") -> None:
        super()._on_detached(error, reason)
        assert self.error is not None
        for op, _ in self._unsettled.values():
            op.fail(self.error)
        for _, op in self._resend:
            op.fail(self.error)
        self._unsettled.clear()
        self._resend.clear()


class ReceiverCore(_LinkCore):
    """A receiving link with a credit window: :meth:`take` hands out what arrived."""

    link: a.Receiver

    def __init__(self, core: Core, link: a.Receiver, credit: int, auto_accept: bool) -> None:
        super().__init__(core, link)
        self.credit = credit
        self.auto_accept = auto_accept
        self.queue: deque[Delivery] = deque()
        self._drain: Op[None] | None = None

    @property
    def address(self) -> str | None:
        """The source's address; for a dynamic receiver, the one the peer made."""
        remote = self.link.remote
        if remote is not None and remote.source is not None:
            return getattr(remote.source, "address", None)
        return getattr(self.link.source, "address", None)

    def _on_attached(self, remote: a.Attach) -> None:
        super()._on_attached(remote)
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
            self.core._changed()
        return taken

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
        self.core._changed()
        return op

    def _on_drained(self) -> None:
        op, self._drain = self._drain, None
        if op is not None:
            op.set(None)
        if not self.core.lost:
            self.link.drain = False
            self._refill()  # the window again, or nothing would come after an empty drain

    def _on_delivery(self, delivery: Delivery) -> None:
        self.queue.append(delivery)
        self._refill()

    def _on_lost(self) -> None:
        # What waits unsettled can no longer be settled: the peer delivers it again.
        super()._on_lost()
        self.queue = deque(d for d in self.queue if d.settled)
        self._on_drained()

    def _on_detached(self, error: Error | None, reason: str = "the link was detached") -> None:
        closed_cleanly = error is None and not self.refused
        super()._on_detached(error, reason)
        if closed_cleanly:
            self.error = None  # a clean close ends iteration; an error raises
        if self._drain is not None:
            self._drain.set(None)


class TransactionCore:
    """A transaction this side controls."""

    def __init__(self, core: Core) -> None:
        self.core = core
        self.engine_transaction: a.Transaction | None = None
        self.declared: Op[None] = Op()
        self.discharged: Op[bool] = Op()


# -- server connections and links -----------------------------------------------------------


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
    is the TLS client certificate's subject), ``tls`` is the :class:`~amqp_sansio.TLSEstablished`
    event of an amqps connection (version, cipher, the client's certificate), or None."""

    def __init__(self, core: Core, peer: Any) -> None:
        self.core = core
        self.peer = peer
        remote = core.engine.remote
        assert remote is not None
        self.container_id: str = remote.container_id
        self.hostname: str | None = remote.hostname
        self.properties: Any = remote.properties
        self.identity: str | None = core.sasl_identity
        self.mechanism: str | None = core.sasl_mechanism
        self.tls: a.TLSEstablished | None = core.tls
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


# -- server links ----------------------------------------------------------------------------


class ServerLink:
    """A link a peer attached to a server (:func:`listen` in each adapter hands it to the
    application's ``on_link``, which runs inside the connection's I/O: it must not block).
    ``address`` is the peer's target (an :class:`IncomingLink`) or source (an
    :class:`OutgoingLink`); ``dynamic`` when the peer asks for a node to be made, whose
    address the application sets with :meth:`accept` (``address=``) before returning.
    ``on_detach`` (a callable taking the link) is called when the link goes."""

    def __init__(self, core: Core, link: a.Link, remote: a.Attach) -> None:
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
        self.core._changed()

    def refuse(self, error: Error | None = None) -> None:
        """Refuse the link, with an error (``amqp:not-found`` by default)."""
        if self._decided:
            return
        self._decided = True
        self.link.refuse(
            error or Error(condition=Symbol("amqp:not-found"), description="no such node")
        )
        self.core._changed()

    def close(self, error: Error | None = None) -> None:
        if self.link.state is a.LinkState.ATTACHED and not self.core.gone:
            self.link.detach(error=error, closed=True)
            self.core._changed()

    def _attach(self) -> None:
        raise NotImplementedError

    def _on_detached(self) -> None:
        if self.on_detach is not None:
            self.on_detach(self)


class IncomingLink(ServerLink):
    """A peer sends to us on it. ``on_delivery`` (a callable taking a :class:`Delivery`)
    gets each message, which the application settles (or it is accepted once the callback
    returns, with ``auto_accept``). ``credit`` is the window the core keeps granted.
    Messages posted in a transaction reach ``on_delivery`` only when it commits (already
    accepted then); a rollback discards them."""

    link: a.Receiver

    def __init__(self, core: Core, link: a.Receiver, remote: a.Attach) -> None:
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

    def _deliver(self, delivery: Delivery) -> None:
        if self.on_delivery is not None:
            self.on_delivery(delivery)
        if self.auto_accept and not delivery.settled:
            delivery.accept()
        link = self.link
        if link.state is a.LinkState.ATTACHED and link.link_credit == 0 and self.credit > 0:
            link.flow(self.credit)

    def flow(self, credit: int) -> None:
        """Grant the peer ``credit`` now (with ``credit = 0`` set in ``on_link``, the core
        grants none by itself)."""
        self.link.flow(credit)
        self.core._changed()


class OutgoingLink(ServerLink):
    """A peer receives from us on it. The application sends with :meth:`send` while
    :attr:`credit` is above zero; ``on_credit`` (a callable taking the link) is called when
    the peer grants more. If the peer drains, the credit left after ``on_credit`` returns is
    given back. ``send`` returns an :class:`Op`-like tracker; ``on_outcome`` (a callable
    taking the engine delivery and its outcome) is told of each outcome."""

    link: a.Sender

    def __init__(self, core: Core, link: a.Sender, remote: a.Attach) -> None:
        super().__init__(core, link, remote)
        self.on_credit: Callable[[OutgoingLink], None] | None = None
        self.on_outcome: Callable[[a.Delivery, Any], None] | None = None

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

    def send(self, message: Any, *, settled: bool = False) -> a.Delivery:
        """Send ``message`` (a :class:`~amqp_sansio.Message`, or a body) now: raises
        :class:`~amqp_sansio.LocalProtocolError` without credit."""
        return self.send_data(encode(message), settled=settled)

    def send_data(self, data: bytes, *, settled: bool = False) -> a.Delivery:
        """Send an encoded message (such as a :class:`Delivery`'s ``data``, forwarded)."""
        delivery = self.link.send(data, settled=settled)
        self.core._changed()
        return delivery

    def _credit(self) -> None:
        if self.on_credit is not None and self.credit > 0:
            self.on_credit(self)
        if self.link.drain and self.attached:
            self.link.drained()


# -- the core ---------------------------------------------------------------------------------


class Core:
    """One connection's state for the high-level API, client or server; see the module's
    docstring. ``stream`` is the byte-level object the adapter drives: ``engine`` itself or
    a :class:`~amqp_sansio.TLSLayer` around it. ``notify`` is called whenever something
    changed. In the server role, ``on_connection`` gets the :class:`IncomingConnection`
    when the peer's open comes (``peer`` is the transport's remote address, for it), and
    ``on_link`` each :class:`ServerLink` the peer attaches (without it, links are
    refused)."""

    def __init__(
        self,
        engine: a.Connection,
        *,
        stream: Any = None,
        notify: Callable[[], None] | None = None,
        on_link: Callable[[ServerLink], None] | None = None,
        on_connection: Callable[[IncomingConnection], None] | None = None,
        peer: Any = None,
    ) -> None:
        self.engine = engine
        self.stream = engine if stream is None else stream
        #: A client's URL (see :func:`client_core`).
        self.url: AMQPURL | None = None
        self.notify: Callable[[], None] = notify or (lambda: None)
        self.on_link = on_link
        self.on_connection = on_connection
        self.peer = peer
        #: A server's view of its peer, once the peer's open came.
        self.incoming: IncomingConnection | None = None
        #: What SASL and TLS established (see :class:`IncomingConnection`).
        self.sasl_identity: str | None = None
        self.sasl_mechanism: str | None = None
        self.tls: a.TLSEstablished | None = None
        self.opened: Op[None] = Op()
        #: Done when the connection has ended (both closes exchanged, or lost).
        self.ended: Op[None] = Op()
        #: What ended the connection abnormally, if anything did.
        self.error: ClientError | None = None
        self._closing = False
        self._restarting = False
        self._transport_closed = False
        self._session: a.Session | None = None
        self._links: dict[a.Link, _LinkCore] = {}
        self._server_links: dict[a.Link, ServerLink] = {}
        self._controller: a.Controller | None = None
        self._transactions: dict[a.Transaction, TransactionCore] = {}
        #: Transactional resource: posted deliveries held until the discharge.
        self._held: dict[a.Delivery, tuple[IncomingLink, Delivery]] = {}
        self._names = itertools.count(1)
        #: Links the peer refused (attach answered without a terminus) since the last bytes.
        self._refusals: list[a.Link] = []
        #: The address of the URL: what links given none use.
        self.default_address: str | None = None
        #: Reconnection (a client's, opt-in): the schedule, and the options of its engines.
        self.backoff: Backoff | None = None
        self._options: dict[str, Any] = {}
        #: The transport is gone and a new one is wanted (see :meth:`next_attempt`).
        self.lost = False
        #: How many times the connection was made again after a loss.
        self.reconnects = 0
        #: What made the connection go, the last time it was lost.
        self.last_error: ClientError | None = None
        #: Called once the connection is open again (links are being re-attached).
        self.on_reconnect: Callable[[], None] | None = None
        self._stopping = False

    # -- the adapter's side --------------------------------------------------------------------

    def receive_data(self, data: bytes, now: float) -> list[a.Event]:
        """Bytes from the transport; ``b""`` when it closed. Returns the engine's events
        (already handled), so that the core has the engine's byte interface."""
        if self._transport_closed:
            return []
        if not data:
            self._transport_closed = True
        return self._handle(self.stream.receive_data(data, now))

    def transport_failed(self, error: BaseException, now: float) -> None:
        """The transport failed (reset, broken pipe): the connection is lost."""
        if self.error is None and not self.ended.done() and not self.lost:
            self.error = ConnectionClosedError(f"the transport failed: {error}", retryable=True)
        self.receive_data(b"", now)

    def stop(self, now: float) -> None:
        """The adapter stops driving the connection (its task was cancelled): it ends, as
        lost, without another attempt."""
        self._stopping = True
        if self.lost:
            self._give_up(ConnectionClosedError("the connection is closed"))
        else:
            self.receive_data(b"", now)

    # -- reconnection (the adapter connects, the core decides) ----------------------------

    @property
    def reconnecting(self) -> bool:
        """Reconnection is on."""
        return self.backoff is not None

    def next_attempt(self, now: float) -> tuple[float, AMQPURL]:
        """While :attr:`lost`: when (on the adapter's clock) and to which URL to connect."""
        assert self.backoff is not None and self.lost
        return self.backoff.next_attempt(now), self.backoff.url

    def attempt_failed(self, error: BaseException, now: float) -> None:
        """The adapter could not connect (refused, unreachable, timed out): the next attempt
        is scheduled, or, after ``max_attempts``, the connection ends with the error."""
        assert self.backoff is not None
        self.last_error = ConnectionClosedError(f"could not connect: {error}", retryable=True)
        self._log_failed_attempt(self.last_error)
        if not self.backoff.failed():
            self._give_up(self.last_error)

    def _log_failed_attempt(self, error: ClientError | None) -> None:
        assert self.backoff is not None
        reconnect_log.warning(
            "attempt %d to %s %s failed: %s",
            self.backoff.failures + 1,
            "reconnect to" if self.opened.done() else "connect to",
            self.backoff.url,
            error,
        )

    def restart(self, now: float) -> None:
        """The adapter has connected a new transport to :meth:`next_attempt`'s URL: a new
        engine opens, begins, and attaches every link the application has again (same
        names, same termini); senders send again what was unsettled, receivers grant their
        credit again."""
        assert self.backoff is not None and self.lost
        if self.opened.done():
            reconnect_log.info(
                "attempt %d to reconnect to %s: connected, opening",
                self.backoff.failures + 1,
                self.backoff.url,
            )
        parsed, engine, stream = client_engine(self.backoff.url, **self._options)
        self.engine, self.stream = engine, stream
        self.default_address = self.default_address or parsed.address
        self.lost = False
        self._restarting = True
        self._transport_closed = False
        self._session = None
        engine.open(now=now)
        for link, core in list(self._links.items()):
            del self._links[link]
            session = self.session()
            new: a.Link
            if isinstance(link, a.Sender):
                new = session.attach_sender(
                    link.name,
                    source=link.source,
                    target=link.target,
                    snd_settle_mode=link.snd_settle_mode,
                )
            else:
                new = session.attach_receiver(link.name, source=link.source, target=link.target)
            core.link = new
            self._links[new] = core
        self._changed()

    def connected_ready(self) -> bool:
        """Not waiting for a new transport (raises if the connection has ended)."""
        self.check()
        return not self.lost

    def _lose(self) -> None:
        """The connection was lost (a retryable error): keep what the application has, to be
        re-made on the next transport."""
        assert self.backoff is not None
        cause, self.error = self.error, None
        if self._restarting:  # the attempt failed before the open
            self._log_failed_attempt(cause)
            if not self.backoff.failed():
                self.last_error = cause
                self._give_up(cause or ConnectionClosedError("the connection was lost"))
                return
        else:
            self.backoff.lost()
            reconnect_log.warning(
                "the connection to %s was lost (%s): reconnecting", self.backoff.url, cause
            )
        self.lost = True
        self.last_error = cause
        error = TransactionError("the connection was lost: the transaction is over")
        for txn in self._transactions.values():
            txn.declared.fail(error)
            txn.discharged.fail(error)
        self._transactions.clear()
        if self._controller is not None:
            self._links.pop(self._controller, None)
            self._controller = None
        for link, core in list(self._links.items()):
            if link.state in (a.LinkState.DETACH_SENT, a.LinkState.DETACHED):
                core._on_detached(None, "the link was closed")  # closing: that is done
                del self._links[link]
            else:
                core._on_lost()

    def _give_up(self, error: ClientError | None) -> None:
        self.lost = False
        if self.error is None:
            if self.backoff is not None and self.backoff.failures:
                failures = self.backoff.failures
                reconnect_log.error(
                    "gave up connecting to %s after %d attempts: %s",
                    self.backoff.url,
                    failures,
                    error,
                )
                self.error = ConnectionClosedError(
                    f"gave up after {failures} attempts; the last: {error}",
                    error.error if error is not None else None,
                )
            else:
                self.error = error
        self._end()

    def handle_timer(self, now: float) -> list[a.Event]:
        """Call at (or after) :meth:`next_deadline`."""
        deadline = self.stream.next_deadline()
        if deadline is not None and now >= deadline:
            return self._handle(self.stream.handle_timer(now))
        return []

    def next_deadline(self) -> float | None:
        deadline: float | None = self.stream.next_deadline()
        return deadline

    def data_to_send(self) -> bytes:
        data: bytes = self.stream.data_to_send()
        return data

    @property
    def gone(self) -> bool:
        """The connection has ended: nothing more is sent or received."""
        return self.ended.done()

    @property
    def finished(self) -> bool:
        """The adapter may close the transport (once it has written what is left)."""
        return self.ended.done()

    # -- commands ------------------------------------------------------------------------------

    def check(self) -> None:
        """Raise what ended the connection, if it has ended."""
        if self.error is not None:
            raise self.error
        if self.ended.done() or self._closing:
            raise ConnectionClosedError("the connection is closed")

    def open(self, now: float) -> None:
        """Client: send the header and open (pipelined with what follows)."""
        self.engine.open(now=now)
        self._changed()

    def open_ready(self) -> bool:
        self.check()
        return self.opened.done()

    def close(self, error: Error | None = None) -> None:
        """Close the connection; :attr:`ended` is done when the peer has answered."""
        if self._closing or self.ended.done():
            return
        self._closing = True
        if self.lost:  # no transport: nothing to say to the peer
            self.lost = False
            self._end()
            self._changed()
            return
        self.engine.close(error)
        self._changed()

    def close_ready(self) -> bool:
        return self.ended.done()

    def session(self) -> a.Session:
        if self._session is None:
            self._session = self.engine.begin()
        return self._session

    def _name(self, kind: str) -> str:
        return f"{self.engine.container_id}-{kind}-{next(self._names)}"

    def sender(
        self, address: str | None, *, name: str | None = None, settled: bool = False
    ) -> SenderCore:
        """Attach a sending link to ``address``. ``settled``: the link's sends are
        pre-settled (snd-settle-mode settled)."""
        self.check()
        mode = a.SenderSettleMode.SETTLED if settled else a.SenderSettleMode.UNSETTLED
        link = self.session().attach_sender(
            name or self._name("sender"),
            target=a.Target(address=address or self.default_address),
            snd_settle_mode=mode,
        )
        core = SenderCore(self, link)
        self._links[link] = core
        self._changed()
        return core

    def receiver(
        self,
        address: str | None,
        *,
        name: str | None = None,
        credit: int = DEFAULT_CREDIT,
        auto_accept: bool = False,
        dynamic: bool = False,
        filters: dict[Any, Any] | None = None,
        selector: str | None = None,
    ) -> ReceiverCore:
        """Attach a receiving link from ``address`` (or, ``dynamic``, from a node the peer
        makes: its address is known once attached), with ``filters`` as its source's
        filter-set (core spec 3.5.8) if given, and ``selector`` (a JMS message selector)
        added to it as the ``apache.org:selector-filter:string`` filter under the key
        ``jms-selector``."""
        self.check()
        if credit < 1:
            raise ValueError("a receiver's credit is at least 1")
        if selector is not None:
            filters = {**(filters or {}), SELECTOR_KEY: a.Described(SELECTOR_FILTER, selector)}
        if dynamic:
            source = a.Source(address=None, dynamic=True)
        else:
            source = a.Source(address=address or self.default_address, filter=filters)
        link = self.session().attach_receiver(name or self._name("receiver"), source=source)
        core = ReceiverCore(self, link, credit, auto_accept)
        self._links[link] = core
        self._changed()
        return core

    def declare_ready(self) -> bool:
        """The control link is attached and has credit for a declare or discharge."""
        self.check()
        if self.lost:
            return False
        controller = self._controller
        if controller is None:
            controller = self._controller = self.session().attach_controller(self._name("txn"))
            core = _LinkCore(self, controller)
            self._links[controller] = core
            self._changed()
        core = self._links[controller]
        core.check()
        return core.attached.done() and controller.link_credit > 0

    def declare(self) -> TransactionCore:
        """Declare a transaction (:meth:`declare_ready` must be true)."""
        assert self._controller is not None
        txn = TransactionCore(self)
        txn.engine_transaction = self._controller.declare()
        self._transactions[txn.engine_transaction] = txn
        self._changed()
        return txn

    def discharge(self, txn: TransactionCore, *, fail: bool) -> None:
        """Commit (or, ``fail``, roll back) ``txn`` (:meth:`declare_ready` must be true)."""
        assert self._controller is not None and txn.engine_transaction is not None
        self._controller.discharge(txn.engine_transaction, fail=fail)
        self._changed()

    # -- events ----------------------------------------------------------------------------

    def _changed(self) -> None:
        self.notify()

    def _fail(self, error: ClientError) -> None:
        if self.error is None:
            self.error = error

    def _handle(self, events: list[a.Event]) -> list[a.Event]:
        for event in events:
            self._on_event(event)
        if self._refusals:
            self._refuse_links()
        self._changed()
        return events

    def _refuse_links(self) -> None:
        """The links refused in the bytes just handled whose detach did not come with the
        refusal: they fail now, without the peer's condition, and we detach our end (a
        peer that never sends the detach, as rhea's listener, leaves nothing waiting)."""
        refused, self._refusals = self._refusals, []
        for link in refused:
            core = self._links.pop(link, None)
            if core is None:
                continue  # its detach came too
            if link is self._controller:
                self._controller = None
            core._on_detached(None)
            if link.state is a.LinkState.ATTACHED and not self.gone:
                link.detach(closed=True)

    def _on_event(self, event: a.Event) -> None:
        if isinstance(event, a.DeliveryReceived):
            self._on_delivery(event)
        elif isinstance(event, a.DeliveryUpdated):
            core = self._links.get(event.link)
            if isinstance(core, SenderCore):
                core._on_update(event.delivery, event.state)
            server = self._server_links.get(event.link)
            if isinstance(server, OutgoingLink) and server.on_outcome is not None:
                server.on_outcome(event.delivery, event.state)
        elif isinstance(event, a.CreditChanged):
            self._on_credit(event)
        elif isinstance(event, a.DrainCompleted):
            core = self._links.get(event.link)
            if isinstance(core, ReceiverCore):
                core._on_drained()
        elif isinstance(event, a.ConnectionOpened):
            if not self.engine.client:
                self._answer_open()
            if self.backoff is not None:
                if self.opened.done():
                    reconnect_log.warning(
                        "reconnected to %s after %d failed attempts; attaching %d links again",
                        self.backoff.url,
                        self.backoff.failures,
                        len(self._links),
                    )
                self.backoff.succeeded()
                self._restarting = False
                if self.opened.done():
                    self.reconnects += 1
                    if self.on_reconnect is not None:
                        self.on_reconnect()
            self.opened.set(None)
        elif isinstance(event, a.Authenticated):
            self.sasl_identity, self.sasl_mechanism = event.identity, event.mechanism
        elif isinstance(event, a.TLSEstablished):
            self.tls = event
        elif isinstance(event, a.SessionBegun):
            if event.session.state is a.SessionState.BEGIN_RCVD:
                event.session.begin()
        elif isinstance(event, a.LinkAttached):
            self._on_attach(event.link, event.remote)
        elif isinstance(event, a.LinkDetached):
            self._on_detach(event.link, event.error)
        elif isinstance(event, a.SessionEnded):
            for link in event.session.links:
                self._on_detach(link, event.error, "the session ended")
            if event.session is self._session:
                self._session = None
        elif isinstance(event, a.TransactionDeclared | a.TransactionDeclareFailed):
            self._on_declared(event)
        elif isinstance(event, a.TransactionDischarged | a.TransactionRolledBack):
            self._on_discharged(event)
        elif isinstance(event, a.DeclareRequested):
            event.request.declare()
        elif isinstance(event, a.DischargeRequested):
            self._on_discharge_request(event.request)
        elif isinstance(event, a.ConnectionClosed):
            if event.error is not None:
                forced = event.error.condition == "amqp:connection:forced"
                self._fail(
                    ConnectionClosedError(
                        "the peer closed the connection", event.error, retryable=forced
                    )
                )
            elif not self._closing:
                # A close without an error is the peer's choice (a planned restart, an
                # operator): a reconnecting connection comes back.
                self._fail(ConnectionClosedError("the peer closed the connection", retryable=True))
        elif isinstance(event, a.IdleTimedOut):
            self._fail(
                ConnectionClosedError("the peer stopped answering (idle time-out)", retryable=True)
            )
        elif isinstance(event, a.AuthenticationFailed):
            self._fail(AuthenticationError(authentication_failure(event, self.url)))
        elif isinstance(event, a.ProtocolError):
            if event.scope == "connection":
                self._fail(ConnectionClosedError("the peer broke the protocol", event.error))
        elif isinstance(event, a.PeerWithoutSASL):
            if self.engine.client:
                self._fail(PeerWithoutSASLError(without_sasl_failure(self.url)))
            else:
                refused_without_sasl(self.peer)
                self._fail(ConnectionClosedError("the peer came without SASL, which we require"))
        elif isinstance(event, a.UnsupportedProtocol):
            self._fail(ConnectionClosedError(f"the peer speaks {event.version_name}"))
        elif isinstance(event, a.TLSFailed):
            self._fail(ConnectionClosedError(f"TLS failed: {event.error}"))
        elif isinstance(event, a.TLSHeaderMismatch):
            self._fail(ConnectionClosedError(f"TLS refused: the peer speaks {event.version_name}"))
            self._on_ended()
        elif isinstance(event, a.ConnectionEnded):
            self._on_ended()

    def _on_ended(self) -> None:
        if self.ended.done() or self.lost:
            return
        if self.error is None and not self._closing:
            self._fail(ConnectionClosedError("the connection was lost", retryable=True))
        close = getattr(self.stream, "close", None)
        if self.stream is not self.engine and close is not None:
            close()  # TLS close_notify after the AMQP close
        error = self.error
        if (
            self.backoff is not None
            and not self._closing
            and not self._stopping
            and isinstance(error, ConnectionClosedError)
            and error.retryable
        ):
            self._lose()
            return
        self._end()

    def _end(self) -> None:
        """The connection has ended for good: everything waiting fails with the reason."""
        error = self.error or ConnectionClosedError("the connection is closed")
        self.opened.fail(error)
        for link, core in list(self._links.items()):
            core._on_detached(None if self.error is None else self.error.error, str(error))
            if self.error is not None:
                core.error = error
            del self._links[link]
        for txn in self._transactions.values():
            txn.declared.fail(error)
            txn.discharged.fail(error)
        for server_link in self._server_links.values():
            server_link._on_detached()
        self._server_links.clear()
        self.ended.set(None)

    def _answer_open(self) -> None:
        """A server's answer to the peer's open: ours, after the application's
        ``on_connection`` (and a close at once if it refused)."""
        incoming = self.incoming = IncomingConnection(self, self.peer)
        if self.on_connection is not None:
            self.on_connection(incoming)
        self.engine.open()
        if incoming.refused is not None:
            self.close(incoming.refused)

    def _on_attach(self, link: a.Link, remote: a.Attach) -> None:
        core = self._links.get(link)
        if core is not None:
            terminus = remote.source if isinstance(link, a.Receiver) else remote.target
            if terminus is not None:
                core._on_attached(remote)
            else:  # a refusal (2.6.3): its detach, with the reason, should follow
                core.refused = True
                self._refusals.append(link)
            return
        if link.state is not a.LinkState.ATTACH_RCVD:
            return
        if isinstance(link, a.CoordinatorLink):
            link.attach()  # we are a transactional resource
            return
        server: ServerLink
        if isinstance(link, a.Receiver):
            server = IncomingLink(self, link, remote)
        else:
            assert isinstance(link, a.Sender)
            server = OutgoingLink(self, link, remote)
        if self.on_link is None:
            server.refuse()
            return
        self._server_links[link] = server
        self.on_link(server)
        server.accept()  # unless the application decided

    def _on_detach(self, link: a.Link, error: Error | None, reason: str = "") -> None:
        core = self._links.pop(link, None)
        if core is not None:
            core._on_detached(error, reason or "the link was detached")
            if link is self._controller:
                self._controller = None
        server = self._server_links.pop(link, None)
        if server is not None:
            server._on_detached()

    def _on_credit(self, event: a.CreditChanged) -> None:
        link = event.link
        if isinstance(link, a.Sender) and link.drain:
            server = self._server_links.get(link)
            if server is None:
                # A high-level sender keeps no backlog: what waits for credit is the
                # application's, so a drain gives the credit back at once.
                link.drained()
        server = self._server_links.get(link)
        if isinstance(server, OutgoingLink):
            server._credit()
        core = self._links.get(link)
        if isinstance(core, SenderCore) and core._resend:
            core._send_again()

    def _on_delivery(self, event: a.DeliveryReceived) -> None:
        if not event.complete:
            return
        link, engine_delivery = event.link, event.delivery
        delivery = Delivery(self, link, engine_delivery, bytes(event.data))
        core = self._links.get(link)
        if isinstance(core, ReceiverCore):
            core._on_delivery(delivery)
            return
        server = self._server_links.get(link)
        if not isinstance(server, IncomingLink):
            return
        if engine_delivery.transaction is not None:
            # Posted in a transaction (4.4.1): held until the discharge, with the
            # provisional outcome accepted.
            self._held[engine_delivery] = (server, delivery)
            link.update(engine_delivery, a.Accepted())
            return
        server._deliver(delivery)

    def _on_discharge_request(self, request: a.DischargeRequest) -> None:
        posted = request.transaction.posted
        held = [self._held.pop(d) for d in posted if d in self._held]
        request.accept()
        if request.fail:
            return
        for server, delivery in held:
            delivery.link.settle(delivery.engine_delivery, a.Accepted())
            server._deliver(delivery)

    def _on_declared(self, event: a.TransactionDeclared | a.TransactionDeclareFailed) -> None:
        txn = self._transactions.get(event.transaction)
        if txn is None:
            return
        if isinstance(event, a.TransactionDeclared):
            txn.declared.set(None)
        else:
            txn.declared.fail(TransactionError("the declare was refused", event.error))
            del self._transactions[event.transaction]

    def _on_discharged(self, event: a.TransactionDischarged | a.TransactionRolledBack) -> None:
        if isinstance(event, a.TransactionRolledBack) and isinstance(
            event.transaction, a.TransactionRecord
        ):
            for delivery in event.transaction.posted:
                self._held.pop(delivery, None)
            return
        assert isinstance(event.transaction, a.Transaction)
        txn = self._transactions.pop(event.transaction, None)
        if txn is None:
            return
        if isinstance(event, a.TransactionDischarged):
            txn.discharged.set(event.committed)
        else:
            txn.discharged.fail(TransactionError("the transaction was rolled back", event.error))


# -- making connections -------------------------------------------------------------------------


def client_engine(
    url: str | AMQPURL,
    *,
    container_id: str | None = None,
    idle_timeout: float | None = None,
    ssl_context: Any = None,
    allow_insecure_auth: bool = False,
    sasl_mechanisms: Any = None,
    max_frame_size: int = 65536,
    hostname: str | None = None,
    sasl: bool | None = None,
    cafile: str | None = None,
    verify: bool = True,
) -> tuple[AMQPURL, a.Connection, Any]:
    """The engine (and TLS layer, for amqps) for a client connection to ``url``: returns
    ``(url, connection, stream)``. The one place where a URL and the options become a
    client engine, for the adapters and the command line alike.

    SASL (see :doc:`defaults`): ``sasl=None`` (the default) and ``True`` use SASL, with the
    URL's credentials, or ANONYMOUS without them (what Qpid Proton sends by default, and
    what most brokers ask for); ``False`` does not (a :class:`ValueError` with credentials).
    The two differ in what the adapters do when the server turns out to have no SASL layer
    (:class:`PeerWithoutSASLError`): with None and no credentials or ``sasl_mechanisms``,
    they connect again once without SASL (:func:`without_sasl`). Credentials go through
    PLAIN over an unencrypted transport only to a loopback host, or with ``allow_insecure_auth``
    (:class:`~amqp_sansio.adapters.url.InsecureCredentialsError` otherwise, before
    anything is sent). TLS: ``ssl_context``, or one from
    :func:`~amqp_sansio.client_context` with ``cafile`` and ``verify``."""
    parsed = parse_url(url) if isinstance(url, str) else url
    parsed.check_credentials(allow_insecure_auth=allow_insecure_auth)
    tls = parsed.tls or ssl_context is not None
    credentials = parsed.username is not None or parsed.password is not None
    if sasl is False and credentials:
        raise ValueError("credentials need SASL: remove them from the URL")
    credentials_layer = None
    if sasl is not False:  # none given: ANONYMOUS
        credentials_layer = a.ClientCredentials(username=parsed.username, password=parsed.password)
    engine = a.Connection(
        client=True,
        container_id=container_id or f"amqp-sansio-{uuid.uuid4().hex[:12]}",
        hostname=hostname or parsed.host,
        idle_timeout=idle_timeout,
        sasl=credentials_layer,
        sasl_mechanisms=sasl_mechanisms,
        allow_plain_without_tls=allow_insecure_auth or parsed.is_loopback,
        max_frame_size=max_frame_size,
    )
    stream: Any = _trace.wrap(engine, f"{engine.container_id}>{parsed.host}:{parsed.port}")
    if tls:
        context = ssl_context
        if context is None:
            context = a.client_context(cafile=cafile, verify=verify)
        stream = a.TLSLayer(
            stream, context, client=True, server_hostname=parsed.host, negotiate=False
        )
    return parsed, engine, stream


def client_core(
    url: str,
    *,
    reconnect: Reconnect | bool | None = None,
    **options: Any,
) -> Core:
    """The core of a client connection to ``url`` (``options`` are :func:`client_engine`'s).
    Without ``reconnect`` its engine is ready: the adapter connects to :attr:`Core.url`.
    With it (``True``: the defaults of :class:`Reconnect`), the core starts :attr:`lost`:
    the adapter connects as :meth:`Core.next_attempt` says, then :meth:`Core.restart`."""
    parsed, engine, stream = client_engine(url, **options)
    core = Core(engine, stream=stream)
    core.url = parsed
    core.default_address = parsed.address
    if reconnect:
        policy = reconnect if isinstance(reconnect, Reconnect) else Reconnect()
        core.backoff = Backoff(policy, parsed)
        core._options = dict(options, container_id=engine.container_id)
        core.lost = True
    return core


def without_sasl(url: str | AMQPURL, options: dict[str, Any]) -> dict[str, Any] | None:
    """After a :class:`PeerWithoutSASLError`: the options (``client_engine``'s) to connect
    again with, without SASL, if SASL was only our default choice (``sasl`` None, no
    credentials in ``url``, no ``sasl_mechanisms``), saying so in the log (WARNING: it costs
    a connection; ``sasl=False`` avoids it). None: no second attempt (the error stands).
    The recipe of every adapter's ``connect`` and of the command line."""
    parsed = parse_url(url) if isinstance(url, str) else url
    if (
        options.get("sasl") is not None
        or options.get("sasl_mechanisms")
        or parsed.username is not None
        or parsed.password is not None
    ):
        return None
    _log.warning(
        "%s:%s has no SASL layer (it answered the SASL header with the bare AMQP header): "
        "connecting again without SASL (sasl=False, or --sasl-mechanism none, skips this step)",
        parsed.host,
        parsed.port,
    )
    return dict(options, sasl=False)


def without_sasl_failure(url: AMQPURL | None) -> str:
    """Why a client's SASL header was answered with the bare AMQP header, for its error."""
    where = "" if url is None else f" at {url.host}:{url.port}"
    text = f"the server{where} has no SASL layer (it answered with the bare AMQP header)"
    if url is not None and (url.username is not None or url.password is not None):
        return f"{text}: it cannot check the credentials in the URL; remove them to connect"
    return f"{text}: connect with sasl=False"


def authentication_failure(event: a.AuthenticationFailed, url: AMQPURL | None) -> str:
    """The message of a client's failed authentication, with :func:`authentication_hint`."""
    hint = authentication_hint(event, url)
    text = f"authentication failed: {event.description}"
    return f"{hint}; {text}" if hint else text


def authentication_hint(event: a.AuthenticationFailed, url: AMQPURL | None) -> str:
    """What to do where the server offers nothing a client without credentials can use (no
    ANONYMOUS): "this server requires authentication: put user:password in the URL (...)";
    else ""."""
    if (
        url is None
        or not isinstance(event.error, SASLNoMechanismError)
        or url.username is not None
        or url.password is not None
    ):
        return ""
    scheme = "amqps" if url.tls else "amqp"
    host = f"[{url.host}]" if ":" in url.host else url.host
    return (
        "this server requires authentication: put user:password in the URL "
        f"({scheme}://USER:PASSWORD@{host}:{url.port})"
    )


def refused_without_sasl(peer: Any) -> None:
    """Log a server's refusal of a client that sent the bare AMQP header where SASL is
    required (core spec 2.2: our SASL header went back, and the connection ended)."""
    _log.warning(
        "refused the connection from %s: it sent the bare AMQP header (no SASL layer), and "
        "this server requires SASL authentication (anonymous access is not allowed)",
        _peer_name(peer),
    )


def _peer_name(peer: Any) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return "an unknown peer" if peer is None else str(peer)


def server_sasl(sasl: a.ServerAuthenticator | bool | None) -> a.ServerAuthenticator | None:
    """A server's SASL layer from its ``sasl`` option (see :doc:`defaults`): None (the
    default) allows anonymous access, through ANONYMOUS or without SASL (the bare AMQP
    header, core spec 5.1), so that every client's default works; a
    :class:`~amqp_sansio.ServerAuthenticator` is used as it is (one without
    ``allow_anonymous`` requires authentication); False: no SASL layer (only the bare
    header is taken)."""
    if sasl is None or sasl is True:
        return a.ServerAuthenticator(None, allow_anonymous=True)
    if sasl is False:
        return None
    return sasl


def server_engine(
    *,
    container_id: str = "amqp-sansio-server",
    idle_timeout: float | None = None,
    ssl_context: Any = None,
    sasl: a.ServerAuthenticator | bool | None = None,
    allow_insecure_auth: bool = False,
    max_frame_size: int = 65536,
) -> tuple[a.Connection, Any]:
    """The engine (and TLS layer, with ``ssl_context``: amqps from the first byte) of one
    accepted server connection; ``sasl`` as :func:`server_sasl` says."""
    engine = a.Connection(
        client=False,
        container_id=container_id,
        idle_timeout=idle_timeout,
        sasl=server_sasl(sasl),
        allow_plain_without_tls=allow_insecure_auth,
        max_frame_size=max_frame_size,
    )
    stream: Any = _trace.wrap(engine, container_id)
    if ssl_context is not None:
        stream = a.TLSLayer(stream, ssl_context, client=False, negotiate=False)
    return engine, stream


def server_core(
    options: dict[str, Any],
    *,
    on_link: Callable[[ServerLink], None] | None,
    on_connection: Callable[[IncomingConnection], None] | None,
    peer: Any,
) -> Core:
    """The core of one accepted server connection, on the engine (and TLS layer) that
    :func:`server_engine` makes from a :func:`listen`'s ``options``."""
    engine, stream = server_engine(**options)
    return Core(engine, stream=stream, on_link=on_link, on_connection=on_connection, peer=peer)


def encode(message: Any) -> bytes:
    """The bytes of a message to send: a :class:`~amqp_sansio.Message`, or any other value,
    sent as the body of a message (bytes as a data section, others as an amqp-value)."""
    if isinstance(message, Message):
        return message.encode()
    return Message(body=message).encode()


# -- what the adapters' objects share --------------------------------------------------------


class SenderBase:
    """The adapters' senders: their state (the waiting is each adapter's own)."""

    def __init__(self, conn: Any, core: SenderCore, settled: bool) -> None:
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

    def __init__(self, sender: SenderBase, op: Op[Any]) -> None:
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

    def __init__(self, conn: Any, core: ReceiverCore) -> None:
        self.connection = conn
        self.core = core

    @property
    def address(self) -> str | None:
        """The source's address; for a dynamic receiver, the peer's temporary node."""
        return self.core.address


class TransactionBase:
    """The adapters' transactions: pass one as ``transaction=`` to a sender's ``send`` or a
    delivery's ``accept``."""

    def __init__(self, conn: Any, timeout: float | None) -> None:
        self.connection = conn
        self.timeout = timeout
        self.core: TransactionCore | None = None
        #: After the discharge: whether it committed.
        self.committed: bool | None = None

    @property
    def engine_transaction(self) -> Any:
        return None if self.core is None else self.core.engine_transaction
