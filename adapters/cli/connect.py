"""Connecting a client to a broker from an AMQP URL, blocking: the one place that turns a
URL and a few options into an open :class:`~amqp_sansio.Connection` with a session, over
:class:`~amqp_sansio.adapters.sockets.SocketDriver`, and every way that can fail into one
readable line (:class:`CommandError`, with the exit status the command-line tools use).

Used by ``amqp-sansio send`` and ``amqp-sansio receive``. Which engine, TLS layer and SASL
options a URL gets is decided in one place for them and the high-level adapters,
:func:`~amqp_sansio.client.client_engine` (:func:`engine_for` adds the command
line's usage checks and messages):

* SASL, the project's one default (``docs/defaults.rst``): the URL's user and password
  (:class:`~amqp_sansio.sasl.ClientCredentials`), or ANONYMOUS without them, and once more without
  SASL if the server has no SASL layer (logged); ``sasl_mechanism`` forces one mechanism
  (no second attempt), ``"none"`` skips SASL altogether.
* Credentials unencrypted: PLAIN over plain TCP only to a loopback host, or with
  ``allow_insecure_auth`` (:meth:`~amqp_sansio.client.url.AMQPURL.check_credentials`
  refuses otherwise, before anything is sent).
* ``amqps://``: TLS from the first byte (core spec 5.2.1), the certificate verified against
  the system's CAs or ``cafile``, and the host name checked; ``insecure_skip_verify`` turns
  both checks off, and must be asked for.
"""

from __future__ import annotations

import socket
import ssl
import uuid
from collections.abc import Callable
from typing import Any

import attrs

import amqp_sansio as amqp
from amqp_sansio import client
from amqp_sansio.client.links import describe_link
from amqp_sansio.client.url import AMQPURL, URLError

from ..sockets import ByteStream, SocketDriver

