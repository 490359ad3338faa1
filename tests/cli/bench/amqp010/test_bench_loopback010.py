"""``amqp-sansio bench loopback --protocol 0-10``: a producer and a consumer through our
broker, ours (sockets, asyncio, trio) next to qpid.messaging in the same run.
(No timing is asserted: speed is measured by the benchmark, not by tests.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from amqp_sansio.adapters.cli import bench
from amqp_sansio.adapters.cli.bench.amqp010 import loopback as loopback010
from support.qpid_peer import QPID_DIR, qpid_module


def _run(*args: str, peers: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, AMQP_SANSIO_PEERS_DIR=str(peers or QPID_DIR.parent))
    return subprocess.run(
        [sys.executable, "-m", "amqp_sansio.adapters.cli", "bench", "loopback", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


@pytest.fixture
def broker_url() -> Any:
    """Our broker, started as the benchmark starts it (a process of its own)."""
    with bench.broker_for_bench() as url:
        yield url


@pytest.fixture
def named_queue(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the queues the runs declare, as they declare them."""
    names: list[str] = []
    make = loopback010.queue_name

    def record(who: str) -> str:
        names.append(make(who))
        return names[-1]

    monkeypatch.setattr(loopback010, "queue_name", record)
    return names


def _queue_gone(url: str, name: str) -> bool:
    """Whether our broker no longer has the queue ``name`` (``queue.query`` gives no
    queue back for one it does not have)."""
    from amqp_sansio.adapters import sockets

    with sockets.connect(url, protocol="0-10") as conn, conn.session("bench-check", keep=0) as s:
        return s.queue_query(name).queue in (None, "")


@pytest.mark.parametrize(
    "runner",
    [
        loopback010.ours010_sockets,
        loopback010.ours010_asyncio,
        loopback010.ours010_trio,
        loopback010.qpid_messaging_loopback,
    ],
)
def test_a_run_carries_every_message_and_deletes_its_queue(
    runner: Any, broker_url: str, named_queue: list[str]
) -> None:
    qpid_module("qpid.messaging")  # skips, saying why, without the peer
    seen: list[int] = []
    # Each run checks every body's length and counts every message taken; it raises
    # otherwise (a stall included).
    assert runner(broker_url, 2_500, body=bytes(100), progress=seen.append) > 0
    assert seen and seen == sorted(seen) and seen[-1] < 2_500
    (name,) = named_queue
    assert _queue_gone(broker_url, name)


def test_the_peer_failing_is_left_out_and_named(
    monkeypatch: pytest.MonkeyPatch, broker_url: str
) -> None:
    qpid_module("qpid.messaging")

    def broken(*args: Any, **kwargs: Any) -> float:
        raise ConnectionError("refused by the test")

    monkeypatch.setattr(loopback010, "qpid_messaging_loopback", broken)
    failures: list[tuple[str, BaseException]] = []
    results = bench.loopback010_benchmark(
        broker_url,
        200,
        adapters=("sockets",),
        rounds=2,
        on_peer_failure=lambda peer, exc: failures.append((peer, exc)),
    )
    assert [peer for peer, _ in failures] == ["qpid.messaging"]  # once, not once a round
    for name in ("sockets vs qpid.messaging", "sockets vs qpid.messaging, client CPU"):
        entry = results[name]
        assert entry["qpid.messaging"] is None and entry["ratio"] is None and entry["ours"] > 0


def test_ours_failing_raises() -> None:
    # Port 1 refuses connections: our side cannot run, and that is not left out.
    with pytest.raises(OSError):
        bench.loopback010_benchmark("amqp://127.0.0.1:1", 10, adapters=("sockets",), peer=False)


def test_an_adapter_we_do_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="no 0-10 adapter named 'carrier-pigeon'"):
        bench.loopback010_benchmark("amqp://127.0.0.1:1", 10, adapters=("carrier-pigeon",))


# -- the command ------------------------------------------------------------------------------


def test_bench_loopback_010_json() -> None:
    qpid_module("qpid.messaging")
    result = _run("--protocol", "0-10", "--json", "--messages", "300", "--rounds", "1")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    pairs = ["sockets vs qpid.messaging", "asyncio vs qpid.messaging"]
    assert list(data) == [*pairs, *(f"{pair}, client CPU" for pair in pairs)]
    for name, entry in data.items():
        assert set(entry) == {"ours", "qpid.messaging", "ratio", "unit"}
        assert entry["unit"] == ("msg/cpu-s" if name.endswith("CPU") else "msg/s")
        assert entry["ours"] > 0 and entry["qpid.messaging"] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry["qpid.messaging"], rel=1e-2)
    # The same run: the peer's figure is one, whichever adapter it is put next to.
    assert (
        data["sockets vs qpid.messaging"]["qpid.messaging"]
        == data["asyncio vs qpid.messaging"]["qpid.messaging"]
    )
    # Not a terminal: one plain line per finished run on stderr, in the order they ran.
    assert "\r" not in result.stderr
    lines = result.stderr.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ours sockets, round 1", "ours asyncio, round 1", "qpid.messaging, round 1"
    ]  # fmt: skip
    assert all(": 300 messages, " in line and line.endswith(" msg/s") for line in lines)


def test_bench_loopback_010_table() -> None:
    qpid_module("qpid.messaging")
    result = _run(
        "--protocol", "0-10", "--adapter", "trio", "--messages", "200", "--rounds", "1",
        "--size", "1KiB",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("loopback 0-10 through our broker: 200 messages of 1,024 bytes")
    assert lines[1].split() == ["ours", "theirs", "ratio", "peer"]
    rate, cpu, note = lines[2:]
    assert rate.split()[:3] == ["trio", "vs", "qpid.messaging"]
    assert cpu.split()[:5] == ["trio", "vs", "qpid.messaging,", "client", "CPU"]
    for row in (rate, cpu):
        ours, theirs, ratio, peer = row.split()[-4:]
        assert float(ours.replace(",", "")) > 0 and float(theirs.replace(",", "")) > 0
        assert ratio.endswith("x") and float(ratio[:-1]) > 0 and peer == "qpid.messaging"
    assert note.startswith("msg/s over the wall clock; client CPU: ")


def test_bench_loopback_010_without_qpid_is_one_line_and_status_2(tmp_path: Path) -> None:
    result = _run("--protocol", "0-10", "--messages", "10", peers=tmp_path)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("amqp-sansio bench loopback: error: qpid-python (the 0-10 peer)")
    assert "AMQP_SANSIO_PEERS_DIR" in line and result.stdout == ""


@pytest.mark.parametrize("option", [["--url", "amqp://127.0.0.1:1/"], ["--broker"]])
def test_bench_loopback_010_usage_errors(option: list[str]) -> None:
    result = _run("--protocol", "0-10", *option)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert "--url and --broker are for --protocol 0-9-1" in line
