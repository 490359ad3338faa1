"""A method the broker answers (``queue.declare``, ``exchange.declare``, ``basic.qos``) and a
connection error the engine finds in dispatch (a content header after a method that takes
none: 505; a method on a channel not open: 504) in one read: the broker's answer is
dropped, as everything a closing connection would send but close (0-9-1 spec,
``connection.close``), and the ``connection.close`` goes out; read octet by octet, the
answer goes first, then the close. Raw bytes to the I/O-free broker with its defaults, and
to ``amqp-sansio broker`` with no options (no traceback in its log)."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pytest
from support.amqp091.raw import Frame, Session, frames, handshake_steps
from support.broker_process import BrokerProcess

from amqp_sansio.amqp091 import PROTOCOL_HEADER
from amqp_sansio.broker import Broker, BrokerConfig, BrokerConnection091
from amqp_sansio.definitions.amqp091 import spec
from amqp_sansio.framing.amqp091 import encode_header_frame, encode_method_frame

ANSWERED = {
    "queue.declare": (spec.QueueDeclare(queue="pipelined"), (50, 11)),
    "exchange.declare": (spec.ExchangeDeclare(exchange="pipelined", type="direct"), (40, 11)),
    "basic.qos": (spec.BasicQos(prefetch_count=5), (60, 11)),
}
ERRORS = {
    # a content header on channel 1, whose last method carries no content
    505: encode_header_frame(1, 0, spec.BasicProperties()),
    # a method on channel 3, never opened
    504: encode_method_frame(3, spec.QueueDeclare(queue="other")),
}


def _opened() -> tuple[Broker, BrokerConnection091]:
    broker = Broker(BrokerConfig())
    conn = broker.accept_091(0.0, address="10.0.0.1")
    for step in handshake_steps(PROTOCOL_HEADER):
        conn.receive_data(step, 0.0)
        assert conn.data_to_send()
    return broker, conn


def _close_code(frame: Frame) -> int:
    assert frame.ids == (10, 50)  # connection.close
    code: int = struct.unpack_from(">H", frame.args)[0]
    return code


@pytest.mark.parametrize("code", sorted(ERRORS))
@pytest.mark.parametrize("name", sorted(ANSWERED))
def test_in_one_read_only_the_close_goes_out(name: str, code: int) -> None:
    method, _ = ANSWERED[name]
    _, conn = _opened()
    conn.receive_data(encode_method_frame(1, method) + ERRORS[code], 1.0)
    (close,) = frames(conn.data_to_send())
    assert _close_code(close) == code
    # the client's close-ok ends it
    conn.receive_data(encode_method_frame(0, spec.ConnectionCloseOk()), 1.5)
    assert conn.ended and conn.data_to_send() == b""


@pytest.mark.parametrize("code", sorted(ERRORS))
@pytest.mark.parametrize("name", sorted(ANSWERED))
def test_octet_by_octet_the_answer_then_the_close(name: str, code: int) -> None:
    method, ok = ANSWERED[name]
    _, conn = _opened()
    out = b""
    for octet in encode_method_frame(1, method) + ERRORS[code]:
        conn.receive_data(bytes([octet]), 1.0)
        out += conn.data_to_send()
    answer, close = frames(out)
    assert answer.ids == ok and answer.channel == 1
    assert _close_code(close) == code


@pytest.fixture(scope="module")
def process() -> Iterator[BrokerProcess]:
    with BrokerProcess() as running:
        yield running


@pytest.mark.parametrize("code", sorted(ERRORS))
@pytest.mark.parametrize("name", sorted(ANSWERED))
def test_the_broker_process_sends_the_close_and_logs_no_traceback(
    process: BrokerProcess, name: str, code: int
) -> None:
    method, _ = ANSWERED[name]
    with Session("127.0.0.1", process.port) as session:
        for step in handshake_steps(PROTOCOL_HEADER):
            session.exchange(step)
        session.send(encode_method_frame(1, method) + ERRORS[code])
        found = frames(session.read(0.5))
    assert [_close_code(f) for f in found] == [code]
    assert "Traceback" not in process.log
    assert "broker connection failed" not in process.log
