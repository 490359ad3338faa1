"""AMQP 0-9-1 frames (0-9-1 spec 4.2.3 "General frame format" to 4.2.7 "Heartbeat frames")
and the protocol header (4.2.2).

A frame is a type octet, a channel (short), a payload size (long), the payload and the
frame-end octet ``0xCE``. ``frame_max`` (negotiated by ``connection.tune``; 0 means no
limit) bounds the whole frame, header and frame-end included; before tuning, frames are at
most :data:`~amqp_sansio.definitions.amqp091.spec.FRAME_MIN_SIZE` (4096) octets.

:class:`FrameParser` takes bytes in any chunking and gives frames; ``encode_*`` write them.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import NamedTuple

import attrs

from ... import errors
from ...codec.amqp091.errors import EncodeError, FrameError, UnexpectedFrameError
from ...definitions.amqp091.methods import (
    Method,
    Properties,
    decode_content_header,
    decode_method,
    encode_content_header,
)
from ...definitions.amqp091.spec import (
    FRAME_BODY,
    FRAME_END,
    FRAME_HEADER,
    FRAME_HEARTBEAT,
    FRAME_METHOD,
    FRAME_MIN_SIZE,
)

__all__ = [
    "FRAME_OVERHEAD",
    "HEADER_09",
    "HEADERS_08",
    "HEARTBEAT",
    "PROTOCOL_HEADER",
    "SERVED_HEADERS",
    "ContentBodyFrame",
    "ContentHeaderFrame",
    "Frame",
    "FrameParser",
    "HeartbeatFrame",
    "MethodFrame",
    "ProtocolHeader",
    "content_octets",
    "encode_body_frame",
    "encode_content",
    "encode_frame",
    "encode_header_frame",
    "encode_method_frame",
]

#: What a client sends first (0-9-1 spec 4.2.2): ``AMQP``, 0, then version 0-9-1.
PROTOCOL_HEADER = b"AMQP\x00\x00\x09\x01"
#: Octets a frame adds to its payload: the 7-octet header and the frame-end.
FRAME_OVERHEAD = 8
#: A heartbeat frame's octets (0-9-1 spec 4.2.7): type 8, channel 0, no payload.
HEARTBEAT = bytes([FRAME_HEARTBEAT, 0, 0, 0, 0, 0, 0, FRAME_END])

_HEAD = struct.Struct(">BHI")
_unpack_head = _HEAD.unpack_from
_END = bytes([FRAME_END])
#: A frame-end, then the next frame's header.
_END_HEAD = struct.Struct(">BBHI")


@attrs.frozen
class ProtocolHeader:
    """The 8-octet protocol header a server role reads first (0-9-1 spec 4.2.2): 0-9-1's,
    or an earlier one of its line that the server takes (:data:`SERVED_HEADERS`)."""

    major: int = 0
    minor: int = 9
    revision: int = 1


#: The AMQP 0-9 header (AMQP/Fast 0.9 RFC 006: class 1, instance 1, version 0-9).
HEADER_09 = b"AMQP\x01\x01\x00\x09"
#: The AMQP 0-8 headers: the 0-8 spec's, and py-amqplib's for 0-8 (``AMQP 1 1 9 1``).
HEADERS_08 = (b"AMQP\x01\x01\x08\x00", b"AMQP\x01\x01\x09\x01")
#: The headers a server role takes, as RabbitMQ takes them, and the version each is
#: served as: 0-9 as 0-9-1, both 0-8 headers as 0-8 (:mod:`amqp_sansio.framing.amqp091.amqp08`).
SERVED_HEADERS = {
    PROTOCOL_HEADER: ProtocolHeader(),
    HEADER_09: ProtocolHeader(),
    HEADERS_08[0]: ProtocolHeader(major=8, minor=0, revision=0),
    HEADERS_08[1]: ProtocolHeader(major=8, minor=0, revision=0),
}


class MethodFrame(NamedTuple):
    """A method frame (type 1): ``method`` on ``channel`` (0 for the connection class)."""

    channel: int
    method: Method


class ContentHeaderFrame(NamedTuple):
    """A content header frame (type 2, 0-9-1 spec 4.2.6.1): the class of the content, the
    total size of its body and its properties."""

    channel: int
    class_id: int
    body_size: int
    properties: Properties


class ContentBodyFrame(NamedTuple):
    """A content body frame (type 3): a piece of the body."""

    channel: int
    payload: bytes


class HeartbeatFrame(NamedTuple):
    """A heartbeat frame (type 8, channel 0, 0-9-1 spec 4.2.7)."""

    channel: int = 0


# Frames are named tuples: immutable, and made fast (a parser makes one per frame).
Frame = MethodFrame | ContentHeaderFrame | ContentBodyFrame | HeartbeatFrame


def _frame(
    frame_type: int, channel: int, payload: bytes | bytearray | memoryview, frame_max: int
) -> bytes:
    if frame_max and len(payload) + FRAME_OVERHEAD > frame_max:
        raise EncodeError(
            f"frame of {len(payload) + FRAME_OVERHEAD} octets is over frame-max {frame_max}"
        )
    try:
        head = _HEAD.pack(frame_type, channel, len(payload))
    except struct.error as exc:
        raise EncodeError(f"channel {channel} is not a short") from exc
    return b"".join((head, payload, _END))


def encode_method_frame(channel: int, method: Method, frame_max: int = 0) -> bytes:
    """A method frame's octets. Raises :class:`~amqp_sansio.codec.amqp091.errors.EncodeError`
    for a value the method cannot hold or a frame over ``frame_max`` (0: no limit)."""
    return _frame(FRAME_METHOD, channel, method.encode(), frame_max)


def encode_header_frame(
    channel: int, body_size: int, properties: Properties, frame_max: int = 0
) -> bytes:
    """A content header frame's octets (weight 0, the class from ``properties``)."""
    return _frame(FRAME_HEADER, channel, encode_content_header(body_size, properties), frame_max)


