"""The broker's side of one AMQP 0-9-1 client connection: the 0-9-1 engine in its server
role (:mod:`amqp_sansio.engine.amqp091`) driven by the broker, with the byte interface 0-10's
connection shares (:mod:`.._engineconn`), the same as the 1.0
:class:`~amqp_sansio.broker.BrokerConnection`'s (so the server serves every protocol alike).

Logins go through the broker's users (PLAIN and AMQPLAIN: a name and a password; an open
broker, without users, takes any login, as it takes any 1.0 client), the virtual host must
be one of the broker's (else 530 NOT_ALLOWED), and the methods of the ``exchange``,
``queue``, ``basic``, ``confirm`` and ``tx`` classes are answered as RabbitMQ answers them
(see :mod:`.vhosts` for exchanges and queues, and ``docs/amqp091.rst``): prefetch per
consumer or per channel (``basic.qos`` ``global``), delivery tags per channel, acks, nacks
and rejects (``multiple``; a requeued message comes back ``redelivered``), ``basic.get``,
``basic.recover``, publisher confirms sent once the store has a durable message,
transactions holding publishes and acks until ``tx.commit``, mandatory messages that
reach no queue returned with 312 NO_ROUTE, and a consumer cancelled with ``basic.cancel``
when its queue is deleted if the client announced ``consumer_cancel_notify``. A soft error
closes the channel (``channel.close`` with its reply code), a hard one the connection.
"""

from __future__ import annotations

import math
import secrets
from collections import OrderedDict
from typing import Any

from ... import __version__
from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method
from ...definitions.amqp091.spec import ReplyCode
from ...engine.amqp091 import (
    ChannelClosed,
    ChannelState,
    ConnectionClosed,
    ContentReceived,
    FlowChanged,
    Limits,
    LoginRequested,
    MethodReceived,
    OpenRequested,
    Role,
)
from ...engine.amqp091 import Connection as Engine091
from ...security.mechanisms import ServerSuccess
from .._admission import secret_accepted
from .._engineconn import EngineConnection
from .._nodes import Node, Queue
from .._selector import Selector
from .._store import StoredMessage
from .._streams import Stream
from .declarations import Refused
from .mapping import basic_of
from .replies import cancel_reply, consume_reply, declare_reply, rewrite_reply_to
from .streams import StreamRefused, check_not_stream, check_stream_settle, consume_091
from .vhosts import Broker091, VirtualHost

__all__ = ["BrokerConnection091", "new_connection"]
#: A consumer's credit when nothing bounds it (no prefetch, or no-ack): large enough never
#: to stop a dispatch turn (``BrokerConfig.dispatch_batch`` bounds each turn).
_UNBOUNDED = 1 << 30
#: The mechanisms the 0-9-1 engine offers (its default), which the broker's users log in by.
_MECHANISMS = ("PLAIN", "AMQPLAIN")


class _Consumer:
    """A ``basic.consume`` of one channel: a consumer of its queue as a node sees one (the
    protocol of ``._nodes.Consumer``)."""

    copy = False
    cursor = 0
    blocked = False
    selector: Selector | None = None
    subscription = None

    def __init__(
        self, channel: _Channel, tag: str, queue: Queue, *, no_ack: bool, exclusive: bool
    ) -> None:
        self.channel = channel
        self.tag = tag
        self.queue = queue
        self.no_ack = no_ack
        self.exclusive = exclusive
        self.prefetch = channel.prefetch  # per consumer (basic.qos global=false)
        self.unacked = 0

    def __repr__(self) -> str:
        return f"<0-9-1 consumer {self.tag!r} of {self.queue.address!r}>"

    @property
    def credit(self) -> int:
        channel = self.channel
        if not channel.flow or channel.conn.ending or not channel.conn._open(channel.number):
            return 0
        if self.no_ack:
            return _UNBOUNDED
        room = _UNBOUNDED
        if self.prefetch:
            room = self.prefetch - self.unacked
        if channel.global_prefetch:
            room = min(room, channel.global_prefetch - len(channel.unacked))
        return room

    def deliver(self, message: StoredMessage, node: Node) -> None:
        assert isinstance(node, Queue)
        self.channel.deliver(self, message, node)

    def tell_available(self, count: int) -> None:
        pass

    def drained(self) -> None:
        pass

    def queue_deleted(self) -> None:
        """Its queue was deleted: the consumer goes, and the client hears of it if it
        announced ``consumer_cancel_notify`` (RabbitMQ's extension)."""
        self.channel.cancelled_by_broker(self)


