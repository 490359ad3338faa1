"""``amqp-sansio broker``: its options (most a field of
:class:`~amqp_sansio.broker.BrokerConfig`, defaults in docs/defaults.rst; TLS and the log
are the server's) and its run (:func:`amqp_sansio.adapters.broker.main`)."""

from __future__ import annotations

import argparse
import re
import ssl
import sys
from typing import Any

import attrs

from amqp_sansio.broker import BrokerConfig, UsersFileError

from . import options
from .connect import EXIT_USAGE

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    """Add ``broker`` to the command's subparsers."""
    from ..broker.server import LOG_LEVEL, LOG_LEVELS, TLS_PORT

    brk = sub.add_parser(
        "broker",
        help="run the reference broker, AMQP 1.0, 0-9-1 and 0-10 on one port (5672), until "
        "SIGINT or SIGTERM",
        description="Run the reference broker, AMQP 1.0, 0-9-1 and 0-10 on one port, until "
        "SIGINT or SIGTERM; it prints "
        "'amqp-sansio broker listening on URL' for each port and logs each connection on "
        "stderr. Without --users it is OPEN (anyone who reaches it may use it): it says so "
        "at start, and listens only on a loopback address unless --allow-anonymous. Exit "
        "status: 0 stopped by SIGINT or SIGTERM, 2 usage error (a bad option, an address "
        "in use, a users file, store, certificate or key it cannot use).",
    )
    brk.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    brk.add_argument(
        "--port", type=options.port, default=5672, help="port (0: any free port; default 5672)"
    )
    brk.add_argument(
        "--store",
        default=None,
        help="directory of the durable message store (SQLite; made if missing): durable "
        "messages survive a restart (default: none, messages are kept in memory)",
    )
    brk.add_argument(
        "--users",
        default=None,
        help="file of users (SASL) and access rules; without it the broker is OPEN: any "
        "client may connect (anonymously) and send and receive anywhere, which it says at "
        "start, and it listens only on a loopback address unless --allow-anonymous "
        "(default: none)",
    )
    brk.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default=LOG_LEVEL,
        help="what the log on stderr says: debug, info (a line per connection opened and "
        "closed), warning (refusals, failures, the OPEN notice) or error "
        f"(default {LOG_LEVEL})",
    )
    brk.add_argument(
        "--ws-port",
        type=options.port,
        default=None,
        metavar="PORT",
        help="also serve AMQP 1.0 over WebSocket (the AMQP WebSocket binding, plain ws://) "
        "on this port (0: any free port), at / and /$servicebus/websocket "
        "(docs/websockets.rst) (default: none)",
    )
    tls = brk.add_argument_group(
        "TLS",
        "with a certificate the broker also listens for amqps (TLS from the first byte) on "
        "--tls-port, and takes the AMQP TLS header on --port (docs/broker.rst, TLS)",
    )
    tls.add_argument(
        "--tls-cert",
        metavar="PEM",
        default=None,
        help="the broker's certificate (PEM; its chain after it, and its key if no "
        "--tls-key) (default: none, no TLS)",
    )
    tls.add_argument(
        "--tls-key",
        metavar="PEM",
        default=None,
        help="the certificate's private key, unencrypted (default: in --tls-cert)",
    )
    tls.add_argument(
        "--tls-ca",
        metavar="PEM",
        default=None,
        help="require a client certificate issued by these CAs (mutual TLS) (default: "
        "none, clients are not asked for one)",
    )
    tls.add_argument(
        "--tls-port",
        type=options.port,
        default=None,
        metavar="PORT",
        help=f"the amqps port (0: any free port; default {TLS_PORT})",
    )
    tls.add_argument(
        "--wss-port",
        type=options.port,
        default=None,
        metavar="PORT",
        help="also serve AMQP 1.0 over WebSocket inside TLS (wss://, the certificate of "
        "--tls-cert) on this port (0: any free port), at / and /$servicebus/websocket "
        "(docs/websockets.rst) (default: none)",
    )
    _messages_and_queues(brk)
    _connection_limits(brk)
    brk.set_defaults(run=run)


