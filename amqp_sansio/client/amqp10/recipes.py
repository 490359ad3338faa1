"""Each call of the AMQP 1.0 high-level API, written once for the three adapters, as a
recipe (the steps of :mod:`amqp_sansio.client.recipes`, which the adapters' runners carry
out for both protocols): connecting, attaching, sending, receiving, draining, detaching,
and a transaction's declare, discharge and end. Each makes every decision and every call
on the :class:`~.core.Core`; the runner only carries out the steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..engines import ConnectOptions, without_sasl
from ..ops import (
    ClientError,
    Delivery,
    Filters,
    Op,
    Outcome,
    PeerWithoutSASLError,
    Sendable,
    TransactionLike,
    as_message,
)
from ..recipes import DRAIN, NOW, WALL, Recipe, Wait, always, open_core
from ..reconnect import Reconnect
from .core import Core, client_core
from .links import ReceiverCore, SenderBase, SenderCore, TransactionBase
from .tokens import TokenProvider

__all__ = [
    "attach_receiver",
    "attach_sender",
    "close_link",
    "connect",
    "declare",
    "discharge",
    "drain",
    "end_transaction",
    "outcome",
    "put_token",
    "receive",
    "send",
]

T = TypeVar("T")
C = TypeVar("C")
S = TypeVar("S", bound=SenderBase)


# -- connections -------------------------------------------------------------------------------


def connect(
    url: str,
    options: ConnectOptions,
    *,
    timeout: float | None,
    reconnect: Reconnect | bool | None = None,
    on_reconnect: Callable[[C], None] | None = None,
    token_provider: TokenProvider | None = None,
) -> Recipe[C]:
    """Every adapter's ``connect``: a core for ``url`` (:func:`~.core.client_core`), a
    transport, the open; if the server turns out to have no SASL layer and SASL was only our
    default, once more without it (:func:`~amqp_sansio.client.engines.without_sasl`).
    ``timeout`` bounds the connecting (every attempt of a ``reconnect`` core that starts
    lost) and the open. With a ``token_provider``, each link puts its token first
    (:func:`put_token`; the wall clock's offset from the runner's is read here, once)."""
    try:
        return (yield from _open(url, options, timeout, reconnect, on_reconnect, token_provider))
    except PeerWithoutSASLError:
        again = without_sasl(url, options)
        if again is None:
            raise
        return (yield from _open(url, again, timeout, reconnect, on_reconnect, token_provider))


def _open(
    url: str,
    options: ConnectOptions,
    timeout: float | None,
    reconnect: Reconnect | bool | None,
    on_reconnect: Callable[[C], None] | None,
    token_provider: TokenProvider | None,
) -> Recipe[C]:
    core = client_core(url, options, reconnect=reconnect)
    if token_provider is not None:
        wall = yield WALL
        core.use_tokens(token_provider, wall - (yield NOW))
    return (yield from open_core(core, timeout, on_reconnect))


def put_token(core: Core, address: str | None) -> Recipe[None]:
    """With a token provider (:meth:`~.core.Core.use_tokens`): put the token of the link
    to ``address`` (the URL's if None) and wait for ``$cbs``'s answer
    (:class:`~.tokens.TokenRefusedError` if it refuses); nothing if one is held already."""
    tokens = core.tokens
    address = address or core.default_address
    if tokens is None or address is None or not tokens.wanted(address):
        return
    put = tokens.put(address, (yield WALL))

    def answered() -> bool:
        core.check()
        return put.done()

    yield Wait(answered)
    put.result()


# -- links -------------------------------------------------------------------------------------


def attach_sender(
    core: Core, address: str | None, *, settled: bool, name: str | None
) -> Recipe[SenderCore]:
    """Attach a sender once the connection is not waiting for a transport, and wait for the
    peer's answer (:class:`~amqp_sansio.client.ops.LinkRefusedError` if it refuses)."""
    yield Wait(core.connected_ready)
    yield from put_token(core, address)
    link = core.sender(address, settled=settled, name=name)
    yield Wait(link.attach_ready)
    return link


def attach_receiver(
    core: Core,
    address: str | None,
    *,
    credit: int,
    auto_accept: bool,
    dynamic: bool,
    name: str | None,
    filters: Filters | None,
    selector: str | None,
    browse: bool = False,
    capabilities: tuple[str, ...] = (),
    max_message_size: int | None = None,
) -> Recipe[ReceiverCore]:
    """Attach a receiver (as :func:`attach_sender`)."""
    yield Wait(core.connected_ready)
    if not dynamic:
        yield from put_token(core, address)
    link = core.receiver(
        address,
        credit=credit,
        auto_accept=auto_accept,
        dynamic=dynamic,
        name=name,
        filters=filters,
        selector=selector,
        browse=browse,
        capabilities=capabilities,
        max_message_size=max_message_size,
    )
    yield Wait(link.attach_ready)
    return link


def send(
    sender: S,
    message: Sendable,
    transaction: TransactionLike | None,
    wait: bool,
    tracker: Callable[[S, Op[Outcome | None]], T],
) -> Recipe[Outcome | T | None]:
    """Wait for credit, send (a time-out until then sends nothing), wait while the transport
    is full; then, unless ``wait`` is false (a ``tracker(sender, op)`` is returned at
    once), wait for the outcome (a time-out then leaves the delivery tracked)."""
    data = as_message(message)
    core = sender.core
    yield Wait(core.send_ready)
    op = core.send(data, settled=sender.settled, transaction=transaction)
    yield DRAIN
    if not wait:
        return tracker(sender, op)
    yield Wait(op.done)
    return op.result()


def outcome(op: Op[Outcome | None]) -> Recipe[Outcome | None]:
    """A tracker's outcome: a wait even when it has come (a cancel point)."""
    yield Wait(op.done)
    return op.result()


def receive(link: ReceiverCore) -> Recipe[Delivery | None]:
    """The next delivery; None once the link is closed."""
    yield Wait(link.take_ready)
    return link.take()


def drain(link: ReceiverCore) -> Recipe[None]:
    """Ask the sender for what it has now; wait until it has used up or given back the
    credit. (The first wait, on nothing, is a cancel point before the drain starts.)"""
    yield Wait(always)
    op = link.drain()
    yield Wait(op.done)


def close_link(link: SenderCore | ReceiverCore) -> Recipe[None]:
    """Detach (closing) the link and wait for the peer's detach."""
    link.close()
    yield Wait(link.close_ready)


# -- transactions ------------------------------------------------------------------------------


def declare(txn: TransactionBase, core: Core) -> Recipe[None]:
    """Declare ``txn`` once the controller can, and wait for the coordinator's answer
    (:class:`~amqp_sansio.client.ops.TransactionError` if it refuses)."""
    yield Wait(core.declare_ready)
    txn.core = core.declare()
    yield Wait(txn.core.declared.done)
    txn.core.declared.result()


def discharge(txn: TransactionBase, core: Core, *, commit: bool) -> Recipe[bool]:
    """Commit (or roll back) ``txn``; returns whether it committed."""
    assert txn.core is not None, "declare first"
    discharged = txn.core.discharged
    if not discharged.done():  # (else a lost connection ended it: its error is the answer)
        yield Wait(core.declare_ready)
        if not discharged.done():  # (lost meanwhile, and connected again)
            core.discharge(txn.core, fail=not commit)
        yield Wait(discharged.done)
    txn.committed = discharged.result()
    return txn.committed


def end_transaction(txn: TransactionBase, core: Core, *, failed: bool) -> Recipe[None]:
    """The end of a transaction's block: commit, or roll back if the block ``failed``,
    unless it was discharged already. If the discharge fails after the block failed, the
    block's exception is the one to see (the coordinator rolls back what is never
    discharged, core spec 4.3)."""
    if txn.committed is not None:
        return
    try:
        yield from discharge(txn, core, commit=not failed)
    except ClientError:
        if not failed:
            raise
