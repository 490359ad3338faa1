"""``amqp-sansio receive``: messages from a broker's address, as an application would take
them: this module reads the command line and :mod:`.protocols` runs it in the protocol
``--protocol`` names (AMQP 1.0's :mod:`.amqp10.receive`: taken and accepted, or browsed,
filtered by a JMS selector, read from a stream node from an offset; 0-9-1's
:mod:`.amqp091.transfer`); each body printed, or each message as a JSON object
(:func:`.values.message_json`).

It returns the exit status (see :mod:`amqp_sansio.adapters.cli.connect`) and prints a
one-line summary; failures raise :class:`~amqp_sansio.adapters.cli.connect.CommandError`.
"""

from __future__ import annotations

import argparse
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10
from amqp_sansio.client.url import AMQPURL

from . import options as opts
from . import protocols, values
from .connect import ClientOptions
from .transfer import run_command

__all__ = ["add_parser", "offset", "run"]


def offset(text: str) -> Any:
    """``--offset``: where a stream consumer starts: ``first``, ``last``, ``next``, an
    offset (``0``, ``1500``), or a time (``2026-11-26T10:00:00Z``, ``timestamp:MS``): the
    first message stored at or after it (RabbitMQ; the reference broker has no times)."""
    if text in ("first", "last", "next"):
        return text
    try:
        value = opts.whole(text)
    except argparse.ArgumentTypeError:
        pass
    else:
        if not 0 <= value < 2**64:
            raise argparse.ArgumentTypeError(f"an offset is 0 or more, not {value}")
        return amqp.codec.amqp10.ULong(value)
    try:
        return values.timestamp(text.removeprefix("timestamp:"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an offset: {text!r} (first, last, next, a number, or a time: "
            "2026-11-26T10:00:00Z)"
        ) from None


def _run(url: AMQPURL, options: ClientOptions, args: argparse.Namespace) -> int:
    protocols.check_options(args)
    return protocols.RECEIVE[args.protocol](url, options, args)


def run(args: argparse.Namespace) -> int:
    """Run ``receive``: the exit status, every failure as one line."""
    return run_command(args, _run)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``receive`` to the command's subparsers; ``common`` holds the options of every
    command that connects (:func:`.options.connection_options`)."""
    receive = sub.add_parser(
        "receive",
        parents=[common],
        help="receive messages from an address and accept each; exit status 0 when all came",
        description="Receive messages from the URL's address, accept each, print each "
        "body on a line of its own (--json: each message; --count-only: none) and a "
        "summary; with --protocol 0-9-1, consume the queue it names and ack each. Exit "
        "status: 0 all received and accepted, 1 some could not be accepted, 2 usage error, "
        "3 connection, TLS, authentication or link refused, 4 timed out, 130 interrupted "
        "before --count came.",
    )
    receive.add_argument(
        "--count",
        type=opts.count,
        default=1,
        metavar="N",
        help="messages (default 1); 0: until interrupted (Ctrl-C), then the summary",
    )
    receive.add_argument(
        "--credit",
        type=opts.positive_int,
        default=100,
        metavar="C",
        help="messages the broker may send ahead, granted again once used up (default 100; "
        "0-9-1: the prefetch count, basic.qos)",
    )
    output = receive.add_mutually_exclusive_group()
    output.add_argument(
        "--print",
        action="store_true",
        dest="print_bodies",
        help="print each body on a line of its own, the summary then on stderr (the default)",
    )
    output.add_argument(
        "--count-only",
        action="store_true",
        help="print no bodies: count the messages, and print the summary on stdout",
    )
    output.add_argument(
        "--json",
        action="store_true",
        help="print each message as one JSON object on a line of its own, every section "
        "(docs/cli.rst; the summary then goes to stderr)",
    )
    receive.add_argument(
        "--selector",
        metavar="EXPR",
        help="only the messages this JMS selector matches (header and properties fields, "
        "application properties: \"color = 'red' AND weight > 2\") (default none: every message)",
    )
    receive.add_argument(
        "--browse",
        action="store_true",
        help="read the messages without taking them: they stay on the queue "
        "(distribution-mode copy)",
    )
    receive.add_argument(
        "--offset",
        type=offset,
        metavar="WHERE",
        help="a stream node's start: first, last, next, an offset N, or a time "
        "(2026-11-26T10:00:00Z) (default none: the broker's, next)",
    )
    opts.protocol_options(receive)
    receive.set_defaults(run=run)
