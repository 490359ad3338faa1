"""A Hypothesis state machine over the broker's 0-9-1 connection (driven by the 0-9-1
engine's client role through bytes): publishes, consumers with prefetch, acks, nacks and
rejects with and without requeue (multiple too), recover and channel closes, in any order.
Every message published is delivered until it is acked or dropped, never lost and never
taken twice at once; no consumer holds more unacked deliveries than its prefetch."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from support.amqp091.broker_net import Client

from amqp_sansio.broker import Broker
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.engine.amqp091 import events as ev


class Conservation(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.broker = Broker()
        self.client = Client(self.broker)
        self.ch = self.client.channel()
        self.client.call(self.ch, spec.QueueDeclare(queue="q"))
        self.prefetch = 0
        self.consuming = False
        self.next_body = 0
        #: bodies not yet acked or dropped
        self.live: set[bytes] = set()
        #: delivery tag -> body, unacked on the channel
        self.unacked: dict[int, bytes] = {}

    def _take_deliveries(self) -> None:
        for event in self.client.events:
            if isinstance(event, ev.ContentReceived) and isinstance(
                event.method, spec.BasicDeliver | spec.BasicGetOk
            ):
                assert event.body in self.live, "a message delivered after it was settled"
                assert event.body not in self.unacked.values(), "delivered twice at once"
                self.unacked[event.method.delivery_tag] = event.body
        self.client.events = []

    @rule(count=st.integers(1, 4))
    def publish(self, count: int) -> None:
        for _ in range(count):
            body = b"%d" % self.next_body
            self.next_body += 1
            self.live.add(body)
            self.client.engine.publish(self.ch, "", "q", body)
        self.client.pump()
        self._take_deliveries()

    @precondition(lambda self: not self.consuming)
    @rule(prefetch=st.integers(0, 3))
    def consume(self, prefetch: int) -> None:
        self.client.call(self.ch, spec.BasicQos(prefetch_count=prefetch))
        self.prefetch = prefetch
        self.client.call(self.ch, spec.BasicConsume(queue="q", consumer_tag="c"))
        self.consuming = True
        self._take_deliveries()

    @precondition(lambda self: self.consuming)
    @rule()
    def cancel(self) -> None:
        self.client.call(self.ch, spec.BasicCancel(consumer_tag="c"))
        self.consuming = False
        self._take_deliveries()

    @rule()
    def get(self) -> None:
        self.client.call(self.ch, spec.BasicGet(queue="q"))
        self._take_deliveries()

    @precondition(lambda self: self.unacked)
    @rule(data=st.data(), how=st.sampled_from(["ack", "nack", "reject"]), requeue=st.booleans())
    def settle(self, data: st.DataObject, how: str, requeue: bool) -> None:
        tag = data.draw(st.sampled_from(sorted(self.unacked)))
        multiple = how != "reject" and data.draw(st.booleans())
        tags = [t for t in self.unacked if t <= tag] if multiple else [tag]
        if how == "ack":
            method: spec.Method = spec.BasicAck(delivery_tag=tag, multiple=multiple)
        elif how == "nack":
            method = spec.BasicNack(delivery_tag=tag, multiple=multiple, requeue=requeue)
        else:
            method = spec.BasicReject(delivery_tag=tag, requeue=requeue)
        bodies = [self.unacked.pop(t) for t in tags]
        if how == "ack" or not requeue:
            self.live.difference_update(bodies)
        self.client.call(self.ch, method)
        self._take_deliveries()

    @rule()
    def recover(self) -> None:
        self.unacked.clear()  # each comes back (to this channel's consumer, if any)
        self.client.call(self.ch, spec.BasicRecover(requeue=True))
        self._take_deliveries()

    @rule()
    def reopen_channel(self) -> None:
        self.client.engine.close_channel(self.ch)
        self.client.pump()
        self.unacked.clear()
        self.consuming = False
        self.ch = self.client.channel()
        self._take_deliveries()

    @invariant()
    def nothing_lost(self) -> None:
        queue = self.broker.nodes["q"]
        held = {b for b in self.unacked.values()}
        waiting = len(queue.available)  # type: ignore[attr-defined]
        assert len(self.live) == waiting + len(held)
        assert queue.depth == len(self.live)

    @invariant()
    def prefetch_holds(self) -> None:
        if self.consuming and self.prefetch:
            channel = self.client.conn.channels[self.ch]
            consumer = channel.consumers["c"]
            assert consumer.unacked <= self.prefetch


Conservation.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_conservation = Conservation.TestCase
