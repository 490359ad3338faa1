"""The broker's configuration: one frozen value, given to :class:`~amqp_sansio.broker.Broker`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from ..security.mechanisms import ServerAuthenticator
    from ._users import Users

__all__ = ["BrokerConfig"]


@attrs.frozen(kw_only=True)
class BrokerConfig:
    """What a :class:`~amqp_sansio.broker.Broker` does, and how much it takes.

    Nodes (broker draft 2.1): an address names a queue, created on first attach when
    ``auto_create`` is true (else the attach is refused with ``amqp:not-found``), unless it
    is one of ``queues`` (always there) or a topic: one of ``topics``, or starting with
    ``topic_prefix``, or a stream (an append-only log read by offset, see
    :mod:`~amqp_sansio.broker` and ``docs/broker.rst``): one of ``streams``, or starting with
    ``stream_prefix``, or created by an attach that desires the stream capability.
    ``stream_max_length`` (messages) and ``stream_max_bytes`` bound each stream: past them
    its oldest messages are dropped (retention; the newest is always kept). ``dead_letter``
    names the queue rejected messages go to (none: they are dropped).

    Limits, each enforced with ``amqp:resource-limit-exceeded``: ``max_queue_depth`` and
    ``max_queue_bytes`` (a publish that would exceed them is rejected), ``max_message_size``
    (announced on every link the broker answers, and enforced by the engine),
    ``max_links_per_connection`` (further attaches are refused). ``link_credit`` is the
    credit the broker keeps open on a publisher's link.

    Selectors (a consumer's ``apache.org:selector-filter:string`` filter, see
    ``docs/broker.rst``): one longer than ``selector_max_length`` characters, or nested
    (parentheses, ``NOT``, signs) deeper than ``selector_max_depth`` levels (at most 100),
    refuses the attach with ``amqp:invalid-field``.

    The server engine of each connection: ``container_id``, ``idle_timeout`` (seconds, None
    for none), ``max_frame_size``; ``sasl`` is a :class:`~amqp_sansio.sasl.ServerAuthenticator`,
    or None (the default): the ``users``' one if given, else anonymous access (SASL
    ANONYMOUS, or no SASL layer at all: both the SASL and the bare AMQP protocol header are
    answered, core spec 2.2, 5.1; see ``docs/defaults.rst``); False: no SASL layer (the bare
    header only). ``allow_insecure_auth`` lets PLAIN run without TLS (loopback).

    Topic subscriptions that outlive their links (core spec 3.5.6; see
    :mod:`amqp_sansio.broker` and ``docs/broker.rst``): at most ``max_subscriptions`` kept
    in all and ``max_subscriptions_per_container`` for one client container-id (counting
    attached and suspended ones; an attach beyond is refused with
    ``amqp:resource-limit-exceeded``); a subscription's buffer holds at most
    ``max_subscription_depth`` messages (past it the topic's messages are dropped for that
    subscriber alone; ``max_queue_depth`` and ``max_queue_bytes`` apply too). None: no
    limit.

    ``users`` (a :class:`~amqp_sansio.broker.Users`): who may connect (its SASL store, used
    unless ``sasl`` is given) and what each may do: an attach to an address the
    authenticated user may not send to or receive from is refused with
    ``amqp:unauthorized-access``. A client without SASL gets the rules of its ``anonymous``
    entry, and is refused (its SASL header answers it) where there is none. None: no access
    rules.
    """

    auto_create: bool = True
    queues: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    topics: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    topic_prefix: str | None = "topic/"
    streams: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    stream_prefix: str | None = "stream/"
    stream_max_length: int | None = None
    stream_max_bytes: int | None = None
    dead_letter: str | None = None
    max_queue_depth: int | None = None
    max_queue_bytes: int | None = None
    max_message_size: int | None = None
    max_links_per_connection: int | None = 1000
    max_subscriptions: int | None = 10_000
    max_subscriptions_per_container: int | None = 1000
    max_subscription_depth: int | None = 100_000
    link_credit: int = 1000
    selector_max_length: int = 4096
    selector_max_depth: int = 32
    container_id: str = "amqp-sansio-broker"
    idle_timeout: float | None = None
    max_frame_size: int = 65536
    sasl: ServerAuthenticator | None = None
    allow_insecure_auth: bool = False
    users: Users | None = None

    def is_topic(self, address: str) -> bool:
        """Whether ``address`` names a topic (copy to every subscriber) rather than a queue."""
        if address in self.topics:
            return True
        return self.topic_prefix is not None and address.startswith(self.topic_prefix)

    def is_stream(self, address: str) -> bool:
        """Whether ``address`` names a stream (read by offset) by this configuration."""
        prefix = self.stream_prefix
        return address in self.streams or (prefix is not None and address.startswith(prefix))
