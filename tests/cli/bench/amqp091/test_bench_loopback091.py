"""``amqp-sansio bench loopback --protocol 0-9-1``: publish with confirms and consume with
acks through RabbitMQ, ours (asyncio and trio) next to aio-pika and pika in the same run,
and our client through our broker next to the same client through RabbitMQ.
(No timing is asserted: speed is measured by the benchmark, not by tests.)"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from amqp_sansio.adapters.cli import bench
from amqp_sansio.adapters.cli.bench.amqp091 import loopback as loopback091
from support.rabbitmq import rabbitmq_url


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amqp_sansio.adapters.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def _queue_exists(url: str, name: str) -> bool:
    """Whether RabbitMQ has the queue ``name`` (a passive declare, through pika)."""
    import pika
    import pika.exceptions

    conn = pika.BlockingConnection(pika.URLParameters(url))
    try:
        conn.channel().queue_declare(name, passive=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        assert exc.reply_code == 404
        return False
    finally:
        if conn.is_open:
            conn.close()
    return True


@pytest.fixture
def named_queue(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the queues the runs declare, as they declare them."""
    names: list[str] = []
    make = loopback091.queue_name

    def record(who: str) -> str:
        names.append(make(who))
        return names[-1]

    monkeypatch.setattr(loopback091, "queue_name", record)
    return names


@pytest.mark.parametrize("peer", ["aio-pika", "pika"])
def test_a_peer_run_carries_every_message_and_deletes_its_queue(
    peer: str, named_queue: list[str]
) -> None:
    url = rabbitmq_url()
    runner: Any = {"aio-pika": bench.aio_pika_loopback, "pika": bench.pika_loopback}[peer]
    seen: list[int] = []
    # Each run checks every body's length and counts every ack; it raises otherwise.
    assert runner(url, 2_500, body=bytes(100), progress=seen.append) > 0
    assert seen and seen == sorted(seen) and seen[-1] < 2_500
    (name,) = named_queue
    assert peer in name and not _queue_exists(url, name)


def test_a_peer_that_fails_is_left_out_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    url = rabbitmq_url()

    def broken(*args: Any, **kwargs: Any) -> float:
        raise ConnectionError("refused by the test")

    monkeypatch.setattr(loopback091, "pika_loopback", broken)
    failures: list[tuple[str, BaseException]] = []
    results = bench.loopback091_benchmark(
        url,
        200,
        adapters=("asyncio",),
        rounds=2,
        on_peer_failure=lambda peer, exc: failures.append((peer, exc)),
    )
    assert [peer for peer, _ in failures] == ["pika"]  # once, not once a round
    entry = results["asyncio vs pika"]
    assert entry["pika"] is None and entry["ratio"] is None and entry["ours"] > 0
    other = results["asyncio vs aio-pika"]
    assert other["aio-pika"] > 0
    assert other["ratio"] == pytest.approx(other["ours"] / other["aio-pika"], rel=1e-2)


# -- the command ------------------------------------------------------------------------------


def test_bench_loopback_091_json_through_rabbitmq() -> None:
    url = rabbitmq_url()
    result = _run(
        "bench", "loopback", "--protocol", "0-9-1", "--url", url, "--json",
        "--messages", "300", "--rounds", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {
        "asyncio vs aio-pika", "asyncio vs pika", "trio vs aio-pika", "trio vs pika"
    }  # fmt: skip
    for name, entry in data.items():
        peer = name.split(" vs ")[1]
        assert set(entry) == {"ours", peer, "ratio", "unit"} and entry["unit"] == "msg/s"
        assert entry["ours"] > 0 and entry[peer] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry[peer], rel=1e-2)
    # The same run: asyncio's figure is one, whichever peer it is put next to.
    assert data["asyncio vs aio-pika"]["ours"] == data["asyncio vs pika"]["ours"]
    assert data["asyncio vs pika"]["pika"] == data["trio vs pika"]["pika"]
    # Not a terminal: one plain line per finished run on stderr, in the order they ran.
    assert "\r" not in result.stderr
    lines = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ours asyncio, round 1", "ours trio, round 1", "aio-pika, round 1", "pika, round 1"
    ]  # fmt: skip
    assert all(": 300 messages, " in line and line.endswith(" msg/s") for line in lines)


def test_bench_loopback_091_table_from_the_environment_s_rabbitmq() -> None:
    url = rabbitmq_url()
    env = {**_environ(), bench.RABBITMQ_ENV: url}
    result = _run(
        "bench", "loopback", "--protocol", "0-9-1", "--adapter", "trio",
        "--messages", "200", "--rounds", "1", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("loopback 0-9-1 through amqp://guest:***@")
    assert "200 messages of 256 bytes, published with confirms, consumed with acks" in lines[0]
    assert lines[1].split() == ["ours", "theirs", "ratio", "peer"]
    assert [line.split()[:3] for line in lines[2:]] == [
        ["trio", "vs", "aio-pika"], ["trio", "vs", "pika"]
    ]  # fmt: skip
    assert all(line.split()[-1] in ("aio-pika", "pika") for line in lines[2:])


def _environ() -> dict[str, str]:
    import os

    return dict(os.environ)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--protocol", "0-9-1", "--adapter", "sockets"], "measures the adapters asyncio, trio"),
        (
            ["--url", "amqp://127.0.0.1:1/"],
            "--url: the loopback over WebSocket takes a ws:// URL, not amqp",
        ),
        (["--broker"], "--broker is for --protocol 0-9-1"),
        (["--protocol", "0-9-1", "--url", "http://x/"], "--url: "),
    ],
)
def test_bench_loopback_091_usage_errors(args: list[str], message: str) -> None:
    result = _run("bench", "loopback", *args)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and message in result.stderr


def test_bench_loopback_091_without_rabbitmq_is_status_3() -> None:
    # Port 1 refuses connections: nothing to measure through.
    result = _run("bench", "loopback", "--protocol", "0-9-1", "--url", "amqp://127.0.0.1:1/")
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("amqp-sansio bench loopback: error: no RabbitMQ at amqp://127.0.0.1:1")


def test_bench_loopback_091_our_client_through_our_broker_and_rabbitmq() -> None:
    url = rabbitmq_url()
    result = _run(
        "bench", "loopback", "--protocol", "0-9-1", "--url", url, "--adapter", "asyncio",
        "--broker", "--json", "--messages", "300", "--rounds", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    entry = data["asyncio: our broker vs rabbitmq"]
    assert set(entry) == {"ours", "rabbitmq", "ratio", "unit"}
    assert entry["ours"] > 0 and entry["rabbitmq"] > 0
    assert entry["ratio"] == pytest.approx(entry["ours"] / entry["rabbitmq"], rel=1e-2)
    # The same client through RabbitMQ: the figure of the asyncio rows.
    assert entry["rabbitmq"] == data["asyncio vs pika"]["ours"]
    assert "ours asyncio, our broker, round 1: 300 messages, " in result.stderr
