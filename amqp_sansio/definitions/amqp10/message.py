"""The AMQP message (core spec 3.2): sections in a fixed order, encoded and decoded whole.

A message is a sequence of described sections::

    header? delivery-annotations? message-annotations? properties? application-properties?
    body footer?

where the body is one amqp-value, or one or more data sections, or one or more amqp-sequence
sections. The *bare message* is properties, application-properties and the body; the rest
annotates it in transit.
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Callable, Sequence
from typing import Any, cast

import attrs

from ...codec.amqp10 import decoder, encoder
from ...codec.amqp10.types import AMQPValue, Symbol, ULong
from ...errors import DecodeError, EncodeError
from .messaging import AmqpSequence, AmqpValue, Data, Header, Properties

__all__ = ["Body", "Message", "data_head"]

#: What :attr:`Message.body` holds.
Body = Data | AmqpValue | AmqpSequence | tuple[Data, ...] | tuple[AmqpSequence, ...] | None


def _to_body(
    value: AMQPValue | bytearray | memoryview | list[Data] | list[AmqpSequence],
) -> Body:
    """Body converter: ``bytes`` become a data section; a section or a tuple/list of data or
    amqp-sequence sections is kept; any other value becomes an amqp-value section."""
    kind = type(value)
    if kind is bytes:
        section = _new(Data)  # the common case, without Data's converter (bytes need none)
        _DATA_SET(section, value)
        return section
    if value is None or kind is Data or kind is AmqpValue or kind is AmqpSequence:
        return cast(Body, value)
    if isinstance(value, bytes | bytearray | memoryview):
        return Data(bytes(value))
    if (
        isinstance(value, list | tuple)
        and value
        and (all(type(v) is Data for v in value) or all(type(v) is AmqpSequence for v in value))
    ):
        # One section is held as itself, so that equal messages compare equal.
        return cast(Body, value[0] if len(value) == 1 else tuple(value))
    if isinstance(value, list | tuple) and any(type(v) in (Data, AmqpSequence) for v in value):
        raise TypeError("a body holds data sections or amqp-sequence sections, not a mix")
    return AmqpValue(cast(AMQPValue, value))


_SECTION_NAMES = {
    0x70: "header",
    0x71: "delivery-annotations",
    0x72: "message-annotations",
    0x73: "properties",
    0x74: "application-properties",
    0x75: "data",
    0x76: "amqp-sequence",
    0x77: "amqp-value",
    0x78: "footer",
}
_SYMBOLIC = {
    f"amqp:{name}:{kind}": code
    for code, name, kind in (
        (0x70, "header", "list"),
        (0x71, "delivery-annotations", "map"),
        (0x72, "message-annotations", "map"),
        (0x73, "properties", "list"),
        (0x74, "application-properties", "map"),
        (0x75, "data", "binary"),
        (0x76, "amqp-sequence", "list"),
        (0x77, "amqp-value", "*"),
        (0x78, "footer", "map"),
    )
}


@attrs.frozen(kw_only=True)
class Message:
    """An AMQP message (core spec 3.2).

    The annotation maps are plain dicts whose ``str`` keys are sent as symbols;
    ``application_properties`` has string keys. ``body`` holds the body section(s); pass
    ``bytes`` for one data section, or any other value for an amqp-value section.
    """

    header: Header | None = None
    delivery_annotations: dict[Any, Any] | None = None
    message_annotations: dict[Any, Any] | None = None
    properties: Properties | None = None
    application_properties: dict[str, Any] | None = None
    body: Body = attrs.field(default=None, converter=_to_body)
    footer: dict[Any, Any] | None = None

    # -- encoding ---------------------------------------------------------------------------

    def encode(self) -> bytes:
        """The annotated message: every section present, in the spec's order."""
        return self._encoded(bare=False)

    def encode_bare(self) -> bytes:
        """The bare message only: properties, application-properties and body (3.2)."""
        return self._encoded(bare=True)

    def _encoded(self, *, bare: bool) -> bytes:
        out = bytearray()
        parts: list[bytes] = []
        encoder.guarded(lambda m, o: m._encode_into(o, bare=bare, parts=parts), self, out)
        if parts:
            # A large data section: its bytes go into the result once, by this join.
            return b"".join((*parts, out))
        if not out:
            # Zero sections would be zero bytes, which is no message at all (3.2).
            raise EncodeError("a message has at least one section; this one has none")
        return bytes(out)

    def _parts(self, *, bare: bool = False) -> list[bytes]:
        """The encoding in pieces that join to :meth:`encode`'s (or :meth:`encode_bare`'s)
        bytes: a large data section's bytes are a piece of their own, the section's own
        ``bytes`` object, not copied (:meth:`Sender.send <amqp_sansio.Sender.send>` frames
        them as they are)."""
        out = bytearray()
        parts: list[bytes] = []
        encoder.guarded(lambda m, o: m._encode_into(o, bare=bare, parts=parts), self, out)
        if not out and not parts:
            # Zero sections would be zero bytes, which is no message at all (3.2).
            raise EncodeError("a message has at least one section; this one has none")
        if out:
            parts.append(bytes(out))
        return parts

    def bare(self) -> Message:
        """A copy holding only the bare message's sections."""
        return Message(
            properties=self.properties,
            application_properties=self.application_properties,
            body=self.body,
        )

    def _encode_into(self, out: bytearray, *, bare: bool, parts: list[bytes]) -> None:
        """Append the sections to ``out``; a large data section's bytes are not copied
        there: what ``out`` holds so far and then those bytes go to ``parts``, to be joined
        with the rest (what ``out`` holds at the end) once."""
        enc = encoder.encode_into
        if not bare:
            if self.header is not None:
                enc(self.header, out)
            if self.delivery_annotations is not None:
                out += b"\x00\x53\x71"
                encoder.enc_symbol_keyed_map(self.delivery_annotations, out)
            if self.message_annotations is not None:
                out += b"\x00\x53\x72"
                encoder.enc_symbol_keyed_map(self.message_annotations, out)
        if self.properties is not None:
            enc(self.properties, out)
        ap = self.application_properties
        if ap is not None:
            for key in ap:
                if type(key) is not str:
                    raise EncodeError(f"application-properties keys are strings, got {key!r}")
            out += b"\x00\x53\x74"
            encoder.enc_map(ap, out)
        body = self.body
        if type(body) is Data:
            value = body.value
            if len(value) > _INLINE:
                _data_apart(value, out, parts)
            else:
                out += b"\x00\x53\x75"
                encoder.enc_binary(value, out)
        elif type(body) is tuple:
            _encode_sections(body, out, parts)
        elif body is not None:
            enc(body, out)
        if not bare and self.footer is not None:
            out += b"\x00\x53\x78"
            encoder.enc_symbol_keyed_map(self.footer, out)

    # -- decoding ---------------------------------------------------------------------------

    @classmethod
    def decode(
        cls,
        data: bytes | bytearray | memoryview | Sequence[bytes | bytearray | memoryview],
        *,
        max_depth: int = decoder.DEFAULT_MAX_DEPTH,
    ) -> Message:
        """Decode a whole message (bare or annotated). Sections out of order or repeated, a
        body that mixes section kinds, or anything that is not a section, raise
        :class:`~amqp_sansio.DecodeError`.

        ``data`` may also be a list or tuple of pieces that join to the message (as a
        delivery's frames carry it, see :meth:`DeliveryReceived.message
        <amqp_sansio.engine.amqp10.events.DeliveryReceived.message>`): the result is the same, but
        the bytes of a large data section are copied from the pieces once, into the body's
        ``bytes``, without joining the whole message first."""
        if type(data) is list or type(data) is tuple:
            try:
                return _decode_pieces(data, max_depth)
            except decoder.DECODE_FAILURES as exc:
                raise decoder.as_decode_error(exc, 0) from None
        buf = decoder._as_bytes(data)  # type: ignore[arg-type]
        try:
            return _decode_message(buf, max_depth)
        except decoder.DECODE_FAILURES as exc:
            raise decoder.as_decode_error(exc, 0) from None


