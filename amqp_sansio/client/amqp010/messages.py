"""What an AMQP 0-10 application sends and receives: the header structs of a
``message.transfer`` made from simple arguments (:func:`message_header`), a received
message (:class:`Delivery`), and the error of a refused command (:class:`SessionError`).
0-10 spec, class ``message`` (``delivery-properties``, ``message-properties``,
``message.transfer``) and ``execution.exception``."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping
from typing import Any

from amqp_sansio.client.ops import ClientError
from amqp_sansio.definitions import amqp010 as spec

__all__ = ["DURABLE", "Delivery", "MessageId", "SessionError", "message_header"]

#: A ``message-id``: a UUID, or its text.
MessageId = uuid.UUID | str

#: ``delivery-properties.delivery-mode`` of a message kept across a broker restart (0-10
#: spec, ``message.delivery-mode``: 1 non-persistent, 2 persistent).
DURABLE = 2


class SessionError(ClientError):
    """The peer refused a command with ``execution.exception`` (0-10 spec,
    ``execution.exception``): ``error_code`` (an ``execution.error-code``: 404
    ``not-found``, 403 ``unauthorized-access``, ...), the refused ``command_id`` and the
    peer's ``description``. The session is detached; its state is not kept."""

    def __init__(
        self, description: str, *, error_code: int | None = None, command_id: int | None = None
    ) -> None:
        super().__init__(description)
        self.error_code = error_code
        self.command_id = command_id


def message_header(
    *,
    routing_key: str | None = None,
    exchange: str | None = None,
    durable: bool = False,
    content_type: str | None = None,
    content_encoding: str | None = None,
    correlation_id: str | bytes | None = None,
    reply_to: str | None = None,
    message_id: MessageId | None = None,
    headers: Mapping[str, object] | None = None,
    priority: int | None = None,
    ttl: int | None = None,
) -> tuple[spec.Struct, ...]:
    """The header of a ``message.transfer`` (0-10 spec, ``message.delivery-properties``
    and ``message.message-properties``) from simple arguments: ``durable`` is
    ``delivery-mode`` 2 (persistent); ``reply_to`` a routing key on the default exchange
    (``reply-to``); ``message_id`` a UUID (or its text); ``headers`` the
    ``application-headers``. The message properties are left out when none is given.
    The delivery properties are made once for each set of their values (the structs
    are frozen: one serves every message alike)."""
    delivery = _delivery_only(routing_key, exchange, durable, priority, ttl)
    if isinstance(correlation_id, str):
        correlation_id = correlation_id.encode()
    if isinstance(message_id, str):
        message_id = uuid.UUID(message_id)
    given: dict[str, Any] = {
        "content_type": content_type,
        "content_encoding": content_encoding,
        "correlation_id": correlation_id,
        "reply_to": None if reply_to is None else spec.ReplyTo(routing_key=reply_to),
        "message_id": message_id,
        "application_headers": None if headers is None else dict(headers),
    }
    present = {name: value for name, value in given.items() if value is not None}
    if not present:
        return delivery
    return (*delivery, spec.MessageProperties(**present))


@functools.lru_cache(maxsize=256)
def _delivery_only(
    routing_key: str | None,
    exchange: str | None,
    durable: bool,
    priority: int | None,
    ttl: int | None,
) -> tuple[spec.Struct, ...]:
    """A header of the delivery properties alone (see :func:`message_header`)."""
    return (
        spec.DeliveryProperties(
            routing_key=routing_key,
            exchange=exchange,
            delivery_mode=DURABLE if durable else None,
            priority=priority,
            ttl=ttl,
        ),
    )


class Delivery:
    """A message that arrived on a session (``message.transfer``, 0-10 spec class
    ``message``): its ``destination`` (the subscription's, or the one the peer chose),
    ``body``, ``header`` structs, and the ``command_id`` of its transfer, which
    :meth:`accept` names. Its properties read as attributes (``routing_key``,
    ``content_type``, ``correlation_id``, ``reply_to``, ``message_id``, ``headers``)."""

    def __init__(
        self, command_id: int, destination: str, header: tuple[spec.Struct, ...], body: bytes
    ) -> None:
        self.command_id = command_id
        self.destination = destination
        self.header = header
        self.body = body

    def __repr__(self) -> str:
        return f"<Delivery {self.destination!r} #{self.command_id}: {len(self.body)} octets>"

    def _struct(self, kind: type[spec.Struct]) -> Any:
        return next((s for s in self.header if isinstance(s, kind)), None)

    @property
    def delivery_properties(self) -> spec.DeliveryProperties | None:
        found: spec.DeliveryProperties | None = self._struct(spec.DeliveryProperties)
        return found

    @property
    def message_properties(self) -> spec.MessageProperties | None:
        found: spec.MessageProperties | None = self._struct(spec.MessageProperties)
        return found

    @property
    def routing_key(self) -> str | None:
        props = self.delivery_properties
        return None if props is None else props.routing_key

    @property
    def durable(self) -> bool:
        props = self.delivery_properties
        return props is not None and props.delivery_mode == DURABLE

    def _property(self, name: str) -> Any:
        props = self.message_properties
        return None if props is None else getattr(props, name)

    @property
    def content_type(self) -> str | None:
        value: str | None = self._property("content_type")
        return value

    @property
    def correlation_id(self) -> bytes | None:
        value: bytes | None = self._property("correlation_id")
        return value

    @property
    def reply_to(self) -> str | None:
        value: spec.ReplyTo | None = self._property("reply_to")
        return None if value is None else value.routing_key

    @property
    def message_id(self) -> uuid.UUID | None:
        value: uuid.UUID | None = self._property("message_id")
        return value

    @property
    def headers(self) -> dict[str, Any]:
        value: dict[str, Any] | None = self._property("application_headers")
        return dict(value or {})
