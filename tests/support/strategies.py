"""Hypothesis strategies for the AMQP 1.0 type system, the composite types and messages.

Every strategy builds values of exactly the Python types that decoding gives back (a ``uint``
field of a composite holds a plain ``int``, a ``symbol`` field a :class:`Symbol`, ...), so a
round trip can be checked with :func:`same`, which also compares the types and treats NaN as
equal to itself. Descriptors of free-standing described values are never those of a
registered composite: ``(0x1234 << 32) | n`` or ``"test:..."`` symbols.
"""

from __future__ import annotations

import enum
import struct
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from hypothesis import strategies as st

import amqp_sansio as a
import amqp_sansio.codec.amqp10
import amqp_sansio.definitions.amqp10
from amqp_sansio.definitions.amqp10 import messaging, performatives

T = a.codec.amqp10.AMQPType
Strategy = st.SearchStrategy

# -- equality -----------------------------------------------------------------------------


def same(x: Any, y: Any) -> bool:
    """True when ``x`` and ``y`` are the same AMQP value: equal, of the same Python types all
    the way down (``ULong(1)`` is not ``1``, ``Symbol("a")`` is not ``"a"``), with maps
    compared in order and floats compared by their bits (so NaN is NaN and -0.0 is not 0.0).
    """
    tx = type(x)
    if tx is not type(y):
        return False
    if isinstance(x, enum.Enum):
        return x is y
    if isinstance(x, float):
        fmt = ">f" if tx is a.codec.amqp10.Float else ">d"
        return struct.pack(fmt, x) == struct.pack(fmt, y)
    if isinstance(x, list | tuple):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y, strict=True))
    if isinstance(x, dict):
        return len(x) == len(y) and all(
            same(k1, k2) and same(v1, v2)
            for (k1, v1), (k2, v2) in zip(x.items(), y.items(), strict=True)
        )
    if attrs.has(tx):
        return all(same(getattr(x, f.name), getattr(y, f.name)) for f in attrs.fields(tx))
    return bool(x == y)


def assert_same(got: Any, want: Any) -> None:
    assert same(got, want), f"\n got: {got!r}\nwant: {want!r}"


# -- primitives ---------------------------------------------------------------------------

#: Values where an encoding changes width, or a type ends.
_BOUNDARIES = (
    0,
    1,
    2,
    127,
    128,
    255,
    256,
    0x7FFF,
    0x8000,
    0xFFFF,
    0x10000,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFF,
    0x100000000,
    0x7FFFFFFFFFFFFFFF,
    0x8000000000000000,
    0xFFFFFFFFFFFFFFFF,
)
_EDGES = sorted({*_BOUNDARIES, *(-n for n in _BOUNDARIES), -129, -0x8001, -0x80000001})


def bounded(lo: int, hi: int) -> Strategy[int]:
    """Integers in [lo, hi], often at the ends, at 0 and -1, and at the encoding boundaries."""
    edges = [n for n in _EDGES if lo <= n <= hi]
    return st.one_of(st.sampled_from(edges), st.integers(lo, hi))


def wrapped(cls: type, lo: int, hi: int) -> Strategy[Any]:
    return bounded(lo, hi).map(cls)


nulls: Strategy[None] = st.none()
booleans: Strategy[bool] = st.booleans()
ubytes = wrapped(a.codec.amqp10.UByte, 0, 0xFF)
ushorts = wrapped(a.codec.amqp10.UShort, 0, 0xFFFF)
uints = wrapped(a.codec.amqp10.UInt, 0, 0xFFFFFFFF)
ulongs = wrapped(a.codec.amqp10.ULong, 0, 0xFFFFFFFFFFFFFFFF)
bytes_ = wrapped(a.codec.amqp10.Byte, -0x80, 0x7F)
shorts = wrapped(a.codec.amqp10.Short, -0x8000, 0x7FFF)
ints = wrapped(a.codec.amqp10.Int, -0x80000000, 0x7FFFFFFF)
longs: Strategy[int] = bounded(-0x8000000000000000, 0x7FFFFFFFFFFFFFFF)
timestamps = wrapped(a.codec.amqp10.Timestamp, -0x8000000000000000, 0x7FFFFFFFFFFFFFFF)

