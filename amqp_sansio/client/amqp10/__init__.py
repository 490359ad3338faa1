"""The I/O-free high-level client that the adapters (:mod:`amqp_sansio.adapters.sockets`,
:mod:`~amqp_sansio.adapters.aio`, :mod:`~amqp_sansio.adapters.trio_adapter`) share: the
pending operations and errors an application sees (:mod:`.ops`), the cores of its links
(:mod:`.links`), the :class:`Core` that turns an engine's events into their completion
(:mod:`.core`), each call of the adapters written once as a recipe of steps that each
adapter carries out with its own I/O (:mod:`.recipes`, in the steps of
:mod:`amqp_sansio.client.recipes`), how a URL and options become an
engine (:mod:`.engines`), the reconnection policy (:mod:`.reconnect`), AMQP URLs
(:mod:`.url`) and frame tracing (:mod:`.trace`). It does no I/O: an adapter feeds it bytes
and time.
"""

from __future__ import annotations

from ...security.websocket import WebSocketOptions
from ..engines import (
    ConnectOptions,
    ListenOptions,
    Stream,
    authentication_description,
    authentication_failure,
    authentication_hint,
    client_engine,
    connect_options,
    listen_options,
    refused_without_sasl,
    server_engine,
    server_sasl,
    without_sasl,
    without_sasl_failure,
)
from ..ops import (
    Annotations,
    AuthenticationError,
    ClientError,
    ConnectionClosedError,
    Delivery,
    Filters,
    HasEngineTransaction,
    LinkDetachedError,
    LinkRefusedError,
    Op,
    Outcome,
    PeerWithoutSASLError,
    Sendable,
    TransactionError,
    TransactionLike,
    as_message,
)
from ..reconnect import Backoff, Reconnect
from ..url import AMQPURL, InsecureCredentialsError, URLError, parse_url
from . import recipes
from .core import Core, client_core, server_core
from .links import (
    DEFAULT_CREDIT,
    IncomingConnection,
    IncomingLink,
    OutgoingLink,
    ReceiverBase,
    ReceiverCore,
    SenderBase,
    SenderCore,
    ServerLink,
    TrackerBase,
    TransactionBase,
    TransactionCore,
)

__all__ = [
    # errors, operations, deliveries
    "ClientError",
    "ConnectionClosedError",
    "AuthenticationError",
    "PeerWithoutSASLError",
    "LinkDetachedError",
    "LinkRefusedError",
    "TransactionError",
    "Op",
    "Delivery",
    # types
    "Outcome",
    "Sendable",
    "Filters",
    "Annotations",
    "HasEngineTransaction",
    "TransactionLike",
    "Stream",
    # links
    "DEFAULT_CREDIT",
    "SenderCore",
    "ReceiverCore",
    "TransactionCore",
    "IncomingConnection",
    "ServerLink",
    "IncomingLink",
    "OutgoingLink",
    "SenderBase",
    "TrackerBase",
    "ReceiverBase",
    "TransactionBase",
    # the core, and the recipes of the adapters' calls
    "Core",
    "recipes",
    # making connections
    "ConnectOptions",
    "ListenOptions",
    "connect_options",
    "listen_options",
    "client_engine",
    "client_core",
    "server_engine",
    "server_core",
    "server_sasl",
    "without_sasl",
    "without_sasl_failure",
    "authentication_failure",
    "authentication_description",
    "authentication_hint",
    "refused_without_sasl",
    "as_message",
    # reconnection, URLs
    "Reconnect",
    "Backoff",
    "AMQPURL",
    "URLError",
    "InsecureCredentialsError",
    "parse_url",
    # the WebSocket binding's options (ws:// URLs make them; listen(websocket=...) takes them)
    "WebSocketOptions",
]
