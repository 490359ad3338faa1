"""Which protocol ``send`` and ``receive`` speak (``--protocol``): the one module of the
command line that picks it, a table from the protocol's name to the function that runs the
command in that protocol (AMQP 1.0's in :mod:`.amqp10`, 0-9-1's in :mod:`.amqp091`,
0-10's in :mod:`.amqp010`), each given the command's parsed arguments. A new protocol is
one more entry in each table."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from amqp_sansio.client.url import AMQPURL

from .amqp010 import transfer as transfer010
from .amqp091 import transfer as transfer091
from .amqp10 import receive as receive10
from .amqp10 import send as send10
from .connect import ClientOptions
from .transfer import LineFeed

__all__ = ["CHECKS", "RECEIVE", "SEND", "check_options"]

#: A body (``--body``, ``--body-file``; None: ``--size`` bytes) or lines (``--lines``).
Body = str | bytes | None
Lines = Sequence[str] | LineFeed | None


def check_options(args: argparse.Namespace) -> None:
    """The options that one protocol has and the other lacks, refused as usage errors."""
    CHECKS.get(args.protocol, transfer091.check_options)(args)


def _send10(
    url: AMQPURL, options: ClientOptions, args: argparse.Namespace, body: Body, lines: Lines
) -> int:
    return send10.send(
        url,
        options,
        count=1 if args.count is None else args.count,
        size=args.size,
        body=body,
        lines=lines,
        settled=args.settled,
        template=send10.template_of(args),
        as_json=args.json,
    )


def _send091(
    url: AMQPURL, options: ClientOptions, args: argparse.Namespace, body: Body, lines: Lines
) -> int:
    return transfer091.send(
        url,
        options,
        exchange=args.exchange or "",
        routing_key=args.routing_key,
        vhost=args.vhost or "/",
        count=1 if args.count is None else args.count,
        size=args.size,
        body=body,
        lines=lines,
        settled=args.settled,
        properties=transfer091.properties_of(args),
        declare=args.declare,
        as_json=args.json,
    )


def _receive10(url: AMQPURL, options: ClientOptions, args: argparse.Namespace) -> int:
    return receive10.receive(
        url,
        options,
        count=args.count,
        credit=args.credit,
        print_bodies=not args.count_only,
        as_json=args.json,
        selector=args.selector,
        browse=args.browse,
        start=args.offset,
    )


def _receive091(url: AMQPURL, options: ClientOptions, args: argparse.Namespace) -> int:
    return transfer091.receive(
        url,
        options,
        vhost=args.vhost or "/",
        count=args.count,
        credit=args.credit,
        print_bodies=not args.count_only,
        as_json=args.json,
    )


def _send010(
    url: AMQPURL, options: ClientOptions, args: argparse.Namespace, body: Body, lines: Lines
) -> int:
    return transfer010.send(
        url,
        options,
        exchange=args.exchange or "",
        routing_key=args.routing_key,
        vhost=args.vhost,
        count=1 if args.count is None else args.count,
        size=args.size,
        body=body,
        lines=lines,
        settled=args.settled,
        durable=args.durable,
        priority=args.priority,
        ttl=args.ttl,
        declare=args.declare,
    )


def _receive010(url: AMQPURL, options: ClientOptions, args: argparse.Namespace) -> int:
    return transfer010.receive(
        url,
        options,
        vhost=args.vhost,
        count=args.count,
        credit=args.credit,
        print_bodies=not args.count_only,
    )


#: The usage checks of each protocol's options (those 1.0 and 0-9-1 lack are 0-9-1's
#: module's, by default).
CHECKS: dict[str, Callable[[argparse.Namespace], None]] = {
    "0-10": transfer010.check_options,
}
#: ``send`` in each protocol (the choices of ``--protocol``).
SEND: dict[str, Callable[[AMQPURL, ClientOptions, argparse.Namespace, Body, Lines], int]] = {
    "1.0": _send10,
    "0-9-1": _send091,
    "0-10": _send010,
}
#: ``receive`` in each protocol.
RECEIVE: dict[str, Callable[[AMQPURL, ClientOptions, argparse.Namespace], int]] = {
    "1.0": _receive10,
    "0-9-1": _receive091,
    "0-10": _receive010,
}
