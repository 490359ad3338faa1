"""``amqp-sansio send`` and ``receive`` with ``--protocol 0-10``: the same commands over the
blocking adapter's AMQP 0-10 client (:func:`amqp_sansio.adapters.sockets.connect` with
``protocol="0-10"``), in the nouns of 0-10 (0-10 spec, classes ``message`` and ``queue``).

* ``send`` transfers each message (``message.transfer``) to ``--exchange`` (default ``""``,
  the default exchange, which routes to the queue named by the routing key) with
  ``--routing-key`` (default the URL's address), having first declared that queue
  (``queue.declare``) where the exchange is the default one (``--declare``, the default
  there; ``--no-declare`` leaves the broker as it is). A message is ``completed`` when the
  broker completes its transfer (``session.completed``); ``--settled`` does not wait for
  each, only for an ``execution.sync`` at the end.
* ``receive`` subscribes to the queue the URL's address names (``message.subscribe``)
  under ``--credit`` messages of credit (credit mode), accepts each message
  (``message.accept``) and prints it. Messages the broker sent past ``--count`` are not
  accepted: it gets them back when the session ends.
* The URL keeps the command's grammar (its path is the queue); ``--vhost`` names the
  virtual host (default none: the broker's default).

Exit statuses, progress and time-outs are those of 1.0 (:mod:`..connect`,
:mod:`..transfer`); ``--property``, ``--app-property`` and ``--json`` are 1.0's and 0-9-1's.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import sys
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any, TextIO

from amqp_sansio.client.amqp010 import SessionError
from amqp_sansio.client.ops import ClientError
from amqp_sansio.client.url import AMQPURL, URLError

from ... import sockets
from ..connect import EXIT_TIMEOUT, EXIT_USAGE, ClientOptions, CommandError
from ..progress import Bar
from ..transfer import (
    LineFeed,
    Ticker,
    address_of,
    finish_receive,
    finish_send,
    next_delivery,
    payloads,
)

__all__ = ["check_options", "receive", "send"]

#: How long the close waits for the broker, at most (the work is done by then).
CLOSE_WAIT = 2.0
#: The options 0-10's commands do not take here, and their defaults.
_NOT_010 = {
    "browse": ("--browse", False),
    "selector": ("--selector", None),
    "offset": ("--offset", None),
    "annotations": ("--annotation", None),
    "properties": ("--property", None),
    "app_properties": ("--app-property", None),
    "json": ("--json", False),
    "sasl_mechanism": ("--sasl-mechanism", None),
}


def check_options(args: argparse.Namespace) -> None:
    """The options 0-10 lacks here, refused as usage errors."""
    for name, (option, default) in _NOT_010.items():
        if getattr(args, name, default) != default:
            raise CommandError(f"{option} is not an option of --protocol 0-10", EXIT_USAGE)


def _url010(url: AMQPURL, vhost: str | None) -> str:
    """The 0-10 URL of the command's URL (its path is the queue here) and ``vhost``."""
    userinfo = ""
    if url.username is not None or url.password is not None:
        user = urllib.parse.quote(url.username or "", safe="")
        password = "" if url.password is None else ":" + urllib.parse.quote(url.password, safe="")
        userinfo = f"{user}{password}@"
    host = f"[{url.host}]" if ":" in url.host else url.host
    path = "" if not vhost else "/" + urllib.parse.quote(vhost, safe="")
    return f"{url.scheme}://{userinfo}{host}:{url.port}{path}"


def failure(exc: Exception, url: AMQPURL) -> CommandError:
    """The command's error for the 0-10 client's."""
    where = f"{url.host}:{url.port}"
    if isinstance(exc, SessionError):
        return CommandError(f"the broker refused a command: {exc}")
    if isinstance(exc, ClientError):
        return CommandError(f"the connection to {where} failed: {exc}")
    if isinstance(exc, TimeoutError):
        return CommandError(f"timed out connecting to {where}", EXIT_TIMEOUT)
    if isinstance(exc, socket.gaierror):
        return CommandError(f"cannot resolve {url.host}: {exc.strerror}")
    return CommandError(f"cannot connect to {where}: {getattr(exc, 'strerror', None) or exc}")


def _open(url: AMQPURL, options: ClientOptions, vhost: str | None, role: str) -> Any:
    """The connection and a session of its own; every failure as a :class:`CommandError`."""
    from ..connect import connect_options

    kwargs = connect_options(url, options, role="0-10")
    try:
        conn = sockets.connect(
            _url010(url, vhost),
            protocol="0-10",
            timeout=options.timeout,
            ssl_context=kwargs["ssl_context"],
            allow_insecure_auth=options.allow_insecure_auth,
            proxy=kwargs["proxy"],
        )
    except URLError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except (ClientError, OSError) as exc:
        raise failure(exc, url) from None
    try:
        session = conn.session(f"amqp-sansio-{role}-{uuid.uuid4()}", keep=0)
    except (ClientError, OSError, TimeoutError) as exc:
        _close(conn, options)
        raise failure(exc, url) from None
    return conn, session


