"""Direct reply-to (RabbitMQ's extension, its page "Direct Reply-To"): a requester gets its
replies without a reply queue. The broker hands the requester a name,
``amq.rabbitmq.reply-to.<token>`` (the token hard to guess, as a dynamic node's name, broker
draft 2.1); a reply sent to that name goes straight to the requester, at most once: nothing
holds it, and it is dropped if the requester is gone, has no credit or stopped its channel's
flow.

- AMQP 0-9-1 (RabbitMQ 3.10's rules): the requester consumes from the pseudo-queue
  ``amq.rabbitmq.reply-to`` in no-ack mode (one such consumer a channel), and publishes its
  requests on that channel with ``reply-to`` ``amq.rabbitmq.reply-to``, which the broker
  rewrites to the channel's name; a responder publishes the reply to the default exchange
  with that name as its routing key. Refused as RabbitMQ refuses: consuming with acks, a
  second reply consumer on a channel, and a request on a channel without one (406
  PRECONDITION_FAILED, RabbitMQ's texts). A declare of the pseudo-queue answers one consumer
  and no messages; a passive declare of a name says whether its requester is still there
  (404 NOT_FOUND if not). A mandatory reply to a requester that is gone is returned (312
  NO_ROUTE), as RabbitMQ 3.10 does.
- AMQP 1.0 (RabbitMQ 4.2's rules): the requester attaches a receiving link whose source is
  dynamic (core spec 3.5.3) with the capability ``rabbitmq:volatile-queue``; the attach's
  answer carries the name as the source's address, the link sends settled (the broker's
  snd-settle-mode, core spec 2.8.2), and each reply takes a unit of its credit. A responder
  sends to the name through the anonymous relay (``to``, see :mod:`._relay`) or on a link
  attached to the name (refused ``amqp:not-found`` if its requester is gone); replies are
  accepted at once, delivered or not.

The names are one namespace for both protocols, so a 0-9-1 requester may be answered by a 1.0
responder and the other way round (the message mapped as :mod:`._mapping` maps it). RabbitMQ's
1.0 name has the ``/queues/`` prefix of its address scheme v2; this broker's addresses have
none, and its names none either, but a ``/queues/amq.rabbitmq.reply-to.<token>`` address is
taken as the name.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..amqp091 import spec
from ..amqp091.engine import ChannelState
from ..amqp091.spec import ReplyCode
from ..codec.types import Symbol
from ..definitions.messaging import Source, TerminusDurability, TerminusExpiryPolicy
from ..definitions.performatives import SenderSettleMode
from ..engine.link import Link
from ..engine.sender import Sender
from ..engine.session import Session
from ..engine.states import ConnectionState, LinkState
from ._store import StoredMessage
from .amqp091.declarations import Refused
from .amqp091.mapping import basic_of

if TYPE_CHECKING:
    from .amqp10.connection import BrokerConnection

__all__ = [
    "PSEUDO_QUEUE",
    "REPLY_PREFIX",
    "VOLATILE_QUEUE",
    "DirectReplies",
    "attach_volatile",
    "cancel_reply",
    "consume_reply",
    "declare_reply",
    "reply_name",
    "rewrite_reply_to",
    "sweep_links",
]

#: The pseudo-queue a 0-9-1 requester consumes from and names in ``reply-to``.
PSEUDO_QUEUE = "amq.rabbitmq.reply-to"
#: What every name the broker hands out starts with.
REPLY_PREFIX = PSEUDO_QUEUE + "."
#: The source capability of a 1.0 requester's link (RabbitMQ 4.2's).
VOLATILE_QUEUE = Symbol("rabbitmq:volatile-queue")
#: RabbitMQ's address scheme v2 prefix of a queue's address.
_QUEUES = "/queues/"


def reply_name(address: object) -> str | None:
    """The direct reply-to name ``address`` is (RabbitMQ's ``/queues/`` form taken too), or
    None if it is none."""
    if not isinstance(address, str):
        return None
    if address.startswith(_QUEUES):
        address = address[len(_QUEUES) :]
    return address if address.startswith(REPLY_PREFIX) else None


class ReplySink(Protocol):
    """A requester: where the replies to its name go."""

    def deliver_reply(self, name: str, message: StoredMessage) -> bool:
        """Hand ``message`` to the requester now; False if it cannot take it (dropped)."""
        ...


class DirectReplies:
    """The broker's requesters by name, each with its owner (a 0-9-1 channel, a 1.0 link)
    and the owner's connection; ``delivered`` and ``dropped`` count the replies."""

    def __init__(self) -> None:
        self._sinks: dict[str, ReplySink] = {}
        self._names: dict[object, str] = {}
        self._owned: dict[object, dict[object, None]] = {}
        self.delivered = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._sinks)

    def open(self, conn: object, owner: object, sink: ReplySink) -> str:
        """A new requester: its name."""
        name = REPLY_PREFIX + secrets.token_urlsafe(18)
        self._sinks[name] = sink
        self._names[owner] = name
        self._owned.setdefault(conn, {})[owner] = None
        return name

    def name_of(self, owner: object) -> str | None:
        return self._names.get(owner)

    def sink_of(self, owner: object) -> ReplySink | None:
        name = self._names.get(owner)
        return None if name is None else self._sinks.get(name)

    def owners(self, conn: object) -> list[object]:
        return list(self._owned.get(conn, ()))

    def close(self, conn: object, owner: object) -> None:
        """The requester ``owner`` is gone: later replies to its name are dropped."""
        name = self._names.pop(owner, None)
        if name is None:
            return
        del self._sinks[name]
        owned = self._owned[conn]
        del owned[owner]
        if not owned:
            del self._owned[conn]

    def present(self, address: str) -> bool:
        name = reply_name(address)
        return name is not None and name in self._sinks

    def deliver(self, address: str, message: StoredMessage) -> bool:
        """A reply to ``address`` (a name): delivered now (True), or dropped."""
        name = reply_name(address)
        sink = None if name is None else self._sinks.get(name)
        if sink is not None and name is not None and sink.deliver_reply(name, message):
            self.delivered += 1
            return True
        self.dropped += 1
        return False


