"""The AMQP 0-10 client core (:mod:`amqp_sansio.client.amqp010`) against our own
server-role engine, in memory through real bytes on a clock the test moves: sessions,
messages with their properties, queues, subscriptions under credit, accepts, refusals,
the close, and reconnection (a session resumed within its time-out, its commands the
server had not completed replayed; or attached afresh, its commands and subscriptions
made again)."""

from __future__ import annotations

import random
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.amqp010.broker import Server

from amqp_sansio.client import amqp010 as client
from amqp_sansio.client.ops import ConnectionClosedError
from amqp_sansio.client.protocols import connect_protocol
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.client.url import InsecureCredentialsError
from amqp_sansio.definitions import amqp010 as spec
from amqp_sansio.engine import amqp010 as engine
from amqp_sansio.errors import LocalProtocolError

URL = "amqp://127.0.0.1:5672/vh"


class Wire:
    """The core and a server, bytes pumped both ways until both are quiet."""

    def __init__(
        self, core: client.Core, server: Server, chunks: random.Random | None = None
    ) -> None:
        self.core, self.server, self.now = core, server, 0.0
        self.chunks = chunks

    def _pieces(self, data: bytes) -> list[bytes]:
        if self.chunks is None:
            return [data]
        cuts = sorted(self.chunks.sample(range(1, len(data)), min(5, len(data) - 1)))
        return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]

    def pump(self) -> None:
        for _ in range(100):
            out = self.core.data_to_send()
            back = self.server.conn.data_to_send()
            if not out and not back:
                return
            for piece in self._pieces(out) if out else []:
                self.server.handle(self.server.conn.receive_data(piece, self.now))
            for piece in self._pieces(back) if back else []:
                self.core.receive_data(piece, self.now)
        raise AssertionError("the wire never went quiet")

    def cut(self) -> None:
        """The transport goes: both ends see the stream end."""
        self.core.receive_data(b"", self.now)
        self.server.handle(self.server.conn.receive_data(b"", self.now))

    def reconnect(self, server: Server) -> None:
        """The adapter's part of a reconnection, to ``server``."""
        at, _ = self.core.next_attempt(self.now)
        self.now = max(self.now, at)
        self.core.restart(self.now)
        self.server = server
        self.pump()


def opened(url: str = URL, **options: Any) -> Wire:
    core = client.client_core(url, options)
    wire = Wire(core, Server())
    core.open(0.0)
    wire.pump()
    assert core.opened.done()
    return wire


def attached(wire: Wire, name: str = "s", timeout: int = 60) -> client.SessionCore:
    session = wire.core.session(name, timeout)
    assert not session.attached
    wire.pump()
    assert session.attached_ready()
    return session


def done(wire: Wire, op: Any) -> Any:
    wire.pump()
    assert op.done()
    return op.result()


def test_messages_queues_and_a_subscription_under_credit() -> None:
    wire = opened()
    assert wire.core.opened_event is not None
    assert wire.core.opened_event.virtual_host == "vh"
    session = attached(wire)
    assert repr(session) == "<amqp010.SessionCore b's'>" and "127.0.0.1" in repr(wire.core)
    done(wire, session.send(spec.QueueDeclare(queue="q")))
    header = client.message_header(routing_key="q", content_type="text/plain", headers={"a": 1})
    for n in range(3):
        transfer = spec.MessageTransfer(destination="", accept_mode=1)
        done(wire, session.send(transfer, header, b"m%d" % n))
    result = done(wire, session.send(spec.QueueQuery(queue="q")))
    assert result == spec.QueueQueryResult(queue="q", message_count=3)
    done(wire, session.subscribe("q", "d", 2, accept=True))
    ready = session.delivery_ready("d")
    assert ready()
    first = session.take("d")
    assert first.body == b"m0" and first.content_type == "text/plain"
    assert first.headers == {"a": 1} and first.routing_key == "q"
    assert repr(first) == f"<Delivery 'd' #{first.command_id}: 2 octets>"
    wire.pump()  # the credit taken back: the third message comes
    assert [session.take("d").body for _ in range(2)] == [b"m1", b"m2"]
    assert not ready()
    done(wire, session.accept([first]))
    accepts = [c for c in wire.server.commands if isinstance(c, spec.MessageAccept)]
    ids = (first.command_id, first.command_id)
    assert accepts == [spec.MessageAccept(transfers=(ids,))]
    session.flow("d", 5)
    session.flow("elsewhere", 1)  # (a destination this session did not subscribe)
    done(wire, session.cancel("d"))
    assert (b"s", "d") not in wire.server.subscriptions
    session.close()
    wire.pump()
    assert session.ended.done() and session.ended.result() is None
    with pytest.raises(ConnectionClosedError, match="session is closed"):
        session.send(spec.ExecutionSync())
    wire.core.close()
    wire.pump()
    assert wire.core.ended.done() and wire.core.error is None


