"""One AMQP 0-9-1 channel's state, as its :class:`~amqp_sansio.engine.amqp091.Connection`
keeps it (0-9-1 spec, class ``channel``): where its open and close handshakes are, the
content being assembled on it (0-9-1 spec 4.2.6.2: a content-carrying method, then a
content header frame, then body frames up to the size the header announced, with no other
frame of that channel in between), its flow state and its publisher-confirm sequence
(RabbitMQ's ``confirm`` class).

The application reads a :class:`Channel` (``Connection.channel(n)``); only the connection
changes it.
"""

from __future__ import annotations

import enum

from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method, Properties
from ...definitions.amqp091.spec import ReplyCode
from ...framing.amqp091 import ContentHeaderFrame
from .events import Confirmed, ContentReceived, FlowChanged

__all__ = ["Channel", "ChannelState", "PeerError", "hard"]


class ChannelState(enum.Enum):
    """Where a channel is (0-9-1 spec, class ``channel``: ``open``/``open-ok``,
    ``close``/``close-ok``)."""

    #: ``channel.open`` sent (client) or received and not answered yet (server).
    OPENING = "opening"
    OPEN = "open"
    #: ``channel.close`` sent: everything but ``close`` and ``close-ok`` is discarded
    #: (0-9-1 spec, ``channel.close``).
    CLOSING = "closing"
    CLOSED = "closed"


class PeerError(Exception):
    """The peer broke the protocol: the connection answers with ``connection.close`` (a
    hard error, ``hard``) or ``channel.close`` (a soft one) carrying ``reply_code`` and
    ``text``, and the class and method ids of the method that caused it."""

    def __init__(
        self, reply_code: int, text: str, *, hard: bool, class_id: int = 0, method_id: int = 0
    ) -> None:
        super().__init__(text)
        self.reply_code = int(reply_code)
        self.text = text
        self.hard = hard
        self.class_id = class_id
        self.method_id = method_id


def hard(code: int, text: str, method: Method | type[Method] | None = None) -> PeerError:
    """A hard error (``connection.close``) about ``method`` (its class and method ids)."""
    if method is None:
        return PeerError(code, text, hard=True)
    return PeerError(code, text, hard=True, class_id=method.CLASS_ID, method_id=method.METHOD_ID)


def _unexpected(text: str) -> PeerError:
    return PeerError(ReplyCode.UNEXPECTED_FRAME, text, hard=True)


