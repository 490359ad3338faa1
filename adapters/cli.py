"""The ``amqp-sansio`` command.

``amqp-sansio bench codec [--json] [--seconds S]`` measures the codec against
python-qpid-proton (when it is installed) on the same message, in the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import bench


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command == "bench" and args.bench == "codec":
        results = bench.codec_benchmark(seconds=args.seconds)
        if args.json:
            print(json.dumps(results, indent=2))
        else:
            print(bench.format_table("codec: one typical message, encode and decode", results))
        return 0
    return 2  # pragma: no cover - argparse rejects anything else


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
