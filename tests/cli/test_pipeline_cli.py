"""``amqp-sansio pipeline`` and ``bench spark`` as a user meets them: their ``--help``, the
options refused before Spark starts, the stages shown on a terminal or a log
(:class:`~amqp_sansio.adapters.cli.progress.StageBars`, on an injected clock), and Ctrl-C as
a real SIGINT sent to the command's process group (as a terminal sends it) while Spark
starts and while the query runs: one line, exit status 130, within two seconds, nothing of
Spark's on stderr, and no process of the JVM's left. One full run, on a terminal, from a
directory that holds a decoy ``amqp_sansio``, checks what a terminal shows of it."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pty
import re
import select
import signal
import subprocess
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.broker_process import amqp_sansio_command
from support.rabbitmq import rabbitmq_url

pytest.importorskip("pyspark", reason="pyspark is in the 'spark' extra")
from amqp_sansio.adapters import cli
from amqp_sansio.adapters.cli import pipeline
from amqp_sansio.adapters.cli.bench import spark as bench_spark
from amqp_sansio.adapters.cli.command import build_parser
from amqp_sansio.adapters.cli.progress import StageBars

COMMANDS = [["pipeline"], ["bench", "spark"]]

# -- --help -----------------------------------------------------------------------------------


def _subparser(command: list[str]) -> argparse.ArgumentParser:
    parser = build_parser()
    for name in command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


@pytest.mark.parametrize("command", COMMANDS)
def test_help_gives_a_description_the_exit_statuses_and_every_default(
    command: list[str],
) -> None:
    parser = _subparser(command)
    text = " ".join((parser.description or "").split())
    for status in ("0 ", "2 usage error", "3 no Java runtime", "130 interrupted"):
        assert status in text, (status, text)
    checked = 0
    for action in parser._actions:
        if action.default in (None, False, argparse.SUPPRESS) or not action.option_strings:
            continue
        checked += 1
        default = action.default
        shown = f"{default:,}" if isinstance(default, int) else str(default)
        assert f"(default {shown})" in (action.help or "") or (
            f"default {shown})" in (action.help or "")
        ), (action.option_strings, action.help)
    assert checked >= 3
    # The options without a default value say what happens without them.
    for action in parser._actions:
        if action.option_strings and action.default is None and action.dest != "help":
            assert "(default" in (action.help or ""), action.option_strings
    for flag in ("--progress", "--verbose", "--json"):
        assert flag in parser.format_help()


# -- options refused before Spark starts -------------------------------------------------------


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark was started")

    monkeypatch.setattr(pipeline, "run_pipeline", started)
    monkeypatch.setattr(bench_spark, "bench_spark", started)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["pipeline", "--batch", "0"], "argument --batch: must be at least 1, not 0"),
        (["pipeline", "--messages", "0"], "argument --messages: must be at least 1, not 0"),
        (["pipeline", "--messages", "many"], "argument --messages: not a whole number: 'many'"),
        (["pipeline", "--master", "local[x]"], "argument --master: not a Spark master URL"),
        (["pipeline", "--protocol", "0-10"], "argument --protocol: invalid choice: '0-10'"),
        (["bench", "spark", "--size", "0"], "argument --size: must be at least 1, not 0"),
        (["bench", "spark", "--partitions", "-1"], "argument --partitions: must be at least 1"),
        (["bench", "spark", "--batch", "1.5"], "argument --batch: not a whole number: '1.5'"),
    ],
)
def test_an_impossible_value_is_a_usage_error(
    argv: list[str], message: str, no_spark: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"amqp-sansio {' '.join(argv[:-2])}: error: {message}"), last


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--orders", ""], "--orders is empty: give an address, or leave the option out"),
        (["--results", " "], "--results is empty: give an address, or leave the option out"),
        (["--orders", "q", "--results", "q"], "--orders and --results are the same address ('q')"),
        (
            ["--url", "amqp://127.0.0.1:5672/orders"],
            "--url names a broker, not an address ('orders'): give the addresses with "
            "--orders and --results",
        ),
        (["--url", "amqp://127.0.0.1:99999"], "Port out of range"),
    ],
)
def test_addresses_and_urls_that_cannot_work_are_refused_in_one_line(
    options: list[str], message: str, no_spark: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["pipeline", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith("amqp-sansio pipeline: error: ") and err.count("\n") == 1, err
    assert message in err


# -- the stages, on an injected clock ----------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _run_stages(stages: StageBars, clock: Clock) -> None:
    stages.stage("publishing", 1000, "1,000 orders to orders-1 at amqp://127.0.0.1:5672")
    for n in range(100, 1001, 100):
        clock.now += 0.5
        stages.done(n)
    stages.stage("starting Spark", note="master local[2]")
    clock.now += 9.0
    stages.stage("processing", 1000, "a streaming query, micro-batches of up to 500 orders")
    clock.now += 12.0
    stages.done(500)
    clock.now += 1.0
    stages.done(1000)
    stages.close()
    stages.close()  # a second close writes nothing


def test_a_log_gets_a_line_as_each_stage_begins_and_ends() -> None:
    out, clock = io.StringIO(), Clock()
    stages = StageBars(out, tty=False, clock=clock)
    _run_stages(stages, clock)
    assert out.getvalue().splitlines() == [
        "publishing: 1,000 orders to orders-1 at amqp://127.0.0.1:5672",
        "publishing: 1,000 / 1,000 in 5s, 200 msg/s",
        "starting Spark: master local[2]",
        "starting Spark: done in 9s",
        "processing: a streaming query, micro-batches of up to 500 orders",
        # (more than ten seconds since the stage began: a line of its bar)
        "processing  [##########..........]    500 / 1,000  42 msg/s  12s left",
        "processing: 1,000 / 1,000 in 13s, 77 msg/s",
    ]


def test_a_terminal_gets_a_bar_per_stage_that_gives_way_to_the_line_it_ends_with() -> None:
    out, clock = io.StringIO(), Clock()
    stages = StageBars(out, tty=True, clock=clock)
    _run_stages(stages, clock)
    text = out.getvalue()
    shown = [line.split("\r\033[K")[-1] for line in text.split("\n")]
    assert shown == [
        "publishing: 1,000 / 1,000 in 5s, 200 msg/s",
        "starting Spark: done in 9s",
        "processing: 1,000 / 1,000 in 13s, 77 msg/s",
        "",
    ]
    draws = text.split("\r\033[K")
    assert "publishing: 1,000 orders to orders-1 at amqp://127.0.0.1:5672" in draws
    assert "starting Spark: master local[2]" in draws
    bars = [d for d in draws if d.startswith("publishing  [")]
    assert bars[0] == "publishing  [##..................]    100 / 1,000  200 msg/s  4s left"
    assert bars[-1] == "publishing  [####################]  1,000 / 1,000  200 msg/s"
    assert "processing  [####################]  1,000 / 1,000  " in text


def test_an_interruption_says_where_and_the_counts_so_far() -> None:
    out, clock = io.StringIO(), Clock()
    stages = StageBars(out, tty=True, clock=clock)
    stages.stage("publishing", 1000)
    stages.done(1000)
    stages.stage("starting Spark")
    stages.stage("processing", 1000)
    clock.now += 1
    stages.done(400)
    where = stages.name
    stages.abandon()
    assert out.getvalue().endswith("\r\033[K")  # the bar is gone, no last line
    assert stages.interrupted(where) == (
        "while processing (published 1,000 of 1,000, processed 400 of 1,000)"
    )
    unseen = StageBars(None)
    unseen.stage("publishing", 50)
    unseen.done(20)
    assert unseen.interrupted(unseen.name) == "while publishing (published 20 of 50)"
    assert StageBars(None).interrupted(None) == "at the end"


# -- Ctrl-C, for real ----------------------------------------------------------------------------


def _processes() -> dict[int, tuple[int, int, str]]:
    """pid: (parent pid, session, state) of every process (Linux's /proc)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            found[int(entry)] = (int(fields[1]), int(fields[3]), fields[0])
    return found


class Terminal:
    """The command with its stderr on a pseudo-terminal (and its own process group, as a
    shell's foreground job), read as it comes by a thread."""

    def __init__(self, *argv: str, cwd: Path, env: dict[str, str] | None = None) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [*amqp_sansio_command(), *argv],
            stdout=subprocess.PIPE,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=dict(os.environ, **(env or {})),
            start_new_session=True,
        )
        os.close(slave)
        self._master = master
        self._lock = threading.Lock()
        self._data = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            ready, _, _ = select.select([self._master], [], [], 0.5)
            if not ready:
                if self.proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(self._master, 65536)
            except OSError:  # (the other end closed)
                break
            if not chunk:
                break
            with self._lock:
                self._data += chunk

    @property
    def text(self) -> str:
        with self._lock:
            return self._data.decode(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                self.proc.wait()
                self.close()
                raise AssertionError(f"no {pattern!r} on stderr: {self.text[-3000:]!r}")
            time.sleep(0.02)

    def spark(self) -> set[int]:
        """The processes of the JVM the command started: each child of it that leads a
        session of its own, and every process in that session."""
        now = _processes()
        leaders = {
            pid for pid, (ppid, sid, _) in now.items() if ppid == self.proc.pid and sid == pid
        }
        return {pid for pid, (_, sid, _) in now.items() if sid in leaders}

    def kill(self) -> None:
        """SIGKILL to the command's process group, the command reaped (a test that gives
        up on it leaves no process, and no ResourceWarning in the next test)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def close(self) -> None:
        """Once the command has ended: the reader stops, :attr:`stdout` is what it printed."""
        self._reader.join(5)
        os.close(self._master)
        assert self.proc.stdout is not None
        with self.proc.stdout:
            self.stdout = self.proc.stdout.read().decode()


def _gone(pids: set[int], within: float = 5.0) -> set[int]:
    """The processes of ``pids`` still there (not even as zombies) after ``within`` s."""
    deadline = time.monotonic() + within
    while True:
        left = pids & set(_processes())
        if not left or time.monotonic() > deadline:
            return {pid for pid in left if _processes().get(pid, (0, 0, "Z"))[2] != "Z"}
        time.sleep(0.1)


def _interrupt(term: Terminal) -> tuple[float, list[str]]:
    """SIGINT to the command's process group, as Ctrl-C at a terminal: (seconds until it
    exited, the lines it wrote to stderr after the signal)."""
    before = len(term.text)
    start = time.monotonic()
    os.killpg(term.proc.pid, signal.SIGINT)
    try:
        term.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        term.kill()
        term.close()
        raise
    seconds = time.monotonic() - start
    term.close()
    after = term.text[before:]
    return seconds, [line for line in re.split(r"\r\n|\r|\n", after.replace("\033[K", "")) if line]


#: The pipeline's options for each protocol: 1.0 is the default.
PROTOCOLS = {"1.0": [], "0-9-1": ["--protocol", "0-9-1"]}


@pytest.mark.alone
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVM's processes in /proc")
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_ctrl_c_while_the_query_runs_stops_it_spark_and_the_broker_in_one_line(
    tmp_path: Path, protocol: str
) -> None:
    term = Terminal(
        "pipeline", *PROTOCOLS[protocol], "--messages", "2000", "--batch", "100", cwd=tmp_path
    )
    # The bar of the processing stage is drawn at the first look at the running query.
    term.wait_for(r"processing  \[")
    spark = term.spark()
    assert spark, "the JVM is a child of the command, in a session of its own"
    seconds, lines = _interrupt(term)
    assert term.proc.returncode == 130, term.text[-3000:]
    # (a redraw of the bar may have been on its way as the signal came)
    said = [line for line in lines if not re.match(r"processing  \[[#.]{20}\]  ", line)]
    assert len(said) == 1 and said[0] == lines[-1], lines
    assert re.fullmatch(
        r"amqp-sansio pipeline: interrupted while processing \(published 2,000 of 2,000, "
        r"processed [\d,]+ of 2,000\)",
        said[0],
    ), lines
    assert seconds < 2.0, f"{seconds:.2f} s from SIGINT to exit"
    assert term.stdout == ""
    assert _gone(spark) == set(), "a process of the JVM's survived"


@pytest.mark.alone
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_ctrl_c_while_publishing_says_how_many_were_published(
    tmp_path: Path, protocol: str
) -> None:
    term = Terminal("pipeline", *PROTOCOLS[protocol], "--messages", "2000000", cwd=tmp_path)
    term.wait_for(r"publishing  \[")  # (the first thousand accepted)
    seconds, lines = _interrupt(term)
    assert term.proc.returncode == 130, term.text[-3000:]
    said = [line for line in lines if not re.match(r"publishing  \[[#.]{20}\]  ", line)]
    assert len(said) == 1 and said[0] == lines[-1], lines
    match = re.fullmatch(
        r"amqp-sansio pipeline: interrupted while publishing \(published ([\d,]+) of "
        r"2,000,000\)",
        said[0],
    )
    assert match is not None, lines
    assert 1000 <= int(match[1].replace(",", "")) < 2_000_000
    assert seconds < 2.0, f"{seconds:.2f} s from SIGINT to exit"
    assert "starting Spark" not in term.text


@pytest.mark.alone
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVM's processes in /proc")
def test_ctrl_c_while_spark_starts_kills_the_jvm_being_started(tmp_path: Path) -> None:
    term = Terminal("bench", "spark", "--messages", "200", cwd=tmp_path)
    term.wait_for(r"starting Spark: master local\[\*\]")
    deadline = time.monotonic() + 30
    while not (spark := term.spark()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert spark, "the JVM is a child of the command, in a session of its own"
    seconds, lines = _interrupt(term)
    assert term.proc.returncode == 130, term.text[-3000:]
    assert lines == [
        "amqp-sansio bench spark: interrupted while starting Spark (published 200 of 200, "
        "received 200 of 200)"
    ]
    assert seconds < 2.0, f"{seconds:.2f} s from SIGINT to exit"
    assert _gone(spark) == set(), "a process of the JVM's survived"


_ACCOUNTING = re.compile(
    r"^sent ([\d,]+), processed ([\d,]+), duplicates ([\d,]+), lost ([\d,]+); "
    r"([\d,]+) records/s",
    re.M,
)

#: Every line the pipeline may write to a terminal's stderr on a normal run: a stage's
#: first line, its bar, its last line.
_OURS = [
    r"publishing: 200 orders to orders-\w{8} at amqp://127\.0\.0\.1:\d+",
    r"publishing  \[[#.]{20}\]  +[\d,]+ / 200(  [\d,]+ msg/s)?(  \w+ left)?",
    r"publishing: 200 / 200 in \d+s(, [\d,]+ msg/s)?",
    r"starting Spark: master local\[\*\]",
    r"starting Spark: done in \d+s",
    r"processing: a streaming query, micro-batches of up to 20,000 orders",
    r"processing  \[[#.]{20}\]  +[\d,]+ / 200(  [\d,]+ msg/s)?(  \w+ left)?",
    r"processing: 200 / 200 in \d+s(, [\d,]+ msg/s)?",
    r"reading back: the totals from revenue-\w{8}",
    r"reading back: done in \d+s",
]


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds the JVM's processes in /proc")
def test_the_readme_command_runs_from_a_directory_with_another_amqp_sansio(
    tmp_path: Path,
) -> None:
    """The README runs ``amqp-sansio pipeline`` in a checkout, whose ``amqp_sansio/`` is the
    core without ``adapters``. Spark's Python workers put their working directory first on
    their import path, so they must not start there (they failed to load the data source).
    Here the directory holds a package of that name that cannot be imported at all.

    The run is on a terminal: its stderr holds our lines only (no JVM or Spark warning),
    the stages in order from the start (publishing before Spark is up), each bar reaching
    its total; no process of the JVM's is left after it."""
    decoy = tmp_path / "amqp_sansio"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the decoy in the working directory')\n")
    term = Terminal("pipeline", "--messages", "200", cwd=tmp_path, env={"PYTHONPATH": ""})
    term.wait_for(r"processing  \[")
    spark = term.spark()
    assert spark, "the JVM is a child of the command, in a session of its own"
    try:
        term.proc.wait(timeout=300)
    finally:
        term.kill()
        term.close()
    assert term.proc.returncode == 0, term.text[-2000:]
    match = _ACCOUNTING.search(term.stdout)
    assert match is not None, term.stdout
    assert [int(g.replace(",", "")) for g in match.groups()[:4]] == [200, 200, 0, 0]
    shown = [line for line in re.split(r"\r\n|\r|\n", term.text.replace("\033[K", "")) if line]
    strays = [line for line in shown if not any(re.fullmatch(p, line) for p in _OURS)]
    assert strays == [], strays
    ends = [line for line in shown if re.fullmatch(r"[\w ]+: ([\d,]+ / [\d,]+|done) in .*", line)]
    assert [line.split(":")[0] for line in ends] == [
        "publishing",
        "starting Spark",
        "processing",
        "reading back",
    ]
    assert ends[0].startswith("publishing: 200 / 200 in ")
    assert ends[2].startswith("processing: 200 / 200 in ")
    assert any(re.fullmatch(r"processing  \[#{20}\]  200 / 200.*", line) for line in shown)
    # What stays on the terminal: each stage's last line (the bars gave way to them).
    assert [line.split("\r\033[K")[-1] for line in term.text.split("\n")][:-1] == [
        line + "\r" for line in ends
    ]
    assert _gone(spark) == set(), "a process of the JVM's survived"