def encode_body_frame(
    channel: int, payload: bytes | bytearray | memoryview, frame_max: int = 0
) -> bytes:
    """A content body frame's octets."""
    return _frame(FRAME_BODY, channel, payload, frame_max)  # joined once, not copied first


def encode_content(
    channel: int, method: Method, properties: Properties, body: bytes, frame_max: int
) -> list[bytes]:
    """A content-carrying method, its header and its body cut into frames of at most
    ``frame_max`` octets (0-9-1 spec 4.2.6.2; an empty body has no body frame)."""
    if not method.CONTENT:
        raise EncodeError(f"{method.NAME} carries no content")
    if frame_max and frame_max <= FRAME_OVERHEAD:
        raise EncodeError(f"frame-max {frame_max} leaves no room for a payload")
    frames = [
        encode_method_frame(channel, method, frame_max),
        encode_header_frame(channel, len(body), properties, frame_max),
    ]
    step = frame_max - FRAME_OVERHEAD if frame_max else max(len(body), 1)
    if len(body) <= step:  # (one body frame, or none; the channel passed the packs above)
        if body:
            frames.append(b"".join((_HEAD.pack(FRAME_BODY, channel, len(body)), body, _END)))
        return frames
    view = memoryview(body)
    frames += [
        encode_body_frame(channel, view[at : at + step], frame_max)
        for at in range(0, len(body), step)
    ]
    return frames


def content_octets(
    channel: int, method: Method, properties: Properties, body: bytes, frame_max: int
) -> bytes:
    """:func:`encode_content`'s frames joined, as a sender writes them; a body that fits
    one frame is written in one join, the frames' headers packed with the frame-end
    before them."""
    size = len(body)
    if not size or (frame_max and size + FRAME_OVERHEAD > frame_max) or not method.CONTENT:
        return b"".join(encode_content(channel, method, properties, body, frame_max))
    payload = method.encode()
    header = encode_content_header(size, properties)
    if frame_max and max(len(payload), len(header)) + FRAME_OVERHEAD > frame_max:
        return b"".join(encode_content(channel, method, properties, body, frame_max))  # raises
    try:
        heads = (
            _HEAD.pack(FRAME_METHOD, channel, len(payload)),
            _END_HEAD.pack(FRAME_END, FRAME_HEADER, channel, len(header)),
            _END_HEAD.pack(FRAME_END, FRAME_BODY, channel, size),
        )
    except struct.error as exc:
        raise EncodeError(f"channel {channel} is not a short") from exc
    return b"".join((heads[0], payload, heads[1], header, heads[2], body, _END))


