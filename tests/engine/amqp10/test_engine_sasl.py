"""The SASL layer of the engine (core spec 5.3): two engines in memory, and raw bytes."""

from __future__ import annotations

import hmac

import pytest
from support.engine_pair import Pair, of

import amqp_sansio as a
import amqp_sansio.codec.amqp10
import amqp_sansio.framing.amqp10
from amqp_sansio import sasl
from amqp_sansio.definitions.amqp10 import performatives

PASSWORD = "pencil-s3cret"


class Store:
    """Users for PLAIN and SCRAM, as an application would keep them."""

    def __init__(self) -> None:
        self.users = {"alice": PASSWORD}
        self.scram = {
            (name, mech): a.sasl.derive_scram_credentials(pw, mechanism=mech, iterations=4096)
            for name, pw in self.users.items()
            for mech in sasl.SCRAM_MECHANISMS
        }

    def check_password(self, username: str, password: str) -> bool:
        known = self.users.get(username)
        return known is not None and hmac.compare_digest(known.encode(), password.encode())

    def scram_credentials(self, username: str, mechanism: str) -> a.sasl.ScramCredentials | None:
        return self.scram.get((username, mechanism))


def _pair(
    client_sasl: object = None,
    server_sasl: object = None,
    *,
    client: dict[str, object] | None = None,
    server: dict[str, object] | None = None,
    chunk: int | None = None,
) -> Pair:
    return Pair(
        chunk=chunk,
        client={"sasl": client_sasl, **(client or {})},
        server={"sasl": server_sasl, **(server or {})},
    )


def _layers(wire: bytes) -> list[str]:
    """What one direction of the stream holds, in order: headers and runs of frames."""
    parser = a.framing.amqp10.FrameParser(max_frame_size=1 << 20)
    parser.feed(bytes(wire))
    seen: list[str] = []
    offset = 0
    while offset < len(wire):
        if wire[offset : offset + 4] == b"AMQP":  # a frame never starts so (its size)
            header = parser.next_protocol_header()
            assert header is not None
            seen.append(header.protocol_id.name)
        else:
            frame = parser.next_frame()
            assert frame is not None
            kind = "sasl-frames" if frame.type is a.framing.amqp10.FrameType.SASL else "amqp-frames"
            if seen[-1] != kind:
                seen.append(kind)
        offset = len(wire) - parser.buffered
    return seen


def _alice(**kw: object) -> a.sasl.ClientCredentials:
    return a.sasl.ClientCredentials(username="alice", password=PASSWORD, **kw)  # type: ignore[arg-type]


def _sent(p: Pair, direction: str) -> bytes:
    return b"".join(data for d, data in p.wire if d == direction)


@pytest.mark.parametrize("chunk", [1, 5, None])
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"])
def test_authenticate_then_open_and_send(chunk: int | None, mechanism: str) -> None:
    p = _pair(
        _alice(),
        a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True),
        client={"sasl_mechanisms": [mechanism], "allow_plain_without_tls": True},
        chunk=chunk,
    )
    p.client.open(now=0.0)
    c, s = p.pump()
    assert of(c, a.events.Authenticated) == [
        a.events.Authenticated(mechanism=mechanism, identity="alice")
    ]
    assert of(s, a.events.Authenticated) == [
        a.events.Authenticated(mechanism=mechanism, identity="alice")
    ]
    assert p.server.authenticated_identity == "alice" and p.server.sasl_mechanism == mechanism
    assert of(s, a.events.ConnectionOpened)  # the open the client pipelined went out after SASL
    p.server.open()
    p.pump()
    cs, _ = p.session()
    snd, rcv = p.link(cs)
    rcv.flow(1)
    p.pump()
    snd.send(b"hello")
    _, s = p.pump()
    assert of(s, a.events.DeliveryReceived)[0].data == b"hello"
    wire = _sent(p, "c>s")
    # SASL's header and frames, then AMQP's: nothing of AMQP's went before the outcome.
    assert _layers(wire) == ["SASL", "sasl-frames", "AMQP", "amqp-frames"]
    assert _layers(_sent(p, "s>c")) == ["SASL", "sasl-frames", "AMQP", "amqp-frames"]
    if mechanism != "PLAIN":
        assert PASSWORD.encode() not in wire  # SCRAM never sends the password


