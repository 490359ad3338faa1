"""The adapters' transports, by URL scheme: each adapter family (blocking sockets, asyncio,
trio, the broker's server) has one table, ``TRANSPORTS``, from a URL's scheme to the
factory that opens (or, on a server, listens for) that transport, and one connect function
that looks the scheme up here (as aiormq's ``TransportFactory``). The bytes' own layers
(TLS for ``amqps`` and ``wss``, the WebSocket binding for ``ws`` and ``wss``) are stacked
around the engine by :func:`amqp_sansio.security.stack.stack`, not here: all four open
TCP.

Adding a transport is one module (its byte layer, or its opener) plus its entry in the
tables (see :doc:`architecture`, "Transports").

Here too, for every adapter and the command line: which HTTP proxy a client goes through
(:func:`proxies`), from its ``proxy`` option and the environment, which the core never
reads."""

from __future__ import annotations

import urllib.request
from collections.abc import Mapping
from typing import TypeVar

from amqp_sansio.client.proxy import Proxies, ProxyURL, parse_proxy
from amqp_sansio.client.url import URLError

__all__ = ["proxies", "transport_for"]

F = TypeVar("F")


def transport_for(table: Mapping[str, F], scheme: str) -> F:
    """The factory of ``scheme``'s transport in an adapter's ``table``; a
    :class:`ValueError` naming the schemes it has if there is none."""
    try:
        return table[scheme]
    except KeyError:
        known = ", ".join(f"{name}://" for name in table)
        raise ValueError(f"no transport for {scheme}:// here (this adapter has {known})") from None


#: The environment's proxy of each scheme that uses one by default (as curl and requests
#: choose for ``http`` and ``https``): ``ws`` through ``HTTP_PROXY``, ``wss`` through
#: ``HTTPS_PROXY`` (see :doc:`defaults`).
ENVIRONMENT_PROXIES = {"ws": "http", "wss": "https"}


def proxies(proxy: str | bool | None, url: str) -> Proxies | None:
    """The HTTP proxies of a client (:class:`~amqp_sansio.client.proxy.Proxies`) from its
    ``proxy`` option: a URL (``http://[user:password@]host:port``): every URL through it;
    False: none; None or True: the environment's (``HTTP_PROXY``/``http_proxy`` for
    ``ws://``, ``HTTPS_PROXY``/``https_proxy`` for ``wss://``, ``NO_PROXY``/``no_proxy``
    respected, as :func:`urllib.request.getproxies` reads them). None: no proxy at all.

    Raises:
        URLError: a ``proxy`` that is not ``http://host[:port]``, or such an environment
            proxy for the scheme of ``url`` (the one connected to first; another
            scheme's bad proxy is ignored, so it never breaks an ``amqp://`` client).
    """
    if proxy is False:
        return None
    if isinstance(proxy, str):
        return Proxies(explicit=parse_proxy(proxy))
    found = urllib.request.getproxies()
    by_scheme: dict[str, ProxyURL] = {}
    first = url.partition(":")[0].lower()
    for scheme, key in ENVIRONMENT_PROXIES.items():
        if not found.get(key):
            continue
        try:
            by_scheme[scheme] = parse_proxy(found[key])
        except URLError as exc:
            if scheme == first:
                raise URLError(f"{key}_proxy in the environment: {exc}") from None
    if not by_scheme:
        return None

    def bypass(host: str) -> bool:
        # (documented in urllib.request's source, absent from typeshed)
        check = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
        return bool(check(host, found))

    return Proxies(by_scheme=by_scheme, bypass=bypass)
