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
  sends to the name through the anonymous relay (``to``, see :mod:`.amqp10.relay`) or on a link
  attached to the name (refused ``amqp:not-found`` if its requester is gone); replies are
  accepted at once, delivered or not.

The names are one namespace for both protocols, so a 0-9-1 requester may be answered by a 1.0
responder and the other way round (the message mapped as :mod:`.amqp091.mapping` maps it).
RabbitMQ's 1.0 name has the ``/queues/`` prefix of its address scheme v2; this broker's
addresses have none, and its names none either, but a
``/queues/amq.rabbitmq.reply-to.<token>`` address is taken as the name.

This module is what both protocols share: the names and who holds them
(:class:`DirectReplies`, the broker's ``replies``). Each protocol's requesters and
responders are in its folder: :mod:`.amqp091.replies`, :mod:`.amqp10.replies`.
"""

from __future__ import annotations

import secrets
from typing import Protocol

from ..codec.amqp10 import Symbol
from ._store import StoredMessage

__all__ = ["PSEUDO_QUEUE", "REPLY_PREFIX", "VOLATILE_QUEUE", "DirectReplies", "reply_name"]

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
