"""The fuzz targets of amqp-sansio, registered by name, with a seed corpus, a pure-Python
mutation fuzzer and a command line.

Twenty-two targets take arbitrary bytes; each is a function in its family's module:

``decode``, ``message`` (``amqp10/codec.py``)
    :func:`amqp_sansio.decode` and :meth:`amqp_sansio.Message.decode`.
``frames`` (``amqp10/frames.py``)
    a :class:`amqp_sansio.framing.amqp10.FrameParser` fed the bytes whole and then in chunks,
    taking protocol headers and frames until it returns ``None``.
``server``, ``server-opened`` (``amqp10/engine.py``)
    a server-role :class:`amqp_sansio.Connection` fed the bytes in chunks after an AMQP
    header (and, for ``server-opened``, a valid open), with a small application answering
    its events.
``sasl-server``, ``sasl-client`` (``amqp10/sasl.py``)
    a connection that requires SASL, server or client role, fed the bytes after a SASL
    header.
``websocket-server`` (``websocket.py``)
    the WebSocket layer (the AMQP WebSocket binding) in the server role around a server
    connection, fed an upgrade and frames in chunks.
``proxy-client`` (``proxy.py``)
    the HTTP proxy tunnel's layer (HTTP CONNECT) around a client connection, fed a proxy's
    reply and the broker's bytes in chunks.
``selector`` (``selector.py``)
    the broker's message-selector parser (:class:`amqp_sansio.broker.Selector`), fed the
    bytes as UTF-8 text, and what parses evaluated against a few messages.
``amqp091-codec`` (``amqp091/codec.py``)
    the AMQP 0-9-1 codec with no framing around it: a field table, a method frame's
    payload and a content header's payload.
``amqp010-codec`` (``amqp010/codec.py``)
    the AMQP 0-10 codec with no segment around it: a map, a control's, a command's and a
    header segment's payload; its errors must carry a 0-10 code.
``amqp091-frames`` (``amqp091/frames.py``)
    an AMQP 0-9-1 :class:`amqp_sansio.framing.amqp091.FrameParser` fed the bytes whole and in
    chunks; its errors must carry a 0-9-1 reply code.
``amqp091-engine`` (``amqp091/engine.py``)
    a server-role AMQP 0-9-1 :class:`amqp_sansio.engine.amqp091.Connection` fed the bytes in
    chunks, with a small broker answering its events.
``amqp010-engine`` (``amqp010/engine.py``)
    a server-role AMQP 0-10 :class:`amqp_sansio.engine.amqp010.Connection` fed the bytes in
    chunks, with a small application answering its events.
``amqp010-frames`` (``amqp010/frames.py``)
    an AMQP 0-10 :class:`amqp_sansio.framing.amqp010.AssemblyParser` fed the bytes whole and
    in chunks; its errors must be the 0-10 ``FramingError`` with close-code 501.
``broker-091``, ``broker-091-opened`` (``amqp091/broker.py``)
    the I/O-free broker core (:class:`amqp_sansio.broker.Broker`), one 0-9-1 connection
    driven as the server drives it (``broker_core.py``), from scratch or after a valid
    handshake.
``broker-10``, ``broker-10-opened`` (``amqp10/broker.py``)
    the same with one AMQP 1.0 connection.
``broker-010``, ``broker-010-opened`` (``amqp010/broker.py``)
    the same with one AMQP 0-10 connection.

The invariant for the codec's six: a target returns normally, or raises an error that
blames the remote side (:data:`fuzz.common.REMOTE_ERRORS`: ``DecodeError``,
``FramingError``, ``UnsupportedProtocolError``). Any other exception is a failure. When the
bytes decode, the result must encode, the encoding must decode, and encoding that again must
give the same bytes (the canonical form is stable). For frames, feeding the bytes in chunks
must give the same headers, frames and error as feeding them whole.

The invariant for the selector: parsing returns a selector or raises ``SelectorError``
(with a position inside the text); evaluating one returns TRUE, FALSE or UNKNOWN and raises
nothing.

The invariant for the engines' five and the broker core's six: nothing raises at all (a
peer's bytes are answered with events, or with a close carrying an error condition), every
protocol error is answered on the wire, and what is sent is well-formed (each module says
how it checks).

:func:`run` is a bounded mutation fuzzer over :func:`seed_corpus` that needs nothing beyond
the standard library; ``fuzz/atheris_main.py`` runs the same targets under atheris. Run this
file for a command line: ``python -m fuzz.harness --help`` from the repository root.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import importlib.util
import random
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path


def _import_fuzz_package() -> None:
    """Make the package ``fuzz`` importable when this file was loaded by path rather than
    as ``fuzz.harness`` (tests/project/test_fuzz_pass.py loads it so, and ``python
    fuzz/atheris_main.py`` imports it as ``harness``): fuzz/ is imported as ``fuzz`` from
    its own folder, sys.path untouched."""
    if __package__ or "fuzz" in sys.modules:
        return
    here = Path(__file__).resolve().parent
    spec = importlib.util.spec_from_file_location(
        "fuzz", here / "__init__.py", submodule_search_locations=[str(here)]
    )
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["fuzz"] = package
    spec.loader.exec_module(package)


_import_fuzz_package()

# The target families, then what they share (imported once the package is importable).
from fuzz import proxy as proxy_layer  # noqa: E402
from fuzz import selector  # noqa: E402
from fuzz import websocket as websocket_layer  # noqa: E402
from fuzz.amqp010 import broker as broker010  # noqa: E402
from fuzz.amqp010 import codec as codec010  # noqa: E402
from fuzz.amqp010 import engine as engine010  # noqa: E402
from fuzz.amqp010 import frames as frames010  # noqa: E402
from fuzz.amqp091 import broker as broker091  # noqa: E402
from fuzz.amqp091 import codec as codec091  # noqa: E402
from fuzz.amqp091 import engine as engine091  # noqa: E402
from fuzz.amqp091 import frames as frames091  # noqa: E402
from fuzz.amqp10 import broker as broker10  # noqa: E402
from fuzz.amqp10 import codec as codec10  # noqa: E402
from fuzz.amqp10 import engine as engine10  # noqa: E402
from fuzz.amqp10 import frames as frames10  # noqa: E402
from fuzz.amqp10 import sasl as sasl10  # noqa: E402
from fuzz.common import (  # noqa: E402
    FRAME_MAX,
    REMOTE_ERRORS,
    InvariantViolation,
    chunk_sizes,
    label_error,
)
from fuzz.mutation import MAX_INPUT, corpus_tokens, mutate  # noqa: E402

__all__ = [
    "BROKER_TARGETS",
    "CODEC_TARGETS",
    "ENGINE_TARGETS",
    "PARSER_TARGETS",
    "FRAME_MAX",
    "KNOWN_ISSUES",
    "MAX_INPUT",
    "REGRESSIONS",
    "TARGETS",
    "REMOTE_ERRORS",
    "SLOW_SECONDS",
    "Finding",
    "FuzzStats",
    "InvariantViolation",
    "KnownIssue",
    "check",
    "classify",
    "execute",
    "fuzz_amqp010_codec",
    "fuzz_amqp091_engine",
    "fuzz_amqp091_codec",
    "fuzz_amqp091_frames",
    "fuzz_amqp010_frames",
    "fuzz_amqp010_engine",
    "fuzz_decode",
    "fuzz_frames",
    "fuzz_message",
    "fuzz_sasl_client",
    "fuzz_sasl_server",
    "fuzz_selector",
    "fuzz_server",
    "fuzz_server_opened",
    "minimize",
    "mutate",
    "regression_cases",
    "run",
    "seed_corpus",
    "write_seed_corpus",
]

#: A single execution slower than this (seconds) is reported as a failure.
SLOW_SECONDS = 2.0

REGRESSIONS = Path(__file__).resolve().parent / "regressions"

# The targets, by the names they had when they lived in this module.
fuzz_decode = codec10.fuzz_decode
fuzz_message = codec10.fuzz_message
fuzz_frames = frames10.fuzz_frames
fuzz_server = engine10.fuzz_server
fuzz_server_opened = engine10.fuzz_server_opened
fuzz_sasl_server = sasl10.fuzz_sasl_server
fuzz_sasl_client = sasl10.fuzz_sasl_client
fuzz_selector = selector.fuzz_selector
fuzz_amqp091_codec = codec091.fuzz_amqp091_codec
fuzz_amqp010_codec = codec010.fuzz_amqp010_codec
fuzz_amqp091_frames = frames091.fuzz_amqp091_frames
fuzz_amqp091_engine = engine091.fuzz_amqp091_engine
fuzz_amqp010_frames = frames010.fuzz_amqp010_frames
fuzz_amqp010_engine = engine010.fuzz_amqp010_engine
# The chunkings, which tests/project/test_fuzz_pass.py checks.
_chunk_sizes = chunk_sizes
_server_chunks = engine10.server_chunks

#: Every target by name, in the order the runner takes them (round robin).
TARGETS: dict[str, Callable[[bytes], str]] = {
    "decode": fuzz_decode,
    "frames": fuzz_frames,
    "message": fuzz_message,
    "server": fuzz_server,
    "server-opened": fuzz_server_opened,
    "sasl-server": fuzz_sasl_server,
    "sasl-client": fuzz_sasl_client,
    "websocket-server": websocket_layer.fuzz_websocket_server,
    "proxy-client": proxy_layer.fuzz_proxy_client,
    "selector": fuzz_selector,
    "amqp091-codec": fuzz_amqp091_codec,
    "amqp091-frames": fuzz_amqp091_frames,
    "amqp091-engine": fuzz_amqp091_engine,
    "amqp010-frames": fuzz_amqp010_frames,
    "amqp010-codec": fuzz_amqp010_codec,
    "amqp010-engine": fuzz_amqp010_engine,
    "broker-091": broker091.fuzz_broker_091,
    "broker-091-opened": broker091.fuzz_broker_091_opened,
    "broker-10": broker10.fuzz_broker_10,
    "broker-10-opened": broker10.fuzz_broker_10_opened,
    "broker-010": broker010.fuzz_broker_010,
    "broker-010-opened": broker010.fuzz_broker_010_opened,
}

#: The codec's targets (fast, thousands of inputs a second) and the engine's (slower).
CODEC_TARGETS = (
    "decode",
    "frames",
    "message",
    "amqp091-codec",
    "amqp091-frames",
    "amqp010-frames",
    "amqp010-codec",
)
ENGINE_TARGETS = (
    "server",
    "server-opened",
    "sasl-server",
    "sasl-client",
    "websocket-server",
    "proxy-client",
    "amqp091-engine",
    "amqp010-engine",
)
#: Text parsers: the broker's message selectors.
PARSER_TARGETS = ("selector",)
#: The broker core's targets, every protocol (fuzz/broker_core.py).
BROKER_TARGETS = (
    "broker-091",
    "broker-091-opened",
    "broker-10",
    "broker-10-opened",
    "broker-010",
    "broker-010-opened",
)
#: Their seeds, made once at import (1.0 and 0-10 client engines' conversations with the
#: broker core: made before any test patches the engine or the broker).
_BROKER_SEEDS: dict[str, list[bytes]] = {
    **broker091.seeds(),
    **broker10.seeds(),
    **broker010.seeds(),
}


# ---------------------------------------------------------------------------------------------
# findings and known issues
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Finding:
    """An input that made a target fail: broke the invariant, raised something unexpected, or
    ran too long."""

    target: str
    data: bytes
    error: BaseException
    issue: str | None = None  # the id of the KnownIssue it matches, if any

    @property
    def stage(self) -> str:
        return getattr(self.error, "stage", "crash")

    @property
    def signature(self) -> str:
        cause = self.error.__cause__ or self.error
        return f"{self.target}/{self.stage}/{label_error(cause)}"

    def describe(self) -> str:
        return (
            f"{self.signature}\n  input ({len(self.data)} bytes): {self.data.hex()}\n"
            f"  error: {self.error!r:.600}"
        )


@dataclasses.dataclass(frozen=True)
class KnownIssue:
    """A core bug already reported. Findings that match it are counted, not failed, so that a
    fuzz pass still fails on anything new; its regression inputs are expected to fail until
    the bug is fixed (then the strict xfail in tests/project/test_fuzz_pass.py says so)."""

    id: str
    summary: str
    matches: Callable[[Finding], bool]
    regressions: tuple[str, ...] = ()


#: None open: the two this harness found first (an array of nulls that decoded but could not
#: be re-encoded, and a message of null sections that encoded to nothing) are fixed, and their
#: inputs stay in fuzz/regressions/ as ordinary regression cases.
KNOWN_ISSUES: tuple[KnownIssue, ...] = ()


def classify(finding: Finding) -> Finding:
    for issue in KNOWN_ISSUES:
        try:
            if issue.matches(finding):
                finding.issue = issue.id
                break
        except Exception:  # a matcher must never hide a finding
            continue
    return finding


def execute(target: str, data: bytes) -> tuple[str, Finding | None]:
    """Run one target on one input: its outcome label and, if it failed, the finding."""
    try:
        return TARGETS[target](data), None
    except Exception as exc:
        return f"FAIL:{type(exc).__name__}", classify(Finding(target, data, exc))


def check(target: str, data: bytes, *, allow_known: bool = True) -> Finding | None:
    """Run one input; raise on a new failure, return a finding that matches a known issue."""
    _, finding = execute(target, data)
    if finding is None:
        return None
    if finding.issue is not None and allow_known:
        return finding
    raise AssertionError(finding.describe()) from finding.error


def regression_cases() -> list[tuple[str, str, bytes]]:
    """``(target, name, data)`` for every file under fuzz/regressions/<target>/."""
    cases = []
    for target in TARGETS:
        folder = REGRESSIONS / target
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.is_file() and not path.name.startswith("."):
                    cases.append((target, f"{target}/{path.name}", path.read_bytes()))
    return cases


# ---------------------------------------------------------------------------------------------
# seed corpus
# ---------------------------------------------------------------------------------------------


def seed_corpus() -> dict[str, list[bytes]]:
    """Valid (and a few nearly valid) inputs for each target, so mutation starts from good
    bytes (each family's ``seeds()``). Deterministic."""
    corpus = {
        **codec10.seeds(),
        **frames10.seeds(),
        **engine10.seeds(),
        **sasl10.seeds(),
        **websocket_layer.seeds(),
        **proxy_layer.seeds(),
        **selector.seeds(),
        **codec091.seeds(),
        **frames091.seeds(),
        **engine091.seeds(),
        **frames010.seeds(),
        **engine010.seeds(),
        **codec010.seeds(),
        **{target: list(seeds) for target, seeds in _BROKER_SEEDS.items()},
    }
    return {k: list(dict.fromkeys(v)) for k, v in corpus.items()}


def write_seed_corpus(directory: str | Path) -> dict[str, int]:
    """Write the seed corpus as files (one per input) under ``directory/<target>/``."""
    counts = {}
    for target, entries in seed_corpus().items():
        folder = Path(directory) / target
        folder.mkdir(parents=True, exist_ok=True)
        for data in entries:
            name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
            (folder / name).write_bytes(data)
        counts[target] = len(entries)
    return counts


# ---------------------------------------------------------------------------------------------
# the bounded runner
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class FuzzStats:
    """What a :func:`run` did."""

    seed: int
    iterations: int = 0
    elapsed: float = 0.0
    executions: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    accepted: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    rejected: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    labels: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    corpus_sizes: dict[str, int] = dataclasses.field(default_factory=dict)
    failures: list[Finding] = dataclasses.field(default_factory=list)
    known: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    known_examples: dict[str, Finding] = dataclasses.field(default_factory=dict)
    slowest: tuple[float, str, bytes] = (0.0, "", b"")

    @property
    def ok(self) -> bool:
        return not self.failures

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {self.iterations} iterations in {self.elapsed:.1f}s, "
            f"slowest input {self.slowest[0] * 1000:.1f} ms ({self.slowest[1]})"
        ]
        for t in sorted(self.executions):
            lines.append(
                f"  {t:13} {self.executions[t]:7} runs, {self.accepted[t]:6} decoded, "
                f"{self.rejected[t]:6} rejected, {len(self.labels.get(t, ()))} "
                f"distinct outcomes, corpus {self.corpus_sizes.get(t, 0)}"
            )
        for issue, count in sorted(self.known.items()):
            lines.append(
                f"  known issue {issue}: {count} inputs, e.g. "
                f"{self.known_examples[issue].data.hex()}"
            )
        lines.append(
            f"  NEW FAILURES: {len(self.failures)}" if self.failures else "  no new failures"
        )
        lines += ["  " + f.describe().replace("\n", "\n  ") for f in self.failures[:10]]
        return "\n".join(lines)


