"""A request/response client written with Qpid Proton's event-driven API: it receives its
replies on a dynamic node (a receiver with a dynamic source: the broker names a temporary
queue), sends each request with that address as ``reply_to``, and waits for every reply.

    python client.py URL ADDRESS REQUEST...

One JSON line on standard output: the replies, each with its correlation id and body, in
the order they came."""

from __future__ import annotations

import argparse
import json
from typing import Any

from proton import Message
from proton.handlers import MessagingHandler
from proton.reactor import Container


class Client(MessagingHandler):
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

    def error(self, event: Any, what: str) -> None:
        self.report["errors"].append(f"{what}: {getattr(event, what).remote_condition}")
        self.timer.cancel()
        event.connection.close()

    def on_link_error(self, event: Any) -> None:
        self.error(event, "link")

    def on_session_error(self, event: Any) -> None:
        self.error(event, "session")

    def on_connection_error(self, event: Any) -> None:
        self.error(event, "connection")

    def on_transport_error(self, event: Any) -> None:
        self.report["errors"].append(f"transport: {event.transport.condition}")
        self.timer.cancel()
        event.connection.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("address")
    parser.add_argument("requests", nargs="+")
    parser.add_argument("--timeout", type=float, default=10.0)
    handler = Client(parser.parse_args())
    Container(handler).run()
    print(json.dumps(handler.report), flush=True)


if __name__ == "__main__":
    main()
