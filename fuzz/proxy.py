"""The HTTP proxy tunnel's target (:mod:`amqp_sansio.security.proxy`), ``proxy-client``, and
its seeds.

``proxy-client``: a :class:`~amqp_sansio.security.proxy.ProxyLayer` (small limits: a
512-byte reply head, 5 s) around a client-role 1.0 :class:`amqp_sansio.Connection` that has
opened gets the bytes in chunks, as the proxy's reply and then the broker's bytes through
the tunnel, with the clock moving between them; then the transport ends.

The invariant: nothing raises (the layer reports a proxy's fault, it never raises one); at
most one of ``ProxyEstablished`` and ``ProxyFailed``, once; before the reply the layer sends
only its CONNECT request, once; once failed it reports and sends nothing more; after the
transport's end the layer is closed or failed.
"""

from __future__ import annotations

import amqp_sansio as amqp
from amqp_sansio.security.proxy import (
    ProxyEstablished,
    ProxyFailed,
    ProxyLayer,
    ProxyOptions,
    ProxyState,
)

from .common import TICK, InvariantViolation, chunk_sizes

__all__ = ["fuzz_proxy_client", "seeds"]

_OPTIONS = ProxyOptions(
    host="broker.example",
    port=5672,
    proxy="http://proxy.example:3128",
    username="fuzz",
    password="secret",
    max_head_size=512,
    handshake_timeout=5,
)
_REQUEST = (
    b"CONNECT broker.example:5672 HTTP/1.1\r\nHost: broker.example:5672\r\n"
    b"Proxy-Authorization: Basic ZnV6ejpzZWNyZXQ=\r\n\r\n"
)


def _check(condition: bool, stage: str, detail: str) -> None:
    if not condition:
        raise InvariantViolation("proxy-client", stage, detail)


def fuzz_proxy_client(data: bytes) -> str:
    """Target ``proxy-client`` (see the module's docstring)."""
    engine = amqp.Connection(client=True, container_id="fuzz-proxy")
    engine.open(now=0.0)
    layer = ProxyLayer(engine, _OPTIONS)
    _check(layer.data_to_send() == _REQUEST, "request", "not the CONNECT request")
    kinds: dict[str, None] = {}
    outcomes = 0
    now = 0.0
    i = 0
    for size in chunk_sizes(data):
        if i >= len(data):
            break
        chunk, i = data[i : i + size], i + size
        before = layer.state
        events = layer.receive_data(chunk, now)
        if before is ProxyState.FAILED:
            _check(not events, "after-failure", f"reported {events!r}")
        for event in events:
            kinds[type(event).__name__] = None
            outcomes += isinstance(event, (ProxyEstablished, ProxyFailed))
        out = layer.data_to_send()
        if layer.state is not ProxyState.OPEN:
            _check(not out, "early", f"sent {out[:40]!r} in {layer.state.value}")
        events = layer.handle_timer(now)
        kinds.update(dict.fromkeys(type(event).__name__ for event in events))
        outcomes += sum(isinstance(event, (ProxyEstablished, ProxyFailed)) for event in events)
        now += TICK
    events = layer.handle_timer(now + 10) + layer.receive_data(b"", now + 10)
    kinds.update(dict.fromkeys(type(event).__name__ for event in events))
    outcomes += sum(isinstance(event, (ProxyEstablished, ProxyFailed)) for event in events)
    _check(outcomes == 1, "outcomes", f"{outcomes} outcomes reported")
    ended = (ProxyState.CLOSED, ProxyState.FAILED)
    _check(layer.state in ended, "not-ended", layer.state.value)
    _check("secret" not in repr(layer) + repr(_OPTIONS), "secret", "the password shows")
    verdict = "err" if "ProxyFailed" in kinds else "ok"
    return f"{verdict}|{','.join(kinds)[:160]}"


def _server_bytes() -> bytes:
    """A 1.0 server engine's answer to the client's header and open: header, open."""
    client = amqp.Connection(client=True, container_id="fuzz-client")
    client.open(now=0.0)
    server = amqp.Connection(client=False, container_id="fuzz-server")
    server.receive_data(client.data_to_send(), 0.0)
    server.open()
    return server.data_to_send()


def seeds() -> dict[str, list[bytes]]:
    """Deterministic inputs for ``proxy-client``."""
    broker = _server_bytes()
    ok = b"HTTP/1.1 200 Connection established\r\n\r\n"
    return {
        "proxy-client": [
            ok + broker,
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\r\nVia: 1.1 proxy\r\n\r\n" + broker,
            b"HTTP/1.1 204 No Content\r\nProxy-Agent: fuzz\r\n\r\n" + broker[:8],
            b"HTTP/1.1 407 Proxy Authentication Required\r\n"
            b'Proxy-Authenticate: Basic realm="fuzz"\r\nContent-Length: 0\r\n\r\n',
        ]
    }
