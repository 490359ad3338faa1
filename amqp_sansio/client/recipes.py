"""The vocabulary of the *recipes* both protocols write each call of the high-level API in,
once for the three adapters: a recipe is a generator that yields what it needs done (a
:class:`Step`) and returns the call's result; the recipes that open, reconnect, wait on
and close a connection of either protocol are here, each protocol's calls in its own
folder (:mod:`amqp_sansio.client.amqp10.recipes`,
:mod:`amqp_sansio.client.amqp091.recipes`).

The recipe makes every decision and every call on the client core; an adapter's
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
:data:`WALL`              reads the wall clock (seconds since the epoch)       the time
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

from .lifecycle import DrivenCore

__all__ = [
    "CLOSE_TIMEOUT",
    "DRAIN",
    "NOW",
    "WALL",
    "Abort",
    "Connect",
    "Recipe",
    "Sleep",
    "Start",
    "Step",
    "Wait",
    "always",
    "close_connection",
    "open_core",
    "reconnect_attempts",
    "wait",
]

#: How long a connection's ``close`` waits for the peer's answer by default, seconds.
CLOSE_TIMEOUT = 5.0

T = TypeVar("T")
C = TypeVar("C")


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


class _Wall(Step):
    __slots__ = ()

    def __repr__(self) -> str:
        return "WALL"


#: Back-pressure: wait while too much waits to be written.
DRAIN = _Drain()
#: The runner's clock, the time the core is given.
NOW = _Now()
#: The wall clock (seconds since the epoch): what tokens' expiries are measured on.
WALL = _Wall()


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
            host, port = core.address(parsed)
            transport = yield Connect(host, port, timeout, parsed.scheme)
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
            host, port = core.address(url)
            transport: object = yield Connect(host, port, bound, url.scheme)
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
