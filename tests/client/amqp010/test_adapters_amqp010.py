"""AMQP 0-10 through each adapter (``connect(url, protocol="0-10")``) against qpid-python's
small 0-10 server (``qpid/tests/connection.py``): connect with the URL and defaults, a
message sent to ``echo`` and its echo received with its properties, a queue query, a
message the server keeps, close; a connection through a proxy the test cuts comes back
and its session with it (attached afresh: qpid's server keeps none to resume). The
protocol is chosen, never guessed."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from support.adapters import ADAPTERS, Adapter, aw
from support.amqp010.broker import serving
from support.amqp010.qpid_server import qpid_server
from support.proxy import proxy

from amqp_sansio.client.amqp010 import SessionError
from amqp_sansio.client.ops import ConnectionClosedError
from amqp_sansio.client.reconnect import Reconnect
from amqp_sansio.definitions import amqp010 as spec

FAST = Reconnect(initial_delay=0.05, max_delay=0.2, jitter=0.0)

#: qpid-python calls ``threading.currentThread``, deprecated since Python 3.10.
pytestmark = pytest.mark.filterwarnings("ignore:currentThread:DeprecationWarning")


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Adapter:
    return ADAPTERS[request.param]


def test_echo_query_and_close(adapter: Adapter) -> None:
    message_id = uuid.uuid4()

    async def scenario(port: int, server: Any) -> None:
        url = f"amqp://127.0.0.1:{port}"
        async with adapter.connected(url, protocol="0-10") as conn:
            assert conn.core.engine.mechanism.name == "ANONYMOUS"
            session = await aw(conn.session("s1"))
            await aw(
                session.send(
                    b"ping",
                    destination="echo",
                    routing_key="k",
                    content_type="text/plain",
                    correlation_id="c-1",
                    reply_to="replies",
                    message_id=message_id,
                    headers={"n": 7},
                    durable=True,
                )
            )
            echo = await aw(session.receive("echo"))
            assert echo.body == b"ping" and echo.destination == "echo"
            assert echo.routing_key == "k" and echo.durable
            assert echo.content_type == "text/plain" and echo.correlation_id == b"c-1"
            assert echo.reply_to == "replies" and echo.message_id == message_id
            assert echo.headers == {"n": 7}
            result = await aw(session.queue_query("q1"))
            assert result == spec.QueueQueryResult(queue="q1")
            await aw(session.send(b"kept", destination="store"))
            kept = server.queue.get(10)
            assert kept.destination == "store" and kept.payload == b"kept"
            with pytest.raises(TimeoutError):
                await aw(session.receive("nothing", timeout=0.1))
            await aw(session.close())
            await aw(conn.close())
            with pytest.raises(ConnectionClosedError):
                await aw(conn.session("s2"))

    with qpid_server() as server:
        adapter.run(scenario, server.port, server)


def test_a_cut_connection_comes_back(adapter: Adapter) -> None:
    async def scenario(p: Any) -> None:
        reconnected: list[Any] = []
        url = f"amqp://127.0.0.1:{p.port}"
        options = {"reconnect": FAST, "on_reconnect": reconnected.append}
        async with adapter.connected(url, protocol="0-10", **options) as conn:
            # qpid's small server keeps no session across connections: so none is asked
            # to be kept (``keep=0``) and the session is attached afresh (the resume is
            # tested against our own server, in test_amqp010_client_core.py)
            session = await aw(conn.session("survivor", keep=0))
            await aw(session.send(b"one", destination="echo"))
            assert (await aw(session.receive("echo"))).body == b"one"
            p.cut()
            await aw(session.send(b"two", destination="echo"))
            assert (await aw(session.receive("echo"))).body == b"two"
            assert conn.reconnects >= 1 and reconnected == [conn]

    with qpid_server() as server, proxy(server.port) as p:
        adapter.run(scenario, p)


def test_without_reconnect_a_cut_ends_the_connection(adapter: Adapter) -> None:
    async def scenario(p: Any) -> None:
        url = f"amqp://127.0.0.1:{p.port}"
        async with adapter.connected(url, protocol="0-10") as conn:
            session = await aw(conn.session("s"))
            p.cut()
            with pytest.raises(ConnectionClosedError) as lost:
                await aw(session.receive("echo"))
            assert lost.value.retryable

    with qpid_server() as server, proxy(server.port) as p:
        adapter.run(scenario, p)


def test_queues_subscriptions_and_refusals_against_our_broker(adapter: Adapter) -> None:
    """Through each adapter against our server engine playing a broker (the calls qpid's
    small server does not answer): declare, send by routing key, query, subscribe under
    credit, receive, accept, cancel, a command, a refused passive declare."""

    async def scenario(port: int) -> None:
        url = f"amqp://guest:guest@127.0.0.1:{port}/vh"
        async with adapter.connected(url, protocol="0-10") as conn:
            assert "Connection010" in repr(conn)
            session = await aw(conn.session(b"work"))
            assert "Session010" in repr(session)
            await aw(session.queue_declare("q", durable=True))
            for n in range(3):
                await aw(session.send(b"m%d" % n, routing_key="q", wait=n != 1))
            assert (await aw(session.queue_query("q"))).message_count == 3
            destination = await aw(session.subscribe("q", credit=2))
            assert destination == "q"
            got = [await aw(session.receive("q")) for _ in range(3)]
            assert [d.body for d in got] == [b"m0", b"m1", b"m2"]
            await aw(session.accept(*got))
            await aw(session.cancel("q"))
            assert await aw(session.command(spec.ExecutionSync())) is None
            with pytest.raises(SessionError) as refused:
                await aw(session.queue_declare("missing", passive=True))
            assert refused.value.error_code == 404
            other = await aw(conn.session("other"))
            if adapter.name == "sockets":
                with other:
                    await aw(other.queue_declare("x"))
            else:
                async with other:
                    await aw(other.queue_declare("x"))
            assert other.core.ended.done()
            await aw(other.close())  # (ended already: nothing more to say)

    with serving() as port:
        adapter.run(scenario, port)


def test_the_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import re
    import textwrap

    from support import ROOT

    text = (ROOT / "docs" / "amqp010.rst").read_text()
    pattern = r"\.\. code-block:: python\n   :name: example-010-sockets\n\n((?:(?:   .*)?\n)+)"
    (body,) = re.findall(pattern, text)
    with qpid_server() as server:
        namespace: dict[str, Any] = {"URL": f"amqp://127.0.0.1:{server.port}"}
        exec(compile(textwrap.dedent(body), "example-010-sockets", "exec"), namespace)
    assert capsys.readouterr().out.splitlines() == ["b'ping' text/plain", "None"]
