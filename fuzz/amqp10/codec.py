"""The AMQP 1.0 codec's targets and their seeds.

``decode``
    :func:`amqp_sansio.decode`.
``message``
    :meth:`amqp_sansio.Message.decode`, and the bare message's round trip.

The invariant: a target returns normally or raises an error that blames the remote side
(:data:`fuzz.common.REMOTE_ERRORS`); what decodes encodes, the encoding decodes, and encoding
that again gives the same bytes (:func:`fuzz.common.roundtrip`).

The seeds are values of every type, in both widths of each encoding and nested, every
composite of the spec, hand-made encodings the encoder never writes, and messages.
"""

from __future__ import annotations

import uuid
from typing import Any

import attrs

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10
import amqp_sansio.definitions.amqp10
from amqp_sansio import Described, Message, Symbol
from amqp_sansio.codec.amqp10 import AMQPType, Array
from amqp_sansio.definitions.amqp10 import messaging, performatives

from ..common import REMOTE_ERRORS, InvariantViolation, label_error, roundtrip

__all__ = ["fuzz_decode", "fuzz_message", "message_seeds", "seed_messages", "seeds"]


def _shape(value: Any) -> str:
    """The decoded value's type, for the outcome label."""
    t = type(value)
    if t is Array:
        return f"Array[{value.type.value}{'+d' if value.descriptor is not None else ''}]"
    if t is Described:
        return f"Described[{type(value.descriptor).__name__}]"
    return t.__name__


def fuzz_decode(data: bytes) -> str:
    """Target ``decode``: returns an outcome label; raises on a broken invariant."""
    try:
        value = amqp.decode(data)
    except REMOTE_ERRORS as exc:
        return label_error(exc)
    roundtrip("decode", value, amqp.encode, amqp.decode)
    return "ok:" + _shape(value)


def _message_encode(m: Message) -> bytes:
    return m.encode()


def fuzz_message(data: bytes) -> str:
    """Target ``message``: :meth:`Message.decode`, then the full and bare round trips."""
    try:
        message = Message.decode(data)
    except REMOTE_ERRORS as exc:
        return label_error(exc)
    roundtrip("message", message, _message_encode, Message.decode)
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
        roundtrip("message", bare_message, Message.encode_bare, Message.decode)
    present = [f.name for f in attrs.fields(Message) if getattr(message, f.name) is not None]
    return "ok:" + ",".join(present) + ":" + _shape(message.body)


# -- seeds -------------------------------------------------------------------------------------


def _values() -> list[Any]:
    """Varied values covering every type, both widths of each encoding, and nesting."""
    from amqp_sansio.codec.amqp10 import (
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
            target=a.definitions.amqp10.transactions.Coordinator(
                capabilities=[a.definitions.amqp10.transactions.TxnCapability.LOCAL_TRANSACTIONS]
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
            state=a.definitions.amqp10.transactions.TransactionalState(
                txn_id=b"tx", outcome=a.Accepted()
            ),
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
        a.definitions.amqp10.transactions.Declare(),
        a.definitions.amqp10.transactions.Declare(global_id=b"gid"),
        a.definitions.amqp10.transactions.Declared(txn_id=b"\x01"),
        a.definitions.amqp10.transactions.Discharge(txn_id=b"\x01", fail=True),
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
            message_id=a.codec.amqp10.ULong(2**40),
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
    for depth in (amqp.codec.amqp10.DEFAULT_MAX_DEPTH, amqp.codec.amqp10.DEFAULT_MAX_DEPTH + 1):
        v: Any = []
        for _ in range(depth - 1):
            v = [v]
        seeds.append(amqp.encode(v))
    return seeds


def seed_messages() -> list[Message]:
    """Messages with every section, and bodies of each kind (the selector's target
    evaluates selectors against some of them)."""
    a = amqp
    props = a.Properties(
        message_id="id-1",
        to="queue",
        content_type="application/json",
        creation_time=1_700_000_000_000,
        correlation_id=amqp.codec.amqp10.ULong(9),
    )
    return [
        Message(body=b"hello"),
        Message(body="a string value"),
        Message(body=None, properties=props),
        Message(body={"k": [1, 2.5, None]}, application_properties={"a": 1, "b": "x"}),
        Message(
            header=a.Header(durable=True, ttl=5000),
            delivery_annotations={Symbol("x-opt-lock"): uuid.UUID(int=7)},
            message_annotations={
                "x-opt-enqueued-time": a.codec.amqp10.Timestamp(1),
                17: "ulong key",
            },
            properties=props,
            application_properties={"n": a.codec.amqp10.UInt(3)},
            body=[a.Data(b"one"), a.Data(b"two"), a.Data(b"")],
            footer={Symbol("hash"): b"\x01\x02"},
        ),
        Message(body=[a.AmqpSequence([1, 2]), a.AmqpSequence(["x"])]),
        Message(body=a.AmqpSequence([])),
        Message(body=a.AmqpValue(None)),
        Message(header=a.Header(), body=b"z" * 400),
        Message(
            properties=a.Properties(message_id=uuid.UUID(int=2), user_id=b"me"),
            body=a.codec.amqp10.Array(AMQPType.INT, [1, 2, 3]),
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


def message_seeds() -> list[bytes]:
    """Encoded messages: the seed messages, then hand-made ones."""
    return [m.encode() for m in seed_messages()] + _raw_message_seeds()


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``decode`` and ``message`` (deterministic)."""
    values = [amqp.encode(v) for v in _values()] + _raw_value_seeds()
    messages = message_seeds()
    return {
        "decode": values + messages[:4],
        "message": messages + [amqp.encode(amqp.AmqpValue(v)) for v in _values()[:40]],
    }
