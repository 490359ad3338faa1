"""AMQP 0-9-1's frames, protocol header and frame parser (spec 4.2.3).

The face of :mod:`amqp_sansio.framing.amqp091`, where they are defined: this path is the one
users import (docs/architecture.rst, "One placement rule")."""

from ..framing.amqp091 import *  # noqa: F403
from ..framing.amqp091 import __all__ as __all__
