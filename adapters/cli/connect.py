"""What ``amqp-sansio send`` and ``amqp-sansio receive`` add to the public blocking API
(:func:`amqp_sansio.adapters.sockets.connect`) they run on: their exit statuses, the
options of the command line as ``connect``'s keyword arguments, and every failure as one
readable line (:class:`CommandError`, with the exit status).

* SASL, the project's one default (``docs/defaults.rst``), as ``connect`` has it: the URL's
  user and password, or ANONYMOUS without them, and once more without SASL if the server
  has no SASL layer (logged); ``sasl_mechanism`` forces one mechanism
  (``sasl_mechanisms=[it]``, no second attempt), ``"none"`` skips SASL (``sasl=False``).
* Credentials unencrypted: PLAIN over plain TCP only to a loopback host, or with
  ``allow_insecure_auth`` (``connect`` refuses otherwise, before anything is sent).
* ``amqps://``: TLS from the first byte (core spec 5.2.1), the certificate verified against
  the system's CAs or ``cafile``, and the host name checked; ``insecure_skip_verify`` turns
  both checks off, and must be asked for (the :class:`ssl.SSLContext` is made here).
"""

from __future__ import annotations

import socket
import ssl
import uuid
from typing import Any

import attrs

import amqp_sansio as amqp
from amqp_sansio.client.engines import authentication_description, authentication_hint
from amqp_sansio.client.ops import ClientError, LinkDetachedError, LinkRefusedError
from amqp_sansio.client.url import AMQPURL, URLError
from amqp_sansio.sasl import MECHANISM_PREFERENCE

from .. import sockets
from .._transports import proxies

__all__ = [
    "EXIT_CONNECTION",
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "ClientOptions",
    "CommandError",
    "connect_options",
    "describe_error",
    "failure",
    "link_failure",
    "open_connection",
    "timed_out",
]

#: Exit statuses of the command-line tools.
EXIT_OK = 0
#: The work was done, but not all of it succeeded: a message not accepted, fewer received.
EXIT_INCOMPLETE = 1
#: A usage error: bad arguments or URL, credentials refused unencrypted.
EXIT_USAGE = 2
#: No connection, or the broker refused: connection refused, TLS or authentication
#: failed, the broker refused the link or closed the connection, a protocol error.
EXIT_CONNECTION = 3
#: Nothing happened for ``--timeout`` seconds.
EXIT_TIMEOUT = 4
#: Interrupted (SIGINT, Ctrl-C) before the work was done.
EXIT_INTERRUPTED = 130


class CommandError(Exception):
    """A failure to report in one line (``str(error)``), with the exit status to use."""

    def __init__(self, message: str, status: int = EXIT_CONNECTION) -> None:
        super().__init__(message)
        self.status = status


@attrs.frozen(kw_only=True)
class ClientOptions:
    """How to connect, beyond the URL."""

    #: CA certificates (PEM) to verify the server's certificate against, instead of the
    #: system's (``amqps://`` only).
    cafile: str | None = None
    #: Do not verify the server's certificate or host name (``amqps://`` only).
    insecure_skip_verify: bool = False
    #: Force this SASL mechanism (``PLAIN``, ``SCRAM-SHA-256``, ``ANONYMOUS``, ...);
    #: ``"none"``: no SASL layer at all. None: the strongest both sides support.
    sasl_mechanism: str | None = None
    #: Allow credentials over unencrypted TCP to a host that is not a loopback address.
    allow_insecure_auth: bool = False
    #: The longest wait for any one step (connecting, an answer, the next message), seconds.
    timeout: float = 10.0
    #: Our idle time-out (the broker is asked for heartbeats at half of it), seconds.
    idle_timeout: float | None = 60.0
    #: The container id; a unique one by default.
    container_id: str | None = None
    #: An HTTP proxy to tunnel through (``http://[user:password@]host:port``); False:
    #: none; None: the environment's (``HTTP_PROXY``/``HTTPS_PROXY`` for ws/wss URLs).
    proxy: str | bool | None = None

    @property
    def no_sasl(self) -> bool:
        """``--sasl-mechanism none``."""
        return (self.sasl_mechanism or "").lower() == "none"


