"""``amqp-sansio send``: messages to a broker's address over the public blocking API
(:func:`amqp_sansio.adapters.sockets.connect` and its ``Sender``), as an application would:
the header, properties, application properties and message annotations the options give
(typed as :mod:`.values` parses them), a body from the command line, a file or standard
input, one message per line with ``--lines``.

It returns the exit status (see :mod:`amqp_sansio.adapters.cli.connect`) and prints a
one-line summary, or one JSON object with ``--json``; failures raise
:class:`~amqp_sansio.adapters.cli.connect.CommandError`.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, BinaryIO, TextIO

import attrs

import amqp_sansio as amqp
from amqp_sansio.client.ops import ClientError
from amqp_sansio.client.url import AMQPURL

from .. import sockets
from . import options as opts
from . import values
from .amqp091 import transfer as transfer091
from .connect import EXIT_USAGE, ClientOptions, CommandError, failure, open_connection, timed_out
from .progress import Bar
from .transfer import (
    LineFeed,
    Ticker,
    address_of,
    closing,
    finish_send,
    outcome_name,
    payloads,
    reason,
    run_command,
    sigint_held,
)

__all__ = ["WINDOW", "Template", "add_parser", "run", "send"]

#: How many trackers ``send`` holds before it counts the outcomes that have come.
WINDOW = 1024


@attrs.frozen(kw_only=True)
class Template:
    """What every message sent has besides its body: the sections the options give (core
    spec 3.2): the header, message annotations, properties, application properties."""

    header: amqp.Header | None = None
    message_annotations: dict[Any, Any] | None = None
    properties: amqp.Properties | None = None
    application_properties: dict[str, Any] | None = None

    def message(self, body: Any) -> amqp.Message:
        return amqp.Message(
            header=self.header,
            message_annotations=self.message_annotations,
            properties=self.properties,
            application_properties=self.application_properties,
            body=body,
        )


def send(
    url: AMQPURL,
    options: ClientOptions,
    *,
    count: int = 1,
    size: int | None = None,
    body: str | bytes | None = None,
    lines: Sequence[str] | LineFeed | None = None,
    settled: bool = False,
    template: Template | None = None,
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Send ``count`` messages to the URL's address: a data body of ``size`` bytes, the
    ``body`` (text as a string, bytes as a data section), each of ``lines`` as text (one
    message each; ``count`` is then their number; a :class:`LineFeed`: each sent as it
    comes, in a write of its own), or (none given) the text ``message N``;
    each with the sections of ``template``. Exit status 0 when every message was accepted
    (or sent pre-settled and the broker then answered our detach); a clean detach after the
    last outcome is no failure, one before it is (exit status 3).

    The messages go out with ``send(message, wait=False)`` as credit allows, in one write
    per run (``Connection.batch``); the outcomes are counted as their trackers complete.
    Progress goes to ``err`` (:class:`~.progress.Bar`). Interrupted (Ctrl-C), it says how
    many were sent and what came of them (those whose outcome had not come: ``without an
    outcome``), exit status 130; timed out, the same, then the error line, exit status 4.
    ``as_json``: the summary is one JSON object (:func:`.transfer.summary_json`)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    template = Template() if template is None else template
    address = address_of(url)
    fixed: amqp.Message | None = None
    if size is not None:
        fixed = template.message(b"x" * size)
    elif body is not None:
        fixed = template.message(body)
    count, messages = payloads(lines, count, fixed, template.message)

    timeout = options.timeout
    link = f"to {address}"
    state = _Sending(count, settled)
    interrupted = False
    waited_for: str | None = None
    conn = open_connection(url, options, role="send")
    with closing(conn, options):
        try:
            sender = conn.sender(address, settled=settled, timeout=timeout)
        except TimeoutError:
            raise timed_out(options, f"the broker's attach of the link {link}") from None
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        ticker = Ticker(Bar("sending", count or None, stream=err))
        start = time.perf_counter()
        try:
            state.run(
                conn, sender, messages(conn.wait), timeout, ticker, isinstance(lines, LineFeed)
            )
        except KeyboardInterrupt:  # stopped: what was sent, and what came of it
            interrupted = True
        except TimeoutError:
            waited_for = state.waiting_for()
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        finally:
            ticker.close(state.sent)
        elapsed = time.perf_counter() - start
    if interrupted or waited_for is not None:
        state.settle_the_rest()
    return finish_send(
        state.sent,
        state.count,
        state.outcomes,
        elapsed,
        url,
        address,
        options,
        wanted=None if state.settled else "accepted",
        presettled=state.settled,
        as_json=as_json,
        interrupted=interrupted,
        waited_for=waited_for,
        out=out,
        err=err,
    )


class _Sending:
    """What ``send`` has done so far: the outcomes counted, and the trackers whose outcome
    has not been counted, oldest first (as many as the broker's credit let out ahead of
    its outcomes). Unsettled, what was sent is these two together, by construction: a
    Ctrl-C (a KeyboardInterrupt, between any two steps) cannot leave a message sent and
    not accounted for; the one change of two parts, a tracker counted and dropped, is made
    with SIGINT held back."""

    def __init__(self, count: int, settled: bool) -> None:
        self.count, self.settled = count, settled
        self.outcomes: Counter[str] = Counter()
        self.window: deque[sockets.Tracker] = deque()
        self._presettled = 0

    @property
    def sent(self) -> int:
        if self.settled:
            return self._presettled
        return sum(self.outcomes.values()) + len(self.window)

    def _count_first(self, name: str) -> None:
        """The oldest tracker's outcome counted, and the tracker dropped (with SIGINT held
        back by the caller: both or neither)."""
        self.window.popleft()
        self.outcomes[name] += 1

    def run(
        self,
        conn: sockets.Connection,
        sender: sockets.Sender,
        messages: Iterable[amqp.Message],
        timeout: float,
        tick: Callable[[int], None],
        streamed: bool = False,
    ) -> None:
        """Send them all, then wait for the outcomes (pre-settled: for the broker's answer
        to our detach, which follows everything sent before it). ``streamed`` (a
        :class:`LineFeed`): each message goes out as it comes, not in a batch, and
        :attr:`count` is how many came."""
        window = self.window
        with contextlib.nullcontext() if streamed else conn.batch():
            for n, message in enumerate(messages, 1):
                tracker = sender.send(message, wait=False, timeout=timeout)
                if streamed:
                    self.count = n
                tick(n)
                if self.settled:
                    self._presettled = n
                    continue
                window.append(tracker)
                if streamed or len(window) >= WINDOW:  # count what came, to hold no more
                    with sigint_held():  # (the outcomes that came: no waiting in here)
                        while window and window[0].done():
                            self._count_first(outcome_name(window[0].outcome()))
            while window:
                name = outcome_name(window[0].outcome(timeout=timeout))
                with sigint_held():
                    self._count_first(name)
        if self.settled:
            sender.close(timeout=timeout)
            conn.wait(0)  # raises what ended the connection meanwhile, if anything did

    def waiting_for(self) -> str:
        """What a time-out interrupted."""
        sent = f"{self.sent:,} of {self.count:,} sent"
        if self.settled:
            return (
                f"the broker's detach ({sent})" if self.sent == self.count else f"credit ({sent})"
            )
        return f"credit or outcomes ({sent}, {sum(self.outcomes.values()):,} settled)"

    def settle_the_rest(self) -> None:
        """Stopped early: what came of the messages still tracked (an outcome, or none:
        not yet, or the link ended first), counted without waiting."""
        with sigint_held():  # (outcome(timeout=0) does not wait)
            while self.window:
                try:
                    name = outcome_name(self.window[0].outcome(timeout=0))
                except (ClientError, TimeoutError):
                    name = "without an outcome"
                self._count_first(name)


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


def template_of(args: argparse.Namespace) -> Template:
    """The sections the options give: the header (``--durable``, ``--priority``, ``--ttl``),
    ``--annotation``, ``--property``, ``--app-property`` (the last of a repeated key)."""
    header = None
    if args.durable or args.priority is not None or args.ttl is not None:
        header = amqp.Header(
            durable=args.durable,
            priority=4 if args.priority is None else args.priority,
            ttl=args.ttl,
        )
    return Template(
        header=header,
        message_annotations=dict(args.annotations) if args.annotations else None,
        properties=amqp.Properties(**dict(args.properties)) if args.properties else None,
        application_properties=dict(args.app_properties) if args.app_properties else None,
    )


def _run(url: AMQPURL, options: ClientOptions, args: argparse.Namespace) -> int:
    transfer091.check_options(args)
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
    if args.protocol == "0-9-1":
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
    return send(
        url,
        options,
        count=1 if args.count is None else args.count,
        size=args.size,
        body=body,
        lines=lines,
        settled=args.settled,
        template=template_of(args),
        as_json=args.json,
    )


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
