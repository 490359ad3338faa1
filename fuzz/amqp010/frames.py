"""The AMQP 0-10 frame parser's target, ``amqp010-frames``, and its seeds.

An :class:`amqp_sansio.framing.amqp010.AssemblyParser` (max-frame-size
:data:`fuzz.common.FRAME_MAX`) is fed the bytes whole and then in chunks. The invariant: both
give the same assemblies (those returned and those a ``FramingError`` carries) and the same
error class; every error is the 0-10 ``FramingError`` with close-code 501; every assembly
re-encodes (:func:`~amqp_sansio.framing.amqp010.encode_assembly`), and those frames parse
back to exactly that assembly.

The seeds (:func:`frame_seeds`) are controls and commands with header and body segments,
cut at small and large frame sizes, empty segments, and channels interleaved.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from amqp_sansio.framing import amqp010

from ..common import FRAME_MAX, REMOTE_ERRORS, InvariantViolation, chunk_sizes, label_error

__all__ = ["frame_seeds", "fuzz_amqp010_frames", "seeds"]

TARGET = "amqp010-frames"


def _parse(
    data: bytes, sizes: Iterable[int]
) -> tuple[list[amqp010.Assembly], BaseException | None]:
    """The assemblies of ``data`` fed in chunks of ``sizes``, and the error that stopped the
    parser (with the assemblies it carries counted in)."""
    parser = amqp010.AssemblyParser(FRAME_MAX)
    out: list[amqp010.Assembly] = []
    fed = 0
    chunks = iter(sizes)
    try:
        while fed < len(data):
            step = max(1, next(chunks, len(data)))
            out += parser.feed(data[fed : fed + step])
            fed += step
    except REMOTE_ERRORS as exc:
        if not isinstance(exc, amqp010.FramingError) or exc.reply_code != 501:
            raise InvariantViolation(
                TARGET, "reply-code", f"{exc!r} is not a 0-10 FramingError with code 501"
            ) from exc
        return out + list(exc.assemblies), exc
    return out, None


def _encode(assembly: amqp010.Assembly) -> bytes:
    segments = [(segment.type, segment.payload) for segment in assembly.segments]
    return b"".join(amqp010.encode_assembly(assembly.channel, assembly.track, segments, FRAME_MAX))


def fuzz_amqp010_frames(data: bytes, *, chunks: Sequence[int] | None = None) -> str:
    """Target ``amqp010-frames``: an AMQP 0-10 ``AssemblyParser`` (max-frame-size 8192) fed
    the bytes whole and in chunks: the same assemblies and the same error both ways; every
    assembly re-encodes and parses back to itself."""
    assemblies, error = _parse(data, [len(data)])
    again, error2 = _parse(data, chunk_sizes(data) if chunks is None else chunks)
    if assemblies != again or type(error) is not type(error2):
        raise InvariantViolation(
            TARGET,
            "chunking",
            f"feeding in chunks changed the result: {assemblies!r:.300} / {error!r} then "
            f"{again!r:.300} / {error2!r}",
        )
    for assembly in assemblies:
        try:
            encoded = _encode(assembly)
        except Exception as exc:
            raise InvariantViolation(
                TARGET, "encode", f"{assembly!r:.200} does not encode: {exc!r}", value=assembly
            ) from exc
        reparsed, problem = _parse(encoded, [len(encoded)])
        if problem is not None or reparsed != [assembly]:
            raise InvariantViolation(
                TARGET,
                "unstable",
                f"re-encoded {assembly!r:.200} parses as {reparsed!r:.200} / {problem!r}",
                value=assembly,
                encoded=encoded,
            )
    kinds = ",".join(
        "/".join(segment.type.name.lower() for segment in a.segments) for a in assemblies[:4]
    )
    if error is not None:
        return f"{label_error(error)}|{kinds}"
    return f"ok:{kinds}"


def frame_seeds() -> list[bytes]:
    """Streams of 0-10 frames: a control, commands with header and body cut at several frame
    sizes, empty segments, two channels interleaved."""
    control, command, header, body = amqp010.SegmentType
    frames = amqp010.encode_assembly
    start_ok = frames(0, 0, [(control, b"\x01\x02\x07\x00" + b"PLAIN\x00guest")], 4096)
    transfer = frames(
        1,
        1,
        [
            (command, b"\x04\x01\x01\x00\x03amq"),
            (header, b"\x00\x00\x00\x08" + bytes(8)),
            (body, bytes(range(256)) * 3),
        ],
        100,
    )
    declare = frames(2, 1, [(command, b"\x08\x01\x01\x00\x01q")], 40)
    empty = frames(3, 1, [(command, b""), (header, b""), (body, b"")], FRAME_MAX)
    heartbeat = frames(0, 0, [(control, b"\x01\x09")], FRAME_MAX)
    interleaved = [f for pair in zip(transfer, declare * len(transfer), strict=True) for f in pair]
    return [
        b"".join(start_ok + transfer + heartbeat),
        b"".join(declare + empty),
        b"".join(interleaved),
        b"".join(frames(5, 1, [(command, b"c"), (body, b"x" * 20000)], FRAME_MAX)),
        *start_ok,
        *empty,
    ]


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``amqp010-frames`` (deterministic)."""
    return {TARGET: frame_seeds()}
