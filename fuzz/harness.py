"""Fuzz targets for amqp-sansio, a seed corpus, and a pure-Python mutation fuzzer.

Eleven targets take arbitrary bytes:

``decode``
    :func:`amqp_sansio.decode`.
``frames``
    a :class:`amqp_sansio.framing.FrameParser` fed the bytes whole and then in chunks, taking
    protocol
    headers and frames until it returns ``None``.
``message``
    :meth:`amqp_sansio.Message.decode`.
``server`` and ``server-opened``
    a server-role :class:`amqp_sansio.Connection` fed the bytes in chunks after an AMQP
    header (and, for ``server-opened``, a valid open), with a small application answering
    its events (:func:`fuzz_server`).
``sasl-server`` and ``sasl-client``
    a connection that requires SASL, server or client role, fed the bytes after a SASL
    header (:func:`fuzz_sasl_server`, :func:`fuzz_sasl_client`).
``selector``
    the broker's message-selector parser (:class:`amqp_sansio.broker.Selector`), fed the
    bytes as UTF-8 text, and what parses evaluated against a few messages
    (:func:`fuzz_selector`).
``amqp091-codec``
    the AMQP 0-9-1 codec with no framing around it: the bytes decoded as a field table
    (:func:`amqp_sansio.amqp091.decode_table`), a method frame's payload
    (:func:`~amqp_sansio.amqp091.decode_method`) and a content header's payload
    (:func:`~amqp_sansio.amqp091.decode_content_header`) (:func:`fuzz_amqp091_codec`).
``amqp091-frames``
    an AMQP 0-9-1 :class:`amqp_sansio.amqp091.framing.FrameParser` fed the bytes whole and in
    chunks (:func:`fuzz_amqp091_frames`); its errors must carry a 0-9-1 reply code.
``amqp091-engine``
    a server-role AMQP 0-9-1 :class:`amqp_sansio.amqp091.engine.Connection` fed the bytes in
    chunks, with a small broker answering its events (:func:`fuzz_amqp091_engine`).

The invariant for the codec's four: a target returns normally, or raises an error that
blames the remote side (:class:`~amqp_sansio.DecodeError`,
:class:`~amqp_sansio.errors.FramingError`,
:class:`~amqp_sansio.errors.UnsupportedProtocolError`). Any other exception is a failure. When the
bytes decode, the result must encode, the encoding must decode, and encoding that again must
give the same bytes (the canonical form is stable). For frames, feeding the bytes in chunks
must give the same headers, frames and error as feeding them whole.

The invariant for the selector: parsing returns a selector or raises
:class:`~amqp_sansio.broker.SelectorError` (with a position inside the text); evaluating one
returns TRUE, FALSE or UNKNOWN and raises nothing.

The invariant for the engine's five: nothing raises at all (a peer's bytes are answered with
events, or with a close carrying an error condition), every protocol error is answered on
the wire, and what the engine sends is well-formed (see :func:`fuzz_server` and, for the
0-9-1 engine, :func:`fuzz_amqp091_engine`).

:func:`run` is a bounded mutation fuzzer over :func:`seed_corpus` that needs nothing beyond
the standard library; ``fuzz/atheris_main.py`` runs the same targets under atheris. Run this
file for a command line: ``python -m fuzz.harness --help`` from the repository root.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import decimal
import functools
import hashlib
import importlib
import importlib.util
import itertools
import random
import re
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

import amqp_sansio as amqp
from amqp_sansio import DecodeError, Described, Message, Symbol, amqp091
from amqp_sansio.codec import AMQPType, Array
from amqp_sansio.definitions import messaging, performatives
from amqp_sansio.errors import FramingError, UnsupportedProtocolError
from amqp_sansio.framing import FrameParser, FrameType

__all__ = [
    "BROKER_TARGETS",
    "CODEC_TARGETS",
    "ENGINE_TARGETS",
    "PARSER_TARGETS",
    "FRAME_MAX",
    "KNOWN_ISSUES",
    "MAX_INPUT",
    "REGRESSIONS",
    "TARGETS",
    "REMOTE_ERRORS",
    "SLOW_SECONDS",
    "Finding",
    "FuzzStats",
    "InvariantViolation",
    "KnownIssue",
    "check",
    "classify",
    "execute",
    "fuzz_amqp091_engine",
    "fuzz_amqp091_codec",
    "fuzz_amqp091_frames",
    "fuzz_decode",
    "fuzz_frames",
    "fuzz_message",
    "fuzz_selector",
    "fuzz_server",
    "fuzz_server_opened",
    "minimize",
    "mutate",
    "regression_cases",
    "run",
    "seed_corpus",
    "write_seed_corpus",
]

#: The errors that blame the bytes (the remote side); every other exception is a failure.
REMOTE_ERRORS: tuple[type[Exception], ...] = (DecodeError, FramingError, UnsupportedProtocolError)

#: The max-frame-size the frames target gives its parser.
FRAME_MAX = 8192
#: Mutated inputs are cut to this many bytes.
MAX_INPUT = 4096
#: A single execution slower than this (seconds) is reported as a failure.
SLOW_SECONDS = 2.0

REGRESSIONS = Path(__file__).resolve().parent / "regressions"


class InvariantViolation(AssertionError):
    """A target broke the invariant without raising anything unexpected itself.

    ``stage`` says which check failed, ``value`` is what was decoded (when anything was) and
    ``encoded`` the bytes of the first re-encoding (when there were any).
    """

    def __init__(
        self,
        target: str,
        stage: str,
        message: str,
        *,
        value: Any = None,
        encoded: bytes | None = None,
    ) -> None:
        super().__init__(f"[{target}/{stage}] {message}")
        self.target = target
        self.stage = stage
        self.value = value
        self.encoded = encoded


# ---------------------------------------------------------------------------------------------
# targets
# ---------------------------------------------------------------------------------------------


def _label_error(exc: BaseException) -> str:
    """A coarse label for an error: its class and its message with the details blanked."""
    text = getattr(exc, "description", None) or str(exc)
    text = re.sub(r"'[^']*'|\"[^\"]*\"|0x[0-9a-fA-F]+|\d+", "#", text)
    return f"{type(exc).__name__}:{text[:60]}"


def _shape(value: Any) -> str:
    t = type(value)
    if t is Array:
        return f"Array[{value.type.value}{'+d' if value.descriptor is not None else ''}]"
    if t is Described:
        return f"Described[{type(value.descriptor).__name__}]"
    return t.__name__


def _roundtrip(
    target: str, value: Any, enc: Callable[[Any], bytes], dec: Callable[[bytes], Any]
) -> None:
    """encode(value) succeeds, decodes back, and re-encodes to the same bytes."""
    try:
        first = enc(value)
    except Exception as exc:
        raise InvariantViolation(
            target, "encode", f"decoded value does not encode: {exc!r}", value=value
        ) from exc
    try:
        again = dec(first)
    except Exception as exc:
        raise InvariantViolation(
            target,
            "redecode",
            f"encoding {first[:64]!r} of a decoded value does not decode: {exc!r}",
            value=value,
            encoded=first,
        ) from exc
    try:
        second = enc(again)
    except Exception as exc:
        raise InvariantViolation(
            target,
            "reencode",
            f"re-decoded value does not encode: {exc!r}",
            value=again,
            encoded=first,
        ) from exc
    if second != first:
        raise InvariantViolation(
            target,
            "unstable",
            f"canonical form is not stable: {first[:64]!r} then {second[:64]!r}",
            value=value,
            encoded=first,
        )


def fuzz_decode(data: bytes) -> str:
    """Target ``decode``: returns an outcome label; raises on a broken invariant."""
    try:
        value = amqp.decode(data)
    except REMOTE_ERRORS as exc:
        return _label_error(exc)
    _roundtrip("decode", value, amqp.encode, amqp.decode)
    return "ok:" + _shape(value)


def _message_encode(m: Message) -> bytes:
    return m.encode()


def fuzz_message(data: bytes) -> str:
    """Target ``message``: :meth:`Message.decode`, then the full and bare round trips."""
    try:
        message = Message.decode(data)
    except REMOTE_ERRORS as exc:
        return _label_error(exc)
    _roundtrip("message", message, _message_encode, Message.decode)
    # A message of annotations only has no bare message (and encode_bare says so).
    has_bare = any(
        x is not None for x in (message.properties, message.application_properties, message.body)
    )
    try:
        bare = message.encode_bare() if has_bare else b""
    except Exception as exc:
        raise InvariantViolation(
            "message", "bare-encode", f"bare message does not encode: {exc!r}", value=message
        ) from exc
    if bare:
        try:
            bare_message = Message.decode(bare)
        except Exception as exc:
            raise InvariantViolation(
                "message",
                "bare-decode",
                f"bare message {bare[:64]!r} does not decode: {exc!r}",
                value=message,
                encoded=bare,
            ) from exc
        _roundtrip("message", bare_message, Message.encode_bare, Message.decode)
    present = [f.name for f in attrs.fields(Message) if getattr(message, f.name) is not None]
    return "ok:" + ",".join(present) + ":" + _shape(message.body)


# -- frames -----------------------------------------------------------------------------------

Event = tuple[Any, ...]


@dataclasses.dataclass
class _StreamResult:
    events: list[Event]
    frames: list[amqp.framing.Frame]
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
    frames: list[amqp.framing.Frame] = []
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


def _chunk_sizes(data: bytes) -> list[int]:
    """Chunk sizes derived from the data itself, so that every run is reproducible."""
    rng = random.Random(zlib.crc32(data))
    style = rng.randrange(4)
    if style == 0:
        return [1] * len(data)
    top = (3, 9, 64, max(1, len(data) // 2))[rng.randrange(4)]
    return [rng.randint(1, top) for _ in range(len(data) + 1)]


def _frame_bytes(frame: amqp.framing.Frame) -> bytes:
    return amqp.framing.encode_frame(
        frame.body, channel=frame.channel, payload=frame.payload, frame_type=frame.type
    )


def _frame_roundtrip(frame: amqp.framing.Frame) -> None:
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
    chunked = _parse_stream(data, _chunk_sizes(data) if chunks is None else chunks, max_frame_size)
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
        return f"{_label_error(whole.error)}|{kinds}"
    return f"ok:{kinds}"


# -- AMQP 0-9-1 frames ---------------------------------------------------------------------------

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
    """Target ``amqp091-frames``: an AMQP 0-9-1 :class:`~amqp_sansio.amqp091.framing.FrameParser`
    (frame-max 8192; a server's, reading the protocol header first, when the data begins
    with ``A``) fed the bytes whole and in chunks: the same frames and the same error both
    ways; every frame re-encodes, parses back to one frame, and encodes to the same bytes."""
    frames, error = _parse_091(data, [len(data)])
    again, error2 = _parse_091(data, _chunk_sizes(data) if chunks is None else chunks)
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
        return f"{_label_error(error)}|{kinds}"
    return f"ok:{kinds}"


def _check_091_error(target: str, exc: BaseException) -> None:
    """A 0-9-1 decoding error must carry one of the spec's reply codes (0-9-1 spec 1.5)."""
    code = getattr(exc, "reply_code", None)
    if code not in AMQP091_REPLY_CODES:
        raise InvariantViolation(
            target, "reply-code", f"{exc!r} carries reply code {code}"
        ) from exc


