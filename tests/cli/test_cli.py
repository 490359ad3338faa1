"""The ``amqp-sansio`` command: ``bench codec``, ``bench pipe`` and ``bench loopback`` print
our figure, Proton's and the ratio.
(No timing is asserted: speed is measured by the benchmark, not by tests.)"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from amqp_sansio.adapters import cli
from amqp_sansio.adapters.cli import bench
from amqp_sansio.adapters.cli.progress import Progress as _Progress

import amqp_sansio


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "amqp_sansio.adapters.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


_CODEC_ROWS = {
    "encode": "proton",
    "decode": "proton",
    "encode vs rbfly": "rbfly",
    "decode vs rbfly": "rbfly",
}


def test_bench_codec_json_shape() -> None:
    result = _run("bench", "codec", "--json", "--seconds", "0.2")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == set(_CODEC_ROWS)
    for name, entry in data.items():
        assert set(entry) == {"ours", _CODEC_ROWS[name], "ratio", "unit"}
        assert entry["unit"] == "ops/s"
        assert entry["ours"] > 0


def test_bench_codec_compares_with_proton_when_installed() -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is in the 'test' extra")
    data = json.loads(_run("bench", "codec", "--json", "--seconds", "0.2").stdout)
    for entry in (data["encode"], data["decode"]):
        assert entry["proton"] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry["proton"], rel=1e-2)


def test_bench_codec_compares_with_rbfly_when_installed() -> None:
    pytest.importorskip("rbfly.amqp", reason="rbfly is in the 'test' extra")
    data = json.loads(_run("bench", "codec", "--json", "--seconds", "0.2").stdout)
    for entry in (data["encode vs rbfly"], data["decode vs rbfly"]):
        assert entry["rbfly"] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry["rbfly"], rel=1e-2)


def test_bench_table_output() -> None:
    result = _run("bench", "codec", "--seconds", "0.2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["ours", "theirs", "ratio", "unit", "peer"]
    rows = [line.split() for line in lines[2:6]]
    assert [row[:-5] for row in rows] == [
        ["encode"],
        ["decode"],
        *[[o, "vs", "rbfly"] for o in ("encode", "decode")],
    ]
    assert [row[-1] for row in rows] == list(_CODEC_ROWS.values())
    assert [row[-2] for row in rows] == ["ops/s"] * 4
    assert all(row[-3].endswith("x") for row in rows)  # each peer measured, each its ratio


def test_bench_codec_without_rbfly_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without rbfly only our figures in its rows: the table says which package to install,
    and Proton's rows are as they were."""
    monkeypatch.setitem(sys.modules, "rbfly.amqp", None)
    results = bench.codec_benchmark(seconds=0.05)
    assert all(results[name]["rbfly"] is None for name in ("encode vs rbfly", "decode vs rbfly"))
    assert all(r["ours"] > 0 for r in results.values())
    text = bench.format_table("t", results)
    assert "rbfly is not installed" in text and "n/a" in text
    assert "python-qpid-proton is not installed" not in text


def test_we_and_rbfly_read_each_other_s_message() -> None:
    """What the check before timing relies on: rbfly reads our bytes of the typical
    message, and we read rbfly's bytes of what it encodes (application properties and
    body) as :func:`bench.rbfly_message`."""
    rb = pytest.importorskip("rbfly.amqp", reason="rbfly is in the 'test' extra")
    typical = bench.typical_message()
    theirs = rb.decode_amqp(typical.encode())
    assert theirs.properties.message_id == "order-000042" and theirs.header.priority == 4
    assert theirs.app_properties["amount"] == 1234 and len(theirs.body) == 256
    props = dict(theirs.app_properties)  # its timestamp read as a datetime, written back
    buffer = bytearray(1024)
    size = rb.encode_amqp(buffer, rb.MessageCtx(theirs.body, None, None, None, None, props, None))
    ours = amqp_sansio.Message.decode(bytes(buffer[:size]))
    assert ours == bench.rbfly_message()
    assert ours.application_properties == typical.application_properties


def test_table_without_proton_says_so() -> None:
    text = bench.format_table(
        "t", {"encode": {"ours": 1.0, "proton": None, "ratio": None, "unit": "ops/s"}}
    )
    assert "n/a" in text and "not installed" in text


def test_the_benchmark_message_is_the_one_the_issue_describes() -> None:
    m = bench.typical_message()
    assert m.header is not None and m.header.durable and m.header.priority == 4
    p = m.properties
    assert p is not None
    assert None not in (p.message_id, p.to, p.subject, p.content_type, p.correlation_id)
    assert m.application_properties is not None and len(m.application_properties) == 5
    assert len({type(v) for v in m.application_properties.values()}) >= 4
    assert m.body is not None and len(m.body.value) == 256  # type: ignore[union-attr]


