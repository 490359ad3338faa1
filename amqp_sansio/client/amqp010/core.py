"""The I/O-free AMQP 0-10 client core that the adapters drive (``connect(url,
protocol="0-10")``).

:class:`Core` owns one engine :class:`~amqp_sansio.engine.amqp010.Connection` in the
client role (or a TLS layer around it) and its sessions (:class:`SessionCore`); it turns
what the application asks into commands and the engine's events into the completion of
what it waits for. A command is done when the peer completes it (0-10 spec,
``session.completed``), with its ``execution.result`` if it has one. The connection's life
(bytes and time in, the end, reconnection) is
:class:`~amqp_sansio.client.lifecycle.CoreBase`'s, shared with the other protocols: after
a loss, each session is resumed on the new connection (0-10 spec, class ``session``,
"attachment": the engine replays what the peer had not completed) while the peer keeps
it, and otherwise attached afresh, its commands not yet completed sent again and its
subscriptions made again.
"""

from __future__ import annotations

import ssl
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any, TypedDict

import amqp_sansio as a
from amqp_sansio.client.lifecycle import CoreBase
from amqp_sansio.client.ops import ClientError, ConnectionClosedError, Op
from amqp_sansio.client.proxy import Proxies
from amqp_sansio.client.reconnect import Backoff, Reconnect
from amqp_sansio.client.url import AMQPURL, URLError, parse_url
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as e
from amqp_sansio.errors import LocalProtocolError
from amqp_sansio.security.stack import ByteLayer, LayerFailed, stack

from .messages import Delivery, SessionError

__all__ = ["ConnectOptions", "Core", "SessionCore", "client_core", "client_engine"]

#: How long a session's state is kept once detached, asked of the peer by default
#: (seconds, ``session.request-timeout``): the window in which a lost connection resumes it.
SESSION_TIMEOUT = 60
#: ``message.flow`` units and ``message.set-flow-mode`` modes (0-10 spec, ``message``).
UNIT_MESSAGE, UNIT_BYTE, MODE_CREDIT = 0, 1, 0
#: No limit on the bytes a subscription may receive (``message.flow`` byte credit).
UNLIMITED = 0xFFFFFFFF


class ConnectOptions(TypedDict, total=False):
    """The options of a 0-10 client connection (:func:`client_engine`)."""

    ssl_context: ssl.SSLContext | None
    allow_insecure_auth: bool
    sasl_mechanisms: Collection[str] | None
    proxy: Proxies | None


class _Sent:
    """A command the peer has not completed: what is sent again on a fresh session."""

    __slots__ = ("body", "command", "header", "op", "result", "sync")

    def __init__(
        self, command: spec.Command, header: Sequence[spec.Struct], body: bytes, sync: bool
    ) -> None:
        self.command, self.header, self.body, self.sync = command, tuple(header), body, sync
        self.op: Op[Any] = Op()
        self.result: Any = None


