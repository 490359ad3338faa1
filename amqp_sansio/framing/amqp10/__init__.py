"""Protocol headers (core spec 2.2) and frames (2.3), parsed incrementally.

:class:`FrameParser` takes bytes in any chunking (byte by byte too) and hands out protocol
headers and frames as soon as they are whole. It checks a frame's size against the maximum
from the first four bytes, before buffering its body, and compacts its buffer only when the
consumed part is at least half of it, so the copying stays linear in the input.

``bytes`` fed while nothing is left unparsed are not copied at all: the parser reads them in
place (they cannot change), and the payload of a large frame is a read-only ``memoryview`` of
them. A large transfer cut short, whose payload goes on in the next ``bytes`` (more than
4 KiB), keeps its payload as the pieces it came in: views of those ``bytes``, and copies of
the small pieces or of mutable buffers. Otherwise only what is left of the earlier bytes (a
frame cut short) is copied, and of the next ``bytes``, only what completes that frame: the
rest of them is read in place too. So a stream cut anywhere (as a socket cuts it) is copied
at most once per frame cut short, never whole, and a large transfer's payload not at all.
"""

from __future__ import annotations

import enum
import struct
from typing import Any, Literal

import attrs

from ...codec.amqp10 import decoder, encoder
from ...definitions.amqp10.performatives import Performative, SaslFrameBody, Transfer
from ...errors import DecodeError, EncodeError, FramingError, UnsupportedProtocolError
from ..headers import AMQP_HEADER, SASL_HEADER, TLS_HEADER
from ..headers import name_of as _name_of

#: A frame's payload as :meth:`FrameParser._next` hands it to the engine: one piece, or the
#: pieces a transfer's payload cut across feeds came in.
FramePayload = bytes | memoryview | list[bytes | memoryview]

__all__ = [
    "AMQP_HEADER",
    "HEARTBEAT",
    "MIN_MAX_FRAME_SIZE",
    "SASL_HEADER",
    "TLS_HEADER",
    "Frame",
    "FrameParser",
    "FrameType",
    "ProtocolHeader",
    "ProtocolId",
    "encode_frame",
]

#: The smallest max-frame-size a peer may set, and the limit before open (core spec 2.4.1).
MIN_MAX_FRAME_SIZE = 512

_unpack_size_doff_type_ch = struct.Struct(">IBBH").unpack_from
_pack_frame_header = struct.Struct(">IBBH").pack


class ProtocolId(enum.IntEnum):
    """The protocol id byte of an AMQP 1.0 protocol header (core spec 2.2, 5.1)."""

    AMQP = 0
    TLS = 2
    SASL = 3


class FrameType(enum.IntEnum):
    """Frame type codes (core spec 2.3.1, 5.3.1)."""

    AMQP = 0x00
    SASL = 0x01


_FRAME_TYPES = (FrameType.AMQP, FrameType.SASL)
#: Frame bodies up to _SMALL bytes are copied whole; of a larger one, the first _HEAD bytes
#: are copied to decode its performative from, and its payload separately. A transfer's
#: payload cut across feeds is kept as views of the pieces of more than _SMALL bytes.
_SMALL = 4096
_HEAD = 256  # by code: cheaper than calling the enum


@attrs.frozen
class ProtocolHeader:
    """An AMQP 1.0 protocol header: ``AMQP``, a protocol id, and version 1.0.0 (core spec
    2.2)."""

    protocol_id: ProtocolId

    def to_bytes(self) -> bytes:
        return b"AMQP" + bytes((int(self.protocol_id), 1, 0, 0))

    @classmethod
    def parse(cls, data: bytes | bytearray | memoryview) -> ProtocolHeader:
        """Read 8 header bytes. Anything but AMQP 1.0.0 with id 0, 2 or 3 raises
        :class:`~amqp_sansio.errors.UnsupportedProtocolError` naming what the peer tried."""
        raw = bytes(data)
        if len(raw) != 8:
            raise ValueError("a protocol header is exactly 8 bytes")
        if raw[:4] == b"AMQP" and raw[5:] == b"\x01\x00\x00" and raw[4] in (0, 2, 3):
            return cls(ProtocolId(raw[4]))
        name = _name_of(raw)
        raise UnsupportedProtocolError(
            f"the peer sent the protocol header {raw!r} ({name}); we speak AMQP 1.0.0",
            header=raw,
            version_name=name,
        )


