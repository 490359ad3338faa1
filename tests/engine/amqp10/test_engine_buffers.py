"""Scatter-gather output (``Connection.buffers_to_send``), views of bytes fed to
``receive_data``, deliveries held as the pieces they came in (``DeliveryReceived.data``
joined on first use, ``message()``), and ``Message.decode`` of pieces."""

from __future__ import annotations

import itertools
import random
import tracemalloc
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.engine_pair import LARGE, Pair, large_on_the_wire, of
from support.strategies import assert_same, has_sections, messages, same

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.framing.amqp10


def _sender_pair(max_frame_size: int = 65536) -> tuple[Pair, a.Sender, a.Receiver]:
    p = Pair(client={"max_frame_size": max_frame_size}, server={"max_frame_size": max_frame_size})
    p.open()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(100)
    p.pump()
    return p, snd, rcv


def _feed(conn: a.Connection, pieces: list[bytes | memoryview], how: str) -> list[a.Event]:
    """Give ``conn`` the pieces: each whole, byte by byte, or cut at random places."""
    events: list[a.Event] = []
    rnd = random.Random(len(pieces))
    for piece in pieces:
        if how == "whole":
            events += conn.receive_data(piece, 0.0)
        elif how == "bytes":
            for i in range(len(piece)):
                events += conn.receive_data(piece[i : i + 1], 0.0)
        else:
            at = 0
            while at < len(piece):
                n = rnd.randint(1, 9000)
                events += conn.receive_data(piece[at : at + n], 0.0)
                at += n
    return events


def _big_messages() -> st.SearchStrategy[a.Message]:
    """Messages of every kind, some with large data sections (one or several)."""
    big = st.integers(0, 30_000).map(lambda n: bytes(random.Random(n).randbytes(n)))
    bodies = st.one_of(
        big,
        st.lists(big.map(a.Data), min_size=2, max_size=3).map(tuple),
    )
    with_big = st.tuples(messages, bodies).map(lambda mb: attrs.evolve(mb[0], body=mb[1]))
    return st.one_of(messages.filter(has_sections), with_big)


# -- buffers_to_send -------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    message=_big_messages(),
    max_frame_size=st.integers(512, 20_000),
    max_bytes=st.one_of(st.none(), st.integers(1, 50_000)),
)
def test_buffers_to_send_join_to_what_data_to_send_gives(
    message: a.Message, max_frame_size: int, max_bytes: int | None
) -> None:
    """Two engines in the same state: one hands over pieces, the other joined bytes; the
    pieces join to the same bytes, call after call."""
    twins = [_sender_pair(max_frame_size) for _ in range(2)]
    for _, snd, _ in twins:
        snd.send(message)
    (p1, _, _), (p2, _, _) = twins
    while True:
        pieces = p1.client.buffers_to_send(max_bytes)
        data = p2.client.data_to_send(max_bytes)
        assert b"".join(pieces) == data
        assert all(type(x) is bytes or (type(x) is memoryview and x.readonly) for x in pieces)
        if max_bytes is not None:
            assert len(data) <= max_bytes
        if not data:
            assert pieces == []
            break


def test_a_large_payload_goes_out_as_views_of_the_message_bytes() -> None:
    p, snd, _ = _sender_pair()
    body = bytes(range(256)) * 1024  # 256 KiB: five frames
    snd.send(a.Message(body=body))
    pieces = p.client.buffers_to_send()
    views = [x for x in pieces if type(x) is memoryview]
    assert len(views) == 4 and all(v.obj is body for v in views)  # not copied
    assert sum(map(len, views)) > len(body) - 4096  # the last frame's few bytes are joined
    heads = [x for x in pieces if type(x) is bytes]
    assert all(len(h) < 300 for h in heads)  # frame headers and performatives, and the tail
    assert b"".join(pieces).endswith(body[-50:])
    events = _feed(p.server, pieces, "whole")
    (got,) = of(events, a.events.DeliveryReceived)
    assert got.message() == a.Message(body=body)


