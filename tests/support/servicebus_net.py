"""Our engine as a client of the broker's Service Bus side (in memory, tests/support/
broker_net.py): ``<entity>/$management`` asked as the SDK's management link asks it, and
the small helpers the Service Bus broker tests share."""

from __future__ import annotations

from typing import Any

import amqp_sansio as a
from support.broker_net import Client, Net, body

__all__ = ["Management", "depth", "drain", "publish_all"]


def depth(net: Net, address: str) -> int:
    node = net.broker.nodes.get(address)
    return 0 if node is None else node.depth


def drain(client: Client, address: str, **kwargs: Any) -> list[object]:
    receiver = client.receiver(address, 100, **kwargs)
    got = client.received(receiver)
    for event in got:
        receiver.settle(event.delivery, a.Accepted())
    client.net.pump()
    return [body(e) for e in got]


def publish_all(client: Client, address: str, *values: bytes) -> None:
    sender = client.sender(address)
    for value in values:
        client.send(sender, a.Message(body=value))


class Management:
    """A client of ``<entity>/$management`` as the SDK's management link is one."""

    def __init__(self, client: Client, address: str = "orders/$management") -> None:
        self.client = client
        session = client.session or client.begin()
        self.requests = client.sender(address)
        self.responses = session.attach_receiver(
            f"mgmt-{len(session.links)}",
            source=a.Source(address=address),
            target=a.Target(address=address),
        )
        client.net.pump()
        assert self.requests.state is a.LinkState.ATTACHED
        assert self.responses.state is a.LinkState.ATTACHED
        self.responses.flow(100)
        client.net.pump()
        self.ids = 0

    def ask(self, operation: str, value: Any = None) -> tuple[int, dict[str, Any], Any]:
        self.ids += 1
        request = a.Message(
            properties=a.Properties(message_id=self.ids),
            application_properties={"operation": operation},
            body=a.AmqpValue(value),
        )
        delivery = self.client.send(self.requests, request)
        assert isinstance(delivery.remote_state, a.Accepted)
        (event,) = self.client.received(self.responses)
        response = a.Message.decode(event.data)
        assert response.properties is not None
        assert response.properties.correlation_id == self.ids
        props = dict(response.application_properties or {})
        result = response.body.value if isinstance(response.body, a.AmqpValue) else None
        return int(props["statusCode"]), props, result
