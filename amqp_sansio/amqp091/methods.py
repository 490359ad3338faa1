"""AMQP 0-9-1's method and property base classes, their registry and the payload codecs (spec
4.2.6, 4.2.6.1).

The face of :mod:`amqp_sansio.definitions.amqp091.methods`, where they are defined: this
path is the one users import (docs/architecture.rst, "One placement rule")."""

from ..definitions.amqp091.methods import *  # noqa: F403
from ..definitions.amqp091.methods import __all__ as __all__
