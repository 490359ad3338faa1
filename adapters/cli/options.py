"""The option types and shared options of the ``amqp-sansio`` command's subcommands: each
parse turns a bad value into argparse's one-line usage error (exit status 2)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import Any

from .bench.pipe import parse_size

__all__ = [
    "cli_proxy",
    "connection_options",
    "count",
    "duration",
    "limit",
    "master",
    "or_none",
    "port",
    "positive_int",
    "protocol_options",
    "seconds",
    "size",
    "whole",
]


def limit(kind: type, optional: bool) -> Any:
    """An option's value: a number at least 0 (or ``none``, where the limit may be lifted)."""

    def parse(text: str) -> Any:
        if optional and text.strip().lower() == "none":
            return None
        value = kind(text)
        if value < 0:
            raise ValueError(text)
        return value

    parse.__name__ = kind.__name__  # (argparse names the type in its errors)
    return parse


def whole(text: str) -> int:
    """A whole number as people write them (``1_000``, ``1,000``)."""
    try:
        return int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def positive_int(text: str) -> int:
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def count(text: str) -> int:
    """A count of messages: a whole number, 0 or more."""
    value = whole(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def port(text: str) -> int:
    """A TCP port: 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, not {value}")
    return value


#: The forms of a Spark master URL (the Spark docs' "Master URLs"): local, local[N],
#: local[*], local[N,F], local-cluster[N,C,M], spark://HOST:PORT (several for standby
#: masters), mesos://, k8s://, yarn.
SPARK_MASTER = re.compile(
    r"local(\[(\d+|\*)(,\d+)?\])?|local-cluster\[\d+,\d+,\d+\]|(spark|mesos|k8s)://\S+|yarn"
)


def master(text: str) -> str:
    """A Spark master URL, checked before Spark starts (a bad one ends in a Java stack
    trace otherwise)."""
    if not SPARK_MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"not a Spark master URL: {text!r} (local, local[N], local[*], "
            "spark://HOST:PORT, yarn, k8s://HOST:PORT, mesos://HOST:PORT)"
        )
    return text


def size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
    return value


def duration(text: str) -> float:
    """A number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {text}")
    return value


def or_none(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An option's value, or ``none`` (no limit)."""

    def parse_or_none(text: str) -> Any:
        return None if text.strip().lower() == "none" else parse(text)

    parse_or_none.__name__ = parse.__name__  # (argparse names the type in its errors)
    return parse_or_none


def connection_options(*, address: bool = False) -> argparse.ArgumentParser:
    """The options of every command that connects to a broker; with ``address``, also
    ``--address`` (``send`` and ``receive``: the address of a ``ws://`` URL)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "url",
        metavar="URL",
        help="amqp://[user:password@]host[:port]/ADDRESS, or amqps:// for TLS (port 5671); "
        "the address is the path without its first slash (amqp://h//queue/q is /queue/q); "
        "ws:// and wss:// (AMQP 1.0 over WebSocket): the path is the WebSocket resource",
    )
    if address:
        common.add_argument(
            "--address",
            metavar="NAME",
            help="the address to send to or receive from, in place of the URL's; required "
            "with a ws:// or wss:// URL, whose path is the WebSocket resource, not an address",
        )
    common.add_argument(
        "--timeout",
        type=seconds,
        default=10.0,
        metavar="S",
        help="give up when any one step (connecting, the broker's answer, the next message "
        "or outcome) takes longer than S seconds (default 10)",
    )
    conn = common.add_argument_group("connection")
    conn.add_argument(
        "--cafile",
        metavar="PEM",
        help="verify the broker's certificate against these CAs instead of the system's "
        "(amqps:// only)",
    )
    conn.add_argument(
        "--insecure-skip-verify",
        action="store_true",
        help="do not verify the broker's certificate or host name (amqps:// only; "
        "anyone in the middle can read and change the traffic)",
    )
    conn.add_argument(
        "--sasl-mechanism",
        metavar="NAME",
        help="use this SASL mechanism (PLAIN, SCRAM-SHA-256, ANONYMOUS, ...), or 'none' for "
        "no SASL; by default the strongest both sides support",
    )
    conn.add_argument(
        "--allow-insecure-auth",
        action="store_true",
        help="send the URL's credentials over unencrypted amqp:// to a host that is not "
        "a loopback address",
    )
    conn.add_argument(
        "--proxy",
        metavar="URL",
        help="tunnel through this HTTP proxy (HTTP CONNECT): http://[user:password@]host:port, "
        "for any URL; 'none': no proxy; by default HTTP_PROXY for ws:// and HTTPS_PROXY for "
        "wss:// URLs, unless NO_PROXY names the host (amqp:// and amqps:// go direct)",
    )
    return common


def cli_proxy(value: str | None) -> str | bool | None:
    """The ``proxy`` option of ``connect`` for ``--proxy``: None (the environment's) when
    absent, False for ``none``, else the proxy's URL."""
    if value is None:
        return None
    return False if value.lower() == "none" else value


def protocol_options(parser: argparse.ArgumentParser) -> None:
    """``--protocol`` and ``--vhost``, of ``send`` and ``receive``."""
    parser.add_argument(
        "--protocol",
        choices=("1.0", "0-9-1", "0-10"),
        default="1.0",
        help="the protocol to speak: AMQP 1.0, 0-9-1 (RabbitMQ's own) or 0-10 (Qpid's): with "
        "those two the URL's address is the queue, or the routing key (default 1.0)",
    )
    parser.add_argument(
        "--vhost",
        metavar="NAME",
        help="with --protocol 0-9-1: the virtual host (default /); with 0-10: the "
        "virtual host (default the broker's)",
    )
