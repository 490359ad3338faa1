"""The async machinery shared by :mod:`~amqp_sansio.adapters.aio` and
:mod:`~amqp_sansio.adapters.trio_adapter` for every protocol: :func:`run`, the async runner
of the calls' recipes (:mod:`amqp_sansio.client.recipes`), :class:`ConnectionBase` and
:class:`Receiving`, which each protocol's classes build on (AMQP 1.0's in
:mod:`amqp_sansio.adapters.amqp10._async`, 0-9-1's in
:mod:`amqp_sansio.adapters.amqp091._async`).

These classes only wait: every protocol decision is the core's
(:mod:`amqp_sansio.client.amqp10`, :mod:`amqp_sansio.client.amqp091`), every call's steps
are its recipe's, and all I/O is the
driver's and the loop's. A driver is the loop's own piece (see :class:`Driver`): it feeds
the core, writes what it has to send, and wakes the waiters; a :class:`Loop` sleeps,
connects and starts drivers. So the two async adapters differ only in how a connection's
background I/O is run (an asyncio task; a trio nursery) and how they wait, not in what a
call does.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Coroutine
from typing import Any, Generic, Protocol, TypeVar

from amqp_sansio import Error
from amqp_sansio.client import recipes
from amqp_sansio.client.lifecycle import DrivenCore
from amqp_sansio.client.recipes import Recipe

__all__ = [
    "CLOSE_GRACE",
    "ConnectionBase",
    "Driver",
    "Loop",
    "Receiving",
    "close_all",
    "run",
]

T = TypeVar("T")
K = TypeVar("K")
CB = TypeVar("CB", bound="ConnectionBase[Any]")
D = TypeVar("D")
RV = TypeVar("RV", bound="Receiving[Any]")

_Wait = recipes.Wait
_DRAIN = recipes.DRAIN

#: How long a cleanup (a close, a transaction's discharge) may take when the block that
#: ends is being cancelled, seconds.
CLOSE_GRACE = 5.0


class Driver(Protocol):
    """What an async adapter's driver gives the shared classes (for a core of either
    protocol)."""

    core: DrivenCore
    #: A wait whose condition holds at once is no cancel point (asyncio's): :func:`run`
    #: then need not call :meth:`wait`. (Trio's is one, and counts the calls.)
    eager: bool

    async def wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        """Wait until ``ready()`` (which raises what ends the wait); :class:`TimeoutError`
        after ``timeout`` seconds (None: no bound)."""

    def drained(self) -> bool:
        """Whether :meth:`drain` would return at once (checked first when :attr:`eager`)."""

    async def drain(self) -> None:
        """Back-pressure: wait while too much waits to be written."""

    def shielded(self, seconds: float) -> contextlib.AbstractContextManager[object]:
        """A scope in which a cleanup runs although the caller is being cancelled (trio:
        cancellation is a state of the scope, every wait in it would end at once), ended
        after ``seconds``."""

    async def stop(self) -> None:
        """End the connection's I/O (its background task or tasks) and close the transport;
        it completes even when the caller is being cancelled."""

    def cancel(self) -> None:
        """End the connection's I/O now, without waiting (the tasks end on their own)."""


class Loop(Protocol):
    """What an async adapter's event loop gives :func:`run` for the steps that are not a
    connection's: its clock, sleeping, connecting, starting and aborting a connection."""

    def now(self) -> float:
        """The loop's clock."""

    async def sleep_until(self, deadline: float) -> None:
        """Sleep until ``deadline`` on the loop's clock."""

    async def connect(self, scheme: str, host: str, port: int, timeout: float | None) -> object:
        """A new transport of ``scheme`` (a URL's, looked up in the adapter's table of
        transports, see :mod:`._transports`) to ``host``:``port``; :class:`OSError` if it
        cannot be made, :class:`TimeoutError` (``"timed out"``) after ``timeout``
        seconds."""

    def start(
        self, core: DrivenCore, transport: object, timeout: float | None
    ) -> ConnectionBase[Any]:
        """Drive ``core`` over ``transport`` (its I/O started): the connection (its
        protocol's)."""

    async def abort(self, conn: ConnectionBase[Any]) -> None:
        """End ``conn``'s I/O at once (an open that failed)."""


