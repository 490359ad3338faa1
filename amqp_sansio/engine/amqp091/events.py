"""What an AMQP 0-9-1 :class:`~amqp_sansio.engine.amqp091.Connection` reports: one frozen
class per happening, named for what the application sees (the project's rule, shared with
the 1.0 engine's :mod:`amqp_sansio.engine.amqp10.events`: every class here subclasses
:class:`amqp_sansio.engine.contract.Event`, the base every protocol's events share).

The engine answers by itself what the protocol answers (``connection.*``, ``channel.open``,
``channel.close``, ``channel.flow``, heartbeats) and reports it with these events; every
other method surfaces as :class:`MethodReceived` or, with content, :class:`ContentReceived`.
"""

from __future__ import annotations

import attrs

from ...codec.amqp091 import FieldTable
from ...definitions.amqp091.methods import Method, Properties
from ..contract import Event

__all__ = [
    "Event",
    "LoginRequested",
    "OpenRequested",
    "ConnectionOpened",
    "ConnectionClosed",
    "ChannelOpened",
    "ChannelClosed",
    "MethodReceived",
    "ContentReceived",
    "Confirmed",
    "Blocked",
    "Unblocked",
    "FlowChanged",
]


def _repr(event: Event, *fields: str, **shown: str) -> str:
    """``Name(field=value, ...)`` of an event whose ``repr`` leaves fields out (a password)
    or abridges them (a body): the ``fields`` by ``repr``, then the ``shown`` as given."""
    parts = [f"{name}={getattr(event, name)!r}" for name in fields]
    parts += [f"{name}={text}" for name, text in shown.items()]
    return f"{type(event).__name__}({', '.join(parts)})"


@attrs.frozen(kw_only=True, repr=False)
class LoginRequested(Event):
    """Server role: the client's ``connection.start-ok`` (or ``connection.secure-ok``)
    arrived (0-9-1 spec, class ``connection``, methods ``start-ok`` and ``secure-ok``).
    Answer with :meth:`Connection.accept_login`, :meth:`Connection.refuse_login` or
    :meth:`Connection.challenge`.

    ``response`` is the mechanism's data as sent; for PLAIN and AMQPLAIN the engine has
    read ``username`` and ``password`` from it, for EXTERNAL ``username`` is the
    authorization identity the client asked for (empty: the one its certificate proves).
    The password never appears in the ``repr``."""

    mechanism: str
    response: bytes
    username: str | None
    password: str | None
    client_properties: FieldTable
    locale: str

    def __repr__(self) -> str:
        return _repr(self, "mechanism", "username", "locale")


@attrs.frozen(kw_only=True)
class OpenRequested(Event):
    """Server role: ``connection.open`` arrived for ``virtual_host`` (0-9-1 spec, class
    ``connection``, method ``open``). Answer with :meth:`Connection.accept_open` or
    :meth:`Connection.refuse_open`."""

    virtual_host: str


@attrs.frozen(kw_only=True)
class ConnectionOpened(Event):
    """The connection is open (``connection.open-ok`` sent or received) with the negotiated
    ``frame_max`` (0: no limit), ``channel_max`` and ``heartbeat`` (seconds, 0: none).
    ``peer_properties`` are the server's ``server-properties`` (client role) or the
    client's ``client-properties`` (server role); ``identity`` is who logged in (the
    username the client gave, or the identity the server's application accepted)."""

    virtual_host: str
    frame_max: int
    channel_max: int
    heartbeat: int
    peer_properties: FieldTable
    identity: str | None


@attrs.frozen(kw_only=True)
class ConnectionClosed(Event):
    """The connection is over: the last event. ``reply_code`` and ``reply_text`` are those
    of the ``connection.close`` that ended it (0-9-1 spec, class ``connection``, method
    ``close``), ours (``by_peer`` false) or the peer's; for an ending without one (the
    stream ended, missed heartbeats, a time-out, a refused protocol header) they say what
    happened (see docs/amqp091.rst, "The engine")."""

    reply_code: int
    reply_text: str
    class_id: int = 0
    method_id: int = 0
    by_peer: bool


@attrs.frozen(kw_only=True)
class ChannelOpened(Event):
    """``channel`` is open (``channel.open-ok`` sent or received)."""

    channel: int


@attrs.frozen(kw_only=True)
class ChannelClosed(Event):
    """``channel`` is closed: its close handshake is over (0-9-1 spec, class ``channel``,
    method ``close``). The reply fields are those of the ``channel.close`` that began it,
    ours (``by_peer`` false) or the peer's. The channel number is free again."""

    channel: int
    reply_code: int
    reply_text: str
    class_id: int = 0
    method_id: int = 0
    by_peer: bool


@attrs.frozen(kw_only=True)
class MethodReceived(Event):
    """A method without content the engine does not consume itself (``queue.*``,
    ``exchange.*``, ``basic.qos``, ``basic.consume``, ``basic.ack`` on a server, ``tx.*``,
    ``confirm.*``, ...)."""

    channel: int
    method: Method


@attrs.frozen(kw_only=True, repr=False)
class ContentReceived(Event):
    """A content-carrying method (``basic.publish``, ``basic.deliver``, ``basic.return``,
    ``basic.get-ok``) with its properties and whole body, assembled from its method,
    header and body frames (0-9-1 spec 4.2.6.2), however the channels interleaved."""

    channel: int
    method: Method
    properties: Properties
    body: bytes

    def __repr__(self) -> str:
        return _repr(self, "channel", "method", "properties", body=f"<{len(self.body)} octets>")


@attrs.frozen(kw_only=True)
class Confirmed(Event):
    """Client role, confirm mode: the server confirmed (``ack``) or refused (not ``ack``,
    a ``basic.nack``) publish ``delivery_tag``, and with ``multiple`` every earlier one
    not confirmed yet (RabbitMQ's publisher confirms). ``Channel.unconfirmed`` is updated
    already."""

    channel: int
    delivery_tag: int
    multiple: bool
    ack: bool


@attrs.frozen(kw_only=True)
class Blocked(Event):
    """Client role: the server blocked publishing on the connection (RabbitMQ's
    ``connection.blocked``), for ``reason``."""

    reason: str


@attrs.frozen(kw_only=True)
class Unblocked(Event):
    """Client role: the server lifted its block (``connection.unblocked``)."""


@attrs.frozen(kw_only=True)
class FlowChanged(Event):
    """The peer sent ``channel.flow`` (0-9-1 spec, class ``channel``, method ``flow``): the
    engine answered ``channel.flow-ok``; ``active`` false means send no more content on
    ``channel`` until it is true again."""

    channel: int
    active: bool


def is_request(event: Event, channel: int | None) -> bool:
    """Whether ``event`` asks the application for an answer on ``channel`` (None: the
    connection): a method or content of it, and for the connection a login or an open not
    answered yet (LoginRequested, OpenRequested). Once we close what it belongs to, the
    answer can no longer be given: the 0-9-1 spec (``channel.close`` and
    ``connection.close``: after sending close, discard everything but close and close-ok)
    drops it as if it had arrived after our close. The events that report a state
    (ChannelOpened, Confirmed, FlowChanged, ...) are not requests."""
    if isinstance(event, MethodReceived | ContentReceived):
        return channel is None or event.channel == channel
    return channel is None and isinstance(event, LoginRequested | OpenRequested)


def discard_requests(events: list[Event], channel: int | None) -> None:
    """The engine closed ``channel`` (None: the connection) for the peer's error while
    the events of the input are gathered: the requests among them (:func:`is_request`)
    are dropped."""
    events[:] = [event for event in events if not is_request(event, channel)]
