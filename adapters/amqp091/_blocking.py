"""The blocking AMQP 0-9-1 API of :mod:`~amqp_sansio.adapters.sockets`
(``connect(url, protocol="0-9-1")``): the calls of the async one (:mod:`._async091`),
blocking, with the I/O inside them as for AMQP 1.0 (an idle application calls
``conn.wait(seconds)``); see :doc:`amqp091` ("Adapters")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from amqp_sansio import amqp091
from amqp_sansio.client.amqp091 import Confirmation, Core, Delivery, recipes
from amqp_sansio.client.amqp091.handles import (
    ChannelBase,
    ConfirmTrackerBase,
    ConnectionState,
    ConsumerBase,
)
from amqp_sansio.client.ops import Op

from .._blocking import DEFAULT_TIMEOUT, ConnectionBase, SocketDriver

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from amqp_sansio.client import amqp091 as o  # the calls' options (TypedDicts)

__all__ = ["Channel", "ConfirmTracker", "Connection091", "Consumer"]


class Connection091(ConnectionBase[Core], ConnectionState):
    """An AMQP 0-9-1 connection made by ``sockets.connect(url, protocol="0-9-1")`` (a
    context manager). ``timeout`` bounds each call not given its own."""

    def __init__(
        self, core: Core, driver: SocketDriver, *, timeout: float | None = DEFAULT_TIMEOUT
    ) -> None:
        super().__init__(core, driver, timeout=timeout)

    def __repr__(self) -> str:
        return f"<sockets.Connection {self.core!r}>"

    def channel(self, *, timeout: float | None = None) -> Channel:
        """Open a channel (``channel.open``), once the connection is not waiting for a
        transport."""
        return Channel(self, self._run(recipes.open_channel(self.core), timeout))

    def update_secret(self, new_secret: str, reason: str, *, timeout: float | None = None) -> None:
        """``connection.update-secret`` (RabbitMQ's extension): the user's new password or
        token, before the old one expires; returns at ``update-secret-ok``. A server that
        refuses it closes the connection (RabbitMQ: 530 ``NOT_ALLOWED``), raised here as
        :class:`~amqp_sansio.client.amqp091.ConnectionClosedError`. Reconnections log in
        with the new secret."""
        self._run(recipes.update_secret(self.core, new_secret, reason), timeout)


class Channel(ChannelBase):
    """A channel (:meth:`Connection091.channel`), a context manager: the calls of
    :class:`amqp_sansio.adapters.aio.Channel`, blocking."""

    connection: Connection091

    def exchange_declare(
        self, exchange: str, type: str = "direct", **options: Unpack[o.ExchangeOptions]
    ) -> None:
        self._run(recipes.exchange_declare(self.core, exchange, type, options), options)

    def exchange_delete(self, exchange: str, **options: Unpack[o.ExchangeDeleteOptions]) -> None:
        self._method(amqp091.spec.ExchangeDelete, options, exchange=exchange)

    def exchange_bind(
        self, destination: str, source: str, **options: Unpack[o.BindOptions]
    ) -> None:
        self._method(amqp091.spec.ExchangeBind, options, destination=destination, source=source)

    def exchange_unbind(
        self, destination: str, source: str, **options: Unpack[o.BindOptions]
    ) -> None:
        self._method(amqp091.spec.ExchangeUnbind, options, destination=destination, source=source)

    def queue_declare(
        self, queue: str = "", **options: Unpack[o.QueueOptions]
    ) -> amqp091.spec.QueueDeclareOk:
        reply: amqp091.spec.QueueDeclareOk = self._run(
            recipes.queue_declare(self.core, queue, options), options
        )
        return reply

    def queue_bind(self, queue: str, exchange: str, **options: Unpack[o.BindOptions]) -> None:
        self._method(amqp091.spec.QueueBind, options, queue=queue, exchange=exchange)

    def queue_unbind(self, queue: str, exchange: str, **options: Unpack[o.BindOptions]) -> None:
        self._method(amqp091.spec.QueueUnbind, options, queue=queue, exchange=exchange)

    def queue_purge(self, queue: str, **options: Unpack[o.Timeout]) -> int:
        count: int = self._run(recipes.queue_purge(self.core, queue), options)
        return count

    def queue_delete(self, queue: str, **options: Unpack[o.QueueDeleteOptions]) -> int:
        count: int = self._run(recipes.queue_delete(self.core, queue, options), options)
        return count

    def basic_qos(self, prefetch_count: int, **options: Unpack[o.QosOptions]) -> None:
        self._method(amqp091.spec.BasicQos, options, prefetch_count=prefetch_count)

    def basic_publish(
        self, exchange: str, routing_key: str, body: bytes, **options: Unpack[o.PublishOptions]
    ) -> Confirmation | ConfirmTracker | None:
        recipe = recipes.publish(self.core, exchange, routing_key, body, options, self._tracker)
        result: Confirmation | ConfirmTracker | None = self._run(recipe, options)
        return result

    def _tracker(self, op: Op[Confirmation]) -> ConfirmTracker:
        return ConfirmTracker(self, op)

    def basic_consume(self, queue: str, **options: Unpack[o.ConsumeOptions]) -> Consumer:
        core = self._run(recipes.consume(self.core, queue, options), options)
        return Consumer(self, core)

    def basic_get(self, queue: str, **options: Unpack[o.GetOptions]) -> Delivery | None:
        delivery: Delivery | None = self._run(recipes.get(self.core, queue, options), options)
        return delivery

    def basic_recover(self, **options: Unpack[o.RecoverOptions]) -> None:
        self._method(amqp091.spec.BasicRecover, {"requeue": True, **options})

    def confirm_select(self, **options: Unpack[o.Timeout]) -> None:
        self._method(amqp091.spec.ConfirmSelect, options)

    def tx_select(self, **options: Unpack[o.Timeout]) -> None:
        self._method(amqp091.spec.TxSelect, options)

    def tx_commit(self, **options: Unpack[o.Timeout]) -> None:
        self._run(recipes.transaction(self.core, amqp091.spec.TxCommit()), options)

    def tx_rollback(self, **options: Unpack[o.Timeout]) -> None:
        self._run(recipes.transaction(self.core, amqp091.spec.TxRollback()), options)

    def close(self, **options: Unpack[o.Timeout]) -> None:
        self._run(recipes.close_channel(self.core), options)

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Consumer(ConsumerBase):
    """A consumer (:meth:`Channel.basic_consume`): iterate it, or call :meth:`receive`."""

    channel: Channel

    def receive(self, *, timeout: float | None = None) -> Delivery | None:
        """The next delivery; None once the consumer is cancelled and none is left."""
        return self.channel.connection._run(recipes.receive(self.core), timeout)

    def __iter__(self) -> Iterator[Delivery]:
        while (delivery := self.receive()) is not None:
            yield delivery

    def cancel(self, *, timeout: float | None = None) -> None:
        """``basic.cancel``; deliveries that came before the answer can still be taken."""
        self.channel.connection._run(recipes.cancel(self.core), timeout)


class ConfirmTracker(ConfirmTrackerBase):
    """The blocking :class:`amqp_sansio.adapters.aio.ConfirmTracker`."""

    __slots__ = ()

    channel: Channel

    def confirmation(self, *, timeout: float | None = None) -> Confirmation:
        """The confirm; raises what closed the channel or the connection first."""
        return self.channel.connection._run(recipes.confirmation(self._op), timeout)