#: Data sections up to this many bytes are encoded in line; a larger one's bytes are joined
#: into the message once (:func:`_data_apart`), not copied into a buffer and then out of it.
_INLINE = 4096
_pack_vbin32 = struct.Struct(">BI").pack


def _encode_sections(body: tuple[Any, ...], out: bytearray, parts: list[bytes]) -> None:
    """A body of several sections (data or amqp-sequence), as :meth:`Message._encode_into`
    encodes a body of one."""
    for section in body:
        if type(section) is Data and len(section.value) > _INLINE:
            _data_apart(section.value, out, parts)
        else:
            encoder.encode_into(section, out)


def data_head(size: int) -> bytes:
    """The octets of a data section (core spec 3.2.6) before its ``size`` octets: the
    descriptor and a vbin8 or vbin32 constructor with the length (1.6.19). What a broker
    puts before a body it did not encode."""
    if size < 256:
        return b"\x00\x53\x75\xa0" + size.to_bytes(1, "big")
    return b"\x00\x53\x75" + _pack_vbin32(0xB0, size)


def _data_apart(value: bytes, out: bytearray, parts: list[bytes]) -> None:
    """A data section whose bytes are kept apart: its header ends ``out``, which moves to
    ``parts`` (and starts again empty), and then the bytes themselves."""
    out += b"\x00\x53\x75"
    out += _pack_vbin32(0xB0, len(value))
    parts.append(bytes(out))
    parts.append(value)
    out.clear()


