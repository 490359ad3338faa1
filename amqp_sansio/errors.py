"""The library's exceptions, one rule for all of them.

* The caller's mistakes (a value that cannot be encoded, an API used out of order) raise a
  subclass of :class:`LocalProtocolError` at once; nothing is sent.
* What arrives from elsewhere and breaks the protocol (malformed bytes, a frame too large,
  a field of the wrong type) raises a subclass of :class:`RemoteProtocolError`.

Every class knows the AMQP error condition (core spec 2.8.15 to 2.8.18) that the engine
puts on the wire when it closes, ends or detaches because of it.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AMQPError",
    "DecodeError",
    "EncodeError",
    "FramingError",
    "InvalidFieldError",
    "LocalProtocolError",
    "RemoteProtocolError",
    "UnsupportedProtocolError",
]


class AMQPError(Exception):
    """Base class of every error this library raises.

    ``condition`` is the AMQP error condition symbol (core spec 2.8.15) that describes it.
    """

    condition: ClassVar[str] = "amqp:internal-error"

    def __init__(self, description: str, *, offset: int | None = None) -> None:
        super().__init__(description)
        self.description = description
        #: Where in the input the problem was found, when the error comes from decoding.
        self.offset = offset

    def __str__(self) -> str:
        if self.offset is None:
            return f"{self.description} [{self.condition}]"
        return f"{self.description} (at offset {self.offset}) [{self.condition}]"


class LocalProtocolError(AMQPError):
    """The caller misused the API. Raised before anything is sent."""

    condition: ClassVar[str] = "amqp:internal-error"


class RemoteProtocolError(AMQPError):
    """The bytes from the peer (or from storage) break the protocol."""

    condition: ClassVar[str] = "amqp:internal-error"


class EncodeError(LocalProtocolError, ValueError):
    """A value cannot be encoded as AMQP: wrong type, out of range, or not representable
    (core spec 1.6)."""

    condition: ClassVar[str] = "amqp:invalid-field"


class DecodeError(RemoteProtocolError, ValueError):
    """Bytes that are not valid AMQP type-system data (core spec 1.2 to 1.6): truncated input,
    a size or count larger than the bytes left, invalid UTF-8, an unknown format code, nesting
    deeper than the limit, a composite with fields of the wrong type."""

    condition: ClassVar[str] = "amqp:decode-error"


class InvalidFieldError(DecodeError):
    """A composite decoded but a field breaks its definition: a mandatory field is null, or a
    restricted value is outside its choices (core spec 1.3, 2.8.15 ``amqp:invalid-field``)."""

    condition: ClassVar[str] = "amqp:invalid-field"


class FramingError(RemoteProtocolError):
    """The frame layer is broken (core spec 2.3): a size below the minimum or above the
    negotiated maximum, a data offset below 2, an unknown frame type."""

    condition: ClassVar[str] = "amqp:connection:framing-error"


class UnsupportedProtocolError(FramingError):
    """The peer sent a protocol header for a protocol or version we do not speak (core spec
    2.2), for example an AMQP 0-9-1 or 0-10 client. ``header`` holds the 8 bytes it sent and
    ``version_name`` a readable name such as ``"AMQP 0-9-1"``."""

    def __init__(self, description: str, *, header: bytes, version_name: str) -> None:
        super().__init__(description)
        self.header = header
        self.version_name = version_name
