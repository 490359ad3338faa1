"""The AMQP 0-10 codec's target, ``amqp010-codec``, and its seeds.

The bytes, with no segment around them, are decoded four ways: as a ``map`` (0-10 spec 3.2,
:func:`amqp_sansio.codec.amqp010.decode`), as a control segment's payload and a command
segment's (4.5, :func:`~amqp_sansio.definitions.amqp010.decode_control`,
:func:`~amqp_sansio.definitions.amqp010.decode_command`) and as a header segment's (4.6,
:func:`~amqp_sansio.definitions.amqp010.decode_header`). The invariant: each decodes or raises
a decoding error carrying a 0-10 code (501 ``framing-error`` or 540 ``not-implemented``);
what decodes encodes, decodes back, and encodes to the same bytes
(:func:`fuzz.common.roundtrip`). The seeds are encoded controls, commands, headers and maps.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from amqp_sansio.codec import amqp010 as codec
from amqp_sansio.definitions import amqp010 as d

from ..common import REMOTE_ERRORS, InvariantViolation, label_error, roundtrip

__all__ = ["fuzz_amqp010_codec", "seeds"]

#: The codes a 0-10 decoding error may carry (connection.close-code, execution.error-code).
AMQP010_CODES = (501, 540)


def _decode_map(data: bytes) -> Any:
    return codec.decode("map", data)


def _encode_map(value: Any) -> bytes:
    return codec.encode("map", value)


def _encode_command(value: tuple[d.Command, bool]) -> bytes:
    return d.encode_command(value[0], sync=value[1])


def fuzz_amqp010_codec(data: bytes) -> str:
    """Target ``amqp010-codec``: the bytes decoded as a map (0-10 spec 3.2), a control's and a
    command's payload (4.5) and a header segment's (4.6). Each decodes, or raises a decoding
    error with a 0-10 code; what decodes encodes, decodes back and encodes to the same
    bytes. The label begins ``ok:`` when one of the four decodes."""
    labels = []
    decoded = False
    decoders: tuple[tuple[str, Callable[[bytes], Any], Callable[[Any], bytes]], ...] = (
        ("map", _decode_map, _encode_map),
        ("control", d.decode_control, d.encode_control),
        ("command", d.decode_command, _encode_command),
        ("header", d.decode_header, d.encode_header),
    )
    for name, decode, encode in decoders:
        try:
            value = decode(data)
        except REMOTE_ERRORS as exc:
            code = getattr(exc, "error_code", None)
            if code not in AMQP010_CODES:
                raise InvariantViolation(
                    "amqp010-codec", "error-code", f"{exc!r} carries code {code}"
                ) from exc
            labels.append(f"{name}:{label_error(exc)}")
            continue
        roundtrip("amqp010-codec", value, encode, decode)
        labels.append(f"{name}={type(value).__name__}")
        decoded = True
    return ("ok:" if decoded else "") + "|".join(labels)


def _seed_values() -> tuple[list[d.Control], list[d.Command], list[d.Struct], list[Any]]:
    headers = {"customer": "ACME", "amount": 12, "express": True, "ratio": 0.5, "none": None}
    nested = {
        "list": [1, "two", [3.0]],
        "map": {"k": b"v"},
        "array": codec.Array(codec.TypeCode.UINT16, [1, 2]),
        "typed": codec.Typed(codec.TypeCode.STR8, "s"),
        "id": uuid.UUID(int=7),
    }
    controls: list[d.Control] = [
        d.ConnectionStart(server_properties=headers, mechanisms=["PLAIN"], locales=["en_US"]),
        d.ConnectionStartOk(client_properties=nested, mechanism="PLAIN", response=b"\0u\0p"),
        d.ConnectionTune(channel_max=256, max_frame_size=65535, heartbeat_max=60),
        d.ConnectionOpen(virtual_host="/", insist=True),
        d.ConnectionClose(reply_code=200, reply_text="bye"),
        d.SessionAttach(name=b"session-1", force=True),
        d.SessionCompleted(commands=((0, 9),), timely_reply=True),
        d.SessionDetach(name=b"session-1"),
    ]
    commands: list[d.Command] = [
        d.MessageTransfer(destination="amq.direct", accept_mode=0, acquire_mode=0),
        d.MessageSubscribe(queue="q", destination="0", accept_mode=1, arguments=headers),
        d.MessageFlow(destination="0", unit=0, value=100),
        d.ExecutionSync(),
        d.ExecutionResult(command_id=3, value=d.Acquired(transfers=((1, 2),))),
        d.ExecutionException(error_code=404, command_id=1, description="no queue"),
        d.QueueDeclare(queue="q", durable=True, arguments=nested),
        d.DtxStart(xid=d.Xid(format=1, global_id=b"g", branch_id=b"b"), join=True),
    ]
    structs: list[d.Struct] = [
        d.DeliveryProperties(routing_key="k", priority=4, delivery_mode=2),
        d.MessageProperties(
            content_type="text/plain",
            message_id=uuid.UUID(int=1),
            reply_to=d.ReplyTo(exchange="e", routing_key="r"),
            application_headers=headers,
        ),
        d.FragmentProperties(first=True, last=True, fragment_size=10),
    ]
    return controls, commands, structs, [headers, nested, {}]


def _amqp010_codec_seeds() -> list[bytes]:
    controls, commands, structs, maps = _seed_values()
    out = [d.encode_control(c) for c in controls]
    out += [d.encode_command(c, sync=i % 2 == 1) for i, c in enumerate(commands)]
    out += [d.encode_header(structs), d.encode_header(structs[:1])]
    out += [codec.encode("map", m) for m in maps]
    out += [b"", b"\x01\x63", b"\x04\x01\x01\x00\x00\x00", b"\x00\x00\x00\x02\x04\x63"]
    return out


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``amqp010-codec`` (deterministic)."""
    return {"amqp010-codec": _amqp010_codec_seeds()}