def test_credit_is_given_back_a_half_window_at_a_time() -> None:
    wire = opened()
    session = attached(wire)
    done(wire, session.send(spec.QueueDeclare(queue="q")))
    wire.server.queues["q"] = [((), b"m%d" % n) for n in range(30)]
    done(wire, session.subscribe("q", "d", 10, accept=False))

    def flows() -> list[int | None]:
        return [
            c.value
            for c in wire.server.commands
            if isinstance(c, spec.MessageFlow) and c.unit == 0 and c.destination == "d"
        ]

    assert flows() == [10]  # the subscription's
    bodies = [session.take("d").body for _ in range(4)]
    wire.pump()
    assert flows() == [10]  # four owed: six credits left with the server, no flow yet
    bodies.append(session.take("d").body)
    wire.pump()
    assert flows() == [10, 5]  # half the window owed: given back in one flow
    bodies += [session.take("d").body for _ in range(2)]
    bodies.append(session.take("d", refill=False).body)  # what is owed goes at once
    wire.pump()
    assert flows() == [10, 5, 2]
    assert bodies == [b"m%d" % n for n in range(8)]
    session.take("d")
    done(wire, session.cancel("d"))  # (what is owed is forgotten with the subscription)
    session.take("d")  # one that came before the cancel: no subscription to give back to
    done(wire, session.subscribe("q", "d", 4, accept=False))
    session.take("d")
    wire.pump()
    assert flows() == [10, 5, 2, 4]  # a new window: nothing owed from the old one


def test_an_accept_sends_each_run_of_consecutive_ids_as_one_range() -> None:
    wire = opened()
    session = attached(wire)
    done(wire, session.send(spec.QueueDeclare(queue="q")))
    wire.server.queues["q"] = [((), b"m%d" % n) for n in range(5)]
    done(wire, session.subscribe("q", "d", 5, accept=True))
    taken = [session.take("d") for _ in range(5)]
    first = taken[0].command_id
    assert [d.command_id - first for d in taken] == [0, 1, 2, 3, 4]
    done(wire, session.accept([taken[4], taken[0], taken[1], taken[3]]))
    (accept,) = [c for c in wire.server.commands if isinstance(c, spec.MessageAccept)]
    assert accept.transfers == ((first, first + 1), (first + 3, first + 4))


def test_commands_given_before_the_session_is_attached_go_once_it_is() -> None:
    wire = opened()
    session = wire.core.session(b"early")
    op = session.send(spec.QueueDeclare(queue="early"))
    assert not op.done()
    wire.pump()
    assert op.done() and "early" in wire.server.queues
    with pytest.raises(LocalProtocolError, match="open already"):
        wire.core.session("early")


def test_a_refused_command_fails_with_its_code_and_ends_the_session() -> None:
    wire = opened()
    session = attached(wire)
    op = session.send(spec.QueueDeclare(queue="missing", passive=True))
    wire.pump()
    with pytest.raises(client.SessionError) as refused:
        op.result()
    assert refused.value.error_code == 404 and refused.value.command_id == 0
    with pytest.raises(client.SessionError):
        session.check()
    assert not wire.core.ended.done()  # the connection stays
    again = attached(wire, "again")
    done(wire, again.send(spec.QueueDeclare(queue="x")))