_new = object.__new__
_SET = {
    name: getattr(Message, name).__set__
    for name in (
        "header",
        "delivery_annotations",
        "message_annotations",
        "properties",
        "application_properties",
        "body",
        "footer",
    )
}
_set_header = _SET["header"]
_set_da = _SET["delivery_annotations"]
_set_ma = _SET["message_annotations"]
_set_props = _SET["properties"]
_set_ap = _SET["application_properties"]
_set_body = _SET["body"]
_set_footer = _SET["footer"]


def _annotations(buf: bytes, pos: int, depth: int, what: str) -> tuple[Any, int]:
    c = buf[pos]
    value, end = decoder.DECODERS[c](buf, pos + 1, depth)
    if value is None:
        return {}, end  # a null map has no entries; it re-encodes as an empty map
    if type(value) is not dict:
        raise DecodeError(f"{what} must be a map", offset=pos)
    for key in value:
        if type(key) is not Symbol and type(key) is not ULong:
            raise DecodeError(f"{what} keys must be symbols or ulongs, got {key!r:.40}", offset=pos)
    return value, end


#: The sections that may follow each (0: none yet), in order (core spec 3.2): each at most
#: once, but for data and amqp-sequence sections, which make a body of one kind only.
_FOLLOWS = {
    last: frozenset(
        code
        for code in _SECTION_NAMES
        if (code > last or (code == last and code in (0x75, 0x76)))
        and not (0x75 <= code <= 0x77 and last != code and 0x75 <= last <= 0x77)
    )
    for last in (0, *_SECTION_NAMES)
}


def _section_error(descriptor: Any, code: int, last: int, start: int) -> DecodeError:
    """What is wrong with a section (``code``, -1 for none) after the section ``last``."""
    if code not in _SECTION_NAMES:
        shown = f"{descriptor:#x}" if type(descriptor) in (int, ULong) else repr(descriptor)
        return DecodeError(f"not a message section (descriptor {shown:.60})", offset=start)
    if code < last or (code == last and code not in (0x75, 0x76)):
        return DecodeError(f"{_SECTION_NAMES[code]} section out of order or repeated", offset=start)
    return DecodeError("a body holds one kind of section only", offset=start)


def _long_descriptor(buf: bytes, pos: int, depth: int) -> tuple[Any, int, int]:
    """A section descriptor other than a small ulong, at ``pos`` (after the 0x00): the
    descriptor, its section code (-1 for none) and where the section's value starts."""
    descriptor, pos = decoder.DECODERS[buf[pos]](buf, pos + 1, depth)
    if type(descriptor) is ULong:
        return descriptor, int(descriptor), pos
    if type(descriptor) is Symbol and descriptor in _SYMBOLIC:
        return descriptor, _SYMBOLIC[descriptor], pos
    return descriptor, -1, pos


