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
from collections.abc import Callable
from typing import Any

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.engine.amqp10
from amqp_sansio import Error, Symbol
from amqp_sansio.security.layers import LayerFailed

from ..engines import (
    ConnectOptions,
    ListenOptions,
    Stream,
    authentication_failure,
    client_engine,
    refused_without_sasl,
    server_engine,
    without_sasl_failure,
)
from ..lifecycle import CoreBase
from ..ops import (
    AuthenticationError,
    ClientError,
    ConnectionClosedError,
    Delivery,
    Filters,
    PeerWithoutSASLError,
    TransactionError,
)
from ..reconnect import Backoff, Reconnect
from .links import (
    DEFAULT_CREDIT,
    IncomingConnection,
    IncomingLink,
    LinkCore,
    OutgoingLink,
    ReceiverCore,
    SenderCore,
    ServerLink,
    TransactionCore,
)
from .tokens import TokenProvider, Tokens, default_audience_base

__all__ = ["Core", "client_core", "server_core"]

#: The selector filter a receiver's ``selector`` adds to its source's filter-set: its
#: descriptor, and the key Qpid JMS gives it (a broker knows it by the descriptor).
SELECTOR_FILTER = Symbol("apache.org:selector-filter:string")
SELECTOR_KEY = Symbol("jms-selector")
#: The distribution-mode of a browsing receiver's source (core spec 3.5.3).
BROWSE = Symbol("copy")


# -- the core ----------------------------------------------------------------------------------