def _close(conn: Any, options: ClientOptions) -> None:
    with contextlib.suppress(ClientError, OSError, TimeoutError):
        conn.close(timeout=min(CLOSE_WAIT, options.timeout))


def send(
    url: AMQPURL,
    options: ClientOptions,
    *,
    exchange: str = "",
    routing_key: str | None = None,
    vhost: str | None = None,
    count: int = 1,
    size: int | None = None,
    body: str | bytes | None = None,
    lines: Sequence[str] | LineFeed | None = None,
    settled: bool = False,
    durable: bool = False,
    priority: int | None = None,
    ttl: int | None = None,
    declare: bool | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Transfer ``count`` messages to ``exchange`` with ``routing_key`` (default the URL's
    address); exit status 0 when the broker completed every one, 130 interrupted, 4 timed
    out, as 1.0's."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    address = routing_key if routing_key is not None else address_of(url)
    fixed: bytes | None = None
    if size is not None:
        fixed = b"x" * size
    elif body is not None:
        fixed = body.encode() if isinstance(body, str) else body
    count, bodies = payloads(lines, count, fixed, str.encode)
    header = {"durable": durable, "priority": priority, "ttl": ttl}
    conn, session = _open(url, options, vhost, "send")
    sent = 0
    outcomes: Counter[str] = Counter()
    interrupted = False
    waited_for: str | None = None
    try:
        try:
            if exchange == "" if declare is None else declare:
                session.queue_declare(address, durable=durable, timeout=options.timeout)
        except (ClientError, TimeoutError) as exc:
            raise failure(exc, url) from None
        ticker = Ticker(Bar("sending", count or None, stream=err))
        start = time.perf_counter()
        try:
            for payload in bodies(conn.wait):
                session.send(
                    payload,
                    destination=exchange,
                    routing_key=address,
                    wait=not settled,
                    timeout=options.timeout,
                    **header,
                )
                sent += 1
                if not settled:
                    outcomes["completed"] += 1
                ticker(sent)
            if settled:
                session.command(_sync(), timeout=options.timeout)
                outcomes["completed"] = sent
        except KeyboardInterrupt:
            interrupted = True
        except TimeoutError:
            waited_for = f"completions ({sent:,} of {count:,} sent)"
        except ClientError as exc:
            raise failure(exc, url) from None
        finally:
            ticker.close(sent)
        elapsed = time.perf_counter() - start
    finally:
        _close(conn, options)
    return finish_send(
        sent,
        count,
        outcomes,
        elapsed,
        url,
        address,
        options,
        wanted="completed",
        as_json=False,
        interrupted=interrupted,
        waited_for=waited_for,
        out=out,
        err=err,
    )


def _sync() -> Any:
    from amqp_sansio import amqp010

    return amqp010.definitions.ExecutionSync()


def receive(
    url: AMQPURL,
    options: ClientOptions,
    *,
    vhost: str | None = None,
    count: int = 1,
    credit: int = 100,
    print_bodies: bool = True,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Take ``count`` messages (0: until interrupted) from the queue the URL's address
    names under ``credit`` messages of credit (never more than ``count``), accepting each,
    and print each body; exit status as 1.0's :func:`..receive.receive`."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    queue = address_of(url)
    forever = count == 0
    window = credit if forever else min(credit, count)
    conn, session = _open(url, options, vhost, "receive")
    received = accepted = 0
    interrupted = False
    waited_for: str | None = None
    try:
        try:
            destination = session.subscribe(queue, credit=window, timeout=options.timeout)
        except (ClientError, TimeoutError) as exc:
            raise failure(exc, url) from None
        ticker = Ticker(Bar("receiving", count or None, stream=err))
        start = time.perf_counter()
        try:
            while forever or received < count:
                # credit given back only while what it lets come stays within the count
                refill = forever or received + window < count
                delivery = next_delivery(
                    _Source(session, destination, refill), None if forever else options.timeout
                )
                received += 1
                if print_bodies:
                    ticker.show(delivery.body.decode("utf-8", errors="backslashreplace"), out)
                session.accept(delivery, timeout=options.timeout)
                accepted += 1
                ticker(received)
        except KeyboardInterrupt:
            interrupted = True
        except TimeoutError:
            n = received + 1
            waited_for = f"message {n:,} of {count:,}" if count > 1 else "a message"
        except ClientError as exc:
            raise failure(exc, url) from None
        finally:
            ticker.close(received)
        elapsed = time.perf_counter() - start
    finally:
        _close(conn, options)
    if print_bodies:
        out.flush()
    return finish_receive(
        received,
        count,
        Counter({"accepted": accepted}),
        elapsed,
        url,
        options,
        settled_well=accepted,
        interrupted=interrupted,
        waited_for=waited_for,
        summary=err if print_bodies else out,
        err=err,
    )


class _Source:
    """A subscription as :func:`..transfer.next_delivery` takes it (``receive(timeout=)``)."""

    def __init__(self, session: Any, destination: str, refill: bool) -> None:
        self.session, self.destination, self.refill = session, destination, refill

    def receive(self, timeout: float | None) -> Any:
        return self.session.receive(self.destination, refill=self.refill, timeout=timeout)