class SessionCore:
    """One session of a :class:`Core` (0-10 spec, class ``session``), named ``name``,
    its state kept ``timeout`` seconds once detached. Commands given before it is
    attached (or while the connection is lost) go once it is."""

    def __init__(self, core: Core, name: bytes, timeout: int) -> None:
        self.core = core
        self.name = name
        self.timeout = timeout
        self.attached = False
        self.ended: Op[None] = Op()
        self._sent: dict[int, _Sent] = {}
        self._unsent: list[_Sent] = []
        self._subscriptions: dict[str, tuple[spec.MessageSubscribe, int]] = {}
        #: Message credit taken (:meth:`take` with ``refill``) not yet given back.
        self._owed: dict[str, int] = {}
        self._deliveries: dict[str, deque[Delivery]] = {}

    def __repr__(self) -> str:
        return f"<amqp010.SessionCore {self.name!r}>"

    # -- the application's calls -------------------------------------------------------------

    def check(self) -> None:
        """Raise what ended the connection or the session, if either has ended."""
        self.core.check()
        if self.ended.done():
            self.ended.result()
            raise ConnectionClosedError("the session is closed")

    def attached_ready(self) -> bool:
        self.check()
        return self.attached

    def send(
        self,
        command: spec.Command,
        header: Sequence[spec.Struct] = (),
        body: bytes = b"",
        *,
        sync: bool = True,
    ) -> Op[Any]:
        """Send ``command``: the op is done when the peer completes it, with its
        ``execution.result`` (None if it has none); it fails with :class:`SessionError` if
        the peer refuses it. ``sync`` asks for the completion at once."""
        self.check()
        sent = _Sent(command, header, body, sync)
        if self.attached:
            self._send(sent)
        else:
            self._unsent.append(sent)
        self.core.changed()
        return sent.op

    def _send(self, sent: _Sent) -> None:
        engine = self.core.engine
        command_id = engine.send_command(
            self.name, sent.command, header=sent.header, body=sent.body, sync=sent.sync
        )
        self._sent[command_id] = sent

    def subscribe(self, queue: str, destination: str, credit: int, *, accept: bool) -> Op[Any]:
        """Subscribe ``destination`` to ``queue`` (``message.subscribe``) with ``credit``
        messages in credit mode (``message.set-flow-mode``, ``message.flow``; unlimited
        bytes); ``accept``: deliveries wait for :meth:`accept` (explicit accept mode),
        else none is needed."""
        subscribe = spec.MessageSubscribe(
            queue=queue, destination=destination, accept_mode=0 if accept else 1
        )
        self._subscriptions[destination] = (subscribe, credit)
        for command in _subscription(subscribe, credit):
            op = self.send(command, sync=False)
        return op

    def flow(self, destination: str, messages: int) -> None:
        """``messages`` more message credit for ``destination`` (``message.flow``)."""
        if destination in self._subscriptions:
            subscribe, credit = self._subscriptions[destination]
            self._subscriptions[destination] = (subscribe, credit + messages)
        self.send(spec.MessageFlow(destination=destination, unit=UNIT_MESSAGE, value=messages))

    def cancel(self, destination: str) -> Op[Any]:
        """End the subscription ``destination`` (``message.cancel``)."""
        self._subscriptions.pop(destination, None)
        self._owed.pop(destination, None)
        return self.send(spec.MessageCancel(destination=destination))

    def delivery_ready(self, destination: str) -> Callable[[], bool]:
        """A condition: a delivery for ``destination`` waits to be taken."""

        def ready() -> bool:
            if self._deliveries.get(destination):
                return True
            self.check()
            return False

        return ready

    def take(self, destination: str, *, refill: bool = True) -> Delivery:
        """The oldest delivery for ``destination`` (after :meth:`delivery_ready`); with
        ``refill``, a subscription's credit is given back for it (``message.flow``): once
        half the subscription's credit is owed, in one ``message.flow``, so that a
        consumer taking message after message sends a flow a half window, not one a
        message (what is owed keeps at least half the credit with the peer, so deliveries
        never wait on it). A take without ``refill`` gives back at once what earlier
        takes owe."""
        delivery = self._deliveries[destination].popleft()
        subscription = self._subscriptions.get(destination)
        if subscription is not None:
            owed = self._owed.get(destination, 0) + refill
            if owed and (not refill or owed * 2 >= subscription[1]):
                flow = spec.MessageFlow(destination=destination, unit=UNIT_MESSAGE, value=owed)
                self.send(flow, sync=False)
                owed = 0
            self._owed[destination] = owed
        return delivery

    def accept(self, deliveries: Sequence[Delivery]) -> Op[Any]:
        """``message.accept`` of ``deliveries`` (0-10 spec, ``message.accept``): their
        command ids as a sequence-set, each run of consecutive ids one range."""
        ranges: list[tuple[int, int]] = []
        for i in sorted(d.command_id for d in deliveries):
            if ranges and ranges[-1][1] + 1 == i:
                ranges[-1] = (ranges[-1][0], i)
            else:
                ranges.append((i, i))
        return self.send(spec.MessageAccept(transfers=tuple(ranges)))

    def close(self) -> None:
        """End the session: detached, its state not kept (``session.request-timeout`` 0)."""
        if self.attached and not self.core.lost:
            self.core.engine.detach(self.name, keep=False)
        else:
            self.end(None)
        self.core.changed()

    # -- the core's (its events) ---------------------------------------------------------------

    def start(self) -> None:
        """Attach the session on the (new) connection: resumed if kept, else fresh."""
        engine = self.core.engine
        try:
            engine.resume(self.name)
        except LocalProtocolError:
            engine.attach(self.name, timeout=self.timeout)

    def on_attached(self, resumed: bool) -> None:
        self.attached = True
        if not resumed:  # a fresh session: what the old one had not done, again
            again = [s for _, s in sorted(self._sent.items())]
            self._sent.clear()
            self._owed.clear()  # (each subscription made again with its whole credit)
            for subscribe, credit in self._subscriptions.values():
                for command in _subscription(subscribe, credit):
                    self._send(_Sent(command, (), b"", False))
            for sent in again:
                self._send(sent)
        unsent, self._unsent = self._unsent, []
        for sent in unsent:
            self._send(sent)

    def on_lost(self) -> None:
        self.attached = False

    def _on_command(self, event: e.CommandReceived) -> None:
        command = event.command
        if isinstance(command, spec.MessageTransfer):
            destination = command.destination or ""
            delivery = Delivery(event.command_id, destination, event.header, event.body)
            self._deliveries.setdefault(destination, deque()).append(delivery)
        self.core.engine.complete(self.name, event.command_id)

    def _on_completed(self, event: e.CommandsCompleted) -> None:
        for command_id in event.command_ids:
            sent = self._sent.pop(command_id, None)
            if sent is not None:
                sent.op.set(sent.result)

    def _on_result(self, event: e.ResultReceived) -> None:
        sent = self._sent.get(event.command_id) if event.command_id is not None else None
        if sent is not None:
            sent.result = event.value

    def _on_exception(self, event: e.ExecutionExceptionReceived) -> None:
        exc = event.exception
        error = SessionError(
            f"the peer refused command {exc.command_id}: {exc.description or exc.error_code}",
            error_code=exc.error_code,
            command_id=exc.command_id,
        )
        self.end(error)

    def _on_detached(self, event: e.SessionDetached) -> None:
        """Detached: by our close or the peer (the session ends; a ``detach-code`` other
        than ``normal`` is its error), or under a connection that ended (the core decides:
        made again, or ended with the connection's error)."""
        self.attached = False
        if self.core.engine.closed:
            return
        if event.code:
            self.end(ConnectionClosedError(f"the peer detached the session: {event.code}"))
        else:
            self.end(None)

    def end(self, error: ClientError | None) -> None:
        """The session is over (``error``: why, None for a normal end): what waits on it
        fails, and the core forgets it. Once only."""
        if self.ended.done():
            return
        self.attached = False
        self.core.sessions.pop(self.name, None)
        failure = error or ConnectionClosedError("the session is closed")
        for sent in [*self._sent.values(), *self._unsent]:
            sent.op.fail(failure)
        self._sent.clear()
        self._unsent.clear()
        if error is None:
            self.ended.set(None)
        else:
            self.ended.fail(error)


