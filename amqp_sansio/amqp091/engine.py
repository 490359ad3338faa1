"""AMQP 0-9-1's connection and channel state machines, both roles (spec 2.2, 4.2).

The face of :mod:`amqp_sansio.engine.amqp091`, where they are defined: this path is the one
users import (docs/architecture.rst, "One placement rule")."""

from ..engine.amqp091 import *  # noqa: F403
from ..engine.amqp091 import __all__ as __all__
