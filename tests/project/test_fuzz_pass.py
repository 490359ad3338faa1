"""A bounded fuzz pass over the decoders and the engine, in the test suite (the harness is
fuzz/harness.py).

The invariant: decode, the frame parser and Message.decode return normally or raise
DecodeError / FramingError / UnsupportedProtocolError, and whatever decodes re-encodes to a
stable canonical form; a server-role Connection fed arbitrary bytes (after a header, or a
header and an open) returns events, answers every protocol error with a frame carrying it,
sends only well-formed frames, and never raises; the broker's selector parser returns a
selector or raises SelectorError, and a selector evaluates to TRUE, FALSE or UNKNOWN; the
broker core (fuzz/broker_core.py), fed arbitrary bytes by any of its three protocols from
scratch or after a valid handshake, never raises, and an open connection it ends has its
close on the wire.
Environment knobs, for a longer or different pass:

* ``AMQP_SANSIO_FUZZ_ITERATIONS`` (default 350000) and ``AMQP_SANSIO_FUZZ_SEED``
  (default 1; ``random`` for a fresh one, printed on failure),
* ``AMQP_SANSIO_FUZZ_SECONDS``: the time cap of the codec's mutation pass (default 25),
* ``AMQP_SANSIO_FUZZ_ENGINE_SECONDS``: the time cap of the engine's (default 4),
* ``AMQP_SANSIO_FUZZ_PARSER_SECONDS``: the time cap of the selector parser's (default 3),
* ``AMQP_SANSIO_FUZZ_BROKER_SECONDS``: the time cap of the broker core's (default 5, which
  its six targets share round robin),
* ``AMQP_SANSIO_FUZZ_EXAMPLES``: Hypothesis examples per test (default 400).
"""

from __future__ import annotations

import importlib.util
import os
import random
import sys
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import ROOT

import amqp_sansio.framing.amqp10

FUZZ_DIR = ROOT / "fuzz"


