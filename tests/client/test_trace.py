"""Frame tracing (amqp_sansio/client/trace.py): AMQP_SANSIO_TRACE=1 or the amqp_sansio.frames
logger at DEBUG logs each frame both ways, decoded, credentials left out."""

from __future__ import annotations

import logging

import pytest

import amqp_sansio as a
from amqp_sansio.client import client_engine, server_engine, trace

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
    transfer = a.framing.encode_frame(
        a.definitions.performatives.Transfer(handle=0, delivery_id=0, delivery_tag=b"t"),
        payload=b"12345",
    )
    side.feed(a.framing.AMQP_HEADER + a.framing.HEARTBEAT + transfer)
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
