"""What the broker's request/response nodes share (``$management``, :mod:`.management`;
``$cbs``, :mod:`.cbs`): the links to them and the routing of their responses.

A client attaches a sender to the node and sends requests; each request's ``reply-to``
(core spec 3.2.4) names where the response goes: a node of the broker, most often the
dynamic node of the client's receiver (core spec 3.5.3 ``dynamic``), or a queue it reads;
or the target address of the client's receiver from the node (Azure Service Bus's
convention). A request without a ``reply-to`` (Azure's ``_pyamqp`` sends its ``put-token``
so) is answered on the connection's receiver from the node, the latest attached, if it has
one. The response's ``correlation-id`` is the request's correlation-id if it has one, else
its message-id (:func:`correlation`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from ...codec.amqp10 import Int
from ...definitions.amqp10.message import Message
from ...definitions.amqp10.messaging import (
    Accepted,
    AmqpValue,
    Properties,
    Rejected,
    Source,
    Target,
)
from ...engine.amqp10.link import Link
from ...engine.amqp10.receiver import Receiver
from ...engine.amqp10.sender import Sender
from ...engine.amqp10.states import LinkState
from ...errors import DecodeError, EncodeError
from ...events import DeliveryReceived
from .._nodes import Node, Queue, error
from .._store import parse_message

if TYPE_CHECKING:
    from .interface import Broker10, Connection10

__all__ = ["RequestNode", "Status", "correlation", "response"]

_ATTACHED = LinkState.ATTACHED


class Status(Exception):
    """A request answered with an error status (and no body)."""

    def __init__(self, code: int, description: str) -> None:
        super().__init__(description)
        self.code = code
        self.description = description


def response(
    request: Message,
    reply_to: str | None,
    status: tuple[int, str],
    keys: tuple[str, str],
    *,
    body: Any = None,
    extra: dict[str, Any] | None = None,
) -> Message:
    """The response to ``request``, to ``reply_to``: its ``correlation-id``
    (:func:`correlation`), the ``status`` (code, description) as the application-properties
    ``keys`` name them (``statusCode``, ``statusDescription`` for the management draft;
    ``status-code``, ``status-description`` for CBS), ``extra`` ones, and ``body`` (an
    amqp-value) if not None."""
    found, _ = correlation(request)
    code, description = status
    return Message(
        properties=Properties(correlation_id=found, to=reply_to),
        application_properties={keys[0]: Int(code), keys[1]: description, **(extra or {})},
        body=None if body is None else AmqpValue(body),
    )


def correlation(request: Message) -> tuple[Any, str | None]:
    """The correlation-id of the response to ``request`` (its correlation-id, else its
    message-id), and its ``reply-to`` if that is a string."""
    properties = request.properties
    if properties is None:
        return None, None
    found = properties.correlation_id
    if found is None:
        found = properties.message_id
    reply_to = properties.reply_to
    return found, reply_to if isinstance(reply_to, str) else None


class RequestNode:
    """A node of the broker that answers requests (the subclass's :meth:`answer`): the
    links on which clients send them (their senders to :attr:`address`; the broker's
    receivers), the links on which they take responses (their receivers from it), and the
    routing of each response.

    Each request is answered, then accepted. The response goes on the connection's
    receiver from the node whose target address is the request's ``reply-to``, if there is
    one; else into the node the ``reply-to`` names; without a ``reply-to``, on the
    connection's latest receiver from the node. A request whose response can go nowhere is
    rejected: nowhere named (``amqp:invalid-field``), no node there (``amqp:not-found``), a
    node the client may not send to when the broker has users
    (``amqp:unauthorized-access``; the dynamic nodes the connection made are its own), a
    full node (``amqp:resource-limit-exceeded``). A request in a transaction is rejected
    (``amqp:not-implemented``)."""

    #: The node's address (a subclass's).
    address = ""
    #: Whether any client may attach to it whatever the users file says (``$cbs``: a token
    #: is how a client gets rights), or only those who may send to its address.
    open_to_all = False

    def __init__(self, broker: Broker10) -> None:
        self.broker = broker
        #: The request links, and their connections; and the response links, by
        #: connection and target address, with the queue that holds each one's responses
        #: (not one of the broker's nodes). Those gone are forgotten at the next attach:
        #: the maps hold no more than the links attached since.
        self.links: dict[Receiver, Connection10] = {}
        self.replies: dict[tuple[Connection10, str], tuple[Sender, Queue]] = {}

    def answer(self, conn: Connection10, request: Message, reply_to: str) -> Message:
        """The response to ``request`` from ``conn``, to ``reply_to`` (its ``to``), with
        its ``correlation-id`` (:func:`correlation`); never raises for what the request
        holds."""
        raise NotImplementedError  # pragma: no cover - every node answers

    def answer_on(
        self, link: Receiver, conn: Connection10, request: Message, reply_to: str
    ) -> Message:
        """The response to ``request``, which came on ``link``: :meth:`answer`'s (a node
        that serves many addresses tells them apart by the link)."""
        return self.answer(conn, request, reply_to)

    def node_address(self, terminus: Target) -> str:
        """The address the broker's attach gives a link to the node (its target's):
        :attr:`address`; a node serving many addresses gives the one the link names."""
        return self.address

    def attach(self, conn: Connection10, link: Link, terminus: Source | Target) -> None:
        """A client attaches a link to (or from) the node."""
        links, replies = self.links, self.replies
        for gone in [k for k, c in links.items() if k.state is not _ATTACHED or c.lost]:
            del links[gone]
        for key in [k for k, (s, _) in replies.items() if s.state is not _ATTACHED or k[0].lost]:
            del replies[key]
        if isinstance(link, Sender):
            assert isinstance(terminus, Source)
            self._response_link(conn, link, terminus)
            return
        assert isinstance(link, Receiver) and isinstance(terminus, Target)
        config = self.broker.config
        link.max_message_size = config.max_message_size
        link.attach(target=attrs.evolve(terminus, address=self.node_address(terminus)))
        link.flow(config.link_credit)
        links[link] = conn

    def _response_link(self, conn: Connection10, link: Sender, source: Source) -> None:
        """A receiver from the node: its target's address is where the client's requests
        say to reply (``reply-to``); it consumes a queue of its own that holds its
        responses (credit, outcomes and settlement as on any queue)."""
        remote = link.remote
        address = getattr(None if remote is None else remote.target, "address", None)
        if not isinstance(address, str) or not address:
            link.refuse(
                error(
                    "amqp:invalid-field",
                    f"a receiver from {self.address} names, as its target's address, "
                    "the reply-to of the requests whose responses it takes",
                )
            )
            return
        queue = Queue(self.broker, self.address)
        conn.add_consumer(link, queue, source)
        if link.state is _ATTACHED:
            self.replies.pop((conn, address), None)  # (re-inserted: the latest is last)
            self.replies[(conn, address)] = (link, queue)

    def request(self, conn: Connection10, event: DeliveryReceived) -> bool:
        """A message arrived on a link of ``conn`` that is not a producer's: if it is one
        of this node's request links, answer the request, then settle it (unless it came
        settled), and say True; else False."""
        link = event.link
        if self.links.get(link) is not conn:  # type: ignore[call-overload]
            return False
        assert isinstance(link, Receiver)
        delivery = event.delivery
        state: Any
        if delivery.transaction is not None:
            state = Rejected(
                error=error(
                    "amqp:not-implemented", f"requests to {self.address} are not transactional"
                )
            )
        else:
            try:
                request = Message.decode(event.data)
            except DecodeError as exc:
                state = Rejected(error=error("amqp:decode-error", f"malformed message: {exc}"))
            else:
                state = self._respond(conn, link, request)
        if not delivery.remote_settled:
            link.settle(delivery, state)
        conn.give_credit(link)
        self.broker.has_output(conn)
        return True

    def _latest(self, conn: Connection10) -> str | None:
        """The target address of ``conn``'s latest receiver from the node still attached."""
        found = None
        for (owner, address), (link, _) in self.replies.items():
            if owner is conn and link.state is _ATTACHED:
                found = address
        return found

    def _respond(self, conn: Connection10, link: Receiver, request: Message) -> Any:
        broker = self.broker
        _, reply_to = correlation(request)
        if reply_to is None:
            reply_to = self._latest(conn)
            if reply_to is None:
                return Rejected(
                    error=error(
                        "amqp:invalid-field",
                        f"a request to {self.address} needs a reply-to, or a receiver from "
                        f"{self.address} to answer on",
                    )
                )
        reply = self.replies.get((conn, reply_to))
        own = reply is not None and reply[0].state is _ATTACHED  # a response link of its own
        node: Node | None = reply[1] if reply is not None and own else None
        if node is None:
            node = broker.nodes.get(reply_to)
            if node is None or node.deleted:
                return Rejected(error=error("amqp:not-found", f"no node {reply_to!r} to reply to"))
            own = node.dynamic and node.creator is not None and node.creator.conn is conn
        assert node is not None
        users = broker.config.users
        if users is not None and not own and not users.allows(conn.identity, reply_to, send=True):
            who = conn.identity or "an unauthenticated client"
            return Rejected(
                error=error("amqp:unauthorized-access", f"{who} may not send to {reply_to!r}")
            )
        response = self.answer_on(link, conn, request, reply_to)
        try:
            data = response.encode()
        except EncodeError as exc:  # pragma: no cover - a correlation-id the codec refuses
            return Rejected(error=error("amqp:invalid-field", f"cannot answer: {exc}"))
        why = node.offer(parse_message(data, seq=broker.next_seq(), wall=broker.wall))
        if why is not None:
            return Rejected(error=error("amqp:resource-limit-exceeded", why))
        broker.touch(node)
        return Accepted()
