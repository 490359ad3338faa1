"""What the Proton programs here share (as ``../rhea/common.js`` does for the rhea ones):
their command line (the URL first, then their own arguments), ending on the peer's error,
and the one JSON line each prints at the end.

Each program is written as Proton's users write one: a ``MessagingHandler`` run by a
``Container``. Its handler derives from :class:`Program` and keeps what it has to say in
``report``, a dict with a list ``errors``; :func:`run` runs it and prints the report.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from proton.handlers import MessagingHandler, TransactionHandler
from proton.reactor import Container


class Program(MessagingHandler):
    """A handler that reports. An error of a link, session, connection or transport goes
    into ``report["errors"]`` and closes the connection, cancelling ``timer`` (the
    program's time-out, if it has one)."""

    report: dict[str, Any]
    timer: Any = None

    def end(self, connection: Any) -> None:
        """Cancel the time-out and close ``connection``."""
        if self.timer is not None:
            self.timer.cancel()
        connection.close()

    def error(self, event: Any, what: str) -> None:
        self.report["errors"].append(f"{what}: {getattr(event, what).remote_condition}")
        self.end(event.connection)

    def on_link_error(self, event: Any) -> None:
        self.error(event, "link")

    def on_session_error(self, event: Any) -> None:
        self.error(event, "session")

    def on_connection_error(self, event: Any) -> None:
        self.error(event, "connection")

    def on_transport_error(self, event: Any) -> None:
        self.report["errors"].append(f"transport: {event.transport.condition}")
        self.end(event.connection)


class Transactional(Program, TransactionHandler):
    """A program with one transaction: how it ended goes into ``report["ended"]``
    (``committed``, ``aborted``, ``declare-failed`` or ``commit-failed``), and then the
    program ends (it closes ``connection``)."""

    connection: Any

    def ended(self, how: str) -> None:
        self.report["ended"] = how
        self.end(self.connection)

    def on_transaction_committed(self, event: Any) -> None:
        self.ended("committed")

    def on_transaction_aborted(self, event: Any) -> None:
        self.ended("aborted")

    def on_transaction_declare_failed(self, event: Any) -> None:
        self.ended("declare-failed")

    def on_transaction_commit_failed(self, event: Any) -> None:
        self.ended("commit-failed")


def arguments(*positional: str, timeout: bool = False) -> argparse.ArgumentParser:
    """A command line of ``URL``, then the ``positional`` arguments, and with ``timeout``
    the option ``--timeout SECONDS`` (10 by default); the program adds its own options."""
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    for name in positional:
        parser.add_argument(name)
    if timeout:
        parser.add_argument("--timeout", type=float, default=10.0)
    return parser


def run(handler: Program, *, container_id: str | None = None) -> None:
    """Run ``handler`` in a ``Container`` (with ``container_id``, if given) until it has
    nothing more to do, then print its report as one JSON line."""
    container = Container(handler)
    if container_id is not None:
        container.container_id = container_id
    container.run()
    print(json.dumps(handler.report), flush=True)
