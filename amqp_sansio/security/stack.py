"""Stacking: the one place where an engine and the layers around it become what an adapter
drives, for every protocol and both roles.

From the engine outward: the engine (AMQP 1.0's or 0-9-1's, or a broker's protocol
sniffer), the frame trace (when tracing is on: it sees plaintext), the WebSocket layer
(the AMQP WebSocket binding, ``ws``/``wss``), then the security layer (TLS from the first
byte, core spec 5.2.1, or on a server's plain port TLS chosen by the client's TLS protocol
header, 5.2), and outermost, a client's tunnel through an HTTP proxy (HTTP CONNECT, so
TLS is to the broker, inside the tunnel). Each layer has the byte interface
(:class:`ByteLayer`, declared once in :mod:`amqp_sansio.security.layers` and offered here,
the public face of the seam). A new layer is one module with that interface and one step
here, as the WebSocket layer and the proxy tunnel are.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Literal

from .layers import ByteLayer as ByteLayer
from .layers import LayerFailed as LayerFailed
from .layers import close_inner as close_inner
from .proxy import ProxyLayer, ProxyOptions
from .tls import TLSLayer, TLSOrPlain
from .websocket import WebSocketLayer, WebSocketOptions

__all__ = ["ByteLayer", "LayerFailed", "Role", "Trace", "close_inner", "stack"]

#: Which end of the connection the stack is.
Role = Literal["client", "server"]
#: What puts a frame trace around a byte layer (a protocol's trace), or None: no trace.
Trace = Callable[[ByteLayer], ByteLayer]


def stack(
    engine: ByteLayer,
    *,
    role: Role,
    tls: ssl.SSLContext | None = None,
    server_hostname: str | None = None,
    tls_header: bool = False,
    trace: Trace | None = None,
    websocket: WebSocketOptions | None = None,
    proxy: ProxyOptions | None = None,
) -> ByteLayer:
    """``engine`` with its layers around it, outermost returned (``engine`` itself when
    there are none).

    ``trace`` wraps the engine first (so it shows plaintext). With ``websocket`` the
    AMQP WebSocket binding goes around it
    (:class:`~amqp_sansio.security.websocket.WebSocketLayer`, with those options), under
    TLS if there is TLS (``wss``). With ``tls`` (a context for
    ``role``) a TLS layer goes outside: from the first byte (amqps, core spec 5.2.1), with
    ``server_hostname`` sent as SNI and checked by a client; or, for a server with
    ``tls_header``, only if the client starts with the TLS protocol header
    (:class:`~amqp_sansio.security.tls.TLSOrPlain`, core spec 5.2). With ``proxy`` (a
    client's) an HTTP CONNECT tunnel goes outside all of them
    (:class:`~amqp_sansio.security.proxy.ProxyLayer`, RFC 9110 9.3.6): TLS, if any, is
    to the broker, through the tunnel."""
    layer = engine if trace is None else trace(engine)
    if websocket is not None:
        layer = WebSocketLayer(layer, client=role == "client", options=websocket)
    if tls is not None:
        if role == "client":
            layer = TLSLayer(
                layer, tls, client=True, server_hostname=server_hostname, negotiate=False
            )
        elif tls_header:
            layer = TLSOrPlain(layer, tls)
        else:
            layer = TLSLayer(layer, tls, client=False, negotiate=False)
    if proxy is not None:
        if role != "client":
            raise ValueError("an HTTP proxy tunnel is a client's layer")
        layer = ProxyLayer(layer, proxy)
    return layer
