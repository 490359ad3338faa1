"""What ``amqp-sansio send`` (:mod:`.send`) and ``amqp-sansio receive`` (:mod:`.receive`)
share, for both protocols (:mod:`.transfer091` is 0-9-1's side): the outcome tally and its
line, the summary as JSON, the summaries and exit statuses (:func:`finish_send`,
:func:`finish_receive`), progress on stderr, SIGINT held back around a change of two parts,
the connection closed at the end, and the run that turns every failure into its one line
(:func:`run_command`, which ``queues`` uses too).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import queue
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO, TextIO, TypeVar

import attrs

import amqp_sansio as amqp
from amqp_sansio.client.url import AMQPURL, URLError, parse_url

from .. import sockets
from .connect import (
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    ClientOptions,
    CommandError,
    timed_out,
)
from .options import cli_proxy
from .progress import Bar

T = TypeVar("T")

__all__ = [
    "ACCEPTED",
    "CLOSE_WAIT",
    "LINE_WAIT",
    "LINE_WINDOW",
    "POLL",
    "LineFeed",
    "Ticker",
    "address_of",
    "next_delivery",
    "closing",
    "finish_receive",
    "finish_send",
    "payloads",
    "outcome_name",
    "plural",
    "rate",
    "reason",
    "run_command",
    "sigint_held",
    "summary_json",
    "tally",
]

#: Outcome names for the tally, by delivery-state class.
_OUTCOMES: dict[type, str] = {
    amqp.Accepted: "accepted",
    amqp.Rejected: "rejected",
    amqp.Released: "released",
    amqp.Modified: "modified",
}

#: The longest wait for the broker's answer to our close, seconds.
CLOSE_WAIT = 2.0

#: The outcome of every message that decodes.
ACCEPTED = amqp.Accepted()

#: ``receive --count 0`` waits for the next message this many seconds at a time (the wait
#: itself has no bound).
POLL = 1.0


def outcome_name(state: Any) -> str:
    """``accepted``, ``rejected``, ``released``, ``modified``, or ``settled without an
    outcome``."""
    if state is None:
        return "settled without an outcome"
    return _OUTCOMES.get(type(state), type(state).__name__.lower())


def tally(counts: Counter[str]) -> str:
    """``3 accepted, 1 rejected``: the outcomes in the spec's order, then the others."""
    order = [*_OUTCOMES.values()]
    names = sorted(counts, key=lambda n: (order.index(n) if n in order else len(order), n))
    return ", ".join(f"{counts[n]:,} {n}" for n in names if counts[n]) or "nothing settled"


def rate(count: int, seconds: float) -> str:
    if count == 0 or seconds <= 0:
        return f"in {seconds:.2f} s"
    return f"in {seconds:.2f} s ({count / seconds:,.0f} msg/s)"


def plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def summary_json(
    verb: str,
    done: int,
    wanted: int | None,
    outcomes: Counter[str],
    seconds: float,
    url: AMQPURL,
    address: str,
    *,
    interrupted: bool,
    timed_out: bool,
) -> dict[str, Any]:
    """The summary line as one JSON object (docs/cli.rst, "JSON")."""
    return {
        verb: done,
        "requested": wanted,
        "outcomes": {name: n for name, n in outcomes.items() if n},
        "seconds": round(seconds, 6),
        "rate": round(done / seconds, 1) if seconds > 0 and done else 0.0,
        "url": url.redacted(),
        "address": address,
        "interrupted": interrupted,
        "timed_out": timed_out,
    }