def _app_properties(buf: bytes, pos: int, depth: int, start: int) -> tuple[dict[str, Any], int]:
    """An application-properties section's map, at ``pos``: string keys only."""
    ap, pos = decoder.DECODERS[buf[pos]](buf, pos + 1, depth)
    if ap is None:
        return {}, pos  # a null map has no entries; it re-encodes as an empty map
    if type(ap) is not dict:
        raise DecodeError("application-properties must be a map", offset=start)
    for key in ap:
        if type(key) is not str:
            raise DecodeError(
                f"application-properties keys must be strings, got {key!r:.40}", offset=start
            )
    return ap, pos


def _annotations_of(what: str) -> Callable[[bytes, int, int], tuple[Any, int]]:
    def decode(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
        return _annotations(buf, pos, depth, what)

    return decode


#: The sections other than the body and application-properties: how each is decoded, and
#: its place among them (header, delivery-annotations, message-annotations, properties,
#: footer).
_OTHER_SECTIONS: dict[int, tuple[Callable[[bytes, int, int], tuple[Any, int]], int]] = {
    0x70: (decoder.DESCRIBED[0x70], 0),
    0x71: (_annotations_of("delivery-annotations"), 1),
    0x72: (_annotations_of("message-annotations"), 2),
    0x73: (decoder.DESCRIBED[0x73], 3),
    0x78: (_annotations_of("footer"), 4),
}


def _decode_message(buf: bytes, depth: int) -> Message:
    L = len(buf)
    if L == 0:
        raise DecodeError("a message has at least one section", offset=0)
    if depth <= 0:
        raise decoder.too_deep(0)
    depth -= 1  # the section's descriptor counts as one level, as in the generic decoder
    described = decoder.DESCRIBED
    others = _OTHER_SECTIONS
    # header, delivery-annotations, message-annotations, properties, footer
    found: list[Any] = [None, None, None, None, None]
    ap = None
    body: Any = None
    # Data sections, amqp-sequence sections, or one amqp-value: one kind only.
    body_sections: list[Any] = []
    last = 0
    pos = 0
    while pos < L:
        start = pos
        if buf[pos] != 0x00:
            raise DecodeError("a message section must be a described value", offset=pos)
        if buf[pos + 1] == 0x53:
            code = descriptor = buf[pos + 2]
            pos += 3
        else:
            descriptor, code, pos = _long_descriptor(buf, pos + 1, depth)
        if code not in _FOLLOWS[last]:
            raise _section_error(descriptor, code, last, start)
        last = code
        if code == 0x75:
            c = buf[pos]
            if c == 0xA0:
                end = pos + 2 + buf[pos + 1]
                value = buf[pos + 2 : end]
            elif c == 0xB0:
                end = pos + 5 + decoder.unpack_I(buf, pos + 1)[0]
                value = buf[pos + 5 : end]
            else:
                raise DecodeError("a data section holds binary", offset=pos)
            if end > L:
                raise decoder.truncated(pos)
            pos = end
            section = _new(Data)
            _DATA_SET(section, value)
            body_sections.append(section)
        elif code == 0x74:
            ap, pos = _app_properties(buf, pos, depth, start)
        elif code == 0x76 or code == 0x77:
            section, pos = described[code](buf, pos, depth)
            body_sections.append(section)
        else:
            decode, at = others[code]
            found[at], pos = decode(buf, pos, depth)
    if body_sections:
        body = body_sections[0] if len(body_sections) == 1 else tuple(body_sections)
    m = _new(Message)
    _set_header(m, found[0])
    _set_da(m, found[1])
    _set_ma(m, found[2])
    _set_props(m, found[3])
    _set_ap(m, ap)
    _set_body(m, body)
    _set_footer(m, found[4])
    return m


_DATA_SET = Data.value.__set__  # type: ignore[attr-defined]


class _Pieces:
    """Bytes held as pieces, read by position without joining them."""

    def __init__(self, pieces: Sequence[bytes | bytearray | memoryview]) -> None:
        self.views = [memoryview(p).cast("B") for p in pieces]
        self.starts = []
        at = 0
        for view in self.views:
            self.starts.append(at)
            at += len(view)
        self.size = at

    def take(self, start: int, stop: int) -> bytes:
        """Bytes ``start`` to ``stop`` (clipped at the end), copied once."""
        stop = min(stop, self.size)
        if start >= stop:
            return b""
        views, starts = self.views, self.starts
        i = bisect.bisect_right(starts, start) - 1
        got = []
        while i < len(views) and starts[i] < stop:
            at = starts[i]
            got.append(views[i][max(start - at, 0) : stop - at])
            i += 1
        return got[0].tobytes() if len(got) == 1 else b"".join(got)


#: The sizes of the fixed-width encodings, by the constructor's high nibble (core spec 1.6).
_FIXED_WIDTH = {0x4: 0, 0x5: 1, 0x6: 2, 0x7: 4, 0x8: 8, 0x9: 16}


def _value_end(pieces: _Pieces, pos: int) -> int:
    """Where the encoded value at ``pos`` ends, read from its constructor and size alone
    (core spec 1.2, 1.6); -1 for a described value or a constructor that is not one."""
    head = pieces.take(pos, pos + 5)  # a section's: never empty (see _decode_pieces)
    kind = head[0] >> 4
    width = _FIXED_WIDTH.get(kind)
    if width is not None:
        return pos + 1 + width
    if kind in (0xA, 0xC, 0xE) and len(head) >= 2:
        return pos + 2 + head[1]
    if kind in (0xB, 0xD, 0xF) and len(head) == 5:
        return pos + 5 + int.from_bytes(head[1:5], "big")
    return -1


def _decode_pieces(pieces: Sequence[bytes | bytearray | memoryview], depth: int) -> Message:
    """:meth:`Message.decode` of the pieces' join, copying each large data section's bytes
    from the pieces once: the sections are found by their sizes alone, the message is
    decoded with those data sections' bytes left out (each as an empty binary), and the
    bytes are then put in their sections. Where the sections cannot be found that way
    (input that is not a message, or a section with a descriptor other than a small ulong),
    the pieces are joined and decoded whole, which gives the same result or error."""
    if len(pieces) == 1:
        return _decode_message(decoder._as_bytes(pieces[0]), depth)
    held = _Pieces(pieces)
    size = held.size
    kept: list[bytes] = []  # the message without the large data sections' bytes
    apart: list[tuple[int, bytes]] = []  # (which data section, its bytes)
    sections = 0  # data sections so far
    copied = 0  # the bytes up to here are in ``kept`` or ``apart``
    pos = 0
    while pos < size:
        head = held.take(pos, pos + 8)
        if head[:2] != b"\x00\x53" or len(head) < 4:
            break  # not a section with a small-ulong descriptor: decoded whole
        if head[2] == 0x75:
            if head[3] == 0xB0 and len(head) == 8:
                end = pos + 8 + int.from_bytes(head[4:8], "big")
                if end > size:
                    break
                if end - pos - 8 > _INLINE:
                    kept.append(held.take(copied, pos + 4))
                    kept.append(bytes(4))  # an empty binary where its bytes were
                    apart.append((sections, held.take(pos + 8, end)))
                    copied = end
                sections += 1
                pos = end
                continue
            sections += 1
        pos = _value_end(held, pos + 3)
        if pos < 0:
            break
    if pos != size or not apart:
        return _decode_message(held.take(0, size), depth)
    kept.append(held.take(copied, size))
    try:
        message = _decode_message(b"".join(kept), depth)
    except (*decoder.DECODE_FAILURES, DecodeError):
        return _decode_message(held.take(0, size), depth)  # the error its join would give
    body = message.body
    data = (body,) if type(body) is Data else body
    assert type(data) is tuple
    for index, value in apart:
        _DATA_SET(data[index], value)
    return message
