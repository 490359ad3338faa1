"""The async AMQP 0-10 API, shared by :mod:`~amqp_sansio.adapters.aio` and
:mod:`~amqp_sansio.adapters.trio_adapter` (``connect(url, protocol="0-10")``):
:class:`Connection010` and :class:`Session010`. As for the other protocols, these classes
only wait: every protocol decision is the 0-10 client core's
(:mod:`amqp_sansio.client.amqp010`), every call's steps its recipe's, and the I/O the
adapter's driver's; see :doc:`amqp010` ("Adapters")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from amqp_sansio import amqp010
from amqp_sansio.client.amqp010 import Core, Delivery, SessionCore, message_header, recipes
from amqp_sansio.client.amqp010.messages import MessageId

from .. import _async

__all__ = ["Connection010", "Session010"]

spec = amqp010.definitions


class Connection010(_async.ConnectionBase[Core]):
    """An AMQP 0-10 connection made by ``connect(url, protocol="0-10")`` (an async
    context manager: leaving it closes the connection). ``timeout`` bounds the calls not
    given their own (None: no bound)."""

    def __init__(self, driver: _async.Driver, *, timeout: float | None = None) -> None:
        core = driver.core
        assert isinstance(core, Core)
        super().__init__(driver, core, timeout)

    def __repr__(self) -> str:
        adapter = type(self._driver).__module__.rpartition(".")[2]
        return f"<{adapter}.Connection010 {self.core!r}>"

    async def session(
        self, name: str | bytes, *, keep: int = 60, timeout: float | None = None
    ) -> Session010:
        """Attach a session ``name`` (``session.attach``), its state kept ``keep``
        seconds once detached (a lost connection resumes it within that time)."""
        return Session010(
            self, await self._run(recipes.open_session(self.core, name, keep), timeout)
        )


class Session010:
    """A session (:meth:`Connection010.session`), an async context manager: leaving it
    ends the session. The calls of :class:`amqp_sansio.adapters.sockets.Session010`,
    awaited."""

    def __init__(self, connection: Connection010, core: SessionCore) -> None:
        self.connection = connection
        self.core = core

    def __repr__(self) -> str:
        return f"<Session010 {self.core.name!r}>"

    async def send(
        self,
        body: bytes,
        *,
        destination: str = "",
        routing_key: str | None = None,
        wait: bool = True,
        timeout: float | None = None,
        durable: bool = False,
        content_type: str | None = None,
        content_encoding: str | None = None,
        correlation_id: str | bytes | None = None,
        reply_to: str | None = None,
        message_id: MessageId | None = None,
        headers: Mapping[str, object] | None = None,
        priority: int | None = None,
        ttl: int | None = None,
    ) -> None:
        """``message.transfer`` of ``body`` to the exchange ``destination`` with
        ``routing_key`` and the properties of
        :func:`~amqp_sansio.client.amqp010.message_header`; with ``wait`` until the peer
        completes it."""
        header = message_header(
            routing_key=routing_key,
            durable=durable,
            content_type=content_type,
            content_encoding=content_encoding,
            correlation_id=correlation_id,
            reply_to=reply_to,
            message_id=message_id,
            headers=headers,
            priority=priority,
            ttl=ttl,
        )
        await self.connection._run(
            recipes.send(self.core, destination, body, header, wait=wait), timeout
        )

    async def queue_declare(
        self,
        queue: str,
        *,
        durable: bool = False,
        exclusive: bool = False,
        auto_delete: bool = False,
        passive: bool = False,
        arguments: Mapping[str, object] | None = None,
        timeout: float | None = None,
    ) -> None:
        """``queue.declare``."""
        declare = spec.QueueDeclare(
            queue=queue,
            durable=durable,
            exclusive=exclusive,
            auto_delete=auto_delete,
            passive=passive,
            arguments=None if arguments is None else dict(arguments),
        )
        await self.connection._run(recipes.command(self.core, declare), timeout)

    async def queue_query(
        self, queue: str, *, timeout: float | None = None
    ) -> spec.QueueQueryResult:
        """``queue.query``: the ``queue.query-result``."""
        return await self.connection._run(recipes.queue_query(self.core, queue), timeout)

    async def subscribe(
        self,
        queue: str,
        destination: str | None = None,
        *,
        credit: int = 100,
        accept: bool = True,
        timeout: float | None = None,
    ) -> str:
        """Subscribe to ``queue`` (``message.subscribe``) as ``destination`` (the queue's
        name by default) with ``credit`` messages of credit, given back as :meth:`receive`
        takes them (in one ``message.flow`` each half window); ``accept``: each delivery
        waits for :meth:`accept`. Gives the destination."""
        name = queue if destination is None else destination
        recipe = recipes.subscribe(self.core, queue, name, credit, accept=accept)
        await self.connection._run(recipe, timeout)
        return name

    async def cancel(self, destination: str, *, timeout: float | None = None) -> None:
        """End the subscription ``destination`` (``message.cancel``)."""
        await self.connection._run(recipes.cancel(self.core, destination), timeout)

    async def receive(
        self, destination: str, *, refill: bool = True, timeout: float | None = None
    ) -> Delivery:
        """The next message for ``destination`` (a subscription's, or one the peer sends
        there); :class:`TimeoutError` if none comes in time. ``refill`` gives its credit
        back to a subscription (False: the subscription gets no more than it has)."""
        recipe = recipes.receive(self.core, destination, refill=refill)
        return await self.connection._run(recipe, timeout)

    async def accept(self, *deliveries: Delivery, timeout: float | None = None) -> None:
        """``message.accept`` of ``deliveries``."""
        await self.connection._run(recipes.accept(self.core, deliveries), timeout)

    async def command(
        self,
        command: spec.Command,
        header: Sequence[spec.Struct] = (),
        body: bytes = b"",
        *,
        timeout: float | None = None,
    ) -> object:
        """Any 0-10 command; returns its result (or None) once the peer completes it."""
        return await self.connection._run(
            recipes.command(self.core, command, header, body), timeout
        )

    async def close(self, *, timeout: float | None = None) -> None:
        """End the session (detached, its state not kept)."""
        await self.connection._run(recipes.close_session(self.core), timeout)

    async def __aenter__(self) -> Session010:
        return self

    async def __aexit__(self, *exc: object) -> None:
        with self.connection.driver.shielded(_async.CLOSE_GRACE):  # even when cancelled
            await self.close()  # noqa: ASYNC102 (shielded by the driver)
