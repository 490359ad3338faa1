"""``amqp-sansio send`` and ``receive`` with ``--protocol 0-10``, run in-process: against
our server engine playing a broker (declare, transfer, subscribe under credit, accept),
and ``send`` against qpid-python's small 0-10 server; the options 0-10 lacks refused, a
refused connection and a time-out with their exit statuses."""

from __future__ import annotations

from typing import Any

import pytest
from amqp_sansio.adapters import cli
from support.amqp010.broker import serving
from support.amqp010.qpid_server import qpid_server

from amqp_sansio.definitions import amqp010 as spec

#: qpid-python calls ``threading.currentThread``, deprecated since Python 3.10.
pytestmark = pytest.mark.filterwarnings("ignore:currentThread:DeprecationWarning")


def run(*args: str) -> int:
    return cli.main(list(args))


def test_send_then_receive_through_our_broker(capsys: pytest.CaptureFixture[str]) -> None:
    queues: dict[str, Any] = {}
    with serving(queues) as port:
        url = f"amqp://guest:guest@127.0.0.1:{port}/q"
        status = run("send", url, "--protocol", "0-10", "--count", "3", "--body", "hi")
        assert status == 0 and len(queues["q"]) == 3
        sent = run("send", url, "--protocol", "0-10", "--settled", "--durable", "--vhost", "v")
        assert sent == 0 and len(queues["q"]) == 4
        header, body = queues["q"][3]
        assert body == b"message 1"
        assert any(isinstance(s, spec.DeliveryProperties) and s.delivery_mode == 2 for s in header)
        capsys.readouterr()
        assert run("receive", url, "--protocol", "0-10", "--count", "2") == 0
        shown = capsys.readouterr()
        assert shown.out.splitlines() == ["hi", "hi"]
        assert run("receive", url, "--protocol", "0-10", "--count", "1", "--count-only") == 0
        timed_out = run("receive", url, "--protocol", "0-10", "--count", "5", "--timeout", "0.5")
        assert timed_out == 4


def test_send_to_qpids_server(capsys: pytest.CaptureFixture[str]) -> None:
    with qpid_server() as server:
        url = f"amqp://127.0.0.1:{server.port}/q"
        status = run("send", url, "--protocol", "0-10", "--no-declare", "--body", "x")
        assert status == 0
        got = server.queue.get(10)
        assert got.payload == b"x" and got.destination == ""


def test_options_0_10_lacks_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    status = run("receive", "amqp://127.0.0.1:1/q", "--protocol", "0-10", "--browse")
    assert status == 2
    assert "--browse is not an option of --protocol 0-10" in capsys.readouterr().err


def test_a_refused_connection(capsys: pytest.CaptureFixture[str]) -> None:
    from support.broker_process import free_port

    url = f"amqp://127.0.0.1:{free_port()}/q"
    assert run("send", url, "--protocol", "0-10") != 0
    assert "connection refused" in capsys.readouterr().err.lower()
