"""Connection negotiation for both roles (0-9-1 spec, class ``connection``: ``start``,
``start-ok``, ``secure``, ``secure-ok``, ``tune``, ``tune-ok``, ``open``), without state:
the SASL mechanisms as 0-9-1 carries them, the properties each side announces, and the
rule that turns two proposals into one value.

The client mechanisms are the 1.0 side's (:mod:`amqp_sansio.security.mechanisms`: PLAIN,
EXTERNAL) plus :class:`AMQPlainClient`, the 0-8 mechanism RabbitMQ still offers. A 0-9-1
``connection.start-ok`` carries the mechanism's initial response in ``response``; a
``connection.secure`` challenge is answered with ``respond()`` in ``secure-ok``.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence

from ...security.mechanisms import (
    ExternalClient,
    PlainClient,
    SASLClientMechanism,
    SASLConfigurationError,
)
from ..codec import FieldTable, decode_table, encode_table
from ..errors import DecodeError

__all__ = [
    "AMQPlainClient",
    "CLIENT_CAPABILITIES",
    "SERVER_CAPABILITIES",
    "choose_mechanism",
    "client_mechanism",
    "client_mechanisms",
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


class AMQPlainClient(SASLClientMechanism):
    """AMQPLAIN (AMQP 0-8's mechanism, which RabbitMQ still offers): the response is a field
    table ``{"LOGIN": username, "PASSWORD": password}`` (long strings) *without* its
    32-bit length prefix, as RabbitMQ reads it (``rabbit_auth_mechanism_amqplain``) and
    py-amqp writes it. The password crosses the wire as is."""

    name = "AMQPLAIN"
    sends_secrets_in_clear = True

    def __init__(self, username: str, password: str) -> None:
        super().__init__()
        for field, value in (("username", username), ("password", password)):
            if not isinstance(value, str) or not value:
                raise SASLConfigurationError(f"AMQPLAIN {field} must be a non-empty str")
        self.username = username
        self._response = encode_table({"LOGIN": username, "PASSWORD": password})[4:]

    def __repr__(self) -> str:
        return f"<AMQPlainClient username={self.username!r} {self._phase.value}>"

    def _initial_response(self, hostname: str | None) -> bytes | None:
        return self._response


def client_mechanism(
    mechanism: str | SASLClientMechanism, username: str | None, password: str | None
) -> SASLClientMechanism:
    """The client mechanism object for ``mechanism``: an object is used as it is; a name
    (``"PLAIN"``, ``"AMQPLAIN"``, ``"EXTERNAL"``) is made with ``username`` and
    ``password`` (``guest``/``guest`` when both are None: RabbitMQ's and pika's default).
    Raises :class:`~amqp_sansio.security.mechanisms.SASLConfigurationError` for an unknown
    name or unusable credentials."""
    if isinstance(mechanism, SASLClientMechanism):
        return mechanism
    name = mechanism.upper()
    if name == "EXTERNAL":
        return ExternalClient(username)
    if username is None and password is None:
        username, password = "guest", "guest"
    if name == "PLAIN":
        return PlainClient(username or "", password or "")
    if name == "AMQPLAIN":
        return AMQPlainClient(username or "", password or "")
    raise SASLConfigurationError(
        f"no 0-9-1 client mechanism {mechanism!r}: PLAIN, AMQPLAIN, EXTERNAL or an object"
    )


def client_mechanisms(
    mechanism: str | SASLClientMechanism | Sequence[str],
    username: str | None,
    password: str | None,
) -> tuple[SASLClientMechanism, ...]:
    """The mechanisms a client may use, in its order of preference: one (a name or an
    object, :func:`client_mechanism`), or several names, of which the connection uses the
    first the server offers (:func:`choose_mechanism`)."""
    if isinstance(mechanism, str | SASLClientMechanism):
        return (client_mechanism(mechanism, username, password),)
    names = list(mechanism)
    if not names or not all(isinstance(name, str) for name in names):
        raise SASLConfigurationError(f"mechanism names, at least one: not {mechanism!r}")
    return tuple(client_mechanism(name, username, password) for name in names)


def choose_mechanism(
    choices: Sequence[SASLClientMechanism], offered: Sequence[str]
) -> SASLClientMechanism | None:
    """The first of ``choices`` that the server offers (``connection.start`` field
    ``mechanisms``), or None."""
    return next((mech for mech in choices if mech.name in offered), None)


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
            table = decode_table(len(response).to_bytes(4, "big") + response)
        except (DecodeError, OverflowError) as exc:
            raise ValueError(f"AMQPLAIN response is not a field table: {exc}") from exc
        login, secret = table.get("LOGIN"), table.get("PASSWORD")
        if not isinstance(login, str) or not isinstance(secret, str):
            raise ValueError("AMQPLAIN response needs LOGIN and PASSWORD strings")
        return login, secret
    if mechanism == "EXTERNAL":
        return response.decode(), None
    return None, None
