"""A transaction against RabbitMQ 3.10, which has no transactions (issue 27): it answers the
attach of our control link to its coordinator by ending the session with
``amqp:not-implemented``. Each adapter's ``connect(url)`` (no extras) must attach once and
fail the declare at once with :class:`~amqp_sansio.client.amqp10.TransactionError` carrying that
condition; the client used to attach again in a tight loop (thousands of attaches) until
the caller's time-out. The attaches are counted in the frame trace
(:mod:`amqp_sansio.client.trace`), what went out on the wire."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
from support.adapters import ADAPTERS, Adapter, aw
from support.rabbitmq import rabbitmq_url

from amqp_sansio.client.ops import TransactionError
from amqp_sansio.client.trace import LOGGER

#: The bound of the declare's own wait: the refusal must come well before it.
TIMEOUT = 10.0
#: What "at once" allows: one round trip to a broker on the same machine.
AT_ONCE = 1.0


class Attaches(logging.Handler):
    """Counts the attaches to a coordinator our side sends, from the frame trace."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if " -> " in text and "Attach(" in text and "Coordinator(" in text:
            self.count += 1


@pytest.fixture
def attaches() -> Any:
    handler = Attaches()
    level, propagate = LOGGER.level, LOGGER.propagate
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.DEBUG)  # the adapters then trace every connection's frames
    LOGGER.propagate = False
    try:
        yield handler
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)
        LOGGER.propagate = propagate


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_a_declare_fails_at_once_with_the_peer_s_condition(name: str, attaches: Any) -> None:
    url = rabbitmq_url()
    adapter: Adapter = ADAPTERS[name]

    async def scenario() -> tuple[BaseException | None, float]:
        async with adapter.connected(url) as conn:
            start = time.monotonic()
            error: BaseException | None = None
            try:
                await aw(conn.transaction(timeout=TIMEOUT).declare())
            except TransactionError as exc:
                error = exc
            elapsed = time.monotonic() - start
            # The connection lives on: a session ended, not the connection (an existing
            # exchange: nothing is left behind on the shared broker).
            sender = await aw(conn.sender("/exchange/amq.fanout", timeout=TIMEOUT))
            await aw(sender.close())
            return error, elapsed

    error, elapsed = adapter.run(scenario)
    assert isinstance(error, TransactionError), error
    assert error.error is not None and error.error.condition == "amqp:not-implemented"
    assert "amqp:not-implemented" in str(error)
    assert attaches.count == 1
    assert elapsed < AT_ONCE
