"""The AMQP 0-10 frame writer (0-10 spec 4.4 Framing): an assembly's segments cut into
frames no larger than max-frame-size, with the first/last flags set."""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import EncodeError
from .assembly import (
    FIRST_FRAME,
    FIRST_SEGMENT,
    HEADER,
    HEADER_SIZE,
    LAST_FRAME,
    LAST_SEGMENT,
    MAX_FRAME_SIZE,
    NEXT_SEGMENT,
    SegmentType,
)

__all__ = ["encode_assembly"]


def encode_assembly(
    channel: int,
    track: int,
    segments: Sequence[tuple[SegmentType | int, bytes]],
    max_frame_size: int,
) -> list[bytes]:
    """The frames of one assembly on ``channel`` and ``track``, in order: each segment
    (its type a :class:`SegmentType` or its number) cut into frames of at most
    ``max_frame_size`` octets, header included (an empty segment is one empty frame). Each
    payload octet is copied once.

    Raises :class:`~amqp_sansio.errors.EncodeError` (the caller's mistake) for a channel
    outside 0..65535, a max_frame_size outside 13..65535, or segments that do not make an
    assembly on that track (a control assembly is one control segment; a command assembly a
    command segment, an optional header segment, an optional body segment)."""
    if not 0 <= channel <= 0xFFFF:
        raise EncodeError(f"channel {channel} is outside 0..65535")
    if not HEADER_SIZE < max_frame_size <= MAX_FRAME_SIZE:
        raise EncodeError(f"max_frame_size {max_frame_size} is outside 13..{MAX_FRAME_SIZE}")
    if not segments:
        raise EncodeError("an assembly has at least one segment")
    previous: SegmentType | int | None = None
    for stype, _ in segments:
        if stype not in NEXT_SEGMENT.get((track, previous), ()):
            raise EncodeError(
                f"segment types {[int(s) for s, _ in segments]} make no assembly on track {track}"
            )
        previous = stype
    step = max_frame_size - HEADER_SIZE
    pack = HEADER.pack
    last = len(segments) - 1
    out: list[bytes] = []
    for index, (stype, payload) in enumerate(segments):
        flags = (FIRST_SEGMENT if index == 0 else 0) | (LAST_SEGMENT if index == last else 0)
        length = len(payload)
        if length <= step:
            frame_flags = flags | FIRST_FRAME | LAST_FRAME
            out.append(
                pack(frame_flags, stype, length + HEADER_SIZE, 0, track, channel, 0) + payload
            )
            continue
        view = memoryview(payload)
        for start in range(0, length, step):
            chunk = view[start : start + step]
            frame_flags = (
                flags
                | (FIRST_FRAME if start == 0 else 0)
                | (LAST_FRAME if start + step >= length else 0)
            )
            out.append(
                pack(frame_flags, stype, len(chunk) + HEADER_SIZE, 0, track, channel, 0) + chunk
            )
    return out
