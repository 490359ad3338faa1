"""Making engines: the one place where a URL and the options become a client engine (and
TLS layer), and a peer's connection a server's; what to do when the peer has no SASL layer
or refuses ours."""

from __future__ import annotations

import logging
import ssl
import uuid
from collections.abc import Collection, Mapping
from typing import TypedDict, TypeVar, cast

import amqp_sansio as a
from amqp_sansio.sasl import SASLNoMechanismError
from amqp_sansio.security.stack import ByteLayer, stack
from amqp_sansio.security.websocket import WebSocketOptions

from . import trace
from .proxy import Proxies
from .url import AMQPURL, parse_url

__all__ = [
    "ConnectOptions",
    "ListenOptions",
    "Stream",
    "authentication_description",
    "authentication_failure",
    "authentication_hint",
    "client_engine",
    "connect_options",
    "listen_options",
    "refused_without_sasl",
    "server_engine",
    "server_sasl",
    "without_sasl",
    "without_sasl_failure",
]

_log = logging.getLogger(__name__)

OptionsT = TypeVar("OptionsT", bound=Mapping[str, object])


#: The engine's byte interface, which a :class:`~amqp_sansio.Connection`, a
#: :class:`~amqp_sansio.TLSLayer` around one and a frame trace offer: what an adapter drives
#: (the one declaration is :class:`~amqp_sansio.security.layers.ByteLayer`).
Stream = ByteLayer


class ConnectOptions(TypedDict, total=False):
    """The options of every adapter's ``connect`` that make its engine (those of
    :func:`client_engine`); :func:`connect_options` builds them."""

    container_id: str | None
    idle_timeout: float | None
    ssl_context: ssl.SSLContext | None
    allow_insecure_auth: bool
    sasl_mechanisms: Collection[str] | None
    sasl: bool | None
    proxy: Proxies | None


class ListenOptions(TypedDict):
    """The options of every adapter's ``listen`` that make each accepted connection's engine
    (those of :func:`server_engine`); :func:`listen_options` builds them."""

    container_id: str
    idle_timeout: float | None
    ssl_context: ssl.SSLContext | None
    sasl: a.sasl.ServerAuthenticator | bool | None
    allow_insecure_auth: bool
    websocket: WebSocketOptions | None


def connect_options(
    *,
    container_id: str | None,
    idle_timeout: float | None,
    ssl_context: ssl.SSLContext | None,
    allow_insecure_auth: bool,
    sasl_mechanisms: Collection[str] | None,
    sasl: bool | None,
    proxy: Proxies | None = None,
) -> ConnectOptions:
    """The engine options of a ``connect`` call, the same in every adapter."""
    return {
        "proxy": proxy,
        "container_id": container_id,
        "idle_timeout": idle_timeout,
        "ssl_context": ssl_context,
        "allow_insecure_auth": allow_insecure_auth,
        "sasl_mechanisms": sasl_mechanisms,
        "sasl": sasl,
    }


def listen_options(
    *,
    container_id: str,
    idle_timeout: float | None,
    ssl_context: ssl.SSLContext | None,
    sasl: a.sasl.ServerAuthenticator | bool | None,
    allow_insecure_auth: bool,
    websocket: WebSocketOptions | None = None,
) -> ListenOptions:
    """The engine options of a ``listen`` call, the same in every adapter."""
    return {
        "container_id": container_id,
        "idle_timeout": idle_timeout,
        "ssl_context": ssl_context,
        "sasl": sasl,
        "allow_insecure_auth": allow_insecure_auth,
        "websocket": websocket,
    }


# -- making engines ----------------------------------------------------------------------------


def client_engine(
    url: str | AMQPURL,
    *,
    container_id: str | None = None,
    idle_timeout: float | None = None,
    ssl_context: ssl.SSLContext | None = None,
    allow_insecure_auth: bool = False,
    sasl_mechanisms: Collection[str] | None = None,
    max_frame_size: int = 65536,
    hostname: str | None = None,
    sasl: bool | None = None,
    cafile: str | None = None,
    verify: bool = True,
    proxy: Proxies | None = None,
) -> tuple[AMQPURL, a.Connection, Stream]:
    """The engine (and TLS layer, for amqps and wss, and WebSocket layer, for ws and wss)
    for a client connection to ``url``: returns
    ``(url, connection, stream)``. The one place where a URL and the options become a
    client engine, for the adapters and the command line alike.

    SASL (see :doc:`defaults`): ``sasl=None`` (the default) and ``True`` use SASL, with the
    URL's credentials, or ANONYMOUS without them (what Qpid Proton sends by default, and
    what most brokers ask for); ``False`` does not (a :class:`ValueError` with credentials).
    The two differ in what the adapters do when the server turns out to have no SASL layer
    (:class:`PeerWithoutSASLError`): with None and no credentials or ``sasl_mechanisms``,
    they connect again once without SASL (:func:`without_sasl`). Credentials go through
    PLAIN over an unencrypted transport only to a loopback host, or with ``allow_insecure_auth``
    (:class:`~amqp_sansio.client.url.InsecureCredentialsError` otherwise, before
    anything is sent). TLS: ``ssl_context``, or one from
    :func:`~amqp_sansio.security.tls.client_context` with ``cafile`` and ``verify``.
    ``proxy``: the HTTP proxy of each URL (:class:`~amqp_sansio.client.proxy.Proxies`); the
    tunnel through it is the outermost layer (TLS inside it, to the broker)."""
    parsed = parse_url(url) if isinstance(url, str) else url
    parsed.check_credentials(allow_insecure_auth=allow_insecure_auth)
    tls = parsed.tls or ssl_context is not None
    credentials = parsed.username is not None or parsed.password is not None
    if sasl is False and credentials:
        raise ValueError("credentials need SASL: remove them from the URL")
    credentials_layer = None
    if sasl is not False:  # none given: ANONYMOUS
        credentials_layer = a.sasl.ClientCredentials(
            username=parsed.username, password=parsed.password
        )
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
    context = ssl_context
    if tls and context is None:
        context = a.security.tls.client_context(cafile=cafile, verify=verify)
    stream = stack(
        engine,
        role="client",
        tls=context if tls else None,
        server_hostname=parsed.host,
        trace=trace.tracer(f"{engine.container_id}>{parsed.host}:{parsed.port}"),
        websocket=parsed.websocket_options(),
        proxy=None if proxy is None else proxy.options(parsed),
    )
    return parsed, engine, stream


