"""The AMQP 1.0 classes of the async high-level API, shared by
:mod:`~amqp_sansio.adapters.aio` and :mod:`~amqp_sansio.adapters.trio_adapter`:
:class:`Connection`, :class:`Sender`, :class:`Tracker`, :class:`Receiver`,
:class:`Transaction`, each call one recipe (:mod:`amqp_sansio.client.amqp10.recipes`) run by
the async runner (:func:`amqp_sansio.adapters._async.run`) on the machinery both protocols
share (:mod:`amqp_sansio.adapters._async`).
"""

from __future__ import annotations

from typing import Literal, overload

from amqp_sansio.client import amqp10 as client
from amqp_sansio.client.amqp10 import recipes
from amqp_sansio.client.ops import Delivery

from .._async import CLOSE_GRACE, ConnectionBase, Driver, Receiving

__all__ = ["Connection", "Receiver", "Sender", "Tracker", "Transaction"]


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