class _Channel:
    """One open channel's consumers, unacknowledged deliveries, confirms and transaction."""

    def __init__(self, conn: BrokerConnection091, number: int) -> None:
        self.conn = conn
        self.number = number
        self.consumers: dict[str, _Consumer] = {}
        #: Deliveries not yet acknowledged, by delivery tag: (message, queue, consumer).
        self.unacked: OrderedDict[int, tuple[StoredMessage, Queue, _Consumer | None]] = (
            OrderedDict()
        )
        self.next_tag = 1
        self.prefetch = 0  # basic.qos global=false: for consumers made after it
        self.global_prefetch = 0  # basic.qos global=true: the channel's deliveries
        self.flow = True
        #: The queue last declared on the channel (an empty queue name means it).
        self.last_queue = ""
        self.confirm_seq = 0  # publishes counted in confirm mode
        #: Confirms to send after this input's store flush: (seq, ack).
        self.confirms: list[tuple[int, bool]] = []
        #: In a transaction: what waits for the commit.
        self.tx = False
        self.tx_publishes: list[tuple[spec.BasicPublish, spec.BasicProperties, bytes]] = []
        self.tx_acks: list[spec.BasicAck | spec.BasicNack | spec.BasicReject] = []

    # -- deliveries ----------------------------------------------------------------------------

    def deliver(self, consumer: _Consumer, message: StoredMessage, queue: Queue) -> None:
        conn = self.conn
        tag = self.next_tag
        self.next_tag += 1
        props, body, exchange, routing_key = basic_of(message)
        method = spec.BasicDeliver(
            consumer_tag=consumer.tag,
            delivery_tag=tag,
            redelivered=message.delivery_count > 0 or message.redelivered,
            exchange=exchange or "",
            routing_key=queue.address if routing_key is None else routing_key,
        )
        conn._send_content(self.number, method, props, body)
        conn.record.messages_out += 1
        conn.broker.has_output(conn)
        if consumer.no_ack:
            conn.taken(queue, message)
        else:
            consumer.unacked += 1
            self.unacked[tag] = (message, queue, consumer)

    def cancelled_by_broker(self, consumer: _Consumer) -> None:
        del self.consumers[consumer.tag]  # (a consumer leaves its queue and channel at once)
        conn = self.conn
        consumer.queue.remove_consumer(consumer)
        capabilities = conn.client_capabilities
        if capabilities.get("consumer_cancel_notify") is True and conn.is_open:
            conn._send_method(self.number, spec.BasicCancel(consumer_tag=consumer.tag))
            conn.broker.has_output(conn)

    def settle(self, tags: list[int], *, ack: bool, requeue: bool) -> None:
        """Ack, or nack/reject (``requeue``: back to its queue, counted as redelivered;
        else dead-lettered or dropped) the deliveries of ``tags``."""
        conn = self.conn
        broker = conn.broker
        back: list[tuple[StoredMessage, Queue]] = []
        for tag in tags:
            message, queue, consumer = self.unacked.pop(tag)
            if consumer is not None:
                consumer.unacked -= 1
                broker.wake(consumer.queue)  # room under its prefetch
            if isinstance(queue, Stream):
                continue  # (a stream's ack is credit: nothing leaves it, .streams)
            if ack:
                conn.taken(queue, message)
            elif requeue:
                back.append((message, queue))
            else:
                queue.dead_letter(message, "rejected")
                conn.taken(queue, message)
        for message, queue in reversed(back):  # each to the head, in delivery order
            conn.give_back(queue, message)

    def tags(self, delivery_tag: int, multiple: bool) -> list[int]:
        """The unacked tags an ack/nack of ``delivery_tag`` covers (``multiple``: every
        one up to it; 0 with ``multiple``: all); 406 for a tag not outstanding."""
        if multiple:
            if delivery_tag == 0:
                return list(self.unacked)
            found = [t for t in self.unacked if t <= delivery_tag]
            if delivery_tag not in self.unacked and not found:
                raise Refused(ReplyCode.PRECONDITION_FAILED, f"unknown delivery tag {delivery_tag}")
            return found
        if delivery_tag not in self.unacked:
            raise Refused(ReplyCode.PRECONDITION_FAILED, f"unknown delivery tag {delivery_tag}")
        return [delivery_tag]

    def redeliver_all(self) -> None:
        """``basic.recover`` with ``requeue`` false (0-9-1 spec, basic.recover: "redelivered
        to the original recipient"): each unacked delivery of a consumer still on the
        channel comes again to that consumer, ``redelivered``, under a new tag; the others
        (``basic.get``, a cancelled consumer) go back to their queue."""
        back: list[int] = []
        for tag, (message, queue, consumer) in list(self.unacked.items()):
            stream = isinstance(queue, Stream)  # (nothing to give back to: settle passes it)
            if stream or consumer is None or self.consumers.get(consumer.tag) is not consumer:
                back.append(tag)
                continue
            del self.unacked[tag]
            consumer.unacked -= 1
            message.delivery_count += 1
            message.redelivered = True
            self.conn.broker.store.update(queue, message)
            self.deliver(consumer, message, queue)
        if back:
            self.settle(back, ack=False, requeue=True)

    def requeue_all(self) -> None:
        """The channel closed, or ``basic.recover``: every unacked delivery goes back."""
        tags = list(self.unacked)
        if tags:
            self.settle(tags, ack=False, requeue=True)

    def close(self) -> None:
        """The channel is gone: its consumers go, its unacked deliveries go back."""
        self.conn.broker.replies.close(self.conn, self)  # (its direct reply-to consumer)
        for consumer in list(self.consumers.values()):
            self.consumers.pop(consumer.tag)
            self._remove(consumer)
        self.requeue_all()

    def _remove(self, consumer: _Consumer) -> None:
        queue = consumer.queue
        queue.remove_consumer(consumer)
        self.conn.vhost_or_default.consumer_removed(queue)


