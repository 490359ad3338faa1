"""The AMQP 0-9-1 frame parser's target, ``amqp091-frames``, and its seeds.

An :class:`amqp_sansio.framing.amqp091.FrameParser` (frame-max :data:`fuzz.common.FRAME_MAX`; a
server's, which reads the protocol header first, when the data begins with ``A``, a
client's otherwise) is fed the bytes whole and then in chunks. The invariant: both give the
same frames (compared as re-encoded bytes: a table may hold a NaN) and the same error class;
every error is a ``DecodeError`` or ``FramingError`` carrying a 0-9-1 reply code
(:data:`AMQP091_REPLY_CODES`), or an ``UnsupportedProtocolError``; every frame re-encodes,
parses back to exactly that frame, and encodes to the same bytes.

The seeds (:func:`frame_seeds`) are a client's and a server's side of a conversation, a
content header with a field of every type, and heartbeats.
"""

from __future__ import annotations

import decimal
from collections.abc import Iterable, Sequence

from amqp_sansio import amqp091
from amqp_sansio.errors import UnsupportedProtocolError

from ..common import FRAME_MAX, REMOTE_ERRORS, InvariantViolation, chunk_sizes, label_error

__all__ = ["AMQP091_REPLY_CODES", "frame_seeds", "fuzz_amqp091_frames", "seeds"]

#: The reply codes a 0-9-1 decoding error may carry (frame-error, syntax-error,
#: unexpected-frame, not-implemented).
AMQP091_REPLY_CODES = frozenset({501, 502, 505, 540})


def _parse_091(data: bytes, sizes: Iterable[int]) -> tuple[list[bytes], BaseException | None]:
    """The frames of ``data`` fed in chunks of ``sizes`` (re-encoded: a frame holding a NaN
    is not equal to itself, its bytes are), and the error that stopped the parser."""
    parser = amqp091.framing.FrameParser(FRAME_MAX, protocol_header=data[:1] == b"A")
    out: list[bytes] = []
    fed = 0
    chunks = iter(sizes)
    try:
        while True:
            for frame in parser:
                if isinstance(frame, amqp091.framing.ProtocolHeader):
                    out.append(amqp091.PROTOCOL_HEADER)
                    continue
                try:
                    out.append(amqp091.framing.encode_frame(frame))
                except Exception as exc:
                    raise InvariantViolation(
                        "amqp091-frames", "frame-encode", f"{frame!r:.200} does not encode: {exc!r}"
                    ) from exc
            if fed >= len(data):
                return out, None
            step = max(1, next(chunks, len(data)))
            parser.feed(data[fed : fed + step])
            fed = min(len(data), fed + step)
    except REMOTE_ERRORS as exc:
        code = getattr(exc, "reply_code", None)
        if code is not None and code not in AMQP091_REPLY_CODES:
            raise InvariantViolation(
                "amqp091-frames", "reply-code", f"{exc!r} carries reply code {code}"
            ) from exc
        if code is None and not isinstance(exc, UnsupportedProtocolError):
            raise InvariantViolation(
                "amqp091-frames", "reply-code", f"{exc!r} carries no reply code"
            ) from exc
        return out, exc


def fuzz_amqp091_frames(data: bytes, *, chunks: Sequence[int] | None = None) -> str:
    """Target ``amqp091-frames``: an AMQP 0-9-1 :class:`~amqp_sansio.framing.amqp091.FrameParser`
    (frame-max 8192; a server's, reading the protocol header first, when the data begins
    with ``A``) fed the bytes whole and in chunks: the same frames and the same error both
    ways; every frame re-encodes, parses back to one frame, and encodes to the same bytes."""
    frames, error = _parse_091(data, [len(data)])
    again, error2 = _parse_091(data, chunk_sizes(data) if chunks is None else chunks)
    if frames != again or type(error) is not type(error2):
        raise InvariantViolation(
            "amqp091-frames",
            "chunking",
            f"feeding in chunks changed the result: {frames!r:.300} / {error!r} then "
            f"{again!r:.300} / {error2!r}",
        )
    for first in frames:
        if first == amqp091.PROTOCOL_HEADER:
            continue
        reparsed, problem = _parse_091(first, [len(first)])
        if problem is not None or reparsed != [first]:
            raise InvariantViolation(
                "amqp091-frames",
                "frame-unstable",
                f"re-encoded frame {first[:64]!r} parses as {reparsed!r:.200} / {problem!r}",
                encoded=first,
            )
    kinds = ",".join(str(f[0]) for f in frames[:4])
    if error is not None:
        return f"{label_error(error)}|{kinds}"
    return f"ok:{kinds}"


