"""AMQP 0-9-1 frames: written and parsed, fed whole and byte by byte, frame-max on both
sides, the protocol header, and a catalogue of hostile frames each answered with the typed
error and the reply code the spec gives."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amqp_sansio import amqp091, errors
from amqp_sansio.framing import amqp091 as framing

PUBLISH = amqp091.spec.BasicPublish(exchange="amq.topic", routing_key="a.b", mandatory=True)
PROPS = amqp091.BasicProperties(content_type="text/plain", delivery_mode=2, headers={"k": [1]})
TUNE_OK = amqp091.spec.ConnectionTuneOk(channel_max=2047, frame_max=131072, heartbeat=60)
DECLARE = amqp091.spec.QueueDeclare().encode()[:-4]  # all but the arguments table
DELIVER = amqp091.spec.BasicDeliver(
    consumer_tag="ctag", delivery_tag=7, redelivered=True, exchange="", routing_key="q"
)


def frame(frame_type: int, channel: int, payload: bytes, end: int = 0xCE) -> bytes:
    return struct.pack(">BHI", frame_type, channel, len(payload)) + payload + bytes([end])


def parse(data: bytes, chunk: int | None = None, **kwargs: object) -> list[object]:
    """Every frame of ``data``, fed whole or ``chunk`` octets at a time."""
    parser = framing.FrameParser(**kwargs)  # type: ignore[arg-type]
    out: list[object] = []
    step = chunk or max(len(data), 1)
    for at in range(0, len(data), step):
        parser.feed(data[at : at + step])
        out.extend(parser)
    assert parser.buffered == 0
    return out


#: A conversation's worth of frames: (octets, what they parse to).
STREAM = [
    (amqp091.encode_method_frame(0, TUNE_OK), amqp091.MethodFrame(0, TUNE_OK)),
    (amqp091.encode_method_frame(1, PUBLISH), amqp091.MethodFrame(1, PUBLISH)),
    (amqp091.encode_header_frame(1, 11, PROPS), amqp091.ContentHeaderFrame(1, 60, 11, PROPS)),
    (amqp091.encode_body_frame(1, b"hello world"), amqp091.ContentBodyFrame(1, b"hello world")),
    (framing.HEARTBEAT, amqp091.HeartbeatFrame()),
    (amqp091.encode_method_frame(2, DELIVER), amqp091.MethodFrame(2, DELIVER)),
    (amqp091.encode_header_frame(2, 0, amqp091.BasicProperties()),
     amqp091.ContentHeaderFrame(2, 60, 0, amqp091.BasicProperties())),
    (amqp091.encode_body_frame(3, b""), amqp091.ContentBodyFrame(3, b"")),
]  # fmt: skip
WIRE = b"".join(octets for octets, _ in STREAM)
FRAMES = [parsed for _, parsed in STREAM]


@pytest.mark.parametrize("chunk", [None, 1, 2, 3, 7, 64])
def test_a_stream_in_any_chunking(chunk: int | None) -> None:
    assert parse(WIRE, chunk, frame_max=0) == FRAMES


@pytest.mark.parametrize("chunk", [None, 1, 5])
def test_a_server_reads_the_protocol_header_first(chunk: int | None) -> None:
    frames = parse(amqp091.PROTOCOL_HEADER + WIRE, chunk, frame_max=0, protocol_header=True)
    assert frames == [framing.ProtocolHeader(0, 9, 1), *FRAMES]


@settings(max_examples=100, deadline=None)
@given(cuts=st.lists(st.integers(0, len(WIRE)), max_size=20))
def test_a_stream_cut_anywhere(cuts: list[int]) -> None:
    parser = framing.FrameParser(0)
    got = []
    previous = 0
    for cut in [*sorted(cuts), len(WIRE)]:
        parser.feed(WIRE[previous:cut])
        got.extend(parser)
        previous = cut
    assert got == FRAMES


def test_encode_frame_writes_each_kind() -> None:
    assert b"".join(framing.encode_frame(f) for f in FRAMES) == WIRE  # type: ignore[arg-type]
    with pytest.raises(amqp091.errors.EncodeError):
        framing.encode_frame(amqp091.HeartbeatFrame(channel=1))
    with pytest.raises(amqp091.errors.EncodeError):
        framing.encode_frame(amqp091.ContentHeaderFrame(1, 50, 0, PROPS))
    with pytest.raises(amqp091.errors.EncodeError):
        framing.encode_frame(amqp091.MethodFrame(70000, PUBLISH))


def test_frame_max_on_output() -> None:
    """frame-max counts the whole frame: 7 octets of header, the payload, the frame-end."""
    assert len(amqp091.encode_body_frame(1, b"x" * 92, frame_max=100)) == 100
    with pytest.raises(amqp091.errors.EncodeError, match="frame-max 100"):
        amqp091.encode_body_frame(1, b"x" * 93, frame_max=100)
    with pytest.raises(amqp091.errors.EncodeError):
        amqp091.encode_method_frame(1, amqp091.spec.BasicPublish(exchange="e" * 200), frame_max=100)
    with pytest.raises(amqp091.errors.EncodeError):
        amqp091.encode_header_frame(1, 1, amqp091.BasicProperties(type="t" * 200), frame_max=100)


@pytest.mark.parametrize("size", [0, 1, 91, 92, 93, 250])
def test_encode_content_cuts_the_body_at_frame_max(size: int) -> None:
    body = bytes(range(256))[:size]
    frames = amqp091.encode_content(1, PUBLISH, PROPS, body, frame_max=100)
    assert all(len(f) <= 100 for f in frames)
    parsed = parse(b"".join(frames), frame_max=100)
    assert parsed[:2] == [
        amqp091.MethodFrame(1, PUBLISH),
        amqp091.ContentHeaderFrame(1, 60, size, PROPS),
    ]
    bodies = parsed[2:]
    assert len(bodies) == -(-size // 92)
    assert b"".join(f.payload for f in bodies) == body  # type: ignore[attr-defined]


def test_encode_content_without_a_limit_and_its_errors() -> None:
    frames = amqp091.encode_content(1, PUBLISH, PROPS, b"x" * 10_000, frame_max=0)
    assert len(frames) == 3
    with pytest.raises(amqp091.errors.EncodeError, match="carries no content"):
        amqp091.encode_content(1, amqp091.spec.BasicAck(delivery_tag=1), PROPS, b"", 0)
    with pytest.raises(amqp091.errors.EncodeError, match="no room"):
        amqp091.encode_content(1, PUBLISH, PROPS, b"x", 8)


@pytest.mark.parametrize("size", [0, 1, 91, 92, 93, 250])
@pytest.mark.parametrize("frame_max", [0, 100, 131072])
def test_content_octets_are_encode_contents_frames_joined(size: int, frame_max: int) -> None:
    body = bytes(range(256))[:size]
    expected = b"".join(amqp091.encode_content(3, DELIVER, PROPS, body, frame_max))
    assert framing.content_octets(3, DELIVER, PROPS, body, frame_max) == expected


def test_content_octets_errors_are_encode_contents() -> None:
    with pytest.raises(amqp091.errors.EncodeError, match="carries no content"):
        framing.content_octets(1, amqp091.spec.BasicAck(delivery_tag=1), PROPS, b"x", 0)
    with pytest.raises(amqp091.errors.EncodeError, match="no room"):
        framing.content_octets(1, PUBLISH, PROPS, b"x", 8)
    with pytest.raises(amqp091.errors.EncodeError, match="not a short"):
        framing.content_octets(70000, PUBLISH, PROPS, b"x", 0)
    with pytest.raises(amqp091.errors.EncodeError, match="over frame-max"):  # the header: 40 octets
        framing.content_octets(1, PUBLISH, PROPS, b"x", 30)


def _content_parser(wire: bytes, **kwargs: object) -> framing.FrameParser:
    """A server's parser fed ``wire``, its method frame (the first) taken."""
    parser = framing.FrameParser(**kwargs)  # type: ignore[arg-type]
    parser.feed(wire)
    assert parser.next_frame() == amqp091.MethodFrame(1, PUBLISH)
    return parser


