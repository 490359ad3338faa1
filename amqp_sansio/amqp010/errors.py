"""AMQP 0-10's exceptions, each with its 0-10 code: the codec's (``error_code``: 501
``framing-error``, 540 ``not-implemented``) and the frame parser's (``reply_code`` 501).

The face of :mod:`amqp_sansio.codec.amqp010.errors` and
:mod:`amqp_sansio.framing.amqp010.errors`, where they are defined: this path is the one
users import (docs/architecture.rst, "One placement rule")."""

from ..codec.amqp010.errors import DecodeError, EncodeError, TruncatedError, UnknownCodeError
from ..framing.amqp010.errors import FramingError

__all__ = ["DecodeError", "EncodeError", "FramingError", "TruncatedError", "UnknownCodeError"]
