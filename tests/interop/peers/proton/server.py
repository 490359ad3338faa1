"""A request/response server written with Qpid Proton's event-driven API: it takes requests
from a queue and answers each through one *anonymous relay* sender (a sender with no
target address; each reply names its own destination in ``to``: the request's
``reply_to``). Like Proton's own server example, it refuses to start when the broker does
not offer the ``ANONYMOUS-RELAY`` capability in its open.

    python server.py URL ADDRESS --count N

It prints ``ready`` once its receiver is attached, serves ``N`` requests (the reply's body
is the request's in upper case, its correlation id the request's id), waits for the
replies to be accepted, and prints one JSON line: the requests served and any errors. It
exits with status 2 if the broker does not offer ``ANONYMOUS-RELAY``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from common import Program, arguments, run
from proton import Message, symbol


class Server(Program):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.report: dict[str, Any] = {"served": [], "accepted": 0, "errors": []}
        self.refused = False

    def on_start(self, event: Any) -> None:
        self.container = event.container
        self.connection = event.container.connect(self.args.url)

    def on_connection_opened(self, event: Any) -> None:
        offered = event.connection.remote_offered_capabilities or ()
        if symbol("ANONYMOUS-RELAY") not in offered:
            self.refused = True
            self.report["errors"].append(
                f"the broker does not offer ANONYMOUS-RELAY (offered: {list(offered)})"
            )
            event.connection.close()
            return
        self.receiver = self.container.create_receiver(self.connection, self.args.address)
        self.relay = self.container.create_sender(self.connection, None)

    def on_link_opened(self, event: Any) -> None:
        if event.link == self.receiver:
            print("ready", flush=True)

    def on_message(self, event: Any) -> None:
        request = event.message
        reply = Message(
            address=request.reply_to, body=str(request.body).upper(), correlation_id=request.id
        )
        self.relay.send(reply)
        self.report["served"].append(request.id)

    def on_accepted(self, event: Any) -> None:
        self.report["accepted"] += 1
        if self.report["accepted"] == self.args.count:
            event.connection.close()

    def on_rejected(self, event: Any) -> None:
        self.report["errors"].append(f"reply rejected: {event.delivery.remote.condition}")


def main() -> None:
    parser = arguments("address")
    parser.add_argument("--count", type=int, default=1)
    handler = Server(parser.parse_args())
    run(handler)
    sys.exit(2 if handler.refused else 0)


if __name__ == "__main__":
    main()
