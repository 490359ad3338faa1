"""The ``amqp-sansio`` command.

``amqp-sansio send URL [--count N] [--size BYTES | --body TEXT | --body-file PATH | --lines
PATH] [--property NAME=VALUE] [--app-property KEY=VALUE] [--annotation KEY=VALUE]
[--durable] [--priority P] [--ttl MS] [--settled] [--json]`` sends messages to the URL's
address (:mod:`.send`; ``--lines -``: each line of standard input as it arrives);
``amqp-sansio receive URL [--count N|0] [--credit C] [--print | --json | --count-only]
[--selector EXPR] [--browse] [--offset WHERE]`` receives them, printing each body by
default (:mod:`.receive`).
Both take ``--timeout S`` and the connection options ``--cafile``,
``--insecure-skip-verify``, ``--sasl-mechanism`` and ``--allow-insecure-auth``; see
docs/cli.rst for the exit statuses. With ``--protocol 0-9-1`` (and ``--vhost``) they speak
AMQP 0-9-1 (:mod:`.transfer091`): ``send --exchange E --routing-key K`` publishes in
confirm mode (to the default exchange, having declared the routing key's queue where
there is none: ``--declare/--no-declare``), ``receive`` consumes the queue with acks under
a prefetch.

``amqp-sansio queues URL [--json]`` lists a broker's queues, streams and topics through
its AMQP management node (``$management``; :mod:`amqp_sansio.adapters.cli.queues`).

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

``amqp-sansio bench loopback [--adapter sockets|asyncio|trio] [--messages N] [--json]``
measures a sender and a receiver in one process over 127.0.0.1, ours next to Proton's
Container; with ``--protocol 0-9-1 [--url URL] [--broker]``, publishing with confirms and
consuming with acks through RabbitMQ, ours next to aio-pika and pika (:mod:`.bench.loopback091`).

``amqp-sansio pipeline [--messages N] [--url URL] [--progress] [--json]`` runs the Spark
pipeline (sample orders through a Structured Streaming query and back, with its
accounting); ``amqp-sansio bench spark [--messages N] [--json]`` measures a streaming
query's read rate next to the asyncio adapter's (:mod:`amqp_sansio.adapters.cli.pipeline`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from amqp_sansio import __version__

from . import broker, pipeline, queues, receive, send
from .bench import command as bench_command
from .options import connection_options

__all__ = ["DAILY", "build_parser", "main"]

#: What ``amqp-sansio --help`` ends with: the daily commands, in each protocol.
DAILY = """\
the daily commands:
  amqp-sansio broker                          run the broker: AMQP 1.0, 0-9-1 and 0-10
                                              on 127.0.0.1:5672 (open: no --users)
  amqp-sansio send amqp://localhost/orders --count 3
                                              send three messages over AMQP 1.0
  amqp-sansio receive amqp://localhost/orders --count 3
                                              receive them, printing each body
  amqp-sansio send amqp://guest:guest@localhost/orders --protocol 0-9-1
  amqp-sansio receive amqp://guest:guest@localhost/orders --protocol 0-9-1
                                              the same over AMQP 0-9-1 (RabbitMQ's)

'amqp-sansio COMMAND --help' gives a command's options; docs/quickstart.rst starts
from the beginning."""


def build_parser() -> argparse.ArgumentParser:
    """The command's parser: each subcommand's options come from its module, which also
    names the function that runs it (``args.run``)."""
    parser = argparse.ArgumentParser(
        prog="amqp-sansio",
        description="AMQP 1.0, AMQP 0-9-1 (RabbitMQ's) and AMQP 0-10 (Qpid's), sans I/O: a "
        "broker that serves all three, send and receive in each, benchmarks and the Spark "
        "pipeline.",
        epilog=DAILY,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"amqp-sansio {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    common = connection_options(address=True)
    send.add_parser(sub, common)
    receive.add_parser(sub, common)
    broker.add_parser(sub)
    bench_command.add_parser(sub)
    pipeline.add_parser(sub)
    queues.add_parser(sub, connection_options())
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; its exit status (docs/cli.rst)."""
    args = build_parser().parse_args(argv)
    status: int = args.run(args)
    return status