def _immutable(view: memoryview) -> bool:
    """Whether a view is of plain bytes, byte for byte: its contents cannot change, so the
    parser may read it in place and hand out views of it, as it does with ``bytes``."""
    return type(view.obj) is bytes and view.ndim == 1 and view.c_contiguous and view.format == "B"


#: An empty AMQP frame on channel 0: the heartbeat of core spec 2.4.5.
HEARTBEAT = b"\x00\x00\x00\x08\x02\x00\x00\x00"


@attrs.frozen
class Frame:
    """One frame (core spec 2.3). ``body`` is the decoded performative (or SASL body), or
    ``None`` for an empty frame (a heartbeat); ``payload`` is what follows the performative
    (a transfer's message bytes): ``bytes``, or, for a frame of more than 4 KiB parsed from
    ``bytes`` the parser was fed, a read-only ``memoryview`` of those bytes (no copy)."""

    type: FrameType
    channel: int
    body: Performative | SaslFrameBody | None
    payload: bytes | memoryview = b""

    @property
    def is_heartbeat(self) -> bool:
        return self.body is None


def encode_frame(
    body: Performative | SaslFrameBody | None,
    *,
    channel: int = 0,
    payload: bytes | bytearray | memoryview = b"",
    frame_type: FrameType = FrameType.AMQP,
    max_frame_size: int | None = None,
) -> bytes:
    """The bytes of one frame: an 8-byte header (data offset 2), the encoded body, the
    payload. ``body=None`` makes an empty frame. Raises :class:`~amqp_sansio.EncodeError`
    when the frame would exceed ``max_frame_size``."""
    out = bytearray(8)
    if body is not None:
        encoder.encode_into(body, out)
    out += payload
    size = len(out)
    if max_frame_size is not None and size > max_frame_size:
        raise EncodeError(f"frame of {size} bytes exceeds max-frame-size {max_frame_size}")
    if not 0 <= channel <= 0xFFFF:
        raise EncodeError(f"channel {channel} is out of range")
    out[0:8] = _pack_frame_header(size, 2, int(frame_type), channel)
    return bytes(out)


def _check_sasl_body(body: Any, payload: FramePayload) -> None:
    """A SASL frame holds a SASL body, and nothing after it."""
    if not isinstance(body, SaslFrameBody):
        raise DecodeError(f"a SASL frame holds a SASL body, not {body!r:.60}")
    if payload:
        raise DecodeError("SASL frame has trailing bytes")