# -- AMQP 0-9-1 ---------------------------------------------------------------------------------


def _run_pipeline(*argv: str, cwd: Path) -> tuple[dict[str, Any], str]:
    """``amqp-sansio pipeline ARGV --json`` as a script runs it (stderr not a terminal): its
    JSON object and its stderr, once it has exited 0."""
    done = subprocess.run(
        [*amqp_sansio_command(), "pipeline", *argv, "--json"],
        capture_output=True,
        text=True,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    outcome: dict[str, Any] = json.loads(done.stdout)
    return outcome, done.stderr


def _accounted(outcome: dict[str, Any], count: int) -> None:
    assert (outcome["sent"], outcome["processed"], outcome["duplicates"], outcome["lost"]) == (
        count,
        count,
        0,
        0,
    )
    assert sum(t["orders"] for t in outcome["totals"]) == count
    expected: Counter[tuple[str, str]] = Counter()
    for order in pipeline.orders(count):
        minute = (order.ts - pipeline.START) // 60_000
        expected[f"2026-01-01 00:{minute:02d}", order.region] += 1
    assert {(t["minute"], t["region"]): t["orders"] for t in outcome["totals"]} == dict(expected)


def test_the_pipeline_runs_on_091_against_the_embedded_broker(tmp_path: Path) -> None:
    """``--protocol 0-9-1`` with nothing else: the embedded broker, spoken to in 0-9-1 from
    the publishing to the reading back (its queues declared first)."""
    outcome, err = _run_pipeline("--protocol", "0-9-1", "--messages", "300", cwd=tmp_path)
    _accounted(outcome, 300)
    assert err == ""  # no progress when stderr is not a terminal, nothing of Spark's


@pytest.fixture
def rabbit_queues() -> Iterator[tuple[str, list[str]]]:
    """RabbitMQ's URL and two queue names of this test's own, deleted after it."""
    from amqp_sansio.adapters import sockets

    url = rabbitmq_url()
    run = uuid.uuid4().hex[:10]
    queues = [f"amqp-sansio-pipeline-orders-{run}", f"amqp-sansio-pipeline-totals-{run}"]
    try:
        yield url, queues
    finally:
        with sockets.connect(url, protocol="0-9-1") as conn:
            channel = conn.channel()
            for queue in queues:
                channel.queue_delete(queue)


def test_the_pipeline_runs_on_091_against_rabbitmq(
    tmp_path: Path, rabbit_queues: tuple[str, list[str]]
) -> None:
    """Against RabbitMQ: the two queues are declared durable (declaring them again as
    transient is refused: 406), every order and every total was acked (both empty after),
    and the password is not shown in the progress lines."""
    from amqp_sansio.adapters import sockets

    from amqp_sansio.amqp091 import client

    url, queues = rabbit_queues
    outcome, err = _run_pipeline(
        *("--protocol", "0-9-1", "--url", url, "--orders", queues[0], "--results", queues[1]),
        *("--messages", "400", "--progress"),
        cwd=tmp_path,
    )
    _accounted(outcome, 400)
    assert f"publishing: 400 orders to {queues[0]} at " in err, err
    password = urllib.parse.urlsplit(url).password
    assert not password or f":{password}@" not in err, err
    assert "reading back: done in " in err, err
    with sockets.connect(url, protocol="0-9-1") as conn:
        for queue in queues:
            ok = conn.channel().queue_declare(queue, durable=True)
            assert ok.message_count == 0, (queue, ok)
            with pytest.raises(client.ChannelClosedError) as refused:
                conn.channel().queue_declare(queue, durable=False)
            assert refused.value.reply_code == 406, refused.value


def test_a_091_queue_declared_otherwise_is_refused_in_one_line_before_spark(
    tmp_path: Path, rabbit_queues: tuple[str, list[str]]
) -> None:
    """A queue that exists transient (the pipeline declares its queues durable): RabbitMQ
    refuses the declaration (406), which is the command's one line, exit status 3, before
    anything is published or Spark starts."""
    from amqp_sansio.adapters import sockets

    url, queues = rabbit_queues
    with sockets.connect(url, protocol="0-9-1") as conn:
        conn.channel().queue_declare(queues[0], durable=False)
    done = subprocess.run(
        [
            *amqp_sansio_command(),
            "pipeline",
            "--protocol",
            "0-9-1",
            "--url",
            url,
            "--orders",
            queues[0],
            "--results",
            queues[1],
            "--progress",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1].startswith("amqp-sansio pipeline: error: "), lines
    assert "406 PRECONDITION_FAILED" in lines[-1] and "durable" in lines[-1], lines
    assert not any(line.startswith("starting Spark") for line in lines), lines
    assert done.stdout == ""
