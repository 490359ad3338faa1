"""The message (core spec 3.2): body forms, bare and annotated encodings, section rules."""

from __future__ import annotations

import pytest

import amqp_sansio as a
import amqp_sansio.codec.amqp10


def _full() -> a.Message:
    return a.Message(
        header=a.Header(durable=True, priority=7, ttl=1000, first_acquirer=True, delivery_count=2),
        delivery_annotations={"x-opt-da": 1, 7: "by ulong"},
        message_annotations={a.Symbol("x-opt-ma"): "v"},
        properties=a.Properties(
            message_id=42,
            user_id=b"me",
            to="q",
            subject="s",
            reply_to="r",
            correlation_id=b"\x01",
            content_type="t/p",
            content_encoding="gzip",
            absolute_expiry_time=5,
            creation_time=a.codec.amqp10.Timestamp(4),
            group_id="g",
            group_sequence=3,
            reply_to_group_id="rg",
        ),
        application_properties={"k": "v", "n": None},
        body=[a.Data(b"one"), a.Data(b"two")],
        footer={"hash": b"\x00" * 4},
    )


def test_every_section_round_trips() -> None:
    m = _full()
    decoded = a.Message.decode(m.encode())
    assert decoded == m
    assert decoded.encode() == m.encode()
    # A plain int message-id is sent as a ulong (message-id-ulong, 3.2.11).
    assert type(decoded.properties.message_id) is a.codec.amqp10.ULong  # type: ignore[union-attr]
    assert decoded.body == (a.Data(b"one"), a.Data(b"two"))


@pytest.mark.parametrize(
    "body",
    [
        b"x" * 4096,
        b"x" * 4097,
        b"y" * 100_000,
        [a.Data(b"a" * 5000), a.Data(b"b"), a.Data(b"c" * 9000)],
        [a.Data(b"a"), a.Data(b"b" * 70_000)],
    ],
)
def test_large_data_sections_encode_as_small_ones_do(body: object) -> None:
    """A large data section's bytes are joined in, not copied through a buffer: the
    encoding is the same as the codec's, section by section."""
    m = a.Message(header=a.Header(durable=True), body=body, footer={"f": 1})
    sections = [a.Header(durable=True), *(m.body if type(m.body) is tuple else [m.body])]
    footer = a.Message(footer={"f": 1}).encode()
    assert m.encode() == b"".join(a.encode(section) for section in sections) + footer
    assert a.Message.decode(m.encode()) == m
    assert m.encode_bare() == b"".join(a.encode(section) for section in sections[1:])
    assert type(m.encode()) is bytes and type(m.encode_bare()) is bytes


def test_bare_message_is_properties_application_properties_and_body() -> None:
    m = _full()
    bare = a.Message.decode(m.encode_bare())
    assert bare == m.bare()
    assert bare.header is None and bare.footer is None and bare.message_annotations is None
    assert bare.properties == m.properties and bare.body == m.body
    assert m.encode().find(m.encode_bare()) > 0  # the bare bytes sit inside, unchanged


@pytest.mark.parametrize(
    "given, expected",
    [
        (b"raw", a.Data(b"raw")),
        (bytearray(b"raw"), a.Data(b"raw")),
        (memoryview(b"raw"), a.Data(b"raw")),
        ("text", a.AmqpValue("text")),
        ({"k": 1}, a.AmqpValue({"k": 1})),
        ([1, 2], a.AmqpValue([1, 2])),
        ([a.Data(b"x")], a.Data(b"x")),
        ((a.AmqpSequence([1]), a.AmqpSequence([2])), (a.AmqpSequence([1]), a.AmqpSequence([2]))),
        (a.AmqpValue(None), a.AmqpValue(None)),
        (None, None),
    ],
)
def test_body_forms(given: object, expected: object) -> None:
    m = a.Message(body=given)
    assert m.body == expected
    assert a.Message.decode(m.encode()) == m if expected is not None else True


def test_body_cannot_mix_section_kinds() -> None:
    with pytest.raises(TypeError):
        a.Message(body=[a.Data(b"x"), a.AmqpSequence([1])])


def test_application_property_keys_must_be_strings() -> None:
    with pytest.raises(a.EncodeError):
        a.Message(application_properties={1: "x"}, body=b"").encode()  # type: ignore[dict-item]
    with pytest.raises(a.EncodeError):
        a.Message(application_properties={"k": object()}, body=b"").encode_bare()


def test_annotation_keys_must_be_symbols_or_ulongs() -> None:
    for bad in ({-1: "x"}, {b"k": 1}, {1.5: 2}):
        with pytest.raises(a.EncodeError):
            a.Message(message_annotations=bad, body=b"").encode()