async def run(
    recipe: Recipe[T], loop: Loop | None, driver: Driver | None, timeout: float | None
) -> T:
    """Carry out ``recipe`` (:mod:`amqp_sansio.client.recipes`): its waits on ``driver``
    (each bounded by ``timeout``, None: no bound), its other steps on ``loop``; a
    :class:`~amqp_sansio.client.recipes.Start` makes the connection whose driver the waits
    use from then on. What a step raises (a time-out, a cancellation) is thrown into the
    recipe."""
    send = recipe.send
    try:
        step = send(None)
        while True:
            value: object = None
            try:
                if type(step) is _Wait:
                    if not (driver.eager and step.ready()):  # type: ignore[union-attr]
                        await driver.wait(step.ready, timeout)  # type: ignore[union-attr]
                elif step is _DRAIN:
                    if not (driver.eager and driver.drained()):  # type: ignore[union-attr]
                        await driver.drain()  # type: ignore[union-attr]
                elif step is recipes.WALL:
                    value = time.time()
                else:
                    assert loop is not None
                    if step is recipes.NOW:
                        value = loop.now()
                    elif isinstance(step, recipes.Sleep):
                        await loop.sleep_until(step.until)
                    elif isinstance(step, recipes.Connect):
                        value = await loop.connect(step.scheme, step.host, step.port, step.timeout)
                    elif isinstance(step, recipes.Start):
                        value = conn = loop.start(step.core, step.transport, timeout)
                        driver = conn.driver
                    elif isinstance(step, recipes.Abort):
                        assert isinstance(step.connection, ConnectionBase)
                        await loop.abort(step.connection)
                    else:  # pragma: no cover - every step is above
                        raise TypeError(f"not a step: {step!r}")
            # Thrown into the recipe, which raises it again (no recipe catches a
            # cancellation: each catches only its own time-outs and errors).
            except BaseException as exc:  # noqa: ASYNC103
                step = recipe.throw(exc)
            else:
                step = send(value)
    except StopIteration as stop:
        result: T = stop.value
        return result


async def close_all(drivers: list[Driver], timeout: float) -> None:
    """A server's close: send each connection's close, wait up to ``timeout`` for each
    answer, end each one's I/O."""
    for driver in drivers:
        if not driver.core.gone:
            driver.core.close()
    for driver in drivers:
        with contextlib.suppress(TimeoutError):
            await driver.wait(driver.core.close_ready, timeout)
        await driver.stop()


class ConnectionBase(Generic[K]):
    """What the connections of both protocols share: the driver, the core, running a
    call's recipe, closing (an async context manager: leaving it closes the connection).
    ``timeout`` bounds the calls not given their own (None: no bound)."""

    #: The adapter's name, in the repr.
    adapter = "async"

    def __init__(self, driver: Driver, core: K, timeout: float | None) -> None:
        self._driver = driver
        self.core = core
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"<{self.adapter}.Connection {self.core.engine!r}>"  # type: ignore[attr-defined]

    @property
    def driver(self) -> Driver:
        """What runs the connection's I/O (as the blocking connection's ``driver``)."""
        return self._driver

    def _run(self, recipe: Recipe[T], timeout: float | None) -> Coroutine[object, None, T]:
        """Carry out a call's recipe, each wait bounded by ``timeout`` (None: the
        connection's). (A plain function returning :func:`run`'s coroutine: one frame less
        on every call.)"""
        return run(recipe, None, self._driver, self.timeout if timeout is None else timeout)

    @property
    def reconnects(self) -> int:
        """How many times the connection was made again after a loss (``reconnect=``)."""
        return self._driver.core.reconnects

    async def close(self, error: Error | None = None, *, timeout: float | None = None) -> None:
        """Close the connection, wait (briefly) for the peer's answer, close the transport.
        Cancelled while it waits, it still closes the transport (then raises)."""
        try:
            bound = recipes.CLOSE_TIMEOUT if timeout is None else timeout
            await self._run(recipes.close_connection(self._driver.core, error), bound)
        finally:
            await self._driver.stop()  # noqa: ASYNC102 (a driver's stop completes when cancelled)

    def _cancel(self) -> None:
        """End the connection's I/O now (without a close)."""
        self._driver.cancel()

    async def __aenter__(self: CB) -> CB:
        return self

    async def __aexit__(self, *exc: object) -> None:
        with self._driver.shielded(CLOSE_GRACE):  # a graceful close, even when cancelled
            await self.close()  # noqa: ASYNC102 (shielded by the driver)


class Receiving(Generic[D]):
    """``async for`` over what :meth:`receive` gives, until it gives None: a receiver's
    deliveries (AMQP 1.0), a consumer's (0-9-1)."""

    async def receive(self, *, timeout: float | None = None) -> D | None:
        raise NotImplementedError  # pragma: no cover - each receiver has its own

    def __aiter__(self: RV) -> RV:
        return self

    async def __anext__(self) -> D:
        delivery = await self.receive()
        if delivery is None:
            raise StopAsyncIteration
        return delivery
