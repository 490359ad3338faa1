"""Which protocol a client speaks: the one module of the client core that picks it, from
the ``protocol`` every adapter's ``connect(url, protocol=...)`` is given (never guessed
from the URL or the server), and hands the call to that protocol's connect recipe
(:func:`amqp_sansio.client.amqp10.recipes.connect`,
:func:`amqp_sansio.client.amqp091.recipes.connect`,
:func:`amqp_sansio.client.amqp010.recipes.connect`). A new protocol is one more entry
in :data:`CONNECTS`."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Collection
from typing import Any, TypedDict, TypeVar

from .amqp010 import recipes as recipes010
from .amqp010.core import ConnectOptions as ConnectOptions010
from .amqp091 import recipes as recipes091
from .amqp091.core import ConnectOptions as ConnectOptions091
from .amqp10 import recipes as recipes10
from .amqp10.tokens import TokenProvider
from .engines import connect_options
from .proxy import Proxies
from .recipes import Recipe
from .reconnect import Reconnect

__all__ = ["CONNECTS", "PROTOCOLS", "ConnectKeywords", "connect_protocol"]

C = TypeVar("C")

#: The protocols ``connect(url, protocol=...)`` speaks; the first is the default.
PROTOCOLS = ("1.0", "0-9-1", "0-10")


class ConnectKeywords(TypedDict, total=False):
    """The keyword arguments every adapter's ``connect`` takes besides ``protocol`` (see
    :func:`connect_protocol`)."""

    timeout: float | None
    ssl_context: ssl.SSLContext | None
    allow_insecure_auth: bool
    reconnect: Reconnect | bool | None
    on_reconnect: Callable[[Any], None] | None
    idle_timeout: float | None
    container_id: str | None
    sasl_mechanisms: Collection[str] | None
    sasl: bool | None
    token_provider: TokenProvider | None
    #: ``"http://[user:password@]host:port"``: every URL through that HTTP proxy; False:
    #: none; None (the default): the environment's, for ``ws``/``wss`` (:doc:`defaults`).
    proxy: str | bool | None


def connect_protocol(
    url: str,
    protocol: str,
    *,
    timeout: float | None,
    ssl_context: ssl.SSLContext | None,
    allow_insecure_auth: bool,
    reconnect: Reconnect | bool | None,
    on_reconnect: Callable[[Any], None] | None,
    idle_timeout: float | None,
    container_id: str | None,
    sasl_mechanisms: Collection[str] | None,
    sasl: bool | None,
    token_provider: TokenProvider | None = None,
    proxies: Proxies | None = None,
) -> Recipe[C]:
    """The recipe of every adapter's ``connect``: the protocol is the caller's choice,
    never guessed from the URL or the server: ``"1.0"`` (the default,
    :func:`amqp_sansio.client.amqp10.recipes.connect`), ``"0-9-1"``
    (:func:`amqp_sansio.client.amqp091.recipes.connect`) or ``"0-10"``
    (:func:`amqp_sansio.client.amqp010.recipes.connect`); any other raises
    :class:`ValueError`. ``sasl_mechanisms`` means the same for all (restricts the
    client's choice, one name forces it; for 0-9-1 see
    :func:`~amqp_sansio.client.amqp091.mechanisms`). The options of AMQP 1.0's SASL layer
    and idle time-out (``idle_timeout``, ``container_id``, ``sasl``) have no 0-9-1 or 0-10
    meaning: given with those they raise :class:`ValueError` (a 0-9-1 heartbeat is the
    URL's ``heartbeat`` query parameter); so does ``token_provider`` (claims-based security,
    :doc:`cbs`, is AMQP 1.0's). ``proxies``: the HTTP proxy of each URL, for every
    protocol (the adapters make it from their ``proxy`` option and the environment)."""
    connect = CONNECTS.get(protocol)
    if connect is None:
        raise ValueError(f"protocol is one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    return connect(
        url,
        {
            "timeout": timeout,
            "ssl_context": ssl_context,
            "allow_insecure_auth": allow_insecure_auth,
            "reconnect": reconnect,
            "on_reconnect": on_reconnect,
            "idle_timeout": idle_timeout,
            "container_id": container_id,
            "sasl_mechanisms": sasl_mechanisms,
            "sasl": sasl,
            "token_provider": token_provider,
        },
        proxies,
    )


def _connect10(url: str, given: ConnectKeywords, proxies: Proxies | None) -> Recipe[Any]:
    options = connect_options(
        proxy=proxies,
        container_id=given["container_id"],
        idle_timeout=given["idle_timeout"],
        ssl_context=given["ssl_context"],
        allow_insecure_auth=given["allow_insecure_auth"],
        sasl_mechanisms=given["sasl_mechanisms"],
        sasl=given["sasl"],
    )
    return recipes10.connect(
        url,
        options,
        timeout=given["timeout"],
        reconnect=given["reconnect"],
        on_reconnect=given["on_reconnect"],
        token_provider=given.get("token_provider"),
    )


def _only_10(protocol: str, given: ConnectKeywords) -> None:
    """Refuse the options only AMQP 1.0 has."""
    names = ("idle_timeout", "container_id", "sasl", "token_provider")
    present = [name for name in names if given.get(name) is not None]
    if present:
        raise ValueError(f"{', '.join(present)}: AMQP 1.0 options, not for {protocol=}")


def _connect091(url: str, given: ConnectKeywords, proxies: Proxies | None) -> Recipe[Any]:
    _only_10("0-9-1", given)
    options091: ConnectOptions091 = {
        "ssl_context": given["ssl_context"],
        "allow_insecure_auth": given["allow_insecure_auth"],
        "sasl_mechanisms": given["sasl_mechanisms"],
        "proxy": proxies,
    }
    return recipes091.connect(
        url,
        options091,
        timeout=given["timeout"],
        reconnect=given["reconnect"],
        on_reconnect=given["on_reconnect"],
    )


def _connect010(url: str, given: ConnectKeywords, proxies: Proxies | None) -> Recipe[Any]:
    _only_10("0-10", given)
    options010: ConnectOptions010 = {
        "ssl_context": given["ssl_context"],
        "allow_insecure_auth": given["allow_insecure_auth"],
        "sasl_mechanisms": given["sasl_mechanisms"],
        "proxy": proxies,
    }
    return recipes010.connect(
        url,
        options010,
        timeout=given["timeout"],
        reconnect=given["reconnect"],
        on_reconnect=given["on_reconnect"],
    )


#: Each protocol's connect recipe, by the name ``connect(url, protocol=...)`` takes.
CONNECTS: dict[str, Callable[[str, ConnectKeywords, Proxies | None], Recipe[Any]]] = {
    "1.0": _connect10,
    "0-9-1": _connect091,
    "0-10": _connect010,
}
