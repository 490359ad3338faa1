"""Writing frames in the engine: a performative's encoding, a frame header before a payload
that goes out separately, and the output queue handed over as few, large pieces."""

from __future__ import annotations

import struct
from typing import Any

from ...codec.amqp10.encoder import encode_into

#: Fills in a frame header: size, data offset (2 words), type (0, AMQP), channel.
_pack_frame_header = struct.Struct(">IBBH").pack_into


def _frame_head(channel: int, body: Any, payload_size: int) -> bytearray:
    """A frame's header and performative, sized for a payload that goes out separately."""
    out = bytearray(8)
    encode_into(body, out)
    _pack_frame_header(out, 0, len(out) + payload_size, 2, 0, channel)
    return out


def _take(
    out: list[bytes | bytearray | memoryview], max_bytes: int
) -> list[bytes | bytearray | memoryview]:
    """The pieces of up to ``max_bytes`` of what ``out`` queues, taken off its front: a
    piece cut there leaves a view of its rest (the pieces are not changed once queued)."""
    taken = 0
    count = 0
    for piece in out:
        size = len(piece)
        if taken + size > max_bytes:
            break
        taken += size
        count += 1
    else:
        head = out[:]
        out.clear()
        return head
    head = out[:count]
    room = max_bytes - taken
    if room:
        piece = memoryview(out[count])
        head.append(piece[:room])
        out[count] = piece[room:]
    del out[:count]
    return head


#: :meth:`Connection.buffers_to_send` hands over pieces of at least this many bytes as they
#: are; smaller ones next to each other are joined.
_GATHER = 4096


def _gathered(pieces: list[bytes | bytearray | memoryview]) -> list[bytes | memoryview]:
    """``pieces`` with each run of small ones joined, and a large one that is not ``bytes``
    (a view of a message's bytes, or a whole frame the engine has let go of) as a read-only
    view."""
    if not pieces:
        return []
    if max(map(len, pieces)) < _GATHER:
        return [b"".join(pieces)]
    gathered: list[bytes | memoryview] = []
    run: list[bytes | bytearray | memoryview] = []
    for piece in pieces:
        if len(piece) < _GATHER:
            run.append(piece)
            continue
        if run:
            gathered.append(b"".join(run))
            run = []
        gathered.append(piece if type(piece) is bytes else memoryview(piece).toreadonly())
    if run:
        gathered.append(b"".join(run))
    return gathered


def _frame(channel: int, body: Any, payload: bytes | memoryview = b"") -> bytearray:
    out = bytearray(8)
    encode_into(body, out)
    out += payload
    _pack_frame_header(out, 0, len(out), 2, 0, channel)
    return out


def _encode_performative(body: Any) -> bytearray:
    out = bytearray()
    encode_into(body, out)
    return out