def _load(name: str, filename: str) -> ModuleType:
    """Import a file of fuzz/ by path: the repository root need not be on sys.path."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, FUZZ_DIR / filename)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


harness = _load("amqp_sansio_fuzz_harness", "harness.py")

TARGETS = sorted(harness.TARGETS)
ITERATIONS = int(os.environ.get("AMQP_SANSIO_FUZZ_ITERATIONS", "350000"))
_seed = os.environ.get("AMQP_SANSIO_FUZZ_SEED", "1")
SEED = random.randrange(2**32) if _seed == "random" else int(_seed)
SECONDS = float(os.environ.get("AMQP_SANSIO_FUZZ_SECONDS", "25"))
ENGINE_SECONDS = float(os.environ.get("AMQP_SANSIO_FUZZ_ENGINE_SECONDS", "4"))
PARSER_SECONDS = float(os.environ.get("AMQP_SANSIO_FUZZ_PARSER_SECONDS", "3"))
BROKER_SECONDS = float(os.environ.get("AMQP_SANSIO_FUZZ_BROKER_SECONDS", "5"))
EXAMPLES = int(os.environ.get("AMQP_SANSIO_FUZZ_EXAMPLES", "400"))

fuzz_settings = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# -- regression corpus ------------------------------------------------------------------------

_OPEN = {name: issue for issue in harness.KNOWN_ISSUES for name in issue.regressions}


def _regression_params() -> list[object]:
    params = []
    for target, name, data in harness.regression_cases():
        marks = []
        if name in _OPEN:
            marks.append(
                pytest.mark.xfail(
                    strict=True,
                    raises=AssertionError,
                    reason=f"open core bug {_OPEN[name].id}: {_OPEN[name].summary} (when it is "
                    "fixed, remove the KnownIssue from fuzz/harness.py)",
                )
            )
        params.append(pytest.param(target, name, data, marks=marks, id=name))
    return params


def test_every_open_issue_has_its_regression_files() -> None:
    names = {name for _, name, _ in harness.regression_cases()}
    missing = sorted(set(_OPEN) - names)
    assert not missing, f"KNOWN_ISSUES names regression files that do not exist: {missing}"


@pytest.mark.parametrize(("target", "name", "data"), _regression_params())
def test_regression(target: str, name: str, data: bytes) -> None:
    _, finding = harness.execute(target, data)
    if finding is None:
        return
    expected = _OPEN.get(name)
    if expected is not None and finding.issue == expected.id:
        raise AssertionError(f"still fails as known issue {expected.id}:\n{finding.describe()}")
    pytest.fail(f"regression {name} fails:\n{finding.describe()}")


# -- the harness itself -------------------------------------------------------------------------


def test_seed_corpus_is_mostly_valid() -> None:
    """Mutation only finds deep bugs when it starts from inputs that decode."""
    for target, seeds in harness.seed_corpus().items():
        accepted = 0
        for data in seeds:
            label, finding = harness.execute(target, data)
            assert finding is None or finding.issue is not None, finding.describe()
            accepted += label.startswith("ok")
        assert accepted >= len(seeds) // 2, f"only {accepted}/{len(seeds)} {target} seeds decode"


def test_harness_reports_unexpected_exceptions(monkeypatch: pytest.MonkeyPatch) -> None:
    import amqp_sansio

    def broken(data: bytes) -> object:
        raise KeyError("not a remote error")

    monkeypatch.setattr(amqp_sansio, "decode", broken)
    _, finding = harness.execute("decode", b"\x40")
    assert finding is not None and finding.stage == "crash" and finding.issue is None
    stats = harness.run(50, 0, targets=["decode"])
    assert not stats.ok and stats.failures[0].stage == "crash"


def test_harness_reports_an_unstable_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    import amqp_sansio

    real_encode = amqp_sansio.encode
    calls = []

    def drifting(value: object) -> bytes:
        calls.append(value)
        return real_encode(value) if len(calls) == 1 else b"\x41"

    monkeypatch.setattr(amqp_sansio, "encode", drifting)
    _, finding = harness.execute("decode", b"\x40")
    assert finding is not None and finding.stage == "unstable"


def test_frames_target_compares_chunkings() -> None:
    stream = harness.seed_corpus()["frames"][0]
    for chunks in ([1] * len(stream), [3, 5, 7] * len(stream), [len(stream)]):
        assert harness.fuzz_frames(stream, chunks=chunks).startswith("ok:Open")


def test_atheris_entry_point_imports_without_atheris() -> None:
    module = _load("amqp_sansio_fuzz_atheris_main", "atheris_main.py")
    for target in ("frames", "server", "server-opened"):
        one = module.make_test_one_input(harness, target)
        for data in harness.seed_corpus()[target]:
            one(data)


# -- the engine's targets -----------------------------------------------------------------------


def test_server_seeds_reach_deep_states() -> None:
    """The seeds are a client engine's side of whole conversations: replayed, they get as far
    as deliveries, dispositions, detaches, ends and closes."""
    kinds = set()
    for target in harness.ENGINE_TARGETS:
        for data in harness.seed_corpus()[target]:
            assert harness.check(target, data) is None
            kinds.update(harness.execute(target, data)[0].split("|", 1)[1].split(","))
    for kind in ("DeliveryReceived", "DeliveryAborted", "DeliveryUpdated", "LinkDetached"):
        assert kind in kinds


def test_server_target_reports_an_engine_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    import amqp_sansio

    real = amqp_sansio.Connection.receive_data

    def broken(self: amqp_sansio.Connection, data: bytes, now: float) -> list[object]:
        events = real(self, data, now)
        if any(isinstance(e, amqp_sansio.events.SessionBegun) for e in events):
            raise KeyError("an engine bug")
        return list(events)

    monkeypatch.setattr(amqp_sansio.Connection, "receive_data", broken)
    seed = harness.seed_corpus()["server-opened"][0]
    _, finding = harness.execute("server-opened", seed)
    assert finding is not None and finding.stage == "crash" and finding.issue is None


def test_server_target_reports_an_unanswered_protocol_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ProtocolError event must come with the close, end or detach that carries it."""
    import amqp_sansio

    real = amqp_sansio.Connection.data_to_send

    def silent(self: amqp_sansio.Connection) -> bytes:
        out = real(self)
        return b"" if self.state is amqp_sansio.ConnectionState.END else out

    monkeypatch.setattr(amqp_sansio.Connection, "data_to_send", silent)
    bad_frame = b"\x00\x00\x00\x0c\x02\x00\x00\x00\x00\x53\x99\x45"  # an unknown performative
    _, finding = harness.execute("server-opened", bad_frame)
    assert finding is not None and finding.stage == "unanswered", finding