class BrokerConnection091(EngineConnection):
    """The broker's side of one 0-9-1 client connection (see the module's docstring), with
    :class:`~amqp_sansio.broker.BrokerConnection`'s byte interface
    (:class:`~amqp_sansio.broker._engineconn.EngineConnection`'s)."""

    broker: Broker091
    engine: Engine091
    protocol = "0-9-1"

    def __init__(self, broker: Broker091, engine: Engine091, *, address: str | None = None) -> None:
        super().__init__(broker, engine, address=address)
        self.vhost: VirtualHost | None = None
        self.channels: dict[int, _Channel] = {}
        self.client_capabilities: dict[str, Any] = {}
        #: ``connection.blocked`` was sent (the broker's resource alarm).
        self._told_blocked = False

    def __repr__(self) -> str:
        return f"<BrokerConnection091 channels={len(self.channels)}>"

    def alarm_changed(self, alarm: bool) -> None:
        """The broker's resource alarm went on: ``connection.blocked`` (reason ``low on
        memory``, RabbitMQ's) if the client announced the capability; or off:
        ``connection.unblocked`` and reading again."""
        engine = self.engine
        if alarm:
            if self.is_open and not self._told_blocked:
                self._told_blocked = engine.block(_ALARM_REASON)
        else:
            if self._told_blocked and self.is_open:
                engine.unblock()
            self._told_blocked = False
            self._read_again()
        self.broker.has_output(self)

    def _read_again(self) -> None:
        """Reading again, and the heartbeat monitor with it."""
        if self._stopped:
            super()._read_again()
            self.engine.monitor_paused = False

    @property
    def vhost_or_default(self) -> VirtualHost:
        return self.vhost or self.broker.vhosts["/"]

    # -- what differs from the other protocols' connections ------------------------------------

    def _busy(self) -> bool:
        """A consumer, or a delivery not yet acknowledged, keeps it from eviction."""
        return any(ch.consumers or ch.unacked for ch in self.channels.values())

    def _close_engine(self, why: str) -> None:
        """320 CONNECTION_FORCED."""
        self.engine.close(ReplyCode.CONNECTION_FORCED, f"CONNECTION_FORCED - {why}")

    def _release_all(self) -> None:
        """Its channels close: their consumers go, their unacked deliveries go back."""
        for channel in list(self.channels.values()):
            channel.close()
        self.channels.clear()

    # -- events --------------------------------------------------------------------------------

    def _handle(self, events: list[Any]) -> None:
        broker = self.broker
        engine = self.engine
        for event in events:
            if engine.discarded(event):  # (a close of ours made it moot)
                continue
            self._active_at = self._now
            kind = type(event)
            if kind is ContentReceived:
                self._on_content(event)
            elif kind is MethodReceived:
                self._on_method(event)
            else:
                handler = _EVENTS.get(kind)
                if handler is not None:
                    handler(self, event)
        broker.store.flush()  # what this input did is on disk before its answers go out
        for channel in self.channels.values():
            if channel.confirms:
                self._send_confirms(channel)
        broker.has_output(self)
        if broker.answers_first:
            broker.tell_alarm()  # (the deliveries, with dispatch_more, tell it again)
        else:
            broker.dispatch()
        if engine.closed and not self.lost:
            self._lost()

    def _on_opened(self) -> None:
        self.record.opened = True
        if self.broker.alarm:
            self.alarm_changed(True)

    def _on_channel_closed(self, event: ChannelClosed) -> None:
        channel = self.channels.pop(event.channel, None)
        if channel is not None:
            channel.close()

    def _on_flow(self, event: FlowChanged) -> None:
        channel = self.channels.get(event.channel)
        if channel is None:  # (the first method on the channel: its flow holds from now)
            channel = self.channels[event.channel] = _Channel(self, event.channel)
        channel.flow = event.active
        for consumer in channel.consumers.values():
            self.broker.wake(consumer.queue)

    def _on_closed(self, event: ConnectionClosed) -> None:
        if event.by_peer:
            self.record.ending_because("closed by the client")
        else:
            self.record.ending_because(f"closed: {event.reply_code} {event.reply_text}")
        self._lost()

    def _on_login(self, event: LoginRequested) -> None:
        broker = self.broker
        config = broker.config
        users = config.users
        capabilities = event.client_properties.get("capabilities")
        self.client_capabilities = dict(capabilities) if isinstance(capabilities, dict) else {}
        # (the engine offers PLAIN and AMQPLAIN, whose responses name the user; the broker
        # never sends connection.secure, so no secure-ok comes)
        assert event.username is not None
        if users is None and not config.sasl:  # (None, or False: no SASL layer for 1.0)
            self.identity = event.username  # an open broker takes any login (docs/broker.rst)
        elif users is None:
            self._login_failed("this broker's logins are by SASL mechanisms 0-9-1 cannot carry")
            return
        elif not config.allow_insecure_auth:
            self._login_failed(f"{event.mechanism} without TLS is not allowed on this port")
            return
        else:  # the same server mechanisms as a 1.0 login's (security/mechanisms)
            sasl = users.authenticator(allow_cleartext=True, mechanisms=_MECHANISMS)
            step = sasl.create_mechanism(event.mechanism).start(event.response)
            if not isinstance(step, ServerSuccess):
                why = f"Login was refused using authentication mechanism {event.mechanism}"
                self._login_failed(f"ACCESS_REFUSED - {why}")
                return
            self.identity = step.identity
        self.engine.accept_login(self.identity)

    def _login_failed(self, why: str) -> None:
        self.refused = f"authentication failed: {why}"
        self.record.ending_because(self.refused)
        self.engine.refuse_login(why)
        self.hold_failed_login()

    def _update_secret(self, m: spec.ConnectionUpdateSecret) -> None:
        """``connection.update-secret`` (RabbitMQ's extension): checked as the login was
        (:func:`._admission.secret_accepted`): ``update-secret-ok``, or the connection is
        closed with 530 NOT_ALLOWED, RabbitMQ's code and text (``rabbit_reader``)."""
        if secret_accepted(self.broker.config.users, self.identity, m.new_secret):
            self.engine.send_method(0, spec.ConnectionUpdateSecretOk())
            return
        self.record.ending_because("update-secret refused")
        text = "NOT_ALLOWED - New secret was refused by one of the backends"
        self.engine.close(ReplyCode.NOT_ALLOWED, text, m.CLASS_ID, m.METHOD_ID)

    def _on_open(self, event: OpenRequested) -> None:
        broker = self.broker
        name = event.virtual_host
        vhost = broker.vhosts.get(name)
        if vhost is None:
            self.refused = f"no virtual host {name!r}"
            self.record.ending_because(self.refused)
            self.engine.refuse_open(ReplyCode.NOT_ALLOWED, f"NOT_ALLOWED - vhost {name} not found")
            return
        identity = self.identity
        assert identity is not None  # (the login was accepted)
        why = broker.room_for_user(identity)
        if why is not None:
            self.refused = why
            self.record.ending_because(why)
            self.engine.refuse_open(ReplyCode.NOT_ALLOWED, f"NOT_ALLOWED - {why}")
            return
        self._counted_user = identity
        self.vhost = vhost
        self._handshake_until = None
        self.engine.accept_open()  # (its ConnectionOpened, queued, comes back later)
        self._on_opened()

    # -- methods -------------------------------------------------------------------------------

    def _open(self, number: int) -> bool:
        """Whether channel ``number`` is open in the engine (not closing: then nothing more
        is sent on it)."""
        try:
            found = self.engine.channel(number)  # (not ``channels``: a copy, made each call)
        except KeyError:
            return False
        return found.state is ChannelState.OPEN

    def _send_method(self, number: int, method: Method) -> None:
        if self._open(number):
            self.engine.send_method(number, method)

    def _send_content(
        self, number: int, method: Method, properties: spec.BasicProperties, body: bytes
    ) -> None:
        if self._open(number):
            self.engine.send_content(number, method, properties, body)

    def _on_method(self, event: MethodReceived) -> None:
        number, method = event.channel, event.method
        if number == 0:  # (the engine passes on only connection.update-secret)
            assert isinstance(method, spec.ConnectionUpdateSecret)
            self._update_secret(method)
            return
        channel = self.channels.get(number)
        if channel is None:
            channel = self.channels[number] = _Channel(self, number)
        handler = _METHODS.get(type(method))
        if handler is None:
            return  # (answers the engine handles, a client's -ok we do not wait for)
        try:
            handler(self, channel, method)
        except (Refused, StreamRefused) as refused:
            self._refuse(channel, refused, method)

    def _refuse(self, channel: _Channel, refused: Refused | StreamRefused, method: Method) -> None:
        text = f"{_CODE_NAMES.get(refused.reply_code, '')} - {refused.reply_text}"[:255]
        class_id, method_id = method.CLASS_ID, method.METHOD_ID
        if refused.hard:
            self.engine.close(refused.reply_code, text, class_id, method_id)
            return
        del self.channels[channel.number]  # (every method's channel is there: _on_method)
        channel.close()
        if self._open(channel.number):  # (then the engine drops what comes on it, but the
            # close-ok, and what this input has not yet handed over: 0-9-1 spec, channel.close)
            self.engine.close_channel(channel.number, refused.reply_code, text, class_id, method_id)

    def _ok(self, channel: _Channel, no_wait: bool, answer: Method) -> None:
        if not no_wait:
            self._send_method(channel.number, answer)

    def _exchange_declare(self, channel: _Channel, m: spec.ExchangeDeclare) -> None:
        self._vh.declare_exchange(
            m.exchange,
            m.type,
            passive=m.passive,
            durable=m.durable,
            auto_delete=m.reserved_2,  # (RabbitMQ's auto-delete and internal bits)
            internal=m.reserved_3,
            arguments=m.arguments,
        )
        self._ok(channel, m.no_wait, spec.ExchangeDeclareOk())

    def _exchange_delete(self, channel: _Channel, m: spec.ExchangeDelete) -> None:
        self._vh.delete_exchange(m.exchange, if_unused=m.if_unused)
        self._ok(channel, m.no_wait, spec.ExchangeDeleteOk())

    def _exchange_bind(self, channel: _Channel, m: spec.ExchangeBind) -> None:
        self._vh.bind(("exchange", m.destination), m.source, m.routing_key, m.arguments)
        self._ok(channel, m.no_wait, spec.ExchangeBindOk())

    def _exchange_unbind(self, channel: _Channel, m: spec.ExchangeUnbind) -> None:
        self._vh.unbind(("exchange", m.destination), m.source, m.routing_key, m.arguments)
        self._ok(channel, m.no_wait, spec.ExchangeUnbindOk())

    def _queue_name(self, channel: _Channel, name: str) -> str:
        """An empty queue name is the channel's last declared queue (0-9-1 spec, the
        ``queue-name`` domain); none: 404... as RabbitMQ, NOT_FOUND."""
        if name:
            return name
        if not channel.last_queue:
            raise Refused(ReplyCode.NOT_FOUND, "no previously declared queue")
        return channel.last_queue

    def _queue_declare(self, channel: _Channel, m: spec.QueueDeclare) -> None:
        if (reply := declare_reply(self.broker, m.queue, self._vh.name)) is not None:
            return self._ok(channel, m.no_wait, reply)  # (direct reply-to's names)
        queue, messages, consumers = self._vh.declare_queue(
            m.queue,
            passive=m.passive,
            durable=m.durable,
            exclusive=m.exclusive,
            auto_delete=m.auto_delete,
            arguments=m.arguments,
            owner=self,
        )
        channel.last_queue = queue.address
        self._ok(
            channel,
            m.no_wait,
            spec.QueueDeclareOk(
                queue=queue.address, message_count=messages, consumer_count=consumers
            ),
        )

    def _queue_bind(self, channel: _Channel, m: spec.QueueBind) -> None:
        name = self._queue_name(channel, m.queue)
        self._vh.bind(("queue", name), m.exchange, m.routing_key, m.arguments, owner=self)
        self._ok(channel, m.no_wait, spec.QueueBindOk())

    def _queue_unbind(self, channel: _Channel, m: spec.QueueUnbind) -> None:
        name = self._queue_name(channel, m.queue)
        self._vh.unbind(("queue", name), m.exchange, m.routing_key, m.arguments, owner=self)
        self._send_method(channel.number, spec.QueueUnbindOk())

    def _queue_purge(self, channel: _Channel, m: spec.QueuePurge) -> None:
        count = self._vh.purge_queue(self._queue_name(channel, m.queue), owner=self)
        self._ok(channel, m.no_wait, spec.QueuePurgeOk(message_count=count))

    def _queue_delete(self, channel: _Channel, m: spec.QueueDelete) -> None:
        count = self._vh.delete_queue(
            self._queue_name(channel, m.queue),
            if_unused=m.if_unused,
            if_empty=m.if_empty,
            owner=self,
        )
        self._ok(channel, m.no_wait, spec.QueueDeleteOk(message_count=count))

    @property
    def _vh(self) -> VirtualHost:
        return self.vhost_or_default

    def _check_access(self, address: str, *, send: bool) -> None:
        """The broker's access rules (``BrokerConfig.users``), as for 1.0 addresses: a
        publish is a send to its exchange (to the queue of its routing key through the
        default exchange), a consume or get a receive from its queue; 403 ACCESS_REFUSED
        otherwise."""
        users = self.broker.config.users
        if users is None or users.allows(self.identity, address, send=send):
            return
        verb = "send to" if send else "receive from"
        raise Refused(
            ReplyCode.ACCESS_REFUSED, f"user '{self.identity}' may not {verb} '{address}'"
        )

    # -- basic ---------------------------------------------------------------------------------

    def _basic_qos(self, channel: _Channel, m: spec.BasicQos) -> None:
        if m.prefetch_size:
            # (0-9-1 spec basic.qos, field prefetch-size: RabbitMQ implements none but 0,
            # and closes the connection with 540, as here)
            raise Refused(ReplyCode.NOT_IMPLEMENTED, f"prefetch_size!=0 ({m.prefetch_size})")
        if m.global_:
            channel.global_prefetch = m.prefetch_count
        else:
            channel.prefetch = m.prefetch_count
        for consumer in channel.consumers.values():
            self.broker.wake(consumer.queue)
        self._send_method(channel.number, spec.BasicQosOk())

    def _basic_consume(self, channel: _Channel, m: spec.BasicConsume) -> None:
        vh = self._vh
        if (reply_tag := consume_reply(self.broker, channel, m)) is not None:
            return self._ok(channel, m.no_wait, spec.BasicConsumeOk(consumer_tag=reply_tag))
        if consume_091(self, channel, m, self._queue_name(channel, m.queue)):
            return  # (a stream's consumer)
        queue = vh.usable_queue(self._queue_name(channel, m.queue), self)
        self._check_access(queue.address, send=False)
        tag = m.consumer_tag or "amq.ctag-" + secrets.token_urlsafe(16)
        if tag in channel.consumers:
            raise Refused(ReplyCode.NOT_ALLOWED, f"attempt to reuse consumer tag '{tag}'")
        if any(getattr(c, "exclusive", False) for c in queue.consumers):
            raise Refused(
                ReplyCode.ACCESS_REFUSED,
                f"queue '{queue.address}' in vhost '{vh.name}' in exclusive use",
            )
        if m.exclusive and queue.consumers:
            raise Refused(
                ReplyCode.ACCESS_REFUSED,
                f"cannot obtain exclusive access to queue '{queue.address}' in vhost "
                f"'{vh.name}': it has consumers",
            )
        queue.auto = False  # (made by a 1.0 attach: 0-9-1's rules from now, as a declare)
        consumer = _Consumer(channel, tag, queue, no_ack=m.no_ack, exclusive=m.exclusive)
        self._ok(channel, m.no_wait, spec.BasicConsumeOk(consumer_tag=tag))
        channel.consumers[tag] = consumer
        queue.add_consumer(consumer)
        vh.consumer_added(queue)
        self.broker.wake(queue)

    def _basic_cancel(self, channel: _Channel, m: spec.BasicCancel) -> None:
        consumer = channel.consumers.pop(m.consumer_tag, None)
        if consumer is not None:
            channel._remove(consumer)
        cancel_reply(self.broker, channel, m.consumer_tag)
        self._ok(channel, m.no_wait, spec.BasicCancelOk(consumer_tag=m.consumer_tag))

    def _basic_get(self, channel: _Channel, m: spec.BasicGet) -> None:
        vh = self._vh
        check_not_stream(vh.stream(self._queue_name(channel, m.queue)), "basic.get", vh.name)
        queue = vh.usable_queue(self._queue_name(channel, m.queue), self)
        self._check_access(queue.address, send=False)
        vh.got(queue)
        if not channel.flow:  # (the client stopped content on the channel: nothing to give)
            self._send_method(channel.number, spec.BasicGetEmpty())
            return
        message = queue._take(_GETTER, self.broker.wall)
        if message is None:
            self._send_method(channel.number, spec.BasicGetEmpty())
            return
        tag = channel.next_tag
        channel.next_tag += 1
        props, body, exchange, routing_key = basic_of(message)
        method = spec.BasicGetOk(
            delivery_tag=tag,
            redelivered=message.delivery_count > 0 or message.redelivered,
            exchange=exchange or "",
            routing_key=queue.address if routing_key is None else routing_key,
            message_count=len(queue.available),
        )
        self._send_content(channel.number, method, props, body)
        self.record.messages_out += 1
        if m.no_ack:
            self.taken(queue, message)
        else:
            channel.unacked[tag] = (message, queue, None)

    def _basic_ack(self, channel: _Channel, m: spec.BasicAck) -> None:
        tags = channel.tags(m.delivery_tag, m.multiple)
        if channel.tx:
            channel.tx_acks.append(m)
            return
        channel.settle(tags, ack=True, requeue=False)

    def _basic_nack(self, channel: _Channel, m: spec.BasicNack) -> None:
        tags = channel.tags(m.delivery_tag, m.multiple)
        check_stream_settle(channel, tags, self._vh.name)
        if channel.tx:
            channel.tx_acks.append(m)
            return
        channel.settle(tags, ack=False, requeue=m.requeue)

    def _basic_reject(self, channel: _Channel, m: spec.BasicReject) -> None:
        tags = channel.tags(m.delivery_tag, False)
        check_stream_settle(channel, tags, self._vh.name)
        if channel.tx:
            channel.tx_acks.append(m)
            return
        channel.settle(tags, ack=False, requeue=m.requeue)

    def _basic_recover(self, channel: _Channel, m: spec.BasicRecover) -> None:
        if m.requeue:
            channel.requeue_all()
        else:
            channel.redeliver_all()
        self._send_method(channel.number, spec.BasicRecoverOk())

    def _basic_recover_async(self, channel: _Channel, m: spec.BasicRecoverAsync) -> None:
        if m.requeue:
            channel.requeue_all()
        else:
            channel.redeliver_all()

    def _on_content(self, event: ContentReceived) -> None:
        channel = self.channels.get(event.channel)
        if channel is None:
            channel = self.channels[event.channel] = _Channel(self, event.channel)
        method = event.method
        if not isinstance(method, spec.BasicPublish):
            return  # (a client sends no other content)
        self.record.messages_in += 1
        if self.broker.alarm and not self._stopped:
            self._stopped = True  # read no further until the alarm clears
            self.engine.monitor_paused = True  # (RabbitMQ pauses its heartbeat monitor)
        props = event.properties
        assert isinstance(props, spec.BasicProperties)
        seq = 0
        # (the engine may have closed the channel already, later in the same input: the
        # publish came before, and is routed; a confirm has nowhere to go)
        try:  # (not ``channels``: a copy, made each call)
            confirm_mode = self.engine.channel(channel.number).confirm_mode
        except KeyError:
            confirm_mode = False
        if confirm_mode:
            channel.confirm_seq += 1
            seq = channel.confirm_seq
        try:
            if method.immediate:
                raise Refused(ReplyCode.NOT_IMPLEMENTED, "immediate=true")
            props = rewrite_reply_to(self.broker, channel, props)  # (direct reply-to)
            if channel.tx:
                self._vh.route(method.exchange, method.routing_key, props.headers)  # 404 now
                channel.tx_publishes.append((method, props, event.body))
                return
            self._publish(channel, method, props, event.body, seq)
        except Refused as refused:
            self._refuse(channel, refused, method)

    def _publish(
        self,
        channel: _Channel,
        method: spec.BasicPublish,
        props: spec.BasicProperties,
        body: bytes,
        seq: int,
    ) -> None:
        self._check_access(method.exchange or method.routing_key, send=True)
        if props.user_id is not None and props.user_id != self.identity:
            raise Refused(
                ReplyCode.PRECONDITION_FAILED,
                f"user_id property set to '{props.user_id}' but authenticated user was "
                f"'{self.identity}'",
            )
        published = (self.vhost or self.broker.vhosts["/"]).publish(
            method.exchange, method.routing_key, props, body
        )
        if published.routed == 0 and method.mandatory and channel.flow:
            self._send_content(
                channel.number,
                spec.BasicReturn(
                    reply_code=ReplyCode.NO_ROUTE,
                    reply_text="NO_ROUTE",
                    exchange=method.exchange,
                    routing_key=method.routing_key,
                ),
                props,
                body,
            )
        if seq:
            channel.confirms.append((seq, not published.refused))

    def _send_confirms(self, channel: _Channel) -> None:
        """The confirms of this input, after the store's flush: a run of acks as one
        ``basic.ack`` with ``multiple`` (every earlier publish is confirmed by then: inputs
        are handled in order, and a nack goes out before the acks after it), each nack
        alone."""
        confirms, channel.confirms = channel.confirms, []
        if self.engine.closed or channel.number not in self.channels:
            return
        run: int | None = None
        for seq, ack in confirms:
            if ack:
                run = seq
                continue
            if run is not None:
                self._send_method(channel.number, spec.BasicAck(delivery_tag=run, multiple=True))
                run = None
            self._send_method(
                channel.number, spec.BasicNack(delivery_tag=seq, multiple=False, requeue=False)
            )
        if run is not None:
            self._send_method(channel.number, spec.BasicAck(delivery_tag=run, multiple=True))

    # -- confirm, tx ---------------------------------------------------------------------------

    def _confirm_select(self, channel: _Channel, m: spec.ConfirmSelect) -> None:
        self._ok(channel, m.no_wait, spec.ConfirmSelectOk())

    def _tx_select(self, channel: _Channel, m: spec.TxSelect) -> None:
        channel.tx = True
        self._send_method(channel.number, spec.TxSelectOk())

    def _tx_commit(self, channel: _Channel, m: spec.TxCommit) -> None:
        if not channel.tx:
            raise Refused(ReplyCode.PRECONDITION_FAILED, "channel is not transactional")
        publishes, channel.tx_publishes = channel.tx_publishes, []
        acks, channel.tx_acks = channel.tx_acks, []
        for method, props, body in publishes:
            self._publish(channel, method, props, body, 0)
        for ack in acks:
            if isinstance(ack, spec.BasicAck):
                channel.settle(
                    channel.tags(ack.delivery_tag, ack.multiple), ack=True, requeue=False
                )
            elif isinstance(ack, spec.BasicNack):
                tags = channel.tags(ack.delivery_tag, ack.multiple)
                channel.settle(tags, ack=False, requeue=ack.requeue)
            else:  # (basic.reject: what _basic_reject holds)
                channel.settle(
                    channel.tags(ack.delivery_tag, False), ack=False, requeue=ack.requeue
                )
        self._send_method(channel.number, spec.TxCommitOk())

    def _tx_rollback(self, channel: _Channel, m: spec.TxRollback) -> None:
        if not channel.tx:
            raise Refused(ReplyCode.PRECONDITION_FAILED, "channel is not transactional")
        channel.tx_publishes.clear()
        channel.tx_acks.clear()
        self._send_method(channel.number, spec.TxRollbackOk())


