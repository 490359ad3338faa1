"""Send messages in a local transaction with Qpid Proton's event-driven API
(``Container.declare_transaction`` and a ``TransactionHandler``), then commit or abort it.

    python tx_send.py URL ADDRESS [--count N] [--prefix P] (--commit | --abort)

Message ``i`` (from 1) has the id ``P-i`` and the body ``"P i"``. One JSON line on standard
output: the ids sent and how the transaction ended
(``committed``, ``aborted``, or ``declare-failed`` / ``commit-failed``)."""

from __future__ import annotations

import argparse
from typing import Any

from common import Transactional, arguments, run
from proton import Message


class TxSend(Transactional):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__()
        self.args = args
        self.report: dict[str, Any] = {"sent": [], "ended": None, "errors": []}
        self.transaction: Any = None
        self.sent = 0

    def on_start(self, event: Any) -> None:
        self.container = event.container
        self.connection = event.container.connect(self.args.url)
        self.sender = event.container.create_sender(self.connection, self.args.address)
        event.container.declare_transaction(self.connection, handler=self)

    def on_transaction_declared(self, event: Any) -> None:
        self.transaction = event.transaction
        self.send()

    def on_sendable(self, event: Any) -> None:
        self.send()

    def send(self) -> None:
        if self.transaction is None:
            return
        while self.sender.credit and self.sent < self.args.count:
            self.sent += 1
            i = self.sent
            message = Message(id=f"{self.args.prefix}-{i}", body=f"{self.args.prefix} {i}")
            self.transaction.send(self.sender, message)
            self.report["sent"].append(message.id)
        if self.sent == self.args.count:
            # As Proton's transactional senders do: discharge once the batch is written.
            # The transfers' provisional outcomes (transactional-state, core spec 4.4.1)
            # are not accepted ones to Proton's MessagingHandler, so it does not wait for them.
            if self.args.commit:
                self.transaction.commit()
            else:
                self.transaction.abort()
            self.transaction = None


def main() -> None:
    parser = arguments("address")
    parser.add_argument("--count", type=int, default=1)
    parser.add_argument("--prefix", default="message")
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--commit", action="store_true")
    how.add_argument("--abort", action="store_true")
    handler = TxSend(parser.parse_args())
    run(handler)


if __name__ == "__main__":
    main()
