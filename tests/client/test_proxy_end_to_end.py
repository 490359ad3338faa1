"""Clients through a real HTTP proxy (proxy.py, run as a subprocess) to ``amqp-sansio broker
--ws-port 0``: each adapter over ``ws://`` with the proxy set by ``HTTP_PROXY`` (as users set
it) and by ``proxy=``; a proxy that wants credentials refusing a client without them (407,
the typed error); ``NO_PROXY`` bypassing it; the command line's ``--proxy``."""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trustme
from amqp_sansio.adapters import _transports
from support.adapter_broker import Broker
from support.adapters import ADAPTERS, WAIT, Adapter, aw
from support.broker_process import BrokerProcess, amqp_sansio_command

import amqp_sansio as a
from amqp_sansio.client.amqp10 import ConnectionClosedError
from amqp_sansio.client.ops import ClientError
from amqp_sansio.client.proxy import ProxyURL, parse_proxy
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.client.url import URLError, parse_url
from amqp_sansio.security.proxy import ProxyFailed, ProxyOptions
from amqp_sansio.security.websocket import WebSocketOptions


class HTTPProxy:
    """``python -m proxy`` (proxy.py) on a free port of 127.0.0.1, with ``--basic-auth``
    if given: it logs each request it serves to :attr:`log`."""

    def __init__(self, tmp: Path, *options: str) -> None:
        port_file = tmp / f"proxy-{time.monotonic_ns()}.port"
        self.log = tmp / f"proxy-{time.monotonic_ns()}.log"
        command = [sys.executable, "-m", "proxy", "--hostname", "127.0.0.1", "--port", "0"]
        command += ["--port-file", str(port_file), "--num-workers", "1"]
        command += ["--num-acceptors", "1", "--log-level", "INFO", "--log-file", str(self.log)]
        self.proc = subprocess.Popen(
            [*command, *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        end = time.monotonic() + WAIT
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > end or self.proc.poll() is not None:
                self.stop()
                raise AssertionError("proxy.py did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        self.url = f"http://127.0.0.1:{self.port}"

    def tunnels(self) -> int:
        """How many CONNECTs the proxy has logged."""
        return self.log.read_text().count("CONNECT") if self.log.exists() else 0

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def broker() -> Iterator[BrokerProcess]:
    with BrokerProcess("--ws-port", "0") as process:
        yield process


@pytest.fixture(scope="module")
def http_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPProxy]:
    proxy = HTTPProxy(tmp_path_factory.mktemp("proxy"))
    yield proxy
    proxy.stop()


@pytest.fixture(scope="module")
def auth_proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPProxy]:
    proxy = HTTPProxy(tmp_path_factory.mktemp("proxy"), "--basic-auth", "alice:s3cret")
    yield proxy
    proxy.stop()


@pytest.fixture(params=sorted(ADAPTERS))
def driver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Adapter:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    return ADAPTERS[request.param]


def round_trip(driver: Adapter, url: str, body: str, **options: Any) -> object:
    async def scenario() -> object:
        async with driver.connected(url, **options) as conn:
            sender = await aw(conn.sender("proxied"))
            receiver = await aw(conn.receiver("proxied"))
            assert isinstance(await aw(sender.send(body)), a.Accepted)
            delivery = await aw(receiver.receive(timeout=WAIT))
            delivery.accept()
            return delivery.message.body.value

    return driver.run(scenario)


def _waited(proxy: HTTPProxy, more_than: int) -> int:
    end = time.monotonic() + 5
    while proxy.tunnels() <= more_than and time.monotonic() < end:
        time.sleep(0.05)
    return proxy.tunnels()


def test_http_proxy_from_the_environment(
    driver: Adapter, broker: BrokerProcess, http_proxy: HTTPProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", http_proxy.url)
    before = http_proxy.tunnels()
    assert broker.ws_url is not None
    assert round_trip(driver, broker.ws_url, "via HTTP_PROXY") == "via HTTP_PROXY"
    assert _waited(http_proxy, before) > before


def test_the_environments_proxy_is_the_one_used(
    driver: Adapter, broker: BrokerProcess, auth_proxy: HTTPProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTP_PROXY`` naming a proxy that wants credentials: without them in the variable
    the proxy's 407 fails the connection (so the tunnel went there); with them it opens."""
    assert broker.ws_url is not None
    monkeypatch.setenv("HTTP_PROXY", auth_proxy.url)
    with pytest.raises(ConnectionClosedError, match=r"HTTP proxy failed.*407"):
        round_trip(driver, broker.ws_url, "refused")
    monkeypatch.setenv("HTTP_PROXY", f"http://alice:s3cret@127.0.0.1:{auth_proxy.port}")
    assert round_trip(driver, broker.ws_url, "env credentials") == "env credentials"


def test_explicit_proxy_option(
    driver: Adapter, broker: BrokerProcess, http_proxy: HTTPProxy
) -> None:
    before = http_proxy.tunnels()
    assert broker.ws_url is not None
    assert round_trip(driver, broker.ws_url, "via proxy=", proxy=http_proxy.url) == "via proxy="
    assert _waited(http_proxy, before) > before


def test_explicit_proxy_carries_plain_amqp_too(
    driver: Adapter, broker: BrokerProcess, http_proxy: HTTPProxy
) -> None:
    before = http_proxy.tunnels()
    assert round_trip(driver, broker.url, "amqp via proxy", proxy=http_proxy.url) == (
        "amqp via proxy"
    )
    assert _waited(http_proxy, before) > before


@pytest.mark.parametrize("protocol", ["0-9-1", "0-10"])
def test_explicit_proxy_for_the_other_protocols(
    driver: Adapter, broker: BrokerProcess, auth_proxy: HTTPProxy, protocol: str
) -> None:
    """0-9-1 and 0-10 (``amqp://``) through a proxy that wants credentials to the broker's
    TCP port: with them a connection opens; without, the proxy's 407 fails it."""

    async def scenario(proxy: str) -> bool:
        async with driver.connected(broker.url, protocol=protocol, proxy=proxy):
            return True

    good = f"http://alice:s3cret@127.0.0.1:{auth_proxy.port}"
    assert driver.run(scenario, good)
    with pytest.raises(ClientError, match=r"HTTP proxy failed.*407") as info:
        driver.run(scenario, auth_proxy.url)
    assert isinstance(info.value.event, ProxyFailed)


def test_credentials_in_the_proxy_url(
    driver: Adapter, broker: BrokerProcess, auth_proxy: HTTPProxy
) -> None:
    assert broker.ws_url is not None
    proxy = f"http://alice:s3cret@127.0.0.1:{auth_proxy.port}"
    assert round_trip(driver, broker.ws_url, "with credentials", proxy=proxy) == "with credentials"


def test_a_proxy_wanting_credentials_refuses_with_407(
    driver: Adapter, broker: BrokerProcess, auth_proxy: HTTPProxy
) -> None:
    assert broker.ws_url is not None
    with pytest.raises(ConnectionClosedError, match=r"HTTP proxy failed.*407") as info:
        round_trip(driver, broker.ws_url, "refused", proxy=auth_proxy.url)
    assert isinstance(info.value.event, ProxyFailed)
    assert info.value.event.status_code == 407
    assert info.value.event.exception().status_code == 407


def test_wrong_credentials_never_show(
    driver: Adapter, broker: BrokerProcess, auth_proxy: HTTPProxy
) -> None:
    assert broker.ws_url is not None
    proxy = f"http://alice:wrong-secret@127.0.0.1:{auth_proxy.port}"
    with pytest.raises(ConnectionClosedError, match=r"407") as info:
        round_trip(driver, broker.ws_url, "refused", proxy=proxy)
    assert "wrong-secret" not in str(info.value)
    assert "alice:***@" in str(info.value)


def test_no_proxy_bypasses_the_environments_proxy(
    driver: Adapter, broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A proxy that is not there: only bypassing it connects.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert broker.ws_url is not None
    assert round_trip(driver, broker.ws_url, "bypassed") == "bypassed"


def test_proxy_false_ignores_the_environment(
    driver: Adapter, broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    assert broker.ws_url is not None
    assert round_trip(driver, broker.ws_url, "direct", proxy=False) == "direct"


def test_amqp_urls_ignore_the_environment(
    driver: Adapter, broker: BrokerProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert round_trip(driver, broker.url, "amqp direct") == "amqp direct"


def test_the_command_line_proxy_option(
    broker: BrokerProcess, http_proxy: HTTPProxy, tmp_path: Path
) -> None:
    assert broker.ws_url is not None
    before = http_proxy.tunnels()
    base = [*amqp_sansio_command()]
    send = [*base, "send", broker.ws_url, "--address", "cli-proxied", "--proxy", http_proxy.url]
    send += ["--body", "through the proxy"]
    done = subprocess.run(send, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    receive = [*base, "receive", broker.ws_url, "--address", "cli-proxied", "--count", "1"]
    got = subprocess.run(
        [*receive, "--proxy", http_proxy.url], capture_output=True, text=True, timeout=60
    )
    assert got.returncode == 0, got.stderr
    assert "through the proxy" in got.stdout
    assert _waited(http_proxy, before + 1) >= before + 2


def test_the_command_line_names_a_refusing_proxy(
    broker: BrokerProcess, auth_proxy: HTTPProxy
) -> None:
    assert broker.ws_url is not None
    command = [*amqp_sansio_command(), "send", broker.ws_url, "--address", "q", "--body", "x"]
    proxy = f"http://alice:not-it@127.0.0.1:{auth_proxy.port}"
    done = subprocess.run([*command, "--proxy", proxy], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "407" in done.stderr and f"alice:***@127.0.0.1:{auth_proxy.port}" in done.stderr
    assert "not-it" not in done.stderr + done.stdout


def test_wss_goes_through_https_proxy_with_tls_to_the_broker(
    driver: Adapter, http_proxy: HTTPProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``HTTPS_PROXY`` for a ``wss://`` URL: the tunnel goes to the proxy, TLS (checked
    against the broker's name) and the WebSocket binding run inside it."""
    monkeypatch.setenv("HTTPS_PROXY", http_proxy.url)
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # (not wss's)
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)
    before = http_proxy.tunnels()
    with driver.serve(
        Broker().on_link, ssl_context=server_context, websocket=WebSocketOptions()
    ) as port:
        url = f"wss://localhost:{port}/"
        assert round_trip(driver, url, "wss", ssl_context=client_context) == "wss"
        assert _waited(http_proxy, before) > before
        monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")  # (nothing listens there)
        with pytest.raises(OSError):
            round_trip(driver, url, "wss", ssl_context=client_context)


# -- which proxy: the adapters' reading of the option and the environment -------------------------


def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy", "REQUEST_METHOD"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


def test_the_environment_gives_ws_and_wss_their_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    _clean(monkeypatch)
    assert _transports.proxies(None, "ws://h/") is None
    monkeypatch.setenv("HTTP_PROXY", "http://plain:1")
    monkeypatch.setenv("https_proxy", "http://u:pw@secure:2")
    monkeypatch.setenv("NO_PROXY", "internal.example,.corp")
    proxies = _transports.proxies(None, "ws://h/")
    assert proxies is not None and proxies.explicit is None
    assert proxies.for_url(parse_url("ws://h/")) == parse_proxy("http://plain:1")
    assert proxies.for_url(parse_url("wss://h/")) == parse_proxy("http://u:pw@secure:2")
    assert proxies.for_url(parse_url("amqp://h")) is None
    assert proxies.for_url(parse_url("amqps://h")) is None
    assert proxies.for_url(parse_url("ws://internal.example/")) is None
    assert proxies.for_url(parse_url("wss://a.corp:8443/")) is None
    assert proxies.address(parse_url("ws://h:8080/")) == ("plain", 1)
    again = _transports.proxies(True, "ws://h/")  # (True: the same reading)
    assert again is not None and again.by_scheme == proxies.by_scheme
    assert _transports.proxies(False, "ws://h/") is None
    explicit = _transports.proxies("http://mine:3128", "amqp://h")
    assert explicit is not None and explicit.for_url(parse_url("amqp://internal.example")) == (
        parse_proxy("http://mine:3128")
    )


def test_a_bad_environment_proxy_breaks_only_its_own_scheme(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _clean(monkeypatch)
    monkeypatch.setenv("HTTPS_PROXY", "socks5://user:hidden@proxy:1080")
    assert _transports.proxies(None, "amqp://h") is None
    assert _transports.proxies(None, "ws://h/") is None
    with pytest.raises(URLError, match="https_proxy in the environment") as info:
        _transports.proxies(None, "wss://h/")
    assert "hidden" not in str(info.value)
    with pytest.raises(URLError, match="must be http://"):
        _transports.proxies("https://p:1", "ws://h/")


def test_the_command_line_names_the_proxy_it_cannot_reach(broker: BrokerProcess) -> None:
    assert broker.ws_url is not None
    command = [*amqp_sansio_command(), "send", broker.ws_url, "--address", "q", "--body", "x"]
    proxy = "http://bob:hush@127.0.0.1:9"  # (nothing listens there)
    done = subprocess.run([*command, "--proxy", proxy], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3, done.stderr
    assert "cannot connect to the HTTP proxy http://bob:***@127.0.0.1:9" in done.stderr
    assert "hush" not in done.stderr
    # --proxy none: straight to the broker, whatever the environment says.
    direct = subprocess.run(
        [*command, "--proxy", "none"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "HTTP_PROXY": proxy},
    )
    assert direct.returncode == 0, direct.stderr


def test_reconnecting_connections_go_through_the_proxy(
    driver: Adapter, broker: BrokerProcess, auth_proxy: HTTPProxy
) -> None:
    """A reconnecting connection makes every attempt, its first too, through the proxy:
    with credentials it opens; without, the proxy's 407 is why it gives up."""
    assert broker.ws_url is not None
    good = f"http://alice:s3cret@127.0.0.1:{auth_proxy.port}"
    assert round_trip(driver, broker.ws_url, "again", proxy=good, reconnect=True) == "again"
    once = Reconnect(max_attempts=1)
    with pytest.raises(ClientError, match=r"407"):
        round_trip(driver, broker.ws_url, "refused", proxy=auth_proxy.url, reconnect=once)


def test_a_proxy_that_never_answers_times_out(
    driver: Adapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A proxy that takes the connection and never answers the CONNECT: the layer's
    time-out (here 0.5 s, well inside the call's) fails the connection, in every adapter's
    loop: each gives the layer the time as soon as it starts."""
    real = ProxyURL.options

    def quick(self: ProxyURL, host: str, port: int) -> ProxyOptions:
        return attrs.evolve(real(self, host, port), handshake_timeout=0.5)

    monkeypatch.setattr(ProxyURL, "options", quick)
    with socket.create_server(("127.0.0.1", 0)) as silent:
        proxy = f"http://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(ConnectionClosedError, match=r"did not answer the CONNECT within 0\.5"):
            round_trip(driver, "ws://broker.example/", "never", proxy=proxy)
        assert time.monotonic() - started < WAIT / 2
