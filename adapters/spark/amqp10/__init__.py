"""AMQP 1.0's part of the Spark source and sink: what the readers and writers do that the
protocols do differently, over the public API (:func:`amqp_sansio.adapters.sockets.connect`
on the driver and in batch tasks, :func:`amqp_sansio.adapters.aio.connect` in a streaming
queue task): the calls of :class:`amqp_sansio.adapters.spark.calls.Calls`, which
:mod:`amqp_sansio.adapters.spark.protocols` names by option ``protocol`` (the default)."""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10
from amqp_sansio.broker import FIRST_OFFSET, NEXT_OFFSET, OFFSET_ANNOTATION, OFFSET_FILTER

from ..options import ReadOptions, WriteOptions
from ..rows import message_to_row

__all__ = [
    "ERRORS",
    "START_CREDIT",
    "before_last_accept",
    "bounds",
    "open_receivers",
    "publish_rows",
    "read_rows",
    "receiver",
    "sizes",
    "stop_receivers",
    "stream_bounds",
    "stream_connection",
]

_log = logging.getLogger("amqp_sansio.spark")

#: The most credit a receiver task grants first (a queue task's receivers).
START_CREDIT = 1000
#: What a lost connection raises on the 1.0 client.
ERRORS: tuple[type[Exception], ...] = (OSError, amqp.AMQPError)


# -- mode queue --------------------------------------------------------------------------------


@contextlib.contextmanager
def receiver(options: ReadOptions, address: str, credit: int) -> Iterator[Any]:
    """A receiver from ``address`` with ``credit``, for the block."""
    with options.connect(address) as conn:
        yield conn.receiver(address, credit=credit)


async def open_receivers(
    options: ReadOptions, window: int, keep: Callable[[Any], None]
) -> list[tuple[str, Any]]:
    """A receiver from each of the addresses, granting ``window`` credit, on the asyncio
    connection of a streaming queue task, which ``keep`` is given as soon as it is open
    (the task closes it, whatever happens next)."""
    from ... import aio

    url = options.url_for(options.addresses[0])
    conn = await aio.connect(url, **options.connect_options())
    keep(conn)
    receivers: list[tuple[str, Any]] = []
    # A first grant of at most START_CREDIT: a broker that encodes a whole grant before
    # it sends any sends the first message at once; the window from the next grant on.
    for address in options.addresses:
        link = await conn.receiver(address, credit=max(1, min(window, START_CREDIT)))
        link.credit = max(1, window)
        receivers.append((address, link))
    return receivers


def sizes(window: int, part: int) -> tuple[int, int]:
    """A task's window and part as they are: a 1.0 receiver's credit is granted anew as
    the task takes (the window), whatever it holds unsettled."""
    return window, part


async def before_last_accept(receivers: list[tuple[str, Any]]) -> None:
    """Nothing to stop: accepting grants no credit."""


async def stop_receivers(receivers: list[tuple[str, Any]]) -> bool:  # noqa: ASYNC124 (as Calls has it)
    """Take each receiver's credit back (a flow with credit 0, core spec 2.6.7); true when
    some was granted: what was under way may still come."""
    revoked: int = sum([receiver.core.revoke() for _address, receiver in receivers])
    return revoked > 0


def publish_rows(
    options: WriteOptions,
    messages: Iterator[amqp.Message],
    timeout: float,
    *,
    done: Callable[[int], None] | None = None,
) -> int:
    """Send each message unsettled to ``options.address``, at most ``options.window``
    outstanding; return the count once every one is accepted (a rejection, or any outcome
    but accepted, raises RuntimeError with the broker's error). ``done`` is told the count
    at the end."""
    sent = 0
    with options.connect(options.address) as conn:
        sender = conn.sender(options.address)
        outstanding: deque[Any] = deque()

        def settle_some(keep: int) -> None:
            while len(outstanding) > keep:
                outcome = outstanding.popleft().outcome(timeout=timeout)
                if not isinstance(outcome, amqp.Accepted):
                    raise RuntimeError(
                        f"the broker did not accept a message sent to {options.address!r}: "
                        f"{outcome!r}"
                    )

        for message in messages:
            outstanding.append(sender.send(message, wait=False))
            sent += 1
            settle_some(options.window)
        settle_some(0)
    if done is not None:
        done(sent)
    return sent


# -- mode stream -------------------------------------------------------------------------------


def _bounds_of(receiver: Any, address: str) -> tuple[int, int]:
    remote = receiver.core.link.remote
    properties = (None if remote is None else remote.properties) or {}
    first, end = properties.get(FIRST_OFFSET), properties.get(NEXT_OFFSET)
    if type(first) is not int or type(end) is not int:
        raise RuntimeError(
            f"{address!r} is not a stream node: the broker's answer to an attach with an "
            "offset filter gives no offsets (mode 'stream' reads nodes with offsets, such as "
            "the reference broker's stream nodes; use mode 'queue' for a queue)"
        )
    return first, end


def bounds(conn: Any, address: str, timeout: float) -> tuple[int, int]:
    """(first offset held, next offset) of the stream at ``address``, consuming nothing."""
    receiver = conn.receiver(
        address, credit=1, filters={OFFSET_FILTER: amqp.Symbol("next")}, timeout=timeout
    )
    try:
        return _bounds_of(receiver, address)
    finally:
        receiver.close(timeout=timeout)


def stream_connection(options: ReadOptions) -> Any:
    """The driver's connection for asking streams where they stand."""
    return options.connect(options.addresses[0])


def stream_bounds(conn: Any, options: ReadOptions, address: str) -> tuple[int, int]:
    """(first offset held, next offset) of the stream at ``address`` (:func:`bounds`)."""
    return bounds(conn, address, options.timeout)


def read_rows(
    options: ReadOptions, address: str, start: int, end: int, lost: Callable[[int, int], None]
) -> Iterator[tuple[Any, ...]]:
    """The rows of offsets [start, end) of the stream ``address`` (on an executor): a
    receiver of its own, attached with the offset filter at ``start``; ``lost(first, end)``
    is called for offsets retention dropped before they were read."""
    with options.connect(address) as conn:
        receiver = conn.receiver(
            address,
            credit=max(1, min(options.credit, end - start)),
            auto_accept=True,  # taken and ignored by a stream: keeps the credit flowing
            filters={OFFSET_FILTER: amqp.codec.amqp10.ULong(start)},
            timeout=options.timeout,
        )
        first, _ = _bounds_of(receiver, address)
        expected = start
        if first > expected:
            lost(expected, min(first, end))
            expected = first
        while expected < end:
            try:
                delivery = receiver.receive(timeout=options.timeout)
            except TimeoutError:
                raise RuntimeError(
                    f"no message at offset {expected} of stream {address!r} within "
                    f"{options.timeout} s (option 'timeout')"
                ) from None
            if delivery is None:
                raise RuntimeError(f"the broker closed the link reading stream {address!r}")
            try:
                message = delivery.message
                offset = (message.message_annotations or {})[OFFSET_ANNOTATION]
                row = message_to_row(message, address)
            except (amqp.DecodeError, ValueError, KeyError) as exc:
                # The offset is unknown: the next message's tells whether this was the
                # expected one.
                _log.warning("an undecodable message in stream %r (%s): skipped", address, exc)
                expected += 1
                continue
            if offset < expected:
                continue
            if offset > expected:
                lost(expected, min(offset, end))
            if offset >= end:
                break
            yield (*row[:-2], offset, 0)
            expected = offset + 1
