"""Selectors in the core broker (the ``apache.org:selector-filter:string`` filter on a
consumer's source, core spec 3.5.3 and 3.5.8), driven through its byte interface with our
engine as the clients (tests/support/broker_net.py); and a Proton client using Proton's own
``Selector`` link option against ``amqp-sansio broker`` run as a user runs it."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest
import trio
from amqp_sansio.adapters import aio, sockets, trio_adapter
from amqp_sansio.adapters.broker import run_broker
from hypothesis import given, settings
from hypothesis import strategies as st
from support.broker_net import Client, Net, accept_all, body
from support.broker_process import BrokerProcess

import amqp_sansio as a
import amqp_sansio.framing.amqp10
from amqp_sansio.broker import SELECTOR_FILTER, SELECTOR_FILTER_CODE, BrokerConfig
from amqp_sansio.client.ops import LinkDetachedError

SYM = a.Symbol


def selector(
    text: str, *, key: str = "jms-selector", numeric: bool = False
) -> dict[a.Symbol, a.Described]:
    descriptor = SELECTOR_FILTER_CODE if numeric else SELECTOR_FILTER
    return {SYM(key): a.Described(descriptor, text)}


def publish(client: Client, address: str, *messages: tuple[bytes, dict[str, object]]) -> None:
    sender = client.sender(address)
    for value, props in messages:
        client.send(sender, a.Message(application_properties=props, body=value))


def colours(*pairs: str) -> list[tuple[bytes, dict[str, object]]]:
    """Messages b"<index>-<colour>" with the application-property colour."""
    return [(f"{i}-{c}".encode(), {"colour": c, "n": i}) for i, c in enumerate(pairs)]


def consumer(
    client: Client, address: str, text: str | None, credit: int = 10, **source: object
) -> a.Receiver:
    filters = None if text is None else selector(text)
    return client.receiver(
        address,
        credit,
        source=a.Source(address=address, filter=filters, **source),  # type: ignore[arg-type]
    )


def test_queue_consumer_gets_only_matching_others_stay_in_order() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    publish(p, "q", *colours("red", "blue", "red", "green", "blue", "red"))
    red = consumer(c1, "q", "colour = 'red'")
    assert accept_all(c1, red) == [b"0-red", b"2-red", b"5-red"]
    queue = net.broker.nodes["q"]
    assert queue.depth == 3
    # A competing consumer without a selector gets the rest, in their order.
    rest = consumer(c2, "q", None)
    assert accept_all(c2, rest) == [b"1-blue", b"3-green", b"4-blue"]
    # New messages: each goes to a consumer that selects it.
    publish(p, "q", *colours("blue", "red"))
    assert accept_all(c1, red) == [b"1-red"]
    assert accept_all(c2, rest) == [b"0-blue"]


def test_selector_consumer_waits_then_takes_a_later_match() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    r = consumer(c, "q", "n > 2 AND colour LIKE 'r%'")
    publish(p, "q", *colours("red", "red", "red", "blue", "red"))
    assert accept_all(c, r) == [b"4-red"]
    assert net.broker.nodes["q"].depth == 4
    assert r.link_credit == 9


def test_two_selector_consumers_split_a_queue() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    red = consumer(c1, "q", "colour = 'red'")
    blue = consumer(c2, "q", "colour IN ('blue', 'green')")
    publish(p, "q", *colours("red", "blue", "green", "red", "yellow"))
    assert accept_all(c1, red) == [b"0-red", b"3-red"]
    assert accept_all(c2, blue) == [b"1-blue", b"2-green"]
    assert net.broker.nodes["q"].depth == 1  # yellow: selected by no one, kept


def test_released_message_goes_back_for_a_selector_consumer() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", *colours("blue", "red", "red"))
    r = consumer(c, "q", "colour = 'red'", credit=1)
    (first,) = c.received(r)
    assert body(first) == b"1-red"
    r.settle(first.delivery, a.Released())
    r.flow(1)
    net.pump()
    (again,) = c.received(r)  # back at the head of the queue, before the other red
    assert body(again) == b"1-red"


def test_message_given_back_by_another_consumer_reaches_a_waiting_selector() -> None:
    """The selector consumer has looked past everything waiting; a matching message that
    comes back to the head of the queue (older than what it looked at) is still found."""
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    plain = consumer(c1, "q", None, credit=1)
    publish(p, "q", *colours("red", "blue", "blue"))
    (taken,) = c1.received(plain)
    assert body(taken) == b"0-red"
    red = consumer(c2, "q", "colour = 'red'")
    assert c2.received(red) == []
    publish(p, "q", *colours("blue"))  # it looks at the new one too: nothing
    assert c2.received(red) == []
    plain.settle(taken.delivery, a.Released())
    net.pump()
    assert accept_all(c2, red) == [b"0-red"]


def test_modified_annotations_make_selectors_look_again() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    first = consumer(c1, "q", "AMQSize < 200", credit=1)
    publish(p, "q", *colours("red"))
    (got,) = c1.received(first)
    annotations = {SYM("x-opt-padding"): "x" * 300}
    first.settle(got.delivery, a.Modified(message_annotations=annotations))
    net.pump()
    assert c1.received(first) == []  # too large for its selector now
    big = consumer(c2, "q", "AMQSize > 300")
    assert accept_all(c2, big) == [b"0-red"]


def test_undeliverable_here_and_expiry_with_a_selector() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    sender = p.sender("q")
    p.send(
        sender, a.Message(header=a.Header(ttl=1000), application_properties={"k": 1}, body=b"old")
    )
    p.send(sender, a.Message(application_properties={"k": 1}, body=b"new"))
    net.advance(2)  # the first expires while it waits
    r = consumer(c1, "q", "k = 1", credit=1)
    (got,) = c1.received(r)
    assert body(got) == b"new"
    assert net.broker.expired == 1
    r.settle(got.delivery, a.Modified(undeliverable_here=True))
    r.flow(1)
    net.pump()
    assert c1.received(r) == []  # never again for this consumer
    other = consumer(c2, "q", "k = 1")
    assert accept_all(c2, other) == [b"new"]


@settings(max_examples=60, deadline=None)
@given(
    before=st.lists(st.tuples(st.sampled_from(["red", "blue"]), st.integers(0, 9)), max_size=12),
    after=st.lists(st.tuples(st.sampled_from(["red", "blue"]), st.integers(0, 9)), max_size=12),
    credit=st.integers(1, 30),
)
def test_selector_consumer_takes_the_first_matches_by_priority_then_arrival(
    before: list[tuple[str, int]], after: list[tuple[str, int]], credit: int
) -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    sender = p.sender("q")

    def send(items: list[tuple[str, int]], offset: int) -> None:
        for i, (colour, priority) in enumerate(items):
            message = a.Message(
                header=a.Header(priority=priority),
                application_properties={"colour": colour},
                body=f"{offset + i}",
            )
            p.send(sender, message)

    send(before, 0)
    red = consumer(c1, "q", "colour = 'red'", credit=credit)
    send(after, len(before))
    got = [body(e) for e in c1.received(red)]
    # What a broker that picks the best waiting red message at each step sends.
    waiting = [(c, prio, str(i)) for i, (c, prio) in enumerate(before)]
    reds = sorted((m for m in waiting if m[0] == "red"), key=lambda m: (-m[1], int(m[2])))
    expected = [m[2] for m in reds][:credit]
    for i, (colour, _priority) in enumerate(after, len(before)):
        if colour == "red" and len(expected) < credit:
            expected.append(str(i))
    assert got == expected
    rest = consumer(c2, "q", None, credit=100)
    remaining = [body(e) for e in c2.received(rest)]
    assert sorted(got + remaining, key=int) == [str(i) for i in range(len(before) + len(after))]
    assert all(x not in got for x in remaining)


def test_drain_with_nothing_matching_gives_the_credit_back() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    publish(p, "q", *colours("blue", "blue"))
    r = consumer(c, "q", "colour = 'red'", credit=5)
    assert c.received(r) == []
    r.drain_credit()
    net.pump()
    assert c.of(a.events.DrainCompleted)
    assert r.link_credit == 0
    assert net.broker.nodes["q"].depth == 2


def test_browse_with_a_selector() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    publish(p, "q", *colours("red", "blue", "red"))
    browser = consumer(c1, "q", "colour <> 'blue'", distribution_mode=SYM("copy"))
    assert browser.remote is not None and browser.remote.source.distribution_mode == "copy"
    assert accept_all(c1, browser) == [b"0-red", b"2-red"]
    publish(p, "q", *colours("blue", "red"))
    assert accept_all(c1, browser) == [b"1-red"]
    everything = consumer(c2, "q", None)
    assert len(accept_all(c2, everything)) == 5  # browsing took nothing


def test_topic_subscriber_buffer_takes_only_matching() -> None:
    net = Net()
    p, c1, c2 = net.connect(), net.connect(), net.connect()
    red = consumer(c1, "topic/paint", "colour = 'red'", credit=1)
    everything = consumer(c2, "topic/paint", None, credit=100)
    publish(p, "topic/paint", *colours("red", "blue", "red", "blue"))
    topic = net.broker.nodes["topic/paint"]
    buffers = list(topic.subscriptions.values())  # type: ignore[attr-defined]
    # The red subscriber's buffer: one red out with it and one waiting, no blue; the other
    # subscriber's: all four, out with it.
    assert sorted(b.depth for b in buffers) == [2, 4]
    assert accept_all(c1, red) == [b"0-red"]
    red.flow(10)
    net.pump()
    assert accept_all(c1, red) == [b"2-red"]
    assert len(accept_all(c2, everything)) == 4


def test_attach_answer_echoes_the_selector_only_when_applied() -> None:
    net = Net()
    c = net.connect()
    sel = a.Described(SELECTOR_FILTER, "colour = 'red'")
    other = {SYM("other:filter"): "x", SYM("my-key"): sel}
    r = c.receiver("q", source=a.Source(address="q", filter=other))
    assert r.remote is not None and r.remote.source.filter == {SYM("my-key"): sel}
    # Only unknown filters: none applied, none echoed.
    r2 = c.receiver("q", source=a.Source(address="q", filter={SYM("other:filter"): "x"}))
    assert r2.remote is not None and r2.remote.source.filter is None
    # A blank selector is no selector (JMS): not echoed, everything delivered.
    r3 = c.receiver("q", source=a.Source(address="q", filter=selector("  ")))
    assert r3.remote is not None and r3.remote.source.filter is None
    # The numeric descriptor is the same filter, whatever the key.
    r4 = c.receiver(
        "q", source=a.Source(address="q", filter=selector("TRUE", key="x", numeric=True))
    )
    assert r4.remote is not None and r4.remote.source.filter == selector(
        "TRUE", key="x", numeric=True
    )


def test_stream_consumer_does_not_apply_or_echo_a_selector() -> None:
    net = Net()
    c = net.connect()
    r = c.receiver("stream/s", 10, source=a.Source(address="stream/s", filter=selector("a = 1")))
    assert r.state is a.LinkState.ATTACHED
    assert r.remote is not None and r.remote.source.filter is None


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("colour = ", "position 9"),
        ("colour = 'red", "unterminated string literal at position 9"),
        (
            "((((((((((((((((((((((((((((((((((a = 1))))))))))))))))))))))))))))))))))",
            "nested deeper",
        ),
        ("a = 1 OR " * 500 + "a = 1", "longer than 4096"),
    ],
)
def test_bad_selector_refused_with_invalid_field_connection_usable(text: str, why: str) -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    r = consumer(c, "q", text)
    assert r.state is not a.LinkState.ATTACHED
    (detached,) = c.of(a.events.LinkDetached)
    assert detached.error.condition == "amqp:invalid-field"
    assert why in detached.error.description and "selector" in detached.error.description
    assert r.remote is not None and r.remote.source is None  # refused: no source (2.6.3)
    # The connection and the session go on.
    publish(p, "q", *colours("red"))
    good = consumer(c, "q", "colour = 'red'")
    assert accept_all(c, good) == [b"0-red"]


def test_selector_value_not_a_string_is_refused() -> None:
    net = Net()
    c = net.connect()
    bad = {SYM("jms-selector"): a.Described(SELECTOR_FILTER, 42)}
    r = c.receiver("q", source=a.Source(address="q", filter=bad))
    assert r.state is not a.LinkState.ATTACHED
    assert c.of(a.events.LinkDetached)[0].error.condition == "amqp:invalid-field"


def test_limits_come_from_the_config() -> None:
    net = Net(BrokerConfig(selector_max_length=10, selector_max_depth=2))
    c = net.connect()
    consumer(c, "q", "colour = 'red'")
    consumer(c, "q", "((a = 1))")
    consumer(c, "q", "(((a=1)))")
    errors = [e.error.description for e in c.of(a.events.LinkDetached)]
    assert len(errors) == 2
    assert "longer than 10" in errors[0] and "deeper than 2" in errors[1]


def test_jms_header_identifiers_in_the_broker() -> None:
    net = Net()
    p, c = net.connect(), net.connect()
    sender = p.sender("q")
    p.send(sender, a.Message(header=a.Header(durable=True, priority=7), body=b"durable-7"))
    p.send(
        sender, a.Message(properties=a.Properties(subject="order", message_id="m1"), body=b"order")
    )
    p.send(sender, a.Message(body=b"plain"))
    r = consumer(
        c,
        "q",
        "JMSDeliveryMode = 'PERSISTENT' AND JMSPriority > 5 OR JMSType = 'order' "
        "AND JMSMessageID = 'ID:AMQP_NO_PREFIX:m1'",
    )
    assert accept_all(c, r) == [b"durable-7", b"order"]
    size = consumer(c, "q", "AMQAddress = 'q' AND AMQSize > 0")
    assert accept_all(c, size) == [b"plain"]


# -- our adapters' receiver(selector=...) over loopback --------------------------------------

WAIT = 10.0


def _publish_colours(url: str) -> None:
    with sockets.connect(url, timeout=WAIT) as conn:
        sender = conn.sender("paint")
        for i, colour in enumerate(["red", "blue", "red", "green"]):
            sender.send(a.Message(application_properties={"colour": colour}, body=f"{i}"))


def test_adapters_receiver_selector() -> None:
    with run_broker() as server:
        _publish_colours(server.url)
        with sockets.connect(server.url, timeout=WAIT) as conn:
            r = conn.receiver("paint", credit=10, selector="colour = 'red'")
            remote = r.core.link.remote
            assert remote is not None and remote.source.filter == selector("colour = 'red'")
            got = []
            for _ in range(2):
                d = r.receive(timeout=WAIT)
                assert d is not None
                got.append(d.message.body.value)
                d.accept()
            assert got == ["0", "2"]
            with pytest.raises(TimeoutError):
                r.receive(timeout=0.2)  # blue and green are not for it
            # A bad selector: the attach is refused, the connection goes on.
            with pytest.raises(LinkDetachedError, match="invalid-field"):
                conn.receiver("paint", selector="colour = ")

        async def aio_main() -> list[object]:
            async with aio.connect(server.url, timeout=WAIT) as conn:
                r = await conn.receiver("paint", credit=10, selector="colour IN ('green')")
                d = await r.receive(timeout=WAIT)
                assert d is not None
                d.accept()
                return [d.message.body.value]

        assert asyncio.run(aio_main()) == ["3"]

        async def trio_main() -> list[object]:
            async with trio_adapter.connect(server.url, timeout=WAIT) as conn:
                r = await conn.receiver("paint", credit=10, selector="colour LIKE 'bl%'")
                d = await r.receive(timeout=WAIT)
                assert d is not None
                d.accept()
                return [d.message.body.value]

        assert trio.run(trio_main) == ["1"]


# -- a Proton client against the broker run as a user runs it --------------------------------


def _speaks_sasl(port: int) -> bool:
    """Whether the broker answers a SASL protocol header with its own (core spec 5.3.1)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(a.framing.amqp10.SASL_HEADER)
        answer = b""
        while len(answer) < 8:
            chunk = sock.recv(8 - len(answer))
            if not chunk:
                break
            answer += chunk
        return answer == a.framing.amqp10.SASL_HEADER


