"""AMQP 0-9-1's data types, field tables and arrays (spec 4.2.5).

The face of :mod:`amqp_sansio.codec.amqp091`, where they are defined: this path is the one
users import (docs/architecture.rst, "One placement rule")."""

from ..codec.amqp091 import *  # noqa: F403
from ..codec.amqp091 import __all__ as __all__
