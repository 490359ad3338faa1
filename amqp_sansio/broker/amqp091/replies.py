"""Direct reply-to on the 0-9-1 side (RabbitMQ 3.10's rules; see
:mod:`amqp_sansio.broker._replies`, which holds the names both protocols share): the
pseudo-queue's consumer, the rewrite of a request's ``reply-to``, and the declare of the
pseudo-queue or of a name."""

from __future__ import annotations

import secrets
from typing import Any

import attrs

from ...definitions.amqp091 import spec
from ...definitions.amqp091.spec import ReplyCode
from ...engine.amqp091 import ChannelState
from .._replies import PSEUDO_QUEUE, REPLY_PREFIX, DirectReplies
from .._store import StoredMessage
from .declarations import Refused
from .mapping import basic_of

__all__ = ["cancel_reply", "consume_reply", "declare_reply", "rewrite_reply_to"]


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
