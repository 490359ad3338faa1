"""The HTTP CONNECT tunnel's layer (RFC 9110 9.3.6): our 1.0 client engine through it to a
server engine behind a proxy written with h11 as the other end, in random chunks and byte by
byte; every failure (a refusal, 407, a malformed reply, a reply head over its limit, no
reply in time, the proxy closing first); the reply parser under Hypothesis; the stack's
step (TLS inside the tunnel); proxy URLs and the choice of proxy per URL."""

from __future__ import annotations

import base64
import math
import ssl
from typing import Any

import h11
import pytest
import trustme
from hypothesis import given, settings
from hypothesis import strategies as st
from support.engine_pair import Pair

import amqp_sansio as a
from amqp_sansio.client.engines import client_engine
from amqp_sansio.client.proxy import Proxies, ProxyURL, parse_proxy
from amqp_sansio.client.url import URLError, parse_url
from amqp_sansio.errors import FramingError, LocalProtocolError
from amqp_sansio.security.layers import LayerFailed
from amqp_sansio.security.proxy import (
    ProxyError,
    ProxyEstablished,
    ProxyFailed,
    ProxyLayer,
    ProxyOptions,
    ProxyState,
)
from amqp_sansio.security.stack import stack
from amqp_sansio.security.tls import TLSLayer, TLSState
from amqp_sansio.security.websocket import WebSocketLayer

OPTIONS = ProxyOptions(host="broker.example", port=5672, proxy="http://proxy.example:3128")
SECRET = ProxyOptions(
    host="broker.example",
    port=5672,
    proxy="http://alice:***@proxy.example:3128",
    username="alice",
    password="s3cret",
)


class ProxyEnd:
    """The proxy's side, with h11 in the server role: it reads the CONNECT request
    (:attr:`request`), answers with ``reply`` (and ``extra`` bytes after it), then passes
    bytes between the wire and ``inner`` (a server engine) both ways."""

    def __init__(self, inner: Any, reply: bytes = b"HTTP/1.1 200 Connection established\r\n\r\n"):
        self.inner = inner
        self.reply = reply
        self.h11 = h11.Connection(h11.SERVER)
        self.request: h11.Request | None = None
        self.open = False
        self.out: list[bytes] = []

    def receive_data(self, data: bytes, now: float) -> list[Any]:
        if self.open:
            return list(self.inner.receive_data(data, now))
        self.h11.receive_data(data)
        event = self.h11.next_event()
        if event is h11.NEED_DATA:
            return []
        assert isinstance(event, h11.Request)
        self.request = event
        self.out.append(self.reply)
        self.open = True
        rest, _ = self.h11.trailing_data
        return list(self.inner.receive_data(rest, now)) if rest else []

    def data_to_send(self) -> bytes:
        if self.open:
            self.out.append(self.inner.data_to_send())
        out, self.out = self.out, []
        return b"".join(out)

    def handle_timer(self, now: float) -> list[Any]:
        return list(self.inner.handle_timer(now))

    def next_deadline(self) -> float | None:
        return None


def tunnelled(options: ProxyOptions = OPTIONS, reply: bytes | None = None) -> Any:
    def layers(engine: a.Connection, role: str) -> Any:
        if role == "client":
            return ProxyLayer(engine, options)
        return ProxyEnd(engine) if reply is None else ProxyEnd(engine, reply)

    return layers


def exchange(pair: Pair) -> None:
    """Open, begin, attach, send one message and close across ``pair``."""
    pair.open()
    cs, _ = pair.session()
    snd, rcv = pair.link(cs)
    rcv.flow(1)
    pair.pump()
    snd.send(b"through the tunnel")
    _, server = pair.pump()
    (got,) = [e for e in server if isinstance(e, a.events.DeliveryReceived)]
    assert bytes(got.data) == b"through the tunnel"
    pair.client.close()
    pair.pump()
    assert not [e for e in pair.client_events if isinstance(e, LayerFailed)]


class Inner:
    """An inner byte layer that records what reaches it and sends ``out``."""

    def __init__(self, out: bytes = b"") -> None:
        self.got: list[bytes] = []
        self.out = out
        self.deadline: float | None = None
        self.timers: list[float] = []

    def receive_data(self, data: bytes, now: float) -> list[Any]:
        self.got.append(bytes(data))
        return []

    def data_to_send(self) -> bytes:
        out, self.out = self.out, b""
        return out

    def next_deadline(self) -> float | None:
        return self.deadline

    def handle_timer(self, now: float) -> list[Any]:
        self.timers.append(now)
        return []


