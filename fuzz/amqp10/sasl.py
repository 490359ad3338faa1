"""The AMQP 1.0 SASL layer's targets (core spec 5.3), ``sasl-server`` and ``sasl-client``,
and their seeds.

``sasl-server``: a server-role :class:`amqp_sansio.Connection` that requires SASL (PLAIN and
SCRAM-SHA-256/512 for one user, ANONYMOUS; SASL frames of at most 512 bytes) gets a SASL
header and then the bytes, in chunks; ``sasl-client``: a client-role connection with
credentials (its open held back behind the exchange) the same.

The invariant: nothing raises; what the connection sends parses as its partner would parse
it (:class:`_SaslOutputCheck`): the SASL header, SASL frames, at most one outcome and no SASL
frame after it, then (a server only after a successful outcome) the AMQP header and AMQP
frames; nothing is sent once the connection has ended; an ``AuthenticationFailed`` leaves
the connection in ``END`` and no event shows the password; the transport's end leaves it in
``END``.

The seeds are a client's side of each mechanism's exchange (deterministic nonces, so the
SCRAM proofs replay), and a server's side of successful and failed exchanges.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import amqp_sansio as amqp
import amqp_sansio.framing.amqp10
from amqp_sansio import Symbol
from amqp_sansio.definitions.amqp10 import performatives
from amqp_sansio.framing.amqp10 import FrameParser, FrameType

from ..common import REMOTE_ERRORS, TICK, InvariantViolation, chunk_sizes
from .engine import SERVER_FRAME_MAX

__all__ = ["fuzz_sasl_client", "fuzz_sasl_server", "seeds"]


_SASL_PASSWORD = "fuzz-pw"
_SASL_SALT = b"fuzz-salt-16byte"


class _SaslStore:
    """Users for the ``sasl-server`` target: alice, for PLAIN and both SCRAMs."""

    def __init__(self) -> None:
        self.scram = {
            mech: amqp.sasl.derive_scram_credentials(
                _SASL_PASSWORD, mechanism=mech, salt=_SASL_SALT, iterations=4096
            )
            for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        }

    def check_password(self, username: str, password: str) -> bool:
        return username == "alice" and password == _SASL_PASSWORD

    def scram_credentials(self, username: str, mechanism: str) -> Any:
        return self.scram.get(mechanism) if username == "alice" else None


@functools.lru_cache(maxsize=1)
def _sasl_store() -> _SaslStore:
    return _SaslStore()


def _sasl_server_connection() -> amqp.Connection:
    return amqp.Connection(
        client=False,
        container_id="fuzz-sasl-server",
        sasl=amqp.sasl.ServerAuthenticator(
            _sasl_store(),
            allow_anonymous=True,
            allow_cleartext_secrets=True,
            nonce_factory=lambda: "fuzzservernonce",
            fake_key=b"k" * 32,
        ),
        sasl_max_frame_size=SERVER_FRAME_MAX,
    )


def _sasl_client_connection() -> amqp.Connection:
    return amqp.Connection(
        client=True,
        container_id="fuzz-sasl-client",
        sasl=amqp.sasl.ClientCredentials(username="alice", password=_SASL_PASSWORD),
        allow_plain_without_tls=True,
        sasl_max_frame_size=SERVER_FRAME_MAX,
    )


class _SaslOutputCheck:
    """What a SASL peer sends, as its partner parses it: the SASL header, SASL frames, at
    most one outcome (a server's), and only then the AMQP header and AMQP frames (a server's
    after a successful outcome only)."""

    def __init__(self, role: str) -> None:
        self.role = role
        self.parser = FrameParser(max_frame_size=0xFFFFFFFF)
        self.layer = "start"  # then "sasl", then "amqp"
        self.outcome: Any = None
        self.stream = bytearray()  # all of the output, to look ahead at what is unparsed

    def _fail(self, stage: str, message: str) -> InvariantViolation:
        return InvariantViolation(self.role, stage, message)

    def feed(self, data: bytes) -> None:
        if type(data) is not bytes:
            raise self._fail("output", f"{type(data).__name__} output")
        parser = self.parser
        parser.feed(data)
        self.stream += data
        while parser.buffered:
            at = len(self.stream) - parser.buffered
            try:
                if self.layer == "start" or (
                    self.layer == "sasl" and self.stream[at : at + 4] == b"AMQP"
                ):
                    header = parser.next_protocol_header()
                    if header is None:
                        return
                    self._header(header.to_bytes())
                    continue
                frame = parser.next_frame()
            except REMOTE_ERRORS as exc:
                raise self._fail("output", f"does not parse: {exc!r}") from exc
            if frame is None:
                return
            if (frame.type is FrameType.SASL) != (self.layer == "sasl"):
                raise self._fail("layering", f"{frame.body!r:.100} in the {self.layer} layer")
            if self.outcome is not None and self.layer == "sasl":
                raise self._fail("after-outcome", f"{frame.body!r:.100} after the outcome")
            if isinstance(frame.body, performatives.SaslOutcome):
                self.outcome = frame.body

    def _header(self, header: bytes) -> None:
        if self.layer == "start":
            if header != amqp.framing.amqp10.SASL_HEADER:
                raise self._fail("output", f"the first header is {header!r}")
            self.layer = "sasl"
            return
        if header != amqp.framing.amqp10.AMQP_HEADER:
            raise self._fail("output", f"then the header {header!r}")
        if self.role == "sasl-server" and (
            self.outcome is None or self.outcome.code is not performatives.SaslCode.OK
        ):
            raise self._fail("after-outcome", "the AMQP header without a successful outcome")
        self.layer = "amqp"


def _fuzz_sasl(role: str, data: bytes) -> str:
    server = role == "sasl-server"
    conn = _sasl_server_connection() if server else _sasl_client_connection()
    check = _SaslOutputCheck(role)
    if not server:
        conn.open(now=0.0)
    stream = amqp.framing.amqp10.SASL_HEADER + data
    kinds: dict[str, None] = {}
    ended_output = False
    fed = 0
    for step in itertools.cycle(chunk_sizes(data) or [len(stream)]):
        if fed >= len(stream):
            break
        step = max(1, step)
        events = conn.receive_data(stream[fed : fed + step], fed * TICK)
        fed += step
        out = conn.data_to_send()
        if ended_output and out:
            raise InvariantViolation(role, "after-end", f"sent {out[:40]!r} after the end")
        check.feed(out)
        for e in events:
            kinds[type(e).__name__] = None
            if isinstance(e, amqp.events.AuthenticationFailed):
                if conn.state is not amqp.ConnectionState.END:
                    raise InvariantViolation(role, "not-ended", f"{e!r} left it open")
                if "fuzz-pw" in repr(e):
                    raise InvariantViolation(role, "secret", "the password in an event")
        if conn.state is amqp.ConnectionState.END:
            ended_output = True
    events = conn.receive_data(b"", fed * TICK)
    kinds.update(dict.fromkeys(type(e).__name__ for e in events))
    if conn.state is not amqp.ConnectionState.END:
        raise InvariantViolation(role, "not-ended", f"EOF left it {conn.state.value}")
    return f"{'ok' if 'Authenticated' in kinds else 'err'}|{','.join(kinds)[:160]}"


def fuzz_sasl_server(data: bytes) -> str:
    """Target ``sasl-server``: the bytes, after a SASL header, to a server-role connection
    that requires SASL (PLAIN, SCRAM-SHA-256/512 and ANONYMOUS on offer). Nothing raises;
    what it sends is its SASL header, SASL frames, at most one outcome and nothing after a
    failed one; a failure ends the connection; the password shows in no event."""
    return _fuzz_sasl("sasl-server", data)


def fuzz_sasl_client(data: bytes) -> str:
    """Target ``sasl-client``: the bytes, after a SASL header, to a client-role connection
    with credentials (and its open held back behind the exchange). The same invariant."""
    return _fuzz_sasl("sasl-client", data)


def _sasl_server_seeds() -> list[bytes]:
    """A client's side of each exchange the server target accepts (deterministic nonces)."""
    from amqp_sansio import sasl

    def frame(body: Any) -> bytes:
        return amqp.framing.amqp10.encode_frame(body, frame_type=FrameType.SASL)

    def init(name: str, response: bytes | None) -> bytes:
        return frame(performatives.SaslInit(mechanism=Symbol(name), initial_response=response))

    seeds = [
        init("ANONYMOUS", b"trace"),
        init("PLAIN", b"\0alice\0" + _SASL_PASSWORD.encode()),
        init("PLAIN", b"\0alice\0wrong"),
        init("EXTERNAL", b""),
        init("PLAIN", None) + frame(performatives.SaslResponse(response=b"\0alice\0x")),
    ]
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        client = sasl.ScramClient("alice", _SASL_PASSWORD, mechanism=mech, nonce="fuzzclient")
        server = sasl.ScramServer(
            _sasl_store(), mechanism=mech, nonce="fuzzservernonce", fake_key=b"k" * 32
        )
        first = client.initial_response()
        challenge = server.start(first)
        assert isinstance(challenge, sasl.ServerChallenge)
        final = client.respond(challenge.data)
        seeds.append(init(mech, first) + frame(performatives.SaslResponse(response=final)))
        seeds.append(init(mech, first))
    ok = seeds[1]
    seeds.append(
        ok
        + amqp.framing.amqp10.AMQP_HEADER
        + amqp.framing.amqp10.encode_frame(performatives.Open(container_id="c"))
    )
    return seeds


