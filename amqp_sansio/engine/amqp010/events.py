"""What an AMQP 0-10 :class:`~amqp_sansio.engine.amqp010.Connection` reports: one frozen
class per happening, named for what the application sees (the project's rule: every class
here subclasses :class:`amqp_sansio.engine.contract.Event`, the base every protocol's
events share).

The engine answers by itself what the protocol answers: the connection's negotiation and
close, heartbeats, and the session controls (0-10 spec, class ``session``: attached,
detached, timeout, command-point, completed, known-completed, flush, gap), and
``execution.sync``. Every other command surfaces as :class:`CommandReceived`.

A session is named by its ``name`` (the octets of ``session.attach``'s ``name``); command
ids are the wire's ``sequence-no`` values.
"""

from __future__ import annotations

from typing import Any

import attrs

from ...codec.amqp010 import Struct32
from ...definitions import amqp010 as spec
from ..contract import Event

__all__ = [
    "Event",
    "OpenRequested",
    "ConnectionOpened",
    "Redirected",
    "ConnectionClosed",
    "SessionAttached",
    "SessionResumed",
    "SessionDetached",
    "SessionExpired",
    "CommandReceived",
    "CommandsCompleted",
    "ResultReceived",
    "ExecutionExceptionReceived",
]


@attrs.frozen(kw_only=True)
class OpenRequested(Event):
    """Server role: ``connection.open`` arrived (0-10 spec, ``connection.open``) from the
    client who logged in as ``identity``. Answer with :meth:`Connection.accept_open`,
    :meth:`Connection.redirect` (not when ``insist``) or :meth:`Connection.close` with 402
    ``invalid-path``."""

    virtual_host: str
    capabilities: tuple[str, ...]
    insist: bool
    identity: str | None


@attrs.frozen(kw_only=True)
class ConnectionOpened(Event):
    """The connection is open (``connection.open-ok`` sent or received), with the
    negotiated ``max_frame_size``, ``channel_max`` and ``heartbeat`` (seconds; 0: none).
    ``peer_properties`` are the peer's ``server-properties`` or ``client-properties``;
    ``identity`` who logged in; ``known_hosts`` the server's ``open-ok`` list."""

    virtual_host: str
    max_frame_size: int
    channel_max: int
    heartbeat: int
    peer_properties: dict[str, Any]
    identity: str | None
    known_hosts: tuple[str, ...]


@attrs.frozen(kw_only=True)
class Redirected(Event):
    """Client role: the server sent ``connection.redirect`` instead of ``open-ok`` (0-10
    spec, ``connection.redirect``): connect to ``host`` (or one of ``known_hosts``). The
    connection has ended; ConnectionClosed follows."""

    host: str
    known_hosts: tuple[str, ...]


@attrs.frozen(kw_only=True)
class ConnectionClosed(Event):
    """The connection has ended: after the close handshake (``by_peer``: the peer began
    it), the stream's end, a time-out, or a fault. ``reply_code`` is a
    ``connection.close-code`` (200 ``normal``, 320 ``connection-forced``, 402
    ``invalid-path``, 501 ``framing-error``)."""

    reply_code: int
    reply_text: str
    by_peer: bool


@attrs.frozen(kw_only=True)
class SessionAttached(Event):
    """A new session is attached to ``channel`` (0-10 spec, ``session.attached``); its
    command ids start at 0."""

    session: bytes
    channel: int


@attrs.frozen(kw_only=True)
class SessionResumed(Event):
    """A detached session was attached again within its time-out (0-10 spec, class
    ``session``, "attachment"): its ``replayed`` commands the peer had not completed were
    sent again, from the ``session.command-point`` of the first."""

    session: bytes
    channel: int
    replayed: int


@attrs.frozen(kw_only=True)
class SessionDetached(Event):
    """The session left its channel (0-10 spec, ``session.detached``; ``code`` its
    ``detach-code``: 0 ``normal``, 1 ``session-busy``, 2 ``transport-busy``, 3
    ``not-attached``, 4 ``unknown-ids``; None when the connection ended under it).
    ``expires`` is when its kept state is forgotten (None: not kept; it was refused,
    ended, or had a time-out of 0)."""

    session: bytes
    channel: int
    code: int | None
    by_peer: bool
    expires: float | None


@attrs.frozen(kw_only=True)
class SessionExpired(Event):
    """A detached session's time-out passed: its state is gone and it can no longer be
    resumed (0-10 spec, ``session.request-timeout``)."""

    session: bytes


@attrs.frozen(kw_only=True, repr=False)
class CommandReceived(Event):
    """The peer's command ``command_id`` arrived on ``session`` (0-10 spec 4.4, command
    segments): the ``command``, its ``sync`` flag (the peer wants to know of its
    completion at once), the ``header`` structs and the ``body`` octets (a
    ``message.transfer``'s), and ``header_octets``, the header segment as it came (what
    ``header`` was decoded from; a broker passing the message on sends them again). Call
    :meth:`Connection.complete` once it is done."""

    session: bytes
    command_id: int
    command: spec.Command
    sync: bool
    header: tuple[spec.Struct, ...] = ()
    body: bytes = b""
    header_octets: bytes = b""

    def __repr__(self) -> str:
        return (
            f"CommandReceived(session={self.session!r}, command_id={self.command_id}, "
            f"command={self.command!r}, sync={self.sync}, header={self.header!r}, "
            f"body=<{len(self.body)} octets>)"
        )


@attrs.frozen(kw_only=True)
class CommandsCompleted(Event):
    """The peer completed our commands ``command_ids`` on ``session`` (0-10 spec,
    ``session.completed``): their replay state is freed."""

    session: bytes
    command_ids: tuple[int, ...]


@attrs.frozen(kw_only=True)
class ResultReceived(Event):
    """``execution.result`` arrived: the ``value`` of our command ``command_id`` (0-10
    spec, ``execution.result``)."""

    session: bytes
    command_id: int | None
    value: spec.Struct | Struct32 | None


@attrs.frozen(kw_only=True)
class ExecutionExceptionReceived(Event):
    """``execution.exception`` arrived (0-10 spec, ``execution.exception``): the peer
    refused a command (``exception.command_id``, ``exception.error_code``, ...). The peer
    detaches the session next, and its state is not kept."""

    session: bytes
    exception: spec.ExecutionException