def failure(events: list[Any]) -> ProxyFailed:
    (failed,) = [e for e in events if isinstance(e, ProxyFailed)]
    return failed


# -- the tunnel ---------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [None, 1, 5], ids=["random", "byte-by-byte", "five"])
def test_an_amqp_exchange_through_the_tunnel(chunk: int | None) -> None:
    pair = Pair(layers=tunnelled(), chunk=chunk, seed=5)
    exchange(pair)
    assert pair.client_end.state is ProxyState.OPEN
    (established,) = [e for e in pair.client_events if isinstance(e, ProxyEstablished)]
    assert established == ProxyEstablished(
        proxy="http://proxy.example:3128", target="broker.example:5672", status_code=200
    )
    request = pair.server_end.request
    assert request.method == b"CONNECT" and request.target == b"broker.example:5672"
    assert (b"host", b"broker.example:5672") in list(request.headers)
    assert b"proxy-authorization" not in dict(request.headers)
    request_line = b"CONNECT broker.example:5672 HTTP/1.1\r\n"
    assert pair.wire[0] == ("c>s", request_line + b"Host: broker.example:5672\r\n\r\n")


def test_credentials_go_as_basic_proxy_authorization() -> None:
    pair = Pair(layers=tunnelled(SECRET))
    exchange(pair)
    headers = dict(pair.server_end.request.headers)
    assert headers[b"proxy-authorization"] == b"Basic " + base64.b64encode(b"alice:s3cret")