@pytest.mark.parametrize("size", [0, 11])
def test_take_content_takes_a_header_and_a_one_frame_body_together(size: int) -> None:
    body = b"hello world"[:size]
    wire = b"".join(amqp091.encode_content(1, PUBLISH, PROPS, body, 131072)) + framing.HEARTBEAT
    parser = _content_parser(wire, frame_max=131072)
    assert parser.take_content(1) == (PROPS, body)
    assert parser.next_frame() == amqp091.HeartbeatFrame()
    assert parser.buffered == 0
    parser = _content_parser(wire[: -len(framing.HEARTBEAT)])
    assert parser.take_content(1, max_body=11) == (PROPS, body)
    assert parser.buffered == 0


def _untaken(wire: bytes, channel: int = 1, max_body: int = 0, **kwargs: object) -> list[object]:
    """What ``take_content`` leaves: it gives None, and the frames still come one by one."""
    parser = _content_parser(wire, **kwargs)
    before = parser.buffered
    assert parser.take_content(channel, max_body) is None
    assert parser.buffered == before
    return list(parser)


def test_take_content_leaves_what_is_not_one_whole_content() -> None:
    method = amqp091.encode_method_frame(1, PUBLISH)
    head = amqp091.encode_header_frame(1, 11, PROPS)
    body = amqp091.encode_body_frame(1, b"hello world")
    header = amqp091.ContentHeaderFrame(1, 60, 11, PROPS)
    whole = [header, amqp091.ContentBodyFrame(1, b"hello world")]
    assert _untaken(method + head[:-1]) == []  # the header not in whole
    assert _untaken(method + head) == [header]  # no body yet
    assert _untaken(method + head + body[:-1]) == [header]  # the body not in whole
    assert _untaken(method + head + body, channel=2) == whole  # another channel's content
    assert _untaken(method + head + body, max_body=10) == whole  # over the limit
    pieces = [amqp091.encode_body_frame(1, p) for p in (b"hello", b" world")]
    assert _untaken(method + head + b"".join(pieces)) == [
        header,
        amqp091.ContentBodyFrame(1, b"hello"),
        amqp091.ContentBodyFrame(1, b" world"),
    ]  # a body in several frames
    assert _untaken(method + head + framing.HEARTBEAT + body) == [
        header,
        amqp091.HeartbeatFrame(),
        whole[1],
    ]
    with pytest.raises(amqp091.FrameError, match="frame-end"):  # the errors stay next_frame's
        _untaken(method + head + body[:-1] + b"\x00")
    with pytest.raises(amqp091.FrameError, match="frame-end"):
        _untaken(method + head[:-1] + b"\x00" + body)
    with pytest.raises(amqp091.FrameError, match="over frame-max"):
        _untaken(method + head + frame(3, 1, bytes(200)), frame_max=len(head) + 8)
    with pytest.raises(amqp091.FrameError, match="over frame-max"):
        _untaken(method + head + body, frame_max=len(head) - 1)
    with pytest.raises(amqp091.errors.DecodeError):  # a header that does not decode
        _untaken(method + frame(2, 1, head[7:-1].replace(b"\x00\x00", b"\x00\x01", 1)))