def without_sasl(url: str | AMQPURL, options: OptionsT) -> OptionsT | None:
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
    return cast(OptionsT, {**options, "sasl": False})


def without_sasl_failure(url: AMQPURL | None) -> str:
    """Why a client's SASL header was answered with the bare AMQP header, for its error."""
    where = "" if url is None else f" at {url.host}:{url.port}"
    text = f"the server{where} has no SASL layer (it answered with the bare AMQP header)"
    if url is not None and (url.username is not None or url.password is not None):
        return f"{text}: it cannot check the credentials in the URL; remove them to connect"
    return f"{text}: connect with sasl=False (--sasl-mechanism none)"


def authentication_failure(event: a.events.AuthenticationFailed, url: AMQPURL | None) -> str:
    """The message of a client's failed authentication, with :func:`authentication_hint`."""
    hint = authentication_hint(event, url)
    text = f"authentication failed: {authentication_description(event)}"
    return f"{hint}; {text}" if hint else text


def authentication_description(event: a.events.AuthenticationFailed) -> str:
    """What failed, in the terms of a user of ``connect()`` and of the command line: the
    server's description, or, where none of the server's mechanisms fits, what makes one
    fit (the engine's own text names the engine's options, which such a user never sets)."""
    error = event.error
    if not isinstance(error, SASLNoMechanismError):
        return event.description
    offered = ", ".join(repr(name[:40]) for name in error.offered[:20]) or "nothing"
    return (
        f"no usable SASL mechanism: the server offers {offered}; PLAIN and SCRAM take the "
        "user and password of the URL (amqp://USER:PASSWORD@HOST), PLAIN over amqp:// to "
        "another host only with allow_insecure_auth=True (--allow-insecure-auth); EXTERNAL "
        "takes a client certificate (ssl_context=); ANONYMOUS a URL without credentials; "
        "sasl_mechanisms= (--sasl-mechanism) limits the choice"
    )


def authentication_hint(event: a.events.AuthenticationFailed, url: AMQPURL | None) -> str:
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


def refused_without_sasl(peer: object) -> None:
    """Log a server's refusal of a client that sent the bare AMQP header where SASL is
    required (core spec 2.2: our SASL header went back, and the connection ended)."""
    _log.warning(
        "refused the connection from %s: it sent the bare AMQP header (no SASL layer), and "
        "this server requires SASL authentication (anonymous access is not allowed)",
        _peer_name(peer),
    )


def _peer_name(peer: object) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        host, port = peer[0], peer[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return "an unknown peer" if peer is None else str(peer)


def server_sasl(
    sasl: a.sasl.ServerAuthenticator | bool | None,
) -> a.sasl.ServerAuthenticator | None:
    """A server's SASL layer from its ``sasl`` option (see :doc:`defaults`): None (the
    default) allows anonymous access, through ANONYMOUS or without SASL (the bare AMQP
    header, core spec 5.1), so that every client's default works; a
    :class:`~amqp_sansio.sasl.ServerAuthenticator` is used as it is (one without
    ``allow_anonymous`` requires authentication); False: no SASL layer (only the bare
    header is taken)."""
    if sasl is None or sasl is True:
        return a.sasl.ServerAuthenticator(None, allow_anonymous=True)
    if sasl is False:
        return None
    return sasl


def server_engine(
    *,
    container_id: str = "amqp-sansio-server",
    idle_timeout: float | None = None,
    ssl_context: ssl.SSLContext | None = None,
    sasl: a.sasl.ServerAuthenticator | bool | None = None,
    allow_insecure_auth: bool = False,
    max_frame_size: int = 65536,
    websocket: WebSocketOptions | None = None,
) -> tuple[a.Connection, Stream]:
    """The engine (and TLS layer, with ``ssl_context``: amqps from the first byte) of one
    accepted server connection; ``sasl`` as :func:`server_sasl` says. With ``websocket``
    the connection comes as the AMQP WebSocket binding (:doc:`websockets`), inside TLS if
    there is TLS."""
    engine = a.Connection(
        client=False,
        container_id=container_id,
        idle_timeout=idle_timeout,
        sasl=server_sasl(sasl),
        allow_plain_without_tls=allow_insecure_auth,
        max_frame_size=max_frame_size,
    )
    stream = stack(
        engine,
        role="server",
        tls=ssl_context,
        trace=trace.tracer(container_id),
        websocket=websocket,
    )
    return engine, stream
