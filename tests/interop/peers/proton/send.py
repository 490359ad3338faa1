"""Send messages with Qpid Proton's event-driven API (``Container`` and a
``MessagingHandler``), with Proton's defaults, and wait until each is accepted.

    python send.py URL ADDRESS [--count N] [--prefix P] [--size BYTES] [--durable]
                   [--property NAME=VALUE ...]

Message ``i`` (from 1) has the id ``P-i`` and the body ``"P i"`` (text), or with ``--size``
``BYTES`` bytes of a pattern that depends on ``i`` (see :func:`payload`). ``--property``
sets an application property on every message; ``NAME=V1,V2,...`` gives message ``i`` the
value ``V(i mod k)``. One JSON line on standard output says what happened: the ids sent,
and those accepted, rejected, released."""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

from common import Program, arguments, run
from proton import Message


def payload(i: int, size: int) -> bytes:
    """``size`` bytes, different for each ``i``: SHA-256 chains, repeated."""
    block = hashlib.sha256(str(i).encode()).digest() * 2048  # 64 KiB
    return (block * (size // len(block) + 1))[:size]


class Send(Program):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.next = 1
        self.report: dict[str, Any] = {
            "sent": [], "accepted": [], "rejected": [], "released": [], "errors": []
        }  # fmt: skip
        self.outstanding = 0

    def on_start(self, event: Any) -> None:
        event.container.create_sender(self.args.url + "/" + self.args.address)

    def message(self, i: int) -> Message:
        a = self.args
        properties = {}
        for item in a.property:
            name, _, values = item.partition("=")
            choices = values.split(",")
            properties[name] = choices[i % len(choices)]
        body: Any = payload(i, a.size) if a.size is not None else f"{a.prefix} {i}"
        return Message(
            id=f"{a.prefix}-{i}", body=body, durable=a.durable, properties=properties or None
        )

    def on_sendable(self, event: Any) -> None:
        while event.sender.credit and self.next <= self.args.count:
            delivery = event.sender.send(self.message(self.next))
            delivery.message_id = f"{self.args.prefix}-{self.next}"
            self.report["sent"].append(delivery.message_id)
            self.next += 1
            self.outstanding += 1

    def settled(self, event: Any, outcome: str) -> None:
        self.report[outcome].append(event.delivery.message_id)
        self.outstanding -= 1
        if self.outstanding == 0 and self.next > self.args.count:
            event.connection.close()

    def on_accepted(self, event: Any) -> None:
        self.settled(event, "accepted")

    def on_rejected(self, event: Any) -> None:
        self.settled(event, "rejected")

    def on_released(self, event: Any) -> None:
        self.settled(event, "released")


def main() -> None:
    parser = arguments("address")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--prefix", default="message")
    parser.add_argument("--size", type=int)
    parser.add_argument("--durable", action="store_true")
    parser.add_argument("--property", action="append", default=[])
    handler = Send(parser.parse_args())
    run(handler)


if __name__ == "__main__":
    main()
