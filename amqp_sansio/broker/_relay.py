"""The anonymous relay: a link whose target has a null address, on which each message goes
to the node named by its properties' ``to`` field (core spec 3.5.4 ``address``, 3.2.4
``to``; the ``ANONYMOUS-RELAY`` connection capability that Proton and Qpid clients look for
in the open's offered-capabilities, core spec 2.7.1).

The relay routes only to nodes that exist (a queue, a topic, a stream, a dynamic node such
as a reply-to queue): it never makes one, so a mistyped reply-to address is answered
``rejected`` with ``amqp:not-found`` instead of filling a queue nobody reads.
"""

from __future__ import annotations

from typing import cast

from ..codec.decoder import decode_from
from ..codec.types import Symbol
from ..definitions.messaging import Properties
from ._store import _section_code

__all__ = ["ANONYMOUS_RELAY", "relay_address"]

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
