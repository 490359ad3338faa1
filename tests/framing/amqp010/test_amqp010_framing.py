"""AMQP 0-10 framing (0-10 spec 4.4): assemblies written and parsed, fed whole, byte by
byte and in random chunks; channels interleaved; max-frame-size and max-assembly-size; a
catalogue of hostile frames, each a FramingError with close-code 501; arbitrary bytes give
assemblies or FramingError only; and qpid-python's framing cross-checked both ways."""

from __future__ import annotations

import struct
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.qpid_peer import qpid_module

from amqp_sansio import errors
from amqp_sansio.framing import amqp010 as framing
from amqp_sansio.framing.amqp010 import Assembly, Segment, SegmentType, Track
from amqp_sansio.framing.headers import name_of

CONTROL, COMMAND, HEADER, BODY = SegmentType
FF, LF, FS, LS = (
    framing.FIRST_FRAME,
    framing.LAST_FRAME,
    framing.FIRST_SEGMENT,
    framing.LAST_SEGMENT,
)
WHOLE = FF | LF | FS | LS


def frame(
    flags: int,
    stype: int,
    track: int,
    channel: int,
    payload: bytes = b"",
    *,
    size: int | None = None,
    reserved: int = 0,
    reserved4: int = 0,
) -> bytes:
    """A hand-made frame; any field may be wrong."""
    size = len(payload) + 12 if size is None else size
    return (
        struct.pack(">BBHBBHI", flags, stype, size, reserved, track, channel, reserved4) + payload
    )


def parse(data: bytes, sizes: Sequence[int] | None = None, /, **kwargs: int) -> list[Assembly]:
    """The assemblies of ``data`` fed in chunks of ``sizes`` (cycled; whole when None)."""
    parser = framing.AssemblyParser(**kwargs)
    out: list[Assembly] = []
    steps = list(sizes) if sizes else [max(1, len(data))]
    at = 0
    index = 0
    while at < len(data):
        step = steps[index % len(steps)]
        out += parser.feed(data[at : at + step])
        at += step
        index += 1
    return out


def parse_all_ways(data: bytes, **kwargs: int) -> list[Assembly]:
    """Whole, byte by byte, and in uneven chunks: the same assemblies each way."""
    whole = parse(data, **kwargs)
    assert parse(data, [1], **kwargs) == whole
    assert parse(data, [5, 1, 13, 2], **kwargs) == whole
    return whole


def error_all_ways(data: bytes, **kwargs: int) -> framing.FramingError:
    """The FramingError ``data`` raises, whole and byte by byte (the same message)."""
    with pytest.raises(framing.FramingError) as whole:
        parse(data, **kwargs)
    with pytest.raises(framing.FramingError) as bytewise:
        parse(data, [1], **kwargs)
    assert str(whole.value) == str(bytewise.value)
    assert whole.value.reply_code == 501
    assert isinstance(whole.value, errors.FramingError)
    return whole.value


def encode(assembly: Assembly, max_frame_size: int) -> bytes:
    segments = [(s.type, s.payload) for s in assembly.segments]
    return b"".join(
        framing.encode_assembly(assembly.channel, assembly.track, segments, max_frame_size)
    )


# -- the protocol header and the constants ---------------------------------------------------


def test_protocol_header_is_named_by_the_shared_table() -> None:
    assert framing.PROTOCOL_HEADER == b"AMQP\x01\x01\x00\x0a"
    assert name_of(framing.PROTOCOL_HEADER) == "AMQP 0-10"
    assert framing.HEADER_SIZE == 12
    assert [int(t) for t in SegmentType] == [0, 1, 2, 3]
    assert (Track.CONTROL, Track.COMMAND) == (0, 1)


# -- the writer ------------------------------------------------------------------------------


def test_a_control_assembly_is_one_frame_with_every_flag() -> None:
    frames = framing.encode_assembly(0, Track.CONTROL, [(CONTROL, b"\x01\x04")], 4096)
    assert frames == [bytes([0x0F, 0, 0, 14, 0, 0, 0, 0, 0, 0, 0, 0, 1, 4])]


