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
  exchange of its own. The reason and description the SDK gives are set as the message's
  application-properties there (:func:`dead_lettered`).
* **Management.** ``<entity>/$management`` (:class:`EntityManagement`) takes the SDK's
  requests (application-property ``operation``): it serves ``peek-message``,
  ``renew-lock``, ``schedule-message`` and ``cancel-scheduled-message`` (those two with
  :mod:`.scheduled`) with the status code and body the SDK reads; any other is answered at
  once with status 501 and ``errorCondition`` ``amqp:not-implemented``.
* **Topics.** A topic's subscription (``<topic>/subscriptions/<name>``) is a queue its topic
  copies into, made by its first receiver: :mod:`.servicebus_topics`; :func:`resolve`
  finds it.
* **Rejections.** A ``rejected`` outcome on a Service Bus link that sends to the broker
  carries an error whose info is an empty map, never left out (:func:`sdk_outcome`).
* **Receiving.** A Service Bus link's consumer tags each delivery with a lock token
  (:func:`lock_tokens`) and sends each message with its sequence number
  (:func:`sequenced`).

Everything here is I/O-free.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ...codec.amqp10 import AMQPType, Array, Symbol, Timestamp
from ...definitions.amqp10.message import Message
from ...definitions.amqp10.messaging import Accepted, AmqpValue, Data, Rejected, Source, Target
from ...definitions.amqp10.performatives import ReceiverSettleMode
from ...engine.amqp10.link import Link
from ...engine.amqp10.receiver import Receiver
from ...errors import DecodeError, EncodeError
from ...events import DeliveryReceived
from ...security.sas import path_of
from .._nodes import Node, Queue, error
from .._store import StoredMessage, parse_message
from .requests import RequestNode, response
from .scheduled import Scheduled, sequence_numbers
from .servicebus_topics import canonical, subscription, subscription_of

if TYPE_CHECKING:
    from .interface import Broker10, Connection10, OwnNode