def test_the_client_picks_the_strongest_mechanism_both_offer() -> None:
    p = _pair(_alice(), a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True))
    p.client.open(now=0.0)
    c, _ = p.pump()
    assert of(c, a.events.Authenticated)[0].mechanism == "SCRAM-SHA-512"


def test_plain_is_not_sent_unencrypted_without_opting_in() -> None:
    p = _pair(
        _alice(),
        a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True, mechanisms=["PLAIN"]),
    )
    p.client.open(now=0.0)
    c, s = p.pump()
    (failed,) = of(c, a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLNoMechanismError)
    assert "PLAIN" in failed.description
    assert PASSWORD.encode() not in _sent(p, "c>s")
    assert of(c, a.events.ConnectionEnded) and p.client.state is a.ConnectionState.END
    assert not s  # the server is still waiting for sasl-init: the client closes the socket
    p.client.data_to_send()
    assert of(p.server.receive_data(b"", p.now), a.events.ConnectionEnded)


def test_plain_over_an_encrypted_transport_needs_no_opt_in() -> None:
    p = _pair(
        _alice(),
        a.sasl.ServerAuthenticator(Store(), mechanisms=["PLAIN"]),
        client={"encrypted": True},
    )
    p.server.set_transport_security(encrypted=True)
    p.client.open(now=0.0)
    c, s = p.pump()
    assert of(c, a.events.Authenticated)[0].mechanism == "PLAIN"
    assert of(s, a.events.Authenticated)[0].identity == "alice"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "PLAIN"])
def test_a_wrong_password_is_refused_cleanly(mechanism: str) -> None:
    p = _pair(
        a.sasl.ClientCredentials(username="alice", password="wrong"),
        a.sasl.ServerAuthenticator(Store(), allow_cleartext_secrets=True),
        client={"sasl_mechanisms": [mechanism], "allow_plain_without_tls": True},
    )
    p.client.open(now=0.0)
    c, s = p.pump()
    (cf,) = of(c, a.events.AuthenticationFailed)
    (sf,) = of(s, a.events.AuthenticationFailed)
    assert cf.code is performatives.SaslCode.AUTH and sf.code is performatives.SaslCode.AUTH
    assert isinstance(cf.error, sasl.SASLAuthenticationError)
    assert of(c, a.events.ConnectionEnded) and of(s, a.events.ConnectionEnded)
    assert not of(s, a.events.ConnectionOpened)  # the open the client held back never went
    assert a.framing.amqp10.AMQP_HEADER not in _sent(
        p, "c>s"
    ) and a.framing.amqp10.AMQP_HEADER not in _sent(p, "s>c")
    assert "wrong" not in repr(c + s) and PASSWORD not in repr(c + s)
    assert p.client.data_to_send() == p.server.data_to_send() == b""


def test_anonymous_when_enabled_and_no_credentials() -> None:
    p = _pair(a.sasl.ClientCredentials(), a.sasl.ServerAuthenticator(allow_anonymous=True))
    p.client.open(now=0.0)
    c, s = p.pump()
    assert of(c, a.events.Authenticated)[0].mechanism == "ANONYMOUS"
    assert of(s, a.events.Authenticated)[0].identity == "anonymous"
    with pytest.raises(a.LocalProtocolError):
        p.server.set_transport_security()  # too late: the exchange is over


def test_external_binds_to_the_verified_client_certificate() -> None:
    p = _pair(a.sasl.ClientCredentials(), a.sasl.ServerAuthenticator())
    p.client.set_transport_security(encrypted=True, client_certificate=True)
    p.server.set_transport_security(encrypted=True, peer_identity="CN=alice,O=Example")
    p.client.open(now=0.0)
    c, s = p.pump()
    assert of(c, a.events.Authenticated)[0].mechanism == "EXTERNAL"
    assert of(s, a.events.Authenticated)[0].identity == "CN=alice,O=Example"


