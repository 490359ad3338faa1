"""Every AMQP 0-9-1 method by flat name, the constants and reply codes, the ``basic`` content
properties (generated from the specification's XML).

The face of :mod:`amqp_sansio.definitions.amqp091.spec`, where they are defined: this path
is the one users import (docs/architecture.rst, "One placement rule")."""

from ..definitions.amqp091.spec import *  # noqa: F403
from ..definitions.amqp091.spec import __all__ as __all__
