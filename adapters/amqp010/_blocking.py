"""The blocking AMQP 0-10 API of :mod:`~amqp_sansio.adapters.sockets`
(``connect(url, protocol="0-10")``): the calls of the async one (:mod:`._async`),
blocking, with the I/O inside them; see :doc:`amqp010` ("Adapters")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from amqp_sansio import amqp010
from amqp_sansio.client.amqp010 import Core, Delivery, SessionCore, message_header, recipes
from amqp_sansio.client.amqp010.messages import MessageId

from .._blocking import DEFAULT_TIMEOUT, ConnectionBase, SocketDriver

__all__ = ["Connection010", "Session010"]

spec = amqp010.definitions


class Connection010(ConnectionBase[Core]):
    """An AMQP 0-10 connection made by ``sockets.connect(url, protocol="0-10")`` (a
    context manager). ``timeout`` bounds each call not given its own."""

    def __init__(
        self, core: Core, driver: SocketDriver, *, timeout: float | None = DEFAULT_TIMEOUT
    ) -> None:
        super().__init__(core, driver, timeout=timeout)

    def __repr__(self) -> str:
        return f"<sockets.Connection010 {self.core!r}>"

    def session(
        self, name: str | bytes, *, keep: int = 60, timeout: float | None = None
    ) -> Session010:
        """Attach a session ``name`` (``session.attach``), its state kept ``keep``
        seconds once detached (a lost connection resumes it within that time)."""
        return Session010(self, self._run(recipes.open_session(self.core, name, keep), timeout))


class Session010:
    """A session (:meth:`Connection010.session`), a context manager: leaving it ends the
    session. Each call returns when the peer has completed its command."""

    def __init__(self, connection: Connection010, core: SessionCore) -> None:
        self.connection = connection
        self.core = core

    def __repr__(self) -> str:
        return f"<sockets.Session010 {self.core.name!r}>"

    def send(
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
        self.connection._run(recipes.send(self.core, destination, body, header, wait=wait), timeout)

    def queue_declare(
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
        self.connection._run(recipes.command(self.core, declare), timeout)

    def queue_query(self, queue: str, *, timeout: float | None = None) -> spec.QueueQueryResult:
        """``queue.query``: the ``queue.query-result``."""
        return self.connection._run(recipes.queue_query(self.core, queue), timeout)

    def subscribe(
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
        self.connection._run(recipe, timeout)
        return name

    def cancel(self, destination: str, *, timeout: float | None = None) -> None:
        """End the subscription ``destination`` (``message.cancel``)."""
        self.connection._run(recipes.cancel(self.core, destination), timeout)

    def receive(
        self, destination: str, *, refill: bool = True, timeout: float | None = None
    ) -> Delivery:
        """The next message for ``destination`` (a subscription's, or one the peer sends
        there); :class:`TimeoutError` if none comes in time. ``refill`` gives its credit
        back to a subscription (False: the subscription gets no more than it has)."""
        recipe = recipes.receive(self.core, destination, refill=refill)
        return self.connection._run(recipe, timeout)

    def accept(self, *deliveries: Delivery, timeout: float | None = None) -> None:
        """``message.accept`` of ``deliveries``."""
        self.connection._run(recipes.accept(self.core, deliveries), timeout)

    def command(
        self,
        command: spec.Command,
        header: Sequence[spec.Struct] = (),
        body: bytes = b"",
        *,
        timeout: float | None = None,
    ) -> object:
        """Any 0-10 command; returns its result (or None) once the peer completes it."""
        return self.connection._run(recipes.command(self.core, command, header, body), timeout)

    def close(self, *, timeout: float | None = None) -> None:
        """End the session (detached, its state not kept)."""
        self.connection._run(recipes.close_session(self.core), timeout)

    def __enter__(self) -> Session010:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
