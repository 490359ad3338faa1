"""The ``amqp-sansio`` command.

``amqp-sansio send URL [--count N] [--size BYTES | --body TEXT] [--settled] [--durable]``
sends messages to the URL's address; ``amqp-sansio receive URL [--count N] [--credit C]
[--print]`` receives them. Both take ``--timeout S`` and the connection options
``--cafile``, ``--insecure-skip-verify``, ``--sasl-mechanism`` and ``--allow-insecure-auth``;
see docs/cli.rst for the exit statuses.

``amqp-sansio bench codec [--json] [--seconds S]`` measures the codec against
python-qpid-proton (when it is installed) on the same message, in the same run.

``amqp-sansio bench pipe [--messages N] [--settled] [--large SIZE] [--memory] [--json]``
measures the protocol engine: two engines wired in memory, a sender and a receiver, ours
next to Proton's, in the same run; ``--memory`` adds what our engines hold.

``amqp-sansio broker [--host H] [--port P] [--store DIR] [--users FILE] [--allow-anonymous]
[connection limits]`` runs the reference broker (docs/broker.rst); ``amqp-sansio bench
broker [--messages N] [--size B] [--url U] [--store DIR] [--no-durable] [--rabbitmq URL |
--no-rabbitmq] [--json]`` measures one producer and one consumer through it (with durable
messages too), and through RabbitMQ when it answers.

``amqp-sansio bench loopback [--adapter sockets|asyncio] [--messages N] [--json]`` measures a sender
and a receiver in one process over 127.0.0.1, ours next to Proton's Container.

``amqp-sansio pipeline [--messages N] [--url URL] [--progress] [--json]`` runs the Spark
pipeline (sample orders through a Structured Streaming query and back, with its
accounting); ``amqp-sansio bench spark [--messages N] [--json]`` measures a streaming
query's read rate next to the asyncio adapter's (:mod:`amqp_sansio.adapters.cli.pipeline`).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import attrs

from amqp_sansio import __version__
from amqp_sansio.client.url import URLError, parse_url

from . import bench, send_receive
from .connect import EXIT_CONNECTION, EXIT_USAGE, ClientOptions, CommandError


def _bench_broker(args: argparse.Namespace) -> int:
    """``bench broker``: ours (or the broker at ``--url``), ours with durable messages
    against a store, and RabbitMQ, on the same workload in the same run."""
    import os

    from .. import broker as broker_adapter

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
        type=_positive_int,
        default=3,
        help="alternating rounds per implementation; each keeps its median (default 3)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=0.0,
        help="keep alternating rounds until each implementation has run this long "
        "(default 0: --rounds only)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object with an entry per measurement"
    )


def _connection_limits(brk: argparse.ArgumentParser) -> None:
    """The broker's group "connections": its connection limits, each a field of
    :class:`~amqp_sansio.broker.BrokerConfig` (its ``dest``, its default), listed in
    docs/broker.rst "Limits" and docs/defaults.rst."""
    from amqp_sansio.broker import BrokerConfig

    fields = attrs.fields_dict(BrokerConfig)
    group = brk.add_argument_group(
        "connections",
        "limits on connections and their handshake, on by default (docs/broker.rst, "
        "Limits); 'none' lifts a limit that has 'or none'",
    )
    group.add_argument(
        "--allow-anonymous",
        action="store_true",
        help="let an open broker (no --users) listen beyond the loopback (e.g. --host "
        "0.0.0.0): anyone who can reach it may then use it",
    )
    for name, kind, text in _CONNECTION_LIMITS:
        default = fields[name].default
        optional = "None" in str(fields[name].type)
        group.add_argument(
            "--" + name.replace("_", "-"),
            type=_limit(kind, optional),
            default=default,
            dest=name,
            metavar="S" if kind is float else "N",
            help=f"{text} (default {default}{' or none' if optional else ''})",
        )


def _limit(kind: type, optional: bool) -> Any:
    """An option's value: a number at least 0 (or ``none``, where the limit may be lifted)."""

    def parse(text: str) -> Any:
        if optional and text.strip().lower() == "none":
            return None
        value = kind(text)
        if value < 0:
            raise ValueError(text)
        return value

    parse.__name__ = kind.__name__  # (argparse names the type in its errors)
    return parse


