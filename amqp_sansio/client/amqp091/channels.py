"""The channels of the AMQP 0-9-1 client core (:class:`~.core.Core`): a
:class:`ChannelCore` per channel the application opened, its consumers
(:class:`ConsumerCore`) and the :class:`Delivery` objects they hand out.

A channel's synchronous methods (``queue.declare``, ``basic.qos``, ``tx.commit``, ...) are
answered in the order they were sent (0-9-1 spec, 2.3.5.3 and each synchronous method's
``response``), so each waits in a queue for the next reply that is one of its responses.
Deliveries carry their channel's delivery tags; a publish in confirm mode gets a tracker
(:class:`~amqp_sansio.client.amqp10.Op`) that the server's ``basic.ack`` or ``basic.nack``
completes; a channel the server closes (a soft error) fails what waits on it with
:class:`~.ops.ChannelClosedError`, and the connection stays usable. After a reconnection
each channel is opened again with what it had (see :meth:`ChannelCore._replay`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Protocol

import attrs

from amqp_sansio.client.ops import ClientError, Op
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.definitions.amqp091.methods import Method
from amqp_sansio.engine.amqp091 import Connection

from .ops import ChannelClosedError, Confirmation, Returned, TransactionError

__all__ = ["ChannelCore", "ChannelOwner", "ConsumerCore", "Delivery"]


class ChannelOwner(Protocol):
    """What a :class:`ChannelCore` asks of its connection's core (:class:`~.core.Core`
    meets it; written here so that this module does not import the core, which imports
    it): the engine and the connection's state, its channels by number, the check that it
    is usable, and the call that says something changed."""

    engine: Connection
    lost: bool
    blocked: str | None
    _by_number: dict[int, ChannelCore]
    _channels: set[ChannelCore]

    def check(self) -> None: ...

    def _changed(self) -> None: ...


# -- deliveries --------------------------------------------------------------------------------


class Delivery:
    """A message that arrived: from a consumer (``basic.deliver``) or a get
    (``basic.get-ok``, with ``message_count``, the messages left in the queue). ``body``
    is its bytes, ``properties`` its :class:`~amqp_sansio.amqp091.BasicProperties`.

    Unless it came with ``no_ack``, settle it once: :meth:`ack`, :meth:`nack` or
    :meth:`reject` (a second settlement does nothing, where the server would close the
    channel for an unknown tag). ``multiple=True`` settles every unsettled delivery of the
    channel up to this one as well (0-9-1 spec, ``basic.ack``). A delivery that came on a
    connection since lost (and made again), on a channel since closed, or before the
    channel's ``basic.recover``, can no longer be settled (its tag is gone): the call does
    nothing, :attr:`settled` stays false, and the server delivers the message again."""

    __slots__ = (
        "_channel",
        "body",
        "consumer_tag",
        "delivery_tag",
        "exchange",
        "message_count",
        "properties",
        "redelivered",
        "routing_key",
        "settled",
    )

    def __init__(
        self,
        channel: ChannelCore,
        method: spec.BasicDeliver | spec.BasicGetOk,
        properties: spec.BasicProperties,
        body: bytes,
        *,
        settled: bool,
    ) -> None:
        self._channel = channel
        self.delivery_tag = method.delivery_tag
        self.redelivered = method.redelivered
        self.exchange = method.exchange
        self.routing_key = method.routing_key
        if isinstance(method, spec.BasicDeliver):
            self.consumer_tag: str | None = method.consumer_tag
            self.message_count: int | None = None
        else:
            self.consumer_tag, self.message_count = None, method.message_count
        self.properties = properties
        self.body = body
        self.settled = settled

    def __repr__(self) -> str:
        return (
            f"<Delivery tag={self.delivery_tag} {self.exchange!r}/{self.routing_key!r} "
            f"{len(self.body)} bytes settled={self.settled}>"
        )

    def ack(self, *, multiple: bool = False) -> None:
        """Acknowledge (``basic.ack``)."""
        self._settle(spec.BasicAck(delivery_tag=self.delivery_tag, multiple=multiple), multiple)

    def nack(self, *, multiple: bool = False, requeue: bool = True) -> None:
        """Refuse (``basic.nack``, RabbitMQ's extension): back to the queue with
        ``requeue``, else dropped or dead-lettered."""
        method = spec.BasicNack(delivery_tag=self.delivery_tag, multiple=multiple, requeue=requeue)
        self._settle(method, multiple)

    def reject(self, *, requeue: bool = True) -> None:
        """Refuse this one (``basic.reject``): back to the queue with ``requeue``."""
        self._settle(spec.BasicReject(delivery_tag=self.delivery_tag, requeue=requeue), False)

    def _settle(self, method: Method, multiple: bool) -> None:
        # Only a delivery the channel still holds unsettled: not one settled already, nor
        # one from before a reconnection or a basic.recover (its tag is gone).
        if self._channel._unacked.get(self.delivery_tag) is self:
            self._channel._settle(self.delivery_tag, method, multiple)


# -- consumers ---------------------------------------------------------------------------------


class ConsumerCore:
    """A consumer (``basic.consume``): its deliveries wait here until taken. It ends when
    cancelled (by the application, or by the server: the queue was deleted, RabbitMQ's
    consumer cancel notification), and with its channel."""

    def __init__(self, channel: ChannelCore, queue: str, options: dict[str, object]) -> None:
        self.channel = channel
        self.queue = queue
        self.options = options
        self.tag = str(options.get("consumer_tag") or "")
        self.no_ack = bool(options.get("no_ack", False))
        self.deliveries: deque[Delivery] = deque()
        #: Done once the server has answered ``basic.consume``.
        self.started: Op[None] = Op()
        #: Done once the consumer is over (deliveries already received are still taken).
        self.ended: Op[None] = Op()
        #: The server cancelled it (the queue went).
        self.cancelled_by_server = False
        self.error: ClientError | None = None

    def take_ready(self) -> bool:
        """A delivery is waiting, or the consumer is over (raises what ended it)."""
        if self.deliveries:
            return True
        if self.error is not None:
            raise self.error
        return self.ended.done()

    def take(self) -> Delivery | None:
        """The next delivery; None once the consumer is over and none is left."""
        return self.deliveries.popleft() if self.deliveries else None

    def _end(self, error: ClientError | None = None) -> None:
        self.error = self.error or error
        self.started.fail(error or ChannelClosedError(200, "cancelled"))
        self.ended.set(None)


# -- channels ----------------------------------------------------------------------------------


class _Request:
    """A synchronous method waiting for its reply (one of ``method.RESPONSES``)."""

    __slots__ = ("barrier", "internal", "method", "on_reply", "op", "replay", "sent")

    def __init__(
        self,
        method: Method,
        on_reply: Callable[[object], object] | None,
        *,
        replay: bool = False,
        internal: bool = False,
    ) -> None:
        self.method = method
        self.on_reply = on_reply
        self.op: Op[object] = Op()
        #: A declaration or binding to make again after a loss, once answered.
        self.replay = replay
        #: Made by a reconnection (made afresh by the next one).
        self.internal = internal
        #: The requests after it wait for its answer before they go (a server-named queue
        #: made again: they name it by its new name).
        self.barrier = False
        self.sent = False


@attrs.define(eq=False)
class _Publish:
    """A publish in confirm mode whose confirm has not come: sent again after a loss."""

    exchange: str
    routing_key: str
    body: bytes
    properties: spec.BasicProperties | None
    mandatory: bool
    returned: Returned | None = None
    op: Op[Confirmation] = attrs.Factory(Op)


class _Declared:
    """A declaration or binding a channel makes again after a loss; ``first``: the name
    the server gave a server-named queue the first time (the application's name for it)."""

    __slots__ = ("first", "method")

    def __init__(self, method: Method, first: str) -> None:
        self.method, self.first = method, first


#: What a channel remembers to make again after a loss: declarations and bindings, keyed
#: so that a delete or an unbind forgets them.
_TOPOLOGY = (
    spec.ExchangeDeclare,
    spec.ExchangeBind,
    spec.QueueDeclare,
    spec.QueueBind,
)


class ChannelCore:
    """One channel the application opened (see the module's docstring)."""

    def __init__(self, core: ChannelOwner) -> None:
        self.core = core
        #: The engine's channel number (a new one on each connection).
        self.number: int | None = None
        self.opened: Op[None] = Op()
        self.closed: Op[None] = Op()
        self.error: ClientError | None = None
        self._closing = False
        self._open = False
        self._requests: deque[_Request] = deque()
        self.consumers: dict[str, ConsumerCore] = {}
        #: Consumers whose ``basic.consume-ok`` has not come, in order.
        self._starting: list[ConsumerCore] = []
        self._unacked: dict[int, Delivery] = {}
        #: Confirm mode: in effect (``confirm.select`` answered on this connection), and
        #: asked for (made again after a loss); the publishes awaiting confirms.
        self.confirming = False
        self._confirm_mode = False
        self._unconfirmed: dict[int, _Publish] = {}
        self._resend: list[_Publish] = []
        #: Transactional (``tx.select`` answered); its work was lost with a connection.
        self.transactional = False
        self._tx_lost = False
        self._qos: spec.BasicQos | None = None
        self._topology: list[_Declared] = []
        #: Server-named queues named again after a reconnection: old name -> new name.
        self.renamed: dict[str, str] = {}
        #: The server's ``channel.flow`` (publishing paused while False).
        self.flow_active = True
        #: Called with each :class:`~.ops.Returned` message (``mandatory``, unroutable).
        self.on_return: Callable[[Returned], None] | None = None

    def __repr__(self) -> str:
        state = "closed" if self.closed.done() else "open" if self._open else "opening"
        return f"<ChannelCore {self.number} {state}>"

    # -- waiting ----------------------------------------------------------------------------

    def check(self) -> None:
        """Raise what closed the channel (or the connection)."""
        if self.error is not None:
            raise self.error
        self.core.check()
        if self.closed.done() or self._closing:
            raise ChannelClosedError(200, "the channel is closed")

    def open_ready(self) -> bool:
        self.check()
        return self._open

    def close_ready(self) -> bool:
        if self.closed.done():
            return True
        self.core.check()
        return False

    def publish_ready(self) -> bool:
        """A publish may go: the channel is open on a connection, neither the server's
        ``connection.blocked`` nor its ``channel.flow`` holds publishers back, and after a
        reconnection confirm mode is back and what was left unconfirmed has been sent
        again."""
        self.check()
        return (
            self._open
            and not self.core.lost
            and self.core.blocked is None
            and self.flow_active
            and self.confirming == self._confirm_mode
            and not self._resend
        )

    # -- commands ---------------------------------------------------------------------------

    def call(
        self, method: Method, on_reply: Callable[[object], object] | None = None
    ) -> Op[object]:
        """Send the synchronous ``method`` (now, or once the channel is open on the next
        connection); the op completes with the reply (or what ``on_reply`` makes of it)."""
        self.check()
        method = self._renamed(method)
        if isinstance(method, spec.BasicRecover):
            self._unacked.clear()  # the server requeues them (or sends them again, new tags)
        request = _Request(method, on_reply, replay=isinstance(method, _TOPOLOGY))
        self._requests.append(request)
        self._flush()
        return request.op

    def consume(self, queue: str, options: dict[str, object]) -> ConsumerCore:
        """Start a consumer (``basic.consume``); :attr:`ConsumerCore.started` completes
        with the server's answer."""
        consumer = ConsumerCore(self, queue, options)
        self._starting.append(consumer)
        self.call(self._consume_method(consumer), self._on_consume_ok(consumer))
        return consumer

    def _consume_method(self, consumer: ConsumerCore) -> spec.BasicConsume:
        return spec.BasicConsume(queue=consumer.queue, **consumer.options)  # type: ignore[arg-type]

    def cancel(self, consumer: ConsumerCore) -> Op[object]:
        """Cancel ``consumer`` (``basic.cancel``): it ends with the server's answer."""
        return self.call(spec.BasicCancel(consumer_tag=consumer.tag), self._on_cancel_ok)

    def get(self, queue: str, no_ack: bool) -> Op[object]:
        """``basic.get``: completes with a :class:`Delivery`, or None if the queue is empty."""
        return self.call(spec.BasicGet(queue=queue, no_ack=no_ack))

    def publish(
        self,
        exchange: str,
        routing_key: str,
        body: bytes,
        properties: spec.BasicProperties | None,
        mandatory: bool,
    ) -> Op[Confirmation] | None:
        """Publish (:meth:`publish_ready` must be true). In confirm mode, the op of its
        confirm; else None (nothing more will be known of it, but a return)."""
        assert self.number is not None
        engine = self.core.engine
        if not self.confirming:
            engine.publish(
                self.number, exchange, routing_key, body, properties, mandatory=mandatory
            )
            self.core._changed()
            return None
        record = _Publish(exchange, routing_key, body, properties, mandatory)
        self._send_publish(record)
        self.core._changed()
        return record.op

    def _send_publish(self, record: _Publish) -> None:
        assert self.number is not None
        seq = self.core.engine.publish(
            self.number,
            record.exchange,
            record.routing_key,
            record.body,
            record.properties,
            mandatory=record.mandatory,
        )
        assert seq is not None, "the engine's channel is in confirm mode"
        self._unconfirmed[seq] = record

    def tx_commit_ready(self) -> bool:
        """Raise :class:`~.ops.TransactionError` if a lost connection took the
        transaction's work (once: the channel is transactional again)."""
        self.check()
        if self._tx_lost:
            self._tx_lost = False
            raise TransactionError("the connection was lost: the transaction's work is gone")
        return not self.core.lost

    def close(self) -> None:
        """Close the channel (``channel.close`` 200); :attr:`closed` completes with the
        server's answer."""
        if self._closing or self.closed.done():
            return
        self._closing = True
        if self.number is None or self.core.lost:  # not open on a connection: closed now
            self._end(None)
            self.core._channels.discard(self)
        elif self._open:
            self.core.engine.close_channel(self.number)
        # else it is closed once it is open (_on_opened)
        self.core._changed()

    def _settle(self, tag: int, method: Method, multiple: bool) -> None:
        """Settle ``tag`` (one the channel holds unsettled: it is open, on the current
        connection, whose loss or close clears what it holds)."""
        assert self.number is not None
        for done in [t for t in self._unacked if t <= tag] if multiple else [tag]:
            self._unacked.pop(done).settled = True
        self.core.engine.send_method(self.number, method)
        self.core._changed()

    # -- internals --------------------------------------------------------------------------

    def _flush(self) -> None:
        """Send the requests not yet sent, once the channel is open."""
        if not self._open or self.core.lost or self.number is None:
            return
        for request in self._requests:
            if not request.sent:
                request.sent = True
                request.method = self._renamed(request.method)
                self.core.engine.send_method(self.number, request.method)
            if request.barrier:
                break  # what follows names the queue it makes: wait for its name
        self.core._changed()

    def _start(self) -> None:
        """Open the channel on the current engine."""
        self.number = self.core.engine.open_channel()
        self.core._by_number[self.number] = self

    def _on_opened(self) -> None:
        """``channel.open-ok``: the first time, the channel is ready; after a reconnection,
        what it had is made again first (prefetch, confirm or tx mode, declarations and
        bindings, consumers), then what it had sent and not had answered, then the
        publishes whose confirms had not come."""
        self._open = True
        if self._closing:  # closed while it was opening
            assert self.number is not None
            self.core.engine.close_channel(self.number)
            return
        if self.opened.done():
            self._replay()
        self.opened.set(None)
        self._flush()

    def _replay(self) -> None:
        again: list[_Request] = []
        if self._qos is not None:
            again.append(_Request(self._qos, None))
        if self._confirm_mode:
            again.append(_Request(spec.ConfirmSelect(), None))
        if self.transactional:
            again.append(_Request(spec.TxSelect(), None))
        for declared in self._topology:
            on_reply = self._on_redeclared(declared) if declared.first else None
            again.append(_Request(declared.method, on_reply))
            again[-1].barrier = bool(declared.first)
        for consumer in self.consumers.values():
            consumer.options["consumer_tag"] = consumer.tag
            again.append(_Request(self._consume_method(consumer), self._on_consume_ok(consumer)))
        for request in again:
            request.internal = True
        for request in self._requests:
            request.sent = False
        self._requests.extendleft(reversed(again))

    def _renamed(self, method: Method) -> Method:
        """``method`` on the current name of a server-named queue made again after a loss
        (the application still knows it by its first name)."""
        queue = getattr(method, "queue", None)
        if queue and queue in self.renamed:
            return attrs.evolve(method, queue=self.renamed[queue])  # type: ignore[misc]
        return method

    def _on_redeclared(self, declared: _Declared) -> Callable[[object], object]:
        def renamed(reply: object) -> object:
            assert isinstance(reply, spec.QueueDeclareOk)  # (its one response)
            self.renamed[declared.first] = reply.queue
            return reply

        return renamed

    def _on_lost(self) -> None:
        """The connection was lost: the channel is to be opened again on the next one."""
        self._open = False
        self.core._by_number.pop(self.number, None)  # type: ignore[arg-type]
        self.number = None
        self._unacked.clear()
        self._resend = [self._unconfirmed[seq] for seq in sorted(self._unconfirmed)]
        self._unconfirmed.clear()
        for consumer in self.consumers.values():
            if not consumer.no_ack:  # the server has them still: it delivers them again
                consumer.deliveries.clear()
        self.confirming = False  # until confirm.select is answered on the next connection
        # What the last reconnection made is made afresh by the next one.
        self._requests = deque(r for r in self._requests if not r.internal)
        if self.transactional:
            self._tx_lost = True
        error = TransactionError("the connection was lost: the transaction's work is gone")
        for request in list(self._requests):
            if isinstance(request.method, spec.TxCommit | spec.TxRollback):
                request.op.fail(error)
                self._requests.remove(request)
                self._tx_lost = False

    def _resend_unconfirmed(self) -> None:
        """Once confirm mode is back: the publishes whose confirms had not come, again, in
        their order, before any new one."""
        records, self._resend = self._resend, []
        for record in records:
            record.returned = None
            self._send_publish(record)

    def _end(self, error: ClientError | None) -> None:
        """The channel is closed (by either side, or with the connection)."""
        self._open = False
        if self.error is None and error is not None:
            self.error = error
        failure = error or ChannelClosedError(200, "the channel is closed")
        for request in self._requests:
            request.op.fail(failure)
        self._requests.clear()
        for record in [*self._unconfirmed.values(), *self._resend]:
            record.op.fail(failure)
        self._unconfirmed.clear()
        self._resend = []
        for consumer in [*self.consumers.values(), *self._starting]:
            consumer._end(error)
        self.consumers.clear()
        self._starting.clear()
        self._unacked.clear()
        self.core._by_number.pop(self.number, None)  # type: ignore[arg-type]
        self.opened.fail(failure)
        self.closed.set(None)

    # -- the engine's events for this channel -------------------------------------------------

    def _reply(self, reply: Method, result: object = None) -> None:
        """The server's answer to the oldest request waiting (the sent ones come first, in
        order), if it is one of that request's responses; else it answers nothing waiting
        and changes nothing. The request's op completes with ``result``, or the reply (as
        its ``on_reply`` makes it)."""
        request = next((r for r in self._requests if r.sent), None)
        if request is None or reply.NAME not in request.method.RESPONSES:
            return
        self._requests.remove(request)
        if result is not None:
            value = result
        elif request.on_reply is not None:
            value = request.on_reply(reply)
        else:
            value = reply
        self._remember(request, reply)
        request.op.set(value)
        if request.barrier:
            self._flush()

    def _remember(self, request: _Request, reply: object) -> None:
        method = request.method
        if isinstance(method, spec.BasicQos):
            self._qos = method
        elif isinstance(method, spec.ConfirmSelect):
            self.confirming = self._confirm_mode = True
            self._resend_unconfirmed()
        elif isinstance(method, spec.TxSelect):
            self.transactional = True
        elif request.replay:
            first = ""
            if isinstance(method, spec.QueueDeclare) and isinstance(reply, spec.QueueDeclareOk):
                first = "" if method.queue else reply.queue  # server-named: made again as such
            if all(d.method != method or d.first != first for d in self._topology):
                self._topology.append(_Declared(method, first))
        elif isinstance(
            method, spec.QueueDelete | spec.ExchangeDelete | spec.QueueUnbind | spec.ExchangeUnbind
        ):
            self._forget(method)

    def _forget(self, method: Method) -> None:
        """A delete or unbind: what it undoes is not made again after a loss."""

        def undone(declared: _Declared) -> bool:
            old = declared.method
            if isinstance(method, spec.QueueDelete):
                return method.queue in (getattr(old, "queue", None), declared.first)
            if isinstance(method, spec.ExchangeDelete):
                return isinstance(
                    old, spec.ExchangeDeclare | spec.ExchangeBind | spec.QueueBind
                ) and (
                    method.exchange
                    in (
                        getattr(old, "exchange", None),
                        getattr(old, "destination", None),
                        getattr(old, "source", None),
                    )
                )
            if isinstance(method, spec.QueueUnbind):
                return isinstance(old, spec.QueueBind) and (
                    old.queue,
                    old.exchange,
                    old.routing_key,
                ) == (method.queue, method.exchange, method.routing_key)
            assert isinstance(method, spec.ExchangeUnbind)
            return isinstance(old, spec.ExchangeBind) and (
                old.destination,
                old.source,
                old.routing_key,
            ) == (method.destination, method.source, method.routing_key)

        self._topology = [old for old in self._topology if not undone(old)]

    def _on_consume_ok(self, consumer: ConsumerCore) -> Callable[[object], object]:
        def started(reply: object) -> object:
            assert isinstance(reply, spec.BasicConsumeOk)  # (its one response)
            if consumer in self._starting:
                self._starting.remove(consumer)
            consumer.tag = reply.consumer_tag
            self.consumers[consumer.tag] = consumer
            consumer.started.set(None)
            return consumer

        return started

    def _on_cancel_ok(self, reply: object) -> object:
        if isinstance(reply, spec.BasicCancelOk):
            consumer = self.consumers.pop(reply.consumer_tag, None)
            if consumer is not None:
                consumer._end()
        return reply

    def _on_method(self, method: Method) -> None:
        if isinstance(method, spec.BasicCancel):  # the server cancelled a consumer
            consumer = self.consumers.pop(method.consumer_tag, None)
            if consumer is not None:
                consumer.cancelled_by_server = True
                consumer._end()
            if not method.no_wait and self.number is not None:
                self.core.engine.send_method(
                    self.number, spec.BasicCancelOk(consumer_tag=method.consumer_tag)
                )
            return
        self._reply(method)

    def _on_content(self, method: Method, properties: spec.BasicProperties, body: bytes) -> None:
        if isinstance(method, spec.BasicDeliver):
            consumer = self.consumers.get(method.consumer_tag)
            if consumer is None:
                return  # a cancelled consumer's last ones: the server requeues them
            delivery = Delivery(self, method, properties, body, settled=consumer.no_ack)
            if not consumer.no_ack:
                self._unacked[delivery.delivery_tag] = delivery
            consumer.deliveries.append(delivery)
        elif isinstance(method, spec.BasicGetOk):
            head = next((r.method for r in self._requests if r.sent), None)
            no_ack = isinstance(head, spec.BasicGet) and head.no_ack
            delivery = Delivery(self, method, properties, body, settled=no_ack)
            if not no_ack:
                self._unacked[delivery.delivery_tag] = delivery
            self._reply(method, delivery)
        elif isinstance(method, spec.BasicReturn):
            returned = Returned(
                method.reply_code, method.reply_text, method.exchange, method.routing_key,
                properties, body,
            )  # fmt: skip
            self._on_returned(returned)

    def _on_returned(self, returned: Returned) -> None:
        """A ``basic.return``: in confirm mode it comes before the ack of the same publish
        (RabbitMQ's order), so it belongs to the oldest unconfirmed mandatory publish to
        that exchange and routing key not yet returned."""
        for seq in sorted(self._unconfirmed):
            record = self._unconfirmed[seq]
            if (
                record.mandatory
                and record.returned is None
                and (record.exchange, record.routing_key)
                == (returned.exchange, returned.routing_key)
            ):
                record.returned = returned
                break
        if self.on_return is not None:
            self.on_return(returned)

    def _on_confirmed(self, tag: int, multiple: bool, ack: bool) -> None:
        # (The engine checks the tags: one it never gave closes the channel, 406.)
        for seq in [s for s in self._unconfirmed if (s <= tag if multiple else s == tag)]:
            record = self._unconfirmed.pop(seq)
            record.op.set(Confirmation(ack=ack, returned=record.returned))
