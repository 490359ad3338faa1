"""AMQP 0-10's frames, segments, assemblies and protocol header (0-10 spec 4.4).

The face of :mod:`amqp_sansio.framing.amqp010`, where they are defined: this path is the one
users import (docs/architecture.rst, "One placement rule")."""

from ..framing.amqp010 import *  # noqa: F403
from ..framing.amqp010 import __all__ as __all__