def test_frame_max_on_input_is_checked_before_the_payload_comes() -> None:
    parser = framing.FrameParser()  # frame-min-size until tuned
    assert parser.frame_max == amqp091.spec.FRAME_MIN_SIZE == 4096
    parser.feed(struct.pack(">BHI", 3, 1, 4089))  # 4089 + 8 octets: one too many
    with pytest.raises(amqp091.FrameError) as caught:
        parser.next_frame()
    assert caught.value.reply_code == 501
    with pytest.raises(amqp091.FrameError):  # the parser stays broken
        parser.next_frame()
    tuned = framing.FrameParser()
    tuned.frame_max = 131072
    tuned.feed(amqp091.encode_body_frame(1, b"x" * 5000))
    assert tuned.next_frame() == amqp091.ContentBodyFrame(1, b"x" * 5000)
    assert tuned.next_frame() is None


def test_a_client_told_another_version() -> None:
    """A server that does not speak 0-9-1 answers with the header it speaks (spec 4.2.2)."""
    parser = framing.FrameParser()
    parser.feed(b"AMQP\x00\x01")
    assert parser.next_frame() is None
    parser.feed(b"\x00\x00")
    with pytest.raises(errors.UnsupportedProtocolError) as caught:
        parser.next_frame()
    assert caught.value.header == b"AMQP\x00\x01\x00\x00"
    assert caught.value.version_name == "AMQP 1.0 (protocol id 0)"


