"""AMQP 0-9-1, the protocol RabbitMQ speaks by default: its codec, classes, methods and
frames, I/O-free (docs/amqp091.rst).

* :mod:`~amqp_sansio.amqp091.codec`: the data types, field tables and arrays;
* :mod:`~amqp_sansio.amqp091.spec`: constants, reply codes, every method class (generated
  from the spec's XML and RabbitMQ's JSON by ``tests/amqp091/generate_spec.py``) and the
  ``basic`` content properties;
* :mod:`~amqp_sansio.amqp091.methods`: the method and property base classes, their
  registry, and the payload codecs;
* :mod:`~amqp_sansio.amqp091.framing`: frames, the protocol header, the frame parser;
* :mod:`~amqp_sansio.amqp091.errors`: the errors, each with its 0-9-1 reply code;
* :mod:`~amqp_sansio.amqp091.engine`: the connection and channel state machines of both
  roles (:class:`~amqp_sansio.amqp091.engine.Connection`).

Everything below is importable from ``amqp_sansio.amqp091`` directly.
"""

from __future__ import annotations

from . import codec, engine, errors, framing, methods, spec
from .codec import (
    MAX_DEPTH,
    FieldArray,
    FieldTable,
    FieldValue,
    Float32,
    Int16,
    Int32,
    Int64,
    Timestamp,
    UInt8,
    UInt16,
    UInt32,
    decode_table,
    encode_table,
)
from .engine import Connection, Limits, Role
from .errors import (
    DecodeError,
    EncodeError,
    FrameError,
    TruncatedError,
    UnexpectedFrameError,
    UnknownMethodError,
)
from .framing import (
    FRAME_OVERHEAD,
    HEARTBEAT,
    PROTOCOL_HEADER,
    ContentBodyFrame,
    ContentHeaderFrame,
    Frame,
    FrameParser,
    HeartbeatFrame,
    MethodFrame,
    ProtocolHeader,
    content_octets,
    encode_body_frame,
    encode_content,
    encode_frame,
    encode_header_frame,
    encode_method_frame,
)
from .methods import (
    METHODS,
    METHODS_BY_NAME,
    Method,
    Properties,
    decode_content_header,
    decode_method,
    encode_content_header,
)
from .spec import *  # noqa: F403 - every method class, the constants and reply codes
from .spec import __all__ as _spec_all

__all__ = [
    "codec",
    "errors",
    "framing",
    "methods",
    "spec",
    "engine",
    # engine
    "Connection",
    "Limits",
    "Role",
    # codec
    "MAX_DEPTH",
    "FieldArray",
    "FieldTable",
    "FieldValue",
    "Float32",
    "Int16",
    "Int32",
    "Int64",
    "Timestamp",
    "UInt8",
    "UInt16",
    "UInt32",
    "decode_table",
    "encode_table",
    # errors
    "DecodeError",
    "EncodeError",
    "FrameError",
    "TruncatedError",
    "UnexpectedFrameError",
    "UnknownMethodError",
    # methods
    "METHODS",
    "METHODS_BY_NAME",
    "Method",
    "Properties",
    "decode_content_header",
    "decode_method",
    "encode_content_header",
    # framing
    "FRAME_OVERHEAD",
    "HEARTBEAT",
    "PROTOCOL_HEADER",
    "ContentBodyFrame",
    "ContentHeaderFrame",
    "Frame",
    "FrameParser",
    "HeartbeatFrame",
    "MethodFrame",
    "ProtocolHeader",
    "content_octets",
    "encode_body_frame",
    "encode_content",
    "encode_frame",
    "encode_header_frame",
    "encode_method_frame",
    *_spec_all,
]
