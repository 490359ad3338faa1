"""AMQP 0-10 frames, segments and assemblies as values (0-10 spec 4.4 Framing), and the
rule of which segment may follow which.

An assembly (a control or a command) is one or more segments; a segment is one or more
frames. Each frame starts with a 12-octet header:

* octet 0: version (2 bits, 0), reserved (2 bits, 0), first-segment, last-segment,
  first-frame, last-frame (the low four bits, in that order);
* octet 1: the segment type (0 control, 1 command, 2 header, 3 body);
* octets 2-3: the size of the whole frame, header included;
* octet 4: reserved (0); octet 5: reserved (4 bits, 0) and the track (4 bits);
* octets 6-7: the channel; octets 8-11: reserved (0).
"""

from __future__ import annotations

import enum
import struct

import attrs

__all__ = [
    "DEFAULT_MAX_ASSEMBLY_SIZE",
    "DEFAULT_MAX_FRAME_SIZE",
    "FIRST_FRAME",
    "FIRST_SEGMENT",
    "HEADER_SIZE",
    "LAST_FRAME",
    "LAST_SEGMENT",
    "MAX_FRAME_SIZE",
    "MIN_MAX_FRAME_SIZE",
    "NEXT_SEGMENT",
    "PROTOCOL_HEADER",
    "Assembly",
    "Segment",
    "SegmentType",
    "Track",
]

#: The 0-10 protocol header: ``AMQP``, protocol class 1, instance 1, version 0-10.
PROTOCOL_HEADER = b"AMQP\x01\x01\x00\x0a"
#: The frame header's size; a frame's size counts it.
HEADER_SIZE = 12
#: The largest frame the 16-bit size can say.
MAX_FRAME_SIZE = 0xFFFF
#: The smallest max-frame-size a peer may negotiate, and what both accept before tuning
#: (the spec's ``MIN-MAX-FRAME-SIZE``).
MIN_MAX_FRAME_SIZE = 4096
#: The parser's max-frame-size until the engine sets the negotiated one: the largest
#: frame the format allows (a parser never holds more than one frame's bytes plus a read).
DEFAULT_MAX_FRAME_SIZE = MAX_FRAME_SIZE
#: The most payload octets one assembly may hold (all its segments): 128 MiB, the
#: project's largest-message default (0-9-1's ``Limits(max_body=)``).
DEFAULT_MAX_ASSEMBLY_SIZE = 128 * 1024 * 1024

#: The flag bits of the header's first octet.
FIRST_SEGMENT = 0x08
LAST_SEGMENT = 0x04
FIRST_FRAME = 0x02
LAST_FRAME = 0x01

#: The header, unpacked: flags, segment type, size, reserved octet, track octet, channel,
#: four reserved octets.
HEADER = struct.Struct(">BBHBBHI")


class SegmentType(enum.IntEnum):
    """The segment types (0-10 spec 4.4 Framing; the ``segment-type`` domain)."""

    CONTROL = 0
    COMMAND = 1
    HEADER = 2
    BODY = 3


class Track(enum.IntEnum):
    """The tracks (the ``track`` domain): controls go on 0, commands on 1."""

    CONTROL = 0
    COMMAND = 1


#: Which segment types may follow which within an assembly, by (track, the previous
#: segment's type, or None for the first): a control assembly is one control segment; a
#: command assembly a command segment, then at most one header segment, then at most one
#: body segment. A (track, type) that is not a key here must end its assembly.
NEXT_SEGMENT: dict[tuple[int, int | None], frozenset[int]] = {
    (Track.CONTROL, None): frozenset({SegmentType.CONTROL}),
    (Track.COMMAND, None): frozenset({SegmentType.COMMAND}),
    (Track.COMMAND, SegmentType.COMMAND): frozenset({SegmentType.HEADER, SegmentType.BODY}),
    (Track.COMMAND, SegmentType.HEADER): frozenset({SegmentType.BODY}),
}


@attrs.frozen(kw_only=False)
class Segment:
    """One segment: its type and its payload (the frames' payloads joined)."""

    type: SegmentType
    payload: bytes


@attrs.frozen(kw_only=False)
class Assembly:
    """One assembly as it arrived on ``channel`` and ``track``: its segments in order."""

    channel: int
    track: int
    segments: tuple[Segment, ...]