def test_small_frames_are_handed_over_joined() -> None:
    p, snd, _ = _sender_pair()
    for i in range(20):
        snd.send(b"m%d" % i)
    pieces = p.client.buffers_to_send()
    assert len(pieces) == 1 and type(pieces[0]) is bytes
    assert p.client.buffers_to_send() == []
    events = _feed(p.server, pieces, "whole")
    assert [e.data for e in of(events, a.events.DeliveryReceived)] == [
        b"m%d" % i for i in range(20)
    ]


def test_a_large_whole_frame_goes_out_as_a_read_only_view() -> None:
    p, snd, _ = _sender_pair()
    snd.send(bytes(10_000))  # one frame of its own, built by the engine
    (piece,) = p.client.buffers_to_send()
    assert type(piece) is memoryview and piece.readonly and len(piece) > 10_000


def test_buffers_to_send_refuses_a_bad_bound() -> None:
    conn = a.Connection()
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="max_bytes"):
            conn.buffers_to_send(bad)  # type: ignore[arg-type]


def test_buffers_to_send_during_sasl() -> None:
    client = a.Connection(sasl=a.sasl.ClientCredentials(username="u", password="p"))
    client.open()
    twin = a.Connection(sasl=a.sasl.ClientCredentials(username="u", password="p"))
    twin.open()
    assert b"".join(client.buffers_to_send(3)) == twin.data_to_send(3)
    assert b"".join(client.buffers_to_send()) == twin.data_to_send()
    assert client.buffers_to_send() == []


# -- receiving views, and deliveries held in pieces --------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    message=_big_messages(),
    max_frame_size=st.integers(512, 20_000),
    max_bytes=st.one_of(st.none(), st.integers(1, 50_000)),
    how=st.sampled_from(["whole", "cut"]),
)
def test_pieces_fed_in_turn_deliver_the_message(
    message: a.Message, max_frame_size: int, max_bytes: int | None, how: str
) -> None:
    p, snd, _ = _sender_pair(max_frame_size)
    snd.send(message)
    events: list[a.Event] = []
    while pieces := p.client.buffers_to_send(max_bytes):
        events += _feed(p.server, pieces, how)
    (got,) = of(events, a.events.DeliveryReceived)
    assert_same(got.message(), message)
    assert got.data == message.encode()
    assert_same(got.message(), message)  # from the joined bytes this time


def test_pieces_fed_byte_by_byte_deliver_the_message() -> None:
    p, snd, _ = _sender_pair(512)
    body = bytes(range(256)) * 20
    message = a.Message(properties=a.Properties(subject="s"), body=body)
    snd.send(message)
    events = _feed(p.server, p.client.buffers_to_send(), "bytes")
    (got,) = of(events, a.events.DeliveryReceived)
    assert got.message() == message and got.data == message.encode()


def test_a_frame_whose_payload_is_fed_apart_is_received_as_a_view() -> None:
    """The frame's header and performative in one piece, its payload in the next: the
    payload is a view of the bytes fed, not copied."""
    frame = a.framing.amqp10.encode_frame(
        a.definitions.amqp10.performatives.Transfer(
            handle=0, delivery_id=1, delivery_tag=b"t", more=False
        ),
        payload=bytes(range(256)) * 40,
    )
    head_size = len(frame) - 256 * 40
    for payload in (frame, memoryview(frame)):
        parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
        parser.feed(frame[:head_size])
        assert parser.next_frame() is None
        tail = payload[head_size:]
        parser.feed(tail)
        got = parser.next_frame()
        assert got is not None and type(got.payload) is memoryview
        assert got.payload.obj is (tail if type(tail) is bytes else frame)
        assert got.payload == frame[head_size:]
        assert parser.next_frame() is None and parser.buffered == 0


