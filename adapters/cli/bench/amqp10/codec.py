"""The codec benchmark (``amqp-sansio bench codec``): one typical message encoded and
decoded, ours next to Qpid Proton's and next to rbfly's (the Cython AMQP 1.0 message codec
of a RabbitMQ Streams client), each pair in the alternating rounds of
:func:`amqp_sansio.adapters.cli.bench.results.compare`.

rbfly's ``encode_amqp`` writes only the application-properties and the body of its
``MessageCtx`` (header, properties and annotations it decodes but never encodes, rbfly
0.10), so against rbfly ours encodes the same two sections (:func:`rbfly_message`); both
decode the whole typical message, from our bytes. Before timing, each side reads the other's
bytes back as the same message.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10

from ..results import Result, compare

_BODY = bytes(range(256))
_MESSAGE_ID = "order-000042"
_TO = "queue://orders"
_SUBJECT = "order.created"
_CONTENT_TYPE = "application/octet-stream"
_CORRELATION_ID = str(uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321))
_APP_PROPS: dict[str, Any] = {
    "customer": "ACME Corp",
    "amount": 1234,
    "rate": 0.25,
    "express": True,
    "created": amqp.codec.amqp10.Timestamp(1_700_000_000_000),
}


def typical_message() -> amqp.Message:
    """The benchmark message: durable header with priority 4; message-id, to, subject,
    content-type and correlation-id; five application properties of mixed types; a 256-byte
    data body."""
    return amqp.Message(
        header=amqp.Header(durable=True, priority=4),
        properties=amqp.Properties(
            message_id=_MESSAGE_ID,
            to=_TO,
            subject=_SUBJECT,
            content_type=amqp.Symbol(_CONTENT_TYPE),
            correlation_id=_CORRELATION_ID,
        ),
        application_properties=dict(_APP_PROPS),
        body=_BODY,
    )


def rbfly_message() -> amqp.Message:
    """What rbfly's ``encode_amqp`` writes of :func:`typical_message`: its five
    application properties and its 256-byte data body, no header and no properties."""
    typical = typical_message()
    return amqp.Message(application_properties=typical.application_properties, body=typical.body)


def _proton_message() -> Any:
    import proton

    props = dict(_APP_PROPS)
    props["created"] = proton.timestamp(int(_APP_PROPS["created"]))
    return proton.Message(
        durable=True,
        priority=4,
        id=_MESSAGE_ID,
        address=_TO,
        subject=_SUBJECT,
        content_type=_CONTENT_TYPE,
        correlation_id=_CORRELATION_ID,
        properties=props,
        body=_BODY,
        inferred=True,
    )


def _rbfly_sides(encoded: bytes) -> tuple[Callable[[], object], Callable[[], object]] | None:
    """rbfly's encode (of :func:`rbfly_message`, into a reused buffer, as its publisher
    does) and decode (of our ``encoded`` typical message), checked first against ours;
    None when rbfly is not installed."""
    try:
        from rbfly.amqp import MessageCtx, decode_amqp, encode_amqp
    except ImportError:
        return None
    props = dict(_APP_PROPS)
    created = datetime.datetime.fromtimestamp(
        int(_APP_PROPS["created"]) / 1000, datetime.timezone.utc
    )
    props["created"] = created
    ctx = MessageCtx(_BODY, None, None, None, None, props, None)
    buffer = bytearray(4096)
    size = encode_amqp(buffer, ctx)
    # Same work: each side must read the other's bytes as the same message.
    if amqp.Message.decode(bytes(buffer[:size])) != rbfly_message():
        raise AssertionError("we do not read rbfly's benchmark message back")
    theirs = decode_amqp(encoded)
    header, properties = theirs.header, theirs.properties
    read = (
        header.durable,
        header.priority,
        properties.message_id,
        properties.to,
        properties.subject,
        str(properties.content_type),
        properties.correlation_id,
        theirs.app_properties,
        theirs.body,
    )
    expected = (True, 4, _MESSAGE_ID, _TO, _SUBJECT, _CONTENT_TYPE, _CORRELATION_ID, props, _BODY)
    if read != expected:
        raise AssertionError("rbfly does not read our benchmark message back")
    return (lambda: encode_amqp(buffer, ctx)), (lambda: decode_amqp(encoded))


def codec_benchmark(seconds: float = 1.0) -> Result:
    """Encode and decode :func:`typical_message`, ours and (if installed) Proton's; then
    ours and (if installed) rbfly's, ``"encode vs rbfly"`` of :func:`rbfly_message`,
    ``"decode vs rbfly"`` of the typical message."""
    message = typical_message()
    encoded = message.encode()
    if amqp.Message.decode(encoded) != message:
        raise AssertionError("the benchmark message does not round-trip")
    proton_encode: Callable[[], object] | None = None
    proton_decode: Callable[[], object] | None = None
    try:
        import proton
    except ImportError:
        proton = None  # type: ignore[assignment]
    if proton is not None:
        pmsg = _proton_message()
        pencoded = bytes(pmsg.encode())
        # Same work: each side must read the other's bytes as the same message.
        check = proton.Message()
        check.decode(encoded)
        if check.id != _MESSAGE_ID or bytes(memoryview(check.body)) != _BODY:  # type: ignore[arg-type]
            raise AssertionError("proton does not read our benchmark message back")
        theirs = amqp.Message.decode(pencoded)
        if theirs.properties != message.properties or theirs.body != message.body:
            raise AssertionError("we do not read proton's benchmark message back")
        target: Any = proton.Message()
        proton_encode = pmsg.encode
        proton_decode = lambda: target.decode(pencoded)  # noqa: E731
    decode = amqp.Message.decode
    rbfly = _rbfly_sides(encoded)
    rbfly_encode, rbfly_decode = (None, None) if rbfly is None else rbfly
    results: Result = {
        "encode": compare(message.encode, proton_encode, seconds),
        "decode": compare(lambda: decode(encoded), proton_decode, seconds),
        "encode vs rbfly": compare(rbfly_message().encode, rbfly_encode, seconds, peer="rbfly"),
        "decode vs rbfly": compare(lambda: decode(encoded), rbfly_decode, seconds, peer="rbfly"),
    }
    return results