_FLOAT32_MAX = struct.unpack(">f", b"\x7f\x7f\xff\xff")[0]
_FLOAT32_TINY = struct.unpack(">f", b"\x00\x00\x00\x01")[0]
floats: Strategy[a.codec.amqp10.Float] = st.one_of(
    st.sampled_from(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            _FLOAT32_MAX,
            -_FLOAT32_MAX,
            _FLOAT32_TINY,
            float("inf"),
            float("-inf"),
            float("nan"),
        ]
    ),
    st.floats(width=32),
).map(a.codec.amqp10.Float)
doubles: Strategy[float] = st.one_of(
    st.sampled_from(
        [
            0.0,
            -0.0,
            1.0,
            -1.0,
            1.7976931348623157e308,
            5e-324,
            float("inf"),
            float("-inf"),
            float("nan"),
        ]
    ),
    st.floats(),
)


def _raw_decimal(cls: type, width: int, samples: Iterable[str]) -> Strategy[Any]:
    return st.one_of(
        st.integers(0, (1 << width) - 1).map(cls),
        st.sampled_from([0, (1 << width) - 1]).map(cls),
        st.sampled_from(list(samples)).map(cls.from_decimal),  # type: ignore[attr-defined]
    )


_DECIMAL_SAMPLES = (
    "0",
    "-0",
    "1",
    "-1",
    "1.5",
    "123.456",
    "-9.99",
    "NaN",
    "sNaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "1E+10",
    "1E-10",
)
decimal32s = _raw_decimal(
    a.codec.amqp10.Decimal32, 32, (*_DECIMAL_SAMPLES, "9999999", "9999999E+90", "1E-101")
)
decimal64s = _raw_decimal(
    a.codec.amqp10.Decimal64, 64, (*_DECIMAL_SAMPLES, "9999999999999999", "1E+369", "1E-398")
)
decimal128s = _raw_decimal(
    a.codec.amqp10.Decimal128, 128, (*_DECIMAL_SAMPLES, "9" * 34, "1E+6111", "1E-6176")
)

#: Any Unicode scalar value (no surrogates): ASCII, Latin-1, BMP, astral planes.
unicode_chars = st.characters(codec="utf-8")
chars: Strategy[a.codec.amqp10.Char] = st.one_of(
    st.sampled_from(["\x00", "a", "\x7f", "\x80", "é", "\uffff", "\U0001f600", "\U0010ffff"]),
    unicode_chars,
).map(a.codec.amqp10.Char)
uuids: Strategy[uuid.UUID] = st.one_of(
    st.sampled_from([uuid.UUID(int=0), uuid.UUID(int=(1 << 128) - 1)]),
    st.integers(0, (1 << 128) - 1).map(lambda n: uuid.UUID(int=n)),
)
#: Short (vbin8) and, now and then, long (vbin32) binary.
binaries: Strategy[bytes] = st.one_of(
    st.binary(max_size=32),
    st.binary(min_size=254, max_size=300),
)
texts: Strategy[str] = st.one_of(
    st.text(unicode_chars, max_size=16),
    st.sampled_from(["", "é", "\U0001f600", "日本語", "x" * 255, "x" * 256, "é" * 128]),
    st.text(unicode_chars, min_size=130, max_size=200),
)
_ascii_text = st.text(st.characters(codec="ascii"), max_size=16)
symbols: Strategy[a.Symbol] = st.one_of(
    _ascii_text,
    st.sampled_from(["", "amqp:x", "\x00\x7f", "s" * 256]),
).map(a.Symbol)
nonempty_symbols = st.text(st.characters(codec="ascii"), min_size=1, max_size=16).map(a.Symbol)

#: Descriptors of no registered composite type.
descriptors: Strategy[Any] = st.one_of(
    st.integers(0, 0xFFFFFFFF).map(lambda n: a.codec.amqp10.ULong((0x1234 << 32) | n)),
    _ascii_text.map(lambda s: a.Symbol("test:" + s)),
)

#: One strategy per primitive type (core spec 1.6), by type name.
PRIMITIVES: dict[str, Strategy[Any]] = {
    "null": nulls,
    "boolean": booleans,
    "ubyte": ubytes,
    "ushort": ushorts,
    "uint": uints,
    "ulong": ulongs,
    "byte": bytes_,
    "short": shorts,
    "int": ints,
    "long": longs,
    "float": floats,
    "double": doubles,
    "decimal32": decimal32s,
    "decimal64": decimal64s,
    "decimal128": decimal128s,
    "char": chars,
    "timestamp": timestamps,
    "uuid": uuids,
    "binary": binaries,
    "string": texts,
    "symbol": symbols,
}