#: The ``dest`` of the group "connections" (BrokerConfig fields), each option's type and help.
_CONNECTION_LIMITS: tuple[tuple[str, type, str], ...] = (
    ("handshake_timeout", float, "seconds from the TCP connection to the client's open"),
    ("max_connections", int, "connections in all"),
    ("max_connections_per_address", int, "connections from one source address"),
    ("max_connections_per_user", int, "open connections of one authenticated user"),
    ("channel_max", int, "highest channel a client may use (channel-max; sessions - 1)"),
    ("handle_max", int, "highest link handle per session (handle-max; links - 1)"),
    ("open_max_frame_size", int, "largest frame before the client's open, in bytes"),
    ("login_delay_after", int, "failed logins from one address before they are slowed"),
    ("login_delay", float, "seconds the next failed login's answer waits (doubling)"),
    ("login_delay_max", float, "the longest wait of a failed login's answer, seconds"),
    ("login_failure_window", float, "seconds after which failed logins are forgotten"),
)


def _broker_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The broker's connection limits from the command line, checked (ValueError)."""
    from amqp_sansio.broker import BrokerConfig

    limits = {name: getattr(args, name) for name, _, _ in _CONNECTION_LIMITS}
    BrokerConfig(**limits)  # (ValueError for a value out of its range)
    return limits


def _whole(text: str) -> int:
    """A whole number as people write them (``1_000``, ``1,000``)."""
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _positive_int(text: str) -> int:
    value = _whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _count(text: str) -> int:
    """A count of messages: a whole number, 0 or more."""
    value = _whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _port(text: str) -> int:
    """A TCP port: 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {value}")
    return value


#: The forms of a Spark master URL (the Spark docs' "Master URLs"): local, local[N],
#: local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT (several for standby
#: masters), mesos://, k8s://, yarn.
_SPARK_MASTER = re.compile(
    r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|(spark|mesos|k8s)://\S+|yarn"
)


def _master(text: str) -> str:
    """A Spark master URL, checked before Spark starts (a bad one ends in a Java stack
    trace otherwise)."""
    if not _SPARK_MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"not a Spark master URL: {text!r} (local, local[N], local[*], "
            "spark://HOST:PORT, yarn, k8s://HOST:PORT, mesos://HOST:PORT)"
        )
    return text


def _size(text: str) -> int:
    try:
        return bench.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def _or_none(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An option's value, or ``none`` (no limit)."""

    def parse_or_none(text: str) -> Any:
        return None if text.strip().lower() == "none" else parse(text)

    parse_or_none.__name__ = parse.__name__  # (argparse names the type in its errors)
    return parse_or_none