def test_a_session_the_peer_detaches_with_an_error_ends() -> None:
    wire = opened()
    session = attached(wire)
    event = engine.SessionDetached(session=b"s", channel=1, code=4, by_peer=True, expires=None)
    wire.core._handle([event])
    with pytest.raises(ConnectionClosedError, match="detached the session: 4"):
        session.check()


def test_the_servers_close_fails_what_waits() -> None:
    wire = opened()
    session = attached(wire)
    wire.server.hold = True
    op = session.send(spec.QueueDeclare(queue="q"))
    wire.pump()
    wire.server.conn.close(engine.CloseCode.CONNECTION_FORCED, "going away")
    wire.pump()
    with pytest.raises(ConnectionClosedError, match="320 going away") as closed:
        op.result()
    assert closed.value.retryable
    with pytest.raises(ConnectionClosedError):
        wire.core.session("late")


def test_a_lost_session_is_resumed_and_its_uncompleted_commands_replayed() -> None:
    store = engine.SessionStore()
    core = client.client_core(URL, reconnect=Reconnect(initial_delay=0.1, jitter=0.0))
    assert core.lost
    wire = Wire(core, Server(store))
    wire.reconnect(Server(store))
    session = attached(wire, "kept", timeout=30)
    reconnected: list[bool] = []
    core.on_reconnect = lambda: reconnected.append(True)
    op = session.send(spec.QueueDeclare(queue="replayed"))
    wire.cut()  # before the server had it: its bytes are lost with the transport
    assert not op.done()
    assert core.lost and not session.attached
    assert core._summary() == "resuming 1 sessions"
    wire.reconnect(Server(store))
    assert session.attached and reconnected == [True]
    assert any(isinstance(e, engine.SessionResumed) for e in wire.server.events)
    assert op.done() and "replayed" in wire.server.queues
    core.close()
    wire.pump()
    assert core.ended.done()


def test_a_session_not_kept_is_attached_afresh_with_its_commands_and_subscriptions() -> None:
    core = client.client_core(URL, reconnect=True)
    wire = Wire(core, Server())
    wire.reconnect(Server())
    session = attached(wire, "fresh", timeout=0)
    done(wire, session.send(spec.QueueDeclare(queue="q")))
    done(wire, session.subscribe("q", "d", 1, accept=False))
    wire.server.hold = True
    op = session.send(spec.QueueDeclare(queue="again"))
    wire.pump()
    wire.cut()
    session.send(spec.QueueQuery(queue="q"))  # (while lost: it goes once attached)
    server = Server()
    server.queues["q"] = [((), b"after")]
    wire.reconnect(server)
    assert op.done() and "again" in server.queues
    assert server.subscriptions[b"fresh", "d"][0] == "q"
    assert session.take("d").body == b"after"
    session.close()  # (attached: detached by the server's answer)
    wire.pump()
    assert session.ended.done()


def test_closing_while_lost_ends_at_once_and_fails_the_sessions() -> None:
    core = client.client_core(URL, reconnect=True)
    session = core.session("s")
    session.close()  # not attached: ended at once
    assert session.ended.done()
    other = core.session("t")
    op = other.send(spec.ExecutionSync())
    core.close()
    assert core.ended.done() and other.ended.done()
    with pytest.raises(ConnectionClosedError):
        op.result()


def test_message_header_from_simple_arguments() -> None:
    (delivery,) = client.message_header(routing_key="k")
    assert delivery == spec.DeliveryProperties(routing_key="k")
    message_id = uuid.uuid4()
    delivery, props = client.message_header(
        exchange="x",
        durable=True,
        priority=5,
        ttl=1000,
        content_encoding="gzip",
        correlation_id=b"raw",
        message_id=str(message_id),
        reply_to="back",
    )
    assert delivery == spec.DeliveryProperties(exchange="x", delivery_mode=2, priority=5, ttl=1000)
    assert props == spec.MessageProperties(
        content_encoding="gzip",
        correlation_id=b"raw",
        message_id=message_id,
        reply_to=spec.ReplyTo(routing_key="back"),
    )