def test_usage_errors_exit_nonzero() -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["bench"])
    assert info.value.code == 2


# -- bench pipe: the engine, ours next to Proton's -------------------------------------------

_ENTRY = {"ours", "proton", "ratio", "unit"}


def _json(*args: str) -> dict[str, dict[str, object]]:
    result = _run("bench", "pipe", "--json", "--rounds", "1", *args)
    assert result.returncode == 0, result.stderr
    data: dict[str, dict[str, object]] = json.loads(result.stdout)
    for entry in data.values():
        assert set(entry) == _ENTRY
    return data


@pytest.mark.parametrize("mode", [[], ["--settled"]])
def test_bench_pipe_json_shape(mode: list[str]) -> None:
    data = _json("--messages", "200", *mode)
    assert set(data) == {"pipe"}
    entry = data["pipe"]
    assert entry["unit"] == "msg/s"
    assert isinstance(entry["ours"], float) and entry["ours"] > 0


def test_bench_pipe_compares_with_proton_when_installed() -> None:
    pytest.importorskip("proton", reason="python-qpid-proton is in the 'test' extra")
    entry = _json("--messages", "200")["pipe"]
    assert isinstance(entry["proton"], float) and entry["proton"] > 0
    assert entry["ratio"] == pytest.approx(entry["ours"] / entry["proton"], rel=1e-2)


def test_bench_pipe_large() -> None:
    result = _run("bench", "pipe", "--json", "--rounds", "1", "--large", "1MiB")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"large", "large-engine"}  # the second: tests/cli/bench
    assert set(data["large"]) == _ENTRY
    assert data["large"]["unit"] == "MiB/s"
    assert isinstance(data["large"]["ours"], float) and data["large"]["ours"] > 0


def test_bench_pipe_memory() -> None:
    data = _json(
        "--messages", "200", "--memory", "--memory-messages", "500", "--memory-unsettled", "300"
    )
    assert set(data) == {"pipe", "peak-memory", "peak-memory-early", "per-unsettled"}
    for name in ("peak-memory", "peak-memory-early", "per-unsettled"):
        entry = data[name]
        assert entry["proton"] is None and entry["ratio"] is None
        assert isinstance(entry["ours"], int | float) and entry["ours"] > 0
    assert data["peak-memory"]["unit"] == "bytes"
    assert data["per-unsettled"]["unit"] == "bytes/delivery"


def test_bench_pipe_table_output() -> None:
    result = _run("bench", "pipe", "--messages", "200", "--rounds", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("pipe: 200 messages of 256 bytes")
    assert lines[1].split() == ["ours", "proton", "ratio", "unit"]
    assert lines[2].split()[0] == "pipe" and lines[2].split()[-1] == "msg/s"


def test_memory_table_says_ours_only() -> None:
    text = bench.format_table(
        "t", {"per-unsettled": {"ours": 700.0, "proton": None, "ratio": None, "unit": "bytes"}}
    )
    assert "ours only" in text and "not installed" not in text


@pytest.mark.parametrize("settled", [False, True])
def test_pipes_carry_every_message(settled: bool) -> None:
    # Each pipe checks what arrives and that nothing is left unsettled; it raises otherwise.
    assert bench.ours_pipe(300, settled=settled) > 0
    assert bench.ours_pipe(1, settled=settled, body=bytes(200_000)) > 0  # split into frames
    if bench.proton_installed():
        assert bench.proton_pipe(300, settled=settled) > 0
        assert bench.proton_pipe(1, settled=settled, body=bytes(200_000)) > 0


def test_the_large_pipes_carry_one_body_whose_pages_are_written() -> None:
    body = bench.large_body(300_000)
    assert len(body) == 300_000 and body.count(0) == 0  # written, not zero pages
    assert bench.ours_large(body) > 0
    if bench.proton_installed():
        assert bench.proton_large(body) > 0


def test_memory_is_flat_and_unsettled_deliveries_are_small() -> None:
    # Not timing: what our engines hold, which the issue bounds.
    figures = bench.memory_benchmark(5_000, unsettled=5_000)
    assert figures["peak-memory"]["ours"] <= 1.25 * figures["peak-memory-early"]["ours"]
    assert figures["per-unsettled"]["ours"] <= 1024


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("64MiB", 64 * 1024 * 1024),
        ("1MiB", 1024 * 1024),
        ("100KiB", 100 * 1024),
        ("1.5GiB", 3 * 512 * 1024 * 1024),
        ("10MB", 10_000_000),
        ("4096", 4096),
        ("512B", 512),
        (" 2mib ", 2 * 1024 * 1024),
    ],
)
def test_sizes(text: str, size: int) -> None:
    assert bench.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "MiB", "12XB", "0", "0.1B", "-1MiB", "1 TiB"])
def test_bad_sizes(text: str) -> None:
    with pytest.raises(ValueError):
        bench.parse_size(text)