@pytest.mark.parametrize(
    ("header", "name"),
    [
        (b"AMQP\x03\x01\x00\x00", "AMQP 1.0 (protocol id 3)"),
        (b"AMQP\x01\x01\x00\x0a", "AMQP 0-10"),
        (b"AMQP\x00\x00\x09\x02", "AMQP protocol id 0 version 0.9.2"),
        (b"GET / HT", "HTTP"),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01", "not AMQP"),
    ],
)
def test_a_server_refuses_other_protocols(header: bytes, name: str) -> None:
    parser = framing.FrameParser(protocol_header=True)
    parser.feed(header)
    with pytest.raises(errors.UnsupportedProtocolError) as caught:
        parser.next_frame()
    assert caught.value.version_name == name


@pytest.mark.parametrize(
    ("header", "name"),
    [
        (b"AMQP\x01\x01\x08\x00", "AMQP 0-8"),
        (b"AMQP\x01\x01\x09\x01", "AMQP 0-9-1 (the pre-standard header)"),
    ],
)
def test_a_client_names_the_08_headers_a_server_answers(header: bytes, name: str) -> None:
    parser = framing.FrameParser()
    parser.feed(header)
    with pytest.raises(errors.UnsupportedProtocolError) as caught:
        parser.next_frame()
    assert caught.value.version_name == name


@pytest.mark.parametrize(
    ("header", "version"),
    [
        (b"AMQP\x00\x00\x09\x01", (0, 9, 1)),
        (b"AMQP\x01\x01\x00\x09", (0, 9, 1)),  # 0-9: served as 0-9-1, as RabbitMQ does
        (b"AMQP\x01\x01\x08\x00", (8, 0, 0)),  # 0-8
        (b"AMQP\x01\x01\x09\x01", (8, 0, 0)),  # py-amqplib's for 0-8
    ],
)
def test_a_server_takes_the_headers_rabbitmq_takes(
    header: bytes, version: tuple[int, int, int]
) -> None:
    major, minor, revision = version
    expected = framing.ProtocolHeader(major=major, minor=minor, revision=revision)
    for chunks in ([header], [header[i : i + 1] for i in range(8)]):  # whole, octet by octet
        parser = framing.FrameParser(protocol_header=True)
        got = [parser.next_frame() for chunk in chunks if parser.feed(chunk) is None]
        assert got == [None] * (len(chunks) - 1) + [expected]


def test_a_wrong_header_is_refused_at_its_first_wrong_octet() -> None:
    parser = framing.FrameParser(protocol_header=True)
    parser.feed(b"AMQ")
    assert parser.next_frame() is None
    parser.feed(b"X")
    with pytest.raises(errors.UnsupportedProtocolError):
        parser.next_frame()


_GOOD_METHOD = amqp091.spec.BasicAck(delivery_tag=1).encode()
_GOOD_HEADER = amqp091.encode_content_header(5, PROPS)

