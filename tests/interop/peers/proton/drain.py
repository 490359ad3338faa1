"""Drain a queue with Qpid Proton's event-driven API: a receiver without prefetch
(``MessagingHandler(prefetch=0)``) calls ``receiver.drain(N)``: it grants ``N`` credits with
the drain flag (core spec 2.6.7), so that the sender uses what it can at once and gives the
rest back.

    python drain.py URL ADDRESS --credit N

The drain is over when the credit is 0: used by transfers, or given back by the broker's
flow. One JSON line on standard output: the messages received (id and body), the credit
left, and any errors."""

from __future__ import annotations

import argparse
from typing import Any

from common import Program, arguments, run


class Drain(Program):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(prefetch=0)
        self.args = args
        self.report: dict[str, Any] = {"received": [], "credit": None, "errors": []}
        self.draining = False

    def on_start(self, event: Any) -> None:
        self.receiver = event.container.create_receiver(self.args.url + "/" + self.args.address)
        self.timer = event.container.schedule(self.args.timeout, self)

    def on_timer_task(self, event: Any) -> None:
        self.report["errors"].append(f"timed out after {self.args.timeout} s")
        self.receiver.connection.close()

    def on_link_opened(self, event: Any) -> None:
        self.receiver.drain(self.args.credit)
        self.draining = True

    def on_message(self, event: Any) -> None:
        self.report["received"].append({"id": event.message.id, "body": event.message.body})
        self.check(event)

    def on_link_flow(self, event: Any) -> None:
        self.check(event)

    def check(self, event: Any) -> None:
        # Drained: every credit used by a transfer, or given back by the broker's flow.
        # (Proton's draining() turns false as soon as the credit left does not exceed the
        # deliveries queued, which can be before the broker has answered.)
        if self.draining and self.receiver.credit == 0:
            self.draining = False
            self.report["credit"] = self.receiver.credit
            self.timer.cancel()
            event.connection.close()


def main() -> None:
    parser = arguments("address", timeout=True)
    parser.add_argument("--credit", type=int, required=True)
    handler = Drain(parser.parse_args())
    run(handler)


if __name__ == "__main__":
    main()