def test_the_engines_bytes_wait_for_the_reply_and_bytes_after_it_go_inward() -> None:
    inner = Inner(out=b"AMQP\x03\x01\x00\x00")
    layer = ProxyLayer(inner, OPTIONS)
    assert layer.data_to_send().startswith(b"CONNECT ")
    assert layer.data_to_send() == b""  # the engine's header waits inside it
    assert inner.out
    events = layer.receive_data(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", 0.0)
    assert events == [] and inner.got == []
    events = layer.receive_data(b"Via: 1.1 proxy\r\n\r\nAMQP\x03", 0.0)
    assert [type(e) for e in events] == [ProxyEstablished]
    assert inner.got == [b"AMQP\x03"]
    assert layer.data_to_send() == b"AMQP\x03\x01\x00\x00"
    layer.receive_data(b"\x01\x00\x00", 0.0)
    assert inner.got == [b"AMQP\x03", b"\x01\x00\x00"]
    layer.receive_data(b"", 0.0)  # the transport's end goes inward too
    assert inner.got[-1] == b"" and layer.state is ProxyState.CLOSED


def test_an_internationalized_host_goes_in_idna_form() -> None:
    options = ProxyOptions(host="bücher.example", port=443, proxy="http://p:1")
    assert options.target == "xn--bcher-kva.example:443"
    request = ProxyLayer(Inner(), options).data_to_send()
    assert request.startswith(b"CONNECT xn--bcher-kva.example:443 HTTP/1.1\r\n")


def test_an_ipv6_target_is_bracketed() -> None:
    options = ProxyOptions(host="::1", port=5671, proxy="http://p:1")
    assert options.target == "[::1]:5671"
    assert ProxyLayer(Inner(), options).data_to_send().startswith(b"CONNECT [::1]:5671 HTTP/1.1")


# -- failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [403, 407, 502, 301, 500])
def test_a_non_2xx_reply_fails_with_its_status(status: int) -> None:
    inner = Inner(out=b"AMQP")
    layer = ProxyLayer(inner, SECRET)
    layer.data_to_send()
    reply = f"HTTP/1.1 {status} Nope\r\nContent-Length: 4\r\n\r\nbody".encode()
    events = layer.receive_data(reply, 0.0)
    failed = failure(events)
    assert failed.status_code == status and failed.proxy == SECRET.proxy
    assert f"HTTP {status} Nope" in failed.error and SECRET.proxy in failed.error
    assert "s3cret" not in failed.error + repr(failed) + repr(layer) + repr(SECRET)
    assert ("credentials" in failed.error) is (status == 407)
    assert inner.got == [b""]  # end-of-stream inward; the body never is
    assert layer.state is ProxyState.FAILED and layer.data_to_send() == b""
    assert layer.next_deadline() is None
    assert layer.receive_data(b"more", 1.0) == [] and layer.handle_timer(99.0) == []
    error = failed.exception()
    assert isinstance(error, ProxyError) and isinstance(error, FramingError)
    assert error.status_code == status and error.condition == "amqp:connection:framing-error"
    assert isinstance(failed, LayerFailed) and failed.layer == "HTTP proxy"


@pytest.mark.parametrize(
    "reply",
    [
        b"SSH-2.0-OpenSSH_9.6\r\n\r\n",
        b"HTTP/1.1 abc OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
    ],
)
def test_a_malformed_reply_fails(reply: bytes) -> None:
    inner = Inner()
    layer = ProxyLayer(inner, OPTIONS)
    failed = failure(layer.receive_data(reply, 0.0))
    assert "malformed reply" in failed.error and failed.status_code is None
    assert inner.got == [b""]


def test_a_reply_head_over_the_limit_fails_whole_or_byte_by_byte() -> None:
    options = ProxyOptions(host="b", port=1, proxy="http://p:1", max_head_size=64)
    head = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"x" * 80 + b"\r\n\r\n"
    whole = failure(ProxyLayer(Inner(), options).receive_data(head, 0.0))
    assert "over 64 bytes" in whole.error
    layer = ProxyLayer(Inner(), options)
    events: list[Any] = []
    for i in range(len(head)):
        events += layer.receive_data(head[i : i + 1], 0.0)
        if events:
            break
    assert "over 64 bytes" in failure(events).error
    assert i < len(head) - 1  # it stopped before the head ended: nothing buffered past it


def test_a_head_within_the_limit_passes_whatever_follows_it() -> None:
    options = ProxyOptions(host="b", port=1, proxy="http://p:1", max_head_size=40)
    head = b"HTTP/1.1 200 OK\r\n\r\n"
    inner = Inner()
    events = ProxyLayer(inner, options).receive_data(head + b"A" * 1000, 0.0)
    assert [type(e) for e in events] == [ProxyEstablished] and inner.got == [b"A" * 1000]


def test_no_reply_in_time_fails() -> None:
    inner = Inner()
    inner.deadline = 100.0
    options = ProxyOptions(host="b", port=1, proxy="http://p:1", handshake_timeout=5)
    layer = ProxyLayer(inner, options)
    # Not armed before a time is known: a timer call at once tells it the time (and goes
    # no further: the inner layer's deadline has not come).
    assert layer.next_deadline() == -math.inf
    assert layer.handle_timer(1.0) == [] and inner.timers == []
    assert layer.next_deadline() == 6.0
    layer.receive_data(b"HTTP/1.1 200", 2.0)
    assert layer.handle_timer(5.9) == [] and inner.timers == []
    failed = failure(layer.handle_timer(6.0))
    assert "within 5" in failed.error and failed.status_code is None
    assert inner.got == [b""] and inner.timers == []
    assert layer.next_deadline() is None


def test_the_inner_deadline_comes_through_while_the_reply_is_awaited() -> None:
    inner = Inner()
    inner.deadline = 3.0
    layer = ProxyLayer(inner, OPTIONS)
    layer.receive_data(b"HTTP/1.1", 1.0)
    assert layer.next_deadline() == 3.0
    assert layer.handle_timer(3.0) == [] and inner.timers == [3.0]
    inner.deadline = 40.0
    assert layer.next_deadline() == 31.0  # the reply's: 30 s from the first time given


def test_after_the_reply_only_the_inner_deadline_counts() -> None:
    inner = Inner()
    layer = ProxyLayer(inner, OPTIONS)
    layer.receive_data(b"HTTP/1.1 200 OK\r\n\r\n", 0.0)
    assert layer.next_deadline() is None
    inner.deadline = 50.0
    assert layer.next_deadline() == 50.0
    assert layer.handle_timer(100.0) == [] and inner.timers == [100.0]


def test_the_proxy_closing_first_fails() -> None:
    inner = Inner()
    layer = ProxyLayer(inner, OPTIONS)
    layer.receive_data(b"HTTP/1.1 2", 0.0)
    failed = failure(layer.receive_data(b"", 0.0))
    assert "closed the connection before answering" in failed.error
    assert inner.got == [b""]


def test_options_are_checked() -> None:
    with pytest.raises(LocalProtocolError):
        ProxyOptions(host="b", port=1, proxy="p", max_head_size=0)
    with pytest.raises(LocalProtocolError):
        ProxyOptions(host="b", port=1, proxy="p", handshake_timeout=0)
    for host in ("b\r\nX-Evil: 1", "a b", "", "a/b", "user@b", "\u0000", "ü" * 64 + ".b"):
        with pytest.raises(LocalProtocolError, match="not a host name"):
            ProxyOptions(host=host, port=1, proxy="p")
    with pytest.raises(LocalProtocolError, match="line break"):
        ProxyOptions(host="b", port=1, proxy="p", username="a", password="x\r\n")
    with pytest.raises(ValueError):
        ProxyOptions(host="b", port=0, proxy="p")
    with pytest.raises(LocalProtocolError, match="colon"):
        ProxyOptions(host="b", port=1, proxy="p", username="a:b", password="c")


# -- the reply parser under Hypothesis ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(reply=st.binary(max_size=300), cut=st.integers(0, 300))
def test_any_reply_is_an_open_tunnel_a_failure_or_a_wait(reply: bytes, cut: int) -> None:
    """Whatever the proxy sends, in two pieces: the layer returns (never raises), with at
    most one event of its own; once it opened, what follows the head went inward."""
    inner = Inner()
    layer = ProxyLayer(inner, ProxyOptions(host="b", port=1, proxy="p", max_head_size=128))
    events = layer.receive_data(reply[:cut], 0.0) if reply[:cut] else []
    events += layer.receive_data(reply[cut:], 0.0) if reply[cut:] else []
    ours = [e for e in events if isinstance(e, (ProxyEstablished, ProxyFailed))]
    assert len(ours) <= 1
    if layer.state is ProxyState.OPEN:
        assert b"".join(inner.got) == reply[reply.index(b"\r\n\r\n") + 4 :]
    elif layer.state is ProxyState.FAILED:
        assert inner.got == [b""]
    else:
        assert inner.got == [] and not ours


@settings(max_examples=100, deadline=None)
@given(
    status=st.integers(100, 599),
    headers=st.lists(
        st.tuples(
            st.from_regex(r"[A-Za-z][A-Za-z0-9-]{0,10}", fullmatch=True),
            st.from_regex(r"[ -~]{0,20}", fullmatch=True).map(str.strip),
        ),
        max_size=5,
    ),
    rest=st.binary(max_size=50),
    chunk=st.integers(1, 40),
)
def test_well_formed_replies_in_any_chunks(
    status: int, headers: list[tuple[str, str]], rest: bytes, chunk: int
) -> None:
    head = f"HTTP/1.1 {status} Reason\r\n".encode()
    head += b"".join(f"{name}: {value}\r\n".encode() for name, value in headers) + b"\r\n"
    data = head + rest
    inner = Inner()
    layer = ProxyLayer(inner, OPTIONS)
    events: list[Any] = []
    for i in range(0, len(data), chunk):
        events += layer.receive_data(data[i : i + chunk], 0.0)
    if 200 <= status < 300:
        assert layer.state is ProxyState.OPEN and b"".join(inner.got) == rest
        assert [type(e) for e in events] == [ProxyEstablished]
    elif status < 200:  # informational: what follows is the final reply (here: not one)
        assert layer.state is not ProxyState.OPEN
        assert all(e.status_code is None for e in events if isinstance(e, ProxyFailed))
    else:
        assert failure(events).status_code == status


# -- the stack, URLs and the choice of proxy ---------------------------------------------------


def test_the_stack_puts_the_tunnel_outside_tls() -> None:
    engine = a.Connection(client=True, container_id="c")
    context = ssl.create_default_context()
    layer = stack(
        engine, role="client", tls=context, server_hostname="broker.example", proxy=OPTIONS
    )
    assert isinstance(layer, ProxyLayer) and isinstance(layer.inner, TLSLayer)
    assert layer.inner.inner is engine
    with pytest.raises(ValueError, match="client"):
        stack(engine, role="server", proxy=OPTIONS)


def test_tls_to_the_broker_runs_inside_the_tunnel() -> None:
    ca = trustme.CA()
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("broker.example").configure_cert(server_context)
    client_context = ssl.create_default_context()
    ca.configure_trust(client_context)

    def layers(engine: a.Connection, role: str) -> Any:
        if role == "client":
            return stack(
                engine,
                role="client",
                tls=client_context,
                server_hostname="broker.example",
                proxy=OPTIONS,
            )
        return ProxyEnd(stack(engine, role="server", tls=server_context))

    pair = Pair(layers=layers)
    exchange(pair)
    # What crossed after the CONNECT and its reply is TLS records (content types 20-23).
    after = [data for way, data in pair.wire[1:] if way == "c>s"]
    assert after and all(data[0] in (20, 21, 22, 23) for data in after)
    # The engine's end closes TLS through the tunnel: close_notify, a TLS record.
    assert pair.client_end.data_to_send() == b""
    pair.client_end.close()
    assert pair.client_end.inner.state in (TLSState.CLOSING, TLSState.CLOSED)
    assert pair.client_end.data_to_send()[:1] in (b"\x15", b"\x17")


def test_websocket_over_the_tunnel() -> None:
    url = parse_url("ws://broker.example:8080/amqp")
    proxies = Proxies(explicit=parse_proxy("http://proxy.example:3128"))
    parsed, _engine, layer = client_engine(url, proxy=proxies)
    assert isinstance(layer, ProxyLayer) and isinstance(layer.inner, WebSocketLayer)
    assert layer.options.target == "broker.example:8080"
    assert layer.data_to_send().startswith(b"CONNECT broker.example:8080 HTTP/1.1\r\n")
    assert proxies.address(parsed) == ("proxy.example", 3128)


@pytest.mark.parametrize(
    ("text", "proxy"),
    [
        ("http://proxy:3128", ProxyURL(host="proxy", port=3128)),
        ("http://proxy", ProxyURL(host="proxy", port=80)),
        ("proxy:8080", ProxyURL(host="proxy", port=8080)),
        ("HTTP://[::1]:3128/", ProxyURL(host="::1", port=3128)),
        (
            "http://a%40b:p%3Ass@proxy:1",
            ProxyURL(host="proxy", port=1, username="a@b", password="p:ss"),
        ),
    ],
)
def test_proxy_urls(text: str, proxy: ProxyURL) -> None:
    assert parse_proxy(text) == proxy


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("https://proxy:443", "must be http://"),
        ("socks5://proxy:1080", "must be http://"),
        ("http://", "no host"),
        ("http://proxy:99999", "not a valid"),
        ("http://proxy:1/path", "no path"),
        ("http://proxy:1?q=1", "no path"),
    ],
)
def test_bad_proxy_urls(text: str, why: str) -> None:
    with pytest.raises(URLError, match=why):
        parse_proxy(text)