#: Hostile frames: (name, octets, error class, reply code).
HOSTILE: list[tuple[str, bytes, type[Exception], int]] = [
    ("bad frame-end", frame(1, 1, _GOOD_METHOD, end=0x00), amqp091.FrameError, 501),
    ("unknown frame type", frame(9, 0, b""), amqp091.FrameError, 501),
    ("frame type 0", frame(0, 0, b"x"), amqp091.FrameError, 501),
    ("over frame-max", struct.pack(">BHI", 1, 0, 2**32 - 1), amqp091.FrameError, 501),
    ("heartbeat on a channel", frame(8, 1, b""), amqp091.FrameError, 501),
    ("heartbeat with a payload", frame(8, 0, b"x"), amqp091.FrameError, 501),
    ("body on channel 0", frame(3, 0, b"x"), amqp091.UnexpectedFrameError, 505),
    ("header on channel 0", frame(2, 0, _GOOD_HEADER), amqp091.UnexpectedFrameError, 505),
    ("empty method", frame(1, 1, b""), amqp091.TruncatedError, 501),
    ("unknown class", frame(1, 1, b"\x00\x63\x00\x0a"), amqp091.UnknownMethodError, 540),
    ("unknown method", frame(1, 1, b"\x00\x3c\x00\x0c"), amqp091.UnknownMethodError, 540),
    ("truncated method", frame(1, 1, _GOOD_METHOD[:-2]), amqp091.TruncatedError, 501),
    ("truncated shortstr", frame(1, 1, b"\x00\x3c\x00\x15\x09abc"), amqp091.TruncatedError, 501),
    ("truncated longstr", frame(1, 0, b"\x00\x0a\x00\x15\xff\xff\xff\xffab"),
     amqp091.TruncatedError, 501),
    ("octets after the arguments", frame(1, 1, _GOOD_METHOD + b"\x00"), amqp091.FrameError, 501),
    ("shortstr not UTF-8", frame(1, 1, b"\x00\x3c\x00\x15\x02\xc3\x28"),
     amqp091.errors.DecodeError, 502),
    ("bad table in a method", frame(1, 1, DECLARE + b"\x00\x00\x00\x03\x01aZ"),
     amqp091.errors.DecodeError, 502),
    ("huge table in a method", frame(1, 1, DECLARE + b"\xff\xff\xff\xff"),
     amqp091.TruncatedError, 501),
    ("header for a class with no content", frame(2, 1, b"\x00\x32" + _GOOD_HEADER[2:]),
     amqp091.UnknownMethodError, 540),
    ("header weight", frame(2, 1, _GOOD_HEADER[:2] + b"\x00\x01" + _GOOD_HEADER[4:]),
     amqp091.errors.DecodeError, 502),
    ("undefined property flag", frame(2, 1, _GOOD_HEADER[:12] + b"\x00\x02" + _GOOD_HEADER[14:]),
     amqp091.errors.DecodeError, 502),
    ("continuation flag", frame(2, 1, _GOOD_HEADER[:12] + b"\x00\x01"),
     amqp091.errors.DecodeError, 502),
    ("truncated header", frame(2, 1, _GOOD_HEADER[:10]), amqp091.TruncatedError, 501),
    ("truncated property", frame(2, 1, _GOOD_HEADER[:-3]), amqp091.TruncatedError, 501),
    ("huge property string", frame(2, 1, _GOOD_HEADER[:12] + b"\x80\x00\xff"),
     amqp091.TruncatedError, 501),
    ("octets after the properties", frame(2, 1, _GOOD_HEADER + b"\x00"), amqp091.FrameError, 501),
    ("property not UTF-8", frame(2, 1, _GOOD_HEADER[:12] + b"\x80\x00\x01\xff"),
     amqp091.errors.DecodeError, 502),
]  # fmt: skip


@pytest.mark.parametrize("chunk", [None, 1])
@pytest.mark.parametrize(
    ("data", "error", "code"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE]
)
def test_hostile_frames(data: bytes, error: type[Exception], code: int, chunk: int | None) -> None:
    with pytest.raises(error) as caught:
        parse(data, chunk)
    assert type(caught.value) is error
    assert caught.value.reply_code == code  # type: ignore[attr-defined]
    assert caught.value.reply_code in amqp091.HARD_ERRORS  # type: ignore[attr-defined]
    assert isinstance(caught.value, errors.RemoteProtocolError)


def test_frames_before_a_bad_one_come_out() -> None:
    parser = framing.FrameParser()
    parser.feed(framing.HEARTBEAT + frame(9, 0, b""))
    assert parser.next_frame() == amqp091.HeartbeatFrame()
    with pytest.raises(amqp091.FrameError):
        parser.next_frame()


def test_nothing_larger_than_the_input_is_held() -> None:
    """A frame declaring 4 GiB (no frame-max) is waited for, not allocated."""
    parser = framing.FrameParser(0)
    parser.feed(struct.pack(">BHI", 3, 1, 2**32 - 1) + b"x" * 100)
    assert parser.next_frame() is None and parser.buffered == 107
