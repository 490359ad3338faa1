"""AMQP 0-9-1, the protocol RabbitMQ speaks by default: its codec, classes, methods and
frames, I/O-free (docs/amqp091.rst). Organised as pamqp is, a few submodules:

* :mod:`~amqp_sansio.amqp091.commands`: every method grouped by its class
  (``commands.Basic.Publish``, ``commands.Queue.Declare``, ``commands.Basic.Properties``);
* :mod:`~amqp_sansio.amqp091.spec`: the same method classes by flat name
  (``spec.BasicPublish``), constants and reply codes (generated from the spec's XML and
  RabbitMQ's JSON by ``tests/definitions/amqp091/generate_spec.py``), the ``basic`` content
  properties;
* :mod:`~amqp_sansio.amqp091.codec`: the data types, field tables and arrays;
* :mod:`~amqp_sansio.amqp091.methods`: the method and property base classes, their
  registry, and the payload codecs;
* :mod:`~amqp_sansio.amqp091.framing`: frames, the protocol header, the frame parser;
* :mod:`~amqp_sansio.amqp091.errors`: the errors, each with its 0-9-1 reply code;
* :mod:`~amqp_sansio.amqp091.engine`: the connection and channel state machines of both
  roles (:class:`~amqp_sansio.amqp091.engine.Connection`);
* :mod:`~amqp_sansio.amqp091.client`: what the adapters' 0-9-1 calls return and raise.

Each submodule is a face: the names are defined in the 0-9-1 folder of their layer
(:mod:`amqp_sansio.definitions.amqp091.spec`, ...; docs/architecture.rst).

The names below are the ones most code needs, importable from ``amqp_sansio.amqp091``
directly; none of them is a name of :mod:`amqp_sansio`'s public modules for something else
(``amqp091.engine.Connection`` is not :class:`amqp_sansio.Connection`; the 0-9-1
``FrameParser``, ``DecodeError``, ``Timestamp``, ... stay in their submodules).
"""

from __future__ import annotations

from ..codec.amqp091 import FieldTable, decode_table, encode_table
from ..codec.amqp091.errors import (
    FrameError,
    TruncatedError,
    UnexpectedFrameError,
    UnknownMethodError,
)
from ..definitions.amqp091.methods import (
    METHODS,
    METHODS_BY_NAME,
    Method,
    decode_content_header,
    decode_method,
    encode_content_header,
)
from ..definitions.amqp091.spec import HARD_ERRORS, SOFT_ERRORS, BasicProperties, ReplyCode
from ..engine.amqp091 import Limits
from ..framing.amqp091 import (
    FRAME_OVERHEAD,
    PROTOCOL_HEADER,
    ContentBodyFrame,
    ContentHeaderFrame,
    HeartbeatFrame,
    MethodFrame,
    encode_body_frame,
    encode_content,
    encode_header_frame,
    encode_method_frame,
)

# the submodules, re-exported as attributes (``amqp091.spec``), not in ``__all__``
from . import codec as codec
from . import commands as commands
from . import engine as engine
from . import errors as errors
from . import framing as framing
from . import methods as methods
from . import spec as spec

__all__ = [
    # methods and properties (every method: commands, spec)
    "METHODS",
    "METHODS_BY_NAME",
    "BasicProperties",
    "Method",
    "decode_method",
    "encode_content_header",
    "decode_content_header",
    # reply codes and errors
    "ReplyCode",
    "SOFT_ERRORS",
    "HARD_ERRORS",
    "FrameError",
    "TruncatedError",
    "UnexpectedFrameError",
    "UnknownMethodError",
    # field tables
    "FieldTable",
    "decode_table",
    "encode_table",
    # frames
    "FRAME_OVERHEAD",
    "PROTOCOL_HEADER",
    "ContentBodyFrame",
    "ContentHeaderFrame",
    "HeartbeatFrame",
    "MethodFrame",
    "encode_body_frame",
    "encode_content",
    "encode_header_frame",
    "encode_method_frame",
    # the engine's limits (the engine itself: engine.Connection)
    "Limits",
]
