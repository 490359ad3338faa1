"""AMQP 0-10 framing (0-10 spec 4.4 Framing) and the protocol header: frames, segments and
assemblies, I/O-free.

:class:`AssemblyParser` takes bytes in any chunking and gives :class:`Assembly` values;
:func:`encode_assembly` writes one assembly's frames. 0-10 has no heartbeat frame (its
heartbeat is the ``connection.heartbeat`` control), and an empty segment is legal.
"""

from __future__ import annotations

from .assembly import (
    DEFAULT_MAX_ASSEMBLY_SIZE,
    DEFAULT_MAX_FRAME_SIZE,
    FIRST_FRAME,
    FIRST_SEGMENT,
    HEADER_SIZE,
    LAST_FRAME,
    LAST_SEGMENT,
    MAX_FRAME_SIZE,
    MIN_MAX_FRAME_SIZE,
    PROTOCOL_HEADER,
    Assembly,
    Segment,
    SegmentType,
    Track,
)
from .errors import FramingError
from .parser import AssemblyParser
from .writer import encode_assembly

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
    "PROTOCOL_HEADER",
    "Assembly",
    "AssemblyParser",
    "FramingError",
    "Segment",
    "SegmentType",
    "Track",
    "encode_assembly",
]
