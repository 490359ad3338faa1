"""The protocol engine, two ends wired in memory (core spec 2.4-2.7, 3.4)."""

from __future__ import annotations

import pytest
from engine_pair import Pair, of

import amqp_sansio as a

S = a.ConnectionState


@pytest.mark.parametrize("chunk", [1, 7, None])
def test_open_session_link_transfer_settle_close(chunk: int | None) -> None:
    p = Pair(chunk=chunk)
    p.open()
    assert p.client.state is S.OPENED and p.server.state is S.OPENED
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    assert isinstance(snd, a.Sender) and isinstance(rcv, a.Receiver)
    rcv.flow(5)
    c, _ = p.pump()
    assert of(c, a.CreditChanged)[-1].credit == 5
    payload = a.Message(body=b"hello").encode()
    snd.send(payload)
    _, s = p.pump()
    (got,) = of(s, a.DeliveryReceived)
    assert got.data == payload and got.complete
    rcv.settle(got.delivery, a.Accepted())
    c, _ = p.pump()
    (upd,) = of(c, a.DeliveryUpdated)
    assert upd.settled and upd.state == a.Accepted()
    p.client.close()
    c, s = p.pump()
    assert of(c, a.ConnectionEnded) and of(s, a.ConnectionClosed) and of(s, a.ConnectionEnded)
    assert p.client.state is S.END and p.server.state is S.END


def test_large_message_is_split_at_the_peer_max_frame_size_and_reassembled() -> None:
    p = Pair(server={"max_frame_size": 1024})
    p.open()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(1)
    p.pump()
    big = bytes(range(256)) * 1000
    snd.send(big)
    _, s = p.pump()
    assert of(s, a.DeliveryReceived)[0].data == big
    frames = [d for way, d in p.wire if way == "c>s"]
    assert all(len(chunk) > 0 for chunk in frames)
