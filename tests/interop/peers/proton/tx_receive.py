"""Receive messages and accept them in a local transaction with Qpid Proton's event-driven
API (``Container.declare_transaction``, ``Transaction.accept``), then commit or abort it.

    python tx_receive.py URL ADDRESS [--count N] (--commit | --abort)

The receiver grants credit for ``N`` messages once the transaction is declared, accepts
each in the transaction, and discharges it when all ``N`` came. One JSON line on standard
output: the messages (id and body) and how the transaction ended."""

from __future__ import annotations

import argparse
from typing import Any

from common import Transactional, arguments, run


class TxReceive(Transactional):
    def __init__(self, args: argparse.Namespace) -> None:
        super().__init__(prefetch=0, auto_accept=False)
        self.args = args
        self.report: dict[str, Any] = {"received": [], "ended": None, "errors": []}
        self.transaction: Any = None

    def on_start(self, event: Any) -> None:
        self.connection = event.container.connect(self.args.url)
        self.receiver = event.container.create_receiver(self.connection, self.args.address)
        event.container.declare_transaction(self.connection, handler=self)
        self.timer = event.container.schedule(self.args.timeout, self)

    def on_timer_task(self, event: Any) -> None:
        self.report["errors"].append(f"timed out after {self.args.timeout} s")
        self.connection.close()

    def on_transaction_declared(self, event: Any) -> None:
        self.transaction = event.transaction
        self.receiver.flow(self.args.count)

    def on_message(self, event: Any) -> None:
        self.report["received"].append({"id": event.message.id, "body": event.message.body})
        self.transaction.accept(event.delivery)
        if len(self.report["received"]) == self.args.count:
            if self.args.commit:
                self.transaction.commit()
            else:
                self.transaction.abort()


def main() -> None:
    parser = arguments("address", timeout=True)
    parser.add_argument("--count", type=int, default=1)
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--commit", action="store_true")
    how.add_argument("--abort", action="store_true")
    handler = TxReceive(parser.parse_args())
    run(handler)


if __name__ == "__main__":
    main()
