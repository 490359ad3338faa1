"""A durable subscription with Qpid Proton's event-driven API: a fixed container id, a
named receiver with Proton's ``DurableSubscription()`` option (source durability
``unsettled-state``, expiry-policy ``never``: core spec 3.5.3, 3.5.6), detached with
``receiver.detach()`` (a detach without ``closed``, which keeps the link's terminus, 2.6.6)
and attached again by name.

    python durable_subscribe.py URL TOPIC --container-id ID --name LINK
        [--expect N] [--before N] [--during N] [--end detach|close]

In order, each step only when asked:

1. attach and receive ``--expect N`` messages already waiting for the subscription;
2. publish ``--before N`` messages to the topic (ids ``before-i``) and receive them;
3. detach, publish ``--during N`` messages (``during-i``) while detached, attach again
   with the same name and options, and receive them;
4. end the link: ``detach`` (the subscription stays for a later run) or ``close`` (it ends).

One JSON line on standard output: the ids received in each step."""

from __future__ import annotations

import argparse
from typing import Any

from common import Program, arguments, run
from proton import Message
from proton.reactor import DurableSubscription


class Subscriber(Program):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.report: dict[str, Any] = {
            "expected": [], "before": [], "during": [], "ended": None, "errors": []
        }  # fmt: skip
        self.step = "expected"
        self.published = 0

    def on_start(self, event: Any) -> None:
        self.container = event.container
        self.connection = event.container.connect(self.args.url)
        self.publisher = event.container.create_sender(self.connection, self.args.topic)
        self.subscribe()
        self.timer = event.container.schedule(self.args.timeout, self)

    def subscribe(self) -> None:
        self.receiver = self.container.create_receiver(
            self.connection, self.args.topic, name=self.args.name, options=DurableSubscription()
        )

    def on_timer_task(self, event: Any) -> None:
        self.report["errors"].append(f"timed out after {self.args.timeout} s in {self.step}")
        self.connection.close()

    def wanted(self) -> int:
        counts: dict[str, int] = {
            "expected": self.args.expect, "before": self.args.before, "during": self.args.during
        }  # fmt: skip
        return counts[self.step]

    def on_link_opened(self, event: Any) -> None:
        if event.receiver == self.receiver:
            self.advance()

    def advance(self) -> None:
        # Move on past every step that has all it wanted.
        while len(self.report[self.step]) >= self.wanted():
            if self.step == "expected":
                self.step = "before"
                self.publish("before", self.args.before)
            elif self.step == "before":
                self.step = "during"
                if self.args.during:
                    self.receiver.detach()
                    return  # goes on in on_link_remote_detach
            else:
                self.finish()
                return

    def publish(self, prefix: str, count: int) -> None:
        for i in range(1, count + 1):
            self.publisher.send(Message(id=f"{prefix}-{i}", body=f"{prefix} {i}"))

    def on_link_remote_detach(self, event: Any) -> None:
        if event.link == self.receiver and self.step == "during":
            self.publish("during", self.args.during)

    def on_accepted(self, event: Any) -> None:
        # While detached: once the publishes are accepted, attach again.
        if self.step == "during" and event.link == self.publisher:
            self.published += 1
            if self.published == self.args.during:
                self.subscribe()

    def on_message(self, event: Any) -> None:
        self.report[self.step].append(event.message.id)
        self.advance()

    def finish(self) -> None:
        self.timer.cancel()
        self.report["ended"] = self.args.end
        if self.args.end == "detach":
            self.receiver.detach()
        else:
            self.receiver.close()
        self.connection.close()


def main() -> None:
    parser = arguments("topic", timeout=True)
    parser.add_argument("--container-id", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--expect", type=int, default=0)
    parser.add_argument("--before", type=int, default=0)
    parser.add_argument("--during", type=int, default=0)
    parser.add_argument("--end", choices=["detach", "close"], default="close")
    args = parser.parse_args()
    handler = Subscriber(args)
    run(handler, container_id=args.container_id)  # the subscription: (container id, link name)


if __name__ == "__main__":
    main()
