"""Which protocol a client speaks: the one module of the client core that picks it, from
the ``protocol`` every adapter's ``connect(url, protocol=...)`` is given (never guessed
from the URL or the server), and hands the call to that protocol's connect recipe
(:func:`amqp_sansio.client.amqp10.recipes.connect`,
:func:`amqp_sansio.client.amqp091.recipes.connect`). A new protocol is one more entry
here."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Collection
from typing import Any, TypedDict, TypeVar

from .amqp091 import recipes as recipes091
from .amqp091.core import ConnectOptions as ConnectOptions091
from .amqp10 import recipes as recipes10
from .engines import connect_options
from .recipes import Recipe
from .reconnect import Reconnect

__all__ = ["PROTOCOLS", "ConnectKeywords", "connect_protocol"]

C = TypeVar("C")

#: The protocols ``connect(url, protocol=...)`` speaks; the first is the default.
PROTOCOLS = ("1.0", "0-9-1")


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
) -> Recipe[C]:
    """The recipe of every adapter's ``connect``: the protocol is the caller's choice,
    never guessed from the URL or the server: ``"1.0"`` (the default,
    :func:`amqp_sansio.client.amqp10.recipes.connect`) or ``"0-9-1"``
    (:func:`amqp_sansio.client.amqp091.recipes.connect`).
    ``sasl_mechanisms`` means the same for both (restricts the client's choice, one name
    forces it; for 0-9-1 see :func:`~amqp_sansio.client.amqp091.mechanisms`). The
    options of AMQP 1.0's SASL layer and idle time-out (``idle_timeout``,
    ``container_id``, ``sasl``) have no 0-9-1 meaning: given with ``"0-9-1"`` they raise
    :class:`ValueError` (its heartbeat is the URL's ``heartbeat`` query parameter), as does
    any other protocol."""
    if protocol == "1.0":
        options = connect_options(
            container_id=container_id,
            idle_timeout=idle_timeout,
            ssl_context=ssl_context,
            allow_insecure_auth=allow_insecure_auth,
            sasl_mechanisms=sasl_mechanisms,
            sasl=sasl,
        )
        return recipes10.connect(
            url, options, timeout=timeout, reconnect=reconnect, on_reconnect=on_reconnect
        )
    if protocol != "0-9-1":
        raise ValueError(f"protocol is one of {', '.join(PROTOCOLS)}, not {protocol!r}")
    only_10 = {
        "idle_timeout": idle_timeout,
        "container_id": container_id,
        "sasl": sasl,
    }
    given = [name for name, value in only_10.items() if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)}: AMQP 1.0 options, not for protocol='0-9-1'")
    options091: ConnectOptions091 = {
        "ssl_context": ssl_context,
        "allow_insecure_auth": allow_insecure_auth,
        "sasl_mechanisms": sasl_mechanisms,
    }
    return recipes091.connect(
        url, options091, timeout=timeout, reconnect=reconnect, on_reconnect=on_reconnect
    )
