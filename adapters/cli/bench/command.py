"""``amqp-sansio bench``: its subcommands' options and runs, each printing a table (or
``--json``) of our figure next to the peer's from the same run."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from amqp_sansio.client.url import URLError, parse_url

from .. import bench, options
from ..connect import EXIT_CONNECTION, EXIT_USAGE, CommandError
from ..progress import Progress
from . import every as bench_all_command
from . import spark as bench_spark_command

#: ``bench codec --protocol P``: the table's title, the benchmark and the peer it measures
#: against, for each protocol.
CODEC_BENCHES: dict[str, tuple[str, Callable[..., bench.Result], str]] = {
    "1.0": ("codec: one typical message, encode and decode", bench.codec_benchmark, "proton"),
    "0-9-1": (
        "codec 0-9-1: method frames and content headers, encode and decode",
        bench.codec091_benchmark,
        "pamqp",
    ),
    "0-10": (
        "codec 0-10: a message.transfer, its header and body, encode and decode",
        bench.codec010_benchmark,
        "qpid-python",
    ),
}

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add ``bench`` and its subcommands to the command's subparsers."""
    b = sub.add_parser(
        "bench",
        help="measure our speed next to the peer's (Proton, RabbitMQ) on the same work",
        description="Measure our speed next to a peer's on the same work, in the same run: "
        "each prints both figures and their ratio (machines are noisy: compare ratios from "
        "one run; docs/performance.rst). A peer that is not installed or does not answer is "
        "left out, saying so. Exit status: 0 measured, 2 usage error, 3 our side failed.",
    )
    bsub = b.add_subparsers(dest="bench", required=True)
    codec = bsub.add_parser(
        "codec",
        help="encode and decode one typical message (header, properties, "
        "five application properties, a 256-byte data body)",
        description="Encode and decode one typical message (header, properties, five "
        "application properties, a 256-byte data body) for --seconds each, ours and "
        "python-qpid-proton's; messages per second and the ratio. With --protocol 0-9-1: "
        "AMQP 0-9-1 method frames (basic.publish, basic.deliver) and content headers, "
        "encoded and decoded, ours and pamqp's. With --protocol 0-10: a message.transfer "
        "with its header and body, encoded and decoded, ours and qpid-python's.",
    )
    codec.add_argument(
        "--protocol",
        choices=tuple(CODEC_BENCHES),
        default="1.0",
        help="the protocol whose codec to measure: 1.0 against python-qpid-proton, 0-9-1 "
        "against pamqp, 0-10 against qpid-python's codec010 (default 1.0)",
    )
    codec.add_argument(
        "--json", action="store_true", help="print one JSON object with an entry per measurement"
    )
    codec.add_argument(
        "--seconds",
        type=options.seconds,
        default=1.0,
        help="time spent per measurement and implementation (default 1.0)",
    )
    pipe = bsub.add_parser(
        "pipe",
        help="two engines wired in memory: a client sender, a server receiver "
        "that accepts each message; messages per second",
        description="The protocol engine alone: a client sender and a server receiver "
        "wired in memory, each message accepted (or pre-settled), ours next to Proton's "
        "engine, in alternating rounds; or one --large message; --memory adds what our "
        "engines hold.",
    )
    pipe.add_argument(
        "--messages",
        type=options.positive_int,
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
        type=options.size,
        metavar="SIZE",
        help="instead: one message of SIZE (e.g. 64MiB, 1MiB, 100KiB) in frames of 64 KiB; "
        "MiB per second, next to Proton on the same work and to Proton's engine driven "
        "directly (large-engine)",
    )
    pipe.add_argument(
        "--memory",
        action="store_true",
        help="also report our engines' memory (tracemalloc): the peak while "
        "--memory-messages go through, and the bytes per delivery held unsettled; with "
        "--large, the copies of the body our sending and receiving sides make",
    )
    pipe.add_argument(
        "--memory-messages",
        type=options.positive_int,
        default=1_000_000,
        help="messages pushed through for the memory peak (default 1,000,000)",
    )
    pipe.add_argument(
        "--memory-unsettled",
        type=options.positive_int,
        default=10_000,
        help="deliveries held unsettled at both ends for the bytes per delivery (default 10,000)",
    )
    _rounds_options(pipe)
    bb = bsub.add_parser(
        "broker",
        help="one producer and one consumer through the reference broker over loopback",
        description="One producer and one consumer, at-least-once, through our reference "
        "broker over 127.0.0.1 (and with durable messages against a store), then through "
        "RabbitMQ when it answers; messages per second and the ratio to RabbitMQ.",
    )
    bb.add_argument(
        "--messages", type=options.positive_int, default=50_000, help="messages (default 50,000)"
    )
    bb.add_argument("--size", type=options.size, default=256, help="body bytes (default 256)")
    bb.add_argument(
        "--url", default=None, help="benchmark this running broker instead of starting one"
    )
    bb.add_argument(
        "--store",
        default=None,
        help="store directory of the durable run (default: a temporary directory)",
    )
    bb.add_argument(
        "--no-durable",
        action="store_true",
        help="skip the run with durable messages against a store",
    )
    bb.add_argument(
        "--rabbitmq",
        default=None,
        metavar="URL",
        help="the same workload against this RabbitMQ (default: $AMQP_SANSIO_RABBITMQ_URL, "
        "else amqp://guest:guest@127.0.0.1:5672, skipped if nothing answers)",
    )
    bb.add_argument("--no-rabbitmq", action="store_true", help="do not run against RabbitMQ")
    bb.add_argument("--json", action="store_true", help="print one JSON object")
    loop = bsub.add_parser(
        "loopback",
        help="a sender and a receiver in one process over 127.0.0.1, each message "
        "accepted; messages per second, ours next to Proton's Container (with --protocol "
        "0-9-1: through RabbitMQ, next to aio-pika and pika; with --protocol 0-10: "
        "through our broker, next to qpid.messaging)",
        description="A sender and a receiver in one process over 127.0.0.1 through one of "
        "our adapters, each message accepted, next to Proton's Container doing the same, "
        "in alternating rounds; messages per second and the ratio. With --protocol 0-9-1: "
        "a producer with publisher confirms and a consumer acking each message, through "
        "the RabbitMQ at --url, ours (asyncio and trio) next to aio-pika and pika; "
        "--broker adds our asyncio client through our broker next to the same client "
        "through RabbitMQ. With --protocol 0-10: a producer and a consumer accepting "
        "what it takes, through our broker (started for the run, in a process of its "
        "own), ours (sockets and asyncio) next to qpid.messaging, found in "
        "$AMQP_SANSIO_PEERS_DIR/qpid-python. Exit status: 0 measured, 2 usage error (or, "
        "with --protocol 0-10, qpid-python not found), 3 our side failed or RabbitMQ did "
        "not answer.",
    )
    loop.add_argument(
        "--protocol",
        choices=tuple(LOOPBACKS),
        default="1.0",
        help="1.0: sender and receiver connected to each other, against Proton; 0-9-1: "
        "through RabbitMQ, against aio-pika and pika; 0-10: through our broker, against "
        "qpid.messaging (default 1.0)",
    )
    loop.add_argument(
        "--adapter",
        choices=bench.LOOPBACK_ADAPTERS,
        default=None,
        help="our adapter to measure (default sockets; with --protocol 0-9-1 asyncio and "
        "trio, both; with --protocol 0-10 sockets and asyncio, both)",
    )
    loop.add_argument(
        "--url",
        default=None,
        help="--protocol 0-9-1: the RabbitMQ to run through (default "
        f"${bench.RABBITMQ_ENV}, else {bench.RABBITMQ_URL}); --protocol 1.0: a "
        "ws://HOST:PORT/PATH URL runs --websocket at that address (port 0: a free one)",
    )
    loop.add_argument(
        "--websocket",
        action="store_true",
        help="--protocol 1.0: what the AMQP WebSocket binding costs: ours over ws:// next "
        "to ours over TCP (the ratio is WebSocket's over TCP's), with --adapter asyncio "
        f"(the default here) or trio, at {bench.WEBSOCKET_URL} unless --url says",
    )
    loop.add_argument(
        "--broker",
        action="store_true",
        help="--protocol 0-9-1: also our asyncio client through our broker (started in a "
        "process of its own on a free port), next to the same client through RabbitMQ",
    )
    loop.add_argument(
        "--messages",
        type=options.positive_int,
        default=50_000,
        help="messages per round (default 50,000)",
    )
    loop.add_argument(
        "--size",
        type=options.size,
        default=bench.PIPE_BODY_SIZE,
        metavar="SIZE",
        help="each message's data body (e.g. 256, 1MiB; default 256 bytes)",
    )
    _rounds_options(loop)
    bench_spark_command.add_parser(bsub)
    bench_all_command.add_parser(bsub)
    b.set_defaults(run=run)


