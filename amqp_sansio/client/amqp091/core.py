"""The I/O-free AMQP 0-9-1 client core that the adapters drive (``connect(url,
protocol="0-9-1")`` in :mod:`~amqp_sansio.adapters.sockets`, :mod:`~amqp_sansio.adapters.aio`
and :mod:`~amqp_sansio.adapters.trio_adapter`).

:class:`Core` owns one engine :class:`~amqp_sansio.engine.amqp091.Connection` in the client
role (or a :class:`~amqp_sansio.TLSLayer` around it) and turns what the application asks
into methods and the engine's events into the completion of what it waits for. The
connection's life (bytes and time in, the end, reconnection) is
:class:`~amqp_sansio.client.lifecycle.CoreBase`'s, shared with the AMQP 1.0 core.

Its channels are :mod:`.channels`' :class:`~.channels.ChannelCore`.
"""

from __future__ import annotations

import ssl
from collections import deque
from collections.abc import Callable, Collection
from typing import Any, TypedDict, cast

import attrs

import amqp_sansio as a
import amqp_sansio.engine.amqp091 as e
from amqp_sansio.client.engines import Stream
from amqp_sansio.client.lifecycle import CoreBase
from amqp_sansio.client.ops import ClientError, Op
from amqp_sansio.client.proxy import Proxies
from amqp_sansio.client.reconnect import Backoff, Reconnect
from amqp_sansio.client.url import AMQPURL
from amqp_sansio.codec.amqp091 import FieldTable
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.security.stack import LayerFailed, stack

from . import trace
from .channels import ChannelCore
from .ops import AuthenticationError, ChannelClosedError, ConnectionClosedError
from .url import URL, parse_url

__all__ = [
    "DEFAULT_MECHANISMS",
    "MECHANISMS",
    "ConnectOptions",
    "Core",
    "client_core",
    "client_engine",
    "mechanisms",
]

#: The SASL mechanisms a 0-9-1 client logs in with, strongest first: the AMQP 1.0 client's
#: order (:data:`~amqp_sansio.security.mechanisms.MECHANISM_PREFERENCE`) for the ones both
#: protocols carry, AMQPLAIN (0-8's, which RabbitMQ still offers) after PLAIN.
MECHANISMS = ("EXTERNAL", "PLAIN", "AMQPLAIN")
#: Without ``sasl_mechanisms``: the URL's credentials (or guest/guest) by PLAIN, or by
#: AMQPLAIN where the server offers only that. EXTERNAL is the caller's choice: it needs a
#: client certificate in ``ssl_context``, which an SSL context does not tell.
DEFAULT_MECHANISMS = ("PLAIN", "AMQPLAIN")

#: The reply codes of a peer's ``connection.close`` after which a reconnecting connection
#: tries again: a planned close (200) and ``connection-forced`` (320: a broker shutting
#: down, or an operator closing the connection).
RETRYABLE = frozenset({spec.ReplyCode.REPLY_SUCCESS, spec.ReplyCode.CONNECTION_FORCED})


class ConnectOptions(TypedDict, total=False):
    """The options of every adapter's ``connect(url, protocol="0-9-1")`` that make the
    engine (:func:`client_engine`'s)."""

    ssl_context: ssl.SSLContext | None
    allow_insecure_auth: bool
    heartbeat: int | None
    frame_max: int | None
    channel_max: int | None
    client_properties: FieldTable | None
    sasl_mechanisms: Collection[str] | None
    proxy: Proxies | None


