"""Many clients through the broker: 10 producers and 10 consumers move 100,000 messages
at-least-once over loopback, with no loss, and every duplicate explained by a redelivery.
The broker runs in its own process (``amqp-sansio broker``), the clients on one asyncio loop
(our asyncio adapter). One consumer leaves part-way with deliveries unsettled: they come
again, to the others, with delivery-count incremented."""

from __future__ import annotations

import asyncio
import collections
import os
import time

from amqp_sansio.adapters import aio
from support.broker_process import BrokerProcess

import amqp_sansio as a

#: Messages moved (AMQP_SANSIO_BROKER_LOAD to change it).
COUNT = int(os.environ.get("AMQP_SANSIO_BROKER_LOAD", "100000"))
PRODUCERS = CONSUMERS = 10
WAIT = 30.0


async def _move(url: str) -> tuple[collections.Counter[str], list[tuple[str, int]], set[str]]:
    per = COUNT // PRODUCERS
    seen: collections.Counter[str] = collections.Counter()
    copies: list[tuple[str, int]] = []  # (message-id, delivery-count) of every delivery
    accepted: set[str] = set()
    done = asyncio.Event()

    async def producer(i: int) -> None:
        async with aio.connect(url, timeout=WAIT) as conn:
            sender = await conn.sender("load")
            trackers = []
            for j in range(per):
                message = a.Message(properties=a.Properties(message_id=f"{i}-{j}"), body=b"x" * 256)
                trackers.append(await sender.send(message, wait=False))
            for t in trackers:
                assert isinstance(await t.outcome(), a.Accepted)

    async def consumer(k: int) -> None:
        async with aio.connect(url, timeout=WAIT) as conn:
            receiver = await conn.receiver("load", credit=200)
            taken = 0
            while not done.is_set():
                try:
                    d = await receiver.receive(timeout=0.5)
                except TimeoutError:
                    continue
                assert d is not None
                m = d.message
                mid = str(m.properties.message_id)  # type: ignore[union-attr]
                seen[mid] += 1
                copies.append((mid, m.header.delivery_count if m.header else 0))
                taken += 1
                if k == 0 and taken > 1000:
                    if taken > 1050:
                        return  # leaves with 50 unsettled: the broker redelivers them
                    continue
                d.accept()
                assert mid not in accepted  # nothing accepted twice
                accepted.add(mid)
                if len(accepted) >= per * PRODUCERS:
                    done.set()

    await asyncio.wait_for(
        asyncio.gather(
            *(producer(i) for i in range(PRODUCERS)), *(consumer(k) for k in range(CONSUMERS))
        ),
        timeout=300,
    )
    return seen, copies, accepted


def test_ten_producers_ten_consumers_at_least_once() -> None:
    with BrokerProcess(wait=WAIT) as broker:
        start = time.perf_counter()
        seen, copies, accepted = asyncio.run(_move(broker.url))
        elapsed = time.perf_counter() - start
    total = (COUNT // PRODUCERS) * PRODUCERS
    expected = {f"{i}-{j}" for i in range(PRODUCERS) for j in range(COUNT // PRODUCERS)}
    assert accepted == expected  # no loss
    duplicated = {mid for mid, n in seen.items() if n > 1}
    assert len(duplicated) >= 50  # the consumer that left held some
    redelivered = {mid for mid, count in copies if count > 0}
    # Every duplicate is explained by a redelivery: a later copy says delivery-count > 0.
    assert duplicated <= redelivered
    for mid in duplicated:
        counts = [count for m, count in copies if m == mid]
        assert counts[0] == 0 and all(c > 0 for c in counts[1:])
    print(
        f"\n{total:,} messages in {elapsed:.1f} s ({total / elapsed:,.0f}/s), "
        f"{len(duplicated)} redelivered"
    )
