"""The byte-layer interface: the one contract between an engine, the layers stacked on it
and the adapter that drives the top of the stack.

An engine (AMQP 1.0's :class:`~amqp_sansio.Connection`, 0-9-1's), a security layer
(:class:`~amqp_sansio.security.tls.TLSLayer` today), the frame trace
(:class:`amqp_sansio.client.trace.FrameTrace`) and a transport's framing (a WebSocket
layer next) all offer :class:`ByteLayer`. A layer wraps an *inner* :class:`ByteLayer` and
offers the same interface outward, so layers stack in any number and an adapter drives the
top one as it would drive the engine: bytes from the network go to
:meth:`ByteLayer.receive_data` (empty bytes: the transport closed), what
:meth:`ByteLayer.data_to_send` returns goes to the network, and
:meth:`ByteLayer.handle_timer` is called at :meth:`ByteLayer.next_deadline`. The events of
every layer come back from ``receive_data`` and ``handle_timer``, a layer's own before
those of the layer inside it. :func:`amqp_sansio.security.stack.stack` builds the stack;
this module is low enough (above ``events``, beside the TLS layer) that every engine, the
client cores, the broker and the adapters import it without an arrow up.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

import attrs

from ..engine.contract import Event, ProtocolEngine

__all__ = ["ByteLayer", "LayerFailed", "close_inner"]


class ByteLayer(ProtocolEngine, Protocol):
    """The byte interface of an engine and of every layer around one: what an adapter
    drives, and what a layer wraps. It is the engine contract itself
    (:class:`~amqp_sansio.engine.contract.ProtocolEngine`: ``receive_data``,
    ``data_to_send``, ``next_deadline``, ``handle_timer``), declared once there, so an
    engine and a layer around it are driven alike.

    A layer that also has ``close()`` (TLS: close_notify) has it called once the engine
    inside has ended; a layer that has ``set_transport_security(**facts)`` is told by a
    security layer below it what the transport now is (SASL uses it, and a layer between
    passes it on)."""


@attrs.frozen(kw_only=True)
class LayerFailed(Event):
    """A byte layer failed (the base of each layer's failure event: TLS's
    :class:`~amqp_sansio.security.tls.TLSFailed`, the WebSocket layer's
    :class:`~amqp_sansio.security.websocket.WebSocketFailed`): ``error`` says what failed,
    ``layer`` names the layer. What the layer still had to say (an alert, a close frame)
    is the last thing it sends. Whoever drives the stack handles every layer's failure as
    this one event; close the transport."""

    #: The layer's name, for messages ("TLS", "WebSocket").
    layer: ClassVar[str] = "byte layer"

    error: str


def close_inner(inner: object) -> None:
    """What a layer's ``close()`` does first: close the layer inside it, if that one ends
    as a layer (its class sets ``closes_as_layer``: a WebSocket layer under TLS, ``wss``),
    so that its closing bytes go out inside ours. An engine's own ``close()`` (an AMQP
    close) is never called here."""
    if getattr(type(inner), "closes_as_layer", False):
        inner.close()  # type: ignore[attr-defined]