def test_proton_selector_option_against_the_broker_subprocess() -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is not installed")

    with BrokerProcess() as broker:
        _run_proton_client(broker.url, broker.port)


def _run_proton_client(url: str, port: int) -> None:
    from proton import Message
    from proton.reactor import Selector
    from proton.utils import BlockingConnection

    # Proton's defaults, SASL included, when the broker's defaults offer it; a broker
    # without a SASL layer can only be reached with Proton's SASL turned off.
    options: dict[str, Any] = {} if _speaks_sasl(port) else {"sasl_enabled": False}
    conn = BlockingConnection(url, timeout=10, **options)
    try:
        sender = conn.create_sender("orders")
        for i, (colour, weight) in enumerate(
            [("red", 1), ("blue", 5), ("red", 9), ("green", 7), ("red", 3.5)]
        ):
            sender.send(Message(body=f"m{i}", properties={"colour": colour, "weight": weight}))
        receiver = conn.create_receiver(
            "orders",
            name="selected",
            options=Selector("colour = 'red' AND weight > 2"),
            credit=10,
        )
        got = []
        while True:
            try:
                message = receiver.receive(timeout=1)
            except Exception:  # proton.Timeout: nothing more is selected
                break
            got.append(message.body)
            receiver.accept()
        assert got == ["m2", "m4"]
        # The rest stays for a consumer without a selector, in order.
        plain = conn.create_receiver("orders", name="plain", credit=10)
        rest = []
        for _ in range(3):
            rest.append(plain.receive(timeout=5).body)
            plain.accept()
        assert rest == ["m0", "m1", "m3"]
    finally:
        conn.close()
