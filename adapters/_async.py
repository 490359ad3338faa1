"""The async high-level API, shared by :mod:`~amqp_sansio.adapters.aio` and
:mod:`~amqp_sansio.adapters.trio_adapter`: :class:`Connection`, :class:`Sender`,
:class:`Receiver`, :class:`Transaction`, and :func:`run`, the async runner of the calls'
recipes (:mod:`amqp_sansio.client.recipes`).

These classes only wait: every protocol decision is the core's
(:mod:`amqp_sansio.client.amqp10`), every call's steps are its recipe's, and all I/O is the
driver's and the loop's. A driver is the loop's own piece (see :class:`Driver`): it feeds
the core, writes what it has to send, and wakes the waiters; a :class:`Loop` sleeps,
connects and starts drivers. So the two async adapters differ only in how a connection's
background I/O is run (an asyncio task; a trio nursery) and how they wait, not in what a
call does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Coroutine
from typing import Any, Generic, Literal, Protocol, TypeVar, overload

from amqp_sansio import Error
from amqp_sansio.client import amqp10 as client
from amqp_sansio.client import recipes
from amqp_sansio.client.lifecycle import DrivenCore
from amqp_sansio.client.ops import Delivery
from amqp_sansio.client.recipes import Recipe

__all__ = [
    "CLOSE_GRACE",
    "Connection",
    "ConnectionBase",
    "Driver",
    "Loop",
    "Receiver",
    "Receiving",
    "Sender",
    "Transaction",
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


class Connection(ConnectionBase[client.Core]):
    """A client connection made by :func:`connect` (an async context manager: leaving it
    closes the connection). ``timeout`` bounds the calls not given their own (None: no
    bound)."""

    def __init__(
        self, driver: Driver, *, address: str | None = None, timeout: float | None = None
    ) -> None:
        core = driver.core
        assert isinstance(core, client.Core)
        super().__init__(driver, core, timeout)
        core.default_address = address

    async def sender(
        self,
        address: str | None = None,
        *,
        settled: bool = False,
        name: str | None = None,
        timeout: float | None = None,
    ) -> Sender:
        """Attach a sender to ``address`` (the URL's by default) once the peer answers;
        :class:`LinkDetachedError` if it refuses."""
        recipe = recipes.attach_sender(self.core, address, settled=settled, name=name)
        return Sender(self, await self._run(recipe, timeout), settled)

    async def receiver(
        self,
        address: str | None = None,
        *,
        credit: int = client.DEFAULT_CREDIT,
        auto_accept: bool = False,
        dynamic: bool = False,
        name: str | None = None,
        timeout: float | None = None,
        filters: client.Filters | None = None,
        selector: str | None = None,
        browse: bool = False,
        capabilities: tuple[str, ...] = (),
        max_message_size: int | None = None,
    ) -> Receiver:
        """Attach a receiver from ``address`` (the URL's by default; ``dynamic``: from a
        temporary node the peer makes, see :attr:`Receiver.address`), keeping ``credit``
        messages granted; ``filters``: the source's filter-set (core spec 3.5.8);
        ``selector``: a JMS message selector, added to it as the filter
        ``apache.org:selector-filter:string`` (key ``jms-selector``); ``browse``: read the
        messages without taking them (the source's distribution-mode ``copy``, core spec
        3.5.3), so they stay on the node; ``capabilities``: the source's, such as
        ``rabbitmq:volatile-queue`` with ``dynamic`` for a direct reply-to address;
        ``max_message_size``: the largest message, in
        bytes, it takes (core spec 2.7.3; None: no limit): a sender with a larger one
        detaches the link with ``amqp:link:message-size-exceeded``, raised as
        :class:`LinkDetachedError` by the receive that waits."""
        recipe = recipes.attach_receiver(
            self.core,
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
        return Receiver(self, await self._run(recipe, timeout))

    def transaction(self, *, timeout: float | None = None) -> Transaction:
        """A transaction, declared on entering it (``async with``): committed when the
        block ends normally, rolled back when it raises."""
        return Transaction(self, timeout)


class Sender(client.SenderBase):
    """A sending link (:meth:`Connection.sender`)."""

    connection: Connection

    @overload
    async def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: Literal[True] = True,
    ) -> client.Outcome | None: ...

    @overload
    async def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: Literal[False],
    ) -> Tracker: ...

    @overload
    async def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: bool,
    ) -> client.Outcome | Tracker | None: ...

    async def send(
        self,
        message: client.Sendable,
        *,
        timeout: float | None = None,
        transaction: Transaction | None = None,
        wait: bool = True,
    ) -> client.Outcome | Tracker | None:
        """Send ``message`` (a :class:`~amqp_sansio.Message`, or a body): wait for credit,
        send, and return the outcome, or None on a pre-settled sender (which waits for
        nothing but credit and the transport's write buffer). With ``wait=False``, return
        a :class:`Tracker` once the message is out, without waiting for its outcome: sends
        then follow each other under the receiver's credit instead of taking a round trip
        each (``await tracker.outcome()`` later)."""
        recipe = recipes.send(self, message, transaction, wait, Tracker)
        return await self.connection._run(recipe, timeout)

    async def close(self, *, timeout: float | None = None) -> None:
        await self.connection._run(recipes.close_link(self.core), timeout)


class Tracker(client.TrackerBase):
    """A message sent by ``await sender.send(message, wait=False)``: :meth:`done` says
    whether its outcome has come, ``await tracker.outcome()`` waits for it."""

    __slots__ = ()

    sender: Sender

    async def outcome(self, *, timeout: float | None = None) -> client.Outcome | None:
        """The receiver's outcome (None on a pre-settled sender); raises what ended the
        link or the connection first. A time-out leaves the delivery tracked."""
        return await self.sender.connection._run(recipes.outcome(self._op), timeout)


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


class Receiver(client.ReceiverBase, Receiving[Delivery]):
    """A receiving link (:meth:`Connection.receiver`): ``async for`` its deliveries (the
    loop ends when the link is closed), or ``await`` :meth:`receive`."""

    connection: Connection

    async def receive(self, *, timeout: float | None = None) -> Delivery | None:
        """The next delivery; None once the link is closed."""
        return await self.connection._run(recipes.receive(self.core), timeout)

    async def drain(self, *, timeout: float | None = None) -> None:
        """Ask the sender for what it has now, and wait until it has used up or given back
        the credit; what came is then waiting to be received."""
        await self.connection._run(recipes.drain(self.core), timeout)

    async def close(self, *, timeout: float | None = None) -> None:
        await self.connection._run(recipes.close_link(self.core), timeout)


class Transaction(client.TransactionBase):
    """A local transaction (core spec part 4), from :meth:`Connection.transaction`: pass it
    as ``transaction=`` to :meth:`Sender.send` or a delivery's ``accept``."""

    connection: Connection

    async def declare(self) -> None:
        await self.connection._run(recipes.declare(self, self.connection.core), self.timeout)

    async def discharge(self, *, commit: bool = True) -> bool:
        """Commit (or roll back); returns whether it committed."""
        recipe = recipes.discharge(self, self.connection.core, commit=commit)
        return await self.connection._run(recipe, self.timeout)

    async def __aenter__(self) -> Transaction:
        await self.declare()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Commit, or roll back if the block raised (then a failing rollback does not hide
        the block's exception), unless discharged already; shielded, bounded by
        :data:`CLOSE_GRACE`, so that a cancelled block still rolls back."""
        recipe = recipes.end_transaction(self, self.connection.core, failed=exc_type is not None)
        with self.connection.driver.shielded(CLOSE_GRACE):
            await self.connection._run(recipe, self.timeout)  # noqa: ASYNC102 (shielded)
