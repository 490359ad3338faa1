"""What the engine reports to the application: one frozen class per happening.

The events are named for what the application sees, not for the frame that caused it.
Events that concern a session, link or delivery carry the engine's handle object for it
(:class:`~amqp_sansio.Session`, :class:`~amqp_sansio.Link`, :class:`~amqp_sansio.Delivery`),
through which the application answers.

The events a link or a session reports itself are defined with it: :class:`LinkAttached`,
:class:`LinkDetached` and :class:`DeliveryUpdated` in :mod:`.link`, :class:`SessionBegun` and
:class:`SessionEnded` in :mod:`.session` (so that neither imports this module, which names
them); :mod:`amqp_sansio.events` gathers all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from ...codec.amqp10.decoder import DEFAULT_MAX_DEPTH
from ...definitions.amqp10.message import Message
from ...definitions.amqp10.performatives import Error, Open, SaslCode
from ..contract import Event

if TYPE_CHECKING:
    from .link import Delivery, Link

__all__ = [
    "Authenticated",
    "AuthenticationFailed",
    "ConnectionClosed",
    "ConnectionEnded",
    "ConnectionOpened",
    "CreditChanged",
    "DeliveryAborted",
    "DeliveryReceived",
    "DrainCompleted",
    "Event",
    "IdleTimedOut",
    "PeerWithoutSASL",
    "ProtocolError",
    "UnsupportedProtocol",
]


def _joined(data: bytes | tuple[bytes | memoryview, ...]) -> bytes:
    if isinstance(data, bytes):
        return data
    return b"".join(data)


@attrs.frozen(kw_only=True)
class UnsupportedProtocol(Event):
    """The peer sent a protocol header we do not speak (core spec 2.2). We answered with our
    own header and the connection has ended. ``version_name`` says what the peer tried, e.g.
    ``"AMQP 0-9-1"``."""

    header: bytes
    version_name: str


@attrs.frozen(kw_only=True)
class PeerWithoutSASL(UnsupportedProtocol):
    """The peer speaks AMQP 1.0 but not through a SASL layer where we need one (core spec
    2.2, 5.1): a client that asked for SASL got the bare AMQP header back (the server has no
    SASL layer), or a server that requires authentication got the bare AMQP header from a
    client. We answered as 2.2 says (our own header, nothing else) and the connection has
    ended. A client may connect again without SASL (the high-level adapters do so once,
    when they chose SASL themselves; see ``docs/defaults.rst``)."""


@attrs.frozen(kw_only=True)
class Authenticated(Event):
    """The SASL exchange succeeded (core spec 5.3.3.6, code ``ok``); the AMQP header follows.
    ``identity`` is who the server authenticated: on a server, the identity the mechanism
    established (for access control); on a client, the username it gave, or None.

    On a server whose :class:`~amqp_sansio.sasl.ServerAuthenticator` allows anonymous access, a
    client that sent the bare AMQP header (no SASL layer, core spec 5.1) is reported so too,
    with ``mechanism`` None and the authenticator's anonymous identity: it gets what an
    ANONYMOUS client gets."""

    mechanism: str | None
    identity: str | None


@attrs.frozen(kw_only=True)
class AuthenticationFailed(Event):
    """The SASL exchange failed (core spec 5.3): the server refused (``code``), the peer broke
    the exchange, no mechanism fits, or the server could not prove itself (SCRAM). The
    connection has ended; a server has sent its failed outcome, and nothing else follows.
    ``error`` is the typed exception (a :class:`~amqp_sansio.sasl.SASLError` for SASL's own
    failures); its description never contains a credential."""

    code: SaslCode
    description: str
    error: Exception


@attrs.frozen(kw_only=True)
class ConnectionOpened(Event):
    """The peer's open arrived (core spec 2.4.1). In the server role, answer with
    :meth:`Connection.open` (accept) or :meth:`Connection.close` with an error (refuse)."""

    remote: Open


@attrs.frozen(kw_only=True)
class ConnectionClosed(Event):
    """The peer's close arrived, with its error if it gave one (core spec 2.4.3)."""

    error: Error | None


@attrs.frozen(kw_only=True)
class ConnectionEnded(Event):
    """Nothing more may be sent or received: both closes were exchanged, or the protocol
    headers did not match (state END). The transport can be closed."""


@attrs.frozen(kw_only=True)
class ProtocolError(Event):
    """The peer broke the protocol. The engine has already sent the close, end or detach
    carrying ``error`` (with the spec's condition); ``scope`` is ``"connection"``,
    ``"session"`` or ``"link"``."""

    error: Error
    scope: str


@attrs.frozen(kw_only=True)
class IdleTimedOut(Event):
    """No frame arrived within our idle time-out (core spec 2.4.5). The engine has sent a
    close with ``amqp:resource-limit-exceeded``."""


@attrs.frozen(kw_only=True)
class CreditChanged(Event):
    """The peer's flow state for a link changed (core spec 2.6.7). For a sender: how much
    it may send now (``credit``) and whether the receiver asks it to ``drain``. For a
    receiver: what the sender says it has ``available``."""

    link: Link
    credit: int
    available: int
    drain: bool


@attrs.frozen(kw_only=True)
class DrainCompleted(Event):
    """A receiver's drain is done: the sender used up or gave back all the credit (2.6.7)."""

    link: Link


@attrs.frozen(kw_only=True, repr=False)
class DeliveryReceived(Event):
    """Message data arrived on a receiving link (core spec 2.6.12). ``data`` is the whole
    message, or, on a link that streams, the bytes of this chunk; ``complete`` is false while
    more of the delivery is to come. :meth:`message` decodes the message.

    A message that came in several frames (or in large ones) is held as the pieces it came
    in, views of the bytes received: ``data`` joins them on first use (the one copy of the
    message, kept), and :meth:`message` decodes straight from them, copying a large data
    section's bytes once and nothing else of them. The engine's pieces are views of
    immutable bytes only (see :meth:`Connection.receive_data
    <amqp_sansio.Connection.receive_data>`).
    """

    link: Link
    delivery: Delivery
    #: ``bytes``, or the pieces (``bytes`` and views of ``bytes``) that join to them.
    _data: bytes | tuple[bytes | memoryview, ...] = attrs.field(eq=_joined)
    complete: bool

    def __repr__(self) -> str:
        return (
            f"DeliveryReceived(link={self.link!r}, delivery={self.delivery!r}, "
            f"data={_joined(self._data)!r}, complete={self.complete!r})"
        )

    @property
    def data(self) -> bytes:
        """The message's bytes (on a streaming link, this chunk's)."""
        data = self._data
        if type(data) is bytes:
            return data
        joined = _joined(data)
        object.__setattr__(self, "_data", joined)  # joined once: the pieces go
        return joined

    def message(self, *, max_depth: int = DEFAULT_MAX_DEPTH) -> Message:
        """The message decoded (:meth:`Message.decode <amqp_sansio.Message.decode>`), from
        the pieces it came in where ``data`` has not joined them: a large data section's
        bytes are copied from them once, into the body's ``bytes``. Raises
        :class:`~amqp_sansio.DecodeError` for bytes that are not a message (or, on a
        streaming link, for a chunk that is not a whole one)."""
        return Message.decode(self._data, max_depth=max_depth)


@attrs.frozen(kw_only=True)
class DeliveryAborted(Event):
    """The sender aborted a delivery part-way (core spec 2.6.14); its data is discarded."""

    link: Link
    delivery: Delivery
