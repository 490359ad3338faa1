"""Coverage-guided fuzzing of amqp-sansio with atheris (libFuzzer for Python).

Usage, from the repository root (``pip install atheris`` first)::

    python -m fuzz.harness seeds --out fuzz/corpus
    python fuzz/atheris_main.py --target=decode fuzz/corpus/decode -max_total_time=3600

``--target`` is one of ``decode``, ``frames``, ``message`` (the codec) or ``server``,
``server-opened`` (the protocol engine in the server role, fed a client's bytes after a header,
or after a header and an open); every other argument goes to libFuzzer (corpus directories,
``-max_total_time``, ``-jobs``, ``-dict`` ...). Inputs that
match an already reported core bug (``harness.KNOWN_ISSUES``) are ignored unless
``--include-known`` is given, so that a campaign is not stopped by a bug it already knows.

atheris is imported only inside :func:`main`, so this module imports without it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


def _load_harness() -> ModuleType:
    try:
        from fuzz import harness
    except ImportError:  # run as a script: fuzz/ itself is on sys.path
        import harness  # type: ignore[no-redef]
    return harness


def _split_args(argv: Sequence[str]) -> tuple[str, bool, list[str]]:
    target = "decode"
    include_known = False
    rest = [argv[0]]
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "--target" and args:
            target = args.pop(0)
        elif arg.startswith("--target="):
            target = arg.split("=", 1)[1]
        elif arg == "--include-known":
            include_known = True
        else:
            rest.append(arg)
    return target, include_known, rest


def make_test_one_input(
    harness: ModuleType, target: str, include_known: bool = False
) -> Callable[[bytes], None]:
    """The libFuzzer entry point for one target: raises on a failure, returns otherwise."""
    run_target = harness.TARGETS[target]

    def test_one_input(data: bytes) -> None:
        try:
            run_target(data)
        except Exception as exc:
            finding = harness.classify(harness.Finding(target, data, exc))
            if finding.issue is not None and not include_known:
                return
            raise

    return test_one_input


def _instrument_generated_code(atheris: Any) -> None:
    """The composite encoders and decoders are generated with ``exec`` at import time, so the
    import hook does not see them; instrument them explicitly."""
    from amqp_sansio.codec.amqp10 import decoder, encoder

    functions = list(decoder.DESCRIBED.values()) + list(encoder._ENCODERS.values())
    for f in {id(f): f for f in functions}.values():
        code = getattr(f, "__code__", None)
        if code is not None and code.co_filename.startswith(("<decoder", "<encoder")):
            atheris.instrument_func(f)


def main(argv: Sequence[str] | None = None) -> None:
    try:
        import atheris
    except ImportError:
        sys.exit("atheris is not installed: pip install atheris")
    target, include_known, libfuzzer_args = _split_args(list(argv or sys.argv))
    with atheris.instrument_imports(include=["amqp_sansio"]):
        import amqp_sansio  # noqa: F401  (instrumented here, before the harness imports it)
    harness = _load_harness()
    if target not in harness.TARGETS:
        sys.exit(f"unknown target {target!r}; choose from {', '.join(harness.TARGETS)}")
    _instrument_generated_code(atheris)
    atheris.Setup(libfuzzer_args, make_test_one_input(harness, target, include_known))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
