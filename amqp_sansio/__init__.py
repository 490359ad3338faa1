"""amqp-sansio: the AMQP 1.0 protocol (OASIS), pure Python, with no I/O.

The core consumes bytes and produces values, frames and events; it never opens a socket,
reads a clock or starts a thread. The adapters in :mod:`amqp_sansio.adapters` do the I/O.

The top level holds what an engine user touches: the engine objects, the message and its
common sections, outcomes and termini, the errors, the value helpers and the event base.
Everything else has one public submodule (see the API reference): every concrete event is in
:mod:`amqp_sansio.events`, the type wrappers in :mod:`amqp_sansio.codec.amqp10`, the performatives,
messaging and transaction types in :mod:`amqp_sansio.definitions.amqp10`, the state tables, engine
transactions and serial numbers in :mod:`amqp_sansio.engine.amqp10`, frames in
:mod:`amqp_sansio.framing.amqp10`, SASL in :mod:`amqp_sansio.sasl`, TLS in
:mod:`amqp_sansio.security.tls`.
"""

import os as _os

from . import codec as codec
from . import definitions as definitions
from . import engine as engine
from . import errors as errors
from . import events as events
from . import framing as framing
from . import sasl as sasl
from . import security as security
from .codec.amqp10 import Described, Symbol, decode, encode
from .definitions.amqp10.message import Message
from .definitions.amqp10.messaging import (
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
from .definitions.amqp10.performatives import Error, ReceiverSettleMode, SenderSettleMode
from .engine.amqp10.connection import Connection
from .engine.amqp10.link import Delivery, Link
from .engine.amqp10.receiver import Receiver
from .engine.amqp10.sender import Sender
from .engine.amqp10.session import Session
from .engine.amqp10.states import ConnectionState, LinkState, SessionState
from .engine.amqp10.transactions import Controller, Transaction
from .errors import AMQPError, DecodeError, EncodeError, LocalProtocolError, RemoteProtocolError
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


def _checkout_adapters() -> None:
    """Let ``amqp_sansio.adapters`` import from a checkout's root.

    The adapters live in the checkout's top-level ``adapters/`` folder, which pyproject.toml
    installs as ``amqp_sansio.adapters``. Python run from the checkout's root (``python -c``,
    ``python -m``) finds this source folder before any installed copy, and the folder has no
    ``adapters`` inside. In a checkout (``adapters/`` and ``pyproject.toml`` beside this
    folder) the folder above joins the package's search path, so the name resolves to
    ``adapters/`` as installed. An installed copy has ``adapters`` inside and is unchanged.
    Nothing is imported here: the core does not depend on the adapters (docs/architecture.rst).
    """
    here = _os.path.dirname(_os.path.abspath(__file__))
    root = _os.path.dirname(here)
    if not _os.path.isdir(_os.path.join(here, "adapters")) and all(
        _os.path.isfile(_os.path.join(root, *name))
        for name in (("adapters", "__init__.py"), ("pyproject.toml",))
    ):
        __path__.append(root)


_checkout_adapters()