@pytest.mark.parametrize(
    "args", [["--large", "lots"], ["--messages", "0"], ["--messages", "many"], ["--rounds", "-1"]]
)
def test_pipe_usage_errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["bench", "pipe", *args])
    assert info.value.code == 2
    assert "error" in capsys.readouterr().err


# -- bench loopback: over 127.0.0.1, ours next to Proton's Container -------------------------


@pytest.mark.parametrize("adapter", ["sockets", "asyncio", "trio"])
def test_bench_loopback_json(adapter: str) -> None:
    result = _run(
        "bench", "loopback", "--adapter", adapter, "--json", "--messages", "300", "--rounds", "1"
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {f"loopback-{adapter}"}
    entry = data[f"loopback-{adapter}"]
    assert set(entry) == _ENTRY and entry["unit"] == "msg/s"
    assert isinstance(entry["ours"], float) and entry["ours"] > 0
    if bench.proton_installed():
        assert isinstance(entry["proton"], float) and entry["proton"] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry["proton"], rel=1e-2)
    # Not a terminal: one plain line per finished run on stderr, no carriage returns.
    assert "\r" not in result.stderr
    assert result.stderr.splitlines()[0].startswith("ours, round 1: 300 messages, ")


@pytest.mark.parametrize("adapter", ["sockets", "asyncio", "trio"])
def test_bench_loopback_table(adapter: str) -> None:
    result = _run("bench", "loopback", "--adapter", adapter, "--messages", "200", "--rounds", "1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"loopback ({adapter}): 200 messages of 256 bytes")
    assert lines[1].split() == ["ours", "proton", "ratio", "unit"]
    assert lines[2].split()[0] == f"loopback-{adapter}" and lines[2].split()[-1] == "msg/s"


@pytest.mark.parametrize("adapter", ["sockets", "asyncio", "trio"])
def test_bench_loopback_with_large_messages(adapter: str) -> None:
    """``--size``: each side's receiver checks every body's length (a wrong one fails)."""
    result = _run(
        "bench", "loopback", "--adapter", adapter, "--messages", "20", "--size", "1MiB",
        "--rounds", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"loopback ({adapter}): 20 messages of 1,048,576 bytes")


@pytest.mark.parametrize("adapter", ["asyncio", "trio"])
def test_bench_loopback_websocket_is_next_to_tcp(adapter: str) -> None:
    """``--websocket``: the same work over ws:// (the WebSocket layer on both ends) and over
    TCP, in one run: the ratio is WebSocket's cost."""
    result = _run(
        "bench", "loopback", "--websocket", "--adapter", adapter, "--json",
        "--messages", "300", "--rounds", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)[f"loopback-{adapter}-websocket"]
    assert set(entry) == {"ours", "tcp", "ratio", "unit"} and entry["unit"] == "msg/s"
    assert entry["ours"] > 0 and entry["tcp"] > 0
    assert entry["ratio"] == pytest.approx(entry["ours"] / entry["tcp"], rel=1e-2)
    stderr = result.stderr.splitlines()
    assert stderr[0].startswith("websocket, round 1: 300 messages, ")
    assert stderr[1].startswith("tcp, round 1: 300 messages, ")
    table = _run("bench", "loopback", "--websocket", "--messages", "200", "--rounds", "1")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].startswith("loopback over WebSocket (asyncio): 200 messages")
    assert lines[1].split() == ["ours", "tcp", "ratio", "unit"]


def test_bench_loopback_over_a_websocket_url() -> None:
    """``--url ws://HOST:PORT/PATH`` (issue 30): the WebSocket run at that address (port 0:
    a free one, the path the resource both ends use), next to TCP in the same run."""
    result = _run(
        "bench", "loopback", "--url", "ws://127.0.0.1:0/amqp/bench", "--json",
        "--messages", "200", "--rounds", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    entry = json.loads(result.stdout)["loopback-asyncio-websocket"]
    assert entry["ours"] > 0 and entry["tcp"] > 0 and entry["unit"] == "msg/s"
    table = _run(
        "bench", "loopback", "--url", "ws://localhost:0/", "--adapter", "trio",
        "--messages", "100", "--rounds", "1",
    )  # fmt: skip
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith(
        "loopback over WebSocket (trio): 100 messages of 256 bytes, each accepted, over "
        "ws://localhost:0/ next to TCP"
    )


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("wss://127.0.0.1:0/", "takes a ws:// URL, not wss"),
        ("ws://127.0.0.1:x/", "port is not a number from 0 to 65535"),
        ("ws://u:secret@127.0.0.1:0/", "is ws://HOST:PORT/PATH (no user, query or fragment)"),
    ],
)
def test_bench_loopback_websocket_url_usage_errors(url: str, why: str) -> None:
    result = _run("bench", "loopback", "--url", url)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("amqp-sansio bench loopback: error: --url: ") and why in line
    assert "secret" not in result.stderr


