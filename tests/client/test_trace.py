"""Frame tracing (amqp_sansio/client/trace.py): AMQP_SANSIO_TRACE=1 or the amqp_sansio.frames
logger at DEBUG logs each frame both ways, decoded, credentials left out."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import amqp_sansio as a
import amqp_sansio.definitions.amqp10
import amqp_sansio.framing.amqp10
from amqp_sansio.client import trace
from amqp_sansio.client.engines import client_engine, server_engine

SECRET = "a-password-that-must-never-be-logged"


class Users:
    def check_password(self, username: str, password: str) -> bool:
        return password == SECRET


def _exchange(client: object, server: a.Connection) -> None:
    for _ in range(50):
        out_c = client.data_to_send()  # type: ignore[attr-defined]
        out_s = server.data_to_send()
        if not out_c and not out_s:
            return
        # Byte by byte one way, whole the other: the trace parses any chunking.
        for i in range(len(out_c)):
            server.receive_data(out_c[i : i + 1], 0.0)
        if out_s:
            client.receive_data(out_s, 0.0)  # type: ignore[attr-defined]


def test_every_frame_is_logged_both_ways_without_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="amqp_sansio.frames")
    engine = a.Connection(
        client=True,
        container_id="traced",
        sasl=a.sasl.ClientCredentials(username="alice", password=SECRET),
        allow_plain_without_tls=True,
    )
    traced = trace.FrameTrace(engine, "traced")
    server = a.Connection(
        client=False, sasl=a.sasl.ServerAuthenticator(Users(), allow_cleartext_secrets=True)
    )
    engine.open(now=0.0)
    _exchange(traced, server)
    server.open()
    _exchange(traced, server)
    engine.begin()
    _exchange(traced, server)
    lines = [r.getMessage() for r in caplog.records]
    sent = [line for line in lines if line.startswith("traced -> ")]
    got = [line for line in lines if line.startswith("traced <- ")]
    assert sent[0] == "traced -> AMQP header SASL"
    assert "SaslInit(mechanism=Symbol('PLAIN')" in sent[1]
    assert sent[2] == "traced -> AMQP header AMQP" and "Open(container_id='traced'" in sent[3]
    assert "[0] Begin(" in sent[4]
    assert got[0] == "traced <- AMQP header SASL" and "SaslMechanisms" in got[1]
    assert "SaslOutcome(code=<SaslCode.OK: 0>" in got[2] and got[3] == "traced <- AMQP header AMQP"
    assert any("Open(container_id='amqp-sansio'" in line for line in got)
    assert SECRET not in caplog.text
    assert traced.next_deadline() == engine.next_deadline()
    assert traced.handle_timer(1.0) == []


def test_payload_sizes_heartbeats_and_a_broken_stream(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="amqp_sansio.frames")
    side = trace._Direction("x", "<-")
    transfer = a.framing.amqp10.encode_frame(
        a.definitions.amqp10.performatives.Transfer(handle=0, delivery_id=0, delivery_tag=b"t"),
        payload=b"12345",
    )
    side.feed(a.framing.amqp10.AMQP_HEADER + a.framing.amqp10.HEARTBEAT + transfer)
    side.feed(b"\x00\x00\x00\x09\x02\x00\x00\x00\x00")  # a frame that does not decode
    side.feed(transfer)  # ignored: the trace stopped
    lines = [r.getMessage() for r in caplog.records]
    assert lines[:3] == [
        "x <- AMQP header AMQP",
        "x <- [0] (empty frame)",
        lines[2],
    ] and lines[2].endswith("(payload 5 bytes)")
    assert lines[3].startswith("x <- (trace stops: ") and len(lines) == 4


def test_off_by_default_and_on_with_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = a.Connection()
    monkeypatch.delenv(trace.ENV, raising=False)
    monkeypatch.setattr(trace.LOGGER, "level", logging.NOTSET)
    monkeypatch.setattr(trace.LOGGER, "handlers", [])
    assert trace.wrap(engine, "n") is engine  # no cost when off
    monkeypatch.setenv(trace.ENV, "0")
    assert trace.wrap(engine, "n") is engine
    monkeypatch.setenv(trace.ENV, "1")
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    traced = trace.wrap(engine, "n")
    assert isinstance(traced, trace.FrameTrace)
    assert [type(h) for h in trace.LOGGER.handlers] == [logging.StreamHandler]


def test_the_adapters_trace_inside_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace sits between the engine and the TLS layer: it shows plaintext."""
    monkeypatch.setenv(trace.ENV, "1")
    _, engine, stream = client_engine("amqps://localhost/q", verify=False)
    assert isinstance(stream, a.TLSLayer) and isinstance(stream.inner, trace.FrameTrace)
    assert stream.inner.inner is engine
    _, engine, stream = client_engine("amqp://localhost/q")
    assert isinstance(stream, trace.FrameTrace)
    server, stream = server_engine()
    assert isinstance(stream, trace.FrameTrace) and stream.inner is server