def _bench_broker(args: argparse.Namespace) -> int:
    """``bench broker``: ours (or the broker at ``--url``), ours with durable messages
    against a store, and RabbitMQ, on the same workload in the same run."""

    from ... import broker as broker_adapter

    n, size = args.messages, args.size
    figures = broker_adapter.benchmark(n, size=size, url=args.url)
    runs = [("ours" if args.url is None else "broker", figures)]
    if args.url is None and not args.no_durable:
        durable = broker_adapter.benchmark(n, size=size, durable=True, store_dir=args.store)
        figures["durable_run"] = durable
        runs.append(("ours, durable, store", durable))
    figures["rabbitmq"] = None
    rabbit_url = args.rabbitmq or os.environ.get(broker_adapter.RABBITMQ_ENV)
    if not args.no_rabbitmq:
        try:
            rabbit = broker_adapter.rabbitmq_benchmark(
                rabbit_url or broker_adapter.RABBITMQ_URL, n, size=size
            )
        except URLError as exc:
            print(f"amqp-sansio bench broker: error: --rabbitmq: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except Exception as exc:  # RabbitMQ is a reference: its failure is reported, not ours
            print(f"bench broker: the RabbitMQ run failed: {exc!r}", file=sys.stderr)
            rabbit = None
        if rabbit is None and rabbit_url is not None:
            print(f"bench broker: no RabbitMQ run at {parse_url(rabbit_url)}", file=sys.stderr)
        if rabbit is not None:
            figures["rabbitmq"] = rabbit
            figures["ratio"] = figures["rate"] / rabbit["rate"]
            runs.append(("RabbitMQ", rabbit))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(
        f"broker: {n:,} messages of {size} bytes, one producer and one consumer, "
        "at-least-once, over 127.0.0.1"
    )
    for name, run in runs:
        print(f"{name:>22}: {run['rate']:>9,.0f} msg/s ({run['seconds']:.2f} s)")
    if figures["rabbitmq"] is not None:
        print(f"{'ratio':>22}: {figures['ratio']:.2f} x RabbitMQ")
    return 0


def _rounds_options(parser: argparse.ArgumentParser) -> None:
    """The options of the benchmarks that alternate rounds of ours and Proton's."""
    parser.add_argument(
        "--rounds",
        type=options.positive_int,
        default=3,
        help="alternating rounds per implementation; each keeps its median (default 3)",
    )
    parser.add_argument(
        "--seconds",
        type=options.duration,
        default=0.0,
        help="keep alternating rounds until each implementation has run this long "
        "(default 0: --rounds only)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object with an entry per measurement"
    )


def _loopback091(args: argparse.Namespace) -> int:
    """``bench loopback --protocol 0-9-1``: ours and the peers through one RabbitMQ."""
    prog = "amqp-sansio bench loopback"
    adapters = bench.LOOPBACK091_ADAPTERS if args.adapter is None else (args.adapter,)
    if args.adapter is not None and args.adapter not in bench.LOOPBACK091_ADAPTERS:
        print(
            f"{prog}: error: --protocol 0-9-1 measures the adapters "
            f"{', '.join(bench.LOOPBACK091_ADAPTERS)}, not {args.adapter}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    raw = args.url or os.environ.get(bench.RABBITMQ_ENV) or bench.RABBITMQ_URL
    try:
        url = parse_url(raw)
    except URLError as exc:
        print(f"{prog}: error: --url: {exc}", file=sys.stderr)
        return EXIT_USAGE
    why = bench.rabbitmq_answers(url.host, url.port)
    if why is not None:
        print(f"{prog}: error: no RabbitMQ at {url}: {why}", file=sys.stderr)
        return EXIT_CONNECTION
    title = (
        f"loopback 0-9-1 through {url}: {args.messages:,} messages of {args.size:,} bytes, "
        f"published with confirms, consumed with acks (prefetch {bench.PREFETCH:,})"
    )
    return _run_rounds(
        args,
        title,
        bench.loopback091_benchmark,
        {"url": url.unredacted(), "adapters": adapters},
        broker="broker_url" if args.broker else None,
        missing=[p for p in bench.LOOPBACK091_PEERS if not bench.peer_installed(p)],
    )


def _run_rounds(
    args: argparse.Namespace,
    title: str,
    benchmark: Callable[..., bench.Result],
    arguments: dict[str, Any],
    *,
    broker: str | None,
    missing: Sequence[str] = (),
    note: str | None = None,
) -> int:
    """The run of a ``bench loopback`` that alternates rounds through a broker (its exit
    status): each of the ``missing`` peers said to be left out, then ``benchmark`` called
    with ``arguments``, the options every such benchmark takes (``messages``, ``size``,
    ``rounds``, ``seconds``) and a progress bar, and told of a peer's failure (said, and
    left out); with ``broker``, our broker is started for the run and its URL passed as
    that keyword. Ours failing is an error (exit status 3); else the results are printed,
    as JSON (``--json``) or as a table under ``title``, followed by ``note``."""
    prog = "amqp-sansio bench loopback"
    for peer in missing:
        print(
            f"bench loopback: {peer} is not installed: left out (pip install {peer})",
            file=sys.stderr,
        )

    def peer_failed(peer: str, exc: BaseException) -> None:
        print(f"bench loopback: {peer}'s run failed, left out: {exc!r}", file=sys.stderr)

    progress = Progress(args.messages)
    try:
        with bench.broker_for_bench(broker is not None) as broker_url:
            if broker is not None:
                arguments = {**arguments, broker: broker_url}
            results = benchmark(
                messages=args.messages,
                size=args.size,
                rounds=args.rounds,
                seconds=args.seconds,
                progress=progress,
                on_peer_failure=peer_failed,
                **arguments,
            )
    except Exception as exc:  # ours failed (a peer's failure leaves it out instead)
        progress.clear()
        print(f"{prog}: error: our side failed: {exc!r}", file=sys.stderr)
        return EXIT_CONNECTION
    progress.clear()
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(bench.format_pairs(title, results))
    if note is not None:
        print(note)
    return 0


def _loopback(args: argparse.Namespace) -> tuple[str, bench.Result]:
    """``bench loopback`` (1.0): through ``--adapter`` (sockets by default) next to Proton;
    with ``--websocket`` or ``--url ws://...``, over WebSocket next to TCP (asyncio by
    default)."""
    if args.url is not None:
        try:
            bench.websocket_address(args.url)
        except ValueError as exc:
            raise CommandError(f"--url: {exc}", EXIT_USAGE) from None
        args.websocket = True
    websocket = (args.url or bench.WEBSOCKET_URL) if args.websocket else None
    if websocket is not None:
        args.adapter = args.adapter or "asyncio"
        if args.adapter not in bench.WEBSOCKET_RUNNERS:
            adapters = " or ".join(bench.WEBSOCKET_RUNNERS)
            raise CommandError(f"--websocket runs through --adapter {adapters}", EXIT_USAGE)
        title = (
            f"loopback over WebSocket ({args.adapter}): {args.messages:,} messages of "
            f"{args.size:,} bytes, each accepted, over {websocket} next to TCP"
        )
    else:
        args.adapter = args.adapter or "sockets"
        title = (
            f"loopback ({args.adapter}): {args.messages:,} messages of {args.size:,} "
            "bytes, each accepted by the receiver, sender to receiver over 127.0.0.1"
        )
    progress = Progress(args.messages)
    try:
        results = bench.loopback_benchmark(
            args.messages,
            adapter=args.adapter,
            size=args.size,
            rounds=args.rounds,
            seconds=args.seconds,
            progress=progress,
            websocket=websocket,
        )
    finally:
        progress.clear()
    return title, results


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
        if args.large is not None:
            results.update(bench.large_copies(args.large))
    return title, results


def _loopback10(args: argparse.Namespace) -> int:
    """``bench loopback`` (``--protocol 1.0``): sender and receiver connected to each
    other, ours next to Proton's Container."""
    if args.broker:
        print(
            "amqp-sansio bench loopback: error: --broker is for --protocol 0-9-1",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        title, results = _loopback(args)
    except CommandError as exc:
        print(f"amqp-sansio bench loopback: error: {exc}", file=sys.stderr)
        return exc.status
    _print(args, title, results, "tcp" if args.websocket else "proton")
    return 0


def _loopback010(args: argparse.Namespace) -> int:
    """``bench loopback --protocol 0-10``: ours and qpid.messaging through our broker
    (started for the run in a process of its own)."""
    prog = "amqp-sansio bench loopback"
    if args.broker or args.url is not None:
        print(
            f"{prog}: error: --url and --broker are for --protocol 0-9-1 (0-10 runs through "
            "our broker, started for the run)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    adapters = bench.LOOPBACK010_DEFAULT if args.adapter is None else (args.adapter,)
    if bench.qpid_folder() is None:
        print(
            f"{prog}: error: qpid-python (the 0-10 peer) is not found: set "
            "AMQP_SANSIO_PEERS_DIR to the folder holding qpid-python/",
            file=sys.stderr,
        )
        return EXIT_USAGE

    title = (
        f"loopback 0-10 through our broker: {args.messages:,} messages of {args.size:,} "
        f"bytes, transferred in windows of {bench.WINDOW:,}, accepted {bench.ACCEPT_BATCH} "
        "at a time"
    )
    note = (
        "msg/s over the wall clock; client CPU: messages per second of the client's CPU "
        "time (this process's), the broker's not counted"
    )
    return _run_rounds(
        args, title, bench.loopback010_benchmark, {"adapters": adapters}, broker="url", note=note
    )


#: ``bench loopback --protocol P``: the run of each protocol (its exit status).
LOOPBACKS: dict[str, Callable[[argparse.Namespace], int]] = {
    "1.0": _loopback10,
    "0-9-1": _loopback091,
    "0-10": _loopback010,
}


def _print(args: argparse.Namespace, title: str, results: bench.Result, peer: str) -> None:
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(bench.format_table(title, results, peer))


def run(args: argparse.Namespace) -> int:
    """Run ``bench codec``, ``pipe``, ``loopback`` or ``broker`` and print its table."""
    if args.bench == "broker":
        return _bench_broker(args)
    if args.bench == "loopback":
        return LOOPBACKS[args.protocol](args)
    peer = "proton"
    if args.bench == "codec":
        title, benchmark, peer = CODEC_BENCHES[args.protocol]
        results = benchmark(seconds=args.seconds)
    else:
        title, results = _pipe(args)
    _print(args, title, results, peer)
    return 0