class Core(CoreBase[a.Connection]):
    """One connection's state for the high-level API, client or server; see the module's
    docstring. ``stream`` is the byte-level object the adapter drives: ``engine`` itself or
    a :class:`~amqp_sansio.TLSLayer` around it. ``notify`` is called whenever something
    changed. In the server role, ``on_connection`` gets the :class:`IncomingConnection`
    when the peer's open comes (``peer`` is the transport's remote address, for it), and
    ``on_link`` each :class:`ServerLink` the peer attaches (without it, links are
    refused). The connection's life (the adapter's side, reconnection, the end) is
    :class:`~.lifecycle.CoreBase`'s."""

    stream: Stream

    def __init__(
        self,
        engine: a.Connection,
        *,
        stream: Stream | None = None,
        notify: Callable[[], None] | None = None,
        on_link: Callable[[ServerLink], None] | None = None,
        on_connection: Callable[[IncomingConnection], None] | None = None,
        peer: object = None,
    ) -> None:
        super().__init__(engine, engine if stream is None else stream, notify)
        self.on_link = on_link
        self.on_connection = on_connection
        self.peer = peer
        #: A server's view of its peer, once the peer's open came.
        self.incoming: IncomingConnection | None = None
        #: What SASL and TLS established (see :class:`IncomingConnection`).
        self.sasl_identity: str | None = None
        self.sasl_mechanism: str | None = None
        self.tls: a.security.tls.TLSEstablished | None = None
        #: The SASL exchange succeeded (or the server took us without one).
        self.authenticated = False
        self._session: a.Session | None = None
        self._links: dict[a.Link, LinkCore] = {}
        self._server_links: dict[a.Link, ServerLink] = {}
        self._controller: a.Controller | None = None
        #: The coordinator refused our control link (ended it before attaching it): what
        #: the next :meth:`declare_ready` raises, instead of attaching again.
        self._coordinator_refusal: TransactionError | None = None
        self._transactions: dict[a.Transaction, TransactionCore] = {}
        #: Transactional resource: posted deliveries held until the discharge.
        self._held: dict[a.Delivery, tuple[IncomingLink, Delivery]] = {}
        self._names = itertools.count(1)
        #: Links the peer refused (attach answered without a terminus) since the last bytes.
        self._refusals: list[a.Link] = []
        #: The address of the URL: what links given none use.
        self.default_address: str | None = None
        #: The options of a reconnecting client's engines.
        self._options: ConnectOptions = {}
        #: A client's tokens (``connect(url, token_provider=...)``), put to ``$cbs``.
        self.tokens: Tokens | None = None
        #: The links to attach again once the tokens are put again (a reconnection's).
        self._deferred: list[tuple[a.Link, LinkCore]] = []

    # -- claims-based security -----------------------------------------------------------

    def use_tokens(self, provider: TokenProvider, wall_offset: float) -> None:
        """Put a token from ``provider`` before each link attaches, and again before it
        expires (:mod:`.tokens`); ``wall_offset`` is the wall clock less the ``now`` this
        core is given."""
        assert self.url is not None
        self.tokens = Tokens(self, provider, default_audience_base(self.url), wall_offset)

    def next_deadline(self) -> float | None:
        """The engine's next deadline, or a token's renewal if sooner."""
        deadline = self.stream.next_deadline()
        if self.tokens is not None and not self.lost:
            renew = self.tokens.next_deadline()
            if renew is not None:
                deadline = renew if deadline is None else min(deadline, renew)
        return deadline

    def handle_timer(self, now: float) -> list[a.Event]:
        """Call at (or after) :meth:`next_deadline`: the engine's timers, the tokens'
        renewals."""
        events = super().handle_timer(now)
        tokens = self.tokens
        if tokens is not None and not self.lost and not self.gone:
            renew = tokens.next_deadline()
            if renew is not None and now >= renew:
                tokens.handle_timer(now)
                self._changed()
        return events

    # -- reconnection: what is made again --------------------------------------------------

    def reconnect_with(self, backoff: Backoff, options: ConnectOptions) -> None:
        """Make a client's new connection a reconnecting one (see :func:`client_core`): it
        starts :attr:`lost`, connects on ``backoff``'s schedule, and each engine it makes
        has ``options`` (:func:`client_engine`'s) and the first engine's container-id."""
        self.backoff = backoff
        self._options = options.copy()
        self._options["container_id"] = self.engine.container_id
        self.lost = True

    def _restart_engine(self, now: float) -> None:
        """A new engine opens, begins, and attaches every link the application has again
        (same names, same termini); senders send again what was unsettled, receivers grant
        their credit again. With tokens (:meth:`use_tokens`), only the ``$cbs`` links
        first: the others once the tokens are put again (:meth:`_attach_deferred`)."""
        assert self.backoff is not None
        parsed, engine, stream = client_engine(self.backoff.url, **self._options)
        self.engine, self.stream = engine, stream
        self.default_address = self.default_address or parsed.address
        self._session = None
        engine.open(now=now)
        tokens = self.tokens
        if tokens is not None:
            tokens.restarted(now + tokens.wall_offset)
        for link, core in list(self._links.items()):
            del self._links[link]
            if tokens is not None and tokens.pending() and not tokens.owns(core):
                self._deferred.append((link, core))
            else:
                self._attach_again(link, core)

    def _attach_again(self, link: a.Link, core: LinkCore) -> None:
        """Attach ``link`` again on the new engine, as it was (its core's new link)."""
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
            new = session.attach_receiver(
                link.name,
                source=link.source,
                target=link.target,
                max_message_size=link.max_message_size,
            )
        core.link = new
        self._links[new] = core

    def _attach_deferred(self) -> None:
        """The tokens are put again after a reconnection: the other links attach."""
        deferred, self._deferred = self._deferred, []
        for link, core in deferred:
            self._attach_again(link, core)

    def _summary(self) -> str:
        return f"attaching {len(self._links)} links again"

    def _on_lost(self) -> None:
        if self.tokens is not None:
            self.tokens.connection_lost()
        for link, core in self._deferred:  # (lost again before they were attached)
            self._links[link] = core
        self._deferred.clear()
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
                core.link_detached(None, "the link was closed")  # closing: that is done
                del self._links[link]
            else:
                core.connection_lost()

    # -- commands ------------------------------------------------------------------------------

    def open(self, now: float) -> None:
        """Client: send the header and open (pipelined with what follows)."""
        self.engine.open(now=now)
        self._changed()

    def close(self, error: Error | None = None) -> None:  # type: ignore[override]
        """Close the connection; :attr:`ended` is done when the peer has answered."""
        super().close(error)

    def changed(self) -> None:
        """Something an application may wait for changed, or bytes wait to go out: the
        adapter is told (``notify``). What the links and deliveries call after they acted on
        the engine."""
        self._changed()

    def drop_link(self, link: a.Link) -> None:
        """Forget ``link`` (closed while the connection is lost): it is not made again."""
        self._links.pop(link, None)

    def _close_engine(self, reply: object) -> None:
        assert reply is None or isinstance(reply, Error)
        self.engine.close(reply)

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
        filters: Filters | None = None,
        selector: str | None = None,
        browse: bool = False,
        capabilities: tuple[str, ...] = (),
        max_message_size: int | None = None,
        target: str | None = None,
    ) -> ReceiverCore:
        """Attach a receiving link from ``address`` (or, ``dynamic``, from a node the peer
        makes: its address is known once attached), with ``filters`` as its source's
        filter-set (core spec 3.5.8) if given, and ``selector`` (a JMS message selector)
        added to it as the ``apache.org:selector-filter:string`` filter under the key
        ``jms-selector``. ``browse``: the source's distribution-mode is ``copy`` (core spec
        3.5.3): the messages are read, not taken, and stay on the node for others.
        ``capabilities``: the source's (3.5.3), such as ``rabbitmq:volatile-queue`` with
        ``dynamic`` for a direct reply-to address (RabbitMQ's, and the reference broker's);
        ``max_message_size``: the largest message, in bytes, the receiver takes (its
        attach's max-message-size, core spec 2.7.3; None: no limit); a sender with a larger
        one detaches the link with ``amqp:link:message-size-exceeded``. ``target``: the
        address of the link's target (where replies sent to it come, such as ``$cbs``'s)."""
        self.check()
        if credit < 1:
            raise ValueError("a receiver's credit is at least 1")
        if selector is not None:
            filters = {**(filters or {}), SELECTOR_KEY: a.Described(SELECTOR_FILTER, selector)}
        wanted = tuple(Symbol(c) for c in capabilities) or None
        if dynamic:
            source = a.Source(address=None, dynamic=True, capabilities=wanted)
        else:
            source = a.Source(
                address=address or self.default_address,
                filter=filters,
                distribution_mode=BROWSE if browse else None,
                capabilities=wanted,
            )
        link = self.session().attach_receiver(
            name or self._name("receiver"),
            source=source,
            target=None if target is None else a.Target(address=target),
            max_message_size=max_message_size,
        )
        core = ReceiverCore(self, link, credit, auto_accept)
        self._links[link] = core
        self._changed()
        return core

    def declare_ready(self) -> bool:
        """The control link is attached and has credit for a declare or discharge. Raises
        :class:`TransactionError`, once, if the coordinator refused the control link (see
        :meth:`_controller_ended`): a later call attaches again."""
        self.check()
        refusal, self._coordinator_refusal = self._coordinator_refusal, None
        if refusal is not None:
            raise refusal
        if self.lost:
            return False
        controller = self._controller
        if controller is None:
            controller = self._controller = self.session().attach_controller(self._name("txn"))
            core = LinkCore(self, controller)
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

    def _handle(self, events: list[a.Event]) -> list[a.Event]:
        for event in events:
            self._on_event(event)
        if self._refusals:
            self._refuse_links()
        if self.tokens is not None:
            self.tokens.flush()
            if self._deferred and not self.tokens.pending():
                self._attach_deferred()
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
            core.link_detached(None)
            if link is self._controller:
                self._controller_ended(core)
            if link.state is a.LinkState.ATTACHED and not self.gone:
                link.detach(closed=True)

    def _on_event(self, event: a.Event) -> None:
        handler = _EVENT_HANDLERS.get(type(event))
        if handler is None:
            handler = _handler_for(type(event))
        handler(self, event)

    # -- the events, each to its handler (_EVENT_HANDLERS) --------------------------------------

    def _on_update(self, event: a.events.DeliveryUpdated) -> None:
        core = self._links.get(event.link)
        if isinstance(core, SenderCore):
            core.delivery_updated(event.delivery, event.state)
        server = self._server_links.get(event.link)
        if isinstance(server, OutgoingLink) and server.on_outcome is not None:
            server.on_outcome(event.delivery, event.state)

    def _on_drained(self, event: a.events.DrainCompleted) -> None:
        core = self._links.get(event.link)
        if isinstance(core, ReceiverCore):
            core.drain_completed()

    def _on_opened(self, event: a.events.ConnectionOpened) -> None:
        if not self.engine.client:
            self._answer_open()
        if self.backoff is not None:
            self._reopened(self.backoff)
        self.opened.set(None)

    def _on_authenticated(self, event: a.events.Authenticated) -> None:
        self.sasl_identity, self.sasl_mechanism = event.identity, event.mechanism
        self.authenticated = True

    def _on_tls(self, event: a.security.tls.TLSEstablished) -> None:
        self.tls = event

    def _on_session_begun(self, event: a.events.SessionBegun) -> None:
        if event.session.state is a.SessionState.BEGIN_RCVD:
            event.session.begin()

    def _on_link_attached(self, event: a.events.LinkAttached) -> None:
        self._on_attach(event.link, event.remote)

    def _on_link_detached(self, event: a.events.LinkDetached) -> None:
        self._on_detach(event.link, event.error, event=event)

    def _on_session_ended(self, event: a.events.SessionEnded) -> None:
        for link in event.session.links:
            self._on_detach(link, event.error, "the session ended", event=event)
        if event.session is self._session:
            self._session = None

    def _on_declare_request(self, event: a.engine.amqp10.transactions.DeclareRequested) -> None:
        event.request.declare()

    def _on_discharge_requested(
        self, event: a.engine.amqp10.transactions.DischargeRequested
    ) -> None:
        self._on_discharge_request(event.request)

    def _on_closed(self, event: a.events.ConnectionClosed) -> None:
        if event.error is not None:
            forced = event.error.condition == "amqp:connection:forced"
            self._fail(
                ConnectionClosedError(
                    "the peer closed the connection", event.error, retryable=forced, event=event
                )
            )
        elif not self._closing:
            # A close without an error is the peer's choice (a planned restart, an
            # operator): a reconnecting connection comes back.
            self._fail(
                ConnectionClosedError("the peer closed the connection", retryable=True, event=event)
            )

    def _on_idle_timed_out(self, event: a.events.IdleTimedOut) -> None:
        self._fail(
            ConnectionClosedError(
                "the peer stopped answering (idle time-out)", retryable=True, event=event
            )
        )

    def _on_authentication_failed(self, event: a.events.AuthenticationFailed) -> None:
        self._fail(AuthenticationError(authentication_failure(event, self.url), event=event))

    def _on_protocol_error(self, event: a.events.ProtocolError) -> None:
        if event.scope == "connection":
            self._fail(
                ConnectionClosedError("the peer broke the protocol", event.error, event=event)
            )

    def _on_without_sasl(self, event: a.events.PeerWithoutSASL) -> None:
        if self.engine.client:
            self._fail(PeerWithoutSASLError(without_sasl_failure(self.url), event=event))
        else:
            refused_without_sasl(self.peer)
            self._fail(
                ConnectionClosedError("the peer came without SASL, which we require", event=event)
            )

    def _on_unsupported(self, event: a.events.UnsupportedProtocol) -> None:
        self._fail(ConnectionClosedError(f"the peer speaks {event.version_name}", event=event))

    def _on_layer_failed(self, event: LayerFailed) -> None:
        self._fail(ConnectionClosedError(f"{event.layer} failed: {event.error}", event=event))

    def _on_tls_mismatch(self, event: a.security.tls.TLSHeaderMismatch) -> None:
        self._fail(
            ConnectionClosedError(f"TLS refused: the peer speaks {event.version_name}", event=event)
        )
        self._on_ended(event)

    def transport_failed(self, error: BaseException, now: float) -> None:
        """(A reset before the open: the server closed without reading our header, as a
        server that refuses connections may; said as such, see :func:`refused_before_open`.)"""
        if (
            _is_reset(error)
            and self.engine.client
            and not (self.opened.done() or self._closing or self.lost or self.gone)
        ):
            self._fail(ConnectionClosedError(refused_before_open(self), retryable=True))
        super().transport_failed(error, now)

    def _on_connection_ended(self, event: a.events.ConnectionEnded) -> None:
        if self.engine.client and not self.opened.done() and not self._closing:
            self._fail(
                ConnectionClosedError(refused_before_open(self), retryable=True, event=event)
            )
        self._on_ended(event)

    def _on_other(self, event: a.Event) -> None:
        """An event the core has nothing to do with (the application may)."""

    def _on_ended(self, event: a.Event) -> None:
        self._ended(event)

    def _on_end(self, error: ClientError) -> None:
        for link, core in self._deferred:  # (they fail as the others do)
            self._links[link] = core
        self._deferred.clear()
        for link, core in list(self._links.items()):
            core.link_detached(None if self.error is None else self.error.error, str(error))
            if self.error is not None:
                core.error = error
            del self._links[link]
        for txn in self._transactions.values():
            txn.declared.fail(error)
            txn.discharged.fail(error)
        for server_link in self._server_links.values():
            _server_link_ended(server_link)
        self._server_links.clear()

    def _answer_open(self) -> None:
        """A server's answer to the peer's open: ours, after the application's
        ``on_connection`` (and a close at once if it refused)."""
        incoming = self.incoming = IncomingConnection(self, self.peer)
        if self.on_connection is not None:
            self.on_connection(incoming)
        self.engine.open()
        if incoming.refused is not None:
            self.close(incoming.refused)

    def _on_attach(self, link: a.Link, remote: a.definitions.amqp10.performatives.Attach) -> None:
        core = self._links.get(link)
        if core is not None:
            terminus = remote.source if isinstance(link, a.Receiver) else remote.target
            if terminus is not None:
                core.link_attached(remote)
            else:  # a refusal (2.6.3): its detach, with the reason, should follow
                core.refused = True
                self._refusals.append(link)
            return
        if link.state is not a.LinkState.ATTACH_RCVD:
            return
        if isinstance(link, a.engine.amqp10.transactions.CoordinatorLink):
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

    def _on_detach(
        self, link: a.Link, error: Error | None, reason: str = "", *, event: a.Event | None = None
    ) -> None:
        core = self._links.pop(link, None)
        if core is not None:
            core.link_detached(error, reason or "the link was detached", event=event)
            if link is self._controller:
                self._controller_ended(core)
        server = self._server_links.pop(link, None)
        if server is not None:
            _server_link_ended(server)

    def _controller_ended(self, core: LinkCore) -> None:
        """Our control link ended: refused, detached or its session ended. Its transactions
        end by the engine's events. If it ended before it was ever attached, the
        coordinator refused it (core spec 4.2; RabbitMQ 3.10, which has no transactions,
        ends the session with ``amqp:not-implemented``): that is the peer's answer, not a
        loss to recover from, so the declare waiting for the link fails with the peer's
        condition (:meth:`declare_ready`) rather than attaching again and again."""
        self._controller = None
        if core.attached.done() or self.gone:
            return
        cause = core.error
        description = "the peer refused the link to the transaction coordinator"
        if cause is not None and cause.error is None and not core.refused:
            description += f" ({cause})"  # how: "the session ended"
        self._coordinator_refusal = TransactionError(
            description,
            None if cause is None else cause.error,
            event=None if cause is None else cause.event,
        )

    def _on_credit(self, event: a.events.CreditChanged) -> None:
        link = event.link
        if isinstance(link, a.Sender) and link.drain:
            server = self._server_links.get(link)
            if server is None:
                # A high-level sender keeps no backlog: what waits for credit is the
                # application's, so a drain gives the credit back at once.
                link.drained()
        server = self._server_links.get(link)
        if isinstance(server, OutgoingLink):
            _credit_granted(server)
        core = self._links.get(link)
        if core is not None:
            core.credit_changed(event.available)

    def _on_delivery(self, event: a.events.DeliveryReceived) -> None:
        if not event.complete:
            return
        link, engine_delivery = event.link, event.delivery
        delivery = Delivery(self, link, engine_delivery, event)
        core = self._links.get(link)
        if isinstance(core, ReceiverCore):
            core.delivery_received(delivery)
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
        _deliver(server, delivery)

    def _on_discharge_request(self, request: a.engine.amqp10.transactions.DischargeRequest) -> None:
        posted = request.transaction.posted
        held = [self._held.pop(d) for d in posted if d in self._held]
        request.accept()
        if request.fail:
            return
        for server, delivery in held:
            delivery.link.settle(delivery.engine_delivery, a.Accepted())
            _deliver(server, delivery)

    def _on_declared(
        self,
        event: a.engine.amqp10.transactions.TransactionDeclared
        | a.engine.amqp10.transactions.TransactionDeclareFailed,
    ) -> None:
        txn = self._transactions.get(event.transaction)
        if txn is None:
            return
        if isinstance(event, a.engine.amqp10.transactions.TransactionDeclared):
            txn.declared.set(None)
        else:
            txn.declared.fail(TransactionError("the declare was refused", event.error))
            del self._transactions[event.transaction]

    def _on_discharged(
        self,
        event: a.engine.amqp10.transactions.TransactionDischarged
        | a.engine.amqp10.transactions.TransactionRolledBack,
    ) -> None:
        if isinstance(event, a.engine.amqp10.transactions.TransactionRolledBack) and isinstance(
            event.transaction, a.engine.amqp10.transactions.TransactionRecord
        ):
            for delivery in event.transaction.posted:
                self._held.pop(delivery, None)
            return
        assert isinstance(event.transaction, a.Transaction)
        txn = self._transactions.pop(event.transaction, None)
        if txn is None:
            return
        if isinstance(event, a.engine.amqp10.transactions.TransactionDischarged):
            txn.discharged.set(event.committed)
        else:
            txn.discharged.fail(TransactionError("the transaction was rolled back", event.error))


