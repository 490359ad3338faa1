"""What the broker does as Azure Service Bus does, for its SDKs (``azure-servicebus`` on
``_pyamqp``, and the others on the same protocol): the one address mapping, the settle mode
it answers with, the dead-letter sub-queue, and the entity's ``$management`` node.

Service Bus is not a standard: what is here is what its SDKs send and read (the Service Bus
AMQP protocol guide, and the SDK's ``_common/mgmt_handlers.py`` and ``_pyamqp``), on top of
the core spec. ``docs/azure.rst`` lists what is served and what is refused.

* **Addresses.** The SDKs name a node by its full URL (``amqps://host:port/orders``,
  ``sb://host/orders``); :func:`entity_address` maps such an address to the entity's name,
  its path (``orders``; ``orders/$management``; ``topic/subscriptions/sub``). Any other
  address is left as it is. A link attached by such a URL is a *Service Bus link*.
* **Settlement.** The SDK's sender asks for rcv-settle-mode ``second`` (core spec 2.7.3)
  but never settles a delivery the receiver has not settled: it waits for a disposition with
  ``settled`` true (core spec 2.6.12), as Service Bus sends it. The receiving end chooses
  the mode (core spec 2.7.3: the receiver's attach says the mode it uses), so to a Service
  Bus link that sends to it the broker answers ``first`` and settles each transfer with its
  outcome at once (:func:`service_bus_link`).
* **Batches.** ``ServiceBusMessageBatch`` goes as one transfer of message-format
  :data:`BATCH_FORMAT` (core spec 2.8.11: Microsoft's format code) whose body is data
  sections, each an encoded message; :func:`put_batch` puts each of them on the node, in
  order, and settles the transfer with one outcome.
* **Dead letters.** A message rejected on a Service Bus link (the SDK's
  ``dead_letter_message``: ``rejected`` with ``com.microsoft:dead-letter``) goes to its
  entity's sub-queue ``<entity>/$deadletterqueue`` (:data:`DEAD_LETTER_SUFFIX`), made when
  the first one comes, readable there (:func:`resolve`), unless the queue has a dead-letter
  exchange of its own.
* **Management.** ``<entity>/$management`` (:class:`EntityManagement`) takes the SDK's
  requests (application-property ``operation``: ``com.microsoft:renew-lock``, ...); those
  it serves are answered with the status code and body the SDK reads; any other is answered
  at once with status 501 and ``errorCondition`` ``amqp:not-implemented``.

Everything here is I/O-free.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ...codec.amqp10 import Symbol
from ...definitions.amqp10.message import Message
from ...definitions.amqp10.messaging import Accepted, Data, Rejected, Source, Target
from ...definitions.amqp10.performatives import ReceiverSettleMode
from ...engine.amqp10.link import Link
from ...engine.amqp10.receiver import Receiver
from ...errors import DecodeError
from ...events import DeliveryReceived
from ...security.sas import path_of
from .._nodes import Node, Queue, error
from .._store import parse_message
from .requests import RequestNode, response

if TYPE_CHECKING:
    from .interface import Broker10, Connection10, OwnNode

__all__ = [
    "BATCH_FORMAT",
    "DEAD_LETTER_SUFFIX",
    "ENTITY_MANAGEMENT",
    "MANAGEMENT_SUFFIX",
    "NOT_IMPLEMENTED",
    "URL_SCHEMES",
    "EntityManagement",
    "dead_letter_entity",
    "dead_letter_to",
    "entity_address",
    "entity_path",
    "lock_tokens",
    "own_node",
    "put_batch",
    "resolve",
    "service_bus_link",
]

#: The message-format of a batch of messages (``_pyamqp``'s ``BatchMessage``).
BATCH_FORMAT = 0x80013700
#: The schemes of the URLs the SDKs name nodes by.
URL_SCHEMES = ("amqps://", "amqp://", "sb://")
#: The suffix of an entity's dead-letter sub-queue's name.
DEAD_LETTER_SUFFIX = "/$deadletterqueue"
#: The suffix of an entity's management node's name.
MANAGEMENT_SUFFIX = "/$management"
#: The key of :class:`EntityManagement` among the broker's own request nodes: it serves
#: every ``<entity>/$management``.
ENTITY_MANAGEMENT = "*" + MANAGEMENT_SUFFIX
#: The error condition of a request the management node does not serve.
NOT_IMPLEMENTED = "amqp:not-implemented"
#: The application-property keys of the management responses, as the SDK reads them.
_STATUS_KEYS = ("statusCode", "statusDescription")


def entity_address(address: str) -> str:
    """The entity ``address`` names: the path of a URL of :data:`URL_SCHEMES`
    (``amqps://host:5671/orders`` -> ``orders``: :func:`entity_path`), any other address
    as it is."""
    return entity_path(address) if address.startswith(URL_SCHEMES) else address


def entity_path(uri: str) -> str:
    """The path of a URI (an address, or a token's audience) as the broker names the
    entity: without its host and slashes at either end, a dead-letter sub-queue's name in
    any case (``$DeadLetterQueue``, as the SDK has it) as :data:`DEAD_LETTER_SUFFIX`."""
    path = path_of(uri)
    if path.lower().endswith(DEAD_LETTER_SUFFIX):
        path = path[: -len(DEAD_LETTER_SUFFIX)] + DEAD_LETTER_SUFFIX
    return path


def service_bus_link(link: Link, terminus: Source | Target) -> tuple[Any, bool]:
    """``terminus`` with its address mapped by :func:`entity_address`, and whether the
    link is a Service Bus link (its address was a URL; the terminus is the same object
    when it is not). A Service Bus link that sends to the broker (the broker's
    :class:`Receiver`) is answered with rcv-settle-mode ``first``: the broker settles each
    transfer as it gives its outcome (core spec 2.7.3: the receiver chooses)."""
    address = terminus.address
    if terminus.dynamic or not isinstance(address, str):
        return terminus, False
    mapped = entity_address(address)
    if mapped == address:
        return terminus, False
    if isinstance(link, Receiver):
        link.rcv_settle_mode = ReceiverSettleMode.FIRST
    return attrs.evolve(terminus, address=mapped), True


def lock_tokens(consumer: Any, service_bus: bool) -> None:
    """A Service Bus link's consumer (a :class:`.endpoints._Consumer`, if any) tags each
    delivery with a lock token, 16 bytes, as the SDK reads it (``uuid.UUID(bytes_le=tag)``:
    ``ServiceBusReceivedMessage.lock_token``)."""
    if service_bus and consumer is not None and hasattr(consumer, "lock_tokens"):
        consumer.lock_tokens = True


def own_node(nodes: Mapping[str, OwnNode], address: str) -> OwnNode | None:
    """The broker's own request node at ``address`` (one of ``nodes``, by address); an
    entity's ``<entity>/$management`` (the SDK names it so, not by a URL; an entity with no
    ``$`` in its name) is :data:`ENTITY_MANAGEMENT`'s."""
    found = nodes.get(address)
    if found is None and address.endswith(MANAGEMENT_SUFFIX):
        entity = address[: -len(MANAGEMENT_SUFFIX)]
        if entity and "$" not in entity:
            found = nodes.get(ENTITY_MANAGEMENT)
    return found


def resolve(
    broker: Broker10, address: str, *, stream: bool = False, service_bus: bool = False
) -> Node | None:
    """The node a link's ``address`` names: the broker's ``resolve``; for a Service Bus
    link, an entity's dead-letter sub-queue (made if there is none) is found too, and a
    queue sends its rejected messages to its own sub-queue (:func:`dead_letter_to`)."""
    if not service_bus:
        return broker.resolve(address, stream=stream)
    node = broker.declare(address) if dead_letter_entity(address) else None
    if node is None:
        node = broker.resolve(address, stream=stream)
    if isinstance(node, Queue):
        dead_letter_to(broker, node)
    return node


def dead_letter_entity(address: str) -> str | None:
    """The entity whose dead-letter sub-queue ``address`` is, or None."""
    if not address.endswith(DEAD_LETTER_SUFFIX):
        return None
    entity = address[: -len(DEAD_LETTER_SUFFIX)]
    if not entity or "$" in entity:
        return None
    return entity


def dead_letter_to(broker: Broker10, queue: Queue) -> None:
    """A queue a Service Bus link consumes sends its rejected messages to its sub-queue
    ``<entity>/$deadletterqueue`` (unless it has a dead-letter exchange of its own, or is
    itself a sub-queue). Expired messages and those a length limit drops are not sent
    there (as the broker does for any queue without a dead-letter exchange)."""
    if queue.dead_letter_to is not None or "$" in queue.address:
        return
    address = queue.address + DEAD_LETTER_SUFFIX

    def to_sub_queue(message: Any, reason: str) -> None:
        if reason != "rejected":
            if reason == "maxlen":
                broker.dead_letter(message)
            return
        node = broker.declare(address)
        if node.offer(message.copy(broker.next_seq())) is None:
            broker.touch(node)

    queue.dead_letter_to = to_sub_queue


def put_batch(conn: Connection10, node: Node | None, event: DeliveryReceived) -> bool:
    """A transfer of message-format :data:`BATCH_FORMAT` from a producer to ``node``: put
    each message of its data sections on the node, settle the transfer (accepted; rejected,
    ``amqp:decode-error``, when the batch or a message in it is malformed, nothing put; or
    ``amqp:resource-limit-exceeded`` when the node refuses one, those before it put), and
    say True. False (nothing done) for another transfer, one in a transaction or to the
    anonymous relay (the broker takes it as one message)."""
    delivery = event.delivery
    if delivery.message_format != BATCH_FORMAT or node is None or delivery.transaction:
        return False
    broker = conn.broker
    state: Any = Accepted()
    try:
        body = Message.decode(event.data).body
        sections: tuple[Any, ...] = body if type(body) is tuple else (body,)
        if not all(type(s) is Data and type(s.value) is bytes for s in sections):
            raise DecodeError("a batch's body is data sections, each a message")
        messages = [
            parse_message(section.value, seq=broker.next_seq(), wall=broker.wall)
            for section in sections
        ]
    except DecodeError as exc:
        messages = []
        state = Rejected(error=error("amqp:decode-error", f"malformed batch: {exc}"))
    for message in messages:
        why = node.offer(message)
        if why is not None:
            state = Rejected(error=error("amqp:resource-limit-exceeded", why))
            break
        broker.touch(node)
    link = event.link
    assert isinstance(link, Receiver)
    if not delivery.remote_settled:
        link.settle(delivery, state)
    conn.give_credit(link)
    return True


class EntityManagement(RequestNode):
    """Every entity's management node, ``<entity>/$management``: the requests of the SDK's
    management link (application-properties ``operation``, the request's body an
    amqp-value map), answered with ``statusCode`` and ``statusDescription`` as the SDK
    reads them, and ``errorCondition`` when refused. No operation is served yet: each is
    refused at once, 501 ``amqp:not-implemented``."""

    address = ENTITY_MANAGEMENT

    def node_address(self, terminus: Target) -> str:
        """The entity's management node the link names (``orders/$management``)."""
        address = terminus.address
        return address if isinstance(address, str) else self.address

    def answer(self, conn: Connection10, request: Message, reply_to: str) -> Message:
        """The response to a management request: 501, ``amqp:not-implemented``, for any
        operation not served (with its name in the description)."""
        operation = None
        properties = request.application_properties
        if isinstance(properties, dict):
            operation = properties.get("operation")
        shown = operation if isinstance(operation, str) else repr(operation)
        return response(
            request,
            reply_to,
            (501, f"operation {shown[:128]!r} is not implemented by amqp-sansio broker"),
            _STATUS_KEYS,
            extra={"errorCondition": Symbol(NOT_IMPLEMENTED)},
        )