def _tls_context(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The broker's TLS context from ``--tls-cert``, ``--tls-key`` and ``--tls-ca`` (None
    without a certificate): TLS 1.2 at least, a client certificate required with
    ``--tls-ca``. ValueError, in one line, for options that do not go together or files it
    cannot use."""
    from amqp_sansio.security.tls import server_context

    if args.tls_cert is None:
        given = [
            name
            for name, value in (
                ("--tls-key", args.tls_key),
                ("--tls-ca", args.tls_ca),
                ("--tls-port", args.tls_port),
                ("--wss-port", args.wss_port),
            )
            if value is not None
        ]
        if given:
            raise ValueError(f"{' and '.join(given)} need --tls-cert")
        return None
    files = f"--tls-cert {args.tls_cert}" + (
        f" with --tls-key {args.tls_key}" if args.tls_key else ""
    )
    try:  # (an empty password: an encrypted key fails here instead of prompting)
        context = server_context(args.tls_cert, args.tls_key, b"")
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot use {files}: {_tls_reason(exc)}") from None
    if args.tls_ca is None:
        return context
    try:
        return server_context(
            args.tls_cert, args.tls_key, b"", cafile=args.tls_ca, require_client_cert=True
        )
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot use --tls-ca {args.tls_ca}: {_tls_reason(exc)}") from None


def _tls_reason(exc: Exception) -> str:
    """What went wrong loading a certificate, a key or CAs, in words."""
    if isinstance(exc, ssl.SSLError):
        reasons = {
            "KEY_VALUES_MISMATCH": "the key is not the certificate's",
            "NO_CERTIFICATE_OR_CRL_FOUND": "no CA certificate (PEM) in it",
            "BAD_DECRYPT": "the key is encrypted (give it unencrypted)",
        }
        if exc.reason in reasons:
            return reasons[exc.reason]
        if "PEM lib" in str(exc):  # (OpenSSL's words for a file that is not what it wants)
            return "not a PEM certificate and its private key (an encrypted key is not taken)"
        return re.sub(r"\s*\(_ssl\.c:\d+\)$", "", str(exc))
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _connection_limits(brk: argparse.ArgumentParser) -> None:
    """The broker's group "connections": its connection limits, each a field of
    :class:`~amqp_sansio.broker.BrokerConfig` (its ``dest``, its default), listed in
    docs/broker.rst "Limits" and docs/defaults.rst."""
    fields = attrs.fields_dict(BrokerConfig)
    group = brk.add_argument_group(
        "connections",
        "limits on connections and their handshake, on by default (docs/broker.rst, "
        "Limits); 'none' lifts a limit that has 'or none'",
    )
    group.add_argument(
        "--allow-anonymous",
        action="store_true",
        help="let an open broker (no --users) listen beyond the loopback (e.g. --host "
        "0.0.0.0): anyone who can reach it may then use it",
    )
    for name, kind, text in _CONNECTION_LIMITS:
        default = fields[name].default
        optional = "None" in str(fields[name].type)
        group.add_argument(
            "--" + name.replace("_", "-"),
            type=options.limit(kind, optional),
            default=default,
            dest=name,
            metavar="S" if kind is float else "N",
            help=f"{text} (default {default}{' or none' if optional else ''})",
        )


#: The ``dest`` of the group "connections" (BrokerConfig fields), each option's type and help.
_CONNECTION_LIMITS: tuple[tuple[str, type, str], ...] = (
    ("handshake_timeout", float, "seconds from the TCP connection to the client's open"),
    ("idle_timeout", float, "seconds of silence before an open connection is closed"),
    ("max_connections", int, "connections in all"),
    ("max_connections_per_address", int, "connections from one source address"),
    ("evict_idle_after", float, "seconds an idle anonymous connection waits to be evicted"),
    ("max_connections_per_user", int, "open connections of one authenticated user"),
    ("channel_max", int, "highest channel a client may use (channel-max; sessions - 1)"),
    ("handle_max", int, "highest link handle per session (handle-max; links - 1)"),
    ("open_max_frame_size", int, "largest frame before the client's open, in bytes"),
    ("login_delay_after", int, "failed logins from one address before they are slowed"),
    ("login_delay", float, "seconds the next failed login's answer waits (doubling)"),
    ("login_delay_max", float, "the longest wait of a failed login's answer, seconds"),
    ("login_failure_window", float, "seconds after which failed logins are forgotten"),
)


def _broker_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The broker's connection limits from the command line, checked (ValueError)."""
    limits = {name: getattr(args, name) for name, _, _ in _CONNECTION_LIMITS}
    BrokerConfig(**limits)  # (ValueError for a value out of its range)
    return limits


