"""``amqp-sansio send``: messages to a broker's address, as an application would send them:
this module reads the command line (the header, properties, application properties and
message annotations the options give, typed as :mod:`.values` parses them; a body from the
command line, a file or standard input; one message per line with ``--lines``) and
:mod:`.protocols` runs it in the protocol ``--protocol`` names (AMQP 1.0's
:mod:`.amqp10.send`, 0-9-1's :mod:`.amqp091.transfer`).

It returns the exit status (see :mod:`amqp_sansio.adapters.cli.connect`) and prints a
one-line summary, or one JSON object with ``--json``; failures raise
:class:`~amqp_sansio.adapters.cli.connect.CommandError`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, BinaryIO

from amqp_sansio.client.url import AMQPURL

from . import options as opts
from . import protocols, values
from .connect import EXIT_USAGE, ClientOptions, CommandError
from .transfer import LineFeed, reason, run_command

__all__ = ["add_parser", "run"]


def _read_lines(path: str) -> list[str]:
    """The lines of the file ``path``, without their line ends; UTF-8 (standard input is
    a :class:`LineFeed`)."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read --lines {path}: {reason(exc)}", EXIT_USAGE) from None


def _read_bytes(path: str) -> bytes:
    """The bytes of ``path`` (``-``: standard input, read to its end)."""
    try:
        if path == "-":
            stdin: BinaryIO = sys.stdin.buffer
            return stdin.read()
        with open(path, "rb") as file:
            return file.read()
    except OSError as exc:
        raise CommandError(f"cannot read --body-file {path}: {reason(exc)}", EXIT_USAGE) from None


def _run(url: AMQPURL, options: ClientOptions, args: argparse.Namespace) -> int:
    protocols.check_options(args)
    body: str | bytes | None = args.body
    lines: Sequence[str] | LineFeed | None = None
    if args.body_file is not None:
        body = _read_bytes(args.body_file)
    if args.lines == "-":  # each line sent as it comes (a pipe from tail -f)
        lines = LineFeed(sys.stdin.buffer, "-", limit=args.count)
    elif args.lines is not None:
        lines = _read_lines(args.lines)
        if args.count is not None:
            lines = lines[: args.count]
    return protocols.SEND[args.protocol](url, options, args, body, lines)


def run(args: argparse.Namespace) -> int:
    """Run ``send``: the exit status, every failure as one line."""
    return run_command(args, _run)


def _ubyte(text: str) -> int:
    value = opts.whole(text)
    if not 0 <= value <= 255:
        raise argparse.ArgumentTypeError(f"a priority is 0 to 255, not {value}")
    return value


def _ttl(text: str) -> int:
    value = opts.whole(text)
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"a ttl is 0 to 4294967295 milliseconds, not {value}")
    return value


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``send`` to the command's subparsers; ``common`` holds the options of every
    command that connects (:func:`.options.connection_options`)."""
    send = sub.add_parser(
        "send",
        parents=[common],
        help="send messages to an address; exit status 0 when every one was accepted",
        description="Send messages to the URL's address and print a summary; with "
        "--protocol 0-9-1, publish them (to --exchange, with --routing-key) and wait for "
        "the broker's confirms. Exit status: "
        "0 every message accepted or confirmed (or sent pre-settled), 1 some not accepted "
        "(0-9-1: returned or nacked), 2 usage "
        "error, 3 connection, TLS, authentication or link refused, 4 timed out, "
        "130 interrupted. Typed values: TYPE:VALUE with TYPE one of "
        f"{', '.join(values.PREFIXES)} (docs/cli.rst); a string otherwise.",
    )
    send.add_argument(
        "--count",
        type=opts.positive_int,
        default=None,
        metavar="N",
        help="messages (default 1; with --lines, one per line: N limits them to the first N)",
    )
    body = send.add_mutually_exclusive_group()
    body.add_argument(
        "--size",
        type=opts.size,
        metavar="BYTES",
        help="a data body of this many bytes (e.g. 256, 64KiB); by default the text 'message N'",
    )
    body.add_argument("--body", metavar="TEXT", help="this text as every message's body")
    body.add_argument(
        "--body-file",
        metavar="PATH",
        help="the bytes of this file as every message's body, one data section ('-': "
        "standard input, read to its end)",
    )
    body.add_argument(
        "--lines",
        metavar="PATH",
        help="one message per line of this file, each line as the text body ('-': "
        "standard input, each line sent as it comes, so a pipe from tail -f works)",
    )
    send.add_argument(
        "--settled",
        action="store_true",
        help="send pre-settled: no outcome is awaited (0-9-1: publish without confirms)",
    )
    send.add_argument(
        "--json",
        action="store_true",
        help="print the summary as one JSON object (sent, outcomes, seconds, rate, ...)",
    )
    opts.protocol_options(send)
    a091 = send.add_argument_group("AMQP 0-9-1 (with --protocol 0-9-1)")
    a091.add_argument(
        "--exchange",
        metavar="NAME",
        help="publish to this exchange (default '': the default exchange, which routes to "
        "the queue the routing key names)",
    )
    a091.add_argument(
        "--routing-key",
        metavar="KEY",
        help="the routing key (default the URL's address: with the default exchange, the "
        "queue of that name)",
    )
    a091.add_argument(
        "--declare",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="declare the queue the routing key names where the broker has none, before "
        "publishing (default: on with the default exchange, as the 1.0 side makes a queue "
        "on first use; off with --exchange)",
    )
    sections = send.add_argument_group("message sections (repeatable options: core spec 3.2)")
    sections.add_argument(
        "--durable", action="store_true", help="mark the messages durable (header)"
    )
    sections.add_argument(
        "--priority",
        type=_ubyte,
        metavar="P",
        help="the header's priority, 0 to 255 (default none: the spec's 4; 0-9-1: the "
        "priority property)",
    )
    sections.add_argument(
        "--ttl", type=_ttl, metavar="MS", help="the header's ttl, milliseconds (default none)"
    )
    sections.add_argument(
        "--property",
        dest="properties",
        action="append",
        type=values.property_value,
        metavar="NAME=VALUE",
        help="a field of the properties section (message-id, user-id, to, subject, "
        "reply-to, correlation-id, content-type, content-encoding, absolute-expiry-time, "
        "creation-time, group-id, group-sequence, reply-to-group-id), typed as the spec "
        "types it",
    )
    sections.add_argument(
        "--app-property",
        dest="app_properties",
        action="append",
        type=values.app_property,
        metavar="KEY=VALUE",
        help="an application property; VALUE a string, or TYPE:VALUE (int:5, bool:true, ...)",
    )
    sections.add_argument(
        "--annotation",
        dest="annotations",
        action="append",
        type=values.annotation,
        metavar="KEY=VALUE",
        help="a message annotation (KEY a symbol, x-opt-... by convention); VALUE typed "
        "as --app-property's",
    )
    send.set_defaults(run=run)