def _sasl_client_seeds() -> list[bytes]:
    """A server's side of exchanges the client target goes through."""

    def frame(body: Any) -> bytes:
        return amqp.framing.amqp10.encode_frame(body, frame_type=FrameType.SASL)

    def mechanisms(*names: str) -> bytes:
        return frame(
            performatives.SaslMechanisms(sasl_server_mechanisms=[Symbol(n) for n in names])
        )

    ok = frame(performatives.SaslOutcome(code=performatives.SaslCode.OK))
    opened = amqp.framing.amqp10.AMQP_HEADER + amqp.framing.amqp10.encode_frame(
        performatives.Open(container_id="s")
    )
    return [
        mechanisms("PLAIN") + ok + opened,
        mechanisms("PLAIN") + ok,
        mechanisms("ANONYMOUS", "PLAIN")
        + ok
        + opened
        + amqp.framing.amqp10.encode_frame(performatives.Close()),
        mechanisms("PLAIN")
        + frame(performatives.SaslOutcome(code=performatives.SaslCode.OK, additional_data=b"x")),
        mechanisms("XOAUTH2", "PLAIN", "ANONYMOUS") + ok + amqp.framing.amqp10.AMQP_HEADER,
        mechanisms("PLAIN", "ANONYMOUS")
        + frame(performatives.SaslOutcome(code=performatives.SaslCode.AUTH)),
        mechanisms("SCRAM-SHA-256")
        + frame(performatives.SaslChallenge(challenge=b"r=abc,s=c2FsdA==,i=4096"))
        + ok,
        mechanisms("XOAUTH2", "PLAIN") + frame(performatives.SaslChallenge(challenge=b"{}")) + ok,
        mechanisms("ANONYMOUS"),
        mechanisms("PLAIN"),
    ]


def seeds() -> dict[str, list[bytes]]:
    """The seeds of ``sasl-server`` and ``sasl-client`` (deterministic)."""
    return {"sasl-server": _sasl_server_seeds(), "sasl-client": _sasl_client_seeds()}
