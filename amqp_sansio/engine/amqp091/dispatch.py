"""An AMQP 0-9-1 connection's channels 1 and up: the methods the engine answers itself
(0-9-1 spec, class ``channel``: ``open``, ``close``, ``flow`` and their ``-ok``; the
``confirm`` and ``tx`` modes; publisher confirms), the rest reported, and the content
header and body frames assembled into contents (0-9-1 spec 4.2.6.2). A soft error closes
its channel (``channel.close``); a hard one rises as a
:class:`~amqp_sansio.engine.amqp091.channel.PeerError` to the connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import METHODS, Method
from ...definitions.amqp091.spec import ReplyCode
from ...framing.amqp091 import ContentBodyFrame, ContentHeaderFrame
from ...framing.amqp091.amqp08 import AccessRequest, AccessRequestOk
from .channel import Channel, ChannelState, PeerError, hard
from .core import ConnectionCore
from .events import ChannelOpened, ContentReceived, MethodReceived
from .states import ConnectionState, Role

__all__ = ["ChannelDispatch"]

_S = ConnectionState
_OPEN = ChannelState.OPEN


class ChannelDispatch(ConnectionCore):
    """The channel methods and content frames of a connection."""

    def _channel_method(self, number: int, method: Method) -> None:
        ch = self._channels.get(number)
        if (
            ch is not None
            and ch.state is _OPEN
            and self.state is _S.OPEN
            and ch.idle
            and type(method) not in _NOT_PLAIN
        ):  # the common case, none of the checks below failing: straight to the method
            self._open_channel_method(ch, method)
            return
        if self.state is _S.CLOSING:
            return
        if method.CLASS_ID == spec.ConnectionStart.CLASS_ID:
            raise hard(
                ReplyCode.COMMAND_INVALID,
                f"{method.NAME} on channel {number}: the connection class goes on channel 0",
                method,
            )
        ch = self._channels.get(number)
        if isinstance(method, spec.ChannelOpen):
            self._on_channel_open(number, ch)
            return
        if ch is None or self.state is not _S.OPEN:
            raise hard(
                ReplyCode.CHANNEL_ERROR,
                f"{method.NAME} on channel {number}, which is not open",
                method,
            )
        if ch.state is ChannelState.CLOSING:
            self._closing_channel_method(ch, method)
            return
        ch.check_no_content(method.NAME)
        if ch.state is ChannelState.OPENING:
            self._opening_channel_method(ch, method)
            return
        self._open_channel_method(ch, method)

    def _open_channel_method(self, ch: Channel, method: Method) -> None:
        """A method on an open channel of an open connection, no content being assembled
        on it."""
        number = ch.number
        if method.CONTENT:
            # its header and body, when both are in whole: taken with it (the parser's
            # fast path; else they come as frames, to the channel's assembly)
            content = self._parser.take_content(number, ch.max_body)
            if content is None:
                ch.content_method(method)
            else:
                props, body = content
                event = ContentReceived(channel=number, method=method, properties=props, body=body)
                self._content(ch, event)
            return
        handler = _CHANNEL_TABLE.get(type(method))
        try:
            if handler is not None:
                handler(self, ch, method)
            else:
                self._report(MethodReceived(channel=number, method=method))
        except PeerError as exc:
            if exc.hard:
                raise
            self._close_channel(ch, exc.reply_code, exc.text, exc.class_id, exc.method_id)

    def _on_channel_open(self, number: int, ch: Channel | None) -> None:
        if self.role is Role.CLIENT or self.state is not _S.OPEN:
            raise hard(
                ReplyCode.COMMAND_INVALID if self.role is Role.CLIENT else ReplyCode.CHANNEL_ERROR,
                f"channel.open on channel {number} "
                + (
                    "from a server" if self.role is Role.CLIENT else "before the connection is open"
                ),
                spec.ChannelOpen,
            )
        if ch is not None:
            raise hard(
                ReplyCode.CHANNEL_ERROR,
                f"channel.open on channel {number}, which is open already",
                spec.ChannelOpen,
            )
        if self.channel_max and number > self.channel_max:
            raise hard(
                ReplyCode.NOT_ALLOWED,
                f"channel {number} is over the negotiated channel-max {self.channel_max}",
                spec.ChannelOpen,
            )
        ch = Channel(number, ChannelState.OPENING, self.limits.max_body, server=True)
        self._channels[number] = ch
        if self._auto_accept:
            self._accept(ch)
        else:
            self._report(MethodReceived(channel=number, method=spec.ChannelOpen()))

    def _accept(self, ch: Channel) -> None:
        ch.state = ChannelState.OPEN
        self._send(ch.number, spec.ChannelOpenOk())
        self._report(ChannelOpened(channel=ch.number))

    def _opening_channel_method(self, ch: Channel, method: Method) -> None:
        if isinstance(method, spec.ChannelOpenOk) and self.role is Role.CLIENT:
            ch.state = ChannelState.OPEN
            self._report(ChannelOpened(channel=ch.number))
        elif isinstance(method, spec.ChannelClose):
            self._on_channel_close(ch, method)
        else:
            raise hard(
                ReplyCode.CHANNEL_ERROR,
                f"{method.NAME} on channel {ch.number}, which is not open yet",
                method,
            )

    def _closing_channel_method(self, ch: Channel, method: Method) -> None:
        """Spec, ``channel.close``: after sending it, discard everything but ``close`` and
        ``close-ok``."""
        if isinstance(method, spec.ChannelClose):
            self._send(ch.number, spec.ChannelCloseOk())  # both closed: theirs still comes
        elif isinstance(method, spec.ChannelCloseOk):
            self._channel_closed(ch, ch.close_reason, by_peer=False)

    def _on_channel_close(self, ch: Channel, method: spec.ChannelClose) -> None:
        self._send(ch.number, spec.ChannelCloseOk())
        reason = (method.reply_code, method.reply_text, method.class_id, method.method_id)
        self._channel_closed(ch, reason, by_peer=True)

    def _on_channel_unexpected(self, ch: Channel, method: Method) -> None:
        raise hard(
            ReplyCode.COMMAND_INVALID,
            f"{method.NAME} on channel {ch.number}, which is open",
            method,
        )

    def _on_flow(self, ch: Channel, method: spec.ChannelFlow) -> None:
        self._send(ch.number, spec.ChannelFlowOk(active=method.active))
        self._report(ch.flow(method.active))

    def _on_access_request(self, ch: Channel, method: AccessRequest) -> None:
        """A 0-8 client's ``access.request`` (0-8 spec, class ``access``): ticket 1, as
        RabbitMQ answers it (tickets are not checked: 0-9-1 dropped them)."""
        self._send(ch.number, AccessRequestOk(ticket=1))

    def _on_mode(self, ch: Channel, method: Method) -> None:
        """``confirm.select``, ``confirm.select-ok``, ``tx.select``: the channel's mode
        changes (a soft 406 for a server channel asked to mix them); the application sees
        the method too (it answers a select)."""
        ch.select(method, server=self.role is Role.SERVER)
        self._report(MethodReceived(channel=ch.number, method=method))

    def _on_confirmation(self, ch: Channel, method: spec.BasicAck | spec.BasicNack) -> None:
        if self.role is Role.SERVER or not ch.next_publish_seq:
            self._report(MethodReceived(channel=ch.number, method=method))
        else:
            self._report(ch.confirmation(method))

    def _content_frame(self, frame: ContentHeaderFrame | ContentBodyFrame) -> None:
        if self.state is _S.CLOSING:
            return
        ch = self._channels.get(frame.channel)
        if ch is None or ch.state is ChannelState.OPENING:
            raise hard(
                ReplyCode.CHANNEL_ERROR, f"content frame on channel {frame.channel}, not open"
            )
        if ch.state is ChannelState.CLOSING:
            return
        try:
            if isinstance(frame, ContentHeaderFrame):
                event = ch.header(frame)
            else:
                event = ch.body(frame.payload)
        except PeerError as exc:
            if exc.hard:
                raise
            self._close_channel(ch, exc.reply_code, exc.text, exc.class_id, exc.method_id)
            return
        if event is not None:
            self._content(ch, event)

    def _content(self, ch: Channel, event: ContentReceived) -> None:
        """A whole content arrived on ``ch``: a server counts a publish in confirm mode
        (its sequence number, RabbitMQ's publisher confirms)."""
        method = event.method
        if ch.confirm_mode and self.role is Role.SERVER and isinstance(method, spec.BasicPublish):
            ch.next_publish_seq += 1
        self._events.append(event)


_ChannelHandler = Callable[[ChannelDispatch, Channel, Any], None]
#: The channel methods the engine acts on in state OPEN (the rest surface as
#: MethodReceived or ContentReceived).
_CHANNEL_TABLE: dict[type[Method], _ChannelHandler] = {
    spec.ChannelClose: ChannelDispatch._on_channel_close,
    spec.ChannelCloseOk: ChannelDispatch._on_channel_unexpected,
    spec.ChannelOpenOk: ChannelDispatch._on_channel_unexpected,
    spec.ChannelFlow: ChannelDispatch._on_flow,
    spec.ConfirmSelect: ChannelDispatch._on_mode,
    spec.ConfirmSelectOk: ChannelDispatch._on_mode,
    spec.TxSelect: ChannelDispatch._on_mode,
    spec.BasicAck: ChannelDispatch._on_confirmation,
    spec.BasicNack: ChannelDispatch._on_confirmation,
    AccessRequest: ChannelDispatch._on_access_request,
}

#: The methods :meth:`ChannelDispatch._channel_method` checks before any other: those of
#: the connection class and ``channel.open``.
_NOT_PLAIN = frozenset({spec.ChannelOpen} | {m for m in METHODS.values() if m.CLASS_ID == 10})