def test_a_command_assembly_is_cut_at_max_frame_size() -> None:
    body = bytes(range(40))
    frames = framing.encode_assembly(
        7, Track.COMMAND, [(COMMAND, b"cmd"), (HEADER, b""), (BODY, body)], 12 + 16
    )
    assert frames == [
        frame(FS | FF | LF, COMMAND, 1, 7, b"cmd"),
        frame(FF | LF, HEADER, 1, 7),
        frame(LS | FF, BODY, 1, 7, body[:16]),
        frame(LS, BODY, 1, 7, body[16:32]),
        frame(LS | LF, BODY, 1, 7, body[32:]),
    ]
    assert all(len(f) <= 28 for f in frames)


def test_a_segment_that_fills_frames_exactly_ends_on_a_full_frame() -> None:
    frames = framing.encode_assembly(1, 1, [(COMMAND, b"x" * 32)], 28)
    assert [len(f) for f in frames] == [28, 28]
    assert [f[0] for f in frames] == [FS | LS | FF, FS | LS | LF]


@pytest.mark.parametrize(
    ("channel", "track", "segments", "max_frame_size"),
    [
        (-1, 0, [(CONTROL, b"")], 4096),
        (65536, 0, [(CONTROL, b"")], 4096),
        (0, 0, [(CONTROL, b"")], 12),
        (0, 0, [(CONTROL, b"")], 65536),
        (0, 0, [], 4096),
        (0, 2, [(CONTROL, b"")], 4096),
        (0, 0, [(COMMAND, b"")], 4096),
        (0, 1, [(CONTROL, b"")], 4096),
        (0, 0, [(CONTROL, b""), (CONTROL, b"")], 4096),
        (0, 1, [(COMMAND, b""), (BODY, b""), (HEADER, b"")], 4096),
        (0, 1, [(COMMAND, b""), (HEADER, b""), (HEADER, b"")], 4096),
        (0, 1, [(HEADER, b"")], 4096),
    ],
)
def test_the_writer_refuses_what_is_no_assembly(
    channel: int, track: int, segments: list[tuple[SegmentType, bytes]], max_frame_size: int
) -> None:
    with pytest.raises(errors.EncodeError):
        framing.encode_assembly(channel, track, segments, max_frame_size)


# -- the parser: good streams ------------------------------------------------------------------


def test_a_control_a_command_with_content_and_empty_segments() -> None:
    wire = (
        frame(WHOLE, CONTROL, 0, 0, b"\x01\x01")
        + frame(FS | FF, COMMAND, 1, 1, b"ab")
        + frame(FS, COMMAND, 1, 1, b"cd")
        + frame(FS | LF, COMMAND, 1, 1, b"e")
        + frame(FF | LF, HEADER, 1, 1)
        + frame(LS | FF | LF, BODY, 1, 1)
        + frame(FS | LS | FF | LF, COMMAND, 1, 2)
    )
    assert parse_all_ways(wire) == [
        Assembly(0, 0, (Segment(CONTROL, b"\x01\x01"),)),
        Assembly(1, 1, (Segment(COMMAND, b"abcde"), Segment(HEADER, b""), Segment(BODY, b""))),
        Assembly(2, 1, (Segment(COMMAND, b""),)),
    ]


def test_channels_and_tracks_interleave() -> None:
    wire = (
        frame(FS | FF, COMMAND, 1, 1, b"a")
        + frame(FS | FF, COMMAND, 1, 2, b"x")
        + frame(WHOLE, CONTROL, 0, 1, b"c")
        + frame(FS | LF, COMMAND, 1, 2, b"y")
        + frame(FS | LF, COMMAND, 1, 1, b"b")
        + frame(LS | FF | LF, BODY, 1, 2, b"z")
        + frame(LS | FF | LF, BODY, 1, 1, b"B")
    )
    assert parse_all_ways(wire) == [
        Assembly(1, 0, (Segment(CONTROL, b"c"),)),
        Assembly(2, 1, (Segment(COMMAND, b"xy"), Segment(BODY, b"z"))),
        Assembly(1, 1, (Segment(COMMAND, b"ab"), Segment(BODY, b"B"))),
    ]