# -- AMQP 0-9-1 ------------------------------------------------------------------------------


def _pump091(client: object, server: object) -> None:
    """A 0-9-1 client stream and a server engine, the client's bytes byte by byte."""
    for _ in range(100):
        out_c = client.data_to_send()  # type: ignore[attr-defined]
        got: list[Any] = []
        for i in range(len(out_c)):
            got += server.receive_data(out_c[i : i + 1], 0.0)  # type: ignore[attr-defined]
        for event in got:
            name = type(event).__name__
            if name == "LoginRequested":
                server.accept_login(event.username or "")  # type: ignore[attr-defined]
            elif name == "OpenRequested":
                server.accept_open()  # type: ignore[attr-defined]
            elif name == "MethodReceived" and event.method.NAME == "connection.update-secret":
                from amqp_sansio.definitions.amqp091 import spec

                server.send_method(0, spec.ConnectionUpdateSecretOk())  # type: ignore[attr-defined]
        out_s = server.data_to_send()  # type: ignore[attr-defined]
        if out_s:
            client.receive_data(out_s, 0.0)  # type: ignore[attr-defined]
        if not out_c and not out_s:
            return


@pytest.mark.parametrize("mechanism", ["PLAIN", "AMQPLAIN"])
def test_0_9_1_frames_are_traced_both_ways_without_credentials(
    caplog: pytest.LogCaptureFixture, mechanism: str
) -> None:
    """The 0-9-1 client (``connect(url, protocol="0-9-1")``'s engine and stream) traces
    under the same switch and logger: the protocol header, every method, content headers
    and bodies (their size), heartbeats; ``start-ok``'s response never shows."""
    from amqp_sansio.client.amqp091 import client_engine as client_engine_091
    from amqp_sansio.client.amqp091 import trace as trace091
    from amqp_sansio.definitions.amqp091 import spec
    from amqp_sansio.engine import amqp091 as e091

    caplog.set_level(logging.DEBUG, logger="amqp_sansio.frames")
    _, engine, stream = client_engine_091(
        f"amqp://alice:{SECRET}@127.0.0.1/%2f", {"sasl_mechanisms": [mechanism]}
    )
    assert isinstance(stream, trace.FrameTrace)
    server = e091.Connection(e091.Role.SERVER)
    engine.start(0.0)
    _pump091(stream, server)
    number = engine.open_channel()
    _pump091(stream, server)
    engine.publish(number, "amq.topic", "k", b"x" * 5000, spec.BasicProperties(message_id="m1"))
    engine.send_method(0, spec.ConnectionUpdateSecret(new_secret=SECRET.encode(), reason="r"))
    stream.handle_timer(31.0)  # half the heartbeat: a heartbeat goes
    _pump091(stream, server)
    lines = [r.getMessage() for r in caplog.records]
    name = "0-9-1>127.0.0.1:5672"
    sent = [line.removeprefix(f"{name} -> ") for line in lines if line.startswith(f"{name} -> ")]
    got = [line.removeprefix(f"{name} <- ") for line in lines if line.startswith(f"{name} <- ")]
    assert sent[0] == "AMQP header 0-0-9-1"
    assert sent[1] == (
        "[0] ConnectionStartOk(client_properties="
        + repr(e091.negotiation.client_properties())
        + f", mechanism='{mechanism}', response=<redacted>, locale='en_US')"
    )
    assert sent[2].startswith("[0] ConnectionTuneOk(") and sent[3].startswith("[0] ConnectionOpen(")
    assert sent[4] == f"[{number}] ChannelOpen(reserved_1='')"
    assert sent[5].startswith(f"[{number}] BasicPublish(") and "routing_key='k'" in sent[5]
    assert sent[6].startswith(f"[{number}] content header: 5000 bytes, BasicProperties(")
    assert "message_id='m1'" in sent[6]
    assert sent[7] == f"[{number}] content body: 5000 bytes"
    assert sent[8] == "[0] ConnectionUpdateSecret(new_secret=<redacted>, reason='r')"
    assert sent[9] == "[0] heartbeat"
    assert got[0].startswith("[0] ConnectionStart(version_major=0, version_minor=9")
    assert got[1].startswith("[0] ConnectionTune(") and got[2].startswith("[0] ConnectionOpenOk(")
    assert got[3] == f"[{number}] ChannelOpenOk(reserved_1=b'')"
    assert got[4] == "[0] ConnectionUpdateSecretOk()"
    assert SECRET not in caplog.text and "alice" not in caplog.text
    assert trace091.describe(spec.ConnectionSecure(challenge=b"c")) == (
        "ConnectionSecure(challenge=<redacted>)"
    )
    assert trace091.describe(spec.ConnectionSecureOk(response=SECRET.encode())) == (
        "ConnectionSecureOk(response=<redacted>)"
    )


