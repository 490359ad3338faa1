"""The codec benchmark (``amqp-sansio bench codec``): one typical message encoded and
decoded, ours next to Qpid Proton's, in the alternating rounds of
:func:`amqp_sansio.adapters.cli.bench.results.compare`.
"""

from __future__ import annotations

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


def codec_benchmark(seconds: float = 1.0) -> Result:
    """Encode and decode :func:`typical_message`, ours and (if installed) Proton's."""
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
    results: Result = {
        "encode": compare(message.encode, proton_encode, seconds),
        "decode": compare(lambda: amqp.Message.decode(encoded), proton_decode, seconds),
    }
    return results