def test_server_chunking_covers_both_styles() -> None:
    """Some inputs are cut anywhere, others only within frames; both cover every byte."""
    import amqp_sansio

    styles = set()
    for data in harness.seed_corpus()["server"]:
        whole = amqp_sansio.framing.amqp10.AMQP_HEADER + data
        sizes = harness._server_chunks(whole, data)
        assert sum(sizes) >= len(whole)
        styles.add(sizes == harness._chunk_sizes(data))
    assert styles == {True, False}


# -- the bounded mutation pass ------------------------------------------------------------------


def test_bounded_mutation_pass() -> None:
    stats = harness.run(ITERATIONS, SEED, targets=harness.CODEC_TARGETS, time_limit=SECONDS)
    print(stats.summary())
    assert stats.ok, (
        f"fuzzing found new failures (replay with AMQP_SANSIO_FUZZ_SEED={SEED}; "
        f"see fuzz/README.md to triage):\n{stats.summary()}"
    )
    for target in harness.CODEC_TARGETS:
        assert stats.accepted[target] > 0, f"no mutated {target} input decoded: seeds broken?"


def test_bounded_engine_pass() -> None:
    """The engine's targets, a few seconds: about a thousand conversations each."""
    stats = harness.run(
        ITERATIONS,
        SEED,
        targets=harness.ENGINE_TARGETS,
        time_limit=ENGINE_SECONDS,
        # However slow the machine, every target gets a few hundred conversations.
        min_iterations=300 * len(harness.ENGINE_TARGETS),
    )
    print(stats.summary())
    assert stats.ok, (
        f"fuzzing the engine found new failures (replay with AMQP_SANSIO_FUZZ_SEED={SEED}; "
        f"see fuzz/README.md to triage):\n{stats.summary()}"
    )
    for target in harness.ENGINE_TARGETS:
        assert stats.accepted[target] > 0, f"no mutated {target} input went without error"


def test_bounded_selector_pass() -> None:
    """The selector parser's target, a few seconds: tens of thousands of texts."""
    stats = harness.run(ITERATIONS, SEED, targets=harness.PARSER_TARGETS, time_limit=PARSER_SECONDS)
    print(stats.summary())
    assert stats.ok, (
        f"fuzzing the selector parser found new failures (replay with "
        f"AMQP_SANSIO_FUZZ_SEED={SEED}; see fuzz/README.md to triage):\n{stats.summary()}"
    )
    for target in harness.PARSER_TARGETS:
        assert stats.accepted[target] > 0, f"no mutated {target} input parsed: seeds broken?"
        assert stats.rejected[target] > 0, f"every mutated {target} input parsed?"


def test_selector_target_reports_an_unexpected_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    from amqp_sansio.broker import Selector

    def broken(self: Selector, fields: object) -> object:
        raise IndexError("a parser bug")

    monkeypatch.setattr(Selector, "evaluate", broken)
    _, finding = harness.execute("selector", b"a = 1")
    assert finding is not None and finding.stage == "crash" and finding.issue is None


# -- Hypothesis -----------------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@fuzz_settings
@given(data=st.binary(max_size=600))
def test_hypothesis_binary(target: str, data: bytes) -> None:
    harness.check(target, data)


_SEEDS = harness.seed_corpus()
_edits = st.lists(
    st.tuples(st.integers(0, 4096), st.integers(0, 8), st.binary(max_size=6)), max_size=4
)


