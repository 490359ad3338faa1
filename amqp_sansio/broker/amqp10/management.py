"""The broker's management node, ``$management``: the request/response protocol of the OASIS
AMQP Management Version 1.0 working draft ("management draft" below; not part of the 1.0
standard, so not in our spec folder), as Qpid Dispatch, Apache Artemis and Azure Service Bus
answer it.

A client attaches a sender to ``$management`` and sends requests; each request's
``reply-to`` (core spec 3.2.4) names where the response goes: a node of the broker, most
often the dynamic node of the client's receiver (core spec 3.5.3 ``dynamic``), or a queue
it reads; or the target address of the client's receiver from ``$management`` (Azure
Service Bus's convention). A request is a message whose application-properties
(management draft 3.1) carry ``operation`` and, as the operation needs them, ``type`` (the
manageable entity type), ``name`` or ``identity``, ``locales`` (ignored: the descriptions
are in English, the draft's fallback); the response carries ``correlation-id`` (the
request's correlation-id if it has one, else its message-id) and the application-properties
``statusCode`` (an int, as in HTTP: 200, 400, 404, 501, ...) and ``statusDescription``; its
body, on success, is an amqp-value holding what the operation returns.

The manageable entities are the broker's nodes, of three types (:data:`ENTITY_TYPES`; the
short names ``queue``, ``stream`` and ``topic`` are taken too), each with the attributes of
:data:`ATTRIBUTES`, read from the node when the request comes (nothing is counted on the
message path). The operations: ``READ`` (one node by ``name`` or ``identity``: its address),
``QUERY`` (selected attributes of every node, or of one type's, in address order, with the
draft's paging), ``GET-TYPES``, ``GET-ATTRIBUTES``, ``GET-OPERATIONS``,
``GET-ANNOTATIONS`` and ``GET-MGMT-NODES``; ``CREATE``, ``UPDATE``, ``DELETE`` and any other
operation are answered 501 (the broker makes nodes on first use; it is not configured
through here). ``docs/broker.rst`` ("Management") lists the attributes and status codes.

Everything here is I/O-free: :func:`answer` turns a request into a response message;
:class:`Management` (the broker's ``management``, a :class:`.requests.RequestNode`) holds
the links to ``$management`` and routes the responses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ...codec.amqp10 import UInt
from ...definitions.amqp10.message import Message
from ...definitions.amqp10.messaging import AmqpValue
from .._nodes import MemoryStore, Node, Queue, Topic
from .._streams import Stream
from .endpoints import _Consumer
from .requests import RequestNode, correlation, response
from .requests import Status as _Status

if TYPE_CHECKING:
    from .interface import Broker10, Connection10

__all__ = [
    "ATTRIBUTES",
    "ENTITY_TYPES",
    "MANAGEMENT_ADDRESS",
    "MANAGEMENT_TYPE",
    "MAX_ATTRIBUTE_NAMES",
    "QUEUE_TYPE",
    "STREAM_TYPE",
    "TOPIC_TYPE",
    "Management",
    "answer",
]

#: The address of the management node (the management draft's well-known address).
MANAGEMENT_ADDRESS = "$management"
#: The type of the management node itself (management draft: ``type`` of the Management
#: Node Operations, with ``name`` ``self``).
MANAGEMENT_TYPE = "org.amqp.management"
#: The manageable entity types: a queue (also a dynamic node), a stream, a topic.
QUEUE_TYPE = "org.amqp-sansio.queue"
STREAM_TYPE = "org.amqp-sansio.stream"
TOPIC_TYPE = "org.amqp-sansio.topic"
ENTITY_TYPES = (QUEUE_TYPE, STREAM_TYPE, TOPIC_TYPE)
_KINDS: dict[str, type[Node]] = {QUEUE_TYPE: Queue, STREAM_TYPE: Stream, TOPIC_TYPE: Topic}
#: The short names a request may use for a type: a node's ``kind``.
_SHORT = {"queue": QUEUE_TYPE, "stream": STREAM_TYPE, "topic": TOPIC_TYPE}

_COMMON = (
    "name",
    "identity",
    "type",
    "depth",
    "available",
    "bytes",
    "consumers",
    "producers",
    "unsettled",
    "durable",
    "autoDelete",
    "dynamic",
)
#: The attributes of each entity type, in the order QUERY gives them when it is asked for
#: all (see docs/broker.rst "Management" for their meaning).
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    QUEUE_TYPE: _COMMON,
    STREAM_TYPE: (*_COMMON, "firstOffset", "nextOffset"),
    TOPIC_TYPE: (*_COMMON, "subscriptions"),
}
#: Every attribute name, in order: what a QUERY over all types gives.
_ALL = tuple(dict.fromkeys(name for names in ATTRIBUTES.values() for name in names))
#: The most attribute names a QUERY may ask for (a longer list is answered 400).
MAX_ATTRIBUTE_NAMES = 256
_OPERATIONS = {
    MANAGEMENT_TYPE: [
        "QUERY",
        "GET-TYPES",
        "GET-ATTRIBUTES",
        "GET-OPERATIONS",
        "GET-ANNOTATIONS",
        "GET-MGMT-NODES",
    ],
    **{kind: ["READ"] for kind in ENTITY_TYPES},
}
_KEYS = ("statusCode", "statusDescription")
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 501: "Not Implemented"}


def _bad(description: str) -> _Status:
    return _Status(400, description)


# -- the operations ---------------------------------------------------------------------------


def answer(
    broker: Broker10,
    request: Message,
    identity: str | None = None,
    *,
    reply_to: str | None = None,
) -> Message:
    """The response to a management ``request`` (management draft 3.1 and its responses),
    for a client authenticated as ``identity``: when the broker has users, only the nodes
    that identity may send to or receive from exist for it. Its ``to`` is ``reply_to`` if
    given, else the request's. Never raises for what the request holds: a request that
    makes no sense is answered 400, an unknown operation 501, an unknown type, name or
    identity 404."""
    if reply_to is None:
        _, reply_to = correlation(request)
    try:
        code, body, extra = _operation(broker, request, identity)
        description = _REASONS[code]
    except _Status as status:
        code, body, extra, description = status.code, None, {}, status.description
    return response(request, reply_to, (code, description), _KEYS, body=body, extra=extra)


def _operation(
    broker: Broker10, request: Message, identity: str | None
) -> tuple[int, Any, dict[str, Any]]:
    props = request.application_properties
    if not isinstance(props, dict):
        raise _bad("a management request has application-properties (operation, type, ...)")
    operation = props.get("operation")
    if operation is None:
        raise _bad("no 'operation' in the request's application-properties")
    if not isinstance(operation, str):
        raise _bad(f"'operation' is a string, not {type(operation).__name__}")
    if operation == "READ":
        return 200, _read(broker, props, identity), {}
    if operation == "QUERY":
        return _query(broker, props, request.body, identity)
    wanted = _kinds(props)
    if operation == "GET-TYPES":
        return 200, {kind: [] for kind in (*wanted, MANAGEMENT_TYPE)}, {}
    if operation == "GET-ATTRIBUTES":
        return 200, {kind: list(ATTRIBUTES[kind]) for kind in wanted}, {}
    if operation == "GET-OPERATIONS":
        return 200, {kind: _OPERATIONS[kind] for kind in (*wanted, MANAGEMENT_TYPE)}, {}
    if operation == "GET-ANNOTATIONS":
        return 200, {kind: [] for kind in wanted}, {}
    if operation == "GET-MGMT-NODES":
        return 200, [], {}  # (the broker has no other management node)
    shown = operation if len(operation) <= 64 else operation[:64] + "..."
    raise _Status(501, f"operation {shown!r} is not implemented")


def _entity_type(value: Any) -> str:
    """The full name of the entity type ``value`` names (404 if it names none)."""
    if not isinstance(value, str):
        raise _bad(f"an entity type is a string, not {type(value).__name__}")
    kind = _SHORT.get(value, value)
    if kind not in _KINDS:
        shown = value if len(value) <= 64 else value[:64] + "..."
        raise _Status(404, f"no entity type {shown!r} (known: {', '.join(ENTITY_TYPES)})")
    return kind


def _kinds(props: dict[str, Any]) -> tuple[str, ...]:
    """The entity types a Management Node Operation is about: the one its ``entityType``
    names (the draft's application-property for this), or its ``type`` when that names an
    entity type rather than the management node; all of them when neither does."""
    given = props.get("entityType")
    if given is None:
        given = props.get("type")
    if given is None or given == MANAGEMENT_TYPE:
        return ENTITY_TYPES
    return (_entity_type(given),)


def _visible(broker: Broker10, identity: str | None, node: Node) -> bool:
    users = broker.config.users
    if users is None:
        return True
    address = node.address
    return users.allows(identity, address, send=True) or users.allows(identity, address, send=False)


def _type_of(node: Node) -> str:
    return _SHORT[node.kind]


def _read(broker: Broker10, props: dict[str, Any], identity: str | None) -> dict[str, Any]:
    """READ (management draft, entity operations): the attributes of the node whose address
    the request gives as ``name`` or ``identity`` (both: they must agree), of the request's
    ``type`` if it gives one."""
    name, ident = props.get("name"), props.get("identity")
    for key, value in (("name", name), ("identity", ident)):
        if value is not None and not isinstance(value, str):
            raise _bad(f"{key!r} is a string, not {type(value).__name__}")
    if name is None and ident is None:
        raise _bad("READ needs a 'name' or an 'identity'")
    if name is not None and ident is not None and name != ident:
        raise _bad("'name' and 'identity' name different nodes")
    address = str(name if name is not None else ident)
    kind = None if props.get("type") is None else _entity_type(props.get("type"))
    node = broker.nodes.get(address)
    if (
        node is None
        or node.deleted
        or node.kind not in _SHORT
        or (kind is not None and _type_of(node) != kind)
        or not _visible(broker, identity, node)
    ):
        shown = address if len(address) <= 256 else address[:256] + "..."
        what = "node" if kind is None else kind.rsplit(".", 1)[-1]
        raise _Status(404, f"no {what} {shown!r}")
    return attributes(broker, node)


def _whole(props: dict[str, Any], key: str) -> int | None:
    value = props.get(key)
    if value is None:
        return None
    if type(value) is bool or not isinstance(value, int) or value < 0:
        raise _bad(f"{key!r} is a non-negative integer, not {value!r}")
    return int(value)


def _query(
    broker: Broker10, props: dict[str, Any], body: Any, identity: str | None
) -> tuple[int, Any, dict[str, Any]]:
    """QUERY (management draft, Management Node Operations): the body's ``attributeNames``
    (none, or an empty list: all the attributes of the types queried) of each node of the
    type asked for (``entityType``, or ``type`` when it names an entity type; else every
    type), in address order (the draft's stable order), from ``offset`` (default 0), at most
    ``count`` of them (default: all). The response's body is a map with ``attributeNames``
    and ``results`` (a list per node, positionally matching the names; an attribute a type
    has not is null), its application-properties carry ``count``, the number of results."""
    kinds = _kinds(props)
    offset, count = _whole(props, "offset"), _whole(props, "count")
    if body is None:
        body = {}
    elif isinstance(body, AmqpValue):
        body = body.value
    else:
        raise _bad("a QUERY's body is an amqp-value holding a map")
    if not isinstance(body, dict):
        raise _bad(f"a QUERY's body is a map, not {type(body).__name__}")
    names = body.get("attributeNames")
    if names is None or (isinstance(names, list) and not names):
        names = list(_ALL if len(kinds) > 1 else ATTRIBUTES[kinds[0]])
    elif not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise _bad("'attributeNames' is a list of strings")
    elif len(names) > MAX_ATTRIBUTE_NAMES:
        raise _bad(f"at most {MAX_ATTRIBUTE_NAMES} attributeNames, not {len(names)}")
    elif len(set(names)) != len(names):
        raise _bad("'attributeNames' holds a name twice")
    names = [str(n) for n in names]
    wanted = tuple(_KINDS[k] for k in kinds)
    nodes = sorted(
        (
            node
            for node in broker.nodes.values()
            if type(node) in wanted and not node.deleted and _visible(broker, identity, node)
        ),
        key=lambda node: node.address,
    )
    start = offset or 0
    chosen = nodes[start:] if count is None else nodes[start : start + count]
    results = []
    for node in chosen:
        values = attributes(broker, node)
        results.append([values.get(name) for name in names])
    return 200, {"attributeNames": names, "results": results}, {"count": UInt(len(results))}


def attributes(broker: Broker10, node: Node) -> dict[str, Any]:
    """The attributes of ``node``, as READ gives them (docs/broker.rst "Management")."""
    consumers = [e for e in node.links if isinstance(e, _Consumer)]
    values: dict[str, Any] = {
        "name": node.address,
        "identity": node.address,
        "type": _type_of(node),
        "depth": node.depth,
        "consumers": len(consumers),
        "producers": len(node.links) - len(consumers),
        "durable": node.persistent and not isinstance(broker.store, MemoryStore),
        "autoDelete": node.auto or node.dynamic,
        "dynamic": node.dynamic,
    }
    if isinstance(node, Queue):
        values["available"] = len(node.available)
        values["bytes"] = node.bytes
        values["unsettled"] = node.acquired
    elif isinstance(node, Stream):
        values["available"] = node.depth  # (every message held is there to be read)
        values["bytes"] = node.bytes
        values["unsettled"] = sum(len(c.link.unsettled) for c in consumers)
        values["firstOffset"] = node.first
        values["nextOffset"] = node.end
    else:
        assert isinstance(node, Topic)
        buffers = node.subscriptions.values()
        values["available"] = sum(len(b.available) for b in buffers)
        values["bytes"] = sum(b.bytes for b in buffers)
        values["unsettled"] = sum(b.acquired for b in buffers)
        values["subscriptions"] = len(node.subscriptions)
    return {name: values[name] for name in ATTRIBUTES[values["type"]]}


# -- the node ---------------------------------------------------------------------------------


class Management(RequestNode):
    """The ``$management`` node: its links and the routing of its responses are
    :class:`.requests.RequestNode`'s; its answers are :func:`answer`'s."""

    address = MANAGEMENT_ADDRESS

    def answer(self, conn: Connection10, request: Message, reply_to: str) -> Message:
        return answer(self.broker, request, conn.identity, reply_to=reply_to)
