"""The AMQP 0-10 codec errors: the project's rule (``amqp_sansio.errors``) with the 0-10 code.

Each class subclasses the shared error of the same meaning, so code that handles
:class:`~amqp_sansio.errors.DecodeError` handles these too, and adds ``error_code``: the code
an engine puts in what it sends because of it (0-10 spec, the ``connection.close-code`` and
``execution.error-code`` domains).

================================  ====  =====================================================
class                             code  raised when
================================  ====  =====================================================
:class:`DecodeError`              501   a value is illegal: a size that does not fit, an
                                        unknown type code, invalid UTF-8 or UTF-16, nesting
                                        deeper than the limit (``framing-error``)
:class:`TruncatedError`           501   the bytes end inside a value
:class:`UnknownCodeError`         540   a command or struct code that is not defined
                                        (``execution.error-code`` ``not-implemented``)
:class:`EncodeError`              --    the caller's value cannot be encoded
================================  ====  =====================================================
"""

from __future__ import annotations

from typing import ClassVar

from ... import errors

__all__ = ["DecodeError", "EncodeError", "TruncatedError", "UnknownCodeError"]


class DecodeError(errors.DecodeError):
    """Bytes from the peer hold an illegal 0-10 value (0-10 spec 3 "Types"; the connection
    closes with ``framing-error``, 501)."""

    error_code: ClassVar[int] = 501


class TruncatedError(DecodeError):
    """The bytes end inside a value (0-10 spec 3; ``framing-error``, 501)."""


class UnknownCodeError(DecodeError):
    """A command, control or struct code that the 0-10 definition does not hold
    (``execution.error-code`` ``not-implemented``, 540)."""

    error_code: ClassVar[int] = 540


class EncodeError(errors.EncodeError):
    """A value cannot be encoded as AMQP 0-10: wrong type, out of range, too long for its
    size. The caller's mistake: nothing is sent."""
