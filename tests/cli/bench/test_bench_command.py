"""What every ``bench loopback`` that alternates rounds through a broker does after its
protocol's checks (``--protocol 0-9-1`` and ``0-10``, one run-and-print tail in
:mod:`amqp_sansio.adapters.cli.bench.command`): peers missing or failing said and left
out, ours failing exit status 3, the table under its title or ``--json``. The benchmarks
are stand-ins here (their runs are tested in the protocol folders), as is the broker."""

from __future__ import annotations

import contextlib
import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from amqp_sansio.adapters import cli
from amqp_sansio.adapters.cli import bench

RESULT = {"trio vs pika": {"ours": 100.0, "pika": 50.0, "ratio": 2.0, "unit": "msg/s"}}
OUR_BROKER = "amqp://guest:guest@127.0.0.1:1"
#: How the stand-in runs fail (set by a test, emptied by the fixture).
FAIL: set[str] = set()


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """The arguments each stand-in benchmark run was given (by name); a run fails as
    :data:`FAIL` says: with ``"ours"`` it raises, with ``"peer"`` it tells of pika's
    failure first."""
    seen: list[dict[str, Any]] = []

    def stand_in(real: Callable[..., bench.Result]) -> Callable[..., bench.Result]:
        def run(*args: Any, **kwargs: Any) -> bench.Result:
            call = inspect.signature(real).bind(*args, **kwargs)  # (called as it can be)
            seen.append(call.arguments)
            if "peer" in FAIL:
                call.arguments["on_peer_failure"]("pika", ConnectionError("refused by the test"))
            if "ours" in FAIL:
                raise RuntimeError("ours broke")
            return RESULT

        return run

    @contextlib.contextmanager
    def broker(enabled: bool = True) -> Iterator[str | None]:
        yield OUR_BROKER if enabled else None

    FAIL.clear()
    for name in ("loopback091_benchmark", "loopback010_benchmark"):
        monkeypatch.setattr(bench, name, stand_in(getattr(bench, name)))
    monkeypatch.setattr(bench, "broker_for_bench", broker)
    monkeypatch.setattr(bench, "rabbitmq_answers", lambda host, port: None)
    monkeypatch.setattr(bench, "peer_installed", lambda peer: peer == "pika")
    monkeypatch.setattr(bench, "qpid_folder", lambda: "qpid-python")
    return seen


OPTIONS = ["--messages", "1234", "--size", "100", "--rounds", "2", "--seconds", "0.5"]


def test_0_9_1_says_each_peer_left_out_and_prints_the_table(
    runs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    FAIL.add("peer")
    url = "amqp://guest:secret@127.0.0.1:5672"
    assert cli.main(["bench", "loopback", "--protocol", "0-9-1", "--url", url, *OPTIONS]) == 0
    out, err = capsys.readouterr()
    assert "bench loopback: aio-pika is not installed: left out (pip install aio-pika)" in err
    assert "bench loopback: pika's run failed, left out: ConnectionError('refused" in err
    assert out == (
        bench.format_pairs(
            "loopback 0-9-1 through amqp://guest:***@127.0.0.1:5672: 1,234 messages of 100 "
            "bytes, published with confirms, consumed with acks (prefetch 1,000)",
            RESULT,
        )
        + "\n"
    )
    (run,) = runs
    assert run["url"] == url and run.get("broker_url") is None
    expected = {"messages": 1234, "size": 100, "rounds": 2, "seconds": 0.5}
    assert {k: run[k] for k in expected} == expected
    assert run["adapters"] == bench.LOOPBACK091_ADAPTERS


def test_0_9_1_with_broker_passes_our_broker_s_url(
    runs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bench", "loopback", "--protocol", "0-9-1", "--broker", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == RESULT
    (run,) = runs
    assert run["broker_url"] == OUR_BROKER


def test_0_10_runs_through_our_broker_and_prints_its_note(
    runs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["bench", "loopback", "--protocol", "0-10", *OPTIONS]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("loopback 0-10 through our broker: 1,234 messages of 100 bytes")
    assert lines[-1].startswith("msg/s over the wall clock; client CPU:")
    assert "left out" not in err
    (run,) = runs
    assert run["url"] == OUR_BROKER and run["adapters"] == bench.LOOPBACK010_DEFAULT


@pytest.mark.parametrize("protocol", ["0-9-1", "0-10"])
def test_ours_failing_is_status_3_and_prints_no_table(
    protocol: str, runs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    FAIL.add("ours")
    assert cli.main(["bench", "loopback", "--protocol", protocol, "--json"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert "amqp-sansio bench loopback: error: our side failed: RuntimeError('ours broke')" in err