def run(
    iterations: int,
    seed: int,
    *,
    targets: Iterable[str] | None = None,
    time_limit: float | None = None,
    min_iterations: int = 0,
    corpus: dict[str, list[bytes]] | None = None,
    max_len: int = MAX_INPUT,
    max_pool: int = 3000,
) -> FuzzStats:
    """Mutation-fuzz the targets for ``iterations`` inputs (round robin over the targets).

    Deterministic for a given ``seed`` unless ``time_limit`` (seconds) stops it early, which
    it does only after ``min_iterations`` inputs (on a loaded machine the time limit alone
    may leave a target too few).
    Inputs that give an outcome not seen before (a new error message, a new decoded type)
    join the pool that later inputs are mutated from: a cheap stand-in for coverage.
    Failures are collected, one per signature, not raised; those matching a
    :data:`KNOWN_ISSUES` entry are only counted.
    """
    names = list(targets or TARGETS)
    rng = random.Random(seed)
    seeds = corpus if corpus is not None else seed_corpus()
    tokens = corpus_tokens(seeds)
    pools = {t: list(seeds.get(t, ())) or [b""] for t in names}
    # Every target also mutates the others' seeds now and then (a frame payload is a message,
    # a message section is a value).
    everything = [x for t in names for x in pools[t]]
    stats = FuzzStats(seed=seed, labels={t: set() for t in names})
    seen_signatures: set[str] = set()
    start = time.perf_counter()
    for i in range(iterations):
        if (
            time_limit is not None
            and i % 64 == 0
            and i >= min_iterations
            and time.perf_counter() - start > time_limit
        ):
            break
        target = names[i % len(names)]
        pool = pools[target]
        parent = rng.choice(pool) if rng.random() < 0.9 else rng.choice(everything)
        data = mutate(parent, rng, pool, tokens, max_len)
        t0 = time.perf_counter()
        label, finding = execute(target, data)
        took = time.perf_counter() - t0
        stats.iterations += 1
        stats.executions[target] += 1
        if took > stats.slowest[0]:
            stats.slowest = (took, target, data)
        if took > SLOW_SECONDS and finding is None:
            finding = Finding(target, data, TimeoutError(f"one input took {took:.2f}s"))
        if finding is not None:
            if finding.issue is not None:
                stats.known[finding.issue] += 1
                stats.known_examples.setdefault(finding.issue, finding)
            elif finding.signature not in seen_signatures:
                seen_signatures.add(finding.signature)
                stats.failures.append(finding)
            continue
        if label.startswith("ok"):
            stats.accepted[target] += 1
        else:
            stats.rejected[target] += 1
        labels = stats.labels[target]
        if label not in labels or (label.startswith("ok") and rng.random() < 0.05):
            labels.add(label)
            if len(pool) < max_pool:
                pool.append(data)
            else:
                pool[rng.randrange(len(seeds.get(target, ())) or 1, max_pool)] = data
    stats.elapsed = time.perf_counter() - start
    stats.corpus_sizes = {t: len(p) for t, p in pools.items()}
    return stats