def _deliver(server: IncomingLink, delivery: Delivery) -> None:
    """A delivery to a server's link: to its application's ``on_delivery``, accepted
    after it with ``auto_accept``, and the link's window of credit granted again once used
    up."""
    if server.on_delivery is not None:
        server.on_delivery(delivery)
    if server.auto_accept and not delivery.settled:
        delivery.accept()
    link = server.link
    if link.state is a.LinkState.ATTACHED and link.link_credit == 0 and server.credit > 0:
        link.flow(server.credit)


def _credit_granted(server: OutgoingLink) -> None:
    """The peer granted a server's sending link credit: its application's ``on_credit``
    sends; a drain then gives back what is left (core spec 2.6.7)."""
    if server.on_credit is not None and server.credit > 0:
        server.on_credit(server)
    if server.link.drain and server.attached:
        server.link.drained()


def _server_link_ended(server: ServerLink) -> None:
    """A server's link went (detached, its session or the connection ended)."""
    if server.on_detach is not None:
        server.on_detach(server)


def _is_reset(error: BaseException | None) -> bool:
    """``error`` is a reset or a broken pipe, or was caused by one (trio wraps them in its
    BrokenResourceError)."""
    for _ in range(4):
        if error is None:
            return False
        if isinstance(error, (ConnectionResetError, BrokenPipeError)):
            return True
        error = error.__cause__ or error.__context__
    return False


