"""The AMQP 0-9-1 codec's target, ``amqp091-codec``, and its seeds.

The bytes, with no frame around them, are decoded three ways: as a field table (0-9-1 spec
4.2.5.5, :func:`amqp_sansio.amqp091.decode_table`), as a method frame's payload (4.2.6,
:func:`~amqp_sansio.amqp091.decode_method`) and as a content header's payload (4.2.6.1,
:func:`~amqp_sansio.amqp091.decode_content_header`). The invariant: each decodes or raises a
decoding error carrying a 0-9-1 reply code (501, 502, 505 or 540); what decodes encodes,
decodes back, and encodes to the same bytes (:func:`fuzz.common.roundtrip`). The seeds are
the payloads and tables of the ``amqp091-frames`` seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from amqp_sansio import amqp091

from ..common import FRAME_MAX, REMOTE_ERRORS, InvariantViolation, label_error, roundtrip
from .frames import AMQP091_REPLY_CODES, frame_seeds

__all__ = ["fuzz_amqp091_codec", "seeds"]


def _check_091_error(target: str, exc: BaseException) -> None:
    """A 0-9-1 decoding error must carry one of the spec's reply codes (0-9-1 spec 1.5)."""
    code = getattr(exc, "reply_code", None)
    if code not in AMQP091_REPLY_CODES:
        raise InvariantViolation(
            target, "reply-code", f"{exc!r} carries reply code {code}"
        ) from exc


def _encode_091_header(value: tuple[int, int, amqp091.methods.Properties]) -> bytes:
    return amqp091.encode_content_header(value[1], value[2])


def fuzz_amqp091_codec(data: bytes) -> str:
    """Target ``amqp091-codec``: the bytes decoded three ways, as a field table (0-9-1 spec
    4.2.5.5), a method frame's payload (4.2.6) and a content header's payload (4.2.6.1).
    Each decodes, or raises a decoding error with a 0-9-1 reply code; what decodes
    encodes, decodes back and encodes to the same bytes. The label begins ``ok:`` when
    one of the three decodes."""
    labels = []
    decoded = False
    decoders: tuple[tuple[str, Callable[[bytes], Any], Callable[[Any], bytes]], ...] = (
        ("table", amqp091.decode_table, amqp091.encode_table),
        ("method", amqp091.decode_method, _encode_091_method),
        ("header", amqp091.decode_content_header, _encode_091_header),
    )
    for name, decode, encode in decoders:
        try:
            value = decode(data)
        except REMOTE_ERRORS as exc:
            _check_091_error("amqp091-codec", exc)
            labels.append(f"{name}:{label_error(exc)}")
            continue
        roundtrip("amqp091-codec", value, encode, decode)
        labels.append(f"{name}={type(value).__name__}")
        decoded = True
    return ("ok:" if decoded else "") + "|".join(labels)


def _encode_091_method(method: amqp091.Method) -> bytes:
    return method.encode()


def _amqp091_codec_seeds() -> list[bytes]:
    """The payloads of the 0-9-1 frame seeds' method and content header frames, and the
    field tables they carry (every field type among them)."""
    out: list[bytes] = []
    for stream in frame_seeds():
        parser = amqp091.framing.FrameParser(FRAME_MAX, protocol_header=stream[:1] == b"A")
        try:
            parser.feed(stream)
            for frame in parser:
                if isinstance(frame, amqp091.MethodFrame):
                    out.append(frame.method.encode())
                    out += [
                        amqp091.encode_table(value)
                        for value in _method_arguments(frame.method)
                        if isinstance(value, dict)
                    ]
                elif isinstance(frame, amqp091.ContentHeaderFrame):
                    out.append(amqp091.encode_content_header(frame.body_size, frame.properties))
                    headers = getattr(frame.properties, "headers", None)
                    if headers:
                        out.append(amqp091.encode_table(headers))
        except REMOTE_ERRORS:
            continue  # the nearly valid seeds end in an error: take what came before
    out += [b"", b"\x00\x00\x00\x00", b"\x00\x0a\x00\x0a", b"\x00\x3c\x00\x00"]
    return out


def _method_arguments(method: amqp091.Method) -> list[Any]:
    """The argument values of a method, in field order."""
    return [getattr(method, name) for name, _ in method.FIELDS]


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``amqp091-codec`` (deterministic)."""
    return {"amqp091-codec": _amqp091_codec_seeds()}
