"""``amqp-sansio send`` and ``amqp-sansio receive``: move messages to or from a broker's
address over the public blocking API (:func:`amqp_sansio.adapters.sockets.connect`, its
``Sender`` and ``Receiver``), as an application would.

Each returns the exit status (see :mod:`amqp_sansio.adapters.cli.connect`) and prints a
one-line summary; failures raise :class:`~amqp_sansio.adapters.cli.connect.CommandError`.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections import Counter, deque
from collections.abc import Iterator
from typing import Any, TextIO

import amqp_sansio as amqp
from amqp_sansio.client import ClientError
from amqp_sansio.client.url import AMQPURL, URLError, parse_url

from .. import sockets
from . import options
from .connect import (
    EXIT_CONNECTION,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_USAGE,
    ClientOptions,
    CommandError,
    describe_error,
    failure,
    open_connection,
    timed_out,
)

__all__ = ["add_parsers", "format_body", "outcome_name", "receive", "run", "send"]

#: Outcome names for the tally, by delivery-state class.
_OUTCOMES: dict[type, str] = {
    amqp.Accepted: "accepted",
    amqp.Rejected: "rejected",
    amqp.Released: "released",
    amqp.Modified: "modified",
}


def outcome_name(state: Any) -> str:
    """``accepted``, ``rejected``, ``released``, ``modified``, or ``settled without an
    outcome``."""
    if state is None:
        return "settled without an outcome"
    return _OUTCOMES.get(type(state), type(state).__name__.lower())


def _tally(counts: Counter[str]) -> str:
    order = [*_OUTCOMES.values()]
    names = sorted(counts, key=lambda n: (order.index(n) if n in order else len(order), n))
    return ", ".join(f"{counts[n]:,} {n}" for n in names) or "nothing settled"


def _rate(count: int, seconds: float) -> str:
    if count == 0 or seconds <= 0:
        return f"in {seconds:.2f} s"
    return f"in {seconds:.2f} s ({count / seconds:,.0f} msg/s)"


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


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


def _address(url: AMQPURL) -> str:
    if not url.address:
        raise CommandError(
            f"the URL names no address: {url.scheme}://HOST[:PORT]/ADDRESS "
            "(amqp://host/q for address q, amqp://host//queue/q for /queue/q)",
            2,
        )
    return url.address


def send(
    url: AMQPURL,
    options: ClientOptions,
    *,
    count: int = 1,
    size: int | None = None,
    body: str | None = None,
    settled: bool = False,
    durable: bool = False,
    out: TextIO | None = None,
) -> int:
    """Send ``count`` messages to the URL's address: a data body of ``size`` bytes, the
    text ``body``, or (neither given) the text ``message N``. Exit status 0 when every
    message was accepted (or sent pre-settled and the broker then answered our detach); a
    clean detach after the last outcome is no failure, one before it is (exit status 3).

    The messages go out with ``send(message, wait=False)`` as credit allows, in one write
    per run (``Connection.batch``); the outcomes are counted as their trackers complete.
    Interrupted (Ctrl-C), it says how many were sent and what came of them (those whose
    outcome had not come: ``without an outcome``), exit status 130."""
    out = sys.stdout if out is None else out
    address = _address(url)
    header = amqp.Header(durable=True) if durable else None
    fixed: amqp.Message | None = None
    if size is not None:
        fixed = amqp.Message(header=header, body=b"x" * size)
    elif body is not None:
        fixed = amqp.Message(header=header, body=body)
    timeout = options.timeout
    link = f"to {address}"
    state = _Sending(count, settled)
    interrupted = False
    conn = open_connection(url, options, role="send")
    with _closing(conn, options):
        try:
            sender = conn.sender(address, settled=settled, timeout=timeout)
        except TimeoutError:
            raise timed_out(options, f"the broker's attach of the link {link}") from None
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        start = time.perf_counter()
        try:
            state.run(conn, sender, fixed, header, timeout)
        except KeyboardInterrupt:  # stopped: what was sent, and what came of it
            interrupted = True
        except TimeoutError:
            raise timed_out(options, state.waiting_for()) from None
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        elapsed = time.perf_counter() - start
    if interrupted:
        what, done = state.interrupted()
        rate = _rate(state.sent, elapsed)
        print(f"sent {what} to {url.redacted()}: {done} {rate} (interrupted)", file=out)
        return EXIT_INTERRUPTED
    what = f"{_plural(count, 'message')} to {url.redacted()}"
    if settled:
        print(f"sent {what}: {count:,} pre-settled {_rate(count, elapsed)}", file=out)
        return EXIT_OK
    print(f"sent {what}: {_tally(state.outcomes)} {_rate(count, elapsed)}", file=out)
    return EXIT_OK if state.outcomes["accepted"] == count else EXIT_INCOMPLETE


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
        fixed: amqp.Message | None,
        header: amqp.Header | None,
        timeout: float,
    ) -> None:
        """Send them all, then wait for the outcomes (pre-settled: for the broker's answer
        to our detach, which follows everything sent before it)."""
        window = self.window
        with conn.batch():
            for n in range(1, self.count + 1):
                message = fixed
                if message is None:
                    message = amqp.Message(header=header, body=f"message {n}")
                tracker = sender.send(message, wait=False, timeout=timeout)
                if self.settled:
                    self._presettled = n
                    continue
                window.append(tracker)
                if len(window) >= WINDOW:  # count what came, to hold no more
                    with _sigint_held():  # (the outcomes that came: no waiting in here)
                        while window and window[0].done():
                            self._count_first(outcome_name(window[0].outcome()))
            while window:
                name = outcome_name(window[0].outcome(timeout=timeout))
                with _sigint_held():
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

    def interrupted(self) -> tuple[str, str]:
        """How many were sent, and what came of them (an outcome, or none: not yet, or the
        link ended first)."""
        with _sigint_held():  # (outcome(timeout=0) does not wait)
            while self.window:
                try:
                    name = outcome_name(self.window[0].outcome(timeout=0))
                except (ClientError, TimeoutError):
                    name = "without an outcome"
                self._count_first(name)
        done = "pre-settled" if self.settled else _tally(self.outcomes)
        return f"{self.sent:,} of {_plural(self.count, 'message')}", done


def receive(
    url: AMQPURL,
    options: ClientOptions,
    *,
    count: int = 1,
    credit: int = 100,
    print_bodies: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Receive ``count`` messages from the URL's address (0: until interrupted), granting
    ``credit`` at a time, and accept each (a message that does not decode is rejected).
    Exit status 0 when all ``count`` were received and accepted (or came pre-settled), or,
    with ``count`` 0, when every message that came before the interrupt was. With
    ``print_bodies`` each body goes to ``out`` on a line of its own, and the summary to
    ``err``. Interrupted (Ctrl-C) before ``count`` came, the summary says how many did,
    and the exit status is 130.

    The receiver's window never reaches past the messages still wanted (its ``credit`` is
    lowered as they run out), so the broker keeps the rest."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    address = _address(url)
    outcomes: Counter[str] = Counter()
    timeout = options.timeout
    link = f"from {address}"
    received = 0
    forever = count == 0
    interrupted = False
    conn = open_connection(url, options, role="receive")
    with _closing(conn, options):
        try:
            window = credit if forever else min(credit, count)
            receiver = conn.receiver(address, credit=window, timeout=timeout)
        except TimeoutError:
            raise timed_out(options, f"the broker's attach of the link {link}") from None
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        start = time.perf_counter()
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
                        delivery = _next(receiver, None if forever else timeout)
                        if delivery is None:  # the broker detached the link, cleanly
                            raise CommandError(
                                f"the broker detached the link {link}: {describe_error(None)}",
                                EXIT_CONNECTION,
                            )
                        with _sigint_held():  # counted and settled, or neither
                            received += 1
                            outcomes[_settle(delivery, print_bodies, out)] += 1
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
            raise timed_out(
                options,
                f"message {received + 1:,} of {count:,}" if count > 1 else "a message",
            ) from None
        except ClientError as exc:
            raise failure(exc, url, options, link=link) from None
        elapsed = time.perf_counter() - start
    if print_bodies:
        out.flush()
    ok = outcomes["accepted"] + outcomes["pre-settled"]
    what = _plural(received, "message") if forever else _plural(count, "message")
    if interrupted and not forever:
        what = f"{received:,} of {_plural(count, 'message')}"
    print(
        f"received {what} from {url.redacted()}: {_tally(outcomes)} "
        f"{_rate(received, elapsed)}{' (interrupted)' if interrupted and not forever else ''}",
        file=err if print_bodies else out,
    )
    if interrupted and not forever:
        return EXIT_INTERRUPTED
    return EXIT_OK if ok == received else EXIT_INCOMPLETE


def _next(receiver: sockets.Receiver, timeout: float | None) -> sockets.Delivery | None:
    """The next delivery within ``timeout`` seconds; None (no bound): wait until one comes,
    serving the connection meanwhile (heartbeats), however long that takes."""
    if timeout is not None:
        return receiver.receive(timeout=timeout)
    while True:
        try:
            return receiver.receive(timeout=POLL)
        except TimeoutError:
            continue


def _settle(delivery: sockets.Delivery, print_bodies: bool, out: TextIO) -> str:
    """Accept ``delivery`` (reject it if it does not decode, printing its body if asked);
    what it counts as."""
    pre_settled = delivery.settled
    try:
        message = delivery.message
    except amqp.DecodeError as exc:
        error = amqp.Error(condition=amqp.Symbol("amqp:decode-error"), description=str(exc))
        outcome: Any = amqp.Rejected(error=error)
    else:
        outcome = ACCEPTED
        if print_bodies:
            print(format_body(message), file=out)
    if pre_settled:
        return "pre-settled" if outcome is ACCEPTED else outcome_name(outcome)
    delivery.settle(outcome)
    if not delivery.settled:
        # The peer closed the link in the same bytes (2.6.6): the delivery can no longer
        # be settled, and goes back to the broker unaccepted (the detach says so).
        return "unsettled"
    return outcome_name(outcome)


@contextlib.contextmanager
def _sigint_held() -> Iterator[None]:
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
def _closing(conn: sockets.Connection, options: ClientOptions) -> Iterator[None]:
    """Close ``conn`` when the block ends, waiting briefly for the broker's answer (what
    was to be done is done, or has failed already)."""
    try:
        yield
    finally:
        conn.close(timeout=min(CLOSE_WAIT, options.timeout))


#: How many trackers ``send`` holds before it counts the outcomes that have come.
WINDOW = 1024

#: ``receive --count 0`` waits for the next message this many seconds at a time (the wait
#: itself has no bound).
POLL = 1.0

#: The exit status of a command interrupted (SIGINT, Ctrl-C) before its work was done.
EXIT_INTERRUPTED = 130

#: The longest wait for the broker's answer to our close, seconds.
CLOSE_WAIT = 2.0

#: The outcome of every message that decodes.
ACCEPTED = amqp.Accepted()


def add_parsers(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``send`` and ``receive`` to the command's subparsers; ``common`` holds the
    options of every command that connects (:func:`.options.connection_options`)."""
    send = sub.add_parser(
        "send",
        parents=[common],
        help="send messages to an address; exit status 0 when every one was accepted",
        description="Send messages to the URL's address and print a summary. Exit status: "
        "0 every message accepted (or sent pre-settled), 1 some not accepted, 2 usage "
        "error, 3 connection, TLS, authentication or link refused, 4 timed out.",
    )
    send.add_argument(
        "--count", type=options.positive_int, default=1, metavar="N", help="messages (default 1)"
    )
    body = send.add_mutually_exclusive_group()
    body.add_argument(
        "--size",
        type=options.size,
        metavar="BYTES",
        help="a data body of this many bytes (e.g. 256, 64KiB); by default the text 'message N'",
    )
    body.add_argument("--body", metavar="TEXT", help="this text as every message's body")
    send.add_argument(
        "--settled", action="store_true", help="send pre-settled: no outcome is awaited"
    )
    send.add_argument("--durable", action="store_true", help="mark the messages durable (header)")
    send.set_defaults(run=run)
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
        type=options.count,
        default=1,
        metavar="N",
        help="messages (default 1); 0: until interrupted (Ctrl-C), then the summary",
    )
    receive.add_argument(
        "--credit",
        type=options.positive_int,
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
    receive.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``send`` or ``receive``: the exit status, every failure as one line."""
    try:
        return _run(args)
    except CommandError as exc:
        print(f"amqp-sansio {args.command}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print(f"amqp-sansio {args.command}: interrupted", file=sys.stderr)
        return 130


def _run(args: argparse.Namespace) -> int:
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
        return send(
            url,
            options,
            count=args.count,
            size=args.size,
            body=args.body,
            settled=args.settled,
            durable=args.durable,
        )
    return receive(
        url, options, count=args.count, credit=args.credit, print_bodies=args.print_bodies
    )
