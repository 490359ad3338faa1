"""The reference broker, of AMQP 1.0 (the broker working draft's client-broker protocol,
mapped onto the final 1.0 frames), AMQP 0-9-1 (RabbitMQ's rules) and AMQP 0-10 (Qpid's) on
one port, their queues shared: I/O-free, like the rest of the core. See ``docs/broker.rst``;
:mod:`amqp_sansio.adapters.broker` serves it over TCP.

Its modules: a protocol-free core (``_broker``, ``_nodes``, ``_streams``, ``_store``,
``_selector``, ``_subscriptions``, ``_replies``, ``_admission``, ``_users``, ``_config``,
``_record``), the written interface between the core and the protocols (``_interface``),
one folder per protocol (``amqp10/``, ``amqp091/``, ``amqp010/``; none imports another,
the core imports none), ``_protocols``, which reads a client's first octets, and ``_accept``,
which builds the connection they ask for (:class:`Broker`)."""

from ._accept import Broker
from ._config import DEFAULT_MEMORY_HIGH_WATERMARK, BrokerConfig
from ._nodes import MemoryStore, Node, Queue, Store, SubscriptionStore, Topic
from ._protocols import OLDER as OLDER_PROTOCOL
from ._protocols import PROTOCOLS, pick_protocol
from ._record import ConnectionRecord
from ._selector import (
    DEFAULT_SELECTOR_MAX_DEPTH,
    DEFAULT_SELECTOR_MAX_LENGTH,
    MAX_SELECTOR_DEPTH,
    SELECTOR_FILTER,
    SELECTOR_FILTER_CODE,
    MessageFields,
    Selector,
    SelectorError,
    selector_filter,
)
from ._store import StoredMessage, parse_message
from ._streams import (
    FIRST_OFFSET,
    NEXT_OFFSET,
    OFFSET_ANNOTATION,
    OFFSET_FILTER,
    RABBITMQ_OFFSET_FILTER,
    STREAM_CAPABILITY,
    Stream,
)
from ._subscriptions import Subscription
from ._users import ANONYMOUS, SasKey, User, Users, UsersFileError, scram_entry
from .amqp010.connection import BrokerConnection010
from .amqp091.connection import BrokerConnection091
from .amqp091.declarations import QueueArguments, QueueRecord, Refused, parse_queue_arguments
from .amqp091.exchanges import EXCHANGE_TYPES, Binding, Exchange, headers_match, topic_matches
from .amqp091.mapping import from_amqp10, to_amqp10
from .amqp091.topology import (
    BindingRecord,
    ExchangeRecord,
    QueueDeclaration,
    TopologyRecord,
    TopologyStore,
    VhostRecord,
)
from .amqp091.vhosts import DEFAULT_VHOST, Published, VirtualHost
from .amqp10.connection import DEFAULT_OUTCOME, SUPPORTED_OUTCOMES, BrokerConnection
from .amqp10.relay import ANONYMOUS_RELAY

__all__ = [
    "ANONYMOUS",
    "DEFAULT_VHOST",
    "DEFAULT_MEMORY_HIGH_WATERMARK",
    "EXCHANGE_TYPES",
    "ANONYMOUS_RELAY",
    "DEFAULT_OUTCOME",
    "DEFAULT_SELECTOR_MAX_DEPTH",
    "DEFAULT_SELECTOR_MAX_LENGTH",
    "FIRST_OFFSET",
    "MAX_SELECTOR_DEPTH",
    "OLDER_PROTOCOL",
    "PROTOCOLS",
    "NEXT_OFFSET",
    "OFFSET_ANNOTATION",
    "OFFSET_FILTER",
    "RABBITMQ_OFFSET_FILTER",
    "SELECTOR_FILTER",
    "SELECTOR_FILTER_CODE",
    "STREAM_CAPABILITY",
    "SUPPORTED_OUTCOMES",
    "Binding",
    "BindingRecord",
    "Broker",
    "BrokerConfig",
    "BrokerConnection",
    "BrokerConnection010",
    "BrokerConnection091",
    "ConnectionRecord",
    "Exchange",
    "ExchangeRecord",
    "MemoryStore",
    "MessageFields",
    "Node",
    "Published",
    "Queue",
    "QueueArguments",
    "QueueDeclaration",
    "QueueRecord",
    "Refused",
    "Selector",
    "SelectorError",
    "Store",
    "StoredMessage",
    "Stream",
    "Subscription",
    "SubscriptionStore",
    "Topic",
    "TopologyRecord",
    "TopologyStore",
    "User",
    "SasKey",
    "Users",
    "UsersFileError",
    "VhostRecord",
    "VirtualHost",
    "from_amqp10",
    "headers_match",
    "parse_message",
    "parse_queue_arguments",
    "pick_protocol",
    "scram_entry",
    "selector_filter",
    "to_amqp10",
    "topic_matches",
]