def encode_frame(frame: Frame, frame_max: int = 0) -> bytes:
    """Any frame's octets."""
    if isinstance(frame, MethodFrame):
        return encode_method_frame(frame.channel, frame.method, frame_max)
    if isinstance(frame, ContentHeaderFrame):
        if frame.class_id != frame.properties.CLASS_ID:
            raise EncodeError(
                f"header of class {frame.class_id} with properties of class "
                f"{frame.properties.CLASS_ID}"
            )
        return encode_header_frame(frame.channel, frame.body_size, frame.properties, frame_max)
    if isinstance(frame, ContentBodyFrame):
        return encode_body_frame(frame.channel, frame.payload, frame_max)
    if frame.channel != 0:
        raise EncodeError("a heartbeat frame is on channel 0")
    return HEARTBEAT


class FrameParser:
    """Frames out of a byte stream cut anywhere (0-9-1 spec 4.2.3).

    ``feed()`` the bytes as they come; ``next_frame()`` gives the next whole frame or
    ``None``; iterating gives every whole frame. With ``protocol_header=True`` (a server)
    the stream must begin with the 0-9-1 :data:`PROTOCOL_HEADER`, given back as a
    :class:`ProtocolHeader` first. Without it (a client), a stream beginning ``AMQP`` is
    the server refusing our version (it answers with the header it speaks):
    :class:`~amqp_sansio.errors.UnsupportedProtocolError` with that header.

    A frame's size is checked against ``frame_max`` (settable, for ``connection.tune``)
    as soon as its header is in, before its payload is waited for. Errors are the
    :mod:`amqp_sansio.codec.amqp091.errors`, each with its ``reply_code``; after one the parser
    is broken (the connection must close) and raises it again.
    """

    def __init__(self, frame_max: int = FRAME_MIN_SIZE, *, protocol_header: bool = False) -> None:
        self.frame_max = frame_max
        self._buffer = bytearray()
        self._offset = 0
        self._header_pending = True
        self._expect_header = protocol_header
        self._error: errors.AMQPError | None = None
        #: How a method frame's payload is read (0-8's reader for a 0-8 client).
        self.decode_method: Callable[[bytes], Method] = decode_method

    @property
    def buffered(self) -> int:
        """Octets received and not yet given back as frames."""
        return len(self._buffer) - self._offset

    def feed(self, data: bytes) -> None:
        """Add received bytes."""
        if self._offset:  # drop what was parsed: one move per feed, not per frame
            del self._buffer[: self._offset]
            self._offset = 0
        self._buffer += data

    def __iter__(self) -> Iterator[Frame | ProtocolHeader]:
        while (frame := self.next_frame()) is not None:
            yield frame

    def next_frame(self) -> Frame | ProtocolHeader | None:
        """The next whole frame, or ``None`` until more bytes come."""
        if self._error is not None:
            raise self._error
        try:
            if self._header_pending:
                header = self._read_protocol_header()
                if header is not None or self._header_pending:
                    return header
            buf, at = self._buffer, self._offset
            if len(buf) - at < 7:
                return None
            frame_type, channel, size = _unpack_head(buf, at)
            if self.frame_max and size + FRAME_OVERHEAD > self.frame_max:
                raise FrameError(
                    f"frame of {size + FRAME_OVERHEAD} octets is over frame-max {self.frame_max}",
                    offset=at,
                )
            end = at + 7 + size
            if len(buf) <= end:
                return None
            if buf[end] != FRAME_END:
                raise FrameError(f"frame-end octet {buf[end]:#04x}, not 0xce", offset=end)
            payload = bytes(buf[at + 7 : end])
            if end + 1 == len(buf):
                buf.clear()
                self._offset = 0
            else:
                self._offset = end + 1
            if frame_type == FRAME_METHOD:
                return MethodFrame(channel, self.decode_method(payload))
            return _decode_frame(frame_type, channel, payload, at)
        except errors.AMQPError as exc:
            self._error = exc
            raise

    def take_content(self, channel: int, max_body: int = 0) -> tuple[Properties, bytes] | None:
        """After a content-carrying method of ``channel``: its content header frame and
        its body in one body frame (or none, for an empty body), taken together when both
        are buffered whole and well formed (0-9-1 spec 4.2.6.2), the body at most
        ``max_body`` octets (0: any); else None, and nothing is taken: :meth:`next_frame`
        gives them one at a time, with any error they hold. The frames are checked as
        :meth:`next_frame` checks them (frame-max, frame-end, the header's payload); a
        receiver's fast path, one call for the two frames of most contents."""
        if self._error is not None or self._header_pending:
            return None
        buf, at = self._buffer, self._offset
        have = len(buf)
        if have - at < 7:
            return None
        frame_type, got, size = _unpack_head(buf, at)
        limit = self.frame_max - FRAME_OVERHEAD if self.frame_max else have
        end = at + 7 + size
        if frame_type != FRAME_HEADER or got != channel or size > limit or have <= end:
            return None
        if buf[end] != FRAME_END:
            return None
        try:
            _, body_size, properties = decode_content_header(bytes(buf[at + 7 : end]))
        except errors.AMQPError:
            return None
        if max_body and body_size > max_body:
            return None
        at = end + 1
        body = b""
        if body_size:
            if have - at < 7:
                return None
            frame_type, got, size = _unpack_head(buf, at)
            end = at + 7 + size
            if frame_type != FRAME_BODY or got != channel or size != body_size or size > limit:
                return None
            if have <= end or buf[end] != FRAME_END:
                return None
            body = bytes(buf[at + 7 : end])
            at = end + 1
        if at == have:
            buf.clear()
            self._offset = 0
        else:
            self._offset = at
        return properties, body

    def _read_protocol_header(self) -> ProtocolHeader | None:
        buf, at = self._buffer, self._offset
        have = len(buf) - at
        if not self._expect_header:
            # A client: only a refusal begins with "AMQP" ("A" is no frame type).
            if have and buf[at] != PROTOCOL_HEADER[0]:
                self._header_pending = False
                return None
            if have < 8:
                return None
            raise errors.UnsupportedProtocolError(
                f"the server refused AMQP 0-9-1 and offers {bytes(buf[at : at + 8])!r}",
                header=bytes(buf[at : at + 8]),
                version_name=_version_name(bytes(buf[at : at + 8])),
            )
        got = bytes(buf[at : at + min(have, 8)])
        if not any(header.startswith(got) for header in SERVED_HEADERS):
            raise errors.UnsupportedProtocolError(
                f"expected the AMQP 0-9-1 protocol header, got {got!r}",
                header=got,
                version_name=_version_name(got),
            )
        if have < 8:
            return None
        self._offset += 8
        self._header_pending = False
        return SERVED_HEADERS[got]


