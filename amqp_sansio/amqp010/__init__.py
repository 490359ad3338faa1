"""AMQP 0-10, the protocol Apache Qpid's brokers speak: its codec, definitions, frames and
engine, I/O-free (docs/amqp010.rst). A face, as :mod:`amqp_sansio.amqp091` is: the names
are defined in the 0-10 folders of their layers.

* ``codec``: :mod:`amqp_sansio.codec.amqp010`, the types of 0-10 spec 3 ("Types");
* ``definitions``: :mod:`amqp_sansio.definitions.amqp010`, every control, command and struct
  and their encodings ("Commands and controls"), by flat name
  (``definitions.MessageTransfer``, ``definitions.SessionDetachCode``);
* :mod:`~amqp_sansio.amqp010.framing`: frames, segments, assemblies, the protocol header
  ("Frames");
* :mod:`~amqp_sansio.amqp010.engine`: the connection and session state machines of both
  roles (:class:`~amqp_sansio.engine.amqp010.Connection`; "The engine");
* :mod:`~amqp_sansio.amqp010.errors`: the errors, each with its 0-10 code.

No name here means something else than the same name of :mod:`amqp_sansio`
(``amqp010.engine.Connection`` is not :class:`amqp_sansio.Connection`).
"""

from __future__ import annotations

from ..codec import amqp010 as codec
from ..definitions import amqp010 as definitions
from . import engine, errors, framing

__all__ = ["codec", "definitions", "engine", "errors", "framing"]