# -- AMQP 0-9-1 --------------------------------------------------------------------------------


class _ReplyConsumer:
    """A 0-9-1 channel's consumer of :data:`PSEUDO_QUEUE` (``channel`` is the broker's
    ``_Channel``): each reply is a ``basic.deliver`` of its tag, from the default exchange
    with the name as routing key (RabbitMQ's), without acks."""

    def __init__(self, channel: Any, tag: str) -> None:
        self.channel = channel
        self.tag = tag

    def deliver_reply(self, name: str, message: StoredMessage) -> bool:
        channel = self.channel
        conn = channel.conn
        if not channel.flow or not conn.is_open:
            return False
        try:
            state = conn.engine.channel(channel.number).state
        except KeyError:  # (a closed channel: its consumer goes with it, see _Channel.close)
            return False
        if state is not ChannelState.OPEN:
            return False
        props, body, _, _ = basic_of(message)
        method = spec.BasicDeliver(
            consumer_tag=self.tag,
            # RabbitMQ's: the channel's next tag, not taken (a reply is never acked, and
            # the channel's next delivery has that tag too)
            delivery_tag=channel.next_tag,
            redelivered=False,
            exchange="",
            routing_key=name,
        )
        conn.engine.send_content(channel.number, method, props, body)
        conn.record.messages_out += 1
        conn.broker.has_output(conn)
        return True


def consume_reply(broker: Any, channel: Any, m: spec.BasicConsume) -> str | None:
    """``basic.consume`` of :data:`PSEUDO_QUEUE` on ``channel``: its consumer tag, for the
    caller's ``consume-ok``; None for another queue. 406 in ack mode, or for a second one."""
    if m.queue != PSEUDO_QUEUE:
        return None
    if not m.no_ack:
        raise Refused(ReplyCode.PRECONDITION_FAILED, "reply consumer cannot acknowledge")
    replies: DirectReplies = broker.replies
    if replies.name_of(channel) is not None:
        raise Refused(ReplyCode.PRECONDITION_FAILED, "reply consumer already set")
    tag = m.consumer_tag or "amq.ctag-" + secrets.token_urlsafe(16)
    if tag in channel.consumers:
        raise Refused(ReplyCode.NOT_ALLOWED, f"attempt to reuse consumer tag '{tag}'")
    replies.open(channel.conn, channel, _ReplyConsumer(channel, tag))
    return tag