def mechanisms(
    sasl_mechanisms: Collection[str] | None, *, tls: bool, credentials: bool
) -> tuple[str, ...]:
    """The mechanisms a client may log in with, strongest first (:data:`MECHANISMS`'
    order, whatever the caller's; the engine uses the first the server offers):
    ``sasl_mechanisms`` restricts the choice and one name forces it, as for AMQP 1.0;
    None is :data:`DEFAULT_MECHANISMS`. Raises :class:`ValueError` for a name 0-9-1 does
    not carry, EXTERNAL without TLS (it logs in with the TLS client certificate) or with
    credentials in the URL and no other mechanism to send them with."""
    if sasl_mechanisms is None:
        return DEFAULT_MECHANISMS
    if isinstance(sasl_mechanisms, str):
        raise ValueError(f"sasl_mechanisms is a collection of names, not {sasl_mechanisms!r}")
    wanted = {str(name).upper() for name in sasl_mechanisms}
    unknown = sorted(wanted.difference(MECHANISMS))
    if unknown or not wanted:
        raise ValueError(
            f"sasl_mechanisms for AMQP 0-9-1 are among {', '.join(MECHANISMS)}, "
            f"not {', '.join(unknown) or 'none'}"
        )
    if "EXTERNAL" in wanted and not tls:
        raise ValueError(
            "EXTERNAL logs in with a TLS client certificate: use amqps:// or ssl_context"
        )
    if wanted == {"EXTERNAL"} and credentials:
        raise ValueError("EXTERNAL sends no password: remove the credentials from the URL")
    return tuple(name for name in MECHANISMS if name in wanted)


def client_engine(
    url: str | URL, options: ConnectOptions | None = None
) -> tuple[URL, e.Connection, Stream]:
    """The engine (and TLS layer, for amqps or an ``ssl_context``) of a client connection
    to ``url``: ``(url, connection, stream)``. Credentials (the URL's: a user needs a
    password; without either, RabbitMQ's ``guest``/``guest``) go with SASL PLAIN (or
    AMQPLAIN, or what ``sasl_mechanisms`` allows: :func:`mechanisms`), which
    crosses a plain TCP connection only to a loopback host or with
    ``allow_insecure_auth``: the rule of the AMQP 1.0 client,
    :meth:`~amqp_sansio.client.amqp10.AMQPURL.check_credentials`, applied to the credentials sent
    (:class:`~amqp_sansio.client.amqp10.InsecureCredentialsError` before anything is sent). TLS
    verifies the server's certificate and host name (the default
    :func:`~amqp_sansio.security.tls.client_context`). The URL's query parameters override
    ``heartbeat``, ``frame_max`` and ``channel_max``. ``proxy``: the HTTP proxy of each URL
    (:class:`~amqp_sansio.client.proxy.Proxies`), tunnelled to outside TLS."""
    options = options or {}
    parsed = parse_url(url) if isinstance(url, str) else url
    credentials = parsed.username is not None or parsed.password is not None
    context = options.get("ssl_context")
    names = mechanisms(
        options.get("sasl_mechanisms"),
        tls=parsed.tls or context is not None,
        credentials=credentials,
    )
    if not credentials:
        username = password = "guest"  # RabbitMQ's default user
    else:
        username, password = parsed.username or "", parsed.password or ""
    if names != ("EXTERNAL",):  # (EXTERNAL sends no password)
        sent = URL(
            scheme=parsed.scheme,
            host=parsed.host,
            port=parsed.port,
            username=username,
            password=password,
        )
        sent.check_credentials(allow_insecure_auth=options.get("allow_insecure_auth", False))
    tuned: dict[str, int] = {}
    for name in ("heartbeat", "frame_max", "channel_max"):
        value = getattr(parsed, name)
        if value is None:
            value = options.get(name)
        if value is not None:
            tuned[name] = value
    engine = e.Connection(
        e.Role.CLIENT,
        virtual_host=parsed.virtual_host,
        mechanism=names,
        username=None if names == ("EXTERNAL",) else username,
        password=None if names == ("EXTERNAL",) else password,
        client_properties=options.get("client_properties"),
        **tuned,  # type: ignore[arg-type]
    )
    if parsed.tls and context is None:
        context = a.security.tls.client_context()
    stream = stack(
        engine,
        role="client",
        tls=context,
        server_hostname=parsed.host,
        trace=trace.tracer(f"0-9-1>{parsed.host}:{parsed.port}"),
        proxy=None if (proxies := options.get("proxy")) is None else proxies.options(parsed),
    )
    return parsed, engine, stream


