"""The AMQP 0-10 assembly parser (0-10 spec 4.4 Framing): bytes in any chunking in,
complete assemblies out.

Bytes are kept in one ``bytearray`` and read in place through a ``memoryview``; a frame's
header is checked (version, reserved bits, size, segment type, track) as soon as its 12
octets are in, before its body is waited for. Frames of different channels (and tracks)
may interleave; each (channel, track) reassembles its own segments and assembly.
"""

from __future__ import annotations

from ...errors import LocalProtocolError
from .assembly import (
    DEFAULT_MAX_ASSEMBLY_SIZE,
    DEFAULT_MAX_FRAME_SIZE,
    FIRST_FRAME,
    FIRST_SEGMENT,
    HEADER,
    HEADER_SIZE,
    LAST_FRAME,
    LAST_SEGMENT,
    MAX_FRAME_SIZE,
    MIN_MAX_FRAME_SIZE,
    NEXT_SEGMENT,
    Assembly,
    Segment,
    SegmentType,
)
from .errors import FramingError

__all__ = ["AssemblyParser"]

_TYPES = tuple(SegmentType)
_SEGMENT_FLAGS = FIRST_SEGMENT | LAST_SEGMENT


class _Open:
    """An assembly under way on one (channel, track)."""

    __slots__ = ("chunks", "flags", "in_segment", "segments", "size", "type")

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.chunks: list[bytes] = []
        self.type = SegmentType.CONTROL
        self.flags = 0
        self.in_segment = False
        self.size = 0


class AssemblyParser:
    """Parses 0-10 frames and gives the assemblies they complete (0-10 spec 4.4).

    ``max_frame_size`` bounds every frame, header included (settable once
    ``connection.tune`` has agreed one: :attr:`max_frame_size` or
    :meth:`set_max_frame_size`); ``max_assembly_size`` bounds the payload octets of one
    assembly. Any breach of the frame format raises
    :class:`~amqp_sansio.framing.amqp010.FramingError` (close-code 501); after one, every
    call raises it again.
    """

    def __init__(
        self,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        max_assembly_size: int = DEFAULT_MAX_ASSEMBLY_SIZE,
    ) -> None:
        if max_assembly_size < 0:
            raise LocalProtocolError(f"max_assembly_size {max_assembly_size} is negative")
        self.max_frame_size = max_frame_size
        self.max_assembly_size = max_assembly_size
        self._buffer = bytearray()
        self._open: dict[tuple[int, int], _Open] = {}
        self._error: FramingError | None = None
        #: The stream offset of the buffer's first octet (errors say where in the stream).
        self._consumed = 0

    @property
    def max_frame_size(self) -> int:
        """The largest frame accepted, header included."""
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        if not MIN_MAX_FRAME_SIZE <= value <= MAX_FRAME_SIZE:
            raise LocalProtocolError(
                f"max_frame_size {value} is outside {MIN_MAX_FRAME_SIZE}..{MAX_FRAME_SIZE}"
            )
        self._max_frame_size = value

    def set_max_frame_size(self, value: int) -> None:
        """Set :attr:`max_frame_size` (the value ``connection.tune-ok`` agreed)."""
        self.max_frame_size = value

    def feed(self, data: bytes) -> list[Assembly]:
        """Take ``data`` (any chunk of the stream) and return the assemblies it completes,
        in the order their last frames arrived. Raises
        :class:`~amqp_sansio.framing.amqp010.FramingError` at the first bad frame, with the
        assemblies completed before it in its ``assemblies``."""
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        if buffer:
            buffer += data
            source: bytes | bytearray = buffer
        else:
            source = data
        view = memoryview(source)
        end = len(view)
        pos = 0
        out: list[Assembly] = []
        try:
            while end - pos >= HEADER_SIZE:
                flags, stype, size, reserved, track, channel, reserved4 = HEADER.unpack_from(
                    view, pos
                )
                if flags & 0xC0:
                    raise FramingError(
                        f"frame version {flags >> 6} is not 0", offset=self._consumed + pos
                    )
                if flags & 0x30 or reserved or track & 0xF0 or reserved4:
                    raise FramingError(
                        "a reserved bit of the frame header is set", offset=self._consumed + pos
                    )
                if not HEADER_SIZE <= size <= self._max_frame_size:
                    raise FramingError(
                        f"frame size {size} is outside {HEADER_SIZE}..{self._max_frame_size}",
                        offset=self._consumed + pos,
                    )
                if stype >= len(_TYPES):
                    raise FramingError(f"unknown segment type {stype}", offset=self._consumed + pos)
                if track > 1:
                    raise FramingError(f"unknown track {track}", offset=self._consumed + pos)
                if end - pos < size:
                    break
                self._frame(out, flags, _TYPES[stype], track, channel, view, pos, size)
                pos += size
        except FramingError as exc:
            exc.assemblies = tuple(out)
            self._error = exc
            raise
        finally:
            rest = view[pos:].tobytes() if source is data else b""
            view.release()
            self._consumed += pos
            if source is data:
                self._buffer = bytearray(rest)
            else:
                del buffer[:pos]
        return out

    def _frame(
        self,
        out: list[Assembly],
        flags: int,
        stype: SegmentType,
        track: int,
        channel: int,
        view: memoryview,
        pos: int,
        size: int,
    ) -> None:
        """One frame, its header checked: continue or start a segment, finish it and its
        assembly on the last-frame and last-segment flags."""
        key = (channel, track)
        current = self._open.get(key)
        if current is None or not current.in_segment:
            if not flags & FIRST_FRAME:
                raise FramingError(
                    "a frame without first-frame starts a segment", offset=self._consumed + pos
                )
            if bool(flags & FIRST_SEGMENT) != (current is None):
                raise FramingError(
                    "first-segment flag "
                    + ("missing on an assembly's first" if current is None else "on a later")
                    + " segment",
                    offset=self._consumed + pos,
                )
            previous = None if current is None else current.type
            if stype not in NEXT_SEGMENT[track, previous]:
                raise FramingError(
                    f"a {stype.name.lower()} segment cannot follow "
                    + ("nothing" if previous is None else f"a {previous.name.lower()} segment")
                    + f" on track {track}",
                    offset=self._consumed + pos,
                )
            if not flags & LAST_SEGMENT and (track, stype) not in NEXT_SEGMENT:
                raise FramingError(
                    f"a {stype.name.lower()} segment without last-segment",
                    offset=self._consumed + pos,
                )
            if current is None:
                current = self._open[key] = _Open()
            current.type = stype
            current.flags = flags & _SEGMENT_FLAGS
            current.in_segment = True
        elif flags & FIRST_FRAME:
            raise FramingError("first-frame flag inside a segment", offset=self._consumed + pos)
        elif stype is not current.type or flags & _SEGMENT_FLAGS != current.flags:
            raise FramingError(
                "a frame changes its segment's type or flags", offset=self._consumed + pos
            )
        length = size - HEADER_SIZE
        current.size += length
        if current.size > self.max_assembly_size:
            raise FramingError(
                f"assembly over max-assembly-size {self.max_assembly_size}",
                offset=self._consumed + pos,
            )
        chunk = view[pos + HEADER_SIZE : pos + size].tobytes()
        if not flags & LAST_FRAME:
            current.chunks.append(chunk)
            return
        if current.chunks:
            current.chunks.append(chunk)
            chunk = b"".join(current.chunks)
            current.chunks.clear()
        current.segments.append(Segment(stype, chunk))
        current.in_segment = False
        if flags & LAST_SEGMENT:
            del self._open[key]
            out.append(Assembly(channel, track, tuple(current.segments)))