def test_transport_security_is_set_before_the_exchange() -> None:
    p = _pair(a.sasl.ClientCredentials(), a.sasl.ServerAuthenticator(allow_anonymous=True))
    p.client.open(now=0.0)
    p.client.set_transport_security(encrypted=False)  # until the server's header arrives
    p.pump()
    with pytest.raises(a.LocalProtocolError):
        p.client.set_transport_security()
    server = a.Connection(client=False, sasl=a.sasl.ServerAuthenticator(allow_anonymous=True))
    server.receive_data(
        a.framing.amqp10.SASL_HEADER, 0.0
    )  # the exchange has begun: mechanisms offered
    with pytest.raises(a.LocalProtocolError):
        server.set_transport_security(peer_identity="CN=late")
    plain = Pair().client
    plain.set_transport_security()  # no SASL at all: only recorded
    assert plain.encrypted


def test_the_wrong_kind_of_sasl_configuration_is_refused() -> None:
    with pytest.raises(a.LocalProtocolError):
        a.Connection(client=True, sasl=a.sasl.ServerAuthenticator(allow_anonymous=True))
    with pytest.raises(a.LocalProtocolError):
        a.Connection(client=False, sasl=a.sasl.ClientCredentials())


def test_a_server_with_nothing_to_offer_ends_after_its_header() -> None:
    p = _pair(a.sasl.ClientCredentials(), a.sasl.ServerAuthenticator(Store(), mechanisms=["PLAIN"]))
    p.client.open(now=0.0)
    _, s = p.pump()
    (sf,) = of(s, a.events.AuthenticationFailed)
    assert isinstance(sf.error, sasl.SASLConfigurationError)
    assert _sent(p, "s>c") == a.framing.amqp10.SASL_HEADER  # no empty mechanism list (5.3.3.1)
    assert p.server.state is a.ConnectionState.END


# -- raw bytes: a peer that breaks the exchange ---------------------------------------------------


def _server(**kw: object) -> a.Connection:
    return a.Connection(
        client=False,
        sasl=a.sasl.ServerAuthenticator(Store(), allow_anonymous=True, **kw),  # type: ignore[arg-type]
    )


def _sasl_frame(body: object) -> bytes:
    return a.framing.amqp10.encode_frame(body, frame_type=a.framing.amqp10.FrameType.SASL)


def _client() -> a.Connection:
    client = a.Connection(client=True, sasl=a.sasl.ClientCredentials())
    client.open(now=0.0)
    assert client.data_to_send() == a.framing.amqp10.SASL_HEADER  # nothing of AMQP's yet
    return client


def _mechanisms(*names: str) -> bytes:
    return _sasl_frame(
        performatives.SaslMechanisms(sasl_server_mechanisms=[a.Symbol(n) for n in names])
    )


def test_leftover_bytes_after_the_outcome_are_not_lost() -> None:
    """A client that pipelines its AMQP header and open right behind sasl-init: one chunk."""
    server = _server()
    init = _sasl_frame(
        performatives.SaslInit(mechanism=a.Symbol("ANONYMOUS"), initial_response=b"")
    )
    opening = a.framing.amqp10.encode_frame(performatives.Open(container_id="c"))
    events = server.receive_data(
        a.framing.amqp10.SASL_HEADER + init + a.framing.amqp10.AMQP_HEADER + opening, 0.0
    )
    assert [type(e) for e in events] == [a.events.Authenticated, a.events.ConnectionOpened]
    out = server.data_to_send()
    assert out.startswith(a.framing.amqp10.SASL_HEADER) and out.endswith(
        a.framing.amqp10.AMQP_HEADER
    )


@pytest.mark.parametrize(
    "rogue",
    [
        pytest.param(
            a.framing.amqp10.encode_frame(performatives.Open(container_id="x")),
            id="amqp-frame-before-outcome",
        ),
        pytest.param(
            a.framing.amqp10.encode_frame(None, frame_type=a.framing.amqp10.FrameType.SASL),
            id="empty-sasl-frame",
        ),
        pytest.param(
            _sasl_frame(performatives.SaslOutcome(code=performatives.SaslCode.OK)),
            id="outcome-before-mechanisms",
        ),
        pytest.param(
            _sasl_frame(performatives.SaslInit(mechanism=a.Symbol("PLAIN"))),
            id="init-sent-to-a-client",
        ),
        pytest.param(b"\x00\x00\x00\x0c\x02\x01\x00\x00\x00S\x99\x00", id="malformed-body"),
        pytest.param(b"\x00\x10\x00\x00\x02\x01\x00\x00", id="frame-too-large"),
    ],
)
def test_a_client_ends_on_a_broken_exchange(rogue: bytes) -> None:
    client = _client()
    events = client.receive_data(a.framing.amqp10.SASL_HEADER + rogue, 0.0)
    assert [type(e) for e in events] == [a.events.AuthenticationFailed, a.events.ConnectionEnded]
    assert client.data_to_send() == b""  # nothing further sent
    assert client.receive_data(_mechanisms("ANONYMOUS"), 0.0) == []


