"""``format("amqp")`` with option ``protocol`` ``0-10``: the receivers of queue mode
(:mod:`.queue_reader`, :mod:`.batch`) and the writers on the adapters' AMQP 0-10 client
(``connect(url, protocol="0-10")``: :mod:`amqp_sansio.adapters.amqp010`), with the same
staging and guarantees as 1.0 and 0-9-1: the calls of
:class:`amqp_sansio.adapters.spark.calls.Calls`. The URL's path is the virtual host
(option ``virtualHost``), as for 0-9-1; the address names the queue.

Reading: each address is a subscription (``message.subscribe``, 0-10 spec class
``message``) on one session, in explicit accept mode and credit mode
(``message.set-flow-mode``; its window the task's credit, given back with ``message.flow``
as the task takes messages). What a task takes stays unaccepted until it is staged: then
``message.accept`` (1.0's accept); one taken past the task's share or after its time goes
back with ``message.release`` (1.0's release); one the source cannot make a row of is
``message.reject``-ed (option ``undecodable`` ``reject``) or released as redelivered
(``modify``). The task's end is ``message.stop`` on each subscription (its credit taken
back, as 1.0's drain), and whether a queue is empty a ``queue.query``. A lost connection
gives back what it held unaccepted. Each message is made a row through its 1.0 form
(:mod:`.mapping`).

Writing: each row (mapped the other way) is a ``message.transfer`` to the default exchange
with the address as routing key, accept mode ``none``, persistent unless option
``durable`` is false; at most ``window`` transfers go before an ``execution.sync``, whose
completion says the broker completed every transfer before it: a task succeeds only once
the last one's has come (a refused transfer ends the session: the task fails with the
broker's ``execution.exception``). The default exchange drops what no queue takes, so a
task first asks for the queue (``queue.query``) and fails, naming it, when there is none.

0-10 has no streams: mode ``stream`` is refused with the options (:mod:`.protocols`).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import amqp_sansio as amqp
from amqp_sansio.amqp010 import definitions as spec
from amqp_sansio.client.ops import ClientError

from ..calls import Delivery
from ..options import ReadOptions, WriteOptions
from .mapping import from_010, to_010

__all__ = [
    "ERRORS",
    "TRANSFER",
    "Receiver010",
    "before_last_accept",
    "open_receivers",
    "publish_rows",
    "read_rows",
    "receiver",
    "sizes",
    "stop_receivers",
    "stream_bounds",
    "stream_connection",
]

#: What a lost connection or a refused command raises on the 0-10 client.
ERRORS: tuple[type[Exception], ...] = (OSError, ClientError)
#: ``message.reject-code`` ``unspecified`` (0-10 spec, ``message.reject``).
_UNSPECIFIED = 0
#: The writers' transfer: to the default exchange, accept mode none, pre-acquired.
TRANSFER = spec.MessageTransfer(destination="", accept_mode=1, acquire_mode=0)


def _session_name() -> str:
    """A session name of its own (0-10 spec, ``session.attach``: names are unique)."""
    return f"amqp-sansio-spark-{uuid.uuid4()}"


def _one(command_id: int) -> tuple[tuple[int, int], ...]:
    return ((command_id, command_id),)


class _Settlements:
    """0-10's part of a :class:`~amqp_sansio.adapters.spark.calls.Delivery`: its 1.0 form
    by :mod:`.mapping`, each settlement a command that ``settle`` sends."""

    __slots__ = ("settle",)

    def __init__(self, settle: Callable[[spec.Command], object]) -> None:
        self.settle = settle

    def message(self, delivery: Any) -> amqp.Message:
        """The message's 1.0 form (:func:`.mapping.from_010`)."""
        return from_010(delivery.header, delivery.body)

    def accept(self, delivery: Any) -> None:
        """Staged: ``message.accept``."""
        self.settle(spec.MessageAccept(transfers=_one(delivery.command_id)))

    def release(self, delivery: Any) -> None:
        """Not this task's: ``message.release``, back to the queue as it was."""
        self.settle(spec.MessageRelease(transfers=_one(delivery.command_id)))

    def reject(self, delivery: Any, error: object) -> None:
        """Not a message the source can make a row of: ``message.reject``."""
        text = getattr(error, "description", None) or "not a message the Spark source can decode"
        self.settle(
            spec.MessageReject(transfers=_one(delivery.command_id), code=_UNSPECIFIED, text=text)
        )

    def modify(self, delivery: Any) -> None:
        """Option ``undecodable`` ``modify``: back to the queue, marked redelivered."""
        self.settle(spec.MessageRelease(transfers=_one(delivery.command_id), set_redelivered=True))


