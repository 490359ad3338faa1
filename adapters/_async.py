"""The async high-level API, shared by :mod:`~amqp_sansio.adapters.aio` and
:mod:`~amqp_sansio.adapters.trio_adapter`: :class:`Connection`, :class:`Sender`,
:class:`Receiver`, :class:`Transaction`.

These classes only wait: every protocol decision is the core's
(:mod:`amqp_sansio.client`), and all I/O is the driver's. A driver is the loop's
own piece (see :class:`Driver`): it feeds the core, writes what it has to send, and wakes
the waiters. So the two async adapters differ only in how a connection's background I/O is
run (an asyncio task; a trio nursery) and how they wait, not in what a call does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, Protocol

from amqp_sansio import Error, client
from amqp_sansio.client import Delivery

__all__ = ["CLOSE_GRACE", "Connection", "Driver", "Receiver", "Sender", "Transaction", "close_all"]

#: How long a cleanup (a close, a transaction's discharge) may take when the block that
#: ends is being cancelled, seconds.
CLOSE_GRACE = 5.0


class Driver(Protocol):
    """What an async adapter's driver gives the shared classes."""

    core: client.Core

    async def wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        """Wait until ``ready()`` (which raises what ends the wait); :class:`TimeoutError`
        after ``timeout`` seconds (None: no bound)."""

    async def drain(self) -> None:
        """Back-pressure: wait while too much waits to be written."""

    def shielded(self, seconds: float) -> contextlib.AbstractContextManager[object]:
        """A scope in which a cleanup runs although the caller is being cancelled (trio:
        cancellation is a state of the scope, every wait in it would end at once), ended
        after ``seconds``."""

    async def stop(self) -> None:
        """End the connection's I/O (its background task or tasks) and close the transport;
        it completes even when the caller is being cancelled."""


async def close_all(drivers: list[Any], timeout: float) -> None:
    """A server's close: send each connection's close, wait up to ``timeout`` for each
    answer, end each one's I/O."""
    for driver in drivers:
        if not driver.core.gone:
            driver.core.close()
    for driver in drivers:
        with contextlib.suppress(TimeoutError):
            await driver.wait(driver.core.close_ready, timeout)
        await driver.stop()


def _always() -> bool:
    return True


class Connection:
    """A client connection made by :func:`connect` (an async context manager: leaving it
    closes the connection). ``timeout`` bounds the calls not given their own (None: no
    bound)."""

    #: The adapter's name, in the repr.
    adapter = "async"

    def __init__(
        self, driver: Driver, *, address: str | None = None, timeout: float | None = None
    ) -> None:
        self._driver = driver
        self.core = driver.core
        driver.core.default_address = address
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"<{self.adapter}.Connection {self.core.engine!r}>"

    async def _wait(self, ready: Callable[[], bool], timeout: float | None) -> None:
        await self._driver.wait(ready, self.timeout if timeout is None else timeout)

    @property
    def reconnects(self) -> int:
        """How many times the connection was made again after a loss (``reconnect=``)."""
        return self.core.reconnects

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
        await self._wait(self.core.connected_ready, timeout)
        core = self.core.sender(address, settled=settled, name=name)
        await self._wait(core.attach_ready, timeout)
        return Sender(self, core, settled)

    async def receiver(
        self,
        address: str | None = None,
        *,
        credit: int = client.DEFAULT_CREDIT,
        auto_accept: bool = False,
        dynamic: bool = False,
        name: str | None = None,
        timeout: float | None = None,
        filters: dict[Any, Any] | None = None,
        selector: str | None = None,
    ) -> Receiver:
        """Attach a receiver from ``address`` (the URL's by default; ``dynamic``: from a
        temporary node the peer makes, see :attr:`Receiver.address`), keeping ``credit``
        messages granted; ``filters``: the source's filter-set (core spec 3.5.8);
        ``selector``: a JMS message selector, added to it as the filter
        ``apache.org:selector-filter:string`` (key ``jms-selector``)."""
        await self._wait(self.core.connected_ready, timeout)
        core = self.core.receiver(
            address,
            credit=credit,
            auto_accept=auto_accept,
            dynamic=dynamic,
            name=name,
            filters=filters,
            selector=selector,
        )
        await self._wait(core.attach_ready, timeout)
        return Receiver(self, core)

    def transaction(self, *, timeout: float | None = None) -> Transaction:
        """A transaction, declared on entering it (``async with``): committed when the
        block ends normally, rolled back when it raises."""
        return Transaction(self, timeout)

    async def close(self, error: Error | None = None, *, timeout: float | None = None) -> None:
        """Close the connection, wait (briefly) for the peer's answer, close the transport.
        Cancelled while it waits, it still closes the transport (then raises)."""
        driver = self._driver
        try:
            if not self.core.gone:
                self.core.close(error)
                with contextlib.suppress(TimeoutError):
                    await driver.wait(self.core.close_ready, 5.0 if timeout is None else timeout)
        finally:
            await driver.stop()  # noqa: ASYNC102 (a driver's stop completes when cancelled)

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        with self._driver.shielded(CLOSE_GRACE):  # a graceful close, even when cancelled
            await self.close()  # noqa: ASYNC102 (shielded by the driver)


