"""Which HTTP proxy a client goes through, if any (see :doc:`websockets`, "Proxies"): the
proxy's URL (:func:`parse_proxy`), and :class:`Proxies`, the choice for each AMQP URL.

The choice is made of data the adapters read (the environment's ``HTTP_PROXY``,
``HTTPS_PROXY`` and ``NO_PROXY``, or the ``proxy=`` of a ``connect`` call): this module
reads nothing itself. The tunnel is :class:`~amqp_sansio.security.proxy.ProxyLayer`, the
outermost layer of the client's stack; the transport goes to the proxy's host and port
(:meth:`Proxies.address`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable

import attrs

from ..security.proxy import ProxyOptions
from .url import AMQPURL, URLError

__all__ = ["ProxyURL", "Proxies", "parse_proxy"]

#: The proxy's port when its URL gives none (``http``'s, as requests and urllib take it).
DEFAULT_PROXY_PORT = 80


def _hidden(value: object) -> str:
    return "None" if value is None else "'***'"


@attrs.frozen(kw_only=True)
class ProxyURL:
    """An HTTP proxy: ``http://[user:password@]host[:port]`` (the password never shows in
    a repr, in :meth:`redacted` or in a message)."""

    host: str
    port: int
    username: str | None = None
    password: str | None = attrs.field(default=None, repr=_hidden)

    def redacted(self) -> str:
        """The proxy's URL with the password replaced by ``***``: safe to print or log."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        user = ""
        if self.username is not None or self.password is not None:
            name = urllib.parse.quote(self.username or "", safe="")
            user = f"{name}{'' if self.password is None else ':***'}@"
        return f"http://{user}{host}:{self.port}"

    def __str__(self) -> str:
        return self.redacted()

    def options(self, host: str, port: int) -> ProxyOptions:
        """The tunnel's options (:class:`~amqp_sansio.security.proxy.ProxyOptions`) to
        ``host``:``port`` through this proxy."""
        return ProxyOptions(
            host=host,
            port=port,
            proxy=self.redacted(),
            username=self.username,
            password=self.password,
        )


def parse_proxy(url: str) -> ProxyURL:
    """Parse an HTTP proxy's URL: ``http://[user:password@]host[:port]`` (port 80 by
    default; a bare ``host:port`` is taken as ``http://host:port``, as curl does). User and
    password are percent-decoded.

    Raises:
        URLError: another scheme (a TLS connection to the proxy, ``https://``, is not
            supported), no host, a bad port, or a path, query or fragment.
    """
    if "://" not in url:
        url = f"http://{url}"
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise URLError(f"not a valid proxy URL: {exc}") from None
    if parts.scheme.lower() != "http":
        raise URLError(f"the proxy's URL must be http://, not {parts.scheme}://")
    if not parts.hostname:
        raise URLError("the proxy's URL names no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise URLError("the proxy's URL has no path, query or fragment")
    return ProxyURL(
        host=parts.hostname,
        port=DEFAULT_PROXY_PORT if port is None else port,
        username=None if parts.username is None else urllib.parse.unquote(parts.username),
        password=None if parts.password is None else urllib.parse.unquote(parts.password),
    )


@attrs.frozen(kw_only=True)
class Proxies:
    """The proxy of each AMQP URL a client connects to (its fallbacks included).

    ``explicit`` (a ``connect(url, proxy=...)``'s): every URL, whatever its scheme, goes
    through it. Else ``by_scheme`` (from the environment: ``ws`` from ``HTTP_PROXY``,
    ``wss`` from ``HTTPS_PROXY``), unless ``bypass`` (``NO_PROXY``, given ``host:port``)
    says the host is reached directly. See :doc:`defaults`."""

    explicit: ProxyURL | None = None
    by_scheme: dict[str, ProxyURL] = attrs.field(factory=dict)
    bypass: Callable[[str], bool] | None = attrs.field(default=None, repr=False)

    def for_url(self, url: AMQPURL) -> ProxyURL | None:
        """The proxy to reach ``url`` through, or None: directly."""
        if self.explicit is not None:
            return self.explicit
        proxy = self.by_scheme.get(url.scheme)
        if proxy is None:
            return None
        host = f"[{url.host}]" if ":" in url.host else url.host
        if self.bypass is not None and self.bypass(f"{host}:{url.port}"):
            return None
        return proxy

    def address(self, url: AMQPURL) -> tuple[str, int]:
        """Where the transport to ``url`` goes: the proxy's host and port, or the URL's."""
        proxy = self.for_url(url)
        return (url.host, url.port) if proxy is None else (proxy.host, proxy.port)

    def options(self, url: AMQPURL) -> ProxyOptions | None:
        """The tunnel's options for ``url`` (None: no proxy)."""
        proxy = self.for_url(url)
        return None if proxy is None else proxy.options(url.host, url.port)