__all__ = [
    "EXIT_CONNECTION",
    "EXIT_INCOMPLETE",
    "EXIT_OK",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "Client",
    "ClientOptions",
    "CommandError",
    "describe_error",
    "engine_for",
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


def _check(url: AMQPURL, options: ClientOptions) -> None:
    """The command line's own usage checks, before the engine is made."""
    if not url.tls and (options.cafile is not None or options.insecure_skip_verify):
        raise CommandError(
            "--cafile and --insecure-skip-verify are for amqps:// URLs (TLS)", EXIT_USAGE
        )
    if (options.sasl_mechanism or "").lower() == "none" and (
        url.username is not None or url.password is not None
    ):
        raise CommandError(
            "--sasl-mechanism none sends no credentials: remove them from the URL", EXIT_USAGE
        )


def _sasl_options(options: ClientOptions) -> dict[str, Any]:
    """``client_engine``'s SASL options for ``--sasl-mechanism``: the default (None), one
    mechanism forced, or none."""
    mechanism = options.sasl_mechanism
    if mechanism is None:
        return {"sasl": None, "sasl_mechanisms": None}
    if mechanism.lower() == "none":
        return {"sasl": False, "sasl_mechanisms": None}
    return {"sasl": True, "sasl_mechanisms": [mechanism.upper()]}


def engine_for(
    url: AMQPURL, options: ClientOptions, *, role: str = "client", sasl: bool | None = None
) -> tuple[amqp.Connection, ByteStream]:
    """The client :class:`~amqp_sansio.Connection` for ``url``, and the stream the driver
    should see (a :class:`~amqp_sansio.TLSLayer` around it for ``amqps://``), with no I/O:
    the high-level API's :func:`~amqp_sansio.client.client_engine` decides, with
    its SASL default unless ``--sasl-mechanism`` says (``sasl=False``: without SASL, the
    second attempt). :class:`CommandError` with :data:`EXIT_USAGE` if a check refuses."""
    _check(url, options)
    chosen = _sasl_options(options)
    if sasl is False:
        chosen["sasl"] = False
    try:
        _, connection, stream = client.client_engine(
            url,
            container_id=options.container_id or f"amqp-sansio-{role}-{uuid.uuid4().hex[:12]}",
            idle_timeout=options.idle_timeout,
            allow_insecure_auth=options.allow_insecure_auth,
            sasl=chosen["sasl"],
            sasl_mechanisms=chosen["sasl_mechanisms"],
            cafile=options.cafile,
            verify=not options.insecure_skip_verify,
        )
    except URLError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except amqp.LocalProtocolError as exc:
        raise CommandError(f"cannot use these options: {exc}", EXIT_USAGE) from None
    except (OSError, ssl.SSLError) as exc:
        raise CommandError(f"cannot load --cafile {options.cafile}: {exc}", EXIT_USAGE) from None
    return connection, stream


def describe_error(error: amqp.Error | None) -> str:
    """``condition: description`` of an AMQP error, for a message."""
    if error is None:
        return "no error given"
    condition = str(error.condition)
    return f"{condition}: {error.description}" if error.description else condition


class Client:
    """One open client connection to the broker of ``url``, with a session.

    Every failure raises :class:`CommandError`: connecting, TLS, authentication, the
    broker's refusal of a link, the broker closing the connection or ending the session,
    a protocol error, and :attr:`ClientOptions.timeout` seconds passing in one
    :meth:`wait`. ``on_event`` sees every event as it happens (from inside the driver)."""

    def __init__(
        self,
        url: AMQPURL,
        options: ClientOptions,
        *,
        role: str = "client",
        on_event: Callable[[amqp.Event], None] | None = None,
    ) -> None:
        self.url = url
        self.options = options
        self.on_event = on_event
        #: Whether a detach without an error is no failure now: the command has what it
        #: asked for (every outcome), which a peer may follow with a clean detach (2.6.6).
        self.detach_ok: Callable[[], bool] | None = None
        self._where = f"{_host_port(url)}"
        #: The server answered our SASL header with the bare AMQP header.
        self._without_sasl = False
        try:
            self._open(role, sasl=None)
        except CommandError:
            if not self._without_sasl:
                raise
            again = client.without_sasl(url, _sasl_options(options))
            if again is None:
                raise
            self._open(role, sasl=False)

    def _open(self, role: str, *, sasl: bool | None) -> None:
        """Connect, open and begin (the SASL default, or without SASL: ``sasl=False``)."""
        options, url = self.options, self.url
        self.connection, stream = engine_for(url, options, role=role, sasl=sasl)
        self._failure: CommandError | None = None
        self._closing = False
        self._uses_sasl = sasl is not False and (options.sasl_mechanism or "").lower() != "none"
        self._without_sasl = False
        try:
            self.driver = SocketDriver.connect(
                stream, (url.host, url.port), timeout=options.timeout, on_event=self._on_event
            )
        except socket.gaierror as exc:
            raise CommandError(f"cannot resolve {url.host}: {exc.strerror}") from None
        except ConnectionRefusedError:
            raise CommandError(f"cannot connect to {self._where}: connection refused") from None
        except TimeoutError:
            raise CommandError(
                f"timed out connecting to {self._where} after {options.timeout:g} s",
                EXIT_TIMEOUT,
            ) from None
        except OSError as exc:
            raise CommandError(f"cannot connect to {self._where}: {exc.strerror or exc}") from None
        try:
            self.connection.open(now=self.driver.now())
            self.wait(
                lambda: self.connection.state is amqp.ConnectionState.OPENED,
                "the broker's open",
            )
            self.session = self.connection.begin()
            self.wait(lambda: self.session.state is amqp.SessionState.MAPPED, "the broker's begin")
        except BaseException:
            self.driver.close()
            raise

    # -- links -----------------------------------------------------------------------------

    def attach_sender(self, address: str, *, settled: bool = False) -> amqp.Sender:
        """A sending link to ``address``, attached (the broker's target is there)."""
        mode = amqp.SenderSettleMode.SETTLED if settled else amqp.SenderSettleMode.UNSETTLED
        link = self.session.attach_sender(
            f"amqp-sansio-send-{uuid.uuid4().hex[:12]}",
            target=amqp.Target(address=address),
            snd_settle_mode=mode,
        )
        self._attached(link, f"to {address}")
        return link

    def attach_receiver(self, address: str) -> amqp.Receiver:
        """A receiving link from ``address``, attached (the broker's source is there)."""
        link = self.session.attach_receiver(
            f"amqp-sansio-receive-{uuid.uuid4().hex[:12]}", source=amqp.Source(address=address)
        )
        self._attached(link, f"from {address}")
        return link

    def _attached(self, link: amqp.Link, what: str) -> None:
        self.wait(lambda: link.remote is not None, f"the broker's attach of the link {what}")
        remote = link.remote
        assert remote is not None
        # A refusal is an attach without the broker's terminus (core spec 2.6.3); the detach
        # with the reason comes with it from most brokers (then :meth:`_on_event` has said
        # why already), never from some (rhea's listener): refused at once either way.
        terminus = remote.target if isinstance(link, amqp.Sender) else remote.source
        if terminus is None:
            self._fail(f"the broker refused the link {what}: it gave no reason")
            assert self._failure is not None
            raise self._failure

    # -- waiting -----------------------------------------------------------------------------

    def wait(self, predicate: Callable[[], bool], what: str, timeout: float | None = None) -> None:
        """Drive the connection until ``predicate()``; :class:`CommandError` on any failure,
        with :data:`EXIT_TIMEOUT` after ``timeout`` (the options') seconds."""
        limit = self.options.timeout if timeout is None else timeout
        driver = self.driver
        try:
            driver.run_until(lambda: self._failure is not None or predicate(), timeout=limit)
        except TimeoutError:
            raise CommandError(
                f"timed out after {limit:g} s waiting for {what}", EXIT_TIMEOUT
            ) from None
        except ConnectionError:
            if self._failure is None:
                reason = f": {driver.error.strerror or driver.error}" if driver.error else ""
                self._failure = CommandError(
                    f"the connection to {self._where} was lost while waiting for {what}{reason}"
                )
        except OSError as exc:
            self._failure = CommandError(f"the connection to {self._where} failed: {exc}")
        finally:
            driver.events.clear()  # every event went through _on_event already
        if self._failure is not None:
            raise self._failure

    def _fail(self, message: str, status: int = EXIT_CONNECTION) -> None:
        if self._failure is None:
            self._failure = CommandError(message, status)

    def _on_event(self, event: amqp.Event) -> None:
        handler = _FAILURES.get(type(event))
        if handler is not None:
            handler(self, event)
        if self.on_event is not None:
            self.on_event(event)

    # -- the events that fail the command (_FAILURES) ---------------------------------------

    def _on_authentication_failed(self, event: amqp.events.AuthenticationFailed) -> None:
        hint = client.authentication_hint(event, self.url)
        self._fail(
            f"authentication failed at {self._where}: {event.description}"
            + (f" ({hint})" if hint else "")
        )

    def _on_tls_failed(self, event: amqp.security.tls.TLSFailed) -> None:
        if event.verify_error:
            hint = " (a private CA: --cafile)" if "issuer" in event.verify_error else ""
            self._fail(
                f"TLS with {self._where} failed: the broker's certificate was refused: "
                f"{event.verify_error}{hint}"
            )
        else:
            self._fail(f"TLS with {self._where} failed: {event.error}")

    def _on_tls_mismatch(self, event: amqp.security.tls.TLSHeaderMismatch) -> None:
        self._fail(f"{self._where} does not speak TLS here: it sent {event.version_name}")

    def _on_unsupported(self, event: amqp.events.UnsupportedProtocol) -> None:
        hint = ""
        if "SASL" in event.version_name and not self._uses_sasl:
            hint = " (the broker asks for SASL: leave out --sasl-mechanism none)"
        elif isinstance(event, amqp.events.PeerWithoutSASL):
            self._without_sasl = True
            if self.url.username is not None or self.url.password is not None:
                hint = " (the broker does not use SASL: remove the credentials from the URL)"
            else:
                hint = " (the broker does not use SASL: try --sasl-mechanism none)"
        self._fail(
            f"{self._where} does not speak AMQP 1.0 as asked: it answered with "
            f"{event.version_name}{hint}"
        )

    def _on_protocol_error(self, event: amqp.events.ProtocolError) -> None:
        self._fail(f"protocol error ({event.scope}): {describe_error(event.error)}")

    def _on_idle_timed_out(self, event: amqp.events.IdleTimedOut) -> None:
        self._fail(f"{self._where} sent nothing within our idle time-out", EXIT_TIMEOUT)

    def _on_closed(self, event: amqp.events.ConnectionClosed) -> None:
        if event.error is not None:
            self._fail(f"the broker closed the connection: {describe_error(event.error)}")
        elif not self._closing:
            self._fail("the broker closed the connection")

    def _on_session_ended(self, event: amqp.events.SessionEnded) -> None:
        if not self._closing:
            self._fail(f"the broker ended the session: {describe_error(event.error)}")

    def _on_link_detached(self, event: amqp.events.LinkDetached) -> None:
        clean = event.error is None and self.detach_ok is not None and self.detach_ok()
        if not self._closing and not clean:
            link = event.link
            address = describe_link(link)
            what = "refused" if _refused(link) else "detached"
            self._fail(f"the broker {what} the link {address}: {describe_error(event.error)}")

    def _on_connection_ended(self, event: amqp.events.ConnectionEnded) -> None:
        if not self._closing:
            self._fail(f"the connection to {self._where} ended")

    # -- closing -----------------------------------------------------------------------------

    def close_checked(self) -> None:
        """Close the connection and wait for the broker's answering close, which comes
        after everything we sent before: :class:`CommandError` if it does not come."""
        conn = self.connection
        self._closing = True
        try:
            if conn.state is amqp.ConnectionState.OPENED:
                conn.close()
            self.wait(lambda: conn.state is amqp.ConnectionState.END, "the broker's close")
        finally:
            self.driver.close()

    def close(self, timeout: float = 2.0) -> None:
        """Close the connection (the broker's answering close is awaited briefly) and the
        socket. Never raises: what was to be done is done."""
        self._closing = True
        conn = self.connection
        if self.driver.closed:
            return
        try:
            if conn.state not in (amqp.ConnectionState.END, amqp.ConnectionState.CLOSE_SENT):
                conn.close()
            self.driver.run_until(
                lambda: conn.state is amqp.ConnectionState.END,
                timeout=min(timeout, self.options.timeout),
            )
        except (amqp.AMQPError, TimeoutError, OSError):
            pass
        finally:
            self.driver.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


#: The events that may fail a command, by type, and what makes of each the command's error
#: (the engine's events are of these very classes; the others only go to ``on_event``).
_FAILURES: dict[type, Callable[[Client, Any], None]] = {
    amqp.events.AuthenticationFailed: Client._on_authentication_failed,
    amqp.security.tls.TLSFailed: Client._on_tls_failed,
    amqp.security.tls.TLSHeaderMismatch: Client._on_tls_mismatch,
    amqp.events.UnsupportedProtocol: Client._on_unsupported,
    amqp.events.PeerWithoutSASL: Client._on_unsupported,
    amqp.events.ProtocolError: Client._on_protocol_error,
    amqp.events.IdleTimedOut: Client._on_idle_timed_out,
    amqp.events.ConnectionClosed: Client._on_closed,
    amqp.events.SessionEnded: Client._on_session_ended,
    amqp.events.LinkDetached: Client._on_link_detached,
    amqp.events.ConnectionEnded: Client._on_connection_ended,
}


def _host_port(url: AMQPURL) -> str:
    return f"[{url.host}]:{url.port}" if ":" in url.host else f"{url.host}:{url.port}"


def _refused(link: amqp.Link) -> bool:
    remote = link.remote
    if remote is None:
        return True
    return (remote.target if isinstance(link, amqp.Sender) else remote.source) is None