def new_connection(broker: Broker091, *, address: str | None = None) -> BrokerConnection091:
    """The connection of a client that sent the 0-9-1 protocol header (or an earlier one of
    its line, see :func:`~amqp_sansio.broker.pick_protocol`), from ``address``: the 0-9-1
    engine's server role (not started: the broker starts it once it counts the
    connection), heartbeats at half the idle time-out, the broker's largest message and
    handshake time-out."""
    config = broker.config
    idle = config.idle_timeout
    engine = Engine091(
        Role.SERVER,
        server_properties={"cluster_name": config.container_id, "version": __version__},
        # half the idle time-out (the client is cut after two silent heartbeats)
        heartbeat=0 if not idle else min(math.ceil(idle / 2), 0xFFFF),
        # the broker's largest message, and its handshake time-out, for 0-9-1 too
        limits=Limits(
            max_body=config.max_message_size or 0,
            handshake_timeout=config.handshake_timeout or 0,
        ),
    )
    return BrokerConnection091(broker, engine, address=address)


class _Getter:
    """The consumer a ``basic.get`` takes a message as (no exclusions apply to it)."""


_GETTER: Any = _Getter()

_EVENTS: dict[type, Any] = {
    LoginRequested: BrokerConnection091._on_login,
    OpenRequested: BrokerConnection091._on_open,
    ChannelClosed: BrokerConnection091._on_channel_closed,
    FlowChanged: BrokerConnection091._on_flow,
    ConnectionClosed: BrokerConnection091._on_closed,
}

