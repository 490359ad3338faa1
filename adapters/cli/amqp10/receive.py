"""AMQP 1.0's ``amqp-sansio receive`` (:mod:`amqp_sansio.adapters.cli.receive` reads the
command line, :mod:`amqp_sansio.adapters.cli.protocols` picks the protocol): messages from a
broker's address over the public blocking API (:func:`amqp_sansio.adapters.sockets.connect`
and its ``Receiver``), as an application would: taken and accepted, or browsed (the
source's distribution-mode ``copy``), filtered by a JMS selector, read from a stream node
from an offset; each body printed, or each message as a JSON object
(:func:`amqp_sansio.adapters.cli.values.message_json`).
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, TextIO

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10
from amqp_sansio.client.ops import ClientError, Filters
from amqp_sansio.client.url import AMQPURL

from ... import sockets
from .. import values
from ..connect import (
    EXIT_CONNECTION,
    ClientOptions,
    CommandError,
    describe_error,
    failure,
    open_connection,
    timed_out,
)
from ..progress import Bar
from ..transfer import (
    ACCEPTED,
    Ticker,
    address_of,
    closing,
    finish_receive,
    next_delivery,
    outcome_name,
    sigint_held,
)

__all__ = ["OFFSET_FILTERS", "format_body", "offset_filters", "receive"]

#: The distribution-mode of a browser, and the key of the JMS selector filter (core spec
#: 3.5.3; the filter is ``apache.org:selector-filter:string``).
BROWSE, SELECTOR_KEY = amqp.Symbol("copy"), amqp.Symbol("jms-selector")

#: The filter-set keys (core spec 3.5.8) ``--offset`` sends its start under: the reference
#: broker's (docs/broker.rst, "Streams") and RabbitMQ's, so that either applies it.
OFFSET_FILTERS = (
    amqp.Symbol("amqp-sansio:stream-offset"),
    amqp.Symbol("rabbitmq:stream-offset-spec"),
)


def format_body(message: amqp.Message) -> str:
    """A message's body as one printable line: text as it is, bytes as UTF-8 (undecodable
    bytes escaped), anything else as its Python repr."""
    body = message.body
    if isinstance(body, amqp.Data):
        return body.value.decode("utf-8", errors="backslashreplace")
    if isinstance(body, amqp.AmqpValue):
        value = body.value
        if isinstance(value, str):
            return value
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="backslashreplace")
        return repr(value)
    if isinstance(body, tuple) and body and all(isinstance(s, amqp.Data) for s in body):
        joined = b"".join(s.value for s in body if isinstance(s, amqp.Data))
        return joined.decode("utf-8", errors="backslashreplace")
    return "" if body is None else repr(body)


def offset_filters(start: Any) -> Filters:
    """The source's filter-set for ``start`` (:func:`offset`'s value)."""
    return {key: start for key in OFFSET_FILTERS}


def receive(
    url: AMQPURL,
    options: ClientOptions,
    *,
    count: int = 1,
    credit: int = 100,
    print_bodies: bool = True,
    as_json: bool = False,
    selector: str | None = None,
    browse: bool = False,
    start: Any = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Receive ``count`` messages from the URL's address (0: until interrupted), granting
    ``credit`` at a time, and accept each (a message that does not decode is rejected).
    Exit status 0 when all ``count`` were received and accepted (or came pre-settled), or,
    with ``count`` 0, when every message that came before the interrupt was. With
    ``print_bodies`` each body goes to ``out`` on a line of its own, with ``as_json`` each
    message as a JSON object on a line of its own, and the summary then to ``err``
    (neither: the summary alone, to ``out``). A line never shares the progress bar's
    (:meth:`.transfer.Ticker.show`).
    ``selector``: only the messages it matches (a JMS selector); ``browse``: read them,
    leaving them on the node (distribution-mode ``copy``, core spec 3.5.3); ``start``: a
    stream's offset (:func:`offset`). Interrupted (Ctrl-C) before ``count`` came, the
    summary says how many did, and the exit status is 130; timed out, the same (when any
    came), then the error line, exit status 4.

    The receiver's window never reaches past the messages still wanted (its ``credit`` is
    lowered as they run out), so the broker keeps the rest. Progress goes to ``err``
    (:class:`~.progress.Bar`)."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    address = address_of(url)
    outcomes: Counter[str] = Counter()
    timeout = options.timeout
    link = f"from {address}"
    received = 0
    forever = count == 0
    interrupted = False
    waited_for: str | None = None
    printing = print_bodies or as_json
    conn = open_connection(url, options, role="receive")
    with closing(conn, options):
        try:
            window = credit if forever else min(credit, count)
            asked = browse or selector is not None or start is not None
            receiver = conn.receiver(
                address,
                # (one message until the broker's answer shows it applies what was asked)
                credit=1 if asked else window,
                timeout=timeout,
                selector=selector,
                browse=browse,
                filters=None if start is None else offset_filters(start),
            )
            if asked:
                _check_applied(receiver, link, timeout, browse, selector, start)
                receiver.credit = window
        except TimeoutError:
            raise timed_out(options, f"the broker's attach of the link {link}") from None
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        ticker = Ticker(Bar("receiving", count or None, stream=err))
        show = _shower(ticker, out, print_bodies, as_json)
        start_time = time.perf_counter()
        try:
            # The outcomes of half a window go out in one write, with the credit granted
            # again meanwhile (the receiver grants it once half the window is taken).
            burst = max(1, credit // 2)
            while forever or received < count:
                with conn.batch():
                    for _ in range(burst if forever else min(burst, count - received)):
                        # What is granted from now on: never past the messages still wanted.
                        if not forever:
                            receiver.credit = min(credit, count - received - 1)
                        delivery: sockets.Delivery | None = next_delivery(
                            receiver, None if forever else timeout
                        )
                        if delivery is None:  # the broker detached the link, cleanly
                            raise CommandError(
                                f"the broker detached the link {link}: {describe_error(None)}",
                                EXIT_CONNECTION,
                            )
                        with sigint_held():  # counted and settled, or neither
                            received += 1
                            outcomes[_settle(delivery, show, browse)] += 1
                        ticker(received)
            if outcomes["unsettled"]:
                # The link was detached in the same bytes as these deliveries (2.6.6):
                # why (None: cleanly; else this raises the broker's reason).
                receiver.receive(timeout=0)
                raise CommandError(
                    f"the broker detached the link {link}: {describe_error(None)}",
                    EXIT_CONNECTION,
                )
        except KeyboardInterrupt:  # the end of --count 0; a stop before the count, else
            interrupted = True
        except TimeoutError:
            waited_for = f"message {received + 1:,} of {count:,}" if count > 1 else "a message"
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        finally:
            ticker.close(received)
        elapsed = time.perf_counter() - start_time
    if printing:
        out.flush()
    return finish_receive(
        received,
        count,
        outcomes,
        elapsed,
        url,
        options,
        settled_well=outcomes["accepted"] + outcomes["pre-settled"] + outcomes["browsed"],
        interrupted=interrupted,
        waited_for=waited_for,
        summary=err if printing else out,
        err=err,
    )


def _check_applied(
    receiver: sockets.Receiver,
    link: str,
    timeout: float,
    browse: bool,
    selector: str | None,
    start: Any,
) -> None:
    """The broker's answer to the attach names what it applies (core spec 3.5.3: the
    filters in place, its distribution-mode): one that leaves out what was asked would
    take messages the user meant to leave, or the wrong ones. The link is then closed
    with nothing accepted (what came is the broker's again), and the command fails."""
    source = receiver.source
    filters = (source.filter if source is not None else None) or {}
    missing = []
    if browse and (source is None or source.distribution_mode != BROWSE):
        missing.append("--browse (distribution-mode copy)")
    if selector is not None and SELECTOR_KEY not in filters:
        missing.append("--selector (the JMS selector filter)")
    if start is not None and not any(key in filters for key in OFFSET_FILTERS):
        missing.append("--offset (a stream offset filter)")
    if missing:
        receiver.close(timeout=timeout)
        raise CommandError(
            f"the broker does not apply {' or '.join(missing)} to the link {link} "
            "(its answer leaves it out, core spec 3.5.3); nothing was received",
            EXIT_CONNECTION,
        )


def _shower(
    ticker: Ticker, out: TextIO, print_bodies: bool, as_json: bool
) -> Callable[[amqp.Message], None]:
    """What ``receive`` does with each message it takes: print it as JSON, print its body,
    or nothing; never on the progress bar's line (:meth:`.transfer.Ticker.show`)."""

    def show(message: amqp.Message) -> None:
        if as_json:
            ticker.show(json.dumps(values.message_json(message), ensure_ascii=False), out)
        elif print_bodies:
            ticker.show(format_body(message), out)

    return show


def _settle(delivery: sockets.Delivery, show: Callable[[amqp.Message], None], browse: bool) -> str:
    """Accept ``delivery`` (reject it if it does not decode, ``show``-ing it first); what it
    counts as. Browsing, settle nothing: the message is the node's (a
    broker that took it all the same, as RabbitMQ 3.x's AMQP 1.0 plugin does while
    answering ``copy``, has it back when the link closes, core spec 3.4: unsettled)."""
    pre_settled = delivery.settled
    try:
        message = delivery.message
    except amqp.DecodeError as exc:
        error = amqp.Error(condition=amqp.Symbol("amqp:decode-error"), description=str(exc))
        outcome: Any = amqp.Rejected(error=error)
    else:
        outcome = ACCEPTED
        show(message)
    if browse:
        return "browsed" if outcome is ACCEPTED else "not decoded"
    if pre_settled:
        return "pre-settled" if outcome is ACCEPTED else outcome_name(outcome)
    delivery.settle(outcome)
    if not delivery.settled:
        # The peer closed the link in the same bytes (2.6.6): the delivery can no longer
        # be settled, and goes back to the broker unaccepted (the detach says so).
        return "unsettled"
    return outcome_name(outcome)
