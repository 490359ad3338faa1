"""The transport seam (docs/architecture.rst, "Transports"): every adapter connects through
its one table of transports by URL scheme, the byte interface is declared once, the layers
are stacked in one place, and TCP is opened once per adapter family."""

from __future__ import annotations

import ast
import ssl
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
import trustme
from amqp_sansio.adapters import _blocking, _transports, aio, trio_adapter
from support import ROOT
from support.adapter_broker import Broker
from support.adapters import ADAPTERS, WAIT, Adapter, aw

import amqp_sansio as a
from amqp_sansio.client.amqp10 import ConnectionClosedError
from amqp_sansio.security import stack as seam
from amqp_sansio.security.websocket import WebSocketOptions

#: Each adapter's family: the module that holds its ``TRANSPORTS``.
FAMILIES: dict[str, ModuleType] = {"sockets": _blocking, "aio": aio, "trio": trio_adapter}


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Iterator[tuple[Adapter, ModuleType]]:
    yield ADAPTERS[request.param], FAMILIES[request.param]


def test_connect_opens_the_transport_of_the_urls_scheme(
    adapter: tuple[Adapter, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``connect(url)`` with no extras opens its transport through the table's ``amqp``
    entry, and AMQP runs over what that entry opened (a message goes both ways)."""
    driver, family = adapter
    opened: list[tuple[str, int]] = []
    tcp = family.TRANSPORTS["amqp"]

    def factory(host: str, port: int, timeout: float | None) -> Any:
        opened.append((host, port))
        return tcp(host, port, timeout)

    monkeypatch.setitem(family.TRANSPORTS, "amqp", factory)
    broker = Broker()

    async def scenario(port: int) -> object:
        async with driver.connected(f"amqp://127.0.0.1:{port}") as conn:
            sender = await aw(conn.sender("q"))
            receiver = await aw(conn.receiver("q"))
            assert isinstance(await aw(sender.send("through the table")), a.Accepted)
            delivery = await aw(receiver.receive(timeout=WAIT))
            delivery.accept()
            return delivery.message.body.value

    with driver.serve(broker.on_link) as port:
        assert driver.run(scenario, port) == "through the table"
    assert opened == [("127.0.0.1", port)]


def test_amqps_is_looked_up_by_its_scheme(
    adapter: tuple[Adapter, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An ``amqps://`` URL (for either protocol) opens the table's ``amqps`` entry."""
    driver, family = adapter
    asked: list[tuple[str, int]] = []

    def factory(host: str, port: int, timeout: float | None) -> Any:
        asked.append((host, port))
        raise ConnectionRefusedError("refused by the amqps entry")

    monkeypatch.setitem(family.TRANSPORTS, "amqps", factory)

    async def scenario(protocol: str) -> None:
        async with driver.connected("amqps://example.invalid", protocol=protocol):
            pass  # pragma: no cover - the connect fails

    for protocol in ("1.0", "0-9-1"):
        with pytest.raises(OSError, match="refused by the amqps entry"):
            driver.run(scenario, protocol)
    assert asked == [("example.invalid", 5671)] * 2


def test_a_scheme_without_a_transport_is_named() -> None:
    with pytest.raises(
        ValueError, match=r"no transport for http:// here \(this adapter has amqp://"
    ):
        _transports.transport_for(_blocking.TRANSPORTS, "http")
    for family in FAMILIES.values():
        assert set(family.TRANSPORTS) == {"amqp", "amqps", "ws", "wss"}


# -- the AMQP WebSocket binding: ws:// and wss:// ---------------------------------------------


def _round_trip(driver: Adapter, url: str, **options: Any) -> object:
    async def scenario() -> object:
        async with driver.connected(url, **options) as conn:
            sender = await aw(conn.sender("q"))
            receiver = await aw(conn.receiver("q"))
            assert isinstance(await aw(sender.send("over a websocket")), a.Accepted)
            delivery = await aw(receiver.receive(timeout=WAIT))
            delivery.accept()
            return delivery.message.body.value

    return driver.run(scenario)


def test_ws_urls_connect_through_the_websocket_layer(
    adapter: tuple[Adapter, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``ws://`` URL opens TCP through the table's ``ws`` entry, and the client's
    WebSocket layer meets the server's (``listen(websocket=...)``) at the URL's path."""
    driver, family = adapter
    opened: list[str] = []
    tcp = family.TRANSPORTS["ws"]

    def factory(host: str, port: int, timeout: float | None) -> Any:
        opened.append(host)
        return tcp(host, port, timeout)

    monkeypatch.setitem(family.TRANSPORTS, "ws", factory)
    broker = Broker()
    options = WebSocketOptions(accept_paths=("/amqp",))
    with driver.serve(broker.on_link, websocket=options) as port:
        assert _round_trip(driver, f"ws://127.0.0.1:{port}/amqp") == "over a websocket"
        with pytest.raises(ConnectionClosedError, match=r"WebSocket failed.*404"):
            _round_trip(driver, f"ws://127.0.0.1:{port}/elsewhere")
    assert opened == ["127.0.0.1", "127.0.0.1"]


def test_wss_urls_run_the_websocket_layer_inside_tls(adapter: tuple[Adapter, ModuleType]) -> None:
    driver, _ = adapter
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    broker = Broker()
    with driver.serve(
        broker.on_link, ssl_context=server_context, websocket=WebSocketOptions()
    ) as port:
        url = f"wss://localhost:{port}/"
        assert _round_trip(driver, url, ssl_context=client_context) == "over a websocket"


def test_stack_layers_the_engine_for_both_roles() -> None:
    """One stacking function: the trace inside, TLS outside (amqps from the first byte, or
    chosen by the TLS header on a server's plain port), the engine alone without them."""
    engine = a.Connection(container_id="c")
    assert seam.stack(engine, role="client") is engine
    traced: list[object] = []

    def trace(inner: seam.ByteLayer) -> seam.ByteLayer:
        traced.append(inner)
        return inner

    client = seam.stack(
        engine,
        role="client",
        tls=a.security.tls.client_context(),
        server_hostname="example.com",
        trace=trace,
    )
    assert isinstance(client, a.TLSLayer) and client.client and client.inner is engine
    assert traced == [engine]
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server = seam.stack(engine, role="server", tls=context)
    assert isinstance(server, a.TLSLayer) and not server.client and not server.negotiate
    either = seam.stack(engine, role="server", tls=context, tls_header=True)
    assert isinstance(either, a.security.tls.TLSOrPlain)


# -- the seam, counted on the source ---------------------------------------------------------

SOURCES = [
    *sorted((ROOT / "amqp_sansio").rglob("*.py")),
    *sorted((ROOT / "adapters").rglob("*.py")),
]


def _calls(name: str) -> list[str]:
    """Where (file:function) ``name(...)`` or ``x.name(...)`` is called (the command line
    and Spark, which connect through the adapters, left out)."""
    found = []
    for path in SOURCES:
        if {"cli", "spark"} & set(path.relative_to(ROOT).parts):
            continue
        tree = ast.parse(path.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    func = node.func
                    called = (
                        func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    )
                    if called == name:
                        found.append(f"{path.relative_to(ROOT)}:{function.name}")
    return sorted(set(found))


def test_the_byte_interface_is_declared_once() -> None:
    declared = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                getattr(base, "id", "") == "Protocol" for base in node.bases
            ):
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                if "receive_data" in methods or "data_to_send" in methods:
                    declared.append(f"{path.relative_to(ROOT)}:{node.name}")
    assert declared == ["amqp_sansio/engine/contract.py:ProtocolEngine"]


def test_layers_are_stacked_in_one_place() -> None:
    assert _calls("TLSLayer") == [
        "amqp_sansio/security/stack.py:stack",
        "amqp_sansio/security/tls.py:receive_data",  # (TLSOrPlain, once TLS is chosen)
    ]
    assert _calls("TLSOrPlain") == ["amqp_sansio/security/stack.py:stack"]


def test_tcp_is_opened_once_per_adapter_family() -> None:
    assert _calls("create_connection") == ["adapters/_blocking.py:_tcp"]
    assert _calls("open_connection") == ["adapters/aio.py:_tcp"]
    assert _calls("open_tcp_stream") == ["adapters/trio_adapter.py:_tcp"]
    # (the asyncio adapter's own ``listen``, the server role of its API, listens itself)
    assert _calls("start_server") == [
        "adapters/aio.py:listen",
        "adapters/broker/server.py:_tcp_listen",
    ]