def refused_before_open(core: Core) -> str:
    """Why a client's connection ended before the server's open, the server having said
    nothing of it (no close, no SASL outcome): it closed the transport after the protocol
    header, as a server does that refuses connections (a connection limit: our broker's
    ``--max-connections``, RabbitMQ's ``connection_max``), or after the SASL exchange."""
    where = "" if core.url is None else f" at {core.url.host}:{core.url.port}"
    if core.authenticated:
        when = "after the SASL exchange, before its open"
    else:
        when = "after the protocol header, before any authentication"
    return (
        f"the server{where} closed the connection {when}, saying nothing: it may refuse "
        "connections (a connection limit, this client's address) or not serve AMQP 1.0 here"
    )


# -- making cores ------------------------------------------------------------------------------


#: Each event's handler in the core, by the event's type (a subclass of one is handled as
#: that one: see _handler_for).
_EVENT_HANDLERS: dict[type, Callable[[Core, Any], None]] = {
    a.events.DeliveryReceived: Core._on_delivery,
    a.events.DeliveryUpdated: Core._on_update,
    a.events.CreditChanged: Core._on_credit,
    a.events.DrainCompleted: Core._on_drained,
    a.events.ConnectionOpened: Core._on_opened,
    a.events.Authenticated: Core._on_authenticated,
    a.security.tls.TLSEstablished: Core._on_tls,
    a.events.SessionBegun: Core._on_session_begun,
    a.events.LinkAttached: Core._on_link_attached,
    a.events.LinkDetached: Core._on_link_detached,
    a.events.SessionEnded: Core._on_session_ended,
    a.engine.amqp10.transactions.TransactionDeclared: Core._on_declared,
    a.engine.amqp10.transactions.TransactionDeclareFailed: Core._on_declared,
    a.engine.amqp10.transactions.TransactionDischarged: Core._on_discharged,
    a.engine.amqp10.transactions.TransactionRolledBack: Core._on_discharged,
    a.engine.amqp10.transactions.DeclareRequested: Core._on_declare_request,
    a.engine.amqp10.transactions.DischargeRequested: Core._on_discharge_requested,
    a.events.ConnectionClosed: Core._on_closed,
    a.events.IdleTimedOut: Core._on_idle_timed_out,
    a.events.AuthenticationFailed: Core._on_authentication_failed,
    a.events.ProtocolError: Core._on_protocol_error,
    a.events.PeerWithoutSASL: Core._on_without_sasl,
    a.events.UnsupportedProtocol: Core._on_unsupported,
    LayerFailed: Core._on_layer_failed,
    a.security.tls.TLSHeaderMismatch: Core._on_tls_mismatch,
    a.events.ConnectionEnded: Core._on_connection_ended,
}


