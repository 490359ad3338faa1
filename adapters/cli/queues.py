"""``amqp-sansio queues``: list a broker's queues (and streams and topics) through its AMQP
management node, ``$management`` (the AMQP Management working draft's request/response,
as :mod:`amqp_sansio.broker` answers it; docs/broker.rst "Management").

Over the public blocking API (:func:`amqp_sansio.adapters.sockets.connect`), as an
application would: a receiver from a dynamic node (core spec 3.5.3 ``dynamic``) whose
address is every request's reply-to, a sender to ``$management``, and ``QUERY`` requests
of every attribute, a page of :data:`PAGE` nodes at a time (the draft's ``offset`` and
``count``), until a page comes back short. With an address in the URL, one ``READ`` of
that node instead. The command's own reply node is left out of what it prints.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import uuid
from collections.abc import Sequence
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.codec.amqp10
from amqp_sansio.client.ops import ClientError, LinkDetachedError
from amqp_sansio.client.url import AMQPURL

from .. import sockets
from .connect import (
    EXIT_CONNECTION,
    EXIT_INCOMPLETE,
    EXIT_OK,
    ClientOptions,
    CommandError,
    describe_error,
    failure,
    open_connection,
    timed_out,
)
from .transfer import CLOSE_WAIT, run_command

__all__ = ["MANAGEMENT_NODE", "PAGE", "add_parser", "list_queues", "run"]

#: The address of the management node asked.
MANAGEMENT_NODE = "$management"
#: Nodes asked for per QUERY request.
PAGE = 1000
#: The table's columns: (heading, attribute).
COLUMNS = (
    ("NAME", "name"),
    ("TYPE", "type"),
    ("MESSAGES", "depth"),
    ("BYTES", "bytes"),
    ("CONSUMERS", "consumers"),
    ("UNSETTLED", "unsettled"),
    ("DURABLE", "durable"),
)


class _Management:
    """Requests to the management node and their responses, one at a time."""

    def __init__(
        self, conn: sockets.Connection, url: AMQPURL, options: ClientOptions, where: str
    ) -> None:
        self.options = options
        self.url = url
        self.where = where
        timeout = options.timeout
        link = "from a dynamic reply node"
        try:
            self.replies = conn.receiver(None, dynamic=True, credit=1, timeout=timeout)
            link = f"to {MANAGEMENT_NODE}"
            self.requests = conn.sender(MANAGEMENT_NODE, timeout=timeout)
        except TimeoutError:
            raise timed_out(options, f"the broker's attach of the link {link}") from None
        except ClientError as exc:
            raise self._no_management(exc, link) from None
        address = self.replies.address
        if not address:
            raise CommandError(
                f"{where} has no AMQP management: it gave our dynamic reply node no address"
            )
        self.reply_to: str = address

    def _no_management(self, exc: ClientError, link: str) -> CommandError:
        if isinstance(exc, LinkDetachedError):
            # A broker without the management node (RabbitMQ 3's AMQP 1.0 plugin makes no
            # dynamic node for the responses; others refuse the address).
            return CommandError(
                f"{self.where} does not answer AMQP management requests at {MANAGEMENT_NODE}: "
                f"it refused the link {link}: {describe_error(exc.error)}"
            )
        return failure(exc, self.url, self.options, link=link)

    def ask(self, properties: dict[str, Any], body: Any = None) -> tuple[dict[str, Any], Any]:
        """Send one request; its response's application-properties and body value, once
        it says 200 (:class:`CommandError` otherwise)."""
        ident = uuid.uuid4().hex
        request = amqp.Message(
            properties=amqp.Properties(message_id=ident, reply_to=self.reply_to),
            application_properties=properties,
            body=body,
        )
        timeout = self.options.timeout
        try:
            outcome = self.requests.send(request, timeout=timeout)
            if not isinstance(outcome, amqp.Accepted):
                error = getattr(outcome, "error", None)
                reason = describe_error(error) if error is not None else type(outcome).__name__
                raise CommandError(f"the broker did not take the request: {reason}")
            while True:
                delivery = self.replies.receive(timeout=timeout)
                if delivery is None:
                    raise CommandError("the broker closed our reply link")
                delivery.accept()
                response = delivery.message
                if response.properties is not None and str(
                    response.properties.correlation_id
                ) == str(ident):
                    break
        except TimeoutError:
            raise timed_out(self.options, "the management response") from None
        except ClientError as exc:
            raise failure(exc, self.url, self.options, link=f"to {MANAGEMENT_NODE}") from None
        props = response.application_properties or {}
        status = props.get("statusCode")
        if status != 200:
            description = props.get("statusDescription") or "no description"
            shown = int(status) if isinstance(status, int) else repr(status)
            raise CommandError(
                f"the broker answered {shown}: {description}",
                EXIT_INCOMPLETE if status == 404 else EXIT_CONNECTION,
            )
        body_section = response.body
        value = body_section.value if isinstance(body_section, amqp.AmqpValue) else None
        return props, value


def _rows(names: Any, results: Any) -> list[dict[str, Any]]:
    if not isinstance(names, list) or not isinstance(results, list):
        raise CommandError("the broker's QUERY response has no attributeNames and results")
    rows = []
    for result in results:
        if not isinstance(result, list) or len(result) != len(names):
            raise CommandError("the broker's QUERY response has a result of the wrong length")
        rows.append(dict(zip((str(n) for n in names), result, strict=True)))
    return rows


def list_queues(url: AMQPURL, options: ClientOptions) -> list[dict[str, Any]]:
    """The nodes of the broker at ``url`` as the management node gives them: one object of
    attributes each (all its attributes, by name; null where its type has none), in the
    broker's order; only the node of the URL's address, if it has one."""
    where = f"{url.host}:{url.port}"
    conn = open_connection(url, options, role="queues")
    try:
        management = _Management(conn, url, options, where)
        if url.address:
            _, value = management.ask({"operation": "READ", "name": url.address})
            if not isinstance(value, dict):
                raise CommandError("the broker's READ response has no attributes")
            return [{str(k): v for k, v in value.items()}]
        rows: list[dict[str, Any]] = []
        offset = 0
        while True:
            _, value = management.ask(
                {
                    "operation": "QUERY",
                    "type": "org.amqp.management",
                    "name": "self",
                    "offset": amqp.codec.amqp10.types.UInt(offset),
                    "count": amqp.codec.amqp10.types.UInt(PAGE),
                },
                {"attributeNames": []},
            )
            if not isinstance(value, dict):
                raise CommandError("the broker's QUERY response has no body")
            page = _rows(value.get("attributeNames"), value.get("results"))
            rows += page
            offset += len(page)
            if len(page) < PAGE:
                break
        return [row for row in rows if row.get("name") != management.reply_to]
    finally:
        with contextlib.suppress(ClientError, TimeoutError, OSError):
            conn.close(timeout=min(CLOSE_WAIT, options.timeout))


def _cell(value: Any, attribute: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if attribute == "type" and isinstance(value, str):
        return value.rsplit(".", 1)[-1]
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def format_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as an aligned table: names and types left, numbers right."""
    table = [[heading for heading, _ in COLUMNS]]
    for row in rows:
        table.append([_cell(row.get(attribute), attribute) for _, attribute in COLUMNS])
    widths = [max(len(line[i]) for line in table) for i in range(len(COLUMNS))]
    lines = []
    for line in table:
        cells = []
        for i, cell in enumerate(line):
            left = COLUMNS[i][1] in ("name", "type", "durable")
            cells.append(cell.ljust(widths[i]) if left else cell.rjust(widths[i]))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    return str(value)


