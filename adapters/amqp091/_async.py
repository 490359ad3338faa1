"""The async AMQP 0-9-1 API, shared by :mod:`~amqp_sansio.adapters.aio` and
:mod:`~amqp_sansio.adapters.trio_adapter` (``connect(url, protocol="0-9-1")``):
:class:`Connection091`, :class:`Channel`, :class:`Consumer`, :class:`ConfirmTracker`.

As for AMQP 1.0 (:mod:`._async`), these classes only wait: every protocol decision is the
0-9-1 client core's (:mod:`amqp_sansio.client.amqp091`), every call's steps its recipe's,
and the I/O the adapter's driver's. The names are pika's (``exchange_declare``,
``queue_bind``, ``basic_publish``, ``basic_consume``, ...): each is the spec's method,
its arguments the method's fields; see :doc:`amqp091` ("Adapters").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from amqp_sansio import amqp091
from amqp_sansio.client.amqp091 import Confirmation, Core, Delivery, recipes
from amqp_sansio.client.amqp091.handles import (
    ChannelBase,
    ConfirmTrackerBase,
    ConnectionState,
    ConsumerBase,
)
from amqp_sansio.client.ops import Op

from .. import _async

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from amqp_sansio.client import amqp091 as o  # the calls' options (TypedDicts)

__all__ = ["Channel", "ConfirmTracker", "Connection091", "Consumer", "start_connection"]


def start_connection(
    driver: _async.Driver,
    timeout: float | None,
    connection: Callable[..., _async.ConnectionBase[Any]],
) -> _async.ConnectionBase[Any]:
    """The adapter's connection for the protocol of ``driver``'s core: AMQP 1.0's
    (``connection``, the adapter's class), or 0-9-1's."""
    core = driver.core
    if isinstance(core, Core):
        return Connection091(driver, timeout=timeout)
    address = None if core.url is None else core.url.address
    return connection(driver, address=address, timeout=timeout)


class Connection091(_async.ConnectionBase[Core], ConnectionState):
    """An AMQP 0-9-1 connection made by ``connect(url, protocol="0-9-1")`` (an async
    context manager: leaving it closes the connection). ``timeout`` bounds the calls not
    given their own (None: no bound)."""

    def __init__(self, driver: _async.Driver, *, timeout: float | None = None) -> None:
        core = driver.core
        assert isinstance(core, Core)
        super().__init__(driver, core, timeout)

    def __repr__(self) -> str:
        return f"<{type(self._driver).__module__.rpartition('.')[2]}.Connection {self.core!r}>"

    async def channel(self, *, timeout: float | None = None) -> Channel:
        """Open a channel (``channel.open``), once the connection is not waiting for a
        transport."""
        return Channel(self, await self._run(recipes.open_channel(self.core), timeout))

    async def update_secret(
        self, new_secret: str, reason: str, *, timeout: float | None = None
    ) -> None:
        """``connection.update-secret`` (RabbitMQ's extension): the user's new password or
        token, before the old one expires; returns at ``update-secret-ok``. A server that
        refuses it closes the connection (RabbitMQ: 530 ``NOT_ALLOWED``), raised here as
        :class:`~amqp_sansio.client.amqp091.ConnectionClosedError`. Reconnections log in
        with the new secret."""
        await self._run(recipes.update_secret(self.core, new_secret, reason), timeout)


class Channel(ChannelBase):
    """A channel (:meth:`Connection091.channel`); an async context manager that closes it.
    Each call sends the spec's method of the same name and waits for its reply; the
    keyword arguments are the method's fields (:mod:`amqp_sansio.client.amqp091.ops`),
    and ``timeout``. A channel the server closes raises
    :class:`~amqp_sansio.client.amqp091.ChannelClosedError` (with its reply code) from the
    call waiting, and from every later call; the connection stays usable."""

    connection: Connection091

    async def exchange_declare(
        self, exchange: str, type: str = "direct", **options: Unpack[o.ExchangeOptions]
    ) -> None:
        await self._run(recipes.exchange_declare(self.core, exchange, type, options), options)

    async def exchange_delete(
        self, exchange: str, **options: Unpack[o.ExchangeDeleteOptions]
    ) -> None:
        await self._method(amqp091.spec.ExchangeDelete, options, exchange=exchange)

    async def exchange_bind(
        self, destination: str, source: str, **options: Unpack[o.BindOptions]
    ) -> None:
        await self._method(
            amqp091.spec.ExchangeBind, options, destination=destination, source=source
        )

    async def exchange_unbind(
        self, destination: str, source: str, **options: Unpack[o.BindOptions]
    ) -> None:
        await self._method(
            amqp091.spec.ExchangeUnbind, options, destination=destination, source=source
        )

    async def queue_declare(
        self, queue: str = "", **options: Unpack[o.QueueOptions]
    ) -> amqp091.spec.QueueDeclareOk:
        """The reply: ``queue`` (its name: the server's for ``""``), ``message_count``,
        ``consumer_count``."""
        reply: amqp091.spec.QueueDeclareOk = await self._run(
            recipes.queue_declare(self.core, queue, options), options
        )
        return reply

    async def queue_bind(self, queue: str, exchange: str, **options: Unpack[o.BindOptions]) -> None:
        await self._method(amqp091.spec.QueueBind, options, queue=queue, exchange=exchange)

    async def queue_unbind(
        self, queue: str, exchange: str, **options: Unpack[o.BindOptions]
    ) -> None:
        await self._method(amqp091.spec.QueueUnbind, options, queue=queue, exchange=exchange)

    async def queue_purge(self, queue: str, **options: Unpack[o.Timeout]) -> int:
        """How many messages were purged."""
        count: int = await self._run(recipes.queue_purge(self.core, queue), options)
        return count

    async def queue_delete(self, queue: str, **options: Unpack[o.QueueDeleteOptions]) -> int:
        """How many messages went with the queue."""
        count: int = await self._run(recipes.queue_delete(self.core, queue, options), options)
        return count

    async def basic_qos(self, prefetch_count: int, **options: Unpack[o.QosOptions]) -> None:
        """At most ``prefetch_count`` unacknowledged deliveries (0: no limit)."""
        await self._method(amqp091.spec.BasicQos, options, prefetch_count=prefetch_count)

    async def basic_publish(
        self, exchange: str, routing_key: str, body: bytes, **options: Unpack[o.PublishOptions]
    ) -> Confirmation | ConfirmTracker | None:
        """Publish ``body`` to ``exchange`` with ``routing_key`` once the channel may
        (open, connected, not blocked). In confirm mode: the
        :class:`~amqp_sansio.client.amqp091.Confirmation` (``wait=False``: a
        :class:`ConfirmTracker` once the message is out); else None."""
        recipe = recipes.publish(self.core, exchange, routing_key, body, options, self._tracker)
        result: Confirmation | ConfirmTracker | None = await self._run(recipe, options)
        return result

    def _tracker(self, op: Op[Confirmation]) -> ConfirmTracker:
        return ConfirmTracker(self, op)

    async def basic_consume(self, queue: str, **options: Unpack[o.ConsumeOptions]) -> Consumer:
        """A consumer of ``queue``, once the server has answered."""
        core = await self._run(recipes.consume(self.core, queue, options), options)
        return Consumer(self, core)

    async def basic_get(self, queue: str, **options: Unpack[o.GetOptions]) -> Delivery | None:
        """A message from ``queue``, or None if it is empty."""
        delivery: Delivery | None = await self._run(recipes.get(self.core, queue, options), options)
        return delivery

    async def basic_recover(self, **options: Unpack[o.RecoverOptions]) -> None:
        """Deliver again what this channel has not acknowledged."""
        await self._method(amqp091.spec.BasicRecover, {"requeue": True, **options})

    async def confirm_select(self, **options: Unpack[o.Timeout]) -> None:
        """Confirm mode (RabbitMQ's publisher confirms)."""
        await self._method(amqp091.spec.ConfirmSelect, options)

    async def tx_select(self, **options: Unpack[o.Timeout]) -> None:
        await self._method(amqp091.spec.TxSelect, options)

    async def tx_commit(self, **options: Unpack[o.Timeout]) -> None:
        await self._run(recipes.transaction(self.core, amqp091.spec.TxCommit()), options)

    async def tx_rollback(self, **options: Unpack[o.Timeout]) -> None:
        await self._run(recipes.transaction(self.core, amqp091.spec.TxRollback()), options)

    async def close(self, **options: Unpack[o.Timeout]) -> None:
        await self._run(recipes.close_channel(self.core), options)

    async def __aenter__(self) -> Channel:
        return self

    async def __aexit__(self, *exc: object) -> None:
        with self.connection._driver.shielded(_async.CLOSE_GRACE):  # even when cancelled
            await self.close()  # noqa: ASYNC102 (shielded by the driver)


class Consumer(ConsumerBase, _async.Receiving[Delivery]):
    """A consumer (:meth:`Channel.basic_consume`): ``async for`` its deliveries (the loop
    ends when it is cancelled), or ``await`` :meth:`receive`."""

    channel: Channel

    async def receive(self, *, timeout: float | None = None) -> Delivery | None:
        """The next delivery; None once the consumer is cancelled and none is left."""
        return await self.channel.connection._run(recipes.receive(self.core), timeout)

    async def cancel(self, *, timeout: float | None = None) -> None:
        """``basic.cancel``; deliveries that came before the answer can still be taken."""
        await self.channel.connection._run(recipes.cancel(self.core), timeout)


class ConfirmTracker(ConfirmTrackerBase):
    """A message published with ``wait=False`` in confirm mode (see
    :class:`~amqp_sansio.client.amqp091.handles.ConfirmTrackerBase`)."""

    __slots__ = ()

    channel: Channel

    async def confirmation(self, *, timeout: float | None = None) -> Confirmation:
        """The confirm; raises what closed the channel or the connection first."""
        return await self.channel.connection._run(recipes.confirmation(self._op), timeout)
