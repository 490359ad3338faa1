"""Direct reply-to on the 1.0 side (RabbitMQ 4.2's rules; see
:mod:`amqp_sansio.broker._replies`, which holds the names both protocols share): a
requester's link, attached with a dynamic source with ``rabbitmq:volatile-queue``, and the
sweep of those whose link went."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ...definitions.amqp10.messaging import Source, TerminusDurability, TerminusExpiryPolicy
from ...definitions.amqp10.performatives import SenderSettleMode
from ...engine.amqp10.link import Link
from ...engine.amqp10.sender import Sender
from ...engine.amqp10.session import Session
from ...engine.amqp10.states import ConnectionState, LinkState
from .._store import StoredMessage

if TYPE_CHECKING:
    from .interface import Connection10

__all__ = ["attach_volatile", "sweep_links"]


class _ReplyLink:
    """A 1.0 requester's link: each reply is a settled transfer, if the link has credit and
    the message is within the client's max-message-size (core spec 2.7.3)."""

    def __init__(self, conn: Connection10, link: Sender) -> None:
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


def attach_volatile(conn: Connection10, link: Sender, source: Source) -> None:
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


def sweep_links(conn: Connection10, session: Session | None, link: Link | None = None) -> None:
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