def finish_send(
    sent: int,
    count: int,
    outcomes: Counter[str],
    elapsed: float,
    url: AMQPURL,
    address: str,
    options: ClientOptions,
    *,
    wanted: str | None,
    presettled: bool = False,
    as_json: bool,
    interrupted: bool,
    waited_for: str | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """``send``'s end, for both protocols: print the summary (a line, or the JSON object),
    then, timed out, the error line; return the exit status. ``outcomes`` are the messages'
    (``accepted``...; 0-9-1's ``confirmed``...), ``wanted`` the one every message needs for
    status 0 (None: none is waited for, as for messages sent pre-settled, ``presettled``,
    or published outside confirm mode)."""
    stopped = interrupted or waited_for is not None
    if presettled:
        outcomes = Counter({"pre-settled": sent})
    if as_json:
        summary = summary_json(
            "sent",
            sent,
            count,
            outcomes,
            elapsed,
            url,
            address,
            interrupted=interrupted,
            timed_out=waited_for is not None,
        )
        print(json.dumps(summary), file=out)
    else:
        what = plural(count, "message")
        if stopped:
            what = f"{sent:,} of {what}"
        done = f"{count:,} pre-settled" if presettled and not stopped else tally(outcomes)
        why = " (interrupted)" if interrupted else " (timed out)" if waited_for else ""
        print(f"sent {what} to {url.redacted()}: {done} {rate(sent, elapsed)}{why}", file=out)
    if interrupted:
        return EXIT_INTERRUPTED
    if waited_for is not None:
        out.flush()
        print(f"amqp-sansio send: error: {timed_out(options, waited_for)}", file=err)
        return EXIT_TIMEOUT
    if wanted is None:
        return EXIT_OK
    return EXIT_OK if outcomes[wanted] == count else EXIT_INCOMPLETE


def finish_receive(
    received: int,
    count: int,
    outcomes: Counter[str],
    elapsed: float,
    url: AMQPURL,
    options: ClientOptions,
    *,
    settled_well: int,
    interrupted: bool,
    waited_for: str | None,
    summary: TextIO,
    err: TextIO,
) -> int:
    """``receive``'s end, for both protocols: print the summary (on ``summary``; when timed
    out, only if any message came, and then the error line) and return the exit status
    (``count`` 0: until interrupted, which is then no failure; ``settled_well``: how many
    of the ``received`` messages were settled as meant, all of them for status 0)."""
    forever = count == 0
    stopped = (interrupted and not forever) or waited_for is not None
    what = plural(received if forever else count, "message")
    if stopped:
        what = f"{received:,} of {plural(count, 'message')}"
    why = " (interrupted)" if interrupted and not forever else " (timed out)" if waited_for else ""
    if waited_for is None or received:
        print(
            f"received {what} from {url.redacted()}: {tally(outcomes)} "
            f"{rate(received, elapsed)}{why}",
            file=summary,
        )
    if interrupted and not forever:
        return EXIT_INTERRUPTED
    if waited_for is not None:
        summary.flush()
        print(f"amqp-sansio receive: error: {timed_out(options, waited_for)}", file=err)
        return EXIT_TIMEOUT
    return EXIT_OK if settled_well == received else EXIT_INCOMPLETE


def address_of(url: AMQPURL) -> str:
    """The URL's address; a usage error when it names none."""
    if not url.address and url.websocket_path is not None:
        raise CommandError(
            f"a {url.scheme}:// URL's path is the WebSocket resource, not an address: give "
            "the address with --address NAME",
            EXIT_USAGE,
        )
    if not url.address:
        raise CommandError(
            f"the URL names no address: {url.scheme}://HOST[:PORT]/ADDRESS "
            "(amqp://host/q for address q, amqp://host//queue/q for /queue/q)",
            EXIT_USAGE,
        )
    return url.address


class Ticker:
    """A :class:`~.progress.Bar` fed at most ten times a second, however often
    :meth:`__call__` is (once a message): the bar's rate history stays small."""

    INTERVAL = 0.1

    def __init__(self, bar: Bar, clock: Callable[[], float] = time.monotonic) -> None:
        self.bar = bar
        self._clock = clock
        self._next = 0.0

    def __call__(self, done: int) -> None:
        now = self._clock()
        if now >= self._next:
            self._next = now + self.INTERVAL
            self.bar.update(done)

    def show(self, line: str, out: TextIO) -> None:
        """``line`` on ``out`` (a body that ``receive`` prints), never on the bar's line:
        where both are terminals, the bar is lifted first and the line flushed before it
        is drawn again (a plain stream's bar lines are whole lines already)."""
        terminal = self.bar.tty and out.isatty()
        if terminal:
            self.bar.lift()
        print(line, file=out)
        if terminal:
            out.flush()

    def close(self, done: int) -> None:
        """The last count (drawn), then the bar taken off the terminal."""
        self.bar.update(done)
        self.bar.close()


def next_delivery(source: Any, timeout: float | None) -> Any:
    """The next delivery of ``source`` (a 1.0 receiver or a 0-9-1 consumer: its
    ``receive(timeout=)``) within ``timeout`` seconds; None (no bound): wait until one
    comes, serving the connection meanwhile (heartbeats), however long that takes."""
    if timeout is not None:
        return source.receive(timeout=timeout)
    while True:
        try:
            return source.receive(timeout=POLL)
        except TimeoutError:
            continue


@contextlib.contextmanager
def sigint_held() -> Iterator[None]:
    """SIGINT held back (delivered when the block ends) where the platform can: a change
    of two parts is then made whole or not at all."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - Windows
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


@contextlib.contextmanager
def closing(conn: sockets.Connection, options: ClientOptions) -> Iterator[None]:
    """Close ``conn`` when the block ends, waiting briefly for the broker's answer (what
    was to be done is done, or has failed already)."""
    try:
        yield
    finally:
        conn.close(timeout=min(CLOSE_WAIT, options.timeout))


def run_command(
    args: argparse.Namespace, work: Callable[[AMQPURL, ClientOptions, argparse.Namespace], int]
) -> int:
    """Run ``send`` or ``receive``: the exit status, every failure as one line."""
    try:
        try:
            url = parse_url(args.url)
        except URLError as exc:
            raise CommandError(f"{exc}: {args.url!r}", EXIT_USAGE) from None
        if getattr(args, "address", None) is not None:
            url = attrs.evolve(url, address=args.address)
        options = ClientOptions(
            cafile=args.cafile,
            insecure_skip_verify=args.insecure_skip_verify,
            sasl_mechanism=args.sasl_mechanism,
            allow_insecure_auth=args.allow_insecure_auth,
            timeout=args.timeout,
            proxy=cli_proxy(args.proxy),
        )
        return work(url, options, args)
    except CommandError as exc:
        print(f"amqp-sansio {args.command}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"amqp-sansio {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


#: How many lines ``send --lines -`` reads ahead of what it has sent.
LINE_WINDOW = 1024
#: How long ``send --lines -`` waits for a line before it serves the connection
#: (heartbeats, the broker's frames) for a moment, seconds.
LINE_WAIT = 0.05


class LineFeed:
    """The lines of a stream (``send --lines -``: standard input), each as it arrives: a
    thread of its own reads them (a pipe from ``tail -f`` never ends), and :meth:`lines`
    hands them over, serving the connection while none has come. At most ``limit`` lines
    (None: to the stream's end). Lines are UTF-8, without their line ends."""

    def __init__(self, stream: BinaryIO, name: str, limit: int | None = None) -> None:
        self.name = name
        self._limit = limit
        self._queue: queue.Queue[str | Exception | None] = queue.Queue(maxsize=LINE_WINDOW)
        reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        reader.start()

    def _read(self, stream: BinaryIO) -> None:
        try:
            for n, raw in enumerate(stream, 1):
                self._queue.put(raw.decode("utf-8").rstrip("\r\n"))
                if n == self._limit:
                    break
        except (OSError, UnicodeDecodeError) as exc:
            self._queue.put(exc)
        self._queue.put(None)

    def lines(self, serve: Callable[[float], None]) -> Iterator[str]:
        """Each line as it comes; ``serve(seconds)`` keeps the connection serviced while
        none has (:meth:`~amqp_sansio.adapters.sockets.Connection.wait`)."""
        while True:
            try:
                item = self._queue.get(timeout=LINE_WAIT)
            except queue.Empty:
                serve(LINE_WAIT)
                continue
            if item is None:
                return
            if isinstance(item, Exception):
                raise CommandError(
                    f"cannot read --lines {self.name}: {reason(item)}", EXIT_USAGE
                ) from None
            yield item


def reason(exc: Exception) -> str:
    """Why reading failed, as the command says it (``no such file or directory``)."""
    return exc.strerror.lower() if isinstance(exc, OSError) and exc.strerror else str(exc)


def payloads(
    lines: Sequence[str] | LineFeed | None,
    count: int,
    fixed: T | None,
    wrap: Callable[[str], T],
) -> tuple[int, Callable[[Callable[[float], None]], Iterable[T]]]:
    """What ``send`` sends, for either protocol: how many (0 for a :class:`LineFeed`: as
    many as come) and, given the connection's ``wait`` (served while a feed has no line),
    the messages: each of ``lines`` wrapped, else ``count`` times ``fixed``, else the
    texts ``message 1`` to ``message N`` wrapped."""
    if isinstance(lines, LineFeed):
        feed = lines
        return 0, lambda serve: map(wrap, feed.lines(serve))
    if lines is not None:
        texts = lines
        return len(texts), lambda serve: map(wrap, texts)
    if fixed is not None:
        same = fixed
        return count, lambda serve: itertools.repeat(same, count)
    return count, lambda serve: (wrap(f"message {n}") for n in range(1, count + 1))