scalars: Strategy[Any] = st.one_of(*PRIMITIVES.values())


def _not_nan(x: Any) -> bool:
    return not (isinstance(x, float) and x != x)


#: Values usable as map keys: hashable, and NaN left out (a NaN key is never found again).
hashable_scalars: Strategy[Any] = scalars.filter(_not_nan)
map_keys: Strategy[Any] = st.one_of(
    hashable_scalars,
    # A list used as a key decodes as a tuple (and encodes back as the same list).
    st.lists(hashable_scalars, max_size=3).map(tuple),
    st.builds(a.Described, descriptors, hashable_scalars),
)

# -- arrays -------------------------------------------------------------------------------

_small_lists = st.lists(scalars, max_size=4)
_small_maps = st.dictionaries(hashable_scalars, scalars, max_size=3)

#: The strategy for one element of an array of each element type (arrays of arrays apart).
ARRAY_ELEMENTS: dict[a.codec.amqp10.AMQPType, Strategy[Any]] = {
    T.NULL: nulls,
    T.BOOLEAN: booleans,
    T.UBYTE: ubytes,
    T.USHORT: ushorts,
    T.UINT: uints,
    T.ULONG: ulongs,
    T.BYTE: bytes_,
    T.SHORT: shorts,
    T.INT: ints,
    T.LONG: longs,
    T.FLOAT: floats,
    T.DOUBLE: doubles,
    T.DECIMAL32: decimal32s,
    T.DECIMAL64: decimal64s,
    T.DECIMAL128: decimal128s,
    T.CHAR: chars,
    T.TIMESTAMP: timestamps,
    T.UUID: uuids,
    T.BINARY: binaries,
    T.STRING: texts,
    T.SYMBOL: symbols,
    T.LIST: _small_lists,
    T.MAP: _small_maps,
}


@st.composite
def _null_arrays(draw: Callable[..., Any], described: bool | None = None) -> a.codec.amqp10.Array:
    # Null elements take no bytes: the decoder accepts at most MAX_ZERO_WIDTH_ELEMENTS (2)
    # of them in one array and the encoder refuses to write more.
    descriptor = None
    if described or (described is None and draw(st.booleans())):
        descriptor = draw(descriptors)
    return a.codec.amqp10.Array(T.NULL, [None] * draw(st.integers(0, 2)), descriptor)


def arrays_of(
    element_type: a.codec.amqp10.AMQPType, *, described: bool | None = None, max_size: int = 5
) -> Strategy[a.codec.amqp10.Array]:
    """Arrays of one element type, described or not (``None``: either)."""
    if element_type is T.NULL:
        return _null_arrays(described)
    if element_type is T.ARRAY:
        inner = st.sampled_from(list(ARRAY_ELEMENTS)).flatmap(lambda t: arrays_of(t, max_size=3))
        items: Strategy[list[Any]] = st.lists(inner, max_size=3)
    else:
        items = st.lists(ARRAY_ELEMENTS[element_type], max_size=max_size)
    descs: Strategy[Any] = (
        descriptors
        if described
        else st.none()
        if described is False
        else st.one_of(st.none(), descriptors)
    )
    return st.builds(a.codec.amqp10.Array, st.just(element_type), items, descs)


ARRAY_TYPES = [*ARRAY_ELEMENTS, T.ARRAY]
arrays: Strategy[a.codec.amqp10.Array] = st.sampled_from(ARRAY_TYPES).flatmap(arrays_of)
#: Arrays of arrays of arrays ..., several levels deep, some described.
arrays_of_arrays: Strategy[a.codec.amqp10.Array] = st.recursive(
    arrays_of(T.ARRAY, max_size=2),
    lambda inner: st.builds(
        a.codec.amqp10.Array,
        st.just(T.ARRAY),
        st.lists(inner, max_size=3),
        st.one_of(st.none(), descriptors),
    ),
    max_leaves=6,
)

# -- any value ------------------------------------------------------------------------------


