"""The AMQP 0-9-1 codec benchmark (``amqp-sansio bench codec --protocol 0-9-1``): method
frames and content headers encoded and decoded, ours next to pamqp's (the codec under
aiormq and aio-pika), in alternating rounds of the same run.

The work is what a client does for each message: encode a ``basic.publish`` method frame
and its content header, decode a ``basic.deliver`` method frame and its content header.
The header carries typical properties (content type, delivery mode, priority, message id,
correlation id, timestamp and three headers). Ours decodes with a
:class:`~amqp_sansio.framing.amqp091.FrameParser` kept from one frame to the next, as an engine
keeps one per connection; pamqp with ``pamqp.frame.unmarshal``, as aiormq does. Before
timing, each side reads the other's bytes back as the same frame.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from amqp_sansio import amqp091

from ..results import Result, compare

__all__ = ["codec091_benchmark"]

_PUBLISH: dict[str, Any] = {
    "exchange": "amq.direct",
    "routing_key": "orders.created",
    "mandatory": True,
}
_DELIVER: dict[str, Any] = {
    "consumer_tag": "amq.ctag-7cQ1A3OkNKl5oBbh8Gy3wA",
    "delivery_tag": 42,
    "redelivered": False,
    "exchange": "amq.direct",
    "routing_key": "orders.created",
}
_HEADERS: dict[str, Any] = {"customer": "ACME Corp", "amount": 1234, "express": True}
_PROPERTIES: dict[str, Any] = {
    "content_type": "application/json",
    "delivery_mode": 2,
    "priority": 4,
    "message_id": "order-000042",
    "correlation_id": "12345678-9abc-def0-0fed-cba987654321",
}
_TIMESTAMP = 1_700_000_000
_BODY_SIZE = 256


def _ours() -> dict[str, Any]:
    props = amqp091.BasicProperties(
        **_PROPERTIES, headers=dict(_HEADERS), timestamp=amqp091.codec.Timestamp(_TIMESTAMP)
    )
    return {
        "publish": amqp091.spec.BasicPublish(**_PUBLISH),
        "deliver": amqp091.spec.BasicDeliver(**_DELIVER),
        "properties": props,
    }


def _pamqp() -> dict[str, Any]:
    from pamqp import commands, header

    props = commands.Basic.Properties(
        **_PROPERTIES,
        headers=dict(_HEADERS),
        timestamp=datetime.datetime.fromtimestamp(_TIMESTAMP, datetime.timezone.utc),
    )
    return {
        "publish": commands.Basic.Publish(**_PUBLISH),
        "deliver": commands.Basic.Deliver(**_DELIVER),
        "header": header.ContentHeader(0, _BODY_SIZE, props),
    }


def _parse_one(parser: amqp091.framing.FrameParser) -> Callable[[bytes], object]:
    feed, next_frame = parser.feed, parser.next_frame

    def parse(data: bytes) -> object:
        feed(data)
        return next_frame()

    return parse


def _check_same_frames(
    ours: dict[str, Any], theirs: dict[str, Any], wire: dict[str, bytes]
) -> None:
    """Each side reads the other's bytes as the same frame (so both do the same work)."""
    import pamqp.frame

    parse = _parse_one(amqp091.framing.FrameParser(0))
    for name in ("publish", "deliver"):
        method: Any = pamqp.frame.unmarshal(wire[f"ours {name}"])[2]
        if dict(method) != dict(theirs[name]):
            raise AssertionError(f"pamqp does not read our {name} back")
        frame = parse(wire[f"pamqp {name}"])
        if not isinstance(frame, amqp091.MethodFrame) or frame.method != ours[name]:
            raise AssertionError(f"we do not read pamqp's {name} back")
    _, _, head = pamqp.frame.unmarshal(wire["ours header"])
    if dict(getattr(head, "properties", {})) != dict(theirs["header"].properties):
        raise AssertionError("pamqp does not read our content header back")
    frame = parse(wire["pamqp header"])
    if not isinstance(frame, amqp091.ContentHeaderFrame) or frame.properties != ours["properties"]:
        raise AssertionError("we do not read pamqp's content header back")


def codec091_benchmark(seconds: float = 1.0) -> Result:
    """Method frames and content headers, encoded and decoded, ours and (if installed)
    pamqp's: operations per second and the ratio."""
    ours = _ours()
    publish, deliver, props = ours["publish"], ours["deliver"], ours["properties"]
    wire = {
        "ours publish": amqp091.encode_method_frame(1, publish),
        "ours deliver": amqp091.encode_method_frame(1, deliver),
        "ours header": amqp091.encode_header_frame(1, _BODY_SIZE, props),
    }
    parse = _parse_one(amqp091.framing.FrameParser(0))
    their_ops: dict[str, Callable[[], object] | None] = dict.fromkeys(
        ("method encode", "method decode", "header encode", "header decode")
    )
    try:
        import pamqp.frame
    except ImportError:
        pamqp = None  # type: ignore[assignment]
    if pamqp is not None:
        theirs = _pamqp()
        marshal, unmarshal = pamqp.frame.marshal, pamqp.frame.unmarshal
        for name in ("publish", "deliver", "header"):
            wire[f"pamqp {name}"] = marshal(theirs[name], 1)
        _check_same_frames(ours, theirs, wire)
        deliver_bytes, header_bytes = wire["ours deliver"], wire["ours header"]
        their_ops = {
            "method encode": lambda: marshal(theirs["publish"], 1),
            "method decode": lambda: unmarshal(deliver_bytes),
            "header encode": lambda: marshal(theirs["header"], 1),
            "header decode": lambda: unmarshal(header_bytes),
        }
    encode_method, encode_header = amqp091.encode_method_frame, amqp091.encode_header_frame
    deliver_bytes, header_bytes = wire["ours deliver"], wire["ours header"]
    our_ops: dict[str, Callable[[], object]] = {
        "method encode": lambda: encode_method(1, publish),
        "method decode": lambda: parse(deliver_bytes),
        "header encode": lambda: encode_header(1, _BODY_SIZE, props),
        "header decode": lambda: parse(header_bytes),
    }
    return {
        name: compare(our_ops[name], their_ops[name], seconds, peer="pamqp") for name in our_ops
    }
