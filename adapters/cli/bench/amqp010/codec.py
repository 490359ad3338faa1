"""The AMQP 0-10 codec benchmark (``amqp-sansio bench codec --protocol 0-10``): a
``message.transfer`` command and its header segment encoded and decoded, ours next to
qpid-python's ``codec010`` (through its own ``qpid.framing`` op encoder and decoder), in
alternating rounds of the same run.

The work is one message: the command (destination, accept and acquire modes), its header
(``delivery-properties``: routing key, priority, delivery mode; ``message-properties``:
content type, a UUID message id, correlation id, reply-to, five application headers) and a
256-byte body, which both sides pass through as it is. Before timing, each side reads the
other's bytes back as the same message. qpid-python is found as the tests find it
(``$AMQP_SANSIO_PEERS_DIR/qpid-python``, else ``../shared/peers/qpid-python``); without it, only
our figures.
"""

from __future__ import annotations

import importlib
import os
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from amqp_sansio.amqp010 import definitions as amqp010

from ..results import Result, compare

__all__ = ["codec010_benchmark", "qpid_folder", "qpid_import", "qpid_python"]

_MESSAGE_ID = uuid.UUID("12345678-9abc-def0-0fed-cba987654321")
_TRANSFER: dict[str, Any] = {"destination": "amq.direct", "accept_mode": 0, "acquire_mode": 0}
_DELIVERY: dict[str, Any] = {"routing_key": "orders.created", "priority": 4, "delivery_mode": 2}
_APPLICATION_HEADERS: dict[str, Any] = {
    "customer": "ACME Corp",
    "amount": 1234,
    "express": True,
    "weight": 2.5,
    "region": "emea",
}
_BODY = bytes(range(256))


def qpid_folder() -> Path | None:
    """The qpid-python peer's folder (``$AMQP_SANSIO_PEERS_DIR/qpid-python``, else
    ``../shared/peers/qpid-python``), or None if it is not there."""
    configured = os.environ.get("AMQP_SANSIO_PEERS_DIR")
    peers = Path(configured) if configured else Path(__file__).resolve().parents[5] / "shared"
    folder = (peers if configured else peers / "peers") / "qpid-python"
    return folder if (folder / "qpid" / "framing.py").is_file() else None


def qpid_import(name: str) -> ModuleType | None:
    """The qpid-python peer's module ``name`` (``"qpid.framing"``, ``"qpid.messaging"``),
    its folder put on ``sys.path``; None if the peer is absent."""
    folder = qpid_folder()
    if folder is None:
        return None
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return importlib.import_module(name)


def qpid_python() -> ModuleType | None:
    """qpid-python's ``qpid.framing`` (the folder put on ``sys.path``), or None if absent."""
    return qpid_import("qpid.framing")


def _ours() -> tuple[amqp010.Command, list[amqp010.Struct]]:
    properties = amqp010.MessageProperties(
        content_type="application/json",
        message_id=_MESSAGE_ID,
        correlation_id=b"order-000042",
        reply_to=amqp010.ReplyTo(exchange="amq.direct", routing_key="replies"),
        application_headers=dict(_APPLICATION_HEADERS),
    )
    return amqp010.MessageTransfer(**_TRANSFER), [
        amqp010.DeliveryProperties(**_DELIVERY),
        properties,
    ]


def _theirs(framing: ModuleType) -> tuple[Any, list[Any]]:
    ops = importlib.import_module("qpid.ops")
    datatypes = importlib.import_module("qpid.datatypes")
    properties = ops.MessageProperties(
        content_type="application/json",
        message_id=datatypes.UUID(bytes=_MESSAGE_ID.bytes),
        correlation_id=b"order-000042",
        reply_to=ops.ReplyTo(exchange="amq.direct", routing_key="replies"),
        application_headers=dict(_APPLICATION_HEADERS),
    )
    return ops.MessageTransfer(**_TRANSFER), [ops.DeliveryProperties(**_DELIVERY), properties]


def _check_same(framing: ModuleType, wire: dict[str, bytes]) -> None:
    """Each side reads the other's bytes as the same message (so both do the same work)."""
    decoder = framing.OpDecoder()
    command, _ = amqp010.decode_command(wire["qpid command"])
    ours_command, ours_headers = _ours()
    if command != ours_command or amqp010.decode_header(wire["qpid header"]) != tuple(ours_headers):
        raise AssertionError("we do not read qpid-python's message back")
    theirs = decoder.decode_command(wire["ours command"])
    headers = decoder.decode_headers(wire["ours header"])
    if theirs.destination != "amq.direct" or [h.NAME for h in headers] != [
        "delivery_properties",
        "message_properties",
    ]:
        raise AssertionError("qpid-python does not read our message back")
    if headers[1].application_headers != _APPLICATION_HEADERS:
        raise AssertionError("qpid-python does not read our application headers back")


def codec010_benchmark(seconds: float = 1.0) -> Result:
    """One ``message.transfer`` with its header and body, encoded and decoded, ours and (if
    found) qpid-python's: operations per second and the ratio."""
    command, headers = _ours()
    encode_command, encode_header = amqp010.encode_command, amqp010.encode_header
    decode_command, decode_header = amqp010.decode_command, amqp010.decode_header
    body = _BODY
    wire = {"ours command": encode_command(command), "ours header": encode_header(headers)}
    command_bytes, header_bytes = wire["ours command"], wire["ours header"]

    def ours_encode() -> object:
        return [encode_command(command), encode_header(headers), body]

    def ours_decode() -> object:
        return decode_command(command_bytes), decode_header(header_bytes), body

    theirs: dict[str, Callable[[], object] | None] = {"encode": None, "decode": None}
    framing = qpid_python()
    if framing is not None:
        op, their_headers = _theirs(framing)
        encoder, decoder = framing.OpEncoder(), framing.OpDecoder()
        wire["qpid command"] = encoder.encode_command(op)
        wire["qpid header"] = b"".join(encoder.encode_compound(h) for h in their_headers)
        _check_same(framing, wire)

        def qpid_encode() -> object:
            return [
                encoder.encode_command(op),
                b"".join(encoder.encode_compound(h) for h in their_headers),
                body,
            ]

        def qpid_decode() -> object:
            return (
                decoder.decode_command(command_bytes),
                decoder.decode_headers(header_bytes),
                body,
            )

        theirs = {"encode": qpid_encode, "decode": qpid_decode}
    ours: dict[str, Callable[[], object]] = {"encode": ours_encode, "decode": ours_decode}
    return {
        f"message {name}": compare(ours[name], theirs[name], seconds, peer="qpid-python")
        for name in ours
    }
