"""The received delivery the Spark adapter's 0-9-1 and 0-10 folders hand the readers
(:class:`amqp_sansio.adapters.spark.calls.Delivery`), without Spark or a broker: what it
asks of its protocol's settlements, and that it makes the message's 1.0 form once."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from amqp_sansio.adapters.spark import calls

import amqp_sansio as amqp


class Recorded:
    """Settlements that record what they are asked (a :class:`calls.Settlements`)."""

    def __init__(self) -> None:
        self.asked: list[tuple[Any, ...]] = []

    def message(self, delivery: Any) -> amqp.Message:
        self.asked.append(("message", delivery))
        return amqp.Message(body=amqp.Data(delivery.body))

    def accept(self, delivery: Any) -> None:
        self.asked.append(("accept", delivery))

    def release(self, delivery: Any) -> None:
        self.asked.append(("release", delivery))

    def reject(self, delivery: Any, error: object) -> None:
        self.asked.append(("reject", delivery, error))

    def modify(self, delivery: Any) -> None:
        self.asked.append(("modify", delivery))


def test_a_delivery_settles_through_its_protocol_s_settlements() -> None:
    got = SimpleNamespace(body=b"row")
    how = Recorded()
    delivery = calls.Delivery(got, how)
    assert delivery.data == b"row" and delivery.delivery is got
    error = amqp.Error(condition=amqp.Symbol("amqp:decode-error"), description="no")
    delivery.accept()
    delivery.release()
    delivery.reject(error)
    delivery.reject()
    delivery.modify(delivery_failed=True, undeliverable_here=True)
    assert how.asked == [
        ("accept", got),
        ("release", got),
        ("reject", got, error),
        ("reject", got, None),
        ("modify", got),
    ]


def test_a_delivery_makes_its_message_once() -> None:
    how = Recorded()
    delivery = calls.Delivery(SimpleNamespace(body=b"row"), how)
    first = delivery.message
    assert first.body == amqp.Data(b"row")
    assert delivery.message is first
    assert [asked[0] for asked in how.asked] == ["message"]