# -- queue mode: a streaming task's receivers (asyncio) ----------------------------------------


class _Held:
    """What a subscription holds, as 1.0's receiver queue is read: its length and its
    deliveries by index (taken from the session as they come)."""

    def __init__(self, receiver: Receiver010) -> None:
        self._receiver = receiver

    def __len__(self) -> int:
        return len(self._receiver.pull())

    def __getitem__(self, index: int) -> Delivery:
        return self._receiver.pull()[index]


class _Core010:
    """What :mod:`.queue_reader` asks of a receiver's core, for a 0-10 subscription."""

    def __init__(self, receiver: Receiver010) -> None:
        self._receiver = receiver
        self.queue = _Held(receiver)

    def take_many(self, count: int) -> list[Delivery]:
        return self._receiver.take(count)

    def ask_available(self) -> asyncio.Task[int]:
        """Whether the queue has messages ready (``queue.query``: its message count)."""
        session, queue = self._receiver.session, self._receiver.queue

        async def ask() -> int:
            result = await session.queue_query(queue)
            count: int = result.message_count or 0
            return count

        return asyncio.ensure_future(ask())


class Receiver010:
    """A subscription of one queue, as :mod:`.queue_reader` reads a 1.0 receiver:
    ``core`` and ``credit`` (its window: given back as the task takes messages; set to 0,
    the subscription is stopped: nothing more comes)."""

    def __init__(self, session: Any, queue: str, destination: str, window: int) -> None:
        self.session, self.queue, self.destination = session, queue, destination
        self.core = _Core010(self)
        self._credit = window
        #: The credit the broker holds now (granted, not yet used).
        self._granted = window
        self._held: deque[Delivery] = deque()
        self._stopped = False
        self._settlements = _Settlements(self._settle)

    @property
    def credit(self) -> int:
        return self._credit

    @credit.setter
    def credit(self, value: int) -> None:
        self._credit = max(0, value)
        if self._credit == 0:
            self.stop()

    def _settle(self, command: spec.Command) -> object:
        return self.session.core.send(command)

    def pull(self) -> deque[Delivery]:
        """What came for the subscription, taken from the session."""
        core = self.session.core
        ready = core.delivery_ready(self.destination)
        while ready():
            delivery = core.take(self.destination, refill=False)
            self._granted = max(0, self._granted - 1)
            self._held.append(Delivery(delivery, self._settlements))
        return self._held

    def take(self, count: int) -> list[Delivery]:
        """Up to ``count`` deliveries held; the credit topped up to the window, once."""
        held = self.pull()
        taken = [held.popleft() for _ in range(min(count, len(held)))]
        more = self._credit - self._granted - len(held)
        if taken and more > 0 and not self._stopped:
            self.session.core.flow(self.destination, more)
            self._granted += more
        return taken

    def stop(self) -> None:
        """``message.stop``: nothing more comes (once)."""
        if not self._stopped:
            self._stopped = True
            self._granted = 0
            self.session.core.send(spec.MessageStop(destination=self.destination))


async def open_receivers(
    options: ReadOptions, window: int, keep: Callable[[Any], None]
) -> list[tuple[str, Receiver010]]:
    """A subscription of each address with a window of ``window``, on one session of one
    connection, which ``keep`` is given as soon as it is open."""
    from ... import aio

    conn = await aio.connect(
        options.vhost_url(), protocol="0-10", **options.vhost_connect_options()
    )
    keep(conn)
    session = await conn.session(_session_name())
    receivers = []
    for index, address in enumerate(options.addresses):
        destination = await session.subscribe(
            address, f"{index}:{address}", credit=window, accept=True
        )
        receivers.append((address, Receiver010(session, address, destination, window)))
    return receivers


def sizes(window: int, part: int) -> tuple[int, int]:
    """As they are: the task gives credit back as it takes, whatever it holds unaccepted."""
    return window, part


async def before_last_accept(receivers: list[tuple[str, Any]]) -> None:
    """Nothing to stop: in credit mode an accept gives no credit back."""


