"""The AMQP 1.0 frame parser's target, ``frames``, and its seeds.

A :class:`amqp_sansio.framing.amqp10.FrameParser` (max-frame-size :data:`fuzz.common.FRAME_MAX`) is
fed the bytes whole and then in chunks, taking protocol headers and frames until it returns
``None``. The invariant: it returns normally or raises an error that blames the remote side
(:data:`fuzz.common.REMOTE_ERRORS`); feeding in chunks gives the same headers and frames,
from the same byte ranges, and the same error as feeding everything at once; each frame
re-encoded parses back to one frame that re-encodes to the same bytes.

The seeds are a client's side of a session (SASL and AMQP), an extended frame header,
headers of other protocols (TLS, HTTP, AMQP 0-9-1) and a few broken frames.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.framing.amqp10
from amqp_sansio.definitions.amqp10 import performatives
from amqp_sansio.errors import UnsupportedProtocolError
from amqp_sansio.framing.amqp10 import FrameParser, FrameType

from ..common import FRAME_MAX, REMOTE_ERRORS, InvariantViolation, chunk_sizes, label_error
from .codec import message_seeds

__all__ = ["fuzz_frames", "seeds"]

Event = tuple[Any, ...]


@dataclasses.dataclass
class _StreamResult:
    events: list[Event]
    frames: list[amqp.framing.amqp10.Frame]
    error: BaseException | None

    def comparable(self) -> tuple[Any, ...]:
        err: tuple[str, str] | None = None
        if self.error is not None:
            # The header an UnsupportedProtocolError reports depends on how many bytes had
            # arrived (it is decided early), and error offsets are positions in the parser's
            # buffer; compare what does not depend on the chunking.
            detail = (
                ""
                if isinstance(self.error, UnsupportedProtocolError)
                else str(getattr(self.error, "description", self.error))
            )
            err = (type(self.error).__name__, detail)
        return tuple(self.events), err


_HEADER_LEADS = frozenset(b"AGHP\x16")


def _wants_header(view: bytes | bytearray, at_start: bool) -> bool:
    """Whether the driver asks for a protocol header next rather than a frame.

    At the start of the stream, input whose first byte could begin a protocol header (``A``
    of AMQP, but also HTTP verbs and a TLS handshake, which the parser names) is taken as
    beginning with one, as a server expects; no valid frame starts with those bytes, whose
    size would be hundreds of megabytes. Later, a header may follow frames (SASL then AMQP) and
    is recognised by its ``AMQP`` prefix (a frame that large is never valid anyway).
    """
    if not view:
        return False
    if at_start:
        return view[0] in _HEADER_LEADS
    head = bytes(view[:4])
    return b"AMQP".startswith(head)


def _parse_stream(data: bytes, sizes: Iterable[int], max_frame_size: int) -> _StreamResult:
    parser = FrameParser(max_frame_size=max_frame_size)
    events: list[Event] = []
    frames: list[amqp.framing.amqp10.Frame] = []
    fed = 0
    chunks = iter(sizes)
    try:
        while True:
            while True:
                consumed = fed - parser.buffered
                view = data[consumed:fed]
                if _wants_header(view if consumed else data[:fed], consumed == 0):
                    header = parser.next_protocol_header()
                    if header is None:
                        break
                    events.append(("header", consumed, int(header.protocol_id)))
                else:
                    frame = parser.next_frame()
                    if frame is None:
                        break
                    frames.append(frame)
                    events.append(
                        (
                            "frame",
                            consumed,
                            fed - parser.buffered,
                            int(frame.type),
                            frame.channel,
                            repr(frame.body),
                            frame.payload,
                        )
                    )
            if fed >= len(data):
                break
            step = max(1, next(chunks, len(data)))
            parser.feed(data[fed : fed + step])
            fed = min(len(data), fed + step)
    except REMOTE_ERRORS as exc:
        return _StreamResult(events, frames, exc)
    return _StreamResult(events, frames, None)


def _frame_bytes(frame: amqp.framing.amqp10.Frame) -> bytes:
    return amqp.framing.amqp10.encode_frame(
        frame.body, channel=frame.channel, payload=frame.payload, frame_type=frame.type
    )


def _frame_roundtrip(frame: amqp.framing.amqp10.Frame) -> None:
    try:
        first = _frame_bytes(frame)
    except Exception as exc:
        raise InvariantViolation(
            "frames", "frame-encode", f"parsed frame does not encode: {exc!r}", value=frame
        ) from exc
    parser = FrameParser(max_frame_size=0xFFFFFFFF)
    parser.feed(first)
    try:
        again = parser.next_frame()
    except Exception as exc:
        raise InvariantViolation(
            "frames",
            "frame-reparse",
            f"re-encoded frame {first[:64]!r} does not parse: {exc!r}",
            value=frame,
            encoded=first,
        ) from exc
    if again is None or parser.buffered:
        raise InvariantViolation(
            "frames",
            "frame-reparse",
            f"re-encoded frame {first[:64]!r} is not exactly one frame",
            value=frame,
            encoded=first,
        )
    second = _frame_bytes(again)
    if second != first:
        raise InvariantViolation(
            "frames",
            "frame-unstable",
            f"frame canonical form is not stable: {first[:64]!r} then {second[:64]!r}",
            value=frame,
            encoded=first,
        )


def fuzz_frames(
    data: bytes, *, max_frame_size: int = FRAME_MAX, chunks: Sequence[int] | None = None
) -> str:
    """Target ``frames``: parse whole, parse in chunks, compare, and round-trip each frame."""
    whole = _parse_stream(data, [len(data)], max_frame_size)
    chunked = _parse_stream(data, chunk_sizes(data) if chunks is None else chunks, max_frame_size)
    if whole.comparable() != chunked.comparable():
        raise InvariantViolation(
            "frames",
            "chunking",
            "feeding in chunks changed the result:\n"
            f"  whole:   {whole.comparable()!r:.400}\n  chunked: {chunked.comparable()!r:.400}",
            value=whole.frames,
        )
    for frame in whole.frames:
        _frame_roundtrip(frame)
    kinds = ",".join(type(f.body).__name__ for f in whole.frames[:4])
    if whole.error is not None:
        return f"{label_error(whole.error)}|{kinds}"
    return f"ok:{kinds}"


def _frames_seeds(messages: Sequence[bytes]) -> list[bytes]:
    a = amqp
    f = a.framing.amqp10.encode_frame
    open_ = f(performatives.Open(container_id="client", max_frame_size=65536, idle_time_out=1000))
    begin = f(
        performatives.Begin(next_outgoing_id=0, incoming_window=2048, outgoing_window=2048),
        channel=1,
    )
    attach = f(
        performatives.Attach(
            name="sender",
            handle=0,
            role=performatives.Role.SENDER,
            source=a.Source(address="s"),
            target=a.Target(address="q"),
            initial_delivery_count=0,
        ),
        channel=1,
    )
    flow = f(
        performatives.Flow(
            incoming_window=2048,
            next_outgoing_id=0,
            outgoing_window=2048,
            handle=0,
            delivery_count=0,
            link_credit=10,
        ),
        channel=1,
    )
    transfers = [
        f(
            performatives.Transfer(
                handle=0, delivery_id=i, delivery_tag=bytes([i]), message_format=0
            ),
            channel=1,
            payload=m,
        )
        for i, m in enumerate(messages[:6])
    ]
    disposition = f(
        performatives.Disposition(
            role=performatives.Role.RECEIVER,
            first=0,
            last=5,
            settled=True,
            state=a.Accepted(),
        ),
        channel=1,
    )
    detach = f(performatives.Detach(handle=0, closed=True), channel=1)
    end = f(performatives.End(), channel=1)
    close = f(
        performatives.Close(error=a.Error(condition="amqp:connection:forced", description="bye"))
    )
    sasl = [
        f(
            performatives.SaslMechanisms(sasl_server_mechanisms=["PLAIN", "ANONYMOUS"]),
            frame_type=FrameType.SASL,
        ),
        f(
            performatives.SaslInit(mechanism="PLAIN", initial_response=b"\x00u\x00p"),
            frame_type=FrameType.SASL,
        ),
        f(performatives.SaslChallenge(challenge=b"?"), frame_type=FrameType.SASL),
        f(performatives.SaslResponse(response=b"!"), frame_type=FrameType.SASL),
        f(
            performatives.SaslOutcome(code=performatives.SaslCode.OK),
            frame_type=FrameType.SASL,
        ),
    ]
    # A frame with an extended header (data offset 3): four ignored bytes before the body.
    extended = bytearray(f(performatives.End()))
    extended[4] = 3
    extended[8:8] = b"\xde\xad\xbe\xef"
    extended[0:4] = len(extended).to_bytes(4, "big")
    session = begin + attach + flow + b"".join(transfers) + disposition + detach + end
    return [
        a.framing.amqp10.AMQP_HEADER + open_ + session + a.framing.amqp10.HEARTBEAT + close,
        a.framing.amqp10.SASL_HEADER
        + b"".join(sasl)
        + a.framing.amqp10.AMQP_HEADER
        + open_
        + a.framing.amqp10.HEARTBEAT,
        a.framing.amqp10.TLS_HEADER,
        a.framing.amqp10.AMQP_HEADER + bytes(extended) + a.framing.amqp10.HEARTBEAT * 3,
        open_ + begin + transfers[0],
        a.framing.amqp10.HEARTBEAT,
        b"".join(transfers),
        b"AMQP\x00\x00\x09\x01",
        b"AMQP\x01\x01\x00\x0a",
        b"GET / HTTP/1.1\r\n",
        b"\x16\x03\x01\x00\xa5\x01\x00\x00",
        a.framing.amqp10.AMQP_HEADER
        + b"\x00\x00\x00\x09\x02\x00\x00\x00\x40",  # a null where a body goes
        a.framing.amqp10.AMQP_HEADER + f(a.Accepted()),  # not a performative
    ]


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``frames`` (deterministic): the messages of the codec's seeds, in
    transfers."""
    return {"frames": _frames_seeds(message_seeds())}
