"""The adapters' transports, by URL scheme: each adapter family (blocking sockets, asyncio,
trio, the broker's server) has one table, ``TRANSPORTS``, from a URL's scheme to the
factory that opens (or, on a server, listens for) that transport, and one connect function
that looks the scheme up here (as aiormq's ``TransportFactory``). The bytes' own layers
(TLS for ``amqps`` and ``wss``, the WebSocket binding for ``ws`` and ``wss``) are stacked
around the engine by :func:`amqp_sansio.security.stack.stack`, not here: all four open
TCP.

Adding a transport is one module (its byte layer, or its opener) plus its entry in the
tables (see :doc:`architecture`, "Transports")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

__all__ = ["transport_for"]

F = TypeVar("F")


def transport_for(table: Mapping[str, F], scheme: str) -> F:
    """The factory of ``scheme``'s transport in an adapter's ``table``; a
    :class:`ValueError` naming the schemes it has if there is none."""
    try:
        return table[scheme]
    except KeyError:
        known = ", ".join(f"{name}://" for name in table)
        raise ValueError(f"no transport for {scheme}:// here (this adapter has {known})") from None
