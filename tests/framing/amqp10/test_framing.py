"""Protocol headers and frames (core spec 2.2, 2.3), through public bytes: whole, byte by
byte and in random chunks."""

from __future__ import annotations

import random

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import amqp_sansio as a
import amqp_sansio.framing.amqp10
from amqp_sansio.definitions.amqp10 import performatives


def _frames() -> list[bytes]:
    return [
        a.framing.amqp10.encode_frame(
            performatives.Open(container_id="c1", max_frame_size=65536, hostname="h")
        ),
        a.framing.amqp10.encode_frame(
            performatives.Begin(next_outgoing_id=0, incoming_window=100, outgoing_window=100),
            channel=3,
        ),
        a.framing.amqp10.HEARTBEAT,
        a.framing.amqp10.encode_frame(
            performatives.Transfer(handle=0, delivery_id=7, delivery_tag=b"t", more=False),
            channel=3,
            payload=a.Message(body=b"x" * 300).encode(),
        ),
        a.framing.amqp10.encode_frame(
            performatives.Close(error=a.Error(condition="amqp:internal-error", description="bye"))
        ),
    ]


def _parse_all(parser: a.framing.amqp10.FrameParser) -> list[a.framing.amqp10.Frame]:
    out = []
    while (frame := parser.next_frame()) is not None:
        out.append(frame)
    return out


def _expected() -> list[a.framing.amqp10.Frame]:
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(b"".join(_frames()))
    return _parse_all(parser)


def test_frames_parse_whole() -> None:
    frames = _expected()
    assert [type(f.body).__name__ for f in frames] == [
        "Open",
        "Begin",
        "NoneType",
        "Transfer",
        "Close",
    ]
    assert frames[1].channel == 3
    assert frames[2].is_heartbeat
    assert a.Message.decode(frames[3].payload).body == a.Data(b"x" * 300)
    assert frames[4].body.error.description == "bye"
    assert all(f.type is a.framing.amqp10.FrameType.AMQP for f in frames)


def test_frames_parse_byte_by_byte() -> None:
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    got = []
    for b in b"".join(_frames()):
        parser.feed(bytes([b]))
        got += _parse_all(parser)
    assert got == _expected()
    assert parser.buffered == 0


@settings(max_examples=100, deadline=None)
@given(st.randoms(use_true_random=False))
def test_frames_parse_in_random_chunks(rnd: random.Random) -> None:
    data = a.framing.amqp10.AMQP_HEADER + b"".join(_frames())
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    got: list[object] = []
    header_seen = False
    i = 0
    while i < len(data):
        n = rnd.randint(1, 64)
        parser.feed(data[i : i + n])
        i += n
        if not header_seen:
            header = parser.next_protocol_header()
            if header is None:
                continue
            assert header == a.framing.amqp10.ProtocolHeader(a.framing.amqp10.ProtocolId.AMQP)
            header_seen = True
        got += _parse_all(parser)
    assert got == _expected()


def test_buffer_stays_bounded_when_fed_byte_by_byte() -> None:
    """Compaction keeps the buffer near one frame: no quadratic growth or copying."""
    frame = a.framing.amqp10.encode_frame(
        performatives.Flow(incoming_window=1, next_outgoing_id=2, outgoing_window=3)
    )
    parser = a.framing.amqp10.FrameParser()
    largest = 0
    for _ in range(500):
        for b in frame:
            parser.feed(bytes([b]))
            largest = max(largest, parser.buffered)
            parser.next_frame()
    assert largest <= len(frame)
    assert parser.buffered == 0


@pytest.mark.parametrize(
    "header, pid",
    [
        (a.framing.amqp10.AMQP_HEADER, a.framing.amqp10.ProtocolId.AMQP),
        (a.framing.amqp10.TLS_HEADER, a.framing.amqp10.ProtocolId.TLS),
        (a.framing.amqp10.SASL_HEADER, a.framing.amqp10.ProtocolId.SASL),
    ],
)
def test_protocol_headers(header: bytes, pid: a.framing.amqp10.ProtocolId) -> None:
    assert a.framing.amqp10.ProtocolHeader.parse(header).protocol_id is pid
    assert a.framing.amqp10.ProtocolHeader(pid).to_bytes() == header
    parser = a.framing.amqp10.FrameParser()
    for b in header[:-1]:
        parser.feed(bytes([b]))
        assert parser.next_protocol_header() is None
    parser.feed(header[-1:])
    assert parser.next_protocol_header() == a.framing.amqp10.ProtocolHeader(pid)