def _subscription(subscribe: spec.MessageSubscribe, credit: int) -> list[spec.Command]:
    destination = subscribe.destination
    return [
        subscribe,
        spec.MessageSetFlowMode(destination=destination, flow_mode=MODE_CREDIT),
        spec.MessageFlow(destination=destination, unit=UNIT_BYTE, value=UNLIMITED),
        spec.MessageFlow(destination=destination, unit=UNIT_MESSAGE, value=credit),
    ]


class Core(CoreBase[e.Connection]):
    """One AMQP 0-10 client connection for the high-level API (see the module's
    docstring)."""

    closed_error = ConnectionClosedError

    def __init__(
        self, engine: e.Connection, stream: ByteLayer, notify: Callable[[], None] | None = None
    ) -> None:
        super().__init__(engine, stream, notify)
        #: The sessions, by name.
        self.sessions: dict[bytes, SessionCore] = {}
        self._options: ConnectOptions = {}
        #: The server's ``connection.open-ok`` as the engine reported it.
        self.opened_event: e.ConnectionOpened | None = None

    def __repr__(self) -> str:
        return f"<amqp010.Core {self.url}>"

    def changed(self) -> None:
        """Something changed: the adapter is told (it writes, wakes its waits)."""
        self._changed()

    def open(self, now: float) -> None:
        """Send the protocol header; the negotiation follows as the server answers."""
        self.engine.start(now)
        self._changed()

    def session(self, name: str | bytes, timeout: int = SESSION_TIMEOUT) -> SessionCore:
        """A new session ``name``, attached once the connection is open (again)."""
        self.check()
        key = name.encode() if isinstance(name, str) else bytes(name)
        if key in self.sessions:
            raise LocalProtocolError(f"the session {key!r} is open already")
        session = self.sessions[key] = SessionCore(self, key, timeout)
        if self.opened.done() and not self.lost:
            session.start()
        self._changed()
        return session

    def _close_engine(self, reply: object) -> None:
        self.engine.close()

    # -- reconnection ------------------------------------------------------------------------

    def _restart_engine(self, now: float) -> None:
        assert self.backoff is not None
        _, engine, stream = client_engine(
            self.backoff.url.unredacted(), self._options, sessions=self.engine.store
        )
        self.engine, self.stream = engine, stream
        engine.start(now)

    def _summary(self) -> str:
        return f"resuming {len(self.sessions)} sessions"

    def _on_lost(self) -> None:
        for session in self.sessions.values():
            session.on_lost()

    def _on_end(self, error: ClientError) -> None:
        for session in list(self.sessions.values()):
            session.end(error if self.error is not None else None)

    # -- events ------------------------------------------------------------------------------

    def _handle(self, events: list[a.Event]) -> list[a.Event]:
        for event in events:
            if isinstance(event, LayerFailed):  # (TLS's, the proxy tunnel's)
                why = f"{event.layer} failed: {event.error}"
                self._fail(ConnectionClosedError(why, event=event))
                continue
            handler = _EVENTS.get(type(event))
            if handler is not None:
                handler(self, event)
        if self.engine.closed and not self.ended.done() and not self.lost:
            self._ended(None)
        self._changed()
        return []

    def _on_opened(self, event: e.ConnectionOpened) -> None:
        self.opened_event = event
        if self.backoff is not None:
            self._reopened(self.backoff)
        self.opened.set(None)
        for session in list(self.sessions.values()):
            session.start()

    def _on_session(self, event: Any) -> None:
        session = self.sessions.get(event.session)
        if session is not None:
            _SESSION_EVENTS[type(event)](session, event)

    def _on_closed(self, event: e.ConnectionClosed) -> None:
        """The close that ended the connection: ours answered; the stream's end or the
        peer's silence (retried); the peer's close (retried when ``connection-forced``)."""
        if self._closing and not event.by_peer:
            return
        code = event.reply_code
        description = f"the connection closed: {code} {event.reply_text}".rstrip()
        retryable = self._transport_closed or code == e.CloseCode.CONNECTION_FORCED
        if not self.opened.done() and event.by_peer and not self._transport_closed:
            retryable = False
        self._fail(ConnectionClosedError(description, retryable=retryable, event=event))


