"""The I/O-free AMQP 0-9-1 client core that the adapters drive for ``connect(url,
protocol="0-9-1")``: URLs (:mod:`.url`), the errors and values an application sees and
the methods' options (:mod:`.ops`), the channels, consumers and deliveries
(:mod:`.channels`), the :class:`Core` that owns the engine (:mod:`.core`), and each call
written once for the three adapters (:mod:`.recipes`). It does no I/O: an adapter feeds it
bytes and time (see :doc:`amqp091`, "Adapters")."""

from __future__ import annotations

from . import recipes
from .channels import ChannelCore, ConsumerCore, Delivery
from .core import (
    DEFAULT_MECHANISMS,
    MECHANISMS,
    ConnectOptions,
    Core,
    client_core,
    client_engine,
    mechanisms,
)
from .ops import *  # noqa: F403 - the errors, values and options (ops.__all__)
from .ops import __all__ as _ops_all
from .url import URL, parse_url

__all__ = [
    *_ops_all,
    # the core
    "ChannelCore",
    "ConnectOptions",
    "ConsumerCore",
    "Core",
    "Delivery",
    "client_core",
    "client_engine",
    "mechanisms",
    "MECHANISMS",
    "DEFAULT_MECHANISMS",
    "recipes",
    # URLs
    "URL",
    "parse_url",
]