@pytest.mark.parametrize(
    "header, name",
    [
        (b"AMQP\x00\x00\x09\x01", "AMQP 0-9-1"),
        (b"AMQP\x01\x01\x00\x0a", "AMQP 0-10"),
        (b"AMQP\x01\x01\x00\x09", "AMQP 0-9"),
        (b"AMQP\x00\x02\x00\x00", "AMQP protocol id 0 version 2.0.0"),
        (b"AMQP\x04\x01\x00\x00", "AMQP protocol id 4 version 1.0.0"),
        (b"GET / HTTP/1.1", "HTTP"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01", "a TLS handshake without the AMQP TLS header"),
    ],
)
def test_other_protocols_are_named(header: bytes, name: str) -> None:
    parser = a.framing.amqp10.FrameParser()
    parser.feed(header)
    with pytest.raises(a.errors.UnsupportedProtocolError) as info:
        parser.next_protocol_header()
    assert info.value.version_name == name
    assert info.value.condition == "amqp:connection:framing-error"
    assert isinstance(info.value, a.RemoteProtocolError)


def test_non_amqp_is_refused_before_eight_bytes() -> None:
    parser = a.framing.amqp10.FrameParser()
    parser.feed(b"GE")
    with pytest.raises(a.errors.UnsupportedProtocolError) as info:
        parser.next_protocol_header()
    assert info.value.header == b"GE"  # what the peer sent, not padded


def test_framing_error_offsets_are_stream_offsets() -> None:
    good = a.framing.amqp10.encode_frame(performatives.End())
    data = a.framing.amqp10.AMQP_HEADER + good * 3 + b"\x00\x00\x00\x08\x01\x00\x00\x00"
    for chunk in (1, 3, 7, len(data)):
        parser = a.framing.amqp10.FrameParser()
        header = None
        offset = None
        for i in range(0, len(data), chunk):
            parser.feed(data[i : i + chunk])
            if header is None:
                header = parser.next_protocol_header()
                if header is None:
                    continue
            try:
                while parser.next_frame() is not None:
                    pass
            except a.errors.FramingError as exc:
                offset = exc.offset
                break
        assert offset == 8 + 3 * len(good), chunk


def test_size_checked_from_the_header_before_the_body_is_buffered() -> None:
    parser = a.framing.amqp10.FrameParser(max_frame_size=4096)
    parser.feed(b"\x7f\xff\xff\xff")  # claims a 2 GiB frame; nothing else has arrived
    with pytest.raises(a.errors.FramingError, match="exceeds max-frame-size"):
        parser.next_frame()


def test_default_limit_before_open_is_512() -> None:
    parser = a.framing.amqp10.FrameParser()
    assert parser.max_frame_size == a.framing.amqp10.MIN_MAX_FRAME_SIZE == 512
    parser.feed((513).to_bytes(4, "big"))
    with pytest.raises(a.errors.FramingError):
        parser.next_frame()


@pytest.mark.parametrize(
    "raw, match",
    [
        (b"\x00\x00\x00\x07\x02\x00\x00\x00", "below the minimum of 8"),
        (b"\x00\x00\x00\x08\x01\x00\x00\x00", "data offset 1"),
        (b"\x00\x00\x00\x08\x03\x00\x00\x00", "beyond the frame"),
        (b"\x00\x00\x00\x08\x02\x07\x00\x00", "unknown frame type"),
    ],
)
def test_bad_frame_headers(raw: bytes, match: str) -> None:
    parser = a.framing.amqp10.FrameParser()
    parser.feed(raw)
    with pytest.raises(a.errors.FramingError, match=match) as info:
        parser.next_frame()
    assert info.value.condition == "amqp:connection:framing-error"


def test_extended_header_is_skipped() -> None:
    body = a.encode(performatives.End())
    raw = (12 + len(body)).to_bytes(4, "big") + b"\x03\x00\x00\x05" + b"EXTN" + body
    parser = a.framing.amqp10.FrameParser()
    parser.feed(raw)
    frame = parser.next_frame()
    assert frame == a.framing.amqp10.Frame(a.framing.amqp10.FrameType.AMQP, 5, performatives.End())


def test_sasl_frames() -> None:
    mechs = performatives.SaslMechanisms(sasl_server_mechanisms=["PLAIN", "ANONYMOUS"])
    raw = a.framing.amqp10.encode_frame(mechs, frame_type=a.framing.amqp10.FrameType.SASL)
    parser = a.framing.amqp10.FrameParser()
    parser.feed(a.framing.amqp10.SASL_HEADER + raw)
    assert parser.next_protocol_header() == a.framing.amqp10.ProtocolHeader(
        a.framing.amqp10.ProtocolId.SASL
    )
    frame = parser.next_frame()
    assert frame is not None and frame.type is a.framing.amqp10.FrameType.SASL
    assert frame.body.sasl_server_mechanisms == ("PLAIN", "ANONYMOUS")


def test_sasl_body_in_amqp_frame_and_the_reverse_are_decode_errors() -> None:
    wrong = [
        a.framing.amqp10.encode_frame(performatives.SaslOutcome(code=performatives.SaslCode.OK)),
        a.framing.amqp10.encode_frame(
            performatives.End(), frame_type=a.framing.amqp10.FrameType.SASL
        ),
        a.framing.amqp10.encode_frame(None, payload=a.encode("not a performative")),
    ]
    for raw in wrong:
        parser = a.framing.amqp10.FrameParser()
        parser.feed(raw)
        with pytest.raises(a.DecodeError):
            parser.next_frame()


def test_payload_only_after_transfer() -> None:
    parser = a.framing.amqp10.FrameParser()
    parser.feed(a.framing.amqp10.encode_frame(performatives.End(), payload=b"junk"))
    with pytest.raises(a.DecodeError, match="trailing"):
        parser.next_frame()


def test_malformed_performative_is_a_decode_error() -> None:
    good = a.framing.amqp10.encode_frame(
        performatives.Attach(name="l", handle=1, role=performatives.Role.RECEIVER)
    )
    for cut in range(9, len(good)):
        raw = bytearray(good[:cut])
        raw[0:4] = cut.to_bytes(4, "big")
        parser = a.framing.amqp10.FrameParser()
        parser.feed(bytes(raw))
        with pytest.raises(a.DecodeError):
            parser.next_frame()


def test_take_remaining_hands_over_leftover_bytes() -> None:
    parser = a.framing.amqp10.FrameParser()
    parser.feed(a.framing.amqp10.TLS_HEADER + b"\x16\x03\x01rest")
    assert parser.next_protocol_header() == a.framing.amqp10.ProtocolHeader(
        a.framing.amqp10.ProtocolId.TLS
    )
    assert parser.take_remaining() == b"\x16\x03\x01rest"
    assert parser.buffered == 0


def test_encode_frame_limits() -> None:
    with pytest.raises(a.EncodeError):
        a.framing.amqp10.encode_frame(performatives.End(), max_frame_size=8)
    with pytest.raises(a.EncodeError):
        a.framing.amqp10.encode_frame(performatives.End(), channel=70000)
    assert a.framing.amqp10.encode_frame(None) == a.framing.amqp10.HEARTBEAT


def test_protocol_header_parse_takes_exactly_eight_bytes() -> None:
    with pytest.raises(ValueError):
        a.framing.amqp10.ProtocolHeader.parse(b"AMQP")


def test_sasl_frame_with_trailing_bytes_is_a_decode_error() -> None:
    raw = a.framing.amqp10.encode_frame(
        performatives.SaslOutcome(code=performatives.SaslCode.AUTH),
        frame_type=a.framing.amqp10.FrameType.SASL,
        payload=b"?",
    )
    parser = a.framing.amqp10.FrameParser()
    parser.feed(raw)
    with pytest.raises(a.DecodeError, match="trailing"):
        parser.next_frame()


def test_large_frames_with_long_performatives_and_payloads() -> None:
    """Frames over 4 KiB take another path: the performative is read from a head copy (and
    from the whole body when it is longer than that head), the payload copied on its own."""
    long_tag = performatives.Transfer(handle=1, delivery_id=2, delivery_tag=b"t" * 300, more=True)
    raw = a.framing.amqp10.encode_frame(long_tag, payload=b"p" * 5000)
    long_attach = performatives.Attach(name="n" * 6000, handle=0, role=performatives.Role.SENDER)
    raw2 = a.framing.amqp10.encode_frame(long_attach)
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(raw + raw2)
    first, second = parser.next_frame(), parser.next_frame()
    assert first == a.framing.amqp10.Frame(
        a.framing.amqp10.FrameType.AMQP, 0, long_tag, b"p" * 5000
    )
    assert second == a.framing.amqp10.Frame(a.framing.amqp10.FrameType.AMQP, 0, long_attach)
    bad_utf8 = bytearray(raw2[8:])
    bad_utf8[-100] = 0xFF  # inside the long name: not UTF-8
    for bad in (
        b"\x00\x53\x14\xd0" + b"\xff" * 5000,
        b"\x00\x53\x12\xc0" + b"\x00" * 5000,
        bytes(bad_utf8),
    ):
        parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
        parser.feed(a.framing.amqp10.encode_frame(None, payload=bad))
        with pytest.raises(a.DecodeError):
            parser.next_frame()


def _large_transfer(size: int = 10_000) -> tuple[bytes, bytes]:
    payload = bytes(range(256)) * (size // 256)
    frame = a.framing.amqp10.encode_frame(
        performatives.Transfer(handle=0, delivery_id=1, delivery_tag=b"t", more=False),
        payload=payload,
    )
    return frame, payload


def test_bytes_are_parsed_in_place_and_a_large_payload_is_a_view_of_them() -> None:
    frame, payload = _large_transfer()
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    for _ in range(2):
        parser.feed(frame)
        (f,) = _parse_all(parser)
        assert type(f.payload) is memoryview and f.payload.readonly
        assert f.payload == payload
    assert parser.buffered == 0


def test_a_large_payload_from_a_bytearray_is_copied_out() -> None:
    """The caller may reuse its bytearray: nothing handed out may see the change."""
    frame, payload = _large_transfer()
    data = bytearray(frame)
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(data)
    data[:] = bytes(len(data))
    (got,) = _parse_all(parser)
    assert type(got.payload) is bytes and got.payload == payload


@pytest.mark.parametrize("cut", [1, 7, 8, 100, 5000, 9999])
def test_a_frame_cut_short_in_bytes_is_completed_from_the_next(cut: int) -> None:
    frame, payload = _large_transfer()
    small = a.framing.amqp10.encode_frame(
        performatives.Flow(incoming_window=1, next_outgoing_id=2, outgoing_window=3)
    )
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    data = small + frame + small
    parser.feed(data[: len(small) + cut])
    assert _parse_all(parser)[0].body == performatives.Flow(
        incoming_window=1, next_outgoing_id=2, outgoing_window=3
    )
    parser.feed(data[len(small) + cut :])
    got = _parse_all(parser)
    assert [type(f.body) for f in got] == [
        performatives.Transfer,
        performatives.Flow,
    ]
    assert type(got[0].payload) is bytes and got[0].payload == payload
    # Once all is parsed, bytes are read in place again.
    parser.feed(frame)
    (again,) = _parse_all(parser)
    assert type(again.payload) is memoryview and again.payload == payload


def test_error_offsets_count_bytes_read_in_place() -> None:
    frame, _ = _large_transfer()
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(frame)
    _parse_all(parser)
    parser.feed(bytearray(b"\x00\x00\x00\x07"))
    parser.feed(b"\x02\x00\x00\x00")
    with pytest.raises(a.errors.FramingError) as info:
        parser.next_frame()
    assert info.value.offset == len(frame)


def test_bytes_behind_a_frame_cut_short_are_read_in_place_once_it_is_whole() -> None:
    """A stream cut anywhere (as a socket cuts it): only what completes the frame cut short
    is copied; the frames after it in the next bytes are views of them."""
    frame, payload = _large_transfer()
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    data = frame * 3
    first, second = data[:5000], data[5000:]
    parser.feed(first)
    assert _parse_all(parser) == []
    parser.feed(second)
    assert parser.buffered == len(data)
    got = _parse_all(parser)
    assert [f.payload == payload for f in got] == [True] * 3
    assert type(got[0].payload) is bytes  # stitched from both
    assert [type(f.payload) for f in got[1:]] == [memoryview, memoryview]
    assert all(f.payload.obj is second for f in got[1:])  # type: ignore[union-attr]
    assert parser.buffered == 0


@pytest.mark.parametrize("cut", [1, 3, 4, 6, 8, 9])
def test_a_header_cut_short_is_completed_before_its_size_is_known(cut: int) -> None:
    frame, payload = _large_transfer()
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(frame[:cut])
    assert parser.next_frame() is None
    parser.feed(frame[cut:] + frame)
    got = _parse_all(parser)
    assert [f.payload == payload for f in got] == [True, True]
    assert type(got[1].payload) is memoryview


def test_bytes_fed_twice_behind_a_cut_frame_keep_their_order() -> None:
    frame, payload = _large_transfer()
    data = frame * 3
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(data[:100])
    assert parser.next_frame() is None
    parser.feed(data[100:15_000])
    parser.feed(data[15_000:])  # nothing parsed between: the first waits no more
    assert parser.buffered == len(data)
    assert [f.payload == payload for f in _parse_all(parser)] == [True] * 3


def test_a_bad_size_behind_a_cut_frame_is_a_framing_error_at_its_offset() -> None:
    frame, _ = _large_transfer()
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(frame[:2])
    parser.feed(frame[2:] + b"\x7f\xff\xff\xff" + bytes(5000))
    assert parser.next_frame() is not None
    with pytest.raises(a.errors.FramingError) as info:
        parser.next_frame()
    assert info.value.offset == len(frame)


def test_remaining_bytes_include_those_behind_a_cut_frame() -> None:
    parser = a.framing.amqp10.FrameParser()
    parser.feed(a.framing.amqp10.TLS_HEADER[:3])
    parser.feed(a.framing.amqp10.TLS_HEADER[3:] + b"x" * 5000)
    assert parser.next_protocol_header() == a.framing.amqp10.ProtocolHeader(
        a.framing.amqp10.ProtocolId.TLS
    )
    assert parser.take_remaining() == b"x" * 5000
    assert parser.buffered == 0
    parser.feed(a.framing.amqp10.encode_frame(None)[:4])
    parser.feed(a.framing.amqp10.encode_frame(None)[4:] + b"y" * 5000)
    assert parser.take_remaining() == a.framing.amqp10.encode_frame(None) + b"y" * 5000


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 30_000), min_size=1, max_size=12), st.randoms())
def test_large_and_small_frames_in_any_cuts_parse_the_same(
    cuts: list[int], rnd: random.Random
) -> None:
    frames = [_large_transfer(rnd.choice([300, 5000, 20_000]))[0] for _ in range(6)]
    frames.insert(rnd.randrange(7), a.framing.amqp10.encode_frame(performatives.End()))
    data = b"".join(frames)
    whole = a.framing.amqp10.FrameParser(max_frame_size=65536)
    whole.feed(data)
    expected = _parse_all(whole)
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    got: list[a.framing.amqp10.Frame] = []
    at = 0
    for n in cuts * (len(data) // sum(cuts) + 1):
        if at >= len(data):
            break
        parser.feed(data[at : at + n])
        at += n
        got += _parse_all(parser)
    assert got == expected
    assert parser.buffered == 0


# -- a transfer cut inside its payload keeps the pieces it came in ------------------------


def _pieces(parser: a.framing.amqp10.FrameParser) -> list[object]:
    """The payload pieces of the next frame as the engine takes them (``_next``)."""
    got = parser._next()
    assert got is not None
    payload = got[3]
    return list(payload) if type(payload) is list else [payload]


def _head_of(frame: bytes) -> int:
    """Where a transfer frame's payload begins."""
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(frame)
    f = parser.next_frame()
    assert f is not None
    return len(frame) - len(f.payload)


def test_a_payload_cut_across_bytes_is_the_views_of_them() -> None:
    """A frame's header and performative, then its payload in two pieces (as
    ``buffers_to_send`` cuts a large message): the payload is views of both, no copy."""
    frame, payload = _large_transfer(20_000)
    head = _head_of(frame)
    first, second = frame[head : head + 9000], frame[head + 9000 :]
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(frame[:head])
    assert parser._next() is None
    parser.feed(memoryview(first))
    assert parser._next() is None
    assert parser.buffered == head + 9000  # held, not yet a frame
    parser.feed(second)
    pieces = _pieces(parser)
    assert [type(p) for p in pieces] == [memoryview, memoryview]
    assert pieces[0].obj is first and pieces[1].obj is second  # type: ignore[attr-defined]
    assert b"".join(pieces) == payload  # type: ignore[arg-type]
    assert parser.buffered == 0 and parser._next() is None
    # Through the public API the pieces come joined.
    parser.feed(frame[: head + 100])
    parser.feed(frame[head + 100 : head + 9000])
    assert parser.next_frame() is None
    parser.feed(bytearray(frame[head + 9000 :]) + frame)
    got = _parse_all(parser)
    assert [f.payload for f in got] == [payload, payload]
    assert type(got[0].payload) is bytes


def test_a_small_or_mutable_piece_of_a_cut_payload_is_copied() -> None:
    """Pieces of 4 KiB or less, and bytearrays (which may change), are copied, the small
    copies next to each other into one piece; the frame still arrives whole."""
    frame, payload = _large_transfer(30_000)
    head = _head_of(frame)
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(frame[: head + 5000])  # the head, and 5,000 bytes of payload behind it
    parser.feed(frame[head + 5000 : head + 12_000])
    assert parser._next() is None
    for i in range(head + 12_000, head + 12_010):
        parser.feed(frame[i : i + 1])  # byte by byte
        assert parser._next() is None
    mutable = bytearray(frame[head + 12_010 : head + 20_000])
    parser.feed(mutable)
    assert parser._next() is None
    mutable[:] = bytes(len(mutable))
    parser.feed(frame[head + 20_000 :])
    pieces = _pieces(parser)
    assert [type(p) for p in pieces] == [memoryview, memoryview, bytes, memoryview]
    assert [len(p) for p in pieces] == [5000, 7000, 10 + 7990, len(frame) - head - 20_000]  # type: ignore[arg-type]
    assert b"".join(pieces) == payload  # type: ignore[arg-type]


def test_a_cut_payload_pins_at_most_twice_what_it_views() -> None:
    """A piece that the frame waits on beyond is viewed only where it is at least half of
    the bytes it came in: a large read whose tail starts a frame gives a copy of the tail."""
    frame, payload = _large_transfer(30_000)
    head = _head_of(frame)
    padding = a.framing.amqp10.encode_frame(None) * 10_000  # 80,000 bytes of empty frames
    for before, viewed in ((padding, False), (b"", True)):
        parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
        read = before + frame[: head + 10_000]
        parser.feed(read)
        assert all(f.is_heartbeat for f in _parse_all(parser))
        last = frame[head + 10_000 :]
        parser.feed(last)
        first, second = _pieces(parser)
        assert (type(first) is memoryview) is viewed
        assert second.obj is last  # type: ignore[attr-defined]  # it makes the frame whole
        assert bytes(first) + bytes(second) == payload  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_cut_transfer_arrives_byte_identical(data: st.DataObject) -> None:
    """Cut anywhere, into pieces of any kind (bytes, views of bytes, bytearrays, one byte at
    a time): the frames read the same, the engine's pieces join to the payload."""
    frames = [_large_transfer(n)[0] for n in (20_000, 300, 9000)]
    stream = b"".join(frames)
    expected = _parse_all(_fed(stream))
    cuts = sorted(data.draw(st.sets(st.integers(1, len(stream) - 1), max_size=8)))
    kinds = data.draw(st.lists(st.sampled_from(["bytes", "view", "bytearray", "bytewise"])))
    public, engine = (
        a.framing.amqp10.FrameParser(max_frame_size=65536),
        a.framing.amqp10.FrameParser(max_frame_size=65536),
    )
    got: list[a.framing.amqp10.Frame] = []
    joined: list[bytes] = []
    for i, (lo, hi) in enumerate(zip([0, *cuts], [*cuts, len(stream)], strict=True)):
        kind = kinds[i] if i < len(kinds) else "bytes"
        piece = stream[lo:hi]
        for fed in (
            [piece[j : j + 1] for j in range(len(piece))]
            if kind == "bytewise" and len(piece) < 50
            else [piece]
        ):
            fed_as: bytes | bytearray | memoryview = {
                "view": memoryview(fed),
                "bytearray": bytearray(fed),
            }.get(kind, fed)
            public.feed(fed_as)
            engine.feed(fed_as)
            got += _parse_all(public)
            while (frame := engine._next()) is not None:
                payload = frame[3]
                joined.append(b"".join(payload) if type(payload) is list else bytes(payload))
    assert got == expected
    assert joined == [f.payload for f in expected]
    assert public.buffered == engine.buffered == 0


def _fed(data: bytes) -> a.framing.amqp10.FrameParser:
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(data)
    return parser


def test_a_transfer_cut_at_every_offset_arrives_whole() -> None:
    frame, payload = _large_transfer(5120)
    other = a.framing.amqp10.encode_frame(performatives.End())
    stream = frame + other
    for cut in range(1, len(frame)):
        parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
        parser.feed(stream[:cut])
        got = _parse_all(parser)
        parser.feed(stream[cut:])
        got += _parse_all(parser)
        assert [f.payload for f in got] == [payload, b""], cut
        assert parser.buffered == 0


def test_cut_frames_that_are_not_transfers_are_completed_by_copying() -> None:
    """Only a transfer's payload is gathered: another large frame cut short is completed in
    our buffer, and a bad or long performative is decoded (or reported) there."""
    long_attach = performatives.Attach(name="n" * 6000, handle=0, role=performatives.Role.SENDER)
    long_tag = performatives.Transfer(handle=1, delivery_id=2, delivery_tag=b"t" * 300, more=True)
    longer_tag = attrs.evolve(long_tag, delivery_tag=b"t" * 1000)
    cases: list[tuple[bytes, int]] = [
        (a.framing.amqp10.encode_frame(long_attach), 100),
        (
            a.framing.amqp10.encode_frame(
                performatives.SaslInit(mechanism="PLAIN", initial_response=b"x" * 6000),
                frame_type=a.framing.amqp10.FrameType.SASL,
            ),
            100,
        ),
        (
            a.framing.amqp10.encode_frame(long_tag, payload=b"p" * 9000),
            100,
        ),  # performative cut short
        (
            a.framing.amqp10.encode_frame(long_tag, payload=b"p" * 9000),
            400,
        ),  # longer than the head copy
        (a.framing.amqp10.encode_frame(longer_tag, payload=b"p" * 9000), 400),  # and cut short
    ]
    for raw, cut in cases:
        whole = _fed(raw).next_frame()
        parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
        parser.feed(raw[:cut])
        assert parser.next_frame() is None
        parser.feed(raw[cut:])
        assert parser.next_frame() == whole
    bad = a.framing.amqp10.encode_frame(None, payload=b"\x00\x53\x14\xd0" + b"\xff" * 9000)
    flow = performatives.Flow(incoming_window=1, next_outgoing_id=2, outgoing_window=3)
    trailing = a.framing.amqp10.encode_frame(flow, payload=b"x" * 9000)
    for raw, match in ((bad, "."), (trailing, "trailing")):
        parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
        parser.feed(raw[:100])
        parser.feed(raw[100:])
        with pytest.raises(a.DecodeError, match=match):
            parser.next_frame()


def test_remaining_bytes_include_a_payload_being_gathered() -> None:
    frame, _ = _large_transfer(20_000)
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(frame[:100])
    parser.feed(frame[100:15_000])
    assert parser.next_frame() is None
    parser.feed(frame[15_000:16_000])
    assert parser.take_remaining() == frame[:16_000]
    assert parser.buffered == 0
    parser.feed(frame)
    assert parser.next_frame() is not None