def test_a_challenge_the_mechanism_cannot_answer_ends_the_client() -> None:
    client = a.Connection(client=True, sasl=_alice(), sasl_mechanisms=["SCRAM-SHA-256"])
    client.open(now=0.0)
    client.data_to_send()
    client.receive_data(a.framing.amqp10.SASL_HEADER + _mechanisms("SCRAM-SHA-256"), 0.0)
    assert client.data_to_send().startswith(b"\x00")  # sasl-init went
    events = client.receive_data(
        _sasl_frame(performatives.SaslChallenge(challenge=b"r=bogus")), 0.0
    )
    (failed,) = of(events, a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLProtocolError)
    assert client.data_to_send() == b""


def test_a_server_whose_signature_is_wrong_is_not_trusted() -> None:
    client = a.Connection(client=True, sasl=_alice(), sasl_mechanisms=["SCRAM-SHA-256"])
    client.open(now=0.0)
    client.data_to_send()
    client.receive_data(a.framing.amqp10.SASL_HEADER + _mechanisms("SCRAM-SHA-256"), 0.0)
    parser = a.framing.amqp10.FrameParser()
    parser.feed(client.data_to_send())
    init = parser.next_frame()
    assert init is not None
    first = init.body.initial_response.decode()
    nonce = first.split("r=")[1]
    challenge = f"r={nonce}SERVER,s=c2FsdA==,i=4096".encode()
    client.receive_data(_sasl_frame(performatives.SaslChallenge(challenge=challenge)), 0.0)
    client.data_to_send()
    events = client.receive_data(
        _sasl_frame(
            performatives.SaslOutcome(code=performatives.SaslCode.OK, additional_data=b"v=AAAA")
        ),
        0.0,
    )
    (failed,) = of(events, a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLServerVerificationError)
    assert client.data_to_send() == b""


@pytest.mark.parametrize(
    "rogue",
    [
        pytest.param(
            _sasl_frame(performatives.SaslResponse(response=b"x")),
            id="response-before-init",
        ),
        pytest.param(_mechanisms("PLAIN"), id="mechanisms-sent-to-a-server"),
        pytest.param(
            a.framing.amqp10.encode_frame(performatives.Open(container_id="x")),
            id="amqp-frame-before-outcome",
        ),
    ],
)
def test_a_server_fails_a_broken_exchange_with_an_outcome(rogue: bytes) -> None:
    server = _server()
    events = server.receive_data(a.framing.amqp10.SASL_HEADER + rogue, 0.0)
    assert [type(e) for e in events] == [a.events.AuthenticationFailed, a.events.ConnectionEnded]
    parser = a.framing.amqp10.FrameParser()
    parser.feed(server.data_to_send())
    assert parser.next_protocol_header() == a.framing.amqp10.ProtocolHeader(
        a.framing.amqp10.ProtocolId.SASL
    )
    assert isinstance(parser.next_frame().body, performatives.SaslMechanisms)  # type: ignore[union-attr]
    outcome = parser.next_frame()
    assert outcome is not None and outcome.body.code is not performatives.SaslCode.OK
    assert parser.next_frame() is None


def test_a_mechanism_not_offered_is_refused() -> None:
    server = _server(mechanisms=["ANONYMOUS"])
    init = _sasl_frame(
        performatives.SaslInit(mechanism=a.Symbol("PLAIN"), initial_response=b"\0a\0b")
    )
    events = server.receive_data(a.framing.amqp10.SASL_HEADER + init, 0.0)
    (failed,) = of(events, a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLMechanismNotSupportedError)
    assert failed.code is performatives.SaslCode.AUTH