def _decode_frame(frame_type: int, channel: int, payload: bytes, at: int) -> Frame:
    """A frame other than a method frame (the parser decodes those itself)."""
    if frame_type == FRAME_BODY:
        if channel == 0:
            raise UnexpectedFrameError("content body frame on channel 0", offset=at)
        return ContentBodyFrame(channel, payload)
    if frame_type == FRAME_HEADER:
        if channel == 0:
            raise UnexpectedFrameError("content header frame on channel 0", offset=at)
        class_id, body_size, properties = decode_content_header(payload)
        return ContentHeaderFrame(channel, class_id, body_size, properties)
    if frame_type == FRAME_HEARTBEAT:
        if channel or payload:
            raise FrameError("heartbeat frame with a channel or a payload", offset=at)
        return HeartbeatFrame()
    raise FrameError(f"unknown frame type {frame_type}", offset=at)


_OTHER_VERSIONS = {
    b"AMQP\x01\x01\x00\x0a": "AMQP 0-10",
    b"AMQP\x01\x01\x00\x09": "AMQP 0-9",
    b"AMQP\x01\x01\x08\x00": "AMQP 0-8",
    b"AMQP\x01\x01\x09\x01": "AMQP 0-9-1 (the pre-standard header)",
}


def _version_name(header: bytes) -> str:
    """A readable name for a protocol header that is not ours."""
    if header in _OTHER_VERSIONS:
        return _OTHER_VERSIONS[header]
    if header[:4] == b"AMQP" and header[5:] == b"\x01\x00\x00":
        return f"AMQP 1.0 (protocol id {header[4]})"
    if header[:4] == b"AMQP" and len(header) == 8:
        return f"AMQP protocol id {header[4]} version {header[5]}.{header[6]}.{header[7]}"
    if header[:4] in (b"GET ", b"POST", b"HEAD", b"PUT ", b"HTTP"):
        return "HTTP"
    return "not AMQP"
