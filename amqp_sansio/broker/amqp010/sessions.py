"""The broker's side of an AMQP 0-10 session (0-10 spec, classes ``session`` and
``message``): its subscriptions (``message.subscribe``), each a consumer of its queue as a
node sees one, with the credit of its flow mode (``message.set-flow-mode``: credit, or
window, whose credit comes back as the client completes each transfer), the transfers out
that wait for the client's ``message.accept`` (accept-mode explicit) and its transaction
(``tx.select``: transfers and accepts held until ``tx.commit``).

The engine (:mod:`amqp_sansio.engine.amqp010`) numbers and replays the commands; this
module is what the commands do to the broker's queues.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ...definitions import amqp010 as spec
from ...engine.amqp010 import Connection as Engine010
from ...engine.amqp010 import ConnectionState, SessionStore
from ...errors import EncodeError
from .._interface import ConnectionBroker, VirtualHostAccess
from .._nodes import Node, Queue
from .._record import ConnectionRecord
from .._selector import Selector
from .._store import StoredMessage
from .mapping import transfer_of

__all__ = ["UNLIMITED", "Broker010", "Connection010", "Session010", "Subscription"]


class Broker010(ConnectionBroker, Protocol):
    """What the 0-10 side asks of the broker: :class:`ConnectionBroker`, and its virtual
    hosts (``/`` always, whose queues are the broker's nodes)."""

    @property
    def vhosts(self) -> Mapping[str, VirtualHostAccess]: ...

    #: The engines' store of detached sessions, shared by every 0-10 connection.
    sessions_010: SessionStore
    #: The sessions kept past their connection, by (identity, name): resumed by another.
    kept_010: dict[tuple[str | None, bytes], Session010]


class Connection010(Protocol):
    """What a session and the commands ask of their connection
    (:class:`~amqp_sansio.broker.amqp010.connection.BrokerConnection010`)."""

    broker: Broker010
    engine: Engine010
    #: Who logged in (None: anonymous access).
    identity: str | None
    record: ConnectionRecord
    #: A message.flush came in this input: dispatch before its completion goes.
    flushing: bool

    @property
    def vhost_or_default(self) -> VirtualHostAccess: ...

    def publish(self, exchange: str, key: str, message: StoredMessage, headers: object) -> None: ...

    def taken(self, queue: Queue, message: StoredMessage) -> None: ...

    def give_back(self, queue: Queue, message: StoredMessage, *, redelivered: bool) -> None: ...


#: A credit of this value is infinite (0-10 spec, ``message.flow``: ``value`` 0xFFFFFFFF).
UNLIMITED = 0xFFFFFFFF
#: What an infinite credit counts as for a node (large enough never to stop a dispatch).
_BIG = 1 << 30
_WINDOW = int(spec.MessageFlowMode.WINDOW)
_MESSAGE = int(spec.MessageCreditUnit.MESSAGE)
_EXPLICIT = int(spec.MessageAcceptMode.EXPLICIT)


class Subscription:
    """A ``message.subscribe`` of one session: a consumer of its queue (the protocol of
    ``._nodes.Consumer``), delivering to ``destination``."""

    copy = False
    cursor = 0
    blocked = False
    selector: Selector | None = None
    subscription = None

    def __init__(
        self,
        session: Session010,
        destination: str,
        queue: Queue,
        *,
        explicit: bool,
        browse: bool = False,
    ) -> None:
        #: acquire-mode not-acquired: a browser, shown the messages, taking none (its
        #: client may ``message.acquire`` them).
        self.copy = browse
        self.session = session
        self.destination = destination
        self.queue = queue
        #: accept-mode explicit: each transfer waits for the client's message.accept.
        self.explicit = explicit
        #: message.set-flow-mode: window until one says otherwise (0-10 spec,
        #: ``message.set-flow-mode``: "a peer MUST consider the flow-mode to be window").
        self.window = True
        self.messages = 0
        self.octets = 0
        #: message.flush asked for: the credit goes to zero once the queue is dispatched.
        self.flushing = False
        #: The command of each delivery: the same for all of them.
        self.transfer = spec.MessageTransfer(
            destination=destination,
            accept_mode=_EXPLICIT if explicit else int(spec.MessageAcceptMode.NONE),
            acquire_mode=int(
                spec.MessageAcquireMode.NOT_ACQUIRED
                if browse
                else spec.MessageAcquireMode.PRE_ACQUIRED
            ),
        )

    def __repr__(self) -> str:
        return f"<0-10 subscription {self.destination!r} of {self.queue.address!r}>"

    @property
    def credit(self) -> int:
        if not self.session.sending or self.octets <= 0:
            return 0
        return _BIG if self.messages == UNLIMITED else self.messages

    def add_credit(self, unit: int, value: int) -> None:
        """``message.flow``: ``value`` more of ``unit`` (infinite stays infinite)."""
        if unit == _MESSAGE:
            if self.messages != UNLIMITED:
                self.messages = UNLIMITED if value == UNLIMITED else self.messages + value
        elif self.octets != UNLIMITED:
            self.octets = UNLIMITED if value == UNLIMITED else self.octets + value

    def stop(self, *, octets: bool = False) -> None:
        """``message.stop`` and ``message.flush``: no message credit, so nothing more is
        sent (0-10 spec, ``message.stop``); an infinite byte credit stays (qpid.messaging
        grants only messages again after its stop), a finite one goes. With ``octets``
        (a new flow mode), no credit of either unit."""
        self.messages = 0
        if octets or self.octets != UNLIMITED:
            self.octets = 0

    def deliver(self, message: StoredMessage, node: Node) -> None:
        assert isinstance(node, Queue)
        if self.messages != UNLIMITED:
            self.messages -= 1
        if self.octets != UNLIMITED:
            self.octets -= message.size
        self.session.deliver(self, message, node)

    def tell_available(self, count: int) -> None:
        pass

    def drained(self) -> None:
        if self.flushing:
            self.flushing = False
            self.stop()

    def queue_deleted(self) -> None:
        """Its queue was deleted: the subscription goes (0-10 has no cancel to tell)."""
        self.session.subscriptions.pop(self.destination, None)


class Session010:
    """The broker's state of one attached (or detached and kept) session ``name``."""

    def __init__(self, conn: Connection010, name: bytes) -> None:
        #: Its connection (another one's once resumed there).
        self.conn = conn
        self.name = name
        self.attached = True
        self.subscriptions: dict[str, Subscription] = {}
        #: Transfers out not yet accepted (accept-mode explicit), by command id:
        #: (message, queue, subscription).
        self.unsettled: dict[int, tuple[StoredMessage, Queue, Subscription]] = {}
        #: Window-mode transfers whose completion gives their credit back: (sub, size).
        self.windowed: dict[int, tuple[Subscription, int]] = {}
        #: Transfers out to a browser, not acquired: (message, queue, subscription).
        self.browsed: dict[int, tuple[StoredMessage, Queue, Subscription]] = {}
        #: The client's transfers with accept-mode explicit, to accept (by command id).
        self.to_accept: list[int] = []
        #: tx.select: transfers (exchange, key, message, headers) and accepts held till
        #: commit.
        self.tx = False
        self.tx_publishes: list[tuple[str, str, StoredMessage, Any]] = []
        self.tx_accepts: list[int] = []

    def __repr__(self) -> str:
        return f"<0-10 session {self.name!r} subscriptions={len(self.subscriptions)}>"

    @property
    def sending(self) -> bool:
        """Whether transfers may go out on it: attached, its connection not closing (after
        ``connection.close`` nothing but ``close-ok`` is sent: 0-10 spec, ``connection.close``)."""
        return self.attached and self.conn.engine.state is ConnectionState.OPEN

    # -- deliveries ---------------------------------------------------------------------------

    def deliver(self, sub: Subscription, message: StoredMessage, queue: Queue) -> None:
        conn = self.conn
        header, body = transfer_of(
            message,
            redelivered=message.delivery_count > 0 or message.redelivered,
            routing_key=queue.address,
        )
        transfer = sub.transfer
        try:
            command_id = conn.engine.send_command(self.name, transfer, header=header, body=body)
        except EncodeError:  # a property 0-10 cannot carry (a text past a str8, a number
            # past an int64): the message goes with the numbers of its delivery properties
            # (a header passed through was encoded from 0-10, and is not here)
            given: Any = header[0]
            plain = spec.DeliveryProperties(
                redelivered=given.redelivered,
                priority=given.priority,
                delivery_mode=given.delivery_mode,
                ttl=given.ttl,
            )
            command_id = conn.engine.send_command(self.name, transfer, header=(plain,), body=body)
        conn.record.messages_out += 1
        conn.broker.has_output(conn)
        if sub.window:
            self.windowed[command_id] = (sub, message.size)
        if sub.copy:
            self.browsed[command_id] = (message, queue, sub)
        elif sub.explicit:
            self.unsettled[command_id] = (message, queue, sub)
        else:
            conn.taken(queue, message)

    def completed(self, command_ids: tuple[int, ...]) -> None:
        """The client completed our commands: window-mode credit comes back (0-10 spec,
        ``message.flow-mode`` "window")."""
        for command_id in command_ids:
            found = self.windowed.pop(command_id, None)
            if found is not None:
                sub, size = found
                if sub.messages != UNLIMITED:
                    sub.messages += 1
                if sub.octets != UNLIMITED:
                    sub.octets += size
                self.conn.broker.wake(sub.queue)

    def transfers(self, ranges: Any, among: Mapping[int, object] | None = None) -> list[int]:
        """The unsettled transfers (or those of ``among``) among the command ids of a
        sequence set."""
        held = self.unsettled if among is None else among
        found: list[int] = []
        for low, high in ranges or ():
            if high - low < len(held):
                found += [i for i in range(low, high + 1) if i in held]
            else:
                found += [i for i in held if low <= i <= high]
        return sorted(set(found))

    def acquire(self, ranges: Any) -> list[int]:
        """``message.acquire``: the browsed transfers of the set whose messages are still
        in their queues are taken off them, as delivered (pre-acquired) ones are; the
        others are forgotten. Gives the acquired."""
        done = []
        for command_id in self.transfers(ranges, self.browsed):
            message, queue, sub = self.browsed.pop(command_id)
            if queue.acquire(message):
                self.unsettled[command_id] = (message, queue, sub)
                done.append(command_id)
        return done

    def unbrowse(self, ranges: Any) -> None:
        """Accepting, rejecting or releasing browsed transfers not acquired: forgotten
        (their messages stay in their queues; 0-10 spec, message.accept rule)."""
        for command_id in self.transfers(ranges, self.browsed):
            del self.browsed[command_id]

    def accept(self, ids: list[int]) -> None:
        for command_id in ids:
            found = self.unsettled.pop(command_id, None)
            if found is not None:
                message, queue, _ = found
                self.conn.taken(queue, message)

    def reject(self, ids: list[int]) -> None:
        for command_id in ids:
            message, queue, _ = self.unsettled.pop(command_id)
            queue.dead_letter(message, "rejected")
            self.conn.taken(queue, message)

    def release(self, ids: list[int], *, redelivered: bool) -> None:
        back = []
        for command_id in ids:
            message, queue, _ = self.unsettled.pop(command_id)
            back.append((message, queue))
        for message, queue in reversed(back):  # each to the head, in delivery order
            self.conn.give_back(queue, message, redelivered=redelivered)

    # -- the end ------------------------------------------------------------------------------

    def cancel(self, sub: Subscription) -> None:
        """The subscription goes. Its queue, if auto-delete, goes with its last subscriber,
        unless it is exclusive: such a queue goes with its connection (as qpidd keeps it:
        qpid.messaging deletes it itself, after its cancel)."""
        self.subscriptions.pop(sub.destination, None)
        queue = sub.queue
        queue.remove_consumer(sub)
        vhost = self.conn.vhost_or_default
        found = vhost.query_queue(queue.address)
        if found is None or found[0] is not queue or not found[2]:
            vhost.consumer_removed(queue)

    def park(self) -> None:
        """Its connection went with the session kept (for another to resume): its
        subscriptions stay, without credit until then; its unaccepted transfers go back to
        their queues (the client that resumes cannot accept what it may not have had)."""
        self.attached = False
        self.release(sorted(self.unsettled), redelivered=True)
        self.windowed.clear()
        self.browsed.clear()

    def close(self) -> None:
        """The session is gone (detached and not kept, expired, or its connection ended):
        its subscriptions go, its unaccepted transfers back to their queues."""
        self.attached = False
        for sub in list(self.subscriptions.values()):
            self.cancel(sub)
        self.release(sorted(self.unsettled), redelivered=True)
        self.windowed.clear()
        self.browsed.clear()
        self.tx_publishes.clear()
        self.tx_accepts.clear()