def test_0_9_1_a_broken_stream_stops_the_trace(caplog: pytest.LogCaptureFixture) -> None:
    from amqp_sansio.amqp091 import encode_method_frame
    from amqp_sansio.client.amqp091 import trace as trace091
    from amqp_sansio.definitions.amqp091 import spec

    caplog.set_level(logging.DEBUG, logger="amqp_sansio.frames")
    side = trace091._Direction("x", "<-", header=False)
    qos = encode_method_frame(1, spec.BasicQos(prefetch_count=3))
    side.feed(qos[:5])
    side.feed(qos[5:] + b"\x01\x00\x01\x00\x00\x00\x01\x00\x00")  # a frame-end that is not
    side.feed(qos)  # ignored: the trace stopped
    side = trace091._Direction("y", "<-", header=False)
    side.feed(b"AMQP\x00\x00\x09\x01")  # a server refusing our version answers with a header
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == "x <- [1] BasicQos(prefetch_size=0, prefetch_count=3, global_=False)"
    assert lines[1].startswith("x <- (trace stops: ") and "frame-end" in lines[1]
    assert lines[2].startswith("y <- (trace stops: ") and len(lines) == 3


def test_0_9_1_off_by_default_and_inside_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    from amqp_sansio.client.amqp091 import client_engine as client_engine_091

    monkeypatch.delenv(trace.ENV, raising=False)
    monkeypatch.setattr(trace.LOGGER, "level", logging.NOTSET)
    monkeypatch.setattr(trace.LOGGER, "handlers", [])
    _, engine, stream = client_engine_091("amqp://127.0.0.1")
    assert not isinstance(stream, trace.FrameTrace)  # no cost when off
    monkeypatch.setenv(trace.ENV, "1")
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    _, engine, stream = client_engine_091("amqps://localhost")
    assert isinstance(stream, a.TLSLayer) and isinstance(stream.inner, trace.FrameTrace)
    assert stream.inner.inner is engine  # type: ignore[attr-defined]
    stream.inner.set_transport_security(encrypted=True)  # (TLS tells the layer under it)
    trace.LOGGER.setLevel(logging.NOTSET)  # (and clears the logger's cached level)