def test_a_partial_frame_waits_for_its_body() -> None:
    parser = framing.AssemblyParser()
    wire = frame(WHOLE, CONTROL, 0, 5, b"hello")
    assert parser.feed(wire[:13]) == []
    assert parser.feed(wire[13:] + wire[:3]) == [Assembly(5, 0, (Segment(CONTROL, b"hello"),))]
    assert parser.feed(wire[3:]) == [Assembly(5, 0, (Segment(CONTROL, b"hello"),))]
    assert parser.feed(b"") == []


def test_max_frame_size_is_set_after_tune() -> None:
    parser = framing.AssemblyParser()
    assert parser.max_frame_size == framing.DEFAULT_MAX_FRAME_SIZE == 65535
    big = frame(WHOLE, CONTROL, 0, 0, b"x" * 5000)
    assert len(parser.feed(big)) == 1
    parser.set_max_frame_size(4096)
    assert parser.max_frame_size == 4096
    with pytest.raises(framing.FramingError, match="frame size 5012"):
        parser.feed(big[:12])
    for bad in (4095, 65536):
        with pytest.raises(errors.LocalProtocolError):
            parser.max_frame_size = bad
        with pytest.raises(errors.LocalProtocolError):
            framing.AssemblyParser(max_frame_size=bad)
    with pytest.raises(errors.LocalProtocolError):
        framing.AssemblyParser(max_assembly_size=-1)


def test_max_assembly_size_counts_every_segment() -> None:
    wire = frame(FS | FF | LF, COMMAND, 1, 0, b"x" * 6) + frame(LS | FF | LF, BODY, 1, 0, b"y" * 4)
    assert len(parse_all_ways(wire, max_assembly_size=10)) == 1
    error = error_all_ways(wire, max_assembly_size=9)
    assert "max-assembly-size 9" in str(error)


# -- the parser: hostile frames ----------------------------------------------------------------