def make_values(
    keys: Strategy[Any], *, max_leaves: int, max_size: int, described_descriptors: bool = True
) -> Strategy[Any]:
    """Any AMQP value: scalars and arrays, nested in lists, maps and described values."""

    def extend(children: Strategy[Any]) -> Strategy[Any]:
        options = [
            st.lists(children, max_size=max_size),
            st.dictionaries(keys, children, max_size=max_size),
            st.builds(a.Described, descriptors, children),
        ]
        if described_descriptors:
            # A described value may itself be the descriptor.
            inner = st.builds(a.Described, descriptors, hashable_scalars)
            options.append(st.builds(a.Described, inner, children))
        return st.one_of(*options)

    return st.recursive(st.one_of(scalars, arrays), extend, max_leaves=max_leaves)


values = make_values(map_keys, max_leaves=25, max_size=6)
#: Smaller values, for the fields of composites and messages.
small_values = make_values(map_keys, max_leaves=6, max_size=3, described_descriptors=False)

# -- composites -----------------------------------------------------------------------------


def opt(strategy: Strategy[Any]) -> Strategy[Any]:
    return st.one_of(st.none(), strategy)


uint_ = bounded(0, 0xFFFFFFFF)
ushort_ = bounded(0, 0xFFFF)
ubyte_ = bounded(0, 0xFF)
ulong_ = bounded(0, 0xFFFFFFFFFFFFFFFF)
_short_text = st.text(unicode_chars, max_size=12)
_symbol_tuples = st.lists(symbols, max_size=3).map(tuple)
message_ids = st.one_of(ulongs, uuids, st.binary(max_size=16), _short_text)
application_properties_maps = st.dictionaries(
    _short_text, st.one_of(scalars, st.builds(a.Described, descriptors, scalars)), max_size=4
)