def _messages_and_queues(brk: argparse.ArgumentParser) -> None:
    """``amqp-sansio broker``'s options on messages and queues: each a field of
    :class:`~amqp_sansio.broker.BrokerConfig` (its ``dest``), defaults in docs/defaults.rst
    and docs/broker.rst "Limits"."""
    default: dict[str, Any] = {field.name: field.default for field in attrs.fields(BrokerConfig)}
    group = brk.add_argument_group(
        "messages and queues",
        "limits on by default (docs/broker.rst, Limits); 'none' lifts a limit",
    )
    mib = 1024 * 1024
    group.add_argument(
        "--max-message-size",
        type=options.or_none(options.size),
        default=default["max_message_size"],
        metavar="SIZE",
        help="largest message taken (e.g. 64MiB), announced in a publisher's attach; a larger "
        "one detaches its link with amqp:link:message-size-exceeded "
        f"(default {default['max_message_size'] // mib}MiB)",
    )
    group.add_argument(
        "--max-queue-depth",
        type=options.or_none(options.positive_int),
        default=default["max_queue_depth"],
        metavar="N",
        help=f"messages one queue holds (default {default['max_queue_depth']:,})",
    )
    group.add_argument(
        "--max-queue-bytes",
        type=options.or_none(options.size),
        default=default["max_queue_bytes"],
        metavar="SIZE",
        help=f"bytes one queue holds (default {default['max_queue_bytes'] // mib}MiB)",
    )
    group.add_argument(
        "--queue-overflow",
        choices=("reject-publish", "drop-head"),
        default=default["queue_overflow"],
        help="a full queue's answer to a new message: reject-publish (rejected, "
        "amqp:resource-limit-exceeded) or drop-head (the oldest goes to --dead-letter, or "
        f"is dropped) (default {default['queue_overflow']})",
    )
    group.add_argument(
        "--dead-letter",
        default=None,
        metavar="ADDRESS",
        help="the queue that rejected and dropped-head messages go to (default: none, "
        "they are dropped)",
    )
    group.add_argument(
        "--no-auto-delete",
        dest="auto_delete",
        action="store_false",
        help="keep queues made on first use (default: one is deleted once it has no link "
        "and no message)",
    )
    group.add_argument(
        "--queue-expiry",
        type=options.or_none(options.seconds),
        default=default["queue_expiry"],
        metavar="SECONDS",
        help="delete a queue made on first use, messages and all, after it has had no "
        f"link this long (default {default['queue_expiry']:g}; none: never while it holds "
        "messages)",
    )
    group.add_argument(
        "--max-scheduled-messages",
        type=options.or_none(options.positive_int),
        default=default["max_scheduled_messages"],
        metavar="N",
        help="Azure Service Bus scheduled messages waiting in all, in memory; beyond, "
        f"403 amqp:resource-limit-exceeded (default {default['max_scheduled_messages']:,})",
    )
    group.add_argument(
        "--max-address-length",
        type=options.or_none(options.positive_int),
        default=default["max_address_length"],
        metavar="BYTES",
        help="longest source or target address; a longer one is refused with "
        f"amqp:invalid-field (default {default['max_address_length']:,})",
    )
    group.add_argument(
        "--vhost",
        dest="virtual_hosts",
        action="append",
        default=None,
        metavar="NAME",
        help="an AMQP 0-9-1 virtual host besides / (repeat for more); 1.0 clients see / "
        "(default: / alone)",
    )
    group.add_argument(
        "--max-unsettled-per-link",
        type=options.or_none(options.positive_int),
        default=default["max_unsettled_per_link"],
        metavar="N",
        help="unsettled deliveries the broker holds on one link: a consumer waits for "
        "settlements, a publisher's credit stops "
        f"(default {default['max_unsettled_per_link']:,})",
    )

    group.add_argument(
        "--memory-high-watermark",
        type=options.or_none(options.size),
        default=memory_high_watermark(),
        metavar="SIZE",
        help="bytes of messages held across all queues above which publishers are held "
        "back (0-9-1: connection.blocked, not read; 1.0: no more credit) until they are "
        "below --memory-low-watermark (default: a fifth of the machine's memory, "
        f"{default['memory_high_watermark'] // mib}MiB where it cannot be read)",
    )
    group.add_argument(
        "--memory-low-watermark",
        type=options.size,
        default=None,
        metavar="SIZE",
        help="bytes held below which the alarm clears (default: 90%% of the high mark)",
    )
    group.add_argument(
        "--stream-max-bytes",
        type=options.or_none(options.size),
        default=default["stream_max_bytes"],
        metavar="SIZE",
        help="bytes one stream keeps: past them its oldest messages are dropped "
        f"(default {default['stream_max_bytes'] // mib}MiB; x-max-length-bytes sets a "
        "stream's own)",
    )
    group.add_argument(
        "--stream-max-age",
        type=options.or_none(options.seconds),
        default=default["stream_max_age"],
        metavar="SECONDS",
        help="seconds one stream keeps a message (default "
        f"{default['stream_max_age']:g}, a day; x-max-age sets a stream's own)",
    )
    group.add_argument(
        "--link-credit-bytes",
        type=options.or_none(options.size),
        default=default["link_credit_bytes"],
        metavar="SIZE",
        help="bytes a 1.0 publisher's link may have outstanding: its credit times its "
        f"largest message (default {default['link_credit_bytes'] // mib}MiB)",
    )
    group.add_argument(
        "--connection-credit-bytes",
        type=options.or_none(options.size),
        default=default["connection_credit_bytes"],
        metavar="SIZE",
        help="bytes the 1.0 publishers of one connection may have outstanding, and put in "
        "while the memory alarm is on (more is rejected) "
        f"(default {default['connection_credit_bytes'] // mib}MiB)",
    )