def connect_options(url: AMQPURL, options: ClientOptions, *, role: str) -> dict[str, Any]:
    """The keyword arguments of :func:`~amqp_sansio.adapters.sockets.connect` (all but
    ``timeout``, which is ``options.timeout``) for ``options``, after the command line's own
    usage checks (:class:`CommandError` with :data:`EXIT_USAGE`)."""
    if not url.tls and (options.cafile is not None or options.insecure_skip_verify):
        raise CommandError(
            "--cafile and --insecure-skip-verify are for amqps:// URLs (TLS)", EXIT_USAGE
        )
    if options.no_sasl and (url.username is not None or url.password is not None):
        raise CommandError(
            "--sasl-mechanism none sends no credentials: remove them from the URL", EXIT_USAGE
        )
    mechanism = options.sasl_mechanism
    known = MECHANISM_PREFERENCE  # the mechanisms this package implements
    if mechanism is not None and not options.no_sasl and mechanism.upper() not in known:
        raise CommandError(
            f"unknown SASL mechanism {mechanism!r}: use one of {', '.join(known)}, "
            "or 'none' for no SASL",
            EXIT_USAGE,
        )
    context = None
    if url.tls:
        try:
            context = amqp.security.tls.client_context(
                cafile=options.cafile, verify=not options.insecure_skip_verify
            )
        except (OSError, ssl.SSLError) as exc:
            raise CommandError(
                f"cannot load --cafile {options.cafile}: {exc}", EXIT_USAGE
            ) from None
    return {
        "container_id": options.container_id or f"amqp-sansio-{role}-{uuid.uuid4().hex[:12]}",
        "idle_timeout": options.idle_timeout,
        "allow_insecure_auth": options.allow_insecure_auth,
        "ssl_context": context,
        # None: the default (with its one attempt without SASL); a mechanism forced, with
        # SASL or nothing; "none": no SASL layer.
        "sasl": None if mechanism is None else not options.no_sasl,
        "sasl_mechanisms": None if mechanism is None or options.no_sasl else [mechanism.upper()],
        "proxy": options.proxy,
    }


def open_connection(url: AMQPURL, options: ClientOptions, *, role: str) -> sockets.Connection:
    """Connect to ``url`` and open the AMQP connection, with :func:`connect_options`;
    every failure as a :class:`CommandError`."""
    kwargs = connect_options(url, options, role=role)
    where = _host_port(url)
    try:
        chosen = proxies(options.proxy, url.unredacted())
        proxy = None if chosen is None else chosen.for_url(url)
        if proxy is not None:  # (what fails to connect is the proxy; named without secrets)
            where = f"the HTTP proxy {proxy} (for {where})"
        conn: sockets.Connection = sockets.connect(
            url.unredacted(), timeout=options.timeout, **kwargs
        )
        return conn
    except ClientError as exc:
        raise failure(exc, url, options) from None
    except URLError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except amqp.LocalProtocolError as exc:
        raise CommandError(f"cannot use these options: {exc}", EXIT_USAGE) from None
    except TimeoutError:
        raise CommandError(
            f"timed out connecting to {where} after {options.timeout:g} s", EXIT_TIMEOUT
        ) from None
    except socket.gaierror as exc:
        raise CommandError(f"cannot resolve {url.host}: {exc.strerror}") from None
    except ConnectionRefusedError:
        raise CommandError(f"cannot connect to {where}: connection refused") from None
    except OSError as exc:
        raise CommandError(f"cannot connect to {where}: {exc.strerror or exc}") from None


def timed_out(options: ClientOptions, what: str) -> CommandError:
    """A wait of ``options.timeout`` seconds for ``what`` that ran out."""
    return CommandError(f"timed out after {options.timeout:g} s waiting for {what}", EXIT_TIMEOUT)


