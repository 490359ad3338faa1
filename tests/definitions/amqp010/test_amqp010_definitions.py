"""AMQP 0-10 controls, commands and header structs (0-10 spec 3.3, 4.5, 4.6): the generated
module is what the generator writes, every class round-trips, qpid-python reads what we write
and we read what it writes, and hostile payloads end in the typed errors."""

from __future__ import annotations

import contextlib
import importlib.util
import struct
import uuid
from types import ModuleType
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ROOT
from support import amqp010 as strategies
from support.qpid_peer import qpid_module, qpid_spec_xml

from amqp_sansio.codec.amqp010 import (
    Array,
    DecodeError,
    EncodeError,
    Struct32,
    TypeCode,
    UnknownCodeError,
)
from amqp_sansio.definitions import amqp010 as d
from amqp_sansio.definitions.amqp010 import commands, spec

CLASSES = [
    value
    for module in (spec, commands)
    for value in vars(module).values()
    if isinstance(value, type)
    and issubclass(value, (d.Control, d.Command, d.Struct))
    and value.__module__ == module.__name__
]
STRUCTS_BY_NAME = {c.NAME: c for c in CLASSES if issubclass(c, d.Struct)}
CODED_STRUCTS = [c for c in STRUCTS_BY_NAME.values() if c.CODE is not None]
OPS = [c for c in CLASSES if not issubclass(c, d.Struct)]
#: qpid-python leaves these classes out of its definitions.
QPID_SKIPS = ("file.", "stream.")


def _generator() -> ModuleType:
    path = ROOT / "tests" / "definitions" / "amqp010" / "generate_spec.py"
    module_spec = importlib.util.spec_from_file_location("amqp_sansio_generate_amqp010", path)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def test_the_modules_are_what_the_generator_writes() -> None:
    xml = qpid_spec_xml()
    generator = _generator()
    expected = generator.render(generator.Spec(xml), xml.name)
    assert sorted(expected) == sorted(generator.MODULES)
    for name, text in expected.items():
        assert (ROOT / "amqp_sansio" / "definitions" / "amqp010" / name).read_text() == text


def test_the_generator_writes_where_it_is_told(tmp_path: Any) -> None:
    xml = qpid_spec_xml()
    generator = _generator()
    generator.main(["--xml", str(xml), "--output", str(tmp_path)])
    expected = generator.render(generator.Spec(xml), xml.name)
    assert {name: (tmp_path / name).read_text() for name in expected} == expected
    with pytest.raises(ValueError, match="cannot resolve"):
        generator.Spec(xml).resolve("nonesuch", "message")


def test_every_class_of_the_definition() -> None:
    assert len(d.CONTROLS) == 25 and len(d.COMMANDS) == 59 and len(d.STRUCTS) == 14
    assert spec.SessionAttach.NAME == "session.attach"
    assert (commands.MessageTransfer.CLASS_CODE, commands.MessageTransfer.CODE) == (4, 1)
    assert commands.QueueQuery.RESULT == "queue-query-result"
    assert spec.ExecutionErrorCode.INVALID_ARGUMENT == 542
    assert spec.ConnectionCloseCode.FRAMING_ERROR == 501
    assert spec.SegmentType.HEADER == 2
    assert spec.MessageAcceptMode.NONE == 1


# -- values --------------------------------------------------------------------------------

_SEQUENCE_SET = st.lists(
    st.tuples(st.integers(0, 1000), st.integers(0, 1000)).map(sorted).map(tuple), max_size=1
).map(tuple)
_ARRAYS = st.one_of(
    st.just(Array(TypeCode.VOID, ())),
    st.lists(st.text(max_size=10), min_size=1, max_size=3).map(
        lambda items: Array(TypeCode.STR16, items)
    ),
)


QPID_STRUCTS = [c for c in CODED_STRUCTS if not c.NAME.startswith(("file-", "stream-"))]


def _field(type_name: str, depth: int, qpid: bool) -> st.SearchStrategy[Any]:
    if type_name == "map":
        return strategies.qpid_maps()
    if type_name == "array":
        return _ARRAYS
    if type_name == "sequence-set":
        return _SEQUENCE_SET
    if type_name == "datetime":
        return st.integers(0, (1 << 53) - 1)
    if type_name == "struct32":
        pool = QPID_STRUCTS if qpid else CODED_STRUCTS
        return st.sampled_from(pool).flatmap(lambda c: values(c, depth + 1, qpid))
    if type_name in STRUCTS_BY_NAME:
        return values(STRUCTS_BY_NAME[type_name], depth + 1, qpid)
    return strategies.scalar(type_name)