def test_a_server_that_requires_sasl_answers_plain_amqp_with_its_sasl_header() -> None:
    """Requires: no anonymous access (one that allows it takes the bare header, see
    test_sasl_defaults.py)."""
    p = _pair(None, a.sasl.ServerAuthenticator(Store()))
    p.client.open(now=0.0)
    c, s = p.pump()
    (bad,) = of(s, a.events.PeerWithoutSASL)
    assert "without SASL" in bad.version_name
    assert _sent(p, "s>c") == a.framing.amqp10.SASL_HEADER
    assert of(c, a.events.UnsupportedProtocol)  # the client learns the server wants SASL


def test_a_client_that_requires_sasl_refuses_a_server_without_it() -> None:
    p = _pair(a.sasl.ClientCredentials(), None)
    p.client.open(now=0.0)
    c, _ = p.pump()
    (bad,) = of(c, a.events.PeerWithoutSASL)
    assert "without SASL" in bad.version_name
    assert _sent(p, "c>s") == a.framing.amqp10.SASL_HEADER  # our open was never sent


def test_another_protocol_where_sasl_is_expected() -> None:
    server = _server()
    events = server.receive_data(b"AMQP\x00\x00\x09\x01", 0.0)
    assert of(events, a.events.UnsupportedProtocol)[0].version_name == "AMQP 0-9-1"
    assert server.data_to_send() == a.framing.amqp10.SASL_HEADER
    tls = _server()
    (bad,) = of(tls.receive_data(a.framing.amqp10.TLS_HEADER, 0.0), a.events.UnsupportedProtocol)
    assert "TLS" in bad.version_name


def test_credentials_never_show() -> None:
    creds = _alice()
    client = a.Connection(client=True, sasl=creds, allow_plain_without_tls=True)
    assert PASSWORD not in repr(creds) + repr(client) + repr(client._sasl)
    client.open(now=0.0)
    client.data_to_send()
    client.receive_data(a.framing.amqp10.SASL_HEADER + _mechanisms("PLAIN"), 0.0)
    wire = client.data_to_send()
    parser = a.framing.amqp10.FrameParser()
    parser.feed(wire)
    init = parser.next_frame()
    assert init is not None and PASSWORD.encode() in init.body.initial_response
    assert PASSWORD not in repr(init.body)


# -- hostile input: each ends in a typed event, and nothing is sent after it -------------------


def test_an_oversized_challenge_is_refused_before_it_is_buffered() -> None:
    """SASL frames have their own bound (``sasl_max_frame_size``; the spec says 512)."""
    client = _client()
    huge = _sasl_frame(performatives.SaslChallenge(challenge=b"x" * 20_000))
    events = client.receive_data(
        a.framing.amqp10.SASL_HEADER + _mechanisms("ANONYMOUS") + huge[:64], 0.0
    )
    assert client.data_to_send()  # sasl-init went
    (failed,) = of(events, a.events.AuthenticationFailed)
    assert isinstance(failed.error, a.errors.FramingError)
    assert client.data_to_send() == b"" and client.state is a.ConnectionState.END


def test_the_sasl_frame_bound_is_configurable_and_lifted_after_the_exchange() -> None:
    with pytest.raises(a.LocalProtocolError):
        a.Connection(client=True, sasl=a.sasl.ClientCredentials(), sasl_max_frame_size=100)
    client = a.Connection(client=True, sasl=a.sasl.ClientCredentials(), sasl_max_frame_size=600)
    client.open(now=0.0)
    client.data_to_send()
    ok = _sasl_frame(performatives.SaslOutcome(code=performatives.SaslCode.OK))
    events = client.receive_data(a.framing.amqp10.SASL_HEADER + _mechanisms("ANONYMOUS") + ok, 0.0)
    assert of(events, a.events.Authenticated)
    big_open = a.framing.amqp10.encode_frame(
        performatives.Open(container_id="s" * 1000)
    )  # over 600, under 65536
    events = client.receive_data(a.framing.amqp10.AMQP_HEADER + big_open, 0.0)
    assert of(events, a.events.ConnectionOpened)


@pytest.mark.parametrize("cut", [3, 12, 20])
def test_a_transport_closed_mid_exchange_is_a_failure(cut: int) -> None:
    client = _client()
    stream = a.framing.amqp10.SASL_HEADER + _mechanisms("ANONYMOUS", "PLAIN")
    events = client.receive_data(stream[:cut], 0.0)
    events += client.receive_data(b"", 0.0)
    assert [type(e) for e in events] == [a.events.AuthenticationFailed, a.events.ConnectionEnded]
    assert of(events, a.events.AuthenticationFailed)[0].code is performatives.SaslCode.SYS
    assert client.data_to_send() == b""