def _messages_and_queues(brk: argparse.ArgumentParser) -> None:
    """``amqp-sansio broker``'s options on messages and queues: each a field of
    :class:`~amqp_sansio.broker.BrokerConfig` (its ``dest``), defaults in docs/defaults.rst
    and docs/broker.rst "Limits"."""
    import attrs

    from amqp_sansio.broker import BrokerConfig

    default: dict[str, Any] = {field.name: field.default for field in attrs.fields(BrokerConfig)}
    group = brk.add_argument_group(
        "messages and queues",
        "limits on by default (docs/broker.rst, Limits); 'none' lifts a limit",
    )
    mib = 1024 * 1024
    group.add_argument(
        "--max-message-size",
        type=_or_none(_size),
        default=default["max_message_size"],
        metavar="SIZE",
        help="largest message taken (e.g. 64MiB), announced in a publisher's attach; a larger "
        "one detaches its link with amqp:link:message-size-exceeded "
        f"(default {default['max_message_size'] // mib}MiB)",
    )
    group.add_argument(
        "--max-queue-depth",
        type=_or_none(_positive_int),
        default=default["max_queue_depth"],
        metavar="N",
        help=f"messages one queue holds (default {default['max_queue_depth']:,})",
    )
    group.add_argument(
        "--max-queue-bytes",
        type=_or_none(_size),
        default=default["max_queue_bytes"],
        metavar="SIZE",
        help=f"bytes one queue holds (default {default['max_queue_bytes'] // mib}MiB)",
    )
    group.add_argument(
        "--queue-overflow",
        choices=("reject-publish", "drop-head"),
        default=default["queue_overflow"],
        help="a full queue's answer to a new message: reject-publish (rejected, "
        "amqp:resource-limit-exceeded; the default) or drop-head (the oldest goes to "
        "--dead-letter, or is dropped)",
    )
    group.add_argument(
        "--dead-letter",
        default=None,
        metavar="ADDRESS",
        help="the queue that rejected and dropped-head messages go to (default: none, "
        "they are dropped)",
    )
    group.add_argument(
        "--no-auto-delete",
        dest="auto_delete",
        action="store_false",
        help="keep queues made on first use (by default one is deleted once it has no "
        "link and no message)",
    )
    group.add_argument(
        "--queue-expiry",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="delete a queue made on first use, messages and all, after it has had no "
        "link this long (default: never while it holds messages)",
    )
    group.add_argument(
        "--max-address-length",
        type=_or_none(_positive_int),
        default=default["max_address_length"],
        metavar="BYTES",
        help="longest source or target address; a longer one is refused with "
        f"amqp:invalid-field (default {default['max_address_length']:,})",
    )
    group.add_argument(
        "--max-unsettled-per-link",
        type=_or_none(_positive_int),
        default=default["max_unsettled_per_link"],
        metavar="N",
        help="unsettled deliveries the broker holds on one link: a consumer waits for "
        "settlements, a publisher's credit stops "
        f"(default {default['max_unsettled_per_link']:,})",
    )


#: The ``dest`` of :func:`_messages_and_queues`' options: BrokerConfig fields.
_MESSAGES_AND_QUEUES = (
    "max_message_size",
    "max_queue_depth",
    "max_queue_bytes",
    "queue_overflow",
    "dead_letter",
    "auto_delete",
    "queue_expiry",
    "max_address_length",
    "max_unsettled_per_link",
)


