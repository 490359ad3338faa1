"""Hostile clients: whatever frames a client sends (well-formed performatives with any
field values, messages of any shape, garbage), the broker answers on the wire and never
raises, and the other connections go on."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.broker_net import Net, body
from support.strategies import COMPOSITES, has_sections, messages

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.framing.amqp10
from amqp_sansio.broker import BrokerConfig

HANDLES = st.integers(0, 3)


def _attach(draw: Any) -> a.definitions.amqp10.performatives.Attach:
    attach = draw(COMPOSITES[a.definitions.amqp10.performatives.Attach])
    return a.definitions.amqp10.performatives.Attach(
        name=draw(st.sampled_from(["l0", "l1", attach.name])),
        handle=draw(HANDLES),
        role=attach.role,
        snd_settle_mode=attach.snd_settle_mode,
        rcv_settle_mode=attach.rcv_settle_mode,
        source=draw(
            st.one_of(
                st.just(attach.source),
                st.builds(a.Source, address=st.sampled_from(["q", "topic/t", "dlq"])),
                st.builds(a.Source, dynamic=st.just(True)),
            )
        ),
        target=draw(
            st.one_of(
                st.just(attach.target),
                st.builds(a.Target, address=st.sampled_from(["q", "topic/t"])),
                st.just(a.definitions.amqp10.transactions.Coordinator()),
            )
        ),
        initial_delivery_count=attach.initial_delivery_count,
        max_message_size=attach.max_message_size,
    )


@st.composite
def frames(draw: Any) -> bytes:
    kind = draw(st.sampled_from(["attach", "transfer", "flow", "disposition", "detach", "raw"]))
    if kind == "attach":
        return a.framing.amqp10.encode_frame(_attach(draw))
    if kind == "transfer":
        encoded = messages.filter(has_sections).map(lambda m: m.encode())
        payload = draw(st.one_of(encoded, st.binary(max_size=40)))
        transfer = a.definitions.amqp10.performatives.Transfer(
            handle=draw(HANDLES),
            delivery_id=draw(st.integers(0, 5)),
            delivery_tag=draw(st.binary(min_size=1, max_size=4)),
            settled=draw(st.booleans()),
            more=draw(st.booleans()),
            state=draw(
                st.one_of(
                    st.none(), COMPOSITES[a.definitions.amqp10.transactions.TransactionalState]
                )
            ),
        )
        return a.framing.amqp10.encode_frame(transfer, payload=payload)
    if kind == "flow":
        flow = draw(COMPOSITES[a.definitions.amqp10.performatives.Flow])
        return a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Flow(
                next_incoming_id=0,
                incoming_window=100,
                next_outgoing_id=draw(st.integers(0, 5)),
                outgoing_window=100,
                handle=draw(st.one_of(st.none(), HANDLES)),
                delivery_count=flow.delivery_count,
                link_credit=flow.link_credit,
                drain=flow.drain,
                echo=flow.echo,
                properties=flow.properties,
            )
        )
    if kind == "disposition":
        disposition = draw(COMPOSITES[a.definitions.amqp10.performatives.Disposition])
        return a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Disposition(
                role=disposition.role,
                first=draw(st.integers(0, 5)),
                last=draw(st.one_of(st.none(), st.integers(0, 6))),
                settled=disposition.settled,
                state=disposition.state,
            )
        )
    if kind == "detach":
        return a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Detach(
                handle=draw(HANDLES), closed=draw(st.booleans()), error=None
            )
        )
    return draw(st.binary(min_size=1, max_size=30))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(frames(), max_size=12), st.booleans())
def test_hostile_frames_never_break_the_broker(sequence: list[bytes], lose: bool) -> None:
    net = Net(BrokerConfig(dead_letter="dlq", max_queue_depth=5, max_message_size=4096))
    good = net.connect()
    watcher = good.receiver("q", 100)
    hostile = net.broker.accept(net.now)
    opening = (
        a.framing.amqp10.AMQP_HEADER
        + a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Open(container_id="hostile")
        )
        + a.framing.amqp10.encode_frame(
            a.definitions.amqp10.performatives.Begin(
                next_outgoing_id=0, incoming_window=100, outgoing_window=100
            )
        )
    )
    hostile.receive_data(opening, net.now)
    for frame in sequence:
        hostile.receive_data(frame, net.now)
        hostile.data_to_send()
        net.pump()
    if lose:
        hostile.connection_lost(net.now)
    else:
        hostile.handle_timer(net.now + 1000)
    net.pump()
    # The broker and the well-behaved client go on.
    s = good.sender("q")
    good.send(s, a.Message(body=b"still here"))
    got = [body(e) for e in good.received(watcher)]
    assert b"still here" in got