def memory_high_watermark() -> int:
    """The command's default ``memory_high_watermark``: a fifth of the machine's physical
    memory (RabbitMQ's memory alarm takes 40% of it for all the broker's memory; ours
    counts the bytes of messages alone, which Python holds with its objects' overhead and
    copies in transit, so half that share), or
    :data:`~amqp_sansio.broker.DEFAULT_MEMORY_HIGH_WATERMARK` where it cannot be read."""
    import os

    from amqp_sansio.broker import DEFAULT_MEMORY_HIGH_WATERMARK

    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return DEFAULT_MEMORY_HIGH_WATERMARK
    return total // 5 if total > 0 else DEFAULT_MEMORY_HIGH_WATERMARK


#: The ``dest`` of :func:`_messages_and_queues`' options: BrokerConfig fields.
_MESSAGES_AND_QUEUES = (
    "max_message_size",
    "max_queue_depth",
    "max_queue_bytes",
    "queue_overflow",
    "dead_letter",
    "auto_delete",
    "queue_expiry",
    "max_address_length",
    "max_scheduled_messages",
    "max_unsettled_per_link",
    "virtual_hosts",
    "memory_high_watermark",
    "memory_low_watermark",
    "stream_max_bytes",
    "stream_max_age",
    "link_credit_bytes",
    "connection_credit_bytes",
)


def run(args: argparse.Namespace) -> int:
    """Run the broker until SIGINT or SIGTERM (exit status 0); 2 for a bad option, an
    address in use, a bad users file or store."""
    from .. import broker
    from ..broker.server import TLS_PORT
    from ..broker.store import StoreError

    try:
        limits = {name: getattr(args, name) for name in _MESSAGES_AND_QUEUES}
        limits["virtual_hosts"] = {"/", *(limits["virtual_hosts"] or ())}
        limits.update(_broker_limits(args))
        context = _tls_context(args)
    except ValueError as exc:
        print(f"amqp-sansio broker: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        broker.main(
            args.host,
            args.port,
            users_file=args.users,
            store_dir=args.store,
            allow_anonymous=args.allow_anonymous,
            limits=limits,
            ssl_context=context,
            tls_port=TLS_PORT if args.tls_port is None else args.tls_port,
            log_level=args.log_level,
            ws_port=args.ws_port,
            wss_port=args.wss_port,
        )
    except (OSError, broker.OpenBrokerRefused, UsersFileError, StoreError) as exc:
        print(f"amqp-sansio broker: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return 0