# -- the core ----------------------------------------------------------------------------------


class Core(CoreBase[e.Connection]):
    """One AMQP 0-9-1 client connection for the high-level API (see the module's
    docstring)."""

    closed_error = ConnectionClosedError

    def __init__(
        self,
        engine: e.Connection,
        stream: Stream,
        notify: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(engine, stream, notify)
        self._channels: set[ChannelCore] = set()
        self._by_number: dict[int, ChannelCore] = {}
        #: ``connection.blocked``'s reason while the server blocks publishers, else None.
        self.blocked: str | None = None
        #: What TLS established (amqps), and what the server said in ``connection.open``.
        self.tls: a.security.tls.TLSEstablished | None = None
        self.opened_event: e.events.ConnectionOpened | None = None
        self._options: ConnectOptions = {}
        #: ``connection.update-secret`` calls sent, waiting for their ``-ok`` (in order),
        #: and those to send once the connection is open (again).
        self._secret_ops: deque[tuple[Op[None], spec.ConnectionUpdateSecret]] = deque()
        self._secrets_unsent: list[tuple[Op[None], spec.ConnectionUpdateSecret]] = []

    def __repr__(self) -> str:
        url = "" if self.url is None else f" {self.url}"
        return f"<amqp091.Core{url}>"

    # -- commands ------------------------------------------------------------------------------

    def open(self, now: float) -> None:
        """Send the protocol header; the negotiation follows as the server answers."""
        self.engine.start(now)
        self._changed()

    def channel(self) -> ChannelCore:
        """Open a channel (:meth:`ChannelCore.open_ready` says when it is open). While the
        connection is lost, it opens on the next one."""
        self.check()
        channel = ChannelCore(self)
        self._channels.add(channel)
        if self.opened.done() and not self.lost:
            channel._start()
        self._changed()
        return channel

    def update_secret(self, new_secret: str, reason: str) -> Op[None]:
        """``connection.update-secret`` (RabbitMQ's extension, see
        ``amqp-0-9-1-rabbitmq-extensions``): a new password or token for the logged-in
        user, before the old one expires. The op is done at ``update-secret-ok``; a server
        that refuses the secret closes the connection (RabbitMQ: 530 ``NOT_ALLOWED``), which
        fails the op. A ``reconnect=`` connection logs in with the new secret from now on
        (its URLs of the same user). Called while the connection is lost or not yet open,
        or lost before the ``-ok``, the method goes once it is open (again)."""
        self.check()
        op: Op[None] = Op()
        method = spec.ConnectionUpdateSecret(new_secret=new_secret.encode(), reason=reason)
        self._new_secret(new_secret)
        if self.lost or self.engine.state is not e.ConnectionState.OPEN:
            self._secrets_unsent.append((op, method))
        else:
            self._send_secret(op, method)
        self._changed()
        return op

    def _send_secret(self, op: Op[None], method: spec.ConnectionUpdateSecret) -> None:
        self.engine.send_method(0, method)
        self._secret_ops.append((op, method))

    def _new_secret(self, secret: str) -> None:
        """The URLs this connection (and its reconnections) log in with, as the same user
        with ``secret`` (no credentials in a URL is RabbitMQ's ``guest``)."""
        url = self.url
        if url is None:
            return
        user = _user(url)

        def renewed(old: AMQPURL) -> AMQPURL:
            if _user(old) != user:
                return old
            return attrs.evolve(old, username=user, password=secret)

        self.url = renewed(url)
        if self.backoff is not None:
            self.backoff.urls = [renewed(old) for old in self.backoff.urls]

    def _close_engine(self, reply: object) -> None:
        self.engine.close(200, "")

    # -- reconnection --------------------------------------------------------------------------

    def _restart_engine(self, now: float) -> None:
        assert self.backoff is not None
        backoff_url = self.backoff.url
        url = backoff_url if isinstance(backoff_url, URL) else parse_url(backoff_url.unredacted())
        _, engine, stream = client_engine(url, self._options)
        self.engine, self.stream = engine, stream
        self.blocked = None
        engine.start(now)

    def _summary(self) -> str:
        return f"opening {len(self._channels)} channels again"

    def _on_lost(self) -> None:
        self._by_number.clear()
        self._secrets_unsent[:0] = self._secret_ops  # (sent again on the next connection)
        self._secret_ops.clear()
        for channel in self._channels:
            channel._on_lost()

    def _on_end(self, error: ClientError) -> None:
        for channel in list(self._channels):
            channel._end(error if self.error is not None else None)
        self._channels.clear()
        for op, _ in [*self._secret_ops, *self._secrets_unsent]:
            op.fail(error)
        self._secret_ops.clear()
        self._secrets_unsent.clear()

    # -- events --------------------------------------------------------------------------------

    def _handle(self, events: list[a.Event]) -> list[a.Event]:
        engine = self.engine
        for event in events:  # the engine's, and the byte layers'
            if isinstance(event, a.security.tls.TLSEstablished):
                self.tls = event
            elif isinstance(event, LayerFailed):  # (TLS's, the proxy tunnel's)
                why = f"{event.layer} failed: {event.error}"
                self._fail(self.closed_error(why, event=event))
                self._ended(None)
            elif not engine.discarded(event):  # (a close of ours made it moot)
                self._on_event(event)
        if engine.closed and not self.ended.done() and not self.lost:
            self._ended(None)
        self._changed()
        return []

    def _on_event(self, event: object) -> None:
        channel_handler = _CHANNEL_EVENTS.get(type(event))
        if channel_handler is not None:
            number = event.channel  # type: ignore[attr-defined]
            channel = self._by_number.get(number)
            if channel is not None:
                channel_handler(channel, event)
            elif number == 0 and isinstance(event, e.events.MethodReceived):
                self._on_method0(event)
            return
        handler = _CONNECTION_EVENTS.get(type(event))
        if handler is not None:
            handler(self, event)

    def _on_blocked(self, event: e.events.Blocked | e.events.Unblocked) -> None:
        self.blocked = event.reason if isinstance(event, e.events.Blocked) else None

    def _on_opened(self, event: e.events.ConnectionOpened) -> None:
        self.opened_event = event
        if self.backoff is not None:
            self._reopened(self.backoff)
        self.opened.set(None)
        for channel in self._channels:
            channel._start()
        unsent, self._secrets_unsent = self._secrets_unsent, []
        for op, method in unsent:
            self._send_secret(op, method)

    def _on_method0(self, event: e.events.MethodReceived) -> None:
        """A method on channel 0 the engine passes on: ``update-secret-ok``."""
        if isinstance(event.method, spec.ConnectionUpdateSecretOk) and self._secret_ops:
            self._secret_ops.popleft()[0].set(None)

    def _on_channel_closed(self, channel: ChannelCore, event: e.events.ChannelClosed) -> None:
        self._by_number.pop(event.channel)
        self._channels.discard(channel)
        error = None
        if event.by_peer or event.reply_code != spec.ReplyCode.REPLY_SUCCESS:
            error = ChannelClosedError(
                event.reply_code, event.reply_text, event.class_id, event.method_id
            )
        channel._end(error)

    def _on_closed(self, event: e.events.ConnectionClosed) -> None:
        """The ``connection.close`` that ended the connection: the server's (a refused
        login or virtual host ends it for good; 200 and 320 are retried), or the engine's
        (the transport went, or the server stopped answering: retried; the server offers
        none of our mechanisms, or broke the protocol: not)."""
        if self._closing and not event.by_peer:
            return  # our close, answered
        code = event.reply_code
        error: ConnectionClosedError
        if self._transport_closed:  # the stream ended without connection.close
            error = ConnectionClosedError("the connection was lost", retryable=True, event=event)
        elif event.by_peer and not self.opened.done() and code in _REFUSED:
            error = _closed(AuthenticationError, "the server refused the connection", event)
        elif not self.opened.done() and code == spec.ReplyCode.ACCESS_REFUSED:
            error = _closed(AuthenticationError, "no SASL mechanism in common", event)
        elif event.by_peer:
            error = _closed(ConnectionClosedError, "the server closed the connection", event)
            error.retryable = code in RETRYABLE
        elif code in _LOCAL_RETRYABLE:
            error = _closed(ConnectionClosedError, "the server stopped answering", event)
            error.retryable = True
        else:
            error = _closed(ConnectionClosedError, "the server broke the protocol", event)
        self._fail(error)


def _user(url: AMQPURL) -> str:
    """The user a URL logs in as (no credentials: RabbitMQ's ``guest``, as
    :func:`client_engine` sends)."""
    if url.username is None and url.password is None:
        return "guest"
    return url.username or ""


def _on_flow(channel: ChannelCore, event: e.events.FlowChanged) -> None:
    channel.flow_active = event.active


#: The handlers of the events of one channel, by type.
_CHANNEL_EVENTS: dict[type, Callable[[ChannelCore, Any], None]] = {
    e.events.MethodReceived: lambda ch, ev: ch._on_method(ev.method),
    e.events.ContentReceived: lambda ch, ev: ch._on_content(ev.method, ev.properties, ev.body),
    e.events.Confirmed: lambda ch, ev: ch._on_confirmed(ev.delivery_tag, ev.multiple, ev.ack),
    e.events.ChannelOpened: lambda ch, ev: ch._on_opened(),
    e.events.FlowChanged: _on_flow,
    # (a Core's channels have the Core as their owner)
    e.events.ChannelClosed: lambda ch, ev: cast(Core, ch.core)._on_channel_closed(ch, ev),
}
#: The handlers of the connection's events, by type.
_CONNECTION_EVENTS: dict[type, Callable[[Core, Any], None]] = {
    e.events.Blocked: Core._on_blocked,
    e.events.Unblocked: Core._on_blocked,
    e.events.ConnectionOpened: Core._on_opened,
    e.events.ConnectionClosed: Core._on_closed,
}

#: A server's refusal of the login (403) or of the virtual host (530).
_REFUSED = frozenset({spec.ReplyCode.ACCESS_REFUSED, spec.ReplyCode.NOT_ALLOWED})
#: The codes of the engine's own close that a reconnecting connection retries.
_LOCAL_RETRYABLE = frozenset({0, spec.ReplyCode.REPLY_SUCCESS, spec.ReplyCode.CONNECTION_FORCED})


def _closed(
    kind: type[ConnectionClosedError], description: str, event: e.events.ConnectionClosed
) -> ConnectionClosedError:
    return kind(
        description,
        event=event,
        reply_code=event.reply_code,
        reply_text=event.reply_text,
        class_id=event.class_id,
        method_id=event.method_id,
    )


def client_core(
    url: str,
    options: ConnectOptions | None = None,
    *,
    reconnect: Reconnect | bool | None = None,
) -> Core:
    """The core of a client connection to ``url`` (an AMQP 0-9-1 URL, :mod:`.url`). Without
    ``reconnect`` its engine is ready: the adapter connects to :attr:`Core.url`. With it
    (``True``: the defaults of :class:`~amqp_sansio.client.amqp10.Reconnect`) the core starts
    :attr:`~amqp_sansio.client.lifecycle.CoreBase.lost`: the adapter connects as
    :meth:`~amqp_sansio.client.lifecycle.CoreBase.next_attempt` says, then
    :meth:`~amqp_sansio.client.lifecycle.CoreBase.restart`."""
    options = {} if options is None else options
    parsed, engine, stream = client_engine(url, options)
    core = Core(engine, stream)
    core.url = parsed
    core.proxies = options.get("proxy")
    core._options = dict(options)  # type: ignore[assignment]
    if reconnect:
        policy = reconnect if isinstance(reconnect, Reconnect) else Reconnect()
        core.backoff = Backoff(policy, parsed, parse=parse_url)
        core.lost = True
    return core
