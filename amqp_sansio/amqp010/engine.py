"""AMQP 0-10's connection and session state machines, both roles (0-10 spec, classes
``connection``, ``session``, ``execution``).

The face of :mod:`amqp_sansio.engine.amqp010`, where they are defined: this path is the one
users import (docs/architecture.rst, "One placement rule")."""

from ..engine.amqp010 import *  # noqa: F403
from ..engine.amqp010 import __all__ as __all__