def frame_seeds() -> list[bytes]:
    """Streams of 0-9-1 frames: a client's and a server's side, content cut in frames,
    tables of every field type, heartbeats."""
    headers = {
        "s": "text",
        "i": 7,
        "big": 2**40,
        "t": True,
        "f": 0.5,
        "n": None,
        "d": decimal.Decimal("1.25"),
        "x": bytearray(b"\x00\x01"),
        "ts": amqp091.codec.Timestamp(1_700_000_000),
        "a": [1, "two", [3], {"four": 4}],
        "F": {"nested": {"deeper": amqp091.codec.UInt16(9)}},
        "w": [
            amqp091.codec.UInt8(1),
            amqp091.codec.Int16(2),
            amqp091.codec.UInt32(3),
            amqp091.codec.Float32(1.5),
        ],
    }
    props = amqp091.BasicProperties(
        content_type="application/json",
        headers=headers,
        delivery_mode=2,
        priority=5,
        message_id="m-1",
        timestamp=amqp091.codec.Timestamp(1_700_000_000),
        reply_to="amq.rabbitmq.reply-to",
    )
    start = amqp091.spec.ConnectionStart(
        server_properties={"product": "RabbitMQ", "capabilities": {"publisher_confirms": True}},
        mechanisms=b"PLAIN AMQPLAIN",
        locales=b"en_US",
    )
    client = [
        amqp091.encode_method_frame(
            0,
            amqp091.spec.ConnectionStartOk(
                client_properties={"product": "fuzz"}, response=b"\x00guest\x00guest"
            ),
        ),
        amqp091.encode_method_frame(
            0, amqp091.spec.ConnectionTuneOk(channel_max=2047, frame_max=8192, heartbeat=60)
        ),
        amqp091.encode_method_frame(0, amqp091.spec.ConnectionOpen(virtual_host="/")),
        amqp091.encode_method_frame(1, amqp091.spec.ChannelOpen()),
        amqp091.encode_method_frame(1, amqp091.spec.ConfirmSelect()),
        amqp091.encode_method_frame(
            1, amqp091.spec.QueueDeclare(queue="q", durable=True, arguments={"x-max-length": 10})
        ),
        amqp091.encode_method_frame(1, amqp091.spec.BasicQos(prefetch_count=10)),
        amqp091.encode_method_frame(1, amqp091.spec.BasicConsume(queue="q", consumer_tag="c")),
        *amqp091.encode_content(
            1,
            amqp091.spec.BasicPublish(routing_key="q", mandatory=True),
            props,
            bytes(range(256)) * 20,
            4096,
        ),
        amqp091.framing.HEARTBEAT,
        amqp091.encode_method_frame(1, amqp091.spec.BasicNack(delivery_tag=3, multiple=True)),
        amqp091.encode_method_frame(
            1, amqp091.spec.ChannelClose(reply_code=200, class_id=0, method_id=0)
        ),
    ]
    server = [
        amqp091.encode_method_frame(0, start),
        amqp091.encode_method_frame(
            0, amqp091.spec.ConnectionTune(channel_max=2047, frame_max=131072, heartbeat=60)
        ),
        amqp091.encode_method_frame(
            1,
            amqp091.spec.BasicDeliver(
                consumer_tag="c", delivery_tag=1, exchange="", routing_key="q"
            ),
        ),
        *amqp091.encode_content(
            1,
            amqp091.spec.BasicReturn(reply_code=312, exchange="x", routing_key="k"),
            amqp091.BasicProperties(),
            b"body",
            0,
        )[1:],
        amqp091.encode_method_frame(0, amqp091.spec.ConnectionBlocked(reason="low memory")),
        amqp091.encode_method_frame(
            0,
            amqp091.spec.ConnectionClose(
                reply_code=320, reply_text="CONNECTION_FORCED", class_id=0, method_id=0
            ),
        ),
    ]
    seeds = [
        amqp091.PROTOCOL_HEADER + b"".join(client),
        b"".join(server),
        amqp091.encode_header_frame(1, 10, props),
        amqp091.framing.HEARTBEAT * 3,
    ]
    seeds += [amqp091.PROTOCOL_HEADER + frame for frame in client[:6]]
    seeds += server
    return seeds


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``amqp091-frames`` (deterministic)."""
    return {"amqp091-frames": frame_seeds()}
