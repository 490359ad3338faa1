"""AMQP 1.0's ``amqp-sansio send`` (:mod:`amqp_sansio.adapters.cli.send` reads the
command line, :mod:`amqp_sansio.adapters.cli.protocols` picks the protocol): messages to a
broker's address over the public blocking API (:func:`amqp_sansio.adapters.sockets.connect`
and its ``Sender``), as an application would: the header, properties, application
properties and message annotations the options give (typed as
:mod:`amqp_sansio.adapters.cli.values` parses them), each body as the command line gives it.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

import attrs

import amqp_sansio as amqp
from amqp_sansio.client.ops import ClientError
from amqp_sansio.client.url import AMQPURL

from ... import sockets
from ..connect import ClientOptions, failure, open_connection, timed_out
from ..progress import Bar
from ..transfer import (
    LineFeed,
    Ticker,
    address_of,
    closing,
    finish_send,
    outcome_name,
    payloads,
    sigint_held,
)

__all__ = ["WINDOW", "Template", "send", "template_of"]

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