def test_a_delivery_without_properties() -> None:
    bare = client.Delivery(3, "d", (), b"")
    assert bare.routing_key is None and not bare.durable and bare.content_type is None
    assert bare.correlation_id is None and bare.reply_to is None
    assert bare.message_id is None and bare.headers == {}


def test_the_engine_a_url_makes() -> None:
    _, conn, stream = client.client_engine("amqp://guest:guest@localhost/v")
    assert stream is conn and conn.virtual_host == "v"
    wire = opened("amqp://guest:guest@127.0.0.1")
    assert wire.core.engine.mechanism is not None
    assert wire.core.engine.mechanism.name == "PLAIN"
    with pytest.raises(InsecureCredentialsError):
        client.client_engine("amqp://u:p@example.com")
    client.client_engine("amqp://u:p@example.com", {"allow_insecure_auth": True})
    _, conn, _ = client.client_engine("amqp://h", {"sasl_mechanisms": ["EXTERNAL"]})
    _, conn, stream = client.client_engine("amqps://example.com")
    assert stream is not conn  # a TLS layer around the engine


def test_the_protocol_is_chosen_from_the_table() -> None:
    common: dict[str, Any] = {
        "timeout": 1.0,
        "ssl_context": None,
        "allow_insecure_auth": False,
        "reconnect": None,
        "on_reconnect": None,
        "container_id": None,
        "sasl_mechanisms": None,
        "sasl": None,
    }
    recipe = connect_protocol(URL, "0-10", idle_timeout=None, **common)
    step = next(recipe)
    assert (step.host, step.port) == ("127.0.0.1", 5672)  # type: ignore[attr-defined]
    recipe.close()
    with pytest.raises(ValueError, match=r"idle_timeout: AMQP 1\.0 options"):
        connect_protocol(URL, "0-10", idle_timeout=5.0, **common)
    with pytest.raises(ValueError, match="0-9-1, 0-10"):
        connect_protocol(URL, "0-11", idle_timeout=None, **common)


text = st.text(max_size=20)


@given(
    routing_key=st.none() | text,
    durable=st.booleans(),
    content_type=st.none() | text,
    correlation_id=st.none() | st.binary(max_size=20),
    reply_to=st.none() | text,
    message_id=st.none() | st.uuids(),
    headers=st.none() | st.dictionaries(text, st.integers(-(2**63), 2**63 - 1), max_size=3),
)
def test_a_header_reads_back_through_the_wire_encoding(
    routing_key: str | None,
    durable: bool,
    content_type: str | None,
    correlation_id: bytes | None,
    reply_to: str | None,
    message_id: uuid.UUID | None,
    headers: dict[str, int] | None,
) -> None:
    """Whatever simple arguments make a header, a delivery carrying its encoded octets
    (0-10 spec 4.4, a header segment) reads them back."""
    header = client.message_header(
        routing_key=routing_key,
        durable=durable,
        content_type=content_type,
        correlation_id=correlation_id,
        reply_to=reply_to,
        message_id=message_id,
        headers=headers,
    )
    decoded = spec.decode_header(spec.encode_header(header))
    delivery = client.Delivery(0, "d", decoded, b"")
    assert delivery.routing_key == routing_key and delivery.durable == durable
    assert delivery.content_type == content_type
    assert delivery.correlation_id == correlation_id
    assert delivery.reply_to == reply_to and delivery.message_id == message_id
    assert delivery.headers == (headers or {})


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_a_subscription_works_whatever_the_bytes_chunks(seed: int) -> None:
    """The same exchange with each write cut in up to six pieces at random places."""
    rng = random.Random(seed)
    core = client.client_core(URL)
    wire = Wire(core, Server(), rng)
    core.open(0.0)
    wire.pump()
    session = attached(wire)
    done(wire, session.send(spec.QueueDeclare(queue="q")))
    transfer = spec.MessageTransfer(destination="", accept_mode=1)
    done(wire, session.send(transfer, client.message_header(routing_key="q"), b"x" * 300))
    done(wire, session.subscribe("q", "d", 1, accept=False))
    assert session.take("d").body == b"x" * 300
