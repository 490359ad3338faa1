"""AMQP 0-9-1's exceptions, each with its reply code (spec 1.5.2).

The face of :mod:`amqp_sansio.codec.amqp091.errors`, where they are defined: this path is
the one users import (docs/architecture.rst, "One placement rule")."""

from ..codec.amqp091.errors import *  # noqa: F403
from ..codec.amqp091.errors import __all__ as __all__