__all__ = [
    "ARGUMENT_ERROR",
    "LOCK_DURATION",
    "LOCK_LOST",
    "MAX_PEEK",
    "PEEK",
    "RENEW_LOCK",
    "SCHEDULE",
    "CANCEL_SCHEDULED",
    "SEQUENCE_NUMBER",
    "SERVED",
    "BATCH_FORMAT",
    "DEAD_LETTER",
    "DEAD_LETTER_PROPERTIES",
    "DEAD_LETTER_SUFFIX",
    "MAX_REASON",
    "ENTITY_MANAGEMENT",
    "MANAGEMENT_SUFFIX",
    "NOT_IMPLEMENTED",
    "URL_SCHEMES",
    "EntityManagement",
    "dead_letter_entity",
    "dead_letter_to",
    "dead_lettered",
    "entity_address",
    "entity_path",
    "lock_tokens",
    "own_node",
    "put_batch",
    "resolve",
    "sdk_outcome",
    "sequenced",
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
#: The management operations served (:class:`EntityManagement`).
PEEK = "com.microsoft:peek-message"
RENEW_LOCK = "com.microsoft:renew-lock"
SCHEDULE = "com.microsoft:schedule-message"
CANCEL_SCHEDULED = "com.microsoft:cancel-scheduled-message"
SERVED = (PEEK, RENEW_LOCK, SCHEDULE, CANCEL_SCHEDULED)
#: The most messages one peek returns.
MAX_PEEK = 256
#: How long a renewed lock is said to last, seconds (Service Bus's default lock duration).
LOCK_DURATION = 60.0
#: The message-annotation that carries a message's sequence number.
SEQUENCE_NUMBER = Symbol("x-opt-sequence-number")
#: The error condition of the SDK's ``dead_letter_message`` (a ``rejected`` outcome's),
#: and the keys of its info copied to the dead-lettered message's application-properties.
DEAD_LETTER = "com.microsoft:dead-letter"
DEAD_LETTER_PROPERTIES = ("DeadLetterReason", "DeadLetterErrorDescription")
#: The most characters of each copied.
MAX_REASON = 4096
#: The error conditions of Service Bus's refusals.
ARGUMENT_ERROR = "com.microsoft:argument-error"
LOCK_LOST = "com.microsoft:message-lock-lost"
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
    any case (``$DeadLetterQueue``, as the SDK has it) as :data:`DEAD_LETTER_SUFFIX`, a
    topic's ``Subscriptions`` as :mod:`.servicebus_topics` names it."""
    path = canonical(path_of(uri))
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


def sdk_outcome(state: Any) -> Any:
    """The outcome ``state`` as a Service Bus link's sender reads it: a ``rejected`` one
    whose error has no info gets an empty map as its info (core spec 2.8.14: a map). The
    SDK's ``_pyamqp`` reads an error as a list of three fields (condition, description,
    info) and fails (``IndexError`` in its ``on_send_complete`` callback, its sender then
    waiting for good) on one that leaves out a null info, as core spec 1.4 lets a sender
    do; with the info there, it raises the error the condition names (for
    ``amqp:resource-limit-exceeded``, ``ServiceBusQuotaExceededError``). Any other state
    is returned as it is."""
    if type(state) is Rejected and state.error is not None and state.error.info is None:
        return Rejected(error=attrs.evolve(state.error, info={}))
    return state


def lock_tokens(consumer: Any, service_bus: bool) -> None:
    """A Service Bus link's consumer (a :class:`.endpoints._Consumer`, if any) tags each
    delivery with a lock token, 16 bytes, as the SDK reads it (``uuid.UUID(bytes_le=tag)``:
    ``ServiceBusReceivedMessage.lock_token``)."""
    if service_bus and consumer is not None and hasattr(consumer, "lock_tokens"):
        consumer.lock_tokens = True


def sequenced(message: StoredMessage) -> bytes:
    """The bytes a Service Bus link's consumer sends: the message with its sequence number
    (the broker's arrival order, as :class:`EntityManagement`'s peek gives it) among its
    message-annotations, ``x-opt-sequence-number`` (the SDK's ``sequence_number``); the
    stored message is left as it is."""
    copy = message.copy(message.seq)
    copy.annotate({SEQUENCE_NUMBER: message.seq})
    return copy.encoded()


def dead_lettered(message: StoredMessage, outcome: Rejected, wall: float) -> StoredMessage:
    """The message a ``rejected`` ``outcome`` sends to a dead-letter queue: for the SDK's
    ``dead_letter_message`` (the error's condition :data:`DEAD_LETTER`), a copy whose
    application-properties carry the ``DeadLetterReason`` and
    ``DeadLetterErrorDescription`` of the error's info (strings, at most
    :data:`MAX_REASON` characters each), as Service Bus sets them (it changes the bare
    message; so does this copy, the dead-letter queue's only); otherwise ``message``."""
    err = outcome.error
    info = err.info if err is not None and err.condition == DEAD_LETTER else None
    if not isinstance(info, dict):
        return message
    reasons = {
        key: value[:MAX_REASON]
        for key in DEAD_LETTER_PROPERTIES
        if isinstance(value := info.get(key, info.get(Symbol(key))), str)
    }
    if not reasons:
        return message
    try:
        decoded = Message.decode(message.data)
        properties = {**(decoded.application_properties or {}), **reasons}
        data = attrs.evolve(decoded, application_properties=properties).encode()
        copy = parse_message(data, seq=message.seq, wall=wall)
    except (DecodeError, EncodeError):  # pragma: no cover - it was read when it came
        return message
    copy.delivery_count = message.delivery_count
    copy.expires = message.expires
    return copy


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
    link, an entity's dead-letter sub-queue (made if there is none) and a topic's
    subscription (:func:`.servicebus_topics.subscription`) are found too, and a queue sends
    its rejected messages to its own sub-queue (:func:`dead_letter_to`)."""
    if not service_bus:
        return broker.resolve(address, stream=stream)
    node: Node | None
    if subscription_of(address) is not None:
        node = subscription(broker, address)
    elif dead_letter_entity(address):
        node = broker.declare(address)
    else:
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


def put_batch(conn: Connection10, producer: Any, event: DeliveryReceived) -> bool:
    """A transfer of message-format :data:`BATCH_FORMAT` from a ``producer`` (a
    :class:`.endpoints._Producer`) to its node: put each message of its data sections on
    the node, settle the transfer (accepted; rejected, ``amqp:decode-error``, when the
    batch or a message in it is malformed, nothing put; or ``amqp:resource-limit-exceeded``
    when the node refuses one, those before it put), and say True. False (nothing done)
    for another transfer, one in a transaction or to the anonymous relay (the broker takes
    it as one message)."""
    delivery = event.delivery
    node: Node | None = producer.node
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
        why = broker.scheduled.offer(node, message)  # (held if scheduled: .scheduled)
        if why is not None:
            state = Rejected(error=error("amqp:resource-limit-exceeded", why))
            break
        broker.touch(node)
    if not delivery.remote_settled:
        producer.settle(delivery, state)
    conn.give_credit(producer.link)
    return True


class EntityManagement(RequestNode):
    """Every entity's management node, ``<entity>/$management``: the requests of the SDK's
    management link (application-property ``operation``; the body an amqp-value map),
    answered with ``statusCode`` and ``statusDescription`` as the SDK reads them (and
    ``errorCondition`` when refused). Served (:data:`SERVED`):

    * ``com.microsoft:peek-message`` (``from-sequence-number``, ``message-count``): 200 with
      ``{"messages": [{"message": <encoded message>}, ...]}``, the queue's available
      messages from that sequence number on (at most :data:`MAX_PEEK`), each annotated
      with its ``x-opt-sequence-number`` (the broker's arrival order); 204 when there are
      none.
    * ``com.microsoft:renew-lock`` (``lock-tokens``): a lock lasts while the receiver's
      link holds the delivery (the broker has no lock time-out), so a lock this connection
      holds is renewed: 200 with ``{"expirations": [<timestamp>, ...]}``, each the
      broker's wall clock plus :data:`LOCK_DURATION`; a token it does not hold: 410,
      ``com.microsoft:message-lock-lost``.
    * ``com.microsoft:schedule-message`` (``messages``: a list of maps, each with the
      encoded ``message``, which carries its ``x-opt-scheduled-enqueue-time``): 200 with
      ``{"sequence-numbers": <array of long>}``, one per message, in order
      (:meth:`.scheduled.ScheduledMessages.schedule`); refusals as it says (400, 403).
    * ``com.microsoft:cancel-scheduled-message`` (``sequence-numbers``: an array of long):
      200 and no body; 404, ``com.microsoft:message-not-found``, naming the numbers not
      waiting for this entity (none is cancelled then).

    Any other operation: 501, ``amqp:not-implemented``, at once. A malformed request
    (no map body where one is needed): 400, ``com.microsoft:argument-error``."""

    address = ENTITY_MANAGEMENT

    def node_address(self, terminus: Target) -> str:
        """The entity's management node the link names (``orders/$management``)."""
        address = terminus.address
        return address if isinstance(address, str) else self.address

    def answer(self, conn: Connection10, request: Message, reply_to: str) -> Message:
        """Without the link, no entity: 501 (:meth:`answer_on` is what the node uses)."""
        return self._refused(request, reply_to, 501, NOT_IMPLEMENTED, "no entity")

    def answer_on(
        self, link: Receiver, conn: Connection10, request: Message, reply_to: str
    ) -> Message:
        """The response to a management request on ``link`` (to its entity)."""
        properties = request.application_properties
        operation = properties.get("operation") if isinstance(properties, dict) else None
        target = getattr(link.remote, "target", None)
        address = getattr(target, "address", None)
        # (the SDK names it by its path, ``topic/Subscriptions/sub/$management``, not a URL)
        entity = canonical(entity_address(address))[: -len(MANAGEMENT_SUFFIX)] if address else ""
        if operation == PEEK:
            return self._peek(request, reply_to, entity)
        if operation == RENEW_LOCK:
            return self._renew_lock(conn, request, reply_to)
        if operation in (SCHEDULE, CANCEL_SCHEDULED):
            return self._scheduled(operation, request, reply_to, entity)
        shown = operation if isinstance(operation, str) else repr(operation)
        why = f"operation {shown[:128]!r} is not implemented by amqp-sansio broker"
        return self._refused(request, reply_to, 501, NOT_IMPLEMENTED, why)

    def _refused(
        self, request: Message, reply_to: str, code: int, condition: str, why: str
    ) -> Message:
        extra = {"errorCondition": Symbol(condition)}
        return response(request, reply_to, (code, why), _STATUS_KEYS, extra=extra)

    def _peek(self, request: Message, reply_to: str, entity: str) -> Message:
        body = _map_body(request)
        first: Any = body.get("from-sequence-number", 0) if body is not None else None
        count: Any = body.get("message-count", 1) if body is not None else None
        if not _integer(first) or not _integer(count) or count < 1:
            why = "peek-message takes a map: from-sequence-number (long), message-count (int)"
            return self._refused(request, reply_to, 400, ARGUMENT_ERROR, why)
        node = self.broker.nodes.get(entity)
        found: list[dict[str, Any]] = []
        if isinstance(node, Queue):
            wanted = min(count, MAX_PEEK)
            for seq in sorted(s for s in node.available if s >= first)[:wanted]:
                peeked = Message.decode(node.available[seq].encoded())
                annotations = dict(peeked.message_annotations or {})
                annotations[SEQUENCE_NUMBER] = seq
                peeked = attrs.evolve(peeked, message_annotations=annotations)
                found.append({"message": peeked.encode()})
        if not found:
            return response(request, reply_to, (204, "No messages"), _STATUS_KEYS)
        return response(request, reply_to, (200, "OK"), _STATUS_KEYS, body={"messages": found})

    def _scheduled(self, operation: str, request: Message, reply_to: str, entity: str) -> Message:
        body = _map_body(request)
        scheduled = self.broker.scheduled
        try:
            if operation == CANCEL_SCHEDULED:
                numbers = sequence_numbers(body.get("sequence-numbers") if body else None)
                if numbers is None:
                    why = "cancel-scheduled-message takes a map: sequence-numbers (array of long)"
                    raise Scheduled(400, ARGUMENT_ERROR, why)
                scheduled.cancel(entity, numbers)
                return response(request, reply_to, (200, "OK"), _STATUS_KEYS)
            given: Any = body.get("messages") if body is not None else None
            items = given if isinstance(given, list) and given else []
            encoded: list[Any] = [i.get("message") if isinstance(i, dict) else None for i in items]
            if not encoded or not all(isinstance(m, bytes) for m in encoded):
                why = "schedule-message takes a map: messages (a list of maps with message)"
                raise Scheduled(400, ARGUMENT_ERROR, why)
            found = Array(AMQPType.LONG, scheduled.schedule(entity, encoded))
        except Scheduled as exc:
            return self._refused(request, reply_to, exc.code, exc.condition, exc.why)
        return response(
            request, reply_to, (200, "OK"), _STATUS_KEYS, body={"sequence-numbers": found}
        )

    def _renew_lock(self, conn: Connection10, request: Message, reply_to: str) -> Message:
        body = _map_body(request)
        given: Any = body.get("lock-tokens") if body is not None else None
        tokens = [t for t in given if isinstance(t, uuid.UUID)] if _sequence(given) else []
        if not tokens or len(tokens) != len(given):
            why = "renew-lock takes a map: lock-tokens (an array of uuid)"
            return self._refused(request, reply_to, 400, ARGUMENT_ERROR, why)
        held = {
            delivery.tag
            for consumer in conn.consumers.values()
            for delivery in getattr(consumer, "inflight", ())
        }
        lost = [t for t in tokens if t.bytes_le not in held]
        if lost:
            why = f"the lock of {str(lost[0])!r} is lost (or was never held here)"
            return self._refused(request, reply_to, 410, LOCK_LOST, why)
        until = Timestamp(int((self.broker.wall + LOCK_DURATION) * 1000))
        expirations = Array(AMQPType.TIMESTAMP, [until] * len(tokens))
        return response(
            request, reply_to, (200, "OK"), _STATUS_KEYS, body={"expirations": expirations}
        )


def _integer(value: object) -> bool:
    """Whether ``value`` is an integer of the codec's (long, int, ...), not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def _sequence(value: object) -> bool:
    """Whether ``value`` is an array or a list (a decoded one: a list or a tuple)."""
    return isinstance(value, Array | list | tuple)


def _map_body(request: Message) -> dict[Any, Any] | None:
    """The request's body, if it is an amqp-value map."""
    body = request.body
    value = body.value if isinstance(body, AmqpValue) else None
    return value if isinstance(value, dict) else None