def test_encode_errors_are_encode_errors() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    for body in (cyclic, 2**64, "\ud800"):
        with pytest.raises(a.EncodeError):
            a.Message(body=body).encode()


def _section(code: int, value: object) -> bytes:
    return b"\x00\x53" + bytes([code]) + a.encode(value)


HEADER = a.encode(a.Header(durable=True))
PROPS = a.encode(a.Properties(subject="s"))
DATA = _section(0x75, b"d")
SEQ = _section(0x76, [1])
VALUE = _section(0x77, "v")
FOOTER = _section(0x78, {a.Symbol("f"): 1})


@pytest.mark.parametrize(
    "raw, match",
    [
        (b"", "at least one section"),
        (PROPS + HEADER + DATA, "out of order"),
        (HEADER + HEADER + DATA, "out of order or repeated"),
        (VALUE + VALUE, "out of order or repeated"),
        (DATA + SEQ, "one kind"),
        (DATA + VALUE, "one kind"),
        (SEQ + DATA, "out of order"),
        (DATA + FOOTER + DATA, "out of order"),
        (a.encode("not described"), "described"),
        (b"\x00\x53\x10" + a.encode([]), "not a message section"),
        (b"\x00\xa3\x05x:y:z" + a.encode([]), "not a message section"),
        (_section(0x75, "text"), "binary"),
        (_section(0x74, [1]), "must be a map"),
        (_section(0x74, {a.Symbol("k"): 1}), "strings"),
        (_section(0x72, {"k": 1}), "symbols or ulongs"),
        (_section(0x71, [1]), "must be a map"),
        (_section(0x70, "x"), "list"),
    ],
)
def test_section_rules(raw: bytes, match: str) -> None:
    with pytest.raises(a.DecodeError, match=match):
        a.Message.decode(raw)


def test_repeated_data_and_sequence_sections_make_one_body() -> None:
    assert a.Message.decode(DATA + DATA).body == (a.Data(b"d"), a.Data(b"d"))
    assert a.Message.decode(SEQ + SEQ + FOOTER).body == (a.AmqpSequence([1]),) * 2


def test_symbolic_and_long_descriptors_are_accepted() -> None:
    symbolic = b"\x00\xa3\x14amqp:properties:list" + a.encode([None, None, None, "s"])
    assert a.Message.decode(symbolic + DATA).properties == a.Properties(subject="s")
    wide = b"\x00\x80" + (0x75).to_bytes(8, "big") + a.encode(b"d")
    assert a.Message.decode(wide).body == a.Data(b"d")


def test_null_annotation_and_property_maps_read_as_empty() -> None:
    raw = _section(0x71, None) + _section(0x72, None) + _section(0x74, None) + FOOTER[:3] + b"@"
    m = a.Message.decode(raw)
    assert m.delivery_annotations == m.message_annotations == m.application_properties == {}
    assert m.footer == {}
    # The sections are still there when the message is sent on.
    assert a.Message.decode(m.encode()) == m


def test_a_message_with_no_section_does_not_encode() -> None:
    with pytest.raises(a.EncodeError, match="at least one section"):
        a.Message().encode()
    with pytest.raises(a.EncodeError, match="at least one section"):
        a.Message(header=a.Header()).encode_bare()


def test_message_without_body_decodes() -> None:
    assert a.Message.decode(HEADER).body is None


def test_every_truncation_is_a_decode_error_unless_it_ends_a_section() -> None:
    m = _full()
    raw = m.encode()
    # Where each section ends: a cut there leaves a shorter, valid message.
    sections = [
        a.encode(m.header),
        _section(0x71, m.delivery_annotations),
        _section(0x72, m.message_annotations),
        a.encode(m.properties),
        _section(0x74, m.application_properties),
        DATA.replace(b"d", b"one"),
        DATA.replace(b"d", b"two"),
    ]
    ends, total = set(), 0
    for section in sections:
        total += len(section)
        ends.add(total)
    decoded_at = set()
    for cut in range(1, len(raw)):
        try:
            a.Message.decode(raw[:cut])
        except a.DecodeError:
            continue
        decoded_at.add(cut)
    assert decoded_at == ends


def test_nesting_limit_applies() -> None:
    deep: object = "x"
    for _ in range(70):
        deep = [deep]
    raw = a.Message(body=deep).encode()
    with pytest.raises(a.DecodeError, match="deeper"):
        a.Message.decode(raw)
    assert a.Message.decode(raw, max_depth=100).body == a.AmqpValue(deep)


@pytest.mark.parametrize("size", [0, 1, 255, 256, 70_000])
def test_data_head_is_what_the_codec_puts_before_a_body(size: int) -> None:
    from amqp_sansio.definitions.amqp10.message import data_head

    body = bytes(size)
    encoded = a.Message(body=body).encode()
    assert encoded == data_head(size) + body