def failure(
    exc: ClientError, url: AMQPURL, options: ClientOptions, *, link: str = ""
) -> CommandError:
    """The command's error for one of the public API's: by the engine event that caused it
    (:attr:`~amqp_sansio.client.ops.ClientError.event`), the one line that says what happened
    and what to do. ``link`` names the command's link (``to ADDRESS``, ``from ADDRESS``)."""
    where = _host_port(url)
    event = exc.event
    if isinstance(event, amqp.events.AuthenticationFailed):
        hint = authentication_hint(event, url)
        return CommandError(
            f"authentication failed at {where}: {authentication_description(event)}"
            + (f" ({hint})" if hint else "")
        )
    if isinstance(event, amqp.security.tls.TLSFailed):
        if event.verify_error:
            hint = " (a private CA: --cafile)" if "issuer" in event.verify_error else ""
            return CommandError(
                f"TLS with {where} failed: the broker's certificate was refused: "
                f"{event.verify_error}{hint}"
            )
        return CommandError(f"TLS with {where} failed: {event.error}")
    if isinstance(event, amqp.security.proxy.ProxyFailed):
        return CommandError(f"cannot reach {where}: {event.error}")
    if isinstance(event, amqp.security.tls.TLSHeaderMismatch):
        return CommandError(f"{where} does not speak TLS here: it sent {event.version_name}")
    if isinstance(event, amqp.events.UnsupportedProtocol):
        return CommandError(
            f"{where} does not speak AMQP 1.0 as asked: it answered with "
            f"{event.version_name}{_protocol_hint(event, url, options)}"
        )
    if isinstance(event, amqp.events.ProtocolError):
        return CommandError(f"protocol error ({event.scope}): {describe_error(event.error)}")
    if isinstance(event, amqp.events.IdleTimedOut):
        return CommandError(f"{where} sent nothing within our idle time-out", EXIT_TIMEOUT)
    if isinstance(event, amqp.events.ConnectionClosed):
        if event.error is None:
            return CommandError("the broker closed the connection")
        return CommandError(f"the broker closed the connection: {describe_error(event.error)}")
    if isinstance(event, amqp.events.SessionEnded):
        return CommandError(f"the broker ended the session: {describe_error(event.error)}")
    if isinstance(exc, LinkDetachedError):
        return link_failure(exc, link)
    if isinstance(event, amqp.events.ConnectionEnded):
        # Before the open, the core says how (a refusal after the protocol header).
        return CommandError(f"the connection to {where} ended: {exc}")
    return CommandError(f"the connection to {where} failed: {exc}")


def _protocol_hint(
    event: amqp.events.UnsupportedProtocol, url: AMQPURL, options: ClientOptions
) -> str:
    """Which option to try when the two sides disagree about SASL."""
    if "SASL" in event.version_name and options.no_sasl:
        return " (the broker asks for SASL: leave out --sasl-mechanism none)"
    if isinstance(event, amqp.events.PeerWithoutSASL):
        if url.username is not None or url.password is not None:
            return " (the broker does not use SASL: remove the credentials from the URL)"
        return " (the broker does not use SASL: try --sasl-mechanism none)"
    return ""


def link_failure(exc: LinkDetachedError, link: str) -> CommandError:
    """The broker refused the link (``to ADDRESS`` or ``from ADDRESS``), or detached it,
    and its reason."""
    if isinstance(exc, LinkRefusedError):
        # Refused without a detach (rhea's listener): the broker gave no reason.
        reason = "it gave no reason" if exc.event is None else describe_error(exc.error)
        return CommandError(f"the broker refused the link {link}: {reason}")
    return CommandError(f"the broker detached the link {link}: {describe_error(exc.error)}")


def describe_error(error: amqp.Error | None) -> str:
    """``condition: description`` of an AMQP error, for a message."""
    if error is None:
        return "no error given"
    condition = str(error.condition)
    return f"{condition}: {error.description}" if error.description else condition


def _host_port(url: AMQPURL) -> str:
    return f"[{url.host}]:{url.port}" if ":" in url.host else f"{url.host}:{url.port}"
