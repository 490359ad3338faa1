"""Connection negotiation for both roles (0-9-1 spec, class ``connection``: ``start``,
``start-ok``, ``secure``, ``secure-ok``, ``tune``, ``tune-ok``, ``open``), without state:
the SASL mechanisms as 0-9-1 carries them, the properties each side announces, and the
rule that turns two proposals into one value.

The mechanisms, of both protocols and both roles, and the choice among them are
:mod:`amqp_sansio.security.mechanisms`' (PLAIN, EXTERNAL, and AMQPLAIN, the 0-8 mechanism
RabbitMQ still offers; :func:`~amqp_sansio.security.mechanisms.first_offered`). A 0-9-1
``connection.start-ok`` carries the mechanism's initial response in ``response``; a
``connection.secure`` challenge is answered with ``respond()`` in ``secure-ok``.
"""

from __future__ import annotations

import platform

from ...codec.amqp091 import FieldTable
from ...security.mechanisms import SASLClientMechanism, SASLError
from ...security.mechanisms.amqplain import read_response

__all__ = [
    "CLIENT_CAPABILITIES",
    "SERVER_CAPABILITIES",
    "login_identity",
    "client_properties",
    "negotiate",
    "read_login",
    "server_properties",
]

#: What the client announces in ``client-properties["capabilities"]``: pika's set
#: (RabbitMQ reads ``connection.blocked`` before it sends ``connection.blocked``, and
#: ``authentication_failure_close`` before it answers a refused login with
#: ``connection.close`` 403 instead of closing the socket).
CLIENT_CAPABILITIES: FieldTable = {
    "authentication_failure_close": True,
    "basic.nack": True,
    "connection.blocked": True,
    "consumer_cancel_notify": True,
    "exchange_exchange_bindings": True,
    "publisher_confirms": True,
}
#: What a server role announces in ``server-properties["capabilities"]``: RabbitMQ's set
#: for what this engine carries.
SERVER_CAPABILITIES: FieldTable = {
    "authentication_failure_close": True,
    "basic.nack": True,
    "connection.blocked": True,
    "consumer_cancel_notify": True,
    "direct_reply_to": True,
    "exchange_exchange_bindings": True,
    "per_consumer_qos": True,
    "publisher_confirms": True,
}


def client_properties(extra: FieldTable | None = None) -> FieldTable:
    """The ``client-properties`` of ``connection.start-ok`` (0-9-1 spec: ``product``,
    ``platform``, ``information``, and RabbitMQ's ``capabilities``), with
    ``extra``'s keys over them; ``capabilities`` in ``extra`` are merged, not replaced."""
    props: FieldTable = {
        "product": "amqp-sansio",
        "platform": f"Python {platform.python_version()}",
        "information": "https://github.com/amqp-sansio",
        "capabilities": dict(CLIENT_CAPABILITIES),
    }
    return _merged(props, extra)


def server_properties(extra: FieldTable | None = None) -> FieldTable:
    """The ``server-properties`` of ``connection.start``, as :func:`client_properties`:
    the keys RabbitMQ sends (``product``, ``platform``, ``copyright``, ``information``,
    ``capabilities``; ``version`` is the server's to give, in ``extra``)."""
    props: FieldTable = {
        "product": "amqp-sansio",
        "platform": f"Python {platform.python_version()}",
        "copyright": "Copyright (c) the amqp-sansio authors",
        "information": "Licensed under the Apache License 2.0. Website: "
        "https://github.com/amqp-sansio",
        "capabilities": dict(SERVER_CAPABILITIES),
    }
    return _merged(props, extra)


def _merged(props: FieldTable, extra: FieldTable | None) -> FieldTable:
    for key, value in (extra or {}).items():
        base = props.get(key)
        if isinstance(base, dict) and isinstance(value, dict):
            props[key] = {**base, **value}
        else:
            props[key] = value
    return props


def negotiate(ours: int, theirs: int) -> int:
    """One value from two proposals of ``channel-max``, ``frame-max`` or ``heartbeat``,
    where 0 means "no limit" (0-9-1 spec, ``connection.tune``): the lower of the two, or
    the other when one is 0 (RabbitMQ's rule, its Java client's ``negotiatedMaxValue``)."""
    if not ours or not theirs:
        return max(ours, theirs)
    return min(ours, theirs)


def login_identity(mechanism: SASLClientMechanism, username: str | None) -> str | None:
    """Who the client logs in as: ``username``, the name a PLAIN or AMQPLAIN mechanism
    carries, or None for EXTERNAL (the server names it, from the client certificate)."""
    if mechanism.name == "EXTERNAL":
        return None
    if username is None and mechanism.name in ("PLAIN", "AMQPLAIN"):
        found: str | None = getattr(mechanism, "username", None)
        return found
    return username


def read_login(mechanism: str, response: bytes) -> tuple[str | None, str | None]:
    """(username, password) from a ``start-ok`` response: PLAIN's ``authzid NUL authcid NUL
    password`` (RFC 4616; the authcid), AMQPLAIN's table, EXTERNAL's authorization identity
    (password None); (None, None) for another mechanism. Raises :class:`ValueError` for a
    response its mechanism cannot read."""
    if mechanism == "PLAIN":
        fields = response.split(b"\x00")
        if len(fields) != 3:
            raise ValueError("PLAIN response must have three NUL-separated fields")
        username, password = fields[1].decode(), fields[2].decode()
        return username, password
    if mechanism == "AMQPLAIN":
        try:
            return read_response(response)
        except SASLError as exc:
            raise ValueError(exc.description) from exc
    if mechanism == "EXTERNAL":
        return response.decode(), None
    return None, None
