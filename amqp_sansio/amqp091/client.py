"""The I/O-free AMQP 0-9-1 client core: the errors, deliveries and confirmations an application
of the adapters sees.

The face of :mod:`amqp_sansio.client.amqp091`, where they are defined: this path is the one
users import (docs/architecture.rst, "One placement rule")."""

from ..client.amqp091 import *  # noqa: F403
from ..client.amqp091 import __all__ as __all__