def _encode_091_header(value: tuple[int, int, amqp091.methods.Properties]) -> bytes:
    return amqp091.encode_content_header(value[1], value[2])


def fuzz_amqp091_codec(data: bytes) -> str:
    """Target ``amqp091-codec``: the bytes decoded three ways, as a field table (0-9-1 spec
    4.2.5.5), a method frame's payload (4.2.6) and a content header's payload (4.2.6.1).
    Each decodes, or raises a decoding error with a 0-9-1 reply code; what decodes
    encodes, decodes back and encodes to the same bytes. The label begins ``ok:`` when
    one of the three decodes."""
    labels = []
    decoded = False
    decoders: tuple[tuple[str, Callable[[bytes], Any], Callable[[Any], bytes]], ...] = (
        ("table", amqp091.decode_table, amqp091.encode_table),
        ("method", amqp091.decode_method, _encode_091_method),
        ("header", amqp091.decode_content_header, _encode_091_header),
    )
    for name, decode, encode in decoders:
        try:
            value = decode(data)
        except REMOTE_ERRORS as exc:
            _check_091_error("amqp091-codec", exc)
            labels.append(f"{name}:{_label_error(exc)}")
            continue
        _roundtrip("amqp091-codec", value, encode, decode)
        labels.append(f"{name}={type(value).__name__}")
        decoded = True
    return ("ok:" if decoded else "") + "|".join(labels)


def _encode_091_method(method: amqp091.Method) -> bytes:
    return method.encode()


def _amqp091_seeds() -> list[bytes]:
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


# -- the protocol engine, server role ---------------------------------------------------------

#: The server the ``server`` targets drive accepts frames of at most this size (the minimum
#: the spec allows, so that the limits are reached by short inputs).
SERVER_FRAME_MAX = 512
#: Seconds of simulated time between two chunks of input.
SERVER_TICK = 0.005


def _server_connection() -> amqp.Connection:
    return amqp.Connection(
        client=False,
        container_id="fuzz-server",
        max_frame_size=SERVER_FRAME_MAX,
        channel_max=7,
        idle_timeout=10.0,
    )


