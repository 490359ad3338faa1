"""Each call of the high-level API, written once for the three adapters, as a *recipe*: a
generator that yields what it needs done (a :class:`Step`) and returns the call's result.

The recipe makes every decision and every call on the :class:`~.core.Core`; an adapter's
runner only carries out the steps, each with its own means (a blocking loop over a
socket, asyncio, trio), and sends the answer back in (``recipe.send``), or throws in what
the step raised (``recipe.throw``: a time-out, a cancellation), which the recipe may catch:

========================  ===================================================  ==============
step                      the runner                                           answers
========================  ===================================================  ==============
:class:`Wait`             runs the connection's I/O until ``ready()`` is true  None
                          (``ready`` raises what ends the wait);
                          :class:`TimeoutError` after the call's time-out
:data:`DRAIN`             waits while too much waits to be written             None
                          (back-pressure; nothing to do in a blocking adapter,
                          which writes as it goes)
:data:`NOW`               reads its clock                                      the time
:class:`Sleep`            sleeps until ``until`` on that clock (no I/O: there  None
                          is no transport)
:class:`Connect`          opens a transport to ``host``:``port``;              the transport
                          :class:`OSError` if it cannot (a
                          :class:`TimeoutError` after ``timeout``)
:class:`Start`            starts driving ``core`` over ``transport``           the adapter's
                                                                               connection
:class:`Abort`            ends ``connection``'s I/O at once                    None
========================  ===================================================  ==============

So the order of the waits, what is checked before and after each, what a time-out leaves
behind (a send that timed out waiting for credit has sent nothing), and the reconnection
schedule are the same in every adapter by construction, and tested once. See
:doc:`architecture`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from amqp_sansio import Error

from .amqp10.core import Core, client_core
from .amqp10.links import ReceiverCore, SenderBase, SenderCore, TransactionBase
from .engines import ConnectOptions, without_sasl
from .lifecycle import DrivenCore
from .ops import (
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
from .reconnect import Reconnect

__all__ = [
    "CLOSE_TIMEOUT",
    "DRAIN",
    "NOW",
    "Abort",
    "Connect",
    "Recipe",
    "Sleep",
    "Start",
    "Step",
    "Wait",
    "always",
    "attach_receiver",
    "attach_sender",
    "close_connection",
    "close_link",
    "connect",
    "declare",
    "discharge",
    "drain",
    "end_transaction",
    "open_core",
    "outcome",
    "receive",
    "reconnect_attempts",
    "send",
    "wait",
]

#: How long a connection's ``close`` waits for the peer's answer by default, seconds.
CLOSE_TIMEOUT = 5.0

T = TypeVar("T")
C = TypeVar("C")
S = TypeVar("S", bound=SenderBase)


# -- the steps ---------------------------------------------------------------------------------


class Step:
    """What a recipe asks its runner to do (see the module's docstring)."""

    __slots__ = ()


class Wait(Step):
    """Run the I/O until ``ready()`` (which raises what ends the wait)."""

    __slots__ = ("ready",)

    def __init__(self, ready: Callable[[], bool]) -> None:
        self.ready = ready

    def __repr__(self) -> str:
        return f"Wait({self.ready!r})"


class _Drain(Step):
    __slots__ = ()

    def __repr__(self) -> str:
        return "DRAIN"


class _Now(Step):
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOW"


#: Back-pressure: wait while too much waits to be written.
DRAIN = _Drain()
#: The runner's clock, the time the core is given.
NOW = _Now()


class Sleep(Step):
    """Sleep until ``until`` on the runner's clock."""

    __slots__ = ("until",)

    def __init__(self, until: float) -> None:
        self.until = until

    def __repr__(self) -> str:
        return f"Sleep({self.until!r})"


class Connect(Step):
    """Open a transport to ``host``:``port``, in at most ``timeout`` seconds (None: no
    bound); :class:`OSError` (:class:`TimeoutError`) if it cannot. ``scheme`` (the URL's)
    picks the transport in the adapter's table of transports."""

    __slots__ = ("host", "port", "scheme", "timeout")

    def __init__(self, host: str, port: int, timeout: float | None, scheme: str = "amqp") -> None:
        self.host, self.port, self.timeout, self.scheme = host, port, timeout, scheme

    def __repr__(self) -> str:
        return f"Connect({self.host!r}, {self.port!r}, {self.timeout!r})"


class Start(Step):
    """Drive ``core`` (of either protocol) over the new ``transport`` (what
    :class:`Connect` answered): the answer is the adapter's connection for that
    protocol."""

    __slots__ = ("core", "transport")

    def __init__(self, core: DrivenCore, transport: object) -> None:
        self.core, self.transport = core, transport

    def __repr__(self) -> str:
        return f"Start({self.core!r}, {self.transport!r})"


class Abort(Step):
    """End the I/O of ``connection`` (what :class:`Start` answered) at once, without a
    close: an open that failed."""

    __slots__ = ("connection",)

    def __init__(self, connection: object) -> None:
        self.connection = connection

    def __repr__(self) -> str:
        return f"Abort({self.connection!r})"


#: A recipe that returns a ``T``: it yields steps and is sent their answers.
Recipe = Generator[Step, Any, T]


def always() -> bool:
    """A condition that holds at once: a :class:`Wait` on it is only a cancel point (an
    async adapter's; a blocking one does nothing)."""
    return True


# -- connections -------------------------------------------------------------------------------


def connect(
    url: str,
    options: ConnectOptions,
    *,
    timeout: float | None,
    reconnect: Reconnect | bool | None = None,
    on_reconnect: Callable[[C], None] | None = None,
) -> Recipe[C]:
    """Every adapter's ``connect``: a core for ``url`` (:func:`~.core.client_core`), a
    transport, the open; if the server turns out to have no SASL layer and SASL was only our
    default, once more without it (:func:`~.engines.without_sasl`). ``timeout`` bounds the
    connecting (every attempt of a ``reconnect`` core that starts lost) and the open."""
    try:
        return (yield from _open(url, options, timeout, reconnect, on_reconnect))
    except PeerWithoutSASLError:
        again = without_sasl(url, options)
        if again is None:
            raise
        return (yield from _open(url, again, timeout, reconnect, on_reconnect))


def _open(
    url: str,
    options: ConnectOptions,
    timeout: float | None,
    reconnect: Reconnect | bool | None,
    on_reconnect: Callable[[C], None] | None,
) -> Recipe[C]:
    return (
        yield from open_core(client_core(url, options, reconnect=reconnect), timeout, on_reconnect)
    )


def open_core(
    core: DrivenCore, timeout: float | None, on_reconnect: Callable[[C], None] | None
) -> Recipe[C]:
    """Connect a new client ``core`` (of either protocol) and open it: a transport to its
    URL (a ``reconnect`` core, which starts lost, makes its first attempt as it makes
    every other), the adapter's connection over it, the open. ``timeout`` bounds the
    connecting and the open."""
    parsed = core.url
    assert parsed is not None
    if core.lost:
        end = None if timeout is None else (yield NOW) + timeout
        transport = yield from reconnect_attempts(core, end, timeout)
        if transport is None:
            core.check()  # it gave up: why
            raise TimeoutError(f"could not connect within {timeout} s")
    else:
        try:
            transport = yield Connect(parsed.host, parsed.port, timeout, parsed.scheme)
        except TimeoutError:
            raise TimeoutError(f"could not connect within {timeout} s") from None
        core.open((yield NOW))
    conn: C = yield Start(core, transport)
    if on_reconnect is not None:
        core.on_reconnect = lambda: on_reconnect(conn)
    try:
        yield Wait(core.open_ready)
    except GeneratorExit:  # (the runner dropped the recipe: nothing more may be yielded)
        raise
    except BaseException:  # a time-out, a refusal, a cancellation: end the I/O first
        yield Abort(conn)
        raise
    return conn


def reconnect_attempts(
    core: DrivenCore, end: float | None, timeout: float | None
) -> Recipe[object | None]:
    """While ``core`` is lost: sleep until its next attempt, connect (each connect bounded
    by ``timeout`` and by ``end``), tell the core how it went (it schedules the next
    attempt after a failure, or gives up), and restart it on the new transport, which is
    returned. None if the core gave up, or ``end`` (on the runner's clock; None: no end)
    came first."""
    while core.lost:
        now = yield NOW
        at, url = core.next_attempt(now)
        if end is not None and at > end:
            yield Sleep(end)
            return None
        yield Sleep(at)
        bound = timeout
        if end is not None:  # what is left of the time
            bound = max(0.0, end - at) if bound is None else max(0.0, min(bound, end - at))
        try:
            transport: object = yield Connect(url.host, url.port, bound, url.scheme)
        except OSError as exc:  # refused, unreachable, timed out
            core.attempt_failed(exc, (yield NOW))
            continue
        core.restart((yield NOW))
        return transport
    return None


def close_connection(core: DrivenCore, error: Error | None) -> Recipe[None]:
    """Close the connection and wait (for the call's time-out) for the peer's answer; a
    time-out, or a transport already gone, ends the wait quietly. The adapter closes its
    transport afterwards, whatever happened."""
    if core.gone:
        return
    core.close(error)
    with contextlib.suppress(OSError):  # timed out (TimeoutError), or the transport is gone
        yield Wait(core.close_ready)


def _never_while_open(core: DrivenCore) -> Callable[[], bool]:
    def never() -> bool:
        core.check()
        return False

    return never


def wait(core: DrivenCore) -> Recipe[None]:
    """Keep the connection serviced (heartbeats, incoming frames) for the call's time-out;
    raises if the connection ends meanwhile."""
    with contextlib.suppress(TimeoutError):
        yield Wait(_never_while_open(core))


# -- links -------------------------------------------------------------------------------------


def attach_sender(
    core: Core, address: str | None, *, settled: bool, name: str | None
) -> Recipe[SenderCore]:
    """Attach a sender once the connection is not waiting for a transport, and wait for the
    peer's answer (:class:`~.ops.LinkRefusedError` if it refuses)."""
    yield Wait(core.connected_ready)
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
    (:class:`~.ops.TransactionError` if it refuses)."""
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
