"""qpid-python's AMQP 0-8 client (``qpid.client.Client`` with the 0-8 spec, as its users
run it) against RabbitMQ and against ``amqp-sansio broker`` (no options), side by side: it
logs in, asks for an access ticket, declares a queue, publishes and gets the message back.
qpid-python is not on PyPI for Python 3: the test takes a checkout from
``AMQP_SANSIO_QPID_PYTHON`` (default ``/work/shared/peers/qpid-python``) and skips, saying
why, without one."""

from __future__ import annotations

import os
import sys
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.broker_process import BrokerProcess
from support.rabbitmq import rabbitmq_url

QPID = Path(os.environ.get("AMQP_SANSIO_QPID_PYTHON", "/work/shared/peers/qpid-python"))
SPEC_08 = QPID / "qpid" / "specs" / "amqp-0-8-qpid-stripped.xml"
#: qpid-python's threads use threading's deprecated names, and its reader thread raises
#: Closed when the connection closes under it: its own ways, not the broker's.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning"),
]


def _qpid() -> Any:
    if not SPEC_08.is_file():
        pytest.skip(f"no qpid-python checkout with the 0-8 spec at {QPID}")
    if str(QPID) not in sys.path:
        sys.path.insert(0, str(QPID))
    import qpid.client  # type: ignore[import-not-found]
    import qpid.content  # type: ignore[import-not-found]
    import qpid.spec08  # type: ignore[import-not-found]

    return qpid


@pytest.fixture(scope="module")
def ours() -> Iterator[int]:
    with BrokerProcess() as process:
        yield process.port


@pytest.fixture(params=["rabbitmq", "amqp-sansio"])
def where(request: pytest.FixtureRequest) -> tuple[str, int]:
    if request.param == "rabbitmq":
        parts = urllib.parse.urlsplit(rabbitmq_url())
        return parts.hostname or "127.0.0.1", parts.port or 5672
    return "127.0.0.1", request.getfixturevalue("ours")


def test_a_qpid_08_client_declares_publishes_and_gets(where: tuple[str, int]) -> None:
    qpid = _qpid()
    spec = qpid.spec08.load(str(SPEC_08))
    assert (spec.major, spec.minor) == (8, 0)
    client = qpid.client.Client(*where, spec)
    client.start(username="guest", password="guest", mechanism="PLAIN")
    try:
        channel = client.channel(1)
        channel.channel_open()
        ticket = channel.access_request(realm="/data", active=True, write=True, read=True)
        assert ticket.ticket == 1
        queue = f"qpid08-{uuid.uuid4().hex[:8]}"
        declared = channel.queue_declare(queue=queue, auto_delete=True)
        assert (declared.queue, declared.message_count, declared.consumer_count) == (queue, 0, 0)
        channel.basic_publish(routing_key=queue, content=qpid.content.Content("from 0-8"))
        got = channel.basic_get(queue=queue, no_ack=True)
        assert got.content.body == "from 0-8"
        assert got.routing_key == queue
        channel.queue_delete(queue=queue)
    finally:
        client.close()