def values(cls: type[Any], depth: int = 0, qpid: bool = False) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` with any of their fields set."""
    fields = {}
    for name, type_name in cls.FIELDS:
        if type_name == "bit":
            fields[name] = st.booleans()
        elif depth < 2 or type_name not in ("struct32",):
            fields[name] = st.none() | _field(type_name, depth, qpid)
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


def _encode(value: Any, sync: bool = False) -> bytes:
    if isinstance(value, d.Command):
        return d.encode_command(value, sync=sync)
    return d.encode_control(value)


@pytest.mark.parametrize("cls", OPS, ids=lambda c: c.NAME)
@settings(max_examples=15)
@given(data=st.data())
def test_every_control_and_command_round_trips(cls: type[Any], data: st.DataObject) -> None:
    value = data.draw(values(cls))
    sync = data.draw(st.booleans())
    octets = _encode(value, sync)
    if isinstance(value, d.Command):
        assert d.decode_command(octets) == (value, sync)
    else:
        assert d.decode_control(octets) == value
    for end in range(len(octets)):
        with pytest.raises(DecodeError):
            (d.decode_command if isinstance(value, d.Command) else d.decode_control)(octets[:end])


@pytest.mark.parametrize("cls", CODED_STRUCTS, ids=lambda c: c.NAME)
@settings(max_examples=15)
@given(data=st.data())
def test_every_struct_round_trips_as_struct32_and_header(
    cls: type[Any], data: st.DataObject
) -> None:
    value = data.draw(values(cls))
    assert d.decode_struct32(d.encode_struct32(value)) == value
    assert d.decode_header(d.encode_header([value, value])) == (value, value)


def test_split_header_gives_each_struct_undecoded() -> None:
    """``split_header``: each struct32 of a header segment, its code and octets, in order;
    joined they are the segment; a size past the end or short of the code is refused."""
    delivery = spec.DeliveryProperties(routing_key="k", priority=4)
    props = spec.MessageProperties(content_type="t", application_headers={"a": 1})
    segment = d.encode_header((delivery, props))
    parts = d.split_header(segment)
    assert [code for code, _ in parts] == [0x0401, 0x0403]
    assert b"".join(octets for _, octets in parts) == segment
    assert [d.decode_struct32(octets) for _, octets in parts] == [delivery, props]
    assert d.split_header(b"") == []
    with pytest.raises(DecodeError):
        d.split_header(segment[:-1])
    with pytest.raises(DecodeError):
        d.split_header(b"\x00\x00\x00\x01\x04\x01")


@given(st.binary(max_size=40))
def test_split_header_takes_any_octets_or_raises_the_typed_error(data: bytes) -> None:
    try:
        parts = d.split_header(data)
    except DecodeError as exc:
        assert exc.error_code == 501
    else:
        assert b"".join(octets for _, octets in parts) == data


# -- qpid-python, both ways ----------------------------------------------------------------


def _to_qpid(value: Any) -> Any:
    datatypes = qpid_module("qpid.datatypes")
    ops = qpid_module("qpid.ops")
    if isinstance(value, d.Struct):
        kind = ops.COMPOUND[value.NAME.replace("-", "_")]
        return kind(**{n: _qpid_field(t, getattr(value, n)) for n, t in value.FIELDS})
    if isinstance(value, uuid.UUID):
        return datatypes.UUID(bytes=value.bytes)
    if isinstance(value, Array):
        return [_to_qpid(v) for v in value.items]
    if isinstance(value, dict):
        return {k: _to_qpid(v) for k, v in value.items()}
    return strategies.plain(value)


def _qpid_field(type_name: str, field: Any) -> Any:
    datatypes = qpid_module("qpid.datatypes")
    if type_name == "sequence-no" and field is not None:
        return datatypes.serial(field)
    if type_name == "sequence-set" and field is not None:
        ranges = [datatypes.Range(*pair) for pair in field]
        field = datatypes.RangedSet()
        field.ranges = ranges
        return field
    return _to_qpid(field)


def _qpid_op(value: Any, sync: bool) -> Any:
    ops = qpid_module("qpid.ops")
    table = ops.COMMANDS if isinstance(value, d.Command) else ops.CONTROLS
    op = table[value.CLASS_CODE << 8 | value.CODE]()
    for name, type_name in value.FIELDS:
        setattr(op, name, _qpid_field(type_name, getattr(value, name)))
    op.sync = sync
    return op


def _from_qpid(value: Any) -> Any:
    """qpid-python's decoded op or struct as our plain values, for comparison."""
    if hasattr(value, "FIELDS"):
        return {f.name: _from_qpid(getattr(value, f.name)) for f in value.FIELDS}
    if type(value).__name__ == "RangedSet":
        return [[r.lower.value, r.upper.value] for r in value.ranges]
    return strategies.from_qpid(value)


def _ours_plain(value: Any) -> Any:
    if isinstance(value, d.Compound):
        return {n: _ours_plain(getattr(value, n)) for n, _ in value.FIELDS}
    if isinstance(value, Array):
        return [_ours_plain(v) for v in value.items]
    if isinstance(value, Struct32):
        return value
    if isinstance(value, dict):
        return {k: _ours_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_ours_plain(v) for v in value]
    return strategies.plain(value)


QPID_OPS = [c for c in OPS if not c.NAME.startswith(QPID_SKIPS)]


@pytest.mark.parametrize("cls", QPID_OPS, ids=lambda c: c.NAME)
@settings(max_examples=15)
@given(data=st.data())
def test_controls_and_commands_against_qpid_both_ways(cls: type[Any], data: st.DataObject) -> None:
    framing = qpid_module("qpid.framing")
    value = data.draw(values(cls, qpid=True))
    sync = data.draw(st.booleans()) and isinstance(value, d.Command)
    ours = _encode(value, sync)
    op = _qpid_op(value, sync)
    encoder, decoder = framing.OpEncoder(), framing.OpDecoder()
    if isinstance(value, d.Command):
        theirs = encoder.encode_command(op)
        decoded = decoder.decode_command(ours)
        assert decoded.sync == sync
        ours_again, ours_sync = d.decode_command(theirs)
        assert ours_sync == sync
    else:
        theirs = encoder.encode_compound(op)
        decoded = decoder.decode_control(ours)
        ours_again = d.decode_control(theirs)
    assert _from_qpid(decoded) == _ours_plain(value)
    assert ours_again == value
    assert theirs == ours


@settings(max_examples=40)
@given(st.lists(st.sampled_from(QPID_STRUCTS).flatmap(lambda c: values(c, qpid=True)), max_size=3))
def test_headers_against_qpid_both_ways(structs: list[Any]) -> None:
    framing = qpid_module("qpid.framing")
    ours = d.encode_header(structs)
    theirs = b"".join(framing.OpEncoder().encode_compound(_to_qpid(s)) for s in structs)
    assert ours == theirs
    assert [_from_qpid(s) for s in framing.OpDecoder().decode_headers(ours)] == [
        _ours_plain(s) for s in structs
    ]
    assert d.decode_header(theirs) == tuple(structs)


# -- hostile payloads ----------------------------------------------------------------------


@given(st.binary(max_size=80))
def test_arbitrary_payloads_decode_or_raise_the_typed_error(data: bytes) -> None:
    for decode in (d.decode_control, d.decode_command, d.decode_header, d.decode_struct32):
        try:
            decode(data)
        except DecodeError as exc:
            assert exc.error_code in (501, 540)


@given(st.sampled_from(OPS).flatmap(values), st.binary(min_size=1, max_size=8))
def test_mutated_payloads_decode_or_raise_the_typed_error(value: Any, noise: bytes) -> None:
    octets = bytearray(_encode(value))
    for index, octet in enumerate(noise):
        octets[(index * 7) % len(octets)] ^= octet
    with contextlib.suppress(DecodeError):
        (d.decode_command if isinstance(value, d.Command) else d.decode_control)(bytes(octets))


@pytest.mark.parametrize(
    ("decode", "octets", "error"),
    [
        (d.decode_control, b"\x01", DecodeError),
        (d.decode_control, b"\x01\x63\x00\x00", UnknownCodeError),
        (d.decode_control, b"\x01\x0a\x00\x00\x00", DecodeError),
        (d.decode_control, b"\x01\x0a\x01\x00", DecodeError),
        (d.decode_command, b"\x04\x01\x01", DecodeError),
        (d.decode_command, b"\x04\x01\x01\x02\x00\x00", DecodeError),
        (d.decode_command, b"\x04\x01\x02\x01\x00\x00\x00", DecodeError),
        (d.decode_command, b"\x04\x63\x01\x00\x00\x00", UnknownCodeError),
        (d.decode_struct32, b"\x00\x00\x00\x02\x04\x63", UnknownCodeError),
        (d.decode_struct32, b"\x00\x00\x00\x03\x04\x01", DecodeError),
        (d.decode_struct32, b"\x00\x00\x00\x09\x04\x01\x00\x00", DecodeError),
        (d.decode_struct32, b"\x00\x00\x00\x05\x04\x01\x00\x00\x00", DecodeError),
        (d.decode_header, b"\x00\x00\x00", DecodeError),
    ],
)
def test_hostile_payloads(decode: Any, octets: bytes, error: type[Exception]) -> None:
    with pytest.raises(error) as caught:
        decode(octets)
    assert caught.type is error or issubclass(caught.type, error)


def test_an_unknown_command_is_not_implemented() -> None:
    with pytest.raises(UnknownCodeError) as caught:
        d.decode_command(b"\x04\x63\x01\x00\x00\x00")
    assert caught.value.error_code == spec.ExecutionErrorCode.NOT_IMPLEMENTED


def test_a_nested_struct_with_another_code_or_extra_octets() -> None:
    result = d.encode_command(commands.ExecutionResult(command_id=1, value=spec.Acquired()))
    assert d.decode_command(result)[0].value == spec.Acquired()
    xid = d.encode_command(commands.DtxStart(xid=spec.Xid(format=1)))
    bad_code = xid.replace(b"\x06\x04", b"\x06\x05", 1)
    with pytest.raises(DecodeError, match="code of another"):
        d.decode_command(bad_code)
    size = xid.index(b"\x06\x04") - 4
    longer = bytearray(xid)
    struct.pack_into(">I", longer, size, struct.unpack_from(">I", xid, size)[0] + 1)
    with pytest.raises(DecodeError):
        d.decode_command(bytes(longer) + b"\x00")
    with pytest.raises(DecodeError):
        d.decode_command(bytes(longer))
    with pytest.raises(DecodeError):
        d.decode_command(xid[: size + 5])


def test_raw_struct32_values_and_what_cannot_be_encoded() -> None:
    raw = commands.ExecutionResult(command_id=1, value=Struct32(0x0404, b"\x00\x00"))
    decoded, _ = d.decode_command(d.encode_command(raw))
    assert decoded.value == spec.Acquired()
    with pytest.raises(EncodeError):
        d.encode_struct32(spec.ReplyTo())
    with pytest.raises(EncodeError):
        d.encode_header([spec.ReplyTo()])
    with pytest.raises(EncodeError):
        d.encode_control(spec.ConnectionTune(channel_max=-1))
    assert attrs.has(spec.CommandFragment)
    with pytest.raises(EncodeError, match="every field"):
        spec.CommandFragment._write(bytearray(), spec.CommandFragment(command_id=1), 1)


def test_a_struct_without_packing_flags_has_every_field() -> None:
    fragment = spec.CommandFragment(command_id=7, byte_ranges=((0, 9),))
    out = bytearray()
    spec.CommandFragment._write(out, fragment, 1)
    assert spec.CommandFragment._read(bytes(out), 0, 1) == (fragment, len(out))


def test_every_combination_of_present_fields() -> None:
    """More packing-flags values than a class keeps plans for still decode."""
    full = commands.ExecutionException(
        error_code=542,
        command_id=3,
        class_code=4,
        command_code=1,
        field_index=0,
        description="bad",
        error_info={"k": 1},
    )
    names = [name for name, _ in full.FIELDS]
    for mask in range(1 << len(names)):
        value = attrs.evolve(full, **{n: None for i, n in enumerate(names) if not mask >> i & 1})
        assert d.decode_command(d.encode_command(value)) == (value, False)


def test_the_face_holds_the_codec_and_the_definitions() -> None:
    from amqp_sansio import amqp010
    from amqp_sansio.codec import amqp010 as codec

    assert amqp010.definitions is d and amqp010.codec is codec