def make_composites(
    field_values: Strategy[Any],
) -> tuple[dict[type, Strategy[Any]], dict[type, Strategy[Any]]]:
    """One strategy per composite type, and one per restricted type (the message sections
    that wrap one value), with the free-form fields built from ``field_values``."""
    fields_maps = st.dictionaries(symbols, field_values, max_size=3)
    annotations_maps = st.dictionaries(st.one_of(symbols, ulongs), field_values, max_size=3)
    extension = st.builds(a.Described, descriptors, field_values)

    errors = st.builds(
        a.Error, condition=nonempty_symbols, description=opt(_short_text), info=opt(fields_maps)
    )
    received = st.builds(messaging.Received, section_number=uint_, section_offset=ulong_)
    accepted = st.builds(a.Accepted)
    rejected = st.builds(a.Rejected, error=opt(errors))
    released = st.builds(a.Released)
    modified = st.builds(
        a.Modified,
        delivery_failed=opt(booleans),
        undeliverable_here=opt(booleans),
        message_annotations=opt(fields_maps),
    )
    declared = st.builds(a.definitions.amqp10.transactions.Declared, txn_id=st.binary(max_size=8))
    outcomes = st.one_of(accepted, rejected, released, modified, declared, extension)
    transactional_states = st.builds(
        a.definitions.amqp10.transactions.TransactionalState,
        txn_id=st.binary(max_size=8),
        outcome=opt(outcomes),
    )
    delivery_states = st.one_of(received, outcomes, transactional_states)

    terminus_common: dict[str, Strategy[Any]] = dict(
        address=opt(_short_text),
        durable=st.sampled_from(messaging.TerminusDurability),
        expiry_policy=st.sampled_from(messaging.TerminusExpiryPolicy),
        timeout=uint_,
        dynamic=booleans,
        dynamic_node_properties=opt(fields_maps),
        capabilities=opt(_symbol_tuples),
    )
    sources = st.builds(
        a.Source,
        **terminus_common,
        distribution_mode=opt(symbols),
        filter=opt(st.dictionaries(symbols, st.one_of(st.none(), extension), max_size=2)),
        default_outcome=opt(outcomes),
        outcomes=opt(_symbol_tuples),
    )
    targets = st.builds(a.Target, **terminus_common)
    coordinators = st.builds(
        a.definitions.amqp10.transactions.Coordinator,
        capabilities=opt(
            st.lists(
                st.sampled_from(
                    [
                        a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS,
                        a.definitions.amqp10.transactions.TxnCapability.MULTI_TXNS_PER_SSN,
                        a.definitions.amqp10.transactions.TxnCapability.DISTRIBUTED_TRANSACTIONS,
                    ]
                ),
                max_size=3,
            ).map(tuple)
        ),
    )

    _caps = dict(
        offered_capabilities=opt(_symbol_tuples),
        desired_capabilities=opt(_symbol_tuples),
        properties=opt(fields_maps),
    )

    composites: dict[type, Strategy[Any]] = {
        performatives.Open: st.builds(
            performatives.Open,
            container_id=_short_text,
            hostname=opt(_short_text),
            max_frame_size=uint_,
            channel_max=ushort_,
            idle_time_out=opt(uint_),
            outgoing_locales=opt(_symbol_tuples),
            incoming_locales=opt(_symbol_tuples),
            **_caps,
        ),
        performatives.Begin: st.builds(
            performatives.Begin,
            remote_channel=opt(ushort_),
            next_outgoing_id=uint_,
            incoming_window=uint_,
            outgoing_window=uint_,
            handle_max=uint_,
            **_caps,
        ),
        performatives.Attach: st.builds(
            performatives.Attach,
            name=_short_text,
            handle=uint_,
            role=st.sampled_from(performatives.Role),
            snd_settle_mode=st.sampled_from(a.SenderSettleMode),
            rcv_settle_mode=st.sampled_from(a.ReceiverSettleMode),
            source=opt(st.one_of(sources, extension)),
            target=opt(st.one_of(targets, coordinators, extension)),
            unsettled=opt(st.dictionaries(st.binary(max_size=8), opt(delivery_states), max_size=2)),
            incomplete_unsettled=booleans,
            initial_delivery_count=opt(uint_),
            max_message_size=opt(ulong_),
            **_caps,
        ),
        performatives.Flow: st.builds(
            performatives.Flow,
            next_incoming_id=opt(uint_),
            incoming_window=uint_,
            next_outgoing_id=uint_,
            outgoing_window=uint_,
            handle=opt(uint_),
            delivery_count=opt(uint_),
            link_credit=opt(uint_),
            available=opt(uint_),
            drain=booleans,
            echo=booleans,
            properties=opt(fields_maps),
        ),
        performatives.Transfer: st.builds(
            performatives.Transfer,
            handle=uint_,
            delivery_id=opt(uint_),
            delivery_tag=opt(st.binary(max_size=32)),
            message_format=opt(uint_),
            settled=opt(booleans),
            more=booleans,
            rcv_settle_mode=opt(st.sampled_from(a.ReceiverSettleMode)),
            state=opt(delivery_states),
            resume=booleans,
            aborted=booleans,
            batchable=booleans,
        ),
        performatives.Disposition: st.builds(
            performatives.Disposition,
            role=st.sampled_from(performatives.Role),
            first=uint_,
            last=opt(uint_),
            settled=booleans,
            state=opt(delivery_states),
            batchable=booleans,
        ),
        performatives.Detach: st.builds(
            performatives.Detach, handle=uint_, closed=booleans, error=opt(errors)
        ),
        performatives.End: st.builds(performatives.End, error=opt(errors)),
        performatives.Close: st.builds(performatives.Close, error=opt(errors)),
        a.Error: errors,
        performatives.SaslMechanisms: st.builds(
            performatives.SaslMechanisms,
            # mandatory and multiple: at least one value (core spec 1.4)
            sasl_server_mechanisms=st.lists(symbols, min_size=1, max_size=3).map(tuple),
        ),
        performatives.SaslInit: st.builds(
            performatives.SaslInit,
            mechanism=nonempty_symbols,
            initial_response=opt(st.binary(max_size=40)),
            hostname=opt(_short_text),
        ),
        performatives.SaslChallenge: st.builds(
            performatives.SaslChallenge, challenge=st.binary(max_size=40)
        ),
        performatives.SaslResponse: st.builds(
            performatives.SaslResponse, response=st.binary(max_size=40)
        ),
        performatives.SaslOutcome: st.builds(
            performatives.SaslOutcome,
            code=st.sampled_from(performatives.SaslCode),
            additional_data=opt(st.binary(max_size=40)),
        ),
        a.Header: st.builds(
            a.Header,
            durable=booleans,
            priority=ubyte_,
            ttl=opt(uint_),
            first_acquirer=booleans,
            delivery_count=uint_,
        ),
        a.Properties: st.builds(
            a.Properties,
            message_id=opt(message_ids),
            user_id=opt(st.binary(max_size=16)),
            to=opt(_short_text),
            subject=opt(_short_text),
            reply_to=opt(_short_text),
            correlation_id=opt(message_ids),
            content_type=opt(symbols),
            content_encoding=opt(symbols),
            absolute_expiry_time=opt(timestamps),
            creation_time=opt(timestamps),
            group_id=opt(_short_text),
            group_sequence=opt(uint_),
            reply_to_group_id=opt(_short_text),
        ),
        messaging.Received: received,
        a.Accepted: accepted,
        a.Rejected: rejected,
        a.Released: released,
        a.Modified: modified,
        a.Source: sources,
        a.Target: targets,
        messaging.DeleteOnClose: st.builds(messaging.DeleteOnClose),
        messaging.DeleteOnNoLinks: st.builds(messaging.DeleteOnNoLinks),
        messaging.DeleteOnNoMessages: st.builds(messaging.DeleteOnNoMessages),
        messaging.DeleteOnNoLinksOrMessages: st.builds(messaging.DeleteOnNoLinksOrMessages),
        a.definitions.amqp10.transactions.Coordinator: coordinators,
        a.definitions.amqp10.transactions.Declare: st.builds(
            a.definitions.amqp10.transactions.Declare, global_id=opt(field_values)
        ),
        a.definitions.amqp10.transactions.Discharge: st.builds(
            a.definitions.amqp10.transactions.Discharge,
            txn_id=st.binary(max_size=8),
            fail=opt(booleans),
        ),
        a.definitions.amqp10.transactions.Declared: declared,
        a.definitions.amqp10.transactions.TransactionalState: transactional_states,
    }

    sections: dict[type, Strategy[Any]] = {
        a.Data: st.builds(a.Data, binaries),
        a.AmqpValue: st.builds(a.AmqpValue, field_values),
        a.AmqpSequence: st.builds(a.AmqpSequence, st.lists(field_values, max_size=4)),
        messaging.ApplicationProperties: st.builds(
            messaging.ApplicationProperties, opt(application_properties_maps)
        ),
        messaging.DeliveryAnnotations: st.builds(
            messaging.DeliveryAnnotations, opt(annotations_maps)
        ),
        messaging.MessageAnnotations: st.builds(
            messaging.MessageAnnotations, opt(annotations_maps)
        ),
        messaging.Footer: st.builds(messaging.Footer, opt(annotations_maps)),
    }
    return composites, sections


