"""A malformed message sent to the broker (issue 27): message-annotations keyed by strings
(messaging spec 3.2.3 allows symbols and ulongs), or a section cut short. It used to end
the whole session; now that one delivery is rejected with ``amqp:decode-error`` and the link
and session go on. Hand-made payloads through our engine: against the broker core in
memory, and against ``amqp-sansio broker`` (no options) over a socket."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from amqp_sansio.adapters.sockets import SocketDriver
from support.broker_net import Net, accept_all, msg, publish
from support.broker_process import BrokerProcess

import amqp_sansio as a

WAIT = 20.0
#: message-annotations (0x72) as a map8 of one pair keyed by the *string* "k".
STRING_KEYS = b"\x00\x53\x72\xc1\x07\x02\xa1\x01k\xa1\x01v" + b"\x00\x53\x77\xa1\x02hi"
#: message-annotations whose map says 9 bytes and holds 3.
CUT_SHORT = b"\x00\x53\x72\xc1\x09\x02\xa1\x01k"
MALFORMED = {"string-keys": STRING_KEYS, "cut-short": CUT_SHORT}


@pytest.mark.parametrize("payload", MALFORMED.values(), ids=MALFORMED.keys())
def test_the_broker_core_rejects_the_one_message(payload: bytes) -> None:
    net = Net()
    p = net.connect()
    s = p.sender("q")
    d = p.send(s, payload)
    assert isinstance(d.remote_state, a.Rejected), d.remote_state
    assert d.remote_state.error is not None
    assert d.remote_state.error.condition == "amqp:decode-error"
    assert not p.of(a.events.SessionEnded) and not p.of(a.events.LinkDetached)
    assert s.state is a.LinkState.ATTACHED
    good = p.send(s, msg(b"next"))  # the same link goes on
    assert isinstance(good.remote_state, a.Accepted)
    r = p.receiver("q", 5)
    assert accept_all(p, r) == [b"next"]


def test_a_malformed_pre_settled_message_is_dropped_and_the_link_goes_on() -> None:
    net = Net()
    p = net.connect()
    s = p.sender("q")
    s.send(STRING_KEYS, settled=True)
    net.pump()
    assert not p.of(a.events.SessionEnded)
    publish(p, "q", b"after")
    r = p.receiver("q", 5)
    assert accept_all(p, r) == [b"after"]


@pytest.fixture(scope="module")
def broker_url() -> Iterator[str]:
    with BrokerProcess(wait=WAIT) as broker:
        yield broker.url


@pytest.mark.parametrize("payload", MALFORMED.values(), ids=MALFORMED.keys())
def test_the_broker_process_rejects_the_one_message(payload: bytes, broker_url: str) -> None:
    host, port = broker_url.removeprefix("amqp://").rsplit(":", 1)
    engine = a.Connection(client=True, sasl=a.sasl.ClientCredentials())
    driver = SocketDriver.connect(engine, (host, int(port)))
    try:
        engine.open(now=driver.now())
        session = engine.begin()
        sender = session.attach_sender("s", target=a.Target(address="malformed"))
        driver.run_until(lambda: sender.link_credit > 0, WAIT)
        bad = sender.send(payload)
        driver.run_until(lambda: bad.remote_settled, WAIT)
        assert isinstance(bad.remote_state, a.Rejected), bad.remote_state
        assert bad.remote_state.error is not None
        assert bad.remote_state.error.condition == "amqp:decode-error"
        good = sender.send(a.Message(body=a.Data(b"fine")).encode())
        driver.run_until(lambda: good.remote_settled, WAIT)
        assert isinstance(good.remote_state, a.Accepted)
        assert session.state is a.SessionState.MAPPED
        assert not [e for e in driver.events if isinstance(e, a.events.SessionEnded)]
        engine.close()
        driver.run_until(lambda: engine.state is a.ConnectionState.END, WAIT)
    finally:
        driver.close()
