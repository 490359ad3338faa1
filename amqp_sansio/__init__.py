"""amqp-sansio: the AMQP 1.0 protocol (OASIS), pure Python, with no I/O.

The core consumes bytes and produces values, frames and events; it never opens a socket,
reads a clock or starts a thread. The adapters in :mod:`amqp_sansio.adapters` do the I/O.

The top level holds what an engine user touches: the engine objects, the message and its
common sections, outcomes and termini, the errors, the value helpers and the event base.
Everything else has one public submodule (see the API reference): every concrete event is in
:mod:`amqp_sansio.events`, the type wrappers in :mod:`amqp_sansio.codec`, the performatives,
messaging and transaction types in :mod:`amqp_sansio.definitions`, the state tables, engine
transactions and serial numbers in :mod:`amqp_sansio.engine`, frames in
:mod:`amqp_sansio.framing`, SASL in :mod:`amqp_sansio.sasl`, TLS in
:mod:`amqp_sansio.security.tls`.
"""

from . import codec as codec
from . import definitions as definitions
from . import engine as engine
from . import errors as errors
from . import events as events
from . import framing as framing
from . import sasl as sasl
from . import security as security
from .codec import Described, Symbol, decode, encode
from .definitions.message import Message
from .definitions.messaging import (
    Accepted,
    AmqpSequence,
    AmqpValue,
    Data,
    Header,
    Modified,
    Properties,
    Rejected,
    Released,
    Source,
    Target,
)
from .definitions.performatives import Error, ReceiverSettleMode, SenderSettleMode
from .engine.connection import Connection
from .engine.delivery import Delivery
from .engine.link import Link
from .engine.receiver import Receiver
from .engine.sender import Sender
from .engine.session import Session
from .engine.states import ConnectionState, LinkState, SessionState
from .engine.transactions import Controller, Transaction
from .errors import (
    AMQPError,
    DecodeError,
    EncodeError,
    LocalProtocolError,
    RemoteProtocolError,
)
from .events import Event
from .security.tls import TLSLayer

__version__ = "0.1.0.dev0"

__all__ = [
    "AMQPError",
    "Accepted",
    "AmqpSequence",
    "AmqpValue",
    "Connection",
    "ConnectionState",
    "Controller",
    "Data",
    "DecodeError",
    "Delivery",
    "Described",
    "EncodeError",
    "Error",
    "Event",
    "Header",
    "LinkState",
    "Link",
    "LocalProtocolError",
    "Message",
    "Modified",
    "Properties",
    "Receiver",
    "ReceiverSettleMode",
    "Rejected",
    "Released",
    "RemoteProtocolError",
    "Sender",
    "SenderSettleMode",
    "Session",
    "SessionState",
    "Source",
    "Symbol",
    "TLSLayer",
    "Target",
    "Transaction",
    "__version__",
    "decode",
    "encode",
]
