"""``amqp-sansio send`` and ``receive`` with ``--protocol 0-9-1``: the same commands over
the blocking adapter's AMQP 0-9-1 client (:func:`amqp_sansio.adapters.sockets.connect`
with ``protocol="0-9-1"``), in the nouns of 0-9-1.

* ``send`` publishes to ``--exchange`` (default ``""``, the default exchange, which routes
  to the queue named by the routing key) with ``--routing-key`` (default the URL's
  address), ``mandatory``, on a channel in confirm mode (RabbitMQ's publisher confirms):
  each message is ``confirmed``, ``nacked`` or ``returned`` (routed to no queue). To the
  default exchange it first declares the queue the routing key names, where none is
  (``--declare``, the default there: as the 1.0 side makes a queue on first use, so that a
  fresh broker does not return every message; ``--no-declare`` leaves the broker as it is);
  ``--settled`` publishes without confirm mode (each ``unconfirmed``: the connection's
  close handshake still tells that the broker has read every one).
* ``receive`` consumes the queue the URL's address names (``basic.consume``) under a
  prefetch of ``--credit`` (``basic.qos``) and acks each message. Never past ``--count``:
  once only a prefetch's worth is left to come, the acks wait until the consumer is
  cancelled (an ack lets the broker send one more), so the broker keeps the rest.
* The URL keeps the command's grammar (``amqp://user:password@host:port/ADDRESS``: the
  path is the queue, not the virtual host); ``--vhost`` names the virtual host
  (default ``/``).

Exit statuses, progress, ``--json``, Ctrl-C and time-outs are those of 1.0
(:mod:`.connect`, :mod:`.transfer`).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import json
import socket
import sys
import time
import urllib.parse
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

import attrs

import amqp_sansio as amqp
import amqp_sansio.client.amqp091
import amqp_sansio.codec.amqp10
from amqp_sansio import amqp091
from amqp_sansio.client.ops import ClientError
from amqp_sansio.client.url import AMQPURL, URLError

from ... import sockets
from ..connect import EXIT_CONNECTION, EXIT_TIMEOUT, EXIT_USAGE, ClientOptions, CommandError
from ..progress import Bar
from ..transfer import (
    LineFeed,
    Ticker,
    address_of,
    finish_receive,
    finish_send,
    next_delivery,
    payloads,
    sigint_held,
)

__all__ = [
    "OUTCOMES",
    "check_options",
    "message_json",
    "open_connection",
    "properties_of",
    "receive",
    "send",
]

#: What ``send`` counts each message as, in this order.
OUTCOMES = ("confirmed", "returned", "nacked", "unconfirmed")
#: How many publishes ``send`` holds before it counts the confirms that have come.
WINDOW = 1024
#: The longest wait for the broker's answer to our close, seconds.
CLOSE_WAIT = 2.0

#: ``--property`` names (the 1.0 spec's) and the :class:`~amqp_sansio.amqp091.BasicProperties`
#: field each maps to (as RabbitMQ maps them between its protocols).
_PROPERTY_FIELDS = {
    "message_id": "message_id",
    "user_id": "user_id",
    "reply_to": "reply_to",
    "correlation_id": "correlation_id",
    "content_type": "content_type",
    "content_encoding": "content_encoding",
    "creation_time": "timestamp",
}
#: The 1.0-only options of ``send`` and ``receive`` and their defaults.
_ONLY_10 = {
    "browse": ("--browse", False),
    "selector": ("--selector", None),
    "offset": ("--offset", None),
    "annotations": ("--annotation", None),
}
#: The 0-9-1-only options and their defaults.
_ONLY_091 = {
    "exchange": ("--exchange", None),
    "routing_key": ("--routing-key", None),
    "vhost": ("--vhost", None),
    "declare": ("--declare", None),
}


def check_options(args: argparse.Namespace) -> None:
    """The options that one protocol has and the other lacks, refused as usage errors."""
    if args.protocol == "0-9-1":
        for name, (option, default) in _ONLY_10.items():
            if getattr(args, name, default) != default:
                raise CommandError(f"{option} is AMQP 1.0's: 0-9-1 has nothing like it", EXIT_USAGE)
        if args.sasl_mechanism is not None:
            raise CommandError(
                "--sasl-mechanism is AMQP 1.0's: 0-9-1 logs in with PLAIN, with the URL's "
                "credentials (RabbitMQ's guest:guest without them)",
                EXIT_USAGE,
            )
        return
    for name, (option, default) in _ONLY_091.items():
        if getattr(args, name, default) != default:
            raise CommandError(f"{option} is AMQP 0-9-1's: add --protocol 0-9-1", EXIT_USAGE)


def _field_value(key: str, value: Any) -> Any:
    """A typed command-line value as a 0-9-1 field table holds it."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, amqp.codec.amqp10.Timestamp):
        return amqp091.codec.Timestamp(int(value) // 1000)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    raise CommandError(f"a 0-9-1 header cannot hold {key}'s {type(value).__name__}", EXIT_USAGE)


def _property_value(field: str, value: Any) -> Any:
    if field == "timestamp":
        return amqp091.codec.Timestamp(int(value) // 1000)
    if field == "user_id" and isinstance(value, bytes):
        return value.decode("utf-8", errors="strict")
    return str(value)


def properties_of(args: argparse.Namespace) -> amqp091.BasicProperties | None:
    """The :class:`~amqp_sansio.amqp091.BasicProperties` the options give: ``--durable``
    (delivery mode 2), ``--priority``, ``--ttl`` (``expiration``, milliseconds as text),
    ``--property`` (those 0-9-1 has), ``--app-property`` (``headers``)."""
    fields: dict[str, Any] = {}
    if args.durable:
        fields["delivery_mode"] = 2
    if args.priority is not None:
        fields["priority"] = args.priority
    if args.ttl is not None:
        fields["expiration"] = str(args.ttl)
    for attribute, value in args.properties or ():
        field = _PROPERTY_FIELDS.get(attribute)
        if field is None:
            name = attribute.replace("_", "-")
            raise CommandError(
                f"0-9-1 has no property {name} (it has "
                f"{', '.join(a.replace('_', '-') for a in _PROPERTY_FIELDS)})",
                EXIT_USAGE,
            )
        try:
            fields[field] = _property_value(field, value)
        except UnicodeDecodeError:
            raise CommandError("a 0-9-1 user-id is text", EXIT_USAGE) from None
    if args.app_properties:
        fields["headers"] = {k: _field_value(k, v) for k, v in args.app_properties}
    return amqp091.BasicProperties(**fields) if fields else None


# -- connecting ---------------------------------------------------------------------------------


def _url091(url: AMQPURL, vhost: str) -> str:
    """The 0-9-1 URL of the command's URL (its path is the queue here) and ``vhost``."""
    userinfo = ""
    if url.username is not None or url.password is not None:
        user = urllib.parse.quote(url.username or "", safe="")
        password = "" if url.password is None else ":" + urllib.parse.quote(url.password, safe="")
        userinfo = f"{user}{password}@"
    host = f"[{url.host}]" if ":" in url.host else url.host
    path = "" if vhost == "/" else "/" + urllib.parse.quote(vhost, safe="")
    return f"{url.scheme}://{userinfo}{host}:{url.port}{path}"


def _where(url: AMQPURL) -> str:
    return f"[{url.host}]:{url.port}" if ":" in url.host else f"{url.host}:{url.port}"


def failure(exc: Exception, url: AMQPURL) -> CommandError:
    """The command's error for the 0-9-1 client's."""
    where = _where(url)
    if isinstance(exc, amqp.client.amqp091.ChannelClosedError):
        reply = amqp.client.amqp091.describe_reply(exc.reply_code, exc.reply_text)
        return CommandError(f"the broker closed the channel: {reply}")
    if isinstance(exc, amqp.client.amqp091.AuthenticationError):
        return CommandError(f"the broker at {where} refused the login: {exc}")
    if isinstance(exc, ClientError):
        return CommandError(f"the connection to {where} failed: {exc}")
    if isinstance(exc, TimeoutError):
        return CommandError(f"timed out connecting to {where}", EXIT_TIMEOUT)
    if isinstance(exc, socket.gaierror):
        return CommandError(f"cannot resolve {url.host}: {exc.strerror}")
    if isinstance(exc, ConnectionRefusedError):
        return CommandError(f"cannot connect to {where}: connection refused")
    if isinstance(exc, OSError):
        return CommandError(f"cannot connect to {where}: {exc.strerror or exc}")
    raise exc


def open_connection(url: AMQPURL, options: ClientOptions, vhost: str) -> Any:
    """Connect to ``url`` with 0-9-1 and open the connection on ``vhost``; every failure
    as a :class:`CommandError`."""
    from ..connect import connect_options

    kwargs = connect_options(url, options, role="0-9-1")
    try:
        return sockets.connect(
            _url091(url, vhost),
            protocol="0-9-1",
            timeout=options.timeout,
            ssl_context=kwargs["ssl_context"],
            allow_insecure_auth=options.allow_insecure_auth,
            proxy=kwargs["proxy"],
        )
    except URLError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except (ClientError, OSError) as exc:
        raise failure(exc, url) from None


def _close(conn: Any, options: ClientOptions) -> None:
    # What was to be done is done, or has failed already.
    with contextlib.suppress(ClientError, OSError, TimeoutError):
        conn.close(timeout=min(CLOSE_WAIT, options.timeout))


# -- send ---------------------------------------------------------------------------------------


class _Publishing:
    """What ``send`` has done so far, as :mod:`.send`'s ``_Sending`` for 1.0: the
    outcomes counted, and the publishes whose confirm has not been counted (oldest first);
    what was sent is the two together, whatever interrupts."""

    def __init__(self, count: int, confirms: bool) -> None:
        self.count, self.confirms = count, confirms
        self.outcomes: Counter[str] = Counter()
        self.window: deque[Any] = deque()

    @property
    def sent(self) -> int:
        return sum(self.outcomes.values()) + len(self.window)

    def _count_first(self, name: str) -> None:
        self.window.popleft()
        self.outcomes[name] += 1

    def run(
        self,
        channel: Any,
        exchange: str,
        routing_key: str,
        properties: amqp091.BasicProperties | None,
        bodies: Iterable[bytes],
        timeout: float,
        tick: Callable[[int], None],
        streamed: bool = False,
    ) -> None:
        """Publish each of ``bodies``, then wait for the confirms; ``streamed`` (a
        :class:`.send.LineFeed`): :attr:`count` is how many came."""
        window = self.window
        for n, body in enumerate(bodies, 1):
            if streamed:
                self.count = n
            tracker = channel.basic_publish(
                exchange,
                routing_key,
                body,
                properties=properties,
                mandatory=self.confirms,
                wait=False,
                timeout=timeout,
            )
            tick(n)
            if not self.confirms:
                with sigint_held():
                    self.outcomes["unconfirmed"] += 1
                continue
            window.append(tracker)
            if streamed or len(window) >= WINDOW:
                with sigint_held():
                    while window and window[0].done():
                        self._count_first(_outcome(window[0].confirmation(timeout=0)))
        while window:
            name = _outcome(window[0].confirmation(timeout=timeout))
            with sigint_held():
                self._count_first(name)

    def settle_the_rest(self) -> None:
        with sigint_held():
            while self.window:
                try:
                    name = _outcome(self.window[0].confirmation(timeout=0))
                except (ClientError, TimeoutError):
                    name = "without a confirm"
                self._count_first(name)


def declared(conn: Any, channel: Any, queue: str, durable: bool, timeout: float) -> Any:
    """The queue ``queue`` declared where there is none (0-9-1 ``queue.declare``, class
    50): asked for with ``passive`` first, so that a queue the broker has, whatever its
    arguments, is left as it is; a missing one (404 ``NOT_FOUND``, which closes the
    channel) is then declared, ``durable`` if asked, on a new channel. The channel to
    publish on."""
    try:
        channel.queue_declare(queue, passive=True, timeout=timeout)
        return channel
    except amqp.client.amqp091.ChannelClosedError as exc:
        if exc.reply_code != amqp091.ReplyCode.NOT_FOUND:
            raise
    channel = conn.channel(timeout=timeout)
    channel.queue_declare(queue, durable=durable, timeout=timeout)
    return channel


def _outcome(confirmation: Any) -> str:
    if confirmation.returned is not None:
        return "returned"
    return "confirmed" if confirmation.ack else "nacked"


def send(
    url: AMQPURL,
    options: ClientOptions,
    *,
    exchange: str = "",
    routing_key: str | None = None,
    vhost: str = "/",
    count: int = 1,
    size: int | None = None,
    body: str | bytes | None = None,
    lines: Sequence[str] | LineFeed | None = None,
    settled: bool = False,
    properties: amqp091.BasicProperties | None = None,
    declare: bool | None = None,
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Publish ``count`` messages (bodies as :func:`.send.send` makes them, text as UTF-8)
    to ``exchange`` with ``routing_key`` (default the URL's address), having declared the
    queue ``routing_key`` names where there is none when ``declare`` (None: when
    ``exchange`` is the default exchange, ``""``; :func:`declared`). Exit status 0 when
    every one was confirmed (or, ``settled``, published), 1 when any was returned or
    nacked; 130 interrupted, 4 timed out, as 1.0's."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    address = routing_key if routing_key is not None else address_of(url)
    fixed: bytes | None = None
    if size is not None:
        fixed = b"x" * size
    elif body is not None:
        fixed = body.encode() if isinstance(body, str) else body
    count, bodies = payloads(lines, count, fixed, str.encode)

    state = _Publishing(count, confirms=not settled)
    interrupted = False
    waited_for: str | None = None
    conn = open_connection(url, options, vhost)
    try:
        try:
            channel = conn.channel(timeout=options.timeout)
            if exchange == "" if declare is None else declare:
                durable = properties is not None and properties.delivery_mode == 2
                channel = declared(conn, channel, address, durable, options.timeout)
            if not settled:
                channel.confirm_select(timeout=options.timeout)
        except (ClientError, OSError, TimeoutError) as exc:
            raise failure(exc, url) from None
        ticker = Ticker(Bar("sending", count or None, stream=err))
        start = time.perf_counter()
        try:
            streamed = isinstance(lines, LineFeed)
            state.run(
                channel,
                exchange,
                address,
                properties,
                bodies(conn.wait),
                options.timeout,
                ticker,
                streamed,
            )
        except KeyboardInterrupt:
            interrupted = True
        except TimeoutError:
            waited_for = (
                f"confirms ({state.sent:,} of {state.count:,} sent, "
                f"{sum(state.outcomes.values()):,} confirmed)"
            )
        except ClientError as exc:
            raise failure(exc, url) from None
        finally:
            ticker.close(state.sent)
        elapsed = time.perf_counter() - start
    finally:
        _close(conn, options)
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
        wanted="confirmed" if state.confirms else None,
        as_json=as_json,
        interrupted=interrupted,
        waited_for=waited_for,
        out=out,
        err=err,
    )


# -- receive ------------------------------------------------------------------------------------


def message_json(delivery: Any) -> dict[str, Any]:
    """One delivery as a JSON object: where it came from (``exchange``, ``routing-key``,
    ``redelivered``), the properties set (``content-type``, ``delivery-mode``, ...: the
    0-9-1 names with hyphens), ``headers`` (null when none), and the body with
    ``body-encoding``: ``text`` (UTF-8) or ``base64``."""
    from ..values import to_json

    props = delivery.properties
    fields = {
        name.replace("_", "-"): to_json(value)
        for name in _FIELDS
        if (value := getattr(props, name)) is not None
    }
    try:
        body, encoding = delivery.body.decode("utf-8"), "text"
    except UnicodeDecodeError:
        body, encoding = base64.b64encode(delivery.body).decode("ascii"), "base64"
    return {
        "exchange": delivery.exchange,
        "routing-key": delivery.routing_key,
        "redelivered": delivery.redelivered,
        "properties": fields,
        "headers": to_json(props.headers),
        "body-encoding": encoding,
        "body": body,
    }


#: The :class:`~amqp_sansio.amqp091.BasicProperties` fields ``--json`` shows under
#: ``properties`` (``headers`` goes apart).
_FIELDS = tuple(f.name for f in attrs.fields(amqp091.BasicProperties) if f.name != "headers")


class _Consuming:
    """What ``receive`` has taken: the count, and the deliveries whose ack waits for the
    consumer's cancel (the last prefetch's worth of ``count``)."""

    def __init__(self, count: int, prefetch: int) -> None:
        self.count, self.prefetch = count, prefetch
        self.received = 0
        self.acked = 0
        self.held: list[Any] = []

    def take(self, delivery: Any, show: Callable[[Any], None]) -> None:
        """Count ``delivery``, show it, and ack it (or hold its ack), with SIGINT held."""
        with sigint_held():
            self.received += 1
            show(delivery)
            # An ack lets the broker send one more: only while that stays within the count.
            if self.count == 0 or self.acked + self.prefetch < self.count:
                delivery.ack()
                self.acked += 1
            else:
                self.held.append(delivery)

    def ack_held(self) -> None:
        """After the cancel: the held acks (nothing more can come to this consumer)."""
        with sigint_held():
            for delivery in self.held:
                delivery.ack()
            self.acked += len(self.held)
            self.held.clear()


def receive(
    url: AMQPURL,
    options: ClientOptions,
    *,
    vhost: str = "/",
    count: int = 1,
    credit: int = 100,
    print_bodies: bool = True,
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """Consume ``count`` messages (0: until interrupted) from the queue the URL's address
    names, with a prefetch of ``credit`` (never more than ``count``), acking each, and
    prints each body (or, ``as_json``, each message) as 1.0's :func:`.receive.receive`. Exit
    status 0 when all came and were acked; 130 interrupted before the count, 4 timed out,
    as 1.0's."""
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    queue = address_of(url)
    forever = count == 0
    prefetch = credit if forever else min(credit, count)
    state = _Consuming(count, prefetch)
    printing = print_bodies or as_json

    interrupted = False
    waited_for: str | None = None
    conn = open_connection(url, options, vhost)
    try:
        try:
            channel = conn.channel(timeout=options.timeout)
            channel.basic_qos(prefetch, timeout=options.timeout)
            consumer = channel.basic_consume(queue, timeout=options.timeout)
        except (ClientError, OSError, TimeoutError) as exc:
            raise failure(exc, url) from None
        ticker = Ticker(Bar("receiving", count or None, stream=err))

        def show(delivery: Any) -> None:
            if as_json:
                ticker.show(json.dumps(message_json(delivery), ensure_ascii=False), out)
            elif print_bodies:
                ticker.show(delivery.body.decode("utf-8", errors="backslashreplace"), out)

        start = time.perf_counter()
        try:
            while forever or state.received < count:
                delivery = next_delivery(consumer, None if forever else options.timeout)
                if delivery is None:
                    raise CommandError("the broker cancelled the consumer", EXIT_CONNECTION)
                state.take(delivery, show)
                ticker(state.received)
        except KeyboardInterrupt:
            interrupted = True
        except TimeoutError:
            n = state.received + 1
            waited_for = f"message {n:,} of {count:,}" if count > 1 else "a message"
        except ClientError as exc:
            raise failure(exc, url) from None
        finally:
            ticker.close(state.received)
        elapsed = time.perf_counter() - start
        if state.held:
            try:
                consumer.cancel(timeout=options.timeout)
            except (ClientError, TimeoutError) as exc:
                raise failure(exc, url) from None
            state.ack_held()
    finally:
        _close(conn, options)
    if printing:
        out.flush()
    return finish_receive(
        state.received,
        state.count,
        Counter({"acked": state.acked}),
        elapsed,
        url,
        options,
        settled_well=state.acked,
        interrupted=interrupted,
        waited_for=waited_for,
        summary=err if printing else out,
        err=err,
    )
