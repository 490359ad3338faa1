"""The anonymous relay: a link whose target has a null address, on which each message goes
to the node named by its properties' ``to`` field (core spec 3.5.4 ``address``, 3.2.4
``to``; the ``ANONYMOUS-RELAY`` connection capability that Proton and Qpid clients look for
in the open's offered-capabilities, core spec 2.7.1).

The relay routes only to nodes that exist (a queue, a topic, a stream, a dynamic node such
as a reply-to queue): it never makes one, so a mistyped reply-to address is answered
``rejected`` with ``amqp:not-found`` instead of filling a queue nobody reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ...codec.amqp10 import Symbol, decode_from
from ...definitions.amqp10.messaging import Properties
from ...definitions.amqp10.performatives import Error
from .._nodes import Node, error
from .._replies import reply_name
from .._store import StoredMessage, _section_code

if TYPE_CHECKING:
    from .interface import Broker10

__all__ = ["ANONYMOUS_RELAY", "relay_address", "relay_route"]

#: The connection capability saying the broker routes messages sent on a link with a null
#: target address by their ``to`` field.
ANONYMOUS_RELAY = Symbol("ANONYMOUS-RELAY")
_PROPERTIES = 0x73


def relay_address(data: bytes) -> str | None:
    """The ``to`` of an encoded message's properties (core spec 3.2.4), or None if it has
    none (or one that is not a string). The sections before the properties were checked
    when the message arrived (:func:`~amqp_sansio.broker.parse_message`); the body is not
    read."""
    pos = 0
    while pos < len(data):
        code = _section_code(data, pos)
        if code is None or code > _PROPERTIES:
            return None
        value, end = decode_from(data, pos)
        if code == _PROPERTIES:
            to = cast(Properties, value).to
            return to if isinstance(to, str) else None
        pos = end
    return None


def relay_route(
    broker: Broker10, identity: str | None, address: str | None, message: StoredMessage
) -> Node | Error | None:
    """The node an anonymous-relay message goes to, by its ``to`` (core spec 3.2.4,
    ``address``), or why it goes nowhere: ``amqp:not-found`` (no ``to``, or no node there:
    the relay makes none) or ``amqp:unauthorized-access`` (``identity`` may not send
    there). None: it was a direct reply, handed to its requester or dropped."""
    if address is None:
        return error("amqp:not-found", "an anonymous-relay message needs a 'to' address")
    users = broker.config.users
    if users is not None and not users.allows(identity, address, send=True):
        who = identity or "an unauthenticated client"
        return error("amqp:unauthorized-access", f"{who} may not send to {address!r}")
    if reply_name(address) is not None:
        broker.replies.deliver(address, message)
        return None
    node = broker.nodes.get(address)
    if node is None or node.deleted:
        return error("amqp:not-found", f"no node {address!r}")
    return node