def test_proxy_credentials_stay_hidden() -> None:
    proxy = parse_proxy("http://alice:s3cret@proxy:3128")
    assert proxy.redacted() == "http://alice:***@proxy:3128" == str(proxy)
    assert "s3cret" not in repr(proxy)
    options = proxy.options("broker", 5672)
    assert "s3cret" not in repr(options) and options.proxy == "http://alice:***@proxy:3128"
    assert parse_proxy("http://[::1]:1").redacted() == "http://[::1]:1"


def test_the_choice_of_proxy_per_url() -> None:
    env = parse_proxy("http://env:1")
    tls = parse_proxy("http://envs:2")
    bypassed: list[str] = []

    def bypass(host: str) -> bool:
        bypassed.append(host)
        return host.startswith("local")

    proxies = Proxies(by_scheme={"ws": env, "wss": tls}, bypass=bypass)
    assert proxies.for_url(parse_url("ws://remote/")) == env
    assert proxies.for_url(parse_url("wss://remote/")) == tls
    assert proxies.for_url(parse_url("amqp://remote")) is None
    assert proxies.for_url(parse_url("ws://localhost:9/")) is None
    assert proxies.address(parse_url("ws://localhost:9/")) == ("localhost", 9)
    assert proxies.for_url(parse_url("ws://[::1]:9/")) == env
    assert bypassed == ["remote:80", "remote:443", "localhost:9", "localhost:9", "[::1]:9"]
    explicit = Proxies(explicit=parse_proxy("http://mine:3"), bypass=lambda host: True)
    assert explicit.for_url(parse_url("amqp://localhost")) == parse_proxy("http://mine:3")
    assert explicit.options(parse_url("amqps://b")) == ProxyOptions(
        host="b", port=5671, proxy="http://mine:3"
    )
    assert Proxies().options(parse_url("ws://b/")) is None