_SESSION_EVENTS: dict[type, Callable[[SessionCore, Any], None]] = {
    e.SessionAttached: lambda s, ev: s.on_attached(False),
    e.SessionResumed: lambda s, ev: s.on_attached(True),
    e.SessionDetached: SessionCore._on_detached,
    e.CommandReceived: SessionCore._on_command,
    e.CommandsCompleted: SessionCore._on_completed,
    e.ResultReceived: SessionCore._on_result,
    e.ExecutionExceptionReceived: SessionCore._on_exception,
}
_EVENTS: dict[type, Callable[[Core, Any], None]] = {
    e.ConnectionOpened: Core._on_opened,
    e.ConnectionClosed: Core._on_closed,
    **{kind: Core._on_session for kind in _SESSION_EVENTS},
}


def client_engine(
    url: str, options: ConnectOptions | None = None, *, sessions: e.SessionStore | None = None
) -> tuple[AMQPURL, e.Connection, ByteLayer]:
    """The engine (and TLS layer, for amqps or an ``ssl_context``) of a client connection
    to ``url`` (``amqp://[user:password@]host[:port][/vhost]``): ``(url, connection,
    stream)``. The URL's credentials go by PLAIN (or what ``sasl_mechanisms`` allows),
    over a plain connection only to a loopback host or with ``allow_insecure_auth``
    (:meth:`~amqp_sansio.client.url.AMQPURL.check_credentials`); without them, ANONYMOUS.
    ``sessions``: the store of detached sessions, shared by a connection's successors so
    that they resume its sessions. ``proxy``: the HTTP proxy of each URL
    (:class:`~amqp_sansio.client.proxy.Proxies`), tunnelled to outside TLS."""
    options = options or {}
    parsed = parse_url(url)
    if parsed.websocket_path is not None:  # (the binding is AMQP 1.0's)
        raise URLError(f"AMQP 0-10 has no WebSocket binding: use amqp:// or amqps://, not {url}")
    credentials = parsed.username is not None or parsed.password is not None
    context = options.get("ssl_context")
    if credentials:
        parsed.check_credentials(allow_insecure_auth=options.get("allow_insecure_auth", False))
        names: Sequence[str] = ("PLAIN",)
    else:
        names = ("ANONYMOUS",)
    allowed = options.get("sasl_mechanisms")
    if allowed is not None:
        names = tuple(allowed)
    engine = e.Connection(
        e.Role.CLIENT,
        virtual_host=parsed.address or "",
        mechanism=names,
        username=parsed.username or "",
        password=parsed.password or "",
        sessions=sessions,
    )
    if parsed.tls and context is None:
        context = a.security.tls.client_context()
    proxies = options.get("proxy")
    stream = stack(
        engine,
        role="client",
        tls=context,
        server_hostname=parsed.host,
        proxy=None if proxies is None else proxies.options(parsed),
    )
    return parsed, engine, stream


def client_core(
    url: str, options: ConnectOptions | None = None, *, reconnect: Reconnect | bool | None = None
) -> Core:
    """The core of a client connection to ``url``. Without ``reconnect`` its engine is
    ready: the adapter connects to :attr:`Core.url`. With it (``True``: the defaults of
    :class:`~amqp_sansio.client.reconnect.Reconnect`) the core starts
    :attr:`~amqp_sansio.client.lifecycle.CoreBase.lost`, and connects as
    :meth:`~amqp_sansio.client.lifecycle.CoreBase.next_attempt` says."""
    options = {} if options is None else options
    parsed, engine, stream = client_engine(url, options)
    core = Core(engine, stream)
    core.url = parsed
    core.proxies = options.get("proxy")
    core._options = dict(options)  # type: ignore[assignment]
    if reconnect:
        policy = reconnect if isinstance(reconnect, Reconnect) else Reconnect()
        core.backoff = Backoff(policy, parsed)
        core.lost = True
    return core