class _ServerApp:
    """A simple application on a server-role connection: it accepts the open, every
    session and every link (but those named ``refuse...``), grants credit, sends a message
    whenever it gets credit, settles what it receives with each outcome in turn, and settles
    what the peer settles. Deterministic: the same events give the same commands.

    Every command first hands the engine's pending output to ``emit``; a command the engine
    refuses (:class:`~amqp_sansio.LocalProtocolError`) must have queued nothing.
    """

    _SIZES = (0, 100, 700, 1500)

    def __init__(self, conn: amqp.Connection, emit: Callable[[bytes], None]) -> None:
        self.conn = conn
        self.emit = emit
        self.count = 0

    def command(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.emit(self.conn.data_to_send())
        try:
            return fn(*args, **kwargs)
        except amqp.LocalProtocolError as exc:
            leaked = self.conn.data_to_send()
            if leaked:
                raise InvariantViolation(
                    "server",
                    "refused-sent",
                    f"{fn.__name__} was refused ({exc}) but queued {leaked[:64]!r}",
                ) from exc
            return None

    def respond(self, events: Sequence[amqp.Event]) -> None:
        for e in events:
            self.count += 1
            handler = _APP_HANDLERS.get(type(e))
            if handler is not None:
                handler(self, e, self.count)

    def _on_opened(self, e: amqp.events.ConnectionOpened, n: int) -> None:
        self.command(self.conn.open)

    def _on_session_begun(self, e: amqp.events.SessionBegun, n: int) -> None:
        if e.session.state is amqp.SessionState.BEGIN_RCVD:
            self.command(e.session.begin)

    def _on_link_attached(self, e: amqp.events.LinkAttached, n: int) -> None:
        link = e.link
        if link.state is not amqp.LinkState.ATTACH_RCVD:
            return
        if link.name.startswith("refuse"):
            self.command(link.refuse)
            return
        if isinstance(link, amqp.Receiver):
            link.streaming = n % 2 == 1
        self.command(link.attach)
        if isinstance(link, amqp.Receiver):
            self.command(link.flow, 4)

    def _on_credit(self, e: amqp.events.CreditChanged, n: int) -> None:
        if not isinstance(e.link, amqp.Sender):
            return
        if e.drain:
            self.command(e.link.drained)
        elif e.credit > 0:
            data = bytes(range(256)) * 6
            self.command(e.link.send, data[: self._SIZES[n % 4]])

    def _on_delivery(self, e: amqp.events.DeliveryReceived, n: int) -> None:
        if not e.complete:
            return
        a = amqp
        link = e.link
        d = e.delivery
        choice = n % 6
        if choice == 0:
            self.command(link.update, d, messaging.Received(section_number=0, section_offset=1))
        outcome = (
            a.Accepted(),
            a.Rejected(error=a.Error(condition=Symbol("amqp:not-allowed"))),
            a.Released(),
            a.Modified(delivery_failed=True),
            None,
            a.Accepted(),
        )[choice]
        if choice != 4:
            self.command(link.settle, d, outcome)
        if isinstance(link, a.Receiver) and link.link_credit < 2:
            self.command(link.add_credit, 4)

    def _on_update(self, e: amqp.events.DeliveryUpdated, n: int) -> None:
        if isinstance(e.link, amqp.Sender) and not e.delivery.settled:
            self.command(e.link.settle, e.delivery)


#: What :class:`_ServerApp` does on each event, by its type (``n``: the events so far).
_APP_HANDLERS: dict[type, Callable[[_ServerApp, Any, int], None]] = {
    amqp.events.ConnectionOpened: _ServerApp._on_opened,
    amqp.events.SessionBegun: _ServerApp._on_session_begun,
    amqp.events.LinkAttached: _ServerApp._on_link_attached,
    amqp.events.CreditChanged: _ServerApp._on_credit,
    amqp.events.DeliveryReceived: _ServerApp._on_delivery,
    amqp.events.DeliveryUpdated: _ServerApp._on_update,
}


class _OutputCheck:
    """Parses what the server sends, as its peer would: a protocol header, then frames that
    decode and fit the peer's max-frame-size, and nothing after a close."""

    def __init__(self) -> None:
        self.parser = FrameParser(max_frame_size=0xFFFFFFFF)
        self.header = False
        self.fed = 0
        self.peer_max = amqp.framing.MIN_MAX_FRAME_SIZE
        self.closed = False

    def feed(self, data: bytes) -> list[amqp.framing.Frame]:
        if type(data) is not bytes:
            raise InvariantViolation(
                "server", "output", f"data_to_send() returned {type(data).__name__}"
            )
        parser = self.parser
        parser.feed(data)
        self.fed += len(data)
        frames = []
        while True:
            start = self.fed - parser.buffered
            try:
                if not self.header:
                    header = parser.next_protocol_header()
                    if header is None:
                        break
                    if header.to_bytes() != amqp.framing.AMQP_HEADER:
                        raise InvariantViolation(
                            "server", "output", f"the server sent header {header.to_bytes()!r}"
                        )
                    self.header = True
                    continue
                frame = parser.next_frame()
            except REMOTE_ERRORS as exc:
                raise InvariantViolation(
                    "server", "output", f"the server's own output does not parse: {exc!r}"
                ) from exc
            if frame is None:
                break
            size = self.fed - parser.buffered - start
            if self.closed:
                raise InvariantViolation(
                    "server", "after-close", f"the server sent {frame.body!r:.100} after its close"
                )
            if size > self.peer_max:
                raise InvariantViolation(
                    "server",
                    "frame-size",
                    f"a {size}-byte frame, over the peer's max-frame-size {self.peer_max}: "
                    f"{frame.body!r:.100}",
                )
            if isinstance(frame.body, performatives.Close):
                self.closed = True
            frames.append(frame)
        return frames


def _check_errors(
    conn: amqp.Connection,
    events: Sequence[amqp.Event],
    frames: Sequence[amqp.framing.Frame],
    closed_before: bool,
) -> None:
    """Each ProtocolError was answered with a detach, end or close carrying its error (or
    the close had already gone); one of connection scope ended the connection."""
    for e in events:
        if not isinstance(e, amqp.Event):
            raise InvariantViolation("server", "events", f"receive_data returned {e!r}")
        if not isinstance(e, amqp.events.ProtocolError):
            continue
        if not str(e.error.condition).startswith("amqp:"):
            raise InvariantViolation("server", "condition", f"{e!r} has no AMQP condition")
        answered = any(
            isinstance(
                f.body,
                performatives.Detach | performatives.End | performatives.Close,
            )
            and f.body.error == e.error
            for f in frames
        )
        if not answered and not closed_before:
            raise InvariantViolation(
                "server", "unanswered", f"{e!r} was reported but no frame carries the error"
            )
        if e.scope == "connection" and conn.state is not amqp.ConnectionState.END:
            raise InvariantViolation(
                "server", "not-ended", f"{e!r} left the connection in {conn.state.value}"
            )


def _server_chunks(stream: bytes, data: bytes) -> list[int]:
    """Chunk sizes for the server's input, derived from the data. Half the inputs are cut
    anywhere (several frames may arrive in one call); the other half never put two frames
    in one chunk, as a peer waiting for each answer would send them, so that a client's
    recorded conversation stays valid however its frames are cut."""
    sizes = _chunk_sizes(data)
    if zlib.crc32(data) & 0x100:
        return sizes
    spans = [8]  # the header; then each frame by its size field, while it is sane
    at = 8
    while at < len(stream):
        size = int.from_bytes(stream[at : at + 4], "big")
        if len(stream) - at < 8 or not 8 <= size <= len(stream) - at:
            size = len(stream) - at
        spans.append(size)
        at += size
    out = []
    for span, top in zip(spans, itertools.cycle(sizes)):
        while span > 0:
            out.append(min(span, top))
            span -= top
    return out


def fuzz_server(data: bytes, *, opened: bool = False, chunks: Sequence[int] | None = None) -> str:
    """Target ``server``: the bytes, after an AMQP header (and, if ``opened``, a valid open),
    go to a server-role :class:`~amqp_sansio.Connection` in chunks, with the simple
    application of :class:`_ServerApp` answering its events and the clock moving on.

    ``receive_data``, ``handle_timer`` and the application's commands must return normally
    (or, for a command, raise LocalProtocolError having queued nothing); ``data_to_send``
    returns bytes that parse as a header and frames within the peer's max-frame-size, with
    nothing after a close; every ProtocolError is answered by a frame carrying its error.
    After an hour of silence the server has closed; the transport's end ends it.
    """
    conn = _server_connection()
    check = _OutputCheck()
    app = _ServerApp(conn, check.feed)
    stream = (_server_prefix() if opened else amqp.framing.AMQP_HEADER) + data
    kinds: dict[str, None] = {}
    errors: dict[str, None] = {}
    now = 0.0
    fed = 0
    sizes = iter(_server_chunks(stream, data) if chunks is None else chunks)
    while fed < len(stream):
        step = max(1, next(sizes, len(stream)))
        closed_before = check.closed
        check.feed(conn.data_to_send())
        events = conn.receive_data(stream[fed : fed + step], now)
        fed += step
        if type(events) is not list:
            raise InvariantViolation("server", "events", f"receive_data returned {events!r}")
        for e in events:
            if isinstance(e, amqp.events.ConnectionOpened):  # the frames we send may now be larger
                check.peer_max = max(check.peer_max, e.remote.max_frame_size)
        _check_errors(conn, events, check.feed(conn.data_to_send()), closed_before)
        for e in events:
            kinds[type(e).__name__] = None
            if isinstance(e, amqp.events.ProtocolError):
                text = re.sub(r"\d+|'[^']*'", "#", e.error.description or "")
                errors[f"{e.error.condition}:{text[:50]}"] = None
        app.respond(events)
        now += SERVER_TICK
        deadline = conn.next_deadline()
        if deadline is not None and deadline <= now:
            check.feed(conn.data_to_send())
            events = conn.handle_timer(now)
            kinds.update(dict.fromkeys(type(e).__name__ for e in events))
            app.respond(events)
    # An hour of silence: the idle time-out closes the connection; then the transport ends.
    check.feed(conn.data_to_send())
    for e in conn.handle_timer(now + 3600) + conn.receive_data(b"", now + 3600):
        kinds[type(e).__name__] = None
    check.feed(conn.data_to_send())
    if conn.state is not amqp.ConnectionState.END:
        raise InvariantViolation(
            "server", "not-ended", f"the transport ended but the connection is {conn.state.value}"
        )
    verdict = "err" if errors else "ok"
    return f"{verdict}:{'/'.join(errors)[:80]}|{','.join(kinds)[:160]}"


def fuzz_server_opened(data: bytes) -> str:
    """Target ``server-opened``: as ``server``, after a header and a valid open."""
    return fuzz_server(data, opened=True)


# -- seeds: what a client engine says to this server --------------------------------------------


class _Conversation:
    """A client engine and the target's server, wired in memory: records every byte the
    client sends, for seeds that reach deep states."""

    def __init__(self) -> None:
        self.client = amqp.Connection(
            client=True, container_id="fuzz-client", max_frame_size=1024, idle_timeout=20.0
        )
        self.server = _server_connection()
        self.pending = bytearray()
        self.app = _ServerApp(self.server, self.pending.extend)
        self.now = 0.0
        self.sent = bytearray()
        self.deliveries: list[amqp.events.DeliveryReceived] = []

    def pump(self) -> None:
        for _ in range(1000):
            to_server = self.client.data_to_send()
            self.pending += self.server.data_to_send()
            to_client = bytes(self.pending)
            self.pending.clear()
            if not to_server and not to_client:
                return
            if to_server:
                self.sent += to_server
                self.app.respond(self.server.receive_data(to_server, self.now))
            if to_client:
                for e in self.client.receive_data(to_client, self.now):
                    if isinstance(e, amqp.events.DeliveryReceived) and e.complete:
                        self.deliveries.append(e)
        raise AssertionError("the conversation never went quiet")

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.client.handle_timer(self.now)
        self.app.respond(self.server.handle_timer(self.now))
        self.pump()


def _scenario_full(c: _Conversation) -> None:
    a = amqp
    c.client.open(now=c.now)
    c.pump()
    s = c.client.begin(incoming_window=8)
    c.pump()
    snd = s.attach_sender("to-server", target="queue")
    rcv = s.attach_receiver("from-server", source="queue")
    c.pump()
    rcv.flow(3)
    c.pump()
    snd.send(Message(body=b"hello").encode())
    snd.send(bytes(range(256)) * 5)  # split at the server's 512
    c.pump()  # the server grants more credit as it settles
    d = snd.send(b"first part, ", more=True)
    snd.send(b"last part", delivery=d)
    d = snd.send(b"to be aborted", more=True)
    snd.abort(d)
    c.pump()
    snd.send(Message(body="pre-settled").encode(), settled=True)
    c.pump()
    for got in c.deliveries:
        got.link.settle(got.delivery, a.Accepted())
    rcv.drain_credit()
    c.pump()
    for _ in range(3):
        c.advance(3.0)  # heartbeats each way
    snd.detach()
    rcv.detach(closed=False)
    c.pump()
    s.end()
    c.pump()
    c.client.close()
    c.pump()


def _scenario_pipelined(c: _Conversation) -> None:
    a = amqp
    c.client.open(now=c.now)
    s1 = c.client.begin()
    snd = s1.attach_sender(
        "settled",
        target="q",
        snd_settle_mode=a.SenderSettleMode.SETTLED,
        initial_delivery_count=2**32 - 1,
    )
    rcv = s1.attach_receiver(
        "second", source="q", rcv_settle_mode=a.ReceiverSettleMode.SECOND, max_message_size=4096
    )
    c.pump()
    s2 = c.client.begin(incoming_window=2)
    c.pump()
    snd2 = s2.attach_sender("other", target="r")
    c.pump()
    rcv.flow(2)
    snd.send(b"one")
    snd.send(b"two" * 100)
    snd2.send(b"three")
    snd.set_available(5)
    c.pump()
    for got in c.deliveries:
        got.link.update(got.delivery, messaging.Received(section_number=0, section_offset=0))
        got.link.settle(got.delivery, a.Modified(undeliverable_here=True))
    c.pump()
    s2.end(a.Error(condition=Symbol("amqp:internal-error"), description="done"))
    c.pump()
    c.client.close(a.Error(condition=Symbol("amqp:connection:forced"), description="bye"))
    c.pump()


def _scenario_short(c: _Conversation) -> None:
    c.client.open(now=c.now)
    s = c.client.begin()
    c.pump()
    s.end()
    c.client.close()
    c.pump()


def _scenario_link_refused(c: _Conversation) -> None:
    c.client.open(now=c.now)
    s = c.client.begin()
    links = [s.attach_sender(name, target=name) for name in ("a", "refuse-me", "b")]
    c.pump()
    for link in links:
        if link.state is amqp.LinkState.ATTACHED and link.link_credit:
            link.send(b"m")
    c.pump()
    c.client.close()
    c.pump()


_SCENARIOS = (_scenario_full, _scenario_pipelined, _scenario_short, _scenario_link_refused)


@functools.lru_cache(maxsize=1)
def _client_streams() -> tuple[bytes, ...]:
    """What a client engine sends in each scenario, header included."""
    streams = []
    for scenario in _SCENARIOS:
        conversation = _Conversation()
        scenario(conversation)
        streams.append(bytes(conversation.sent))
    return tuple(streams)


def _server_prefix() -> bytes:
    """The header and the client's open, as the scenarios send them."""
    stream = _client_streams()[0]
    size = int.from_bytes(stream[8:12], "big")
    return stream[: 8 + size]


def _server_seeds(opened: bool) -> list[bytes]:
    prefix = _server_prefix() if opened else amqp.framing.AMQP_HEADER
    seeds = []
    for stream in _client_streams():
        assert stream.startswith(prefix), "every scenario opens the same way"
        rest = stream[len(prefix) :]
        seeds.append(rest)
        seeds.append(rest[: len(rest) // 2])  # cut mid-conversation
    if opened:
        seeds.append(b"")
    else:
        seeds.append(_server_prefix()[8:])  # an open, then silence
    return seeds


# -- the SASL layer (core spec 5.3), both roles -------------------------------------------------

_SASL_PASSWORD = "fuzz-pw"
_SASL_SALT = b"fuzz-salt-16byte"


class _SaslStore:
    """Users for the ``sasl-server`` target: alice, for PLAIN and both SCRAMs."""

    def __init__(self) -> None:
        self.scram = {
            mech: amqp.sasl.derive_scram_credentials(
                _SASL_PASSWORD, mechanism=mech, salt=_SASL_SALT, iterations=4096
            )
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        }

    def check_password(self, username: str, password: str) -> bool:
        return username == "alice" and password == _SASL_PASSWORD

    def scram_credentials(self, username: str, mechanism: str) -> Any:
        return self.scram.get(mechanism) if username == "alice" else None


@functools.lru_cache(maxsize=1)
def _sasl_store() -> _SaslStore:
    return _SaslStore()


def _sasl_server_connection() -> amqp.Connection:
    return amqp.Connection(
        client=False,
        container_id="fuzz-sasl-server",
        sasl=amqp.sasl.ServerAuthenticator(
            _sasl_store(),
            allow_anonymous=True,
            allow_cleartext_secrets=True,
            nonce_factory=lambda: "fuzzservernonce",
            fake_key=b"k" * 32,
        ),
        sasl_max_frame_size=SERVER_FRAME_MAX,
    )


def _sasl_client_connection() -> amqp.Connection:
    return amqp.Connection(
        client=True,
        container_id="fuzz-sasl-client",
        sasl=amqp.sasl.ClientCredentials(username="alice", password=_SASL_PASSWORD),
        allow_plain_without_tls=True,
        sasl_max_frame_size=SERVER_FRAME_MAX,
    )


class _SaslOutputCheck:
    """What a SASL peer sends, as its partner parses it: the SASL header, SASL frames, at
    most one outcome (a server's), and only then the AMQP header and AMQP frames (a server's
    after a successful outcome only)."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.parser = FrameParser(max_frame_size=0xFFFFFFFF)
        self.layer = "start"  # then "sasl", then "amqp"
        self.outcome: Any = None
        self.stream = bytearray()  # all of the output, to look ahead at what is unparsed

    def _fail(self, stage: str, message: str) -> InvariantViolation:
        return InvariantViolation(self.role, stage, message)

    def feed(self, data: bytes) -> None:
        if type(data) is not bytes:
            raise self._fail("output", f"{type(data).__name__} output")
        parser = self.parser
        parser.feed(data)
        self.stream += data
        while parser.buffered:
            at = len(self.stream) - parser.buffered
            try:
                if self.layer == "start" or (
                    self.layer == "sasl" and self.stream[at : at + 4] == b"AMQP"
                ):
                    header = parser.next_protocol_header()
                    if header is None:
                        return
                    self._header(header.to_bytes())
                    continue
                frame = parser.next_frame()
            except REMOTE_ERRORS as exc:
                raise self._fail("output", f"does not parse: {exc!r}") from exc
            if frame is None:
                return
            if (frame.type is FrameType.SASL) != (self.layer == "sasl"):
                raise self._fail("layering", f"{frame.body!r:.100} in the {self.layer} layer")
            if self.outcome is not None and self.layer == "sasl":
                raise self._fail("after-outcome", f"{frame.body!r:.100} after the outcome")
            if isinstance(frame.body, performatives.SaslOutcome):
                self.outcome = frame.body

    def _header(self, header: bytes) -> None:
        if self.layer == "start":
            if header != amqp.framing.SASL_HEADER:
                raise self._fail("output", f"the first header is {header!r}")
            self.layer = "sasl"
            return
        if header != amqp.framing.AMQP_HEADER:
            raise self._fail("output", f"then the header {header!r}")
        if self.role == "sasl-server" and (
            self.outcome is None or self.outcome.code is not performatives.SaslCode.OK
        ):
            raise self._fail("after-outcome", "the AMQP header without a successful outcome")
        self.layer = "amqp"


def _fuzz_sasl(role: str, data: bytes) -> str:
    server = role == "sasl-server"
    conn = _sasl_server_connection() if server else _sasl_client_connection()
    check = _SaslOutputCheck(role)
    if not server:
        conn.open(now=0.0)
    stream = amqp.framing.SASL_HEADER + data
    kinds: dict[str, None] = {}
    ended_output = False
    fed = 0
    for step in itertools.cycle(_chunk_sizes(data) or [len(stream)]):
        if fed >= len(stream):
            break
        step = max(1, step)
        events = conn.receive_data(stream[fed : fed + step], fed * SERVER_TICK)
        fed += step
        out = conn.data_to_send()
        if ended_output and out:
            raise InvariantViolation(role, "after-end", f"sent {out[:40]!r} after the end")
        check.feed(out)
        for e in events:
            kinds[type(e).__name__] = None
            if isinstance(e, amqp.events.AuthenticationFailed):
                if conn.state is not amqp.ConnectionState.END:
                    raise InvariantViolation(role, "not-ended", f"{e!r} left it open")
                if "fuzz-pw" in repr(e):
                    raise InvariantViolation(role, "secret", "the password in an event")
        if conn.state is amqp.ConnectionState.END:
            ended_output = True
    events = conn.receive_data(b"", fed * SERVER_TICK)
    kinds.update(dict.fromkeys(type(e).__name__ for e in events))
    if conn.state is not amqp.ConnectionState.END:
        raise InvariantViolation(role, "not-ended", f"EOF left it {conn.state.value}")
    return f"{'ok' if 'Authenticated' in kinds else 'err'}|{','.join(kinds)[:160]}"


def fuzz_sasl_server(data: bytes) -> str:
    """Target ``sasl-server``: the bytes, after a SASL header, to a server-role connection
    that requires SASL (PLAIN, SCRAM-SHA-256/512 and ANONYMOUS on offer). Nothing raises;
    what it sends is its SASL header, SASL frames, at most one outcome and nothing after a
    failed one; a failure ends the connection; the password shows in no event."""
    return _fuzz_sasl("sasl-server", data)


def fuzz_sasl_client(data: bytes) -> str:
    """Target ``sasl-client``: the bytes, after a SASL header, to a client-role connection
    with credentials (and its open held back behind the exchange). The same invariant."""
    return _fuzz_sasl("sasl-client", data)


def _sasl_server_seeds() -> list[bytes]:
    """A client's side of each exchange the server target accepts (deterministic nonces)."""
    from amqp_sansio import sasl

    def frame(body: Any) -> bytes:
        return amqp.framing.encode_frame(body, frame_type=FrameType.SASL)

    def init(name: str, response: bytes | None) -> bytes:
        return frame(performatives.SaslInit(mechanism=Symbol(name), initial_response=response))

    seeds = [
        init("ANONYMOUS", b"trace"),
        init("PLAIN", b"\0alice\0" + _SASL_PASSWORD.encode()),
        init("PLAIN", b"\0alice\0wrong"),
        init("EXTERNAL", b""),
        init("PLAIN", None) + frame(performatives.SaslResponse(response=b"\0alice\0x")),
    ]
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        client = sasl.ScramClient("alice", _SASL_PASSWORD, mechanism=mech, nonce="fuzzclient")
        server = sasl.ScramServer(
            _sasl_store(), mechanism=mech, nonce="fuzzservernonce", fake_key=b"k" * 32
        )
        first = client.initial_response()
        challenge = server.start(first)
        assert isinstance(challenge, sasl.ServerChallenge)
        final = client.respond(challenge.data)
        seeds.append(init(mech, first) + frame(performatives.SaslResponse(response=final)))
        seeds.append(init(mech, first))
    ok = seeds[1]
    seeds.append(
        ok
        + amqp.framing.AMQP_HEADER
        + amqp.framing.encode_frame(performatives.Open(container_id="c"))
    )
    return seeds


def _sasl_client_seeds() -> list[bytes]:
    """A server's side of exchanges the client target goes through."""

    def frame(body: Any) -> bytes:
        return amqp.framing.encode_frame(body, frame_type=FrameType.SASL)

    def mechanisms(*names: str) -> bytes:
        return frame(
            performatives.SaslMechanisms(sasl_server_mechanisms=[Symbol(n) for n in names])
        )

    ok = frame(performatives.SaslOutcome(code=performatives.SaslCode.OK))
    opened = amqp.framing.AMQP_HEADER + amqp.framing.encode_frame(
        performatives.Open(container_id="s")
    )
    return [
        mechanisms("PLAIN") + ok + opened,
        mechanisms("PLAIN") + ok,
        mechanisms("ANONYMOUS", "PLAIN")
        + ok
        + opened
        + amqp.framing.encode_frame(performatives.Close()),
        mechanisms("PLAIN")
        + frame(performatives.SaslOutcome(code=performatives.SaslCode.OK, additional_data=b"x")),
        mechanisms("XOAUTH2", "PLAIN", "ANONYMOUS") + ok + amqp.framing.AMQP_HEADER,
        mechanisms("PLAIN", "ANONYMOUS")
        + frame(performatives.SaslOutcome(code=performatives.SaslCode.AUTH)),
        mechanisms("SCRAM-SHA-256")
        + frame(performatives.SaslChallenge(challenge=b"r=abc,s=c2FsdA==,i=4096"))
        + ok,
        mechanisms("XOAUTH2", "PLAIN") + frame(performatives.SaslChallenge(challenge=b"{}")) + ok,
        mechanisms("ANONYMOUS"),
        mechanisms("PLAIN"),
    ]


def _selector_messages() -> list[Any]:
    from amqp_sansio.broker import MessageFields

    messages: list[Any] = [
        {},
        {"a": 1, "b": "x", "c": 2.5, "d": True, "e": None, "s": "red%_'", "n": -(2**63)},
        {"a": "1", "b": 0, "c": float("nan"), "d": False, "x": [1], "y": b"\x00"},
    ]
    for m in _messages()[:5]:
        messages.append(MessageFields(m.encode(), address="q"))
    return messages


_SELECTOR_MESSAGES: list[Any] = []


def fuzz_selector(data: bytes) -> str:
    """Target ``selector``: the bytes as UTF-8 text (undecodable bytes replaced), parsed by
    :class:`~amqp_sansio.broker.Selector` (with limits small enough to reach); what parses
    is evaluated against a few messages. Returns or raises
    :class:`~amqp_sansio.broker.SelectorError` at a position inside the text; nothing
    else."""
    from amqp_sansio.broker import Selector, SelectorError

    text = data.decode("utf-8", "replace")
    try:
        selector = Selector(text, max_length=2048, max_depth=16)
    except SelectorError as exc:
        if not 0 <= exc.position <= len(text):
            raise InvariantViolation(
                "selector", "position", f"error position {exc.position} outside the text"
            ) from exc
        return _label_error(exc)
    if not _SELECTOR_MESSAGES:
        _SELECTOR_MESSAGES.extend(_selector_messages())
    results = set()
    for message in _SELECTOR_MESSAGES:
        result = selector.evaluate(message)
        if result not in (True, False, None):
            raise InvariantViolation("selector", "result", f"evaluated to {result!r}")
        results.add(result)
    return "ok:" + ",".join(sorted(str(r) for r in results))


def _selector_seeds() -> list[bytes]:
    texts = [
        "colour = 'red' AND weight > 2",
        "a = 1 OR b <> 'x' AND NOT c < 2.5e3",
        "s LIKE 'r%e_d!%' ESCAPE '!' AND s NOT LIKE '%%'",
        "b IN ('x', 'y', 'it''s') OR b NOT IN ('z')",
        "a BETWEEN -1 AND 0x1F AND c NOT BETWEEN 017 AND 9L",
        "e IS NULL AND a IS NOT NULL",
        "(a + 2) * 3 / -c - +a >= 10 OR d = TRUE",
        "JMSPriority > 4 AND JMSType = 'order' AND JMSMessageID LIKE 'ID:%'",
        "JMSDeliveryMode = 'PERSISTENT' OR AMQSize > 10 AND AMQAddress = 'q'",
        "((((a = 1))))",
        "NOT NOT NOT d",
        "n = -9223372036854775808 AND 9223372036854775807 + 1 < 0",
        "\u00e9t\u00e9 = 1 AND $x = _y",
        "a = 1 = 2",
        "'unterminated",
        "a LIKE 'x!' ESCAPE '!'",
    ]
    return [t.encode() for t in texts]


# -- the AMQP 0-9-1 engine, server role ---------------------------------------------------------

#: The 0-9-1 server the ``amqp091-engine`` target drives: frame-max the spec's minimum, a few
#: channels, a heartbeat, a small body limit, so that short inputs reach every limit.
AMQP091_LIMITS = {"frame_max": 4096, "channel_max": 7, "heartbeat": 10}
AMQP091_MAX_BODY = 65536


def _amqp091_method_answer(
    conn: amqp091.engine.Connection, number: int, method: amqp091.Method
) -> list[Callable[[], Any]]:
    answer: amqp091.Method | None = None
    if isinstance(method, amqp091.spec.QueueDeclare):
        answer = amqp091.spec.QueueDeclareOk(
            queue=method.queue or "q", message_count=0, consumer_count=0
        )
    elif isinstance(method, amqp091.spec.BasicGet):
        answer = amqp091.spec.BasicGetEmpty()
    elif isinstance(method, amqp091.spec.ConfirmSelect):
        answer = amqp091.spec.ConfirmSelectOk()
    elif isinstance(method, amqp091.spec.BasicQos):
        return [lambda: conn.block("fuzz")]
    if answer is None:
        return []
    reply = answer
    return [lambda: conn.send_method(number, reply)]


def _amqp091_content_answer(conn: amqp091.engine.Connection, event: Any) -> list[Callable[[], Any]]:
    number = event.channel
    commands: list[Callable[[], Any]] = []
    if number in conn.channels and conn.channel(number).confirm_mode:
        tag = conn.channel(number).next_publish_seq - 1
        commands.append(lambda: conn.send_method(number, amqp091.spec.BasicAck(delivery_tag=tag)))
    if len(event.body) % 3 == 0:
        deliver = amqp091.spec.BasicDeliver(
            consumer_tag="c", delivery_tag=1, exchange="", routing_key="q"
        )
        commands.append(lambda: conn.send_content(number, deliver, event.properties, event.body))
    return commands


def _amqp091_respond(conn: amqp091.engine.Connection, event: Any, out: Callable[[], None]) -> None:
    """A small broker on a 0-9-1 server engine: logs in ``guest`` (refuses anyone else,
    challenges ``secure``), opens ``/`` (refuses other virtual hosts), answers queue.declare,
    basic.get and confirm.select, blocks on basic.qos, acks publishes on a confirm channel,
    delivers back every third body. A command the engine refuses must be a
    LocalProtocolError that queued nothing."""
    ev = amqp091.engine.events
    commands: list[Callable[[], Any]] = []
    if isinstance(event, ev.LoginRequested):
        if event.username == "secure":
            commands.append(lambda: conn.challenge(b"more"))
        elif event.username in ("guest", None):
            commands.append(lambda: conn.accept_login("guest"))
        else:
            commands.append(lambda: conn.refuse_login("no"))
    elif isinstance(event, ev.OpenRequested):
        if event.virtual_host == "/":
            commands.append(conn.accept_open)
        else:
            commands.append(lambda: conn.refuse_open(530, "no"))
    elif isinstance(event, ev.MethodReceived):
        commands = _amqp091_method_answer(conn, event.channel, event.method)
    elif isinstance(event, ev.ContentReceived):
        commands = _amqp091_content_answer(conn, event)
    for command in commands:
        out()
        try:
            command()
        except amqp.LocalProtocolError as exc:
            if conn.data_to_send():
                raise InvariantViolation(
                    "amqp091-engine", "refused-command", f"{exc!r} queued output"
                ) from exc


def _amqp091_check_output(data: bytes, state: dict[str, Any]) -> None:
    """What the server writes: frames within frame-max that parse as a client reads them;
    after its connection.close, nothing but close-ok; connection.close codes are hard errors
    (or 200/403/530, the application's), channel.close codes soft (or the application's)."""
    if not data:
        return
    parser: amqp091.framing.FrameParser = state["parser"]
    if state.get("after_end"):
        raise InvariantViolation("amqp091-engine", "after-end", f"wrote {data[:40]!r} when ended")
    parser.feed(data)
    try:
        frames = list(parser)
    except Exception as exc:
        if data == amqp091.PROTOCOL_HEADER:  # our header: the client's was wrong
            return
        raise InvariantViolation("amqp091-engine", "output", f"unreadable output: {exc!r}") from exc
    for frame in frames:
        if state.get("closing") and not (
            isinstance(frame, amqp091.MethodFrame)
            and isinstance(frame.method, amqp091.spec.ConnectionCloseOk)
        ):
            raise InvariantViolation("amqp091-engine", "after-close", f"{frame!r:.200} after close")
        if isinstance(frame, amqp091.MethodFrame):
            method = frame.method
            if isinstance(method, amqp091.spec.ConnectionClose):
                state["closing"] = True
                if method.reply_code not in amqp091.HARD_ERRORS | {200, 403, 530}:
                    raise InvariantViolation(
                        "amqp091-engine", "reply-code", f"connection.close {method.reply_code}"
                    )
            elif isinstance(
                method, amqp091.spec.ChannelClose
            ) and method.reply_code not in amqp091.SOFT_ERRORS | {200}:
                raise InvariantViolation(
                    "amqp091-engine", "reply-code", f"channel.close {method.reply_code}"
                )


def fuzz_amqp091_engine(data: bytes, *, chunks: Sequence[int] | None = None) -> str:
    """Target ``amqp091-engine``: a server-role :class:`amqp_sansio.amqp091.engine.Connection`
    (frame-max 4096, channel-max 7, heartbeat 10 s, bodies up to 64 KiB) gets the bytes (after
    the 0-9-1 protocol header unless they begin with ``AMQP``) in chunks, with the small
    broker of :func:`_amqp091_respond` answering its events and simulated time moving 5 ms a
    chunk; at the end an hour of silence passes and the stream ends.

    Nothing raises; a refused command queues nothing; the output parses as frames within
    frame-max, with nothing but close-ok after the server's connection.close and nothing
    at all once it has ended; reply codes are hard on connection.close and soft on
    channel.close; ConnectionClosed comes once, last, and the connection is closed then."""
    conn = amqp091.engine.Connection(
        amqp091.engine.Role.SERVER,
        mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"),
        limits=amqp091.Limits(max_body=AMQP091_MAX_BODY),
        **AMQP091_LIMITS,  # type: ignore[arg-type]
    )
    stream = data if data[:4] == b"AMQP" else amqp091.PROTOCOL_HEADER + data
    state: dict[str, Any] = {"parser": amqp091.framing.FrameParser(0)}
    kinds: dict[str, None] = {}
    events: list[Any] = []

    def out() -> None:
        _amqp091_check_output(conn.data_to_send(), state)

    def take(got: list[Any]) -> None:
        for event in got:
            if conn.discarded(event):  # (a close of the responder's made it moot)
                continue
            events.append(event)
            kinds[type(event).__name__] = None
            out()
            _amqp091_respond(conn, event, out)
        out()
        if conn.closed:
            state["after_end"] = True

    now = 0.0
    fed = 0
    sizes = iter(_chunk_sizes(stream) if chunks is None else chunks)
    while fed < len(stream):
        step = max(1, next(sizes, len(stream)))
        got = conn.receive_data(stream[fed : fed + step], now)
        fed += step
        take(got)
        now += SERVER_TICK
        deadline = conn.next_deadline()
        if deadline is not None and deadline <= now:
            take(conn.handle_timer(now))
    take(conn.handle_timer(now + 3600.0))
    take(conn.receive_data(b"", now + 3600.0))
    closed = [e for e in events if isinstance(e, amqp091.engine.events.ConnectionClosed)]
    if len(closed) != 1 or events[-1] is not closed[0] or not conn.closed:
        raise InvariantViolation(
            "amqp091-engine", "ending", f"closed events {closed!r:.200}, last {events[-1:]!r:.200}"
        )
    code = closed[0].reply_code
    outcome = "ok" if code in (200, 320) else f"closed-{code}"  # 320: silence, stream end
    return f"{outcome}|{','.join(kinds)}"


def _amqp091_engine_seeds() -> list[bytes]:
    """A client engine's side of whole conversations with our server engine: PLAIN and
    AMQPLAIN logins, a refused one, channels, declares, gets, publishes (with confirms,
    large and empty), a flow, a close; and a few broken streams."""
    from amqp_sansio.amqp091.engine import Connection, Role
    from amqp_sansio.amqp091.engine import events as ev

    def conversation(script: Callable[[Any, Callable[[], None]], None], **client: Any) -> bytes:
        c = Connection(Role.CLIENT, **client)
        s = Connection(Role.SERVER, mechanisms=("PLAIN", "AMQPLAIN", "EXTERNAL"), **AMQP091_LIMITS)  # type: ignore[arg-type]
        c.start(0.0)
        wire: list[bytes] = []

        def pump() -> None:
            for _ in range(50):
                data = c.data_to_send()
                wire.append(data)
                for e in s.receive_data(data, 0.0) if data else []:
                    if isinstance(e, ev.LoginRequested):
                        if e.username == "guest":
                            s.accept_login("guest")
                        else:
                            s.refuse_login("no")
                    elif isinstance(e, ev.OpenRequested):
                        s.accept_open()
                    elif isinstance(e, ev.MethodReceived) and isinstance(
                        e.method, amqp091.spec.ConfirmSelect
                    ):
                        s.send_method(e.channel, amqp091.spec.ConfirmSelectOk())
                reply = s.data_to_send()
                if not data and not reply:
                    return
                if reply:
                    c.receive_data(reply, 0.0)

        pump()
        if not c.closed:
            script(c, pump)
            pump()
            c.close()
            pump()
        return b"".join(wire)

    def work(c: Any, pump: Callable[[], None]) -> None:
        n = c.open_channel()
        m = c.open_channel()
        pump()
        c.send_method(n, amqp091.spec.QueueDeclare(queue="q", arguments={"x-max-length": 5}))
        c.send_method(n, amqp091.spec.BasicQos(prefetch_count=3))
        c.send_method(m, amqp091.spec.ConfirmSelect())
        c.send_method(n, amqp091.spec.BasicGet(queue="q"))
        c.publish(n, "", "q", b"abc", amqp091.BasicProperties(delivery_mode=2, headers={"h": 1}))
        c.publish(n, "", "q", bytes(range(256)) * 40)
        c.publish(n, "", "q", b"")
        c.send_method(n, amqp091.spec.ChannelFlow(active=False))
        c.close_channel(n)

    def confirms(c: Any, pump: Callable[[], None]) -> None:
        m = c.open_channel()
        pump()
        c.send_method(m, amqp091.spec.ConfirmSelect())
        pump()
        c.publish(m, "amq.topic", "a.b", b"xyz")

    seeds = [
        conversation(work),
        conversation(confirms, mechanism="AMQPLAIN"),
        conversation(lambda c, pump: None, username="someone", password="else"),
        conversation(lambda c, pump: None, virtual_host="/other"),
        b"AMQP\x00\x00\x09\x00",
        b"AMQP\x00\x01\x00\x00",
    ]
    base = seeds[0]
    seeds += [base[:40], base[: len(base) // 2], base + amqp091.encode_body_frame(1, b"stray")]
    return seeds


def _amqp091_codec_seeds() -> list[bytes]:
    """The payloads of the 0-9-1 frame seeds' method and content header frames, and the
    field tables they carry (every field type among them)."""
    out: list[bytes] = []
    for stream in _amqp091_seeds():
        parser = amqp091.framing.FrameParser(FRAME_MAX, protocol_header=stream[:1] == b"A")
        try:
            parser.feed(stream)
            for frame in parser:
                if isinstance(frame, amqp091.MethodFrame):
                    out.append(frame.method.encode())
                    out += [
                        amqp091.encode_table(value)
                        for value in _method_arguments(frame.method)
                        if isinstance(value, dict)
                    ]
                elif isinstance(frame, amqp091.ContentHeaderFrame):
                    out.append(amqp091.encode_content_header(frame.body_size, frame.properties))
                    headers = getattr(frame.properties, "headers", None)
                    if headers:
                        out.append(amqp091.encode_table(headers))
        except REMOTE_ERRORS:
            continue  # the nearly valid seeds end in an error: take what came before
    out += [b"", b"\x00\x00\x00\x00", b"\x00\x0a\x00\x0a", b"\x00\x3c\x00\x00"]
    return out


def _method_arguments(method: amqp091.Method) -> list[Any]:
    """The argument values of a method, in field order."""
    return [getattr(method, name) for name, _ in method.FIELDS]


TARGETS: dict[str, Callable[[bytes], str]] = {
    "decode": fuzz_decode,
    "frames": fuzz_frames,
    "message": fuzz_message,
    "server": fuzz_server,
    "server-opened": fuzz_server_opened,
    "sasl-server": fuzz_sasl_server,
    "sasl-client": fuzz_sasl_client,
    "selector": fuzz_selector,
    "amqp091-codec": fuzz_amqp091_codec,
    "amqp091-frames": fuzz_amqp091_frames,
    "amqp091-engine": fuzz_amqp091_engine,
}


def _sibling(name: str) -> ModuleType:
    """A module of fuzz/ beside this one (imported by path when the harness itself was:
    tests/project/test_fuzz_pass.py loads it so)."""
    if __package__:
        return importlib.import_module(f"{__package__}.{name}")
    full = f"amqp_sansio_fuzz_{name}"
    if full not in sys.modules:
        spec = importlib.util.spec_from_file_location(full, Path(__file__).with_name(f"{name}.py"))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[full] = module
        spec.loader.exec_module(module)
    return sys.modules[full]


#: The broker core's targets, both protocols (fuzz/broker_core.py).
_broker_core = _sibling("broker_core")
TARGETS.update(_broker_core.TARGETS)
BROKER_TARGETS: tuple[str, ...] = _broker_core.BROKER_TARGETS
#: Their seeds, made once at import (a 1.0 client engine's conversation with the broker
#: core: made before any test patches the engine).
_BROKER_SEEDS: dict[str, list[bytes]] = _broker_core.seed_corpus()
#: The codec's targets (fast, thousands of inputs a second) and the engine's (slower).
CODEC_TARGETS = ("decode", "frames", "message", "amqp091-codec", "amqp091-frames")
ENGINE_TARGETS = ("server", "server-opened", "sasl-server", "sasl-client", "amqp091-engine")
#: Text parsers: the broker's message selectors.
PARSER_TARGETS = ("selector",)


# ---------------------------------------------------------------------------------------------
# findings and known issues
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Finding:
    """An input that made a target fail: broke the invariant, raised something unexpected, or
    ran too long."""

    target: str
    data: bytes
    error: BaseException
    issue: str | None = None  # the id of the KnownIssue it matches, if any

    @property
    def stage(self) -> str:
        return getattr(self.error, "stage", "crash")

    @property
    def signature(self) -> str:
        cause = self.error.__cause__ or self.error
        return f"{self.target}/{self.stage}/{_label_error(cause)}"

    def describe(self) -> str:
        return (
            f"{self.signature}\n  input ({len(self.data)} bytes): {self.data.hex()}\n"
            f"  error: {self.error!r:.600}"
        )


@dataclasses.dataclass(frozen=True)
class KnownIssue:
    """A core bug already reported. Findings that match it are counted, not failed, so that a
    fuzz pass still fails on anything new; its regression inputs are expected to fail until
    the bug is fixed (then the strict xfail in tests/project/test_fuzz_pass.py says so)."""

    id: str
    summary: str
    matches: Callable[[Finding], bool]
    regressions: tuple[str, ...] = ()


#: None open: the two this harness found first (an array of nulls that decoded but could not
#: be re-encoded, and a message of null sections that encoded to nothing) are fixed, and their
#: inputs stay in fuzz/regressions/ as ordinary regression cases.
KNOWN_ISSUES: tuple[KnownIssue, ...] = ()


def classify(finding: Finding) -> Finding:
    for issue in KNOWN_ISSUES:
        try:
            if issue.matches(finding):
                finding.issue = issue.id
                break
        except Exception:  # a matcher must never hide a finding
            continue
    return finding


def execute(target: str, data: bytes) -> tuple[str, Finding | None]:
    """Run one target on one input: its outcome label and, if it failed, the finding."""
    try:
        return TARGETS[target](data), None
    except Exception as exc:
        return f"FAIL:{type(exc).__name__}", classify(Finding(target, data, exc))


def check(target: str, data: bytes, *, allow_known: bool = True) -> Finding | None:
    """Run one input; raise on a new failure, return a finding that matches a known issue."""
    _, finding = execute(target, data)
    if finding is None:
        return None
    if finding.issue is not None and allow_known:
        return finding
    raise AssertionError(finding.describe()) from finding.error


def regression_cases() -> list[tuple[str, str, bytes]]:
    """``(target, name, data)`` for every file under fuzz/regressions/<target>/."""
    cases = []
    for target in TARGETS:
        folder = REGRESSIONS / target
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.name.startswith("."):
                    cases.append((target, f"{target}/{path.name}", path.read_bytes()))
    return cases


# ---------------------------------------------------------------------------------------------
# seed corpus
# ---------------------------------------------------------------------------------------------


def _values() -> list[Any]:
    """Varied values covering every type, both widths of each encoding, and nesting."""
    from amqp_sansio.codec import (
        Byte,
        Char,
        Decimal32,
        Decimal64,
        Decimal128,
        Float,
        Int,
        Short,
        Timestamp,
        UByte,
        UInt,
        ULong,
        UShort,
    )

    u = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    nested: Any = "leaf"
    for i in range(12):
        nested = [nested, {Symbol(f"k{i}"): i}] if i % 2 else {f"n{i}": nested}
    # fmt: off
    values: list[Any] = [
        None, True, False,
        UByte(0), UByte(255), UShort(0), UShort(0xBEEF), UInt(0), UInt(7), UInt(0x12345678),
        ULong(0), ULong(200), ULong(0xFFFFFFFFFFFFFFFF), Byte(-128), Byte(5), Short(-300),
        Int(0), Int(-5), Int(-(2**31)), Int(70000), 0, -1, 127, 128, 2**40, -(2**63),
        Float(1.5), Float(float("inf")), Float(-0.0), 3.25, float("nan"), -0.0, 1e300,
        Decimal32.from_decimal("1.25"), Decimal32(0x7C000000), Decimal64.from_decimal("-7E-3"),
        Decimal128.from_decimal("12345678901234567890.5"), Decimal128(0),
        Char("x"), Char("\u00e9"), Char("\U0001f600"), Timestamp(1_700_000_000_000),
        Timestamp(-1), u, b"", b"\x00\xff\x40", bytes(range(256)) + b"!",
        "", "h\u00e9llo w\u00f6rld \u2603", "x" * 300, Symbol(""), Symbol("amqp:x"),
        Symbol("s" * 260),
        [], [None], [1, "a", None, True, UInt(3)], list(range(100)), [[[[]]]],
        {}, {Symbol("k"): 1, "s": [1, 2], UInt(1): None}, {1: None, (1, 2): "tuple key"},
        {"big": "y" * 300}, {None: None, False: b"", 2.5: u},
        nested,
        Described(Symbol("com.example:thing"), [1, 2]),
        Described(ULong(0x1234_5678_9ABC), "x"),
        Described(ULong(0x77), 1),  # an amqp-value section
        Described(Described(Symbol("d"), 1), None),
        Array(AMQPType.NULL, [None]),
        Array(AMQPType.BOOLEAN, [True, False, True]),
        Array(AMQPType.UBYTE, [0, 255]), Array(AMQPType.USHORT, [1, 0xFFFF]),
        Array(AMQPType.UINT, [1, 2]), Array(AMQPType.UINT, [1, 2**31]),
        Array(AMQPType.ULONG, [0, 1]), Array(AMQPType.ULONG, [2**63]),
        Array(AMQPType.BYTE, [-1, 1]), Array(AMQPType.SHORT, [-2, 2]),
        Array(AMQPType.INT, [1, -1]), Array(AMQPType.INT, [2**30]),
        Array(AMQPType.LONG, [5]), Array(AMQPType.LONG, [2**62, -(2**62)]),
        Array(AMQPType.FLOAT, [Float(0.5)]), Array(AMQPType.DOUBLE, [0.25, -1e10]),
        Array(AMQPType.DECIMAL32, [Decimal32(1)]), Array(AMQPType.DECIMAL64, [Decimal64(1)]),
        Array(AMQPType.DECIMAL128, [Decimal128(1)]), Array(AMQPType.CHAR, [Char("a")]),
        Array(AMQPType.TIMESTAMP, [0, 1]), Array(AMQPType.UUID, [u, u]),
        Array(AMQPType.BINARY, [b"a", b""]), Array(AMQPType.BINARY, [b"z" * 300]),
        Array(AMQPType.STRING, ["a", "\u00e9"]), Array(AMQPType.SYMBOL, ["a", "bb"]),
        Array(AMQPType.SYMBOL, ["q" * 256]), Array(AMQPType.UINT, []),
        Array(AMQPType.LIST, [[1], [], ["x", None]]), Array(AMQPType.MAP, [{"a": 1}, {}]),
        Array(AMQPType.ARRAY, [Array(AMQPType.INT, [1, 2]), Array(AMQPType.INT, [3])]),
        Array(AMQPType.ARRAY, [Array(AMQPType.SYMBOL, ["a"]), Array(AMQPType.SYMBOL, [])]),
        Array(AMQPType.SYMBOL, ["x"], descriptor=Symbol("example:tags")),
        Array(AMQPType.LIST, [[], [1]], descriptor=ULong(0x24)),
        Array(AMQPType.STRING, ["x"] * 300),
    ]
    # fmt: on
    return values + _composites()


def _composites() -> list[Any]:
    a = amqp
    err = a.Error(
        condition=Symbol("amqp:internal-error"), description="boom", info={Symbol("why"): "because"}
    )
    source = a.Source(
        address="queue",
        durable=messaging.TerminusDurability.UNSETTLED_STATE,
        expiry_policy=messaging.TerminusExpiryPolicy.NEVER,
        timeout=30,
        dynamic=True,
        dynamic_node_properties={Symbol("lifetime-policy"): messaging.DeleteOnClose()},
        distribution_mode=Symbol("move"),
        filter={Symbol("f"): Described(Symbol("apache.org:selector-filter:string"), "a > 1")},
        default_outcome=a.Released(),
        outcomes=[Symbol("amqp:accepted:list")],
        capabilities=[Symbol("queue")],
    )
    target = a.Target(address="topic", capabilities=["topic"], dynamic=False, timeout=5)
    return [
        performatives.Open(container_id="c1"),
        performatives.Open(
            container_id="container",
            hostname="example.com",
            max_frame_size=65536,
            channel_max=7,
            idle_time_out=30000,
            outgoing_locales=["en-US"],
            offered_capabilities=["ANONYMOUS-RELAY", "x"],
            desired_capabilities="y",
            properties={Symbol("product"): "amqp-sansio"},
        ),
        performatives.Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100),
        performatives.Begin(
            remote_channel=3,
            next_outgoing_id=2**32 - 1,
            incoming_window=0,
            outgoing_window=1,
            handle_max=10,
            properties={Symbol("k"): [1]},
        ),
        performatives.Attach(
            name="link",
            handle=0,
            role=performatives.Role.RECEIVER,
            source=source,
            target=target,
            unsettled={b"tag": a.Accepted()},
            incomplete_unsettled=True,
            initial_delivery_count=1,
            max_message_size=2**40,
            snd_settle_mode=a.SenderSettleMode.SETTLED,
            rcv_settle_mode=a.ReceiverSettleMode.SECOND,
        ),
        performatives.Attach(
            name="coord",
            handle=1,
            role=performatives.Role.SENDER,
            source=a.Source(),
            target=a.definitions.transactions.Coordinator(
                capabilities=[a.definitions.transactions.TxnCapability.LOCAL_TRANSACTIONS]
            ),
        ),
        performatives.Flow(
            incoming_window=10,
            next_outgoing_id=1,
            outgoing_window=10,
            handle=0,
            delivery_count=5,
            link_credit=100,
            available=0,
            drain=True,
            echo=True,
            properties={Symbol("p"): None},
        ),
        performatives.Flow(
            next_incoming_id=4, incoming_window=0, next_outgoing_id=0, outgoing_window=0
        ),
        performatives.Transfer(
            handle=0,
            delivery_id=0,
            delivery_tag=b"\x00\x01",
            message_format=0,
            settled=False,
            more=True,
            rcv_settle_mode=a.ReceiverSettleMode.FIRST,
            state=messaging.Received(section_number=1, section_offset=10),
            resume=True,
            aborted=False,
            batchable=True,
        ),
        performatives.Transfer(
            handle=7,
            state=a.definitions.transactions.TransactionalState(txn_id=b"tx", outcome=a.Accepted()),
        ),
        performatives.Disposition(
            role=performatives.Role.RECEIVER,
            first=0,
            last=10,
            settled=True,
            state=a.Accepted(),
            batchable=True,
        ),
        performatives.Disposition(
            role=performatives.Role.SENDER, first=3, state=a.Rejected(error=err)
        ),
        performatives.Disposition(
            role=performatives.Role.RECEIVER,
            first=3,
            state=a.Modified(
                delivery_failed=True,
                undeliverable_here=False,
                message_annotations={Symbol("x-opt"): 1},
            ),
        ),
        performatives.Detach(handle=0, closed=True, error=err),
        performatives.End(),
        performatives.End(error=err),
        performatives.Close(),
        performatives.Close(error=a.Error(condition="amqp:connection:forced")),
        a.definitions.transactions.Declare(),
        a.definitions.transactions.Declare(global_id=b"gid"),
        a.definitions.transactions.Declared(txn_id=b"\x01"),
        a.definitions.transactions.Discharge(txn_id=b"\x01", fail=True),
        messaging.DeleteOnNoLinks(),
        messaging.DeleteOnNoMessages(),
        messaging.DeleteOnNoLinksOrMessages(),
        performatives.SaslMechanisms(sasl_server_mechanisms=["PLAIN", "ANONYMOUS"]),
        performatives.SaslInit(
            mechanism="PLAIN", initial_response=b"\x00user\x00pass", hostname="h"
        ),
        performatives.SaslChallenge(challenge=b"c"),
        performatives.SaslResponse(response=b"r"),
        performatives.SaslOutcome(code=performatives.SaslCode.AUTH, additional_data=b"no"),
        a.Header(durable=True, priority=9, ttl=1000, first_acquirer=True, delivery_count=2),
        a.Properties(
            message_id=a.codec.ULong(2**40),
            user_id=b"u",
            to="q",
            subject="s",
            reply_to="r",
            correlation_id=uuid.UUID(int=1),
            content_type="text/plain",
            content_encoding="gzip",
            absolute_expiry_time=10**12,
            creation_time=0,
            group_id="g",
            group_sequence=3,
            reply_to_group_id="rg",
        ),
        messaging.DeliveryAnnotations({Symbol("x-opt-d"): 1, 5: "ulong key"}),
        messaging.MessageAnnotations({"x-opt-partition": "p"}),
        messaging.ApplicationProperties({"color": "red", "n": 3}),
        a.Data(b"payload"),
        a.AmqpSequence([1, 2, 3]),
        a.AmqpValue({"k": "v"}),
        messaging.Footer({Symbol("sig"): b"\x00" * 8}),
    ]


def _raw_value_seeds() -> list[bytes]:
    """Hand-made encodings the encoder never writes: wide forms of small values, symbolic and
    8-byte descriptors, zero-width array elements, a nesting ladder."""
    h = bytes.fromhex
    seeds = [
        h("7000000001"),
        h("800000000000000001"),
        h("71ffffffff"),
        h("810000000000000005"),
        h("5601"),
        h("5600"),
        h("b100000003616263"),
        h("b30000000178"),
        h("b00000000100"),
        h("d0000000050000000140"),
        h("d1000000070000000240a100"),
        h("f000000007000000025401 02"),
        h("e00201 40"),
        h("e00201 41"),
        h("e00201 42"),
        h("e00201 43"),
        h("e00201 44"),
        h("e00201 45"),
        h("e00503 005301 40"),
        h("e0060300a1017840"),
        h("e00908 00a30461626364 41"),
        h("00800000000000000077 a10178"),
        h("00a30f616d71703a616d71702d76616c7565 45"),
        h("00a30e616d71703a6f70656e3a6c697374 c00401a10163"),
        h("005310 d00000000700000001a10163"),
        h("0053 10 45"),
        h("0053 24 45"),
        h("005377 40"),
        h("005375 a00101"),
        h("c00100"),
        h("e0 0c 05 00 80 0000000000000001 40"),  # described nulls, long descriptor
        b"\xc0\x03\x01" * 20 + b"\x45",  # a ladder of nested lists (lengths wrong on purpose)
        b"\x00\x53\x77" * 10 + b"\x40",
        h("c1 05 02 a3 01 6b 45"),
        h("c1 09 04 a1 01 6b 40 a3 01 6b 40"),
        h("94" + "00" * 16),
        h("98" + "11" * 16),
        h("73 0010ffff"),
        h("73 0000d800"),
        h("a1 02 c3 28"),
        h("a3 01 80"),
        h("72 7f800001"),
        h("82 7ff0000000000001"),
    ]
    # Nest lists as deep as the default limit allows, then one more.
    for depth in (amqp.codec.DEFAULT_MAX_DEPTH, amqp.codec.DEFAULT_MAX_DEPTH + 1):
        v: Any = []
        for _ in range(depth - 1):
            v = [v]
        seeds.append(amqp.encode(v))
    return seeds


def _messages() -> list[Message]:
    a = amqp
    props = a.Properties(
        message_id="id-1",
        to="queue",
        content_type="application/json",
        creation_time=1_700_000_000_000,
        correlation_id=amqp.codec.ULong(9),
    )
    return [
        Message(body=b"hello"),
        Message(body="a string value"),
        Message(body=None, properties=props),
        Message(body={"k": [1, 2.5, None]}, application_properties={"a": 1, "b": "x"}),
        Message(
            header=a.Header(durable=True, ttl=5000),
            delivery_annotations={Symbol("x-opt-lock"): uuid.UUID(int=7)},
            message_annotations={"x-opt-enqueued-time": a.codec.Timestamp(1), 17: "ulong key"},
            properties=props,
            application_properties={"n": a.codec.UInt(3)},
            body=[a.Data(b"one"), a.Data(b"two"), a.Data(b"")],
            footer={Symbol("hash"): b"\x01\x02"},
        ),
        Message(body=[a.AmqpSequence([1, 2]), a.AmqpSequence(["x"])]),
        Message(body=a.AmqpSequence([])),
        Message(body=a.AmqpValue(None)),
        Message(header=a.Header(), body=b"z" * 400),
        Message(
            properties=a.Properties(message_id=uuid.UUID(int=2), user_id=b"me"),
            body=a.codec.Array(AMQPType.INT, [1, 2, 3]),
        ),
    ]


def _raw_message_seeds() -> list[bytes]:
    h = bytes.fromhex
    return [
        h("0053 70 45") + h("0053 77 40"),
        # symbolic descriptors for properties and data
        h("00a314") + b"amqp:properties:list" + h("45") + h("005375a000"),
        h("00a310") + b"amqp:data:binary" + h("a00178"),
        h("005372c1 0502 a3016b 40") + h("005375 b000000001 61"),
        h("005374 c1 0502 a1016b 41") + h("005376 c00201 40") + h("005376 45"),
        h("005377 a10178") + h("005378 c10100"),
        h("005373 c00201 40") + h("005373 45"),  # repeated properties
        h("005375 a00100") + h("005377 40"),  # mixed body
    ]


def _frames_seeds(messages: Sequence[bytes]) -> list[bytes]:
    a = amqp
    f = a.framing.encode_frame
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
        a.framing.AMQP_HEADER + open_ + session + a.framing.HEARTBEAT + close,
        a.framing.SASL_HEADER
        + b"".join(sasl)
        + a.framing.AMQP_HEADER
        + open_
        + a.framing.HEARTBEAT,
        a.framing.TLS_HEADER,
        a.framing.AMQP_HEADER + bytes(extended) + a.framing.HEARTBEAT * 3,
        open_ + begin + transfers[0],
        a.framing.HEARTBEAT,
        b"".join(transfers),
        b"AMQP\x00\x00\x09\x01",
        b"AMQP\x01\x01\x00\x0a",
        b"GET / HTTP/1.1\r\n",
        b"\x16\x03\x01\x00\xa5\x01\x00\x00",
        a.framing.AMQP_HEADER + b"\x00\x00\x00\x09\x02\x00\x00\x00\x40",  # a null where a body goes
        a.framing.AMQP_HEADER + f(a.Accepted()),  # not a performative
    ]


def seed_corpus() -> dict[str, list[bytes]]:
    """Valid (and a few nearly valid) inputs for each target, so mutation starts from good
    bytes. Deterministic."""
    values = [amqp.encode(v) for v in _values()] + _raw_value_seeds()
    messages = [m.encode() for m in _messages()] + _raw_message_seeds()
    frames = _frames_seeds(messages)
    corpus = {
        "decode": values + messages[:4],
        "message": messages + [amqp.encode(amqp.AmqpValue(v)) for v in _values()[:40]],
        "frames": frames,
        "server": _server_seeds(opened=False),
        "server-opened": _server_seeds(opened=True),
        "sasl-server": _sasl_server_seeds(),
        "sasl-client": _sasl_client_seeds(),
        "selector": _selector_seeds(),
        "amqp091-codec": _amqp091_codec_seeds(),
        "amqp091-frames": _amqp091_seeds(),
        "amqp091-engine": _amqp091_engine_seeds(),
        **{target: list(seeds) for target, seeds in _BROKER_SEEDS.items()},
    }
    return {k: list(dict.fromkeys(v)) for k, v in corpus.items()}


_TOKEN_HEX = (
    "0053 005370 005373 005375 005377 005310 005314 005324 00a3 a000 a100 a300 c00100"
    " c10100 e00100 e0020140 d000000004 d100000004 f000000004 b000000000 ffffffff"
    " 7fffffff 00000008 0000000802000000 0000020002000000 414d5150 414d515000010000"
    " 5601 5602 7000000001 8000000000000000ff 73ffffffff 72ffc00000"
)


def _tokens(corpus: dict[str, list[bytes]]) -> list[bytes]:
    """Snippets to insert: constructors with plausible bodies, described headers, sizes."""
    tokens = [bytes((c,)) for c in b"\x00\x40\x41\x42\x43\x44\x45"]
    tokens += [bytes.fromhex(x) for x in _TOKEN_HEX.split()]
    for entries in corpus.values():
        for e in entries:
            if len(e) <= 24:
                tokens.append(e)
    return list(dict.fromkeys(tokens))


def write_seed_corpus(directory: str | Path) -> dict[str, int]:
    """Write the seed corpus as files (one per input) under ``directory/<target>/``."""
    counts = {}
    for target, entries in seed_corpus().items():
        folder = Path(directory) / target
        folder.mkdir(parents=True, exist_ok=True)
        for data in entries:
            name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
            (folder / name).write_bytes(data)
        counts[target] = len(entries)
    return counts


# ---------------------------------------------------------------------------------------------
# mutation
# ---------------------------------------------------------------------------------------------

_FORMAT_CODES = bytes.fromhex(
    "00 40 41 42 43 44 45 50 51 52 53 54 55 56 60 61 70 71 72 73 74 80 81 82 83 84 94 98"
    " a0 a1 a3 b0 b1 b3 c0 c1 d0 d1 e0 f0 01 57 ff"
)
_INTERESTING8 = bytes.fromhex("00 01 02 03 04 07 08 10 20 3f 40 7f 80 81 fe ff")
_INTERESTING32 = (0, 1, 2, 3, 4, 7, 8, 9, 0xFF, 0x100, 0x1FF, 0x200, 0x7FFF, 0x8000, 0xFFFF)
_INTERESTING32 += (0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF)


#: The edits of :func:`mutate`, each ``edit(buf, at, n, rng, pool, tokens)`` at ``at`` in
#: ``buf`` (``n`` bytes long before the edit).
_Edit = Callable[[bytearray, int, int, random.Random, Sequence[bytes], Sequence[bytes]], None]


def _flip_bit(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] ^= 1 << rng.randrange(8)


def _any_byte(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] = rng.randrange(256)


def _interesting_byte(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] = rng.choice(_INTERESTING8)  # sizes, counts


def _format_code(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at] = rng.choice(_FORMAT_CODES)


def _interesting_32(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """An interesting 32-bit size or count, big-endian."""
    value = rng.choice((*_INTERESTING32, n, n - at, max(0, n - at - 4)))
    buf[at : at + 4] = (value & 0xFFFFFFFF).to_bytes(4, "big")


def _nudge(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """Nudge a byte that may be a length."""
    buf[at] = (buf[at] + rng.choice((-4, -2, -1, 1, 2, 4))) & 0xFF


def _delete_range(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    end = min(n, at + 1 + int(rng.expovariate(0.25)))
    del buf[at:end]


def _duplicate_range(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """Duplicate a range elsewhere."""
    end = min(n, at + 1 + rng.randrange(16))
    buf[rng.randrange(n + 1) : 0] = buf[at:end]


def _truncate(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    del buf[at:]


def _insert_random(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    buf[at:at] = bytes(rng.randrange(256) for _ in range(1 + rng.randrange(8)))


def _insert_token(
    buf: bytearray,
    at: int,
    n: int,
    rng: random.Random,
    pool: Sequence[bytes],
    tokens: Sequence[bytes],
) -> None:
    if not tokens:
        _size_byte(buf, at, n, rng)
        return
    buf[at:at] = rng.choice(tokens)


def _overwrite_token(
    buf: bytearray,
    at: int,
    n: int,
    rng: random.Random,
    pool: Sequence[bytes],
    tokens: Sequence[bytes],
) -> None:
    if not tokens:
        _size_byte(buf, at, n, rng)
        return
    t = rng.choice(tokens)
    buf[at : at + len(t)] = t


def _splice(
    buf: bytearray, at: int, n: int, rng: random.Random, pool: Sequence[bytes], *_: Any
) -> None:
    """Our head, another input's tail."""
    if not pool:
        _size_byte(buf, at, n, rng)
        return
    other = rng.choice(pool)
    cut = rng.randrange(len(other) + 1)
    buf[at:] = other[cut:]


def _insert_piece(
    buf: bytearray, at: int, n: int, rng: random.Random, pool: Sequence[bytes], *_: Any
) -> None:
    """A piece of another input."""
    if not pool:
        _size_byte(buf, at, n, rng)
        return
    other = rng.choice(pool)
    if other:
        s = rng.randrange(len(other))
        buf[at:at] = other[s : s + 1 + rng.randrange(32)]


def _run(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """The same byte repeated (runs of 0x40, 0xff, ...)."""
    buf[at:at] = bytes((rng.choice(_INTERESTING8),)) * (1 + rng.randrange(64))


def _size_byte(buf: bytearray, at: int, n: int, rng: random.Random, *_: Any) -> None:
    """Set a size byte to what is left after it."""
    buf[at] = min(255, max(0, n - at - 1 - rng.randrange(3)))


#: :func:`mutate`'s edits, by the number drawn (the token and pool edits set a size byte
#: when there are no tokens or no pool).
_EDITS: tuple[_Edit, ...] = (
    _flip_bit,
    _any_byte,
    _interesting_byte,
    _format_code,
    _interesting_32,
    _nudge,
    _delete_range,
    _duplicate_range,
    _truncate,
    _insert_random,
    _insert_token,
    _overwrite_token,
    _splice,
    _insert_piece,
    _run,
    _size_byte,
)


def mutate(
    data: bytes,
    rng: random.Random,
    pool: Sequence[bytes] = (),
    tokens: Sequence[bytes] = (),
    max_len: int = MAX_INPUT,
) -> bytes:
    """One to four stacked random edits of ``data`` (AFL-style havoc, AMQP-flavoured)."""
    buf = bytearray(data)
    for _ in range(1 + min(3, int(rng.expovariate(1.0)))):
        n = len(buf)
        op = rng.randrange(16)
        at = rng.randrange(n) if n else 0
        if n == 0 and (op < 9 or op == 15):
            op = 9
        _EDITS[op](buf, at, n, rng, pool, tokens)
    return bytes(buf[:max_len])


# ---------------------------------------------------------------------------------------------
# the bounded runner
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class FuzzStats:
    """What a :func:`run` did."""

    seed: int
    iterations: int = 0
    elapsed: float = 0.0
    executions: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    accepted: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    rejected: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    labels: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    corpus_sizes: dict[str, int] = dataclasses.field(default_factory=dict)
    failures: list[Finding] = dataclasses.field(default_factory=list)
    known: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    known_examples: dict[str, Finding] = dataclasses.field(default_factory=dict)
    slowest: tuple[float, str, bytes] = (0.0, "", b"")

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {self.iterations} iterations in {self.elapsed:.1f}s, "
            f"slowest input {self.slowest[0] * 1000:.1f} ms ({self.slowest[1]})"
        ]
        for t in sorted(self.executions):
            lines.append(
                f"  {t:13} {self.executions[t]:7} runs, {self.accepted[t]:6} decoded, "
                f"{self.rejected[t]:6} rejected, {len(self.labels.get(t, ()))} "
                f"distinct outcomes, corpus {self.corpus_sizes.get(t, 0)}"
            )
        for issue, count in sorted(self.known.items()):
            lines.append(
                f"  known issue {issue}: {count} inputs, e.g. "
                f"{self.known_examples[issue].data.hex()}"
            )
        lines.append(
            f"  NEW FAILURES: {len(self.failures)}" if self.failures else "  no new failures"
        )
        lines += ["  " + f.describe().replace("\n", "\n  ") for f in self.failures[:10]]
        return "\n".join(lines)


def run(
    iterations: int,
    seed: int,
    *,
    targets: Iterable[str] | None = None,
    time_limit: float | None = None,
    corpus: dict[str, list[bytes]] | None = None,
    max_len: int = MAX_INPUT,
    max_pool: int = 3000,
) -> FuzzStats:
    """Mutation-fuzz the targets for ``iterations`` inputs (round robin over the targets).

    Deterministic for a given ``seed`` unless ``time_limit`` (seconds) stops it early.
    Inputs that give an outcome not seen before (a new error message, a new decoded type)
    join the pool that later inputs are mutated from: a cheap stand-in for coverage.
    Failures are collected, one per signature, not raised; those matching a
    :data:`KNOWN_ISSUES` entry are only counted.
    """
    names = list(targets or TARGETS)
    rng = random.Random(seed)
    seeds = corpus if corpus is not None else seed_corpus()
    tokens = _tokens(seeds)
    pools = {t: list(seeds.get(t, ())) or [b""] for t in names}
    # Every target also mutates the others' seeds now and then (a frame payload is a message,
    # a message section is a value).
    everything = [x for t in names for x in pools[t]]
    stats = FuzzStats(seed=seed, labels={t: set() for t in names})
    seen_signatures: set[str] = set()
    start = time.perf_counter()
    for i in range(iterations):
        if time_limit is not None and i % 64 == 0 and time.perf_counter() - start > time_limit:
            break
        target = names[i % len(names)]
        pool = pools[target]
        parent = rng.choice(pool) if rng.random() < 0.9 else rng.choice(everything)
        data = mutate(parent, rng, pool, tokens, max_len)
        t0 = time.perf_counter()
        label, finding = execute(target, data)
        took = time.perf_counter() - t0
        stats.iterations += 1
        stats.executions[target] += 1
        if took > stats.slowest[0]:
            stats.slowest = (took, target, data)
        if took > SLOW_SECONDS and finding is None:
            finding = Finding(target, data, TimeoutError(f"one input took {took:.2f}s"))
        if finding is not None:
            if finding.issue is not None:
                stats.known[finding.issue] += 1
                stats.known_examples.setdefault(finding.issue, finding)
            elif finding.signature not in seen_signatures:
                seen_signatures.add(finding.signature)
                stats.failures.append(finding)
            continue
        if label.startswith("ok"):
            stats.accepted[target] += 1
        else:
            stats.rejected[target] += 1
        labels = stats.labels[target]
        if label not in labels or (label.startswith("ok") and rng.random() < 0.05):
            labels.add(label)
            if len(pool) < max_pool:
                pool.append(data)
            else:
                pool[rng.randrange(len(seeds.get(target, ())) or 1, max_pool)] = data
    stats.elapsed = time.perf_counter() - start
    stats.corpus_sizes = {t: len(p) for t, p in pools.items()}
    return stats


# ---------------------------------------------------------------------------------------------
# triage helpers
# ---------------------------------------------------------------------------------------------


def minimize(target: str, data: bytes, *, budget: int = 20000) -> bytes:
    """Shrink a failing input while it still fails with the same signature."""
    _, first = execute(target, data)
    if first is None:
        raise ValueError("the input does not fail")
    want = first.signature

    def fails(candidate: bytes) -> bool:
        _, f = execute(target, candidate)
        return f is not None and f.signature == want

    best = data
    tries = 0
    chunk = max(1, len(best) // 2)
    while chunk >= 1 and tries < budget:
        i = 0
        progressed = False
        while i < len(best) and tries < budget:
            candidate = best[:i] + best[i + chunk :]
            tries += 1
            if candidate and fails(candidate):
                best = candidate
                progressed = True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    for i in range(len(best)):  # simplify the bytes that are left
        for b in (0x00, 0x40):
            if best[i] != b and tries < budget:
                candidate = best[:i] + bytes((b,)) + best[i + 1 :]
                tries += 1
                if fails(candidate):
                    best = candidate
                    break
    return best


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fuzz.harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="pure-Python mutation fuzzing")
    p_run.add_argument("--iterations", type=int, default=100_000)
    p_run.add_argument("--seed", type=int, default=None, help="default: random")
    p_run.add_argument("--time-limit", type=float, default=None, help="seconds")
    p_run.add_argument("--targets", default=",".join(TARGETS))
    p_run.add_argument(
        "--save",
        default="fuzz/corpus/crashes",
        help="directory for failing inputs (default: %(default)s)",
    )
    p_run.add_argument(
        "--include-known", action="store_true", help="save inputs that match known issues too"
    )
    p_seeds = sub.add_parser("seeds", help="write the seed corpus to a directory")
    p_seeds.add_argument("--out", default="fuzz/corpus")
    p_replay = sub.add_parser("replay", help="run one target on input files")
    p_replay.add_argument("--target", required=True, choices=sorted(TARGETS))
    p_replay.add_argument("files", nargs="+")
    p_min = sub.add_parser("minimize", help="shrink a failing input")
    p_min.add_argument("--target", required=True, choices=sorted(TARGETS))
    p_min.add_argument("file")
    p_min.add_argument("--out", default=None, help="default: FILE.min")
    args = parser.parse_args(argv)

    if args.command == "seeds":
        counts = write_seed_corpus(args.out)
        print(", ".join(f"{t}: {n}" for t, n in counts.items()), "seeds written to", args.out)
        return 0
    if args.command == "replay":
        status = 0
        for name in args.files:
            label, finding = execute(args.target, Path(name).read_bytes())
            if finding is None:
                print(f"{name}: ok ({label})")
            else:
                status = 1
                known = f" [known issue {finding.issue}]" if finding.issue else ""
                print(f"{name}: FAIL{known}\n  {finding.describe()}")
        return status
    if args.command == "minimize":
        small = minimize(args.target, Path(args.file).read_bytes())
        out = args.out or args.file + ".min"
        Path(out).write_bytes(small)
        print(f"{len(small)} bytes: {small.hex()} -> {out}")
        return 0
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    stats = run(args.iterations, seed, targets=args.targets.split(","), time_limit=args.time_limit)
    print(stats.summary())
    found = list(stats.failures)
    if args.include_known:
        found += list(stats.known_examples.values())
    if found:
        folder = Path(args.save)
        folder.mkdir(parents=True, exist_ok=True)
        for f in found:
            path = folder / f"{f.target}-{hashlib.sha1(f.data).hexdigest()[:16]}.bin"
            path.write_bytes(f.data)
            print("saved", path)
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(_main())
