"""Receive messages with Qpid Proton's event-driven API (``Container`` and a
``MessagingHandler``, which accepts each message and keeps a prefetch window of 10 by
default), then close.

    python receive.py URL ADDRESS [--count N] [--copy] [--selector EXPRESSION]

``--copy`` browses (Proton's ``Copy()`` option: distribution-mode ``copy``); ``--selector``
filters with Proton's ``Selector(EXPRESSION)`` (the ``apache.org:selector-filter:string``
filter). One JSON line on standard output: the messages received, each with its id, its
body (text), or the length and SHA-256 of a binary body, and its application properties;
and the names of the filters in the broker's answer (``filter``)."""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

from common import Program, arguments, run
from proton.reactor import Copy, Selector


def describe(message: Any) -> dict[str, Any]:
    body = message.body
    if isinstance(body, bytes | memoryview):
        body = {"length": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    return {"id": message.id, "body": body, "properties": message.properties}


class Receive(Program):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.report: dict[str, Any] = {"received": [], "errors": [], "filter": None}

    def on_start(self, event: Any) -> None:
        options: list[Any] = []
        if self.args.copy:
            options.append(Copy())
        if self.args.selector is not None:
            options.append(Selector(self.args.selector))
        self.receiver = event.container.create_receiver(
            self.args.url + "/" + self.args.address, options=options or None
        )
        self.timer = event.container.schedule(self.args.timeout, self)

    def on_link_opened(self, event: Any) -> None:
        # The filters the broker applies: the source of its attach (core spec 3.5.3).
        data = event.receiver.remote_source.filter
        data.rewind()
        remote = data.get_object() if data.next() else None
        self.report["filter"] = None if remote is None else sorted(str(k) for k in remote)

    def on_timer_task(self, event: Any) -> None:
        self.report["errors"].append(f"timed out after {self.args.timeout} s")
        self.receiver.connection.close()

    def on_message(self, event: Any) -> None:
        self.report["received"].append(describe(event.message))
        if len(self.report["received"]) == self.args.count:
            self.timer.cancel()
            event.connection.close()


def main() -> None:
    parser = arguments("address", timeout=True)
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--copy", action="store_true")
    parser.add_argument("--selector")
    handler = Receive(parser.parse_args())
    run(handler)


if __name__ == "__main__":
    main()