def add_parser(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add ``queues`` to the command's subparsers; ``common`` holds the options of every
    command that connects (:func:`.options.connection_options`)."""
    parser = sub.add_parser(
        "queues",
        parents=[common],
        help="list a broker's queues, streams and topics (AMQP management QUERY)",
        description="List the queues, streams and topics of the broker at URL, with the "
        "messages each holds, their bytes, consumers and unsettled deliveries, through its "
        "AMQP management node ($management; amqp-sansio broker has one). With an address "
        "in the URL, only that node. Exit status: 0 listed, 1 no such node, 2 usage error, "
        "3 connection, TLS or authentication failed, or the broker has no management node, "
        "4 timed out.",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of objects, one per node with every attribute the broker "
        "gave, instead of the table",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Run ``queues``: the exit status, every failure as one line."""
    return run_command(args, _list)


def _list(url: AMQPURL, options: ClientOptions, args: argparse.Namespace) -> int:
    rows = list_queues(url, options)
    if args.json:
        # (An attribute a node's type has not comes as null: left out.)
        objects = [{k: _jsonable(v) for k, v in row.items() if v is not None} for row in rows]
        print(json.dumps(objects, indent=2))
    elif rows:
        print(format_table(rows))
    else:
        print("no queues")
    return EXIT_OK