def _connection_options() -> argparse.ArgumentParser:
    """The options of every command that connects to a broker."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "url",
        metavar="URL",
        help="amqp://[user:password@]host[:port]/ADDRESS, or amqps:// for TLS (port 5671); "
        "the address is the path without its first slash (amqp://h//queue/q is /queue/q)",
    )
    common.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        metavar="S",
        help="give up when any one step (connecting, the broker's answer, the next message "
        "or outcome) takes longer than S seconds (default 10)",
    )
    conn = common.add_argument_group("connection")
    conn.add_argument(
        "--cafile",
        metavar="PEM",
        help="verify the broker's certificate against these CAs instead of the system's "
        "(amqps:// only)",
    )
    conn.add_argument(
        "--insecure-skip-verify",
        action="store_true",
        help="do not verify the broker's certificate or host name (amqps:// only; "
        "anyone in the middle can read and change the traffic)",
    )
    conn.add_argument(
        "--sasl-mechanism",
        metavar="NAME",
        help="use this SASL mechanism (PLAIN, SCRAM-SHA-256, ANONYMOUS, ...), or 'none' for "
        "no SASL; by default the strongest both sides support",
    )
    conn.add_argument(
        "--allow-insecure-auth",
        action="store_true",
        help="send the URL's credentials over unencrypted amqp:// to a host that is not "
        "a loopback address",
    )
    return common


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="amqp-sansio", description="AMQP 1.0, sans I/O: tools and benchmarks."
    )
    parser.add_argument("--version", action="version", version=f"amqp-sansio {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    common = _connection_options()
    send = sub.add_parser(
        "send",
        parents=[common],
        help="send messages to an address; exit status 0 when every one was accepted",
        description="Send messages to the URL's address and print a summary. Exit status: "
        "0 every message accepted (or sent pre-settled), 1 some not accepted, 2 usage "
        "error, 3 connection, TLS, authentication or link refused, 4 timed out.",
    )
    send.add_argument(
        "--count", type=_positive_int, default=1, metavar="N", help="messages (default 1)"
    )
    body = send.add_mutually_exclusive_group()
    body.add_argument(
        "--size",
        type=_size,
        metavar="BYTES",
        help="a data body of this many bytes (e.g. 256, 64KiB); by default the text 'message N'",
    )
    body.add_argument("--body", metavar="TEXT", help="this text as every message's body")
    send.add_argument(
        "--settled", action="store_true", help="send pre-settled: no outcome is awaited"
    )
    send.add_argument("--durable", action="store_true", help="mark the messages durable (header)")
    receive = sub.add_parser(
        "receive",
        parents=[common],
        help="receive messages from an address and accept each; exit status 0 when all came",
        description="Receive messages from the URL's address, accept each and print a "
        "summary. Exit status: 0 all received and accepted, 1 some could not be accepted, "
        "2 usage error, 3 connection, TLS, authentication or link refused, 4 timed out, "
        "130 interrupted before --count came.",
    )
    receive.add_argument(
        "--count",
        type=_count,
        default=1,
        metavar="N",
        help="messages (default 1); 0: until interrupted (Ctrl-C), then the summary",
    )
    receive.add_argument(
        "--credit",
        type=_positive_int,
        default=100,
        metavar="C",
        help="messages the broker may send ahead, granted again once used up (default 100)",
    )
    receive.add_argument(
        "--print",
        action="store_true",
        dest="print_bodies",
        help="print each body on a line of its own (the summary then goes to stderr)",
    )
    brk = sub.add_parser(
        "broker",
        help="run the reference broker until SIGINT or SIGTERM",
        description="Run the reference broker until SIGINT or SIGTERM. Without --users it "
        "is OPEN (anyone who reaches it may use it): it says so at start, and listens only "
        "on a loopback address unless --allow-anonymous.",
    )
    brk.add_argument("--host", default="127.0.0.1", help="address to listen on")
    brk.add_argument("--port", type=_port, default=5672, help="port (0: any free port)")
    brk.add_argument(
        "--store",
        default=None,
        help="directory of the durable message store (SQLite; made if missing): durable "
        "messages survive a restart",
    )
    brk.add_argument(
        "--users",
        default=None,
        help="file of users (SASL) and access rules; without it the broker is OPEN: any "
        "client may connect (anonymously) and send and receive anywhere, which it says at "
        "start, and it listens only on a loopback address unless --allow-anonymous",
    )
    _messages_and_queues(brk)
    _connection_limits(brk)
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
    _rounds_options(pipe)
    bb = bsub.add_parser(
        "broker",
        help="one producer and one consumer through the reference broker over loopback",
    )
    bb.add_argument(
        "--messages", type=_positive_int, default=50_000, help="messages (default 50,000)"
    )
    bb.add_argument("--size", type=int, default=256, help="body bytes (default 256)")
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
        "accepted; messages per second, ours next to Proton's Container",
    )
    loop.add_argument(
        "--adapter",
        choices=bench.LOOPBACK_ADAPTERS,
        default="sockets",
        help="our adapter to measure (default sockets)",
    )
    loop.add_argument(
        "--messages",
        type=_positive_int,
        default=50_000,
        help="messages per round (default 50,000)",
    )
    loop.add_argument(
        "--size",
        type=_size,
        default=bench.PIPE_BODY_SIZE,
        metavar="SIZE",
        help="each message's data body (e.g. 256, 1MiB; default 256 bytes)",
    )
    _rounds_options(loop)
    pl = sub.add_parser(
        "pipeline",
        help="the Spark job: sample orders through a streaming query (format('amqp')), "
        "revenue per region per minute back through the sink, and the accounting",
        description="Publish sample orders to the embedded reference broker (or --url), "
        "total them per region per minute in a Spark Structured Streaming query that reads "
        "and writes through format('amqp'), read the totals back, print them and the "
        "accounting line. Exit status: 0 nothing lost, 1 an order was lost, 2 usage error, "
        "3 no Java runtime, the broker unreachable, or the query failed.",
    )
    pl.add_argument(
        "--messages",
        type=_positive_int,
        default=100_000,
        metavar="N",
        help="orders to publish (default 100,000)",
    )
    pl.add_argument(
        "--url",
        default=None,
        help="an AMQP 1.0 broker to use (amqp://[user:password@]host[:port]) instead of "
        "starting the embedded one",
    )
    pl.add_argument("--orders", default=None, metavar="ADDRESS", help="the orders' address")
    pl.add_argument("--results", default=None, metavar="ADDRESS", help="the totals' address")
    pl.add_argument(
        "--batch",
        type=_positive_int,
        default=20_000,
        metavar="N",
        help="the read limit of each micro-batch (maxMessagesPerTrigger; default 20,000)",
    )
    pl.add_argument(
        "--master", type=_master, default="local[*]", help="Spark master (default local[*])"
    )
    pl.add_argument(
        "--progress",
        action="store_true",
        help="show progress on stderr even when it is not a terminal",
    )
    pl.add_argument("--json", action="store_true", help="print one JSON object")
    bs = bsub.add_parser(
        "spark",
        help="messages from the reference broker into a Spark streaming query "
        "(format('amqp'), queue mode), next to the asyncio adapter's receive rate",
    )
    bs.add_argument(
        "--messages",
        type=_positive_int,
        default=200_000,
        help="messages (default 200,000), each a data body of --size bytes",
    )
    bs.add_argument("--size", type=_positive_int, default=256, help="body bytes (default 256)")
    bs.add_argument(
        "--batch",
        type=_positive_int,
        default=50_000,
        metavar="N",
        help="the query's read limit per micro-batch (default 50,000)",
    )
    bs.add_argument(
        "--partitions",
        type=_positive_int,
        default=2,
        help="Spark partitions each staged batch is cut into (default 2)",
    )
    bs.add_argument(
        "--master", type=_master, default="local[*]", help="Spark master (default local[*])"
    )
    bs.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


class _StageProgress:
    """The pipeline's progress on stderr: a line redrawn in place per stage (publishing,
    processing) on a terminal or when asked for; nothing otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._last = 0.0
        self._label = ""

    def __call__(self, label: str, done: int, total: int) -> None:
        now = time.monotonic()
        if label == self._label and now - self._last < 0.2 and done < total:
            return
        self._last, self._label = now, label
        self.stream.write(f"\r\033[K{label}: {done:,} / {total:,}")
        self.stream.flush()

    def clear(self) -> None:
        if self._label:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _spark_command(args: argparse.Namespace) -> int:
    """``pipeline`` and ``bench spark``."""
    from . import pipeline

    name = "pipeline" if args.command == "pipeline" else "bench spark"
    url = getattr(args, "url", None)
    if url is not None:
        try:  # a usage error at once, not after Spark has started
            parse_url(url)
        except URLError as exc:
            print(f"amqp-sansio {name}: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    shown = getattr(args, "progress", False) or sys.stderr.isatty()
    progress = _StageProgress(sys.stderr) if shown else None
    try:
        if args.command == "pipeline":
            outcome = pipeline.run_pipeline(
                args.messages,
                url=args.url,
                source=args.orders,
                sink=args.results,
                master=args.master,
                batch=args.batch,
                progress=progress,
            )
        else:
            figures = pipeline.bench_spark(
                args.messages,
                size=args.size,
                batch=args.batch,
                partitions=args.partitions,
                master=args.master,
                progress=progress,
            )
    except Exception as exc:
        if progress is not None:
            progress.clear()
        print(f"amqp-sansio {name}: error: {pipeline.describe(exc)}", file=sys.stderr)
        return EXIT_CONNECTION
    if progress is not None:
        progress.clear()
    if args.command == "pipeline":
        print(
            json.dumps(outcome.as_dict(), indent=2)
            if args.json
            else pipeline.format_outcome(outcome)
        )
        return 1 if outcome.lost else 0
    print(json.dumps(figures, indent=2) if args.json else pipeline.format_bench(figures))
    return 0


class _Progress:
    """Progress of a long benchmark on stderr: a bar redrawn in place (carriage return)
    when stderr is a terminal; otherwise one plain line per finished run."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.stream = sys.stderr if stream is None else stream
        self.tty = self.stream.isatty()
        self._last = 0.0

    def __call__(self, label: str, done: int, rate: float | None = None) -> None:
        if not self.tty:
            if rate is not None:
                print(f"{label}: {done:,} messages, {rate:,.0f} msg/s", file=self.stream)
                self.stream.flush()
            return
        now = time.monotonic()
        if rate is None and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = width * done // self.total
        bar = "#" * filled + "." * (width - filled)
        line = f"\r{label:<17} [{bar}] {done:>9,} / {self.total:,}"
        self.stream.write(line)
        self.stream.flush()

    def clear(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")
            self.stream.flush()


def _loopback(args: argparse.Namespace) -> tuple[str, bench.Result]:
    title = (
        f"loopback ({args.adapter}): {args.messages:,} messages of {args.size:,} "
        "bytes, each accepted by the receiver, sender to receiver over 127.0.0.1"
    )
    progress = _Progress(args.messages)
    try:
        results = bench.loopback_benchmark(
            args.messages,
            adapter=args.adapter,
            size=args.size,
            rounds=args.rounds,
            seconds=args.seconds,
            progress=progress,
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
    return title, results


def _client_command(args: argparse.Namespace) -> int:
    try:
        url = parse_url(args.url)
    except URLError as exc:
        raise CommandError(f"{exc}: {args.url!r}", EXIT_USAGE) from None
    options = ClientOptions(
        cafile=args.cafile,
        insecure_skip_verify=args.insecure_skip_verify,
        sasl_mechanism=args.sasl_mechanism,
        allow_insecure_auth=args.allow_insecure_auth,
        timeout=args.timeout,
    )
    if args.command == "send":
        return send_receive.send(
            url,
            options,
            count=args.count,
            size=args.size,
            body=args.body,
            settled=args.settled,
            durable=args.durable,
        )
    return send_receive.receive(
        url, options, count=args.count, credit=args.credit, print_bodies=args.print_bodies
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    if args.command in ("send", "receive"):
        try:
            return _client_command(args)
        except CommandError as exc:
            print(f"amqp-sansio {args.command}: error: {exc}", file=sys.stderr)
            return exc.status
        except KeyboardInterrupt:
            print(f"amqp-sansio {args.command}: interrupted", file=sys.stderr)
            return 130
    if args.command == "broker":
        from amqp_sansio.broker import UsersFileError

        from .. import broker
        from ..broker.store import StoreError

        try:
            limits = {name: getattr(args, name) for name in _MESSAGES_AND_QUEUES}
            limits.update(_broker_limits(args))
        except ValueError as exc:
            print(f"amqp-sansio broker: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            broker.main(
                args.host,
                args.port,
                users_file=args.users,
                store_dir=args.store,
                allow_anonymous=args.allow_anonymous,
                limits=limits,
            )
        except (OSError, broker.OpenBrokerRefused, UsersFileError, StoreError) as exc:
            print(f"amqp-sansio broker: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        return 0
    if args.command == "pipeline" or (args.command == "bench" and args.bench == "spark"):
        return _spark_command(args)
    if args.command == "bench" and args.bench == "broker":
        return _bench_broker(args)
    if args.command == "bench" and args.bench == "codec":
        title = "codec: one typical message, encode and decode"
        results = bench.codec_benchmark(seconds=args.seconds)
    elif args.command == "bench" and args.bench == "pipe":
        title, results = _pipe(args)
    elif args.command == "bench" and args.bench == "loopback":
        try:
            title, results = _loopback(args)
        except CommandError as exc:
            print(f"amqp-sansio bench loopback: error: {exc}", file=sys.stderr)
            return exc.status
    else:  # pragma: no cover - argparse rejects anything else
        return 2
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(bench.format_table(title, results))
    return 0
