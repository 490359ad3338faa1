"""AMQP 0-10, the protocol Apache Qpid's brokers speak: its codec and definitions, I/O-free
(docs/amqp010.rst). A face, as :mod:`amqp_sansio.amqp091` is: the names are defined in the
0-10 folders of their layers.

* ``codec``: :mod:`amqp_sansio.codec.amqp010`, the types of 0-10 spec 3 ("Types");
* ``definitions``: :mod:`amqp_sansio.definitions.amqp010`, every control, command and struct
  and their encodings ("Commands and controls").
"""

from __future__ import annotations

from ..codec import amqp010 as codec
from ..definitions import amqp010 as definitions

__all__ = ["codec", "definitions"]
