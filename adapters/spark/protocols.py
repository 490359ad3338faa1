"""Which protocol the Spark source and sink speak (option ``protocol``): the one module of
the Spark adapter that picks it. Each function here is one thing the readers and writers do
that the protocols do differently, handed to that protocol's code: AMQP 1.0's
(:mod:`.amqp10`) or 0-9-1's (:mod:`.amqp091`, imported only when a job asks for 0-9-1, so
that a 1.0 job never loads the 0-9-1 client). A new protocol is one more branch in each."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import amqp_sansio as amqp

from . import amqp10
from .options import ReadOptions, WriteOptions

__all__ = [
    "is_091",
    "open_receivers",
    "publish_rows",
    "read_rows",
    "receiver",
    "stream_bounds",
    "stream_connection",
    "stream_errors",
]


def is_091(options: ReadOptions | WriteOptions) -> bool:
    """Whether ``options`` ask for AMQP 0-9-1 (else 1.0, the default)."""
    return options.protocol == "0-9-1"


@contextlib.contextmanager
def receiver(options: ReadOptions, address: str, credit: int) -> Iterator[Any]:
    """A receiver from ``address`` with ``credit`` (0-9-1: a consumer with that prefetch,
    its deliveries seen as 1.0's, :class:`.amqp091.Delivery091`), for the block."""
    if is_091(options):
        from .amqp091 import blocking_consumer

        with blocking_consumer(options, address, credit) as consumer:
            yield consumer
        return
    with amqp10.receiver(options, address, credit) as link:
        yield link


def publish_rows(
    options: WriteOptions,
    messages: Iterator[amqp.Message],
    timeout: float,
    *,
    done: Callable[[int], None] | None = None,
) -> int:
    """Send each message to ``options.address`` and return the count once the broker took
    every one (1.0: accepted, :func:`.amqp10.publish_rows`; 0-9-1: confirmed,
    :func:`.amqp091.publish_rows`)."""
    if is_091(options):
        from .amqp091 import publish_rows as publish091

        return publish091(options, messages, timeout, done=done)
    return amqp10.publish_rows(options, messages, timeout, done=done)


async def open_receivers(
    options: ReadOptions, window: int, keep: Callable[[Any], None]
) -> list[tuple[str, Any]]:
    """A receiver (0-9-1: a consumer with a prefetch of ``window``) from each address, on
    a streaming queue task's asyncio connection, which ``keep`` is given (1.0: as soon as
    it is open; 0-9-1: once the consumers are)."""
    if is_091(options):
        from .amqp091 import open_receivers as open091

        conn, receivers = await open091(options, window)
        keep(conn)
        return list(receivers)
    return await amqp10.open_receivers(options, window, keep)


def read_rows(
    options: ReadOptions, address: str, start: int, end: int, lost: Callable[[int, int], None]
) -> Iterator[tuple[Any, ...]]:
    """The rows of offsets [start, end) of the stream ``address`` (on an executor);
    ``lost(first, end)`` is called for offsets retention dropped before they were read."""
    if is_091(options):
        from .amqp091 import read_rows as read091

        return read091(options, address, start, end, lost)
    return amqp10.read_rows(options, address, start, end, lost)


def stream_errors(options: ReadOptions) -> tuple[type[Exception], ...]:
    """What a lost connection raises while the driver asks streams where they stand."""
    if is_091(options):
        from .amqp091 import ERRORS

        return ERRORS
    return (OSError, amqp.AMQPError)


def stream_connection(options: ReadOptions) -> Any:
    """The driver's connection for asking streams where they stand."""
    if is_091(options):
        from .amqp091 import connect091

        return connect091(options)
    return options.connect(options.addresses[0])


def stream_bounds(conn: Any, options: ReadOptions, address: str) -> tuple[int, int]:
    """(first offset held, next offset) of the stream at ``address``, consuming nothing."""
    if is_091(options):
        from .amqp091 import stream_bounds as bounds091

        return bounds091(conn, options, address)
    return amqp10.bounds(conn, address, options.timeout)