_METHODS: dict[type, Any] = {
    spec.ExchangeDeclare: BrokerConnection091._exchange_declare,
    spec.ExchangeDelete: BrokerConnection091._exchange_delete,
    spec.ExchangeBind: BrokerConnection091._exchange_bind,
    spec.ExchangeUnbind: BrokerConnection091._exchange_unbind,
    spec.QueueDeclare: BrokerConnection091._queue_declare,
    spec.QueueBind: BrokerConnection091._queue_bind,
    spec.QueueUnbind: BrokerConnection091._queue_unbind,
    spec.QueuePurge: BrokerConnection091._queue_purge,
    spec.QueueDelete: BrokerConnection091._queue_delete,
    spec.BasicQos: BrokerConnection091._basic_qos,
    spec.BasicConsume: BrokerConnection091._basic_consume,
    spec.BasicCancel: BrokerConnection091._basic_cancel,
    spec.BasicGet: BrokerConnection091._basic_get,
    spec.BasicAck: BrokerConnection091._basic_ack,
    spec.BasicNack: BrokerConnection091._basic_nack,
    spec.BasicReject: BrokerConnection091._basic_reject,
    spec.BasicRecover: BrokerConnection091._basic_recover,
    spec.BasicRecoverAsync: BrokerConnection091._basic_recover_async,
    spec.ConfirmSelect: BrokerConnection091._confirm_select,
    spec.TxSelect: BrokerConnection091._tx_select,
    spec.TxCommit: BrokerConnection091._tx_commit,
    spec.TxRollback: BrokerConnection091._tx_rollback,
}

#: The reason of ``connection.blocked`` (RabbitMQ's, for its memory alarm).
_ALARM_REASON = "low on memory"

#: The names RabbitMQ puts before a reply text.
_CODE_NAMES: dict[int, str] = {int(code): code.name for code in ReplyCode}