class Channel:
    """A channel's state. Read-only for the application: ``number``, ``state``,
    ``confirm_mode`` (``confirm.select-ok`` received, client; ``confirm.select`` received,
    server), ``next_publish_seq`` (the sequence number the next publish gets in confirm
    mode, counting from 1 on both sides), ``unconfirmed`` (client: the publishes not yet
    acked or nacked), ``flow_active`` (false after the peer's ``channel.flow`` stopped
    us), ``peer_flow_active`` (false after our ``channel.flow`` stopped the peer) and
    ``tx_mode`` (``tx.select`` sent or received); ``max_body``, the largest content
    body it accepts (:class:`~amqp_sansio.amqp091.Limits`); ``server``, the channel of a
    server (a larger body is refused as RabbitMQ refuses it, see :meth:`header`)."""

    def __init__(
        self, number: int, state: ChannelState, max_body: int, *, server: bool = False
    ) -> None:
        self.number = number
        self.server = server
        self.state = state
        self.confirm_mode = False
        self.next_publish_seq = 0
        self.unconfirmed: set[int] = set()
        self.flow_active = True
        self.peer_flow_active = True
        self.tx_mode = False
        self.max_body = max_body
        # content being assembled: the method, then (after its header) the properties,
        # the announced size and the pieces received
        self._method: Method | None = None
        self._properties: Properties | None = None
        self._size = 0
        self._received = 0
        self._pieces: list[bytes] = []
        # the close that began the close handshake (ours), for ChannelClosed
        self.close_reason: tuple[int, str, int, int] = (0, "", 0, 0)

    def __repr__(self) -> str:
        return f"<Channel {self.number} {self.state.value}>"

    def _reset(self) -> None:
        self._method = self._properties = None
        self._pieces = []
        self._size = self._received = 0

    def content_method(self, method: Method) -> None:
        """A content-carrying method arrived: its header is expected next."""
        self._method = method

    @property
    def idle(self) -> bool:
        """No content is being assembled on the channel."""
        return self._method is None

    def check_no_content(self, what: str) -> None:
        """A method frame arrived: raise 505 if content is being assembled (0-9-1 spec
        4.2.6.2: the content's frames come without any other frame of the channel)."""
        if self._method is not None:
            raise _unexpected(
                f"{what} on channel {self.number} in the middle of {self._method.NAME}'s content"
            )

    def header(self, frame: ContentHeaderFrame) -> ContentReceived | None:
        """A content header frame: 505 without a content method before it, or after its
        header already. A body over the limit closes the channel (soft), from its header
        on, before the body is held: a client's with 311 CONTENT_TOO_LARGE (0-9-1 spec
        ``reply-code``), a server's with RabbitMQ's answer, 406 PRECONDITION_FAILED
        "message size N is larger than configured max size M" (what its clients know).
        (Class ``basic`` is the only class with content: the frame parser refuses a header
        of another with 540.) Gives the content when its body is empty."""
        method = self._method
        if method is None or self._properties is not None:
            raise _unexpected(f"content header on channel {self.number} without a method")
        size, limit = frame.body_size, self.max_body
        if limit and size > limit:
            self._reset()
            if self.server:
                code = ReplyCode.PRECONDITION_FAILED
                text = (
                    f"PRECONDITION_FAILED - message size {size} is larger than configured "
                    f"max size {limit}"
                )
            else:
                code = ReplyCode.CONTENT_TOO_LARGE
                text = f"content of {size} octets is over the limit of {limit}"
            raise PeerError(
                code, text, hard=False, class_id=method.CLASS_ID, method_id=method.METHOD_ID
            )
        self._properties = frame.properties
        self._size = frame.body_size
        return self._complete() if not frame.body_size else None

    def body(self, payload: bytes) -> ContentReceived | None:
        """A content body frame: 505 without a header before it, 501 when the body gets
        longer than the header announced. Gives the content at its last octet."""
        if self._properties is None:
            raise _unexpected(f"content body on channel {self.number} without a header")
        self._received += len(payload)
        if self._received > self._size:
            raise PeerError(
                ReplyCode.FRAME_ERROR,
                f"content body of {self._received} octets or more on channel {self.number}, "
                f"the header announced {self._size}",
                hard=True,
            )
        self._pieces.append(payload)
        return self._complete() if self._received == self._size else None

    def _complete(self) -> ContentReceived:
        assert self._method is not None and self._properties is not None
        pieces = self._pieces
        body = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        event = ContentReceived(
            channel=self.number, method=self._method, properties=self._properties, body=body
        )
        self._reset()
        return event

    def discard_content(self) -> None:
        """Drop a partly assembled content (the channel is closing)."""
        self._reset()

    # -- what the peer's channel methods change ------------------------------------------

    def flow(self, active: bool) -> FlowChanged:
        """The peer's ``channel.flow`` (0-9-1 spec, class ``channel``, method ``flow``):
        ``active`` false asks us to send no content until it is true again."""
        self.flow_active = active
        return FlowChanged(channel=self.number, active=active)

    def select(self, method: Method, *, server: bool) -> None:
        """``confirm.select`` received (server: confirm mode from now on, publishes counted
        from 1), ``confirm.select-ok`` received (client: confirm mode) or ``tx.select``
        received (server: tx mode). RabbitMQ refuses to mix the two modes on a channel
        with 406 ``precondition-failed``, soft."""
        if isinstance(method, spec.ConfirmSelectOk):
            self.confirm_mode = not server
            return
        if not server:
            return
        if isinstance(method, spec.ConfirmSelect):
            clash, mode = self.tx_mode, "tx to confirm"
        else:
            clash, mode = self.confirm_mode, "confirm to tx"
        if clash:
            raise PeerError(
                ReplyCode.PRECONDITION_FAILED,
                f"cannot switch from {mode} mode",
                hard=False,
                class_id=method.CLASS_ID,
                method_id=method.METHOD_ID,
            )
        if isinstance(method, spec.ConfirmSelect):
            self.confirm_mode = True
            self.next_publish_seq = self.next_publish_seq or 1
        else:
            self.tx_mode = True

    def confirmation(self, method: spec.BasicAck | spec.BasicNack) -> Confirmed:
        """Client role in confirm mode: the server's ``basic.ack`` or ``basic.nack``
        (RabbitMQ's publisher confirms) settles ``delivery-tag``, and with ``multiple``
        every earlier publish (tag 0 with ``multiple``: all). A tag that names no
        unconfirmed publish is 406 ``precondition-failed``, soft (RabbitMQ's answer to an
        unknown delivery tag)."""
        tag, multiple = method.delivery_tag, method.multiple
        if multiple:
            done = {s for s in self.unconfirmed if s <= tag} if tag else set(self.unconfirmed)
            known = tag < self.next_publish_seq
        else:
            done = {tag}
            known = tag in self.unconfirmed
        if not known:
            raise PeerError(
                ReplyCode.PRECONDITION_FAILED,
                f"unknown delivery tag {tag} in {method.NAME}",
                hard=False,
                class_id=method.CLASS_ID,
                method_id=method.METHOD_ID,
            )
        self.unconfirmed -= done
        return Confirmed(
            channel=self.number,
            delivery_tag=tag,
            multiple=multiple,
            ack=isinstance(method, spec.BasicAck),
        )