class Sender(client.SenderBase):
    """A sending link (:meth:`Connection.sender`)."""

    connection: Connection

    async def send(
        self,
        message: Any,
        *,
        timeout: float | None = None,
        transaction: Any = None,
        wait: bool = True,
    ) -> Any:
        """Send ``message`` (a :class:`~amqp_sansio.Message`, or a body): wait for credit,
        send, and return the outcome, or None on a pre-settled sender (which waits for
        nothing but credit and the transport's write buffer). With ``wait=False``, return
        a :class:`Tracker` once the message is out, without waiting for its outcome: sends
        then follow each other under the receiver's credit instead of taking a round trip
        each (``await tracker.outcome()`` later)."""
        data = client.encode(message)
        conn = self.connection
        await conn._wait(self.core.send_ready, timeout)
        op = self.core.send(data, settled=self.settled, transaction=transaction)
        await conn._driver.drain()
        if not wait:
            return Tracker(self, op)
        await conn._wait(op.done, timeout)
        return op.result()

    async def close(self, *, timeout: float | None = None) -> None:
        self.core.close()
        await self.connection._wait(self.core.close_ready, timeout)


class Tracker(client.TrackerBase):
    """A message sent by ``await sender.send(message, wait=False)``: :meth:`done` says
    whether its outcome has come, ``await tracker.outcome()`` waits for it."""

    __slots__ = ()

    sender: Sender

    async def outcome(self, *, timeout: float | None = None) -> Any:
        """The receiver's outcome (None on a pre-settled sender); raises what ended the
        link or the connection first. A time-out leaves the delivery tracked."""
        op = self._op
        await self.sender.connection._wait(op.done, timeout)  # a cancel point even when done
        return op.result()


class Receiver(client.ReceiverBase):
    """A receiving link (:meth:`Connection.receiver`): ``async for`` its deliveries (the
    loop ends when the link is closed), or ``await`` :meth:`receive`."""

    connection: Connection

    async def receive(self, *, timeout: float | None = None) -> Delivery | None:
        """The next delivery; None once the link is closed."""
        await self.connection._wait(self.core.take_ready, timeout)
        return self.core.take()

    def __aiter__(self) -> Receiver:
        return self

    async def __anext__(self) -> Delivery:
        delivery = await self.receive()
        if delivery is None:
            raise StopAsyncIteration
        return delivery

    async def drain(self, *, timeout: float | None = None) -> None:
        """Ask the sender for what it has now, and wait until it has used up or given back
        the credit; what came is then waiting to be received."""
        conn = self.connection
        await conn._wait(_always, timeout)  # a cancel point before the drain starts
        op = self.core.drain()
        await conn._wait(op.done, timeout)

    async def close(self, *, timeout: float | None = None) -> None:
        self.core.close()
        await self.connection._wait(self.core.close_ready, timeout)


class Transaction(client.TransactionBase):
    """A local transaction (core spec part 4), from :meth:`Connection.transaction`: pass it
    as ``transaction=`` to :meth:`Sender.send` or a delivery's ``accept``."""

    connection: Connection

    async def declare(self) -> None:
        conn, core = self.connection, self.connection.core
        await conn._wait(core.declare_ready, self.timeout)
        self.core = core.declare()
        await conn._wait(self.core.declared.done, self.timeout)
        self.core.declared.result()

    async def discharge(self, *, commit: bool = True) -> bool:
        """Commit (or roll back); returns whether it committed."""
        assert self.core is not None, "declare first"
        conn, core = self.connection, self.connection.core
        await conn._wait(core.declare_ready, self.timeout)
        core.discharge(self.core, fail=not commit)
        await conn._wait(self.core.discharged.done, self.timeout)
        self.committed = self.core.discharged.result()
        return self.committed

    async def __aenter__(self) -> Transaction:
        await self.declare()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if self.committed is None:
            # A cancelled block still rolls back, shielded (bounded by CLOSE_GRACE). If the
            # discharge fails after the block failed, the block's exception is the one to
            # see (the coordinator rolls back what is never discharged, core 4.3).
            with self.connection._driver.shielded(CLOSE_GRACE):
                try:
                    await self.discharge(commit=exc_type is None)  # noqa: ASYNC102 (shielded)
                except client.ClientError:
                    if exc_type is None:
                        raise
