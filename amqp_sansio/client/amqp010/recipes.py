"""Each call of the AMQP 0-10 high-level API, written once for the three adapters as a
recipe (the steps of :mod:`amqp_sansio.client.recipes`): what to send, what to wait
for. A command's call returns when the peer completes it (0-10 spec,
``session.completed``); one that times out stays tracked, and its op is done when the
completion comes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from amqp_sansio.client.ops import Op
from amqp_sansio.client.recipes import Recipe, Wait, open_core
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.definitions import amqp010 as spec

from .core import SESSION_TIMEOUT, ConnectOptions, Core, SessionCore, client_core
from .messages import Delivery

__all__ = [
    "accept",
    "cancel",
    "close_session",
    "command",
    "connect",
    "open_session",
    "queue_query",
    "receive",
    "send",
    "subscribe",
]

C = TypeVar("C")


def connect(
    url: str,
    options: ConnectOptions,
    *,
    timeout: float | None,
    reconnect: Reconnect | bool | None = None,
    on_reconnect: Callable[[C], None] | None = None,
) -> Recipe[C]:
    """Every adapter's ``connect(url, protocol="0-10")``: a core for ``url``
    (:func:`~.core.client_core`), a transport, the open."""
    return open_core(client_core(url, options, reconnect=reconnect), timeout, on_reconnect)


def open_session(
    core: Core, name: str | bytes, timeout: int = SESSION_TIMEOUT
) -> Recipe[SessionCore]:
    """A new session ``name`` (``session.attach``); wait until it is attached."""
    session = core.session(name, timeout)
    yield Wait(session.attached_ready)
    return session


def _done(op: Op[Any]) -> Recipe[Any]:
    yield Wait(op.done)
    return op.result()


def command(
    session: SessionCore,
    command: spec.Command,
    header: Sequence[spec.Struct] = (),
    body: bytes = b"",
) -> Recipe[Any]:
    """Send ``command`` and wait until the peer completes it: its result, or None."""
    return (yield from _done(session.send(command, header, body)))


def send(
    session: SessionCore,
    destination: str,
    body: bytes,
    header: Sequence[spec.Struct],
    *,
    wait: bool = True,
) -> Recipe[Op[Any]]:
    """``message.transfer`` of ``body`` to ``destination`` (an exchange; ``""`` the
    default one) with ``header`` (:func:`~.messages.message_header`), accept mode
    ``none``; with ``wait``, until the peer completes it. Gives its op."""
    transfer = spec.MessageTransfer(destination=destination, accept_mode=1, acquire_mode=0)
    op = session.send(transfer, header, body)
    if wait:
        yield from _done(op)
    return op


def queue_query(session: SessionCore, queue: str) -> Recipe[spec.QueueQueryResult]:
    """``queue.query``: its ``queue.query-result`` (message and subscriber counts)."""
    result = yield from command(session, spec.QueueQuery(queue=queue))
    assert isinstance(result, spec.QueueQueryResult)
    return result


def subscribe(
    session: SessionCore, queue: str, destination: str, credit: int, *, accept: bool
) -> Recipe[None]:
    """Subscribe ``destination`` to ``queue`` with ``credit`` messages of credit
    (:meth:`~.core.SessionCore.subscribe`); wait until the peer has taken it."""
    yield from _done(session.subscribe(queue, destination, credit, accept=accept))


def cancel(session: SessionCore, destination: str) -> Recipe[None]:
    """End the subscription ``destination`` (``message.cancel``); wait until it is done."""
    yield from _done(session.cancel(destination))


def receive(session: SessionCore, destination: str, *, refill: bool = True) -> Recipe[Delivery]:
    """Wait for the next delivery for ``destination`` and take it (``refill``: giving its
    credit back, :meth:`~.core.SessionCore.take`)."""
    yield Wait(session.delivery_ready(destination))
    return session.take(destination, refill=refill)


def accept(session: SessionCore, deliveries: Sequence[Delivery]) -> Recipe[None]:
    """``message.accept`` of ``deliveries``; wait until the peer completes it."""
    yield from _done(session.accept(deliveries))


def close_session(session: SessionCore) -> Recipe[None]:
    """End the session and wait for the peer's ``session.detached``."""
    if session.ended.done():
        return
    session.close()
    yield Wait(session.ended.done)