@pytest.mark.parametrize("cut", [0, 8])
def test_a_server_that_closes_after_its_header_refused_the_connection(cut: int) -> None:
    """Closed before the exchange began (nothing, or only the server's header, came): a
    refusal (a connection limit), not a failed authentication (issue 27)."""
    client = _client()
    stream = a.framing.amqp10.SASL_HEADER + _mechanisms("ANONYMOUS", "PLAIN")
    events = client.receive_data(stream[:cut], 0.0) if cut else []
    events += client.receive_data(b"", 0.0)
    assert [type(e) for e in events] == [a.events.ConnectionEnded]
    assert client.data_to_send() == b""


def test_a_sasl_frame_after_the_outcome_is_not_amqp() -> None:
    """After the outcome the AMQP header must come: another SASL frame is refused."""
    client = _client()
    ok = _sasl_frame(performatives.SaslOutcome(code=performatives.SaslCode.OK))
    client.receive_data(a.framing.amqp10.SASL_HEADER + _mechanisms("ANONYMOUS") + ok, 0.0)
    sent = client.data_to_send()
    assert a.framing.amqp10.AMQP_HEADER in sent  # the held-back header and open went
    events = client.receive_data(ok, 0.0)
    assert of(events, a.events.UnsupportedProtocol) and of(events, a.events.ConnectionEnded)
    assert client.data_to_send() == b""


def test_no_fallback_to_anonymous_when_credentials_were_given() -> None:
    """A downgrade: the server offers only ANONYMOUS to a client with credentials."""
    client = a.Connection(client=True, sasl=_alice())
    client.open(now=0.0)
    client.data_to_send()
    events = client.receive_data(a.framing.amqp10.SASL_HEADER + _mechanisms("ANONYMOUS"), 0.0)
    (failed,) = of(events, a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLNoMechanismError)
    assert client.data_to_send() == b""


def test_no_downgrade_from_a_required_mechanism() -> None:
    client = a.Connection(client=True, sasl=_alice(), sasl_mechanisms=["SCRAM-SHA-512"])
    client.open(now=0.0)
    client.data_to_send()
    events = client.receive_data(
        a.framing.amqp10.SASL_HEADER + _mechanisms("SCRAM-SHA-256", "PLAIN"), 0.0
    )
    assert of(events, a.events.AuthenticationFailed) and client.data_to_send() == b""


def test_an_amqp_header_where_sasl_is_required_sends_only_our_sasl_header() -> None:
    server = a.Connection(client=False, sasl=a.sasl.ServerAuthenticator(Store()))
    events = server.receive_data(
        a.framing.amqp10.AMQP_HEADER
        + a.framing.amqp10.encode_frame(performatives.Open(container_id="x")),
        0.0,
    )
    assert [type(e) for e in events] == [a.events.PeerWithoutSASL, a.events.ConnectionEnded]
    assert server.data_to_send() == a.framing.amqp10.SASL_HEADER
    assert (
        server.receive_data(a.framing.amqp10.SASL_HEADER, 0.0) == []
        and server.data_to_send() == b""
    )


def test_a_malformed_sasl_frame_is_reported_without_quoting_it() -> None:
    """Found by the sasl-server fuzz target: a decode error's description quoted the
    sasl-init it could not decode, password included."""
    server = _server()
    bad = a.framing.amqp10.encode_frame(
        a.Described(
            a.codec.amqp10.ULong(0x41), [a.Symbol("PLAIN"), a.Symbol("\0alice\0" + PASSWORD)]
        ),
        frame_type=a.framing.amqp10.FrameType.SASL,
    )
    events = server.receive_data(a.framing.amqp10.SASL_HEADER + bad, 0.0)
    (failed,) = of(events, a.events.AuthenticationFailed)
    assert isinstance(failed.error, sasl.SASLProtocolError)
    assert "malformed SASL frame" in failed.description
    assert PASSWORD not in repr(events) and failed.error.__cause__ is None
