"""``amqp-sansio send`` and ``amqp-sansio receive``: move messages to or from a broker's
address, blocking, over :class:`~amqp_sansio.adapters.cli.connect.Client`.

Each returns the exit status (see :mod:`amqp_sansio.adapters.cli.connect`) and prints a
one-line summary; failures raise :class:`~amqp_sansio.adapters.cli.connect.CommandError`.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any, TextIO

import amqp_sansio as amqp
from amqp_sansio.client.url import AMQPURL

from .connect import EXIT_INCOMPLETE, EXIT_OK, Client, ClientOptions, CommandError

__all__ = ["format_body", "outcome_name", "receive", "send"]

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
    message was accepted (or sent pre-settled and the broker then answered our close); a
    clean detach after the last outcome is no failure, one before it is (exit status 3)."""
    out = sys.stdout if out is None else out
    address = _address(url)
    header = amqp.Header(durable=True) if durable else None
    fixed: bytes | None = None
    if size is not None:
        fixed = amqp.Message(header=header, body=b"x" * size).encode()
    elif body is not None:
        fixed = amqp.Message(header=header, body=body).encode()
    outcomes: Counter[str] = Counter()
    progress = [0]  # settled deliveries

    def on_event(event: amqp.Event) -> None:
        if type(event) is amqp.events.DeliveryUpdated and event.settled and event.link is sender:
            outcomes[outcome_name(event.state)] += 1
            progress[0] += 1

    client = Client(url, options, role="send", on_event=on_event)
    # Every outcome in, the peer may detach cleanly (core spec 2.6.6): that is success.
    client.detach_ok = lambda: progress[0] >= count
    try:
        sender = client.attach_sender(address, settled=settled)
        sent = 0
        start = time.perf_counter()
        while True:
            while sent < count and sender.link_credit > 0:
                data = fixed
                if data is None:
                    data = amqp.Message(header=header, body=f"message {sent + 1}").encode()
                sender.send(data)
                sent += 1
            if settled and sent == count:
                client.close_checked()  # the broker's close follows what we sent
                break
            if progress[0] >= count:
                break
            done = progress[0]

            def ready(done: int = done, sent: int = sent) -> bool:
                return progress[0] > done or (sent < count and sender.link_credit > 0)

            client.wait(
                ready,
                f"credit or outcomes ({sent:,} of {count:,} sent, {done:,} settled)"
                if not settled
                else f"credit ({sent:,} of {count:,} sent)",
            )
        elapsed = time.perf_counter() - start
    finally:
        client.close()
    what = f"{_plural(count, 'message')} to {url.redacted()}"
    if settled:
        print(f"sent {what}: {count:,} pre-settled {_rate(count, elapsed)}", file=out)
        return EXIT_OK
    print(f"sent {what}: {_tally(outcomes)} {_rate(count, elapsed)}", file=out)
    return EXIT_OK if outcomes["accepted"] == count else EXIT_INCOMPLETE


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
    """Receive ``count`` messages from the URL's address, granting ``credit`` at a time,
    and accept each (a message that does not decode is rejected). Exit status 0 when all
    ``count`` were received and accepted (or came pre-settled). With ``print_bodies`` each
    body goes to ``out`` on a line of its own, and the summary to ``err``."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    address = _address(url)
    outcomes: Counter[str] = Counter()
    progress = [0]  # messages received
    accepted = amqp.Accepted()

    def on_event(event: amqp.Event) -> None:
        if type(event) is not amqp.events.DeliveryReceived or event.link is not receiver:
            return
        if not event.complete:  # pragma: no cover - the link does not stream
            return
        delivery = event.delivery
        progress[0] += 1
        try:
            message = amqp.Message.decode(event.data)
        except amqp.DecodeError as exc:
            outcome: Any = amqp.Rejected(
                error=amqp.Error(condition=amqp.Symbol("amqp:decode-error"), description=str(exc))
            )
        else:
            outcome = accepted
            if print_bodies:
                print(format_body(message), file=out)
        if delivery.remote_settled and outcome is accepted:
            outcomes["pre-settled"] += 1
        elif receiver.state is not amqp.LinkState.ATTACHED:
            # The peer closed the link in the same bytes (2.6.6): its deliveries can no
            # longer be settled, and go back to the broker unaccepted (the detach says so).
            outcomes["unsettled"] += 1
            return
        else:
            outcomes[outcome_name(outcome)] += 1
        receiver.settle(delivery, outcome)
        # Credit is granted again once used up, never topped up while deliveries are under
        # way (some brokers count it from what they sent, and would overshoot), and never
        # beyond the messages still wanted.
        wanted = count - progress[0]
        if receiver.link_credit == 0 and wanted > 0:
            receiver.flow(min(credit, wanted))

    client = Client(url, options, role="receive", on_event=on_event)
    try:
        receiver = client.attach_receiver(address)
        start = time.perf_counter()
        receiver.flow(min(credit, count))
        while progress[0] < count:
            done = progress[0]

            def arrived(done: int = done) -> bool:
                return progress[0] > done

            client.wait(
                arrived,
                f"message {done + 1:,} of {count:,}" if count > 1 else "a message",
            )
        elapsed = time.perf_counter() - start
        client.driver.flush(timeout=options.timeout)  # our dispositions
    finally:
        client.close()
    if print_bodies:
        out.flush()
    ok = outcomes["accepted"] + outcomes["pre-settled"]
    print(
        f"received {_plural(count, 'message')} from {url.redacted()}: {_tally(outcomes)} "
        f"{_rate(count, elapsed)}",
        file=err if print_bodies else out,
    )
    return EXIT_OK if ok == count else EXIT_INCOMPLETE
