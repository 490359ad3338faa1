"""What tests of the Azure Service Bus SDK (``azure-servicebus``) against ``amqp-sansio
broker`` share: the emulator connection string the SDK's users write for a local endpoint
(``UseDevelopmentEmulator=true``: plain AMQP, a SAS token put to ``$cbs``), and the bodies
of received messages.

::

    from support.servicebus_sdk import connection_string

    with BrokerProcess() as broker:           # amqp-sansio broker, no options
        sb = ServiceBusClient.from_connection_string(connection_string(broker.port))
"""

from __future__ import annotations

from typing import Any

__all__ = ["KEY", "KEY_NAME", "bodies", "connection_string"]

KEY_NAME = "RootManageSharedAccessKey"
KEY = "c2VjcmV0LWtleS1mb3ItdGhlLXRlc3Rz"


def connection_string(port: int, key: str = KEY, key_name: str = KEY_NAME) -> str:
    """The emulator connection string for a broker on ``127.0.0.1:port``."""
    return (
        f"Endpoint=sb://127.0.0.1:{port};SharedAccessKeyName={key_name};"
        f"SharedAccessKey={key};UseDevelopmentEmulator=true"
    )


def bodies(messages: list[Any]) -> list[str]:
    """The bodies of the SDK's received messages, as strings."""
    return [str(m) for m in messages]