async def stop_receivers(receivers: list[tuple[str, Any]]) -> bool:  # noqa: ASYNC124 (as Calls has it)
    """``message.stop`` on each subscription; what was under way may still come."""
    for _address, receiver in receivers:
        receiver.stop()
    return True


# -- queue mode: the batch reader's receiver (blocking) ----------------------------------------


class _BlockingReceiver:
    """A blocking subscription whose deliveries come as
    :class:`~amqp_sansio.adapters.spark.calls.Delivery`, each settled once the broker has
    completed its settlement."""

    def __init__(self, session: Any, destination: str) -> None:
        self.session, self.destination = session, destination
        self._settlements = _Settlements(self._settle)

    def _settle(self, command: spec.Command) -> object:
        return self.session.command(command)

    def receive(self, *, timeout: float | None = None) -> Delivery | None:
        delivery = self.session.receive(self.destination, timeout=timeout)
        return Delivery(delivery, self._settlements)


@contextlib.contextmanager
def receiver(options: ReadOptions, address: str, credit: int) -> Iterator[_BlockingReceiver]:
    """A subscription of the queue ``address`` with ``credit``, on a blocking connection
    of its own (closed after the block: what it holds unaccepted goes back to the
    queue)."""
    from ... import sockets

    with sockets.connect(
        options.vhost_url(), protocol="0-10", **options.vhost_connect_options()
    ) as conn:
        session = conn.session(_session_name())
        destination = session.subscribe(address, credit=credit, accept=True)
        yield _BlockingReceiver(session, destination)


# -- writing -------------------------------------------------------------------------------------


def publish_rows(
    options: WriteOptions,
    messages: Iterator[amqp.Message],
    timeout: float,
    *,
    done: Callable[[int], None] | None = None,
) -> int:
    """Transfer each message to the queue ``options.address`` (the default exchange), at
    most ``options.window`` before an ``execution.sync``; return the count once the
    broker completed the last sync (a refused transfer, or a queue the broker does not
    have, raises RuntimeError with the broker's error). ``done`` is told the count
    confirmed at each sync."""
    from ... import sockets

    address = options.address
    sent = confirmed = 0
    with sockets.connect(
        options.vhost_url(), protocol="0-10", **options.vhost_connect_options()
    ) as conn:
        session = conn.session(_session_name())
        if session.queue_query(address).queue != address:
            # The default exchange drops what no queue takes, silently (0-10 spec,
            # ``exchange.declare`` alternate-exchange): 0-9-1's mandatory return, asked first.
            raise RuntimeError(
                f"the broker has no queue {address!r}: a message for it would be routed to "
                "no queue and dropped (declare the queue first)"
            )
        outstanding: deque[Any] = deque()

        def confirm() -> None:
            nonlocal confirmed
            try:
                session.command(spec.ExecutionSync(), timeout=timeout)
                while outstanding:
                    op = outstanding.popleft()
                    if not op.done():  # (the sync is complete only once all before it are)
                        raise ClientError("the broker completed a sync before a transfer")
                    op.result()
                    confirmed += 1
            except ClientError as exc:
                raise RuntimeError(f"the broker refused a message for {address!r}: {exc}") from None
            if done is not None:
                done(confirmed)

        for message in messages:
            header, body = to_010(message, routing_key=address)
            outstanding.append(session.core.send(TRANSFER, header, body, sync=False))
            sent += 1
            if len(outstanding) >= options.window:
                confirm()
        confirm()
    return sent


# -- mode stream: 0-10 has none ------------------------------------------------------------------


def _no_streams() -> RuntimeError:
    return RuntimeError("AMQP 0-10 has no streams: mode 'stream' reads 1.0 or 0-9-1 nodes")


def stream_connection(options: ReadOptions) -> Any:
    """Never called: the options refuse mode ``stream`` with protocol ``0-10``."""
    raise _no_streams()


def stream_bounds(conn: Any, options: ReadOptions, address: str) -> tuple[int, int]:
    """Never called (:func:`stream_connection`)."""
    raise _no_streams()


def read_rows(
    options: ReadOptions, address: str, start: int, end: int, lost: Callable[[int, int], None]
) -> Iterator[tuple[Any, ...]]:
    """Never called (:func:`stream_connection`)."""
    raise _no_streams()
