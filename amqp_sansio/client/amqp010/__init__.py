"""The I/O-free AMQP 0-10 client core that the adapters drive for ``connect(url,
protocol="0-10")``: the :class:`Core` that owns the engine and its sessions
(:mod:`.core`), the messages and deliveries (:mod:`.messages`), and each call written
once for the three adapters (:mod:`.recipes`). It does no I/O: an adapter feeds it bytes
and time (see :doc:`amqp010`, "Adapters")."""

from __future__ import annotations

from . import recipes
from .core import Core, SessionCore, client_core, client_engine
from .messages import Delivery, SessionError, message_header

__all__ = [
    "Core",
    "Delivery",
    "SessionCore",
    "SessionError",
    "client_core",
    "client_engine",
    "message_header",
    "recipes",
]