# ---------------------------------------------------------------------------------------------
# triage helpers
# ---------------------------------------------------------------------------------------------


def minimize(target: str, data: bytes, *, budget: int = 20000) -> bytes:
    """Shrink a failing input while it still fails with the same signature."""
    _, first = execute(target, data)
    if first is None:
        raise ValueError("the input does not fail")
    want = first.signature

    def fails(candidate: bytes) -> bool:
        _, f = execute(target, candidate)
        return f is not None and f.signature == want

    best = data
    tries = 0
    chunk = max(1, len(best) // 2)
    while chunk >= 1 and tries < budget:
        i = 0
        progressed = False
        while i < len(best) and tries < budget:
            candidate = best[:i] + best[i + chunk :]
            tries += 1
            if candidate and fails(candidate):
                best = candidate
                progressed = True
            else:
                i += chunk
        if not progressed:
            chunk //= 2
    for i in range(len(best)):  # simplify the bytes that are left
        for b in (0x00, 0x40):
            if best[i] != b and tries < budget:
                candidate = best[:i] + bytes((b,)) + best[i + 1 :]
                tries += 1
                if fails(candidate):
                    best = candidate
                    break
    return best


def _main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fuzz.harness",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="pure-Python mutation fuzzing")
    p_run.add_argument("--iterations", type=int, default=100_000)
    p_run.add_argument("--seed", type=int, default=None, help="default: random")
    p_run.add_argument("--time-limit", type=float, default=None, help="seconds")
    p_run.add_argument("--targets", default=",".join(TARGETS))
    p_run.add_argument(
        "--save",
        default="fuzz/corpus/crashes",
        help="directory for failing inputs (default: %(default)s)",
    )
    p_run.add_argument(
        "--include-known", action="store_true", help="save inputs that match known issues too"
    )
    p_seeds = sub.add_parser("seeds", help="write the seed corpus to a directory")
    p_seeds.add_argument("--out", default="fuzz/corpus")
    p_replay = sub.add_parser("replay", help="run one target on input files")
    p_replay.add_argument("--target", required=True, choices=sorted(TARGETS))
    p_replay.add_argument("files", nargs="+")
    p_min = sub.add_parser("minimize", help="shrink a failing input")
    p_min.add_argument("--target", required=True, choices=sorted(TARGETS))
    p_min.add_argument("file")
    p_min.add_argument("--out", default=None, help="default: FILE.min")
    args = parser.parse_args(argv)

    if args.command == "seeds":
        counts = write_seed_corpus(args.out)
        print(", ".join(f"{t}: {n}" for t, n in counts.items()), "seeds written to", args.out)
        return 0
    if args.command == "replay":
        status = 0
        for name in args.files:
            label, finding = execute(args.target, Path(name).read_bytes())
            if finding is None:
                print(f"{name}: ok ({label})")
            else:
                status = 1
                known = f" [known issue {finding.issue}]" if finding.issue else ""
                print(f"{name}: FAIL{known}\n  {finding.describe()}")
        return status
    if args.command == "minimize":
        small = minimize(args.target, Path(args.file).read_bytes())
        out = args.out or args.file + ".min"
        Path(out).write_bytes(small)
        print(f"{len(small)} bytes: {small.hex()} -> {out}")
        return 0
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    stats = run(args.iterations, seed, targets=args.targets.split(","), time_limit=args.time_limit)
    print(stats.summary())
    found = list(stats.failures)
    if args.include_known:
        found += list(stats.known_examples.values())
    if found:
        folder = Path(args.save)
        folder.mkdir(parents=True, exist_ok=True)
        for f in found:
            path = folder / f"{f.target}-{hashlib.sha1(f.data).hexdigest()[:16]}.bin"
            path.write_bytes(f.data)
            print("saved", path)
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(_main())