class FrameParser:
    """Incremental parser for the byte stream of one connection.

    Feed bytes with :meth:`feed`; take a protocol header with :meth:`next_protocol_header`
    and frames with :meth:`next_frame` (each returns ``None`` until enough bytes are there).
    :attr:`max_frame_size` may be raised once the peer's open is known; until then it is the
    spec's 512. ``max_depth`` bounds nesting inside performatives.
    """

    def __init__(
        self,
        *,
        max_frame_size: int = MIN_MAX_FRAME_SIZE,
        max_depth: int = decoder.DEFAULT_MAX_DEPTH,
    ) -> None:
        #: What is being parsed: our own buffer, or the caller's bytes (or our view of the
        #: caller's view of bytes, see :func:`_immutable`), read in place.
        self._buf: bytes | bytearray | memoryview = bytearray()
        self._pos = 0
        self._base = 0  # stream offset of self._buf[0], for error offsets
        #: Bytes fed while a frame cut short waits in our buffer, read from _rest_at: what
        #: completes that frame is copied to it (_pull), the rest is then read in place.
        self._rest: bytes | memoryview | None = None
        self._rest_at = 0
        #: A transfer cut short whose payload is being gathered (:meth:`_gather`): its frame
        #: type, channel and performative, the bytes of its header and performative, the
        #: pieces of its payload so far, and how many payload bytes are still to come.
        self._cut: tuple[FrameType, int, Any] | None = None
        self._cut_head = b""
        self._parts: list[bytes | bytearray | memoryview] = []
        self._need = 0
        self.max_frame_size = max_frame_size
        self.max_depth = max_depth

    @property
    def buffered(self) -> int:
        """How many bytes are held but not yet parsed."""
        held = len(self._buf) - self._pos
        if self._cut is not None:
            held += len(self._cut_head) + sum(map(len, self._parts))
        return held if self._rest is None else held + len(self._rest) - self._rest_at

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Append bytes received from the peer. ``bytes`` (or a view of ``bytes``) fed when
        all before them is parsed are read in place, not copied; a large frame's payload is
        then a view of them (they are immutable, so the view stays valid). ``bytes`` of more
        than 4 KiB fed behind a frame cut short are read in place as well, once that frame
        is whole; where only the frame's payload is missing, that payload is a view of them
        too (as when a frame's header and its payload are fed one after the other), and a
        large transfer's payload cut short keeps the views of them it is made of."""
        if type(data) is memoryview and _immutable(data):
            data = memoryview(data)  # our own view: the caller may release theirs
            immutable = True
        else:
            immutable = type(data) is bytes
        buf, pos = self._buf, self._pos
        if self._rest is not None:
            self._absorb_rest()  # fed twice without parsing between: keep the order
            buf, pos = self._buf, self._pos
        elif pos == len(buf) and immutable:
            self._base += pos
            self._buf = data
            self._pos = 0
            return
        if immutable and len(data) > _SMALL:
            # What is left of our buffer (a frame cut short) stays where it is: the frame is
            # completed from these bytes, or its payload gathered from both (_next).
            self._rest = data  # type: ignore[assignment]
            self._rest_at = 0
            return
        if type(buf) is not bytearray:
            self._own()
            buf, pos = self._buf, 0
        assert type(buf) is bytearray
        if pos and pos * 2 >= len(buf):
            del buf[:pos]
            self._base += pos
            self._pos = 0
        buf += data

    def _own(self) -> None:
        """What is left of the caller's bytes (a frame cut short) moves to our own buffer."""
        buf = self._buf
        if type(buf) is not bytearray:
            pos = self._pos
            self._base += pos
            self._buf = bytearray(memoryview(buf)[pos:])
            self._pos = 0

    def _absorb_rest(self) -> None:
        """Append what is left of :attr:`_rest` to our buffer (a copy)."""
        rest = self._rest
        assert rest is not None
        self._own()
        self._rest = None
        with memoryview(rest) as view:
            self._buf += view[self._rest_at :]  # type: ignore[operator]

    def _pull(self) -> None:
        """Our buffer holds a frame cut short and :attr:`_rest` waits behind it: copy from
        the rest just what completes that frame (its 8-byte header first, then its size, both
        checked by :meth:`_next` before its body is asked for), or, once our buffer is all
        parsed, read what is left of the rest in place. Of a large frame, only the head of its
        body is copied at first, to decode its performative from: a transfer's payload is
        then gathered from the rest in place (:meth:`_split`)."""
        rest = self._rest
        assert rest is not None
        buf, pos, at = self._buf, self._pos, self._rest_at
        have = len(buf) - pos
        if not have:
            self._base += len(buf) - at
            self._buf = rest
            self._pos = at
            self._rest = None
            return
        self._own()
        buf, pos = self._buf, self._pos
        assert type(buf) is bytearray
        if have < 8:
            need = 8 - have
        else:
            need = int.from_bytes(buf[pos : pos + 4], "big") - have
            head = buf[pos + 4] * 4 + _HEAD - have  # what completes the head of the body
            if head > 0 and need > _SMALL + _HEAD:
                need = head
        stop = at + need
        with memoryview(rest) as view:
            buf += view[at:stop]
        if stop >= len(rest):
            self._rest = None
        else:
            self._rest_at = stop

    def take_remaining(self) -> bytes:
        """Hand over the unparsed bytes (for the next layer, e.g. after the TLS header)."""
        rest = bytes(self._buf[self._pos :])
        if self._cut is not None:
            rest = b"".join((self._cut_head, *self._parts, rest))
            self._cut = None
            self._parts = []
        if self._rest is not None:
            rest += self._rest[self._rest_at :]
            self._rest = None
        self._base += len(self._buf)
        self._buf = bytearray()
        self._pos = 0
        return rest

    def next_protocol_header(self) -> ProtocolHeader | None:
        """The next 8 bytes as a protocol header, or None if fewer are buffered. Raises
        :class:`~amqp_sansio.errors.UnsupportedProtocolError` for any other protocol or version (as
        soon as the bytes seen already rule out AMQP 1.0)."""
        if self._rest is not None and len(self._buf) - self._pos < 8:
            self._absorb_rest()  # a header cut short (rare): no need to spare a copy
        buf, pos = self._buf, self._pos
        have = len(buf) - pos
        if have < 8:
            seen = bytes(buf[pos : pos + min(have, 4)])
            if have and not AMQP_HEADER.startswith(seen):
                # Not even "AMQP": no need to wait for eight bytes to know.
                name = _name_of(seen.ljust(8, b"\x00"))
                raise UnsupportedProtocolError(
                    f"the peer sent {seen!r} ({name}); we speak AMQP 1.0.0",
                    header=seen,
                    version_name=name,
                )
            return None
        header = ProtocolHeader.parse(buf[pos : pos + 8])
        self._pos = pos + 8
        return header

    def _decode_large(self, start: int, stop: int) -> tuple[Any, bytes | memoryview]:
        """A large frame: its performative is decoded from a copy of the first bytes only,
        and the payload (a transfer's message data) is a view of the caller's bytes, or,
        from our own buffer (which changes), copied once, on its own. A performative longer
        than that head fails as truncated there and is decoded again from the whole body."""
        buf = self._buf
        if type(buf) is not bytearray:
            view = memoryview(buf)
            performative, end = self._decode_head(view, start, stop)
            return performative, view[start + end : stop]
        with memoryview(buf) as view:
            performative, end = self._decode_head(view, start, stop)
            return performative, bytes(view[start + end : stop])

    def _decode_head(self, view: memoryview, start: int, stop: int) -> tuple[Any, int]:
        head = bytes(view[start : start + _HEAD])
        try:
            return decoder.DECODERS[head[0]](head, 1, self.max_depth)
        except (*decoder.DECODE_FAILURES, DecodeError):
            head = bytes(view[start:stop])
            try:
                return decoder.DECODERS[head[0]](head, 1, self.max_depth)
            except decoder.DECODE_FAILURES as exc:
                raise decoder.as_decode_error(exc, 0) from None

    def next_frame(self) -> Frame | None:
        """The next whole frame, or None if it is not all here yet.

        Raises :class:`~amqp_sansio.errors.FramingError` for a size below 8 or above
        :attr:`max_frame_size`, a data offset below 2 or beyond the frame, or an unknown frame
        type; :class:`~amqp_sansio.DecodeError` for a body that is not a performative (or
        SASL body) of the frame's type.
        """
        parts = self._next()
        if parts is None:
            return None
        ftype, channel, body, payload = parts
        return Frame(
            ftype, channel, body, b"".join(payload) if isinstance(payload, list) else payload
        )

    def _next(self) -> tuple[FrameType, int, Any, FramePayload] | None:
        """:meth:`next_frame`'s work: the frame's type, channel, body and payload, without
        the :class:`Frame` (the engine takes them apart at once). A transfer's payload cut
        across feeds is the list of its pieces (see :meth:`_gather`)."""
        if self._cut is not None:
            return self._gather()
        buf, pos = self._buf, self._pos
        have = len(buf) - pos
        if have < 8:
            return self._short(have)
        size, doff, ftype, channel = _unpack_size_doff_type_ch(buf, pos)
        if size < 8 or size > self.max_frame_size or doff < 2 or doff * 4 > size or ftype > 1:
            raise self._header_error(size, doff, ftype)
        start = pos + doff * 4
        if have < size:
            return self._incomplete(pos, start, size, ftype, channel)
        stop = pos + size
        self._pos = stop
        if start == stop:
            return _FRAME_TYPES[ftype], channel, None, b""
        payload: bytes | memoryview
        if stop - start <= _SMALL:
            body = bytes(buf[start:stop])
            try:
                performative, end = decoder.DECODERS[body[0]](body, 1, self.max_depth)
            except decoder.DECODE_FAILURES as exc:
                raise decoder.as_decode_error(exc, 0) from None
            payload = body[end:]
        else:
            performative, payload = self._decode_large(start, stop)
        if ftype == 0:
            if not isinstance(performative, Performative):
                raise DecodeError(f"an AMQP frame holds a performative, not {performative!r:.60}")
            if payload and type(performative) is not Transfer:
                raise DecodeError(f"{type(performative).__name__} frame has trailing bytes")
        else:
            _check_sasl_body(performative, payload)
        return _FRAME_TYPES[ftype], channel, performative, payload

    def _short(self, have: int) -> tuple[FrameType, int, Any, FramePayload] | None:
        """:meth:`_next` with less than a frame header (``have`` bytes) in our buffer: the
        frame size checked once there, and the header completed from :attr:`_rest`, if any;
        else, all parsed, the caller's bytes let go."""
        buf, pos = self._buf, self._pos
        if have >= 4:
            size = int.from_bytes(buf[pos : pos + 4], "big")
            if size < 8 or size > self.max_frame_size:
                raise self._header_error(size, 2, 0)
        if self._rest is not None:
            self._pull()
            return self._next()
        if not have and type(buf) is not bytearray:
            # All parsed: let go of the caller's bytes (views handed out keep them).
            self._base += pos
            self._buf = bytearray()
            self._pos = 0
        return None

    def _header_error(self, size: int, doff: int, ftype: int) -> FramingError:
        """What is wrong with the frame header at :attr:`_pos`: its size, its data offset,
        or its type."""
        offset = self._base + self._pos
        if size < 8:
            return FramingError(f"frame size {size} is below the minimum of 8", offset=offset)
        if size > self.max_frame_size:
            return FramingError(
                f"frame size {size} exceeds max-frame-size {self.max_frame_size}", offset=offset
            )
        if doff < 2:
            return FramingError(f"data offset {doff} is below the minimum of 2", offset=offset)
        if doff * 4 > size:
            return FramingError(
                f"data offset {doff * 4} bytes lies beyond the frame", offset=offset
            )
        return FramingError(f"unknown frame type {ftype:#04x}", offset=offset)

    def _incomplete(
        self, pos: int, start: int, size: int, ftype: int, channel: int
    ) -> tuple[FrameType, int, Any, FramePayload] | None:
        """:meth:`_next` with a frame cut short in our buffer: a transfer's payload taken
        as it comes (:meth:`_split`), or the frame completed from :attr:`_rest`, if any."""
        if self._rest is None:
            return None
        split = self._split(pos, start, size, ftype, channel)
        if split is False:
            self._pull()
            return self._next()
        return split

    def _split(
        self, pos: int, start: int, size: int, ftype: int, channel: int
    ) -> tuple[FrameType, int, Any, FramePayload] | Literal[False] | None:
        """A frame of ``size`` bytes at ``pos`` in our buffer, cut short, its body from
        ``start``, and :attr:`_rest` behind it. Where the frame is a transfer whose
        performative is all in our buffer and more than :data:`_SMALL` bytes of it are still
        to come: the frame, its payload a view of the rest, when the payload is all of what
        is to come and all there (a frame whose header and payload are fed apart); else its
        payload is gathered (:meth:`_gather`, which says if it is whole yet). False (nothing
        consumed) where that is not the case: the frame is then completed in our buffer
        (:meth:`_pull`), and whatever is wrong with it reported there."""
        buf, at = self._buf, self._rest_at
        rest = self._rest
        assert rest is not None
        have = len(buf) - pos
        if size - have <= _SMALL or start >= len(buf) or ftype:
            return False
        head = bytes(buf[start : start + _HEAD])
        try:
            performative, end = decoder.DECODERS[head[0]](head, 1, self.max_depth)
        except (*decoder.DECODE_FAILURES, DecodeError):
            if len(buf) - start <= _HEAD:
                return False  # the copying path decodes it again, and reports what is wrong
            head = bytes(buf[start:])
            try:
                performative, end = decoder.DECODERS[head[0]](head, 1, self.max_depth)
            except (*decoder.DECODE_FAILURES, DecodeError):
                return False
        if type(performative) is not Transfer:
            return False
        end += start
        need = size - (end - pos)  # the payload's bytes still to come
        if end == len(buf):
            self._base += len(buf) - at
            self._buf = rest
            self._rest = None
            if len(rest) - at >= need:
                self._pos = at + need
                if at == 0 and need == len(rest) and type(rest) is memoryview:
                    return _FRAME_TYPES[0], channel, performative, rest  # our view, all of it
                return _FRAME_TYPES[0], channel, performative, memoryview(rest)[at : at + need]
            self._pos = at
        else:
            self._pos = end  # the payload begins here: gathered from here, then the rest
        self._cut = (_FRAME_TYPES[0], channel, performative)
        self._cut_head = bytes(buf[pos:end])
        self._need = need
        self._parts = []
        return self._gather()

    def _gather(self) -> tuple[FrameType, int, Any, FramePayload] | None:
        """Take the payload of the transfer cut short (:meth:`_split`) from what is fed, as
        it comes: views of the immutable bytes, where more than :data:`_SMALL` bytes of them
        belong to it (and they make the frame whole, or are at least half of those bytes:
        a piece held while the frame waits pins no more than twice its size), copies of the
        rest. Its frame once it is whole (the payload a list of its pieces), else None."""
        parts = self._parts
        while True:
            buf, pos = self._buf, self._pos
            have = len(buf) - pos
            if not have:
                if self._rest is not None:
                    self._pull()
                    continue
                if type(buf) is not bytearray:
                    # All taken: let go of the caller's bytes (views taken keep them).
                    self._base += pos
                    self._buf = bytearray()
                    self._pos = 0
                return None
            need = self._need
            take = need if have > need else have
            stop = pos + take
            if (
                type(buf) is not bytearray
                and take > _SMALL
                and (take == need or take * 2 >= len(buf))
            ):
                parts.append(memoryview(buf)[pos:stop])
            else:
                with memoryview(buf) as view:
                    if parts and type(parts[-1]) is bytearray:
                        parts[-1] += view[pos:stop]
                    else:
                        parts.append(bytearray(view[pos:stop]))
            self._pos = stop
            if take == need:
                break
            self._need = need - take
        ftype, channel, performative = self._cut  # type: ignore[misc]
        self._cut = None
        self._parts = []
        self._need = 0
        payload: list[bytes | memoryview] = [
            bytes(part) if type(part) is bytearray else part  # type: ignore[misc]
            for part in parts
        ]
        return ftype, channel, performative, payload[0] if len(payload) == 1 else payload
