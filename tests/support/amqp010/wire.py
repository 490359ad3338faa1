"""Our 0-10 client engine against the broker's 0-10 side, in memory, through real bytes
(tests/broker/amqp010): :class:`Client` is one client connection of a
:class:`~amqp_sansio.broker.Broker` (several may share one), pumped whole or in chunks, on
a clock the test moves; :func:`pump` moves bytes for all of them until they are quiet."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from amqp_sansio.broker import Broker, BrokerConnection010
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine
from support.amqp010.engine import chunks


class Client:
    """A client engine and the broker connection that serves it."""

    def __init__(
        self,
        broker: Broker,
        *,
        now: float = 0.0,
        chunk: int | random.Random | None = None,
        address: str | None = None,
        open_: bool = True,
        **options: Any,
    ) -> None:
        self.broker = broker
        self.now = now
        self.chunk = chunk
        self.conn: BrokerConnection010 = broker.accept_010(now, address=address)
        options.setdefault("mechanism", "ANONYMOUS")
        self.engine = engine.Connection(engine.Role.CLIENT, **options)
        self.engine.start(now)
        self.events: list[engine.Event] = []
        self.others: list[Client] = []
        if open_:
            self.pump()

    def pump(self) -> None:
        """Move bytes both ways (and those of the broker's other connections to their
        clients, in :attr:`others`) until everyone is quiet."""
        for _ in range(10_000):
            moved = False
            data = self.engine.data_to_send()
            if data and not self.conn.ended:
                moved = True
                for piece in chunks(data, self.chunk):
                    self.conn.receive_data(piece, self.now)
            for client in (self, *self.others):
                back = client.conn.data_to_send()
                if back:
                    moved = True
                    for piece in chunks(back, client.chunk):
                        client.events += client.engine.receive_data(piece, client.now)
            self.broker.pending()
            if not moved:
                return
        raise AssertionError("never quiet")

    def take(self) -> list[engine.Event]:
        events, self.events = self.events, []
        return events

    def attach(self, name: bytes = b"s", timeout: int = 0) -> None:
        self.engine.attach(name, timeout=timeout)
        self.pump()

    def send(
        self,
        command: spec.Command,
        *,
        session: bytes = b"s",
        header: Sequence[spec.Struct] = (),
        body: bytes = b"",
    ) -> int:
        """Send ``command`` (sync) and pump; gives its id."""
        command_id = self.engine.send_command(session, command, header=header, body=body, sync=True)
        self.pump()
        return command_id

    def result(self, command: spec.Command, *, session: bytes = b"s") -> Any:
        """The ``execution.result`` value of ``command``."""
        command_id = self.send(command, session=session)
        found = [
            e
            for e in self.take()
            if isinstance(e, engine.ResultReceived) and e.command_id == command_id
        ]
        assert found, f"no result for {command!r}"
        return found[0].value

    def refused(
        self, command: spec.Command, *, session: bytes = b"s", **kw: Any
    ) -> spec.ExecutionException:
        """The ``execution.exception`` ``command`` gets (the session then detaches)."""
        self.send(command, session=session, **kw)
        found = [e for e in self.take() if isinstance(e, engine.ExecutionExceptionReceived)]
        assert found, f"{command!r} was not refused"
        return found[0].exception

    def ok(self, command: spec.Command, *, session: bytes = b"s", **kw: Any) -> None:
        """``command`` is completed without an exception."""
        command_id = self.send(command, session=session, **kw)
        events = self.take()
        assert not [e for e in events if isinstance(e, engine.ExecutionExceptionReceived)], events
        done = [i for e in events if isinstance(e, engine.CommandsCompleted) for i in e.command_ids]
        assert command_id in done, (command, events)
        self.events = [e for e in events if not isinstance(e, engine.CommandsCompleted)]

    def deliveries(self) -> list[engine.CommandReceived]:
        """The transfers received since the last take (others stay in :attr:`events`)."""
        found = [
            e
            for e in self.events
            if isinstance(e, engine.CommandReceived) and isinstance(e.command, spec.MessageTransfer)
        ]
        self.events = [e for e in self.events if e not in found]
        return found

    def subscribe(
        self, queue: str, destination: str = "d", *, accept: int = 0, credit: int = 100
    ) -> None:
        """Subscribe to ``queue`` at ``destination`` (accept-mode ``accept``) with
        ``credit`` messages (and unlimited octets)."""
        self.ok(
            spec.MessageSubscribe(
                queue=queue, destination=destination, accept_mode=accept, acquire_mode=0
            )
        )
        self.ok(spec.MessageSetFlowMode(destination=destination, flow_mode=0))
        self.ok(spec.MessageFlow(destination=destination, unit=1, value=0xFFFFFFFF))
        if credit:
            self.ok(spec.MessageFlow(destination=destination, unit=0, value=credit))

    def publish(
        self,
        body: bytes,
        *,
        key: str = "",
        exchange: str = "",
        session: bytes = b"s",
        accept_mode: int = 1,
        **props: Any,
    ) -> None:
        delivery = spec.DeliveryProperties(routing_key=key, **props.pop("delivery", {}))
        header: list[spec.Struct] = [delivery]
        if props:
            header.append(spec.MessageProperties(**props))
        self.ok(
            spec.MessageTransfer(destination=exchange, accept_mode=accept_mode, acquire_mode=0),
            session=session,
            header=header,
            body=body,
        )
