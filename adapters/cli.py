"""The ``amqp-sansio`` command.

``amqp-sansio bench codec [--json] [--seconds S]`` measures the codec against
python-qpid-proton (when it is installed) on the same message, in the same run.

``amqp-sansio bench pipe [--messages N] [--settled] [--large SIZE] [--memory] [--json]``
measures the protocol engine: two engines wired in memory, a sender and a receiver, ours
next to Proton's, in the same run; ``--memory`` adds what our engines hold.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import bench


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _size(text: str) -> int:
    try:
        return bench.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amqp-sansio", description="AMQP 1.0, sans I/O: tools and benchmarks."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="measure our speed next to Qpid Proton's on the same work")
    bsub = b.add_subparsers(dest="bench", required=True)
    codec = bsub.add_parser(
        "codec",
        help="encode and decode one typical message (header, properties, "
        "five application properties, a 256-byte data body)",
    )
    codec.add_argument(
        "--json", action="store_true", help="print one JSON object with an entry per measurement"
    )
    codec.add_argument(
        "--seconds",
        type=float,
        default=1.0,
        help="time spent per measurement and implementation (default 1.0)",
    )
    pipe = bsub.add_parser(
        "pipe",
        help="two engines wired in memory: a client sender, a server receiver "
        "that accepts each message; messages per second",
    )
    pipe.add_argument(
        "--messages",
        type=_positive_int,
        default=50_000,
        help="messages per round, each a data body of 256 bytes (default 50,000)",
    )
    pipe.add_argument(
        "--settled",
        action="store_true",
        help="send pre-settled (snd-settle-mode settled) instead of waiting for each "
        "receiver's accept",
    )
    pipe.add_argument(
        "--large",
        type=_size,
        metavar="SIZE",
        help="instead: one message of SIZE (e.g. 64MiB, 1MiB, 100KiB) in frames of 64 KiB; "
        "MiB per second",
    )
    pipe.add_argument(
        "--memory",
        action="store_true",
        help="also report our engines' memory (tracemalloc): the peak while "
        "--memory-messages go through, and the bytes per delivery held unsettled",
    )
    pipe.add_argument(
        "--memory-messages",
        type=_positive_int,
        default=1_000_000,
        help="messages pushed through for the memory peak (default 1,000,000)",
    )
    pipe.add_argument(
        "--memory-unsettled",
        type=_positive_int,
        default=10_000,
        help="deliveries held unsettled at both ends for the bytes per delivery (default 10,000)",
    )
    pipe.add_argument(
        "--rounds",
        type=_positive_int,
        default=3,
        help="alternating rounds per implementation; each keeps its median (default 3)",
    )
    pipe.add_argument(
        "--seconds",
        type=float,
        default=0.0,
        help="keep alternating rounds until each implementation has run this long "
        "(default 0: --rounds only)",
    )
    pipe.add_argument(
        "--json", action="store_true", help="print one JSON object with an entry per measurement"
    )
    return parser


def _pipe(args: argparse.Namespace) -> tuple[str, bench.Result]:
    if args.large is not None:
        title = (
            f"pipe --large: one message of {args.large:,} bytes, "
            f"{bench.LARGE_FRAME_SIZE // 1024} KiB frames, in memory"
        )
        results = bench.large_benchmark(args.large, rounds=args.rounds, seconds=args.seconds)
    else:
        settle = "pre-settled" if args.settled else "each accepted by the receiver"
        title = (
            f"pipe: {args.messages:,} messages of {bench.PIPE_BODY_SIZE} bytes, {settle}, "
            "sender to receiver in memory"
        )
        results = bench.pipe_benchmark(
            args.messages, settled=args.settled, rounds=args.rounds, seconds=args.seconds
        )
    if args.memory:
        results.update(
            bench.memory_benchmark(args.memory_messages, unsettled=args.memory_unsettled)
        )
    return title, results


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "bench" and args.bench == "codec":
        title = "codec: one typical message, encode and decode"
        results = bench.codec_benchmark(seconds=args.seconds)
    elif args.command == "bench" and args.bench == "pipe":
        title, results = _pipe(args)
    else:  # pragma: no cover - argparse rejects anything else
        return 2
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(bench.format_table(title, results))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
