"""The Azure Service Bus SDK tests' fixtures, ``broker``, ``client`` and ``queue``
(tests/support/servicebus.py says what each is). A module that defines a fixture of the same
name uses its own: the other interop modules each start their ``broker`` themselves."""

from __future__ import annotations

from support.servicebus import broker, client, queue

__all__ = ["broker", "client", "queue"]