def _apply(seed: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    buf = bytearray(seed)
    for at, remove, insert in edits:
        at %= len(buf) + 1
        buf[at : at + remove] = insert
    return bytes(buf)


@pytest.mark.parametrize("target", TARGETS)
@fuzz_settings
@given(st.data())
def test_hypothesis_edited_seeds(target: str, data: st.DataObject) -> None:
    seed = data.draw(st.sampled_from(_SEEDS[target]), label="seed")
    edits = data.draw(_edits, label="edits")
    harness.check(target, _apply(seed, edits))


def test_bounded_broker_pass() -> None:
    """The broker core's targets (fuzz/broker_core.py), every protocol, a few seconds."""
    stats = harness.run(ITERATIONS, SEED, targets=harness.BROKER_TARGETS, time_limit=BROKER_SECONDS)
    print(stats.summary())
    assert stats.ok, (
        f"fuzzing the broker core found new failures (replay with AMQP_SANSIO_FUZZ_SEED={SEED};"
        f" see fuzz/README.md to triage):\n{stats.summary()}"
    )
    for target in harness.BROKER_TARGETS:
        assert stats.accepted[target] > 0, f"no mutated {target} input went without error"


def test_broker_target_reports_a_broker_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    """The broker core's target fails on an exception from the broker (stage crash) and on
    an open connection ended without a close on the wire (stage no-close)."""
    from amqp_sansio.broker import BrokerConnection091

    seed = harness.seed_corpus()["broker-091-opened"][0]
    assert harness.execute("broker-091-opened", seed)[1] is None
    real = BrokerConnection091.data_to_send

    def silent(self: BrokerConnection091) -> bytes:
        out = real(self)
        return b"" if self.engine.closed or self.engine.state.value == "closing" else out

    monkeypatch.setattr(BrokerConnection091, "data_to_send", silent)
    close = harness.seed_corpus()["broker-091-opened"][-1]  # the client's connection.close
    _, finding = harness.execute("broker-091-opened", close)
    assert finding is not None and finding.stage == "no-close", finding
    monkeypatch.setattr(BrokerConnection091, "receive_data", lambda *a, **k: 1 / 0)
    _, finding = harness.execute("broker-091", seed)
    assert finding is not None and finding.stage == "crash" and finding.issue is None


def test_broker_010_target_reports_a_broker_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for the broker core's 0-10 targets: an open connection ended without
    connection.close or close-ok on the wire (stage no-close), a command after the
    broker's close-ok (after-close), an exception from the broker (crash)."""
    from amqp_sansio.broker import BrokerConnection010
    from amqp_sansio.definitions import amqp010 as spec
    from amqp_sansio.framing.amqp010 import SegmentType, Track, encode_assembly

    seed = harness.seed_corpus()["broker-010-opened"][0]
    assert harness.execute("broker-010-opened", seed)[1] is None
    close = harness.seed_corpus()["broker-010-opened"][-1]  # the client's connection.close
    assert harness.execute("broker-010-opened", close)[1] is None
    real = BrokerConnection010.data_to_send
    sync = spec.encode_command(spec.ExecutionSync())
    [stray] = encode_assembly(1, Track.COMMAND, [(SegmentType.COMMAND, sync)], 4096)

    def silent(self: BrokerConnection010) -> bytes:
        out = real(self)
        return b"" if self.engine.closed else out

    def chatty(self: BrokerConnection010) -> bytes:
        out = real(self)
        return out + stray if self.engine.closed else out

    for patched, stage in ((silent, "no-close"), (chatty, "after-close")):
        monkeypatch.setattr(BrokerConnection010, "data_to_send", patched)
        _, finding = harness.execute("broker-010-opened", close)
        assert finding is not None and finding.stage == stage, finding
    monkeypatch.setattr(BrokerConnection010, "receive_data", lambda *a, **k: 1 / 0)
    _, finding = harness.execute("broker-010", seed)
    assert finding is not None and finding.stage == "crash" and finding.issue is None