#: One strategy per composite type of the library, and one per restricted type.
COMPOSITES, SECTIONS = make_composites(small_values)

# -- messages -------------------------------------------------------------------------------


def make_messages(values: Strategy[Any]) -> Strategy[a.Message]:
    """Messages with every section, the annotation maps and the body built from ``values``.

    Every kind of body: none, one data section, several, one amqp-value, one or several
    amqp-sequence sections."""
    data_sections = st.builds(a.Data, binaries)
    sequence_sections = st.builds(a.AmqpSequence, st.lists(values, max_size=3))
    bodies = st.one_of(
        st.none(),
        data_sections,
        st.lists(data_sections, min_size=2, max_size=4).map(tuple),
        st.builds(a.AmqpValue, values),
        sequence_sections,
        st.lists(sequence_sections, min_size=2, max_size=3).map(tuple),
    )
    annotations = st.dictionaries(st.one_of(symbols, ulongs), values, max_size=3)
    return st.builds(
        a.Message,
        header=opt(COMPOSITES[a.Header]),
        delivery_annotations=opt(annotations),
        message_annotations=opt(annotations),
        properties=opt(COMPOSITES[a.Properties]),
        application_properties=opt(application_properties_maps),
        body=bodies,
        footer=opt(annotations),
    )


messages = make_messages(small_values)

_BARE = ("properties", "application_properties", "body")


def has_sections(message: a.Message, *, bare: bool = False) -> bool:
    """Whether the message (or its bare part) has a section to encode: with none at all,
    ``encode()`` refuses, as zero bytes are no message."""
    names = _BARE if bare else [f.name for f in attrs.fields(a.Message)]
    return any(getattr(message, name) is not None for name in names)
