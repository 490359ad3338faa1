"""AMQP URLs: ``amqp://[user:password@]host[:port]/ADDRESS`` and ``amqps://`` for TLS;
for AMQP 1.0 also ``ws://[user:password@]host[:port][/PATH]`` and ``wss://`` (the AMQP
WebSocket binding, over TLS for ``wss``; see :doc:`websockets`).

The address is the URL's path without its first slash: ``amqp://h/q`` is address ``q``,
``amqp://h//queue/q`` is ``/queue/q`` (as RabbitMQ names its queues), ``amqp://h`` has none.
The port defaults to 5672 for ``amqp`` and 5671 for ``amqps`` (TLS from the first byte, core
spec 5.2.1), 80 for ``ws`` and 443 for ``wss``. A WebSocket URL's path is the HTTP resource
of the upgrade (kept as written, ``/`` if none), not an address: it has no address. User,
password and address are percent-decoded. The password never shows in a
repr or in :meth:`AMQPURL.redacted`.

Credentials in a plain ``amqp://`` URL cross the network unencrypted (SASL PLAIN):
:meth:`AMQPURL.check_credentials` allows them only to a loopback host, over TLS, or when the
caller opts in (``--allow-insecure-auth`` on the command line).
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from collections.abc import Mapping
from typing import TypedDict

import attrs

from ..security.websocket import WebSocketOptions

__all__ = ["AMQPURL", "InsecureCredentialsError", "URLError", "URLFields", "parse_url", "split_url"]

#: The default ports: AMQP (5672), and AMQP over TLS from the first byte (5671).
PORTS = {"amqp": 5672, "amqps": 5671}
#: The schemes of AMQP 1.0 URLs and their default ports: also the WebSocket binding's,
#: plain (80) and over TLS (443).
PORTS_10 = {**PORTS, "ws": 80, "wss": 443}
#: The schemes that carry AMQP in WebSocket messages.
WEBSOCKET_SCHEMES = frozenset({"ws", "wss"})


class URLError(ValueError):
    """The URL is not an AMQP URL; the message says why."""


class InsecureCredentialsError(URLError):
    """Credentials would cross an unencrypted connection to another host."""


class URLFields(TypedDict):
    """The fields every AMQP URL has (see :func:`split_url`)."""

    scheme: str
    host: str
    port: int
    username: str | None
    password: str | None


def _hidden(value: object) -> str:
    return "None" if value is None else "'***'"


@attrs.frozen(kw_only=True)
class AMQPURL:
    """A parsed AMQP URL. ``address`` is None when the URL has no path.
    ``websocket_path`` is a ``ws``/``wss`` URL's path (the upgrade's resource), else
    None."""

    scheme: str
    host: str
    port: int
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=_hidden)
    address: str | None = None
    websocket_path: str | None = None

    @property
    def tls(self) -> bool:
        """Whether the scheme asks for TLS (``amqps``, ``wss``)."""
        return self.scheme in ("amqps", "wss")

    def websocket_options(self) -> WebSocketOptions | None:
        """What the WebSocket layer of a ``ws``/``wss`` URL needs (the ``Host`` header,
        with the port unless it is the scheme's default, and the path); None for another
        scheme. The stack takes it as it is (:func:`~amqp_sansio.security.stack.stack`)."""
        if self.websocket_path is None:
            return None
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port != PORTS_10[self.scheme]:
            host = f"{host}:{self.port}"
        return WebSocketOptions(host=host, path=self.websocket_path)

    @property
    def is_loopback(self) -> bool:
        """Whether the host is this machine (``localhost``, 127.0.0.0/8, ``::1``)."""
        if self.host.lower() == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def check_credentials(self, *, allow_insecure_auth: bool = False) -> None:
        """Refuse a URL whose credentials would go in the clear to another machine.

        Raises:
            InsecureCredentialsError: a user or password in an ``amqp://`` URL whose host is
                not a loopback address, without ``allow_insecure_auth``.
        """
        if self.username is None and self.password is None:
            return
        if self.tls or self.is_loopback or allow_insecure_auth:
            return
        raise InsecureCredentialsError(
            f"refusing to send credentials unencrypted to {self.host}: use amqps://, "
            "or allow it explicitly (allow_insecure_auth=True, --allow-insecure-auth)"
        )

    def redacted(self) -> str:
        """The URL with the password replaced by ``***``: safe to print or log."""
        return self._format(None if self.password is None else "***")

    def unredacted(self) -> str:
        """The whole URL, password included (percent-encoded): to connect with, never to
        print."""
        password = self.password
        return self._format(None if password is None else urllib.parse.quote(password, safe=""))

    def _format(self, password: str | None) -> str:
        netloc = _host_port(self.host, self.port)
        if self.username is not None or password is not None:
            user = urllib.parse.quote(self.username or "", safe="")
            netloc = f"{user}{'' if password is None else ':' + password}@{netloc}"
        path = "" if self.address is None else "/" + urllib.parse.quote(self.address, safe="/")
        if self.websocket_path is not None:
            path = self.websocket_path
        return f"{self.scheme}://{netloc}{path}"

    def __str__(self) -> str:
        return self.redacted()


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def parse_url(url: str) -> AMQPURL:
    """Parse ``url`` (see the module's docstring).

    Raises:
        URLError: not ``amqp://`` or ``amqps://``, no host, a bad port, or a query or
            fragment (which AMQP URLs do not have).
    """
    parts, fields = split_url(url, PORTS_10)
    if parts.query or parts.fragment:
        raise URLError("an AMQP URL has no query or fragment")
    path = parts.path
    if fields["scheme"] in WEBSOCKET_SCHEMES:
        if any(c.isspace() for c in path):
            raise URLError("a WebSocket URL's path has no spaces")
        return AMQPURL(**fields, websocket_path=path or "/")
    address = urllib.parse.unquote(path[1:]) if len(path) > 1 else None
    return AMQPURL(**fields, address=address)


def split_url(
    url: str, ports: Mapping[str, int] = PORTS
) -> tuple[urllib.parse.SplitResult, URLFields]:
    """The parts of an ``amqp://`` or ``amqps://`` URL (or of a scheme in ``ports``, which
    gives each scheme's default port), and the fields of
    :class:`AMQPURL` they give that every AMQP URL has (scheme, host, port, username and
    password, percent-decoded); the path, query and fragment are the caller's (they differ
    between AMQP 1.0 and 0-9-1 URLs).

    Raises:
        URLError: a scheme not in ``ports``, no host, or a bad port.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise URLError(f"not a valid URL: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ports:
        names = [f"{name}://" for name in ports]
        known = " or ".join((", ".join(names[:-1]), names[-1])) if len(names) > 1 else names[0]
        raise URLError(f"the scheme must be {known}, not {parts.scheme or 'none'}://")
    if not parts.hostname:
        raise URLError("the URL names no host")
    username = None if parts.username is None else urllib.parse.unquote(parts.username)
    password = None if parts.password is None else urllib.parse.unquote(parts.password)
    return parts, {
        "scheme": scheme,
        "host": parts.hostname,
        "port": ports[scheme] if port is None else port,
        "username": username,
        "password": password,
    }