def _handler_for(kind: type) -> Callable[[Core, Any], None]:
    """The handler of an event type not in the table: that of the nearest class it derives
    from that is, else none; kept in the table."""
    handler = next(
        (_EVENT_HANDLERS[base] for base in kind.__mro__[1:] if base in _EVENT_HANDLERS),
        Core._on_other,
    )
    _EVENT_HANDLERS[kind] = handler
    return handler


def client_core(
    url: str,
    options: ConnectOptions | None = None,
    *,
    reconnect: Reconnect | bool | None = None,
) -> Core:
    """The core of a client connection to ``url`` (``options`` are :func:`client_engine`'s,
    made by :func:`~.engines.connect_options`).
    Without ``reconnect`` its engine is ready: the adapter connects to :attr:`Core.url`.
    With it (``True``: the defaults of :class:`Reconnect`), the core starts :attr:`lost`:
    the adapter connects as :meth:`Core.next_attempt` says, then :meth:`Core.restart`."""
    options = {} if options is None else options
    parsed, engine, stream = client_engine(url, **options)
    core = Core(engine, stream=stream)
    core.url = parsed
    core.proxies = options.get("proxy")
    core.default_address = parsed.address
    if reconnect:
        policy = reconnect if isinstance(reconnect, Reconnect) else Reconnect()
        core.reconnect_with(Backoff(policy, parsed), options)
    return core


def server_core(
    options: ListenOptions,
    *,
    on_link: Callable[[ServerLink], None] | None,
    on_connection: Callable[[IncomingConnection], None] | None,
    peer: object,
) -> Core:
    """The core of one accepted server connection, on the engine (and TLS layer) that
    :func:`server_engine` makes from a :func:`listen`'s ``options``."""
    engine, stream = server_engine(**options)
    return Core(engine, stream=stream, on_link=on_link, on_connection=on_connection, peer=peer)