def test_loopback_benchmark_refuses_a_bad_url_before_any_round() -> None:
    with pytest.raises(ValueError, match="takes a ws:// URL"):
        bench.loopback_benchmark(10, adapter="asyncio", websocket="amqp://127.0.0.1:0/")


def test_bench_loopback_websocket_needs_an_async_adapter() -> None:
    result = _run("bench", "loopback", "--websocket", "--adapter", "sockets")
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "amqp-sansio bench loopback: error: --websocket runs through --adapter asyncio or trio"
    )


def test_asyncio_loopback_runs_carry_every_message() -> None:
    seen: list[int] = []
    assert bench.ours_loopback_asyncio(2_500, progress=seen.append) > 0
    assert seen and seen == sorted(seen) and seen[-1] < 2_500
    with pytest.raises(ValueError, match="no adapter named"):
        bench.loopback_benchmark(10, adapter="carrier-pigeon")


def test_trio_loopback_runs_carry_every_message() -> None:
    seen: list[int] = []
    assert bench.ours_loopback_trio(2_500, progress=seen.append) > 0
    assert seen and seen == sorted(seen) and seen[-1] < 2_500


def test_bench_loopback_refuses_an_unknown_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["bench", "loopback", "--adapter", "carrier-pigeon"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_loopback_runs_carry_every_message() -> None:
    # Each run checks what arrives and that every delivery was settled; it raises otherwise.
    seen: list[int] = []
    assert bench.ours_loopback(2_500, progress=seen.append) > 0
    assert seen and seen == sorted(seen) and seen[-1] < 2_500
    if bench.proton_installed():
        assert bench.proton_loopback(500) > 0


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_on_a_terminal() -> None:
    stream = _Terminal()
    progress = _Progress(1000, stream)
    progress("ours, round 1", 500)
    progress("ours, round 1", 1000, 12345.0)
    progress.clear()
    text = stream.getvalue()
    assert text.count("\r") == 3 and "\n" not in text
    assert "[###############...............]" in text and "1,000 / 1,000" in text
    assert text.endswith("\r\033[K")


# -- usage errors: one line, exit status 2, before anything is done ------------------------------


def test_version_prints_the_package_s_version() -> None:
    import amqp_sansio

    result = _run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"amqp-sansio {amqp_sansio.__version__}"


def test_a_port_out_of_range_is_a_usage_error_not_a_traceback() -> None:
    result = _run("broker", "--port", "70000")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == (
        "amqp-sansio broker: error: argument --port: a port is 0 to 65535, not 70000"
    )


@pytest.mark.parametrize("command", ["send", "receive"])
def test_an_unknown_sasl_mechanism_is_named_before_connecting(command: str) -> None:
    # Port 1 refuses connections: status 3 if the command tried; 2 says it did not.
    result = _run(command, "amqp://127.0.0.1:1/q", "--sasl-mechanism", "FOO")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"amqp-sansio {command}: error: unknown SASL mechanism 'FOO': ")
    assert "SCRAM-SHA-256" in line and "'none'" in line


# -- bench codec --protocol 0-9-1: ours next to pamqp ----------------------------------------


def test_bench_codec_091_json_compares_with_pamqp() -> None:
    result = _run("bench", "codec", "--protocol", "0-9-1", "--json", "--seconds", "0.2")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"method encode", "method decode", "header encode", "header decode"}
    for entry in data.values():
        assert set(entry) == {"ours", "pamqp", "ratio", "unit"}
        assert entry["unit"] == "ops/s" and entry["ours"] > 0 and entry["pamqp"] > 0
        assert entry["ratio"] == pytest.approx(entry["ours"] / entry["pamqp"], rel=1e-2)


def test_bench_codec_091_table() -> None:
    result = _run("bench", "codec", "--protocol", "0-9-1", "--seconds", "0.1")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("codec 0-9-1")
    assert lines[1].split() == ["ours", "pamqp", "ratio", "unit"]
    assert [line.split()[:2] for line in lines[2:]] == [
        ["method", "encode"],
        ["method", "decode"],
        ["header", "encode"],
        ["header", "decode"],
    ]


def test_bench_codec_091_without_pamqp(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pamqp only our figures: the table says which package to install."""
    monkeypatch.setitem(sys.modules, "pamqp.frame", None)
    results = bench.codec091_benchmark(seconds=0.05)
    assert all(r["pamqp"] is None and r["ours"] > 0 for r in results.values())
    text = bench.format_table("t", results, "pamqp")
    assert "pamqp is not installed" in text and "n/a" in text


def test_bench_codec_protocol_is_checked() -> None:
    result = _run("bench", "codec", "--protocol", "0-8")
    assert result.returncode == 2 and "invalid choice" in result.stderr