def cancel_reply(broker: Any, channel: Any, tag: str) -> None:
    """``basic.cancel`` of ``tag``: the channel's reply consumer goes, if it is that one."""
    replies: DirectReplies = broker.replies
    sink = replies.sink_of(channel)
    if isinstance(sink, _ReplyConsumer) and sink.tag == tag:
        replies.close(channel.conn, channel)


def rewrite_reply_to(
    broker: Any, channel: Any, props: spec.BasicProperties
) -> spec.BasicProperties:
    """The properties of a publish on ``channel``: a ``reply-to`` of :data:`PSEUDO_QUEUE`
    becomes the channel's name (406 if the channel has no reply consumer, RabbitMQ's)."""
    if props.reply_to != PSEUDO_QUEUE:
        return props
    name = broker.replies.name_of(channel)
    if name is None:
        raise Refused(ReplyCode.PRECONDITION_FAILED, "fast reply consumer does not exist")
    return attrs.evolve(props, reply_to=name)


def declare_reply(broker: Any, name: str, vhost: str) -> spec.QueueDeclareOk | None:
    """``queue.declare`` (passive or not) of :data:`PSEUDO_QUEUE` or of a name: a queue of
    one consumer and no messages while its requester is there, else 404 (RabbitMQ's
    answers); None for another queue."""
    if name == PSEUDO_QUEUE or (name.startswith(REPLY_PREFIX) and broker.replies.present(name)):
        return spec.QueueDeclareOk(queue=name, message_count=0, consumer_count=1)
    if name.startswith(REPLY_PREFIX):
        raise Refused(ReplyCode.NOT_FOUND, f"no queue '{name}' in vhost '{vhost}'")
    return None


# -- AMQP 1.0 ----------------------------------------------------------------------------------


class _ReplyLink:
    """A 1.0 requester's link: each reply is a settled transfer, if the link has credit and
    the message is within the client's max-message-size (core spec 2.7.3)."""

    def __init__(self, conn: BrokerConnection, link: Sender) -> None:
        self.conn = conn
        self.link = link

    def deliver_reply(self, name: str, message: StoredMessage) -> bool:
        link = self.link
        conn = self.conn
        if (
            link.state is not LinkState.ATTACHED
            or conn.engine.state is not ConnectionState.OPENED
            or link.link_credit <= 0
        ):
            return False
        data = message.encoded()
        limit = link.remote_max_message_size
        if limit and len(data) > limit:
            return False
        link.send(data, settled=True)
        conn.record.messages_out += 1
        conn.broker.has_output(conn)
        return True


def attach_volatile(conn: BrokerConnection, link: Sender, source: Source) -> None:
    """A requester's link (a dynamic source with :data:`VOLATILE_QUEUE`): attached with a
    new name as its source's address, sending settled, its terminus kept by nothing."""
    name = conn.broker.replies.open(conn, link, _ReplyLink(conn, link))
    link.snd_settle_mode = SenderSettleMode.SETTLED  # (the sender's to choose, 2.7.3)
    link.attach(
        source=attrs.evolve(
            source,
            address=name,
            durable=TerminusDurability.NONE,
            expiry_policy=TerminusExpiryPolicy.LINK_DETACH,
            timeout=0,
        )
    )


def sweep_links(conn: BrokerConnection, session: Session | None, link: Link | None = None) -> None:
    """Forget ``conn``'s requesters whose link is ``link``, no longer attached, of
    ``session`` (ended), or all of them (the connection is lost)."""
    replies = conn.broker.replies
    for owner in replies.owners(conn):
        assert isinstance(owner, Sender)
        if (
            owner is link
            or owner.state is not LinkState.ATTACHED
            or owner.session is session
            or conn.lost
        ):
            replies.close(conn, owner)
