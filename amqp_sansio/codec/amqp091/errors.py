"""The AMQP 0-9-1 errors: the project's rule (``amqp_sansio.errors``) with the 0-9-1 reply code.

Each class subclasses the 1.0 error of the same meaning, so code that handles
:class:`~amqp_sansio.errors.DecodeError` or :class:`~amqp_sansio.errors.FramingError`
handles these too, and adds ``reply_code``: the 0-9-1 reply code (spec, the ``constant``
elements) an engine puts in the ``connection.close`` it sends because of it. Every reply code
these carry is a hard error: the connection closes.

================================  ====  =====================================================
class                             code  raised when
================================  ====  =====================================================
:class:`FrameError`               501   a frame is malformed: bad frame-end octet, unknown
                                        frame type, a size over frame-max, a heartbeat with a
                                        payload or a channel, a payload shorter than its
                                        fields or longer
:class:`TruncatedError`           501   the bytes end inside a value (a frame's payload
                                        cannot be decoded)
:class:`DecodeError`              502   a value is illegal: unknown field-table type,
                                        invalid UTF-8, a table nested too deep, unknown
                                        property flags, a non-zero header weight
:class:`UnexpectedFrameError`     505   a content header or body frame on channel 0
:class:`UnknownMethodError`       540   a method frame names a class or method we do not
                                        know, a header a class with no content
:class:`EncodeError`              --    the caller's value cannot be encoded (raised before
                                        anything is sent)
================================  ====  =====================================================
"""

from __future__ import annotations

from typing import ClassVar

from ... import errors

__all__ = [
    "DecodeError",
    "EncodeError",
    "FrameError",
    "TruncatedError",
    "UnexpectedFrameError",
    "UnknownMethodError",
]


class DecodeError(errors.DecodeError):
    """Bytes from the peer hold an illegal value (reply code 502, ``syntax-error``)."""

    reply_code: ClassVar[int] = 502


class TruncatedError(DecodeError):
    """The bytes end inside a value: the frame holding them cannot be decoded (reply code
    501, ``frame-error``)."""

    reply_code: ClassVar[int] = 501


class UnknownMethodError(DecodeError):
    """A method frame names a class or method that is not defined, or a content header a
    class that carries no content (reply code 540, ``not-implemented``)."""

    reply_code: ClassVar[int] = 540


class FrameError(errors.FramingError):
    """A frame is malformed (reply code 501, ``frame-error``)."""

    reply_code: ClassVar[int] = 501


class UnexpectedFrameError(FrameError):
    """A frame that cannot come where it came: content on channel 0 (reply code 505,
    ``unexpected-frame``)."""

    reply_code: ClassVar[int] = 505


class EncodeError(errors.EncodeError):
    """A value cannot be encoded as AMQP 0-9-1: wrong type, out of range, a string too
    long for its type, a frame over frame-max. The caller's mistake: nothing is sent."""
