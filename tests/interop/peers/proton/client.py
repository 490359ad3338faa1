"""A request/response client written with Qpid Proton's event-driven API: it receives its
replies on a dynamic node (a receiver with a dynamic source: the broker names a temporary
queue), sends each request with that address as ``reply_to``, and waits for every reply.

    python client.py URL ADDRESS REQUEST...

One JSON line on standard output: the replies, each with its correlation id and body, in
the order they came."""

from __future__ import annotations

import argparse
from typing import Any

from common import Program, arguments, run
from proton import Message


class Client(Program):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.report: dict[str, Any] = {"replies": [], "reply_to": None, "errors": []}

    def on_start(self, event: Any) -> None:
        connection = event.container.connect(self.args.url)
        self.sender = event.container.create_sender(connection, self.args.address)
        self.receiver = event.container.create_receiver(connection, None, dynamic=True)
        self.timer = event.container.schedule(self.args.timeout, self)

    def on_link_opened(self, event: Any) -> None:
        if event.receiver == self.receiver:
            self.report["reply_to"] = address = self.receiver.remote_source.address
            for i, text in enumerate(self.args.requests, 1):
                self.sender.send(Message(id=f"request-{i}", reply_to=address, body=text))

    def on_timer_task(self, event: Any) -> None:
        self.report["errors"].append(f"timed out after {self.args.timeout} s")
        self.receiver.connection.close()

    def on_message(self, event: Any) -> None:
        reply = event.message
        self.report["replies"].append({"correlation_id": reply.correlation_id, "body": reply.body})
        if len(self.report["replies"]) == len(self.args.requests):
            self.timer.cancel()
            event.connection.close()


def main() -> None:
    parser = arguments("address", timeout=True)
    parser.add_argument("requests", nargs="+")
    handler = Client(parser.parse_args())
    run(handler)


if __name__ == "__main__":
    main()
