"""The earlier headers of the 0-9-1 line a server role takes, as RabbitMQ takes them: AMQP
0-9's (``AMQP 1 1 0 9``, served as 0-9-1 itself) and AMQP 0-8's (``AMQP 1 1 8 0``, and
``AMQP 1 1 9 1``, the header py-amqplib sends for 0-8), served with 0-8's method ids where
they differ from 0-9-1's (the 0-8 spec's ``connection``, ``channel``, ``access`` and
``basic`` classes; AMQP/Fast 0.9 RFC 006 for the frames, which 0-8 shares):

* ``connection.start`` says version 8-0, and its server properties carry no
  ``capabilities`` (an empty table: 0-8 has none of RabbitMQ's extensions);
* ``connection.close`` and ``close-ok`` are class 10, methods 60 and 61 (0-9-1: 50, 51);
* ``channel.open-ok`` has no arguments (0-9-1: a reserved long string);
* ``access.request`` (class 30, method 10; gone from 0-9-1) is answered with
  ``access.request-ok`` and ticket 1 (the engine answers it);
* ``basic.consume`` has no ``arguments`` table (0-9-1 added it): one that carries a table
  is a frame error (501), as RabbitMQ reads it;
* the methods 0-8 lacks (``exchange.bind``/``unbind``, ``basic.nack``, ``confirm``,
  ``connection.blocked``/``unblocked``/``update-secret``) are unknown methods (540).

Everything else (the frames, the content header and its properties, the other methods'
ids and arguments) is 0-9-1's. No clock, no I/O: codecs only.
"""

from __future__ import annotations

import struct
from typing import ClassVar

import attrs

from ...codec.amqp091.errors import TruncatedError, UnknownMethodError
from ...definitions.amqp091 import spec
from ...definitions.amqp091.methods import Method, decode_method
from . import HEADER_09, HEADERS_08, encode_method_frame

__all__ = [
    "AccessRequest",
    "AccessRequestOk",
    "HEADER_09",
    "HEADERS_08",
    "decode_method_08",
    "encode_method_frame_08",
]

_IDS = struct.Struct(">HH")


@attrs.define(kw_only=True, slots=True)
class AccessRequest(Method):
    """``access.request`` (0-8 spec, class 30, method 10): a client asks for a ticket to a
    realm; answered by :class:`AccessRequestOk`. Decoded only from a 0-8 client."""

    CLASS_ID: ClassVar[int] = 30
    METHOD_ID: ClassVar[int] = 10
    NAME: ClassVar[str] = "access.request"
    SYNCHRONOUS: ClassVar[bool] = True
    CONTENT: ClassVar[bool] = False
    RESPONSES: ClassVar[tuple[str, ...]] = ("access.request-ok",)

    realm: str = "/data"
    flags: int = 0

    def _encode(self) -> bytes:
        realm = self.realm.encode()
        return _IDS.pack(30, 10) + bytes([len(realm)]) + realm + bytes([self.flags])


@attrs.define(kw_only=True, slots=True)
class AccessRequestOk(Method):
    """``access.request-ok`` (0-8 spec, class 30, method 11): the ``ticket``."""

    CLASS_ID: ClassVar[int] = 30
    METHOD_ID: ClassVar[int] = 11
    NAME: ClassVar[str] = "access.request-ok"
    SYNCHRONOUS: ClassVar[bool] = True
    CONTENT: ClassVar[bool] = False
    RESPONSES: ClassVar[tuple[str, ...]] = ()

    ticket: int = 1

    def _encode(self) -> bytes:
        return _IDS.pack(30, 11) + struct.pack(">H", self.ticket)


#: 0-8's ids of the methods whose ids moved in 0-9-1, and back.
_FROM_08 = {(10, 60): (10, 50), (10, 61): (10, 51)}
_TO_08 = {value: key for key, value in _FROM_08.items()}
#: 0-9-1's methods that 0-8 lacks (and its ids 0-8 gives another method: 10/50, 10/51).
_NOT_IN_08 = frozenset(
    {(10, 50), (10, 51), (10, 60), (10, 61), (10, 70), (10, 71)}  # blocked, update-secret
    | {(40, 30), (40, 31), (40, 40), (40, 51)}  # exchange.bind, unbind
    | {(60, 120), (85, 10), (85, 11)}  # basic.nack, confirm
)
#: An empty field table: what a 0-9-1 basic.consume has where 0-8's ends.
_EMPTY_TABLE = b"\x00\x00\x00\x00"


def decode_method_08(payload: bytes | bytearray | memoryview) -> Method:
    """The method a 0-8 method frame holds (a client's, or what a 0-8 server answers:
    ``access.request-ok``, ``channel.open-ok`` without arguments), as
    :func:`~.methods.decode_method` decodes 0-9-1's (and with its errors)."""
    data = bytes(payload)
    if len(data) < 4:
        raise TruncatedError("method frame payload ends inside an argument")
    ids = _IDS.unpack_from(data)
    if ids in _FROM_08:
        return decode_method(_IDS.pack(*_FROM_08[ids]) + data[4:])
    if ids in _NOT_IN_08:
        raise UnknownMethodError(f"unknown method: class {ids[0]}, method {ids[1]} (AMQP 0-8)")
    if ids == (30, 10):
        return _access_request(data)
    if ids == (30, 11) and len(data) == 6:
        return AccessRequestOk(ticket=int.from_bytes(data[4:6], "big"))
    if ids == (20, 11) and len(data) == 4:  # a 0-8 server's channel.open-ok
        return spec.ChannelOpenOk()
    if ids == (60, 20):  # basic.consume: 0-8's has no arguments table
        method = decode_method(data + _EMPTY_TABLE)
        return method
    return decode_method(data)


def _access_request(data: bytes) -> AccessRequest:
    if len(data) < 5 or len(data) != 6 + data[4]:
        raise TruncatedError("access.request: its realm and flags do not fill the payload")
    return AccessRequest(realm=data[5 : 5 + data[4]].decode(errors="replace"), flags=data[-1])


def encode_method_frame_08(channel: int, method: Method, frame_max: int = 0) -> bytes:
    """A method frame for a 0-8 client, as :func:`~.framing.encode_method_frame` writes
    0-9-1's: ``connection.close``/``close-ok`` with 0-8's ids, ``channel.open-ok`` without
    arguments, ``connection.start``'s version and properties as 0-8 has them."""
    if isinstance(method, spec.ConnectionStart):
        props = dict(method.server_properties)
        props["capabilities"] = {}
        method = spec.ConnectionStart(
            version_major=8,
            version_minor=0,
            server_properties=props,
            mechanisms=method.mechanisms,
            locales=method.locales,
        )
    frame = encode_method_frame(channel, method, frame_max)
    ids = (method.CLASS_ID, method.METHOD_ID)
    if ids in _TO_08:
        return frame[:7] + _IDS.pack(*_TO_08[ids]) + frame[11:]
    if isinstance(method, spec.ChannelOpenOk):
        return b"\x01" + channel.to_bytes(2, "big") + b"\x00\x00\x00\x04\x00\x14\x00\x0b\xce"
    return frame