def test_a_view_of_a_bytearray_is_copied() -> None:
    """A view of bytes that may change is not kept: what was handed out keeps its value."""
    frame = a.framing.amqp10.encode_frame(
        a.definitions.amqp10.performatives.Transfer(
            handle=0, delivery_id=1, delivery_tag=b"t", more=False
        ),
        payload=b"x" * 9000,
    )
    head_size = len(frame) - 9000
    for whole in (True, False):
        data = bytearray(frame)
        parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
        if whole:
            parser.feed(memoryview(data))
        else:
            parser.feed(memoryview(data)[:head_size])
            parser.feed(memoryview(data)[head_size:].toreadonly())
        data[:] = bytes(len(data))
        got = parser.next_frame()
        assert got is not None and got.payload == b"x" * 9000


def test_views_of_bytes_in_another_shape_are_copied() -> None:
    frame = a.framing.amqp10.encode_frame(
        a.definitions.amqp10.performatives.Transfer(handle=0, delivery_id=1, delivery_tag=b"t"),
        payload=b"y" * 9000,
    )
    parser = a.framing.amqp10.FrameParser(max_frame_size=65536)
    parser.feed(memoryview(frame).cast("B", (len(frame) // 2, 2)))  # two dimensions
    got = parser.next_frame()
    assert got is not None and type(got.payload) is bytes and got.payload == b"y" * 9000


def test_views_fed_are_kept_or_copied_out_as_bytes_are() -> None:
    """Views of bytes fed to receive_data are held as bytes are: a delivery still arriving
    keeps a view where it makes up at least half of the view fed (no copy), and copies it
    out otherwise (the bytes behind the view fed are weighed by what it covers)."""
    p, snd, _ = _sender_pair()
    wire, ends = large_on_the_wire(snd, p.client)  # 256 KiB: five frames
    padded = wire[ends[1] : ends[2]] + a.framing.amqp10.encode_frame(None) * (
        1 << 17
    )  # 1 MiB of empty frames

    def retained(view: memoryview) -> int:
        before = tracemalloc.get_traced_memory()[0]
        assert not p.server.receive_data(view, p.now)
        return tracemalloc.get_traced_memory()[0] - before

    tracemalloc.start()
    try:
        alone = retained(memoryview(wire)[ends[0] : ends[1]])  # a view of ``wire``, kept
        copied = retained(memoryview(padded))  # a copy of the frame's payload
    finally:
        tracemalloc.stop()
    assert alone < 10_000 and 60_000 < copied < 200_000
    (e,) = of(p.server.receive_data(memoryview(wire)[ends[2] :], p.now), a.events.DeliveryReceived)
    assert e.data == LARGE


def test_the_data_of_a_delivery_in_pieces_is_joined_once() -> None:
    p, snd, _ = _sender_pair(1024)
    body = b"z" * 5000
    snd.send(body)
    events = _feed(p.server, p.client.buffers_to_send(), "whole")
    (got,) = of(events, a.events.DeliveryReceived)
    assert got.data is got.data == body
    same = a.events.DeliveryReceived(link=got.link, delivery=got.delivery, data=body, complete=True)
    assert same == got and hash(same) == hash(got) and repr(same) == repr(got)
    assert "data=b'zzz" in repr(got)


def test_an_event_built_from_pieces_compares_by_its_bytes() -> None:
    pieces = (b"ab", memoryview(b"cd"))
    built = a.events.DeliveryReceived(link=None, delivery=None, data=pieces, complete=True)  # type: ignore[arg-type]
    plain = a.events.DeliveryReceived(link=None, delivery=None, data=b"abcd", complete=True)  # type: ignore[arg-type]
    assert built == plain and repr(built) == repr(plain)
    assert built.data == b"abcd" and type(built.data) is bytes


# -- Message.decode of pieces ------------------------------------------------------------------


def _cuts(data: bytes, seed: int, n: int) -> list[bytes | memoryview]:
    rnd = random.Random(seed)
    points = sorted(rnd.sample(range(len(data) + 1), min(n, len(data) + 1)))
    view = memoryview(data)
    edges = [0, *points, len(data)]
    return [
        view[i:j] if k % 2 else bytes(view[i:j])
        for k, (i, j) in enumerate(itertools.pairwise(edges))
    ]


@settings(max_examples=150, deadline=None)
@given(message=_big_messages(), seed=st.integers(0, 1000), n=st.integers(0, 12))
def test_decoding_pieces_equals_decoding_their_join(message: a.Message, seed: int, n: int) -> None:
    data = message.encode()
    pieces = _cuts(data, seed, n)
    got = a.Message.decode(pieces)
    assert_same(got, a.Message.decode(data))
    assert_same(got, message)
    assert_same(a.Message.decode(tuple(pieces)), message)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=80), seed=st.integers(0, 1000), n=st.integers(0, 6))
def test_pieces_of_anything_decode_or_fail_as_their_join(data: bytes, seed: int, n: int) -> None:
    _same_outcome(data, _cuts(data, seed, n))


def _same_outcome(data: bytes, pieces: list[Any]) -> None:
    try:
        want: Any = a.Message.decode(data)
    except a.DecodeError as exc:
        want = (str(exc), exc.offset)
    try:
        got: Any = a.Message.decode(pieces)
    except a.DecodeError as exc:
        got = (str(exc), exc.offset)
    assert same(got, want)


_BIG = b"\x00\x53\x75\xb0" + (5000).to_bytes(4, "big") + b"d" * 5000
_HEADER = b"\x00\x53\x70\x45"  # an empty header list


@pytest.mark.parametrize(
    "data",
    [
        _HEADER + _BIG,  # sections found by their sizes
        _HEADER + _HEADER + _BIG,  # found, but repeated: the error of the join
        b"\x00\x80" + (0x70).to_bytes(8, "big") + b"\x45" + _BIG,  # a long descriptor
        b"\x01" + _BIG,  # not a section
        b"\x00\x53\x75\xa0\x02xy" + _BIG,  # a small data section (vbin8) first
        _BIG[:-1],  # cut short
        b"\x00\x53\x77\x00\x53\x70\x45" + _BIG,  # an amqp-value holding a described value
        b"\x00\x53\x77\x30" + _BIG,  # no such constructor
        b"\x00\x53\x77\xb1\x00\x00" + _BIG,  # a size cut short at the end of the pieces
        b"\x00\x53\x77\xa1",  # likewise
        b"\x00\x53\x77\x40" + _BIG,  # an amqp-value null, then data: a mixed body
        b"\x00\x53\x70\xc0\x01\x00" + _BIG + b"\x00\x53\x78\xc1\x01\x00",  # compound sizes
        b"\x00\x53\x75\xa0\x01",  # a small data section cut short
        b"\x00",
    ],
)
def test_pieces_of_odd_messages_decode_or_fail_as_their_join(data: bytes) -> None:
    for n in (2, 3, 7, 40):
        for seed in range(5):
            _same_outcome(data, _cuts(data, seed, n))
    _same_outcome(data, [data[:1], b"", data[1:]])


def test_a_large_data_section_is_copied_from_the_pieces_once() -> None:
    body = bytes(range(256)) * 100
    data = a.Message(body=body).encode()
    pieces = [memoryview(data)[i : i + 1000] for i in range(0, len(data), 1000)]
    got = a.Message.decode(pieces).body
    assert type(got) is a.Data and type(got.value) is bytes and got.value == body


def test_decode_of_pieces_that_are_not_bytes() -> None:
    with pytest.raises(TypeError):
        a.Message.decode(["text", b"x"])  # type: ignore[list-item]
    assert a.Message.decode([b"\x00\x53\x77\xa1\x02hi"]) == a.Message(body=a.AmqpValue("hi"))