HOSTILE = {
    "version": frame(0x40 | WHOLE, CONTROL, 0, 0),
    "version 2": frame(0x80 | WHOLE, CONTROL, 0, 0),
    "reserved flag bit": frame(0x10 | WHOLE, CONTROL, 0, 0),
    "reserved flag bit 2": frame(0x20 | WHOLE, CONTROL, 0, 0),
    "reserved octet 4": frame(WHOLE, CONTROL, 0, 0, reserved=1),
    "reserved track bits": frame(WHOLE, CONTROL, 0x10, 0),
    "reserved last octets": frame(WHOLE, CONTROL, 0, 0, reserved4=1),
    "size below header": frame(WHOLE, CONTROL, 0, 0, size=11),
    "size zero": frame(WHOLE, CONTROL, 0, 0, size=0),
    "unknown segment type": frame(WHOLE, 4, 1, 0),
    "segment type 255": frame(WHOLE, 255, 1, 0),
    "unknown track": frame(WHOLE, CONTROL, 2, 0),
    "no first-frame": frame(FS | LS | LF, CONTROL, 0, 0),
    "no first-segment": frame(LS | FF | LF, CONTROL, 0, 0),
    "first-segment twice": frame(FS | FF | LF, COMMAND, 1, 0) + frame(WHOLE, BODY, 1, 0),
    "header first": frame(WHOLE, HEADER, 1, 0),
    "body first": frame(WHOLE, BODY, 1, 0),
    "control on the command track": frame(WHOLE, CONTROL, 1, 0),
    "command on the control track": frame(WHOLE, COMMAND, 0, 0),
    "body on the control track": frame(WHOLE, BODY, 0, 0),
    "control continued": frame(FS | FF | LF, CONTROL, 0, 0),
    "body continued": frame(FS | FF | LF, COMMAND, 1, 0) + frame(FF | LF, BODY, 1, 0),
    "header after header": frame(FS | FF | LF, COMMAND, 1, 0)
    + frame(FF | LF, HEADER, 1, 0)
    + frame(LS | FF | LF, HEADER, 1, 0),
    "command after command": frame(FS | FF | LF, COMMAND, 1, 0)
    + frame(LS | FF | LF, COMMAND, 1, 0),
    "first-frame inside a segment": frame(FS | LS | FF, COMMAND, 1, 0)
    + frame(WHOLE, COMMAND, 1, 0),
    "type changes inside a segment": frame(FS | LS | FF, COMMAND, 1, 0)
    + frame(FS | LS | LF, BODY, 1, 0),
    "segment flags change inside a segment": frame(FS | FF, COMMAND, 1, 0)
    + frame(FS | LS | LF, COMMAND, 1, 0),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_frames_are_framing_errors(name: str) -> None:
    error_all_ways(HOSTILE[name])


def test_an_oversized_frame_is_refused_from_its_header_alone() -> None:
    parser = framing.AssemblyParser(max_frame_size=4096)
    with pytest.raises(framing.FramingError, match="frame size 4097"):
        parser.feed(frame(WHOLE, CONTROL, 0, 0, size=4097))
    error_all_ways(frame(WHOLE, CONTROL, 0, 0, b"x" * 4085), max_frame_size=4096)


def test_an_error_keeps_what_came_before_and_sticks() -> None:
    good = frame(WHOLE, CONTROL, 0, 3, b"ok")
    parser = framing.AssemblyParser()
    with pytest.raises(framing.FramingError) as caught:
        parser.feed(good + HOSTILE["version"])
    assert caught.value.assemblies == (Assembly(3, 0, (Segment(CONTROL, b"ok"),)),)
    with pytest.raises(framing.FramingError) as again:
        parser.feed(good)
    assert again.value is caught.value


# -- properties -------------------------------------------------------------------------------

payloads = st.binary(max_size=300)


@st.composite
def assemblies(draw: st.DrawFn, channel: int | None = None) -> Assembly:
    chan = draw(st.integers(0, 65535)) if channel is None else channel
    if draw(st.booleans()):
        return Assembly(chan, 0, (Segment(CONTROL, draw(payloads)),))
    segments = [Segment(COMMAND, draw(payloads))]
    if draw(st.booleans()):
        segments.append(Segment(HEADER, draw(payloads)))
    if draw(st.booleans()):
        segments.append(Segment(BODY, draw(payloads)))
    return Assembly(chan, 1, tuple(segments))


chunkings = st.lists(st.integers(1, 64), min_size=1, max_size=8)


@given(st.lists(assemblies(), max_size=6), st.integers(13, 400), chunkings)
@settings(max_examples=300, deadline=None)
def test_round_trip_across_frame_sizes(
    sent: list[Assembly], max_frame_size: int, sizes: list[int]
) -> None:
    wire = b"".join(encode(a, max_frame_size) for a in sent)
    assert parse(wire) == sent
    assert parse(wire, sizes) == sent


@given(st.data(), st.integers(13, 100))
@settings(max_examples=200, deadline=None)
def test_interleaved_channels_round_trip(data: st.DataObject, max_frame_size: int) -> None:
    channels = data.draw(st.lists(st.integers(0, 65535), min_size=1, max_size=4, unique=True))
    sent = {c: data.draw(st.lists(assemblies(channel=c), max_size=3)) for c in channels}
    queues = {
        c: [f for a in sent[c] for f in framing.encode_assembly(
            c, a.track, [(s.type, s.payload) for s in a.segments], max_frame_size
        )]
        for c in channels
    }  # fmt: skip
    wire = []
    while any(queues.values()):
        c = data.draw(st.sampled_from([c for c in channels if queues[c]]))
        wire.append(queues[c].pop(0))
    got = parse(b"".join(wire), data.draw(chunkings))
    for c in channels:
        # one track per channel's assemblies need not finish in order across tracks
        for track in (0, 1):
            assert [a for a in got if a.channel == c and a.track == track] == [
                a for a in sent[c] if a.track == track
            ]
    assert len(got) == sum(len(v) for v in sent.values())


def outcome(data: bytes, sizes: Sequence[int]) -> tuple[list[Assembly], str | None]:
    """Every assembly ``data`` gives fed in chunks of ``sizes`` (those a FramingError carries
    counted in), and the error's message."""
    parser = framing.AssemblyParser(max_frame_size=4096)
    out: list[Assembly] = []
    at = 0
    try:
        for step in sizes:
            out += parser.feed(data[at : at + step])
            at += step
        out += parser.feed(data[at:])
    except framing.FramingError as exc:
        assert exc.reply_code == 501
        return out + list(exc.assemblies), exc.description
    return out, None


@given(st.binary(max_size=400), chunkings)
@settings(max_examples=500, deadline=None)
def test_arbitrary_bytes_give_assemblies_or_framing_error(data: bytes, sizes: list[int]) -> None:
    assert outcome(data, sizes * len(data)) == outcome(data, [])


@given(st.sampled_from(sorted(HOSTILE)), chunkings)
def test_hostile_frames_in_random_chunks(name: str, sizes: list[int]) -> None:
    data = HOSTILE[name]
    whole = outcome(data, [])
    assert whole[1] is not None
    assert outcome(data, sizes * len(data)) == whole


@given(st.binary(min_size=1, max_size=60))
@settings(max_examples=300, deadline=None)
def test_framed_garbage_is_parsed_or_refused(payload: bytes) -> None:
    """Valid sizes, every other header octet from the data: the checks behind the size."""
    head = (payload[:12] + bytes(12))[:12]
    data = head[:2] + struct.pack(">H", 12 + len(payload)) + head[4:] + payload
    try:
        got = parse_all_ways(data)
    except framing.FramingError as exc:
        assert exc.reply_code == 501
    else:
        assert all(encode(a, 4096) == data for a in got)


# -- cross-checks with qpid-python's framing ---------------------------------------------------


def qpid_frames_of(wire: bytes) -> list[tuple[int, int, int, int, int, bytes]]:
    qpid = qpid_module("qpid.framing")
    decoder = qpid.FrameDecoder()
    decoder.write(wire)
    segments = qpid.SegmentDecoder()
    segments.write(*decoder.read())
    return [
        (s.channel, s.track, s.type, int(s.first), int(s.last), bytes(s.payload))
        for s in segments.read()
    ]


@given(st.lists(assemblies(), max_size=5), st.integers(13, 300))
@settings(max_examples=200, deadline=None)
def test_qpid_reads_what_we_write(sent: list[Assembly], max_frame_size: int) -> None:
    wire = b"".join(encode(a, max_frame_size) for a in sent)
    expected = [
        (a.channel, a.track, s.type, int(i == 0), int(i == len(a.segments) - 1), s.payload)
        for a in sent
        for i, s in enumerate(a.segments)
    ]
    assert qpid_frames_of(wire) == expected


@given(st.lists(assemblies(), max_size=5), st.integers(1, 300), chunkings)
@settings(max_examples=200, deadline=None)
def test_we_read_what_qpid_writes(sent: list[Assembly], max_payload: int, sizes: list[int]) -> None:
    qpid = qpid_module("qpid.framing")
    segments = qpid.SegmentEncoder(max_payload)
    for a in sent:
        last = len(a.segments) - 1
        segments.write(*[
            qpid.Segment(i == 0, i == last, s.type, a.track, a.channel, s.payload)
            for i, s in enumerate(a.segments)
        ])  # fmt: skip
    frames = qpid.FrameEncoder()
    frames.write(*segments.read())
    wire = frames.read()
    assert parse(wire, sizes) == sent
    # and our writer cuts as qpid does: the same octets
    assert wire == b"".join(encode(a, max_payload + 12) for a in sent)
